/*
 * plan.h - what a launch will do, as plain data.
 *
 * The planner is a pure function of (profile, topology, facts, running
 * services): it makes no syscalls and calls no hwloc topology function
 * (only hwloc's bitmap helpers), so every rule can be tested against any
 * machine shape. Its output is the whole launch as a list of typed steps,
 * in the order launch.c runs them (as bubblewrap's setup operations are),
 * plus notes: the decisions with their reasons, and warnings where the
 * profile could not be honoured. `tunerun plan` prints exactly these
 * steps, so what a reader sees is what a launch does.
 */
#ifndef TUNERUN_PLAN_H
#define TUNERUN_PLAN_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "log.h"
#include "profile.h"
#include "cgroup.h"
#include "disk.h"
#include "privs.h"
#include "registry.h"
#include "topo.h"

enum plan_mpol {
    PLAN_MPOL_LOCAL,
    PLAN_MPOL_BIND,
    PLAN_MPOL_PREFERRED,
    PLAN_MPOL_PREFERRED_MANY,
    PLAN_MPOL_INTERLEAVE,
    PLAN_MPOL_WEIGHTED_INTERLEAVE, /* Linux 6.9: by the kernel's per-node weights */
};

/*
 * Every effect of a launch, in the order it happens, which is the order a
 * plan lists them in. Each has a stable name (plan_step_name()): messages,
 * `tunerun plan` and every refusal name the step.
 */
enum step_type {
    STEP_CLAIM,         /* "claim": the registry learns where it runs */
    STEP_CGROUP,        /* "cgroup": the swap policy's child cgroup, entered */
    STEP_CPUSET,        /* "cpuset": a cpuset cgroup of its own, which holds the placement */
    STEP_RLIMIT,        /* "rlimit NAME": raised now, lowered by the final step */
    STEP_OOM_SCORE_ADJ, /* "oom_score_adj" */
    STEP_MEMPOLICY,     /* "mempolicy" */
    STEP_AFFINITY,      /* "affinity" */
    STEP_THP,           /* "thp" */
    STEP_YIELD,         /* "yield": running shared pools give up the CPUs it takes */
    STEP_PRIVILEGES,    /* "privileges": user, groups, capabilities, no_new_privs */
    STEP_SETENV,        /* "env NAME" */
    STEP_RLIMITS_FINAL, /* "final rlimits": every limit as the plan says, lowered last */
    STEP_EXEC,          /* "exec": tunerun becomes the service, same pid */
};

struct plan_step {
    enum step_type type;
    char *why; /* the fear it answers, and where the profile asked for it */
    /*
     * A failure refuses the launch even without --strict: the privilege
     * drop (the service would run with more than its profile gives it),
     * the final limits and the exec, and a claim in a --state-dir that was
     * asked for.
     */
    bool required;
    union {
        struct {
            char key[CLAIM_KEY_LEN + 1]; /* the launch's identity: plan_launch_key() */
            const char *dir;             /* the state directory's path; borrowed */
            bool exclusive;              /* no other service may share its CPUs */
            bool pool;    /* shared, on every CPU it could have: it can yield some later */
            char **avoid; /* the profiles it keeps apart from; borrowed from the profile */
            size_t navoid;
        } claim;
        struct {
            int resource;
            rlim_t soft, hard;
            long nr_open; /* nofile: fs.nr_open as the facts read it; 0: not read */
        } rlimit;
        int oom_score_adj;
        struct {
            enum plan_mpol mode;
            hwloc_bitmap_t nodes; /* empty for local */
        } mempolicy;
        hwloc_bitmap_t cpus;
        enum thp_mode thp;
        struct {
            char *name, *value;
        } env;
        struct {
            char *dir;        /* the cgroup to make a child of */
            const char *name; /* the profile's, for the child's name; borrowed */
            bool v2;
            int swappiness; /* -1: leave it */
            bool set_swap_max;
            uint64_t swap_max; /* UINT64_MAX: "max" */
        } cgroup;
        struct {
            char *dir;           /* the cgroup to make its child of */
            const char *name;    /* the profile's, for the child's name; borrowed */
            hwloc_bitmap_t cpus; /* cpuset.cpus */
            hwloc_bitmap_t mems; /* cpuset.mems */
            bool v2;             /* cgroup2: the child also holds the swap limit */
            bool set_swap_max;   /* v2: memory.swap.max, folded from the swap step */
            uint64_t swap_max;   /* UINT64_MAX: "max" */
        } cpuset;
        struct {
            const struct privs *pv; /* borrowed */
            char *path; /* the PATH the command is looked for in (the plan's), NULL: none */
        } privileges;
        struct {
            /* the command, with what [args] added; the plan's (or the input's); NULL: none */
            char *const *argv;
        } exec;
    } u;
};

