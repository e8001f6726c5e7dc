/*
 * apply.c - plan -> syscalls, in the plan's order (tunerun(1), "Applying"),
 * all while still privileged: rlimits, oom_score_adj, memory policy, CPU
 * affinity, THP, environment; then, once main has had running shared pools
 * yield their CPUs, the swap policy's cgroup (apply_cgroup_step()). Main
 * drops privileges after that and executes. Each of these survives
 * execve(), which is why tunerun can apply them to itself and then become
 * the service.
 */
#include "apply.h"
#include "procs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

/* libnuma 2.0.16's headers predate these modes and flags. */
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY 5
#endif
#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#define PR_GET_THP_DISABLE 42
#endif
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1) /* Linux 6.18 */
#endif

#define THP_ENABLED_PATH "/sys/kernel/mm/transparent_hugepage/enabled"

const char *step_status_name(enum step_status s)
{
    static const char *const names[] = {"ok", "skipped", "failed"};
    return names[s];
}

static void set(struct step_result *r, enum step_status st, int error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set(struct step_result *r, enum step_status st, int error, const char *fmt, ...)
{
    va_list ap;
    r->status = st;
    r->error = error;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
    va_end(ap);
}

static bool have_cap(cap_value_t cap)
{
    cap_t caps = cap_get_proc();
    cap_flag_value_t v = CAP_CLEAR;
    if (caps) {
        cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
        cap_free(caps);
    }
    return v == CAP_SET;
}

/* RLIM_INFINITY is the largest rlim_t */
#define RLIM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RLIM_MIN(a, b) ((a) < (b) ? (a) : (b))

static void apply_rlimit(const struct plan_step *s, struct step_result *r)
{
    int res = s->u.rlimit.resource;
    struct rlimit old, want = {s->u.rlimit.soft, s->u.rlimit.hard};
    char ws[24], wh[24], os[24], oh[24];
    rlim_str(ws, sizeof(ws), want.rlim_cur);
    rlim_str(wh, sizeof(wh), want.rlim_max);
    if (getrlimit(res, &old) < 0) {
        set(r, STEP_FAILED, errno, "cannot read the current limit: %s", strerror(errno));
        return;
    }
    rlim_str(os, sizeof(os), old.rlim_cur);
    rlim_str(oh, sizeof(oh), old.rlim_max);
    /*
     * Only raised here, where raising may need privilege; what the service
     * gets below the current limits is set by apply_rlimits_final() at the
     * exec, so that a limit lower than tunerun's own needs (as, fsize,
     * stack) binds the service, not the claim, cgroup and table work
     * between here and there.
     * nproc is set at once: the uid change checks the new user's
     * processes against it, and a user over it cannot exec (EAGAIN), as
     * under systemd and su.
     */
    bool at_once = res == RLIMIT_NPROC;
    struct rlimit up = at_once ? want
                               : (struct rlimit){RLIM_MAX(old.rlim_cur, want.rlim_cur),
                                                 RLIM_MAX(old.rlim_max, want.rlim_max)};
    if (setrlimit(res, &up) == 0) {
        set(r, STEP_OK, 0, "%s:%s (was %s:%s)", ws, wh, os, oh);
        return;
    }
    int error = errno;
    /* The hard limit could not be raised: go as high as the current hard limit allows. */
    char why[160] = "", first[96] = "";
    /* read by the plan when the hard limit is to rise past tunerun's, as it failed to here */
    long nr_open = res == RLIMIT_NOFILE ? s->u.rlimit.nr_open : -1;
    if (nr_open > 0 && want.rlim_max > (rlim_t)nr_open) {
        /* no one may set it, root with every capability included, until the sysctl is raised */
        snprintf(why, sizeof(why), "it exceeds fs.nr_open (%ld)", nr_open);
        snprintf(first, sizeof(first), "sysctl -w fs.nr_open=%s, then ", wh);
    } else if (error == EPERM && !have_cap(CAP_SYS_RESOURCE))
        snprintf(why, sizeof(why),
                 "raising a hard limit needs CAP_SYS_RESOURCE, which "
                 "this process lacks");
    else
        snprintf(why, sizeof(why), "%s", strerror(error));
    /* the soft limit as far as the hard one goes: set at the exec like the rest */
    struct rlimit fallback = old;
    fallback.rlim_cur = RLIM_MIN(want.rlim_cur, old.rlim_max);
    char fs[24];
    rlim_str(fs, sizeof(fs), fallback.rlim_cur);
    struct rlimit up_to =
        at_once ? fallback
                : (struct rlimit){RLIM_MAX(old.rlim_cur, fallback.rlim_cur), old.rlim_max};
    char *fix = rlimit_raise_fix(res, want.rlim_cur, want.rlim_max);
    if (setrlimit(res, &up_to) == 0)
        set(r, STEP_FAILED, error,
            "cannot set %s:%s: %s; soft limit set to %s, hard stays %s (fix: %s%s)", ws, wh, why,
            fs, oh, first, fix);
    else
        set(r, STEP_FAILED, error, "cannot set %s:%s: %s; limit left at %s:%s", ws, wh, why, os,
            oh);
    free(fix);
}

static void apply_oom(const struct plan_step *s, struct step_result *r)
{
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    char buf[16];
    int len = snprintf(buf, sizeof(buf), "%d", s->u.oom_score_adj);
    ssize_t w = fd < 0 ? -1 : write(fd, buf, (size_t)len);
    if (w != len) {
        int error = w < 0 ? errno : EIO; /* a short write sets no errno */
        if (fd >= 0)
            close(fd);
        long cur = read_long_file("/proc/self/oom_score_adj");
        set(r, STEP_FAILED, error,
            "cannot set oom_score_adj %d (now %ld): %s%s (fix: OOMScoreAdjust=%d in the unit, "
            "or docker run --oom-score-adj %d)",
            s->u.oom_score_adj, cur, strerror(error),
            (error == EACCES || error == EPERM) && !have_cap(CAP_SYS_RESOURCE)
                ? "; lowering it needs CAP_SYS_RESOURCE"
                : "",
            s->u.oom_score_adj, s->u.oom_score_adj);
        return;
    }
    close(fd);
    set(r, STEP_OK, 0, "%d", s->u.oom_score_adj);
}

/* A node mask in the kernel's layout, for set_mempolicy(). */
static unsigned long *nodemask_of(hwloc_const_bitmap_t nodes, unsigned long *maxnode)
{
    int last = hwloc_bitmap_last(nodes);
    size_t words = last < 0 ? 1 : (size_t)last / (8 * sizeof(unsigned long)) + 1;
    unsigned long *mask = calloc(words, sizeof(unsigned long));
    if (mask == NULL)
        return NULL;
    int n;
    hwloc_bitmap_foreach_begin(n, nodes)
    {
        mask[(size_t)n / (8 * sizeof(unsigned long))] |= 1UL << ((size_t)n % (8 * sizeof(long)));
    }
    hwloc_bitmap_foreach_end();
    /* The kernel reads maxnode - 1 bits: pass one more than the mask holds. */
    *maxnode = words * 8 * sizeof(unsigned long) + 1;
    return mask;
}

/*
 * The kernel never refuses a process its own memory policy or affinity
 * with EPERM: a seccomp filter does. Docker's default profile allows
 * set_mempolicy and mbind only with CAP_SYS_NICE; systemd's
 * SystemCallFilter= keeps them in @resources.
 */
static const char *filtered_fix(int error, bool mempolicy)
{
    if (error != EPERM)
        return "";
    return mempolicy ? " (a seccomp filter refuses it; fix: docker run --cap-add SYS_NICE, without "
                       "which Docker's default profile refuses it; in a unit, @resources in "
                       "SystemCallFilter=)"
                     : " (a seccomp filter refuses it; fix: in a unit, @resources in "
                       "SystemCallFilter=)";
}

static void apply_mempolicy(const struct plan_step *s, struct step_result *r)
{
    static const int kernel_mode[] = {
        [PLAN_MPOL_LOCAL] = MPOL_LOCAL,           [PLAN_MPOL_BIND] = MPOL_BIND,
        [PLAN_MPOL_PREFERRED] = MPOL_PREFERRED,   [PLAN_MPOL_PREFERRED_MANY] = MPOL_PREFERRED_MANY,
        [PLAN_MPOL_INTERLEAVE] = MPOL_INTERLEAVE,
    };
    enum plan_mpol mode = s->u.mempolicy.mode;
    char *list = NULL;
    if (hwloc_bitmap_list_asprintf(&list, s->u.mempolicy.nodes) < 0) {
        set(r, STEP_FAILED, ENOMEM, "out of memory");
        return;
    }
    if (mode == PLAN_MPOL_LOCAL) {
        if (set_mempolicy(MPOL_LOCAL, NULL, 0) == 0)
            set(r, STEP_OK, 0, "local");
        else
            set(r, STEP_FAILED, errno, "set_mempolicy(local): %s%s", strerror(errno),
                filtered_fix(errno, true));
        free(list);
        return;
    }
    unsigned long maxnode;
    unsigned long *mask = nodemask_of(s->u.mempolicy.nodes, &maxnode);
    if (mask == NULL) {
        set(r, STEP_FAILED, ENOMEM, "out of memory");
        free(list);
        return;
    }
    if (set_mempolicy(kernel_mode[mode], mask, maxnode) == 0) {
        set(r, STEP_OK, 0, "%s %s", plan_mpol_name(mode), list);
    } else if (mode == PLAN_MPOL_PREFERRED_MANY && errno == EINVAL) {
        /* Before Linux 5.15 there is only one preferred node. */
        int first = hwloc_bitmap_first(s->u.mempolicy.nodes);
        hwloc_bitmap_t one = hwloc_bitmap_alloc();
        hwloc_bitmap_only(one, (unsigned)first);
        free(mask);
        mask = nodemask_of(one, &maxnode);
        hwloc_bitmap_free(one);
        if (mask && set_mempolicy(MPOL_PREFERRED, mask, maxnode) == 0)
            set(r, STEP_FAILED, EINVAL,
                "this kernel lacks MPOL_PREFERRED_MANY (Linux 5.15+): preferring node %d only "
                "instead of %s",
                first, list);
        else
            set(r, STEP_FAILED, errno, "set_mempolicy(preferred %d): %s%s", first, strerror(errno),
                filtered_fix(errno, true));
    } else {
        int error = errno;
        set(r, STEP_FAILED, error, "set_mempolicy(%s %s): %s%s", plan_mpol_name(mode), list,
            strerror(error),
            error == EINVAL ? " (nodes outside this process's cpuset mems?)"
                            : filtered_fix(error, true));
    }
    free(mask);
    free(list);
}

static void apply_affinity(const struct plan_step *s, struct step_result *r)
{
    size_t size;
    cpu_set_t *set_ = cpuset_alloc(s->u.cpus, &size);
    char *list = NULL;
    if (set_ == NULL || hwloc_bitmap_list_asprintf(&list, s->u.cpus) < 0) {
        set(r, STEP_FAILED, ENOMEM, "out of memory");
        if (set_)
            CPU_FREE(set_);
        return;
    }
    /* pid 0: the calling thread, the one that will exec. */
    if (sched_setaffinity(0, size, set_) == 0)
        set(r, STEP_OK, 0, "cpus %s", list);
    else
        set(r, STEP_FAILED, errno, "sched_setaffinity(%s): %s%s", list, strerror(errno),
            filtered_fix(errno, false));
    CPU_FREE(set_);
    free(list);
}

const char *apply_thp_bracketed(const char *text, char *buf, size_t n)
{
    const char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
    if (!open || !close || (size_t)(close - open - 1) >= n)
        return NULL;
    memcpy(buf, open + 1, (size_t)(close - open - 1));
    buf[close - open - 1] = '\0';
    return buf;
}

static const char *global_thp_mode(char *buf, size_t n)
{
    char text[128];
    if (!read_line_file(THP_ENABLED_PATH, text, sizeof(text)))
        return NULL;
    return apply_thp_bracketed(text, buf, n);
}

bool apply_may_raise_hard_limits(void)
{
    return have_cap(CAP_SYS_RESOURCE);
}

enum thp_mode apply_thp_inherited(void)
{
    int flags = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    return flags <= 0                              ? THP_SYSTEM /* none, or a filter refuses it */
           : flags & PR_THP_DISABLE_EXCEPT_ADVISED ? THP_MADVISE
                                                   : THP_NEVER;
}

/*
 * madvise on a kernel without the per-process mode (EINVAL, before 6.18):
 * the global mode decides, under the whole THP disable a parent may have
 * left tunerun with.
 */
static void thp_madvise_older(struct step_result *r)
{
    const char *older = "this kernel has no per-process madvise mode (Linux 6.18+)";
    char mode[32];
    const char *global = global_thp_mode(mode, sizeof(mode));
    bool never = global && strcmp(global, "never") == 0;
    bool madvise = global && strcmp(global, "madvise") == 0;
    bool inherited = apply_thp_inherited() == THP_NEVER;
    if (never)
        set(r, STEP_SKIPPED, EINVAL, "%s; the global mode 'never' holds, which is stricter", older);
    else if (madvise && !inherited)
        set(r, STEP_SKIPPED, EINVAL, "%s; the global mode is already madvise", older);
    else if (madvise && prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) == 0)
        /* the parent's disable would refuse the huge pages the service asks for */
        set(r, STEP_OK, 0,
            "madvise: the global mode, once the THP disable tunerun inherited from its parent "
            "was cleared (this kernel has no per-process madvise mode, Linux 6.18+)");
    else if (madvise)
        set(r, STEP_FAILED, errno,
            "prctl(PR_SET_THP_DISABLE, 0), to clear the THP disable inherited from the parent "
            "so that the global madvise holds: %s",
            strerror(errno));
    else if (inherited)
        set(r, STEP_SKIPPED, EINVAL,
            "%s; huge pages stay off, as the parent left tunerun with PR_SET_THP_DISABLE, which "
            "is stricter than %s%s%s",
            older, global ? "the global mode '" : "any global mode", global ? global : "",
            global ? "'" : "");
    else if (global == NULL)
        set(r, STEP_FAILED, EINVAL,
            "%s and %s is unreadable, so the THP mode that holds is unknown", older,
            THP_ENABLED_PATH);
    else
        set(r, STEP_FAILED, EINVAL,
            "%s and the global mode '%s' holds (fix: echo madvise > %s; persistent: "
            "transparent_hugepage=madvise on the kernel command line)",
            older, global, THP_ENABLED_PATH);
}

