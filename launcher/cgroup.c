/*
 * cgroup.c - the cgroup mode, where this process stands (its memory
 * cgroup, who owns it, its limits) and its cpuset. The child cgroup a
 * service's swap policy lives in is cgroup_child.c's.
 *
 * Written by hand: libcgroup would do, but Debian's is for v1 tools, and
 * what is needed is small: systemd's own detection (statfs of
 * /sys/fs/cgroup), a read of /proc/self/mountinfo and /proc/self/cgroup,
 * and a few writes.
 */
#include "cgroup.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

const char *cgroup_mode_name(enum cg_mode m)
{
    static const char *const names[] = {"none", "v1 (legacy)", "hybrid", "v2 (unified)"};
    return names[m];
}

/* The magic number of the filesystem at path, or 0. */
static long fs_type(const char *path)
{
    struct statfs fs;
    return statfs(path, &fs) == 0 ? (long)fs.f_type : 0;
}

/* As systemd decides it: the filesystem at /sys/fs/cgroup, then at .../unified. */
enum cg_mode cgroup_mode(void)
{
    static int mode = -1; /* asked several times a launch; the answer holds until reboot */
    if (mode < 0) {
        long root = fs_type("/sys/fs/cgroup");
        if (root == CGROUP2_SUPER_MAGIC)
            mode = CG_UNIFIED;
        else if (root != TMPFS_MAGIC)
            mode = CG_NONE;
        else
            mode = fs_type("/sys/fs/cgroup/unified") == CGROUP2_SUPER_MAGIC ? CG_HYBRID : CG_LEGACY;
    }
    return (enum cg_mode)mode;
}

bool cgroup_has_word(const char *list, const char *word, char sep)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p; p = strchr(p, sep), p = p ? p + 1 : NULL)
        if (strncmp(p, word, n) == 0 && (p[n] == sep || p[n] == '\0' || p[n] == '\n'))
            return true;
    return false;
}

#define FILE_MAX (1 << 20) /* a cgroup file or path longer than this is no list of ours */

/* DIR/FILE's text (at most max bytes) without its trailing newline, or NULL. */
/*
 * All of dir/file, without trailing white space; a tree someone else made
 * (foreign: doctor's --root) through open_regular(), so that a link there
 * to a device is never opened.
 */
static char *read_file_text(const char *dir, const char *file, size_t max, bool foreign)
{
    char path[4096], *text = NULL;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = foreign ? open_regular(path) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (read_fd_text(fd, max, &text, &len) != 0)
        text = NULL;
    close(fd);
    while (text && len > 0 && isspace((unsigned char)text[len - 1]))
        text[--len] = '\0';
    return text;
}

/* This system's kernel files: opened plainly, as a launch reads several. */
static char *read_text(const char *dir, const char *file, size_t max)
{
    return read_file_text(dir, file, max, false);
}

/*
 * A file of this process's under /proc, read once: the lookups below walk
 * /proc/self/mountinfo and /proc/self/cgroup several times, and the kernel
 * renders the whole table on each read.
 */
static const char *proc_text(const char *file, char **cache)
{
    if (*cache == NULL && (*cache = read_text("/proc/self", file, 16 << 20)) == NULL)
        *cache = xstrdup("");
    return *cache;
}

static char *mountinfo_cache, *cgroup_cache;
#define MOUNTINFO()   proc_text("mountinfo", &mountinfo_cache)
#define SELF_CGROUP() proc_text("cgroup", &cgroup_cache)

/* The next line of text at *p (copied, NUL-terminated, into buf), or false at its end. */
static bool next_line(const char **p, char *buf, size_t n)
{
    if (**p == '\0')
        return false;
    const char *nl = strchr(*p, '\n');
    size_t len = nl ? (size_t)(nl - *p) : strlen(*p);
    snprintf(buf, n, "%.*s", (int)len, *p);
    *p += len + (nl != NULL);
    return true;
}

/*
 * The mount of a hierarchy in a mountinfo's text: cgroup2 (option NULL), or
 * the v1 one with `option` among its super options, as a whole word
 * ("memory", "cpu" but not "cpuset", "name=systemd"). Returns its mount
 * point and root (both freed by the caller) and whether it is mounted
 * read-only. The last such mount wins, as the newest hides older ones.
 */
