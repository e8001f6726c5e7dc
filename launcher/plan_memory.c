/*
 * plan_memory.c - phase 4: where the service's memory comes from, and the
 * placement's steps (memory policy, affinity, THP).
 *
 * Each chosen node's own memory, or for a memoryless node the nearest node
 * with memory; then the policy the profile asks for, where `auto` decides
 * between bind, preferred-many and interleave by the expected size
 * (memory_size) against what the nodes hold free.
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t plan_sum_mem(const struct topo *t, hwloc_const_bitmap_t nodes, bool free_only)
{
    uint64_t s = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        if (hwloc_bitmap_isset(nodes, t->nodes[i].os_index))
            s += free_only ? t->nodes[i].mem_free : t->nodes[i].mem_total;
    return s;
}

/*
 * Add to the plan's memory nodes, nearest first to the nodes of its CPUs
 * (then the most free memory, then the lowest number), until they hold
 * `want` or every node with memory is in: the tiers the profile allows
 * first, then slower ones, which the plan warns of unless the profile
 * allows them.
 */
static void grow_memory(struct ctx *c, uint64_t want)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    for (int pass = 0; pass < 2; pass++)
        while (plan_sum_mem(t, pl->mem_nodes, false) < want) {
            int best = -1;
            unsigned best_d = ~0u;
            for (size_t j = 0; j < t->nnodes; j++) {
                if (!t->nodes[j].has_memory ||
                    hwloc_bitmap_isset(pl->mem_nodes, t->nodes[j].os_index) ||
                    (pass == 0 && !plan_tier_allows(c, j)))
                    continue;
                unsigned d = ~0u; /* to the nearest node of its CPUs */
                for (size_t i = 0; i < t->nnodes; i++)
                    if (hwloc_bitmap_isset(pl->nodes, t->nodes[i].os_index) &&
                        topo_distance(t, i, j) < d)
                        d = topo_distance(t, i, j);
                if (best < 0 || d < best_d ||
                    (d == best_d && t->nodes[j].mem_free > t->nodes[best].mem_free)) {
                    best = (int)j;
                    best_d = d;
                }
            }
            if (best < 0)
                break;
            hwloc_bitmap_set(pl->mem_nodes, t->nodes[best].os_index);
            if (pass == 1)
                plan_note_add(pl, NOTE_WARN,
                              "tiers: memory_size needs node %u too, whose memory is slower "
                              "(%s) than the fastest tier's, which is all taken (fix: a smaller "
                              "memory_size, or tiers = all to accept it)",
                              t->nodes[best].os_index, t->nodes[best].speed_why);
        }
}

/*
 * The placed CPUs whose memory is remote: those of a memoryless node, whose
 * memory comes from another, and those of no allowed node. A bind or a note
 * that says "local" must not say it of them.
 */
static void remote_cpus(const struct topo *t, const struct plan *pl, hwloc_bitmap_t out)
{
    hwloc_bitmap_copy(out, pl->cpus);
    for (size_t i = 0; i < t->nnodes; i++) {
        if (!hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index))
            continue;
        hwloc_bitmap_andnot(out, out, t->nodes[i].cpus);
        /* a node that lists another's CPUs as its own is as local to them */
        int k = t->nodes[i].one_locality ? topo_node_index(t, t->nodes[i].shares_cpus_of) : -1;
        if (k >= 0)
            hwloc_bitmap_andnot(out, out, t->nodes[k].cpus);
    }
}

/*
 * What the memory nodes are to the placed CPUs where some are remote from
 * them: "the nearest memory to its CPUs, which is remote for them", or
 * "local for CPUs 8-11 and remote for CPUs 4-7, which have no memory of
 * their own here" (memoryless nodes, no allowed node), or "... whose own
 * nodes it is not bound to" (cpus = all runs them beyond the memory
 * nodes); NULL where the memory is local to them all.
 */
