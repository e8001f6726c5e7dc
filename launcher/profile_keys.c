/*
 * profile_keys.c - the keys a profile may set, each with its own strict
 * parser, and the entries read applied through them.
 *
 * The table below is the single list of what a profile may say: unknown
 * sections, unknown keys and bad values are errors that name file:line
 * (or the --set option). [env] and [limits] take names of the user's and
 * the kernel's, and have profile_env.c's parsers.
 */
#include "nic.h"
#include "profile_internal.h"
#include "parse.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>

/* ---- applying entries through the key table ----------------------------- */

const char *profile_why(const char *fmt, const char *arg)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), fmt, arg);
    return buf;
}

bool profile_set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
    return true;
}

static bool set_name(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (!profile_valid_name(v)) {
        *why = profile_why("'%s' is not a valid name (letters, digits, '-', '_', '.', '@')", v);
        return false;
    }
    return profile_set_str(&p->name, v);
}

static bool set_description(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at, (void)why;
    return profile_set_str(&p->description, v);
}

static bool set_fears(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at, (void)why;
    return profile_set_str(&p->fears, v);
}

static bool set_include(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)p, (void)v, (void)why;
    /* Resolved while reading; an include given with --set is too late. */
    if (at.line == 0) {
        *why = "include can only be given in a profile file";
        return false;
    }
    return true;
}

static bool set_nodes(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    p->placement.nodes_at = at;
    if (strcasecmp(v, "all") == 0) {
        p->placement.nodes = 0;
        return true;
    }
    if (!parse_long(v, 1, 4096, &n)) {
        *why = profile_why("%s; use a node count from 1 or 'all'", parse_error());
        return false;
    }
    p->placement.nodes = (unsigned)n;
    return true;
}

/*
 * Whether the first len characters of s are a decimal integer, so that a
 * value a number parser refuses is out of range rather than no number.
 */
static bool integer(const char *s, size_t len)
{
    size_t i = len > 0 && (*s == '-' || *s == '+');
    if (i == len)
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* After a failed parse: the parser's own reason for a number out of range, else `otherwise`. */
static const char *range_or(const char *otherwise, const char *v)
{
    if (parse_error_is_range())
        return profile_why("%s", parse_error());
    return profile_why(otherwise, v);
}

static bool set_cpus(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    p->placement.cpus_at = at;
    size_t len = strlen(v);
    if (strcasecmp(v, "node") == 0) {
        p->placement.cpus = CPUS_NODE;
        return true;
    }
    if (strcasecmp(v, "all") == 0) {
        p->placement.cpus = CPUS_ALL;
        return true;
    }
    if (len > 1 && v[len - 1] == '%' && integer(v, len - 1)) {
        char num[64];
        snprintf(num, sizeof(num), "%.*s", (int)(len - 1), v);
        if (len - 1 >= sizeof(num) || !parse_long(num, 1, 100, &n)) {
            *why = profile_why("'%.40s' is out of range 1%%..100%%", v);
            return false;
        }
        p->placement.cpus = CPUS_PERCENT;
        p->placement.cpus_value = (unsigned)n;
        return true;
    }
    if (parse_long(v, 1, 1 << 20, &n)) {
        p->placement.cpus = CPUS_COUNT;
        p->placement.cpus_value = (unsigned)n;
        return true;
    }
    if (integer(v, len)) {
        *why = profile_why("%s (a CPU count; or node, all, or a percentage)", parse_error());
        return false;
    }
    *why = profile_why("'%s' is not node, all, a CPU count or a percentage (1%%..100%%)", v);
    return false;
}

static bool set_bool(bool *dst, const char *v, const char **why)
{
    if (!parse_bool(v, dst)) {
        *why = profile_why("%s", parse_error());
        return false;
    }
    return true;
}

static bool set_smt(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->placement.smt, v, why);
}

static bool set_exclusive(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->placement.exclusive, v, why);
}

/*
 * Whether the placement is held with a cpuset cgroup (the default), or
 * only set on the process, which may then leave it.
 */
static bool set_enforce(struct profile *p, const char *v, struct origin at, const char **why)
{
    p->placement.enforce_at = at;
    return set_bool(&p->placement.enforce, v, why);
}

