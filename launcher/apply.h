/*
 * apply.h - one function per kind of step: what it does to this process,
 * to the registry and to other services, and how it is undone.
 *
 * Every step reports ok, skipped or failed, with errno and one human line
 * that says what happened and, on failure, the fix (as systemd's
 * exec_child names the step that failed). Nothing here decides whether a
 * failure refuses the launch: launch.c's loop does, with one rule, and
 * runs the undo of every step taken so far in reverse.
 *
 * apply.c         the dispatch, and what outlives tunerun: the claim, the
 *                 cgroup, the yield of shared pools
 * apply_process.c this process's own state, which the command inherits:
 *                 rlimits, oom_score_adj, memory policy, affinity, THP,
 *                 the environment
 * apply_exec.c    the privilege drop, the final rlimits and the exec
 */
#ifndef TUNERUN_APPLY_H
#define TUNERUN_APPLY_H

#include <sys/resource.h>

#include "facts.h"
#include "log.h"
#include "plan.h"
#include "registry.h"
#include "yield.h"

enum step_status { STEP_OK, STEP_SKIPPED, STEP_FAILED };

struct step_result {
    enum step_status status;
    struct err err;    /* what was done, or why it failed and the fix; code: the errno */
    int exit_status;   /* what a launch this failure refuses exits with: 125, or 126/127 */
    const char *costs; /* where the launch goes on without it: what that costs; or NULL */
};

/*
 * What a launch holds while its steps run, and what their undo needs.
 * Steps read the facts instead of asking the kernel again.
 */
struct launch_state {
    const struct facts *facts;
    const struct plan *pl;
    char *const *argv; /* the command */
    const char *shown; /* argv[0] as messages show it: one escaped line */
    /* the registry: locked from reading the claims to the last step that writes them */
    struct registry reg;
    int claim_fd; /* -1: no claim */
    char claim_name[256];
    struct yield y;
    bool yield_taken, yield_recorded;
    /* each limit the plan sets, as tunerun holds it now, and before the final step */
    struct rlimit limits[PROFILE_NLIMITS];
    struct rlimit before_final[PROFILE_NLIMITS];
    bool final_set;
    bool dropped; /* the privilege drop was tried: root must be taken back to undo */
    bool root_lost;
    struct err root_why; /* why root cannot be taken back, when root_lost */
};

/* A state for pl on facts f, nothing taken yet. */
void launch_state_init(struct launch_state *ls, const struct facts *f, const struct plan *pl,
                       char *const *argv, const char *shown);
void launch_state_free(struct launch_state *ls);

/*
 * After the last step that writes the registry (the claim, the yield):
 * the pools' smaller claims recorded, the table written, the lock let go.
 */
void apply_release_registry(struct launch_state *ls);

/* Take one step; r says how it went. */
void step_apply(struct launch_state *ls, const struct plan_step *s, struct step_result *r);

/*
 * Undo what step s left behind that outlives tunerun or that tunerun
 * still needs: the claim, the cgroup, the CPUs pools yielded, root after
 * the drop, tunerun's own limits after the final step. The rest (memory
 * policy, affinity, THP, the environment) ends with this process.
 */
void step_undo(struct launch_state *ls, const struct plan_step *s);

const char *step_status_name(enum step_status s);

/* ---- between the files of apply ------------------------------------------ */

void step_result_set(struct step_result *r, enum step_status st, int error, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void apply_process_step(struct launch_state *ls, const struct plan_step *s, struct step_result *r);
void apply_privileges(struct launch_state *ls, const struct plan_step *s, struct step_result *r);
void apply_final_rlimits(struct launch_state *ls, struct step_result *r);
void apply_exec(struct launch_state *ls, const struct plan_step *s, struct step_result *r);
/* Root again after the drop, once; false (said) where it cannot be had. */
bool apply_root_again(struct launch_state *ls);
void apply_final_rlimits_undo(struct launch_state *ls);

#endif
