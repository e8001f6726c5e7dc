/*
 * disk.c - where a path's data lives: its mount, its block device, and the
 * disks under that device with their NUMA nodes, from mountinfo and sysfs.
 */
#include "disk.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define DISK_DEPTH 8 /* device-mapper over md over partitions is 3; a loop would be endless */

static const char *prefix(const char *root)
{
    return strcmp(root, "/") == 0 ? "" : root;
}

static bool rd(const char *root, const char *path, char *buf, size_t n)
{
    char full[8192];
    snprintf(full, sizeof(full), "%.4000s%.4000s", prefix(root), path);
    return read_line_file(full, buf, n);
}

/*
 * The mount holding path, from mountinfo: the longest mount point that is a
 * prefix of it (on this host, the one whose device is `want`, when known).
 * Gives its device, mount point and source.
 */
static bool mount_of(const char *root, const char *path, bool by_dev, unsigned want_maj,
                     unsigned want_min, unsigned *maj, unsigned *min, char *mnt, size_t mn,
                     char *src, size_t sn)
{
    char full[4096];
    snprintf(full, sizeof(full), "%s/proc/self/mountinfo", prefix(root));
    FILE *f = fopen(full, "re");
    char *line = NULL;
    size_t cap = 0, best = 0;
    bool found = false;
    while (f && getline(&line, &cap, f) > 0) {
        unsigned a, b;
        char point[4096], source[4096] = "";
        char *sep = strstr(line, " - ");
        if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &a, &b, point) != 3 || sep == NULL)
            continue;
        sscanf(sep + 3, "%*s %4095s", source);
        mountinfo_unescape(point);
        mountinfo_unescape(source);
        size_t n = strlen(point);
        bool under = strcmp(point, "/") == 0 ||
                     (strncmp(path, point, n) == 0 && (path[n] == '/' || path[n] == '\0'));
        if (!under || (by_dev && (a != want_maj || b != want_min)) || (found && n < best))
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
    char src[4096];
    if (strcmp(root, "/") != 0) {
        if (mount_of(root, path, false, 0, 0, maj, min, mnt, mn, src, sizeof(src)))
            return true;
        errno = ENOENT;
        return false;
    }
    char *real = realpath(path, NULL);
    struct stat st;
    if (real == NULL || stat(real, &st) < 0) {
        int saved = errno;
        free(real);
        errno = saved;
        return false;
    }
    if (S_ISBLK(st.st_mode)) { /* a device node stands for itself */
        *maj = major(st.st_rdev);
        *min = minor(st.st_rdev);
        snprintf(mnt, mn, "%s", real);
        free(real);
        return true;
    }
    *maj = major(st.st_dev);
    *min = minor(st.st_dev);
    bool found = mount_of(root, real, true, *maj, *min, maj, min, mnt, mn, src, sizeof(src));
    struct stat dev;
    if (found && *maj == 0 && strncmp(src, "/dev/", 5) == 0 && stat(src, &dev) == 0 &&
        S_ISBLK(dev.st_mode)) {
        *maj = major(dev.st_rdev); /* btrfs: its st_dev is anonymous; its mount names the disk */
        *min = minor(dev.st_rdev);
    } else if (!found) {
        *maj = major(st.st_dev);
        *min = minor(st.st_dev);
        snprintf(mnt, mn, "?");
    }
    free(real);
    return true;
}

/*
 * The NUMA node of the device a sysfs directory belongs to: the first
 * `numa_node` on the way up (the NVMe controller, the PCI function of a
 * SATA or virtio one); -1 when none says one.
 */
static int node_up(const char *root, const char *path)
{
    char *dir = realpath(path, NULL), top[4096], buf[32];
    if (dir == NULL)
        return -1;
    snprintf(top, sizeof(top), "%s/sys/devices/", prefix(root));
    size_t n = strlen(top);
    int node = -1;
    for (char *slash; node < 0 && strncmp(dir, top, n) == 0 &&
                      (slash = strrchr(dir, '/')) != NULL && (size_t)(slash - dir) >= n;
         *slash = '\0') {
        char file[8192], *end;
        snprintf(file, sizeof(file), "%s/numa_node", dir);
        if (read_line_file(file, buf, sizeof(buf))) {
            long v = strtol(buf, &end, 10);
            if (end != buf && *end == '\0' && v >= 0 && (unsigned long)v <= BITMAP_MAX_INDEX)
                node = (int)v;
            else
                break; /* -1: the device is known to have none */
        }
    }
    free(dir);
    return node;
}

/*
 * The nodes a disk's IO goes through. Most disks hang off one device. A
 * namespace of an NVMe subsystem that Linux drives with native multipath
 * (nvme_core.multipath, the default) is a virtual disk under the
 * subsystem, nvmeSnN; its paths nvmeScCnN go through the controllers
 * nvmeC, and the kernel sends each IO down the path nearest the CPU that
 * submits it (iopolicy numa), so every controller's node is as near.
 */
