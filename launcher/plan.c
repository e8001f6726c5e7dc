/*
 * plan.c - profile + topology -> plan. Pure: no syscalls, no hwloc topology.
 *
 * The phases, in order:
 *   1. candidates: allowed online CPUs within the inherited affinity; tunerun
 *      never widens what its parent gave it.
 *   2. nodes: rank the nodes that can host CPUs (rank_by(): apart from
 *      what it avoids, where it ran before a restart, memory of their own,
 *      near its disk, free memory in eighths, fewest claimed CPUs) and take
 *      the N best; for N > 1 take the most compact group by the distance
 *      matrix.
 *   3. CPUs: all of the chosen nodes' candidates, a count or a percentage,
 *      whole cores first (on a hybrid machine, of the fastest kind first),
 *      optionally one PU per core.
 *   4. memory: each chosen node's own memory, or for a memoryless node the
 *      nearest node with memory; then the policy, `auto` deciding between
 *      bind, preferred-many and interleave by the expected size.
 *   5. steps, in the order they are applied: rlimits, oom score, memory
 *      policy, affinity, THP, environment (MALLOC_ARENA_MAX and the JVM's
 *      options derived from the placement), then the swap policy's cgroup,
 *      which main enters last, after running shared pools have yielded
 *      their CPUs and just before it drops privileges and executes.
 */
#include "plan.h"
#include "util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)

static void note(struct plan *pl, enum note_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct plan *pl, enum note_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    pl->notes = xrealloc(pl->notes, (pl->nnotes + 1) * sizeof(*pl->notes));
    pl->notes[pl->nnotes++] = (struct plan_note){level, s};
    if (level == NOTE_WARN)
        pl->degraded = true;
}

static struct plan_step *add_step(struct plan *pl, enum step_type type, char *why)
{
    pl->steps = xrealloc(pl->steps, (pl->nsteps + 1) * sizeof(*pl->steps));
    struct plan_step *s = &pl->steps[pl->nsteps++];
    memset(s, 0, sizeof(*s));
    s->type = type;
    s->why = why;
    return s;
}

static char *origin_str(struct origin at)
{
    if (at.line > 0)
        return xasprintf("%s:%d", at.file, at.line);
    if (at.file)
        return xasprintf("%s", at.file);
    return xasprintf("default");
}

const char *plan_mpol_name(enum plan_mpol m)
{
    static const char *const names[] = {"local", "bind", "preferred", "preferred-many",
                                        "interleave"};
    return names[m];
}

void plan_step_name(const struct plan_step *s, char *buf, size_t n)
{
    switch (s->type) {
    case STEP_RLIMIT:
        snprintf(buf, n, "rlimit %s", rlimit_name(s->u.rlimit.resource));
        break;
    case STEP_OOM_SCORE_ADJ:
        snprintf(buf, n, "oom_score_adj");
        break;
    case STEP_MEMPOLICY:
        snprintf(buf, n, "mempolicy");
        break;
    case STEP_AFFINITY:
        snprintf(buf, n, "affinity");
        break;
    case STEP_THP:
        snprintf(buf, n, "thp");
        break;
    case STEP_CGROUP:
        snprintf(buf, n, "cgroup");
        break;
    case STEP_SETENV:
        snprintf(buf, n, "env %s", s->u.env.name);
        break;
    }
}

void plan_step_value(const struct plan_step *s, char *buf, size_t n)
{
    char a[24], b[24], *list = NULL;
    switch (s->type) {
    case STEP_RLIMIT:
        rlim_str(a, sizeof(a), s->u.rlimit.soft);
        rlim_str(b, sizeof(b), s->u.rlimit.hard);
        snprintf(buf, n, "%s:%s", a, b);
        break;
    case STEP_OOM_SCORE_ADJ:
        snprintf(buf, n, "%d", s->u.oom_score_adj);
        break;
    case STEP_MEMPOLICY:
        list = bitmap_list(s->u.mempolicy.nodes);
        if (s->u.mempolicy.mode == PLAN_MPOL_LOCAL)
            snprintf(buf, n, "local");
        else
            snprintf(buf, n, "%s %s", plan_mpol_name(s->u.mempolicy.mode), list ? list : "");
        break;
    case STEP_AFFINITY:
        list = bitmap_list(s->u.cpus);
        snprintf(buf, n, "cpus %s", list ? list : "");
        break;
    case STEP_THP:
        snprintf(buf, n, "%s", thp_mode_name(s->u.thp));
        break;
    case STEP_CGROUP:
        if (s->u.cgroup.swappiness >= 0)
            snprintf(buf, n, "memory.swappiness=%d", s->u.cgroup.swappiness);
        else if (s->u.cgroup.swap_max == UINT64_MAX)
            snprintf(buf, n, "memory.swap.max=max");
        else
            snprintf(buf, n, "memory.swap.max=%llu", (unsigned long long)s->u.cgroup.swap_max);
        break;
    case STEP_SETENV:
        snprintf(buf, n, "%s", s->u.env.value);
        break;
    }
    free(list);
}

static const char *getenv_in(char *const *env, const char *name)
{
    size_t len = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
            return *env + len + 1;
    return NULL;
}

static double gib(uint64_t bytes)
{
    return (double)bytes / (double)GIB;
}

/*
 * "64.0 GiB" and "63.9 GiB" for a size that exceeds another: in MiB, then
 * KiB, then bytes where a coarser unit would print them alike ("64.0 GiB
 * is more than 64.0 GiB").
 */
static void sizes_apart(char *a, char *b, size_t n, uint64_t x, uint64_t y)
{
    static const struct {
        uint64_t unit;
        const char *name;
    } units[] = {{MIB, "MiB"}, {1024, "KiB"}, {1, "bytes"}};
    snprintf(a, n, "%.1f GiB", gib(x));
    snprintf(b, n, "%.1f GiB", gib(y));
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && strcmp(a, b) == 0 && x != y; i++) {
        snprintf(a, n, "%llu %s", (unsigned long long)(x / units[i].unit), units[i].name);
        snprintf(b, n, "%llu %s", (unsigned long long)(y / units[i].unit), units[i].name);
    }
}

/* "CPU 3" or "CPUs 0-3", as notes name a set. */
static const char *cpus_word(hwloc_const_bitmap_t set)
{
    return hwloc_bitmap_weight(set) == 1 ? "CPU" : "CPUs";
}

/* ---- phase 2: nodes ------------------------------------------------------ */

struct ctx {
    const struct profile *p;
    const struct topo *t;
    struct plan *pl;
    hwloc_bitmap_t cand;       /* candidate CPUs */
    hwloc_bitmap_t *node_cand; /* per node index: its candidate CPUs */
    size_t *rank;              /* eligible node indexes, best first */
    size_t nrank;
    uint64_t free_most; /* the most free memory of a candidate node (rank_nodes()) */
    /*
     * Running shared services this one must not share CPUs with: those it
     * avoids (or that avoid it), and every shared one when this one is
     * exclusive. Kept apart by nodes, then by cores; failing both, they
     * yield CPUs to it (phase 3b).
     */
    hwloc_bitmap_t shunned;       /* their CPUs */
    hwloc_bitmap_t shunned_nodes; /* and their nodes (os indexes) */
    bool *conflict;               /* per claim: one of them */
    bool *yields;                 /* per claim: one of them that can give CPUs up to this one */
    bool shrinking;               /* none of the pool is free of them: they yield */
    hwloc_bitmap_t claimed;       /* CPUs of every running service */
    int *claimed_on;              /* per node index: how many of its CPUs are claimed */
    int *claimed_cand;            /* ... and how many of its candidate CPUs */
    char *shunned_names;          /* for notes: "nginx" or "nginx, mysql" */
    long nr_open;                 /* plan_input's */
    const struct rlimit *fixed_limits; /* plan_input's */
    enum thp_mode thp_inherited;       /* plan_input's */
    const struct claim *claims;
    size_t nclaims;
    const struct claim *prev; /* the placement this launch had before, when free now */
    const struct cgroup *cgroup;
    unsigned *near;        /* per node index: its distance to the nearest of `near`'s disks */
    unsigned near_far;     /* the farthest a candidate node is, where room is short */
    uint64_t room_most;    /* the most free memory of a candidate no service it avoids holds */
    const char *near_path; /* the profile's near, when near is known */
    hwloc_const_bitmap_t near_nodes; /* the nodes its disks hang off (os indexes) */
};

/* The node a node's memory comes from: itself, or the nearest with memory. */
static int memory_home(const struct topo *t, size_t i)
{
    if (t->nodes[i].has_memory)
        return (int)i;
    int best = -1;
    for (size_t j = 0; j < t->nnodes; j++) {
        if (!t->nodes[j].has_memory)
            continue;
        if (best < 0)
            best = (int)j;
        else {
            unsigned dj = topo_distance(t, i, j), db = topo_distance(t, i, (size_t)best);
            if (dj < db || (dj == db && t->nodes[j].mem_free > t->nodes[best].mem_free))
                best = (int)j;
        }
    }
    return best;
}

static uint64_t free_for(const struct topo *t, size_t i)
{
    int m = memory_home(t, i);
    return m < 0 ? 0 : t->nodes[m].mem_free;
}

/*
 * Free memory in eighths of the most a candidate has, rounded: nodes this
 * close count as alike. It is never equal to the byte on a live machine,
 * and compared exactly it would send every service started together to the
 * node that happens to have a few pages more.
 */
static uint64_t free_eighths(const struct ctx *c, size_t i)
{
    return c->free_most ? (free_for(c->t, i) * 16 + c->free_most) / (2 * c->free_most) : 0;
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
    uint64_t f = free_for(c->t, i);
    uint64_t share = p->placement.memory_size / (p->placement.nodes > 1 ? p->placement.nodes : 1);
    return f * 2 >= c->room_most && f >= share &&
           c->claimed_cand[i] * 2 <= hwloc_bitmap_weight(c->node_cand[i]);
}

/* How near a node counts: its distance to the disks, or the farthest when it lacks room. */
static unsigned near_rank(const struct ctx *c, size_t i)
{
    return roomy(c, i) ? c->near[i] : c->near_far;
}

static unsigned counted(const struct ctx *c, hwloc_const_bitmap_t set);

/*
 * Whether node i holds the count of CPUs a one-node profile asks for
 * (cpus = N, nodes = 1); true when it asks for no count.
 */
static bool holds_count(const struct ctx *c, size_t i)
{
    const struct profile *p = c->p;
    return p->placement.nodes != 1 || p->placement.cpus != CPUS_COUNT ||
           counted(c, c->node_cand[i]) >= p->placement.cpus_value;
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
    uint64_t fx = free_for(t, x), fy = free_for(t, y);
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

static void rank_nodes(struct ctx *c)
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
            uint64_t f = free_for(t, i);
            most = f > most ? f : most;
            if (!hwloc_bitmap_isset(c->shunned_nodes, t->nodes[i].os_index))
                c->room_most = f > c->room_most ? f : c->room_most;
            if (c->near)
                c->near_far = c->near[i] > c->near_far ? c->near[i] : c->near_far;
        }
    c->free_most = most;
    qsort_r(c->rank, c->nrank, sizeof(size_t), cmp_rank, c);
}

/* ---- phase 1b: running services ----------------------------------------- */

