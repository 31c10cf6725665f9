# Wine-trade marketplace engine -- build, run, test, fuzz, bench.
#
#   make          release build: bin/wm-shard (a shard), bin/wm-router (the front) and bin/wm-ctl (operator CLI),
#                 profile-guided and link-time optimised (trained on perf/pgo_train.sh's workload, ~1 min;
#                 PGO=0 LTO=0: plain -O2)
#   make run      start a local cluster: wm-router on 127.0.0.1:8080 and three shards (./var, demo data)
#   make test     install missing packages, build with ASan+UBSan, run every Criterion test
#   make fuzz     build the libFuzzer targets with clang and run each for FUZZ_SECONDS
#   make bench    release build, then the benchmarks in perf/ (figures printed, not asserted)
#   make tools    release builds of the test tools in tests/tools/ (bin/wm-delay-proxy)
#   make clean
#
# Every .c file under the code folders is part of the library except *_main.c,
# which are program entry points.  Tests are all tests/*.c linked into one
# Criterion binary, so there is exactly one Synthesis line to check.

CC        ?= gcc
FUZZ_CC   ?= clang
PKGS      := libxxhash libzstd libssl libcrypto libcurl cairo pangocairo
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lxxhash -lzstd -lssl -lcrypto -lcurl)

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
BASEFLAGS := -std=c17 -D_GNU_SOURCE -I. $(WARN) $(PKG_CFLAGS) -MMD -MP
# Release objects are profile-guided (PGO=1, the default; PGO=0: plain
# -O2).  Every library source is first compiled instrumented into build/gen
# (GEN_CFLAGS); build/gen/bin/wm-shard and wm-router then run
# perf/pgo_train.sh (a shard on a free loopback port answering quotes,
# orders and reads, then the same through a router, ~20 s), which leaves
# their counts in build/pgo; the release objects are compiled with them
# (-fprofile-use): ~10 % fewer instructions a quote and an order (17 % a
# 5-line quote), ~4-6 % fewer cycles by callgrind's simulation
# (perf/pgo_train.sh has the figures).  Both compiles of a source name it alike (PGO_NAME:
# gcc derives the counts' file, and the ids of static functions, from
# that name, not from the object's folder), so build/rel finds build/gen's
# counts; code the training never ran (the CLI's, the webhooks') is
# optimised as without a profile (-fprofile-partial-training).  Any source change retrains (the
# counts depend on every instrumented object); a training that fails leaves
# no counts and the build goes on as plain -O2, saying so.  The inliner's
# choices follow the counts, and with them the warnings gcc's flow analysis
# can raise: -Wmaybe-uninitialized stays a warning here (the sanitized
# build, which make test uses, keeps it an error).
# Release objects are also link-time optimised (LTO=1, the default): with
# the counts, gcc inlines across files too (the hot chains cross edge,
# domain and storage files).  Measured 2026-11-30 on top of the profile
# (perf/ir_per_request.sh): 1-line quote 77.4k -> 72.9k instructions,
# 5-line 290.0k -> 272.4k, order 334k -> 325k; callgrind's simulated cycles
# (as in perf/pgo_train.sh) -4 % a quote, -3 % an order.  The objects keep
# their plain code beside the IR (-ffat-lto-objects), so the benchmarks
# that link build/rel/lib.a without -flto still link; gcc-ar indexes the
# IR; the two .incbin blobs stay out of it (their data is top-level asm).
LTO       ?= 1
ifeq ($(LTO),1)
REL_LTO   := -flto=auto -ffat-lto-objects
AR        := gcc-ar
endif
PGO       ?= 1
PGO_DIR   := $(CURDIR)/build/pgo
PGO_NAME   = -dumpdir $(CURDIR)/build/pgo-names/ -dumpbase $(subst /,__,$*)
GEN_CFLAGS := $(BASEFLAGS) -O2 -g -fprofile-generate -fprofile-update=atomic -fprofile-dir=$(PGO_DIR)
ifeq ($(PGO),1)
REL_CFLAGS := $(BASEFLAGS) -O2 -g $(REL_LTO) -fprofile-use -fprofile-partial-training -fprofile-dir=$(PGO_DIR) \
	-Wno-missing-profile -Wno-error=maybe-uninitialized
