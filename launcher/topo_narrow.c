/*
 * topo_narrow.c - the machine as this process may use it: the planner's
 * struct topo, its CPUs and nodes within the cgroup's cpuset and the
 * kernel's allowed memory nodes, each CPU's one home node, the cores and
 * kinds of core, and every node's memory as it is now.
 */
#include "topo_internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

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

/* What the nodes' meminfo counts, when it falls short of total by more than 1%; else 0. */
static uint64_t counted_short(const struct topo *t, uint64_t total)
{
    uint64_t counted = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        counted += t->nodes[i].mem_total;
    return counted < total - total / 100 ? counted : 0; /* 0 too when no node has any */
}

/*
 * Memory the machine has that its nodes' meminfo does not count yet. A
 * kernel that initializes struct pages lazily (this machine's, a 24 GiB
 * Firecracker guest booted with a vendor's deferred_init=lazy: pages
 * "left to deferred_grow_zone()") adds them to its zones' managed pages,
 * and so to its nodes' MemTotal, only as memory is used, while the
 * machine's total (sysinfo, /proc/meminfo, what the JVM sees) has them
 * from the start: its one node counted 5 to 16 GiB of 23.5. Upstream's
 * DEFERRED_STRUCT_PAGE_INIT finishes before init runs, and every later
 * change (balloons, hotplug) moves both counts together. A heap or a bind
 * sized by the nodes' counts alone would be a fraction of the machine's.
 * hwloc and libnuma both read the nodes' meminfo and know nothing of
 * this, hence by hand.
 */
bool topo_add_uninitialized(struct topo *t, uint64_t total, const char *zoneinfo, uint64_t page)
{
    uint64_t counted = counted_short(t, total);
    if (counted == 0 || zoneinfo == NULL || page == 0)
        return false;
    /* per node: the pages its zones hold (present) and those they do not manage */
    double *gap = xcalloc(2 * t->nnodes, sizeof(*gap)), *present = gap + t->nnodes;
    double gaps = 0, presents = 0;
    int at = -1;
    unsigned long long zone_present = 0, n;
    for (const char *p = zoneinfo; *p;) {
        /* a line at a time, a short copy of it: sscanf on the rest would read it all */
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[128];
        unsigned os;
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        p += len + (end != NULL);
        if (sscanf(line, "Node %u, zone", &os) == 1) {
            at = topo_node_index(t, os);
            zone_present = 0;
        } else if (at >= 0 && sscanf(line, " present %llu", &n) == 1) {
            zone_present = n;
            present[at] += (double)n, presents += (double)n;
        } else if (at >= 0 && sscanf(line, " managed %llu", &n) == 1 && zone_present > n) {
            gap[at] += (double)(zone_present - n), gaps += (double)(zone_present - n);
        }
    }
    /*
     * Not all of a gap is to come: the kernel's own reservations (its
     * struct pages, about 1.6% of memory, a crashkernel) stay unmanaged.
     * What the gaps hold beyond the shortfall is that, spread by present
     * pages; each node's share of the shortfall follows what is left of
     * its gap, and is never more than its gap.
     */
    double missing = (double)(total - counted) / (double)page;
    double kept = gaps > missing ? gaps - missing : 0, *lazy = xcalloc(t->nnodes, sizeof(*lazy));
    double lazies = 0, added = 0;
    for (size_t i = 0; i < t->nnodes && presents > 0; i++) {
        lazy[i] = gap[i] - kept * present[i] / presents;
        lazy[i] = lazy[i] > 0 ? lazy[i] : 0;
        lazies += lazy[i];
    }
    for (size_t i = 0; i < t->nnodes && lazies > 0; i++) {
        double share = missing * lazy[i] / lazies;
        uint64_t bytes = (uint64_t)((share < gap[i] ? share : gap[i]) * (double)page);
        t->nodes[i].mem_total += bytes;
        t->nodes[i].mem_free += bytes; /* initialized, it is free */
        added += (double)bytes;
    }
    if (added > 0) {
        free(t->memory_note);
        t->memory_note = xasprintf(
            "the nodes' meminfo counts %.1f GiB of the %.1f GiB this machine has: the rest is in "
            "their zones, not yet initialized (a kernel that does it lazily), and counted here "
            "as free",
            (double)counted / (1 << 30), (double)total / (1 << 30));
    }
    free(lazy);
    free(gap);
    return added > 0;
}

