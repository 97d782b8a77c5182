/*
 * engine.c — aggregation, delivery and reliability of a root INC switch
 * (see engine.h for the protocol). Per frame:
 *
 *   rx SEND  -> which connection? in sequence? slot free or ours? -> combine,
 *               ACK; when every child has arrived, send the result down (root)
 *               or the aggregate up (leaf).
 *   rx SEND from the parent -> the result of the oldest slot sent up: fan out.
 *   rx ACK   -> free what the child acknowledged; a slot is free once every
 *               result frame made from it was acknowledged; send what the
 *               window now allows, go back on a NAK.
 *   tick     -> probe connections whose retransmit timer expired; retry after
 *               an RNR NAK's delay; ask a host whose results stopped for the
 *               ACK its last frames did not ask for (tail_probe()).
 *
 * A busy slot answers with an RNR NAK (retry soon) instead of a silent drop.
 *
 * Each connection's send sequence, in PSN order:
 *
 *   rc.una         snd_nxt          rc.spsn           npsn
 *     | in flight     | to resend      | never sent yet  |
 *
 * Frames are built once, when their slot hands them over, and kept in the
 * ring until acknowledged; xmit() puts them on the wire from snd_nxt while
 * fewer than `win` are in flight. A go-back moves snd_nxt back to una. The
 * ring keeps a frame's headers and ICRC; its payload stays in the slot,
 * which is not reused before every frame made from it was acknowledged
 * (upward frames keep a copy: a leaf's slot takes the parent's result while
 * its aggregate may still be unacknowledged). Frames are put together in
 * one transmit buffer, where the payload of a slot sent to several children
 * is written once.
 *
 * Switch links (UDP 4792) have our engine on both ends, which both keep to
 * RC framing and cumulative ACKs but do better than go-back-N: the receiver
 * holds SENDs that arrive after a gap (up to a window of them) and takes them
 * when the gap is filled; the sender answers a NAK by resending the NAKed
 * frame alone. Towards hosts (real rxe, which drops what follows a gap) the
 * switch stays a plain RC requester: go-back-N.
 *
 * Order of a float SUM (engine.h): a slot folds its children's
 * contributions in child order. Child i's contribution is folded when the
 * slot has folded children 0..i-1 (slot.nfolded == i); one that comes
 * earlier is copied into a hold buffer of the engine's pool, on the slot's
 * list of held contributions (sorted by child), and folded from there as
 * soon as the one before it was. The pool has cfg.holds buffers, taken
 * from a free list, so only the buffers ever in use at once are touched;
 * a contribution that must wait when none is free is refused with an RNR
 * NAK before anything of it is taken (the child resends it). That cannot
 * stall: the next child due in the oldest open slot never waits, and
 * folding it frees what waited behind it. A retransmitted duplicate of a
 * held contribution is a duplicate PSN on its connection (re-ACKed, never
 * taken again), and a child's second contribution to one slot is refused
 * while the first is held or folded (slot.arrived).
 */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

