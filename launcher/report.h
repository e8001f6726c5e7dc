/*
 * report.h - every text and JSON rendering tunerun writes to stdout: plans,
 * topologies, `ps`, `doctor`, the profiles found, and the drop-in.
 *
 * Nothing here decides anything; it only shows what the modules that
 * decide or look have put in plain data. Text is for people and lines up
 * in columns; JSON is for scripts and tests, always valid, through the one
 * writer in json.c. Messages to stderr are log.c's.
 */
#ifndef TUNERUN_REPORT_H
#define TUNERUN_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "doctor.h"
#include "plan.h"
#include "profile.h"
#include "ps.h"
#include "topo.h"

/* A plan as `tunerun plan` shows it: what a launch from here would do, and why. */
void report_plan_text(FILE *f, const struct profile *p, const struct topo *t,
                      const struct plan *pl);
void report_plan_json(FILE *f, const struct profile *p, const struct topo *t,
                      const struct plan *pl);

void report_topo_text(FILE *f, const struct topo *t);
void report_topo_json(FILE *f, const struct topo *t);

void report_ps(FILE *f, const struct ps_report *r, bool json);
void report_doctor(FILE *f, const struct doctor_report *r, bool json);

/* The profiles found, and where (said on stderr: a directory that was not searched). */
void report_profiles(FILE *f, const struct profile_listing *l);
/* Every SECTION.KEY a profile or --set takes, one per line. */
void report_keys(FILE *f);
/* A unit drop-in, as systemd.c composed it. */
void report_dropin(FILE *f, const char *text);

#endif
