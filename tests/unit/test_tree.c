/*
 * test_tree.c — switch engines as whole trees, offline, cmocka.
 *
 * Any tree (the second half): a topology file (those of topology/, and trees
 * written here) goes through the controller's plan (controller/plan.c) and
 * every switch's rules through the switch's parser (switch/swconfig.c) into
 * one engine per switch; frames travel between them by the ports the rules
 * name, and simulated hosts send and check. Every collective on trees whose
 * root has only hosts, only switches, or both, switches with host and switch
 * children at several levels and in both orders, hosts at uneven depths,
 * sub-communicators; and the ACK ceiling of a child that runs ahead, in that
 * child's own PSNs, on a switch whose children start at different PSNs.
 *
 * The 1-2-4 tree by hand (the first half):
 * Leaves sw1 (ranks 0,1) and sw2 (ranks 2,3) forward to the root sw0 over
 * their parent connections (UDP 4792); frames are routed in-process between
 * the engines and four simulated hosts that build real frames and ACK every
 * result. Checks AllReduce, Reduce to a rank on the other leaf, Broadcast
 * from a rank on the other leaf, Barrier, and that every slot is free after;
 * that a switch link resends only what it lost, also when the resend after
 * an RNR NAK is lost; and, in simulated time over lossy, reordering,
 * duplicating switch links, that a 4 MiB AllReduce stays correct on every
 * rank without a retransmission storm.
 *
 * 1-4-16 in simulated time (the end): sixteen ranks that act like libinccl
 * over rdma_rxe run inccl_check's calls for one count through the planned
 * tree, every node stalling and every link losing frames at random; every
 * result checked, every rank done in bounded time.
 *
 * TEST_TREE_FILTER=NAME runs the tests whose names match NAME (cmocka's
 * filter: * and ? as wildcards) alone.
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
#include "check_ref.h"
#include "engine.h"
#include "plan.h"
#include "roce.h"
#include "swconfig.h"
#include "topo.h"

#define LEAF_QPN 0x200 /* leaf's end of the leaf-root connection */
#define ROOT_QPN 0x300 /* root's end */
#define SW_QPN 0x100   /* leaf's end of each host connection */

struct frame { int from, port; size_t len; uint8_t d[1200]; };
static struct frame q[8192];
static int qn;
static struct sw_engine *sw[3]; /* 0 root, 1 and 2 leaves */
static uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };

struct host { uint32_t ip, qpn, spsn, epsn, msn; int nres; uint16_t len[16]; uint32_t imm[16]; uint8_t res[16][1024]; };
static struct host h[4];
static const uint32_t leaf_down_ip[3] = { 0, 0x0a010101, 0x0a020101 };   /* 10.1.1.1, 10.2.1.1 */
static const uint32_t leaf_up_ip[3] = { 0, 0xac100005, 0x0a0a0007 };     /* 172.16.0.5, 10.10.0.7 */
static const uint32_t root_ip[3] = { 0, 0xac100001, 0x0a0a0001 };        /* 172.16.0.1, 10.10.0.1 */

/* Lose on the wire the drop_nth frame (counting from 0) that node drop_from
 * sends on port drop_port with an opcode of kind drop_acks (1: ACK/NAK, 0: SEND). */
static int drop_from = -1, drop_port, drop_acks, drop_nth, drop_seen;

static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	if ((int)(intptr_t)ctx == drop_from && port == drop_port &&
	    (f[ROCE_BTH_OFF] == RC_ACK) == drop_acks && drop_seen++ == drop_nth)
		return;
	assert_true(qn < 8192);
	q[qn] = (struct frame){ .from = (int)(intptr_t)ctx, .port = port, .len = len };
	memcpy(q[qn].d, f, len);
	qn++;
}

static uint64_t host_now; /* the time hosts' frames reach their leaf (pump_at() sets it) */

static void host_frame(int i, uint8_t op, uint32_t psn, uint32_t imm, const void *data, size_t len)
{
	uint8_t f[1200];
	int leaf = 1 + i / 2;
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = h[i].ip, .dst_ip = leaf_down_ip[leaf],
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op, .ack_req = 1,
				.dest_qp = SW_QPN, .psn = psn, .has_imm = op != RC_ACK, .imm = imm, .payload = data,
				.payload_len = len, .has_aeth = op == RC_ACK,
				.syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED, .msn = h[i].msn };
	sw_engine_rx(sw[leaf], f, roce_build_frame(f, sizeof(f), &b), host_now);
}

static void send_from(int i, uint32_t imm, const void *data, size_t len)
{
	host_frame(i, RC_SEND_ONLY_WITH_IMM, h[i].spsn, imm, data, len);
	h[i].spsn = (h[i].spsn + 1) & ROCE_PSN_MASK;
}

/* Route queued frames until the network is quiet, at time @now (ns). */
static void pump_at(uint64_t now)
{
	host_now = now;
again:
	for (int k = 0; k < qn; k++) {
		struct frame *f = &q[k];
		if (f->from == 0) { /* root port i -> leaf i+1 */
			sw_engine_rx(sw[f->port + 1], f->d, f->len, now);
		} else if (f->port == 2) { /* leaf uplink -> root */
			sw_engine_rx(sw[0], f->d, f->len, now);
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
			h[i].imm[h[i].nres] = p.has_imm ? p.imm : 0;
			memcpy(h[i].res[h[i].nres++], f->d + p.payload_off, p.payload_len);
			host_frame(i, RC_ACK, p.psn, 0, NULL, 0);
		}
	}
	qn = 0;
	for (int s = 0; s < 3; s++) /* the end of a batch, as the daemon does: ACKs owed go out */
		sw_engine_tick(sw[s], now);
	if (qn)
		goto again;
}

static void pump(void)
{
	pump_at(0);
}

/* The 1-2-4 tree: @nslots slots, @rto_ns retransmit time, hosts start their PSNs
 * at @host_psn, the leaves at @up_psn towards the root, the root at @down_psn. */
static uint32_t tree_window; /* cfg.window of every switch (0: the default) */

static void build_tree(uint32_t nslots, uint64_t rto_ns, uint32_t host_psn, uint32_t up_psn, uint32_t down_psn,
		       sw_tx_fn fn)
{
	qn = 0;
	for (int i = 0; i < 4; i++)
		h[i] = (struct host){ .ip = (i < 2 ? 0x0a010115u : 0x0a020107u) + (uint32_t)(i % 2), .qpn = 0x11 + (uint32_t)i,
				      .spsn = host_psn, .epsn = 7 };
	struct sw_cfg root = { .nchildren = 2, .nslots = nslots, .retransmit_ns = rto_ns, .rnr_timer = 1,
			       .window = tree_window };
	for (int l = 1; l <= 2; l++) {
		root.child[l - 1] = (struct sw_conn_cfg){ .port = l - 1, .local_ip = root_ip[l], .peer_ip = leaf_up_ip[l],
							  .local_qpn = ROOT_QPN, .peer_qpn = LEAF_QPN, .rq_psn = up_psn,
							  .sq_psn = down_psn, .udp_dst = ROCE_PORT_SWITCH,
							  .first_rank = (uint16_t)(2 * (l - 1)), .nranks = 2 };
		struct sw_cfg leaf = { .nchildren = 2, .nslots = nslots, .retransmit_ns = rto_ns, .rnr_timer = 1,
				       .has_parent = 1, .total_ranks = 4, .window = tree_window };
		for (int c = 0; c < 2; c++) {
			int i = 2 * (l - 1) + c;
			leaf.child[c] = (struct sw_conn_cfg){ .port = c, .local_ip = leaf_down_ip[l], .peer_ip = h[i].ip,
							      .local_qpn = SW_QPN, .peer_qpn = h[i].qpn, .rq_psn = host_psn,
							      .sq_psn = 7, .udp_dst = ROCE_PORT_HOST,
							      .first_rank = (uint16_t)i, .nranks = 1 };
		}
		leaf.parent = (struct sw_conn_cfg){ .port = 2, .local_ip = leaf_up_ip[l], .peer_ip = root_ip[l],
						    .local_qpn = LEAF_QPN, .peer_qpn = ROOT_QPN, .rq_psn = down_psn,
						    .sq_psn = up_psn, .udp_dst = ROCE_PORT_SWITCH };
		assert_non_null(sw[l] = sw_engine_new(&leaf, fn, (void *)(intptr_t)l));
	}
	assert_non_null(sw[0] = sw_engine_new(&root, fn, (void *)(intptr_t)0));
}

static void setup(void)
{
	drop_from = -1;
	build_tree(8, 1000000, 7, 100, 200, tx);
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

/*
 * INC_IMM_LAST across the tree: a call's last packet keeps the bit on its
 * way up (a leaf's aggregate) and down (the root's result, a leaf's fan-out),
 * so every rank's last result carries it. Leaves whose ranks agree with each
 * other but not with the other leaf's (their calls differ by a packet) meet
 * at the root: the later leaf's aggregate is refused there (drop_mismatch,
 * mismatch_count), no rank gets a result of the mismatched packet, and the
 * shorter ranks' next call is not combined with the longer ranks' last packet.
 */
static void test_tree_last_packet_and_count_mismatch(void **state)
{
	uint32_t v = htonl(5), ar = imm(INC_ALLREDUCE, INC_OP_SUM, INC_RANK_ALL);

	setup();
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 4; i++)
			send_from(i, k == 1 ? ar | INC_IMM_LAST : ar, &v, 4);
	for (int i = 0; i < 4; i++) /* a Broadcast of one packet from rank 3 */
		send_from(i, imm(INC_BROADCAST, INC_OP_SUM, 3) | INC_IMM_LAST, i == 3 ? "abcd" : NULL, i == 3 ? 4 : 0);
	pump();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(h[i].nres, i == 3 ? 2 : 3);
		assert_int_equal(h[i].imm[0], ar);
		assert_int_equal(h[i].imm[1], ar | INC_IMM_LAST);
		assert_int_equal(got(i, 1, 0), 20);
		if (i != 3)
			assert_int_equal(h[i].imm[2], imm(INC_BROADCAST, INC_OP_SUM, 3) | INC_IMM_LAST);
	}
	for (int s = 0; s < 3; s++) {
		assert_int_equal(sw_engine_busy_slots(sw[s]), 0);
		assert_int_equal(sw_engine_counters(sw[s])->drop_mismatch + sw_engine_counters(sw[s])->drop_bad_op, 0);
	}
	for (int s = 0; s < 3; s++)
		sw_engine_free(sw[s]);

	setup();
	for (int i = 0; i < 2; i++) { /* ranks 0, 1 (leaf 1): two packets; ranks 2, 3 (leaf 2): one, then the next call */
		send_from(i, ar, &v, 4);
		send_from(i, ar | INC_IMM_LAST, &v, 4);
		send_from(i + 2, ar | INC_IMM_LAST, &v, 4);
		send_from(i + 2, ar | INC_IMM_LAST, &v, 4);
	}
	pump();
	/* (the refused aggregate may come again once: the root NAKs the gap before the next one it holds) */
	assert_true(sw_engine_counters(sw[0])->drop_mismatch >= 1);
	assert_int_equal(sw_engine_counters(sw[0])->mismatch_count, sw_engine_counters(sw[0])->drop_mismatch);
	assert_int_equal(sw_engine_counters(sw[0])->aggregations, 0);
	assert_int_equal(sw_engine_counters(sw[0])->slots_completed, 0);
	for (int s = 1; s < 3; s++) /* each leaf's ranks agree */
		assert_int_equal(sw_engine_counters(sw[s])->drop_mismatch, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(h[i].nres, 0);
	for (int s = 0; s < 3; s++)
		sw_engine_free(sw[s]);
}

/* Ranks send @n AllReduce SUM packets; check every rank's results. */
static void allreduce_round(int n, int base)
{
	uint32_t v[3];

	for (int k = 0; k < n; k++)
		for (int i = 0; i < 4; i++) {
			for (int j = 0; j < 3; j++)
				v[j] = htonl((uint32_t)((i + 1) * (j + 10) * (base + k + 1)));
			send_from(i, imm(INC_ALLREDUCE, INC_OP_SUM, INC_RANK_ALL), v, 12);
		}
	pump();
}

static void check_results(int n, int base)
{
	for (int i = 0; i < 4; i++) {
		assert_int_equal(h[i].nres, n);
		for (int k = 0; k < n; k++)
			for (int j = 0; j < 3; j++)
				assert_int_equal(got(i, k, j), (1 + 2 + 3 + 4) * (j + 10) * (base + k + 1));
		h[i].nres = 0;
	}
}

/*
 * On a switch<->switch link the receiver keeps what follows a gap and the
 * sender resends only the gap: leaf 1's first aggregate is lost on the way
 * up; the root holds the next three, NAKs once, gets the one frame again.
 * Then a NAK is lost too: the leaf's timeout resends the gap alone.
 */
static void test_switch_link_resends_only_the_gap(void **state)
{
	const struct sw_counters *root, *leaf;

	setup();
	root = sw_engine_counters(sw[0]);
	leaf = sw_engine_counters(sw[1]);
	drop_from = 1, drop_port = 2, drop_acks = 0, drop_nth = 0, drop_seen = 0;
	allreduce_round(4, 0);
	check_results(4, 0);
	assert_int_equal(root->ooo_held, 3);
	assert_int_equal(root->naks_tx, 1);
	assert_int_equal(leaf->retransmits, 1);
	assert_int_equal(root->retransmits + root->drop_seq + leaf->drop_seq, 0);

	/* up-frame 4 lost, and the root's NAK of it as well */
	drop_from = 1, drop_port = 2, drop_acks = 0, drop_nth = 0, drop_seen = 0;
	allreduce_round(1, 4);
	drop_from = 0, drop_port = 0, drop_acks = 1, drop_nth = 0, drop_seen = 0;
	allreduce_round(3, 5);
	assert_int_equal(h[0].nres, 0); /* nothing while the gap waits */
	assert_int_equal(root->ooo_held, 6);
	sw_engine_tick(sw[1], 500000);  /* before the timeout (1 ms): nothing */
	assert_int_equal(qn, 0);
	sw_engine_tick(sw[1], 2000000); /* the gap alone */
	assert_int_equal(leaf->timeouts, 1);
	assert_int_equal(leaf->retransmits, 2);
	pump();
	check_results(4, 4);
	for (int s = 0; s < 3; s++) {
		assert_int_equal(sw_engine_busy_slots(sw[s]), 0);
		assert_int_equal(sw_engine_counters(sw[s])->drop_mismatch + sw_engine_counters(sw[s])->drop_seq, 0);
		sw_engine_free(sw[s]);
	}
}

