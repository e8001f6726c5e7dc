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
 * CPUs, tens on hundreds. Importing hwloc's own XML export of the same
 * discovery takes a fraction of that and no sysfs reads. So the host is
 * discovered once and exported, every CPU and node allowed, to topology.xml
 * in the state directory. The file starts with a key made of what can
 * change the machine under a running kernel (boot id, online and possible
 * CPUs, online nodes and which have CPUs or memory) and of the tunerun and
 * libhwloc files themselves: any difference and the machine is discovered
 * again. What differs per process is never cached: hwloc reads this
 * process's allowed CPUs and nodes (its cgroup cpuset) afresh, tunerun its
 * affinity, and libnuma every node's memory. Any HWLOC_* variable of the
 * caller's own turns the cache off, since it may change what hwloc finds.
 */
#include "topo.h"
#include "state.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <fcntl.h>
#include <hwloc.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * What tunerun sets in its own environment for the load, and puts back
 * afterwards. No plugin is needed: blacklisting them saves the dlopen()s,
 * and pointing the plugin path nowhere saves scanning the directory. The
 * x86 backend only adds CPUID details the planner never reads.
 */
static const struct {
    const char *name, *value;
} load_env[] = {
    {"HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml"},
    {"HWLOC_PLUGINS_PATH", "/nonexistent/tunerun-needs-no-hwloc-plugins"},
    {"HWLOC_COMPONENTS", "-x86"},
};
#define NLOAD_ENV (sizeof(load_env) / sizeof(load_env[0]))

int topo_node_index(const struct topo *t, unsigned os_index)
{
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].os_index == os_index)
            return (int)i;
    return -1;
}

unsigned topo_distance(const struct topo *t, size_t a, size_t b)
{
    if (t->distance)
        return t->distance[a * t->nnodes + b];
    return a == b ? 10 : 20;
}

/* Ordinary memory wins a tie for CPU home over the special kinds. */
static int subtype_rank(const char *subtype)
{
    if (subtype == NULL || *subtype == '\0' || strcasecmp(subtype, "DRAM") == 0)
        return 0;
    return 1;
}

static bool better_home(hwloc_obj_t a, hwloc_obj_t b)
{
    int wa = hwloc_bitmap_weight(a->cpuset), wb = hwloc_bitmap_weight(b->cpuset);
    if (wa != wb)
        return wa < wb;
    int ra = subtype_rank(a->subtype), rb = subtype_rank(b->subtype);
    if (ra != rb)
        return ra < rb;
    return a->os_index < b->os_index;
}

/*
 * Disallowed CPUs and nodes (outside the cgroup cpuset) stay in the
 * topology, and topo_load() leaves them out itself: hwloc would otherwise
 * count a removed CPU in the complete cpuset, as if it were offline, and
 * the cache must hold the whole machine anyway.
 */
#define BASE_FLAGS                                                                                 \
    (HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |                   \
     HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS | HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED)

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

