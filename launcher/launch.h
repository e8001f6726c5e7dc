/*
 * launch.h - run a launch, or show its plan (launch.c).
 *
 * main() parses the options and gathers the facts (the profile, the
 * topology, the state directory, the cgroup, the privileges, `near`); these
 * take them from there.
 */
#ifndef TUNERUN_LAUNCH_H
#define TUNERUN_LAUNCH_H

#include <stdbool.h>

#include "cgroup.h"
#include "plan.h"
#include "privs.h"
#include "profile.h"
#include "state.h"
#include "topo.h"

/* As env(1) has them: tunerun's own failure, a command that cannot run, one not found. */
#define EXIT_TUNERUN    125
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND  127

/* What of the command line a launch, or its plan, needs. */
struct launch_options {
    char **command;       /* after "--"; NULL for a plan without one */
    bool strict;          /* --strict */
    bool json;            /* plan --json */
    bool state_dir_asked; /* --state-dir: a claim it cannot take refuses the launch */
    bool elsewhere;       /* --topology: another machine's plan, nothing of this one's */
};

/*
 * Execute o->command under p's plan: returns only when it did not exec,
 * with the exit status (125, 126, 127), having said why. cg, pv and near
 * may be NULL (unknown, unchanged, not looked up).
 */
int launch_run(const struct launch_options *o, struct profile *p, struct topo *t,
               const struct state_dir *sd, const struct cgroup *cg, const struct privs *pv,
               const struct plan_near *near);

/* tunerun plan: the same plan, read-only, printed; 0, or 125 (--strict on a degraded plan). */
int launch_plan(const struct launch_options *o, struct profile *p, struct topo *t,
                const struct state_dir *sd, const struct cgroup *cg, const struct privs *pv,
                const struct plan_near *near);

/*
 * The process as a launch needs it from main()'s first step: SIGPIPE
 * ignored (restored for the verbs that print to stdout, and at the exec),
 * and fds 0-2 held open on /dev/null where the caller closed them (false
 * when they cannot be). Whether fd 1 was one of them, for a verb's write
 * check.
 */
void launch_sigpipe_ignore(void);
void launch_sigpipe_restore(void);
bool launch_hold_std_fds(void);
bool launch_stdout_was_closed(void);

#endif
