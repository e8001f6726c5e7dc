/*
 * report.h - text and JSON renderings of topologies and plans.
 *
 * Nothing here decides anything; it only shows. Text is for people and
 * lines up in columns; JSON is for scripts and tests, always valid.
 */
#ifndef TUNERUN_REPORT_H
#define TUNERUN_REPORT_H

#include <stdio.h>

#include "plan.h"
#include "profile.h"
#include "topo.h"

/* A plan as `tunerun plan` shows it: what a launch from here would do, and why. */
void report_plan_text(FILE *f, const struct profile *p, const struct topo *t,
                      const struct plan *pl);
void report_plan_json(FILE *f, const struct profile *p, const struct topo *t,
                      const struct plan *pl);

void report_topo_text(FILE *f, const struct topo *t);
void report_topo_json(FILE *f, const struct topo *t);

/* A JSON string literal, escaped. */
void json_string(FILE *f, const char *s);
/* `lead` as is (", \"key\": "), then s as a JSON string. */
void json_field(FILE *f, const char *lead, const char *s);
/* A CPU or node set as a JSON string in hwloc's list format ("0-3,8"); "" when empty. */
void json_list(FILE *f, hwloc_const_bitmap_t set);

#endif
