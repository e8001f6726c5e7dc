/*
 * plan_nodes.c - phase 2: which NUMA nodes the service runs on.
 *
 * The nodes that can host a candidate CPU are ranked (rank_by(): apart
 * from what it avoids, where it ran before a restart, memory of their own,
 * the count of CPUs it asks for, near its disk, free memory in eighths,
 * fewest claimed CPUs), and the N best taken; for N > 1 the most compact
 * group by the distance matrix. Every choice leaves a note that says what
 * decided it. `near` (the profile's disk) is looked up by main and only
 * weighed here.
 */
#include "nic.h"
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether node j's memory is one the profile's tiers allow: with `fastest`
 * (the default) the memory next to CPUs and what is alike; with `all`,
 * any; with `bandwidth`, the high-bandwidth nodes and the fast ones.
 */
bool plan_tier_allows(const struct ctx *c, size_t j)
{
    const struct topo_node *nd = &c->t->nodes[j];
    if (!nd->has_memory)
        return false;
    switch (c->p->placement.tiers) {
    case TIERS_ALL:
        return true;
    case TIERS_BANDWIDTH:
        return nd->speed != SPEED_SLOW;
    default:
        return nd->speed == SPEED_FAST;
    }
}

/*
 * Whether node j is a nearer memory for node i's CPUs than node b: the
 * faster kind first, then one that lists them as its own, then by HMAT's
 * latency where both have one and they differ,
 * else by distance, then by free memory. (HMAT gives each node's latency from its own CPUs alone,
 * which still tells a slow node from a fast one.)
 */
static bool nearer_memory(const struct topo *t, size_t i, size_t j, size_t b)
{
    /* where the tiers allow both (tiers = all), the fastest first */
    if (t->nodes[j].speed != t->nodes[b].speed)
        return t->nodes[j].speed == SPEED_FAST ||
               (t->nodes[j].speed == SPEED_BANDWIDTH && t->nodes[b].speed == SPEED_SLOW);
    /* one that lists node i's CPUs as its own is as local as memory gets */
    bool sj = topo_one_locality(t, j, i), sb = topo_one_locality(t, b, i);
    if (sj != sb)
        return sj;
    unsigned lj = t->nodes[j].latency_ns, lb = t->nodes[b].latency_ns;
    if (lj && lb && lj != lb)
        return lj < lb;
    unsigned dj = topo_distance(t, i, j), db = topo_distance(t, i, b);
    if (dj != db)
        return dj < db;
    return t->nodes[j].mem_free > t->nodes[b].mem_free;
}

/*
 * The node a node's memory comes from: itself, or the nearest with memory
 * of a tier the profile allows; where no such node has any, the nearest
 * of the rest (the plan warns). With tiers = bandwidth, the nearest
 * high-bandwidth node first.
 */
int plan_memory_home(const struct ctx *c, size_t i)
{
    const struct topo *t = c->t;
    bool hbm = c->p->placement.tiers == TIERS_BANDWIDTH;
    if (!hbm && plan_tier_allows(c, i))
        return (int)i;
    int best = -1;
    for (int pass = hbm ? 0 : 1; pass < 3 && best < 0; pass++)
        for (size_t j = 0; j < t->nnodes; j++) {
            const struct topo_node *nd = &t->nodes[j];
            bool fits = pass == 0   ? nd->has_memory && nd->speed == SPEED_BANDWIDTH
                        : pass == 1 ? plan_tier_allows(c, j)
                                    : nd->has_memory;
            if (fits && (best < 0 || nearer_memory(t, i, j, (size_t)best)))
                best = (int)j;
        }
    if (hbm && best >= 0 && (size_t)best != i && t->nodes[best].speed != SPEED_BANDWIDTH &&
        plan_tier_allows(c, i))
        return (int)i; /* no HBM at all: its own memory */
    return best;
}

