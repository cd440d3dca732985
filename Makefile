# xptrace build.  `make` builds ./xptrace, `make check` runs every test (plain and
# ASan+UBSan builds), `make demo` records the bundled workload and reports it.
#
# Every .c under src/, decoders/ and arch/ (except the CLI entry point) goes
# into one static library; unit tests (tests/unit/test_*.c, one binary each) link it.
# New modules need no Makefile edit.

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
V       ?= 0

# The sanitized build keeps line tables only (-g1): its reports name functions and
# lines, and it compiles in three quarters of the time (make check builds it each run)
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      := -O1
DEBUG    := -g1
else
SANFLAGS :=
OPT      := -O2
DEBUG    := -g
endif

CPPFLAGS += -D_GNU_SOURCE -Isrc -I. -DXP_VERSION='"$(VERSION)"'
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror $(DEBUG) $(OPT) $(SANFLAGS) -MMD -MP
LDFLAGS  += $(SANFLAGS)
# libipt and libpfm4 ship no pkg-config file; libdw needs libelf; zlib for
# compressed debug sections comes in through libdw; libdeflate inflates them for
# symbols (src/session/sym_dwsec.c), faster.
LDLIBS   += -lipt -Wl,-Bstatic -lpfm -lcapstone -Wl,-Bdynamic -ldw -lelf -lprotobuf-c -lz -ldeflate -lpthread -ldl -lm
# capstone and libpfm4 are linked in statically, and not as PIE: as shared libraries
# (or in a PIE) their ~120k pointer relocations are applied at every start, ~3 ms,
# as long as decoding a million instructions (bench/decode-speed)
# (full RELRO costs nothing measurable at start and keeps some hardening)
LDFLAGS  += -no-pie -Wl,-z,relro,-z,now

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