/* Ranks @from..@to send packet @k of a Reduce SUM to rank 3 (on leaf 2). */
static void reduce_packet(int from, int to, int k)
{
	uint32_t v[3];

	for (int i = from; i <= to; i++) {
		for (int j = 0; j < 3; j++)
			v[j] = htonl((uint32_t)((i + 1) * (j + 10) * (k + 1)));
		send_from(i, imm(INC_REDUCE, INC_OP_SUM, 3), v, 12);
	}
}

/*
 * The probe after an RNR NAK is lost: leaf 1 runs ahead in a Reduce to rank
 * 3 (its slots free as soon as the root has its aggregates), and the root
 * refuses its ninth with an RNR NAK (the slot, of 8, still holds the first,
 * which waits for leaf 2). The leaf sends that frame again after the RNR
 * delay, and it is lost; the leaf's retransmit timer must send it once more.
 * Before, the go-back after the RNR NAK (which sent nothing: the delay held
 * it) was remembered as an empty resend, resend_gap() resent twice that,
 * nothing, at every timeout, and the link to the root stayed dead: rank 3
 * never had its last result (the 1-4-16 simulation below hung so).
 */
static void test_switch_link_probe_lost_after_rnr(void **state)
{
	const struct sw_counters *root, *leaf;

	setup();
	root = sw_engine_counters(sw[0]);
	leaf = sw_engine_counters(sw[1]);
	for (int k = 0; k < 8; k++)
		reduce_packet(0, 1, k);
	pump_at(0);
	reduce_packet(0, 1, 8);
	pump_at(0);
	assert_int_equal(root->rnr_naks_tx, 1); /* the root's 8 slots wait for leaf 2 */
	drop_from = 1, drop_port = 2, drop_acks = 0, drop_nth = 0, drop_seen = 0;
	pump_at(1500000); /* the RNR delay (1 ms) is over: the probe, lost */
	assert_int_equal(leaf->retransmits, 1);
	assert_int_equal(drop_seen, 1);
	for (int k = 0; k < 8; k++)
		reduce_packet(2, 3, k);
	pump_at(1600000); /* the first 8 results reach rank 3 */
	reduce_packet(2, 3, 8);
	pump_at(1700000);
	assert_int_equal(h[3].nres, 8);
	pump_at(2000000); /* before the leaf's timeout (1 ms after the probe): nothing */
	assert_int_equal(h[3].nres, 8);
	pump_at(3000000); /* the timeout sends the lost frame again */
	assert_int_equal(leaf->timeouts, 1);
	assert_int_equal(leaf->retransmits, 2);
	assert_int_equal(h[3].nres, 9);
	for (int k = 0; k < 9; k++)
		for (int j = 0; j < 3; j++)
			assert_int_equal(got(3, k, j), (1 + 2 + 3 + 4) * (j + 10) * (k + 1));
	for (int i = 0; i < 3; i++)
		assert_int_equal(h[i].nres, 0);
	for (uint64_t t = 4000000; t < 20000000; t += 1000000) /* the results' ACKs, and the tails' probes */
		pump_at(t);
	for (int s = 0; s < 3; s++) {
		assert_int_equal(sw_engine_busy_slots(sw[s]), 0);
		assert_int_equal(sw_engine_counters(sw[s])->drop_mismatch, 0);
		sw_engine_free(sw[s]);
	}
}

/*
 * ---- The tree in simulated time, over lossy switch<->switch links --------
 *
 * Every frame travels a simulated link (one per direction): it waits for the
 * link to be free (serialization at ns_per_byte), then for the propagation
 * delay. A frame that finds more than cap_ns of backlog is dropped, like a
 * full socket buffer of a UDP tunnel. Switch<->switch links also drop, delay
 * (reorder) and duplicate frames at random, from a seeded xorshift, so every
 * run is the same; the root can stall like a TCG guest (frames wait in its
 * socket buffer, the overflow is dropped). Hosts act like rdma_rxe driven by
 * libinccl: a window of 128 packets, go-back-N on NAK / RNR NAK, a 1.07 s
 * local ACK timeout, one NAK per gap, every result checked and ACKed.
 * Switches are ticked every millisecond, like the daemon's poll loop.
 */
#define NPKT 4096                 /* a 4 MiB AllReduce: 4096 packets of 1 KiB per rank */
#define ELEMS 256
#define HOST_WIN 128              /* libinccl's default window */
#define HOST_TIMEOUT_NS 1070000000ull /* rxe local ACK timeout 18: 4.096 us << 18 */
#define HOST_RNR_NS 10000ull      /* min_rnr_timer 1: 0.01 ms */
#define TICK_NS 1000000ull
#define NODES 7                   /* 0 root, 1-2 leaves, 3-6 hosts (node 3 + rank) */
#define POOL 16384
#define FRAME_NS(len) ((len) * 100ull) /* every link: 10 MB/s */
#define SOCK_FRAMES 90            /* 208 KiB of socket buffer at ~2.3 KiB per 1 KiB frame */
#define HOST_PSN 0xfff800u        /* PSNs wrap half-way */
#define UP_PSN 0xfffc00u
#define DOWN_PSN 0xffff00u

struct scenario {
	const char *name;
	uint32_t loss_ppm, reorder_ppm, dup_ppm; /* on each switch<->switch link direction */
	uint64_t stall_ns, stall_every_ns;       /* the root stalls this long this often */
	uint64_t seed;
};

struct sim_result {
	uint64_t done_ns;                           /* the last rank has its last result */
	uint64_t lost, overflow, reordered, duplicated; /* frames, on switch<->switch links and the stalled root */
	uint64_t retransmits, drop_seq, naks_tx, naks_ignored, timeouts, held, host_resent;
};

struct link {
	uint64_t prop_ns, cap_ns;
	uint32_t loss_ppm, reorder_ppm, dup_ppm;
	uint64_t busy_until;
};

struct event { uint64_t t, seq; int node, buf; size_t len; };

struct shost {
	uint32_t next, una, nres, epsn; /* next packet to send, oldest unacked, results, next result PSN */
	uint64_t hold_until, last_progress;
	int nak_sent;
	uint64_t resent;
};

static struct link link[NODES][NODES];
static struct event heap[POOL];
static int nheap;
static uint8_t pool[POOL][1100];
static int freebuf[POOL], nfree;
static uint64_t now_ns, evseq, rng;
static struct shost sh[4];
static uint32_t sim_per = 1; /* packets per message after the first (1: every packet a SEND_ONLY_WITH_IMM) */

/* The opcode of packet @k of @n as libinccl sends it: packet 0 alone with the
 * immediate, then messages of @per (FIRST, MIDDLE*, LAST_WITH_IMM). */
static uint8_t msg_op(uint32_t k, uint32_t n, uint32_t per)
{
	uint32_t pos = k ? (k - 1) % per : 0;
	int last = k == 0 || k == n - 1 || pos == per - 1;

	if (k == 0 || pos == 0)
		return last ? RC_SEND_ONLY_WITH_IMM : RC_SEND_FIRST;
	return last ? RC_SEND_LAST_WITH_IMM : RC_SEND_MIDDLE;
}
static struct sim_result res;

/* Parts per million, from a seeded xorshift64. */
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11) % 1000000;
}

static int ev_before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct event ev)
{
	int i = nheap++;

	for (; i > 0 && ev_before(&ev, &heap[(i - 1) / 2]); i = (i - 1) / 2)
		heap[i] = heap[(i - 1) / 2];
	heap[i] = ev;
}

static struct event heap_pop(void)
{
	struct event top = heap[0], last = heap[--nheap];
	int i = 0, c;

	while ((c = 2 * i + 1) < nheap) {
		if (c + 1 < nheap && ev_before(&heap[c + 1], &heap[c]))
			c++;
		if (!ev_before(&heap[c], &last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = last;
	return top;
}

static void deliver_at(int to, const uint8_t *f, size_t len, uint64_t t)
{
	assert_true(nfree > 0);
	int b = freebuf[--nfree];
	memcpy(pool[b], f, len);
	heap_push((struct event){ .t = t, .seq = evseq++, .node = to, .buf = b, .len = len });
}

/* Put a frame on the link @from -> @to at now_ns. */
static void transmit(int from, int to, const uint8_t *f, size_t len)
{
	struct link *l = &link[from][to];
	uint64_t start = l->busy_until > now_ns ? l->busy_until : now_ns;

	if (start - now_ns > l->cap_ns) {
		res.overflow++;
		return;
	}
	l->busy_until = start + FRAME_NS(len);
	if (l->loss_ppm && rnd() < l->loss_ppm) {
		res.lost++;
		return;
	}
	uint64_t t = l->busy_until + l->prop_ns;
	if (l->reorder_ppm && rnd() < l->reorder_ppm) {
		res.reordered++;
		t += 100000 + rnd() % 900000; /* 0.1 .. 1 ms late: behind the frames that follow */
	}
	deliver_at(to, f, len, t);
	if (l->dup_ppm && rnd() < l->dup_ppm) {
		res.duplicated++;
		deliver_at(to, f, len, t + 50000);
	}
}

static void sim_tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	int s = (int)(intptr_t)ctx;

	transmit(s, s == 0 ? port + 1 : port == 2 ? 0 : 3 + (s - 1) * 2 + port, f, len);
}

/* Rank i's element j of packet k (as uint32: sums wrap like int32). */
static uint32_t sval(int i, uint32_t k, int j)
{
	return (uint32_t)(i + 1) * 1000003u * (k + 1) - (uint32_t)j * 7919u * (uint32_t)(i + 1);
}

static void host_emit(int i, uint8_t op, uint32_t psn, uint8_t syndrome, const void *data, size_t len)
{
	uint8_t f[1200];
	int leaf = 1 + i / 2;
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = h[i].ip, .dst_ip = leaf_down_ip[leaf],
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op, .ack_req = 1,
				.dest_qp = SW_QPN, .psn = psn,
				.has_imm = roce_opcode_has_imm(op),
				.imm = imm(INC_ALLREDUCE, INC_OP_SUM, INC_RANK_ALL), .payload = data, .payload_len = len,
				.has_aeth = op == RC_ACK, .syndrome = syndrome, .msn = h[i].msn };
	transmit(3 + i, leaf, f, roce_build_frame(f, sizeof(f), &b));
}

/* Host @i sends what its window allows (sent - acknowledged and sent - results below 128). */
static void host_send(int i)
{
	struct shost *x = &sh[i];
	uint32_t v[ELEMS];

	while (x->next < NPKT && x->next - x->una < HOST_WIN && x->next - x->nres < HOST_WIN &&
	       now_ns >= x->hold_until) {
		for (int j = 0; j < ELEMS; j++)
			v[j] = htonl(sval(i, x->next, j));
		if (x->next == x->una)
			x->last_progress = now_ns;
		host_emit(i, msg_op(x->next, NPKT, sim_per), (HOST_PSN + x->next) & ROCE_PSN_MASK, 0, v, sizeof(v));
		x->next++;
	}
}

/* A frame from host @i's leaf: an answer to the host's SENDs, or a result. */
static void host_rx(int i, const uint8_t *f, size_t len)
{
	struct shost *x = &sh[i];
	struct roce_pkt p;

	assert_int_equal(roce_parse(f, len, &p), ROCE_OK);
	assert_true(roce_icrc_ok(f, len));
	assert_int_equal(p.dest_qp, h[i].qpn);
	if (p.opcode == RC_ACK) {
		uint32_t k = (p.psn - HOST_PSN) & ROCE_PSN_MASK;
		uint8_t type = p.syndrome & AETH_TYPE_MASK;

		assert_true(k < x->next || (type != AETH_TYPE_ACK && k == x->next));
		if (type == AETH_TYPE_ACK) {
			if (k >= x->una) {
				x->una = k + 1;
				x->last_progress = now_ns;
			}
			return;
		}
		/* RNR NAK (a busy slot) or sequence NAK: go back to its PSN */
		assert_true(type == AETH_TYPE_RNR_NAK || p.syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ));
		if (type == AETH_TYPE_RNR_NAK)
			x->hold_until = now_ns + HOST_RNR_NS;
		if (k >= x->una)
			x->una = k;
		x->resent += x->next - x->una;
		x->next = x->una;
		x->last_progress = now_ns;
		return;
	}
	int32_t d = roce_psn_diff(p.psn, x->epsn);
	if (d > 0) { /* a gap: one NAK, as rxe */
		if (!x->nak_sent)
			host_emit(i, RC_ACK, x->epsn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, NULL, 0);
		x->nak_sent = 1;
		return;
	}
	if (d < 0) { /* a duplicate: re-ACK the last accepted */
		host_emit(i, RC_ACK, (x->epsn - 1) & ROCE_PSN_MASK, AETH_TYPE_ACK | AETH_ACK_UNLIMITED, NULL, 0);
		return;
	}
	assert_true(x->nres < NPKT);
	assert_int_equal(p.opcode, msg_op(x->nres, NPKT, sim_per)); /* in the order rxe demands */
	assert_int_equal(p.payload_len, ELEMS * 4);
	for (int j = 0; j < ELEMS; j++) {
		uint32_t w, want = 0;
		for (int r = 0; r < 4; r++)
			want += sval(r, x->nres, j);
		memcpy(&w, f + p.payload_off + 4 * j, 4);
		assert_int_equal(ntohl(w), want);
	}
	x->nres++;
	x->nak_sent = 0;
	h[i].msn++;
	x->epsn = (x->epsn + 1) & ROCE_PSN_MASK;
	host_emit(i, RC_ACK, p.psn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED, NULL, 0);
}

/* Is the root stalled at @t? Then until when. */
static uint64_t root_stalled_until(const struct scenario *sc, uint64_t t)
{
	if (!sc->stall_ns || t % sc->stall_every_ns >= sc->stall_ns)
		return 0;
	return t - t % sc->stall_every_ns + sc->stall_ns;
}

/* One 4 MiB AllReduce on the tree under scenario @sc; every result is checked. */
static struct sim_result run_sim(const struct scenario *sc)
{
	uint64_t next_tick = TICK_NS, stall_end = 0;
	int done = 0, parked = 0;