/* The free memory of node i's home, and of the nodes that list its CPUs and join it. */
uint64_t plan_free_for(const struct ctx *c, size_t i)
{
    const struct topo *t = c->t;
    int m = plan_memory_home(c, i);
    if (m < 0)
        return 0;
    uint64_t f = t->nodes[m].mem_free;
    for (size_t j = 0; (size_t)m == i && c->p->placement.tiers != TIERS_BANDWIDTH && j < t->nnodes;
         j++)
        if (topo_one_locality(t, j, i) && plan_tier_allows(c, j))
            f += t->nodes[j].mem_free;
    return f;
}

/*
 * Free memory in eighths of the most a candidate has, rounded: nodes this
 * close count as alike. It is never equal to the byte on a live machine,
 * and compared exactly it would send every service started together to the
 * node that happens to have a few pages more.
 */
static uint64_t free_eighths(const struct ctx *c, size_t i)
{
    return c->free_most ? (plan_free_for(c, i) * 16 + c->free_most) / (2 * c->free_most) : 0;
}

/* What decides between two nodes, in cmp_rank()'s order. */
enum rank_by {
    BY_APART,
    BY_PREVIOUS,
    BY_OWN_MEMORY,
    BY_CPUS,
    BY_NEAR,
    BY_FREE,
    BY_CLAIMED,
    BY_FREE_EXACT,
    BY_INDEX
};

/*
 * Room to spare, which `near` must not trade away: at least half the free
 * memory of the roomiest candidate that no service it keeps apart from
 * holds (and its share of memory_size, when given), and at most half its
 * candidate CPUs claimed by running services. A disk's node that a bound
 * service would fill, or that another instance of it already runs on,
 * costs more than the remote hop to the disk.
 */
static bool roomy(const struct ctx *c, size_t i)
{
    const struct profile *p = c->p;
    uint64_t f = plan_free_for(c, i);
    uint64_t share = p->placement.memory_size / (p->placement.nodes > 1 ? p->placement.nodes : 1);
    return f * 2 >= c->room_most && f >= share &&
           c->claimed_cand[i] * 2 <= hwloc_bitmap_weight(c->node_cand[i]);
}

/* How near a node counts: its distance to the disks, or the farthest when it lacks room. */
static unsigned near_rank(const struct ctx *c, size_t i)
{
    return roomy(c, i) ? c->near[i] : c->near_far;
}

/*
 * Whether node i holds the count of CPUs a one-node profile asks for
 * (cpus = N, nodes = 1); true when it asks for no count.
 */
static bool holds_count(const struct ctx *c, size_t i)
{
    const struct profile *p = c->p;
    return p->placement.nodes != 1 || p->placement.cpus != CPUS_COUNT ||
           plan_counted(c, c->node_cand[i]) >= p->placement.cpus_value;
}

/*
 * Best first: no running service it avoids (or that avoids it), where it
 * ran before a restart, memory of its own (a memoryless node's pages are
 * all remote), the CPUs a one-node count asks for (or another node's
 * would be left for a short count); with `near`, nearest its disks among those with room to
 * spare; most free memory in eighths, fewest CPUs claimed by running
 * services, then the most free memory exactly and the lowest os index.
 * Returns what decided; *order is -1 when x comes first, else 1.
 */
static enum rank_by rank_by(const struct ctx *c, size_t x, size_t y, int *order)
{
    const struct topo *t = c->t;
    bool ax = hwloc_bitmap_isset(c->shunned_nodes, t->nodes[x].os_index),
         ay = hwloc_bitmap_isset(c->shunned_nodes, t->nodes[y].os_index);
    if (ax != ay) {
        *order = ax ? 1 : -1;
        return BY_APART;
    }
    if (c->prev) {
        bool px = hwloc_bitmap_isset(c->prev->nodes, t->nodes[x].os_index),
             py = hwloc_bitmap_isset(c->prev->nodes, t->nodes[y].os_index);
        if (px != py) {
            *order = px ? -1 : 1;
            return BY_PREVIOUS;
        }
    }
    if (t->nodes[x].has_memory != t->nodes[y].has_memory) {
        *order = t->nodes[x].has_memory ? -1 : 1;
        return BY_OWN_MEMORY;
    }
    if (holds_count(c, x) != holds_count(c, y)) {
        *order = holds_count(c, x) ? -1 : 1;
        return BY_CPUS;
    }
    if (c->near && near_rank(c, x) != near_rank(c, y)) {
        *order = near_rank(c, x) < near_rank(c, y) ? -1 : 1;
        return BY_NEAR;
    }
    uint64_t fx = plan_free_for(c, x), fy = plan_free_for(c, y);
    if (free_eighths(c, x) != free_eighths(c, y)) {
        *order = fx > fy ? -1 : 1;
        return BY_FREE;
    }
    if (c->claimed_on[x] != c->claimed_on[y]) {
        *order = c->claimed_on[x] < c->claimed_on[y] ? -1 : 1;
        return BY_CLAIMED;
    }
    if (fx != fy) {
        *order = fx > fy ? -1 : 1;
        return BY_FREE_EXACT;
    }
    *order = t->nodes[x].os_index < t->nodes[y].os_index ? -1 : 1;
    return BY_INDEX;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
    int order;
    rank_by(ctx, *(const size_t *)a, *(const size_t *)b, &order);
    return order;
}

