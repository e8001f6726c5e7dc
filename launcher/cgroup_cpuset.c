/*
 * cgroup_cpuset.c - the cpuset cgroup that holds a service to its
 * placement: made for this launch alone, its CPUs and memory nodes set,
 * this process moved in; moved back out when the launch is refused after
 * all; and a running pool's made smaller when it yields CPUs, and larger
 * again when the service it yielded them to has ended.
 *
 * Affinity and a memory policy are the process's own to change, and
 * services do (nginx's worker_cpu_affinity auto, a JVM, a database that
 * binds its own threads). A cpuset is the kernel's bound on both: a
 * sched_setaffinity() or set_mempolicy() beyond it is clamped to it. Each
 * launch gets its own child, tunerun.PROFILE.PID, because a shared pool's
 * must shrink alone when it yields CPUs to a service placed later. An
 * empty one whose pid is gone is removed by the next launch that makes one
 * (cgroup_sweep()).
 *
 * On cgroup v1 the child is made in the cpuset hierarchy, its sets written
 * before the move (a v1 cpuset with no mems takes no task). On cgroup2 a
 * process is in one cgroup for every controller, and the rules differ:
 *
 *  - The child is made in the process's cgroup, and the cpuset controller
 *    reaches it only through that cgroup's cgroup.subtree_control, which a
 *    cgroup with processes may not enable below the root (the "no internal
 *    processes" rule). So this process moves in first, then the parent
 *    enables +cpuset, then the child's sets are written.
 *  - The swap policy's shared child cannot hold this one below it, for the
 *    same rule: a profile's swap limit goes into this child instead
 *    (plan_cgroup.c folds the swap step into this one), with +memory.
 *  - A failed launch takes back what it enabled before it moves back, as a
 *    parent with a controller enabled for its children takes no process.
 *    Only what was surely off, and never at the root, whose children are
 *    every other service's. Another launch in the same cgroup at the same
 *    moment (two in one delegated unit) could see its child lose the
 *    controller then; a unit runs one tunerun, and a host's root is exempt.
 */
#include "cgroup.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *entered, *left_from; /* the child, and where this process was before it */
static bool created;              /* this launch made `entered` (a leave removes only that) */
static bool left_v2;              /* on cgroup2 */
/* the controllers this launch enabled in left_from's cgroup.subtree_control (v2) */
static bool enabled_cpuset, enabled_memory;

const char *cgroup_cpuset_entered(void)
{
    return entered;
}

/*
 * v2: a controller enabled in the cgroup open at pfd for its children,
 * unless it is already. *ours says whether this launch may take it back:
 * it was surely off, and the cgroup is not the root (which has no
 * cgroup.type).
 */
