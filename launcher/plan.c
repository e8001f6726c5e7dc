/*
 * plan.c - profile + topology + facts -> plan. Pure: no syscalls, no hwloc
 * topology calls (only its bitmap helpers).
 *
 * plan_build() runs the phases in order, each in a file of its own, all
 * working on one struct ctx (planner.h):
 *   1. candidates: allowed online CPUs within the inherited affinity; tunerun
 *      never widens what its parent gave it (here).
 *   1b. running services: what they hold, what this one keeps apart from,
 *      where it ran before a restart (plan_claims.c); its disk (plan_nodes.c).
 *   2. nodes: rank the nodes that can host CPUs and take the N best; for
 *      N > 1 the most compact group by the distance matrix (plan_nodes.c).
 *   3. CPUs: all of the chosen nodes' candidates, a count or a percentage,
 *      whole cores first (plan_cpus.c); 3b. the shared pools that yield
 *      CPUs to it (plan_claims.c).
 *   4. memory: each chosen node's own memory, or for a memoryless node the
 *      nearest node with memory; then the policy (plan_memory.c).
 *   5. steps, in the order a launch applies them: rlimits and oom score
 *      (plan_limits.c), memory policy, affinity and THP (plan_memory.c),
 *      the environment (plan_limits.c, the JVM's in plan_java.c), and the
 *      swap policy's cgroup (plan_cgroup.c); 5b. the arguments [args] adds
 *      to the command the exec step runs (plan_args.c).
 * Here too: the notes and steps every phase adds, their names and values.
 */
#include "planner.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

void plan_note_add(struct plan *pl, enum note_level level, const char *fmt, ...)
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

struct plan_step *plan_add_step(struct plan *pl, enum step_type type, char *why)
{
    pl->steps = xrealloc(pl->steps, (pl->nsteps + 1) * sizeof(*pl->steps));
    struct plan_step *s = &pl->steps[pl->nsteps++];
    memset(s, 0, sizeof(*s));
    s->type = type;
    s->why = why;
    return s;
}

char *plan_origin(struct origin at)
{
    if (at.line > 0)
        return xasprintf("%s:%d", at.file, at.line);
    if (at.file)
        return xasprintf("%s", at.file);
    return xasprintf("default");
}

void plan_swap_size(char *buf, size_t n, uint64_t v)
{
    if (v == UINT64_MAX)
        snprintf(buf, n, "max");
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}

const char *plan_mpol_name(enum plan_mpol m)
{
    static const char *const names[] = {"local",          "bind",       "preferred",
                                        "preferred-many", "interleave", "weighted-interleave"};
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
    case STEP_CPUSET:
        snprintf(buf, n, "cpuset");
        break;
    case STEP_SETENV:
        snprintf(buf, n, "env %s", s->u.env.name);
        break;
    case STEP_CLAIM:
        snprintf(buf, n, "claim");
        break;
    case STEP_YIELD:
        snprintf(buf, n, "yield");
        break;
    case STEP_PRIVILEGES:
        snprintf(buf, n, "privileges");
        break;
    case STEP_RLIMITS_FINAL:
        snprintf(buf, n, "final rlimits");
        break;
    case STEP_EXEC:
        snprintf(buf, n, "exec");
        break;
    }
}