#define FRAME_MAX (ROCE_HDRS_LEN + ROCE_IMM_LEN + SW_MTU + ROCE_ICRC_LEN)
#define HOST_ACK_EVERY 32        /* results to a host ask for an ACK once per 32 (a power of two): fewer
                                  * ACKs for a TCG guest to build and the leaf to take in (at 8 they
                                  * were 6 % of a host's frames); the tail of a burst is acknowledged
                                  * after a tail probe (TAIL_IDLE_NS) */
#define ACK_EVERY 32             /* a host's SENDs are acknowledged by one ACK per 32, and by one when a
                                  * round of input (sw_engine_tick()) brought none from that host: an
                                  * ACK covers all before it, and each one costs a TCG guest a whole
                                  * packet (ACKing at the end of every round sent one per ~10 SENDs;
                                  * the host's window of 512 needs far fewer) */
#define SWITCH_ACK_EVERY 2       /* the same on a switch link, one ACK per 2 SENDs (there were 4 ACKs
                                  * per slot on the two links of a leaf, a quarter of the tree's
                                  * frames). In the tree simulation one per 4 or more made the
                                  * recovery after a stalled root slower (1441 ms at 4, 1909 ms at 16,
                                  * against 1351 ms at 1 and 1056 ms at 2) */
#define TAIL_IDLE_NS 10000000ull /* a host's result stream that stopped this long with its newest frame not
                                  * asking for an ACK gets a tail probe (sw_engine_tick()); left to the
                                  * retransmit timer (at least 50 ms in the daemon), the tail holds its
                                  * slots that long. On 1-2-4, 128 MiB AllReduce and Reduce, 3 runs each
                                  * against the engine without it in the same lab: at 2 ms, 8,800 probes
                                  * per AllReduce (1.7 % more frames to the hosts); at 10 ms, 500-750
                                  * (0.1 %); the times equal within the runs' spread either way */
#define TAIL_MIN_LEN 64          /* payloads from 64 bytes on go through the CRC once per slot (slot_tail());
                                  * below, the whole ICRC costs no more than the headers' share */
#define CONN_HASH 256            /* conn_index[] entries: a power of two, about a quarter of them taken by
                                  * 65 connections, so a probe rarely goes past the first */
#define RNR_RETRY_NS 1000000ull /* resend 1 ms after an RNR NAK */
/* A child is acknowledged at most up to ACK_AHEAD_RESERVE PSNs short of
 * the slot table's end, counted from the oldest slot still in use
 * (ack_ceiling()). A child that takes no results (a Broadcast's root, a
 * Reduce's other ranks) is paced by ACKs alone: it outran the others by the
 * whole table and was answered with RNR NAKs, the frames it pipelined
 * behind dropped (one 64 MiB Broadcast: 657 RNR NAKs, 81,595 frames
 * dropped). Held back, its sender stops by itself: rxe sends at most 129
 * PSNs past the last ACK (RXE_MAX_UNACKED_PSNS 128 beyond the next to
 * complete); the reserve is twice that. With a table of no more than two
 * reserves (unit tests) nothing is held: the RNR NAK stays the only bound. */
#define ACK_AHEAD_RESERVE 256
#define RTO_MIN_NS 2000000ull   /* two ticks of the daemon's 1 ms poll loop: no finer timer
                                 * (cfg.min_rto_ns raises it: the daemon's default is 50 ms) */
#define RTO_MAX_BACKOFF 16      /* doublings of the timeout; cfg.retransmit_ns caps it first */

#define SENT_HDRS_LEN (ROCE_HDRS_LEN + ROCE_IMM_LEN) /* the longest headers of a SEND: with ImmDt */

/* A frame sent (or to send) until acknowledged: its headers and ICRC; the payload is the slot's (or conn.keep's). */
struct sent_frame {
	uint32_t slot;
	uint16_t len;             /* the whole frame's */
	uint16_t payload_len;     /* pad bytes not included */
	uint8_t resent;           /* sent more than once: no RTT sample from its ACK (Karn) */
	uint8_t hdr_len;          /* ROCE_HDRS_LEN, + ROCE_IMM_LEN for a SEND with immediate */
	uint64_t sent_ns;         /* first sent */
	uint8_t hdrs[SENT_HDRS_LEN];
	uint8_t icrc[ROCE_ICRC_LEN];
};

/* A float SUM contribution that came before its turn, kept until every child before it was folded. */
struct hold {
	uint32_t next;            /* the slot's next held contribution (a later child), pool index + 1; 0: none;
	                           * on the free list, the next free buffer */
	uint8_t child;
	uint8_t data[SW_MTU];     /* its payload, in wire format: the slot's length */
};

/* A SEND that arrived ahead of a gap on a switch link, kept until the gap is filled. */
struct held_frame {
	struct roce_pkt pkt;
	uint16_t len;                /* 0: free */
	uint8_t data[FRAME_MAX];
};

struct conn {
	struct sw_conn_cfg cfg;
	struct rc_conn rc;           /* rc.una: oldest unacknowledged; rc.spsn: next never sent */
	uint32_t psn_off;            /* a child's: added to its PSNs, they are the slots' (slot_psn()); in a
	                              * hole of the struct, which stays at 232 bytes (below) */
	struct sent_frame *ring;     /* frames una..npsn-1, at (psn - sq_psn) & ring_mask */
	uint8_t (*keep)[SW_MTU];     /* the parent's: the payload of each frame in the ring, at the same index */
	uint32_t snd_nxt;            /* next PSN to put on the wire */
	uint32_t npsn;               /* next PSN to give a frame */
	uint32_t wmax;               /* the window: cfg.window to a switch, no bound to a host */
	uint32_t win;                /* frames allowed in flight: wmax, 1 while probing */
	uint64_t timer_ns;           /* retransmit timer start: last progress or send from una */
	uint64_t hold_until_ns;      /* after an RNR NAK: send nothing before */
	int probing;                 /* a host: the timer resent una alone */
	uint64_t srtt_ns, rttvar_ns; /* smoothed RTT and its variation; srtt 0: no sample yet */
	int backoff;                 /* timeouts since the last progress */
	uint32_t gb_psn, gb_end;     /* the last go-back resent gb_psn..gb_end-1 ... */
	uint64_t gb_ns;              /* ... at this time */
	int to_switch;               /* the peer is a switch (UDP 4792): it holds frames past a gap */
	struct held_frame *held;     /* switch links: frames past a gap, at psn & held_mask */
	uint32_t held_mask, nheld;
	uint16_t ip_id;
	uint32_t ack_owed;           /* SENDs taken since the last ACK/NAK sent to the peer */
	uint32_t cur_imm;            /* a child's: the immediate of its last SEND that carried one, which
	                              * its FIRST and MIDDLE packets (no ImmDt) belong to */
	/* one-byte flags: at 240 bytes instead of 232 a struct conn cost 36 more
	 * instructions per data frame in its lookup and ACK paths (callgrind) */
	uint8_t have_imm;            /* cur_imm is set */
	uint8_t took_this_round;     /* a SEND was taken since the last sw_engine_tick() */
	uint8_t ack_held;            /* a child's: the last ACK stopped at ack_ceiling(), short of what was taken */
	uint32_t acked;              /* ... at this PSN */
};
_Static_assert(sizeof(void *) != 8 || sizeof(struct conn) <= 232, "struct conn grew: it costs instructions per frame");

struct slot {
	int busy;
	uint32_t psn;             /* the packet it aggregates, in the slots' PSNs (slot_psn()) */
	uint32_t imm;
	struct inc_imm m;
	uint8_t opcode;           /* the SEND opcode of its data (every child's agrees), ONLY_WITH_IMM
	                           * when no child carries data: its results go out with it */
	uint8_t ordered;          /* a float SUM: folded in child order (engine.h), not in arrival order */
	uint8_t nfolded;          /* ordered: children 0..nfolded-1 are folded into data */
	uint64_t arrived;         /* bit per child */
	int narrived;
	int have_data;
	int host_order;           /* data is a sum in the making, in host order (inc_load()): until slot_complete() */
	uint16_t len;
	int pending;              /* frames sent from this slot, not yet acknowledged */
	int awaiting;             /* sent up, the parent's result still to come */
	int early;                /* released before every child arrived (SW_FAULT_EARLY_BARRIER):
	                           * kept until the rest arrived, and not completed again */
	uint32_t held;            /* ordered: the first of its held contributions (pool index + 1), 0: none */
	uint8_t data[SW_MTU];
};
/* the order's three fields fill holes: a slot stays at 1,096 bytes */
_Static_assert(sizeof(void *) != 8 || sizeof(struct slot) <= 1096, "struct slot grew: it is multiplied by nslots");

struct sw_engine {
	struct sw_cfg cfg;
	struct conn conn[SW_MAX_CHILDREN + 1]; /* children, then the parent */
	struct conn *parent;
	int nconns;
	uint32_t ring_mask;       /* send rings hold the power of two >= nslots frames */
	uint32_t window;
	uint8_t conn_index[CONN_HASH]; /* conn_find(): 1 + the connection whose peer IP and our QPN hash
	                                * here (linear probing, in connection order), 0: none */
	struct slot *slots;
	uint32_t busy_slots;
	struct hold *holds;       /* the hold buffers (cfg.holds, or its default: nholds) */
	uint32_t nholds;
	uint32_t holds_free;      /* the free list (pool index + 1; 0: empty) ... */
	uint32_t holds_fresh;     /* ... then the buffers never used yet, from this index on */
	uint32_t holds_used;
	uint32_t *downq, downq_head, downq_len; /* slots sent up awaiting results, oldest first */
	int first_rank, nranks, total_ranks;
	sw_tx_fn tx;
	void *ctx;
	enum sw_fault fault;      /* armed by sw_engine_inject(); CORRUPT and DROP disarm when they fire */
	struct roce_icrc_tail tail; /* slot_tail(): the payload being sent, its multiplication tables kept */
	const uint8_t *tx_payload;  /* whose payload txbuf holds after the headers (tx_len bytes, then the pad), or NULL */
	uint16_t tx_len;
	uint8_t tx_hdr_len;         /* ... at this offset */
	const struct conn *tx_conn; /* txbuf holds tx_conn's frame of PSN tx_psn as it is in the ring, or NULL */
	uint32_t tx_psn;
	uint8_t txbuf[FRAME_MAX] __attribute__((aligned(64))); /* frames are put together here to be sent */
	uint32_t next_psn;        /* the PSN of the next slot to complete: slots complete in PSN order */
	uint32_t open_psn;        /* no slot of a PSN before it is in use (ack_ceiling()); at most next_psn */
	struct sw_counters c;
};

/*
 * slot_psn() - the slots' PSN of @psn, a PSN of child @k. Every child's
 * packet k is packet k of the collective, but children start at the first
 * PSN of their kind: hosts at the communicator's host PSN, switches at the
 * switch links' (controller/plan.c). Slots count in the PSNs of child 0, so
 * a switch with children of both kinds puts packet k of each in one slot.
 */
static inline uint32_t slot_psn(const struct conn *k, uint32_t psn)
{
	return (psn + k->psn_off) & ROCE_PSN_MASK;
}

/* Where the frame of @psn lives in @k's ring. A power-of-two ring divides the
 * 2^24 PSN space, so the index stays contiguous when PSNs wrap. */
static uint32_t ring_index(const struct sw_engine *e, const struct conn *k, uint32_t psn)
{
	return (psn - k->cfg.sq_psn) & e->ring_mask;
}

_Static_assert(SW_MAX_CHILDREN + 1 <= UINT8_MAX && 2 * (SW_MAX_CHILDREN + 1) <= CONN_HASH,
	       "conn_index[] holds 1 + a connection's index, and has room to spare");

/* conn_hash() - where connection lookups for @peer_ip and our @qpn start in conn_index[] (Fibonacci hashing). */
static uint32_t conn_hash(uint32_t peer_ip, uint32_t qpn)
{
	return ((peer_ip ^ qpn * 0x9e3779b1u) * 0x9e3779b1u) >> 24 & (CONN_HASH - 1);
}

/*
 * conn_find() - the first connection (in index order) that frames from
 * @src_ip to our @dst_ip and QP @qpn belong to, or -1, as a linear search
 * would find it: conn_index[] probes them in the order they were added.
 */
static int conn_find(const struct sw_engine *e, uint32_t src_ip, uint32_t dst_ip, uint32_t qpn)
{
	for (uint32_t h = conn_hash(src_ip, qpn);; h = (h + 1) & (CONN_HASH - 1)) {
		int i = e->conn_index[h] - 1;

		if (i < 0)
			return -1;
		if (e->conn[i].cfg.peer_ip == src_ip && e->conn[i].cfg.local_qpn == qpn &&
		    e->conn[i].cfg.local_ip == dst_ip)
			return i;
	}
}

/* pow2_at_least() - the smallest power of two >= @n (n <= 2^31). */
static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* nholds() - the hold buffers of an engine for @cfg (valid counts): cfg.holds, or one per slot and child but the first, at most SW_HOLDS_MAX. */
static uint32_t nholds(const struct sw_cfg *cfg)
{
	uint64_t n = cfg->holds ? cfg->holds : (uint64_t)cfg->nslots * (uint64_t)(cfg->nchildren - 1);

	return n < SW_HOLDS_MAX ? (uint32_t)n : SW_HOLDS_MAX;
}

/*
 * engine_bytes() - what sw_engine_new() would allocate for @cfg (valid
 * counts): the slots, the hold buffers, every connection's send ring, the
 * parent's payload copies and queue of slots sent up, and each switch
 * link's frames held past a gap.
 */
static uint64_t engine_bytes(const struct sw_cfg *cfg)
{
	uint64_t ring = pow2_at_least(cfg->nslots), held = pow2_at_least(cfg->window ? cfg->window : SW_WINDOW);
	uint64_t n = sizeof(struct sw_engine) + (uint64_t)cfg->nslots * sizeof(struct slot) +
		     (uint64_t)nholds(cfg) * sizeof(struct hold);

	for (int i = 0; i < cfg->nchildren + !!cfg->has_parent; i++) {
		const struct sw_conn_cfg *c = i < cfg->nchildren ? &cfg->child[i] : &cfg->parent;
		n += ring * sizeof(struct sent_frame);
		if (c->udp_dst == ROCE_PORT_SWITCH)
			n += held * sizeof(struct held_frame);
	}
	if (cfg->has_parent)
		n += ring * SW_MTU + (uint64_t)cfg->nslots * sizeof(uint32_t);
	return n;
}

struct sw_engine *sw_engine_new(const struct sw_cfg *cfg, sw_tx_fn tx, void *ctx)
{
	struct sw_engine *e;
	int next_rank;

	if (cfg->nchildren < 1 || cfg->nchildren > SW_MAX_CHILDREN || cfg->nslots < 1 || cfg->nslots > SW_MAX_SLOTS ||
	    cfg->window > SW_MAX_WINDOW || cfg->holds > SW_HOLDS_MAX) {
		fprintf(stderr, "switch: need 1..%d children, 1..%u slots, a window of at most %u and at most %u hold "
			"buffers (got %d, %u, %u, %u)\n", SW_MAX_CHILDREN, SW_MAX_SLOTS, SW_MAX_WINDOW, SW_HOLDS_MAX,
			cfg->nchildren, cfg->nslots, cfg->window, cfg->holds);
		return NULL;
	}
	if (engine_bytes(cfg) > SW_MEM_MAX) {
		fprintf(stderr, "switch: %u slots, %d children%s and a window of %u need %llu MiB, more than the %u MiB "
			"a switch may use (SW_MEM_MAX)\n", cfg->nslots, cfg->nchildren, cfg->has_parent ? ", a parent" : "",
			cfg->window ? cfg->window : SW_WINDOW, (unsigned long long)(engine_bytes(cfg) >> 20),
			SW_MEM_MAX >> 20);
		return NULL;
	}
	next_rank = cfg->child[0].first_rank;
	for (int i = 0; i < cfg->nchildren; i++) {
		if (cfg->child[i].first_rank != next_rank || cfg->child[i].nranks < 1) {
			fprintf(stderr, "switch: child %d must cover ranks from %d on (got %u+%u)\n", i, next_rank,
				cfg->child[i].first_rank, cfg->child[i].nranks);
			return NULL;
		}
		next_rank += cfg->child[i].nranks;
	}
	if (!(e = calloc(1, sizeof(*e))) || !(e->slots = calloc(cfg->nslots, sizeof(*e->slots)))) {
		free(e);
		fprintf(stderr, "switch: out of memory for %u slots\n", cfg->nslots);
		return NULL;
	}
	e->cfg = *cfg;
	e->first_rank = cfg->child[0].first_rank;
	e->nranks = next_rank - e->first_rank;
	e->total_ranks = cfg->total_ranks ? cfg->total_ranks : next_rank;
	if (e->first_rank + e->nranks > e->total_ranks || (!cfg->has_parent && e->first_rank != 0)) {
		fprintf(stderr, "switch: children cover ranks %d..%d, outside the communicator's %d\n", e->first_rank,
			next_rank - 1, e->total_ranks);
		sw_engine_free(e);
		return NULL;
	}
	e->nholds = nholds(cfg);
	/* not cleared: a buffer is written before it is read, and only those ever used are touched */
	if (e->nholds && !(e->holds = malloc((size_t)e->nholds * sizeof(*e->holds)))) {
		fprintf(stderr, "switch: out of memory for %u hold buffers\n", e->nholds);
		sw_engine_free(e);
		return NULL;
	}
	e->tx = tx;
	e->ctx = ctx;
	e->next_psn = e->open_psn = cfg->child[0].rq_psn;
	e->window = cfg->window ? cfg->window : SW_WINDOW;
	e->ring_mask = pow2_at_least(cfg->nslots) - 1;
	e->nconns = cfg->nchildren + (cfg->has_parent ? 1 : 0);
	if (cfg->has_parent) {
		e->parent = &e->conn[cfg->nchildren];
		if (!(e->downq = calloc(cfg->nslots, sizeof(*e->downq)))) {
			sw_engine_free(e);
			return NULL;
		}
	}
	for (int i = 0; i < e->nconns; i++) {
		struct conn *k = &e->conn[i];
		k->cfg = i < cfg->nchildren ? cfg->child[i] : cfg->parent;
		rc_conn_init(&k->rc, k->cfg.rq_psn, k->cfg.sq_psn);
		if (i < cfg->nchildren)
			k->psn_off = (cfg->child[0].rq_psn - k->cfg.rq_psn) & ROCE_PSN_MASK;
		k->snd_nxt = k->npsn = k->rc.spsn;
		k->to_switch = k->cfg.udp_dst == ROCE_PORT_SWITCH;
		/* a host bounds what it has outstanding itself (libinccl's window) */
		k->win = k->wmax = k->to_switch ? e->window : e->ring_mask + 1;
		if (k->to_switch) { /* the peer sends at most a window past our expected PSN */
			k->held_mask = pow2_at_least(e->window) - 1;
			k->held = calloc(k->held_mask + 1ull, sizeof(*k->held));
		}
		uint32_t h = conn_hash(k->cfg.peer_ip, k->cfg.local_qpn);
		while (e->conn_index[h])
			h = (h + 1) & (CONN_HASH - 1);
		e->conn_index[h] = (uint8_t)(i + 1);
		k->ring = calloc(e->ring_mask + 1ull, sizeof(*k->ring));
		if (k == e->parent)
			k->keep = calloc(e->ring_mask + 1ull, sizeof(*k->keep));
		if (!k->ring || (k->to_switch && !k->held) || (k == e->parent && !k->keep)) {
			sw_engine_free(e);
			fprintf(stderr, "switch: out of memory for the send rings\n");
			return NULL;
		}
	}
	return e;
}

void sw_engine_free(struct sw_engine *e)
{
	if (!e)
		return;
	for (int i = 0; i < SW_MAX_CHILDREN + 1; i++) {
		free(e->conn[i].ring);
		free(e->conn[i].keep);
		free(e->conn[i].held);
	}
	free(e->downq);
	free(e->holds);
	free(e->slots);
	free(e);
}

const struct sw_counters *sw_engine_counters(const struct sw_engine *e)
{
	return &e->c;
}

/* enum sw_fault's names, as lab.sh fault and incswitch's fault file spell them */
static const char *const fault_names[] = { "off", "corrupt", "drop", "early-barrier" };

int sw_fault_parse(const char *s, enum sw_fault *f)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, fault_names[i])) {
			*f = (enum sw_fault)i;
			return 0;
		}
	return -1;
}

