/*
 * topo.c - hwloc -> struct topo, loaded fast.
 *
 * A fresh hwloc topology costs about 4.5 ms with Debian's defaults, nearly
 * all of it dlopen()ing plugins we never use (PCI, OpenCL, GL, libxml2).
 * We blacklist those before hwloc_topology_init(), keep only the object
 * types the planner reads, and put the environment back as it was before
 * returning, so no HWLOC_* of ours reaches the service.
 *
 * Which CPUs belong to which node: hwloc gives a CPU-less node (MCDRAM,
 * CXL, PMEM) the cpuset of the CPUs near it, so a PU can sit under several
 * nodes. Each PU gets exactly one home: the covering node with the smallest
 * cpuset, preferring ordinary DRAM, then the lowest os index. A node that
 * is home to no PU is CPU-less and never a CPU home for the planner.
 */
#include "topo.h"
#include "util.h"

#include <errno.h>
#include <hwloc.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * What tunerun sets in its own environment for the load, and puts back
 * afterwards. No plugin is needed: blacklisting them saves the dlopen()s,
 * and pointing the plugin path nowhere saves scanning the directory. The
 * x86 backend only adds CPUID details the planner never reads.
 */
static const struct {
    const char *name, *value;
} load_env[] = {
    {"HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml"},
    {"HWLOC_PLUGINS_PATH", "/nonexistent/tunerun-needs-no-hwloc-plugins"},
    {"HWLOC_COMPONENTS", "-x86"},
};
#define NLOAD_ENV (sizeof(load_env) / sizeof(load_env[0]))

int topo_node_index(const struct topo *t, unsigned os_index)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].os_index == os_index)
            return (int)i;
    return -1;
}

unsigned topo_distance(const struct topo *t, size_t a, size_t b)
{
    if (t->distance)
        return t->distance[a * t->nnodes + b];
    return a == b ? 10 : 20;
}

/* Ordinary memory wins a tie for CPU home over the special kinds. */
static int subtype_rank(const char *subtype)
{
    if (subtype == NULL || *subtype == '\0' || strcasecmp(subtype, "DRAM") == 0)
        return 0;
    return 1;
}

static bool better_home(hwloc_obj_t a, hwloc_obj_t b)
{
    int wa = hwloc_bitmap_weight(a->cpuset), wb = hwloc_bitmap_weight(b->cpuset);
    if (wa != wb)
        return wa < wb;
    int ra = subtype_rank(a->subtype), rb = subtype_rank(b->subtype);
    if (ra != rb)
        return ra < rb;
    return a->os_index < b->os_index;
}

static bool configure(hwloc_topology_t topo, const char *spec, struct topo *t, struct err *e)
{
    unsigned long flags = HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING |
                          HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS | HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS;
    /*
     * Only what the planner reads: nodes, cores, PUs, and what carries a NUMA
     * node's locality. On Linux hwloc takes a node's CPUs from sysfs and
     * makes a group where no other object matches them, so caches need not
     * be read at all (half the sysfs opens of a load). An XML export hangs a
     * node below the object its CPUs are local to (an SNC cluster's L3, a
     * memory-side cache); removing that object would widen the node's
     * cpuset to its parent's, so there caches stay where they add structure.
     */
    hwloc_topology_set_all_types_filter(topo, spec == NULL ? HWLOC_TYPE_FILTER_KEEP_NONE
                                                           : HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_GROUP, HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);

    if (spec == NULL) {
        t->source = TOPO_HOST;
        t->desc = strdup("this machine");
    } else if (strncmp(spec, "synthetic:", 10) == 0) {
        t->source = TOPO_SYNTHETIC;
        t->desc = strdup(spec);
        if (hwloc_topology_set_synthetic(topo, spec + 10) < 0) {
            err_set(e, "--topology %s: not a valid hwloc synthetic description", spec);
            return false;
        }
    } else {
        t->source = TOPO_XML;
        t->desc = strdup(spec);
        if (hwloc_topology_set_xml(topo, spec) < 0) {
            err_set(e, "--topology %s: cannot load hwloc XML: %s", spec, strerror(errno));
            return false;
        }
    }
    if (hwloc_topology_set_flags(topo, flags) < 0) {
        err_set(e, "hwloc refused topology flags: %s", strerror(errno));
        return false;
    }
    return true;
}

/*
 * Our HWLOC_COMPONENTS already overrides HWLOC_XMLFILE and HWLOC_SYNTHETIC,
 * but HWLOC_FSROOT (a copied sysfs) still makes the Linux backend describe
 * another machine; hwloc then says it is not this system.
 */
static bool check_this_system(hwloc_topology_t topo, struct err *e)
{
    if (!hwloc_topology_is_thissystem(topo)) {
        err_set(e, "hwloc describes another machine (HWLOC_FSROOT or HWLOC_THISSYSTEM is set "
                   "in the environment); unset it to launch here");
        return false;
    }
    return true;
}