static void apply_thp(const struct plan_step *s, struct step_result *r)
{
    if (s->u.thp == THP_NEVER) {
        if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0)
            set(r, STEP_OK, 0, "never (PR_SET_THP_DISABLE)");
        else
            set(r, STEP_FAILED, errno, "prctl(PR_SET_THP_DISABLE): %s", strerror(errno));
        return;
    }
    /* madvise: per process since Linux 6.18, else whatever the global mode says. */
    if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0) {
        int got = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
        if (got == (1 | PR_THP_DISABLE_EXCEPT_ADVISED))
            set(r, STEP_OK, 0, "madvise (PR_THP_DISABLE_EXCEPT_ADVISED)");
        else
            set(r, STEP_FAILED, 0, "PR_GET_THP_DISABLE reads %d after setting madvise", got);
    } else if (errno == EINVAL) {
        thp_madvise_older(r);
    } else {
        set(r, STEP_FAILED, errno, "prctl(PR_SET_THP_DISABLE, madvise): %s", strerror(errno));
    }
}

static void apply_env(const struct plan_step *s, struct step_result *r)
{
    const char *old = getenv(s->u.env.name);
    /*
     * Every copy goes first: setenv() replaces the first of an environment
     * that names a variable twice, and a shell (and so a service's start
     * script) takes the last.
     */
    if (unsetenv(s->u.env.name) < 0 || setenv(s->u.env.name, s->u.env.value, 1) < 0) {
        set(r, STEP_FAILED, errno, "setenv: %s", strerror(errno));
        return;
    }
    if (old)
        set(r, STEP_OK, 0, "%s=%s (replaces an inherited value)", s->u.env.name, s->u.env.value);
    else
        set(r, STEP_OK, 0, "%s=%s", s->u.env.name, s->u.env.value);
}

