/*
 * bench_engine — the switch engine's packet rate on one core, no capture I/O.
 *
 *   bench_engine [-k auto|simd|scalar] [-p PACKETS_PER_CHILD] [-c CHILDREN] [-d DTYPE] [-o in|reverse]
 *                [-w FILE.pcap]
 *   bench_engine [-k auto|simd|scalar] -r FILE.pcap [-n PASSES]
 *
 * CHILDREN hosts do an AllReduce SUM of PACKETS_PER_CHILD 1 KiB packets
 * each; their data frames are replayed through the engine: parse, ICRC
 * check, connection state, aggregation, and for every completed slot result
 * frames built with a fresh ICRC. The hosts acknowledge every result they
 * get (ACKs prebuilt, fed back right after the frame that produced it).
 * -o: the order each packet's frames arrive in, by child: in (0, 1, 2, ...,
 * the order a float SUM is folded in: nothing waits for its turn) or
 * reverse (..., 2, 1, 0: every child but child 0 waits in a hold buffer
 * until child 0 came, the worst case of the fixed order; switch/README.md).
 *
 * Where the data frames come from:
 *   default  prebuilt in memory, 4096 packets per child at a time;
 *   -w FILE  the same frames, in the order they would be fed, written to a
 *            pcap file (DLT_EN10MB) instead; nothing is replayed;
 *   -r FILE  every frame of a pcap file that -w wrote, loaded into memory
 *            before the clock starts (children, packets, dtype come from the
 *            file), replayed PASSES times, each time through a fresh engine.
 *
 * Prints frames per second (data frames and all frames) and ns per data
 * frame, of the thread's CPU time (a busy machine does not slow the figures
 * down as much as wall time would); only the replay is timed. Under `valgrind --tool=callgrind
 * --toggle-collect=bench_replay` only the replay is counted: a repeatable
 * instruction count per frame, the file's loading left out.
 *
 * -k: the combine/byte-swap kernels and the CRC, as incswitch -k (default:
 * the environment's INCSWITCH_KERNEL, else auto); the report names those used.
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../proto/inc_elem.h"
#include "crc32.h"
#include "engine.h"
#include "roce.h"

#define FRAME 1100       /* stride of a stored data frame: headers and 1 KiB */
#define ACK_LEN 64       /* stride of a stored host ACK */
#define WINDOW 4096      /* packets per child prebuilt at a time; also the slots */
#define SW_IP 0x0a010101u     /* 10.1.1.1 */
#define HOST_IP0 0x0a010110u  /* 10.1.1.16: child i is HOST_IP0 + i */
#define SW_QPN 256
#define HOST_QPN 17
#define OPCODE_OFF ROCE_BTH_OFF /* BTH byte 0 */

static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };

/* Data frames in the order they are fed. */
struct frames {
	uint8_t (*d)[FRAME];
	uint16_t *len;
	long n, cap;
};

/* The hosts' ACKs of results base..base+per-1: child i's ACK of result r at d[i * per + r - base]. */
struct acks {
	uint8_t (*d)[ACK_LEN];
	size_t len;
	long per, base;
	int children;
};

/* What the simulated hosts have seen: the engine's tx callback counts the results. */
static uint64_t tx_frames, acks_fed;
static uint8_t last_tx[FRAME];
static size_t last_len;
static long results[SW_MAX_CHILDREN], acked[SW_MAX_CHILDREN];
static int results_new, acks_short;

/** tx() - the engine's output: copied like a NIC would, results counted per child. */
static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	(void)ctx;
	tx_frames++;
	if (len <= sizeof(last_tx)) { /* touch the output like a NIC would */
		memcpy(last_tx, f, len);
		last_len = len;
	}
	if (len > OPCODE_OFF && f[OPCODE_OFF] != RC_ACK && port >= 0 && port < SW_MAX_CHILDREN) {
		results[port]++;
		results_new = 1;
	}
}

/** now_s() - this thread's CPU time in seconds: other load on the machine does not count. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * payload_fill() - child @i's packet @k: 1024 bytes of elements of @t in
 * wire order, distinct per child and packet, so a wrong pairing shows in the
 * sums; float values are ordinary numbers (no NaN, no denormal) whose sums
 * round, within float16's range.
 */
