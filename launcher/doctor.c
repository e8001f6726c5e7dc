/*
 * doctor.c - the seed's checklist, as findings: CPU frequency, NUMA, memory
 * (THP, swappiness, overcommit, dirty pages), the IO scheduler, connections
 * and files, and the container's limits. Each finding has a stable id, a
 * severity, what was observed, why it matters for the profile (the fear it
 * feeds) and the fix, now and for good.
 *
 * It changes nothing. Every file is read under `root`, so a fixture tree
 * shaped like another host's /proc and /sys is audited the same way.
 */
#include "doctor.h"
#include "cgroup.h"
#include "disk.h"
#include "report.h"
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

struct doc {
    struct doctor_report r; /* what is found: report.c shows it */
    const char *root;
    const struct profile *p;
    const char *data_dir;
    char disk[64];  /* the data directory's disk, once check_io() found it */
    bool spinning;  /* ... and whether it is a spinning one */
    bool container; /* audited from inside a container: the host's settings are not its own */
};

/* The seed's order: CPU first, then NUMA, memory, IO, connections, the container. */
const char *const doctor_groups[DOCTOR_NGROUPS][2] = {
    {"cpu", "CPU frequency"},
    {"numa", "NUMA"},
    {"memory", "Memory: THP, swap, overcommit, dirty pages"},
    {"io", "IO scheduler"},
    {"files", "Connections and files"},
    {"container", "cgroup limits and capabilities"},
};

