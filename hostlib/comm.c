/*
 * comm.c — libinccl communicators and collectives (see inccl.h).
 *
 * Data path: a collective of N bytes is cut into ceil(N / 1024) packets, and
 * the switch aggregates per packet (per PSN). Packet 0 goes alone, a
 * SEND_WITH_IMM of at most 1 KiB whose immediate names primitive, operator,
 * dtype and destination rank; the rest go in messages of `message` packets
 * (one SEND_WITH_IMM each, which rxe cuts into SEND_FIRST, SEND_MIDDLE*,
 * SEND_LAST_WITH_IMM: the switch takes the immediate of FIRST and MIDDLE
 * from packet 0, proto/inc_proto.h). One work request, one completion and
 * one receive per message instead of per packet is what a host under TCG
 * pays for. Ranks without data (Broadcast non-roots, Barrier) send every
 * packet empty, alone, so every rank's PSNs stay aligned. The call's last
 * packet carries INC_IMM_LAST in its immediate (and so does its result):
 * a switch refuses a packet whose immediate differs from the other ranks'
 * of the same place, so ranks whose calls differ in count by a packet or
 * more are refused where one call ends and another goes on, never combined
 * with a later call. Results come back
 * in messages as the data went up, into registered receive buffers, and
 * are copied out. At most `window` packets are in flight: memory does not
 * grow with the collective's size. Elements travel big-endian; any
 * alignment of user buffers works.
 */
#include "inccl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/ctlmsg.h"
#include "../proto/inc_proto.h"
#include "internal.h"

#define PKT 1024 /* RoCE path MTU of the lab: the switch aggregates per packet of it */
#define MAX_RANKS 0xfffe /* ranks of a communicator: dest_rank is 16 bits, 0xffff is every rank */
#define MAX_MESSAGE 64 /* packets per message at most: 64 KiB, where the lab's same-load ceiling
                        * stopped growing (6.76 MB/s per host at 64 KiB messages, 2.75 at 1 KiB) */
#define WAIT_MS 100 /* longest sleep on the CQ before the no-progress check looks at the clock */
#define SIGNAL_EVERY 16 /* one send in 16 packets (and the last) asks for a completion: an RC send queue
                         * completes in order, so it stands for the 15 before it; each completion
                         * is a CQE and often a wake-up that a TCG guest pays for */
#define POST_BATCH 32   /* sends posted with one ibv_post_send(): rxe's provider rings the kernel
                         * (one system call, which runs the requester) once per call */
#define KICK_MS 2000    /* no completion for this long while sends this rank posted wait for their
                         * ACKs: ring the send queue's doorbell (kick()), again every KICK_MS. Longer
                         * than rxe's own ACK timeout (1.07 s, inccl_comm_connect()), so a lost frame
                         * is rxe's to resend first. On 16 TCG ranks a Reduce's non-root stood at 65
                         * packets acknowledged and not one frame on its link for 60 s: rxe 6.1's
                         * requester stops at 64 skbs in flight and waits for a destructor's wake-up,
                         * which a race can lose; with nothing in flight no timer re-arms and only a
                         * doorbell runs it again (hostlib/README.md) */

struct inccl_comm {
	int rank, nranks, window, timeout_ms, gid_index;
	int message;          /* packets per message after packet 0 (1..MAX_MESSAGE, at most the window) */
	int nsbufs, nrbufs;   /* send and receive buffers of `message` packets each */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct inccl_cq cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* the extended send interface of qp, for kick(); NULL where the provider has none */
	uint8_t *sbuf, *rbuf; /* nsbufs, nrbufs buffers of message * PKT bytes */
	struct ibv_mr *smr, *rmr;
	int broken;           /* a timeout or failed completion left the queue pair out of step */
	char err[256];
	void (*release)(void *ctx, unsigned comm_id); /* set by inccl_comm_init() (group.c): a member tells
	                                               * rank 0 it is done; rank 0 waits for every member,
	                                               * then tells the controller the communicator is gone */
	int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len); /* set with release: a fault */
	void *release_ctx;    /* the context of both */
	unsigned comm_id;     /* the controller's id of it */
	int algorithm;        /* enum inccl_algo */
	struct inccl_ring *ring; /* INCCL_ALGO_RING: the ring (ring.c); the switch queue pair stays idle */
};

static int fail(inccl_comm_t *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fail() - @fmt's message into c->err (cut to its size) for inccl_errmsg(). Return: @status. */
static int fail(inccl_comm_t *c, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return status;
}

const char *inccl_errmsg(const inccl_comm_t *c)
{
	return c ? c->err : "no communicator";
}

/* post_recv() - post receive buffer @slot (of c->message packets) for the next result message. */
static int post_recv(inccl_comm_t *c, uint32_t slot)
{
	size_t len = (size_t)c->message * PKT;
	struct ibv_sge sge = { (uintptr_t)(c->rbuf + (size_t)slot * len), (uint32_t)len, c->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->qp, &wr, &bad);
}

/* The port's GID holding an IPv4-mapped address (::ffff:a.b.c.d), or -1. */
static int ipv4_gid_index(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (ibv_query_gid(ctx, 1, i, &g) == 0 && memcmp(g.raw, prefix, 12) == 0)
			return i;
	}
	return -1;
}

