/*
 * launch.c - a launch: the plan built from the facts under the registry's
 * lock, then one loop over its steps, from the claim to the exec.
 *
 * The loop has one rule: a step that fails refuses the launch when it is
 * required (the privilege drop, the final limits, the exec, a claim in a
 * --state-dir that was asked for) or when --strict asks for the whole
 * plan; otherwise it is a warning and the service still starts, as a
 * service that starts with a setting less is better than none. A refusal
 * names the step, and undoes every step taken so far, in reverse: what
 * outlives tunerun (its claim, the CPUs pools yielded, its cgroup) and
 * what tunerun needs for that (root, its own limits).
 *
 * Before any step, the command is looked for and the privilege drop tried
 * in a child (privs_try()): a command that can never run takes nothing
 * from running services. `tunerun plan` is the same plan, built read-only
 * and shown instead of run.
 */
#include "launch.h"
#include "apply.h"
#include "log.h"
#include "plan.h"
#include "privs.h"
#include "registry.h"
#include "report.h"
#include "yield.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

/*
 * Under --strict what would be a warning is a reason the launch is
 * refused: an error, which -q does not hide.
 */
static void log_plan_notes(const struct plan *pl, bool strict)
{
    void (*warn)(const char *, ...) __attribute__((format(printf, 1, 2))) =
        strict ? log_error : log_warn;
    for (size_t i = 0; i < pl->nnotes; i++) {
        if (pl->notes[i].level == NOTE_WARN)
            warn("%s", pl->notes[i].text);
        else
            log_info("%s", pl->notes[i].text);
    }
}

/*
 * The registry, when there is one: its lock is held from reading the
 * claims to the last step that writes them. A planted or foreign lock file
 * is an error, never something to write through.
 */
static bool open_registry(const struct facts *f, struct registry *reg, enum registry_mode mode)
{
    struct err e;
    memset(reg, 0, sizeof(*reg));
    reg->lock_fd = -1;
    if (!f->registry)
        return true;
    if (!registry_open(reg, &f->sd, mode, &f->witness, &e)) {
        log_error("registry: %s", e.msg);
        return false;
    }
    return true;
}

struct depends {
    const struct profile *p;
    const char *key;
};

/* What a launch must know is alive: what its plan turns on, and its own earlier self. */
static bool depends(const struct claim *k, void *arg)
{
    const struct depends *d = arg;
    return plan_depends_on(d->p, k) || (d->key && strcmp(k->key, d->key) == 0);
}

/* What only plan says ahead, of what a launch from here would meet at its steps. */
struct foresight {
    const char *privs_refused;         /* why the drop cannot be made here, or NULL */
    const struct rlimit *fixed_limits; /* the limits, where a hard one cannot rise, or NULL */
    const int *fixed_oom;              /* oom_score_adj, where it cannot go lower, or NULL */
};

static bool build_plan(struct plan *pl, const struct launch_options *o, const struct profile *p,
                       const struct facts *f, struct registry *reg, const struct privs *pv,
                       const struct foresight *ahead)
{
    struct err e;
    char key[CLAIM_KEY_LEN + 1];
    if (o->command)
        plan_launch_key(p->name, o->command, key, sizeof(key));
    struct depends d = {p, o->command ? key : NULL};
    if (f->registry)
        registry_check(reg, depends, &d);
    if (reg->pruned)
        log_info("registry: removed %zu claim%s of services that are gone", reg->pruned,
                 reg->pruned == 1 ? "" : "s");
    /* before the plan: it must see the pools as large as they are again */
    if (f->registry)
        yield_return_ended(reg, &f->topo);
    struct plan_input in = {
        .profile = p,
        .topo = &f->topo,
        .environ = f->environ,
        .registry = f->registry,
        .claims = reg->claims,
        .nclaims = reg->nclaims,
        .previous = f->registry && o->command ? registry_previous(reg, key) : NULL,
        .cgroup = f->cgroup_known ? &f->cgroup : NULL,
        .privs = pv,
        .near = f->near_known ? &f->near : NULL,
        .weights = f->weights_known ? &f->weights : NULL,
        .nr_open = f->nr_open,
        .privs_refused = ahead ? ahead->privs_refused : NULL,
        .fixed_limits = ahead ? ahead->fixed_limits : NULL,
        .fixed_oom = ahead ? ahead->fixed_oom : NULL,
        .thp_inherited = f->thp_inherited,
        .command = o->command,
        .state_dir = f->sd.path,
        .state_dir_asked = o->state_dir_asked,
    };
    if (!plan_build(pl, &in, &e)) {
        log_error("%s", e.msg);
        return false;
    }
    return true;
}

