/* test_profile.c - INI loading, includes, validation and --set (profile.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "privs.h"
#include "profile.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/tunerun-test-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Write tmpdir/sub/name and return its path (static buffer per call site). */
static const char *write_file(const char *sub, const char *name, const char *text)
{
    static char path[8][256];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, sub);
    mkdir(p, 0755);
    snprintf(p, 256, "%s/%s/%s", tmpdir, sub, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static struct profile_paths paths_in(const char *sub1, const char *sub2)
{
    static char d1[256], d2[256];
    struct profile_paths ps = {{0}, {0}, 0, NULL, NULL};
    snprintf(d1, sizeof(d1), "%s/%s", tmpdir, sub1);
    ps.dirs[ps.n] = d1;
    ps.labels[ps.n++] = "admin";
    if (sub2) {
        snprintf(d2, sizeof(d2), "%s/%s", tmpdir, sub2);
        ps.dirs[ps.n] = d2;
        ps.labels[ps.n++] = "installed";
    }
    return ps;
}

/* Load text as a profile file; return the error message ("" on success). */
static const char *load_error(const char *text)
{
    static struct err e;
    struct profile p;
    const char *path = write_file("e", "bad.ini", text);
    e.msg[0] = '\0';
    if (profile_load(&p, path, NULL, &e)) {
        profile_free(&p);
        return "";
    }
    return e.msg;
}

static void test_shipped_profiles_load(void **state)
{
    (void)state;
    static const char *const names[] = {"mysql",      "redis",     "nginx",  "java",
                                        "postgresql", "memcached", "haproxy"};
    struct profile_paths ps = {{"profiles"}, {"tree"}, 1, NULL, NULL};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct profile p;
        struct err e;
        char *path = profile_find(names[i], &ps, NULL);
        assert_non_null(path);
        if (!profile_load(&p, path, &ps, &e))
            fail_msg("%s: %s", path, e.msg);
        assert_string_equal(p.name, names[i]);
        assert_non_null(p.fears);
        profile_free(&p);
        free(path);
    }
}

/* [host]: PostgreSQL's wishes of the host, and a profile without them has none. */
static void test_host_values(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    assert_true(profile_load(&p, "profiles/postgresql.ini", NULL, &e));
    assert_int_equal(p.host.overcommit_memory, 2);
    assert_non_null(strstr(p.host.overcommit_at.file, "postgresql.ini"));
    assert_int_equal(p.host.hugepages, HUGEPAGES_POSTGRESQL);
    assert_true(profile_set(&p, "host.overcommit_memory=", &e));
    assert_int_equal(p.host.overcommit_memory, -1);
    assert_true(profile_set(&p, "host.hugepages=none", &e));
    assert_int_equal(p.host.hugepages, HUGEPAGES_NONE);
    profile_free(&p);
    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));
    assert_int_equal(p.host.overcommit_memory, -1);
    assert_int_equal(p.host.hugepages, HUGEPAGES_NONE);
    profile_free(&p);
}

