/*
 * test_pcapng.c — unit tests of the pcapng writer (lab/pcapng.c) and of
 * udpcap's argument checks, cmocka.
 *
 * The file written is read back by two readers that share no code with the
 * writer: libpcap (frames, lengths, bytes, nanosecond timestamps) and tshark
 * (each frame's interface id and name, its direction flag; the interfaces'
 * names and descriptions, and their statistics). The expectations are the
 * values handed to the writer. udpcap must refuse bad input with exit 2 and a
 * message naming what is wrong, before it captures anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <pcap/pcap.h>

#include "pcapng.h"

#define NFRAMES 6

/* Frames of lengths that need every padding (0-3 bytes) and one long one, on two interfaces. */
static const struct {
	uint32_t ifid, len, origlen;
	unsigned dir;
	uint64_t ts;
} frames[NFRAMES] = {
	{ 0, 60, 60, PCAPNG_DIR_IN, 1795690000123456789ull },
	{ 1, 61, 61, PCAPNG_DIR_OUT, 1795690000123456790ull },
	{ 0, 62, 62, PCAPNG_DIR_OUT, 1795690001000000001ull },
	{ 1, 63, 63, PCAPNG_DIR_IN, 1795690001999999999ull },
	{ 0, 1078, 1078, PCAPNG_DIR_IN, 1795690002000000000ull },
	{ 1, 64, 200, PCAPNG_DIR_UNKNOWN, 1795690003000000000ull }, /* cut by the snapshot length */
};

static char dir[64], path[128];

/* The bytes of frame @i: distinct per frame and offset. */
static void frame_bytes(int i, uint8_t *buf)
{
	for (uint32_t k = 0; k < frames[i].len; k++)
		buf[k] = (uint8_t)(i * 37 + k * 7 + 1);
}

static void write_file(void)
{
	struct pcapng w;
	uint8_t buf[2048];

	assert_int_equal(pcapng_open(&w, path, "test_pcapng"), 0);
	assert_int_equal(pcapng_idb(&w, 1, 65535, "sw1-pku1", "interface to-pku1 in namespace x"), 0);
	assert_int_equal(pcapng_idb(&w, 1, 65535, "sw0-sw1", NULL), 1);
	for (int i = 0; i < NFRAMES; i++) {
		frame_bytes(i, buf);
		pcapng_epb(&w, frames[i].ifid, frames[i].ts, buf, frames[i].len, frames[i].origlen, frames[i].dir);
	}
	pcapng_isb(&w, 0, frames[0].ts, frames[4].ts, 3, 0, 3);
	pcapng_isb(&w, 1, frames[1].ts, frames[5].ts, PCAPNG_UNKNOWN, 7, 3);
	assert_int_equal(pcapng_close(&w), 0);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_pcapng.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.pcapng", dir);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

/* libpcap reads every frame back: bytes, lengths, nanosecond timestamps. */
static void test_libpcap_reads_back(void **state)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	uint8_t want[2048];
	int i = 0, rc;

	write_file();
	pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	assert_non_null(p);
	assert_int_equal(pcap_datalink(p), DLT_EN10MB);
	while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
		assert_true(i < NFRAMES);
		assert_int_equal(h->caplen, frames[i].len);
		assert_int_equal(h->len, frames[i].origlen);
		assert_int_equal((uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec, frames[i].ts);
		frame_bytes(i, want);
		assert_memory_equal(data, want, frames[i].len);
		i++;
	}
	assert_int_equal(rc, PCAP_ERROR_BREAK); /* the end of the file, not an error */
	assert_int_equal(i, NFRAMES);
	pcap_close(p);
}

/* Output of shell command @cmd into @buf (NUL-terminated); its exit status. */
static int run(const char *cmd, char *buf, size_t size)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = 0;
	return pclose(f);
}