/* An XML file or a synthetic description: for plan, topo and tests. */
static hwloc_topology_t load_spec(const char *spec, struct topo *t, struct err *e)
{
    hwloc_topology_t topo;
    bool synthetic = strncmp(spec, "synthetic:", 10) == 0;
    t->source = synthetic ? TOPO_SYNTHETIC : TOPO_XML;
    t->desc = xstrdup(spec);
    if (!new_topology(&topo, false, BASE_FLAGS, e))
        return NULL;
    if (synthetic && hwloc_topology_set_synthetic(topo, spec + 10) < 0)
        err_set(e, "--topology %s: not a valid hwloc synthetic description", spec);
    else if (!synthetic && hwloc_topology_set_xml(topo, spec) < 0)
        err_set(e, "--topology %s: cannot load hwloc XML: %s", spec, strerror(errno));
    else if (hwloc_topology_load(topo) < 0)
        err_set(e, "cannot load the topology from %s: %s", spec, strerror(errno));
    else
        return topo;
    hwloc_topology_destroy(topo);
    return NULL;
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
#define CACHE_NAME "topology.xml"
#define CACHE_MAX  (64 << 20) /* an XML export of 4096 PUs is well under 4 MiB */

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
 * The key a cache must have been written under; NULL when there is no boot
 * id. hwloc's API version is the same for many releases, so the library
 * file itself, and tunerun's binary (its filters and flags), are in it.
 */
static char *cache_key(void)
{
    Dl_info lib;
    const char *libpath = dladdr((void *)hwloc_topology_init, &lib) ? lib.dli_fname : NULL;
    char *exe = file_id("/proc/self/exe"), *hw = file_id(libpath);
    char *key = xasprintf("tunerun topology cache 2\ntunerun %s\nhwloc %s %s\n", exe,
                          libpath ? libpath : "-", hw);
    free(exe);
    free(hw);
    for (size_t i = 0; i < NKEY_FILES; i++) {
        char v[8192];
        if (!read_line_file(key_files[i], v, sizeof(v))) {
            if (i == 0) {
                free(key);
                return NULL;
            }
            strcpy(v, "-");
        }
        char *k = xasprintf("%s%s %s\n", key, key_files[i], v);
        free(key);
        key = k;
    }
    return key;
}

/* The cached XML (NUL-terminated) when written under `key`, else NULL. */
static char *cache_read(struct topo *t, const struct state_dir *sd, const char *key, size_t *len)
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
        cache_note(t, "%s/%s was written for another boot or CPU/node set", sd->path, CACHE_NAME);
        free(text);
        return NULL;
    }
    memmove(text, text + klen, n - klen + 1);
    *len = n - klen;
    return text;
}

/*
 * This machine from the cache. hwloc asks the kernel for this process's
 * allowed CPUs and nodes, as a discovery would.
 */
static hwloc_topology_t import_host(const char *xml, size_t len, struct err *e)
{
    hwloc_topology_t topo;
    unsigned long flags = BASE_FLAGS | HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                          HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES;
    if (len >= INT_MAX) {
        err_set(e, "topology XML too large");
        return NULL;
    }
    if (!new_topology(&topo, true, flags, e))
        return NULL;
    if (hwloc_topology_set_xmlbuffer(topo, xml, (int)len + 1) < 0 ||
        hwloc_topology_load(topo) < 0) {
        err_set(e, "hwloc cannot import it: %s", strerror(errno));
        hwloc_topology_destroy(topo);
        return NULL;
    }
    return topo;
}

static hwloc_topology_t discover_host(struct err *e)
{
    hwloc_topology_t topo;
    if (!new_topology(&topo, true, BASE_FLAGS, e))
        return NULL;
    if (hwloc_topology_load(topo) < 0) {
        err_set(e, "cannot discover this machine's topology: %s", strerror(errno));
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

/*
 * The cache holds the whole machine: every CPU and node allowed, whatever
 * the cgroup of the launch that wrote it. Each reader's own allowed sets
 * come from its own cgroup when it imports.
 */
static void cache_write(struct topo *t, const struct state_dir *sd, const char *key,
                        hwloc_topology_t found)
{
    hwloc_topology_t whole;
    char *xml;
    int xmllen;
    struct err we;
    if (hwloc_topology_dup(&whole, found) < 0) {
        cache_note(t, "cannot copy the topology for the cache: %s", strerror(errno));
        t->cache = TOPO_CACHE_FAILED;
        return;
    }
    if (hwloc_topology_allow(whole, NULL, NULL, HWLOC_ALLOW_FLAG_ALL) < 0 ||
        hwloc_topology_export_xmlbuffer(whole, &xml, &xmllen, 0) < 0 || xmllen < 1) {
        cache_note(t, "hwloc cannot export the topology for the cache: %s", strerror(errno));
        t->cache = TOPO_CACHE_FAILED;
    } else {
        const char *bufs[] = {key, xml};
        size_t lens[] = {strlen(key), (size_t)xmllen - 1};
        if (state_write(sd, CACHE_NAME, bufs, lens, 2, &we)) {
            t->cache = TOPO_CACHE_WRITTEN;
            cache_note(t, "discovered and cached in %s/%s", sd->path, CACHE_NAME);
        } else {
            t->cache = TOPO_CACHE_FAILED;
            cache_note(t, "%s", we.msg);
        }
        hwloc_free_xmlbuffer(whole, xml);
    }
    hwloc_topology_destroy(whole);
}

static hwloc_topology_t load_host(struct topo *t, const struct state_dir *sd, struct err *e)
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
        return NULL;
    }
    char *key = NULL, var[64];
    if (sd == NULL || sd->fd < 0)
        cache_note(t, "no state directory, so no topology cache");
    else if (foreign_hwloc_variable(var, sizeof(var)))
        /* HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES and others change what hwloc finds. */
        cache_note(t, "%s is set, so the topology cache is not used", var);
    else if ((key = cache_key()) == NULL)
        cache_note(t, "no boot id in /proc, so no topology cache");

    size_t len;
    char *cached = key ? cache_read(t, sd, key, &len) : NULL;
    if (cached) {
        hwloc_topology_t topo = import_host(cached, len, e);
        free(cached);
        if (topo) {
            t->cache = TOPO_CACHE_HIT;
            cache_note(t, "topology from the cache %s/%s", sd->path, CACHE_NAME);
            free(key);
            return topo;
        }
        cache_note(t, "%s/%s: %s", sd->path, CACHE_NAME, e->msg);
    }
    hwloc_topology_t found = discover_host(e);
    if (found && key)
        cache_write(t, sd, key, found);
    free(key);
    return found;
}

