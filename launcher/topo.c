/*
 * topo.c - hwloc -> struct topo, loaded fast.
 *
 * A fresh hwloc topology costs about 4.5 ms with Debian's defaults, nearly
 * all of it dlopen()ing plugins we never use (PCI, OpenCL, GL, libxml2).
 * We blacklist those before hwloc_topology_init(), keep only the object
 * types the planner reads, and put the environment back as it was before
 * returning, so no HWLOC_* of ours reaches the service.
 *
 * Which CPUs belong to which node: hwloc gives a CPU-less node (MCDRAM,
 * CXL, PMEM) the cpuset of the CPUs near it, so a PU can sit under several
 * nodes. Each PU gets exactly one home: the covering node with the smallest
 * cpuset, preferring ordinary DRAM, then the lowest os index. The cpusets
 * compared are the machine's, not those cut down to this process's cgroup,
 * so a PU's home does not depend on who launches. A node that is home to no
 * PU is CPU-less and never a CPU home for the planner.
 *
 * The topology cache. Even filtered, discovering this machine reads a few
 * files per CPU from sysfs (hwloc 2.9 reads every CPU's caches whatever the
 * filters say) and parses /proc/cpuinfo: about half a millisecond on two
 * CPUs, tens on hundreds. So the host is discovered once, and what the
 * planner reads of it (PUs, nodes with their CPUs and sizes, cores, the
 * kinds of core, the distance matrix) is written to topology.cache in the
 * state directory, in lines of tunerun's own that hwloc's list parser
 * reads back: no hwloc topology is built at all on a warm launch. The
 * file starts with a key made of what can change the machine under a
 * running kernel (boot id, online and possible CPUs, online nodes and
 * which have CPUs or memory) and of the tunerun and libhwloc files
 * themselves: any difference and the machine is discovered again. What
 * differs per process is never cached:
 * tunerun reads this process's allowed CPUs and nodes (its cgroup cpuset,
 * as hwloc would) and its affinity afresh, and libnuma every node's
 * memory. Any HWLOC_* variable of the caller's own turns the cache off,
 * since it may change what hwloc finds.
 */
#include "topo.h"
#include "cgroup.h"
#include "procs.h"
#include "state.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <fcntl.h>
#include <hwloc.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/*
 * What tunerun sets in its own environment for the load, and puts back
 * afterwards. No plugin is needed: blacklisting them saves the dlopen()s,
 * and pointing the plugin path nowhere saves scanning the directory. The
 * x86 backend only adds CPUID details: the kinds of core on a hybrid
 * machine, which the planner does read, the Linux backend finds in sysfs
 * (each CPU's capacity, else its base frequency). Not its maximum
 * frequency: where base_frequency is missing (AMD, intel_pstate without
 * HWP), hwloc makes a kind of each distinct maximum, and "favoured" cores
 * differ in nothing else (hwloc issue #690).
 */
static const struct {
    const char *name, *value;
} load_env[] = {
    {"HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml"},
    {"HWLOC_PLUGINS_PATH", "/nonexistent/tunerun-needs-no-hwloc-plugins"},
    {"HWLOC_COMPONENTS", "-x86"},
    {"HWLOC_CPUKINDS_MAXFREQ", "0"},
};
#define NLOAD_ENV (sizeof(load_env) / sizeof(load_env[0]))

int topo_node_index(const struct topo *t, unsigned os_index)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].os_index == os_index)
            return (int)i;
    return -1;
}

void topo_nodeless(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
    hwloc_bitmap_zero(out);
    if (t->nnodes == 0)
        return; /* no NUMA information at all: no node is missing */
    hwloc_bitmap_copy(out, set);
    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_andnot(out, out, t->nodes[i].cpus);
}

void topo_nodes_of(const struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (hwloc_bitmap_intersects(t->nodes[i].cpus, set))
            hwloc_bitmap_set(out, t->nodes[i].os_index);
}

unsigned topo_distance(const struct topo *t, size_t a, size_t b)
{
    if (t->distance)
        return t->distance[a * t->nnodes + b];
    return a == b ? 10 : 20;
}

/*
 * The machine as a source describes it, before this process's cgroup and
 * affinity narrow it down: what the topology cache keeps. Nodes and cores
 * are in the source's order, each with its whole cpuset.
 */
struct mnode {
    unsigned os_index;
    hwloc_bitmap_t cpus; /* the PUs it is local to, CPU-less nodes included */
    uint64_t memory;     /* bytes; 0 when the source gives none */
    char subtype[16];
};

struct mkind {
    hwloc_bitmap_t cpus;
    char label[32];
};

#define MAX_NODES 1024 /* Linux's MAX_NUMNODES (NODES_SHIFT 10) */

struct machine {
    hwloc_bitmap_t online;   /* PUs that are online */
    hwloc_bitmap_t complete; /* every PU that exists */
    struct mnode *nodes;
    size_t nnodes;
    hwloc_bitmap_t *cores;
    size_t ncores;
    uint64_t *distance;  /* nnodes x nnodes relative latencies, 0 where unknown; or NULL */
    struct mkind *kinds; /* kinds of core, fastest first; none unless two or more are ranked */
    size_t nkinds;
    /* what this process may use; NULL (for the host, until read) means everything */
    hwloc_bitmap_t allowed_cpus, allowed_nodes;
};

static void machine_free(struct machine *m)
{
    for (size_t i = 0; i < m->nnodes; i++)
        hwloc_bitmap_free(m->nodes[i].cpus);
    for (size_t i = 0; i < m->ncores; i++)
        hwloc_bitmap_free(m->cores[i]);
    for (size_t i = 0; i < m->nkinds; i++)
        hwloc_bitmap_free(m->kinds[i].cpus);
    free(m->nodes);
    free(m->cores);
    free(m->kinds);
    free(m->distance);
    hwloc_bitmap_free(m->online);
    hwloc_bitmap_free(m->complete);
    hwloc_bitmap_free(m->allowed_cpus);
    hwloc_bitmap_free(m->allowed_nodes);
    memset(m, 0, sizeof(*m));
}

static const char *info_value(const struct hwloc_info_s *infos, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(infos[i].name, name) == 0)
            return infos[i].value;
    return NULL;
}

/* What tells a kind apart, in one word (the cache keeps it so): "IntelCore", "capacity=1024". */
static void kind_label(const struct hwloc_info_s *infos, unsigned n, char *buf, size_t size)
{
    static const struct {
        const char *info, *fmt;
    } ways[] = {
        {"CoreType", "%s"},
        {"LinuxCapacity", "capacity=%s"},
        {"FrequencyBaseMHz", "base=%sMHz"},
        {"FrequencyMaxMHz", "max=%sMHz"},
    };
    *buf = '\0';
    for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]) && *buf == '\0'; i++) {
        const char *v = info_value(infos, n, ways[i].info);
        if (v && *v)
            snprintf(buf, size, ways[i].fmt, v);
    }
    for (char *c = buf; *c; c++)
        if (!isgraph((unsigned char)*c))
            *c = '_';
}

/* A kind's capacity, else its base frequency (MHz): what it is ranked by; 0 when unknown. */
static long kind_measure(const struct hwloc_info_s *infos, unsigned n, bool capacity)
{
    const char *v = info_value(infos, n, capacity ? "LinuxCapacity" : "FrequencyBaseMHz");
    return v ? atol(v) : 0;
}

/*
 * The kinds of core, fastest first, as hwloc ranks them: by what the OS
 * says (Linux's cpu_capacity), else by core type and frequency. They are
 * left out, as if every core were alike, when hwloc cannot rank them
 * (efficiency -1) or when they do not cover every CPU. A kind within a
 * tenth of the faster one before it, by capacity or base frequency, joins
 * that one: hwloc makes a kind of every distinct value, and NVIDIA Grace's
 * identical cores report capacities 2% apart (hwloc issue #634).
 */
