/*
 * privs_drop.c - become the user, groups and capabilities [security] names.
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

/* How long privs_try() waits for the child that tries the drop. */
#define PRIVS_TRY_MS 2000

/* How privs_drop() left the bounding set, for privs_describe() after it. */
static enum { NOT_DROPPED, BOUND_REDUCED, BOUND_MOOT } dropped;

/*
 * What the drop started from. Until the exec, the process keeps its
 * permitted set across the uid change (PR_SET_KEEPCAPS), with only the
 * kept capabilities effective: so a launch whose exec fails can be root
 * again (privs_regain()) and take back its claim, its cgroup and the CPUs
 * pools yielded to it. The exec then gives the service what the profile
 * keeps and nothing of this: the kernel clears the permitted set before it
 * computes the new one from the file's capabilities and the inheritable,
 * ambient and bounding sets (security/commoncap.c, get_file_caps()), and
 * sets the saved uid, which stays tunerun's until then, to the effective
 * one. In between, the process is the service's user but not dumpable
 * (its euid changed), holds capabilities that user lacks and keeps another
 * saved uid: the user can neither ptrace it, read its memory, nor change
 * its limits (which root's undoing would run under).
 */
static struct {
    bool saved;      /* privs_drop() began: there is something to come back from */
    bool reversible; /* the permitted set survived the uid change */
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    gid_t *groups;
    int ngroups;
} before;
static bool bound_moot(const struct privs *pv);

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
        /* a plan, before any drop, says what this process's drop would do */
        bool moot = dropped == BOUND_MOOT || (dropped == NOT_DROPPED && bound_moot(pv));
        char *next = xasprintf("%s%scapabilities %s (%s)", out, *out ? ", " : "", caps,
                               moot ? "it holds none: with no_new_privs no program can grant "
                                      "any, so the bounding set is left as it is"
                                    : "bounding set too");
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

static int fail(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct err *e, const char *fmt, ...)
{
    int error = errno ? errno : EPERM;
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    err_errno(e, error, "%s: %s", what, strerror(error));
    free(what);
    errno = error;
    return error;
}

/* Like fail(), for a precondition: no errno of a call, the reason is the message. */
static int refuse(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = xvasprintf(fmt, ap);
    va_end(ap);
    err_errno(e, EPERM, "%s", why);
    free(why);
    errno = EPERM;
    return EPERM;
}

static bool kept(const struct privs *pv, cap_value_t c)
{
    return c < 64 && (pv->keep & (UINT64_C(1) << c));
}

static bool have(cap_t caps, cap_value_t c, cap_flag_t set)
{
    cap_flag_value_t v = CAP_CLEAR;
    return cap_get_flag(caps, c, set, &v) == 0 && v == CAP_SET;
}

/* The same groups, in any order (the kernel sorts them). */
static bool groups_are(const gid_t *want, size_t n)
{
    int got = getgroups(0, NULL);
    if (got < 0)
        return false;
    gid_t *have_ = xcalloc((size_t)got + 1, sizeof(gid_t));
    got = getgroups(got, have_);
    bool same = got >= 0;
    for (size_t i = 0; same && i < n; i++) {
        bool found = false;
        for (int k = 0; k < got && !found; k++)
            found = have_[k] == want[i];
        same = found;
    }
    for (int k = 0; same && k < got; k++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++)
            found = want[i] == have_[k];
        same = found;
    }
    free(have_);
    return same;
}

/*
 * Whether reducing the bounding set is moot: it limits what an exec may
 * grant (a setuid or file-capability program), and a process that holds
 * no capability in any set and will have no_new_privs can be granted
 * none, whatever the set says. So it is for a service its runtime already
 * started as its user (docker run --user, a pod's runAsUser, a unit's
 * User=), where the reduction, which needs CAP_SETPCAP, cannot be made.
 */
