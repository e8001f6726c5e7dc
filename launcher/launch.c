/*
 * launch.c - a launch, from the facts main() gathered to the exec: the
 * plan built under the registry's lock, then the claim, the plan's steps
 * (apply.c), the yield of running shared pools (yield.c), the cgroup step,
 * the privilege drop (privs.c), the final rlimits and execvp(). When the
 * launch does not reach the exec, what outlives tunerun is undone: its
 * claim, the CPUs pools yielded to it, its cgroup. `tunerun plan` is the
 * same plan, built read-only, and shown instead of applied.
 *
 * Issue 27 takes this further: every effect here a typed step of the plan,
 * run by one loop with one --strict rule and one undo in reverse.
 */
#include "launch.h"
#include "apply.h"
#include "log.h"
#include "plan.h"
#include "privs.h"
#include "registry.h"
#include "report.h"
#include "util.h"
#include "yield.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int log_results(const struct plan *pl, const struct step_result *res, bool cgroup,
                       bool strict)
{
    void (*warn)(const char *, ...) __attribute__((format(printf, 1, 2))) =
        strict ? log_error : log_warn;
    int failed = 0;
    for (size_t i = 0; i < pl->nsteps; i++) {
        char name[64];
        if ((pl->steps[i].type == STEP_CGROUP) != cgroup)
            continue;
        plan_step_name(&pl->steps[i], name, sizeof(name));
        if (res[i].status == STEP_FAILED) {
            failed++;
            warn("%s: %s", name, res[i].detail);
        } else {
            log_info("%-7s %-22s %s", step_status_name(res[i].status), name, res[i].detail);
        }
    }
    return failed;
}

/*
 * The registry, when there is a state directory: the lock is held from
 * reading the claims until just before exec. A planted or foreign lock file
 * is an error, never something to write through.
 */
