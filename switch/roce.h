/*
 * roce.h — RoCEv2 frames as the INC switch sees them: layout, parsing, building.
 *
 * Frame: Ethernet(14) | IPv4(20, no options) | UDP(8) | BTH(12) | [ImmDt(4)] |
 *        [AETH(4)] | payload | ICRC(4)
 * (IBTA Vol. 1 ch. 9 and Annex A17; the kernel's rxe_hdr.h has the same fields.)
 * All multi-byte fields are big-endian on the wire; the structures below hold
 * host-order values and offsets into the frame, never pointers that outlive it.
 */
#ifndef INCLAB_ROCE_H
#define INCLAB_ROCE_H

#include <stddef.h>
#include <stdint.h>

#define ROCE_ETH_LEN 14
#define ROCE_IP_LEN 20
#define ROCE_UDP_LEN 8
#define ROCE_BTH_LEN 12
#define ROCE_IMM_LEN 4
#define ROCE_AETH_LEN 4
#define ROCE_ICRC_LEN 4
#define ROCE_HDRS_LEN (ROCE_ETH_LEN + ROCE_IP_LEN + ROCE_UDP_LEN + ROCE_BTH_LEN)

/* Where each header starts in a frame whose IPv4 header has no options (the frames the switch builds) */
#define ROCE_IP_OFF ROCE_ETH_LEN                    /* IPv4: byte 2 total length, 9 protocol, 10 checksum */
#define ROCE_UDP_OFF (ROCE_IP_OFF + ROCE_IP_LEN)    /* UDP: byte 2 destination port, 4 length */
#define ROCE_BTH_OFF (ROCE_UDP_OFF + ROCE_UDP_LEN)  /* UDP's payload: the BTH, byte 0 its opcode */
#define ROCE_BTH_ACKREQ_OFF (ROCE_BTH_OFF + 8)      /* BTH byte 8: AckReq (bit 7), then 7 reserved bits */
#define ROCE_BTH_ACKREQ 0x80

#define ROCE_ETHERTYPE_IPV4 0x0800
#define ROCE_IPPROTO_UDP 17
#define ROCE_PORT_HOST 4791   /* IANA RoCEv2: host <-> switch */
#define ROCE_PORT_SWITCH 4792 /* the seed's switch <-> switch port */

#define ROCE_PSN_MASK 0xffffffu
#define ROCE_QPN_MASK 0xffffffu
#define ROCE_DEFAULT_PKEY 0xffff

/* RC opcodes (transport 000, IBTA table 38). */
enum roce_opcode {
	RC_SEND_FIRST = 0x00,
	RC_SEND_MIDDLE = 0x01,
	RC_SEND_LAST = 0x02,
	RC_SEND_LAST_WITH_IMM = 0x03,
	RC_SEND_ONLY = 0x04,
	RC_SEND_ONLY_WITH_IMM = 0x05,
	RC_ACK = 0x11,
};

/** roce_opcode_has_imm() - does a frame of opcode @op carry ImmDt (SEND_LAST/ONLY_WITH_IMM)? */
static inline int roce_opcode_has_imm(uint8_t op)
{
	return op == RC_SEND_LAST_WITH_IMM || op == RC_SEND_ONLY_WITH_IMM;
}

/* AETH syndrome (bits 31..24 of the AETH): 3-bit type, 5-bit value. */
#define AETH_TYPE_ACK 0x00     /* value = credit count; 0x1f = credits not used */
#define AETH_TYPE_RNR_NAK 0x20 /* value = RNR timer code */
#define AETH_TYPE_NAK 0x60     /* value = NAK code */
#define AETH_TYPE_MASK 0xe0
#define AETH_ACK_UNLIMITED 0x1f
#define AETH_NAK_PSN_SEQ 0x00
#define AETH_NAK_INVALID_REQ 0x01
#define AETH_MSN_MASK 0xffffffu

/** A parsed RoCEv2 frame: header values and where its parts are. */
struct roce_pkt {
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src_ip, dst_ip;    /* host order */
	uint16_t src_port, dst_port;
	uint8_t opcode;
	uint8_t se_m_pad;           /* BTH byte 1: SE(7) M(6) PadCnt(5..4) TVer(3..0) */
	uint16_t pkey;
	uint32_t dest_qp;           /* 24 bits */
	int ack_req;                /* BTH A bit */
	uint32_t psn;               /* 24 bits */
	int has_imm, has_aeth;
	uint32_t imm;               /* immediate data, host order */
	uint8_t syndrome;           /* AETH */
	uint32_t msn;               /* AETH, 24 bits */
	size_t payload_off, payload_len; /* payload without pad bytes */
	uint32_t icrc;              /* as carried (little-endian on the wire) */
	size_t frame_len;
};

enum roce_parse_err {
	ROCE_OK = 0,
	ROCE_ERR_SHORT,       /* shorter than its headers say */
	ROCE_ERR_NOT_IPV4,
	ROCE_ERR_IP_HDR,      /* options, bad version, fragment, bad total length */
	ROCE_ERR_NOT_UDP,
	ROCE_ERR_NOT_ROCE,    /* UDP, but not to 4791/4792 */
	ROCE_ERR_OPCODE,      /* not an RC opcode the switch handles */
	ROCE_ERR_PAD,         /* pad count larger than the payload */
	ROCE_ERR__COUNT
};

/** roce_parse_err_name() - short name of a parse error, for counters. */
const char *roce_parse_err_name(enum roce_parse_err e);