static bool names_in(const char *name, char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

/* avoid is symmetric: either side naming the other keeps them apart. */
static bool at_odds(const struct profile *p, const struct claim *k)
{
    return names_in(k->profile, p->placement.avoid, p->placement.navoid) ||
           (p->name && names_in(p->name, k->avoid, k->navoid));
}

bool plan_depends_on(const struct profile *p, const struct claim *k)
{
    return k->exclusive || p->placement.exclusive || at_odds(p, k);
}

/* Whether `name` is one of the ", "-separated names (never a part of one: sql in mysql). */
static bool name_listed(const char *names, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = names; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len;
        p += strspn(p, ", ");
    }
    return false;
}

/*
 * Exclusive claims are hard: their CPUs leave the candidates, unless
 * nothing would be left, which shares and warns. Shared services this one
 * conflicts with (avoid, either way; or this one is exclusive) are soft:
 * they rank nodes, then separate by cores, and where neither is possible
 * they yield CPUs, as Kubernetes' static CPU manager shrinks its shared
 * pool for an exclusive container.
 */
static void note_claims(struct ctx *c, const struct plan_input *in)
{
    const struct profile *p = c->p;
    c->shunned = hwloc_bitmap_alloc();
    c->shunned_nodes = hwloc_bitmap_alloc();
    c->claimed = hwloc_bitmap_alloc();
    c->claims = in->claims;
    c->nclaims = in->nclaims;
    c->conflict = xcalloc(in->nclaims ? in->nclaims : 1, sizeof(bool));
    c->yields = xcalloc(in->nclaims ? in->nclaims : 1, sizeof(bool));
    if (!in->registry) {
        /* on this machine the profile asked for them, and a launch would not honour them */
        if ((p->placement.navoid || p->placement.exclusive) && c->t->source == TOPO_HOST)
            note(c->pl, NOTE_WARN,
                 "avoid/exclusive: no state directory, so running services are unknown and "
                 "these are not enforced");
        else if (p->placement.navoid || p->placement.exclusive)
            note(c->pl, NOTE_INFO,
                 "avoid/exclusive: running services are known only on this machine; not "
                 "enforced in this plan");
        return;
    }
    hwloc_bitmap_t held = hwloc_bitmap_alloc();
    for (size_t i = 0; i < in->nclaims; i++) {
        const struct claim *k = &in->claims[i];
        hwloc_bitmap_or(c->claimed, c->claimed, k->cpus);
        if (k->exclusive) {
            hwloc_bitmap_or(held, held, k->cpus);
        } else if (at_odds(p, k) || p->placement.exclusive) {
            c->conflict[i] = true;
            /* a shared pool (cpus = all) gives CPUs up to a placed service, never to another pool
             */
            c->yields[i] = k->pool && p->placement.cpus != CPUS_ALL;
            hwloc_bitmap_or(c->shunned, c->shunned, k->cpus);
            hwloc_bitmap_or(c->shunned_nodes, c->shunned_nodes, k->nodes);
            if (!name_listed(c->shunned_names, k->profile)) {
                char *names = c->shunned_names ? xasprintf("%s, %s", c->shunned_names, k->profile)
                                               : xstrdup(k->profile);
                free(c->shunned_names);
                c->shunned_names = names;
            }
        }
    }
    if (hwloc_bitmap_intersects(held, c->cand)) {
        char *list = bitmap_list(held);
        if (hwloc_bitmap_isincluded(c->cand, held)) {
            note(c->pl, NOTE_WARN,
                 "every candidate CPU is claimed exclusively by running services (%s %s); "
                 "sharing them",
                 cpus_word(held), list);
        } else {
            hwloc_bitmap_andnot(c->cand, c->cand, held);
            bool one = hwloc_bitmap_weight(held) == 1;
            note(c->pl, NOTE_INFO, "%s %s %s claimed exclusively by running services; not using %s",
                 cpus_word(held), list, one ? "is" : "are", one ? "it" : "them");
        }
        free(list);
    }
    hwloc_bitmap_free(held);
    if (in->nclaims == 0 && (p->placement.navoid || p->placement.exclusive))
        note(c->pl, NOTE_INFO, "avoid/exclusive: no running service to keep apart from");
}

/*
 * A restarted service gets back the placement it had, when that is still
 * free: every CPU still a candidate, and no conflicting service there now.
 */
static void note_previous(struct ctx *c, const struct claim *prev)
{
    if (prev == NULL)
        return;
    char *list = bitmap_list(prev->cpus);
    bool one = hwloc_bitmap_weight(prev->cpus) == 1;
    /* nodes none: it ran where no allowed node owns a CPU, which only its CPUs can say again */
    hwloc_bitmap_t nodeless = hwloc_bitmap_alloc();
    topo_nodeless(c->t, prev->cpus, nodeless);
    bool placed = !hwloc_bitmap_iszero(prev->nodes) || hwloc_bitmap_isequal(nodeless, prev->cpus);
    hwloc_bitmap_free(nodeless);
    if (hwloc_bitmap_isincluded(prev->cpus, c->cand) &&
        !hwloc_bitmap_intersects(prev->cpus, c->shunned) && placed) {
        c->prev = prev;
        /* a pool or a whole node takes what it may use now, not what it had kept */
        enum cpus_mode m = c->p->placement.cpus;
        note(c->pl, NOTE_INFO, "restarted: it ran on %s %s before, and %s free%s",
             cpus_word(prev->cpus), list, one ? "it is" : "they are",
             m == CPUS_ALL    ? "; with cpus = all it takes every CPU it may use again"
             : m == CPUS_NODE ? "; with cpus = node it takes the whole of the nodes it gets, its "
                                "own first"
                              : "");
    } else {
        note(c->pl, NOTE_INFO,
             "restarted: it ran on %s %s before, but %s taken or gone now; placing it afresh",
             cpus_word(prev->cpus), list, one ? "it is" : "they are");
    }
    free(list);
}

/*
 * `near`: a service that fears IO latency runs on the node its disk hangs
 * off, where the controller's interrupts and DMA land. Each node gets its
 * distance to the nearest of the disks' nodes, and nodes rank by it right
 * after keeping apart from other services: a disk on a node without usable
 * CPUs (CPU-less, or outside the cpuset) makes the nearest one best.
 */
static void note_near(struct ctx *c, const struct plan_input *in)
{
    const struct topo *t = c->t;
    const char *path = c->p->placement.near;
    if (path == NULL)
        return;
    if (in->near == NULL) {
        note(c->pl, NOTE_INFO, "near %s: not looked up, the topology is not this machine's", path);
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
        note(c->pl, NOTE_INFO, "near: %s; nodes are chosen as without it", in->near->what);
    } else if (!known) {
        note(c->pl, NOTE_INFO,
             "near: %s, which is not among the allowed nodes here; nodes are chosen as without it",
             in->near->what);
    } else {
        note(c->pl, NOTE_INFO, "near: %s%s%s%s", in->near->what,
             hwloc_bitmap_iszero(gone) ? "" : " (not among the allowed nodes here: ",
             hwloc_bitmap_iszero(gone) ? "" : list, hwloc_bitmap_iszero(gone) ? "" : ")");
        c->near = dist;
        c->near_path = path;
        c->near_nodes = in->near->nodes;
    }
    if (c->near == NULL)
        free(dist);
    free(list);
    hwloc_bitmap_free(gone);
}

/*
 * The cores of claim k among `take` that it keeps when it yields: its last
 * core there (of the slowest kind, on a hybrid machine), when it would
 * otherwise be left with no CPU at all.
 */
static void reserve_last_core(const struct ctx *c, const struct claim *k, hwloc_bitmap_t take)
{
    if (!hwloc_bitmap_isincluded(k->cpus, take))
        return;
    hwloc_bitmap_t mine = hwloc_bitmap_alloc(), slow = hwloc_bitmap_alloc();
    hwloc_bitmap_and(mine, k->cpus, take);
    int last = hwloc_bitmap_last(mine);
    for (size_t i = c->t->nkinds; i-- > 0;) {
        hwloc_bitmap_and(slow, mine, c->t->kinds[i].cpus);
        if (!hwloc_bitmap_iszero(slow)) {
            last = hwloc_bitmap_last(slow);
            break;
        }
    }
    hwloc_bitmap_free(slow);
    hwloc_bitmap_clr(take, (unsigned)last);
    for (size_t i = 0; i < c->t->ncores; i++)
        if (hwloc_bitmap_isset(c->t->cores[i], (unsigned)last)) {
            hwloc_bitmap_and(mine, mine, c->t->cores[i]);
            hwloc_bitmap_andnot(take, take, mine);
        }
    hwloc_bitmap_free(mine);
}

/* Keep one CPU of each core in `set` (below: smt = no). */
static void drop_smt_siblings(const struct topo *t, hwloc_bitmap_t set);

/* CPUs of a set as the profile counts them: one per core with smt = no. */
static unsigned counted(const struct ctx *c, hwloc_const_bitmap_t set)
{
    hwloc_bitmap_t p = hwloc_bitmap_dup(set);
    if (!c->p->placement.smt)
        drop_smt_siblings(c->t, p);
    unsigned n = (unsigned)hwloc_bitmap_weight(p);
    hwloc_bitmap_free(p);
    return n;
}

/* How many CPUs of pool the profile asks for (as choose_cpus() counts them). */
static unsigned wanted(const struct ctx *c, hwloc_const_bitmap_t pool)
{
    unsigned have = counted(c, pool);
    if (c->p->placement.cpus == CPUS_COUNT)
        return c->p->placement.cpus_value;
    if (c->p->placement.cpus == CPUS_PERCENT)
        return (have * c->p->placement.cpus_value + 99) / 100;
    return have;
}

/*
 * The candidates a placement draws its CPUs from: the chosen nodes' (all of
 * them with cpus = all, or when no allowed node owns any candidate).
 */
static void cpu_pool(const struct ctx *c, hwloc_bitmap_t pool)
{
    hwloc_bitmap_zero(pool);
    if (c->p->placement.cpus == CPUS_ALL || c->nrank == 0)
        hwloc_bitmap_copy(pool, c->cand);
    else
        for (size_t i = 0; i < c->t->nnodes; i++)
            if (hwloc_bitmap_isset(c->pl->nodes, c->t->nodes[i].os_index))
                hwloc_bitmap_or(pool, pool, c->node_cand[i]);
}

static void restrict_candidates(struct ctx *c, hwloc_const_bitmap_t to)
{
    hwloc_bitmap_and(c->cand, c->cand, to);
    for (size_t i = 0; i < c->t->nnodes; i++)
        hwloc_bitmap_and(c->node_cand[i], c->node_cand[i], to);
}

/*
 * Where the chosen CPUs meet a conflicting service's: keep off its cores
 * when what is left covers what the profile asks for. Else a shared pool
 * there yields its CPUs (keeping a core); a service that does not yield is
 * kept off if any CPU remains, and shared with a warning if none does.
 */
