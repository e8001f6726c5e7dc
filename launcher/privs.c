/*
 * privs.c - become the user, groups and capabilities [security] names.
 *
 * libcap does the capability work (sets, bounding set, ambient set, names);
 * the identity calls are the plain syscalls, because each must be checked
 * on its own and in this order. Where util-linux setpriv ignores a failed
 * prctl, this returns it: a service that would run with more privilege
 * than its profile says does not run.
 */
#include "privs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

bool privs_wanted(const struct profile *p)
{
    return p->security.user || p->security.group || p->security.keep_caps_set ||
           p->security.no_new_privs;
}

static char *where(struct origin at, const char *key)
{
    if (at.line > 0)
        return xasprintf("%s:%d: security.%s", at.file, at.line, key);
    return xasprintf("--set security.%s", key);
}

static bool numeric_id(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno || v >= (unsigned long)UINT32_MAX)
        return false; /* (uid_t)-1 means "unchanged" to the set*id calls */
    *out = v;
    return true;
}

static bool resolve_user(struct privs *pv, const struct profile *p, const struct passwd **pw,
                         struct err *e)
{
    const char *u = p->security.user;
    unsigned long id;
    errno = 0;
    *pw = numeric_id(u, &id) ? getpwuid((uid_t)id) : getpwnam(u);
    if (*pw) {
        pv->uid = (*pw)->pw_uid;
        pv->gid = (*pw)->pw_gid;
        pv->user = xasprintf("%s (uid %lu)", (*pw)->pw_name, (unsigned long)pv->uid);
        return true;
    }
    char *at = where(p->security.user_at, "user");
    if (errno != 0 && errno != ENOENT && errno != ESRCH && errno != EBADF && errno != EPERM)
        err_set(e, "%s: cannot look up '%s': %s", at, u, strerror(errno));
    else if (!numeric_id(u, &id))
        err_set(e, "%s: no user '%s' on this system", at, u);
    else if (p->security.group == NULL)
        err_set(e,
                "%s: uid %s has no passwd entry, so it has no primary group: name one in "
                "[security] group",
                at, u);
    else {
        pv->uid = (uid_t)id;
        pv->user = xasprintf("uid %s", u);
        *pw = NULL;
        free(at);
        return true;
    }
    free(at);
    return false;
}

static bool resolve_group(struct privs *pv, const struct profile *p, struct err *e)
{
    const char *g = p->security.group;
    unsigned long id;
    errno = 0;
    const struct group *gr = numeric_id(g, &id) ? getgrgid((gid_t)id) : getgrnam(g);
    if (gr) {
        pv->gid = gr->gr_gid;
        pv->group = xasprintf("%s (gid %lu)", gr->gr_name, (unsigned long)pv->gid);
        return true;
    }
    if (numeric_id(g, &id)) {
        pv->gid = (gid_t)id; /* a gid no group file names is still a gid */
        pv->group = xasprintf("gid %s", g);
        return true;
    }
    char *at = where(p->security.group_at, "group");
    err_set(e, "%s: no group '%s' on this system", at, g);
    free(at);
    return false;
}

/* getgrouplist(3) is what initgroups(3) sets; asked here so `plan` can show it. */
static bool resolve_groups(struct privs *pv, const struct passwd *pw)
{
    if (pw == NULL) {
        pv->groups = xcalloc(1, sizeof(gid_t));
        pv->groups[0] = pv->gid;
        pv->ngroups = 1;
        return true;
    }
    int n = 16;
    for (;;) {
        gid_t *g = xcalloc((size_t)n, sizeof(gid_t));
        int want = n;
        if (getgrouplist(pw->pw_name, pv->gid, g, &want) >= 0) {
            pv->groups = g;
            pv->ngroups = (size_t)want;
            return true;
        }
        free(g);
        if (want <= n || want > 65536)
            return false;
        n = want;
    }
}

bool privs_resolve(struct privs *pv, const struct profile *p, struct err *e)
{
    memset(pv, 0, sizeof(*pv));
    pv->no_new_privs = p->security.no_new_privs;
    pv->caps = p->security.keep_caps_set || p->security.user != NULL;
    pv->keep = p->security.keep_caps_set ? p->security.keep_caps : 0;
    if (p->security.group && p->security.user == NULL) {
        char *at = where(p->security.group_at, "group");
        err_set(e, "%s: a group without a user; name the user in [security] user", at);
        free(at);
        return false;
    }
    for (int c = 0; c < 64; c++) {
        if (!(pv->keep & (UINT64_C(1) << c)) || c < (int)cap_max_bits())
            continue;
        char *at = where(p->security.keep_caps_at, "keep_caps");
        char *name = cap_to_name((cap_value_t)c);
        err_set(e, "%s: this kernel has no %s (it knows capabilities 0..%d)", at, name,
                (int)cap_max_bits() - 1);
        cap_free(name);
        free(at);
        return false;
    }
    if (p->security.user == NULL)
        return true;
    pv->change_id = true;
    const struct passwd *pw;
    if (!resolve_user(pv, p, &pw, e))
        return false;
    struct passwd copy;
    char *name = NULL;
    if (pw) { /* getgrnam() below may reuse getpwnam()'s buffer */
        copy = *pw;
        name = xstrdup(pw->pw_name);
        copy.pw_name = name;
        pw = &copy;
    }
    bool ok = true;
    const struct group *gr;
    if (p->security.group)
        ok = resolve_group(pv, p, e);
    else if ((gr = getgrgid(pv->gid)) != NULL)
        pv->group = xasprintf("%s (gid %lu)", gr->gr_name, (unsigned long)pv->gid);
    else
        pv->group = xasprintf("gid %lu", (unsigned long)pv->gid);
    if (ok && !resolve_groups(pv, pw)) {
        char *at = where(p->security.user_at, "user");
        err_set(e, "%s: cannot list the groups of '%s'", at, name);
        free(at);
        ok = false;
    }
    free(name);
    if (!ok)
        privs_free(pv);
    return ok;
}

