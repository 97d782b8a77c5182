/*
 * test_order.c — a float SUM is the same bits whatever order the children's
 * packets arrive in (switch/engine.c, "Order of a float SUM"), cmocka.
 *
 * One real switch engine with F children (hosts, and child switches on UDP
 * 4792 among them: child c is a switch link when c % 3 == 1) takes an
 * AllReduce SUM of PACKETS full packets from every child, more packets than
 * it has slots. The children are simulated senders that keep a window of
 * packets in flight, follow the engine's ACKs, go back on its NAKs and RNR
 * NAKs, resend after a timeout, and take and acknowledge their results. A
 * scheduler decides which child sends next: by a permutation of the
 * children (packet by packet in that order, or each child as far ahead as
 * the engine lets it, in that order), or at random; frames may be lost (the
 * child resends them) or duplicated (the copy arrives later).
 *
 * Every float type the switch reduces (float16, bfloat16, float32,
 * float64), with check_ref.c's ieee pattern as inputs: sums that round and
 * depend on the order of additions, NaN with payloads, +-Inf, +-0,
 * subnormals, overflow. Every run must give every child the same bits, and
 * every run of the same fan-in the same bits as the first (memcmp: NaN
 * payloads included), equal to check_ref.c's cref_expect() over one switch
 * of F ranks, which folds child 0, then child 1, ... (NaN as NaN), written
 * independently of the switch's arithmetic. Fan-in 2,
 * 3 and 4: every arrival permutation,
 * three ways each (packet by packet, each child running ahead, and with
 * loss and duplicates); fan-in 16: 200 random permutations, with loss and
 * duplicates, some with a pool of 3 hold buffers (holds_full: refused with
 * an RNR NAK, resent, still in order). Both kernel sets (SIMD and scalar)
 * give the same bits.
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

#include "check_ref.h"
#include "engine.h"
#include "roce.h"

#define MAXC 16                 /* children at most */
#define PACKETS 24              /* per child: more than the slots, which are reused */
#define NSLOTS 16
#define WIN 8                   /* a child's packets in flight */
#define PAYLOAD 1024            /* bytes of every packet */
#define SW_IP 0x0a000001u       /* 10.0.0.1 */
#define CHILD_IP0 0x0a000100u   /* child c: 10.0.1.c */
#define SW_QPN0 0x100           /* the switch's end towards child c: SW_QPN0 + c */
#define CHILD_QPN 0x11
#define HOST_PSN 0xfffff3u      /* hosts' PSNs wrap during a run ... */
#define LINK_PSN 0x3a0c63u      /* ... switch links start elsewhere */
#define DOWN_PSN 0x000777u      /* the switch's first PSN towards every child */
#define RNR_NS 100000          /* a child's wait after an RNR NAK: 100 frames' time */
#define OUTQ 8192
#define LATE 256                /* duplicates waiting to arrive */

/* The float types the switch reduces. */
struct ftype {
	const char *name;
	enum inc_dtype wire;
	enum inccl_dtype host;      /* as check_ref.c names it */
	size_t size;                /* bytes per element */
};
static const struct ftype ftypes[] = {
	{ "float16", INC_FLOAT16, INCCL_FLOAT16, 2 },
	{ "bfloat16", INC_BFLOAT16, INCCL_BFLOAT16, 2 },
	{ "float32", INC_FLOAT32, INCCL_FLOAT32, 4 },
	{ "float64", INC_FLOAT64, INCCL_FLOAT64, 8 },
};
#define NFTYPES (sizeof(ftypes) / sizeof(ftypes[0]))

/* How the next sender is chosen among the children that may send. */
enum sched {
	LOCKSTEP, /* the lowest packet first, children of one packet in the permutation's order */
	AHEAD,    /* the first child in the permutation's order: it runs as far ahead as it may */
	RANDOM,   /* AHEAD three times in four, else any child */
};

