/*
 * cgroup.h - where tunerun stands in the cgroup tree, and the child cgroup
 * it makes for the service's swap policy.
 *
 * Swap policy is a cgroup's: cgroup v1 has a per-group memory.swappiness,
 * v2 a memory.swap.max (and no per-group swappiness). tunerun writes only
 * where the cgroup is its own: on a plain host or in a delegated subtree it
 * makes a child of its current cgroup, sets the values there and moves in
 * before exec. A systemd unit's own cgroup (no Delegate=) belongs to
 * systemd, and a read-only cgroupfs (a container) to the runtime: there it
 * writes nothing and says which unit setting or docker flag does the job.
 */
#ifndef TUNERUN_CGROUP_H
#define TUNERUN_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

enum cg_mode { CG_NONE, CG_LEGACY, CG_HYBRID, CG_UNIFIED };

enum cg_owner {
    CG_OWN_HOST,      /* ours to write: a plain host, or root's own cgroup */
    CG_OWN_DELEGATED, /* a subtree systemd delegated (Delegate=yes) */
    CG_OWN_UNIT,      /* a systemd unit's own cgroup: systemd's, never written */
    CG_OWN_READONLY,  /* cgroupfs is mounted read-only (a container) */
    CG_OWN_DENIED,    /* not writable by this user */
    CG_OWN_MISSING,   /* no memory controller found for this process */
};

struct cgroup {
    enum cg_mode mode;
    bool v2;    /* the memory controller is cgroup2's (else v1's) */
    char *dir;  /* this process's memory cgroup directory, or NULL */
    char *path; /* its path in the hierarchy, "/system.slice/mysql.service" */
    enum cg_owner owner;
    char unit[128];     /* the systemd unit whose cgroup it is, if any */
    bool container;     /* signs of a container (/.dockerenv, $container, a cgroup namespace) */
    uint64_t mem_limit; /* the lowest memory limit from here up; 0: none, or not asked for */
    unsigned cpu_quota; /* CPUs the CPU quota allows, rounded up; 0: none, or not asked for */
    bool swappiness_known;
    int swappiness; /* v1: this cgroup's memory.swappiness now */
    bool swap_max_known;
    uint64_t swap_max; /* v2: its memory.swap.max now (UINT64_MAX: max) */
    char why[512];     /* why it may not be written, for messages */
    /*
     * The cpuset controller's cgroup of this process, where enforcement
     * makes the service's own child (cgroup_cpuset.c): cgroup v1's cpuset
     * hierarchy, or on cgroup2 (cs_v2) the process's one cgroup, dir.
     * Looked up only when cgroup_detect() is asked to.
     */
    bool cs_known;
    bool cs_v2;
    char *cs_dir;
    enum cg_owner cs_owner;
    char cs_why[512];
};

/*
 * Find it; never fails (owner and why say what is missing). The memory
 * limit and the CPU quota are looked up only when `limit` is true (read
 * for a plan to show, or a JVM to size); they are 0 otherwise. The cpuset
 * cgroup is looked up only when `cpuset` is true (a profile that enforces
 * its placement).
 */
void cgroup_detect(struct cgroup *cg, bool limit, bool cpuset);
/* The files a container runtime leaves in a container's root: Docker's, Podman's. */
extern const char *const container_marks[2];
/* Signs of a container: $container, a container_marks file, a cgroup namespace. */
bool cgroup_in_container(void);
void cgroup_free(struct cgroup *cg);

static inline bool cgroup_writable_as(enum cg_owner owner)
{
    return owner == CG_OWN_HOST || owner == CG_OWN_DELEGATED;
}

static inline bool cgroup_writable(const struct cgroup *cg)
{
    return cgroup_writable_as(cg->owner);
}

/*
 * The CPUs and memory nodes this process's cpuset cgroup allows, as the
 * kernel lists them, each malloc()ed, or NULL when unknown (no cpuset
 * controller, a cgroup outside the mounted tree, a file that cannot be
 * read): then the whole machine is allowed. The cgroup is the one
 * /proc/self/cpuset names (on cgroup2, the nearest ancestor with the
 * controller), its files cgroup2's cpuset.cpus.effective and
 * .mems.effective, or v1's cpuset.cpus and .mems: what hwloc's Linux
 * backend reads for a topology's allowed sets. hwloc has no call that gives
 * them without loading a topology, which the topology cache exists to
 * avoid, so tunerun reads them itself.
 */
void cgroup_cpuset(char **cpus, char **mems);

