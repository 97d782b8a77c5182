# experiments/baselines/baselines.mk — included by the top-level Makefile:
# mpi_perf, the OpenMPI baseline of the experiments (installed on the hosts by
# `make payload`), and its test on this machine (mpirun on loopback).
# mpi_perf shares inccl_perf's sizes, formulas and input pattern
# (hostlib/tools/perf_opts.c, which needs only inccl.h's enums, not libinccl).

MPICC ?= mpicc
MPI_PERF_SRC := experiments/baselines/mpi_perf.c hostlib/tools/perf_opts.c hostlib/tools/perf_opts.h hostlib/inccl.h \
                proto/inc_elem.h proto/inc_proto.h
$(BUILD)/mpi_perf: $(MPI_PERF_SRC) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	$(MPICC) $(CFLAGS) -Ihostlib -Ihostlib/tools -o $@ $(filter %.c,$(MPI_PERF_SRC)) -lm

.PHONY: test-baselines
test-baselines: $(BUILD)/mpi_perf
	@tests/run-phase.sh baselines tests/experiments/test-mpi-perf.sh $(BUILD)/mpi_perf
