/*
 * ctlmsg.c — framing, deadlines and parsing of inclab control messages
 * (see ctlmsg.h). Shared by incctl, incswitch and libinccl.
 *
 * Sockets are used with poll() and explicit deadlines so no control step can
 * hang; writes use MSG_NOSIGNAL so a peer that went away is an error, not a
 * SIGPIPE that kills the process.
 */
#include "ctlmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define END_MARK "\n...\n"

uint64_t ctl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int ctl_left_ms(uint64_t deadline)
{
	uint64_t now = ctl_now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

int ctl_parse_addr(const char *text, int default_port, uint32_t *addr_be, int *port)
{
	char host[64];
	const char *colon = text ? strchr(text, ':') : NULL;
	size_t n = colon ? (size_t)(colon - text) : (text ? strlen(text) : 0);
	struct in_addr a;

	if (!text || n == 0 || n >= sizeof(host))
		return -1;
	memcpy(host, text, n);
	host[n] = 0;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -1;
	*addr_be = a.s_addr;
	*port = default_port;
	if (colon) {
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || *end || p < 1 || p > 65535)
			return -1;
		*port = (int)p;
	}
	return 0;
}

void ctl_keepalive(int fd)
{
	int one = 1, idle = CTL_KEEPIDLE_S, intvl = CTL_KEEPINTVL_S, cnt = CTL_DEAD_MS / 1000 / CTL_KEEPINTVL_S;
	unsigned dead = CTL_DEAD_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &dead, sizeof(dead));
}

int ctl_connect(const char *hostport, int default_port, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int port, fd, one = 1;

	if (ctl_parse_addr(hostport, default_port, &sa.sin_addr.s_addr, &port) < 0) {
		errno = EINVAL;
		return -1;
	}
	sa.sin_port = htons((uint16_t)port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctl_keepalive(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		goto fail;
	struct pollfd p = { fd, POLLOUT, 0 };
	int n = poll(&p, 1, timeout_ms);
	if (n == 0) {
		errno = ETIMEDOUT;
		goto fail;
	}
	int err = 0;
	socklen_t len = sizeof(err);
	if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		goto fail;
	if (err) {
		errno = err;
		goto fail;
	}
	return fd;
fail:
	n = errno;
	close(fd);
	errno = n;
	return -1;
}

int ctl_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* send_all() - write @n bytes of @p to non-blocking socket @fd, polling while it is
 * full: CTL_OK once all are sent, CTL_ETIMEDOUT at @deadline, CTL_EIO when the
 * connection fails (never SIGPIPE). */
static int send_all(int fd, const char *p, size_t n, uint64_t deadline)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return CTL_EIO;
		struct pollfd pf = { fd, POLLOUT, 0 };
		int t = ctl_left_ms(deadline);
		if (t == 0 || poll(&pf, 1, t) == 0)
			return CTL_ETIMEDOUT;
	}
	return CTL_OK;
}

int ctl_send(int fd, const char *text, int timeout_ms)
{
	uint64_t deadline = ctl_now_ms() + (uint64_t)timeout_ms;
	size_t n = strlen(text);
	int rc = send_all(fd, text, n, deadline);

	if (rc == CTL_OK)
		rc = n && text[n - 1] == '\n' ? send_all(fd, END_MARK + 1, 4, deadline) : send_all(fd, END_MARK, 5, deadline);
	return rc;
}

int ctl_sendf(int fd, int timeout_ms, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		errno = ENOMEM;
		return CTL_EIO;
	}
	rc = ctl_send(fd, text, timeout_ms);
	free(text);
	return rc;
}

int ctl_feed(struct ctl_buf *b, int fd)
{
	if (b->off && (b->off == b->len || b->cap - b->len < 4096)) { /* drop what was taken */
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->scan = b->scan > b->off ? b->scan - b->off : 0;
		b->off = 0;
	}
	if (b->cap - b->len < 4096) {
		size_t cap = b->cap ? b->cap * 2 : 8192;
		if (cap > CTL_MSG_MAX + 8192)
			cap = CTL_MSG_MAX + 8192;
		if (cap - b->len == 0)
			return 0; /* full: ctl_next() reports it */
		char *d = realloc(b->data, cap);
		if (!d) {
			errno = ENOMEM;
			return CTL_EIO;
		}
		b->data = d;
		b->cap = cap;
	}
	ssize_t k = recv(fd, b->data + b->len, b->cap - b->len, MSG_DONTWAIT);
	if (k == 0)
		return CTL_EOF;
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : CTL_EIO;
	b->len += (size_t)k;
	return (int)k;
}

/*
 * Offset just past the end marker (a line "..." with optional trailing
 * blanks) of the first message in @b, or 0 when none is complete yet; the
 * search resumes where the last one could not decide (b->scan).
 */
