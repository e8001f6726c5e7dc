/*
 * plan_cgroup.c - the cgroup steps: the swap policy's, and the cpuset that
 * holds the placement.
 *
 * Swap policy is a cgroup's: v1 has memory.swappiness, v2 memory.swap.max.
 * tunerun makes the service a child cgroup where the cgroup is its own to
 * write; elsewhere the plan names the unit setting or docker flag that
 * does it (swap_fix()).
 *
 * Affinity and a memory policy are the process's own, and anything it runs
 * may set them again: nginx's worker_cpu_affinity auto pins worker n to
 * CPU n of the whole machine. A cpuset cgroup is the kernel's bound on
 * both, which the process cannot widen, so the placement holds. Each
 * launch gets its own (a pool's must shrink alone when it yields), where
 * tunerun may write one; elsewhere the plan names the unit settings or
 * docker flags that do it (cpuset_fix()).
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * What does it where tunerun may not write the cgroup: the unit setting or
 * the docker flag, for the knob this cgroup version has (v1: swappiness,
 * v2: swap_max).
 */
static char *swap_fix(const struct profile *p, const struct cgroup *cg)
{
    char size[32];
    plan_swap_size(size, sizeof(size), p->memory.swap_max);
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
void plan_add_swap_steps(struct ctx *c, const struct cgroup *cg)
{
    const struct profile *p = c->p;
    bool sw = p->memory.swappiness >= 0, max = p->memory.swap_max_set;
    if (!sw && !max)
        return;
    if (cg == NULL) {
        plan_note_add(c->pl, NOTE_INFO,
                      "swap: the cgroup of another machine is not known; not planned");
        return;
    }
    bool sw_here = sw && !cg->v2 && cg->mode != CG_NONE, max_here = max && cg->v2;
    if (sw && cg->v2) {
        if (max)
            plan_note_add(c->pl, NOTE_INFO,
                          "swap: cgroup v2 has no per-cgroup swappiness; swap_max "
                          "stands for it");
        else
            plan_note_add(c->pl, NOTE_INFO,
                          "swap: cgroup v2 has no per-cgroup swappiness; %d is the host's to set "
                          "(sysctl -w vm.swappiness=%d)",
                          p->memory.swappiness, p->memory.swappiness);
    }
    if (max && !cg->v2 && cg->mode != CG_NONE) {
        if (sw)
            plan_note_add(
                c->pl, NOTE_INFO,
                "swap: cgroup v1 has no memory.swap.max; swappiness %d stands for it (it still "
                "swaps under the host's memory pressure)",
                p->memory.swappiness);
        else
            plan_note_add(c->pl, NOTE_INFO,
                          "swap: cgroup v1 has no memory.swap.max; boot with cgroup v2 "
                          "for it");
    }
    if (cg->mode == CG_NONE || (!sw_here && !max_here)) {
        if (cg->mode == CG_NONE)
            plan_note_add(c->pl, NOTE_WARN, "swap: %s; the service's swap policy is not set",
                          cg->why);
        return;
    }
    char size[32];
    plan_swap_size(size, sizeof(size), p->memory.swap_max);
    bool have = (!sw_here || (cg->swappiness_known && cg->swappiness == p->memory.swappiness)) &&
                (!max_here || (cg->swap_max_known && cg->swap_max == p->memory.swap_max));
    if (have) {
        if (sw_here)
            plan_note_add(c->pl, NOTE_INFO, "swap: memory.swappiness is %d here already",
                          p->memory.swappiness);
        else
            plan_note_add(c->pl, NOTE_INFO, "swap: memory.swap.max is %s here already", size);
        return;
    }
    if (!cgroup_writable(cg)) {
        char *fix = swap_fix(p, cg);
        plan_note_add(c->pl, NOTE_WARN, "swap: %s; the service's swap policy is not set (%s)",
                      cg->why, fix);
        free(fix);
        return;
    }
    struct origin at = sw_here ? p->memory.swappiness_at : p->memory.swap_max_at;
    char *where = plan_origin(at), *why;
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
    struct plan_step *s = plan_add_step(c->pl, STEP_CGROUP, why);
    free(where);
    s->u.cgroup.dir = xstrdup(cg->dir);
    s->u.cgroup.name = p->name;
    s->u.cgroup.v2 = cg->v2;
    s->u.cgroup.swappiness = sw_here ? p->memory.swappiness : -1;
    s->u.cgroup.set_swap_max = max_here;
    s->u.cgroup.swap_max = p->memory.swap_max;
}

/*
 * What holds the placement where tunerun may not make the cgroup: on
 * cgroup v2 the unit's AllowedCPUs= and AllowedMemoryNodes= (or the
 * Delegate=yes that lets tunerun make it), the container's --cpuset flags,
 * or what makes the cgroup tunerun's to write. In v1's cpuset hierarchy no
 * unit owns a cgroup, so only the last two apply there.
 */
static char *cpuset_fix(const struct cgroup *cg, const char *cpus, const char *mems)
{
    bool scope = strstr(cg->unit, ".scope") != NULL;
    switch (cg->cs_owner) {
    case CG_OWN_UNIT:
        if (scope)
            return xasprintf("fix: start it as a service, with systemd-run -p AllowedCPUs=%s -p "
                             "AllowedMemoryNodes=%s, or -p Delegate=yes; %s is a scope",
                             cpus, mems, cg->unit);
        return xasprintf("fix: Delegate=yes in %s, which lets tunerun make the service's own "
                         "cgroup; or AllowedCPUs=%s and AllowedMemoryNodes=%s there (systemctl "
                         "edit %s)",
                         cg->unit, cpus, mems, cg->unit);
    case CG_OWN_READONLY:
        if (cg->unit[0] && !scope && cg->cs_v2) /* systemd ignores them on cgroup v1 */
            return xasprintf("fix: AllowedCPUs=%s and AllowedMemoryNodes=%s in %s (systemctl edit "
                             "%s)",
                             cpus, mems, cg->unit, cg->unit);
        if (cg->unit[0] && !scope)
            return xasprintf("fix: ProtectControlGroups=no in %s, which leaves tunerun the "
                             "cpuset hierarchy to write",
                             cg->unit);
        return xasprintf("fix: docker run --cpuset-cpus=%s --cpuset-mems=%s (Kubernetes: the "
                         "static CPU manager policy, with a Guaranteed pod)",
                         cpus, mems);
    case CG_OWN_DENIED:
        return xasprintf("fix: run tunerun as root, or in a cgroup delegated to this user "
                         "(systemd-run --user -p Delegate=yes)");
    default:
        if (cg->cs_v2)
            return xasprintf("fix: echo +cpuset > the parent cgroup's cgroup.subtree_control");
        return xasprintf("fix: mount the cpuset controller (mount -t cgroup -o cpuset cpuset "
                         "/sys/fs/cgroup/cpuset)");
    }
}

/*
 * The nodes with memory that the process may use: all a cpuset may give
 * it, or (tiered) those of the tiers the profile allows, unless none is.
 */
static hwloc_bitmap_t memory_nodes(const struct ctx *c, bool tiered)
{
    const struct topo *t = c->t;
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].has_memory && (!tiered || plan_tier_allows(c, i)))
            hwloc_bitmap_set(nodes, t->nodes[i].os_index);
    if (tiered && hwloc_bitmap_iszero(nodes)) {
        hwloc_bitmap_free(nodes);
        return memory_nodes(c, false);
    }
    return nodes;
}

