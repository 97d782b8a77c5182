/*
 * internal.h — what the parts of libinccl share; not installed.
 *
 * The parts are layered, each using only those above it:
 *
 *   error.c   inccl_last_error()
 *   cq.c      completion queues that can be slept on
 *   ring.c    the host ring baseline (its own queue pairs)
 *   comm.c    communicators and collectives over the switches (and ring.c)
 *   coll.c    AllGather, ReduceScatter, AllToAll, made of comm.c's data path
 *   group.c   the bootstrap: ranks meet at rank 0, rank 0 asks the controller
 *
 * comm.c knows nothing of groups: group.c hands a communicator the function
 * that releases it at the controller (inccl__comm_attach()).
 */
#ifndef INCCL_INTERNAL_H
#define INCCL_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "inccl.h"

/** inccl__set_last_error() - record why a create/init call fails (inccl_last_error()). */
void inccl__set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** inccl__comm_local_ipv4() - the IPv4 address of the communicator's RDMA port (its GID). */
int inccl__comm_local_ipv4(inccl_comm_t *c, uint32_t *ip_be);

/**
 * inccl__comm_attach() - remember the controller's id of a communicator,
 * what rank 0 calls, as @release(@ctx, @comm_id), when it is destroyed, and
 * what a collective calls, as @watch(@ctx, @comm_id, why, len), when it
 * starts and whenever it waited for a completion in vain: non-zero (with
 * the reason) when the communicator cannot go on (a switch, rank 0 or a
 * member went away). @watch must not wait.
 */
void inccl__comm_attach(inccl_comm_t *c, void (*release)(void *ctx, unsigned comm_id),
			int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len), void *ctx, unsigned comm_id);

struct ibv_context;
struct ibv_pd;
struct ibv_cq;
struct ibv_wc;
struct ibv_comp_channel;
struct inccl_ring;

/*
 * A completion queue that can be slept on: under TCG every VM of the lab
 * shares the machine's cores, and a rank spinning on ibv_poll_cq() would
 * take them from the switches and the other ranks.
 */
struct inccl_cq {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int armed; /* notification requested and not yet delivered */
};

/** inccl__cq_create() - a CQ of @depth entries with its own (non-blocking) completion channel; 0 or -1. */
int inccl__cq_create(struct ibv_context *ctx, int depth, struct inccl_cq *q);

/** inccl__cq_destroy() - release both; a zeroed @q is fine. */
void inccl__cq_destroy(struct inccl_cq *q);

/**
 * inccl__cq_poll() - like ibv_poll_cq(), but when nothing is there, arm the
 * notification, look again, and sleep up to @wait_ms for a completion
 * before a last look. Return: completions taken (0 after @wait_ms), or -1.
 */
int inccl__cq_poll(struct inccl_cq *q, int n, struct ibv_wc *wc, int wait_ms);

/* ring.c: the host-based ring baseline (INCCL_ALGO_RING) */

/** inccl__ring_create() - the ring's queue pairs (qpn[0] from the left, qpn[1] to the right) and slots. */
int inccl__ring_create(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index, int rank, int nranks,
		       struct inccl_ring **out, uint32_t qpn[2]);

/** inccl__ring_connect() - connect both queue pairs to the neighbours (IPv4 addresses in network order). */
int inccl__ring_connect(struct inccl_ring *r, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip,
			uint32_t right_qpn, uint32_t psn, char *err, size_t errlen);

/** inccl__ring_allreduce(), inccl__ring_broadcast() - the collectives; INCCL_OK or an error with @err set. */
int inccl__ring_allreduce(struct inccl_ring *r, const void *send, void *recv, size_t count,
			  enum inccl_dtype dtype, enum inccl_op op, int timeout_ms, char *err, size_t errlen);
int inccl__ring_broadcast(struct inccl_ring *r, void *buf, size_t count, enum inccl_dtype dtype, int root,
			  int timeout_ms, char *err, size_t errlen);

/** inccl__ring_barrier() - a Barrier on the ring (an AllReduce of one int32 that no other call matches). */
int inccl__ring_barrier(struct inccl_ring *r, int timeout_ms, char *err, size_t errlen);

/**
 * inccl__ring_watch() - while a ring call waits, it asks @watch(@arg) now and
 * then whether the group says the call cannot end (a rank went away); on 1
 * it fails at once with INCCL_ECONN, the reason written by @watch into the
 * call's error buffer. NULL: no watch (the timeout alone).
 */