static void payload_fill(uint8_t *p, enum inc_dtype t, int i, long k)
{
	size_t w = inc_dtype_size(t);

	for (int j = 0; j < (int)(1024 / w); j++) {
		uint64_t v = (uint64_t)(i + 1) * 0x0100000001b3ull * (uint64_t)(j + 1) + (uint64_t)k * 7919u;
		float f = (float)(i + 1) * 0.1f * (float)(j + 1) - (float)(k % 4096) * 0.03f;

		if (t == INC_FLOAT32)
			v = inc_f32_bits(f);
		else if (t == INC_FLOAT64)
			v = inc_f64_bits((double)f * 1.000001);
		else if (t == INC_FLOAT16)
			v = inc_f32_to_f16(f);
		else if (t == INC_BFLOAT16)
			v = inc_f32_to_bf16(f);
		for (size_t b = 0; b < w; b++) /* big-endian */
			p[(size_t)j * w + b] = (uint8_t)(v >> (8 * (w - 1 - b)));
	}
}

/** bench_cfg() - the switch of @children hosts, expecting child i's first PSN @rq_psn[i] (NULL: 0). */
static struct sw_cfg bench_cfg(int children, const uint32_t *rq_psn)
{
	struct sw_cfg cfg = { .nchildren = children, .nslots = WINDOW, .retransmit_ns = 1000000000, .rnr_timer = 1 };

	for (int i = 0; i < children; i++)
		cfg.child[i] = (struct sw_conn_cfg){ .port = i, .local_ip = SW_IP, .peer_ip = HOST_IP0 + (uint32_t)i,
						     .local_qpn = SW_QPN, .peer_qpn = HOST_QPN,
						     .rq_psn = rq_psn ? rq_psn[i] : 0, .udp_dst = ROCE_PORT_HOST,
						     .first_rank = (uint16_t)i, .nranks = 1 };
	return cfg;
}

/** frames_reserve() - room for @n frames in @fs. Return: 0, or -1 out of memory. */
static int frames_reserve(struct frames *fs, long n)
{
	if (n <= fs->cap)
		return 0;
	void *d = realloc(fs->d, (size_t)n * FRAME), *l;
	if (!d)
		return -1;
	fs->d = d;
	if (!(l = realloc(fs->len, (size_t)n * sizeof(*fs->len))))
		return -1;
	fs->len = l;
	fs->cap = n;
	return 0;
}

/** acks_alloc() - room for @per ACKs of each of @children hosts. Return: 0, or -1. */
static int acks_alloc(struct acks *ak, int children, long per)
{
	ak->d = malloc((size_t)children * (size_t)per * ACK_LEN);
	ak->children = children;
	ak->per = per;
	return ak->d ? 0 : -1;
}

/**
 * acks_build() - the hosts' ACKs of results @base..@base+per-1 (the switch
 * sends from PSN 0: result r has PSN r, and its ACK carries MSN r + 1).
 */
static void acks_build(struct acks *ak, long base)
{
	ak->base = base;
	for (int i = 0; i < ak->children; i++)
		for (long r = 0; r < ak->per; r++) {
			struct roce_build a = { .src_mac = mac, .dst_mac = mac, .src_ip = HOST_IP0 + (uint32_t)i,
						.dst_ip = SW_IP, .src_port = 50000, .dst_port = ROCE_PORT_HOST,
						.opcode = RC_ACK, .dest_qp = SW_QPN,
						.psn = (uint32_t)(base + r) & ROCE_PSN_MASK, .has_aeth = 1,
						.syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED,
						.msn = (uint32_t)(base + r + 1) & AETH_MSN_MASK };
			ak->len = roce_build_frame(ak->d[i * ak->per + r], ACK_LEN, &a);
		}
}

/**
 * frames_build() - the data frames of PSNs @base..@base+n-1 of @children
 * hosts into @fs (which has room), in the order they are fed: packet by
 * packet, child by child (from the last child down if @reverse).
 */
static void frames_build(struct frames *fs, int children, enum inc_dtype dtype, int reverse, long base, long n)
{
	struct inc_imm m = { INC_RANK_ALL, INC_ALLREDUCE, INC_OP_SUM, dtype };
	uint8_t payload[1024];

	fs->n = 0;
	for (long k = base; k < base + n; k++)
		for (int o = 0; o < children; o++) {
			int i = reverse ? children - 1 - o : o;
			payload_fill(payload, dtype, i, k);
			struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = HOST_IP0 + (uint32_t)i,
						.dst_ip = SW_IP, .src_port = 50000, .dst_port = ROCE_PORT_HOST,
						.opcode = RC_SEND_ONLY_WITH_IMM, .ack_req = 1, .dest_qp = SW_QPN,
						.psn = (uint32_t)k & ROCE_PSN_MASK, .has_imm = 1,
						.imm = inc_imm_encode(&m), .payload = payload, .payload_len = 1024 };
			fs->len[fs->n] = (uint16_t)roce_build_frame(fs->d[fs->n], FRAME, &b);
			fs->n++;
		}
}

