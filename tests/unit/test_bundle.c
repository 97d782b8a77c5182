/*
 * test_bundle.c — switch-link bundles (switch/bundle.c), cmocka.
 *
 * Inner frames are real rxe frames (tests/fixtures/rxe-rc-send.pcap: 1082-byte
 * SENDs and 62-byte ACKs). A bundle of them must come apart into the same
 * bytes, carry valid outer IPv4/UDP headers, and every way of breaking one
 * (truncation, counts, lengths, version, trailing bytes) must be refused
 * with nothing returned, and counted once by what incswitch calls (bundle_rx()).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pcap/pcap.h>

#include "bundle.h"
#include "roce.h"

#define FIXTURE "tests/fixtures/rxe-rc-send.pcap"
#define MAXF 200

static uint8_t frames[MAXF][2048];
static uint16_t lens[MAXF];
static int nframes;
static uint8_t buf[16384];

static int load_fixture(void **state)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(FIXTURE, err);
	struct pcap_pkthdr *h;
	const u_char *d;

	(void)state;
	if (!p)
		return -1;
	while (nframes < MAXF && pcap_next_ex(p, &h, &d) == 1) {
		memcpy(frames[nframes], d, h->caplen < 2048 ? h->caplen : 2048);
		lens[nframes++] = (uint16_t)h->caplen;
	}
	pcap_close(p);
	return nframes == 132 ? 0 : -1;
}

/* Frames 38..41 (SENDs) and 70 (an ACK), 1-based as tshark numbers them. */
static int pick(const uint8_t **f, uint16_t *l)
{
	static const int n[] = { 38, 39, 40, 41, 70 };
	for (int i = 0; i < 5; i++)
		f[i] = frames[n[i] - 1], l[i] = lens[n[i] - 1];
	return 5;
}