static void load_nodes(hwloc_topology_t topo, struct topo *t)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->nnodes = n > 0 ? (size_t)n : 0;
    t->nodes = xcalloc(t->nnodes, sizeof(*t->nodes));
    hwloc_obj_t *objs = xcalloc(t->nnodes, sizeof(*objs));
    for (size_t i = 0; i < t->nnodes; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        objs[i] = o;
        struct topo_node *nd = &t->nodes[i];
        nd->os_index = o->os_index;
        nd->cpus = hwloc_bitmap_alloc();
        nd->mem_total = o->attr->numanode.local_memory;
        nd->mem_free = nd->mem_total;
        if (o->subtype)
            snprintf(nd->subtype, sizeof(nd->subtype), "%s", o->subtype);
        if (nd->mem_total)
            t->memory_known = true;
    }
    /* hwloc's logical order is by locality, not os index; plans read better by os index. */
    for (size_t i = 1; i < t->nnodes; i++)
        for (size_t j = i; j > 0 && t->nodes[j - 1].os_index > t->nodes[j].os_index; j--) {
            struct topo_node tmp = t->nodes[j];
            t->nodes[j] = t->nodes[j - 1];
            t->nodes[j - 1] = tmp;
            hwloc_obj_t to = objs[j];
            objs[j] = objs[j - 1];
            objs[j - 1] = to;
        }
    for (size_t i = 0; i < t->nnodes; i++)
        /* Some XMLs carry no memory sizes at all; then every node has memory. */
        t->nodes[i].has_memory = t->nodes[i].mem_total > 0 || !t->memory_known;

    /* Give each PU one home node. */
    int pu;
    hwloc_bitmap_foreach_begin(pu, t->cpus)
    {
        hwloc_obj_t best = NULL;
        size_t best_i = 0;
        for (size_t i = 0; i < t->nnodes; i++)
            if (hwloc_bitmap_isset(objs[i]->cpuset, (unsigned)pu) &&
                (best == NULL || better_home(objs[i], best))) {
                best = objs[i];
                best_i = i;
            }
        if (best)
            hwloc_bitmap_set(t->nodes[best_i].cpus, (unsigned)pu);
    }
    hwloc_bitmap_foreach_end();

    /* Distances between our nodes, when the source has a NUMA latency matrix. */
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    if (t->nnodes > 1 &&
        hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
        nr == 1) {
        unsigned *m = xcalloc(t->nnodes * t->nnodes, sizeof(*m));
        bool complete = true;
        for (size_t a = 0; a < t->nnodes && complete; a++)
            for (size_t b = 0; b < t->nnodes && complete; b++) {
                hwloc_uint64_t ab, ba;
                if (hwloc_distances_obj_pair_values(d, objs[a], objs[b], &ab, &ba) < 0)
                    complete = false;
                else
                    m[a * t->nnodes + b] = (unsigned)ab;
            }
        if (complete)
            t->distance = m;
        else
            free(m);
        hwloc_distances_release(topo, d);
    }
    free(objs);
}

static void load_cores(hwloc_topology_t topo, struct topo *t)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->cores = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*t->cores));
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i);
        hwloc_bitmap_t pus = hwloc_bitmap_dup(o->cpuset);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        t->cores[t->ncores++] = pus;
    }
}

/* Free memory is not in hwloc; libnuma reads it from the node's meminfo. */
static void load_free_memory(struct topo *t)
{
    if (numa_available() < 0)
        return;
    for (size_t i = 0; i < t->nnodes; i++) {
        long long freemem = 0;
        long long total = numa_node_size64((int)t->nodes[i].os_index, &freemem);
        if (total >= 0 && freemem >= 0)
            t->nodes[i].mem_free = (uint64_t)freemem;
    }
}

bool topo_load(struct topo *t, const char *spec, struct err *e)
{
    memset(t, 0, sizeof(*t));
    /* Our HWLOC_* hold for this call only; the caller's values come back after. */
    char *saved[NLOAD_ENV];
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        const char *v = getenv(load_env[i].name);
        saved[i] = v ? strdup(v) : NULL;
        setenv(load_env[i].name, load_env[i].value, 1);
    }

    hwloc_topology_t topo;
    bool ok = false;
    if (hwloc_topology_init(&topo) < 0) {
        err_set(e, "hwloc_topology_init failed: %s", strerror(errno));
        goto restore;
    }
    if (!configure(topo, spec, t, e))
        goto out;
    if (hwloc_topology_load(topo) < 0) {
        err_set(e, "cannot load the topology from %s: %s", t->desc, strerror(errno));
        goto out;
    }
    if (t->source == TOPO_HOST && !check_this_system(topo, e))
        goto out;

    t->cpus = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(topo));
    hwloc_bitmap_and(t->cpus, t->cpus, hwloc_topology_get_allowed_cpuset(topo));
    t->offline = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(topo));
    hwloc_bitmap_andnot(t->offline, t->offline, hwloc_topology_get_topology_cpuset(topo));
    load_nodes(topo, t);
    load_cores(topo, t);

    t->binding = hwloc_bitmap_alloc();
    if (t->source == TOPO_HOST) {
        load_free_memory(t);
        if (hwloc_get_cpubind(topo, t->binding, HWLOC_CPUBIND_THREAD) < 0) {
            err_set(e, "cannot read this process's CPU affinity: %s", strerror(errno));
            goto out;
        }
    } else {
        hwloc_bitmap_copy(t->binding, t->cpus);
    }
    ok = true;
out:
    hwloc_topology_destroy(topo);
restore:
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        if (saved[i])
            setenv(load_env[i].name, saved[i], 1);
        else
            unsetenv(load_env[i].name);
        free(saved[i]);
    }
    if (!ok)
        topo_free(t);
    return ok;
}

void topo_free(struct topo *t)
{
    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_free(t->nodes[i].cpus);
    free(t->nodes);
    for (size_t i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->cores[i]);
    free(t->cores);
    hwloc_bitmap_free(t->cpus);
    hwloc_bitmap_free(t->offline);
    hwloc_bitmap_free(t->binding);
    free(t->distance);
    free(t->desc);
    memset(t, 0, sizeof(*t));
}
