# inclab — reproducible testbed for in-network computing collectives.
# `make help` lists the targets. Every target installs what it needs (make deps).

TOPOLOGY ?= topology/1-2-4.yaml
BUILD    ?= build
CC       ?= cc
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter
export TOPOLOGY

# `make deps` is idempotent and quick when everything is installed; every
# target that needs packages depends on a stamp: DEPS_STAMP for building and
# `make check` (lab/packages.build: no hypervisor), LAB_DEPS_STAMP for what
# boots a lab (lab/packages.host as well).
DEPS_STAMP     := $(BUILD)/.deps-build-$(shell cat lab/packages.build | sha256sum | cut -c1-12)
LAB_DEPS_STAMP := $(BUILD)/.deps-lab-$(shell cat lab/packages.build lab/packages.host | sha256sum | cut -c1-12)

.PHONY: test-fuzz-build all help run deps payload install uninstall test-install images bench-switch bench-order lab-up lab-stop lab-down lab-status lab-graph lab-clocks lab-reboot lab-ssh lab-console lab-capture lab-sync \
        test check test-harness test-deps test-lab-down test-lab-stop test-sync test-guest-time test-unit test-golden test-lab test-lab-aborts test-lab-mixed test-lab-hypervisors scale-check test-experiments golden-update clean \
        exp-allreduce exp-reduce exp-broadcast exp-barrier exp-allgather exp-reducescatter exp-alltoall exp-sweep exp-paper plots test-analysis test-cpusample test-capture test-swports test-tunnels \
        fuzz fuzz-build test-fuzz sim-allreduce sim-reduce sim-broadcast sim-allgather sim-reducescatter sim-alltoall \
        sim-barrier test-sim

all: $(BUILD)/topogen $(BUILD)/incctl $(BUILD)/udpcap $(BUILD)/tsckhz $(BUILD)/rcecho $(BUILD)/rc_probe $(BUILD)/incswitch \
     $(BUILD)/libinccl.a $(BUILD)/libinccl.so $(BUILD)/inccl_check $(BUILD)/inccl_perf $(BUILD)/mpi_perf \
     $(BUILD)/increport

help:
	@echo "make run                   the main job: bring the lab up if it is not (namespace switches), run a"
	@echo "                           verified AllReduce sweep with every baseline, draw charts, write results/REPORT.md"
	@echo "                           [SIZES='1M 4M 16M 64M' ROUNDS=3 SWITCHES=netns|vm TOPOLOGY=...]"
	@echo "make deps                  install the Debian packages inclab needs (idempotent; waits for a busy apt)"
	@echo "make images                build or reuse the guest images (cached in /var/cache/inclab)"
	@echo "make lab-up                boot the lab of TOPOLOGY (default topology/1-2-4.yaml), wait until ready;"
	@echo "                           SWITCHES=netns: switches and controller as network namespaces (README)"
	@echo "make lab-status [FORMAT=json]   state of every node: a table, or JSON for scripts (README)"
	@echo "make lab-graph [TOPOLOGY=...] [SWITCHES=netns] [GRAPH_DIR=results/graphs]   draw the topology"
	@echo "                           (graphviz SVG and PNG; the lab's own when TOPOLOGY is not given)"
	@echo "make lab-stop              stop the lab keeping its state (VM memory saved); the next lab-up restores it"
	@echo "make lab-clocks            how fast each VM's clock ran against this machine's since lab-up"
	@echo "make lab-reboot NODE='sw2 pku4' [HARD=1]   reboot nodes (HARD: power cycle) and wait until ready again"
	@echo "make lab-ssh NODE=pku1 [CMD='...']   run a command on a node (no CMD: serial console)"
	@echo "make lab-console NODE=sw1  serial console of a node (leave with Ctrl-])"
	@echo "make lab-capture LINK='sw1-pku1 sw0-sw1' [SECONDS=10]  pcapng of tree edges into results/captures/, frames lost counted (interfaces', switches' counters)"
	@echo "make lab-sync              copy freshly built binaries into the running lab, restart its daemons"
	@echo "make lab-down              remove every domain, network, disk and process of the lab"
	@echo "make exp-allreduce SIZE=512M [DTYPE= OP= ITERS= BASELINES=]   AllReduce on the lab's hosts + baselines,"
	@echo "                           stored in results/ (also exp-reduce / exp-broadcast ROOT=, exp-barrier,"
	@echo "                           exp-allgather, exp-reducescatter OP=, exp-alltoall (SIZE: the whole buffer),"
	@echo "                           exp-sweep MIN=1M MAX=1G FACTOR=2 or SIZES='16M 512M' [COLLECTIVES='allreduce broadcast'],"
	@echo "                           exp-paper: the seed's table)"
	@echo "make sim-allreduce TOPOLOGY=1-32-1024 SIZE=64M RUN=results/sweep-... CORES=0   AllReduce in the"
	@echo "                           ns-3 simulator (INC and ring), stored in results/ like a lab run (sim/README.md);"
	@echo "                           also sim-reduce / sim-broadcast ROOT= (INC and the chain along the ring),"
	@echo "                           sim-allgather / sim-reducescatter / sim-alltoall (SIZE: the whole buffer), sim-barrier"
	@echo "                           (CORES: the cores every node shares, 0 a core each; default the run's)"
	@echo "make plots [RESULTS=results]  gnuplot charts (PNG, SVG) of every stored run and RESULTS/REPORT.md"
	@echo "make test                  unit, golden, a short fuzzing pass and lab system tests (what CI runs)"
	@echo "make test-lab [SWITCHES=vm|netns] [LAB_TEST_DEPTH=full|core]   the lab system test alone"
	@echo "make test-lab-mixed        the 1-2-2-2 tree (switches with host and switch children), every collective"
	@echo "make test-lab-hypervisors  1-2-4 over two hypervisors (qemu:///system, qemu+ssh:// on loopback), every collective"
	@echo "make check                 unit and golden tests only (no VMs)"
	@echo "make install [DESTDIR=] [PREFIX=/usr/local]   libinccl (+ inccl.pc, inccl.h), the tools, the man pages"
	@echo "make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS='roce engine']   libFuzzer on every parser of outside input"
	@echo "                           (frames, bundles, the engine, switch rules, control messages, the controller,"
	@echo "                           libinccl's bootstrap, topology and result files), FUZZ_SECONDS each (fuzz/README.md)"
	@echo "make scale-check           by hand: 1-4-16 with namespace switches, every collective on 16 ranks, a sweep"

