/*
 * inccl_check — run every collective of libinccl on one rank and verify it.
 *
 *   inccl_check -r RANK -n NRANKS [-m MASTER] [-C CONTROLLER] [-T TIMEOUT_MS]
 *               [-c COUNT,COUNT,...]
 *
 * All ranks run the same sequence: AllReduce and Reduce for int32/float32 ×
 * SUM/MAX/MIN, Broadcast for both dtypes, Barrier; for each COUNT, with user
 * buffers at odd offsets. Rank r's input element i is a fixed function of
 * (r, i), so every rank computes the expected result of all ranks itself,
 * independently of the switch. Float inputs are multiples of 1/8 so every
 * sum is exact in any order. Ranks not due a result must find their buffer
 * untouched. Prints one line per collective and "N passed, M failed".
 *
 * Bootstrap: inccl_group_create() + inccl_comm_init() (rank 0 at MASTER,
 * the controller at CONTROLLER; default: the lab node's /etc/inclab/node.conf).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inccl.h"

static int32_t vi(int r, size_t i) { return (int32_t)(((uint32_t)i * 2654435761u + (uint32_t)r * 97u) % 200001u) - 100000; }
static float vf(int r, size_t i) { return (float)((int)(((uint32_t)i * 2246822519u + (uint32_t)r * 31u) % 4097u) - 2048) / 8.0f; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *opn(int op) { return op == INCCL_SUM ? "sum" : op == INCCL_MAX ? "max" : "min"; }

/* Expected element i of op over all ranks, as 4 bytes. */
static void expect(int dtype, int op, int nranks, size_t i, void *out)
{
	if (dtype == INCCL_INT32) {
		int64_t a = vi(0, i);
		for (int r = 1; r < nranks; r++)
			a = op == INCCL_SUM ? a + vi(r, i) : op == INCCL_MAX ? (vi(r, i) > a ? vi(r, i) : a) : (vi(r, i) < a ? vi(r, i) : a);
		int32_t v = (int32_t)a;
		memcpy(out, &v, 4);
	} else {
		double a = vf(0, i);
		for (int r = 1; r < nranks; r++)
			a = op == INCCL_SUM ? a + vf(r, i) : op == INCCL_MAX ? fmax(a, vf(r, i)) : fmin(a, vf(r, i));
		float v = (float)a;
		memcpy(out, &v, 4);
	}
}

static void fill(int dtype, int rank, uint8_t *buf, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (dtype == INCCL_INT32) {
			int32_t v = vi(rank, i);
			memcpy(buf + 4 * i, &v, 4);
		} else {
			float v = vf(rank, i);
			memcpy(buf + 4 * i, &v, 4);
		}
	}
}

static int pass, failed;