static bool find_mount_in(const char *mountinfo, const char *option, char **point, char **root,
                          bool *ro)
{
    bool found = false;
    char buf[8192]; /* a longer line is an overlay's options, cut after what is read here */
    for (const char *p = mountinfo; next_line(&p, buf, sizeof(buf));) {
        /* id parent maj:min root point opts [optional...] - fstype source superopts */
        char *f[6], *save = NULL, *sep = strstr(buf, " - ");
        if (sep == NULL)
            continue;
        *sep = '\0';
        size_t n = 0;
        for (char *w = strtok_r(buf, " ", &save); w && n < 6; w = strtok_r(NULL, " ", &save))
            f[n++] = w;
        char *fstype = strtok_r(sep + 3, " \n", &save), *source = strtok_r(NULL, " \n", &save);
        char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (n < 6 || fstype == NULL)
            continue;
        char *r = f[3], *pt = f[4], *opts = f[5];
        if (option ? strcmp(fstype, "cgroup") != 0 || super == NULL ||
                         !cgroup_has_word(super, option, ',')
                   : strcmp(fstype, "cgroup2") != 0)
            continue;
        mountinfo_unescape(r);
        mountinfo_unescape(pt);
        free(*point);
        free(*root);
        *point = xstrdup(pt);
        *root = xstrdup(r);
        *ro = cgroup_has_word(opts, "ro", ',');
        found = true;
    }
    return found;
}

/* The same, in this process's mountinfo. */
static bool find_mount(const char *option, char **point, char **root, bool *ro)
{
    return find_mount_in(MOUNTINFO(), option, point, root, ro);
}

/*
 * A path in a hierarchy, from a /proc/PID/cgroup text: the "0::" line
 * (option NULL) or the v1 one listing `option` as a whole word.
 */
static char *own_path_in(const char *cgroups, const char *option)
{
    bool v2 = option == NULL;
    char line[4096];
    char *path = NULL;
    for (const char *p = cgroups; path == NULL && next_line(&p, line, sizeof(line));) {
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (b == NULL)
            continue;
        *b = '\0';
        bool match =
            v2 ? strncmp(line, "0:", 2) == 0 && a[1] == '\0' : cgroup_has_word(a + 1, option, ',');
        if (match) {
            b[1 + strcspn(b + 1, "\n")] = '\0';
            path = xstrdup(b + 1);
        }
    }
    return path;
}

/* Our path in a hierarchy. */
static char *own_path(const char *option)
{
    return own_path_in(SELF_CGROUP(), option);
}

static bool read_u64(const char *dir, const char *file, uint64_t *v, bool *max)
{
    char path[4096], buf[64];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (!read_line_file(path, buf, sizeof(buf)))
        return false;
    *max = strcmp(buf, "max") == 0;
    if (*max)
        return true;
    char *end;
    errno = 0;
    *v = strtoull(buf, &end, 10);
    return errno == 0 && end != buf;
}

/* The lowest memory limit from our cgroup up to the mount's root. */
static uint64_t memory_limit(const char *dir, const char *point, bool v2)
{
    uint64_t lowest = 0;
    char *d = xstrdup(dir);
    size_t plen = strlen(point);
    for (;;) {
        uint64_t v;
        bool max;
        if (read_u64(d, v2 ? "memory.max" : "memory.limit_in_bytes", &v, &max) && !max &&
            v < (1ULL << 60) && (lowest == 0 || v < lowest))
            lowest = v; /* v1 says "no limit" with a huge page-rounded number */
        char *slash = strrchr(d, '/');
        if (strlen(d) <= plen || slash == NULL || (size_t)(slash - d) < plen)
            break;
        *slash = '\0';
    }
    free(d);
    return lowest;
}

/*
 * The CPUs one cgroup's CPU quota allows, rounded up (docker --cpus=1.5
 * gives 2), or 0 for none: cgroup2's cpu.max ("150000 100000" or "max
 * 100000"), v1's cpu.cfs_quota_us over cpu.cfs_period_us (-1: none).
 * False where the file is not there: above the hierarchy's root (v1), or
 * at it (v2's root has no cpu.max).
 */
static bool quota_of(const char *dir, bool v2, unsigned *cpus)
{
    char buf[64], path[4096];
    unsigned long long quota = 0, period = 0;
    *cpus = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "cpu.max" : "cpu.cfs_quota_us");
    if (!read_line_file(path, buf, sizeof(buf)))
        return false;
    if (v2 && sscanf(buf, "%llu %llu", &quota, &period) != 2)
        return true; /* "max ...": no quota */
    if (!v2) {
        long long q = strtoll(buf, NULL, 10);
        snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
        if (q <= 0 || !read_line_file(path, buf, sizeof(buf)))
            return true;
        quota = (unsigned long long)q;
        period = strtoull(buf, NULL, 10);
    }
    if (period > 0 && quota / period <= 1u << 20)
        *cpus = (unsigned)((quota + period - 1) / period);
    return true;
}