enum note_level { NOTE_INFO, NOTE_WARN };

struct plan_note {
    enum note_level level;
    char *text;
};

/*
 * An argument [args] adds to the command (plan_args.c): added, or not,
 * because the command passes it already (`passed`, its own words) or is
 * not one the profile's arguments are for.
 */
struct plan_arg {
    char *option; /* the spelling added, as the command would carry it: "-t", "-c name" */
    char *value;  /* the value, the plan's variables filled in */
    bool added;
    char *passed; /* what the command passes for it ("-t 8"), when not added; else NULL */
};

/* A running shared service that yields CPUs to this one (see note_claims). */
struct plan_shrink {
    size_t claim;         /* index into plan_input.claims */
    const char *profile;  /* the pool's profile, as its claim names it; borrowed */
    hwloc_bitmap_t cpus;  /* what it keeps */
    hwloc_bitmap_t gives; /* what it gives up: whole cores of this one's CPUs */
    hwloc_bitmap_t nodes; /* the nodes of those */
};

struct plan {
    const char *profile;      /* the profile's name; borrowed */
    hwloc_bitmap_t cpus;      /* the service's CPUs */
    hwloc_bitmap_t nodes;     /* the nodes those CPUs live on (CPU homes) */
    hwloc_bitmap_t mem_nodes; /* the nodes its memory comes from */
    hwloc_bitmap_t nodeless;  /* its CPUs that no allowed node owns (topo_nodeless()) */
    enum plan_mpol mpol;

    struct plan_step *steps;
    size_t nsteps;
    struct plan_note *notes;
    size_t nnotes;
    struct plan_shrink *shrinks; /* what the yield step moves */
    size_t nshrinks;
    bool degraded; /* some warning: the profile is not fully honoured (--strict refuses) */
    const struct cgroup *cgroup;  /* where it stands (plan_input's; borrowed), NULL if unknown */
    const struct privs *privs;    /* who it runs as (plan_input's; borrowed), NULL: unchanged */
    const struct plan_near *near; /* the profile's near looked up (plan_input's; borrowed) */
    /* [args]: each of the profile's, and the command as the exec step runs it */
    struct plan_arg *args;
    size_t nargs;
    const char *args_for_other; /* the command's name, where [args] are for others; else NULL */
    char **argv;                /* the command's words and the added ones; NULL: none added */
    char **added;               /* the words the plan made (argv borrows the command's own) */
    size_t nadded;
};

/* The profile's `near` looked up on this machine (disk_nodes(), or nic_nodes()). */
struct nic;
struct plan_near {
    hwloc_bitmap_t nodes; /* os indexes of the nodes its disks hang off; empty: none known */
    char *what;           /* what was found, or why nothing was */
    enum near_status status;
    struct disk *disks; /* the disks under it, each with its nodes */
    size_t ndisks;
    struct nic *nics; /* or, for a NIC's near (nic.h), the devices under the interface */
    size_t nnics;
};

/*
 * The kernel's weights for weighted interleave (weights.c), host-wide:
 * /sys/kernel/mm/mempolicy/weighted_interleave/nodeN, 1 to 255, which
 * tunerun only reads. Without that directory the kernel (before 6.9)
 * has no such policy.
 */
