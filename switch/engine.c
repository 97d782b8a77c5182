/*
 * engine.c — aggregation, delivery and reliability of a root INC switch
 * (see engine.h for the protocol). Per frame:
 *
 *   rx SEND  -> which connection? in sequence? slot free or ours? -> combine,
 *               ACK; when every child has arrived, send the result down (root)
 *               or the aggregate up (leaf).
 *   rx SEND from the parent -> the result of the oldest slot sent up: fan out.
 *   rx ACK   -> free what the child acknowledged; a slot is free once every
 *               result frame made from it was acknowledged.
 *   tick     -> resend unacknowledged frames of connections that stalled.
 *
 * A busy slot answers with an RNR NAK (retry soon) instead of a silent drop.
 */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

#define FRAME_MAX (ROCE_HDRS_LEN + ROCE_IMM_LEN + SW_MTU + ROCE_ICRC_LEN)
#define RNR_RETRY_NS 1000000ull /* resend 1 ms after an RNR NAK */

struct sent_frame {
	uint32_t slot;
	uint16_t len;
	uint8_t data[FRAME_MAX];
};

struct conn {
	struct sw_conn_cfg cfg;
	struct rc_conn rc;
	struct sent_frame *ring;  /* unacknowledged frames, at (psn - sq_psn) % nslots */
	uint64_t last_progress_ns;
	uint16_t ip_id;
};

struct slot {
	int busy;
	uint32_t psn;             /* upward PSN this slot aggregates */
	uint32_t imm;
	struct inc_imm m;
	uint64_t arrived;         /* bit per child */
	int narrived;
	int have_data;
	uint16_t len;
	int pending;              /* frames sent from this slot, not yet acknowledged */
	int awaiting;             /* sent up, the parent's result still to come */
	uint8_t data[SW_MTU];
};

struct sw_engine {
	struct sw_cfg cfg;
	struct conn conn[SW_MAX_CHILDREN + 1]; /* children, then the parent */
	struct conn *parent;
	int nconns;
	struct slot *slots;
	uint32_t busy_slots;
	uint32_t *downq, downq_head, downq_len; /* slots sent up awaiting results, oldest first */
	int first_rank, nranks, total_ranks;
	sw_tx_fn tx;
	void *ctx;
	struct sw_counters c;
};

static uint32_t ring_index(const struct sw_engine *e, const struct conn *k, uint32_t psn)
{
	return ((psn - k->cfg.sq_psn) & ROCE_PSN_MASK) % e->cfg.nslots;
}

struct sw_engine *sw_engine_new(const struct sw_cfg *cfg, sw_tx_fn tx, void *ctx)
{
	struct sw_engine *e;
	int next_rank;