static bool open_registry(const struct state_dir *sd, struct registry *reg, enum registry_mode mode)
{
    struct err e;
    memset(reg, 0, sizeof(*reg));
    reg->lock_fd = -1;
    if (sd->fd < 0)
        return true;
    if (!registry_open(reg, sd, mode, &e)) {
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

/*
 * fs.nr_open, past which no one may raise nofile's hard limit, when the
 * profile asks this machine for more than the hard limit tunerun has;
 * else 0. A hard limit no higher than tunerun's own is within fs.nr_open
 * already, so a launch then skips the read.
 */
static long nofile_ceiling(const struct profile *p, const struct topo *t)
{
    const struct profile_limit *l = &p->limits[RLIMIT_NOFILE];
    struct rlimit now;
    if (!l->set || t->source != TOPO_HOST || getrlimit(RLIMIT_NOFILE, &now) != 0 ||
        l->hard <= now.rlim_max)
        return 0;
    long v = read_long_file("/proc/sys/fs/nr_open");
    return v > 0 ? v : 0;
}

/* What only plan says ahead, of what a launch from here would meet at its steps. */
struct foresight {
    const char *privs_refused;         /* why the drop cannot be made here, or NULL */
    const struct rlimit *fixed_limits; /* the limits, where a hard one cannot rise, or NULL */
};

static bool build_plan(struct plan *pl, struct profile *p, struct topo *t,
                       const struct state_dir *sd, struct registry *reg, const char *key,
                       const struct cgroup *cg, const struct privs *pv,
                       const struct plan_near *near, const struct foresight *ahead)
{
    struct err e;
    struct depends d = {p, key};
    if (sd->fd >= 0)
        registry_check(reg, depends, &d);
    if (reg->pruned)
        log_info("registry: removed %zu claim%s of services that are gone", reg->pruned,
                 reg->pruned == 1 ? "" : "s");
    struct plan_input in = {
        .profile = p,
        .topo = t,
        .environ = environ,
        .registry = sd->fd >= 0,
        .claims = reg->claims,
        .nclaims = reg->nclaims,
        .cgroup = cg,
        .privs = pv,
        .near = near,
        .nr_open = nofile_ceiling(p, t),
        .privs_refused = ahead ? ahead->privs_refused : NULL,
        .fixed_limits = ahead ? ahead->fixed_limits : NULL,
        .thp_inherited = t->source == TOPO_HOST ? apply_thp_inherited() : THP_SYSTEM,
    };
    if (sd->fd >= 0 && key)
        in.previous = registry_previous(reg, key);
    if (!plan_build(pl, &in, &e)) {
        log_error("%s", e.msg);
        return false;
    }
    return true;
}

/*
 * A launch's identity across restarts: its profile and its command line, so
 * that `systemctl restart` finds the placement it had, and two instances of
 * one profile with different arguments keep theirs apart. FNV-1a, 64 bits:
 * a name, not a secret.
 */
static void launch_key(const struct profile *p, char *const *command, char *out, size_t n)
{
    unsigned long long h = 14695981039346656037ULL;
    const char *name = p->name ? p->name : "";
    for (size_t i = 0; i == 0 || command[i - 1]; i++) {
        const char *s = i == 0 ? name : command[i - 1];
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        h = (h ^ 0) * 1099511628211ULL; /* the NUL between words */
    }
    snprintf(out, n, "%016llx", h);
}

/* Write this launch's claim; its fd stays open across exec. -1 with why in e. */
static int claim(const struct profile *p, const struct plan *pl, const char *key,
                 struct registry *reg, char *name, size_t n, struct err *e)
{
    struct claim k = {.profile = (char *)p->name,
                      .mpol = (char *)plan_mpol_name(pl->mpol),
                      .cpus = pl->cpus,
                      .nodes = pl->nodes,
                      .mem_nodes = pl->mem_nodes,
                      .exclusive = p->placement.exclusive,
                      .pool = !p->placement.exclusive && p->placement.cpus == CPUS_ALL,
                      .avoid = p->placement.avoid,
                      .navoid = p->placement.navoid,
                      .pid = (long)getpid(),
                      .time = (long long)time(NULL)};
    snprintf(k.key, sizeof(k.key), "%s", key);
    if (reg->witness) {
        k.pidns = reg->pidns;
        k.start = reg->start;
        snprintf(k.boot_id, sizeof(k.boot_id), "%s", reg->boot_id);
    } else {
        k.pid = 0; /* no pid witness: the fd lock alone keeps the claim */
    }
    int fd = registry_claim(reg, &k, name, n, e);
    if (fd >= 0)
        log_info("claim %s/%s held by fd %d", reg->sd->path, name, fd);
    return fd;
}

/*
 * A warning to a stderr whose reader has gone must not end a launch with
 * SIGPIPE (141, the service never run), even one written while the
 * options are read or the topology loaded: SIGPIPE is ignored from the
 * first thing main() does, and the exec gives the command the caller's
 * disposition back (an ignored signal stays ignored across exec). The
 * verbs that print to stdout get it back at once, so that `tunerun plan |
 * head -1` ends quietly, as any filter does.
 */
static struct sigaction caller_pipe;
static bool pipe_saved;

void launch_sigpipe_ignore(void)
{
    struct sigaction ignored = {.sa_handler = SIG_IGN};
    sigemptyset(&ignored.sa_mask);
    if (pipe_saved)
        sigaction(SIGPIPE, &ignored, NULL);
    else
        pipe_saved = sigaction(SIGPIPE, &ignored, &caller_pipe) == 0;
}

void launch_sigpipe_restore(void)
{
    if (pipe_saved)
        sigaction(SIGPIPE, &caller_pipe, NULL);
}

/* Which of fds 0-2 the caller had closed: held on /dev/null until the exec. */
static unsigned closed_std;

bool launch_stdout_was_closed(void)
{
    return closed_std & 2;
}

/*
 * A closed fd 0, 1 or 2 would be the next file tunerun opens: the state
 * directory or its lock, and every message would go into that file. So
 * each is held open on /dev/null while tunerun runs, and closed again just
 * before the exec: the command gets the fds its caller gave.
 */
bool launch_hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
            return false; /* no /dev/null (a bare chroot): the next open would take fd */
        closed_std |= 1u << fd;
    }
    return true;
}

static void release_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (closed_std & (1u << fd))
            close(fd);
}

/*
 * A launch that got as far as the privilege drop and will not exec after
 * all: root again (the drop keeps the way back until the exec), out of the
 * cgroup it entered, and, under the registry's lock taken again (the table
 * may have changed since), the CPUs pools yielded to it given back and its
 * claim dropped. Where the way back is gone none of that can be done, and
 * the message says who will.
 */
