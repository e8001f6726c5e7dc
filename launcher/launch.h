/*
 * launch.h - run a launch, or show its plan (launch.c).
 *
 * main() parses the options, loads the profile and resolves its
 * [security]; facts_gather() reads what the plan needs of this process
 * and this host. These take them from there.
 */
#ifndef TUNERUN_LAUNCH_H
#define TUNERUN_LAUNCH_H

#include <stdbool.h>

#include "apply.h"
#include "facts.h"
#include "privs.h"
#include "profile.h"

/* What of the command line a launch, or its plan, needs. */
struct launch_options {
    char **command;       /* after "--"; NULL for a plan without one */
    bool strict;          /* --strict */
    bool json;            /* plan --json */
    bool state_dir_asked; /* --state-dir: a claim it cannot take refuses the launch */
};

/*
 * Execute o->command under p's plan: returns only when it did not exec,
 * with the exit status (125, 126, 127), having said why. pv is NULL when
 * the profile changes no privilege.
 */
int launch_run(const struct launch_options *o, struct profile *p, const struct facts *f,
               const struct privs *pv);

/* tunerun plan: the same plan, read-only, printed; 0, or 125 (--strict on a degraded plan). */
int launch_plan(const struct launch_options *o, struct profile *p, const struct facts *f,
                const struct privs *pv);

#endif
