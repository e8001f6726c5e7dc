/*
 * systemd.c - `tunerun systemd PROFILE`: the drop-in that puts a unit's
 * service under tunerun, with what belongs in the unit rather than in
 * tunerun.
 *
 * A unit's limits, OOM score and swap are systemd's to set: it sets them
 * before tunerun runs, with privileges tunerun may lack (raising a hard
 * rlimit needs CAP_SYS_RESOURCE), and it owns the unit's cgroup, which
 * tunerun never writes without Delegate=yes.
 */
#include "systemd.h"
#include "apply.h"
#include "cgroup.h"
#include "log.h"
#include "report.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MEMORY_THP_SINCE 260 /* systemd release that added MemoryTHP= */

/*
 * The installed systemd's release ("systemd 252 (252.30-1~deb12u2)"), or 0.
 * systemctl by absolute path, without a shell: this may run as root.
 */
int systemd_version(void)
{
    static const char *const paths[] = {"/usr/bin/systemctl", "/bin/systemctl"};
    const char *path = NULL;
    for (size_t i = 0; i < 2 && path == NULL; i++)
        if (access(paths[i], X_OK) == 0)
            path = paths[i];
    int fds[2];
    if (path == NULL || pipe2(fds, O_CLOEXEC) < 0)
        return 0;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)path, "--version", NULL}, *envp[] = {"LC_ALL=C", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, path, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    char line[256] = "";
    int v = 0;
    FILE *f = rc == 0 ? fdopen(fds[0], "r") : NULL;
    if (f && fgets(line, sizeof(line), f) && sscanf(line, "systemd %d", &v) != 1)
        v = 0;
    if (f)
        fclose(f);
    else
        close(fds[0]);
    if (rc == 0)
        waitpid(pid, NULL, 0);
    return v;
}

/*
 * How many bytes at c go out as they are: a UTF-8 character's; 0 for a
 * byte escaped. systemd's UTF-8 check refuses the noncharacters too
 * (U+FDD0..U+FDEF, and U+xxFFFE and U+xxFFFF in every plane).
 */