static char *remote_words(const struct topo *t, const struct plan *pl)
{
    hwloc_bitmap_t remote = hwloc_bitmap_alloc(), local = hwloc_bitmap_alloc(),
                   away = hwloc_bitmap_alloc(); /* remote, though their own node has memory */
    remote_cpus(t, pl, remote);
    hwloc_bitmap_andnot(local, pl->cpus, remote);
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].has_memory)
            hwloc_bitmap_or(away, away, t->nodes[i].cpus);
    hwloc_bitmap_and(away, away, remote);
    const char *why = hwloc_bitmap_iszero(away) ? "which have no memory of their own here"
                      : hwloc_bitmap_isequal(away, remote)
                          ? "whose own nodes are not among these"
                          : "whose own nodes are not among these, or have no memory here";
    char *words = NULL;
    if (hwloc_bitmap_iszero(local) && hwloc_bitmap_iszero(away)) {
        words = xstrdup("the nearest memory to its CPUs, which is remote for them");
    } else if (hwloc_bitmap_iszero(local)) {
        words = xasprintf("remote for all its CPUs, %s", why);
    } else if (!hwloc_bitmap_iszero(remote)) {
        char *near = bitmap_list(local), *far = bitmap_list(remote);
        words = xasprintf("local for %s %s and remote for %s %s, %s", plan_cpus_word(local), near,
                          plan_cpus_word(remote), far, why);
        free(near);
        free(far);
    }
    hwloc_bitmap_free(remote);
    hwloc_bitmap_free(local);
    hwloc_bitmap_free(away);
    return words;
}

/* A note on where a chosen node's memory comes from, when not from itself. */
static void note_home(struct ctx *c, size_t i, size_t m)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    const struct topo_node *home = &t->nodes[m];
    unsigned id = t->nodes[i].os_index;
    if (c->p->placement.tiers == TIERS_BANDWIDTH && home->speed == SPEED_BANDWIDTH) {
        plan_note_add(pl, NOTE_INFO,
                      "tiers = bandwidth: node %u's memory comes from node %u, the nearest with "
                      "more bandwidth (%s), which is small: with memory = preferred its pages go "
                      "to the node's own memory once it is full",
                      id, home->os_index, home->speed_why);
        return;
    }
    if (!plan_tier_allows(c, m)) {
        plan_note_add(pl, NOTE_WARN,
                      "tiers: node %u has CPUs but no memory of the fastest tier, nor has any "
                      "node: its memory comes from node %u, which is slower (%s)",
                      id, home->os_index, home->speed_why);
        return;
    }
    /* a slower node nearer by distance, passed over: said, as distance alone would pick it */
    int passed = -1;
    for (size_t j = 0; j < t->nnodes; j++)
        if (t->nodes[j].has_memory && !plan_tier_allows(c, j) &&
            topo_distance(t, i, j) < topo_distance(t, i, m) &&
            (passed < 0 || topo_distance(t, i, j) < topo_distance(t, i, (size_t)passed)))
            passed = (int)j;
    char slower[160] = "";
    if (passed >= 0)
        snprintf(slower, sizeof(slower), "; node %u is nearer (%u) but slower (%s)",
                 t->nodes[passed].os_index, topo_distance(t, i, (size_t)passed),
                 t->nodes[passed].speed_why);
    if (t->distance)
        plan_note_add(pl, NOTE_INFO,
                      "node %u has CPUs but no memory: its memory comes from node %u, the "
                      "nearest with memory%s (distance %u)%s",
                      id, home->os_index, passed >= 0 ? " of the fastest tier" : "",
                      topo_distance(t, i, m), slower);
    else /* an export without one: no distance to cite */
        plan_note_add(pl, NOTE_INFO,
                      "node %u has CPUs but no memory: its memory comes from node %u, the one "
                      "with memory most free (no distance matrix says which is nearest)",
                      id, home->os_index);
}

/*
 * The nodes that list node i's CPUs as their own too (topo.h's
 * shares_cpus_of): one locality, whose memory is as near those CPUs as
 * node i's. Those of an allowed tier join its memory, and the plan says so.
 */