static bool holds_none(void)
{
    cap_t caps = cap_get_proc();
    bool none = caps != NULL;
    for (cap_value_t c = 0; none && c < (cap_value_t)cap_max_bits(); c++)
        none = !have(caps, c, CAP_PERMITTED) && !have(caps, c, CAP_INHERITABLE) &&
               cap_get_ambient(c) != 1;
    cap_free(caps);
    return none;
}

/* What makes it moot besides no_new_privs: nothing kept, nothing held. */
static bool moot_with_nnp(const struct privs *pv)
{
    return pv->keep == 0 && holds_none();
}

static bool bound_moot(const struct privs *pv)
{
    return pv->no_new_privs && moot_with_nnp(pv);
}

/*
 * Everything the drop needs, checked before anything changes: a refusal
 * here leaves tunerun root, able to remove its claim and cgroup. *moot
 * says whether the bounding set is left as it is (bound_moot()).
 */
static int preflight(const struct privs *pv, bool *moot, struct err *e)
{
    *moot = pv->caps && bound_moot(pv);
    cap_t caps = cap_get_proc();
    if (caps == NULL)
        return fail(e, "cap_get_proc");
    int r = 0;
    bool drop_bound = false;
    for (cap_value_t c = 0; r == 0 && c < (cap_value_t)cap_max_bits(); c++) {
        bool held = have(caps, c, CAP_PERMITTED), bound = cap_get_bound(c) == 1;
        drop_bound |= pv->caps && !kept(pv, c) && bound && !*moot;
        if (!kept(pv, c) || (held && bound))
            continue;
        char *name = cap_to_name(c); /* only for the message */
        if (!held)
            r = refuse(e, "%s: tunerun does not hold %s itself, so the service cannot keep it",
                       pv->caps_at, name);
        else
            r = refuse(e,
                       "%s: %s is not in tunerun's bounding set, so the service cannot "
                       "keep it",
                       pv->caps_at, name);
        cap_free(name);
    }
    /* what the drop needs and tunerun lacks, named at once: one fix, not three runs */
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (r == 0 && getresuid(&ruid, &euid, &suid) < 0)
        r = fail(e, "getresuid");
    if (r == 0 && getresgid(&rgid, &egid, &sgid) < 0)
        r = fail(e, "getresgid");
    char lacks[256] = "";
    int nlacks = 0;
    const char *at = pv->caps_at;
    bool lacks_setpcap = r == 0 && drop_bound && !have(caps, CAP_SETPCAP, CAP_EFFECTIVE);
    if (lacks_setpcap) {
        snprintf(lacks, sizeof(lacks), "reducing the bounding set needs CAP_SETPCAP");
        nlacks++;
    }
    if (r == 0 && pv->change_id && (ruid != pv->uid || euid != pv->uid || suid != pv->uid) &&
        !have(caps, CAP_SETUID, CAP_EFFECTIVE)) {
        size_t k = strlen(lacks);
        snprintf(lacks + k, sizeof(lacks) - k, "%sbecoming %s needs CAP_SETUID", k ? ", " : "",
                 pv->user);
        nlacks++;
        at = pv->user_at;
    }
    if (r == 0 && pv->change_id &&
        (rgid != pv->gid || egid != pv->gid || sgid != pv->gid ||
         !groups_are(pv->groups, pv->ngroups)) &&
        !have(caps, CAP_SETGID, CAP_EFFECTIVE)) {
        size_t k = strlen(lacks);
        snprintf(lacks + k, sizeof(lacks) - k, "%staking the groups of %s needs CAP_SETGID",
                 k ? ", " : "", pv->user);
        nlacks++;
        at = pv->user_at;
    }
    /* CAP_SETPCAP is all it lacks, and no_new_privs would make the bounding set moot */
    bool nnp_would_do = lacks_setpcap && nlacks == 1 && !pv->no_new_privs && moot_with_nnp(pv);
    if (nlacks && euid != 0)
        /* docker run --user, a pod's runAsUser, a unit's User=: the runtime made the change */
        r = refuse(e,
                   "%s: %s, which tunerun lacks: it runs as uid %u, not as root (fix: start it "
                   "as root and let [security] drop to %s; where the container or unit already "
                   "runs it as that user, leave security.user and keep_caps unset%s)",
                   at, lacks, (unsigned)euid, pv->change_id ? pv->user : "the service's user",
                   nnp_would_do ? ", or add no_new_privs = yes, with which a process that holds "
                                  "no capability needs no smaller bounding set"
                                : "");
    else if (nlacks)
        r = refuse(e, "%s: %s, which tunerun lacks", at, lacks);
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (r == 0 && pv->keep && bits >= 0 && (bits & SECBIT_NO_CAP_AMBIENT_RAISE))
        r = refuse(e,
                   "%s: the securebit NO_CAP_AMBIENT_RAISE is set, so no capability can "
                   "reach the service across exec",
                   pv->caps_at);
    if (r == 0 && pv->keep && pv->change_id && pv->uid != 0 && bits >= 0 &&
        (bits & SECBIT_KEEP_CAPS_LOCKED) && !(bits & SECBIT_KEEP_CAPS))
        r = refuse(e,
                   "%s: the securebit KEEP_CAPS is locked off, so no capability survives "
                   "the change to %s",
                   pv->caps_at, pv->user);
    cap_free(caps);
    return r;
}

