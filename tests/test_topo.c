/* test_topo.c - hwloc -> struct topo on real machine exports (topo.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "topo.h"
#include "util.h"
#include "topologies.h"

static struct topo load(const char *name)
{
    struct topo t;
    struct err e;
    char path[512];
    if (strncmp(name, "synthetic:", 10) == 0 || strncmp(name, "tests/", 6) == 0 || *name == '/')
        snprintf(path, sizeof(path), "%s", name); /* or one of ours */
    else
        snprintf(path, sizeof(path), "%s/%s", topologies_dir(), name);
    if (!topo_load(&t, path, NULL, &e))
        fail_msg("%s: %s", path, e.msg);
    return t;
}

/* A copy of a shared XML in `tmp` (64 bytes) with its first `from` made `to` (as long). */
static void edited_xml(char *tmp, const char *name, const char *from, const char *to)
{
    char path[512], *xml;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", topologies_dir(), name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(read_fd_text(fileno(f), 16 << 20, &xml, &len), 0);
    fclose(f);
    char *at = strstr(xml, from);
    assert_non_null(at);
    assert_int_equal(strlen(from), strlen(to));
    memcpy(at, to, strlen(to));
    snprintf(tmp, 64, "/tmp/tunerun-xml-XXXXXX.xml");
    int fd = mkstemps(tmp, 4);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, xml, len), (ssize_t)len);
    close(fd);
    free(xml);
}

/* Why topo_load() refuses spec. */
static const char *refused(const char *spec)
{
    static struct err e;
    struct topo t;
    if (topo_load(&t, spec, NULL, &e)) {
        topo_free(&t);
        fail_msg("%s: loaded", spec);
    }
    return e.msg;
}

/*
 * What no machine Linux runs has, hwloc builds from a description or
 * imports as written: refused before it costs gigabytes, or plans a node
 * that is two.
 */
static void test_impossible_numbers(void **state)
{
    (void)state;
    assert_non_null(strstr(refused("synthetic:pu:2(indexes=9000,9001)"),
                           ": an index above 8191; Linux numbers CPUs and nodes below it"));
    assert_non_null(strstr(refused("synthetic:pu:1(indexes=2000000000)"), "an index above 8191"));
    assert_non_null(strstr(refused("synthetic:[numa(memory=1GB indexes=5000)] pu:2"),
                           ": a NUMA node numbered above 1023"));
    struct topo t = load("synthetic:pack:2 core:2(indexes=8191,8190) pu:1");
    topo_free(&t);
    char tmp[64];
    edited_xml(tmp, "16amd64-4distances.xml", "NUMANode\" os_index=\"1\"",
               "NUMANode\" os_index=\"0\"");
    assert_non_null(strstr(refused(tmp), ": two NUMA nodes numbered 0; not a consistent export"));
    unlink(tmp);
}

/* How many fds this process has open. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Whether fd 2 is still the file it was (st). */
static bool same_stderr(const struct stat *st)
{
    struct stat now;
    return fstat(STDERR_FILENO, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino;
}

/*
 * What loading spec wrote to fd 2 while the caller's HWLOC_XML_VERBOSE
 * was `verbose` (NULL: unset); *why, why it was refused, or NULL.
 */
static char *stderr_of_load(const char *spec, const char *verbose, const char **why)
{
    char path[] = "/tmp/tunerun-stderr-XXXXXX", *text;
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    size_t len;
    assert_true(fd >= 0 && saved >= 0);
    unlink(path);
    if (verbose)
        setenv("HWLOC_XML_VERBOSE", verbose, 1);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    static struct err e;
    struct topo t;
    bool ok = topo_load(&t, spec, NULL, &e);
    if (ok)
        topo_free(&t);
    *why = ok ? NULL : e.msg;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    if (verbose)
        assert_string_equal(getenv("HWLOC_XML_VERBOSE"), verbose);
    else
        assert_null(getenv("HWLOC_XML_VERBOSE"));
    unsetenv("HWLOC_XML_VERBOSE");
    lseek(fd, 0, SEEK_SET);
    assert_int_equal(read_fd_text(fd, 1 << 20, &text, &len), 0);
    close(fd);
    return text;
}

/*
 * An XML that hwloc refuses says hwloc's own reason, which hwloc prints
 * only to stderr (HWLOC_XML_VERBOSE): one line, without hwloc's
 * "xmlbuffer:" or its advice to enable libxml2; fd 2 and the environment
 * are as they were after, and no fd stays open.
 */
static void test_refused_xml(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *why;
    } cases[] = {
        {"tests/data/refused-v3.xml",
         "cannot import XML version 3.0 > 2 (fix: export it again with hwloc 3's lstopo "
         "--export-xml-flags v2 FILE.xml, the version hwloc 2 reads)"},
        {"tests/data/refused-truncated.xml",
         "Failed to parse XML input with the minimalistic parser"},
        {"tests/data/refused-empty.xml", "Failed to parse XML input with the minimalistic parser"},
    };
    struct stat err_st;
    assert_int_equal(fstat(STDERR_FILENO, &err_st), 0);
    unsetenv("HWLOC_XML_VERBOSE");
    int fds = open_fds();
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char want[512];
        snprintf(want, sizeof(want), "--topology %s: hwloc cannot load it: %s", cases[i].spec,
                 cases[i].why);
        assert_string_equal(refused(cases[i].spec), want);
        assert_true(same_stderr(&err_st));
        assert_null(getenv("HWLOC_XML_VERBOSE"));
        assert_int_equal(open_fds(), fds);
    }
    /* a caller's HWLOC_XML_VERBOSE: kept, and what hwloc says still reaches fd 2, all of it */
    const char *why;
    char *said = stderr_of_load("tests/data/refused-v3.xml", "1", &why);
    assert_string_equal(said, "xmlbuffer: cannot import XML version 3.0 > 2\n");
    assert_non_null(why);
    assert_non_null(strstr(why, ": hwloc cannot load it: cannot import XML version 3.0 > 2"));
    free(said);
    said = stderr_of_load("tests/data/refused-truncated.xml", "0", &why);
    assert_string_equal(said, "");
    assert_non_null(why);
    assert_non_null(strstr(why, ": Failed to parse XML input with the minimalistic parser"));
    free(said);
    /* what hwloc passes over in an export it loads is said only to a caller who asks */
    char tmp[64];
    edited_xml(tmp, "2intel64-1n2c-numaroot.v1tov2.xml", "type=\"Package\" os_index",
               "type=\"Package\" os_indey");
    said = stderr_of_load(tmp, NULL, &why);
    assert_null(why);
    assert_string_equal(said, "");
    free(said);
    said = stderr_of_load(tmp, "1", &why);
    assert_null(why);
    assert_non_null(strstr(said, "ignoring unknown object attribute os_indey"));
    free(said);
    unlink(tmp);
    assert_true(same_stderr(&err_st));
    assert_int_equal(open_fds(), fds);
}

