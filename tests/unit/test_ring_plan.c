/*
 * test_ring_plan.c — the ring baseline's plans for AllGather, ReduceScatter
 * and AllToAll (hostlib/ring.c), run on a simulated ring without RDMA: n
 * ranks, each link a FIFO of messages whose data is copied when sent (as
 * the verbs send buffer is), a window of messages a rank may have sent that
 * its right neighbour has not taken yet, the ranks stepping in a shuffled
 * order. Every rule of run_plan() is kept: a send waits for `need`
 * messages received, a received message waits for `recv_need` sends. A
 * stall (nobody can move) fails the test; every rank's result is compared
 * element by element with what is computed here from the inputs, in place
 * and out of place, for 1..7 ranks and pieces from 1 element to more than a
 * block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "../../hostlib/ring.c"

#define MAXR 7
#define MAXMSG 4096

struct msg {
	size_t len;
	int32_t data[64];
};

static struct msg link_q[MAXR][MAXMSG]; /* link_q[r]: from rank r to r + 1, message i at index i */

static uint64_t rng = 88172645463325252ull;
static unsigned next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)rng;
}

/* Rank r's input element i: distinct per rank and position, negatives too. */
static int32_t input(int r, size_t i)
{
	return (int32_t)((r + 1) * 1000 + (int)i) * (i % 3 == 1 ? -1 : 1);
}

/*
 * simulate() - @coll of @count elements per block on @n ranks with pieces of
 * @piece elements and a window of @window messages; @inplace: nccl's in-place
 * buffers. The results must be right on every rank.
 */
static void simulate(enum inccl__coll coll, int n, size_t count, size_t piece, size_t window, int inplace)
{
	struct coll_run cr[MAXR];
	static struct inccl_ring ring[MAXR]; /* only their staging buffers are used */
	int32_t *sendb[MAXR], *recvb[MAXR];
	size_t sent[MAXR] = { 0 }, rdone[MAXR] = { 0 }, total = (size_t)n * count;
	char err[128];

	memset(ring, 0, sizeof(ring));

	for (int r = 0; r < n; r++) {
		size_t slen = coll == INCCL__ALLGATHER ? count : total, rlen = coll == INCCL__REDUCESCATTER ? count : total;
		recvb[r] = calloc(inplace ? (coll == INCCL__REDUCESCATTER ? total : rlen) : rlen, sizeof(int32_t));
		assert_non_null(recvb[r]);
		if (!inplace)
			assert_non_null(sendb[r] = malloc(slen * sizeof(int32_t)));
		else if (coll == INCCL__ALLGATHER) /* send = recv + rank * sendcount */
			sendb[r] = recvb[r] + (size_t)r * count;
		else if (coll == INCCL__REDUCESCATTER) { /* recv = send + rank * recvcount */
			sendb[r] = recvb[r];
			recvb[r] = sendb[r] + (size_t)r * count;
		} else
			sendb[r] = recvb[r];
		for (size_t i = 0; i < slen; i++)
			sendb[r][i] = input(r, i);
		assert_int_equal(coll_setup(&ring[r], &cr[r], r, n, 4, piece, coll, sendb[r], recvb[r], count, err, sizeof(err)),
				 0);
		assert_int_equal(cr[r].exchange, n > 1);
		assert_true(cr[r].pl.nsend <= MAXMSG);
	}
	for (int moved = 1; moved;) {
		moved = 0;
		int order[MAXR];
		for (int r = 0; r < n; r++)
			order[r] = r;
		for (int r = n - 1; r > 0; r--) {
			int j = (int)(next_rand() % (unsigned)(r + 1)), t = order[r];
			order[r] = order[j];
			order[j] = t;
		}
		for (int o = 0; o < n; o++) {
			int r = order[o], right = (r + 1) % n, left = (r + n - 1) % n;
			struct ring_plan *pl = &cr[r].pl;
			while (sent[r] < pl->nsend && sent[r] - rdone[right] < window) {
				size_t off, len, need;
				pl->send_at(pl, sent[r], &off, &len, &need);
				if (rdone[r] < need)
					break;
				assert_true(len >= 1 && len <= 64);
				link_q[r][sent[r]].len = len;
				memcpy(link_q[r][sent[r]].data, cr[r].buf + off * 4, len * 4);
				sent[r]++;
				moved = 1;
			}
			/* take at most a few, so the ranks interleave */
			for (int t = 0; t < 3 && rdone[r] < pl->nrecv && rdone[r] < sent[left] &&
					(!pl->recv_need || sent[r] >= pl->recv_need(pl, rdone[r]));
			     t++) {
				size_t off, len;
				int reduce;
				pl->recv_at(pl, rdone[r], &off, &len, &reduce);
				assert_int_equal(len, link_q[left][rdone[r]].len);
				if (reduce)
					combine(cr[r].buf + off * 4, (uint8_t *)link_q[left][rdone[r]].data, len, INCCL_INT32,
						INCCL_SUM);
				else
					memcpy(cr[r].buf + off * 4, link_q[left][rdone[r]].data, len * 4);
				rdone[r]++;
				moved = 1;
			}
		}
	}
	for (int r = 0; r < n; r++) {
		if (sent[r] != cr[r].pl.nsend || rdone[r] != cr[r].pl.nrecv)
			fail_msg("collective %d, %d ranks, count %zu, piece %zu, window %zu: rank %d stalled at %zu/%zu sent, "
				 "%zu/%zu received",
				 (int)coll, n, count, piece, window, r, sent[r], cr[r].pl.nsend, rdone[r], cr[r].pl.nrecv);
		coll_finish(&cr[r], coll, recvb[r], 1);
		free(ring[r].stage);
	}
	for (int r = 0; r < n; r++) {
		size_t rlen = coll == INCCL__REDUCESCATTER ? count : total;
		for (size_t i = 0; i < rlen; i++) {
			size_t b = i / count, j = i % count;
			int32_t want = 0;
			if (coll == INCCL__ALLGATHER) /* block b: rank b's input */
				want = input((int)b, j);
			else if (coll == INCCL__ALLTOALL) /* block b: rank b's block for r */
				want = input((int)b, (size_t)r * count + j);
			else
				for (int k = 0; k < n; k++) /* rank r's block of the sum */
					want = (int32_t)((uint32_t)want + (uint32_t)input(k, (size_t)r * count + i));
			if (recvb[r][i] != want)
				fail_msg("collective %d, %d ranks, count %zu, piece %zu, %s: rank %d element %zu is %d, not %d",
					 (int)coll, n, count, piece, inplace ? "in place" : "out of place", r, i, recvb[r][i],
					 want);
		}
	}
	for (int r = 0; r < n; r++) {
		if (inplace && coll == INCCL__REDUCESCATTER)
			free(sendb[r]);
		else if (inplace)
			free(recvb[r]);
		else {
			free(sendb[r]);
			free(recvb[r]);
		}
	}
}