/** replay_reset() - the hosts have seen nothing yet (a fresh engine). */
static void replay_reset(void)
{
	memset(results, 0, sizeof(results));
	memset(acked, 0, sizeof(acked));
	results_new = 0;
}

/**
 * bench_replay() - feed @fs to @e; after each frame, the hosts' ACKs of the
 * results it produced (in child order). The function callgrind counts:
 * never inlined or cloned, so its name stays.
 */
__attribute__((noinline, noclone)) void bench_replay(struct sw_engine *e, const struct frames *fs,
						    const struct acks *ak)
{
	for (long f = 0; f < fs->n; f++) {
		sw_engine_rx(e, fs->d[f], fs->len[f], 0);
		while (results_new) {
			results_new = 0;
			for (int i = 0; i < ak->children; i++)
				for (; acked[i] < results[i]; acked[i]++) {
					long r = acked[i] - ak->base;
					if (r >= ak->per) { /* more results than packets: reported by the caller */
						acks_short = 1;
						return;
					}
					sw_engine_rx(e, ak->d[i * ak->per + r], ak->len, 0);
					acks_fed++;
				}
		}
	}
}

/**
 * engine_done() - did @e complete @packets slots, all acknowledged, with no
 * frame dropped? Prints why not.
 */
static int engine_done(const struct sw_engine *e, long packets)
{
	const struct sw_counters *c = sw_engine_counters(e);

	if (c->slots_completed == (uint64_t)packets && sw_engine_busy_slots(e) == 0 && !c->drop_icrc &&
	    !c->drop_parse && !acks_short)
		return 1;
	fprintf(stderr, "bench_engine: engine did not complete every slot (%llu of %ld, busy %u, drops %llu%s)\n",
		(unsigned long long)c->slots_completed, packets, sw_engine_busy_slots(e),
		(unsigned long long)(c->drop_icrc + c->drop_parse), acks_short ? ", more results than packets" : "");
	return 0;
}

/** report() - the figures of a run of @data_frames (and @all_frames in) in @t seconds. */
static void report(const char *src, int children, long packets, size_t bytes, uint32_t imm, double t,
		   uint64_t data_frames, uint64_t all_frames)
{
	struct inc_imm m;
	const char *why, *kname = inc_kernel_name(&why), *cwhy, *cname = crc32_name(&cwhy);

	inc_imm_decode(imm, &m);
	printf("bench_engine: %s%d children x %ld packets of %zu B %s %s: %.3f s, %.0f data frames/s "
	       "(%.0f ns each), %.0f frames/s in, %llu frames out; kernel %s (%s), crc %s (%s)\n",
	       src, children, packets, bytes, inc_dtype_name(m.dtype), inc_op_name(m.op), t,
	       (double)data_frames / t, t / (double)data_frames * 1e9, (double)all_frames / t,
	       (unsigned long long)tx_frames, kname, why, cname, cwhy);
}

/** dump_frames() - append @fs to @d, timestamps 1 us apart from @*ts_us. Return: 0 or -1. */
static int dump_frames(pcap_dumper_t *d, const struct frames *fs, uint64_t *ts_us)
{
	for (long f = 0; f < fs->n; f++) {
		struct pcap_pkthdr h = { .caplen = fs->len[f], .len = fs->len[f] };
		h.ts.tv_sec = (time_t)(*ts_us / 1000000);
		h.ts.tv_usec = (suseconds_t)(*ts_us % 1000000);
		(*ts_us)++;
		pcap_dump((u_char *)d, &h, fs->d[f]);
	}
	return pcap_dump_flush(d);
}

/**
 * run_prebuilt() - the default run (or -w @wfile): frames built in memory a
 * window at a time, outside the timed replay.
 */
