/*
 * ring.c — libinccl's host-based baseline: collectives over a ring of RC
 * queue pairs between the hosts, the switches only routing (INCCL_ALGO_RING).
 *
 * Every rank has two queue pairs: one to its left neighbour (rank - 1, it
 * receives from there) and one to its right neighbour (rank + 1, it sends
 * there). group.c exchanges their numbers through rank 0 (no controller, no
 * switch rules: the switches forward these frames like any IP packet).
 *
 * AllReduce is the classic ring (reduce-scatter, then all-gather), pipelined:
 * the buffer is cut into rounds of nranks pieces of at most RING_PIECE bytes;
 * in round q, step k (0 <= k < 2(nranks-1)) a rank sends one piece to the
 * right and receives one from the left. The rank's messages form one stream
 * i = q * steps + k in each direction; message i may be sent once message
 * i - 1 has been received (except at a round's first step), so rounds
 * overlap and at most RING_WINDOW messages are in flight. Broadcast is a
 * pipelined chain from the root along the ring. AllGather and ReduceScatter
 * are the AllReduce's halves; AllToAll forwards blocks hop by hop (below).
 * Reduce is not implemented here (the MPI baseline covers it).
 *
 * Data travels in host byte order: the ring joins hosts of one architecture.
 *
 * Every message carries an immediate that says which call it belongs to
 * (ring_call_imm()): the call's number on this ring (mod 128), a 24-bit hash
 * of what the call is (collective, dtype, operator, root, count), and
 * RING_IMM_LAST on the sender's last message of the call. The receiver
 * checks each message against its own call before it uses it (ring_check()):
 * its number, its hash, its length, and that the left neighbour's last
 * message is this rank's last one. So ranks whose calls differ in count
 * (or dtype, operator, root) fail with a message that says so, on the
 * first message from a differing neighbour (by the hash; the chance that
 * two different calls share one is 2^-24) and at the latest at the end of
 * the call (by the last-message mark and the lengths, exactly), never
 * taking a message of one call into another. The ranks further along the
 * ring, whose neighbours agree, stop when the group says a rank went away
 * (the watch, inccl__ring_watch()) or after the timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/ctlmsg.h"
#include "../proto/inc_elem.h"
#include "inccl.h"
#include "internal.h"

#define RING_PIECE (16 * 1024) /* bytes per message: 16 packets of the lab's 1 KiB MTU */
#define RING_WINDOW 64         /* messages in flight to the right (1 MiB) */
#define RING_RECVS (2 * RING_WINDOW) /* posted receives: the left may run ahead of our polling */
#define RING_SIGNAL 16         /* one send in 16 (and a plan's last) asks for a completion: an RC send
                                * queue completes in order, so it stands for the 15 before it (as
                                * comm.c and perftest do); each completion is a CQE and often a wake-up
                                * that a TCG guest pays for. 4 per window: a full window always has one
                                * outstanding */
#define RING_IMM_LAST 0x80000000u    /* immediate bit 31: the sender's last message of the call */
#define RING_IMM_SEQ 0x7f000000u     /* bits 30..24: the call's number on this ring, mod 128 */
#define RING_IMM_HASH 0x00ffffffu    /* bits 23..0: a hash of the call (ring_call_imm()) */

/* What a call is, for its hash: every collective the ring runs, Barrier apart from a 1-element AllReduce. */
enum ring_kind { RK_ALLREDUCE, RK_BARRIER, RK_BROADCAST, RK_ALLGATHER, RK_REDUCESCATTER, RK_ALLTOALL };

enum { TO_LEFT = 0, TO_RIGHT = 1 };

struct inccl_ring {
	int rank, nranks, gid_index;
	struct inccl_cq cq;
	struct ibv_qp *qp[2];   /* [TO_LEFT]: receives from the left; [TO_RIGHT]: sends to the right */
	uint8_t *sbuf, *rbuf;   /* RING_WINDOW send and RING_RECVS receive slots of RING_PIECE */
	struct ibv_mr *smr, *rmr;
	/* Messages of the next collective that arrived while this rank still
	 * finished the current one (the left neighbour may be ahead): slot and
	 * length, in arrival order, taken first by the next collective. */
	uint32_t early_slot[RING_RECVS], early_len[RING_RECVS], early_imm[RING_RECVS];
	size_t early_head, early_n;
	uint32_t seq;           /* calls run on this ring so far (every rank counts the same calls) */
	/* The staging buffer of ReduceScatter and AllToAll (ring_stage()), kept from call to call:
	 * a fresh one each call would map fresh pages above glibc's largest mmap threshold (32 MiB)
	 * and fault them in again, each call: 0.4 ns a byte more than a copy into warm memory in a
	 * lab's guest (experiments/hostwork.c stage, 2026-11-30), 0.2 s of a 512 MiB call. */
	uint8_t *stage;
	size_t stage_len;
	int (*watch)(void *arg); /* inccl__ring_watch(): 1 when the group says the call cannot end */
	void *watch_arg;
};