struct plan_weights {
    bool supported;   /* the kernel has MPOL_WEIGHTED_INTERLEAVE */
    unsigned *weight; /* by os index, nweights of them; 0: none given */
    size_t nweights;
    bool automatic; /* Linux 6.16's `auto`: the kernel sets them from HMAT's bandwidth */
};

/* What the host says now; the root of another host's copy, or NULL for this one. */
void weights_read(struct plan_weights *w, const char *root);
void weights_free(struct plan_weights *w);

struct plan_input {
    const struct profile *profile;
    const struct topo *topo;
    char *const *environ;       /* the environment the command would inherit */
    bool registry;              /* the claims below are known (a state directory is in use) */
    const struct claim *claims; /* live claims of running services */
    size_t nclaims;
    const struct claim *previous;       /* where this launch ran when it last ended, or NULL */
    const struct cgroup *cgroup;        /* where this process stands; NULL for another machine */
    const struct privs *privs;          /* [security] resolved on this machine; NULL: unchanged */
    const struct plan_near *near;       /* NULL: not looked up (another machine's topology) */
    const struct plan_weights *weights; /* weighted interleave's; NULL: not read */
    long nr_open; /* fs.nr_open, which no nofile hard limit may pass; 0: not read (not needed) */
    const char *privs_refused; /* why this process could not make the drop (plan), or NULL */
    /*
     * For plan: this process's limits, by resource, where it may not raise
     * a hard one (no CAP_SYS_RESOURCE), so that the plan warns of the steps
     * a launch from here would fail; NULL otherwise, and for a launch,
     * whose step says so itself.
     */
    const struct rlimit *fixed_limits;
    /*
     * For plan, likewise: this process's oom_score_adj where it may not
     * lower it (no CAP_SYS_RESOURCE) and the profile sets one; NULL
     * otherwise.
     */
    const int *fixed_oom;
    /*
     * The THP mode this process's disable flags set (PR_GET_THP_DISABLE),
     * which the service inherits where no step sets its own: THP_SYSTEM
     * for none (and for another machine's plan), THP_NEVER, THP_MADVISE.
     * A unit's MemoryTHP= leaves them.
     */
    enum thp_mode thp_inherited;
    char *const *command;  /* what the exec step runs; NULL: a plan shown without one */
    const char *state_dir; /* where the claim step writes, when `registry` */
    bool state_dir_asked;  /* --state-dir: a claim it cannot take refuses the launch */
};

/*
 * A launch's identity across restarts: its profile and its command line,
 * so that `systemctl restart` finds the placement it had, and two
 * instances of one profile with different arguments keep theirs apart
 * (hex, CLAIM_KEY_LEN digits, into out).
 */
void plan_launch_key(const char *profile, char *const *command, char *out, size_t n);

/*
 * Whether a plan for p can turn on claim k (exclusive, or in conflict): the
 * claims whose liveness a launch must make sure of (registry_check()).
 */
bool plan_depends_on(const struct profile *p, const struct claim *k);

/* False only when no plan exists at all (no usable CPU); e says why. */
bool plan_build(struct plan *pl, const struct plan_input *in, struct err *e);
void plan_free(struct plan *pl);

const char *plan_mpol_name(enum plan_mpol m);
/* A step's short name: "rlimit nofile", "mempolicy", "env MALLOC_ARENA_MAX", ... */
void plan_step_name(const struct plan_step *s, char *buf, size_t n);
/* The step's planned value, as plan shows it in both formats: "65535:65535", "bind 0", ... */
void plan_step_value(const struct plan *pl, const struct plan_step *s, char *buf, size_t n);
/* A swap limit as cgroup2's memory.swap.max takes it: bytes, or "max" for UINT64_MAX. */
void plan_swap_size(char *buf, size_t n, uint64_t v);

#endif
