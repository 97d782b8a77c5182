/*
 * test_api.c — what comes from outside is refused or quoted:
 *
 * - libinccl's public API (hostlib/inccl.h) refuses every bad argument with
 *   INCCL_EINVAL and a message naming the argument: NULL pointers, ranks and
 *   sizes out of range, an unknown dtype or op, a root that is not a rank, a
 *   count whose bytes overflow size_t. There is no RDMA device here: the
 *   create calls are refused before they look for one, and the collectives
 *   run on a communicator without a device (inccl__comm_unconnected(), the
 *   one faked edge), whose good arguments end in "not connected" instead.
 * - rank 0 writes what the other ranks send into its request to the
 *   controller only as it parsed it (inccl__qp_entry(): a rank's address
 *   and queue pair number), never their text.
 * - ctl_quote() (proto/ctlmsg.c), through which every free text goes into a
 *   control message: libyaml's emitter quotes it, and libyaml's parser reads
 *   back exactly that text as one scalar, whatever it holds (quotes, line
 *   breaks, a "..." line, YAML syntax, control characters, invalid UTF-8,
 *   more than fits).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hostlib/inccl.h"
#include "../../hostlib/internal.h"
#include "../../proto/ctlmsg.h"

/* @rc is INCCL_EINVAL and @msg holds @words (the argument named). */
#define assert_einval(rc, msg, words)                                                                              \
	do {                                                                                                       \
		int rc_ = (rc);                                                                                    \
		const char *m_ = (msg);                                                                            \
		if (rc_ != INCCL_EINVAL || !strstr(m_, (words)))                                                   \
			fail_msg("%s: returned %d (want %d, INCCL_EINVAL), message '%s' (want it to name '%s')", #rc, \
				 rc_, INCCL_EINVAL, m_, (words));                                                   \
	} while (0)

static void test_group_create(void **state)
{
	inccl_group_t *g = (inccl_group_t *)1;
	struct inccl_group_opts o = { "127.0.0.1", "127.0.0.1", 0 };

	assert_einval(inccl_group_create(&o, 0, 2, NULL), inccl_last_error(), "out is NULL");
	assert_einval(inccl_group_create(&o, 0, 0, &g), inccl_last_error(), "bad nranks");
	assert_null(g);
	assert_einval(inccl_group_create(&o, 0, -3, &g), inccl_last_error(), "bad nranks");
	assert_einval(inccl_group_create(&o, 0, 0xffff, &g), inccl_last_error(), "bad nranks");
	assert_einval(inccl_group_create(&o, 2, 2, &g), inccl_last_error(), "bad rank");
	assert_einval(inccl_group_create(&o, -1, 2, &g), inccl_last_error(), "bad rank");
	o.timeout_ms = -5;
	assert_einval(inccl_group_create(&o, 0, 2, &g), inccl_last_error(), "bad timeout_ms -5");
	o.timeout_ms = 100;
	o.master = "127.0.0.1:99999";
	assert_einval(inccl_group_create(&o, 1, 2, &g), inccl_last_error(), "bad address '127.0.0.1:99999'");
	o.master = "rank0.example\nmsg: x";
	assert_einval(inccl_group_create(&o, 1, 2, &g), inccl_last_error(), "bad address");
	o.master = "127.0.0.1";
	o.controller = "not an address";
	assert_einval(inccl_group_create(&o, 0, 2, &g), inccl_last_error(), "bad address 'not an address'");
	assert_null(g);
}