static void abandon(const struct state_dir *sd, const struct topo *t, struct registry *reg,
                    struct yield *y, const char *name, int claim_fd, const char *not_root)
{
    registry_close(reg);
    cgroup_leave();
    if (not_root) {
        log_notice("cannot be root again (%s): its claim is left for the next launch to remove, "
                   "its cgroup for the sweep, and services that yielded CPUs to it keep the "
                   "smaller set until they restart",
                   not_root);
        return;
    }
    struct registry again;
    if (claim_fd < 0 || !open_registry(sd, &again, REGISTRY_WRITE))
        return;
    /* its own claim first: what placed services hold then is what stays taken */
    registry_drop(&again, name, claim_fd);
    yield_give_back(y, &again, t);
    registry_close(&again);
}

/* Root again after a drop (none: nothing to do); NULL, or why it cannot be. */
static const char *regain(const struct privs *pv, char *why, size_t n)
{
    return pv && privs_regain(why, n) != 0 ? why : NULL;
}

/*
 * The PATH execvp() will search: the profile's [env] PATH, else the
 * inherited one. *later when it names a ${...} that only the plan knows.
 */
static const char *exec_path(const struct profile *p, bool *later)
{
    const char *value = getenv("PATH");
    for (size_t i = 0; i < p->nenv; i++)
        if (strcmp(p->env[i].name, "PATH") == 0)
            value = p->env[i].value;
    *later = value && strstr(value, "${");
    return value;
}

/* The value the plan gives environment variable `name`, else the inherited one. */
static const char *plan_env(const struct plan *pl, const char *name)
{
    const char *value = getenv(name);
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_SETENV && strcmp(pl->steps[i].u.env.name, name) == 0)
            value = pl->steps[i].u.env.value;
    return value;
}

/* The exit status of a drop privs_drop() refused: the command's (127, 126) where it is to blame. */
static int drop_status(int exec_error)
{
    return exec_error == 0                                 ? EXIT_TUNERUN
           : exec_error == ENOENT || exec_error == ENOTDIR ? EXIT_NOT_FOUND
                                                           : EXIT_CANNOT_RUN;
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
    char why[1024];
    if (pv == NULL || privs_try(pv, cmd, path, &error, why, sizeof(why)) == 0)
        return 0;
    /* never a warning: the service would run with more than its profile gives it */
    log_error("privileges: %s; not executing %s", why, shown);
    return drop_status(error);
}

/*
 * The room an exec leaves the argument and environment strings under a
 * soft stack limit: a quarter of it, at most 6 MiB (three quarters of
 * _STK_LIM) and at least 128 KiB (ARG_MAX), less a pointer per string, as
 * fs/exec.c computes it (prepare_arg_pages(), later bprm_stack_limits()).
 */
static size_t exec_room(rlim_t stack, size_t pointers)
{
    size_t quarter = stack == RLIM_INFINITY || stack / 4 > (6u << 20) ? 6u << 20 : stack / 4;
    size_t room = quarter < (128u << 10) ? 128u << 10 : quarter;
    return room > pointers ? room - pointers : 0;
}

/*
 * Why execvp() failed with E2BIG, where the stack limit the plan set is the
 * reason: the strings the kernel copies (the file's name, the environment,
 * the arguments, under a first pointer's slot) pass the room that limit
 * leaves them, and not the room tunerun's own had (`saved`, as
 * apply_rlimits_final() kept it). A string over 128 KiB (MAX_ARG_STRLEN)
 * is too long under any limit. Writes nothing else.
 */
