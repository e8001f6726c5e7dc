/*
 * disk.c - where a path's data lives: its mount, its block device, and the
 * disks under that device with their NUMA nodes, from mountinfo and sysfs.
 */
#include "disk.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DISK_DEPTH 8 /* device-mapper over md over partitions is 3; a loop would be endless */

/* Which mount of mountinfo a path is on. */
struct mount_key {
    bool by_id; /* its mount ID (statx's stx_mnt_id, mountinfo's first field) */
    uint64_t id;
    bool by_dev; /* else the longest mount point that is a prefix of it, of this device */
    unsigned maj, min;
};

/* The mount holding path, from mountinfo: its device, mount point and source. */
static bool mount_of(const char *root, const char *path, const struct mount_key *key, unsigned *maj,
                     unsigned *min, char *mnt, size_t mn, char *src, size_t sn)
{
    char full[4096];
    snprintf(full, sizeof(full), "%s/proc/self/mountinfo", root_prefix(root));
    FILE *f = fopen_regular(full);
    char *line = NULL;
    size_t cap = 0, best = 0;
    bool found = false;
    while (f && getline(&line, &cap, f) > 0 && !(found && key->by_id)) {
        unsigned long long id;
        unsigned a, b;
        char point[4096], source[4096] = "";
        char *sep = strstr(line, " - ");
        if (sscanf(line, "%llu %*s %u:%u %*s %4095s", &id, &a, &b, point) != 4 || sep == NULL)
            continue;
        sscanf(sep + 3, "%*s %4095s", source);
        mountinfo_unescape(point);
        mountinfo_unescape(source);
        size_t n = strlen(point);
        bool under =
            key->by_id ? id == key->id : strcmp(point, "/") == 0 || path_within(path, point);
        if (!under || (key->by_dev && (a != key->maj || b != key->min)) || (found && n < best))
            continue;
        best = n;
        *maj = a;
        *min = b;
        snprintf(mnt, mn, "%s", point);
        snprintf(src, sn, "%s", source);
        found = true;
    }
    free(line);
    if (f)
        fclose(f);
    return found;
}

bool disk_of_path(const char *root, const char *path, unsigned *maj, unsigned *min, char *mnt,
                  size_t mn)
{
    char src[4096], here[4096];
    if (mnt == NULL) {
        mnt = here;
        mn = sizeof(here);
    }
    if (strcmp(root, "/") != 0) {
        struct mount_key prefix_only = {0};
        if (mount_of(root, path, &prefix_only, maj, min, mnt, mn, src, sizeof(src)))
            return true;
        errno = ENOENT;
        return false;
    }
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_TYPE | STATX_MNT_ID, &sx) < 0)
        return false;
    if (S_ISBLK(sx.stx_mode)) { /* a device node stands for itself */
        *maj = sx.stx_rdev_major;
        *min = sx.stx_rdev_minor;
        snprintf(mnt, mn, "%s", path);
        return true;
    }
    *maj = sx.stx_dev_major;
    *min = sx.stx_dev_minor;
    if (mnt == here && *maj != 0)
        return true; /* a disk's own device, and no mount asked for: mountinfo says no more */
    /*
     * The mount by its ID (Linux 5.8): a btrfs subvolume's st_dev is its own
     * anonymous device, which mountinfo never shows. Older kernels: the
     * longest mount point over the path with the path's device.
     */
    struct mount_key key = {.by_id = sx.stx_mask & STATX_MNT_ID,
                            .id = sx.stx_mnt_id,
                            .by_dev = !(sx.stx_mask & STATX_MNT_ID),
                            .maj = *maj,
                            .min = *min};
    char *real = key.by_id ? NULL : realpath(path, NULL);
    bool found = (key.by_id || real) &&
                 mount_of(root, real ? real : path, &key, maj, min, mnt, mn, src, sizeof(src));
    struct stat dev;
    if (found && *maj == 0 && strncmp(src, "/dev/", 5) == 0 && stat(src, &dev) == 0 &&
        S_ISBLK(dev.st_mode)) {
        *maj = major(dev.st_rdev); /* btrfs: its mount names the disk its anonymous device hides */
        *min = minor(dev.st_rdev);
    } else if (!found) {
        *maj = sx.stx_dev_major;
        *min = sx.stx_dev_minor;
        snprintf(mnt, mn, "?");
    }
    free(real);
    return true;
}

