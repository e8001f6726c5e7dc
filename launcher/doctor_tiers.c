/*
 * doctor_tiers.c - the kernel's memory tiers, and what moves pages between
 * them: demotion under memory pressure, and NUMA balancing's promotion.
 * Said only where a slower tier exists; a host of one tier (every node in
 * memory_tier4, or no tiers in sysfs and no memory-only node) gets nothing.
 *
 * tunerun keeps a service's own allocations on the fastest tier (tiers =
 * fastest, its memory policy and its cpuset's mems). Two host settings
 * move pages after they are allocated, whatever the policy says:
 *
 *  - Demotion (/sys/kernel/mm/numa/demotion_enabled, Linux 5.15): reclaim
 *    on a fast node migrates cold pages to the next slower tier instead of
 *    swapping them out or dropping them (mm/vmscan.c shrink_folio_list ->
 *    demote_folio_list, whose comment says it "ignores all cpuset and
 *    mempolicy settings"). A page that may not be swapped may still be
 *    demoted: can_reclaim_anon_pages() falls back to can_demote(), so
 *    memory.swap.max 0 does not stop it. Since Linux 6.16 (7d709f49babc,
 *    "vmscan,cgroup: apply mems_effective to reclaim") can_demote() says
 *    no for a memory cgroup whose cgroup v2 cpuset.mems.effective leaves
 *    the next demotion node out; cgroup v1 is not checked, and a page is
 *    judged by the memory cgroup it is charged to, which is another
 *    cgroup's for what that cgroup touched first (shared libraries, page
 *    cache read by others). tunerun's cpuset child holds the memory
 *    controller only where it sets swap_max, so on 6.16 a redis or
 *    memcached that tunerun launched into a cgroup v2 cpuset of its own
 *    is spared, and a mysql there, whose memory cgroup is its unit's, is
 *    not.
 *  - NUMA balancing (kernel.numa_balancing, Documentation/admin-guide/
 *    sysctl/kernel.rst): bit 1 balances pages between nodes, bit 2
 *    (memory tiering, Linux 5.18; its rate limit 6.1) promotes hot pages
 *    from a slower tier.
 *    With bit 2 alone, pages on the top tier are never unmapped for it
 *    (mm/mprotect.c: "Skip scanning top tier node if normal numa
 *    balancing is disabled"), and kswapd keeps every node free up to the
 *    promotion watermark rather than the high one (pgdat_balanced()).
 *    task_numa_work() skips memory whose policy lacks MPOL_F_MOF, which
 *    the default policy has and a policy set with set_mempolicy() only
 *    with MPOL_F_NUMA_BALANCING: tunerun sets none, so a page of its
 *    service that was demoted is never promoted back.
 *
 * Every file is read under --root, as the rest of doctor reads.
 */
#include "doctor_internal.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIERS_DIR    "/sys/devices/virtual/memory_tiering"
#define DEMOTION     "/sys/kernel/mm/numa/demotion_enabled"
#define WEIGHTS_DIR  "/sys/kernel/mm/mempolicy/weighted_interleave"
#define TIERING_BIT  2  /* NUMA_BALANCING_MEMORY_TIERING */
#define NORMAL_BIT   1  /* NUMA_BALANCING_NORMAL */
#define CGROUP_SPARE 16 /* the first kernel whose reclaim honours cpuset.mems: 6.16 */

struct tier {
    long id; /* memory_tierN: a lower number is faster, DRAM is 4 */
    hwloc_bitmap_t nodes;
};

/* The host's tiers, fastest first, and the nodes slower than the top one. */
struct tiers {
    struct tier *v;
    size_t n;
    bool sysfs;               /* memory_tiering is there (Linux 6.1 and later) */
    hwloc_bitmap_t cpu_nodes; /* the nodes with CPUs (has_cpu); empty where unknown */
    hwloc_bitmap_t fast;      /* the top tier: the fastest with CPUs, and any faster */
    hwloc_bitmap_t slow;      /* every node of a tier slower than that */
};

