/*
 * test_replay.c — the switch engine run offline on pcap files, its output
 * frames checked (switch/engine.c), cmocka.
 *
 * The fixtures are the data frames of two hosts doing an AllReduce SUM of 32
 * packets of 1 KiB each, int32 and float32, as `bench_engine -c 2 -p 32
 * [-d float32] -w FILE` writes them (tests/fixtures/replay-2x32.md). Every
 * frame goes into the engine in file order; the hosts acknowledge every
 * result at once. Every frame the engine emits is collected and checked
 * like a NIC would, and more: it parses, its ICRC is valid by roce.c and by
 * a reference CRC written here from the spec (itself checked on real rxe
 * frames), addresses and QPN are the host connection's, the host's data
 * frames are each acknowledged right after they arrive with the right PSN
 * and MSN, results carry consecutive PSNs from the configured sq_psn
 * (wrapping), leave only once every host's packet is in, and hold the
 * element-wise SUM computed here from the input frames' payloads (int32
 * wrapping, float32 as floats). The emitted frames are also written to
 * build/replay-out.pcap for a look with
 *   tshark -r build/replay-out.pcap -d udp.port==4791,infiniband
 */
#include <arpa/inet.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pcap/pcap.h>

#include "engine.h"
#include "roce.h"

#ifndef REPLAY_OUT
#define REPLAY_OUT "build/replay-out.pcap"
#endif
#define FIXTURE_INT32 "tests/fixtures/replay-2x32-int32.pcap"
#define FIXTURE_FLOAT32 "tests/fixtures/replay-2x32-float32.pcap"
#define FIXTURE_RXE "tests/fixtures/rxe-rc-send.pcap"

#define HOSTS 2
#define PACKETS 32
#define REPLAY_BATCH 20 /* frames per batch the test ends with sw_engine_tick() */
#define SW_IP 0x0a010101u    /* 10.1.1.1, as bench_engine */
#define HOST_IP0 0x0a010110u /* 10.1.1.16 + host */
#define SW_QPN 256
#define SQ_PSN 0xfffff0u     /* the switch's first PSN towards each host: wraps during the run */
#define NSLOTS 16            /* fewer than the packets: slots are reused */
#define MAXOUT 1024
#define MAXLEN 1200

/* Offsets in a RoCEv2 frame, read here without roce.c. */
#define IP_OFF 14
#define UDP_OFF (IP_OFF + 20)
#define BTH_OFF (UDP_OFF + 8)
#define IMM_OFF (BTH_OFF + 12)

/* One input frame, its fields read at fixed offsets. */
struct in_frame {
	uint8_t d[MAXLEN];
	size_t len;
	int host;
	uint32_t psn, imm;
	size_t plen;            /* payload bytes */
};

/* One frame the engine emitted, and how many input frames it had been fed then. */
struct out_frame {
	int port, fed;
	size_t len;
	uint8_t d[MAXLEN];
};

static struct in_frame in[HOSTS * PACKETS];
static int nin;
static int pos[HOSTS][PACKETS];  /* index in in[] of host h's packet k */
static struct out_frame out[MAXOUT];
static int nout, fed;
static pcap_t *dead;
static pcap_dumper_t *dumper;

/** be32() - a big-endian 32-bit field. */
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/** crc32_ref() - bitwise reflected CRC-32 (polynomial 0xEDB88320), no table, no zlib. */
static uint32_t crc32_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int b = 0; b < 8; b++)
			crc = crc & 1 ? crc >> 1 ^ 0xedb88320u : crc >> 1;
	}
	return crc;
}

/**
 * icrc_ref() - the ICRC of a RoCEv2 frame from the spec (IBTA A17.8.1, as
 * tests/fixtures/README.md states it), independently of roce.c: CRC-32 over
 * 8 bytes of ones, the IPv4 header with TOS, TTL and checksum set to ones,
 * the UDP header with its checksum set to ones, the BTH with byte 4 set to
 * ones, the rest up to the ICRC. Sets *@carried to the frame's own ICRC.
 */