static void add_twins(struct ctx *c, size_t i)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t twins = hwloc_bitmap_alloc();
    for (size_t j = 0; j < t->nnodes; j++)
        if (topo_one_locality(t, j, i) && plan_tier_allows(c, j) &&
            c->p->placement.tiers != TIERS_BANDWIDTH)
            hwloc_bitmap_set(twins, t->nodes[j].os_index);
    if (!hwloc_bitmap_iszero(twins)) {
        hwloc_bitmap_or(pl->mem_nodes, pl->mem_nodes, twins);
        char *list = bitmap_list(twins);
        bool slower = false;
        for (size_t j = 0; j < t->nnodes; j++)
            slower |=
                hwloc_bitmap_isset(twins, t->nodes[j].os_index) && t->nodes[j].speed == SPEED_SLOW;
        plan_note_add(pl, NOTE_INFO,
                      "node%s %s list%s node %u's CPUs as their own too: one locality, so %s "
                      "memory joins node %u's%s",
                      hwloc_bitmap_weight(twins) > 1 ? "s" : "", list,
                      hwloc_bitmap_weight(twins) > 1 ? "" : "s", t->nodes[i].os_index,
                      hwloc_bitmap_weight(twins) > 1 ? "their" : "its", t->nodes[i].os_index,
                      slower ? ", slower as it is (tiers = all)" : "");
        free(list);
    }
    hwloc_bitmap_free(twins);
}

/*
 * What of the machine's memory the tiers leave out, said once: a slower
 * tier's nodes, and the high-bandwidth ones a profile may ask for.
 */
static void note_tiers(struct ctx *c)
{
    const struct topo *t = c->t;
    hwloc_bitmap_t slow = hwloc_bitmap_alloc(), fast = hwloc_bitmap_alloc();
    const char *why_slow = "", *why_fast = "";
    for (size_t j = 0; j < t->nnodes; j++) {
        const struct topo_node *nd = &t->nodes[j];
        if (!nd->has_memory || plan_tier_allows(c, j))
            continue;
        hwloc_bitmap_set(nd->speed == SPEED_SLOW ? slow : fast, nd->os_index);
        *(nd->speed == SPEED_SLOW ? &why_slow : &why_fast) = nd->speed_why;
    }
    char *s = bitmap_list(slow), *f = bitmap_list(fast);
    if (!hwloc_bitmap_iszero(slow))
        plan_note_add(c->pl, NOTE_INFO,
                      "tiers: node%s %s %s slower (%s%s): left out, as %s pages would cost every "
                      "access more (tiers = all lets %s in)",
                      hwloc_bitmap_weight(slow) > 1 ? "s" : "", s,
                      hwloc_bitmap_weight(slow) > 1 ? "are" : "is",
                      hwloc_bitmap_weight(slow) > 1 ? "as " : "", why_slow,
                      hwloc_bitmap_weight(slow) > 1 ? "their" : "its",
                      hwloc_bitmap_weight(slow) > 1 ? "them" : "it");
    if (!hwloc_bitmap_iszero(fast))
        plan_note_add(c->pl, NOTE_INFO,
                      "tiers: node%s %s ha%s more bandwidth but little room (%s%s): left out; "
                      "tiers = bandwidth puts pages there first, for a service that streams "
                      "through memory rather than waits on it",
                      hwloc_bitmap_weight(fast) > 1 ? "s" : "", f,
                      hwloc_bitmap_weight(fast) > 1 ? "ve" : "s",
                      hwloc_bitmap_weight(fast) > 1 ? "as " : "", why_fast);
    free(s);
    free(f);
    hwloc_bitmap_free(slow);
    hwloc_bitmap_free(fast);
}

/*
 * Each chosen node's own memory, or a memoryless one's nearest, of the
 * tiers the profile allows, with the nodes that share its CPUs; where no
 * allowed node owns its CPUs, the cpuset's memory nodes. False (and local
 * memory) where no node with memory is known at all.
 */