/*
 * The CPUs the tightest CPU quota from this process's cgroup up allows, or
 * 0 for none: the kernel holds a cgroup to every ancestor's quota too (a
 * slice's CPUQuota=, a pod's limit over its container's). The JVM reads it
 * too, and sizes its GC threads from it.
 */
static unsigned cpu_quota(const struct cgroup *cg)
{
    char *d = cg->v2 ? xstrdup(cg->dir) : cgroup_dir_under("/", "cpu", NULL);
    unsigned lowest = 0, cpus;
    while (d && quota_of(d, cg->v2, &cpus)) {
        if (cpus > 0 && (lowest == 0 || cpus < lowest))
            lowest = cpus;
        char *slash = strrchr(d, '/');
        if (slash == NULL || slash == d)
            break;
        *slash = '\0';
    }
    free(d);
    return lowest;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* systemd marks a delegated cgroup with an xattr (v251+: trusted.delegate, user.delegate). */
static bool delegated(const char *dir)
{
    char v[8];
    ssize_t n = getxattr(dir, "trusted.delegate", v, sizeof(v) - 1);
    if (n <= 0)
        n = getxattr(dir, "user.delegate", v, sizeof(v) - 1);
    return n > 0 && v[0] == '1';
}

/* In a cgroup namespace other than the host's, whose inode is fixed (PROC_CGROUP_INIT_INO). */
static bool cgroup_namespaced(void)
{
    struct stat st;
    return stat("/proc/self/ns/cgroup", &st) == 0 && st.st_ino != 0xEFFFFFFBu;
}

const char *const container_marks[2] = {"/.dockerenv", "/run/.containerenv"};

bool cgroup_in_container(void)
{
    const char *c = getenv("container");
    if (c && *c)
        return true;
    for (size_t i = 0; i < sizeof(container_marks) / sizeof(*container_marks); i++)
        if (access(container_marks[i], F_OK) == 0)
            return true;
    return cgroup_namespaced();
}

/*
 * Where hierarchy path `path` is under a mount whose root is `root` at
 * `point`; NULL when it is not under it (a cgroup namespace made after the
 * mount shows its root as "/.."): then this process's cgroup is not there.
 */
static char *dir_of(const char *point, const char *root, const char *path)
{
    if (strcmp(root, "/") == 0)
        return xasprintf("%s%s", point, strcmp(path, "/") == 0 ? "" : path);
    if (!path_within(path, root))
        return NULL;
    return xasprintf("%s%s", point, path + strlen(root));
}

char *cgroup_dir_under(const char *root, const char *option, char **path)
{
    bool here = root == NULL || strcmp(root, "/") == 0;
    char *mountinfo = NULL, *cgroups = NULL, *point = NULL, *mroot = NULL, *dir = NULL;
    if (!here) {
        char *proc = xasprintf("%s/proc/self", root);
        mountinfo = read_file_text(proc, "mountinfo", 16 << 20, true); /* doctor's --root */
        cgroups = read_file_text(proc, "cgroup", FILE_MAX, true);
        free(proc);
    }
    const char *mi = here ? MOUNTINFO() : mountinfo, *cg = here ? SELF_CGROUP() : cgroups;
    char *own = cg ? own_path_in(cg, option) : NULL;
    bool ro;
    if (own && mi && find_mount_in(mi, option, &point, &mroot, &ro))
        dir = dir_of(point, mroot, own);
    if (path)
        *path = own;
    else
        free(own);
    free(point);
    free(mroot);
    free(mountinfo);
    free(cgroups);
    return dir;
}

/* Whether this process is in dir: written nowhere else. */
bool cgroup_lists_self(const char *dir)
{
    char path[4096], *line = NULL;
    size_t cap = 0;
    bool found = false;
    long self = (long)getpid();
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    while (f && !found && getline(&line, &cap, f) > 0)
        found = strtol(line, NULL, 10) == self;
    free(line);
    if (f)
        fclose(f);
    return found;
}

/*
 * Where a hierarchy's cgroup of this process is when the hierarchy is
 * mounted where systemd and every container runtime mount it, with its
 * root at the mount point: /sys/fs/cgroup (cgroup2) or /sys/fs/cgroup/NAME
 * (v1). Trying there first spares reading mountinfo (the kernel resolves
 * every mount's path for it, ~40 us); a mount elsewhere, or of a subtree
 * (a v1 container without a cgroup namespace), has no such directory or
 * does not list this process, and mountinfo decides.
 */
static bool standard_dir(const char *v1_name, const char *path, bool listed, char **point,
                         char **dir)
{
    enum cg_mode mode = cgroup_mode();
    if (path == NULL || strncmp(path, "/..", 3) == 0 ||
        (v1_name ? mode != CG_LEGACY && mode != CG_HYBRID : mode != CG_UNIFIED))
        return false;
    /*
     * In a cgroup namespace the path is relative to its root, which may not
     * be the mount's: unless the process is listed there, only mountinfo
     * (whose roots say where each mount starts) can tell.
     */
    if (!listed && cgroup_namespaced())
        return false;
    char *pt = v1_name ? xasprintf("/sys/fs/cgroup/%s", v1_name) : xstrdup("/sys/fs/cgroup");
    char *d = dir_of(pt, "/", path);
    struct stat st;
    if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode) || (listed && !cgroup_lists_self(d))) {
        free(pt);
        free(d);
        return false;
    }
    free(*point);
    *point = pt;
    *dir = d;
    return true;
}