struct child {
	int is_switch;
	uint32_t rq_psn;            /* its first PSN */
	int next, una;              /* packets: the next to send, the oldest not acknowledged */
	int hi;                     /* packets ever sent: 1 + the highest */
	uint64_t rnr_until;         /* after an RNR NAK: sends nothing before (its RNR timer) */
	int nres;                   /* results taken */
	uint32_t msn;
	uint8_t res[PACKETS][PAYLOAD];
};

struct outframe {
	int port;
	uint16_t len;
	uint8_t d[1200];
};

static struct {
	const struct ftype *ft;
	int f;                      /* fan-in */
	struct child ch[MAXC];
	struct sw_engine *e;
	struct outframe out[OUTQ];
	int out_head, out_n;
	struct outframe late[LATE]; /* duplicates on their way (port: the sending child) */
	int nlate;
	uint64_t now, rng;
	uint8_t in[MAXC][PACKETS][PAYLOAD]; /* each child's packets, wire format */
	uint8_t want[PACKETS][PAYLOAD];     /* cref_expect(), wire format */
	uint8_t golden[PACKETS][PAYLOAD];   /* the first run's result at this fan-in and type */
	int have_golden;
	long lost, duplicated;
} S;

/* rnd() - the next number of a seeded xorshift64. */
static uint64_t rnd(void)
{
	S.rng ^= S.rng << 13;
	S.rng ^= S.rng >> 7;
	S.rng ^= S.rng << 17;
	return S.rng;
}

/* put_elem() - element bits @v (host order, the type's width) at @p in wire order (big-endian). */
static void put_elem(uint8_t *p, uint64_t v, size_t size)
{
	for (size_t b = 0; b < size; b++)
		p[b] = (uint8_t)(v >> 8 * (size - 1 - b));
}

/* get_elem() - the element at @p (wire order) as bits in host order. */
static uint64_t get_elem(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	for (size_t b = 0; b < size; b++)
		v = v << 8 | p[b];
	return v;
}

/*
 * setup_inputs() - every child's packets and the reference result of fan-in
 * @f and type @ft: element i of the whole collective is packet i / n,
 * element i % n (n elements per packet).
 */
static void setup_inputs(const struct ftype *ft, int f)
{
	static struct cref_tree t;
	size_t n = PAYLOAD / ft->size;

	S.ft = ft;
	S.f = f;
	S.have_golden = 0;
	assert_int_equal(cref_tree_flat(&t, f), 0);
	for (int k = 0; k < PACKETS; k++)
		for (size_t j = 0; j < n; j++) {
			size_t i = (size_t)k * n + j;
			for (int c = 0; c < f; c++)
				put_elem(&S.in[c][k][j * ft->size], cref_input(CREF_IEEE, ft->host, c, f, i), ft->size);
			put_elem(&S.want[k][j * ft->size], cref_expect(&t, CREF_IEEE, ft->host, INCCL_SUM, i), ft->size);
		}
}

/*
 * orders_differ() - elements (not NaN) where folding the children from the
 * last down gives other bits than from child 0 up: what an engine that
 * folded in arrival order would get wrong. The inputs must have some at
 * fan-in >= 3, or the test could not tell the orders apart.
 */
static long orders_differ(void)
{
	size_t n = PAYLOAD / S.ft->size;
	long differ = 0;

	for (int k = 0; k < PACKETS; k++)
		for (size_t j = 0; j < n; j++) {
			uint64_t acc = get_elem(&S.in[S.f - 1][k][j * S.ft->size], S.ft->size);
			for (int c = S.f - 2; c >= 0; c--)
				acc = cref_combine(S.ft->host, INCCL_SUM, acc, get_elem(&S.in[c][k][j * S.ft->size], S.ft->size));
			differ += !cref_same(S.ft->host, acc, get_elem(&S.want[k][j * S.ft->size], S.ft->size));
		}
	return differ;
}

/* tx() - the engine's output: queued, handled by drain(). */
static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	(void)ctx;
	assert_true(port >= 0 && port < S.f);
	assert_true(S.out_head + S.out_n < OUTQ && len <= sizeof(S.out[0].d));
	struct outframe *o = &S.out[S.out_head + S.out_n++];
	o->port = port;
	o->len = (uint16_t)len;
	memcpy(o->d, f, len);
}

