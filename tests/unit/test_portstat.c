/*
 * test_portstat.c — incswitch's counters per port (switch/portstat.c) and the
 * capture filter they count by (SW_CAPTURE_FILTER), cmocka.
 *
 * The counters of an interface live across closing and opening again; the
 * report line is exactly what lab/lab.sh capture parses; the table refuses
 * what does not fit instead of overrunning. The filter (what a port's rx
 * counts, and udpcap -m counts in a capture) is checked against frames made
 * here and against the real rxe frames of tests/fixtures, each classified by
 * an independent parser of the headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pcap/pcap.h>

#include "portstat.h"

static struct sw_port_stats tab;

static void test_counters_outlive_closing(void **state)
{
	(void)state;
	memset(&tab, 0, sizeof(tab));
	struct sw_port_stat *a = sw_port_stat_open(&tab, "to-pku1"), *b = sw_port_stat_open(&tab, "to-sw0");
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	a->rx += 7, a->tx += 3, b->tx += 11;
	assert_int_equal(a->open, 1);
	sw_port_stat_close(a);
	assert_int_equal(a->open, 0);
	assert_int_equal(b->open, 1);
	/* opened again by the next communicator: the same counters, one more open */
	struct sw_port_stat *a2 = sw_port_stat_open(&tab, "to-pku1");
	assert_ptr_equal(a2, a);
	assert_int_equal(a2->open, 1);
	assert_int_equal(a2->rx, 7);
	assert_int_equal(a2->tx, 3);
	assert_int_equal(a2->opens, 2);
	assert_int_equal(b->opens, 1);
	assert_int_equal(tab.n, 2);
	sw_port_stat_close(NULL); /* a port not counted: nothing happens */
}

static void test_refuses_what_does_not_fit(void **state)
{
	char name[SW_PORT_NAME_MAX + 8];

	(void)state;
	memset(&tab, 0, sizeof(tab));
	memset(name, 'x', SW_PORT_NAME_MAX);
	name[SW_PORT_NAME_MAX] = 0;
	assert_null(sw_port_stat_open(&tab, name)); /* 16 characters: no room for its end */
	name[SW_PORT_NAME_MAX - 1] = 0;
	assert_non_null(sw_port_stat_open(&tab, name)); /* 15: an interface name's most (IFNAMSIZ - 1) */
	for (int i = 1; i < SW_PORT_STATS_MAX; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		assert_non_null(sw_port_stat_open(&tab, name));
	}
	assert_int_equal(tab.n, SW_PORT_STATS_MAX);
	assert_null(sw_port_stat_open(&tab, "one-more"));
	struct sw_port_stat *p = sw_port_stat_open(&tab, "p9"); /* one counted already still opens */
	assert_non_null(p);
	assert_string_equal(p->name, "p9");
	assert_int_equal(p->opens, 2);
}

static void test_report_line(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	memset(&tab, 0, sizeof(tab));
	f = open_memstream(&text, &len);
	sw_port_stats_print(&tab, "sw1", f);
	fclose(f);
	assert_string_equal(text, "incswitch sw1 ports: none\n");
	free(text);

	struct sw_port_stat *a = sw_port_stat_open(&tab, "to-pku1"), *b = sw_port_stat_open(&tab, "to-sw0");
	a->rx = 18446744073709551615ull, a->tx = 2;
	b->rx = 5;
	sw_port_stat_close(b);
	sw_port_stat_open(&tab, "to-sw0");
	sw_port_stat_close(b);
	f = open_memstream(&text, &len);
	sw_port_stats_print(&tab, "sw1", f);
	fclose(f);
	assert_string_equal(text, "incswitch sw1 ports: to-pku1 rx=18446744073709551615 tx=2 open=1 opens=1, "
				  "to-sw0 rx=5 tx=0 open=0 opens=2\n");
	free(text);
}

/*
 * takes() - does a port's capture take @f (@len bytes)? The independent
 * reading of SW_CAPTURE_FILTER: Ethernet type IPv4, protocol UDP, the first
 * fragment (its UDP header is there), destination port 4791, 4792 or 4793.
 */
