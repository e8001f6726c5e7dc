/*
 * topo_internal.h - what the files of topo share; for topo*.c only.
 *
 * topo.c loads a topology from one of three sources and narrows it to
 * what this process may use: topo_hwloc.c builds it with hwloc (this
 * machine, an XML export, a synthetic description), topo_cache.c keeps
 * this machine's in the state directory between launches, and
 * topo_narrow.c turns the machine into the planner's struct topo (allowed
 * CPUs and nodes, each CPU's one home node, the nodes' memory).
 */
#ifndef TUNERUN_TOPO_INTERNAL_H
#define TUNERUN_TOPO_INTERNAL_H

#include <hwloc.h>

#include "state.h"
#include "topo.h"

/*
 * The machine as a source describes it, before this process's cgroup and
 * affinity narrow it down: what the topology cache keeps. Nodes and cores
 * are in the source's order, each with its whole cpuset.
 */
struct mnode {
    unsigned os_index;
    hwloc_bitmap_t cpus; /* the PUs it is local to, CPU-less nodes included */
    uint64_t memory;     /* bytes; 0 when the source gives none */
    char subtype[16];
    int tier;                            /* see struct topo_node; -1 when unknown */
    bool tier_hwloc;                     /* hwloc's MemoryTier, not the kernel's */
    unsigned latency_ns, bandwidth_mibs; /* HMAT's, from its own CPUs; 0 when unknown */
};

struct mkind {
    hwloc_bitmap_t cpus;
    char label[32];
};

#define MAX_NODES 1024 /* Linux's MAX_NUMNODES (NODES_SHIFT 10) */

struct machine {
    hwloc_bitmap_t online;   /* PUs that are online */
    hwloc_bitmap_t complete; /* every PU that exists */
    struct mnode *nodes;
    size_t nnodes;
    hwloc_bitmap_t *cores;
    size_t ncores;
    uint64_t *distance;  /* nnodes x nnodes relative latencies, 0 where unknown; or NULL */
    struct mkind *kinds; /* kinds of core, fastest first; none unless two or more are ranked */
    size_t nkinds;
    /* what this process may use; NULL (for the host, until read) means everything */
    hwloc_bitmap_t allowed_cpus, allowed_nodes;
    /*
     * This host's zones, when it was discovered: per node, the bytes its
     * zones hold (present pages, whether initialized or not), and the
     * machine's total then (sysinfo); NULL and 0 where not known.
     */
    uint64_t *present;
    uint64_t totalram;
};

#define CACHE_NAME "topology.cache"
/* the highest CPU a cache may name when the kernel does not say (x86's NR_CPUS is 8192) */
#define CPUS_UNKNOWN_MAX 8191

void topo_machine_free(struct machine *m);

/* ---- topo_hwloc.c --------------------------------------------------------- */

/* What hwloc found, as a machine; `allowed`: its allowed sets too (an XML's). */
void topo_machine_from_hwloc(hwloc_topology_t topo, struct machine *m, bool allowed);
/* An XML file or synthetic description, loaded into m (t gets its source and name). */
bool topo_load_spec(const char *spec, struct topo *t, struct machine *m, struct err *e);
/* This machine, discovered (t->guess says when hwloc could only guess it). */
hwloc_topology_t topo_discover_host(struct topo *t, struct err *e);

/* ---- topo_cache.c --------------------------------------------------------- */

/* Add to what -v says about the cache. */
void topo_cache_note(struct topo *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The key a cache must have been written under; *max, the highest CPU it
 * may name; `online`, the online CPUs the key names. NULL, with why, when
 * there can be no cache.
 */
char *topo_cache_key(int *max, hwloc_bitmap_t online, const char **why);
/* The cache's body for m, and back (modified in place), false with why. */
char *topo_cache_format(const struct machine *m);
bool topo_cache_parse(char *text, int max, hwloc_const_bitmap_t online, struct machine *m,
                      struct err *e);
/* The body of a cache written under key, or NULL (t's note says why). */
char *topo_cache_read(struct topo *t, const struct state_dir *sd, const char *key);
void topo_cache_write(struct topo *t, const struct state_dir *sd, const char *key,
                      const struct machine *m);

/* ---- topo_memory.c -------------------------------------------------------- */

/* This host's zones into m: what each node's hold, and the machine's total (see above). */
void topo_machine_zones(struct machine *m);
/*
 * Every node's memory now (this host's), and what m's zones say its
 * meminfo does not count yet where all_nodes (every node with memory is
 * this process's).
 */
void topo_load_memory(struct topo *t, const struct machine *m, bool all_nodes);

/* This host's memory tiers into m's nodes (memory_tiering in sysfs); none: -1. */
void topo_machine_tiers(struct machine *m);

/* ---- topo_tiers.c --------------------------------------------------------- */

/* Each node's speed against the memory next to the CPUs, from what t knows of it. */
void topo_classify_tiers(struct topo *t);

/* ---- topo_narrow.c -------------------------------------------------------- */

/* A cgroup's list as an allowed set; NULL (everything) when it is unknown or unreadable. */
hwloc_bitmap_t topo_allowed_set(char *list);
/* The nodes the kernel lets this process allocate on; NULL: every node. */
hwloc_bitmap_t topo_kernel_mems(void);
/* The machine as this process may use it: the planner's struct topo. Frees m. */
void topo_narrow(struct topo *t, struct machine *m);

#endif