	if (cfg->nchildren < 1 || cfg->nchildren > SW_MAX_CHILDREN || cfg->nslots < 1 || cfg->nslots > (1u << 22)) {
		fprintf(stderr, "switch: need 1..%d children and 1..%u slots (got %d, %u)\n", SW_MAX_CHILDREN,
			1u << 22, cfg->nchildren, cfg->nslots);
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
	e->tx = tx;
	e->ctx = ctx;
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
		if (!(k->ring = calloc(cfg->nslots, sizeof(*k->ring)))) {
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
	for (int i = 0; i < SW_MAX_CHILDREN + 1; i++)
		free(e->conn[i].ring);
	free(e->downq);
	free(e->slots);
	free(e);
}

const struct sw_counters *sw_engine_counters(const struct sw_engine *e)
{
	return &e->c;
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

/* Send slot @s's data to connection @k (a child's result, or up to the parent);
 * keep the frame until acknowledged. */
static void send_slot(struct sw_engine *e, struct conn *k, uint32_t s, uint64_t now)
{
	struct slot *sl = &e->slots[s];
	struct roce_build b = frame_to(k);
	struct sent_frame *sf;

	b.opcode = RC_SEND_ONLY_WITH_IMM;
	b.ack_req = 1;
	b.has_imm = 1;
	b.imm = sl->imm;
	b.payload = sl->data;
	b.payload_len = sl->have_data ? sl->len : 0;
	b.psn = rc_conn_next_psn(&k->rc);
	sf = &k->ring[ring_index(e, k, b.psn)];
	sf->slot = s;
	sf->len = (uint16_t)roce_build_frame(sf->data, sizeof(sf->data), &b);
	if (rc_conn_unacked(&k->rc) == 1)
		k->last_progress_ns = now;
	sl->pending++;
	if (k == e->parent)
		e->c.sent_up++;
	else
		e->c.results_tx++;
	emit(e, k, sf->data, sf->len);
}

/* Does child @k take the result of an operation with immediate @m? */
static int child_wants(const struct conn *k, const struct inc_imm *m)
{
	int holds_dest = m->dest_rank >= k->cfg.first_rank && m->dest_rank < k->cfg.first_rank + k->cfg.nranks;

	switch (m->prim) {
	case INC_REDUCE:
		return holds_dest;
	case INC_BROADCAST: /* a host that is the root already has the data */
		return !(holds_dest && k->cfg.nranks == 1);
	default:
		return 1;
	}
}

static void slot_free_if_done(struct sw_engine *e, struct slot *sl)
{
	if (sl->busy && sl->pending == 0 && !sl->awaiting) {
		sl->busy = 0;
		e->busy_slots--;
	}
}

/* The result of slot @s is known: send it to every child that wants it. */
static void deliver_down(struct sw_engine *e, uint32_t s, uint64_t now)
{
	for (int i = 0; i < e->cfg.nchildren; i++)
		if (child_wants(&e->conn[i], &e->slots[s].m))
			send_slot(e, &e->conn[i], s, now);
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

static void slot_complete(struct sw_engine *e, uint32_t s, uint64_t now)
{
	struct slot *sl = &e->slots[s];

	e->c.slots_completed++;
	if (!e->parent) {
		deliver_down(e, s, now);
		return;
	}
	if (subtree_wants(e, &sl->m)) {
		sl->awaiting = 1;
		e->downq[(e->downq_head + e->downq_len++) % e->cfg.nslots] = s;
	}
	send_slot(e, e->parent, s, now);
}

static int imm_valid(const struct sw_engine *e, const struct inc_imm *m)
{
	if (m->prim == INC_ALLREDUCE)
		return m->dest_rank == INC_RANK_ALL;
	return m->dest_rank < e->total_ranks;
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
	if (rc_conn_ack_fields(&k->rc, p, v, &apsn, &syn, &amsn))
		send_aeth(e, k, apsn, syn);
}

/* A SEND from the parent: the result of the oldest slot awaiting one. */
static void rx_from_parent(struct sw_engine *e, const struct roce_pkt *p, const uint8_t *frame, uint64_t now)
{
	struct conn *k = e->parent;
	enum rc_rx_verdict v;
	uint32_t apsn, amsn;
	uint8_t syn;

	if (roce_psn_diff(p->psn, k->rc.epsn) == 0) {
		struct slot *sl = e->downq_len ? &e->slots[e->downq[e->downq_head]] : NULL;
		if (!sl || p->opcode != RC_SEND_ONLY_WITH_IMM || p->imm != sl->imm || p->payload_len > SW_MTU) {
			e->c.drop_mismatch++;
			send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
			return;
		}
		v = rc_conn_rx(&k->rc, p);
		memcpy(sl->data, frame + p->payload_off, p->payload_len);
		sl->len = (uint16_t)p->payload_len;
		sl->have_data = p->payload_len > 0;
		sl->awaiting = 0;
		e->downq_head = (e->downq_head + 1) % e->cfg.nslots;
		e->downq_len--;
		e->c.results_from_parent++;
		if (rc_conn_ack_fields(&k->rc, p, v, &apsn, &syn, &amsn))
			send_aeth(e, k, apsn, syn);
		deliver_down(e, (uint32_t)(sl - e->slots), now);
		return;
	}
	rx_not_next(e, k, p);
}

/* Fold a child's accepted packet into its slot. Return 0, or -1 if it does not match the slot. */
static int fold(struct sw_engine *e, struct slot *sl, int child, const struct roce_pkt *p, const uint8_t *payload)
{
	if (sl->narrived > 0 && sl->imm != p->imm)
		return -1;
	if (sl->narrived == 0) {
		sl->imm = p->imm;
		inc_imm_decode(p->imm, &sl->m);
	}
	if (sl->m.prim == INC_BROADCAST || sl->m.op == INC_OP_BARRIER) {
		/* only the root rank carries data; everyone else sends an empty packet */
		if (p->payload_len) {
			if (sl->have_data)
				return -1;
			memcpy(sl->data, payload, p->payload_len);
			sl->len = (uint16_t)p->payload_len;
			sl->have_data = 1;
		}
	} else if (!sl->have_data) {
		memcpy(sl->data, payload, p->payload_len);
		sl->len = (uint16_t)p->payload_len;
		sl->have_data = 1;
	} else {
		if (p->payload_len != sl->len || (p->payload_len & 3))
			return -1;
		inc_combine(sl->data, payload, p->payload_len / INC_ELEM_SIZE, sl->m.op, sl->m.dtype);
		e->c.aggregations++;
	}
	sl->arrived |= 1ull << child;
	sl->narrived++;
	return 0;
}

static void rx_send(struct sw_engine *e, int child, const struct roce_pkt *p, const uint8_t *frame, uint64_t now)
{
	struct conn *k = &e->conn[child];
	enum rc_rx_verdict v;
	uint32_t apsn, amsn;
	uint8_t syn;

	if (roce_psn_diff(p->psn, k->rc.epsn) == 0) {
		/* New packet: check it can be taken before the connection advances. */
		uint32_t s = p->psn % e->cfg.nslots;
		struct slot *sl = &e->slots[s];
		struct inc_imm m;

		if (p->opcode != RC_SEND_ONLY_WITH_IMM || inc_imm_decode(p->imm, &m) < 0 || !imm_valid(e, &m) ||
		    p->payload_len > SW_MTU) {
			e->c.drop_bad_imm++;
			send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
			return;
		}
		if (sl->busy && (sl->psn != p->psn || (sl->arrived >> child & 1))) {
			/* the slot still serves an older round: ask the child to retry shortly;
			 * the packets it already pipelined behind this one are dropped silently */
			send_aeth(e, k, p->psn, AETH_TYPE_RNR_NAK | (e->cfg.rnr_timer & 0x1f));
			k->rc.nak_sent = 1;
			return;
		}
		if (!sl->busy) {
			memset(sl, 0, offsetof(struct slot, data));
			sl->busy = 1;
			sl->psn = p->psn;
			e->busy_slots++;
		}
		if (fold(e, sl, child, p, frame + p->payload_off) < 0) {
			e->c.drop_mismatch++;
			send_aeth(e, k, k->rc.epsn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
			return;
		}
		v = rc_conn_rx(&k->rc, p);
		if (rc_conn_ack_fields(&k->rc, p, v, &apsn, &syn, &amsn))
			send_aeth(e, k, apsn, syn);
		if (sl->narrived == e->cfg.nchildren)
			slot_complete(e, s, now);
		return;
	}
	rx_not_next(e, k, p);
}

/* Release the slots of frames @from .. una-1 that child @k has now acknowledged. */
static void release(struct sw_engine *e, struct conn *k, uint32_t from)
{
	for (uint32_t psn = from; psn != k->rc.una; psn = (psn + 1) & ROCE_PSN_MASK) {
		struct slot *sl = &e->slots[k->ring[ring_index(e, k, psn)].slot];
		sl->pending--;
		slot_free_if_done(e, sl);
	}
}

static void resend(struct sw_engine *e, struct conn *k, uint64_t now)
{
	for (uint32_t psn = k->rc.una; psn != k->rc.spsn; psn = (psn + 1) & ROCE_PSN_MASK) {
		struct sent_frame *sf = &k->ring[ring_index(e, k, psn)];
		emit(e, k, sf->data, sf->len);
		e->c.retransmits++;
	}
	k->last_progress_ns = now;
}

static void rx_ack(struct sw_engine *e, struct conn *k, const struct roce_pkt *p, uint64_t now)
{
	uint32_t una = k->rc.una;
	enum rc_ack_verdict v = rc_conn_ack(&k->rc, p);

	e->c.acks_rx++;
	release(e, k, una);
	switch (v) {
	case RC_ACK_PROGRESS:
		k->last_progress_ns = now;
		break;
	case RC_ACK_RETRY:
		if ((p->syndrome & AETH_TYPE_MASK) == AETH_TYPE_RNR_NAK) {
			/* the peer has no room yet (host: no receive posted; parent: slot busy):
			 * resend RNR_RETRY_NS from now, through the retransmit timer */
			e->c.rnr_naks_rx++;
			k->last_progress_ns = now + RNR_RETRY_NS - e->cfg.retransmit_ns;
		} else {
			e->c.naks_rx++;
			resend(e, k, now);
		}
		break;
	case RC_ACK_FATAL:
		e->c.fatal_naks_rx++;
		break;
	case RC_ACK_STALE:
		break;
	case RC_ACK_BOGUS:
		e->c.drop_seq++;
		break;
	}
}

void sw_engine_rx(struct sw_engine *e, const uint8_t *frame, size_t len, uint64_t now)
{
	struct roce_pkt p;
	int child = -1;

	e->c.rx_frames++;
	if (roce_parse(frame, len, &p) != ROCE_OK) {
		e->c.drop_parse++;
		return;
	}
	if (!roce_pkt_icrc_ok(frame, &p)) {
		e->c.drop_icrc++;
		return;
	}
	for (int i = 0; i < e->nconns; i++)
		if (e->conn[i].cfg.local_qpn == p.dest_qp && e->conn[i].cfg.peer_ip == p.src_ip &&
		    e->conn[i].cfg.local_ip == p.dst_ip) {
			child = i;
			break;
		}
	if (child < 0) {
		e->c.drop_unknown_qp++;
		return;
	}
	/* Answer with the addresses the peer used: the controller knows IPs and QPNs, not MACs. */
	memcpy(e->conn[child].cfg.peer_mac, p.src_mac, 6);
	memcpy(e->conn[child].cfg.local_mac, p.dst_mac, 6);
	if (p.opcode == RC_ACK)
		rx_ack(e, &e->conn[child], &p, now);
	else if (&e->conn[child] == e->parent)
		rx_from_parent(e, &p, frame, now);
	else
		rx_send(e, child, &p, frame, now);
}

void sw_engine_tick(struct sw_engine *e, uint64_t now)
{
	for (int i = 0; i < e->nconns; i++) {
		struct conn *k = &e->conn[i];
		if (rc_conn_unacked(&k->rc) && now - k->last_progress_ns >= e->cfg.retransmit_ns)
			resend(e, k, now);
	}
}
