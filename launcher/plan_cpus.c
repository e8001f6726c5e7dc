/*
 * plan_cpus.c - phase 3: which CPUs of the chosen nodes the service gets.
 *
 * All of the nodes' candidates, a count or a percentage of them. A count
 * takes whole cores first, in core order: on a hybrid machine of the
 * fastest kind first, among equals those the fewest running services hold,
 * and cores no one else shares before split ones; with smt = no one PU per
 * core. Several nodes share a count in proportion to what each offers.
 */
#include "planner.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CPUs of a set as the profile counts them: one per core with smt = no. */
unsigned plan_counted(const struct ctx *c, hwloc_const_bitmap_t set)
{
    hwloc_bitmap_t p = hwloc_bitmap_dup(set);
    if (!c->p->placement.smt)
        plan_drop_smt_siblings(c->t, p);
    unsigned n = (unsigned)hwloc_bitmap_weight(p);
    hwloc_bitmap_free(p);
    return n;
}

/* How many CPUs of pool the profile asks for (as plan_choose_cpus() counts them). */
unsigned plan_wanted(const struct ctx *c, hwloc_const_bitmap_t pool)
{
    unsigned have = plan_counted(c, pool);
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
void plan_cpu_pool(const struct ctx *c, hwloc_bitmap_t pool)
{
    hwloc_bitmap_zero(pool);
    if (c->p->placement.cpus == CPUS_ALL || c->nrank == 0)
        hwloc_bitmap_copy(pool, c->cand);
    else
        for (size_t i = 0; i < c->t->nnodes; i++)
            if (hwloc_bitmap_isset(c->pl->nodes, c->t->nodes[i].os_index))
                hwloc_bitmap_or(pool, pool, c->node_cand[i]);
}

void plan_restrict_candidates(struct ctx *c, hwloc_const_bitmap_t to)
{
    hwloc_bitmap_and(c->cand, c->cand, to);
    for (size_t i = 0; i < c->t->nnodes; i++)
        hwloc_bitmap_and(c->node_cand[i], c->node_cand[i], to);
}

/* Keep one PU per core: the first allowed one. */
void plan_drop_smt_siblings(const struct topo *t, hwloc_bitmap_t set)
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

void plan_choose_cpus(struct ctx *c)
{
    const struct profile *p = c->p;
    const struct topo *t = c->t;
    struct plan *pl = c->pl;
    hwloc_bitmap_t pool = hwloc_bitmap_alloc();
    plan_cpu_pool(c, pool);
    hwloc_bitmap_t whole = hwloc_bitmap_dup(pool); /* what splits a core is not ours */
    if (!p->placement.smt)
        plan_drop_smt_siblings(t, pool);
    unsigned have = (unsigned)hwloc_bitmap_weight(pool), want = plan_wanted(c, pool);
    if (want == 0)
        want = 1;
    if (want > have) {
        char *at = plan_origin(p->placement.cpus_at);
        plan_note_add(pl, NOTE_WARN, "cpus = %u (%s), but only %u %s available; using %u", want, at,
                      have, have == 1 ? "is" : "are", have);
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
    plan_note_add(pl, NOTE_INFO, "cpus %s (%d)%s%s%s%s", list, hwloc_bitmap_weight(pl->cpus),
                  fewest ? ", of those the fewest running services hold" : "",
                  p->placement.smt ? "" : ": one PU per core (smt = no)",
                  !kinds ? ""
                  : by_kind && hwloc_bitmap_weight(pl->nodes) > 1
                      ? "; the fastest kind of core first "
                        "within each node: "
                  : by_kind ? "; the fastest kind of core first: "
                            : "; kinds of core: ",
                  kinds ? kinds : "");
    free(list);
    free(kinds);
    hwloc_bitmap_free(whole);
    hwloc_bitmap_free(pool);
}