/*
 * The command must be executable by the service's user (`pv->change_id`:
 * after the groups and gid changed) with the kept capabilities alone:
 * checked with that euid and effective set while the saved uid can still
 * come back, so a command it cannot run fails while tunerun is still root.
 * The effective set is put back as it was after: going back to euid 0
 * restores it only where the kernel's setuid fixup is on, and not at all
 * when the euid never changed (user = root, or keep_caps alone).
 */
static int check_exec(const struct privs *pv, const char *command, const char *path,
                      int *exec_error, struct err *e)
{
    uid_t ruid, euid, suid;
    if (getresuid(&ruid, &euid, &suid) < 0)
        return fail(e, "getresuid");
    uid_t uid = pv->change_id ? pv->uid : euid;
    cap_t saved = cap_get_proc();
    if (saved == NULL)
        return fail(e, "cap_get_proc");
    if (euid != uid && setresuid((uid_t)-1, uid, (uid_t)-1) < 0) {
        cap_free(saved);
        return fail(e, "seteuid %s", pv->user);
    }
    /* the service will have `keep`, effective */
    cap_t caps = cap_get_proc();
    int r = 0;
    if (caps == NULL || cap_clear_flag(caps, CAP_EFFECTIVE) < 0)
        r = fail(e, "cap_get_proc");
    for (cap_value_t c = 0; r == 0 && c < 64; c++)
        if (kept(pv, c) && have(caps, c, CAP_PERMITTED) &&
            cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0)
            r = fail(e, "cap_set_flag");
    if (r == 0 && cap_set_proc(caps) < 0)
        r = fail(e, "setting the effective set to the kept capabilities");
    cap_free(caps);
    int error = r == 0 ? command_error(command, path, NULL) : 0; /* the PATH the exec will search */
    if (euid != uid && setresuid((uid_t)-1, euid, (uid_t)-1) < 0) {
        cap_free(saved);
        return fail(e, "seteuid back to %lu", (unsigned long)euid);
    }
    int restored = cap_set_proc(saved);
    cap_free(saved);
    if (restored < 0)
        return fail(e, "restoring the effective set after checking the command");
    if (r == 0 && error != 0) {
        *exec_error = error;
        errno = error;
        char shown[ESCAPED_SIZE(160)];
        char *caps_kept = pv->change_id ? NULL : privs_cap_list(pv->keep);
        r = fail(e, "%s%s cannot execute '%s'", pv->change_id ? pv->user : "root keeping ",
                 pv->change_id ? "" : caps_kept, str_escaped(shown, sizeof(shown), command, 160));
        free(caps_kept);
    }
    return r;
}

