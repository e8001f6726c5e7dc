/*
 * fuzz_plan.c - libFuzzer: the planner on random machines and random claims.
 *
 * The input bytes are read as choices: a machine (up to 16 nodes and 128
 * PUs, CPU-less and memoryless nodes, offline PUs, SMT, kinds of core, an
 * inherited affinity, a distance matrix or none), a profile (every placement and
 * memory key), the running services' claims, a previous placement and a
 * cgroup. Whatever the planner decides must keep its promises; a broken
 * one is an abort(), which libFuzzer reports with the input.
 */
#include <hwloc/bitmap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "report.h"

struct bytes {
    const uint8_t *p;
    size_t n;
};

static unsigned take(struct bytes *b, unsigned range)
{
    if (range == 0)
        return 0;
    unsigned v = 0;
    if (b->n) {
        v = b->p[0];
        b->p++;
        b->n--;
    }
    return v % range;
}

static void random_set(struct bytes *b, hwloc_bitmap_t set, const struct topo *t)
{
    hwloc_bitmap_zero(set);
    int id;
    hwloc_bitmap_foreach_begin(id, t->cpus)
    {
        if (take(b, 2))
            hwloc_bitmap_set(set, (unsigned)id);
    }
    hwloc_bitmap_foreach_end();
    if (hwloc_bitmap_iszero(set) && !hwloc_bitmap_iszero(t->cpus))
        hwloc_bitmap_set(set, (unsigned)hwloc_bitmap_first(t->cpus));
}

static void make_topo(struct bytes *b, struct topo *t)
{
    memset(t, 0, sizeof(*t));
    t->source = TOPO_SYNTHETIC;
    t->desc = strdup("fuzz");
    t->nnodes = 1 + take(b, 16);
    t->nodes = calloc(t->nnodes, sizeof(*t->nodes));
    t->cpus = hwloc_bitmap_alloc();
    t->offline = hwloc_bitmap_alloc();
    t->binding = hwloc_bitmap_alloc();
    t->memory_known = take(b, 8) != 0;
    for (size_t i = 0, os = 0; i < t->nnodes; i++) {
        struct topo_node *n = &t->nodes[i];
        n->os_index = (unsigned)(os += take(b, 3)); /* increasing, not always dense */
        os++;
        n->cpus = hwloc_bitmap_alloc();
        n->has_memory = take(b, 6) != 0;
        n->mem_total = n->has_memory ? (uint64_t)(1 + take(b, 64)) << 28 : 0;
        n->mem_free = n->has_memory ? n->mem_total / (1 + take(b, 4)) : 0;
    }
    unsigned npus = 1 + take(b, 128), core_left = 0;
    for (unsigned pu = 0; pu < npus; pu++) {
        if (take(b, 16) == 0) {
            hwloc_bitmap_set(t->offline, pu);
            continue;
        }
        unsigned node = take(b, (unsigned)t->nnodes + 1); /* == nnodes: no node owns it */
        if (node < t->nnodes)
            hwloc_bitmap_set(t->nodes[node].cpus, pu);
        hwloc_bitmap_set(t->cpus, pu);
        if (core_left == 0) {
            t->cores = realloc(t->cores, (t->ncores + 1) * sizeof(*t->cores));
            t->cores[t->ncores++] = hwloc_bitmap_alloc();
            core_left = 1 + take(b, 4);
        }
        hwloc_bitmap_set(t->cores[t->ncores - 1], pu);
        core_left--;
    }
    if (take(b, 3) == 0)
        hwloc_bitmap_copy(t->binding, t->cpus);
    else
        random_set(b, t->binding, t);
    if (take(b, 3) == 0) { /* a hybrid: every CPU of one of 2 or 3 kinds, fastest first */
        size_t nk = 2 + take(b, 2);
        t->kinds = calloc(nk, sizeof(*t->kinds));
        for (size_t k = 0; k < nk; k++) {
            t->kinds[k].cpus = hwloc_bitmap_alloc();
            snprintf(t->kinds[k].label, sizeof(t->kinds[k].label), "kind%zu", k + 1);
        }
        int pu;
        hwloc_bitmap_foreach_begin(pu, t->cpus)
        {
            hwloc_bitmap_set(t->kinds[take(b, (unsigned)nk)].cpus, (unsigned)pu);
        }
        hwloc_bitmap_foreach_end();
        for (size_t k = 0; k < nk; k++)
            if (!hwloc_bitmap_iszero(t->kinds[k].cpus))
                t->kinds[t->nkinds++] = t->kinds[k];
            else
                hwloc_bitmap_free(t->kinds[k].cpus);
        if (t->nkinds == 1) { /* as topo.c leaves it: one kind is none */
            hwloc_bitmap_free(t->kinds[0].cpus);
            t->nkinds = 0;
        }
    }
    if (take(b, 4)) {
        t->distance = calloc(t->nnodes * t->nnodes, sizeof(unsigned));
        for (size_t i = 0; i < t->nnodes; i++)
            for (size_t j = 0; j < t->nnodes; j++)
                t->distance[i * t->nnodes + j] = i == j ? 10 : 11 + take(b, 245);
    }
}

