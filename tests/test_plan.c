/*
 * test_plan.c - every planner rule, on real machine exports, synthetic
 * shapes up to thousands of PUs, and hand-made topologies for the shapes
 * no export has (a memoryless node with CPUs, an uneven distance matrix).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "plan.h"

#include <sys/capability.h>
#include "util.h"
#include "topologies.h"

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)

static const char *const shipped[] = {"mysql",      "redis",     "nginx",  "java",
                                      "postgresql", "memcached", "haproxy"};

static struct profile load_profile(const char *name, const char *const *sets)
{
    struct profile p;
    struct err e;
    char path[128];
    snprintf(path, sizeof(path), "profiles/%s.ini", name);
    if (!profile_load(&p, path, NULL, &e))
        fail_msg("%s", e.msg);
    for (; sets && *sets; sets++)
        if (!profile_set(&p, *sets, &e))
            fail_msg("%s", e.msg);
    return p;
}

static struct profile profile_text(const char *text)
{
    struct profile p;
    struct err e;
    if (!profile_load_string(&p, "test.ini", text, NULL, &e))
        fail_msg("%s", e.msg);
    return p;
}

static struct topo load_topo(const char *spec)
{
    struct topo t;
    struct err e;
    if (!topo_load(&t, spec, NULL, &e))
        fail_msg("%s: %s", spec, e.msg);
    return t;
}

/* One of the machine exports in ../shared/topologies, by file name. */
static struct topo shared_xml(const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", topologies_dir(), name);
    return load_topo(path);
}

static struct plan make_plan(const struct profile *p, const struct topo *t, char *const *env)
{
    struct plan pl;
    struct err e;
    struct plan_input in = {.profile = p, .topo = t, .environ = env};
    if (!plan_build(&pl, &in, &e))
        fail_msg("%s", e.msg);
    return pl;
}

static const struct plan_step *find_env(const struct plan *pl, const char *name)
{
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_SETENV && strcmp(pl->steps[i].u.env.name, name) == 0)
            return &pl->steps[i];
    return NULL;
}

static bool is_home(const struct topo *t, unsigned os)
{
    int i = topo_node_index(t, os);
    return i >= 0 && !hwloc_bitmap_iszero(t->nodes[i].cpus);
}

/* The nearest node with memory, by the distance matrix (ties: any equally near). */
static unsigned nearest_distance(const struct topo *t, size_t i)
{
    unsigned best = ~0U;
    for (size_t j = 0; j < t->nnodes; j++)
        if (t->nodes[j].has_memory && topo_distance(t, i, j) < best)
            best = topo_distance(t, i, j);
    return best;
}

/* The invariants that hold for every profile on every machine. */
static void check_invariants(const struct profile *p, const struct topo *t, const struct plan *pl,
                             const char *label)
{
    hwloc_bitmap_t cand = hwloc_bitmap_alloc();
    hwloc_bitmap_and(cand, t->cpus, t->binding);
    if (hwloc_bitmap_iszero(pl->cpus))
        fail_msg("%s: no CPU planned", label);
    /* never a disallowed, offline or non-inherited CPU */
    if (!hwloc_bitmap_isincluded(pl->cpus, cand))
        fail_msg("%s: planned CPUs outside allowed ∩ inherited affinity", label);
    if (hwloc_bitmap_intersects(pl->cpus, t->offline))
        fail_msg("%s: an offline CPU is planned", label);

    int os;
    hwloc_bitmap_t in_nodes = hwloc_bitmap_alloc();
    hwloc_bitmap_foreach_begin(os, pl->nodes)
    {
        /* a CPU-less node is never a CPU home */
        if (!is_home(t, (unsigned)os))
            fail_msg("%s: node %d has no CPUs but is a CPU home", label, os);
        hwloc_bitmap_or(in_nodes, in_nodes, t->nodes[topo_node_index(t, (unsigned)os)].cpus);
        /* every node the plan names runs some of the service's CPUs */
        if (!hwloc_bitmap_intersects(t->nodes[topo_node_index(t, (unsigned)os)].cpus, pl->cpus))
            fail_msg("%s: node %d holds none of the planned CPUs", label, os);
        /* a memoryless node's memory comes from the nearest node with memory */
        size_t i = (size_t)topo_node_index(t, (unsigned)os);
        if (!t->nodes[i].has_memory && p->placement.cpus != CPUS_ALL &&
            pl->mpol != PLAN_MPOL_INTERLEAVE) {
            bool ok = false;
            int m;
            hwloc_bitmap_foreach_begin(m, pl->mem_nodes)
            {
                size_t j = (size_t)topo_node_index(t, (unsigned)m);
                if (topo_distance(t, i, j) == nearest_distance(t, i))
                    ok = true;
            }
            hwloc_bitmap_foreach_end();
            if (!ok)
                fail_msg("%s: memoryless node %d does not get its nearest memory", label, os);
        }
    }
    hwloc_bitmap_foreach_end();
    /* CPUs lie within the chosen nodes */
    if (p->placement.cpus != CPUS_ALL && !hwloc_bitmap_isincluded(pl->cpus, in_nodes))
        fail_msg("%s: CPUs outside the chosen nodes", label);
    if (p->placement.nodes == 1 && p->placement.cpus != CPUS_ALL &&
        hwloc_bitmap_weight(pl->nodes) != 1)
        fail_msg("%s: nodes = 1 but %d chosen", label, hwloc_bitmap_weight(pl->nodes));

    /* memory only from nodes that have it */
    hwloc_bitmap_foreach_begin(os, pl->mem_nodes)
    {
        int i = topo_node_index(t, (unsigned)os);
        if (i < 0 || !t->nodes[i].has_memory)
            fail_msg("%s: memory planned on node %d, which has none", label, os);
    }
    hwloc_bitmap_foreach_end();
    if (pl->mpol != PLAN_MPOL_LOCAL && hwloc_bitmap_iszero(pl->mem_nodes))
        fail_msg("%s: policy %s with no nodes", label, plan_mpol_name(pl->mpol));

    /* steps come in apply order (enum step_type's): the claim first, the exec last */
    for (size_t i = 1; i < pl->nsteps; i++)
        if (pl->steps[i].type < pl->steps[i - 1].type)
            fail_msg("%s: step %zu out of order", label, i);
    hwloc_bitmap_free(in_nodes);
    hwloc_bitmap_free(cand);
}

/* nodes = 2 takes the closest pair among the nodes that can host CPUs. */
static void check_closest_pair(const struct topo *t, const struct plan *pl, const char *label)
{
    unsigned best = ~0U;
    for (size_t a = 0; a < t->nnodes; a++)
        for (size_t b = a + 1; b < t->nnodes; b++)
            if (is_home(t, t->nodes[a].os_index) && is_home(t, t->nodes[b].os_index) &&
                topo_distance(t, a, b) < best)
                best = topo_distance(t, a, b);
    if (best == ~0U)
        return; /* fewer than two homes */
    int a = hwloc_bitmap_first(pl->nodes), b = hwloc_bitmap_next(pl->nodes, a);
    assert_true(b >= 0);
    unsigned got = topo_distance(t, (size_t)topo_node_index(t, (unsigned)a),
                                 (size_t)topo_node_index(t, (unsigned)b));
    if (got != best)
        fail_msg("%s: nodes %d,%d at distance %u, closest pair is %u", label, a, b, got, best);
}

static const char *const variants[][3] = {
    {NULL},
    {"placement.nodes=2", NULL},
    {"placement.nodes=all", "placement.memory=interleave", NULL},
    {"placement.cpus=50%", "placement.smt=no", NULL},
    {"placement.cpus=3", NULL},
    {"placement.memory=auto", "placement.memory_size=64G", NULL},
    {"placement.cpus=all", "placement.memory=preferred", NULL},
};

static void plan_everything_on(const struct topo *t, const char *label)
{
    for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++)
        for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
            struct profile p = load_profile(shipped[i], variants[v]);
            struct plan pl = make_plan(&p, t, NULL);
            char what[512];
            snprintf(what, sizeof(what), "%s, %s%s%s", label, shipped[i],
                     variants[v][0] ? " --set " : "", variants[v][0] ? variants[v][0] : "");
            check_invariants(&p, t, &pl, what);
            if (p.placement.nodes == 2 && p.placement.cpus != CPUS_ALL)
                check_closest_pair(t, &pl, what);
            plan_free(&pl);
            profile_free(&p);
        }
}

static void test_every_profile_on_every_machine(void **state)
{
    (void)state;
    char **files = topology_files();
    for (char **f = files; *f; f++) {
        struct topo t = load_topo(*f);
        plan_everything_on(&t, *f);
        topo_free(&t);
    }
    topology_files_free(files);
}

static void test_synthetic_shapes_up_to_thousands_of_pus(void **state)
{
    (void)state;
    static const char *const shapes[] = {
        "synthetic:pu:1", "synthetic:pack:2 numa:1 core:8 pu:2",
        "synthetic:pack:4 numa:2 core:16 pu:2",
        "synthetic:pack:16 numa:4 core:32 pu:2", /* 4096 PUs */
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        struct topo t;
        struct err e;
        if (!topo_load(&t, shapes[i], NULL, &e))
            fail_msg("%s: %s", shapes[i], e.msg);
        plan_everything_on(&t, shapes[i]);
        topo_free(&t);
    }
}

static void test_mysql_on_two_socket_xeon(void **state)
{
    (void)state;
    struct topo t = shared_xml("32em64t-2n8c2t-pci-normalio.xml");
    struct profile p = load_profile("mysql", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_int_equal(hwloc_bitmap_weight(pl.nodes), 1);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 16);
    assert_true(hwloc_bitmap_isequal(pl.nodes, pl.mem_nodes));
    assert_int_equal(pl.mpol, PLAN_MPOL_BIND);
    assert_false(pl.degraded);
    assert_null(find_env(&pl, "MALLOC_ARENA_MAX"));
    plan_free(&pl);

    /* smt = no: one PU per core */
    const char *const sets[] = {"placement.smt=no", NULL};
    profile_free(&p);
    p = load_profile("mysql", sets);
    pl = make_plan(&p, &t, NULL);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 8);
    for (size_t c = 0; c < t.ncores; c++) {
        hwloc_bitmap_t both = hwloc_bitmap_alloc();
        hwloc_bitmap_and(both, t.cores[c], pl.cpus);
        assert_true(hwloc_bitmap_weight(both) <= 1);
        hwloc_bitmap_free(both);
    }
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

static void test_inherited_affinity_is_never_widened(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:2");
    hwloc_bitmap_list_sscanf(t.binding, "9-10");
    for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++) {
        struct profile p = load_profile(shipped[i], NULL);
        struct plan pl = make_plan(&p, &t, NULL);
        hwloc_bitmap_t want = hwloc_bitmap_alloc();
        hwloc_bitmap_list_sscanf(want, "9-10");
        assert_true(hwloc_bitmap_isequal(pl.cpus, want));
        assert_true(hwloc_bitmap_isset(pl.nodes, 1));
        hwloc_bitmap_free(want);
        plan_free(&pl);
        profile_free(&p);
    }
    /* no overlap at all: no plan, and the message says why */
    hwloc_bitmap_only(t.binding, 999);
    struct profile p = load_profile("mysql", NULL);
    struct plan pl;
    struct err e;
    struct plan_input in = {.profile = &p, .topo = &t};
    assert_false(plan_build(&pl, &in, &e));
    assert_non_null(strstr(e.msg, "inherited affinity"));
    profile_free(&p);
    topo_free(&t);
}

static const struct plan_step *find_step(const struct plan *pl, enum step_type type)
{
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == type)
            return &pl->steps[i];
    return NULL;
}

/* The first note of that level that holds text, or NULL. */
static const char *note_with(const struct plan *pl, enum note_level level, const char *text)
{
    for (size_t i = 0; i < pl->nnotes; i++)
        if (pl->notes[i].level == level && strstr(pl->notes[i].text, text))
            return pl->notes[i].text;
    return NULL;
}

static bool has_note(const struct plan *pl, const char *text)
{
    for (size_t i = 0; i < pl->nnotes; i++)
        if (strstr(pl->notes[i].text, text))
            return true;
    return false;
}

/* set is `want` in hwloc's list format, or the test fails saying what it is. */
static void assert_list(hwloc_const_bitmap_t set, const char *what, const char *want,
                        const char *label)
{
    char *got = bitmap_list(set);
    if (strcmp(got, want) != 0)
        fail_msg("%s: %s %s, not %s", label, what, got, want);
    free(got);
}

static void assert_cpus(const struct plan *pl, const char *want, const char *label)
{
    assert_list(pl->cpus, "cpus", want, label);
}