/*
 * A service that becomes another user must not type into root's terminal:
 * with TIOCSTI a process can push input into its controlling terminal,
 * which a shell then runs as root once the service has ended or gone to
 * the background; TIOCLINUX's paste does the same on a virtual console
 * (before 6.7 whatever dev.tty.legacy_tiocsti says). Both are refused to
 * the service and its children by a seccomp filter, whenever it has a
 * controlling terminal; nothing else uses them. What it cannot stop: a
 * process of root's session may join the terminal's foreground process
 * group (setpgid) and read what is typed there, as any job root starts
 * can. Only a terminal of its own, relayed by a process that stays (su
 * --pty), would, and tunerun execs in place; so services belong in a
 * service manager or a container, and the man page says so. Giving the
 * terminal up (TIOCNOTTY) is worse: it ends job control, so a service in
 * the background is no longer stopped when it reads.
 *
 * Written by hand: libseccomp is not among the libraries tunerun links,
 * and the filter is sixteen instructions. The command is compared on its
 * low 32 bits, as the kernel reads ioctl's, so that no high bit slips
 * past (CVE-2019-10063). On x86-64, the x32 and i386 entries are filtered
 * too. Installing it needs CAP_SYS_ADMIN (root still has it here) or
 * no_new_privs, set early for that only when the profile asks for it.
 */
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_IOCTL   (__X32_SYSCALL_BIT | 514)
/* before Linux 5.4 x32's table shared the native one: x32's 16 was the 64-bit ioctl */
#define X32_NATIVE_IOCTL (__X32_SYSCALL_BIT | __NR_ioctl)
#define COMPAT_ARCH      AUDIT_ARCH_I386
#define COMPAT_IOCTL     54
#elif defined(__aarch64__)
#define NATIVE_ARCH      AUDIT_ARCH_AARCH64
#define X32_IOCTL        __NR_ioctl /* no x32: the same test again */
#define X32_NATIVE_IOCTL __NR_ioctl
#define COMPAT_ARCH      AUDIT_ARCH_ARM
#define COMPAT_IOCTL     54
#endif

#ifdef NATIVE_ARCH
/*
 * seccomp(2) with SPEC_ALLOW: on kernels before 5.16 a filter otherwise
 * turns on speculative store bypass and indirect branch mitigations for
 * the task (spec_store_bypass_disable=seccomp), a slowdown no profile
 * asked for. prctl() where the flag is unknown (EINVAL).
 */
static int install_filter(struct sock_fprog *prog)
{
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, prog) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EPERM) /* EPERM: an outer filter */
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0);
}
#endif

/* Whether this process has a controlling terminal: tty_nr, the 7th field of its stat. */
static bool has_terminal(void)
{
    char line[1024];
    const char *p =
        read_line_file("/proc/self/stat", line, sizeof(line)) ? strrchr(line, ')') : NULL;
    int tty_nr = 0;
    if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %d", &tty_nr) != 1) {
        /* no /proc: /dev/tty says, where ENXIO only means there is none */
        int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0)
            close(fd);
        return fd >= 0 || errno != ENXIO;
    }
    return tty_nr != 0;
}

static int keep_off_terminal(const struct privs *pv, struct err *e)
{
    /* tty_nr in /proc/self/stat, which needs no /dev/tty node: 0 is none */
    if (!has_terminal())
        return 0; /* no controlling terminal (a unit, a container): nothing to type into */
#ifdef NATIVE_ARCH
    /* little-endian: the low word of args[1] comes first */
    unsigned cmd = offsetof(struct seccomp_data, args[1]);
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 7, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, X32_IOCTL, 6, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, X32_NATIVE_IOCTL, 5, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_ARCH, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_IOCTL, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, cmd),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
    if (install_filter(&prog) == 0)
        return 0;
    if (errno == EACCES && pv->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
        install_filter(&prog) == 0)
        return 0;
    return fail(e, "refusing TIOCSTI to it (a seccomp filter) so that it cannot type into root's "
                   "terminal (fix: start it from a service manager, or no_new_privs = yes in "
                   "[security])");
