/*
 * registry.c - claims in the state directory, kept alive by flock.
 *
 * Claim files are small INI files read with inih, like profiles. Liveness
 * is asked of the kernel, never of the file: a claim whose fd some process
 * still holds (flock LOCK_SH) refuses our LOCK_EX|LOCK_NB. A claim nobody
 * holds is alive only while its pid, in the same pid namespace and boot,
 * still has the start time it was written with.
 */
#include "registry.h"
#include "parse.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME    "lock"
#define CLAIM_PREFIX "claim."
#define CLAIM_MAX    (64 * 1024)

void claim_free(struct claim *c)
{
    free(c->file);
    free(c->profile);
    hwloc_bitmap_free(c->cpus);
    hwloc_bitmap_free(c->nodes);
    hwloc_bitmap_free(c->mem_nodes);
    for (size_t i = 0; i < c->navoid; i++)
        free(c->avoid[i]);
    free(c->avoid);
    memset(c, 0, sizeof(*c));
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks after boot. */
static bool start_time(const char *stat_path, unsigned long long *start)
{
    char buf[1024];
    if (!read_line_file(stat_path, buf, sizeof(buf)))
        return false;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (p == NULL)
        return false;
    p++;
    for (int field = 2; field < 21; field++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return false;
    }
    return sscanf(p, " %llu", start) == 1;
}

static bool self_witness(unsigned long long *pidns, unsigned long long *start, char *boot_id,
                         size_t n)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) < 0)
        return false;
    *pidns = st.st_ino;
    return start_time("/proc/self/stat", start) &&
           read_line_file("/proc/sys/kernel/random/boot_id", boot_id, n);
}

static bool pid_alive(const struct registry *r, const struct claim *c)
{
    unsigned long long now;
    char path[64];
    if (c->pid <= 0 || !r->witness)
        return false;
    if (r->pidns != c->pidns || strcmp(r->boot_id, c->boot_id) != 0)
        return false; /* its pid means nothing here: only the fd lock can speak for it */
    snprintf(path, sizeof(path), "/proc/%ld/stat", c->pid);
    return start_time(path, &now) && now == c->start;
}

static int on_claim(void *user, const char *section, const char *key, const char *value)
{
    struct claim *c = user;
    long v;
    if (strcmp(section, "claim") != 0)
        return 1; /* newer versions may add sections */
    if (strcmp(key, "profile") == 0) {
        free(c->profile);
        c->profile = xstrdup(value);
    } else if (strcmp(key, "cpus") == 0) {
        return hwloc_bitmap_list_sscanf(c->cpus, value) == 0;
    } else if (strcmp(key, "nodes") == 0) {
        return hwloc_bitmap_list_sscanf(c->nodes, value) == 0;
    } else if (strcmp(key, "mem_nodes") == 0) {
        return hwloc_bitmap_list_sscanf(c->mem_nodes, value) == 0;
    } else if (strcmp(key, "exclusive") == 0) {
        return parse_bool(value, &c->exclusive);
    } else if (strcmp(key, "avoid") == 0) {
        char *list = xstrdup(value), *save = NULL;
        for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            c->avoid = xrealloc(c->avoid, (c->navoid + 1) * sizeof(*c->avoid));
            c->avoid[c->navoid++] = xstrdup(tok);
        }
        free(list);
    } else if (strcmp(key, "pid") == 0) {
        if (!parse_long(value, 1, 1L << 30, &v))
            return 0;
        c->pid = v;
    } else if (strcmp(key, "pidns") == 0) {
        return sscanf(value, "%llu", &c->pidns) == 1;
    } else if (strcmp(key, "start") == 0) {
        return sscanf(value, "%llu", &c->start) == 1;
    } else if (strcmp(key, "boot_id") == 0) {
        snprintf(c->boot_id, sizeof(c->boot_id), "%s", value);
    } else if (strcmp(key, "time") == 0) {
        return sscanf(value, "%lld", &c->time) == 1;
    }
    return 1;
}