void privs_free(struct privs *pv)
{
    free(pv->groups);
    free(pv->user);
    free(pv->group);
    memset(pv, 0, sizeof(*pv));
}

char *privs_cap_list(uint64_t mask)
{
    if (mask == 0)
        return xstrdup("none");
    char *out = xstrdup("");
    for (int c = 0; c < 64; c++) {
        if (!(mask & (UINT64_C(1) << c)))
            continue;
        char *name = cap_to_name((cap_value_t)c);
        char *next = xasprintf("%s%s%s", out, *out ? "," : "", name ? name : "?");
        cap_free(name);
        free(out);
        out = next;
    }
    return out;
}

char *privs_describe(const struct privs *pv)
{
    char *out = xstrdup("");
    if (pv->change_id) {
        char *groups = xstrdup("");
        for (size_t i = 0; i < pv->ngroups; i++) {
            char *next = xasprintf("%s%s%lu", groups, i ? "," : "", (unsigned long)pv->groups[i]);
            free(groups);
            groups = next;
        }
        free(out);
        out = xasprintf("user %s, group %s, groups %s", pv->user, pv->group, groups);
        free(groups);
    }
    if (pv->caps) {
        char *caps = privs_cap_list(pv->keep);
        char *next =
            xasprintf("%s%scapabilities %s (bounding set too)", out, *out ? ", " : "", caps);
        free(caps);
        free(out);
        out = next;
    }
    if (pv->no_new_privs) {
        char *next = xasprintf("%s%sno_new_privs", out, *out ? ", " : "");
        free(out);
        out = next;
    }
    return out;
}

/* ---- the drop ------------------------------------------------------------ */

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...)
{
    int error = errno ? errno : EPERM;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    size_t len = strlen(err);
    snprintf(err + len, n - len, ": %s", strerror(error));
    errno = error;
    return error;
}

/* Whether the current effective ids may execute command, found as execvp(3) would. */
static bool can_exec(const char *command)
{
    if (strchr(command, '/'))
        return faccessat(AT_FDCWD, command, X_OK, AT_EACCESS) == 0;
    const char *path = getenv("PATH");
    char *dirs = xstrdup(path && *path ? path : "/bin:/usr/bin"), *save = NULL;
    bool ok = false;
    int error = ENOENT;
    for (char *d = strtok_r(dirs, ":", &save); d && !ok; d = strtok_r(NULL, ":", &save)) {
        char *full = xasprintf("%s/%s", *d ? d : ".", command);
        ok = faccessat(AT_FDCWD, full, X_OK, AT_EACCESS) == 0;
        if (!ok && errno != ENOENT && errno != ENOTDIR)
            error = errno;
        free(full);
    }
    free(dirs);
    errno = ok ? 0 : error;
    return ok;
}

static bool groups_are(const gid_t *want, size_t n)
{
    gid_t have[NGROUPS_MAX];
    int got = getgroups(NGROUPS_MAX, have);
    if (got < 0 || (size_t)got != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < got && !found; k++)
            found = have[k] == want[i];
        if (!found)
            return false;
    }
    return true;
}

