/*
 * test_engine.c — the switch engine offline (switch/engine.c), cmocka.
 *
 * Simulated hosts build real RoCE frames (roce_build_frame), the engine's
 * output frames are parsed and ICRC-checked like a NIC would, and every result
 * is compared with an expectation computed here, independently, from the
 * hosts' inputs. Covers AllReduce/Reduce/Broadcast/Barrier, slot reuse with
 * RNR back-pressure, lost frames in both directions, the switch as an RC
 * requester towards hosts (go-back-N from a NAKed PSN, stale NAKs, timeout
 * probes with backoff, RNR retries), bad input (each kind of frame not taken
 * moves exactly one counter), and fault injection (each fault of
 * sw_engine_inject() exactly as engine.h says, none when disarmed).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/inc_elem.h"
#include "engine.h"
#include "roce.h"

#define HOSTS 4
#define MAXQ 4096
#define SW_IP 0x0a010101u   /* 10.1.1.1 */
#define SW_QPN 0x100
#define BASE_PSN 0xfffff0u  /* PSNs wrap during the tests */
#define LINK_PSN 0x12345bu  /* switch children's first PSN where it differs from the hosts' (mixed_psns) */

struct frame { int port; size_t len; uint8_t d[1200]; };
static struct frame q[MAXQ];
static int qn;
static int drop_next_to; /* drop the next frame the switch sends to this port (1-based) */

static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	if (drop_next_to == port + 1) {
		drop_next_to = 0;
		return;
	}
	assert_true(qn < MAXQ);
	q[qn].port = port;
	q[qn].len = len;
	memcpy(q[qn].d, f, len);
	qn++;
}

struct host {
	uint32_t ip, qpn, spsn, epsn, msn;
	int nresults, nacks, nnaks, nrnr;
	int nsends; /* SENDs from the switch, retransmitted duplicates included */
	uint32_t last_ack_psn, last_ack_msn;
	int in_message; /* rxe's check_op_seq(): a FIRST was taken, MIDDLE/LAST must follow */
	uint32_t result_imm[64]; /* 0 for a result without immediate */
	uint8_t result_op[64];
	uint16_t result_len[64];
	uint8_t result[64][SW_MTU];
};
static struct host h[HOSTS];
static struct sw_engine *eng;
static int mixed_psns; /* setup_engine_children(): switch children start at LINK_PSN, as the controller's links do */
static uint64_t min_rto_ns; /* setup_engine_children(): cfg.min_rto_ns (0: the engine's own floor) */
static uint8_t mac_sw[6] = { 2, 0, 0, 0, 0, 0x10 }, mac_h[6] = { 2, 0, 0, 0, 0, 0x20 };

/*
 * setup_engine_children() - a root engine of @n children (1..HOSTS): child i
 * is reached on port i and holds rank i; it is host h[i] (UDP 4791) unless
 * bit i of @switches makes it a switch (UDP 4792). Every h[] is reset.
 */
static void setup_engine_children(int n, unsigned switches, uint32_t nslots, uint64_t retransmit_ns)
{
	struct sw_cfg cfg = { .nchildren = n, .nslots = nslots, .retransmit_ns = retransmit_ns, .rnr_timer = 1,
			      .min_rto_ns = min_rto_ns };

	qn = 0;
	drop_next_to = 0;
	memset(h, 0, sizeof(h));
	for (int i = 0; i < HOSTS; i++) {
		struct sw_conn_cfg *c = &cfg.child[i];
		uint32_t psn = mixed_psns && (switches >> i & 1) ? LINK_PSN : BASE_PSN;
		h[i] = (struct host){ .ip = 0x0a010115u + (uint32_t)i, .qpn = 0x11 + (uint32_t)i, .spsn = psn,
				      .epsn = psn };
		if (i >= n)
			continue;
		*c = (struct sw_conn_cfg){ .port = i, .local_ip = SW_IP, .peer_ip = h[i].ip, .local_qpn = SW_QPN,
					   .peer_qpn = h[i].qpn, .rq_psn = psn, .sq_psn = psn,
					   .udp_dst = switches >> i & 1 ? ROCE_PORT_SWITCH : ROCE_PORT_HOST,
					   .first_rank = (uint16_t)i, .nranks = 1 };
		memcpy(c->local_mac, mac_sw, 6);
		memcpy(c->peer_mac, mac_h, 6);
	}
	eng = sw_engine_new(&cfg, tx, NULL);
	assert_non_null(eng);
}

static void setup_engine_rto(uint32_t nslots, uint64_t retransmit_ns)
{
	setup_engine_children(HOSTS, 0, nslots, retransmit_ns);
}

static void setup_engine(uint32_t nslots)
{
	setup_engine_rto(nslots, 1000000);
}

/* Host @i sends one packet of opcode @op (@imm if the opcode carries one) and @len bytes of
 * @data at its next PSN (or @psn if >= 0). */
static void host_send_op(int i, uint8_t op, uint32_t imm, const void *data, size_t len, long psn, uint64_t now)
{
	uint8_t f[1200];
	struct roce_build b = { .src_mac = mac_h, .dst_mac = mac_sw, .src_ip = h[i].ip, .dst_ip = SW_IP,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op,
				.ack_req = 1, .dest_qp = SW_QPN, .psn = psn >= 0 ? (uint32_t)psn : h[i].spsn,
				.has_imm = roce_opcode_has_imm(op), .imm = imm,
				.payload = data, .payload_len = len };
	size_t n = roce_build_frame(f, sizeof(f), &b);

	if (psn < 0)
		h[i].spsn = (h[i].spsn + 1) & ROCE_PSN_MASK;
	sw_engine_rx(eng, f, n, now);
}

/* Host @i sends one SEND_ONLY_WITH_IMM with @imm and @len bytes of @data at its next PSN (or @psn if >= 0). */
static void host_send(int i, uint32_t imm, const void *data, size_t len, long psn, uint64_t now)
{
	host_send_op(i, RC_SEND_ONLY_WITH_IMM, imm, data, len, psn, now);
}

/* Host @i answers the switch's SENDs with @syndrome (an ACK, NAK or RNR NAK) for @psn. */
static void host_aeth(int i, uint32_t psn, uint8_t syndrome, uint64_t now)
{
	uint8_t f[128];
	struct roce_build b = { .src_mac = mac_h, .dst_mac = mac_sw, .src_ip = h[i].ip, .dst_ip = SW_IP,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = RC_ACK, .dest_qp = SW_QPN,
				.psn = psn, .has_aeth = 1, .syndrome = syndrome, .msn = h[i].msn };
	sw_engine_rx(eng, f, roce_build_frame(f, sizeof(f), &b), now);
}

static void host_ack(int i, uint32_t psn, uint64_t now)
{
	host_aeth(i, psn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED, now);
}

/* Deliver everything the switch sent to the hosts, who ACK each result like rxe. */
static void pump(uint64_t now)
{
	/* the end of a batch, then a round with nothing from the hosts, as the
	 * daemon runs them: the ACKs still owed to the hosts go out */
	sw_engine_tick(eng, now);
	sw_engine_tick(eng, now);
	for (int k = 0; k < qn; k++) {
		struct roce_pkt p;
		struct host *x = &h[q[k].port];

		assert_int_equal(roce_parse(q[k].d, q[k].len, &p), ROCE_OK);
		assert_true(roce_icrc_ok(q[k].d, q[k].len));
		assert_int_equal(p.src_ip, SW_IP);
		assert_int_equal(p.dst_ip, x->ip);
		assert_int_equal(p.dest_qp, x->qpn);
		if (p.opcode == RC_ACK) {
			uint8_t type = p.syndrome & AETH_TYPE_MASK;
			if (type == AETH_TYPE_ACK) {
				x->nacks++;
				x->last_ack_psn = p.psn;
				x->last_ack_msn = p.msn;
			} else if (type == AETH_TYPE_RNR_NAK) {
				x->nrnr++;
			} else {
				x->nnaks++;
			}
			continue;
		}
		assert_true(p.opcode == RC_SEND_ONLY_WITH_IMM || p.opcode == RC_SEND_LAST_WITH_IMM ||
			    p.opcode == RC_SEND_FIRST || p.opcode == RC_SEND_MIDDLE);
		x->nsends++;
		if (p.psn != x->epsn) /* a retransmitted duplicate: re-ACK it */
			continue;
		/* what rxe's responder demands: opcodes in a message's order, FIRST and MIDDLE a whole MTU */
		assert_int_equal(x->in_message, p.opcode == RC_SEND_MIDDLE || p.opcode == RC_SEND_LAST_WITH_IMM);
		if (p.opcode == RC_SEND_FIRST || p.opcode == RC_SEND_MIDDLE)
			assert_int_equal(p.payload_len, SW_MTU);
		x->in_message = p.opcode == RC_SEND_FIRST || p.opcode == RC_SEND_MIDDLE;
		x->epsn = (x->epsn + 1) & ROCE_PSN_MASK;
		if (!x->in_message)
			x->msn++;
		assert_true(x->nresults < 64);
		x->result_op[x->nresults] = p.opcode;
		x->result_imm[x->nresults] = p.has_imm ? p.imm : 0;
		x->result_len[x->nresults] = (uint16_t)p.payload_len;
		memcpy(x->result[x->nresults], q[k].d + p.payload_off, p.payload_len);
		x->nresults++;
		host_ack((int)(x - h), p.psn, now);
	}
	qn = 0;
}

static uint32_t imm(enum inc_prim prim, enum inc_op op, enum inc_dtype t, uint16_t dest)
{
	struct inc_imm m = { dest, prim, op, t };
	return inc_imm_encode(&m);
}

/* Rank i's element j of packet k: distinct, with negatives. */
static int32_t val(int i, int k, int j) { return (i + 1) * 1000003 * (k + 1) - j * 7919 * (i % 2 ? -1 : 1); }

/* A host's SENDs are acknowledged once per 32 taken, and the rest once a round passes without a new SEND. */
static void test_acks_coalesced(void **state)
{
	uint32_t one = htonl(1);
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);
	int acks = 0;

	setup_engine(128);
	for (int k = 0; k < 80; k++)
		host_send(0, im, &one, 4, -1, 0);
	for (int k = 0; k < qn; k++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(q[k].d, q[k].len, &p), ROCE_OK);
		if (p.opcode != RC_ACK)
			continue;
		acks++;
		assert_int_equal(p.syndrome & AETH_TYPE_MASK, AETH_TYPE_ACK);
		assert_int_equal(p.msn, 32 * acks);
		assert_int_equal(p.psn, (BASE_PSN + 32 * acks - 1) & ROCE_PSN_MASK);
	}
	assert_int_equal(acks, 2);
	qn = 0;
	sw_engine_tick(eng, 0); /* the round brought SENDs from the host: it is still sending, no ACK yet */
	assert_int_equal(qn, 0);
	host_send(0, im, &one, 4, -1, 0); /* the 81st */
	sw_engine_tick(eng, 0);
	assert_int_equal(qn, 0);
	pump(0); /* a round without a SEND from it: one ACK covers packets 65..81 */
	assert_int_equal(h[0].nacks, 1);
	assert_int_equal(h[0].last_ack_msn, 81);
	assert_int_equal(h[0].last_ack_psn, (BASE_PSN + 80) & ROCE_PSN_MASK);
	sw_engine_tick(eng, 0); /* nothing owed: nothing sent */
	assert_int_equal(qn, 0);
	sw_engine_free(eng);
}

static void test_allreduce_int32_sum_any_arrival_order(void **state)
{
	static const int order[HOSTS] = { 2, 0, 3, 1 };
	const int packets = 10;
	uint32_t buf[256];

	setup_engine(64);
	for (int k = 0; k < packets; k++) {
		size_t n = k == packets - 1 ? 3 : 256; /* the last packet is short */
		for (int o = 0; o < HOSTS; o++) {
			int i = order[(o + k) % HOSTS];
			for (size_t j = 0; j < n; j++)
				buf[j] = htonl((uint32_t)val(i, k, (int)j));
			host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf, n * 4, -1, 0);
		}
		pump(0);
	}
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, packets);
		assert_int_equal(h[i].nacks, packets);          /* one ACK per accepted packet */
		assert_int_equal(h[i].last_ack_msn, packets);   /* MSN counts messages */
		assert_int_equal(h[i].last_ack_psn, (BASE_PSN + packets - 1) & ROCE_PSN_MASK);
		for (int k = 0; k < packets; k++) {
			size_t n = k == packets - 1 ? 3 : 256;
			assert_int_equal(h[i].result_len[k], n * 4);
			for (size_t j = 0; j < n; j++) {
				int64_t want = 0;
				for (int r = 0; r < HOSTS; r++)
					want += val(r, k, (int)j);
				uint32_t got;
				memcpy(&got, h[i].result[k] + 4 * j, 4);
				assert_int_equal((int32_t)ntohl(got), (int32_t)(uint32_t)want);
			}
		}
	}
	assert_int_equal(sw_engine_busy_slots(eng), 0); /* every result acknowledged: all free */
	assert_int_equal(sw_engine_counters(eng)->aggregations, packets * (HOSTS - 1));
	sw_engine_free(eng);
}