static void separate_by_cores(struct ctx *c)
{
    hwloc_bitmap_t pool = hwloc_bitmap_alloc(), rest = hwloc_bitmap_alloc();
    cpu_pool(c, pool);
    hwloc_bitmap_andnot(rest, pool, c->shunned);
    if (!hwloc_bitmap_intersects(pool, c->shunned)) {
        hwloc_bitmap_free(pool);
        hwloc_bitmap_free(rest);
        return; /* apart already */
    }
    /* what it could have if the pools here yielded: all but the others' CPUs and a core each */
    hwloc_bitmap_t take = hwloc_bitmap_dup(pool);
    bool pools = false;
    for (size_t i = 0; i < c->nclaims; i++)
        if (c->conflict[i] && !c->yields[i])
            hwloc_bitmap_andnot(take, take, c->claims[i].cpus);
    for (size_t i = 0; i < c->nclaims; i++)
        if (c->yields[i] && hwloc_bitmap_intersects(c->claims[i].cpus, pool)) {
            pools = true;
            reserve_last_core(c, &c->claims[i], take);
        }
    if (pools && counted(c, rest) < wanted(c, pool) && counted(c, take) > counted(c, rest)) {
        c->shrinking = true;
        restrict_candidates(c, take);
    } else if (!hwloc_bitmap_iszero(rest)) {
        char *list = bitmap_list(rest);
        note(c->pl, NOTE_INFO, "%s runs on these nodes too; keeping apart by cores: %s %s",
             c->shunned_names, cpus_word(rest), list);
        free(list);
        restrict_candidates(c, rest);
    } else {
        note(c->pl, NOTE_WARN,
             "no CPU here is free of %s, which this profile keeps apart from, and it "
             "cannot yield any; sharing its CPUs",
             c->shunned_names);
    }
    hwloc_bitmap_free(take);
    hwloc_bitmap_free(pool);
    hwloc_bitmap_free(rest);
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
            return xasprintf("node %u, which the disk hangs off, holds %s", id, c->shunned_names);
        case BY_PREVIOUS:
            return xasprintf("it ran elsewhere before it was restarted");
        case BY_OWN_MEMORY:
            return xasprintf("node %u, which the disk hangs off, has no memory of its own", id);
        case BY_CPUS:
            return xasprintf("node %u, which the disk hangs off, has fewer than the %u CPUs asked "
                             "for",
                             id, c->p->placement.cpus_value);
        case BY_NEAR:
            return xasprintf("node %u, which the disk hangs off, lacks room to spare: %.1f GiB "
                             "free against the roomiest's %.1f GiB, %d of its %d candidate CPUs "
                             "claimed",
                             id, gib(free_for(t, k)), gib(c->room_most), c->claimed_cand[k],
                             hwloc_bitmap_weight(c->node_cand[k]));
        default: /* n is as near as k: another disk's node, or a rule after nearness */
            return NULL;
        }
    }
    unsigned id;
    hwloc_bitmap_foreach_begin(id, c->near_nodes)
    {
        if (topo_node_index(t, id) >= 0)
            return xasprintf("node %u, which the disk hangs off, has no usable CPU", id);
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
        note(c->pl, NOTE_INFO, "node %u: the only node with usable CPUs", id);
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
    uint64_t fn = free_for(t, n);
    switch (by) {
    case BY_APART:
        note(c->pl, NOTE_INFO, "node %u: no service it keeps apart from runs there", id);
        break;
    case BY_NEAR:
        if (hwloc_bitmap_isset(c->near_nodes, id))
            note(c->pl, NOTE_INFO, "node %u: the disk under %s hangs off it", id, c->near_path);
        else
            note(c->pl, NOTE_INFO,
                 "node %u: the nearest with room to spare to the disk under %s (distance %u)", id,
                 c->near_path, c->near[n]);
        break;
    case BY_PREVIOUS:
        note(c->pl, NOTE_INFO, "node %u: where this service ran before it was restarted", id);
        break;
    case BY_OWN_MEMORY:
        note(c->pl, NOTE_INFO,
             "node %u: memory of its own (node %u has none, so its pages would all be remote)", id,
             t->nodes[r].os_index);
        break;
    case BY_CPUS:
        note(c->pl, NOTE_INFO, "node %u: it has the %u CPUs asked for (node %u has %u)", id,
             c->p->placement.cpus_value, t->nodes[r].os_index, counted(c, c->node_cand[r]));
        break;
    case BY_FREE:
        note(c->pl, NOTE_INFO, "node %u: most free memory (%.1f GiB) of %zu candidate nodes", id,
             gib(fn), c->nrank);
        break;
    case BY_CLAIMED:
        note(c->pl, NOTE_INFO,
             "node %u: about as much free memory as node %u (%.1f GiB), and fewer of its CPUs "
             "claimed by running services (%d)",
             id, t->nodes[r].os_index, gib(fn), c->claimed_on[n]);
        break;
    case BY_FREE_EXACT:
    case BY_INDEX: {
        char free_text[40] = "memory unknown"; /* an export without sizes */
        if (t->memory_known)
            snprintf(free_text, sizeof(free_text), "%.1f GiB free", gib(fn));
        note(c->pl, NOTE_INFO, "node %u: the candidates are alike (%s, %d CPU%s claimed): the %s",
             id, free_text, c->claimed_on[n], c->claimed_on[n] == 1 ? "" : "s",
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
        note(c->pl, NOTE_INFO, "near decides nothing: it takes every node that can host its CPUs");
    } else if (c->nrank > 1 && alike) {
        note(c->pl, NOTE_INFO,
             "near decides nothing: every candidate node is as near the disk under %s",
             c->near_path);
    } else if (want > 1) {
        bool in = false;
        for (size_t k = 0; k < want; k++)
            in |= c->near[chosen[k]] == c->near[best];
        /* in group_cost's order: what kept the group off it */
        unsigned id = c->t->nodes[best].os_index;
        bool by_distance = c->t->distance && !flat_distances(c);
        if (!in && hwloc_bitmap_isset(c->shunned_nodes, id))
            note(c->pl, NOTE_INFO,
                 "near: the group of %zu leaves out node %u, the nearest to the disk under %s: "
                 "a service it keeps apart from runs there",
                 want, id, c->near_path);
        else if (!in)
            note(c->pl, NOTE_INFO,
                 "near: the group of %zu leaves out node %u, the nearest to the disk under %s: "
                 "%s%s",
                 want, id, c->near_path,
                 by_distance ? "the closest group by the distance matrix comes first"
                             : "the best ranked group comes first",
                 c->t->nodes[best].has_memory ? "" : ", and it has no memory of its own");
    } else if (want == 1 && !hwloc_bitmap_isset(c->near_nodes, c->t->nodes[chosen[0]].os_index)) {
        char *why = why_not_near(c, chosen[0]);
        if (why)
            note(c->pl, NOTE_INFO, "near: %s", why);
        free(why);
    }
}

static void choose_nodes(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    size_t want = p->placement.nodes ? p->placement.nodes : c->nrank;
    if (want > c->nrank) {
        char *at = origin_str(p->placement.nodes_at);
        note(pl, NOTE_WARN, "nodes = %zu (%s), but only %zu can host its CPUs here; using %zu",
             want, at, c->nrank, c->nrank);
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
        note(pl, NOTE_INFO,
             "nodes = %u decides nothing with cpus = all and memory = local: it runs on every "
             "candidate CPU, and its memory is on the nodes of those that touch it",
             p->placement.nodes);
    } else if (p->placement.nodes == 0) {
        if (want == 1)
            note(pl, NOTE_INFO, "nodes: the only one that can host CPUs here");
        else
            note(pl, NOTE_INFO, "nodes: all %zu that can host CPUs here", want);
    } else if (c->prev && hwloc_bitmap_isincluded(pl->nodes, c->prev->nodes)) {
        char *list = bitmap_list(pl->nodes);
        note(pl, NOTE_INFO, "node%s %s: where this service ran before it was restarted",
             want == 1 ? "" : "s", list);
        free(list);
    } else if (want == 1) {
        note_node_choice(c, chosen[0]);
    } else if (want > 1) {
        char *list = bitmap_list(pl->nodes);
        bool apart = c->shunned_names && !hwloc_bitmap_intersects(pl->nodes, c->shunned_nodes);
        bool flat = t->distance && flat_distances(c);
        note(pl, NOTE_INFO, "nodes %s: the closest group of %zu%s%s%s%s", list, want,
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

/* ---- phase 3: CPUs -------------------------------------------------------- */

/* Keep one PU per core: the first allowed one. */
static void drop_smt_siblings(const struct topo *t, hwloc_bitmap_t set)
{
    for (size_t i = 0; i < t->ncores; i++) {
        hwloc_bitmap_t in = hwloc_bitmap_alloc();
        hwloc_bitmap_and(in, t->cores[i], set);
        int first = hwloc_bitmap_first(in);
        if (first >= 0) {
            hwloc_bitmap_andnot(set, set, in);
            hwloc_bitmap_set(set, (unsigned)first);
        }
        hwloc_bitmap_free(in);
    }
}

/*
 * Whether some allowed PU of core i is neither a candidate nor taken
 * already: the inherited affinity left it out, or a running service holds
 * it. Such a core is shared with whatever runs there. `whole` is the
 * candidates before smt = no kept one PU per core, which splits them all
 * alike.
 */
static bool split_core(const struct topo *t, size_t i, hwloc_const_bitmap_t whole,
                       hwloc_const_bitmap_t out)
{
    hwloc_bitmap_t rest = hwloc_bitmap_dup(t->cores[i]);
    hwloc_bitmap_and(rest, rest, t->cpus);
    hwloc_bitmap_andnot(rest, rest, whole);
    hwloc_bitmap_andnot(rest, rest, out);
    bool split = !hwloc_bitmap_iszero(rest);
    hwloc_bitmap_free(rest);
    return split;
}

/*
 * Add up to n PUs of pool not yet in out; how many. Cores are taken with
 * all their PUs in pool, in core order: first the cores no one else
 * shares, as long as each fits what is still wanted, then the split ones
 * (a taskset or another service took part of them) that fit, so that a
 * count whole cores meet leaves the halves to others. What is left, fewer
 * than the next core offers, comes from a split core where there is one,
 * and leaves whole cores whole; else from that next core, as ever.
 */
static unsigned take_cores(const struct topo *t, hwloc_const_bitmap_t pool,
                           hwloc_const_bitmap_t whole, unsigned n, hwloc_bitmap_t out)
{
    unsigned got = 0;
    size_t next = t->ncores; /* the first unsplit core that did not fit */
    bool *split = xcalloc(t->ncores ? t->ncores : 1, sizeof(*split));
    for (size_t i = 0; i < t->ncores; i++)
        split[i] = split_core(t, i, whole, out);
    hwloc_bitmap_t in = hwloc_bitmap_alloc();
    for (int pass = 0; pass < 2; pass++) /* unsplit, then split */
        for (size_t i = 0; i < t->ncores && got < n; i++) {
            if (split[i] != (pass == 1))
                continue;
            hwloc_bitmap_and(in, t->cores[i], pool);
            hwloc_bitmap_andnot(in, in, out);
            unsigned w = (unsigned)hwloc_bitmap_weight(in);
            if (w > 0 && w <= n - got) {
                hwloc_bitmap_or(out, out, in);
                got += w;
            } else if (w > 0 && pass == 0) {
                next = i; /* core order holds: no unsplit core after it comes first */
                break;
            }
        }
    /* every core left offers more than is still wanted */
    size_t from = next;
    for (size_t i = 0; i < t->ncores && got < n && from == next; i++) {
        hwloc_bitmap_and(in, t->cores[i], pool);
        hwloc_bitmap_andnot(in, in, out);
        if (split[i] && !hwloc_bitmap_iszero(in))
            from = i;
    }
    if (got < n && from < t->ncores) {
        hwloc_bitmap_and(in, t->cores[from], pool);
        hwloc_bitmap_andnot(in, in, out);
        for (int pu = hwloc_bitmap_first(in); pu >= 0 && got < n; pu = hwloc_bitmap_next(in, pu)) {
            hwloc_bitmap_set(out, (unsigned)pu);
            got++;
        }
    }
    free(split);
    /* PUs that belong to no core object (some XMLs): take them in order. */
    int pu;
    hwloc_bitmap_foreach_begin(pu, pool)
    {
        if (got < n && !hwloc_bitmap_isset(out, (unsigned)pu)) {
            bool in_core = false;
            for (size_t i = 0; i < t->ncores && !in_core; i++)
                in_core = hwloc_bitmap_isset(t->cores[i], (unsigned)pu);
            if (!in_core) {
                hwloc_bitmap_set(out, (unsigned)pu);
                got++;
            }
        }
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_free(in);
    return got;
}

/*
 * How many running services hold each CPU, by PU index up to the last of
 * t->cpus and its cores (all a plan may take); NULL when none holds any.
 */
static unsigned *holders(const struct ctx *c)
{
    int last = hwloc_bitmap_last(c->t->cpus);
    for (size_t i = 0; i < c->t->ncores; i++) {
        int core_last = hwloc_bitmap_last(c->t->cores[i]);
        last = core_last > last ? core_last : last;
    }
    if (last < 0 || !hwloc_bitmap_intersects(c->claimed, c->t->cpus))
        return NULL;
    unsigned *held = xcalloc((size_t)last + 1, sizeof(*held));
    for (size_t i = 0; i < c->nclaims; i++) {
        int pu;
        hwloc_bitmap_foreach_begin(pu, c->claims[i].cpus)
        {
            if (pu > last)
                break;
            held[pu]++;
        }
        hwloc_bitmap_foreach_end();
    }
    return held;
}

/*
 * Each level costs two passes over the cores: a thousand services holding
 * CPUs as many ways would cost a launch most of a second, under the
 * registry's lock.
 */
#define LEAST_HELD_LEVELS 8

/*
 * take_cores() from what the fewest running services hold (held[], by PU;
 * NULL: none) first: level by level, the cores none of whose PUs is held
 * more often, then the PUs, then any of pool. Services that share CPUs (a
 * count each, none exclusive) spread over a node, a CPU each in turn,
 * instead of piling onto its first cores. The lowest LEAST_HELD_LEVELS
 * levels are told apart, the rest taken together.
 */
static unsigned take_least_held(const struct topo *t, hwloc_const_bitmap_t pool,
                                hwloc_const_bitmap_t whole, const unsigned *held, unsigned n,
                                hwloc_bitmap_t out)
{
    unsigned got = 0, levels = 0;
    hwloc_bitmap_t pus = hwloc_bitmap_alloc(), cores = hwloc_bitmap_alloc();
    for (unsigned level = 0; held && got < n && levels++ < LEAST_HELD_LEVELS;) {
        unsigned next = UINT_MAX; /* the next level a PU of pool is held at */
        int pu;
        hwloc_bitmap_zero(pus);
        hwloc_bitmap_foreach_begin(pu, pool)
        {
            if (held[pu] <= level)
                hwloc_bitmap_set(pus, (unsigned)pu);
            else if (held[pu] < next)
                next = held[pu];
        }
        hwloc_bitmap_foreach_end();
        hwloc_bitmap_copy(cores, pus);
        for (size_t i = 0; i < t->ncores; i++) {
            hwloc_bitmap_foreach_begin(pu, t->cores[i])
            {
                if (held[pu] > level) {
                    hwloc_bitmap_andnot(cores, cores, t->cores[i]);
                    break;
                }
            }
            hwloc_bitmap_foreach_end();
        }
        got += take_cores(t, cores, whole, n - got, out);
        if (got < n)
            got += take_cores(t, pus, whole, n - got, out);
        if (next == UINT_MAX)
            break; /* every PU of pool was in this level */
        level = next;
    }
    if (got < n)
        got += take_cores(t, pool, whole, n - got, out);
    hwloc_bitmap_free(cores);
    hwloc_bitmap_free(pus);
    return got;
}

/*
 * Add up to n PUs of pool to out: on a hybrid machine the fastest kind of
 * core first (a service asks for a number of CPUs to get work done, and an
 * efficiency core does less of it), within a kind those the fewest running
 * services hold first (take_least_held()), and all of a core's PUs
 * together, in core order. True when pool held more than one kind and
 * more than n PUs, so that the kinds decided.
 */
static bool take_compact(const struct topo *t, hwloc_const_bitmap_t pool,
                         hwloc_const_bitmap_t whole, const unsigned *held, unsigned n,
                         hwloc_bitmap_t out)
{
    unsigned got = 0, kinds = 0;
    hwloc_bitmap_t part = hwloc_bitmap_alloc();
    for (size_t k = 0; k < t->nkinds; k++) {
        hwloc_bitmap_and(part, pool, t->kinds[k].cpus);
        kinds += !hwloc_bitmap_iszero(part);
        if (got < n)
            got += take_least_held(t, part, whole, held, n - got, out);
    }
    hwloc_bitmap_free(part);
    if (got < n)
        take_least_held(t, pool, whole, held, n - got, out);
    return kinds > 1 && (int)n < hwloc_bitmap_weight(pool); /* taking all, kinds decide nothing */
}

/*
 * How many of `want` CPUs each chosen node gives, by node index: in
 * proportion to its candidate CPUs in pool, the seats left over by
 * rounding down going to the largest remainders, the first node on a tie.
 * Rounding each share up instead let the first nodes take the whole count
 * and left the last ones without a CPU (4 of 3 nodes came out 2, 2, 0).
 */
static unsigned *spread(const struct topo *t, hwloc_const_bitmap_t nodes, hwloc_const_bitmap_t pool,
                        hwloc_bitmap_t *node_cand, unsigned want)
{
    unsigned *share = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*share));
    uint64_t *has = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*has)), total = 0, given = 0;
    hwloc_bitmap_t part = hwloc_bitmap_alloc();
    for (size_t i = 0; i < t->nnodes; i++)
        if (hwloc_bitmap_isset(nodes, t->nodes[i].os_index)) {
            hwloc_bitmap_and(part, pool, node_cand[i]);
            total += has[i] = (uint64_t)hwloc_bitmap_weight(part);
        }
    hwloc_bitmap_free(part);
    for (size_t i = 0; i < t->nnodes && total > 0; i++) {
        share[i] = (unsigned)((uint64_t)want * has[i] / total);
        given += share[i];
    }
    bool *extra = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*extra));
    for (; given < want && total > 0; given++) {
        size_t best = t->nnodes;
        for (size_t i = 0; i < t->nnodes; i++)
            if (!extra[i] && share[i] < has[i] &&
                (best == t->nnodes ||
                 (uint64_t)want * has[i] % total > (uint64_t)want * has[best] % total))
                best = i;
        if (best == t->nnodes)
            break; /* fewer candidates than wanted: the caller takes the rest from pool */
        share[best]++;
        extra[best] = true;
    }
    free(extra);
    free(has);
    return share;
}

