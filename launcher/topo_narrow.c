/*
 * topo_narrow.c - the machine as this process may use it: the planner's
 * struct topo, its CPUs and nodes within the cgroup's cpuset and the
 * kernel's allowed memory nodes, each CPU's one home node, the cores and
 * kinds of core; every node's memory as it is now comes from
 * topo_memory.c.
 */
#include "topo_internal.h"
#include "util.h"

#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ordinary memory wins a tie for CPU home over the special kinds. */
static int subtype_rank(const char *subtype)
{
    if (*subtype == '\0' || strcasecmp(subtype, "DRAM") == 0)
        return 0;
    return 1;
}

static bool better_home(const struct mnode *a, const struct mnode *b)
{
    int wa = hwloc_bitmap_weight(a->cpus), wb = hwloc_bitmap_weight(b->cpus);
    if (wa != wb)
        return wa < wb;
    int ra = subtype_rank(a->subtype), rb = subtype_rank(b->subtype);
    if (ra != rb)
        return ra < rb;
    return a->os_index < b->os_index;
}

/* The allowed nodes; a disallowed one is no CPU's home and receives no memory. */
static void load_nodes(const struct machine *m, struct topo *t)
{
    size_t n = m->nnodes;
    t->nodes = xcalloc(n, sizeof(*t->nodes));
    const struct mnode **from = xcalloc(n, sizeof(*from));
    size_t *at = xcalloc(n, sizeof(*at)); /* index in m->nodes */
    bool sizes = false; /* an XML without memory sizes makes every node look memoryless */
    for (size_t j = 0; j < n; j++)
        sizes |= m->nodes[j].memory > 0;
    for (size_t j = 0; j < n; j++) {
        const struct mnode *o = &m->nodes[j];
        /*
         * A cpuset's mems (cgroup v2's cpuset.mems.effective) never list a
         * memoryless node, allowed or not: such a node is ours when any of
         * its CPUs is.
         */
        bool memoryless = sizes && o->memory == 0;
        if (memoryless ? !hwloc_bitmap_intersects(o->cpus, t->cpus)
                       : m->allowed_nodes && !hwloc_bitmap_isset(m->allowed_nodes, o->os_index))
            continue;
        size_t i = t->nnodes++;
        from[i] = o;
        at[i] = j;
        struct topo_node *nd = &t->nodes[i];
        nd->os_index = o->os_index;
        nd->cpus = hwloc_bitmap_alloc();
        nd->cpuless = hwloc_bitmap_iszero(o->cpus);
        nd->mem_total = o->memory;
        nd->mem_free = nd->mem_total;
        snprintf(nd->subtype, sizeof(nd->subtype), "%s", o->subtype);
        nd->tier = o->tier;
        nd->tier_known = o->tier >= 0;
        nd->tier_hwloc = o->tier_hwloc;
        nd->latency_ns = o->latency_ns;
        nd->bandwidth_mibs = o->bandwidth_mibs;
    }
    /* A source's order is by locality, not os index; plans read better by os index. */
    for (size_t i = 1; i < t->nnodes; i++)
        for (size_t j = i; j > 0 && t->nodes[j - 1].os_index > t->nodes[j].os_index; j--) {
            struct topo_node tmp = t->nodes[j];
            t->nodes[j] = t->nodes[j - 1];
            t->nodes[j - 1] = tmp;
            const struct mnode *to = from[j];
            from[j] = from[j - 1];
            from[j - 1] = to;
            size_t ta = at[j];
            at[j] = at[j - 1];
            at[j - 1] = ta;
        }
    /*
     * Give each PU one home node: the best of all the machine's nodes, so
     * that it is the same whoever launches. Where that node is not allowed
     * here, the PU has no home, rather than one of the other nodes that
     * list it (KNL's MCDRAM, HBM, a CXL node with its package's cpuset).
     */
    int pu;
    hwloc_bitmap_foreach_begin(pu, t->cpus)
    {
        size_t best = n;
        for (size_t j = 0; j < n; j++)
            if (hwloc_bitmap_isset(m->nodes[j].cpus, (unsigned)pu) &&
                (best == n || better_home(&m->nodes[j], &m->nodes[best])))
                best = j;
        for (size_t i = 0; best < n && i < t->nnodes; i++)
            if (at[i] == best)
                hwloc_bitmap_set(t->nodes[i].cpus, (unsigned)pu);
    }
    hwloc_bitmap_foreach_end();
    /* a node home to none of the CPUs it lists, which another lists alike and is home to */
    for (size_t i = 0; i < t->nnodes; i++) {
        for (size_t k = 0; k < t->nnodes && hwloc_bitmap_iszero(t->nodes[i].cpus); k++)
            if (k != i && !hwloc_bitmap_iszero(t->nodes[k].cpus) &&
                !hwloc_bitmap_iszero(from[i]->cpus) &&
                hwloc_bitmap_isequal(from[i]->cpus, from[k]->cpus)) {
                t->nodes[i].shares = true;
                t->nodes[i].shares_cpus_of = t->nodes[k].os_index;
                t->nodes[i].one_locality = t->source != TOPO_HOST;
            }
    }

    /* Distances between our nodes, when every pair of them has one. */
    if (m->distance && t->nnodes > 1) {
        unsigned *d = xcalloc(t->nnodes * t->nnodes, sizeof(*d));
        bool complete = true;
        for (size_t a = 0; a < t->nnodes && complete; a++)
            for (size_t b = 0; b < t->nnodes && complete; b++) {
                uint64_t v = m->distance[at[a] * n + at[b]];
                complete = v > 0 && v <= UINT_MAX;
                d[a * t->nnodes + b] = (unsigned)v;
            }
        if (complete)
            t->distance = d;
        else
            free(d);
    }
    free(from);
    free(at);
}