const char *sw_fault_name(enum sw_fault f)
{
	return (unsigned)f < 4 ? fault_names[f] : "?";
}

int sw_engine_inject(struct sw_engine *e, enum sw_fault f)
{
	if (f == SW_FAULT_DROP && e->cfg.nchildren < 2)
		return -1; /* nobody else's data would make the result */
	if (f == SW_FAULT_EARLY_BARRIER)
		for (int i = 0; i < e->cfg.nchildren; i++)
			if (e->conn[i].to_switch)
				return -1; /* a child switch would get a result it did not ask for */
	e->fault = f;
	return 0;
}

uint32_t sw_engine_busy_slots(const struct sw_engine *e)
{
	return e->busy_slots;
}

/* Build a frame to child @k; the caller fills opcode-specific fields. */
static struct roce_build frame_to(struct conn *k)
{
	return (struct roce_build){ .src_mac = k->cfg.local_mac, .dst_mac = k->cfg.peer_mac,
				    .src_ip = k->cfg.local_ip, .dst_ip = k->cfg.peer_ip,
				    .src_port = (uint16_t)(0xc000 | (k->cfg.local_qpn & 0x3fff)),
				    .dst_port = k->cfg.udp_dst, .dest_qp = k->cfg.peer_qpn, .ip_id = k->ip_id++ };
}

static void emit(struct sw_engine *e, struct conn *k, const uint8_t *f, size_t len)
{
	e->tx(e->ctx, k->cfg.port, f, len);
	e->c.tx_frames++;
}

static void send_aeth(struct sw_engine *e, struct conn *k, uint32_t psn, uint8_t syndrome)
{
	struct roce_build b = frame_to(k);
	uint8_t f[ROCE_HDRS_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN];

	k->ack_owed = 0; /* any ACK or NAK acknowledges everything taken so far */
	b.opcode = RC_ACK;
	b.psn = psn;
	b.has_aeth = 1;
	b.syndrome = syndrome;
	b.msn = k->rc.msn;
	switch (syndrome & AETH_TYPE_MASK) {
	case AETH_TYPE_ACK: e->c.acks_tx++; break;
	case AETH_TYPE_RNR_NAK: e->c.rnr_naks_tx++; break;
	default: e->c.naks_tx++; break;
	}
	emit(e, k, f, roce_build_frame(f, sizeof(f), &b));
}

/*
 * ack_ceiling() - the newest PSN a child may be acknowledged
 * (ACK_AHEAD_RESERVE); only for a table of more than two reserves. Moves
 * open_psn over the slots freed since; amortised O(1).
 */
static uint32_t ack_ceiling(struct sw_engine *e)
{
	while (e->open_psn != e->next_psn) {
		const struct slot *sl = &e->slots[e->open_psn % e->cfg.nslots];

		if (sl->busy && sl->psn == e->open_psn)
			break;
		e->open_psn = (e->open_psn + 1) & ROCE_PSN_MASK;
	}
	return (e->open_psn + e->cfg.nslots - 1 - ACK_AHEAD_RESERVE) & ROCE_PSN_MASK;
}

