/*
 * report.h - text and JSON renderings of topologies, plans and step results.
 *
 * Nothing here decides anything; it only shows. Text is for people and
 * lines up in columns; JSON is for scripts and tests, always valid.
 */
#ifndef TUNERUN_REPORT_H
#define TUNERUN_REPORT_H

#include <stdio.h>

#include "apply.h"
#include "plan.h"
#include "profile.h"
#include "topo.h"

/* results may be NULL: a plan not (yet) applied. */
void report_plan_text(FILE *f, const struct profile *p, const struct topo *t, const struct plan *pl,
                      const struct step_result *results);
void report_plan_json(FILE *f, const struct profile *p, const struct topo *t, const struct plan *pl,
                      const struct step_result *results);

void report_topo_text(FILE *f, const struct topo *t);
void report_topo_json(FILE *f, const struct topo *t);

/* The step's planned value, as shown in both formats: "65535:65535", "bind 0", ... */
void report_step_value(const struct plan_step *s, char *buf, size_t n);

/* A JSON string literal, escaped. */
void json_string(FILE *f, const char *s);
/* `lead` as is (", \"key\": "), then s as a JSON string. */
void json_field(FILE *f, const char *lead, const char *s);
/* A CPU or node set as a JSON string in hwloc's list format ("0-3,8"); "" when empty. */
void json_list(FILE *f, hwloc_const_bitmap_t set);

#endif