/* sysinfo's total memory, or 0. */
static uint64_t machine_memory(void)
{
    struct sysinfo si;
    return sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
}

/*
 * The same for this machine, whose every node with memory is allowed (its
 * memory is theirs): /proc/zoneinfo is read only when the nodes fall
 * short, which is rare. `before` is sysinfo's total before the nodes were
 * read: the smaller of it and the one after, so that a balloon that gave
 * memory back in between does not pass for memory to come.
 */
static void uninitialized_memory(struct topo *t, uint64_t before)
{
    uint64_t after = machine_memory(), total = after < before ? after : before;
    if (total == 0 || counted_short(t, total) == 0)
        return;
    char *zoneinfo = NULL;
    size_t len;
    int fd = open("/proc/zoneinfo", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && read_fd_text(fd, INERT_MAX, &zoneinfo, &len) != 0)
        zoneinfo = NULL;
    if (fd >= 0)
        close(fd);
    long page = sysconf(_SC_PAGESIZE);
    topo_add_uninitialized(t, total, zoneinfo, page > 0 ? (uint64_t)page : 0);
    free(zoneinfo);
}

/*
 * hwloc keeps only each node's total. libnuma reads total and free from the
 * node's meminfo, now: a cached topology may predate memory hotplug. A
 * kernel without NUMA has no such file, and the sizes stay as they were.
 * `all_nodes`: every node of the machine with memory is allowed, so that
 * its memory is theirs.
 */
static void load_memory(struct topo *t, bool all_nodes)
{
    if (t->source == TOPO_HOST) {
        uint64_t before = all_nodes ? machine_memory() : 0;
        for (size_t i = 0; i < t->nnodes; i++) {
            long long freemem = 0;
            long long total = numa_node_size64((int)t->nodes[i].os_index, &freemem);
            if (total >= 0 && freemem >= 0) {
                t->nodes[i].mem_total = (uint64_t)total;
                t->nodes[i].mem_free = (uint64_t)freemem;
            }
        }
        if (all_nodes)
            uninitialized_memory(t, before);
    }
    for (size_t i = 0; i < t->nnodes; i++)
        t->memory_known = t->memory_known || t->nodes[i].mem_total > 0;
    for (size_t i = 0; i < t->nnodes; i++)
        /* Some XMLs carry no memory sizes at all; then every node has memory. */
        t->nodes[i].has_memory = t->nodes[i].mem_total > 0 || !t->memory_known;
}

/*
 * The nodes the kernel lets this process allocate on (its cpuset's:
 * get_mempolicy(MPOL_F_MEMS_ALLOWED)) narrow what the cgroup files said.
 * They are the truth where a cgroup namespace hides whose files those
 * are; the CPUs need no such check, as the affinity already holds the
 * process to its cpuset's. When the call fails, the cgroup's say stands:
 * a kernel without NUMA, or a seccomp filter (Docker's default profile
 * refuses get_mempolicy without CAP_SYS_NICE), must not leave no node at
 * all. libnuma's numa_get_mems_allowed() would: it returns an empty set
 * then, and prints its own line to stderr.
 */
void topo_kernel_mems(hwloc_bitmap_t *allowed)
{
    /*
     * Room for every node id the kernel may have, as it requires; maxnode
     * is one more than the bits the mask holds, as libnuma passes it.
     */
    unsigned long mask[(BITMAP_MAX_INDEX + 1) / (8 * sizeof(unsigned long))] = {0};
    if (get_mempolicy(NULL, mask, 8 * sizeof(mask) + 1, NULL, MPOL_F_MEMS_ALLOWED) != 0)
        return;
    hwloc_bitmap_t k = hwloc_bitmap_alloc();
    hwloc_bitmap_from_ulongs(k, sizeof(mask) / sizeof(mask[0]), mask);
    if (*allowed) {
        hwloc_bitmap_and(*allowed, *allowed, k);
        hwloc_bitmap_free(k);
    } else {
        *allowed = k;
    }
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
    load_memory(t, every_memory_node(m, t));
    load_cores(m, t);
    load_kinds(m, t);
    topo_machine_free(m);
    t->binding = hwloc_bitmap_dup(t->cpus); /* the host's own is read by the caller */
}