	memset(&res, 0, sizeof(res));
	memset(sh, 0, sizeof(sh));
	nheap = 0;
	nfree = POOL;
	for (int b = 0; b < POOL; b++)
		freebuf[b] = b;
	now_ns = evseq = 0;
	rng = sc->seed;
	for (int a = 0; a < NODES; a++)
		for (int b = 0; b < NODES; b++) {
			int sw_link = a < 3 && b < 3;
			link[a][b] = (struct link){ .prop_ns = sw_link ? 500000 : 100000,
						    .cap_ns = sw_link ? SOCK_FRAMES * FRAME_NS(1100) : UINT64_MAX / 2 };
			if (sw_link) {
				link[a][b].loss_ppm = sc->loss_ppm;
				link[a][b].reorder_ppm = sc->reorder_ppm;
				link[a][b].dup_ppm = sc->dup_ppm;
			}
		}
	build_tree(1024, 200000000, HOST_PSN, UP_PSN, DOWN_PSN, sim_tx); /* the lab's rules */
	for (int i = 0; i < 4; i++)
		sh[i].epsn = 7;
	for (int i = 0; i < 4; i++)
		host_send(i);
	while (now_ns < 100 * 1000000000ull) {
		if (nheap && heap[0].t <= next_tick) { /* frames first, then the tick, as the daemon's loop */
			struct event ev = heap_pop();
			uint64_t until;
			now_ns = ev.t;
			if (ev.node == 0 && (until = root_stalled_until(sc, now_ns))) {
				/* the stalled root's socket buffer keeps SOCK_FRAMES, in order */
				if (until != stall_end) {
					stall_end = until;
					parked = 0;
				}
				if (parked++ < SOCK_FRAMES) {
					ev.t = until;
					ev.seq = evseq++;
					heap_push(ev);
				} else {
					res.overflow++;
					freebuf[nfree++] = ev.buf;
				}
				continue;
			}
			if (ev.node < 3) {
				sw_engine_rx(sw[ev.node], pool[ev.buf], ev.len, now_ns);
				/* the daemon ends a batch when nothing more is waiting */
				if (!nheap || heap[0].t > now_ns || heap[0].node != ev.node)
					sw_engine_tick(sw[ev.node], now_ns);
			} else
				host_rx(ev.node - 3, pool[ev.buf], ev.len);
			freebuf[nfree++] = ev.buf;
		} else {
			now_ns = next_tick;
			next_tick += TICK_NS;
			for (int s = 0; s < 3; s++)
				if (s || !root_stalled_until(sc, now_ns))
					sw_engine_tick(sw[s], now_ns);
			for (int i = 0; i < 4; i++)
				if (sh[i].una < sh[i].next && now_ns - sh[i].last_progress >= HOST_TIMEOUT_NS) {
					sh[i].resent += sh[i].next - sh[i].una;
					sh[i].next = sh[i].una;
					sh[i].last_progress = now_ns;
				}
		}
		for (int i = 0; i < 4; i++)
			host_send(i);
		if (!done && sh[0].nres == NPKT && sh[1].nres == NPKT && sh[2].nres == NPKT && sh[3].nres == NPKT) {
			done = 1;
			res.done_ns = now_ns;
		}
		if (done && !nheap && !sw_engine_busy_slots(sw[0]) && !sw_engine_busy_slots(sw[1]) &&
		    !sw_engine_busy_slots(sw[2]))
			break;
	}
	assert_true(done);
	for (int s = 0; s < 3; s++) {
		const struct sw_counters *c = sw_engine_counters(sw[s]);
		assert_int_equal(sw_engine_busy_slots(sw[s]), 0); /* every result acknowledged everywhere */
		assert_int_equal(c->drop_mismatch + c->drop_bad_imm + c->drop_bad_op + c->fatal_naks_rx, 0);
		res.retransmits += c->retransmits;
		res.drop_seq += c->drop_seq;
		res.naks_tx += c->naks_tx;
		res.naks_ignored += c->naks_ignored;
		res.timeouts += c->timeouts;
		res.held += c->ooo_held;
		sw_engine_free(sw[s]);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sh[i].nres, NPKT);
		assert_int_equal(sh[i].una, NPKT);
		res.host_resent += sh[i].resent;
	}
	printf("tree sim %-34s %7.1f ms; dropped %5llu + %5llu overflowed, %4llu reordered, %3llu duplicated; "
	       "switches: %5llu retransmits, %5llu out-of-sequence drops, %4llu held, %4llu NAKs (%llu ignored), "
	       "%3llu timeouts\n",
	       sc->name, res.done_ns / 1e6, (unsigned long long)res.lost, (unsigned long long)res.overflow,
	       (unsigned long long)res.reordered, (unsigned long long)res.duplicated, (unsigned long long)res.retransmits,
	       (unsigned long long)res.drop_seq, (unsigned long long)res.held, (unsigned long long)res.naks_tx,
	       (unsigned long long)res.naks_ignored, (unsigned long long)res.timeouts);
	return res;
}

/*
 * The storm must not come back. On switch<->switch links that lose, reorder
 * and duplicate frames (and with a root that stalls), the switches resend
 * about what the links lost, drop about nothing out of sequence, do not
 * overflow the peers' socket buffers themselves, and finish within a small
 * multiple of the lossless time. The engine before (go-back-N of everything
 * unacknowledged, one fixed timer, no window) resent 28 frames per frame the
 * 3% run lost, dropped 26,616 out of sequence, overflowed 24,363 and took
 * 13 to 25 times as long as the lossless run (switch/README.md has the
 * figures).
 *
 * The completion time is a figure, printed as a multiple of the lossless
 * run; what is asserted is only that it is no storm: STORM_SLOWDOWN lies
 * half-way (geometrically) between today's worst scenario (2.9 times, the
 * stalling root) and the storm's best (13 times), so a harmless change to
 * the engine's timing does not fail the test and a storm still does.
 */
#define STORM_SLOWDOWN 6
static void test_tree_lossy_links(void **state)
{
	static const struct scenario ideal = { "lossless:", 0, 0, 0, 0, 0, 1 };
	static const struct scenario lossy[] = {
		{ "3% lost, 2% reordered, 0.5% dup:", 30000, 20000, 5000, 0, 0, 0x9e3779b97f4a7c15ull },
		{ "5% lost, 5% reordered, 1% dup:", 50000, 50000, 10000, 0, 0, 0x2545f4914f6cdd1dull },
		{ "3% lost, root stalls 30 ms / 200:", 30000, 0, 0, 30000000, 200000000, 0xd1b54a32d192ed03ull },
	};
	struct sim_result base = run_sim(&ideal);

	assert_int_equal(base.retransmits + base.timeouts + base.drop_seq + base.overflow + base.host_resent, 0);
	for (size_t n = 0; n < sizeof(lossy) / sizeof(lossy[0]); n++) {
		struct sim_result r = run_sim(&lossy[n]);
		uint64_t lost = r.lost + r.overflow;

		assert_true(r.retransmits <= 2 * lost + 64);
		assert_true(r.drop_seq <= lost / 4);
		assert_true(r.overflow <= r.lost / 2 + 200);
		printf("tree sim %-34s %7.2f times the lossless run (fails above %d; the storm took 13 to 25)\n",
		       lossy[n].name, (double)r.done_ns / (double)base.done_ns, STORM_SLOWDOWN);
		assert_true(r.done_ns <= STORM_SLOWDOWN * base.done_ns);
		assert_int_equal(r.host_resent, 0); /* hosts' links are clean: no host ever goes back */
	}
}

/* The same over the same links with the hosts' packets in messages of 16: results mirror them. */
static void test_tree_lossy_links_messages(void **state)
{
	sim_per = 16;
	test_tree_lossy_links(state);
	sim_per = 1;
}


/*
 * ---- Any tree, from a topology file through the controller's plan ---------
 *
 * gt_build() loads a topology, plans a communicator of some of its hosts
 * (plan_make(), with different first PSNs for hosts and switch links, as
 * incctl draws them), parses each switch's rules (sw_rules_parse()) and
 * starts an engine on them. A frame a switch sends on a port goes to the
 * node that port's name ("to-NODE") leads to: another engine, or a host of
 * the communicator, which takes its results in order and ACKs each one, as
 * rxe does. Nothing is lost: gt_pump() delivers until the tree is quiet.
 */
#define GT_FRAMES 32768
#define GT_MAX_RANKS 16
#define GT_MAX_RES 64
#define GT_ELEMS 256             /* elements of a full packet (1 KiB) */
#define GT_HOST_PSN 0xfffff5u    /* hosts' PSNs wrap during the runs ... */
#define GT_LINK_PSN 0x3a0c63u    /* ... the links' start elsewhere, 3 slots apart of 8 */
#define GT_QPN0 0x51             /* rank r's queue pair: GT_QPN0 + r */

struct gframe { int from, to; size_t len; uint8_t d[1100]; };
struct gswitch {
	int node;
	struct sw_rules r;
	struct sw_engine *e;
	int peer[SW_MAX_CHILDREN]; /* the node each port of the rules leads to */
};
struct grank {
	int node;
	uint32_t ip, qpn, sw_ip, sw_qpn;
	int leaf;
	uint32_t spsn, epsn, msn;
	int nres, sent, rnr, naks, dups;
	int hi;                  /* packets sent: 1 + the highest index (PSN - GT_HOST_PSN) */
	int next, una;           /* gt_pipelined(): the next packet to send, the oldest not acknowledged */
	uint8_t op[GT_MAX_RES];
	uint32_t imm[GT_MAX_RES];
	uint16_t len[GT_MAX_RES];
	uint8_t res[GT_MAX_RES][SW_MTU];
};
static struct {
	struct topology *t;
	struct plan pl;
	int nsw, nranks;
	struct gswitch sw[TOPO_MAX_NODES];
	struct grank rk[GT_MAX_RANKS];
	int sw_of[TOPO_MAX_NODES], rank_of[TOPO_MAX_NODES];
	long ack_down[TOPO_MAX_NODES]; /* the last ACK a node had from its parent (PSN), -1: none */
	int keep_results;              /* 0: count results without keeping them (long runs) */
	int pipelined;                 /* gt_pipelined(): hosts follow ACKs and NAKs, results checked as they come */
	int npkt, per;                 /* ... its packets, and per message */
} G;
static struct gframe gq[GT_FRAMES];
static int gqn;
static uint32_t gval(int r, int k, int j);
static uint32_t word_at(const uint8_t *p, int j);

/* hs_transmit(), when set: frames go over simulated links in simulated time (hs_run()), not into gq[] */
static void (*gt_sim_tx)(int from, int to, const uint8_t *f, size_t len);

static void gt_tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	struct gswitch *x = ctx;

	assert_true(port >= 0 && port < x->r.nports);
	if (gt_sim_tx) {
		gt_sim_tx(x->node, x->peer[port], f, len);
		return;
	}
	assert_true(gqn < GT_FRAMES);
	assert_true(len <= sizeof(gq[0].d));
	gq[gqn] = (struct gframe){ .from = x->node, .to = x->peer[port], .len = len };
	memcpy(gq[gqn].d, f, len);
	gqn++;
}

/* gt_host_frame() - rank @r sends a frame to its leaf: a SEND of @op at its next PSN, or an ACK of @psn. */
static void gt_host_frame(int r, uint8_t op, uint32_t psn, uint32_t imm_, const void *data, size_t len)
{
	struct grank *x = &G.rk[r];
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = x->ip, .dst_ip = x->sw_ip,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = op, .ack_req = 1,
				.dest_qp = x->sw_qpn, .psn = op == RC_ACK ? psn : x->spsn,
				.has_imm = roce_opcode_has_imm(op), .imm = imm_, .payload = data, .payload_len = len,
				.has_aeth = op == RC_ACK, .syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED, .msn = x->msn };

	assert_true(gqn < GT_FRAMES);
	if (op != RC_ACK) {
		int k = (int)((x->spsn - GT_HOST_PSN) & ROCE_PSN_MASK);
		x->hi = k + 1 > x->hi ? k + 1 : x->hi;
		x->spsn = (x->spsn + 1) & ROCE_PSN_MASK;
		x->sent++;
	}
	gq[gqn].from = x->node;
	gq[gqn].to = x->leaf;
	gq[gqn].len = roce_build_frame(gq[gqn].d, sizeof(gq[gqn].d), &b);
	gqn++;
}

/* gt_host_rx() - rank @r gets a frame from its leaf: an answer to its SENDs, or its next result. */
static void gt_host_rx(int r, const uint8_t *f, size_t len)
{
	struct grank *x = &G.rk[r];
	struct roce_pkt p;

	assert_int_equal(roce_parse(f, len, &p), ROCE_OK);
	assert_true(roce_icrc_ok(f, len));
	assert_int_equal(p.dest_qp, x->qpn);
	assert_int_equal(p.src_ip, x->sw_ip);
	assert_int_equal(p.dst_ip, x->ip);
	if (p.opcode == RC_ACK) {
		uint8_t type = p.syndrome & AETH_TYPE_MASK;
		int k = (int)((p.psn - GT_HOST_PSN) & ROCE_PSN_MASK);
		if (type == AETH_TYPE_ACK) /* never of a PSN not sent */
			assert_true(k < x->hi);
		x->rnr += type == AETH_TYPE_RNR_NAK;
		x->naks += type == AETH_TYPE_NAK;
		if (G.pipelined && type == AETH_TYPE_ACK && k + 1 > x->una)
			x->una = k + 1;
		if (G.pipelined && type != AETH_TYPE_ACK) { /* RNR NAK or sequence NAK: go back to its PSN, as rxe */
			assert_true(type == AETH_TYPE_RNR_NAK || p.syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ));
			assert_true(k <= x->hi);
			x->una = k > x->una ? k : x->una;
			x->next = x->una;
		}
		return;
	}
	if (p.psn != x->epsn) { /* a duplicate: re-ACK what it has */
		assert_true(roce_psn_diff(p.psn, x->epsn) < 0);
		x->dups++;
		gt_host_frame(r, RC_ACK, (x->epsn - 1) & ROCE_PSN_MASK, 0, NULL, 0);
		return;
	}
	assert_true(p.payload_len <= SW_MTU);
	if (G.pipelined) { /* packet nres of the AllReduce: its sums, in the opcode it was sent with */
		assert_true(x->nres < G.npkt);
		assert_int_equal(p.opcode, msg_op((uint32_t)x->nres, (uint32_t)G.npkt, (uint32_t)G.per));
		assert_int_equal(p.payload_len, GT_ELEMS * 4);
		for (int j = 0; j < GT_ELEMS; j++) {
			uint32_t want = 0;
			for (int i = 0; i < G.nranks; i++)
				want += gval(i, x->nres, j);
			assert_int_equal(word_at(f + p.payload_off, j), want);
		}
	}
	if (G.keep_results) {
		assert_true(x->nres < GT_MAX_RES);
		x->op[x->nres] = p.opcode;
		x->imm[x->nres] = p.has_imm ? p.imm : 0;
		x->len[x->nres] = (uint16_t)p.payload_len;
		memcpy(x->res[x->nres], f + p.payload_off, p.payload_len);
	}
	x->nres++;
	x->epsn = (x->epsn + 1) & ROCE_PSN_MASK;
	if (p.opcode != RC_SEND_FIRST && p.opcode != RC_SEND_MIDDLE)
		x->msn++;
	gt_host_frame(r, RC_ACK, p.psn, 0, NULL, 0);
}