/* tshark sees two named interfaces, each frame on its own with its direction. */
static void test_tshark_interfaces(void **state)
{
	char cmd[512], out[4096], want[1024] = "";
	static const char *const dirs[] = { "0x00000000", "0x00000001", "0x00000002" };

	write_file();
	snprintf(cmd, sizeof(cmd),
		 "tshark -r '%s' -T fields -E separator=, -e frame.interface_id -e frame.interface_name"
		 " -e frame.packet_flags_direction -e frame.len -e frame.cap_len 2>/dev/null", path);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	for (int i = 0; i < NFRAMES; i++) {
		size_t n = strlen(want);
		/* a frame without flags has no direction field */
		snprintf(want + n, sizeof(want) - n, "%u,%s,%s,%u,%u\n", frames[i].ifid, frames[i].ifid ? "sw0-sw1" : "sw1-pku1",
			 frames[i].dir ? dirs[frames[i].dir] : "", frames[i].origlen, frames[i].len);
	}
	assert_string_equal(out, want);

	/* the interface blocks: names, the description, nanosecond resolution; the statistics */
	snprintf(cmd, sizeof(cmd), "capinfos -M '%s' 2>/dev/null", path);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "Number of interfaces in file: 2"));
	assert_non_null(strstr(out, "Name = sw1-pku1"));
	assert_non_null(strstr(out, "Description = interface to-pku1 in namespace x"));
	assert_non_null(strstr(out, "Name = sw0-sw1"));
	assert_non_null(strstr(out, "Time precision = nanoseconds (9)"));
	assert_non_null(strstr(out, "Number of packets:   6"));
	/* per interface: three frames and one statistics block each */
	const char *p = strstr(out, "Interface #0 info:"), *q = strstr(out, "Interface #1 info:");
	assert_true(p && q && p < q);
	const char *s1 = strstr(p, "Number of stat entries = 1"), *s2 = strstr(p, "Number of packets = 3");
	assert_true(s1 && s1 < q && s2 && s2 < q);
	assert_non_null(strstr(q, "Number of stat entries = 1"));
	assert_non_null(strstr(q, "Number of packets = 3"));
}

/* udpcap, next to this test in the build directory, with @args: its exit status and stderr in @err. */
static int udpcap(const char *args, char *err, size_t size)
{
	char self[4096], cmd[8192];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(n > 0);
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(cmd, sizeof(cmd), "'%s/udpcap' %s 2>&1 >/dev/null", self, args);
	int st = run(cmd, err, size);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Bad input: exit 2 and a message that says what is wrong; no file written. */
static void test_udpcap_bad_input(void **state)
{
	static const struct {
		const char *args, *msg;
	} bad[] = {
		{ "-o X", "usage: udpcap" },                                  /* no link */
		{ "a-b:udp:1:2", "usage: udpcap" },                           /* no file */
		{ "-o X -s 0 a-b:udp:1:2", "SECONDS must be a whole number in 1..86400, not '0'" },
		{ "-o X -s 10x a-b:udp:1:2", "SECONDS must be a whole number in 1..86400, not '10x'" },
		{ "-o X -s 86401 a-b:udp:1:2", "not '86401'" },
		{ "-o X -b 0 a-b:udp:1:2", "BUFFER_MIB must be a whole number in 1..1024, not '0'" },
		{ "-o X a-b", "link 'a-b' is not NAME:netns:NAMESPACE:IFACE or NAME:udp:PORT_A:PORT_B" },
		{ "-o X a-b:udp:1:2:3", "is not NAME:netns" },
		{ "-o X :udp:1:2", "is not NAME:netns" },
		{ "-o X a-b:udp:0:2", "a tunnel port must be a whole number in 1..65535, not '0'" },
		{ "-o X a-b:udp:1:65536", "not '65536'" },
		{ "-o X a-b:tap:x:y", "link a-b: kind must be netns or udp, not 'tap'" },
		{ "-o X a-b:netns:n:abcdefghijklmnop", "link a-b: 'abcdefghijklmnop' is too long for an interface name" },
		{ "-o X a-b:udp:1:2 a-b:udp:3:4", "link a-b given twice" },
	};
	char err[1024], args[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "%s", bad[i].args);
		char *x = strstr(args, "X");
		if (x) { /* the output file, which must not be made */
			char tail[512];
			snprintf(tail, sizeof(tail), "%s", x + 1);
			snprintf(x, sizeof(args) - (size_t)(x - args), "%s%s", path, tail);
		}
		int rc = udpcap(args, err, sizeof(err));
		if (rc != 2 || !strstr(err, bad[i].msg))
			fail_msg("udpcap %s: exit %d, said '%s'; want exit 2 and '%s'", args, rc, err, bad[i].msg);
		assert_int_equal(access(path, F_OK), -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_libpcap_reads_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tshark_interfaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udpcap_bad_input, setup, teardown),
	};
	return cmocka_run_group_tests_name("pcapng", tests, NULL, NULL);
}