/*
 * The nodes a disk's IO goes through. Most disks hang off one device. A
 * namespace of an NVMe subsystem that Linux drives with native multipath
 * (nvme_core.multipath, the default) is a virtual disk under the
 * subsystem, nvmeSnN; its paths nvmeScCnN go through the controllers
 * nvmeC, and the kernel sends each IO down the path nearest the CPU that
 * submits it (iopolicy numa), so every controller's node is as near.
 */
static void disk_nodes_of(const char *root, const char *dir, hwloc_bitmap_t nodes)
{
    const char *head = strrchr(dir, '/');
    unsigned sub, ns;
    int end = 0;
    if (strstr(dir, "/nvme-subsystem/") && sscanf(head + 1, "nvme%un%u%n", &sub, &ns, &end) == 2 &&
        head[1 + end] == '\0') {
        char *subsys = xstrdup(dir); /* the subsystem's directory: a link per controller */
        subsys[head - dir] = '\0';
        DIR *s = opendir(subsys);
        struct dirent *e;
        while (s && (e = readdir(s)) != NULL) {
            unsigned ctrl;
            int len = 0;
            if (sscanf(e->d_name, "nvme%u%n", &ctrl, &len) != 1 || e->d_name[len] != '\0')
                continue;
            char *path = xasprintf("%s/%s/nvme%uc%un%u", subsys, e->d_name, sub, ctrl, ns);
            bool reaches = access(path, F_OK) == 0;
            free(path);
            if (!reaches)
                continue; /* a controller of the subsystem with no path to this namespace */
            path = xasprintf("%s/%s", subsys, e->d_name);
            char *ctrl_dir = realpath(path, NULL);
            free(path);
            int node = ctrl_dir ? sysfs_node_up(root, ctrl_dir, NULL) : -1;
            free(ctrl_dir);
            if (node >= 0)
                hwloc_bitmap_set(nodes, (unsigned)node);
        }
        if (s)
            closedir(s);
        free(subsys);
    } else {
        int node = sysfs_node_up(root, dir, NULL);
        if (node >= 0)
            hwloc_bitmap_set(nodes, (unsigned)node);
    }
}

/*
 * A block device's own sysfs directory, where /sys/dev/block/MAJ:MIN
 * leads; NULL when there is none. The link is ../../devices/...: one
 * readlink, where realpath() would read every component.
 */
static char *sys_dir(const char *root, unsigned maj, unsigned min)
{
    char *link = xasprintf("%s/sys/dev/block/%u:%u", root_prefix(root), maj, min);
    char *to = xrealloc(NULL, PATH_MAX), *dir = NULL;
    ssize_t len = readlink(link, to, PATH_MAX - 1);
    if (len > 0) {
        to[len] = '\0';
        if (strncmp(to, "../../devices/", 14) == 0 && strstr(to + 13, "/..") == NULL)
            dir = xasprintf("%s/sys/%s", root_prefix(root), to + 6);
    }
    if (dir == NULL)
        dir = realpath(link, NULL);
    free(to);
    free(link);
    return dir;
}

/*
 * The paths of this walk are made on the heap: it recurses through
 * partitions and stacked devices, and every stack page a launch reaches
 * is one more page fault at every launch.
 */
static bool dev_of(const char *dir, const char *rel, unsigned *maj, unsigned *min)
{
    char *path = xasprintf("%s/%s", dir, rel), buf[64];
    bool ok = read_line_regular(path, buf, sizeof(buf)) && sscanf(buf, "%u:%u", maj, min) == 2;
    free(path);
    return ok;
}