int inccl_comm_create(const struct inccl_comm_opts *o, int rank, int nranks, inccl_comm_t **out, uint32_t *qpn)
{
	struct inccl_comm_opts d = { "rxe0", -1, 512, 60000, INCCL_ALGO_INC, 16 };
	struct ibv_device **devs;
	inccl_comm_t *c;
	int n, rc = INCCL_OK;

	if (!out || !qpn) {
		inccl__set_last_error("inccl_comm_create: %s is NULL", !out ? "out" : "qpn");
		return INCCL_EINVAL;
	}
	*out = NULL;
	if (o) {
		d.device = o->device ? o->device : d.device;
		d.gid_index = o->gid_index ? o->gid_index : d.gid_index;
		d.window = o->window ? o->window : d.window;
		d.timeout_ms = o->timeout_ms ? o->timeout_ms : d.timeout_ms;
		d.algorithm = o->algorithm;
		d.message = o->message ? o->message : d.message;
	}
	/* each bad argument refused by name; ranks fit the immediate's 16-bit dest_rank, whose
	 * 0xffff means "every rank" (inc_proto.h) */
	const char *bad = nranks < 1 || nranks > MAX_RANKS ? "nranks"
			  : rank < 0 || rank >= nranks ? "rank"
			  : d.window < 1 || d.window > 16384 ? "window"
			  : d.timeout_ms < 1 ? "timeout_ms"
			  : d.algorithm != INCCL_ALGO_INC && d.algorithm != INCCL_ALGO_RING ? "algorithm"
			  : d.message < 1 || d.message > MAX_MESSAGE ? "message"
			  : d.gid_index < -1 || d.gid_index > 255 ? "gid_index"
			  : NULL;
	if (bad) {
		inccl__set_last_error("inccl_comm_create: bad %s: rank %d of nranks %d (1..%d), window %d (1..16384), "
				      "timeout_ms %d (> 0), algorithm %d (INCCL_ALGO_INC or INCCL_ALGO_RING), message %d "
				      "(1..%d packets), gid_index %d (-1..255)",
				      bad, rank, nranks, MAX_RANKS, d.window, d.timeout_ms, d.algorithm, d.message, MAX_MESSAGE,
				      d.gid_index);
		return INCCL_EINVAL;
	}
	if (d.message > d.window)
		d.message = d.window; /* a message never holds more than the window lets fly */
	if (!(c = calloc(1, sizeof(*c))))
		return INCCL_ENOMEM;
	c->rank = rank;
	c->nranks = nranks;
	c->window = d.window;
	c->timeout_ms = d.timeout_ms;
	c->algorithm = d.algorithm;
	c->message = d.message;
	/* Send buffers: message j (j >= 1) fills buffer j % nsbufs, packet 0 buffer 0. A message
	 * goes out only when the window holds it whole, and nsbufs + 1 messages span more than the
	 * window ((floor(W/M) + 1) * M > W): the one that used its buffer before was acknowledged.
	 * Receive buffers: results are at most a window ahead of what this rank took, so at most
	 * nsbufs full messages and the lone packet 0; one more for good measure (a missing receive
	 * costs an RNR NAK and the switch's retry after 1 ms, never a wrong result). */
	c->nsbufs = c->window / c->message;
	c->nrbufs = c->nsbufs + 2;
	devs = ibv_get_device_list(&n);
	for (int i = 0; devs && i < n && !c->ctx; i++)
		if (strcmp(ibv_get_device_name(devs[i]), d.device) == 0)
			c->ctx = ibv_open_device(devs[i]);
	if (devs)
		ibv_free_device_list(devs);
	if (!c->ctx) {
		inccl__set_last_error("rank %d: no RDMA device '%s' (is rdma_rxe bound? 'rdma link')", rank, d.device);
		rc = INCCL_ENODEV;
		goto out;
	}
	c->gid_index = d.gid_index >= 0 ? d.gid_index : ipv4_gid_index(c->ctx);
	if (c->gid_index < 0) {
		inccl__set_last_error("rank %d: device '%s' has no IPv4 GID (no address on its netdev?)", rank, d.device);
		rc = INCCL_ENODEV;
		goto out;
	}
	size_t sbytes = (size_t)c->nsbufs * c->message * PKT, rbytes = (size_t)c->nrbufs * c->message * PKT;
	c->sbuf = aligned_alloc(4096, sbytes);
	c->rbuf = aligned_alloc(4096, rbytes);
	if (!c->sbuf || !c->rbuf || !(c->pd = ibv_alloc_pd(c->ctx)) ||
	    inccl__cq_create(c->ctx, 2 * c->window + 16, &c->cq) ||
	    !(c->smr = ibv_reg_mr(c->pd, c->sbuf, sbytes, 0)) ||
	    !(c->rmr = ibv_reg_mr(c->pd, c->rbuf, rbytes, IBV_ACCESS_LOCAL_WRITE))) {
		inccl__set_last_error("rank %d: cannot allocate or register the %d-slot window: %s", rank, d.window,
				      strerror(errno));
		rc = INCCL_ENOMEM;
		goto out;
	}
	/* created with the extended send interface (ibv_wr_start()/ibv_wr_complete()), whose empty
	 * post is a bare doorbell: kick(). Sends still go through ibv_post_send(). A provider
	 * without it gets the plain queue pair, and no kicks. */
	struct ibv_qp_init_attr_ex qa = { .send_cq = c->cq.cq, .recv_cq = c->cq.cq, .qp_type = IBV_QPT_RC,
					  .cap = { .max_send_wr = (uint32_t)c->window, .max_recv_wr = (uint32_t)c->nrbufs,
						   .max_send_sge = 1, .max_recv_sge = 1 },
					  .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					  .pd = c->pd, .send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_IMM };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	if ((c->qp = ibv_create_qp_ex(c->ctx, &qa)))
		c->qpx = ibv_qp_to_qp_ex(c->qp);
	else
		c->qp = ibv_create_qp(c->pd, &(struct ibv_qp_init_attr){ .send_cq = qa.send_cq, .recv_cq = qa.recv_cq,
									 .qp_type = qa.qp_type, .cap = qa.cap });
	if (!c->qp ||
	    ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		inccl__set_last_error("rank %d: cannot create the queue pair: %s", rank, strerror(errno));
		rc = INCCL_ENOMEM;
		goto out;
	}
	for (int s = 0; s < c->nrbufs; s++)
		if (post_recv(c, (uint32_t)s)) {
			rc = INCCL_ENOMEM;
			goto out;
		}
	*qpn = c->qp->qp_num;
	*out = c;
	return INCCL_OK;
out:
	inccl_comm_destroy(c);
	return rc;
}