/* Read one claim; prune it when neither witness keeps it alive. */
static void check_claim(struct registry *r, const char *name)
{
    struct err e;
    int fd = state_open_read(r->sd, name, &e);
    if (fd < 0) {
        /* not a claim we wrote (a planted symlink, a FIFO): it goes */
        if (errno == EPERM) {
            unlinkat(r->sd->fd, name, 0);
            r->pruned++;
        }
        return;
    }
    bool held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    char *text = NULL;
    size_t len;
    struct claim c = {.cpus = hwloc_bitmap_alloc(),
                      .nodes = hwloc_bitmap_alloc(),
                      .mem_nodes = hwloc_bitmap_alloc()};
    bool parsed = read_fd_text(fd, CLAIM_MAX, &text, &len) == 0 &&
                  ini_parse_string(text, on_claim, &c) == 0 && c.profile != NULL;
    free(text);
    close(fd); /* drops our trial lock, if we got it */
    if (!held && !(parsed && pid_alive(r, &c))) {
        unlinkat(r->sd->fd, name, 0);
        r->pruned++;
        claim_free(&c);
        return;
    }
    if (!parsed) {
        log_warn("%s/%s: a live claim tunerun cannot read; ignoring it", r->sd->path, name);
        claim_free(&c);
        return;
    }
    c.file = xstrdup(name);
    r->claims = xrealloc(r->claims, (r->nclaims + 1) * sizeof(*r->claims));
    r->claims[r->nclaims++] = c;
}

bool registry_open(struct registry *r, const struct state_dir *sd, struct err *e)
{
    memset(r, 0, sizeof(*r));
    r->sd = sd;
    r->lock_fd = openat(sd->fd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (r->lock_fd < 0) {
        err_set(e, "%s/%s: %s", sd->path, LOCK_NAME,
                errno == ELOOP ? "is a symbolic link; refusing it" : strerror(errno));
        return false;
    }
    const char *why = state_distrust(r->lock_fd);
    if (why) {
        err_set(e, "%s/%s %s; refusing it", sd->path, LOCK_NAME, why);
        close(r->lock_fd);
        r->lock_fd = -1;
        return false;
    }
    int rc;
    while ((rc = flock(r->lock_fd, LOCK_EX)) < 0 && errno == EINTR)
        ;
    if (rc < 0) {
        err_set(e, "cannot lock %s/%s: %s", sd->path, LOCK_NAME, strerror(errno));
        close(r->lock_fd);
        r->lock_fd = -1;
        return false;
    }
    r->witness = self_witness(&r->pidns, &r->start, r->boot_id, sizeof(r->boot_id));
    int dfd = openat(sd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (dir == NULL) {
        err_set(e, "cannot read %s: %s", sd->path, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        registry_close(r);
        return false;
    }
    struct dirent *d;
    while ((d = readdir(dir)) != NULL)
        if (strncmp(d->d_name, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) == 0)
            check_claim(r, d->d_name);
    closedir(dir);
    return true;
}

int registry_claim(struct registry *r, const struct claim *c, char *name, size_t n, struct err *e)
{
    snprintf(name, n, CLAIM_PREFIX "%s.%016llx", c->profile, state_random());
    /* Not close-on-exec: the command inherits it, and with it the claim. */
    int fd = openat(r->sd->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd < 0) {
        err_set(e, "cannot create %s/%s: %s", r->sd->path, name, strerror(errno));
        return -1;
    }
    char *cpus = bitmap_list(c->cpus), *nodes = bitmap_list(c->nodes),
         *mem = bitmap_list(c->mem_nodes);
    char *avoid = xstrdup("");
    for (size_t i = 0; i < c->navoid; i++) {
        char *a = xasprintf("%s%s%s", avoid, i ? "," : "", c->avoid[i]);
        free(avoid);
        avoid = a;
    }
    int w = dprintf(fd,
                    "# a service launched by tunerun; alive while a process holds this file\n"
                    "[claim]\nprofile = %s\ncpus = %s\nnodes = %s\nmem_nodes = %s\n"
                    "exclusive = %s\navoid = %s\npid = %ld\npidns = %llu\nstart = %llu\n"
                    "boot_id = %s\ntime = %lld\n",
                    c->profile, cpus, nodes, mem, c->exclusive ? "yes" : "no", avoid, c->pid,
                    c->pidns, c->start, c->boot_id, c->time);
    free(cpus);
    free(nodes);
    free(mem);
    free(avoid);
    if (w < 0 || flock(fd, LOCK_SH) < 0) {
        err_set(e, "cannot write %s/%s: %s", r->sd->path, name, strerror(errno));
        registry_drop(r, name, fd);
        return -1;
    }
    return fd;
}

void registry_drop(struct registry *r, const char *name, int fd)
{
    unlinkat(r->sd->fd, name, 0);
    if (fd >= 0)
        close(fd);
}

void registry_close(struct registry *r)
{
    for (size_t i = 0; i < r->nclaims; i++)
        claim_free(&r->claims[i]);
    free(r->claims);
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    r->claims = NULL;
    r->nclaims = 0;
    r->lock_fd = -1;
}