static int run_prebuilt(int children, long packets, enum inc_dtype dtype, int reverse, const char *wfile)
{
	long window = packets < WINDOW ? packets : WINDOW;
	struct frames fs = { 0 };
	struct acks ak = { 0 };
	struct sw_engine *e = NULL;
	pcap_t *dead = NULL;
	pcap_dumper_t *dump = NULL;
	uint64_t data_frames = 0, ts_us = 0;
	double t = 0;

	if (frames_reserve(&fs, children * window) || acks_alloc(&ak, children, window)) {
		fprintf(stderr, "bench_engine: out of memory\n");
		return 1;
	}
	if (wfile) {
		if (!(dead = pcap_open_dead(DLT_EN10MB, 65535)) || !(dump = pcap_dump_open(dead, wfile))) {
			fprintf(stderr, "bench_engine: %s: %s\n", wfile, dead ? pcap_geterr(dead) : "pcap_open_dead");
			return 1;
		}
	} else {
		struct sw_cfg cfg = bench_cfg(children, NULL);
		if (!(e = sw_engine_new(&cfg, tx, NULL)))
			return 1;
	}
	for (long base = 0; base < packets; base += window) {
		long n = packets - base < window ? packets - base : window;

		frames_build(&fs, children, dtype, reverse, base, n);
		if (dump) {
			if (dump_frames(dump, &fs, &ts_us)) {
				fprintf(stderr, "bench_engine: %s: write failed\n", wfile);
				return 1;
			}
			continue;
		}
		acks_build(&ak, base);
		double t0 = now_s();
		bench_replay(e, &fs, &ak);
		t += now_s() - t0;
		data_frames += (uint64_t)fs.n;
	}
	if (dump) {
		pcap_dump_close(dump);
		pcap_close(dead);
		printf("bench_engine: wrote %llu data frames (%d children x %ld packets of 1024 B %s sum) to %s\n",
		       (unsigned long long)ts_us, children, packets, inc_dtype_name(dtype), wfile);
	} else {
		struct inc_imm m = { INC_RANK_ALL, INC_ALLREDUCE, INC_OP_SUM, dtype };
		if (!engine_done(e, packets))
			return 1;
		report("", children, packets, 1024, inc_imm_encode(&m), t, data_frames, data_frames + acks_fed);
		sw_engine_free(e);
	}
	free(fs.d);
	free(fs.len);
	free(ak.d);
	return 0;
}

/** load_pcap() - every frame of @path into @fs. Return: 0, or -1 with a message. */
static int load_pcap(const char *path, struct frames *fs)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	int rc;

	if (!p) {
		fprintf(stderr, "bench_engine: %s\n", err);
		return -1;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		fprintf(stderr, "bench_engine: %s: not an Ethernet capture\n", path);
		pcap_close(p);
		return -1;
	}
	while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
		if (h->caplen != h->len || h->caplen > FRAME) {
			fprintf(stderr, "bench_engine: %s: frame %ld truncated or longer than %d bytes\n", path,
				fs->n + 1, FRAME);
			pcap_close(p);
			return -1;
		}
		if (fs->n == fs->cap && frames_reserve(fs, fs->cap ? 2 * fs->cap : 4096)) {
			fprintf(stderr, "bench_engine: out of memory\n");
			pcap_close(p);
			return -1;
		}
		memcpy(fs->d[fs->n], d, h->caplen);
		fs->len[fs->n++] = (uint16_t)h->caplen;
	}
	if (rc != PCAP_ERROR_BREAK)
		fprintf(stderr, "bench_engine: %s: %s\n", path, pcap_geterr(p));
	pcap_close(p);
	return rc == PCAP_ERROR_BREAK ? 0 : -1;
}

/**
 * run_file() - load @path (frames of -w), then replay it @passes times
 * through a fresh engine each; only the replays are timed.
 */
