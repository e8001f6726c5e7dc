/*
 * plan_claims.c - phases 1b and 3b: the running services a launch meets.
 *
 * Exclusive claims are hard: their CPUs leave the candidates. Shared
 * services this one conflicts with (avoid, either way; or this one is
 * exclusive) are soft: they rank nodes, then separate by cores, and where
 * neither is possible a shared pool yields CPUs, as Kubernetes' static CPU
 * manager shrinks its shared pool for an exclusive container. A restarted
 * service gets back the placement it had, when that is still free.
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void plan_note_claims(struct ctx *c, const struct plan_input *in)
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
            plan_note_add(
                c->pl, NOTE_WARN,
                "avoid/exclusive: no state directory, so running services are unknown and "
                "these are not enforced");
        else if (p->placement.navoid || p->placement.exclusive)
            plan_note_add(c->pl, NOTE_INFO,
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
            plan_note_add(c->pl, NOTE_WARN,
                          "every candidate CPU is claimed exclusively by running services (%s %s); "
                          "sharing them",
                          plan_cpus_word(held), list);
        } else {
            hwloc_bitmap_andnot(c->cand, c->cand, held);
            bool one = hwloc_bitmap_weight(held) == 1;
            plan_note_add(c->pl, NOTE_INFO,
                          "%s %s %s claimed exclusively by running services; not using %s",
                          plan_cpus_word(held), list, one ? "is" : "are", one ? "it" : "them");
        }
        free(list);
    }
    hwloc_bitmap_free(held);
    if (in->nclaims == 0 && (p->placement.navoid || p->placement.exclusive))
        plan_note_add(c->pl, NOTE_INFO, "avoid/exclusive: no running service to keep apart from");
}

/*
 * A restarted service gets back the placement it had, when that is still
 * free: every CPU still a candidate, and no conflicting service there now
 * but shared pools, which yield them again (a pool that restarted while
 * the service was down spreads over them, and one that yielded them gets
 * them back once the service ends: yield_return.c).
 */
void plan_note_previous(struct ctx *c, const struct claim *prev)
{
    if (prev == NULL)
        return;
    char *list = bitmap_list(prev->cpus);
    bool one = hwloc_bitmap_weight(prev->cpus) == 1, pools = false;
    /* nodes none: it ran where no allowed node owns a CPU, which only its CPUs can say again */
    hwloc_bitmap_t nodeless = hwloc_bitmap_alloc(), stays = hwloc_bitmap_alloc();
    topo_nodeless(c->t, prev->cpus, nodeless);
    bool placed = !hwloc_bitmap_iszero(prev->nodes) || hwloc_bitmap_isequal(nodeless, prev->cpus);
    for (size_t i = 0; i < c->nclaims; i++) {
        if (c->conflict[i] && !c->yields[i])
            hwloc_bitmap_or(stays, stays, c->claims[i].cpus);
        else if (c->yields[i])
            pools |= hwloc_bitmap_intersects(prev->cpus, c->claims[i].cpus);
    }
    bool free_now = !hwloc_bitmap_intersects(prev->cpus, stays);
    hwloc_bitmap_free(nodeless);
    hwloc_bitmap_free(stays);
    if (hwloc_bitmap_isincluded(prev->cpus, c->cand) && free_now && placed) {
        c->prev = prev;
        /* a pool or a whole node takes what it may use now, not what it had kept */
        enum cpus_mode m = c->p->placement.cpus;
        plan_note_add(c->pl, NOTE_INFO, "restarted: it ran on %s %s before, and %s free%s%s",
                      plan_cpus_word(prev->cpus), list, one ? "it is" : "they are",
                      !pools ? ""
                      : one  ? " of all but shared pools, which yield it"
                             : " of all but shared pools, which yield them",
                      m == CPUS_ALL ? "; with cpus = all it takes every CPU it may use again"
                      : m == CPUS_NODE
                          ? "; with cpus = node it takes the whole of the nodes it gets, its "
                            "own first"
                          : "");
    } else {
        plan_note_add(
            c->pl, NOTE_INFO,
            "restarted: it ran on %s %s before, but %s taken or gone now; placing it afresh",
            plan_cpus_word(prev->cpus), list, one ? "it is" : "they are");
    }
    free(list);
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

/*
 * Where the chosen CPUs meet a conflicting service's: keep off its cores
 * when what is left covers what the profile asks for. Else a shared pool
 * there yields its CPUs (keeping a core); a service that does not yield is
 * kept off if any CPU remains, and shared with a warning if none does.
 */
void plan_separate_by_cores(struct ctx *c)
{
    hwloc_bitmap_t pool = hwloc_bitmap_alloc(), rest = hwloc_bitmap_alloc();
    plan_cpu_pool(c, pool);
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
    if (pools && plan_counted(c, rest) < plan_wanted(c, pool) &&
        plan_counted(c, take) > plan_counted(c, rest)) {
        c->shrinking = true;
        plan_restrict_candidates(c, take);
    } else if (!hwloc_bitmap_iszero(rest)) {
        char *list = bitmap_list(rest);
        plan_note_add(c->pl, NOTE_INFO, "%s runs on these nodes too; keeping apart by cores: %s %s",
                      c->shunned_names, plan_cpus_word(rest), list);
        free(list);
        plan_restrict_candidates(c, rest);
    } else {
        plan_note_add(c->pl, NOTE_WARN,
                      "no CPU here is free of %s, which this profile keeps apart from, and it "
                      "cannot yield any; sharing its CPUs",
                      c->shunned_names);
    }
    hwloc_bitmap_free(take);
    hwloc_bitmap_free(pool);
    hwloc_bitmap_free(rest);
}

/* The whole cores that set touches: a yielding pool gives up SMT siblings too. */
static void whole_cores(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
    hwloc_bitmap_copy(out, set);
    for (size_t i = 0; i < t->ncores; i++)
        if (hwloc_bitmap_intersects(t->cores[i], set))
            hwloc_bitmap_or(out, out, t->cores[i]);
}

void plan_add_shrinks(struct ctx *c)
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
        s->profile = k->profile;
        s->cpus = hwloc_bitmap_alloc();
        s->gives = hwloc_bitmap_alloc();
        s->nodes = hwloc_bitmap_alloc();
        hwloc_bitmap_andnot(s->cpus, k->cpus, taken);
        hwloc_bitmap_and(s->gives, k->cpus, taken);
        topo_nodes_of(t, s->cpus, s->nodes);
        char *gives = bitmap_list(s->gives), *keeps = bitmap_list(s->cpus);
        plan_note_add(pl, NOTE_INFO, "%s, a shared pool, yields %s %s to it and keeps %s %s",
                      k->profile, plan_cpus_word(s->gives), gives, plan_cpus_word(s->cpus), keeps);
        free(gives);
        free(keeps);
    }
    hwloc_bitmap_free(taken);
}
