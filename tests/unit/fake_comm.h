/*
 * fake_comm.h — comm.c's RDMA side faked, for tests of hostlib/group.c on a
 * machine without an RDMA device (tests/unit/test_group.c, fuzz/fuzz_group.c):
 * inccl_comm_create() makes a communicator with no queue pair, and
 * inccl_comm_connect() checks its arguments as comm.c does (a dotted-quad
 * switch address, a non-zero QPN). Everything group.c does with what it
 * receives stays real.
 */
#ifndef INCLAB_FAKE_COMM_H
#define INCLAB_FAKE_COMM_H

#include <stddef.h>

struct inccl_comm {
	int algo;                  /* enum inccl_algo: fake_comm_algo when it was made */
	void (*release)(void *ctx, unsigned comm_id); /* what group.c attached */
	int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len);
	void *ctx;
	unsigned comm_id;
};

/* The algorithm of the next communicator inccl_comm_create() makes. */
extern int fake_comm_algo;

#endif
