/*
 * ps.h - `tunerun ps`: each live claim, the processes holding it, and
 * whether every thread is still inside its CPUs (and memory inside its
 * nodes, for a bound service). ps.c gathers it; report.c shows it.
 */
#ifndef TUNERUN_PS_H
#define TUNERUN_PS_H

#include <stdbool.h>
#include <stddef.h>

#include "log.h"
#include "registry.h"
#include "state.h"

#define PS_EXIT_FAILED 125

/* A thread that left its claim's CPUs. */
struct ps_thread {
    long tid;
    char *cpus; /* its affinity, as a list */
    bool one;   /* of one CPU */
};

struct ps_proc {
    long pid;
    char comm[64];
    size_t nthreads;
    struct ps_thread *escaped; /* threads outside the claim's CPUs */
    size_t nescaped;
    long long pages_elsewhere; /* pages off the claim's memory nodes; -1: not checked */
    /*
     * With ps_gather()'s memory: its anonymous memory resident on each
     * node, in bytes (numa_maps' N<node>= pages times the mapping's page
     * size), node_bytes[N] for node N < nnodes; NULL where unread.
     */
    unsigned long long *node_bytes;
    unsigned nnodes;
};

struct ps_service {
    const struct claim *c;
    bool by_lock; /* alive by its fd lock (else by its pid) */
    struct ps_proc *procs;
    size_t nprocs;
    bool inside; /* every thread on its CPUs, and a bound one's pages on its nodes */
    size_t threads, threads_outside; /* over its processes */
};

struct ps_report {
    const char *state_dir; /* the registry's directory, or NULL for none here */
    const char *none;      /* why there is none, when state_dir is NULL */
    bool not_root;         /* root's services are root's to list */
    struct registry reg;
    struct ps_service *v;
    size_t n;
};

/*
 * What runs under the registry in sd; false (e set) when it cannot be
 * read. memory: also read where each process's memory is (for metrics).
 */
bool ps_gather(struct ps_report *r, const struct state_dir *sd, bool memory, struct err *e);
void ps_free(struct ps_report *r);

#endif
