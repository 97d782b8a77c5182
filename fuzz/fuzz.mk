# fuzz/fuzz.mk — libFuzzer targets of every parser of outside input (included by the Makefile).
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS='roce engine']   each target FUZZ_SECONDS on its corpus
#   make test-fuzz                                             the short pass of `make test` (FUZZ_CI_SECONDS each)
#
# Targets are built with clang's libFuzzer, AddressSanitizer (with leak
# checking) and UndefinedBehaviorSanitizer, every UB report fatal. Seeds are
# made at build time from the project's fixtures (fuzz/seeds.sh); what the
# fuzzer adds stays in $(FUZZ_DIR)/corpus between runs; reproducers land in
# $(FUZZ_DIR)/artifacts/TARGET/. fuzz/README.md says what each target feeds.

FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_CI_SECONDS ?= 8
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_ALL      := roce bundle engine swconfig ctlmsg incctl topo results group
FUZZ_TARGETS  ?= $(FUZZ_ALL)
FUZZ_CFLAGS   := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Werror=implicit-function-declaration -Wno-unused-parameter -Wno-string-plus-int \
                 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

FUZZ_SWITCH := switch/roce.c switch/crc32.c
FUZZ_ENGINE := switch/engine.c switch/rc_conn.c switch/agg.c $(FUZZ_SWITCH)

$(FUZZ_DIR)/fuzz_roce: fuzz/fuzz_roce.c $(FUZZ_SWITCH)
$(FUZZ_DIR)/fuzz_roce: FUZZ_SRC = fuzz/fuzz_roce.c $(FUZZ_SWITCH)
$(FUZZ_DIR)/fuzz_bundle: fuzz/fuzz_bundle.c switch/bundle.c $(FUZZ_SWITCH)
$(FUZZ_DIR)/fuzz_bundle: FUZZ_SRC = fuzz/fuzz_bundle.c switch/bundle.c $(FUZZ_SWITCH)
$(FUZZ_DIR)/fuzz_engine: fuzz/fuzz_engine.c switch/bundle.c $(FUZZ_ENGINE)
$(FUZZ_DIR)/fuzz_engine: FUZZ_SRC = fuzz/fuzz_engine.c switch/bundle.c $(FUZZ_ENGINE)
$(FUZZ_DIR)/fuzz_swconfig: fuzz/fuzz_swconfig.c switch/swconfig.c $(FUZZ_ENGINE)
$(FUZZ_DIR)/fuzz_swconfig: FUZZ_SRC = fuzz/fuzz_swconfig.c switch/swconfig.c $(FUZZ_ENGINE)
$(FUZZ_DIR)/fuzz_ctlmsg: fuzz/fuzz_ctlmsg.c $(CTLMSG)
$(FUZZ_DIR)/fuzz_ctlmsg: FUZZ_SRC = fuzz/fuzz_ctlmsg.c proto/ctlmsg.c
$(FUZZ_DIR)/fuzz_incctl: fuzz/fuzz_incctl.c $(CONTROLLER_SRC) proto/ctlauth.c switch/swconfig.c
$(FUZZ_DIR)/fuzz_incctl: FUZZ_SRC = fuzz/fuzz_incctl.c controller/plan.c topology/topo.c proto/ctlmsg.c proto/ctlauth.c switch/swconfig.c
$(FUZZ_DIR)/fuzz_topo: fuzz/fuzz_topo.c $(TOPO_SRC) controller/plan.c switch/swconfig.c
$(FUZZ_DIR)/fuzz_topo: FUZZ_SRC = fuzz/fuzz_topo.c topology/topo.c controller/plan.c switch/swconfig.c
$(FUZZ_DIR)/fuzz_results: fuzz/fuzz_results.c $(ANALYSIS_SRC)
$(FUZZ_DIR)/fuzz_results: FUZZ_SRC = fuzz/fuzz_results.c analysis/results.c analysis/loggp.c
$(FUZZ_DIR)/fuzz_group: fuzz/fuzz_group.c tests/unit/fake_comm.c tests/unit/fake_comm.h hostlib/group.c hostlib/error.c hostlib/internal.h hostlib/inccl.h proto/ctlauth.c $(CTLMSG)
$(FUZZ_DIR)/fuzz_group: FUZZ_SRC = fuzz/fuzz_group.c tests/unit/fake_comm.c hostlib/error.c proto/ctlmsg.c proto/ctlauth.c

FUZZ_BINS := $(FUZZ_ALL:%=$(FUZZ_DIR)/fuzz_%)
$(FUZZ_BINS): fuzz/fuzz.h fuzz/fuzz.mk | $(DEPS_STAMP)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRC) -lyaml $(CRC_LIBS) $(SODIUM) -lm

# the seeds: made from tests/fixtures, topology/, tests/topology, tests/analysis (fuzz/seeds.sh)
$(FUZZ_DIR)/mkseeds: fuzz/mkseeds.c switch/bundle.c $(FUZZ_SWITCH) $(TOPO_SRC) controller/plan.c | $(DEPS_STAMP)
	@mkdir -p $(FUZZ_DIR)
	$(CC) $(CFLAGS) -o $@ fuzz/mkseeds.c switch/bundle.c $(FUZZ_SWITCH) topology/topo.c controller/plan.c \
	  -lpcap -lyaml $(CRC_LIBS)
$(FUZZ_DIR)/seeds/.made: fuzz/seeds.sh $(FUZZ_DIR)/mkseeds tests/fixtures/*.pcap topology/*.yaml tests/topology/invalid/* \
                         $(wildcard tests/analysis/samples/*/* tests/analysis/bad/*)
	@fuzz/seeds.sh $(FUZZ_DIR)/seeds $(FUZZ_DIR)/mkseeds
	@touch $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_DIR)/seeds/.made

fuzz: fuzz-build
	@fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# CI's short pass: every target FUZZ_CI_SECONDS (9 x 8 s: 83 s; 105 s with the build from a fresh clone)
test-fuzz: fuzz-build
	@tests/run-phase.sh fuzz fuzz/run.sh $(FUZZ_DIR) $(FUZZ_CI_SECONDS) $(FUZZ_ALL)