static const struct topo_node *node(const struct topo *t, unsigned os)
{
    int i = topo_node_index(t, os);
    assert_true(i >= 0);
    return &t->nodes[i];
}

/* Every XML loads; every PU has exactly one home; homes hold only candidate CPUs. */
static void test_every_xml_is_consistent(void **state)
{
    (void)state;
    char **files = topology_files();
    for (char **f = files; *f; f++) {
        struct topo t;
        struct err e;
        if (!topo_load(&t, *f, NULL, &e))
            fail_msg("%s: %s", *f, e.msg);
        assert_true(t.nnodes >= 1);
        hwloc_bitmap_t seen = hwloc_bitmap_alloc();
        for (size_t i = 0; i < t.nnodes; i++) {
            assert_false(hwloc_bitmap_intersects(seen, t.nodes[i].cpus));
            assert_true(hwloc_bitmap_isincluded(t.nodes[i].cpus, t.cpus));
            hwloc_bitmap_or(seen, seen, t.nodes[i].cpus);
            if (i > 0)
                assert_true(t.nodes[i - 1].os_index < t.nodes[i].os_index);
        }
        /* A PU may lack a home only when its own node is disallowed (cpuset.mems). */
        if (!hwloc_bitmap_isequal(seen, t.cpus) && !strstr(*f, "cpusets"))
            fail_msg("%s: some allowed PU has no home node", *f);
        assert_false(hwloc_bitmap_intersects(t.cpus, t.offline));
        assert_true(hwloc_bitmap_isequal(t.binding, t.cpus));
        /* some exports carry odd matrices (8ia64: a node farther from itself); only check presence
         */
        for (size_t a = 0; t.distance && a < t.nnodes * t.nnodes; a++)
            assert_true(t.distance[a] > 0);
        hwloc_bitmap_free(seen);
        topo_free(&t);
    }
    topology_files_free(files);
}

static void test_two_socket_xeon(void **state)
{
    (void)state;
    struct topo t = load("32em64t-2n8c2t-pci-normalio.xml");
    assert_int_equal(t.nnodes, 2);
    assert_int_equal(hwloc_bitmap_weight(t.cpus), 32);
    assert_int_equal(t.ncores, 16);
    assert_int_equal(hwloc_bitmap_weight(node(&t, 0)->cpus), 16);
    assert_int_equal(hwloc_bitmap_weight(node(&t, 1)->cpus), 16);
    assert_true(node(&t, 0)->has_memory);
    topo_free(&t);
}

static void test_cpuless_node(void **state)
{
    (void)state;
    struct topo t = load("8ia64-2n2s2c+1n.v1tov2.xml");
    assert_int_equal(t.nnodes, 3);
    assert_true(hwloc_bitmap_iszero(node(&t, 16)->cpus));
    assert_true(node(&t, 16)->has_memory);
    assert_int_equal(hwloc_bitmap_weight(node(&t, 0)->cpus), 4);
    assert_non_null(t.distance);
    topo_free(&t);
}