int inccl_comm_connect(inccl_comm_t *c, const char *switch_ip, uint32_t switch_qpn, uint32_t psn)
{
	struct in_addr ip;
	struct ibv_qp_attr a = { 0 };

	if (!c) {
		inccl__set_last_error("inccl_comm_connect: comm is NULL");
		return INCCL_EINVAL;
	}
	if (!switch_ip || inet_pton(AF_INET, switch_ip, &ip) != 1)
		return fail(c, INCCL_EINVAL, "switch_ip '%.40s' is not an IPv4 address (a.b.c.d)", switch_ip ? switch_ip : "(NULL)");
	if (!switch_qpn || switch_qpn > 0xffffff)
		return fail(c, INCCL_EINVAL, "switch_qpn %u is not a queue pair number (1..0xffffff)", switch_qpn);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = switch_qpn;
	a.rq_psn = psn & 0xffffff;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1; /* 0.01 ms: receives are reposted at once */
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &ip.s_addr, 4);
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fail(c, INCCL_EIO, "queue pair to RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn & 0xffffff;
	a.timeout = 18;  /* 4.096 us * 2^18 = 1.07 s: longer than a TCG guest stalls */
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* a busy switch slot answers RNR: retry for as long as it takes */
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return fail(c, INCCL_EIO, "queue pair to RTS: %s", strerror(errno));
	return INCCL_OK;
}

/* inc_prim_label(), dtype_label(), op_label() - names for messages (libinccl does not link switch/agg.c). */
static const char *inc_prim_label(enum inc_prim p)
{
	return p == INC_ALLREDUCE ? "allreduce" : p == INC_REDUCE ? "reduce" : p == INC_BROADCAST ? "broadcast" : "route";
}

/* dtype_label() - the name of dtype @t in an error message ("?" for none). */
static const char *dtype_label(enum inccl_dtype t)
{
	static const char *const n[INC_NDTYPES] = { "int32",  "float32", "uint32",   "int64",
						    "uint64", "float16", "bfloat16", "float64" };
	return (unsigned)t < INC_NDTYPES ? n[t] : "?";
}

/* op_label() - the name of reduction operator @op in an error message: sum, max, min; "?" for any other
 * (a Barrier's INC_OP_BARRIER is named by the callers). */
static const char *op_label(enum inc_op op)
{
	return op == INC_OP_SUM ? "sum" : op == INC_OP_MAX ? "max" : op == INC_OP_MIN ? "min" : "?";
}

/* Copy @len bytes of @w-byte elements (2, 4 or 8) to wire order (big-endian); the buffers may be unaligned. */
static void to_wire(uint8_t *dst, const uint8_t *src, size_t len, size_t w)
{
	size_t n = len / w;

	if (w == 2) {
		for (size_t i = 0; i < n; i++) {
			uint16_t v;
			memcpy(&v, src + 2 * i, 2);
			v = htons(v);
			memcpy(dst + 2 * i, &v, 2);
		}
	} else if (w == 4) {
		for (size_t i = 0; i < n; i++) {
			uint32_t v;
			memcpy(&v, src + 4 * i, 4);
			v = htonl(v);
			memcpy(dst + 4 * i, &v, 4);
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint64_t v;
			memcpy(&v, src + 8 * i, 8);
			v = be64toh(v); /* the same swap as htobe64() */
			memcpy(dst + 8 * i, &v, 8);
		}
	}
}