static void test_comm_create(void **state)
{
	inccl_comm_t *c = (inccl_comm_t *)1;
	uint32_t qpn;
	struct {
		struct inccl_comm_opts o;
		int rank, nranks;
		const char *words;
	} bad[] = {
		{ { 0 }, 0, 0, "bad nranks" },
		{ { 0 }, 0, 0xffff, "bad nranks" }, /* 0xffff: the immediate's "every rank" */
		{ { 0 }, 4, 4, "bad rank" },
		{ { 0 }, -1, 4, "bad rank" },
		{ { .window = -1 }, 0, 4, "bad window" },
		{ { .window = 16385 }, 0, 4, "bad window" },
		{ { .timeout_ms = -1 }, 0, 4, "bad timeout_ms" },
		{ { .algorithm = 2 }, 0, 4, "bad algorithm" },
		{ { .algorithm = -1 }, 0, 4, "bad algorithm" },
		{ { .message = 65 }, 0, 4, "bad message" },
		{ { .message = -2 }, 0, 4, "bad message" },
		{ { .gid_index = 256 }, 0, 4, "bad gid_index" },
		{ { .gid_index = -2 }, 0, 4, "bad gid_index" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = (inccl_comm_t *)1;
		assert_einval(inccl_comm_create(&bad[i].o, bad[i].rank, bad[i].nranks, &c, &qpn), inccl_last_error(),
			      bad[i].words);
		assert_null(c);
	}
	assert_einval(inccl_comm_create(NULL, 0, 4, NULL, &qpn), inccl_last_error(), "out is NULL");
	assert_einval(inccl_comm_create(NULL, 0, 4, &c, NULL), inccl_last_error(), "qpn is NULL");
	/* good arguments get as far as the device, which this machine has not */
	assert_int_equal(inccl_comm_create(NULL, 0, 4, &c, &qpn), INCCL_ENODEV);
	assert_non_null(strstr(inccl_last_error(), "no RDMA device 'rxe0'"));
	assert_einval(inccl_comm_init(NULL, NULL, &c), inccl_last_error(), "g is NULL");
	assert_einval(inccl_comm_init(NULL, NULL, NULL), inccl_last_error(), "out is NULL");
}

static void test_null_comm(void **state)
{
	int32_t x = 1;

	assert_einval(inccl_allreduce(NULL, &x, &x, 1, INCCL_INT32, INCCL_SUM), inccl_last_error(),
		      "inccl_allreduce: comm is NULL");
	assert_einval(inccl_reduce(NULL, &x, &x, 1, INCCL_INT32, INCCL_SUM, 0), inccl_last_error(),
		      "inccl_reduce: comm is NULL");
	assert_einval(inccl_broadcast(NULL, &x, 1, INCCL_INT32, 0), inccl_last_error(), "inccl_broadcast: comm is NULL");
	assert_einval(inccl_barrier(NULL), inccl_last_error(), "inccl_barrier: comm is NULL");
	assert_einval(inccl_comm_connect(NULL, "10.0.0.1", 5, 0), inccl_last_error(), "inccl_comm_connect: comm is NULL");
	assert_string_equal(inccl_errmsg(NULL), "no communicator");
	assert_int_equal(inccl_comm_rank(NULL), -1);
	assert_int_equal(inccl_comm_size(NULL), -1);
	inccl_comm_destroy(NULL);
}

/* inc_width() - bytes of an element of @t, written out here (not inc_dtype_size()) */
static int inc_width(int t)
{
	return t == INCCL_FLOAT16 || t == INCCL_BFLOAT16 ? 2 : t == INCCL_INT64 || t == INCCL_UINT64 || t == INCCL_FLOAT64 ? 8 : 4;
}

static void test_collective_args(void **state)
{
	inccl_comm_t *c = inccl__comm_unconnected(1, 4);
	int32_t x[4] = { 0 };
	/* the first count whose bytes (4 each) do not fit size_t */
	size_t huge = SIZE_MAX / 4 + 1;

	assert_non_null(c);
	assert_einval(inccl_allreduce(c, x, x, 0, INCCL_INT32, INCCL_SUM), inccl_errmsg(c), "count must be at least 1");
	assert_einval(inccl_allreduce(c, x, x, huge, INCCL_INT32, INCCL_SUM), inccl_errmsg(c), "overflows size_t");
	assert_einval(inccl_allreduce(c, x, x, SIZE_MAX, INCCL_INT32, INCCL_SUM), inccl_errmsg(c), "overflows size_t");
	assert_einval(inccl_allreduce(c, x, x, 1, (enum inccl_dtype)8, INCCL_SUM), inccl_errmsg(c), "unknown dtype 8");
	assert_einval(inccl_allreduce(c, x, x, 1, (enum inccl_dtype)-1, INCCL_SUM), inccl_errmsg(c), "unknown dtype -1");
	assert_einval(inccl_allreduce(c, x, x, 1, INCCL_INT32, (enum inccl_op)0), inccl_errmsg(c), "unknown op 0");
	assert_einval(inccl_allreduce(c, x, x, 1, INCCL_INT32, (enum inccl_op)4), inccl_errmsg(c), "unknown op 4");
	assert_einval(inccl_allreduce(c, NULL, x, 1, INCCL_INT32, INCCL_SUM), inccl_errmsg(c), "the send buffer is NULL");
	assert_einval(inccl_allreduce(c, x, NULL, 1, INCCL_INT32, INCCL_SUM), inccl_errmsg(c), "the receive buffer is NULL");
	assert_einval(inccl_reduce(c, x, x, 1, INCCL_FLOAT32, INCCL_MAX, 4), inccl_errmsg(c), "root 4 is not a rank of 0..3");
	assert_einval(inccl_reduce(c, x, x, 1, INCCL_FLOAT32, INCCL_MAX, -1), inccl_errmsg(c), "root -1 is not a rank");
	assert_einval(inccl_reduce(c, NULL, x, 1, INCCL_FLOAT32, INCCL_MAX, 0), inccl_errmsg(c), "the send buffer is NULL");
	/* rank 1 is not the root: its receive buffer may be NULL; rank 1 as the root needs one */
	assert_einval(inccl_reduce(c, x, NULL, 1, INCCL_FLOAT32, INCCL_MIN, 0), inccl_errmsg(c), "not connected");
	assert_einval(inccl_reduce(c, x, NULL, 1, INCCL_FLOAT32, INCCL_MIN, 1), inccl_errmsg(c),
		      "the root's receive buffer is NULL");
	assert_einval(inccl_broadcast(c, NULL, 1, INCCL_INT32, 0), inccl_errmsg(c), "the buffer is NULL");
	assert_einval(inccl_broadcast(c, x, 1, INCCL_INT32, 7), inccl_errmsg(c), "root 7 is not a rank of 0..3");
	assert_einval(inccl_broadcast(c, x, 1, (enum inccl_dtype)9, 0), inccl_errmsg(c), "unknown dtype 9");
	/* the count's bytes with each type's width; buffers aligned to it (issue 16) */
	uint64_t y[4] = { 0 };
	char *yb = (char *)y;
	assert_einval(inccl_allreduce(c, y, y, SIZE_MAX / 8 + 1, INCCL_INT64, INCCL_SUM), inccl_errmsg(c),
		      "elements of 8 bytes overflows size_t");
	assert_einval(inccl_allreduce(c, y, y, SIZE_MAX / 8 + 1, INCCL_INT32, INCCL_SUM), inccl_errmsg(c),
		      "communicator is not connected"); /* 4 bytes each: fits */
	assert_einval(inccl_allreduce(c, y, y, SIZE_MAX / 2 + 1, INCCL_BFLOAT16, INCCL_SUM), inccl_errmsg(c),
		      "elements of 2 bytes overflows size_t");
	assert_einval(inccl_allreduce(c, yb + 4, y, 1, INCCL_FLOAT64, INCCL_SUM), inccl_errmsg(c),
		      "the send buffer");
	assert_true(strstr(inccl_errmsg(c), "is not aligned to the 8 bytes of an element") != NULL);
	assert_einval(inccl_allreduce(c, y, yb + 2, 1, INCCL_UINT32, INCCL_MAX), inccl_errmsg(c),
		      "the receive buffer");
	assert_einval(inccl_reduce(c, yb + 1, y, 1, INCCL_FLOAT16, INCCL_MIN, 0), inccl_errmsg(c), "is not aligned to the 2");
	assert_einval(inccl_broadcast(c, yb + 4, 1, INCCL_UINT64, 0), inccl_errmsg(c), "is not aligned to the 8");
	assert_einval(inccl_broadcast(c, yb + 4, 1, INCCL_FLOAT32, 0), inccl_errmsg(c), "communicator is not connected");
	for (int t = INCCL_INT32; t <= INCCL_FLOAT64; t++)
		for (int op = INCCL_SUM; op <= INCCL_MIN; op++)
			assert_einval(inccl_allreduce(c, yb + 8 - inc_width(t), y, 2, (enum inccl_dtype)t, (enum inccl_op)op),
				      inccl_errmsg(c), "communicator is not connected");
	/* good arguments pass every check and meet the missing connection */
	assert_einval(inccl_allreduce(c, x, x, 4, INCCL_FLOAT32, INCCL_MAX), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_barrier(c), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_comm_connect(c, "10.0.0.300", 5, 0), inccl_errmsg(c), "switch_ip '10.0.0.300' is not an IPv4");
	assert_einval(inccl_comm_connect(c, NULL, 5, 0), inccl_errmsg(c), "switch_ip '(NULL)'");
	assert_einval(inccl_comm_connect(c, "10.0.0.1", 0, 0), inccl_errmsg(c), "switch_qpn 0 is not");
	assert_einval(inccl_comm_connect(c, "10.0.0.1", 0x1000000, 0), inccl_errmsg(c), "switch_qpn 16777216 is not");
	assert_int_equal(inccl_comm_rank(c), 1);
	assert_int_equal(inccl_comm_size(c), 4);
	inccl_comm_destroy(c);
}

/*
 * AllGather, ReduceScatter, AllToAll: every bad argument refused by name
 * before anything is sent; nccl's in-place conventions pass every check and
 * meet the missing connection; any other overlap of the buffers is refused.
 * Rank 1 of 4, blocks of 2 elements.
 */
static void test_block_collective_args(void **state)
{
	inccl_comm_t *c = inccl__comm_unconnected(1, 4);
	int32_t b[8] = { 0 }, s[8] = { 0 }, r[8] = { 0 };
	/* the first count that fits size_t in bytes (4 each) but not times 4 ranks */
	size_t huge = SIZE_MAX / 4 / 4 + 1;

	assert_non_null(c);
	assert_einval(inccl_allgather(NULL, s, r, 2, INCCL_INT32), inccl_last_error(), "inccl_allgather: comm is NULL");
	assert_einval(inccl_reducescatter(NULL, s, r, 2, INCCL_INT32, INCCL_SUM), inccl_last_error(),
		      "inccl_reducescatter: comm is NULL");
	assert_einval(inccl_alltoall(NULL, s, r, 2, INCCL_INT32), inccl_last_error(), "inccl_alltoall: comm is NULL");
	assert_einval(inccl_allgather(c, s, r, 0, INCCL_INT32), inccl_errmsg(c), "count must be at least 1");
	assert_einval(inccl_allgather(c, s, r, huge, INCCL_INT32), inccl_errmsg(c), "times 4 ranks overflows size_t");
	assert_einval(inccl_reducescatter(c, s, r, huge, INCCL_INT32, INCCL_SUM), inccl_errmsg(c),
		      "times 4 ranks overflows size_t");
	assert_einval(inccl_alltoall(c, s, r, huge, INCCL_INT32), inccl_errmsg(c), "times 4 ranks overflows size_t");
	assert_einval(inccl_allgather(c, s, r, 2, (enum inccl_dtype)8), inccl_errmsg(c), "unknown dtype 8");
	assert_einval(inccl_alltoall(c, s, r, 2, (enum inccl_dtype)-1), inccl_errmsg(c), "unknown dtype -1");
	assert_einval(inccl_reducescatter(c, s, r, 2, INCCL_FLOAT32, (enum inccl_op)0), inccl_errmsg(c), "unknown op 0");
	assert_einval(inccl_reducescatter(c, s, r, 2, INCCL_FLOAT32, (enum inccl_op)4), inccl_errmsg(c), "unknown op 4");
	assert_einval(inccl_allgather(c, NULL, r, 2, INCCL_INT32), inccl_errmsg(c), "the send buffer is NULL");
	assert_einval(inccl_allgather(c, s, NULL, 2, INCCL_INT32), inccl_errmsg(c), "the receive buffer is NULL");
	assert_einval(inccl_reducescatter(c, NULL, r, 2, INCCL_INT32, INCCL_MAX), inccl_errmsg(c), "the send buffer is NULL");
	assert_einval(inccl_reducescatter(c, s, NULL, 2, INCCL_INT32, INCCL_MAX), inccl_errmsg(c),
		      "the receive buffer is NULL");
	assert_einval(inccl_alltoall(c, NULL, r, 2, INCCL_INT32), inccl_errmsg(c), "the send buffer is NULL");
	assert_einval(inccl_alltoall(c, s, NULL, 2, INCCL_INT32), inccl_errmsg(c), "the receive buffer is NULL");
	/* buffers aligned to an element (8 bytes for float64) */
	static _Alignas(8) unsigned char raw[32];
	assert_einval(inccl_allgather(c, raw + 4, r, 1, INCCL_FLOAT64), inccl_errmsg(c), "the send buffer 0x");
	assert_einval(inccl_alltoall(c, s, (char *)r + 2, 1, INCCL_INT32), inccl_errmsg(c),
		      "is not aligned to the 4 bytes of an element");
	/* in place as nccl defines it: rank 1's block of the receive (AllGather) or send (ReduceScatter)
	 * buffer, the same buffer (AllToAll); separate buffers too */
	assert_einval(inccl_allgather(c, b + 2, b, 2, INCCL_INT32), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_reducescatter(c, b, b + 2, 2, INCCL_INT32, INCCL_SUM), inccl_errmsg(c),
		      "communicator is not connected");
	assert_einval(inccl_alltoall(c, b, b, 2, INCCL_FLOAT32), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_allgather(c, s, r, 2, INCCL_INT32), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_reducescatter(c, s, r, 2, INCCL_INT32, INCCL_MIN), inccl_errmsg(c),
		      "communicator is not connected");
	assert_einval(inccl_alltoall(c, s, r, 2, INCCL_INT32), inccl_errmsg(c), "communicator is not connected");
	/* the send block just past the receive buffer's end, and a send buffer ending at its start: no overlap */
	assert_einval(inccl_allgather(c, b + 8 - 0, b, 2, INCCL_INT32), inccl_errmsg(c), "communicator is not connected");
	assert_einval(inccl_alltoall(c, b, b + 8, 1, INCCL_INT32), inccl_errmsg(c), "communicator is not connected");
	/* any other overlap: refused, the in-place rule in the message */
	assert_einval(inccl_allgather(c, b, b, 2, INCCL_INT32), inccl_errmsg(c),
		      "not this rank's block of it (in place: send = recv + rank * sendcount)");
	assert_einval(inccl_allgather(c, b + 3, b, 2, INCCL_INT32), inccl_errmsg(c), "overlaps the receive buffer");
	assert_einval(inccl_allgather(c, b + 6, b, 2, INCCL_INT32), inccl_errmsg(c), "overlaps the receive buffer");
	assert_einval(inccl_reducescatter(c, b, b, 2, INCCL_INT32, INCCL_SUM), inccl_errmsg(c),
		      "not this rank's block of it (in place: recv = send + rank * recvcount)");
	assert_einval(inccl_reducescatter(c, b, b + 7, 2, INCCL_INT32, INCCL_SUM), inccl_errmsg(c),
		      "overlaps the send buffer");
	assert_einval(inccl_alltoall(c, b, b + 1, 2, INCCL_INT32), inccl_errmsg(c),
		      "overlap but are not the same (in place: send = recv)");
	assert_einval(inccl_alltoall(c, b + 3, b, 1, INCCL_INT32), inccl_errmsg(c), "overlap but are not the same");
	inccl_comm_destroy(c);
}

/* ctl_quote(@s) in a message "msg: x\nerror: <quoted>\n" parses back to a mapping of exactly the keys
 * msg and error, error's value @want; the quoted text is one line. */
static void quote_reads_back(const char *s, const char *want, size_t outlen)
{
	char q[700], text[800], err[256];
	struct ctl_doc d;

	assert_true(outlen <= sizeof(q));
	ctl_quote(s, q, outlen);
	assert_true(strlen(q) < outlen);
	assert_null(strchr(q, '\n'));
	snprintf(text, sizeof(text), "msg: x\nerror: %s\n", q);
	if (ctl_parse(text, &d, err, sizeof(err)) < 0)
		fail_msg("ctl_quote('%s') = %s does not parse: %s", s, q, err);
	assert_int_equal(d.root->data.mapping.pairs.top - d.root->data.mapping.pairs.start, 2);
	assert_non_null(ctl_str(&d, NULL, "error"));
	if (strcmp(ctl_str(&d, NULL, "error"), want))
		fail_msg("ctl_quote('%s') = %s reads back as '%s', not '%s'", s, q, ctl_str(&d, NULL, "error"), want);
	ctl_doc_free(&d);
}

static void test_quote(void **state)
{
	static const char *const same[] = {
		"plain words", "", "\"quoted\" and 'single' and \\ backslash", "line\nbreak\r\nand\ttab",
		"a\n...\nmsg: injected", "}\n  - {rank: 9, ip: 6.6.6.6, qpn: 1}", "# not a comment: [x] {y} & *z !t %u @v `w`",
		"del \x7f and esc \x1b and nul-free controls \x01\x1f", "utf-8: \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		"line separator \xe2\x80\xa8 and next line \xc2\x85", "  leading and trailing  ", "-", "null", "~", "? x",
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		quote_reads_back(same[i], same[i], 600);
	/* bytes that are not UTF-8 (libyaml reads UTF-8 only) become '?' */
	quote_reads_back("bad \xff\xfe utf-8 \xc3 \xed\xa0\x80 \xc0\xaf end", "bad ?? utf-8 ? ??? ?? end", 600);
	/* longer than fits: cut at a character, still one quoted scalar on one line */
	char big[400], want[400];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	big[5] = '\n';
	big[6] = '"';
	char q[64];
	ctl_quote(big, q, sizeof(q));
	assert_true(strlen(q) <= sizeof(q) - 1 && strlen(q) >= sizeof(q) - 8);
	/* what it reads back as: a prefix of the text */
	size_t k = strlen(q) - 2 - 2; /* less the quotes and the two escapes' extra characters */
	memcpy(want, big, k);
	want[k] = 0;
	quote_reads_back(big, want, sizeof(q));
	char tiny[3];
	assert_string_equal(ctl_quote("abc", tiny, sizeof(tiny)), "\"\"");
}

/* The "communicator" request rank 0 writes with @entry (a rank's line) parses to how many ranks. */
static int ranks_in(const char *entry)
{
	char text[1024], err[256];
	struct ctl_doc d;
	int n;

	snprintf(text, sizeof(text), "msg: communicator\ngroup: 1\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n%s", entry);
	if (ctl_parse(text, &d, err, sizeof(err)) < 0)
		return -1;
	for (n = 0; ctl_item(&d, ctl_get(&d, NULL, "ranks"), n); n++)
		;
	ctl_doc_free(&d);
	return n;
}

static void test_qp_entry(void **state)
{
	/* an ip that closes the flow mapping and adds a rank: live when copied as it came */
	const char *evil = "10.1.1.5, qpn: 1}\n  - {rank: 0, ip: 6.6.6.6";
	char line[256], err[256], msg[512], raw[256];
	struct {
		const char *ip, *qpn, *want; /* want: the line, or the reason */
	} cases[] = {
		{ "10.1.1.5", "4660", "  - {rank: 1, ip: 10.1.1.5, qpn: 4660}\n" },
		{ "'10.1.1.5'", "4660", "  - {rank: 1, ip: 10.1.1.5, qpn: 4660}\n" },
		{ "\"10.1.1.5, qpn: 1}\\n  - {rank: 0, ip: 6.6.6.6\"", "4660", "ip is not an IPv4 address" },
		{ "10.1.1.5 # x", "4660", "  - {rank: 1, ip: 10.1.1.5, qpn: 4660}\n" }, /* a YAML comment: not the peer's text */
		{ "\"10.1.1.5 \"", "4660", "ip is not an IPv4 address" },
		{ "010.1.1.5", "4660", "ip is not an IPv4 address" },
		{ "[10.1.1.5]", "4660", "ip is not an IPv4 address" },
		{ "10.1.1.5", "16777216", "'qpn' must be a number in 0..16777215" },
		{ "10.1.1.5", "-1", "'qpn' must be a number" },
	};

	snprintf(raw, sizeof(raw), "  - {rank: 1, ip: %s, qpn: 4660}\n", evil);
	assert_int_equal(ranks_in(raw), 3); /* the control: a printf of the peer's text adds a rank */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctl_doc d;
		FILE *f;
		int rc;

		memset(line, 0, sizeof(line));
		assert_non_null(f = fmemopen(line, sizeof(line) - 1, "w"));

		snprintf(msg, sizeof(msg), "msg: qp\nrank: 1\nip: %s\nqpn: %s\n", cases[i].ip, cases[i].qpn);
		assert_int_equal(ctl_parse(msg, &d, err, sizeof(err)), 0);
		err[0] = 0;
		rc = inccl__qp_entry(f, 1, &d, err, sizeof(err));
		fclose(f);
		ctl_doc_free(&d);
		if (cases[i].want[0] == ' ') {
			if (rc != 0 || strcmp(line, cases[i].want))
				fail_msg("ip %s qpn %s: rc %d, '%s' (%s), want '%s'", cases[i].ip, cases[i].qpn, rc, line, err,
					 cases[i].want);
			assert_int_equal(ranks_in(line), 2);
		} else if (rc != -1 || !strstr(err, cases[i].want) || line[0]) {
			fail_msg("ip %s qpn %s: rc %d, wrote '%s', said '%s'; want -1 and '%s'", cases[i].ip, cases[i].qpn, rc,
				 line, err, cases[i].want);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_create), cmocka_unit_test(test_comm_create),
		cmocka_unit_test(test_null_comm),    cmocka_unit_test(test_collective_args),
		cmocka_unit_test(test_block_collective_args),
		cmocka_unit_test(test_quote),        cmocka_unit_test(test_qp_entry),
	};
	return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