/*
 * Whether a comma-separated list has an empty item: "a,,b", "a," or ",a".
 * strtok_r() would pass over it; it is a slip, not a way to say none.
 */
bool profile_empty_item(const char *v, const char **why)
{
    for (const char *item = v;; item++) {
        const char *end = strchrnul(item, ',');
        const char *p = item;
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p == end) {
            *why = "an empty item in the list (',,', or a ',' at either end): a slip, not a way "
                   "to say none";
            return true;
        }
        if (*end == '\0')
            return false;
        item = end;
    }
}

static bool set_avoid(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (*v && profile_empty_item(v, why))
        return false;
    for (size_t i = 0; i < p->placement.navoid; i++)
        free(p->placement.avoid[i]);
    p->placement.navoid = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok = str_trim(tok);
        if (*tok == '\0')
            continue;
        if (!profile_valid_name(tok)) {
            *why = profile_why("'%s' is not a profile name", tok);
            ok = false;
            break;
        }
        p->placement.avoid =
            xrealloc(p->placement.avoid, (p->placement.navoid + 1) * sizeof(char *));
        p->placement.avoid[p->placement.navoid++] = xstrdup(tok);
    }
    free(list);
    return ok;
}

/*
 * A path on the disk the service does its IO on (its data directory, or a
 * block device): absolute, since it is looked up at each launch from
 * wherever tunerun runs; or the NIC it does its IO through (netdev:IF,
 * ip:ADDR, default-route; nic.h); empty undoes what an include set.
 */
static bool set_near(struct profile *p, const char *v, struct origin at, const char **why)
{
    const char *bad;
    if (nic_spec(v) && !nic_spec_valid(v, &bad)) {
        *why = bad;
        return false;
    }
    if (*v != '\0' && *v != '/' && !nic_spec(v)) {
        *why = profile_why("'%.60s' is neither an absolute path nor netdev:IF, ip:ADDR or "
                           "default-route",
                           v);
        return false;
    }
    free(p->placement.near);
    p->placement.near = *v ? xstrdup(v) : NULL;
    p->placement.near_at = at;
    return true;
}

static bool set_enum(int *dst, const char *v, const char *const *names, const char *list,
                     const char **why)
{
    for (int i = 0; names[i]; i++)
        if (strcasecmp(v, names[i]) == 0) {
            *dst = i;
            return true;
        }
    static char buf[256];
    snprintf(buf, sizeof(buf), "'%.60s' is not one of %s", v, list);
    *why = buf;
    return false;
}

static bool set_memory(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    static const char *const names[] = {
        "local", "bind", "preferred", "interleave", "auto", "weighted-interleave", NULL};
    int m;
    if (!set_enum(&m, v, names, "bind, preferred, interleave, weighted-interleave, local, auto",
                  why))
        return false;
    p->placement.memory = (enum mem_mode)m;
    return true;
}

static bool set_tiers(struct profile *p, const char *v, struct origin at, const char **why)
{
    static const char *const names[] = {"fastest", "all", "bandwidth", NULL};
    int m;
    if (!set_enum(&m, v, names, "fastest, all, bandwidth", why))
        return false;
    p->placement.tiers = (enum tier_mode)m;
    p->placement.tiers_at = at;
    return true;
}

/* [host] overcommit_memory: 0, 1 or 2, as vm.overcommit_memory takes it; empty: no wish. */
static bool set_overcommit(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (*v == '\0') {
        p->host.overcommit_memory = -1;
        return true;
    }
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0 && strcmp(v, "2") != 0) {
        *why = profile_why("'%.60s' is not one of 0 (heuristic), 1 (always) or 2 (strict), the "
                           "values of vm.overcommit_memory",
                           v);
        return false;
    }
    p->host.overcommit_memory = *v - '0';
    p->host.overcommit_at = at;
    return true;
}

static bool set_hugepages(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    static const char *const names[] = {"none", "postgresql", NULL};
    int m;
    if (!set_enum(&m, v, names, "none, postgresql", why))
        return false;
    p->host.hugepages = (enum hugepages_mode)m;
    return true;
}

