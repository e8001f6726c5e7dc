/*
 * topo.h - the machine as the planner sees it: plain data, no hwloc objects.
 *
 * Only topo.c talks to hwloc's topology API. What leaves it is a list of
 * NUMA nodes, each with the CPUs whose home it is and its memory, a
 * distance matrix, the cores (for smt = no) and the inherited affinity.
 * Sets are hwloc bitmaps: we use hwloc's bitmap and list functions rather
 * than writing our own, but no topology object crosses this boundary.
 */
#ifndef TUNERUN_TOPO_H
#define TUNERUN_TOPO_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

enum topo_source { TOPO_HOST, TOPO_XML, TOPO_SYNTHETIC };

/* What became of the host topology cache (see topo.c) in this load. */
enum topo_cache {
    TOPO_CACHE_OFF,     /* not the host, or no usable state directory */
    TOPO_CACHE_HIT,     /* imported from the cache */
    TOPO_CACHE_WRITTEN, /* discovered, and the cache (re)written */
    TOPO_CACHE_FAILED,  /* discovered; the cache could not be written */
};

struct state_dir;

/* Why hwloc's Linux backend could only guess the machine, and what makes it see. */
struct topo_guess {
    const char *why, *fix;
};

/*
 * How a node's memory compares with the memory next to the CPUs, which is
 * what a service gets unless its profile asks otherwise (topo_tiers.c).
 */
enum topo_speed {
    SPEED_FAST,      /* the fastest tier for latency: DRAM next to CPUs, or alike */
    SPEED_BANDWIDTH, /* more bandwidth, small: HBM, KNL's MCDRAM */
    SPEED_SLOW,      /* a slower tier: CXL expanders, NVDIMMs (NVM, SPM), GPU memory */
};

struct topo_node {
    unsigned os_index;
    hwloc_bitmap_t cpus; /* allowed online PUs whose home is this node */
    bool cpuless;        /* no online PU at all, allowed or not (CXL, PMEM, MCDRAM) */
    uint64_t mem_total;  /* bytes; 0 with has_memory false: a memoryless node */
    uint64_t mem_free;   /* bytes; equals mem_total for XML and synthetic sources */
    bool has_memory;
    char subtype[16]; /* "DRAM", "MCDRAM", "HBM", ... or "" */
    /*
     * Its memory tier: the kernel's (memory_tierN, lower is faster) on this
     * machine, hwloc's MemoryTier (0 has the most bandwidth) in an export
     * that has one; tier_known false when unknown. tier_hwloc says which.
     */
    int tier;
    bool tier_known, tier_hwloc;
    unsigned latency_ns;     /* HMAT's access latency from its own CPUs; 0 when unknown */
    unsigned bandwidth_mibs; /* HMAT's access bandwidth, MiB/s; 0 when unknown */
    enum topo_speed speed;
    char speed_why[48]; /* what says so: "memory_tier90", "NVM", "latency 40 ns", or "" */
    /*
     * The os index of the node whose CPUs it carries too, where shares: a node
     * that lists the same CPUs as another is home to none of them (each
     * CPU has one home), and its memory is as near them. A slow CPU-less
     * node gets its HMAT initiator's CPUs from hwloc so; a Cluster-on-Die
     * export may give two DRAM nodes one set.
     */
    bool shares;
    unsigned shares_cpus_of;
    /*
     * Whether that makes it one locality with that node, its memory as near
     * those CPUs: in an export, whose CPU sets are as given (a Cluster-on-Die
     * export may list two nodes with one set). On this machine Linux gives
     * each CPU one node, so a second node listing it is one hwloc attached
     * itself (a CPU-less node, to its HMAT initiator or its nearest node by
     * distance): its memory is ranked as any other node's.
     */
    bool one_locality;
};

/*
 * A kind of CPU core on a hybrid machine: Intel's performance and
 * efficiency cores, ARM's big and LITTLE ones.
 */
struct topo_kind {
    hwloc_bitmap_t cpus; /* its allowed online PUs */
    char label[32];      /* what tells it apart: "IntelCore", "capacity=1024", "kind2", ... */
};