void plan_rank_nodes(struct ctx *c)
{
    const struct topo *t = c->t;
    c->rank = xrealloc(NULL, (t->nnodes ? t->nnodes : 1) * sizeof(size_t));
    c->claimed_on = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(int));
    c->claimed_cand = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(int));
    hwloc_bitmap_t on = hwloc_bitmap_alloc();
    for (size_t i = 0; i < t->nnodes; i++) {
        hwloc_bitmap_and(on, t->nodes[i].cpus, c->claimed);
        c->claimed_on[i] = hwloc_bitmap_weight(on);
        hwloc_bitmap_and(on, on, c->node_cand[i]);
        c->claimed_cand[i] = hwloc_bitmap_weight(on);
    }
    hwloc_bitmap_free(on);
    c->nrank = 0;
    uint64_t most = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        if (!hwloc_bitmap_iszero(c->node_cand[i])) {
            c->rank[c->nrank++] = i;
            uint64_t f = plan_free_for(c, i);
            most = f > most ? f : most;
            if (!hwloc_bitmap_isset(c->shunned_nodes, t->nodes[i].os_index))
                c->room_most = f > c->room_most ? f : c->room_most;
            if (c->near)
                c->near_far = c->near[i] > c->near_far ? c->near[i] : c->near_far;
        }
    c->free_most = most;
    qsort_r(c->rank, c->nrank, sizeof(size_t), cmp_rank, c);
}

/*
 * `near`: a service that fears IO latency runs on the node its disk hangs
 * off, where the controller's interrupts and DMA land. Each node gets its
 * distance to the nearest of the disks' nodes, and nodes rank by it right
 * after keeping apart from other services: a disk on a node without usable
 * CPUs (CPU-less, or outside the cpuset) makes the nearest one best.
 */
void plan_note_near(struct ctx *c, const struct plan_input *in)
{
    const struct topo *t = c->t;
    const char *path = c->p->placement.near;
    if (path == NULL)
        return;
    bool moot = topo_cpu_nodes(t) <= 1; /* nothing to rank: facts.c leaves a launch's alone */
    if (in->near == NULL) {
        plan_note_add(c->pl, NOTE_INFO,
                      t->source != TOPO_HOST
                          ? "near %s: not looked up, the topology is not this machine's"
                          : "near %s: not looked up, with one node to run on and none to choose",
                      path);
        return;
    }

    hwloc_bitmap_t gone = hwloc_bitmap_alloc();
    unsigned *dist = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(unsigned));
    bool known = false;
    unsigned id;
    hwloc_bitmap_foreach_begin(id, in->near->nodes)
    {
        int k = topo_node_index(t, id);
        if (k < 0) {
            hwloc_bitmap_set(gone, id);
            continue;
        }
        for (size_t i = 0; i < t->nnodes; i++) {
            unsigned d = topo_distance(t, i, (size_t)k);
            dist[i] = known && dist[i] < d ? dist[i] : d;
        }
        known = true;
    }
    hwloc_bitmap_foreach_end();
    char *list = bitmap_list(gone);
    if (!known && hwloc_bitmap_iszero(in->near->nodes)) {
        plan_note_add(c->pl, NOTE_INFO, "near: %s; nodes are chosen as without it", in->near->what);
    } else if (!known) {
        plan_note_add(
            c->pl, NOTE_INFO,
            "near: %s, which is not among the allowed nodes here; nodes are chosen as without it",
            in->near->what);
    } else {
        plan_note_add(c->pl, NOTE_INFO, "near: %s%s%s%s", in->near->what,
                      hwloc_bitmap_iszero(gone) ? "" : " (not among the allowed nodes here: ",
                      hwloc_bitmap_iszero(gone) ? "" : list, hwloc_bitmap_iszero(gone) ? "" : ")");
        c->near = dist;
        /* "the disk under /var/lib/mysql", "the NIC of default-route": what the notes name */
        bool nic = nic_spec(path);
        c->near_path = xasprintf("%s %s", nic ? "the NIC of" : "the disk under", path);
        c->near_noun = nic ? "the NIC" : "the disk";
        c->near_nodes = in->near->nodes;
    }
    if (moot && t->source == TOPO_HOST)
        plan_note_add(
            c->pl, NOTE_INFO,
            "near %s: a launch here does not look it up, with one node to run on and none "
            "to choose",
            path);
    if (c->near == NULL)
        free(dist);
    free(list);
    hwloc_bitmap_free(gone);
}