/* child_frame() - child @c's frame to the switch into @f: a SEND of packet @k, or (@k < 0) an ACK of @psn. */
static size_t child_frame(int c, int k, uint32_t psn, uint8_t *f, size_t cap)
{
	const struct child *x = &S.ch[c];
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	struct inc_imm m = { INC_RANK_ALL, INC_ALLREDUCE, INC_OP_SUM, S.ft->wire };
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = CHILD_IP0 + (uint32_t)c, .dst_ip = SW_IP,
				.src_port = 50000, .dst_port = x->is_switch ? ROCE_PORT_SWITCH : ROCE_PORT_HOST,
				.dest_qp = SW_QPN0 + (uint32_t)c, .ack_req = 1 };

	if (k < 0) {
		b.opcode = RC_ACK;
		b.psn = psn;
		b.has_aeth = 1;
		b.syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED;
		b.msn = x->msn;
	} else {
		b.opcode = RC_SEND_ONLY_WITH_IMM;
		b.psn = (x->rq_psn + (uint32_t)k) & ROCE_PSN_MASK;
		b.has_imm = 1;
		b.imm = inc_imm_encode(&m);
		b.payload = S.in[c][k];
		b.payload_len = PAYLOAD;
	}
	return roce_build_frame(f, cap, &b);
}

/* feed() - one frame into the engine, time moving on by a microsecond. */
static void feed(const uint8_t *f, size_t len)
{
	S.now += 1000;
	sw_engine_rx(S.e, f, len, S.now);
}

/* on_frame() - child @c gets the engine's frame @o: an answer to its SENDs, or a result it takes and ACKs. */
static void on_frame(int c, const struct outframe *o)
{
	struct child *x = &S.ch[c];
	struct roce_pkt p;
	uint8_t f[128];

	assert_int_equal(roce_parse(o->d, o->len, &p), ROCE_OK);
	assert_true(roce_icrc_ok(o->d, o->len));
	assert_int_equal(p.dest_qp, CHILD_QPN);
	if (p.opcode == RC_ACK) {
		int k = (int)((p.psn - x->rq_psn) & ROCE_PSN_MASK);
		uint8_t type = p.syndrome & AETH_TYPE_MASK;

		assert_true(k <= x->hi);
		if (type == AETH_TYPE_ACK) {
			assert_true(k < x->hi); /* never of a packet not sent */
			if (k + 1 > x->una)
				x->una = k + 1;
			if (x->next < x->una) /* it went back, and now hears that more had come */
				x->next = x->una;
			return;
		}
		/* RNR NAK (busy slot, or no hold buffer) or sequence NAK: everything before k arrived; go back to k */
		assert_true(type == AETH_TYPE_RNR_NAK || p.syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ));
		if (k > x->una)
			x->una = k;
		x->next = x->una;
		if (type == AETH_TYPE_RNR_NAK)
			x->rnr_until = S.now + RNR_NS;
		return;
	}
	uint32_t epsn = (DOWN_PSN + (uint32_t)x->nres) & ROCE_PSN_MASK;
	int32_t d = roce_psn_diff(p.psn, epsn);
	assert_true(d <= 0); /* the switch's frames to a child are never lost here: no gap */
	if (d == 0) {
		assert_true(x->nres < PACKETS);
		assert_int_equal(p.opcode, RC_SEND_ONLY_WITH_IMM);
		assert_int_equal(p.payload_len, PAYLOAD);
		memcpy(x->res[x->nres++], o->d + p.payload_off, PAYLOAD);
		x->msn++;
	}
	feed(f, child_frame(c, -1, d == 0 ? p.psn : (epsn - 1) & ROCE_PSN_MASK, f, sizeof(f)));
}

/* drain() - hand every frame the engine sent to its child, and what they answer to the engine, until quiet. */
static void drain(void)
{
	while (S.out_n) {
		struct outframe o = S.out[S.out_head++];
		S.out_n--;
		if (!S.out_n)
			S.out_head = 0; /* the answer below queues from the start again */
		on_frame(o.port, &o);
	}
}

