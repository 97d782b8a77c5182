/*
 * mkseeds.c — the binary seed corpora of the fuzz targets, made at build
 * time from the project's own fixtures (nothing binary is kept in git).
 *
 *   mkseeds OUT PCAP... -- TOPOLOGY...
 *
 * writes
 *   OUT/roce/      every frame of the pcap files, as captured;
 *   OUT/bundle/    bundles (bundle_build()) of 2..4 consecutive RoCE frames
 *                  of each file, after fuzz_bundle's flags byte (0);
 *   OUT/engine/    fuzz_engine inputs: each pcap of one host pair's data
 *                  frames (tests/fixtures/replay-*.pcap) replayed into the
 *                  two-host root as raw frames with ticks, and the same
 *                  frames rebuilt for the leaf and the mixed root;
 *   OUT/swconfig/  the rules the controller's plan (controller/plan.c)
 *                  gives every switch of each topology, all hosts as ranks.
 * Exits non-zero when a file cannot be read or nothing was written.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../controller/plan.h"
#include "../switch/bundle.h"
#include "../switch/roce.h"
#include "../topology/topo.h"

#define MAX_FRAMES 4096
#define SEED_MAX (1 << 20)

static const char *out;
static int written;

/* Write @n bytes as OUT/@dir/@name. */
static void put(const char *dir, const char *name, const void *d, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out, dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out, dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(d, 1, n, f) != n || fclose(f)) {
		fprintf(stderr, "mkseeds: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	written++;
}

/* A seed being written: bytes appended. */
static uint8_t seed[SEED_MAX];
static size_t seed_len;

static void add(const void *d, size_t n)
{
	if (seed_len + n > sizeof(seed)) {
		fprintf(stderr, "mkseeds: seed larger than %d bytes\n", SEED_MAX);
		exit(1);
	}
	memcpy(seed + seed_len, d, n);
	seed_len += n;
}

static void add8(unsigned v)
{
	uint8_t b = (uint8_t)v;

	add(&b, 1);
}

static void add16(unsigned v)
{
	add8(v >> 8);
	add8(v);
}

static void add32(uint32_t v)
{
	add16(v >> 16);
	add16(v & 0xffff);
}

static uint8_t frame[MAX_FRAMES][2048];
static uint16_t flen[MAX_FRAMES];

/* The frames of pcap @path (at most 2048 bytes each) into frame[]; their number. */
static int load(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	int n = 0;

	if (!p) {
		fprintf(stderr, "mkseeds: %s: %s\n", path, err);
		exit(1);
	}
	while (n < MAX_FRAMES && pcap_next_ex(p, &h, &d) == 1)
		if (h->caplen <= sizeof(frame[0])) {
			memcpy(frame[n], d, h->caplen);
			flen[n++] = (uint16_t)h->caplen;
		}
	pcap_close(p);
	return n;
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* fuzz_engine's seeds of the data frames of one replay fixture (hosts 10.1.1.16 and .17 to 10.1.1.1, QPN 256). */
static void engine_seeds(const char *name, int n)
{
	struct roce_pkt p[MAX_FRAMES];
	uint32_t first[2] = { 0, 0 };
	int have[2] = { 0, 0 }, ok = 0;
	char file[300];

	for (int i = 0; i < n; i++) {
		p[i].frame_len = 0;
		if (roce_parse(frame[i], flen[i], &p[i]) != ROCE_OK || p[i].dst_ip != 0x0a010101u || p[i].dest_qp != 256 ||
		    p[i].src_ip - 0x0a010110u > 1) {
			p[i].frame_len = 0;
			continue;
		}
		int h = (int)(p[i].src_ip - 0x0a010110u);
		if (!have[h]++)
			first[h] = p[i].psn;
		ok++;
	}
	if (!ok)
		return;
	for (int shape = 0; shape < 3; shape++) {
		seed_len = 0;
		add8(shape);
		add8(15); /* 16 slots: fewer than the packets, slots are reused */
		add32(first[0]);
		add32(first[1]);
		add32(first[0]); /* the parent's first PSN */
		add32(0xfffff0); /* ours: wraps during the run */
		for (int i = 0, fed = 0; i < n; i++) {
			if (!p[i].frame_len)
				continue;
			int h = (int)(p[i].src_ip - 0x0a010110u);
			if (shape == 0) { /* as captured */
				add8(0);
				add16(flen[i]);
				add(frame[i], flen[i]);
			} else { /* the same packet from connection h of this shape, rebuilt */
				add8(1);
				add8(h);
				add8(p[i].opcode);
				add32(p[i].psn);
				add32(p[i].imm);
				add16(p[i].payload_len);
				add8(0);
				add32(0);
				add(frame[i] + p[i].payload_off, p[i].payload_len);
			}
			if (++fed % 20 == 0) { /* a tick of 1 ms after each batch */
				add8(2);
				add16(10);
			}
		}
		snprintf(file, sizeof(file), "%s-shape%d", name, shape);
		put("engine", file, seed, seed_len);
	}
}

static void frame_seeds(const char *path)
{
	int n = load(path);
	char file[300];
	const uint8_t *grp[4];
	uint16_t glen[4];
	int g = 0, nb = 0;
	static uint8_t b[BUNDLE_OUTER_LEN + 65536];

	for (int i = 0; i < n; i++) {
		struct roce_pkt p;
		snprintf(file, sizeof(file), "%s-%03d", base(path), i);
		put("roce", file, frame[i], flen[i]);
		if (roce_parse(frame[i], flen[i], &p) != ROCE_OK)
			continue;
		grp[g] = frame[i];
		glen[g++] = flen[i];
		if (g == 2 + nb % 3) { /* bundles of 2, 3, 4 frames */
			size_t len = bundle_build(b + 1, sizeof(b) - 1, grp, glen, g);
			if (len) {
				b[0] = 0; /* fuzz_bundle's flags: captured whole */
				snprintf(file, sizeof(file), "%s-bundle%03d", base(path), nb);
				put("bundle", file, b, len + 1);
			}
			nb++;
			g = 0;
		}
	}
	engine_seeds(base(path), n);
}

/* The rules the controller would push for topology @path, every host a rank in rank order. */
static void rules_seeds(const char *path)
{
	static struct plan_rank_in in[PLAN_MAX_RANKS];
	static struct plan pl;
	struct topology *t = topo_load(path, stderr);
	struct plan_params pp = { .comm = 7, .host_psn = 0x123456, .link_psn = 0xfffff0, .nslots = 64,
				  .retransmit_us = 20000, .rnr_timer = 1 };
	char err[256], file[300];

	if (!t)
		exit(1);
	for (int i = 0; i < t->nnodes; i++) {
		const struct topo_node *nd = &t->nodes[i];
		if (nd->role == TOPO_HOST && nd->rank >= 0 && nd->rank < PLAN_MAX_RANKS && nd->nports)
			in[nd->rank] = (struct plan_rank_in){ nd->ports[0].addr.addr, 0x11 + (uint32_t)nd->rank };
	}
	if (plan_make(t, &pp, in, t->nhosts, &pl, err, sizeof(err)) < 0) {
		fprintf(stderr, "mkseeds: %s: no plan: %s\n", path, err);
		exit(1);
	}
	for (int k = 0; k < pl.nswitches; k++) {
		snprintf(file, sizeof(file), "%s-%s", base(path), t->nodes[pl.sw[k].node].name);
		put("swconfig", file, pl.sw[k].rules, strlen(pl.sw[k].rules));
	}
	plan_free(&pl);
	topo_free(t);
}

int main(int argc, char **argv)
{
	int i = 2, topos = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: mkseeds OUT PCAP... -- TOPOLOGY...\n");
		return 2;
	}
	out = argv[1];
	mkdir(out, 0755);
	for (; i < argc && strcmp(argv[i], "--"); i++)
		frame_seeds(argv[i]);
	for (i++; i < argc; i++, topos++)
		rules_seeds(argv[i]);
	if (!written || !topos) {
		fprintf(stderr, "mkseeds: no seeds written\n");
		return 1;
	}
	printf("mkseeds: %d seed files in %s\n", written, out);
	return 0;
}
