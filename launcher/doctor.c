/*
 * doctor.c - the seed's checklist, as findings: CPU frequency, NUMA, the
 * memory tiers, memory (THP, swappiness, overcommit, dirty pages), the IO
 * scheduler, the network card, connections and files, and the container's
 * limits. Each finding has a stable id, a severity, what was observed, why
 * it matters for the profile (the fear it feeds) and the fix, now and for
 * good.
 *
 * It changes nothing. Every file is read under `root`, so a fixture tree
 * shaped like another host's /proc and /sys is audited the same way.
 */
#include "doctor_internal.h"
#include "cgroup.h"
#include "disk.h"
#include "nic.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* the listen backlog doctor's somaxconn fixes ask for: nginx's and redis's 511, and room */
#define SOMAXCONN_FIX 4096

/*
 * The seed's order: CPU first, then NUMA (and the memory tiers, where a
 * slower one exists), memory, IO, the network card, connections, the
 * container.
 */
const char *const doctor_groups[DOCTOR_NGROUPS][2] = {
    {"cpu", "CPU frequency"},
    {"numa", "NUMA"},
    {"tiers", "Memory tiers: demotion and promotion"},
    {"memory", "Memory: THP, swap, overcommit, dirty pages"},
    {"io", "IO scheduler"},
    {"nic", "Network card: its node, IRQs and packet steering"},
    {"files", "Connections and files"},
    {"container", "cgroup limits and capabilities"},
};

const char *doctor_severity_name(enum severity s)
{
    static const char *const names[] = {"ok", "info", "warn", "crit"};
    return names[s];
}

char *doc_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
char *doc_fmt(const char *f, ...)
{
    if (f == NULL)
        return NULL;
    va_list ap;
    va_start(ap, f);
    char *s = xvasprintf(f, ap);
    va_end(ap);
    return s;
}

/*
 * A fix of the host's, seen from inside a container: the kernel's
 * settings, sysfs and the disks are the host's, which nothing in the
 * container may change (sysctl -w fails there, a sysctl.d file in the image
 * does nothing). Said so; somaxconn is the container's own network
 * namespace's, which the runtime sets.
 */
static void host_fix(const char *id, char **fix, char **persist)
{
    if (strcmp(id, "net.somaxconn") == 0) {
        free(*fix);
        free(*persist);
        *fix = xasprintf("docker run --sysctl net.core.somaxconn=%d (each container has its own "
                         "network namespace)",
                         SOMAXCONN_FIX);
        *persist = xasprintf("net.core.somaxconn: %d under sysctls: in the compose file, or in "
                             "the pod's securityContext.sysctls",
                             SOMAXCONN_FIX);
        return;
    }
    char *f = xasprintf("on the host, not in this container: %s", *fix);
    free(*fix);
    *fix = f;
    if (*persist) {
        char *p = xasprintf("on the host: %s", *persist);
        free(*persist);
        *persist = p;
    }
}

/* Findings take ownership of the strings (NULL for no fix). */
void doc_add(struct doc *d, const char *group, const char *id, enum severity sev, char *observed,
             char *why, char *fix, char *persist)
{
    if (d->container && fix && strcmp(group, "container") != 0)
        host_fix(id, &fix, &persist);
    struct doctor_report *r = &d->r;
    r->v = xrealloc(r->v, (r->n + 1) * sizeof(*r->v));
    r->v[r->n++] = (struct doctor_finding){group, id, sev, observed, why, fix, persist};
    r->worst = sev > r->worst ? sev : r->worst;
}

/* Where path is under --root (as it is without one). */
void doc_at_root(const struct doc *d, const char *path, char *full, size_t n)
{
    snprintf(full, n, "%.4000s%.4000s", strcmp(d->root, "/") == 0 ? "" : d->root, path);
}

/* Under --root every file is someone else's: a link to a device there is never opened. */
bool doc_rd(const struct doc *d, const char *path, char *buf, size_t n)
{
    char full[8192];
    doc_at_root(d, path, full, sizeof(full));
    return read_line_regular(full, buf, n);
}