/*
 * gt_pump() - deliver every frame, then end the round on every switch, until
 * quiet: a round that delivered nothing from a host sends the ACKs still
 * owed to it (sw_engine_tick()), so the tree is quiet only after two rounds
 * in a row sent nothing.
 */
static void gt_pump(void)
{
	int quiet = 0;

	while (quiet < 2) {
		for (int k = 0; k < gqn; k++) { /* gqn grows as frames are answered */
			struct gframe *f = &gq[k];
			struct roce_pkt p;

			if (G.t->nodes[f->to].parent == f->from && roce_parse(f->d, f->len, &p) == ROCE_OK &&
			    p.opcode == RC_ACK && (p.syndrome & AETH_TYPE_MASK) == AETH_TYPE_ACK)
				G.ack_down[f->to] = p.psn;
			if (G.sw_of[f->to] >= 0)
				sw_engine_rx(G.sw[G.sw_of[f->to]].e, f->d, f->len, 0);
			else if (G.rank_of[f->to] >= 0)
				gt_host_rx(G.rank_of[f->to], f->d, f->len);
			else
				fail_msg("a frame from node %s to %s, which is not in the communicator",
					 G.t->nodes[f->from].name, G.t->nodes[f->to].name);
		}
		gqn = 0;
		for (int s = 0; s < G.nsw; s++)
			sw_engine_tick(G.sw[s].e, 0);
		quiet = gqn ? 0 : quiet + 1;
	}
}

/*
 * gt_build() - the tree of topology file @path for a communicator of the
 * hosts @hosts (names, in rank order; NULL: every host by its rank), @nslots
 * slots per switch. Hosts start at GT_HOST_PSN, switch links at GT_LINK_PSN.
 */
static void gt_build_pp(const char *path, const char *const *hosts, const struct plan_params *pp);

static void gt_build(const char *path, const char *const *hosts, unsigned nslots)
{
	struct plan_params pp = { .comm = 9, .host_psn = GT_HOST_PSN, .link_psn = GT_LINK_PSN, .nslots = nslots,
				  .retransmit_us = 1000, .rnr_timer = 1 };

	gt_build_pp(path, hosts, &pp);
}

/* gt_build_pp() - gt_build() with the controller's parameters @pp (first PSNs, slots, timers). */
static void gt_build_pp(const char *path, const char *const *hosts, const struct plan_params *pp)
{
	struct plan_rank_in in[GT_MAX_RANKS];
	char err[256];

	memset(&G, 0, sizeof(G));
	gqn = 0;
	G.keep_results = 1;
	G.t = topo_load(path, stderr);
	assert_non_null(G.t);
	for (int n = 0; n < TOPO_MAX_NODES; n++) {
		G.sw_of[n] = G.rank_of[n] = -1;
		G.ack_down[n] = -1;
	}
	for (int n = 0; n < G.t->nnodes; n++) {
		int r = -1;
		if (G.t->nodes[n].role != TOPO_HOST)
			continue;
		if (!hosts)
			r = G.t->nodes[n].rank;
		for (int i = 0; hosts && hosts[i]; i++)
			if (!strcmp(hosts[i], G.t->nodes[n].name))
				r = i;
		if (r < 0)
			continue;
		assert_true(r < GT_MAX_RANKS);
		G.rank_of[n] = r;
		G.rk[r].node = n;
		G.rk[r].ip = G.t->nodes[n].ports[0].addr.addr;
		G.rk[r].qpn = GT_QPN0 + (uint32_t)r;
		G.rk[r].spsn = G.rk[r].epsn = pp->host_psn;
		in[r] = (struct plan_rank_in){ G.rk[r].ip, G.rk[r].qpn };
		G.nranks = r + 1 > G.nranks ? r + 1 : G.nranks;
	}
	if (plan_make(G.t, pp, in, G.nranks, &G.pl, err, sizeof(err)) < 0)
		fail_msg("%s: plan: %s", path, err);
	for (int r = 0; r < G.nranks; r++) {
		G.rk[r].sw_ip = G.pl.rank[r].switch_ip;
		G.rk[r].sw_qpn = G.pl.rank[r].switch_qpn;
		G.rk[r].leaf = G.pl.rank[r].leaf;
	}
	G.nsw = G.pl.nswitches;
	for (int s = 0; s < G.nsw; s++) {
		struct gswitch *x = &G.sw[s];
		x->node = G.pl.sw[s].node;
		G.sw_of[x->node] = s;
		if (sw_rules_parse(G.pl.sw[s].rules, strlen(G.pl.sw[s].rules), "plan", &x->r, stderr) < 0)
			fail_msg("%s: the rules of %s do not parse:\n%s", path, G.t->nodes[x->node].name, G.pl.sw[s].rules);
		for (int p = 0; p < x->r.nports; p++) {
			assert_memory_equal(x->r.port[p], "to-", 3);
			x->peer[p] = topo_find(G.t, x->r.port[p] + 3);
			assert_true(x->peer[p] >= 0);
		}
		assert_non_null(x->e = sw_engine_new(&x->r.cfg, gt_tx, x));
	}
}

/* gt_free() - every switch idle and clean; release the tree. */
static void gt_free(void)
{
	for (int s = 0; s < G.nsw; s++) {
		const struct sw_counters *c = sw_engine_counters(G.sw[s].e);
		if (sw_engine_busy_slots(G.sw[s].e) || c->drop_mismatch || c->drop_bad_imm || c->drop_bad_op ||
		    c->drop_unknown_qp || c->fatal_naks_rx ||
		    (!G.pipelined && (c->drop_seq || c->rnr_naks_tx || c->naks_tx)))
			fail_msg("%s: switch %s: %u slots busy, %llu mismatched, %llu out of sequence, %llu bad imm, %llu bad "
				 "op, %llu unknown QP, %llu RNR NAKs, %llu NAKs, %llu fatal NAKs",
				 G.t->name, G.t->nodes[G.sw[s].node].name, sw_engine_busy_slots(G.sw[s].e),
				 (unsigned long long)c->drop_mismatch, (unsigned long long)c->drop_seq,
				 (unsigned long long)c->drop_bad_imm, (unsigned long long)c->drop_bad_op,
				 (unsigned long long)c->drop_unknown_qp, (unsigned long long)c->rnr_naks_tx,
				 (unsigned long long)c->naks_tx, (unsigned long long)c->fatal_naks_rx);
		sw_engine_free(G.sw[s].e);
	}
	for (int r = 0; r < G.nranks; r++)
		assert_int_equal(G.rk[r].dups + (G.pipelined ? 0 : G.rk[r].rnr + G.rk[r].naks), 0);
	plan_free(&G.pl);
	topo_free(G.t);
	G.t = NULL;
}

static uint32_t gimm(enum inc_prim p, enum inc_op op, enum inc_dtype t, uint16_t dest)
{
	struct inc_imm m = { dest, p, op, t };
	return inc_imm_encode(&m);
}

/* Rank r's int32 element j of packet k: distinct per rank, sums wrap. */
static uint32_t gval(int r, int k, int j)
{
	return (uint32_t)(r + 1) * 2654435761u * (uint32_t)(k + 3) + (uint32_t)j * 40503u * (uint32_t)(r + 7);
}

/* Rank r's float32 element j of packet k: ordinary values of both signs. */
static float gfloat(int r, int k, int j)
{
	return (float)((r * 7 + j * 3 + k * 5) % 41 - 20) * 0.37f;
}

static uint32_t word_at(const uint8_t *p, int j)
{
	uint32_t w;
	memcpy(&w, p + 4 * j, 4);
	return ntohl(w);
}

/* gt_clear() - forget the results the ranks have taken. */
static void gt_clear(void)
{
	for (int r = 0; r < G.nranks; r++)
		G.rk[r].nres = 0;
}

/* dsmall() - rank @r's element @j for dtype @t in gt_collectives(): a small integer, -5..5 (0..10 unsigned). */
static double dsmall(int r, int t, size_t j)
{
	int v = (int)((r * 5 + (int)j * 3 + t) % 11) - 5;

	return t == INC_UINT32 || t == INC_UINT64 ? v + 5 : v;
}

/* dbits() - the host-order bits of the integer value @x (exact) in dtype @t. */
static uint64_t dbits(enum inc_dtype t, double x)
{
	switch (t) {
	case INC_FLOAT16: return inc_f32_to_f16((float)x);
	case INC_BFLOAT16: return inc_f32_to_bf16((float)x);
	case INC_FLOAT32: return inc_f32_bits((float)x);
	case INC_FLOAT64: return inc_f64_bits(x);
	case INC_INT32:
	case INC_UINT32: return (uint32_t)(int32_t)x;
	default: return (uint64_t)(int64_t)x;
	}
}

/* put_be() - @w-byte element @v at @p, big-endian. */
static void put_be(uint8_t *p, uint64_t v, size_t w)
{
	for (size_t b = 0; b < w; b++)
		p[b] = (uint8_t)(v >> (8 * (w - 1 - b)));
}

/*
 * gt_collectives() - on the tree gt_build() made: an AllReduce int32 SUM of
 * 20 packets in messages of 4 (more packets than the 8 slots; the hosts'
 * PSNs wrap), an AllReduce float32 MAX, an AllReduce SUM and MIN of every
 * dtype, a Reduce int32 SUM to every rank, a
 * Broadcast from every rank, the per-block collectives of hostlib/coll.c
 * (AllGather: a Broadcast per block; ReduceScatter: a Reduce per block to its
 * owner; AllToAll: a Route per pair), a Barrier entered rank by rank. Ranks send each
 * packet in a turning order; every result is checked against what is
 * computed here from the inputs, and in the end every rank was acknowledged
 * all it sent, in its own PSNs, and every switch is idle.
 */
