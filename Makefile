# tunerun - NUMA-aware process launcher.
#
#   make            build ./tunerun (profiles/ next to it are found without installing)
#   make demo       start redis-server under the redis profile and show what it got
#   make test       unit tests (cmocka), host integration tests, NUMA VM tests, sanitizers
#   make test-vm    boot real multi-node kernels under qemu and check placement
#   make sanitize   unit and host suites on an ASan+UBSan build (make test runs it too)
#   make bench      launch overhead against numactl, taskset and hwloc-bind
#   make install    PREFIX=/usr/local DESTDIR=...
#   make deb        build/tunerun_VERSION_ARCH.deb, from contrib/debian

VERSION   = 0.1.0
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
DATADIR  ?= $(PREFIX)/share/tunerun
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d

CC       ?= cc
CFLAGS   ?= -O2 -g
WERROR   ?= -Werror
PKGS      = hwloc numa libcap inih
DEPS_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEPS_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lhwloc -lnuma -lcap -linih)
# What Debian's dpkg-buildflags gives a package built with hardening=+all:
# tunerun runs as root and reads files that others may have written. Apart
# from CFLAGS, so that `make CFLAGS=-O0` keeps it; `make HARDEN=` drops it
# (the sanitizer builds, which check more than it does). _FORTIFY_SOURCE
# needs an optimizing build and is left to a packager's CPPFLAGS or CFLAGS
# that set it (a second, other value would be an error under -Werror);
# some compilers set it themselves (Ubuntu's), hence the -U. -fcf-protection
# is x86's alone.
CF_PROTECTION := $(shell $(CC) -fcf-protection -E -x c /dev/null >/dev/null 2>&1 && echo -fcf-protection)
FORTIFY   = $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),,$(if $(filter-out \
              -O0,$(lastword $(filter -O%,$(CFLAGS)))),-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2))
HARDEN   ?= -fPIE -fstack-protector-strong -fstack-clash-protection $(CF_PROTECTION) $(FORTIFY)
FULL_RELRO = -pie -Wl,-z,relro -Wl,-z,now
HARDEN_LDFLAGS ?= $(if $(strip $(HARDEN)),$(FULL_RELRO))
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) $(HARDEN) $(CPPFLAGS) $(CFLAGS) \
             $(DEPS_CFLAGS)
ALL_LDFLAGS = $(HARDEN_LDFLAGS) $(LDFLAGS)
# the host suite checks the binary for it unless it was built without, and
# for _FORTIFY_SOURCE's checked calls where something set it
export TUNERUN_HARDENED := $(if $(strip $(HARDEN)),$(if $(findstring \
    _FORTIFY_SOURCE,$(HARDEN) $(CPPFLAGS) $(CFLAGS)),fortified,yes))