/*
 * Whether systemd delegated this process's unit: it marks the unit's cgroup
 * in its own hierarchy (cgroup2, or name=systemd on a v1-only host), not in
 * the v1 memory one.
 */
static bool unit_delegated(const struct cgroup *cg)
{
    if (cg->v2)
        return delegated(cg->dir);
    char *point = NULL, *root = NULL, *path = NULL, *dir = NULL;
    bool ro, yes = false;
    if (cg->mode == CG_HYBRID && find_mount(NULL, &point, &root, &ro))
        path = own_path(NULL);
    else if (find_mount("name=systemd", &point, &root, &ro))
        path = own_path("name=systemd");
    if (path && (dir = dir_of(point, root, path)) != NULL)
        yes = delegated(dir);
    free(point);
    free(root);
    free(path);
    free(dir);
    return yes;
}

static void read_current(struct cgroup *cg)
{
    uint64_t v;
    bool max;
    if (!cg->v2 && read_u64(cg->dir, "memory.swappiness", &v, &max) && !max && v <= 100) {
        cg->swappiness_known = true;
        cg->swappiness = (int)v;
    }
    if (cg->v2 && read_u64(cg->dir, "memory.swap.max", &v, &max)) {
        cg->swap_max_known = true;
        cg->swap_max = max ? UINT64_MAX : v;
    }
}

/* Whether a cgroup2 directory offers a controller to its own processes and children. */
static bool offers(const char *dir, const char *controller)
{
    char ctl[4096];
    snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", dir);
    return read_line_file(ctl, ctl, sizeof(ctl)) && cgroup_has_word(ctl, controller, ' ');
}

/*
 * Who may write the cgroup at dir, whatever the controller: a read-only
 * cgroupfs is the runtime's, a unit's cgroup without Delegate=yes is
 * systemd's, one this user cannot write is another's; the rest is
 * tunerun's. why says why not, for messages.
 */
static enum cg_owner owner_of(const struct cgroup *cg, const char *dir, bool ro, char *why,
                              size_t n)
{
    struct statvfs vfs;
    if (ro || (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))) {
        bool service = ends_with(cg->unit, ".service");
        snprintf(why, n, "the cgroup filesystem is read-only here%s",
                 service && cg->container
                     ? " (the unit's ProtectControlGroups=, or the container's)"
                 : service       ? " (the unit's ProtectControlGroups=)"
                 : cg->container ? " (a container)"
                                 : "");
        return CG_OWN_READONLY;
    }
    if (cg->unit[0] && !unit_delegated(cg)) {
        snprintf(why, n, "%s's cgroup belongs to systemd (the unit has no Delegate=yes)", cg->unit);
        return CG_OWN_UNIT;
    }
    if (access(dir, W_OK) != 0) {
        snprintf(why, n, "cannot write %s: %s", dir, strerror(errno));
        return CG_OWN_DENIED;
    }
    return cg->unit[0] ? CG_OWN_DELEGATED : CG_OWN_HOST;
}