#else
    return refuse(e, "it would keep root's terminal, and TIOCSTI cannot be refused to it on this "
                     "architecture; start it from a service manager");
#endif
}

static int set_identity(const struct privs *pv, const char *command, const char *path,
                        int *exec_error, struct err *e)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
        return fail(e, "getresuid");
    /* an id already held needs no privilege (preflight() checked the others) */
    if (!groups_are(pv->groups, pv->ngroups) && setgroups(pv->ngroups, pv->groups) < 0)
        return fail(e, "setgroups (the groups of %s)", pv->user);
    if ((rgid != pv->gid || egid != pv->gid || sgid != pv->gid) &&
        setresgid(pv->gid, pv->gid, pv->gid) < 0)
        return fail(e, "setresgid %s", pv->group);
    int r = check_exec(pv, command, path, exec_error, e);
    if (r != 0)
        return r;
    /*
     * The permitted set survives the uid change (see `before`); where the
     * securebit KEEP_CAPS is locked off it cannot, and only what is kept
     * needs it.
     */
    bool keepcaps = prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0;
    if (!keepcaps && pv->keep)
        return fail(e, "prctl(PR_SET_KEEPCAPS)");
    /*
     * The saved uid stays tunerun's until the exec sets it to the effective
     * one: the service's user may prlimit() a process only when all three
     * of its uids are theirs, and must not set the limits under which root
     * would undo the launch (privs_regain()).
     */
    uid_t saved = euid;
    if (ruid != pv->uid || euid != pv->uid || suid != saved) {
        if (pv->uid != 0 && (r = keep_off_terminal(pv, e)) != 0)
            return r;
        if (setresuid(pv->uid, pv->uid, saved) < 0)
            return fail(e, "setresuid %s", pv->user);
        /* a uid 0 among the three keeps the permitted set, KEEP_CAPS or not */
        before.reversible = keepcaps || pv->uid == 0 || saved == 0;
        /*
         * The session keyring is the caller's (a root login's, its NFS or
         * cifs passwords): a new, empty one of the service's own, as
         * pam_keyinit and systemd give. Where keyctl is filtered (docker's
         * seccomp profile) the service cannot reach the old one either.
         */
        if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS &&
            errno != EPERM)
            return fail(e, "keyctl(KEYCTL_JOIN_SESSION_KEYRING)");
    }
    if (keepcaps && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        return fail(e, "prctl(PR_SET_KEEPCAPS, 0)");
    if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
        return fail(e, "getresuid");
    if (ruid != pv->uid || euid != pv->uid || suid != saved || rgid != pv->gid || egid != pv->gid ||
        sgid != pv->gid || !groups_are(pv->groups, pv->ngroups))
        return refuse(e, "the ids did not change to %s, %s", pv->user, pv->group);
    return 0;
}

/* The bounding set first, while CAP_SETPCAP is still effective. */
static int drop_bounding(const struct privs *pv, struct err *e)
{
    for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++) {
        if (kept(pv, c))
            continue;
        int in = cap_get_bound(c);
        if (in < 0)
            return fail(e, "reading the bounding set");
        if (in && cap_drop_bound(c) < 0) {
            char *name = cap_to_name(c);
            int r = fail(e, "dropping %s from the bounding set", name);
            cap_free(name);
            return r;
        }
    }
    return 0;
}

/*
 * Effective and inheritable: the kept capabilities. Permitted: those, and
 * what else it holds until the exec clears it (`before`).
 */