static const char *pick(struct bytes *b, const char *const *v, unsigned n)
{
    return v[take(b, n)];
}

static char *make_profile_text(struct bytes *b)
{
    static const char *const names[] = {"mysql", "nginx", "redis", "java", "x"};
    static const char *const cpus[] = {"node", "all", "1", "3", "50%", "100%", "7"};
    static const char *const mem[] = {"local", "bind", "preferred", "interleave", "auto"};
    static const char *const sizes[] = {"0", "1G", "64G", "300M", "1T"};
    static const char *const thp[] = {"system", "madvise", "never"};
    static const char *const arena[] = {"unset", "auto", "1", "8"};
    static const char *const yn[] = {"yes", "no"};
    static const char *const nodes[] = {"1", "2", "3", "all", "4"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "[profile]\nname = %s\n[placement]\nnodes = %s\ncpus = %s\nsmt = %s\n",
            pick(b, names, 5), pick(b, nodes, 5), pick(b, cpus, 7), pick(b, yn, 2));
    fprintf(f, "exclusive = %s\nmemory = %s\n", take(b, 4) ? "no" : "yes", pick(b, mem, 5));
    if (take(b, 2))
        fprintf(f, "memory_size = %s\n", pick(b, sizes, 5));
    if (take(b, 2))
        fprintf(f, "avoid = %s, %s\n", pick(b, names, 5), pick(b, names, 5));
    if (take(b, 2))
        fprintf(f, "near = /srv\n");
    fprintf(f, "[memory]\nthp = %s\nmalloc_arena_max = %s\n", pick(b, thp, 3), pick(b, arena, 4));
    if (take(b, 2))
        fprintf(f, "swappiness = %u\n", take(b, 101));
    if (take(b, 2))
        fprintf(f, "swap_max = %s\n", pick(b, sizes, 5));
    if (take(b, 2))
        fprintf(f, "[java]\nactive_processor_count = auto\nuse_numa = auto\nmax_ram = auto\n");
    fclose(f);
    return text;
}

static void make_claims(struct bytes *b, const struct topo *t, struct claim **out, size_t *n)
{
    static const char *const names[] = {"mysql", "nginx", "redis", "java", "x", "y"};
    *n = take(b, 7);
    *out = calloc(*n ? *n : 1, sizeof(**out));
    for (size_t i = 0; i < *n; i++) {
        struct claim *c = &(*out)[i];
        char line[512];
        snprintf(line, sizeof(line), "claim.%zu profile=%s key=%016zx cpus=0 nodes=0 mpol=bind", i,
                 pick(b, names, 6), i);
        bool ended;
        if (!registry_parse_line(line, c, &ended))
            abort();
        random_set(b, c->cpus, t);
        hwloc_bitmap_zero(c->nodes);
        for (size_t k = 0; k < t->nnodes; k++)
            if (hwloc_bitmap_intersects(c->cpus, t->nodes[k].cpus))
                hwloc_bitmap_set(c->nodes, t->nodes[k].os_index);
        hwloc_bitmap_copy(c->mem_nodes, c->nodes);
        c->exclusive = take(b, 4) == 0;
        c->pool = !c->exclusive && take(b, 2);
        if (take(b, 2)) {
            c->avoid = calloc(1, sizeof(char *));
            c->avoid[c->navoid++] = strdup(pick(b, names, 6));
        }
        c->pid = 1000 + (long)i;
    }
}