/* from_wire() - to_wire() the other way: the swap is its own inverse. */
static void from_wire(uint8_t *dst, const uint8_t *src, size_t len, size_t w)
{
	to_wire(dst, src, len, w);
}

/*
 * One collective: send every packet (data or empty), receive every result
 * this rank is due, keep at most `window` in flight.
 */
static int run_once(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, int root,
		    const uint8_t *send, uint8_t *recv, size_t count);

/* The same collective on the ring baseline (ring.c). */
static int run_ring(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, int root,
		    const uint8_t *send, uint8_t *recv, size_t count)
{
	int rc;

	if (c->broken)
		return INCCL_EIO;
	if (prim == INC_REDUCE)
		return fail(c, INCCL_EINVAL, "the ring baseline has no Reduce (the MPI baseline measures it)");
	if (prim == INC_BROADCAST)
		rc = inccl__ring_broadcast(c->ring, recv, count, dtype, root, c->timeout_ms, c->err, sizeof(c->err));
	else if (op == INC_OP_BARRIER)
		rc = inccl__ring_barrier(c->ring, c->timeout_ms, c->err, sizeof(c->err));
	else
		rc = inccl__ring_allreduce(c->ring, send, recv, count, dtype, (enum inccl_op)op, c->timeout_ms, c->err,
					   sizeof(c->err));
	if (rc == INCCL_OK)
		c->err[0] = 0;
	return rc;
}

/*
 * Has the group said this communicator cannot go on (a switch, rank 0 or a
 * member went away)? Then 1, with the reason in c->err.
 */
static int faulted(inccl_comm_t *c)
{
	char why[200];

	if (!c->watch || !c->watch(c->release_ctx, c->comm_id, why, sizeof(why)))
		return 0;
	fail(c, INCCL_ECONN, "%s", why);
	return 1;
}

/*
 * A collective that timed out or failed leaves packets and results in flight
 * that no later call could tell from its own: the communicator is broken from
 * then on, and every later call says so at once.
 */
static int mark_broken(inccl_comm_t *c, int rc);

/* run() - one collective of @prim on the communicator's algorithm (the switches, or the ring); a
 * failure that leaves frames in flight breaks it (mark_broken()). Return: INCCL_OK or an error code. */
static int run(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, int root,
	       const uint8_t *send, uint8_t *recv, size_t count)
{
	return mark_broken(c, c->ring ? run_ring(c, prim, op, dtype, root, send, recv, count)
				      : run_once(c, prim, op, dtype, root, send, recv, count));
}

/* mark_broken() - after a call that ended with @rc: a timeout, a failed completion or a fault breaks
 * the communicator (the message says so once). Return: @rc. */
static int mark_broken(inccl_comm_t *c, int rc)
{
	if (rc == INCCL_EIO || rc == INCCL_ETIMEDOUT || rc == INCCL_ECONN) {
		if (!c->broken) {
			char why[sizeof(c->err)];
			snprintf(why, sizeof(why), "%s", c->err);
			snprintf(c->err, sizeof(c->err), "communicator broken: %.200s", why);
		}
		c->broken = 1;
	}
	return rc;
}

/* msg_first() - the first packet of message @j of a collective: message 0 is packet 0 alone, then
 * c->message packets a message. */
static size_t msg_first(const inccl_comm_t *c, size_t j)
{
	return j ? 1 + (j - 1) * (size_t)c->message : 0;
}

/* msg_end() - one past the last packet of message @j (msg_first()) of a collective of @npk packets:
 * at most @npk, so the last message may be shorter. */
static size_t msg_end(const inccl_comm_t *c, size_t j, size_t npk)
{
	size_t e = j ? 1 + j * (size_t)c->message : 1;
	return e < npk ? e : npk;
}

/* msg_bytes() - the bytes of packets @first .. @end-1 of a collective of @bytes (the last packet may be short). */
static size_t msg_bytes(size_t first, size_t end, size_t bytes)
{
	return (end * PKT < bytes ? end * PKT : bytes) - first * PKT;
}

/*
 * post_sends() - post this rank's sends of a collective of @npk packets
 * while packets up to @limit (exclusive) may fly, in chains of up to
 * POST_BATCH per ibv_post_send(). With @data (the collective's @bytes),
 * message by message from *@msg, each converted to wire order (elements of
 * @w bytes) into its
 * buffer; without, every packet an empty send, from *@msg as a packet
 * index. A send asks for a completion when it holds a packet whose number
 * + 1 is a multiple of signal_every, and the last one; its wr_id is the
 * last packet it holds. Every send carries immediate @imm (wire order) but
 * the one that holds the last packet, @imm_last (@imm with INC_IMM_LAST).
 * Advances *@msg; returns INCCL_OK or INCCL_EIO.
 */
