/*
 * profile_internal.h - what the files of the profile loader share; for
 * profile*.c only.
 *
 * Loading is two passes. profile_read.c reads every file with inih into a
 * flat list of entries (section, key, value, file, line), includes first,
 * so that a later entry overrides an earlier one. profile_keys.c then
 * applies each entry through the table of keys, each with its own strict
 * parser; [env] and [limits], whose names are the user's or the kernel's,
 * have profile_env.c's. profile.c holds the API above both.
 */
#ifndef TUNERUN_PROFILE_INTERNAL_H
#define TUNERUN_PROFILE_INTERNAL_H

#include <ini.h>
#include <sys/types.h>

#include "profile.h"

#define PROFILE_MAX_BYTES (256 * 1024) /* a profile is a page of text, not a data file */
#define INCLUDE_DEPTH_MAX 16
/* The longest line inih reads whole: its buffer also holds the newline and the NUL. */
#define LINE_MAX_CHARS (INI_MAX_LINE - 2)
#define KNOWN_SECTIONS "profile, placement, memory, limits, env, args, host, java, security"

/* One key = value as read, with where it came from. */
struct entry {
    char *section, *key, *value;
    struct origin at;
};

struct entries {
    struct entry *v;
    size_t n, cap;
};

void entries_free(struct entries *es);

/* The identity of a file on the include stack: same inode, same file. */
struct file_id {
    dev_t dev;
    ino_t ino;
    const char *path;
};

struct loader {
    struct profile *p;
    const struct profile_paths *paths;
    struct file_id stack[INCLUDE_DEPTH_MAX];
    size_t depth;
    /* profile_load_files: the files, in place of the filesystem */
    const struct profile_file *mem;
    size_t nmem;
};

/* ---- profile_read.c ---------------------------------------------------------- */

/*
 * Read one file (path, or `text` standing for it) and, first, its
 * includes into out. via is the include chain that led here (NULL for the
 * top file).
 */
bool profile_read_file(struct loader *L, const char *path, const char *text, const char *via,
                       struct entries *out, struct err *e);
/* Letters, digits, '-', '_', '.', '@', at most 64: what names claims and messages. */
bool profile_valid_name(const char *s);
/* Why a value with str_harmful()'s byte at cc is not text. */
const char *profile_control_why(const char *cc);
bool profile_known_section(const char *name, size_t len);
void profile_unknown_section(struct err *e, struct origin at, const char *name);

/* ---- profile_keys.c and profile_env.c ------------------------------------------ */

/* Each setter parses one value; on failure it leaves a phrase in *why. */
typedef bool (*setter)(struct profile *p, const char *v, struct origin at, const char **why);

/* A setter's phrase, with one string in it (a static buffer: the next call reuses it). */
const char *profile_why(const char *fmt, const char *arg);
bool profile_set_str(char **dst, const char *v);
/* Whether a list value has an empty item ("a,,b", a trailing comma): why, when it has. */
bool profile_empty_item(const char *v, const char **why);

/* Apply one entry through the table of keys; e names file:line (or --set) and the problem. */
bool profile_apply_entry(struct profile *p, const struct entry *en, struct err *e);
bool profile_set_env(struct profile *p, const char *name, const char *v, struct origin at,
                     const char **why);
bool profile_set_limit(struct profile *p, const char *name, const char *v, struct origin at,
                       const char **why);
bool profile_set_loader_env(struct profile *p, const char *v, struct origin at, const char **why);
/* Every ${name} in v names a plan variable (profile_env_vars); else why. */
bool profile_check_refs(const char *v, const char **why);

/* ---- profile_args.c ------------------------------------------------------------ */

/* One [args] key: `for`, or an option's spellings; its value checked. */
bool profile_set_arg(struct profile *p, const char *key, const char *v, struct origin at,
                     const char **why);
/* What holds only of the whole profile: [args] options name the command they are for. */
bool profile_check_args(const struct profile *p, struct err *e);
void profile_args_free(struct profile *p);
/* What holds only of the whole profile: a loader variable in [env] is named in loader_env. */
bool profile_check_loader_env(const struct profile *p, struct err *e);

/* The resource limits [limits] names, as the kernel numbers them (profile.c). */
struct profile_rlimit {
    const char *name;
    int resource;
};
extern const struct profile_rlimit profile_rlimits[PROFILE_NLIMITS];

#endif