static void test_mysql_values(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));
    assert_int_equal(p.placement.nodes, 1);
    assert_int_equal(p.placement.cpus, CPUS_NODE);
    assert_int_equal(p.placement.memory, MEM_BIND);
    assert_int_equal(p.memory.thp, THP_MADVISE);
    assert_int_equal(p.memory.arena, ARENA_UNSET);
    assert_true(p.limits[RLIMIT_NOFILE].set);
    assert_int_equal(p.limits[RLIMIT_NOFILE].soft, 65535);
    assert_int_equal(p.placement.navoid, 1);
    assert_string_equal(p.placement.avoid[0], "nginx");
    assert_string_equal(p.placement.near, "/var/lib/mysql");
    profile_free(&p);

    assert_true(profile_load(&p, "profiles/nginx.ini", NULL, &e));
    assert_int_equal(p.memory.arena, ARENA_VALUE);
    assert_int_equal(p.memory.arena_value, 4);
    assert_string_equal(p.placement.avoid[0], "mysql");
    profile_free(&p);

    assert_true(profile_load(&p, "profiles/redis.ini", NULL, &e));
    assert_int_equal(p.memory.thp, THP_NEVER);
    profile_free(&p);
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    const char *m;
    m = load_error("[placement]\nnodes = 1\n\n[bogus]\nx = 1\n");
    assert_non_null(strstr(m, "bad.ini:4: unknown section [bogus]"));

    m = load_error("[placement]\nnodes = 1\n[ empty ]\n");
    assert_non_null(strstr(m, "bad.ini:3: unknown section [empty]"));

    /* tunerun.ini(5): "A key outside any section is an error" */
    m = load_error("# before any section\nnodes = 1\n[placement]\n");
    assert_non_null(strstr(m, "bad.ini:2: 'nodes' is a key outside any section; put it under its "
                              "[section] (known: profile, placement, memory, limits, env, args, "
                              "host, java, security)"));
    assert_null(strstr(m, "[]"));

    m = load_error("[placement]\nnodes = 1\nnodez = 2\n");
    assert_non_null(strstr(m, "bad.ini:3: placement.nodez: unknown key"));
    assert_non_null(strstr(m, "nodes"));

    m = load_error("# comment\n[placement]\nnodes = many\n");
    assert_non_null(strstr(m, "bad.ini:3: placement.nodes:"));

    m = load_error("[memory]\nthp = always\n");
    assert_non_null(strstr(m, "bad.ini:2: memory.thp: 'always' is not one of"));

    m = load_error("[memory]\noom_score_adj = -2000\n");
    assert_non_null(strstr(m, "bad.ini:2:"));

    m = load_error("[host]\novercommit_memory = 3\n");
    assert_non_null(strstr(m, "bad.ini:2: host.overcommit_memory: '3' is not one of 0 (heuristic), "
                              "1 (always) or 2 (strict)"));
    m = load_error("[host]\novercommit_memory = 02\n");
    assert_non_null(strstr(m, "bad.ini:2: host.overcommit_memory: '02' is not one of"));
    m = load_error("[host]\nhugepages = mysql\n");
    assert_non_null(strstr(m, "bad.ini:2: host.hugepages: 'mysql' is not one of"));

    m = load_error("[limits]\nnofile = 10:5\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.nofile: soft limit above hard"));

    m = load_error("[limits]\nnofile = 3000000000\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.nofile: 3000000000 open files is more than "
                              "fs.nr_open may ever be raised to (2147483584)"));
    m = load_error("[limits]\nnofile = 1024:unlimited\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.nofile: 'unlimited' is no limit Linux can set"));

    m = load_error("[limits]\nfiles = 10\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.files: unknown limit"));

    /* [args]: each option as the command may spell it, its value, and the command it is for */
    m = load_error("[args]\nfor = memcached\n-t = ${threads}\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-t: unknown variable ${threads} (known: cpus"));
    m = load_error("[args]\nfor = memcached\nt = 4\n");
    assert_non_null(strstr(m, "bad.ini:3: args.t: 't' is not an option (one starts with '-'"));
    m = load_error("[args]\nfor = memcached\n-t||--threads = 4\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-t||--threads: an empty spelling"));
    m = load_error("[args]\nfor = memcached\n-c max name = 4\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-c max name: 'max name' after the option is not "
                              "a setting's name"));
    m = load_error("[args]\nfor = memcached\n-t = =\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-t: '=' and no value"));
    m = load_error("[args]\nfor = memcached\n-t = 4\nfor =\n-m = 64\n");
    assert_non_null(strstr(m, "bad.ini:5: args.-m: [args] names no command they are for"));
    m = load_error("[args]\nfor = memcached\n-t = =4\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-t: '=' joins a long option"));
    m = load_error("[args]\nfor = memcached\n-t|--threads|-t = 4\n");
    assert_non_null(strstr(m, "bad.ini:3: args.-t|--threads|-t: '-t' is spelled twice"));
    m = load_error("[args]\nfor = /usr/bin/memcached\n");
    assert_non_null(strstr(m, "bad.ini:2: args.for: '/usr/bin/memcached' is not a command's name"));
    m = load_error("[args]\n-t = ${ncpus}\n");
    assert_non_null(strstr(m, "bad.ini:2: args.-t: [args] names no command they are for: add "
                              "`for = NAME`"));

    m = load_error("[placement]\nthis line has no equals sign\n");
    assert_non_null(strstr(m, "bad.ini:2: syntax error"));

    /* a NUL byte: no text, and the line it is on */
    const char *nul = write_file("e", "nul.ini", "");
    FILE *f = fopen(nul, "w");
    assert_non_null(f);
    fwrite("[placement]\nnodes = 1\nx\0y\n", 1, 26, f);
    fclose(f);
    struct profile p;
    struct err e;
    assert_false(profile_load(&p, nul, NULL, &e));
    assert_non_null(strstr(e.msg, "nul.ini:3: a NUL byte; not a text profile"));

    /* a value is UTF-8 text: no C1 control, no bidi control, no stray byte; others are text */
    m = load_error("[profile]\ndescription = A\xc2\x9b"
                   "2J\n");
    assert_non_null(strstr(m, "bad.ini:2: profile.description: '\\xc2\\x9b' in the value"));
    m = load_error("[env]\nX = a\xe2\x80\xae"
                   "evil\n");
    assert_non_null(strstr(m, "bad.ini:2: env.X: '\\xe2\\x80\\xae' in the value"));
    m = load_error("[env]\nX = \xff\n");
    assert_non_null(strstr(m, "bad.ini:2: env.X: '\\xff' in the value: a value is UTF-8 text"));
    assert_string_equal(load_error("[profile]\ndescription = caf\xc3\xa9, 10 \xe2\x82\xac\n"), "");

    /* what inih would read other than as written: a key after a header, old Mac line ends */
    m = load_error("[placement]\nnodes = 1\n[memory] thp = bogus\n");
    assert_non_null(strstr(m, "bad.ini:3: text after the section header"));
    m = load_error("[placement]\rnodes = bogus\rcpus = -3\r");
    assert_non_null(strstr(m, "bad.ini:1: a carriage return inside a line"));
    m = load_error("[placement]\nnodes = 1\n[bogus] x = 1\n[memory] thp = never\n");
    assert_non_null(strstr(m, "bad.ini:3: unknown section [bogus]")); /* the first, and its */
    assert_string_equal(load_error("[memory] ; a comment\r\nthp = never\r\n[limits] # too\r\n"),
                        "");

    /* where inih starts a line: past a byte order mark on the first, past \v and \f too */
    m = load_error("\xef\xbb\xbf[memory] thp = never\n");
    assert_non_null(strstr(m, "bad.ini:1: text after the section header"));
    m = load_error("\xef\xbb\xbf[bogus]\n");
    assert_non_null(strstr(m, "bad.ini:1: unknown section [bogus]"));
    m = load_error("[memory]\n\f[bogus]\n");
    assert_non_null(strstr(m, "bad.ini:2: unknown section [bogus]"));
    m = load_error("\v[memory] thp = never\n");
    assert_non_null(strstr(m, "bad.ini:1: text after the section header"));
    assert_string_equal(load_error("\xef\xbb\xbf[memory]\nthp = never\n"), "");
    assert_string_equal(load_error("[memory]\f\v\nthp = never\n"), "");
    /* an indented line after a key continues it: an indented [section] would not start one */
    m = load_error("[env]\nFOO = bar\n  [security]\nuser = root\n");
    assert_non_null(strstr(m, "bad.ini:3: an indented line after a key continues that key, and "
                              "replaces its value: unindent it"));
    m = load_error("[profile]\ndescription = first\n\n; between\n   second\n");
    assert_non_null(strstr(m, "bad.ini:5: an indented line after a key continues"));
    /* indented keys right after a header, and indented comments, are what they look like */
    assert_string_equal(load_error("[memory]\n  thp = never\n  ; a note\n[limits]\n\tcore = 0\n"),
                        "");

    m = load_error("[env]\nLD_PRELOAD = /tmp/evil.so\n");
    assert_non_null(strstr(m, "bad.ini:2: env.LD_PRELOAD: a loader variable"));
    assert_non_null(strstr(m, "[security] loader_env = LD_PRELOAD"));
    m = load_error("[env]\nGCONV_PATH = /tmp/x\n");
    assert_non_null(strstr(m, "bad.ini:2: env.GCONV_PATH: a loader variable"));
    m = load_error("[security]\nloader_env = PATH\n");
    assert_non_null(strstr(m, "'PATH' is not a loader variable"));

    m = load_error("[env]\nHWLOC_XMLFILE = /x\n");
    assert_non_null(strstr(m, "bad.ini:2:"));

    m = load_error("[env]\nX = ${cores}\n");
    assert_non_null(strstr(m, "unknown variable ${cores}"));

    m = load_error("[env]\nMALLOC_ARENA_MAX = 2\n");
    assert_non_null(strstr(m, "malloc_arena_max"));

    m = load_error("[java]\nmax_ram = 100K\n");
    assert_non_null(strstr(m, "bad.ini:2: java.max_ram: '100K' is not auto, off or a size"));

    m = load_error("[placement]\nnear = var/lib/mysql\n");
    assert_non_null(strstr(m, "bad.ini:2: placement.near: 'var/lib/mysql' is neither an absolute "
                              "path nor netdev:IF, ip:ADDR or default-route"));
    m = load_error("[placement]\nnear = netdev:eth0/1\n");
    assert_non_null(strstr(m, "bad.ini:2: placement.near: "));
    m = load_error("[placement]\nnear = ip:0.0.0.0\n");
    assert_non_null(strstr(m, "bad.ini:2: placement.near: 0.0.0.0 listens on every interface"));
    assert_string_equal(load_error("[placement]\nnear = /srv/db\nnear =\n"), "");

    m = load_error("[placement]\ncpus = 150%\n");
    assert_non_null(strstr(m, "bad.ini:2: placement.cpus"));

    char longline[400];
    memset(longline, 'x', sizeof(longline));
    memcpy(longline, "[env]\nA = ", 10);
    strcpy(longline + sizeof(longline) - 2, "\n");
    m = load_error(longline);
    assert_non_null(strstr(m, "bad.ini:2: line too long"));

    assert_string_equal(load_error("[placement]\nnodes = all\ncpus = 50%\n"), "");
}