static size_t message_end(struct ctl_buf *b)
{
	size_t i = b->scan > b->off ? b->scan : b->off;

	for (; i < b->len; i++) {
		if (i != b->off && b->data[i - 1] != '\n')
			continue;
		size_t j = i;
		while (j < b->len && j - i < 3 && b->data[j] == '.')
			j++;
		if (j == b->len)
			break; /* a line start not decided yet */
		if (j - i < 3)
			continue;
		while (j < b->len && (b->data[j] == ' ' || b->data[j] == '\r'))
			j++;
		if (j == b->len)
			break;
		if (b->data[j] == '\n') {
			b->scan = j + 1;
			return j + 1;
		}
	}
	b->scan = i;
	return 0;
}

char *ctl_next(struct ctl_buf *b, int *rc)
{
	size_t end = message_end(b);
	char *msg;

	*rc = CTL_OK;
	if (!end) {
		if (b->len - b->off >= CTL_MSG_MAX)
			*rc = CTL_ETOOBIG;
		return NULL;
	}
	if (!(msg = malloc(end - b->off + 1))) {
		*rc = CTL_EIO;
		return NULL;
	}
	memcpy(msg, b->data + b->off, end - b->off);
	msg[end - b->off] = 0;
	b->off = end;
	if (b->off == b->len)
		b->off = b->len = b->scan = 0;
	return msg;
}

int ctl_recv(int fd, struct ctl_buf *b, int timeout_ms, char **msg)
{
	uint64_t deadline = ctl_now_ms() + (uint64_t)timeout_ms;
	int rc;

	for (;;) {
		if ((*msg = ctl_next(b, &rc)))
			return CTL_OK;
		if (rc)
			return rc;
		struct pollfd p = { fd, POLLIN, 0 };
		int t = ctl_left_ms(deadline), n = poll(&p, 1, t);
		if (n < 0 && errno != EINTR)
			return CTL_EIO;
		if (n == 0)
			return CTL_ETIMEDOUT;
		if (n > 0 && (rc = ctl_feed(b, fd)) < 0)
			return rc;
	}
}

size_t ctl_buffered(const struct ctl_buf *b)
{
	return b->len - b->off;
}

void ctl_buf_free(struct ctl_buf *b)
{
	free(b->data);
	*b = (struct ctl_buf){ 0 };
}

int ctl_parse(const char *text, struct ctl_doc *d, char *err, size_t errlen)
{
	yaml_parser_t p;

	memset(d, 0, sizeof(*d));
	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&p, &d->doc)) {
		snprintf(err, errlen, "line %zu: %s", p.problem_mark.line + 1, p.problem ? p.problem : "bad YAML");
		yaml_parser_delete(&p);
		memset(d, 0, sizeof(*d));
		return -1;
	}
	yaml_parser_delete(&p);
	d->root = yaml_document_get_root_node(&d->doc);
	if (!d->root || d->root->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "a message must be a YAML mapping");
		goto bad;
	}
	if (!(d->kind = ctl_str(d, NULL, "msg"))) {
		snprintf(err, errlen, "a message needs 'msg: KIND'");
		goto bad;
	}
	return 0;
bad:
	ctl_doc_free(d);
	return -1;
}

void ctl_doc_free(struct ctl_doc *d)
{
	if (d->root || d->doc.nodes.start)
		yaml_document_delete(&d->doc);
	memset(d, 0, sizeof(*d));
}

yaml_node_t *ctl_get(struct ctl_doc *d, yaml_node_t *map, const char *key)
{
	if (!map)
		map = d->root;
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&d->doc, pr->key);
		if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(&d->doc, pr->value);
	}
	return NULL;
}

const char *ctl_str(struct ctl_doc *d, yaml_node_t *map, const char *key)
{
	yaml_node_t *v = ctl_get(d, map, key);
	return v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;
}

int ctl_uint(struct ctl_doc *d, yaml_node_t *map, const char *key, unsigned long max, unsigned long *out, char *err,
	     size_t errlen)
{
	const char *s = ctl_str(d, map, key);
	char *end;

	if (!s) {
		snprintf(err, errlen, "'%s' is missing", key);
		return -1;
	}
	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || *out > max) {
		snprintf(err, errlen, "'%s' must be a number in 0..%lu, not '%.40s'", key, max, s);
		return -1;
	}
	return 0;
}

yaml_node_t *ctl_item(struct ctl_doc *d, yaml_node_t *seq, int i)
{
	if (!seq || seq->type != YAML_SEQUENCE_NODE || i < 0 ||
	    i >= seq->data.sequence.items.top - seq->data.sequence.items.start)
		return NULL;
	return yaml_document_get_node(&d->doc, seq->data.sequence.items.start[i]);
}

