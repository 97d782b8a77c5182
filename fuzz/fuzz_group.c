/*
 * fuzz_group.c — libFuzzer target: libinccl's bootstrap (hostlib/group.c)
 * reading what rank 0, the other ranks and the controller send, through its
 * public inccl_comm_init() and the fault watch its collectives call.
 *
 * group.c is compiled into this file so the group can be made without
 * inccl_group_create()'s TCP meeting: its connections are socketpairs whose
 * other ends carry the fuzzer's bytes, then end (so every wait ends at
 * once). The RDMA side (comm.c: a queue pair) is faked
 * (tests/unit/fake_comm.c, shared with tests/unit/test_group.c): this
 * machine has no RDMA device; the fake checks what group.c hands it as
 * comm.c would (a dotted-quad switch address, a QPN).
 *
 * Input: byte 0: bit 0 rank 0 (else rank 1), bit 1 the ring algorithm,
 * bit 2 rank 0 taking join messages instead; byte 1: nranks = 2 + byte % 3;
 * then one stream per connection the rank reads (rank 0: the controller
 * and ranks 1..nranks-1; a member: rank 0), each a length (2 bytes) and
 * bytes, the last one the rest of the input.
 * Properties: no crash or hang; inccl_comm_init() returns INCCL_OK only
 * with a communicator, and an error with a reason (inccl_last_error());
 * what rank 0 sends on parses, its request lists each rank once with a
 * dotted-quad ip, and each config has one dotted-quad switch_ip.
 */
#define INCCL_BUILD
#include <fcntl.h>
#include <signal.h>

#include "../hostlib/group.c"
#include "../tests/unit/fake_comm.h"
#include "fuzz.h"

/* ---- the harness ------------------------------------------------------------ */

/* The messages group.c sent on a connection whose peer's end is @fd (all of them: it has finished). */
static int sent(int fd, char **msg, int max)
{
	struct ctl_buf b = { 0 };
	int n = 0, rc;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (ctl_feed(&b, fd) > 0)
		;
	for (char *m; n < max && (m = ctl_next(&b, &rc));)
		msg[n++] = m;
	ctl_buf_free(&b);
	return n;
}

/* Is @s a dotted quad (what a rank's or a switch's "ip" must be)? */
static int is_ipv4(const char *s)
{
	struct in_addr a;

	return s && inet_pton(AF_INET, s, &a) == 1;
}

/*
 * Rank 0 passed on what others sent it: its request to the controller lists
 * each rank once, {rank, ip, qpn} with a dotted-quad ip, and each "config"
 * it sent a rank parses, with one switch_ip, a dotted quad. A value a peer
 * sent must never turn into more YAML (keys, items, documents).
 */
static void check_rank0_output(int nranks, const int *far)
{
	char *msg[16], err[256];
	int n = sent(far[0], msg, 16);

	for (int i = 0; i < n; i++) {
		struct ctl_doc m;
		FZ_CHECK(ctl_parse(msg[i], &m, err, sizeof(err)) == 0);
		if (!strcmp(m.kind, "communicator")) {
			yaml_node_t *ranks = ctl_get(&m, NULL, "ranks");
			int seen[8] = { 0 };
			FZ_CHECK(ranks && ranks->type == YAML_SEQUENCE_NODE && !ctl_item(&m, ranks, nranks));
			for (int r = 0; r < nranks; r++) {
				yaml_node_t *it = ctl_item(&m, ranks, r);
				unsigned long rr, qpn;
				FZ_CHECK(it && ctl_uint(&m, it, "rank", (unsigned long)nranks - 1, &rr, err, sizeof(err)) == 0 &&
					 !seen[rr]++);
				FZ_CHECK(ctl_uint(&m, it, "qpn", 0xffffff, &qpn, err, sizeof(err)) == 0);
				FZ_CHECK(is_ipv4(ctl_str(&m, it, "ip")));
				FZ_CHECK(it->data.mapping.pairs.top - it->data.mapping.pairs.start == 3);
			}
		}
		ctl_doc_free(&m);
		free(msg[i]);
	}
	for (int r = 1; r < nranks; r++) {
		n = sent(far[r], msg, 16);
		for (int i = 0; i < n; i++) {
			struct ctl_doc m;
			FZ_CHECK(ctl_parse(msg[i], &m, err, sizeof(err)) == 0);
			if (!strcmp(m.kind, "config"))
				FZ_CHECK(is_ipv4(ctl_str(&m, NULL, "switch_ip")) &&
					 m.root->data.mapping.pairs.top - m.root->data.mapping.pairs.start == 5);
			ctl_doc_free(&m);
			free(msg[i]);
		}
	}
}

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
	fake_comm_algo = mode & 2 ? INCCL_ALGO_RING : INCCL_ALGO_INC;
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
		if (g->rank == 0)
			check_rank0_output(nranks, far);
	}
	inccl_group_destroy(g);
	for (int i = 0; i < nfar; i++)
		close(far[i]);
	return 0;
}
