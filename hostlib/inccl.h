/*
 * inccl.h — libinccl: collectives aggregated inside the network.
 *
 * A communicator is one RC queue pair from this rank to its leaf switch. The
 * switches aggregate what every rank sends and return the result, so a rank
 * sends and receives each byte once whatever the number of ranks.
 *
 * Bootstrap, today: inccl_comm_create() makes the queue pair and tells its
 * number; whoever configures the switch (the test harness now, the
 * controller later) passes it on; inccl_comm_connect() then connects to the
 * switch. The group API (ranks meeting at rank 0, TCP 52223; rank 0 asking
 * the controller, TCP 52200) will be built on these two calls.
 *
 * Every call returns INCCL_OK or a negative inccl_status; inccl_errmsg()
 * says what went wrong. Nothing calls exit(); a dead switch gives
 * INCCL_ETIMEDOUT after the communicator's timeout, never a hang. After
 * INCCL_ETIMEDOUT or INCCL_EIO the communicator is broken (packets of the
 * failed call may still arrive): every later collective returns INCCL_EIO at
 * once with the original reason; destroy it and create a new one.
 */
#ifndef INCCL_H
#define INCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inccl_comm inccl_comm_t;

enum inccl_dtype { INCCL_INT32 = 0, INCCL_FLOAT32 = 1 };
enum inccl_op { INCCL_SUM = 1, INCCL_MAX = 2, INCCL_MIN = 3 };

enum inccl_status {
	INCCL_OK = 0,
	INCCL_EINVAL = -1,    /* bad argument (count 0, root out of range, ...) */
	INCCL_ENODEV = -2,    /* no such RDMA device or GID */
	INCCL_ENOMEM = -3,    /* allocation or memory registration failed */
	INCCL_EIO = -4,       /* a work completion failed: the connection is broken */
	INCCL_ETIMEDOUT = -5, /* no progress within the communicator's timeout */
};

/** Options of inccl_comm_create(); zero fields take the defaults shown. */
struct inccl_comm_opts {
	const char *device;   /* RDMA device, default "rxe0" */
	int gid_index;        /* -1 (default): the IPv4-mapped GID of the port */
	int window;           /* messages in flight (1 KiB each), default 128 */
	int timeout_ms;       /* give up after this long without progress, default 60000:
			       * a collective waits for the slowest rank */
};

/**
 * inccl_comm_create() - open the device, register the window, create the
 * queue pair of rank @rank of @nranks, and post the receives.
 * @qpn: the queue pair number the switch must be told.
 * Return: INCCL_OK and *@out, or an error (then *@out is NULL).
 */
int inccl_comm_create(const struct inccl_comm_opts *opts, int rank, int nranks, inccl_comm_t **out,
		      uint32_t *qpn);

/**
 * inccl_comm_connect() - connect to the leaf switch at @switch_ip (dotted
 * quad) whose end of this connection is queue pair @switch_qpn. Both
 * directions start at PSN @psn, the same on every rank of the communicator.
 */
int inccl_comm_connect(inccl_comm_t *comm, const char *switch_ip, uint32_t switch_qpn, uint32_t psn);

/** inccl_allreduce() - @recv = op over all ranks of @send (@count elements). @send may equal @recv. */
int inccl_allreduce(inccl_comm_t *comm, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		    enum inccl_op op);

/** inccl_reduce() - like allreduce, but only rank @root receives; @recv is unused elsewhere. */
int inccl_reduce(inccl_comm_t *comm, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		 enum inccl_op op, int root);

/** inccl_broadcast() - every rank's @buf becomes rank @root's @buf. */
int inccl_broadcast(inccl_comm_t *comm, void *buf, size_t count, enum inccl_dtype dtype, int root);

/** inccl_barrier() - return once every rank has entered the barrier. */
int inccl_barrier(inccl_comm_t *comm);

/** inccl_errmsg() - what the last failing call on @comm said ("" if none). */
const char *inccl_errmsg(const inccl_comm_t *comm);

/** inccl_comm_destroy() - release everything; NULL is allowed. */
void inccl_comm_destroy(inccl_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif
