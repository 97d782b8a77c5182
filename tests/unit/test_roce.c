/*
 * test_roce.c — RoCEv2 parsing, ICRC and frame building (switch/roce.c), cmocka.
 *
 * Test vectors are real frames that the Debian 6.1 kernel's rdma_rxe put on
 * the wire (tests/fixtures/rxe-rc-send.pcap, read with libpcap): every one
 * must parse, carry a valid ICRC, have the fields the fixture's README
 * documents, and be rebuilt byte for byte by roce_build_frame().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pcap/pcap.h>

#include <libdeflate.h>

#include "crc32.h"
#include "roce.h"
#include "../proto/inc_proto.h"

#define FIXTURE "tests/fixtures/rxe-rc-send.pcap"
#define MAXF 200

static uint8_t frames[MAXF][2048];
static size_t lens[MAXF];
static int nframes;

static int load_fixture(void **state)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(FIXTURE, err);
	struct pcap_pkthdr *h;
	const u_char *d;

	if (!p) {
		fprintf(stderr, "%s: %s\n", FIXTURE, err);
		return -1;
	}
	while (nframes < MAXF && pcap_next_ex(p, &h, &d) == 1) {
		memcpy(frames[nframes], d, h->caplen < 2048 ? h->caplen : 2048);
		lens[nframes++] = h->caplen;
	}
	pcap_close(p);
	return nframes == 132 ? 0 : -1;
}

/* frame N as numbered by tshark/wireshark (1-based) */
static const uint8_t *fr(int n) { return frames[n - 1]; }
static size_t fl(int n) { return lens[n - 1]; }

static void test_every_roce_frame_parses_with_valid_icrc(void **state)
{
	int roce = 0;

	for (int n = 1; n <= nframes; n++) {
		struct roce_pkt p;
		enum roce_parse_err e = roce_parse(fr(n), fl(n), &p);
		if (e == ROCE_ERR_NOT_IPV4 || e == ROCE_ERR_NOT_UDP || e == ROCE_ERR_NOT_ROCE)
			continue; /* ARP, IPv6, TCP of perftest's QP exchange */
		assert_int_equal(e, ROCE_OK);
		assert_true(roce_icrc_ok(fr(n), fl(n)));
		assert_true(roce_pkt_icrc_ok(fr(n), &p));
		assert_int_equal(roce_icrc(fr(n), fl(n)), p.icrc);
		roce++;
	}
	assert_int_equal(roce, 56); /* as the fixture's README counts them */
}

static void test_multi_packet_sends(void **state)
{
	static const uint8_t seq[4] = { RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_MIDDLE, RC_SEND_LAST };

	for (int i = 0; i < 32; i++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(fr(38 + i), fl(38 + i), &p), ROCE_OK);
		assert_int_equal(fl(38 + i), 1082);
		assert_int_equal(p.opcode, seq[i % 4]);
		assert_int_equal(p.dest_qp, 0x11);
		assert_int_equal(p.psn, 4083708 + i);
		assert_int_equal(p.payload_len, 1024);
		assert_int_equal(p.payload_off, ROCE_HDRS_LEN);
		assert_int_equal(p.src_ip, 10u << 24 | 1 << 16 | 1 << 8 | 5);   /* 10.1.1.5 */
		assert_int_equal(p.dst_ip, 10u << 24 | 1 << 16 | 1 << 8 | 21);  /* 10.1.1.21 */
		assert_int_equal(p.dst_port, ROCE_PORT_HOST);
		assert_int_equal(p.pkey, 0xffff);
		assert_false(p.has_imm);
	}
}