static void run_all(enum inccl__coll coll)
{
	static const size_t counts[] = { 1, 2, 5, 13, 64 }, pieces[] = { 1, 3, 8, 64 }, windows[] = { 1, 2, 64 };

	for (int n = 1; n <= MAXR; n++)
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
			for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++)
				for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
					for (int inplace = 0; inplace <= 1; inplace++)
						if (counts[c] * (size_t)n <= 64 * MAXMSG / 2)
							simulate(coll, n, counts[c], pieces[p], windows[w], inplace);
}

static void test_ring_allgather(void **state) { run_all(INCCL__ALLGATHER); }
static void test_ring_reducescatter(void **state) { run_all(INCCL__REDUCESCATTER); }
static void test_ring_alltoall(void **state) { run_all(INCCL__ALLTOALL); }

/*
 * The staging buffer is the ring's, kept from call to call (ring_stage()): a
 * ReduceScatter, then an AllToAll of no more, reuse it; a larger call grows
 * it; an AllGather (in the receive buffer) leaves it alone.
 */
static void test_ring_stage_kept(void **state)
{
	static int32_t in[4 * 64], out[4 * 64];
	struct inccl_ring ring = { 0 };
	struct coll_run cr;
	char err[128];

	assert_int_equal(coll_setup(&ring, &cr, 1, 4, 4, 16, INCCL__REDUCESCATTER, in, out, 32, err, sizeof(err)), 0);
	uint8_t *first = ring.stage;
	assert_non_null(first);
	assert_true(cr.work == first && ring.stage_len == 4 * 32 * 4);
	coll_finish(&cr, INCCL__REDUCESCATTER, out, 1);
	assert_ptr_equal(ring.stage, first);
	assert_int_equal(coll_setup(&ring, &cr, 1, 4, 4, 16, INCCL__ALLTOALL, in, out, 32, err, sizeof(err)), 0);
	assert_ptr_equal(cr.work, first); /* 3 blocks of 32: within the 4 staged before */
	coll_finish(&cr, INCCL__ALLTOALL, out, 1);
	assert_int_equal(coll_setup(&ring, &cr, 1, 4, 4, 16, INCCL__ALLGATHER, in, out, 64, err, sizeof(err)), 0);
	assert_null(cr.work);
	assert_int_equal(ring.stage_len, 4 * 32 * 4);
	coll_finish(&cr, INCCL__ALLGATHER, out, 1);
	assert_int_equal(coll_setup(&ring, &cr, 1, 4, 4, 16, INCCL__REDUCESCATTER, in, out, 64, err, sizeof(err)), 0);
	assert_int_equal(ring.stage_len, 4 * 64 * 4);
	assert_ptr_equal(cr.work, ring.stage);
	coll_finish(&cr, INCCL__REDUCESCATTER, out, 1);
	free(ring.stage);
}

