/*
 * topo_hwloc.c - a machine from hwloc: this host discovered, an XML
 * export, or a synthetic description.
 *
 * Which CPUs belong to which node: hwloc gives a CPU-less node (MCDRAM,
 * CXL, PMEM) the cpuset of the CPUs near it, so a PU can sit under several
 * nodes. Each PU gets exactly one home: the covering node with the smallest
 * cpuset, preferring ordinary DRAM, then the lowest os index. The cpusets
 * compared are the machine's, not those cut down to this process's cgroup,
 * so a PU's home does not depend on who launches. A node that is home to no
 * PU is CPU-less and never a CPU home for the planner.
 */
#include "topo_internal.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
/*
 * What hwloc knows of a node's speed: HMAT's latency and bandwidth from
 * its own CPUs (on this machine hwloc reads them from sysfs' access1, else
 * access0; an export carries them as memattrs), and an export's MemoryTier
 * (hwloc 2.10 and later write it; 0 is the tier with the most bandwidth).
 * hwloc keeps HMAT's values for the node's local initiator alone, which it
 * gives the node's own cpuset, CPU-less nodes included.
 */
static void node_speed(hwloc_topology_t topo, hwloc_obj_t o, struct mnode *nd)
{
    nd->tier = -1;
    const char *tier = info_value(o->infos, o->infos_count, "MemoryTier");
    char *end;
    long v = tier ? strtol(tier, &end, 10) : -1;
    if (tier && *tier && *end == '\0' && v >= 0 && v < 1000) {
        nd->tier = (int)v;
        nd->tier_hwloc = true;
    }
    if (hwloc_bitmap_iszero(o->cpuset))
        return;
    struct hwloc_location at = {.type = HWLOC_LOCATION_TYPE_CPUSET, .location.cpuset = o->cpuset};
    hwloc_uint64_t value;
    if (hwloc_memattr_get_value(topo, HWLOC_MEMATTR_ID_LATENCY, o, &at, 0, &value) == 0 &&
        value < UINT_MAX)
        nd->latency_ns = (unsigned)value;
    if (hwloc_memattr_get_value(topo, HWLOC_MEMATTR_ID_BANDWIDTH, o, &at, 0, &value) == 0 &&
        value < UINT_MAX)
        nd->bandwidth_mibs = (unsigned)value;
}

void topo_machine_from_hwloc(hwloc_topology_t topo, struct machine *m, bool allowed)
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
        node_speed(topo, o, nd);
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
 * the cache must hold the whole machine anyway. Memory attributes stay on:
 * they carry HMAT's latency and bandwidth (node_speed()), read once per
 * discovery, which the cache then keeps.
 */
#define BASE_FLAGS                                                                                 \
    (HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING | HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED)

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
static bool machine_consistent(const struct machine *m, const char *spec, struct err *e)
{
    if (hwloc_bitmap_last(m->complete) > (int)BITMAP_MAX_INDEX) {
        err_set(e, "--topology %s: a CPU numbered above %lu; Linux numbers them below it", spec,
                BITMAP_MAX_INDEX);
        return false;
    }
    for (size_t a = 0; a < m->nnodes; a++) {
        if (m->nodes[a].os_index >= MAX_NODES) {
            err_set(e, "--topology %s: a NUMA node numbered above %d; Linux numbers them below it",
                    spec, MAX_NODES - 1);
            return false;
        }
        for (size_t b = a + 1; b < m->nnodes; b++)
            if (m->nodes[a].os_index == m->nodes[b].os_index) {
                err_set(e, "--topology %s: two NUMA nodes numbered %u; not a consistent export",
                        spec, m->nodes[a].os_index);
                return false;
            }
    }
    return true;
}

/*
 * Why hwloc refuses an XML. hwloc 2.9 knows (a v3 export, a truncated
 * one) but its load fails with EINVAL alone: the reason goes to stderr,
 * and only when HWLOC_XML_VERBOSE was set the first time the process did
 * anything with XML (hwloc__xml_verbose() reads it once). So an XML is
 * loaded with the variable set and fd 2 on a memory file, and the reason
 * is read back from there. A memfd, not a pipe: an export's warnings may
 * be more than a pipe holds, and hwloc would block on it. The host is
 * never loaded so: a launch pays for none of it.
 *
 * A caller's own HWLOC_XML_VERBOSE (nonzero) asked to see what hwloc
 * says: it still does, all of it, once fd 2 is back. Without it hwloc's
 * warnings on an export it loads are not shown, as they never were.
 */