/* can_send() - may child @c send its next packet (one left, within its window, no RNR wait)? */
static int can_send(int c)
{
	return S.ch[c].next < PACKETS && S.ch[c].next - S.ch[c].una < WIN && S.now >= S.ch[c].rnr_until;
}

/* pick() - the child that sends next by @how and the permutation @perm, or -1 if none may send. */
static int pick(enum sched how, const int *perm)
{
	int best = -1, any[MAXC], nany = 0;

	for (int o = 0; o < S.f; o++) {
		int c = perm[o];
		if (!can_send(c))
			continue;
		any[nany++] = c;
		if (best < 0 || (how == LOCKSTEP && S.ch[c].next < S.ch[best].next))
			best = c;
	}
	if (how == RANDOM && nany && rnd() % 4 == 0)
		best = any[rnd() % (uint64_t)nany];
	return best;
}

/* send_packet() - child @c sends its next packet: lost with @loss_pm per mille, a late copy with @dup_pm. */
static void send_packet(int c, unsigned loss_pm, unsigned dup_pm)
{
	uint8_t f[1200];
	size_t len = child_frame(c, S.ch[c].next++, 0, f, sizeof(f));

	if (S.ch[c].next > S.ch[c].hi)
		S.ch[c].hi = S.ch[c].next;

	if (dup_pm && rnd() % 1000 < dup_pm && S.nlate < LATE) {
		S.late[S.nlate] = (struct outframe){ .port = c, .len = (uint16_t)len };
		memcpy(S.late[S.nlate++].d, f, len);
		S.duplicated++;
	}
	if (loss_pm && rnd() % 1000 < loss_pm) {
		S.lost++;
		return;
	}
	feed(f, len);
}

/*
 * run() - one AllReduce through a fresh engine with a pool of @holds hold
 * buffers (0: the default), children chosen by @how and @perm, frames lost
 * and duplicated per mille; then the checks in the file's comment. Return
 * the engine's held_for_turn + 1000000 * holds_full.
 */
