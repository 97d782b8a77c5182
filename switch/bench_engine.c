/*
 * bench_engine — the switch engine's packet rate on one core, no capture I/O.
 *
 *   bench_engine [-p PACKETS_PER_CHILD] [-c CHILDREN] [-d int32|float32]
 *
 * Prebuilds the frames of CHILDREN hosts doing an AllReduce SUM of
 * PACKETS_PER_CHILD 1 KiB packets each, then replays them through the engine:
 * parse, ICRC check, connection state, aggregation, and for every completed
 * slot result frames built with a fresh ICRC; the hosts' ACKs of those
 * results go back in too. Prints frames per second (data frames and all
 * frames) and ns per data frame. Use it under `valgrind --tool=callgrind`
 * for a repeatable instruction count per frame.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "roce.h"

#define FRAME 1100

static uint64_t tx_frames;
static uint8_t last_tx[FRAME];
static size_t last_len;

static void tx(void *ctx, int port, const uint8_t *f, size_t len)
{
	(void)ctx;
	(void)port;
	tx_frames++;
	if (len <= sizeof(last_tx)) { /* touch the output like a NIC would */
		memcpy(last_tx, f, len);
		last_len = len;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int children = 4, opt;
	long packets = 20000;
	enum inc_dtype dtype = INC_INT32;
	static uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };

	while ((opt = getopt(argc, argv, "p:c:d:")) != -1) {
		switch (opt) {
		case 'p': packets = atol(optarg); break;
		case 'c': children = atoi(optarg); break;
		case 'd': dtype = strcmp(optarg, "float32") == 0 ? INC_FLOAT32 : INC_INT32; break;
		default:
			fprintf(stderr, "usage: bench_engine [-p PACKETS_PER_CHILD] [-c CHILDREN] [-d int32|float32]\n");
			return 2;
		}
	}
	if (children < 1 || children > SW_MAX_CHILDREN || packets < 1) {
		fprintf(stderr, "bench_engine: bad arguments\n");
		return 2;
	}
	struct sw_cfg cfg = { .nchildren = children, .nslots = 4096, .retransmit_ns = 1000000000, .rnr_timer = 1 };
	for (int i = 0; i < children; i++)
		cfg.child[i] = (struct sw_conn_cfg){ .port = i, .local_ip = 0x0a010101, .peer_ip = 0x0a010110u + (uint32_t)i,
						     .local_qpn = 256, .peer_qpn = 17, .udp_dst = ROCE_PORT_HOST,
						     .first_rank = (uint16_t)i, .nranks = 1 };
	struct sw_engine *e = sw_engine_new(&cfg, tx, NULL);
	if (!e)
		return 1;

	/* Frames of every child for one window of 4096 slots; replayed with PSNs patched in place. */
	long window = packets < 4096 ? packets : 4096;
	uint8_t(*data)[FRAME] = malloc((size_t)children * (size_t)window * FRAME);
	uint8_t(*acks)[64] = malloc((size_t)children * (size_t)window * 64);
	size_t dlen = 0, alen = 0;
	uint32_t payload[256];
	struct inc_imm m = { INC_RANK_ALL, INC_ALLREDUCE, INC_OP_SUM, dtype };
	if (!data || !acks)
		return 1;
	for (int j = 0; j < 256; j++)
		payload[j] = (uint32_t)j * 0x01000193u;
	double t0 = now_s();
	uint64_t data_frames = 0, all_frames = 0;
	for (long base = 0; base < packets; base += window) {
		long n = packets - base < window ? packets - base : window;
		/* build this round's frames (outside the timed section below) */
		double b0 = now_s();
		for (int i = 0; i < children; i++)
			for (long k = 0; k < n; k++) {
				struct roce_build b = { .src_mac = mac, .dst_mac = mac, .src_ip = cfg.child[i].peer_ip,
							.dst_ip = 0x0a010101, .src_port = 50000, .dst_port = ROCE_PORT_HOST,
							.opcode = RC_SEND_ONLY_WITH_IMM, .ack_req = 1, .dest_qp = 256,
							.psn = (uint32_t)(base + k), .has_imm = 1, .imm = inc_imm_encode(&m),
							.payload = payload, .payload_len = 1024 };
				dlen = roce_build_frame(data[i * window + k], FRAME, &b);
				struct roce_build a = { .src_mac = mac, .dst_mac = mac, .src_ip = cfg.child[i].peer_ip,
							.dst_ip = 0x0a010101, .src_port = 50000, .dst_port = ROCE_PORT_HOST,
							.opcode = RC_ACK, .dest_qp = 256, .psn = (uint32_t)(base + k),
							.has_aeth = 1, .syndrome = AETH_TYPE_ACK | AETH_ACK_UNLIMITED,
							.msn = (uint32_t)(base + k + 1) };
				alen = roce_build_frame(acks[i * window + k], 64, &a);
			}
		t0 += now_s() - b0;
		for (long k = 0; k < n; k++) {
			for (int i = 0; i < children; i++)
				sw_engine_rx(e, data[i * window + k], dlen, 0);
			for (int i = 0; i < children; i++)
				sw_engine_rx(e, acks[i * window + k], alen, 0);
		}
		data_frames += (uint64_t)(n * children);
		all_frames += (uint64_t)(2 * n * children);
	}
	double t = now_s() - t0;
	const struct sw_counters *c = sw_engine_counters(e);
	if (c->slots_completed != (uint64_t)packets || sw_engine_busy_slots(e) != 0 || c->drop_icrc || c->drop_parse) {
		fprintf(stderr, "bench_engine: engine did not complete every slot (%llu of %ld, busy %u, drops %llu)\n",
			(unsigned long long)c->slots_completed, packets, sw_engine_busy_slots(e),
			(unsigned long long)(c->drop_icrc + c->drop_parse));
		return 1;
	}
	printf("bench_engine: %d children x %ld packets of 1 KiB %s SUM: %.3f s, %.0f data frames/s "
	       "(%.0f ns each), %.0f frames/s in, %llu frames out\n",
	       children, packets, dtype == INC_INT32 ? "int32" : "float32", t, (double)data_frames / t,
	       t / (double)data_frames * 1e9, (double)all_frames / t, (unsigned long long)tx_frames);
	sw_engine_free(e);
	free(data);
	free(acks);
	return 0;
}