static void kinds_from_hwloc(hwloc_topology_t topo, struct machine *m)
{
    int n = hwloc_cpukinds_get_nr(topo, 0);
    if (n < 2)
        return; /* no kinds, or one: every core alike */
    struct mkind *k = xcalloc((size_t)n, sizeof(*k));
    long *cap = xcalloc((size_t)n, sizeof(*cap)), *base = xcalloc((size_t)n, sizeof(*base));
    hwloc_bitmap_t all = hwloc_bitmap_alloc();
    bool alike = false, caps = true, bases = true;
    size_t got = 0;
    /* hwloc lists them by rank: the lowest performance (the most energy-efficient) first */
    for (int i = n - 1; i >= 0 && !alike; i--) {
        int efficiency;
        unsigned ninfos = 0;
        struct hwloc_info_s *infos = NULL;
        k[got].cpus = hwloc_bitmap_alloc();
        alike = hwloc_cpukinds_get_info(topo, (unsigned)i, k[got].cpus, &efficiency, &ninfos,
                                        &infos, 0) < 0 ||
                efficiency < 0;
        kind_label(infos, ninfos, k[got].label, sizeof(k[got].label));
        cap[got] = kind_measure(infos, ninfos, true);
        base[got] = kind_measure(infos, ninfos, false);
        caps &= cap[got] > 0;
        bases &= base[got] > 0;
        hwloc_bitmap_or(all, all, k[got].cpus);
        got++;
    }
    /* a kind within a tenth of the one before it joins it */
    long *by = caps ? cap : bases ? base : NULL;
    for (size_t i = 1; by && i < got && !alike;) {
        if (by[i - 1] * 10 < by[i] * 11) {
            hwloc_bitmap_or(k[i - 1].cpus, k[i - 1].cpus, k[i].cpus);
            hwloc_bitmap_free(k[i].cpus);
            memmove(&k[i], &k[i + 1], (got - i - 1) * sizeof(*k));
            memmove(&by[i], &by[i + 1], (got - i - 1) * sizeof(*by));
            got--;
        } else {
            i++;
        }
    }
    if (!alike &&
        (got < 2 || !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo), all)))
        alike = true;
    /* a label tells a kind apart, or it is "kind1" (the fastest), "kind2"... */
    for (size_t i = 0; i < got; i++) {
        bool same = k[i].label[0] == '\0';
        for (size_t j = 0; j < got && !same; j++)
            same = j != i && strcmp(k[i].label, k[j].label) == 0;
        if (same)
            snprintf(k[i].label, sizeof(k[i].label), "kind%zu", i + 1);
    }
    free(cap);
    free(base);
    hwloc_bitmap_free(all);
    if (alike) {
        for (size_t i = 0; i < got; i++)
            hwloc_bitmap_free(k[i].cpus);
        free(k);
        return;
    }
    m->kinds = k;
    m->nkinds = got;
}

/* What the planner needs from an hwloc topology, which can then go. */
static void machine_from_hwloc(hwloc_topology_t topo, struct machine *m, bool allowed)
{
    memset(m, 0, sizeof(*m));
    m->online = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(topo));
    m->complete = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(topo));
    if (allowed) {
        m->allowed_cpus = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
        m->allowed_nodes = hwloc_bitmap_dup(hwloc_topology_get_allowed_nodeset(topo));
    }
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    m->nodes = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*m->nodes));
    hwloc_obj_t *objs = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*objs));
    for (int j = 0; j < n; j++) {
        hwloc_obj_t o = objs[j] = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)j);
        struct mnode *nd = &m->nodes[m->nnodes++];
        nd->os_index = o->os_index;
        nd->cpus = hwloc_bitmap_dup(o->cpuset);
        nd->memory = o->attr->numanode.local_memory;
        if (o->subtype)
            snprintf(nd->subtype, sizeof(nd->subtype), "%s", o->subtype);
    }
    n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    m->cores = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*m->cores));
    for (int i = 0; i < n; i++)
        m->cores[m->ncores++] =
            hwloc_bitmap_dup(hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i)->cpuset);

    /*
     * Distances between the nodes, when the source has a NUMA latency
     * matrix: the first that covers every node (the kernel's; an XML may
     * carry others). hwloc fills at most nr and says how many there are.
     */
    struct hwloc_distances_s *ds[4];
    unsigned nr = 4;
    if (m->nnodes > 1 && hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, ds,
                                                     HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0) {
        nr = nr < 4 ? nr : 4;
        for (unsigned k = 0; k < nr; k++) {
            if (m->distance == NULL && ds[k]->nbobjs == m->nnodes) {
                m->distance = xcalloc(m->nnodes * m->nnodes, sizeof(*m->distance));
                for (size_t a = 0; a < m->nnodes; a++)
                    for (size_t b = 0; b < m->nnodes; b++) {
                        hwloc_uint64_t ab, ba;
                        if (hwloc_distances_obj_pair_values(ds[k], objs[a], objs[b], &ab, &ba) == 0)
                            m->distance[a * m->nnodes + b] = ab;
                    }
            }
            hwloc_distances_release(topo, ds[k]);
        }
    }
    free(objs);
    kinds_from_hwloc(topo, m);
}

/*
 * Disallowed CPUs and nodes (outside the cgroup cpuset) stay in the
 * topology, and topo_load() leaves them out itself: hwloc would otherwise
 * count a removed CPU in the complete cpuset, as if it were offline, and
 * the cache must hold the whole machine anyway.
 */
#define BASE_FLAGS                                                                                 \
    (HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |                   \
     HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED)

/*
 * Only what the planner reads: nodes, cores, PUs, and what carries a NUMA
 * node's locality. On Linux hwloc takes a node's CPUs from sysfs and makes a
 * group where no other object matches them, so the host needs no cache
 * objects. An XML export from elsewhere hangs a node below the object its
 * CPUs are local to (an SNC cluster's L3, a memory-side cache); removing that
 * object would widen the node's cpuset to its parent's, so there caches stay
 * where they add structure.
 */
static bool new_topology(hwloc_topology_t *topo, bool host, unsigned long flags, struct err *e)
{
    if (hwloc_topology_init(topo) < 0) {
        err_set(e, "hwloc_topology_init failed: %s", strerror(errno));
        return false;
    }
    hwloc_topology_set_all_types_filter(*topo, host ? HWLOC_TYPE_FILTER_KEEP_NONE
                                                    : HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
    hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_GROUP, HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
    hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_set_flags(*topo, flags) < 0) {
        err_set(e, "hwloc refused topology flags: %s", strerror(errno));
        hwloc_topology_destroy(*topo);
        return false;
    }
    return true;
}

/* An hwloc XML export of the largest machines, PCI and all, is a few MiB. */
#define XML_MAX (16 << 20)

/*
 * Past the ')' that closes the attributes at s, as hwloc finds it: the
 * first one, whatever precedes it; NULL if none does.
 */
static const char *past_attrs(const char *s)
{
    const char *close = strchr(s, ')');
    return close ? close + 1 : NULL;
}

/*
 * The PUs a synthetic description makes: the product of its levels'
 * counts, read as hwloc reads them (topology-synthetic.c): levels apart by
 * blanks or newlines, a type up to the next ':', strtoul() in base 0,
 * attributes up to the first ')', "[...]" attaching memory and multiplying
 * nothing. hwloc builds whatever it is given, and a typo of a few digits
 * is a thousand million objects: hand-written because hwloc says the size
 * only after it has built them. Saturates at SIZE_MAX; 0 for what it
 * cannot count, which the caller refuses rather than let hwloc build.
 */
/*
 * Whether attributes (from '(' to past_attrs()) give an index above what
 * Linux numbers ("indexes=0,9000" or an interleave "indexes=2*4:..."): hwloc
 * sizes its sets by the highest, and one of two thousand million takes
 * gigabytes before it fails.
 */
static bool index_beyond(const char *attrs, const char *end)
{
    const char *at = attrs;
    while ((at = strstr(at, "indexes=")) != NULL && at < end) {
        for (const char *p = at + 8; p < end && *p != ' ' && *p != ')'; p++) {
            if (*p < '0' || *p > '9' || (p > at + 8 && p[-1] >= '0' && p[-1] <= '9'))
                continue;
            char *num_end;
            errno = 0;
            unsigned long long v = strtoull(p, &num_end, 10);
            if (errno == ERANGE || v > BITMAP_MAX_INDEX)
                return true;
        }
        at += 8;
    }
    return false;
}

