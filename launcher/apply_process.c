/*
 * apply_process.c - the steps that set this process's own state, which
 * the command inherits across execve(): resource limits (raised here,
 * lowered by the final step), oom_score_adj, the memory policy, the CPU
 * affinity, the THP mode and the environment. That they survive the exec
 * is why tunerun can apply them to itself and then become the service;
 * and as they end with this process, a failed launch has nothing of them
 * to undo.
 */
#include "apply.h"
#include "procs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
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
#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE 6 /* Linux 6.9; Debian 12's headers predate it */
#endif
#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#define PR_GET_THP_DISABLE 42
#endif
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1) /* Linux 6.18 */
#endif

#define THP_ENABLED_PATH "/sys/kernel/mm/transparent_hugepage/enabled"

/* RLIM_INFINITY is the largest rlim_t */
#define RLIM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RLIM_MIN(a, b) ((a) < (b) ? (a) : (b))

/*
 * Only raised here, where raising may need privilege; what the service
 * gets below the current limits is set by the final step at the exec, so
 * that a limit lower than tunerun's own needs (as, fsize, stack) binds the
 * service, not the claim, cgroup and table work between here and there.
 * nproc is set at once: the uid change checks the new user's processes
 * against it, and a user over it cannot exec (EAGAIN), as under systemd
 * and su. The limit as it was comes from the facts; what this leaves is
 * kept in ls->limits for the final step.
 */
static void apply_rlimit(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    int res = s->u.rlimit.resource;
    struct rlimit old = ls->limits[res], want = {s->u.rlimit.soft, s->u.rlimit.hard};
    char ws[24], wh[24], os[24], oh[24];
    rlim_str(ws, sizeof(ws), want.rlim_cur);
    rlim_str(wh, sizeof(wh), want.rlim_max);
    rlim_str(os, sizeof(os), old.rlim_cur);
    rlim_str(oh, sizeof(oh), old.rlim_max);
    bool at_once = res == RLIMIT_NPROC;
    struct rlimit up = at_once ? want
                               : (struct rlimit){RLIM_MAX(old.rlim_cur, want.rlim_cur),
                                                 RLIM_MAX(old.rlim_max, want.rlim_max)};
    if (setrlimit(res, &up) == 0) {
        ls->limits[res] = up;
        step_result_set(r, STEP_OK, 0, "%s:%s (was %s:%s)", ws, wh, os, oh);
        return;
    }
    int error = errno;
    /* The hard limit could not be raised: go as high as the current hard limit allows. */
    char why[160] = "", first[96] = "";
    /* read with the facts when the hard limit is to rise past tunerun's, as it failed to here */
    long nr_open = res == RLIMIT_NOFILE ? s->u.rlimit.nr_open : -1;
    if (nr_open > 0 && want.rlim_max > (rlim_t)nr_open) {
        /* no one may set it, root with every capability included, until the sysctl is raised */
        snprintf(why, sizeof(why), "it exceeds fs.nr_open (%ld)", nr_open);
        snprintf(first, sizeof(first), "sysctl -w fs.nr_open=%s, then ", wh);
    } else if (error == EPERM && !facts_have_cap(ls->facts, CAP_SYS_RESOURCE)) {
        snprintf(why, sizeof(why),
                 "raising a hard limit needs CAP_SYS_RESOURCE, which this process lacks");
    } else {
        snprintf(why, sizeof(why), "%s", strerror(error));
    }
    /* the soft limit as far as the hard one goes: set at the exec like the rest */
    struct rlimit fallback = old;
    fallback.rlim_cur = RLIM_MIN(want.rlim_cur, old.rlim_max);
    char fs[24];
    rlim_str(fs, sizeof(fs), fallback.rlim_cur);
    struct rlimit up_to =
        at_once ? fallback
                : (struct rlimit){RLIM_MAX(old.rlim_cur, fallback.rlim_cur), old.rlim_max};
    char *fix = rlimit_raise_fix(res, want.rlim_cur, want.rlim_max);
    if (setrlimit(res, &up_to) == 0) {
        ls->limits[res] = up_to;
        step_result_set(r, STEP_FAILED, error,
                        "cannot set %s:%s: %s; soft limit set to %s, hard stays %s (fix: %s%s)", ws,
                        wh, why, fs, oh, first, fix);
    } else {
        step_result_set(r, STEP_FAILED, error, "cannot set %s:%s: %s; limit left at %s:%s", ws, wh,
                        why, os, oh);
    }
    free(fix);
}