static void test_acks_carry_msn(void **state)
{
	for (int i = 0; i < 8; i++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(fr(70 + i), fl(70 + i), &p), ROCE_OK);
		assert_int_equal(p.opcode, RC_ACK);
		assert_true(p.has_aeth);
		assert_int_equal(p.syndrome, AETH_TYPE_ACK | AETH_ACK_UNLIMITED);
		assert_int_equal(p.msn, i + 1);
		assert_int_equal(p.psn, 4083708 + 4 * i + 3); /* the PSN of each SEND_LAST */
		assert_int_equal(p.payload_len, 0);
	}
	/* the 64-byte SEND_ONLYs to QPN 0x12 and their ACKs, MSN 1..8 */
	int sends = 0, acks = 0;
	for (int n = 109; n <= 124; n++) {
		struct roce_pkt p;
		assert_int_equal(roce_parse(fr(n), fl(n), &p), ROCE_OK);
		if (p.opcode == RC_SEND_ONLY) {
			assert_int_equal(p.dest_qp, 0x12);
			assert_int_equal(p.payload_len, 64);
			sends++;
		} else {
			assert_int_equal(p.opcode, RC_ACK);
			assert_int_equal(p.msn, ++acks);
		}
	}
	assert_int_equal(sends, 8);
	assert_int_equal(acks, 8);
}

/* Rebuilding each real frame from its parsed fields gives the same bytes. */
static void test_build_reproduces_rxe_frames(void **state)
{
	int rebuilt = 0;

	for (int n = 1; n <= nframes; n++) {
		struct roce_pkt p;
		uint8_t out[2048];
		if (roce_parse(fr(n), fl(n), &p) != ROCE_OK)
			continue;
		struct roce_build b = {
			.src_mac = p.src_mac, .dst_mac = p.dst_mac, .src_ip = p.src_ip, .dst_ip = p.dst_ip,
			.src_port = p.src_port, .dst_port = p.dst_port, .opcode = p.opcode, .ack_req = p.ack_req,
			.dest_qp = p.dest_qp, .psn = p.psn, .has_imm = p.has_imm, .imm = p.imm,
			.has_aeth = p.has_aeth, .syndrome = p.syndrome, .msn = p.msn,
			.payload = fr(n) + p.payload_off, .payload_len = p.payload_len,
			.ip_id = (uint16_t)(fr(n)[18] << 8 | fr(n)[19]),
		};
		size_t len = roce_build_frame(out, sizeof(out), &b);
		assert_int_equal(len, fl(n));
		assert_memory_equal(out, fr(n), len);
		rebuilt++;
	}
	assert_int_equal(rebuilt, 56);
}

static void test_corruption_and_truncation_are_caught(void **state)
{
	uint8_t f[2048];
	struct roce_pkt p;

	memcpy(f, fr(38), fl(38));
	f[ROCE_HDRS_LEN + 100] ^= 1; /* one payload bit */
	assert_false(roce_icrc_ok(f, fl(38)));
	memcpy(f, fr(38), fl(38));
	f[ROCE_ETH_LEN + 8] = 1;     /* TTL is masked out of the ICRC: still valid */
	assert_true(roce_icrc_ok(f, fl(38)));
	/* every truncation is rejected, none read past the end */
	for (size_t len = 0; len < fl(38); len++)
		assert_int_not_equal(roce_parse(fr(38), len, &p), ROCE_OK);
	/* a capture shorter than its IP total length */
	assert_int_equal(roce_parse(fr(70), ROCE_HDRS_LEN + 2, &p), ROCE_ERR_IP_HDR);
	assert_false(roce_icrc_ok(fr(70), 10));
	/* an opcode the switch does not handle (RDMA WRITE FIRST) */
	memcpy(f, fr(38), fl(38));
	f[ROCE_BTH_OFF] = 0x06;
	assert_int_equal(roce_parse(f, fl(38), &p), ROCE_ERR_OPCODE);
	assert_string_equal(roce_parse_err_name(ROCE_ERR_OPCODE), "opcode");
	/* small buffers are refused by the builder */
	struct roce_build b = { .src_mac = f, .dst_mac = f, .opcode = RC_ACK, .has_aeth = 1 };
	assert_int_equal(roce_build_frame(f, 40, &b), 0);
	assert_int_equal(roce_build_frame(f, sizeof(f), &b), ROCE_HDRS_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN);
}

