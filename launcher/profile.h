/*
 * profile.h - a workload profile: what one service fears, as data.
 *
 * Profiles are INI files read with inih. A profile may `include` others;
 * the included keys come first and the including file overrides them, as
 * tuned's profiles do. Every value remembers the file and line (or the
 * --set option) that gave it, so later errors can point at the source.
 */
#ifndef TUNERUN_PROFILE_H
#define TUNERUN_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "log.h"

enum cpus_mode { CPUS_NODE, CPUS_ALL, CPUS_COUNT, CPUS_PERCENT };
enum mem_mode { MEM_LOCAL, MEM_BIND, MEM_PREFERRED, MEM_INTERLEAVE, MEM_AUTO, MEM_WEIGHTED };
/*
 * Which memory tiers a service's pages may come from (topo.h's speeds):
 * the fastest, next to its CPUs; every one, slower ones after it; or the
 * high-bandwidth nodes (HBM, MCDRAM) near its CPUs first.
 */
enum tier_mode { TIERS_FASTEST, TIERS_ALL, TIERS_BANDWIDTH };
enum thp_mode { THP_SYSTEM, THP_MADVISE, THP_NEVER };
enum arena_mode { ARENA_UNSET, ARENA_AUTO, ARENA_VALUE };
/* A [java] setting: derived from the plan, switched off, or given. */
enum java_mode { JAVA_OFF, JAVA_AUTO, JAVA_VALUE };
/* [host] hugepages: whose shared memory asks hugetlbfs for its pages, for doctor to count. */
enum hugepages_mode { HUGEPAGES_NONE, HUGEPAGES_POSTGRESQL };

/* Where a value came from: "file:line", "--set ..." or the built-in default. */
struct origin {
    const char *file; /* NULL for the built-in default; owned by the profile */
    int line;         /* 0 for --set */
    /*
     * For a file read through includes, the chain that read it, as messages
     * print it before file:line: "top.ini:2: in include 'base': " (owned by
     * the profile); NULL for the file named to tunerun and for --set.
     */
    const char *via;
};

struct profile_limit {
    bool set;
    rlim_t soft, hard;
    struct origin at;
};

struct profile_env {
    char *name;
    char *value; /* may hold ${ncpus}-style references, checked at load */
    struct origin at;
};

/*
 * One way a command may spell an option of [args]: "-t", "--threads",
 * "--io-threads", or two words, "-c max_worker_processes" (an option and
 * the name its value starts with, as postgres's -c name=value).
 */
struct arg_spelling {
    char *option; /* "-t", "--threads", "-c" */
    char *name;   /* "max_worker_processes" for two words; NULL for one */
};

/* An argument [args] adds to the command unless the command passes it already. */
struct profile_arg {
    char *key;                 /* as the profile writes it: spellings separated by '|' */
    struct arg_spelling *ways; /* the first is the one added */
    size_t nways;
    char *value; /* may hold ${ncpus}-style references, checked at load; "=V": joined */
    struct origin at;
};

#define PROFILE_NLIMITS 16 /* RLIMIT_NLIMITS on Linux */

struct profile {
    char *name;
    char *path; /* the file named on the command line or found by search */
    char *description;
    char *fears;

    struct {
        unsigned nodes; /* 0 means all */
        enum cpus_mode cpus;
        unsigned cpus_value;                             /* CPU count or percent */
        struct origin nodes_at, cpus_at, memory_size_at; /* what a warning cites */
        bool smt;
        bool exclusive;
        char **avoid;
        size_t navoid;
        enum mem_mode memory;
        uint64_t memory_size; /* 0: unknown */
        char *near;           /* a path on the disk it does its IO on; NULL: none */
        struct origin near_at;
        bool enforce; /* hold it to its placement with a cpuset cgroup of its own */
        struct origin enforce_at;
        enum tier_mode tiers;
        struct origin tiers_at;
    } placement;

    struct {
        enum thp_mode thp;
        enum arena_mode arena;
        unsigned arena_value;
        bool oom_set;
        int oom_score_adj;
        struct origin oom_at;
        int swappiness; /* 0..100, or -1: the system's */
        struct origin swappiness_at;
        bool swap_max_set; /* else the system's */
        uint64_t swap_max; /* bytes; UINT64_MAX: "max" */
        struct origin swap_max_at;
    } memory;

    struct profile_limit limits[PROFILE_NLIMITS];

    struct profile_env *env;
    size_t nenv;

    struct {
        char **commands; /* `for`: the commands' names (basenames) they are for */
        size_t ncommands;
        struct origin for_at;
        struct profile_arg *v;
        size_t n;
    } args;

    struct {
        char **loader_env; /* loader variables [env] may set, named one by one */
        size_t nloader_env;
        char *user; /* a name or a uid; NULL: stay who tunerun is */
        struct origin user_at;
        char *group; /* a name or a gid; NULL: the user's primary group */
        struct origin group_at;
        bool keep_caps_set; /* else: none when user is set, all otherwise */
        uint64_t keep_caps; /* bit N: capability N */
        struct origin keep_caps_at;
        bool no_new_privs;
    } security;

