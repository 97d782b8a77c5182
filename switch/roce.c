/*
 * roce.c — parse, check and build RoCEv2 RC frames (see roce.h).
 *
 * This is the only file that knows byte offsets of the wire format; the rest
 * of the switch works on struct roce_pkt. The ICRC is the gzip CRC-32 that the
 * IBTA specifies for the invariant CRC (crc32.c: ISA-L's, or libdeflate's
 * under QEMU TCG; the variant fields set to ones in a copy of the headers).
 * A payload sent in several frames goes through it once (struct
 * roce_icrc_tail): each frame adds the CRC of its headers, moved past the
 * payload by a multiplication modulo the polynomial.
 */
#include "roce.h"

#include <endian.h>
#include <string.h>

#include "crc32.h"

/*
 * Fields are loaded and stored whole, through memcpy() (frames are not
 * aligned): a 16- or 32-bit big-endian field is one load and one byte swap.
 */
static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

/* rd24() - the 24-bit field at @p: the low bytes of the word at @p - 1 (each 24-bit field follows a byte of its header). */
static inline uint32_t rd24(const uint8_t *p)
{
	return rd32(p - 1) & 0xffffff;
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

/* the ICRC is the one field sent least significant byte first */
static inline uint32_t rd32le(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline void wr32le(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

const char *roce_parse_err_name(enum roce_parse_err e)
{
	static const char *const names[ROCE_ERR__COUNT] = {
		"ok", "short", "not_ipv4", "ip_header", "not_udp", "not_roce", "opcode", "pad",
	};
	return (unsigned)e < ROCE_ERR__COUNT ? names[e] : "unknown";
}

/* Does the opcode carry ImmDt / AETH? Only the RC opcodes the switch handles. */
static int opcode_layout(uint8_t op, int *imm, int *aeth)
{
	*imm = roce_opcode_has_imm(op);
	*aeth = op == RC_ACK;
	return op <= RC_SEND_ONLY_WITH_IMM || op == RC_ACK;
}

enum roce_parse_err roce_parse(const uint8_t *f, size_t len, struct roce_pkt *p)
{
	const uint8_t *ip = f + ROCE_ETH_LEN, *udp = ip + ROCE_IP_LEN, *bth = udp + ROCE_UDP_LEN;
	size_t off, tail;

	if (len < ROCE_ETH_LEN + ROCE_IP_LEN)
		return ROCE_ERR_SHORT;
	if (rd16(f + 12) != ROCE_ETHERTYPE_IPV4)
		return ROCE_ERR_NOT_IPV4;
	/* version 4, IHL 5 (no options), total length within the frame, not a fragment */
	if (ip[0] != 0x45 || rd16(ip + 2) < ROCE_IP_LEN + ROCE_UDP_LEN ||
	    ROCE_ETH_LEN + (size_t)rd16(ip + 2) > len || (rd16(ip + 6) & 0x3fff) != 0)
		return ROCE_ERR_IP_HDR;
	if (ip[9] != ROCE_IPPROTO_UDP)
		return ROCE_ERR_NOT_UDP;
	len = ROCE_ETH_LEN + rd16(ip + 2); /* ignore Ethernet padding after the IP packet */
	if (rd16(udp + 2) != ROCE_PORT_HOST && rd16(udp + 2) != ROCE_PORT_SWITCH)
		return ROCE_ERR_NOT_ROCE;
	if (len < ROCE_HDRS_LEN + ROCE_ICRC_LEN || rd16(udp + 4) != len - ROCE_ETH_LEN - ROCE_IP_LEN)
		return ROCE_ERR_SHORT;

	memcpy(p->dst_mac, f, 6);
	memcpy(p->src_mac, f + 6, 6);
	p->src_ip = rd32(ip + 12);
	p->dst_ip = rd32(ip + 16);
	p->src_port = rd16(udp);
	p->dst_port = rd16(udp + 2);
	p->opcode = bth[0];
	p->se_m_pad = bth[1];
	p->pkey = rd16(bth + 2);
	p->dest_qp = rd24(bth + 5);
	p->ack_req = bth[8] >> 7;
	p->psn = rd24(bth + 9);
	if (!opcode_layout(p->opcode, &p->has_imm, &p->has_aeth))
		return ROCE_ERR_OPCODE;
	off = ROCE_HDRS_LEN;
	tail = ROCE_ICRC_LEN + (size_t)((p->se_m_pad >> 4) & 3);
	if (p->has_imm) {
		if (len < off + ROCE_IMM_LEN + ROCE_ICRC_LEN)
			return ROCE_ERR_SHORT;
		p->imm = rd32(f + off);
		off += ROCE_IMM_LEN;
	}
	if (p->has_aeth) {
		if (len < off + ROCE_AETH_LEN + ROCE_ICRC_LEN)
			return ROCE_ERR_SHORT;
		p->syndrome = f[off];
		p->msn = rd24(f + off + 1);
		off += ROCE_AETH_LEN;
	}
	if (len < off + tail)
		return ROCE_ERR_PAD;
	p->payload_off = off;
	p->payload_len = len - off - tail;
	p->icrc = rd32le(f + len - ROCE_ICRC_LEN);
	p->frame_len = len;
	return ROCE_OK;
}

/*
 * Every ICRC starts with the masked LRH of IB, 8 bytes 0xff. Its first 4
 * are a constant start (libdeflate_crc32(0, ff ff ff ff, 4) = 0xffffffff:
 * the CRC's register back at 0; no call per frame for them); its last 4 are
 * the frame's 4 bytes before the IPv4 header (source MAC's last 2,
 * EtherType) masked to ones. A frame's headers with ImmDt or AETH are then
 * 4 + 44 = 48 bytes for crc32_masked(), whole 16-byte blocks that ISA-L
 * takes in fewer instructions than 44 (66, not 71).
 */
#define ICRC_LRH_HALF 4
#define ICRC_LRH_HALF_CRC 0xffffffffu

/* icrc_mask - what the ICRC counts as ones, by offset from the LRH's last 4 bytes (the IPv4 header at 4), for crc32_masked(). */
#define AT_IP(off) [ICRC_LRH_HALF + (off)]
static const uint8_t icrc_mask[CRC32_MASK_LEN] = {
	[0] = 0xff, [1] = 0xff, [2] = 0xff, [3] = 0xff,         /* the LRH's last 4 bytes */
	AT_IP(1) = 0xff,                                        /* IPv4 TOS */
	AT_IP(8) = 0xff,                                        /* IPv4 TTL */
	AT_IP(10) = 0xff, AT_IP(11) = 0xff,                     /* IPv4 header checksum */
	AT_IP(ROCE_IP_LEN + 6) = 0xff, AT_IP(ROCE_IP_LEN + 7) = 0xff, /* UDP checksum */
	AT_IP(ROCE_IP_LEN + ROCE_UDP_LEN + 4) = 0xff,           /* BTH reserved byte before DestQP */
};
#undef AT_IP

/* icrc_body() - the CRC of the masked LRH, then of the @n bytes of @f from its IPv4 header on, masked (n >= 40). */
static inline uint32_t icrc_body(const uint8_t *f, size_t n)
{
	return crc32_masked(ICRC_LRH_HALF_CRC, f + ROCE_ETH_LEN - ICRC_LRH_HALF, ICRC_LRH_HALF + n, icrc_mask);
}

uint32_t roce_icrc(const uint8_t *f, size_t len)
{
	return icrc_body(f, len - ROCE_ETH_LEN - ROCE_ICRC_LEN); /* IPv4 header .. the byte before the ICRC */
}

/* CRC-32 polynomials are bit-reflected, as the CRC works on them: bit 31 is x^0, bit 0 is x^31 (crc32.h). */

/*
 * tail_tables() - t->mul[j][v] = shift * (v << 4j), so that shift * a is the
 * XOR of one entry per 4-bit digit of a (tail_shift()). Bit 31 - k of a
 * stands for x^k: digit j's bit i is x^(31 - 4j - i).
 */
static void tail_tables(struct roce_icrc_tail *t)
{
	uint32_t sx[32], q = t->shift; /* sx[k] = shift * x^k */

	for (int k = 0; k < 32; k++) {
		sx[k] = q;
		q = crc32_mulx(q);
	}
	for (int j = 0; j < 8; j++) {
		t->mul[j][0] = 0;
		for (int i = 0; i < 4; i++)
			for (int v = 0; v < 1 << i; v++)
				t->mul[j][v | 1 << i] = t->mul[j][v] ^ sx[31 - 4 * j - i];
	}
}

/* tail_shift() - @crc * t->shift: a CRC moved past the payload of @t, eight table look-ups. */
static uint32_t tail_shift(const struct roce_icrc_tail *t, uint32_t crc)
{
	const uint32_t (*m)[16] = t->mul; /* written out: -O2 keeps the loop (~11 instructions a digit) */

	return m[0][crc & 15] ^ m[1][crc >> 4 & 15] ^ m[2][crc >> 8 & 15] ^ m[3][crc >> 12 & 15] ^
	       m[4][crc >> 16 & 15] ^ m[5][crc >> 20 & 15] ^ m[6][crc >> 24 & 15] ^ m[7][crc >> 28];
}

void roce_icrc_tail(struct roce_icrc_tail *t, const void *payload, size_t len)
{
	static const uint8_t zeros[3];
	size_t pad = (4 - (len & 3)) & 3;

	t->len = len;
	t->crc = crc32_gzip(0, payload, len);
	if (pad)
		t->crc = crc32_gzip(t->crc, zeros, pad);
	if (t->mul_len != len + 1) {
		t->shift = crc32_xpow(8 * (uint64_t)(len + pad));
		tail_tables(t);
		t->mul_len = len + 1;
	}
}

int roce_icrc_ok(const uint8_t *f, size_t len)
{
	if (len < ROCE_HDRS_LEN + ROCE_ICRC_LEN)
		return 0;
	return roce_icrc(f, len) == rd32le(f + len - ROCE_ICRC_LEN);
}

uint16_t roce_ip_checksum(const uint8_t *h)
{
	uint32_t w[ROCE_IP_LEN / 4];
	uint64_t sum;

	/* RFC 1071: the ones' complement sum of 16-bit words, added here as five
	 * 32-bit words in the machine's order, folded, and swapped to host order
	 * at the end (the sum does not depend on the order of the bytes) */
	memcpy(w, h, sizeof(w));
	sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return be16toh((uint16_t)~sum);
}

/*
 * ip_checksum_of() - roce_ip_checksum() of the IPv4 header of the 32-bit
 * words @w0 .. @w4 (host order, checksum 0), from the values, not read back
 * from the frame: the ones' complement sum of the 16-bit words is that of
 * the 32-bit words folded (2^16 is 1 modulo 0xffff). Five words sum below
 * 2^35: three folds leave 16 bits.
 */
static inline uint16_t ip_checksum_of(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint32_t w4)
{
	uint64_t sum = (uint64_t)w0 + w1 + w2 + w3 + w4;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t roce_build_frame(uint8_t *f, size_t cap, const struct roce_build *b)
{
	size_t pad = (4 - (b->payload_len & 3)) & 3;
	size_t off = ROCE_HDRS_LEN + (b->has_imm ? ROCE_IMM_LEN : 0) + (b->has_aeth ? ROCE_AETH_LEN : 0);
	size_t len = off + b->payload_len + pad + ROCE_ICRC_LEN;
	uint8_t *ip = f + ROCE_ETH_LEN, *udp = ip + ROCE_IP_LEN, *bth = udp + ROCE_UDP_LEN;
	uint32_t w[3]; /* the IPv4 header's first 3 words, host order */

	if (len > cap || len - ROCE_ETH_LEN > 0xffff)
		return 0;
	memcpy(f, b->dst_mac, 6);
	memcpy(f + 6, b->src_mac, 6);
	wr16(f + 12, ROCE_ETHERTYPE_IPV4);

	/* IPv4: version 4, IHL 5, TOS 0 (DSCP 0, ECN not-ECT), total length;
	 * ID, flags DF (as rxe sends), fragment offset 0; TTL 64, UDP, checksum */
	w[0] = 0x45000000u | (uint32_t)(len - ROCE_ETH_LEN);
	w[1] = (uint32_t)b->ip_id << 16 | 0x4000;
	w[2] = 64u << 24 | ROCE_IPPROTO_UDP << 16;
	wr32(ip, w[0]);
	wr32(ip + 4, w[1]);
	wr32(ip + 8, w[2] | ip_checksum_of(w[0], w[1], w[2], b->src_ip, b->dst_ip));
	wr32(ip + 12, b->src_ip);
	wr32(ip + 16, b->dst_ip);

	/* UDP: ports, length, no checksum (the ICRC covers the payload) */
	wr32(udp, (uint32_t)b->src_port << 16 | b->dst_port);
	wr32(udp + 4, (uint32_t)(len - ROCE_ETH_LEN - ROCE_IP_LEN) << 16);

	/* BTH: opcode; SE 0, MigReq 0, PadCnt, TVer 0; P_Key; reserved 0 and
	 * DestQP; AckReq, reserved 0 and PSN */
	wr32(bth, (uint32_t)b->opcode << 24 | (uint32_t)pad << 20 | ROCE_DEFAULT_PKEY);
	wr32(bth + 4, b->dest_qp & ROCE_QPN_MASK);
	wr32(bth + 8, (b->ack_req ? 1u << 31 : 0) | (b->psn & ROCE_PSN_MASK));

	off = ROCE_HDRS_LEN;
	if (b->has_imm) {
		wr32(f + off, b->imm);
		off += ROCE_IMM_LEN;
	}
	if (b->has_aeth) {
		wr32(f + off, (uint32_t)b->syndrome << 24 | (b->msn & AETH_MSN_MASK));
		off += ROCE_AETH_LEN;
	}
	if (b->payload_len && b->payload != f + off) /* not in place already */
		memcpy(f + off, b->payload, b->payload_len);
	if (pad)
		memset(f + off + b->payload_len, 0, pad);
	if (b->tail && b->tail->len == b->payload_len) /* the headers' CRC, moved past the payload's */
		wr32le(f + len - ROCE_ICRC_LEN, tail_shift(b->tail, icrc_body(f, off - ROCE_ETH_LEN)) ^ b->tail->crc);
	else
		roce_icrc_store(f, len);
	return len;
}

void roce_icrc_store(uint8_t *f, size_t len)
{
	wr32le(f + len - ROCE_ICRC_LEN, roce_icrc(f, len));
}