/*
 * An XML with a second latency matrix (hwloc fills one, and says there are
 * two): the first, the kernel's, is used, not the user's that follows it.
 */
static void test_second_distance_matrix(void **state)
{
    (void)state;
    struct topo t = load("tests/data/cod-2matrices.xml");
    assert_non_null(t.distance);
    assert_int_equal(topo_distance(&t, 0, 1), 21);
    assert_int_equal(topo_distance(&t, 0, 2), 31);
    topo_free(&t);
}

static void test_knl_mcdram_is_never_a_cpu_home(void **state)
{
    (void)state;
    struct topo t = load("64intel64-fakeKNL-SNC4-hybrid.xml");
    assert_int_equal(t.nnodes, 8);
    for (unsigned os = 0; os < 4; os++) {
        assert_string_equal(node(&t, os)->subtype, "DRAM");
        assert_int_equal(hwloc_bitmap_weight(node(&t, os)->cpus), 16);
    }
    for (unsigned os = 4; os < 8; os++) {
        assert_string_equal(node(&t, os)->subtype, "MCDRAM");
        assert_true(hwloc_bitmap_iszero(node(&t, os)->cpus));
    }
    topo_free(&t);

    /* nor when the DRAM node of its CPUs is not allowed (cpuset.mems): they have no home */
    char tmp[64];
    edited_xml(tmp, "64intel64-fakeKNL-SNC4-hybrid.xml", "allowed_nodeset=\"0x000000ff\"",
               "allowed_nodeset=\"0x000000fe\"");
    t = load(tmp);
    unlink(tmp);
    assert_int_equal(topo_node_index(&t, 0), -1);
    for (unsigned os = 4; os < 8; os++)
        assert_true(hwloc_bitmap_iszero(node(&t, os)->cpus));
    hwloc_bitmap_t homeless = hwloc_bitmap_alloc();
    topo_nodeless(&t, t.cpus, homeless);
    assert_int_equal(hwloc_bitmap_weight(homeless), 16);
    hwloc_bitmap_free(homeless);
    topo_free(&t);
}

static void test_offline_and_disallowed(void **state)
{
    (void)state;
    struct topo t = load("16em64t-4s2c2t-offlines.xml");
    assert_int_equal(hwloc_bitmap_weight(t.cpus), 7);
    assert_false(hwloc_bitmap_iszero(t.offline));
    /* a single node whose memory the XML does not record still counts as memory */
    assert_false(t.memory_known);
    assert_true(t.nodes[0].has_memory);
    topo_free(&t);

    /* exported in a cpuset allowing CPUs 0-3,5-6,12-15 and nodes 1-5 only */
    t = load("16amd64-8n2c-cpusets.xml");
    assert_int_equal(hwloc_bitmap_weight(t.cpus), 10);
    assert_int_equal(t.nnodes, 5);
    assert_int_equal(topo_node_index(&t, 0), -1);
    assert_int_equal(hwloc_bitmap_weight(node(&t, 1)->cpus), 2);
    assert_true(hwloc_bitmap_iszero(node(&t, 4)->cpus));
    assert_true(hwloc_bitmap_iszero(node(&t, 5)->cpus));
    topo_free(&t);
}

static void test_synthetic(void **state)
{
    (void)state;
    struct topo t = load("synthetic:pack:2 numa:2 core:4 pu:2");
    assert_int_equal(t.nnodes, 4);
    assert_int_equal(hwloc_bitmap_weight(t.cpus), 32);
    assert_int_equal(t.ncores, 16);
    assert_true(t.memory_known);
    topo_free(&t);

    struct err e;
    assert_false(topo_load(&t, "synthetic:pack:banana", NULL, &e));
    assert_non_null(strstr(e.msg, "synthetic"));
    assert_false(topo_load(&t, "/nonexistent.xml", NULL, &e));
    assert_non_null(strstr(e.msg, "/nonexistent.xml"));
}