LIB_SRC  := $(filter-out src/cli/xptrace.c src/record/dbt/tool/%,$(shell find src decoders arch -name '*.c'))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/src/cli/xptrace.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPER_SRC := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(BUILD)/%.o)
PROG_SRC := $(wildcard tests/progs/*.c)
PROG_BIN := $(patsubst tests/progs/%.c,$(BUILD)/progs/%,$(filter-out tests/progs/lib%.c,$(PROG_SRC))) \
            $(patsubst tests/progs/%.c,$(BUILD)/progs/%.so,$(filter tests/progs/lib%.c,$(PROG_SRC)))
DEPS_OK  := $(BUILD)/.deps-ok

ifeq ($(BUILD),build)
XPTRACE  := xptrace
else
XPTRACE  := $(BUILD)/xptrace
endif

ifeq ($(V),0)
Q := @
else
Q :=
endif

# Keep objects of test binaries (make would delete them as intermediates).
.SECONDARY:

.PHONY: all deps check unit progs asan demo install clean bench proto
.DEFAULT_GOAL := all

# Man pages and bash completion are generated from the binary (its --help texts and
# tables: mk/man.sh, mk/completion.sh), so they cannot drift from it.
MAN_STAMP  := $(BUILD)/man/.stamp
COMPLETION := $(BUILD)/xptrace.bash

# --mode dbt's valgrind tool (src/record/dbt/tool), linked as valgrind links its own:
# static against the core and VEX of Debian's valgrind package, no libc, text at
# 0x58000000 (where valgrind's loader expects a tool).  It lives in a folder with links
# to valgrind's preload library and default.supp, given to valgrind as VALGRIND_LIB;
# xptrace finds the folder beside its binary (src/record/dbt/dbt_tool.c).  Without
# valgrind's static libraries the tool is not built and --mode dbt says so.
VG_ALIB   := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/valgrind/libcoregrind-amd64-linux.a \
                                    /usr/lib/valgrind/libcoregrind-amd64-linux.a))
VG_LIBDIR := $(dir $(VG_ALIB))
VG_PKGLIB := $(dir $(firstword $(wildcard /usr/libexec/valgrind/vgpreload_core-amd64-linux.so \
                                          /usr/lib/x86_64-linux-gnu/valgrind/vgpreload_core-amd64-linux.so \
                                          /usr/lib/valgrind/vgpreload_core-amd64-linux.so)))
DBT_DIR   := $(BUILD)/dbt
DBT_TOOL  := $(if $(VG_ALIB),$(DBT_DIR)/xptdbt-amd64-linux)
DBT_CFLAGS := -O2 -g -m64 -fno-stack-protector -fno-builtin -fno-strict-aliasing -fno-pie \
              -fno-pic -fomit-frame-pointer -DVGA_amd64=1 -DVGO_linux=1 -DVGP_amd64_linux=1 \
              -DVGPV_amd64_linux_vanilla=1 -I/usr/include/valgrind -Wall -Wextra -Werror \
              -Wno-unused-parameter -Isrc -MMD -MP
$(BUILD)/dbt/xd_main.o: src/record/dbt/tool/xd_main.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(DBT_CFLAGS) -c -o $@ $<
$(DBT_DIR)/xptdbt-amd64-linux: $(BUILD)/dbt/xd_main.o
	@echo "  LD      $@"
	$(Q)$(CC) -m64 -static -nodefaultlibs -nostartfiles -u _start -Wl,--build-id=none \
		-Wl,-Ttext-segment=0x58000000 -no-pie -o $@ $< $(VG_LIBDIR)libcoregrind-amd64-linux.a \
		$(VG_LIBDIR)libvex-amd64-linux.a $(VG_LIBDIR)libgcc-sup-amd64-linux.a -lgcc
	$(Q)for f in vgpreload_core-amd64-linux.so default.supp; do \
		ln -sf $(VG_PKGLIB)$$f $(DBT_DIR)/$$f; done
-include $(BUILD)/dbt/xd_main.d

all: $(XPTRACE) $(MAN_STAMP) $(COMPLETION) $(DBT_TOOL)

$(MAN_STAMP): $(XPTRACE) mk/man.sh
	@echo "  MAN     $(BUILD)/man/"
	$(Q)rm -rf $(BUILD)/man && mk/man.sh ./$(XPTRACE) $(BUILD)/man && touch $@
$(COMPLETION): $(XPTRACE) mk/completion.sh mk/help-options.sh
	@echo "  GEN     $@"
	$(Q)mk/completion.sh ./$(XPTRACE) >$@.tmp && mv $@.tmp $@

# Installs the Debian packages when a header or library is missing (see mk/deps.sh).
deps:
	$(Q)mk/deps.sh
$(DEPS_OK): mk/deps.sh
	$(Q)mkdir -p $(@D) && mk/deps.sh && touch $@

$(XPTRACE): $(MAIN_OBJ) $(BUILD)/libxptrace.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The pprof writer's protobuf code, generated from the .proto and committed (building
# needs libprotobuf-c only; regenerating needs protoc-c).
proto:
	$(Q)cd src/output && protoc-c --c_out=. out_profile.proto

# The version is compiled in (-DXP_VERSION) where the source names it: only those
# objects are rebuilt when it changes.
VERSION_SRC := $(shell grep -l XP_VERSION $(LIB_SRC) src/cli/xptrace.c 2>/dev/null)
$(VERSION_SRC:%.c=$(BUILD)/%.o): VERSION

$(BUILD)/libxptrace.a: $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TEST_HELPER_OBJ) $(BUILD)/libxptrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -lcmocka $(LDLIBS)

$(BUILD)/tests/unit/%.o: CPPFLAGS += -DXP_SRCDIR='"$(CURDIR)"' -DXP_BUILDDIR='"$(CURDIR)/$(BUILD)"'

# Test programs: frame pointers and debug info so every unwinder has what it needs.
PROG_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -fno-inline -pthread
$(BUILD)/progs/%: tests/progs/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	@echo "  PROG    $@"
	$(Q)$(CC) $(PROG_CFLAGS) -Wl,--build-id -o $@ $< -ldl -rdynamic
$(BUILD)/progs/%.so: tests/progs/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	@echo "  PROG    $@"
	$(Q)$(CC) $(PROG_CFLAGS) -fPIC -shared -Wl,--build-id -o $@ $<

unit: $(UNIT_BIN)
progs: $(PROG_BIN)

# The ASan+UBSan build lives in its own tree so both builds coexist.
asan: | $(DEPS_OK)
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan SAN=1 build-asan/xptrace unit

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), built with clang into build-fuzz/: the
# library's sources are compiled again there with the fuzzer's coverage and ASan+UBSan.
# `make fuzz FUZZ_SECONDS=N` runs each harness N seconds on its corpus (seeded from
# tests/fixtures and traces/, see tests/fuzz/run.sh); `make check` builds them and
# runs each a few seconds (tests/integration/fuzz.sh).
FUZZ_CC      := clang
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# (gcc-only attributes such as noipa in rec_calib.c are for the gcc builds)
# (line tables only: symbolized reports at a fraction of full debug info's build time)
FUZZ_CFLAGS  := -std=gnu11 -Wall -Wextra -Werror -Wno-unknown-attributes -gline-tables-only -O1 $(FUZZ_SAN) \
                -fsanitize=fuzzer-no-link
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
# what the harnesses reach: the readers and the decode path, not the recorder; of the
# record side only its pure parsers (fuzz_rec_parse): --probe, step's --filter, --pt-opts
# and pt's --filter with the attrs they build, -e's own syntax
FUZZ_REC_SRC := src/record/rec_probe_spec.c src/record/rec_events.c src/record/step/col_step_filter.c \
                src/record/hw/x86_attr.c src/record/hw/x86_pt_attr.c src/record/hw/x86_pt_filter.c
FUZZ_LIB_SRC := $(filter-out src/cli/% src/record/% src/probe/probe_%,$(LIB_SRC)) $(FUZZ_REC_SRC)
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=build-fuzz/%.o)
FUZZ_SECONDS ?= 60

# clang and its libFuzzer runtime are test-level packages (mk/deps.sh test); after the
# build level's install (two apt-get at once would fight over dpkg's lock)
build-fuzz/.deps-ok: mk/deps.sh | $(DEPS_OK)
	$(Q)mkdir -p $(@D) && mk/deps.sh test && touch $@
build-fuzz/%.o: %.c | build-fuzz/.deps-ok
	@mkdir -p $(@D)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<
build-fuzz/tests/fuzz/%.o: CPPFLAGS += -DXP_SRCDIR='"$(CURDIR)"'
# (the Makefile too: the objects are secondary, and one added to the list would not be
# made for an archive newer than its source)
build-fuzz/libxptrace.a: $(FUZZ_LIB_OBJ) Makefile
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $(FUZZ_LIB_OBJ)
build-fuzz/fuzz_%: build-fuzz/tests/fuzz/fuzz_%.o build-fuzz/libxptrace.a
	@echo "  LD      $@"
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -no-pie -o $@ $^ $(LDLIBS)

.PHONY: fuzz-build fuzz
fuzz-build: $(FUZZ_BIN)
fuzz: fuzz-build
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS)

check: all unit progs asan fuzz-build
	$(Q)tests/run.sh

demo: all progs
	$(Q)mk/demo.sh

bench: all progs
	$(Q)for b in bench/*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done; true

# The docs keep the checkout's layout (README.md beside docs/, docs/img/), so the links
# between them and to the images hold where they are installed.
DOCDIR = $(DESTDIR)$(PREFIX)/share/doc/xptrace
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DOCDIR)/docs/img \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(XPTRACE) $(DESTDIR)$(PREFIX)/bin/xptrace
	$(if $(DBT_TOOL),install -d $(DESTDIR)$(PREFIX)/lib/xptrace/dbt && \
		install -m 755 $(DBT_TOOL) $(DESTDIR)$(PREFIX)/lib/xptrace/dbt/ && \
		for f in vgpreload_core-amd64-linux.so default.supp; do \
			ln -sf $(VG_PKGLIB)$$f $(DESTDIR)$(PREFIX)/lib/xptrace/dbt/$$f; done)
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/xptrace
	install -m 644 README.md $(DOCDIR)/
	install -m 644 docs/*.md $(DOCDIR)/docs/
	install -m 644 docs/img/* $(DOCDIR)/docs/img/

clean:
	rm -rf build build-asan build-fuzz xptrace

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
-include $(shell find build-fuzz -name '*.d' 2>/dev/null)
