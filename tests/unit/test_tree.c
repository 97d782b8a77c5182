/*
 * test_tree.c — three switch engines as the 1-2-4 tree, offline, cmocka.
 *
 * Leaves sw1 (ranks 0,1) and sw2 (ranks 2,3) forward to the root sw0 over
 * their parent connections (UDP 4792); frames are routed in-process between
 * the engines and four simulated hosts that build real frames and ACK every
 * result. Checks AllReduce, Reduce to a rank on the other leaf, Broadcast
 * from a rank on the other leaf, Barrier, and that every slot is free after.
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

#define LEAF_QPN 0x200 /* leaf's end of the leaf-root connection */
#define ROOT_QPN 0x300 /* root's end */
#define SW_QPN 0x100   /* leaf's end of each host connection */

struct frame { int from, port; size_t len; uint8_t d[1200]; };
static struct frame q[8192];
static int qn;
static struct sw_engine *sw[3]; /* 0 root, 1 and 2 leaves */
static uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };

struct host { uint32_t ip, qpn, spsn, epsn, msn; int nres; uint16_t len[16]; uint8_t res[16][1024]; };
static struct host h[4];
static const uint32_t leaf_down_ip[3] = { 0, 0x0a010101, 0x0a020101 };   /* 10.1.1.1, 10.2.1.1 */
static const uint32_t leaf_up_ip[3] = { 0, 0xac100005, 0x0a0a0007 };     /* 172.16.0.5, 10.10.0.7 */
static const uint32_t root_ip[3] = { 0, 0xac100001, 0x0a0a0001 };        /* 172.16.0.1, 10.10.0.1 */

static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	assert_true(qn < 8192);
	q[qn] = (struct frame){ .from = (int)(intptr_t)ctx, .port = port, .len = len };
	memcpy(q[qn].d, f, len);
	qn++;
}

static void host_frame(int i, uint8_t op, uint32_t psn, uint32_t imm, const void *data, size_t len)
{
	uint8_t f[1200];
	int leaf = 1 + i / 2;
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = h[i].ip, .dst_ip = leaf_down_ip[leaf],
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op, .ack_req = 1,
				.dest_qp = SW_QPN, .psn = psn, .has_imm = op != RC_ACK, .imm = imm, .payload = data,
				.payload_len = len, .has_aeth = op == RC_ACK,
				.syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED, .msn = h[i].msn };
	sw_engine_rx(sw[leaf], f, roce_build_frame(f, sizeof(f), &b), 0);
}

static void send_from(int i, uint32_t imm, const void *data, size_t len)
{
	host_frame(i, RC_SEND_ONLY_WITH_IMM, h[i].spsn, imm, data, len);
	h[i].spsn = (h[i].spsn + 1) & ROCE_PSN_MASK;
}

/* Route queued frames until the network is quiet. */
static void pump(void)
{
	for (int k = 0; k < qn; k++) {
		struct frame *f = &q[k];
		if (f->from == 0) { /* root port i -> leaf i+1 */
			sw_engine_rx(sw[f->port + 1], f->d, f->len, 0);
		} else if (f->port == 2) { /* leaf uplink -> root */
			sw_engine_rx(sw[0], f->d, f->len, 0);
		} else { /* leaf port -> host */
			int i = (f->from - 1) * 2 + f->port;
			struct roce_pkt p;
			assert_int_equal(roce_parse(f->d, f->len, &p), ROCE_OK);
			assert_true(roce_icrc_ok(f->d, f->len));
			assert_int_equal(p.dest_qp, h[i].qpn);
			if (p.opcode == RC_ACK || p.psn != h[i].epsn)
				continue;
			h[i].epsn = (h[i].epsn + 1) & ROCE_PSN_MASK;
			h[i].msn++;
			h[i].len[h[i].nres] = (uint16_t)p.payload_len;
			memcpy(h[i].res[h[i].nres++], f->d + p.payload_off, p.payload_len);
			host_frame(i, RC_ACK, p.psn, 0, NULL, 0);
		}
	}
	qn = 0;
}