static bool memory_homes(struct ctx *c, bool *homeless)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    note_tiers(c);
    for (size_t i = 0; i < t->nnodes; i++) {
        if (!hwloc_bitmap_isset(pl->nodes, t->nodes[i].os_index))
            continue;
        int m = plan_memory_home(c, i);
        if (m < 0)
            continue;
        hwloc_bitmap_set(pl->mem_nodes, t->nodes[m].os_index);
        if ((size_t)m != i)
            note_home(c, i, (size_t)m);
        else
            add_twins(c, i);
    }
    /* no allowed node owns its CPUs: the cpuset's memory nodes are all it may have */
    *homeless = hwloc_bitmap_iszero(pl->nodes);
    for (int pass = 0; pass < 2 && *homeless && hwloc_bitmap_iszero(pl->mem_nodes); pass++)
        for (size_t i = 0; i < t->nnodes; i++)
            if (t->nodes[i].has_memory && (pass == 1 || plan_tier_allows(c, i)))
                hwloc_bitmap_set(pl->mem_nodes, t->nodes[i].os_index);
    if (hwloc_bitmap_iszero(pl->mem_nodes)) {
        pl->mpol = PLAN_MPOL_LOCAL;
        plan_note_add(pl, NOTE_INFO, "memory local: no node with memory is known here");
        return false;
    }
    return true;
}

/*
 * A strict bind, and what it risks where it holds part of the machine: the
 * service swaps or is killed once it outgrows it. Without a size nothing
 * can be checked; that is said, and how to have it checked.
 */
static void choose_bind(struct ctx *c, const char *list, const char *remote)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    pl->mpol = PLAN_MPOL_BIND;
    if (remote)
        plan_note_add(pl, NOTE_INFO, "memory bind %s: every page there, %s", list, remote);
    else if (hwloc_bitmap_weight(pl->mem_nodes) > 1)
        plan_note_add(pl, NOTE_INFO,
                      "memory bind %s: every page on the nodes of its CPUs, never elsewhere", list);
    else
        plan_note_add(pl, NOTE_INFO, "memory bind %s: every page local, no remote NUMA access",
                      list);
    uint64_t bound = plan_sum_mem(t, pl->mem_nodes, false), all = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        all += t->nodes[i].mem_total;
    if (t->memory_known && p->placement.memory_size == 0 && bound < all) {
        plan_note_add(
            pl, NOTE_INFO,
            "memory bind %s holds %.1f GiB of this machine's %.1f GiB, and nothing checks "
            "that the service fits there: with memory_size and memory = auto, it binds "
            "only what fits",
            list, plan_gib(bound), plan_gib(all));
    } else if (t->memory_known && p->placement.memory_size > bound) {
        char w[32], b[32], *at = plan_origin(p->placement.memory_size_at);
        plan_sizes_apart(w, b, sizeof(w), p->placement.memory_size, bound);
        plan_note_add(pl, NOTE_WARN,
                      "memory_size %s (%s) is more than memory bind %s holds (%s): the service "
                      "swaps or is killed once it outgrows it (fix: %s)",
                      w, at, list, b,
                      bound < all
                          ? "memory = auto, which spreads what does not fit, or memory = "
                            "preferred"
                          : "a smaller memory_size, or a bigger machine: the bind holds all "
                            "its memory already");
        free(at);
    }
}

/*
 * memory = auto: bind what fits the nodes' free memory with headroom,
 * prefer them where it fits only their total (a strict bind would swap or
 * OOM), and interleave over the nearest nodes that hold it where it does
 * not fit at all.
 */