const char *doctor_severity_name(enum severity s)
{
    static const char *const names[] = {"ok", "info", "warn", "crit"};
    return names[s];
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
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
static void add(struct doc *d, const char *group, const char *id, enum severity sev, char *observed,
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
static void at_root(const struct doc *d, const char *path, char *full, size_t n)
{
    snprintf(full, n, "%.4000s%.4000s", strcmp(d->root, "/") == 0 ? "" : d->root, path);
}

/* Under --root every file is someone else's: a link to a device there is never opened. */
static bool rd(const struct doc *d, const char *path, char *buf, size_t n)
{
    char full[8192];
    at_root(d, path, full, sizeof(full));
    return read_line_regular(full, buf, n);
}

/* Whether path under --root is a regular file (resolved inside the tree, as rd() reads). */
static bool has_file(const struct doc *d, const char *path)
{
    char full[8192];
    at_root(d, path, full, sizeof(full));
    int fd = open_regular(full);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static bool rd_long(const struct doc *d, const char *path, long long *v)
{
    char buf[64], *end;
    if (!rd(d, path, buf, sizeof(buf)))
        return false;
    *v = strtoll(buf, &end, 10);
    return end != buf;
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
static int swap_areas(const struct doc *d)
{
    char full[8192], *text = NULL;
    size_t len;
    at_root(d, "/proc/swaps", full, sizeof(full));
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
static bool swap_sensitive(const struct doc *d)
{
    return d->p && (d->p->memory.swappiness >= 0 || d->p->memory.swap_max_set);
}

/*
 * THP off and no swap at all: what a service sets that forks its whole
 * memory to save it (redis's BGSAVE: each copy-on-write fault would copy a
 * huge page, and the fork doubles what can swap). Such a fork needs
 * vm.overcommit_memory = 1.
 */
static bool forks_to_save(const struct doc *d)
{
    return d->p && d->p->memory.thp == THP_NEVER &&
           ((d->p->memory.swap_max_set && d->p->memory.swap_max == 0) ||
            d->p->memory.swappiness == 0);
}

#define NOFILE_USUAL 1024 /* the soft nofile limit a service gets unless told otherwise */

/* nofile raised above the usual 1024: a server of many connections, each a descriptor. */
static bool many_connections(const struct doc *d)
{
    const struct profile_limit *l = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    return l && l->set && l->soft > NOFILE_USUAL;
}

/* The first of `choices` the list in a /sys file offers ("noop deadline [cfq]"), or NULL. */
static const char *offered(const char *list, const char *const *choices)
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

static const char *who(const struct doc *d)
{
    return d->p ? d->p->name : "a service";
}

/* ---- cpu ------------------------------------------------------------------ */

static void check_cpu(struct doc *d)
{
    char path[256], gov[64], first[64] = "";
    int n = 0, slow = 0, misses = 0;
    for (int cpu = 0; cpu < 8192 && misses < 64; cpu++) {
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
        if (!rd(d, path, gov, sizeof(gov))) {
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
        add(d, "cpu", "cpu.governor", SEV_INFO, fmt("no cpufreq here (a VM, or a fixed clock)"),
            fmt("the hypervisor or firmware sets the frequency; compare with a host that has "
                "cpufreq"),
            NULL, NULL);
    } else if (slow &&
               rd(d, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", path, sizeof(path)) &&
               strcmp(path, "intel_pstate") == 0) {
        add(d, "cpu", "cpu.governor", SEV_INFO,
            fmt("%d of %d CPU%s: powersave under intel_pstate", slow, n, n == 1 ? "" : "s"),
            fmt("intel_pstate's powersave still scales with load (not the old fixed-low "
                "governor); performance only removes the ramp-up"),
            NULL, NULL);
    } else if (slow) {
        add(d, "cpu", "cpu.governor", d->p ? SEV_WARN : SEV_INFO,
            fmt("%d of %d CPU%s run%s the powersave governor", slow, n, n == 1 ? "" : "s",
                slow == 1 ? "s" : ""),
            fmt("powersave ramps the clock up late: every request of %s starts slow, and its "
                "latency pays for it",
                who(d)),
            fmt("cpupower frequency-set -g performance"),
            fmt("GOVERNOR=\"performance\" in /etc/default/cpupower and systemctl enable cpupower "
                "(Debian), or CPUPOWER_START_OPTS=\"frequency-set -g performance\" in "
                "/etc/sysconfig/cpupower (RHEL, CentOS)"));
    } else {
        add(d, "cpu", "cpu.governor", SEV_OK, fmt("%s on %d CPU%s", first, n, n == 1 ? "" : "s"),
            NULL, NULL, NULL);
    }
    long long cur, max;
    if (rd_long(d, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", &cur) &&
        rd_long(d, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", &max) && max > 0)
        add(d, "cpu", "cpu.frequency", cur * 10 < max * 7 ? SEV_INFO : SEV_OK,
            fmt("CPU 0 at %lld MHz of %lld MHz", cur / 1000, max / 1000),
            cur * 10 < max * 7 ? fmt("well below its maximum now; under load it should rise")
                               : NULL,
            NULL, NULL);
}

/* ---- numa ----------------------------------------------------------------- */

static void check_numa(struct doc *d)
{
    char path[256], buf[4096];
    int nodes = 0;
    unsigned far = 0; /* the largest distance, against the local 10 */
    char *dist = xstrdup("");
    for (int node = 0; node < 1024; node++) {
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance", node);
        if (!rd(d, path, buf, sizeof(buf)))
            continue;
        nodes++;
        for (char *t = buf, *end; *t; t = end) {
            unsigned long v = strtoul(t, &end, 10);
            if (end == t)
                break;
            far = v > far ? (unsigned)v : far;
        }
        char *x = fmt("%s%snode %d: %s", dist, *dist ? "; " : "", node, buf);
        free(dist);
        dist = x;
    }
    if (nodes == 0) {
        add(d, "numa", "numa.nodes", SEV_INFO, fmt("no NUMA information in sysfs"), NULL, NULL,
            NULL);
        free(dist);
        return;
    }
    add(d, "numa", "numa.nodes", SEV_OK,
        fmt("%d node%s (distances %s)", nodes, nodes == 1 ? "" : "s", dist),
        nodes > 1 ? fmt("the firmware rates the farthest memory %.1fx the local (distance %u "
                        "against 10): that is the price of remote memory",
                        far / 10.0, far)
                  : NULL,
        NULL, NULL);
    free(dist);
    if (d->p && nodes > 1 && d->p->placement.nodes == 0) {
        add(d, "numa", "numa.placement", SEV_OK,
            fmt("the %s profile spans every node by design (%s memory)", d->p->name,
                mem_mode_name(d->p->placement.memory)),
            NULL, NULL, NULL);
    } else if (d->p && nodes > 1) {
        bool local = d->p->placement.nodes == 1 && (d->p->placement.memory == MEM_BIND ||
                                                    d->p->placement.memory == MEM_PREFERRED ||
                                                    d->p->placement.memory == MEM_LOCAL);
        add(d, "numa", "numa.placement", local ? SEV_OK : SEV_INFO,
            fmt("the %s profile places it on %u node%s with %s memory", d->p->name,
                d->p->placement.nodes, d->p->placement.nodes == 1 ? "" : "s",
                mem_mode_name(d->p->placement.memory)),
            local ? NULL : fmt("part of its memory may be remote"), NULL, NULL);
    }
    long long bal;
    if (rd_long(d, "/proc/sys/kernel/numa_balancing", &bal)) {
        bool bad = bal != 0 && nodes > 1 && d->p && d->p->placement.nodes == 1;
        add(d, "numa", "numa.balancing", bad ? SEV_WARN : SEV_OK,
            fmt("kernel.numa_balancing = %lld", bal),
            bad ? fmt("%s is bound to its node; automatic balancing still scans and faults its "
                      "pages to move them, a latency tax with nothing to gain",
                      who(d))
                : NULL,
            bad ? fmt("sysctl -w kernel.numa_balancing=0") : NULL,
            bad ? fmt("kernel.numa_balancing = 0 in /etc/sysctl.d/90-tunerun.conf") : NULL);
    }
}

/* ---- memory --------------------------------------------------------------- */

static void check_memory(struct doc *d)
{
    char buf[256], mode[32], rel[128] = "";
    const char *thp = rd(d, "/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf))
                          ? sysfs_choice(buf, mode, sizeof(mode))
                          : NULL;
    int major = 0, minor = 0;
    bool per_process = rd(d, "/proc/sys/kernel/osrelease", rel, sizeof(rel)) &&
                       sscanf(rel, "%d.%d", &major, &minor) == 2 &&
                       (major > 6 || (major == 6 && minor >= 18));
    if (thp) {
        /*
         * tunerun turns THP off per process on any kernel (never), and gives
         * madvise per process from Linux 6.18: only a madvise profile on an
         * older kernel, or no profile at all, lives with the global mode.
         */
        bool always = strcmp(thp, "always") == 0;
        bool never_ok = major > 3 || (major == 3 && minor >= 15); /* PR_SET_THP_DISABLE */
        bool exposed = d->p == NULL || (d->p->memory.thp == THP_MADVISE && !per_process) ||
                       (d->p->memory.thp == THP_NEVER && !never_ok) ||
                       d->p->memory.thp == THP_SYSTEM;
        enum severity sev = !always ? SEV_OK : !exposed ? SEV_INFO : d->p ? SEV_WARN : SEV_INFO;
        add(d, "memory", "thp.enabled", sev, fmt("transparent_hugepage/enabled = %s", thp),
            always && exposed
                ? fmt("always: every large allocation of %s may stall to assemble a 2 MiB page, "
                      "and a fork copies 2 MiB per touched page",
                      who(d))
            : always
                ? fmt("tunerun sets %s's THP mode per process, whatever the global one", who(d))
                : NULL,
            always && exposed ? fmt("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
                              : NULL,
            always && exposed ? fmt("transparent_hugepage=madvise on the kernel command line")
                              : NULL);
    }
    char dbuf[256], dmode[32];
    const char *defrag = rd(d, "/sys/kernel/mm/transparent_hugepage/defrag", dbuf, sizeof(dbuf))
                             ? sysfs_choice(dbuf, dmode, sizeof(dmode))
                             : NULL;
    if (defrag) {
        bool bad = strcmp(defrag, "always") == 0;
        add(d, "memory", "thp.defrag", bad ? SEV_WARN : SEV_OK,
            fmt("transparent_hugepage/defrag = %s", defrag),
            bad ? fmt("always: page faults compact memory synchronously, a latency spike of "
                      "milliseconds")
                : NULL,
            bad ? fmt("echo %s > /sys/kernel/mm/transparent_hugepage/defrag",
                      offered(dbuf, (const char *const[]){"defer+madvise", "madvise", NULL})
                          ?: "madvise")
                : NULL,
            bad ? fmt("w /sys/kernel/mm/transparent_hugepage/defrag - - - - %s in "
                      "/etc/tmpfiles.d/thp.conf",
                      offered(dbuf, (const char *const[]){"defer+madvise", "madvise", NULL})
                          ?: "madvise")
                : NULL);
    }
    if (d->p && d->p->memory.thp == THP_MADVISE && rel[0]) {
        bool global_always = thp && strcmp(thp, "always") == 0;
        add(d, "memory", "thp.per_process",
            per_process     ? SEV_OK
            : global_always ? SEV_WARN
                            : SEV_INFO,
            fmt("kernel %s: per-process THP madvise %s", rel,
                per_process ? "available" : "missing (Linux 6.18+)"),
            per_process ? NULL
                        : fmt("the profile's thp = madvise cannot apply to %s alone; the global "
                              "mode holds",
                              who(d)),
            per_process ? NULL : fmt("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"),
            per_process ? NULL
                        : fmt("transparent_hugepage=madvise on the kernel command line, or Linux "
                              "6.18 or later"));
    }
    long long sw;
    if (rd_long(d, "/proc/sys/vm/swappiness", &sw)) {
        enum severity s = SEV_OK;
        char *why = NULL;
        if (swap_areas(d) == 0 && (sw == 0 || (sw > 10 && swap_sensitive(d)))) {
            s = SEV_INFO;
            why = fmt("no swap here, so it decides nothing until swap is added");
        } else if (sw == 0) {
            s = SEV_WARN;
            why = fmt("0 turns a little memory pressure into the OOM killer (in cgroup v2 above "
                      "all); 1 still keeps memory in RAM but lets the kernel breathe");
        } else if (sw > 10 && swap_sensitive(d)) {
            s = SEV_WARN;
            why = fmt("%lld lets reclaim swap %s's memory out early under pressure, and a page "
                      "read back from swap costs a disk read; its profile sets a swap policy of "
                      "its own (on cgroup v1 tunerun sets it for the service where it may write "
                      "its cgroup: see tunerun plan)",
                      sw, who(d));
        }
        bool fix = s == SEV_WARN;
        add(d, "memory", "vm.swappiness", s, fmt("vm.swappiness = %lld", sw), why,
            fix ? fmt("sysctl -w vm.swappiness=1") : NULL,
            fix ? fmt("vm.swappiness = 1 in /etc/sysctl.d/90-tunerun.conf (tuned profiles may "
                      "override it: check `tuned-adm active`)")
                : NULL);
    }
    long long oc;
    if (rd_long(d, "/proc/sys/vm/overcommit_memory", &oc)) {
        bool forks = forks_to_save(d);
        enum severity s = forks && oc != 1 ? SEV_WARN : (!forks && oc == 2 ? SEV_INFO : SEV_OK);
        add(d, "memory", "vm.overcommit_memory", s, fmt("vm.overcommit_memory = %lld", oc),
            forks && oc != 1
                ? fmt("%s's profile turns THP off and allows no swap, as a service that forks "
                      "its whole memory to save it does: without overcommit that fork can fail "
                      "with ENOMEM, and the save with it",
                      who(d))
            : s ? fmt("2 (strict) refuses allocations beyond the commit limit: fine only if "
                      "sized for")
                : NULL,
            forks && oc != 1 ? fmt("sysctl -w vm.overcommit_memory=1") : NULL,
            forks && oc != 1 ? fmt("vm.overcommit_memory = 1 in /etc/sysctl.d/90-tunerun.conf")
                             : NULL);
    }
    long long ratio, bg;
    char mem[256];
    if (rd_long(d, "/proc/sys/vm/dirty_ratio", &ratio) &&
        rd_long(d, "/proc/sys/vm/dirty_background_ratio", &bg)) {
        long long total_kb = 0;
        if (rd(d, "/proc/meminfo", mem, sizeof(mem)))
            sscanf(mem, "MemTotal: %lld", &total_kb);
        long long dirty_mb = total_kb * ratio / 100 / 1024, bytes = 0;
        if (rd_long(d, "/proc/sys/vm/dirty_bytes", &bytes) && bytes > 0)
            dirty_mb = bytes >> 20; /* set in bytes, the ratios read 0 */
        bool bad = bytes > 0 ? bytes > (1LL << 30) : (ratio > 10 || bg > 5);
        /*
         * A warning for a service whose data directory was named (its writes
         * flush there), on a disk that does not spin: a spinning one absorbs
         * big flushes better than it does many small ones.
         */
        bool writes = d->p && d->data_dir && d->disk[0];
        enum severity sev = !bad ? SEV_OK : writes && !d->spinning ? SEV_WARN : SEV_INFO;
        char on[96] = "";
        if (d->disk[0])
            snprintf(on, sizeof(on), " onto %s (%s)", d->disk,
                     d->spinning ? "spinning" : "SSD or virtual");
        add(d, "memory", "vm.dirty", sev,
            fmt("vm.dirty_ratio = %lld, vm.dirty_background_ratio = %lld (up to %lld MiB dirty)",
                ratio, bg, dirty_mb),
            bad ? fmt("dirty pages pile up before writeback starts, then flush%s in a storm that "
                      "stalls writers; a low-latency disk wants small, steady flushes",
                      on)
                : NULL,
            bad ? fmt("sysctl -w vm.dirty_ratio=10 vm.dirty_background_ratio=5") : NULL,
            bad ? fmt("vm.dirty_ratio = 10 and vm.dirty_background_ratio = 5 in "
                      "/etc/sysctl.d/90-tunerun.conf")
                : NULL);
    }
}

/* ---- io ------------------------------------------------------------------- */

static void check_io(struct doc *d)
{
    const char *dir = d->data_dir ? d->data_dir : "/";
    unsigned maj, min;
    char mnt[4096], path[512], sched[256] = "", mode[64], rot[16];
    if (!disk_of_path(d->root, dir, &maj, &min, mnt, sizeof(mnt))) {
        if (strcmp(d->root, "/") != 0)
            add(d, "io", "io.scheduler", SEV_INFO, fmt("no mount found for %s", dir), NULL, NULL,
                NULL);
        else
            add(d, "io", "io.scheduler", SEV_INFO, fmt("%s: %s", dir, strerror(errno)),
                fmt("no disk to check: give --data-dir the service's data directory"), NULL, NULL);
        return;
    }
    size_t nleaves;
    struct disk *leaves = disk_leaves(d->root, maj, min, &nleaves);
    if (nleaves == 0) {
        add(d, "io", "io.scheduler", SEV_INFO,
            fmt("%s is on %s (device %u:%u), which has no block queue (tmpfs, overlay, NFS?)", dir,
                mnt, maj, min),
            NULL, NULL, NULL);
        return;
    }
    const struct disk leaf = leaves[0]; /* the first under a stacked device stands for all */
    char base[64];
    snprintf(base, sizeof(base), "/sys/dev/block/%u:%u/queue", leaf.maj, leaf.min);
    snprintf(path, sizeof(path), "%s/scheduler", base);
    rd(d, path, sched, sizeof(sched));
    snprintf(path, sizeof(path), "%s/rotational", base);
    /* virtio disks say rotational = 1 whatever backs them: a cloud disk is no spinning head */
    bool virtio = strncmp(leaf.name, "vd", 2) == 0 || strncmp(leaf.name, "xvd", 3) == 0;
    bool rotational = !virtio && rd(d, path, rot, sizeof(rot)) && strcmp(rot, "1") == 0;
    const char *s = sysfs_choice(sched, mode, sizeof(mode));
    if (s == NULL)
        s = sched;
    bool bad = !rotational && (strcmp(s, "cfq") == 0 || strcmp(s, "bfq") == 0);
    const char *better =
        offered(sched, (const char *const[]){"none", "mq-deadline", "noop", "deadline", NULL});
    snprintf(d->disk, sizeof(d->disk), "%.63s", leaf.name);
    d->spinning = rotational;
    add(d, "io", "io.scheduler", bad ? SEV_WARN : SEV_OK,
        fmt("%s is on %s (%s, %s): scheduler %s", dir, mnt, leaf.name,
            virtio       ? "a virtual disk"
            : rotational ? "rotational"
                         : "SSD",
            s),
        bad ? fmt("%s reorders requests for a spinning head: on an SSD or a cloud disk it only "
                  "adds latency and caps IOPS",
                  s)
            : NULL,
        bad ? fmt("echo %s > %s/scheduler", better ?: "none", base) : NULL,
        bad ? fmt("ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"%s\", "
                  "ATTR{queue/rotational}==\"%s\", ATTR{queue/scheduler}=\"%s\" in "
                  "/etc/udev/rules.d/60-scheduler.rules",
                  leaf.name, virtio ? "1" : "0", better ?: "none")
            : NULL);
    disk_free(leaves, nleaves);
}

/* ---- files and connections ----------------------------------------------- */

static void check_files(struct doc *d)
{
    long long somax;
    bool listens = many_connections(d);
    if (rd_long(d, "/proc/sys/net/core/somaxconn", &somax)) {
        long long backlog = 511; /* nginx's listen, redis's tcp-backlog: the usual server's */
        bool bad = listens && somax < backlog;
        char asks[128] = "";
        if (listens)
            snprintf(asks, sizeof(asks), " (a server's listen backlog is usually %lld)", backlog);
        add(d, "files", "net.somaxconn", bad ? SEV_WARN : SEV_OK,
            fmt("net.core.somaxconn = %lld%s", somax, asks),
            bad ? fmt("%s's profile raises nofile to %llu, so it expects many connections; the "
                      "kernel cuts every listen backlog to %lld: bursts of connections are "
                      "dropped or retried after a second",
                      who(d), (unsigned long long)d->p->limits[RLIMIT_NOFILE].soft, somax)
                : NULL,
            bad ? fmt("sysctl -w net.core.somaxconn=%d", SOMAXCONN_FIX) : NULL,
            bad ? fmt("net.core.somaxconn = %d in /etc/sysctl.d/90-tunerun.conf", SOMAXCONN_FIX)
                : NULL);
    }
    const struct profile_limit *nofile = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    long long want = nofile && nofile->set ? (long long)nofile->hard : 0;
    long long nr_open, file_max;
    if (rd_long(d, "/proc/sys/fs/nr_open", &nr_open)) {
        bool bad = want > nr_open;
        char wants[64] = "";
        if (want)
            snprintf(wants, sizeof(wants), " (the profile's nofile is %lld)", want);
        add(d, "files", "fs.nr_open", bad ? SEV_CRIT : SEV_OK,
            fmt("fs.nr_open = %lld%s", nr_open, wants),
            bad ? fmt("no process may open more than %lld files: the profile's limit cannot be "
                      "set, "
                      "and %s runs out of connections",
                      nr_open, who(d))
                : NULL,
            bad ? fmt("sysctl -w fs.nr_open=%lld", want) : NULL,
            bad ? fmt("fs.nr_open = %lld in /etc/sysctl.d/90-tunerun.conf", want) : NULL);
    }
    char buf[128];
    if (rd(d, "/proc/sys/fs/file-max", buf, sizeof(buf)) &&
        (file_max = strtoll(buf, NULL, 10)) > 0) {
        bool bad = want > file_max;
        add(d, "files", "fs.file_max", bad ? SEV_WARN : SEV_OK, fmt("fs.file-max = %lld", file_max),
            bad ? fmt("the whole host may open fewer files than this one service wants") : NULL,
            bad ? fmt("sysctl -w fs.file-max=%lld", want * 4) : NULL,
            bad ? fmt("fs.file-max = %lld in /etc/sysctl.d/90-tunerun.conf", want * 4) : NULL);
    }
}

/* ---- container: the cgroup's limits, and capabilities ---------------------- */

static void check_container(struct doc *d)
{
    char text[8192], path[4096], v[256], v2[256], full[4096];
    FILE *f;
    /* cgroup.c's lookup, under the root: the hierarchy's mount, the process's path in it */
    char *cg_path = NULL, *mem = cgroup_dir_under(d->root, "memory", &cg_path), *dir = NULL;
    if (mem == NULL && cg_path == NULL) /* no v1 memory hierarchy: cgroup2's */
        dir = cgroup_dir_under(d->root, NULL, &cg_path);
    if (dir) {
        char high[64] = "(none)";
        snprintf(path, sizeof(path), "%s/memory.high", dir);
        rd(d, path, high, sizeof(high));
        snprintf(path, sizeof(path), "%s/memory.max", dir);
        bool lim = rd(d, path, v, sizeof(v));
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        bool cpu = rd(d, path, v2, sizeof(v2));
        add(d, "container", "cgroup.memory", SEV_INFO,
            fmt("cgroup v2 %s: memory.max %s, memory.high %s", cg_path, lim ? v : "(none)", high),
            lim && strcmp(v, "max") != 0
                ? fmt("%s's memory must fit it (for java, tunerun caps MaxRAM to it)", who(d))
                : NULL,
            NULL, NULL);
        add(d, "container", "cgroup.cpu", SEV_INFO, fmt("cpu.max %s", cpu ? v2 : "(none)"),
            cpu && strncmp(v2, "max", 3) != 0
                ? fmt("a CPU quota throttles once it is spent in each period: size thread pools "
                      "to it, not to the host's CPUs")
                : NULL,
            NULL, NULL);
        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", dir);
        if (rd(d, path, v, sizeof(v)))
            add(d, "container", "cgroup.cpuset", SEV_INFO, fmt("cpuset.cpus.effective %s", v), NULL,
                NULL, NULL);
    } else if (mem) {
        long long lim;
        snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", mem);
        bool limited = rd_long(d, path, &lim) && lim < (1LL << 60);
        char limit[32] = "(none)";
        if (limited)
            snprintf(limit, sizeof(limit), "%lld", lim);
        add(d, "container", "cgroup.memory", SEV_INFO,
            fmt("cgroup v1 %s: memory.limit_in_bytes %s", cg_path, limit), NULL, NULL, NULL);
        char *cpu = cgroup_dir_under(d->root, "cpu", NULL);
        long long quota = 0, period;
        bool q = false;
        if (cpu) {
            snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", cpu);
            q = rd_long(d, path, &quota);
            snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", cpu);
            if (!rd_long(d, path, &period))
                period = 100000;
        }
        char quota_s[64] = "(none)";
        if (cpu == NULL)
            snprintf(quota_s, sizeof(quota_s), "unknown: no cpu hierarchy mounted for it");
        else if (q && quota > 0)
            snprintf(quota_s, sizeof(quota_s), "%lld/%lld us", quota, period);
        add(d, "container", "cgroup.cpu", SEV_INFO, fmt("cpu quota %s", quota_s), NULL, NULL, NULL);
        free(cpu);
        char *cpuset = cgroup_dir_under(d->root, "cpuset", NULL);
        snprintf(path, sizeof(path), "%s/cpuset.cpus", cpuset ? cpuset : "");
        if (cpuset && rd(d, path, v, sizeof(v)))
            add(d, "container", "cgroup.cpuset", SEV_INFO, fmt("cpuset.cpus %s", v), NULL, NULL,
                NULL);
        free(cpuset);
    } else if (cg_path) {
        add(d, "container", "cgroup.memory", SEV_INFO,
            fmt("its cgroup %s is under no mount of its memory hierarchy (not mounted, or a "
                "cgroup namespace made after the mount)",
                cg_path),
            NULL, NULL, NULL);
    } else {
        add(d, "container", "cgroup.memory", SEV_INFO, fmt("no memory cgroup found"), NULL, NULL,
            NULL);
    }
    free(mem);
    free(dir);
    free(cg_path);

    /* capabilities: this process's (libcap), or a fixture's CapEff under a root */
    unsigned long long eff = 0;
    bool known = false;
    if (strcmp(d->root, "/") == 0) {
        cap_t caps = cap_get_proc();
        for (cap_value_t c = 0; caps && c < 64 && CAP_IS_SUPPORTED(c); c++) {
            cap_flag_value_t on = CAP_CLEAR;
            if (cap_get_flag(caps, c, CAP_EFFECTIVE, &on) == 0 && on == CAP_SET)
                eff |= 1ULL << c;
        }
        known = caps != NULL;
        cap_free(caps);
    } else {
        at_root(d, "/proc/self/status", full, sizeof(full));
        f = fopen_regular(full);
        while (f && fgets(text, sizeof(text), f))
            if (sscanf(text, "CapEff: %llx", &eff) == 1)
                known = true;
        if (f)
            fclose(f);
    }
    if (!known)
        return;
    /* raising nofile needs CAP_SYS_RESOURCE only above the hard limit it inherits */
    long long hard = -1;
    at_root(d, "/proc/self/limits", full, sizeof(full));
    f = fopen_regular(full);
    while (f && fgets(text, sizeof(text), f))
        if (strncmp(text, "Max open files", 14) == 0) {
            char soft[32], h[32];
            if (sscanf(text + 14, "%31s %31s", soft, h) == 2)
                hard = strcmp(h, "unlimited") == 0 ? LLONG_MAX : strtoll(h, NULL, 10);
        }
    if (f)
        fclose(f);
    const struct profile_limit *nofile = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    bool raise = nofile && nofile->set && (hard < 0 || (long long)nofile->hard > hard);
    struct {
        const char *id;
        cap_value_t cap;
        bool needed;
        const char *what, *fix, *persist;
    } caps[] = {
        {"cap.sys_resource", CAP_SYS_RESOURCE, raise,
         "raise the hard nofile limit above what it inherits, and lower oom_score_adj",
         "raise the limit where tunerun starts instead: LimitNOFILE= in the unit, docker run "
         "--ulimit nofile=N:N",
         "LimitNOFILE= in the unit (tunerun systemd prints it)"},
        {"cap.sys_nice", CAP_SYS_NICE, d->p != NULL,
         "move the threads of a shared pool that yields CPUs to this service",
         "docker run --cap-add SYS_NICE",
         "AmbientCapabilities=CAP_SYS_NICE in the unit, when it "
         "runs as another user"},
    };
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        char *name = cap_to_name(caps[i].cap);
        bool has = eff >> caps[i].cap & 1;
        char now[64] = "";
        if (caps[i].cap == CAP_SYS_RESOURCE && hard >= 0 && hard != LLONG_MAX)
            snprintf(now, sizeof(now), " (nofile hard limit now %lld)", hard);
        add(d, "container", caps[i].id, has ? SEV_OK : (caps[i].needed ? SEV_WARN : SEV_INFO),
            fmt("%s %s%s", name ? name : "?", has ? "held" : "missing", now),
            has ? NULL : fmt("tunerun needs it to %s", caps[i].what),
            has ? NULL : fmt("%s", caps[i].fix), has ? NULL : fmt("%s", caps[i].persist));
        cap_free(name);
    }
}

/* Whether path is a directory; else why not, in why. */
static bool is_dir(const char *path, char *why, size_t n)
{
    struct stat st;
    if (stat(path, &st) < 0)
        snprintf(why, n, "%s", strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, n, "%s", strerror(ENOTDIR));
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
    char why[256], sub[4096];
    if (root && !is_dir(root, why, sizeof(why))) {
        log_error("--root %s: %s", root, why);
        return false;
    }
    for (const char *const *s = (const char *const[]){"proc", "sys", NULL}; root && *s; s++) {
        snprintf(sub, sizeof(sub), "%s/%s", root, *s);
        if (!is_dir(sub, why, sizeof(why))) {
            log_error("--root %s: no %s/ under it to audit (%s): give a copy of a host's /proc "
                      "and /sys",
                      root, *s, why);
            return false;
        }
    }
    bool here = root == NULL || strcmp(root, "/") == 0;
    /* someone else's tree: its links lead nowhere outside it, its files are of a sane size */
    if (!here && !open_inert_within(root)) {
        log_error("--root %s: %s", root, strerror(errno));
        return false;
    }
    if (data_dir && here && !is_dir(data_dir, why, sizeof(why))) {
        log_error("--data-dir %s: %s", data_dir, why);
        return false;
    }
    if (data_dir && !here && data_dir[0] != '/') {
        log_error("--data-dir %s: under --root it is a path of that host, and must be absolute",
                  data_dir);
        return false;
    }
    return true;
}

int doctor_run(const char *root, const struct profile *p, const char *data_dir, bool json)
{
    if (!usable(root, data_dir))
        return DOCTOR_EXIT_UNUSABLE;
    /*
     * The profile's near is where the service keeps its data: its disk is
     * audited when it is a directory here, or under --root when that host
     * mounts something there other than / (of a fixture only /proc and /sys
     * are known, not its files).
     */
    char why[256], mnt[4096];
    unsigned maj, min;
    bool here = root == NULL || strcmp(root, "/") == 0;
    const char *near = p ? p->placement.near : NULL;
    bool from_near =
        data_dir == NULL && near &&
        (here ? is_dir(near, why, sizeof(why))
              : disk_of_path(root, near, &maj, &min, mnt, sizeof(mnt)) && strcmp(mnt, "/") != 0);
    struct doc d = {.root = root ? root : "/", .p = p, .data_dir = from_near ? near : data_dir};
    d.r = (struct doctor_report){.profile = p ? p->name : NULL,
                                 .fears = p ? p->fears : NULL,
                                 .root = d.root,
                                 .data_dir = d.data_dir,
                                 .data_from_near = from_near};
    /* every kernel's /proc has it: without it the audit would be of nothing, and pass */
    if (!here && !has_file(&d, "/proc/sys/kernel/osrelease")) {
        log_error("--root %s: no proc/sys/kernel/osrelease under it (%s), so its proc/ is no "
                  "copy of a host's /proc: give one",
                  root, strerror(errno));
        return DOCTOR_EXIT_UNUSABLE;
    }
    /* under --root, the tree's own marks, found inside it */
    d.container = here ? cgroup_in_container()
                       : has_file(&d, container_marks[0]) || has_file(&d, container_marks[1]);
    check_cpu(&d);
    check_numa(&d);
    check_io(&d); /* before memory: the dirty pages are judged against this disk */
    check_memory(&d);
    check_files(&d);
    check_container(&d);
    report_doctor(stdout, &d.r, json);
    enum severity worst = d.r.worst;
    for (size_t i = 0; i < d.r.n; i++) {
        free(d.r.v[i].observed);
        free(d.r.v[i].why);
        free(d.r.v[i].fix);
        free(d.r.v[i].persist);
    }
    free(d.r.v);
    return worst == SEV_CRIT ? 2 : worst == SEV_WARN ? 1 : 0;
}