/*
 * ack_taken() - ACK everything taken from @k's peer; from a child, only up
 * to ack_ceiling(), and then the rest is owed (k->ack_held) until
 * sw_engine_tick() finds the ceiling moved by as many as an ACK covers
 * (ACK_EVERY, SWITCH_ACK_EVERY), or past all. An ACK the peer has already
 * had is sent again only if @again (the peer resent: it lost that ACK).
 */
static __attribute__((noinline, cold)) void ack_taken(struct sw_engine *e, struct conn *k, int again)
{
	uint32_t psn = (k->rc.epsn - 1) & ROCE_PSN_MASK, ceil;

	/* the ceiling in @k's own PSNs: k->acked and the ACK are in them */
	if (k != e->parent && e->cfg.nslots > 2 * ACK_AHEAD_RESERVE &&
	    roce_psn_diff(psn, ceil = (ack_ceiling(e) - k->psn_off) & ROCE_PSN_MASK) > 0) {
		if (k->ack_held && !again && roce_psn_diff(ceil, k->acked) < (k->to_switch ? SWITCH_ACK_EVERY : ACK_EVERY)) {
			k->ack_owed = 0;
			return;
		}
		if (!k->ack_held)
			e->c.acks_held++;
		k->ack_held = 1;
		k->acked = psn = ceil;
	} else {
		k->ack_held = 0;
	}
	send_aeth(e, k, psn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
}

/*
 * ack_later() - the SEND just taken from @k's peer asked for an ACK: send one
 * for everything taken so far once ACK_EVERY are owed (SWITCH_ACK_EVERY to a switch).
 * sw_engine_tick() sends the rest: to a switch at the end of every round, to a
 * host once a round has passed without a new SEND from it (it paused).
 */
static void ack_later(struct sw_engine *e, struct conn *k)
{
	k->took_this_round = 1;
	if (++k->ack_owed >= (k->to_switch ? SWITCH_ACK_EVERY : ACK_EVERY))
		ack_taken(e, k, 0);
}

/* tx_forget() - a slot's data changes: txbuf holds no payload or frame that can be taken as it is. */
static inline void tx_forget(struct sw_engine *e)
{
	e->tx_payload = NULL;
	e->tx_conn = NULL;
}

/* payload_of() - where the payload of @k's frame @sf (at ring index @i) is kept. */
static inline const uint8_t *payload_of(const struct sw_engine *e, const struct conn *k, const struct sent_frame *sf,
					uint32_t i)
{
	return k->keep ? k->keep[i] : e->slots[sf->slot].data;
}

/*
 * frame_of() - @k's frame of PSN @psn, whole, in txbuf: as it is if it was
 * the last put there, else its headers, payload (unless txbuf has it
 * already), zero pad bytes and ICRC.
 */
static const uint8_t *frame_of(struct sw_engine *e, const struct conn *k, uint32_t psn)
{
	uint32_t i = ring_index(e, k, psn);
	const struct sent_frame *sf = &k->ring[i];
	const uint8_t *payload;
	uint8_t *f = e->txbuf;

	if (e->tx_conn == k && e->tx_psn == psn)
		return f;
	payload = payload_of(e, k, sf, i);
	memcpy(f, sf->hdrs, sf->hdr_len);
	if (e->tx_payload != payload || e->tx_len != sf->payload_len || e->tx_hdr_len != sf->hdr_len) {
		memcpy(f + sf->hdr_len, payload, sf->payload_len);
		memset(f + sf->hdr_len + sf->payload_len, 0, sf->len - ROCE_ICRC_LEN - sf->hdr_len - sf->payload_len);
		e->tx_payload = payload;
		e->tx_len = sf->payload_len;
		e->tx_hdr_len = sf->hdr_len;
	}
	memcpy(f + sf->len - ROCE_ICRC_LEN, sf->icrc, ROCE_ICRC_LEN);
	e->tx_conn = k;
	e->tx_psn = psn;
	return f;
}

/*
 * resend_asking() - put @k's frame of PSN @psn on the wire again, asking for an
 * ACK: its AckReq bit set (and its ICRC redone) in the ring and in txbuf.
 * Results to a host ask for an ACK only every HOST_ACK_EVERY frames (rxe's
 * responder ACKs only frames that ask, and an ACK covers all before it); a
 * resent frame always asks, so the tail of a burst is acknowledged after
 * tail_probe(), or the timer's probe at the latest.
 */
static void resend_asking(struct sw_engine *e, struct conn *k, uint32_t psn)
{
	struct sent_frame *sf = &k->ring[ring_index(e, k, psn)];
	uint8_t *f = (uint8_t *)frame_of(e, k, psn);

	sf->resent = 1;
	if (!(sf->hdrs[ROCE_BTH_ACKREQ_OFF] & ROCE_BTH_ACKREQ)) {
		sf->hdrs[ROCE_BTH_ACKREQ_OFF] |= ROCE_BTH_ACKREQ;
		f[ROCE_BTH_ACKREQ_OFF] |= ROCE_BTH_ACKREQ;
		roce_icrc_store(f, sf->len);
		memcpy(sf->icrc, f + sf->len - ROCE_ICRC_LEN, ROCE_ICRC_LEN);
	}
	emit(e, k, f, sf->len);
}

/* resend() - resend_asking(), counted as a retransmit (the frame, or what followed it, was lost or late). */
static void resend(struct sw_engine *e, struct conn *k, uint32_t psn)
{
	e->c.retransmits++;
	resend_asking(e, k, psn);
}

/*
 * xmit() - put @k's frames on the wire from snd_nxt while fewer than k->win
 * are in flight and no RNR delay holds the connection. The first send of a
 * PSN takes it from the RC sequence (so ACKs are checked against what was
 * really sent) and is timed for the RTT; a later one is a retransmit.
 */
static inline void xmit(struct sw_engine *e, struct conn *k, uint64_t now)
{
	while (k->snd_nxt != k->npsn && ((k->snd_nxt - k->rc.una) & ROCE_PSN_MASK) < k->win &&
	       now >= k->hold_until_ns) {
		struct sent_frame *sf = &k->ring[ring_index(e, k, k->snd_nxt)];

		if (k->snd_nxt == k->rc.una)
			k->timer_ns = now; /* the timer runs for the oldest frame in flight */
		if (k->snd_nxt == k->rc.spsn) {
			rc_conn_next_psn(&k->rc);
			sf->sent_ns = now;
			emit(e, k, frame_of(e, k, k->snd_nxt), sf->len);
		} else {
			resend(e, k, k->snd_nxt);
		}
		k->snd_nxt = (k->snd_nxt + 1) & ROCE_PSN_MASK;
	}
}

/*
 * go_back() - resend from una (go-back-N) with @win frames in flight: the
 * window after a sequence NAK, 1 (a probe) after an RNR NAK or a timeout.
 * Remembers what it resent for the NAK guard.
 */
static void go_back(struct sw_engine *e, struct conn *k, uint32_t win, uint64_t now)
{
	k->snd_nxt = k->rc.una;
	k->win = win;
	xmit(e, k, now);
	k->gb_psn = k->rc.una;
	k->gb_end = k->snd_nxt;
	k->gb_ns = now;
}

/*
 * probe() - a host's ACKs stopped: resend one frame, asking for an ACK, and
 * leave the rest where it is. Under TCG the ACKs are usually only late (a
 * stalled guest): going back at once sent ~90 frames the host already had
 * per timeout. The first timeout resends the newest frame sent (a tail
 * probe): a host that has everything acknowledges everything, one that
 * misses frames answers with a sequence NAK, and retry() goes back to the
 * PSN it names. rxe NAKs a gap only once (a lost NAK leaves the tail
 * probe unanswered), so later timeouts without progress resend una
 * instead, which the host answers with an ACK of all it has; what that
 * leaves unacknowledged was lost, and rx_ack() goes back for it. (Probing
 * una first, a late ACK of exactly una read as "only the probe arrived":
 * 37,342 frames resent to hosts that had them in a 512 MiB AllReduce at one
 * leaf.)
 */
static void probe(struct sw_engine *e, struct conn *k, uint64_t now)
{
	uint32_t psn = k->rc.una;

	if (k->backoff <= 1 && k->snd_nxt != k->rc.una)
		psn = (k->snd_nxt - 1) & ROCE_PSN_MASK;
	else
		k->probing = 1;
	resend(e, k, psn);
	k->timer_ns = now;
	k->gb_psn = psn;
	k->gb_end = (psn + 1) & ROCE_PSN_MASK;
	k->gb_ns = now;
}

/*
 * resend_gap() - a switch peer needs una again (its NAK, our timeout): it kept
 * what followed the gap, so resend only the gap, without going back. The gap
 * is one frame, or twice the last one if it starts where the last ended:
 * frames lost together (a full socket buffer, a stalled peer) come back in
 * log2(n) round trips, not n. Remembered for the NAK guard. Always at least
 * una: after an RNR NAK, go_back() remembers an empty resend at una (nothing
 * goes out before the delay is over), and twice that was nothing: if the
 * probe sent after the delay was lost, every timeout from then on resent no
 * frame, and the link to the parent stayed dead for good (a 1-4-16 tree in
 * test_tree.c's simulation hung so, the root's slots full of the other
 * leaves' data).
 */
static void resend_gap(struct sw_engine *e, struct conn *k, uint64_t now)
{
	uint32_t n = 1, sent = (k->snd_nxt - k->rc.una) & ROCE_PSN_MASK;

	if (k->rc.una == k->gb_end && k->gb_end != k->gb_psn)
		n = 2 * ((k->gb_end - k->gb_psn) & ROCE_PSN_MASK);
	if (n > e->window)
		n = e->window;
	if (sent && n > sent)
		n = sent;
	k->gb_psn = k->rc.una;
	k->gb_end = (k->rc.una + n) & ROCE_PSN_MASK;
	k->gb_ns = now;
	k->timer_ns = now;
	for (uint32_t i = 0; i < n && i < sent; i++)
		resend(e, k, (k->rc.una + i) & ROCE_PSN_MASK);
	xmit(e, k, now); /* what a go-back left unsent */
}

/* rtt_update() - fold one RTT sample into srtt and rttvar (RFC 6298, gains 1/8 and 1/4). */
static void rtt_update(struct conn *k, uint64_t rtt)
{
	if (!k->srtt_ns) {
		k->srtt_ns = rtt ? rtt : 1;
		k->rttvar_ns = rtt / 2;
		return;
	}
	uint64_t err = rtt > k->srtt_ns ? rtt - k->srtt_ns : k->srtt_ns - rtt;
	k->rttvar_ns = (3 * k->rttvar_ns + err) / 4;
	k->srtt_ns = (7 * k->srtt_ns + rtt) / 8;
}

/* rto() - @k's retransmit timeout: srtt + 4 rttvar (cfg.retransmit_ns before a
 * sample), at least RTO_MIN_NS, doubled per timeout, at most cfg.retransmit_ns. */
static uint64_t rto(const struct sw_engine *e, const struct conn *k)
{
	uint64_t t = k->srtt_ns ? k->srtt_ns + 4 * k->rttvar_ns : e->cfg.retransmit_ns;

	uint64_t floor = e->cfg.min_rto_ns > RTO_MIN_NS ? e->cfg.min_rto_ns : RTO_MIN_NS;
	t = (t > floor ? t : floor) << k->backoff;
	return t < e->cfg.retransmit_ns ? t : e->cfg.retransmit_ns;
}

/*
 * slot_tail() - the share of slot @s's payload in the ICRC of the frames
 * that carry it (e->tail), or NULL where a payload below TAIL_MIN_LEN makes
 * the whole ICRC as cheap. Call when the slot's data is final, right before
 * send_slot(): the CRC then runs over the payload once per slot, not once
 * per frame.
 */
static const struct roce_icrc_tail *slot_tail(struct sw_engine *e, uint32_t s)
{
	struct slot *sl = &e->slots[s];

	if (!sl->have_data || sl->len < TAIL_MIN_LEN)
		return NULL;
	roce_icrc_tail(&e->tail, sl->data, sl->len);
	return &e->tail;
}

/* Send slot @s's data to connection @k (a child's result, or up to the parent):
 * the frame takes the next PSN, waits for the window if need be, and is kept
 * until acknowledged. @tail: slot_tail() of the slot, or NULL. Built in
 * txbuf, where the payload may be already (the same slot's frame to another
 * child), the ring keeping its headers and ICRC. */
static void send_slot(struct sw_engine *e, struct conn *k, uint32_t s, const struct roce_icrc_tail *tail,
		      uint64_t now)
{
	struct slot *sl = &e->slots[s];
	struct roce_build b = frame_to(k);
	struct sent_frame *sf;
	const uint8_t *payload = sl->data;
	uint32_t i;
	uint8_t hl;

	b.opcode = sl->opcode;
	b.ack_req = k->to_switch || (k->npsn & (HOST_ACK_EVERY - 1)) == HOST_ACK_EVERY - 1 || k->npsn == k->rc.una;
	b.has_imm = roce_opcode_has_imm(sl->opcode);
	b.imm = sl->imm;
	hl = ROCE_HDRS_LEN + (b.has_imm ? ROCE_IMM_LEN : 0);
	b.payload_len = sl->have_data ? sl->len : 0;
	b.tail = tail;
	b.psn = k->npsn;
	k->npsn = (k->npsn + 1) & ROCE_PSN_MASK;
	i = ring_index(e, k, b.psn);
	if (k->keep) { /* the parent's frames keep their own copy */
		memcpy(k->keep[i], sl->data, b.payload_len);
		payload = k->keep[i];
		tx_forget(e);
	}
	/* a payload already in place after the headers is not copied again (roce_build_frame()) */
	b.payload = e->tx_payload == payload && e->tx_len == b.payload_len && e->tx_hdr_len == hl ? e->txbuf + hl
												   : payload;
	sf = &k->ring[i];
	sf->slot = s;
	sf->resent = 0;
	sf->hdr_len = hl;
	sf->len = (uint16_t)roce_build_frame(e->txbuf, sizeof(e->txbuf), &b);
	sf->payload_len = (uint16_t)b.payload_len;
	memcpy(sf->hdrs, e->txbuf, hl);
	memcpy(sf->icrc, e->txbuf + sf->len - ROCE_ICRC_LEN, ROCE_ICRC_LEN);
	e->tx_payload = payload;
	e->tx_len = sf->payload_len;
	e->tx_hdr_len = hl;
	e->tx_conn = k;
	e->tx_psn = b.psn;
	sl->pending++;
	if (k == e->parent)
		e->c.sent_up++;
	else
		e->c.results_tx++;
	xmit(e, k, now);
}

/* Does child @k take the result of an operation with immediate @m? */
static int child_wants(const struct conn *k, const struct inc_imm *m)
{
	int holds_dest = m->dest_rank >= k->cfg.first_rank && m->dest_rank < k->cfg.first_rank + k->cfg.nranks;

	switch (m->prim) {
	case INC_REDUCE:
	case INC_ROUTE: /* the source is never the destination (hostlib/coll.c copies its own block) */
		return holds_dest;
	case INC_BROADCAST: /* a host that is the root already has the data */
		return !(holds_dest && k->cfg.nranks == 1);
	default:
		return 1;
	}
}

static void slot_free_if_done(struct sw_engine *e, struct slot *sl)
{
	if (sl->busy && sl->pending == 0 && !sl->awaiting && (!sl->early || sl->narrived == e->cfg.nchildren)) {
		sl->busy = 0;
		e->busy_slots--;
	}
}

/* The result of slot @s is known: send it to every child that wants it. */
static void deliver_down(struct sw_engine *e, uint32_t s, uint64_t now)
{
	const struct roce_icrc_tail *tail = slot_tail(e, s);

	for (int i = 0; i < e->cfg.nchildren; i++)
		if (child_wants(&e->conn[i], &e->slots[s].m))
			send_slot(e, &e->conn[i], s, tail, now);
	slot_free_if_done(e, &e->slots[s]);
}

/* Does any child of this switch want the result (so a leaf must wait for it)? */
static int subtree_wants(const struct sw_engine *e, const struct inc_imm *m)
{
	for (int i = 0; i < e->cfg.nchildren; i++)
		if (child_wants(&e->conn[i], m))
			return 1;
	return 0;
}

static void slot_complete(struct sw_engine *e, uint32_t s, uint64_t now);

/*
 * early_barrier() - SW_FAULT_EARLY_BARRIER: release barrier slot @s, which
 * some children entered, now, if every slot before it has completed (a
 * result must not overtake an earlier one on any connection: the hosts
 * take results in order, and a parent matches them by PSN).
 */
static void early_barrier(struct sw_engine *e, uint32_t s, uint64_t now)
{
	struct slot *sl = &e->slots[s];

	if (e->fault != SW_FAULT_EARLY_BARRIER || !sl->busy || sl->early || sl->narrived == 0 ||
	    sl->narrived == e->cfg.nchildren || sl->psn != e->next_psn || sl->m.op != INC_OP_BARRIER ||
	    sl->m.prim != INC_ALLREDUCE)
		return;
	sl->early = 1;
	e->c.faults_injected++;
	slot_complete(e, s, now);
}

/* elem_size() - the bytes of one element of @sl's collective (a decoded dtype: 2, 4 or 8). */
static size_t elem_size(const struct slot *sl)
{
	size_t w = inc_dtype_size(sl->m.dtype);

	return w ? w : 4;
}

static void slot_complete(struct sw_engine *e, uint32_t s, uint64_t now)
{
	struct slot *sl = &e->slots[s];

	e->c.slots_completed++;
	e->next_psn = (sl->psn + 1) & ROCE_PSN_MASK;
	tx_forget(e); /* the slot's data is stored (and may be corrupted) below */
	if (sl->host_order) { /* the sum is complete: wire format from here on */
		inc_store(sl->data, sl->len, sl->m.dtype);
		sl->host_order = 0;
	}
	if (e->fault == SW_FAULT_CORRUPT && sl->have_data && sl->len >= elem_size(sl)) {
		/* the top bit of byte 1 of the middle element (big-endian): bit 23 of a 4-byte one */
		sl->data[(sl->len / elem_size(sl) / 2) * elem_size(sl) + 1] ^= 0x80;
		e->fault = SW_FAULT_NONE;
		e->c.faults_injected++;
	}
	if (!e->parent) {
		deliver_down(e, s, now);
	} else {
		if (subtree_wants(e, &sl->m)) {
			sl->awaiting = 1;
			e->downq[(e->downq_head + e->downq_len++) % e->cfg.nslots] = s;
		}
		send_slot(e, e->parent, s, slot_tail(e, s), now);
	}
	if (e->fault == SW_FAULT_EARLY_BARRIER) /* a barrier entered early may go now */
		early_barrier(e, e->next_psn % e->cfg.nslots, now);
}

static int imm_valid(const struct sw_engine *e, const struct inc_imm *m)
{
	if (m->prim == INC_ALLREDUCE)
		return m->dest_rank == INC_RANK_ALL;
	return m->dest_rank < e->total_ranks;
}

/*
 * send_imm() - the immediate of the collective that @p, the next SEND on
 * connection @k, belongs to; or -1 when it breaks the protocol. A collective's
 * first packet is a SEND_ONLY_WITH_IMM; its later ones may travel in messages
 * (SEND_FIRST, SEND_MIDDLE*, SEND_LAST_WITH_IMM), whose FIRST and MIDDLE
 * packets carry no immediate: they belong to @k's last SEND that carried one
 * (k->cur_imm), and a LAST's must be that same one, or that one with
 * INC_IMM_LAST (the call's last packet ends this message). Nothing but a new
 * call's SEND_ONLY_WITH_IMM follows a packet with INC_IMM_LAST. FIRST and
 * MIDDLE carry a whole MTU (IBTA 9.7.7; rxe_resp.c check_length() demands
 * the same of what the switch sends). Any other opcode, a packet out of its
 * message's sequence, or one over an MTU is refused.
 */
static int64_t send_imm(const struct conn *k, const struct roce_pkt *p)
{
	int open = k->have_imm && !(k->cur_imm & INC_IMM_LAST); /* a call goes on: a message may continue it */

	if (!rc_conn_in_sequence(&k->rc, p->opcode) || p->payload_len > SW_MTU)
		return -1;
	switch (p->opcode) {
	case RC_SEND_ONLY_WITH_IMM:
		return p->imm;
	case RC_SEND_LAST_WITH_IMM:
		return open && (p->imm & ~INC_IMM_LAST) == k->cur_imm ? (int64_t)p->imm : -1;
	case RC_SEND_FIRST:
	case RC_SEND_MIDDLE:
		return open && p->payload_len == SW_MTU ? (int64_t)k->cur_imm : -1;
	default:
		return -1;
	}
}

/* accept() - take @p, the next SEND on @k, into @k's RC state; one with an
 * immediate names the collective its FIRST and MIDDLE packets belong to. */
static inline void accept(struct conn *k, const struct roce_pkt *p)
{
	rc_conn_accept(&k->rc, p->opcode);
	if (p->has_imm) {
		k->cur_imm = p->imm;
		k->have_imm = 1;
	}
}

/* count_refused() - count SEND @p, which send_imm() refused: too long, or no place in the protocol. */
static void count_refused(struct sw_engine *e, const struct roce_pkt *p)
{
	if (p->payload_len > SW_MTU)
		e->c.drop_oversize++;
	else
		e->c.drop_bad_op++;
}

/* A SEND that is not the next one expected: re-ACK a duplicate, NAK a gap once. */
static void rx_not_next(struct sw_engine *e, struct conn *k, const struct roce_pkt *p)
{
	enum rc_rx_verdict v = rc_conn_rx(&k->rc, p);
	uint32_t apsn, amsn;
	uint8_t syn;

	if (v == RC_RX_DUPLICATE)
		e->c.duplicates++;
	else
		e->c.drop_seq++;
	if (v == RC_RX_DUPLICATE)
		ack_taken(e, k, 1); /* not past the ceiling: a held-back sender's timeout resends */
	else if (rc_conn_ack_fields(&k->rc, p, v, &apsn, &syn, &amsn))
		send_aeth(e, k, apsn, syn);
}

/* The next SEND from the parent (PSN as expected): the result of the oldest
 * slot awaiting one. ACK it if @ack, and fan it out; or NAK a mismatch. */
static void take_from_parent(struct sw_engine *e, const struct roce_pkt *p, const uint8_t *frame, int ack, uint64_t now)
{
	struct conn *k = e->parent;
	struct slot *sl = e->downq_len ? &e->slots[e->downq[e->downq_head]] : NULL;
	int64_t imm = send_imm(k, p);

	if (!sl || imm < 0 || (uint32_t)imm != sl->imm) {
		if (imm < 0)
			count_refused(e, p);
		else
			e->c.drop_mismatch++;
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
		return;
	}
	accept(k, p);
	tx_forget(e);
	sl->opcode = p->opcode; /* a Broadcast's data may come from another subtree */
	memcpy(sl->data, frame + p->payload_off, p->payload_len);
	sl->len = (uint16_t)p->payload_len;
	sl->have_data = p->payload_len > 0;
	sl->awaiting = 0;
	e->downq_head = (e->downq_head + 1) % e->cfg.nslots;
	e->downq_len--;
	e->c.results_from_parent++;
	if (ack && p->ack_req)
		ack_later(e, k);
	deliver_down(e, (uint32_t)(sl - e->slots), now);
}

/* order_matters() - is @m a reduction whose result depends on the order of its combines: a float SUM? */
static inline int order_matters(const struct inc_imm *m)
{
	return m->op == INC_OP_SUM && (m->prim == INC_ALLREDUCE || m->prim == INC_REDUCE) &&
	       (m->dtype == INC_FLOAT16 || m->dtype == INC_BFLOAT16 || m->dtype == INC_FLOAT32 || m->dtype == INC_FLOAT64);
}

/* fold_next() - fold the contribution of child sl->nfolded (wire format, the slot's length) into @sl. */
static inline void fold_next(struct sw_engine *e, struct slot *sl, const uint8_t *payload)
{
	if (sl->nfolded++ == 0) {
		inc_load(sl->data, payload, sl->len, sl->m.dtype);
		sl->host_order = 1;
	} else {
		inc_combine_host(sl->data, payload, sl->len / elem_size(sl), sl->m.op, sl->m.dtype);
		e->c.aggregations++;
	}
}

/*
 * fold_in_order() - take @child's contribution @p (@payload) to ordered
 * slot @sl: fold it if its turn has come, and then every held one whose
 * turn that brings; else keep it in a hold buffer. Return: 0; -1 if it
 * does not match the slot's length or place in a message; -2 if it must
 * wait and every hold buffer is taken (nothing of it was taken).
 */
static int fold_in_order(struct sw_engine *e, struct slot *sl, int child, const struct roce_pkt *p,
			 const uint8_t *payload)
{
	uint32_t i, *at;
	struct hold *h;

	if (sl->have_data &&
	    (p->payload_len != sl->len || p->payload_len % elem_size(sl) || p->opcode != sl->opcode))
		return -1;
	if (child != sl->nfolded && !e->holds_free && e->holds_fresh == e->nholds) {
		e->c.holds_full++;
		return -2;
	}
	if (!sl->have_data) { /* the first to come, whoever it is, sets what the others must match */
		sl->len = (uint16_t)p->payload_len;
		sl->opcode = p->opcode;
		sl->have_data = 1;
	}
	if (child != sl->nfolded) { /* a child before it has not come: hold it, in child order */
		if (e->holds_free) {
			i = e->holds_free - 1;
			e->holds_free = e->holds[i].next;
		} else {
			i = e->holds_fresh++;
		}
		h = &e->holds[i];
		h->child = (uint8_t)child;
		memcpy(h->data, payload, sl->len);
		for (at = &sl->held; *at && e->holds[*at - 1].child < child; at = &e->holds[*at - 1].next)
			;
		h->next = *at;
		*at = i + 1;
		e->c.held_for_turn++;
		if (++e->holds_used > e->c.holds_peak)
			e->c.holds_peak = e->holds_used;
		return 0;
	}
	fold_next(e, sl, payload);
	while (sl->held && e->holds[sl->held - 1].child == sl->nfolded) { /* the held ones now due */
		i = sl->held - 1;
		h = &e->holds[i];
		fold_next(e, sl, h->data);
		sl->held = h->next;
		h->next = e->holds_free;
		e->holds_free = i + 1;
		e->holds_used--;
	}
	return 0;
}

/*
 * Fold a child's packet @p of collective @imm into its slot: a float SUM
 * in child order (fold_in_order()), anything else as it comes. Return 0; -1
 * if it does not match the slot: another collective, another length, or
 * another place in a message (opcode) than the other children's data; -2
 * if it must wait for its turn and no hold buffer is free.
 */
static int fold(struct sw_engine *e, struct slot *sl, int child, uint32_t imm, const struct roce_pkt *p,
		const uint8_t *payload)
{
	if (sl->narrived > 0 && sl->imm != imm)
		return -1;
	if (sl->narrived == 0) {
		sl->imm = imm;
		inc_imm_decode(imm, &sl->m);
		sl->opcode = RC_SEND_ONLY_WITH_IMM;
		sl->ordered = (uint8_t)order_matters(&sl->m);
	}
	if (e->fault == SW_FAULT_DROP && child == e->cfg.nchildren - 1 && sl->m.prim != INC_BROADCAST &&
	    sl->m.prim != INC_ROUTE && sl->m.op != INC_OP_BARRIER) {
		/* counted as arrived, its data left out */
		e->fault = SW_FAULT_NONE;
		e->c.faults_injected++;
	} else if (sl->m.prim == INC_BROADCAST || sl->m.prim == INC_ROUTE || sl->m.op == INC_OP_BARRIER) {
		/* only one rank carries data (a Broadcast's root, a Route's source),
		 * in messages or not; everyone else sends an empty SEND_ONLY_WITH_IMM */
		if (p->payload_len) {
			if (sl->have_data)
				return -1;
			memcpy(sl->data, payload, p->payload_len);
			sl->len = (uint16_t)p->payload_len;
			sl->have_data = 1;
			sl->opcode = p->opcode;
		} else if (p->opcode != RC_SEND_ONLY_WITH_IMM) {
			return -1;
		}
	} else if (sl->ordered) {
		int r = fold_in_order(e, sl, child, p, payload);
		if (r < 0)
			return r;
	} else if (!sl->have_data) {
		inc_load(sl->data, payload, p->payload_len, sl->m.dtype);
		sl->len = (uint16_t)p->payload_len;
		sl->have_data = 1;
		sl->host_order = 1;
		sl->opcode = p->opcode;
	} else {
		if (p->payload_len != sl->len || p->payload_len % elem_size(sl) || p->opcode != sl->opcode)
			return -1;
		inc_combine_host(sl->data, payload, p->payload_len / elem_size(sl), sl->m.op, sl->m.dtype);
		e->c.aggregations++;
	}
	sl->arrived |= 1ull << child;
	sl->narrived++;
	return 0;
}

/*
 * The next SEND from child @child (PSN as expected): check it can be taken
 * before the connection advances, fold it into its slot and ACK it if @ack;
 * or answer a busy slot with an RNR NAK and bad input with a NAK. A host's
 * SEND that fills the gap a NAK or an RNR NAK named is ACKed at once, by
 * itself: after a retry rxe goes back on a sequence NAK again only once an
 * ACK made progress (rxe_comp.c: started_retry, cleared by
 * reset_retry_counters()), and a host acknowledged once per ACK_EVERY that
 * lost a second frame within 32 of the first waited for its local ACK
 * timeout (1.07 s) instead; in the 1-4-16 simulation (test_tree.c) at 1 %
 * loss such waits strung together until a rank went 60 s without progress.
 * That ACK is one PSN past what the NAK acknowledged: past the ACK ceiling
 * by one at most.
 */
static void take_from_child(struct sw_engine *e, int child, const struct roce_pkt *p, const uint8_t *frame, int ack,
			    uint64_t now)
{
	struct conn *k = &e->conn[child];
	uint32_t psn = slot_psn(k, p->psn), s = psn % e->cfg.nslots;
	struct slot *sl = &e->slots[s];
	struct inc_imm m;
	int64_t imm = send_imm(k, p);
	int filled;

	if (imm < 0) {
		count_refused(e, p);
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
		return;
	}
	/* an immediate equal to its busy slot's was checked when the slot opened */
	if (!(sl->busy && (uint32_t)imm == sl->imm) && (inc_imm_decode((uint32_t)imm, &m) < 0 || !imm_valid(e, &m))) {
		e->c.drop_bad_imm++;
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
		return;
	}
	if (sl->busy && (sl->psn != psn || (sl->arrived >> child & 1))) {
		/* the slot still serves an older round: ask the child to retry shortly;
		 * the packets it already pipelined behind this one are dropped silently */
		send_aeth(e, k, p->psn, AETH_TYPE_RNR_NAK | (e->cfg.rnr_timer & 0x1f));
		k->rc.nak_sent = 1;
		return;
	}
	if (!sl->busy) { /* a new round: its data changes from here on (what txbuf has of it is stale) */
		tx_forget(e);
		memset(sl, 0, offsetof(struct slot, data));
		sl->busy = 1;
		sl->psn = psn;
		e->busy_slots++;
	}
	switch (fold(e, sl, child, (uint32_t)imm, p, frame + p->payload_off)) {
	case -1:
		e->c.drop_mismatch++;
		if (((uint32_t)imm ^ sl->imm) == INC_IMM_LAST ||
		    ((uint32_t)imm == sl->imm && sl->have_data && p->payload_len && p->payload_len != sl->len))
			e->c.mismatch_count++; /* the calls differ in count alone */
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
		return;
	case -2: /* before its turn, and no hold buffer free: retry shortly, as for a busy slot */
		send_aeth(e, k, p->psn, AETH_TYPE_RNR_NAK | (e->cfg.rnr_timer & 0x1f));
		k->rc.nak_sent = 1;
		return;
	}
	filled = k->rc.nak_sent && !k->to_switch;
	accept(k, p);
	if (filled) /* at once: rxe heeds its next sequence NAK only after an ACK (above) */
		send_aeth(e, k, p->psn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
	else if (ack && p->ack_req)
		ack_later(e, k);
	if (sl->narrived == e->cfg.nchildren) {
		if (sl->early)
			slot_free_if_done(e, sl); /* its result went out when the first arrived */
		else
			slot_complete(e, s, now);
	} else {
		early_barrier(e, s, now);
	}
}

/* The next SEND on connection @ci, from a child or from the parent. */
static void take(struct sw_engine *e, int ci, const struct roce_pkt *p, const uint8_t *frame, int ack, uint64_t now)
{
	if (&e->conn[ci] == e->parent)
		take_from_parent(e, p, frame, ack, now);
	else
		take_from_child(e, ci, p, frame, ack, now);
}

/* Keep a SEND that arrived ahead of a gap on a switch link; NAK the gap once. */
static void hold(struct sw_engine *e, struct conn *k, const struct roce_pkt *p, const uint8_t *frame)
{
	struct held_frame *hf = &k->held[p->psn & k->held_mask];
	enum rc_rx_verdict v;
	uint32_t apsn, amsn;
	uint8_t syn;

	if (hf->len) { /* the only PSN that maps here in the window: a duplicate */
		e->c.duplicates++;
		return;
	}
	hf->pkt = *p;
	hf->len = (uint16_t)p->frame_len;
	memcpy(hf->data, frame, p->frame_len);
	k->nheld++;
	e->c.ooo_held++;
	v = rc_conn_rx(&k->rc, p); /* RC_RX_NAK_SEQ for the first frame past the gap */
	if (rc_conn_ack_fields(&k->rc, p, v, &apsn, &syn, &amsn))
		send_aeth(e, k, apsn, syn);
}

/*
 * drain() - after a SEND filled a gap on switch link @ci, take the held frames
 * that now follow in sequence and acknowledge them all with one ACK; or, if
 * some stay held behind a new gap, NAK that gap at once (which acknowledges
 * what precedes it): the peer resends that one frame. A held frame that is
 * refused (RNR NAK, NAK) was answered by take(); the peer resends it.
 */
static void drain(struct sw_engine *e, int ci, uint64_t now)
{
	struct conn *k = &e->conn[ci];
	struct held_frame *hf;

	while ((hf = &k->held[k->rc.epsn & k->held_mask])->len) {
		uint32_t psn = k->rc.epsn;

		hf->len = 0;
		k->nheld--;
		take(e, ci, &hf->pkt, hf->data, 0, now);
		if (k->rc.epsn == psn)
			return;
	}
	if (k->nheld) {
		k->rc.nak_sent = 1;
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ);
	} else {
		ack_taken(e, k, 1);
	}
}

/*
 * rx_data() - a SEND on connection @ci: take it if it is the next one; on a
 * switch link keep one that is ahead (within the window) for after the gap,
 * and answer a duplicate while frames are held with a NAK of the gap (the
 * first NAK may have been lost: the duplicate is the peer's timeout probe);
 * otherwise re-ACK a duplicate or NAK the gap once, as rxe does.
 */
static void rx_data(struct sw_engine *e, int ci, const struct roce_pkt *p, const uint8_t *frame, uint64_t now)
{
	struct conn *k = &e->conn[ci];
	int32_t d = roce_psn_diff(p->psn, k->rc.epsn);

	if (d == 0) {
		take(e, ci, p, frame, !k->nheld, now);
		if (k->nheld && k->rc.epsn != p->psn)
			drain(e, ci, now);
	} else if (d > 0 && (uint32_t)d <= k->held_mask && p->frame_len <= FRAME_MAX) {
		hold(e, k, p, frame);
	} else if (d < 0 && k->nheld) {
		e->c.duplicates++;
		send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ);
	} else {
		rx_not_next(e, k, p);
	}
}

