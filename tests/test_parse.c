/* test_parse.c - the value parsers of parse.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "log.h"
#include "parse.h"
#include "procs.h"
#include "registry.h"

/* A message too long for struct err keeps its start and its end, the reason. */
static void test_long_message(void **state)
{
    (void)state;
    struct err e;
    char path[3000];
    memset(path, 'd', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    err_set(&e, "file.ini:2: in include 'x': %s/x.ini:7: placement.nodes: '0' is out of range",
            path);
    assert_true(strlen(e.msg) < sizeof(e.msg));
    assert_int_equal(strncmp(e.msg, "file.ini:2: in include 'x': ddd", 31), 0);
    assert_non_null(strstr(e.msg, "d ... d"));
    const char *end = "/x.ini:7: placement.nodes: '0' is out of range";
    assert_string_equal(e.msg + strlen(e.msg) - strlen(end), end);
    /* cut where a character starts, never inside one: what is kept stays valid UTF-8 */
    char wide[3001] = "";
    for (size_t i = 0; i + 3 < sizeof(wide); i += 3)
        strcat(wide, "\xe2\x82\xac"); /* the euro sign, 3 bytes */
    for (size_t lead = 0; lead < 3; lead++)
        for (size_t trail = 0; trail < 3; trail++) {
            err_set(&e, "%.*s%s%.*s", (int)lead, "xx", wide, (int)trail, "yy");
            assert_true(strlen(e.msg) < sizeof(e.msg));
            const char *dots = strstr(e.msg, " ... ");
            assert_non_null(dots);
            size_t kept = (size_t)(dots - e.msg) - lead;
            assert_int_equal(kept % 3, 0);                       /* whole characters before */
            assert_int_equal((strlen(dots + 5) - trail) % 3, 0); /* and after */
            assert_int_equal((unsigned char)dots[5], 0xe2);      /* the tail starts with one */
            assert_true(kept >= 250 && strlen(e.msg) > sizeof(e.msg) - 8); /* little is lost */
        }
    /* text that is not UTF-8 (a run of continuation bytes) keeps nearly all it can */
    memset(wide, 0xb0, sizeof(wide) - 1);
    err_set(&e, "/etc/%s: bad", wide);
    assert_true(strlen(e.msg) < sizeof(e.msg) && strlen(e.msg) > sizeof(e.msg) - 8);
    err_set(&e, "short: %d", 1); /* one that fits is as it is */
    assert_string_equal(e.msg, "short: 1");
}

/* The one UTF-8 decoder messages, escapes and JSON share: what is a character, and how long. */
static void test_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
    } cases[] = {
        {"\xc3\xa9", 2},         /* e acute */
        {"\xc2\x85", 2},         /* C1 NEL: well-formed (JSON keeps it; escapes do not) */
        {"\xe2\x82\xac", 3},     /* euro */
        {"\xf0\x9f\x98\x80", 4}, /* an emoji */
        {"\xf4\x8f\xbf\xbf", 4}, /* U+10FFFF */
        {"\xc0\xaf", 0},         /* overlong '/' */
        {"\xe0\x80\xaf", 0},     /* overlong */
        {"\xed\xa0\x80", 0},     /* a surrogate */
        {"\xf4\x90\x80\x80", 0}, /* past U+10FFFF */
        {"\xf5\x80\x80\x80", 0}, /* no lead byte */
        {"\xe2\x82", 0},         /* cut short by the end */
        {"\x80", 0},             /* a continuation alone */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        assert_int_equal(utf8_valid((const unsigned char *)cases[i].bytes), cases[i].len);
    assert_int_equal(utf8_lead_len(0xdf), 2);
    assert_int_equal(utf8_lead_len(0xc1), 0);
    assert_int_equal(utf8_lead_len(0xf4), 4);
    assert_int_equal(utf8_lead_len('a'), 0);
    /* a terminal's view: C1 and bidi controls are escaped, other characters kept */
    char buf[64];
    assert_string_equal(str_escaped(buf, sizeof(buf),
                                    "a\xc2\x85\xe2\x80\xae"
                                    "b\xc3\xa9",
                                    64),
                        "a\\xc2\\x85\\xe2\\x80\\xae"
                        "b\xc3\xa9");
}