/*
 * The file is opened once, read (what it was, for the message) and
 * written: the kernel's oom_score_adj_write() takes the value whatever
 * the offset the read left.
 */
static void apply_oom(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    char buf[16], was[16] = "?";
    ssize_t got = fd < 0 ? -1 : pread(fd, was, sizeof(was) - 1, 0);
    was[got > 0 ? (size_t)got : 1] = '\0';
    was[strcspn(was, "\n")] = '\0';
    int len = snprintf(buf, sizeof(buf), "%d", s->u.oom_score_adj);
    ssize_t w = fd < 0 ? -1 : write(fd, buf, (size_t)len);
    int error = w == len ? 0 : w < 0 ? errno : EIO; /* a short write sets no errno */
    if (fd >= 0)
        close(fd);
    if (error == 0) {
        step_result_set(r, STEP_OK, 0, "%d (was %s)", s->u.oom_score_adj, was);
        return;
    }
    step_result_set(r, STEP_FAILED, error,
                    "cannot set oom_score_adj %d (it stays %s): %s%s (fix: OOMScoreAdjust=%d in "
                    "the unit, or docker run --oom-score-adj %d)",
                    s->u.oom_score_adj, was, strerror(error),
                    (error == EACCES || error == EPERM) &&
                            !facts_have_cap(ls->facts, CAP_SYS_RESOURCE)
                        ? "; lowering it needs CAP_SYS_RESOURCE"
                        : "",
                    s->u.oom_score_adj, s->u.oom_score_adj);
}