/*
 * Why node n, chosen, is none its disks hang off: what the best ranked of
 * those lost on (rank_by()'s rule), or that none can host its CPUs. NULL
 * when the machine shows none of them.
 */
static char *why_not_near(const struct ctx *c, size_t n)
{
    const struct topo *t = c->t;
    for (size_t r = 0; r < c->nrank; r++) {
        size_t k = c->rank[r];
        unsigned id = t->nodes[k].os_index;
        if (!hwloc_bitmap_isset(c->near_nodes, id))
            continue;
        int order;
        enum rank_by by = rank_by(c, n, k, &order);
        if (by >= BY_NEAR && !roomy(c, k)) /* it may tie with the farthest, and lose later */
            by = BY_NEAR;
        switch (by) {
        case BY_APART:
            return xasprintf("node %u, which %s hangs off, holds %s", id, c->near_noun,
                             c->shunned_names);
        case BY_PREVIOUS:
            return xasprintf("it ran elsewhere before it was restarted");
        case BY_OWN_MEMORY:
            return xasprintf("node %u, which %s hangs off, has no memory of its own", id,
                             c->near_noun);
        case BY_CPUS:
            return xasprintf("node %u, which %s hangs off, has fewer than the %u CPUs asked "
                             "for",
                             id, c->near_noun, c->p->placement.cpus_value);
        case BY_NEAR:
            return xasprintf("node %u, which %s hangs off, lacks room to spare: %.1f GiB "
                             "free against the roomiest's %.1f GiB, %d of its %d candidate CPUs "
                             "claimed",
                             id, c->near_noun, plan_gib(plan_free_for(c, k)),
                             plan_gib(c->room_most), c->claimed_cand[k],
                             hwloc_bitmap_weight(c->node_cand[k]));
        default: /* n is as near as k: another disk's node, or a rule after nearness */
            return NULL;
        }
    }
    unsigned id;
    hwloc_bitmap_foreach_begin(id, c->near_nodes)
    {
        if (topo_node_index(t, id) >= 0)
            return xasprintf("node %u, which %s hangs off, has no usable CPU", id, c->near_noun);
    }
    hwloc_bitmap_foreach_end();
    return NULL;
}

