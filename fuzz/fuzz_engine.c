/*
 * fuzz_engine.c — libFuzzer target: the switch's packet engine
 * (switch/engine.c) fed a sequence of frames, bundles and clock ticks, as
 * incswitch feeds it what its ports capture.
 *
 * Input: a header, then records until the input ends.
 *   header: shape (1 byte: 0 a root of two hosts, 1 a leaf of two hosts under
 *           a parent switch, 2 a root of a host and a switch), slots (1 byte:
 *           nslots = 1 + byte % 64), each connection's first PSN from the
 *           peer (3 x 4 bytes: child 0, child 1, parent) and our first PSN (4).
 *   record: one byte k; k & 3 says what follows:
 *     0  a raw frame: length (2 bytes, at most FRAME_MAX), bytes; k & 4: its
 *        IPv4 and UDP lengths made to fit it, k & 8: its ICRC made valid
 *        (when it parses), so the fuzzer gets past the checks;
 *     1  a frame built with roce_build_frame() from a connection's addresses
 *        and QPNs: conn (1), opcode (1), PSN (4), immediate (4), payload
 *        length (2, modulo 1100), AETH syndrome (1) and MSN (4), payload;
 *        k & 4 sets AckReq, k & 8 a destination QPN read from the input (4);
 *     2  a tick: the clock moves by (2 bytes) x 100 us, then sw_engine_tick();
 *     3  a bundle: length (2), bytes, through bundle_rx() as incswitch does.
 * Properties: every frame the engine sends leaves on a configured port,
 * parses, carries a valid ICRC, is addressed to one of the connections and
 * fits a switch MTU; rx_frames counts every frame fed.
 */
#include "../switch/bundle.h"
#include "../switch/engine.h"
#include "../switch/roce.h"
#include "fuzz.h"

#define FRAME_MAX 2048
#define PAYLOAD_MAX 1100 /* a little over SW_MTU: oversized SENDs are a case to fuzz */
#define SW_IP 0x0a010101u    /* 10.1.1.1: the switch, towards its hosts */
#define HOST_IP0 0x0a010110u /* 10.1.1.16 + i: host child i (as tests/fixtures/replay-2x32.md) */
#define UP_IP 0xac100005u    /* 172.16.0.5: the switch, towards its parent or a child switch */
#define PEER_SW_IP 0xac100001u
#define SW_QPN 256
#define UP_QPN 512
#define PEER_SW_QPN 768

static const uint8_t mac_sw[6] = { 0x52, 0x54, 0, 0, 0, 1 }, mac_peer[6] = { 0x52, 0x54, 0, 0, 0, 2 };

static struct sw_cfg cfg;
static int nports;
static uint64_t sent;

/* A connection to a host (@host_i) or to a switch (udp 4792), on port @port. */
static struct sw_conn_cfg conn(int port, int host_i, uint32_t rq_psn, uint32_t sq_psn, int first_rank)
{
	struct sw_conn_cfg c = { .port = port, .rq_psn = rq_psn & 0xffffff, .sq_psn = sq_psn & 0xffffff,
				 .first_rank = (uint16_t)first_rank, .nranks = 1 };

	if (host_i >= 0) {
		c.local_ip = SW_IP, c.peer_ip = HOST_IP0 + (uint32_t)host_i, c.udp_dst = ROCE_PORT_HOST;
		c.local_qpn = SW_QPN, c.peer_qpn = 0x11 + (uint32_t)host_i;
	} else {
		c.local_ip = UP_IP, c.peer_ip = PEER_SW_IP, c.udp_dst = ROCE_PORT_SWITCH;
		c.local_qpn = UP_QPN, c.peer_qpn = PEER_SW_QPN;
	}
	memcpy(c.local_mac, mac_sw, 6);
	memcpy(c.peer_mac, mac_peer, 6);
	return c;
}

/* Does @p go to connection @c (its peer's address, QPN and UDP port)? */
static int to_conn(const struct roce_pkt *p, const struct sw_conn_cfg *c)
{
	return p->src_ip == c->local_ip && p->dst_ip == c->peer_ip && p->dest_qp == c->peer_qpn &&
	       p->dst_port == c->udp_dst;
}