/*
 * The stream of one collective on one rank: message i of either direction
 * moves elements [off, off + len) of the work buffer; a received one is
 * combined into it (reduce) or copied (not reduce); sent message i waits
 * until @need messages have been received.
 */
struct ring_plan {
	int rank, p, root;
	size_t n, piece;                  /* elements, elements per piece */
	size_t nsend, nrecv;
	void (*send_at)(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need);
	void (*recv_at)(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce);
	/* received message i may be folded once this many messages were sent (NULL: at once): where a
	 * message lands on what an earlier send still has to read */
	size_t (*recv_need)(const struct ring_plan *pl, size_t i);
	uint32_t imm;                     /* the call's immediate (ring_call_imm()), without RING_IMM_LAST */
};

/* ---- plans ---------------------------------------------------------------- */

/* mod() - @a modulo @p in 0 .. @p-1, for negative @a too (ranks round the ring). */
static size_t mod(long a, long p)
{
	return (size_t)(((a % p) + p) % p);
}

/* AllReduce: piece @s of round @q is [*off, *off + *len). */
static void ar_piece(const struct ring_plan *pl, size_t q, size_t s, size_t *off, size_t *len)
{
	size_t p = (size_t)pl->p, base = q * p * pl->piece, rem = pl->n - base;
	size_t len_q = rem < p * pl->piece ? rem : p * pl->piece;

	*off = base + s * len_q / p;
	*len = base + (s + 1) * len_q / p - *off;
}

/* ar_send() - message @i the AllReduce sends: step k of round q (2(P-1) steps a round, h = P-1 in each
 * half) sends piece rank - k in the reduce-scatter half, then rank + 1 - (k - h) in the all-gather half,
 * its range in *@off, *@len; *@need: how many messages must have been received before it goes (@i:
 * step k sends what step k - 1 received; 0 in a round's first step). */
static void ar_send(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need)
{
	size_t steps = 2 * (size_t)(pl->p - 1), q = i / steps, k = i % steps, h = (size_t)pl->p - 1;
	size_t s = k < h ? mod((long)pl->rank - (long)k, pl->p) : mod((long)pl->rank + 1 - (long)(k - h), pl->p);

	ar_piece(pl, q, s, off, len);
	*need = k == 0 ? 0 : i; /* step k sends what step k - 1 received */
}

/* ar_recv() - message @i the AllReduce receives: the piece its left neighbour sends in that step
 * (rank - k - 1 in the reduce-scatter half, rank - (k - h) in the all-gather half), its range in *@off,
 * *@len; *@reduce 1 to fold it in (first half), 0 to copy it. */
static void ar_recv(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce)
{
	size_t steps = 2 * (size_t)(pl->p - 1), q = i / steps, k = i % steps, h = (size_t)pl->p - 1;
	size_t s = k < h ? mod((long)pl->rank - (long)k - 1, pl->p) : mod((long)pl->rank - (long)(k - h), pl->p);

	ar_piece(pl, q, s, off, len);
	*reduce = k < h;
}

/* Broadcast: chunk i of the chain root -> root+1 -> ... -> root-1. */
static void bc_send(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need)
{
	*off = i * pl->piece;
	*len = pl->n - *off < pl->piece ? pl->n - *off : pl->piece;
	*need = pl->rank == pl->root ? 0 : i + 1; /* forward what came in */
}

/* bc_recv() - receive @i: the range send @i forwards, copied. */
static void bc_recv(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce)
{
	size_t need;

	bc_send(pl, i, off, len, &need);
	*reduce = 0;
}

/*
 * AllGather and ReduceScatter: the two halves of the AllReduce above, on
 * blocks of n elements (block b at b * n) cut into rounds of one piece per
 * block. Step k of a round (0 <= k < nranks - 1) sends one block's piece
 * and receives another's.
 */
static void blk_piece(const struct ring_plan *pl, size_t q, size_t b, size_t *off, size_t *len)
{
	size_t first = q * pl->piece, rest = pl->n - first;

	*off = b * pl->n + first;
	*len = rest < pl->piece ? rest : pl->piece;
}

