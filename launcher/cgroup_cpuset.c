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
 * must shrink alone when it yields CPUs to a service placed later. Empty
 * ones a minute old are removed by the next launch that makes one.
 *
 * Only cgroup v1's cpuset hierarchy, for now (plan_cgroup.c). On cgroup2 a
 * process is in one cgroup for every controller: the child cannot sit
 * under the swap policy's shared child (which, holding this process for a
 * moment with cpuset enabled below it, becomes a thread root that takes no
 * process into its children), so it would have to carry the swap limit
 * itself, with this process moved in before its parent enables +cpuset
 * and +memory. That was tried, and a launch refused at its exec left its
 * child behind in the VM suite: it waits until that is understood.
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
static bool created;              /* this launch made `entered` (a leave removes only that) */

const char *cgroup_cpuset_entered(void)
{
    return entered;
}

/*
 * The child made (or, left by a process that had this pid before, found
 * and checked to be this user's), its sets written, mems first (a v1
 * cpuset with no mems takes no task), then the move.
 */
static int enter_once(const char *child, const char *cpus, const char *mems, const char **step)
{
    struct stat st;
    *step = "mkdir";
    created = mkdir(child, 0755) == 0;
    if (!created && errno != EEXIST)
        return errno;
    int cfd = cgroup_open_dir(child), error;
    if (cfd < 0)
        return errno == ELOOP ? ENOTDIR : errno;
    if (fstat(cfd, &st) < 0) {
        error = errno;
    } else if (st.st_uid != geteuid()) { /* someone else's: they could widen it */
        *step = "owner";
        error = EPERM;
    } else if ((error = cgroup_write_at(cfd, *step = "cpuset.mems", mems)) == 0 &&
               (error = cgroup_write_at(cfd, *step = "cpuset.cpus", cpus)) == 0) {
        *step = "tasks";
        error = cgroup_move_self_at(cfd, false);
    }
    close(cfd);
    return error;
}

bool cgroup_cpuset_enter(const char *dir, const char *name, const char *cpus, const char *mems,
                         struct err *e)
{
    const char *step = "";
    char *child = xasprintf("%s/tunerun.%s.%ld", dir, name, (long)getpid());
    int error = ENAMETOOLONG;
    if (strlen(child) < PATH_MAX)
        error = enter_once(child, cpus, mems, &step);
    if (error != 0) {
        err_errno(e, error, "%s: %s: %s%s", child, step, strerror(error),
                  error == EINVAL && step[0] == 'c' ? " (outside what its parent's cpuset allows?)"
                                                    : "");
        if (created)
            rmdir(child);
        free(child);
        return false;
    }
    entered = child;
    left_from = xstrdup(dir);
    cgroup_sweep(dir); /* each launch makes one: the ended services' go */
    return true;
}

void cgroup_cpuset_leave(void)
{
    if (entered == NULL)
        return;
    int pfd = cgroup_open_dir(left_from);
    if (pfd >= 0) {
        cgroup_move_self_at(pfd, false);
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
    if (fstat(dfd, &st) < 0)
        error = errno;
    else if (st.st_uid != geteuid())
        error = EPERM;
    else {
        if (was) {
            char *path = xasprintf("%s/cpuset.cpus", dir), line[4096];
            *was = read_line_file(path, line, sizeof(line)) ? xstrdup(line) : NULL;
            free(path);
        }
        error = cgroup_write_at(dfd, "cpuset.cpus", cpus);
    }
    close(dfd);
    return error;
}
