/*
 * profile.c - INI profile -> struct profile: where profiles are looked
 * for, loading one (with its includes, then --set, then the checks of the
 * whole), and the names plans and messages use.
 *
 * Loading happens in two passes (profile_internal.h): profile_read.c reads
 * every file into entries, profile_keys.c applies them through the table
 * of keys. Every value remembers the file and line (or --set) that gave
 * it, so that later errors point at the source.
 */
#include "profile_internal.h"
#include "parse.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const profile_env_vars[] = {"cpus", "ncpus", "nodes", "nnodes", "node_mem", NULL};

const struct profile_rlimit profile_rlimits[PROFILE_NLIMITS] = {
    {"as", RLIMIT_AS},           {"core", RLIMIT_CORE},         {"cpu", RLIMIT_CPU},
    {"data", RLIMIT_DATA},       {"fsize", RLIMIT_FSIZE},       {"locks", RLIMIT_LOCKS},
    {"memlock", RLIMIT_MEMLOCK}, {"msgqueue", RLIMIT_MSGQUEUE}, {"nice", RLIMIT_NICE},
    {"nofile", RLIMIT_NOFILE},   {"nproc", RLIMIT_NPROC},       {"rss", RLIMIT_RSS},
    {"rtprio", RLIMIT_RTPRIO},   {"rttime", RLIMIT_RTTIME},     {"sigpending", RLIMIT_SIGPENDING},
    {"stack", RLIMIT_STACK},
};

const char *rlimit_name(int resource)
{
    for (size_t i = 0; i < PROFILE_NLIMITS; i++)
        if (profile_rlimits[i].resource == resource)
            return profile_rlimits[i].name;
    return "?";
}

char *rlimit_raise_fix(int resource, rlim_t soft, rlim_t hard)
{
    char s[24], h[24], unit[24];
    rlim_str(s, sizeof(s), soft);
    rlim_str(h, sizeof(h), hard);
    const char *name = rlimit_name(resource);
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(unit); i++) /* systemd's Limit*= name it in capitals */
        unit[i] = (char)toupper((unsigned char)name[i]);
    unit[i] = '\0';
    return xasprintf("raise it where tunerun starts: Limit%s=%s:%s in the unit, or docker run "
                     "--ulimit %s=%s:%s",
                     unit, s, h, name, s, h);
}

const char *mem_mode_name(enum mem_mode m)
{
    static const char *const names[] = {"local",      "bind", "preferred",
                                        "interleave", "auto", "weighted-interleave"};
    return names[m];
}

const char *thp_mode_name(enum thp_mode m)
{
    static const char *const names[] = {"system", "madvise", "never"};
    return names[m];
}
void profile_where(char *buf, size_t n, struct origin at, const char *section, const char *key,
                   const char *value)
{
    char s[ESCAPED_SIZE(32)], k[ESCAPED_SIZE(64)], v[ESCAPED_SIZE(64)];
    str_escaped(s, sizeof(s), section, 32);
    str_escaped(k, sizeof(k), key, 64);
    if (at.line > 0)
        snprintf(buf, n, "%s%s:%d: %s.%s", at.via ? at.via : "", at.file, at.line, s, k);
    else if (value)
        snprintf(buf, n, "--set %s.%s=%s", s, k, str_escaped(v, sizeof(v), value, 64));
    else
        snprintf(buf, n, "--set %s.%s", s, k);
}
void profile_defaults(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    /* Without a [placement], tunerun does not narrow anything. */
    p->placement.nodes = 0;
    p->placement.cpus = CPUS_ALL;
    p->placement.smt = true;
    p->placement.enforce = true;
    p->placement.memory = MEM_LOCAL;
    p->memory.thp = THP_SYSTEM;
    p->memory.arena = ARENA_UNSET;
    p->memory.swappiness = -1;
    p->host.overcommit_memory = -1;
}

static char *name_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *name = xstrdup(base);
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".ini") == 0)
        name[n - 4] = '\0';
    return name;
}