static void gt_collectives(void)
{
	const int n = G.nranks, packets = 20, per = 4;
	uint32_t buf[GT_ELEMS];
	int sent = 0;

	for (int k = 0; k < packets; k++) {
		int elems = k == packets - 1 ? 5 : GT_ELEMS; /* FIRST and MIDDLE carry a whole MTU */
		for (int o = 0; o < n; o++) {
			int r = (o + 3 * k) % n;
			for (int j = 0; j < elems; j++)
				buf[j] = htonl(gval(r, k, j));
			gt_host_frame(r, msg_op((uint32_t)k, (uint32_t)packets, per), 0,
				      gimm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf, (size_t)elems * 4);
		}
		gt_pump();
	}
	sent += packets;
	for (int r = 0; r < n; r++) {
		assert_int_equal(G.rk[r].nres, packets);
		for (int k = 0; k < packets; k++) {
			int elems = k == packets - 1 ? 5 : GT_ELEMS;
			assert_int_equal(G.rk[r].op[k], msg_op((uint32_t)k, (uint32_t)packets, per));
			assert_int_equal(G.rk[r].len[k], elems * 4);
			for (int j = 0; j < elems; j++) {
				uint32_t want = 0;
				for (int i = 0; i < n; i++)
					want += gval(i, k, j);
				assert_int_equal(word_at(G.rk[r].res[k], j), want);
			}
		}
	}
	gt_clear();

	/* AllReduce float32 MAX, 3 packets of 7 elements */
	for (int k = 0; k < 3; k++) {
		for (int r = n - 1; r >= 0; r--) {
			for (int j = 0; j < 7; j++) {
				float f = gfloat(r, k, j);
				memcpy(&buf[j], &f, 4);
				buf[j] = htonl(buf[j]);
			}
			gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_ALLREDUCE, INC_OP_MAX, INC_FLOAT32, INC_RANK_ALL),
				      buf, 28);
		}
		gt_pump();
	}
	sent += 3;
	for (int r = 0; r < n; r++) {
		assert_int_equal(G.rk[r].nres, 3);
		for (int k = 0; k < 3; k++)
			for (int j = 0; j < 7; j++) {
				float want = gfloat(0, k, j), got;
				uint32_t w = word_at(G.rk[r].res[k], j);
				for (int i = 1; i < n; i++)
					want = gfloat(i, k, j) > want ? gfloat(i, k, j) : want;
				memcpy(&got, &w, 4);
				assert_true(got == want);
			}
	}
	gt_clear();

	/* AllReduce SUM and MIN of every dtype, one full packet (1024 / width elements) each:
	 * small integers, so every sum is exact and computed here in double */
	for (int t = 0; t < INC_NDTYPES; t++)
		for (int op = INC_OP_SUM; op <= INC_OP_MIN; op += INC_OP_MIN - INC_OP_SUM) {
			size_t w = inc_dtype_size((enum inc_dtype)t), ne = 1024 / w;
			uint8_t bytes[1024];
			for (int r = 0; r < n; r++) {
				for (size_t j = 0; j < ne; j++)
					put_be(bytes + j * w, dbits((enum inc_dtype)t, dsmall(r, t, j)), w);
				gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0,
					      gimm(INC_ALLREDUCE, (enum inc_op)op, (enum inc_dtype)t, INC_RANK_ALL), bytes, 1024);
			}
			gt_pump();
			sent++;
			for (int r = 0; r < n; r++) {
				assert_int_equal(G.rk[r].nres, 1);
				assert_int_equal(G.rk[r].len[0], 1024);
				for (size_t j = 0; j < ne; j++) {
					double want = dsmall(0, t, j);
					for (int i = 1; i < n; i++)
						want = op == INC_OP_SUM ? want + dsmall(i, t, j)
									: (dsmall(i, t, j) < want ? dsmall(i, t, j) : want);
					uint64_t got = 0;
					for (size_t b = 0; b < w; b++)
						got = got << 8 | G.rk[r].res[0][j * w + b];
					if (got != dbits((enum inc_dtype)t, want))
						fail_msg("%s %s element %zu of rank %d: 0x%llx, want %g", inc_dtype_name((enum inc_dtype)t),
							 inc_op_name((enum inc_op)op), j, r, (unsigned long long)got, want);
				}
			}
			gt_clear();
		}

	/* Reduce int32 SUM to each rank in turn: only the root takes the result */
	for (int root = 0; root < n; root++) {
		for (int r = 0; r < n; r++) {
			for (int j = 0; j < 16; j++)
				buf[j] = htonl(gval(r, 100 + root, j));
			gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_REDUCE, INC_OP_SUM, INC_INT32, (uint16_t)root), buf,
				      64);
		}
		gt_pump();
		for (int r = 0; r < n; r++)
			assert_int_equal(G.rk[r].nres, r == root ? 1 : 0);
		for (int j = 0; j < 16; j++) {
			uint32_t want = 0;
			for (int i = 0; i < n; i++)
				want += gval(i, 100 + root, j);
			assert_int_equal(word_at(G.rk[root].res[0], j), want);
		}
		gt_clear();
	}
	sent += n;

	/* Broadcast from each rank in turn: everyone else takes the root's data */
	for (int root = 0; root < n; root++) {
		char msg[40];
		snprintf(msg, sizeof(msg), "broadcast from rank %2d of %2d, tree", root, n);
		for (int r = n - 1; r >= 0; r--)
			gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_BROADCAST, INC_OP_SUM, INC_INT32, (uint16_t)root),
				      r == root ? msg : NULL, r == root ? sizeof(msg) : 0);
		gt_pump();
		for (int r = 0; r < n; r++) {
			assert_int_equal(G.rk[r].nres, r == root ? 0 : 1);
			if (r != root) {
				assert_int_equal(G.rk[r].len[0], sizeof(msg));
				assert_memory_equal(G.rk[r].res[0], msg, sizeof(msg));
			}
		}
		gt_clear();
	}
	sent += n;

	/* AllGather as hostlib/coll.c runs it: block b (2 packets) a Broadcast from rank b; every rank
	 * assembles all blocks, its own kept, and must hold every rank's block */
	for (int b = 0; b < n; b++) {
		for (int k = 0; k < 2; k++) {
			for (int r = n - 1; r >= 0; r--) {
				for (int j = 0; j < GT_ELEMS; j++)
					buf[j] = htonl(gval(b, 200 + k, j));
				gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0,
					      gimm(INC_BROADCAST, INC_OP_SUM, INC_INT32, (uint16_t)b), r == b ? buf : NULL,
					      r == b ? sizeof(buf) : 0);
			}
			gt_pump();
		}
		for (int r = 0; r < n; r++) {
			assert_int_equal(G.rk[r].nres, r == b ? 0 : 2);
			for (int k = 0; r != b && k < 2; k++)
				for (int j = 0; j < GT_ELEMS; j++)
					assert_int_equal(word_at(G.rk[r].res[k], j), gval(b, 200 + k, j));
		}
		gt_clear();
	}
	sent += 2 * n;

	/* ReduceScatter: block b (every rank's elements of block b) a Reduce to rank b; only rank b
	 * takes it, the sum over every rank of block b's inputs */
	for (int b = 0; b < n; b++) {
		for (int r = 0; r < n; r++) {
			for (int j = 0; j < GT_ELEMS; j++)
				buf[j] = htonl(gval(r, 300 + b, j));
			gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_REDUCE, INC_OP_SUM, INC_INT32, (uint16_t)b), buf,
				      sizeof(buf));
		}
		gt_pump();
		for (int r = 0; r < n; r++)
			assert_int_equal(G.rk[r].nres, r == b ? 1 : 0);
		for (int j = 0; j < GT_ELEMS; j++) {
			uint32_t want = 0;
			for (int i = 0; i < n; i++)
				want += gval(i, 300 + b, j);
			assert_int_equal(word_at(G.rk[b].res[0], j), want);
		}
		gt_clear();
	}
	sent += n;

	/* AllToAll: a Route for every (source, destination) pair; only the destination takes the
	 * source's block, whatever leaf either is under */
	for (int src = 0; src < n; src++)
		for (int dst = 0; dst < n; dst++) {
			if (dst == src)
				continue;
			for (int r = 0; r < n; r++) {
				for (int j = 0; j < 9; j++)
					buf[j] = htonl(gval(src, 400 + dst, j));
				gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_ROUTE, INC_OP_SUM, INC_INT32, (uint16_t)dst),
					      r == src ? buf : NULL, r == src ? 36 : 0);
			}
			gt_pump();
			for (int r = 0; r < n; r++)
				assert_int_equal(G.rk[r].nres, r == dst ? 1 : 0);
			assert_int_equal(G.rk[dst].len[0], 36);
			for (int j = 0; j < 9; j++)
				assert_int_equal(word_at(G.rk[dst].res[0], j), gval(src, 400 + dst, j));
			gt_clear();
			sent++;
		}

	/* Barrier: ranks enter one by one (the last first); nobody hears back before the last */
	for (int o = 0; o < n; o++) {
		gt_host_frame(n - 1 - o, RC_SEND_ONLY_WITH_IMM, 0,
			      gimm(INC_ALLREDUCE, INC_OP_BARRIER, INC_INT32, INC_RANK_ALL), NULL, 0);
		gt_pump();
		for (int r = 0; r < n; r++)
			assert_int_equal(G.rk[r].nres, o == n - 1 ? 1 : 0);
	}
	sent += 1;
	for (int r = 0; r < n; r++) {
		assert_int_equal(G.rk[r].len[0], 0);
		assert_int_equal(G.rk[r].sent, sent);
		/* acknowledged up to its last SEND, in the hosts' PSNs */
		assert_int_equal(G.ack_down[G.rk[r].node], (GT_HOST_PSN + sent - 1) & ROCE_PSN_MASK);
	}
	gt_clear();
}

/* gt_file() - a tree given as text, written to a new temporary file (remove() it after use). */
static const char *gt_file(const char *yaml)
{
	static char path[32];
	int fd;
	FILE *f;

	strcpy(path, "/tmp/test_tree-XXXXXX");
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs(yaml, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

#ifndef TOPOLOGY_DIR
#define TOPOLOGY_DIR "topology"
#endif

/* The brief's smallest mixed tree: sw0 over sw1 (pku1, pku2) and pku3. */
static const char tree_1_2_2[] =
	"name: 1-2-2\nroot: sw0\nmanagement: 192.168.0.0/16\nnodes:\n"
	"  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"
	"  - {name: sw0, role: switch, mgmt: 192.168.0.19}\n"
	"  - {name: sw1, role: switch, mgmt: 192.168.0.20}\n"
	"  - {name: pku1, role: host, rank: 0, mgmt: 192.168.0.101}\n"
	"  - {name: pku2, role: host, rank: 1, mgmt: 192.168.0.102}\n"
	"  - {name: pku3, role: host, rank: 2, mgmt: 192.168.0.103}\n"
	"links:\n"
	"  - {sw0: 172.16.0.1/16, sw1: 172.16.0.5/16}\n"
	"  - {sw0: 10.0.1.1/24, pku3: 10.0.1.7/24}\n"
	"  - {sw1: 10.1.1.1/24, pku1: 10.1.1.21/24}\n"
	"  - {sw1: 10.1.1.1/24, pku2: 10.1.1.5/24}\n";

/*
 * Uneven everywhere: the root's children are a host, a switch, a switch and
 * a host; sw1 has a host, a switch and a host (fan-in 3), sw3 only a switch,
 * sw4 only a host; hosts at depths 1 to 3.
 *
 *   sw0: h1, sw1 (h2, sw2 (h3, h4), h5), sw3 (sw4 (h6)), h7
 */
static const char tree_uneven[] =
	"name: uneven\nroot: sw0\nmanagement: 192.168.0.0/16\nnodes:\n"
	"  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"
	"  - {name: sw0, role: switch, mgmt: 192.168.0.19}\n"
	"  - {name: sw1, role: switch, mgmt: 192.168.0.20}\n"
	"  - {name: sw2, role: switch, mgmt: 192.168.0.21}\n"
	"  - {name: sw3, role: switch, mgmt: 192.168.0.22}\n"
	"  - {name: sw4, role: switch, mgmt: 192.168.0.23}\n"
	"  - {name: h1, role: host, rank: 0, mgmt: 192.168.1.1}\n"
	"  - {name: h2, role: host, rank: 1, mgmt: 192.168.1.2}\n"
	"  - {name: h3, role: host, rank: 2, mgmt: 192.168.1.3}\n"
	"  - {name: h4, role: host, rank: 3, mgmt: 192.168.1.4}\n"
	"  - {name: h5, role: host, rank: 4, mgmt: 192.168.1.5}\n"
	"  - {name: h6, role: host, rank: 5, mgmt: 192.168.1.6}\n"
	"  - {name: h7, role: host, rank: 6, mgmt: 192.168.1.7}\n"
	"links:\n"
	"  - {sw0: 10.0.1.1/24, h1: 10.0.1.2/24}\n"
	"  - {sw0: 172.16.1.1/24, sw1: 172.16.1.2/24}\n"
	"  - {sw0: 172.16.3.1/24, sw3: 172.16.3.2/24}\n"
	"  - {sw0: 10.0.7.1/24, h7: 10.0.7.2/24}\n"
	"  - {sw1: 10.1.1.1/24, h2: 10.1.1.2/24}\n"
	"  - {sw1: 172.17.2.1/24, sw2: 172.17.2.2/24}\n"
	"  - {sw1: 10.1.5.1/24, h5: 10.1.5.2/24}\n"
	"  - {sw2: 10.2.1.1/24, h3: 10.2.1.3/24}\n"
	"  - {sw2: 10.2.1.1/24, h4: 10.2.1.4/24}\n"
	"  - {sw3: 172.17.4.1/24, sw4: 172.17.4.2/24}\n"
	"  - {sw4: 10.4.1.1/24, h6: 10.4.1.6/24}\n";

/* gt_run() - every collective on the tree of @path over @hosts (NULL: all), then the checks of gt_free(). */
static void gt_run(const char *path, const char *const *hosts)
{
	gt_build(path, hosts, 8);
	gt_collectives();
	printf("any tree: %-28s %2d ranks, %d switches: every collective right on every rank\n", G.t->name, G.nranks,
	       G.nsw);
	gt_free();
}

/* A root whose children are all hosts (1-2), all switches (1-2-4, 1-4-16). */
static void test_any_tree_uniform(void **state)
{
	gt_run(TOPOLOGY_DIR "/1-2.yaml", NULL);
	gt_run(TOPOLOGY_DIR "/1-2-4.yaml", NULL);
	gt_run(TOPOLOGY_DIR "/1-4-16.yaml", NULL);
}

/* Switches with host and switch children: 1-2-2, the lab's 1-2-2-2, and the uneven tree. */
static void test_any_tree_mixed(void **state)
{
	const char *path = gt_file(tree_1_2_2);

	gt_run(path, NULL);
	remove(path);
	gt_run(TOPOLOGY_DIR "/1-2-2-2.yaml", NULL);
	path = gt_file(tree_uneven);
	gt_run(path, NULL);
	remove(path);
}

/* Communicators of some hosts of 1-2-2-2 and of the uneven tree: their tops and mixes differ. */
static void test_any_tree_sub_communicators(void **state)
{
	static const char *const sub[][8] = {
		{ "pku1", "pku2", "pku3" }, /* top sw1: a host and a switch */
		{ "pku2", "pku3", "pku4" }, /* top sw0: sw1 with one child (sw2), and a host */
		{ "pku1", "pku4" },         /* top sw0: sw1 with one host, and a host */
		{ "pku2", "pku3" },         /* top sw2: hosts only */
	};
	static const char *const sub_uneven[][8] = {
		{ "h2", "h3", "h4", "h5" },       /* top sw1 */
		{ "h1", "h6" },                   /* top sw0: a host and a chain of two switches */
		{ "h3", "h4", "h5", "h6", "h7" }, /* top sw0: sw1 (sw2 and a host), sw3, a host */
	};
	const char *path;

	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		gt_run(TOPOLOGY_DIR "/1-2-2-2.yaml", sub[i]);
	path = gt_file(tree_uneven);
	for (size_t i = 0; i < sizeof(sub_uneven) / sizeof(sub_uneven[0]); i++)
		gt_run(path, sub_uneven[i]);
	remove(path);
}

/*
 * gt_ahead() - a Broadcast from @root on 1-2-2-2 (1024 slots): the ranks in
 * @ahead send all 800 of its packets first, and the ACK that @held (a host
 * or a switch) then has from its parent must stop at the ceiling, 1023 - 256
 * PSNs past its first (@first: GT_HOST_PSN or GT_LINK_PSN), in its own
 * PSNs; then the others send 100 packets at a time, and everything completes.
 */
static void gt_ahead(int root, const int *ahead, int nahead, const char *held, uint32_t first)
{
	const int n = 800;
	uint32_t word = htonl(0x5eed0000u + (uint32_t)root);
	int in_ahead[GT_MAX_RANKS] = { 0 }, node;

	gt_build(TOPOLOGY_DIR "/1-2-2-2.yaml", NULL, 1024);
	G.keep_results = 0;
	node = topo_find(G.t, held);
	for (int a = 0; a < nahead; a++)
		in_ahead[ahead[a]] = 1;
	for (int k = 0; k < n; k++)
		for (int r = 0; r < G.nranks; r++)
			if (in_ahead[r])
				gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_BROADCAST, INC_OP_SUM, INC_INT32,
										   (uint16_t)root),
					      r == root ? &word : NULL, r == root ? 4 : 0);
	gt_pump();
	assert_int_equal(G.ack_down[node], (first + 1024 - 1 - 256) & ROCE_PSN_MASK);
	for (int done = 0; done < n; done += 100) {
		for (int k = 0; k < 100; k++)
			for (int r = 0; r < G.nranks; r++)
				if (!in_ahead[r])
					gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0,
						      gimm(INC_BROADCAST, INC_OP_SUM, INC_INT32, (uint16_t)root), NULL, 0);
		gt_pump();
	}
	assert_int_equal(G.ack_down[node], (first + n - 1) & ROCE_PSN_MASK);
	for (int r = 0; r < G.nranks; r++) {
		assert_int_equal(G.rk[r].nres, r == root ? 0 : n);
		assert_int_equal(G.ack_down[G.rk[r].node], (GT_HOST_PSN + n - 1) & ROCE_PSN_MASK);
	}
	printf("any tree: 1-2-2-2 Broadcast from rank %d, %s ran ahead: held at its first PSN + 767, then all %d "
	       "acknowledged\n", root, held, n);
	gt_free();
}

