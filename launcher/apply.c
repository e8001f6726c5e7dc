/*
 * apply.c - a plan's steps as system calls: the dispatch, and the steps
 * whose effects outlive tunerun, so that a launch that does not reach the
 * exec must take them back: the claim in the registry, the cgroup it
 * entered, and the CPUs running shared pools yielded to it.
 *
 * The registry's lock is held from reading the claims (launch.c) to the
 * last step that writes them; apply_release_registry() then writes what
 * the yield changed and lets it go, before the privilege drop, as no lock
 * may be held over the exec (a hung filesystem would stall every launch
 * behind it). An undo that needs the registry again takes the lock again
 * and reads the table anew: it may have changed since.
 */
#include "apply.h"
#include "cgroup.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *step_status_name(enum step_status s)
{
    static const char *const names[] = {"ok", "skipped", "failed"};
    return names[s];
}

void step_result_set(struct step_result *r, enum step_status st, int error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    r->status = st;
    err_errno(&r->err, error, "%s", text);
    free(text);
}

void launch_state_init(struct launch_state *ls, const struct facts *f, const struct plan *pl,
                       char *const *argv, const char *shown)
{
    memset(ls, 0, sizeof(*ls));
    ls->facts = f;
    ls->pl = pl;
    ls->argv = argv;
    ls->shown = shown;
    ls->reg.lock_fd = -1;
    ls->claim_fd = -1;
    memcpy(ls->limits, f->limits, sizeof(ls->limits));
}

void launch_state_free(struct launch_state *ls)
{
    registry_close(&ls->reg);
    yield_free(&ls->y);
}

/* ---- the claim -------------------------------------------------------------- */

/* What the claim records: the plan's placement, and this process's witness. */
static void apply_claim(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    const struct plan *pl = ls->pl;
    const struct witness *w = &ls->facts->witness;
    struct claim k = {.profile = (char *)pl->profile,
                      .mpol = (char *)plan_mpol_name(pl->mpol),
                      .cpus = pl->cpus,
                      .nodes = pl->nodes,
                      .mem_nodes = pl->mem_nodes,
                      .exclusive = s->u.claim.exclusive,
                      .pool = s->u.claim.pool,
                      .avoid = s->u.claim.avoid,
                      .navoid = s->u.claim.navoid,
                      .pid = w->known ? (long)getpid() : 0, /* no witness: the fd lock alone */
                      .pidns = w->pidns,
                      .start = w->start,
                      .time = (long long)time(NULL)};
    snprintf(k.key, sizeof(k.key), "%s", s->u.claim.key);
    snprintf(k.boot_id, sizeof(k.boot_id), "%s", w->known ? w->boot_id : "");
    struct err e;
    ls->claim_fd = registry_claim(&ls->reg, &k, ls->claim_name, sizeof(ls->claim_name), &e);
    if (ls->claim_fd < 0) {
        /*
         * A service that starts unregistered is better than none, where
         * the claim was not asked for: what it costs is said with it.
         */
        step_result_set(r, STEP_FAILED, e.code, "%s", e.msg);
        r->costs = "; this service is not registered, so services started later do not know of "
                   "it, and shared pools keep their CPUs (--strict refuses)";
        return;
    }
    step_result_set(r, STEP_OK, 0, "%s/%s held by fd %d", ls->facts->sd.path, ls->claim_name,
                    ls->claim_fd);
}

/*
 * The registry under its lock again, for an undo after the lock was let
 * go: read anew, as the table may have changed since. False where it
 * cannot be had (said).
 */
static bool relock(struct launch_state *ls)
{
    if (ls->reg.lock_fd >= 0)
        return true;
    struct err e;
    registry_close(&ls->reg);
    if (!registry_open(&ls->reg, &ls->facts->sd, REGISTRY_WRITE, &ls->facts->witness, &e)) {
        log_error("registry: %s", e.msg);
        return false;
    }
    return true;
}

static void undo_claim(struct launch_state *ls)
{
    if (ls->claim_fd < 0 || ls->root_lost || !relock(ls))
        return;
    registry_drop(&ls->reg, ls->claim_name, ls->claim_fd);
    ls->claim_fd = -1;
}

/* ---- the cgroup ------------------------------------------------------------- */

static void apply_cgroup(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    char value[64];
    struct err e;
    if (!cgroup_enter(s->u.cgroup.dir, s->u.cgroup.v2, s->u.cgroup.name, s->u.cgroup.swappiness,
                      s->u.cgroup.set_swap_max, s->u.cgroup.swap_max, &e)) {
        step_result_set(r, STEP_FAILED, e.code, "%s", e.msg);
        return;
    }
    plan_step_value(ls->pl, s, value, sizeof(value));
    step_result_set(r, STEP_OK, 0, "%s in %s", value, cgroup_entered());
}