/* AllGather: step k sends block rank - k (its own first, then what came in), receives rank - k - 1. */
static void ag_send(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need)
{
	size_t h = (size_t)pl->p - 1, q = i / h, k = i % h;

	blk_piece(pl, q, mod((long)pl->rank - (long)k, pl->p), off, len);
	*need = k == 0 ? 0 : i;
}

/* ag_recv() - receive @i: block rank - k - 1's piece of round q, copied. */
static void ag_recv(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce)
{
	size_t h = (size_t)pl->p - 1, q = i / h, k = i % h;

	blk_piece(pl, q, mod((long)pl->rank - (long)k - 1, pl->p), off, len);
	*reduce = 0;
}

/* ReduceScatter: step k sends block rank - k - 1 (own, then partial sums), folds in rank - k - 2;
 * the last step folds in block rank, which is then complete. */
static void rs_send(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need)
{
	size_t h = (size_t)pl->p - 1, q = i / h, k = i % h;

	blk_piece(pl, q, mod((long)pl->rank - (long)k - 1, pl->p), off, len);
	*need = k == 0 ? 0 : i;
}

/* rs_recv() - receive @i: block rank - k - 2's piece of round q, folded in. */
static void rs_recv(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce)
{
	size_t h = (size_t)pl->p - 1, q = i / h, k = i % h;

	blk_piece(pl, q, mod((long)pl->rank - (long)k - 2, pl->p), off, len);
	*reduce = 1;
}

/*
 * AllToAll, forwarded along the ring. The work buffer holds nranks - 1
 * blocks of n elements by distance: block j - 1 is for rank + j (at the
 * start this rank's own data). In step s (1 <= s < nranks) a rank sends
 * blocks s - 1 .. nranks - 2 of what it holds — at step 1 its own, later
 * what it received in step s - 1, which came from rank - s + 1 — and
 * receives the same range from the left, the blocks of rank - s; block s - 1
 * of those is its own and stays (later steps move only blocks from s on).
 * A step's range is cut into pieces from its end, so piece k of step s lies
 * in piece k of step s - 1: it is sent once that one arrived, and a
 * received piece is folded in once the same piece of the same step was sent
 * (it overwrites it). n(n-1)/2 blocks cross each link.
 */
/* a2a_find() - step *@s and piece *@k of message @i; *@base: the messages of steps before *@s. */
static void a2a_find(const struct ring_plan *pl, size_t i, size_t *s, size_t *k, size_t *base)
{
	size_t b = 0;

	for (*s = 1; *s + 1 < (size_t)pl->p; (*s)++) {
		size_t len = ((size_t)pl->p - *s) * pl->n, m = (len + pl->piece - 1) / pl->piece;
		if (i < b + m)
			break;
		b += m;
	}
	*k = i - b;
	*base = b;
}

/* a2a_pieces() - the messages of step @s. */
static size_t a2a_pieces(const struct ring_plan *pl, size_t s)
{
	return (((size_t)pl->p - s) * pl->n + pl->piece - 1) / pl->piece;
}

/* a2a_piece() - piece @k of step @s: [*off, *off + *len) of the work buffer, the k-th piece from the range's end. */
static void a2a_piece(const struct ring_plan *pl, size_t s, size_t k, size_t *off, size_t *len)
{
	size_t end = ((size_t)pl->p - 1) * pl->n, start = (s - 1) * pl->n, hi = end - k * pl->piece;
	size_t lo = hi - start > pl->piece ? hi - pl->piece : start;

	*off = lo;
	*len = hi - lo;
}

/* a2a_send() - send @i: its piece, after the same piece of the step before arrived (*@need messages taken). */
static void a2a_send(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, size_t *need)
{
	size_t s, k, base;

	a2a_find(pl, i, &s, &k, &base);
	a2a_piece(pl, s, k, off, len);
	*need = s == 1 ? 0 : base - a2a_pieces(pl, s - 1) + k + 1;
}

/* a2a_recv() - receive @i: the same range as send @i, copied over it (never reduced). */
static void a2a_recv(const struct ring_plan *pl, size_t i, size_t *off, size_t *len, int *reduce)
{
	size_t s, k, base;

	a2a_find(pl, i, &s, &k, &base);
	a2a_piece(pl, s, k, off, len);
	*reduce = 0;
}

/* a2a_recv_need() - the sends that must be posted before receive @i may be taken (it overwrites send @i's range). */
static size_t a2a_recv_need(const struct ring_plan *pl, size_t i)
{
	return i + 1; /* the send of the same step and piece: the same message number */
}