static void test_immediate_and_padding(void **state)
{
	uint8_t f[256], mac[6] = { 2, 0, 0, 0, 0, 1 };
	const char payload[3] = { 'a', 'b', 'c' };
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = 1, .dst_ip = 2, .src_port = 49152,
				.dst_port = ROCE_PORT_SWITCH, .opcode = RC_SEND_ONLY_WITH_IMM, .ack_req = 1,
				.dest_qp = 0x123456, .psn = 0xfffffe, .has_imm = 1, .imm = 0xffff5100,
				.payload = payload, .payload_len = 3 };
	struct roce_pkt p;
	size_t len = roce_build_frame(f, sizeof(f), &b);

	assert_int_equal(len, ROCE_HDRS_LEN + 4 + 4 + 4); /* imm, 3 bytes + 1 pad, icrc */
	assert_int_equal(roce_parse(f, len, &p), ROCE_OK);
	assert_true(roce_icrc_ok(f, len));
	assert_int_equal(p.imm, 0xffff5100);
	assert_int_equal(p.payload_len, 3);
	assert_memory_equal(f + p.payload_off, "abc", 3);
	assert_int_equal(p.dest_qp, 0x123456);
	assert_int_equal(p.psn, 0xfffffe);
	assert_true(p.ack_req);
	assert_int_equal(p.dst_port, ROCE_PORT_SWITCH);
}