/*
 * Whether execvp() would find and may execute the command, in `path`, and
 * the privilege drop would be made; 0, or the exit status after saying
 * why. A service user's right to execute it is checked as that user, in
 * the drop tried in a child (privs_try()); root may be refused what it may
 * run (NFS).
 */
static int check_command(const char *cmd, const char *path, const char *shown,
                         const struct privs *pv)
{
    int error = command_error(cmd, path, NULL);
    if (error != 0 && !(pv && pv->change_id && error != ENOENT)) {
        log_error("cannot execute '%s': %s", shown, strerror(error));
        return error == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
    }
    struct err e;
    if (pv == NULL || privs_try(pv, cmd, path, &error, &e) == 0)
        return 0;
    /* never a warning: the service would run with more than its profile gives it */
    log_error("privileges: %s; not executing %s", e.msg, shown);
    return error == 0                            ? EXIT_TUNERUN
           : error == ENOENT || error == ENOTDIR ? EXIT_NOT_FOUND
                                                 : EXIT_CANNOT_RUN;
}

/* The PATH the exec step will search, as the plan has it (its privileges step keeps it). */
static const char *planned_path(const struct plan *pl, char *const *environ)
{
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_PRIVILEGES)
            return pl->steps[i].u.privileges.path;
    for (size_t i = pl->nsteps; i-- > 0;)
        if (pl->steps[i].type == STEP_SETENV && strcmp(pl->steps[i].u.env.name, "PATH") == 0)
            return pl->steps[i].u.env.value;
    for (char *const *e = environ; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            return *e + 5;
    return NULL;
}

/* Whether the profile's [env] sets PATH from what only the plan knows (${...}). */
static bool path_waits_for_plan(const struct profile *p)
{
    for (size_t i = 0; i < p->nenv; i++)
        if (strcmp(p->env[i].name, "PATH") == 0 && strstr(p->env[i].value, "${"))
            return true;
    return false;
}

/* One line for a step taken: ok and skipped at -v; a failure that is only a warning. */
static void say_step(const char *name, const struct step_result *r, bool strict)
{
    if (r->status != STEP_FAILED)
        log_info("%-7s %-22s %s", step_status_name(r->status), name, r->err.msg);
    else if (strict)
        log_error("%s: %s", name, r->err.msg);
    else
        log_warn("%s: %s%s", name, r->err.msg, r->costs ? r->costs : "");
}

/* Every step taken so far undone, the last first. */
static void undo_from(struct launch_state *ls, size_t i)
{
    for (size_t k = i + 1; k-- > 0;)
        step_undo(ls, &ls->pl->steps[k]);
}

/*
 * The last steps are said before they are taken: after the final limits a
 * write of tunerun's own may pass a low fsize (killed by SIGXFSZ, in a
 * unit whose stderr is a file), and after the exec there is no tunerun to
 * say anything. A failure of either is said after it, once undone.
 */
static void say_last(const struct launch_state *ls, const struct plan_step *s)
{
    if (s->type == STEP_RLIMITS_FINAL) {
        char value[256];
        plan_step_value(ls->pl, s, value, sizeof(value));
        log_info("%-7s %-22s %s", "next", "final rlimits", value);
    }
    log_info("executing %s", ls->shown);
}

/*
 * The steps in order. Returns only when the launch is refused, with the
 * exit status, having said which step failed and undone what was taken.
 */
static int run_steps(struct launch_state *ls, bool strict)
{
    const struct plan *pl = ls->pl;
    size_t last_registry = pl->nsteps; /* the last step that writes the registry */
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_CLAIM || pl->steps[i].type == STEP_YIELD)
            last_registry = i;
    bool said = false; /* the last steps are said already */
    for (size_t i = 0; i < pl->nsteps; i++) {
        const struct plan_step *s = &pl->steps[i];
        char name[64];
        struct step_result r;
        plan_step_name(s, name, sizeof(name));
        if (!said && (s->type == STEP_RLIMITS_FINAL || s->type == STEP_EXEC)) {
            say_last(ls, s);
            said = true;
        }
        step_apply(ls, s, &r);
        bool refuses = r.status == STEP_FAILED && (strict || s->required);
        if (refuses && s->type == STEP_EXEC) {
            undo_from(ls, i);
            log_error("%s", r.err.msg); /* "cannot execute 'x': ...", as env(1) says it */
        } else if (refuses && s->required) {
            log_error("%s: %s; not executing %s", name, r.err.msg, ls->shown);
        } else if (refuses) {
            say_step(name, &r, true);
            log_error("--strict: the %s step failed; not executing %s", name, ls->shown);
        } else if (!said || r.status == STEP_FAILED) {
            say_step(name, &r, false);
        }
        if (refuses && s->type != STEP_EXEC)
            undo_from(ls, i);
        if (refuses)
            return r.exit_status;
        if (i == last_registry)
            apply_release_registry(ls);
    }
    return EXIT_TUNERUN; /* not reached: the exec step is last, and required */
}