$(DEPS_STAMP): lab/packages.build lab/deps.sh
	@lab/deps.sh build
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.deps-build-* && touch $@
$(LAB_DEPS_STAMP): lab/packages.build lab/packages.host lab/deps.sh
	@lab/deps.sh build lab
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.deps-* && touch $@ $(DEPS_STAMP)

deps:
	@lab/deps.sh build lab
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.deps-* && touch $(DEPS_STAMP) $(LAB_DEPS_STAMP)

TOPO_SRC := topology/topo.c topology/topo.h
# libsodium (proto/ctlauth.c) linked static, as libdeflate: the guest images need nothing more
SODIUM := -l:libsodium.a
CTLMSG := proto/ctlmsg.c proto/ctlmsg.h proto/ctlauth.c proto/ctlauth.h
$(BUILD)/topogen: topology/topogen.c $(TOPO_SRC) $(CTLMSG) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ topology/topogen.c topology/topo.c proto/ctlauth.c proto/ctlmsg.c -lyaml -ljansson $(SODIUM)

# the controller: topology + plan + control protocol (ctlmsg, shared with the switch and libinccl)
CONTROLLER_SRC := controller/incctl.c controller/plan.c controller/plan.h $(CTLMSG) $(TOPO_SRC)
$(BUILD)/incctl: $(CONTROLLER_SRC) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$(CONTROLLER_SRC)) -lyaml $(SODIUM)

$(BUILD)/tsckhz: lab/tsckhz.c | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ lab/tsckhz.c
$(BUILD)/udpcap: lab/udpcap.c lab/pcapng.c lab/pcapng.h switch/portstat.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ lab/udpcap.c lab/pcapng.c -lpcap
# the host's own work per byte (byte swap, copy, float sum) that loggp.sh measures in a host VM for the model
$(BUILD)/hostwork: experiments/hostwork.c proto/inc_elem.h proto/inc_proto.h | $(DEPS_STAMP)
	$(CC) $(CFLAGS) -o $@ experiments/hostwork.c
all: $(BUILD)/hostwork
# the lab machine's sampler of processes' CPU (QEMU, incswitch) for the CPU inside inccl_perf -X's windows
$(BUILD)/cpusample: experiments/cpusample.c | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ experiments/cpusample.c
all: $(BUILD)/cpusample
# the rows of an experiment's cpuwin.csv from cpusample's file and the ranks' inccl_perf -X files (exp.sh)
$(BUILD)/cpuwin: analysis/cpuwin_cmd.c analysis/cpuwin.c analysis/cpuwin.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ianalysis -o $@ analysis/cpuwin_cmd.c analysis/cpuwin.c -lm
all: $(BUILD)/cpuwin
# the pcapng writer read back by libpcap and tshark; udpcap's argument checks (it runs the udpcap beside it)
$(BUILD)/test_pcapng: tests/unit/test_pcapng.c lab/pcapng.c lab/pcapng.h $(BUILD)/udpcap | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ilab -o $@ tests/unit/test_pcapng.c lab/pcapng.c -lpcap -lcmocka

# the libraries of switch/crc32.c: libdeflate static (the guest images lack it), ISA-L shared
# (Debian ships no libisal.a; the images install libisal2, images/packages.base)
CRC_LIBS := -l:libdeflate.a -lisal
SWITCH_CORE := switch/roce.c switch/roce.h switch/crc32.c switch/crc32.h switch/cpu.h switch/rc_conn.c switch/rc_conn.h
$(BUILD)/rcecho: switch/rcecho.c $(SWITCH_CORE) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ switch/rcecho.c switch/rc_conn.c switch/roce.c switch/crc32.c -lpcap $(CRC_LIBS)

SWITCH_DAEMON := switch/incswitch.c switch/portstat.c switch/portstat.h switch/swconfig.c switch/swconfig.h switch/engine.c switch/engine.h switch/bundle.c switch/bundle.h \
                 switch/agg.c proto/inc_proto.h proto/inc_elem.h $(CTLMSG) $(SWITCH_CORE)