static int post_sends(inccl_comm_t *c, size_t *msg, size_t limit, size_t npk, const uint8_t *data, size_t bytes,
		      uint32_t imm, uint32_t imm_last, size_t w)
{
	/* a completion at least once per half window, or a full window could wait for one forever;
	 * otherwise once per SIGNAL_EVERY packets but not more often than once per 4 messages */
	size_t signal_every = SIGNAL_EVERY > 4 * (size_t)c->message ? SIGNAL_EVERY : 4 * (size_t)c->message;
	size_t half = (size_t)c->window / 2 ? (size_t)c->window / 2 : 1;

	if (signal_every > half)
		signal_every = half;
	for (;;) {
		struct ibv_sge sge[POST_BATCH];
		struct ibv_send_wr wr[POST_BATCH], *bad = NULL;
		int nwr = 0;
		for (; nwr < POST_BATCH; nwr++) {
			size_t first = data ? msg_first(c, *msg) : *msg, end = data ? msg_end(c, *msg, npk) : *msg + 1;
			if (first >= npk || end > limit)
				break;
			size_t off = first * PKT, len = data ? msg_bytes(first, end, bytes) : 0;
			uint8_t *buf = c->sbuf + (*msg % (size_t)c->nsbufs) * (size_t)c->message * PKT;
			int signaled = end == npk || (end / signal_every) != (first / signal_every);
			sge[nwr] = (struct ibv_sge){ (uintptr_t)buf, (uint32_t)len, c->smr->lkey };
			wr[nwr] = (struct ibv_send_wr){ .wr_id = end - 1, .sg_list = &sge[nwr], .num_sge = len ? 1 : 0,
							.opcode = IBV_WR_SEND_WITH_IMM,
							.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
							.imm_data = end == npk ? imm_last : imm };
			if (nwr)
				wr[nwr - 1].next = &wr[nwr];
			if (len)
				to_wire(buf, data + off, len, w);
			(*msg)++;
		}
		if (!nwr)
			return INCCL_OK;
		/* rxe's provider returns the error, and leaves @bad NULL when only its kernel call failed */
		int rc = ibv_post_send(c->qp, wr, &bad);
		if (rc)
			return fail(c, INCCL_EIO, "post send of packet %llu: %s",
				    (unsigned long long)(bad ? bad->wr_id : wr[0].wr_id), strerror(rc < 0 ? -rc : rc));
	}
}

/*
 * kick() - ring the send queue's doorbell without posting anything (an empty
 * ibv_wr_start()/ibv_wr_complete(): rxe's provider makes its post-send system
 * call, which runs the kernel's requester over the queue). For a sender whose
 * requester stopped with sends posted and none in flight, so that no timer of
 * rxe's will resend them; on a queue that is fine it finds nothing to do.
 * Returns 1 if a doorbell was rung, 0 when the provider has no extended interface.
 */
static int kick(inccl_comm_t *c)
{
	if (!c->qpx)
		return 0;
	ibv_wr_start(c->qpx);
	return ibv_wr_complete(c->qpx) == 0;
}

/* run_xfer() - one collective of the data path: its contract at its definition, below run_once(). */
static int run_xfer(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, uint16_t dest,
		    int has_data, int expects, const uint8_t *send, uint8_t *recv, size_t count);

/* run_once() - one call of @prim through the switches: who sends data (every rank, a Reduce's every
 * rank, a Broadcast's root; a Barrier none) and who takes results (every rank, the root, all but the
 * root), then run_xfer(). */
static int run_once(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, int root,
		    const uint8_t *send, uint8_t *recv, size_t count)
{
	int has_data = prim == INC_ALLREDUCE ? op != INC_OP_BARRIER : prim == INC_REDUCE ? 1 : c->rank == root;
	int expects = prim == INC_ALLREDUCE ? 1 : prim == INC_REDUCE ? c->rank == root : c->rank != root;

	return run_xfer(c, prim, op, dtype, prim == INC_ALLREDUCE ? INC_RANK_ALL : (uint16_t)root, has_data, expects,
			send, recv, count);
}

/*
 * run_xfer() - one collective of the data path: this rank sends @count
 * elements of @send (or, without @has_data, every packet empty) under the
 * immediate (@prim, @op, @dtype, @dest) and, with @expects, receives the
 * results into @recv. The primitives' rules of who carries data and who
 * receives are the callers' (run_once(), inccl__comm_xfer()). At most
 * c->window packets beyond those acknowledged (and, with @expects, beyond
 * the results received) are in flight; after KICK_MS without a completion
 * while sends wait for their ACKs it rings the doorbell (kick()).
 * Returns INCCL_OK (c->err cleared); INCCL_EINVAL when the queue pair is not
 * connected; INCCL_EIO when the communicator is already broken (c->err kept),
 * a post or poll fails, the switch refuses a packet, a completion fails, or
 * a result is unexpected or of the wrong length or immediate; INCCL_ECONN
 * when the group reports a fault (faulted()); INCCL_ETIMEDOUT after
 * c->timeout_ms without progress. The reason of each error is in c->err.
 */