/* The engine's output: checked like the peer's NIC would, then dropped. */
static void tx(void *ctx, int port, const uint8_t *frame, size_t len)
{
	struct roce_pkt p;
	int ok = 0;

	(void)ctx;
	FZ_CHECK(port >= 0 && port < nports);
	FZ_CHECK(len <= ROCE_HDRS_LEN + ROCE_IMM_LEN + ROCE_AETH_LEN + SW_MTU + 3 + ROCE_ICRC_LEN);
	FZ_CHECK(roce_parse(frame, len, &p) == ROCE_OK && p.frame_len == len);
	FZ_CHECK(roce_pkt_icrc_ok(frame, &p));
	for (int i = 0; i < cfg.nchildren; i++)
		ok |= cfg.child[i].port == port && to_conn(&p, &cfg.child[i]);
	ok |= cfg.has_parent && cfg.parent.port == port && to_conn(&p, &cfg.parent);
	FZ_CHECK(ok);
	sent++;
}

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[FRAME_MAX + 64];
	static const uint8_t *inner[BUNDLE_MAX_FRAMES];
	static uint16_t ilen[BUNDLE_MAX_FRAMES];
	struct fz f = { data, size };
	struct bundle_rx_counters brx = { 0 };
	uint64_t now = 1000000000, fed = 0;
	unsigned shape = fz_u8(&f) % 3;
	uint32_t nslots = 1 + fz_u8(&f) % 64, rq0 = fz_u32(&f), rq1 = fz_u32(&f), rqp = fz_u32(&f), sq = fz_u32(&f);

	memset(&cfg, 0, sizeof(cfg));
	cfg.nchildren = 2;
	cfg.nslots = nslots;
	cfg.retransmit_ns = 20000000;
	cfg.min_rto_ns = 2000000;
	cfg.rnr_timer = 1;
	cfg.window = 8;
	cfg.child[0] = conn(0, 0, rq0, sq, 0);
	cfg.child[1] = shape == 2 ? conn(1, -1, rq1, sq, 1) : conn(1, 1, rq1, sq, 1);
	if (shape == 2)
		cfg.child[1].nranks = 2; /* a child switch with two hosts under it */
	nports = 2;
	if (shape == 1) {
		cfg.has_parent = 1;
		cfg.parent = conn(2, -1, rqp, sq, 0);
		cfg.total_ranks = 4;
		nports = 3;
	}
	sent = 0;
	struct sw_engine *e = sw_engine_new(&cfg, tx, NULL);
	FZ_CHECK(e != NULL);

	while (fz_left(&f)) {
		unsigned k = fz_u8(&f);
		size_t len, got;
		const uint8_t *bytes;

		switch (k & 3) {
		case 0: /* a raw frame, perhaps made to pass the length and ICRC checks */
			len = fz_u16(&f) % (FRAME_MAX + 1);
			bytes = fz_take(&f, len, &got);
			memcpy(frame, bytes, got);
			if ((k & 4) && got >= ROCE_BTH_OFF) {
				put16(frame + ROCE_IP_OFF + 2, got - ROCE_IP_OFF);
				put16(frame + ROCE_UDP_OFF + 4, got - ROCE_UDP_OFF);
			}
			if (k & 8) {
				struct roce_pkt p;
				if (roce_parse(frame, got, &p) == ROCE_OK)
					roce_icrc_store(frame, p.frame_len);
			}
			sw_engine_rx(e, frame, got, now);
			fed++;
			break;
		case 1: { /* a frame of one of the connections, built right */
			unsigned who = fz_u8(&f) % 3;
			const struct sw_conn_cfg *c = who == 2 && cfg.has_parent ? &cfg.parent : &cfg.child[who & 1];
			struct roce_build b = { .src_mac = mac_peer, .dst_mac = mac_sw, .src_ip = c->peer_ip,
						.dst_ip = c->local_ip, .src_port = 49152, .dst_port = c->udp_dst,
						.dest_qp = c->local_qpn, .ack_req = !!(k & 4) };
			b.opcode = (uint8_t)fz_u8(&f);
			b.psn = fz_u32(&f) & ROCE_PSN_MASK;
			b.imm = fz_u32(&f);
			b.has_imm = roce_opcode_has_imm(b.opcode);
			b.has_aeth = b.opcode == RC_ACK;
			b.payload_len = fz_u16(&f) % (PAYLOAD_MAX + 1);
			b.syndrome = (uint8_t)fz_u8(&f);
			b.msn = fz_u32(&f) & AETH_MSN_MASK;
			if (k & 8)
				b.dest_qp = fz_u32(&f) & ROCE_QPN_MASK;
			bytes = fz_take(&f, b.payload_len, &got);
			memset(frame, 0, sizeof(frame));
			memcpy(frame + ROCE_HDRS_LEN + ROCE_IMM_LEN + ROCE_AETH_LEN, bytes, got);
			b.payload = frame + ROCE_HDRS_LEN + ROCE_IMM_LEN + ROCE_AETH_LEN;
			static uint8_t built[FRAME_MAX + 64];
			len = roce_build_frame(built, sizeof(built), &b);
			FZ_CHECK(len > 0);
			sw_engine_rx(e, built, len, now);
			fed++;
			break;
		}
		case 2: /* time passes; the daemon ticks after every batch and every millisecond */
			now += (uint64_t)fz_u16(&f) * 100000;
			sw_engine_tick(e, now);
			break;
		case 3: { /* a bundle from a switch link */
			len = fz_u16(&f) % (FRAME_MAX + 1);
			bytes = fz_take(&f, len, &got);
			memcpy(frame, bytes, got);
			int n = bundle_rx(frame, got, got, inner, ilen, &brx);
			if (n < 0) {
				sw_engine_rx(e, frame, got, now);
				fed++;
			}
			for (int i = 0; i < n; i++, fed++)
				sw_engine_rx(e, inner[i], ilen[i], now);
			break;
		}
		}
	}
	sw_engine_tick(e, now + 1000000000);
	const struct sw_counters *c = sw_engine_counters(e);
	FZ_CHECK(c->rx_frames == fed);
	FZ_CHECK(c->tx_frames == sent);
	FZ_CHECK(sw_engine_busy_slots(e) <= nslots);
	sw_engine_free(e);
	return 0;
}