/* "16 IntelCore, 4 IntelAtom": how many CPUs of set are of each kind; NULL without kinds. */
static char *kinds_word(const struct topo *t, hwloc_const_bitmap_t set)
{
    char *text = NULL;
    hwloc_bitmap_t in = hwloc_bitmap_alloc();
    for (size_t k = 0; k < t->nkinds; k++) {
        hwloc_bitmap_and(in, set, t->kinds[k].cpus);
        int w = hwloc_bitmap_weight(in);
        if (w > 0) {
            char *more =
                xasprintf("%s%s%d %s", text ? text : "", text ? ", " : "", w, t->kinds[k].label);
            free(text);
            text = more;
        }
    }
    hwloc_bitmap_free(in);
    return text;
}

static void choose_cpus(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t pool = hwloc_bitmap_alloc();
    cpu_pool(c, pool);
    hwloc_bitmap_t whole = hwloc_bitmap_dup(pool); /* what splits a core is not ours */
    if (!p->placement.smt)
        drop_smt_siblings(t, pool);
    unsigned have = (unsigned)hwloc_bitmap_weight(pool), want = wanted(c, pool);
    if (want == 0)
        want = 1;
    if (want > have) {
        char *at = origin_str(p->placement.cpus_at);
        note(pl, NOTE_WARN, "cpus = %u (%s), but only %u %s available; using %u", want, at, have,
             have == 1 ? "is" : "are", have);
        free(at);
        want = have;
    }

    bool by_kind = false, fewest = false; /* the least held were taken (take_least_held()) */
    if (want == have) {
        hwloc_bitmap_copy(pl->cpus, pool);
    } else if (c->prev && hwloc_bitmap_isincluded(c->prev->cpus, pool) &&
               hwloc_bitmap_weight(c->prev->cpus) == (int)want) {
        hwloc_bitmap_copy(pl->cpus, c->prev->cpus); /* as before the restart */
    } else {
        unsigned *share = spread(t, pl->nodes, pool, c->node_cand, want), *held = holders(c);
        hwloc_bitmap_t part = hwloc_bitmap_alloc();
        for (size_t i = 0; i < t->nnodes; i++) {
            hwloc_bitmap_and(part, pool, c->node_cand[i]);
            if (share[i] > 0)
                by_kind |= take_compact(t, part, whole, held, share[i], pl->cpus);
        }
        hwloc_bitmap_free(part);
        free(share);
        int short_by = (int)want - hwloc_bitmap_weight(pl->cpus);
        if (short_by > 0) /* rounding left some out */
            by_kind |= take_compact(t, pool, whole, held, (unsigned)short_by, pl->cpus);
        fewest = held != NULL && hwloc_bitmap_intersects(pool, c->claimed);
        free(held);
    }
    char *list = bitmap_list(pl->cpus), *kinds = kinds_word(t, pl->cpus);
    note(pl, NOTE_INFO, "cpus %s (%d)%s%s%s%s", list, hwloc_bitmap_weight(pl->cpus),
         fewest ? ", of those the fewest running services hold" : "",
         p->placement.smt ? "" : ": one PU per core (smt = no)",
         !kinds                                          ? ""
         : by_kind && hwloc_bitmap_weight(pl->nodes) > 1 ? "; the fastest kind of core first "
                                                           "within each node: "
         : by_kind                                       ? "; the fastest kind of core first: "
                                                         : "; kinds of core: ",
         kinds ? kinds : "");
    free(list);
    free(kinds);
    hwloc_bitmap_free(whole);
    hwloc_bitmap_free(pool);
}

/* ---- phase 3b: running services yield -------------------------------------- */

/* The whole cores that set touches: a yielding pool gives up SMT siblings too. */
static void whole_cores(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
    hwloc_bitmap_copy(out, set);
    for (size_t i = 0; i < t->ncores; i++)
        if (hwloc_bitmap_intersects(t->cores[i], set))
            hwloc_bitmap_or(out, out, t->cores[i]);
}

