/*
 * disk.h - where a path's data lives: the mount and block device holding
 * it, and the disks under that device with the NUMA node each hangs off.
 *
 * doctor reads it for the IO scheduler of a service's data, and a launch
 * for the profile's `near`: a service that fears IO latency runs on the
 * node its disk's controller is attached to. hwloc reports block devices
 * only with its PCI and Linux I/O discovery on, which costs a walk of all
 * of sysfs's PCI tree at every launch and which tunerun keeps off
 * (DESIGN.md); the kernel's own answer is a few sysfs files, read here.
 *
 * Every file is read under `root` ("/" on this host), so that doctor's
 * fixture trees shaped like another host's /proc and /sys work the same.
 */
#ifndef TUNERUN_DISK_H
#define TUNERUN_DISK_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The block device holding path, and its mount point. On this host: the
 * path's own device (st_dev, after its symbolic links), and for a
 * filesystem with an anonymous device (btrfs) the device its mount names;
 * mnt is "?" when mountinfo has no line for it; with mnt NULL, mountinfo
 * is read only for an anonymous device. Under a fixture root: the mount
 * whose point is the longest prefix of path. False, with errno set, when
 * there is none (the path cannot be resolved, or no mount holds it).
 */
bool disk_of_path(const char *root, const char *path, unsigned *maj, unsigned *min, char *mnt,
                  size_t mn);

struct disk {
    unsigned maj, min;
    char name[64];        /* the kernel's name (nvme0n1, sda, cciss/c0d0) */
    hwloc_bitmap_t nodes; /* the NUMA nodes its IO goes through (see disk.c); empty: none said */
};

/*
 * The disks under block device maj:min, the ones with a request queue of
 * their own: a partition's whole disk; every device under a device-mapper
 * or md device, in sysfs's order, through at most 8 layers, and at most
 * 64 of them. Sets *n to
 * how many (0: nothing with a queue, such as the anonymous devices of
 * tmpfs, overlay or NFS); free them with disk_free().
 */
struct disk *disk_leaves(const char *root, unsigned maj, unsigned min, size_t *n);
#define DISK_MAX 64 /* disks under one device-mapper or md device that are told apart */
void disk_free(struct disk *d, size_t n);

/* What `near`'s lookup came to, as plan --json names it (near_status_name()). */
enum near_status {
    NEAR_FOUND,     /* disks, and the nodes they hang off */
    NEAR_NO_NODE,   /* disks, but sysfs gives none of them a node */
    NEAR_NO_DISK,   /* the path is on no block device (tmpfs, overlay, NFS, ZFS) */
    NEAR_NO_PATH,   /* the path cannot be resolved (errno in what) */
    NEAR_NO_DEVICE, /* a NIC: only virtual interfaces, nothing physical (nic.h) */
};
const char *near_status_name(enum near_status s);

/*
 * `near`: the NUMA nodes of the disks under path, into nodes (left empty
 * when none is known), the disks themselves into *disks and *n (NULL and
 * 0 when there are none; free them with disk_free()), and one clause for
 * the plan that says what was found, or why nothing was ("/srv is on
 * nvme0n1 (node 1)"), and when the disk is /'s too; the caller frees it.
 * root as above.
 */
enum near_status disk_nodes(const char *root, const char *path, hwloc_bitmap_t nodes, char **what,
                            struct disk **disks, size_t *n);

#endif