$(BUILD)/incswitch: $(SWITCH_DAEMON) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ $(filter %.c,$(SWITCH_DAEMON)) -lpcap -lyaml $(CRC_LIBS) $(SODIUM) -lm

# libinccl: one public header (hostlib/inccl.h), static and shared.
# Users link it with `pkg-config --cflags --libs inccl` (make install; --static
# for the static library, which also needs -libverbs -lyaml -lsodium).
# The version is read from the header, its only home: the shared library is
# libinccl.so.MAJOR.MINOR.PATCH with the SONAME libinccl.so.MAJOR, and the
# links libinccl.so.MAJOR and libinccl.so (for -linccl) point to it.
inccl_version_part = $(shell sed -n 's/^\#define INCCL_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' hostlib/inccl.h)
INCCL_MAJOR := $(call inccl_version_part,MAJOR)
INCCL_VERSION := $(INCCL_MAJOR).$(call inccl_version_part,MINOR).$(call inccl_version_part,PATCH)
ifneq ($(shell echo '$(INCCL_VERSION)' | grep -xE '[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}'),$(INCCL_VERSION))
$(error hostlib/inccl.h: INCCL_VERSION_MAJOR, _MINOR and _PATCH must each be defined once, as 0..99; read '$(INCCL_VERSION)')
endif
INCCL_SONAME := libinccl.so.$(INCCL_MAJOR)
INCCL_SO := libinccl.so.$(INCCL_VERSION)
# what hostlib/install.sh and tests/harness/test-install.sh are told of it
INCCL_NAMES = INCCL_VERSION=$(INCCL_VERSION) INCCL_SONAME=$(INCCL_SONAME) INCCL_SO=$(INCCL_SO)
INCCL_OBJ := $(BUILD)/inccl/error.o $(BUILD)/inccl/cq.o $(BUILD)/inccl/ring.o $(BUILD)/inccl/comm.o $(BUILD)/inccl/coll.o $(BUILD)/inccl/group.o \
             $(BUILD)/inccl/version.o $(BUILD)/inccl/ctlmsg.o $(BUILD)/inccl/ctlauth.o
$(BUILD)/inccl/%.o: hostlib/%.c hostlib/inccl.h hostlib/internal.h proto/inc_proto.h proto/inc_elem.h proto/ctlmsg.h proto/ctlauth.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/inccl
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -DINCCL_BUILD -Ihostlib -c -o $@ $<
$(BUILD)/inccl/ctlmsg.o: proto/ctlmsg.c proto/ctlmsg.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/inccl
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<
$(BUILD)/inccl/ctlauth.o: proto/ctlauth.c proto/ctlauth.h proto/ctlmsg.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/inccl
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<
$(BUILD)/libinccl.a: $(INCCL_OBJ)
	ar rcs $@ $^
$(BUILD)/$(INCCL_SO): $(INCCL_OBJ)
	$(CC) -shared -Wl,-soname,$(INCCL_SONAME) -o $@ $^ -libverbs -lyaml -Wl,--exclude-libs,ALL $(SODIUM)
$(BUILD)/libinccl.so: $(BUILD)/$(INCCL_SO)
	ln -sfn $(INCCL_SO) $(BUILD)/$(INCCL_SONAME)
	ln -sfn $(INCCL_SONAME) $@
# make install DESTDIR=... PREFIX=... (default /usr/local; also BINDIR LIBDIR INCLUDEDIR MANDIR
# PKGCONFIGDIR): libinccl (shared with its links, static), inccl.h, inccl.pc, the tools and the man
# pages (hostlib/install.sh, which reads the directories from the environment: make exports them)
INSTALL_TOOLS := $(BUILD)/inccl_perf $(BUILD)/inccl_check $(BUILD)/incctl $(BUILD)/incswitch $(BUILD)/topogen $(BUILD)/increport
install: $(BUILD)/libinccl.so $(BUILD)/libinccl.a $(INSTALL_TOOLS)
	@BUILD=$(abspath $(BUILD)) $(INCCL_NAMES) hostlib/install.sh install
uninstall:
	@BUILD=$(abspath $(BUILD)) $(INCCL_NAMES) hostlib/install.sh uninstall

# check_ref: the host-side reference (tree spec, input patterns, expected results, barrier rule)
CHECK_REF := hostlib/tools/check_ref.c hostlib/tools/check_ref.h
$(BUILD)/inccl_check: hostlib/tools/inccl_check.c $(CHECK_REF) hostlib/tools/perf_opts.c hostlib/tools/perf_opts.h $(BUILD)/libinccl.a
	$(CC) $(CFLAGS) -Ihostlib -o $@ hostlib/tools/inccl_check.c hostlib/tools/check_ref.c hostlib/tools/perf_opts.c $(BUILD)/libinccl.a \
	  -libverbs -lyaml $(SODIUM) -lm
PERF_SRC := hostlib/tools/inccl_perf.c hostlib/tools/perf_opts.c hostlib/tools/perf_opts.h proto/inc_elem.h $(CHECK_REF)
$(BUILD)/inccl_perf: $(PERF_SRC) $(BUILD)/libinccl.a
	$(CC) $(CFLAGS) -Ihostlib -o $@ $(filter %.c,$(PERF_SRC)) $(BUILD)/libinccl.a -libverbs -lyaml $(SODIUM) -lm