static void test_float_max_and_reduce_to_one_rank(void **state)
{
	float v[HOSTS][5] = { { 1.5f, -2, 3, 0.25f, 9 }, { 2.5f, -1, -3, 0.5f, 8 }, { -1, 7, 3.5f, 0.125f, 10 }, { 0, 0, 0, 0, 0 } };
	uint32_t w[5];

	setup_engine(16);
	for (int i = 0; i < HOSTS; i++) {
		for (int j = 0; j < 5; j++) {
			uint32_t b;
			memcpy(&b, &v[i][j], 4);
			w[j] = htonl(b);
		}
		host_send(i, imm(INC_REDUCE, INC_OP_MAX, INC_FLOAT32, 2), w, sizeof(w), -1, 0);
	}
	pump(0);
	for (int i = 0; i < HOSTS; i++)
		assert_int_equal(h[i].nresults, i == 2 ? 1 : 0); /* only rank 2 gets the result */
	for (int j = 0; j < 5; j++) {
		float want = v[0][j], got;
		for (int i = 1; i < HOSTS; i++)
			want = v[i][j] > want ? v[i][j] : want;
		uint32_t b;
		memcpy(&b, h[2].result[0] + 4 * j, 4);
		b = ntohl(b);
		memcpy(&got, &b, 4);
		assert_true(got == want);
	}
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/*
 * dval() - rank @i's element @j of packet @k of dtype @t as the value it
 * stands for (small, so that every sum of HOSTS of them is exact in every
 * type) and, in *@bits, its host-order bits: integers over the type's
 * bytes (times 2^20 or 2^40, plus j; negatives fill the top), floats in halves.
 */
static double dval(enum inc_dtype t, int i, int k, int j, uint64_t *bits)
{
	int v = (i * 7 + k * 3 + j * 5) % 17 - 8; /* -8..8 */
	size_t w = inc_dtype_size(t);

	if (t == INC_UINT32 || t == INC_UINT64)
		v += 8; /* 0..16 */
	switch (t) {
	case INC_UINT32:
	case INC_UINT64:
	case INC_INT32:
	case INC_INT64: {
		int64_t x = (int64_t)v * (int64_t)(1ull << (w == 8 ? 40 : 20)) + j; /* exact in a double */
		*bits = (uint64_t)x & (w == 8 ? ~0ull : 0xffffffffull);
		return (double)x;
	}
	case INC_FLOAT16: *bits = inc_f32_to_f16((float)v / 2); break;
	case INC_BFLOAT16: *bits = inc_f32_to_bf16((float)v / 2); break;
	case INC_FLOAT32: *bits = inc_f32_bits((float)v / 2); break;
	case INC_FLOAT64: *bits = inc_f64_bits((double)v / 2); break;
	}
	return (double)v / 2;
}

/* dbits() - the host-order bits of value @x (exact in @t) of dtype @t. */
static uint64_t dbits(enum inc_dtype t, double x)
{
	switch (t) {
	case INC_FLOAT16: return inc_f32_to_f16((float)x);
	case INC_BFLOAT16: return inc_f32_to_bf16((float)x);
	case INC_FLOAT32: return inc_f32_bits((float)x);
	case INC_FLOAT64: return inc_f64_bits(x);
	case INC_INT32:
	case INC_UINT32: return (uint64_t)(int64_t)x & 0xffffffffull;
	default: return (uint64_t)(int64_t)x;
	}
}

/*
 * AllReduce of every dtype x operator through the engine: a full packet
 * (1024 / width elements) and a short one, arriving in an order that
 * changes per packet; every host's result against sums, maxima and minima
 * of the values computed here in double (exact for these values).
 */
static void test_allreduce_every_dtype(void **state)
{
	static const int order[HOSTS] = { 3, 1, 0, 2 };
	uint8_t buf[SW_MTU];

	for (int t = 0; t < INC_NDTYPES; t++)
		for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
			size_t w = inc_dtype_size((enum inc_dtype)t);
			const int packets = 2;
			setup_engine(16);
			for (int k = 0; k < packets; k++) {
				size_t n = k == 0 ? SW_MTU / w : 3;
				for (int o = 0; o < HOSTS; o++) {
					int i = order[(o + k) % HOSTS];
					for (size_t j = 0; j < n; j++) {
						uint64_t b;
						dval((enum inc_dtype)t, i, k, (int)j, &b);
						for (size_t x = 0; x < w; x++) /* big-endian */
							buf[j * w + x] = (uint8_t)(b >> (8 * (w - 1 - x)));
					}
					host_send(i, imm(INC_ALLREDUCE, (enum inc_op)op, (enum inc_dtype)t, INC_RANK_ALL), buf, n * w,
						  -1, 0);
				}
				pump(0);
			}
			for (int i = 0; i < HOSTS; i++) {
				assert_int_equal(h[i].nresults, packets);
				for (int k = 0; k < packets; k++) {
					size_t n = k == 0 ? SW_MTU / w : 3;
					assert_int_equal(h[i].result_len[k], n * w);
					for (size_t j = 0; j < n; j++) {
						uint64_t b, got = 0;
						double want = dval((enum inc_dtype)t, 0, k, (int)j, &b);
						for (int r = 1; r < HOSTS; r++) {
							double x = dval((enum inc_dtype)t, r, k, (int)j, &b);
							want = op == INC_OP_SUM ? want + x : op == INC_OP_MAX ? (x > want ? x : want)
													: (x < want ? x : want);
						}
						for (size_t x = 0; x < w; x++)
							got = got << 8 | h[i].result[k][j * w + x];
						if (got != dbits((enum inc_dtype)t, want))
							fail_msg("%s %s packet %d element %zu: 0x%llx, want 0x%llx (%g)",
								 inc_dtype_name((enum inc_dtype)t), inc_op_name((enum inc_op)op), k, j,
								 (unsigned long long)got,
								 (unsigned long long)dbits((enum inc_dtype)t, want), want);
					}
				}
			}
			assert_int_equal(sw_engine_busy_slots(eng), 0);
			assert_int_equal(sw_engine_counters(eng)->aggregations, packets * (HOSTS - 1));
			sw_engine_free(eng);
		}
}

/*
 * Ranks disagreeing on the dtype of one collective (same operator, same
 * bytes): the later contribution is counted (drop_mismatch) and refused with
 * a NAK, nothing is combined, no result goes out; an undefined dtype (8) is
 * a bad immediate.
 */
static void test_dtype_mismatch_dropped(void **state)
{
	uint64_t eight = 0;

	setup_engine(8);
	host_send(0, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT64, INC_RANK_ALL), &eight, 8, -1, 0);
	host_send(1, imm(INC_ALLREDUCE, INC_OP_SUM, INC_FLOAT64, INC_RANK_ALL), &eight, 8, -1, 0);
	host_send(2, imm(INC_ALLREDUCE, INC_OP_SUM, INC_UINT32, INC_RANK_ALL), &eight, 8, -1, 0);
	host_send(3, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT64, INC_RANK_ALL) | 8u << 8, &eight, 8, -1, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 2);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_imm, 1);
	assert_int_equal(sw_engine_counters(eng)->aggregations, 0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nnaks, i == 0 ? 0 : 1);
		assert_int_equal(h[i].nresults, 0);
	}
	sw_engine_free(eng);
}

static const int barrier_order[HOSTS] = { 2, 0, 3, 1 };

/*
 * enter_barrier() - host @i sends its empty barrier packet and everything
 * the switch sends in answer is delivered (pump()). Its packet must be
 * ACKed, and no host may have had a NAK or an RNR NAK. Return: how many SENDs
 * (results, duplicates included) the switch sent all hosts in answer.
 */
static int enter_barrier(int i)
{
	int acks = h[i].nacks, sends = 0;

	for (int j = 0; j < HOSTS; j++)
		sends -= h[j].nsends;
	host_send(i, imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL), NULL, 0, -1, 0);
	pump(0);
	for (int j = 0; j < HOSTS; j++) {
		sends += h[j].nsends;
		assert_int_equal(h[j].nnaks + h[j].nrnr, 0);
	}
	assert_int_equal(h[i].nacks, acks + 1);
	return sends;
}

/*
 * settle() - what the switch sent since the last call: the PSN of the last
 * ACK to child @root (in *ack, left alone if none) and its RNR NAKs; every
 * other child acknowledges all the results it was sent, as rxe would.
 */
static int settle(int root, uint32_t *ack)
{
	long last[HOSTS] = { -1, -1, -1, -1 };
	int rnr = 0;

	sw_engine_tick(eng, 0);
	sw_engine_tick(eng, 0);
	for (int k = 0; k < qn; k++) {
		struct roce_pkt p;

		assert_int_equal(roce_parse(q[k].d, q[k].len, &p), ROCE_OK);
		if (p.opcode == RC_ACK && q[k].port == root) {
			if ((p.syndrome & AETH_TYPE_MASK) == AETH_TYPE_ACK)
				*ack = p.psn;
			else
				rnr++;
		} else if (p.opcode != RC_ACK) {
			assert_true(q[k].port != root); /* the root of a Broadcast takes no result */
			last[q[k].port] = p.psn;
		}
	}
	qn = 0;
	for (int i = 0; i < HOSTS; i++)
		if (i != root && last[i] >= 0)
			host_ack(i, (uint32_t)last[i], 0);
	return rnr;
}

/*
 * held_back() - a Broadcast from child @root of a switch whose children in
 * @switches are switches (starting at LINK_PSN when mixed_psns is set): the
 * root sends 800 packets before anyone else, and its ACKs must stop at the
 * ceiling, counted in its own PSNs, then follow the others by 100s.
 */
static void held_back(int root, unsigned switches)
{
	const uint32_t bc = imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, (uint16_t)root), nslots = 1024, n = 800;
	uint32_t ack = 0, word = htonl(7), first;

	setup_engine_children(HOSTS, switches, nslots, 1000000);
	first = h[root].spsn;
	for (uint32_t k = 0; k < n; k++)
		host_send(root, bc, &word, 4, -1, 0);
	assert_int_equal(settle(root, &ack), 0);
	assert_int_equal(ack, (first + nslots - 1 - 256) & ROCE_PSN_MASK);
	assert_int_equal(sw_engine_counters(eng)->acks_held, 1);
	for (uint32_t done = 0; done < n; done += 100) {
		for (int i = 0; i < HOSTS; i++)
			for (int k = 0; i != root && k < 100; k++)
				host_send(i, bc, NULL, 0, -1, 0);
		assert_int_equal(settle(root, &ack), 0); /* the results, and their ACKs */
		assert_int_equal(settle(root, &ack), 0); /* the slots they freed move the ceiling */
		uint32_t want = done + 100 + nslots - 1 - 256 < n ? done + 100 + nslots - 1 - 256 : n - 1;
		assert_int_equal(ack, (first + want) & ROCE_PSN_MASK);
	}
	for (int i = 0; i < HOSTS; i++) /* every packet sent, from the child's own first PSN */
		assert_int_equal(h[i].spsn, (h[i].epsn + n) & ROCE_PSN_MASK);
	assert_int_equal(sw_engine_counters(eng)->naks_tx + sw_engine_counters(eng)->drop_seq, 0);
	qn = 0;
	sw_engine_tick(eng, 0); /* nothing held, nothing owed: nothing sent */
	assert_int_equal(qn, 0);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	assert_int_equal(sw_engine_counters(eng)->rnr_naks_tx, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 0);
	sw_engine_free(eng);
}

/*
 * A Broadcast's root takes no results: only ACKs pace it. Its ACKs stop
 * ACK_AHEAD_RESERVE (256) PSNs short of the slot table's end, counted from
 * the oldest slot in use, and follow as the other ranks catch up: never an
 * RNR NAK, and in the end everything is acknowledged.
 */
static void test_root_held_back_by_acks(void **state)
{
	held_back(0, 0);
}

/*
 * The same where child 0 is a switch whose PSNs start elsewhere (LINK_PSN):
 * the ceiling, kept in child 0's PSNs, is moved into the root's (a host,
 * child 1) before it is compared and sent.
 */
static void test_root_held_back_by_acks_mixed_psns(void **state)
{
	mixed_psns = 1;
	held_back(1, 1u << 0 | 1u << 3);
	mixed_psns = 0;
}

/*
 * A switch whose children are hosts and switches (0 and 2 switches, 1 and 3
 * hosts), the switches' PSNs starting at LINK_PSN and the hosts' at
 * BASE_PSN, 8 slots apart by 3 (0x12345b % 8 against 0xfffff0 % 8): packet
 * k of every child lands in one slot. 20 AllReduce packets (slots reused,
 * the hosts' PSNs wrap), a Reduce to a switch child, a Broadcast from a
 * host, a Barrier; every result checked against sums made here, every
 * child acknowledged in its own PSNs. Before slot_psn() no slot ever had
 * all four children and nothing came back: an AllReduce on such a tree hung.
 */