static void test_include_overrides(void **state)
{
    (void)state;
    write_file("inc", "base.ini",
               "[placement]\nnodes = 2\nmemory = interleave\n"
               "[limits]\nnofile = 100\n[env]\nA = base\nB = base\n");
    const char *top = write_file("inc", "top.ini",
                                 "[placement]\nnodes = 1\n"
                                 "[profile]\ninclude = base\n[env]\nB = top\n");
    struct profile_paths ps = paths_in("inc", NULL);
    struct profile p;
    struct err e;
    if (!profile_load(&p, top, &ps, &e))
        fail_msg("%s", e.msg);
    /* the including file wins, even for keys written before its include line */
    assert_int_equal(p.placement.nodes, 1);
    assert_int_equal(p.placement.memory, MEM_INTERLEAVE);
    assert_int_equal(p.limits[RLIMIT_NOFILE].soft, 100);
    assert_int_equal(p.nenv, 2);
    assert_string_equal(p.env[0].value, "base");
    assert_string_equal(p.env[1].value, "top");
    assert_string_equal(p.name, "top");
    assert_int_equal(p.nfiles, 2);
    profile_free(&p);
}

static void test_include_same_name_extends_next(void **state)
{
    (void)state;
    /* /etc/tunerun/profiles/mysql.ini says include = mysql to extend the shipped one */
    write_file("shipped", "mysql.ini", "[placement]\nnodes = 1\nmemory = bind\n");
    const char *admin = write_file("admin", "mysql.ini",
                                   "[profile]\ninclude = mysql\n[placement]\nmemory = auto\n");
    struct profile_paths ps = paths_in("admin", "shipped");
    struct profile p;
    struct err e;
    if (!profile_load(&p, admin, &ps, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(p.placement.nodes, 1);
    assert_int_equal(p.placement.memory, MEM_AUTO);
    profile_free(&p);
}

static void test_include_cycle_and_missing(void **state)
{
    (void)state;
    write_file("cyc", "a.ini", "[profile]\ninclude = b\n");
    write_file("cyc", "b.ini", "[profile]\ninclude = c\n");
    const char *c = write_file("cyc", "c.ini", "[profile]\ninclude = a\n");
    struct profile_paths ps = paths_in("cyc", NULL);
    struct profile p;
    struct err e;
    assert_false(profile_load(&p, c, &ps, &e));
    assert_non_null(strstr(e.msg, "include cycle"));
    assert_non_null(strstr(e.msg, "c.ini:2"));

    /* a bare name is found next to the including file, even off the search path */
    write_file("side", "base.ini", "[placement]\nnodes = 3\n");
    const char *side = write_file("side", "top.ini", "[profile]\ninclude = base\n");
    if (!profile_load(&p, side, &ps, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(p.placement.nodes, 3);
    profile_free(&p);

    const char *m = write_file("cyc", "m.ini", "[profile]\ninclude = nosuch\n");
    assert_false(profile_load(&p, m, &ps, &e));
    assert_non_null(strstr(e.msg, "m.ini:2: profile.include: no profile 'nosuch' found"));
    ps.unsearched = "profiles/ next to tunerun's binary was not searched: why";
    assert_false(profile_load(&p, m, &ps, &e));
    assert_non_null(strstr(e.msg, "'nosuch' found; profiles/ next to tunerun's binary was not "
                                  "searched: why"));
    ps.unsearched = NULL;

    const char *self = write_file("cyc", "self.ini", "[profile]\ninclude = ./self.ini\n");
    assert_false(profile_load(&p, self, &ps, &e));
    assert_non_null(strstr(e.msg, "include cycle"));

    /* an empty element of the list is a slip, not a way to say nothing */
    write_file("cyc", "x.ini", "[memory]\nthp = never\n");
    const char *holes[][2] = {
        {"[profile]\ninclude = x,,x\n", "holes.ini:2: profile.include: an empty name in 'x,,x'"},
        {"[profile]\ninclude = x,\n", "holes.ini:2: profile.include: an empty name in 'x,'"},
        {"[profile]\ninclude = , x\n", "holes.ini:2: profile.include: an empty name in ', x'"},
        {"[profile]\ninclude =\n", "holes.ini:2: profile.include: no name given"},
    };
    for (size_t i = 0; i < sizeof(holes) / sizeof(holes[0]); i++) {
        const char *h = write_file("cyc", "holes.ini", holes[i][0]);
        assert_false(profile_load(&p, h, &ps, &e));
        if (strstr(e.msg, holes[i][1]) == NULL)
            fail_msg("%s: got %s", holes[i][0], e.msg);
    }
    const char *two = write_file("cyc", "two.ini", "[profile]\ninclude = x, x\n");
    if (!profile_load(&p, two, &ps, &e))
        fail_msg("%s", e.msg);
    profile_free(&p);

    /* the line of the include that failed, when the same value is given twice */
    const char *again = write_file(
        "cyc", "again.ini", "[profile]\ninclude = nosuch\n[memory]\n[profile]\ninclude = nosuch\n");
    assert_false(profile_load(&p, again, &ps, &e));
    assert_non_null(strstr(e.msg, "again.ini:2: profile.include: no profile 'nosuch' found"));
}

/* tunerun.ini(5) ERRORS: an error in an included file is named through the include. */
/* A message that starts with what is wanted (its end names a range or a fix). */
static void assert_starts_with(const char *got, const char *want)
{
    if (strncmp(got, want, strlen(want)) != 0)
        fail_msg("got  %s\nwant %s...", got, want);
}

static void test_include_errors_name_the_chain(void **state)
{
    (void)state;
    struct profile_paths ps = paths_in("chain", NULL);
    struct profile p;
    struct err e;
    char want[1024];
    write_file("chain", "bad1.ini", "[placement]\nnodes = 0\n");
    const char *one = write_file("chain", "incname.ini", "[profile]\ninclude = bad1\n");
    assert_false(profile_load(&p, one, &ps, &e));
    snprintf(want, sizeof(want),
             "%s:2: in include 'bad1': %s/chain/bad1.ini:2: placement.nodes: '0' is out of range",
             one, tmpdir);
    assert_starts_with(e.msg, want);

    /* two levels: every include on the way, outermost first */
    const char *two =
        write_file("chain", "two.ini", "# two levels\n[profile]\ninclude = incname\n");
    assert_false(profile_load(&p, two, &ps, &e));
    snprintf(want, sizeof(want),
             "%s:3: in include 'incname': %s/chain/incname.ini:2: in include 'bad1': "
             "%s/chain/bad1.ini:2: placement.nodes:",
             two, tmpdir, tmpdir);
    assert_starts_with(e.msg, want);

    /* an unknown key, and a check made after loading (loader variables) */
    write_file("chain", "unk.ini", "[placement]\nbogus = 1\n");
    const char *unk = write_file("chain", "incunk.ini", "[profile]\ninclude = unk\n");
    assert_false(profile_load(&p, unk, &ps, &e));
    snprintf(want, sizeof(want),
             "%s:2: in include 'unk': %s/chain/unk.ini:2: placement.bogus: unknown key", unk,
             tmpdir);
    assert_starts_with(e.msg, want);
    write_file("chain", "ld.ini", "[env]\nLD_PRELOAD = /x.so\n");
    const char *ld = write_file("chain", "incld.ini", "[profile]\ninclude = ld\n");
    assert_false(profile_load(&p, ld, &ps, &e));
    snprintf(want, sizeof(want),
             "%s:2: in include 'ld': %s/chain/ld.ini:2: env.LD_PRELOAD: a loader", ld, tmpdir);
    assert_starts_with(e.msg, want);

    /*
     * fifteen levels in a directory with a long name: a message is one line of at most 1 KiB,
     * and the middle of the chain goes, never its end, which says what is wrong and where
     */
    const char *deep = "chain/a-directory-whose-name-is-rather-long-as-some-are-on-real-hosts";
    for (int i = 0; i < 15; i++) {
        char name[16], text[64];
        snprintf(name, sizeof(name), "d%d.ini", i);
        snprintf(text, sizeof(text),
                 i < 14 ? "[profile]\ninclude = d%d\n" : "[placement]\nnodez = 1\n", i + 1);
        write_file(deep, name, text);
        if (i == 13)
            write_file(deep, "e14.ini", "[placement]\nnodes = 0\n");
    }
    char top[256];
    snprintf(top, sizeof(top), "%s/%s/d0.ini", tmpdir, deep);
    for (int i = 0; i < 2; i++) { /* an unknown key (the chain in its origin), a bad value */
        if (i == 1)
            write_file(deep, "d13.ini", "[profile]\ninclude = e14\n");
        assert_false(profile_load(&p, top, &ps, &e));
        snprintf(want, sizeof(want), "%s:2: in include 'd1': ...: ", top);
        assert_starts_with(e.msg, want);
        snprintf(want, sizeof(want), "%s/%s/%s", tmpdir, deep,
                 i == 0 ? "d14.ini:2: placement.nodez: unknown key"
                        : "e14.ini:2: placement.nodes: '0' is out of range");
        if (strstr(e.msg, want) == NULL)
            fail_msg("no '%s' in '%s'", want, e.msg);
    }

    /* a path is relative to the including file's directory, and printed once */
    const char *dot = write_file("chain", "dot.ini", "[profile]\ninclude = ./bad1.ini\n");
    assert_false(profile_load(&p, dot, &ps, &e));
    snprintf(want, sizeof(want), "%s:2: in include './bad1.ini': %s/chain/bad1.ini:2: placement",
             dot, tmpdir);
    assert_starts_with(e.msg, want);
    write_file("chain", "good.ini", "[placement]\nnodes = 2\n");
    const char *up = write_file("chain/sub", "up.ini", "[profile]\ninclude = ../good.ini\n");
    if (!profile_load(&p, up, &ps, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(p.placement.nodes, 2);
    profile_free(&p);

    /* the origin keeps the chain for the checks made after loading (privs, plan) */
    write_file("chain", "user.ini", "[security]\nuser = nobody\n");
    const char *user = write_file("chain", "incuser.ini", "[profile]\ninclude = user\n");
    if (!profile_load(&p, user, &ps, &e))
        fail_msg("%s", e.msg);
    char loc[1024];
    profile_where(loc, sizeof(loc), p.security.user_at, "security", "user", NULL);
    snprintf(want, sizeof(want), "%s:2: in include 'user': %s/chain/user.ini:2: security.user",
             user, tmpdir);
    assert_string_equal(loc, want);
    profile_free(&p);

    /* the same in memory, where "./" must not break the lookup by path */
    const struct profile_paths mps = {{"/mem/etc"}, {"admin"}, 1, NULL, NULL};
    const struct profile_file files[] = {
        {"/mem/etc/top.ini", "[profile]\ninclude = ./base.ini\n"},
        {"/mem/etc/base.ini", "[memory]\nthp = sometimes\n"},
    };
    assert_false(profile_load_files(&p, files, 2, &mps, &e));
    assert_string_equal(e.msg, "/mem/etc/top.ini:2: in include './base.ini': /mem/etc/base.ini:2: "
                               "memory.thp: 'sometimes' is not one of madvise, never, system");
}

static void test_security_keys(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    const char *path = write_file("s", "sec.ini",
                                  "[security]\nuser = nobody\nkeep_caps = cap_net_bind_service, "
                                  "CAP_SYS_NICE\nno_new_privs = yes\n");
    assert_true(profile_load(&p, path, NULL, &e));
    assert_string_equal(p.security.user, "nobody");
    assert_int_equal(p.security.user_at.line, 2);
    assert_true(p.security.keep_caps_set);
    assert_true(p.security.keep_caps == ((UINT64_C(1) << 10) | (UINT64_C(1) << 23)));
    assert_true(p.security.no_new_privs);
    assert_true(privs_wanted(&p));

    struct privs pv;
    assert_true(privs_resolve(&pv, &p, &e));
    assert_true(pv.change_id && pv.caps && pv.no_new_privs);
    assert_int_equal(pv.uid, 65534);
    assert_true(pv.ngroups >= 1);
    char *caps = privs_cap_list(pv.keep);
    assert_string_equal(caps, "cap_net_bind_service,cap_sys_nice");
    free(caps);
    privs_free(&pv);

    /* a uid without a passwd entry needs a group; a gid without a group entry is still a gid */
    assert_true(profile_set(&p, "security.user=4242420", &e));
    assert_false(privs_resolve(&pv, &p, &e));
    assert_non_null(strstr(e.msg, "--set security.user: uid 4242420 has no passwd entry"));
    assert_true(profile_set(&p, "security.group=4242421", &e));
    assert_true(privs_resolve(&pv, &p, &e));
    assert_int_equal(pv.uid, 4242420);
    assert_int_equal(pv.gid, 4242421);
    assert_int_equal(pv.ngroups, 1);
    assert_int_equal(pv.groups[0], 4242421);
    privs_free(&pv);
    assert_true(profile_set(&p, "security.user=no-such-user-here", &e));
    assert_false(privs_resolve(&pv, &p, &e));
    assert_non_null(strstr(e.msg, "no user 'no-such-user-here' on this system"));
    assert_true(profile_set(&p, "security.keep_caps=none", &e));
    assert_true(p.security.keep_caps_set && p.security.keep_caps == 0);
    assert_true(profile_set(&p, "security.user=4294967295", &e));
    assert_false(privs_resolve(&pv, &p, &e));
    assert_non_null(strstr(e.msg, "'4294967295' is not a uid"));
    /* an empty item is a slip, not a way to say none: refused, the value as it was */
    const char *slips[] = {"security.keep_caps=,", "security.keep_caps=cap_kill,,cap_chown",
                           "security.keep_caps= ,cap_kill", "placement.avoid=nginx,",
                           "security.loader_env=LD_PRELOAD,,LD_LIBRARY_PATH"};
    for (size_t i = 0; i < sizeof(slips) / sizeof(slips[0]); i++) {
        assert_false(profile_set(&p, slips[i], &e));
        assert_non_null(strstr(e.msg, ": an empty item in the list (',,', or a ',' at either "
                                      "end): a slip, not a way to say none"));
    }
    assert_true(p.security.keep_caps_set && p.security.keep_caps == 0);
    /* empty undoes what an include set */
    assert_true(profile_set(&p, "security.keep_caps=", &e));
    assert_false(p.security.keep_caps_set);
    assert_true(profile_set(&p, "security.user=", &e));
    assert_true(profile_set(&p, "security.group=", &e));
    assert_null(p.security.user);
    assert_true(profile_set(&p, "security.no_new_privs=no", &e));
    assert_false(privs_wanted(&p));
    profile_free(&p);

    /* keep_caps alone: root keeps only those */
    path = write_file("s", "caps.ini", "[security]\nkeep_caps = cap_kill\n");
    assert_true(profile_load(&p, path, NULL, &e));
    assert_true(privs_resolve(&pv, &p, &e));
    assert_false(pv.change_id);
    assert_true(pv.caps && pv.keep == (UINT64_C(1) << 5));
    privs_free(&pv);
    profile_free(&p);

    /* a group alone names nobody to be */
    path = write_file("s", "group.ini", "[security]\ngroup = nogroup\n");
    assert_true(profile_load(&p, path, NULL, &e));
    assert_false(privs_resolve(&pv, &p, &e));
    assert_non_null(strstr(e.msg, "group.ini:2: security.group: a group without a user"));
    profile_free(&p);

    const char *m = load_error("[security]\nuser = root:root\n");
    assert_non_null(strstr(m, "bad.ini:2: security.user: 'root:root' is not a user name or uid"));
    m = load_error("[security]\nkeep_caps = cap_net_bind_service,cap_fly\n");
    assert_non_null(strstr(m, "bad.ini:2: security.keep_caps: 'cap_fly' is not a capability"));
    m = load_error("[security]\nkeep_caps = none, cap_chown\n");
    assert_non_null(strstr(m, "'none' is not a capability"));
    m = load_error("[security]\nkeep_caps = 12\n");
    assert_non_null(strstr(m, "'12' is not a capability"));
    m = load_error("[security]\nkeep_caps = cap_net_bind_service cap_kill\n");
    assert_non_null(strstr(m, "'cap_net_bind_service cap_kill' is not a capability"));
    m = load_error("[security]\nno_new_privs = perhaps\n");
    assert_non_null(strstr(m, "bad.ini:2: security.no_new_privs:"));
    m = load_error("[security]\ngroup = -x\n");
    assert_non_null(strstr(m, "'-x' is not a group name or gid"));
}

/* The fuzzers' loader: includes among files in memory, as on disk, and nothing read. */
static void test_load_files(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    const struct profile_paths ps = {
        {"/mem/etc", "/mem/share"}, {"admin", "installed"}, 2, NULL, NULL};
    const struct profile_file files[] = {
        {"/mem/etc/top.ini", "[profile]\ninclude = base, mysql\n[placement]\nnodes = 2\n"},
        {"/mem/etc/base.ini", "[memory]\nthp = never\n"},
        {"/mem/etc/mysql.ini", "[profile]\ninclude = mysql\n[limits]\nnofile = 100\n"},
        {"/mem/share/mysql.ini", "[placement]\ncpus = 50%\n"},
    };
    assert_true(profile_load_files(&p, files, 4, &ps, &e));
    assert_string_equal(p.name, "top");
    assert_int_equal(p.memory.thp, THP_NEVER);
    assert_int_equal(p.placement.nodes, 2);
    assert_int_equal(p.placement.cpus,
                     CPUS_PERCENT); /* /mem/etc/mysql.ini extends the shipped one */
    assert_int_equal(p.limits[RLIMIT_NOFILE].soft, 100);
    profile_free(&p);

    const struct profile_file cycle[] = {
        {"/mem/etc/a.ini", "[profile]\ninclude = b\n"},
        {"/mem/etc/b.ini", "[profile]\ninclude = a\n"},
    };
    assert_false(profile_load_files(&p, cycle, 2, &ps, &e));
    assert_non_null(strstr(e.msg, "include cycle"));
    assert_false(profile_load_files(&p, cycle + 1, 1, &ps, &e));
    assert_non_null(strstr(e.msg, "/mem/etc/b.ini:2: profile.include: no profile 'a' found"));
}

static void test_set_overrides(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));
    assert_true(profile_set(&p, "placement.nodes=2", &e));
    assert_int_equal(p.placement.nodes, 2);
    assert_true(profile_set(&p, "limits.nofile = 1000:2000", &e));
    assert_int_equal(p.limits[RLIMIT_NOFILE].soft, 1000);
    assert_int_equal(p.limits[RLIMIT_NOFILE].hard, 2000);
    assert_true(profile_set(&p, "env.GREETING=hello world", &e));
    assert_string_equal(p.env[p.nenv - 1].value, "hello world");

    assert_false(profile_set(&p, "placement.nodes=x", &e));
    assert_non_null(strstr(e.msg, "--set placement.nodes=x"));
    assert_false(profile_set(&p, "nodes=1", &e));
    assert_non_null(strstr(e.msg, "SECTION.KEY=VALUE"));
    assert_false(profile_set(&p, "bogus.key=1", &e));
    /* the known sections are listed, as for the same error in a file */
    assert_string_equal(e.msg, "--set bogus.key=1: unknown section 'bogus' (known: profile, "
                               "placement, memory, limits, env, args, host, java, security)");
    assert_false(profile_set(&p, "profile.include=redis", &e));
    profile_free(&p);
}

/* tunerun.ini(5): --set "is checked exactly like a line in a file", and no value holds a control
 * character. */
static void test_set_checked_as_a_line(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    char value[400];
    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));

    /* a file's value cannot hold a newline, so --set's may not */
    assert_false(profile_set(&p, "profile.description=a\nb", &e));
    assert_string_equal(e.msg,
                        "--set profile.description=a\\nb: a newline in the value: a value is one "
                        "line of text");
    assert_false(profile_set(&p, "profile.fears=\001", &e));
    assert_non_null(strstr(e.msg, "--set profile.fears=\\x01: a control character (\\x01)"));
    assert_false(profile_set(&p, "env.X=a\rb", &e));
    assert_null(strchr(e.msg, '\r'));

    /* KEY=VALUE fits a line of at most 198 characters, or it is refused, as in a file */
    snprintf(value, sizeof(value), "env.X=%0196d", 0); /* X= and 196: 198 */
    assert_true(profile_set(&p, value, &e));
    snprintf(value, sizeof(value), "env.X=%0197d", 0);
    assert_false(profile_set(&p, value, &e));
    assert_non_null(strstr(e.msg, "would be 199 characters"));
    snprintf(value, sizeof(value), "env.X=%0300d", 0);
    assert_false(profile_set(&p, value, &e));
    assert_non_null(strstr(e.msg, "--set env.X=0000"));
    assert_non_null(strstr(e.msg, "...: too long: as a line of a profile, KEY=VALUE would be 302 "
                                  "characters, and a line holds at most 198"));
    assert_true(strlen(e.msg) < 200); /* the value is cut in the message */

    /* tab is text */
    assert_true(profile_set(&p, "profile.description=a\tb", &e));
    assert_string_equal(p.description, "a\tb");
    /* what the message shows of a bad option is escaped too */
    assert_false(profile_set(&p, "foo\033bar", &e));
    assert_string_equal(e.msg, "--set foo\\x1bbar: expected SECTION.KEY=VALUE");
    profile_free(&p);

    /* the same from a file: one rule for every value */
    const char *m = load_error("[profile]\ndescription = red \033[31mX\n");
    assert_non_null(strstr(m, "bad.ini:2: profile.description: a control character (\\x1b) in the "
                              "value: a value is text, without control characters"));
    m = load_error("[profile]\nfears = \001\n");
    assert_non_null(strstr(m, "bad.ini:2: profile.fears: a control character (\\x01)"));
    m = load_error("[env]\nA = x\033y\n");
    assert_non_null(strstr(m, "bad.ini:2: env.A: a control character (\\x1b)"));
    m = load_error("[profile]\ninclude = mysql\033\n");
    assert_non_null(strstr(m, "bad.ini:2: profile.include: a control character (\\x1b)"));
    m = load_error("[pro\033file]\n");
    assert_non_null(strstr(m, "bad.ini:1: unknown section [pro\\x1bfile]"));
    assert_string_equal(load_error("[profile]\ndescription = tab\tin text\n"), "");
    /* 198 characters on a last line without a newline, as with one */
    snprintf(value, sizeof(value), "[env]\nX=%0196d", 0);
    assert_string_equal(load_error(value), "");
    snprintf(value, sizeof(value), "[env]\nX=%0197d", 0);
    assert_non_null(strstr(load_error(value), "bad.ini:2: line too long (at most 198 characters)"));
    /* and on a line that ends \r\n: the \r is no character of it */
    snprintf(value, sizeof(value), "[env]\r\nX=%0196d\r\nY=1\r\n", 0);
    assert_string_equal(load_error(value), "");
    snprintf(value, sizeof(value), "[env]\r\nX=%0197d\r\n", 0);
    assert_non_null(strstr(load_error(value), "bad.ini:2: line too long (at most 198 characters)"));
}

/*
 * Below 64 open files the service's ld.so fails with EMFILE and tunerun's
 * own steps after the limit (a cgroup write) fail: refused, both numbers.
 */
static void test_nofile_floor(void **state)
{
    (void)state;
    struct profile p;
    struct err e;
    const char *m = load_error("[limits]\nnofile = 4\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.nofile: a limit of 4 open files is below 64, the "
                              "least a service can run with: its libraries, logs and sockets, and "
                              "tunerun's own steps after the limit, need descriptors"));
    m = load_error("[limits]\nnofile = 3 : 65535\n");
    assert_non_null(
        strstr(m, "bad.ini:2: limits.nofile: a soft limit of 3 open files is below 64"));
    m = load_error("[limits]\nnofile = 10:20\n");
    assert_non_null(strstr(m, "soft and hard limits of 10 and 20 open files are below 64"));
    m = load_error("[limits]\nnofile = 0\n");
    assert_non_null(strstr(m, "a limit of 0 open files is below 64"));
    assert_string_equal(load_error("[limits]\nnofile = 64\n"), "");
    assert_string_equal(load_error("[limits]\nnofile = 64:1M\n"), "");
    assert_string_equal(load_error("[limits]\nnofile = 1K\n"), "");
    /* only nofile: other limits keep their own meaning of small numbers */
    assert_string_equal(load_error("[limits]\ncore = 0\n"), "");
    /* but not those no service can be executed under: it would die at its exec, unexplained */
    m = load_error("[limits]\nas = 1\n");
    assert_non_null(strstr(m,
                           "bad.ini:2: limits.as: a limit of 1 byte is below 16 MiB, the least a "
                           "service can be executed with: ld.so maps"));
    m = load_error("[limits]\ncpu = 0\n");
    assert_non_null(strstr(m, "limits.cpu: a limit of 0 seconds is below 1 second"));
    m = load_error("[limits]\nstack = 64K:unlimited\n");
    assert_non_null(strstr(m, "limits.stack: a soft limit of 65536 bytes is below 128 KiB"));
    m = load_error("[limits]\ndata = 0\n");
    assert_non_null(strstr(m, "limits.data: a limit of 0 bytes is below 1 MiB"));
    assert_string_equal(
        load_error("[limits]\nas = 16M\ndata = 1M\nstack = 128K\ncpu = 1\nrss = 1\n"), "");

    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));
    assert_false(profile_set(&p, "limits.nofile=4", &e));
    assert_non_null(strstr(e.msg, "--set limits.nofile=4: a limit of 4 open files is below 64"));
    assert_false(profile_set(&p, "limits.nofile=63:64", &e));
    assert_non_null(strstr(e.msg, "--set limits.nofile=63:64: a soft limit of 63"));
    /* a refused value leaves the limit as it was */
    assert_int_equal(p.limits[RLIMIT_NOFILE].soft, 65535);
    assert_int_equal(p.limits[RLIMIT_NOFILE].hard, 65535);
    profile_free(&p);
}