void plan_step_value(const struct plan *pl, const struct plan_step *s, char *buf, size_t n)
{
    char a[24], b[24], size[32], *list = NULL;
    size_t len = 0;
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
        plan_swap_size(size, sizeof(size), s->u.cgroup.swap_max);
        if (s->u.cgroup.swappiness >= 0)
            snprintf(buf, n, "memory.swappiness=%d", s->u.cgroup.swappiness);
        else
            snprintf(buf, n, "memory.swap.max=%s", size);
        break;
    case STEP_CPUSET: {
        char *mems = bitmap_list(s->u.cpuset.mems);
        list = bitmap_list(s->u.cpuset.cpus);
        plan_swap_size(size, sizeof(size), s->u.cpuset.swap_max);
        snprintf(buf, n, "cpus %s, mems %s%s%s", list ? list : "", mems ? mems : "",
                 s->u.cpuset.set_swap_max ? ", memory.swap.max=" : "",
                 s->u.cpuset.set_swap_max ? size : "");
        free(mems);
        break;
    }
    case STEP_SETENV:
        snprintf(buf, n, "%s", s->u.env.value);
        break;
    case STEP_CLAIM:
        snprintf(buf, n, "%s", s->u.claim.dir);
        break;
    case STEP_YIELD:
        /* "nginx gives 2-3": the pool by its profile's name, which the claim holds */
        for (size_t i = 0; i < pl->nshrinks && len < n; i++) {
            char *gives = bitmap_list(pl->shrinks[i].gives);
            int w = snprintf(buf + len, n - len, "%s%s gives %s", i ? ", " : "",
                             pl->shrinks[i].profile, gives ? gives : "");
            len += w > 0 ? (size_t)w : 0;
            free(gives);
        }
        break;
    case STEP_PRIVILEGES: {
        /* what the profile asks, from the step alone: privs_describe() also asks the kernel */
        const struct privs *pv = s->u.privileges.pv;
        list = pv->caps ? privs_cap_list(pv->keep) : NULL;
        snprintf(buf, n, "%s%s%s%s%s", pv->change_id ? "user " : "",
                 pv->change_id ? pv->user_name : "",
                 !list           ? ""
                 : pv->change_id ? ", keeps "
                                 : "keeps ",
                 list ? list : "", pv->no_new_privs ? ", no_new_privs" : "");
        break;
    }
    case STEP_RLIMITS_FINAL:
        buf[0] = '\0';
        for (size_t i = 0; i < pl->nsteps && len < n; i++) {
            if (pl->steps[i].type != STEP_RLIMIT)
                continue;
            int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
                             rlimit_name(pl->steps[i].u.rlimit.resource));
            len += w > 0 ? (size_t)w : 0;
        }
        break;
    case STEP_EXEC:
        buf[0] = '\0';
        for (char *const *w = s->u.exec.argv; w && *w && len < n; w++) {
            char shown[ESCAPED_SIZE(160)];
            int k = snprintf(buf + len, n - len, "%s%s", w == s->u.exec.argv ? "" : " ",
                             str_escaped(shown, sizeof(shown), *w, 160));
            len += k > 0 ? (size_t)k : 0;
        }
        if (s->u.exec.argv == NULL)
            snprintf(buf, n, "the command after --");
        break;
    }
    free(list);
}

double plan_gib(uint64_t bytes)
{
    return (double)bytes / (double)GIB;
}

/*
 * "64.0 GiB" and "63.9 GiB" for a size that exceeds another: in MiB, then
 * KiB, then bytes where a coarser unit would print them alike ("64.0 GiB
 * is more than 64.0 GiB").
 */
void plan_sizes_apart(char *a, char *b, size_t n, uint64_t x, uint64_t y)
{
    static const struct {
        uint64_t unit;
        const char *name;
    } units[] = {{MIB, "MiB"}, {1024, "KiB"}, {1, "bytes"}};
    snprintf(a, n, "%.1f GiB", plan_gib(x));
    snprintf(b, n, "%.1f GiB", plan_gib(y));
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && strcmp(a, b) == 0 && x != y; i++) {
        snprintf(a, n, "%llu %s", (unsigned long long)(x / units[i].unit), units[i].name);
        snprintf(b, n, "%llu %s", (unsigned long long)(y / units[i].unit), units[i].name);
    }
}

/* "CPU 3" or "CPUs 0-3", as notes name a set. */
const char *plan_cpus_word(hwloc_const_bitmap_t set)
{
    return hwloc_bitmap_weight(set) == 1 ? "CPU" : "CPUs";
}

/*
 * A machine none of whose nodes has a known size: an export without
 * local_memory (hwloc gives 0 for that, as for a memoryless node), or a
 * host whose nodes' meminfo cannot be read. Every node then counts as
 * having memory, and nothing that weighs sizes can: whether memory_size
 * fits the bound nodes, when a preference spills over, which node has the
 * most free memory, the JVM's MaxRAM. A warning, so that --strict refuses
 * a plan it cannot judge. Distinct from a memoryless node (has_memory
 * false on a machine whose other nodes have sizes), which is a shape the
 * planner places for. Not for a host whose sizes were made up from its
 * zones (memory_note): that note needs a node that counts some memory.
 */