$(BUILD)/rc_probe: hostlib/tools/rc_probe.c | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ hostlib/tools/rc_probe.c -libverbs

# The project's binaries, laid out per role as they are installed in the images.
PAYLOAD := $(BUILD)/payload
payload: all
	@rm -rf $(PAYLOAD) && mkdir -p $(PAYLOAD)/host/usr/local/bin $(PAYLOAD)/switch/usr/local/bin $(PAYLOAD)/controller
	@install -m 755 $(BUILD)/rc_probe $(BUILD)/inccl_check $(BUILD)/inccl_perf $(BUILD)/mpi_perf $(PAYLOAD)/host/usr/local/bin/
	@install -D -m 644 $(BUILD)/$(INCCL_SO) $(PAYLOAD)/host/usr/local/lib/$(INCCL_SO)
	@ln -s $(INCCL_SO) $(PAYLOAD)/host/usr/local/lib/$(INCCL_SONAME)
	@ln -s $(INCCL_SONAME) $(PAYLOAD)/host/usr/local/lib/libinccl.so
	@install -D -m 644 hostlib/inccl.h $(PAYLOAD)/host/usr/local/include/inccl.h
	@install -m 755 $(BUILD)/rcecho $(BUILD)/incswitch $(PAYLOAD)/switch/usr/local/bin/
	@install -D -m 755 $(BUILD)/incctl $(PAYLOAD)/controller/usr/local/bin/incctl
export INCLAB_PAYLOAD := $(abspath $(PAYLOAD))

images: $(LAB_DEPS_STAMP) payload
	images/build.sh --payload $(PAYLOAD)

lab-up: $(LAB_DEPS_STAMP) payload
	lab/lab.sh up
lab-stop:
	lab/lab.sh stop
lab-down:
	lab/lab.sh down
# FORMAT=table (default) or json (README: "lab-status FORMAT=json")
lab-status:
	@lab/lab.sh status --format "$${FORMAT:-table}"
# the topology as SVG and PNG (graphviz) in GRAPH_DIR (default results/graphs): the
# lab's own when TOPOLOGY is not given on the command line, else TOPOLOGY's
lab-graph: $(BUILD)/topogen
	@$(if $(filter file,$(origin TOPOLOGY)),env -u TOPOLOGY) INCLAB_BUILD=$(abspath $(BUILD)) lab/lab.sh graph
lab-clocks:
	lab/lab.sh clocks
# NODE, CMD, LINK, SECONDS, RESULTS and the experiments' settings reach the
# scripts through the environment (make exports what its command line sets),
# never pasted into a recipe's shell command line, where a quote or a ; in them
# would be shell syntax.
lab-reboot:
	@set -f; lab/lab.sh reboot $$NODE
lab-ssh:
	@lab/lab.sh ssh "$$NODE" $(if $(value CMD),"$$CMD")
lab-console:
	lab/lab.sh console "$$NODE"
lab-sync: payload
	lab/lab.sh sync
lab-capture: $(LAB_DEPS_STAMP) $(BUILD)/udpcap
	lab/lab.sh capture "$$LINK" "$$SECONDS"

# ---- experiments -----------------------------------------------------------
# experiments/exp.sh reads SIZE ROOT DTYPE OP ITERS WARMUP MIN MAX FACTOR SIZES COLLECTIVES BASELINES RESULTS ROUNDS ROUND_BUDGET WINDOW
# MESSAGE from the environment (make exports them from its command line) and checks each
# the quick start's main job: lab up if needed, a verified AllReduce sweep with its baselines, charts, REPORT
run: $(LAB_DEPS_STAMP) payload $(BUILD)/increport $(BUILD)/hostwork
	experiments/run.sh
exp-allreduce exp-reduce exp-broadcast exp-barrier exp-allgather exp-reducescatter exp-alltoall exp-sweep exp-paper: $(LAB_DEPS_STAMP) payload $(BUILD)/hostwork
	experiments/exp.sh $(@:exp-%=%)
include experiments/baselines/baselines.mk

# ---- analysis: charts and results/REPORT.md from every stored run -------------
ANALYSIS_SRC := analysis/increport.c analysis/results.c analysis/results.h analysis/loggp.c analysis/loggp.h analysis/cpuwin.c analysis/cpuwin.h
$(BUILD)/increport: $(ANALYSIS_SRC) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ianalysis -o $@ $(filter %.c,$(ANALYSIS_SRC)) -lyaml -lm
plots: $(BUILD)/increport
	INCLAB_BUILD=$(abspath $(BUILD)) analysis/plots.sh "$${RESULTS:-results}"

