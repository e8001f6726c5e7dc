/*
 * cgroup.c - the cgroup mode, this process's memory cgroup, and the child
 * cgroup a service's swap policy lives in.
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

#define STALE_SECONDS 60 /* a tunerun.* child this old and empty is left over */

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

static bool has_word(const char *list, const char *word, char sep)
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
        if (option ? strcmp(fstype, "cgroup") != 0 || super == NULL || !has_word(super, option, ',')
                   : strcmp(fstype, "cgroup2") != 0)
            continue;
        mountinfo_unescape(r);
        mountinfo_unescape(pt);
        free(*point);
        free(*root);
        *point = xstrdup(pt);
        *root = xstrdup(r);
        *ro = has_word(opts, "ro", ',');
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
            v2 ? strncmp(line, "0:", 2) == 0 && a[1] == '\0' : has_word(a + 1, option, ',');
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
static bool lists_self(const char *dir)
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
    if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode) || (listed && !lists_self(d))) {
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

void cgroup_detect(struct cgroup *cg, bool limit)
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
    } else if ((cg->dir = dir_of(point, root, cg->path)) == NULL || !lists_self(cg->dir)) {
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
    char ctl[4096];
    struct statvfs vfs;
    if (ro || (statvfs(cg->dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))) {
        cg->owner = CG_OWN_READONLY;
        bool service = ends_with(cg->unit, ".service");
        snprintf(cg->why, sizeof(cg->why), "the cgroup filesystem is read-only here%s",
                 service && cg->container
                     ? " (the unit's ProtectControlGroups=, or the container's)"
                 : service       ? " (the unit's ProtectControlGroups=)"
                 : cg->container ? " (a container)"
                                 : "");
    } else if (cg->unit[0] && !unit_delegated(cg)) {
        cg->owner = CG_OWN_UNIT;
        snprintf(cg->why, sizeof(cg->why),
                 "%s's cgroup belongs to systemd (the unit has no Delegate=yes)", cg->unit);
    } else if (access(cg->dir, W_OK) != 0) {
        cg->owner = CG_OWN_DENIED;
        snprintf(cg->why, sizeof(cg->why), "cannot write %s: %s", cg->dir, strerror(errno));
    } else if (cg->v2 &&
               (snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", cg->dir),
                !read_line_file(ctl, ctl, sizeof(ctl)) || !has_word(ctl, "memory", ' '))) {
        cg->owner = CG_OWN_MISSING;
        snprintf(cg->why, sizeof(cg->why),
                 "the memory controller is not enabled for %s (its parent's "
                 "cgroup.subtree_control lacks +memory)",
                 cg->path);
    } else {
        cg->owner = cg->unit[0] ? CG_OWN_DELEGATED : CG_OWN_HOST;
    }
out:
    free(point);
    free(root);
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
    return read_line_file(ctl, ctl, sizeof(ctl)) && has_word(ctl, "cpuset", ' ');
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

void cgroup_free(struct cgroup *cg)
{
    free(cg->dir);
    free(cg->path);
    memset(cg, 0, sizeof(*cg));
}

/* ---- entering a child ---------------------------------------------------- */

static char entered[4096], left_from[4096]; /* for cgroup_leave() */
static bool left_v2;

/* value into `file` of the cgroup directory open at dfd */
static int write_at(int dfd, const char *file, const char *value)
{
    int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno;
    ssize_t w = write(fd, value, strlen(value));
    int error = w < 0 ? errno : 0;
    if (close(fd) < 0 && error == 0)
        error = errno;
    return error;
}

static int open_dir(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

static int write_file(const char *dir, const char *file, const char *value)
{
    int dfd = open_dir(dir);
    if (dfd < 0)
        return errno;
    int error = write_at(dfd, file, value);
    close(dfd);
    return error;
}

/*
 * Move this process into dir. Writing a pid to cgroup.procs takes the
 * kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
 * grace period unless a move happened moments before: about 7.5 ms per
 * launch here when launches are seconds apart. On v1, "0" written to
 * `tasks` moves the calling thread alone and skips that lock (the kernel
 * needs no threadgroup stability for current): 65 us. tunerun has one
 * thread, and the exec that follows keeps this thread's cgroup. v2 has no
 * `tasks` for domain cgroups, so there it pays the grace period.
 */
static int move_self_at(int dfd, bool v2)
{
    free(cgroup_cache); /* read again if asked: this process is about to move */
    cgroup_cache = NULL;
    if (!v2) {
        int error = write_at(dfd, "tasks", "0");
        /* a delegation may grant cgroup.procs alone (cgcreate -a without -t) */
        if (error != EACCES && error != EPERM && error != ENOENT)
            return error;
    }
    char pid[32];
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    return write_at(dfd, "cgroup.procs", pid);
}

static int move_self(const char *dir, bool v2)
{
    int dfd = open_dir(dir);
    if (dfd < 0)
        return errno;
    int error = move_self_at(dfd, v2);
    close(dfd);
    return error;
}

/* Empty tunerun.* children of dir that services before this one left: rmdir keeps any in use. */
static void sweep(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        char path[4096];
        if (strncmp(e->d_name, "tunerun.", 8) != 0 ||
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_mtime < now - STALE_SECONDS)
            rmdir(path); /* EBUSY while a process is in it */
    }
    if (d)
        closedir(d);
}

/*
 * One child per profile and value, shared by every launch that asks for
 * the same: tunerun.mysql.swappiness-1. A launch then costs one move (a
 * mkdir and a write only the first time), the number of children stays
 * that of the profiles in use however often services restart, and the
 * kernel keeps no dying memory cgroup per launch. The values are in the
 * name, so two launches sharing a child never disagree about it.
 */
static bool child_name(char *child, size_t n, const char *dir, const char *name, bool v2,
                       int swappiness, bool set_swap_max, uint64_t swap_max)
{
    int len;
    if (!v2 && swappiness >= 0)
        len = snprintf(child, n, "%s/tunerun.%s.swappiness-%d", dir, name, swappiness);
    else if (v2 && set_swap_max && swap_max == UINT64_MAX)
        len = snprintf(child, n, "%s/tunerun.%s.swap_max-max", dir, name);
    else if (v2 && set_swap_max)
        len = snprintf(child, n, "%s/tunerun.%s.swap_max-%llu", dir, name,
                       (unsigned long long)swap_max);
    else
        len = snprintf(child, n, "%s/tunerun.%s", dir, name);
    /* cut, the values would be gone from the name, and launches asking for others share it */
    return len >= 0 && (size_t)len < n;
}

static bool created;  /* this launch made `entered` (cgroup_leave removes only that) */
static bool enabled;  /* this launch enabled the memory controller for the parent's children */
static uid_t made_by; /* who made the child, when that is why it was not entered */

/* The step enter_once() names when the child is someone else's. */
static const char not_ours[] = "owner";

static int enter_once(const char *dir, const char *child, bool v2, int swappiness,
                      bool set_swap_max, uint64_t swap_max, const char **step, const char **in)
{
    char value[32];
    struct stat st;
    *step = "mkdir";
    *in = child;
    created = mkdir(child, 0755) == 0;
    if (!created && errno != EEXIST)
        return errno;
    /*
     * The child, found or made, must be this user's: one that whoever may
     * write the parent (a delegated cgroup) made, or put in the place of
     * ours, is theirs to set limits in, and the service would live by them
     * (a memory limit is an OOM kill). Its owner is checked on the very
     * directory the writes then go through; a cgroupfs has no symlinks,
     * but an existing name is checked, not trusted.
     */
    int cfd = open_dir(child);
    if (cfd < 0)
        return errno == ELOOP ? ENOTDIR : errno;
    int error = 0;
    if (fstat(cfd, &st) < 0) {
        error = errno;
        goto out;
    }
    if (st.st_uid != geteuid()) {
        made_by = st.st_uid;
        *step = not_ours;
        error = EPERM;
        goto out;
    }
    if (!v2 && swappiness >= 0) {
        /* v1: the value first (again, if the child was there), then the move */
        snprintf(value, sizeof(value), "%d", swappiness);
        *step = "memory.swappiness";
        if ((error = write_at(cfd, *step, value)) != 0)
            goto out;
    }
    *step = v2 ? "cgroup.procs" : "tasks";
    error = move_self_at(cfd, v2);
    if (error || !v2 || !set_swap_max)
        goto out;
    /*
     * v2: a controller reaches a child only through its parent's
     * subtree_control, and a cgroup with processes may enable none (no
     * internal processes): so move first, then enable, then set.
     */
    char ctl[1024], path[4096];
    if (snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir) >= (int)sizeof(path)) {
        *step = "cgroup.subtree_control";
        *in = dir;
        error = ENAMETOOLONG;
        goto out;
    }
    bool known = read_line_file(path, ctl, sizeof(ctl));
    if (!known || !has_word(ctl, "memory", ' ')) {
        *step = "cgroup.subtree_control";
        *in = dir;
        if ((error = write_file(dir, *step, "+memory")) != 0)
            goto out;
        /*
         * Ours to take back only where it was surely off, and below the
         * root: the root cgroup takes processes back with it on, and its
         * children are every other service's
         */
        char type[4096];
        enabled = known &&
                  snprintf(type, sizeof(type), "%s/cgroup.type", dir) < (int)sizeof(type) &&
                  access(type, F_OK) == 0;
    }
    *in = child;
    if (swap_max == UINT64_MAX)
        snprintf(value, sizeof(value), "max");
    else
        snprintf(value, sizeof(value), "%llu", (unsigned long long)swap_max);
    *step = "memory.swap.max";
    error = write_at(cfd, *step, value);
out:
    close(cfd);
    return error;
}

