/*
 * profile_env.c - [env], the loader variables [security] lets it set, and
 * [limits]: the keys whose names are not tunerun's own (a variable's, a
 * resource limit's), each checked as strictly as the rest.
 */
#include "profile_internal.h"
#include "parse.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool valid_env_name(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

bool profile_check_refs(const char *v, const char **why)
{
    for (const char *s = strstr(v, "${"); s; s = strstr(s + 2, "${")) {
        const char *close = strchr(s, '}');
        if (close == NULL) {
            *why = "unterminated ${ in value";
            return false;
        }
        size_t len = (size_t)(close - s - 2);
        bool known = false;
        for (size_t i = 0; profile_env_vars[i]; i++)
            if (strlen(profile_env_vars[i]) == len && strncmp(s + 2, profile_env_vars[i], len) == 0)
                known = true;
        if (!known) {
            static char buf[160];
            snprintf(buf, sizeof(buf),
                     "unknown variable ${%.*s} (known: cpus, ncpus, nodes, nnodes, node_mem)",
                     (int)(len > 40 ? 40 : len), s + 2);
            *why = buf;
            return false;
        }
    }
    return true;
}

bool profile_set_env(struct profile *p, const char *name, const char *v, struct origin at,
                     const char **why)
{
    if (!valid_env_name(name)) {
        *why = "not a valid environment variable name";
        return false;
    }
    if (strncmp(name, "HWLOC_", 6) == 0) {
        *why = "HWLOC_* belong to tunerun's own topology discovery";
        return false;
    }
    if (strcmp(name, "MALLOC_ARENA_MAX") == 0) {
        *why = "set it with [memory] malloc_arena_max, which the plan derives and reports";
        return false;
    }
    if (!profile_check_refs(v, why))
        return false;
    for (size_t i = 0; i < p->nenv; i++)
        if (strcmp(p->env[i].name, name) == 0) {
            profile_set_str(&p->env[i].value, v);
            p->env[i].at = at;
            return true;
        }
    p->env = xrealloc(p->env, (p->nenv + 1) * sizeof(*p->env));
    p->env[p->nenv++] = (struct profile_env){xstrdup(name), xstrdup(v), at};
    return true;
}

/*
 * Variables that make the dynamic loader or glibc load code or data from
 * where they say: the dynamic loader's LD_*, and what glibc drops for
 * setuid programs (unsecvars.h). A profile sets them only when
 * [security] loader_env names them, one by one.
 */
static bool loader_variable(const char *name)
{
    static const char *const glibc[] = {
        "GCONV_PATH",  "GETCONF_DIR",      "GLIBC_TUNABLES", "HOSTALIASES",
        "LOCALDOMAIN", "LOCPATH",          "MALLOC_TRACE",   "NIS_PATH",
        "NLSPATH",     "RESOLV_HOST_CONF", "RES_OPTIONS",    "TZDIR",
        NULL};
    if (strncmp(name, "LD_", 3) == 0)
        return true;
    for (size_t i = 0; glibc[i]; i++)
        if (strcmp(name, glibc[i]) == 0)
            return true;
    return false;
}

bool profile_check_loader_env(const struct profile *p, struct err *e)
{
    for (size_t i = 0; i < p->nenv; i++) {
        const struct profile_env *v = &p->env[i];
        if (!loader_variable(v->name))
            continue;
        bool allowed = false;
        for (size_t k = 0; k < p->security.nloader_env && !allowed; k++)
            allowed = strcmp(p->security.loader_env[k], v->name) == 0;
        if (allowed)
            continue;
        char loc[256];
        profile_where(loc, sizeof(loc), v->at, "env", v->name, NULL);
        err_set(e,
                "%s: a loader variable, which makes every program of the service load what it "
                "names; set it only by naming it in [security] loader_env = %s",
                loc, v->name);
        return false;
    }
    return true;
}

bool profile_set_loader_env(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (*v && profile_empty_item(v, why))
        return false;
    for (size_t i = 0; i < p->security.nloader_env; i++)
        free(p->security.loader_env[i]);
    p->security.nloader_env = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(list, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        t = str_trim(t);
        if (*t == '\0')
            continue;
        if (!valid_env_name(t) || !loader_variable(t)) {
            *why = profile_why(
                "'%s' is not a loader variable (LD_*, GCONV_PATH, GLIBC_TUNABLES, ...)", t);
            ok = false;
            break;
        }
        p->security.loader_env =
            xrealloc(p->security.loader_env, (p->security.nloader_env + 1) * sizeof(char *));
        p->security.loader_env[p->security.nloader_env++] = xstrdup(t);
    }
    free(list);
    return ok;
}

/*
 * The fewest open files a profile may leave the service: below it, ld.so
 * fails to load the service's libraries (EMFILE), it has none left for its
 * logs and sockets, and tunerun's own steps after the limit (a cgroup file
 * written) fail. Linux starts processes at 1024.
 */