struct hwloc_said {
    int memfd;     /* where fd 2 went while hwloc loaded, or -1: nothing captured */
    int stderr_fd; /* fd 2 as it was, meanwhile */
    char *verbose; /* the caller's HWLOC_XML_VERBOSE, or NULL */
};

static void xml_verbose_set(struct hwloc_said *s)
{
    const char *v = getenv("HWLOC_XML_VERBOSE");
    s->memfd = s->stderr_fd = -1;
    s->verbose = v ? xstrdup(v) : NULL;
    setenv("HWLOC_XML_VERBOSE", "1", 1);
}

static void xml_verbose_restore(struct hwloc_said *s)
{
    if (s->verbose)
        setenv("HWLOC_XML_VERBOSE", s->verbose, 1);
    else
        unsetenv("HWLOC_XML_VERBOSE");
    free(s->verbose);
    s->verbose = NULL;
}

/* fd 2 onto a memory file, where that can be had; else hwloc's lines go where they did. */
static void stderr_capture(struct hwloc_said *s)
{
    int memfd = memfd_create("tunerun-hwloc-stderr", MFD_CLOEXEC);
    int saved = memfd < 0 ? -1 : fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    fflush(stderr);
    if (saved >= 0 && dup2(memfd, STDERR_FILENO) == STDERR_FILENO) {
        s->memfd = memfd;
        s->stderr_fd = saved;
        return;
    }
    if (saved >= 0)
        close(saved);
    if (memfd >= 0)
        close(memfd);
}

/* fd 2 back as it was; the memory file stays open for hwloc_reason(). */
static void stderr_restore(struct hwloc_said *s)
{
    if (s->stderr_fd < 0)
        return;
    fflush(stderr);
    while (dup2(s->stderr_fd, STDERR_FILENO) < 0 && errno == EINTR)
        ;
    close(s->stderr_fd);
    s->stderr_fd = -1;
}

/* What a line of hwloc's says of why a load failed, best last. */
enum said { SAID_NOTHING, SAID_WARNING, SAID_PARSER, SAID_REASON };

/*
 * A line of hwloc 2.9's, made one of a message (its "xmlbuffer: " prefix,
 * its banner's stars and its final period gone), and what it says. The
 * minimalistic parser (the only one tunerun loads: the libxml2 plugin is
 * blacklisted, and Debian's libhwloc15 does not link libxml2) says it
 * failed and, on a second line, to enable libxml2, which tunerun's user
 * cannot: only its first sentence is kept. "XML component discovery
 * failed" says no more than the failure itself; "ignoring ..." lines are
 * what hwloc passed over, the reason only where nothing else is.
 */
static enum said hwloc_line(char *line, bool *in_banner)
{
    static const char *const nothing[] = {
        "XML component discovery failed",
        "generated by hwloc, try enabling full XML support with libxml2",
        "Pass --enable-32bits-pci-domain", /* the rest of a PCI warning */
        "(warning: it would break the library ABI",
    };
    static const char parser[] = "Failed to parse XML input with the minimalistic parser";
    size_t len = strcspn(line, "\n");
    line[len] = '\0';
    /* a banner of stars: its first line says what happened, the rest the details */
    bool banner = *line == '*';
    char *text = line + strspn(line, "* ");
    if (banner && (*in_banner || *text == '\0')) {
        *in_banner = *in_banner || *text != '\0';
        return SAID_NOTHING;
    }
    *in_banner = banner;
    if (strncmp(text, "xmlbuffer: ", 11) == 0)
        text += 11;
    memmove(line, text, strlen(text) + 1);
    for (len = strlen(line); len > 0 && (line[len - 1] == '.' || line[len - 1] == ' ');)
        line[--len] = '\0';
    if (len == 0)
        return SAID_NOTHING;
    for (size_t i = 0; i < sizeof(nothing) / sizeof(*nothing); i++)
        if (strncmp(line, nothing[i], strlen(nothing[i])) == 0)
            return SAID_NOTHING;
    if (strncmp(line, parser, sizeof(parser) - 1) == 0) {
        line[sizeof(parser) - 1] = '\0';
        return SAID_PARSER;
    }
    if (strcasestr(line, "ignoring") || strstr(line, "ignored") || strstr(line, "may be invalid"))
        return SAID_WARNING;
    return SAID_REASON;
}