/* A number too big for its key is out of range, and the message gives the range. */
static void test_out_of_range(void **state)
{
    (void)state;
    const char *m = load_error("[limits]\nnofile = 99999999999999999999999\n");
    assert_non_null(strstr(m, "bad.ini:2: limits.nofile: '99999999999999999999999' is out of range "
                              "0..18446744073709551614 (or unlimited)"));
    m = load_error("[placement]\ncpus = 999999999999\n");
    assert_non_null(
        strstr(m, "bad.ini:2: placement.cpus: '999999999999' is out of range 1..1048576"));
    m = load_error("[placement]\ncpus = 150%\n");
    assert_non_null(strstr(m, "bad.ini:2: placement.cpus: '150%' is out of range 1%..100%"));
    m = load_error("[placement]\ncpus = 99999999999999999999999%\n");
    assert_non_null(strstr(m, "is out of range 1%..100%"));
    m = load_error("[placement]\ncpus = many\n");
    assert_non_null(strstr(m, "'many' is not node, all, a CPU count or a percentage"));
    m = load_error("[placement]\nmemory_size = 99999999999999999999G\n");
    assert_non_null(strstr(m, "placement.memory_size: '99999999999999999999G' is out of range "
                              "0..18446744073709551615 bytes"));
    m = load_error("[memory]\nmalloc_arena_max = 99999999999\n");
    assert_non_null(strstr(m, "memory.malloc_arena_max: '99999999999' is out of range 1..65536"));
    m = load_error("[memory]\nswappiness = 101\n");
    assert_non_null(strstr(m, "memory.swappiness: '101' is out of range 0..100"));
    m = load_error("[memory]\nswap_max = 99999999999999999999\n");
    assert_non_null(strstr(m, "memory.swap_max: '99999999999999999999' is out of range"));
    m = load_error("[java]\nactive_processor_count = 9999999999\n");
    assert_non_null(
        strstr(m, "java.active_processor_count: '9999999999' is out of range 1..1048576"));
    m = load_error("[java]\nmax_ram = 99999999999P\n");
    assert_non_null(strstr(m, "java.max_ram: '99999999999P' is out of range"));
    m = load_error("[java]\nmax_ram = 100K\n");
    assert_non_null(strstr(m, "'100K' is not auto, off or a size of at least 1M"));

    struct profile p;
    struct err e;
    assert_true(profile_load(&p, "profiles/mysql.ini", NULL, &e));
    assert_false(profile_set(&p, "limits.nofile=99999999999999999999999", &e));
    assert_non_null(strstr(e.msg, "--set limits.nofile=99999999999999999999999: "
                                  "'99999999999999999999999' is out of range"));
    assert_false(profile_set(&p, "placement.cpus=999999999999", &e));
    assert_non_null(strstr(e.msg, "is out of range 1..1048576"));
    profile_free(&p);
}