static void setup(void)
{
	qn = 0;
	for (int i = 0; i < 4; i++)
		h[i] = (struct host){ .ip = (i < 2 ? 0x0a010115u : 0x0a020107u) + (uint32_t)(i % 2), .qpn = 0x11 + (uint32_t)i,
				      .spsn = 7, .epsn = 7 };
	struct sw_cfg root = { .nchildren = 2, .nslots = 8, .retransmit_ns = 1000000, .rnr_timer = 1 };
	for (int l = 1; l <= 2; l++) {
		root.child[l - 1] = (struct sw_conn_cfg){ .port = l - 1, .local_ip = root_ip[l], .peer_ip = leaf_up_ip[l],
							  .local_qpn = ROOT_QPN, .peer_qpn = LEAF_QPN, .rq_psn = 100,
							  .sq_psn = 200, .udp_dst = ROCE_PORT_SWITCH,
							  .first_rank = (uint16_t)(2 * (l - 1)), .nranks = 2 };
		struct sw_cfg leaf = { .nchildren = 2, .nslots = 8, .retransmit_ns = 1000000, .rnr_timer = 1,
				       .has_parent = 1, .total_ranks = 4 };
		for (int c = 0; c < 2; c++) {
			int i = 2 * (l - 1) + c;
			leaf.child[c] = (struct sw_conn_cfg){ .port = c, .local_ip = leaf_down_ip[l], .peer_ip = h[i].ip,
							      .local_qpn = SW_QPN, .peer_qpn = h[i].qpn, .rq_psn = 7,
							      .sq_psn = 7, .udp_dst = ROCE_PORT_HOST,
							      .first_rank = (uint16_t)i, .nranks = 1 };
		}
		leaf.parent = (struct sw_conn_cfg){ .port = 2, .local_ip = leaf_up_ip[l], .peer_ip = root_ip[l],
						    .local_qpn = LEAF_QPN, .peer_qpn = ROOT_QPN, .rq_psn = 200, .sq_psn = 100,
						    .udp_dst = ROCE_PORT_SWITCH };
		assert_non_null(sw[l] = sw_engine_new(&leaf, tx, (void *)(intptr_t)l));
	}
	assert_non_null(sw[0] = sw_engine_new(&root, tx, (void *)(intptr_t)0));
}

static uint32_t imm(enum inc_prim p, enum inc_op op, uint16_t dest)
{
	struct inc_imm m = { dest, p, op, INC_INT32 };
	return inc_imm_encode(&m);
}

static int32_t got(int i, int r, int j)
{
	uint32_t v;
	memcpy(&v, h[i].res[r] + 4 * j, 4);
	return (int32_t)ntohl(v);
}

static void test_tree_collectives(void **state)
{
	uint32_t v[4][3];

	setup();
	/* 12 AllReduce SUM packets: more than the 8 slots, so slots are reused across the tree */
	for (int k = 0; k < 12; k++) {
		for (int i = 3; i >= 0; i--) {
			for (int j = 0; j < 3; j++)
				v[i][j] = htonl((uint32_t)((i + 1) * (j + 10) * (k + 1)));
			send_from(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_RANK_ALL), v[i], 12);
		}
		pump();
		for (int i = 0; i < 4; i++) {
			assert_int_equal(h[i].nres, 1);
			for (int j = 0; j < 3; j++)
				assert_int_equal(got(i, 0, j), (1 + 2 + 3 + 4) * (j + 10) * (k + 1));
			h[i].nres = 0;
		}
	}
	/* Reduce MAX to rank 3 (on leaf sw2): only rank 3 receives */
	for (int i = 0; i < 4; i++) {
		uint32_t x = htonl((uint32_t)(i == 1 ? 99 : i));
		send_from(i, imm(INC_REDUCE, INC_OP_MAX, 3), &x, 4);
	}
	pump();
	for (int i = 0; i < 4; i++)
		assert_int_equal(h[i].nres, i == 3 ? 1 : 0);
	assert_int_equal(got(3, 0, 0), 99);
	h[3].nres = 0;
	/* Broadcast from rank 2: ranks 0, 1 (other leaf) and 3 (same leaf) receive */
	for (int i = 0; i < 4; i++)
		send_from(i, imm(INC_BROADCAST, INC_OP_SUM, 2), i == 2 ? "abcdefgh" : NULL, i == 2 ? 8 : 0);
	pump();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(h[i].nres, i == 2 ? 0 : 1);
		if (i != 2)
			assert_memory_equal(h[i].res[0], "abcdefgh", 8);
		h[i].nres = 0;
	}
	/* Barrier: nobody hears back until the last rank enters */
	for (int i = 0; i < 3; i++)
		send_from(i, imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_RANK_ALL), NULL, 0);
	pump();
	for (int i = 0; i < 4; i++)
		assert_int_equal(h[i].nres, 0);
	send_from(3, imm(INC_ALLREDUCE, INC_OP_BARRIER, INC_RANK_ALL), NULL, 0);
	pump();
	for (int i = 0; i < 4; i++)
		assert_int_equal(h[i].nres, 1);
	for (int s = 0; s < 3; s++) {
		assert_int_equal(sw_engine_busy_slots(sw[s]), 0);
		assert_int_equal(sw_engine_counters(sw[s])->drop_mismatch + sw_engine_counters(sw[s])->drop_seq, 0);
	}
	assert_int_equal(sw_engine_counters(sw[1])->sent_up, 15);
	assert_int_equal(sw_engine_counters(sw[1])->results_from_parent, 14); /* not the reduce to rank 3 */
	assert_int_equal(sw_engine_counters(sw[2])->results_from_parent, 15);
	for (int s = 0; s < 3; s++)
		sw_engine_free(sw[s]);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_tree_collectives) };
	return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