/* The launch's own cpuset cgroup: v1's hierarchy, or cgroup2 with the swap limit in it. */
static void apply_cpuset(const struct plan_step *s, struct step_result *r)
{
    struct err e;
    char *cpus = bitmap_list(s->u.cpuset.cpus), *mems = bitmap_list(s->u.cpuset.mems);
    char swap[32];
    plan_swap_size(swap, sizeof(swap), s->u.cpuset.swap_max);
    if (cgroup_cpuset_enter(s->u.cpuset.dir, s->u.cpuset.v2, s->u.cpuset.name, cpus, mems,
                            s->u.cpuset.set_swap_max ? swap : NULL, &e)) {
        step_result_set(r, STEP_OK, 0, "cpus %s, mems %s%s%s in %s", cpus, mems,
                        s->u.cpuset.set_swap_max ? ", memory.swap.max " : "",
                        s->u.cpuset.set_swap_max ? swap : "", cgroup_cpuset_entered());
    } else {
        step_result_set(r, STEP_FAILED, e.code, "%s", e.msg);
        r->costs = s->u.cpuset.set_swap_max
                       ? "; the service can set its own affinity and memory policy and leave its "
                         "placement, and its swap limit is not set (--strict refuses)"
                       : "; the service can set its own affinity and memory policy and leave its "
                         "placement (--strict refuses)";
    }
    free(cpus);
    free(mems);
}

/* ---- the yield of shared pools ---------------------------------------------- */

static void apply_yield(struct launch_state *ls, struct step_result *r)
{
    if (ls->claim_fd < 0) {
        step_result_set(r, STEP_SKIPPED, 0,
                        "this service holds no claim, so no pool gives CPUs up to it");
        return;
    }
    ls->yield_taken = true;
    int stuck = yield_take(&ls->y, ls->pl, &ls->reg);
    if (stuck > 0)
        step_result_set(r, STEP_FAILED, EPERM,
                        "%d thread%s of running services could not yield their CPUs (above)", stuck,
                        stuck == 1 ? "" : "s");
    else
        step_result_set(r, STEP_OK, 0, "every thread of the pools moved");
}

/*
 * Until the registry is released, what moved is only moved: its undo puts
 * the threads back. Once the pools' smaller claims are recorded, a pool
 * gets back what it gave, in the registry read again, except what a
 * service placed since holds.
 */
static void undo_yield(struct launch_state *ls)
{
    if (!ls->yield_taken || ls->root_lost)
        return;
    if (!ls->yield_recorded) {
        yield_undo(&ls->y);
        log_notice("the threads that moved went back to the CPUs they had");
    } else if (relock(ls)) {
        yield_give_back(&ls->y, &ls->reg, &ls->facts->topo, ls->claim_name);
        yield_forget(&ls->reg, ls->claim_name); /* nothing is left to give back when it ends */
    }
    ls->yield_taken = false;
}

void apply_release_registry(struct launch_state *ls)
{
    if (ls->yield_taken && ls->claim_fd >= 0) {
        yield_record(&ls->y, ls->pl, &ls->reg, ls->claim_name);
        ls->yield_recorded = true;
    }
    registry_release(&ls->reg);
}

/* ---- the dispatch ----------------------------------------------------------- */

void step_apply(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    memset(r, 0, sizeof(*r));
    r->exit_status = EXIT_TUNERUN;
    switch (s->type) {
    case STEP_CLAIM:
        apply_claim(ls, s, r);
        break;
    case STEP_CGROUP:
        apply_cgroup(ls, s, r);
        break;
    case STEP_CPUSET:
        apply_cpuset(s, r);
        break;
    case STEP_YIELD:
        apply_yield(ls, r);
        break;
    case STEP_PRIVILEGES:
        apply_privileges(ls, s, r);
        break;
    case STEP_RLIMITS_FINAL:
        apply_final_rlimits(ls, r);
        break;
    case STEP_EXEC:
        apply_exec(ls, s, r);
        break;
    default:
        apply_process_step(ls, s, r);
        break;
    }
}

void step_undo(struct launch_state *ls, const struct plan_step *s)
{
    switch (s->type) {
    case STEP_CLAIM:
        undo_claim(ls);
        break;
    case STEP_CGROUP:
        if (!ls->root_lost)
            cgroup_leave();
        break;
    case STEP_CPUSET:
        if (!ls->root_lost)
            cgroup_cpuset_leave();
        break;
    case STEP_YIELD:
        undo_yield(ls);
        break;
    case STEP_PRIVILEGES:
        apply_root_again(ls);
        break;
    case STEP_RLIMITS_FINAL:
        apply_final_rlimits_undo(ls);
        break;
    default: /* this process's own state, which ends with it */
        break;
    }
}