/*
 * The first of hwloc's lines that says most of why it failed (escaped,
 * one line) into why, or "" when it said nothing; closes the memory file.
 * All it said goes to fd 2 as well, when the caller asked for it.
 */
static void hwloc_reason(struct hwloc_said *s, char *why, size_t n)
{
    *why = '\0';
    if (s->memfd < 0)
        return;
    bool replay = s->verbose && atoi(s->verbose) != 0, in_banner = false;
    FILE *f = lseek(s->memfd, 0, SEEK_SET) == 0 ? fdopen(s->memfd, "r") : NULL;
    if (f == NULL) {
        close(s->memfd);
        s->memfd = -1;
        return;
    }
    s->memfd = -1; /* f's now */
    enum said best = SAID_NOTHING;
    char *line = NULL;
    size_t size = 0;
    while (getline(&line, &size, f) > 0) {
        if (replay)
            fputs(line, stderr);
        enum said said = hwloc_line(line, &in_banner);
        if (said > best) {
            best = said;
            str_escaped(why, n, line, 240);
        }
    }
    free(line);
    fclose(f);
}

/* An XML file or a synthetic description: for plan, topo and tests. */
bool topo_load_spec(const char *spec, struct topo *t, struct machine *m, struct err *e)
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
    struct hwloc_said said = {.memfd = -1, .stderr_fd = -1};
    if (!synthetic)
        xml_verbose_set(&said); /* before hwloc first looks at XML (struct hwloc_said) */
    if (!new_topology(&topo, false, BASE_FLAGS, e)) {
        if (!synthetic)
            xml_verbose_restore(&said);
        free(xml);
        return false;
    }
    bool ok = false;
    if (synthetic && hwloc_topology_set_synthetic(topo, spec + 10) < 0) {
        err_set(e, "--topology %s: not a valid hwloc synthetic description", spec);
    } else if (!synthetic && hwloc_topology_set_xmlbuffer(topo, xml, (int)len + 1) < 0) {
        err_set(e, "--topology %s: not an hwloc XML export: %s", spec, strerror(errno));
    } else {
        if (!synthetic)
            stderr_capture(&said);
        int loaded = hwloc_topology_load(topo), error = errno;
        stderr_restore(&said);
        char why[ESCAPED_SIZE(240)];
        hwloc_reason(&said, why, sizeof(why));
        /* hwloc 3 writes version 3.0 unless asked for 2 (its lstopo(1): --export-xml-flags) */
        bool v3 = strncmp(why, "cannot import XML version 3.", 28) == 0;
        if (loaded < 0)
            err_set(
                e, "--topology %s: hwloc cannot load it: %s%s", spec, *why ? why : strerror(error),
                v3 ? " (fix: export it again with hwloc 3's lstopo --export-xml-flags v2 FILE.xml, "
                     "the version hwloc 2 reads)"
                   : "");
        ok = loaded == 0;
    }
    if (!synthetic)
        xml_verbose_restore(&said);
    free(xml);
    if (ok)
        topo_machine_from_hwloc(topo, m, true); /* an XML may say what was allowed */
    hwloc_topology_destroy(topo);
    if (ok && !machine_consistent(m, spec, e)) {
        topo_machine_free(m);
        ok = false;
    }
    return ok;
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
static bool nodes_masked(struct err *e)
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
            err_set(e, "%s/online is over %lu MiB %s", dir_path, INERT_MAX >> 20, fake);
            return true;
        }
        if (error == 0) {
            str_escaped(shown, sizeof(shown), text, 64); /* before the reading cuts it */
            bool none = hwloc_reads_no_node(text);
            free(text);
            if (none)
                err_set(e, "%s/online reads '%s', which names no NUMA node %s", dir_path, shown,
                        fake);
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
        err_set(e,
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
hwloc_topology_t topo_discover_host(struct topo *t, struct err *e)
{
    hwloc_topology_t topo;
    t->guess = hwloc_guesses();
    /* a guess is made without looking at the node directory */
    if (t->guess == NULL && nodes_masked(e))
        return NULL;
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
