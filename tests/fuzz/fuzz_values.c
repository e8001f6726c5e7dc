/*
 * fuzz_values.c - libFuzzer: the value parsers, and the registry's lines.
 *
 * Every parser of parse.c gets the input as one value, as a profile line or
 * --set would give it, and each result is checked against what the parser
 * promises. The same bytes are then a line of the registry's table, which
 * holds CPU and node lists (hwloc_bitmap_list_sscanf) next to numbers,
 * names and flags.
 */
#include <hwloc/bitmap.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "registry.h"

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
    if (registry_parse_line(s, &c, &ended)) {
        if (c.profile == NULL || hwloc_bitmap_iszero(c.cpus) || strchr(c.file, '/'))
            abort();
        if (hwloc_bitmap_last(c.cpus) > (int)REGISTRY_MAX_INDEX ||
            hwloc_bitmap_last(c.nodes) > (int)REGISTRY_MAX_INDEX)
            abort(); /* a list that could make hwloc allocate without bound */
    }
    claim_free(&c);

    /* trimming: never past the ends */
    char *t = str_trim(s);
    if (t < s || t > s + size)
        abort();
    free(s);
    return 0;
}
