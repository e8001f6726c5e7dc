/*
 * state.c - the state directory, opened once and trusted only when it is ours.
 *
 * The checks are made on open descriptors (fstat after open with
 * O_NOFOLLOW), never on a path before opening it, so there is no window
 * between checking and using. A directory or file that another user owns
 * or may write is refused, as ssh and sudo refuse their configuration.
 */
#include "state.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static char *default_path(void)
{
    if (geteuid() == 0)
        return xstrdup("/run/tunerun");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg == NULL || xdg[0] != '/')
        return NULL;
    return xasprintf("%s/tunerun", xdg);
}

/* Why a file or directory is not ours to trust, or NULL when it is. */
static const char *untrusted(const struct stat *st)
{
    if (st->st_uid != geteuid())
        return "is owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return "is writable by group or others";
    return NULL;
}

enum state_status state_dir_open(struct state_dir *sd, const char *path, bool create, struct err *e)
{
    sd->fd = -1;
    sd->readonly = false;
    sd->path = path ? xstrdup(path) : default_path();
    if (sd->path == NULL) {
        err_set(e, "no state directory: XDG_RUNTIME_DIR is not set (see --state-dir)");
        return STATE_UNAVAILABLE;
    }
    /*
     * O_NOFOLLOW guards the last component only as the path ends in it:
     * "link/" or "link/." would follow a planted link. So no trailing '/',
     * and the last component must name the directory itself.
     */
    size_t len = strlen(sd->path);
    while (len > 1 && sd->path[len - 1] == '/')
        sd->path[--len] = '\0';
    const char *last = strrchr(sd->path, '/');
    last = last ? last + 1 : sd->path;
    if (strcmp(last, "") == 0 || strcmp(last, ".") == 0 || strcmp(last, "..") == 0) {
        err_set(e, "state directory %s: name the directory itself, not '/', '.' or '..'", sd->path);
        return STATE_UNSAFE;
    }
    /* and nobody else may swap a directory on the way for a link to one of root's */
    char at[4096];
    const char *way = path_untrusted_way(sd->path, geteuid(), at, sizeof(at));
    if (way && faccessat(AT_FDCWD, at, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
        /* missing or out of reach, as a read-only /run is: nothing unsafe about it */
        err_set(e, "cannot create state directory %s: %s: %s", sd->path, at, strerror(errno));
        return STATE_UNAVAILABLE;
    }
    if (way) {
        err_set(e, "state directory %s: %s on its way %s; refusing it", sd->path, at, way);
        return STATE_UNSAFE;
    }
    /* 0700: a user who could open `lock` or a claim file could lock it, and stall or fake launches
     */
    if (create && mkdir(sd->path, 0700) < 0 && errno != EEXIST) {
        err_set(e, "cannot create state directory %s: %s", sd->path, strerror(errno));
        return STATE_UNAVAILABLE;
    }
    int fd = open(sd->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR) {
            err_set(e, "state directory %s is a symbolic link or not a directory; refusing it",
                    sd->path);
            return STATE_UNSAFE;
        }
        err_set(e, "cannot open state directory %s: %s", sd->path, strerror(errno));
        return STATE_UNAVAILABLE;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        err_set(e, "cannot stat state directory %s: %s", sd->path, strerror(errno));
        close(fd);
        return STATE_UNAVAILABLE;
    }
    const char *why = untrusted(&st);
    if (why) {
        err_set(e, "state directory %s %s; refusing to use it", sd->path, why);
        close(fd);
        return STATE_UNSAFE;
    }
    /*
     * A unit with ProtectSystem=strict and no ReadWritePaths= sees the
     * directory tmpfiles made at boot, read-only: its cache and claims
     * can be read, but a launch can register nothing there (the caller
     * decides what that means for it).
     */
    struct statvfs fs;
    sd->readonly = fstatvfs(fd, &fs) == 0 && (fs.f_flag & ST_RDONLY);
    if (path == NULL && (st.st_mode & 077))
        (void)fchmod(fd, 0700); /* best effort: it still works as it is */
    sd->fd = fd;
    return STATE_OK;
}

void state_dir_close(struct state_dir *sd)
{
    if (sd->fd >= 0)
        close(sd->fd);
    free(sd->path);
    sd->fd = -1;
    sd->path = NULL;
}

int state_open_read(const struct state_dir *sd, const char *name, struct err *e)
{
    /* O_NONBLOCK: a FIFO planted under our name must not hang the launch. */
    int fd = openat(sd->fd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) {
            err_set(e, "%s/%s is a symbolic link; ignoring it", sd->path, name);
            errno = EPERM;
        } else {
            int error = errno;
            err_set(e, "%s/%s: %s", sd->path, name, strerror(error));
            errno = error;
        }
        return -1;
    }
    const char *why = state_distrust(fd);
    if (why) {
        err_set(e, "%s/%s %s; ignoring it", sd->path, name, why);
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static bool write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        buf += w;
        len -= (size_t)w;
    }
    return true;
}

const char *state_distrust(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "is not a regular file";
    return untrusted(&st);
}

/* A pid is not unique among containers sharing a state directory, each tunerun PID 1 there. */
unsigned long long state_random(void)
{
    unsigned long long r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        r = (unsigned long long)getpid() << 32 ^ (unsigned long long)time(NULL);
    return r;
}

/*
 * A launch killed between creating its temporary file and renaming it
 * leaves the file behind. Whoever writes NAME next removes those older
 * than a minute: no writer takes that long.
 */
static void sweep_stale(const struct state_dir *sd, const char *name)
{
    int fd = openat(sd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t len = strlen(name);
    time_t now = time(NULL);
    struct dirent *d;
    while ((d = readdir(dir)) != NULL) {
        size_t n = strlen(d->d_name);
        struct stat st;
        if (d->d_name[0] != '.' || strncmp(d->d_name + 1, name, len) != 0 ||
            d->d_name[1 + len] != '.' || n < 4 || strcmp(d->d_name + n - 4, ".tmp") != 0)
            continue;
        if (fstatat(sd->fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < now - 60)
            unlinkat(sd->fd, d->d_name, 0);
    }
    closedir(dir);
}

bool state_write(const struct state_dir *sd, const char *name, const char *const *bufs,
                 const size_t *lens, size_t n, struct err *e)
{
    char tmp[256];
    snprintf(tmp, sizeof(tmp), ".%s.%016llx.tmp", name, state_random());
    int fd =
        openat(sd->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0) {
        err_set(e, "cannot create %s/%s: %s", sd->path, tmp, strerror(errno));
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = write_all(fd, bufs[i], lens[i]);
    int error = errno;
    if (close(fd) < 0 && ok) {
        ok = false;
        error = errno;
    }
    if (ok && renameat(sd->fd, tmp, sd->fd, name) < 0) {
        ok = false;
        error = errno;
    }
    if (!ok) {
        err_set(e, "cannot write %s/%s: %s", sd->path, name, strerror(error));
        unlinkat(sd->fd, tmp, 0);
    }
    sweep_stale(sd, name);
    return ok;
}