/* ---- which call a message belongs to (ring_check()) ---------------------------- */

static int32_t scratch[2][MAXR * 64 * 2];

/*
 * plan_of() - rank @rank's plan (of @p, pieces of @piece elements) of @kind
 * over @count elements, as the ring's entry points make it, call number
 * @seq: RK_ALLREDUCE, RK_BROADCAST (root 0) or a block collective (through
 * coll_setup(), on buffers of scratch[@buf]).
 */
static struct ring_plan plan_of(enum ring_kind kind, int rank, int p, size_t count, size_t piece, uint32_t seq, int buf)
{
	struct ring_plan pl = { rank, p, 0, count, piece, 0, 0, ar_send, ar_recv, NULL,
				ring_call_imm(seq, kind, INCCL_INT32, INCCL_SUM, 0, count) };
	struct coll_run cr;
	char err[128];

	if (kind == RK_ALLREDUCE) {
		pl.nsend = pl.nrecv = (count + (size_t)p * piece - 1) / ((size_t)p * piece) * 2 * (size_t)(p - 1);
	} else if (kind == RK_BROADCAST) {
		pl.send_at = bc_send;
		pl.recv_at = bc_recv;
		pl.nsend = rank == p - 1 ? 0 : (count + piece - 1) / piece;
		pl.nrecv = rank == 0 ? 0 : (count + piece - 1) / piece;
	} else {
		enum inccl__coll coll = kind == RK_ALLGATHER ? INCCL__ALLGATHER : kind == RK_REDUCESCATTER
											? INCCL__REDUCESCATTER : INCCL__ALLTOALL;
		assert_true((size_t)p * count <= sizeof(scratch[0]) / sizeof(scratch[0][0]) / 2);
		struct inccl_ring ring = { 0 };
		assert_int_equal(coll_setup(&ring, &cr, rank, p, 4, piece, coll, scratch[buf],
					    scratch[buf] + (size_t)p * count, count, err, sizeof(err)),
				 0);
		free(ring.stage);
		cr.pl.imm = pl.imm;
		pl = cr.pl;
	}
	return pl;
}

/*
 * left_feeds() - rank 1 (of @p) receives what rank 0 sends, message by
 * message, each checked by ring_check() before it would be taken: rank 0
 * runs @kind over @count0 elements, rank 1 over @count1. @same_hash: rank
 * 0's messages carry rank 1's hash (as if two different calls shared one:
 * only the lengths and RING_IMM_LAST can tell). Return: -1 when every
 * message rank 1 expects was taken (none refused, rank 0 sent exactly as
 * many), else the number of the message refused, its reason in @err; and
 * p + 1000 when rank 1 would wait for a message rank 0 never sends.
 */
static long left_feeds(enum ring_kind kind, int p, size_t count0, size_t count1, size_t piece, int same_hash, char *err,
		       size_t errlen)
{
	struct ring_plan l = plan_of(kind, 0, p, count0, piece, 9, 0), me = plan_of(kind, 1, p, count1, piece, 9, 1);

	if (same_hash)
		l.imm = me.imm;
	for (size_t k = 0; k < me.nrecv; k++) {
		size_t off, len, need;
		if (k >= l.nsend)
			return p + 1000;
		l.send_at(&l, k, &off, &len, &need);
		if (ring_check(&me, 4, k, l.imm | (k + 1 == l.nsend ? RING_IMM_LAST : 0), (uint32_t)(len * 4), err, errlen))
			return (long)k;
	}
	return l.nsend == me.nrecv ? -1 : (long)me.nrecv;
}

