/*
 * topo_memory.c - every node's memory, as it is now: total and free from
 * the node's meminfo (libnuma), and what a kernel that initializes memory
 * lazily has not counted there yet.
 *
 * A kernel that initializes struct pages lazily (this project's CI
 * machine, a 24 GiB Firecracker guest booted with a vendor's
 * deferred_init=lazy: pages "left to deferred_grow_zone()") adds them to
 * its zones' managed pages, and so to its nodes' MemTotal, only as memory
 * is used, while the machine's total (sysinfo, /proc/meminfo, what the JVM
 * sees) has them from the start: its one node counted 5 to 16 GiB of
 * 23.5. Upstream's DEFERRED_STRUCT_PAGE_INIT finishes before init runs,
 * and every later change (balloons, hotplug) moves both counts together.
 * A heap or a bind sized by the nodes' counts alone would be a fraction of
 * the machine's. hwloc and libnuma both read the nodes' meminfo and know
 * nothing of this, hence by hand.
 *
 * What the zones hold (their present pages) is fixed while the machine
 * is: it is read from /proc/zoneinfo when the machine is discovered, and
 * kept in the topology cache, so that a launch does not read and parse
 * zoneinfo (its largest single cost, about 60 us, on such a machine).
 */
#include "topo_internal.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* What the nodes' meminfo counts, when it falls short of total by more than 1%; else 0. */
static uint64_t counted_short(const struct topo *t, uint64_t total)
{
    uint64_t counted = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        counted += t->nodes[i].mem_total;
    return counted < total - total / 100 ? counted : 0; /* 0 too when no node has any */
}

/*
 * Per node of `os` (n os indexes), the pages its zones hold (present) and
 * those they do not manage (gap), from zoneinfo's text; nodes not among
 * them are passed over.
 */
static void zone_pages(const char *zoneinfo, const unsigned *os, size_t n, double *present,
                       double *gap)
{
    int at = -1;
    unsigned long long zone_present = 0, v;
    for (const char *p = zoneinfo; *p;) {
        /* a line at a time, a short copy of it: sscanf on the rest would read it all */
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[128];
        unsigned node;
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        p += len + (end != NULL);
        if (sscanf(line, "Node %u, zone", &node) == 1) {
            at = -1;
            for (size_t i = 0; i < n && at < 0; i++)
                at = os[i] == node ? (int)i : -1;
            zone_present = 0;
        } else if (at >= 0 && sscanf(line, " present %llu", &v) == 1) {
            zone_present = v;
            present[at] += (double)v;
        } else if (at >= 0 && sscanf(line, " managed %llu", &v) == 1 && zone_present > v) {
            gap[at] += (double)(zone_present - v);
        }
    }
}

/*
 * The shortfall of the nodes' counts against the machine's total, handed
 * out over the nodes' gaps (per node, in units of `unit` bytes). Not all
 * of a gap is to come: the kernel's own reservations (its struct pages,
 * about 1.6% of memory, a crashkernel) stay unmanaged. What the gaps hold
 * beyond the shortfall is that, spread by present pages; each node's share
 * of the shortfall follows what is left of its gap, and is never more than
 * its gap.
 */
static bool spread_shortfall(struct topo *t, uint64_t total, uint64_t counted,
                             const double *present, const double *gap, double unit)
{
    double presents = 0, gaps = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        presents += present[i];
        gaps += gap[i];
    }
    double missing = (double)(total - counted) / unit;
    double kept = gaps > missing ? gaps - missing : 0, *lazy = xcalloc(t->nnodes, sizeof(*lazy));
    double lazies = 0, added = 0;
    for (size_t i = 0; i < t->nnodes && presents > 0; i++) {
        lazy[i] = gap[i] - kept * present[i] / presents;
        lazy[i] = lazy[i] > 0 ? lazy[i] : 0;
        lazies += lazy[i];
    }
    for (size_t i = 0; i < t->nnodes && lazies > 0; i++) {
        double share = missing * lazy[i] / lazies;
        uint64_t bytes = (uint64_t)((share < gap[i] ? share : gap[i]) * unit);
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
    return added > 0;
}

bool topo_add_uninitialized(struct topo *t, uint64_t total, const char *zoneinfo, uint64_t page)
{
    uint64_t counted = counted_short(t, total);
    if (counted == 0 || zoneinfo == NULL || page == 0)
        return false;
    double *gap = xcalloc(2 * t->nnodes, sizeof(*gap)), *present = gap + t->nnodes;
    unsigned *os = xcalloc(t->nnodes, sizeof(*os));
    for (size_t i = 0; i < t->nnodes; i++)
        os[i] = t->nodes[i].os_index;
    zone_pages(zoneinfo, os, t->nnodes, present, gap);
    bool added = spread_shortfall(t, total, counted, present, gap, (double)page);
    free(os);
    free(gap);
    return added;
}

/*
 * The same from what the cache keeps of zoneinfo: each node's present
 * bytes, of which what its meminfo does not count (its managed pages) is
 * its gap.
 */
static bool add_from_zones(struct topo *t, uint64_t total, const struct machine *m)
{
    uint64_t counted = counted_short(t, total);
    if (counted == 0)
        return false;
    double *gap = xcalloc(2 * t->nnodes, sizeof(*gap)), *present = gap + t->nnodes;
    for (size_t i = 0; i < t->nnodes; i++)
        for (size_t j = 0; j < m->nnodes; j++)
            if (m->nodes[j].os_index == t->nodes[i].os_index) {
                present[i] = (double)m->present[j];
                if (m->present[j] > t->nodes[i].mem_total)
                    gap[i] = (double)(m->present[j] - t->nodes[i].mem_total);
            }
    bool added = spread_shortfall(t, total, counted, present, gap, 1.0);
    free(gap);
    return added;
}

