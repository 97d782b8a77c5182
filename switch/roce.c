/*
 * roce.c — parse, check and build RoCEv2 RC frames (see roce.h).
 *
 * This is the only file that knows byte offsets of the wire format; the rest
 * of the switch works on struct roce_pkt. The ICRC is the gzip CRC-32 that the
 * IBTA specifies for the invariant CRC, computed with libdeflate (carry-less
 * multiply on x86: several times zlib's table-driven crc32, which dominated
 * the switch's profile).
 */
#include "roce.h"

#include <libdeflate.h>
#include <string.h>

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr24(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }

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
	*imm = op == RC_SEND_LAST_WITH_IMM || op == RC_SEND_ONLY_WITH_IMM;
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
	p->icrc = (uint32_t)f[len - 4] | (uint32_t)f[len - 3] << 8 | (uint32_t)f[len - 2] << 16 | (uint32_t)f[len - 1] << 24;
	p->frame_len = len;
	return ROCE_OK;
}

uint32_t roce_icrc(const uint8_t *f, size_t len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr[ROCE_IP_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN];
	uint32_t crc = 0;

	memcpy(hdr, f + ROCE_ETH_LEN, sizeof(hdr));
	hdr[1] = 0xff;                              /* IPv4 TOS */
	hdr[8] = 0xff;                              /* IPv4 TTL */
	hdr[10] = hdr[11] = 0xff;                   /* IPv4 header checksum */
	hdr[ROCE_IP_LEN + 6] = hdr[ROCE_IP_LEN + 7] = 0xff; /* UDP checksum */
	hdr[ROCE_IP_LEN + ROCE_UDP_LEN + 4] = 0xff; /* BTH reserved byte before DestQP */
	crc = libdeflate_crc32(crc, ones, sizeof(ones)); /* stands for the masked IB LRH */
	crc = libdeflate_crc32(crc, hdr, sizeof(hdr));
	crc = libdeflate_crc32(crc, f + ROCE_HDRS_LEN, len - ROCE_HDRS_LEN - ROCE_ICRC_LEN);
	return crc;
}

int roce_icrc_ok(const uint8_t *f, size_t len)
{
	uint32_t carried;

	if (len < ROCE_HDRS_LEN + ROCE_ICRC_LEN)
		return 0;
	carried = (uint32_t)f[len - 4] | (uint32_t)f[len - 3] << 8 | (uint32_t)f[len - 2] << 16 | (uint32_t)f[len - 1] << 24;
	return roce_icrc(f, len) == carried;
}

uint16_t roce_ip_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < ROCE_IP_LEN; i += 2)
		sum += rd16(h + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t roce_build_frame(uint8_t *f, size_t cap, const struct roce_build *b)
{
	size_t pad = (4 - (b->payload_len & 3)) & 3;
	size_t off = ROCE_HDRS_LEN + (b->has_imm ? ROCE_IMM_LEN : 0) + (b->has_aeth ? ROCE_AETH_LEN : 0);
	size_t len = off + b->payload_len + pad + ROCE_ICRC_LEN;
	uint8_t *ip = f + ROCE_ETH_LEN, *udp = ip + ROCE_IP_LEN, *bth = udp + ROCE_UDP_LEN;

	if (len > cap || len - ROCE_ETH_LEN > 0xffff)
		return 0;
	memcpy(f, b->dst_mac, 6);
	memcpy(f + 6, b->src_mac, 6);
	wr16(f + 12, ROCE_ETHERTYPE_IPV4);

	ip[0] = 0x45;
	ip[1] = 0;                       /* TOS (DSCP 0, ECN not-ECT) */
	wr16(ip + 2, (uint16_t)(len - ROCE_ETH_LEN));
	wr16(ip + 4, b->ip_id);
	wr16(ip + 6, 0x4000);            /* DF, as rxe sends */
	ip[8] = 64;                      /* TTL */
	ip[9] = ROCE_IPPROTO_UDP;
	wr16(ip + 10, 0);
	wr32(ip + 12, b->src_ip);
	wr32(ip + 16, b->dst_ip);
	wr16(ip + 10, roce_ip_checksum(ip));

	wr16(udp, b->src_port);
	wr16(udp + 2, b->dst_port);
	wr16(udp + 4, (uint16_t)(len - ROCE_ETH_LEN - ROCE_IP_LEN));
	wr16(udp + 6, 0);                /* no UDP checksum: the ICRC covers the payload */

	bth[0] = b->opcode;
	bth[1] = (uint8_t)(pad << 4);    /* SE 0, MigReq 0, PadCnt, TVer 0 */
	wr16(bth + 2, ROCE_DEFAULT_PKEY);
	bth[4] = 0;
	wr24(bth + 5, b->dest_qp & ROCE_QPN_MASK);
	bth[8] = b->ack_req ? 0x80 : 0;
	wr24(bth + 9, b->psn & ROCE_PSN_MASK);

	off = ROCE_HDRS_LEN;
	if (b->has_imm) {
		wr32(f + off, b->imm);
		off += ROCE_IMM_LEN;
	}
	if (b->has_aeth) {
		f[off] = b->syndrome;
		wr24(f + off + 1, b->msn & AETH_MSN_MASK);
		off += ROCE_AETH_LEN;
	}
	if (b->payload_len)
		memcpy(f + off, b->payload, b->payload_len);
	memset(f + off + b->payload_len, 0, pad);
	roce_icrc_store(f, len);
	return len;
}

void roce_icrc_store(uint8_t *f, size_t len)
{
	uint32_t icrc = roce_icrc(f, len);

	f[len - 4] = (uint8_t)icrc;
	f[len - 3] = (uint8_t)(icrc >> 8);
	f[len - 2] = (uint8_t)(icrc >> 16);
	f[len - 1] = (uint8_t)(icrc >> 24);
}
