/*
 * yield.h - running shared pools give up the CPUs a launch takes, and get
 * them back when the launch does not exec after all (yield.c), or when
 * the service it became has ended (yield_return.c).
 */
#ifndef TUNERUN_YIELD_H
#define TUNERUN_YIELD_H

#include <stddef.h>

#include "plan.h"
#include "procs.h"
#include "registry.h"

/* A thread whose affinity the yield changed, and what it was. */
struct moved_thread {
    long tid;
    long pid;           /* its process */
    size_t shrink;      /* which of the plan's shrinks moved it */
    hwloc_bitmap_t was; /* its CPUs before */
    hwloc_bitmap_t to;  /* the CPUs it was moved to */
};

/*
 * A claim whose threads the yield moved, and the sets it held before:
 * recorded when the registry has it smaller too, else (a thread that could
 * not move, a registry write that failed) it is as it was.
 */
struct shrunk_claim {
    size_t shrink;
    char *file; /* the claim file's name: what finds it in the registry read again */
    hwloc_bitmap_t cpus, nodes;
    bool recorded;
    hwloc_bitmap_t gave;      /* the CPUs it gave this launch */
    long pid;                 /* its claim's pid and start time: who gets them back */
    unsigned long long start; /* (a claim file's name is never reused, nor is the pair) */
};

/* A pool's own cpuset cgroup (enforce) the yield made smaller, and what it allowed before. */
struct shrunk_cpuset {
    size_t shrink;
    char *dir;
    char *was; /* its cpuset.cpus before */
};

struct yield {
    struct moved_thread *threads;
    size_t nthreads;
    bool *done; /* per plan shrink: every thread it found moved */
    struct shrunk_claim *claims;
    size_t nclaims;
    struct pid_list seen; /* every thread of the pools the yield looked at, moved or not */
    struct shrunk_cpuset *cpusets;
    size_t ncpusets;
    /* the placed services other than this launch's when the pools shrank, and their CPUs */
    char **placed;
    hwloc_bitmap_t *placed_cpus;
    size_t nplaced;
};

/*
 * Move every thread of every process of each pool in pl->shrinks off the
 * CPUs it gives (each pool's holders looked for again on each of a few
 * passes, for workers started meanwhile), saying what moved. Returns how
 * many threads could not be moved; `y` records what did.
 */
int yield_take(struct yield *y, const struct plan *pl, struct registry *reg);

/*
 * Under --strict: every thread moved goes back where it was, and so does
 * one its process started since from a moved thread (it was born with the
 * smaller set).
 */
void yield_undo(struct yield *y);

/*
 * Each pool whose threads all moved gets its smaller claim; `y` keeps the
 * old one, and what placed services other than this launch's claim (`own`)
 * hold then.
 */
void yield_record(struct yield *y, const struct plan *pl, struct registry *reg, const char *own);

/*
 * The command did not run after all: each claim gets back the CPUs it gave
 * this launch in `reg` (the registry read again, under its lock; this
 * launch's own claim, `own`, is passed over), but none a service placed
 * since holds now (a launch
 * since may have taken them; one that shared them with the pool before
 * still does), and its threads get back only those, so that threads and
 * registry never disagree. A claim's nodes are those of its CPUs then (t).
 * The threads of a pool whose claim never shrank (one of them could not
 * move) go back as they were, within what that claim holds now. A thread
 * a pool started meanwhile from a moved one counts as moved with it.
 */
void yield_give_back(struct yield *y, struct registry *reg, const struct topo *t, const char *own);

void yield_free(struct yield *y);

/* ---- when the service ends (yield_return.c) ------------------------------ */

/*
 * What the yield changed, kept in the state directory until the service
 * ends: YIELDED_PREFIX and the rest of its claim file's name. Written
 * under the registry's lock, when the pools' smaller claims are recorded;
 * a failure is said, and costs the pools the CPUs until they restart.
 */
#define YIELDED_PREFIX "yielded."
void yield_save(const struct yield *y, struct registry *reg, const char *own);

/* The launch did not exec after all: the pools have their CPUs back, and nothing is kept. */
void yield_forget(struct registry *reg, const char *own);

/*
 * Each pool that yielded CPUs to a service whose claim the registry found
 * dead (reg->dead) gets back those no live service it must keep apart
 * from holds now: its claim, then its own cpuset cgroups, then its
 * threads. Only a pool whose claim is alive and is still the process that
 * yielded (pid and start time) gets any; one that ended is passed over.
 * Read-only (tunerun plan), only the claims in memory grow, so that the
 * plan is the one a launch would make.
 */
void yield_return_ended(struct registry *reg, const struct topo *t);

/* The file's text of what a yield changed, for a service of profile `profile`. */
char *yield_records_format(const struct yield *y, const char *profile);
/*
 * Its inverse, into an empty y: each pool a shrunk_claim (shrink is its
 * index), each moved thread with the index of its pool, the threads seen
 * and left alone in y->seen, sorted. False, with e set, for anything else.
 */
bool yield_records_parse(const char *text, struct yield *y, char **profile, struct err *e);

/*
 * Of the CPUs pool claim `pool` gave (`gave`), those it gets back now:
 * what it lacks of them, but none a live placed service it must keep
 * apart from holds (an exclusive one, or one it avoids or that avoids
 * it). Another pool never keeps it from any: pools share.
 */
void yield_returnable(const struct claim *claims, size_t n, size_t pool, hwloc_const_bitmap_t gave,
                      hwloc_bitmap_t out);

/*
 * The CPUs thread `tid` of process `pid` of pool c (a y->claims index)
 * gets, on `cur` now, when the pool gets `give` back and then holds
 * `holds`; `out` is `cur` where it is left alone.
 */
void yield_thread_back(const struct yield *y, size_t c, long pid, long tid,
                       hwloc_const_bitmap_t cur, hwloc_const_bitmap_t give,
                       hwloc_const_bitmap_t holds, hwloc_bitmap_t out);

#endif
