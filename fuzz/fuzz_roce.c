/*
 * fuzz_roce.c — libFuzzer target: one captured Ethernet frame through
 * switch/roce.c, as the switch takes every frame of its ports.
 *
 * Input: the frame as captured (ICRC included, no FCS). Properties checked
 * beyond "no crash, no UB, no leak":
 *  - a frame roce_parse() accepts lies within its capture: payload, pad and
 *    ICRC end at frame_len <= the input's length;
 *  - roce_build_frame() of the parsed fields gives a frame that parses back
 *    to the same fields, with a valid ICRC by roce_icrc_ok();
 *  - the ICRC computed through struct roce_icrc_tail (the payload's CRC
 *    moved past the headers) equals the one computed over the whole frame.
 */
#include "../switch/roce.h"
#include "fuzz.h"

#define FRAME_MAX (ROCE_HDRS_LEN + ROCE_IMM_LEN + ROCE_AETH_LEN + 65536 + 8)

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t out[FRAME_MAX], out2[FRAME_MAX];
	static struct roce_icrc_tail tail;
	struct roce_pkt p, q;
	enum roce_parse_err e = roce_parse(d, n, &p);

	FZ_CHECK(roce_parse_err_name(e) != NULL);
	(void)roce_icrc_ok(d, n); /* any capture: the daemon's tools call it on raw frames */
	if (e != ROCE_OK)
		return 0;
	FZ_CHECK(p.frame_len <= n && p.frame_len >= ROCE_HDRS_LEN + ROCE_ICRC_LEN);
	FZ_CHECK(p.payload_off >= ROCE_HDRS_LEN && p.payload_off + p.payload_len + ((p.se_m_pad >> 4) & 3) +
		 ROCE_ICRC_LEN == p.frame_len);
	FZ_CHECK(p.has_imm == roce_opcode_has_imm(p.opcode) && p.has_aeth == (p.opcode == RC_ACK));
	(void)roce_pkt_icrc_ok(d, &p);

	struct roce_build b = { .src_mac = p.src_mac, .dst_mac = p.dst_mac, .src_ip = p.src_ip, .dst_ip = p.dst_ip,
				.src_port = p.src_port, .dst_port = p.dst_port, .opcode = p.opcode, .ack_req = p.ack_req,
				.dest_qp = p.dest_qp, .psn = p.psn, .has_imm = p.has_imm, .imm = p.imm,
				.has_aeth = p.has_aeth, .syndrome = p.syndrome, .msn = p.msn, .payload = d + p.payload_off,
				.payload_len = p.payload_len };
	size_t len = roce_build_frame(out, sizeof(out), &b);
	FZ_CHECK(len > 0);
	FZ_CHECK(roce_parse(out, len, &q) == ROCE_OK);
	FZ_CHECK(roce_icrc_ok(out, len) && roce_pkt_icrc_ok(out, &q));
	FZ_CHECK(q.src_ip == p.src_ip && q.dst_ip == p.dst_ip && q.src_port == p.src_port && q.dst_port == p.dst_port);
	FZ_CHECK(q.opcode == p.opcode && q.dest_qp == p.dest_qp && q.psn == p.psn && q.ack_req == p.ack_req);
	FZ_CHECK(q.has_imm == p.has_imm && (!q.has_imm || q.imm == p.imm));
	FZ_CHECK(q.has_aeth == p.has_aeth && (!q.has_aeth || (q.syndrome == p.syndrome && q.msn == p.msn)));
	FZ_CHECK(q.payload_len == p.payload_len && !memcmp(out + q.payload_off, d + p.payload_off, p.payload_len));

	/* the same frame with the ICRC made from the payload's tail: byte for byte the same */
	roce_icrc_tail(&tail, d + p.payload_off, p.payload_len);
	b.tail = &tail;
	FZ_CHECK(roce_build_frame(out2, sizeof(out2), &b) == len);
	FZ_CHECK(!memcmp(out, out2, len));
	return 0;
}