static size_t synthetic_pus(const char *desc, bool *beyond)
{
    size_t pus = 1;
    const char *s = desc, *open = desc;
    *beyond = false;
    if (*s == '(' && (s = past_attrs(s)) == NULL)
        return 0;
    *beyond = *open == '(' && index_beyond(open, s);
    while (*s) {
        s += strspn(s, " \t\n");
        if (*s == '\0')
            break;
        if (*s == '[') { /* "[numa(memory=...)]": its attributes, then the ']' */
            const char *attrs = strpbrk(s, "(]"), *close = attrs;
            if (close && *close == '(' && (close = past_attrs(close)) != NULL) {
                *beyond |= index_beyond(attrs, close);
                close = strchr(close, ']');
            }
            if (close == NULL || *close != ']')
                return 0;
            s = close + 1;
            continue;
        }
        if (*s < '0' || *s > '9') {
            const char *colon = strchr(s, ':');
            if (colon == NULL)
                return 0;
            s = colon + 1;
        }
        char *end;
        errno = 0;
        unsigned long long n = strtoull(s, &end, 0);
        if (end == s)
            return 0;
        if (errno == ERANGE || n > SIZE_MAX)
            n = SIZE_MAX;
        pus = n != 0 && pus > SIZE_MAX / n ? SIZE_MAX : pus * (size_t)n;
        s = open = end;
        if (*s == '(' && (s = past_attrs(s)) == NULL)
            return 0;
        *beyond |= *open == '(' && index_beyond(open, s);
    }
    return pus;
}

/*
 * What no machine Linux runs has, which hwloc imports from an XML as
 * written: the planner and the cache take a node's number for its
 * identity, and no CPU beyond what a launch reads from a file.
 */
static const char *machine_inconsistent(const struct machine *m)
{
    static char why[96];
    if (hwloc_bitmap_last(m->complete) > (int)BITMAP_MAX_INDEX) {
        snprintf(why, sizeof(why), "a CPU numbered above %lu; Linux numbers them below it",
                 BITMAP_MAX_INDEX);
        return why;
    }
    for (size_t a = 0; a < m->nnodes; a++) {
        if (m->nodes[a].os_index >= MAX_NODES) {
            snprintf(why, sizeof(why), "a NUMA node numbered above %d; Linux numbers them below it",
                     MAX_NODES - 1);
            return why;
        }
        for (size_t b = a + 1; b < m->nnodes; b++)
            if (m->nodes[a].os_index == m->nodes[b].os_index) {
                snprintf(why, sizeof(why), "two NUMA nodes numbered %u; not a consistent export",
                         m->nodes[a].os_index);
                return why;
            }
    }
    return NULL;
}

/* An XML file or a synthetic description: for plan, topo and tests. */
static bool load_spec(const char *spec, struct topo *t, struct machine *m, struct err *e)
{
    hwloc_topology_t topo;
    bool synthetic = strncmp(spec, "synthetic:", 10) == 0;
    t->source = synthetic ? TOPO_SYNTHETIC : TOPO_XML;
    t->desc = xstrdup(spec);
    char *xml = NULL;
    size_t len = 0;
    if (synthetic) {
        bool beyond;
        size_t pus = synthetic_pus(spec + 10, &beyond);
        if (pus != 0 && beyond) {
            err_set(e, "--topology %s: an index above %lu; Linux numbers CPUs and nodes below it",
                    spec, BITMAP_MAX_INDEX);
            return false;
        }
        if (pus == 0) {
            err_set(e, "--topology %s: not a valid hwloc synthetic description", spec);
            return false;
        }
        if (pus > BITMAP_MAX_INDEX + 1) {
            err_set(e, "--topology %s: more than %lu PUs; Linux runs at most that many CPUs", spec,
                    BITMAP_MAX_INDEX + 1);
            return false;
        }
    } else {
        /* read here, not by hwloc: a FIFO would hang it, /dev/zero fill the memory */
        int fd = open_regular(spec), error = fd < 0 ? errno : read_fd_text(fd, XML_MAX, &xml, &len);
        if (fd >= 0)
            close(fd);
        if (error != 0) {
            err_set(e, "--topology %s: %s", spec,
                    error == EINVAL  ? "not a regular file (an hwloc XML export is one)"
                    : error == EFBIG ? "larger than 16 MiB; not an hwloc XML export"
                                     : strerror(error));
            return false;
        }
    }
    if (!new_topology(&topo, false, BASE_FLAGS, e)) {
        free(xml);
        return false;
    }
    bool ok = false;
    if (synthetic && hwloc_topology_set_synthetic(topo, spec + 10) < 0)
        err_set(e, "--topology %s: not a valid hwloc synthetic description", spec);
    else if (!synthetic && hwloc_topology_set_xmlbuffer(topo, xml, (int)len + 1) < 0)
        err_set(e, "--topology %s: not an hwloc XML export: %s", spec, strerror(errno));
    else if (hwloc_topology_load(topo) < 0)
        err_set(e, "--topology %s: hwloc cannot load it: %s", spec, strerror(errno));
    else
        ok = true;
    free(xml);
    if (ok)
        machine_from_hwloc(topo, m, true); /* an XML may say what was allowed */
    hwloc_topology_destroy(topo);
    const char *bad = ok ? machine_inconsistent(m) : NULL;
    if (bad) {
        err_set(e, "--topology %s: %s", spec, bad);
        machine_free(m);
        ok = false;
    }
    return ok;
}

/* What can change the machine under a running kernel; the cache's key. */
static const char *const key_files[] = {
    "/proc/sys/kernel/random/boot_id", /* first: without it there is no cache */
    "/sys/devices/system/cpu/possible",
    "/sys/devices/system/cpu/online",  /* hotplug, SMT switched off */
    "/sys/devices/system/node/online", /* memory hotplug can add a node */
    "/sys/devices/system/node/has_cpu",
    "/sys/devices/system/node/has_memory",
};
#define NKEY_FILES (sizeof(key_files) / sizeof(key_files[0]))
#define CACHE_NAME "topology.cache"
/* the highest CPU a cache may name when the kernel does not say (x86's NR_CPUS is 8192) */
#define CPUS_UNKNOWN_MAX 8191
#define CACHE_MAX        (64 << 20) /* 4096 PUs and 64 nodes take well under 1 MiB */

