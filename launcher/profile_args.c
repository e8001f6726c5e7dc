/*
 * profile_args.c - [args]: arguments a profile adds to the service's
 * command, sized from the plan, for the services that take their size
 * only from their command line (memcached's -t, redis's --io-threads,
 * postgres's -c max_worker_processes).
 *
 *     [args]
 *     for = memcached
 *     -t|--threads = ${ncpus}
 *
 * `for` names the commands (by the name they are run by) the arguments
 * are for: a wrapper or another program never gets options meant for the
 * service. Every other key is an option, as one or more spellings the
 * command may use for it, separated by '|'; the first is the one added.
 * A spelling is one word ("-t", "--io-threads") or two ("-c
 * max_worker_processes": an option and the name its value starts with).
 * The value may hold the plan's ${...} variables, as [env]'s may; one that
 * starts with '=' joins the option ("--name = =${ncpus}" adds
 * --name=8). The planner (plan_args.c) adds each one the command does not
 * pass already, and says which it added and which it did not.
 */
#include "profile_internal.h"
#include "parse.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void spelling_free(struct arg_spelling *w)
{
    free(w->option);
    free(w->name);
}

static void arg_free(struct profile_arg *a)
{
    free(a->key);
    for (size_t i = 0; i < a->nways; i++)
        spelling_free(&a->ways[i]);
    free(a->ways);
    free(a->value);
}

void profile_args_free(struct profile *p)
{
    for (size_t i = 0; i < p->args.ncommands; i++)
        free(p->args.commands[i]);
    free(p->args.commands);
    for (size_t i = 0; i < p->args.n; i++)
        arg_free(&p->args.v[i]);
    free(p->args.v);
    memset(&p->args, 0, sizeof(p->args));
}

/*
 * `for = NAME[, NAME...]`: command names, as argv[0] ends. Empty: no
 * [args] at all, an include's options with it (options after it name
 * no command again, an error).
 */
static bool set_for(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (*v == '\0') {
        profile_args_free(p);
        return true;
    }
    if (profile_empty_item(v, why))
        return false;
    char *list = xstrdup(v), *save = NULL;
    char **names = NULL;
    size_t n = 0;
    bool ok = true;
    for (char *t = strtok_r(list, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        t = str_trim(t);
        if (*t == '\0')
            continue;
        if (strchr(t, '/') || strchr(t, ' ') || strcmp(t, ".") == 0 || strcmp(t, "..") == 0) {
            *why = profile_why("'%.60s' is not a command's name (the last part of its path, "
                               "without a directory)",
                               t);
            ok = false;
            break;
        }
        names = xrealloc(names, (n + 1) * sizeof(*names));
        names[n++] = xstrdup(t);
    }
    free(list);
    if (!ok) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return false;
    }
    for (size_t i = 0; i < p->args.ncommands; i++)
        free(p->args.commands[i]);
    free(p->args.commands);
    p->args.commands = names;
    p->args.ncommands = n;
    p->args.for_at = at;
    return true;
}

/* An option word: a dash, then something that is neither a dash alone nor "--" nor has '='. */
static bool option_word(const char *w)
{
    return w[0] == '-' && w[1] != '\0' && strcmp(w, "--") != 0 && !strchr(w, '=');
}

/* One spelling, "-t" or "-c max_worker_processes", into w; false with why. */
static bool parse_spelling(char *text, struct arg_spelling *w, const char **why)
{
    char *first = str_trim(text), *space = strchr(first, ' ');
    char *second = NULL;
    if (space) {
        *space = '\0';
        second = str_trim(space + 1);
    }
    if (*first == '\0') {
        *why = "an empty spelling: separate the spellings of one option with '|'";
        return false;
    }
    if (!option_word(first)) {
        *why =
            profile_why("'%.60s' is not an option (one starts with '-' and holds no '=')", first);
        return false;
    }
    if (second &&
        (*second == '\0' || *second == '-' || strchr(second, ' ') || strchr(second, '='))) {
        *why = profile_why("'%.60s' after the option is not a setting's name: one word, "
                           "without '-' first or '=' (the value follows it, as in -c "
                           "name=value)",
                           second);
        return false;
    }
    w->option = xstrdup(first);
    w->name = second ? xstrdup(second) : NULL;
    return true;
}

static bool same_spelling(const struct arg_spelling *a, const struct arg_spelling *b)
{
    return strcmp(a->option, b->option) == 0 &&
           (a->name ? b->name && strcmp(a->name, b->name) == 0 : !b->name);
}

