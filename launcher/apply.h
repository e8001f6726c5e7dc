/*
 * apply.h - run a plan's steps on this process, in the plan's order.
 *
 * Every step reports ok, skipped or failed, with errno and one human line
 * that says what happened and, on failure, the fix (as systemd's
 * exec_child names the step that failed). apply never exits: main decides
 * whether a failure is fatal (--strict) or a warning (the default).
 */
#ifndef TUNERUN_APPLY_H
#define TUNERUN_APPLY_H

#include "plan.h"

enum step_status { STEP_OK, STEP_SKIPPED, STEP_FAILED };

struct step_result {
    enum step_status status;
    int error; /* errno of the failing call, 0 otherwise */
    char detail[512];
};

/*
 * Apply every step but the cgroup one; results[] has one entry per plan
 * step. apply_cgroup_step() applies that one last, just before exec: on
 * cgroup v2 a parent that enabled a controller for the child can take no
 * process back, so nothing that may still refuse the launch comes after it.
 */
void apply_plan(const struct plan *pl, struct step_result *results);
void apply_cgroup_step(const struct plan *pl, struct step_result *results);

/*
 * apply_plan() only raises resource limits (but nproc); apply_rlimits_final()
 * lowers them to the plan's, just before exec (an errno, 0 when all are
 * set), keeping in saved[] (one per plan step) what each was, which
 * apply_rlimits_undo() restores when the exec failed.
 */
int apply_rlimits_final(const struct plan *pl, struct rlimit *saved);
void apply_rlimits_undo(const struct plan *pl, const struct rlimit *saved);

const char *step_status_name(enum step_status s);

/*
 * The choice a sysfs file marks among those it lists ("always [madvise]
 * never" -> "madvise"), or NULL: the THP mode here, and doctor's THP files
 * and block queue schedulers.
 */
const char *apply_thp_bracketed(const char *text, char *buf, size_t n);

/*
 * The THP mode this process's disable flags set, as its parent left them
 * (PR_GET_THP_DISABLE): THP_NEVER, THP_MADVISE, or THP_SYSTEM for none.
 */
enum thp_mode apply_thp_inherited(void);

/* Whether this process may raise a hard resource limit (CAP_SYS_RESOURCE, effective). */
bool apply_may_raise_hard_limits(void);

#endif