/*
 * The memory nodes the cpuset allows: where a bind or an interleave puts
 * pages, those nodes alone; a local or preferred policy falls back to
 * other nodes when its own are full, and a cpuset of its nodes alone
 * would turn that spill into reclaim and the OOM killer, so it keeps
 * every node it may use, of the tiers the profile allows: the spill of a
 * local policy must not land on a slower tier, which only the cpuset can
 * stop (the kernel falls back along distances).
 */
static hwloc_bitmap_t cpuset_mems(const struct ctx *c)
{
    const struct plan *pl = c->pl;
    if ((pl->mpol == PLAN_MPOL_BIND || pl->mpol == PLAN_MPOL_INTERLEAVE ||
         pl->mpol == PLAN_MPOL_WEIGHTED_INTERLEAVE) &&
        !hwloc_bitmap_iszero(pl->mem_nodes))
        return hwloc_bitmap_dup(pl->mem_nodes);
    return memory_nodes(c, true);
}

/*
 * The cpuset step: by default, unless the profile says enforce = no. It
 * holds a service to what it was given; one given the whole machine
 * needs it only as a pool that may yield CPUs later (its cpuset shrinks
 * then), so others skip it and the cgroup it costs.
 */
void plan_add_cpuset_step(struct ctx *c, const struct cgroup *cg)
{
    const struct profile *p = c->p;
    struct plan *pl = c->pl;
    char *where = plan_origin(p->placement.enforce_at);
    if (!p->placement.enforce) {
        plan_note_add(pl, NOTE_INFO,
                      "cpuset: not enforced (enforce = no, %s): the service may set its own "
                      "affinity and memory policy, and leave its placement",
                      where);
        free(where);
        return;
    }
    hwloc_bitmap_t mems = cpuset_mems(c), all = memory_nodes(c, false);
    bool pool = c->pl->nsteps > 0 && pl->steps[0].type == STEP_CLAIM && pl->steps[0].u.claim.pool;
    bool whole = hwloc_bitmap_isequal(pl->cpus, c->t->cpus) && hwloc_bitmap_isequal(mems, all);
    hwloc_bitmap_free(all);
    char *cpus = bitmap_list(pl->cpus), *ml = bitmap_list(mems);
    if (whole && !pool) {
        plan_note_add(pl, NOTE_INFO,
                      "cpuset: it may use every CPU and memory node here; there is no placement "
                      "to hold");
    } else if (cg == NULL || !cg->cs_known) {
        plan_note_add(pl, NOTE_INFO,
                      "cpuset: the cgroup of another machine is not known; not planned");
    } else if (cg->cs_owner != CG_OWN_HOST && cg->cs_owner != CG_OWN_DELEGATED) {
        char *fix = cpuset_fix(cg, cpus, ml);
        plan_note_add(pl, whole ? NOTE_INFO : NOTE_WARN,
                      "cpuset: %s; nothing stops the service from setting its own affinity and "
                      "memory policy and leaving its placement (%s)",
                      cg->cs_why, fix);
        free(fix);
    } else {
        /*
         * On cgroup2 a process is in one cgroup for every controller, and
         * the swap step's shared child cannot hold this launch's own below
         * it (a cgroup with processes gives its children no controller):
         * the swap limit moves into this step's child instead.
         */
        struct plan_step folded = {0};
        if (cg->cs_v2 && pl->nsteps > 0 && pl->steps[pl->nsteps - 1].type == STEP_CGROUP) {
            folded = pl->steps[--pl->nsteps];
            free(folded.u.cgroup.dir);
        }
        struct plan_step *s = plan_add_step(
            pl, STEP_CPUSET,
            xasprintf("a cpuset cgroup of its own holds it to cpus %s and memory nodes %s: the "
                      "kernel clamps any affinity or memory policy it sets later, as nginx's "
                      "worker_cpu_affinity does (enforce, %s)%s%s%s",
                      cpus, ml, where,
                      pool ? "; as a shared pool, its cpuset shrinks when it yields CPUs" : "",
                      folded.why ? "; on cgroup v2 the same cgroup holds its swap policy: " : "",
                      folded.why ? folded.why : ""));
        free(folded.why);
        s->u.cpuset.dir = xstrdup(cg->cs_dir);
        s->u.cpuset.name = p->name;
        s->u.cpuset.cpus = hwloc_bitmap_dup(pl->cpus);
        s->u.cpuset.mems = mems;
        s->u.cpuset.v2 = cg->cs_v2;
        s->u.cpuset.set_swap_max = folded.type == STEP_CGROUP && folded.u.cgroup.set_swap_max;
        s->u.cpuset.swap_max = folded.u.cgroup.swap_max;
        mems = NULL;
    }
    hwloc_bitmap_free(mems);
    free(cpus);
    free(ml);
    free(where);
}