static void e2big_reason(char *const *argv, const struct plan *pl, const struct rlimit *saved,
                         char *buf, size_t n)
{
    size_t step = 0;
    while (step < pl->nsteps && !(pl->steps[step].type == STEP_RLIMIT &&
                                  pl->steps[step].u.rlimit.resource == RLIMIT_STACK))
        step++;
    struct rlimit now;
    char *file = NULL;
    if (step == pl->nsteps || command_error(argv[0], getenv("PATH"), &file) != 0 ||
        getrlimit(RLIMIT_STACK, &now) != 0) {
        free(file);
        return; /* the plan set no stack limit: not the plan's doing */
    }
    rlim_t before = saved[step].rlim_cur;
    size_t need = strlen(file) + 1 + sizeof(char *), pointers = 0, longest = 0;
    free(file);
    for (int pass = 0; pass < 2; pass++)
        for (char *const *s = pass == 0 ? argv : environ; s && *s; s++) {
            size_t len = strlen(*s) + 1;
            need += len;
            pointers += sizeof(char *);
            longest = len > longest ? len : longest;
        }
    if (longest > (128u << 10) || need <= exec_room(now.rlim_cur, pointers) ||
        need > exec_room(before, pointers))
        return;
    char limit[24];
    rlim_str(limit, sizeof(limit), now.rlim_cur);
    snprintf(buf, n,
             ": its arguments and environment take %zu KiB, more than the %zu KiB the plan's "
             "stack limit leaves them (limits.stack = %s bytes: a quarter of it, and at least "
             "128 KiB; fix: limits.stack = %zuK or more)",
             (need + 1023) / 1024, exec_room(now.rlim_cur, pointers) / 1024, limit,
             (4 * (need + pointers) + 1023) / 1024);
}

int launch_run(const struct launch_options *o, struct profile *p, struct topo *t,
               const struct state_dir *sd, const struct cgroup *cg, const struct privs *pv,
               const struct plan_near *near)
{
    struct plan pl;
    struct registry reg;
    char name[256];
    char key[CLAIM_KEY_LEN + 1];
    int claim_fd = -1, status = EXIT_TUNERUN;
    const char *cmd = o->command[0];
    char named[ESCAPED_SIZE(160)]; /* cmd as messages show it: one line */
    const char *shown = str_escaped(named, sizeof(named), cmd, 160);
    launch_key(p, o->command, key, sizeof(key));
    /*
     * The command is looked for before anything is claimed or changed, in
     * the PATH it will be run with, and before the registry's lock: a
     * PATH entry on a hung mount must not stall every launch behind it.
     * Only a PATH of ${...} the plan fills waits for the plan.
     */
    bool later;
    const char *path = exec_path(p, &later);
    int not_run = later ? 0 : check_command(cmd, path, shown, pv);
    if (not_run != 0)
        return not_run;
    if (sd->fd >= 0)
        registry_disown(sd);
    if (!open_registry(sd, &reg, REGISTRY_WRITE))
        return EXIT_TUNERUN;
    /* the drop's own refusal comes as an error at the drop: not said twice */
    if (!build_plan(&pl, p, t, sd, &reg, key, cg, pv, near, NULL)) {
        registry_close(&reg);
        return EXIT_TUNERUN;
    }
    if (later && (not_run = check_command(cmd, plan_env(&pl, "PATH"), shown, pv)) != 0) {
        registry_close(&reg);
        plan_free(&pl);
        return not_run;
    }
    int error;
    struct step_result *res = xcalloc(pl.nsteps ? pl.nsteps : 1, sizeof(*res));
    struct yield y = {0};
    char root_why[512];
    const char *not_root = NULL; /* why it cannot be root again after the drop */
    log_plan_notes(&pl, o->strict);
    if (o->strict && pl.degraded) {
        log_error("--strict: the plan does not fully honour the profile; not executing %s", shown);
        goto refused;
    }
    struct err ce;
    if (sd->fd >= 0 && (claim_fd = claim(p, &pl, key, &reg, name, sizeof(name), &ce)) < 0) {
        /*
         * The default directory's claim that cannot be written (a full
         * /run) costs what an unavailable directory costs: a warning, as
         * a service that starts unregistered is better than none. One that
         * was asked for, or --strict, refuses.
         */
        if (o->strict || o->state_dir_asked) {
            log_error("registry: %s", ce.msg);
            goto refused;
        }
        log_warn("registry: %s; this service is not registered, so services started later do not "
                 "know of it, and shared pools keep their CPUs (--strict refuses)",
                 ce.msg);
    }
    apply_plan(&pl, res);
    int failed = log_results(&pl, res, false, o->strict);
    if (o->strict && failed) {
        log_error("--strict: %d step%s failed; not executing %s", failed, failed == 1 ? "" : "s",
                  shown);
        goto refused;
    }
    int stuck = claim_fd >= 0 ? yield_take(&y, &pl, &reg) : 0; /* none for no one's claim */
    if (o->strict && stuck) {
        log_error("--strict: %d thread%s of running services could not yield their CPUs; "
                  "moved the others back; not executing %s",
                  stuck, stuck == 1 ? "" : "s", shown);
        yield_undo(&y);
        goto refused;
    }
    apply_cgroup_step(&pl, res);
    if (log_results(&pl, res, true, o->strict) && o->strict) {
        log_error("--strict: the cgroup step failed; not executing %s", shown);
        yield_undo(&y);
        goto refused;
    }
    if (claim_fd >= 0)
        yield_record(&y, &pl, &reg, name);
    /* no lock held over the exec: a hung filesystem would stall every launch behind it */
    registry_release(&reg);
    if (pv) {
        char why[1024];
        int exec_error;
        if (privs_drop(pv, cmd, &exec_error, why, sizeof(why)) != 0) {
            /* never a warning: the service would run with more than its profile gives it */
            log_error("privileges: %s; not executing %s", why, shown);
            not_root = regain(pv, root_why, sizeof(root_why));
            status = drop_status(exec_error);
            goto abandoned;
        }
        char *who = privs_describe(pv);
        log_info("ok      privileges             %s", who);
        free(who);
    }
    log_info("executing %s", shown);
    fflush(NULL);
    /* the last thing before the exec: the limits may be too low for tunerun's own writes */
    struct rlimit *saved = xcalloc(pl.nsteps ? pl.nsteps : 1, sizeof(*saved));
    if ((error = apply_rlimits_final(&pl, saved)) != 0) {
        not_root = regain(pv, root_why, sizeof(root_why)); /* raising a hard limit again needs it */
        apply_rlimits_undo(&pl, saved);
        free(saved);
        log_error("rlimit: cannot lower to the plan's limits: %s; not executing %s",
                  strerror(error), shown);
        goto abandoned;
    }
    release_std_fds();
    launch_sigpipe_restore();
    execvp(cmd, o->command);
    error = errno;
    launch_sigpipe_ignore();
    char reason[384] = "";
    if (error == E2BIG) /* under the plan's stack limit, before it is undone */
        e2big_reason(o->command, &pl, saved, reason, sizeof(reason));
    not_root = regain(pv, root_why, sizeof(root_why));
    apply_rlimits_undo(&pl, saved);
    free(saved);
    (void)launch_hold_std_fds(); /* what abandon() opens must not land on 0-2 */
    log_error("cannot execute '%s': %s%s", shown, strerror(error), reason);
    status = error == ENOENT || error == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
abandoned:
    abandon(sd, t, &reg, &y, name, claim_fd, not_root);
    goto out;
refused:
    if (claim_fd >= 0)
        registry_drop(&reg, name, claim_fd);
    registry_close(&reg);
out:
    yield_free(&y);
    free(res);
    plan_free(&pl);
    return status;
}