static void add_shrinks(struct ctx *c)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t taken = hwloc_bitmap_alloc();
    whole_cores(t, pl->cpus, taken);
    for (size_t i = 0; c->shrinking && i < c->nclaims; i++) {
        const struct claim *k = &c->claims[i];
        if (!c->yields[i] || !hwloc_bitmap_intersects(k->cpus, taken))
            continue;
        struct plan_shrink *s;
        pl->shrinks = xrealloc(pl->shrinks, (pl->nshrinks + 1) * sizeof(*pl->shrinks));
        s = &pl->shrinks[pl->nshrinks++];
        s->claim = i;
        s->cpus = hwloc_bitmap_alloc();
        s->gives = hwloc_bitmap_alloc();
        s->nodes = hwloc_bitmap_alloc();
        hwloc_bitmap_andnot(s->cpus, k->cpus, taken);
        hwloc_bitmap_and(s->gives, k->cpus, taken);
        topo_nodes_of(t, s->cpus, s->nodes);
        char *gives = bitmap_list(s->gives), *keeps = bitmap_list(s->cpus);
        note(pl, NOTE_INFO, "%s, a shared pool, yields %s %s to it and keeps %s %s", k->profile,
             cpus_word(s->gives), gives, cpus_word(s->cpus), keeps);
        free(gives);
        free(keeps);
    }
    hwloc_bitmap_free(taken);
}

/* ---- phase 4: memory ------------------------------------------------------ */

static uint64_t sum_mem(const struct topo *t, hwloc_const_bitmap_t nodes, bool free_only)
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
 * `want` or every node with memory is in.
 */
static void grow_memory(struct ctx *c, uint64_t want)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    while (sum_mem(t, pl->mem_nodes, false) < want) {
        int best = -1;
        unsigned best_d = ~0u;
        for (size_t j = 0; j < t->nnodes; j++) {
            if (!t->nodes[j].has_memory || hwloc_bitmap_isset(pl->mem_nodes, t->nodes[j].os_index))
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
            return;
        hwloc_bitmap_set(pl->mem_nodes, t->nodes[best].os_index);
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
    for (size_t i = 0; i < t->nnodes; i++)
        if (hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index))
            hwloc_bitmap_andnot(out, out, t->nodes[i].cpus);
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
        words = xasprintf("local for %s %s and remote for %s %s, %s", cpus_word(local), near,
                          cpus_word(remote), far, why);
        free(near);
        free(far);
    }
    hwloc_bitmap_free(remote);
    hwloc_bitmap_free(local);
    hwloc_bitmap_free(away);
    return words;
}

