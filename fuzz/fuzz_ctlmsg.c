/*
 * fuzz_ctlmsg.c — libFuzzer target: bytes from a control connection through
 * proto/ctlmsg.c as the controller, the switch daemon and libinccl take
 * them: the stream cut into messages (ctl_buf, ctl_next()), fed in pieces
 * of the sizes recv() might return, each message parsed (ctl_parse()) and
 * read with the accessors every handler uses.
 *
 * Input: one byte, the size of every piece (1..256), then the stream.
 * Properties: the messages taken, joined, are a prefix of the stream; each
 * one ends with the end marker line; a buffer never holds more than
 * CTL_MSG_MAX + 8192 bytes; ctl_parse() either succeeds with a kind or
 * gives a reason; ctl_quote() of any value is a double-quoted scalar that
 * libyaml reads back as the same text (control characters apart).
 */
#include <sys/socket.h>
#include <unistd.h>

#include "../proto/ctlmsg.h"
#include "fuzz.h"

/* Every accessor on every key of mapping @map, and its values quoted and parsed back. */
static void walk(struct ctl_doc *d, yaml_node_t *map, int depth)
{
	char err[256], q[600];
	unsigned long v;

	if (!map || map->type != YAML_MAPPING_NODE || depth > 3)
		return;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
		if (!k || k->type != YAML_SCALAR_NODE)
			continue;
		const char *key = (const char *)k->data.scalar.value, *s = ctl_str(d, map, key);
		yaml_node_t *val = ctl_get(d, map, key);
		(void)ctl_uint(d, map, key, 0xffffff, &v, err, sizeof(err));
		for (int i = 0; ctl_item(d, val, i); i++)
			walk(d, ctl_item(d, val, i), depth + 1);
		walk(d, val, depth + 1);
		if (!s)
			continue;
		/* a value written back into a message (an error's reason, a name) stays one scalar */
		char msg[700];
		struct ctl_doc back;
		snprintf(msg, sizeof(msg), "msg: error\nerror: %s\n", ctl_quote(s, q, sizeof(q)));
		FZ_CHECK(ctl_parse(msg, &back, err, sizeof(err)) == 0);
		FZ_CHECK(!strcmp(back.kind, "error") && ctl_str(&back, NULL, "error"));
		ctl_doc_free(&back);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	size_t piece = 1 + fz_u8(&f), n = fz_left(&f), got, taken = 0;
	const uint8_t *stream = fz_take(&f, n, &got);
	struct ctl_buf b = { 0 };
	int sv[2], rc = 0, exact = !memchr(stream, 0, n); /* with a NUL inside, a message's copy reads shorter */

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		abort();
	for (size_t off = 0; off < n || ctl_buffered(&b);) {
		size_t k = n - off < piece ? n - off : piece;
		if (k) {
			FZ_CHECK(write(sv[1], stream + off, k) == (ssize_t)k);
			off += k;
			FZ_CHECK(ctl_feed(&b, sv[0]) == (int)k);
		}
		FZ_CHECK(b.cap <= CTL_MSG_MAX + 8192 && b.off <= b.len && b.len <= b.cap);
		char *msg;
		int progress = 0;
		while ((msg = ctl_next(&b, &rc))) {
			size_t len = strlen(msg);
			struct ctl_doc d;
			char err[512];
			progress = 1;
			if (exact) {
				FZ_CHECK(taken + len <= n && !memcmp(msg, stream + taken, len));
				FZ_CHECK(len >= 4 && msg[len - 1] == '\n');
				taken += len;
			}
			if (ctl_parse(msg, &d, err, sizeof(err)) == 0) {
				FZ_CHECK(d.kind && d.root);
				walk(&d, d.root, 0);
				ctl_doc_free(&d);
			} else {
				FZ_CHECK(err[0]);
			}
			free(msg);
		}
		if (rc == CTL_ETOOBIG || (!k && !progress))
			break; /* the rest is an unfinished message, kept until more comes */
	}
	ctl_buf_free(&b);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
