/*
 * main.c - options and verbs; no policy.
 *
 *   tunerun [OPTIONS] PROFILE -- COMMAND [ARG...]   (the same as `run`)
 *   tunerun plan|topo|ps|systemd|doctor|profiles ...
 *
 * It parses the command line, as util-linux tools do, into one struct
 * options, and hands each verb what it asks for: launch.c runs a launch
 * or shows its plan, from the facts facts.c gathers; systemd.c writes a
 * unit's drop-in; verbs.c has profile.c, facts.c, ps.c and doctor.c
 * gather what the other verbs show, and report.c show it.
 * Nothing here decides or prints anything but --help and --version. The
 * exit status is env(1)'s: 125 for tunerun's own failures, 126 when the
 * command cannot run, 127 when it is not found, else the command's own
 * (see launcher/README.md for the whole flow).
 */
#include <errno.h>
#include <getopt.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "facts.h"
#include "launch.h"
#include "log.h"
#include "process.h"
#include "profile.h"
#include "systemd.h"
#include "util.h"
#include "verbs.h"

#include "config.h" /* TUNERUN_VERSION, TUNERUN_DATADIR: written by the Makefile */
#define ADMIN_PROFILE_DIR "/etc/tunerun/profiles"

enum verb { VERB_RUN, VERB_PLAN, VERB_TOPO, VERB_PROFILES, VERB_PS, VERB_SYSTEMD, VERB_DOCTOR };

/* The whole state of one invocation, as util-linux tools keep it. */
struct options {
    enum verb verb;
    const char *profile_name;
    const char *profile_file;
    const char **sets;
    size_t nsets;
    const char *topology;
    const char *state_dir;
    const char *data_dir; /* doctor: the service's data, for its disk */
    const char *root;     /* doctor: where /proc and /sys are read (fixtures) */
    bool strict;
    bool json;
    bool keys;    /* profiles --keys */
    bool metrics; /* ps --metrics */
    enum log_level level;
    char **command; /* after "--" */
};

/*
 * GNU --version: the name and version first (the version after the last
 * space), the copyright second, then what it was built against and runs
 * with, and after a blank line the authors. No licence line: the project
 * has not chosen one yet.
 */
static void print_version(void)
{
    unsigned api = hwloc_get_api_version();
    printf("tunerun %s\n"
           "Copyright (C) 2026 the tunerun authors.\n"
           "Built with hwloc API %u.%u, libnuma, libcap %d.%d and inih; running hwloc API "
           "%u.%u.\n"
           "\n"
           "Written by the tunerun authors.\n",
           TUNERUN_VERSION, HWLOC_API_VERSION >> 16, (HWLOC_API_VERSION >> 8) & 0xff, LIBCAP_MAJOR,
           LIBCAP_MINOR, api >> 16, (api >> 8) & 0xff);
}