    /*
     * [host]: what the service wants of the host that a launch cannot set
     * (sysctls), for `tunerun doctor` to check.
     */
    struct {
        int overcommit_memory; /* the vm.overcommit_memory it wants, 0..2; -1: no wish */
        struct origin overcommit_at;
        enum hugepages_mode hugepages;
    } host;

    struct {
        enum java_mode active_processor_count;
        unsigned active_processor_count_value;
        enum java_mode use_numa; /* JAVA_AUTO: only when more than one node is bound */
        enum java_mode max_ram;
        uint64_t max_ram_value;
    } java;

    /* Every file read, in include order, for `plan` to show. */
    char **files;
    size_t nfiles;
    /* The include chains origins point to (struct origin's via). */
    char **vias;
    size_t nvias;
};

/* Directories searched for NAME.ini, in order. */
struct profile_paths {
    const char *dirs[4];
    const char *labels[4]; /* "admin", "next to the binary", "installed" */
    size_t n;
    /* why profiles/ next to the binary was not searched, for messages; NULL when it was */
    const char *unsearched;
    char *exe_dir; /* profiles/ next to the binary, when there is one */
};

/*
 * The search path: `admin` (/etc/tunerun/profiles), profiles/ next to the
 * binary (a source tree never installed), then `installed`.
 */
void profile_paths_init(struct profile_paths *paths, const char *admin, const char *installed);
void profile_paths_free(struct profile_paths *paths);

/*
 * The profile a command line names: `file` (--profile-file) or `name`
 * along the search path, loaded, with each of `sets` (--set) applied and
 * the whole checked; false with e naming the file:line or option at fault.
 */
bool profile_open(struct profile *p, const char *name, const char *file, const char *const *sets,
                  size_t nsets, const struct profile_paths *paths, struct err *e);

/* The profiles found along the search path, for `tunerun profiles`. */
struct profile_entry {
    char *name;         /* the file's name without .ini */
    const char *source; /* the directory's label */
    const char *dir;
    char *file;
    bool shadowed; /* a directory searched before holds one of the same name */
};
struct profile_listing {
    struct profile_entry *v;
    size_t n;
    const char *unsearched; /* the search path's */
};
void profile_listing(struct profile_listing *l, const struct profile_paths *paths);
void profile_listing_free(struct profile_listing *l);

/* Find NAME.ini along the search path; NULL when absent (caller frees). */
char *profile_find(const char *name, const struct profile_paths *paths, size_t *dir_index);

/*
 * The same for a name given on the command line: when there is none,
 * e->msg says why in one line (an empty name; a name that is a file, with
 * a hint of --profile-file; the directories searched).
 */
char *profile_locate(const char *name, const struct profile_paths *paths, struct err *e);

/*
 * Load the profile in `path` (--profile-file, or profile_locate()'s) with
 * its includes. On failure, e->msg holds one line naming file:line and the
 * problem.
 */
bool profile_load(struct profile *p, const char *path, const struct profile_paths *paths,
                  struct err *e);

/* Same, from memory: `text` stands for a file called `path`; includes come from disk (tests). */
bool profile_load_string(struct profile *p, const char *path, const char *text,
                         const struct profile_paths *paths, struct err *e);

/*
 * Same, with no file read at all (fuzzing): files[0] is the profile, and
 * includes are resolved among the files by path, as they would be on disk
 * with `paths`.
 */
struct profile_file {
    const char *path, *text;
};
bool profile_load_files(struct profile *p, const struct profile_file *files, size_t n,
                        const struct profile_paths *paths, struct err *e);

/* What holds only of the whole profile, checked again after the last --set. */
bool profile_check(const struct profile *p, struct err *e);

/* Apply one "SECTION.KEY=VALUE" override, as --set does. */
bool profile_set(struct profile *p, const char *assignment, struct err *e);

void profile_free(struct profile *p);

/*
 * Where a key's value came from, for messages: "FILE:LINE: section.key"
 * (after the include chain that read FILE, if any), or
 * "--set section.key=value" ("--set section.key" when value is NULL).
 */
void profile_where(char *buf, size_t n, struct origin at, const char *section, const char *key,
                   const char *value);

/* Every SECTION.KEY a profile or --set takes, one per line; [env] as env.NAME. */
bool profile_key_name(size_t i, char *buf, size_t n); /* the i-th, false past the last */

/* Names used by plans and reports. */
const char *rlimit_name(int resource);
/*
 * Where a limit of soft:hard is raised for tunerun to pass on, as a fix
 * says it: "raise it where tunerun starts: LimitNOFILE=65535:65535 in the
 * unit, or docker run --ulimit nofile=65535:65535"; malloc()ed.
 */
char *rlimit_raise_fix(int resource, rlim_t soft, rlim_t hard);
const char *mem_mode_name(enum mem_mode m);
const char *thp_mode_name(enum thp_mode m);

/* The variables a profile's [env] values may reference as ${name}. */
extern const char *const profile_env_vars[];

#endif