static uint32_t icrc_ref(const uint8_t *f, size_t len, uint32_t *carried)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t h[20 + 8 + 12];
	size_t end = IP_OFF + (size_t)(f[IP_OFF + 2] << 8 | f[IP_OFF + 3]); /* IPv4 total length */
	uint32_t crc = 0xffffffffu;

	assert_true(end <= len && end >= BTH_OFF + 12 + 4);
	memcpy(h, f + IP_OFF, sizeof(h));
	h[1] = 0xff;                     /* TOS */
	h[8] = 0xff;                     /* TTL */
	h[10] = h[11] = 0xff;            /* IPv4 checksum */
	h[20 + 6] = h[20 + 7] = 0xff;    /* UDP checksum */
	h[28 + 4] = 0xff;                /* BTH reserved byte */
	crc = crc32_ref(crc, ones, sizeof(ones));
	crc = crc32_ref(crc, h, sizeof(h));
	crc = crc32_ref(crc, f + BTH_OFF + 12, end - 4 - (BTH_OFF + 12));
	*carried = (uint32_t)f[end - 4] | (uint32_t)f[end - 3] << 8 | (uint32_t)f[end - 2] << 16 |
		   (uint32_t)f[end - 1] << 24;
	return ~crc;
}

/** icrc_ref_ok() - is the frame's ICRC the one icrc_ref() computes? */
static int icrc_ref_ok(const uint8_t *f, size_t len)
{
	uint32_t carried;

	return icrc_ref(f, len, &carried) == carried;
}

/** tx() - the engine's output: kept, with the number of input frames fed so far. */
static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	(void)ctx;
	assert_true(nout < MAXOUT);
	assert_true(len <= MAXLEN);
	out[nout].port = port;
	out[nout].fed = fed;
	out[nout].len = len;
	memcpy(out[nout].d, f, len);
	nout++;
}

/**
 * load_fixture() - the data frames of @path into in[], fields read at fixed
 * offsets; each host's PSNs consecutive; every ICRC valid by icrc_ref().
 */
static void load_fixture(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	int count[HOSTS] = { 0 };

	if (!p)
		fail_msg("%s: %s", path, err);
	assert_int_equal(pcap_datalink(p), DLT_EN10MB);
	nin = 0;
	while (pcap_next_ex(p, &h, &d) == 1) {
		struct in_frame *x = &in[nin];

		assert_true(nin < HOSTS * PACKETS);
		assert_int_equal(h->caplen, h->len);
		assert_true(h->caplen <= MAXLEN && h->caplen > IMM_OFF + 4 + 4);
		memcpy(x->d, d, h->caplen);
		x->len = h->caplen;
		assert_int_equal(x->d[12] << 8 | x->d[13], 0x0800);            /* IPv4 */
		assert_int_equal(x->d[IP_OFF + 9], 17);                         /* UDP */
		assert_int_equal(x->d[UDP_OFF + 2] << 8 | x->d[UDP_OFF + 3], ROCE_PORT_HOST);
		assert_int_equal(x->d[BTH_OFF], RC_SEND_ONLY_WITH_IMM);
		assert_int_equal(x->d[BTH_OFF + 1] & 0x30, 0);                  /* no pad */
		assert_int_equal(be32(x->d + IP_OFF + 16), SW_IP);
		assert_int_equal(be32(x->d + BTH_OFF + 4) & ROCE_QPN_MASK, SW_QPN);
		assert_true(icrc_ref_ok(x->d, x->len));
		x->host = (int)(be32(x->d + IP_OFF + 12) - HOST_IP0);
		assert_true(x->host >= 0 && x->host < HOSTS);
		x->psn = be32(x->d + BTH_OFF + 8) & ROCE_PSN_MASK;
		x->imm = be32(x->d + IMM_OFF);
		x->plen = x->len - IMM_OFF - 4 - 4;
		assert_true(x->plen % 4 == 0 && x->plen <= SW_MTU);
		int k = count[x->host]++;
		assert_true(k < PACKETS);
		if (k)
			assert_int_equal(x->psn, (in[pos[x->host][0]].psn + (uint32_t)k) & ROCE_PSN_MASK);
		pos[x->host][k] = nin++;
	}
	pcap_close(p);
	assert_int_equal(nin, HOSTS * PACKETS);
	for (int i = 0; i < HOSTS; i++)
		assert_int_equal(count[i], PACKETS);
	for (int k = 0; k < PACKETS; k++)
		for (int i = 1; i < HOSTS; i++) { /* packet k: same PSN, immediate and size on every host */
			assert_int_equal(in[pos[i][k]].psn, in[pos[0][k]].psn);
			assert_int_equal(in[pos[i][k]].imm, in[pos[0][k]].imm);
			assert_int_equal(in[pos[i][k]].plen, in[pos[0][k]].plen);
		}
}