static int by_id(const void *a, const void *b)
{
    const struct tier *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* memory_tierN/nodelist for each tier the kernel made; false where there is no such directory. */
static bool read_tiers(struct doc *d, struct tiers *t)
{
    int error;
    DIR *dir = doc_opendir(d, TIERS_DIR, &error);
    if (dir == NULL)
        return false;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char *end, path[512];
        if (strncmp(e->d_name, "memory_tier", 11) != 0)
            continue;
        long id = strtol(e->d_name + 11, &end, 10);
        if (end == e->d_name + 11 || *end != '\0' || id < 0 || id > 100000)
            continue;
        snprintf(path, sizeof(path), TIERS_DIR "/%s/nodelist", e->d_name);
        hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
        if (!doc_rd_list(d, path, nodes) || hwloc_bitmap_iszero(nodes)) {
            hwloc_bitmap_free(nodes);
            continue;
        }
        t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
        t->v[t->n++] = (struct tier){id, nodes};
    }
    closedir(dir);
    qsort(t->v, t->n, sizeof(*t->v), by_id);
    return true;
}

/*
 * Before memory tiers (Linux 5.15 to 6.0) demotion led from the nodes with
 * CPUs to the nodes of memory alone: two implied tiers, the second those.
 */
static void implied_tiers(struct doc *d, struct tiers *t)
{
    hwloc_bitmap_t mem = hwloc_bitmap_alloc();
    if (doc_rd_list(d, "/sys/devices/system/node/has_memory", mem) &&
        !hwloc_bitmap_iszero(t->cpu_nodes)) {
        hwloc_bitmap_t top = hwloc_bitmap_alloc(), below = hwloc_bitmap_alloc();
        hwloc_bitmap_and(top, mem, t->cpu_nodes);
        hwloc_bitmap_andnot(below, mem, t->cpu_nodes);
        t->v = xcalloc(2, sizeof(*t->v));
        t->v[t->n++] = (struct tier){0, top};
        t->v[t->n++] = (struct tier){1, below};
    }
    hwloc_bitmap_free(mem);
}

/*
 * The top tier, as the kernel's node_is_toptier() has it: the fastest tier
 * that holds a node with CPUs, and any faster (HBM without CPUs); where no
 * node is known to have CPUs, the fastest tier.
 */
static void split(struct tiers *t)
{
    size_t top = 0;
    for (size_t i = 0; i < t->n; i++)
        if (hwloc_bitmap_intersects(t->v[i].nodes, t->cpu_nodes)) {
            top = i;
            break;
        }
    for (size_t i = 0; i < t->n; i++) {
        hwloc_bitmap_t into = i <= top ? t->fast : t->slow;
        hwloc_bitmap_or(into, into, t->v[i].nodes);
    }
}

static void tiers_free(struct tiers *t)
{
    for (size_t i = 0; i < t->n; i++)
        hwloc_bitmap_free(t->v[i].nodes);
    free(t->v);
    hwloc_bitmap_free(t->cpu_nodes);
    hwloc_bitmap_free(t->fast);
    hwloc_bitmap_free(t->slow);
}

/* "node 2" or "nodes 2-3", into a malloc()ed string. */
static char *nodes_named(hwloc_const_bitmap_t set)
{
    char *list = bitmap_list(set);
    char *s = xasprintf("node%s %s", hwloc_bitmap_weight(set) == 1 ? "" : "s", list);
    free(list);
    return s;
}

/*
 * A service that wants its memory in RAM at RAM's latency: a swap policy
 * of its own (swappiness or swap_max: mysql, mariadb, postgresql, redis,
 * memcached) and no opt-in to the slower tiers. Judged by what the profile
 * sets, as every doctor check is.
 */
static bool latency_bound(const struct doc *d)
{
    return doc_swap_sensitive(d) && d->p->placement.tiers != TIERS_ALL;
}

/* The running kernel's major.minor from osrelease, or false. */
static bool kernel_version(const struct doc *d, int *major, int *minor)
{
    char rel[128];
    return doc_rd(d, "/proc/sys/kernel/osrelease", rel, sizeof(rel)) &&
           sscanf(rel, "%d.%d", major, minor) == 2;
}