static uint64_t run(enum sched how, const int *perm, uint64_t seed, unsigned loss_pm, unsigned dup_pm,
		    uint32_t holds)
{
	struct sw_cfg cfg = { .nchildren = S.f, .nslots = NSLOTS, .retransmit_ns = 1000000000, .rnr_timer = 1,
			      .holds = holds };
	int stalled = 0;
	long steps = 0;

	memset(S.ch, 0, sizeof(S.ch));
	S.out_head = S.out_n = S.nlate = 0;
	S.now = 0;
	S.rng = seed | 1;
	for (int c = 0; c < S.f; c++) {
		S.ch[c].is_switch = c % 3 == 1;
		S.ch[c].rq_psn = S.ch[c].is_switch ? LINK_PSN : HOST_PSN;
		cfg.child[c] = (struct sw_conn_cfg){ .port = c, .local_ip = SW_IP, .peer_ip = CHILD_IP0 + (uint32_t)c,
						     .local_qpn = SW_QPN0 + (uint32_t)c, .peer_qpn = CHILD_QPN,
						     .rq_psn = S.ch[c].rq_psn, .sq_psn = DOWN_PSN,
						     .udp_dst = S.ch[c].is_switch ? ROCE_PORT_SWITCH : ROCE_PORT_HOST,
						     .first_rank = (uint16_t)c, .nranks = 1 };
	}
	assert_non_null(S.e = sw_engine_new(&cfg, tx, NULL));
	for (;;) {
		int c = pick(how, perm), done = 1;

		assert_true(++steps < 1000000);
		for (int i = 0; i < S.f; i++)
			done &= S.ch[i].nres == PACKETS && S.ch[i].una == PACKETS;
		if (done && !S.nlate)
			break;
		if (S.nlate && (c < 0 || rnd() % 8 == 0)) { /* a duplicate arrives, late */
			struct outframe *o = &S.late[rnd() % (uint64_t)S.nlate];
			feed(o->d, o->len);
			*o = S.late[--S.nlate];
		} else if (c >= 0) {
			send_packet(c, loss_pm, dup_pm);
			stalled = 0;
		} else if (stalled++ < 2) { /* nobody may send: the end of a round (ACKs owed go out), time passes */
			S.now += RNR_NS;
			sw_engine_tick(S.e, S.now);
		} else { /* still nothing: a timeout, each child goes back to its oldest unacknowledged */
			for (int i = 0; i < S.f; i++)
				S.ch[i].next = S.ch[i].una;
			stalled = 0;
		}
		drain();
	}

	const struct sw_counters *k = sw_engine_counters(S.e);
	assert_int_equal(sw_engine_busy_slots(S.e), 0);
	assert_int_equal(k->slots_completed, PACKETS);
	assert_int_equal(k->drop_mismatch + k->drop_bad_imm + k->drop_bad_op + k->drop_oversize, 0);
	assert_int_equal(k->aggregations, (uint64_t)PACKETS * (uint64_t)(S.f - 1)); /* each contribution once */
	assert_true(k->holds_peak <= (holds ? holds : (uint64_t)NSLOTS * (uint64_t)(S.f - 1)));
	if (perm[0] != 0 && how != RANDOM)
		assert_true(k->held_for_turn > 0); /* a child came before child 0 and waited */
	for (int c = 0; c < S.f; c++) {
		assert_int_equal(S.ch[c].nres, PACKETS);
		assert_memory_equal(S.ch[c].res, S.ch[0].res, sizeof(S.ch[0].res));
	}
	if (!S.have_golden) {
		size_t n = PAYLOAD / S.ft->size;
		for (int p = 0; p < PACKETS; p++)
			for (size_t j = 0; j < n; j++) {
				uint64_t got = get_elem(&S.ch[0].res[p][j * S.ft->size], S.ft->size);
				uint64_t want = get_elem(&S.want[p][j * S.ft->size], S.ft->size);
				if (!cref_same(S.ft->host, got, want))
					fail_msg("%s fan-in %d: packet %d element %zu is 0x%llx, the reference 0x%llx", S.ft->name,
						 S.f, p, j, (unsigned long long)got, (unsigned long long)want);
			}
		memcpy(S.golden, S.ch[0].res, sizeof(S.golden));
		S.have_golden = 1;
	} else if (memcmp(S.golden, S.ch[0].res, sizeof(S.golden))) {
		for (int p = 0; p < PACKETS; p++)
			if (memcmp(S.golden[p], S.ch[0].res[p], PAYLOAD))
				fail_msg("%s fan-in %d: packet %d differs from the first run's bits (arrival order shows)",
					 S.ft->name, S.f, p);
	}
	uint64_t held = k->held_for_turn + 1000000u * k->holds_full;
	sw_engine_free(S.e);
	S.e = NULL;
	return held;
}

/* next_perm() - @p (of @n) to the next permutation in lexicographic order. Return 0 after the last. */
static int next_perm(int *p, int n)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && p[i] > p[i + 1])
		i--;
	if (i < 0)
		return 0;
	while (p[j] < p[i])
		j--;
	int t = p[i];
	p[i] = p[j];
	p[j] = t;
	for (int a = i + 1, b = n - 1; a < b; a++, b--) {
		t = p[a];
		p[a] = p[b];
		p[b] = t;
	}
	return 1;
}

/* Fan-in 2, 3, 4: every arrival permutation, packet by packet, running ahead, and with loss and duplicates. */
static void test_every_permutation(void **state)
{
	(void)state;
	for (size_t t = 0; t < NFTYPES; t++)
		for (int f = 2; f <= 4; f++) {
			int perm[MAXC], nperm = 0;
			uint64_t held = 0;

			setup_inputs(&ftypes[t], f);
			if (f >= 3)
				assert_true(orders_differ() > 0); /* folding in another order would show */
			for (int i = 0; i < f; i++)
				perm[i] = i;
			S.lost = S.duplicated = 0;
			do {
				held += run(LOCKSTEP, perm, 1, 0, 0, 0);
				held += run(AHEAD, perm, 2, 0, 0, 0);
				held += run(AHEAD, perm, 0x9e3779b97f4a7c15ull + (uint64_t)nperm, 50, 50, 0);
				nperm++;
			} while (next_perm(perm, f));
			printf("order: %-8s fan-in %d: %2d permutations x 3 (in turn, running ahead, %ld lost and %ld "
			       "duplicated): the same bits, the reference's; %llu held for their turn\n",
			       ftypes[t].name, f, nperm, S.lost, S.duplicated, (unsigned long long)held);
		}
}

