/*
 * test_disk.c - the disks under a block device, and the nodes they hang
 * off, read from a sysfs tree made here in the kernel's shape: NVMe
 * partitions, md over disks on two nodes, LVM over md, a SATA disk whose
 * PCI function has no node, a namespace reached through two controllers
 * (native NVMe multipath), and a device-mapper loop.
 */
#include "disk.h"
#include "fixture.h"
#include "util.h"

/* A block device: its directory under /sys/devices, and /sys/dev/block/MAJ:MIN to it. */
static void block(const char *dir, const char *devno, const char *name, bool queue)
{
    char rel[4096], text[256];
    snprintf(rel, sizeof(rel), "/sys/devices/%s/dev", dir);
    put(rel, devno);
    snprintf(rel, sizeof(rel), "/sys/devices/%s/uevent", dir);
    snprintf(text, sizeof(text), "MAJOR=0\nDEVNAME=%s\nDEVTYPE=disk", name);
    put(rel, text);
    if (queue) {
        snprintf(rel, sizeof(rel), "/sys/devices/%s/queue/scheduler", dir);
        put(rel, "[none] mq-deadline");
    }
    snprintf(rel, sizeof(rel), "/sys/dev/block/%s", devno);
    snprintf(text, sizeof(text), "../../devices/%s", dir);
    link_to(rel, text);
}

#define NVME0  "pci0000:00/0000:00:01.0/nvme/nvme0"
#define NVME1  "pci0000:80/0000:80:01.0/nvme/nvme1"
#define SUBSYS "virtual/nvme-subsystem/nvme-subsys2"

static int setup(void **state)
{
    (void)state;
    make_root("disk");
    /* two NVMe disks, on nodes 1 and 0; the first partitioned */
    put("/sys/devices/pci0000:00/0000:00:01.0/numa_node", "1");
    put("/sys/devices/" NVME0 "/numa_node", "1");
    block(NVME0 "/nvme0n1", "259:0", "nvme0n1", true);
    block(NVME0 "/nvme0n1/nvme0n1p1", "259:1", "nvme0n1p1", false);
    put("/sys/devices/" NVME0 "/nvme0n1/nvme0n1p1/partition", "1");
    put("/sys/devices/pci0000:80/0000:80:01.0/numa_node", "0");
    put("/sys/devices/" NVME1 "/numa_node", "0");
    block(NVME1 "/nvme1n1", "259:2", "nvme1n1", true);
    /* md0 over the partition and the second disk; LVM over md0 */
    block("virtual/block/md0", "9:0", "md0", true);
    link_to("/sys/devices/virtual/block/md0/slaves/nvme0n1p1",
            "../../../../" NVME0 "/nvme0n1/nvme0n1p1");
    link_to("/sys/devices/virtual/block/md0/slaves/nvme1n1", "../../../../" NVME1 "/nvme1n1");
    block("virtual/block/dm-0", "253:0", "dm-0", true);
    link_to("/sys/devices/virtual/block/dm-0/slaves/md0", "../../md0");
    /* a SATA disk whose PCI function has no node (-1), as on a one-node firmware */
    put("/sys/devices/pci0000:00/0000:00:1f.2/numa_node", "-1");
    block("pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", "8:0", "sda", true);
    /* a namespace reached through controllers nvme3 (node 1) and nvme4 (node 0); nvme5 (node 7)
     * belongs to the subsystem but has no path to it */
    static const char *const ctrls[][3] = {{"nvme3", "pci0000:00/0000:00:02.0", "1"},
                                           {"nvme4", "pci0000:80/0000:80:02.0", "0"},
                                           {"nvme5", "pci0000:c0/0000:c0:02.0", "7"}};
    for (size_t i = 0; i < 3; i++) {
        char rel[512], target[512];
        snprintf(rel, sizeof(rel), "/sys/devices/%s/nvme/%s/numa_node", ctrls[i][1], ctrls[i][0]);
        put(rel, ctrls[i][2]);
        if (i < 2) {
            snprintf(rel, sizeof(rel), "/sys/devices/%s/nvme/%s/nvme2c%zun1/dev", ctrls[i][1],
                     ctrls[i][0], i + 3);
            put(rel, i ? "259:7" : "259:6");
        }
        snprintf(rel, sizeof(rel), "/sys/devices/" SUBSYS "/%s", ctrls[i][0]);
        snprintf(target, sizeof(target), "../../../%s/nvme/%s", ctrls[i][1], ctrls[i][0]);
        link_to(rel, target);
    }
    block(SUBSYS "/nvme2n1", "259:5", "nvme2n1", true);
    /* a second partition of the first disk, and md1 over both partitions: one disk */
    block(NVME0 "/nvme0n1/nvme0n1p2", "259:3", "nvme0n1p2", false);
    put("/sys/devices/" NVME0 "/nvme0n1/nvme0n1p2/partition", "2");
    block("virtual/block/md1", "9:1", "md1", true);
    link_to("/sys/devices/virtual/block/md1/slaves/nvme0n1p1",
            "../../../../" NVME0 "/nvme0n1/nvme0n1p1");
    link_to("/sys/devices/virtual/block/md1/slaves/nvme0n1p2",
            "../../../../" NVME0 "/nvme0n1/nvme0n1p2");
    /* a partition of the multipath namespace */
    block(SUBSYS "/nvme2n1/nvme2n1p1", "259:8", "nvme2n1p1", false);
    put("/sys/devices/" SUBSYS "/nvme2n1/nvme2n1p1/partition", "1");
    /* md9 over 70 disks on node 0: more than a walk tells apart */
    put("/sys/devices/pci0000:80/0000:80:03.0/numa_node", "0");
    block("virtual/block/md9", "9:9", "md9", true);
    for (int i = 0; i < 70; i++) {
        char dir[256], devno[32], name[32], rel[512], target[512];
        snprintf(name, sizeof(name), "sd%c%c", 'a' + i / 26, 'a' + i % 26);
        snprintf(dir, sizeof(dir), "pci0000:80/0000:80:03.0/host%d/block/%s", i, name);
        snprintf(devno, sizeof(devno), "65:%d", i);
        block(dir, devno, name, true);
        snprintf(rel, sizeof(rel), "/sys/devices/virtual/block/md9/slaves/%s", name);
        snprintf(target, sizeof(target), "../../../../%s", dir);
        link_to(rel, target);
    }
    /* device-mapper devices stacked on each other in a loop: no sysfs has it, no walk hangs */
    block("virtual/block/dm-1", "253:1", "dm-1", true);
    block("virtual/block/dm-2", "253:2", "dm-2", true);
    link_to("/sys/devices/virtual/block/dm-1/slaves/dm-2", "../../dm-2");
    link_to("/sys/devices/virtual/block/dm-2/slaves/dm-1", "../../dm-1");
    /* mounts, for disk_of_path() under a root */
    put("/proc/self/mountinfo", "25 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                                "30 25 253:0 / /var/lib/mysql rw - xfs /dev/mapper/vg-db rw\n"
                                "31 25 0:27 / /dev/shm rw - tmpfs tmpfs rw\n"
                                "32 25 9:9 / /big rw - xfs /dev/md9 rw\n"
                                "33 25 8:0 / /old rw - ext4 /dev/sda rw");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return remove_root();
}