static void choose_auto(struct ctx *c, const char *list)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    uint64_t want = p->placement.memory_size;
    uint64_t fr = plan_sum_mem(t, pl->mem_nodes, true),
             total = plan_sum_mem(t, pl->mem_nodes, false);
    /* headroom: 10% or 256 MiB, whichever is more, for page cache and the kernel */
    uint64_t headroom = want / 10 > 256 * MIB ? want / 10 : 256 * MIB;
    if (want == 0) {
        pl->mpol =
            hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY : PLAN_MPOL_PREFERRED;
        plan_note_add(pl, NOTE_INFO,
                      "memory auto -> %s %s: memory_size is not set, so prefer the node%s without "
                      "risking a strict bind",
                      plan_mpol_name(pl->mpol), list,
                      hwloc_bitmap_weight(pl->mem_nodes) > 1 ? "s" : "");
    } else if (!t->memory_known) {
        pl->mpol = PLAN_MPOL_BIND;
        plan_note_add(
            pl, NOTE_INFO,
            "memory auto -> bind %s: how much memory the nodes have is not known here, so "
            "memory_size %.1f GiB is not checked against it",
            list, plan_gib(want));
    } else if (want <= fr && fr - want >= headroom) {
        pl->mpol = PLAN_MPOL_BIND;
        plan_note_add(
            pl, NOTE_INFO,
            "memory auto -> bind %s: memory_size %.1f GiB fits %.1f GiB free with headroom", list,
            plan_gib(want), plan_gib(fr));
    } else if (want <= total) {
        pl->mpol =
            hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY : PLAN_MPOL_PREFERRED;
        bool elsewhere = false; /* memory a preference may spill over to */
        for (size_t i = 0; i < t->nnodes; i++)
            elsewhere |=
                t->nodes[i].has_memory && !hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index);
        plan_note_add(pl, NOTE_INFO,
                      "memory auto -> %s %s: memory_size %.1f GiB plus headroom exceeds %.1f GiB "
                      "free; a strict bind would swap or OOM%s",
                      plan_mpol_name(pl->mpol), list, plan_gib(want), plan_gib(fr),
                      elsewhere ? " while other nodes have memory" : "");
    } else {
        pl->mpol = PLAN_MPOL_INTERLEAVE;
        grow_memory(c, want);
        char *all = bitmap_list(pl->mem_nodes);
        uint64_t grown = plan_sum_mem(t, pl->mem_nodes, false); /* the machine's, if short */
        plan_note_add(pl, NOTE_INFO,
                      "memory auto -> interleave %s: memory_size %.1f GiB is more than the chosen "
                      "nodes hold (%.1f GiB), so spread it evenly over the %s nodes that hold "
                      "it (%.1f GiB%s)",
                      all, plan_gib(want), plan_gib(total), t->distance ? "nearest" : "roomiest",
                      plan_gib(grown),
                      t->distance ? "" : "; no distance matrix says which are nearest");
        if (want > grown) {
            char w[32], g[32], *at = plan_origin(p->placement.memory_size_at);
            plan_sizes_apart(w, g, sizeof(w), want, grown);
            plan_note_add(pl, NOTE_WARN,
                          "memory_size %s (%s) is more than this whole machine holds (%s): the "
                          "service will swap or be killed (fix: a smaller memory_size, or a bigger "
                          "machine)",
                          w, at, g);
            free(at);
        }
        free(all);
    }
}

/*
 * memory = weighted-interleave (Linux 6.9): pages over the memory nodes in
 * the kernel's per-node weights, so that a slower, wider tier adds its
 * bandwidth without taking an even share of the pages. With tiers = all
 * the CPU-less nodes nearest the chosen CPUs join them. The weights are
 * the host's (weights.c): shown, never written. Where the kernel lacks the
 * policy, or the weights are all alike, the plan warns and says the fix;
 * a launch then interleaves evenly (the step says so; --strict refuses).
 */