/*
 * A child that runs ahead is held back by its ACKs in its own PSNs, on a
 * switch whose first child starts elsewhere: pku4 (a host) under sw0, whose
 * first child is sw1 (a switch link); sw2 (a switch) under sw1, whose first
 * child is pku1 (a host).
 */
static void test_any_tree_ahead_held_in_own_psns(void **state)
{
	static const int pku4[] = { 3 }, under_sw2[] = { 1, 2 };

	gt_ahead(3, pku4, 1, "pku4", GT_HOST_PSN);
	gt_ahead(1, under_sw2, 2, "sw2", GT_LINK_PSN);
}

/*
 * gt_pipelined() - an AllReduce int32 SUM of @npkt full packets in messages
 * of 16 (libinccl's), every rank keeping up to 128 packets in flight (its
 * window, past what was acknowledged and past its results), on the tree of
 * @path with @nslots slots per switch: with fewer slots than the window,
 * switches answer busy slots with RNR NAKs and ranks go back, as rxe does,
 * also inside a message. Every result checked as it arrives.
 */
static void gt_pipelined(const char *path, int npkt, unsigned nslots)
{
	const int win = 128;
	uint32_t buf[GT_ELEMS];
	uint64_t rnr = 0;
	int rounds = 0, done = 0;

	gt_build(path, NULL, nslots);
	G.keep_results = 0;
	G.pipelined = 1;
	G.npkt = npkt;
	G.per = 16;
	while (!done) {
		assert_true(++rounds < 100000);
		for (int r = 0; r < G.nranks; r++) {
			struct grank *x = &G.rk[r];
			while (x->next < npkt && x->next - x->una < win && x->next - x->nres < win) {
				for (int j = 0; j < GT_ELEMS; j++)
					buf[j] = htonl(gval(r, x->next, j));
				x->spsn = (GT_HOST_PSN + (uint32_t)x->next) & ROCE_PSN_MASK;
				gt_host_frame(r, msg_op((uint32_t)x->next, (uint32_t)npkt, (uint32_t)G.per), 0,
					      gimm(INC_ALLREDUCE, INC_OP_SUM, INC_INT32, INC_RANK_ALL), buf, sizeof(buf));
				x->next++;
			}
		}
		gt_pump();
		done = 1;
		for (int r = 0; r < G.nranks; r++)
			done &= G.rk[r].nres == npkt && G.rk[r].una == npkt;
	}
	for (int s = 0; s < G.nsw; s++)
		rnr += sw_engine_counters(G.sw[s].e)->rnr_naks_tx;
	for (int r = 0; r < G.nranks; r++)
		assert_int_equal(G.ack_down[G.rk[r].node], (GT_HOST_PSN + npkt - 1) & ROCE_PSN_MASK);
	printf("any tree: %-28s AllReduce of %d packets, window %d, %u slots: right on all %d ranks in %d rounds, "
	       "%llu RNR NAKs\n", G.t->name, npkt, win, nslots, G.nranks, rounds, (unsigned long long)rnr);
	if (nslots < (unsigned)win)
		assert_true(rnr > 0); /* the back-pressure was exercised */
	gt_free();
}

/*
 * gt_float_sum() - on the tree of @path (every host), whose switches fold
 * children as tree spec @spec lists them (children by their lowest rank,
 * as the controller numbers a switch's children): an AllReduce float32 SUM
 * of 3 full packets of check_ref.c's ieee values (sums that round, NaN,
 * +-Inf, +-0, subnormals), the ranks sending in four orders (ascending,
 * descending, turning per packet, and every rank's packets before the
 * next rank's). Every rank of every order must get the same bits (NaN
 * payloads included), equal to cref_expect() on @spec (NaN as NaN).
 */
static void gt_float_sum(const char *path, const char *spec)
{
	enum { PKTS = 3, ORDERS = 4 };
	static struct cref_tree t;
	static uint8_t first[PKTS][SW_MTU];
	uint32_t buf[GT_ELEMS];
	char err[256];
	long rounding = 0;

	assert_int_equal(cref_tree_parse(spec, &t, err, sizeof(err)), 0);
	gt_build(path, NULL, 8);
	assert_int_equal(t.nranks, G.nranks);
	for (int o = 0; o < ORDERS; o++) {
		int n = G.nranks;
		for (int k = 0; k < PKTS; k++)
			for (int i = 0; i < n; i++) {
				/* packet by packet, the ranks in the order's turn; order 3: rank by rank, all its packets */
				int r = o == 0 ? i : o == 1 ? n - 1 - i : o == 2 ? (i + 5 * k) % n : (k * n + i) / PKTS;
				int kk = o == 3 ? (k * n + i) % PKTS : k;
				for (int j = 0; j < GT_ELEMS; j++)
					buf[j] = htonl(cref_input(CREF_IEEE, INCCL_FLOAT32, r, n, (size_t)kk * GT_ELEMS + (size_t)j));
				gt_host_frame(r, RC_SEND_ONLY_WITH_IMM, 0, gimm(INC_ALLREDUCE, INC_OP_SUM, INC_FLOAT32, INC_RANK_ALL),
					      buf, sizeof(buf));
				if (o == 2)
					gt_pump(); /* each frame through the tree before the next: the leaves' sums reach the root in turn */
			}
		gt_pump();
		for (int r = 0; r < n; r++) {
			assert_int_equal(G.rk[r].nres, PKTS);
			for (int k = 0; k < PKTS; k++) {
				assert_int_equal(G.rk[r].len[k], SW_MTU);
				if (o == 0 && r == 0)
					memcpy(first[k], G.rk[r].res[k], SW_MTU);
				else if (memcmp(first[k], G.rk[r].res[k], SW_MTU))
					fail_msg("%s: rank %d, order %d: packet %d is not the bits of rank 0 in order 0", G.t->name, r,
						 o, k);
			}
		}
		gt_clear();
	}
	for (int k = 0; k < PKTS; k++)
		for (int j = 0; j < GT_ELEMS; j++) {
			size_t i = (size_t)k * GT_ELEMS + (size_t)j;
			uint32_t want = cref_expect(&t, CREF_IEEE, INCCL_FLOAT32, INCCL_SUM, i), got = word_at(first[k], j);
			uint32_t flat = cref_input(CREF_IEEE, INCCL_FLOAT32, G.nranks - 1, G.nranks, i);
			if (!cref_same(INCCL_FLOAT32, got, want))
				fail_msg("%s: element %zu is 0x%08x, the reference in %s's order 0x%08x", G.t->name, i, got, spec,
					 want);
			for (int r = G.nranks - 2; r >= 0; r--) /* one switch, from the last rank down */
				flat = cref_combine(INCCL_FLOAT32, INCCL_SUM, flat, cref_input(CREF_IEEE, INCCL_FLOAT32, r, G.nranks, i));
			rounding += !cref_same(INCCL_FLOAT32, flat, want);
		}
	assert_true(rounding > 0); /* the values tell orders apart: another order would have shown */
	printf("any tree: %-28s float32 SUM in %d arrival orders: the same bits on every rank, those of %s (%ld of %d "
	       "elements differ in another order)\n", G.t->name, ORDERS, spec, rounding, PKTS * GT_ELEMS);
	gt_free();
}

/* A float SUM is the tree's order, bit for bit, whatever order the ranks' packets arrive in. */
static void test_any_tree_float_sum_in_child_order(void **state)
{
	gt_float_sum(TOPOLOGY_DIR "/1-2-4.yaml", "((0,1),(2,3))");
	gt_float_sum(TOPOLOGY_DIR "/1-4-16.yaml", "((0,1,2,3),(4,5,6,7),(8,9,10,11),(12,13,14,15))");
	gt_float_sum(TOPOLOGY_DIR "/1-2-2-2.yaml", "((0,(1,2)),3)");
}

/* Ranks that keep a window in flight, on mixed trees: slots reused under back-pressure (RNR NAKs, go-back). */
static void test_any_tree_pipelined(void **state)
{
	const char *path = gt_file(tree_uneven);

	gt_pipelined(TOPOLOGY_DIR "/1-2-2-2.yaml", 600, 1024);
	gt_pipelined(TOPOLOGY_DIR "/1-2-2-2.yaml", 600, 48);
	gt_pipelined(path, 600, 48);
	remove(path);
}

/*
 * ---- 1-4-16 in simulated time, with hosts that act like rxe and stall -----
 *
 * The whole 1-4-16 tree (the controller's plan, every switch's rules through
 * the parser, one engine per switch) with sixteen ranks that act like
 * libinccl over rdma_rxe: libinccl's window of 512 packets past what was
 * completed (and, where results are due, past the results), packet 0 alone
 * and then messages of 16, a completion per 64 packets; rxe's requester at
 * most RXE_MAX_UNACKED_PSNS past its oldest unacknowledged PSN, going back
 * to it on a sequence NAK, after an RNR NAK's delay (at least a jiffy) and
 * after its local ACK timeout (18: 1.07 s), retrying for ever (rnr_retry 7
 * and retry_cnt 7), one retry per ACK that made progress unless the timer
 * fired, the timer pushed back by every ACK or NAK that arrives (rxe_comp.c);
 * rxe's responder taking results in order, NAKing a gap once and re-ACKing
 * duplicates. Every node, hosts and switches, stalls at
 * random as a TCG guest or a loaded machine does (what reaches it meanwhile
 * waits, in order, up to HS_PARK_MAX frames; the rest is lost), and every
 * link loses frames at random, from a seeded xorshift: a run is the same
 * every time. The ranks run inccl_check's sequence for one count and dtype
 * (AllReduce and Reduce of each op, AllGather as a Broadcast per block,
 * ReduceScatter of each op as a Reduce per block to its owner, AllToAll as
 * a Route per pair and way, a Broadcast), in uint32, every
 * result checked as it comes; a rank without a completion for 60 s of
 * simulated time is the hang libinccl reports, and the test prints what each
 * rank and switch was doing.
 */
#define HS_WINDOW 512                   /* libinccl's default window (packets) */
#define HS_MESSAGE 16                   /* libinccl's packets per message after packet 0 */
#define HS_SIGNAL 64                    /* a completion per 64 packets: max(SIGNAL_EVERY, 4 messages), <= window / 2 */
#define RXE_MAX_UNACKED 128             /* RXE_MAX_UNACKED_PSNS: rxe sends at most 129 PSNs from its oldest unacked */
#define RXE_ACK_EVERY 64                /* RXE_MAX_PKT_PER_ACK: AckReq at least once per 64 packets, and at a message's end */
#define RXE_TIMEOUT_NS 1073741824ull    /* local ACK timeout 18: 4.096 us << 18 */
#define RXE_RNR_NS 4000000ull           /* rxe waits at least a jiffy after an RNR NAK (4 ms at HZ 250) */
#define HS_NO_PROGRESS_NS 60000000000ull /* libinccl: "no progress for 60000 ms" */
#define HS_NS_PER_BYTE 100ull           /* every link: 10 MB/s */
#define HS_PROP_NS 100000ull            /* and 0.1 ms on the way */
#define HS_TICK_NS 1000000ull           /* the switches' poll loop, and the hosts' timers */
#define HS_PARK_MAX 1024                /* frames a stalled node keeps queued; the rest is lost */
#define HS_ELEMS 256                    /* uint32 elements of a full packet */
#define HS_MAX_COLLS 1200

struct hs_coll {
	enum inc_prim prim;
	enum inc_op op;
	uint16_t dest;           /* root (Reduce, Broadcast), destination (Route), INC_RANK_ALL (AllReduce) */
	uint16_t src;            /* a Route's source */
	uint32_t count;          /* uint32 elements */
	uint32_t npk, base;      /* its packets, and its packet 0's index from the first PSN (the same on every rank) */
	const char *what;        /* as inccl_check names the call it belongs to */
};

struct hs_rank {
	int coll;                /* the collective libinccl runs (an index of H.coll; H.ncoll: all done) */
	uint32_t posted;         /* libinccl: packets posted, as an index from the first PSN */
	uint32_t sdone, rdone;   /* ... this collective's packets completed, and results taken (whole messages) */
	uint32_t scan;           /* ... the next send message whose completion is still to be seen */
	uint32_t nres;           /* results of this collective taken */
	uint32_t comp, req, hi;  /* rxe requester: oldest unacknowledged, next to send, 1 + the highest sent */
	uint64_t retrans_at;     /* ... its retransmit timer: 0, or when it fires */
	uint64_t rnr_at;         /* ... 0, or when the RNR NAK timer fires */
	int need_retry, started_retry, wait_rnr; /* ... rxe's flags of the same names */
	uint32_t epsn;           /* rxe responder: the next result's PSN */
	int nak_sent;
	uint64_t progress_ns;    /* libinccl: the last completion */
	uint64_t rnr, naks, timeouts, resent;
};

struct hs_ev { uint64_t t, seq; int to; uint16_t len; uint8_t *d; };

struct hs_scenario {
	const char *name;
	uint64_t seed;
	uint32_t host_psn, link_psn; /* the controller's first PSNs */
	unsigned nslots;
	uint32_t loss_ppm;           /* every link */
	uint32_t stall_ppm;          /* a node stalls at a tick with this chance (per million) ... */
	uint64_t stall_max_ns;       /* ... for up to this long (uniform) */
	uint32_t count;              /* uint32 elements per call (per block for the block collectives) */
	int reps;                    /* the sequence of calls this many times */
	int alltoall;                /* with inccl_check's AllToAlls (a Route per pair and way: long) */
};