static void test_mixed_children_share_slots(void **state)
{
	const unsigned switches = 1u << 0 | 1u << 2;
	const int packets = 20;
	uint32_t buf[64], first[HOSTS];

	mixed_psns = 1;
	setup_engine_children(HOSTS, switches, 8, 1000000);
	mixed_psns = 0;
	for (int i = 0; i < HOSTS; i++)
		first[i] = h[i].spsn;
	assert_int_not_equal(first[0] % 8, first[1] % 8);
	for (int k = 0; k < packets; k++) {
		for (int o = 0; o < HOSTS; o++) {
			int i = (o + k) % HOSTS; /* hosts and switches in turn first */
			for (int j = 0; j < 64; j++)
				buf[j] = htonl((uint32_t)val(i, k, j));
			host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf, sizeof(buf), -1, 0);
		}
		pump(0);
	}
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, packets);
		assert_int_equal(h[i].last_ack_psn, (first[i] + packets - 1) & ROCE_PSN_MASK);
		for (int k = 0; k < packets; k++)
			for (int j = 0; j < 64; j++) {
				uint32_t got, want = 0;
				for (int r = 0; r < HOSTS; r++)
					want += (uint32_t)val(r, k, j);
				memcpy(&got, h[i].result[k] + 4 * j, 4);
				assert_int_equal(ntohl(got), want);
			}
		h[i].nresults = 0;
	}
	/* Reduce MAX to rank 2 (a switch child): only it receives */
	for (int i = HOSTS - 1; i >= 0; i--) {
		uint32_t x = htonl((uint32_t)(i == 3 ? 1000 : 10 * i));
		host_send(i, imm(INC_REDUCE, INC_OP_MAX, INC_INT32, 2), &x, 4, -1, 0);
	}
	pump(0);
	for (int i = 0; i < HOSTS; i++)
		assert_int_equal(h[i].nresults, i == 2 ? 1 : 0);
	assert_int_equal(ntohl(*(uint32_t *)h[2].result[0]), 1000);
	h[2].nresults = 0;
	/* Broadcast from rank 1 (a host) */
	for (int i = 0; i < HOSTS; i++)
		host_send(i, imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, 1), i == 1 ? "mixed tree" : NULL, i == 1 ? 12 : 0,
			  -1, 0);
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, i == 1 ? 0 : 1);
		if (i != 1)
			assert_memory_equal(h[i].result[0], "mixed tree", 11);
		h[i].nresults = 0;
	}
	/* Barrier: nothing until the last (a switch) enters */
	for (int i = 0; i < HOSTS; i++) {
		host_send(i, imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL), NULL, 0, -1, 0);
		pump(0);
		for (int j = 0; j < HOSTS; j++)
			assert_int_equal(h[j].nresults, i == HOSTS - 1 ? 1 : 0);
	}
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nnaks + h[i].nrnr, 0);
		assert_int_equal(h[i].last_ack_psn, (first[i] + packets + 3 - 1) & ROCE_PSN_MASK);
	}
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch + sw_engine_counters(eng)->rnr_naks_tx, 0);
	sw_engine_free(eng);
}

static void test_broadcast_and_barrier(void **state)
{
	const char msg[] = "root data, 28 bytes long!!!";

	setup_engine(16);
	for (int i = 0; i < HOSTS; i++) /* rank 1 is the root; the others send empty packets */
		host_send(i, imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, 1), i == 1 ? msg : NULL, i == 1 ? 28 : 0, -1, 0);
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, i == 1 ? 0 : 1);
		if (i != 1) {
			assert_int_equal(h[i].result_len[0], 28);
			assert_memory_equal(h[i].result[0], msg, 28);
		}
	}
	/* Barrier, ranks entering in the order 2, 0, 3, 1: each one's packet is
	 * taken, and delivered frame by frame nothing but its ACK comes back until
	 * the last one enters; then every rank gets an empty result */
	for (int o = 0; o < HOSTS - 1; o++)
		assert_int_equal(enter_barrier(barrier_order[o]), 0);
	assert_int_equal(sw_engine_busy_slots(eng), 1);
	assert_int_equal(enter_barrier(barrier_order[HOSTS - 1]), HOSTS);
	for (int i = 0; i < HOSTS; i++) {
		int last = h[i].nresults - 1;

		assert_int_equal(h[i].nresults, i == 1 ? 1 : 2);
		assert_int_equal(h[i].result_len[last], 0);
		assert_int_equal(h[i].result_imm[last], imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL));
	}
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/*
 * INC_ROUTE (AllToAll): per packet one rank carries data and only dest_rank
 * receives it, whoever the source; the other ranks send the packet empty. A
 * second source in the same slot is refused (mismatch), and a route to a
 * rank that does not exist is a bad immediate.
 */
static void test_route_delivers_only_to_the_destination(void **state)
{
	char msg[32];
	uint32_t one = htonl(1);

	setup_engine(16);
	for (int src = 0; src < HOSTS; src++)
		for (int dst = 0; dst < HOSTS; dst++) {
			if (dst == src)
				continue;
			int before[HOSTS];
			snprintf(msg, sizeof(msg), "route %d->%d", src, dst);
			for (int i = 0; i < HOSTS; i++)
				before[i] = h[i].nresults;
			for (int o = 0; o < HOSTS; o++) { /* the source at every place in the arrival order */
				int i = (o + src + dst) % HOSTS;
				host_send(i, imm(INC_ROUTE, INC_OP_SUM, INC_INT32, (uint16_t)dst), i == src ? msg : NULL,
					  i == src ? 16 : 0, -1, 0);
			}
			pump(0);
			for (int i = 0; i < HOSTS; i++)
				assert_int_equal(h[i].nresults - before[i], i == dst ? 1 : 0);
			assert_int_equal(h[dst].result_len[h[dst].nresults - 1], 16);
			assert_memory_equal(h[dst].result[h[dst].nresults - 1], msg, 16);
			assert_int_equal(h[dst].result_imm[h[dst].nresults - 1],
					 imm(INC_ROUTE, INC_OP_SUM, INC_INT32, (uint16_t)dst));
		}
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	assert_int_equal(sw_engine_counters(eng)->aggregations, 0); /* copied, never combined */
	/* two sources in one slot: the second is refused */
	host_send(0, imm(INC_ROUTE, INC_OP_SUM, INC_INT32, 2), &one, 4, -1, 0);
	host_send(1, imm(INC_ROUTE, INC_OP_SUM, INC_INT32, 2), &one, 4, -1, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 1);
	/* a route to a rank that does not exist */
	host_send(2, imm(INC_ROUTE, INC_OP_SUM, INC_INT32, HOSTS), NULL, 0, -1, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_imm, 1);
	sw_engine_free(eng);
}

static void test_busy_slot_gets_rnr_then_succeeds(void **state)
{
	uint32_t one = htonl(1);

	setup_engine(2);
	/* packets 0 and 1 fill both slots; results are sent but not yet acknowledged */
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < HOSTS; i++)
			host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	int held = qn;
	assert_int_equal(sw_engine_busy_slots(eng), 2);
	/* packet 2 maps to slot 0, still busy: RNR NAK, the connection does not advance */
	host_send(0, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	assert_int_equal(qn, held + 1);
	assert_int_equal(sw_engine_counters(eng)->rnr_naks_tx, 1);
	/* what the host pipelined behind it is dropped without a sequence NAK */
	host_send(0, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	assert_int_equal(qn, held + 1);
	h[0].spsn = (h[0].spsn - 1) & ROCE_PSN_MASK;
	pump(0); /* hosts take results 0 and 1 and ACK them: slots free */
	assert_int_equal(h[0].nrnr, 1);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	/* the host retries the same PSN after its RNR timer: accepted now */
	host_send(0, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, (long)((h[0].spsn - 1) & ROCE_PSN_MASK), 0);
	for (int i = 1; i < HOSTS; i++)
		host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, 3);
		uint32_t got;
		memcpy(&got, h[i].result[2], 4);
		assert_int_equal(ntohl(got), HOSTS);
	}
	sw_engine_free(eng);
}

static void test_lost_frames_recovered(void **state)
{
	uint32_t one = htonl(1);
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);

	setup_engine(8);
	/* host 3's packet 0 is lost on the way: its packet 1 gets one NAK (sequence error) */
	for (int i = 0; i < 3; i++)
		host_send(i, im, &one, 4, -1, 0);
	h[3].spsn = (h[3].spsn + 1) & ROCE_PSN_MASK; /* "sent" PSN 0, lost */
	host_send(3, im, &one, 4, -1, 0);
	host_send(3, im, &one, 4, -1, 0); /* still ahead: dropped without a second NAK */
	pump(0);
	assert_int_equal(h[3].nnaks, 1);
	assert_int_equal(h[0].nresults, 0);
	/* the host goes back to the lost PSN (go-back-N) */
	h[3].spsn = BASE_PSN;
	drop_next_to = 1; /* the result to host 0 will be lost on the wire; the others get theirs */
	host_send(3, im, &one, 4, -1, 0);
	pump(0);
	assert_int_equal(h[0].nresults, 0);
	assert_int_equal(h[1].nresults, 1);
	assert_int_equal(sw_engine_busy_slots(eng), 1); /* slot 0 waits for host 0's ACK */
	sw_engine_tick(eng, 500000);                     /* before the timeout: nothing */
	assert_int_equal(qn, 0);
	sw_engine_tick(eng, 1000001);                    /* after: resent */
	assert_int_equal(sw_engine_counters(eng)->retransmits, 1);
	pump(1000001);
	assert_int_equal(h[0].nresults, 1);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	/* a duplicate of an accepted packet is re-ACKed, not aggregated twice */
	host_send(1, im, &one, 4, (long)BASE_PSN, 2000000);
	assert_int_equal(sw_engine_counters(eng)->duplicates, 1);
	pump(2000000);
	assert_int_equal(h[1].nresults, 1);
	sw_engine_free(eng);
}

/* The PSNs of the result frames queued for host @i since the last call, in order; the queue is emptied. */
static int results_to(int i, uint32_t *psn, int max)
{
	int n = 0;

	for (int k = 0; k < qn; k++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(q[k].d, q[k].len, &p), ROCE_OK);
		if (q[k].port == i && p.opcode != RC_ACK && n < max)
			psn[n++] = p.psn;
	}
	qn = 0;
	return n;
}

/*
 * expect_results() - the switch has sent host @i exactly @n results since the
 * last look, the first at BASE_PSN + @first and the last at BASE_PSN + @last.
 */
static void expect_results(int i, int n, uint32_t first, uint32_t last)
{
	uint32_t psn[16];

	assert_int_equal(results_to(i, psn, 16), n);
	assert_int_equal(psn[0], (BASE_PSN + first) & ROCE_PSN_MASK);
	assert_int_equal(psn[n - 1], (BASE_PSN + last) & ROCE_PSN_MASK);
}

/* @n AllReduce packets from every host at time @now: n results for each host, not yet acknowledged. */
static void results_out(int n, uint64_t now)
{
	uint32_t one = htonl(1);

	for (int k = 0; k < n; k++)
		for (int i = 0; i < HOSTS; i++)
			host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, now);
}

