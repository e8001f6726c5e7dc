/*
 * topo_cache.c - this machine as the last discovery found it, kept in the
 * state directory (topology.cache) so that a launch builds no hwloc
 * topology.
 *
 * The file starts with a key made of what can change the machine under a
 * running kernel (boot id, online CPUs, nodes with memory, cpufreq) and of
 * the tunerun and libhwloc builds themselves: any difference and the
 * machine is discovered again. Its body is lines of tunerun's own that
 * hwloc's list parser reads back.
 */
#include "topo_internal.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <numa.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * What can change the machine under a running kernel; the cache's key.
 * The CPUs possible and the nodes online are not in it: a reboot (the boot
 * id) is what changes the first, and a node comes and goes with memory
 * (has_memory) or CPUs (cpu/online); the node a CPU is on never changes
 * while it is online.
 */
static const char *const key_files[] = {
    "/proc/sys/kernel/random/boot_id", /* first: without it there is no cache */
    "/sys/devices/system/cpu/online",  /* hotplug, SMT switched off; without it no cache either */
    "/sys/devices/system/node/has_memory", /* memory hotplug, and the node it brings */
};
#define NKEY_FILES (sizeof(key_files) / sizeof(key_files[0]))
#define CACHE_MAX  (64 << 20) /* 4096 PUs and 64 nodes take well under 1 MiB */

void topo_cache_note(struct topo *t, const char *fmt, ...)
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

/* The loaded object that holds `addr`, and its GNU build id, as dl_iterate_phdr() finds them. */
struct loaded {
    const void *addr;
    const char *name; /* "" for the program itself */
    char id[2 * 64 + 1];
    bool found;
};

