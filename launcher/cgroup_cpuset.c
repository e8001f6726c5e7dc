/*
 * cgroup_cpuset.c - the cpuset cgroup that holds a service to its
 * placement: made for this launch alone, its CPUs and memory nodes set,
 * this process moved in; moved back out when the launch is refused after
 * all; and a running pool's made smaller when it yields CPUs.
 *
 * Affinity and a memory policy are the process's own to change, and
 * services do (nginx's worker_cpu_affinity auto, a JVM, a database that
 * binds its own threads). A cpuset is the kernel's bound on both: a
 * sched_setaffinity() or set_mempolicy() beyond it is clamped to it. Each
 * launch gets its own child, tunerun.PROFILE.PID, because a shared pool's
 * must shrink alone when it yields CPUs to a service placed later. On
 * cgroup2 a process is in one cgroup for every controller, so the swap
 * limit of a service that has one is set in this child too (the plan folds
 * the swap step into this one): a child of the swap child would not do,
 * as the swap child, holding this process for a moment, would become a
 * thread root that takes no process into its children. Empty ones a
 * minute old are removed by the next launch that makes one.
 */
#include "cgroup.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *entered, *left_from; /* the child, and where this process was before it */
static bool left_v2, created, moved;
static char enabled[32]; /* the controllers this launch enabled in the parent: "+cpuset " */

const char *cgroup_cpuset_entered(void)
{
    return entered;
}

/*
 * cgroup2: a controller reaches a child only through its parent's
 * subtree_control, and a parent with processes of its own may enable no
 * domain controller (memory), nor a threaded one (cpuset) without becoming
 * a thread root whose children take no process. So this process moves
 * into the child first, and the parent's controllers are enabled after,
 * as cgroup_child.c does. `enabled` remembers what was this launch's
 * doing, below the root, so that a refusal takes it back.
 */
static int enable_controllers(int pfd, const char *dir, bool memory)
{
    char ctl[1024], want[32] = "", *path = xasprintf("%s/cgroup.subtree_control", dir);
    bool known = read_line_file(path, ctl, sizeof(ctl));
    free(path);
    if (!known || !cgroup_has_word(ctl, "cpuset", ' '))
        strcat(want, "+cpuset ");
    if (memory && (!known || !cgroup_has_word(ctl, "memory", ' ')))
        strcat(want, "+memory");
    if (want[0] == '\0')
        return 0;
    int error = cgroup_write_at(pfd, "cgroup.subtree_control", want);
    if (error == 0) {
        char *type = xasprintf("%s/cgroup.type", dir);
        if (known && access(type, F_OK) == 0)
            snprintf(enabled, sizeof(enabled), "%s", want);
        free(type);
    }
    return error;
}

/* What enable_controllers() enabled, taken back: "+cpuset +memory" as "-cpuset -memory". */
static void disable_controllers(int pfd)
{
    for (char *c = enabled; *c; c++)
        if (*c == '+')
            *c = '-';
    if (enabled[0])
        cgroup_write_at(pfd, "cgroup.subtree_control", enabled);
    enabled[0] = '\0';
}

/*
 * The child made (or, left by a process that had this pid before, found
 * and checked to be this user's). v1: its sets written, mems first (a v1
 * cpuset with no mems takes no task), then the move. v2: the move, the
 * parent's controllers, then the sets (and the swap limit, see
 * cgroup_cpuset_enter()).
 */
static int enter_once(const char *dir, const char *child, bool v2, const char *cpus,
                      const char *mems, const char *swap_max, const char **step)
{
    struct stat st;
    int pfd = cgroup_open_dir(dir), cfd = -1, error = 0;
    if (pfd < 0) {
        *step = "open";
        return errno;
    }
    *step = "mkdir";
    created = mkdir(child, 0755) == 0;
    if (!created && errno != EEXIST) {
        error = errno;
        goto out;
    }
    if ((cfd = cgroup_open_dir(child)) < 0 || fstat(cfd, &st) < 0) {
        error = errno == ELOOP ? ENOTDIR : errno;
        goto out;
    }
    if (st.st_uid != geteuid()) { /* someone else's: they could widen it */
        *step = "owner";
        error = EPERM;
        goto out;
    }
    if (v2) {
        *step = "cgroup.procs";
        if ((error = cgroup_move_self_at(cfd, true)) != 0)
            goto out;
        moved = true;
        *step = "cgroup.subtree_control";
        if ((error = enable_controllers(pfd, dir, swap_max != NULL)) != 0)
            goto out;
    }
    if ((error = cgroup_write_at(cfd, *step = "cpuset.mems", mems)) != 0 ||
        (error = cgroup_write_at(cfd, *step = "cpuset.cpus", cpus)) != 0)
        goto out;
    if (swap_max && (error = cgroup_write_at(cfd, *step = "memory.swap.max", swap_max)) != 0)
        goto out;
    if (!v2) {
        *step = "tasks";
        error = cgroup_move_self_at(cfd, false);
        moved = error == 0;
    }
out:
    if (error && moved) { /* back where it was, and what this launch enabled there off again */
        cgroup_move_self_at(pfd, v2);
        moved = false;
        disable_controllers(pfd);
    }
    if (cfd >= 0)
        close(cfd);
    close(pfd);
    return error;
}

bool cgroup_cpuset_enter(const char *dir, bool v2, const char *name, const char *cpus,
                         const char *mems, const char *swap_max, struct err *e)
{
    const char *step = "";
    char *child = xasprintf("%s/tunerun.%s.%ld", dir, name, (long)getpid());
    int error = ENAMETOOLONG;
    if (strlen(child) < PATH_MAX)
        error = enter_once(dir, child, v2, cpus, mems, swap_max, &step);
    if (error != 0) {
        err_errno(e, error, "%s: %s: %s%s", child, step, strerror(error),
                  error == EINVAL && step[0] == 'c' ? " (outside what its parent's cpuset allows?)"
                  : error == EBUSY ? " (other processes share this cgroup: cgroup v2 lets a "
                                     "cgroup with processes enable no controller for its children)"
                                   : "");
        if (created)
            rmdir(child);
        free(child);
        return false;
    }
    entered = child;
    left_from = xstrdup(dir);
    left_v2 = v2;
    cgroup_sweep(dir); /* each launch makes one: the ended services' go */
    return true;
}

void cgroup_cpuset_leave(void)
{
    if (entered == NULL)
        return;
    int pfd = cgroup_open_dir(left_from);
    if (pfd >= 0) {
        cgroup_move_self_at(pfd, left_v2);
        disable_controllers(pfd);
        close(pfd);
    }
    if (created)
        rmdir(entered);
    free(entered);
    free(left_from);
    entered = left_from = NULL;
}

/*
 * The cpuset.cpus of a pool's own cpuset cgroup, read (*was, when not
 * NULL) and then set to cpus. 0, or errno; EPERM for a cgroup that is not
 * this user's (whoever made it may widen it again).
 */
int cgroup_cpuset_set_cpus(const char *dir, const char *cpus, char **was)
{
    struct stat st;
    int dfd = cgroup_open_dir(dir), error;
    if (dfd < 0)
        return errno;
    if (fstat(dfd, &st) < 0 || st.st_uid != geteuid()) {
        error = st.st_uid != geteuid() ? EPERM : errno;
        close(dfd);
        return error;
    }
    if (was) {
        char *path = xasprintf("%s/cpuset.cpus", dir), line[4096];
        *was = read_line_file(path, line, sizeof(line)) ? xstrdup(line) : NULL;
        free(path);
    }
    error = cgroup_write_at(dfd, "cpuset.cpus", cpus);
    close(dfd);
    return error;
}
