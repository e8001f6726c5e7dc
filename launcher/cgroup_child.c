/*
 * cgroup_child.c - the child cgroup a service's swap policy lives in:
 * made (or joined), its value set, this process moved in; and moved back
 * out when the launch is refused after all.
 *
 * One child per profile and value, shared by every launch that asks for
 * the same (tunerun.mysql.swappiness-1): a launch costs one move, and the
 * children stay as many as the profiles in use however often services
 * restart. Empty ones older than a minute are removed.
 */
#include "cgroup.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_SECONDS 60 /* a tunerun.* child this old and empty is left over */

/* For cgroup_leave(): on the heap, as a page of .bss would be one more page fault a launch. */
static char *entered, *left_from;
static bool left_v2;

/* value into `file` of the cgroup directory open at dfd */
int cgroup_write_at(int dfd, const char *file, const char *value)
{
    int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno;
    ssize_t w = write(fd, value, strlen(value));
    int error = w < 0 ? errno : 0;
    if (close(fd) < 0 && error == 0)
        error = errno;
    return error;
}

int cgroup_open_dir(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

static int write_file(const char *dir, const char *file, const char *value)
{
    int dfd = cgroup_open_dir(dir);
    if (dfd < 0)
        return errno;
    int error = cgroup_write_at(dfd, file, value);
    close(dfd);
    return error;
}

/*
 * Move this process into dir. Writing a pid to cgroup.procs takes the
 * kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
 * grace period unless a move happened moments before: about 7.5 ms per
 * launch here when launches are seconds apart. On v1, "0" written to
 * `tasks` moves the calling thread alone and skips that lock (the kernel
 * needs no threadgroup stability for current): 65 us. tunerun has one
 * thread, and the exec that follows keeps this thread's cgroup. v2 has no
 * `tasks` for domain cgroups, so there it pays the grace period.
 */
int cgroup_move_self_at(int dfd, bool v2)
{
    cgroup_forget_self(); /* read again if asked: this process is about to move */
    if (!v2) {
        int error = cgroup_write_at(dfd, "tasks", "0");
        /* a delegation may grant cgroup.procs alone (cgcreate -a without -t) */
        if (error != EACCES && error != EPERM && error != ENOENT)
            return error;
    }
    char pid[32];
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    return cgroup_write_at(dfd, "cgroup.procs", pid);
}

static int move_self(const char *dir, bool v2)
{
    int dfd = cgroup_open_dir(dir);
    if (dfd < 0)
        return errno;
    int error = cgroup_move_self_at(dfd, v2);
    close(dfd);
    return error;
}

/*
 * The pid a child's name ends in: a launch's own cpuset cgroup,
 * tunerun.NAME.PID, named by the launch, whose service kept its pid. 0
 * for a swap policy's child (tunerun.mysql.swappiness-1).
 */
static long named_pid(const char *name)
{
    const char *dot = strrchr(name, '.');
    char *end;
    if (dot == NULL || !isdigit((unsigned char)dot[1]))
        return 0;
    errno = 0;
    long pid = strtol(dot + 1, &end, 10);
    return *end == '\0' && errno == 0 && pid > 0 && pid <= INT_MAX ? pid : 0;
}

/*
 * Empty tunerun.* children of dir that services before this one left.
 * One named by a pid that is gone goes at once: its launch ended, so no
 * launch is about to move into it (rmdir keeps one a forked process still
 * uses). kill(pid, 0) tells that for far less than the lstat() of a
 * cgroupfs entry, let alone the rmdir() a live cgroup refuses, and every
 * launch that makes a child looks at every other. A pid of another pid
 * namespace (a container's launch, in a hierarchy the host shares) may
 * look gone while its launch is between mkdir and the move: that launch
 * then makes its child again (cgroup_cpuset.c). A swap policy's child has
 * no pid and many users: it goes once empty for a minute, as this
 * launch's own is new.
 */
void cgroup_sweep(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        char path[4096];
        long pid = named_pid(e->d_name);
        if (strncmp(e->d_name, "tunerun.", 8) != 0 ||
            (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) ||
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        if (pid > 0 ||
            (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_mtime < now - STALE_SECONDS))
            rmdir(path); /* EBUSY while a process is in it */
    }
    if (d)
        closedir(d);
}

/*
 * One child per profile and value, shared by every launch that asks for
 * the same: tunerun.mysql.swappiness-1. A launch then costs one move (a
 * mkdir and a write only the first time), the number of children stays
 * that of the profiles in use however often services restart, and the
 * kernel keeps no dying memory cgroup per launch. The values are in the
 * name, so two launches sharing a child never disagree about it.
 */
static char *child_name(const char *dir, const char *name, bool v2, int swappiness,
                        bool set_swap_max, uint64_t swap_max)
{
    if (!v2 && swappiness >= 0)
        return xasprintf("%s/tunerun.%s.swappiness-%d", dir, name, swappiness);
    if (v2 && set_swap_max && swap_max == UINT64_MAX)
        return xasprintf("%s/tunerun.%s.swap_max-max", dir, name);
    if (v2 && set_swap_max)
        return xasprintf("%s/tunerun.%s.swap_max-%llu", dir, name, (unsigned long long)swap_max);
    return xasprintf("%s/tunerun.%s", dir, name);
}

static bool created;  /* this launch made `entered` (cgroup_leave removes only that) */
static bool enabled;  /* this launch enabled the memory controller for the parent's children */
static uid_t made_by; /* who made the child, when that is why it was not entered */

/* The child this process is in, once cgroup_enter() moved it there; else NULL. */
const char *cgroup_entered(void)
{
    return entered;
}

/* The step enter_once() names when the child is someone else's. */
static const char not_ours[] = "owner";

static int enter_once(const char *dir, const char *child, bool v2, int swappiness,
                      bool set_swap_max, uint64_t swap_max, const char **step, const char **in)
{
    char value[32];
    struct stat st;
    *step = "mkdir";
    *in = child;
    created = mkdir(child, 0755) == 0;
    if (!created && errno != EEXIST)
        return errno;
    /*
     * The child, found or made, must be this user's: one that whoever may
     * write the parent (a delegated cgroup) made, or put in the place of
     * ours, is theirs to set limits in, and the service would live by them
     * (a memory limit is an OOM kill). Its owner is checked on the very
     * directory the writes then go through; a cgroupfs has no symlinks,
     * but an existing name is checked, not trusted.
     */
    int cfd = cgroup_open_dir(child);
    if (cfd < 0)
        return errno == ELOOP ? ENOTDIR : errno;
    int error = 0;
    if (fstat(cfd, &st) < 0) {
        error = errno;
        goto out;
    }
    if (st.st_uid != geteuid()) {
        made_by = st.st_uid;
        *step = not_ours;
        error = EPERM;
        goto out;
    }
    if (!v2 && swappiness >= 0) {
        /* v1: the value first (again, if the child was there), then the move */
        snprintf(value, sizeof(value), "%d", swappiness);
        *step = "memory.swappiness";
        if ((error = cgroup_write_at(cfd, *step, value)) != 0)
            goto out;
    }
    *step = v2 ? "cgroup.procs" : "tasks";
    error = cgroup_move_self_at(cfd, v2);
    if (error || !v2 || !set_swap_max)
        goto out;
    /*
     * v2: a controller reaches a child only through its parent's
     * subtree_control, and a cgroup with processes may enable none (no
     * internal processes): so move first, then enable, then set.
     */
    char ctl[1024], *path = xasprintf("%s/cgroup.subtree_control", dir);
    bool known = read_line_file(path, ctl, sizeof(ctl));
    free(path);
    if (!known || !cgroup_has_word(ctl, "memory", ' ')) {
        *step = "cgroup.subtree_control";
        *in = dir;
        if ((error = write_file(dir, *step, "+memory")) != 0)
            goto out;
        /*
         * Ours to take back only where it was surely off, and below the
         * root: the root cgroup takes processes back with it on, and its
         * children are every other service's
         */
        char *type = xasprintf("%s/cgroup.type", dir);
        enabled = known && access(type, F_OK) == 0;
        free(type);
    }
    *in = child;
    if (swap_max == UINT64_MAX)
        snprintf(value, sizeof(value), "max");
    else
        snprintf(value, sizeof(value), "%llu", (unsigned long long)swap_max);
    *step = "memory.swap.max";
    error = cgroup_write_at(cfd, *step, value);
out:
    close(cfd);
    return error;
}

/*
 * Undo what enter_once() enabled in dir's cgroup.subtree_control: a cgroup
 * v2 parent below the root with a controller enabled for its children
 * takes no process back (no internal processes), and is no longer the
 * parent it was. Only this launch's +memory, where it was off: no child of
 * it had memory settings then, and only one made in the moments until a
 * failed launch takes it back could lose its own (the kernel refuses
 * -memory only while a child enables it for its own children: EBUSY).
 */
static void disable_memory(const char *dir)
{
    if (enabled && write_file(dir, "cgroup.subtree_control", "-memory") == 0)
        enabled = false;
}

bool cgroup_enter(const char *dir, bool v2, const char *name, int swappiness, bool set_swap_max,
                  uint64_t swap_max, struct err *e)
{
    int error;
    const char *step, *in;
    /* on the heap, as every path here: the stack pages a launch touches are faults it pays */
    char *child = child_name(dir, name, v2, swappiness, set_swap_max, swap_max);
    if (strlen(child) >= PATH_MAX) {
        /* a cut name would lose its values, and launches asking for others would share it */
        error = ENAMETOOLONG;
        err_errno(e, error, "cannot make %s in this process's cgroup: %s (its path is %zu bytes)",
                  child + strlen(dir) + 1, strerror(error), strlen(dir));
        free(child);
        return false;
    }
    /*
     * Another launch removed the empty child between our mkdir and the
     * writes in it (its sweep, or a failed launch leaving it): ENOENT
     * where the name is gone, ENODEV from a file opened in it just before.
     */
    for (int tries = 0; tries < 3; tries++) {
        error = enter_once(dir, child, v2, swappiness, set_swap_max, swap_max, &step, &in);
        if ((error != ENOENT && error != ENODEV) || strcmp(in, child) != 0)
            break;
    }
    if (error != 0) {
        if (step == not_ours) { /* refused before any move: nothing to undo */
            err_errno(e, error,
                      "%s: made by uid %u, not by tunerun's (uid %u): a cgroup another user "
                      "can set limits in is not entered (remove it: rmdir %s)",
                      in, (unsigned)made_by, (unsigned)geteuid(), in);
            free(child);
            return false;
        }
        /* back to where it was: on v2 only once the parent's +memory, if ours, is gone again */
        bool back = !cgroup_lists_self(child) || (disable_memory(dir), move_self(dir, v2) == 0);
        err_errno(e, error, "%s/%s: %s%s%s", in, step, strerror(error),
                  error == EBUSY ? " (other processes share this cgroup: cgroup v2 lets a cgroup "
                                   "with processes enable no controller for its children)"
                                 : "",
                  back ? ""
                       : "; still in the child: its parent takes no process back (the next "
                         "launch of this profile reuses it; one that makes a new child removes it "
                         "once empty)");
        if (back && created)
            rmdir(child);
        free(child);
        return false;
    }
    free(entered);
    free(left_from);
    entered = child;
    left_from = xstrdup(dir);
    left_v2 = v2;
    /*
     * Children pile up only when new ones are made (a new profile or
     * value), so that is when to look for the empty ones of services that
     * ended: a launch that reuses its child reads no directory (a cgroupfs
     * readdir costs more than the move itself).
     */
    if (created)
        cgroup_sweep(dir);
    return true;
}

void cgroup_leave(void)
{
    if (entered == NULL)
        return;
    disable_memory(left_from);
    move_self(left_from, left_v2);
    if (created)
        rmdir(entered); /* fails, as it should, while another launch's service is in it */
    free(entered);
    free(left_from);
    entered = left_from = NULL;
}