/** engine_for_fixture() - the switch of the fixture's hosts; host i's results go to QPN 0x11 + i. */
static struct sw_engine *engine_for_fixture(void)
{
	struct sw_cfg cfg = { .nchildren = HOSTS, .nslots = NSLOTS, .retransmit_ns = 1000000000, .rnr_timer = 1 };

	for (int i = 0; i < HOSTS; i++)
		cfg.child[i] = (struct sw_conn_cfg){ .port = i, .local_ip = SW_IP, .peer_ip = HOST_IP0 + (uint32_t)i,
						     .local_qpn = SW_QPN, .peer_qpn = 0x11 + (uint32_t)i,
						     .rq_psn = in[pos[i][0]].psn, .sq_psn = SQ_PSN,
						     .udp_dst = ROCE_PORT_HOST, .first_rank = (uint16_t)i, .nranks = 1 };
	struct sw_engine *e = sw_engine_new(&cfg, tx, NULL);
	assert_non_null(e);
	return e;
}

/** host_ack() - host @i acknowledges the switch's SEND of @psn, its @msn-th message. */
static void host_ack(struct sw_engine *e, int i, uint32_t psn, uint32_t msn)
{
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	uint8_t f[128];
	struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = HOST_IP0 + (uint32_t)i, .dst_ip = SW_IP,
				.src_port = 50000, .dst_port = ROCE_PORT_HOST, .opcode = RC_ACK, .dest_qp = SW_QPN,
				.psn = psn, .has_aeth = 1, .syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED,
				.msn = msn };

	sw_engine_rx(e, f, roce_build_frame(f, sizeof(f), &b), 0);
}

/**
 * replay() - feed in[] to @e in file order, ending a batch (sw_engine_tick(),
 * as the daemon does after each read) every REPLAY_BATCH frames and at the
 * end, then one round without input (the ACKs owed to hosts that stopped
 * sending go out); after each frame every host acknowledges the results it got (rxe would
 * ACK only those asking, and the last one of a burst; one ACK each keeps the
 * slots free without timers).
 */
static void replay(struct sw_engine *e)
{
	uint32_t msn[HOSTS] = { 0 };
	int seen = 0;

	nout = fed = 0;
	for (int f = 0; f < nin; f++) {
		fed++; /* frames it was sent on receipt of see fed == f + 1 */
		sw_engine_rx(e, in[f].d, in[f].len, 0);
		if (fed % REPLAY_BATCH == 0 || f == nin - 1)
			sw_engine_tick(e, 0);
		if (f == nin - 1)
			sw_engine_tick(e, 0);
		for (; seen < nout; seen++) {
			const uint8_t *o = out[seen].d;
			if (out[seen].len > BTH_OFF && o[BTH_OFF] != RC_ACK)
				host_ack(e, out[seen].port, be32(o + BTH_OFF + 8) & ROCE_PSN_MASK, ++msn[out[seen].port]);
		}
	}
}

/** write_out() - append the emitted frames to REPLAY_OUT (1 ms apart per run @run). */
static void write_out(int run)
{
	for (int n = 0; n < nout; n++) {
		struct pcap_pkthdr h = { .caplen = (bpf_u_int32)out[n].len, .len = (bpf_u_int32)out[n].len };
		h.ts.tv_sec = run;
		h.ts.tv_usec = n;
		pcap_dump((u_char *)dumper, &h, out[n].d);
	}
	assert_int_equal(pcap_dump_flush(dumper), 0);
}