static void test_host_is_this_system(void **state)
{
    (void)state;
    struct topo t;
    struct err e;
    if (!topo_load(&t, NULL, NULL, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(t.source, TOPO_HOST);
    assert_true(hwloc_bitmap_weight(t.cpus) >= 1);
    assert_true(hwloc_bitmap_intersects(t.binding, t.cpus));
    /* our plugin blacklist never outlives the load */
    assert_null(getenv("HWLOC_PLUGINS_BLACKLIST"));
    topo_free(&t);

    setenv("HWLOC_PLUGINS_BLACKLIST", "mine", 1);
    if (!topo_load(&t, NULL, NULL, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(getenv("HWLOC_PLUGINS_BLACKLIST"), "mine");
    unsetenv("HWLOC_PLUGINS_BLACKLIST");
    topo_free(&t);

    /* an HWLOC_XMLFILE in the environment never makes tunerun describe another machine */
    char xml[512];
    snprintf(xml, sizeof(xml), "%s/32em64t-2n8c2t-pci-normalio.xml", topologies_dir());
    setenv("HWLOC_XMLFILE", xml, 1);
    if (!topo_load(&t, NULL, NULL, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(t.source, TOPO_HOST);
    assert_true(hwloc_bitmap_weight(t.cpus) < 32 || t.nnodes != 2);
    topo_free(&t);
    unsetenv("HWLOC_XMLFILE");

    /* a fake sysfs root is not this machine: refuse rather than mis-place */
    setenv("HWLOC_FSROOT", "/tmp", 1);
    assert_false(topo_load(&t, NULL, NULL, &e));
    unsetenv("HWLOC_FSROOT");
}

/*
 * tests/data/hybrid.xml with `from` replaced by `to` (twice: two pairs), in a
 * temporary file; loaded, then removed.
 */
static struct topo hybrid_variant(const char *from1, const char *to1, const char *from2,
                                  const char *to2)
{
    FILE *in = fopen("tests/data/hybrid.xml", "r");
    assert_non_null(in);
    static char xml[1 << 16];
    size_t n = fread(xml, 1, sizeof(xml) - 1, in);
    fclose(in);
    xml[n] = '\0';
    char path[] = "/tmp/tunerun-test-hybrid.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    const char *from[] = {from1, from2}, *to[] = {to1, to2};
    for (const char *p = xml; *p;) {
        size_t i = 0;
        while (i < 2 && (from[i] == NULL || strncmp(p, from[i], strlen(from[i])) != 0))
            i++;
        if (i < 2) {
            fputs(to[i], out);
            p += strlen(from[i]);
        } else {
            fputc(*p++, out);
        }
    }
    fclose(out);
    struct topo t;
    struct err e;
    if (!topo_load(&t, path, NULL, &e))
        fail_msg("%s", e.msg);
    unlink(path);
    return t;
}

static void assert_kind(const struct topo *t, size_t i, const char *label, const char *cpus)
{
    assert_true(i < t->nkinds);
    assert_string_equal(t->kinds[i].label, label);
    char *list = bitmap_list(t->kinds[i].cpus);
    assert_string_equal(list, cpus);
    free(list);
}

/* Kinds of core, fastest first as hwloc ranks them; none when it cannot rank them. */
static void test_cpu_kinds(void **state)
{
    (void)state;
    struct topo t = load("tests/data/hybrid.xml");
    assert_int_equal(t.nkinds, 2);
    assert_kind(&t, 0, "IntelCore", "8-23");
    assert_kind(&t, 1, "IntelAtom", "0-7");
    topo_free(&t);

    t = load("tests/data/hybrid-unranked.xml");
    assert_int_equal(t.nkinds, 0);
    topo_free(&t);

    /* a process allowed only some CPUs sees only their kinds; one kind left is none */
    const char *all = "allowed_cpuset=\"0x00ffffff\"";
    t = hybrid_variant(all, "allowed_cpuset=\"0x00000fff\"", NULL, NULL);
    assert_int_equal(t.nkinds, 2);
    assert_kind(&t, 0, "IntelCore", "8-11");
    assert_kind(&t, 1, "IntelAtom", "0-7");
    topo_free(&t);
    t = hybrid_variant(all, "allowed_cpuset=\"0x000000ff\"", NULL, NULL);
    assert_int_equal(t.nkinds, 0);
    topo_free(&t);

    /* nothing to tell them apart by but their rank: named by it */
    t = hybrid_variant("<info name=\"CoreType\" value=\"IntelAtom\"/>", "",
                       "<info name=\"CoreType\" value=\"IntelCore\"/>", "");
    assert_int_equal(t.nkinds, 2);
    assert_kind(&t, 0, "kind1", "8-23");
    assert_kind(&t, 1, "kind2", "0-7");
    topo_free(&t);

    /* capacities a tenth or more apart are kinds; closer ones are alike (NVIDIA Grace) */
    const char *atom = "name=\"CoreType\" value=\"IntelAtom\"",
               *core = "name=\"CoreType\" value=\"IntelCore\"";
    t = hybrid_variant(atom, "name=\"LinuxCapacity\" value=\"600\"", core,
                       "name=\"LinuxCapacity\" value=\"1024\"");
    assert_int_equal(t.nkinds, 2);
    assert_kind(&t, 0, "capacity=1024", "8-23");
    assert_kind(&t, 1, "capacity=600", "0-7");
    topo_free(&t);
    t = hybrid_variant(atom, "name=\"LinuxCapacity\" value=\"1007\"", core,
                       "name=\"LinuxCapacity\" value=\"1024\"");
    assert_int_equal(t.nkinds, 0);
    topo_free(&t);

    /* kinds that leave some CPUs out are not trusted to rank them all */
    t = hybrid_variant("cpukind cpuset=\"0x00ffff00\"", "cpukind cpuset=\"0x0000ff00\"", NULL,
                       NULL);
    assert_int_equal(t.nkinds, 0);
    topo_free(&t);

    /* the cache keeps them */
    const char *text = "complete 0-7\nonline 0-7\nnode 0 1 0-7 -\ncore 0-1\ncore 2-7\n"
                       "kind 4-7 IntelCore\nkind 0-3 kind2\n";
    struct err e;
    assert_true(topo_parse_cache(&t, text, &e));
    assert_int_equal(t.nkinds, 2);
    assert_kind(&t, 0, "IntelCore", "4-7");
    assert_kind(&t, 1, "kind2", "0-3");
    topo_free(&t);
}

/* The cache's own lines: what a warm launch reads, and what it must refuse. */
static void test_cache_lines(void **state)
{
    (void)state;
    struct topo t;
    struct err e;
    const char *good = "complete 0-9\nonline 0-7\n"
                       "node 0 8589934592 0-3 -\nnode 1 8589934592 4-7 DRAM\nnode 2 0 0-3 HBM\n"
                       "core 0,4\ncore 1\ncore 2-3\ncore 5-7\n"
                       "distances 10 21 13 21 10 31 13 31 10\n";
    assert_true(topo_parse_cache(&t, good, &e));
    assert_int_equal(t.nnodes, 3);
    assert_int_equal(hwloc_bitmap_weight(t.cpus), 8);
    assert_int_equal(hwloc_bitmap_weight(t.offline), 2); /* 8 and 9 exist, not online */
    /* the HBM node covers 0-3 too, but DRAM is their home; it is CPU-less */
    assert_int_equal(hwloc_bitmap_weight(t.nodes[0].cpus), 4);
    assert_true(hwloc_bitmap_iszero(t.nodes[2].cpus));
    assert_int_equal(topo_distance(&t, 0, 2), 13);
    assert_int_equal(t.ncores, 4);
    topo_free(&t);

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "ends before"},
        {"complete 0-3\nonline 0-3\n", "ends before"},
        {"online 0-3\ncomplete 0-3\nnode 0 1 0-3 -\n", "line 1 "}, /* complete comes first */
        {"complete 0-3\nonline 0-7\nnode 0 1 0-3 -\n", "line 2 "}, /* online beyond it */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\nnode 0 1 0-3 -\n", "line 4 "},
        {"complete 0-3\nonline 0-3\nnode 1024 1 0-3 -\n", "line 3 "}, /* beyond MAX_NUMNODES */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\ncore 0-1\ncore 1-2\n", "line 5 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\ncore 1048576\n", "line 4 "},
        {"complete 0-8192\nonline 0\nnode 0 1 0 -\n", "line 1 "}, /* beyond NR_CPUS */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-1 -\nnode 1 1 2-3 -\ndistances 10 20 20\n",
         "line 5 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\ndistances 10\n", "line 4 "}, /* one node */
        {"complete 0-3\nonline -3\nnode 0 1 0-3 -\n", "line 2 "}, /* hwloc 2.9 hangs on it */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 - extra\n", "line 3 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\nkind 0-1 a\nkind 1-3 b\n", "line 5 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\nkind 0-1 a\nkind 2-4 b\n", "line 5 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\nkind 0-1\n", "line 4 "}, /* no label */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\nkind 0-1 "
         "a-label-of-thirty-two-characters\nkind 2-3 b\n",
         "line 4 "},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\ncore 0-3\nkind 0-3 a\n", "one kind line"},
        /* what cache_format() never writes, so that the machine is discovered again */
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\ncore 0-3\nkind 0-1 a\nkind 2-3 a\n", "line 6 "},
        {"complete 0-3\nonline none\nnode 0 1 0-3 -\ncore 0-3\n", "no CPU online"},
        {"complete 0-3\nonline 0-3\nnode 0 1 0-3 -\n", "no core line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (topo_parse_cache(&t, bad[i].text, &e)) {
            print_error("accepted: %s\n", bad[i].text);
            fail();
        }
        if (strstr(e.msg, bad[i].why) == NULL) {
            print_error("%s: said %s\n", bad[i].text, e.msg);
            fail();
        }
    }
}

/* What a cache keeps of a machine is what was found: CPUs, cores, nodes, kinds, distances. */
static void assert_same_machine(const struct topo *found, const struct topo *cached,
                                const char *label)
{
    print_message("%s\n", label);
    assert_true(hwloc_bitmap_isequal(found->cpus, cached->cpus));
    assert_true(hwloc_bitmap_isequal(found->offline, cached->offline));
    assert_true(hwloc_bitmap_isequal(found->binding, cached->binding));
    assert_int_equal(found->ncores, cached->ncores);
    for (size_t i = 0; i < found->ncores; i++)
        assert_true(hwloc_bitmap_isequal(found->cores[i], cached->cores[i]));
    assert_int_equal(found->nnodes, cached->nnodes);
    for (size_t i = 0; i < found->nnodes; i++) {
        assert_int_equal(found->nodes[i].os_index, cached->nodes[i].os_index);
        assert_true(hwloc_bitmap_isequal(found->nodes[i].cpus, cached->nodes[i].cpus));
        assert_int_equal(found->nodes[i].mem_total, cached->nodes[i].mem_total);
        assert_int_equal(found->nodes[i].has_memory, cached->nodes[i].has_memory);
        assert_string_equal(found->nodes[i].subtype, cached->nodes[i].subtype);
        assert_int_equal(found->nodes[i].tier_known, cached->nodes[i].tier_known);
        assert_int_equal(found->nodes[i].tier, cached->nodes[i].tier);
        assert_int_equal(found->nodes[i].tier_hwloc, cached->nodes[i].tier_hwloc);
        assert_int_equal(found->nodes[i].latency_ns, cached->nodes[i].latency_ns);
        assert_int_equal(found->nodes[i].bandwidth_mibs, cached->nodes[i].bandwidth_mibs);
        assert_int_equal(found->nodes[i].speed, cached->nodes[i].speed);
    }
    assert_int_equal(found->nkinds, cached->nkinds);
    for (size_t i = 0; i < found->nkinds; i++) {
        assert_true(hwloc_bitmap_isequal(found->kinds[i].cpus, cached->kinds[i].cpus));
        assert_string_equal(found->kinds[i].label, cached->kinds[i].label);
    }
    assert_int_equal(found->distance == NULL, cached->distance == NULL);
    if (found->distance)
        assert_memory_equal(found->distance, cached->distance,
                            found->nnodes * found->nnodes * sizeof(*found->distance));
}

/*
 * Each node's speed against the memory next to the CPUs: by HMAT's
 * latency in an export that has it (a slow CPU-less node, and a
 * memoryless one that is neither), by kind on KNL (its MCDRAM has the
 * bandwidth), and by hwloc's MemoryTier or kind alone nowhere else.
 */
static void test_tiers(void **state)
{
    (void)state;
    struct topo t;
    struct err e;
    if (!topo_load(&t, "tests/data/tiers.xml", NULL, &e))
        fail_msg("%s", e.msg);
    assert_true(t.tiers_known);
    assert_int_equal(t.nnodes, 4);
    assert_int_equal(t.nodes[0].speed, SPEED_FAST);
    assert_int_equal(t.nodes[0].latency_ns, 10);
    assert_int_equal(t.nodes[0].bandwidth_mibs, 10240);
    assert_int_equal(t.nodes[1].speed, SPEED_FAST);
    assert_int_equal(t.nodes[2].speed, SPEED_FAST); /* no memory: nothing to judge */
    assert_false(t.nodes[2].has_memory);
    assert_int_equal(t.nodes[3].speed, SPEED_SLOW);
    assert_string_equal(t.nodes[3].speed_why, "latency 40 ns against 10");
    assert_false(t.nodes[3].tier_known);
    assert_true(t.nodes[3].shares);
    assert_int_equal(t.nodes[3].shares_cpus_of, 0);
    topo_free(&t);

    char path[4096];
    snprintf(path, sizeof(path), "%s/64intel64-fakeKNL-SNC4-hybrid.xml", topologies_dir());
    if (!topo_load(&t, path, NULL, &e))
        fail_msg("%s", e.msg);
    for (size_t i = 0; i < t.nnodes; i++) {
        bool mcdram = strcmp(t.nodes[i].subtype, "MCDRAM") == 0;
        assert_int_equal(t.nodes[i].speed, mcdram ? SPEED_BANDWIDTH : SPEED_FAST);
        assert_int_equal(t.nodes[i].tier, mcdram ? 0 : 1); /* hwloc's, by bandwidth */
        assert_true(t.nodes[i].tier_hwloc);
        assert_int_equal(t.nodes[i].bandwidth_mibs, mcdram ? 90000 : 22500);
    }
    topo_free(&t);

    /* a plain two-node machine: every node alike, and nothing known to say so */
    snprintf(path, sizeof(path), "%s/32em64t-2n8c2t-pci-normalio.xml", topologies_dir());
    if (!topo_load(&t, path, NULL, &e))
        fail_msg("%s", e.msg);
    assert_false(t.tiers_known);
    for (size_t i = 0; i < t.nnodes; i++)
        assert_int_equal(t.nodes[i].speed, SPEED_FAST);
    topo_free(&t);

    /* the kernel's tiers, as a host's cache carries them: numbered by speed, 4 for DRAM */
    if (!topo_parse_cache(&t,
                          "complete 0-3\nonline 0-3\nnode 0 1073741824 0-1 -\n"
                          "node 1 1073741824 2-3 -\nnode 2 4294967296 none -\ntier 0 4 0 0\n"
                          "tier 1 4 0 0\ntier 2 22 0 0\ncore 0\ncore 1\ncore 2\ncore 3\n",
                          &e))
        fail_msg("%s", e.msg);
    assert_int_equal(t.nodes[0].speed, SPEED_FAST);
    assert_int_equal(t.nodes[2].speed, SPEED_SLOW);
    assert_string_equal(t.nodes[2].speed_why, "memory_tier22");
    assert_false(t.nodes[2].tier_hwloc);
    topo_free(&t);
    /* a tier line for a node no node line named, or with a bad value, is not tunerun's */
    assert_false(
        topo_parse_cache(&t, "complete 0\nonline 0\nnode 0 1024 0 -\ntier 1 4 0 0\ncore 0\n", &e));
    assert_false(
        topo_parse_cache(&t, "complete 0\nonline 0\nnode 0 1024 0 -\ntier 0 x 0 0\ncore 0\n", &e));
}

/*
 * The writer and the reader of the cache agree on every machine there is
 * an export of, hybrid ones (kinds of core) and those with distances too:
 * the host's own round trip (test_host_cache) has one kind and one node.
 * Exports made in a cpuset say what was allowed, which a cache never
 * holds: those are compared as the host writes them, everything allowed.
 */
static void test_cache_round_trip(void **state)
{
    (void)state;
    char **files = topology_files();
    const char *ours[] = {"tests/data/hybrid.xml",          "tests/data/hybrid-2nodes.xml",
                          "tests/data/hybrid-unranked.xml", "tests/data/cpuset-mismatch.xml",
                          "tests/data/uneven-cores.xml",    "synthetic:pack:2 numa:2 core:4 pu:2"};
    size_t n = 0;
    while (files[n])
        n++;
    for (size_t i = 0; i < n + sizeof(ours) / sizeof(ours[0]); i++) {
        const char *spec = i < n ? files[i] : ours[i - n];
        struct err e;
        char *text = topo_cache_text(spec, &e);
        if (text == NULL)
            fail_msg("%s: %s", spec, e.msg);
        struct topo found, cached;
        if (!topo_parse_cache(&cached, text, &e))
            fail_msg("%s: the cache it would write does not read back: %s\n%s", spec, e.msg, text);
        if (!topo_load(&found, spec, NULL, &e))
            fail_msg("%s: %s", spec, e.msg);
        if (hwloc_bitmap_isequal(found.cpus, cached.cpus) && found.nnodes == cached.nnodes)
            assert_same_machine(&found, &cached, spec);
        else /* allowed sets of the export's own: the kinds and cores still agree */
            assert_int_equal(found.nkinds, cached.nkinds);
        free(text);
        topo_free(&found);
        topo_free(&cached);
    }
    topology_files_free(files);
}

static void test_host_cache(void **state)
{
    (void)state;
    char dir[] = "/tmp/tunerun-test-state.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct state_dir sd;
    struct err e;
    assert_int_equal(state_dir_open(&sd, dir, true, &e), STATE_OK);

    struct topo found, cached;
    if (!topo_load(&found, NULL, &sd, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(found.cache, TOPO_CACHE_WRITTEN);
    if (!topo_load(&cached, NULL, &sd, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(cached.cache, TOPO_CACHE_HIT);

    assert_same_machine(&found, &cached, "this machine");
    topo_free(&found);
    topo_free(&cached);

    /* a warm cache never makes a fake sysfs root pass for this machine */
    setenv("HWLOC_FSROOT", "/tmp", 1);
    setenv("HWLOC_THISSYSTEM", "1", 1);
    assert_false(topo_load(&found, NULL, &sd, &e));
    assert_non_null(strstr(e.msg, "HWLOC_FSROOT=/tmp"));
    unsetenv("HWLOC_FSROOT");
    unsetenv("HWLOC_THISSYSTEM");

    char path[256];
    snprintf(path, sizeof(path), "%s/topology.cache", dir);
    unlink(path);
    state_dir_close(&sd);
    rmdir(dir);
}

/*
 * Memory a kernel initializes lazily: the nodes' meminfo falls short of
 * the machine's total, and the rest goes to them by what their zones hold
 * and do not manage yet, less the kernel's own reservations.
 */
static void test_uninitialized_memory(void **state)
{
    (void)state;
    const uint64_t gib = 1ULL << 30, page = 4096;
    /*
     * zoneinfo as Linux 6.x prints it, trimmed: node 0's zones hold 4 GiB
     * and manage 1.5, node 2's hold 2 and manage 1; node 5 is not this
     * topology's
     */
    const char *zoneinfo = "Node 0, zone      DMA\n  per-node stats\n      nr_free_pages 3840\n"
                           "  pages free     3840\n        boost    0\n        spanned  4095\n"
                           "        present  0\n        managed  0\n"
                           "        protection: (0, 2911, 23969, 23969, 23969)\n"
                           "Node 0, zone   Normal\n  pages free     100\n        spanned  1048576\n"
                           "        present  1048576\n        managed  393216\n"
                           "  pagesets\n    cpu: 0\n              count: 12\n              high:  "
                           "  378\n              batch: 63\n  vm stats threshold: 24\n"
                           "  node_unreclaimable:  0\n  start_pfn:           4096\n"
                           "Node 2, zone   Normal\n        present  524288\n"
                           "        managed  262144\n"
                           "Node 5, zone   Normal\n        present  99999999\n        managed  0\n";
    struct topo t = load("synthetic:pack:2 numa:1 core:2 pu:1");
    assert_int_equal(t.nnodes, 2);
    t.nodes[1].os_index = 2; /* node numbers need not be indexes */
    t.nodes[0].mem_total = 3 * gib / 2, t.nodes[0].mem_free = gib;
    t.nodes[1].mem_total = gib, t.nodes[1].mem_free = gib / 4;
    /* within 1% of the machine's: as counted */
    assert_false(topo_add_uninitialized(&t, 5 * gib / 2 + gib / 200, zoneinfo, page));
    assert_null(t.memory_note);
    /* without zoneinfo there is nothing to go by */
    assert_false(topo_add_uninitialized(&t, 11 * gib / 2, NULL, page));
    assert_null(t.memory_note);
    /*
     * nodes that count nothing (their sizes unknown): none is made up, so a
     * plan's warning that no size is known never meets this note
     */
    t.nodes[0].mem_total = t.nodes[1].mem_total = 0;
    assert_false(topo_add_uninitialized(&t, 11 * gib / 2, zoneinfo, page));
    assert_null(t.memory_note);
    assert_true(t.nodes[0].mem_total == 0 && t.nodes[1].mem_total == 0);
    t.nodes[0].mem_total = 3 * gib / 2, t.nodes[1].mem_total = gib;
    /*
     * 3 GiB short; the gaps hold 3.5 GiB (2.5 and 1): 0.5 GiB kept for
     * good, spread by present pages (4 GiB and 2) as 1/3 and 1/6 GiB,
     * leaves 2 1/6 and 5/6 GiB to come, which the shortfall takes
     */
    assert_true(topo_add_uninitialized(&t, 11 * gib / 2, zoneinfo, page));
    uint64_t got0 = t.nodes[0].mem_total - 3 * gib / 2, got1 = t.nodes[1].mem_total - gib;
    assert_true(got0 > 13 * gib / 6 - 16 && got0 <= 13 * gib / 6 + 16);
    assert_true(got1 > 5 * gib / 6 - 16 && got1 <= 5 * gib / 6 + 16);
    assert_true(got0 + got1 <= 3 * gib && got0 + got1 > 3 * gib - 16);
    /* initialized, it is free memory */
    assert_true(t.nodes[0].mem_free - gib == got0 && t.nodes[1].mem_free - gib / 4 == got1);
    assert_non_null(t.memory_note);
    assert_non_null(strstr(t.memory_note, "counts 2.5 GiB of the 5.5 GiB this machine has"));
    topo_free(&t);

    /* a node never takes more than its gap: a shortfall beyond the gaps stays short */
    t = load("synthetic:pack:2 numa:1 core:2 pu:1");
    t.nodes[1].os_index = 2;
    t.nodes[0].mem_total = 3 * gib / 2, t.nodes[1].mem_total = gib;
    assert_true(topo_add_uninitialized(&t, 8 * gib, zoneinfo, page));
    assert_true(t.nodes[0].mem_total == 3 * gib / 2 + 5 * gib / 2);
    assert_true(t.nodes[1].mem_total == gib + gib);
    topo_free(&t);

    /* this machine's, a 24 GiB Firecracker guest with deferred_init=lazy (tests/data) */
    char *text = NULL;
    size_t len;
    FILE *f = fopen("tests/data/zoneinfo-lazy-init.txt", "r");
    assert_non_null(f);
    int fd = fileno(f);
    assert_int_equal(read_fd_text(fd, 1 << 20, &text, &len), 0);
    fclose(f);
    t = load("synthetic:pack:1 numa:1 core:2 pu:1");
    t.nodes[0].mem_total = 16213792ULL << 10, t.nodes[0].mem_free = 15853188ULL << 10;
    assert_true(topo_add_uninitialized(&t, 24683620ULL << 10, text, page));
    assert_true(t.nodes[0].mem_total == 24683620ULL << 10); /* its gap covers the shortfall */
    assert_true(t.nodes[0].mem_free == (15853188ULL << 10) + ((24683620ULL - 16213792) << 10));
    topo_free(&t);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_xml_is_consistent),
        cmocka_unit_test(test_two_socket_xeon),
        cmocka_unit_test(test_cpuless_node),
        cmocka_unit_test(test_second_distance_matrix),
        cmocka_unit_test(test_knl_mcdram_is_never_a_cpu_home),
        cmocka_unit_test(test_impossible_numbers),
        cmocka_unit_test(test_refused_xml),
        cmocka_unit_test(test_offline_and_disallowed),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_host_is_this_system),
        cmocka_unit_test(test_cpu_kinds),
        cmocka_unit_test(test_cache_lines),
        cmocka_unit_test(test_cache_round_trip),
        cmocka_unit_test(test_tiers),
        cmocka_unit_test(test_host_cache),
        cmocka_unit_test(test_uninitialized_memory),
    };
    return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