int launch_run(const struct launch_options *o, struct profile *p, const struct facts *f,
               const struct privs *pv)
{
    const char *cmd = o->command[0];
    char named[ESCAPED_SIZE(160)]; /* cmd as messages show it: one line */
    const char *shown = str_escaped(named, sizeof(named), cmd, 160);
    /*
     * The command is looked for before anything is claimed or changed, in
     * the PATH it will be run with, and before the registry's lock: a
     * PATH entry on a hung mount must not stall every launch behind it.
     * Only a PATH of ${...} the plan fills waits for the plan.
     */
    bool later = path_waits_for_plan(p);
    const char *path = NULL;
    for (size_t i = 0; i < p->nenv && !later; i++)
        if (strcmp(p->env[i].name, "PATH") == 0)
            path = p->env[i].value;
    int not_run = later ? 0 : check_command(cmd, path ? path : getenv("PATH"), shown, pv);
    if (not_run != 0)
        return not_run;
    if (f->registry)
        registry_disown(&f->sd);
    struct plan pl;
    struct launch_state ls;
    launch_state_init(&ls, f, NULL, o->command, shown);
    if (!open_registry(f, &ls.reg, REGISTRY_WRITE))
        return EXIT_TUNERUN;
    if (!build_plan(&pl, o, p, f, &ls.reg, pv, NULL)) {
        launch_state_free(&ls);
        return EXIT_TUNERUN;
    }
    ls.pl = &pl;
    int status = EXIT_TUNERUN;
    if (later)
        not_run = check_command(cmd, planned_path(&pl, f->environ), shown, pv);
    if (not_run != 0) {
        status = not_run;
    } else {
        log_plan_notes(&pl, o->strict);
        if (o->strict && pl.degraded)
            log_error("--strict: the plan does not fully honour the profile; not executing %s",
                      shown);
        else
            status = run_steps(&ls, o->strict);
    }
    launch_state_free(&ls);
    plan_free(&pl);
    return status;
}

int launch_plan(const struct launch_options *o, struct profile *p, const struct facts *f,
                const struct privs *pv)
{
    struct plan pl;
    struct registry reg;
    /* shared and read-only: a plan prunes nothing and writes no claim */
    if (!open_registry(f, &reg, REGISTRY_READ))
        return EXIT_TUNERUN;
    /*
     * What a launch from here would refuse at the drop or fail at a limit,
     * said ahead; of another machine's plan, nothing of this process is.
     */
    struct err refused;
    bool no_drop = pv && f->here && privs_check(pv, &refused) != 0;
    bool fixed = f->here && !facts_have_cap(f, CAP_SYS_RESOURCE);
    struct foresight ahead = {no_drop ? refused.msg : NULL, fixed ? f->limits : NULL, NULL};
    /* only plan reads it: a launch's step says what it was when it fails */
    char now[16];
    int oom;
    if (fixed && p->memory.oom_set &&
        read_line_file("/proc/self/oom_score_adj", now, sizeof(now))) {
        oom = (int)strtol(now, NULL, 10);
        ahead.fixed_oom = &oom;
    }
    bool built = build_plan(&pl, o, p, f, &reg, pv, &ahead);
    /*
     * The lock goes before the plan is shown (a reader of stdout that
     * stalls must not stall launches), the claims after: the plan names
     * them (a pool that yields is its claim's profile).
     */
    registry_release(&reg);
    if (!built) {
        registry_close(&reg);
        return EXIT_TUNERUN;
    }
    if (o->json)
        report_plan_json(stdout, p, &f->topo, &pl);
    else
        report_plan_text(stdout, p, &f->topo, &pl);
    int status = o->strict && pl.degraded ? EXIT_TUNERUN : 0;
    plan_free(&pl);
    registry_close(&reg);
    return status;
}