/*
 * Undo what enter_once() enabled in dir's cgroup.subtree_control: a cgroup
 * v2 parent below the root with a controller enabled for its children
 * takes no process back (no internal processes), and is no longer the
 * parent it was. Only this launch's +memory, where it was off: no child of
 * it had memory settings then, and only one made in the moments until a
 * failed launch takes it back could lose its own (the kernel refuses
 * -memory only while a child enables it for its own children: EBUSY).
 */
static void disable_memory(const char *dir)
{
    if (enabled && write_file(dir, "cgroup.subtree_control", "-memory") == 0)
        enabled = false;
}

bool cgroup_enter(const char *dir, bool v2, const char *name, int swappiness, bool set_swap_max,
                  uint64_t swap_max, char *where, size_t where_n, struct err *e)
{
    char child[4096];
    int error;
    const char *step, *in;
    if (!child_name(child, sizeof(child), dir, name, v2, swappiness, set_swap_max, swap_max)) {
        error = ENAMETOOLONG;
        child_name(child, sizeof(child), "", name, v2, swappiness, set_swap_max, swap_max);
        snprintf(where, where_n, "%s", dir);
        err_errno(e, error, "cannot make %s in this process's cgroup: %s (its path is %zu bytes)",
                  child + 1, strerror(error), strlen(dir));
        return false;
    }
    sweep(dir);
    snprintf(where, where_n, "%s", child);
    /*
     * Another launch removed the empty child between our mkdir and the
     * writes in it (its sweep, or a failed launch leaving it): ENOENT
     * where the name is gone, ENODEV from a file opened in it just before.
     */
    for (int tries = 0; tries < 3; tries++) {
        error = enter_once(dir, child, v2, swappiness, set_swap_max, swap_max, &step, &in);
        if ((error != ENOENT && error != ENODEV) || strcmp(in, child) != 0)
            break;
    }
    if (error != 0) {
        if (step == not_ours) { /* refused before any move: nothing to undo */
            err_errno(e, error,
                      "%s: made by uid %u, not by tunerun's (uid %u): a cgroup another user "
                      "can set limits in is not entered (remove it: rmdir %s)",
                      in, (unsigned)made_by, (unsigned)geteuid(), in);
            return false;
        }
        /* back to where it was: on v2 only once the parent's +memory, if ours, is gone again */
        bool back = !lists_self(child) || (disable_memory(dir), move_self(dir, v2) == 0);
        err_errno(e, error, "%s/%s: %s%s%s", in, step, strerror(error),
                  error == EBUSY ? " (other processes share this cgroup: cgroup v2 lets a cgroup "
                                   "with processes enable no controller for its children)"
                                 : "",
                  back ? ""
                       : "; still in the child: its parent takes no process back, and a "
                         "later launch removes it once empty");
        if (back && created)
            rmdir(child);
        return false;
    }
    snprintf(entered, sizeof(entered), "%s", child);
    snprintf(left_from, sizeof(left_from), "%s", dir);
    left_v2 = v2;
    return true;
}

void cgroup_leave(void)
{
    if (entered[0] == '\0')
        return;
    disable_memory(left_from);
    move_self(left_from, left_v2);
    if (created)
        rmdir(entered); /* fails, as it should, while another launch's service is in it */
    entered[0] = '\0';
}