static int set_identity(const struct privs *pv, const char *command, bool *cannot_exec, char *err,
                        size_t n)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
        return fail(err, n, "getresuid");
    /* an id already held needs no privilege; one to change needs CAP_SETUID/CAP_SETGID */
    if (!groups_are(pv->groups, pv->ngroups) && setgroups(pv->ngroups, pv->groups) < 0)
        return fail(err, n, "setgroups (the groups of %s)", pv->user);
    if ((rgid != pv->gid || egid != pv->gid || sgid != pv->gid) &&
        setresgid(pv->gid, pv->gid, pv->gid) < 0)
        return fail(err, n, "setresgid %s", pv->group);
    /*
     * The command must be executable by the new user: checked with that
     * euid while the saved uid can still come back, because after the
     * setresuid below tunerun could no longer remove its claim or cgroup.
     */
    if (euid != pv->uid) {
        if (setresuid((uid_t)-1, pv->uid, (uid_t)-1) < 0)
            return fail(err, n, "seteuid %s", pv->user);
        bool ok = can_exec(command);
        int error = errno;
        if (setresuid((uid_t)-1, euid, (uid_t)-1) < 0)
            return fail(err, n, "seteuid back to %lu", (unsigned long)euid);
        if (!ok) {
            *cannot_exec = true;
            errno = error;
            return fail(err, n, "%s cannot execute '%s'", pv->user, command);
        }
    }
    /* the permitted set survives the uid change only when capabilities are kept */
    if (pv->keep && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        return fail(err, n, "prctl(PR_SET_KEEPCAPS)");
    if ((ruid != pv->uid || euid != pv->uid || suid != pv->uid) &&
        setresuid(pv->uid, pv->uid, pv->uid) < 0)
        return fail(err, n, "setresuid %s", pv->user);
    if (pv->keep && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        return fail(err, n, "prctl(PR_SET_KEEPCAPS, 0)");
    if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
        return fail(err, n, "getresuid");
    if (ruid != pv->uid || euid != pv->uid || suid != pv->uid || rgid != pv->gid ||
        egid != pv->gid || sgid != pv->gid || !groups_are(pv->groups, pv->ngroups)) {
        errno = EPERM;
        return fail(err, n, "the ids did not change to %s, %s", pv->user, pv->group);
    }
    return 0;
}

static int drop_bounding(const struct privs *pv, char *err, size_t n)
{
    /* the bounding set first, while CAP_SETPCAP is still effective */
    for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++) {
        if (pv->keep & (UINT64_C(1) << c))
            continue;
        int in = cap_get_bound(c);
        if (in < 0)
            return fail(err, n, "reading the bounding set");
        if (in && cap_drop_bound(c) < 0) {
            char *name = cap_to_name(c);
            int r =
                fail(err, n, "dropping %s from the bounding set (this needs CAP_SETPCAP)", name);
            cap_free(name);
            return r;
        }
    }
    return 0;
}

static int set_sets(const struct privs *pv, char *err, size_t n)
{
    cap_t caps = cap_init();
    if (caps == NULL)
        return fail(err, n, "cap_init");
    int r = 0;
    for (cap_value_t c = 0; c < 64 && r == 0; c++) {
        if (!(pv->keep & (UINT64_C(1) << c)))
            continue;
        cap_flag_t flags[] = {CAP_PERMITTED, CAP_EFFECTIVE, CAP_INHERITABLE};
        for (size_t f = 0; f < 3 && r == 0; f++)
            if (cap_set_flag(caps, flags[f], 1, &c, CAP_SET) < 0)
                r = fail(err, n, "cap_set_flag");
    }
    if (r == 0 && cap_set_proc(caps) < 0)
        r = fail(err, n, "setting the permitted, effective and inheritable sets");
    cap_free(caps);
    if (r != 0)
        return r;
    /* ambient: what an exec keeps for a program without file capabilities */
    if (cap_reset_ambient() < 0)
        return fail(err, n, "clearing the ambient set");
    for (cap_value_t c = 0; c < 64; c++) {
        if (!(pv->keep & (UINT64_C(1) << c)))
            continue;
        if (cap_set_ambient(c, CAP_SET) < 0) {
            char *name = cap_to_name(c);
            r = fail(err, n, "raising %s in the ambient set", name);
            cap_free(name);
            return r;
        }
    }
    return 0;
}

/* Read back what the kernel holds: each set, the bounding and ambient sets. */
static int verify_caps(const struct privs *pv, char *err, size_t n)
{
    cap_t caps = cap_get_proc();
    if (caps == NULL)
        return fail(err, n, "cap_get_proc");
    for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++) {
        bool want = pv->keep & (UINT64_C(1) << c);
        cap_flag_value_t prm, eff, inh;
        cap_get_flag(caps, c, CAP_PERMITTED, &prm);
        cap_get_flag(caps, c, CAP_EFFECTIVE, &eff);
        cap_get_flag(caps, c, CAP_INHERITABLE, &inh);
        if ((prm == CAP_SET) != want || (eff == CAP_SET) != want || (inh == CAP_SET) != want ||
            (cap_get_bound(c) == 1) != want || (cap_get_ambient(c) == 1) != want) {
            char *name = cap_to_name(c);
            errno = EPERM;
            int r = fail(err, n, "%s is %s after the drop", name, want ? "missing" : "still held");
            cap_free(name);
            cap_free(caps);
            return r;
        }
    }
    cap_free(caps);
    return 0;
}

int privs_drop(const struct privs *pv, const char *command, bool *cannot_exec, char *err, size_t n)
{
    int r = 0;
    *cannot_exec = false;
    errno = 0;
    if (pv->caps)
        r = drop_bounding(pv, err, n);
    if (r == 0 && pv->change_id)
        r = set_identity(pv, command, cannot_exec, err, n);
    if (r == 0 && pv->caps)
        r = set_sets(pv, err, n);
    if (r == 0 && pv->caps)
        r = verify_caps(pv, err, n);
    if (r == 0 && pv->no_new_privs) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            r = fail(err, n, "prctl(PR_SET_NO_NEW_PRIVS)");
        else if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
            errno = EPERM;
            r = fail(err, n, "no_new_privs did not stick");
        }
    }
    return r;
}