/* Release the slots of frames @from .. una-1 that @k's peer has now
 * acknowledged. Return whether any of them was sent more than once. */
static int release(struct sw_engine *e, struct conn *k, uint32_t from)
{
	int resent = 0;

	for (uint32_t psn = from; psn != k->rc.una; psn = (psn + 1) & ROCE_PSN_MASK) {
		struct sent_frame *sf = &k->ring[ring_index(e, k, psn)];
		struct slot *sl = &e->slots[sf->slot];

		resent |= sf->resent;
		sl->pending--;
		slot_free_if_done(e, sl);
	}
	return resent;
}

/* Is a sequence NAK of @psn stale: a PSN the last go-back resent less than an
 * RTT ago? Then frames sent before the resend caused it (reordered, or in
 * flight when the first NAK left), and the resent ones are on their way. */
static int nak_stale(const struct conn *k, uint32_t psn, uint64_t now)
{
	return roce_psn_diff(psn, k->gb_psn) >= 0 && roce_psn_diff(psn, k->gb_end) < 0 &&
	       now - k->gb_ns < k->srtt_ns;
}

/*
 * retry() - the peer asks for frames again from @p's PSN, now una. After an
 * RNR NAK (host: no receive posted; parent: slot busy) probe with the refused
 * frame once RNR_RETRY_NS are over. A sequence NAK for what the last resend
 * covered is stale; otherwise resend the gap to a switch, which kept what
 * followed it, and go back to a host, which dropped it.
 */