static int takes(const uint8_t *f, size_t len)
{
	size_t ihl;
	unsigned dport;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00)
		return 0;
	ihl = (f[14] & 0x0f) * 4u;
	if (f[14 + 9] != 17 || (((f[14 + 6] & 0x1f) << 8) | f[14 + 7]) != 0 || len < 14 + ihl + 4)
		return 0;
	dport = (unsigned)f[14 + ihl + 2] << 8 | f[14 + ihl + 3];
	return dport == 4791 || dport == 4792 || dport == 4793;
}

static int filter_takes(const struct bpf_program *prog, const uint8_t *f, size_t len)
{
	struct pcap_pkthdr h = { .caplen = (bpf_u_int32)len, .len = (bpf_u_int32)len };
	return pcap_offline_filter(prog, &h, f) != 0;
}

/* A 64-byte IPv4 frame: ethertype @et, protocol @proto, fragment offset @frag, UDP @sport -> @dport. */
static size_t frame(uint8_t *f, unsigned et, unsigned proto, unsigned frag, unsigned sport, unsigned dport)
{
	memset(f, 0, 64);
	f[12] = (uint8_t)(et >> 8), f[13] = (uint8_t)et;
	f[14] = 0x45, f[14 + 3] = 50, f[14 + 8] = 64, f[14 + 9] = (uint8_t)proto;
	f[14 + 6] = (uint8_t)(frag >> 8), f[14 + 7] = (uint8_t)frag;
	f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
	f[34] = (uint8_t)(sport >> 8), f[35] = (uint8_t)sport, f[36] = (uint8_t)(dport >> 8), f[37] = (uint8_t)dport;
	f[39] = 30;
	return 64;
}

static void test_capture_filter(void **state)
{
	static const char *const fixtures[] = { "tests/fixtures/rxe-rc-send.pcap", "tests/fixtures/replay-2x32-int32.pcap",
						"tests/fixtures/replay-2x32-float32.pcap" };
	static const struct { unsigned et, proto, frag, sport, dport; int want; } made[] = {
		{ 0x0800, 17, 0, 49152, 4791, 1 }, { 0x0800, 17, 0, 4791, 4792, 1 }, { 0x0800, 17, 0, 1, 4793, 1 },
		{ 0x0800, 17, 0, 4791, 4790, 0 },  /* from 4791, to another port */
		{ 0x0800, 17, 0, 1, 4794, 0 },     { 0x0800, 6, 0, 1, 4791, 0 },   /* TCP */
		{ 0x86dd, 17, 0, 1, 4791, 0 },     /* not IPv4 */
		{ 0x0800, 17, 0x2000, 1, 4791, 1 }, /* first fragment, more to come */
		{ 0x0800, 17, 0x0010, 1, 4791, 0 }, /* a later fragment: no UDP header */
	};
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	struct bpf_program prog;
	uint8_t f[64];
	int taken = 0, total = 0;

	(void)state;
	assert_non_null(dead);
	assert_int_equal(pcap_compile(dead, &prog, SW_CAPTURE_FILTER, 1, PCAP_NETMASK_UNKNOWN), 0);
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		size_t len = frame(f, made[i].et, made[i].proto, made[i].frag, made[i].sport, made[i].dport);
		assert_int_equal(takes(f, len), made[i].want);
		assert_int_equal(filter_takes(&prog, f, len), made[i].want);
	}
	for (size_t k = 0; k < sizeof(fixtures) / sizeof(fixtures[0]); k++) {
		char err[PCAP_ERRBUF_SIZE];
		pcap_t *p = pcap_open_offline(fixtures[k], err);
		struct pcap_pkthdr *h;
		const u_char *d;
		assert_non_null(p);
		while (pcap_next_ex(p, &h, &d) == 1) {
			int want = takes(d, h->caplen);
			assert_int_equal(filter_takes(&prog, d, h->caplen), want);
			taken += want;
			total++;
		}
		pcap_close(p);
	}
	assert_true(taken > 0); /* the fixtures are RoCE frames: the filter is not vacuous */
	print_message("the capture filter: %d of %d fixture frames taken, as the header parser says\n", taken, total);
	pcap_freecode(&prog);
	pcap_close(dead);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_outlive_closing),
		cmocka_unit_test(test_refuses_what_does_not_fit),
		cmocka_unit_test(test_report_line),
		cmocka_unit_test(test_capture_filter),
	};
	return cmocka_run_group_tests_name("portstat", tests, NULL, NULL);
}