/* tiers.layout: each tier and its nodes, the slower ones named. */
static void check_layout(struct doc *d, const struct tiers *t, const char *slow)
{
    char *seen = xstrdup("");
    for (size_t i = 0; i < t->n; i++) {
        char *nodes = nodes_named(t->v[i].nodes), *tier = NULL;
        bool slower = hwloc_bitmap_isincluded(t->v[i].nodes, t->slow);
        bool cpuless = !hwloc_bitmap_iszero(t->cpu_nodes) &&
                       !hwloc_bitmap_intersects(t->v[i].nodes, t->cpu_nodes);
        if (t->sysfs)
            tier = xasprintf("memory_tier%ld = %s", t->v[i].id, nodes);
        else
            tier = xasprintf("%s", nodes);
        char *x = xasprintf("%s%s%s%s", seen, *seen ? ", " : "", tier,
                            slower && cpuless ? " (slower, without CPUs)"
                            : slower          ? " (slower)"
                            : cpuless         ? " (without CPUs)"
                                              : "");
        free(seen);
        free(tier);
        free(nodes);
        seen = x;
    }
    const struct profile *p = d->p;
    char *observed = t->sysfs ? xasprintf("%zu memory tiers: %s", t->n, seen)
                              : xasprintf("no memory tiers in sysfs (a kernel before 6.1): "
                                          "demotion leads from the nodes with CPUs to those "
                                          "of memory alone: %s",
                                          seen);
    char *why;
    if (p && p->placement.tiers == TIERS_ALL)
        why = doc_fmt("a lower tier number is faster (DRAM is tier 4); %s is slower memory "
                      "(CXL, NVDIMM), and %s's tiers = all lets its pages come from it once "
                      "the fast tier is full",
                      slow, p->name);
    else if (p)
        why =
            doc_fmt("a lower tier number is faster (DRAM is tier 4); %s is slower memory "
                    "(CXL, NVDIMM): %s's tiers = %s keeps its own allocations off it (its "
                    "memory policy, and its cpuset where enforce holds)",
                    slow, p->name, p->placement.tiers == TIERS_BANDWIDTH ? "bandwidth" : "fastest");
    else
        why = doc_fmt("a lower tier number is faster (DRAM is tier 4); %s is slower memory "
                      "(CXL, NVDIMM): tunerun gives a service pages there only where its "
                      "profile says tiers = all",
                      slow);
    doc_add(d, "tiers", "tiers.layout", SEV_INFO, observed, why, NULL, NULL);
    free(seen);
}

/* What the running kernel makes of a cpuset against demotion, for the warning's why. */
static char *cpuset_clause(const struct doc *d)
{
    int major, minor;
    if (!kernel_version(d, &major, &minor))
        return xstrdup("");
    if (major < 6 || (major == 6 && minor < CGROUP_SPARE))
        return xstrdup(", and on this kernel (before 6.16) no cpuset does either");
    return xstrdup(
        "; this kernel (6.16 or later) spares a memory cgroup whose cgroup v2 cpuset.mems "
        "leaves the slower nodes out, which tunerun's own cpuset is only where the memory "
        "controller is on in it too (a profile with swap_max), and never pages another cgroup "
        "was charged for first");
}

/* tiers.demotion: whether reclaim moves cold pages down a tier, and whose. */
static void check_demotion(struct doc *d, const char *fast, const char *slow, bool on)
{
    const struct profile *p = d->p;
    char *observed =
        doc_fmt("demotion_enabled = %s%s%s%s", on ? "true" : "false", on ? ": reclaim on " : "",
                on ? fast : "", on ? " moves cold pages down" : "");
    if (!on) {
        doc_add(
            d, "tiers", "tiers.demotion", SEV_OK, observed,
            doc_fmt("reclaim swaps out or drops the cold pages of %s; it never moves them to %s",
                    fast, slow),
            NULL, NULL);
        return;
    }
    if (!latency_bound(d)) {
        const char *whose =
            p == NULL ? "; a latency-bound database (a profile with a swap policy of its own) is "
                        "told to turn it off"
            : p->placement.tiers == TIERS_ALL
                ? "; the profile's tiers = all takes pages from the slower tier itself"
                : "; the profile keeps no swap policy of its own, so its cold pages lose little "
                  "there";
        doc_add(d, "tiers", "tiers.demotion", SEV_INFO, observed,
                doc_fmt("under memory pressure the kernel moves the cold pages of every process on "
                        "%s to %s instead of swapping them out or dropping them: the slower tier "
                        "is a cache before swap%s",
                        fast, slow, whose),
                NULL, NULL);
        return;
    }
    char *cpusets = cpuset_clause(d);
    const char *limit = p->memory.swap_max_set && p->memory.swap_max == 0
                            ? "its swap_max = 0 (a page that may not be swapped may still be "
                              "demoted)"
                            : "a swap limit (a page that may not be swapped may still be demoted)";
    doc_add(
        d, "tiers", "tiers.demotion", SEV_WARN, observed,
        doc_fmt(
            "under memory pressure the kernel moves the cold pages of every process on %s to "
            "%s instead of swapping them out or dropping them, %s's too: its memory policy does "
            "not stop it (mm/vmscan.c: demotion ignores mempolicy), nor does %s%s. NUMA "
            "balancing does not promote them back, as it skips memory under the policy "
            "tunerun sets: each demoted page costs %s the slower tier's latency until it is "
            "freed, where its profile's swap policy asks for its memory in RAM",
            fast, slow, p->name, limit, cpusets, p->name),
        doc_fmt("echo false > " DEMOTION),
        doc_fmt("w " DEMOTION " - - - - false in /etc/tmpfiles.d/tunerun-tiers.conf"));
    free(cpusets);
}

