/*
 * privs.c - the user, groups and capabilities [security] names, resolved
 * on this machine before anything changes: a user or group that does not
 * exist, or a capability this kernel does not know, is bad input. The
 * drop itself is privs_drop.c's.
 */
#include "privs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

bool privs_wanted(const struct profile *p)
{
    return p->security.user || p->security.group || p->security.keep_caps_set ||
           p->security.no_new_privs;
}

static char *where(struct origin at, const char *key)
{
    char buf[4200];
    profile_where(buf, sizeof(buf), at, "security", key, NULL);
    return xstrdup(buf);
}

/* A number names an id (even where a name made of digits exists, as with chown(1)). */
static bool all_digits(const char *s)
{
    return *s && s[strspn(s, "0123456789")] == '\0';
}

static bool numeric_id(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!all_digits(s) || *end || errno || v >= (unsigned long)UINT32_MAX)
        return false; /* (uid_t)-1 means "unchanged" to the set*id calls */
    *out = v;
    return true;
}

/* errno after a get*nam/get*id that found nothing: not found, or a failure to say */
static bool lookup_failed(void)
{
    return errno != 0 && errno != ENOENT && errno != ESRCH && errno != EBADF && errno != EPERM;
}

static bool resolve_user(struct privs *pv, const struct profile *p, const struct passwd **pw,
                         struct err *e)
{
    const char *u = p->security.user;
    unsigned long id = 0;
    if (all_digits(u) && !numeric_id(u, &id)) {
        err_set(e, "%s: '%s' is not a uid (at most %lu)", pv->user_at, u,
                (unsigned long)UINT32_MAX - 1);
        return false;
    }
    errno = 0;
    *pw = all_digits(u) ? getpwuid((uid_t)id) : getpwnam(u);
    if (*pw) {
        pv->uid = (*pw)->pw_uid;
        pv->gid = (*pw)->pw_gid;
        pv->user_name = xstrdup((*pw)->pw_name);
        pv->user = xasprintf("%s (uid %lu)", (*pw)->pw_name, (unsigned long)pv->uid);
        return true;
    }
    if (lookup_failed()) {
        err_set(e, "%s: cannot look up '%s': %s", pv->user_at, u, strerror(errno));
    } else if (!all_digits(u)) {
        err_set(e, "%s: no user '%s' on this system", pv->user_at, u);
    } else if (p->security.group == NULL) {
        err_set(e,
                "%s: uid %s has no passwd entry, so it has no primary group: name one in "
                "[security] group",
                pv->user_at, u);
    } else {
        pv->uid = (uid_t)id;
        pv->user_name = xstrdup(u);
        pv->user = xasprintf("uid %s", u);
        return true;
    }
    return false;
}

static bool resolve_group(struct privs *pv, const struct profile *p, struct err *e)
{
    const char *g = p->security.group;
    unsigned long id = 0;
    char *at = where(p->security.group_at, "group");
    bool ok = false;
    if (all_digits(g) && !numeric_id(g, &id)) {
        err_set(e, "%s: '%s' is not a gid (at most %lu)", at, g, (unsigned long)UINT32_MAX - 1);
        free(at);
        return false;
    }
    errno = 0;
    const struct group *gr = all_digits(g) ? getgrgid((gid_t)id) : getgrnam(g);
    if (gr) {
        pv->gid = gr->gr_gid;
        pv->group_name = xstrdup(gr->gr_name);
        pv->group = xasprintf("%s (gid %lu)", gr->gr_name, (unsigned long)pv->gid);
        ok = true;
    } else if (lookup_failed()) {
        err_set(e, "%s: cannot look up '%s': %s", at, g, strerror(errno));
    } else if (all_digits(g)) {
        pv->gid = (gid_t)id; /* a gid no group file names is still a gid */
        pv->group_name = xstrdup(g);
        pv->group = xasprintf("gid %s", g);
        ok = true;
    } else {
        err_set(e, "%s: no group '%s' on this system", at, g);
    }
    free(at);
    return ok;
}

/* getgrouplist(3) is what initgroups(3) sets; asked here so `plan` can show it. */
static bool resolve_groups(struct privs *pv, const char *name)
{
    if (name == NULL) {
        pv->groups = xcalloc(1, sizeof(gid_t));
        pv->groups[0] = pv->gid;
        pv->ngroups = 1;
        return true;
    }
    int n = 16;
    for (;;) {
        gid_t *g = xcalloc((size_t)n, sizeof(gid_t));
        int want = n;
        if (getgrouplist(name, pv->gid, g, &want) >= 0) {
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
    pv->user_at = where(p->security.user_at, "user");
    pv->caps_at = p->security.keep_caps_set ? where(p->security.keep_caps_at, "keep_caps")
                                            : xstrdup(pv->user_at);
    bool ok = true;
    if (p->security.group && p->security.user == NULL) {
        char *at = where(p->security.group_at, "group");
        err_set(e, "%s: a group without a user; name the user in [security] user", at);
        free(at);
        ok = false;
    }
    for (int c = 0; ok && c < 64; c++) {
        if (!(pv->keep & (UINT64_C(1) << c)) || c < (int)cap_max_bits())
            continue;
        char *name = cap_to_name((cap_value_t)c);
        err_set(e, "%s: this kernel has no %s%s (it knows capabilities 0..%d)", pv->caps_at,
                all_digits(name) ? "capability " : "", name, (int)cap_max_bits() - 1);
        cap_free(name);
        ok = false;
    }
    if (!ok || p->security.user == NULL) {
        if (!ok)
            privs_free(pv);
        return ok;
    }
    pv->change_id = true;
    const struct passwd *pw;
    ok = resolve_user(pv, p, &pw, e);
    bool in_passwd = ok && pw != NULL; /* getgr*() below may reuse getpw*()'s buffer */
    const struct group *gr;
    if (ok && p->security.group) {
        ok = resolve_group(pv, p, e);
    } else if (ok && (gr = getgrgid(pv->gid)) != NULL) {
        pv->group_name = xstrdup(gr->gr_name);
        pv->group = xasprintf("%s (gid %lu)", gr->gr_name, (unsigned long)pv->gid);
    } else if (ok) {
        pv->group_name = xasprintf("%lu", (unsigned long)pv->gid);
        pv->group = xasprintf("gid %lu", (unsigned long)pv->gid);
    }
    if (ok && !resolve_groups(pv, in_passwd ? pv->user_name : NULL)) {
        err_set(e, "%s: cannot list the groups of '%s'", pv->user_at, pv->user_name);
        ok = false;
    }
    if (!ok)
        privs_free(pv);
    return ok;
}

void privs_free(struct privs *pv)
{
    free(pv->groups);
    free(pv->user_name);
    free(pv->group_name);
    free(pv->user);
    free(pv->group);
    free(pv->user_at);
    free(pv->caps_at);
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