static bool set_memory_size(struct profile *p, const char *v, struct origin at, const char **why)
{
    p->placement.memory_size_at = at;
    if (!parse_size(v, &p->placement.memory_size)) {
        *why = profile_why("%s", parse_error());
        return false;
    }
    return true;
}

static bool set_thp(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    static const char *const names[] = {"system", "madvise", "never", NULL};
    int m;
    if (!set_enum(&m, v, names, "madvise, never, system", why))
        return false;
    p->memory.thp = (enum thp_mode)m;
    return true;
}

static bool set_arena(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    long n;
    if (strcasecmp(v, "auto") == 0) {
        p->memory.arena = ARENA_AUTO;
        return true;
    }
    if (strcasecmp(v, "unset") == 0) {
        p->memory.arena = ARENA_UNSET;
        return true;
    }
    if (!parse_long(v, 1, 65536, &n)) {
        *why = range_or("'%s' is not auto, unset or an arena count from 1", v);
        return false;
    }
    p->memory.arena = ARENA_VALUE;
    p->memory.arena_value = (unsigned)n;
    return true;
}

static bool set_oom(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    if (!parse_long(v, -1000, 1000, &n)) {
        *why = profile_why("%s", parse_error());
        return false;
    }
    p->memory.oom_set = true;
    p->memory.oom_score_adj = (int)n;
    p->memory.oom_at = at;
    return true;
}

static bool set_swappiness(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    if (strcasecmp(v, "system") == 0) {
        p->memory.swappiness = -1;
        return true;
    }
    if (!parse_long(v, 0, 100, &n)) {
        *why = range_or("'%s' is not system or a swappiness from 0 to 100", v);
        return false;
    }
    p->memory.swappiness = (int)n;
    p->memory.swappiness_at = at;
    return true;
}

static bool set_swap_max(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (strcasecmp(v, "system") == 0) {
        p->memory.swap_max_set = false;
        return true;
    }
    if (strcasecmp(v, "max") == 0) {
        p->memory.swap_max = UINT64_MAX;
    } else if (!parse_size(v, &p->memory.swap_max)) {
        *why = range_or("'%s' is not system, max or a size like 0 or 512M", v);
        return false;
    }
    p->memory.swap_max_set = true;
    p->memory.swap_max_at = at;
    return true;
}

static bool set_java(enum java_mode *mode, unsigned *count, uint64_t *size, const char *v,
                     const char **why)
{
    if (strcasecmp(v, "auto") == 0) {
        *mode = JAVA_AUTO;
        return true;
    }
    if (strcasecmp(v, "off") == 0) {
        *mode = JAVA_OFF;
        return true;
    }
    if (count) {
        long n;
        if (!parse_long(v, 1, 1 << 20, &n)) {
            *why = range_or("'%s' is not auto, off or a CPU count", v);
            return false;
        }
        *count = (unsigned)n;
    } else if (size) {
        const char *want = "'%s' is not auto, off or a size of at least 1M, like 8G";
        uint64_t bytes;
        if (!parse_size(v, &bytes)) {
            *why = range_or(want, v);
            return false;
        }
        if (bytes < (1 << 20)) {
            *why = profile_why(want, v);
            return false;
        }
        *size = bytes;
    } else {
        bool b;
        if (!parse_bool(v, &b)) {
            *why = profile_why("'%s' is not auto, off, yes or no", v);
            return false;
        }
        *mode = b ? JAVA_VALUE : JAVA_OFF;
        return true;
    }
    *mode = JAVA_VALUE;
    return true;
}

static bool set_java_apc(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.active_processor_count, &p->java.active_processor_count_value, NULL, v,
                    why);
}

static bool set_java_numa(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.use_numa, NULL, NULL, v, why);
}

static bool set_java_max_ram(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.max_ram, NULL, &p->java.max_ram_value, v, why);
}

/*
 * A user or group as the profile names it: a name useradd would accept (or
 * sssd's user@domain), or a number. Empty undoes what an include set.
 */