static const struct profile *checked_profile;

/* A broken promise: say which, with the plan and the machine, then abort for libFuzzer. */
static void broken(const char *what, const struct plan *pl, const struct topo *t)
{
    fprintf(stderr, "fuzz_plan: %s\n", what);
    for (size_t i = 0; i < t->nnodes; i++) {
        char *cpus = NULL;
        hwloc_bitmap_list_asprintf(&cpus, t->nodes[i].cpus);
        fprintf(stderr, "  node %u: cpus %s, memory %s\n", t->nodes[i].os_index, cpus,
                t->nodes[i].has_memory ? "yes" : "no");
        free(cpus);
    }
    report_plan_text(stderr, checked_profile, t, pl);
    abort();
}

/* What every plan must honour, whatever the machine and the claims. */
static void check(const struct plan *pl, const struct topo *t, const struct claim *claims,
                  size_t nclaims)
{
    hwloc_bitmap_t cand = hwloc_bitmap_alloc();
    hwloc_bitmap_and(cand, t->cpus, t->binding);
    if (!hwloc_bitmap_isincluded(pl->cpus, cand))
        broken("a CPU outside the allowed, online, inherited ones", pl, t);
    if (hwloc_bitmap_intersects(pl->cpus, t->offline))
        broken("an offline CPU", pl, t);
    int id;
    hwloc_bitmap_foreach_begin(id, pl->nodes)
    {
        int k = topo_node_index(t, (unsigned)id);
        if (k < 0 || hwloc_bitmap_iszero(t->nodes[k].cpus))
            broken("a CPU home that is no node, or has no CPU", pl, t);
    }
    hwloc_bitmap_foreach_end();
    bool any_memory = false, from_memory = false;
    for (size_t i = 0; i < t->nnodes; i++)
        any_memory |= t->nodes[i].has_memory;
    hwloc_bitmap_foreach_begin(id, pl->mem_nodes)
    {
        int k = topo_node_index(t, (unsigned)id);
        if (k < 0)
            broken("memory from a node that does not exist", pl, t);
        from_memory |= t->nodes[k].has_memory;
    }
    hwloc_bitmap_foreach_end();
    if (t->memory_known && any_memory && pl->mpol != PLAN_MPOL_LOCAL && !from_memory)
        broken("a memory policy on memoryless nodes only", pl, t);
    for (size_t i = 0; i < pl->nshrinks; i++)
        if (hwloc_bitmap_intersects(pl->shrinks[i].cpus, pl->shrinks[i].gives))
            broken("a pool keeps CPUs it gives up", pl, t);
    const struct profile *p = checked_profile;
    if (p->placement.cpus == CPUS_COUNT &&
        hwloc_bitmap_weight(pl->cpus) > (int)p->placement.cpus_value)
        broken("more CPUs than the count asked for", pl, t);
    if (p->placement.cpus == CPUS_COUNT && p->placement.smt && !pl->degraded &&
        hwloc_bitmap_weight(pl->cpus) != (int)p->placement.cpus_value)
        broken("fewer CPUs than the count asked for, and no warning", pl, t);
    if (hwloc_bitmap_iszero(pl->cpus) && hwloc_bitmap_intersects(t->cpus, t->binding))
        broken("no CPU at all, with candidates left", pl, t);
    if (pl->mpol != PLAN_MPOL_LOCAL && hwloc_bitmap_iszero(pl->mem_nodes) && any_memory)
        broken("a memory policy over no node", pl, t);
    hwloc_bitmap_t in = hwloc_bitmap_alloc(), homes = hwloc_bitmap_alloc();
    for (size_t i = 0; i < t->ncores && !p->placement.smt; i++) {
        hwloc_bitmap_and(in, t->cores[i], pl->cpus);
        if (hwloc_bitmap_weight(in) > 1)
            broken("two PUs of one core with smt = no", pl, t);
    }
    for (size_t i = 0; i < t->nnodes; i++)
        if (hwloc_bitmap_intersects(t->nodes[i].cpus, pl->cpus))
            hwloc_bitmap_set(homes, t->nodes[i].os_index);
    if (!hwloc_bitmap_isequal(homes, pl->nodes))
        broken("nodes other than the ones its CPUs live on", pl, t);
    /* what the profile keeps apart from: unless the plan warns that it shares */
    bool sharing = false;
    for (size_t i = 0; i < pl->nnotes; i++)
        sharing |= pl->notes[i].level == NOTE_WARN && strstr(pl->notes[i].text, "sharing");
    for (size_t i = 0; i < nclaims && !sharing; i++) {
        const struct claim *k = &claims[i];
        hwloc_bitmap_and(in, pl->cpus, k->cpus);
        for (size_t s = 0; s < pl->nshrinks; s++)
            if (pl->shrinks[s].claim == i)
                hwloc_bitmap_andnot(in, in, pl->shrinks[s].gives);
        if (!hwloc_bitmap_iszero(in) && k->exclusive)
            broken("an exclusive service's CPU, and no warning", pl, t);
        if (!hwloc_bitmap_iszero(in) && plan_depends_on(p, k))
            broken("a CPU of a service it keeps apart from, not given up, and no warning", pl, t);
    }
    hwloc_bitmap_free(in);
    hwloc_bitmap_free(homes);
    hwloc_bitmap_free(cand);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL)
        sink = fopen("/dev/null", "w");
    struct bytes b = {data, size};
    struct topo t;
    make_topo(&b, &t);
    char *text = make_profile_text(&b);
    struct profile p;
    struct err e;
    const struct profile_file file = {"/fz/p.ini", text};
    if (!profile_load_files(&p, &file, 1, NULL, &e)) {
        fprintf(stderr, "fuzz_plan: a generated profile does not load: %s\n%s", e.msg, text);
        abort();
    }
    struct claim *claims;
    size_t nclaims;
    make_claims(&b, &t, &claims, &nclaims);
    struct cgroup cg = {.mode = CG_UNIFIED, .v2 = take(&b, 2), .owner = take(&b, 6)};
    snprintf(cg.why, sizeof(cg.why), "not ours (fuzz)");
    cg.dir = strdup("/sys/fs/cgroup/fz");
    cg.path = strdup("/fz");
    char *env[] = {"PATH=/bin", "JAVA_TOOL_OPTIONS=-Xss1m", NULL};
    /* near's disks: on any nodes, some of them not in the topology, or on none */
    struct plan_near near = {.nodes = hwloc_bitmap_alloc(), .what = strdup("/srv is on nvme0n1")};
    for (unsigned k = take(&b, 3); k > 0; k--)
        hwloc_bitmap_set(near.nodes, take(&b, 10));
    near.status = hwloc_bitmap_iszero(near.nodes) ? NEAR_NO_NODE : NEAR_FOUND;
    struct plan_input in = {
        .profile = &p,
        .topo = &t,
        .environ = take(&b, 2) ? env : NULL,
        .registry = nclaims > 0,
        .claims = claims,
        .nclaims = nclaims,
        .previous = nclaims && take(&b, 2) ? &claims[0] : NULL,
        .cgroup = take(&b, 2) ? &cg : NULL,
        .near = take(&b, 4) ? &near : NULL,
        .nr_open = take(&b, 2) ? (long)take(&b, 1 << 21) + 1 : 0,
        .privs_refused = take(&b, 4) ? NULL : "security.user: becoming x needs CAP_SETUID",
        .thp_inherited = (enum thp_mode)take(&b, 3),
    };
    struct plan pl;
    if (plan_build(&pl, &in, &e)) {
        checked_profile = &p;
        check(&pl, &t, claims, nclaims);
        report_plan_json(sink, &p, &t, &pl);
        report_plan_text(sink, &p, &t, &pl);
        plan_free(&pl);
    }
    for (size_t i = 0; i < nclaims; i++)
        claim_free(&claims[i]);
    free(claims);
    cgroup_free(&cg);
    hwloc_bitmap_free(near.nodes);
    free(near.what);
    profile_free(&p);
    free(text);
    topo_free(&t);
    return 0;
}