/*
 * Ranks whose calls differ in count: the first message from the differing
 * neighbour is refused by the call's hash; and had the hash been the same
 * (a collision, 2^-24), by the length of a message or the last-message mark
 * at the latest where the shorter call ends, exactly, for every pair of
 * counts 1..40 (pieces of 4 elements, 2 to 5 ranks) of every collective the
 * ring runs. Equal calls pass; a message of another call number (left over
 * from a longer previous call) is refused; and each refusal says "differs
 * in count".
 */
static void test_ring_count_mismatch(void **state)
{
	static const enum ring_kind kinds[] = { RK_ALLREDUCE, RK_BROADCAST, RK_ALLGATHER, RK_REDUCESCATTER, RK_ALLTOALL };
	char err[256];

	for (size_t t = 0; t < sizeof(kinds) / sizeof(kinds[0]); t++)
		for (int p = 2; p <= 5; p++)
			for (size_t c0 = 1; c0 <= 40; c0++)
				for (size_t c1 = 1; c1 <= 40; c1++)
					for (int same = 0; same <= 1; same++) {
						err[0] = 0;
						long k = left_feeds(kinds[t], p, c0, c1, 4, same, err, sizeof(err));
						if (c0 == c1) {
							if (k != -1)
								fail_msg("kind %d, %d ranks, count %zu: refused message %ld: %s",
									 (int)kinds[t], p, c0, k, err);
							continue;
						}
						if (k < 0 || k >= 1000)
							fail_msg("kind %d, %d ranks, counts %zu and %zu%s: %s", (int)kinds[t], p,
								 c0, c1, same ? " (one hash)" : "",
								 k < 0 ? "taken as equal" : "rank 1 would wait, not refuse");
						if (!strstr(err, "differs in count"))
							fail_msg("refusal without the reason: '%s'", err);
						if (!same && k != 0) /* the hash tells at once */
							fail_msg("kind %d, counts %zu and %zu: refused only at message %ld",
								 (int)kinds[t], c0, c1, k);
					}
	/* a message of the previous call (number 8) where call 9's first is due */
	struct ring_plan me = plan_of(RK_ALLREDUCE, 1, 2, 16, 4, 9, 1);
	uint32_t stale = ring_call_imm(8, RK_ALLREDUCE, INCCL_INT32, INCCL_SUM, 0, 16);
	assert_int_equal(ring_check(&me, 4, 0, stale, 16, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "belongs to call 8"));
	assert_non_null(strstr(err, "differs in count"));
	/* call numbers wrap at 128; a dtype, an operator, a root, a kind of their own hash */
	assert_int_equal(ring_call_imm(128 + 9, RK_ALLREDUCE, INCCL_INT32, INCCL_SUM, 0, 16), me.imm);
	assert_int_not_equal(ring_call_imm(9, RK_ALLREDUCE, INCCL_FLOAT32, INCCL_SUM, 0, 16), me.imm);
	assert_int_not_equal(ring_call_imm(9, RK_ALLREDUCE, INCCL_INT32, INCCL_MAX, 0, 16), me.imm);
	assert_int_not_equal(ring_call_imm(9, RK_BROADCAST, INCCL_INT32, INCCL_SUM, 1, 16),
			     ring_call_imm(9, RK_BROADCAST, INCCL_INT32, INCCL_SUM, 0, 16));
	assert_int_not_equal(ring_call_imm(9, RK_BARRIER, INCCL_INT32, INCCL_SUM, 0, 1),
			     ring_call_imm(9, RK_ALLREDUCE, INCCL_INT32, INCCL_SUM, 0, 1));
	assert_int_equal(me.imm & RING_IMM_LAST, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_allgather),
		cmocka_unit_test(test_ring_reducescatter),
		cmocka_unit_test(test_ring_alltoall),
		cmocka_unit_test(test_ring_stage_kept),
		cmocka_unit_test(test_ring_count_mismatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