/* Fan-in 16: 200 random permutations with loss and duplicates, one in four runs with 3 hold buffers only. */
static void test_fanin16_random(void **state)
{
	(void)state;
	for (size_t t = 0; t < NFTYPES; t++) {
		uint64_t held = 0, full = 0;

		setup_inputs(&ftypes[t], 16);
		assert_true(orders_differ() > 0);
		S.lost = S.duplicated = 0;
		S.rng = 0x2545f4914f6cdd1dull;
		for (int r = 0; r < 200; r++) {
			int perm[MAXC];
			for (int i = 0; i < 16; i++)
				perm[i] = i;
			for (int i = 15; i > 0; i--) { /* Fisher-Yates */
				int j = (int)(rnd() % (uint64_t)(i + 1)), x = perm[i];
				perm[i] = perm[j];
				perm[j] = x;
			}
			uint64_t h = run(r % 2 ? RANDOM : AHEAD, perm, rnd(), 30, 30, r % 4 == 3 ? 3 : 0);
			held += h % 1000000u;
			full += h / 1000000u;
			S.rng = 0x2545f4914f6cdd1dull + (uint64_t)r * 0x9e3779b97f4a7c15ull; /* the next run's own stream */
		}
		assert_true(full > 0); /* the small pools ran out and refused, and the result stayed in order */
		printf("order: %-8s fan-in 16: 200 random permutations (%ld lost, %ld duplicated): the same bits, the "
		       "reference's; %llu held for their turn, %llu refused for want of a hold buffer\n",
		       ftypes[t].name, S.lost, S.duplicated, (unsigned long long)held, (unsigned long long)full);
	}
}

/* The scalar kernels give the bits the SIMD ones gave (every permutation at fan-in 4, one way). */
static void test_kernels_agree(void **state)
{
	(void)state;
	for (size_t t = 0; t < NFTYPES; t++) {
		int perm[MAXC] = { 0, 1, 2, 3 };

		setup_inputs(&ftypes[t], 4);
		inc_kernel_use(INC_KERNEL_SIMD, "test");
		run(LOCKSTEP, perm, 1, 0, 0, 0);
		inc_kernel_use(INC_KERNEL_SCALAR, "test");
		do
			run(AHEAD, perm, 3, 20, 20, 0);
		while (next_perm(perm, 4));
		inc_kernel_use(INC_KERNEL_AUTO, "test");
	}
}

/* A pool of more than SW_HOLDS_MAX hold buffers is refused, not allocated; at most it is taken. */
static void test_holds_bounded(void **state)
{
	struct sw_cfg cfg = { .nchildren = 2, .nslots = NSLOTS, .retransmit_ns = 1000000000, .holds = SW_HOLDS_MAX + 1 };
	struct sw_engine *e;

	(void)state;
	for (int c = 0; c < 2; c++)
		cfg.child[c] = (struct sw_conn_cfg){ .port = c, .local_ip = SW_IP, .peer_ip = CHILD_IP0 + (uint32_t)c,
						     .local_qpn = SW_QPN0 + (uint32_t)c, .udp_dst = ROCE_PORT_HOST,
						     .first_rank = (uint16_t)c, .nranks = 1 };
	assert_null(sw_engine_new(&cfg, tx, NULL));
	cfg.holds = SW_HOLDS_MAX;
	assert_non_null(e = sw_engine_new(&cfg, tx, NULL));
	sw_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holds_bounded),
		cmocka_unit_test(test_every_permutation),
		cmocka_unit_test(test_fanin16_random),
		cmocka_unit_test(test_kernels_agree),
	};
	return cmocka_run_group_tests_name("order", tests, NULL, NULL);
}