/* The allowed nodes; a disallowed one is no CPU's home and receives no memory. */
static void load_nodes(hwloc_topology_t topo, struct topo *t)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_const_nodeset_t allowed = hwloc_topology_get_allowed_nodeset(topo);
    t->nodes = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*t->nodes));
    hwloc_obj_t *objs = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*objs));
    bool sizes = false; /* an XML without memory sizes makes every node look memoryless */
    for (int j = 0; j < n; j++)
        sizes |= hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)j)
                     ->attr->numanode.local_memory > 0;
    for (int j = 0; j < n; j++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)j);
        /*
         * A cpuset's mems (cgroup v2's cpuset.mems.effective) never list a
         * memoryless node, allowed or not: such a node is ours when any of
         * its CPUs is.
         */
        bool memoryless = sizes && o->attr->numanode.local_memory == 0;
        if (memoryless ? !hwloc_bitmap_intersects(o->cpuset, t->cpus)
                       : !hwloc_bitmap_isset(allowed, o->os_index))
            continue;
        size_t i = t->nnodes++;
        objs[i] = o;
        struct topo_node *nd = &t->nodes[i];
        nd->os_index = o->os_index;
        nd->cpus = hwloc_bitmap_alloc();
        nd->mem_total = o->attr->numanode.local_memory;
        nd->mem_free = nd->mem_total;
        if (o->subtype)
            snprintf(nd->subtype, sizeof(nd->subtype), "%s", o->subtype);
    }
    /* hwloc's logical order is by locality, not os index; plans read better by os index. */
    for (size_t i = 1; i < t->nnodes; i++)
        for (size_t j = i; j > 0 && t->nodes[j - 1].os_index > t->nodes[j].os_index; j--) {
            struct topo_node tmp = t->nodes[j];
            t->nodes[j] = t->nodes[j - 1];
            t->nodes[j - 1] = tmp;
            hwloc_obj_t to = objs[j];
            objs[j] = objs[j - 1];
            objs[j - 1] = to;
        }
    /* Give each PU one home node. */
    int pu;
    hwloc_bitmap_foreach_begin(pu, t->cpus)
    {
        hwloc_obj_t best = NULL;
        size_t best_i = 0;
        for (size_t i = 0; i < t->nnodes; i++)
            if (hwloc_bitmap_isset(objs[i]->cpuset, (unsigned)pu) &&
                (best == NULL || better_home(objs[i], best))) {
                best = objs[i];
                best_i = i;
            }
        if (best)
            hwloc_bitmap_set(t->nodes[best_i].cpus, (unsigned)pu);
    }
    hwloc_bitmap_foreach_end();

    /* Distances between our nodes, when the source has a NUMA latency matrix. */
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    if (t->nnodes > 1 &&
        hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
        nr == 1) {
        unsigned *m = xcalloc(t->nnodes * t->nnodes, sizeof(*m));
        bool complete = true;
        for (size_t a = 0; a < t->nnodes && complete; a++)
            for (size_t b = 0; b < t->nnodes && complete; b++) {
                hwloc_uint64_t ab, ba;
                if (hwloc_distances_obj_pair_values(d, objs[a], objs[b], &ab, &ba) < 0)
                    complete = false;
                else
                    m[a * t->nnodes + b] = (unsigned)ab;
            }
        if (complete)
            t->distance = m;
        else
            free(m);
        hwloc_distances_release(topo, d);
    }
    free(objs);
}