static struct {
	const struct hs_scenario *sc;
	struct hs_coll coll[HS_MAX_COLLS];
	int ncoll;
	uint32_t host_psn;
	struct hs_rank rk[GT_MAX_RANKS];
	uint64_t busy_until[TOPO_MAX_NODES][TOPO_MAX_NODES]; /* each link direction, as node indices */
	uint64_t stalled_until[TOPO_MAX_NODES], park_end[TOPO_MAX_NODES];
	int parked[TOPO_MAX_NODES];
	struct hs_ev *heap;
	size_t nheap, cap;
	uint64_t now, seq, rng;
	uint64_t lost, overflow, stalls, frames;
} H;

/* hs_rnd() - parts per million from the scenario's xorshift64 */
static uint32_t hs_rnd(void)
{
	H.rng ^= H.rng << 13;
	H.rng ^= H.rng >> 7;
	H.rng ^= H.rng << 17;
	return (uint32_t)(H.rng >> 11) % 1000000;
}

static int hs_before(const struct hs_ev *a, const struct hs_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* hs_push() - frame @d (malloc'd, taken over) of @len bytes reaches node @to at @t */
static void hs_push(int to, uint8_t *d, size_t len, uint64_t t)
{
	struct hs_ev ev = { .t = t, .seq = H.seq++, .to = to, .len = (uint16_t)len, .d = d };
	size_t i;

	if (H.nheap == H.cap) {
		H.cap = H.cap ? 2 * H.cap : 4096;
		assert_non_null(H.heap = realloc(H.heap, H.cap * sizeof(*H.heap)));
	}
	for (i = H.nheap++; i > 0 && hs_before(&ev, &H.heap[(i - 1) / 2]); i = (i - 1) / 2)
		H.heap[i] = H.heap[(i - 1) / 2];
	H.heap[i] = ev;
}

static struct hs_ev hs_pop(void)
{
	struct hs_ev top = H.heap[0], last = H.heap[--H.nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < H.nheap) {
		if (c + 1 < H.nheap && hs_before(&H.heap[c + 1], &H.heap[c]))
			c++;
		if (!hs_before(&H.heap[c], &last))
			break;
		H.heap[i] = H.heap[c];
		i = c;
	}
	H.heap[i] = last;
	return top;
}

/* hs_transmit() - node @from puts a frame on its link to @to now: it waits for the link, may be lost, and arrives. */
static void hs_transmit(int from, int to, const uint8_t *f, size_t len)
{
	uint64_t *busy = &H.busy_until[from][to];
	uint8_t *d;

	*busy = (*busy > H.now ? *busy : H.now) + len * HS_NS_PER_BYTE;
	H.frames++;
	if (H.sc->loss_ppm && hs_rnd() < H.sc->loss_ppm) {
		H.lost++;
		return;
	}
	assert_non_null(d = malloc(len));
	memcpy(d, f, len);
	hs_push(to, d, len, *busy + HS_PROP_NS);
}

/* Rank @r's element @j of packet @k of collective @c. */
static uint32_t hs_val(int r, int c, uint32_t k, int j)
{
	return (uint32_t)(r + 1) * 2654435761u * (k + 3) + (uint32_t)j * 40503u * (uint32_t)(r + 7) + (uint32_t)c * 97u;
}

static int hs_has_data(const struct hs_coll *c, int r)
{
	return c->prim == INC_BROADCAST ? r == c->dest : c->prim == INC_ROUTE ? r == c->src : 1;
}

static int hs_expects(const struct hs_coll *c, int r)
{
	return c->prim == INC_ALLREDUCE || (c->prim == INC_BROADCAST ? r != c->dest : r == c->dest);
}

/* hs_msg_end() - 1 + the last packet of the message that holds packet @k of @c as rank @r sends it (libinccl's
 * msg_end(): packet 0 alone, then messages of HS_MESSAGE; without data every packet alone); results come in
 * the cut of the data (@r < 0). */
static uint32_t hs_msg_end(const struct hs_coll *c, int r, uint32_t k)
{
	uint32_t e;

	if (r >= 0 && !hs_has_data(c, r))
		return k + 1;
	e = k ? 1 + ((k - 1) / HS_MESSAGE + 1) * HS_MESSAGE : 1;
	return e < c->npk ? e : c->npk;
}

static uint32_t hs_msg_first(const struct hs_coll *c, int r, uint32_t k)
{
	if (r >= 0 && !hs_has_data(c, r))
		return k;
	return k ? 1 + (k - 1) / HS_MESSAGE * HS_MESSAGE : 0;
}

/* hs_bytes() - the payload of packet @k of @c (the last one may be short) */
static uint32_t hs_bytes(const struct hs_coll *c, uint32_t k)
{
	uint32_t left = c->count * 4 - k * SW_MTU;

	return left < SW_MTU ? left : SW_MTU;
}

/* hs_opcode() - the opcode of packet @k of @c (as its data goes: FIRST, MIDDLE*, LAST_WITH_IMM, or ONLY_WITH_IMM) */
static uint8_t hs_opcode(const struct hs_coll *c, uint32_t k)
{
	return msg_op(k, c->npk, HS_MESSAGE);
}

static uint32_t hs_imm(const struct hs_coll *c, uint32_t end)
{
	return gimm(c->prim, c->op, INC_UINT32, c->dest) | (end == c->npk ? INC_IMM_LAST : 0);
}

/* hs_host_tx() - rank @r sends to its leaf: a SEND of packet @a (index from the first PSN; @ack 0), or an ACK
 * or NAK (@syndrome) of PSN @psn. */
static void hs_host_tx(int r, uint32_t a, int ack, uint32_t psn, uint8_t syndrome)
{
	struct grank *g = &G.rk[r];
	struct hs_rank *x = &H.rk[r];
	uint8_t f[1200];
	uint32_t v[HS_ELEMS];
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = g->ip, .dst_ip = g->sw_ip, .src_port = 50000,
				.dst_port = ROCE_PORT_HOST, .dest_qp = g->sw_qpn };

	if (ack) {
		b.opcode = RC_ACK;
		b.psn = psn;
		b.has_aeth = 1;
		b.syndrome = syndrome;
	} else {
		const struct hs_coll *c = &H.coll[x->coll];
		uint32_t k = a - c->base, end = hs_msg_end(c, r, k);
		int data = hs_has_data(c, r);

		assert_true(a >= c->base && k < c->npk);
		b.opcode = data ? hs_opcode(c, k) : RC_SEND_ONLY_WITH_IMM;
		b.psn = (H.host_psn + a) & ROCE_PSN_MASK;
		b.ack_req = k + 1 == end || a % RXE_ACK_EVERY == 0;
		b.has_imm = roce_opcode_has_imm(b.opcode);
		b.imm = hs_imm(c, end);
		if (data) {
			for (int j = 0; j < HS_ELEMS; j++)
				v[j] = htonl(hs_val(r, x->coll, k, j));
			b.payload = v;
			b.payload_len = hs_bytes(c, k);
		}
	}
	hs_transmit(g->node, g->leaf, f, roce_build_frame(f, sizeof(f), &b));
}

/* hs_completions() - libinccl's view of rank @r's sends: the last signaled send acknowledged whole (sdone). */
static void hs_completions(int r)
{
	struct hs_rank *x = &H.rk[r];
	const struct hs_coll *c;
	uint32_t end;

	if (x->coll >= H.ncoll)
		return;
	c = &H.coll[x->coll];
	while (x->scan < c->npk && c->base + (end = hs_msg_end(c, r, x->scan)) <= x->comp) {
		if (end == c->npk || end / HS_SIGNAL != x->scan / HS_SIGNAL) {
			x->sdone = end;
			x->progress_ns = H.now;
		}
		x->scan = end;
	}
}

/* hs_go_back() - rxe's retry (req_retry()): send again from the oldest unacknowledged PSN. */
static void hs_go_back(struct hs_rank *x)
{
	x->resent += x->req - x->comp;
	x->req = x->comp;
}

/* hs_comp_exit() - rxe's completer ends a run (COMPST_EXIT): with packets outstanding, the retransmit timer
 * starts again from now (mod_timer()): every ACK or NAK that reaches the host, even a late one, pushes it. */
static void hs_comp_exit(struct hs_rank *x)
{
	if (x->req > x->comp)
		x->retrans_at = H.now + RXE_TIMEOUT_NS;
}

/* hs_error_retry() - rxe's COMPST_ERROR_RETRY after a sequence NAK (@timeout 0) or the retransmit timer: one
 * retry flow per ACK that made progress, unless the timer fired. */
static void hs_error_retry(struct hs_rank *x, int timeout)
{
	if (x->started_retry && !timeout)
		return;
	if (x->req > x->comp) {
		x->need_retry = 1;
		x->started_retry = 1;
	}
}

/* hs_rank_step() - rank @r at H.now: libinccl finishes its call and starts the next, posts what its window
 * allows; rxe sends what it may. */
static void hs_rank_step(int r)
{
	struct hs_rank *x = &H.rk[r];
	const struct hs_coll *c;
	uint32_t limit;

	for (;;) {
		if (x->coll >= H.ncoll)
			return;
		c = &H.coll[x->coll];
		if (x->sdone < c->npk || (hs_expects(c, r) && x->rdone < c->npk))
			break;
		x->coll++; /* run_xfer() returned: the next call */
		x->sdone = x->rdone = x->scan = x->nres = 0;
		x->progress_ns = H.now;
	}
	limit = (hs_expects(c, r) && x->rdone < x->sdone ? x->rdone : x->sdone) + HS_WINDOW;
	while (x->posted < c->base + c->npk && hs_msg_end(c, r, x->posted - c->base) <= limit)
		x->posted = c->base + hs_msg_end(c, r, x->posted - c->base);
	if (x->rnr_at && H.now >= x->rnr_at) { /* rnr_nak_timer() */
		x->rnr_at = 0;
		x->wait_rnr = 0;
		x->need_retry = 1;
	}
	if (x->retrans_at && H.now >= x->retrans_at) { /* retransmit_timer(): the completer with timeout_retry */
		x->retrans_at = 0;
		if (x->req > x->comp) {
			x->timeouts++;
			hs_error_retry(x, 1);
		}
		hs_comp_exit(x);
	}
	if (x->need_retry && !x->wait_rnr) {
		x->need_retry = 0;
		hs_go_back(x);
	}
	while (x->req < x->posted && x->req - x->comp <= RXE_MAX_UNACKED) {
		if (!x->retrans_at)
			x->retrans_at = H.now + RXE_TIMEOUT_NS;
		hs_host_tx(r, x->req, 0, 0, 0);
		x->req++;
		x->hi = x->req > x->hi ? x->req : x->hi;
	}
}

/* hs_want() - element @j of the result of packet @k of collective @ci */
static uint32_t hs_want(int ci, uint32_t k, int j)
{
	const struct hs_coll *c = &H.coll[ci];
	uint32_t acc;

	if (c->prim == INC_BROADCAST || c->prim == INC_ROUTE)
		return hs_val(c->prim == INC_ROUTE ? c->src : c->dest, ci, k, j);
	acc = hs_val(0, ci, k, j);
	for (int r = 1; r < G.nranks; r++) {
		uint32_t v = hs_val(r, ci, k, j);
		acc = c->op == INC_OP_SUM ? acc + v : c->op == INC_OP_MAX ? (v > acc ? v : acc) : (v < acc ? v : acc);
	}
	return acc;
}

/* hs_rank_rx() - rank @r gets a frame from its leaf: an answer to its SENDs (rxe's completer), or a result
 * (rxe's responder, then libinccl checks it). */
static void hs_rank_rx(int r, const uint8_t *f, size_t len)
{
	struct hs_rank *x = &H.rk[r];
	struct roce_pkt p;
	const struct hs_coll *c;
	uint32_t k, a;

	assert_int_equal(roce_parse(f, len, &p), ROCE_OK);
	assert_true(roce_icrc_ok(f, len));
	assert_int_equal(p.dest_qp, G.rk[r].qpn);
	if (p.opcode == RC_ACK) {
		uint8_t type = p.syndrome & AETH_TYPE_MASK;

		a = (p.psn - H.host_psn) & ROCE_PSN_MASK;
		if (type == AETH_TYPE_ACK) {
			assert_true(a < x->hi); /* never an ACK of a PSN not sent */
			if (a >= x->comp) {
				x->started_retry = 0; /* reset_retry_counters() */
				x->comp = a + 1;
				if (x->req < x->comp)
					x->req = x->comp;
				hs_completions(r);
			}
			hs_comp_exit(x);
		} else if (type == AETH_TYPE_RNR_NAK) {
			x->rnr++;
			if (a < x->comp) { /* late: rxe ignores it */
				hs_comp_exit(x);
				return;
			}
			c = &H.coll[x->coll];
			/* the sends before the refused PSN's are complete; it goes back after the RNR timer */
			if (c->base + hs_msg_first(c, r, a - c->base) > x->comp)
				x->comp = c->base + hs_msg_first(c, r, a - c->base);
			hs_completions(r);
			x->wait_rnr = 1;
			x->rnr_at = H.now + RXE_RNR_NS;
		} else {
			if (p.syndrome != (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ))
				fail_msg("rank %d: the switch answered PSN %u with NAK 0x%02x: a failed completion", r, p.psn,
					 p.syndrome);
			x->naks++;
			if (a >= x->comp) {
				x->comp = a; /* a NAK acknowledges what precedes it */
				hs_completions(r);
				hs_error_retry(x, 0);
			}
			hs_comp_exit(x);
		}
		return;
	}
	if (roce_psn_diff(p.psn, x->epsn) > 0) { /* a gap: one NAK */
		if (!x->nak_sent)
			hs_host_tx(r, 0, 1, x->epsn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ);
		x->nak_sent = 1;
		return;
	}
	if (p.psn != x->epsn) { /* a duplicate: ACK what was taken */
		hs_host_tx(r, 0, 1, (x->epsn - 1) & ROCE_PSN_MASK, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
		return;
	}
	assert_true(x->coll < H.ncoll);
	c = &H.coll[x->coll];
	k = x->nres;
	if (!hs_expects(c, r) || k >= c->npk)
		fail_msg("rank %d: an unexpected result (PSN %u) in %s, %u of %u results taken", r, p.psn, c->what, k,
			 c->npk);
	assert_int_equal(p.opcode, hs_opcode(c, k));
	assert_int_equal(p.payload_len, hs_bytes(c, k));
	if (p.has_imm)
		assert_int_equal(p.imm, hs_imm(c, hs_msg_end(c, -1, k)));
	for (int j = 0; j < (int)p.payload_len / 4; j++)
		if (word_at(f + p.payload_off, j) != hs_want(x->coll, k, j))
			fail_msg("rank %d: %s: packet %u element %d is 0x%08x, not 0x%08x", r, c->what, k, j,
				 word_at(f + p.payload_off, j), hs_want(x->coll, k, j));
	x->nres++;
	x->nak_sent = 0;
	x->epsn = (x->epsn + 1) & ROCE_PSN_MASK;
	if (x->nres == hs_msg_end(c, -1, k)) {
		x->rdone = x->nres;
		x->progress_ns = H.now;
	}
	if (p.ack_req)
		hs_host_tx(r, 0, 1, p.psn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
}

/* hs_add() - the next call of the sequence */
static void hs_add(enum inc_prim prim, enum inc_op op, int dest, uint32_t count, const char *what)
{
	struct hs_coll *c = &H.coll[H.ncoll];

	assert_true(H.ncoll < HS_MAX_COLLS);
	*c = (struct hs_coll){ prim, op, (uint16_t)dest, 0, count, (count * 4 + SW_MTU - 1) / SW_MTU, 0, what };
	if (H.ncoll)
		c->base = c[-1].base + c[-1].npk;
	H.ncoll++;
}

/* hs_report() - what every rank and switch is doing: the hang's evidence */
static void hs_report(void)
{
	for (int r = 0; r < G.nranks; r++) {
		const struct hs_rank *x = &H.rk[r];
		const struct hs_coll *c = &H.coll[x->coll < H.ncoll ? x->coll : H.ncoll - 1];
		printf("  rank %2d: epsn %u base psn %u: call %d (%s src %u dest %u): %u/%u posted, %u acknowledged, %u results; rxe: una %u, "
		       "next %u, %llu RNR NAKs, %llu NAKs, %llu timeouts, %llu resent%s\n",
		       r, x->epsn, (H.host_psn + c->base) & ROCE_PSN_MASK, x->coll, c->what, c->src, c->dest, x->posted - c->base, c->npk, x->sdone, x->rdone, x->comp - c->base,
		       x->req - c->base, (unsigned long long)x->rnr, (unsigned long long)x->naks,
		       (unsigned long long)x->timeouts, (unsigned long long)x->resent, x->coll >= H.ncoll ? " (done)" : "");
	}
	for (int s = 0; s < G.nsw; s++) {
		const struct sw_counters *cnt = sw_engine_counters(G.sw[s].e);
		printf("  %s: %u slots busy, %llu completed, %llu RNR NAKs, %llu out of sequence, %llu NAKs, %llu "
		       "duplicates, %llu ACKs held, %llu mismatched, %llu timeouts, %llu retransmits\n",
		       G.t->nodes[G.sw[s].node].name, sw_engine_busy_slots(G.sw[s].e),
		       (unsigned long long)cnt->slots_completed, (unsigned long long)cnt->rnr_naks_tx,
		       (unsigned long long)cnt->drop_seq, (unsigned long long)cnt->naks_tx, (unsigned long long)cnt->duplicates,
		       (unsigned long long)cnt->acks_held, (unsigned long long)cnt->drop_mismatch,
		       (unsigned long long)cnt->timeouts, (unsigned long long)cnt->retransmits);
	}
}

/* hs_stalled() - is node @n stalled now? A frame for it then waits until the stall ends (or is lost). */
static int hs_stalled(int n)
{
	return H.now < H.stalled_until[n];
}

/*
 * hs_run() - scenario @sc on 1-4-16: the ranks run the sequence of calls
 * until all are done; fails on a wrong result, a failed completion, or a
 * rank without progress for HS_NO_PROGRESS_NS. Returns the simulated time.
 */
static uint64_t hs_run(const struct hs_scenario *sc)
{
	struct plan_params pp = { .comm = 9, .host_psn = sc->host_psn, .link_psn = sc->link_psn, .nslots = sc->nslots,
				  .retransmit_us = 200000, .rnr_timer = 1 }; /* incctl's defaults */
	static const char *const ops[] = { "sum", "max", "min" };
	static char names[HS_MAX_COLLS][48];
	uint64_t next_tick = HS_TICK_NS, done_ns = 0;
	int nnames = 0;

	memset(&H, 0, sizeof(H));
	H.sc = sc;
	H.rng = sc->seed;
	H.host_psn = sc->host_psn;
	gt_build_pp(TOPOLOGY_DIR "/1-4-16.yaml", NULL, &pp);
	G.keep_results = 0;
	G.pipelined = 1; /* RNR NAKs, NAKs and resends are expected */
	gt_sim_tx = hs_transmit;
	/* inccl_check's calls for one count and dtype (hostlib/tools/inccl_check.c), without the AllToAll */
	for (int rep = 0; rep < sc->reps; rep++) {
		for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
			hs_add(INC_ALLREDUCE, (enum inc_op)op, INC_RANK_ALL, sc->count, "allreduce");
			hs_add(INC_REDUCE, (enum inc_op)op, (rep + op) % G.nranks, sc->count, "reduce");
		}
		for (int inplace = 0; inplace <= 1; inplace++) {
			for (int b = 0; b < G.nranks; b++)
				hs_add(INC_BROADCAST, INC_OP_SUM, b, sc->count, "allgather");
			for (int op = INC_OP_SUM; op <= INC_OP_MIN; op++) {
				snprintf(names[nnames], sizeof(names[0]), "reducescatter %s%s", ops[op - INC_OP_SUM], inplace ? " in-place" : "");
				for (int b = 0; b < G.nranks; b++)
					hs_add(INC_REDUCE, (enum inc_op)op, b, sc->count, names[nnames]);
				nnames++;
			}
			for (int a = 0; sc->alltoall && a < G.nranks; a++) /* AllToAll: a Route each way per pair */
				for (int b = a + 1; b < G.nranks; b++) {
					hs_add(INC_ROUTE, INC_OP_SUM, b, sc->count, "alltoall");
					H.coll[H.ncoll - 1].src = (uint16_t)a;
					hs_add(INC_ROUTE, INC_OP_SUM, a, sc->count, "alltoall");
					H.coll[H.ncoll - 1].src = (uint16_t)b;
				}
		}
		hs_add(INC_BROADCAST, INC_OP_SUM, 2 % G.nranks, sc->count, "broadcast"); /* the third count's root */
	}
	for (int r = 0; r < G.nranks; r++)
		H.rk[r].epsn = sc->host_psn;
	for (;;) {
		int all = 1;

		for (int r = 0; r < G.nranks; r++)
			all &= H.rk[r].coll == H.ncoll;
		if (all && !done_ns)
			done_ns = H.now;
		if (done_ns) {
			int idle = 1;
			for (int s = 0; s < G.nsw; s++)
				idle &= !sw_engine_busy_slots(G.sw[s].e);
			if (idle || H.now > done_ns + 10 * RXE_TIMEOUT_NS)
				break;
		}
		if (H.nheap && H.heap[0].t <= next_tick) {
			struct hs_ev ev = hs_pop();
			H.now = ev.t;
			if (hs_stalled(ev.to)) { /* waits in the stalled node's queue, in order */
				if (H.park_end[ev.to] != H.stalled_until[ev.to]) {
					H.park_end[ev.to] = H.stalled_until[ev.to];
					H.parked[ev.to] = 0;
				}
				if (H.parked[ev.to]++ < HS_PARK_MAX) {
					ev.t = H.stalled_until[ev.to];
					hs_push(ev.to, ev.d, ev.len, ev.t);
				} else {
					H.overflow++;
					free(ev.d);
				}
				continue;
			}
			if (G.sw_of[ev.to] >= 0) {
				struct sw_engine *e = G.sw[G.sw_of[ev.to]].e;
				sw_engine_rx(e, ev.d, ev.len, H.now);
				/* the daemon ends a batch when nothing more is waiting */
				if (!H.nheap || H.heap[0].t > H.now || H.heap[0].to != ev.to)
					sw_engine_tick(e, H.now);
			} else {
				int r = G.rank_of[ev.to];
				assert_true(r >= 0);
				hs_rank_rx(r, ev.d, ev.len);
				hs_rank_step(r);
			}
			free(ev.d);
			continue;
		}
		H.now = next_tick;
		next_tick += HS_TICK_NS;
		for (int n = 0; n < G.t->nnodes; n++)
			if ((G.sw_of[n] >= 0 || G.rank_of[n] >= 0) && !hs_stalled(n) && sc->stall_ppm &&
			    hs_rnd() < sc->stall_ppm) {
				H.stalled_until[n] = H.now + 1 + hs_rnd() % (uint32_t)(sc->stall_max_ns / 1000) * 1000ull;
				H.stalls++;
			}
		for (int s = 0; s < G.nsw; s++)
			if (!hs_stalled(G.sw[s].node))
				sw_engine_tick(G.sw[s].e, H.now);
		for (int r = 0; r < G.nranks; r++) {
			struct hs_rank *x = &H.rk[r];
			if (hs_stalled(G.rk[r].node))
				continue;
			hs_rank_step(r);
			if (x->coll < H.ncoll && H.now - x->progress_ns > HS_NO_PROGRESS_NS) {
				printf("hang in %s: rank %d made no progress for %llu s of simulated time (%.3f s in); %llu "
				       "frames, %llu lost, %llu overflowed stalled nodes, %llu stalls\n", sc->name, r,
				       HS_NO_PROGRESS_NS / 1000000000ull, H.now / 1e9, (unsigned long long)H.frames,
				       (unsigned long long)H.lost, (unsigned long long)H.overflow, (unsigned long long)H.stalls);
				hs_report();
				fail_msg("%s: a rank hung", sc->name);
			}
		}
	}
	printf("1-4-16 sim %s: %d calls (%u packets per rank) right on all %d ranks in %.3f s simulated; %llu frames, "
	       "%llu lost, %llu overflowed, %llu stalls\n", sc->name, H.ncoll, H.coll[H.ncoll - 1].base +
	       H.coll[H.ncoll - 1].npk, G.nranks, done_ns / 1e9, (unsigned long long)H.frames, (unsigned long long)H.lost,
	       (unsigned long long)H.overflow, (unsigned long long)H.stalls);
	for (int s = 0; s < G.nsw; s++)
		if (sw_engine_busy_slots(G.sw[s].e)) {
			hs_report();
			fail_msg("%s: %s still has busy slots", sc->name, G.t->nodes[G.sw[s].node].name);
		}
	gt_sim_tx = NULL;
	while (H.nheap)
		free(hs_pop().d);
	free(H.heap);
	gt_free();
	return done_ns;
}

/*
 * The lab's hang, in simulated time: 1-4-16 (8192 slots, incctl's timers),
 * every node stalling at 1 % of the milliseconds for up to 50 ms, the
 * hosts' PSNs wrapping 8192 packets in and the switch links' 2048 in, every
 * link losing 0.1 % of its frames, then 1 %; the ranks run inccl_check's
 * calls for a count of 65539 (257 packets, the last one 12 bytes): AllReduce
 * and Reduce of each op, AllGather (16 Broadcasts), ReduceScatter of each op
 * (16 Reduces to roots 0..15), AllToAll (240 Routes), out of place and in
 * place, and a Broadcast: 615 calls, 158,055 packets per rank. Every result
 * is checked as it comes, and every rank must finish, each call within
 * libinccl's 60 s without progress and all of them within the scenario's
 * bound (about four times what they take now: a storm would not). Before
 * resend_gap() always resent una, a leaf whose probe after an RNR NAK of
 * the root was lost never sent to the root again: the first run hangs, a
 * rank without progress for 60 s 77 s in (with neither fix: 85 s in, the
 * links of sw1 and sw2 to sw0 dead, rank 15 at 161 of 257 results of the
 * Route from rank 8, ranks 0-3 at 128 of 257 packets acknowledged in a
 * later Route, held by sw1's ACK ceiling, which stood still with its
 * slots; 13 of 16 seeds hung so). Before a host's SEND that fills a NAKed gap was
 * ACKed at once (take_from_child()), the second run had rank 1 without
 * progress for 60 s, 381 s in: hosts whose second loss after a go-back
 * came before an ACK waited 1.07 s each, ranks at 64, 128, 192 of 257
 * acknowledged under one leaf.
 */
static void test_sim_1_4_16_stalls(void **state)
{
	static const struct {
		struct hs_scenario sc;
		uint64_t bound_ns; /* simulated */
	} run[] = {
		{ { "0.1% lost, nodes stall up to 50 ms", 1, 0xffe000, 0xfff800, 8192, 1000, 10000, 50000000, 65539, 1, 1 },
		  200000000000ull },  /* 53 s now */
		{ { "1% lost, nodes stall up to 50 ms", 2, 0xffe000, 0xfff800, 8192, 10000, 10000, 50000000, 65539, 1, 1 },
		  1000000000000ull }, /* 252 s now */
	};

	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		assert_true(hs_run(&run[i].sc) <= run[i].bound_ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_any_tree_uniform),
		cmocka_unit_test(test_any_tree_mixed),
		cmocka_unit_test(test_any_tree_sub_communicators),
		cmocka_unit_test(test_any_tree_ahead_held_in_own_psns),
		cmocka_unit_test(test_any_tree_pipelined),
		cmocka_unit_test(test_any_tree_float_sum_in_child_order),
		cmocka_unit_test(test_tree_collectives),
		cmocka_unit_test(test_tree_last_packet_and_count_mismatch),
		cmocka_unit_test(test_switch_link_resends_only_the_gap),
		cmocka_unit_test(test_switch_link_probe_lost_after_rnr),
		cmocka_unit_test(test_tree_lossy_links),
		cmocka_unit_test(test_tree_lossy_links_messages),
		cmocka_unit_test(test_sim_1_4_16_stalls),
	};
	if (getenv("TEST_TREE_FILTER"))
		cmocka_set_test_filter(getenv("TEST_TREE_FILTER"));
	return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