#define NOFILE_MIN 64
/*
 * Limits under which no service can even be executed: the kernel builds
 * the new stack, and ld.so maps the libraries (address space, private
 * data), after execve() has passed its point of no return, so a failure
 * there kills the service with SIGSEGV, and a CPU limit of 0 with SIGKILL,
 * with no message (/bin/true alone needs 2.4 MiB of address space, 120 KiB
 * of data and 16 KiB of stack). A value below one of these is a slip.
 */
static const struct {
    int resource;
    rlim_t min;
    const char *shown, *why;
} limit_floors[] = {
    {RLIMIT_AS, 16 << 20, "16 MiB",
     "ld.so maps the service's libraries after the exec can no longer fail, and SIGSEGV kills "
     "it there"},
    {RLIMIT_DATA, 1 << 20, "1 MiB",
     "ld.so maps the libraries' data after the exec can no longer fail, and SIGSEGV kills it "
     "there"},
    {RLIMIT_STACK, 128 << 10, "128 KiB",
     "the kernel builds the new stack after the exec can no longer fail, and SIGSEGV kills it "
     "there"},
    {RLIMIT_CPU, 1, "1 second", "the kernel kills it (SIGKILL) before it runs"},
};

/* The most fs.nr_open may be set to: the kernel's sysctl_nr_open_max. */
#define NR_OPEN_MAX                                                                                \
    (((size_t)INT_MAX < SIZE_MAX / sizeof(void *) ? (size_t)INT_MAX : SIZE_MAX / sizeof(void *)) & \
     ~(size_t)(sizeof(long) * 8 - 1))

bool profile_set_limit(struct profile *p, const char *name, const char *v, struct origin at,
                       const char **why)
{
    for (size_t i = 0; i < PROFILE_NLIMITS; i++) {
        if (strcmp(profile_rlimits[i].name, name) != 0)
            continue;
        rlim_t soft, hard;
        if (!parse_rlim_pair(v, &soft, &hard)) {
            *why = profile_why("%s", parse_error());
            return false;
        }
        /* soft <= hard: a hard limit below the floor has a soft one below it too */
        if (profile_rlimits[i].resource == RLIMIT_NOFILE &&
            (soft < NOFILE_MIN || hard < NOFILE_MIN)) {
            static char buf[320], what[96];
            if (soft == hard)
                snprintf(what, sizeof(what), "a limit of %llu open files is",
                         (unsigned long long)soft);
            else if (hard < NOFILE_MIN)
                snprintf(what, sizeof(what), "soft and hard limits of %llu and %llu open files are",
                         (unsigned long long)soft, (unsigned long long)hard);
            else
                snprintf(what, sizeof(what), "a soft limit of %llu open files is",
                         (unsigned long long)soft);
            snprintf(buf, sizeof(buf),
                     "%s below %d, the least a service can run with: its libraries, logs and "
                     "sockets, and tunerun's own steps after the limit, need descriptors",
                     what, NOFILE_MIN);
            *why = buf;
            return false;
        }
        for (size_t f = 0; f < sizeof(limit_floors) / sizeof(limit_floors[0]); f++) {
            if (limit_floors[f].resource != (int)profile_rlimits[i].resource ||
                soft >= limit_floors[f].min)
                continue; /* soft <= hard */
            static char buf[320];
            bool secs = profile_rlimits[i].resource == RLIMIT_CPU;
            snprintf(buf, sizeof(buf),
                     "a %slimit of %llu %s%s is below %s, the least a service can be executed "
                     "with: %s",
                     soft == hard ? "" : "soft ", (unsigned long long)soft,
                     secs ? "second" : "byte", soft == 1 ? "" : "s", limit_floors[f].shown,
                     limit_floors[f].why);
            *why = buf;
            return false;
        }
        if (profile_rlimits[i].resource == RLIMIT_NOFILE &&
            (soft == RLIM_INFINITY || hard == RLIM_INFINITY)) {
            *why = "'unlimited' is no limit Linux can set for open files: it caps them at "
                   "fs.nr_open (1048576 unless raised); give a number";
            return false;
        }
        if (profile_rlimits[i].resource == RLIMIT_NOFILE && hard > NR_OPEN_MAX) {
            static char buf[160];
            snprintf(buf, sizeof(buf),
                     "%llu open files is more than fs.nr_open may ever be raised to (%llu); give "
                     "a number at most that",
                     (unsigned long long)hard, (unsigned long long)NR_OPEN_MAX);
            *why = buf;
            return false;
        }
        struct profile_limit *l = &p->limits[profile_rlimits[i].resource];
        l->soft = soft;
        l->hard = hard;
        l->set = true;
        l->at = at;
        return true;
    }
    *why = "unknown limit (known: as, core, cpu, data, fsize, locks, memlock, msgqueue, nice, "
           "nofile, nproc, rss, rtprio, rttime, sigpending, stack)";
    return false;
}