# ---- simulation: the trees and libinccl's collectives in ns-3 (sim/README.md) ---
# incsim is C++ because ns-3 is; it links the lab's own C readers of topologies and runs.
SIM_CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter
SIM_LIBS     := -lns3-point-to-point -lns3-network -lns3-core -lyaml -lm
SIM_HDR      := sim/model.h sim/params.h
SIM_OBJ      := $(BUILD)/sim/model.o $(BUILD)/sim/tree.o $(BUILD)/sim/params.o
SIM_COBJ     := $(BUILD)/sim/topo.o $(BUILD)/sim/results.o $(BUILD)/sim/loggp.o
# the model compiled once for incsim and test_sim (it is the slow part of the build); params.cc reads
# runs through the analysis' structs and topology's: a change of their headers rebuilds it
$(SIM_OBJ): $(BUILD)/sim/%.o: sim/%.cc $(SIM_HDR) analysis/results.h analysis/loggp.h topology/topo.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(SIM_CXXFLAGS) -c -o $@ $<
$(BUILD)/sim/topo.o: topology/topo.c topology/topo.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/sim/results.o $(BUILD)/sim/loggp.o: $(BUILD)/sim/%.o: analysis/%.c $(ANALYSIS_SRC) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/incsim: sim/incsim.cc $(SIM_HDR) $(SIM_OBJ) $(SIM_COBJ) | $(DEPS_STAMP)
	$(CXX) $(SIM_CXXFLAGS) -o $@ sim/incsim.cc $(SIM_OBJ) $(SIM_COBJ) $(SIM_LIBS)
$(BUILD)/test_sim: sim/test_sim.cc $(SIM_HDR) $(SIM_OBJ) $(SIM_COBJ) | $(DEPS_STAMP)
	$(CXX) $(SIM_CXXFLAGS) -o $@ sim/test_sim.cc $(SIM_OBJ) $(SIM_COBJ) $(SIM_LIBS)
# sim/sim.sh reads TOPOLOGY SIZE SIZES RUN LINK_BW LINK_LATENCY HOST_O HOST_G SWITCH_FRAME CORES ALGORITHMS LOSS
# WINDOW MESSAGE SLOTS SEED QUEUE RTO UNIT ROOT RESULTS from the environment, as exp.sh does
sim-allreduce sim-reduce sim-broadcast sim-allgather sim-reducescatter sim-alltoall sim-barrier: $(BUILD)/incsim
	@INCLAB_BUILD=$(abspath $(BUILD)) sim/sim.sh $(@:sim-%=%)

# ---- tests -------------------------------------------------------------
# the lab tests share the lab's names: one after the other, also under make -j.
# The lab test runs in full with namespace switches and through its core phases
# (those that depend on how nodes are made) with VM switches (README, Tests).
test: check
	@$(MAKE) --no-print-directory test-fuzz
	@$(MAKE) --no-print-directory test-lab-aborts
	@$(MAKE) --no-print-directory test-lab SWITCHES=netns LAB_TEST_DEPTH=full
	@$(MAKE) --no-print-directory test-lab-mixed
	@$(MAKE) --no-print-directory test-lab-hypervisors
	@$(MAKE) --no-print-directory test-lab SWITCHES=vm LAB_TEST_DEPTH=core
check: test-harness test-deps test-lab-down test-lab-stop test-sync test-guest-time test-capture test-swports test-tunnels test-unit test-golden test-experiments test-cpusample test-baselines test-analysis test-install test-sim test-fuzz-build
# every fuzz target builds and links (clang, ASan, libFuzzer; ~17 s): a reader's API change shows here, not in make test
test-fuzz-build:
	@tests/run-phase.sh fuzz-build $(MAKE) --no-print-directory fuzz-build
# the test harness (tests/lib/harness.sh): no run that was cut short can pass
test-harness:
	@tests/run-phase.sh harness tests/harness/test-harness.sh
# deps.sh waits for a locked apt, gives up with the holder named (a fake apt-get; no package installed)
test-deps:
	@tests/run-phase.sh deps tests/harness/test-deps.sh
# lab-down removes exactly what its lab recorded, nothing of a neighbour's (no VM; a few seconds)
test-lab-down:
	@tests/run-phase.sh lab-down tests/harness/test-lab-down.sh
# udpcap on a veth between two namespaces of its own: pcapng per link, nothing lost, a loss said (no VM; ~15 s)
test-capture: $(BUILD)/udpcap
	@BUILD=$(BUILD) tests/run-phase.sh capture tests/harness/test-capture.sh
# incswitch's counters per port on a veth, a stand-in controller, known frames, lab.sh capture comparing them (no VM; ~10 s)
test-swports: $(BUILD)/incswitch $(BUILD)/udpcap
	@BUILD=$(BUILD) tests/run-phase.sh swports tests/harness/test-swports.sh

# lab/tunnels.sh: the VXLAN tunnels of a lab over two hypervisors, made in namespaces, traffic through them (~20 s)
test-tunnels: $(BUILD)/topogen
	@BUILD=$(BUILD) tests/run-phase.sh tunnels tests/harness/test-tunnels.sh
# the lab test cut short at several points must fail, and leave no lab
# lab-stop's refusals: a lab that does not exist, a state not its own (no VM; under a second)
test-lab-stop:
	@tests/run-phase.sh lab-stop tests/harness/test-lab-stop.sh
# lab-sync into two VMs over two hypervisors whose guest agents are stand-ins (20-45 s)
test-sync:
	@tests/run-phase.sh sync tests/harness/test-sync.sh