static void choose_memory(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;

    for (size_t i = 0; i < t->nnodes; i++) {
        if (!hwloc_bitmap_isset(pl->nodes, t->nodes[i].os_index))
            continue;
        int m = memory_home(t, i);
        if (m < 0)
            continue;
        hwloc_bitmap_set(pl->mem_nodes, t->nodes[m].os_index);
        if ((size_t)m != i && t->distance)
            note(pl, NOTE_INFO,
                 "node %u has CPUs but no memory: its memory comes from node %u, "
                 "the nearest with memory (distance %u)",
                 t->nodes[i].os_index, t->nodes[m].os_index, topo_distance(t, i, (size_t)m));
        else if ((size_t)m != i) /* an export without one: no distance to cite */
            note(pl, NOTE_INFO,
                 "node %u has CPUs but no memory: its memory comes from node %u, the one with "
                 "memory most free (no distance matrix says which is nearest)",
                 t->nodes[i].os_index, t->nodes[m].os_index);
    }
    /* no allowed node owns its CPUs: the cpuset's memory nodes are all it may have */
    bool homeless = hwloc_bitmap_iszero(pl->nodes);
    for (size_t i = 0; i < t->nnodes && homeless; i++)
        if (t->nodes[i].has_memory)
            hwloc_bitmap_set(pl->mem_nodes, t->nodes[i].os_index);
    if (hwloc_bitmap_iszero(pl->mem_nodes)) {
        pl->mpol = PLAN_MPOL_LOCAL;
        note(pl, NOTE_INFO, "memory local: no node with memory is known here");
        return;
    }

    enum mem_mode mode = p->placement.memory;
    char *list = bitmap_list(pl->mem_nodes), *remote = remote_words(t, pl);
    if (homeless && mode != MEM_LOCAL)
        note(pl, NOTE_WARN,
             "memory from node%s %s: the cpuset's memory nodes, none of them its CPUs' own, so "
             "every page is remote for them",
             hwloc_bitmap_weight(pl->mem_nodes) > 1 ? "s" : "", list);
    switch (mode) {
    case MEM_LOCAL:
        /* mem_nodes still says where first touch lands, for ${node_mem} and the JVM */
        pl->mpol = PLAN_MPOL_LOCAL;
        if (!hwloc_bitmap_iszero(pl->nodeless)) /* all its CPUs when homeless */
            note(pl, NOTE_INFO,
                 "memory local: first touch on the node of the touching CPU, or for a CPU of "
                 "no allowed node the nearest of %s",
                 list);
        else
            note(pl, NOTE_INFO, "memory local: first touch on the node of the touching CPU");
        break;
    case MEM_BIND:
        pl->mpol = PLAN_MPOL_BIND;
        if (remote)
            note(pl, NOTE_INFO, "memory bind %s: every page there, %s", list, remote);
        else if (hwloc_bitmap_weight(pl->mem_nodes) > 1)
            note(pl, NOTE_INFO,
                 "memory bind %s: every page on the nodes of its CPUs, never elsewhere", list);
        else
            note(pl, NOTE_INFO, "memory bind %s: every page local, no remote NUMA access", list);
        /*
         * What a strict bind risks where it holds part of the machine: the
         * service swaps or is killed once it outgrows it. Without a size
         * nothing can be checked; say so, and how to have it checked.
         */
        uint64_t bound = sum_mem(t, pl->mem_nodes, false), all = 0;
        for (size_t i = 0; i < t->nnodes; i++)
            all += t->nodes[i].mem_total;
        if (t->memory_known && p->placement.memory_size == 0 && bound < all) {
            note(pl, NOTE_INFO,
                 "memory bind %s holds %.1f GiB of this machine's %.1f GiB, and nothing checks "
                 "that the service fits there: with memory_size and memory = auto, it binds "
                 "only what fits",
                 list, gib(bound), gib(all));
        } else if (t->memory_known && p->placement.memory_size > bound) {
            char w[32], b[32], *at = origin_str(p->placement.memory_size_at);
            sizes_apart(w, b, sizeof(w), p->placement.memory_size, bound);
            note(pl, NOTE_WARN,
                 "memory_size %s (%s) is more than memory bind %s holds (%s): the service "
                 "swaps or is killed once it outgrows it (fix: %s)",
                 w, at, list, b,
                 bound < all ? "memory = auto, which spreads what does not fit, or memory = "
                               "preferred"
                             : "a smaller memory_size, or a bigger machine: the bind holds all "
                               "its memory already");
            free(at);
        }
        break;
    case MEM_PREFERRED:
        pl->mpol =
            hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY : PLAN_MPOL_PREFERRED;
        if (remote)
            note(pl, NOTE_INFO,
                 "memory preferred %s: pages there first, %s; spill over instead of swapping", list,
                 remote);
        else
            note(pl, NOTE_INFO, "memory preferred %s: local first, spill over instead of swapping",
                 list);
        break;
    case MEM_INTERLEAVE:
        pl->mpol = PLAN_MPOL_INTERLEAVE;
        if (hwloc_bitmap_weight(pl->mem_nodes) > 1)
            note(pl, NOTE_INFO, "memory interleave %s: bandwidth spread over the nodes", list);
        else
            note(pl, NOTE_INFO,
                 "memory interleave %s: one node to spread over, so its pages go there while "
                 "it has room",
                 list);
        break;
    case MEM_AUTO: {
        uint64_t want = p->placement.memory_size;
        uint64_t fr = sum_mem(t, pl->mem_nodes, true), total = sum_mem(t, pl->mem_nodes, false);
        /* headroom: 10% or 256 MiB, whichever is more, for page cache and the kernel */
        uint64_t headroom = want / 10 > 256 * MIB ? want / 10 : 256 * MIB;
        if (want == 0) {
            pl->mpol = hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY
                                                              : PLAN_MPOL_PREFERRED;
            note(pl, NOTE_INFO,
                 "memory auto -> %s %s: memory_size is not set, so prefer the node%s without "
                 "risking a strict bind",
                 plan_mpol_name(pl->mpol), list, hwloc_bitmap_weight(pl->mem_nodes) > 1 ? "s" : "");
        } else if (!t->memory_known) {
            pl->mpol = PLAN_MPOL_BIND;
            note(pl, NOTE_INFO,
                 "memory auto -> bind %s: how much memory the nodes have is not known here, so "
                 "memory_size %.1f GiB is not checked against it",
                 list, gib(want));
        } else if (want <= fr && fr - want >= headroom) {
            pl->mpol = PLAN_MPOL_BIND;
            note(pl, NOTE_INFO,
                 "memory auto -> bind %s: memory_size %.1f GiB fits %.1f GiB free with headroom",
                 list, gib(want), gib(fr));
        } else if (want <= total) {
            pl->mpol = hwloc_bitmap_weight(pl->mem_nodes) > 1 ? PLAN_MPOL_PREFERRED_MANY
                                                              : PLAN_MPOL_PREFERRED;
            bool elsewhere = false; /* memory a preference may spill over to */
            for (size_t i = 0; i < t->nnodes; i++)
                elsewhere |= t->nodes[i].has_memory &&
                             !hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index);
            note(pl, NOTE_INFO,
                 "memory auto -> %s %s: memory_size %.1f GiB plus headroom exceeds %.1f GiB "
                 "free; a strict bind would swap or OOM%s",
                 plan_mpol_name(pl->mpol), list, gib(want), gib(fr),
                 elsewhere ? " while other nodes have memory" : "");
        } else {
            pl->mpol = PLAN_MPOL_INTERLEAVE;
            grow_memory(c, want);
            char *all = bitmap_list(pl->mem_nodes);
            uint64_t grown = sum_mem(t, pl->mem_nodes, false); /* the machine's, if short */
            note(pl, NOTE_INFO,
                 "memory auto -> interleave %s: memory_size %.1f GiB is more than the chosen "
                 "nodes hold (%.1f GiB), so spread it evenly over the %s nodes that hold "
                 "it (%.1f GiB%s)",
                 all, gib(want), gib(total), t->distance ? "nearest" : "roomiest", gib(grown),
                 t->distance ? "" : "; no distance matrix says which are nearest");
            if (want > grown) {
                char w[32], g[32], *at = origin_str(p->placement.memory_size_at);
                sizes_apart(w, g, sizeof(w), want, grown);
                note(pl, NOTE_WARN,
                     "memory_size %s (%s) is more than this whole machine holds (%s): the "
                     "service will swap or be killed (fix: a smaller memory_size, or a bigger "
                     "machine)",
                     w, at, g);
                free(at);
            }
            free(all);
        }
        break;
    }
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
static void settle_nodes(struct ctx *c)
{
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t cpu_nodes = hwloc_bitmap_alloc();
    topo_nodes_of(t, pl->cpus, cpu_nodes);
    topo_nodeless(t, pl->cpus, pl->nodeless);
    if (!hwloc_bitmap_iszero(pl->nodeless) && !hwloc_bitmap_iszero(cpu_nodes)) {
        bool one = hwloc_bitmap_weight(pl->nodeless) == 1;
        char *list = bitmap_list(pl->nodeless);
        note(pl, NOTE_INFO,
             "%s %s: %s on no allowed node (not among the cpuset's memory nodes), so %s memory "
             "comes from other nodes",
             cpus_word(pl->nodeless), list, one ? "it is" : "they are", one ? "its" : "their");
        free(list);
    }
    bool same = hwloc_bitmap_isequal(cpu_nodes, pl->nodes) && hwloc_bitmap_iszero(pl->nodeless);
    if (c->p->placement.cpus != CPUS_ALL) {
        if (!same && !hwloc_bitmap_iszero(pl->nodes)) {
            char *list = bitmap_list(cpu_nodes);
            note(pl, NOTE_INFO, "%s %s: only %s the CPUs asked for",
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
            note(pl, NOTE_INFO,
                 "cpus = all spreads CPUs beyond the memory nodes (%s): threads elsewhere "
                 "reach their memory remotely",
                 mem);
            free(mem);
        }
    }
    hwloc_bitmap_free(cpu_nodes);
}

/* ---- phase 5: steps ------------------------------------------------------- */

/*
 * What each step does, in words true of any service: the reason this one
 * needs it is the profile's, in the comment at the file and line each step
 * cites (and in its `fears`, which head the plan). The planner never
 * guesses which service it is placing.
 */
static const char *limit_reason(int resource)
{
    switch (resource) {
    case RLIMIT_NOFILE:
        return "every open file, socket and pipe takes a descriptor; at the limit open() and "
               "accept() fail with EMFILE";
    case RLIMIT_NPROC:
        return "every thread and process of its user counts; at the limit fork() and "
               "pthread_create() fail";
    case RLIMIT_MEMLOCK:
        return "memory locked in RAM (mlock, io_uring's registered buffers) counts against it";
    case RLIMIT_CORE:
        return "the size of a crash's core dump: enough to debug, or 0 to keep memory contents "
               "off the disk";
    case RLIMIT_STACK:
        return "the main thread's stack, and glibc's default stack size for every new thread";
    case RLIMIT_AS:
        return "the address space it may map; past it mmap() and brk() fail";
    case RLIMIT_DATA:
        return "its heap and private mappings; past it brk() and mmap() fail";
    case RLIMIT_FSIZE:
        return "the largest file it may write; past it a write gets SIGXFSZ, or EFBIG";
    case RLIMIT_CPU:
        return "the CPU seconds it may use: SIGXCPU at the soft limit, SIGKILL at the hard one";
    case RLIMIT_LOCKS:
        return "flock() locks and leases (Linux has not enforced it since 2.4.25)";
    case RLIMIT_MSGQUEUE:
        return "the bytes of POSIX message queues its user may allocate";
    case RLIMIT_NICE:
        return "how far it may raise its own CPU priority: down to nice 20 minus the limit";
    case RLIMIT_RTPRIO:
        return "the highest real-time priority it may give itself";
    case RLIMIT_RTTIME:
        return "the microseconds a real-time thread may run without blocking";
    case RLIMIT_SIGPENDING:
        return "the signals its user may have queued";
    case RLIMIT_RSS:
        return "its resident memory (Linux has not enforced it since 2.6)";
    default:
        return "a resource limit";
    }
}

static void swap_size(char *buf, size_t n, uint64_t v)
{
    if (v == UINT64_MAX)
        snprintf(buf, n, "max");
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}

/*
 * What does it where tunerun may not write the cgroup: the unit setting or
 * the docker flag, for the knob this cgroup version has (v1: swappiness,
 * v2: swap_max).
 */
static char *swap_fix(const struct profile *p, const struct cgroup *cg)
{
    char size[32];
    swap_size(size, sizeof(size), p->memory.swap_max);
    bool scope = strstr(cg->unit, ".scope") != NULL;
    switch (cg->owner) {
    case CG_OWN_UNIT:
        if (cg->v2 && scope)
            return xasprintf("fix: start it as a service with MemorySwapMax=%s (systemd-run "
                             "-p MemorySwapMax=%s, or a unit); %s is a scope",
                             size, size, cg->unit);
        if (cg->v2)
            return xasprintf("fix: MemorySwapMax=%s in %s (systemctl edit %s; `tunerun systemd "
                             "%s` prints the drop-in)",
                             size, cg->unit, cg->unit, p->name);
        return xasprintf("fix: %s with Delegate=yes, which lets tunerun make the service's own "
                         "cgroup (systemd has no per-unit swappiness)",
                         scope ? "start it as a service" : cg->unit);
    case CG_OWN_READONLY:
        /*
         * A service's ProtectControlGroups= (Debian's redis and mariadb
         * units have it); a scope under a read-only cgroupfs is a
         * container's (Docker's systemd cgroup driver makes one).
         */
        if (cg->unit[0] && !scope && cg->v2)
            return xasprintf("fix: MemorySwapMax=%s in %s (systemctl edit %s; `tunerun systemd "
                             "%s` prints the drop-in)",
                             size, cg->unit, cg->unit, p->name);
        if (cg->unit[0] && !scope)
            return xasprintf("fix: ProtectControlGroups=no and Delegate=yes in %s, which let "
                             "tunerun make the service's own cgroup (systemd has no per-unit "
                             "swappiness)%s",
                             cg->unit,
                             cg->container ? ", and a cgroupfs the container may write" : "");
        if (cg->v2 && p->memory.swap_max == 0)
            return xasprintf("fix: docker run --memory-swap equal to --memory (no swap)");
        if (cg->v2 && p->memory.swap_max == UINT64_MAX)
            return xasprintf("fix: docker run --memory-swap=-1 (unlimited swap)");
        if (cg->v2)
            return xasprintf("fix: docker run --memory-swap set to --memory plus %s", size);
        return xasprintf("fix: docker run --memory-swappiness=%d (cgroup v1 hosts only)",
                         p->memory.swappiness);
    case CG_OWN_DENIED:
        return xasprintf("fix: run tunerun as root, or in a cgroup delegated to this user "
                         "(systemd-run --user -p Delegate=yes)");
    default:
        if (cg->v2 && cg->dir)
            return xasprintf("fix: echo +memory > the parent cgroup's cgroup.subtree_control");
        return xasprintf("fix: run it where a memory cgroup is mounted");
    }
}

/*
 * Swap policy, in a child cgroup where tunerun may write one: cgroup v1's
 * memory.swappiness, v2's memory.swap.max. Each version lacks the other's
 * knob; that is said, never a warning, as no setting of this service can
 * change it. What the cgroup already has needs nothing.
 */
static void add_swap_steps(struct ctx *c, const struct cgroup *cg)
{
    const struct profile *p = c->p;
    bool sw = p->memory.swappiness >= 0, max = p->memory.swap_max_set;
    if (!sw && !max)
        return;
    if (cg == NULL) {
        note(c->pl, NOTE_INFO, "swap: the cgroup of another machine is not known; not planned");
        return;
    }
    bool sw_here = sw && !cg->v2 && cg->mode != CG_NONE, max_here = max && cg->v2;
    if (sw && cg->v2) {
        if (max)
            note(c->pl, NOTE_INFO,
                 "swap: cgroup v2 has no per-cgroup swappiness; swap_max "
                 "stands for it");
        else
            note(c->pl, NOTE_INFO,
                 "swap: cgroup v2 has no per-cgroup swappiness; %d is the host's to set "
                 "(sysctl -w vm.swappiness=%d)",
                 p->memory.swappiness, p->memory.swappiness);
    }
    if (max && !cg->v2 && cg->mode != CG_NONE) {
        if (sw)
            note(c->pl, NOTE_INFO,
                 "swap: cgroup v1 has no memory.swap.max; swappiness %d stands for it (it still "
                 "swaps under the host's memory pressure)",
                 p->memory.swappiness);
        else
            note(c->pl, NOTE_INFO,
                 "swap: cgroup v1 has no memory.swap.max; boot with cgroup v2 "
                 "for it");
    }
    if (cg->mode == CG_NONE || (!sw_here && !max_here)) {
        if (cg->mode == CG_NONE)
            note(c->pl, NOTE_WARN, "swap: %s; the service's swap policy is not set", cg->why);
        return;
    }
    char size[32];
    swap_size(size, sizeof(size), p->memory.swap_max);
    bool have = (!sw_here || (cg->swappiness_known && cg->swappiness == p->memory.swappiness)) &&
                (!max_here || (cg->swap_max_known && cg->swap_max == p->memory.swap_max));
    if (have) {
        if (sw_here)
            note(c->pl, NOTE_INFO, "swap: memory.swappiness is %d here already",
                 p->memory.swappiness);
        else
            note(c->pl, NOTE_INFO, "swap: memory.swap.max is %s here already", size);
        return;
    }
    if (!cgroup_writable(cg)) {
        char *fix = swap_fix(p, cg);
        note(c->pl, NOTE_WARN, "swap: %s; the service's swap policy is not set (%s)", cg->why, fix);
        free(fix);
        return;
    }
    struct origin at = sw_here ? p->memory.swappiness_at : p->memory.swap_max_at;
    char *where = origin_str(at), *why;
    if (sw_here)
        why = xasprintf("swappiness %d in a cgroup of its own: the lower it is, the more "
                        "reclaim takes page cache rather than swap its memory out, where a page "
                        "costs a disk read when next touched (%s)",
                        p->memory.swappiness, where);
    else if (p->memory.swap_max == 0)
        why = xasprintf("no swap for it, in a cgroup of its own: none of its pages waits on a "
                        "disk read when touched again (%s)",
                        where);
    else if (p->memory.swap_max == UINT64_MAX)
        why = xasprintf("swap as the host allows, in a cgroup of its own (%s)", where);
    else
        why = xasprintf("at most %s bytes of its memory in swap, in a cgroup of its own (%s)", size,
                        where);
    struct plan_step *s = add_step(c->pl, STEP_CGROUP, why);
    free(where);
    s->u.cgroup.dir = xstrdup(cg->dir);
    s->u.cgroup.name = p->name;
    s->u.cgroup.v2 = cg->v2;
    s->u.cgroup.swappiness = sw_here ? p->memory.swappiness : -1;
    s->u.cgroup.set_swap_max = max_here;
    s->u.cgroup.swap_max = p->memory.swap_max;
}

static void add_limit_steps(struct ctx *c)
{
    for (int r = 0; r < PROFILE_NLIMITS; r++) {
        const struct profile_limit *l = &c->p->limits[r];
        if (!l->set)
            continue;
        char *at = origin_str(l->at);
        struct plan_step *s =
            add_step(c->pl, STEP_RLIMIT, xasprintf("%s (%s)", limit_reason(r), at));
        s->u.rlimit.resource = r;
        s->u.rlimit.soft = l->soft;
        s->u.rlimit.hard = l->hard;
        s->u.rlimit.nr_open = r == RLIMIT_NOFILE ? c->nr_open : 0;
        if (r == RLIMIT_NOFILE && c->nr_open > 0 && l->hard > (rlim_t)c->nr_open) {
            /* the kernel's ceiling for everyone, root with every capability included */
            bool boxed = c->cgroup && c->cgroup->container; /* the sysctl is the host's */
            char *then = boxed ? xasprintf("; then docker run --ulimit nofile=%llu:%llu",
                                           (unsigned long long)l->soft, (unsigned long long)l->hard)
                               : xstrdup("");
            note(c->pl, NOTE_WARN,
                 "nofile: %llu (%s) is more than this host's fs.nr_open (%ld), past which no "
                 "process may raise it: the service gets at most the hard limit it inherits "
                 "(fix: %ssysctl -w fs.nr_open=%llu, and the same in /etc/sysctl.d/%s)",
                 (unsigned long long)l->hard, at, c->nr_open,
                 boxed ? "on the host, not in this container: " : "", (unsigned long long)l->hard,
                 then);
            free(then);
        } else if (c->fixed_limits && l->hard > c->fixed_limits[r].rlim_max) {
            char want[24], have[24], *fix = rlimit_raise_fix(r, l->soft, l->hard);
            rlim_str(want, sizeof(want), l->hard);
            rlim_str(have, sizeof(have), c->fixed_limits[r].rlim_max);
            note(c->pl, NOTE_WARN,
                 "%s: the hard limit %s (%s) is above this process's %s, and raising it needs "
                 "CAP_SYS_RESOURCE, which it lacks: a launch from here gets at most %s (fix: %s)",
                 rlimit_name(r), want, at, have, have, fix);
            free(fix);
        }
        free(at);
    }
    if (c->p->memory.oom_set) {
        char *at = origin_str(c->p->memory.oom_at);
        int adj = c->p->memory.oom_score_adj;
        struct plan_step *s =
            add_step(c->pl, STEP_OOM_SCORE_ADJ,
                     xasprintf("%s (%s)",
                               adj <= -1000 ? "the OOM killer never picks it"
                               : adj < 0    ? "the OOM killer picks other processes before it"
                               : adj == 0   ? "the OOM killer weighs it by its memory alone, "
                                              "as by default"
                               : adj < 1000 ? "the OOM killer picks it before other processes"
                                            : "the OOM killer picks it first",
                               at));
        free(at);
        s->u.oom_score_adj = c->p->memory.oom_score_adj;
    }
}

static void add_placement_steps(struct ctx *c)
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
    struct plan_step *s = add_step(pl, STEP_MEMPOLICY, xasprintf("%s", why));
    s->u.mempolicy.mode = pl->mpol;
    s->u.mempolicy.nodes = hwloc_bitmap_dup(pl->mem_nodes);
    if (pl->mpol == PLAN_MPOL_LOCAL)
        hwloc_bitmap_zero(s->u.mempolicy.nodes);

    s = add_step(pl, STEP_AFFINITY,
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
        s = add_step(pl, STEP_THP,
                     xasprintf("huge pages only where the service asks for them (madvise): no "
                               "2 MiB fault or compaction stall in memory that did not ask"));
        s->u.thp = THP_MADVISE;
        break;
    case THP_NEVER:
        s = add_step(pl, STEP_THP,
                     xasprintf("no transparent huge pages: no 2 MiB fault or compaction stall, "
                               "and copy-on-write after a fork copies 4 KiB pages, not 2 MiB"));
        s->u.thp = THP_NEVER;
        break;
    case THP_SYSTEM:
        /* tunerun changes nothing, so what its parent set holds, not always the system's */
        if (c->thp_inherited == THP_SYSTEM)
            note(pl, NOTE_INFO, "thp: the system-wide mode applies (profile says system)");
        else
            note(pl, NOTE_INFO, "thp: %s; thp = system leaves that in effect",
                 c->thp_inherited == THP_MADVISE
                     ? "madvise, as the parent left tunerun (PR_SET_THP_DISABLE with "
                       "PR_THP_DISABLE_EXCEPT_ADVISED, as a unit's MemoryTHP=madvise does): huge "
                       "pages only where the service asks, as far as the system-wide mode allows"
                     : "never, as the parent left tunerun (PR_SET_THP_DISABLE, as a unit's "
                       "MemoryTHP=disable does): no huge pages, whatever the system-wide mode");
        break;
    }
}

/* Expand ${ncpus}-style references; unknown names were refused at load. */
static char *expand(const struct ctx *c, const char *v)
{
    const struct plan *pl = c->pl;
    size_t cap = strlen(v) + 64, len = 0;
    char *out = xrealloc(NULL, cap);
    while (*v) {
        char *val = NULL;
        const char *close = NULL;
        if (v[0] == '$' && v[1] == '{' && (close = strchr(v, '}'))) {
            size_t n = (size_t)(close - v - 2);
            if (n == 4 && strncmp(v + 2, "cpus", 4) == 0)
                val = bitmap_list(pl->cpus);
            else if (n == 5 && strncmp(v + 2, "ncpus", 5) == 0)
                val = xasprintf("%d", hwloc_bitmap_weight(pl->cpus));
            else if (n == 5 && strncmp(v + 2, "nodes", 5) == 0)
                val = bitmap_list(pl->nodes);
            else if (n == 6 && strncmp(v + 2, "nnodes", 6) == 0)
                val = xasprintf("%d", hwloc_bitmap_weight(pl->nodes));
            else if (n == 8 && strncmp(v + 2, "node_mem", 8) == 0)
                val = xasprintf("%lluM",
                                (unsigned long long)(sum_mem(c->t, pl->mem_nodes, false) / MIB));
        }
        const char *piece = val ? val : v;
        size_t plen = val ? strlen(val) : 1;
        if (len + plen + 1 > cap) {
            cap = (len + plen + 1) * 2;
            out = xrealloc(out, cap);
        }
        memcpy(out + len, piece, plen);
        len += plen;
        v = val ? close + 1 : v + 1;
        free(val);
    }
    out[len] = '\0';
    return out;
}

static void add_env(struct plan *pl, const char *name, char *value, char *why)
{
    struct plan_step *s = add_step(pl, STEP_SETENV, why);
    s->u.env.name = xasprintf("%s", name);
    s->u.env.value = value;
}

static void add_arena_step(struct ctx *c)
{
    const struct profile *p = c->p;
    int ncpus = hwloc_bitmap_weight(c->pl->cpus);
    switch (p->memory.arena) {
    case ARENA_UNSET:
        note(c->pl, NOTE_INFO, "MALLOC_ARENA_MAX: left alone (the profile says unset)");
        break;
    case ARENA_VALUE:
        add_env(c->pl, "MALLOC_ARENA_MAX", xasprintf("%u", p->memory.arena_value),
                xasprintf("glibc's default is 8 arenas per online CPU, each with its own "
                          "fragmentation; the profile sets %u",
                          p->memory.arena_value));
        break;
    case ARENA_AUTO: {
        /* glibc counts online CPUs, not our affinity; one arena per placed CPU
         * bounds contention, and 2 keeps a preempted lock holder from
         * serialising everyone (the seed: never 1). */
        int n = ncpus < 2 ? 2 : ncpus;
        add_env(c->pl, "MALLOC_ARENA_MAX", xasprintf("%d", n),
                xasprintf("glibc sizes arenas from online CPUs, not the %d placed %s; "
                          "fewer arenas, less fragmentation",
                          ncpus, ncpus == 1 ? "one" : "ones"));
        break;
    }
    }
}

/*
 * Whether the JVM options already set a flag: a word starting with `flag`
 * when it ends in '=' (-XX:MaxRAM=), else the word -XX:+flag or -XX:-flag.
 * Whole words: -XX:+UseNUMAInterleaving is not UseNUMA, and -XX:MaxRAM= is
 * not -XX:MaxRAMPercentage=.
 */
static bool user_sets(const char *opts, const char *flag)
{
    size_t n = strlen(flag);
    bool prefix = n > 0 && flag[n - 1] == '=';
    for (const char *w = opts; w && *w;) {
        w += strspn(w, " \t");
        size_t len = strcspn(w, " \t");
        if (prefix ? len >= n && strncmp(w, flag, n) == 0
                   : len == n + 5 && (strncmp(w, "-XX:+", 5) == 0 || strncmp(w, "-XX:-", 5) == 0) &&
                         strncmp(w + 5, flag, n) == 0)
            return true;
        w += len;
    }
    return false;
}

static void add_java_step(struct ctx *c, const char *base)
{
    const struct profile *p = c->p;
    struct plan *pl = c->pl;
    char *opts = xasprintf("%s", "");
    int ncpus = hwloc_bitmap_weight(pl->cpus);
    int nmem = hwloc_bitmap_weight(pl->mem_nodes);

#define APPEND(...)                                                                                \
    do {                                                                                           \
        char *add = xasprintf(__VA_ARGS__);                                                        \
        char *joined = xasprintf("%s%s%s", opts, *opts ? " " : "", add);                           \
        free(opts);                                                                                \
        free(add);                                                                                 \
        opts = joined;                                                                             \
    } while (0)

    if (p->java.active_processor_count != JAVA_OFF) {
        unsigned count = p->java.active_processor_count == JAVA_AUTO
                             ? (unsigned)ncpus
                             : p->java.active_processor_count_value;
        /* a CPU quota (docker --cpus, a pod's limit) is all the CPU time the threads get */
        unsigned quota = c->cgroup ? c->cgroup->cpu_quota : 0;
        if (p->java.active_processor_count == JAVA_AUTO && quota && quota < count) {
            note(pl, NOTE_INFO,
                 "java: ActiveProcessorCount %u from the cgroup's CPU quota, below the %u placed "
                 "CPUs: more GC threads than that would only be throttled",
                 quota, count);
            count = quota;
        }
        if (user_sets(base, "-XX:ActiveProcessorCount="))
            note(pl, NOTE_INFO, "java: JAVA_TOOL_OPTIONS already sets ActiveProcessorCount; kept");
        else
            APPEND("-XX:ActiveProcessorCount=%u", count);
    }
    if (p->java.use_numa != JAVA_OFF) {
        if (user_sets(base, "UseNUMA"))
            note(pl, NOTE_INFO, "java: JAVA_TOOL_OPTIONS already sets UseNUMA; kept");
        else if (p->java.use_numa == JAVA_VALUE || nmem > 1)
            APPEND("-XX:+UseNUMA");
        else
            note(pl, NOTE_INFO, "java: no -XX:+UseNUMA, memory is on %s",
                 nmem == 1 ? "a single node" : "the local node");
    }
    if (p->java.max_ram != JAVA_OFF) {
        uint64_t ram = p->java.max_ram_value;
        if (p->java.max_ram == JAVA_AUTO) {
            hwloc_bitmap_t nodes = hwloc_bitmap_dup(nmem ? pl->mem_nodes : pl->nodes);
            ram = c->t->memory_known ? sum_mem(c->t, nodes, false) : 0;
            hwloc_bitmap_free(nodes);
            /* the heap must fit the container too, whichever is smaller */
            if (c->cgroup && c->cgroup->mem_limit && (ram == 0 || c->cgroup->mem_limit < ram)) {
                note(pl, NOTE_INFO,
                     "java: MaxRAM from the cgroup memory limit (%.1f GiB), below the bound "
                     "nodes' memory",
                     gib(c->cgroup->mem_limit));
                ram = c->cgroup->mem_limit;
            }
            /* the JVM would look for a limit itself; MaxRAM replaces what it finds */
            if (c->cgroup && c->cgroup->dir == NULL && c->cgroup->mem_limit == 0 && ram &&
                !user_sets(base, "-XX:MaxRAM="))
                note(pl, NOTE_INFO,
                     "java: MaxRAM from the bound nodes' memory alone: %s, so a memory limit "
                     "below it cannot be seen",
                     c->cgroup->why);
        }
        if (user_sets(base, "-XX:MaxRAM=")) {
            note(pl, NOTE_INFO, "java: JAVA_TOOL_OPTIONS already sets MaxRAM; kept");
        } else if (ram == 0) {
            note(pl, NOTE_INFO, "java: node memory unknown, no MaxRAM");
        } else if (ram < MIB) {
            /* -XX:MaxRAM=0m: the JVM would take its default, the opposite of a cap */
            note(pl, NOTE_INFO, "java: less than 1 MiB of memory to give (%llu bytes), no MaxRAM",
                 (unsigned long long)ram);
        } else {
            /* a size of the profile's own beyond what a strict bind holds: the heap outgrows it */
            uint64_t bound = pl->mpol == PLAN_MPOL_BIND && c->t->memory_known
                                 ? sum_mem(c->t, pl->mem_nodes, false)
                                 : 0;
            /* what the JVM is given, in whole MiB */
            uint64_t given = ram / MIB * MIB;
            if (p->java.max_ram == JAVA_VALUE && bound && given > bound) {
                char *list = bitmap_list(pl->mem_nodes), r[32], b[32];
                sizes_apart(r, b, sizeof(r), given, bound);
                note(pl, NOTE_WARN,
                     "java.max_ram %s is more than memory bind %s holds (%s): the JVM sizes its "
                     "heap from it, and a heap that outgrows the bind is killed (fix: a smaller "
                     "java.max_ram, max_ram = auto, or memory = preferred)",
                     r, list, b);
                free(list);
            }
            APPEND("-XX:MaxRAM=%llum", (unsigned long long)(ram / MIB));
        }
    }
#undef APPEND
    if (*opts == '\0') {
        free(opts);
        return;
    }
    char *value = base && *base ? xasprintf("%s %s", base, opts) : xasprintf("%s", opts);
    add_env(pl, "JAVA_TOOL_OPTIONS", value,
            xasprintf("the JVM sizes its threads and heap from the whole machine or the "
                      "container, not its placement; appended: %s",
                      opts));
    free(opts);
}

static void add_env_steps(struct ctx *c, char *const *environ)
{
    const struct profile *p = c->p;
    add_arena_step(c);
    const char *java_base = getenv_in(environ, "JAVA_TOOL_OPTIONS");
    char *java_from_profile = NULL;
    for (size_t i = 0; i < p->nenv; i++) {
        char *v = expand(c, p->env[i].value);
        if (strcmp(p->env[i].name, "JAVA_TOOL_OPTIONS") == 0) {
            java_from_profile = v; /* merged with the derived options below */
            continue;
        }
        char *at = origin_str(p->env[i].at);
        add_env(c->pl, p->env[i].name, v, xasprintf("profile environment (%s)", at));
        free(at);
    }
    bool java = p->java.active_processor_count != JAVA_OFF || p->java.use_numa != JAVA_OFF ||
                p->java.max_ram != JAVA_OFF;
    /* the caller's options first, then the profile's, then the derived ones: a JVM
     * option the caller set (a -Xmx in the unit) is never dropped by a profile */
    char *base = java_from_profile && java_base && *java_base
                     ? xasprintf("%s %s", java_base, java_from_profile)
                     : xasprintf("%s", java_from_profile ? java_from_profile
                                       : java_base       ? java_base
                                                         : "");
    if (java)
        add_java_step(c, base);
    else if (java_from_profile)
        add_env(c->pl, "JAVA_TOOL_OPTIONS", xasprintf("%s", base),
                xasprintf("profile environment, after the inherited value"));
    free(base);
    free(java_from_profile);
}

/*
 * The capabilities that make whoever holds them as good as root, each with
 * the way it gets there: kept by a user other than root, they undo what
 * [security] user is for. The list follows capabilities(7) and the
 * well-known escalations of each.
 */
static const struct {
    int cap;
    const char *name, *how;
} root_caps[] = {
    {CAP_CHOWN, "cap_chown", "takes /etc/shadow for its own"},
    {CAP_DAC_OVERRIDE, "cap_dac_override", "writes any file, /etc/shadow and units included"},
    {CAP_DAC_READ_SEARCH, "cap_dac_read_search", "reads any file, root's keys included"},
    {CAP_FOWNER, "cap_fowner", "changes the mode of any file"},
    {CAP_SETGID, "cap_setgid", "joins the disk group, whose devices hold every file"},
    {CAP_SETUID, "cap_setuid", "becomes uid 0"},
    {CAP_SETFCAP, "cap_setfcap", "gives a program of its own every capability"},
    {CAP_SYS_MODULE, "cap_sys_module", "loads kernel code"},
    {CAP_SYS_RAWIO, "cap_sys_rawio", "writes the disks and memory raw"},
    {CAP_SYS_PTRACE, "cap_sys_ptrace", "runs its code in root's processes"},
    {CAP_SYS_ADMIN, "cap_sys_admin", "mounts over any file"},
    {CAP_SYS_BOOT, "cap_sys_boot", "boots a kernel of its own (kexec)"},
    {CAP_MKNOD, "cap_mknod", "makes a device node of the root disk"},
};

/*
 * A user other than root who keeps a capability that is as good as root
 * is root in all but name: a warning, as the drop the profile asks for
 * then contains nothing. uid 0 that keeps fewer capabilities has a note
 * of its own.
 */
static void note_root_caps(struct plan *pl, const struct privs *pv)
{
    if (pv == NULL || !pv->caps || !pv->change_id || pv->uid == 0)
        return;
    char *which = NULL;
    for (size_t i = 0; i < sizeof(root_caps) / sizeof(root_caps[0]); i++) {
        if (!(pv->keep & (UINT64_C(1) << root_caps[i].cap)))
            continue;
        char *more = xasprintf("%s%s%s (%s)", which ? which : "", which ? ", " : "",
                               root_caps[i].name, root_caps[i].how);
        free(which);
        which = more;
    }
    if (which)
        note(pl, NOTE_WARN,
             "security: %s keeps what makes %s as good as root: %s; keep only what the service "
             "needs (such as cap_net_bind_service), or run it as root on purpose",
             pv->caps_at, pv->user ? pv->user : "the service's user", which);
    free(which);
}

bool plan_build(struct plan *pl, const struct plan_input *in, struct err *e)
{
    const struct topo *t = in->topo;
    memset(pl, 0, sizeof(*pl));
    pl->profile = in->profile->name;
    pl->cgroup = in->cgroup;
    pl->privs = in->privs;
    pl->near = in->profile->placement.near ? in->near : NULL;
    if (in->privs_refused)
        note(pl, NOTE_WARN, "privileges: %s; a launch from here refuses to execute (exit 125)",
             in->privs_refused);
    if (in->privs && in->privs->caps && (!in->privs->change_id || in->privs->uid == 0))
        note(pl, NOTE_INFO,
             "security: the service keeps uid 0: with fewer capabilities it still owns root's "
             "files (/etc, units, cron); [security] user contains it");
    note_root_caps(pl, in->privs);
    if (t->guess)
        note(pl, NOTE_WARN, "topology: %s; CPUs and memory are placed on that guess (fix: %s)",
             t->guess->why, t->guess->fix);
    if (t->memory_note)
        note(pl, NOTE_INFO, "memory: %s", t->memory_note);
    pl->cpus = hwloc_bitmap_alloc();
    pl->nodes = hwloc_bitmap_alloc();
    pl->mem_nodes = hwloc_bitmap_alloc();
    pl->nodeless = hwloc_bitmap_alloc();

    struct ctx c = {.p = in->profile,
                    .t = t,
                    .pl = pl,
                    .cgroup = in->cgroup,
                    .nr_open = in->nr_open,
                    .fixed_limits = in->fixed_limits,
                    .thp_inherited = in->thp_inherited};
    c.cand = hwloc_bitmap_alloc();
    hwloc_bitmap_and(c.cand, t->cpus, t->binding);
    if (hwloc_bitmap_iszero(c.cand)) {
        char *aff = bitmap_list(t->binding), *all = bitmap_list(t->cpus);
        err_set(e,
                "no usable CPU: the inherited affinity (%s) and the allowed online CPUs (%s) "
                "do not overlap",
                aff, all);
        free(aff);
        free(all);
        hwloc_bitmap_free(c.cand);
        plan_free(pl);
        return false;
    }
    if (!hwloc_bitmap_isequal(c.cand, t->cpus)) {
        char *aff = bitmap_list(c.cand);
        note(pl, NOTE_INFO, "inherited affinity limits the candidates to %s %s", cpus_word(c.cand),
             aff);
        free(aff);
    }
    note_claims(&c, in);
    note_previous(&c, in->previous);
    note_near(&c, in);
    c.node_cand = xrealloc(NULL, (t->nnodes ? t->nnodes : 1) * sizeof(hwloc_bitmap_t));
    for (size_t i = 0; i < t->nnodes; i++) {
        c.node_cand[i] = hwloc_bitmap_alloc();
        hwloc_bitmap_and(c.node_cand[i], t->nodes[i].cpus, c.cand);
    }
    rank_nodes(&c);
    if (c.nrank > 0)
        choose_nodes(&c);
    else if (t->nnodes == 0)
        note(pl, NOTE_WARN, "no NUMA node is known here; placing by CPUs only");
    else
        note(pl, NOTE_INFO,
             "no allowed node owns the candidate CPUs (their own nodes are not among the "
             "cpuset's memory nodes); placing by CPUs only");
    separate_by_cores(&c);
    choose_cpus(&c);
    add_shrinks(&c);
    settle_nodes(&c);
    add_limit_steps(&c);
    add_placement_steps(&c);
    add_env_steps(&c, in->environ);
    add_swap_steps(&c, in->cgroup); /* entered last: see apply_cgroup_step() */

    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_free(c.node_cand[i]);
    free(c.node_cand);
    free(c.rank);
    free(c.claimed_on);
    free(c.claimed_cand);
    free(c.near);
    free(c.conflict);
    free(c.yields);
    hwloc_bitmap_free(c.cand);
    hwloc_bitmap_free(c.shunned);
    hwloc_bitmap_free(c.shunned_nodes);
    hwloc_bitmap_free(c.claimed);
    free(c.shunned_names);
    return true;
}

void plan_free(struct plan *pl)
{
    for (size_t i = 0; i < pl->nsteps; i++) {
        struct plan_step *s = &pl->steps[i];
        free(s->why);
        if (s->type == STEP_MEMPOLICY)
            hwloc_bitmap_free(s->u.mempolicy.nodes);
        else if (s->type == STEP_AFFINITY)
            hwloc_bitmap_free(s->u.cpus);
        else if (s->type == STEP_SETENV) {
            free(s->u.env.name);
            free(s->u.env.value);
        } else if (s->type == STEP_CGROUP) {
            free(s->u.cgroup.dir);
        }
    }
    free(pl->steps);
    for (size_t i = 0; i < pl->nshrinks; i++) {
        hwloc_bitmap_free(pl->shrinks[i].cpus);
        hwloc_bitmap_free(pl->shrinks[i].gives);
        hwloc_bitmap_free(pl->shrinks[i].nodes);
    }
    free(pl->shrinks);
    for (size_t i = 0; i < pl->nnotes; i++)
        free(pl->notes[i].text);
    free(pl->notes);
    hwloc_bitmap_free(pl->cpus);
    hwloc_bitmap_free(pl->nodes);
    hwloc_bitmap_free(pl->mem_nodes);
    hwloc_bitmap_free(pl->nodeless);
    memset(pl, 0, sizeof(*pl));
}