/* The build id in one PT_NOTE segment, in hex; false when it has none. */
static bool note_build_id(const char *at, size_t size, size_t align, char *hex, size_t n)
{
    align = align == 8 ? 8 : 4; /* notes are 4-aligned, or 8 in an 8-aligned segment */
    for (size_t off = 0; off + sizeof(ElfW(Nhdr)) <= size;) {
        const ElfW(Nhdr) *nh = (const void *)(at + off);
        size_t name = off + sizeof(*nh), desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
        size_t next = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
        if (next > size || next <= off)
            return false;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(at + name, "GNU", 4) == 0 && nh->n_descsz > 0 && 2 * nh->n_descsz < n) {
            for (size_t i = 0; i < nh->n_descsz; i++)
                snprintf(hex + 2 * i, 3, "%02x", (unsigned char)at[desc + i]);
            return true;
        }
        off = next;
    }
    return false;
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct loaded *l = arg;
    uintptr_t addr = (uintptr_t)l->addr;
    bool holds = false;
    for (size_t i = 0; i < info->dlpi_phnum && !holds; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        holds = ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz;
    }
    if (!holds)
        return 0;
    l->found = true;
    l->name = info->dlpi_name;
    for (size_t i = 0; i < info->dlpi_phnum && !l->id[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            note_build_id((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, ph->p_align,
                          l->id, sizeof(l->id));
    }
    return 1;
}

/*
 * Which build of the object holding addr runs: its build id, a hash of
 * its contents that the linker writes in a note (Debian's toolchain
 * always does), read from memory with no system call; where it has none,
 * the identity of the file it was loaded from (`file`, or the object's
 * own path). In *path the object's path, for the key to name.
 */
static char *build_of(const void *addr, const char *file, const char **path)
{
    struct loaded l = {.addr = addr};
    dl_iterate_phdr(find_loaded, &l);
    *path = l.found && l.name[0] ? l.name : NULL;
    if (l.id[0])
        return xasprintf("build-id %s", l.id);
    return file_id(file ? file : *path);
}

/*
 * The key a cache must have been written under, in *max the machine's
 * highest possible CPU, which bounds what the cache may name, and in
 * `online` the online CPUs the key names (left empty when the kernel does
 * not say), which the cache's own online line must match; NULL, with
 * why, when there is no boot id, or no cpu/online: without sysfs hwloc's
 * discovery is a guess that must not replace what a launch with it found.
 * hwloc's API version is the same for many releases, so the library's
 * build itself, and tunerun's (its filters and flags), are in it.
 */
char *topo_cache_key(int *max, hwloc_bitmap_t online, const char **why)
{
    /*
     * The possible CPUs, 0 to nr_cpu_ids - 1, are fixed at boot: libnuma's
     * constructor counted them (glibc's sysconf reads cpu/possible), so the
     * bound costs no read of ours.
     */
    int possible = numa_num_configured_cpus();
    *max = possible > 0 ? possible - 1 : CPUS_UNKNOWN_MAX;
    if (boot_id() == NULL) {
        *why = "no boot id in /proc, so no topology cache";
        return NULL;
    }
    char *cpus = read_line_alloc(key_files[1]);
    if (cpus == NULL || !bitmap_parse(online, cpus) || hwloc_bitmap_iszero(online)) {
        free(cpus);
        hwloc_bitmap_zero(online);
        *why = "cannot read /sys/devices/system/cpu/online, so no topology cache";
        return NULL;
    }
    const char *libpath, *self;
    char *exe = build_of((void *)topo_cache_key, "/proc/self/exe", &self);
    char *hw = build_of((void *)hwloc_topology_init, NULL, &libpath);
    char *memory = read_line_alloc(key_files[2]);
    /*
     * Kinds of core are ranked by cpufreq's base_frequency where the kernel
     * has no cpu_capacity, and ARM rescales cpu_capacity when its cpufreq
     * driver (a module) loads: a cache written before that must not
     * outlive it. Whether the first online CPU has cpufreq yet says so.
     */
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq",
             hwloc_bitmap_first(online));
    char *key =
        xasprintf("tunerun topology cache 6\ntunerun %s\nhwloc %s %s\n%s %s\n%s %s\n"
                  "%s %s\ncpufreq %s\n",
                  exe, libpath ? libpath : "-", hw, key_files[0], boot_id(), key_files[1], cpus,
                  key_files[2], memory ? memory : "-", stat(path, &st) == 0 ? "yes" : "no");
    free(cpus);
    free(memory);
    free(exe);
    free(hw);
    return key;
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
 *     tier OS TIER LATENCY BANDWIDTH   per node whose speed is known (topo.h):
 *                             TIER -1 for none, hN for hwloc's; 0 for unknown values
 *     core LIST               per core
 *     kind LIST LABEL         per kind of core, fastest first: none, or two and more
 *     distances V...          nodes x nodes, in node order; absent: unknown
 *     present OS BYTES        per node, what its zones hold (topo_memory.c); absent: none
 *     totalram BYTES          the machine's total memory when they were read
 *
 * LIST is bitmap_list()'s ("none" when empty).
 */
char *topo_cache_format(const struct machine *m)
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
    for (size_t i = 0; i < m->nnodes; i++) {
        const struct mnode *nd = &m->nodes[i];
        if (nd->tier >= 0 || nd->latency_ns || nd->bandwidth_mibs)
            APPEND("tier %u %s%d %u %u\n", nd->os_index, nd->tier_hwloc ? "h" : "", nd->tier,
                   nd->latency_ns, nd->bandwidth_mibs);
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
    for (size_t i = 0; m->present && i < m->nnodes; i++)
        if (m->present[i])
            APPEND("present %u %llu\n", m->nodes[i].os_index, (unsigned long long)m->present[i]);
    if (m->totalram)
        APPEND("totalram %llu\n", (unsigned long long)m->totalram);
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

/* A tier line's values into its node, which a node line named before. */
static bool cached_tier(struct machine *m, const char *os, const char *tier, const char *lat,
                        const char *bw)
{
    uint64_t at, l, b, id;
    bool hw = tier && *tier == 'h';
    if (!parse_u64(os, &at) || tier == NULL || !parse_u64(lat, &l) || !parse_u64(bw, &b) ||
        l > UINT_MAX || b > UINT_MAX)
        return false;
    if (strcmp(tier, "-1") == 0)
        id = (uint64_t)-1;
    else if (!parse_u64(tier + hw, &id) || id > 100000)
        return false;
    for (size_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].os_index == at) {
            m->nodes[i].tier = id == (uint64_t)-1 ? -1 : (int)id;
            m->nodes[i].tier_hwloc = hw;
            m->nodes[i].latency_ns = (unsigned)l;
            m->nodes[i].bandwidth_mibs = (unsigned)b;
            return true;
        }
    return false;
}

/*
 * A present line's node and bytes, for a node listed before it, once: a
 * node whose zones hold nothing has no line, as its gap is none.
 */
static bool cached_present(struct machine *m, const char *os, const char *bytes)
{
    uint64_t node, v;
    if (!parse_u64(os, &node) || !parse_u64(bytes, &v) || v == 0)
        return false;
    if (m->present == NULL)
        m->present = xcalloc(m->nnodes ? m->nnodes : 1, sizeof(*m->present));
    for (size_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].os_index == node && m->present[i] == 0) {
            m->present[i] = v;
            return true;
        }
    return false;
}

/*
 * topo_cache_format()'s text back (modified in place), its CPUs within 0..max;
 * false with why (a line that is wrong, or one missing) otherwise. What it
 * says must hold together: every set within the complete one, node os
 * indexes unique, cores disjoint, and its online CPUs those of the key it
 * was found under (`online`; NULL or empty: not known). A body that
 * contradicts its own key was not written by the tunerun that wrote the
 * key, and is discovered again.
 */