static int set_sets(const struct privs *pv, struct err *e)
{
    cap_t caps = cap_get_proc();
    if (caps == NULL)
        return fail(e, "cap_get_proc");
    int r = 0;
    if (cap_clear_flag(caps, CAP_EFFECTIVE) < 0 || cap_clear_flag(caps, CAP_INHERITABLE) < 0)
        r = fail(e, "cap_clear_flag");
    for (cap_value_t c = 0; c < 64 && r == 0; c++) {
        if (!kept(pv, c))
            continue;
        cap_flag_t flags[] = {CAP_PERMITTED, CAP_EFFECTIVE, CAP_INHERITABLE};
        for (size_t f = 0; f < 3 && r == 0; f++)
            if (cap_set_flag(caps, flags[f], 1, &c, CAP_SET) < 0)
                r = fail(e, "cap_set_flag");
    }
    if (r == 0 && cap_set_proc(caps) < 0)
        r = fail(e, "setting the permitted, effective and inheritable sets");
    cap_free(caps);
    if (r != 0)
        return r;
    /* ambient: what an exec keeps for a program without file capabilities */
    if (cap_reset_ambient() < 0)
        return fail(e, "clearing the ambient set");
    for (cap_value_t c = 0; c < 64; c++) {
        if (kept(pv, c) && cap_set_ambient(c, CAP_SET) < 0) {
            char *name = cap_to_name(c);
            r = fail(e, "raising %s in the ambient set", name);
            cap_free(name);
            return r;
        }
    }
    return 0;
}

/* Read back what the kernel holds: each set, the bounding (unless moot) and ambient sets. */
static int verify_caps(const struct privs *pv, bool moot, struct err *e)
{
    cap_t caps = cap_get_proc();
    if (caps == NULL)
        return fail(e, "cap_get_proc");
    int r = 0;
    for (cap_value_t c = 0; r == 0 && c < (cap_value_t)cap_max_bits(); c++) {
        bool want = kept(pv, c);
        /* a permitted capability not kept is cleared by the exec (`before`) */
        if ((want && !have(caps, c, CAP_PERMITTED)) || have(caps, c, CAP_EFFECTIVE) != want ||
            have(caps, c, CAP_INHERITABLE) != want || (!moot && (cap_get_bound(c) == 1) != want) ||
            (cap_get_ambient(c) == 1) != want) {
            char *name = cap_to_name(c);
            r = refuse(e, "%s is %s after the drop", name, want ? "missing" : "still held");
            cap_free(name);
        }
    }
    cap_free(caps);
    return r;
}

int privs_check(const struct privs *pv, struct err *e)
{
    bool moot;
    return preflight(pv, &moot, e);
}

int privs_drop(const struct privs *pv, const char *command, const char *path, int *exec_error,
               struct err *e)
{
    *exec_error = 0;
    errno = 0;
    bool moot;
    int r = preflight(pv, &moot, e);
    /* a user change checks the command at that user (set_identity()), root keeping caps here */
    if (r == 0 && pv->caps && !pv->change_id)
        r = check_exec(pv, command, path, exec_error, e);
    if (r == 0 && !before.saved) {
        int ngroups = getgroups(0, NULL);
        before.groups = xcalloc(ngroups > 0 ? (size_t)ngroups : 1, sizeof(gid_t));
        if (ngroups < 0 || (before.ngroups = getgroups(ngroups, before.groups)) < 0 ||
            getresuid(&before.ruid, &before.euid, &before.suid) < 0 ||
            getresgid(&before.rgid, &before.egid, &before.sgid) < 0) {
            r = fail(e, "reading this process's ids");
            free(before.groups);
            before.groups = NULL;
        } else {
            before.saved = true;
            before.reversible = true;
        }
    }
    if (r == 0 && pv->caps && !moot)
        r = drop_bounding(pv, e);
    if (r == 0 && pv->change_id)
        r = set_identity(pv, command, path, exec_error, e);
    if (r == 0 && pv->caps)
        r = set_sets(pv, e);
    if (r == 0 && pv->caps)
        r = verify_caps(pv, moot, e);
    if (r == 0 && pv->no_new_privs) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            r = fail(e, "prctl(PR_SET_NO_NEW_PRIVS)");
        else if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
            r = refuse(e, "no_new_privs did not stick");
    }
    if (r == 0)
        dropped = moot ? BOUND_MOOT : BOUND_REDUCED;
    return r;
}

