/*
 * state.h - tunerun's state directory, where one launch leaves what a later
 * launch reads: the topology cache today, the registry of claims next.
 *
 * /run/tunerun for root, $XDG_RUNTIME_DIR/tunerun for other users, or the
 * directory given with --state-dir. It is created when missing, then opened
 * with O_NOFOLLOW and checked through the open descriptor: a directory,
 * owned by the effective user, writable by no one else. Everything inside
 * is opened relative to that descriptor, so renaming a path component
 * afterwards cannot redirect a later open.
 */
#ifndef TUNERUN_STATE_H
#define TUNERUN_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "log.h"

enum state_status {
    STATE_OK,          /* fd is open and checked */
    STATE_UNAVAILABLE, /* no such place here (read-only /run, no XDG_RUNTIME_DIR) */
    STATE_UNSAFE,      /* it exists but someone else could write to it: never used */
};

struct state_dir {
    int fd;        /* -1 unless STATE_OK */
    char *path;    /* for messages; NULL when there is no candidate at all */
    bool readonly; /* on a read-only mount: read, never written (no claim) */
};

/*
 * Open `path`, or the default location when NULL, creating it (0700) when
 * `create` and missing. The default one, tunerun's own, is made 0700 if
 * others may read it: its claim names say which services run.
 */
enum state_status state_dir_open(struct state_dir *sd, const char *path, bool create,
                                 struct err *e);
void state_dir_close(struct state_dir *sd);

/*
 * Open NAME inside the state directory for reading, refusing a symlink,
 * anything but a regular file, and a file that is not ours or that others
 * may write. Returns the fd, or -1 with errno set (ENOENT: not there yet;
 * EPERM: there but untrusted, with e saying why).
 */
int state_open_read(const struct state_dir *sd, const char *name, struct err *e);

/*
 * Why an open file is not to be trusted: not a regular file, another
 * user's, or writable by group or others. NULL when it is ours alone.
 */
const char *state_distrust(int fd);

/* A random number for unique names in the state directory. */
unsigned long long state_random(void);

/*
 * Replace NAME atomically with the concatenation of `n` buffers: write a
 * temporary file beside it, then rename. On failure nothing is left behind.
 */
bool state_write(const struct state_dir *sd, const char *name, const char *const *bufs,
                 const size_t *lens, size_t n, struct err *e);

#endif