static void test_host_nak_goes_back_from_the_naked_psn(void **state)
{
	uint32_t psn[16];

	setup_engine_rto(16, 100000000);
	results_out(1, 0);
	qn = 0;
	host_ack(0, BASE_PSN, 1000000); /* an RTT sample: 1 ms */
	results_out(5, 2000000);        /* results 1..5 to every host */
	assert_int_equal(results_to(0, psn, 16), 5);
	/* host 0 lost result 2 and NAKs it (acknowledging 1): 2..5 again, at once, in order */
	host_aeth(0, (BASE_PSN + 2) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 2500000);
	assert_int_equal(results_to(0, psn, 16), 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(psn[k], (BASE_PSN + 2 + k) & ROCE_PSN_MASK);
	assert_int_equal(sw_engine_counters(eng)->retransmits, 4);
	/* the same NAK again, sooner than an RTT after the resend (a duplicate, or the
	 * host NAKing what was in flight before): the resent frames are on their way */
	host_aeth(0, (BASE_PSN + 2) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 2600000);
	host_aeth(0, (BASE_PSN + 3) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 2700000);
	assert_int_equal(results_to(0, psn, 16), 0);
	assert_int_equal(sw_engine_counters(eng)->naks_ignored, 2);
	/* a NAK of an acknowledged PSN comes late: ignored */
	host_aeth(0, (BASE_PSN + 2) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 5000000);
	assert_int_equal(results_to(0, psn, 16), 0);
	/* later than an RTT, the NAK of the next missing one is new: go back again */
	host_aeth(0, (BASE_PSN + 3) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 5100000);
	assert_int_equal(results_to(0, psn, 16), 3);
	assert_int_equal(psn[0], (BASE_PSN + 3) & ROCE_PSN_MASK);
	host_ack(0, (BASE_PSN + 5) & ROCE_PSN_MASK, 6000000);
	assert_int_equal(sw_engine_counters(eng)->naks_rx, 4); /* the late one is not a NAK to act on */
	assert_int_equal(sw_engine_counters(eng)->retransmits, 7);
	for (int i = 1; i < HOSTS; i++)
		for (int k = 0; k <= 5; k++)
			host_ack(i, (BASE_PSN + (uint32_t)k) & ROCE_PSN_MASK, 6000000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/*
 * host0_goes_quiet() - an engine whose timeout towards a host is 3 ms (one
 * result acknowledged after 1 ms: srtt 1 ms, rttvar 0.5 ms), then @n results
 * at 10 ms that every host but host 0 acknowledges. Returns its counters.
 */
static const struct sw_counters *host0_goes_quiet(int n)
{
	setup_engine_rto(16, 100000000);
	results_out(1, 0);
	qn = 0;
	host_ack(0, BASE_PSN, 1000000);
	results_out(n, 10000000);
	for (int i = 1; i < HOSTS; i++)
		host_ack(i, (BASE_PSN + (uint32_t)n) & ROCE_PSN_MASK, 10000000);
	qn = 0;
	return sw_engine_counters(eng);
}

static void test_timeout_probes_with_backoff(void **state)
{
	uint32_t psn[16];
	const struct sw_counters *c = host0_goes_quiet(4); /* results 1..4, then host 0 stalls */

	sw_engine_tick(eng, 12900000);
	assert_int_equal(results_to(0, psn, 16), 0);
	sw_engine_tick(eng, 13000000); /* one probe: the newest frame only (a tail probe) */
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(psn[0], (BASE_PSN + 4) & ROCE_PSN_MASK);
	assert_int_equal(c->timeouts, 1);
	sw_engine_tick(eng, 18900000); /* backed off: 6 ms now */
	assert_int_equal(results_to(0, psn, 16), 0);
	sw_engine_tick(eng, 19000000); /* no answer (rxe NAKs a gap once): the oldest frame */
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(psn[0], (BASE_PSN + 1) & ROCE_PSN_MASK);
	sw_engine_tick(eng, 31000000); /* 12 ms */
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(psn[0], (BASE_PSN + 1) & ROCE_PSN_MASK);
	assert_int_equal(c->timeouts, 3);
	/* the host wakes up and acknowledges the probe: the rest follows at once */
	host_ack(0, (BASE_PSN + 1) & ROCE_PSN_MASK, 32000000);
	assert_int_equal(results_to(0, psn, 16), 3);
	assert_int_equal(psn[0], (BASE_PSN + 2) & ROCE_PSN_MASK);
	assert_int_equal(psn[2], (BASE_PSN + 4) & ROCE_PSN_MASK);
	/* progress resets the backoff: the next timeout is 3 ms after the resend again */
	sw_engine_tick(eng, 35000000);
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(c->timeouts, 4);
	/* the timeout never exceeds cfg.retransmit_ns however often it doubles */
	for (uint64_t t = 36000000; t < 600000000; t += 1000000)
		sw_engine_tick(eng, t);
	assert_int_equal(c->timeouts, 4 + 8); /* after 6, 12, 24, 48, 96, then 100, 100, 100 ms */
	host_ack(0, (BASE_PSN + 4) & ROCE_PSN_MASK, 600000000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/*
 * asking_to() - of the result frames queued for host @i since the last
 * call, how many there were (returned) and the PSNs of those asking for an
 * ACK (@ask, *@nask of them); the queue is emptied.
 */
static int asking_to(int i, uint32_t *ask, int max, int *nask)
{
	int n = 0;

	*nask = 0;
	for (int k = 0; k < qn; k++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(q[k].d, q[k].len, &p), ROCE_OK);
		assert_true(roce_icrc_ok(q[k].d, q[k].len)); /* the AckReq bit set later, the ICRC redone */
		if (q[k].port != i || p.opcode == RC_ACK)
			continue;
		n++;
		if (p.ack_req && *nask < max)
			ask[(*nask)++] = p.psn;
	}
	qn = 0;
	return n;
}

/*
 * Results to a host that stop on a frame not asking for an ACK (rxe ACKs
 * only those that ask): after TAIL_IDLE_NS (10 ms), long before the timer
 * (the daemon's 50 ms floor), the newest frame goes again asking, once,
 * counted as a tail probe and not as a retransmit; its ACK frees the slots.
 * A burst that ends on a frame that asked gets no probe.
 */
static void test_idle_tail_asks_once(void **state)
{
	uint32_t ask[16];
	int nask;
	const struct sw_counters *c;

	min_rto_ns = 50000000;
	setup_engine_rto(16, 200000000);
	min_rto_ns = 0;
	c = sw_engine_counters(eng);
	results_out(3, 0); /* results 0..2: only 0 asks (nothing was in flight) */
	assert_int_equal(asking_to(0, ask, 16, &nask), 3);
	assert_int_equal(nask, 1);
	assert_int_equal(ask[0], BASE_PSN);
	for (int i = 0; i < HOSTS; i++)
		host_ack(i, BASE_PSN, 100000); /* what rxe answers: frame 0 only */
	qn = 0;
	sw_engine_tick(eng, 9999999); /* idle for less than 10 ms: nothing */
	assert_int_equal(asking_to(0, ask, 16, &nask), 0);
	sw_engine_tick(eng, 10000000);
	assert_int_equal(asking_to(0, ask, 16, &nask), 1);
	assert_int_equal(nask, 1);
	assert_int_equal(ask[0], (BASE_PSN + 2) & ROCE_PSN_MASK);
	assert_int_equal(c->tail_probes, HOSTS);
	assert_int_equal(c->retransmits, 0);
	assert_int_equal(c->timeouts, 0);
	sw_engine_tick(eng, 20000000); /* once per burst */
	assert_int_equal(asking_to(0, ask, 16, &nask), 0);
	assert_int_equal(sw_engine_busy_slots(eng), 2);
	for (int i = 0; i < HOSTS; i++)
		host_ack(i, (BASE_PSN + 2) & ROCE_PSN_MASK, 20100000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	/* results 3..15: the first asks (nothing in flight), the last, PSN 0xffffff, is a 32nd */
	results_out(13, 30000000);
	assert_int_equal(asking_to(0, ask, 16, &nask), 13);
	assert_int_equal(nask, 2);
	assert_int_equal(ask[0], (BASE_PSN + 3) & ROCE_PSN_MASK);
	assert_int_equal(ask[1], (BASE_PSN + 15) & ROCE_PSN_MASK);
	sw_engine_tick(eng, 45000000);
	assert_int_equal(asking_to(0, ask, 16, &nask), 0);
	assert_int_equal(c->tail_probes, HOSTS);
	assert_int_equal(c->timeouts, 0);
	sw_engine_free(eng);
}

/* A tail probe: a host that had everything acknowledges everything and
 * nothing is resent; one that misses frames NAKs and gets them again. */
static void test_tail_probe_answers(void **state)
{
	uint32_t psn[16];
	const struct sw_counters *c = host0_goes_quiet(6); /* results 1..6; host 0's ACKs are late */

	sw_engine_tick(eng, 13000000);
	expect_results(0, 1, 6, 6);
	/* a late ACK of the oldest frame, then the probe's: nothing goes back */
	host_ack(0, (BASE_PSN + 1) & ROCE_PSN_MASK, 13500000);
	host_ack(0, (BASE_PSN + 6) & ROCE_PSN_MASK, 14000000);
	assert_int_equal(results_to(0, psn, 16), 0);
	assert_int_equal(c->retransmits, 1);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	/* results 7..10 and a timeout; the host lost 8..10 and NAKs the probe */
	results_out(4, 20000000);
	for (int i = 1; i < HOSTS; i++)
		host_ack(i, (BASE_PSN + 10) & ROCE_PSN_MASK, 20000000);
	host_ack(0, (BASE_PSN + 7) & ROCE_PSN_MASK, 20500000);
	qn = 0;
	sw_engine_tick(eng, 40000000);
	expect_results(0, 1, 10, 10);
	host_aeth(0, (BASE_PSN + 8) & ROCE_PSN_MASK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 41000000);
	expect_results(0, 3, 8, 10);
	host_ack(0, (BASE_PSN + 10) & ROCE_PSN_MASK, 42000000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/* The host lost frames and its one NAK of the gap (rxe sends one per gap)
 * was lost too: the tail probe goes unanswered, the next timeout probes una,
 * and the ACK of all the host has sends the rest again at once. */
static void test_lost_nak_after_tail_probe(void **state)
{
	host0_goes_quiet(6); /* host 0 has results 1..3, lost 4..6 */
	sw_engine_tick(eng, 13000000);
	expect_results(0, 1, 6, 6); /* its NAK is lost */
	sw_engine_tick(eng, 19000000);
	expect_results(0, 1, 1, 1);
	host_ack(0, (BASE_PSN + 3) & ROCE_PSN_MASK, 20000000); /* the duplicate's ACK: all it has */
	expect_results(0, 3, 4, 6);
	host_ack(0, (BASE_PSN + 6) & ROCE_PSN_MASK, 21000000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

static void test_host_rnr_nak_retries_after_the_delay(void **state)
{
	uint32_t psn[16];

	setup_engine_rto(16, 100000000);
	results_out(3, 0);
	qn = 0;
	/* host 0 had no receive posted for result 1 (acknowledging 0) */
	host_aeth(0, (BASE_PSN + 1) & ROCE_PSN_MASK, AETH_TYPE_RNR_NAK | 1, 100000);
	assert_int_equal(sw_engine_counters(eng)->rnr_naks_rx, 1);
	assert_int_equal(results_to(0, psn, 16), 0);
	sw_engine_tick(eng, 1000000); /* RNR_RETRY_NS (1 ms) not over yet */
	assert_int_equal(results_to(0, psn, 16), 0);
	sw_engine_tick(eng, 1100000); /* the refused frame alone */
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(psn[0], (BASE_PSN + 1) & ROCE_PSN_MASK);
	host_ack(0, (BASE_PSN + 1) & ROCE_PSN_MASK, 1200000); /* taken: the rest follows */
	assert_int_equal(results_to(0, psn, 16), 1);
	assert_int_equal(psn[0], (BASE_PSN + 2) & ROCE_PSN_MASK);
	host_ack(0, (BASE_PSN + 2) & ROCE_PSN_MASK, 1300000);
	for (int i = 1; i < HOSTS; i++)
		host_ack(i, (BASE_PSN + 2) & ROCE_PSN_MASK, 1300000);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	assert_int_equal(sw_engine_counters(eng)->retransmits, 2);
	sw_engine_free(eng);
}

static void test_bad_input_is_counted_not_crashing(void **state)
{
	uint8_t f[1200];
	uint32_t one = htonl(1);
	struct roce_build b = { .src_mac = mac_h, .dst_mac = mac_sw, .src_ip = 0x0a0101aa, .dst_ip = SW_IP,
				.src_port = 1, .dst_port = ROCE_PORT_HOST, .opcode = RC_SEND_ONLY_WITH_IMM, .ack_req = 1,
				.dest_qp = SW_QPN, .psn = BASE_PSN, .has_imm = 1, .imm = 0xffff1100, .payload = &one,
				.payload_len = 4 };
	size_t n = roce_build_frame(f, sizeof(f), &b);

	setup_engine(8);
	sw_engine_rx(eng, f, n, 0); /* unknown peer */
	assert_int_equal(sw_engine_counters(eng)->drop_unknown_qp, 1);
	f[n - 10] ^= 0x40;          /* corrupted payload */
	sw_engine_rx(eng, f, n, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_icrc, 1);
	sw_engine_rx(eng, f, 20, 0); /* truncated */
	assert_int_equal(sw_engine_counters(eng)->drop_parse, 1);
	/* a reduce to a rank that does not exist: NAK invalid request, nothing aggregated */
	host_send(0, imm(INC_REDUCE, INC_OP_SUM, INC_INT32, 9), &one, 4, -1, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_imm, 1);
	/* ranks disagreeing on the operation of one slot */
	host_send(1, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	host_send(2, imm(INC_ALLREDUCE, INC_OP_MAX, INC_INT32, INC_RANK_ALL), &one, 4, -1, 0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 1);
	pump(0);
	assert_int_equal(h[0].nnaks, 1);
	assert_int_equal(h[2].nnaks, 1);
	assert_int_equal(h[1].nacks, 1);
	assert_int_equal(sw_engine_counters(eng)->aggregations, 0);
	sw_engine_free(eng);
	/* invalid configurations are refused with a message */
	struct sw_cfg cfg = { .nchildren = 0, .nslots = 8 };
	assert_null(sw_engine_new(&cfg, tx, NULL));
}

/*
 * Rules that would need more memory than a switch has are refused before
 * anything is allocated, with the sizes in the message (rules of 4,194,304
 * slots, which sw_rules_parse() accepts, stopped fuzz/fuzz_swconfig.c with
 * "out-of-memory (malloc(4596957184))"; a window of 65,536 on 64 switch
 * links would hold 4.6 GB of frames);
 * the controller's default still fits, and a window past SW_MAX_WINDOW is
 * refused.
 */
static void test_memory_bounded(void **state)
{
	struct sw_cfg cfg = { .nchildren = 2, .nslots = SW_MAX_SLOTS, .retransmit_ns = 1000000, .rnr_timer = 1 };
	struct sw_engine *e;

	for (int i = 0; i < SW_MAX_CHILDREN; i++)
		cfg.child[i] = (struct sw_conn_cfg){ .port = i, .local_ip = 0x0a010101u, .peer_ip = 0x0a010110u + (uint32_t)i,
						     .local_qpn = 256, .peer_qpn = 17, .udp_dst = ROCE_PORT_HOST,
						     .first_rank = (uint16_t)i, .nranks = 1 };
	assert_null(sw_engine_new(&cfg, tx, NULL)); /* 4 Mi slots of more than 1 KiB each */
	cfg.nslots = 8192;                          /* incctl's default */
	assert_non_null(e = sw_engine_new(&cfg, tx, NULL));
	sw_engine_free(e);
	cfg.nchildren = SW_MAX_CHILDREN;            /* 64 child switches, each holding a window of frames */
	for (int i = 0; i < SW_MAX_CHILDREN; i++)
		cfg.child[i].udp_dst = ROCE_PORT_SWITCH;
	cfg.nslots = 64;
	cfg.window = SW_MAX_WINDOW;
	assert_null(sw_engine_new(&cfg, tx, NULL));
	cfg.window = 0;                             /* SW_WINDOW: 64 x 256 held frames fit */
	assert_non_null(e = sw_engine_new(&cfg, tx, NULL));
	sw_engine_free(e);
	cfg.nchildren = 1;
	cfg.window = SW_MAX_WINDOW + 1;
	assert_null(sw_engine_new(&cfg, tx, NULL));
}

/*
 * Nothing uncounted: one frame of each kind the engine does not take moves
 * exactly one of the counters below by exactly 1 (engine.h: a drop_
 * counter, or the count of what was consumed or refused without loss), and
 * a frame it takes moves none of them.
 */
#define FATE(x) { #x, offsetof(struct sw_counters, x) }
static const struct { const char *name; size_t off; } fates[] = {
	FATE(drop_parse), FATE(drop_icrc), FATE(drop_unknown_qp), FATE(drop_bad_imm), FATE(drop_mismatch),
	FATE(drop_seq), FATE(drop_bad_op), FATE(drop_oversize), FATE(drop_bad_ack),
	FATE(duplicates), FATE(acks_stale), FATE(rnr_naks_tx), FATE(ooo_held),
};
#undef FATE

#define UP_IP 0xac100005u   /* a leaf's end of its parent link (172.16.0.5) */
#define ROOT_IP 0xac100001u /* the root's (172.16.0.1) */
#define UP_QPN 0x200

/* frame() - into @f, a frame from @src to QP @qpn of @dst: opcode @op (with @imm if it carries one, AETH
 * @syndrome if an ACK), PSN @psn, @len bytes of zeros. Returns its length. */
static size_t frame(uint8_t *f, uint32_t src, uint32_t dst, uint32_t qpn, uint8_t op, uint32_t imm, size_t len,
		    uint32_t psn, uint8_t syndrome)
{
	static const uint8_t zeros[SW_MTU + 4];
	struct roce_build b = { .src_mac = mac_h, .dst_mac = mac_sw, .src_ip = src, .dst_ip = dst,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op, .ack_req = 1,
				.dest_qp = qpn, .psn = psn & ROCE_PSN_MASK, .has_imm = roce_opcode_has_imm(op),
				.imm = imm, .has_aeth = op == RC_ACK, .syndrome = syndrome, .payload = zeros,
				.payload_len = len };
	size_t n = roce_build_frame(f, 1200, &b);

	assert_true(n > 0);
	return n;
}

/* from_host() - frame() from host @i to the switch: a SEND, or an ACK of @syndrome. */
static size_t from_host(uint8_t *f, int i, uint8_t op, uint32_t imm, size_t len, uint32_t psn, uint8_t syndrome)
{
	return frame(f, h[i].ip, SW_IP, SW_QPN, op, imm, len, psn, syndrome);
}

/*
 * inject() - hand @eng the @n bytes of @f and check that the counter
 * named @want (NULL: none, the frame is taken) moved by 1, and no other of
 * fates[]. Prints what moved when that is not so. Return: 0, or 1 (wrong).
 */
static int inject(const char *kind, const uint8_t *f, size_t n, const char *want)
{
	struct sw_counters before = *sw_engine_counters(eng);
	const struct sw_counters *c = sw_engine_counters(eng);
	char moved[256] = "";
	int wrong = 0;

	sw_engine_rx(eng, f, n, 0);
	assert_int_equal(c->rx_frames, before.rx_frames + 1);
	for (size_t i = 0; i < sizeof(fates) / sizeof(fates[0]); i++) {
		uint64_t d = *(const uint64_t *)((const char *)c + fates[i].off) -
			     *(const uint64_t *)((const char *)&before + fates[i].off);

		if (d != (want && !strcmp(want, fates[i].name)))
			wrong = 1;
		if (d)
			snprintf(moved + strlen(moved), sizeof(moved) - strlen(moved), " %s+%llu", fates[i].name,
				 (unsigned long long)d);
	}
	if (wrong)
		print_message("%-56s want %-15s moved:%s\n", kind, want ? want : "none", moved[0] ? moved : " nothing");
	return wrong;
}

static void test_every_drop_counted_once(void **state)
{
	const uint32_t sum = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);
	const uint32_t max = imm(INC_ALLREDUCE, INC_OP_MAX, INC_INT32, INC_RANK_ALL);
	const uint8_t ack = AETH_TYPE_ACK | AETH_ACK_UNLIMITED;
	const size_t bth = ROCE_BTH_OFF;
	uint8_t f[1200];
	size_t n;
	int wrong = 0;

	/* hosts 0..2, and a switch as child 3 (it holds frames past a gap); 8 slots */
	setup_engine_children(HOSTS, 1u << 3, 8, 1000000);
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("truncated: 20 bytes", f, 20, "drop_parse");
	wrong += inject("truncated: shorter than its IP length", f, n - 1, "drop_parse");
	f[12] = 0x86, f[13] = 0xdd;
	wrong += inject("not IPv4 (EtherType IPv6)", f, n, "drop_parse");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	f[ROCE_ETH_LEN] = 0x46;
	wrong += inject("IPv4 header with options", f, n, "drop_parse");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	f[ROCE_UDP_OFF + 3] = 0xb9; /* UDP 4793: a bundle's port, which the engine never sees */
	wrong += inject("UDP to a port other than 4791/4792", f, n, "drop_parse");
	n = from_host(f, 0, 0x0a, 0, 4, BASE_PSN, 0);
	wrong += inject("opcode the switch does not handle (WRITE_ONLY)", f, n, "drop_parse");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 0, BASE_PSN, 0);
	f[bth + 1] |= 0x30;
	wrong += inject("pad count longer than the payload", f, n, "drop_parse");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	f[n - ROCE_ICRC_LEN - 1] ^= 0x40;
	wrong += inject("bad ICRC", f, n, "drop_icrc");
	n = frame(f, h[0].ip, SW_IP, SW_QPN + 1, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("unknown QP", f, n, "drop_unknown_qp");
	n = frame(f, 0x0a0101aa, SW_IP, SW_QPN, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("unknown peer", f, n, "drop_unknown_qp");
	n = from_host(f, 0, RC_SEND_ONLY, 0, 4, BASE_PSN, 0);
	wrong += inject("SEND_ONLY: no place in the protocol", f, n, "drop_bad_op");
	n = from_host(f, 0, RC_SEND_MIDDLE, 0, SW_MTU, BASE_PSN, 0);
	wrong += inject("MIDDLE outside a message", f, n, "drop_bad_op");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, SW_MTU + 4, BASE_PSN, 0);
	wrong += inject("payload over the MTU", f, n, "drop_oversize");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, imm(INC_REDUCE, INC_OP_SUM, INC_INT32, 9), 4, BASE_PSN, 0);
	wrong += inject("immediate of no collective (Reduce to rank 9)", f, n, "drop_bad_imm");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 2, 0);
	wrong += inject("ahead of the expected PSN (NAKed)", f, n, "drop_seq");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 3, 0);
	wrong += inject("ahead again (no second NAK)", f, n, "drop_seq");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("taken", f, n, NULL);
	wrong += inject("taken already (re-ACKed)", f, n, "duplicates");
	n = from_host(f, 1, RC_SEND_ONLY_WITH_IMM, max, 4, BASE_PSN, 0);
	wrong += inject("another collective than its slot's", f, n, "drop_mismatch");
	n = from_host(f, 1, RC_SEND_ONLY_WITH_IMM, sum, 8, BASE_PSN, 0);
	wrong += inject("another length than its slot's", f, n, "drop_mismatch");
	/* ACKs to a switch that has sent host 0 nothing: una = BASE_PSN */
	n = from_host(f, 0, RC_ACK, 0, 0, BASE_PSN + 5, ack);
	wrong += inject("ACK of a PSN never sent", f, n, "drop_bad_ack");
	n = from_host(f, 0, RC_ACK, 0, 0, BASE_PSN - 1, ack);
	wrong += inject("ACK of what was acknowledged (late)", f, n, "acks_stale");
	n = from_host(f, 0, RC_ACK, 0, 0, BASE_PSN - 1, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ);
	wrong += inject("NAK of what was acknowledged (late)", f, n, "acks_stale");
	n = from_host(f, 0, RC_ACK, 0, 0, BASE_PSN - 1, 0x40);
	wrong += inject("AETH type that does not exist (old PSN)", f, n, "drop_bad_ack");
	/* host 0 fills the other 7 slots; its next packet meets its first slot, still busy */
	for (uint32_t k = 1; k < 8; k++) {
		n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + k, 0);
		wrong += inject("taken", f, n, NULL);
	}
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 8, 0);
	wrong += inject("its slot busy (RNR NAK)", f, n, "rnr_naks_tx");
	n = from_host(f, 0, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 9, 0);
	wrong += inject("pipelined behind the RNR NAK", f, n, "drop_seq");
	/* the switch child 3 */
	n = from_host(f, 3, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 1, 0);
	wrong += inject("switch link: past a gap (held)", f, n, "ooo_held");
	wrong += inject("switch link: held already", f, n, "duplicates");
	n = from_host(f, 3, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN - 1, 0);
	wrong += inject("switch link: taken already, frames held", f, n, "duplicates");
	n = from_host(f, 3, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN + 300, 0);
	wrong += inject("switch link: past the window", f, n, "drop_seq");
	n = from_host(f, 3, RC_SEND_ONLY, 0, 4, BASE_PSN + 2, 0);
	wrong += inject("switch link: SEND_ONLY past a gap (held)", f, n, "ooo_held");
	n = from_host(f, 3, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("switch link: gap filled, the held SEND_ONLY refused", f, n, "drop_bad_op");
	sw_engine_free(eng);

	/* a leaf: hosts 0 and 1 below, the root above */
	struct sw_cfg cfg = { .nchildren = 2, .nslots = 8, .retransmit_ns = 1000000, .rnr_timer = 1, .has_parent = 1,
			      .total_ranks = 4 };
	for (int i = 0; i < 2; i++) {
		cfg.child[i] = (struct sw_conn_cfg){ .port = i, .local_ip = SW_IP, .peer_ip = h[i].ip,
						     .local_qpn = SW_QPN, .peer_qpn = h[i].qpn, .rq_psn = BASE_PSN,
						     .sq_psn = BASE_PSN, .udp_dst = ROCE_PORT_HOST,
						     .first_rank = (uint16_t)i, .nranks = 1 };
		memcpy(cfg.child[i].local_mac, mac_sw, 6);
		memcpy(cfg.child[i].peer_mac, mac_h, 6);
	}
	cfg.parent = (struct sw_conn_cfg){ .port = 2, .local_ip = UP_IP, .peer_ip = ROOT_IP, .local_qpn = UP_QPN,
					   .peer_qpn = 0x300, .rq_psn = BASE_PSN, .sq_psn = BASE_PSN,
					   .udp_dst = ROCE_PORT_SWITCH };
	assert_non_null(eng = sw_engine_new(&cfg, tx, NULL));
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("parent: a result no slot awaits", f, n, "drop_mismatch");
	for (int i = 0; i < 2; i++) { /* slot BASE_PSN goes up, its result awaited */
		n = from_host(f, i, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
		wrong += inject("taken", f, n, NULL);
	}
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_SEND_ONLY, 0, 4, BASE_PSN, 0);
	wrong += inject("parent: SEND_ONLY, no place in the protocol", f, n, "drop_bad_op");
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_SEND_ONLY_WITH_IMM, sum, SW_MTU + 4, BASE_PSN, 0);
	wrong += inject("parent: payload over the MTU", f, n, "drop_oversize");
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_SEND_ONLY_WITH_IMM, max, 4, BASE_PSN, 0);
	wrong += inject("parent: the result of another collective", f, n, "drop_mismatch");
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_ACK, 0, 0, BASE_PSN, 0x40);
	wrong += inject("parent: AETH type that does not exist (PSN sent)", f, n, "drop_bad_ack");
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_ACK, 0, 0, BASE_PSN, ack);
	wrong += inject("parent: ACK of what was sent up", f, n, NULL);
	n = frame(f, ROOT_IP, UP_IP, UP_QPN, RC_SEND_ONLY_WITH_IMM, sum, 4, BASE_PSN, 0);
	wrong += inject("parent: the result", f, n, NULL);
	assert_int_equal(sw_engine_counters(eng)->results_from_parent, 1);
	assert_int_equal(wrong, 0);
	sw_engine_free(eng);
}

/*
 * Fault injection (sw_engine_inject()): each fault does what engine.h says
 * and nothing else, and with no fault armed, or after SW_FAULT_NONE, the
 * same sequences come out right with nothing counted.
 */

static void test_fault_names(void **state)
{
	static const struct { const char *name; enum sw_fault f; } known[] = {
		{ "off", SW_FAULT_NONE }, { "corrupt", SW_FAULT_CORRUPT }, { "drop", SW_FAULT_DROP },
		{ "early-barrier", SW_FAULT_EARLY_BARRIER },
	};
	static const char *const unknown[] = { "", "none", "on", "Corrupt", "CORRUPT", "corrupt ", " drop", "dro",
					       "drops", "early_barrier", "earlybarrier", "early-barriers", "early",
					       "off\n", "?" };
	enum sw_fault f;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		assert_string_equal(sw_fault_name(known[i].f), known[i].name);
		f = known[i].f == SW_FAULT_NONE ? SW_FAULT_DROP : SW_FAULT_NONE;
		assert_int_equal(sw_fault_parse(known[i].name, &f), 0);
		assert_int_equal(f, known[i].f);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		assert_int_equal(sw_fault_parse(unknown[i], &f), -1);
	/* a value outside the enum has no name that would parse back */
	assert_int_equal(sw_fault_parse(sw_fault_name((enum sw_fault)4), &f), -1);
	assert_int_equal(sw_fault_parse(sw_fault_name((enum sw_fault)-1), &f), -1);
}

/* How a fault case arms its fault: not at all, armed then disarmed (SW_FAULT_NONE), or armed. */
enum arming { ARM_NOTHING, ARM_THEN_DISARM, ARM };

/* arm() - arm @f on eng as @how says; every call must be accepted. */
static void arm(enum sw_fault f, enum arming how)
{
	if (how == ARM_NOTHING)
		return;
	assert_int_equal(sw_engine_inject(eng, f), 0);
	if (how == ARM_THEN_DISARM)
		assert_int_equal(sw_engine_inject(eng, SW_FAULT_NONE), 0);
}

/* faults() - eng's faults_injected counter. */
static uint64_t faults(void)
{
	return sw_engine_counters(eng)->faults_injected;
}

/* Rank i's float32 element j of packet k: multiples of 1/4, so that every sum is exact in any order. */
static float fval(int i, int k, int j)
{
	return (float)((i + 1) * (j + 3) * (i % 2 ? -1 : 1) + 5 * k) * 0.25f;
}

/* elem_bits() - rank @i's element @j of packet @k (val() or fval()), as the bits of a @t in host order. */
static uint32_t elem_bits(enum inc_dtype t, int i, int k, int j)
{
	float f = fval(i, k, j);
	uint32_t b;

	if (t != INC_FLOAT32)
		return (uint32_t)val(i, k, j);
	memcpy(&b, &f, 4);
	return b;
}

/* sum_bits() - the SUM of element @j of packet @k over the ranks in @mask, as the bits of a @t in host order. */
static uint32_t sum_bits(enum inc_dtype t, unsigned mask, int k, int j)
{
	int64_t si = 0;
	float sf = 0;
	uint32_t b;

	for (int r = 0; r < HOSTS; r++)
		if (mask >> r & 1) {
			si += val(r, k, j);
			sf += fval(r, k, j);
		}
	if (t != INC_FLOAT32)
		return (uint32_t)si;
	memcpy(&b, &sf, 4);
	return b;
}

/*
 * allreduce_packet() - each of the @n hosts sends its packet @k of an
 * AllReduce SUM of @nelem elements of @t (elem_bits()), host @first first
 * and the others in rank order after it (wrapping); then everything the
 * switch sent is delivered (pump()).
 */
static void allreduce_packet(int n, enum inc_dtype t, int k, int nelem, int first)
{
	uint32_t buf[SW_MTU / 4];

	for (int o = 0; o < n; o++) {
		int i = (first + o) % n;

		for (int j = 0; j < nelem; j++)
			buf[j] = htonl(elem_bits(t, i, k, j));
		host_send(i, imm(INC_ALLREDUCE, INC_OP_SUM, t, INC_RANK_ALL), buf, (size_t)nelem * 4, -1, 0);
	}
	pump(0);
}

static int mark[HOSTS]; /* each host's result count at the last mark_results() */

/* mark_results() - the next result of each host is result 0 for expect_sum(). */
static void mark_results(void)
{
	for (int i = 0; i < HOSTS; i++)
		mark[i] = h[i].nresults;
}

/*
 * expect_sum() - result @r since mark_results() of each of the @n hosts is
 * packet @k of an AllReduce SUM of @nelem elements of @t over the ranks in
 * @mask, bit for bit, except element @flip (-1: none), which differs from
 * it in bit 23 alone.
 */
static void expect_sum(int n, int r, enum inc_dtype t, int k, int nelem, unsigned mask, int flip)
{
	for (int i = 0; i < n; i++) {
		int x = mark[i] + r;

		assert_true(h[i].nresults > x);
		assert_int_equal(h[i].result_imm[x], imm(INC_ALLREDUCE, INC_OP_SUM, t, INC_RANK_ALL));
		assert_int_equal(h[i].result_len[x], nelem * 4);
		for (int j = 0; j < nelem; j++) {
			uint32_t got;

			memcpy(&got, h[i].result[x] + 4 * j, 4);
			assert_int_equal(ntohl(got) ^ sum_bits(t, mask, k, j), j == flip ? 0x00800000u : 0);
		}
	}
}

/* expect_all_acked() - each of the @n hosts has had all its @sends SENDs acknowledged, none NAKed. */
static void expect_all_acked(int n, int sends)
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(h[i].nnaks + h[i].nrnr, 0);
		assert_int_equal(h[i].last_ack_msn, sends);
		assert_int_equal(h[i].last_ack_psn, (BASE_PSN + (uint32_t)sends - 1) & ROCE_PSN_MASK);
	}
}