static void choose_weighted(struct ctx *c)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    for (size_t j = 0; c->p->placement.tiers == TIERS_ALL && j < t->nnodes; j++) {
        if (!t->nodes[j].has_memory || !hwloc_bitmap_iszero(t->nodes[j].cpus) ||
            hwloc_bitmap_isset(pl->mem_nodes, t->nodes[j].os_index))
            continue;
        /* the node whose CPUs it lists, else the nearest node with CPUs */
        int k = t->nodes[j].shares ? topo_node_index(t, t->nodes[j].shares_cpus_of) : -1;
        for (size_t i = 0; !t->nodes[j].shares && i < t->nnodes; i++)
            if (!hwloc_bitmap_iszero(t->nodes[i].cpus) &&
                (k < 0 || topo_distance(t, i, j) < topo_distance(t, (size_t)k, j)))
                k = (int)i;
        if (k >= 0 && hwloc_bitmap_isset(pl->nodes, t->nodes[k].os_index))
            hwloc_bitmap_set(pl->mem_nodes, t->nodes[j].os_index);
    }
    char *list = bitmap_list(pl->mem_nodes);
    const struct plan_weights *w = c->weights;
    pl->mpol = PLAN_MPOL_WEIGHTED_INTERLEAVE;
    if (w == NULL) {
        plan_note_add(pl, NOTE_INFO,
                      "memory weighted-interleave %s: in the kernel's weights, which are the "
                      "host's and not known for another machine",
                      list);
    } else if (!w->supported) {
        pl->mpol = PLAN_MPOL_INTERLEAVE;
        plan_note_add(pl, NOTE_WARN,
                      "memory weighted-interleave %s: this kernel has no weighted interleave "
                      "(MPOL_WEIGHTED_INTERLEAVE, Linux 6.9), so a launch interleaves evenly "
                      "(fix: kernel 6.9 or later)",
                      list);
    } else {
        char shown[512] = "";
        size_t len = 0;
        unsigned first = 0;
        bool alike = true;
        int n;
        hwloc_bitmap_foreach_begin(n, pl->mem_nodes)
        {
            unsigned v = (size_t)n < w->nweights && w->weight[n] ? w->weight[n] : 1;
            alike &= first == 0 || v == first;
            first = first ? first : v;
            if (len < sizeof(shown))
                len += (size_t)snprintf(shown + len, sizeof(shown) - len, "%snode %d: %u",
                                        len ? ", " : "", n, v);
        }
        hwloc_bitmap_foreach_end();
        if (alike && hwloc_bitmap_weight(pl->mem_nodes) > 1)
            plan_note_add(pl, NOTE_WARN,
                          "memory weighted-interleave %s: the kernel's weights are all %u, so "
                          "pages spread evenly, as plain interleave would (fix: a weight by "
                          "bandwidth in /sys/kernel/mm/mempolicy/weighted_interleave/nodeN for "
                          "each, or on Linux 6.16 echo true > .../weighted_interleave/auto; "
                          "host-wide, so tunerun never writes them)",
                          list, first);
        else
            plan_note_add(pl, NOTE_INFO,
                          "memory weighted-interleave %s: pages in the kernel's weights (%s%s; "
                          "host-wide, tunerun never writes them)",
                          list, shown, w->automatic ? ", set by the kernel from HMAT" : "");
    }
    free(list);
}

/* The memory nodes, then the policy the profile asks for, each with its note. */
static void choose_memory(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    bool homeless;
    if (!memory_homes(c, &homeless))
        return;
    enum mem_mode mode = p->placement.memory;
    char *list = bitmap_list(pl->mem_nodes), *remote = remote_words(t, pl);
    if (homeless && mode != MEM_LOCAL)
        plan_note_add(
            pl, NOTE_WARN,
            "memory from node%s %s: the cpuset's memory nodes, none of them its CPUs' own, so "
            "every page is remote for them",
            hwloc_bitmap_weight(pl->mem_nodes) > 1 ? "s" : "", list);
    switch (mode) {
    case MEM_LOCAL:
        /* mem_nodes still says where first touch lands, for ${node_mem} and the JVM */
        pl->mpol = PLAN_MPOL_LOCAL;
        if (!hwloc_bitmap_iszero(pl->nodeless)) /* all its CPUs when homeless */
            plan_note_add(
                pl, NOTE_INFO,
                "memory local: first touch on the node of the touching CPU, or for a CPU of "
                "no allowed node the nearest of %s",
                list);
        else
            plan_note_add(pl, NOTE_INFO,
                          "memory local: first touch on the node of the touching CPU");
        break;
    case MEM_BIND:
        choose_bind(c, list, remote);
        break;
    case MEM_PREFERRED:
        pl->mpol =
            hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY : PLAN_MPOL_PREFERRED;
        if (remote)
            plan_note_add(
                pl, NOTE_INFO,
                "memory preferred %s: pages there first, %s; spill over instead of swapping", list,
                remote);
        else
            plan_note_add(pl, NOTE_INFO,
                          "memory preferred %s: local first, spill over instead of swapping", list);
        break;
    case MEM_INTERLEAVE:
        pl->mpol = PLAN_MPOL_INTERLEAVE;
        if (hwloc_bitmap_weight(pl->mem_nodes) > 1)
            plan_note_add(pl, NOTE_INFO, "memory interleave %s: bandwidth spread over the nodes",
                          list);
        else
            plan_note_add(
                pl, NOTE_INFO,
                "memory interleave %s: one node to spread over, so its pages go there while "
                "it has room",
                list);
        break;
    case MEM_AUTO:
        choose_auto(c, list);
        break;
    case MEM_WEIGHTED:
        choose_weighted(c);
        break;
    }
    free(list);
    free(remote);
}