static void test_find_and_missing_file(void **state)
{
    (void)state;
    struct profile_paths ps = {{"/nonexistent", "profiles"}, {"a", "b"}, 2, NULL, NULL};
    size_t idx = 9;
    char *path = profile_find("redis", &ps, &idx);
    assert_non_null(path);
    assert_int_equal(idx, 1);
    free(path);
    assert_null(profile_find("nosuch", &ps, NULL));
    assert_null(profile_find("../etc/passwd", &ps, NULL));

    struct profile p;
    struct err e;
    assert_false(profile_load(&p, "/nonexistent/x.ini", NULL, &e));
    assert_non_null(strstr(e.msg, "/nonexistent/x.ini"));

    /* what the command line asked for, said in one clear line when there is none */
    assert_false(profile_load(&p, "", NULL, &e));
    assert_string_equal(e.msg, "--profile-file '': an empty path names no profile file");
    profile_free(&p); /* as after any failed load */
    assert_null(profile_locate("", &ps, &e));
    assert_string_equal(e.msg, "an empty profile name: name one that 'tunerun profiles' lists, or "
                               "give a file with --profile-file FILE");
    path = profile_locate("redis", &ps, &e);
    assert_string_equal(path, "profiles/redis.ini");
    free(path);
    assert_null(profile_locate("nosuch", &ps, &e));
    assert_string_equal(e.msg,
                        "no profile 'nosuch' in /nonexistent, profiles (see 'tunerun profiles')");
    /* a directory that could not be searched is named with why (no /proc) */
    ps.unsearched = "profiles/ next to tunerun's binary was not searched: why";
    assert_null(profile_locate("nosuch", &ps, &e));
    assert_string_equal(e.msg, "no profile 'nosuch' in /nonexistent, profiles (see 'tunerun "
                               "profiles'); profiles/ next to tunerun's binary was not searched: "
                               "why");
    ps.unsearched = NULL;
    assert_null(profile_locate("redis.ini", &ps, &e));
    assert_string_equal(e.msg,
                        "no profile 'redis.ini' in /nonexistent, profiles: a profile's name has "
                        "no directory and no .ini ('redis' is one); to read the file "
                        "redis.ini, use --profile-file redis.ini");
    assert_null(profile_locate("profiles/redis.ini", &ps, &e));
    assert_non_null(strstr(e.msg, "('redis' is one); to read the file profiles/redis.ini, use "
                                  "--profile-file profiles/redis.ini"));
    assert_null(profile_locate("my/own.ini", &ps, &e));
    assert_non_null(
        strstr(e.msg, "no .ini; to read the file my/own.ini, use --profile-file my/own.ini"));
    assert_null(profile_locate("a\nb", &ps, &e));
    assert_null(strchr(e.msg, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_profiles_load),
        cmocka_unit_test(test_mysql_values),
        cmocka_unit_test(test_host_values),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_include_overrides),
        cmocka_unit_test(test_include_same_name_extends_next),
        cmocka_unit_test(test_include_cycle_and_missing),
        cmocka_unit_test(test_include_errors_name_the_chain),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_set_checked_as_a_line),
        cmocka_unit_test(test_nofile_floor),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_security_keys),
        cmocka_unit_test(test_load_files),
        cmocka_unit_test(test_find_and_missing_file),
    };
    return cmocka_run_group_tests_name("profile", tests, setup, teardown);
}