/* Whether path under --root is a regular file (resolved inside the tree, as doc_rd() reads). */
bool doc_has_file(const struct doc *d, const char *path)
{
    char full[8192];
    doc_at_root(d, path, full, sizeof(full));
    int fd = open_regular(full);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

char *doc_rd_text(const struct doc *d, const char *path, size_t max)
{
    char full[8192], *text = NULL;
    size_t len;
    doc_at_root(d, path, full, sizeof(full));
    int fd = open_regular(full);
    if (fd < 0)
        return NULL;
    if (read_fd_text(fd, max, &text, &len) != 0)
        text = NULL;
    close(fd);
    return text;
}

/*
 * A directory under --root, opened as open_inert() opens a file: inside
 * the tree, never through a link out of it.
 */
DIR *doc_opendir(const struct doc *d, const char *dir, int *error)
{
    char at[8192];
    doc_at_root(d, dir, at, sizeof(at));
    int fd = open_inert(at, true);
    DIR *h = fd >= 0 ? fdopendir(fd) : NULL;
    *error = h ? 0 : errno;
    if (h == NULL && fd >= 0)
        close(fd);
    return h;
}

unsigned long long doc_meminfo_kb(const struct doc *d, const char *field)
{
    char *text = doc_rd_text(d, "/proc/meminfo", 1 << 16);
    size_t len = strlen(field);
    unsigned long long kb = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, field, len) == 0 && p[len] == ':') {
            kb = strtoull(p + len + 1, NULL, 10);
            break;
        }
    free(text);
    return kb;
}

bool doc_rd_long(const struct doc *d, const char *path, long long *v)
{
    char buf[64], *end;
    if (!doc_rd(d, path, buf, sizeof(buf)))
        return false;
    *v = strtoll(buf, &end, 10);
    return end != buf;
}

bool doc_rd_list(const struct doc *d, const char *path, hwloc_bitmap_t set)
{
    char buf[8192]; /* a list of 8192 CPUs as sysfs writes it, in ranges, is far shorter */
    hwloc_bitmap_zero(set);
    return doc_rd(d, path, buf, sizeof(buf)) && bitmap_parse(set, buf);
}

/*
 * Which checks a profile gets, by what it sets: never by its file's name,
 * nor by the words of its free-text `fears`, whose rewording must not change
 * the audit. tunerun(1) lists these under doctor.
 */

/*
 * How many swap areas the host has (/proc/swaps, a header and a line
 * each), or -1 when it cannot tell: without any, vm.swappiness decides
 * nothing until swap is added.
 */
int doc_swap_areas(const struct doc *d)
{
    char full[8192], *text = NULL;
    size_t len;
    doc_at_root(d, "/proc/swaps", full, sizeof(full));
    int fd = open_regular(full), areas = -1;
    if (fd >= 0 && read_fd_text(fd, 1 << 20, &text, &len) == 0 &&
        strncmp(text, "Filename", 8) == 0) {
        areas = -1; /* the header's line */
        for (const char *s = text; *s; s++)
            areas += *s == '\n';
    }
    if (fd >= 0)
        close(fd);
    free(text);
    return areas;
}

/* A swap policy of its own (swappiness or swap_max): the host's vm.swappiness matters. */
bool doc_swap_sensitive(const struct doc *d)
{
    return d->p && (d->p->memory.swappiness >= 0 || d->p->memory.swap_max_set);
}

/*
 * THP off and no swap at all: what a service sets that forks its whole
 * memory to save it (redis's BGSAVE: each copy-on-write fault would copy a
 * huge page, and the fork doubles what can swap). Such a fork needs
 * vm.overcommit_memory = 1.
 */
bool doc_forks_to_save(const struct doc *d)
{
    return d->p && d->p->memory.thp == THP_NEVER &&
           ((d->p->memory.swap_max_set && d->p->memory.swap_max == 0) ||
            d->p->memory.swappiness == 0);
}

#define NOFILE_USUAL 1024 /* the soft nofile limit a service gets unless told otherwise */

/* nofile raised above the usual 1024: a server of many connections, each a descriptor. */
bool doc_many_connections(const struct doc *d)
{
    const struct profile_limit *l = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    return l && l->set && l->soft > NOFILE_USUAL;
}

/* The first of `choices` the list in a /sys file offers ("noop deadline [cfq]"), or NULL. */
const char *doc_offered(const char *list, const char *const *choices)
{
    for (; *choices; choices++) {
        size_t n = strlen(*choices);
        for (const char *p = strstr(list, *choices); p; p = strstr(p + 1, *choices))
            if ((p == list || p[-1] == ' ' || p[-1] == '[') &&
                (p[n] == '\0' || p[n] == ' ' || p[n] == ']'))
                return *choices;
    }
    return NULL;
}

const char *doc_who(const struct doc *d)
{
    return d->p ? d->p->name : "a service";
}

/* ---- cpu ------------------------------------------------------------------ */