int launch_plan(const struct launch_options *o, struct profile *p, struct topo *t,
                     const struct state_dir *sd, const struct cgroup *cg, const struct privs *pv,
                     const struct plan_near *near)
{
    struct plan pl;
    struct registry reg;
    char key[CLAIM_KEY_LEN + 1];
    if (o->command)
        launch_key(p, o->command, key, sizeof(key));
    /* shared and read-only: a plan prunes nothing and writes no claim */
    if (!open_registry(sd, &reg, REGISTRY_READ))
        return EXIT_TUNERUN;
    /* what a launch from here would refuse at the drop or fail at a limit, said ahead
     * (another machine's: not) */
    char refused[1024];
    struct rlimit limits[PROFILE_NLIMITS];
    bool here = !o->elsewhere, no_drop = pv && here && privs_check(pv, refused, sizeof(refused));
    bool fixed = here && !apply_may_raise_hard_limits();
    for (int r = 0; fixed && r < PROFILE_NLIMITS; r++)
        if (getrlimit(r, &limits[r]) != 0)
            limits[r] = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY}; /* unknown: no warning */
    struct foresight ahead = {no_drop ? refused : NULL, fixed ? limits : NULL};
    bool built = build_plan(&pl, p, t, sd, &reg, o->command ? key : NULL, cg, pv, near, &ahead);
    registry_close(&reg);
    if (!built)
        return EXIT_TUNERUN;
    if (o->json)
        report_plan_json(stdout, p, t, &pl);
    else
        report_plan_text(stdout, p, t, &pl);
    int status = o->strict && pl.degraded ? EXIT_TUNERUN : 0;
    plan_free(&pl);
    return status;
}