static int run_file(const char *path, int passes)
{
	struct frames fs = { 0 };
	struct acks ak = { 0 };
	long count[SW_MAX_CHILDREN] = { 0 };
	uint32_t rq_psn[SW_MAX_CHILDREN] = { 0 }, imm = 0;
	size_t bytes = 0;
	int children = 0;
	double t = 0;

	if (load_pcap(path, &fs))
		return 1;
	/* the hosts and their first PSNs, from the frames (outside the timed part) */
	for (long f = 0; f < fs.n; f++) {
		struct roce_pkt p;
		uint32_t i = 0;

		if (roce_parse(fs.d[f], fs.len[f], &p) != ROCE_OK || p.opcode != RC_SEND_ONLY_WITH_IMM ||
		    p.dst_ip != SW_IP || p.dest_qp != SW_QPN || (i = p.src_ip - HOST_IP0) >= SW_MAX_CHILDREN) {
			fprintf(stderr, "bench_engine: %s: frame %ld is not a host's data frame of bench_engine -w\n",
				path, f + 1);
			return 1;
		}
		if (!count[i]++)
			rq_psn[i] = p.psn;
		children = (int)i + 1 > children ? (int)i + 1 : children;
		if (!f) {
			imm = p.imm;
			bytes = p.payload_len;
		}
	}
	long packets = fs.n / (children ? children : 1);
	for (int i = 0; i < children; i++)
		if (count[i] != packets) {
			fprintf(stderr, "bench_engine: %s: child %d sends %ld packets, not %ld\n", path, i, count[i],
				packets);
			return 1;
		}
	if (!packets || acks_alloc(&ak, children, packets)) {
		fprintf(stderr, "bench_engine: %s: no frames, or out of memory\n", path);
		return 1;
	}
	acks_build(&ak, 0);
	/* keep a freed engine's memory in the heap: the next one's calloc then
	 * clears it outside the timed part instead of the replay faulting it in */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	for (int pass = 0; pass < passes; pass++) {
		struct sw_cfg cfg = bench_cfg(children, rq_psn);
		struct sw_engine *e = sw_engine_new(&cfg, tx, NULL);

		if (!e)
			return 1;
		replay_reset();
		double t0 = now_s();
		bench_replay(e, &fs, &ak);
		t += now_s() - t0;
		if (!engine_done(e, packets))
			return 1;
		sw_engine_free(e);
	}
	char src[512];
	snprintf(src, sizeof(src), "%s, %d pass%s: ", path, passes, passes == 1 ? "" : "es");
	report(src, children, packets, bytes, imm, t, (uint64_t)fs.n * (uint64_t)passes,
	       (uint64_t)fs.n * (uint64_t)passes + acks_fed);
	free(fs.d);
	free(fs.len);
	free(ak.d);
	return 0;
}

int main(int argc, char **argv)
{
	int children = 4, passes = 1, reverse = 0, opt;
	long packets = 20000;
	enum inc_dtype dtype = INC_INT32;
	const char *wfile = NULL, *rfile = NULL, *kopt = getenv("INCSWITCH_KERNEL"), *kwhy = "INCSWITCH_KERNEL";
	enum inc_kernel kernel = INC_KERNEL_AUTO;

	while ((opt = getopt(argc, argv, "k:p:c:d:o:w:r:n:")) != -1) {
		switch (opt) {
		case 'p': packets = atol(optarg); break;
		case 'c': children = atoi(optarg); break;
		case 'd':
			if (inc_dtype_parse(optarg, &dtype)) {
				fprintf(stderr, "bench_engine: -d %s: not a dtype (int32, uint32, int64, uint64, "
						"float16, bfloat16, float32, float64)\n", optarg);
				return 2;
			}
			break;
		case 'o':
			if (strcmp(optarg, "in") && strcmp(optarg, "reverse")) {
				fprintf(stderr, "bench_engine: -o %s: the order is 'in' or 'reverse'\n", optarg);
				return 2;
			}
			reverse = !strcmp(optarg, "reverse");
			break;
		case 'w': wfile = optarg; break;
		case 'r': rfile = optarg; break;
		case 'n': passes = atoi(optarg); break;
		case 'k': kopt = optarg; kwhy = "-k"; break;
		default:
			fprintf(stderr, "usage: bench_engine [-k auto|simd|scalar] [-p PACKETS_PER_CHILD] [-c CHILDREN] "
					"[-d DTYPE] [-o in|reverse] [-w FILE.pcap]\n"
					"       bench_engine [-k auto|simd|scalar] -r FILE.pcap [-n PASSES]\n"
					"  -k (or INCSWITCH_KERNEL): combine kernels; auto = scalar under QEMU TCG, else simd\n");
			return 2;
		}
	}
	if (children < 1 || children > SW_MAX_CHILDREN || packets < 1 || passes < 1 || (wfile && rfile)) {
		fprintf(stderr, "bench_engine: bad arguments\n");
		return 2;
	}
	if (kopt && *kopt && inc_kernel_parse(kopt, &kernel)) {
		fprintf(stderr, "bench_engine: %s: %s is not auto, simd or scalar\n", kwhy, kopt);
		return 2;
	}
	inc_kernel_use(kernel, kwhy);
	crc32_use(kernel == INC_KERNEL_SCALAR ? CRC32_LIBDEFLATE : kernel == INC_KERNEL_SIMD ? CRC32_ISAL : CRC32_AUTO,
		  kwhy);
	return rfile ? run_file(rfile, passes) : run_prebuilt(children, packets, dtype, reverse, wfile);
}
