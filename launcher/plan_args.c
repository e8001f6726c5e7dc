/*
 * plan_args.c - phase 5b: [args], the arguments the profile adds to the
 * command, sized from the placement (profile_args.c reads them).
 *
 * Some services take their size only from their command line: memcached
 * starts 4 worker threads unless -t says otherwise, whatever CPUs it was
 * given. Each argument is added only when the command does not pass that
 * option already, by any of its spellings: what the user wrote wins, and
 * the plan says which it added and which it did not.
 *
 * Where they go: after the command's own arguments, before a `--` that
 * ends its options. A server that takes a configuration file first
 * (redis-server FILE --opt) reads options only after it, and GNU getopt,
 * which most servers use, takes options anywhere before `--`. A command
 * that is not one the profile's arguments are for (`for`), a wrapper
 * script or another program, gets none.
 */
#include "planner.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Where the command's options end: its first "--" after the name, or its end. */
static size_t options_end(char *const *argv)
{
    size_t i = 1;
    while (argv[0] && argv[i] && strcmp(argv[i], "--") != 0)
        i++;
    return argv[0] ? i : 0;
}

/* Whether word starts with prefix, followed by '=' or by nothing (`exact`) or by anything. */
static bool starts(const char *word, const char *prefix, bool exact)
{
    size_t n = strlen(prefix);
    return strncmp(word, prefix, n) == 0 &&
           (word[n] == '=' || word[n] == '\0' || (!exact && word[n] != '\0'));
}

/*
 * Whether the command passes w among its options, argv[1..end): for one
 * word W, W itself (its value next), W=VALUE, or for a single-dash W the
 * value attached (-t8, -Xmx4g); for two words W NAME, W then NAME=VALUE,
 * or NAME=VALUE attached to a single-dash W (-cname=V). The command's own
 * words for it into *found.
 */
static bool passes(const struct arg_spelling *w, char *const *argv, size_t end, char **found)
{
    bool single = w->option[1] != '-';
    for (size_t i = 1; i < end; i++) {
        const char *a = argv[i];
        bool next = i + 1 < end;
        if (w->name == NULL && strcmp(a, w->option) == 0) {
            *found = next ? xasprintf("%s %s", a, argv[i + 1]) : xstrdup(a);
            return true;
        }
        if (w->name == NULL && starts(a, w->option, !single)) {
            *found = xstrdup(a);
            return true;
        }
        if (w->name && strcmp(a, w->option) == 0 && next && starts(argv[i + 1], w->name, true)) {
            *found = xasprintf("%s %s", a, argv[i + 1]);
            return true;
        }
        if (w->name && single && strncmp(a, w->option, strlen(w->option)) == 0 &&
            starts(a + strlen(w->option), w->name, true)) {
            *found = xstrdup(a);
            return true;
        }
    }
    return false;
}

static char *spelled(const struct arg_spelling *w)
{
    return w->name ? xasprintf("%s %s", w->option, w->name) : xstrdup(w->option);
}

/* Whether argv[0] is one of the commands the profile's arguments are for. */
static bool for_this(const struct profile *p, const char *cmd)
{
    const char *base = strrchr(cmd, '/');
    base = base ? base + 1 : cmd;
    for (size_t i = 0; i < p->args.ncommands; i++)
        if (strcmp(p->args.commands[i], base) == 0)
            return true;
    return false;
}

/* The words w and its value make: one ("--name=8"), or two ("-t" "8"; "-c" "name=8"). */
static size_t words_of(const struct arg_spelling *w, const char *raw, const char *value, char **out)
{
    if (raw[0] == '=') {
        out[0] = xasprintf("%s=%s", w->option, value);
        return 1;
    }
    out[0] = xstrdup(w->option);
    out[1] = w->name ? xasprintf("%s=%s", w->name, value) : xstrdup(value);
    return 2;
}

/* The names the arguments are for, as a note lists them: "memcached" or "a, b". */
static char *for_list(const struct profile *p)
{
    char *list = xstrdup("");
    for (size_t i = 0; i < p->args.ncommands; i++) {
        char *more = xasprintf("%s%s%s", list, i ? ", " : "", p->args.commands[i]);
        free(list);
        list = more;
    }
    return list;
}

void plan_add_args(struct ctx *c, const struct plan_input *in)
{
    const struct profile *p = c->p;
    struct plan *pl = c->pl;
    if (p->args.n == 0)
        return;
    char *const *argv = in->command;
    if (argv && !for_this(p, argv[0])) {
        char *list = for_list(p);
        const char *base = strrchr(argv[0], '/');
        pl->args_for_other = base ? base + 1 : argv[0];
        plan_note_add(pl, NOTE_INFO,
                      "args: none added: they are for %s, and the command is %s (run the service "
                      "itself, not a wrapper, to have them)",
                      list, pl->args_for_other);
        free(list);
        return;
    }
    size_t end = argv ? options_end(argv) : 0, argc = end;
    while (argv && argv[argc])
        argc++;
    /* room for every word: the command's, two per argument, and the NULL */
    char **words = xcalloc(argc + 2 * p->args.n + 1, sizeof(*words));
    size_t n = 0;
    for (size_t i = 0; i < end; i++)
        words[n++] = argv[i];
    pl->args = xcalloc(p->args.n, sizeof(*pl->args));
    pl->added = xcalloc(2 * p->args.n, sizeof(*pl->added));
    for (size_t k = 0; k < p->args.n; k++) {
        const struct profile_arg *a = &p->args.v[k];
        struct plan_arg *r = &pl->args[pl->nargs++];
        bool joined = a->value[0] == '=';
        r->option = spelled(&a->ways[0]);
        r->value = plan_expand(c, a->value + joined);
        for (size_t w = 0; argv && w < a->nways && !r->passed; w++)
            passes(&a->ways[w], argv, end, &r->passed);
        r->added = r->passed == NULL;
        char *at = plan_origin(a->at);
        if (!r->added) {
            plan_note_add(pl, NOTE_INFO, "args: %s not added: the command passes %s itself (%s)",
                          r->option, r->passed, at);
        } else {
            char *made[2];
            size_t m = words_of(&a->ways[0], a->value, r->value, made);
            for (size_t i = 0; i < m; i++)
                words[n++] = pl->added[pl->nadded++] = made[i];
            plan_note_add(pl, NOTE_INFO, "args: %s %s%s%s (%s)", argv ? "added" : "a launch adds",
                          made[0], m == 2 ? " " : "", m == 2 ? made[1] : "", at);
        }
        free(at);
    }
    for (size_t i = end; argv && argv[i]; i++)
        words[n++] = argv[i];
    if (argv)
        pl->argv = words;
    else
        free(words);
}