static void report(const char *what, size_t count, int rc, inccl_comm_t *c, size_t wrong, size_t first, double secs)
{
	if (rc == INCCL_OK && wrong == 0) {
		pass++;
		printf("ok   %-28s count=%-8zu %8.1f ms %7.2f MB/s\n", what, count, secs * 1e3, count * 4 / secs / 1e6);
	} else if (rc != INCCL_OK) {
		failed++;
		printf("FAIL %-28s count=%-8zu error %d: %s\n", what, count, rc, inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL %-28s count=%-8zu %zu wrong elements, first at %zu\n", what, count, wrong, first);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rank = -1, nranks = 0, opt;
	const char *counts = "1,255,256,257,1031,65539";
	struct inccl_group_opts go = { 0 };
	inccl_group_t *g;
	inccl_comm_t *c;

	while ((opt = getopt(argc, argv, "r:n:m:C:T:c:")) != -1) {
		switch (opt) {
		case 'r': rank = atoi(optarg); break;
		case 'n': nranks = atoi(optarg); break;
		case 'm': go.master = optarg; break;
		case 'C': go.controller = optarg; break;
		case 'T': go.timeout_ms = atoi(optarg); break;
		case 'c': counts = optarg; break;
		default: goto usage;
		}
	}
	if (rank < 0 || nranks < 1 || rank >= nranks)
		goto usage;
	double tb = now_s();
	int rc = inccl_group_create(&go, rank, nranks, &g);
	if (rc == INCCL_OK && (rc = inccl_comm_init(g, NULL, &c)) != INCCL_OK)
		inccl_group_destroy(g);
	if (rc) {
		fprintf(stderr, "inccl_check: rank %d: bootstrap failed (error %d): %s\n", rank, rc, inccl_last_error());
		printf("rank %d: bootstrap failed: %s\n", rank, inccl_last_error());
		return 1;
	}
	printf("rank %d of %d: group %d, communicator ready in %.1f s\n", rank, nranks, inccl_group_id(g), now_s() - tb);
	char list[256];
	snprintf(list, sizeof(list), "%s", counts);
	int k = 0;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), k++) {
		size_t count = strtoul(tok, NULL, 10), misalign = (size_t)(k % 4); /* 0..3 bytes off alignment */
		uint8_t *sraw = malloc(count * 4 + 8), *rraw = malloc(count * 4 + 8), *want = malloc(count * 4);
		uint8_t *send = sraw + misalign, *recv = rraw + (3 - misalign);
		char what[64];
		if (!sraw || !rraw || !want || count == 0) {
			fprintf(stderr, "inccl_check: bad count '%s'\n", tok);
			return 1;
		}
		for (int dtype = INCCL_INT32; dtype <= INCCL_FLOAT32; dtype++) {
			const char *dn = dtype == INCCL_INT32 ? "int32" : "float32";
			for (int op = INCCL_SUM; op <= INCCL_MIN; op++) {
				for (size_t i = 0; i < count; i++)
					expect(dtype, op, nranks, i, want + 4 * i);
				for (int reduce = 0; reduce <= 1; reduce++) {
					int root = reduce ? (k + op) % nranks : 0;
					fill(dtype, rank, send, count);
					memset(recv, 0xa5, count * 4);
					double t0 = now_s();
					rc = reduce ? inccl_reduce(c, send, recv, count, dtype, op, root)
						    : inccl_allreduce(c, send, recv, count, dtype, op);
					double t = now_s() - t0;
					size_t wrong = 0, first = 0;
					int due = !reduce || rank == root;
					for (size_t i = 0; rc == INCCL_OK && i < count; i++) {
						static const uint8_t poison[4] = { 0xa5, 0xa5, 0xa5, 0xa5 };
						if (memcmp(recv + 4 * i, due ? want + 4 * i : poison, 4) && !wrong++)
							first = i;
					}
					snprintf(what, sizeof(what), "%s%s %s %s", reduce ? "reduce" : "allreduce",
						 reduce ? (char[8]){ '@', (char)('0' + root), 0 } : "", dn, opn(op));
					report(what, count, rc, c, wrong, first, t);
				}
			}
			int root = k % nranks;
			fill(dtype, rank == root ? root : nranks + 7, send, count); /* non-roots hold other data */
			double t0 = now_s();
			rc = inccl_broadcast(c, send, count, dtype, root);
			double t = now_s() - t0;
			size_t wrong = 0, first = 0;
			fill(dtype, root, want, count);
			for (size_t i = 0; rc == INCCL_OK && i < count; i++)
				if (memcmp(send + 4 * i, want + 4 * i, 4) && !wrong++)
					first = i;
			snprintf(what, sizeof(what), "broadcast@%d %s", root, dn);
			report(what, count, rc, c, wrong, first, t);
		}
		double t0 = now_s();
		rc = inccl_barrier(c);
		report("barrier", 0, rc, c, 0, 0, now_s() - t0);
		free(sraw);
		free(rraw);
		free(want);
	}
	/* bad arguments are refused with a message, nothing is sent */
	rc = inccl_reduce(c, NULL, NULL, 1, INCCL_INT32, INCCL_SUM, nranks);
	if (rc == INCCL_EINVAL && strstr(inccl_errmsg(c), "root")) {
		pass++;
		printf("ok   reduce to root %d refused: %s\n", nranks, inccl_errmsg(c));
	} else {
		failed++;
		printf("FAIL reduce to root %d: returned %d\n", nranks, rc);
	}
	printf("rank %d: %d passed, %d failed\n", rank, pass, failed);
	inccl_comm_destroy(c);
	inccl_group_destroy(g);
	return failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: inccl_check -r RANK -n NRANKS [-m MASTER[:PORT]] [-C CONTROLLER[:PORT]] [-T TIMEOUT_MS] "
			"[-c COUNT,...]\n");
	return 2;
}