static int enable(int pfd, const char *controller, bool *ours)
{
    char ctl[1024], word[32];
    int fd = openat(pfd, "cgroup.subtree_control", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : read(fd, ctl, sizeof(ctl) - 1);
    if (fd >= 0)
        close(fd);
    if (got >= 0) {
        ctl[got] = '\0';
        ctl[strcspn(ctl, "\n")] = '\0';
        if (cgroup_has_word(ctl, controller, ' '))
            return 0;
    }
    snprintf(word, sizeof(word), "+%s", controller);
    int error = cgroup_write_at(pfd, "cgroup.subtree_control", word);
    *ours = error == 0 && got >= 0 && faccessat(pfd, "cgroup.type", F_OK, 0) == 0;
    return error;
}

/* v2: what enable() turned on, off again, memory first (the reverse of the order it went on). */
static void disable(int pfd)
{
    if (enabled_memory && cgroup_write_at(pfd, "cgroup.subtree_control", "-memory") == 0)
        enabled_memory = false;
    if (enabled_cpuset && cgroup_write_at(pfd, "cgroup.subtree_control", "-cpuset") == 0)
        enabled_cpuset = false;
}

/*
 * The sets (and on v2 the swap limit) written in the child open at cfd
 * and this process moved in, in the order each version needs (above).
 */
static int fill_and_enter(int pfd, int cfd, bool v2, const char *cpus, const char *mems,
                          const char *swap_max, const char **step, const char **in)
{
    int error;
    if (!v2) {
        if ((error = cgroup_write_at(cfd, *step = "cpuset.mems", mems)) == 0 &&
            (error = cgroup_write_at(cfd, *step = "cpuset.cpus", cpus)) == 0) {
            *step = "tasks";
            error = cgroup_move_self_at(cfd, false);
        }
        return error;
    }
    *step = "cgroup.procs";
    if ((error = cgroup_move_self_at(cfd, true)) != 0)
        return error;
    *step = "cgroup.subtree_control";
    *in = left_from;
    if ((error = enable(pfd, "cpuset", &enabled_cpuset)) != 0 ||
        (swap_max && (error = enable(pfd, "memory", &enabled_memory)) != 0))
        return error;
    *in = entered;
    if ((error = cgroup_write_at(cfd, *step = "cpuset.cpus", cpus)) == 0 &&
        (error = cgroup_write_at(cfd, *step = "cpuset.mems", mems)) == 0 && swap_max)
        error = cgroup_write_at(cfd, *step = "memory.swap.max", swap_max);
    return error;
}

/*
 * The child made (or, left by a process that had this pid before, found
 * and checked to be this user's: whoever owns it could widen it), filled
 * and entered. One found with processes in it is another service's (that
 * launch daemonized, and its pid came round again): never entered, as its
 * sets would change under that service.
 */
/* Whether the cgroup open at cfd has a process in it. */
static bool populated(int cfd)
{
    char c;
    int fd = openat(cfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    bool any = fd < 0 || read(fd, &c, 1) != 0; /* unreadable: taken as in use */
    if (fd >= 0)
        close(fd);
    return any;
}

static int enter_once(bool v2, const char *cpus, const char *mems, const char *swap_max,
                      const char **step, const char **in)
{
    struct stat st;
    *step = "mkdir";
    *in = entered;
    created = mkdir(entered, 0755) == 0;
    if (!created && errno != EEXIST)
        return errno;
    int pfd = cgroup_open_dir(left_from), cfd = cgroup_open_dir(entered), error;
    if (pfd < 0 || cfd < 0)
        error = errno == ELOOP ? ENOTDIR : errno;
    else if (fstat(cfd, &st) < 0)
        error = errno;
    else if (st.st_uid != geteuid()) {
        *step = "owner";
        error = EPERM;
    } else if (!created && populated(cfd)) {
        *step = "in use by another service";
        error = EBUSY;
    } else if (!created && v2 && !swap_max && faccessat(cfd, "memory.swap.max", F_OK, 0) == 0 &&
               (error = cgroup_write_at(cfd, *step = "memory.swap.max", "max")) != 0) {
        /* a reused child keeps no swap limit of the launch before it */
    } else
        error = fill_and_enter(pfd, cfd, v2, cpus, mems, swap_max, step, in);
    if (pfd >= 0)
        close(pfd);
    if (cfd >= 0)
        close(cfd);
    return error;
}

/*
 * Back to the parent, and the child removed if this launch made it: on v2
 * only once what it enabled there is off again. False when this process
 * stays in the child.
 */
static bool go_back(void)
{
    int pfd = cgroup_open_dir(left_from);
    bool back = false;
    if (pfd >= 0) {
        if (left_v2)
            disable(pfd);
        back = !cgroup_lists_self(entered) || cgroup_move_self_at(pfd, left_v2) == 0;
        close(pfd);
    }
    if (back && created)
        rmdir(entered);
    return back;
}

static void forget(void)
{
    free(entered);
    free(left_from);
    entered = left_from = NULL;
    enabled_cpuset = enabled_memory = false;
}

bool cgroup_cpuset_enter(const char *dir, bool v2, const char *name, const char *cpus,
                         const char *mems, const char *swap_max, struct err *e)
{
    const char *step = "name", *in = NULL;
    entered = xasprintf("%s/tunerun.%s.%ld", dir, name, (long)getpid());
    left_from = xstrdup(dir);
    left_v2 = v2;
    int error = ENAMETOOLONG;
    /*
     * A sweep in another pid namespace, to which this launch's pid looks
     * gone, may remove the new child before the move: ENOENT where the
     * name is gone, ENODEV from a file opened in it just before. Then it
     * is made again.
     */
    for (int tries = 0; tries < 3 && strlen(entered) < PATH_MAX; tries++) {
        error = enter_once(v2, cpus, mems, swap_max, &step, &in);
        if ((error != ENOENT && error != ENODEV) || in != entered || cgroup_lists_self(entered))
            break;
    }
    if (error != 0) {
        bool back = go_back();
        err_errno(
            e, error, "%s: %s: %s%s%s", in ? in : entered, step, strerror(error),
            error == EINVAL && step[0] == 'c' && step[1] == 'p'
                ? " (outside what its parent's cpuset allows?)"
            : error == EBUSY && v2 && strcmp(step, "cgroup.subtree_control") == 0
                ? " (other processes share this cgroup: cgroup v2 lets a cgroup with processes "
                  "enable no controller for its children)"
                : "",
            back ? "" : "; still in the child: its parent takes no process back");
        forget();
        return false;
    }
    cgroup_sweep(dir); /* each launch makes one: the ended services' go */
    return true;
}

void cgroup_cpuset_leave(void)
{
    if (entered == NULL)
        return;
    go_back();
    forget();
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

int cgroup_cpuset_add_cpus(const char *dir, const char *cpus)
{
    char *path = xasprintf("%s/cpuset.cpus", dir), line[4096];
    bool read = read_line_file(path, line, sizeof(line));
    int error = read ? EINVAL : errno ? errno : EIO;
    free(path);
    hwloc_bitmap_t now = hwloc_bitmap_alloc(), more = hwloc_bitmap_alloc();
    if (read && bitmap_parse(now, line[0] ? line : "none") && bitmap_parse(more, cpus)) {
        hwloc_bitmap_or(now, now, more);
        char *all = bitmap_list(now);
        error = cgroup_cpuset_set_cpus(dir, all, NULL);
        free(all);
    }
    hwloc_bitmap_free(now);
    hwloc_bitmap_free(more);
    return error;
}