static void usage(FILE *out)
{
    fputs("Usage:\n"
          " tunerun [options] PROFILE -- COMMAND [ARG...]\n"
          " tunerun run [options] PROFILE -- COMMAND [ARG...]\n"
          " tunerun plan [options] PROFILE [-- COMMAND [ARG...]]\n"
          " tunerun topo [--json] [--topology SRC] [--state-dir DIR]\n"
          " tunerun ps [--json | --metrics] [--state-dir DIR]\n"
          " tunerun systemd [options] PROFILE [-- COMMAND [ARG...]]\n"
          " tunerun doctor [PROFILE | --profile-file FILE] [--set S.K=V]... [--data-dir DIR]\n"
          "                [--root DIR] [--json]\n"
          " tunerun profiles [--keys]\n"
          "\n"
          "Place a service on this machine's CPUs and NUMA memory the way its workload\n"
          "profile asks (`tunerun profiles` lists them: mysql, postgresql, redis, nginx,\n"
          "haproxy, memcached, java...), set its limits, THP mode and environment, then\n"
          "execute COMMAND in place (same pid).\n"
          "\n"
          "Verbs:\n"
          " run         apply the profile and execute COMMAND (the default)\n"
          " plan        show what run would do on this machine, and why; change nothing\n"
          "             but the topology cache\n"
          " topo        show the topology as tunerun sees it\n"
          " ps          list the services running under tunerun, their processes, and\n"
          "             any thread that left its CPUs\n"
          " systemd     print a unit drop-in: ExecStart= under tunerun, and the limits,\n"
          "             OOM score, swap and THP settings that belong in the unit\n"
          " doctor      audit this host for the profile, in the seed's order: CPU\n"
          "             frequency, NUMA, THP, swap, dirty pages, IO scheduler, files,\n"
          "             cgroup limits, capabilities; each finding with its fix\n"
          " profiles    list the profiles found and where each comes from; with\n"
          "             --keys, every SECTION.KEY a profile and --set take\n"
          "\n"
          "Options:\n"
          "     --profile-file FILE    read the profile from FILE instead of by name\n"
          "     --set SECTION.KEY=VAL  override one profile key (repeatable)\n"
          "     --strict               refuse to execute unless the plan is whole and every\n"
          "                            step applies (exit 125)\n"
          "     --topology SRC         plan for an hwloc XML file or synthetic:DESC\n"
          "                            (plan and topo only; run refuses it)\n"
          "     --state-dir DIR        where launches keep shared state (topology cache,\n"
          "                            running services); default /run/tunerun for root,\n"
          "                            $XDG_RUNTIME_DIR/tunerun for others\n"
          "     --json                 machine-readable output (plan, topo, ps, doctor)\n"
          "     --metrics              ps: Prometheus metrics of the services and the audit\n"
          "     --data-dir DIR         doctor: the service's data, whose disk is checked\n"
          "     --root DIR             doctor: read /proc and /sys under DIR (fixtures)\n"
          " -v, --verbose              print every decision and applied step\n"
          " -q, --quiet                print errors only\n"
          " -h, --help                 display this help\n"
          " -V, --version              display version\n"
          "\n"
          "Profiles are searched in --profile-file, " ADMIN_PROFILE_DIR ",\n"
          "profiles/ next to the tunerun binary, and " TUNERUN_DATADIR "/profiles.\n"
          "\n"
          "Exit status: 125 if tunerun fails, 126 if COMMAND cannot be run,\n"
          "127 if COMMAND is not found, otherwise the status of COMMAND.\n"
          "doctor exits 0 when all is ok or info, 1 on a warning, 2 on a critical finding.\n"
          "\n"
          "Examples:\n"
          " tunerun mysql -- /usr/sbin/mysqld --defaults-file=/etc/mysql/my.cnf\n"
          " tunerun --strict -v redis -- redis-server /etc/redis/redis.conf\n"
          " tunerun plan nginx --set placement.nodes=2\n"
          " tunerun plan mysql --topology synthetic:'pack:2 numa:1 core:8 pu:2' --json\n"
          "\n"
          "Full documentation: man tunerun, and man tunerun.ini for the profile keys.\n",
          out);
}

/* An error line (with its journald priority when stderr is the journal), then GNU's hint. */
static int usage_error(const char *fmt, const char *arg)
{
    char msg[1024], shown[ESCAPED_SIZE(160)]; /* an argument as given: one line */
    snprintf(msg, sizeof(msg), fmt, str_escaped(shown, sizeof(shown), arg, 160));
    log_error("%s", msg);
    log_error_line("Try 'tunerun --help' for more information.");
    return EXIT_TUNERUN;
}

/*
 * What was wrong with a long option getopt_long() refused, said as glibc
 * says it (opterr is off so that the line carries its journald priority).
 */
static int long_option_error(const struct option *longopts, const char *word)
{
    const char *name = word + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *match = NULL;
    int matches = 0;
    for (const struct option *l = longopts; l->name; l++) {
        if (strncmp(l->name, name, len) != 0)
            continue;
        if (strlen(l->name) == len) { /* exact: it wins over prefixes */
            match = l;
            matches = 1;
            break;
        }
        match = l;
        matches++;
    }
    char opt[128];
    snprintf(opt, sizeof(opt), "--%.*s", (int)(len < 100 ? len : 100), name);
    if (matches == 0)
        return usage_error("unrecognized option '%s'", word);
    if (matches > 1)
        return usage_error("option '%s' is ambiguous", opt);
    snprintf(opt, sizeof(opt), "--%s", match->name);
    if (eq && match->has_arg == no_argument)
        return usage_error("option '%s' doesn't allow an argument", opt);
    return usage_error("option '%s' requires an argument", opt);
}

