/*
 * test_yield.c - what a shared pool gets back when the service it yielded
 * CPUs to has ended (yield_return.c): the record a yield keeps, written
 * and read back, and anything else refused; which CPUs come back past the
 * services still running; and what each thread gets, moved or born since.
 */
#include "yield.h"
#include "fixture.h"
#include "util.h"

static hwloc_bitmap_t set(const char *list)
{
    hwloc_bitmap_t s = hwloc_bitmap_alloc();
    if (!bitmap_parse(s, list))
        fail_msg("'%s' is no list", list);
    return s;
}

static void assert_set(hwloc_const_bitmap_t s, const char *want)
{
    char *got = bitmap_list(s);
    if (strcmp(got, want) != 0)
        fail_msg("got '%s', want '%s'", got, want);
    free(got);
}

static void add_pool(struct yield *y, size_t shrink, const char *file, long pid, const char *cpus,
                     const char *gave)
{
    y->claims = xrealloc(y->claims, (y->nclaims + 1) * sizeof(*y->claims));
    y->claims[y->nclaims++] = (struct shrunk_claim){
        shrink, xstrdup(file), set(cpus), set("0"), true, set(gave), pid, 1000ULL + (unsigned)pid};
}

static void add_thread(struct yield *y, size_t shrink, long pid, long tid, const char *was,
                       const char *to)
{
    y->threads = xrealloc(y->threads, (y->nthreads + 1) * sizeof(*y->threads));
    y->threads[y->nthreads++] = (struct moved_thread){tid, pid, shrink, set(was), set(to)};
}

/* y written as a record and read back into back; returns the profile it names. */
static char *read_back(const struct yield *y, struct yield *back)
{
    char *text = yield_records_format(y, "mysql"), *by = NULL;
    struct err e;
    if (!yield_records_parse(text, back, &by, &e))
        fail_msg("%s in:\n%s", e.msg, text);
    free(text);
    return by;
}

/* What a yield kept reads back as it was: pools by index, the seen threads that did not move. */
static void test_records_round_trip(void **state)
{
    (void)state;
    struct yield y = {0}, back = {0};
    add_pool(&y, 0, "claim.nginx.00000000000000aa", 100, "0-7", "0-3");
    add_pool(&y, 2, "claim.haproxy.00000000000000bb", 200, "0-7", "2-3");
    add_thread(&y, 0, 100, 100, "0-7", "4-7");
    add_thread(&y, 0, 100, 101, "2", "4-7");
    add_thread(&y, 2, 200, 201, "0-7", "0-1,4-7");
    add_thread(&y, 1, 300, 301, "0-7", "4-7"); /* a shrink whose claim did not change */
    for (long tid = 99; tid <= 103; tid++)
        pid_list_add(&y.seen, tid);
    pid_list_add(&y.seen, 201); /* moved, and last: the record still ends its line */
    char *text = yield_records_format(&y, "mysql");
    assert_int_equal(text[strlen(text) - 1], '\n');
    free(text);
    char *by = read_back(&y, &back);
    assert_string_equal(by, "mysql");
    assert_int_equal(back.nclaims, 2);
    assert_string_equal(back.claims[1].file, "claim.haproxy.00000000000000bb");
    assert_int_equal(back.claims[1].shrink, 1);
    assert_int_equal(back.claims[1].pid, 200);
    assert_true(back.claims[1].start == 1200);
    assert_set(back.claims[0].cpus, "0-7");
    assert_set(back.claims[0].nodes, "0");
    assert_set(back.claims[0].gave, "0-3");
    assert_set(back.claims[1].gave, "2-3");
    /* the thread of the shrink that changed nothing is not kept: there is nothing to give back */
    assert_int_equal(back.nthreads, 3);
    assert_int_equal(back.threads[1].tid, 101);
    assert_int_equal(back.threads[1].pid, 100);
    assert_int_equal(back.threads[1].shrink, 0);
    assert_set(back.threads[1].was, "2");
    assert_set(back.threads[1].to, "4-7");
    assert_int_equal(back.threads[2].shrink, 1);
    assert_set(back.threads[2].to, "0-1,4-7");
    /* seen: those the yield left alone, not the moved ones, sorted */
    assert_int_equal(back.seen.n, 3);
    assert_int_equal(back.seen.v[0], 99);
    assert_int_equal(back.seen.v[1], 102);
    assert_int_equal(back.seen.v[2], 103);
    free(by);
    yield_free(&y);
    yield_free(&back);
}