static int run_xfer(inccl_comm_t *c, enum inc_prim prim, enum inc_op op, enum inccl_dtype dtype, uint16_t dest,
		    int has_data, int expects, const uint8_t *send, uint8_t *recv, size_t count)
{
	size_t w = inc_dtype_size((enum inc_dtype)dtype), bytes = count * w, npk = bytes ? (bytes + PKT - 1) / PKT : 1;
	struct inc_imm m = { dest, prim, op, (enum inc_dtype)dtype };
	uint32_t imm = htonl(inc_imm_encode(&m)), imm_last = htonl(inc_imm_encode(&m) | INC_IMM_LAST);
	size_t smsg = 0, sdone = 0, rmsg = 0, rdone = 0;
	uint64_t last = ctl_now_ms(), kicked = 0; /* kicked: when kick() last rang in this stall */
	unsigned long kicks = 0;                  /* doorbells kick() rang in this call */
	struct ibv_wc wc[32];

	if (!c->qp || c->qp->state != IBV_QPS_RTS)
		return fail(c, INCCL_EINVAL, "communicator is not connected");
	if (c->broken)
		return INCCL_EIO; /* the message of the error that broke it stays in c->err */
	if (faulted(c))
		return INCCL_ECONN;
	while (sdone < npk || (expects && rdone < npk)) {
		/* at most a window unacknowledged, and unanswered where results are due */
		size_t limit = (expects && rdone < sdone ? rdone : sdone) + (size_t)c->window;
		int rc = post_sends(c, &smsg, limit < npk ? limit : npk, npk, has_data ? send : NULL, bytes, imm, imm_last, w);
		if (rc)
			return rc;
		int n = inccl__cq_poll(&c->cq, 32, wc, WAIT_MS);
		if (n < 0)
			return fail(c, INCCL_EIO, "poll CQ failed");
		for (int i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_REM_INV_REQ_ERR && !(wc[i].opcode & IBV_WC_RECV))
				/* the switch NAKs a packet that does not match its slot (drop_mismatch) */
				return fail(c, INCCL_EIO, "the switch refused packet %llu of this %s %s %s of %zu elements "
					    "(%zu packets): another rank's collective in the same place differs in count "
					    "(its call ends at another packet or its last packet has another length), dtype, "
					    "operator or root, or it broke the protocol (%s)",
					    (unsigned long long)wc[i].wr_id, inc_prim_label(prim),
					    dtype_label(dtype), op == INC_OP_BARRIER ? "barrier" : op_label(op), count, npk,
					    ibv_wc_status_str(wc[i].status));
			if (wc[i].status != IBV_WC_SUCCESS)
				return fail(c, INCCL_EIO, "%s of %s %llu failed: %s (the switch or link is gone?)",
					    wc[i].opcode & IBV_WC_RECV ? "receive" : "send",
					    wc[i].opcode & IBV_WC_RECV ? "buffer" : "packet", (unsigned long long)wc[i].wr_id,
					    ibv_wc_status_str(wc[i].status));
			if (!(wc[i].opcode & IBV_WC_RECV)) {
				sdone = wc[i].wr_id + 1; /* and every unsignaled send before it */
				continue;
			}
			/* result message rmsg: the packets of message rmsg of this rank's data (a
			 * Broadcast's come as the root sent them: the same cut); a Barrier's is empty */
			size_t first = msg_first(c, rmsg), end = msg_end(c, rmsg, npk);
			size_t off = first * PKT, want = op == INC_OP_BARRIER || rdone >= npk ? 0 : msg_bytes(first, end, bytes);
			uint32_t slot = (uint32_t)wc[i].wr_id;
			if (!expects || rdone >= npk)
				return fail(c, INCCL_EIO, "unexpected result %zu: %u bytes, immediate 0x%08x, when %s",
					    rmsg, wc[i].byte_len, ntohl(wc[i].imm_data),
					    expects ? "every result of this call had arrived" : "this rank is due no result");
			/* the last result message carries INC_IMM_LAST, as the call's last packet did */
			uint32_t want_imm = end == npk ? imm_last : imm;
			if (wc[i].byte_len != want || ((wc[i].imm_data ^ want_imm) & htonl(INC_IMM_LAST)))
				/* a Broadcast's root (a Route's source) sent a call of another count: the
				 * other ranks' empty packets cannot tell, its data does */
				return fail(c, INCCL_EIO, "result %zu of this %s %s of %zu elements (%zu packets) has %u "
					    "bytes (want %zu)%s: another rank's collective differs in count", rmsg,
					    inc_prim_label(prim), dtype_label(dtype), count, npk, wc[i].byte_len, want,
					    (wc[i].imm_data ^ want_imm) & htonl(INC_IMM_LAST)
						    ? end == npk ? " and does not end the call" : " and ends the call early"
						    : "");
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM) || wc[i].imm_data != want_imm)
				return fail(c, INCCL_EIO, "unexpected result %zu: %u bytes (want %zu), immediate 0x%08x (want 0x%08x)",
					    rmsg, wc[i].byte_len, want, ntohl(wc[i].imm_data), ntohl(want_imm));
			if (want)
				from_wire(recv + off, c->rbuf + (size_t)slot * c->message * PKT, want, w);
			if (post_recv(c, slot))
				return fail(c, INCCL_EIO, "repost receive: %s", strerror(errno));
			rmsg++;
			rdone = end;
		}
		size_t posted = has_data ? (smsg ? msg_end(c, smsg - 1, npk) : 0) : smsg;
		if (n > 0) {
			last = ctl_now_ms();
			kicked = 0;
		} else if (sdone < posted && ctl_now_ms() - (kicked ? kicked : last) >= KICK_MS && kick(c)) {
			kicked = ctl_now_ms();
			kicks++;
		} else if (faulted(c))
			return INCCL_ECONN;
		else if (ctl_now_ms() - last > (uint64_t)c->timeout_ms)
			return fail(c, INCCL_ETIMEDOUT,
				    "no progress for %d ms in %s %s %s of %zu elements (%zu/%zu sent, %zu acknowledged, "
				    "%zu results, %lu doorbells rung): a rank is slow or gone, or called a collective that "
				    "differs in count, dtype, operator or root",
				    c->timeout_ms, inc_prim_label(prim), dtype_label(dtype),
				    op == INC_OP_BARRIER ? "barrier" : op_label(op), count, posted, npk, sdone, rdone, kicks);
	}
	c->err[0] = 0;
	return INCCL_OK;
}