/* kernel.numa_balancing's modes, by its bits. */
static const char *balancing_name(long long bal)
{
    switch (bal) {
    case 0:
        return "off";
    case NORMAL_BIT:
        return "normal";
    case TIERING_BIT:
        return "memory tiering";
    case NORMAL_BIT | TIERING_BIT:
        return "normal and memory tiering";
    default:
        return "unknown bits";
    }
}

/*
 * tiers.balancing: what kernel.numa_balancing does between the tiers. The
 * promotion of memory tiering, for a latency-bound service, brings other
 * processes' hot pages into its nodes, and kswapd makes room there; its own
 * demoted pages never come back. Normal balancing alone promotes without
 * tiering's hot-page test and rate limit, and only into free memory.
 */
static void check_balancing(struct doc *d, const char *fast, const char *slow, bool demotion)
{
    long long bal, rate = -1;
    if (!doc_rd_long(d, "/proc/sys/kernel/numa_balancing", &bal))
        return;
    const struct profile *p = d->p;
    const char *who = doc_who(d);
    char limit[96] = "";
    if (bal & TIERING_BIT &&
        doc_rd_long(d, "/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps", &rate))
        snprintf(limit, sizeof(limit), "; promotion at most %lld MB/s per node", rate);
    char *observed =
        doc_fmt("kernel.numa_balancing = %lld (%s)%s", bal, balancing_name(bal), limit);
    /* numa.balancing warns of bit 1 for a one-node profile, with its fix: 0 */
    bool one_node = p && p->placement.nodes == 1;
    if (bal == 0) {
        doc_add(d, "tiers", "tiers.balancing", SEV_OK, observed,
                demotion ? doc_fmt("nothing promotes a demoted page back: it stays on %s until it "
                                   "is freed",
                                   slow)
                         : NULL,
                NULL, NULL);
    } else if (bal & TIERING_BIT) {
        bool bound = p && latency_bound(d);
        char *why = doc_fmt(
            "it promotes pages found hot on %s to %s%s, and has kswapd keep more memory free on "
            "every node to take them (the promotion watermark, above the high one); the pages of "
            "a process whose memory policy tunerun set are neither scanned nor promoted (the "
            "policy lacks MPOL_F_NUMA_BALANCING)%s%s%s",
            slow, fast,
            bal == TIERING_BIT ? " (it unmaps only the slower tier's pages to watch them)" : "",
            bound ? ". On " : "", bound ? who : "",
            !bound     ? ""
            : demotion ? "'s nodes go the hot pages of other processes that run on their CPUs, "
                         "and reclaim there demotes its cold pages to make room, never to come "
                         "back"
                       : "'s nodes go the hot pages of other processes that run on their CPUs, "
                         "and reclaim there makes room, its page cache first");
        doc_add(d, "tiers", "tiers.balancing", SEV_INFO, observed, why,
                bound ? doc_fmt("sysctl -w kernel.numa_balancing=0, where %s comes first on this "
                                "host",
                                who)
                      : NULL,
                bound ? doc_fmt("kernel.numa_balancing = 0 in /etc/sysctl.d/90-tunerun.conf")
                      : NULL);
    } else if (bal == NORMAL_BIT) {
        char *why = doc_fmt(
            "normal balancing alone scans every page, the fast tier's too, and moves a page of %s "
            "to the node whose CPUs touch it only while that node has memory free: without memory "
            "tiering's test of how hot a page is, its rate limit and kswapd making room%s",
            slow,
            one_node ? "; numa.balancing has the fix for a service bound to its node"
                     : "; 3 keeps balancing between the nodes with CPUs and adds it");
        doc_add(d, "tiers", "tiers.balancing", SEV_INFO, observed, why,
                one_node ? NULL : doc_fmt("sysctl -w kernel.numa_balancing=3"),
                one_node ? NULL
                         : doc_fmt("kernel.numa_balancing = 3 in /etc/sysctl.d/90-tunerun.conf"));
    } else {
        doc_add(d, "tiers", "tiers.balancing", SEV_INFO, observed, NULL, NULL, NULL);
    }
}