static void retry(struct sw_engine *e, struct conn *k, const struct roce_pkt *p, uint64_t now)
{
	if ((p->syndrome & AETH_TYPE_MASK) == AETH_TYPE_RNR_NAK) {
		e->c.rnr_naks_rx++;
		k->hold_until_ns = now + RNR_RETRY_NS;
		go_back(e, k, 1, now);
		return;
	}
	e->c.naks_rx++;
	if (nak_stale(k, p->psn, now))
		e->c.naks_ignored++;
	else if (k->to_switch)
		resend_gap(e, k, now);
	else
		go_back(e, k, k->wmax, now);
}

/*
 * count_stale() - count an ACK/NAK about PSNs acknowledged already: a late
 * one, or none at all if its AETH type is not one IBTA defines (rc_conn_ack()
 * checks the type only of answers about PSNs not yet acknowledged). Out of
 * line: in rx_ack() GCC merged its drop_bad_ack with the BOGUS branch's, one
 * instruction more on the path of every ACK (callgrind).
 */
static __attribute__((noinline, cold)) void count_stale(struct sw_engine *e, uint8_t syndrome)
{
	uint8_t type = syndrome & AETH_TYPE_MASK;

	if (type == AETH_TYPE_ACK || type == AETH_TYPE_RNR_NAK || type == AETH_TYPE_NAK)
		e->c.acks_stale++;
	else
		e->c.drop_bad_ack++;
}