/* A node mask in the kernel's layout, for set_mempolicy(). */
static unsigned long *nodemask_of(hwloc_const_bitmap_t nodes, unsigned long *maxnode)
{
    int last = hwloc_bitmap_last(nodes);
    size_t words = last < 0 ? 1 : (size_t)last / (8 * sizeof(unsigned long)) + 1;
    unsigned long *mask = xcalloc(words, sizeof(unsigned long));
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

/* Before Linux 5.15 there is only one preferred node: the first of them. */
static void prefer_one(hwloc_const_bitmap_t nodes, const char *list, struct step_result *r)
{
    unsigned long maxnode;
    int first = hwloc_bitmap_first(nodes);
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_only(one, (unsigned)first);
    unsigned long *mask = nodemask_of(one, &maxnode);
    hwloc_bitmap_free(one);
    if (set_mempolicy(MPOL_PREFERRED, mask, maxnode) == 0)
        step_result_set(r, STEP_FAILED, EINVAL,
                        "this kernel lacks MPOL_PREFERRED_MANY (Linux 5.15+): preferring node %d "
                        "only instead of %s",
                        first, list);
    else
        step_result_set(r, STEP_FAILED, errno, "set_mempolicy(preferred %d): %s%s", first,
                        strerror(errno), filtered_fix(errno, true));
    free(mask);
}

static void apply_mempolicy(const struct plan_step *s, struct step_result *r)
{
    static const int kernel_mode[] = {
        [PLAN_MPOL_LOCAL] = MPOL_LOCAL,
        [PLAN_MPOL_BIND] = MPOL_BIND,
        [PLAN_MPOL_PREFERRED] = MPOL_PREFERRED,
        [PLAN_MPOL_PREFERRED_MANY] = MPOL_PREFERRED_MANY,
        [PLAN_MPOL_INTERLEAVE] = MPOL_INTERLEAVE,
        [PLAN_MPOL_WEIGHTED_INTERLEAVE] = MPOL_WEIGHTED_INTERLEAVE,
    };
    enum plan_mpol mode = s->u.mempolicy.mode;
    if (mode == PLAN_MPOL_LOCAL) {
        if (set_mempolicy(MPOL_LOCAL, NULL, 0) == 0)
            step_result_set(r, STEP_OK, 0, "local");
        else
            step_result_set(r, STEP_FAILED, errno, "set_mempolicy(local): %s%s", strerror(errno),
                            filtered_fix(errno, true));
        return;
    }
    unsigned long maxnode;
    unsigned long *mask = nodemask_of(s->u.mempolicy.nodes, &maxnode);
    char *list = bitmap_list(s->u.mempolicy.nodes);
    int error = set_mempolicy(kernel_mode[mode], mask, maxnode) == 0 ? 0 : errno;
    if (error == 0) {
        step_result_set(r, STEP_OK, 0, "%s %s", plan_mpol_name(mode), list);
    } else if (mode == PLAN_MPOL_PREFERRED_MANY && error == EINVAL) {
        prefer_one(s->u.mempolicy.nodes, list, r);
    } else if (mode == PLAN_MPOL_WEIGHTED_INTERLEAVE && error == EINVAL &&
               set_mempolicy(MPOL_INTERLEAVE, mask, maxnode) == 0) {
        step_result_set(r, STEP_FAILED, EINVAL,
                        "this kernel lacks MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): interleaving "
                        "%s evenly instead",
                        list);
    } else {
        step_result_set(r, STEP_FAILED, error, "set_mempolicy(%s %s): %s%s", plan_mpol_name(mode),
                        list, strerror(error),
                        error == EINVAL ? " (nodes outside this process's cpuset mems?)"
                                        : filtered_fix(error, true));
    }
    free(mask);
    free(list);
}

static void apply_affinity(const struct plan_step *s, struct step_result *r)
{
    size_t size;
    cpu_set_t *set = cpuset_alloc(s->u.cpus, &size);
    if (set == NULL) {
        step_result_set(r, STEP_FAILED, ENOMEM, "out of memory");
        return;
    }
    char *list = bitmap_list(s->u.cpus);
    /* pid 0: the calling thread, the one that will exec. */
    if (sched_setaffinity(0, size, set) == 0)
        step_result_set(r, STEP_OK, 0, "cpus %s", list);
    else
        step_result_set(r, STEP_FAILED, errno, "sched_setaffinity(%s): %s%s", list, strerror(errno),
                        filtered_fix(errno, false));
    CPU_FREE(set);
    free(list);
}

/*
 * madvise on a kernel without the per-process mode (EINVAL, before 6.18):
 * the global mode decides, under the whole THP disable a parent may have
 * left tunerun with (the facts' inherited mode). Only here is the global
 * mode read: on a kernel with the per-process mode it does not matter.
 */
static void thp_madvise_older(const struct launch_state *ls, struct step_result *r)
{
    const char *older = "this kernel has no per-process madvise mode (Linux 6.18+)";
    char text[128], mode[32];
    const char *global = read_line_file(THP_ENABLED_PATH, text, sizeof(text))
                             ? sysfs_choice(text, mode, sizeof(mode))
                             : NULL;
    bool never = global && strcmp(global, "never") == 0;
    bool madvise = global && strcmp(global, "madvise") == 0;
    bool inherited = ls->facts->thp_inherited == THP_NEVER;
    if (never)
        step_result_set(r, STEP_SKIPPED, EINVAL,
                        "%s; the global mode 'never' holds, which is stricter", older);
    else if (madvise && !inherited)
        step_result_set(r, STEP_SKIPPED, EINVAL, "%s; the global mode is already madvise", older);
    else if (madvise && prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) == 0)
        /* the parent's disable would refuse the huge pages the service asks for */
        step_result_set(r, STEP_OK, 0,
                        "madvise: the global mode, once the THP disable tunerun inherited from "
                        "its parent was cleared (this kernel has no per-process madvise mode, "
                        "Linux 6.18+)");
    else if (madvise)
        step_result_set(r, STEP_FAILED, errno,
                        "prctl(PR_SET_THP_DISABLE, 0), to clear the THP disable inherited from "
                        "the parent so that the global madvise holds: %s",
                        strerror(errno));
    else if (inherited)
        step_result_set(r, STEP_SKIPPED, EINVAL,
                        "%s; huge pages stay off, as the parent left tunerun with "
                        "PR_SET_THP_DISABLE, which is stricter than %s%s%s",
                        older, global ? "the global mode '" : "any global mode",
                        global ? global : "", global ? "'" : "");
    else if (global == NULL)
        step_result_set(r, STEP_FAILED, EINVAL,
                        "%s and %s is unreadable, so the THP mode that holds is unknown", older,
                        THP_ENABLED_PATH);
    else
        step_result_set(r, STEP_FAILED, EINVAL,
                        "%s and the global mode '%s' holds (fix: echo madvise > %s; persistent: "
                        "transparent_hugepage=madvise on the kernel command line)",
                        older, global, THP_ENABLED_PATH);
}

