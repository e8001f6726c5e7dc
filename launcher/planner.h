/*
 * planner.h - what the planner's phases share; for plan*.c only.
 *
 * plan_build() (plan.c) fills one struct ctx from its input and hands it to
 * each phase in turn; a phase reads what the ones before it decided and
 * adds its own notes and steps to the plan. Nothing here makes a system
 * call: the planner is pure, and every rule is tested on any machine shape.
 */
#ifndef TUNERUN_PLANNER_H
#define TUNERUN_PLANNER_H

#include "plan.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)

struct ctx {
    const struct profile *p;
    const struct topo *t;
    struct plan *pl;
    hwloc_bitmap_t cand;       /* candidate CPUs */
    hwloc_bitmap_t *node_cand; /* per node index: its candidate CPUs */
    size_t *rank;              /* eligible node indexes, best first */
    size_t nrank;
    uint64_t free_most; /* the most free memory of a candidate node (plan_rank_nodes()) */
    /*
     * Running shared services this one must not share CPUs with: those it
     * avoids (or that avoid it), and every shared one when this one is
     * exclusive. Kept apart by nodes, then by cores; failing both, they
     * yield CPUs to it (phase 3b).
     */
    hwloc_bitmap_t shunned;       /* their CPUs */
    hwloc_bitmap_t shunned_nodes; /* and their nodes (os indexes) */
    bool *conflict;               /* per claim: one of them */
    bool *yields;                 /* per claim: one of them that can give CPUs up to this one */
    bool shrinking;               /* none of the pool is free of them: they yield */
    hwloc_bitmap_t claimed;       /* CPUs of every running service */
    int *claimed_on;              /* per node index: how many of its CPUs are claimed */
    int *claimed_cand;            /* ... and how many of its candidate CPUs */
    char *shunned_names;          /* for notes: "nginx" or "nginx, mysql" */
    long nr_open;                 /* plan_input's */
    const struct rlimit *fixed_limits; /* plan_input's */
    const int *fixed_oom;              /* plan_input's */
    enum thp_mode thp_inherited;       /* plan_input's */
    const struct claim *claims;
    size_t nclaims;
    const struct claim *prev; /* the placement this launch had before, when free now */
    const struct cgroup *cgroup;
    unsigned *near;        /* per node index: its distance to the nearest of `near`'s disks */
    unsigned near_far;     /* the farthest a candidate node is, where room is short */
    uint64_t room_most;    /* the most free memory of a candidate no service it avoids holds */
    char *near_path;       /* "the disk under PATH", "the NIC of SPEC", when near is known */
    const char *near_noun; /* "the disk", "the NIC" */
    hwloc_const_bitmap_t near_nodes;    /* the nodes its disks hang off (os indexes) */
    const struct plan_weights *weights; /* plan_input's */
};

/* ---- what every phase uses (plan.c) ---------------------------------------- */

/* A decision with its reason; a warning makes the plan degraded (--strict refuses it). */
void plan_note_add(struct plan *pl, enum note_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A step at the end of the plan, `why` (malloc()ed) the fear it answers. */
struct plan_step *plan_add_step(struct plan *pl, enum step_type type, char *why);
/* "FILE:LINE", "--set ..." or "default": where a value came from, for a note. */
char *plan_origin(struct origin at);
double plan_gib(uint64_t bytes);
/* Two sizes as text that tells them apart ("64.0 GiB" and "65535 MiB"). */
void plan_sizes_apart(char *a, char *b, size_t n, uint64_t x, uint64_t y);
/* "CPU" or "CPUs", as a note names a set. */
const char *plan_cpus_word(hwloc_const_bitmap_t set);

/* ---- phase 1b and 3b: running services (plan_claims.c) --------------------- */

void plan_note_claims(struct ctx *c, const struct plan_input *in);
void plan_note_previous(struct ctx *c, const struct claim *prev);
void plan_separate_by_cores(struct ctx *c);
void plan_add_shrinks(struct ctx *c);

/* ---- phase 2: nodes (plan_nodes.c) ------------------------------------------ */

/* The index of the node node i's memory comes from: itself, or the nearest with memory. */
int plan_memory_home(const struct ctx *c, size_t i);
/* Whether node j's memory is of a tier the profile allows ([placement] tiers). */
bool plan_tier_allows(const struct ctx *c, size_t j);
/* The free memory of node i's memory home, with the nodes that share its CPUs. */
uint64_t plan_free_for(const struct ctx *c, size_t i);
void plan_note_near(struct ctx *c, const struct plan_input *in);
void plan_rank_nodes(struct ctx *c);
void plan_choose_nodes(struct ctx *c);

/* ---- phase 3: CPUs (plan_cpus.c) -------------------------------------------- */

/* Keep one PU of each core in set (smt = no). */
void plan_drop_smt_siblings(const struct topo *t, hwloc_bitmap_t set);
/* The CPUs of a set as the profile counts them: one per core with smt = no. */
unsigned plan_counted(const struct ctx *c, hwloc_const_bitmap_t set);
/* How many CPUs of pool the profile asks for. */
unsigned plan_wanted(const struct ctx *c, hwloc_const_bitmap_t pool);
/* The candidates a placement draws its CPUs from: the chosen nodes' (or all of them). */
void plan_cpu_pool(const struct ctx *c, hwloc_bitmap_t pool);
void plan_restrict_candidates(struct ctx *c, hwloc_const_bitmap_t to);
void plan_choose_cpus(struct ctx *c);

/* ---- phase 4: memory (plan_memory.c) ---------------------------------------- */

/* The memory of the nodes in `nodes` (os indexes): free, or in all. */
uint64_t plan_sum_mem(const struct topo *t, hwloc_const_bitmap_t nodes, bool free_only);
void plan_settle_nodes(struct ctx *c);
void plan_add_placement_steps(struct ctx *c);

/* ---- phase 5: the other steps ----------------------------------------------- */

void plan_add_limit_steps(struct ctx *c);                     /* plan_limits.c */
void plan_add_env_steps(struct ctx *c, char *const *environ); /* plan_limits.c */
void plan_add_env(struct plan *pl, const char *name, char *value, char *why);
const char *plan_getenv(char *const *env, const char *name);
/* v with its ${ncpus}-style references filled in from the plan (names checked at load). */
char *plan_expand(const struct ctx *c, const char *v);
/* [args]: what the command gets added, and the exec step's words (plan_args.c). */
void plan_add_args(struct ctx *c, const struct plan_input *in);
void plan_add_java_step(struct ctx *c, const char *base);          /* plan_java.c */
void plan_add_swap_steps(struct ctx *c, const struct cgroup *cg);  /* plan_cgroup.c */
void plan_add_cpuset_step(struct ctx *c, const struct cgroup *cg); /* plan_cgroup.c */

/* The launch's own steps, and what [security] means for the plan (plan_steps.c). */
void plan_note_privileges(struct plan *pl, const struct plan_input *in);
void plan_add_claim_step(struct ctx *c, const struct plan_input *in);
void plan_add_yield_step(struct ctx *c);
void plan_add_privileges_step(struct ctx *c, const struct plan_input *in);
void plan_settle_exec_path(struct plan *pl, char *const *environ);
void plan_add_final_rlimits_step(struct ctx *c);
void plan_add_exec_step(struct ctx *c, const struct plan_input *in);

#endif
