/*
 * claim.h - one claim of a running service: what it holds, as one line of
 * the registry's table, and the witness of the process that made it.
 *
 * The registry (registry.c) keeps claims alive by file locks and in its
 * table; claim.c knows a claim's words, and whether its pid is still the
 * process that claimed it.
 */
#ifndef TUNERUN_CLAIM_H
#define TUNERUN_CLAIM_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"

#define CLAIM_PREFIX "claim." /* every claim file's name starts so */
#define ENDED_TOKEN  "ended"  /* a table line of where an ended claim ran starts so */
/* The highest CPU or node index a claim may name. */
#define REGISTRY_MAX_INDEX BITMAP_MAX_INDEX

#define CLAIM_KEY_LEN 16

struct claim {
    char *file; /* its claim file's name in the state directory */
    char *profile;
    char key[CLAIM_KEY_LEN + 1]; /* the launch's identity (profile and command), hex */
    hwloc_bitmap_t cpus, nodes, mem_nodes;
    char *mpol; /* the memory policy it was given: "bind", "preferred", ... */
    bool exclusive;
    bool pool; /* shared and placed on every CPU it could have: it can yield some */
    char **avoid;
    size_t navoid;
    long pid;                 /* in the pid namespace below */
    unsigned long long pidns; /* inode of the writer's pid namespace */
    unsigned long long start; /* the pid's start time, clock ticks after boot */
    char boot_id[40];
    long long time; /* when it was claimed, seconds since the epoch */
};

/*
 * What a claim records of the process that made it, besides the lock on
 * its file: its pid namespace, its start time and this boot, so that a
 * pid is taken for the claimer only where it is that process
 * (claim_pid_alive()).
 */
struct witness {
    bool known; /* false: /proc could not say, and claims keep no pid */
    unsigned long long pidns, start;
    char boot_id[40];
};

void claim_init(struct claim *c); /* empty, its sets allocated */
void claim_copy(struct claim *to, const struct claim *from);
void claim_free(struct claim *c);

/* Its line in the table, `file` first, with its newline; malloc()ed. */
char *claim_format(const struct claim *c, const char *file);
/* "ended FILE ...": where a claim ran, kept after it ended. */
char *claim_format_ended(const struct claim *c);
/*
 * One line of the table (modified in place): a claim, its file's name
 * first, or with *ended an ended one's placement. False for anything
 * else.
 */
bool claim_parse(char *line, struct claim *c, bool *ended);
/*
 * The same of a line left as it is, into c (which the caller
 * claim_free()s, whatever the result). The table is tunerun's own, but it
 * is parsed as hostile input (fuzzed).
 */
bool registry_parse_line(const char *line, struct claim *c, bool *ended);

/* This process's witness: /proc/self/ns/pid, field 22 of /proc/self/stat, the boot id. */
void registry_witness(struct witness *w);
/*
 * Field 22 of a /proc/PID/stat: the start time in clock ticks after boot;
 * false for a process that has ended.
 */
bool claim_start_time(const char *stat_path, unsigned long long *start);
/* Whether c's pid is still the process that claimed it, seen from `self`'s namespace and boot. */
bool claim_pid_alive(const struct witness *self, const struct claim *c);

#endif