/* order_of() - barrier_order without the ranks >= @n (reversed if @rev): an entry order for @n hosts. */
static const int *order_of(int n, int rev)
{
	static int o[HOSTS];
	int m = 0;

	for (int x = 0; x < HOSTS; x++) {
		int i = barrier_order[rev ? HOSTS - 1 - x : x];

		if (i < n)
			o[m++] = i;
	}
	return o;
}

/*
 * barrier_round() - the @n hosts enter a barrier one by one in @order (a
 * permutation of 0..n-1), each entry delivered at once (enter_barrier()).
 * As usual (@early 0) nothing is sent before the last entry, which brings
 * every host its empty result; with @early (EARLY_BARRIER armed) the first
 * entry does, and the others bring nothing but their ACKs. Either way the
 * slot stays busy until the last entry and is free after it. The fault is
 * disarmed (SW_FAULT_NONE) after entry @disarm_after (-1: never), which
 * must not change what the rest of this barrier does.
 */
static void barrier_round(int n, const int *order, int early, int disarm_after)
{
	int base[HOSTS];

	for (int i = 0; i < n; i++)
		base[i] = h[i].nresults;
	for (int o = 0; o < n; o++) {
		int released = early || o == n - 1;

		assert_int_equal(enter_barrier(order[o]), (early ? o == 0 : o == n - 1) ? n : 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(h[i].nresults, base[i] + released);
		assert_int_equal(sw_engine_busy_slots(eng), o < n - 1);
		if (o == disarm_after)
			assert_int_equal(sw_engine_inject(eng, SW_FAULT_NONE), 0);
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(h[i].result_len[base[i]], 0);
		assert_int_equal(h[i].result_imm[base[i]], imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL));
	}
}