static void disk_nodes_of(const char *root, unsigned maj, unsigned min, hwloc_bitmap_t nodes)
{
    char link[8192];
    snprintf(link, sizeof(link), "%s/sys/dev/block/%u:%u", prefix(root), maj, min);
    char *dir = realpath(link, NULL);
    char *head = dir ? strrchr(dir, '/') : NULL;
    unsigned sub, ns;
    int end = 0;
    if (head && strstr(dir, "/nvme-subsystem/") &&
        sscanf(head + 1, "nvme%un%u%n", &sub, &ns, &end) == 2 && head[1 + end] == '\0') {
        *head = '\0'; /* the subsystem's directory: a link per controller */
        DIR *s = opendir(dir);
        struct dirent *e;
        while (s && (e = readdir(s)) != NULL) {
            unsigned ctrl;
            int len = 0;
            char path[8192];
            struct stat st;
            if (sscanf(e->d_name, "nvme%u%n", &ctrl, &len) != 1 || e->d_name[len] != '\0')
                continue;
            snprintf(path, sizeof(path), "%s/%s/nvme%uc%un%u", dir, e->d_name, sub, ctrl, ns);
            if (stat(path, &st) != 0)
                continue; /* a controller of the subsystem with no path to this namespace */
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            int node = node_up(root, path);
            if (node >= 0)
                hwloc_bitmap_set(nodes, (unsigned)node);
        }
        if (s)
            closedir(s);
    } else {
        int node = node_up(root, link);
        if (node >= 0)
            hwloc_bitmap_set(nodes, (unsigned)node);
    }
    free(dir);
}

#define DISK_MAX 64 /* disks under one device-mapper or md device that are told apart */

static void leaves(const char *root, unsigned maj, unsigned min, int depth, struct disk **out,
                   size_t *n)
{
    char path[512], buf[256];
    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/dev", maj, min);
    if (depth > DISK_DEPTH || *n >= DISK_MAX || !rd(root, path, buf, sizeof(buf)))
        return;
    /* a partition: its disk is the parent directory, named in ../dev */
    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", maj, min);
    if (rd(root, path, buf, sizeof(buf))) {
        unsigned pmaj, pmin;
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev", maj, min);
        if (rd(root, path, buf, sizeof(buf)) && sscanf(buf, "%u:%u", &pmaj, &pmin) == 2)
            leaves(root, pmaj, pmin, depth + 1, out, n);
        return;
    }
    /* device-mapper, md: its own queue only passes requests on; the devices under it hold them */
    char slaves[4096];
    snprintf(slaves, sizeof(slaves), "%s/sys/dev/block/%u:%u/slaves", prefix(root), maj, min);
    DIR *s = opendir(slaves);
    struct dirent *e;
    bool stacked = false;
    while (s && (e = readdir(s)) != NULL) {
        unsigned smaj, smin;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/slaves/%.200s/dev", maj, min, e->d_name);
        if (rd(root, path, buf, sizeof(buf)) && sscanf(buf, "%u:%u", &smaj, &smin) == 2) {
            stacked = true;
            leaves(root, smaj, smin, depth + 1, out, n);
        }
    }
    if (s)
        closedir(s);
    if (stacked)
        return;
    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/scheduler", maj, min);
    if (!rd(root, path, buf, sizeof(buf)))
        return;
    for (size_t k = 0; k < *n; k++)
        if ((*out)[k].maj == maj && (*out)[k].min == min)
            return; /* two partitions of one disk under one md */
    *out = xrealloc(*out, (*n + 1) * sizeof(**out));
    struct disk *d = &(*out)[(*n)++];
    *d = (struct disk){maj, min, "", hwloc_bitmap_alloc()};
    disk_nodes_of(root, maj, min, d->nodes);
    snprintf(d->name, sizeof(d->name), "%u:%u", maj, min);
    char uevent[4096], full[4096];
    snprintf(full, sizeof(full), "%s/sys/dev/block/%u:%u/uevent", prefix(root), maj, min);
    FILE *f = fopen(full, "re");
    while (f && fgets(uevent, sizeof(uevent), f))
        if (strncmp(uevent, "DEVNAME=", 8) == 0) {
            uevent[strcspn(uevent, "\n")] = '\0';
            snprintf(d->name, sizeof(d->name), "%.63s", uevent + 8);
        }
    if (f)
        fclose(f);
}

struct disk *disk_leaves(const char *root, unsigned maj, unsigned min, size_t *n)
{
    struct disk *out = NULL;
    *n = 0;
    leaves(root, maj, min, 0, &out, n);
    return out;
}

void disk_free(struct disk *d, size_t n)
{
    for (size_t k = 0; k < n; k++)
        hwloc_bitmap_free(d[k].nodes);
    free(d);
}

void disk_nodes(const char *path, hwloc_bitmap_t nodes, char **what)
{
    hwloc_bitmap_zero(nodes);
    unsigned maj, min;
    char mnt[4096];
    if (!disk_of_path("/", path, &maj, &min, mnt, sizeof(mnt))) {
        *what = xasprintf("%s: %s", path, strerror(errno));
        return;
    }
    size_t n;
    struct disk *d = disk_leaves("/", maj, min, &n);
    if (n == 0) {
        *what = xasprintf("%s is on %s (device %u:%u), which is no disk of this machine (tmpfs, "
                          "overlay, NFS?)",
                          path, mnt, maj, min);
        return;
    }
    for (size_t k = 0; k < n; k++)
        hwloc_bitmap_or(nodes, nodes, d[k].nodes);
    bool some = !hwloc_bitmap_iszero(nodes);
    char *list = xstrdup("");
    for (size_t k = 0; k < n; k++) {
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
    if (!some)
        *what = xasprintf("%s is on %s, and sysfs gives no NUMA node for it", path, list);
    else
        *what = xasprintf("%s is on %s", path, list);
    free(list);
    disk_free(d, n);
}