/* On a hybrid machine a count of CPUs takes the fastest kind of core first. */
static void test_fastest_cores_first(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/hybrid.xml"); /* 0-7 efficiency, 8-23 performance */
    plan_everything_on(&t, "tests/data/hybrid.xml");
    static const struct {
        const char *sets[3], *cpus, *note;
    } cases[] = {
        {{"placement.cpus=6", NULL}, "8-13", "(6); the fastest kind of core first: 6 IntelCore"},
        {{"placement.cpus=20", NULL}, "0-3,8-23", "first: 16 IntelCore, 4 IntelAtom"},
        {{"placement.cpus=4", "placement.smt=no", NULL},
         "8,10,12,14",
         "(smt = no); the fastest kind of core first: 4 IntelCore"},
        {{NULL}, "0-23", "(24); kinds of core: 16 IntelCore, 8 IntelAtom"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct profile p = load_profile("mysql", cases[i].sets);
        struct plan pl = make_plan(&p, &t, NULL);
        assert_cpus(&pl, cases[i].cpus, cases[i].cpus);
        if (!has_note(&pl, cases[i].note))
            fail_msg("%s: no note \"%s\"", cases[i].cpus, cases[i].note);
        assert_int_equal(has_note(&pl, "fastest kind"), cases[i].sets[0] != NULL);
        plan_free(&pl);
        profile_free(&p);
    }
    /* within the inherited affinity: its performance cores, then its efficiency ones */
    hwloc_bitmap_list_sscanf(t.binding, "0-9");
    const char *four[] = {"placement.cpus=4", NULL};
    struct profile p = load_profile("mysql", four);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_cpus(&pl, "0-1,8-9", "taskset 0-9");
    plan_free(&pl);
    topo_free(&t);

    /* kinds nothing ranks are no kinds: core order, and no word of them */
    t = load_topo("tests/data/hybrid-unranked.xml");
    pl = make_plan(&p, &t, NULL);
    assert_cpus(&pl, "0-3", "unranked");
    assert_false(has_note(&pl, "of core"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* A plan of one profile on one machine, and what it was made of: done() frees all three. */
struct trial {
    struct topo t;
    struct profile p;
    struct plan pl;
};

static struct trial *trial(struct topo t, const char *profile, const char *const *sets)
{
    struct trial *x = calloc(1, sizeof(*x));
    x->t = t;
    x->p = load_profile(profile, sets);
    x->pl = make_plan(&x->p, &x->t, NULL);
    return x;
}

static void done(struct trial *x)
{
    plan_free(&x->pl);
    profile_free(&x->p);
    topo_free(&x->t);
    free(x);
}

/* A count over several nodes is shared in proportion: no chosen node is left without a CPU. */
static void test_count_spread_over_nodes(void **state)
{
    (void)state;
    const char *four[] = {"placement.nodes=3", "placement.cpus=4", NULL};
    struct trial *x = trial(load_topo("synthetic:node:3 core:3 pu:3"), "mysql", four);
    assert_cpus(&x->pl, "0-1,9,18", "4 CPUs of 3 alike nodes: 2, 1, 1");
    char *nodes = bitmap_list(x->pl.nodes);
    assert_string_equal(nodes, "0-2");
    free(nodes);
    done(x);
    const char *six[] = {"placement.cpus=6", NULL};
    x = trial(load_topo("synthetic:pack:2 numa:2 core:4 pu:2"), "nginx", six);
    assert_cpus(&x->pl, "0-1,8-9,16,24", "6 CPUs of 4 alike nodes: 2, 2, 1, 1");
    done(x);
}

/* What a plan says of odd machines is true of them (each case once said otherwise). */
static void test_words_true_of_odd_machines(void **state)
{
    (void)state;
    /* cpus = all with memory = local: its memory is on every node it runs on */
    const char *local_all[] = {"placement.memory=local", "placement.cpus=all", NULL};
    struct trial *x = trial(shared_xml("32em64t-2n8c2t-pci-normalio.xml"), "java", local_all);
    char *mem = bitmap_list(x->pl.mem_nodes);
    assert_string_equal(mem, "0-1");
    free(mem);
    const char *opts = find_env(&x->pl, "JAVA_TOOL_OPTIONS")->u.env.value;
    assert_non_null(strstr(opts, "-XX:+UseNUMA"));
    assert_non_null(strstr(opts, "-XX:MaxRAM=65507m"));
    assert_true(has_note(&x->pl, "nodes = 1 decides nothing with cpus = all and memory = local"));
    done(x);

    /* an explicit max_ram beyond a strict bind: the heap outgrows it */
    const char *big[] = {"placement.memory=bind", "java.max_ram=64G", NULL};
    x = trial(shared_xml("32em64t-2n8c2t-pci-normalio.xml"), "java", big);
    assert_true(has_note(&x->pl, "java.max_ram 64.0 GiB is more than memory bind"));
    assert_true(x->pl.degraded);
    done(x);
    /* ... by less than tenths of GiB tell apart: in MiB, not "64.0 GiB is more than 64.0 GiB" */
    const char *close[] = {"placement.memory=bind", "java.max_ram=64G", "placement.nodes=2", NULL};
    x = trial(shared_xml("32em64t-2n8c2t-pci-normalio.xml"), "java", close);
    assert_true(has_note(&x->pl, "java.max_ram 65536 MiB is more than memory bind 0-1 holds "
                                 "(65507 MiB)"));
    done(x);
    /* ... but not what the JVM is given, whole MiB: 67080000K is 65507 MiB, which fits */
    const char *closer[] = {"placement.memory=bind", "java.max_ram=67080000K", "placement.nodes=2",
                            NULL};
    x = trial(shared_xml("32em64t-2n8c2t-pci-normalio.xml"), "java", closer);
    assert_false(has_note(&x->pl, "java.max_ram"));
    assert_false(x->pl.degraded);
    done(x);

    /* preferred where every page is remote is not "local first" */
    x = trial(load_topo("tests/data/cpuset-mismatch.xml"), "redis", NULL);
    assert_int_equal(x->pl.mpol, PLAN_MPOL_PREFERRED);
    assert_false(has_note(&x->pl, "local first"));
    assert_true(has_note(&x->pl, "memory preferred 1: pages there first, the nearest memory to "
                                 "its CPUs, which is remote for them"));
    assert_null(strstr(find_step(&x->pl, STEP_MEMPOLICY)->why, "its own node"));
    done(x);

    /* notes a plan must make, or must not, on one machine each */
    static const struct {
        const char *machine, *profile, *sets[3], *has, *hasnt;
    } said[] = {
        /* cpus = all beyond a bind: their own nodes have memory, just not bound */
        {"32em64t-2n8c2t-pci-normalio.xml",
         "mysql",
         {"placement.cpus=all", "placement.memory=bind"},
         "whose own nodes are not among these",
         "no memory of their own"},
        /* an export without memory sizes: memory auto cannot say it fits */
        {"16em64t-4s2c2t-offlines.xml",
         "mysql",
         {"placement.memory=auto", "placement.memory_size=4T"},
         "how much memory the nodes have is not known here",
         "GiB fits"},
        /* one node: nothing else to spill over to */
        {"2intel64-1n2c-numaroot.v1tov2.xml",
         "mysql",
         {"placement.memory=auto", "placement.memory_size=1900M"},
         "a strict bind would swap or OOM",
         "while other nodes have memory"},
        /* node 0 lost on free memory to the byte, node 2 on its number: both said */
        {"16amd64-4distances.xml",
         "mysql",
         {NULL},
         "node 1: the candidates are alike (8.0 GiB free, 0 CPUs claimed): the most free memory "
         "to the byte, then the lowest number",
         "node 1: the candidates are alike (8.0 GiB free, 0 CPUs claimed): the lowest number"},
    };
    for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
        x = trial(shared_xml(said[i].machine), said[i].profile, said[i].sets);
        if (!has_note(&x->pl, said[i].has) || has_note(&x->pl, said[i].hasnt))
            fail_msg("%s on %s: wants \"%s\", and not \"%s\"", said[i].profile, said[i].machine,
                     said[i].has, said[i].hasnt);
        done(x);
    }
}

/*
 * A core that taskset or a running service splits comes after the whole
 * ones: a count that whole cores meet leaves the half one, which shares its
 * core with whatever runs on the other half, to others; a count smaller
 * than the next whole core takes the half one, and leaves whole cores
 * whole. Cores of their own widths, none split, are taken in core order.
 */
static void test_split_core_last(void **state)
{
    (void)state;
    static const struct {
        const char *machine, *binding;         /* a shared XML's name, or a spec; NULL: all */
        const char *count, *want, *why, *also; /* also: one more key=value */
    } cases[] = {
        /* cores 0-1, 2-3, 4-5; taskset -c 1-5: CPU 0 is another's */
        {"synthetic:pack:1 numa:1 core:3 pu:2", "1-5", "2", "2-3", "whole cores meet it", NULL},
        {"synthetic:pack:1 numa:1 core:3 pu:2", "1-5", "1", "1", "less than a whole core", NULL},
        {"synthetic:pack:1 numa:1 core:3 pu:2", "1-5", "3", "1-3", "the half one, not half another",
         NULL},
        {"synthetic:pack:1 numa:1 core:3 pu:2", NULL, "3", "0-2", "whole cores, as ever", NULL},
        /* cores of their own widths, none split (an unranked hybrid): 0-1 ... 6-7, 8, 10 ... */
        {"tests/data/uneven-cores.xml", NULL, "1", "0", "uneven cores", NULL},
        {"tests/data/uneven-cores.xml", NULL, "3", "0-2", "uneven cores", NULL},
        /* cores 0 and 4 of 2 PUs with one of them offline: whole cores too */
        {"16em64t-4s2c2t-offlines.xml", NULL, "2", "0,4", "beside offline siblings", NULL},
        /* smt = no splits every core alike: core order still */
        {"tests/data/uneven-cores.xml", NULL, "3", "0,2,4", "smt = no", "placement.smt=no"},
        {"16em64t-4s2c2t-offlines.xml", NULL, "3", "0-1,4", "smt = no", "placement.smt=no"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool spec = strchr(cases[i].machine, ':') || strchr(cases[i].machine, '/');
        struct topo t = spec ? load_topo(cases[i].machine) : shared_xml(cases[i].machine);
        if (cases[i].binding)
            hwloc_bitmap_list_sscanf(t.binding, cases[i].binding);
        char count[32];
        snprintf(count, sizeof(count), "placement.cpus=%s", cases[i].count);
        const char *sets[] = {count, cases[i].also, NULL};
        struct profile p = load_profile("mysql", sets);
        struct plan pl = make_plan(&p, &t, NULL);
        char label[128];
        snprintf(label, sizeof(label), "cpus = %s, %s", cases[i].count, cases[i].why);
        assert_cpus(&pl, cases[i].want, label);
        plan_free(&pl);
        profile_free(&p);
        topo_free(&t);
    }
}

/* CPUs a cpuset allows on nodes it allows no memory on: used by cpus = all, and said. */
static void test_cpus_of_no_allowed_node(void **state)
{
    (void)state;
    /* CPUs 0-1 and 12-15 are allowed, their nodes 0, 6 and 7 are not */
    struct topo t = shared_xml("16amd64-8n2c-cpusets.xml");
    struct profile nginx = load_profile("nginx", NULL), mysql = load_profile("mysql", NULL);
    struct plan pl = make_plan(&nginx, &t, NULL);
    assert_cpus(&pl, "0-3,5-6,12-15", "nginx, cpus = all");
    assert_true(has_note(&pl, "CPUs 0-1,12-15: they are on no allowed node (not among the "
                              "cpuset's memory nodes)"));
    plan_free(&pl);
    pl = make_plan(&mysql, &t, NULL); /* cpus = node: only CPUs of an allowed node */
    assert_false(has_note(&pl, "on no allowed node"));
    assert_true(has_note(&pl, "every page local, no remote NUMA access"));
    assert_non_null(strstr(find_step(&pl, STEP_MEMPOLICY)->why, "no remote NUMA memory"));
    plan_free(&pl);
    /* bound to its nodes: local for their CPUs, remote for the others, and said so */
    profile_free(&nginx);
    const char *bind[] = {"placement.memory=bind", NULL};
    nginx = load_profile("nginx", bind);
    pl = make_plan(&nginx, &t, NULL);
    assert_true(has_note(&pl, "memory bind 1-3: every page there, local for CPUs 2-3,5-6 and "
                              "remote for CPUs 0-1,12-15"));
    assert_null(strstr(find_step(&pl, STEP_MEMPOLICY)->why, "no remote"));
    plan_free(&pl);
    profile_free(&nginx);
    profile_free(&mysql);
    topo_free(&t);

    /* where no allowed node owns any of them, a count is still a count */
    t = load_topo("tests/data/cpuset-mismatch.xml");
    const char *one[] = {"placement.cpus=1", NULL};
    mysql = load_profile("mysql", one);
    pl = make_plan(&mysql, &t, NULL);
    assert_cpus(&pl, "0", "cpus = 1 on no node");
    assert_true(pl.degraded); /* bind: every page remote for its CPUs */
    plan_free(&pl);
    profile_free(&mysql);
    topo_free(&t);
}

/*
 * A hand-made machine no export has: node 1 has CPUs but no memory, node 2
 * memory but no CPUs, memory sizes uneven, and node 3 much nearer to node 1
 * than node 0 or 2 are.
 */
static struct topo odd_machine(void)
{
    static const unsigned dist[16] = {
        10, 30, 25, 40, /* */
        30, 10, 35, 12, /* */
        25, 35, 10, 30, /* */
        40, 12, 30, 10,
    };
    static const uint64_t mem[4] = {8 * GIB, 0, 16 * GIB, 2 * GIB};
    static const char *const cpus[4] = {"0-3", "4-7", "", "8-11"};
    struct topo t = {0};
    t.source = TOPO_SYNTHETIC;
    t.desc = strdup("odd machine");
    t.nnodes = 4;
    t.nodes = calloc(4, sizeof(*t.nodes));
    t.cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_set_range(t.cpus, 0, 11);
    t.offline = hwloc_bitmap_alloc();
    t.binding = hwloc_bitmap_dup(t.cpus);
    t.memory_known = true;
    t.distance = malloc(sizeof(dist));
    memcpy(t.distance, dist, sizeof(dist));
    for (unsigned i = 0; i < 4; i++) {
        t.nodes[i].os_index = i;
        t.nodes[i].cpus = hwloc_bitmap_alloc();
        if (*cpus[i])
            hwloc_bitmap_list_sscanf(t.nodes[i].cpus, cpus[i]);
        t.nodes[i].mem_total = t.nodes[i].mem_free = mem[i];
        t.nodes[i].has_memory = mem[i] > 0;
    }
    t.ncores = 12;
    t.cores = calloc(12, sizeof(hwloc_bitmap_t));
    for (unsigned c = 0; c < 12; c++) {
        t.cores[c] = hwloc_bitmap_alloc();
        hwloc_bitmap_only(t.cores[c], c);
    }
    return t;
}

static void test_memoryless_node_gets_nearest_memory(void **state)
{
    (void)state;
    struct topo t = odd_machine();
    hwloc_bitmap_list_sscanf(t.binding, "4-7"); /* as if taskset put us on node 1 */
    struct profile p = load_profile("mysql", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_true(hwloc_bitmap_isset(pl.nodes, 1));
    assert_int_equal(hwloc_bitmap_weight(pl.mem_nodes), 1);
    assert_true(hwloc_bitmap_isset(pl.mem_nodes, 3)); /* distance 12, not node 0 or 2 */
    assert_true(has_note(&pl, "memory bind 3: every page there, the nearest memory to its CPUs, "
                              "which is remote for them"));
    assert_non_null(strstr(find_step(&pl, STEP_MEMPOLICY)->why, "all of it remote"));
    check_invariants(&p, &t, &pl, "odd machine, mysql on node 1");
    plan_free(&pl);
    profile_free(&p);

    /* free to choose: mysql takes a node with memory, and never node 2 for CPUs */
    hwloc_bitmap_copy(t.binding, t.cpus);
    p = load_profile("mysql", NULL);
    pl = make_plan(&p, &t, NULL);
    assert_false(hwloc_bitmap_isset(pl.nodes, 2));
    check_invariants(&p, &t, &pl, "odd machine, mysql");
    plan_free(&pl);

    /* node 1 borrows node 3's memory, the most free: node 3 itself wins, where it is local */
    t.nodes[3].mem_free = 20 * GIB;
    pl = make_plan(&p, &t, NULL);
    assert_int_equal(hwloc_bitmap_first(pl.nodes), 3);
    assert_true(has_note(&pl, "node 3: most free memory (20.0 GiB)"));
    assert_true(has_note(&pl, "memory bind 3: every page local"));
    t.nodes[3].mem_free = 2 * GIB;
    plan_free(&pl);
    profile_free(&p);

    /* nodes = 2 takes the closest pair, 1 and 3, though node 0 has more memory */
    const char *const sets[] = {"placement.nodes=2", NULL};
    p = load_profile("mysql", sets);
    pl = make_plan(&p, &t, NULL);
    hwloc_bitmap_t want = hwloc_bitmap_alloc();
    hwloc_bitmap_list_sscanf(want, "1,3");
    assert_true(hwloc_bitmap_isequal(pl.nodes, want));
    hwloc_bitmap_only(want, 3); /* node 1's memory is node 3's too */
    assert_true(hwloc_bitmap_isequal(pl.mem_nodes, want));
    /* local for node 3's own CPUs: not "remote" of them all */
    assert_true(has_note(&pl, "memory bind 3: every page there, local for CPUs 8-11 and remote "
                              "for CPUs 4-7, which have no memory of their own here"));
    assert_non_null(
        strstr(find_step(&pl, STEP_MEMPOLICY)->why, "local for some of its CPUs, remote for"));
    check_closest_pair(&t, &pl, "odd machine, nodes=2");
    hwloc_bitmap_free(want);
    plan_free(&pl);
    topo_free(&t);

    /* without a distance matrix no distance is cited, the default 20 least of all: the
     * node with memory most free is taken, and said to be */
    t = load_topo("synthetic:pack:2 [numa(memory=0)] [numa(memory=1GB)] core:2 pu:1");
    t.nodes[topo_node_index(&t, 3)].mem_free *= 2;
    pl = make_plan(&p, &t, NULL);
    assert_true(has_note(&pl, "its memory comes from node 3, the one with memory most free (no "
                              "distance matrix says which is nearest)"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* Memory that outgrows its node spreads over the nearest nodes that hold it, not all of them. */
static void test_memory_auto_grows_near(void **state)
{
    (void)state;
    struct topo t = odd_machine(); /* node 0: 8 GiB, 1: none, 2: 16 GiB, 3: 2 GiB */
    const char *const sets[] = {"placement.memory=auto", "placement.memory_size=9G", NULL};
    struct profile p = load_profile("mysql", sets);
    hwloc_bitmap_list_sscanf(t.binding, "0-3"); /* on node 0, whose 8 GiB are too few */
    struct plan pl = make_plan(&p, &t, NULL);
    assert_int_equal(pl.mpol, PLAN_MPOL_INTERLEAVE);
    /* node 2 (distance 25) before node 3 (40): 24 GiB hold 9 GiB; node 3 is left out */
    hwloc_bitmap_t want = hwloc_bitmap_alloc();
    hwloc_bitmap_list_sscanf(want, "0,2");
    assert_true(hwloc_bitmap_isequal(pl.mem_nodes, want));
    hwloc_bitmap_free(want);
    check_invariants(&p, &t, &pl, "odd machine, memory auto 9G");
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

static void test_memory_auto(void **state)
{
    (void)state;
    /* two nodes of 1 GiB each (hwloc's synthetic default) */
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    struct {
        const char *size;
        enum plan_mpol want;
    } cases[] = {
        {"placement.memory_size=512M", PLAN_MPOL_BIND},        /* fits with headroom */
        {"placement.memory_size=900M", PLAN_MPOL_PREFERRED},   /* not with headroom */
        {"placement.memory_size=1500M", PLAN_MPOL_INTERLEAVE}, /* more than a node */
        /* so much that adding the headroom would wrap around to a small number */
        {"placement.memory_size=16769767339735956025", PLAN_MPOL_INTERLEAVE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *const sets[] = {"placement.memory=auto", cases[i].size, NULL};
        struct profile p = load_profile("mysql", sets);
        struct plan pl = make_plan(&p, &t, NULL);
        if (pl.mpol != cases[i].want)
            fail_msg("%s: got %s", cases[i].size, plan_mpol_name(pl.mpol));
        if (pl.mpol == PLAN_MPOL_INTERLEAVE)
            assert_int_equal(hwloc_bitmap_weight(pl.mem_nodes), 2);
        else
            assert_int_equal(hwloc_bitmap_weight(pl.mem_nodes), 1);
        /* more than the two nodes' 2 GiB together: said, and --strict would refuse */
        assert_int_equal(has_note(&pl, "more than this whole machine holds") && pl.degraded,
                         i == 3);
        plan_free(&pl);
        profile_free(&p);
    }
    /* unknown size: never a strict bind */
    const char *const sets[] = {"placement.memory=auto", NULL};
    struct profile p = load_profile("mysql", sets);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_int_equal(pl.mpol, PLAN_MPOL_PREFERRED);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* A topology hwloc could only guess (no /sys) is planned on, with a warning --strict heeds. */
static void test_blind_topology_warns(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    struct profile p = load_profile("redis", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_null(note_with(&pl, NOTE_WARN, "topology: "));
    plan_free(&pl);
    const struct topo_guess guess = {"hwloc can only guess", "mount sysfs"};
    t.guess = &guess;
    pl = make_plan(&p, &t, NULL);
    assert_non_null(note_with(&pl, NOTE_WARN,
                              "topology: hwloc can only guess; CPUs and memory are placed on that "
                              "guess (fix: mount sysfs)"));
    assert_true(pl.degraded);
    assert_false(hwloc_bitmap_iszero(pl.cpus)); /* placed all the same */
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * Memory whose size no node gives (an export without local_memory) is
 * planned on as if every node had some, with a warning --strict heeds,
 * naming the source's fix; a memoryless node on a machine whose sizes
 * are known is a shape, not a gap, and so is a host whose sizes were made
 * up from its zones.
 */
static void test_unknown_memory_warns(void **state)
{
    (void)state;
    static const char unknown[] = "memory: no NUMA node's size is known";
    struct topo t = shared_xml("16em64t-4s2c2t.xml");
    assert_false(t.memory_known);
    for (size_t i = 0; i < sizeof(shipped) / sizeof(*shipped); i++) {
        struct profile p = load_profile(shipped[i], NULL);
        struct plan pl = make_plan(&p, &t, NULL);
        const char *w = note_with(&pl, NOTE_WARN, unknown);
        if (w == NULL || !pl.degraded)
            fail_msg("%s on an export without sizes: no warning", shipped[i]);
        assert_string_equal(
            w, "memory: no NUMA node's size is known (the export gives none), so room is not "
               "judged: whether the service's memory fits its nodes, which has the most free, "
               "when it spills over (fix: export it again with lstopo on that machine, whose "
               "hwloc reads each node's size from the kernel)");
        plan_free(&pl);
        profile_free(&p);
    }
    /* the same machine on the host: its own reason and fix */
    t.source = TOPO_HOST;
    struct profile p = load_profile("mysql", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_non_null(note_with(&pl, NOTE_WARN,
                              "(this machine's /sys/devices/system/node/node*/meminfo says none: "
                              "masked?)"));
    assert_non_null(note_with(&pl, NOTE_WARN,
                              "(fix: leave /sys/devices/system/node unmasked where tunerun runs)"));
    plan_free(&pl);
    topo_free(&t);

    /* sizes known: no warning, a memoryless node (odd_machine's node 1) included */
    const char *const exports[] = {"32em64t-2n8c2t-pci-normalio.xml", "8ia64-2n2s2c+1n.v1tov2.xml"};
    for (size_t i = 0; i < sizeof(exports) / sizeof(*exports); i++) {
        t = shared_xml(exports[i]);
        pl = make_plan(&p, &t, NULL);
        assert_false(has_note(&pl, unknown));
        assert_false(pl.degraded);
        plan_free(&pl);
        topo_free(&t);
    }
    t = odd_machine();
    hwloc_bitmap_list_sscanf(t.binding, "4-7"); /* node 1's CPUs: memory from node 3 */
    pl = make_plan(&p, &t, NULL);
    assert_false(has_note(&pl, unknown));
    plan_free(&pl);
    /* a host whose nodes' meminfo counts part of its memory: made up from zones, not unknown */
    t.source = TOPO_HOST;
    t.memory_note = strdup("the nodes' meminfo counts 2.5 GiB of the 5.5 GiB this machine has");
    pl = make_plan(&p, &t, NULL);
    assert_false(has_note(&pl, unknown));
    assert_non_null(note_with(&pl, NOTE_INFO, "memory: the nodes' meminfo counts"));
    plan_free(&pl);
    topo_free(&t);
    profile_free(&p);
}

static void test_derived_environment(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:2");
    struct profile p = load_profile("java", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    const struct plan_step *s = find_env(&pl, "JAVA_TOOL_OPTIONS");
    assert_non_null(s);
    assert_non_null(strstr(s->u.env.value, "-XX:ActiveProcessorCount=8"));
    assert_null(strstr(s->u.env.value, "UseNUMA")); /* one node bound */
    assert_non_null(strstr(s->u.env.value, "-XX:MaxRAM=1024m"));
    s = find_env(&pl, "MALLOC_ARENA_MAX");
    assert_non_null(s);
    assert_string_equal(s->u.env.value, "8");
    plan_free(&pl);
    profile_free(&p);

    /* a container's memory limit below the bound node's memory caps the heap instead */
    {
        struct cgroup cg = {
            .mode = CG_UNIFIED, .v2 = true, .owner = CG_OWN_HOST, .mem_limit = 512ULL << 20};
        struct profile java = load_profile("java", NULL);
        struct plan_input in = {.profile = &java, .topo = &t, .cgroup = &cg};
        struct err e;
        struct plan capped;
        assert_true(plan_build(&capped, &in, &e));
        s = find_env(&capped, "JAVA_TOOL_OPTIONS");
        assert_non_null(s);
        assert_non_null(strstr(s->u.env.value, "-XX:MaxRAM=512m"));
        plan_free(&capped);
        /* ... and one above it changes nothing */
        cg.mem_limit = 64ULL << 30;
        assert_true(plan_build(&capped, &in, &e));
        assert_non_null(
            strstr(find_env(&capped, "JAVA_TOOL_OPTIONS")->u.env.value, "-XX:MaxRAM=1024m"));
        plan_free(&capped);
        /* a CPU quota of 2 CPUs (docker --cpus=1.5) caps the GC threads of 8 placed CPUs */
        cg.cpu_quota = 2;
        assert_true(plan_build(&capped, &in, &e));
        assert_non_null(strstr(find_env(&capped, "JAVA_TOOL_OPTIONS")->u.env.value,
                               "-XX:ActiveProcessorCount=2 "));
        plan_free(&capped);
        /* ... and one above the placed CPUs changes nothing */
        cg.cpu_quota = 64;
        assert_true(plan_build(&capped, &in, &e));
        assert_non_null(strstr(find_env(&capped, "JAVA_TOOL_OPTIONS")->u.env.value,
                               "-XX:ActiveProcessorCount=8 "));
        plan_free(&capped);
        /* no memory cgroup to read: MaxRAM from the nodes, and the plan says what went unseen */
        cg = (struct cgroup){.mode = CG_HYBRID, .owner = CG_OWN_MISSING};
        snprintf(cg.why, sizeof(cg.why),
                 "no cgroup v1 memory controller is mounted for this "
                 "process");
        assert_true(plan_build(&capped, &in, &e));
        assert_non_null(
            strstr(find_env(&capped, "JAVA_TOOL_OPTIONS")->u.env.value, "-XX:MaxRAM=1024m"));
        assert_non_null(note_with(&capped, NOTE_INFO,
                                  "java: MaxRAM from the bound nodes' memory alone: no cgroup v1 "
                                  "memory controller is mounted for this process, so a memory "
                                  "limit below it cannot be seen"));
        plan_free(&capped);
        /* ... where the cgroup was read, nothing is said */
        cg.dir = (char *)"/sys/fs/cgroup/memory";
        assert_true(plan_build(&capped, &in, &e));
        assert_null(note_with(&capped, NOTE_INFO, "java: MaxRAM from the bound nodes' memory"));
        plan_free(&capped);
        profile_free(&java);
    }

    /* two nodes: UseNUMA; the user's options stay first and are not repeated */
    const char *const sets[] = {"placement.nodes=2", NULL};
    p = load_profile("java", sets);
    char *env[] = {"JAVA_TOOL_OPTIONS=-Xss1m -XX:ActiveProcessorCount=3", "PATH=/bin", NULL};
    pl = make_plan(&p, &t, env);
    s = find_env(&pl, "JAVA_TOOL_OPTIONS");
    assert_non_null(s);
    assert_string_equal(s->u.env.value,
                        "-Xss1m -XX:ActiveProcessorCount=3 -XX:+UseNUMA -XX:MaxRAM=2048m");
    plan_free(&pl);

    /* other flags that merely start alike are not those: UseNUMA and MaxRAM are still added */
    char *alike[] = {"JAVA_TOOL_OPTIONS=-XX:+UseNUMAInterleaving -XX:MaxRAMPercentage=50", NULL};
    pl = make_plan(&p, &t, alike);
    assert_string_equal(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value,
                        "-XX:+UseNUMAInterleaving -XX:MaxRAMPercentage=50 "
                        "-XX:ActiveProcessorCount=16 -XX:+UseNUMA -XX:MaxRAM=2048m");
    plan_free(&pl);
    /* and -XX:-UseNUMA is the user's word on it */
    char *off[] = {"JAVA_TOOL_OPTIONS=-XX:-UseNUMA", NULL};
    pl = make_plan(&p, &t, off);
    assert_string_equal(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value,
                        "-XX:-UseNUMA -XX:ActiveProcessorCount=16 -XX:MaxRAM=2048m");
    plan_free(&pl);
    profile_free(&p);

    /* a profile's own JAVA_TOOL_OPTIONS adds to the caller's, never replaces it */
    const char *const with_env[] = {"env.JAVA_TOOL_OPTIONS=-Dfoo=1", NULL};
    p = load_profile("java", with_env);
    char *env2[] = {"JAVA_TOOL_OPTIONS=-Xmx1g -XX:-UseNUMA", NULL};
    pl = make_plan(&p, &t, env2);
    assert_string_equal(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value,
                        "-Xmx1g -XX:-UseNUMA -Dfoo=1 -XX:ActiveProcessorCount=8 -XX:MaxRAM=1024m");
    plan_free(&pl);
    profile_free(&p);

    /* ... and with nothing derived, the same: added to, not replaced */
    const char *const env_only[] = {"env.JAVA_TOOL_OPTIONS=-Dfoo=1",
                                    "java.active_processor_count=off", "java.use_numa=off",
                                    "java.max_ram=off", NULL};
    p = load_profile("java", env_only);
    pl = make_plan(&p, &t, env2);
    assert_string_equal(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value,
                        "-Xmx1g -XX:-UseNUMA -Dfoo=1");
    plan_free(&pl);
    profile_free(&p);

    /* fewer CPUs than one node holds: one node named, no UseNUMA for a single CPU */
    const char *const one_cpu[] = {"placement.nodes=2", "placement.cpus=1", NULL};
    p = load_profile("java", one_cpu);
    pl = make_plan(&p, &t, NULL);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 1);
    assert_int_equal(hwloc_bitmap_weight(pl.nodes), 1);
    assert_true(hwloc_bitmap_isequal(pl.nodes, pl.mem_nodes));
    assert_null(strstr(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value, "UseNUMA"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);

    /* under 1 MiB to give: -XX:MaxRAM=0m would be the JVM's default, no cap; none */
    t = load_topo("synthetic:numa:2(memory=524288) pu:2");
    p = load_profile("java", NULL);
    pl = make_plan(&p, &t, NULL);
    assert_null(strstr(find_env(&pl, "JAVA_TOOL_OPTIONS")->u.env.value, "MaxRAM"));
    assert_true(has_note(&pl, "java: less than 1 MiB of memory to give (524288 bytes), no MaxRAM"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

static void test_env_substitution(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:2");
    struct profile p = profile_text("[placement]\nnodes = 1\ncpus = 2\n[memory]\n"
                                    "malloc_arena_max = 4\n[env]\n"
                                    "W = ${ncpus} on ${cpus} of ${nnodes} node ${nodes}, "
                                    "${node_mem}\nLITERAL = $HOME and $$\n");
    struct plan pl = make_plan(&p, &t, NULL);
    assert_string_equal(find_env(&pl, "W")->u.env.value, "2 on 0-1 of 1 node 0, 1024M");
    assert_string_equal(find_env(&pl, "LITERAL")->u.env.value, "$HOME and $$");
    assert_string_equal(find_env(&pl, "MALLOC_ARENA_MAX")->u.env.value, "4");
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* The exec step's words, joined by spaces, as a test compares them. */
static char *exec_words(const struct plan *pl)
{
    const struct plan_step *s = find_step(pl, STEP_EXEC);
    static char buf[512];
    buf[0] = '\0';
    for (char *const *w = s->u.exec.argv; w && *w; w++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", buf[0] ? " " : "", *w);
    return buf;
}

static struct plan plan_for(const struct profile *p, const struct topo *t, char *const *command)
{
    struct plan pl;
    struct err e;
    struct plan_input in = {.profile = p, .topo = t, .command = command};
    if (!plan_build(&pl, &in, &e))
        fail_msg("%s", e.msg);
    return pl;
}

/*
 * [args]: added after the command's arguments and before its "--", each
 * only where no spelling of it is passed already; none for another command.
 */
static void test_args_from_the_plan(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:2");
    struct profile p = profile_text("[placement]\nnodes = 1\ncpus = 3\n[args]\nfor = memcached\n"
                                    "-t|--threads = ${ncpus}\n--io-threads = =${nnodes}\n"
                                    "-c max_worker_processes|--max_worker_processes = ${ncpus}\n");
    static const struct {
        const char *command[6];
        const char *words;
        const char *passed; /* what the plan says the command passes for -t, or NULL */
    } cases[] = {
        {{"memcached", NULL}, "memcached -t 3 --io-threads=1 -c max_worker_processes=3", NULL},
        {{"/usr/bin/memcached", "-u", "memcache", NULL},
         "/usr/bin/memcached -u memcache -t 3 --io-threads=1 -c max_worker_processes=3",
         NULL},
        {{"memcached", "-t", "8", NULL},
         "memcached -t 8 --io-threads=1 -c max_worker_processes=3",
         "-t 8"},
        {{"memcached", "-t8", NULL},
         "memcached -t8 --io-threads=1 -c max_worker_processes=3",
         "-t8"},
        {{"memcached", "--threads=8", NULL},
         "memcached --threads=8 --io-threads=1 -c max_worker_processes=3",
         "--threads=8"},
        {{"memcached", "--threads", "8", NULL},
         "memcached --threads 8 --io-threads=1 -c max_worker_processes=3",
         "--threads 8"},
        {{"memcached", "--io-threads", "2", "-cmax_worker_processes=1", NULL},
         "memcached --io-threads 2 -cmax_worker_processes=1 -t 3",
         NULL},
        {{"memcached", "--max_worker_processes=1", "--", "-t", "x", NULL},
         "memcached --max_worker_processes=1 -t 3 --io-threads=1 -- -t x",
         NULL},
        /* --threadsx is no spelling of --threads, nor -c other=1 of max_worker_processes */
        {{"memcached", "--threadsx", "-c", "other=1", NULL},
         "memcached --threadsx -c other=1 -t 3 --io-threads=1 -c max_worker_processes=3",
         NULL},
        {{"sh", "-c", "exec memcached", NULL}, "sh -c exec memcached", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct plan pl = plan_for(&p, &t, (char *const *)cases[i].command);
        assert_string_equal(exec_words(&pl), cases[i].words);
        bool other = strcmp(cases[i].command[0], "sh") == 0;
        assert_int_equal(pl.nargs, other ? 0 : 3);
        if (other) {
            assert_string_equal(pl.args_for_other, "sh");
            assert_non_null(note_with(&pl, NOTE_INFO,
                                      "args: none added: they are for memcached, "
                                      "and the command is sh"));
        } else if (cases[i].passed) {
            assert_false(pl.args[0].added);
            assert_string_equal(pl.args[0].passed, cases[i].passed);
            char want[128];
            snprintf(want, sizeof(want), "args: -t not added: the command passes %s itself",
                     cases[i].passed);
            assert_non_null(note_with(&pl, NOTE_INFO, want));
        } else if (strcmp(cases[i].command[1] ? cases[i].command[1] : "", "--io-threads") != 0) {
            assert_true(pl.args[0].added);
            assert_non_null(note_with(&pl, NOTE_INFO, "args: added -t 3"));
        }
        assert_false(pl.degraded);
        plan_free(&pl);
    }
    /* without a command, the plan says what a launch adds */
    struct plan pl = plan_for(&p, &t, NULL);
    assert_non_null(note_with(&pl, NOTE_INFO, "args: a launch adds -t 3"));
    assert_null(pl.argv);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * An option set again by any of its spellings (--set, an including
 * profile) replaces it where it stood, never adds it twice; an empty value
 * removes it, and an empty `for` all of [args].
 */
static void test_args_set_again(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:2");
    const char *text = "[placement]\nnodes = 1\ncpus = 3\n[args]\nfor = memcached\n"
                       "-t|--threads = ${ncpus}\n-U = 0\n";
    static const struct {
        const char *set, *words;
    } cases[] = {
        {"args.-t=5", "memcached -t 5 -U 0"},
        {"args.--threads=5", "memcached --threads 5 -U 0"},
        {"args.--threads|-x=5", "memcached --threads 5 -U 0"},
        {"args.-t=", "memcached -U 0"},
        {"args.--threads=", "memcached -U 0"},
        {"args.-m=64", "memcached -t 3 -U 0 -m 64"},
        {"args.for=", "memcached"},
    };
    char *const command[] = {"memcached", NULL};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct profile p = profile_text(text);
        struct err e;
        if (!profile_set(&p, cases[i].set, &e))
            fail_msg("%s: %s", cases[i].set, e.msg);
        struct plan pl = plan_for(&p, &t, command);
        if (strcmp(exec_words(&pl), cases[i].words) != 0)
            fail_msg("--set %s: %s, not %s", cases[i].set, exec_words(&pl), cases[i].words);
        plan_free(&pl);
        profile_free(&p);
    }
    topo_free(&t);
}

static void test_impossible_asks_are_degraded(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    const char *const many_nodes[] = {"placement.nodes=4", NULL};
    const char *const many_cpus[] = {"placement.cpus=64", NULL};
    const char *const fine[] = {"placement.nodes=2", NULL};
    const char *const *cases[] = {many_nodes, many_cpus, fine};
    for (size_t i = 0; i < 3; i++) {
        struct profile p = load_profile("mysql", cases[i]);
        struct plan pl = make_plan(&p, &t, NULL);
        assert_int_equal(pl.degraded, i < 2);
        bool warned = false;
        for (size_t n = 0; n < pl.nnotes; n++)
            warned |= pl.notes[n].level == NOTE_WARN;
        assert_int_equal(warned, i < 2);
        check_invariants(&p, &t, &pl, cases[i][0]);
        plan_free(&pl);
        profile_free(&p);
    }
    topo_free(&t);
}

static void test_thp_and_limit_steps(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    const struct {
        const char *name;
        bool has_thp;
        enum thp_mode mode;
    } want[] = {{"mysql", true, THP_MADVISE},    {"redis", true, THP_NEVER},
                {"nginx", false, THP_SYSTEM},    {"java", true, THP_MADVISE},
                {"postgresql", true, THP_NEVER}, {"memcached", true, THP_MADVISE},
                {"haproxy", false, THP_SYSTEM}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct profile p = load_profile(want[i].name, NULL);
        struct plan pl = make_plan(&p, &t, NULL);
        const struct plan_step *thp = NULL, *nofile = NULL;
        for (size_t k = 0; k < pl.nsteps; k++) {
            if (pl.steps[k].type == STEP_THP)
                thp = &pl.steps[k];
            if (pl.steps[k].type == STEP_RLIMIT && pl.steps[k].u.rlimit.resource == RLIMIT_NOFILE)
                nofile = &pl.steps[k];
        }
        assert_int_equal(thp != NULL, want[i].has_thp);
        if (thp)
            assert_int_equal(thp->u.thp, want[i].mode);
        assert_non_null(nofile);
        assert_true(nofile->u.rlimit.soft >= 65535);
        assert_non_null(strstr(nofile->why, "profiles/"));
        assert_int_equal(has_note(&pl, "thp: the system-wide mode applies"), !want[i].has_thp);
        plan_free(&pl);
        /*
         * What the parent left tunerun with: a mode of the profile's own is
         * still set over it, and `system`, which sets none, says what holds.
         */
        const enum thp_mode inherited[] = {THP_NEVER, THP_MADVISE};
        for (size_t k = 0; k < 2; k++) {
            struct err e;
            struct plan_input in = {.profile = &p, .topo = &t, .thp_inherited = inherited[k]};
            if (!plan_build(&pl, &in, &e))
                fail_msg("%s", e.msg);
            const struct plan_step *again = find_step(&pl, STEP_THP);
            assert_int_equal(again != NULL, want[i].has_thp);
            if (again)
                assert_int_equal(again->u.thp, want[i].mode);
            const char *said = note_with(&pl, NOTE_INFO, "thp: ");
            if (want[i].has_thp) {
                assert_null(said);
            } else {
                assert_non_null(said);
                assert_non_null(strstr(said, inherited[k] == THP_NEVER
                                                 ? "thp: never, as the parent left tunerun"
                                                 : "thp: madvise, as the parent left tunerun"));
                assert_non_null(strstr(said, "thp = system leaves that in effect"));
            }
            assert_false(pl.degraded);
            plan_free(&pl);
        }
        profile_free(&p);
    }
    topo_free(&t);
}

/* A live claim as the registry would read it. */
static struct claim live(const char *profile, const char *cpus, const char *nodes, bool exclusive,
                         const char *avoid)
{
    struct claim k = {.profile = strdup(profile),
                      .cpus = hwloc_bitmap_alloc(),
                      .nodes = hwloc_bitmap_alloc(),
                      .mem_nodes = hwloc_bitmap_alloc(),
                      .exclusive = exclusive};
    hwloc_bitmap_list_sscanf(k.cpus, cpus);
    hwloc_bitmap_list_sscanf(k.nodes, nodes);
    hwloc_bitmap_list_sscanf(k.mem_nodes, nodes);
    if (avoid) {
        k.avoid = calloc(1, sizeof(char *));
        k.avoid[0] = strdup(avoid);
        k.navoid = 1;
    }
    return k;
}

static struct plan plan_with(const struct profile *p, const struct topo *t, struct claim *k,
                             size_t n)
{
    struct plan pl;
    struct err e;
    struct plan_input in = {.profile = p, .topo = t, .registry = true, .claims = k, .nclaims = n};
    if (!plan_build(&pl, &in, &e))
        fail_msg("%s", e.msg);
    return pl;
}

/* Another service's fear in a step's reason: the planner must not assume which service it is. */
static void assert_no_service_words(const struct plan *pl, const char *label)
{
    static const char *const words[] = {"MySQL", "Redis", "nginx",    "Java",       "buffer pool",
                                        "quer",  "table", "snapshot", "connection", "80 ns"};
    for (size_t i = 0; i < pl->nsteps; i++) {
        /* the reason without its origin, "(profiles/nginx.ini:33)" */
        char why[1024];
        snprintf(why, sizeof(why), "%s", pl->steps[i].why);
        char *origin = strrchr(why, '(');
        if (origin && strstr(origin, ".ini:"))
            *origin = '\0';
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
            if (strstr(why, words[w]))
                fail_msg("%s: step %zu's reason names '%s': %s", label, i, words[w],
                         pl->steps[i].why);
    }
}

/*
 * A step's reason says what the setting does, true of any service, and cites
 * the file and line that set it, where the profile's comment says why this
 * service needs it.
 */
static void test_reasons_fit_any_profile(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    struct cgroup v1 = {.mode = CG_HYBRID, .owner = CG_OWN_HOST, .dir = "/sys/fs/cgroup/memory/x"};
    struct cgroup v2 = {
        .mode = CG_UNIFIED, .v2 = true, .owner = CG_OWN_HOST, .dir = "/sys/fs/cgroup/x"};
    const struct cgroup *cgs[] = {&v1, &v2};
    struct err e;
    struct plan pl;
    for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++)
        for (size_t k = 0; k < 2; k++) {
            struct profile p = load_profile(shipped[i], NULL);
            struct plan_input in = {.profile = &p, .topo = &t, .cgroup = cgs[k]};
            assert_true(plan_build(&pl, &in, &e));
            assert_no_service_words(&pl, shipped[i]);
            plan_free(&pl);
            profile_free(&p);
        }

    /* a service none of the shipped profiles is: each reason fits its values */
    struct profile p = profile_text("[placement]\nmemory = bind\n[memory]\nthp = never\n"
                                    "oom_score_adj = 0\nswappiness = 10\n[limits]\n"
                                    "nofile = 4096\n");
    struct plan_input in = {.profile = &p, .topo = &t, .cgroup = &v1};
    assert_true(plan_build(&pl, &in, &e));
    assert_no_service_words(&pl, "test.ini");
    const struct plan_step *s = find_step(&pl, STEP_RLIMIT);
    assert_non_null(strstr(s->why, "descriptor"));
    assert_non_null(strstr(s->why, "(test.ini:8)"));
    s = find_step(&pl, STEP_OOM_SCORE_ADJ);
    assert_non_null(strstr(s->why, "as by default"));
    assert_non_null(strstr(s->why, "(test.ini:5)"));
    s = find_step(&pl, STEP_CGROUP);
    assert_non_null(s);
    assert_non_null(strstr(s->why, "swappiness 10"));
    assert_non_null(strstr(s->why, "(test.ini:6)"));
    assert_non_null(strstr(find_step(&pl, STEP_MEMPOLICY)->why, "no remote NUMA memory"));
    assert_false(pl.degraded);
    plan_free(&pl);

    /* fs.nr_open, where the caller read it: at it the plan holds, past it no one may go */
    in.nr_open = 4096;
    assert_true(plan_build(&pl, &in, &e));
    assert_false(pl.degraded);
    plan_free(&pl);
    in.nr_open = 4095;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(pl.degraded);
    const char *warned = note_with(&pl, NOTE_WARN,
                                   "nofile: 4096 (test.ini:8) is more than this host's fs.nr_open "
                                   "(4095)");
    assert_non_null(warned);
    assert_non_null(strstr(warned, "fix: sysctl -w fs.nr_open=4096"));
    assert_non_null(find_step(&pl, STEP_RLIMIT)); /* tried all the same: the soft limit may rise */
    plan_free(&pl);
    /* a drop this process could not make (plan's privs_check()): a warning */
    in.privs_refused = "security.user: becoming x needs CAP_SETUID, which tunerun lacks";
    assert_true(plan_build(&pl, &in, &e));
    warned = note_with(&pl, NOTE_WARN, "privileges: ");
    assert_non_null(warned);
    assert_string_equal(warned, "privileges: security.user: becoming x needs CAP_SETUID, which "
                                "tunerun lacks; a launch from here refuses to execute (exit 125)");
    plan_free(&pl);
    in.privs_refused = NULL;
    /* in a container the sysctl is the host's, and the limit the runtime's */
    struct cgroup boxed = v1;
    boxed.container = true;
    in.cgroup = &boxed;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(has_note(&pl, "fix: on the host, not in this container: sysctl -w fs.nr_open=4096, "
                              "and the same in /etc/sysctl.d/; then docker run --ulimit "
                              "nofile=4096:4096)"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* A user who keeps a capability as good as root is warned of; one who keeps a harmless one is not.
 */
static void test_root_equivalent_caps(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    struct profile redis = load_profile("redis", NULL);
    struct privs pv = {.change_id = true,
                       .uid = 33,
                       .user = "www-data (uid 33)",
                       .caps = true,
                       .keep = UINT64_C(1) << CAP_NET_BIND_SERVICE,
                       .caps_at = "test.ini:3: [security] keep_caps"};
    struct plan_input in = {.profile = &redis, .topo = &t, .privs = &pv};
    struct err e;
    struct plan pl;
    assert_true(plan_build(&pl, &in, &e));
    assert_false(has_note(&pl, "as good as root"));
    assert_false(pl.degraded);
    plan_free(&pl);

    pv.keep |= (UINT64_C(1) << CAP_DAC_OVERRIDE) | (UINT64_C(1) << CAP_SYS_ADMIN);
    assert_true(plan_build(&pl, &in, &e));
    assert_string_equal(note_with(&pl, NOTE_WARN, "as good as root"),
                        "security: test.ini:3: [security] keep_caps keeps what makes www-data "
                        "(uid 33) as good as root: cap_dac_override (writes any file, /etc/shadow "
                        "and units included), cap_sys_admin (mounts over any file); keep only what "
                        "the service needs (such as cap_net_bind_service), or run it as root on "
                        "purpose");
    assert_true(pl.degraded); /* --strict refuses it */
    plan_free(&pl);

    /* each of them alone */
    const int each[] = {CAP_CHOWN,      CAP_DAC_READ_SEARCH, CAP_FOWNER,     CAP_SETGID,
                        CAP_SETUID,     CAP_SETFCAP,         CAP_SYS_MODULE, CAP_SYS_RAWIO,
                        CAP_SYS_PTRACE, CAP_SYS_BOOT,        CAP_MKNOD};
    for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++) {
        pv.keep = UINT64_C(1) << each[i];
        assert_true(plan_build(&pl, &in, &e));
        assert_non_null(note_with(&pl, NOTE_WARN, "as good as root"));
        plan_free(&pl);
    }

    /* root keeps its own note, not this warning; and no user change, no warning */
    pv.uid = 0;
    assert_true(plan_build(&pl, &in, &e));
    assert_false(has_note(&pl, "as good as root"));
    assert_true(has_note(&pl, "keeps uid 0"));
    plan_free(&pl);
    pv.uid = 33;
    pv.change_id = false;
    assert_true(plan_build(&pl, &in, &e));
    assert_false(has_note(&pl, "as good as root"));
    plan_free(&pl);
    profile_free(&redis);
    topo_free(&t);
}

static void test_swap_policy(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    struct profile mysql = load_profile("mysql", NULL), redis = load_profile("redis", NULL);
    struct cgroup v1 = {.mode = CG_HYBRID, .owner = CG_OWN_HOST, .dir = "/sys/fs/cgroup/memory/x"};
    struct cgroup v2 = {
        .mode = CG_UNIFIED, .v2 = true, .owner = CG_OWN_HOST, .dir = "/sys/fs/cgroup/x"};
    struct err e;
    struct plan pl;

    /* v1: memory.swappiness, the first step without a registry: the cgroup is entered right
     * after the claim, before every other step, so that the undo leaves it last but one */
    struct plan_input in = {.profile = &mysql, .topo = &t, .cgroup = &v1};
    assert_true(plan_build(&pl, &in, &e));
    const struct plan_step *first = &pl.steps[0];
    assert_int_equal(first->type, STEP_CGROUP);
    assert_int_equal(first->u.cgroup.swappiness, 1);
    assert_false(first->u.cgroup.set_swap_max);
    check_invariants(&mysql, &t, &pl, "mysql, cgroup v1");
    assert_false(pl.degraded);
    plan_free(&pl);
    /* v2: no per-cgroup swappiness for mysql: said (the host's sysctl), nothing made, and
     * no warning: nothing in this service's settings could change it */
    in.cgroup = &v2;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CGROUP));
    assert_false(pl.degraded);
    plan_free(&pl);
    /* v1, a unit's cgroup: swappiness needs Delegate=yes; MemorySwapMax= is v2's only */
    struct cgroup v1unit = v1;
    v1unit.owner = CG_OWN_UNIT;
    snprintf(v1unit.unit, sizeof(v1unit.unit), "mysql.service");
    in.cgroup = &v1unit;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(pl.degraded);
    bool delegate = false, swapmax = false;
    for (size_t i = 0; i < pl.nnotes; i++) {
        delegate |= strstr(pl.notes[i].text, "mysql.service with Delegate=yes") != NULL;
        swapmax |= strstr(pl.notes[i].text, "MemorySwapMax") != NULL;
    }
    assert_true(delegate);
    assert_false(swapmax);
    plan_free(&pl);
    /* a read-only cgroup that has the value already: nothing to fix */
    struct cgroup box = v1;
    box.owner = CG_OWN_READONLY;
    box.swappiness_known = true;
    box.swappiness = 1;
    in.cgroup = &box;
    assert_true(plan_build(&pl, &in, &e));
    assert_false(pl.degraded);
    assert_null(find_step(&pl, STEP_CGROUP));
    plan_free(&pl);
    box.swappiness = 60;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(pl.degraded);
    plan_free(&pl);
    /* v2: redis gets memory.swap.max = 0; its swappiness is covered, not warned */
    in.profile = &redis;
    in.cgroup = &v2;
    assert_true(plan_build(&pl, &in, &e));
    const struct plan_step *s = find_step(&pl, STEP_CGROUP);
    assert_non_null(s);
    assert_ptr_equal(s, &pl.steps[0]);
    assert_true(s->u.cgroup.set_swap_max);
    assert_int_equal(s->u.cgroup.swap_max, 0);
    assert_int_equal(s->u.cgroup.swappiness, -1);
    assert_false(pl.degraded);
    plan_free(&pl);
    /* a systemd unit's cgroup: nothing written, the unit setting named */
    struct cgroup unit = v2;
    unit.owner = CG_OWN_UNIT;
    snprintf(unit.unit, sizeof(unit.unit), "redis.service");
    snprintf(unit.why, sizeof(unit.why), "redis.service's cgroup belongs to systemd");
    in.cgroup = &unit;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CGROUP));
    assert_true(pl.degraded);
    bool named = false;
    for (size_t i = 0; i < pl.nnotes; i++)
        named |= strstr(pl.notes[i].text, "MemorySwapMax=0 in redis.service") != NULL;
    assert_true(named);
    plan_free(&pl);
    /* another machine's plan (--topology): no cgroup, no warning */
    in.cgroup = NULL;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CGROUP));
    assert_false(pl.degraded);
    plan_free(&pl);
    profile_free(&mysql);
    profile_free(&redis);
    topo_free(&t);
}

/*
 * Enforcement: a service placed on one of two nodes gets a cpuset cgroup of
 * its own where tunerun may write one, on v1 and on v2; on v2 the swap
 * limit goes into that same cgroup. Where it may not, the warning names
 * the fix for that place.
 */
static void test_cpuset_step(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    struct profile redis = load_profile("redis", NULL);
    struct cgroup v1 = {.mode = CG_HYBRID,
                        .owner = CG_OWN_HOST,
                        .dir = "/sys/fs/cgroup/memory/x",
                        .cs_known = true,
                        .cs_owner = CG_OWN_HOST,
                        .cs_dir = "/sys/fs/cgroup/cpuset"};
    struct cgroup v2 = {.mode = CG_UNIFIED,
                        .v2 = true,
                        .owner = CG_OWN_HOST,
                        .dir = "/sys/fs/cgroup/x",
                        .cs_known = true,
                        .cs_v2 = true,
                        .cs_owner = CG_OWN_HOST,
                        .cs_dir = "/sys/fs/cgroup/x"};
    struct err e;
    struct plan pl;
    struct plan_input in = {.profile = &redis, .topo = &t, .cgroup = &v1};

    /* v1: the cpuset hierarchy, apart from the memory cgroup; no swap limit there */
    assert_true(plan_build(&pl, &in, &e));
    const struct plan_step *s = find_step(&pl, STEP_CPUSET);
    assert_non_null(s);
    assert_false(s->u.cpuset.v2);
    assert_false(s->u.cpuset.set_swap_max);
    assert_string_equal(s->u.cpuset.dir, "/sys/fs/cgroup/cpuset");
    assert_true(hwloc_bitmap_isequal(s->u.cpuset.cpus, pl.cpus));
    assert_false(pl.degraded);
    plan_free(&pl);

    /* v2: one cgroup, which holds redis's memory.swap.max = 0 too: no swap step of its own */
    in.cgroup = &v2;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CGROUP));
    s = find_step(&pl, STEP_CPUSET);
    assert_non_null(s);
    assert_true(s->u.cpuset.v2);
    assert_true(s->u.cpuset.set_swap_max);
    assert_int_equal(s->u.cpuset.swap_max, 0);
    assert_string_equal(s->u.cpuset.dir, "/sys/fs/cgroup/x");
    assert_non_null(strstr(s->why, "the same cgroup holds its swap policy: no swap for it"));
    char value[256];
    plan_step_value(&pl, s, value, sizeof(value));
    assert_non_null(strstr(value, ", memory.swap.max=0"));
    assert_false(pl.degraded);
    plan_free(&pl);

    /* enforce = no: the swap step stays as it was */
    struct profile loose =
        load_profile("redis", (const char *const[]){"placement.enforce=no", NULL});
    in.profile = &loose;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CPUSET));
    assert_non_null(find_step(&pl, STEP_CGROUP));
    assert_non_null(note_with(&pl, NOTE_INFO, "cpuset: not enforced (enforce = no"));
    plan_free(&pl);
    in.profile = &redis;

    /* a unit without Delegate=yes: nothing made, and the fix is the unit's */
    struct cgroup unit = v2;
    unit.owner = unit.cs_owner = CG_OWN_UNIT;
    snprintf(unit.unit, sizeof(unit.unit), "redis-server.service");
    snprintf(unit.cs_why, sizeof(unit.cs_why), "redis-server.service's cgroup belongs to systemd");
    in.cgroup = &unit;
    assert_true(plan_build(&pl, &in, &e));
    assert_null(find_step(&pl, STEP_CPUSET));
    assert_true(pl.degraded);
    const char *w = note_with(&pl, NOTE_WARN, "cpuset: redis-server.service's cgroup belongs");
    assert_non_null(w);
    assert_non_null(strstr(w, "fix: Delegate=yes in redis-server.service"));
    assert_non_null(strstr(w, "AllowedCPUs="));
    assert_non_null(strstr(w, "AllowedMemoryNodes=0"));
    plan_free(&pl);
    /* a scope (a login session): start it as a service */
    snprintf(unit.unit, sizeof(unit.unit), "session-3.scope");
    assert_true(plan_build(&pl, &in, &e));
    assert_non_null(note_with(&pl, NOTE_WARN,
                              "fix: start it as a service, with systemd-run -p "
                              "AllowedCPUs="));
    plan_free(&pl);
    /* a container's read-only cgroupfs: docker's flags */
    struct cgroup box = v2;
    box.owner = box.cs_owner = CG_OWN_READONLY;
    box.container = true;
    in.cgroup = &box;
    assert_true(plan_build(&pl, &in, &e));
    assert_non_null(note_with(&pl, NOTE_WARN, "fix: docker run --cpuset-cpus="));
    plan_free(&pl);
    /* v2 with no cpuset controller offered here: the parent's subtree_control */
    struct cgroup bare = v2;
    bare.cs_owner = CG_OWN_MISSING;
    in.cgroup = &bare;
    assert_true(plan_build(&pl, &in, &e));
    assert_non_null(note_with(&pl, NOTE_WARN, "fix: echo +cpuset > the parent cgroup's"));
    /* the swap step stays: the memory controller is there */
    assert_non_null(find_step(&pl, STEP_CGROUP));
    plan_free(&pl);

    profile_free(&loose);
    profile_free(&redis);
    topo_free(&t);
}

/* The memory nodes of a plan, as a list: "0", "0,3". */
static void assert_mem_nodes(const struct plan *pl, const char *want)
{
    char *got = bitmap_list(pl->mem_nodes);
    if (strcmp(got ? got : "", want) != 0) {
        for (size_t i = 0; i < pl->nnotes; i++)
            print_message("  %s\n", pl->notes[i].text);
        fail_msg("memory nodes %s, want %s", got ? got : "", want);
    }
    free(got);
}

/*
 * Memory tiers (tests/data/tiers.xml: DRAM nodes 0 and 1, node 2's CPUs
 * without memory, node 3 slower and nearest node 2 by distance): the
 * fastest tier unless the profile asks otherwise, a memoryless home
 * included; a spill to a slower tier warned of; and tiers = all, which
 * takes it without a warning.
 */
static void test_tiers_policy(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/tiers.xml");
    const char *const on_node2[] = {"placement.near=", "placement.avoid=", NULL};
    struct profile p = load_profile("mysql", on_node2);
    hwloc_bitmap_list_sscanf(t.binding, "4-5"); /* taskset onto the memoryless node's CPUs */
    struct plan pl = make_plan(&p, &t, NULL);
    assert_mem_nodes(&pl, "0"); /* node 3 is nearer (12 against 20), but slower */
    const char *n = note_with(&pl, NOTE_INFO, "node 2 has CPUs but no memory");
    assert_non_null(n);
    assert_non_null(strstr(n, "the nearest with memory of the fastest tier (distance 20); node 3 "
                              "is nearer (12) but slower (latency 40 ns against 10)"));
    assert_non_null(note_with(&pl, NOTE_INFO, "tiers: node 3 is slower"));
    assert_false(pl.degraded);
    plan_free(&pl);
    profile_free(&p);

    /* more than the fastest tier holds: the slower node comes in, with a warning */
    const char *const big[] = {
        "placement.near=",           "placement.avoid=",   "placement.memory=auto",
        "placement.memory_size=20G", "placement.cpus=all", NULL};
    p = load_profile("mysql", big);
    hwloc_bitmap_list_sscanf(t.binding, "0-5");
    pl = make_plan(&p, &t, NULL);
    assert_int_equal(pl.mpol, PLAN_MPOL_INTERLEAVE);
    assert_mem_nodes(&pl, "0-1,3");
    assert_non_null(note_with(&pl, NOTE_WARN, "tiers: memory_size needs node 3 too"));
    assert_true(pl.degraded); /* --strict refuses it */
    plan_free(&pl);
    profile_free(&p);
    /* tiers = all: node 3 lists node 0's CPUs, so it joins node 0, and 20G fits the two */
    const char *const all[] = {"placement.near=",
                               "placement.avoid=",
                               "placement.memory=auto",
                               "placement.memory_size=20G",
                               "placement.cpus=all",
                               "placement.tiers=all",
                               NULL};
    p = load_profile("mysql", all);
    pl = make_plan(&p, &t, NULL);
    assert_mem_nodes(&pl, "0,3");
    assert_int_equal(pl.mpol, PLAN_MPOL_BIND);
    assert_null(note_with(&pl, NOTE_WARN, "tiers"));
    assert_null(note_with(&pl, NOTE_INFO, "tiers: node 3 is slower"));
    plan_free(&pl);
    profile_free(&p);
    /* a bind on node 0 with tiers = all: node 3 lists node 0's CPUs, so it joins */
    const char *const joined[] = {"placement.near=", "placement.avoid=", "placement.tiers=all",
                                  NULL};
    p = load_profile("mysql", joined);
    hwloc_bitmap_list_sscanf(t.binding, "0-1");
    pl = make_plan(&p, &t, NULL);
    assert_mem_nodes(&pl, "0,3");
    assert_non_null(note_with(&pl, NOTE_INFO, "node 3 lists node 0's CPUs as their own too"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);

    /* KNL: MCDRAM is named, and tiers = bandwidth puts pages on the one next to the CPUs */
    t = shared_xml("64intel64-fakeKNL-SNC4-hybrid.xml");
    p = load_profile("mysql", NULL);
    pl = make_plan(&p, &t, NULL);
    assert_mem_nodes(&pl, "0");
    assert_non_null(note_with(&pl, NOTE_INFO, "tiers: nodes 4-7 have more bandwidth"));
    plan_free(&pl);
    profile_free(&p);
    const char *const hbm[] = {"placement.tiers=bandwidth", "placement.memory=preferred", NULL};
    p = load_profile("mysql", hbm);
    pl = make_plan(&p, &t, NULL);
    int home = topo_node_index(&t, 0), twin = -1;
    for (size_t i = 0; i < t.nnodes; i++)
        if (t.nodes[i].shares && t.nodes[i].shares_cpus_of == 0)
            twin = (int)t.nodes[i].os_index;
    assert_true(home >= 0 && twin > 0);
    char want[16];
    snprintf(want, sizeof(want), "%d", twin);
    assert_mem_nodes(&pl, want);
    assert_int_equal(pl.mpol, PLAN_MPOL_PREFERRED);
    assert_non_null(note_with(&pl, NOTE_INFO, "tiers = bandwidth: node 0's memory comes from"));
    assert_null(note_with(&pl, NOTE_INFO, "remote")); /* it lists node 0's CPUs: local */
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * memory = weighted-interleave: the kernel's weights shown, never written;
 * all alike, or a kernel without the policy, a warning (and plain
 * interleave for the latter); with tiers = all the slower node that lists
 * the chosen node's CPUs joins.
 */
static void test_weighted_interleave(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/tiers.xml");
    const char *const sets[] = {
        "placement.near=", "placement.avoid=", "placement.memory=weighted-interleave", NULL};
    struct profile p = load_profile("mysql", sets);
    hwloc_bitmap_list_sscanf(t.binding, "0-1");
    unsigned weight[4] = {3, 3, 0, 1};
    struct plan_weights w = {.supported = true, .weight = weight, .nweights = 4};
    struct plan_input in = {.profile = &p, .topo = &t, .weights = &w};
    struct plan pl;
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    assert_int_equal(pl.mpol, PLAN_MPOL_WEIGHTED_INTERLEAVE);
    assert_mem_nodes(&pl, "0"); /* tiers = fastest: node 3 stays out */
    assert_non_null(note_with(&pl, NOTE_INFO, "pages in the kernel's weights (node 0: 3;"));
    assert_false(pl.degraded);
    plan_free(&pl);
    profile_free(&p);

    const char *const all[] = {"placement.near=", "placement.avoid=",
                               "placement.memory=weighted-interleave", "placement.tiers=all", NULL};
    p = load_profile("mysql", all);
    assert_true(plan_build(&pl, &in, &e));
    assert_mem_nodes(&pl, "0,3");
    assert_non_null(
        note_with(&pl, NOTE_INFO, "pages in the kernel's weights (node 0: 3, node 3: 1;"));
    assert_false(pl.degraded);
    const struct plan_step *s = find_step(&pl, STEP_MEMPOLICY);
    assert_int_equal(s->u.mempolicy.mode, PLAN_MPOL_WEIGHTED_INTERLEAVE);
    plan_free(&pl);
    /* all alike: as plain interleave would, which the plan warns of with the fix */
    weight[0] = weight[3] = 1;
    assert_true(plan_build(&pl, &in, &e));
    assert_non_null(note_with(&pl, NOTE_WARN, "the kernel's weights are all 1"));
    assert_true(pl.degraded);
    plan_free(&pl);
    /* a kernel before 6.9: plain interleave, warned */
    w.supported = false;
    assert_true(plan_build(&pl, &in, &e));
    assert_int_equal(pl.mpol, PLAN_MPOL_INTERLEAVE);
    assert_non_null(note_with(&pl, NOTE_WARN, "this kernel has no weighted interleave"));
    plan_free(&pl);
    /* another machine: nothing known of its weights, and nothing to warn of */
    in.weights = NULL;
    assert_true(plan_build(&pl, &in, &e));
    assert_int_equal(pl.mpol, PLAN_MPOL_WEIGHTED_INTERLEAVE);
    assert_false(pl.degraded);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * Two DRAM nodes that list the same CPUs (tests/data/twins.xml): one
 * locality, placed together: the CPUs on the one home, the memory of
 * both, its room counted whole, and no CPU called remote.
 */
static void test_shared_cpusets(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/twins.xml");
    assert_true(t.nodes[1].shares);
    assert_int_equal(t.nodes[1].shares_cpus_of, 0);
    assert_true(hwloc_bitmap_iszero(t.nodes[1].cpus));
    const char *const sets[] = {"placement.near=", NULL};
    struct profile p = load_profile("mysql", sets);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_mem_nodes(&pl, "0-1");
    char *cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "0-1");
    free(cpus);
    assert_non_null(note_with(&pl, NOTE_INFO, "node 1 lists node 0's CPUs as their own too"));
    /* node 0 and node 1 together: the roomier choice */
    assert_non_null(note_with(&pl, NOTE_INFO, "node 0: most free memory (16.0 GiB)"));
    assert_non_null(note_with(&pl, NOTE_INFO, "memory bind 0-1: every page on the nodes of its"));
    assert_null(note_with(&pl, NOTE_INFO, "remote"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * The cpuset of a service whose policy may spill (redis: preferred) holds
 * every node of the tiers it may use, never the slower one: only the
 * cpuset keeps the kernel's fallback off it.
 */
static void test_tiers_cpuset(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/tiers.xml");
    struct cgroup v1 = {.mode = CG_HYBRID,
                        .owner = CG_OWN_HOST,
                        .dir = "/sys/fs/cgroup/memory/x",
                        .cs_known = true,
                        .cs_owner = CG_OWN_HOST,
                        .cs_dir = "/sys/fs/cgroup/cpuset"};
    const char *const sets[] = {"placement.near=", NULL};
    struct profile p = load_profile("redis", sets);
    struct plan_input in = {.profile = &p, .topo = &t, .cgroup = &v1};
    struct plan pl;
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    const struct plan_step *s = find_step(&pl, STEP_CPUSET);
    assert_non_null(s);
    char *mems = bitmap_list(s->u.cpuset.mems);
    assert_string_equal(mems, "0-1");
    free(mems);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/*
 * nodes = 2 on the CoD machine, whose pairs 0-1 and 2-3 are 21 apart and
 * every other pair 31: the closest pair that no service it keeps apart
 * from holds, round trips counted both ways, then memory of its own, then
 * free memory, each where what comes before ties.
 */
static void test_group_of_nodes(void **state)
{
    (void)state;
    struct topo t = shared_xml("28intel64-2p2g7c-CoDgroups.v1tov2.xml");
    for (size_t i = 0; i < t.nnodes; i++)
        t.nodes[i].mem_total = t.nodes[i].mem_free = 16 * GIB; /* alike, but for the rules tried */
    const char *two[] = {"placement.nodes=2", NULL};
    struct profile mysql = load_profile("mysql", two);
    struct plan pl = make_plan(&mysql, &t, NULL);
    assert_list(pl.nodes, "nodes", "0-1", "nothing to tell them apart: the lowest numbers");
    plan_free(&pl);

    struct claim k = live("nginx", "0-6", "0", false, "mysql");
    pl = plan_with(&mysql, &t, &k, 1);
    assert_list(pl.nodes, "nodes", "2-3", "nginx on node 0, which mysql keeps apart from");
    assert_true(has_note(
        &pl, "nodes 2-3: the closest group of 2 none of whose nodes holds nginx, by the distance "
             "matrix"));
    plan_free(&pl);
    claim_free(&k);

    size_t n0 = (size_t)topo_node_index(&t, 0), n1 = (size_t)topo_node_index(&t, 1);
    unsigned saved = t.distance[n0 * t.nnodes + n1];
    t.distance[n0 * t.nnodes + n1] = 40; /* node 1 is 15 from node 0, node 0 is 40 from node 1 */
    t.distance[n1 * t.nnodes + n0] = 15;
    pl = make_plan(&mysql, &t, NULL);
    assert_list(pl.nodes, "nodes", "2-3", "an asymmetric pair costs its round trip");
    plan_free(&pl);
    t.distance[n0 * t.nnodes + n1] = t.distance[n1 * t.nnodes + n0] = saved;

    t.nodes[n0].has_memory = false;
    uint64_t total = t.nodes[n0].mem_total, free = t.nodes[n0].mem_free;
    t.nodes[n0].mem_total = t.nodes[n0].mem_free = 0;
    pl = make_plan(&mysql, &t, NULL);
    assert_list(pl.nodes, "nodes", "2-3", "a pair as close, each node with memory of its own");
    plan_free(&pl);
    t.nodes[n0].has_memory = true;

    t.nodes[n0].mem_total = total;
    t.nodes[n0].mem_free = free / 8;
    pl = make_plan(&mysql, &t, NULL);
    assert_list(pl.nodes, "nodes", "2-3", "a pair as close with more free memory");
    plan_free(&pl);
    profile_free(&mysql);
    topo_free(&t);
}

/* A count of CPUs on one node: a node that holds them all ranks before one with more memory. */
static void test_one_node_holds_the_count(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    hwloc_bitmap_list_sscanf(t.binding, "1-3"); /* taskset left node 0 one CPU */
    t.nodes[0].mem_free = 2 * t.nodes[1].mem_free;
    const char *two[] = {"placement.cpus=2", NULL};
    struct profile p = load_profile("mysql", two);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_cpus(&pl, "2-3", "the node with both CPUs, not the roomier one");
    assert_false(pl.degraded);
    assert_true(has_note(&pl, "node 1: it has the 2 CPUs asked for (node 0 has 1)"));
    plan_free(&pl);
    profile_free(&p);

    const char *three[] = {"placement.cpus=3", NULL}; /* none holds it: memory decides again */
    p = load_profile("mysql", three);
    pl = make_plan(&p, &t, NULL);
    assert_cpus(&pl, "1", "no node holds 3: the roomier one, and a warning");
    assert_true(pl.degraded);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* A strict bind to part of the machine with no size to check: said, with the way to check it. */
static void test_bind_without_a_size(void **state)
{
    (void)state;
    struct topo t = shared_xml("64intel64-fakeKNL-SNC4-hybrid.xml");
    struct profile p = load_profile("mysql", NULL);
    struct plan pl = make_plan(&p, &t, NULL);
    assert_true(has_note(&pl, "memory bind 0 holds 1.0 GiB of this machine's 12.0 GiB, and nothing "
                              "checks that the service fits there"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
    /* an export without memory sizes: nothing said of a bind, and no "0.0 GiB free" */
    t = load_topo("synthetic:pack:2 [numa(memory=0)] core:2 pu:1");
    p = load_profile("mysql", NULL);
    pl = make_plan(&p, &t, NULL);
    assert_false(has_note(&pl, "nothing checks"));
    assert_true(has_note(&pl, "node 0: the candidates are alike (memory unknown, 0 CPUs claimed)"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
    t = shared_xml("64intel64-fakeKNL-SNC4-hybrid.xml");
    const char *sized[] = {"placement.memory_size=512M", NULL}; /* a size that fits: nothing */
    p = load_profile("mysql", sized);
    pl = make_plan(&p, &t, NULL);
    assert_false(has_note(&pl, "nothing checks"));
    assert_false(pl.degraded);
    plan_free(&pl);
    profile_free(&p);
    const char *big[] = {"placement.memory_size=100G", NULL}; /* one that does not: a warning */
    p = load_profile("mysql", big);
    pl = make_plan(&p, &t, NULL);
    assert_true(has_note(&pl, "memory_size 100.0 GiB (--set) is more than memory bind 0 holds "
                              "(1.0 GiB): the service swaps or is killed"));
    assert_true(has_note(&pl, "(fix: memory = auto, which spreads what does not fit"));
    assert_true(pl.degraded);
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
    /* bound to the whole machine, spreading cannot help: the fix says so */
    t = load_topo("synthetic:pack:2 numa:1(memory=1GB) core:2 pu:1");
    const char *all[] = {"placement.memory_size=100G", "placement.nodes=2", NULL};
    p = load_profile("mysql", all);
    pl = make_plan(&p, &t, NULL);
    assert_true(has_note(&pl, "(fix: a smaller memory_size, or a bigger machine: the bind holds "
                              "all its memory already)"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&t);
}

/* The names the plan lists, in order, "|"-separated, into buf. */
static const char *step_names(const struct plan *pl, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pl->nsteps && len < n; i++) {
        char name[64];
        plan_step_name(&pl->steps[i], name, sizeof(name));
        int w = snprintf(buf + len, n - len, "%s%s", i ? "|" : "", name);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/*
 * The whole launch is the plan: the claim first (where there is a
 * registry), the cgroup, the process's settings, the yield, the privilege
 * drop, the environment, the final limits and the exec last, each with a
 * stable name and a reason; the drop, the final limits and the exec are
 * required, and so is a claim in a --state-dir that was asked for.
 */
static void test_every_effect_a_step(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:4 pu:1");
    struct profile p = profile_text("[profile]\nname = svc\n[placement]\ncpus = 2\n"
                                    "[limits]\nnofile = 4096\ncore = 0\n"
                                    "[env]\nPATH = /opt/svc/bin:/usr/bin\n");
    char *env[] = {"PATH=/usr/local/bin:/usr/bin", NULL};
    char *command[] = {"svcd", "--port", "1", NULL};
    struct claim pool = live("nginx", "0-3", "0", false, "svc");
    pool.pool = true;
    struct privs pv = {.change_id = true, .uid = 33, .user = "www-data (uid 33)"};
    struct plan_input in = {.profile = &p,
                            .topo = &t,
                            .environ = env,
                            .registry = true,
                            .claims = &pool,
                            .nclaims = 1,
                            .privs = &pv,
                            .command = command,
                            .state_dir = "/run/tunerun"};
    struct plan pl;
    struct err e;
    char names[1024];
    assert_true(plan_build(&pl, &in, &e));
    assert_string_equal(step_names(&pl, names, sizeof(names)),
                        "claim|rlimit core|rlimit nofile|mempolicy|affinity|yield|privileges|"
                        "env PATH|final rlimits|exec");
    for (size_t i = 0; i < pl.nsteps; i++) {
        enum step_type k = pl.steps[i].type;
        assert_non_null(pl.steps[i].why);
        assert_true(pl.steps[i].required ==
                    (k == STEP_PRIVILEGES || k == STEP_RLIMITS_FINAL || k == STEP_EXEC));
    }
    /* the claim: where, and the key a restart finds it by */
    const struct plan_step *claim = find_step(&pl, STEP_CLAIM);
    char key[CLAIM_KEY_LEN + 1], value[512];
    plan_launch_key("svc", command, key, sizeof(key));
    assert_string_equal(claim->u.claim.key, key);
    assert_int_equal(claim->u.claim.navoid, 0); /* what it records: its own profile's */
    assert_false(claim->u.claim.exclusive);
    assert_false(claim->u.claim.pool); /* a count of CPUs, not every one it may use */
    plan_step_value(&pl, claim, value, sizeof(value));
    assert_string_equal(value, "/run/tunerun");
    /* the yield: who gives what */
    plan_step_value(&pl, find_step(&pl, STEP_YIELD), value, sizeof(value));
    assert_string_equal(value, "nginx gives 0-1");
    /* the drop looks for the command in the PATH the environment step will set */
    assert_string_equal(find_step(&pl, STEP_PRIVILEGES)->u.privileges.path,
                        "/opt/svc/bin:/usr/bin");
    plan_step_value(&pl, find_step(&pl, STEP_RLIMITS_FINAL), value, sizeof(value));
    assert_string_equal(value, "core, nofile");
    const struct plan_step *exec = &pl.steps[pl.nsteps - 1];
    assert_int_equal(exec->type, STEP_EXEC);
    assert_ptr_equal(exec->u.exec.argv, command);
    plan_step_value(&pl, exec, value, sizeof(value));
    assert_string_equal(value, "svcd --port 1");
    plan_free(&pl);

    /* a claim in a --state-dir that was asked for is required; another key for other words */
    in.state_dir_asked = true;
    char *other[] = {"svcd", "--port", "2", NULL};
    in.command = other;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(find_step(&pl, STEP_CLAIM)->required);
    assert_string_not_equal(find_step(&pl, STEP_CLAIM)->u.claim.key, key);
    plan_free(&pl);

    /* no registry, no [env] PATH, no privileges: no claim, no yield, no drop; the drop's PATH
     * would be the inherited one, and the exec of a plan shown without a command says so */
    struct profile bare = profile_text("[profile]\nname = bare\n[memory]\nthp = system\n");
    in = (struct plan_input){.profile = &bare, .topo = &t, .environ = env};
    assert_true(plan_build(&pl, &in, &e));
    assert_string_equal(step_names(&pl, names, sizeof(names)), "mempolicy|affinity|exec");
    plan_step_value(&pl, &pl.steps[pl.nsteps - 1], value, sizeof(value));
    assert_string_equal(value, "the command after --");
    plan_free(&pl);
    in.privs = &pv;
    assert_true(plan_build(&pl, &in, &e));
    assert_string_equal(find_step(&pl, STEP_PRIVILEGES)->u.privileges.path,
                        "/usr/local/bin:/usr/bin");
    plan_free(&pl);

    profile_free(&bare);
    claim_free(&pool);
    profile_free(&p);
    topo_free(&t);
}

/*
 * A shared pool on a hybrid machine yields its fast cores and keeps a slow
 * one; a restart keeps its CPUs; two nodes each give their fastest kind.
 */
static void test_pool_keeps_a_slow_core(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/hybrid.xml"); /* 0-7 efficiency, 8-23 performance */
    struct profile mysql = load_profile("mysql", NULL);
    struct claim k = live("nginx", "0-23", "0", false, "mysql");
    k.pool = true;
    struct plan pl = plan_with(&mysql, &t, &k, 1);
    assert_int_equal(pl.nshrinks, 1);
    char *kept = bitmap_list(pl.shrinks[0].cpus);
    assert_string_equal(kept, "6-7"); /* its last efficiency core, not 22-23 */
    free(kept);
    assert_cpus(&pl, "0-5,8-23", "mysql beside a yielding pool");
    plan_free(&pl);
    claim_free(&k);

    /* back where it ran before a restart: its CPUs, and no word of "fastest" */
    const char *four[] = {"placement.cpus=4", NULL};
    struct profile p4 = load_profile("mysql", four);
    struct claim prev = live("mysql", "0-3", "0", false, NULL);
    struct plan_input in = {.profile = &p4, .topo = &t, .registry = true, .previous = &prev};
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    assert_cpus(&pl, "0-3", "restart");
    assert_true(has_note(&pl, "(4); kinds of core: 4 IntelAtom"));
    assert_false(has_note(&pl, "fastest"));
    plan_free(&pl);
    claim_free(&prev);
    profile_free(&p4);
    profile_free(&mysql);
    topo_free(&t);

    /* a count spread over two nodes takes each node's fastest kind, and says so */
    t = load_topo("tests/data/hybrid-2nodes.xml");
    const char *spread[] = {"placement.nodes=all", "placement.cpus=6", NULL};
    p4 = load_profile("mysql", spread);
    pl = make_plan(&p4, &t, NULL);
    assert_cpus(&pl, "4-6,16-18", "two hybrid nodes");
    assert_true(has_note(&pl, "the fastest kind of core first within each node: 6 IntelCore"));
    plan_free(&pl);
    profile_free(&p4);
    topo_free(&t);
}

/*
 * Where no allowed node owns the CPUs (docker run --cpuset-cpus of node 0,
 * --cpuset-mems 1): a service is still kept apart, gets its CPUs back after
 * a restart, and its memory policy holds over the cpuset's memory nodes,
 * with a warning that all of it is remote.
 */
static void test_no_node_placement(void **state)
{
    (void)state;
    struct topo t = load_topo("tests/data/cpuset-mismatch.xml"); /* CPUs 0-1, node 1's memory */
    const char *one[] = {"placement.cpus=1", NULL};
    struct profile mysql = load_profile("mysql", one), nginx = load_profile("nginx", NULL);

    struct plan pl = make_plan(&mysql, &t, NULL);
    assert_int_equal(pl.mpol, PLAN_MPOL_BIND);
    char *mem = bitmap_list(pl.mem_nodes);
    assert_string_equal(mem, "1");
    free(mem);
    assert_true(pl.degraded); /* every page remote: the profile's fear */
    assert_true(has_note(&pl, "memory from node 1: the cpuset's memory nodes"));
    assert_null(strstr(find_step(&pl, STEP_AFFINITY)->why, "next to its memory"));
    plan_free(&pl);
    pl = make_plan(&nginx, &t, NULL); /* memory local asks for nothing it does not get */
    assert_int_equal(pl.mpol, PLAN_MPOL_LOCAL);
    assert_false(pl.degraded);
    plan_free(&pl);

    /* nginx, avoided, runs on CPU 0: mysql takes CPU 1 */
    struct claim k = live("nginx", "0", "", false, "mysql");
    pl = plan_with(&mysql, &t, &k, 1);
    assert_cpus(&pl, "1", "kept apart on no node");
    plan_free(&pl);
    claim_free(&k);

    /* it ran on CPU 1 before, on no node: CPU 1 again */
    struct claim prev = live("mysql", "1", "", false, NULL);
    struct plan_input in = {.profile = &mysql, .topo = &t, .registry = true, .previous = &prev};
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    assert_cpus(&pl, "1", "restart on no node");
    assert_true(has_note(&pl, "restarted: it ran on CPU 1 before, and it is free"));
    plan_free(&pl);
    claim_free(&prev);
    profile_free(&mysql);
    profile_free(&nginx);
    topo_free(&t);
}

/*
 * A pool restarted after it yielded: it ran on the CPU it kept, and takes
 * every CPU it may use again, which its note says instead of that one CPU.
 */
static void test_pool_restart_note(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1");
    struct profile nginx = load_profile("nginx", NULL);
    struct claim prev = live("nginx", "1", "0", false, NULL);
    struct plan_input in = {.profile = &nginx, .topo = &t, .registry = true, .previous = &prev};
    struct plan pl;
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    assert_cpus(&pl, "0-3", "a restarted pool");
    assert_true(has_note(&pl, "restarted: it ran on CPU 1 before, and it is free; with cpus = "
                              "all it takes every CPU it may use again"));
    plan_free(&pl);
    /* a whole node: its own node first, whole */
    const char *const node1[] = {"placement.nodes=1", NULL};
    struct profile redis = load_profile("redis", node1);
    struct claim back = live("redis", "3", "1", false, NULL);
    in = (struct plan_input){.profile = &redis, .topo = &t, .registry = true, .previous = &back};
    assert_true(plan_build(&pl, &in, &e));
    assert_cpus(&pl, "2-3", "a restarted node");
    assert_true(has_note(&pl, "restarted: it ran on CPU 3 before, and it is free; with cpus = "
                              "node it takes the whole of the nodes it gets, its own first"));
    plan_free(&pl);
    claim_free(&back);
    profile_free(&redis);
    claim_free(&prev);
    profile_free(&nginx);
    topo_free(&t);
}

/*
 * A placed service restarted where a shared pool spreads over its CPUs
 * again (the pool restarted meanwhile, or got them back when the service
 * ended): the pool yields them again, so they count as free, and it goes
 * back to them, not to the node the ranking would pick.
 */
static void test_restart_beside_pool(void **state)
{
    (void)state;
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:2 pu:1"); /* nodes 0-1, 0-1 and 2-3 */
    struct profile mysql = load_profile("mysql", NULL);
    struct claim k = live("nginx", "0-3", "0-1", false, "mysql");
    k.pool = true;
    struct claim prev = live("mysql", "2-3", "1", false, NULL);
    struct plan_input in = {.profile = &mysql,
                            .topo = &t,
                            .registry = true,
                            .claims = &k,
                            .nclaims = 1,
                            .previous = &prev};
    struct plan pl;
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    assert_cpus(&pl, "2-3", "restarted beside a pool");
    assert_true(has_note(&pl, "restarted: it ran on CPUs 2-3 before, and they are free of all "
                              "but shared pools, which yield them"));
    assert_int_equal(pl.nshrinks, 1);
    plan_free(&pl);
    /* a service that does not yield holds them: placed afresh */
    k.pool = false;
    assert_true(plan_build(&pl, &in, &e));
    assert_true(has_note(&pl, "but they are taken or gone now; placing it afresh"));
    plan_free(&pl);
    claim_free(&prev);
    claim_free(&k);
    profile_free(&mysql);
    topo_free(&t);
}

/* One CPU is one CPU: the notes and reasons agree in number. */
static void test_one_is_singular(void **state)
{
    (void)state;
    struct topo one = load_topo("synthetic:pack:1 numa:1 core:1 pu:1");
    const char *const three[] = {"placement.cpus=3", NULL};
    struct profile p = load_profile("mysql", three);
    struct plan pl = make_plan(&p, &one, NULL);
    assert_true(has_note(&pl, "cpus = 3 (--set), but only 1 is available; using 1"));
    plan_free(&pl);
    profile_free(&p);
    p = load_profile("java", NULL);
    pl = make_plan(&p, &one, NULL);
    assert_non_null(strstr(find_env(&pl, "MALLOC_ARENA_MAX")->why, "not the 1 placed one;"));
    plan_free(&pl);
    profile_free(&p);
    topo_free(&one);

    struct topo two = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    struct claim k = live("redis", "1", "0", true, NULL);
    p = load_profile("redis", NULL);
    pl = plan_with(&p, &two, &k, 1);
    assert_true(has_note(&pl, "CPU 1 is claimed exclusively by running services; not using it"));
    plan_free(&pl);
    profile_free(&p);
    claim_free(&k);
    topo_free(&two);
}

static void test_claims(void **state)
{
    (void)state;
    /* two equal nodes: without claims mysql takes node 0 (lowest index) */
    struct topo t = load_topo("synthetic:pack:2 numa:1 core:4 pu:1");
    struct profile mysql = load_profile("mysql", NULL);
    struct plan pl = plan_with(&mysql, &t, NULL, 0);
    assert_true(hwloc_bitmap_isset(pl.nodes, 0));
    plan_free(&pl);

    /* mysql avoids nginx: nginx on node 0 sends it to node 1 */
    struct claim k = live("nginx", "0-3", "0", false, "mysql");
    pl = plan_with(&mysql, &t, &k, 1);
    assert_int_equal(hwloc_bitmap_first(pl.nodes), 1);
    assert_int_equal(hwloc_bitmap_weight(pl.nodes), 1);
    assert_false(pl.degraded);
    plan_free(&pl);
    claim_free(&k);

    /* free memory a few KiB apart, as on any live machine, is no reason to pile up: java,
     * which keeps apart from nothing, goes where fewer CPUs are claimed */
    struct profile java = load_profile("java", NULL);
    t.nodes[0].mem_free += 8192;
    k = live("redis", "0-3", "0", false, NULL);
    pl = plan_with(&java, &t, &k, 1);
    assert_int_equal(hwloc_bitmap_first(pl.nodes), 1);
    assert_true(has_note(&pl, "about as much free memory as node 0"));
    plan_free(&pl);
    claim_free(&k);
    t.nodes[0].mem_free -= 8192;
    profile_free(&java);

    /* services named in a note are named whole: "ngin" is not already there as part of "nginx" */
    const char *const alone[] = {"placement.exclusive=yes", "placement.nodes=1", NULL};
    struct profile excl = load_profile("mysql", alone);
    struct claim alike[] = {live("nginx", "0-7", "0-1", false, NULL),
                            live("ngin", "0-7", "0-1", false, NULL)};
    pl = plan_with(&excl, &t, alike, 2);
    assert_true(has_note(&pl, "nginx, ngin"));
    plan_free(&pl);
    claim_free(&alike[0]);
    claim_free(&alike[1]);
    profile_free(&excl);

    /* symmetric: redis names mysql in its own avoid */
    k = live("redis", "0-3", "0", false, "mysql");
    pl = plan_with(&mysql, &t, &k, 1);
    assert_int_equal(hwloc_bitmap_first(pl.nodes), 1);
    plan_free(&pl);
    claim_free(&k);

    /* an exclusive claim's CPUs are never taken by another service */
    struct profile nginx = load_profile("nginx", NULL);
    k = live("java", "4-7", "1", true, NULL);
    pl = plan_with(&nginx, &t, &k, 1);
    char *cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "0-3");
    free(cpus);
    plan_free(&pl);
    claim_free(&k);

    /* every CPU held exclusively: share, warn, degraded (--strict refuses) */
    struct claim two[2] = {live("java", "0-3", "0", true, NULL),
                           live("java", "4-7", "1", true, NULL)};
    pl = plan_with(&nginx, &t, two, 2);
    assert_true(pl.degraded);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 8);
    plan_free(&pl);
    claim_free(&two[0]);
    claim_free(&two[1]);
    topo_free(&t);

    /* one node: keep apart by cores while enough remain */
    t = load_topo("synthetic:pack:1 numa:1 core:4 pu:1");
    k = live("mysql", "0-1", "0", false, "nginx");
    pl = plan_with(&nginx, &t, &k, 1);
    cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "2-3");
    free(cpus);
    assert_false(pl.degraded);
    plan_free(&pl);
    claim_free(&k);
    /* ... and share with a warning when none remain: mysql is placed, not a pool */
    k = live("mysql", "0-3", "0", false, "nginx");
    pl = plan_with(&nginx, &t, &k, 1);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 4);
    assert_true(pl.degraded);
    assert_int_equal(pl.nshrinks, 0);
    plan_free(&pl);
    claim_free(&k);
    /* nginx, a shared pool on every core, yields all but its last core to mysql */
    k = live("nginx", "0-3", "0", false, "mysql");
    k.pool = true;
    pl = plan_with(&mysql, &t, &k, 1);
    cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "0-2");
    free(cpus);
    assert_false(pl.degraded);
    assert_int_equal(pl.nshrinks, 1);
    assert_int_equal(pl.shrinks[0].claim, 0);
    cpus = bitmap_list(pl.shrinks[0].cpus);
    assert_string_equal(cpus, "3");
    free(cpus);
    plan_free(&pl);
    /* a pool never takes from a pool: another nginx-like one shares and warns */
    struct profile pool2 = load_profile("nginx", (const char *[]){"profile.name=web", NULL});
    free(k.avoid[0]);
    k.avoid[0] = strdup("web");
    pl = plan_with(&pool2, &t, &k, 1);
    assert_true(pl.degraded);
    assert_int_equal(pl.nshrinks, 0);
    plan_free(&pl);
    profile_free(&pool2);
    claim_free(&k);
    topo_free(&t);

    /* two nodes, nginx spans both: mysql takes a whole node, nginx keeps the other */
    t = load_topo("synthetic:pack:2 numa:1 core:4 pu:1");
    k = live("nginx", "0-7", "0-1", false, "mysql");
    k.pool = true;
    pl = plan_with(&mysql, &t, &k, 1);
    assert_int_equal(hwloc_bitmap_weight(pl.nodes), 1);
    assert_int_equal(hwloc_bitmap_weight(pl.cpus), 4);
    assert_false(pl.degraded);
    assert_int_equal(pl.nshrinks, 1);
    assert_false(hwloc_bitmap_intersects(pl.shrinks[0].cpus, pl.cpus));
    assert_int_equal(hwloc_bitmap_weight(pl.shrinks[0].cpus), 4);
    assert_int_equal(hwloc_bitmap_weight(pl.shrinks[0].nodes), 1);
    assert_false(hwloc_bitmap_intersects(pl.shrinks[0].nodes, pl.nodes));
    plan_free(&pl);
    claim_free(&k);

    /* SMT: a pool gives up whole cores, not only the PUs the newcomer runs on */
    {
        struct topo smt = load_topo("synthetic:pack:1 numa:1 core:4 pu:2");
        struct profile nosmt = load_profile("mysql", (const char *[]){"placement.smt=no", NULL});
        struct claim pool = live("nginx", "0-7", "0", false, "mysql");
        pool.pool = true;
        pl = plan_with(&nosmt, &smt, &pool, 1);
        assert_false(pl.degraded);
        assert_int_equal(pl.nshrinks, 1);
        assert_int_equal(hwloc_bitmap_weight(pl.cpus), 3); /* one PU of each core but the last */
        cpus = bitmap_list(pl.shrinks[0].cpus);
        assert_string_equal(cpus, "6-7"); /* the pool keeps a whole core, no sibling of mysql's */
        free(cpus);
        cpus = bitmap_list(pl.shrinks[0].gives);
        assert_string_equal(cpus, "0-5");
        free(cpus);
        plan_free(&pl);
        claim_free(&pool);
        profile_free(&nosmt);
        topo_free(&smt);
    }
    /* a pool yields when the CPUs free of it cannot cover the ask, not only when none are */
    {
        struct topo one = load_topo("synthetic:pack:1 numa:1 core:8 pu:1");
        struct profile four = profile_text("[profile]\nname = four\n[placement]\ncpus = 4\n"
                                           "exclusive = yes\n");
        struct claim pool = live("nginx", "1-7", "0", false, NULL);
        pool.pool = true;
        pl = plan_with(&four, &one, &pool, 1);
        assert_false(pl.degraded);
        cpus = bitmap_list(pl.cpus);
        assert_string_equal(cpus, "0-3");
        free(cpus);
        assert_int_equal(pl.nshrinks, 1);
        cpus = bitmap_list(pl.shrinks[0].cpus);
        assert_string_equal(cpus, "4-7");
        free(cpus);
        plan_free(&pl);
        /* ... and leaves it alone when they do */
        struct profile two = profile_text("[profile]\nname = two\n[placement]\ncpus = 1\n"
                                          "exclusive = yes\n");
        pl = plan_with(&two, &one, &pool, 1);
        assert_int_equal(pl.nshrinks, 0);
        cpus = bitmap_list(pl.cpus);
        assert_string_equal(cpus, "0");
        free(cpus);
        plan_free(&pl);
        profile_free(&two);
        claim_free(&pool);
        profile_free(&four);
        topo_free(&one);
    }

    /* a restart gets its previous node back when it is free ... */
    struct claim prev = live("mysql", "4-7", "1", false, "nginx");
    struct plan_input in = {.profile = &mysql, .topo = &t, .registry = true, .previous = &prev};
    struct err e;
    assert_true(plan_build(&pl, &in, &e));
    cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "4-7");
    free(cpus);
    plan_free(&pl);
    /* ... and is placed afresh when a service it avoids sits there now */
    k = live("nginx", "4-7", "1", false, "mysql");
    in.claims = &k;
    in.nclaims = 1;
    assert_true(plan_build(&pl, &in, &e));
    cpus = bitmap_list(pl.cpus);
    assert_string_equal(cpus, "0-3");
    free(cpus);
    plan_free(&pl);
    claim_free(&k);
    claim_free(&prev);
    topo_free(&t);
    profile_free(&mysql);
    profile_free(&nginx);
}

/* A plan of p on t where `near` found its disks on `nodes` ("none": on no known node). */
static struct plan plan_near(const struct profile *p, const struct topo *t, struct claim *k,
                             size_t n, const struct claim *prev, const char *nodes)
{
    struct plan pl;
    struct err e;
    struct plan_near near = {.nodes = hwloc_bitmap_alloc()};
    hwloc_bitmap_list_sscanf(near.nodes, strcmp(nodes, "none") == 0 ? "" : nodes);
    near.status = hwloc_bitmap_iszero(near.nodes) ? NEAR_NO_NODE : NEAR_FOUND;
    near.what = xasprintf("/srv is on nvme0n1 (node %s)", nodes);
    struct plan_input in = {.profile = p,
                            .topo = t,
                            .registry = true,
                            .claims = k,
                            .nclaims = n,
                            .previous = prev,
                            .near = &near};
    if (!plan_build(&pl, &in, &e))
        fail_msg("%s", e.msg);
    hwloc_bitmap_free(near.nodes);
    free(near.what);
    return pl;
}

/* The plan's nodes are `nodes` and one of its notes says `text`, or the test fails. */
static void assert_nodes_said(const struct plan *pl, const char *nodes, const char *text,
                              const char *label)
{
    char *got = bitmap_list(pl->nodes);
    if (strcmp(got, nodes) != 0 || !has_note(pl, text)) {
        for (size_t i = 0; i < pl->nnotes; i++)
            fprintf(stderr, "  note: %s\n", pl->notes[i].text);
        fail_msg("%s: nodes %s, want %s and a note '%s'", label, got, nodes, text);
    }
    free(got);
}

/*
 * Services that share CPUs, a count each, spread over a node: the CPUs the
 * fewest running services hold first, whole cores before halves, and core
 * order among equals; where every CPU is held as often, core order again.
 */
static void test_counts_spread_over_held_cpus(void **state)
{
    (void)state;
    const char *const one[] = {"placement.cpus=1", "placement.nodes=1", NULL};
    struct profile redis = load_profile("redis", one);
    struct topo t = load_topo("synthetic:pack:1 numa:1 core:2 pu:1");
    const struct {
        const char *held[3]; /* the CPUs of each running redis */
        const char *want;
    } cases[] = {
        {{NULL}, "0"},
        {{"0", NULL}, "1"},
        {{"0", "1", NULL}, "0"},
        {{"0", "0", "1"}, "1"},
        {{"1", "0", "1"}, "0"},
        {{"0-1", NULL}, "0"},
        {{"0-1", "0", NULL}, "1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct claim k[3];
        size_t n = 0;
        while (n < 3 && cases[i].held[n]) {
            k[n] = live("redis", cases[i].held[n], "0", false, NULL);
            n++;
        }
        struct plan pl = plan_with(&redis, &t, k, n);
        char label[32];
        snprintf(label, sizeof(label), "case %zu", i);
        assert_cpus(&pl, cases[i].want, label);
        assert_int_equal(has_note(&pl, "of those the fewest running services hold"), n > 0);
        assert_false(pl.degraded);
        plan_free(&pl);
        for (size_t j = 0; j < n; j++)
            claim_free(&k[j]);
    }
    topo_free(&t);
    /* two cores of two PUs, one PU of the first held: the free core, whole, before the half */
    const char *const two[] = {"placement.cpus=2", "placement.nodes=1", NULL};
    struct profile pair = load_profile("redis", two);
    t = load_topo("synthetic:pack:1 numa:1 core:2 pu:2");
    struct claim k = live("redis", "0", "0", false, NULL);
    struct plan pl = plan_with(&pair, &t, &k, 1);
    assert_cpus(&pl, "2-3", "a whole free core");
    plan_free(&pl);
    claim_free(&k);
    /* ... and one more than it holds: then the free half of the other */
    const char *const three[] = {"placement.cpus=3", "placement.nodes=1", NULL};
    struct profile triple = load_profile("redis", three);
    k = live("redis", "0", "0", false, NULL);
    pl = plan_with(&triple, &t, &k, 1);
    assert_cpus(&pl, "1-3", "the free core, then the free half");
    plan_free(&pl);
    claim_free(&k);
    topo_free(&t);
    profile_free(&triple);
    profile_free(&pair);
    profile_free(&redis);
}

/*
 * `near`: the node its disk hangs off, else the nearest, after keeping apart, the restart
 * rule, memory of its own and room to spare; and notes that say which of them decided.
 */
static void test_near_its_disk(void **state)
{
    (void)state;
    struct topo t = odd_machine();  /* CPUs on 0, 1 and 3; 1 has no memory, 2 no CPUs */
    t.nodes[3].mem_free = 14 * GIB; /* without near: node 3, more free memory than node 0's 8 */
    const char *const srv[] = {"placement.near=/srv", NULL};
    struct profile mysql = load_profile("mysql", srv);
    static const struct {
        const char *disks; /* the nodes `near` found its disks on */
        const char *nodes; /* where mysql goes */
        const char *note;
    } cases[] = {
        {"none", "3", "near: /srv is on nvme0n1 (node none); nodes are chosen as without it"},
        /* the disk's own node, over more free memory elsewhere */
        {"0", "0", "node 0: the disk under /srv hangs off it"},
        /* on the CPU-less node 2: the nearest node with CPUs, by distance (0: 25, 3: 30) */
        {"2", "0", "node 0: the nearest with room to spare to the disk under /srv (distance 25)"},
        {"2", "0", "near: node 2, which the disk hangs off, has no usable CPU"},
        /* on the memoryless node 1: the nearest with memory of its own (3, at 12) */
        {"1", "3", "node 3: the nearest with room to spare to the disk under /srv (distance 12)"},
        {"1", "3", "near: node 1, which the disk hangs off, has no memory of its own"},
        /* disks on two nodes: either is as near; the memoryless node 1 is not (12) */
        {"0,3", "3", "node 3: most free memory"},
        /* a node the topology does not show (outside the cpuset) is said, and decides nothing */
        {"7", "3", "which is not among the allowed nodes here; nodes are chosen as without it"},
        {"0,7", "0", "(not among the allowed nodes here: 7)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct plan pl = plan_near(&mysql, &t, NULL, 0, NULL, cases[i].disks);
        assert_nodes_said(&pl, cases[i].nodes, cases[i].note, cases[i].disks);
        check_invariants(&mysql, &t, &pl, cases[i].disks);
        plan_free(&pl);
    }

    /* room to spare: a disk's node with under half the most free memory loses its nearness */
    t.nodes[3].mem_free = 20 * GIB;
    struct plan pl = plan_near(&mysql, &t, NULL, 0, NULL, "0");
    assert_nodes_said(&pl, "3",
                      "near: node 0, which the disk hangs off, lacks room to spare: 8.0 GiB free "
                      "against the roomiest's 20.0 GiB, 0 of its 4 candidate CPUs claimed",
                      "short of memory");
    plan_free(&pl);
    /* ... and a disk's node with room is never called farther than a crowded one */
    pl = plan_near(&mysql, &t, NULL, 0, NULL, "3");
    assert_nodes_said(&pl, "3", "node 3: the disk under /srv hangs off it", "roomy disk node");
    plan_free(&pl);
    t.nodes[3].mem_free = 14 * GIB;
    /* ... or more than half its candidate CPUs claimed: a second mysql does not stack on the
     * first; half is still room */
    static const struct {
        const char *cpus, *nodes, *note;
        bool exclusive;
    } claims[] = {
        {"0-3", "3", "4 of its 4 candidate CPUs claimed", false},
        {"0-2", "3", "3 of its 4 candidate CPUs claimed", false},
        {"0-1", "0", "node 0: the disk under /srv hangs off it", false},
        /* an exclusive claim's CPUs are no candidates: the other two are free */
        {"0-1", "0", "node 0: the disk under /srv hangs off it", true},
    };
    for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
        struct claim k = live("redis", claims[i].cpus, "0", claims[i].exclusive, NULL);
        pl = plan_near(&mysql, &t, &k, 1, NULL, "0");
        assert_nodes_said(&pl, claims[i].nodes, claims[i].note, claims[i].cpus);
        plan_free(&pl);
        claim_free(&k);
    }
    /* ... counted among its candidates: CPUs outside the inherited affinity do not count */
    struct claim k = live("redis", "2-3", "0", false, NULL);
    hwloc_bitmap_list_sscanf(t.binding, "0-1,4-11");
    pl = plan_near(&mysql, &t, &k, 1, NULL, "0");
    assert_nodes_said(&pl, "0", "node 0: the disk under /srv hangs off it", "affinity");
    plan_free(&pl);
    hwloc_bitmap_copy(t.binding, t.cpus);
    claim_free(&k);

    /* keeping apart comes first, and a note names who holds the disk's node */
    k = live("nginx", "0-3", "0", false, "mysql");
    pl = plan_near(&mysql, &t, &k, 1, NULL, "0");
    assert_nodes_said(&pl, "3", "near: node 0, which the disk hangs off, holds nginx", "apart");
    assert_false(hwloc_bitmap_intersects(pl.cpus, k.cpus));
    plan_free(&pl);
    claim_free(&k);

    /* a restart keeps its promise: back where it ran, though the disk is elsewhere */
    struct claim prev = live("mysql", "8-11", "3", false, "nginx");
    pl = plan_near(&mysql, &t, NULL, 0, &prev, "0");
    assert_nodes_said(&pl, "3", "where this service ran before it was restarted", "restart");
    assert_true(has_note(&pl, "near: it ran elsewhere before it was restarted"));
    plan_free(&pl);
    claim_free(&prev);

    /* the profile set otherwise, the disk on node 0 */
    static const struct {
        const char *set, *nodes, *note;
    } variants[] = {
        /* room to spare takes memory_size too */
        {"placement.memory_size=10G", "3",
         "near: node 0, which the disk hangs off, lacks room to spare"},
        /* nodes = 2: the closest pair (1, 3) leaves the disk's node 0 out, which is said */
        {"placement.nodes=2", "1,3",
         "near: the group of 2 leaves out node 0, the nearest to the disk under /srv: the "
         "closest group by the distance matrix comes first"},
        /* every node: near decides nothing */
        {"placement.nodes=all", "0-1,3",
         "near decides nothing: it takes every node that can host its CPUs"},
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        struct profile v = load_profile(
            "mysql", (const char *const[]){"placement.near=/srv", variants[i].set, NULL});
        pl = plan_near(&v, &t, NULL, 0, NULL, "0");
        assert_nodes_said(&pl, variants[i].nodes, variants[i].note, variants[i].set);
        plan_free(&pl);
        profile_free(&v);
    }

    /* another machine's topology: the disks of this one say nothing of it */
    pl = make_plan(&mysql, &t, NULL);
    assert_nodes_said(&pl, "3", "near /srv: not looked up, the topology is not this machine's",
                      "another machine");
    plan_free(&pl);
    profile_free(&mysql);

    /* without near in the profile, what was found is not even said */
    mysql = load_profile("mysql", (const char *const[]){"placement.near=", NULL});
    pl = plan_near(&mysql, &t, NULL, 0, NULL, "0");
    assert_int_equal(hwloc_bitmap_first(pl.nodes), 3);
    assert_false(has_note(&pl, "near"));
    plan_free(&pl);
    profile_free(&mysql);
    topo_free(&t);

    /* no distance matrix: 10 for its own node, 20 for others; md over both: alike */
    t = load_topo("synthetic:pack:2 numa:1 core:4 pu:1");
    mysql = load_profile("mysql", srv);
    pl = plan_near(&mysql, &t, NULL, 0, NULL, "1");
    assert_nodes_said(&pl, "1", "node 1: the disk under /srv hangs off it", "no matrix");
    plan_free(&pl);
    pl = plan_near(&mysql, &t, NULL, 0, NULL, "0-1");
    assert_nodes_said(&pl, "0",
                      "near decides nothing: every candidate node is as near the disk under /srv",
                      "alike");
    plan_free(&pl);
    /* as near, room decides nothing either: node 0, crowded but with twice the memory, still
     * wins on free memory as it would without near */
    t.nodes[0].mem_free = 2 * t.nodes[1].mem_free + 2 * GIB;
    k = live("redis", "0-2", "0", false, NULL);
    pl = plan_near(&mysql, &t, &k, 1, NULL, "0-1");
    assert_nodes_said(&pl, "0", "near decides nothing", "alike, crowded");
    plan_free(&pl);
    claim_free(&k);
    topo_free(&t);

    /* the bar for room is the roomiest node it may use: not one a service it avoids holds */
    t = load_topo("synthetic:pack:3 numa:1 core:4 pu:1");
    static const uint64_t gibs[3] = {100, 40, 60};
    for (size_t i = 0; i < 3; i++)
        t.nodes[i].mem_free = gibs[i] * GIB;
    k = live("nginx", "0-3", "0", false, "mysql");
    pl = plan_near(&mysql, &t, &k, 1, NULL, "1");
    assert_nodes_said(&pl, "1", "node 1: the disk under /srv hangs off it", "bar");
    plan_free(&pl);
    claim_free(&k);
    profile_free(&mysql);
    topo_free(&t);

    /* a group kept off the disk's node by a service it keeps apart from says so, not distance */
    t = shared_xml("28intel64-2p2g7c-CoDgroups.v1tov2.xml");
    mysql = load_profile("mysql",
                         (const char *const[]){"placement.near=/srv", "placement.nodes=2", NULL});
    k = live("nginx", "0-6", "0", false, "mysql");
    pl = plan_near(&mysql, &t, &k, 1, NULL, "0");
    assert_nodes_said(&pl, "2-3",
                      "near: the group of 2 leaves out node 0, the nearest to the disk under /srv: "
                      "a service it keeps apart from runs there",
                      "apart");
    plan_free(&pl);
    claim_free(&k);
    profile_free(&mysql);
    topo_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_profile_on_every_machine),
        cmocka_unit_test(test_root_equivalent_caps),
        cmocka_unit_test(test_synthetic_shapes_up_to_thousands_of_pus),
        cmocka_unit_test(test_mysql_on_two_socket_xeon),
        cmocka_unit_test(test_inherited_affinity_is_never_widened),
        cmocka_unit_test(test_fastest_cores_first),
        cmocka_unit_test(test_cpus_of_no_allowed_node),
        cmocka_unit_test(test_count_spread_over_nodes),
        cmocka_unit_test(test_words_true_of_odd_machines),
        cmocka_unit_test(test_split_core_last),
        cmocka_unit_test(test_memoryless_node_gets_nearest_memory),
        cmocka_unit_test(test_memory_auto_grows_near),
        cmocka_unit_test(test_memory_auto),
        cmocka_unit_test(test_derived_environment),
        cmocka_unit_test(test_blind_topology_warns),
        cmocka_unit_test(test_unknown_memory_warns),
        cmocka_unit_test(test_env_substitution),
        cmocka_unit_test(test_impossible_asks_are_degraded),
        cmocka_unit_test(test_thp_and_limit_steps),
        cmocka_unit_test(test_claims),
        cmocka_unit_test(test_counts_spread_over_held_cpus),
        cmocka_unit_test(test_pool_restart_note),
        cmocka_unit_test(test_restart_beside_pool),
        cmocka_unit_test(test_swap_policy),
        cmocka_unit_test(test_cpuset_step),
        cmocka_unit_test(test_tiers_policy),
        cmocka_unit_test(test_tiers_cpuset),
        cmocka_unit_test(test_shared_cpusets),
        cmocka_unit_test(test_weighted_interleave),
        cmocka_unit_test(test_reasons_fit_any_profile),
        cmocka_unit_test(test_one_is_singular),
        cmocka_unit_test(test_pool_keeps_a_slow_core),
        cmocka_unit_test(test_every_effect_a_step),
        cmocka_unit_test(test_group_of_nodes),
        cmocka_unit_test(test_one_node_holds_the_count),
        cmocka_unit_test(test_bind_without_a_size),
        cmocka_unit_test(test_no_node_placement),
        cmocka_unit_test(test_near_its_disk),
        cmocka_unit_test(test_args_from_the_plan),
        cmocka_unit_test(test_args_set_again),
    };
    return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
