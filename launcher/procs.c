/*
 * procs.c - processes and threads through /proc.
 *
 * Written by hand: neither hwloc nor libnuma looks for the processes that
 * hold a file (lsof and fuser do, as programs), and their thread binding
 * calls take a topology that describes this machine, which `tunerun ps`
 * has no need to build.
 */
#include "procs.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define CLAIM_MARK "/claim."

static bool listed(const struct pid_list *l, long pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == pid)
            return true;
    return false;
}

void pid_list_add(struct pid_list *l, long pid)
{
    if (listed(l, pid))
        return;
    l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    l->v[l->n++] = pid;
}

void pid_list_free(struct pid_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool numeric(const char *s, long *v)
{
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    *v = strtol(s, &end, 10);
    return *end == '\0';
}

unsigned long long procs_lock_ino(const char *lock)
{
    const char *end = strchr(lock, '\n');
    for (const char *p = lock; p && *p && (!end || p < end); p = strchr(p + 1, ' ')) {
        unsigned major, minor;
        unsigned long long ino;
        char after;
        if (sscanf(p, " %x:%x:%llu%c", &major, &minor, &ino, &after) == 4 && after == ' ')
            return ino;
    }
    return 0;
}

/*
 * The mount and inode of an open file, from /proc/PID/fdinfo/FD: no call
 * reaches the file's filesystem. Before Linux 5.14 fdinfo has no "ino:",
 * and the inode comes from the line of the OFD lock every claim fd holds
 * (Linux 4.1 and later); 0 when neither says.
 */
static bool fd_info(long pid, long fd, int *mnt_id, unsigned long long *ino)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%ld", pid, fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return false;
    ssize_t len = read(f, buf, sizeof(buf) - 1);
    close(f);
    if (len <= 0)
        return false;
    buf[len] = '\0';
    const char *m = strstr(buf, "\nmnt_id:"), *i = strstr(buf, "\nino:");
    const char *lock = strstr(buf, "\nlock:");
    *ino = i ? strtoull(i + 5, NULL, 10) : lock ? procs_lock_ino(lock + 6) : 0;
    return m && sscanf(m + 8, "%d", mnt_id) == 1;
}

/*
 * Mount tables already read during one scan, one per mount namespace: a
 * process whose namespace holds tens of thousands of mounts (any user may
 * make one) is read once, not once per fd it holds, while the scan holds
 * the registry lock that every launch waits for.
 */
struct mount_table {
    char ns[64]; /* readlink of /proc/PID/ns/mnt: "mnt:[4026531841]" */
    size_t n;
    int *id;
    unsigned long long *dev;
};
struct mount_tables {
    struct mount_table *v;
    size_t n;
};

/* A mount table of the process `dir` is /proc/PID of, read whole; false when it is gone. */
static bool read_mounts(int dir, struct mount_table *t)
{
    int fd = openat(dir, "mountinfo", O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (f == NULL) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    char *line = NULL;
    size_t cap = 0, room = 0;
    while (getline(&line, &cap, f) > 0) {
        int id;
        unsigned major, minor;
        if (sscanf(line, "%d %*d %u:%u", &id, &major, &minor) != 3)
            continue;
        if (t->n == room) {
            room = room ? 2 * room : 64;
            t->id = xrealloc(t->id, room * sizeof(*t->id));
            t->dev = xrealloc(t->dev, room * sizeof(*t->dev));
        }
        t->id[t->n] = id;
        t->dev[t->n++] = makedev(major, minor);
    }
    bool ok = !ferror(f);
    free(line);
    fclose(f);
    return ok;
}

/*
 * The device of mount mnt_id as its process's mount namespace lists it:
 * mount ids differ between namespaces, the device does not. 0 when not
 * found.
 */
static unsigned long long table_dev(const struct mount_table *t, int mnt_id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->id[i] == mnt_id)
            return t->dev[i];
    return 0;
}

/* The same from the mounts of the process `dir` is /proc/PID of, read for this once. */
static unsigned long long mount_dev(int dir, int mnt_id)
{
    struct mount_table t = {0};
    unsigned long long dev = read_mounts(dir, &t) ? table_dev(&t, mnt_id) : 0;
    free(t.id);
    free(t.dev);
    return dev;
}