/* Why the best ranked node won over the next one, in cmp_rank()'s terms. */
static void note_node_choice(struct ctx *c, size_t n)
{
    const struct topo *t = c->t;
    unsigned id = t->nodes[n].os_index;
    if (c->nrank == 1) {
        plan_note_add(c->pl, NOTE_INFO, "node %u: the only node with usable CPUs", id);
        return;
    }
    /*
     * What decided is what beat the closest candidate: the last rule that
     * told them apart. Where the most alike ones tie up to fewest claimed
     * CPUs, some may lose on exact free memory and others on their number.
     */
    size_t r = n;
    enum rank_by by = BY_APART;
    bool exact = false, index = false;
    for (size_t k = 0; k < c->nrank; k++) {
        int order;
        if (c->rank[k] == n)
            continue;
        enum rank_by b = rank_by(c, n, c->rank[k], &order);
        exact |= b == BY_FREE_EXACT;
        index |= b == BY_INDEX;
        if (r == n || b > by) {
            r = c->rank[k];
            by = b;
        }
    }
    uint64_t fn = plan_free_for(c, n);
    switch (by) {
    case BY_APART:
        plan_note_add(c->pl, NOTE_INFO, "node %u: no service it keeps apart from runs there", id);
        break;
    case BY_NEAR:
        if (hwloc_bitmap_isset(c->near_nodes, id))
            plan_note_add(c->pl, NOTE_INFO, "node %u: %s hangs off it", id, c->near_path);
        else
            plan_note_add(c->pl, NOTE_INFO,
                          "node %u: the nearest with room to spare to %s (distance %u)", id,
                          c->near_path, c->near[n]);
        break;
    case BY_PREVIOUS:
        plan_note_add(c->pl, NOTE_INFO, "node %u: where this service ran before it was restarted",
                      id);
        break;
    case BY_OWN_MEMORY:
        plan_note_add(
            c->pl, NOTE_INFO,
            "node %u: memory of its own (node %u has none, so its pages would all be remote)", id,
            t->nodes[r].os_index);
        break;
    case BY_CPUS:
        plan_note_add(c->pl, NOTE_INFO, "node %u: it has the %u CPUs asked for (node %u has %u)",
                      id, c->p->placement.cpus_value, t->nodes[r].os_index,
                      plan_counted(c, c->node_cand[r]));
        break;
    case BY_FREE:
        plan_note_add(c->pl, NOTE_INFO,
                      "node %u: most free memory (%.1f GiB) of %zu candidate nodes", id,
                      plan_gib(fn), c->nrank);
        break;
    case BY_CLAIMED:
        plan_note_add(
            c->pl, NOTE_INFO,
            "node %u: about as much free memory as node %u (%.1f GiB), and fewer of its CPUs "
            "claimed by running services (%d)",
            id, t->nodes[r].os_index, plan_gib(fn), c->claimed_on[n]);
        break;
    case BY_FREE_EXACT:
    case BY_INDEX: {
        char free_text[40] = "memory unknown"; /* an export without sizes */
        if (t->memory_known)
            snprintf(free_text, sizeof(free_text), "%.1f GiB free", plan_gib(fn));
        plan_note_add(c->pl, NOTE_INFO,
                      "node %u: the candidates are alike (%s, %d CPU%s claimed): the %s", id,
                      free_text, c->claimed_on[n], c->claimed_on[n] == 1 ? "" : "s",
                      exact && index ? "most free memory to the byte, then the lowest number"
                      : exact        ? "most free memory to the byte"
                                     : "lowest number");
        break;
    }
    }
}

/* Whether every pair of candidate nodes is as far apart as every other. */
static bool flat_distances(const struct ctx *c)
{
    if (c->nrank < 2)
        return false;
    unsigned d = topo_distance(c->t, c->rank[0], c->rank[1]);
    for (size_t a = 0; a < c->nrank; a++)
        for (size_t b = a + 1; b < c->nrank; b++)
            if (topo_distance(c->t, c->rank[a], c->rank[b]) != d)
                return false;
    return true;
}

/* Both ways: a matrix may be asymmetric, and each node's threads use the other's memory. */
static unsigned long round_trip(const struct topo *t, size_t a, size_t b)
{
    return (unsigned long)topo_distance(t, a, b) + topo_distance(t, b, a);
}

/* What tells groups apart, most important first. */
struct group_cost {
    unsigned long apart;   /* members holding a service it keeps apart from */
    unsigned long trips;   /* round trips between members */
    unsigned long memless; /* members without memory of their own (pages all remote) */
    unsigned long worst;   /* the worst place in the ranking (free memory, claims, near) */
    unsigned long places;  /* the members' places in it, added up */
};