/* "nvme0n1:1 nvme1n1:0": each disk with its nodes, as the walk found them. */
/* "nvme0n1:1 sda:none": each disk's name and nodes */
static char *disks_said(const struct disk *d, size_t n)
{
    char *out = xstrdup("");
    for (size_t k = 0; k < n; k++) {
        char *nodes = bitmap_list(d[k].nodes);
        char *more = xasprintf("%s%s%s:%s", out, k ? " " : "", d[k].name, nodes);
        free(nodes);
        free(out);
        out = more;
    }
    return out;
}

static char *leaves_of(unsigned maj, unsigned min)
{
    size_t n;
    struct disk *d = disk_leaves(root, maj, min, &n);
    char *out = disks_said(d, n);
    disk_free(d, n);
    return out;
}

static void test_leaves(void **state)
{
    (void)state;
    static const struct {
        unsigned maj, min;
        const char *want;
    } cases[] = {
        {259, 0, "nvme0n1:1"},           /* a disk */
        {259, 1, "nvme0n1:1"},           /* a partition: its disk */
        {9, 0, "nvme0n1:1 nvme1n1:0"},   /* md: every member, on its own node */
        {253, 0, "nvme0n1:1 nvme1n1:0"}, /* LVM over md */
        {8, 0, "sda:none"},              /* numa_node -1 */
        {259, 5, "nvme2n1:0-1"},         /* multipath: the controllers with a path */
        {9, 1, "nvme0n1:1"},             /* md over two partitions of one disk */
        {259, 8, "nvme2n1:0-1"},         /* a partition of a multipath namespace */
        {253, 1, ""},                    /* a loop of stacked devices ends */
        {0, 27, ""},                     /* tmpfs: no disk */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = leaves_of(cases[i].maj, cases[i].min);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%u:%u: '%s', not '%s'", cases[i].maj, cases[i].min, got, cases[i].want);
        free(got);
    }
}