/*
 * The nodes a plan names are the nodes its CPUs live on. A count smaller
 * than the chosen nodes hold may leave some of them without a CPU: those
 * are dropped before memory is chosen, so nothing binds memory to a node
 * the service does not run on. With cpus = all the CPUs may spread beyond
 * the chosen nodes, while memory stays on the ones chosen.
 */
void plan_settle_nodes(struct ctx *c)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t cpu_nodes = hwloc_bitmap_alloc();
    topo_nodes_of(t, pl->cpus, cpu_nodes);
    topo_nodeless(t, pl->cpus, pl->nodeless);
    if (!hwloc_bitmap_iszero(pl->nodeless) && !hwloc_bitmap_iszero(cpu_nodes)) {
        bool one = hwloc_bitmap_weight(pl->nodeless) == 1;
        char *list = bitmap_list(pl->nodeless);
        plan_note_add(
            pl, NOTE_INFO,
            "%s %s: %s on no allowed node (not among the cpuset's memory nodes), so %s memory "
            "comes from other nodes",
            plan_cpus_word(pl->nodeless), list, one ? "it is" : "they are", one ? "its" : "their");
        free(list);
    }
    bool same = hwloc_bitmap_isequal(cpu_nodes, pl->nodes) && hwloc_bitmap_iszero(pl->nodeless);
    if (c->p->placement.cpus != CPUS_ALL) {
        if (!same && !hwloc_bitmap_iszero(pl->nodes)) {
            char *list = bitmap_list(cpu_nodes);
            plan_note_add(pl, NOTE_INFO, "%s %s: only %s the CPUs asked for",
                          hwloc_bitmap_weight(cpu_nodes) == 1 ? "node" : "nodes", list,
                          hwloc_bitmap_weight(cpu_nodes) == 1 ? "it holds" : "these hold");
            free(list);
        }
        hwloc_bitmap_copy(pl->nodes, cpu_nodes);
        choose_memory(c);
    } else if (c->p->placement.memory == MEM_LOCAL) {
        /* first touch is on the node of each CPU it runs on: those are its memory */
        hwloc_bitmap_copy(pl->nodes, cpu_nodes);
        choose_memory(c);
    } else {
        choose_memory(c);
        hwloc_bitmap_copy(pl->nodes, cpu_nodes);
        if (!same && pl->mpol != PLAN_MPOL_LOCAL) {
            char *mem = bitmap_list(pl->mem_nodes);
            plan_note_add(pl, NOTE_INFO,
                          "cpus = all spreads CPUs beyond the memory nodes (%s): threads elsewhere "
                          "reach their memory remotely",
                          mem);
            free(mem);
        }
    }
    hwloc_bitmap_free(cpu_nodes);
}