# lab.sh guest-time against a stand-in guest agent: the read of least round trip, refusals, hostile and silent agents (~45 s, mostly waiting)
test-guest-time:
	@tests/run-phase.sh guest-time tests/harness/test-guest-time.sh

test-lab-aborts: $(LAB_DEPS_STAMP) payload
	@BUILD=$(BUILD) tests/run-phase.sh lab-aborts tests/harness/test-lab-aborts.sh
test-experiments: $(BUILD)/topogen $(BUILD)/incctl $(BUILD)/inccl_perf $(BUILD)/cpusample $(BUILD)/cpuwin $(BUILD)/hostwork
	@INCLAB_BUILD=$(abspath $(BUILD)) tests/run-phase.sh experiments tests/experiments/test-exp-args.sh
# the CPU sampler on this machine's processes (a busy shell, a few seconds)
test-cpusample: $(BUILD)/cpusample $(BUILD)/cpuwin
	@INCLAB_BUILD=$(abspath $(BUILD)) tests/run-phase.sh cpusample tests/experiments/test-cpusample.sh
test-analysis: $(BUILD)/increport
	@BUILD=$(BUILD) tests/run-phase.sh analysis tests/analysis/test-plots.sh
# the simulator: its model against hand-computed values, sim-allreduce on small trees read back by increport and plots
test-sim: $(BUILD)/incsim $(BUILD)/test_sim $(BUILD)/increport
	@INCLAB_BUILD=$(abspath $(BUILD)) tests/run-phase.sh sim tests/sim/test-sim.sh
# make install into a temporary DESTDIR: SONAME, links, exported symbols, man pages (one per call of
# inccl.h, each lint-clean), the examples built through pkg-config against the installed copy
test-install: $(BUILD)/libinccl.so $(BUILD)/libinccl.a $(INSTALL_TOOLS)
	@BUILD=$(abspath $(BUILD)) $(INCCL_NAMES) tests/run-phase.sh install tests/harness/test-install.sh

$(BUILD)/test_topo: tests/unit/test_topo.c $(TOPO_SRC) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Itopology -o $@ tests/unit/test_topo.c topology/topo.c -lyaml -lcmocka

$(BUILD)/test_roce: tests/unit/test_roce.c switch/roce.c switch/roce.h proto/inc_proto.h switch/crc32.c switch/crc32.h switch/cpu.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_roce.c switch/roce.c switch/crc32.c -lpcap $(CRC_LIBS) -lcmocka

$(BUILD)/test_bundle: tests/unit/test_bundle.c switch/bundle.c switch/bundle.h switch/roce.c switch/roce.h switch/crc32.c switch/crc32.h switch/cpu.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_bundle.c switch/bundle.c switch/roce.c switch/crc32.c -lpcap $(CRC_LIBS) -lcmocka

# incswitch's counters per port and the capture filter they count by
$(BUILD)/test_portstat: tests/unit/test_portstat.c switch/portstat.c switch/portstat.h switch/swconfig.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_portstat.c switch/portstat.c -lpcap -lcmocka

$(BUILD)/test_rc_conn: tests/unit/test_rc_conn.c switch/rc_conn.c switch/rc_conn.h switch/roce.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_rc_conn.c switch/rc_conn.c -lcmocka

$(BUILD)/test_agg: tests/unit/test_agg.c switch/agg.c proto/inc_proto.h proto/inc_elem.h switch/cpu.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_agg.c switch/agg.c -lcmocka -lm
# the same test built by gcc and clang at -O0 and -O2 (issue 16: it once compared struct padding,
# which only some of these keep zeroed): test_agg-COMPILER-OPT
TEST_AGG_BUILDS := $(BUILD)/test_agg-gcc-O0 $(BUILD)/test_agg-gcc-O2 $(BUILD)/test_agg-clang-O0 $(BUILD)/test_agg-clang-O2
$(TEST_AGG_BUILDS): $(BUILD)/test_agg-%: tests/unit/test_agg.c switch/agg.c proto/inc_proto.h proto/inc_elem.h switch/cpu.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(word 1,$(subst -, ,$*)) -$(word 2,$(subst -, ,$*)) -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter \
	  -Iswitch -o $@ tests/unit/test_agg.c switch/agg.c -lcmocka -lm

SWITCH_ENGINE := switch/engine.c switch/engine.h switch/agg.c proto/inc_proto.h proto/inc_elem.h $(SWITCH_CORE)
$(BUILD)/test_engine: tests/unit/test_engine.c $(SWITCH_ENGINE) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_engine.c switch/engine.c switch/rc_conn.c switch/roce.c switch/crc32.c switch/agg.c -lcmocka $(CRC_LIBS) -lm

$(BUILD)/bench_engine: switch/bench_engine.c $(SWITCH_ENGINE) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ switch/bench_engine.c switch/engine.c switch/rc_conn.c switch/roce.c switch/crc32.c switch/agg.c -lpcap $(CRC_LIBS) -lm