/* Add to what -v says about the cache. */
static void cache_note(struct topo *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cache_note(struct topo *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *note = xvasprintf(fmt, ap);
    va_end(ap);
    if (t->cache_note) {
        char *both = xasprintf("%s; %s", t->cache_note, note);
        free(note);
        note = both;
    }
    free(t->cache_note);
    t->cache_note = note;
}

/* A file's identity: a rebuilt tunerun or an upgraded libhwloc is another file. */
static char *file_id(const char *path)
{
    struct stat st;
    if (path == NULL || stat(path, &st) < 0)
        return xstrdup("-");
    return xasprintf("%llu:%llu:%lld:%lld.%09ld", (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/*
 * The key a cache must have been written under, in *max the machine's
 * highest possible CPU, which bounds what the cache may name, and in
 * `online` the online CPUs the key names (left empty when the kernel does
 * not say), which the cache's own online line must match; NULL, with
 * why, when there is no boot id, or no cpu/possible: without sysfs hwloc's
 * discovery is a guess that must not replace what a launch with it found.
 * hwloc's API version is the same for many releases, so the library file
 * itself, and tunerun's binary (its filters and flags), are in it.
 */
static char *cache_key(int *max, hwloc_bitmap_t online, const char **why)
{
    *max = CPUS_UNKNOWN_MAX;
    char possible[8192];
    if (boot_id() == NULL) {
        *why = "no boot id in /proc, so no topology cache";
        return NULL;
    }
    if (!read_line_file(key_files[1], possible, sizeof(possible))) {
        *why = "cannot read /sys/devices/system/cpu/possible, so no topology cache";
        return NULL;
    }
    Dl_info lib;
    const char *libpath = dladdr((void *)hwloc_topology_init, &lib) ? lib.dli_fname : NULL;
    char *exe = file_id("/proc/self/exe"), *hw = file_id(libpath);
    char *key = xasprintf("tunerun topology cache 4\ntunerun %s\nhwloc %s %s\n", exe,
                          libpath ? libpath : "-", hw);
    free(exe);
    free(hw);
    int first = -1; /* online */
    for (size_t i = 0; i < NKEY_FILES; i++) {
        char v[8192];
        if (i == 0) /* read once a launch: the registry needs it too */
            snprintf(v, sizeof(v), "%s", boot_id());
        else if (i == 1)
            snprintf(v, sizeof(v), "%s", possible);
        else if (!read_line_file(key_files[i], v, sizeof(v)))
            strcpy(v, "-");
        if (i == 1 || i == 2) {
            hwloc_bitmap_t set = hwloc_bitmap_alloc();
            if (bitmap_parse(set, v) && hwloc_bitmap_last(set) >= 0) {
                if (i == 1) {
                    *max = hwloc_bitmap_last(set);
                } else {
                    first = hwloc_bitmap_first(set);
                    hwloc_bitmap_copy(online, set);
                }
            }
            hwloc_bitmap_free(set);
        }
        char *k = xasprintf("%s%s %s\n", key, key_files[i], v);
        free(key);
        key = k;
    }
    /*
     * Kinds of core are ranked by cpufreq's base_frequency where the kernel
     * has no cpu_capacity, and ARM rescales cpu_capacity when its cpufreq
     * driver (a module) loads: a cache written before that must not
     * outlive it. Whether the first online CPU has cpufreq yet says so.
     */
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq", first);
    char *k = xasprintf("%scpufreq %s\n", key,
                        first < 0              ? "-"
                        : stat(path, &st) == 0 ? "yes"
                                               : "no");
    free(key);
    return k;
}

/*
 * The cache's text after its key: the machine in lines of tunerun's own,
 * which a launch reads back with hwloc's list parser and nothing else.
 * Importing hwloc's XML export instead cost every launch ~0.1 ms of
 * parsing and hwloc's own cgroup reads; this costs a few microseconds.
 *
 *     complete LIST           every PU (first: it bounds the other sets)
 *     online LIST             PUs online
 *     node OS BYTES LIST SUBTYPE   per node, its PUs; SUBTYPE "-" for none
 *     core LIST               per core
 *     kind LIST LABEL         per kind of core, fastest first: none, or two and more
 *     distances V...          nodes x nodes, in node order; absent: unknown
 *
 * LIST is bitmap_list()'s ("none" when empty).
 */
static char *cache_format(const struct machine *m)
{
    size_t cap = 256, len = 0;
    char *text = xcalloc(1, cap);
#define APPEND(...)                                                                                \
    do {                                                                                           \
        char *piece_ = xasprintf(__VA_ARGS__);                                                     \
        size_t n_ = strlen(piece_);                                                                \
        while (len + n_ + 1 > cap)                                                                 \
            text = xrealloc(text, cap *= 2);                                                       \
        memcpy(text + len, piece_, n_ + 1);                                                        \
        len += n_;                                                                                 \
        free(piece_);                                                                              \
    } while (0)
    char *online = bitmap_list(m->online), *complete = bitmap_list(m->complete);
    APPEND("complete %s\nonline %s\n", complete, online);
    free(online);
    free(complete);
    for (size_t i = 0; i < m->nnodes; i++) {
        const struct mnode *nd = &m->nodes[i];
        char *cpus = bitmap_list(nd->cpus);
        APPEND("node %u %llu %s %s\n", nd->os_index, (unsigned long long)nd->memory, cpus,
               nd->subtype[0] && !strpbrk(nd->subtype, " \t\n") ? nd->subtype : "-");
        free(cpus);
    }
    for (size_t i = 0; i < m->ncores; i++) {
        char *cpus = bitmap_list(m->cores[i]);
        APPEND("core %s\n", cpus);
        free(cpus);
    }
    for (size_t i = 0; i < m->nkinds; i++) {
        char *cpus = bitmap_list(m->kinds[i].cpus);
        APPEND("kind %s %s\n", cpus, m->kinds[i].label);
        free(cpus);
    }
    if (m->distance) {
        APPEND("distances");
        for (size_t i = 0; i < m->nnodes * m->nnodes; i++)
            APPEND(" %llu", (unsigned long long)m->distance[i]);
        APPEND("\n");
    }
#undef APPEND
    return text;
}

static hwloc_bitmap_t parsed_set(const char *list)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (list == NULL || !bitmap_parse(set, list)) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/*
 * A list of the cache's that lies within `within` (NULL: at most `max`,
 * the machine's highest possible CPU); NULL otherwise. Bounded before
 * anything big is kept: a corrupt file must not make a launch allocate
 * without end.
 */
static hwloc_bitmap_t cached_set(const char *list, hwloc_const_bitmap_t within, int max)
{
    hwloc_bitmap_t set = parsed_set(list);
    if (set && (within ? !hwloc_bitmap_isincluded(set, within) : hwloc_bitmap_last(set) > max)) {
        hwloc_bitmap_free(set);
        set = NULL;
    }
    return set;
}

/*
 * A non-empty list within `within` that shares no CPU with `taken` (the
 * cores or kinds before it), added to it; NULL otherwise.
 */
static hwloc_bitmap_t apart_set(const char *list, hwloc_const_bitmap_t within, hwloc_bitmap_t taken)
{
    hwloc_bitmap_t set = cached_set(list, within, 0);
    if (set && (hwloc_bitmap_iszero(set) || hwloc_bitmap_intersects(set, taken))) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    if (set)
        hwloc_bitmap_or(taken, taken, set);
    return set;
}

static size_t words(const char *s)
{
    size_t n = 0;
    for (const char *p = s; p && *p; n++) {
        p += strspn(p, " ");
        if (*p == '\0')
            break;
        p += strcspn(p, " ");
    }
    return n;
}

/*
 * cache_format()'s text back (modified in place), its CPUs within 0..max;
 * false with why (a line that is wrong, or one missing) otherwise. What it
 * says must hold together: every set within the complete one, node os
 * indexes unique, cores disjoint, and its online CPUs those of the key it
 * was found under (`online`; NULL or empty: not known). A body that
 * contradicts its own key was not written by the tunerun that wrote the
 * key, and is discovered again.
 */
static bool cache_parse(char *text, int max, hwloc_const_bitmap_t online, struct machine *m,
                        char *why, size_t why_n)
{
    memset(m, 0, sizeof(*m));
    hwloc_bitmap_t seen = hwloc_bitmap_alloc(), in_cores = hwloc_bitmap_alloc();
    hwloc_bitmap_t in_kinds = hwloc_bitmap_alloc();
    size_t node_cap = 0, core_cap = 0, kind_cap = 0;
    unsigned lineno = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && !bad;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *w = NULL, *word = strtok_r(line, " ", &w);
        bool ok = word != NULL;
        /* the complete set first: it bounds every other */
        if (ok && m->complete == NULL) {
            ok = strcmp(word, "complete") == 0 &&
                 (m->complete = cached_set(strtok_r(NULL, " ", &w), NULL, max)) != NULL;
        } else if (ok && strcmp(word, "online") == 0 && m->online == NULL) {
            ok = (m->online = cached_set(strtok_r(NULL, " ", &w), m->complete, 0)) != NULL;
        } else if (ok && strcmp(word, "node") == 0 && m->distance == NULL) {
            uint64_t os, bytes;
            const char *a = strtok_r(NULL, " ", &w), *b = strtok_r(NULL, " ", &w);
            const char *c = strtok_r(NULL, " ", &w), *d = strtok_r(NULL, " ", &w);
            hwloc_bitmap_t cpus = NULL;
            ok = parse_u64(a, &os) && os < MAX_NODES && !hwloc_bitmap_isset(seen, (unsigned)os) &&
                 parse_u64(b, &bytes) && d != NULL && strlen(d) < sizeof(m->nodes->subtype) &&
                 (cpus = cached_set(c, m->complete, 0)) != NULL;
            if (ok) {
                if (m->nnodes == node_cap)
                    m->nodes =
                        xrealloc(m->nodes, (node_cap = node_cap * 2 + 4) * sizeof(*m->nodes));
                struct mnode *nd = &m->nodes[m->nnodes++];
                memset(nd, 0, sizeof(*nd));
                nd->os_index = (unsigned)os;
                hwloc_bitmap_set(seen, (unsigned)os);
                nd->memory = bytes;
                nd->cpus = cpus;
                if (strcmp(d, "-") != 0)
                    snprintf(nd->subtype, sizeof(nd->subtype), "%s", d);
            }
        } else if (ok && strcmp(word, "core") == 0) {
            hwloc_bitmap_t cpus = apart_set(strtok_r(NULL, " ", &w), m->complete, in_cores);
            ok = cpus != NULL;
            if (ok) {
                if (m->ncores == core_cap)
                    m->cores =
                        xrealloc(m->cores, (core_cap = core_cap * 2 + 8) * sizeof(*m->cores));
                m->cores[m->ncores++] = cpus;
            }
        } else if (ok && strcmp(word, "kind") == 0) {
            const char *list = strtok_r(NULL, " ", &w), *label = strtok_r(NULL, " ", &w);
            bool fresh = label != NULL; /* kinds_from_hwloc() makes every label unique */
            for (size_t k = 0; fresh && k < m->nkinds; k++)
                fresh = strcmp(m->kinds[k].label, label) != 0;
            hwloc_bitmap_t cpus = fresh && strlen(label) < sizeof(m->kinds->label)
                                      ? apart_set(list, m->complete, in_kinds)
                                      : NULL;
            ok = cpus != NULL;
            if (ok) {
                if (m->nkinds == kind_cap)
                    m->kinds =
                        xrealloc(m->kinds, (kind_cap = kind_cap * 2 + 2) * sizeof(*m->kinds));
                struct mkind *k = &m->kinds[m->nkinds++];
                k->cpus = cpus;
                snprintf(k->label, sizeof(k->label), "%s", label);
            }
        } else if (ok && strcmp(word, "distances") == 0 && m->distance == NULL && m->nnodes > 1) {
            /* as many values as node pairs, counted before the matrix is made */
            size_t n = m->nnodes * m->nnodes;
            ok = words(w) == n;
            if (ok)
                m->distance = xcalloc(n, sizeof(*m->distance));
            for (size_t i = 0; ok && i < n; i++)
                ok = parse_u64(strtok_r(NULL, " ", &w), &m->distance[i]);
        } else {
            ok = false;
        }
        if (ok && strtok_r(NULL, " ", &w) != NULL)
            ok = false; /* a word too many */
        if (!ok)
            bad = lineno;
    }
    hwloc_bitmap_free(seen);
    hwloc_bitmap_free(in_cores);
    hwloc_bitmap_free(in_kinds);
    if (bad)
        snprintf(why, why_n, "line %u after the key is not tunerun's", bad);
    else if (m->complete == NULL || m->online == NULL || m->nnodes == 0)
        snprintf(why, why_n, "it ends before its complete, online and node lines");
    else if (hwloc_bitmap_iszero(m->online))
        snprintf(why, why_n, "it has no CPU online; a machine that runs this has one");
    else if (online && !hwloc_bitmap_iszero(online) && !hwloc_bitmap_isequal(m->online, online))
        snprintf(why, why_n, "its online CPUs are not the ones its key names");
    else if (m->ncores == 0)
        snprintf(why, why_n, "it has no core line; a machine without cores is never cached");
    else if (m->nkinds == 1)
        snprintf(why, why_n, "it has one kind line; a machine whose cores are alike has none");
    else
        return true;
    machine_free(m);
    return false;
}

/*
 * What a cache whose key is not `key` was written for: the first line of
 * the key (cache_key()'s: three lines, one per key file, then cpufreq) it differs in.
 */
static const char *key_mismatch(const char *key, const char *text, size_t n)
{
    static const char *const what[] = {
        "another cache format",         "another tunerun binary",
        "another libhwloc file",        "another boot",
        "other possible CPUs",          "other online CPUs",
        "other online NUMA nodes",      "other NUMA nodes with CPUs",
        "other NUMA nodes with memory", "a cpufreq driver loaded or gone",
    };
    _Static_assert(sizeof(what) / sizeof(what[0]) == 4 + NKEY_FILES, "a name per key line");
    size_t line = 0;
    for (size_t i = 0; i < n && key[i] && key[i] == text[i]; i++)
        line += key[i] == '\n';
    return line < sizeof(what) / sizeof(what[0]) ? what[line] : "another machine";
}

/* The cached text (NUL-terminated, after the key) when written under `key`, else NULL. */
static char *cache_read(struct topo *t, const struct state_dir *sd, const char *key)
{
    struct err e;
    int fd = state_open_read(sd, CACHE_NAME, &e);
    if (fd < 0) {
        if (errno == ENOENT)
            cache_note(t, "no topology cache in %s yet", sd->path);
        else
            cache_note(t, "%s", e.msg);
        return NULL;
    }
    char *text;
    size_t n, klen = strlen(key);
    int error = read_fd_text(fd, CACHE_MAX, &text, &n);
    close(fd);
    if (error) {
        cache_note(t, "cannot read %s/%s: %s", sd->path, CACHE_NAME, strerror(error));
        return NULL;
    }
    if (n < klen || memcmp(text, key, klen) != 0) {
        if (n == 0)
            cache_note(t, "%s/%s is empty", sd->path, CACHE_NAME);
        else
            cache_note(t, "%s/%s was written for %s", sd->path, CACHE_NAME,
                       key_mismatch(key, text, n));
        free(text);
        return NULL;
    }
    memmove(text, text + klen, n - klen + 1);
    return text;
}
/*
 * Whether hwloc 2.9 reads this node/online text as no node at all. Its
 * cpulist reader (hwloc__read_path_as_cpulist(), not the list parser
 * tunerun uses elsewhere, which refuses what it cannot read) starts from a
 * full set and clears the gaps around each comma-separated segment, in
 * ints: an empty text is node 0, "0,2-1" is node 0, but "1-0" or "-1"
 * clears everything. Done here with hwloc's own bitmap calls, step by step.
 */
static bool hwloc_reads_no_node(char *text)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc_full();
    int prevlast = -1;
    for (char *cur = text;;) {
        char *comma = strchr(cur, ','), *end;
        if (comma)
            *comma = '\0';
        int first = (int)strtoul(cur, &end, 0);
        int last = *end == '-' ? (int)strtoul(end + 1, NULL, 0) : first;
        /*
         * hwloc's test, prevlast + 1 <= first - 1, overflows at INT_MAX;
         * Debian's build compares prevlast < first - 1, its - 1 wrapping,
         * and so does this, in unsigned arithmetic where C would not wrap.
         */
        int before = (int)((unsigned)first - 1u);
        if (prevlast < before)
            hwloc_bitmap_clr_range(set, (unsigned)prevlast + 1u, before);
        prevlast = last;
        if (!comma)
            break;
        cur = comma + 1;
    }
    hwloc_bitmap_clr_range(set, (unsigned)prevlast + 1u, -1);
    bool none = hwloc_bitmap_weight(set) < 1;
    hwloc_bitmap_free(set);
    return none;
}

/*
 * Why hwloc 2.9 would abort on this machine's node directory (in `why`),
 * or false: a container that masks it with an empty tmpfs, or fakes
 * node/online. hwloc's Linux backend asserts that Linux never does that
 * and aborts the process, so it must not be asked to look. This follows
 * its list_sysfsnode(), which it reaches only when it may read the
 * directory (and has CPU topology to read, which the caller checks): a
 * node/online that opens and reads is read whatever it holds (above),
 * but one over INERT_MAX is refused rather than read as hwloc would;
 * else the directory is listed for node<N> entries, and none is the
 * assertion.
 */
static bool nodes_masked(char *why, size_t n)
{
    static const char fake[] = "(a container's fake?): hwloc cannot discover this machine from "
                               "it (fix: leave /sys/devices/system/node as the kernel shows it)";
    const char *dir_path = "/sys/devices/system/node";
    if (access(dir_path, R_OK | X_OK) != 0)
        return false; /* no NUMA in this kernel, or none to see: hwloc makes one node */
    int fd = open("/sys/devices/system/node/online", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        char *text, shown[ESCAPED_SIZE(64)];
        size_t len;
        int error = read_fd_text(fd, INERT_MAX, &text, &len);
        close(fd);
        if (error == EFBIG) {
            snprintf(why, n, "%s/online is over %lu MiB %s", dir_path, INERT_MAX >> 20, fake);
            return true;
        }
        if (error == 0) {
            str_escaped(shown, sizeof(shown), text, 64); /* before the reading cuts it */
            bool none = hwloc_reads_no_node(text);
            free(text);
            if (none)
                snprintf(why, n, "%s/online reads '%s', which names no NUMA node %s", dir_path,
                         shown, fake);
            return none;
        }
        /* hwloc lists the directory when the file does not read */
    }
    DIR *dir = opendir(dir_path);
    if (dir == NULL)
        return false;
    bool masked = true;
    for (struct dirent *d; masked && (d = readdir(dir)) != NULL;) {
        char *end;
        if (strncmp(d->d_name, "node", 4) == 0) {
            (void)strtoul(d->d_name + 4, &end, 0);
            masked = end == d->d_name + 4;
        }
    }
    closedir(dir);
    if (masked)
        snprintf(why, n,
                 "%s names no NUMA node (masked, as some containers do?): hwloc cannot discover "
                 "this machine without it (fix: leave %s unmasked)",
                 dir_path, dir_path);
    return masked;
}

/* Whether sysfs has one of the CPU topology files hwloc needs, for this CPU. */
static bool cpu_topology_file(unsigned cpu)
{
    static const char *const names[] = {"package_cpus", "core_cpus", "core_siblings",
                                        "thread_siblings"};
    char path[128];
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/topology/%s", cpu, names[i]);
        if (access(path, R_OK) == 0)
            return true;
    }
    return false;
}

static const struct topo_guess no_sysfs = {
    "no /sys/devices/system/cpu (is /sys mounted?), so hwloc can only guess this machine: one "
    "node, no cores",
    "mount sysfs where tunerun runs: mount -t sysfs sysfs /sys"};
static const struct topo_guess cpus_masked = {
    "/sys/devices/system/cpu shows no CPU topology (masked, as some containers do?), so hwloc "
    "can only guess this machine: one node, no cores",
    "leave /sys/devices/system/cpu unmasked"};

/*
 * Why hwloc's Linux backend will not read this machine, or NULL. It gives
 * up on sysfs, NUMA nodes and all, unless cpu0, or else the first online
 * CPU, has a topology file it knows (hwloc 2.9's check_sysfs_cpu_path()),
 * and then guesses one node with the CPUs this process may use.
 */
static const struct topo_guess *hwloc_guesses(void)
{
    if (access("/sys/devices/system/cpu", F_OK) != 0)
        return &no_sysfs;
    if (access("/sys/devices/system/cpu", R_OK | X_OK) != 0)
        return &cpus_masked;
    if (cpu_topology_file(0))
        return NULL;
    char online[64];
    unsigned long first;
    if (read_line_file("/sys/devices/system/cpu/online", online, sizeof(online)) &&
        sscanf(online, "%lu", &first) == 1 && first <= UINT_MAX &&
        cpu_topology_file((unsigned)first))
        return NULL;
    return &cpus_masked;
}

/*
 * Discover this machine. Where hwloc can only guess it, it says so in a
 * bare line of its own; t->guess says it the way tunerun's messages do,
 * and the plan warns, so hwloc's line is hidden, unless the caller set
 * HWLOC_HIDE_ERRORS. (hwloc reads that variable once a process; tunerun
 * discovers once.)
 */
static hwloc_topology_t discover_host(struct topo *t, struct err *e)
{
    hwloc_topology_t topo;
    char why[ESCAPED_SIZE(64) + 256];
    t->guess = hwloc_guesses();
    /* a guess is made without looking at the node directory */
    if (t->guess == NULL && nodes_masked(why, sizeof(why))) {
        err_set(e, "%s", why);
        return NULL;
    }
    if (!new_topology(&topo, true, BASE_FLAGS, e))
        return NULL;
    bool hide = t->guess && getenv("HWLOC_HIDE_ERRORS") == NULL;
    if (hide)
        setenv("HWLOC_HIDE_ERRORS", "2", 1);
    int loaded = hwloc_topology_load(topo), error = errno;
    if (hide)
        unsetenv("HWLOC_HIDE_ERRORS"); /* not the service's */
    if (loaded < 0) {
        err_set(e, "cannot discover this machine's topology: %s", strerror(error));
    } else if (!hwloc_topology_is_thissystem(topo)) {
        /* HWLOC_FSROOT (a copied sysfs) makes the Linux backend describe another machine. */
        err_set(e, "hwloc describes another machine (HWLOC_FSROOT or HWLOC_THISSYSTEM is set "
                   "in the environment); unset it to launch here");
    } else {
        return topo;
    }
    hwloc_topology_destroy(topo);
    return NULL;
}

/* The first HWLOC_* in the environment that is not tunerun's own, or NULL. */
static const char *foreign_hwloc_variable(char *name, size_t n)
{
    extern char **environ;
    for (char **v = environ; *v; v++) {
        if (strncmp(*v, "HWLOC_", 6) != 0)
            continue;
        size_t len = strcspn(*v, "=");
        bool ours = false;
        for (size_t i = 0; i < NLOAD_ENV && !ours; i++)
            ours = strlen(load_env[i].name) == len && strncmp(*v, load_env[i].name, len) == 0;
        if (!ours) {
            snprintf(name, n, "%.*s", (int)len, *v);
            return name;
        }
    }
    return NULL;
}

/* The machine is cached whole: each launch narrows it to its own cgroup and affinity. */
static void cache_write(struct topo *t, const struct state_dir *sd, const char *key,
                        const struct machine *m)
{
    struct err we;
    char *body = cache_format(m);
    const char *bufs[] = {key, body};
    size_t lens[] = {strlen(key), strlen(body)};
    if (state_write(sd, CACHE_NAME, bufs, lens, 2, &we)) {
        t->cache = TOPO_CACHE_WRITTEN;
        cache_note(t, "discovered and cached in %s/%s", sd->path, CACHE_NAME);
        unlinkat(sd->fd, "topology.xml", 0); /* the hwloc XML cache earlier builds wrote */
    } else {
        t->cache = TOPO_CACHE_FAILED;
        cache_note(t, "%s", we.msg);
    }
    free(body);
}

static bool load_host(struct topo *t, const struct state_dir *sd, struct machine *m, struct err *e)
{
    t->source = TOPO_HOST;
    t->desc = xstrdup("this machine");
    t->cache = TOPO_CACHE_OFF;
    /* A copied sysfs describes another machine, whatever HWLOC_THISSYSTEM claims. */
    const char *fsroot = getenv("HWLOC_FSROOT");
    if (fsroot && strcmp(fsroot, "/") != 0) {
        err_set(e,
                "HWLOC_FSROOT=%s makes hwloc describe another machine; unset it to "
                "launch here",
                fsroot);
        return false;
    }
    char *key = NULL, var[64], why[128];
    const char *nokey;
    int max;
    hwloc_bitmap_t online = hwloc_bitmap_alloc();
    if (sd == NULL || sd->fd < 0)
        cache_note(t, "no state directory, so no topology cache");
    else if (foreign_hwloc_variable(var, sizeof(var)))
        /* HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES and others change what hwloc finds. */
        cache_note(t, "%s is set, so the topology cache is not used", var);
    else if ((key = cache_key(&max, online, &nokey)) == NULL)
        cache_note(t, "%s", nokey);

    char *cached = key ? cache_read(t, sd, key) : NULL;
    if (cached) {
        bool ok = cache_parse(cached, max, online, m, why, sizeof(why));
        free(cached);
        if (ok) {
            t->cache = TOPO_CACHE_HIT;
            cache_note(t, "topology from the cache %s/%s", sd->path, CACHE_NAME);
            free(key);
            hwloc_bitmap_free(online);
            return true;
        }
        cache_note(t, "%s/%s: %s", sd->path, CACHE_NAME, why);
    }
    hwloc_topology_t found = discover_host(t, e);
    if (found) {
        machine_from_hwloc(found, m, false); /* this process's allowed sets come later */
        hwloc_topology_destroy(found);
        /* CPUs and no core: sysfs's CPU topology is masked, and hwloc guessed */
        if (key && m->ncores == 0 && !hwloc_bitmap_iszero(m->online))
            cache_note(t, "hwloc found no cores (sysfs gives no CPU topology: masked?), so "
                          "what it found is not cached");
        else if (key)
            cache_write(t, sd, key, m);
    }
    free(key);
    hwloc_bitmap_free(online);
    return found != NULL;
}
/* Ordinary memory wins a tie for CPU home over the special kinds. */
static int subtype_rank(const char *subtype)
{
    if (*subtype == '\0' || strcasecmp(subtype, "DRAM") == 0)
        return 0;
    return 1;
}

static bool better_home(const struct mnode *a, const struct mnode *b)
{
    int wa = hwloc_bitmap_weight(a->cpus), wb = hwloc_bitmap_weight(b->cpus);
    if (wa != wb)
        return wa < wb;
    int ra = subtype_rank(a->subtype), rb = subtype_rank(b->subtype);
    if (ra != rb)
        return ra < rb;
    return a->os_index < b->os_index;
}

/* The allowed nodes; a disallowed one is no CPU's home and receives no memory. */
static void load_nodes(const struct machine *m, struct topo *t)
{
    size_t n = m->nnodes;
    t->nodes = xcalloc(n, sizeof(*t->nodes));
    const struct mnode **from = xcalloc(n, sizeof(*from));
    size_t *at = xcalloc(n, sizeof(*at)); /* index in m->nodes */
    bool sizes = false; /* an XML without memory sizes makes every node look memoryless */
    for (size_t j = 0; j < n; j++)
        sizes |= m->nodes[j].memory > 0;
    for (size_t j = 0; j < n; j++) {
        const struct mnode *o = &m->nodes[j];
        /*
         * A cpuset's mems (cgroup v2's cpuset.mems.effective) never list a
         * memoryless node, allowed or not: such a node is ours when any of
         * its CPUs is.
         */
        bool memoryless = sizes && o->memory == 0;
        if (memoryless ? !hwloc_bitmap_intersects(o->cpus, t->cpus)
                       : m->allowed_nodes && !hwloc_bitmap_isset(m->allowed_nodes, o->os_index))
            continue;
        size_t i = t->nnodes++;
        from[i] = o;
        at[i] = j;
        struct topo_node *nd = &t->nodes[i];
        nd->os_index = o->os_index;
        nd->cpus = hwloc_bitmap_alloc();
        nd->cpuless = hwloc_bitmap_iszero(o->cpus);
        nd->mem_total = o->memory;
        nd->mem_free = nd->mem_total;
        snprintf(nd->subtype, sizeof(nd->subtype), "%s", o->subtype);
    }
    /* A source's order is by locality, not os index; plans read better by os index. */
    for (size_t i = 1; i < t->nnodes; i++)
        for (size_t j = i; j > 0 && t->nodes[j - 1].os_index > t->nodes[j].os_index; j--) {
            struct topo_node tmp = t->nodes[j];
            t->nodes[j] = t->nodes[j - 1];
            t->nodes[j - 1] = tmp;
            const struct mnode *to = from[j];
            from[j] = from[j - 1];
            from[j - 1] = to;
            size_t ta = at[j];
            at[j] = at[j - 1];
            at[j - 1] = ta;
        }
    /*
     * Give each PU one home node: the best of all the machine's nodes, so
     * that it is the same whoever launches. Where that node is not allowed
     * here, the PU has no home, rather than one of the other nodes that
     * list it (KNL's MCDRAM, HBM, a CXL node with its package's cpuset).
     */
    int pu;
    hwloc_bitmap_foreach_begin(pu, t->cpus)
    {
        size_t best = n;
        for (size_t j = 0; j < n; j++)
            if (hwloc_bitmap_isset(m->nodes[j].cpus, (unsigned)pu) &&
                (best == n || better_home(&m->nodes[j], &m->nodes[best])))
                best = j;
        for (size_t i = 0; best < n && i < t->nnodes; i++)
            if (at[i] == best)
                hwloc_bitmap_set(t->nodes[i].cpus, (unsigned)pu);
    }
    hwloc_bitmap_foreach_end();

    /* Distances between our nodes, when every pair of them has one. */
    if (m->distance && t->nnodes > 1) {
        unsigned *d = xcalloc(t->nnodes * t->nnodes, sizeof(*d));
        bool complete = true;
        for (size_t a = 0; a < t->nnodes && complete; a++)
            for (size_t b = 0; b < t->nnodes && complete; b++) {
                uint64_t v = m->distance[at[a] * n + at[b]];
                complete = v > 0 && v <= UINT_MAX;
                d[a * t->nnodes + b] = (unsigned)v;
            }
        if (complete)
            t->distance = d;
        else
            free(d);
    }
    free(from);
    free(at);
}

static void load_cores(const struct machine *m, struct topo *t)
{
    t->cores = xcalloc(m->ncores, sizeof(*t->cores));
    for (size_t i = 0; i < m->ncores; i++) {
        hwloc_bitmap_t pus = hwloc_bitmap_dup(m->cores[i]);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        t->cores[t->ncores++] = pus;
    }
}

/* The kinds of core among this process's CPUs, fastest first; none when one kind is left. */
static void load_kinds(const struct machine *m, struct topo *t)
{
    t->kinds = xcalloc(m->nkinds, sizeof(*t->kinds));
    for (size_t i = 0; i < m->nkinds; i++) {
        hwloc_bitmap_t pus = hwloc_bitmap_dup(m->kinds[i].cpus);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        struct topo_kind *k = &t->kinds[t->nkinds++];
        k->cpus = pus;
        memcpy(k->label, m->kinds[i].label, sizeof(k->label));
    }
    if (t->nkinds == 1) {
        hwloc_bitmap_free(t->kinds[0].cpus);
        t->nkinds = 0;
    }
}

/* What the nodes' meminfo counts, when it falls short of total by more than 1%; else 0. */
static uint64_t counted_short(const struct topo *t, uint64_t total)
{
    uint64_t counted = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        counted += t->nodes[i].mem_total;
    return counted < total - total / 100 ? counted : 0; /* 0 too when no node has any */
}

/*
 * Memory the machine has that its nodes' meminfo does not count yet. A
 * kernel that initializes struct pages lazily (this machine's, a 24 GiB
 * Firecracker guest booted with a vendor's deferred_init=lazy: pages
 * "left to deferred_grow_zone()") adds them to its zones' managed pages,
 * and so to its nodes' MemTotal, only as memory is used, while the
 * machine's total (sysinfo, /proc/meminfo, what the JVM sees) has them
 * from the start: its one node counted 5 to 16 GiB of 23.5. Upstream's
 * DEFERRED_STRUCT_PAGE_INIT finishes before init runs, and every later
 * change (balloons, hotplug) moves both counts together. A heap or a bind
 * sized by the nodes' counts alone would be a fraction of the machine's.
 * hwloc and libnuma both read the nodes' meminfo and know nothing of
 * this, hence by hand.
 */
bool topo_add_uninitialized(struct topo *t, uint64_t total, const char *zoneinfo, uint64_t page)
{
    uint64_t counted = counted_short(t, total);
    if (counted == 0 || zoneinfo == NULL || page == 0)
        return false;
    /* per node: the pages its zones hold (present) and those they do not manage */
    double *gap = xcalloc(2 * t->nnodes, sizeof(*gap)), *present = gap + t->nnodes;
    double gaps = 0, presents = 0;
    int at = -1;
    unsigned long long zone_present = 0, n;
    for (const char *p = zoneinfo; *p;) {
        /* a line at a time, a short copy of it: sscanf on the rest would read it all */
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[128];
        unsigned os;
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        p += len + (end != NULL);
        if (sscanf(line, "Node %u, zone", &os) == 1) {
            at = topo_node_index(t, os);
            zone_present = 0;
        } else if (at >= 0 && sscanf(line, " present %llu", &n) == 1) {
            zone_present = n;
            present[at] += (double)n, presents += (double)n;
        } else if (at >= 0 && sscanf(line, " managed %llu", &n) == 1 && zone_present > n) {
            gap[at] += (double)(zone_present - n), gaps += (double)(zone_present - n);
        }
    }
    /*
     * Not all of a gap is to come: the kernel's own reservations (its
     * struct pages, about 1.6% of memory, a crashkernel) stay unmanaged.
     * What the gaps hold beyond the shortfall is that, spread by present
     * pages; each node's share of the shortfall follows what is left of
     * its gap, and is never more than its gap.
     */
    double missing = (double)(total - counted) / (double)page;
    double kept = gaps > missing ? gaps - missing : 0, *lazy = xcalloc(t->nnodes, sizeof(*lazy));
    double lazies = 0, added = 0;
    for (size_t i = 0; i < t->nnodes && presents > 0; i++) {
        lazy[i] = gap[i] - kept * present[i] / presents;
        lazy[i] = lazy[i] > 0 ? lazy[i] : 0;
        lazies += lazy[i];
    }
    for (size_t i = 0; i < t->nnodes && lazies > 0; i++) {
        double share = missing * lazy[i] / lazies;
        uint64_t bytes = (uint64_t)((share < gap[i] ? share : gap[i]) * (double)page);
        t->nodes[i].mem_total += bytes;
        t->nodes[i].mem_free += bytes; /* initialized, it is free */
        added += (double)bytes;
    }
    if (added > 0) {
        free(t->memory_note);
        t->memory_note = xasprintf(
            "the nodes' meminfo counts %.1f GiB of the %.1f GiB this machine has: the rest is in "
            "their zones, not yet initialized (a kernel that does it lazily), and counted here "
            "as free",
            (double)counted / (1 << 30), (double)total / (1 << 30));
    }
    free(lazy);
    free(gap);
    return added > 0;
}

/* sysinfo's total memory, or 0. */
static uint64_t machine_memory(void)
{
    struct sysinfo si;
    return sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
}

/*
 * The same for this machine, whose every node with memory is allowed (its
 * memory is theirs): /proc/zoneinfo is read only when the nodes fall
 * short, which is rare. `before` is sysinfo's total before the nodes were
 * read: the smaller of it and the one after, so that a balloon that gave
 * memory back in between does not pass for memory to come.
 */
static void uninitialized_memory(struct topo *t, uint64_t before)
{
    uint64_t after = machine_memory(), total = after < before ? after : before;
    if (total == 0 || counted_short(t, total) == 0)
        return;
    char *zoneinfo = NULL;
    size_t len;
    int fd = open("/proc/zoneinfo", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && read_fd_text(fd, INERT_MAX, &zoneinfo, &len) != 0)
        zoneinfo = NULL;
    if (fd >= 0)
        close(fd);
    long page = sysconf(_SC_PAGESIZE);
    topo_add_uninitialized(t, total, zoneinfo, page > 0 ? (uint64_t)page : 0);
    free(zoneinfo);
}

/*
 * hwloc keeps only each node's total. libnuma reads total and free from the
 * node's meminfo, now: a cached topology may predate memory hotplug. A
 * kernel without NUMA has no such file, and the sizes stay as they were.
 * `all_nodes`: every node of the machine with memory is allowed, so that
 * its memory is theirs.
 */
static void load_memory(struct topo *t, bool all_nodes)
{
    if (t->source == TOPO_HOST) {
        uint64_t before = all_nodes ? machine_memory() : 0;
        for (size_t i = 0; i < t->nnodes; i++) {
            long long freemem = 0;
            long long total = numa_node_size64((int)t->nodes[i].os_index, &freemem);
            if (total >= 0 && freemem >= 0) {
                t->nodes[i].mem_total = (uint64_t)total;
                t->nodes[i].mem_free = (uint64_t)freemem;
            }
        }
        if (all_nodes)
            uninitialized_memory(t, before);
    }
    for (size_t i = 0; i < t->nnodes; i++)
        t->memory_known = t->memory_known || t->nodes[i].mem_total > 0;
    for (size_t i = 0; i < t->nnodes; i++)
        /* Some XMLs carry no memory sizes at all; then every node has memory. */
        t->nodes[i].has_memory = t->nodes[i].mem_total > 0 || !t->memory_known;
}

/*
 * The nodes the kernel lets this process allocate on (its cpuset's:
 * get_mempolicy(MPOL_F_MEMS_ALLOWED)) narrow what the cgroup files said.
 * They are the truth where a cgroup namespace hides whose files those
 * are; the CPUs need no such check, as the affinity already holds the
 * process to its cpuset's. When the call fails, the cgroup's say stands:
 * a kernel without NUMA, or a seccomp filter (Docker's default profile
 * refuses get_mempolicy without CAP_SYS_NICE), must not leave no node at
 * all. libnuma's numa_get_mems_allowed() would: it returns an empty set
 * then, and prints its own line to stderr.
 */
static void kernel_mems(hwloc_bitmap_t *allowed)
{
    /*
     * Room for every node id the kernel may have, as it requires; maxnode
     * is one more than the bits the mask holds, as libnuma passes it.
     */
    unsigned long mask[(BITMAP_MAX_INDEX + 1) / (8 * sizeof(unsigned long))] = {0};
    if (get_mempolicy(NULL, mask, 8 * sizeof(mask) + 1, NULL, MPOL_F_MEMS_ALLOWED) != 0)
        return;
    hwloc_bitmap_t k = hwloc_bitmap_alloc();
    hwloc_bitmap_from_ulongs(k, sizeof(mask) / sizeof(mask[0]), mask);
    if (*allowed) {
        hwloc_bitmap_and(*allowed, *allowed, k);
        hwloc_bitmap_free(k);
    } else {
        *allowed = k;
    }
}

/* A cgroup's list as an allowed set; NULL (everything) when it is unknown or unreadable. */
static hwloc_bitmap_t allowed_set(char *list)
{
    hwloc_bitmap_t set = NULL;
    if (list) {
        set = hwloc_bitmap_alloc();
        if (*list == '\0')
            hwloc_bitmap_zero(set);
        else if (!bitmap_parse(set, list)) {
            hwloc_bitmap_free(set);
            set = NULL;
        }
    }
    free(list);
    return set;
}

/* Whether every node of the machine with memory is among t's allowed ones. */
static bool every_memory_node(const struct machine *m, const struct topo *t)
{
    for (size_t j = 0; j < m->nnodes; j++)
        if (m->nodes[j].memory > 0 && topo_node_index(t, m->nodes[j].os_index) < 0)
            return false;
    return true;
}

/* The machine as this process may use it: the planner's struct topo. Frees m. */
static void narrow(struct topo *t, struct machine *m)
{
    t->cpus = hwloc_bitmap_dup(m->online);
    if (m->allowed_cpus)
        hwloc_bitmap_and(t->cpus, t->cpus, m->allowed_cpus);
    t->offline = hwloc_bitmap_dup(m->complete); /* all that exist */
    hwloc_bitmap_andnot(t->offline, t->offline, m->online);
    load_nodes(m, t);
    load_memory(t, every_memory_node(m, t));
    load_cores(m, t);
    load_kinds(m, t);
    machine_free(m);
    t->binding = hwloc_bitmap_dup(t->cpus); /* the host's own is read by the caller */
}

bool topo_load(struct topo *t, const char *spec, const struct state_dir *cache, struct err *e)
{
    memset(t, 0, sizeof(*t));
    /* Our HWLOC_* hold for this call only; the caller's values come back after. */
    char *saved[NLOAD_ENV];
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        const char *v = getenv(load_env[i].name);
        saved[i] = v ? xstrdup(v) : NULL;
        setenv(load_env[i].name, load_env[i].value, 1);
    }
    struct machine m;
    bool ok = spec ? load_spec(spec, t, &m, e) : load_host(t, cache, &m, e);
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        if (saved[i])
            setenv(load_env[i].name, saved[i], 1);
        else
            unsetenv(load_env[i].name);
        free(saved[i]);
    }
    if (!ok) {
        topo_free(t);
        return false;
    }
    if (t->source == TOPO_HOST) {
        /* this process's, never cached: its cgroup may differ from the writer's */
        char *cpus, *mems;
        cgroup_cpuset(&cpus, &mems);
        m.allowed_cpus = allowed_set(cpus);
        m.allowed_nodes = allowed_set(mems);
        kernel_mems(&m.allowed_nodes);
    }
    narrow(t, &m);
    if (t->source == TOPO_HOST && thread_cpus(0, t->binding) < 0) {
        err_set(e, "cannot read this process's CPU affinity: %s", strerror(errno));
        topo_free(t);
        return false;
    }
    return true;
}