static void test_fault_inject_refusals(void **state)
{
	/* one child: DROP is refused (nobody else's data would make the result) and arms nothing */
	setup_engine_children(1, 0, 4, 1000000);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_DROP), -1);
	mark_results();
	allreduce_packet(1, INC_INT32, 0, 5, 0);
	expect_sum(1, 0, INC_INT32, 0, 5, 1, -1);
	assert_int_equal(faults(), 0);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_CORRUPT), 0);       /* the others can show */
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_EARLY_BARRIER), 0);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_NONE), 0);
	sw_engine_free(eng);

	/* a switch among the children (child 1, UDP 4792): EARLY_BARRIER is refused and arms
	 * nothing (host 0 entering a barrier is only ACKed); DROP and CORRUPT can show */
	setup_engine_children(3, 1u << 1, 4, 1000000);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_EARLY_BARRIER), -1);
	assert_int_equal(enter_barrier(0), 0);
	assert_int_equal(sw_engine_busy_slots(eng), 1);
	assert_int_equal(faults(), 0);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_DROP), 0);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_CORRUPT), 0);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_NONE), 0);
	sw_engine_free(eng);

	/* the same switch as the only child: both refused */
	setup_engine_children(1, 1u << 0, 4, 1000000);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_DROP), -1);
	assert_int_equal(sw_engine_inject(eng, SW_FAULT_EARLY_BARRIER), -1);
	sw_engine_free(eng);
}

/*
 * corrupt_case() - @n hosts enter a barrier, then run an AllReduce SUM of
 * @t in four packets (@nelem0 elements in the first, each in its own
 * arrival order). With CORRUPT armed (@how ARM) the barrier (no data) is
 * left alone, the first data result of every host is the sum with bit 23 of
 * its middle element flipped (in a frame pump() accepted: valid ICRC), the
 * later ones are right, and one fault is counted; otherwise every result is
 * right and none is counted. Either way each SEND is ACKed, each packet
 * aggregated n-1 times, and no slot stays busy.
 */
