/*
 * fuzz_group.c — libFuzzer target: libinccl's bootstrap (hostlib/group.c)
 * reading what rank 0, the other ranks and the controller send, through its
 * public inccl_comm_init() and the fault watch its collectives call.
 *
 * group.c is compiled into this file so the group can be made without
 * inccl_group_create()'s TCP meeting: its connections are socketpairs whose
 * other ends carry the fuzzer's bytes, then end (so every wait ends at
 * once). The RDMA side (comm.c: a queue pair) is faked: a unit test may
 * fake an edge, and this machine has no RDMA device; the fake checks what
 * group.c hands it as comm.c would (a dotted-quad switch address, a QPN).
 *
 * Input: byte 0: bit 0 rank 0 (else rank 1), bit 1 the ring algorithm,
 * bit 2 rank 0 taking join messages instead; byte 1: nranks = 2 + byte % 3;
 * then one stream per connection the rank reads (rank 0: the controller
 * and ranks 1..nranks-1; a member: rank 0), each a length (2 bytes) and
 * bytes, the last one the rest of the input.
 * Properties: no crash or hang; inccl_comm_init() returns INCCL_OK only
 * with a communicator, and an error with a reason (inccl_last_error()).
 */
#define INCCL_BUILD
#include <fcntl.h>
#include <signal.h>

#include "../hostlib/group.c"
#include "fuzz.h"

/* ---- the fake edge: comm.c's part of inccl_comm_init() ------------------- */

struct inccl_comm {
	int algo;
	void (*release)(void *ctx, unsigned comm_id);
	int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len);
	void *ctx;
	unsigned comm_id;
};

static int next_algo;

int inccl_comm_create(const struct inccl_comm_opts *o, int rank, int nranks, inccl_comm_t **out, uint32_t *qpn)
{
	if (!(*out = calloc(1, sizeof(**out))))
		return INCCL_ENOMEM;
	(*out)->algo = next_algo;
	*qpn = 0x11 + (uint32_t)rank;
	return INCCL_OK;
}

int inccl__comm_local_ipv4(inccl_comm_t *c, uint32_t *ip_be)
{
	*ip_be = htonl(0x0a010115); /* 10.1.1.21 */
	return 0;
}

int inccl__comm_algorithm(const inccl_comm_t *c)
{
	return c->algo;
}

int inccl_comm_connect(inccl_comm_t *c, const char *switch_ip, uint32_t switch_qpn, uint32_t psn)
{
	struct in_addr ip;

	return inet_pton(AF_INET, switch_ip, &ip) != 1 || !switch_qpn ? INCCL_EINVAL : INCCL_OK;
}

int inccl__comm_ring_create(inccl_comm_t *c, uint32_t qpn[2])
{
	qpn[0] = 0x21, qpn[1] = 0x22;
	return INCCL_OK;
}

int inccl__comm_ring_connect(inccl_comm_t *c, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip, uint32_t right_qpn,
			     uint32_t psn)
{
	return INCCL_OK;
}

void inccl__comm_attach(inccl_comm_t *c, void (*release)(void *ctx, unsigned comm_id),
			int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len), void *ctx, unsigned comm_id)
{
	c->release = release, c->watch = watch, c->ctx = ctx, c->comm_id = comm_id;
}

const char *inccl_errmsg(const inccl_comm_t *c)
{
	return "fake queue pair";
}

void inccl_comm_destroy(inccl_comm_t *c)
{
	if (c && c->release)
		c->release(c->ctx, c->comm_id);
	free(c);
}

/* ---- the harness ------------------------------------------------------------ */

/* A connection of the group whose peer sends @n bytes of @d, then ends its sending. */
static int stream(const uint8_t *d, size_t n, int *far)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int big = 1 << 20;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (n && write(sv[1], d, n) != (ssize_t)n)
		abort();
	shutdown(sv[1], SHUT_WR);
	*far = sv[1];
	return sv[0];
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	unsigned mode = fz_u8(&f);
	int nranks = 2 + (int)(fz_u8(&f) % 3), far[8], nfar = 0;
	inccl_group_t *g = calloc(1, sizeof(*g));
	size_t len, got;
	const uint8_t *d;

	if (!g || !(g->peer = calloc((size_t)nranks, sizeof(*g->peer))))
		abort();
	g->rank = mode & 1 ? 0 : 1;
	g->nranks = nranks;
	g->id = 1;
	g->timeout_ms = 2000;
	g->ctl.fd = -1;
	for (int r = 0; r < nranks; r++)
		g->peer[r].fd = -1;
	next_algo = mode & 2 ? INCCL_ALGO_RING : INCCL_ALGO_INC;
	if (g->rank == 0 && (mode & 4)) { /* joins arriving on new connections, one message each */
		struct ctl_buf b = { 0 };
		int rc, fd = stream(f.p, f.n, &far[nfar++]);
		while (ctl_feed(&b, fd) > 0)
			;
		for (char *text; (text = ctl_next(&b, &rc));) {
			int pf;
			struct peer np = { .fd = stream(NULL, 0, &pf) };
			if (!take_join(g, &np, text))
				peer_close(&np);
			close(pf);
			free(text);
		}
		ctl_buf_free(&b);
		close(fd);
	} else if (g->rank == 0) {
		for (int r = 0; r < nranks; r++) { /* r 0: the controller */
			len = r < nranks - 1 ? fz_u16(&f) : fz_left(&f);
			d = fz_take(&f, len, &got);
			int fd = stream(d, got, &far[nfar++]);
			if (r == 0)
				g->ctl.fd = fd;
			else
				g->peer[r].fd = fd;
		}
	} else {
		d = fz_take(&f, fz_left(&f), &got);
		g->peer[0].fd = stream(d, got, &far[nfar++]);
	}
	if (!(g->rank == 0 && (mode & 4))) {
		inccl_comm_t *c = NULL;
		int rc = inccl_comm_init(g, NULL, &c);
		FZ_CHECK((rc == INCCL_OK) == (c != NULL));
		FZ_CHECK(rc == INCCL_OK || inccl_last_error()[0]);
		if (c) {
			char why[300];
			if (c->watch)
				(void)c->watch(c->ctx, c->comm_id, why, sizeof(why));
			inccl_comm_destroy(c);
		}
	}
	inccl_group_destroy(g);
	for (int i = 0; i < nfar; i++)
		close(far[i]);
	return 0;
}
