/*
 * weights.c - the kernel's weights for weighted interleave.
 *
 * Since Linux 6.9, MPOL_WEIGHTED_INTERLEAVE spreads pages over a set of
 * nodes in proportion to a weight per node: 3 pages on node 0 for each
 * one on a CXL node 2 whose bandwidth is a third. The weights are the
 * host's, one file per node under /sys/kernel/mm/mempolicy/weighted_interleave
 * (1 to 255, 1 by default), shared by every process that uses the policy;
 * since 6.16 an `auto` file says the kernel sets them itself from HMAT's
 * bandwidth. tunerun reads them to show what the policy will do and never
 * writes them: a launch must not change what other services get. libnuma
 * 2.0.16 has no call for them, hence by hand.
 */
#include "plan.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHTS_DIR "/sys/kernel/mm/mempolicy/weighted_interleave"

void weights_read(struct plan_weights *w, const char *root)
{
    memset(w, 0, sizeof(*w));
    char *dir = xasprintf("%s%s", root ? root : "", WEIGHTS_DIR);
    DIR *d = opendir(dir);
    w->supported = d != NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[4096], line[64], *end;
        unsigned long node;
        bool is_node = strncmp(e->d_name, "node", 4) == 0;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        /* `auto` (6.16); some builds show it as `__auto_type`, a name the C macro made */
        if ((strcmp(e->d_name, "auto") == 0 || strcmp(e->d_name, "__auto_type") == 0) &&
            read_line_file(path, line, sizeof(line)))
            w->automatic = strcmp(line, "true") == 0 || strcmp(line, "1") == 0;
        if (!is_node)
            continue;
        node = strtoul(e->d_name + 4, &end, 10);
        unsigned long v;
        if (end == e->d_name + 4 || *end != '\0' || node >= 1024 ||
            !read_line_file(path, line, sizeof(line)))
            continue;
        v = strtoul(line, &end, 10);
        if (*end != '\0' || v == 0 || v > 255)
            continue;
        if (node >= w->nweights) {
            w->weight = xrealloc(w->weight, (node + 1) * sizeof(*w->weight));
            memset(w->weight + w->nweights, 0, (node + 1 - w->nweights) * sizeof(*w->weight));
            w->nweights = node + 1;
        }
        w->weight[node] = (unsigned)v;
    }
    if (d)
        closedir(d);
    free(dir);
}

void weights_free(struct plan_weights *w)
{
    free(w->weight);
    memset(w, 0, sizeof(*w));
}
