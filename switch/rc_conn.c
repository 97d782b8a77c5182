/*
 * rc_conn.c — RC responder and requester state of one host connection
 * (see rc_conn.h). The rules follow what rdma_rxe does on the other end, so
 * that the two agree: rxe_resp.c check_psn()/check_op_seq() for the host's
 * SENDs, rxe_comp.c for the host's answers to ours.
 */
#include "rc_conn.h"

void rc_conn_init(struct rc_conn *c, uint32_t rq_psn, uint32_t sq_psn)
{
	*c = (struct rc_conn){ .epsn = rq_psn & ROCE_PSN_MASK, .spsn = sq_psn & ROCE_PSN_MASK,
			       .una = sq_psn & ROCE_PSN_MASK };
}

enum rc_rx_verdict rc_conn_rx(struct rc_conn *c, const struct roce_pkt *p)
{
	int32_t d = roce_psn_diff(p->psn, c->epsn);

	if (d < 0)
		return RC_RX_DUPLICATE;
	if (d > 0) {
		if (c->nak_sent)
			return RC_RX_DROP;
		c->nak_sent = 1;
		return RC_RX_NAK_SEQ;
	}
	/* In sequence: inside a message only MIDDLE/LAST may follow, outside only FIRST/ONLY. */
	if (!rc_conn_in_sequence(c, p->opcode))
		return RC_RX_BAD_SEQ;
	rc_conn_accept(c, p->opcode);
	return RC_RX_ACCEPT;
}

int rc_conn_ack_fields(const struct rc_conn *c, const struct roce_pkt *p, enum rc_rx_verdict v,
		       uint32_t *psn, uint8_t *syndrome, uint32_t *msn)
{
	*msn = c->msn;
	switch (v) {
	case RC_RX_ACCEPT:
		if (!p->ack_req)
			return 0;
		*psn = p->psn;
		*syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED;
		return 1;
	case RC_RX_DUPLICATE:
		/* acknowledge everything accepted so far: the requester lost our ACK */
		*psn = (c->epsn - 1) & ROCE_PSN_MASK;
		*syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED;
		return 1;
	case RC_RX_NAK_SEQ:
		*psn = c->epsn;
		*syndrome = AETH_TYPE_NAK | AETH_NAK_PSN_SEQ;
		return 1;
	case RC_RX_BAD_SEQ:
		*psn = c->epsn;
		*syndrome = AETH_TYPE_NAK | AETH_NAK_INVALID_REQ;
		return 1;
	case RC_RX_DROP:
		break;
	}
	return 0;
}

uint32_t rc_conn_next_psn(struct rc_conn *c)
{
	uint32_t psn = c->spsn;
	c->spsn = (c->spsn + 1) & ROCE_PSN_MASK;
	return psn;
}

enum rc_ack_verdict rc_conn_ack(struct rc_conn *c, const struct roce_pkt *p)
{
	uint8_t type = p->syndrome & AETH_TYPE_MASK;
	/* the ACK's PSN must be something we sent: at most spsn - 1 */
	int32_t ahead = roce_psn_diff(p->psn, (c->spsn - 1) & ROCE_PSN_MASK);
	int32_t from_una = roce_psn_diff(p->psn, c->una);

	if (ahead > 0)
		return RC_ACK_BOGUS;
	/* An ACK of una - 1 or older, or a NAK of a PSN acknowledged since, is
	 * late (reordered or duplicated on the way): ignored, as rxe_comp.c does. */
	if (from_una < 0)
		return RC_ACK_STALE;
	switch (type) {
	case AETH_TYPE_ACK:
		c->una = (p->psn + 1) & ROCE_PSN_MASK;
		return RC_ACK_PROGRESS;
	case AETH_TYPE_RNR_NAK:
		/* the PSN is the one the host could not take: everything before it is acked */
		c->rnr_naks++;
		if (from_una > 0)
			c->una = p->psn;
		return RC_ACK_RETRY;
	case AETH_TYPE_NAK:
		if ((p->syndrome & 0x1f) == AETH_NAK_PSN_SEQ) {
			c->seq_naks++;
			if (from_una > 0)
				c->una = p->psn; /* implicitly acknowledges what precedes */
			return RC_ACK_RETRY;
		}
		c->other_naks++;
		return RC_ACK_FATAL;
	default:
		return RC_ACK_BOGUS;
	}
}