static void load_cores(const struct machine *m, struct topo *t)
{
    t->cores = xcalloc(m->ncores, sizeof(*t->cores));
    for (size_t i = 0; i < m->ncores; i++) {
        hwloc_bitmap_t pus = hwloc_bitmap_dup(m->cores[i]);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        t->cores[t->ncores++] = pus;
    }
}

/* The kinds of core among this process's CPUs, fastest first; none when one kind is left. */
static void load_kinds(const struct machine *m, struct topo *t)
{
    t->kinds = xcalloc(m->nkinds, sizeof(*t->kinds));
    for (size_t i = 0; i < m->nkinds; i++) {
        hwloc_bitmap_t pus = hwloc_bitmap_dup(m->kinds[i].cpus);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        struct topo_kind *k = &t->kinds[t->nkinds++];
        k->cpus = pus;
        memcpy(k->label, m->kinds[i].label, sizeof(k->label));
    }
    if (t->nkinds == 1) {
        hwloc_bitmap_free(t->kinds[0].cpus);
        t->nkinds = 0;
    }
}

/*
 * The nodes the kernel lets this process allocate on: its cpuset's, which
 * get_mempolicy(MPOL_F_MEMS_ALLOWED) says, and the truth where a cgroup
 * namespace hides whose cpuset files those would be. Where the call fails
 * (a seccomp filter: Docker's default profile refuses get_mempolicy
 * without CAP_SYS_NICE), the Mems_allowed of /proc/self/status that
 * libnuma read when it loaded (numa_all_nodes_ptr) says the same; never
 * libnuma's numa_get_mems_allowed(), which returns an empty set then and
 * prints its own line to stderr. NULL where neither says: every node.
 */
hwloc_bitmap_t topo_kernel_mems(void)
{
    /*
     * Room for every node id the kernel may have, as it requires; maxnode
     * is one more than the bits the mask holds, as libnuma passes it.
     */
    unsigned long mask[(BITMAP_MAX_INDEX + 1) / (8 * sizeof(unsigned long))] = {0};
    hwloc_bitmap_t k = hwloc_bitmap_alloc();
    if (get_mempolicy(NULL, mask, 8 * sizeof(mask) + 1, NULL, MPOL_F_MEMS_ALLOWED) == 0) {
        hwloc_bitmap_from_ulongs(k, sizeof(mask) / sizeof(mask[0]), mask);
        return k;
    }
    for (int n = 0; numa_all_nodes_ptr && n <= numa_max_possible_node(); n++)
        if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)n))
            hwloc_bitmap_set(k, (unsigned)n);
    if (hwloc_bitmap_iszero(k)) {
        hwloc_bitmap_free(k);
        return NULL;
    }
    return k;
}

/* A cgroup's list as an allowed set; NULL (everything) when it is unknown or unreadable. */
hwloc_bitmap_t topo_allowed_set(char *list)
{
    hwloc_bitmap_t set = NULL;
    if (list) {
        set = hwloc_bitmap_alloc();
        if (*list == '\0')
            hwloc_bitmap_zero(set);
        else if (!bitmap_parse(set, list)) {
            hwloc_bitmap_free(set);
            set = NULL;
        }
    }
    free(list);
    return set;
}

/* Whether every node of the machine with memory is among t's allowed ones. */
static bool every_memory_node(const struct machine *m, const struct topo *t)
{
    for (size_t j = 0; j < m->nnodes; j++)
        if (m->nodes[j].memory > 0 && topo_node_index(t, m->nodes[j].os_index) < 0)
            return false;
    return true;
}

/* The machine as this process may use it: the planner's struct topo. Frees m. */
void topo_narrow(struct topo *t, struct machine *m)
{
    t->cpus = hwloc_bitmap_dup(m->online);
    if (m->allowed_cpus)
        hwloc_bitmap_and(t->cpus, t->cpus, m->allowed_cpus);
    t->offline = hwloc_bitmap_dup(m->complete); /* all that exist */
    hwloc_bitmap_andnot(t->offline, t->offline, m->online);
    load_nodes(m, t);
    topo_load_memory(t, m, every_memory_node(m, t));
    topo_classify_tiers(t);
    load_cores(m, t);
    load_kinds(m, t);
    topo_machine_free(m);
    t->binding = hwloc_bitmap_dup(t->cpus); /* the host's own is read by the caller */
}