/* Where ctl_quote()'s emitter writes: @n bytes at @p (malloc()ed, @cap allocated). */
struct qbuf {
	char *p;
	size_t n, cap;
};

/* libyaml write handler of ctl_quote(): append, growing the buffer; 0 when out of memory. */
static int qbuf_write(void *data, unsigned char *buf, size_t size)
{
	struct qbuf *q = data;

	if (q->n + size + 1 > q->cap) {
		size_t cap = 2 * (q->n + size + 1);
		char *p = realloc(q->p, cap);
		if (!p)
			return 0;
		q->p = p;
		q->cap = cap;
	}
	memcpy(q->p + q->n, buf, size);
	q->n += size;
	q->p[q->n] = 0;
	return 1;
}

/*
 * libyaml's emitter writes the @len bytes at @s (valid UTF-8) as a document
 * of one double-quoted scalar into @q: on one line (no folding), in ASCII
 * (every other character, control characters and line breaks escaped).
 * Return 0, or -1 when the emitter refused.
 */
static int emit_quoted(const char *s, size_t len, struct qbuf *q)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	int ok;

	if (!yaml_emitter_initialize(&e))
		return -1;
	yaml_emitter_set_output(&e, qbuf_write, q);
	yaml_emitter_set_width(&e, -1);
	yaml_emitter_set_unicode(&e, 0);
	/* yaml_emitter_emit() takes each event, also when it fails */
	ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&e, &ev) &&
	     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) && yaml_emitter_emit(&e, &ev) &&
	     yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, 0, 1,
					  YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
	     yaml_emitter_emit(&e, &ev) && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
	     yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) && yaml_emitter_flush(&e);
	yaml_emitter_delete(&e);
	return ok ? 0 : -1;
}

/* Length of the UTF-8 sequence at @s (of @n bytes) when it is a valid character, else 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	uint32_t v = len == 1 ? s[0] : len == 2 ? s[0] & 0x1fu : len == 3 ? s[0] & 0x0fu : s[0] & 0x07u;

	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	/* no overlong form, no surrogate, nothing above U+10FFFF (what libyaml also refuses) */
	if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return len;
}

char *ctl_quote(const char *s, char *out, size_t outlen)
{
	size_t n = s ? strlen(s) : 0, len = 0;
	char *text;
	struct qbuf q;

	if (outlen < 3) {
		if (outlen)
			out[0] = 0;
		return out;
	}
	snprintf(out, outlen, "\"\"");
	/* libyaml takes valid UTF-8 only: any other byte becomes '?' */
	if (!(text = malloc(n + 1)))
		return out;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len((const unsigned char *)s + i, n - i);
		if (k) {
			memcpy(text + len, s + i, k);
			len += k;
			i += k;
		} else {
			text[len++] = '?';
			i++;
		}
	}
	text[len] = 0;
	/* too long for @out: cut the text (at a character) by what did not fit, until it fits */
	for (;;) {
		q = (struct qbuf){ 0 };
		if (emit_quoted(text, len, &q) < 0 || !q.p) {
			free(q.p);
			break; /* "" */
		}
		while (q.n > 0 && (q.p[q.n - 1] == '\n' || q.p[q.n - 1] == '.'))
			q.n--; /* the line break after the scalar (and a document end "...", if any) */
		if (q.n < outlen && q.n >= 2 && q.p[0] == '"' && q.p[q.n - 1] == '"') {
			memcpy(out, q.p, q.n);
			out[q.n] = 0;
			free(q.p);
			break;
		}
		free(q.p);
		if (len == 0)
			break; /* "" */
		size_t over = q.n >= outlen ? q.n - outlen + 1 : 1;
		len = len > over ? len - over : 0;
		while (len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80)
			len--;
	}
	free(text);
	return out;
}

const char *ctl_strerror(int rc)
{
	switch (rc) {
	case CTL_OK: return "success";
	case CTL_EOF: return "connection closed by the peer";
	case CTL_ETIMEDOUT: return "timed out";
	case CTL_ETOOBIG: return "message too long (no end marker)";
	case CTL_EAUTH: return "a message failed authentication";
	default: return strerror(errno);
	}
}

/* the words below say the dead-peer time; a change of CTL_DEAD_MS changes them */
_Static_assert(CTL_DEAD_MS == 20000, "ctl_gone_strerror() says 20 s");

const char *ctl_gone_strerror(int rc)
{
	if (rc == CTL_EOF || (rc == CTL_EIO && errno == ECONNRESET))
		return "closed its connection";
	if (rc == CTL_EIO && errno == ETIMEDOUT)
		return "its machine acknowledged nothing for 20 s";
	return ctl_strerror(rc);
}