/*
 * The arguments of collective @what, each refused by name with INCCL_EINVAL:
 * a NULL @c (said by inccl_last_error(), there is no communicator to hold
 * it), a zero @count or one whose bytes overflow size_t, an unknown @dtype
 * or @op, a @root that is not a rank.
 */
static int check(inccl_comm_t *c, const char *what, size_t count, int dtype, int op, int root)
{
	return inccl__check(c, what, count, dtype, op, root);
}

int inccl__check(inccl_comm_t *c, const char *what, size_t count, int dtype, int op, int root)
{
	size_t w;

	if (!c) {
		inccl__set_last_error("%s: comm is NULL", what);
		return INCCL_EINVAL;
	}
	if (count == 0)
		return fail(c, INCCL_EINVAL, "%s: count must be at least 1", what);
	if (dtype < 0 || dtype >= INC_NDTYPES || !(w = inc_dtype_size((enum inc_dtype)dtype)))
		return fail(c, INCCL_EINVAL, "%s: unknown dtype %d (INCCL_INT32 .. INCCL_FLOAT64, 0..%d)", what, dtype,
			    INC_NDTYPES - 1);
	if (count > SIZE_MAX / w)
		return fail(c, INCCL_EINVAL, "%s: count %zu elements of %zu bytes overflows size_t", what, count, w);
	if (op < INCCL_SUM || op > INCCL_MIN)
		return fail(c, INCCL_EINVAL, "%s: unknown op %d (INCCL_SUM, INCCL_MAX or INCCL_MIN)", what, op);
	if (root < 0 || root >= c->nranks)
		return fail(c, INCCL_EINVAL, "%s: root %d is not a rank of 0..%d", what, root, c->nranks - 1);
	return INCCL_OK;
}

/* EINVAL with a message naming @what when @p is NULL (a buffer this rank needs) or not aligned
 * to the size of an element of @dtype (a valid one, check() passed), else INCCL_OK. */
static int need_buf(inccl_comm_t *c, const void *p, const char *what, int dtype)
{
	size_t w = inc_dtype_size((enum inc_dtype)dtype);

	if (!p)
		return fail(c, INCCL_EINVAL, "%s buffer is NULL", what);
	if ((uintptr_t)p % w)
		return fail(c, INCCL_EINVAL, "%s buffer %p is not aligned to the %zu bytes of an element", what, p, w);
	return INCCL_OK;
}

int inccl_allreduce(inccl_comm_t *c, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		    enum inccl_op op)
{
	int rc = check(c, "inccl_allreduce", count, dtype, op, 0);
	if (!rc && !(rc = need_buf(c, send, "the send", dtype)))
		rc = need_buf(c, recv, "the receive", dtype);
	return rc ? rc : run(c, INC_ALLREDUCE, (enum inc_op)op, dtype, 0, send, recv, count);
}

int inccl_reduce(inccl_comm_t *c, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		 enum inccl_op op, int root)
{
	int rc = check(c, "inccl_reduce", count, dtype, op, root);
	if (!rc && !(rc = need_buf(c, send, "the send", dtype)) && c->rank == root)
		rc = need_buf(c, recv, "the root's receive", dtype);
	return rc ? rc : run(c, INC_REDUCE, (enum inc_op)op, dtype, root, send, recv, count);
}

int inccl_broadcast(inccl_comm_t *c, void *buf, size_t count, enum inccl_dtype dtype, int root)
{
	int rc = check(c, "inccl_broadcast", count, dtype, INCCL_SUM, root);
	if (!rc)
		rc = need_buf(c, buf, "the", dtype);
	return rc ? rc : run(c, INC_BROADCAST, INC_OP_SUM, dtype, root, buf, buf, count);
}

int inccl_barrier(inccl_comm_t *c)
{
	if (!c) {
		inccl__set_last_error("inccl_barrier: comm is NULL");
		return INCCL_EINVAL;
	}
	return run(c, INC_ALLREDUCE, INC_OP_BARRIER, INCCL_INT32, 0, NULL, NULL, 0);
}