static void test_psn_arithmetic_wraps(void **state)
{
	assert_int_equal(roce_psn_diff(5, 3), 2);
	assert_int_equal(roce_psn_diff(3, 5), -2);
	assert_int_equal(roce_psn_diff(0, 0xffffff), 1);     /* wrapped forward */
	assert_int_equal(roce_psn_diff(0xffffff, 0), -1);
	assert_int_equal(roce_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(roce_psn_diff(0x7fffff, 0), 0x7fffff);
}


/* x^n modulo the CRC polynomial by n multiplications by x: what crc32_xpow() computes faster */
static uint32_t xpow_slow(unsigned n)
{
	uint32_t p = 1u << 31;

	while (n--)
		p = p & 1 ? (p >> 1) ^ 0xedb88320u : p >> 1;
	return p;
}

/* crc32_xpow() by its table against n multiplications by x; the ICRC's start. */
static void test_crc32_xpow(void **state)
{
	for (unsigned n = 0; n < 3000; n++)
		assert_int_equal(crc32_xpow(n), xpow_slow(n));
	/* the ICRC's start: the CRC of the masked LRH, 8 bytes of ones; roce.c starts from
	 * that of the first 4 (ICRC_LRH_HALF_CRC) and masks the other 4 in the frame */
	assert_int_equal(libdeflate_crc32(0, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), 0x2144df1cu);
	assert_int_equal(libdeflate_crc32(0, "\xff\xff\xff\xff", 4), 0xffffffffu);
	assert_int_equal(libdeflate_crc32(0xffffffffu, "\xff\xff\xff\xff", 4), 0x2144df1cu);
}

/*
 * Both CRC implementations against libdeflate_crc32() over every length up
 * to 2100 bytes at four alignments, from random CRCs, plain, split in two
 * at a random point (a CRC run on) and with a random mask; then every
 * fixture frame's ICRC with each.
 */
static void test_crc32_implementations_agree(void **state)
{
	static uint8_t buf[2200], copy[2200], mask[CRC32_MASK_LEN];
	static const enum crc32_impl impls[] = { CRC32_ISAL, CRC32_LIBDEFLATE };
	uint32_t seed = 12345;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
	for (int i = 0; i < CRC32_MASK_HEAD; i++)
		mask[i] = (seed = seed * 1103515245u + 12345u) >> 29 == 0 ? 0xff : 0;
	for (size_t i = 0; i < 2; i++) {
		crc32_use(impls[i], "test");
		for (size_t len = 0; len <= 2100; len++)
			for (size_t off = 0; off < 4; off++) {
				uint32_t init = seed = seed * 1103515245u + 12345u;
				uint32_t want = libdeflate_crc32(init, buf + off, len);
				size_t cut = len ? (seed = seed * 1103515245u + 12345u) % (len + 1) : 0;

				assert_int_equal(crc32_gzip(init, buf + off, len), want);
				assert_int_equal(crc32_gzip(crc32_gzip(init, buf + off, cut), buf + off + cut, len - cut), want);
				memcpy(copy, buf + off, len);
				for (size_t j = 0; j < len && j < CRC32_MASK_HEAD; j++)
					copy[j] |= mask[j];
				assert_int_equal(crc32_masked(init, buf + off, len, mask), libdeflate_crc32(init, copy, len));
			}
		for (int n = 1; n <= nframes; n++) {
			struct roce_pkt p;

			if (roce_parse(fr(n), fl(n), &p) == ROCE_OK)
				assert_true(roce_icrc_ok(fr(n), fl(n)));
		}
	}
	crc32_use(CRC32_AUTO, NULL);
}

/*
 * A switch serving several communicators picks the engine by the frame's
 * destination QPN alone: roce_peek_dest_qp() finds it in every real frame,
 * behind IP options too, and refuses what is too short or not IPv4; the
 * communicator key is read only from the switch's own QPN forms.
 */
static void test_peek_dest_qp_and_comm_key(void **state)
{
	int seen = 0;

	(void)state;
	for (int n = 1; n <= nframes; n++) {
		struct roce_pkt p;
		uint8_t g[2048];
		if (roce_parse(fr(n), fl(n), &p) != ROCE_OK)
			continue;
		assert_int_equal(roce_peek_dest_qp(fr(n), fl(n)), p.dest_qp);
		/* the same frame with 4 bytes of IP options (IHL 6) */
		memcpy(g, fr(n), ROCE_ETH_LEN + ROCE_IP_LEN);
		memset(g + ROCE_ETH_LEN + ROCE_IP_LEN, 1, 4);
		memcpy(g + ROCE_ETH_LEN + ROCE_IP_LEN + 4, fr(n) + ROCE_ETH_LEN + ROCE_IP_LEN, fl(n) - ROCE_ETH_LEN - ROCE_IP_LEN);
		g[ROCE_ETH_LEN] = 0x46;
		assert_int_equal(roce_peek_dest_qp(g, fl(n) + 4), p.dest_qp);
		/* cut before the QPN's last byte; not IPv4 */
		assert_int_equal(roce_peek_dest_qp(fr(n), ROCE_BTH_OFF + 7), -1);
		g[ROCE_ETH_LEN] = 0x60;
		assert_int_equal(roce_peek_dest_qp(g, fl(n) + 4), -1);
		seen++;
	}
	assert_int_equal(seen, 56);
	assert_int_equal(roce_peek_dest_qp(fr(1), ROCE_ETH_LEN), -1);

	assert_int_equal(INC_QPN_COMM_KEY(INC_QPN_TO_CHILD(4100, 3)), 4);      /* 4100 mod 4096 */
	assert_int_equal(INC_QPN_COMM_KEY(INC_QPN_TO_CHILD(4095, 63)), 4095);
	assert_int_equal(INC_QPN_COMM_KEY(INC_QPN_TO_PARENT(7)), 7);
	assert_int_equal(INC_QPN_COMM_KEY(INC_QPN_TO_PARENT(7) | 1), -1);     /* no such parent end */
	assert_int_equal(INC_QPN_COMM_KEY(0x11), -1);                         /* a host's (rxe) QPN */
	assert_int_equal(INC_QPN_COMM_KEY(0x300700), -1);
	assert_int_equal(INC_QPN_COMM_KEY(0xffffff), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_roce_frame_parses_with_valid_icrc),
		cmocka_unit_test(test_multi_packet_sends),
		cmocka_unit_test(test_acks_carry_msn),
		cmocka_unit_test(test_build_reproduces_rxe_frames),
		cmocka_unit_test(test_corruption_and_truncation_are_caught),
		cmocka_unit_test(test_immediate_and_padding),
		cmocka_unit_test(test_psn_arithmetic_wraps),
		cmocka_unit_test(test_crc32_xpow),
		cmocka_unit_test(test_crc32_implementations_agree),
		cmocka_unit_test(test_peek_dest_qp_and_comm_key),
	};
	return cmocka_run_group_tests_name("roce", tests, load_fixture, NULL);
}