bool topo_cache_parse(char *text, int max, hwloc_const_bitmap_t online, struct machine *m,
                      struct err *e)
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
        } else if (ok && strcmp(word, "node") == 0 && m->distance == NULL && !m->present) {
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
                nd->tier = -1;
                hwloc_bitmap_set(seen, (unsigned)os);
                nd->memory = bytes;
                nd->cpus = cpus;
                if (strcmp(d, "-") != 0)
                    snprintf(nd->subtype, sizeof(nd->subtype), "%s", d);
            }
        } else if (ok && strcmp(word, "tier") == 0 && m->ncores == 0) {
            /* in this order: a call's arguments are evaluated in any */
            const char *os = strtok_r(NULL, " ", &w), *tier = strtok_r(NULL, " ", &w);
            const char *lat = strtok_r(NULL, " ", &w), *bw = strtok_r(NULL, " ", &w);
            ok = cached_tier(m, os, tier, lat, bw);
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
        } else if (ok && strcmp(word, "present") == 0 && m->totalram == 0) {
            const char *os = strtok_r(NULL, " ", &w), *bytes = strtok_r(NULL, " ", &w);
            ok = cached_present(m, os, bytes);
        } else if (ok && strcmp(word, "totalram") == 0 && m->totalram == 0) {
            ok = parse_u64(strtok_r(NULL, " ", &w), &m->totalram) && m->totalram > 0;
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
        err_set(e, "line %u after the key is not tunerun's", bad);
    else if (m->complete == NULL || m->online == NULL || m->nnodes == 0)
        err_set(e, "it ends before its complete, online and node lines");
    else if (hwloc_bitmap_iszero(m->online))
        err_set(e, "it has no CPU online; a machine that runs this has one");
    else if (online && !hwloc_bitmap_iszero(online) && !hwloc_bitmap_isequal(m->online, online))
        err_set(e, "its online CPUs are not the ones its key names");
    else if (m->ncores == 0)
        err_set(e, "it has no core line; a machine without cores is never cached");
    else if (m->nkinds == 1)
        err_set(e, "it has one kind line; a machine whose cores are alike has none");
    else
        return true;
    topo_machine_free(m);
    return false;
}

/*
 * What a cache whose key is not `key` was written for: the first line of
 * the key (topo_cache_key()'s: three lines, one per key file, then cpufreq) it differs in.
 */
static const char *key_mismatch(const char *key, const char *text, size_t n)
{
    static const char *const what[] = {
        "another cache format",
        "another tunerun binary",
        "another libhwloc file",
        "another boot",
        "other online CPUs",
        "other NUMA nodes with memory",
        "a cpufreq driver loaded or gone",
    };
    _Static_assert(sizeof(what) / sizeof(what[0]) == 4 + NKEY_FILES, "a name per key line");
    size_t line = 0;
    for (size_t i = 0; i < n && key[i] && key[i] == text[i]; i++)
        line += key[i] == '\n';
    return line < sizeof(what) / sizeof(what[0]) ? what[line] : "another machine";
}

/* The cached text (NUL-terminated, after the key) when written under `key`, else NULL. */
char *topo_cache_read(struct topo *t, const struct state_dir *sd, const char *key)
{
    struct err e;
    int fd = state_open_read(sd, CACHE_NAME, &e);
    if (fd < 0) {
        if (errno == ENOENT)
            topo_cache_note(t, "no topology cache in %s yet", sd->path);
        else
            topo_cache_note(t, "%s", e.msg);
        return NULL;
    }
    char *text;
    size_t n, klen = strlen(key);
    int error = read_fd_text(fd, CACHE_MAX, &text, &n);
    close(fd);
    if (error) {
        topo_cache_note(t, "cannot read %s/%s: %s", sd->path, CACHE_NAME, strerror(error));
        return NULL;
    }
    if (n < klen || memcmp(text, key, klen) != 0) {
        if (n == 0)
            topo_cache_note(t, "%s/%s is empty", sd->path, CACHE_NAME);
        else
            topo_cache_note(t, "%s/%s was written for %s", sd->path, CACHE_NAME,
                            key_mismatch(key, text, n));
        free(text);
        return NULL;
    }
    memmove(text, text + klen, n - klen + 1);
    return text;
}
/* The machine is cached whole: each launch narrows it to its own cgroup and affinity. */
void topo_cache_write(struct topo *t, const struct state_dir *sd, const char *key,
                      const struct machine *m)
{
    struct err we;
    char *body = topo_cache_format(m);
    const char *bufs[] = {key, body};
    size_t lens[] = {strlen(key), strlen(body)};
    if (state_write(sd, CACHE_NAME, bufs, lens, 2, &we)) {
        t->cache = TOPO_CACHE_WRITTEN;
        topo_cache_note(t, "discovered and cached in %s/%s", sd->path, CACHE_NAME);
        unlinkat(sd->fd, "topology.xml", 0); /* the hwloc XML cache earlier builds wrote */
    } else {
        t->cache = TOPO_CACHE_FAILED;
        topo_cache_note(t, "%s", we.msg);
    }
    free(body);
}