/* sysinfo's total memory, or 0. */
static uint64_t machine_memory(void)
{
    struct sysinfo si;
    return sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
}

/* /proc/zoneinfo's text, or NULL. */
static char *read_zoneinfo(void)
{
    char *text = NULL;
    size_t len;
    int fd = open("/proc/zoneinfo", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && read_fd_text(fd, INERT_MAX, &text, &len) != 0)
        text = NULL;
    if (fd >= 0)
        close(fd);
    return text;
}

/*
 * The kernel's memory tiers (Linux 6.1 and later): memory_tierN in
 * /sys/devices/virtual/memory_tiering lists the nodes of tier N, where N
 * is the tier's abstract distance over 128. DRAM is tier 4 (576 >> 7);
 * HMAT's slower CXL and NVDIMM nodes get higher numbers, and a kernel that
 * computes none puts every node in tier 4. hwloc 2.9 does not read them;
 * read once per discovery and kept in the topology cache.
 */
void topo_machine_tiers(struct machine *m)
{
    const char *dir = "/sys/devices/virtual/memory_tiering";
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[512], list[4096], *end;
        long tier =
            strncmp(e->d_name, "memory_tier", 11) == 0 ? strtol(e->d_name + 11, &end, 10) : -1;
        if (tier < 0 || tier > 100000 || *end != '\0')
            continue;
        snprintf(path, sizeof(path), "%s/%s/nodelist", dir, e->d_name);
        hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
        if (read_line_file(path, list, sizeof(list)) && hwloc_bitmap_list_sscanf(nodes, list) == 0)
            for (size_t i = 0; i < m->nnodes; i++)
                if (hwloc_bitmap_isset(nodes, m->nodes[i].os_index)) {
                    m->nodes[i].tier = (int)tier;
                    m->nodes[i].tier_hwloc = false;
                }
        hwloc_bitmap_free(nodes);
    }
    if (d)
        closedir(d);
}

void topo_machine_zones(struct machine *m)
{
    long page = sysconf(_SC_PAGESIZE);
    char *zoneinfo = read_zoneinfo();
    m->totalram = machine_memory();
    if (zoneinfo == NULL || page <= 0 || m->nnodes == 0) {
        free(zoneinfo);
        return;
    }
    double *present = xcalloc(2 * m->nnodes, sizeof(*present)), *gap = present + m->nnodes;
    unsigned *os = xcalloc(m->nnodes, sizeof(*os));
    for (size_t j = 0; j < m->nnodes; j++)
        os[j] = m->nodes[j].os_index;
    zone_pages(zoneinfo, os, m->nnodes, present, gap);
    m->present = xcalloc(m->nnodes, sizeof(*m->present));
    for (size_t j = 0; j < m->nnodes; j++)
        m->present[j] = (uint64_t)present[j] * (uint64_t)page;
    free(os);
    free(present);
    free(zoneinfo);
}

/*
 * hwloc keeps only each node's total. libnuma reads total and free from the
 * node's meminfo, now: a cached topology may predate memory hotplug. A
 * kernel without NUMA has no such file, and the sizes stay as they were.
 * `all_nodes`: every node of the machine with memory is allowed, so that
 * its memory is theirs, and whatever their meminfo does not count yet is
 * added to them: from the zones the machine was discovered with, while
 * the machine's total is what it was then, else (a balloon or hotplug
 * since) from zoneinfo read now. The total is read once, after the nodes
 * (the launch reads each fact once): a balloon that inflates in between
 * is not taken for memory to come, but one that deflates by more than 1%
 * of the machine in those microseconds is, for this launch, and at most
 * up to the pages the nodes' zones do not manage. Reading the total on
 * both sides, as tunerun once did, would close that window for a second
 * system call.
 */
void topo_load_memory(struct topo *t, const struct machine *m, bool all_nodes)
{
    if (t->source == TOPO_HOST) {
        for (size_t i = 0; i < t->nnodes; i++) {
            long long freemem = 0;
            long long total = numa_node_size64((int)t->nodes[i].os_index, &freemem);
            if (total >= 0 && freemem >= 0) {
                t->nodes[i].mem_total = (uint64_t)total;
                t->nodes[i].mem_free = (uint64_t)freemem;
            }
        }
        uint64_t total = all_nodes ? machine_memory() : 0;
        if (total && m->present && m->totalram == total) {
            add_from_zones(t, total, m);
        } else if (total && counted_short(t, total)) {
            long page = sysconf(_SC_PAGESIZE);
            char *zoneinfo = read_zoneinfo();
            topo_add_uninitialized(t, total, zoneinfo, page > 0 ? (uint64_t)page : 0);
            free(zoneinfo);
        }
    }
    for (size_t i = 0; i < t->nnodes; i++)
        t->memory_known = t->memory_known || t->nodes[i].mem_total > 0;
    for (size_t i = 0; i < t->nnodes; i++)
        /* Some XMLs carry no memory sizes at all; then every node has memory. */
        t->nodes[i].has_memory = t->nodes[i].mem_total > 0 || !t->memory_known;
}