REL_PROFILE := build/pgo/trained
REL_NAME    = $(PGO_NAME)
else
REL_CFLAGS := $(BASEFLAGS) -O2 -g $(REL_LTO)
REL_PROFILE :=
REL_NAME    :=
endif
# The release objects remember the flags they were built with: a change
# (PGO=0 after PGO=1, or back) rebuilds them instead of mixing the two.
REL_FLAGS := build/rel/flags
$(shell mkdir -p build/rel && { echo '$(REL_CFLAGS)' | cmp -s - $(REL_FLAGS) || echo '$(REL_CFLAGS)' >$(REL_FLAGS); })
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := $(BASEFLAGS) -O1 -g $(SAN_FLAGS) -DWM_TESTING
LDLIBS    := $(PKG_LIBS) -lzint -lpthread -lm

CODE_DIRS := engine net wal snapshot shard-router
ALL_SRCS  := $(shell find $(CODE_DIRS) -name '*.c' 2>/dev/null | sort)
MAIN_SRCS := $(filter %_main.c,$(ALL_SRCS))
LIB_SRCS  := $(filter-out %_main.c,$(ALL_SRCS))
TEST_SRCS := $(sort $(wildcard tests/*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))

REL_OBJS  := $(LIB_SRCS:%.c=build/rel/%.o)
GEN_OBJS  := $(LIB_SRCS:%.c=build/gen/%.o)
SAN_OBJS  := $(LIB_SRCS:%.c=build/san/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=build/san/%.o)
FUZZ_OBJS := $(LIB_SRCS:%.c=build/fuzz/%.o)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=build/fuzz/bin/%)

PROGRAMS  := wm-shard wm-router wm-ctl
MAIN_wm-shard := engine/shard_main.c
MAIN_wm-router := shard-router/router_main.c
MAIN_wm-ctl   := snapshot/ctl_main.c

FUZZ_SECONDS ?= 30
TEST_ARGS    ?=
DATA_DIR     ?= ./var
LISTEN       ?= 127.0.0.1:8080

.PHONY: all run test test-build tools fuzz bench chaos clean deps deps-fuzz deps-bench
.DEFAULT_GOAL := all

# deps runs first and alone (a recursive make), so `make -j` never compiles
# before the packages it needs are installed.
# The release build compiles every source twice and trains in between
# (PGO above): without a -j of the caller's, it uses every core.
JOBS = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
all: deps
	@$(MAKE) --no-print-directory $(JOBS) $(PROGRAMS:%=bin/%)

deps:
	@.ci/deps build
deps-fuzz:
	@.ci/deps fuzz
deps-bench:
	@.ci/deps bench

# One link rule per program and build flavour, generated from MAIN_<program>.
define program_rules
bin/$(1): build/rel/lib.a build/rel/$(MAIN_$(1):.c=.o)
	@mkdir -p $$(@D)
	$$(CC) $$(REL_CFLAGS) -o $$@ build/rel/$(MAIN_$(1):.c=.o) build/rel/lib.a $$(LDLIBS)
build/san/bin/$(1): build/san/lib.a build/san/$(MAIN_$(1):.c=.o)
	@mkdir -p $$(@D)
	$$(CC) $$(SAN_CFLAGS) -o $$@ build/san/$(MAIN_$(1):.c=.o) build/san/lib.a $$(LDLIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rules,$(p))))

build/rel/lib.a: $(REL_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
build/gen/lib.a: $(GEN_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
build/gen/bin/wm-shard: build/gen/lib.a build/gen/$(MAIN_wm-shard:.c=.o)
	@mkdir -p $(@D)
	$(CC) $(GEN_CFLAGS) -o $@ build/gen/$(MAIN_wm-shard:.c=.o) build/gen/lib.a $(LDLIBS)
build/gen/bin/wm-router: build/gen/lib.a build/gen/$(MAIN_wm-router:.c=.o)
	@mkdir -p $(@D)
	$(CC) $(GEN_CFLAGS) -o $@ build/gen/$(MAIN_wm-router:.c=.o) build/gen/lib.a $(LDLIBS)
# The training (see REL_CFLAGS): the counts, or none when it failed.
build/pgo/trained: build/gen/bin/wm-shard build/gen/bin/wm-router perf/pgo_train.sh perf/world.sh
	@rm -rf build/pgo && mkdir -p build/pgo
	@perf/pgo_train.sh build/gen/bin/wm-shard build/gen/bin/wm-router >build/pgo/train.log 2>&1 || \
	  { find build/pgo -name '*.gcda' -delete; echo "pgo: the training failed (build/pgo/train.log): building without a profile" >&2; \
	    tail -n 5 build/pgo/train.log >&2; }
	@echo "pgo: trained on $$(grep -c '^pgo:' build/pgo/train.log) request kinds, $$(find build/pgo -name '*.gcda' | wc -l) files of counts"
	@touch $@
build/san/lib.a: $(SAN_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

build/rel/%.o: %.c $(REL_PROFILE) $(REL_FLAGS)
	@mkdir -p $(@D) build/pgo-names
	$(CC) $(REL_CFLAGS) $(REL_NAME) -c $< -o $@
build/gen/%.o: %.c
	@mkdir -p $(@D) build/pgo-names
	$(CC) $(GEN_CFLAGS) $(PGO_NAME) -c $< -o $@
build/san/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -c $< -o $@

build/san/wm-tests: $(TEST_OBJS) build/san/lib.a
	$(CC) $(SAN_CFLAGS) -o $@ $(TEST_OBJS) build/san/lib.a $(LDLIBS) $(shell pkg-config --libs criterion) -ljansson

test-build: deps
	@$(MAKE) --no-print-directory build/san/wm-tests $(PROGRAMS:%=build/san/bin/%) $(TOOLS:%=build/san/bin/%)

# Test tools (tests/tools/*.c, e.g. wm-delay-proxy): stand-alone programs the
# tests start, built sanitized next to the programs (WM_BIN_DIR), linked with
# nothing of the library; `make tools` builds release copies in bin/.
TOOLS := $(patsubst tests/tools/%.c,%,$(sort $(wildcard tests/tools/*.c)))
define tool_rules
build/san/bin/$(1): tests/tools/$(1).c
	@mkdir -p $$(@D)
	$$(CC) $$(filter-out -MMD -MP,$$(SAN_CFLAGS)) -o $$@ $$<
bin/$(1): tests/tools/$(1).c
	@mkdir -p $$(@D)
	$$(CC) $$(filter-out -MMD -MP,$$(REL_CFLAGS)) -o $$@ $$<
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rules,$(t))))
tools: $(TOOLS:%=bin/%)

# The test binary finds the sanitized programs through WM_BIN_DIR.  Every
# response the integration tests read is recorded in build/contract and then
# checked against api/openapi.json (tests/contract/check.py; its self-test
# first proves it can fail; a filtered run may record nothing).
# /usr/bin/python3: Debian's, with jsonschema.
# Leaks fail the test that leaked: WM_TEST asserts LeakSanitizer's check at
# the end of every body (tests/wm_test.h).  LSAN_OPTIONS=exitcode=0 keeps the
# report at process exit but stops it from deciding the run: that report
# comes from Criterion's runner process, which runs none of our code (a
# 48-byte allocation inside libcriterion was seen there once in ~10 runs).
#
# The second run is the same HTTP suites through a cluster
# (WM_TEST_TOPOLOGY=cluster, tests/harness.h: every wm-shard a test starts is
# a router in front of three shards split as `make run` splits them), so the
# deployment cannot show in the API.  Left out: suites about one process
# (crashes, WAL and disk, connections, TLS, snapshots, media files, the CLI,
# the shard's own audit, the router and cluster suites themselves, the
# renderer, the webhook library, the decision log, the delay proxy and the
# partition harness, which start no shard, the 2PC suites and the partner
# portal's, which start their own clusters), the one tax test that reads a single shard's log file and
# the one order test that counts a single shard's WAL transactions (through
# a router, /metrics is one shard's, which also applies other shards' rows).
# Orders whose stock lies on another shard than their destination
# (tax_2026, vat_reconcile) run as two-phase commits there.
TEST_CLUSTER_SKIP := order_crash/* media/* router/* conn/* audit/* tls/* shard_map_proc/* durability/* full_disk/* \
	snapshot_child/* ops/* http/* ctl/* tax_2026/stale_reference_data_warns_in_metrics_and_log \
	replication/* replication_units/* \
	cluster_orders/* cluster_fulfil/* retention/* txn_part/* txn_crash/* txn_partition/* txn_delay/* fanout/* route_class/* documents/* webhooks/* \
	decision_log/* delay_proxy/* netns/* chaos/* portal/* portal_browser/* checks/* checks_cluster/* \
	auth/minted_key_is_shown_once_and_only_its_hash_is_stored \
	auth/operator_key_is_printed_once_or_taken_from_the_environment \
	order/an_order_is_one_wal_transaction fulfilment/kill9_* returns/kill9_* settlement/kill9_* order_documents/kill9_*
empty :=
space := $(empty) $(empty)
TEST_ENV = WM_BIN_DIR=$(CURDIR)/build/san/bin WM_SRC_DIR=$(CURDIR) WM_CONTRACT_DIR=$(CURDIR)/build/contract \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=exitcode=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test: test-build
	rm -rf build/contract && mkdir -p build/contract
	$(TEST_ENV) build/san/wm-tests $(TEST_ARGS)
	$(if $(TEST_ARGS),,$(TEST_ENV) WM_TEST_TOPOLOGY=cluster build/san/wm-tests --filter='!($(subst $(space),|,$(strip $(TEST_CLUSTER_SKIP))))')
	/usr/bin/python3 .ci/include-cycles --check
	/usr/bin/python3 tests/contract/check.py --self-test api/openapi.json
	/usr/bin/python3 tests/contract/check.py $(if $(TEST_ARGS),--allow-empty) api/openapi.json build/contract

# The long randomized campaign of cross-shard orders under a nemesis
# (tests/test_chaos.c; make test runs a bounded one with seed 42).  SEED
# reproduces a run (default: drawn and printed); MINUTES is its length.
MINUTES ?= 10
chaos: test-build
	@seed=$${SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "make chaos SEED=$$seed MINUTES=$(MINUTES)"; \
	WM_CHAOS_SEED=$$seed WM_CHAOS_SECONDS=$$(( $(MINUTES) * 60 )) \
	  $(filter-out WM_CONTRACT_DIR=%,$(TEST_ENV)) build/san/wm-tests --filter='chaos/*' --verbose

# A local cluster (shard-router/run-local.sh): a router on $(LISTEN), the
# catalogue home and two country shards, data under $(DATA_DIR).
run: all
	@BIN=bin DATA_DIR=$(DATA_DIR) LISTEN=$(LISTEN) shard-router/run-local.sh

# The OpenAPI document is embedded with .incbin: rebuild when it changes.
build/rel/engine/edge/openapi_blob.o build/gen/engine/edge/openapi_blob.o build/san/engine/edge/openapi_blob.o build/fuzz/engine/edge/openapi_blob.o: api/openapi.json
# ... and so are the partner portal's files (shard-router/portal_blob.c).
PORTAL_FILES := shard-router/portal/index.html shard-router/portal/portal.css shard-router/portal/portal.js
build/rel/shard-router/portal_blob.o build/gen/shard-router/portal_blob.o build/san/shard-router/portal_blob.o build/fuzz/shard-router/portal_blob.o: $(PORTAL_FILES)
# (top-level asm: kept out of LTO, which would drop or misplace it)
build/rel/engine/edge/openapi_blob.o build/rel/shard-router/portal_blob.o: REL_CFLAGS += -fno-lto

# ---- fuzzing (clang + libFuzzer) -----------------------------------------
FUZZ_CFLAGS := -std=c17 -D_GNU_SOURCE -I. -Wall -Wextra -Werror $(PKG_CFLAGS) -g -O1 \
	-fsanitize=address,undefined -fno-sanitize-recover=all -DWM_TESTING -DWM_FUZZ -MMD -MP

build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/lib.a: $(FUZZ_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
build/fuzz/bin/%: tests/fuzz/%.c build/fuzz/lib.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/lib.a $(LDLIBS)

fuzz: deps-fuzz $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do \
	  n=$$(basename $$f); mkdir -p build/fuzz/corpus/$$n; \
	  seeds=tests/fuzz/corpus/$$n; [ -d $$seeds ] || seeds=; \
	  echo "== $$n for $(FUZZ_SECONDS)s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/fuzz/corpus/$$n $$seeds 2>&1 \
	    | grep -E 'stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|Done' || exit 1; \
	done

# ---- benchmarks -----------------------------------------------------------
bench: deps-bench all
	perf/bench.sh

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