static void note_memory_unknown(struct plan *pl, const struct topo *t)
{
    if (t->memory_known || t->nnodes == 0)
        return; /* no node at all has its own warning */
    static const struct {
        const char *why, *fix;
    } by_source[] = {
        [TOPO_HOST] = {"this machine's /sys/devices/system/node/node*/meminfo says none: masked?",
                       "leave /sys/devices/system/node unmasked where tunerun runs"},
        [TOPO_XML] = {"the export gives none",
                      "export it again with lstopo on that machine, whose hwloc reads each "
                      "node's size from the kernel"},
        [TOPO_SYNTHETIC] = {"the description gives none",
                            "give its NUMA nodes a size, as numa:1(memory=64GiB) does"},
    };
    plan_note_add(pl, NOTE_WARN,
                  "memory: no NUMA node's size is known (%s), so room is not judged: whether "
                  "the service's memory fits its nodes, which has the most free, when it spills "
                  "over (fix: %s)",
                  by_source[t->source].why, by_source[t->source].fix);
}

bool plan_build(struct plan *pl, const struct plan_input *in, struct err *e)
{
    const struct topo *t = in->topo;
    memset(pl, 0, sizeof(*pl));
    pl->profile = in->profile->name;
    pl->cgroup = in->cgroup;
    pl->privs = in->privs;
    pl->near = in->profile->placement.near ? in->near : NULL;
    plan_note_privileges(pl, in);
    if (t->guess)
        plan_note_add(pl, NOTE_WARN,
                      "topology: %s; CPUs and memory are placed on that guess (fix: %s)",
                      t->guess->why, t->guess->fix);
    if (t->memory_note)
        plan_note_add(pl, NOTE_INFO, "memory: %s", t->memory_note);
    note_memory_unknown(pl, t);
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
                    .fixed_oom = in->fixed_oom,
                    .thp_inherited = in->thp_inherited,
                    .weights = in->weights};
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
        plan_note_add(pl, NOTE_INFO, "inherited affinity limits the candidates to %s %s",
                      plan_cpus_word(c.cand), aff);
        free(aff);
    }
    plan_note_claims(&c, in);
    plan_note_previous(&c, in->previous);
    plan_note_near(&c, in);
    c.node_cand = xrealloc(NULL, (t->nnodes ? t->nnodes : 1) * sizeof(hwloc_bitmap_t));
    for (size_t i = 0; i < t->nnodes; i++) {
        c.node_cand[i] = hwloc_bitmap_alloc();
        hwloc_bitmap_and(c.node_cand[i], t->nodes[i].cpus, c.cand);
    }
    plan_rank_nodes(&c);
    if (c.nrank > 0)
        plan_choose_nodes(&c);
    else if (t->nnodes == 0)
        plan_note_add(pl, NOTE_WARN, "no NUMA node is known here; placing by CPUs only");
    else
        plan_note_add(pl, NOTE_INFO,
                      "no allowed node owns the candidate CPUs (their own nodes are not among the "
                      "cpuset's memory nodes); placing by CPUs only");
    plan_separate_by_cores(&c);
    plan_choose_cpus(&c);
    plan_add_shrinks(&c);
    plan_settle_nodes(&c);
    /* the steps, in the order a launch takes them (enum step_type's) */
    plan_add_claim_step(&c, in);
    plan_add_swap_steps(&c, in->cgroup);
    plan_add_cpuset_step(&c, in->cgroup);
    plan_add_limit_steps(&c);
    plan_add_placement_steps(&c);
    plan_add_yield_step(&c);
    plan_add_privileges_step(&c, in);
    plan_add_env_steps(&c, in->environ);
    plan_add_args(&c, in);
    plan_settle_exec_path(pl, in->environ);
    plan_add_final_rlimits_step(&c);
    plan_add_exec_step(&c, in);

    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_free(c.node_cand[i]);
    free(c.node_cand);
    free(c.rank);
    free(c.claimed_on);
    free(c.claimed_cand);
    free(c.near);
    free(c.near_path);
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
        } else if (s->type == STEP_CPUSET) {
            free(s->u.cpuset.dir);
            hwloc_bitmap_free(s->u.cpuset.cpus);
            hwloc_bitmap_free(s->u.cpuset.mems);
        } else if (s->type == STEP_PRIVILEGES) {
            free(s->u.privileges.path);
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
    for (size_t i = 0; i < pl->nargs; i++) {
        free(pl->args[i].option);
        free(pl->args[i].value);
        free(pl->args[i].passed);
    }
    free(pl->args);
    for (size_t i = 0; i < pl->nadded; i++)
        free(pl->added[i]);
    free(pl->added);
    free(pl->argv); /* the words themselves are the command's and `added` */
    memset(pl, 0, sizeof(*pl));
}