static bool load_common(struct profile *p, const char *path, const char *text,
                        const struct profile_file *mem, size_t nmem,
                        const struct profile_paths *paths, struct err *e)
{
    static const struct profile_paths none = {{0}, {0}, 0, NULL, NULL};
    profile_defaults(p);
    struct loader L = {.p = p, .paths = paths ? paths : &none, .mem = mem, .nmem = nmem};
    struct entries all = {0};
    bool ok = profile_read_file(&L, path, text, NULL, &all, e);
    for (size_t i = 0; ok && i < all.n; i++)
        ok = profile_apply_entry(p, &all.v[i], e);
    entries_free(&all);
    ok = ok && profile_check_loader_env(p, e) && profile_check_args(p, e);
    if (!ok) {
        profile_free(p);
        return false;
    }
    p->path = xstrdup(path);
    if (p->name == NULL) {
        p->name = name_from_path(path);
        /* it names claims and messages, and other profiles avoid it by it */
        if (!profile_valid_name(p->name)) {
            err_set(e,
                    "%s: '%s' is not a profile name (letters, digits, '-', '_', '.', '@'); "
                    "rename the file or set [profile] name",
                    path, p->name);
            return false;
        }
    }
    return true;
}

bool profile_load(struct profile *p, const char *path, const struct profile_paths *paths,
                  struct err *e)
{
    if (*path == '\0') {
        memset(p, 0, sizeof(*p)); /* as a failed load leaves it: profile_free() may follow */
        err_set(e, "--profile-file '': an empty path names no profile file");
        return false;
    }
    return load_common(p, path, NULL, NULL, 0, paths, e);
}

bool profile_load_string(struct profile *p, const char *path, const char *text,
                         const struct profile_paths *paths, struct err *e)
{
    return load_common(p, path, text, NULL, 0, paths, e);
}

bool profile_load_files(struct profile *p, const struct profile_file *files, size_t n,
                        const struct profile_paths *paths, struct err *e)
{
    if (n == 0) {
        err_set(e, "no profile");
        return false;
    }
    return load_common(p, files[0].path, NULL, files, n, paths, e);
}

bool profile_check(const struct profile *p, struct err *e)
{
    return profile_check_loader_env(p, e) && profile_check_args(p, e);
}

bool profile_set(struct profile *p, const char *assignment, struct err *e)
{
    const char *eq = strchr(assignment, '=');
    const char *dot = strchr(assignment, '.');
    if (eq == NULL || dot == NULL || dot > eq || dot == assignment || dot + 1 == eq) {
        char shown[ESCAPED_SIZE(64)];
        err_set(e, "--set %s: expected SECTION.KEY=VALUE",
                str_escaped(shown, sizeof(shown), assignment, 64));
        return false;
    }
    char *section = strndup(assignment, (size_t)(dot - assignment));
    char *key = strndup(dot + 1, (size_t)(eq - dot - 1));
    char *value = xstrdup(eq + 1);
    struct entry en = {str_trim(section), str_trim(key), str_trim(value), {"--set", 0, NULL}};
    bool ok = profile_apply_entry(p, &en, e);
    free(section);
    free(key);
    free(value);
    return ok;
}

char *profile_find(const char *name, const struct profile_paths *paths, size_t *dir_index)
{
    if (!profile_valid_name(name))
        return NULL;
    for (size_t i = 0; i < paths->n; i++) {
        char *cand = NULL;
        if (asprintf(&cand, "%s/%s.ini", paths->dirs[i], name) < 0)
            return NULL;
        if (access(cand, F_OK) == 0) {
            if (dir_index)
                *dir_index = i;
            return cand;
        }
        free(cand);
    }
    return NULL;
}

char *profile_locate(const char *name, const struct profile_paths *paths, struct err *e)
{
    if (*name == '\0') {
        err_set(e, "an empty profile name: name one that 'tunerun profiles' lists, or give a file "
                   "with --profile-file FILE");
        return NULL;
    }
    char *path = profile_find(name, paths, NULL);
    if (path)
        return path;
    char shown[ESCAPED_SIZE(64)], where[PATH_MAX] = "";
    str_escaped(shown, sizeof(shown), name, 64);
    for (size_t i = 0; i < paths->n; i++)
        snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%s", i ? ", " : "",
                 paths->dirs[i]);
    /* A path, or a file name with its .ini, is a file to read, not a name to look up. */
    size_t len = strlen(name);
    if (!strchr(name, '/') && !(len > 4 && strcmp(name + len - 4, ".ini") == 0)) {
        err_set(e, "no profile '%s' in %s (see 'tunerun profiles')%s%s", shown, where,
                paths->unsearched ? "; " : "", paths->unsearched ? paths->unsearched : "");
        return NULL;
    }
    char *stem = name_from_path(name), also[128] = "";
    char *found = profile_find(stem, paths, NULL);
    if (found)
        snprintf(also, sizeof(also), " ('%s' is one)", stem);
    err_set(e,
            "no profile '%s' in %s: a profile's name has no directory and no .ini%s; to read "
            "the file %s, use --profile-file %s",
            shown, where, also, shown, shown);
    free(found);
    free(stem);
    return NULL;
}