/* One node's weight for weighted interleave. */
struct weight {
    unsigned long node;
    long long w;
};

static int by_node(const void *a, const void *b)
{
    const struct weight *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

/*
 * tiers.weights: the kernel's weights for weighted interleave (Linux 6.9),
 * the host's, which tunerun never writes.
 */
static void check_weights(struct doc *d)
{
    int error;
    DIR *dir = doc_opendir(d, WEIGHTS_DIR, &error);
    if (dir == NULL)
        return;
    struct weight v[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && n < sizeof(v) / sizeof(v[0])) {
        char *end, path[512];
        if (strncmp(e->d_name, "node", 4) != 0)
            continue;
        unsigned long node = strtoul(e->d_name + 4, &end, 10);
        snprintf(path, sizeof(path), WEIGHTS_DIR "/%s", e->d_name);
        if (end != e->d_name + 4 && *end == '\0' && doc_rd_long(d, path, &v[n].w))
            v[n++].node = node;
    }
    closedir(dir);
    if (n == 0)
        return;
    qsort(v, n, sizeof(v[0]), by_node); /* readdir's order is the directory's */
    char *seen = xstrdup(""), aut[16] = "";
    bool equal = true;
    for (size_t i = 0; i < n; i++) {
        char *x = xasprintf("%s%snode %lu = %lld", seen, i ? ", " : "", v[i].node, v[i].w);
        free(seen);
        seen = x;
        equal &= v[i].w == v[0].w;
    }
    bool automatic = doc_rd(d, WEIGHTS_DIR "/auto", aut, sizeof(aut)) &&
                     (strcmp(aut, "true") == 0 || strcmp(aut, "1") == 0);
    bool weighted = d->p && d->p->placement.memory == MEM_WEIGHTED;
    doc_add(d, "tiers", "tiers.weights", SEV_INFO,
            doc_fmt("weighted interleave: %s%s", seen, automatic ? " (auto: from HMAT)" : ""),
            weighted && equal
                ? doc_fmt("all equal: %s's weighted-interleave spreads its pages evenly, the "
                          "slower tier taking as many as a fast node",
                          d->p->name)
            : weighted
                ? doc_fmt("%s's weighted-interleave spreads its pages in these weights", d->p->name)
                : NULL,
            NULL, NULL);
    free(seen);
}

void doctor_check_tiers(struct doc *d)
{
    struct tiers t = {.cpu_nodes = hwloc_bitmap_alloc(),
                      .fast = hwloc_bitmap_alloc(),
                      .slow = hwloc_bitmap_alloc()};
    char buf[16];
    bool has_demotion = doc_rd(d, DEMOTION, buf, sizeof(buf));
    bool on = has_demotion && strcmp(buf, "true") == 0;
    if (!doc_rd_list(d, "/sys/devices/system/node/has_cpu", t.cpu_nodes))
        hwloc_bitmap_zero(t.cpu_nodes);
    t.sysfs = read_tiers(d, &t);
    /* without memory tiers only demotion (5.15) gives the memory-only nodes a meaning */
    if (!t.sysfs && has_demotion)
        implied_tiers(d, &t);
    split(&t);
    if (hwloc_bitmap_iszero(t.slow) || hwloc_bitmap_iszero(t.fast)) {
        tiers_free(&t);
        return;
    }
    char *fast = nodes_named(t.fast), *slow = nodes_named(t.slow);
    check_layout(d, &t, slow);
    if (has_demotion)
        check_demotion(d, fast, slow, on);
    check_balancing(d, fast, slow, on);
    check_weights(d);
    free(fast);
    free(slow);
    tiers_free(&t);
}
