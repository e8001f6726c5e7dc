/*
 * facts.h - what a launch needs to know of this process and this host,
 * gathered once, before anything is planned, as plain data.
 *
 * Several modules used to read what they needed on their own, so that a
 * launch read some files two and three times and nothing saw the whole.
 * Now facts_gather() reads each fact once (the state directory, the
 * topology with the nodes' memory, the cgroup, the disk under `near`,
 * this process's limits, capabilities, THP mode and witness), the planner
 * takes them as data and stays pure, and the steps that apply the plan
 * consult them instead of asking the kernel again.
 */
#ifndef TUNERUN_FACTS_H
#define TUNERUN_FACTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cgroup.h"
#include "plan.h"
#include "profile.h"
#include "registry.h"
#include "state.h"
#include "topo.h"

/* What the facts are for: which verb, and so which of them are worth reading. */
enum facts_use {
    FACTS_LAUNCH, /* a launch: everything its plan and steps need */
    FACTS_PLAN,   /* `tunerun plan`: the same, read-only, and what only a plan shows */
    FACTS_TOPO,   /* `tunerun topo`: the topology alone */
};

struct facts_request {
    enum facts_use use;
    const struct profile *profile; /* NULL for FACTS_TOPO */
    const char *topology;          /* --topology: another machine's; NULL for this one */
    const char *state_dir;         /* --state-dir, or NULL for the default one */
};

struct facts {
    bool here; /* this machine's (no --topology): the process facts below were read */

    /* the host */
    struct state_dir sd; /* fd -1 when there is none to use (the warning said why) */
    bool registry;       /* sd takes claims: a launch registers, and plans see the claims */
    struct topo topo;
    bool cgroup_known; /* here, for a profile */
    struct cgroup cgroup;
    bool near_known; /* here, for a profile with `near` */
    struct plan_near near;
    bool weights_known; /* here, for a profile with memory = weighted-interleave */
    struct plan_weights weights;

    /* this process */
    uid_t euid;
    char *const *environ; /* what the command would inherit */
    uint64_t caps;        /* its effective capabilities: bit N for capability N */
    bool limits_read[PROFILE_NLIMITS];
    struct rlimit limits[PROFILE_NLIMITS]; /* each resource the profile sets, as it is now */
    enum thp_mode thp_inherited;           /* what its parent's PR_SET_THP_DISABLE leaves */
    long nr_open;           /* fs.nr_open, when the profile's nofile may pass it; else 0 */
    struct witness witness; /* what its claim records, when there is a registry */
};

/*
 * Read what rq's use needs, saying on stderr what a missing or unsafe
 * state directory costs. False, with e, when a launch or plan cannot go
 * on: the topology cannot be had, or a --state-dir that was asked for
 * cannot be used.
 */
bool facts_gather(struct facts *f, const struct facts_request *rq, struct err *e);
void facts_free(struct facts *f);

/* Whether the process held capability cap when the facts were read. */
static inline bool facts_have_cap(const struct facts *f, int cap)
{
    return cap >= 0 && cap < 64 && (f->caps & (UINT64_C(1) << cap));
}

#endif
