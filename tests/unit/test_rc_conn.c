/*
 * test_rc_conn.c — the switch's RC connection state (switch/rc_conn.c), cmocka.
 * Expected answers are those rdma_rxe gives in the same situation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rc_conn.h"

static struct roce_pkt pkt(uint8_t op, uint32_t psn, int ack_req)
{
	return (struct roce_pkt){ .opcode = op, .psn = psn & ROCE_PSN_MASK, .ack_req = ack_req };
}

static struct roce_pkt ack(uint8_t syndrome, uint32_t psn)
{
	return (struct roce_pkt){ .opcode = RC_ACK, .psn = psn & ROCE_PSN_MASK, .has_aeth = 1, .syndrome = syndrome };
}

static void test_messages_advance_psn_and_msn(void **state)
{
	struct rc_conn c;
	struct roce_pkt p;
	uint32_t psn, msn;
	uint8_t syn;

	rc_conn_init(&c, 0xfffffe, 7); /* the host's PSNs wrap inside the message */
	p = pkt(RC_SEND_FIRST, 0xfffffe, 0);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_ACCEPT, &psn, &syn, &msn), 0); /* no ack_req: no ACK */
	p = pkt(RC_SEND_MIDDLE, 0xffffff, 0);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	p = pkt(RC_SEND_LAST, 0, 1);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	assert_int_equal(c.epsn, 1);
	assert_int_equal(c.msn, 1);
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_ACCEPT, &psn, &syn, &msn), 1);
	assert_int_equal(psn, 0);
	assert_int_equal(msn, 1);
	assert_int_equal(syn, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
	p = pkt(RC_SEND_ONLY_WITH_IMM, 1, 1);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	assert_int_equal(c.msn, 2);
}

static void test_duplicate_reacks_last_accepted(void **state)
{
	struct rc_conn c;
	struct roce_pkt p;
	uint32_t psn, msn;
	uint8_t syn;

	rc_conn_init(&c, 100, 0);
	for (uint32_t i = 100; i < 104; i++) {
		p = pkt(i == 100 ? RC_SEND_FIRST : i == 103 ? RC_SEND_LAST : RC_SEND_MIDDLE, i, i == 103);
		assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	}
	p = pkt(RC_SEND_MIDDLE, 101, 0); /* the host retransmits: our ACK was lost */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_DUPLICATE);
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_DUPLICATE, &psn, &syn, &msn), 1);
	assert_int_equal(psn, 103);
	assert_int_equal(msn, 1);
	assert_int_equal(c.epsn, 104); /* unchanged */
}

static void test_gap_naks_once_then_recovers(void **state)
{
	struct rc_conn c;
	struct roce_pkt p;
	uint32_t psn, msn;
	uint8_t syn;

	rc_conn_init(&c, 10, 0);
	p = pkt(RC_SEND_ONLY, 12, 1); /* 10 and 11 were lost */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_NAK_SEQ);
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_NAK_SEQ, &psn, &syn, &msn), 1);
	assert_int_equal(psn, 10);
	assert_int_equal(syn, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ);
	p = pkt(RC_SEND_ONLY, 13, 1);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_DROP); /* one NAK per gap */
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_DROP, &psn, &syn, &msn), 0);
	p = pkt(RC_SEND_ONLY, 10, 1); /* the retry */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	p = pkt(RC_SEND_ONLY, 12, 1); /* a new gap gets a new NAK */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_NAK_SEQ);
}

static void test_illegal_opcode_sequence(void **state)
{
	struct rc_conn c;
	struct roce_pkt p;
	uint32_t psn, msn;
	uint8_t syn;

	rc_conn_init(&c, 0, 0);
	p = pkt(RC_SEND_MIDDLE, 0, 0); /* MIDDLE without FIRST */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_BAD_SEQ);
	assert_int_equal(rc_conn_ack_fields(&c, &p, RC_RX_BAD_SEQ, &psn, &syn, &msn), 1);
	assert_int_equal(syn, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	assert_int_equal(c.epsn, 0);
	p = pkt(RC_SEND_FIRST, 0, 0);
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_ACCEPT);
	p = pkt(RC_SEND_ONLY, 1, 1); /* ONLY inside a message */
	assert_int_equal(rc_conn_rx(&c, &p), RC_RX_BAD_SEQ);
}