static bool has(const char *dir, const char *rel)
{
    char *path = xasprintf("%s/%s", dir, rel);
    bool ok = access(path, F_OK) == 0;
    free(path);
    return ok;
}

static void leaves(const char *root, unsigned maj, unsigned min, int depth, struct disk **out,
                   size_t *n)
{
    if (depth > DISK_DEPTH || *n >= DISK_MAX)
        return;
    char *dir = sys_dir(root, maj, min);
    if (dir == NULL)
        return;
    unsigned m, k;
    if (has(dir, "partition")) {
        /* a partition: its disk is the directory above */
        if (dev_of(dir, "../dev", &m, &k))
            leaves(root, m, k, depth + 1, out, n);
        free(dir);
        return;
    }
    /* device-mapper, md: its own queue only passes requests on; the devices under it hold them */
    char *slaves = xasprintf("%s/slaves", dir);
    DIR *s = opendir(slaves);
    free(slaves);
    struct dirent *e;
    bool stacked = false;
    while (s && (e = readdir(s)) != NULL) {
        char rel[512];
        snprintf(rel, sizeof(rel), "slaves/%.200s/dev", e->d_name);
        if (e->d_name[0] != '.' && dev_of(dir, rel, &m, &k)) {
            stacked = true;
            leaves(root, m, k, depth + 1, out, n);
        }
    }
    if (s)
        closedir(s);
    bool seen = false;
    for (size_t i = 0; i < *n; i++)
        seen |= (*out)[i].maj == maj && (*out)[i].min == min; /* two partitions under one md */
    if (!stacked && !seen && has(dir, "queue/scheduler")) {
        *out = xrealloc(*out, (*n + 1) * sizeof(**out));
        struct disk *d = &(*out)[(*n)++];
        *d = (struct disk){maj, min, "", hwloc_bitmap_alloc()};
        disk_nodes_of(root, dir, d->nodes);
        /* the kernel's name is the directory's, with '!' where /dev has a '/' (cciss!c0d0) */
        snprintf(d->name, sizeof(d->name), "%.63s", strrchr(dir, '/') + 1);
        for (char *c = d->name; (c = strchr(c, '!')) != NULL;)
            *c = '/';
    }
    free(dir);
}

struct disk *disk_leaves(const char *root, unsigned maj, unsigned min, size_t *n)
{
    struct disk *out = NULL;
    *n = 0;
    /*
     * The walk compares the real paths sysfs's links lead to with the root,
     * so a fixture's root must be a real path too (no link, "." or '/' at
     * its end, and absolute).
     */
    char *real = strcmp(root, "/") != 0 ? realpath(root, NULL) : NULL;
    if (strcmp(root, "/") == 0 || real)
        leaves(real ? real : root, maj, min, 0, &out, n);
    free(real);
    return out;
}

void disk_free(struct disk *d, size_t n)
{
    for (size_t k = 0; k < n; k++)
        hwloc_bitmap_free(d[k].nodes);
    free(d);
}

/*
 * A btrfs over several devices: the disks under each of them, as
 * /sys/fs/btrfs/FSID/devices lists them (its mount names only one).
 * NULL when path is on no such filesystem. Only a directory or a regular
 * file is opened (open_inert()), to ask btrfs for its fsid; for anything
 * else the mount's device stands for the filesystem.
 */