char *topo_cache_text(const char *spec, struct err *e)
{
    struct topo t;
    struct machine m;
    memset(&t, 0, sizeof(t));
    char *text = NULL;
    if (load_spec(spec, &t, &m, e)) {
        text = cache_format(&m);
        machine_free(&m);
    }
    topo_free(&t);
    return text;
}

bool topo_parse_cache(struct topo *t, const char *text, struct err *e)
{
    memset(t, 0, sizeof(*t));
    struct machine m;
    char *copy = xstrdup(text), why[128];
    bool ok = cache_parse(copy, CPUS_UNKNOWN_MAX, NULL, &m, why, sizeof(why));
    free(copy);
    if (!ok) {
        err_set(e, "%s", why);
        return false;
    }
    t->source = TOPO_XML;
    t->desc = xstrdup("a topology cache");
    narrow(t, &m);
    return true;
}

void topo_free(struct topo *t)
{
    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_free(t->nodes[i].cpus);
    free(t->nodes);
    for (size_t i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->cores[i]);
    free(t->cores);
    for (size_t i = 0; i < t->nkinds; i++)
        hwloc_bitmap_free(t->kinds[i].cpus);
    free(t->kinds);
    hwloc_bitmap_free(t->cpus);
    hwloc_bitmap_free(t->offline);
    hwloc_bitmap_free(t->binding);
    free(t->distance);
    free(t->desc);
    free(t->cache_note);
    free(t->memory_note);
    memset(t, 0, sizeof(*t));
}