static void load_cores(hwloc_topology_t topo, struct topo *t)
{
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->cores = xcalloc(n > 0 ? (size_t)n : 0, sizeof(*t->cores));
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i);
        hwloc_bitmap_t pus = hwloc_bitmap_dup(o->cpuset);
        hwloc_bitmap_and(pus, pus, t->cpus);
        if (hwloc_bitmap_iszero(pus)) {
            hwloc_bitmap_free(pus);
            continue;
        }
        t->cores[t->ncores++] = pus;
    }
}

/*
 * hwloc keeps only each node's total. libnuma reads total and free from the
 * node's meminfo, now: a cached topology may predate memory hotplug.
 */
static void load_memory(struct topo *t)
{
    if (t->source == TOPO_HOST && numa_available() >= 0)
        for (size_t i = 0; i < t->nnodes; i++) {
            long long freemem = 0;
            long long total = numa_node_size64((int)t->nodes[i].os_index, &freemem);
            if (total >= 0 && freemem >= 0) {
                t->nodes[i].mem_total = (uint64_t)total;
                t->nodes[i].mem_free = (uint64_t)freemem;
            }
        }
    for (size_t i = 0; i < t->nnodes; i++)
        t->memory_known = t->memory_known || t->nodes[i].mem_total > 0;
    for (size_t i = 0; i < t->nnodes; i++)
        /* Some XMLs carry no memory sizes at all; then every node has memory. */
        t->nodes[i].has_memory = t->nodes[i].mem_total > 0 || !t->memory_known;
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

    bool ok = false;
    hwloc_topology_t topo = spec ? load_spec(spec, t, e) : load_host(t, cache, e);
    if (topo == NULL)
        goto restore;
    t->cpus = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(topo));
    hwloc_bitmap_and(t->cpus, t->cpus, hwloc_topology_get_allowed_cpuset(topo));
    t->offline = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(topo)); /* all that exist */
    hwloc_bitmap_andnot(t->offline, t->offline, hwloc_topology_get_topology_cpuset(topo));
    load_nodes(topo, t);
    load_memory(t);
    load_cores(topo, t);

    t->binding = hwloc_bitmap_alloc();
    if (t->source != TOPO_HOST) {
        hwloc_bitmap_copy(t->binding, t->cpus);
        ok = true;
    } else if (hwloc_get_cpubind(topo, t->binding, HWLOC_CPUBIND_THREAD) < 0) {
        err_set(e, "cannot read this process's CPU affinity: %s", strerror(errno));
    } else {
        ok = true;
    }
    hwloc_topology_destroy(topo);
restore:
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        if (saved[i])
            setenv(load_env[i].name, saved[i], 1);
        else
            unsetenv(load_env[i].name);
        free(saved[i]);
    }
    if (!ok)
        topo_free(t);
    return ok;
}

void topo_free(struct topo *t)
{
    for (size_t i = 0; i < t->nnodes; i++)
        hwloc_bitmap_free(t->nodes[i].cpus);
    free(t->nodes);
    for (size_t i = 0; i < t->ncores; i++)
        hwloc_bitmap_free(t->cores[i]);
    free(t->cores);
    hwloc_bitmap_free(t->cpus);
    hwloc_bitmap_free(t->offline);
    hwloc_bitmap_free(t->binding);
    free(t->distance);
    free(t->desc);
    free(t->cache_note);
    memset(t, 0, sizeof(*t));
}
