/*
 * registry.h - the services tunerun has launched on this host, as claims.
 *
 * In the state directory, `lock` serializes launches: each takes it from
 * reading the claims until just before exec, so concurrent launches decide
 * one at a time. Each launch leaves a claim (profile, CPUs, nodes,
 * exclusive, avoid, pid and its start time) in two places:
 *
 *   claims          the table, one line per claim: every launch reads it
 *                   in one go, however many services run
 *   claim.P.RANDOM  the claim's own file, holding the same line. Its fd is
 *                   deliberately left open across exec with a shared flock:
 *                   the claim lives exactly while some process of the
 *                   service holds it, through daemonizing forks, pid
 *                   namespaces and crashes (the kernel drops the lock).
 *                   If the table is lost, it is rebuilt from these files.
 *
 * For daemons that close every inherited fd, pid + start time is a second
 * witness. Claims that neither witness keeps alive are pruned under the
 * lock, and the table keeps where each launch (profile and command) ran
 * last, so that a restarted service can get its placement back.
 */
#ifndef TUNERUN_REGISTRY_H
#define TUNERUN_REGISTRY_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "claim.h"
#include "log.h"
#include "state.h"
#include "util.h"

struct registry {
    const struct state_dir *sd;
    int lock_fd;
    bool readonly;        /* tunerun ps: shared lock, nothing pruned or written */
    struct claim *claims; /* claims, live as far as registry_check() probed */
    size_t nclaims;
    struct claim *ended; /* where each launch key ran last, oldest first */
    size_t nended;
    size_t pruned; /* stale claims removed while reading */
    char **dead;   /* the files of the claims found dead, pruned or (read-only) left out */
    size_t ndead;
    size_t lines;        /* in the table: rewritten whole when too many no longer count */
    char *pending;       /* lines to add to the table (placements of claims pruned now) */
    bool checked;        /* every claim has been probed (REGISTRY_READ) */
    bool rewrite;        /* the table must be written whole */
    bool told;           /* a failed table write was returned to the caller, which said so */
    struct witness self; /* this process's, read once a launch: what its claim records */
};

enum registry_mode { REGISTRY_WRITE, REGISTRY_READ };

/*
 * Take the lock and read the claims. REGISTRY_WRITE (launches) takes it
 * exclusively; the caller then calls registry_check(). REGISTRY_READ (ps)
 * takes it shared and checks every claim, leaving stale ones out. `self`
 * is this process's witness as the caller read it, or NULL to read it.
 */
bool registry_open(struct registry *r, const struct state_dir *sd, enum registry_mode mode,
                   const struct witness *self, struct err *e);

/*
 * Probe claims and drop (and, for a writer, prune) the stale ones: every
 * claim when there are few or `depends` is NULL; else those `depends`
 * says the launch depends on, plus a few others in turn. An unprobed claim
 * counts as alive, which only ever keeps a launch off CPUs it could have
 * had; the stale ones are pruned by later launches.
 */
void registry_check(struct registry *r, bool (*depends)(const struct claim *, void *), void *arg);

/*
 * Write this launch's claim and return its fd (locked, not close-on-exec,
 * to be inherited by the command), or -1 with e set. c->file is ignored;
 * `name` receives the file name, for registry_drop() when the launch fails
 * after all.
 */
int registry_claim(struct registry *r, const struct claim *c, char *name, size_t n, struct err *e);

/* Undo registry_claim(): remove the claim and close its fd (lock still held). */
void registry_drop(struct registry *r, const char *name, int fd);

/*
 * Record that claim `i` now covers only `cpus` on `nodes` (a shared service
 * shrunk off an arriving one's CPUs): its claim file at once, the table
 * with the next claim, or by registry_close(). False, with the claim as it
 * was, when its file cannot be written.
 */
bool registry_update(struct registry *r, size_t i, hwloc_const_bitmap_t cpus,
                     hwloc_const_bitmap_t nodes, struct err *e);

/* The placement a launch with this key had when it last ended, or NULL. */
const struct claim *registry_previous(struct registry *r, const char *key);

/*
 * Close the claim fds this process inherited from a service that launched
 * it (tunerun nested in a tunerun service): they would keep that claim
 * alive and make this launch one of its processes.
 */
void registry_disown(const struct state_dir *sd);

/*
 * Write the table now, if anything changed, keeping the lock: what a
 * caller removes only once the table no longer needs it waits for this.
 * True when there was nothing to write, or it was written.
 */
bool registry_flush(struct registry *r, struct err *e);

/*
 * Write back what changed and release the lock, keeping the claims in
 * memory: just before exec, which frees them faster than free(3) would.
 */
void registry_release(struct registry *r);
/* registry_release(), then free the claims. */
void registry_close(struct registry *r);

/* Whether a claim's fd lock is held right now (by any process). */
bool registry_held(const struct registry *r, const struct claim *c);
/* Whether its pid is still the process that claimed it (same pid namespace and boot). */
bool registry_pid_alive(const struct registry *r, const struct claim *c);

struct pid_list;
/*
 * For each of n claims, the processes holding it: those with its claim
 * file open (one pass over /proc for all), and its pid when that is still
 * its witness: with `witness` always, else only where its fds cannot be
 * read to tell. The witness is the table's word, and whoever may write
 * the table (a container's root sharing the directory) could name any
 * process: what moves threads takes it only where nothing disproves it.
 * Never this process. out[] has n entries to pid_list_free().
 */
void registry_holders(const struct registry *r, const struct claim *claims, size_t n, bool witness,
                      struct pid_list *out);

#endif