/* ---- which call a message belongs to ------------------------------------------ */

/*
 * ring_call_imm() - the immediate of every message of call number @seq
 * (kind @kind, @dtype, @op, @root, @count elements): @seq mod 128 in
 * RING_IMM_SEQ, a hash of the rest in RING_IMM_HASH (splitmix64's
 * finaliser: any difference in the fields changes each bit of the hash with
 * a chance of about one half), RING_IMM_LAST clear. Host order.
 */
static uint32_t ring_call_imm(uint32_t seq, enum ring_kind kind, enum inccl_dtype dtype, enum inccl_op op, int root,
			      size_t count)
{
	uint64_t x = (uint64_t)count * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)kind << 40 | (uint64_t)(dtype & 0xff) << 32 | (uint64_t)(op & 0xff) << 24 |
		      (uint64_t)((unsigned)root & 0xffffff));

	x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ x >> 27) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (seq << 24 & RING_IMM_SEQ) | (uint32_t)(x & RING_IMM_HASH);
}

/*
 * ring_check() - may received message @k (@len bytes, immediate @imm in host
 * order) be taken into call @pl (elements of @w bytes)? It must carry the
 * call's number and hash, the length the plan gives it, and RING_IMM_LAST
 * if and only if it is the last this rank receives. Return: 0, or -1 with
 * @err saying what differs (a message that belongs to another call: the
 * neighbour's collective differs in count, or in dtype, operator or root).
 */
static int ring_check(const struct ring_plan *pl, size_t w, size_t k, uint32_t imm, uint32_t len, char *err,
		      size_t errlen)
{
	size_t off, n;
	int reduce, left = (pl->rank + pl->p - 1) % pl->p, last = k + 1 == pl->nrecv;

	pl->recv_at(pl, k, &off, &n, &reduce);
	if ((imm ^ pl->imm) & RING_IMM_SEQ)
		snprintf(err, errlen, "ring: message %zu from rank %d belongs to call %u on this ring, not to this one "
			 "(%u): rank %d's previous call had more messages than this rank's: another rank's collective "
			 "differs in count", k, left, (imm & RING_IMM_SEQ) >> 24, (pl->imm & RING_IMM_SEQ) >> 24, left);
	else if ((imm ^ pl->imm) & RING_IMM_HASH)
		snprintf(err, errlen, "ring: message %zu from rank %d is of another call (hash 0x%06x, this call's "
			 "0x%06x): another rank's collective differs in count, dtype, operator or root", k, left,
			 imm & RING_IMM_HASH, pl->imm & RING_IMM_HASH);
	else if (len != n * w)
		snprintf(err, errlen, "ring: message %zu from rank %d has %u bytes, not %zu: another rank's collective "
			 "differs in count", k, left, len, n * w);
	else if (!(imm & RING_IMM_LAST) != !last)
		snprintf(err, errlen, "ring: message %zu from rank %d %s, where this rank's call of %zu messages %s: "
			 "another rank's collective differs in count", k, left,
			 last ? "does not end its call" : "ends its call", pl->nrecv, last ? "ends" : "goes on");
	else
		return 0;
	return -1;
}

/* ---- arithmetic (host order) ------------------------------------------------ */

/**
 * combine() - acc[i] = op(acc[i], in[i]) for @n elements of @dtype in host
 * order; unaligned ok. The switch's arithmetic (inc_elem_combine(), as
 * inc_proto.h documents it): integer SUM wraps, float16/bfloat16 round to
 * the type at each combine, float MAX/MIN let a number beat a NaN.
 */
static void combine(uint8_t *acc, const uint8_t *in, size_t n, enum inccl_dtype dtype, enum inccl_op op)
{
	enum inc_dtype t = (enum inc_dtype)dtype;
	size_t w = inc_dtype_size(t);

	for (size_t i = 0; i < n; i++, acc += w, in += w)
		inc_elem_put(acc, inc_elem_combine(inc_elem_get(acc, w), inc_elem_get(in, w), (enum inc_op)op, t), w);
}

/* ---- verbs ---------------------------------------------------------------- */

/* post_recv() - give receive buffer @slot (one RING_PIECE of rbuf) back to the QP from the
 * left neighbour; ibv_post_recv()'s result (0 or an errno value). */
static int post_recv(struct inccl_ring *r, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(r->rbuf + (size_t)slot * RING_PIECE), RING_PIECE, r->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->qp[TO_LEFT], &wr, &bad);
}

