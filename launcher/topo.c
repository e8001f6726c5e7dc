/*
 * topo.c - the machine as the planner sees it, loaded fast: from hwloc
 * (topo_hwloc.c), or for this machine from the topology cache
 * (topo_cache.c), then narrowed to what this process may use
 * (topo_narrow.c).
 *
 * A fresh hwloc topology costs about 4.5 ms with Debian's defaults, nearly
 * all of it dlopen()ing plugins we never use (PCI, OpenCL, GL, libxml2).
 * We blacklist those before hwloc_topology_init(), keep only the object
 * types the planner reads, and put the environment back as it was before
 * returning, so no HWLOC_* of ours reaches the service.
 *
 * Even filtered, discovering this machine reads a few files per CPU from
 * sysfs: about half a millisecond on two CPUs, tens on hundreds. So the
 * host is discovered once, and what the planner reads of it is written to
 * topology.cache in the state directory, under a key of what can change
 * the machine under a running kernel; a warm launch builds no hwloc
 * topology at all. What differs per process is never cached: this
 * process's allowed CPUs and nodes and its affinity, and every node's
 * memory, are read afresh. Any HWLOC_* variable of the caller's own turns
 * the cache off, since it may change what hwloc finds.
 */
#include "topo_internal.h"
#include "cgroup.h"
#include "procs.h"
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
 *
 * An XML's load also sets HWLOC_XML_VERBOSE, for hwloc's reason when it
 * refuses the file (topo_hwloc.c), and puts it back the same way. It is
 * not in this table, which is what foreign_hwloc_variable() passes over:
 * a caller's own still turns the host's cache off, as any HWLOC_* of
 * theirs does.
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

size_t topo_cpu_nodes(const struct topo *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        n += !hwloc_bitmap_iszero(t->nodes[i].cpus);
    return n;
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
void topo_machine_free(struct machine *m)
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
    free(m->present);
    memset(m, 0, sizeof(*m));
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
 * Our HWLOC_* hold while hwloc builds a topology, and only then (a warm
 * launch builds none); the caller's values come back after, so that no
 * HWLOC_* of ours reaches the service.
 */
struct hwloc_env {
    char *saved[NLOAD_ENV];
};

static void hwloc_env_set(struct hwloc_env *env)
{
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        const char *v = getenv(load_env[i].name);
        env->saved[i] = v ? xstrdup(v) : NULL;
        setenv(load_env[i].name, load_env[i].value, 1);
    }
}

static void hwloc_env_restore(struct hwloc_env *env)
{
    for (size_t i = 0; i < NLOAD_ENV; i++) {
        if (env->saved[i])
            setenv(load_env[i].name, env->saved[i], 1);
        else
            unsetenv(load_env[i].name);
        free(env->saved[i]);
    }
}