/* Many seen threads are cut into lines of their own, and read back whole. */
static void test_records_many_seen(void **state)
{
    (void)state;
    struct yield y = {0}, back = {0};
    add_pool(&y, 0, "claim.nginx.1", 100, "0-1", "0");
    for (long tid = 1; tid <= 1300; tid++)
        pid_list_add(&y.seen, tid);
    char *by = read_back(&y, &back);
    assert_int_equal(back.seen.n, 1300);
    assert_int_equal(back.seen.v[1299], 1300);
    free(by);
    yield_free(&y);
    yield_free(&back);
}

/* Anything but what tunerun writes is refused whole, never half read. */
static void test_records_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "pool claim.n.1 pid=1 start=2 cpus=0 nodes=0 gave=0\n", /* no `by` */
        "by mysql\nby redis\n",                                 /* twice */
        "by my\033[2Jsql\n",        /* a name no profile has, that a terminal would obey */
        "by mysql\nwhat is this\n", /* another kind */
        "by mysql\npool claim.n/../x pid=1 start=2 cpus=0 nodes=0 gave=0\n", /* a path */
        "by mysql\npool other.n.1 pid=1 start=2 cpus=0 nodes=0 gave=0\n",    /* no claim */
        "by mysql\npool claim.n.1 pid=-1 start=2 cpus=0 nodes=0 gave=0\n",
        "by mysql\npool claim.n.1 pid=1 start=99999999999999999999 cpus=0 nodes=0 gave=0\n",
        "by mysql\npool claim.n.1 pid=1 start=2 cpus=0-99999 nodes=0 gave=0\n",
        "by mysql\npool claim.n.1 pid=1 start=2 cpus=0 nodes=0\n", /* gave missing */
        "by mysql\nmoved 0 pid=1 tid=2 was=0 to=1\n",              /* no pool 0 */
        "by mysql\npool claim.n.1 pid=1 start=2 cpus=0 nodes=0 gave=0\nmoved 1 pid=1 tid=2 was=0 "
        "to=1\n",
        "by mysql\npool claim.n.1 pid=1 start=2 cpus=0 nodes=0 gave=0\nmoved 0 pid=1 tid=x was=0 "
        "to=1\n",
        "by mysql\nseen 1,,2\n",
        "by mysql\nseen 1,2,\n",
        "by mysql\nseen 12345678901234567890123\n",
        "by mysql\nseen a b c d e f g h i j k l m n o p q r\n", /* more words than any line has */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct yield y = {0};
        char *by = NULL;
        struct err e;
        if (yield_records_parse(bad[i], &y, &by, &e))
            fail_msg("accepted: %s", bad[i]);
        free(by);
        yield_free(&y);
    }
}

static struct claim claim_of(const char *profile, const char *cpus, bool pool, bool exclusive,
                             const char *avoid)
{
    struct claim k;
    claim_init(&k);
    k.profile = xstrdup(profile);
    k.file = xasprintf("claim.%s.1", profile);
    bitmap_parse(k.cpus, cpus);
    k.pool = pool;
    k.exclusive = exclusive;
    k.avoid = xcalloc(1, sizeof(char *));
    if (avoid) {
        k.avoid[0] = xstrdup(avoid);
        k.navoid = 1;
    }
    return k;
}

/*
 * What comes back: what the pool lacks of what it gave, past every live
 * placed service it must keep apart from; a service it shares with, and
 * another pool, keep it from nothing.
 */
static void test_returnable(void **state)
{
    (void)state;
    struct {
        struct claim other;
        const char *want;
    } cases[] = {
        {claim_of("mysql", "1", false, false, "nginx"), "0"},      /* it avoids the pool */
        {claim_of("postgresql", "0", false, false, NULL), "1"},    /* the pool avoids it */
        {claim_of("q", "0", false, true, NULL), "1"},              /* exclusive */
        {claim_of("redis", "0-1", false, false, NULL), "0-1"},     /* shares with the pool */
        {claim_of("haproxy", "0-7", true, false, "nginx"), "0-1"}, /* another pool */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct claim k[2] = {claim_of("nginx", "2-7", true, false, "postgresql"), cases[i].other};
        hwloc_bitmap_t gave = set("0-1"), out = hwloc_bitmap_alloc();
        yield_returnable(k, 2, 0, gave, out);
        assert_set(out, cases[i].want);
        /* a pool that kept what it gave (a thread did not move) gets nothing more */
        bitmap_parse(k[0].cpus, "0-7");
        yield_returnable(k, 2, 0, gave, out);
        assert_set(out, "none");
        hwloc_bitmap_free(gave);
        hwloc_bitmap_free(out);
        claim_free(&k[0]);
        claim_free(&k[1]);
    }
}