void inccl__ring_destroy(struct inccl_ring *r)
{
	if (!r)
		return;
	for (int d = 0; d < 2; d++)
		if (r->qp[d])
			ibv_destroy_qp(r->qp[d]);
	if (r->smr)
		ibv_dereg_mr(r->smr);
	if (r->rmr)
		ibv_dereg_mr(r->rmr);
	inccl__cq_destroy(&r->cq);
	free(r->sbuf);
	free(r->rbuf);
	free(r->stage);
	free(r);
}

int inccl__ring_create(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index, int rank, int nranks,
		       struct inccl_ring **out, uint32_t qpn[2])
{
	struct inccl_ring *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return INCCL_ENOMEM;
	r->rank = rank;
	r->nranks = nranks;
	r->gid_index = gid_index;
	r->sbuf = aligned_alloc(4096, (size_t)RING_WINDOW * RING_PIECE);
	r->rbuf = aligned_alloc(4096, (size_t)RING_RECVS * RING_PIECE);
	if (!r->sbuf || !r->rbuf || inccl__cq_create(ctx, RING_WINDOW + RING_RECVS + 16, &r->cq) ||
	    !(r->smr = ibv_reg_mr(pd, r->sbuf, (size_t)RING_WINDOW * RING_PIECE, 0)) ||
	    !(r->rmr = ibv_reg_mr(pd, r->rbuf, (size_t)RING_RECVS * RING_PIECE, IBV_ACCESS_LOCAL_WRITE)))
		goto fail;
	for (int d = 0; d < 2; d++) {
		struct ibv_qp_init_attr qa = { .send_cq = r->cq.cq, .recv_cq = r->cq.cq, .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = d == TO_RIGHT ? RING_WINDOW : 1,
							.max_recv_wr = d == TO_LEFT ? RING_RECVS : 1,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
		if (!(r->qp[d] = ibv_create_qp(pd, &qa)) ||
		    ibv_modify_qp(r->qp[d], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			goto fail;
		qpn[d] = r->qp[d]->qp_num;
	}
	for (uint32_t s = 0; s < RING_RECVS; s++)
		if (post_recv(r, s))
			goto fail;
	*out = r;
	return INCCL_OK;
fail:
	inccl__set_last_error("rank %d: cannot create the ring's queue pairs and slots: %s", rank, strerror(errno));
	inccl__ring_destroy(r);
	return INCCL_ENOMEM;
}

/* Move queue pair @qp to RTS towards @ip_be's queue pair @dest_qpn, PSNs @psn. */
static int connect_qp(struct inccl_ring *r, struct ibv_qp *qp, uint32_t ip_be, uint32_t dest_qpn, uint32_t psn)
{
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = psn & 0xffffff;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)r->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &ip_be, 4);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn & 0xffffff;
	a.timeout = 18; /* 1.07 s, as for the switch connection: TCG guests stall */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int inccl__ring_connect(struct inccl_ring *r, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip,
			uint32_t right_qpn, uint32_t psn, char *err, size_t errlen)
{
	if (connect_qp(r, r->qp[TO_LEFT], left_ip, left_qpn, psn) ||
	    connect_qp(r, r->qp[TO_RIGHT], right_ip, right_qpn, psn)) {
		snprintf(err, errlen, "ring queue pair to RTS: %s", strerror(errno));
		return INCCL_EIO;
	}
	return INCCL_OK;
}

/* ---- the stream ------------------------------------------------------------- */


/*
 * Fold received message number @k (slot @slot, @len bytes, immediate @imm in
 * host order) of plan @pl into @buf and repost its receive, once
 * ring_check() found it is this call's. 0, or -1 with @err set.
 */
static int take(struct inccl_ring *r, const struct ring_plan *pl, uint8_t *buf, enum inccl_dtype dtype,
		enum inccl_op op, size_t k, uint32_t slot, uint32_t len, uint32_t imm, char *err, size_t errlen)
{
	size_t off, n, w = inc_dtype_size((enum inc_dtype)dtype);
	int reduce;

	if (ring_check(pl, w, k, imm, len, err, errlen))
		return -1;
	pl->recv_at(pl, k, &off, &n, &reduce);
	if (reduce)
		combine(buf + off * w, r->rbuf + (size_t)slot * RING_PIECE, n, dtype, op);
	else
		memcpy(buf + off * w, r->rbuf + (size_t)slot * RING_PIECE, n * w);
	if (post_recv(r, slot)) {
		snprintf(err, errlen, "ring: repost receive: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Run plan @pl on work buffer @buf: post sends as their dependencies allow
 * (at most RING_WINDOW in flight), fold every received message into @buf in
 * order. Fails with INCCL_EIO on a failed completion and INCCL_ETIMEDOUT
 * after @timeout_ms without any completion.
 */
static int run_plan(struct inccl_ring *r, const struct ring_plan *pl, uint8_t *buf, enum inccl_dtype dtype,
		    enum inccl_op op, int timeout_ms, char *err, size_t errlen)
{
	size_t sent = 0, sdone = 0, rdone = 0, w = inc_dtype_size((enum inc_dtype)dtype);
	uint64_t last = ctl_now_ms();
	struct ibv_wc wc[32];

	while (sdone < pl->nsend || rdone < pl->nrecv) {
		while (sent < pl->nsend && sent - sdone < RING_WINDOW) {
			size_t off, len, need;
			pl->send_at(pl, sent, &off, &len, &need);
			if (rdone < need)
				break;
			uint8_t *slot = r->sbuf + (sent % RING_WINDOW) * RING_PIECE;
			struct ibv_sge sge = { (uintptr_t)slot, (uint32_t)(len * w), r->smr->lkey };
			struct ibv_send_wr wr = { .wr_id = sent, .sg_list = &sge, .num_sge = len ? 1 : 0,
						  .opcode = IBV_WR_SEND_WITH_IMM,
						  .send_flags = (sent + 1) % RING_SIGNAL == 0 || sent + 1 == pl->nsend
									? IBV_SEND_SIGNALED : 0,
						  .imm_data = htonl(pl->imm | (sent + 1 == pl->nsend ? RING_IMM_LAST : 0)) },
					   *bad;
			memcpy(slot, buf + off * w, len * w);
			if (ibv_post_send(r->qp[TO_RIGHT], &wr, &bad)) {
				snprintf(err, errlen, "ring: post send %zu: %s", sent, strerror(errno));
				return INCCL_EIO;
			}
			sent++;
		}
		/* messages kept for later (the next collective's, or ones that must wait for a send) */
		int took = 0;
		for (; r->early_n && rdone < pl->nrecv && (!pl->recv_need || sent >= pl->recv_need(pl, rdone));
		     r->early_n--, rdone++, took = 1) {
			size_t e = r->early_head;
			r->early_head = (e + 1) % RING_RECVS;
			if (take(r, pl, buf, dtype, op, rdone, r->early_slot[e], r->early_len[e], r->early_imm[e], err,
				 errlen))
				return INCCL_EIO;
		}
		if (took) { /* sends may have become possible */
			last = ctl_now_ms();
			continue;
		}
		int n = inccl__cq_poll(&r->cq, 32, wc, 100);
		if (n < 0) {
			snprintf(err, errlen, "ring: poll CQ failed");
			return INCCL_EIO;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				snprintf(err, errlen, "ring: %s %llu failed: %s (a neighbour is gone?)",
					 wc[i].opcode & IBV_WC_RECV ? "receive" : "send",
					 (unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
				return INCCL_EIO;
			}
			if (!(wc[i].opcode & IBV_WC_RECV)) {
				sdone = wc[i].wr_id + 1; /* and every unsignaled send before it */
				continue;
			}
			uint32_t slot = (uint32_t)wc[i].wr_id;
			uint32_t imm = wc[i].wc_flags & IBV_WC_WITH_IMM ? ntohl(wc[i].imm_data) : 0;
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM)) {
				snprintf(err, errlen, "ring: a message from the left without an immediate (%u bytes): "
					 "not a libinccl ring of this version", wc[i].byte_len);
				return INCCL_EIO;
			}
			if (rdone >= pl->nrecv || r->early_n || (pl->recv_need && sent < pl->recv_need(pl, rdone))) {
				/* the next collective's, or one that would overwrite what is still to be sent:
				 * keep it for then (in order) */
				size_t e = (r->early_head + r->early_n) % RING_RECVS;
				if (r->early_n == RING_RECVS) {
					snprintf(err, errlen, "ring: more early messages than receive slots");
					return INCCL_EIO;
				}
				r->early_slot[e] = slot;
				r->early_len[e] = wc[i].byte_len;
				r->early_imm[e] = imm;
				r->early_n++;
				continue;
			}
			if (take(r, pl, buf, dtype, op, rdone, slot, wc[i].byte_len, imm, err, errlen))
				return INCCL_EIO;
			rdone++;
		}
		if (n > 0) {
			last = ctl_now_ms();
		} else if (r->watch && r->watch(r->watch_arg)) {
			return INCCL_ECONN; /* the watch said why, in @err */
		} else if (ctl_now_ms() - last > (uint64_t)timeout_ms) {
			snprintf(err, errlen, "ring: no progress for %d ms (%zu/%zu sent, %zu acknowledged, %zu/%zu received): "
				 "a rank is slow or gone, or called a collective that differs in count, dtype, operator "
				 "or root", timeout_ms, sent, pl->nsend, sdone, rdone, pl->nrecv);
			return INCCL_ETIMEDOUT;
		}
	}
	return INCCL_OK;
}

/* ring_allreduce() - an AllReduce of @kind (RK_ALLREDUCE, or RK_BARRIER: one int32 SUM), call number r->seq. */
static int ring_allreduce(struct inccl_ring *r, enum ring_kind kind, const void *send, void *recv, size_t count,
			  enum inccl_dtype dtype, enum inccl_op op, int timeout_ms, char *err, size_t errlen)
{
	size_t w = inc_dtype_size((enum inc_dtype)dtype);
	struct ring_plan pl = { r->rank, r->nranks, 0, count, RING_PIECE / w, 0, 0, ar_send, ar_recv, NULL,
				ring_call_imm(r->seq++, kind, dtype, op, 0, count) };
	size_t rounds = (count + (size_t)r->nranks * pl.piece - 1) / ((size_t)r->nranks * pl.piece);

	if (send != recv)
		memmove(recv, send, count * w);
	if (r->nranks == 1)
		return INCCL_OK;
	pl.nsend = pl.nrecv = rounds * 2 * (size_t)(r->nranks - 1);
	return run_plan(r, &pl, recv, dtype, op, timeout_ms, err, errlen);
}

int inccl__ring_allreduce(struct inccl_ring *r, const void *send, void *recv, size_t count,
			  enum inccl_dtype dtype, enum inccl_op op, int timeout_ms, char *err, size_t errlen)
{
	return ring_allreduce(r, RK_ALLREDUCE, send, recv, count, dtype, op, timeout_ms, err, errlen);
}

int inccl__ring_barrier(struct inccl_ring *r, int timeout_ms, char *err, size_t errlen)
{
	int32_t token = 0;

	return ring_allreduce(r, RK_BARRIER, &token, &token, 1, INCCL_INT32, INCCL_SUM, timeout_ms, err, errlen);
}

void inccl__ring_watch(struct inccl_ring *r, int (*watch)(void *arg), void *arg)
{
	r->watch = watch;
	r->watch_arg = arg;
}

int inccl__ring_broadcast(struct inccl_ring *r, void *buf, size_t count, enum inccl_dtype dtype, int root,
			  int timeout_ms, char *err, size_t errlen)
{
	struct ring_plan pl = { r->rank, r->nranks, root, count, RING_PIECE / inc_dtype_size((enum inc_dtype)dtype), 0, 0,
				bc_send, bc_recv, NULL, ring_call_imm(r->seq++, RK_BROADCAST, dtype, INCCL_SUM, root, count) };
	size_t chunks = (count + pl.piece - 1) / pl.piece;
	int last = (root + r->nranks - 1) % r->nranks; /* the end of the chain sends nothing */

	if (r->nranks == 1)
		return INCCL_OK;
	pl.nsend = r->rank == last ? 0 : chunks;
	pl.nrecv = r->rank == root ? 0 : chunks;
	return run_plan(r, &pl, buf, dtype, INCCL_SUM, timeout_ms, err, errlen);
}

/*
 * A block collective on one rank: its plan, and the buffer the plan works on
 * (the receive buffer, or a staging buffer of its own).
 */
struct coll_run {
	struct ring_plan pl;
	uint8_t *buf;   /* what run_plan() works on */
	uint8_t *work;  /* staging: the ring's (ring_stage()), NULL when the plan works on the receive buffer */
	int exchange;   /* 0: nothing to send or receive (one rank) */
	size_t w;       /* bytes per element */
};

/*
 * ring_stage() - @r's staging buffer, at least @len bytes: the one kept from
 * the calls before when it is large enough, else a larger one (the old one
 * freed). NULL when the memory cannot be had (the old one kept).
 */
static uint8_t *ring_stage(struct inccl_ring *r, size_t len)
{
	if (len > r->stage_len) {
		uint8_t *p = malloc(len);
		if (!p)
			return NULL;
		free(r->stage);
		r->stage = p;
		r->stage_len = len;
	}
	return r->stage;
}

/*
 * coll_setup() - the plan of @coll for rank @rank of @p, elements of @w
 * bytes, with pieces of @piece elements, and its work buffer, filled from @send (and @recv's own
 * block written where the plan does not): INCCL_OK, or INCCL_ENOMEM with
 * @err set.
 */
static int coll_setup(struct inccl_ring *r, struct coll_run *cr, int rank, int p, size_t w, size_t piece,
		      enum inccl__coll coll, const void *send, void *recv, size_t count, char *err, size_t errlen)
{
	size_t blk = count * w, n = (size_t)p, rounds = (count + piece - 1) / piece;
	const uint8_t *in = send;
	uint8_t *out = recv;

	*cr = (struct coll_run){ .pl = { rank, p, 0, count, piece, 0, 0, NULL, NULL, NULL }, .exchange = p > 1, .w = w };
	switch (coll) {
	case INCCL__ALLGATHER:
		if (in != out + (size_t)rank * blk)
			memcpy(out + (size_t)rank * blk, in, blk);
		cr->pl.send_at = ag_send;
		cr->pl.recv_at = ag_recv;
		cr->pl.nsend = cr->pl.nrecv = rounds * (n - 1);
		cr->buf = out;
		return INCCL_OK;
	case INCCL__REDUCESCATTER:
		if (!(cr->work = ring_stage(r, n * blk))) {
			snprintf(err, errlen, "ring: no memory to stage %zu bytes of reduce-scatter", n * blk);
			return INCCL_ENOMEM;
		}
		memcpy(cr->work, in, n * blk);
		cr->pl.send_at = rs_send;
		cr->pl.recv_at = rs_recv;
		cr->pl.nsend = cr->pl.nrecv = rounds * (n - 1);
		cr->buf = cr->work;
		return INCCL_OK;
	case INCCL__ALLTOALL:
		if (n > 1 && !(cr->work = ring_stage(r, (n - 1) * blk))) {
			snprintf(err, errlen, "ring: no memory to stage %zu bytes of all-to-all", (n - 1) * blk);
			return INCCL_ENOMEM;
		}
		for (size_t j = 1; j < n; j++) /* by distance: block j - 1 is for rank + j */
			memcpy(cr->work + (j - 1) * blk, in + (((size_t)rank + j) % n) * blk, blk);
		if (in != out)
			memcpy(out + (size_t)rank * blk, in + (size_t)rank * blk, blk);
		cr->pl.send_at = a2a_send;
		cr->pl.recv_at = a2a_recv;
		cr->pl.recv_need = a2a_recv_need;
		for (size_t s = 1; s < n; s++)
			cr->pl.nsend += a2a_pieces(&cr->pl, s);
		cr->pl.nrecv = cr->pl.nsend;
		cr->buf = cr->work;
		return INCCL_OK;
	}
	snprintf(err, errlen, "ring: unknown collective %d", (int)coll);
	return INCCL_EINVAL;
}

/* coll_finish() - after the plan ran (@ok) or failed: the result out of the staging buffer into @recv (kept for the next call). */
static void coll_finish(struct coll_run *cr, enum inccl__coll coll, void *recv, int ok)
{
	size_t blk = cr->pl.n * cr->w, n = (size_t)cr->pl.p;
	uint8_t *out = recv;

	if (ok && coll == INCCL__REDUCESCATTER)
		memcpy(out, cr->work + (size_t)cr->pl.rank * blk, blk);
	for (size_t s = 1; ok && coll == INCCL__ALLTOALL && s < n; s++) /* step s brought rank - s's block */
		memcpy(out + mod((long)cr->pl.rank - (long)s, (long)n) * blk, cr->work + (s - 1) * blk, blk);
	cr->work = NULL;
}

int inccl__ring_coll(struct inccl_ring *r, enum inccl__coll coll, const void *send, void *recv, size_t count,
		     enum inccl_dtype dtype, enum inccl_op op, int timeout_ms, char *err, size_t errlen)
{
	struct coll_run cr;
	size_t w = inc_dtype_size((enum inc_dtype)dtype);
	enum ring_kind kind = coll == INCCL__ALLGATHER ? RK_ALLGATHER : coll == INCCL__REDUCESCATTER ? RK_REDUCESCATTER
											     : RK_ALLTOALL;
	uint32_t imm = ring_call_imm(r->seq++, kind, dtype, op, 0, count);
	int rc = coll_setup(r, &cr, r->rank, r->nranks, w, RING_PIECE / w, coll, send, recv, count, err, errlen);

	if (rc)
		return rc;
	cr.pl.imm = imm;
	if (cr.exchange)
		rc = run_plan(r, &cr.pl, cr.buf, dtype, op, timeout_ms, err, errlen);
	coll_finish(&cr, coll, recv, rc == INCCL_OK);
	return rc;
}