static size_t plain_len(const char *c)
{
    const unsigned char *u = (const unsigned char *)c;
    if (u[0] < 0x20 || u[0] == 0x7f)
        return 0;
    size_t n = u[0] < 0x80 ? 1 : utf8_valid(u);
    if (n < 3)
        return n;
    unsigned long cp =
        n == 3 ? (u[0] & 0x0fUL) << 12 : (u[0] & 0x07UL) << 18 | (u[1] & 0x3fUL) << 12;
    cp |= (u[n - 2] & 0x3fUL) << 6 | (u[n - 1] & 0x3fUL);
    bool nonchar = (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe;
    return nonchar ? 0 : n;
}

/*
 * One word of a unit setting: quoted when it must be, with C escapes
 * inside the quotes, % doubled, and $ too where the setting expands it
 * (systemd.service(5)). A byte of no UTF-8 character (a Latin-1 file
 * name) is escaped too: systemd drops a setting that is not UTF-8 clean,
 * and a drop-in's ExecStart= has already reset the command.
 */
static void put_quoted(FILE *f, const char *w, bool dollars)
{
    bool quote = *w == '\0' || strpbrk(w, " \"'\\;") != NULL;
    for (const char *c = w; *c;) {
        size_t n = plain_len(c);
        quote |= n == 0;
        c += n ? n : 1;
    }
    if (quote)
        fputc('"', f);
    for (; *w; w++) {
        if (*w == '%' || (dollars && *w == '$'))
            fputc(*w, f); /* %% and $$ */
        if (*w == '\n' || *w == '\r' || *w == '\t') {
            fprintf(f, "\\%c", *w == '\n' ? 'n' : *w == '\r' ? 'r' : 't');
            continue;
        }
        size_t n = plain_len(w);
        if (n == 0) { /* systemd reads C escapes */
            fprintf(f, "\\x%02x", (unsigned char)*w);
            continue;
        }
        if (n > 1) { /* a character of more bytes, whole */
            fwrite(w, 1, n, f);
            w += n - 1;
            continue;
        }
        if (quote && (*w == '"' || *w == '\\'))
            fputc('\\', f);
        fputc(*w, f);
    }
    if (quote)
        fputc('"', f);
}

/* One ExecStart= word, which expands $. */
static void put_word(FILE *f, const char *w)
{
    put_quoted(f, w, true);
}

/* A path of ReadWritePaths= or ExecPaths=, which do not. */
static void put_path(FILE *f, const char *w)
{
    put_quoted(f, w, false);
}

static void put_limit(FILE *f, rlim_t v)
{
    if (v == RLIM_INFINITY)
        fputs("infinity", f);
    else
        fprintf(f, "%llu", (unsigned long long)v);
}

/* The drop-in's head: what it is, where it goes, and ExecStart= under tunerun. */
static void put_exec_start(FILE *f, const struct profile *p, const struct dropin_args *a)
{
    fprintf(f,
            "# A drop-in that starts this unit's service under tunerun's %s profile.\n"
            "# Save it as /etc/systemd/system/UNIT.service.d/tunerun.conf, then run\n"
            "# systemctl daemon-reload && systemctl restart UNIT.\n"
            "[Service]\n"
            "ExecStart=\n"
            "ExecStart=",
            p->name);
    put_word(f, a->tunerun);
    if (a->strict)
        fputs(" --strict", f);
    if (a->verbosity)
        fprintf(f, " %s", a->verbosity);
    if (a->state_dir) {
        fputs(" --state-dir ", f);
        put_word(f, a->state_dir);
    }
    if (a->profile_file) {
        fputs(" --profile-file ", f);
        put_word(f, a->profile_file);
    }
    for (size_t i = 0; i < a->nsets; i++) {
        fputs(" --set ", f);
        put_word(f, a->sets[i]);
    }
    if (!a->profile_file) {
        fputs(a->run ? " run " : " ", f);
        put_word(f, p->name);
    }
    fputs(" --", f);
    if (a->command && a->command[0])
        for (char *const *w = a->command; *w; w++) {
            fputc(' ', f);
            put_word(f, *w);
        }
    else
        fputs(" /path/to/the/service --its --options", f);
    fputc('\n', f);
}

/* What systemd sets before tunerun runs: limits, the OOM score, swap. */
static void put_unit_settings(FILE *f, const struct profile *p, bool cgroup_v2)
{
    bool said = false;
    for (int r = 0; r < PROFILE_NLIMITS; r++) {
        const struct profile_limit *l = &p->limits[r];
        if (!l->set)
            continue;
        if (!said)
            fprintf(f, "# limits set by systemd, which may raise a hard limit (tunerun needs\n"
                       "# CAP_SYS_RESOURCE for that)\n");
        said = true;
        char name[32];
        const char *n = rlimit_name(r);
        size_t i = 0;
        for (; n[i] && i < sizeof(name) - 1; i++)
            name[i] = (char)toupper((unsigned char)n[i]);
        name[i] = '\0';
        fprintf(f, "Limit%s=", name);
        put_limit(f, l->soft);
        if (l->hard != l->soft) {
            fputc(':', f);
            put_limit(f, l->hard);
        }
        fputc('\n', f);
    }
    if (p->memory.oom_set)
        fprintf(f, "OOMScoreAdjust=%d\n", p->memory.oom_score_adj);
    if (p->memory.swap_max_set) {
        fprintf(f, "# cgroup v2's memory.swap.max, on the unit's own cgroup%s\n%sMemorySwapMax=",
                cgroup_v2 ? "" : " (this host runs cgroup v1, where systemd ignores it)",
                cgroup_v2 ? "" : "#");
        if (p->memory.swap_max == UINT64_MAX)
            fputs("infinity\n", f);
        else
            fprintf(f, "%llu\n", (unsigned long long)p->memory.swap_max);
    }
    if (p->memory.swappiness >= 0 && !cgroup_v2)
        fprintf(f,
                "# swappiness %d: systemd has no per-unit swappiness. tunerun sets cgroup v1's\n"
                "# memory.swappiness in a cgroup of its own under the unit's, which it may\n"
                "# create only when the unit delegates its cgroup.\n"
                "Delegate=yes\n",
                p->memory.swappiness);
    else if (p->memory.swappiness >= 0)
        fprintf(f,
                "# swappiness %d: cgroup v2 (this host) has no per-cgroup swappiness; it is the\n"
                "# host's to set: sysctl -w vm.swappiness=%d%s\n",
                p->memory.swappiness, p->memory.swappiness,
                p->memory.swap_max_set ? ", or leave it to MemorySwapMax= above" : "");
}

/*
 * enforce: the placement held by a cpuset. On cgroup v2 tunerun makes it
 * under the unit's own cgroup, which the unit must delegate (on v1
 * swappiness already asked for that, or not: systemd manages no v1
 * cpuset, and tunerun makes its own in the cpuset hierarchy).
 */
static void put_cpuset(FILE *f, const struct profile *p, bool cgroup_v2)
{
    if (!p->placement.enforce || !cgroup_v2)
        return;
    fprintf(f,
            "# enforce: tunerun gives the service a cpuset cgroup of its own under the unit's,\n"
            "# so that nothing it runs can set a wider affinity or memory policy, and a shared\n"
            "# pool's shrinks when it yields CPUs. It may make that cgroup only when the unit\n"
            "# delegates its cgroup. Without Delegate=, AllowedCPUs= and AllowedMemoryNodes=\n"
            "# with the lists `tunerun plan %s` shows hold it instead, fixed at those lists.\n"
            "Delegate=yes\n",
            p->name);
}

/* THP, where this systemd has MemoryTHP=, and the unit's User=. */
static void put_thp_and_user(FILE *f, const struct profile *p, int version)
{
    const char *thp = p->memory.thp == THP_NEVER     ? "disable"
                      : p->memory.thp == THP_MADVISE ? "madvise"
                                                     : NULL;
    if (thp && version >= MEMORY_THP_SINCE)
        fprintf(f, "MemoryTHP=%s\n", thp);
    else if (thp)
        fprintf(f,
                "# MemoryTHP=%s needs systemd %d or later (%s); tunerun sets the THP mode\n"
                "# itself meanwhile.\n",
                thp, MEMORY_THP_SINCE,
                version ? "this host has an older one" : "no systemctl found here");
    /*
     * A packaged unit's User= (Debian's redis-server, mariadb) would start
     * tunerun as that user, which can neither raise limits nor register the
     * service nor write its cgroup. With [security] user tunerun starts as
     * root and becomes the user itself, so the unit's are reset; without
     * it, saying how is all it can do (the unit may have none).
     */
    if (p->security.user)
        fprintf(f,
                "# tunerun starts as root and becomes %s itself ([security] user): the unit's\n"
                "# User= is reset. Its Group= (Debian's units have one) stays: systemd makes\n"
                "# RuntimeDirectory=, a pidfile's place, root's and that group's at every start,\n"
                "# and this lets the group write there. A unit without Group= needs one, the\n"
                "# service's group, or the directory is root's alone.\n"
                "User=\n"
                "RuntimeDirectoryMode=2775\n",
                p->security.user);
    else
        fputs("# If the unit sets User=, tunerun starts as that user and cannot raise limits,\n"
              "# register the service or write its cgroup: give the user to tunerun instead\n"
              "# (--set security.user=USER, which resets User= here)\n",
              f);
}

/* What a hardened unit must leave tunerun: only as comments. */
static void put_hardening(FILE *f, const struct dropin_args *a)
{
    /*
     * Only as comments: these lines are right for a hardened unit and wrong
     * for a plain one (a SystemCallFilter= of a few calls would deny all else).
     */
    fputs("# If the unit is hardened, tunerun also needs (see contrib/systemd/):\n"
          "#   ReadWritePaths=",
          f);
    /* quoted as a whole with its "-", escaped: a newline in it must not end the comment */
    char *rw = xasprintf("-%s", a->state_dir ? a->state_dir : "/run/tunerun");
    put_path(f, rw);
    free(rw);
    fputs("\n"
          "#                                    its claims, under ProtectSystem=strict\n"
          "#   ExecPaths=",
          f);
    put_path(f, a->tunerun);
    fputs("\n"
          "#                                    under NoExecPaths=/\n"
          "#   @resources in SystemCallFilter=  sched_setaffinity, set_mempolicy, setrlimit\n"
          "#   no ProtectProc=invisible         to see services that yield CPUs\n"
          "#   no ProtectControlGroups=         on cgroup v1, for swappiness in a cgroup\n"
          "#                                    of its own (it makes cgroupfs read-only)\n"
          "#   CAP_SYS_PTRACE CAP_SYS_NICE in CapabilityBoundingSet=, to see and move\n"
          "#                                    other users' processes that yield CPUs\n"
          "#   no PrivateUsers=, @privileged allowed, and CAP_SETUID CAP_SETGID\n"
          "#   CAP_SETPCAP in CapabilityBoundingSet=, with [security] user\n",
          f);
}

void systemd_dropin(FILE *f, const struct profile *p, const struct dropin_args *a, int version,
                    bool cgroup_v2)
{
    put_exec_start(f, p, a);
    put_unit_settings(f, p, cgroup_v2);
    put_cpuset(f, p, cgroup_v2);
    put_thp_and_user(f, p, version);
    put_hardening(f, a);
}

/*
 * The drop-in's ExecStart= names this binary, which systemd then runs as
 * root at every start of the unit: one that someone else may replace (a
 * build tree of a user's) is said, as the profile's trust walk would.
 */
static void warn_untrusted_binary(const char *exe)
{
    char at[4096];
    struct stat st;
    const char *why;
    if (stat(exe, &st) == 0 && (st.st_uid != 0 || (st.st_mode & 022))) {
        why = st.st_uid != 0 ? "belongs to another user" : "is writable by group or others";
        snprintf(at, sizeof(at), "%s", exe);
    } else {
        why = path_untrusted_way(exe, 0, at, sizeof(at));
    }
    if (why)
        log_warn("ExecStart= names %s, and %s %s: whoever may change it runs as root at every "
                 "start of the unit (fix: make install, and print the drop-in with the "
                 "installed tunerun)",
                 exe, at, why);
}

int systemd_run(const struct profile *p, const struct dropin_args *given)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (n > 0)
        warn_untrusted_binary(exe);
    struct dropin_args a = *given;
    a.tunerun = n > 0 ? exe : "/usr/bin/tunerun";
    char *file = a.profile_file ? realpath(a.profile_file, NULL) : NULL;
    /* the unit's tunerun runs elsewhere: a state directory by its absolute path */
    char *dir = a.state_dir ? realpath(a.state_dir, NULL) : NULL;
    if (a.state_dir && dir == NULL && a.state_dir[0] == '/')
        dir = xstrdup(a.state_dir); /* made at the first launch */
    if (a.state_dir && dir == NULL) {
        log_error("--state-dir %s: %s; a unit needs it by its absolute path", a.state_dir,
                  strerror(errno));
        free(file);
        return EXIT_TUNERUN;
    }
    a.profile_file = file;
    a.state_dir = dir;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        log_error("cannot compose the drop-in: %s", strerror(errno));
        free(file);
        free(dir);
        return EXIT_TUNERUN;
    }
    systemd_dropin(f, p, &a, systemd_version(), cgroup_mode() == CG_UNIFIED);
    fclose(f);
    report_dropin(stdout, text);
    free(text);
    free(file);
    free(dir);
    return 0;
}