/*
 * rx_ack() - an ACK or NAK from @k's peer: free what it acknowledges (a NAK
 * acknowledges what precedes its PSN), measure the RTT, reopen the window,
 * go back on a NAK, and send what the window now allows.
 */
static void rx_ack(struct sw_engine *e, struct conn *k, const struct roce_pkt *p, uint64_t now)
{
	uint32_t una = k->rc.una;
	enum rc_ack_verdict v = rc_conn_ack(&k->rc, p);

	e->c.acks_rx++;
	if (k->rc.una != una) {
		/* Every ACK times the RTT by the newest frame it acknowledges,
		 * unless it covers a resent frame (Karn): it may answer the resend,
		 * or have waited at the peer for the resend to fill a gap. */
		if (!release(e, k, una))
			rtt_update(k, now - k->ring[ring_index(e, k, (k->rc.una - 1) & ROCE_PSN_MASK)].sent_ns);
		k->backoff = 0;
		k->win = k->wmax;
		k->timer_ns = now;
		if (roce_psn_diff(k->snd_nxt, k->rc.una) < 0)
			k->snd_nxt = k->rc.una; /* acknowledged before we resent it */
		if (k->probing) { /* the answer to a later timeout's probe of una */
			k->probing = 0;
			if (k->snd_nxt != k->rc.una && v != RC_ACK_RETRY)
				go_back(e, k, k->wmax, now); /* it acknowledged all it has: the rest was lost */
		}
	} else if (v == RC_ACK_STALE) { /* nothing new (RC_ACK_PROGRESS always moves una: no test on its path) */
		count_stale(e, p->syndrome);
	}
	if (v == RC_ACK_RETRY)
		retry(e, k, p, now);
	else if (v == RC_ACK_FATAL)
		e->c.fatal_naks_rx++;
	else if (v == RC_ACK_BOGUS)
		e->c.drop_bad_ack++;
	if (k->snd_nxt != k->npsn)
		xmit(e, k, now);
}

