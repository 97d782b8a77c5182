/*
 * rc_conn.h — the switch's end of one host's RC connection.
 *
 * The switch terminates each host's reliable connection, so it plays both RC
 * roles towards the host (IBTA ch. 9.7; the kernel's rxe_resp.c / rxe_comp.c):
 *   responder — for the host's SENDs: expected PSN, MSN, ACK / NAK;
 *   requester — for what the switch sends: its own PSN sequence, the host's
 *               ACK / NAK / RNR NAK, what must be retransmitted.
 * Pure state, no I/O: callers parse frames (roce.h) and build the answers.
 */
#ifndef INCLAB_RC_CONN_H
#define INCLAB_RC_CONN_H

#include <stdint.h>

#include "roce.h"

struct rc_conn {
	/* responder side: the host's SENDs to us */
	uint32_t epsn;       /* next PSN expected from the host */
	uint32_t msn;        /* messages completed from the host (24 bits) */
	int in_message;      /* a FIRST was accepted, LAST/MIDDLE must follow */
	int nak_sent;        /* one NAK per sequence error, as rxe does */
	/* requester side: our SENDs to the host */
	uint32_t spsn;       /* next PSN we send */
	uint32_t una;        /* oldest PSN not yet acknowledged by the host */
	uint32_t rnr_naks, seq_naks, other_naks;
};

/** What to do with a host's data packet. */
enum rc_rx_verdict {
	RC_RX_ACCEPT,     /* new, in sequence: consume it; ACK if the ack_req bit is set */
	RC_RX_DUPLICATE,  /* already accepted: do not consume, re-ACK */
	RC_RX_NAK_SEQ,    /* PSN ahead of the expected: send a PSN-sequence NAK (once) */
	RC_RX_DROP,       /* ahead, NAK already sent: drop silently until the retry */
	RC_RX_BAD_SEQ,    /* illegal opcode sequence (e.g. MIDDLE without FIRST): NAK invalid request */
};

/** rc_conn_init() - a new connection; @rq_psn: host's first PSN, @sq_psn: ours. */
void rc_conn_init(struct rc_conn *c, uint32_t rq_psn, uint32_t sq_psn);

/**
 * rc_conn_rx() - classify a SEND packet from the host and, when accepted,
 * advance the expected PSN (and the MSN at the end of a message).
 */
enum rc_rx_verdict rc_conn_rx(struct rc_conn *c, const struct roce_pkt *p);

/** rc_conn_starts_message() - is @op a SEND that opens a message (FIRST, ONLY, ONLY_WITH_IMM)? */
static inline int rc_conn_starts_message(uint8_t op)
{
	return op == RC_SEND_FIRST || op == RC_SEND_ONLY || op == RC_SEND_ONLY_WITH_IMM;
}

/** rc_conn_ends_message() - is @op a SEND that closes a message (LAST, ONLY, with or without immediate)? */
static inline int rc_conn_ends_message(uint8_t op)
{
	return op == RC_SEND_LAST || op == RC_SEND_LAST_WITH_IMM || op == RC_SEND_ONLY || op == RC_SEND_ONLY_WITH_IMM;
}

/**
 * rc_conn_in_sequence() - may a SEND of opcode @op come next? Inside a
 * message only MIDDLE/LAST may follow, outside only FIRST/ONLY (rxe_resp.c
 * check_op_seq()). Checking does not change the state.
 */
static inline int rc_conn_in_sequence(const struct rc_conn *c, uint8_t op)
{
	return c->in_message != rc_conn_starts_message(op);
}

/**
 * rc_conn_accept() - what rc_conn_rx() does with the expected packet once the
 * caller checked its PSN and rc_conn_in_sequence(): advance the expected PSN,
 * and the MSN when @op ends a message.
 */
static inline void rc_conn_accept(struct rc_conn *c, uint8_t op)
{
	c->nak_sent = 0;
	c->epsn = (c->epsn + 1) & ROCE_PSN_MASK;
	c->in_message = !rc_conn_ends_message(op);
	if (!c->in_message)
		c->msn = (c->msn + 1) & AETH_MSN_MASK;
}

/**
 * rc_conn_ack_fields() - AETH and PSN of the answer to a classified packet:
 * ACK (PSN of the packet, or of the last accepted one for duplicates) with the
 * current MSN, or a NAK with the expected PSN. Returns 0 when nothing is sent.
 */
int rc_conn_ack_fields(const struct rc_conn *c, const struct roce_pkt *p, enum rc_rx_verdict v,
		       uint32_t *psn, uint8_t *syndrome, uint32_t *msn);

/** rc_conn_next_psn() - take the next PSN of our send sequence. */
uint32_t rc_conn_next_psn(struct rc_conn *c);

/** What an ACK from the host means for our sends. */
enum rc_ack_verdict {
	RC_ACK_PROGRESS,   /* una advanced */
	RC_ACK_STALE,      /* nothing new acknowledged, or a late answer about an acknowledged PSN */
	RC_ACK_RETRY,      /* NAK seq / RNR NAK: resend from una (after the RNR delay) */
	RC_ACK_FATAL,      /* NAK invalid request / access / operational: connection broken */
	RC_ACK_BOGUS,      /* acknowledges a PSN we never sent */
};

/** rc_conn_ack() - process an ACK/NAK frame from the host. */
enum rc_ack_verdict rc_conn_ack(struct rc_conn *c, const struct roce_pkt *p);

/** rc_conn_unacked() - number of our packets sent but not acknowledged. */
static inline uint32_t rc_conn_unacked(const struct rc_conn *c)
{
	return (c->spsn - c->una) & ROCE_PSN_MASK;
}

#endif
