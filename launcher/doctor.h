/*
 * doctor.h - `tunerun doctor [PROFILE]`: the seed's checklist as a host
 * audit. Read-only: every source is read under a root path (default "/"),
 * so the same checks run against fixture trees of /proc and /sys.
 */
#ifndef TUNERUN_DOCTOR_H
#define TUNERUN_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

enum severity { SEV_OK, SEV_INFO, SEV_WARN, SEV_CRIT };

/* tunerun's own failure (env(1)'s 125): a --root or --data-dir it cannot use. */
#define DOCTOR_EXIT_UNUSABLE 125

/* One finding: what was observed, why it matters for the profile, the fix now and for good. */
struct doctor_finding {
    const char *group; /* one of doctor_groups */
    const char *id;    /* stable: "thp.enabled", "vm.swappiness", ... */
    enum severity sev;
    char *observed, *why, *fix, *persist;
};

/* What an audit found, for report.c to show. */
struct doctor_report {
    const char *profile, *fears; /* NULL without a profile */
    const char *root, *data_dir;
    bool data_from_near; /* data_dir is the profile's near, not --data-dir */
    struct doctor_finding *v;
    size_t n;
    enum severity worst;
};

/* The groups findings are shown in, the seed's order: id, and title. */
#define DOCTOR_NGROUPS 8
extern const char *const doctor_groups[DOCTOR_NGROUPS][2];
const char *doctor_severity_name(enum severity s);

/*
 * Run every check into r (report.c shows it; doctor_free() frees it). p
 * may be NULL for a profile-free audit. False, with an error on stderr
 * naming the option, when root (NULL: "/") is not a directory holding
 * proc/ and sys/, or data_dir is not a directory (under another root: not
 * an absolute path): then exit DOCTOR_EXIT_UNUSABLE, and print nothing.
 */
bool doctor_gather(struct doctor_report *r, const char *root, const struct profile *p,
                   const char *data_dir);
/* The exit status r calls for: 0 for ok/info, 1 for a warning, 2 for a critical finding. */
int doctor_status(const struct doctor_report *r);
void doctor_free(struct doctor_report *r);

#endif
