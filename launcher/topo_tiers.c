/*
 * topo_tiers.c - how fast each node's memory is against the memory next
 * to the CPUs: the same (fast), more bandwidth but small (HBM, KNL's
 * MCDRAM), or slower (a CXL expander, an NVDIMM, a GPU's memory).
 *
 * The memory next to the CPUs is the reference: the nodes with CPUs and
 * memory of their own, where a service runs; without any, the nodes whose
 * kind is DRAM or unknown; without those, every node with memory. A node
 * is judged by the first of these that says anything, most trusted first:
 *
 *  1. The kernel's memory tier (this machine): a tier numbered above the
 *     reference's is slower, one below has more bandwidth. The kernel
 *     computes them from HMAT (and CXL's CDAT) where the firmware gives it.
 *  2. Its kind, as hwloc names it: NVM and SPM (DAX memory: NVDIMMs, CXL's
 *     "specific purpose" memory) and GPUMemory are slower; HBM and MCDRAM
 *     have the bandwidth; DRAM is the reference's kind.
 *  3. HMAT's access latency and bandwidth from its own CPUs: half again
 *     the reference's latency is slower; half again its bandwidth, at no
 *     more latency, is HBM's kind of memory.
 *  4. hwloc's MemoryTier in an export (hwloc numbers tiers by bandwidth,
 *     0 first): a tier above the reference's is slower, below it has more
 *     bandwidth.
 *
 * Nothing here guesses from distances alone: a node far by SLIT is remote,
 * which the planner weighs already, not of another kind.
 */
#include "topo_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool kind_is(const char *subtype, const char *const *kinds)
{
    for (; *kinds; kinds++)
        if (strcasecmp(subtype, *kinds) == 0)
            return true;
    return false;
}

static const char *const slow_kinds[] = {"NVM", "SPM", "GPUMemory", NULL};
static const char *const bandwidth_kinds[] = {"HBM", "MCDRAM", NULL};

/* Whether node i is one the reference is made of, at this level (see above). */
static bool in_reference(const struct topo_node *nd, int level)
{
    if (!nd->has_memory)
        return false;
    if (level == 0)
        return !hwloc_bitmap_iszero(nd->cpus);
    if (level == 1)
        return nd->subtype[0] == '\0' || strcasecmp(nd->subtype, "DRAM") == 0;
    return true;
}

/* What the reference has: its lowest tier of each numbering, best latency and bandwidth. */
struct reference {
    int tier, hwloc_tier;
    unsigned latency, bandwidth;
};

static struct reference reference_of(const struct topo *t)
{
    struct reference r = {-1, -1, 0, 0};
    int level = 0;
    for (; level < 2; level++) {
        size_t found = 0;
        for (size_t i = 0; i < t->nnodes; i++)
            found += in_reference(&t->nodes[i], level);
        if (found)
            break;
    }
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *nd = &t->nodes[i];
        if (!in_reference(nd, level))
            continue;
        int *tier = nd->tier_hwloc ? &r.hwloc_tier : &r.tier;
        if (nd->tier_known && (*tier < 0 || nd->tier < *tier))
            *tier = nd->tier;
        if (nd->latency_ns && (r.latency == 0 || nd->latency_ns < r.latency))
            r.latency = nd->latency_ns;
        if (nd->bandwidth_mibs > r.bandwidth)
            r.bandwidth = nd->bandwidth_mibs;
    }
    return r;
}

static void judge(struct topo_node *nd, const struct reference *r)
{
    nd->speed = SPEED_FAST;
    nd->speed_why[0] = '\0';
    if (!nd->has_memory)
        return;
    if (nd->tier_known && !nd->tier_hwloc && r->tier >= 0) {
        nd->speed = nd->tier > r->tier   ? SPEED_SLOW
                    : nd->tier < r->tier ? SPEED_BANDWIDTH
                                         : SPEED_FAST;
        snprintf(nd->speed_why, sizeof(nd->speed_why), "memory_tier%d", nd->tier);
    } else if (kind_is(nd->subtype, slow_kinds) || kind_is(nd->subtype, bandwidth_kinds)) {
        nd->speed = kind_is(nd->subtype, slow_kinds) ? SPEED_SLOW : SPEED_BANDWIDTH;
        snprintf(nd->speed_why, sizeof(nd->speed_why), "%s", nd->subtype);
    } else if (nd->latency_ns && r->latency && nd->latency_ns * 2 > r->latency * 3) {
        nd->speed = SPEED_SLOW;
        snprintf(nd->speed_why, sizeof(nd->speed_why), "latency %u ns against %u", nd->latency_ns,
                 r->latency);
    } else if (nd->bandwidth_mibs && r->bandwidth && nd->bandwidth_mibs * 2 > r->bandwidth * 3 &&
               (!nd->latency_ns || !r->latency || nd->latency_ns <= r->latency)) {
        nd->speed = SPEED_BANDWIDTH;
        snprintf(nd->speed_why, sizeof(nd->speed_why), "bandwidth %u MiB/s against %u",
                 nd->bandwidth_mibs, r->bandwidth);
    } else if (nd->tier_known && nd->tier_hwloc && r->hwloc_tier >= 0 &&
               nd->tier != r->hwloc_tier) {
        nd->speed = nd->tier > r->hwloc_tier ? SPEED_SLOW : SPEED_BANDWIDTH;
        snprintf(nd->speed_why, sizeof(nd->speed_why), "MemoryTier %d", nd->tier);
    }
}

void topo_classify_tiers(struct topo *t)
{
    struct reference r = reference_of(t);
    t->tiers_known = false;
    for (size_t i = 0; i < t->nnodes; i++) {
        struct topo_node *nd = &t->nodes[i];
        judge(nd, &r);
        t->tiers_known |= nd->tier_known || nd->latency_ns || nd->speed_why[0] ||
                          (nd->subtype[0] && nd->has_memory);
    }
}