void plan_add_placement_steps(struct ctx *c)
{
    struct plan *pl = c->pl;
    static const char *const reason[] = {
        [PLAN_MPOL_LOCAL] = "each page on the node of the CPU that first touches it (or the "
                            "nearest it may use)",
        [PLAN_MPOL_BIND] = "no remote NUMA memory: every page from its own nodes, even when "
                           "they run short",
        [PLAN_MPOL_PREFERRED] = "remote NUMA memory only once its own node is full, without "
                                "the OOM risk of a strict bind",
        [PLAN_MPOL_PREFERRED_MANY] = "remote NUMA memory only once its own nodes are full, "
                                     "without the OOM risk of a strict bind",
        [PLAN_MPOL_INTERLEAVE] = "one node's memory bandwidth or size running out: pages spread "
                                 "over the nodes in turn",
        [PLAN_MPOL_WEIGHTED_INTERLEAVE] = "one node's memory bandwidth running out: pages spread "
                                          "over the nodes in proportion to what each can carry",
    };
    /* where some CPUs have no memory of their own the notes say which */
    const char *why = reason[pl->mpol];
    hwloc_bitmap_t remote = hwloc_bitmap_alloc();
    remote_cpus(c->t, pl, remote);
    bool all = hwloc_bitmap_isequal(remote, pl->cpus), some = !hwloc_bitmap_iszero(remote);
    hwloc_bitmap_free(remote);
    if (pl->mpol == PLAN_MPOL_BIND && some)
        why = all ? "every page from these nodes, even when they run short, and all of it "
                    "remote: its CPUs have no memory of their own here"
                  : "every page from these nodes, even when they run short: local for some of "
                    "its CPUs, remote for the others";
    else if ((pl->mpol == PLAN_MPOL_PREFERRED || pl->mpol == PLAN_MPOL_PREFERRED_MANY) && some)
        why = all ? "pages from these nodes first, other nodes only once they are full, without "
                    "the OOM risk of a strict bind; remote memory for all its CPUs either way"
                  : "pages from these nodes first, other nodes only once they are full, without "
                    "the OOM risk of a strict bind; local for some of its CPUs, remote for the "
                    "others";
    struct plan_step *s = plan_add_step(pl, STEP_MEMPOLICY, xasprintf("%s", why));
    s->u.mempolicy.mode = pl->mpol;
    s->u.mempolicy.nodes = hwloc_bitmap_dup(pl->mem_nodes);
    if (pl->mpol == PLAN_MPOL_LOCAL)
        hwloc_bitmap_zero(s->u.mempolicy.nodes);

    s = plan_add_step(pl, STEP_AFFINITY,
                      c->p->placement.cpus == CPUS_ALL
                          ? xasprintf("its threads run on every CPU it may use (cpus = all), and "
                                      "no other")
                      : hwloc_bitmap_iszero(pl->nodeless)
                          ? xasprintf("its threads stay on the CPUs chosen for it, next to its "
                                      "memory, not wherever the scheduler moves them")
                          : xasprintf("its threads stay on the CPUs chosen for it, not wherever "
                                      "the scheduler moves them"));
    s->u.cpus = hwloc_bitmap_dup(pl->cpus);

    switch (c->p->memory.thp) {
    case THP_MADVISE:
        s = plan_add_step(pl, STEP_THP,
                          xasprintf("huge pages only where the service asks for them (madvise): no "
                                    "2 MiB fault or compaction stall in memory that did not ask"));
        s->u.thp = THP_MADVISE;
        break;
    case THP_NEVER:
        s = plan_add_step(
            pl, STEP_THP,
            xasprintf("no transparent huge pages: no 2 MiB fault or compaction stall, "
                      "and copy-on-write after a fork copies 4 KiB pages, not 2 MiB"));
        s->u.thp = THP_NEVER;
        break;
    case THP_SYSTEM:
        /* tunerun changes nothing, so what its parent set holds, not always the system's */
        if (c->thp_inherited == THP_SYSTEM)
            plan_note_add(pl, NOTE_INFO, "thp: the system-wide mode applies (profile says system)");
        else
            plan_note_add(
                pl, NOTE_INFO, "thp: %s; thp = system leaves that in effect",
                c->thp_inherited == THP_MADVISE
                    ? "madvise, as the parent left tunerun (PR_SET_THP_DISABLE with "
                      "PR_THP_DISABLE_EXCEPT_ADVISED, as a unit's MemoryTHP=madvise does): huge "
                      "pages only where the service asks, as far as the system-wide mode allows"
                    : "never, as the parent left tunerun (PR_SET_THP_DISABLE, as a unit's "
                      "MemoryTHP=disable does): no huge pages, whatever the system-wide mode");
        break;
    }
}