static const struct {
    const char *name;
    enum verb verb;
} verbs[] = {
    {"run", VERB_RUN},       {"plan", VERB_PLAN},         {"topo", VERB_TOPO},
    {"ps", VERB_PS},         {"profiles", VERB_PROFILES}, {"systemd", VERB_SYSTEMD},
    {"doctor", VERB_DOCTOR},
};

/* Whether word names a verb: a profile of that name takes an explicit "run". */
static bool verb_word(const char *word)
{
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(word, verbs[i].name) == 0)
            return true;
    return false;
}

/*
 * The options, and in pos[] the positional words before "--" (VERB,
 * PROFILE): -1 when they parse, else the exit status (--help, --version,
 * a usage error said).
 */
static int scan_options(int argc, char **argv, struct options *o, char **pos, int *npos_out)
{
    static const struct option longopts[] = {
        {"profile-file", required_argument, NULL, 'f'},
        {"set", required_argument, NULL, 's'},
        {"strict", no_argument, NULL, 'S'},
        {"topology", required_argument, NULL, 't'},
        {"state-dir", required_argument, NULL, 'D'},
        {"data-dir", required_argument, NULL, 'a'},
        {"root", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"keys", no_argument, NULL, 'k'},
        {"metrics", no_argument, NULL, 'm'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    /* Options end at the first "--": everything after it is the command's. */
    int dashdash = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    o->command = dashdash < argc ? &argv[dashdash + 1] : NULL;
    o->level = LOG_NORMAL;
    o->sets = xcalloc((size_t)argc, sizeof(char *));

    /*
     * Options may sit before or after VERB and PROFILE, but not among the
     * command's words: "+" stops getopt at each non-option, which we take
     * as a positional and step over. A third positional means the command
     * began without "--", and its own options must not be read as ours.
     */
    int npos = 0;
    bool first_is_verb = false;
    int c;
    optind = 1;
    opterr = 0; /* our own messages: they carry the journald priority */
    while (optind < dashdash) {
        int at = optind; /* the word getopt reads: optind stays within a cluster like -xv */
        c = getopt_long(dashdash, argv, "+vqhV", longopts, NULL);
        if (c == -1) {
            if (optind >= dashdash)
                break;
            pos[npos++] = argv[optind++];
            first_is_verb |= npos == 1 && verb_word(pos[0]);
            if (npos == 3 || (npos == 2 && !first_is_verb))
                break;
            continue;
        }
        switch (c) {
        case 'f':
            o->profile_file = optarg;
            break;
        case 's':
            o->sets[o->nsets++] = optarg;
            break;
        case 'S':
            o->strict = true;
            break;
        case 't':
            o->topology = optarg;
            break;
        case 'D':
            if (*optarg == '\0')
                return usage_error("%s", "--state-dir needs a directory");
            o->state_dir = optarg;
            break;
        case 'j':
            o->json = true;
            break;
        case 'k':
            o->keys = true;
            break;
        case 'm':
            o->metrics = true;
            break;
        case 'a':
            o->data_dir = optarg;
            break;
        case 'r':
            o->root = optarg;
            break;
        case 'v':
            o->level = LOG_VERBOSE;
            break;
        case 'q':
            o->level = LOG_QUIET;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            print_version();
            return 0;
        default: {
            const char *word = argv[at];
            char shortopt[2] = {(char)optopt, '\0'};
            if (strncmp(word, "--", 2) == 0)
                return long_option_error(longopts, word);
            return usage_error("invalid option -- '%s'", shortopt);
        }
        }
    }

    *npos_out = npos;
    return -1;
}

/*
 * What each verb takes: the verb picked from pos[], then its words and
 * options checked; -1 when they go together, else the usage error's status.
 */
static int check_verb(struct options *o, char **pos, int npos)
{
    o->verb = VERB_RUN;
    char **rest = pos;
    if (npos > 0)
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
            if (strcmp(pos[0], verbs[i].name) == 0) {
                o->verb = verbs[i].verb;
                rest++;
                npos--;
                break;
            }
    if (o->keys && o->verb != VERB_PROFILES)
        return usage_error("%s", "--keys is for profiles only");
    if (o->metrics && (o->verb != VERB_PS || o->json))
        return usage_error("%s", o->json ? "--metrics and --json are two formats: choose one"
                                         : "--metrics is for ps only");
    if ((o->data_dir || o->root) && o->verb != VERB_DOCTOR)
        return usage_error("%s", "--data-dir and --root are doctor's only");
    if (o->json && (o->verb == VERB_RUN || o->verb == VERB_SYSTEMD || o->verb == VERB_PROFILES))
        return usage_error("%s", "--json goes with plan, topo, ps and doctor");
    if (o->verb == VERB_TOPO || o->verb == VERB_PROFILES || o->verb == VERB_PS) {
        const char *verb = o->verb == VERB_TOPO ? "topo" : o->verb == VERB_PS ? "ps" : "profiles";
        if (npos > 0)
            return usage_error("unexpected argument '%s'", rest[0]);
        if (o->command)
            return usage_error("%s takes no command", verb);
        if (o->verb == VERB_PS && (o->topology || o->nsets || o->strict || o->profile_file))
            return usage_error("%s", "ps takes only --json or --metrics, and --state-dir");
        if (o->verb == VERB_PROFILES && (o->topology || o->nsets || o->strict || o->profile_file))
            return usage_error("%s", "profiles takes only --keys");
        if (o->verb == VERB_TOPO && (o->nsets || o->strict || o->profile_file))
            return usage_error("%s", "topo takes only --json, --topology and --state-dir");
        return -1;
    }
    if (o->verb == VERB_DOCTOR) {
        if (npos > 1)
            return usage_error("unexpected argument '%s' (one PROFILE at most)", rest[1]);
        if (o->command || o->topology || o->strict || o->state_dir)
            return usage_error("%s",
                               "doctor takes only PROFILE, --profile-file, --set, --data-dir, "
                               "--root and --json");
        if (npos == 1 && o->profile_file)
            return usage_error("give either PROFILE or --profile-file, not both ('%s')", rest[0]);
        if (npos == 0 && !o->profile_file && o->nsets)
            return usage_error("%s", "--set needs a PROFILE to set it in");
        o->profile_name = npos == 1 ? rest[0] : NULL;
        return -1;
    }
    if (npos > 1)
        return usage_error(o->command || o->verb == VERB_PLAN || o->verb == VERB_SYSTEMD
                               ? "unexpected argument '%s' (one PROFILE only)"
                               : "expected '--' before the command '%s' (tunerun PROFILE -- "
                                 "COMMAND)",
                           rest[1]);
    if (npos == 1 && o->profile_file)
        return usage_error("give either PROFILE or --profile-file, not both ('%s')", rest[0]);
    if (npos == 0 && !o->profile_file)
        return usage_error("%s", "missing PROFILE");
    o->profile_name = npos == 1 ? rest[0] : NULL;
    if ((o->verb == VERB_PLAN || o->verb == VERB_SYSTEMD) && o->command && o->command[0] == NULL)
        return usage_error("%s", "missing COMMAND after '--'");
    if (o->verb == VERB_RUN) {
        if (o->command == NULL)
            return usage_error("%s", "missing '-- COMMAND'");
        if (o->command[0] == NULL)
            return usage_error("%s", "missing COMMAND after '--'");
        if (o->topology)
            return usage_error("--topology %s describes another machine: run refuses to apply "
                               "its plan (use 'tunerun plan')",
                               o->topology);
    }
    if (o->verb == VERB_SYSTEMD && o->topology)
        return usage_error("--topology %s describes another machine: a unit drop-in is for this "
                           "one",
                           o->topology);
    return -1;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    char *pos[3];
    int npos = 0;
    int status = scan_options(argc, argv, o, pos, &npos);
    return status >= 0 ? status : check_verb(o, pos, npos);
}

/*
 * A plan, a unit drop-in or a listing that did not reach its file (a full
 * disk, a closed stdout) is a failure, not a success, as coreutils has it.
 * A verb that failed (125) has said why already.
 */
static int stdout_status(int status)
{
    bool closed = process_stdout_was_closed();
    int error = fflush(stdout) != 0 ? errno : 0;
    if (status == EXIT_TUNERUN || (!closed && !ferror(stdout)))
        return status;
    log_error("write error on standard output: %s", closed  ? "it is closed"
                                                    : error ? strerror(error)
                                                            : "it failed");
    return EXIT_TUNERUN;
}

/* A launch or its plan: the facts gathered for the profile, then launch.c. */
static int launch(const struct options *o, struct profile *p, const struct privs *pv)
{
    struct facts f;
    struct err e;
    struct facts_request rq = {o->verb == VERB_PLAN ? FACTS_PLAN : FACTS_LAUNCH, p, o->topology,
                               o->state_dir};
    int status = EXIT_TUNERUN;
    if (!facts_gather(&f, &rq, &e)) {
        log_error("%s", e.msg);
    } else {
        struct launch_options lo = {o->command, o->strict, o->json, o->state_dir != NULL};
        status = o->verb == VERB_PLAN ? launch_plan(&lo, p, &f, pv) : launch_run(&lo, p, &f, pv);
    }
    facts_free(&f);
    return status;
}

/* The verbs of a profile: run, plan, systemd, doctor. */
static int profile_verb(const struct options *o, const struct profile_paths *paths)
{
    /* Until the profile names itself, messages carry the name it was asked by. */
    const char *slash = o->profile_file ? strrchr(o->profile_file, '/') : NULL;
    char *asked = xstrdup(o->profile_name ? o->profile_name : slash ? slash + 1 : o->profile_file);
    char *dot = strstr(asked, ".ini");
    if (dot && dot[4] == '\0')
        *dot = '\0';
    log_set_subject(*asked ? asked : NULL); /* "tunerun: : ..." says nothing */
    struct profile p;
    struct err e;
    bool loaded = profile_open(&p, o->profile_name, o->profile_file, o->sets, o->nsets, paths, &e);
    if (!loaded)
        log_error("%s", e.msg);
    log_set_subject(loaded ? p.name : NULL);
    free(asked);
    if (!loaded)
        return EXIT_TUNERUN;
    /*
     * Users and groups are looked up before anything changes: a missing one
     * is bad input, for a unit's drop-in too (it would fail at every start),
     * and for doctor here; another root's users are not this host's.
     */
    struct privs pv = {0};
    bool wanted = privs_wanted(&p);
    int status;
    if (wanted && (o->verb != VERB_DOCTOR || o->root == NULL) && !privs_resolve(&pv, &p, &e)) {
        log_error("%s", e.msg);
        status = EXIT_TUNERUN;
    } else if (o->verb == VERB_DOCTOR) {
        status = verb_doctor(o->root, &p, o->data_dir, o->json);
    } else if (o->verb == VERB_SYSTEMD) {
        struct dropin_args a = {NULL,
                                o->profile_file,
                                o->sets,
                                o->nsets,
                                o->command,
                                o->strict,
                                o->level == LOG_QUIET     ? "-q"
                                : o->level == LOG_VERBOSE ? "-v"
                                                          : NULL,
                                o->state_dir,
                                o->profile_file == NULL && verb_word(p.name)};
        status = systemd_run(&p, &a);
    } else {
        status = launch(o, &p, wanted ? &pv : NULL);
    }
    privs_free(&pv);
    profile_free(&p);
    return status;
}

int main(int argc, char **argv)
{
    struct options o = {0};
    process_sigpipe_ignore();
    if (!process_hold_std_fds()) {
        log_init(LOG_NORMAL);
        log_error("fds 0-2 must be open, or /dev/null there to hold them: %s", strerror(errno));
        return EXIT_TUNERUN;
    }
    log_init(LOG_NORMAL); /* so that usage errors carry their journald priority too */
    int status = parse_args(argc, argv, &o);
    if (status >= 0) {
        free(o.sets);
        return stdout_status(status);
    }
    if (o.verb != VERB_RUN)
        process_sigpipe_restore();
    log_set_level(o.level);
    struct profile_paths paths;
    profile_paths_init(&paths, ADMIN_PROFILE_DIR, TUNERUN_DATADIR "/profiles");
    if (o.verb == VERB_PROFILES)
        status = verb_profiles(o.keys, &paths);
    else if (o.verb == VERB_PS)
        status = verb_ps(o.state_dir, o.json, o.metrics);
    else if (o.verb == VERB_TOPO)
        status = verb_topo(o.topology, o.state_dir, o.json);
    else if (o.verb == VERB_DOCTOR && o.profile_name == NULL && o.profile_file == NULL)
        status = verb_doctor(o.root, NULL, o.data_dir, o.json);
    else
        status = profile_verb(&o, &paths);
    log_set_subject(NULL); /* the profile's name went with it */
    profile_paths_free(&paths);
    free(o.sets);
    /* a launch writes nothing to stdout, and what the command does with it is its own */
    return o.verb == VERB_RUN ? status : stdout_status(status);
}