/* The public dtypes and operators are the wire's codes (inc_proto.h): the
 * library, inccl_perf and mpi_perf pass one for the other by a cast. */
_Static_assert((int)INCCL_INT32 == INC_INT32 && (int)INCCL_FLOAT32 == INC_FLOAT32 && (int)INCCL_UINT32 == INC_UINT32 &&
		       (int)INCCL_INT64 == INC_INT64 && (int)INCCL_UINT64 == INC_UINT64 &&
		       (int)INCCL_FLOAT16 == INC_FLOAT16 && (int)INCCL_BFLOAT16 == INC_BFLOAT16 &&
		       (int)INCCL_FLOAT64 == INC_FLOAT64 && INC_NDTYPES == 8,
	       "inccl.h's dtypes are the wire's");
_Static_assert((int)INCCL_SUM == INC_OP_SUM && (int)INCCL_MAX == INC_OP_MAX && (int)INCCL_MIN == INC_OP_MIN,
	       "inccl.h's operators are the wire's");

size_t inccl__dtype_size(enum inccl_dtype dtype)
{
	return inc_dtype_size((enum inc_dtype)dtype);
}

int inccl__fail(inccl_comm_t *c, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return status;
}

int inccl__comm_xfer(inccl_comm_t *c, int prim, enum inccl_dtype dtype, enum inccl_op op, int dest,
		     int has_data, int expects, const void *send, void *recv, size_t count)
{
	if (c->ring)
		return fail(c, INCCL_EINVAL, "inccl__comm_xfer: a ring communicator has no switch data path");
	return mark_broken(c, run_xfer(c, (enum inc_prim)prim, (enum inc_op)op, dtype,
				       prim == INC_ALLREDUCE ? INC_RANK_ALL : (uint16_t)dest, has_data, expects, send, recv,
				       count));
}

int inccl__comm_ring_coll(inccl_comm_t *c, enum inccl__coll coll, const void *send, void *recv, size_t count,
			  enum inccl_dtype dtype, enum inccl_op op)
{
	int rc;

	if (c->broken)
		return INCCL_EIO;
	rc = inccl__ring_coll(c->ring, coll, send, recv, count, dtype, op, c->timeout_ms, c->err, sizeof(c->err));
	if (rc == INCCL_OK)
		c->err[0] = 0;
	return mark_broken(c, rc);
}

int inccl__comm_has_ring(const inccl_comm_t *c)
{
	return c->ring != NULL;
}

int inccl_comm_rank(const inccl_comm_t *c)
{
	return c ? c->rank : -1;
}

int inccl_comm_size(const inccl_comm_t *c)
{
	return c ? c->nranks : -1;
}

int inccl__comm_local_ipv4(inccl_comm_t *c, uint32_t *ip_be)
{
	union ibv_gid g;

	if (ibv_query_gid(c->ctx, 1, c->gid_index, &g))
		return -1;
	memcpy(ip_be, &g.raw[12], 4);
	return 0;
}

int inccl__comm_algorithm(const inccl_comm_t *c)
{
	return c->algorithm;
}

/* ring_faulted() - faulted() for the ring's watch: @arg is the communicator. */
static int ring_faulted(void *arg)
{
	return faulted(arg);
}

int inccl__comm_ring_create(inccl_comm_t *c, uint32_t qpn[2])
{
	int rc = inccl__ring_create(c->ctx, c->pd, c->gid_index, c->rank, c->nranks, &c->ring, qpn);

	if (rc == INCCL_OK) /* the ring's calls write their errors into c->err, as faulted() does */
		inccl__ring_watch(c->ring, ring_faulted, c);
	return rc;
}

int inccl__comm_ring_connect(inccl_comm_t *c, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip,
			     uint32_t right_qpn, uint32_t psn)
{
	return inccl__ring_connect(c->ring, left_ip, left_qpn, right_ip, right_qpn, psn, c->err, sizeof(c->err));
}

void inccl__comm_attach(inccl_comm_t *c, void (*release)(void *ctx, unsigned comm_id),
			int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len), void *ctx, unsigned comm_id)
{
	c->release = release;
	c->watch = watch;
	c->release_ctx = ctx;
	c->comm_id = comm_id;
}

inccl_comm_t *inccl__comm_unconnected(int rank, int nranks)
{
	inccl_comm_t *c = calloc(1, sizeof(*c));

	if (c) {
		c->rank = rank;
		c->nranks = nranks;
		c->window = 1;
		c->message = 1;
		c->timeout_ms = 1;
	}
	return c;
}

void inccl_comm_destroy(inccl_comm_t *c)
{
	if (!c)
		return;
	if (c->release) /* a member says it is done; rank 0 waits for all, then drops the rules */
		c->release(c->release_ctx, c->comm_id);
	inccl__ring_destroy(c->ring);
	if (c->qp)
		ibv_destroy_qp(c->qp);
	if (c->smr)
		ibv_dereg_mr(c->smr);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	inccl__cq_destroy(&c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->ctx)
		ibv_close_device(c->ctx);
	free(c->sbuf);
	free(c->rbuf);
	free(c);
}