static void corrupt_case(int n, enum inc_dtype t, int nelem0, enum arming how)
{
	const int nelem[4] = { nelem0, 256, 3, 1 };

	setup_engine_children(n, 0, 4, 1000000);
	arm(SW_FAULT_CORRUPT, how);
	barrier_round(n, order_of(n, 0), 0, -1);
	assert_int_equal(faults(), 0);
	mark_results();
	for (int k = 0; k < 4; k++)
		allreduce_packet(n, t, k, nelem[k], (k + 1) % n);
	for (int k = 0; k < 4; k++)
		expect_sum(n, k, t, k, nelem[k], (1u << n) - 1, how == ARM && k == 0 ? nelem0 / 2 : -1);
	for (int i = 0; i < n; i++)
		assert_int_equal(h[i].nresults, mark[i] + 4);
	assert_int_equal(faults(), how == ARM);
	assert_int_equal(sw_engine_counters(eng)->aggregations, 4 * (n - 1));
	expect_all_acked(n, 5);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

static void test_fault_corrupt_flips_bit_23_of_the_middle_element_once(void **state)
{
	for (enum arming how = ARM_NOTHING; how <= ARM; how++) {
		corrupt_case(2, INC_INT32, 5, how);   /* middle: element 2 of 5 */
		corrupt_case(3, INC_INT32, 256, how); /* element 128 of a full MTU */
		corrupt_case(4, INC_INT32, 8, how);   /* element 4 of 8 */
		corrupt_case(4, INC_INT32, 1, how);   /* the only one */
		corrupt_case(4, INC_FLOAT32, 6, how); /* element 3: its exponent's lowest bit */
	}
}

/*
 * drop_case() - @n hosts run a Broadcast from the last rank and a barrier
 * (no reduction: DROP must stay armed), then an AllReduce int32 SUM in four
 * packets; in the first the last rank's packet arrives first (@last_first)
 * or last. With DROP armed (@how ARM) the broadcast and barrier are right,
 * the first AllReduce result is the sum over all ranks but the last, the
 * later ones are right, and one fault is counted; otherwise all are right
 * and none is counted. Either way each SEND is ACKed and no slot stays busy.
 */
static void drop_case(int n, int last_first, enum arming how)
{
	static const char msg[] = "the last rank's data";
	const int nelem[4] = { 7, 256, 2, 1 };

	setup_engine_children(n, 0, 4, 1000000);
	arm(SW_FAULT_DROP, how);
	for (int i = 0; i < n; i++)
		host_send(i, imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, (uint16_t)(n - 1)), i == n - 1 ? msg : NULL,
			  i == n - 1 ? 20 : 0, -1, 0);
	pump(0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(h[i].nresults, i < n - 1);
		if (i < n - 1) {
			assert_int_equal(h[i].result_len[0], 20);
			assert_memory_equal(h[i].result[0], msg, 20);
		}
	}
	barrier_round(n, order_of(n, 1), 0, -1);
	assert_int_equal(faults(), 0);
	mark_results();
	for (int k = 0; k < 4; k++)
		allreduce_packet(n, INC_INT32, k, nelem[k], k == 0 ? (last_first ? n - 1 : 0) : k % n);
	for (int k = 0; k < 4; k++)
		expect_sum(n, k, INC_INT32, k, nelem[k], how == ARM && k == 0 ? (1u << (n - 1)) - 1 : (1u << n) - 1,
			   -1);
	for (int i = 0; i < n; i++)
		assert_int_equal(h[i].nresults, mark[i] + 4);
	assert_int_equal(faults(), how == ARM);
	expect_all_acked(n, 6);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

static void test_fault_drop_leaves_the_last_child_out_once(void **state)
{
	for (enum arming how = ARM_NOTHING; how <= ARM; how++)
		for (int n = 2; n <= HOSTS; n++) {
			drop_case(n, 0, how);
			drop_case(n, 1, how);
		}
}

/*
 * early_barrier_case() - @n hosts (two slots) enter two barriers, run an
 * AllReduce int32 SUM in three packets (the first reuses the first
 * barrier's slot), enter a third barrier, disarming the fault after the
 * first entry, and a fourth. With EARLY_BARRIER armed (@how ARM) the first
 * three are released at their first entry (barrier_round()), each counts
 * one fault, the AllReduce is right, and the fourth is as usual; otherwise
 * every barrier is as usual and nothing is counted.
 */
static void early_barrier_case(int n, enum arming how)
{
	const int early = how == ARM;

	setup_engine_children(n, 0, 2, 1000000);
	arm(SW_FAULT_EARLY_BARRIER, how);
	barrier_round(n, order_of(n, 0), early, -1);
	assert_int_equal(faults(), early);
	barrier_round(n, order_of(n, 1), early, -1); /* it stays armed */
	assert_int_equal(faults(), 2 * early);
	mark_results();
	for (int k = 0; k < 3; k++)
		allreduce_packet(n, INC_INT32, k, 9, k % n);
	for (int k = 0; k < 3; k++)
		expect_sum(n, k, INC_INT32, k, 9, (1u << n) - 1, -1);
	assert_int_equal(faults(), 2 * early);
	barrier_round(n, order_of(n, 0), early, 0); /* released already: the rest as before */
	assert_int_equal(faults(), 3 * early);
	barrier_round(n, order_of(n, 1), 0, -1);
	assert_int_equal(faults(), 3 * early);
	expect_all_acked(n, 7);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

static void test_fault_early_barrier_releases_at_the_first_entry(void **state)
{
	for (enum arming how = ARM_NOTHING; how <= ARM; how++)
		for (int n = 2; n <= HOSTS; n++)
			early_barrier_case(n, how);
}

/*
 * data_packet() - host @i sends its packet @k of a SUM of @nelem elements
 * of @t (elem_bits()), primitive @prim to rank @dest (INC_RANK_ALL for an
 * AllReduce), at its next PSN. Nothing is delivered.
 */
static void data_packet(int i, enum inc_prim prim, uint16_t dest, enum inc_dtype t, int k, int nelem)
{
	uint32_t buf[SW_MTU / 4];

	for (int j = 0; j < nelem; j++)
		buf[j] = htonl(elem_bits(t, i, k, j));
	host_send(i, imm(prim, INC_OP_SUM, t, dest), buf, (size_t)nelem * 4, -1, 0);
}

/*
 * expect_result() - host @i's result @x (0: the first it took) has
 * immediate @im and is packet @k of a SUM of @nelem elements of @t over
 * the ranks in @mask, bit for bit.
 */
static void expect_result(int i, int x, uint32_t im, enum inc_dtype t, int k, int nelem, unsigned mask)
{
	assert_true(h[i].nresults > x);
	assert_int_equal(h[i].result_imm[x], im);
	assert_int_equal(h[i].result_len[x], nelem * 4);
	for (int j = 0; j < nelem; j++) {
		uint32_t got;

		memcpy(&got, h[i].result[x] + 4 * j, 4);
		assert_int_equal(ntohl(got), sum_bits(t, mask, k, j));
	}
}

/*
 * early_order_case() - 3 hosts (4 slots), EARLY_BARRIER armed, run @skip
 * AllReduce packets first (with 16 - @np the barrier gets PSN 0, after the
 * wrap). Then ranks 1 and 2 send their @np packets (1..3) of a SUM of @t,
 * a Reduce to rank 0 or an AllReduce (@prim); rank 0 sends none yet, so
 * the data slots stay open. Rank 1 enters a barrier: while a slot before
 * it is open the barrier must not be released (its result would overtake
 * the data results on rank 0's connection, and libinccl takes results in
 * order), so only the ACK comes back. Rank 0's packets then complete the
 * data slots one by one, each result going out at once, and the last one
 * releases the barrier right behind it: every host that wants the data
 * gets all of it and then the empty barrier result, in PSN order, nothing
 * resent, before ranks 0 and 2 entered. Their entries bring only ACKs. One
 * fault is counted, every SEND is ACKed, and no slot stays busy.
 */
static void early_order_case(enum inc_prim prim, enum inc_dtype t, int np, int skip)
{
	const uint16_t dest = prim == INC_REDUCE ? 0 : INC_RANK_ALL;
	const uint32_t bar = imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL);
	const int nelem = 11; /* packet k has nelem + k elements */
	const int n = 3;
	int sends[HOSTS];

	setup_engine_children(n, 0, 4, 1000000);
	arm(SW_FAULT_EARLY_BARRIER, ARM);
	for (int k = 0; k < skip; k++)
		allreduce_packet(n, INC_INT32, k, 5, k % n);
	mark_results();
	for (int i = 0; i < n; i++)
		sends[i] = h[i].nsends;
	for (int k = 0; k < np; k++)
		for (int i = n - 1; i >= 1; i--)
			data_packet(i, prim, dest, t, k, nelem + k);
	pump(0);
	assert_int_equal(enter_barrier(1), 0); /* the data slots before it are open */
	for (int i = 0; i < n; i++)
		assert_int_equal(h[i].nresults, mark[i]);
	assert_int_equal(sw_engine_busy_slots(eng), np + 1);
	assert_int_equal(faults(), 0);
	for (int k = 0; k < np; k++) {
		const int released = k == np - 1; /* the slot just before the barrier completed */

		data_packet(0, prim, dest, t, k, nelem + k);
		pump(0);
		for (int i = 0; i < n; i++)
			assert_int_equal(h[i].nresults - mark[i], (prim == INC_ALLREDUCE || i == 0 ? k + 1 : 0) + released);
		assert_int_equal(faults(), released);
		assert_int_equal(sw_engine_busy_slots(eng), np - k); /* the open data slots, and the barrier's */
	}
	for (int i = 0; i < n; i++) {
		const int nd = prim == INC_ALLREDUCE || i == 0 ? np : 0;

		/* pump() takes a result only at the PSN it expects: result x is PSN BASE_PSN + x */
		assert_int_equal(h[i].nsends - sends[i], nd + 1);
		assert_int_equal(h[i].nresults - mark[i], nd + 1);
		for (int k = 0; k < nd; k++)
			expect_result(i, mark[i] + k, imm(prim, INC_OP_SUM, t, dest), t, k, nelem + k, (1u << n) - 1);
		assert_int_equal(h[i].result_imm[mark[i] + nd], bar);
		assert_int_equal(h[i].result_len[mark[i] + nd], 0);
	}
	assert_int_equal(enter_barrier(0), 0); /* released already: only ACKs */
	assert_int_equal(sw_engine_busy_slots(eng), 1);
	assert_int_equal(enter_barrier(2), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(h[i].nresults - mark[i], (prim == INC_ALLREDUCE || i == 0 ? np : 0) + 1);
	assert_int_equal(faults(), 1);
	assert_int_equal(sw_engine_counters(eng)->aggregations, (skip + np) * (n - 1));
	expect_all_acked(n, skip + np + 1);
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/* EARLY_BARRIER with a Reduce to rank 0 open before the barrier (the lab's failure: rank 0 got the
 * barrier's result before its Reduce result). */
static void test_fault_early_barrier_keeps_results_in_order(void **state)
{
	for (int np = 1; np <= 3; np++) {
		early_order_case(INC_REDUCE, INC_INT32, np, 0);
		early_order_case(INC_REDUCE, INC_INT32, np, 16 - np);
	}
}

/* The same with an AllReduce open before the barrier: every host's data results come first. */
static void test_fault_early_barrier_waits_for_an_open_allreduce(void **state)
{
	for (int np = 1; np <= 3; np++) {
		early_order_case(INC_ALLREDUCE, INC_INT32, np, 0);
		early_order_case(INC_ALLREDUCE, INC_FLOAT32, np, 16 - np);
	}
}


/*
 * Collectives in messages: packet 0 a SEND_ONLY_WITH_IMM, the rest in
 * messages of @per packets (SEND_FIRST, SEND_MIDDLE*, SEND_LAST_WITH_IMM)
 * as libinccl sends them. msg_op() is packet @k's opcode of @npk.
 */
static uint8_t msg_op(int k, int npk, int per)
{
	int pos, last;

	if (k == 0)
		return RC_SEND_ONLY_WITH_IMM;
	pos = (k - 1) % per;
	last = k == npk - 1 || pos == per - 1;
	if (pos == 0)
		return last ? RC_SEND_ONLY_WITH_IMM : RC_SEND_FIRST;
	return last ? RC_SEND_LAST_WITH_IMM : RC_SEND_MIDDLE;
}

/* Host @i's packet @k of an int32 AllReduce of @npk packets (the last one @tail elements) in messages of @per. */
static void msg_allreduce_send(int i, int k, int npk, int per, size_t tail, uint64_t now)
{
	uint32_t buf[256];
	size_t n = k == npk - 1 ? tail : 256;

	for (size_t j = 0; j < n; j++)
		buf[j] = htonl((uint32_t)val(i, k, (int)j));
	host_send_op(i, msg_op(k, npk, per), imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf, n * 4, -1,
		     now);
}

/* Host @i holds every result of that AllReduce: sums right, opcodes as sent, immediates only where they go. */
static void msg_allreduce_expect(int i, int npk, int per, size_t tail)
{
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);

	assert_int_equal(h[i].nresults, npk);
	assert_int_equal(h[i].in_message, 0);
	for (int k = 0; k < npk; k++) {
		size_t n = k == npk - 1 ? tail : 256;
		uint8_t op = msg_op(k, npk, per);
		assert_int_equal(h[i].result_op[k], op);
		assert_int_equal(h[i].result_imm[k], op == RC_SEND_FIRST || op == RC_SEND_MIDDLE ? 0 : im);
		assert_int_equal(h[i].result_len[k], n * 4);
		for (size_t j = 0; j < n; j++) {
			int64_t want = 0;
			uint32_t got;
			for (int r = 0; r < HOSTS; r++)
				want += val(r, k, (int)j);
			memcpy(&got, h[i].result[k] + 4 * j, 4);
			assert_int_equal((int32_t)ntohl(got), (int32_t)(uint32_t)want);
		}
	}
}

static void test_messages_allreduce(void **state)
{
	static const int order[HOSTS] = { 3, 1, 0, 2 };
	const int npk = 12, per = 4; /* ONLY, then FIRST MIDDLE MIDDLE LAST twice, then FIRST MIDDLE LAST */

	setup_engine(64);
	for (int k = 0; k < npk; k++) {
		for (int o = 0; o < HOSTS; o++)
			msg_allreduce_send(order[(o + k) % HOSTS], k, npk, per, 5, 0);
		pump(0);
	}
	for (int i = 0; i < HOSTS; i++) {
		msg_allreduce_expect(i, npk, per, 5);
		assert_int_equal(h[i].last_ack_msn, 4); /* MSN counts messages: ONLY + 3 */
		assert_int_equal(h[i].msn, 4);
	}
	assert_int_equal(sw_engine_busy_slots(eng), 0);
	sw_engine_free(eng);
}

/* A result lost inside a message: the host's NAK goes back to it, resent without immediate as it was. */
static void test_messages_lost_middle_resent(void **state)
{
	const int npk = 9, per = 4;

	setup_engine(64);
	for (int k = 0; k < 3; k++) /* ONLY, FIRST, MIDDLE */
		for (int i = 0; i < HOSTS; i++)
			msg_allreduce_send(i, k, npk, per, 256, 0);
	pump(0);
	drop_next_to = 2; /* host 1 loses the result of packet 3 (a MIDDLE) */
	for (int k = 3; k < npk; k++)
		for (int i = 0; i < HOSTS; i++)
			msg_allreduce_send(i, k, npk, per, 256, 0);
	pump(0); /* host 1 takes nothing past the gap */
	assert_int_equal(h[1].nresults, 3);
	host_aeth(1, h[1].epsn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 10);
	pump(10);
	for (int i = 0; i < HOSTS; i++)
		msg_allreduce_expect(i, npk, per, 256);
	assert_true(sw_engine_counters(eng)->retransmits > 0);
	sw_engine_free(eng);
}

/* A host's packet lost inside its message: the NAKed MIDDLE comes again and is taken in its message. */
static void test_messages_host_goes_back_inside_a_message(void **state)
{
	const int npk = 6, per = 5;

	setup_engine(64);
	for (int i = 0; i < HOSTS; i++)
		for (int k = 0; k < npk; k++) {
			if (i == 2 && k == 3) { /* lost on the way: PSN taken, never arrives */
				h[2].spsn = (h[2].spsn + 1) & ROCE_PSN_MASK;
				continue;
			}
			msg_allreduce_send(i, k, npk, per, 256, 0);
		}
	pump(0);
	assert_int_equal(h[2].nnaks, 1);
	assert_int_equal(h[0].nresults, 3);
	h[2].spsn = (BASE_PSN + 3) & ROCE_PSN_MASK; /* go-back-N from the NAKed PSN, as rxe resumes its WQE */
	for (int k = 3; k < npk; k++)
		msg_allreduce_send(2, k, npk, per, 256, 1);
	pump(1);
	for (int i = 0; i < HOSTS; i++)
		msg_allreduce_expect(i, npk, per, 256);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_op, 0);
	sw_engine_free(eng);
}

/* Broadcast: the root's data in messages, the others' empty SEND_ONLY_WITH_IMMs; results as the root sent them. */
static void test_messages_broadcast(void **state)
{
	const int root = 2, npk = 5, per = 4;
	uint32_t im = imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, root), buf[256];

	setup_engine(64);
	for (int k = 0; k < npk; k++) {
		size_t n = k == npk - 1 ? 17 : 256;
		for (size_t j = 0; j < n; j++)
			buf[j] = htonl((uint32_t)val(root, k, (int)j));
		for (int i = 0; i < HOSTS; i++)
			if (i == root)
				host_send_op(i, msg_op(k, npk, per), im, buf, n * 4, -1, 0);
			else
				host_send(i, im, NULL, 0, -1, 0);
		pump(0);
	}
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, i == root ? 0 : npk);
		for (int k = 0; i != root && k < npk; k++) {
			size_t n = k == npk - 1 ? 17 : 256;
			assert_int_equal(h[i].result_op[k], msg_op(k, npk, per));
			assert_int_equal(h[i].result_len[k], n * 4);
			for (size_t j = 0; j < n; j++) {
				uint32_t got;
				memcpy(&got, h[i].result[k] + 4 * j, 4);
				assert_int_equal((int32_t)ntohl(got), val(root, k, (int)j));
			}
		}
	}
	sw_engine_free(eng);
}

/*
 * What breaks the message rules is NAKed (invalid request) and counted, never
 * taken: a FIRST before any immediate, a MIDDLE outside a message, a short
 * FIRST, a LAST whose immediate is not its message's, an ONLY inside a
 * message, an empty FIRST in a Broadcast; and data in another place of a
 * message than the other children's.
 */
