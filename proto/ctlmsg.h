/*
 * ctlmsg.h — the inclab control protocol: YAML messages over TCP.
 *
 * Every control connection (switch -> controller on 52311, rank 0 ->
 * controller on 52200, rank -> rank 0 on 52223) carries messages, each one
 * YAML mapping whose key "msg" names its kind, ended by a line "..." (YAML's
 * own end-of-document marker, so a message stays a valid YAML stream and can
 * be typed by hand with socat). controller/README.md lists the messages.
 *
 * This module frames, sends, receives (with deadlines, never blocking
 * forever) and parses messages (libyaml); it is shared by the controller, the
 * switch daemon and libinccl.
 */
#ifndef INCLAB_CTLMSG_H
#define INCLAB_CTLMSG_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define CTL_PORT_SWITCH 52311 /* switches register with the controller */
#define CTL_PORT_GROUP 52200  /* rank 0 asks the controller for groups and communicators */
#define CTL_PORT_MASTER 52223 /* ranks meet at rank 0 */
#define CTL_MSG_MAX (1u << 20) /* longest message accepted: far above any real one */

enum ctl_rc {
	CTL_OK = 0,
	CTL_EOF = -1,      /* the peer closed the connection */
	CTL_ETIMEDOUT = -2,
	CTL_EIO = -3,      /* socket error (errno set) */
	CTL_ETOOBIG = -4,  /* no end marker within CTL_MSG_MAX bytes */
	CTL_EAUTH = -5,    /* a message failed authentication (ctlauth.h) */
};

/**
 * Bytes received on a connection and not yet returned as messages: data[off,
 * len). Taking a message only moves off, and the search for the end marker
 * resumes at scan, so a buffer full of small pipelined messages costs linear
 * time, not quadratic. A zeroed struct is an empty buffer.
 */
struct ctl_buf {
	char *data;
	size_t off, len, cap;
	size_t scan; /* no end marker starts in [off, scan) */
};

/** A parsed message. */
struct ctl_doc {
	yaml_document_t doc;
	yaml_node_t *root; /* the top mapping */
	const char *kind;  /* value of "msg" */
};

/** ctl_now_ms() - a monotonic clock in milliseconds. */
uint64_t ctl_now_ms(void);

/** ctl_left_ms() - milliseconds from now to @deadline (ctl_now_ms()'s clock), 0 once it
 * has passed: a poll() timeout (deadlines are at most minutes ahead, well inside an int). */
int ctl_left_ms(uint64_t deadline);

/**
 * ctl_parse_addr() - split "host[:port]" (host: dotted quad) into an address
 * (network order) and port (@default_port when absent). Return 0 or -1.
 */
int ctl_parse_addr(const char *text, int default_port, uint32_t *addr_be, int *port);

/**
 * ctl_connect() - TCP connection to "host[:port]" within @timeout_ms.
 * Return: a socket, or -1 with errno set (ETIMEDOUT, ECONNREFUSED, EINVAL
 * for a bad address, ...).
 */
int ctl_connect(const char *hostport, int default_port, int timeout_ms);

/**
 * ctl_keepalive() - make a dead peer's machine show on socket @fd within
 * CTL_DEAD_MS: TCP keepalive probes after CTL_KEEPIDLE_S of silence, one
 * every CTL_KEEPINTVL_S, and the connection given up when nothing was
 * acknowledged for CTL_DEAD_MS (TCP_USER_TIMEOUT, which also bounds a
 * retransmitted message). A peer process that exits closes its end at once;
 * this is for a machine, VM or namespace that vanished. ctl_connect() sets
 * it; acceptors call it on what they accept.
 *
 * Why 20 s: a TCG guest on a loaded lab machine can leave its control
 * connections unacknowledged for several seconds while it is alive (a 16 MiB
 * INC Broadcast of a 1-2-4 sweep, 2026-11-27, at a load average of 6-7: a
 * rank's kernel gave up on rank 0 after the 6 s this was, TcpExtTCPAbortOnTimeout
 * 1, no frame dropped on the management taps), and a false "went away" ends
 * every rank's job; a vanished machine still shows within 20 s, a third of
 * what it took before keepalives (60 s).
 */
