/*
 * fuzz_values.c - libFuzzer: the value parsers, the registry's lines, and
 * the topology cache's.
 *
 * Every parser of parse.c gets the input as one value, as a profile line or
 * --set would give it, and each result is checked against what the parser
 * promises. The same bytes are then a line of the registry's table, which
 * holds CPU and node lists (hwloc_bitmap_list_sscanf) next to numbers,
 * names and flags. Then they are the record a yield keeps of what shared
 * pools gave a service, and last the body of a topology cache file, which
 * a launch turns into the planner's machine.
 */
#include <hwloc/bitmap.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "registry.h"
#include "topo.h"
#include "yield.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';

    bool b;
    long l;
    uint64_t u;
    rlim_t soft, hard;
    parse_bool(s, &b);
    if (parse_long(s, -1000, 1000, &l) && (l < -1000 || l > 1000))
        abort();
    parse_size(s, &u);
    parse_rlim(s, &soft);
    if (parse_rlim_pair(s, &soft, &hard) && soft > hard)
        abort(); /* the parser promises soft <= hard */

    struct claim c;
    bool ended;
    struct err e;
    if (registry_parse_line(s, &c, &ended)) {
        if (c.profile == NULL || hwloc_bitmap_iszero(c.cpus) || strchr(c.file, '/'))
            abort();
        if (hwloc_bitmap_last(c.cpus) > (int)REGISTRY_MAX_INDEX ||
            hwloc_bitmap_last(c.nodes) > (int)REGISTRY_MAX_INDEX)
            abort(); /* a list that could make hwloc allocate without bound */
    }
    claim_free(&c);

    struct yield y = {0};
    char *by = NULL;
    if (yield_records_parse(s, &y, &by, &e)) {
        for (size_t i = 0; i < y.nclaims; i++)
            if (strncmp(y.claims[i].file, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) != 0 ||
                strchr(y.claims[i].file, '/'))
                abort(); /* a pool is named by a claim file, in the state directory */
        for (size_t i = 0; i < y.nthreads; i++)
            if (y.threads[i].shrink >= y.nclaims)
                abort(); /* every moved thread is of a pool the record names */
        for (size_t i = 1; i < y.seen.n; i++)
            if (y.seen.v[i - 1] > y.seen.v[i])
                abort(); /* sorted, for the search */
    }
    free(by);
    yield_free(&y);

    struct topo top;
    if (topo_parse_cache(&top, s, &e)) {
        hwloc_bitmap_t homes = hwloc_bitmap_alloc();
        for (size_t i = 0; i < top.nnodes; i++) {
            /* one home per CPU, every home allowed, nodes in os index order */
            if (hwloc_bitmap_intersects(homes, top.nodes[i].cpus) ||
                !hwloc_bitmap_isincluded(top.nodes[i].cpus, top.cpus) ||
                (i > 0 && top.nodes[i - 1].os_index >= top.nodes[i].os_index))
                abort();
            hwloc_bitmap_or(homes, homes, top.nodes[i].cpus);
        }
        for (size_t i = 0; i < top.ncores; i++)
            if (hwloc_bitmap_iszero(top.cores[i]) ||
                !hwloc_bitmap_isincluded(top.cores[i], top.cpus))
                abort();
        if (top.distance && top.nnodes < 2)
            abort();
        hwloc_bitmap_free(homes);
        topo_free(&top);
    }

    /* trimming: never past the ends */
    char *t = str_trim(s);
    if (t < s || t > s + size)
        abort();
    free(s);
    return 0;
}