void sw_engine_rx(struct sw_engine *e, const uint8_t *frame, size_t len, uint64_t now)
{
	struct roce_pkt p;
	int child;

	e->c.rx_frames++;
	if (roce_parse(frame, len, &p) != ROCE_OK) {
		e->c.drop_parse++;
		return;
	}
	if (!roce_pkt_icrc_ok(frame, &p)) {
		e->c.drop_icrc++;
		return;
	}
	child = conn_find(e, p.src_ip, p.dst_ip, p.dest_qp);
	if (child < 0) {
		e->c.drop_unknown_qp++;
		return;
	}
	/* Answer with the addresses the peer used: the controller knows IPs and QPNs, not MACs. */
	memcpy(e->conn[child].cfg.peer_mac, p.src_mac, 6);
	memcpy(e->conn[child].cfg.local_mac, p.dst_mac, 6);
	if (p.opcode == RC_ACK)
		rx_ack(e, &e->conn[child], &p, now);
	else
		rx_data(e, child, &p, frame, now);
}

/*
 * tail_probe() - if @k is a host whose results stopped with frames in flight,
 * all it was given sent, the newest sent at least TAIL_IDLE_NS ago without
 * asking for an ACK, resend that newest frame asking for one (counted in
 * tail_probes, not retransmits). The host has it (a duplicate: rxe's
 * responder ACKs it, covering everything before), so the tail's slots are
 * freed one RTT later instead of one retransmit timeout later. Sends at
 * most one frame per burst: the probe leaves the AckReq bit set. Not where
 * the timer (rto()) expires within 2 * TAIL_IDLE_NS anyway: its own probe
 * resends that frame first (probe()), and a second one would only add a frame.
 */
static void tail_probe(struct sw_engine *e, struct conn *k, uint64_t now)
{
	uint32_t newest = (k->snd_nxt - 1) & ROCE_PSN_MASK;
	const struct sent_frame *sf;

	if (k->to_switch || k->snd_nxt != k->npsn || !((k->snd_nxt - k->rc.una) & ROCE_PSN_MASK) ||
	    rto(e, k) < 2 * TAIL_IDLE_NS)
		return;
	sf = &k->ring[ring_index(e, k, newest)];
	if ((sf->hdrs[ROCE_BTH_ACKREQ_OFF] & ROCE_BTH_ACKREQ) || now - sf->sent_ns < TAIL_IDLE_NS)
		return;
	e->c.tail_probes++;
	resend_asking(e, k, newest);
}

void sw_engine_tick(struct sw_engine *e, uint64_t now)
{
	for (int i = 0; i < e->nconns; i++) {
		struct conn *k = &e->conn[i];

		/* a host still sending gets its ACK by count; one that paused, now;
		 * one held at the ceiling, as far as the ceiling moved */
		if ((k->ack_owed && (k->to_switch || !k->took_this_round)) || k->ack_held)
			ack_taken(e, k, 0);
		k->took_this_round = 0;
		if (now < k->hold_until_ns)
			continue;
		if (k->hold_until_ns) { /* the RNR delay is over: send the probe */
			k->hold_until_ns = 0;
			xmit(e, k, now);
		}
		if (rc_conn_unacked(&k->rc) && now - k->timer_ns >= rto(e, k)) {
			/* nothing acknowledged for a whole timeout: the tail, a NAK or an
			 * ACK was lost, or the peer stalls. Probe with the oldest frame:
			 * a host dropped what followed a gap, so the rest follows when
			 * the probe is acknowledged; a switch kept it, and its ACK of
			 * the probe covers all of it. */
			e->c.timeouts++;
			if (k->backoff < RTO_MAX_BACKOFF)
				k->backoff++;
			if (k->to_switch)
				resend_gap(e, k, now);
			else
				probe(e, k, now);
		} else {
			tail_probe(e, k, now);
		}
	}
}