/** want_elem() - element @j of packet @k's SUM over the hosts, computed from the input payloads (wire order). */
static uint32_t want_elem(int k, size_t j, int is_float)
{
	uint32_t isum = 0;
	float fsum = 0;

	for (int i = 0; i < HOSTS; i++) {
		uint32_t w = be32(in[pos[i][k]].d + IMM_OFF + 4 + 4 * j);
		float f;
		memcpy(&f, &w, 4);
		if (i == 0)
			fsum = f;
		else
			fsum += f;
		isum += w;
	}
	if (!is_float)
		return isum;
	assert_true(isfinite(fsum));
	uint32_t b;
	memcpy(&b, &fsum, 4);
	return b;
}

/** check_result() - result payload @pl of packet @k against the SUM computed here. */
static void check_result(const uint8_t *pl, int k, int is_float)
{
	for (size_t j = 0; j < in[pos[0][k]].plen / 4; j++) {
		uint32_t got = be32(pl + 4 * j), want = want_elem(k, j, is_float);
		if (is_float) {
			float g, w;
			memcpy(&g, &got, 4);
			memcpy(&w, &want, 4);
			if (g != w)
				fail_msg("packet %d element %zu: got %a, want %a", k, j, (double)g, (double)w);
		} else if (got != want) {
			fail_msg("packet %d element %zu: got %d, want %d", k, j, (int32_t)got, (int32_t)want);
		}
	}
}

/**
 * check_outputs() - every emitted frame: parses, valid ICRC (roce.c and the
 * reference), the connection's addresses; per host, ACKs coalesced (one per
 * 32 frames taken or at the end of a batch) that each cover exactly the
 * frames fed before them (PSN of the last one, MSN = their number), the
 * last covering all; the results in PSN order
 * from SQ_PSN, each after all its inputs, holding the SUM.
 */
static void check_outputs(int is_float)
{
	int nacks[HOSTS] = { 0 }, nres[HOSTS] = { 0 }, acked[HOSTS] = { 0 }, nframes = 0;

	for (int n = 0; n < nout; n++) {
		const struct out_frame *o = &out[n];
		int i = o->port;
		struct roce_pkt p;
		uint32_t carried;

		assert_true(i >= 0 && i < HOSTS);
		assert_int_equal(roce_parse(o->d, o->len, &p), ROCE_OK);
		assert_true(roce_pkt_icrc_ok(o->d, &p));
		uint32_t icrc = icrc_ref(o->d, o->len, &carried);
		assert_int_equal(icrc, carried);
		assert_int_equal(p.icrc, carried);
		assert_int_equal(p.src_ip, SW_IP);
		assert_int_equal(p.dst_ip, HOST_IP0 + (uint32_t)i);
		assert_int_equal(p.dst_port, ROCE_PORT_HOST);
		assert_int_equal(p.dest_qp, 0x11 + (uint32_t)i);
		assert_memory_equal(p.dst_mac, in[pos[i][0]].d + 6, 6); /* back to the MAC the host sent from */
		assert_memory_equal(p.src_mac, in[pos[i][0]].d, 6);
		if (p.opcode == RC_ACK) {
			int taken = 0; /* host i's frames fed before this ACK */
			while (taken < PACKETS && pos[i][taken] < o->fed)
				taken++;
			nacks[i]++;
			assert_true(taken > acked[i]); /* each ACK covers something new */
			assert_true(taken - acked[i] == 32 || o->fed % REPLAY_BATCH == 0 || o->fed == nin);
			acked[i] = taken;
			assert_int_equal(p.syndrome & AETH_TYPE_MASK, AETH_TYPE_ACK);
			assert_int_equal(p.psn, in[pos[i][taken - 1]].psn);
			assert_int_equal(p.msn, (uint32_t)taken);
			assert_int_equal(p.payload_len, 0);
			continue;
		}
		int k = nres[i]++;
		assert_true(k < PACKETS);
		assert_int_equal(p.opcode, RC_SEND_ONLY_WITH_IMM);
		assert_int_equal(p.psn, (SQ_PSN + (uint32_t)k) & ROCE_PSN_MASK);
		assert_true(p.has_imm);
		assert_int_equal(p.imm, in[pos[0][k]].imm);
		assert_int_equal(p.payload_len, in[pos[0][k]].plen);
		for (int h = 0; h < HOSTS; h++) /* not before every host's packet k was in */
			assert_true(o->fed > pos[h][k]);
		check_result(o->d + p.payload_off, k, is_float);
	}
	for (int i = 0; i < HOSTS; i++) {
		assert_int_equal(acked[i], PACKETS);
		assert_true(nacks[i] < PACKETS / 2); /* coalesced */
		assert_int_equal(nres[i], PACKETS);
		nframes += nacks[i] + nres[i];
	}
	assert_int_equal(nout, nframes); /* nothing else came out */
}