static bool valid_account(const char *v)
{
    if (*v == '-' || strlen(v) > 64)
        return false;
    for (const char *c = v; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.' || *c == '@' ||
              (*c == '$' && c[1] == '\0')))
            return false;
    return true;
}

static bool set_account(char **dst, struct origin *dst_at, const char *what, const char *v,
                        struct origin at, const char **why)
{
    if (*v == '\0') {
        free(*dst);
        *dst = NULL;
        return true;
    }
    if (!valid_account(v)) {
        *why = profile_why(what, v);
        return false;
    }
    free(*dst);
    *dst = xstrdup(v);
    *dst_at = at;
    return true;
}

static bool set_user(struct profile *p, const char *v, struct origin at, const char **why)
{
    return set_account(&p->security.user, &p->security.user_at, "'%.60s' is not a user name or uid",
                       v, at, why);
}

static bool set_group(struct profile *p, const char *v, struct origin at, const char **why)
{
    return set_account(&p->security.group, &p->security.group_at,
                       "'%.60s' is not a group name or gid", v, at, why);
}

/*
 * Names as capabilities(7) gives them (libcap's cap_from_name), or `none`;
 * empty undoes what an include set.
 */
static bool set_keep_caps(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (*v == '\0') {
        p->security.keep_caps_set = false;
        p->security.keep_caps = 0;
        return true;
    }
    if (strcasecmp(v, "none") == 0) {
        p->security.keep_caps_set = true;
        p->security.keep_caps = 0;
        p->security.keep_caps_at = at;
        return true;
    }
    if (profile_empty_item(v, why))
        return false;
    uint64_t mask = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(list, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        cap_value_t cap;
        t = str_trim(t);
        if (*t == '\0')
            continue;
        /*
         * One name and nothing else: cap_from_name() would take a prefix of
         * "cap_a cap_b", a number, and "none" among names.
         */
        bool name =
            isalpha((unsigned char)*t) && strcasecmp(t, "none") != 0 &&
            t[strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")] == '\0';
        if (!name || cap_from_name(t, &cap) < 0 || cap < 0 || cap > 63) {
            *why = profile_why("'%.60s' is not a capability (see capabilities(7); for example "
                               "cap_net_bind_service)",
                               t);
            ok = false;
        } else {
            mask |= UINT64_C(1) << cap;
        }
    }
    free(list);
    if (ok) {
        p->security.keep_caps_set = true;
        p->security.keep_caps = mask;
        p->security.keep_caps_at = at;
    }
    return ok;
}

static bool set_no_new_privs(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->security.no_new_privs, v, why);
}

static const struct key_def {
    const char *section;
    const char *key;
    setter set;
} keys[] = {
    {"profile", "name", set_name},
    {"profile", "description", set_description},
    {"profile", "fears", set_fears},
    {"profile", "include", set_include},
    {"placement", "nodes", set_nodes},
    {"placement", "cpus", set_cpus},
    {"placement", "smt", set_smt},
    {"placement", "exclusive", set_exclusive},
    {"placement", "enforce", set_enforce},
    {"placement", "tiers", set_tiers},
    {"placement", "avoid", set_avoid},
    {"placement", "memory", set_memory},
    {"placement", "memory_size", set_memory_size},
    {"placement", "near", set_near},
    {"memory", "thp", set_thp},
    {"memory", "malloc_arena_max", set_arena},
    {"memory", "oom_score_adj", set_oom},
    {"memory", "swappiness", set_swappiness},
    {"memory", "swap_max", set_swap_max},
    {"host", "overcommit_memory", set_overcommit},
    {"host", "hugepages", set_hugepages},
    {"java", "active_processor_count", set_java_apc},
    {"java", "use_numa", set_java_numa},
    {"java", "max_ram", set_java_max_ram},
    {"security", "loader_env", profile_set_loader_env},
    {"security", "user", set_user},
    {"security", "group", set_group},
    {"security", "keep_caps", set_keep_caps},
    {"security", "no_new_privs", set_no_new_privs},
};