static void apply_cgroup(const struct plan_step *s, struct step_result *r)
{
    char where[4096], why[1024];
    int error;
    if (cgroup_enter(s->u.cgroup.dir, s->u.cgroup.v2, s->u.cgroup.name, s->u.cgroup.swappiness,
                     s->u.cgroup.set_swap_max, s->u.cgroup.swap_max, where, sizeof(where), why,
                     sizeof(why), &error)) {
        char value[64];
        plan_step_value(s, value, sizeof(value));
        set(r, STEP_OK, 0, "%s in %s", value, where);
    } else {
        set(r, STEP_FAILED, error, "%s", why);
    }
}

void apply_plan(const struct plan *pl, struct step_result *results)
{
    for (size_t i = 0; i < pl->nsteps; i++) {
        const struct plan_step *s = &pl->steps[i];
        struct step_result *r = &results[i];
        memset(r, 0, sizeof(*r));
        switch (s->type) {
        case STEP_RLIMIT:
            apply_rlimit(s, r);
            break;
        case STEP_OOM_SCORE_ADJ:
            apply_oom(s, r);
            break;
        case STEP_MEMPOLICY:
            apply_mempolicy(s, r);
            break;
        case STEP_AFFINITY:
            apply_affinity(s, r);
            break;
        case STEP_THP:
            apply_thp(s, r);
            break;
        case STEP_SETENV:
            apply_env(s, r);
            break;
        case STEP_CGROUP:
            set(r, STEP_SKIPPED, 0, "last, before exec"); /* apply_cgroup_step() */
            break;
        }
    }
}