# Every module but main.c, which the unit tests and fuzzers bring their own main() instead of.
LIB_SRC  = $(filter-out launcher/main.c,$(sort $(wildcard launcher/*.c)))
LIB_OBJ  = $(LIB_SRC:.c=.o)
HDRS     = $(filter-out launcher/config.h,$(wildcard launcher/*.h))

UNIT_TESTS = tests/test_parse tests/test_profile tests/test_topo tests/test_plan tests/test_disk \
             tests/test_nic tests/test_yield

.PHONY: all deps test-deps demo-deps deb-deps demo test unit host-test test-vm sanitize fuzz bench install uninstall deb clean format FORCE

all: tunerun

deps:
	@contrib/install-deps build

test-deps:
	@contrib/install-deps test

demo-deps:
	@contrib/install-deps demo

deb-deps:
	@contrib/install-deps deb

# Rewritten only when the flags change: objects built with other flags
# (make HARDEN=, another CFLAGS) are rebuilt, so the binary is what the
# flags of this make say, and what TUNERUN_HARDENED tells the host suite.
build/flags: FORCE
	@mkdir -p build
	@printf '%s\n' '$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

launcher/%.o: launcher/%.c $(HDRS) build/flags
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Rewritten only when VERSION or DATADIR change, so `make install PREFIX=/usr`
# after a plain `make` rebuilds main.o with the right profile directory.
launcher/config.h: FORCE
	@printf '#define TUNERUN_VERSION "%s"\n#define TUNERUN_DATADIR "%s"\n' '$(VERSION)' '$(DATADIR)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

launcher/main.o: launcher/config.h

tunerun: launcher/main.o $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(ALL_LDFLAGS) $(DEPS_LIBS)

tests/probe: tests/probe.c
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) $(CFLAGS) -o $@ $< -lnuma

# Each runs a command as a parent would start it: in a new cgroup namespace,
# under a seccomp filter, with huge pages turned off.
TEST_TOOLS = tests/nsrun tests/refuse tests/thp

$(TEST_TOOLS): tests/%: tests/%.c
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) $(CFLAGS) -o $@ $<

tests/claimer: tests/claimer.c $(LIB_OBJ) $(HDRS)
	$(CC) $(ALL_CFLAGS) -Ilauncher -o $@ $< $(LIB_OBJ) $(ALL_LDFLAGS) $(DEPS_LIBS)

tests/test_%: tests/test_%.c tests/fixture.h $(LIB_OBJ) $(HDRS)
	$(CC) $(ALL_CFLAGS) -Ilauncher -o $@ $< $(LIB_OBJ) $(ALL_LDFLAGS) $(DEPS_LIBS) -lcmocka

# The README's first command: a real redis-server under tunerun, seen from outside.
demo: demo-deps
	@$(MAKE) --no-print-directory all >/dev/null
	@contrib/demo

# The README's second command: everything, as CI runs it.
test: test-deps
	@$(MAKE) --no-print-directory all tests/probe tests/claimer $(TEST_TOOLS) $(UNIT_TESTS) \
		tests/bench/exec-libs
	@tests/run-all $(UNIT_TESTS)
	@$(MAKE) --no-print-directory sanitize
	@$(MAKE) --no-print-directory fuzz

# The unit and host suites again, on an ASan+UBSan build in build/asan (a
# copy of the sources, so the normal build stays as it is). Any report
# aborts the binary, which fails the suite.
SANITIZE = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
sanitize: test-deps
	@rm -rf build/asan && mkdir -p build/asan
	@cp -r launcher profiles tests contrib Makefile .dockerignore build/asan/
	@rm -f build/asan/launcher/*.o build/asan/launcher/config.h
	@$(MAKE) --no-print-directory -s -C build/asan CFLAGS="$(SANITIZE)" HARDEN= \
		LDFLAGS="-fsanitize=address,undefined" all tests/probe tests/claimer tests/refuse tests/thp \
		$(UNIT_TESTS)
	@echo "# the same suites on an ASan+UBSan build:"
	@cd build/asan && TUNERUN_SANITIZED=1 TUNERUN_TOPOLOGIES="$(CURDIR)/../shared/topologies" \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 tests/run-all $(UNIT_TESTS)

# libFuzzer harnesses (clang), on an ASan+UBSan build of the same sources in
# build/fuzz; tests/fuzz/run runs each for FUZZ_SECONDS (60) from its seed corpus.
FUZZERS    = profile values plan
FUZZ_CC    = clang
FUZZ_FLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all \
             -fsanitize=fuzzer-no-link,address,undefined -Ilauncher $(DEPS_CFLAGS)
FUZZ_OBJ   = $(patsubst launcher/%.o,build/fuzz/%.o,$(LIB_OBJ))

build/fuzz/%.o: launcher/%.c $(HDRS)
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -c $< -o $@

.SECONDARY: $(FUZZ_OBJ)

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(DEPS_LIBS)

fuzz: test-deps
	@$(MAKE) --no-print-directory -s $(addprefix build/fuzz/fuzz_,$(FUZZERS))
	@tests/fuzz/run $(addprefix build/fuzz/fuzz_,$(FUZZERS))

unit: all $(UNIT_TESTS)
	@for t in $(UNIT_TESTS); do $$t || exit 1; done

host-test: all tests/probe tests/claimer tests/refuse tests/thp tests/bench/exec-libs
	@tests/host/run

test-vm: test-deps all tests/probe tests/nsrun tests/thp
	@tests/vm/run

# The launch floors the bench measures: an exec linked like tunerun, and like numactl.
tests/bench/exec-libs: tests/bench/exec.c
	$(CC) -std=c11 -Wall -Wextra $(WERROR) $(HARDEN) $(CFLAGS) -o $@ $< $(ALL_LDFLAGS) -Wl,--no-as-needed $(DEPS_LIBS)
tests/bench/exec-numa: tests/bench/exec.c
	$(CC) -std=c11 -Wall -Wextra $(WERROR) $(HARDEN) $(CFLAGS) -o $@ $< $(ALL_LDFLAGS) -Wl,--no-as-needed -lnuma

bench: all tests/bench/exec-libs tests/bench/exec-numa
	@contrib/install-deps bench
	@tests/bench/run

install: all
	install -D -m 0755 tunerun $(DESTDIR)$(BINDIR)/tunerun
	install -d $(DESTDIR)$(DATADIR)/profiles
	install -m 0644 profiles/*.ini $(DESTDIR)$(DATADIR)/profiles/
	install -D -m 0644 launcher/man/tunerun.1 $(DESTDIR)$(MANDIR)/man1/tunerun.1
	install -D -m 0644 launcher/man/tunerun.ini.5 $(DESTDIR)$(MANDIR)/man5/tunerun.ini.5
	install -D -m 0644 contrib/bash-completion/tunerun $(DESTDIR)$(BASHCOMPDIR)/tunerun
	install -D -m 0644 contrib/tmpfiles.d/tunerun.conf $(DESTDIR)$(TMPFILESDIR)/tunerun.conf

# A Debian package, build/tunerun_VERSION_ARCH.deb (contrib/debian, debhelper).
deb: deb-deps
	@contrib/make-deb

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tunerun $(DESTDIR)$(MANDIR)/man1/tunerun.1 \
	      $(DESTDIR)$(MANDIR)/man5/tunerun.ini.5 $(DESTDIR)$(BASHCOMPDIR)/tunerun \
	      $(DESTDIR)$(TMPFILESDIR)/tunerun.conf
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/profiles/,$(notdir $(wildcard profiles/*.ini)))
	-rmdir $(DESTDIR)$(DATADIR)/profiles $(DESTDIR)$(DATADIR)

format:
	clang-format -i launcher/*.c launcher/*.h tests/*.c tests/fuzz/*.c

clean:
	rm -f tunerun launcher/*.o launcher/config.h tests/probe tests/claimer $(TEST_TOOLS) $(UNIT_TESTS) \
		tests/bench/exec-libs tests/bench/exec-numa
	rm -rf build