/*
 * mount_dev() through the tables of a scan. /proc/PID is held open while
 * its namespace is named and its mounts read, so that a process that ends
 * meanwhile, and one that gets its pid after, can lend its table to no
 * other: a table not read whole is not kept, and that fd is passed over.
 */
static unsigned long long mount_dev_in(struct mount_tables *seen, long pid, int mnt_id)
{
    char path[64], ns[64], again[64];
    snprintf(path, sizeof(path), "/proc/%ld", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return 0;
    ssize_t len = readlinkat(dir, "ns/mnt", ns, sizeof(ns) - 1);
    if (len <= 0) {
        unsigned long long dev = mount_dev(dir, mnt_id); /* no namespace to know it by */
        close(dir);
        return dev;
    }
    ns[len] = '\0';
    struct mount_table *t = NULL;
    for (size_t i = 0; i < seen->n && !t; i++)
        if (strcmp(seen->v[i].ns, ns) == 0)
            t = &seen->v[i];
    if (t == NULL) {
        struct mount_table read = {0};
        snprintf(read.ns, sizeof(read.ns), "%s", ns);
        if (!read_mounts(dir, &read) ||
            readlinkat(dir, "ns/mnt", again, sizeof(again) - 1) != len ||
            memcmp(again, ns, (size_t)len) != 0) {
            free(read.id);
            free(read.dev);
            close(dir);
            return 0;
        }
        seen->v = xrealloc(seen->v, (seen->n + 1) * sizeof(*seen->v));
        t = &seen->v[seen->n++];
        *t = read;
    }
    close(dir);
    return table_dev(t, mnt_id);
}

static void mount_tables_free(struct mount_tables *seen)
{
    for (size_t i = 0; i < seen->n; i++) {
        free(seen->v[i].id);
        free(seen->v[i].dev);
    }
    free(seen->v);
}

unsigned long long procs_mount_dev(int fd)
{
    int mnt_id;
    unsigned long long ino;
    if (!fd_info((long)getpid(), fd, &mnt_id, &ino))
        return 0;
    int dir = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    unsigned long long dev = dir >= 0 ? mount_dev(dir, mnt_id) : 0;
    if (dir >= 0)
        close(dir);
    return dev;
}

/* Field 4 of /proc/PID/stat, which anyone may read; 0 when gone. */
static long parent_of(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!read_line_file(path, buf, sizeof(buf)))
        return 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    long ppid = 0;
    return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : 0;
}

/*
 * Processes whose fds this process may not read (another user's, without
 * CAP_SYS_PTRACE: nginx's workers once they became www-data) count as
 * holding what their parent holds: they inherited it at fork. Found
 * through the parent in /proc/PID/stat, until nothing more is added.
 */
static void add_unreadable_children(const struct pid_list *unreadable, struct pid_list *out,
                                    size_t n)
{
    long *parent = xcalloc(unreadable->n ? unreadable->n : 1, sizeof(long));
    for (size_t u = 0; u < unreadable->n; u++)
        parent[u] = parent_of(unreadable->v[u]);
    for (bool added = true; added;) {
        added = false;
        for (size_t u = 0; u < unreadable->n; u++)
            for (size_t i = 0; i < n; i++)
                if (parent[u] > 0 && listed(&out[i], parent[u]) &&
                    !listed(&out[i], unreadable->v[u])) {
                    pid_list_add(&out[i], unreadable->v[u]);
                    added = true;
                }
    }
    free(parent);
}