static void test_acks_of_our_sends(void **state)
{
	struct rc_conn c;
	struct roce_pkt a;

	rc_conn_init(&c, 0, 0xfffffd);
	for (int i = 0; i < 6; i++)
		rc_conn_next_psn(&c); /* sent 0xfffffd .. 2 */
	assert_int_equal(rc_conn_unacked(&c), 6);
	a = ack(AETH_TYPE_ACK | AETH_ACK_UNLIMITED, 0xffffff);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_PROGRESS);
	assert_int_equal(rc_conn_unacked(&c), 3);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_STALE); /* again: nothing new */
	a = ack(AETH_TYPE_ACK | AETH_ACK_UNLIMITED, 3);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_BOGUS); /* never sent */
	a = ack(AETH_TYPE_RNR_NAK | 14, 1);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_RETRY);
	assert_int_equal(c.una, 1); /* 0 was implicitly acknowledged */
	assert_int_equal(c.rnr_naks, 1);
	a = ack(AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 2);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_RETRY);
	assert_int_equal(c.una, 2);
	a = ack(AETH_TYPE_NAK | AETH_NAK_INVALID_REQ, 2);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_FATAL);
	a = ack(AETH_TYPE_ACK | AETH_ACK_UNLIMITED, 2);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_PROGRESS);
	assert_int_equal(rc_conn_unacked(&c), 0);
}

static void test_late_answers_are_stale(void **state)
{
	struct rc_conn c;
	struct roce_pkt a;

	rc_conn_init(&c, 0, 100);
	for (int i = 0; i < 10; i++)
		rc_conn_next_psn(&c); /* sent 100 .. 109 */
	a = ack(AETH_TYPE_ACK | AETH_ACK_UNLIMITED, 105);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_PROGRESS);
	/* reordered or duplicated on a lossy link: older answers come late */
	a = ack(AETH_TYPE_ACK | AETH_ACK_UNLIMITED, 102);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_STALE);
	a = ack(AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 103);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_STALE);
	a = ack(AETH_TYPE_RNR_NAK | 1, 104);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_STALE);
	assert_int_equal(c.una, 106);
	/* a NAK of una itself is not late: resend from there */
	a = ack(AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, 106);
	assert_int_equal(rc_conn_ack(&c, &a), RC_ACK_RETRY);
	assert_int_equal(c.una, 106);
}

static void test_accept_only_is_rc_conn_rx(void **state)
{
	struct rc_conn a, b;
	struct roce_pkt p;

	rc_conn_init(&a, 0xfffffe, 0);
	rc_conn_init(&b, 0xfffffe, 0);
	a.nak_sent = b.nak_sent = 1; /* after a gap was NAKed */
	for (uint32_t i = 0; i < 4; i++) {
		p = pkt(RC_SEND_ONLY_WITH_IMM, 0xfffffe + i, 1);
		assert_int_equal(rc_conn_rx(&a, &p), RC_RX_ACCEPT);
		rc_conn_accept(&b, p.opcode);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages_advance_psn_and_msn),
		cmocka_unit_test(test_duplicate_reacks_last_accepted),
		cmocka_unit_test(test_gap_naks_once_then_recovers),
		cmocka_unit_test(test_illegal_opcode_sequence),
		cmocka_unit_test(test_acks_of_our_sends),
		cmocka_unit_test(test_late_answers_are_stale),
		cmocka_unit_test(test_accept_only_is_rc_conn_rx),
	};
	return cmocka_run_group_tests_name("rc_conn", tests, NULL, NULL);
}