void inccl__ring_watch(struct inccl_ring *r, int (*watch)(void *arg), void *arg);

void inccl__ring_destroy(struct inccl_ring *r);

/* The collectives that move blocks (coll.c), as ring.c runs them. */
enum inccl__coll { INCCL__ALLGATHER, INCCL__REDUCESCATTER, INCCL__ALLTOALL };

/**
 * inccl__ring_coll() - @coll on the ring, @count per block (AllGather: the
 * send count; ReduceScatter: the receive count; AllToAll: per peer), the
 * buffers as nccl has them (in place allowed as nccl defines it).
 * AllGather and ReduceScatter are the two halves of the ring AllReduce;
 * AllToAll forwards each block along the ring to its destination (rank r's
 * block for r + d travels d hops: n(n-1)/2 blocks cross each link, against
 * n - 1 for a pairwise exchange, which needs a connection to every peer).
 * INCCL_OK, or an error with @err set (INCCL_ENOMEM: no room for the
 * staging buffer, (n-1) blocks for AllToAll, n for ReduceScatter).
 */
int inccl__ring_coll(struct inccl_ring *r, enum inccl__coll coll, const void *send, void *recv, size_t count,
		     enum inccl_dtype dtype, enum inccl_op op, int timeout_ms, char *err, size_t errlen);

/* comm.c's pieces that coll.c builds on */

/** inccl__dtype_size() - the bytes of one element of @dtype (a valid one). */
size_t inccl__dtype_size(enum inccl_dtype dtype);

/** inccl__check() - the argument checks of every collective (comm.c's check()): INCCL_OK or INCCL_EINVAL. */
int inccl__check(inccl_comm_t *c, const char *what, size_t count, int dtype, int op, int root);

/** inccl__fail() - set @c's message; return @status. */
int inccl__fail(inccl_comm_t *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/**
 * inccl__comm_xfer() - one collective through the switches with primitive
 * @prim (enum inc_prim, proto/inc_proto.h) towards @dest (INC_ALLREDUCE: every rank): this rank sends @send's
 * @count elements if @has_data (else every packet empty) and takes the
 * results into @recv if @expects. A failure breaks the communicator as any
 * collective's does. For a ring communicator: INCCL_EINVAL.
 */
int inccl__comm_xfer(inccl_comm_t *c, int prim, enum inccl_dtype dtype, enum inccl_op op, int dest,
		     int has_data, int expects, const void *send, void *recv, size_t count);

/** inccl__comm_ring_coll() - inccl__ring_coll() on @c's ring, a failure breaking @c. */
int inccl__comm_ring_coll(inccl_comm_t *c, enum inccl__coll coll, const void *send, void *recv, size_t count,
			  enum inccl_dtype dtype, enum inccl_op op);

/** inccl__comm_has_ring() - whether @c runs on the ring baseline (INCCL_ALGO_RING). */
int inccl__comm_has_ring(const inccl_comm_t *c);

/**
 * inccl__comm_unconnected() - a communicator of rank @rank in @nranks with no
 * device, queue pair or group: every collective checks its arguments and
 * then fails with INCCL_EINVAL "communicator is not connected". For the unit
 * tests of the argument checks (tests/unit/test_api.c), which have no RDMA
 * device; inccl_comm_destroy() releases it.
 */
inccl_comm_t *inccl__comm_unconnected(int rank, int nranks);

/**
 * inccl__qp_entry() - rank 0: the line of rank @rank in the "communicator"
 * request to the controller, from that rank's "qp" message @m, onto @f:
 * "  - {rank: R, ip: A.B.C.D, qpn: N}". The ip is parsed and written as
 * inet_ntop() renders it, the qpn as a number: no text of the peer's is
 * copied. Return 0, or -1 with the reason in @err (nothing written).
 */
struct ctl_doc;
int inccl__qp_entry(FILE *f, int rank, struct ctl_doc *m, char *err, size_t errlen);

/** inccl__comm_algorithm() - the communicator's enum inccl_algo. */
int inccl__comm_algorithm(const inccl_comm_t *c);

/** inccl__comm_ring_create(), inccl__comm_ring_connect() - give communicator @c its ring (group.c). */
int inccl__comm_ring_create(inccl_comm_t *c, uint32_t qpn[2]);
int inccl__comm_ring_connect(inccl_comm_t *c, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip,
			     uint32_t right_qpn, uint32_t psn);

#endif