# Switch engine rate on one core (no capture I/O), and a repeatable instruction count:
# the hosts' frames are written to pcap files, loaded into memory, then replayed
# (50 passes of 4 x 4096 frames, each through a fresh engine; callgrind counts one replay),
# with the kernels auto chooses here and with each set forced (-k; switch/README.md).
BENCH_PCAP := $(BUILD)/bench-allreduce.pcap
bench-switch: $(BUILD)/bench_engine
	$(BUILD)/bench_engine -p 4096 -w $(BENCH_PCAP)
	$(BUILD)/bench_engine -p 4096 -d float32 -w $(BUILD)/bench-allreduce-float32.pcap
	$(BUILD)/bench_engine -r $(BENCH_PCAP) -n 50
	$(BUILD)/bench_engine -r $(BUILD)/bench-allreduce-float32.pcap -n 50
	$(BUILD)/bench_engine -k scalar -r $(BENCH_PCAP) -n 50
	@for k in simd scalar; do for d in int32 float32; do \
	  f=$(BENCH_PCAP); [ $$d = int32 ] || f=$(BUILD)/bench-allreduce-$$d.pcap; \
	  valgrind --tool=callgrind --toggle-collect=bench_replay --callgrind-out-file=$(BUILD)/callgrind.bench.$$d.$$k \
	    $(BUILD)/bench_engine -k $$k -r $$f 2>&1 | \
	    awk -v d=$$d -v k=$$k '/Collected/ {printf "callgrind %s, kernel %s: %s instructions to replay 4 x 4096 data frames, %.0f per data frame (replay only: loading the file excluded)\n", d, k, $$4, $$4 / 16384}'; \
	done; done

# a float SUM in child order whatever the arrival order (every permutation, loss, duplicates), against check_ref.c
$(BUILD)/test_order: tests/unit/test_order.c $(SWITCH_ENGINE) $(CHECK_REF) hostlib/inccl.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -Ihostlib -Ihostlib/tools -o $@ tests/unit/test_order.c switch/engine.c switch/rc_conn.c \
	  switch/roce.c switch/crc32.c switch/agg.c hostlib/tools/check_ref.c -lcmocka $(CRC_LIBS) -lm

# The cost of folding a float SUM in child order (switch/README.md, "Order of a float SUM"): float32
# AllReduce frames of 4 and 16 hosts fed in child order (nothing waits) and in reverse (every child but
# child 0 waits in a hold buffer), replayed (frames/s, 20 passes) and counted (callgrind, one replay).
bench-order: $(BUILD)/bench_engine
	@for c in 4 16; do for o in in reverse; do f=$(BUILD)/bench-order-$$c-$$o.pcap; \
	  $(BUILD)/bench_engine -p 4096 -c $$c -d float32 -o $$o -w $$f > /dev/null && \
	  $(BUILD)/bench_engine -r $$f -n 20 && \
	  valgrind --tool=callgrind --toggle-collect=bench_replay --callgrind-out-file=$(BUILD)/callgrind.order.$$c.$$o \
	    $(BUILD)/bench_engine -k simd -r $$f 2>&1 | awk -v c=$$c -v o=$$o -v n=$$((c * 4096)) \
	    '/Collected/ {printf "callgrind float32, fan-in %s, children %s: %.0f instructions per data frame\n", c, o, $$4 / n}'; \
	done; done

# the engine fed the frames of pcap fixtures (bench_engine -w), its output checked and written to replay-out.pcap
$(BUILD)/test_replay: tests/unit/test_replay.c $(SWITCH_ENGINE) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -DREPLAY_OUT='"$(BUILD)/replay-out.pcap"' -o $@ tests/unit/test_replay.c switch/engine.c \
	  switch/rc_conn.c switch/roce.c switch/crc32.c switch/agg.c -lpcap -lcmocka $(CRC_LIBS) -lm

$(BUILD)/test_swconfig: tests/unit/test_swconfig.c switch/swconfig.c switch/swconfig.h switch/engine.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -o $@ tests/unit/test_swconfig.c switch/swconfig.c -lyaml -lcmocka

# whole trees: topology files through the controller's plan and the switch's rules parser into engines
$(BUILD)/test_tree: tests/unit/test_tree.c $(SWITCH_ENGINE) switch/swconfig.c switch/swconfig.h controller/plan.c controller/plan.h \
                    $(TOPO_SRC) $(CHECK_REF) hostlib/inccl.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iswitch -Icontroller -Itopology -Ihostlib -Ihostlib/tools -DTOPOLOGY_DIR='"topology"' -o $@ tests/unit/test_tree.c switch/engine.c \
	  switch/rc_conn.c switch/roce.c switch/crc32.c switch/agg.c switch/swconfig.c controller/plan.c topology/topo.c hostlib/tools/check_ref.c \
	  -lcmocka -lyaml $(CRC_LIBS) -lm

$(BUILD)/test_perf_opts: tests/unit/test_perf_opts.c hostlib/tools/perf_opts.c hostlib/tools/perf_opts.h hostlib/inccl.h proto/inc_elem.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ihostlib -Ihostlib/tools -o $@ tests/unit/test_perf_opts.c hostlib/tools/perf_opts.c -lcmocka -lm

# the reference of inccl_check/inccl_perf, and the switches' inc_combine() simulated against it
$(BUILD)/test_check_ref: tests/unit/test_check_ref.c $(CHECK_REF) hostlib/inccl.h switch/agg.c proto/inc_proto.h proto/inc_elem.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ihostlib -Ihostlib/tools -Iswitch -o $@ tests/unit/test_check_ref.c hostlib/tools/check_ref.c \
	  switch/agg.c -lcmocka -lm

