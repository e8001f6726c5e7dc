/*
 * registry.h - the services tunerun has launched on this host, as claims.
 *
 * In the state directory, `lock` serializes launches: each takes it from
 * reading the claims until just before exec, so concurrent launches decide
 * one at a time. Each launch leaves one claim file (profile, CPUs, nodes,
 * exclusive, avoid, pid and its start time). The claim's fd is deliberately
 * left open across exec with a shared flock held: the claim lives exactly
 * while some process of the service holds it, through daemonizing forks,
 * pid namespaces and crashes (the kernel drops the lock). For daemons that
 * close every inherited fd, pid + start time is a second witness. Claims
 * that neither witness keeps alive are pruned under the lock.
 */
#ifndef TUNERUN_REGISTRY_H
#define TUNERUN_REGISTRY_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "log.h"
#include "state.h"

struct claim {
    char *file; /* name in the state directory */
    char *profile;
    hwloc_bitmap_t cpus, nodes, mem_nodes;
    bool exclusive;
    char **avoid;
    size_t navoid;
    long pid;                 /* in the pid namespace below */
    unsigned long long pidns; /* inode of the writer's pid namespace */
    unsigned long long start; /* the pid's start time, clock ticks after boot */
    char boot_id[40];
    long long time; /* when it was claimed, seconds since the epoch */
};

struct registry {
    const struct state_dir *sd;
    int lock_fd;
    struct claim *claims; /* live claims, pruned */
    size_t nclaims;
    size_t pruned; /* stale claims removed while reading */
    /* this process's own witness, read once: what its claim records */
    bool witness;
    unsigned long long pidns, start;
    char boot_id[40];
};

/* Take the lock and read the live claims, pruning stale ones. */
bool registry_open(struct registry *r, const struct state_dir *sd, struct err *e);

/*
 * Write this launch's claim and return its fd (locked, not close-on-exec,
 * to be inherited by the command), or -1 with e set. `name` receives the
 * file name, for registry_drop() when the launch fails after all.
 */
int registry_claim(struct registry *r, const struct claim *c, char *name, size_t n, struct err *e);
void registry_drop(struct registry *r, const char *name, int fd);

/* Release the lock and free the claims. */
void registry_close(struct registry *r);

void claim_free(struct claim *c);

#endif