bool profile_key_name(size_t i, char *buf, size_t n)
{
    size_t nkeys = sizeof(keys) / sizeof(keys[0]);
    if (i < nkeys)
        snprintf(buf, n, "%s.%s", keys[i].section, keys[i].key);
    else if (i < nkeys + PROFILE_NLIMITS)
        snprintf(buf, n, "limits.%s", profile_rlimits[i - nkeys].name);
    else if (i == nkeys + PROFILE_NLIMITS)
        snprintf(buf, n, "env.NAME");
    else if (i == nkeys + PROFILE_NLIMITS + 1)
        snprintf(buf, n, "args.for");
    else if (i == nkeys + PROFILE_NLIMITS + 2)
        snprintf(buf, n, "args.OPTION");
    else
        return false;
    return true;
}

/*
 * Where en comes from, as its messages start ("FILE:LINE: section.key",
 * or "--set section.key=value"), room enough for an include chain that
 * err_set() then cuts in the middle. Made only for a message: on the
 * stack it would be pages a launch faults in for nothing.
 */
static char *where_of(const struct entry *en, struct err *e)
{
    size_t n = 16 * sizeof(e->msg);
    char *loc = xrealloc(NULL, n);
    profile_where(loc, n, en->at, en->section, en->key, en->value);
    return loc;
}

bool profile_apply_entry(struct profile *p, const struct entry *en, struct err *e)
{
    const char *why = NULL;
    char *loc = NULL;
    if (!profile_known_section(en->section, strlen(en->section))) {
        char s[ESCAPED_SIZE(64)];
        if (en->at.line > 0 && en->section[0] == '\0') {
            /* inih hands a key before the first [section] over with section "" */
            err_set(e,
                    "%s%s:%d: '%s' is a key outside any section; put it under its [section] "
                    "(known: " KNOWN_SECTIONS ")",
                    en->at.via ? en->at.via : "", en->at.file, en->at.line,
                    str_escaped(s, sizeof(s), en->key, 64));
        } else if (en->at.line > 0) {
            profile_unknown_section(e, en->at, en->section);
        } else {
            loc = where_of(en, e);
            err_set(e, "%s: unknown section '%s' (known: " KNOWN_SECTIONS ")", loc,
                    str_escaped(s, sizeof(s), en->section, 32));
        }
        free(loc);
        return false;
    }
    /* No value holds a control character, and --set none a line could not. */
    const char *cc = str_harmful(en->value);
    size_t line = strlen(en->key) + 1 + strlen(en->value);
    if (cc) {
        err_set(e, "%s: %s", loc = where_of(en, e), profile_control_why(cc));
        free(loc);
        return false;
    }
    if (en->at.line == 0 && line > LINE_MAX_CHARS) {
        err_set(e,
                "%s: too long: as a line of a profile, KEY=VALUE would be %zu characters, and a "
                "line holds at most %d",
                loc = where_of(en, e), line, LINE_MAX_CHARS);
        free(loc);
        return false;
    }
    bool ok;
    if (strcmp(en->section, "env") == 0) {
        ok = profile_set_env(p, en->key, en->value, en->at, &why);
    } else if (strcmp(en->section, "limits") == 0) {
        ok = profile_set_limit(p, en->key, en->value, en->at, &why);
    } else if (strcmp(en->section, "args") == 0) {
        ok = profile_set_arg(p, en->key, en->value, en->at, &why);
    } else {
        const struct key_def *k = NULL;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strcmp(keys[i].section, en->section) == 0 && strcmp(keys[i].key, en->key) == 0)
                k = &keys[i];
        if (k == NULL) {
            char known[256] = "";
            for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (strcmp(keys[i].section, en->section) == 0) {
                    if (known[0])
                        strncat(known, ", ", sizeof(known) - strlen(known) - 1);
                    strncat(known, keys[i].key, sizeof(known) - strlen(known) - 1);
                }
            err_set(e, "%s: unknown key (known in [%s]: %s)", loc = where_of(en, e), en->section,
                    known);
            free(loc);
            return false;
        }
        ok = k->set(p, en->value, en->at, &why);
    }
    if (!ok) {
        err_set(e, "%s: %s", loc = where_of(en, e), why ? why : "bad value");
        free(loc);
    }
    return ok;
}