/* Whether two options share a spelling: then they are one option, set twice. */
static bool overlap(const struct profile_arg *a, const struct profile_arg *b)
{
    for (size_t i = 0; i < a->nways; i++)
        for (size_t j = 0; j < b->nways; j++)
            if (same_spelling(&a->ways[i], &b->ways[j]))
                return true;
    return false;
}

/* A spelling's text as messages show it: "-t", "-c max_worker_processes". */
static char *spelling_text(const struct arg_spelling *w)
{
    return w->name ? xasprintf("%s %s", w->option, w->name) : xstrdup(w->option);
}

static bool parse_ways(const char *key, struct profile_arg *a, const char **why)
{
    char *copy = xstrdup(key), *rest = copy;
    bool ok = true;
    /* strtok_r would pass over an empty spelling ("-t||--threads"): split by hand */
    for (char *bar; ok && rest; rest = bar ? bar + 1 : NULL) {
        bar = strchr(rest, '|');
        if (bar)
            *bar = '\0';
        struct arg_spelling w;
        if (!(ok = parse_spelling(rest, &w, why)))
            break;
        for (size_t i = 0; i < a->nways && ok; i++)
            if (same_spelling(&a->ways[i], &w)) {
                char *shown = spelling_text(&w);
                *why = profile_why("'%.60s' is spelled twice", shown);
                free(shown);
                ok = false;
            }
        if (!ok) {
            spelling_free(&w);
            break;
        }
        a->ways = xrealloc(a->ways, (a->nways + 1) * sizeof(*a->ways));
        a->ways[a->nways++] = w;
    }
    free(copy);
    return ok;
}

/* What is wrong with an option's value as written, or NULL. */
static const char *value_fault(const struct profile_arg *a, const char *v)
{
    bool joined = v[0] == '=';
    if (v[joined] == '\0')
        return "'=' and no value: give the option's value, such as ${ncpus}";
    if (joined && a->ways[0].name)
        return "'=' joins a one-word option to its value; a two-word one (-c name) has its own "
               "'='";
    if (joined && strncmp(a->ways[0].option, "--", 2) != 0)
        return "'=' joins a long option (--name) to its value; a short one takes it as the next "
               "word";
    return NULL;
}

bool profile_set_arg(struct profile *p, const char *key, const char *v, struct origin at,
                     const char **why)
{
    if (strcmp(key, "for") == 0)
        return set_for(p, v, at, why);
    struct profile_arg a = {0};
    if (!parse_ways(key, &a, why)) {
        arg_free(&a);
        return false;
    }
    /* the value: text the plan fills in (an empty word is no size); empty removes the option */
    const char *fault = *v ? value_fault(&a, v) : NULL;
    if (fault)
        *why = fault;
    if (fault || (*v && !profile_check_refs(v, why))) {
        arg_free(&a);
        return false;
    }
    /*
     * The same option set again (an include's, or --set), by any of its
     * spellings, replaces it where it was, and every other that shares a
     * spelling with it goes; an empty value removes them all.
     */
    size_t at_i = p->args.n, kept = 0;
    for (size_t i = 0; i < p->args.n; i++) {
        if (!overlap(&p->args.v[i], &a))
            p->args.v[kept++] = p->args.v[i];
        else {
            if (at_i == p->args.n)
                at_i = kept; /* where the first of them stood */
            arg_free(&p->args.v[i]);
        }
    }
    p->args.n = kept;
    if (*v == '\0') {
        arg_free(&a);
        return true;
    }
    a.key = xstrdup(key);
    a.value = xstrdup(v);
    a.at = at;
    p->args.v = xrealloc(p->args.v, (p->args.n + 1) * sizeof(*p->args.v));
    memmove(&p->args.v[at_i + 1], &p->args.v[at_i], (p->args.n - at_i) * sizeof(*p->args.v));
    p->args.v[at_i] = a;
    p->args.n++;
    return true;
}

bool profile_check_args(const struct profile *p, struct err *e)
{
    if (p->args.n == 0 || p->args.ncommands > 0)
        return true;
    char loc[256];
    profile_where(loc, sizeof(loc), p->args.v[0].at, "args", p->args.v[0].key, NULL);
    err_set(e,
            "%s: [args] names no command they are for: add `for = NAME` (the service's command, "
            "such as memcached), so that a wrapper or another program never gets them",
            loc);
    return false;
}