/** run_fixture() - load @path, replay it, check and write what came out. */
static void run_fixture(const char *path, int is_float, int run)
{
	load_fixture(path);
	struct sw_engine *e = engine_for_fixture();
	replay(e);
	write_out(run);
	check_outputs(is_float);

	const struct sw_counters *c = sw_engine_counters(e);
	assert_int_equal(c->rx_frames, nin + HOSTS * PACKETS);
	assert_int_equal(c->drop_parse + c->drop_icrc + c->drop_unknown_qp + c->drop_bad_imm + c->drop_bad_op + c->drop_mismatch +
				 c->drop_seq, 0);
	assert_int_equal(c->naks_tx + c->rnr_naks_tx + c->duplicates + c->retransmits, 0);
	assert_int_equal(c->slots_completed, PACKETS);
	assert_int_equal(c->aggregations, PACKETS * (HOSTS - 1));
	assert_int_equal(sw_engine_busy_slots(e), 0);
	sw_engine_free(e);
}

static void test_reference_icrc_matches_rxe(void **state)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(FIXTURE_RXE, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	int roce = 0;

	if (!p)
		fail_msg("%s: %s", FIXTURE_RXE, err);
	while (pcap_next_ex(p, &h, &d) == 1) {
		if (h->caplen < BTH_OFF + 16 || (d[12] << 8 | d[13]) != 0x0800 || d[IP_OFF + 9] != 17 ||
		    (d[UDP_OFF + 2] << 8 | d[UDP_OFF + 3]) != ROCE_PORT_HOST)
			continue;
		assert_true(icrc_ref_ok(d, h->caplen));
		roce++;
	}
	pcap_close(p);
	assert_int_equal(roce, 56);
}

static void test_int32_sum_from_pcap(void **state)
{
	run_fixture(FIXTURE_INT32, 0, 0);
}

static void test_float32_sum_from_pcap(void **state)
{
	run_fixture(FIXTURE_FLOAT32, 1, 1);
}

/* One payload bit of a fixture frame flipped: the engine drops it, says nothing. */
static void test_corrupt_frame_dropped(void **state)
{
	load_fixture(FIXTURE_INT32);
	struct sw_engine *e = engine_for_fixture();
	in[0].d[IMM_OFF + 4 + 100] ^= 1;
	assert_false(icrc_ref_ok(in[0].d, in[0].len));
	nout = fed = 0;
	sw_engine_rx(e, in[0].d, in[0].len, 0);
	assert_int_equal(nout, 0);
	assert_int_equal(sw_engine_counters(e)->drop_icrc, 1);
	sw_engine_free(e);
}

/** open_out(), close_out() - REPLAY_OUT around the group. */
static int open_out(void **state)
{
	dead = pcap_open_dead(DLT_EN10MB, 65535);
	dumper = dead ? pcap_dump_open(dead, REPLAY_OUT) : NULL;
	if (!dumper)
		fprintf(stderr, "%s: %s\n", REPLAY_OUT, dead ? pcap_geterr(dead) : "pcap_open_dead");
	return dumper ? 0 : -1;
}

static int close_out(void **state)
{
	pcap_dump_close(dumper);
	pcap_close(dead);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_icrc_matches_rxe),
		cmocka_unit_test(test_int32_sum_from_pcap),
		cmocka_unit_test(test_float32_sum_from_pcap),
		cmocka_unit_test(test_corrupt_frame_dropped),
	};
	return cmocka_run_group_tests_name("replay", tests, open_out, close_out);
}