static void test_bool(void **state)
{
    (void)state;
    bool b = false;
    assert_true(parse_bool("yes", &b) && b);
    assert_true(parse_bool("On", &b) && b);
    assert_true(parse_bool("1", &b) && b);
    assert_true(parse_bool("no", &b) && !b);
    assert_true(parse_bool("FALSE", &b) && !b);
    assert_false(parse_bool("maybe", &b));
    assert_non_null(strstr(parse_error(), "maybe"));
    assert_false(parse_bool("", &b));
}

static void test_long(void **state)
{
    (void)state;
    long v;
    assert_true(parse_long("-1000", -1000, 1000, &v) && v == -1000);
    assert_false(parse_long("1001", -1000, 1000, &v));
    assert_non_null(strstr(parse_error(), "out of range"));
    assert_false(parse_long("12x", 0, 100, &v));
    assert_false(parse_long(" 1", 0, 100, &v));
    assert_false(parse_long("", 0, 100, &v));
    assert_false(parse_long("99999999999999999999999", 0, 100, &v));
    assert_string_equal(parse_error(), "'99999999999999999999999' is out of range 0..100");
    assert_true(parse_error_is_range());
    assert_false(parse_long("12x", 0, 100, &v));
    assert_false(parse_error_is_range());
}

static void test_size(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(parse_size("4096", &v) && v == 4096);
    assert_true(parse_size("512k", &v) && v == 512ULL << 10);
    assert_true(parse_size("64M", &v) && v == 64ULL << 20);
    assert_true(parse_size("64MB", &v) && v == 64ULL << 20);
    assert_true(parse_size("64MiB", &v) && v == 64ULL << 20);
    assert_true(parse_size("2g", &v) && v == 2ULL << 30);
    assert_true(parse_size("1T", &v) && v == 1ULL << 40);
    assert_true(parse_size("100b", &v) && v == 100);
    assert_false(parse_size("1.5G", &v));
    assert_false(parse_size("G", &v));
    assert_false(parse_size("-1", &v));
    assert_false(parse_size("4X", &v));
    assert_false(parse_size("4Mx", &v));
    assert_false(parse_size("4bib", &v));
    assert_false(parse_size("99999999999999999999P", &v));
    assert_false(parse_size("16777216T", &v)); /* 2^64: wraps */

    /* too big to hold is out of range, with the range, not "not a number" */
    assert_true(parse_size("18446744073709551615", &v) && v == UINT64_MAX);
    assert_false(parse_size("18446744073709551616", &v));
    assert_string_equal(parse_error(), "'18446744073709551616' is out of range "
                                       "0..18446744073709551615 bytes (16 EiB less one)");
    assert_true(parse_error_is_range());
    assert_false(parse_size("16777216T", &v));
    assert_true(parse_error_is_range());
    assert_false(parse_size("4X", &v));
    assert_false(parse_error_is_range());
}