/*
 * The cgroup enforcement makes the service's own cpuset child in, and
 * whether it may. On cgroup2 that is the process's one cgroup, as for the
 * swap policy (a unit's, a container's and a delegation's rules are the
 * same), which must also offer the cpuset controller: its parent enabled
 * it. In cgroup v1's cpuset hierarchy systemd manages nothing, so a unit's
 * processes sit in its root, and a writable one there is the host's to use.
 */
static void detect_cpuset(struct cgroup *cg)
{
    cg->cs_known = true;
    cg->cs_owner = CG_OWN_MISSING;
    cg->cs_v2 = cg->v2;
    if (cg->mode == CG_NONE || (cg->v2 && cg->dir == NULL)) {
        snprintf(cg->cs_why, sizeof(cg->cs_why), "%s", cg->why);
        return;
    }
    if (cg->v2) {
        cg->cs_dir = xstrdup(cg->dir);
        cg->cs_owner = owner_of(cg, cg->cs_dir, false, cg->cs_why, sizeof(cg->cs_why));
        if (cgroup_writable_as(cg->cs_owner) && !offers(cg->cs_dir, "cpuset")) {
            cg->cs_owner = CG_OWN_MISSING;
            snprintf(cg->cs_why, sizeof(cg->cs_why),
                     "the cpuset controller is not enabled for %s (its parent's "
                     "cgroup.subtree_control lacks +cpuset)",
                     cg->path);
        }
        return;
    }
    char *point = NULL, *root = NULL, *path = own_path("cpuset");
    bool ro = false;
    if (standard_dir("cpuset", path, true, &point, &cg->cs_dir)) {
        /* where it always is */
    } else if (path == NULL || !find_mount("cpuset", &point, &root, &ro)) {
        snprintf(cg->cs_why, sizeof(cg->cs_why),
                 "no cgroup v1 cpuset controller is mounted for this process");
        goto out;
    } else if ((cg->cs_dir = dir_of(point, root, path)) == NULL || !cgroup_lists_self(cg->cs_dir)) {
        snprintf(cg->cs_why, sizeof(cg->cs_why),
                 "this process's cpuset cgroup (%s) is not under the mounted cgroupfs (a cgroup "
                 "namespace made after the mount?)",
                 path);
        free(cg->cs_dir);
        cg->cs_dir = NULL;
        goto out;
    }
    /* no unit owns a v1 cpuset: only read-only and permissions stand in the way */
    struct cgroup plain = *cg;
    plain.unit[0] = '\0';
    cg->cs_owner = owner_of(&plain, cg->cs_dir, ro, cg->cs_why, sizeof(cg->cs_why));
out:
    free(point);
    free(root);
    free(path);
}

void cgroup_detect(struct cgroup *cg, bool limit, bool cpuset)
{
    memset(cg, 0, sizeof(*cg));
    cg->mode = cgroup_mode();
    cg->container = cgroup_in_container();
    cg->owner = CG_OWN_MISSING;
    if (cg->mode == CG_NONE) {
        snprintf(cg->why, sizeof(cg->why), "no cgroup filesystem at /sys/fs/cgroup");
        return;
    }
    cg->v2 = cg->mode == CG_UNIFIED;
    char *point = NULL, *root = NULL;
    bool ro = false;
    cg->path = own_path(cg->v2 ? NULL : "memory");
    if (standard_dir(cg->v2 ? NULL : "memory", cg->path, true, &point, &cg->dir)) {
        /* found where it always is */
    } else if (cg->path == NULL || !find_mount(cg->v2 ? NULL : "memory", &point, &root, &ro)) {
        snprintf(cg->why, sizeof(cg->why), "no %s memory controller is mounted for this process",
                 cg->v2 ? "cgroup2" : "cgroup v1");
        goto out;
    } else if ((cg->dir = dir_of(point, root, cg->path)) == NULL || !cgroup_lists_self(cg->dir)) {
        /* the path is relative to the hierarchy's root; the mount may show a subtree of it */
        snprintf(cg->why, sizeof(cg->why),
                 "this process's memory cgroup (%s) is not under the mounted cgroupfs (a cgroup "
                 "namespace made after the mount?)",
                 cg->path);
        free(cg->dir);
        cg->dir = NULL;
        goto out;
    }
    if (limit) {
        cg->mem_limit = memory_limit(cg->dir, point, cg->v2);
        cg->cpu_quota = cpu_quota(cg);
    }
    read_current(cg);

    const char *base = strrchr(cg->path, '/');
    base = base ? base + 1 : cg->path;
    if (ends_with(base, ".service") || ends_with(base, ".scope"))
        snprintf(cg->unit, sizeof(cg->unit), "%s", base);
    cg->owner = owner_of(cg, cg->dir, ro, cg->why, sizeof(cg->why));
    if (cgroup_writable(cg) && cg->v2 && !offers(cg->dir, "memory")) {
        cg->owner = CG_OWN_MISSING;
        snprintf(cg->why, sizeof(cg->why),
                 "the memory controller is not enabled for %s (its parent's "
                 "cgroup.subtree_control lacks +memory)",
                 cg->path);
    }
out:
    free(point);
    free(root);
    if (cpuset)
        detect_cpuset(cg);
}