/* yield_thread_back() of pool 0's thread tid of process pid, on cur. */
static void expect_back(const struct yield *y, long pid, long tid, const char *cur,
                        const char *give, const char *holds, const char *want)
{
    hwloc_bitmap_t c = set(cur), g = set(give), h = set(holds), out = hwloc_bitmap_alloc();
    yield_thread_back(y, 0, pid, tid, c, g, h, out);
    char *got = bitmap_list(out);
    if (strcmp(got, want) != 0)
        fail_msg("thread %ld of %ld on %s, given %s: got '%s', want '%s'", tid, pid, cur, give, got,
                 want);
    free(got);
    hwloc_bitmap_free(c);
    hwloc_bitmap_free(g);
    hwloc_bitmap_free(h);
    hwloc_bitmap_free(out);
}

/*
 * Each thread back where it was, within what the pool holds: pinned ones
 * pinned again, ones moved since given only what comes back, ones the
 * yield left alone left alone; one born since of a moved one as its
 * creator, one the service placed itself left alone.
 */
static void test_thread_back(void **state)
{
    (void)state;
    struct yield y = {0};
    add_pool(&y, 0, "claim.nginx.1", 100, "0-3", "0");
    add_thread(&y, 0, 100, 100, "0-3", "1-3"); /* on every CPU */
    add_thread(&y, 0, 100, 101, "0", "1-3");   /* a worker pinned to the CPU given up */
    add_thread(&y, 1, 100, 102, "0-3", "2-3"); /* another pool's record */
    pid_list_add(&y.seen, 105);                /* pinned by the service to CPU 1-3 itself */
    expect_back(&y, 100, 100, "1-3", "0", "0-3", "0-3");
    expect_back(&y, 100, 101, "1-3", "0", "0-3", "0");
    /* nothing came back (a service it keeps apart from holds CPU 0 now) */
    expect_back(&y, 100, 100, "1-3", "none", "1-3", "1-3");
    expect_back(&y, 100, 101, "1-3", "none", "1-3", "1-3");
    /* moved since (a reload re-pinned it): where it went, and what it had of what comes back */
    expect_back(&y, 100, 100, "2", "0", "0-3", "0,2");
    expect_back(&y, 100, 101, "3", "0", "0-3", "0,3");
    expect_back(&y, 100, 105, "1-3", "0", "0-3", "1-3");
    /* born since, on the set the yield moved threads to: of any process of the pool */
    expect_back(&y, 100, 110, "1-3", "0", "0-3", "0-3");
    expect_back(&y, 120, 121, "1-3", "0", "0-3", "0-3");
    /* a moved thread's id in another process is not that thread: born since, as any other */
    expect_back(&y, 120, 101, "1-3", "0", "0-3", "0-3");
    /* on a set of its own: the service placed it, and it stays */
    expect_back(&y, 100, 111, "2-3", "0", "0-3", "2-3");
    yield_free(&y);
}

/*
 * Two services took CPU 0 and then CPU 1 from a pool on 0-3: whichever
 * ends first, a thread of the pool is on all four once both have.
 */
static void test_thread_back_two_services(void **state)
{
    (void)state;
    struct yield first = {0}, second = {0};
    add_pool(&first, 0, "claim.nginx.1", 100, "0-3", "0");
    add_thread(&first, 0, 100, 100, "0-3", "1-3");
    add_pool(&second, 0, "claim.nginx.1", 100, "1-3", "1");
    add_thread(&second, 0, 100, 100, "1-3", "2-3");
    /* the first ends first: the pool then holds 0,2-3 */
    expect_back(&first, 100, 100, "2-3", "0", "0,2-3", "0,2-3");
    expect_back(&second, 100, 100, "0,2-3", "1", "0-3", "0-3");
    /* the second ends first: the pool then holds 1-3 */
    expect_back(&second, 100, 100, "2-3", "1", "1-3", "1-3");
    expect_back(&first, 100, 100, "1-3", "0", "0-3", "0-3");
    yield_free(&first);
    yield_free(&second);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_round_trip), cmocka_unit_test(test_records_many_seen),
        cmocka_unit_test(test_records_refused),    cmocka_unit_test(test_returnable),
        cmocka_unit_test(test_thread_back),        cmocka_unit_test(test_thread_back_two_services),
    };
    return cmocka_run_group_tests_name("yield", tests, NULL, NULL);
}