/*
 * The directory of a process's cgroup in one hierarchy, as the system under
 * `root` shows it ("/" or NULL: this process on this system; otherwise a
 * copy of another host's /proc and /sys, as doctor audits): cgroup2's
 * (option NULL), or the v1 hierarchy with `option` among its mount's
 * options as a whole word ("cpu" matches "cpu,cpuacct" and a lone "cpu",
 * never "cpuset"). The path comes from root's /proc/self/cgroup and the
 * mount from root's /proc/self/mountinfo, the last one winning, as above.
 * The directory is the system's own name for it, not prefixed with root;
 * NULL when the process has no cgroup in that hierarchy, the hierarchy is
 * not mounted, or the cgroup is not under the mount's root (a cgroup
 * namespace made after the mount). *path, unless path is NULL, gets the
 * cgroup's path in the hierarchy, or NULL. Both are malloc()ed.
 */
char *cgroup_dir_under(const char *root, const char *option, char **path);

const char *cgroup_mode_name(enum cg_mode m);
/* The mode, as systemd decides it (statfs of /sys/fs/cgroup); read once a process. */
enum cg_mode cgroup_mode(void);

/*
 * Make (or join) DIR/tunerun.NAME.VALUE, such as tunerun.mysql.swappiness-1,
 * set its value (swappiness < 0 and !set_swap_max leave those alone), and
 * move this process in. On failure nothing this launch made is left behind
 * and e says why. One that makes the child removes the empty tunerun.*
 * children of DIR that are more than a minute old.
 */
bool cgroup_enter(const char *dir, bool v2, const char *name, int swappiness, bool set_swap_max,
                  uint64_t swap_max, struct err *e);
/* The child cgroup_enter() moved this process into; NULL before, or after cgroup_leave(). */
const char *cgroup_entered(void);

/* Move back out, and remove the cgroup if cgroup_enter() made it (a launch that fails after all).
 */
void cgroup_leave(void);

/* ---- the service's own cpuset (cgroup_cpuset.c) ---------------------------- */

/*
 * Make DIR/tunerun.NAME.PID, this launch's own cpuset cgroup, give it
 * cpus and mems (lists as the kernel writes them), and move this process
 * in: in cgroup v1's cpuset hierarchy, or on cgroup2 (v2) in the process's
 * cgroup, whose cpuset (and memory, for swap_max) controller it enables
 * for its children. swap_max, unless NULL, is the child's memory.swap.max
 * (v2 only). On failure nothing this launch made or enabled is left
 * behind and e says why; a child of that name that has processes (a
 * recycled pid's) is never entered. The empty tunerun.* children of DIR
 * are removed (cgroup_sweep()).
 */
bool cgroup_cpuset_enter(const char *dir, bool v2, const char *name, const char *cpus,
                         const char *mems, const char *swap_max, struct err *e);
/* The child cgroup_cpuset_enter() moved this process into; NULL before, or after a leave. */
const char *cgroup_cpuset_entered(void);
/* Move back out and remove it: a launch refused after all. */
void cgroup_cpuset_leave(void);
/*
 * The tunerun.* cpuset cgroup process pid lives in, as a directory, where
 * it is one (a pool launched with enforcement); NULL otherwise.
 */
char *cgroup_cpuset_dir_of(long pid);
/*
 * That cgroup's cpuset.cpus set to cpus, what it was into *was (unless
 * NULL; NULL when unread). 0, or errno: EPERM for one not this user's.
 */
int cgroup_cpuset_set_cpus(const char *dir, const char *cpus, char **was);
/* The same, with cpus added to what it allows now: a pool given back what it yielded. */
int cgroup_cpuset_add_cpus(const char *dir, const char *cpus);

/* ---- between cgroup.c, cgroup_child.c and cgroup_cpuset.c ----------------- */

/* value into `file` of the cgroup directory open at dfd: 0, or errno. */
int cgroup_write_at(int dfd, const char *file, const char *value);
/* A cgroup directory opened for the *at() calls, not through a symbolic link; -1 with errno. */
int cgroup_open_dir(const char *dir);
/* This process moved into the cgroup open at dfd (v1: this thread alone, see there). */
int cgroup_move_self_at(int dfd, bool v2);
/*
 * Empty tunerun.* children of dir, removed: a launch's own cpuset cgroup
 * once its pid is gone, a swap policy's child once a minute old.
 */
void cgroup_sweep(const char *dir);

/* Whether word is one of list's, separated by sep (a controller, a mount option). */
bool cgroup_has_word(const char *list, const char *word, char sep);
/* Whether this process is in dir: its cgroup.procs lists it. */
bool cgroup_lists_self(const char *dir);
/* This process's /proc/self/cgroup, as read once, forgotten: it is about to move. */
void cgroup_forget_self(void);

#endif