void procs_holding(const struct file_id *files, size_t n, unsigned long long dev,
                   const long *witness, bool trust, struct pid_list *out)
{
    memset(out, 0, n * sizeof(*out));
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return;
    struct pid_list unreadable = {0};
    struct mount_tables seen = {0};
    struct dirent *p;
    while ((p = readdir(proc)) != NULL) {
        long pid;
        if (!numeric(p->d_name, &pid))
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
        DIR *fds = opendir(path);
        /* root without CAP_SYS_PTRACE lists another user's fds but reads no link */
        bool denied = fds == NULL && errno == EACCES;
        struct dirent *f;
        while (fds && !denied && (f = readdir(fds)) != NULL) {
            char link[64], target[4096];
            long fd;
            if (!numeric(f->d_name, &fd))
                continue;
            snprintf(link, sizeof(link), "/proc/%ld/fd/%ld", pid, fd);
            /* the name first: sockets and pipes are passed over without a stat */
            ssize_t len = readlink(link, target, sizeof(target) - 1);
            denied = len < 0 && (errno == EACCES || errno == EPERM);
            if (len <= 0)
                continue;
            target[len] = '\0';
            /*
             * Which file, from fdinfo and mountinfo, never by a stat through
             * the link: a stat on another filesystem (a user's FUSE file named
             * claim.x) could hang, and the registry lock with it, for ever.
             */
            int mnt;
            unsigned long long ino;
            if (dev == 0 || strstr(target, CLAIM_MARK) == NULL || !fd_info(pid, fd, &mnt, &ino) ||
                ino == 0)
                continue;
            size_t i = 0;
            while (i < n && files[i].ino != ino) /* the inode first: the mounts cost more */
                i++;
            if (i == n || mount_dev_in(&seen, pid, mnt) != dev)
                continue;
            for (; i < n; i++)
                if (files[i].ino == ino)
                    pid_list_add(&out[i], pid);
        }
        if (denied)
            pid_list_add(&unreadable, pid);
        if (fds)
            closedir(fds);
    }
    closedir(proc);
    mount_tables_free(&seen);
    for (size_t i = 0; i < n; i++)
        if (witness[i] > 0 && (trust || listed(&unreadable, witness[i])))
            pid_list_add(&out[i], witness[i]);
    add_unreadable_children(&unreadable, out, n);
    pid_list_free(&unreadable);
}

bool procs_threads(long pid, struct pid_list *out)
{
    char path[64];
    memset(out, 0, sizeof(*out));
    snprintf(path, sizeof(path), "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    struct dirent *t;
    long tid;
    while ((t = readdir(d)) != NULL)
        if (numeric(t->d_name, &tid))
            pid_list_add(out, tid);
    closedir(d);
    return true;
}

cpu_set_t *cpuset_alloc(hwloc_const_bitmap_t set, size_t *size)
{
    int last = hwloc_bitmap_last(set);
    size_t ncpu = last < 1023 ? 1024 : (size_t)last + 1;
    cpu_set_t *s = CPU_ALLOC(ncpu);
    if (s == NULL)
        return NULL;
    *size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(*size, s);
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, set)
    {
        CPU_SET_S((size_t)cpu, *size, s);
    }
    hwloc_bitmap_foreach_end();
    return s;
}

int thread_cpus(long tid, hwloc_bitmap_t out)
{
    /* Grow until the kernel's mask fits (EINVAL: ours is smaller than nr_cpu_ids). */
    for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
        cpu_set_t *s = CPU_ALLOC(ncpu);
        size_t size = CPU_ALLOC_SIZE(ncpu);
        if (s == NULL)
            return -1;
        if (sched_getaffinity((pid_t)tid, size, s) == 0) {
            hwloc_bitmap_zero(out);
            for (size_t cpu = 0; cpu < ncpu; cpu++)
                if (CPU_ISSET_S(cpu, size, s))
                    hwloc_bitmap_set(out, (unsigned)cpu);
            CPU_FREE(s);
            return 0;
        }
        int error = errno;
        CPU_FREE(s);
        if (error != EINVAL) {
            errno = error;
            return -1;
        }
    }
    errno = EINVAL;
    return -1;
}

int thread_set_cpus(long tid, hwloc_const_bitmap_t set)
{
    size_t size;
    cpu_set_t *s = cpuset_alloc(set, &size);
    if (s == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int rc = sched_setaffinity((pid_t)tid, size, s);
    int error = errno;
    CPU_FREE(s);
    errno = error;
    return rc;
}

void proc_comm(long pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    if (!read_line_file(path, buf, n))
        snprintf(buf, n, "?");
}