void ctl_keepalive(int fd);
#define CTL_DEAD_MS 20000
#define CTL_KEEPIDLE_S 5  /* silence before the first probe */
#define CTL_KEEPINTVL_S 2 /* between probes */

/** ctl_listen() - a listening TCP socket on @port of every address; -1 with errno. */
int ctl_listen(int port);

/**
 * ctl_send() - send @text (a YAML mapping with "msg: KIND", without the end
 * marker) followed by the end marker, within @timeout_ms.
 * Return: CTL_OK or a negative enum ctl_rc.
 */
int ctl_send(int fd, const char *text, int timeout_ms);

/** ctl_sendf() - ctl_send() of a printf-formatted text. */
int ctl_sendf(int fd, int timeout_ms, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/**
 * ctl_feed() - read what the socket has (one read, without blocking if
 * @fd is non-blocking) into @b. Return: bytes read (> 0), CTL_EOF or CTL_EIO;
 * 0 when nothing was ready.
 */
int ctl_feed(struct ctl_buf *b, int fd);

/**
 * ctl_next() - take the next complete message out of @b.
 * Return: a NUL-terminated copy to free(), NULL when none is complete yet;
 * *@rc is CTL_ETOOBIG when the buffer is full without an end marker.
 */
char *ctl_next(struct ctl_buf *b, int *rc);

/**
 * ctl_recv() - wait up to @timeout_ms for the next message on @fd.
 * Return: CTL_OK and *@msg (free() it), or a negative enum ctl_rc.
 */
int ctl_recv(int fd, struct ctl_buf *b, int timeout_ms, char **msg);

/** ctl_buffered() - bytes in @b not yet taken as messages (a message being received, or several). */
size_t ctl_buffered(const struct ctl_buf *b);

/** ctl_buf_free() - release a receive buffer (it can be reused after). */
void ctl_buf_free(struct ctl_buf *b);

/**
 * ctl_parse() - parse @text as one message: a YAML mapping with a scalar
 * "msg". Return 0, or -1 with a one-line reason (with the line number) in @err.
 */
int ctl_parse(const char *text, struct ctl_doc *d, char *err, size_t errlen);

/** ctl_doc_free() - release a parsed message. */
void ctl_doc_free(struct ctl_doc *d);

/** ctl_get() - the value of @key in mapping @map (NULL: the top one), or NULL. */
yaml_node_t *ctl_get(struct ctl_doc *d, yaml_node_t *map, const char *key);

/** ctl_str() - the scalar value of @key in @map, or NULL (absent or not a scalar). */
const char *ctl_str(struct ctl_doc *d, yaml_node_t *map, const char *key);

/**
 * ctl_uint() - the value of @key in @map as an unsigned number <= @max.
 * Return 0, or -1 with "KEY: ..." (missing, not a number, too large) in @err.
 */
int ctl_uint(struct ctl_doc *d, yaml_node_t *map, const char *key, unsigned long max, unsigned long *out, char *err,
	     size_t errlen);

/** ctl_item() - element @i of sequence @seq, or NULL past its end. */
yaml_node_t *ctl_item(struct ctl_doc *d, yaml_node_t *seq, int i);

/**
 * ctl_quote() - @s as a YAML double-quoted scalar into @out (escaping quotes,
 * backslashes and control characters; truncated to fit). Return @out.
 */
char *ctl_quote(const char *s, char *out, size_t outlen);

/** ctl_strerror() - words for a negative enum ctl_rc (CTL_EIO: from errno). */
const char *ctl_strerror(int rc);

/**
 * ctl_gone_strerror() - words for how an established connection ended, from
 * ctl_feed()'s negative @rc (CTL_EIO: from errno): "closed its connection"
 * (CTL_EOF, or ECONNRESET: the peer closed with our message unread: its
 * process ended), "its machine acknowledged nothing for 20 s" (ETIMEDOUT:
 * this machine's TCP gave up on it, CTL_DEAD_MS: the machine, VM or namespace
 * vanished), else ctl_strerror(@rc). Only for a connection that was up: a
 * connect that timed out (ctl_connect(), errno ETIMEDOUT) or no message in
 * time (CTL_ETIMEDOUT) is no dead peer and keeps its own words.
 */
const char *ctl_gone_strerror(int rc);

#endif