static bool group_cheaper(const struct group_cost *a, const struct group_cost *b)
{
    return a->apart != b->apart       ? a->apart < b->apart
           : a->trips != b->trips     ? a->trips < b->trips
           : a->memless != b->memless ? a->memless < b->memless
           : a->worst != b->worst     ? a->worst < b->worst
                                      : a->places < b->places;
}

/*
 * Greedy compact group: from each seed, add the node that costs the group
 * least in group_cost's terms (a node apart first, then the round trips to
 * the members so far, then memory of its own, then its place); of these
 * groups, the cheapest, where a group's place is its worst member's,
 * then its members' added up. For two nodes this is the closest pair among those
 * no service it keeps apart from holds. O(nodes^2 x want): the round trips
 * to the group grow one member at a time.
 */
static void choose_group(struct ctx *c, size_t want, size_t *out)
{
    const struct topo *t = c->t;
    size_t n = c->nrank;
    struct group_cost best = {~0UL, ~0UL, ~0UL, ~0UL, ~0UL};
    size_t *group = xcalloc(want, sizeof(size_t));
    bool *in = xcalloc(n, sizeof(bool));
    /* by place in the ranking: what each node costs as a member, its round trips to the group */
    struct group_cost *one = xcalloc(n, sizeof(*one));
    for (size_t k = 0; k < n; k++) {
        const struct topo_node *nd = &t->nodes[c->rank[k]];
        one[k] = (struct group_cost){hwloc_bitmap_isset(c->shunned_nodes, nd->os_index), 0,
                                     !nd->has_memory, k, k};
    }
    for (size_t s = 0; s < n; s++) {
        memset(in, 0, n * sizeof(bool));
        for (size_t j = 0; j < n; j++)
            one[j].trips = 0;
        struct group_cost g = {0, 0, 0, 0, 0};
        for (size_t m = 0, k = s; m < want; m++) {
            for (size_t j = 0; m > 0 && j < n; j++)
                if (!in[j] && (in[k] || group_cheaper(&one[j], &one[k])))
                    k = j;
            in[k] = true;
            group[m] = c->rank[k];
            g.apart += one[k].apart;
            g.trips += one[k].trips;
            g.memless += one[k].memless;
            g.worst = k > g.worst ? k : g.worst;
            g.places += k;
            for (size_t j = 0; j < n; j++)
                if (!in[j])
                    one[j].trips += round_trip(t, c->rank[k], c->rank[j]);
        }
        if (group_cheaper(&g, &best)) {
            best = g;
            memcpy(out, group, want * sizeof(size_t));
        }
    }
    free(group);
    free(in);
    free(one);
}

/* Whether the first `want` ranked nodes are exactly where it ran before (they rank first when
 * free). */
static bool ranks_previous(const struct ctx *c, size_t want)
{
    if ((size_t)hwloc_bitmap_weight(c->prev->nodes) != want)
        return false;
    for (size_t k = 0; k < want; k++)
        if (!hwloc_bitmap_isset(c->prev->nodes, c->t->nodes[c->rank[k]].os_index))
            return false;
    return true;
}

/*
 * What became of `near`: nothing to decide where every node is taken or
 * all are as near; a group that leaves the nearest node out; a node chosen
 * that no disk hangs off, and why the disks' own lost.
 */
