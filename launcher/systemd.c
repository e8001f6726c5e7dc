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
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMORY_THP_SINCE 260 /* systemd release that added MemoryTHP= */

/* The installed systemd's release ("systemd 252 (252.30-1~deb12u2)"), or 0. */
int systemd_version(void)
{
    FILE *p = popen("systemctl --version 2>/dev/null", "r");
    char line[256] = "";
    int v = 0;
    if (p == NULL)
        return 0;
    if (fgets(line, sizeof(line), p) && sscanf(line, "systemd %d", &v) != 1)
        v = 0;
    pclose(p);
    return v;
}

/* One ExecStart= word: quoted when it must be, with % and $ escaped (systemd.service(5)). */
static void put_word(FILE *f, const char *w)
{
    bool quote = *w == '\0' || strpbrk(w, " \t\"'\\;") != NULL;
    if (quote)
        fputc('"', f);
    for (; *w; w++) {
        if (*w == '%' || *w == '$')
            fputc(*w, f); /* %% and $$ */
        if (quote && (*w == '"' || *w == '\\'))
            fputc('\\', f);
        fputc(*w, f);
    }
    if (quote)
        fputc('"', f);
}

static void put_limit(FILE *f, rlim_t v)
{
    if (v == RLIM_INFINITY)
        fputs("infinity", f);
    else
        fprintf(f, "%llu", (unsigned long long)v);
}

void systemd_dropin(FILE *f, const struct profile *p, const char *tunerun, char *const *command,
                    int version)
{
    fprintf(f,
            "# A drop-in that starts this unit's service under tunerun's %s profile.\n"
            "# Save it as /etc/systemd/system/UNIT.service.d/tunerun.conf, then run\n"
            "# systemctl daemon-reload && systemctl restart UNIT.\n"
            "[Service]\n"
            "ExecStart=\n"
            "ExecStart=",
            p->name);
    put_word(f, tunerun);
    fputc(' ', f);
    put_word(f, p->name);
    fputs(" --", f);
    if (command && command[0])
        for (char *const *w = command; *w; w++) {
            fputc(' ', f);
            put_word(f, *w);
        }
    else
        fputs(" /path/to/the/service --its --options", f);
    fputc('\n', f);

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
        fprintf(f, "# cgroup v2's memory.swap.max, on the unit's own cgroup\nMemorySwapMax=");
        if (p->memory.swap_max == UINT64_MAX)
            fputs("infinity\n", f);
        else
            fprintf(f, "%llu\n", (unsigned long long)p->memory.swap_max);
    }
    if (p->memory.swappiness >= 0)
        fprintf(f,
                "# swappiness %d: systemd has no per-unit swappiness. On cgroup v1 tunerun sets\n"
                "# memory.swappiness in a cgroup of its own under the unit's, which it may\n"
                "# create only when the unit delegates its cgroup.\n"
                "Delegate=yes\n",
                p->memory.swappiness);
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
}