static void test_of_path_under_a_root(void **state)
{
    (void)state;
    unsigned maj, min;
    char mnt[256];
    assert_true(disk_of_path(root, "/var/lib/mysql/ibdata1", &maj, &min, mnt, sizeof(mnt)));
    assert_int_equal(maj, 253);
    assert_int_equal(min, 0);
    assert_string_equal(mnt, "/var/lib/mysql");
    /* a sibling whose name only starts the same is on / */
    assert_true(disk_of_path(root, "/var/lib/mysql-files", &maj, &min, mnt, sizeof(mnt)));
    assert_int_equal(min, 1);
    assert_string_equal(mnt, "/");
}

/* The 70 disks under md9: the walk tells 64 apart. */
/* A root given with a '/' at its end, or as a relative path, is the same tree. */
static void test_root_spelled_otherwise(void **state)
{
    (void)state;
    char saved[sizeof(root)], cwd[4096];
    memcpy(saved, root, sizeof(root));
    /* with a '/' at its end */
    assert_true(strlen(saved) + 2 <= sizeof(root));
    strcat(root, "/");
    char *got = leaves_of(259, 0);
    assert_string_equal(got, "nvme0n1:1");
    free(got);
    /* relative to the current directory */
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir("/tmp"), 0);
    memmove(root, saved + strlen("/tmp/"), strlen(saved) - strlen("/tmp/") + 1);
    got = leaves_of(259, 0);
    assert_int_equal(chdir(cwd), 0);
    memcpy(root, saved, sizeof(root));
    assert_string_equal(got, "nvme0n1:1");
    free(got);
}

static void test_many(void **state)
{
    (void)state;
    size_t n;
    struct disk *d = disk_leaves(root, 9, 9, &n);
    assert_int_equal(n, 64);
    disk_free(d, n);
}

/* What a plan says of near: the disks and their nodes, or why there are none. */
static void test_said(void **state)
{
    (void)state;
    static const struct {
        const char *path, *nodes;
        enum near_status status;
        const char *disks, *what; /* disks: each one's name:nodes, as leaves_of() */
    } cases[] = {
        {"/var/lib/mysql/db", "0-1", NEAR_FOUND, "nvme0n1:1 nvme1n1:0",
         "/var/lib/mysql/db is on nvme0n1 (node 1), nvme1n1 (node 0)"},
        {"/etc", "1", NEAR_FOUND, "nvme0n1:1",
         "/etc is on nvme0n1 (node 1); so is /, whose filesystem it shares: if the data lives "
         "elsewhere, name that in near"},
        {"/", "1", NEAR_FOUND, "nvme0n1:1", "/ is on nvme0n1 (node 1)"},
        {"/old", "", NEAR_NO_NODE, "sda:none",
         "/old is on sda, and sysfs gives no NUMA node for it"},
        {"/dev/shm/x", "", NEAR_NO_DISK, "",
         "/dev/shm/x is on /dev/shm (device 0:27), which is no block device of this machine "
         "(tmpfs, overlay, NFS, ZFS?)"},
    };
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    struct disk *d;
    size_t n;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *what;
        enum near_status st = disk_nodes(root, cases[i].path, nodes, &what, &d, &n);
        char *got = bitmap_list(nodes), *disks = disks_said(d, n);
        if (strcmp(what, cases[i].what) != 0 ||
            strcmp(got, *cases[i].nodes ? cases[i].nodes : "none") != 0 || st != cases[i].status ||
            strcmp(disks, cases[i].disks) != 0)
            fail_msg("%s: nodes %s, %s, disks '%s', '%s'; want %s, %s, '%s', '%s'", cases[i].path,
                     got, near_status_name(st), disks, what, cases[i].nodes,
                     near_status_name(cases[i].status), cases[i].disks, cases[i].what);
        free(got);
        free(disks);
        free(what);
        disk_free(d, n);
    }
    /* eight of md9's disks by name, in sysfs's order, and how many more; all 64 returned */
    char *what;
    assert_int_equal(disk_nodes(root, "/big", nodes, &what, &d, &n), NEAR_FOUND);
    assert_int_equal(n, 64);
    disk_free(d, n);
    size_t named = 0;
    for (const char *c = what; (c = strstr(c, " (node 0)")) != NULL; c++)
        named++;
    const char *tail = " and at least 56 more";
    if (named != 8 || strncmp(what, "/big is on sd", 13) != 0 ||
        strcmp(what + strlen(what) - strlen(tail), tail) != 0)
        fail_msg("/big: '%s'", what);
    free(what);
    hwloc_bitmap_free(nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaves),
        cmocka_unit_test(test_of_path_under_a_root),
        cmocka_unit_test(test_root_spelled_otherwise),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_said),
    };
    return cmocka_run_group_tests_name("disk", tests, setup, teardown);
}