int privs_try(const struct privs *pv, const char *command, const char *path, int *exec_error,
              struct err *e)
{
    struct {
        int r, exec_error;
        struct err e;
    } said = {0};
    int fds[2];
    *exec_error = 0;
    /* no child to ask (a full pids.max, LimitNPROC=): the drop before the exec tells */
    if (pipe2(fds, O_CLOEXEC) < 0)
        return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) { /* nothing of the parent's: no stdio, no atexit, no messages */
        close(fds[0]);
        said.r = privs_drop(pv, command, path, &said.exec_error, &said.e);
        _exit(write(fds[1], &said, sizeof(said)) == (ssize_t)sizeof(said) ? 0 : 1);
    }
    close(fds[1]);
    /*
     * The child runs as the service's user once it has dropped, and that
     * user may stop it; a launch that holds the registry's lock must not
     * wait for that. A drop takes microseconds.
     */
    struct pollfd ready = {fds[0], POLLIN, 0};
    int polled;
    do
        polled = poll(&ready, 1, PRIVS_TRY_MS);
    while (polled < 0 && errno == EINTR);
    ssize_t got = -1;
    if (polled > 0)
        do
            got = read(fds[0], &said, sizeof(said));
        while (got < 0 && errno == EINTR);
    close(fds[0]);
    if (got != (ssize_t)sizeof(said))
        kill(pid, SIGKILL); /* stopped or gone: no answer, and the drop before the exec tells */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (got != (ssize_t)sizeof(said))
        return 0;
    *exec_error = said.exec_error;
    said.e.msg[sizeof(said.e.msg) - 1] = '\0';
    *e = said.e;
    return said.r;
}

int privs_regain(struct err *e)
{
    if (!before.saved)
        return 0; /* nothing was dropped */
    if (!before.reversible)
        return refuse(e, "the permitted set did not survive the change of user (the securebit "
                         "KEEP_CAPS is locked off)");
    cap_t caps = cap_get_proc();
    if (caps == NULL)
        return fail(e, "cap_get_proc");
    int r = 0;
    /* every capability it still holds, effective: what the ids and the undoing need */
    for (cap_value_t c = 0; r == 0 && c < (cap_value_t)cap_max_bits(); c++)
        if (have(caps, c, CAP_PERMITTED) && cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0)
            r = fail(e, "cap_set_flag");
    if (r == 0 && cap_set_proc(caps) < 0)
        r = fail(e, "raising the effective set again");
    cap_free(caps);
    /* only what changed: setgroups() wants CAP_SETGID for the same list too (a non-root run) */
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (r == 0 && (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0))
        r = fail(e, "getresuid");
    if (r == 0 && !groups_are(before.groups, (size_t)before.ngroups) &&
        setgroups((size_t)before.ngroups, before.groups) < 0)
        r = fail(e, "setgroups back");
    if (r == 0 && (rgid != before.rgid || egid != before.egid || sgid != before.sgid) &&
        setresgid(before.rgid, before.egid, before.sgid) < 0)
        r = fail(e, "setresgid back to %lu", (unsigned long)before.egid);
    if (r == 0 && (ruid != before.ruid || euid != before.euid || suid != before.suid) &&
        setresuid(before.ruid, before.euid, before.suid) < 0)
        r = fail(e, "setresuid back to %lu", (unsigned long)before.euid);
    if (r == 0) {
        free(before.groups);
        memset(&before, 0, sizeof(before));
        dropped = NOT_DROPPED;
    }
    return r;
}
