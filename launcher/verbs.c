/*
 * verbs.c - the verbs that show what tunerun finds: profiles, topo, ps
 * and doctor.
 *
 * Each gathers what it shows through the module that knows it (profile.c,
 * facts.c, ps.c, doctor.c) and hands the result to report.c, which alone
 * prints (metrics.c prints ps --metrics, the same data in Prometheus's
 * format). So no module that gathers includes report.h, and report.c
 * depends on their data and nothing else of theirs. A launch and its plan
 * go through launch.c, a unit drop-in through systemd.c.
 */
#include "verbs.h"
#include "doctor.h"
#include "facts.h"
#include "log.h"
#include "metrics.h"
#include "ps.h"
#include "report.h"
#include "state.h"

#include <stdio.h>
#include <unistd.h>

int verb_profiles(bool keys, const struct profile_paths *paths)
{
    if (keys) {
        report_keys(stdout);
        return 0;
    }
    struct profile_listing l;
    profile_listing(&l, paths);
    report_profiles(stdout, &l);
    int status = l.n ? 0 : EXIT_TUNERUN;
    if (l.n == 0)
        log_error("no profiles found in %s, %s", paths->dirs[0], paths->dirs[paths->n - 1]);
    profile_listing_free(&l);
    return status;
}

int verb_topo(const char *topology, const char *state_dir, bool json)
{
    struct facts f;
    struct err e;
    struct facts_request rq = {FACTS_TOPO, NULL, topology, state_dir};
    bool ok = facts_gather(&f, &rq, &e);
    if (!ok)
        log_error("%s", e.msg);
    else if (json)
        report_topo_json(stdout, &f.topo);
    else
        report_topo_text(stdout, &f.topo);
    facts_free(&f);
    return ok ? 0 : EXIT_TUNERUN;
}

/*
 * What ps found, as text or JSON; with --metrics, the same and the host's
 * audit (doctor without a profile) as Prometheus metrics, where a user
 * without a state directory has no service.
 */
static void show_ps(const struct ps_report *r, bool json, bool metrics)
{
    if (!metrics) {
        report_ps(stdout, r, json);
        return;
    }
    struct doctor_report d;
    bool audited = doctor_gather(&d, NULL, NULL, NULL);
    metrics_write(stdout, r, audited ? &d : NULL);
    if (audited)
        doctor_free(&d);
}

/*
 * Nothing to list is no error; a state directory that cannot be used is,
 * unless it is the default one, which a user without services simply
 * lacks.
 */
int verb_ps(const char *state_dir, bool json, bool metrics)
{
    struct state_dir sd;
    struct ps_report r = {0};
    struct err e;
    enum state_status st = state_dir_open(&sd, state_dir, false, &e); /* ps changes nothing */
    int status = 0;
    if (st == STATE_UNAVAILABLE && state_dir == NULL) {
        r.none = e.msg; /* a user's own state directory: root's services are not in it */
        r.not_root = geteuid() != 0;
        show_ps(&r, json, metrics);
    } else if (st != STATE_OK) {
        log_error("%s%s", state_dir ? "--state-dir: " : "", e.msg);
        status = PS_EXIT_FAILED;
    } else if (!ps_gather(&r, &sd, metrics, &e)) {
        log_error("registry: %s", e.msg);
        status = PS_EXIT_FAILED;
    } else {
        show_ps(&r, json, metrics);
        ps_free(&r);
    }
    state_dir_close(&sd);
    return status;
}

int verb_doctor(const char *root, const struct profile *p, const char *data_dir, bool json)
{
    struct doctor_report r;
    if (!doctor_gather(&r, root, p, data_dir))
        return DOCTOR_EXIT_UNUSABLE; /* said why, and printed nothing */
    report_doctor(stdout, &r, json);
    int status = doctor_status(&r);
    doctor_free(&r);
    return status;
}