void doctor_check_cpu(struct doc *d)
{
    char path[256], gov[64], first[64] = "";
    int n = 0, slow = 0, misses = 0;
    for (int cpu = 0; cpu < 8192 && misses < 64; cpu++) {
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
        if (!doc_rd(d, path, gov, sizeof(gov))) {
            misses++;
            continue;
        }
        misses = 0;
        n++;
        if (!first[0])
            snprintf(first, sizeof(first), "%s", gov);
        slow += strcmp(gov, "powersave") == 0;
    }
    if (n == 0) {
        doc_add(
            d, "cpu", "cpu.governor", SEV_INFO, doc_fmt("no cpufreq here (a VM, or a fixed clock)"),
            doc_fmt("the hypervisor or firmware sets the frequency; compare with a host that has "
                    "cpufreq"),
            NULL, NULL);
    } else if (slow &&
               doc_rd(d, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", path,
                      sizeof(path)) &&
               strcmp(path, "intel_pstate") == 0) {
        doc_add(d, "cpu", "cpu.governor", SEV_INFO,
                doc_fmt("%d of %d CPU%s: powersave under intel_pstate", slow, n, n == 1 ? "" : "s"),
                doc_fmt("intel_pstate's powersave still scales with load (not the old fixed-low "
                        "governor); performance only removes the ramp-up"),
                NULL, NULL);
    } else if (slow) {
        doc_add(
            d, "cpu", "cpu.governor", d->p ? SEV_WARN : SEV_INFO,
            doc_fmt("%d of %d CPU%s run%s the powersave governor", slow, n, n == 1 ? "" : "s",
                    slow == 1 ? "s" : ""),
            doc_fmt("powersave ramps the clock up late: every request of %s starts slow, and its "
                    "latency pays for it",
                    doc_who(d)),
            doc_fmt("cpupower frequency-set -g performance"),
            doc_fmt(
                "GOVERNOR=\"performance\" in /etc/default/cpupower and systemctl enable cpupower "
                "(Debian), or CPUPOWER_START_OPTS=\"frequency-set -g performance\" in "
                "/etc/sysconfig/cpupower (RHEL, CentOS)"));
    } else {
        doc_add(d, "cpu", "cpu.governor", SEV_OK,
                doc_fmt("%s on %d CPU%s", first, n, n == 1 ? "" : "s"), NULL, NULL, NULL);
    }
    long long cur, max;
    if (doc_rd_long(d, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", &cur) &&
        doc_rd_long(d, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", &max) && max > 0)
        doc_add(d, "cpu", "cpu.frequency", cur * 10 < max * 7 ? SEV_INFO : SEV_OK,
                doc_fmt("CPU 0 at %lld MHz of %lld MHz", cur / 1000, max / 1000),
                cur * 10 < max * 7
                    ? doc_fmt("well below its maximum now; under load it should rise")
                    : NULL,
                NULL, NULL);
}

/* ---- numa ----------------------------------------------------------------- */

void doctor_check_numa(struct doc *d)
{
    char path[256], buf[4096];
    int nodes = 0;
    unsigned far = 0; /* the largest distance, against the local 10 */
    char *dist = xstrdup("");
    for (int node = 0; node < 1024; node++) {
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance", node);
        if (!doc_rd(d, path, buf, sizeof(buf)))
            continue;
        nodes++;
        for (char *t = buf, *end; *t; t = end) {
            unsigned long v = strtoul(t, &end, 10);
            if (end == t)
                break;
            far = v > far ? (unsigned)v : far;
        }
        char *x = doc_fmt("%s%snode %d: %s", dist, *dist ? "; " : "", node, buf);
        free(dist);
        dist = x;
    }
    if (nodes == 0) {
        doc_add(d, "numa", "numa.nodes", SEV_INFO, doc_fmt("no NUMA information in sysfs"), NULL,
                NULL, NULL);
        free(dist);
        return;
    }
    doc_add(d, "numa", "numa.nodes", SEV_OK,
            doc_fmt("%d node%s (distances %s)", nodes, nodes == 1 ? "" : "s", dist),
            nodes > 1
                ? doc_fmt("the firmware rates the farthest memory %.1fx the local (distance %u "
                          "against 10): that is the price of remote memory",
                          far / 10.0, far)
                : NULL,
            NULL, NULL);
    free(dist);
    if (d->p && nodes > 1 && d->p->placement.nodes == 0) {
        doc_add(d, "numa", "numa.placement", SEV_OK,
                doc_fmt("the %s profile spans every node by design (%s memory)", d->p->name,
                        mem_mode_name(d->p->placement.memory)),
                NULL, NULL, NULL);
    } else if (d->p && nodes > 1) {
        bool local = d->p->placement.nodes == 1 && (d->p->placement.memory == MEM_BIND ||
                                                    d->p->placement.memory == MEM_PREFERRED ||
                                                    d->p->placement.memory == MEM_LOCAL);
        doc_add(d, "numa", "numa.placement", local ? SEV_OK : SEV_INFO,
                doc_fmt("the %s profile places it on %u node%s with %s memory", d->p->name,
                        d->p->placement.nodes, d->p->placement.nodes == 1 ? "" : "s",
                        mem_mode_name(d->p->placement.memory)),
                local ? NULL : doc_fmt("part of its memory may be remote"), NULL, NULL);
    }
    /*
     * Bit 1 (NUMA_BALANCING_NORMAL) balances pages between nodes: the
     * kernel's documentation (admin-guide/sysctl/kernel.rst) says to turn
     * it off for a workload bound to its nodes. Bit 2 alone (memory
     * tiering) never unmaps a page of the top tier to watch it
     * (mm/mprotect.c), so a service bound to a node of it pays nothing.
     */
    long long bal;
    if (doc_rd_long(d, "/proc/sys/kernel/numa_balancing", &bal)) {
        bool one_node = nodes > 1 && d->p && d->p->placement.nodes == 1;
        bool bad = (bal & 1) && one_node;
        doc_add(
            d, "numa", "numa.balancing", bad ? SEV_WARN : SEV_OK,
            doc_fmt("kernel.numa_balancing = %lld", bal),
            bad ? doc_fmt("%s is bound to its node: the kernel's documentation says to turn "
                          "automatic balancing off for a workload bound to NUMA nodes, which has "
                          "nothing to gain from it, while the scans and hint faults of every "
                          "process it watches cost CPU time",
                          doc_who(d))
            : bal == 2 && one_node
                ? doc_fmt("2 is memory tiering alone: it never unmaps a page on the fastest tier "
                          "to watch it, and promotes only pages of a slower tier, where there is "
                          "one")
                : NULL,
            bad ? doc_fmt("sysctl -w kernel.numa_balancing=0") : NULL,
            bad ? doc_fmt("kernel.numa_balancing = 0 in /etc/sysctl.d/90-tunerun.conf") : NULL);
    }
}

/* ---- io ------------------------------------------------------------------- */

void doctor_check_io(struct doc *d)
{
    const char *dir = d->data_dir ? d->data_dir : "/";
    unsigned maj, min;
    char mnt[4096], path[512], sched[256] = "", mode[64], rot[16];
    if (!disk_of_path(d->root, dir, &maj, &min, mnt, sizeof(mnt))) {
        if (strcmp(d->root, "/") != 0)
            doc_add(d, "io", "io.scheduler", SEV_INFO, doc_fmt("no mount found for %s", dir), NULL,
                    NULL, NULL);
        else
            doc_add(d, "io", "io.scheduler", SEV_INFO, doc_fmt("%s: %s", dir, strerror(errno)),
                    doc_fmt("no disk to check: give --data-dir the service's data directory"), NULL,
                    NULL);
        return;
    }
    size_t nleaves;
    struct disk *leaves = disk_leaves(d->root, maj, min, &nleaves);
    if (nleaves == 0) {
        doc_add(
            d, "io", "io.scheduler", SEV_INFO,
            doc_fmt("%s is on %s (device %u:%u), which has no block queue (tmpfs, overlay, NFS?)",
                    dir, mnt, maj, min),
            NULL, NULL, NULL);
        return;
    }
    const struct disk leaf = leaves[0]; /* the first under a stacked device stands for all */
    char base[64];
    snprintf(base, sizeof(base), "/sys/dev/block/%u:%u/queue", leaf.maj, leaf.min);
    snprintf(path, sizeof(path), "%s/scheduler", base);
    doc_rd(d, path, sched, sizeof(sched));
    snprintf(path, sizeof(path), "%s/rotational", base);
    /* virtio disks say rotational = 1 whatever backs them: a cloud disk is no spinning head */
    bool virtio = strncmp(leaf.name, "vd", 2) == 0 || strncmp(leaf.name, "xvd", 3) == 0;
    bool rotational = !virtio && doc_rd(d, path, rot, sizeof(rot)) && strcmp(rot, "1") == 0;
    const char *s = sysfs_choice(sched, mode, sizeof(mode));
    if (s == NULL)
        s = sched;
    bool bad = !rotational && (strcmp(s, "cfq") == 0 || strcmp(s, "bfq") == 0);
    const char *better =
        doc_offered(sched, (const char *const[]){"none", "mq-deadline", "noop", "deadline", NULL});
    snprintf(d->disk, sizeof(d->disk), "%.63s", leaf.name);
    d->spinning = rotational;
    doc_add(
        d, "io", "io.scheduler", bad ? SEV_WARN : SEV_OK,
        doc_fmt("%s is on %s (%s, %s): scheduler %s", dir, mnt, leaf.name,
                virtio       ? "a virtual disk"
                : rotational ? "rotational"
                             : "SSD",
                s),
        bad ? doc_fmt("%s reorders requests for a spinning head: on an SSD or a cloud disk it only "
                      "adds latency and caps IOPS",
                      s)
            : NULL,
        bad ? doc_fmt("echo %s > %s/scheduler", better ?: "none", base) : NULL,
        bad ? doc_fmt("ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"%s\", "
                      "ATTR{queue/rotational}==\"%s\", ATTR{queue/scheduler}=\"%s\" in "
                      "/etc/udev/rules.d/60-scheduler.rules",
                      leaf.name, virtio ? "1" : "0", better ?: "none")
            : NULL);
    disk_free(leaves, nleaves);
}

/* ---- files and connections ----------------------------------------------- */

void doctor_check_files(struct doc *d)
{
    long long somax;
    bool listens = doc_many_connections(d);
    if (doc_rd_long(d, "/proc/sys/net/core/somaxconn", &somax)) {
        long long backlog = 511; /* nginx's listen, redis's tcp-backlog: the usual server's */
        bool bad = listens && somax < backlog;
        char asks[128] = "";
        if (listens)
            snprintf(asks, sizeof(asks), " (a server's listen backlog is usually %lld)", backlog);
        doc_add(
            d, "files", "net.somaxconn", bad ? SEV_WARN : SEV_OK,
            doc_fmt("net.core.somaxconn = %lld%s", somax, asks),
            bad ? doc_fmt("%s's profile raises nofile to %llu, so it expects many connections; the "
                          "kernel cuts every listen backlog to %lld: bursts of connections are "
                          "dropped or retried after a second",
                          doc_who(d), (unsigned long long)d->p->limits[RLIMIT_NOFILE].soft, somax)
                : NULL,
            bad ? doc_fmt("sysctl -w net.core.somaxconn=%d", SOMAXCONN_FIX) : NULL,
            bad ? doc_fmt("net.core.somaxconn = %d in /etc/sysctl.d/90-tunerun.conf", SOMAXCONN_FIX)
                : NULL);
    }
    const struct profile_limit *nofile = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    long long want = nofile && nofile->set ? (long long)nofile->hard : 0;
    long long nr_open, file_max;
    if (doc_rd_long(d, "/proc/sys/fs/nr_open", &nr_open)) {
        bool bad = want > nr_open;
        char wants[64] = "";
        if (want)
            snprintf(wants, sizeof(wants), " (the profile's nofile is %lld)", want);
        doc_add(
            d, "files", "fs.nr_open", bad ? SEV_CRIT : SEV_OK,
            doc_fmt("fs.nr_open = %lld%s", nr_open, wants),
            bad ? doc_fmt("no process may open more than %lld files: the profile's limit cannot be "
                          "set, "
                          "and %s runs out of connections",
                          nr_open, doc_who(d))
                : NULL,
            bad ? doc_fmt("sysctl -w fs.nr_open=%lld", want) : NULL,
            bad ? doc_fmt("fs.nr_open = %lld in /etc/sysctl.d/90-tunerun.conf", want) : NULL);
    }
    char buf[128];
    if (doc_rd(d, "/proc/sys/fs/file-max", buf, sizeof(buf)) &&
        (file_max = strtoll(buf, NULL, 10)) > 0) {
        bool bad = want > file_max;
        doc_add(
            d, "files", "fs.file_max", bad ? SEV_WARN : SEV_OK,
            doc_fmt("fs.file-max = %lld", file_max),
            bad ? doc_fmt("the whole host may open fewer files than this one service wants") : NULL,
            bad ? doc_fmt("sysctl -w fs.file-max=%lld", want * 4) : NULL,
            bad ? doc_fmt("fs.file-max = %lld in /etc/sysctl.d/90-tunerun.conf", want * 4) : NULL);
    }
}

/* Whether path is a directory; else why not, in e. */
static bool is_dir(const char *path, struct err *e)
{
    struct stat st;
    if (stat(path, &st) < 0)
        err_errno(e, errno, "%s", strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        err_errno(e, ENOTDIR, "%s", strerror(ENOTDIR));
    else
        return true;
    return false;
}

/*
 * A --root or --data-dir that cannot be what it says is an error, never a
 * quiet audit of nothing: a root must hold the proc/ and sys/ it is read
 * from, and a data directory must be one (on this host; under another root,
 * which holds no filesystem but /proc and /sys, an absolute path of that
 * host, found through its mountinfo).
 */
static bool usable(const char *root, const char *data_dir)
{
    char sub[4096];
    struct err why;
    if (root && !is_dir(root, &why)) {
        log_error("--root %s: %s", root, why.msg);
        return false;
    }
    for (const char *const *s = (const char *const[]){"proc", "sys", NULL}; root && *s; s++) {
        snprintf(sub, sizeof(sub), "%s/%s", root, *s);
        if (!is_dir(sub, &why)) {
            log_error("--root %s: no %s/ under it to audit (%s): give a copy of a host's /proc "
                      "and /sys",
                      root, *s, why.msg);
            return false;
        }
    }
    bool here = root == NULL || strcmp(root, "/") == 0;
    /* someone else's tree: its links lead nowhere outside it, its files are of a sane size */
    if (!here && !open_inert_within(root)) {
        log_error("--root %s: %s", root, strerror(errno));
        return false;
    }
    if (data_dir && here && !is_dir(data_dir, &why)) {
        log_error("--data-dir %s: %s", data_dir, why.msg);
        return false;
    }
    if (data_dir && !here && data_dir[0] != '/') {
        log_error("--data-dir %s: under --root it is a path of that host, and must be absolute",
                  data_dir);
        return false;
    }
    return true;
}

bool doctor_gather(struct doctor_report *r, const char *root, const struct profile *p,
                   const char *data_dir)
{
    memset(r, 0, sizeof(*r));
    if (!usable(root, data_dir))
        return false;
    /*
     * The profile's near is where the service keeps its data: its disk is
     * audited when it is a directory here, or under --root when that host
     * mounts something there other than / (of a fixture only /proc and /sys
     * are known, not its files).
     */
    char mnt[4096];
    struct err why;
    unsigned maj, min;
    bool here = root == NULL || strcmp(root, "/") == 0;
    const char *near = p ? p->placement.near : NULL;
    bool from_near =
        data_dir == NULL && near && !nic_spec(near) &&
        (here ? is_dir(near, &why)
              : disk_of_path(root, near, &maj, &min, mnt, sizeof(mnt)) && strcmp(mnt, "/") != 0);
    struct doc d = {.root = root ? root : "/", .p = p, .data_dir = from_near ? near : data_dir};
    d.r = (struct doctor_report){.profile = p ? p->name : NULL,
                                 .fears = p ? p->fears : NULL,
                                 .root = d.root,
                                 .data_dir = d.data_dir,
                                 .data_from_near = from_near};
    /* every kernel's /proc has it: without it the audit would be of nothing, and pass */
    if (!here && !doc_has_file(&d, "/proc/sys/kernel/osrelease")) {
        log_error("--root %s: no proc/sys/kernel/osrelease under it (%s), so its proc/ is no "
                  "copy of a host's /proc: give one",
                  root, strerror(errno));
        return false;
    }
    /* under --root, the tree's own marks, found inside it */
    d.container =
        here ? cgroup_in_container()
             : doc_has_file(&d, container_marks[0]) || doc_has_file(&d, container_marks[1]);
    doctor_check_cpu(&d);
    doctor_check_numa(&d);
    doctor_check_tiers(&d);
    doctor_check_io(&d); /* before memory: the dirty pages are judged against this disk */
    doctor_check_thp(&d);
    doctor_check_vm(&d);
    doctor_check_hugepages(&d);
    doctor_check_nic(&d);
    doctor_check_files(&d);
    doctor_check_cgroup(&d);
    doctor_check_caps(&d);
    *r = d.r;
    return true;
}

int doctor_status(const struct doctor_report *r)
{
    return r->worst == SEV_CRIT ? 2 : r->worst == SEV_WARN ? 1 : 0;
}

void doctor_free(struct doctor_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].observed);
        free(r->v[i].why);
        free(r->v[i].fix);
        free(r->v[i].persist);
    }
    free(r->v);
    memset(r, 0, sizeof(*r));
}