static unsigned sum16(const uint8_t *p, int n)
{
	uint32_t s = 0;
	for (int i = 0; i < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static void test_round_trip(void **state)
{
	const uint8_t *f[5], *in[8];
	uint16_t l[5], il[8];
	const char *why = NULL;
	int n = pick(f, l);
	size_t len = bundle_build(buf, sizeof(buf), f, l, n);

	(void)state;
	assert_int_equal(len, BUNDLE_OUTER_LEN + 4 * (2 + 1082) + 2 + 62); /* 4 SENDs, an ACK */
	assert_true(bundle_is(buf, len));
	assert_int_equal(sum16(buf + 14, 20), 0xffff);               /* valid IPv4 header checksum */
	assert_int_equal(buf[14 + 2] << 8 | buf[14 + 3], len - 14);  /* IP total length */
	assert_int_equal(buf[34 + 4] << 8 | buf[34 + 5], len - 34);  /* UDP length */
	assert_memory_equal(buf, f[0], 14);                          /* the first frame's Ethernet header */
	assert_memory_equal(buf + 26, f[0] + 26, 8);                 /* and IP addresses */
	assert_int_equal(bundle_split(buf, len, in, il, 8, &why), 5);
	for (int i = 0; i < n; i++) {
		struct roce_pkt p;
		assert_int_equal(il[i], l[i]);
		assert_memory_equal(in[i], f[i], l[i]);
		assert_int_equal(roce_parse(in[i], il[i], &p), ROCE_OK);
		assert_true(roce_icrc_ok(in[i], il[i]));
	}
	assert_false(bundle_is(f[0], l[0])); /* a RoCE frame is no bundle */
}

static void test_build_refuses(void **state)
{
	const uint8_t *f[5];
	uint16_t l[5];
	int n = pick(f, l);
	uint8_t arp[60] = { [12] = 0x08, [13] = 0x06 };
	const uint8_t *a[1] = { arp };
	uint16_t al[1] = { sizeof(arp) };

	(void)state;
	assert_int_equal(bundle_build(buf, BUNDLE_OUTER_LEN + 2 * (2 + 1082) + 10, f, l, 3), 0); /* does not fit */
	assert_int_equal(bundle_build(buf, sizeof(buf), f, l, 0), 0);
	assert_int_equal(bundle_build(buf, sizeof(buf), a, al, 1), 0); /* not IPv4/UDP */
	assert_true(bundle_build(buf, sizeof(buf), f, l, n) > 0);
}

static void test_room(void **state)
{
	(void)state;
	assert_int_equal(bundle_room(9000), 9000 - 20 - 8 - BUNDLE_HDR_LEN);
	assert_int_equal(bundle_room(1500), 1500 - 20 - 8 - BUNDLE_HDR_LEN); /* a SEND and an ACK fit */
	assert_int_equal(bundle_room(100), 0);
}

static void test_take(void **state)
{
	uint16_t l[300];
	size_t room = bundle_room(9000);

	(void)state;
	for (int i = 0; i < 300; i++)
		l[i] = 1082;
	assert_int_equal(bundle_take(l, 20, room), 8);   /* 8 x (2 + 1082) = 8672 <= 8968 */
	assert_int_equal(bundle_take(l, 3, room), 3);
	assert_int_equal(bundle_take(l, 0, room), 0);
	assert_int_equal(bundle_take(l, 5, 0), 1);       /* no room: one plain frame at a time */
	assert_int_equal(bundle_take(l, 5, bundle_room(1500)), 1);
	l[0] = 62;                                       /* an ACK and a SEND share a 1500 MTU */
	assert_int_equal(bundle_take(l, 5, bundle_room(1500)), 2);
	for (int i = 0; i < 300; i++)
		l[i] = 62;
	assert_int_equal(bundle_take(l, 300, 65000), BUNDLE_MAX_FRAMES); /* the count is one byte */
}

/* split() of the bundle after @mangle changed it must fail and say @want. */
static void refused(size_t len, const char *want)
{
	const uint8_t *in[8] = { 0 };
	uint16_t il[8] = { 0 };
	const char *why = NULL;

	assert_int_equal(bundle_split(buf, len, in, il, 8, &why), -1);
	assert_non_null(why);
	assert_string_equal(why, want);
	assert_null(in[0]);
}

static size_t fresh(int n)
{
	const uint8_t *f[5];
	uint16_t l[5];
	pick(f, l);
	return bundle_build(buf, sizeof(buf), f, l, n);
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }

static void test_split_refuses(void **state)
{
	size_t len;

	(void)state;
	len = fresh(5);
	refused(len - 1, "IP and UDP lengths do not match the frame");               /* truncated */
	len = fresh(5), buf[42] = 2;
	refused(len, "unknown bundle version");
	len = fresh(5), buf[43] = 0;
	refused(len, "frame count out of range");
	len = fresh(5), buf[43] = 9;                                                 /* more than max (8) */
	refused(len, "frame count out of range");
	len = fresh(5), buf[43] = 6;
	refused(len, "fewer frames than its count");
	len = fresh(5), buf[43] = 4;
	refused(len, "bytes after the last frame of its count");
	len = fresh(5), put16(buf + BUNDLE_OUTER_LEN, 20);                           /* inner frame too short */
	refused(len, "an inner frame's length is too short or runs past the bundle");
	len = fresh(5), put16(buf + BUNDLE_OUTER_LEN, 9000);                         /* runs past the end */
	refused(len, "an inner frame's length is too short or runs past the bundle");
	len = fresh(1), put16(buf + 38, 4);                                          /* UDP length too small */
	refused(len, "IP and UDP lengths do not match the frame");
	len = fresh(1), buf[37] = 0xb6;                                              /* UDP 4790: not a bundle */
	refused(len, "not a bundle or shorter than its headers");
	len = fresh(1);
	refused(40, "not a bundle or shorter than its headers");
}

/*
 * rx() - bundle_rx() of buf's first @len bytes, captured @caplen of them:
 * returns @want, and moves only @counter (NULL: neither) of the daemon's two, by 1.
 */
static void rx(size_t caplen, size_t len, int want, const char *counter)
{
	static struct bundle_rx_counters c;
	struct bundle_rx_counters before = c;
	const uint8_t *in[BUNDLE_MAX_FRAMES];
	uint16_t il[BUNDLE_MAX_FRAMES];

	assert_int_equal(bundle_rx(buf, caplen, len, in, il, &c), want);
	assert_int_equal(c.bundles_rx - before.bundles_rx, counter && !strcmp(counter, "bundles_rx"));
	assert_int_equal(c.drop_bundle - before.drop_bundle, counter && !strcmp(counter, "drop_bundle"));
}

/* What incswitch does with each captured frame (bundle_rx()): every bundle it refuses counted once in drop_bundle. */
static void test_rx_counts_every_refused_bundle(void **state)
{
	const uint8_t *f[5];
	uint16_t l[5];
	size_t len;

	(void)state;
	pick(f, l);
	memcpy(buf, f[0], l[0]);
	rx(l[0], l[0], -1, NULL);                                /* a RoCE frame: the engine's, as captured */
	rx(l[0] - 10, l[0], -1, NULL);                           /* ... even cut (the engine counts it) */
	len = fresh(5);
	rx(len, len, 5, "bundles_rx");
	rx(len - 100, len, 0, "drop_bundle");                    /* cut by the capture length */
	rx(len - 1, len - 1, 0, "drop_bundle");                  /* truncated */
	len = fresh(5), buf[42] = 2;
	rx(len, len, 0, "drop_bundle");                          /* unknown version */
	len = fresh(5), buf[43] = 0;
	rx(len, len, 0, "drop_bundle");                          /* no frame */
	len = fresh(5), buf[43] = 6;
	rx(len, len, 0, "drop_bundle");                          /* fewer frames than its count */
	len = fresh(5), buf[43] = 4;
	rx(len, len, 0, "drop_bundle");                          /* bytes after its last frame */
	len = fresh(5), put16(buf + BUNDLE_OUTER_LEN, 20);
	rx(len, len, 0, "drop_bundle");                          /* an inner frame too short */
	len = fresh(1), put16(buf + 38, 4);
	rx(len, len, 0, "drop_bundle");                          /* UDP length too small */
	len = fresh(1), buf[14] = 0x46;
	rx(len, len, -1, NULL);                                  /* IP options: no bundle; the engine's drop_parse */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_build_refuses),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_split_refuses),
		cmocka_unit_test(test_rx_counts_every_refused_bundle),
	};
	return cmocka_run_group_tests_name("bundle", tests, load_fixture, NULL);
}