/*
 * The limits as the service gets them: each as the profile asks, as far as
 * the hard limit apply_rlimit() could reach. Only lowers, which needs no
 * privilege, so it works after the drop too; a lowered hard limit cannot
 * be raised back without CAP_SYS_RESOURCE.
 */
int apply_rlimits_final(const struct plan *pl, struct rlimit *saved)
{
    /* all of them first: undo restores each, however far this got (one that cannot be
     * read, which only a bad resource number could cause, is "unlimited" there) */
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_RLIMIT &&
            getrlimit(pl->steps[i].u.rlimit.resource, &saved[i]) < 0)
            saved[i] = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
    for (size_t i = 0; i < pl->nsteps; i++) {
        const struct plan_step *s = &pl->steps[i];
        const struct rlimit now = saved[i];
        if (s->type != STEP_RLIMIT)
            continue;
        struct rlimit want = {RLIM_MIN(s->u.rlimit.soft, now.rlim_max),
                              RLIM_MIN(s->u.rlimit.hard, now.rlim_max)};
        if (setrlimit(s->u.rlimit.resource, &want) < 0)
            return errno;
    }
    return 0;
}

/*
 * After a failed exec: the limits as they were before the exec's (root may
 * raise a hard limit again only with CAP_SYS_RESOURCE; without it, each
 * soft limit as high as its hard one goes), for what tunerun still does;
 * and past a file size limit writes fail with EFBIG instead of killing it
 * (there is no exec left to inherit SIG_IGN).
 */
void apply_rlimits_undo(const struct plan *pl, const struct rlimit *saved)
{
    signal(SIGXFSZ, SIG_IGN);
    for (size_t i = 0; i < pl->nsteps; i++) {
        if (pl->steps[i].type != STEP_RLIMIT)
            continue;
        int res = pl->steps[i].u.rlimit.resource;
        struct rlimit now;
        if (setrlimit(res, &saved[i]) == 0 || getrlimit(res, &now) < 0)
            continue;
        now.rlim_cur = now.rlim_max;
        (void)setrlimit(res, &now);
    }
}

void apply_cgroup_step(const struct plan *pl, struct step_result *results)
{
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_CGROUP) {
            memset(&results[i], 0, sizeof(results[i]));
            apply_cgroup(&pl->steps[i], &results[i]);
        }
}