/**
 * roce_parse() - parse and bounds-check one Ethernet frame.
 * @frame, @len: the frame as captured (ICRC included, no FCS).
 * @out: filled on success.
 *
 * Checks structure only; the ICRC is checked by roce_icrc_ok().
 * Return: ROCE_OK or the reason the frame is not a RoCEv2 RC frame we handle.
 */
enum roce_parse_err roce_parse(const uint8_t *frame, size_t len, struct roce_pkt *out);

/**
 * roce_icrc() - invariant CRC of a RoCEv2 frame (IBTA A17.8.1).
 *
 * CRC-32 (gzip/zlib polynomial) over 8 bytes of 0xff (the masked LRH of IB), then the IPv4
 * header with TOS, TTL and checksum masked to ones, the UDP header with its
 * checksum masked to ones, the BTH with its reserved byte 4 masked to ones,
 * then everything up to the ICRC. @len includes the 4 ICRC bytes.
 */
uint32_t roce_icrc(const uint8_t *frame, size_t len);

/** roce_icrc_store() - compute the ICRC of a frame of @len bytes (ICRC included) and write it at its end. */
void roce_icrc_store(uint8_t *frame, size_t len);

/**
 * roce_ip_checksum() - the IPv4 header checksum (RFC 791) of the 20-byte
 * header at @ip, computed with its checksum field as it is (set it to 0 first).
 */
uint16_t roce_ip_checksum(const uint8_t *ip);

/** roce_icrc_ok() - does the frame's trailing ICRC match its contents? */
int roce_icrc_ok(const uint8_t *frame, size_t len);

/**
 * roce_pkt_icrc_ok() - the same for a frame roce_parse() accepted: uses the
 * ICRC and frame length it found (Ethernet padding after the IP packet excluded).
 */
static inline int roce_pkt_icrc_ok(const uint8_t *frame, const struct roce_pkt *p)
{
	return roce_icrc(frame, p->frame_len) == p->icrc;
}

/**
 * struct roce_icrc_tail - what a payload contributes to the ICRC of every
 * frame that carries it. The ICRC is a CRC-32 over the headers, then the
 * payload: CRC(head || payload) = CRC(head) * x^(8 * payload bytes) xor
 * CRC(payload), modulo the polynomial (zlib's crc32_combine()). A result
 * sent to several peers in frames that differ only in their headers runs
 * through the CRC once (roce_icrc_tail()); each frame then costs the CRC of
 * its ~44 header bytes and one multiplication.
 */
struct roce_icrc_tail {
	size_t len;            /* the payload's length, pad bytes not included */
	uint32_t crc;          /* CRC-32 of the payload and its pad bytes (zeros) */
	uint32_t shift;        /* x^(8 * those bytes) modulo the CRC polynomial, bit-reflected as the CRC */
	uint32_t mul[8][16];   /* the product of shift and each 4-bit digit of a CRC, by position */
	size_t mul_len;        /* the length mul[] was made for (+1; 0: none yet) */
};

/**
 * roce_icrc_tail() - @t for the @len bytes at @payload (the payload of a
 * frame roce_build_frame() builds); @t zeroed before its first use. Keep @t
 * for the next payload: its multiplication tables (~550 instructions to
 * make) are only remade when the length changes.
 */
void roce_icrc_tail(struct roce_icrc_tail *t, const void *payload, size_t len);

/** Parameters of a frame to build. */
struct roce_build {
	const uint8_t *src_mac, *dst_mac;
	uint32_t src_ip, dst_ip;     /* host order */
	uint16_t src_port, dst_port; /* src: any entropy; dst: 4791 or 4792 */
	uint8_t opcode;
	int ack_req;
	uint32_t dest_qp, psn;
	int has_imm;
	uint32_t imm;
	int has_aeth;
	uint8_t syndrome;
	uint32_t msn;
	const void *payload;         /* may be where it goes in the frame's buffer already: then not copied */
	size_t payload_len;
	uint16_t ip_id;
	const struct roce_icrc_tail *tail; /* roce_icrc_tail() of this payload; NULL (or another length):
	                                    * the ICRC is computed over the whole frame */
};

/**
 * roce_build_frame() - write a complete frame (IPv4 checksum, UDP checksum 0,
 * pad to 4 bytes, ICRC) into @buf of @cap bytes.
 * Return: the frame length, or 0 if @cap is too small.
 */
size_t roce_build_frame(uint8_t *buf, size_t cap, const struct roce_build *b);

/** roce_psn_diff() - signed distance a - b in 24-bit PSN space (-2^23..2^23-1). */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/**
 * roce_peek_dest_qp() - the destination QPN of frame @f of @len bytes
 * (Ethernet, IPv4 with any header length, UDP, BTH), or -1 when it is too
 * short or not IPv4. Only looks (a switch serving several communicators picks
 * the engine with it); roce_parse() checks the rest.
 */
static inline int64_t roce_peek_dest_qp(const uint8_t *f, size_t len)
{
	size_t bth;

	if (len <= ROCE_ETH_LEN || (f[ROCE_ETH_LEN] >> 4) != 4)
		return -1;
	bth = ROCE_ETH_LEN + (size_t)(f[ROCE_ETH_LEN] & 15) * 4 + ROCE_UDP_LEN;
	if (bth + 8 > len) /* BTH bytes 5..7: the destination QPN */
		return -1;
	return (int64_t)((uint32_t)f[bth + 5] << 16 | (uint32_t)f[bth + 6] << 8 | f[bth + 7]);
}

#endif