static void test_messages_refused(void **state)
{
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);
	uint32_t other = imm(INC_ALLREDUCE, INC_OP_MAX, INC_INT32, INC_RANK_ALL), buf[256] = { 0 };
	struct { uint8_t op1; size_t len1; uint8_t op2; uint32_t imm2; size_t len2; int before; } c[] = {
		{ RC_SEND_FIRST, SW_MTU, 0, 0, 0, 0 },                                /* no immediate yet */
		{ RC_SEND_MIDDLE, SW_MTU, 0, 0, 0, 1 },                               /* outside a message */
		{ RC_SEND_FIRST, 512, 0, 0, 0, 1 },                                   /* short FIRST */
		{ RC_SEND_FIRST, SW_MTU, RC_SEND_LAST_WITH_IMM, 1, 8, 1 },             /* LAST of another immediate */
		{ RC_SEND_FIRST, SW_MTU, RC_SEND_ONLY_WITH_IMM, 0, 8, 1 },             /* ONLY inside a message */
		{ RC_SEND_ONLY, 8, 0, 0, 0, 1 },                                      /* no place in the protocol */
	};

	for (size_t t = 0; t < sizeof(c) / sizeof(c[0]); t++) {
		setup_engine(64);
		if (c[t].before) /* an ONLY_WITH_IMM opens the collective, on every host */
			for (int i = 0; i < HOSTS; i++)
				host_send(i, im, buf, 8, -1, 0);
		pump(0);
		int naks = h[0].nnaks;
		host_send_op(0, c[t].op1, im, buf, c[t].len1, -1, 1);
		if (c[t].op2)
			host_send_op(0, c[t].op2, c[t].imm2 ? other : im, buf, c[t].len2, -1, 1);
		pump(1);
		assert_int_equal(h[0].nnaks, naks + 1);
		assert_int_equal(sw_engine_counters(eng)->drop_bad_op, 1);
		assert_int_equal(h[0].nresults, c[t].before ? 1 : 0);
		sw_engine_free(eng);
	}
	/* an empty FIRST from a Broadcast non-root */
	setup_engine(64);
	host_send(1, imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, 0), NULL, 0, -1, 0);
	host_send_op(1, RC_SEND_FIRST, 0, NULL, 0, -1, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_op, 1);
	sw_engine_free(eng);
	/* children disagree on where a packet is in its message */
	setup_engine(64);
	for (int i = 0; i < HOSTS; i++)
		host_send(i, im, buf, 8, -1, 0);
	host_send_op(0, RC_SEND_FIRST, im, buf, SW_MTU, -1, 1);
	host_send_op(1, RC_SEND_ONLY_WITH_IMM, im, buf, SW_MTU, -1, 1);
	pump(1);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 1);
	assert_int_equal(h[1].nnaks, 1);
	sw_engine_free(eng);
}

/*
 * call() - host @i sends one collective call of @npk packets under @im:
 * packet 0 alone, the rest in messages of @per packets (msg_op()), the last
 * packet with INC_IMM_LAST as libinccl sends it; each packet @len bytes
 * (the last @last_len) of @fill's value, or empty (@len 0: a Broadcast
 * non-root, alone every packet). At time @now.
 */
static void call(int i, uint32_t im, int npk, int per, size_t len, size_t last_len, int32_t fill, uint64_t now)
{
	int32_t buf[256];

	for (int j = 0; j < 256; j++)
		buf[j] = (int32_t)htonl((uint32_t)fill);
	for (int k = 0; k < npk; k++) {
		uint32_t m = k == npk - 1 ? im | INC_IMM_LAST : im;
		if (len)
			host_send_op(i, msg_op(k, npk, per), m, buf, k == npk - 1 ? last_len : len, -1, now);
		else
			host_send(i, m, NULL, 0, -1, now);
	}
}

/*
 * A call whose last packet carries INC_IMM_LAST is taken like any other and
 * its results carry the bit on the last packet only (in messages: the LAST
 * of the last message); after it only a new call's SEND_ONLY_WITH_IMM may
 * come: a FIRST or a LAST that would continue it is refused (drop_bad_op).
 */
static void test_last_packet_marked(void **state)
{
	const int npk = 6, per = 4;
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf[256] = { 0 };

	setup_engine(64);
	for (int i = 0; i < HOSTS; i++)
		call(i, im, npk, per, SW_MTU, 40, i + 1, 0);
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, npk);
		assert_int_equal(h[i].nnaks, 0);
		for (int k = 0; k < npk; k++) {
			int32_t got;
			assert_int_equal(h[i].result_op[k], msg_op(k, npk, per));
			assert_int_equal(h[i].result_len[k], k == npk - 1 ? 40 : SW_MTU);
			assert_int_equal(h[i].result_imm[k], !roce_opcode_has_imm(msg_op(k, npk, per)) ? 0
							     : k == npk - 1 ? (im | INC_IMM_LAST) : im);
			memcpy(&got, h[i].result[k], 4);
			assert_int_equal((int32_t)ntohl((uint32_t)got), 1 + 2 + 3 + 4);
		}
	}
	/* a Broadcast: the root's data in messages, the others' packets empty, the last marked */
	for (int i = 0; i < HOSTS; i++)
		call(i, imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, 1), 3, per, i == 1 ? SW_MTU : 0, 8, 77, 0);
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, i == 1 ? npk : npk + 3);
		if (i != 1)
			assert_int_equal(h[i].result_imm[npk + 2], imm(INC_BROADCAST, INC_OP_SUM, INC_INT32, 1) | INC_IMM_LAST);
	}
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch + sw_engine_counters(eng)->drop_bad_op, 0);
	/* after a last packet: a FIRST, a LAST of the same immediate, are no part of any call */
	host_send_op(0, RC_SEND_FIRST, 0, buf, SW_MTU, -1, 1);
	pump(1);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_op, 1);
	assert_int_equal(h[0].nnaks, 1);
	sw_engine_free(eng);
	setup_engine(64);
	host_send(0, im | INC_IMM_LAST, buf, 8, -1, 0);
	host_send_op(0, RC_SEND_LAST_WITH_IMM, im | INC_IMM_LAST, buf, 8, -1, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_op, 1);
	/* reserved bits 6..0 stay refused */
	host_send(1, im | 0x40u, buf, 8, -1, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_bad_imm, 1);
	sw_engine_free(eng);
}

/*
 * Two ranks whose calls differ in count by whole packets (issue 16): the
 * packet where one call ends (INC_IMM_LAST) and the other goes on mismatches,
 * the later of the two is NAKed and counted (drop_mismatch, mismatch_count),
 * and nothing is combined: not that packet, and not the longer call's
 * remaining packets with the shorter rank's next call, which would give
 * both a wrong result. Every primitive, either rank first, packets alone or
 * in messages.
 */
static void test_count_mismatch_whole_packets(void **state)
{
	static const struct { enum inc_prim prim; enum inc_op op; int root_has_data; } kind[] = {
		{ INC_ALLREDUCE, INC_OP_SUM, 0 }, { INC_REDUCE, INC_OP_MAX, 0 },
		{ INC_BROADCAST, INC_OP_SUM, 1 }, { INC_ROUTE, INC_OP_SUM, 1 },
	};
	static const struct { int npk0, npk1, per, first; } c[] = {
		{ 2, 1, 1, 0 }, { 2, 1, 1, 1 }, { 1, 2, 1, 0 }, { 3, 2, 2, 0 }, { 3, 2, 2, 1 }, { 6, 5, 4, 0 },
	};

	for (size_t t = 0; t < sizeof(kind) / sizeof(kind[0]); t++)
		for (size_t u = 0; u < sizeof(c) / sizeof(c[0]); u++) {
			uint32_t im = imm(kind[t].prim, kind[t].op, INC_INT32,
					  kind[t].prim == INC_ALLREDUCE ? INC_RANK_ALL : kind[t].prim == INC_BROADCAST ? 0 : 1);
			int npk[2] = { c[u].npk0, c[u].npk1 };
			size_t len[2] = { SW_MTU, kind[t].root_has_data ? 0 : SW_MTU };

			setup_engine_children(2, 0, 16, 1000000);
			for (int o = 0; o < 2; o++) {
				int i = o ^ c[u].first;
				call(i, im, npk[i], c[u].per, len[i], len[i] ? 24 : 0, 10 + i, 0);
			}
			/* the shorter rank goes on with its next call: a one-packet AllReduce */
			call(npk[0] < npk[1] ? 0 : 1, imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), 1, 1,
			     SW_MTU, 16, 99, 0);
			pump(0);
			const struct sw_counters *k = sw_engine_counters(eng);
			uint64_t m = (uint64_t)(npk[0] < npk[1] ? npk[0] : npk[1]) - 1; /* where they differ */
			assert_int_equal(k->drop_mismatch, 1);
			assert_int_equal(k->mismatch_count, 1);
			/* the packets before it, alone, complete: combined once each where both carry data */
			assert_int_equal(k->slots_completed, m);
			assert_int_equal(k->aggregations, kind[t].root_has_data ? 0 : m);
			/* the later at the place where they differ is refused (its next packets, out of
			 * sequence behind the refusal, may be NAKed once more), the earlier never */
			assert_true(h[c[u].first ^ 1].nnaks >= 1);
			assert_int_equal(h[c[u].first].nnaks, 0);
			for (int i = 0; i < 2; i++)
				for (int r = 0; r < h[i].nresults; r++) /* no result of a last packet */
					assert_int_equal(h[i].result_imm[r] & INC_IMM_LAST, 0);
			sw_engine_free(eng);
		}
}

/*
 * Calls of the same number of packets whose last packets differ in length
 * (counts that differ by less than a packet): the later is NAKed, counted in
 * drop_mismatch and mismatch_count, nothing is combined; another immediate
 * (a dtype that differs) is a mismatch but not one of count.
 */
static void test_count_mismatch_within_a_packet(void **state)
{
	uint32_t im = imm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL);

	setup_engine_children(2, 0, 16, 1000000);
	call(0, im, 3, 2, SW_MTU, 12, 1, 0);
	call(1, im, 3, 2, SW_MTU, 16, 2, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 1);
	assert_int_equal(sw_engine_counters(eng)->mismatch_count, 1);
	assert_int_equal(h[1].nnaks, 1);
	assert_int_equal(h[0].nresults + h[1].nresults, 4); /* packets 0 and 1, not the last */
	sw_engine_free(eng);
	setup_engine_children(2, 0, 16, 1000000);
	call(0, im, 1, 1, SW_MTU, 16, 1, 0);
	call(1, imm(INC_ALLREDUCE, INC_OP_SUM, INC_UINT32, INC_RANK_ALL), 1, 1, SW_MTU, 16, 2, 0);
	pump(0);
	assert_int_equal(sw_engine_counters(eng)->drop_mismatch, 1);
	assert_int_equal(sw_engine_counters(eng)->mismatch_count, 0);
	sw_engine_free(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acks_coalesced),
		cmocka_unit_test(test_allreduce_int32_sum_any_arrival_order),
		cmocka_unit_test(test_messages_allreduce),
		cmocka_unit_test(test_messages_lost_middle_resent),
		cmocka_unit_test(test_messages_host_goes_back_inside_a_message),
		cmocka_unit_test(test_messages_broadcast),
		cmocka_unit_test(test_messages_refused),
		cmocka_unit_test(test_float_max_and_reduce_to_one_rank),
		cmocka_unit_test(test_allreduce_every_dtype),
		cmocka_unit_test(test_dtype_mismatch_dropped),
		cmocka_unit_test(test_last_packet_marked),
		cmocka_unit_test(test_count_mismatch_whole_packets),
		cmocka_unit_test(test_count_mismatch_within_a_packet),
		cmocka_unit_test(test_broadcast_and_barrier),
		cmocka_unit_test(test_route_delivers_only_to_the_destination),
		cmocka_unit_test(test_root_held_back_by_acks),
		cmocka_unit_test(test_root_held_back_by_acks_mixed_psns),
		cmocka_unit_test(test_mixed_children_share_slots),
		cmocka_unit_test(test_busy_slot_gets_rnr_then_succeeds),
		cmocka_unit_test(test_lost_frames_recovered),
		cmocka_unit_test(test_host_nak_goes_back_from_the_naked_psn),
		cmocka_unit_test(test_timeout_probes_with_backoff),
		cmocka_unit_test(test_tail_probe_answers),
		cmocka_unit_test(test_idle_tail_asks_once),
		cmocka_unit_test(test_lost_nak_after_tail_probe),
		cmocka_unit_test(test_host_rnr_nak_retries_after_the_delay),
		cmocka_unit_test(test_bad_input_is_counted_not_crashing),
		cmocka_unit_test(test_every_drop_counted_once),
		cmocka_unit_test(test_fault_names),
		cmocka_unit_test(test_fault_inject_refusals),
		cmocka_unit_test(test_fault_corrupt_flips_bit_23_of_the_middle_element_once),
		cmocka_unit_test(test_fault_drop_leaves_the_last_child_out_once),
		cmocka_unit_test(test_fault_early_barrier_releases_at_the_first_entry),
		cmocka_unit_test(test_fault_early_barrier_keeps_results_in_order),
		cmocka_unit_test(test_fault_early_barrier_waits_for_an_open_allreduce),
		cmocka_unit_test(test_memory_bounded),
	};
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