static void note_near_outcome(const struct ctx *c, const size_t *chosen, size_t want)
{
    size_t best = c->rank[0];
    bool alike = true;
    for (size_t k = 1; k < c->nrank; k++) {
        alike &= c->near[c->rank[k]] == c->near[best];
        if (c->near[c->rank[k]] < c->near[best])
            best = c->rank[k];
    }
    if (c->nrank > 1 && want == c->nrank) {
        plan_note_add(c->pl, NOTE_INFO,
                      "near decides nothing: it takes every node that can host its CPUs");
    } else if (c->nrank > 1 && alike) {
        plan_note_add(c->pl, NOTE_INFO, "near decides nothing: every candidate node is as near %s",
                      c->near_path);
    } else if (want > 1) {
        bool in = false;
        for (size_t k = 0; k < want; k++)
            in |= c->near[chosen[k]] == c->near[best];
        /* in group_cost's order: what kept the group off it */
        unsigned id = c->t->nodes[best].os_index;
        bool by_distance = c->t->distance && !flat_distances(c);
        if (!in && hwloc_bitmap_isset(c->shunned_nodes, id))
            plan_note_add(c->pl, NOTE_INFO,
                          "near: the group of %zu leaves out node %u, the nearest to %s: "
                          "a service it keeps apart from runs there",
                          want, id, c->near_path);
        else if (!in)
            plan_note_add(c->pl, NOTE_INFO,
                          "near: the group of %zu leaves out node %u, the nearest to %s: "
                          "%s%s",
                          want, id, c->near_path,
                          by_distance ? "the closest group by the distance matrix comes first"
                                      : "the best ranked group comes first",
                          c->t->nodes[best].has_memory ? "" : ", and it has no memory of its own");
    } else if (want == 1 && !hwloc_bitmap_isset(c->near_nodes, c->t->nodes[chosen[0]].os_index)) {
        char *why = why_not_near(c, chosen[0]);
        if (why)
            plan_note_add(c->pl, NOTE_INFO, "near: %s", why);
        free(why);
    }
}

void plan_choose_nodes(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    size_t want = p->placement.nodes ? p->placement.nodes : c->nrank;
    if (want > c->nrank) {
        char *at = plan_origin(p->placement.nodes_at);
        plan_note_add(pl, NOTE_WARN,
                      "nodes = %zu (%s), but only %zu can host its CPUs here; using %zu", want, at,
                      c->nrank, c->nrank);
        free(at);
        want = c->nrank;
    }
    size_t *chosen = xrealloc(NULL, (want ? want : 1) * sizeof(size_t));
    if (want == c->nrank)
        memcpy(chosen, c->rank, want * sizeof(size_t));
    else if (c->prev && ranks_previous(c, want))
        memcpy(chosen, c->rank, want * sizeof(size_t)); /* its nodes before the restart */
    else if (want == 1)
        chosen[0] = c->rank[0];
    else
        choose_group(c, want, chosen);

    for (size_t k = 0; k < want; k++)
        hwloc_bitmap_set(pl->nodes, t->nodes[chosen[k]].os_index);

    if (p->placement.nodes != 0 && p->placement.cpus == CPUS_ALL &&
        p->placement.memory == MEM_LOCAL) {
        plan_note_add(
            pl, NOTE_INFO,
            "nodes = %u decides nothing with cpus = all and memory = local: it runs on every "
            "candidate CPU, and its memory is on the nodes of those that touch it",
            p->placement.nodes);
    } else if (p->placement.nodes == 0) {
        if (want == 1)
            plan_note_add(pl, NOTE_INFO, "nodes: the only one that can host CPUs here");
        else
            plan_note_add(pl, NOTE_INFO, "nodes: all %zu that can host CPUs here", want);
    } else if (c->prev && hwloc_bitmap_isincluded(pl->nodes, c->prev->nodes)) {
        char *list = bitmap_list(pl->nodes);
        plan_note_add(pl, NOTE_INFO, "node%s %s: where this service ran before it was restarted",
                      want == 1 ? "" : "s", list);
        free(list);
    } else if (want == 1) {
        note_node_choice(c, chosen[0]);
    } else if (want > 1) {
        char *list = bitmap_list(pl->nodes);
        bool apart = c->shunned_names && !hwloc_bitmap_intersects(pl->nodes, c->shunned_nodes);
        bool flat = t->distance && flat_distances(c);
        plan_note_add(pl, NOTE_INFO, "nodes %s: the closest group of %zu%s%s%s%s", list, want,
                      apart ? " none of whose nodes holds " : "", apart ? c->shunned_names : "",
                      apart && t->distance && !flat ? "," : "",
                      !t->distance ? " (no distance matrix: the best ranked)"
                      : flat       ? " (the distance matrix puts them all alike: the best ranked)"
                                   : " by the distance matrix");
        free(list);
    }
    if (c->near)
        note_near_outcome(c, chosen, want);
    free(chosen);
}
