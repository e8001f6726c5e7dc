/*
 * privs.h - the identity and capabilities a service runs with ([security]).
 *
 * tunerun is usually root when it starts (a unit's ExecStart, a container's
 * PID 1) and becomes the service. When the profile names a user or the
 * capabilities to keep, everything else (limits, OOM score, memory policy,
 * affinity, the cgroup) is applied first, as root, and the drop is the
 * last thing before exec, as util-linux setpriv and bubblewrap do it. Every
 * call is checked, and the result is read back: a drop that did not take
 * is an error, never a warning.
 */
#ifndef TUNERUN_PRIVS_H
#define TUNERUN_PRIVS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log.h"
#include "profile.h"

struct privs {
    bool change_id; /* [security] user is set */
    uid_t uid;
    gid_t gid;
    gid_t *groups; /* supplementary groups, as initgroups(3) would set them */
    size_t ngroups;
    char *user_name;  /* "www-data", or the number of a uid no passwd entry names */
    char *group_name; /* likewise */
    char *user;       /* "www-data (uid 33)" for messages */
    char *group;      /* "www-data (gid 33)" */
    bool caps;        /* the capability sets are reduced to `keep` */
    uint64_t keep;
    bool no_new_privs;
    char *user_at; /* "FILE:LINE: security.user" or "--set security.user", for messages */
    char *caps_at; /* where keep_caps (or, without it, user) was given */
};

/* Whether the profile asks for any of it (otherwise privs_resolve() leaves *pv empty). */
bool privs_wanted(const struct profile *p);

/*
 * Look the user and group up (NSS) and check the capabilities exist on this
 * kernel. On failure e names the profile key's file:line (or --set).
 */
bool privs_resolve(struct privs *pv, const struct profile *p, struct err *e);
void privs_free(struct privs *pv);

/* "user www-data (uid 33), group ..., groups 33, keeps cap_net_bind_service, no_new_privs" */
char *privs_describe(const struct privs *pv);
/* The capability names in mask, comma-separated, or "none". */
char *privs_cap_list(uint64_t mask);

/*
 * Whether this process could make the drop: 0, or an errno with e saying
 * why not (what privs_drop() would refuse with before changing anything).
 * For plan, which says so without changing anything.
 */
int privs_check(const struct privs *pv, struct err *e);

/*
 * Become what pv says. First every precondition is checked with nothing
 * changed yet: tunerun holds each kept capability, CAP_SETPCAP for the
 * bounding set (unless that is moot: it holds no capability, and asks for
 * no_new_privs), CAP_SETUID/CAP_SETGID for the ids, no securebit that
 * forbids the ambient raise, and the command is executable by the new
 * user with the kept capabilities. Then, in this order: bounding set,
 * supplementary groups, gid, uid (the saved uid and the permitted set stay
 * as they were until the exec, see privs_regain()), the effective and
 * inheritable sets, the ambient set, no_new_privs; then everything is read
 * back.
 * Returns 0, or an errno with e holding one line naming what failed;
 * *exec_error, when not 0, that the command is what failed, with the errno
 * execvp() would give. Changed part way or not, privs_regain() takes it
 * back.
 */
int privs_drop(const struct privs *pv, const char *command, const char *path, int *exec_error,
               struct err *e);

/*
 * What privs_drop() would answer, found by making the drop in a child that
 * then exits, with the same `path` the command will be searched in: the
 * same return, *exec_error and e, and this process
 * unchanged. A launch asks before it claims or changes anything, so that a
 * drop bound to fail takes nothing from running services. 0 too where no
 * child can say (no fork, or none answers within two seconds): the drop
 * before the exec checks everything again.
 */
int privs_try(const struct privs *pv, const char *command, const char *path, int *exec_error,
              struct err *e);

/*
 * After privs_drop() (done or failed part way) when the exec did not
 * happen: the ids, groups and effective capabilities tunerun started with
 * again, so that it can undo the launch as root. Until the exec the drop
 * keeps the permitted set for this (the exec clears it). Returns 0 (also
 * when nothing was dropped), or an errno with e saying why it cannot.
 */
int privs_regain(struct err *e);

#endif