/*
 * The cgroup whose cpuset this process lives by. /proc/self/cpuset names
 * it (as hwloc reads it): on cgroup2 that is the nearest ancestor with the
 * cpuset controller enabled, which the process's own cgroup often is not
 * (a slice's AllowedCPUs= holds for the services under it). Without that
 * file, the process's own cgroup.
 */
static char *cpuset_path(bool v2)
{
    char *path = read_text("/proc/self", "cpuset", FILE_MAX);
    if (path == NULL || path[0] != '/') {
        free(path);
        path = own_path(v2 ? NULL : "cpuset");
    }
    return path;
}

/* Whether the cgroup2 hierarchy mounted at point holds the cpuset controller. */
static bool holds_cpuset(const char *point)
{
    char ctl[4096];
    snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", point);
    return read_line_file(ctl, ctl, sizeof(ctl)) && cgroup_has_word(ctl, "cpuset", ' ');
}

void cgroup_cpuset(char **cpus, char **mems)
{
    *cpus = *mems = NULL;
    enum cg_mode mode = cgroup_mode();
    if (mode == CG_NONE)
        return;
    /* cgroup2 holds the controller unless a v1 hierarchy has it (hybrid, v1) */
    bool v2 = mode == CG_UNIFIED && holds_cpuset("/sys/fs/cgroup"), ro;
    char *point = NULL, *root = NULL, *dir = NULL, *path = cpuset_path(v2);
    if (!standard_dir(v2 ? NULL : "cpuset", path, false, &point, &dir)) {
        /* mounted elsewhere: where mountinfo says, the cgroup2 hierarchy first */
        bool found = find_mount(NULL, &point, &root, &ro) && holds_cpuset(point);
        if (found != v2) {
            free(path);
            path = cpuset_path(v2 = found);
        }
        if (found || find_mount("cpuset", &point, &root, &ro))
            dir = path ? dir_of(point, root, path) : NULL;
    }
    if (dir && v2) {
        /* the effective sets: what the ancestors' sets leave this cgroup */
        *cpus = read_text(dir, "cpuset.cpus.effective", FILE_MAX);
        *mems = read_text(dir, "cpuset.mems.effective", FILE_MAX);
    } else if (dir) {
        /* a hierarchy mounted with noprefix, or the old cpuset filesystem, drops "cpuset." */
        *cpus = read_text(dir, "cpuset.cpus", FILE_MAX);
        *mems = read_text(dir, "cpuset.mems", FILE_MAX);
        if (*cpus == NULL && *mems == NULL) {
            *cpus = read_text(dir, "cpus", FILE_MAX);
            *mems = read_text(dir, "mems", FILE_MAX);
        }
    }
    free(point);
    free(root);
    free(path);
    free(dir);
}

char *cgroup_cpuset_dir_of(long pid)
{
    char proc[64], *point = NULL, *root = NULL, *dir = NULL;
    snprintf(proc, sizeof(proc), "/proc/%ld", pid);
    char *path = read_text(proc, "cpuset", FILE_MAX);
    const char *base = path ? strrchr(path, '/') : NULL;
    bool v2 = cgroup_mode() == CG_UNIFIED, ro;
    /* a launch's own, tunerun.NAME.PID: never a swap policy's shared child (v2) */
    const char *dot = base ? strrchr(base, '.') : NULL;
    bool own = dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1);
    if (base && strncmp(base + 1, "tunerun.", 8) == 0 && own &&
        find_mount(v2 ? NULL : "cpuset", &point, &root, &ro))
        dir = dir_of(point, root, path);
    free(point);
    free(root);
    free(path);
    return dir;
}

void cgroup_free(struct cgroup *cg)
{
    free(cg->cs_dir);
    free(cg->dir);
    free(cg->path);
    memset(cg, 0, sizeof(*cg));
}

void cgroup_forget_self(void)
{
    free(cgroup_cache);
    cgroup_cache = NULL;
}