static struct disk *btrfs_leaves(const char *path, size_t *n)
{
    struct statfs sf;
    *n = 0;
    if (statfs(path, &sf) != 0 || sf.f_type != BTRFS_SUPER_MAGIC)
        return NULL;
    /* the path may be the service user's to change: what is asked is what was checked */
    int fd = open_inert(path, true);
    struct btrfs_ioctl_fs_info_args info;
    memset(&info, 0, sizeof(info));
    bool ok = fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type == BTRFS_SUPER_MAGIC &&
              ioctl(fd, BTRFS_IOC_FS_INFO, &info) == 0 && info.num_devices > 1;
    if (fd >= 0)
        close(fd);
    if (!ok)
        return NULL;
    const unsigned char *u = info.fsid;
    char dir[128];
    snprintf(dir, sizeof(dir),
             "/sys/fs/btrfs/%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x/"
             "devices",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    DIR *d = opendir(dir);
    struct dirent *e;
    struct disk *out = NULL;
    while (d && (e = readdir(d)) != NULL) {
        unsigned maj, min;
        char rel[512];
        snprintf(rel, sizeof(rel), "%.200s/dev", e->d_name);
        if (e->d_name[0] != '.' && dev_of(dir, rel, &maj, &min))
            leaves("/", maj, min, 0, &out, n);
    }
    if (d)
        closedir(d);
    return out;
}

#define NEAR_SHOWN 8 /* disks a plan names one by one */

const char *near_status_name(enum near_status s)
{
    static const char *const names[] = {"found", "no_node", "no_disk", "no_path", "no_device"};
    return names[s];
}

enum near_status disk_nodes(const char *root, const char *path, hwloc_bitmap_t nodes, char **what,
                            struct disk **disks, size_t *np)
{
    hwloc_bitmap_zero(nodes);
    *disks = NULL;
    *np = 0;
    unsigned maj, min, rmaj, rmin;
    char mnt[4096];
    if (!disk_of_path(root, path, &maj, &min, NULL, 0)) {
        *what = xasprintf("%s: %s", path, strerror(errno));
        return NEAR_NO_PATH;
    }
    size_t n = 0;
    struct disk *d = strcmp(root, "/") == 0 ? btrfs_leaves(path, &n) : NULL;
    if (n == 0) {
        free(d);
        d = disk_leaves(root, maj, min, &n);
    }
    if (n == 0) {
        /* the mount, to say what it is: read only now, as a disk's own device never needs it */
        if (!disk_of_path(root, path, &maj, &min, mnt, sizeof(mnt)))
            snprintf(mnt, sizeof(mnt), "?");
        *what = xasprintf("%s is on %s (device %u:%u), which is no block device of this machine "
                          "(tmpfs, overlay, NFS, ZFS?)",
                          path, mnt, maj, min);
        return NEAR_NO_DISK;
    }
    for (size_t k = 0; k < n; k++)
        hwloc_bitmap_or(nodes, nodes, d[k].nodes);
    bool some = !hwloc_bitmap_iszero(nodes);
    char *list = xstrdup("");
    size_t shown = n < NEAR_SHOWN ? n : NEAR_SHOWN;
    for (size_t k = 0; k < shown; k++) {
        int w = hwloc_bitmap_weight(d[k].nodes);
        char *at = bitmap_list(d[k].nodes);
        char *more = xasprintf("%s%s%s%s%s%s", list, k ? ", " : "", d[k].name,
                               !some    ? ""
                               : w == 0 ? " (no node"
                               : w == 1 ? " (node "
                                        : " (nodes ",
                               some && w > 0 ? at : "", some ? ")" : "");
        free(at);
        free(list);
        list = more;
    }
    /* the mysql profile's default, /var/lib/mysql, is there even where the data is not */
    bool root_disk = strcmp(path, "/") != 0 && disk_of_path(root, "/", &rmaj, &rmin, NULL, 0) &&
                     rmaj == maj && rmin == min;
    char more[64] = "";
    if (n > shown)
        snprintf(more, sizeof(more), " and %s%zu more", n >= DISK_MAX ? "at least " : "",
                 n - shown);
    *what = xasprintf("%s is on %s%s%s%s", path, list, more,
                      some    ? ""
                      : n > 1 ? ", and sysfs gives no NUMA node for them"
                              : ", and sysfs gives no NUMA node for it",
                      root_disk ? "; so is /, whose filesystem it shares: if the data lives "
                                  "elsewhere, name that in near"
                                : "");
    free(list);
    *disks = d;
    *np = n;
    return some ? NEAR_FOUND : NEAR_NO_NODE;
}