/*
 * never: PR_SET_THP_DISABLE (Linux 3.15). madvise: the same with
 * PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18); an older kernel refuses any
 * flag with EINVAL, so a success is the mode set, and needs no read back.
 */
static void apply_thp(const struct launch_state *ls, const struct plan_step *s,
                      struct step_result *r)
{
    if (s->u.thp == THP_NEVER) {
        if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0)
            step_result_set(r, STEP_OK, 0, "never (PR_SET_THP_DISABLE)");
        else
            step_result_set(r, STEP_FAILED, errno, "prctl(PR_SET_THP_DISABLE): %s",
                            strerror(errno));
        return;
    }
    if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0)
        step_result_set(r, STEP_OK, 0, "madvise (PR_THP_DISABLE_EXCEPT_ADVISED)");
    else if (errno == EINVAL)
        thp_madvise_older(ls, r);
    else
        step_result_set(r, STEP_FAILED, errno, "prctl(PR_SET_THP_DISABLE, madvise): %s",
                        strerror(errno));
}

static void apply_env(const struct plan_step *s, struct step_result *r)
{
    const char *old = getenv(s->u.env.name);
    /*
     * Every copy goes first: setenv() replaces the first of an environment
     * that names a variable twice, and a shell (and so a service's start
     * script) takes the last.
     */
    bool replaces = old != NULL;
    if (unsetenv(s->u.env.name) < 0 || setenv(s->u.env.name, s->u.env.value, 1) < 0) {
        step_result_set(r, STEP_FAILED, errno, "setenv: %s", strerror(errno));
        return;
    }
    if (replaces)
        step_result_set(r, STEP_OK, 0, "%s=%s (replaces an inherited value)", s->u.env.name,
                        s->u.env.value);
    else
        step_result_set(r, STEP_OK, 0, "%s=%s", s->u.env.name, s->u.env.value);
}

void apply_process_step(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    switch (s->type) {
    case STEP_RLIMIT:
        apply_rlimit(ls, s, r);
        break;
    case STEP_OOM_SCORE_ADJ:
        apply_oom(ls, s, r);
        break;
    case STEP_MEMPOLICY:
        apply_mempolicy(s, r);
        break;
    case STEP_AFFINITY:
        apply_affinity(s, r);
        break;
    case STEP_THP:
        apply_thp(ls, s, r);
        break;
    case STEP_SETENV:
        apply_env(s, r);
        break;
    default:
        step_result_set(r, STEP_FAILED, EINVAL, "not a step of this process's state");
        break;
    }
}