static void test_rlim(void **state)
{
    (void)state;
    rlim_t s, h;
    assert_true(parse_rlim_pair("65535", &s, &h) && s == 65535 && h == 65535);
    assert_true(parse_rlim_pair("1024:4096", &s, &h) && s == 1024 && h == 4096);
    assert_true(parse_rlim_pair("unlimited", &s, &h) && s == RLIM_INFINITY && h == RLIM_INFINITY);
    assert_true(parse_rlim_pair("8M:unlimited", &s, &h) && s == 8ULL << 20 && h == RLIM_INFINITY);
    assert_true(parse_rlim_pair(" 10 : 20 ", &s, &h) && s == 10 && h == 20);
    assert_false(parse_rlim_pair("4096:1024", &s, &h));
    assert_non_null(strstr(parse_error(), "soft limit above hard"));
    assert_false(parse_rlim_pair("unlimited:10", &s, &h));
    assert_false(parse_rlim_pair("lots", &s, &h));
    assert_false(parse_rlim_pair("1:2:3", &s, &h));

    /* a number too big is out of range, with the range, also as a hard limit */
    assert_false(parse_rlim_pair("99999999999999999999999", &s, &h));
    assert_string_equal(parse_error(), "'99999999999999999999999' is out of range "
                                       "0..18446744073709551614 (or unlimited)");
    assert_false(parse_rlim_pair("1:18446744073709551615", &s, &h)); /* RLIM_INFINITY's value */
    assert_non_null(strstr(parse_error(), "is out of range 0..18446744073709551614"));
    assert_false(parse_rlim_pair("1:99999999999999999999P", &s, &h));
    assert_non_null(strstr(parse_error(), "is out of range"));
    assert_false(parse_rlim_pair("lots", &s, &h));
    assert_string_equal(parse_error(), "'lots' is not a number or 'unlimited'");
}

static void test_trim(void **state)
{
    (void)state;
    char buf[] = "  a b \t\n";
    assert_string_equal(str_trim(buf), "a b");
}

/* A registry line's CPU lists: hwloc parses them, after a bound on the indexes. */
/* A claim fd's inode from fdinfo's lock line, for kernels before 5.14 (no "ino:" line). */
static void test_lock_ino(void **state)
{
    (void)state;
    assert_int_equal(procs_lock_ino("\t1: OFDLCK ADVISORY  READ -1 fe:00:10989516 0 EOF\n"),
                     10989516);
    assert_int_equal(procs_lock_ino("\t1: OFDLCK ADVISORY  READ -1 00:2e:77 0 EOF"), 77);
    /* the next line's inode is not this one's, and a line without one says 0 */
    assert_int_equal(procs_lock_ino("\t1: OFDLCK ADVISORY READ -1\nino:\t5 00:2e:77 0\n"), 0);
    assert_int_equal(procs_lock_ino(""), 0);
}

static void test_registry_line(void **state)
{
    (void)state;
    struct claim c;
    bool ended;
    assert_true(
        registry_parse_line("claim.a.1 profile=a cpus=0-3,8 nodes=0 mem_nodes=none", &c, &ended));
    assert_false(ended);
    assert_int_equal(hwloc_bitmap_weight(c.cpus), 5);
    assert_true(hwloc_bitmap_iszero(c.mem_nodes));
    claim_free(&c);
    assert_true(registry_parse_line("ended claim.a.1 profile=a cpus=1", &c, &ended));
    assert_true(ended);
    claim_free(&c);
    /* an index that would make hwloc allocate a gigabyte, an infinite set, a path */
    assert_false(registry_parse_line("claim.a.1 profile=a cpus=0-99999999999", &c, &ended));
    claim_free(&c);
    /* Linux's last possible CPU, and one past it: a line never costs more than 1 KiB a set */
    assert_true(registry_parse_line("claim.a.1 profile=a cpus=8191 nodes=0", &c, &ended));
    claim_free(&c);
    assert_false(registry_parse_line("claim.a.1 profile=a cpus=8192 nodes=0", &c, &ended));
    claim_free(&c);
    assert_false(registry_parse_line("claim.a.1 profile=a cpus=0-", &c, &ended));
    claim_free(&c);
    assert_false(registry_parse_line("claim.a/../x profile=a cpus=0", &c, &ended));
    claim_free(&c);
    assert_false(registry_parse_line("claim.a.1 profile=a cpus=", &c, &ended));
    claim_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bool),     cmocka_unit_test(test_long),
        cmocka_unit_test(test_size),     cmocka_unit_test(test_rlim),
        cmocka_unit_test(test_trim),     cmocka_unit_test(test_registry_line),
        cmocka_unit_test(test_lock_ino), cmocka_unit_test(test_long_message),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