struct topo {
    enum topo_source source;
    char *desc; /* "this machine", the XML path or the synthetic description */

    struct topo_node *nodes; /* allowed nodes, by os index */
    size_t nnodes;

    hwloc_bitmap_t *cores; /* per core: its allowed online PUs */
    size_t ncores;

    hwloc_bitmap_t cpus;    /* allowed and online PUs */
    hwloc_bitmap_t offline; /* PUs that exist but are offline */
    hwloc_bitmap_t binding; /* inherited affinity (the whole of cpus for XML/synthetic) */
    unsigned *distance;     /* nnodes x nnodes relative latencies; NULL when unknown */
    /*
     * The kinds of core among the allowed CPUs, fastest first, as hwloc
     * ranks them; none when there is one kind among them, or the
     * machine's kinds are too alike or unranked (see topo.c).
     */
    struct topo_kind *kinds;
    size_t nkinds;
    bool memory_known; /* false when no node reports any memory (some XMLs) */
    bool tiers_known;  /* some node's tier, kind or HMAT access says how fast it is */
    /*
     * On this machine, when its nodes' meminfo counted less memory than it
     * has and the sizes above were made up from the rest (see topo.c);
     * else NULL.
     */
    char *memory_note;
    /* why hwloc could only guess this machine (one node, no cores), and the fix; else NULL */
    const struct topo_guess *guess;

    enum topo_cache cache;
    char *cache_note; /* what happened with the cache and why, for -v; may be NULL */
};

/*
 * Load a topology. `spec` is NULL for this machine, "synthetic:DESC" for a
 * hwloc synthetic description, or the path of an hwloc XML export. For this
 * machine, `cache` is the state directory holding the topology cache, or
 * NULL to discover without one.
 */
bool topo_load(struct topo *t, const char *spec, const struct state_dir *cache, struct err *e);
void topo_free(struct topo *t);

/*
 * A topology from the body of a topology cache file (what follows its
 * key), every CPU and node allowed: for tests and the fuzzer. False, with
 * the line that is wrong, when the text is not what the cache holds.
 */
bool topo_parse_cache(struct topo *t, const char *text, struct err *e);
/*
 * What the cache would hold after its key for the machine of an XML or
 * synthetic spec: for tests, which read it back with topo_parse_cache()
 * (a host's cache is written only for the host). NULL, with why, when
 * the spec does not load.
 */
char *topo_cache_text(const char *spec, struct err *e);

/*
 * Where the nodes' memory adds up to less than `total`, the machine's (by
 * more than 1%), add what /proc/zoneinfo's text says their zones hold and
 * do not manage yet (memory a kernel initializes lazily; pages of `page`
 * bytes) to them, as free memory, up to the shortfall. Sets
 * t->memory_note and returns true when it added any; without zoneinfo,
 * it adds nothing.
 */
bool topo_add_uninitialized(struct topo *t, uint64_t total, const char *zoneinfo, uint64_t page);

/* Index in t->nodes of the node with this os index, or -1. */
int topo_node_index(const struct topo *t, unsigned os_index);
/*
 * How many allowed nodes are home to an allowed CPU: those a service's
 * CPUs can be placed on. With one (or none), where to place them is no
 * choice, and what only ranks the choices (`near`) is not worth learning.
 */
size_t topo_cpu_nodes(const struct topo *t);
/*
 * The CPUs of set that no allowed node is home to: a cpuset may allow CPUs
 * whose own node it does not allow memory on (docker run --cpuset-cpus 0-3
 * --cpuset-mems 1). They run the service, and their memory comes from
 * elsewhere.
 */
void topo_nodeless(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out);
/* Adds to out (os indexes) every allowed node that is home to a CPU of set. */
void topo_nodes_of(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out);
/* Whether node j (by index) is one locality with node i: it lists node i's CPUs (topo.h). */
static inline bool topo_one_locality(const struct topo *t, size_t j, size_t i)
{
    return t->nodes[j].one_locality && t->nodes[j].shares_cpus_of == t->nodes[i].os_index;
}
/* Distance between nodes by index; 10 for self and 20 for others when unknown. */
unsigned topo_distance(const struct topo *t, size_t a, size_t b);

#endif