/* An XML export or a synthetic description, through hwloc. */
static bool load_spec(const char *spec, struct topo *t, struct machine *m, struct err *e)
{
    struct hwloc_env env;
    hwloc_env_set(&env);
    bool ok = topo_load_spec(spec, t, m, e);
    hwloc_env_restore(&env);
    return ok;
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
    char *key = NULL, var[64];
    struct err why;
    const char *nokey;
    int max;
    hwloc_bitmap_t online = hwloc_bitmap_alloc();
    if (sd == NULL || sd->fd < 0)
        topo_cache_note(t, "no state directory, so no topology cache");
    else if (foreign_hwloc_variable(var, sizeof(var)))
        /* HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES and others change what hwloc finds. */
        topo_cache_note(t, "%s is set, so the topology cache is not used", var);
    else if ((key = topo_cache_key(&max, online, &nokey)) == NULL)
        topo_cache_note(t, "%s", nokey);

    char *cached = key ? topo_cache_read(t, sd, key) : NULL;
    if (cached) {
        bool ok = topo_cache_parse(cached, max, online, m, &why);
        free(cached);
        if (ok) {
            t->cache = TOPO_CACHE_HIT;
            topo_cache_note(t, "topology from the cache %s/%s", sd->path, CACHE_NAME);
            free(key);
            hwloc_bitmap_free(online);
            return true;
        }
        topo_cache_note(t, "%s/%s: %s", sd->path, CACHE_NAME, why.msg);
    }
    struct hwloc_env env;
    hwloc_env_set(&env);
    hwloc_topology_t found = topo_discover_host(t, e);
    hwloc_env_restore(&env);
    if (found) {
        topo_machine_from_hwloc(found, m, false); /* this process's allowed sets come later */
        hwloc_topology_destroy(found);
        topo_machine_zones(m);
        topo_machine_tiers(m);
        /* CPUs and no core: sysfs's CPU topology is masked, and hwloc guessed */
        if (key && m->ncores == 0 && !hwloc_bitmap_iszero(m->online))
            topo_cache_note(t, "hwloc found no cores (sysfs gives no CPU topology: masked?), so "
                               "what it found is not cached");
        else if (key)
            topo_cache_write(t, sd, key, m);
    }
    free(key);
    hwloc_bitmap_free(online);
    return found != NULL;
}
/*
 * What this process may use of this machine, never cached (its cgroup may
 * differ from the writer's): its affinity into `affinity`, the CPUs its
 * cgroup's cpuset allows, and the memory nodes the kernel lets it
 * allocate on. The affinity always lies within the cpuset (the kernel
 * holds it there), so where it leaves out no online CPU the cpuset leaves
 * out none either, and its files are read only where it does: to tell a
 * cpuset from a taskset.
 */
static bool allowed_here(struct machine *m, hwloc_bitmap_t affinity, struct err *e)
{
    if (thread_cpus(0, affinity) < 0) {
        err_set(e, "cannot read this process's CPU affinity: %s", strerror(errno));
        return false;
    }
    if (!hwloc_bitmap_isincluded(m->online, affinity)) {
        char *cpus, *mems;
        cgroup_cpuset(&cpus, &mems);
        m->allowed_cpus = topo_allowed_set(cpus);
        free(mems); /* the kernel's word on them follows */
    }
    m->allowed_nodes = topo_kernel_mems();
    return true;
}

bool topo_load(struct topo *t, const char *spec, const struct state_dir *cache, struct err *e)
{
    memset(t, 0, sizeof(*t));
    struct machine m;
    bool ok = spec ? load_spec(spec, t, &m, e) : load_host(t, cache, &m, e);
    if (!ok) {
        topo_free(t);
        return false;
    }
    hwloc_bitmap_t affinity = hwloc_bitmap_alloc();
    if (t->source == TOPO_HOST && !allowed_here(&m, affinity, e)) {
        hwloc_bitmap_free(affinity);
        topo_machine_free(&m);
        topo_free(t);
        return false;
    }
    topo_narrow(t, &m);
    if (t->source == TOPO_HOST)
        hwloc_bitmap_copy(t->binding, affinity);
    hwloc_bitmap_free(affinity);
    return true;
}

char *topo_cache_text(const char *spec, struct err *e)
{
    struct topo t;
    struct machine m;
    memset(&t, 0, sizeof(t));
    char *text = NULL;
    if (load_spec(spec, &t, &m, e)) {
        text = topo_cache_format(&m);
        topo_machine_free(&m);
    }
    topo_free(&t);
    return text;
}

bool topo_parse_cache(struct topo *t, const char *text, struct err *e)
{
    memset(t, 0, sizeof(*t));
    struct machine m;
    char *copy = xstrdup(text);
    bool ok = topo_cache_parse(copy, CPUS_UNKNOWN_MAX, NULL, &m, e);
    free(copy);
    if (!ok)
        return false;
    t->source = TOPO_XML;
    t->desc = xstrdup("a topology cache");
    topo_narrow(t, &m);
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
