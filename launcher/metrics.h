/*
 * metrics.h - `tunerun ps --metrics`: what ps and doctor find, in
 * Prometheus's text exposition format, for node_exporter's textfile
 * collector (contrib/systemd/tunerun-metrics.*).
 */
#ifndef TUNERUN_METRICS_H
#define TUNERUN_METRICS_H

#include <stdio.h>

#include "doctor.h"
#include "ps.h"

/* Every metric, its HELP and TYPE first; d may be NULL (no doctor gauges). */
void metrics_write(FILE *out, const struct ps_report *r, const struct doctor_report *d);

#endif
