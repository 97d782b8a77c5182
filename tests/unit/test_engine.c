/*
 * test_engine.c — the switch engine offline (switch/engine.c), cmocka.
 *
 * Simulated hosts build real RoCE frames (roce_build_frame), the engine's
 * output frames are parsed and ICRC-checked like a NIC would, and every result
 * is compared with an expectation computed here, independently, from the
 * hosts' inputs. Covers AllReduce/Reduce/Broadcast/Barrier, slot reuse with
 * RNR back-pressure, lost frames in both directions, the switch as an RC
 * requester towards hosts (go-back-N from a NAKed PSN, stale NAKs, timeout
 * probes with backoff, RNR retries), and bad input.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine.h"
#include "roce.h"

#define HOSTS 4
#define MAXQ 4096
#define SW_IP 0x0a010101u   /* 10.1.1.1 */
#define SW_QPN 0x100
#define BASE_PSN 0xfffff0u  /* PSNs wrap during the tests */

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
	uint32_t last_ack_psn, last_ack_msn;
	uint32_t result_imm[64];
	uint16_t result_len[64];
	uint8_t result[64][SW_MTU];
};
static struct host h[HOSTS];
static struct sw_engine *eng;
static uint8_t mac_sw[6] = { 2, 0, 0, 0, 0, 0x10 }, mac_h[6] = { 2, 0, 0, 0, 0, 0x20 };

static void setup_engine_rto(uint32_t nslots, uint64_t retransmit_ns)
{
	struct sw_cfg cfg = { .nchildren = HOSTS, .nslots = nslots, .retransmit_ns = retransmit_ns, .rnr_timer = 1 };

	qn = 0;
	drop_next_to = 0;
	memset(h, 0, sizeof(h));
	for (int i = 0; i < HOSTS; i++) {
		struct sw_conn_cfg *c = &cfg.child[i];
		h[i] = (struct host){ .ip = 0x0a010115u + (uint32_t)i, .qpn = 0x11 + (uint32_t)i, .spsn = BASE_PSN,
				      .epsn = BASE_PSN };
		*c = (struct sw_conn_cfg){ .port = i, .local_ip = SW_IP, .peer_ip = h[i].ip, .local_qpn = SW_QPN,
					   .peer_qpn = h[i].qpn, .rq_psn = BASE_PSN, .sq_psn = BASE_PSN,
					   .udp_dst = ROCE_PORT_HOST, .first_rank = (uint16_t)i, .nranks = 1 };
		memcpy(c->local_mac, mac_sw, 6);
		memcpy(c->peer_mac, mac_h, 6);
	}
	eng = sw_engine_new(&cfg, tx, NULL);
	assert_non_null(eng);
}

static void setup_engine(uint32_t nslots)
{
	setup_engine_rto(nslots, 1000000);
}

/* Host @i sends one packet with @imm and @len bytes of @data at its next PSN (or @psn if >= 0). */
static void host_send(int i, uint32_t imm, const void *data, size_t len, long psn, uint64_t now)
{
	uint8_t f[1200];
	struct roce_build b = { .src_mac = mac_h, .dst_mac = mac_sw, .src_ip = h[i].ip, .dst_ip = SW_IP,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = RC_SEND_ONLY_WITH_IMM,
				.ack_req = 1, .dest_qp = SW_QPN, .psn = psn >= 0 ? (uint32_t)psn : h[i].spsn,
				.has_imm = 1, .imm = imm, .payload = data, .payload_len = len };
	size_t n = roce_build_frame(f, sizeof(f), &b);

	if (psn < 0)
		h[i].spsn = (h[i].spsn + 1) & ROCE_PSN_MASK;
	sw_engine_rx(eng, f, n, now);
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
		assert_int_equal(p.opcode, RC_SEND_ONLY_WITH_IMM);
		if (p.psn != x->epsn) /* a retransmitted duplicate: re-ACK it */
			continue;
		x->epsn = (x->epsn + 1) & ROCE_PSN_MASK;
		x->msn++;
		assert_true(x->nresults < 64);
		x->result_imm[x->nresults] = p.imm;
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
	for (int i = 0; i < HOSTS; i++)
		host_send(i, imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL), NULL, 0, -1, 0);
	for (int i = 0; i < HOSTS; i++)
		assert_int_equal(h[i].nresults, i == 1 ? 0 : 1); /* nothing before the last arrives */
	pump(0);
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(h[i].nresults, i == 1 ? 1 : 2);
		assert_int_equal(h[i].result_len[h[i].nresults - 1], 0);
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acks_coalesced),
		cmocka_unit_test(test_allreduce_int32_sum_any_arrival_order),
		cmocka_unit_test(test_float_max_and_reduce_to_one_rank),
		cmocka_unit_test(test_broadcast_and_barrier),
		cmocka_unit_test(test_busy_slot_gets_rnr_then_succeeds),
		cmocka_unit_test(test_lost_frames_recovered),
		cmocka_unit_test(test_host_nak_goes_back_from_the_naked_psn),
		cmocka_unit_test(test_timeout_probes_with_backoff),
		cmocka_unit_test(test_tail_probe_answers),
		cmocka_unit_test(test_lost_nak_after_tail_probe),
		cmocka_unit_test(test_host_rnr_nak_retries_after_the_delay),
		cmocka_unit_test(test_bad_input_is_counted_not_crashing),
	};
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