void profile_free(struct profile *p)
{
    profile_args_free(p);
    free(p->name);
    free(p->path);
    free(p->description);
    free(p->fears);
    for (size_t i = 0; i < p->placement.navoid; i++)
        free(p->placement.avoid[i]);
    free(p->placement.avoid);
    free(p->placement.near);
    for (size_t i = 0; i < p->nenv; i++) {
        free(p->env[i].name);
        free(p->env[i].value);
    }
    for (size_t i = 0; i < p->security.nloader_env; i++)
        free(p->security.loader_env[i]);
    free(p->security.loader_env);
    free(p->security.user);
    free(p->security.group);
    free(p->env);
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    for (size_t i = 0; i < p->nvias; i++)
        free(p->vias[i]);
    free(p->vias);
    memset(p, 0, sizeof(*p));
}

/* ---- where profiles are found ------------------------------------------------ */

/*
 * profiles/ next to the binary, for a source tree that was never installed;
 * *unknown when /proc cannot say where the binary is, so that a profile
 * not found says why that directory was not searched.
 */
static char *exe_profile_dir(bool *unknown)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    *unknown = n <= 0;
    if (*unknown)
        return NULL;
    exe[n] = '\0';
    char *dir = xasprintf("%s/profiles", dirname(exe));
    if (access(dir, F_OK) != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

void profile_paths_init(struct profile_paths *paths, const char *admin, const char *installed)
{
    bool unknown;
    memset(paths, 0, sizeof(*paths));
    paths->exe_dir = exe_profile_dir(&unknown);
    paths->unsearched = unknown ? "profiles/ next to tunerun's binary, if there is one, was "
                                  "not searched: /proc/self/exe cannot be read (is /proc "
                                  "mounted?)"
                                : NULL;
    paths->dirs[paths->n] = admin;
    paths->labels[paths->n++] = "admin";
    if (paths->exe_dir && strcmp(paths->exe_dir, installed) != 0) {
        paths->dirs[paths->n] = paths->exe_dir;
        paths->labels[paths->n++] = "next to the binary";
    }
    paths->dirs[paths->n] = installed;
    paths->labels[paths->n++] = "installed";
}

void profile_paths_free(struct profile_paths *paths)
{
    free(paths->exe_dir);
    paths->exe_dir = NULL;
}

bool profile_open(struct profile *p, const char *name, const char *file, const char *const *sets,
                  size_t nsets, const struct profile_paths *paths, struct err *e)
{
    char *path = file ? xstrdup(file) : profile_locate(name, paths, e);
    if (path == NULL) {
        memset(p, 0, sizeof(*p));
        return false;
    }
    bool ok = profile_load(p, path, paths, e);
    free(path);
    for (size_t i = 0; ok && i < nsets; i++)
        ok = profile_set(p, sets[i], e);
    ok = ok && profile_check(p, e);
    if (!ok)
        profile_free(p);
    return ok;
}

/* The .ini files of one directory, in the listing, each shadowed where the search finds another. */
static void list_dir(struct profile_listing *l, const struct profile_paths *paths, size_t d)
{
    struct dirent **names;
    int n = scandir(paths->dirs[d], &names, NULL, alphasort);
    for (int k = 0; k < n; k++) {
        size_t len = strlen(names[k]->d_name);
        if (len > 4 && strcmp(names[k]->d_name + len - 4, ".ini") == 0) {
            char *name = strndup(names[k]->d_name, len - 4);
            size_t where = 0;
            char *winner = profile_find(name, paths, &where);
            l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
            l->v[l->n++] = (struct profile_entry){name, paths->labels[d], paths->dirs[d],
                                                  xstrdup(names[k]->d_name), winner && where != d};
            free(winner);
        }
        free(names[k]);
    }
    if (n >= 0) /* a directory that does not exist holds no profiles */
        free(names);
}

void profile_listing(struct profile_listing *l, const struct profile_paths *paths)
{
    memset(l, 0, sizeof(*l));
    l->unsearched = paths->unsearched;
    for (size_t d = 0; d < paths->n; d++)
        list_dir(l, paths, d);
}

void profile_listing_free(struct profile_listing *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].file);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}