$(BUILD)/test_results: tests/unit/test_results.c $(ANALYSIS_SRC) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ianalysis -o $@ tests/unit/test_results.c analysis/results.c analysis/loggp.c -lyaml -lcmocka -lm

# the CPU inside inccl_perf -X's windows from cpusample's samples; the windows written by perf_opts.c's writer
$(BUILD)/test_cpuwin: tests/unit/test_cpuwin.c analysis/cpuwin.c analysis/cpuwin.h hostlib/tools/perf_opts.c hostlib/tools/perf_opts.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ianalysis -Ihostlib -Ihostlib/tools -o $@ tests/unit/test_cpuwin.c analysis/cpuwin.c \
	  hostlib/tools/perf_opts.c -lcmocka -lm

# the controller as a real process on loopback, fake switches, libinccl's group bootstrap
$(BUILD)/test_ctl: tests/unit/test_ctl.c $(BUILD)/incctl $(BUILD)/libinccl.a switch/swconfig.c switch/swconfig.h | $(DEPS_STAMP)
	$(CC) $(CFLAGS) -DBUILD_DIR='"$(BUILD)"' -o $@ tests/unit/test_ctl.c switch/swconfig.c $(BUILD)/libinccl.a \
	  -libverbs -lyaml $(SODIUM) -lcmocka -lpthread

# libinccl's argument checks and the quoting of control-message text (no RDMA device, no controller)
# the ring baseline's block plans on a simulated ring (no RDMA): ring.c is included whole
$(BUILD)/test_ring_plan: tests/unit/test_ring_plan.c hostlib/ring.c hostlib/cq.c hostlib/error.c proto/ctlmsg.c proto/ctlmsg.h hostlib/inccl.h hostlib/internal.h | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Ihostlib -o $@ tests/unit/test_ring_plan.c hostlib/cq.c hostlib/error.c proto/ctlmsg.c -libverbs -lyaml -lcmocka
$(BUILD)/test_api: tests/unit/test_api.c $(BUILD)/libinccl.a hostlib/internal.h | $(DEPS_STAMP)
	$(CC) $(CFLAGS) -o $@ tests/unit/test_api.c $(BUILD)/libinccl.a -libverbs -lyaml $(SODIUM) -lcmocka

# libinccl's bootstrap as rank 0 against prepared peers, comm.c's RDMA side faked (tests/unit/fake_comm.c)
$(BUILD)/test_group: tests/unit/test_group.c tests/unit/fake_comm.c tests/unit/fake_comm.h hostlib/group.c hostlib/error.c \
                     hostlib/inccl.h hostlib/internal.h $(CTLMSG) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ tests/unit/test_group.c tests/unit/fake_comm.c hostlib/error.c proto/ctlmsg.c proto/ctlauth.c -lyaml $(SODIUM) -lcmocka

UNIT_TESTS := $(BUILD)/test_api $(BUILD)/test_ring_plan $(BUILD)/test_group $(BUILD)/test_ctl $(BUILD)/test_topo $(BUILD)/test_roce $(BUILD)/test_bundle $(BUILD)/test_rc_conn $(BUILD)/test_agg $(BUILD)/test_engine \
              $(BUILD)/test_order $(BUILD)/test_replay $(BUILD)/test_tree $(BUILD)/test_swconfig $(BUILD)/test_perf_opts $(BUILD)/test_check_ref $(BUILD)/test_results $(BUILD)/test_cpuwin $(BUILD)/test_pcapng \
              $(BUILD)/test_portstat $(TEST_AGG_BUILDS)
test-unit: $(UNIT_TESTS)
	@tests/run-phase.sh unit sh -c 'rc=0; for t in $(UNIT_TESTS); do $$t || rc=1; done; exit $$rc' 

test-golden: $(BUILD)/topogen
	@tests/run-phase.sh golden tests/golden/check.sh $(BUILD)/topogen

golden-update: $(BUILD)/topogen
	tests/golden/check.sh --update $(BUILD)/topogen

test-lab: $(LAB_DEPS_STAMP) payload
	@BUILD=$(BUILD) tests/run-phase.sh lab tests/system/lab-test.sh
# any tree (issue 15): the 1-2-2-2 tree, switches with host and switch children, every collective verified
test-lab-mixed: $(LAB_DEPS_STAMP) payload
	@BUILD=$(BUILD) tests/run-phase.sh lab-mixed tests/system/mixed-tree.sh
# a lab over two hypervisors (issue 18): the local connection and qemu+ssh:// through an sshd on loopback
test-lab-hypervisors: $(LAB_DEPS_STAMP) payload
	@BUILD=$(BUILD) tests/run-phase.sh lab-hypervisors tests/system/lab-hypervisors.sh
# the 16-rank check (issue 14): 1-4-16 with namespace switches, by hand (about an hour on 2 cores)
scale-check: $(LAB_DEPS_STAMP) payload
	@BUILD=$(BUILD) tests/run-phase.sh scale tests/system/scale-check.sh

include fuzz/fuzz.mk

clean:
	rm -rf $(BUILD)
