/*
 * incctl — the inclab controller.
 *
 *   incctl -t TOPOLOGY.yaml [-s SWITCH_PORT] [-g GROUP_PORT] [-S NSLOTS] [-R RETRANSMIT_US]
 *          [-W SWITCH_WAIT_MS] [-I IDLE_MS] [-K NODE_KEYS | -K none]
 *   incctl -Q CONTROLLER[:PORT] [-n NODE] [-k KEY_FILE]  print every registered switch's counters (YAML)
 *   incctl -G FILE|-                make a new random key in FILE (mode 0600; kept if it exists), or print it
 *
 * A port of 0 lets the kernel pick a free one; the first line logged names
 * the ports bound ("switches on TCP S, groups on TCP G"), once both listen
 * (tests/unit/test_ctl.c waits for it).
 *
 * Reads the topology (topology/topo.c, libyaml), then serves two kinds of
 * TCP connections, each carrying the YAML messages of proto/ctlmsg.h:
 *  - switches (port 52311) register under their topology name and take the
 *    rules pushed to them;
 *  - rank 0 of a group (port 52200) registers the group and asks for
 *    communicators: the controller finds the ranks' hosts, computes the
 *    aggregation tree and every switch's rules (plan.c), pushes them, and
 *    answers with each rank's switch end once every switch accepted.
 * A communicator lives until rank 0 releases it or its connection closes;
 * then its switches are told to drop the rules. Several communicators share
 * the switches: each gets its own id (no two alive at once equal modulo
 * 4096, the part in the switches' queue pair numbers, inc_proto.h), its own
 * queue pairs and -S aggregation slots on every switch of its tree. A switch
 * says at registration how many communicators and slots it can hold; a
 * request that would pass either on any of its switches is refused at once
 * with "code: busy" and the reason, and the running ones are not touched.
 *
 * One event loop, in the manner of Redis's ae/networking: every socket is
 * non-blocking, nothing in the loop waits for one peer.
 *  - Input: each connection has a buffer of at most one message
 *    (CTL_MSG_MAX); a client's messages are taken one at a time, the next
 *    one only after the answer to the last (a request that waits for
 *    switches keeps the rest in the buffer, and the socket is not read
 *    while the buffer is full).
 *  - Output: each connection has a buffer written when the socket takes
 *    it. A peer that lets more than OUT_LIMIT bytes of answers pile up (it
 *    does not read) is disconnected.
 *  - Waits are deadlines checked by the loop: a switch has SWITCH_WAIT_MS
 *    (-W) to accept rules and COUNTERS_WAIT_MS to send its counters, after
 *    which the request is answered without it. Meanwhile every other peer
 *    is served.
 *  - Limits: MAX_PEER_CONNS connections from one address, MAX_CONN_GROUPS
 *    groups per connection, one request in progress per connection. A
 *    connection that holds nothing (no registration, no group) and sends no
 *    complete message for IDLE_MS (-I) is closed, and so is any connection
 *    whose message stays unfinished that long (a slow sender holds nothing
 *    but its own buffer).
 * So no client, switch or rank delays another one's answer by more than the
 * loop's time to handle one message, except that a communicator request
 * waits for its own switches (at most SWITCH_WAIT_MS). Every bad message
 * gets "msg: error" with the reason; nothing a client sends stops the
 * controller. One line is logged per registration, group, communicator and
 * dropped connection.
 *
 * Identity (proto/ctlauth.h): with a table of node keys (-K, default
 * CTL_KEY_TABLE_FILE when it exists) every connection is challenged when it
 * opens and must prove within CTL_AUTH_MS which topology node it is; after
 * that every message either way is sealed (sequence number and MAC) and one
 * that fails is refused and the connection closed. A switch registers only
 * under the name it proved; rank 0 asks for a communicator only from the host
 * of its own rank 0 (its RDMA address); a communicator's members are the
 * hosts of its ranks: only they may ask about it ("msg: comm"), and only its
 * owner (the connection of rank 0) may release it; the controller releases
 * it on a fault. Without a table (-K none) nobody is asked who they are.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../topology/topo.h"
#include "../proto/ctlmsg.h"
#include "../proto/inc_proto.h"
#include "../proto/ctlauth.h"
#include "plan.h"

#define MAX_CONNS 512          /* below the default limit of 1024 open files, with room for the rest */
#define MAX_PEER_CONNS 32      /* from one address: a lab has one connection per switch and per job's
                                * rank 0, so one address holding more is misbehaving */
#define MAX_GROUPS 256
#define MAX_CONN_GROUPS 16     /* groups one connection may hold at a time */
#define MAX_COMMS 256
#define OUT_LIMIT (1u << 20)   /* answers queued for one peer beyond what its socket took: the largest
                                * real one (counters of 255 switches) is ~200 KiB */
#define SNDBUF (256 * 1024)    /* the kernel's share of a peer's unread answers (it doubles it) */
#define SWITCH_WAIT_MS 30000   /* a switch resolves its neighbours' MACs before it accepts rules */
#define COUNTERS_WAIT_MS 5000  /* a switch answers "counters" from its loop, within a few ms */
#define IDLE_MS 10000          /* a connection holding nothing, or a message left unfinished */
#define COUNTERS_FIFO 8        /* counters requests one switch may owe answers to */
#define NODE_CONF "/etc/inclab/node.conf" /* a lab node's facts: NODE= names it (-Q) */

enum conn_kind { C_FREE, C_SWITCH, C_CLIENT };
enum req_kind { R_NONE, R_COMM, R_COUNTERS };

/* The one request of a client that waits for switches. */
struct req {
	enum req_kind kind;
	uint64_t seq;               /* unique: a late answer to an older request never counts for this one */
	uint64_t deadline;
	int comm;                   /* R_COMM: index into ctl.comm */
	char *answer;               /* R_COMM: the answer once every switch accepted */
	int nwait;                  /* switches that have not answered */
	uint8_t wait[TOPO_MAX_NODES]; /* by topology node: an answer is awaited from it */
	char *part[TOPO_MAX_NODES]; /* R_COUNTERS: each switch's "{...}" */
};

struct conn {
	enum conn_kind kind;
	int fd;
	uint32_t addr;              /* the peer's, host order */
	char peer[32];              /* "A.B.C.D:PORT" for the log */
	struct ctl_buf in;
	char *out;                  /* queued output: out[out_off, out_len) */
	size_t out_off, out_len, out_cap;
	const char *doomed;         /* closed at the end of this loop turn, for this reason */
	uint64_t last_ms;           /* accepted, or last complete message */
	uint64_t partial_ms;        /* since when an unfinished message waits in `in` (0: none) */
	int node;                   /* switches: topology node once registered, else -1 */
	int cap_comms;              /* switches: communicators it can serve at once (its registration) */
	unsigned cap_slots;         /* switches: aggregation slots its communicators may hold together */
	int who;                    /* the topology node it proved to be (ctlauth), else -1 */
	struct ctl_auth auth;       /* on once it proved it (with ctl.keys only) */
	int ngroups;                /* clients: groups held */
	struct req req;             /* clients: the request waiting for switches */
	struct {                    /* switches: counters requests it owes, oldest first */
		int client;
		uint64_t seq;
	} owed[COUNTERS_FIFO];
	int nowed;
};

struct group {
	int id, nranks, owner;   /* owner: index into conns */
};

enum comm_state { CM_FREE, CM_SETUP, CM_LIVE };

struct comm {
	enum comm_state state;
	int id, group, owner;
	unsigned nslots;         /* aggregation slots it holds on each of its switches */
	int nswitches;
	int sw[TOPO_MAX_NODES];  /* topology nodes serving it */
	uint8_t member[TOPO_MAX_NODES]; /* by topology node: a host of one of its ranks */
};

static struct {
	struct topology *topo;
	struct plan_params defaults;
	int switch_wait_ms, idle_ms;
	struct ctl_keytab keys;     /* every node's key; keys.n == 0: no authentication */
	struct conn conn[MAX_CONNS];
	struct group group[MAX_GROUPS];
	struct comm comm[MAX_COMMS];
	int next_group, next_comm;
	uint64_t next_seq;
} ctl;

static volatile sig_atomic_t stop;

/* SIGINT/SIGTERM: ask the event loop to end after its current turn (only a flag: async-signal-safe). */
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * logf_() - one line "incctl: ..." on stdout, flushed at once (the lab reads
 * the log while incctl runs). For events, never per packet.
 */
static void logf_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("incctl: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/* The topology's name of node index @node (a valid index: the caller found it in the topology). */
static const char *node_name(int node)
{
	return ctl.topo->nodes[node].name;
}

/* Mark connection @ci to be closed at the end of this loop turn (the first reason stays). */
static void doom(int ci, const char *why)
{
	if (!ctl.conn[ci].doomed)
		ctl.conn[ci].doomed = why;
}

/*
 * Write what the socket of @ci takes now, without waiting. A socket error
 * dooms the connection.
 */
static void flush_out(int ci)
{
	struct conn *c = &ctl.conn[ci];

	while (c->out_off < c->out_len && !c->doomed) {
		ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0)
			c->out_off += (size_t)k;
		else if (k < 0 && errno == EINTR)
			continue;
		else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		else
			doom(ci, "cannot write to it");
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
}

/*
 * Queue message @text (without its end marker) for @ci and write what the
 * socket takes. A peer whose unread answers pass OUT_LIMIT is doomed and
 * gets nothing more.
 */
static void send_msg(int ci, const char *text)
{
	struct conn *c = &ctl.conn[ci];
	char *sealed = NULL;

	if (c->kind == C_FREE || c->doomed)
		return;
	if (c->auth.on && !(text = sealed = ctl_auth_seal(&c->auth, text))) {
		doom(ci, "out of memory for its answers");
		return;
	}
	size_t n = strlen(text), need;
	const char *mark = n && text[n - 1] == '\n' ? "...\n" : "\n...\n";
	need = n + strlen(mark);
	if (c->out_len - c->out_off + need > OUT_LIMIT) {
		doom(ci, "it does not read its answers (output buffer full)");
		free(sealed);
		return;
	}
	if (c->out_len + need > c->out_cap) {
		if (c->out_off) { /* reuse what was written */
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + need)
			cap *= 2;
		char *o = cap > c->out_cap ? realloc(c->out, cap) : c->out;
		if (!o) {
			doom(ci, "out of memory for its answers");
			free(sealed);
			return;
		}
		c->out = o;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, text, n);
	memcpy(c->out + c->out_len + n, mark, strlen(mark));
	c->out_len += need;
	free(sealed);
	flush_out(ci);
}

static void send_msgf(int ci, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* send_msg() of a printf-formatted text. */
static void send_msgf(int ci, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc < 0)
		doom(ci, "out of memory for its answers");
	else
		send_msg(ci, text);
	free(text);
}

static void reply_error(int ci, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply_busy(int ci, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Answer @ci "msg: error" with reason @why, quoted, and "code: busy" when @busy (libinccl: INCCL_EBUSY). */
static void reply_why(int ci, int busy, const char *why)
{
	char q[1100];

	send_msgf(ci, "msg: error\nerror: %s\n%s", ctl_quote(why, q, sizeof(q)), busy ? "code: busy\n" : "");
}

/* Answer @ci "msg: error" with the formatted reason. */
static void reply_error(int ci, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	reply_why(ci, 0, why);
}

/* Answer @ci that there is no room now (a switch is full): the formatted reason and "code: busy". */
static void reply_busy(int ci, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	reply_why(ci, 1, why);
}

/* The connection of the switch registered as topology node @node, or -1. */
static int switch_conn(int node)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (ctl.conn[i].kind == C_SWITCH && ctl.conn[i].node == node)
			return i;
	return -1;
}

/* Does communicator @cm (being set up or live) use switch @node? */
static int comm_uses(const struct comm *cm, int node)
{
	for (int k = 0; cm->state != CM_FREE && k < cm->nswitches; k++)
		if (cm->sw[k] == node)
			return 1;
	return 0;
}

/*
 * switch_load() - what the communicators being set up or live hold on switch
 * @node: how many (into @ncomms), their slots (return value), and their ids
 * as ", "-separated text in @ids (@idslen bytes, may be cut).
 */
static unsigned switch_load(int node, int *ncomms, char *ids, size_t idslen)
{
	unsigned slots = 0;
	size_t off = 0;

	*ncomms = 0;
	if (idslen)
		ids[0] = 0;
	for (int i = 0; i < MAX_COMMS; i++)
		if (comm_uses(&ctl.comm[i], node)) {
			slots += ctl.comm[i].nslots;
			++*ncomms;
			if (off < idslen)
				off += (size_t)snprintf(ids + off, idslen - off, "%s%d", off ? ", " : "", ctl.comm[i].id);
		}
	return slots;
}

/*
 * next_comm_id() - the next communicator id whose key (INC_COMM_KEY(), the
 * part in the switches' queue pair numbers) no communicator being set up or
 * live has; 0 when all 4096 are taken.
 */
static int next_comm_id(void)
{
	for (int tries = 0; tries < 4096; tries++) {
		int id = ++ctl.next_comm, clash = 0;
		if (ctl.next_comm >= 0x7fffff00)
			ctl.next_comm = 0;
		for (int i = 0; i < MAX_COMMS && !clash; i++)
			clash = ctl.comm[i].state != CM_FREE && INC_COMM_KEY(ctl.comm[i].id) == INC_COMM_KEY(id);
		if (!clash)
			return id;
	}
	return 0;
}

/* The communicator with id @id, or NULL. */
static struct comm *find_comm(long id)
{
	for (int i = 0; i < MAX_COMMS; i++)
		if (ctl.comm[i].state != CM_FREE && ctl.comm[i].id == id)
			return &ctl.comm[i];
	return NULL;
}

/* The live group with id @id, or NULL (id 0 is never a group's). */
static struct group *find_group(int id)
{
	for (int i = 0; i < MAX_GROUPS; i++)
		if (ctl.group[i].id == id && id)
			return &ctl.group[i];
	return NULL;
}

/*
 * Tell the switches of @cm to drop its rules, and forget it at once: a
 * switch takes its messages in order, so its release comes before any
 * later rules, and its answer needs no wait.
 */
static void release_comm(struct comm *cm, const char *why)
{
	for (int k = 0; k < cm->nswitches; k++) {
		int ci = switch_conn(cm->sw[k]);
		if (ci >= 0)
			send_msgf(ci, "msg: release\ncomm: %d\n", cm->id);
	}
	logf_("communicator %d of group %d %s (%s)", cm->id, cm->group, cm->state == CM_LIVE ? "released" : "abandoned",
	      why);
	memset(cm, 0, sizeof(*cm));
}

/*
 * A switch of live communicator @cm is gone (@why): tell its rank 0 at once
 * ("msg: fault"; libinccl fails the collective in progress on every rank),
 * then release it.
 */
static void comm_fault(struct comm *cm, int node, const char *why)
{
	char text[300], q[400];

	snprintf(text, sizeof(text), "switch %s %s", node_name(node), why);
	send_msgf(cm->owner, "msg: fault\ncomm: %d\nerror: %s\n", cm->id, ctl_quote(text, q, sizeof(q)));
	release_comm(cm, text);
}

/* Forget client @ci's request (its answer was sent, or nobody wants it). */
static void req_clear(struct req *r)
{
	free(r->answer);
	for (int n = 0; n < TOPO_MAX_NODES; n++)
		free(r->part[n]);
	memset(r, 0, sizeof(*r));
}

/*
 * The communicator request of @ci failed: release what its switches took,
 * answer the error, and let the client's next message in.
 */
static void comm_failed(int ci, int busy, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ... @busy: the answer carries "code: busy" (a switch had no room). */
static void comm_failed(int ci, int busy, const char *fmt, ...)
{
	struct req *r = &ctl.conn[ci].req;
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	release_comm(&ctl.comm[r->comm], why);
	req_clear(r);
	reply_why(ci, busy, why);
}

/* Every switch of @ci's communicator accepted its rules: answer. */
static void comm_ready(int ci)
{
	struct req *r = &ctl.conn[ci].req;
	struct comm *cm = &ctl.comm[r->comm];

	cm->state = CM_LIVE;
	send_msg(ci, r->answer);
	logf_("communicator %d of group %d: %d switches, top %s", cm->id, cm->group, cm->nswitches,
	      node_name(cm->sw[cm->nswitches - 1]));
	req_clear(r);
}

/* Answer @ci's counters request with what came; switches still silent are named as such. */
static void counters_done(int ci)
{
	struct req *r = &ctl.conn[ci].req;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f) {
		fprintf(f, "msg: counters\nswitches:\n");
		for (int n = 0; n < ctl.topo->nnodes; n++)
			if (r->part[n])
				fprintf(f, "  %s: %s\n", node_name(n), r->part[n]);
			else if (r->wait[n])
				fprintf(f, "  %s: {error: \"no answer within %d ms\"}\n", node_name(n), COUNTERS_WAIT_MS);
	}
	if (!f || fclose(f) != 0)
		reply_error(ci, "out of memory");
	else
		send_msg(ci, text);
	free(text);
	req_clear(r);
}

/* Read the ranks of a communicator request into @in; -1 after answering the error. */
static int read_ranks(int ci, struct ctl_doc *m, int nranks, struct plan_rank_in *in)
{
	yaml_node_t *seq = ctl_get(m, NULL, "ranks"), *item;
	static int seen[PLAN_MAX_RANKS];
	char err[256];
	int n = 0;

	if (!seq || seq->type != YAML_SEQUENCE_NODE) {
		reply_error(ci, "'ranks' must be a list of {rank, ip, qpn}");
		return -1;
	}
	memset(seen, 0, sizeof(seen));
	for (; (item = ctl_item(m, seq, n)); n++) {
		unsigned long r, qpn;
		uint32_t ip;
		int port;
		const char *a = ctl_str(m, item, "ip");
		if (ctl_uint(m, item, "rank", (unsigned long)nranks - 1, &r, err, sizeof(err)) < 0 ||
		    ctl_uint(m, item, "qpn", 0xffffff, &qpn, err, sizeof(err)) < 0) {
			reply_error(ci, "ranks[%d]: %s", n, err);
			return -1;
		}
		if (!a || ctl_parse_addr(a, 0, &ip, &port) < 0 || strchr(a, ':')) {
			reply_error(ci, "ranks[%d]: 'ip' must be an IPv4 address", n);
			return -1;
		}
		if (seen[r]++) {
			reply_error(ci, "rank %lu is listed twice", r);
			return -1;
		}
		in[r] = (struct plan_rank_in){ ntohl(ip), (uint32_t)qpn };
	}
	if (n != nranks) {
		reply_error(ci, "the group has %d ranks but %d were listed", nranks, n);
		return -1;
	}
	return 0;
}

/* The answer to a communicator request, malloc'd, or NULL when out of memory. */
static char *comm_answer(const struct plan *pl, const struct plan_params *p, int nranks)
{
	char *text = NULL, a[16];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, "msg: ok\ncomm: %u\npsn: %u\nroot: %s\nswitches: [", p->comm, p->host_psn, node_name(pl->root));
	for (int k = 0; k < pl->nswitches; k++)
		fprintf(f, "%s%s", k ? ", " : "", node_name(pl->sw[k].node));
	fprintf(f, "]\nranks:\n");
	for (int r = 0; r < nranks; r++)
		fprintf(f, "  - {rank: %d, switch: %s, switch_ip: %s, switch_qpn: %u}\n", r, node_name(pl->rank[r].leaf),
			topo_ntoa(pl->rank[r].switch_ip, a), pl->rank[r].switch_qpn);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Note in @cm the hosts of its @nranks ranks @in (by their RDMA address). */
static void comm_members(struct comm *cm, const struct plan_rank_in *in, int nranks)
{
	for (int r = 0; r < nranks; r++)
		for (int k = 0; k < ctl.topo->nnodes; k++)
			if (ctl.topo->nodes[k].role == TOPO_HOST && ctl.topo->nodes[k].l3ifs[0].addr.addr == in[r].ip)
				cm->member[k] = 1;
}

/*
 * May connection @ci use communicator @cm? Its owner may; with node keys so
 * may every member host's authenticated connection. Otherwise the refusal
 * is answered and 0 returned.
 */
static int comm_user(int ci, struct comm *cm, unsigned long id)
{
	struct conn *c = &ctl.conn[ci];

	if (cm->owner == ci || (ctl.keys.n && c->who >= 0 && cm->member[c->who]))
		return 1;
	if (ctl.keys.n)
		reply_error(ci, "node %s is not a member of communicator %lu", c->who >= 0 ? node_name(c->who) : "?", id);
	else
		reply_error(ci, "communicator %lu belongs to another connection; only its rank 0 may use or release it", id);
	return 0;
}

/*
 * "msg: communicator": plan it and push the rules to its switches; the
 * answer goes out when every switch accepted (on_switch_answer()), or an
 * error when one refuses, goes away or stays silent (the loop's deadline).
 */
static void on_communicator(int ci, struct ctl_doc *m)
{
	static struct plan_rank_in in[PLAN_MAX_RANKS];
	static struct plan pl;
	struct req *r = &ctl.conn[ci].req;
	unsigned long gid;
	char err[512];
	struct group *g;
	int slot = -1;

	if (ctl_uint(m, NULL, "group", 0x7fffffff, &gid, err, sizeof(err)) < 0) {
		reply_error(ci, "%s", err);
		return;
	}
	if (!(g = find_group((int)gid))) {
		reply_error(ci, "no group %lu (register it with 'msg: group' first)", gid);
		return;
	}
	if (g->owner != ci) {
		reply_error(ci, "group %lu belongs to another connection", gid);
		return;
	}
	if (read_ranks(ci, m, g->nranks, in) < 0)
		return;
	if (ctl.keys.n && (ctl.conn[ci].who < 0 || ctl.topo->nodes[ctl.conn[ci].who].role != TOPO_HOST ||
			   ctl.topo->nodes[ctl.conn[ci].who].l3ifs[0].addr.addr != in[0].ip)) {
		char a[16];
		reply_error(ci, "rank 0 (%s) is not on node %s, the node this connection proved it is", topo_ntoa(in[0].ip, a),
			    node_name(ctl.conn[ci].who));
		return;
	}
	for (int i = 0; i < MAX_COMMS && slot < 0; i++)
		if (ctl.comm[i].state == CM_FREE)
			slot = i;
	if (slot < 0) {
		reply_error(ci, "too many communicators (%d)", MAX_COMMS);
		return;
	}
	struct plan_params p = ctl.defaults;
	if (!(p.comm = (unsigned)next_comm_id())) {
		reply_busy(ci, "all 4096 communicator keys are in use");
		return;
	}
	p.host_psn = (uint32_t)random() & 0xffffff;
	p.link_psn = (uint32_t)random() & 0xffffff;
	if (plan_make(ctl.topo, &p, in, g->nranks, &pl, err, sizeof(err)) < 0) {
		reply_error(ci, "%s", err);
		return;
	}
	for (int k = 0; k < pl.nswitches; k++) {
		int node = pl.sw[k].node, sc = switch_conn(node), ncomms;
		char ids[200];
		if (sc < 0) {
			reply_error(ci, "switch %s is not registered with the controller (is incswitch running there?)",
				    node_name(node));
			goto out;
		}
		unsigned used = switch_load(node, &ncomms, ids, sizeof(ids));
		if (ncomms >= ctl.conn[sc].cap_comms || used + p.nslots > ctl.conn[sc].cap_slots) {
			reply_busy(ci, "switch %s is full: %d communicators (at most %d: %s) hold %u of its %u aggregation "
				   "slots, and a communicator needs %u; try again when one ends", node_name(node), ncomms,
				   ctl.conn[sc].cap_comms, ncomms ? ids : "none", used, ctl.conn[sc].cap_slots, p.nslots);
			goto out;
		}
	}
	if (!(r->answer = comm_answer(&pl, &p, g->nranks))) {
		reply_error(ci, "out of memory");
		goto out;
	}
	struct comm *cm = &ctl.comm[slot];
	*cm = (struct comm){ .state = CM_SETUP, .id = (int)p.comm, .group = g->id, .owner = ci, .nslots = p.nslots };
	comm_members(cm, in, g->nranks);
	r->kind = R_COMM;
	r->seq = ++ctl.next_seq;
	r->comm = slot;
	r->deadline = ctl_now_ms() + (uint64_t)ctl.switch_wait_ms;
	for (int k = 0; k < pl.nswitches; k++) { /* post-order: the root last */
		int node = pl.sw[k].node;
		cm->sw[cm->nswitches++] = node;
		r->wait[node] = 1;
		r->nwait++;
		send_msg(switch_conn(node), pl.sw[k].rules);
	}
	logf_("communicator %u of group %d: %d ranks, %d switches, top %s, PSN %u: rules sent", p.comm, g->id, g->nranks,
	      pl.nswitches, node_name(pl.root), p.host_psn);
out:
	plan_free(&pl);
}

/*
 * "msg: counters": ask every registered switch, or with "comm: N" the
 * switches of communicator N for its counters; counters_done() answers.
 */
static void on_counters(int ci, struct ctl_doc *m)
{
	struct req *r = &ctl.conn[ci].req;
	unsigned long id = 0;
	struct comm *cm = NULL;
	char err[256], ask[64];

	if (ctl_get(m, NULL, "comm")) {
		if (ctl_uint(m, NULL, "comm", 0x7fffffff, &id, err, sizeof(err)) < 0) {
			reply_error(ci, "counters: %s", err);
			return;
		}
		if (!(cm = find_comm((long)id))) {
			reply_error(ci, "counters: no communicator %lu", id);
			return;
		}
	}
	snprintf(ask, sizeof(ask), id ? "msg: counters\ncomm: %lu\n" : "msg: counters\n", id);
	r->kind = R_COUNTERS;
	r->seq = ++ctl.next_seq;
	r->deadline = ctl_now_ms() + COUNTERS_WAIT_MS;
	for (int si = 0; si < MAX_CONNS; si++) {
		struct conn *s = &ctl.conn[si];
		if (s->kind != C_SWITCH || s->node < 0 || s->doomed || (cm && !comm_uses(cm, s->node)))
			continue;
		if (s->nowed == COUNTERS_FIFO) {
			r->part[s->node] = strdup("{error: \"too many counters requests waiting for it\"}");
			continue;
		}
		s->owed[s->nowed].client = ci;
		s->owed[s->nowed++].seq = r->seq;
		r->wait[s->node] = 1;
		r->nwait++;
		send_msg(si, ask);
	}
	if (!r->nwait)
		counters_done(ci);
}

/* A group for @ci of the size "msg: group" asks. */
static void on_group(int ci, struct ctl_doc *m)
{
	struct conn *c = &ctl.conn[ci];
	struct group *g = NULL;
	unsigned long v;
	char err[256];

	for (int i = 0; i < MAX_GROUPS && !g; i++)
		if (!ctl.group[i].id)
			g = &ctl.group[i];
	if (ctl_uint(m, NULL, "nranks", PLAN_MAX_RANKS, &v, err, sizeof(err)) < 0)
		reply_error(ci, "group: %s", err);
	else if (v < 1)
		reply_error(ci, "group: 'nranks' must be at least 1");
	else if ((int)v > ctl.topo->nhosts)
		reply_error(ci, "group of %lu ranks, but topology '%s' has %d hosts", v, ctl.topo->name, ctl.topo->nhosts);
	else if (c->ngroups >= MAX_CONN_GROUPS)
		reply_error(ci, "this connection holds %d groups already (at most %d)", c->ngroups, MAX_CONN_GROUPS);
	else if (!g)
		reply_error(ci, "too many groups (%d)", MAX_GROUPS);
	else {
		*g = (struct group){ ++ctl.next_group, (int)v, ci };
		c->ngroups++;
		send_msgf(ci, "msg: ok\ngroup: %d\n", g->id);
		logf_("group %d: %d ranks, from %s", g->id, g->nranks, c->peer);
	}
}

/* "msg: release": only the connection that made a communicator may release it. */
static void on_release(int ci, struct ctl_doc *m)
{
	unsigned long v;
	char err[256];
	struct comm *cm;

	if (ctl_uint(m, NULL, "comm", 0x7fffffff, &v, err, sizeof(err)) < 0)
		reply_error(ci, "release: %s", err);
	else if (!(cm = find_comm((long)v)) || cm->state != CM_LIVE)
		reply_error(ci, "no communicator %lu", v);
	else if (ctl.keys.n && !comm_user(ci, cm, v))
		; /* not a member: refused */
	else if (cm->owner != ci)
		reply_error(ci, "communicator %lu belongs to another connection; only its rank 0 may release it", v);
	else {
		release_comm(cm, "released by its group");
		send_msgf(ci, "msg: ok\ncomm: %lu\n", v);
	}
}

/* "msg: comm": what communicator N is (its members may ask): state, group, switches. */
static void on_comm_query(int ci, struct ctl_doc *m)
{
	unsigned long v;
	char err[256], *text = NULL;
	size_t len = 0;
	struct comm *cm;

	if (ctl_uint(m, NULL, "comm", 0x7fffffff, &v, err, sizeof(err)) < 0) {
		reply_error(ci, "comm: %s", err);
		return;
	}
	if (!(cm = find_comm((long)v))) {
		reply_error(ci, "no communicator %lu", v);
		return;
	}
	if (!comm_user(ci, cm, v))
		return;
	FILE *f = open_memstream(&text, &len);
	if (f) {
		fprintf(f, "msg: ok\ncomm: %d\ngroup: %d\nstate: %s\nswitches: [", cm->id, cm->group,
			cm->state == CM_LIVE ? "live" : "setup");
		for (int k = 0; k < cm->nswitches; k++)
			fprintf(f, "%s%s", k ? ", " : "", node_name(cm->sw[k]));
		fprintf(f, "]\n");
	}
	if (!f || fclose(f) != 0)
		reply_error(ci, "out of memory");
	else
		send_msg(ci, text);
	free(text);
}

/* One message from a client (rank 0 of a group, or a tool). */
static void on_client(int ci, const char *text)
{
	struct ctl_doc m;
	char err[512];

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		reply_error(ci, "bad message: %s", err);
		return;
	}
	if (!strcmp(m.kind, "group"))
		on_group(ci, &m);
	else if (!strcmp(m.kind, "communicator"))
		on_communicator(ci, &m);
	else if (!strcmp(m.kind, "release"))
		on_release(ci, &m);
	else if (!strcmp(m.kind, "counters"))
		on_counters(ci, &m);
	else if (!strcmp(m.kind, "comm"))
		on_comm_query(ci, &m);
	else
		reply_error(ci, "unknown message '%.40s' (group, communicator, release, comm, counters)", m.kind);
	ctl_doc_free(&m);
}

/*
 * Drop switch @node's part in every request waiting for it: a communicator
 * request fails with @why; a counters request counts it as silent.
 */
static void forget_switch(int node, const char *why)
{
	for (int ci = 0; ci < MAX_CONNS; ci++) {
		struct req *r = &ctl.conn[ci].req;
		if (ctl.conn[ci].kind != C_CLIENT || r->kind == R_NONE || !r->wait[node])
			continue;
		if (r->kind == R_COMM) {
			comm_failed(ci, 0, "switch %s %s", node_name(node), why);
		} else if (!r->part[node]) {
			char q[300];
			if (asprintf(&r->part[node], "{error: %s}", ctl_quote(why, q, sizeof(q))) < 0)
				r->part[node] = NULL; /* then it shows as silent */
			if (--r->nwait == 0)
				counters_done(ci);
		}
	}
}

/*
 * switch_gone() - switch @node went away or restarted (@why): requests
 * waiting for it are answered, and every live communicator it served is
 * faulted (comm_fault()); the others go on.
 */
static void switch_gone(int node, const char *why)
{
	forget_switch(node, why);
	for (int i = 0; i < MAX_COMMS; i++)
		if (ctl.comm[i].state == CM_LIVE && comm_uses(&ctl.comm[i], node))
			comm_fault(&ctl.comm[i], node, why);
}

/* "ok"/"error" with "comm: N" from switch @node: its answer to rules (a release's is not awaited). */
static void on_switch_answer(int node, struct ctl_doc *m)
{
	unsigned long id;
	char err[256];
	struct comm *cm;

	if (ctl_uint(m, NULL, "comm", 0x7fffffff, &id, err, sizeof(err)) < 0 || !(cm = find_comm((long)id)) ||
	    cm->state != CM_SETUP)
		return; /* the answer to a release, or to a request given up on */
	struct req *r = &ctl.conn[cm->owner].req;
	if (r->kind != R_COMM || &ctl.comm[r->comm] != cm || !r->wait[node])
		return;
	if (!strcmp(m->kind, "error")) {
		const char *why = ctl_str(m, NULL, "error"), *code = ctl_str(m, NULL, "code");
		comm_failed(cm->owner, code && !strcmp(code, "busy"), "switch %s refused the rules: %s", node_name(node),
			    why ? why : "(no reason)");
		return;
	}
	r->wait[node] = 0;
	if (--r->nwait == 0)
		comm_ready(cm->owner);
}

/* Is @s a counters key a switch may send (letters, digits, '_')? Anything else is not written back. */
static int counter_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= 48 || !(isalnum((unsigned char)s[n]) || s[n] == '_'))
			return 0;
	return n > 0;
}

/* Is @s 1..20 decimal digits and nothing else (a counter's value as a switch may report it)? */
static int number_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= 20 || !isdigit((unsigned char)s[n]))
			return 0;
	return n > 0;
}

/*
 * "msg: counters" from switch connection @si: the answer to the oldest
 * counters request it owes. Only names and numbers are copied into the
 * client's answer; anything else is counted as "invalid".
 */
static void on_switch_counters(int si, struct ctl_doc *m)
{
	struct conn *s = &ctl.conn[si];
	char *text = NULL;
	size_t len = 0;

	if (!s->nowed)
		return; /* nobody asked */
	int ci = s->owed[0].client;
	uint64_t seq = s->owed[0].seq;
	memmove(&s->owed[0], &s->owed[1], sizeof(s->owed[0]) * (size_t)--s->nowed);
	struct req *r = &ctl.conn[ci].req;
	if (ctl.conn[ci].kind != C_CLIENT || r->kind != R_COUNTERS || r->seq != seq || !r->wait[s->node] ||
	    r->part[s->node])
		return; /* a request answered already (its deadline passed) */
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return;
	yaml_node_t *cs = ctl_get(m, NULL, "counters");
	const char *comm = ctl_str(m, NULL, "comm");
	int invalid = 0;
	fprintf(f, "{comm: %s", comm && number_ok(comm) ? comm : "0");
	for (yaml_node_pair_t *p = cs && cs->type == YAML_MAPPING_NODE ? cs->data.mapping.pairs.start : NULL;
	     p && p < cs->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&m->doc, p->key), *v = yaml_document_get_node(&m->doc, p->value);
		if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
		    counter_name_ok((const char *)k->data.scalar.value) && number_ok((const char *)v->data.scalar.value))
			fprintf(f, ", %s: %s", k->data.scalar.value, v->data.scalar.value);
		else
			invalid++;
	}
	if (invalid)
		fprintf(f, ", invalid: %d", invalid);
	fprintf(f, "}");
	if (fclose(f) == 0) {
		r->part[s->node] = text;
		text = NULL;
	}
	free(text);
	if (--r->nwait == 0)
		counters_done(ci);
}

/* One message from a switch: its registration, or an answer. */
static void on_switch(int ci, const char *text)
{
	struct conn *c = &ctl.conn[ci];
	struct ctl_doc m;
	char err[512];

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		reply_error(ci, "bad message: %s", err);
		return;
	}
	if (!strcmp(m.kind, "register")) {
		/* a switch that does not say what it holds: one communicator of the default size */
		unsigned long comms = 1, slots = ctl.defaults.nslots;
		const char *name = ctl_str(&m, NULL, "switch");
		int n = name ? topo_find(ctl.topo, name) : -1;
		if (!name)
			reply_error(ci, "register: 'switch: NAME' is missing");
		else if (n < 0 || ctl.topo->nodes[n].role != TOPO_SWITCH)
			reply_error(ci, "'%s' is not a switch of topology '%s'", name, ctl.topo->name);
		else if (c->node >= 0 && c->node != n)
			reply_error(ci, "this connection is registered as %s already", node_name(c->node));
		else if (ctl.keys.n && c->who != n) {
			reply_error(ci, "this connection proved it is node %s, not switch %s", node_name(c->who), name);
			logf_("switch registration as %s refused from %s: it proved it is %s", name, c->peer, node_name(c->who));
			doom(ci, "registered under another node's name");
		} else if (ctl_get(&m, NULL, "comms") &&
			 ctl_uint(&m, NULL, "comms", MAX_COMMS, &comms, err, sizeof(err)) < 0)
			reply_error(ci, "register: %s", err);
		else if (ctl_get(&m, NULL, "slots") &&
			 ctl_uint(&m, NULL, "slots", 0xffffffff, &slots, err, sizeof(err)) < 0)
			reply_error(ci, "register: %s", err);
		else if (comms < 1 || slots < 1)
			reply_error(ci, "register: a switch that holds no communicator or no slot is of no use");
		else {
			int old = switch_conn(n);
			if (old >= 0 && old != ci) { /* the switch restarted: its old connection is dead */
				doom(old, "the switch registered again on a new connection");
				ctl.conn[old].node = -1;
				switch_gone(n, "restarted");
			}
			c->node = n;
			c->cap_comms = (int)comms;
			c->cap_slots = (unsigned)slots;
			send_msgf(ci, "msg: ok\nswitch: %s\n", name);
			logf_("switch %s registered from %s (%d communicators, %u slots)", name, c->peer, c->cap_comms,
			      c->cap_slots);
		}
	} else if (c->node < 0) {
		reply_error(ci, "register first ('msg: register', 'switch: NAME')");
	} else if (!strcmp(m.kind, "ok") || !strcmp(m.kind, "error")) {
		on_switch_answer(c->node, &m);
	} else if (!strcmp(m.kind, "counters")) {
		on_switch_counters(ci, &m);
	} else {
		reply_error(ci, "unknown message '%.40s' from a switch (register, ok, error, counters)", m.kind);
	}
	ctl_doc_free(&m);
}

/* Close @ci now: what it held is released, requests waiting for it are answered. */
static void drop_conn(int ci, const char *why)
{
	struct conn *c = &ctl.conn[ci];

	if (c->kind == C_SWITCH && c->node >= 0) {
		int node = c->node;
		char gone[200]; /* how, for the ranks too: "went away (closed its connection)" */
		snprintf(gone, sizeof(gone), "went away (%s)", why);
		logf_("switch %s %s", node_name(node), gone);
		c->node = -1; /* no release can reach it */
		switch_gone(node, gone);
	} else if (c->kind == C_CLIENT && (c->ngroups || c->req.kind != R_NONE)) {
		logf_("client %s went away (%s)", c->peer, why);
	} else {
		logf_("connection from %s closed (%s)", c->peer, why);
	}
	req_clear(&c->req);
	for (int i = 0; i < MAX_COMMS; i++) /* also one being set up: its rules may be on some switches */
		if (ctl.comm[i].state != CM_FREE && ctl.comm[i].owner == ci)
			release_comm(&ctl.comm[i], "its group's connection closed");
	for (int i = 0; i < MAX_GROUPS; i++)
		if (ctl.group[i].id && ctl.group[i].owner == ci) {
			logf_("group %d ended", ctl.group[i].id);
			memset(&ctl.group[i], 0, sizeof(ctl.group[i]));
		}
	close(c->fd);
	ctl_buf_free(&c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->kind = C_FREE;
}

/* Accept one connection on @lfd; refused (with a reason it may read) when a limit is reached. */
static void accept_on(int lfd, enum conn_kind kind)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK), i, same = 0, sndbuf = SNDBUF;
	uint32_t addr;
	char a[16], why[128];

	if (fd < 0)
		return;
	addr = ntohl(sa.sin_addr.s_addr);
	for (i = 0; i < MAX_CONNS; i++)
		same += ctl.conn[i].kind != C_FREE && ctl.conn[i].addr == addr;
	for (i = 0; i < MAX_CONNS && ctl.conn[i].kind != C_FREE; i++)
		;
	if (i == MAX_CONNS || same >= MAX_PEER_CONNS) {
		int k = snprintf(why, sizeof(why), "msg: error\nerror: \"too many connections%s\"\n...\n",
				 i == MAX_CONNS ? "" : " from this address");
		if (send(fd, why, (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
			/* it learns from the closed connection */
		}
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	ctl_keepalive(fd); /* a switch or rank 0 whose machine vanished is dropped within CTL_DEAD_MS */
	ctl.conn[i] = (struct conn){ .kind = kind, .fd = fd, .addr = addr, .node = -1, .who = -1, .last_ms = ctl_now_ms() };
	snprintf(ctl.conn[i].peer, sizeof(ctl.conn[i].peer), "%s:%u", topo_ntoa(addr, a), ntohs(sa.sin_port));
	if (ctl.keys.n) { /* who is it? (admit() takes the answer) */
		char text[160];
		ctl_auth_challenge(&ctl.conn[i].auth, text, sizeof(text));
		send_msg(i, text);
	}
}

/*
 * With node keys: the first message of @ci must prove which node it is
 * ("msg: auth" answering the challenge sent at accept); every later one must
 * open (ctlauth.h). Returns 1 when @msg is for the dispatch, 0 when it was
 * the handshake or was refused (and @ci doomed).
 */
static int admit(int ci, char *msg)
{
	struct conn *c = &ctl.conn[ci];
	const char *want = c->kind == C_SWITCH ? "switch" : "client";
	char err[256];
	struct ctl_doc m;

	if (!ctl.keys.n)
		return 1;
	if (c->auth.on) {
		if (ctl_auth_open(&c->auth, msg) == 0)
			return 1;
		logf_("message from %s (node %s) refused: %s", c->peer, node_name(c->who), c->auth.err);
		reply_error(ci, "%s", c->auth.err);
		doom(ci, "a message failed authentication");
		return 0;
	}
	if (ctl_parse(msg, &m, err, sizeof(err)) < 0 || strcmp(m.kind, "auth")) {
		snprintf(err, sizeof(err), "authenticate first: answer the challenge with 'msg: auth'");
	} else {
		const char *name = ctl_str(&m, NULL, "node"), *role = ctl_str(&m, NULL, "role");
		int n = name ? topo_find(ctl.topo, name) : -1;
		if (role && strcmp(role, want))
			snprintf(err, sizeof(err), "role '%.20s' on the %s port", role, want);
		else if (name && n < 0)
			snprintf(err, sizeof(err), "'%.60s' is not a node of topology '%s'", name, ctl.topo->name);
		else if (ctl_auth_verify(&c->auth, ctl_keytab_find(&ctl.keys, name), name, role, ctl_str(&m, NULL, "mac"),
					 err, sizeof(err)) == 0) {
			c->who = n;
			send_msgf(ci, "msg: welcome\nnode: %s\n", node_name(n)); /* sealed */
			ctl_doc_free(&m);
			return 0;
		}
	}
	if (m.root)
		ctl_doc_free(&m);
	logf_("authentication refused from %s: %s", c->peer, err);
	reply_error(ci, "%s", err);
	doom(ci, "not authenticated");
	return 0;
}

/*
 * Take @ci's complete messages, one at a time, while it has no request
 * waiting for switches; note when an unfinished one is left.
 */
static void take_input(int ci)
{
	struct conn *c = &ctl.conn[ci];
	char *msg;
	int rc = CTL_OK;

	while (!c->doomed && c->req.kind == R_NONE && (msg = ctl_next(&c->in, &rc))) {
		c->last_ms = ctl_now_ms();
		c->partial_ms = 0;
		if (!admit(ci, msg))
			;
		else if (c->kind == C_SWITCH)
			on_switch(ci, msg);
		else
			on_client(ci, msg);
		free(msg);
	}
	if (rc < 0 && !c->doomed) {
		reply_error(ci, "%s", ctl_strerror(rc));
		doom(ci, ctl_strerror(rc));
	}
	if (c->req.kind == R_NONE && ctl_buffered(&c->in) && !c->partial_ms)
		c->partial_ms = ctl_now_ms();
}

/* Read what @ci sent, take its messages. */
static void on_readable(int ci)
{
	int rc = ctl_feed(&ctl.conn[ci].in, ctl.conn[ci].fd);

	if (rc < 0)
		doom(ci, ctl_gone_strerror(rc)); /* the same words as libinccl's for a rank gone */
	else
		take_input(ci);
}

/*
 * The loop's timers: requests past their deadline are answered, idle and
 * unfinished connections doomed. Returns the ms until the next deadline
 * (at most 1000).
 */
static int run_timers(uint64_t now)
{
	uint64_t next = now + 1000;

	for (int ci = 0; ci < MAX_CONNS; ci++) {
		struct conn *c = &ctl.conn[ci];
		struct req *r = &c->req;
		if (c->kind == C_FREE || c->doomed)
			continue;
		if (r->kind != R_NONE && now >= r->deadline) {
			int node = 0;
			while (node < ctl.topo->nnodes && !(r->wait[node] && !r->part[node]))
				node++;
			if (r->kind == R_COMM)
				comm_failed(ci, 0, "switch %s did not answer within %d ms", node < ctl.topo->nnodes ? node_name(node) : "?",
					    ctl.switch_wait_ms);
			else
				counters_done(ci);
		}
		if (r->kind != R_NONE && r->deadline < next)
			next = r->deadline;
		int holds = (c->kind == C_SWITCH && c->node >= 0) || c->ngroups || r->kind != R_NONE;
		uint64_t idle_at = holds ? UINT64_MAX : c->last_ms + (uint64_t)ctl.idle_ms;
		uint64_t partial_at = c->partial_ms ? c->partial_ms + (uint64_t)ctl.idle_ms : UINT64_MAX;
		if (ctl.keys.n && !c->auth.on && idle_at > c->last_ms + CTL_AUTH_MS)
			idle_at = c->last_ms + CTL_AUTH_MS; /* it has not said who it is */
		if (now >= idle_at)
			doom(ci, c->auth.on || !ctl.keys.n ? "idle, holding nothing" : "did not authenticate in time");
		else if (now >= partial_at)
			doom(ci, "a message left unfinished");
		if (idle_at < next)
			next = idle_at;
		if (partial_at < next)
			next = partial_at;
	}
	return next > now ? (int)(next - now) : 0;
}

/* The usage message on stderr; returns 2, the exit code for bad arguments. */
static int usage(void)
{
	fprintf(stderr, "usage: incctl -t TOPOLOGY.yaml [-s SWITCH_PORT] [-g GROUP_PORT] [-S NSLOTS] [-R RETRANSMIT_US]\n"
			"              [-W SWITCH_WAIT_MS] [-I IDLE_MS] [-K NODE_KEYS | -K none]\n"
			"       incctl -Q CONTROLLER[:PORT] [-n NODE [-k KEY_FILE]]   (print the switches' counters)\n"
			"       incctl -G KEY_FILE            (make a new random key, mode 0600)\n"
			"       (port 0: the kernel picks one; the first line logged names the ports bound;\n"
			"        NODE_KEYS: 'NODE KEY' lines, default " CTL_KEY_TABLE_FILE " when it exists;\n"
			"        KEY_FILE default " CTL_NODE_KEY_FILE ")\n");
	return 2;
}

/* The local TCP port socket @fd is bound to, or -1. */
static int bound_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sin_family != AF_INET)
		return -1;
	return ntohs(sa.sin_port);
}

/* NODE= of a lab node's node.conf into @out (this node's name), or -1. */
static int conf_node(char *out, size_t outlen)
{
	FILE *f = fopen(NODE_CONF, "r");
	char line[256];
	int rc = -1;

	while (f && rc < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, "NODE=", 5)) {
			line[strcspn(line, "\r\n")] = 0;
			snprintf(out, outlen, "%.60s", line + 5);
			rc = *out ? 0 : -1;
		}
	if (f)
		fclose(f);
	return rc;
}

/*
 * -Q: ask a running controller for the counters of every switch; print the
 * answer. With @node (-n; on a lab node that has a key, NODE of its
 * node.conf), prove first to be that node with key file @keyf.
 */
static int query(const char *addr, const char *keyf, const char *node)
{
	struct ctl_buf in = { 0 };
	struct ctl_auth au = { 0 };
	unsigned char key[CTL_KEY_BYTES];
	char *ans, err[300];
	int fd, rc;

	static char conf[64];

	if (!node && access(keyf, F_OK) == 0 && conf_node(conf, sizeof(conf)) == 0)
		node = conf;
	if (node && ctl_key_load(keyf, key, err, sizeof(err)) < 0) {
		fprintf(stderr, "incctl: %s\n", err);
		return 1;
	}
	if ((fd = ctl_connect(addr, CTL_PORT_GROUP, 5000)) < 0) {
		fprintf(stderr, "incctl: cannot reach the controller at %s: %s\n", addr, strerror(errno));
		return 1;
	}
	if (node && ctl_auth_client(&au, fd, &in, key, node, "client", 5000, err, sizeof(err)) < 0) {
		fprintf(stderr, "incctl: controller %s: %s\n", addr, err);
		close(fd);
		return 1;
	}
	if ((rc = ctl_asend(&au, fd, "msg: counters\n", 5000)) < 0 ||
	    (rc = ctl_arecv(&au, fd, &in, COUNTERS_WAIT_MS + 5000, &ans)) < 0) {
		fprintf(stderr, "incctl: controller %s: %s\n", addr, rc == CTL_EAUTH ? au.err : ctl_strerror(rc));
		close(fd);
		return 1;
	}
	if (!node && !strncmp(ans, "msg: challenge", 14)) {
		fprintf(stderr, "incctl: controller %s asks who this is: give -n NODE [-k KEY_FILE]\n", addr);
		free(ans);
		close(fd);
		return 1;
	}
	fputs(ans, stdout);
	free(ans);
	ctl_buf_free(&in);
	close(fd);
	return 0;
}

/* A whole decimal number in [@lo, @hi] from option text @s, or -1. */
static long opt_num(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v < lo || v > hi ? -1 : v;
}

int main(int argc, char **argv)
{
	const char *topo_path = NULL, *qaddr = NULL, *keyf = CTL_NODE_KEY_FILE, *qnode = NULL, *keytab = NULL;
	char err[300];
	long sport = CTL_PORT_SWITCH, gport = CTL_PORT_GROUP, nslots = 8192, rto = 200000;
	static struct pollfd pfd[MAX_CONNS + 2];
	static int idx[MAX_CONNS + 2];
	int opt;

	/* 8192 slots: with 1024, slots still waiting for a slow TCG guest's ACK were
	 * busy when their PSN came round again, and each RNR NAK made the host's
	 * rxe resend its whole window (lab, 4 MiB tree AllReduce: 1,941 RNR NAKs,
	 * 44,527 out-of-sequence drops; none with 8192) */
	ctl.switch_wait_ms = SWITCH_WAIT_MS;
	ctl.idle_ms = IDLE_MS;
	while ((opt = getopt(argc, argv, "t:s:g:S:R:W:I:Q:K:k:n:G:")) != -1) {
		switch (opt) {
		case 'Q': qaddr = optarg; break;
		case 'k': keyf = optarg; break;
		case 'n': qnode = optarg; break;
		case 'K': keytab = optarg; break;
		case 'G':
			if (!strcmp(optarg, "-")) { /* a job's key, for a launcher to hand to its ranks */
				unsigned char key[CTL_KEY_BYTES];
				char hex[2 * CTL_KEY_BYTES + 1];
				if (ctl_auth_init() < 0)
					return 1;
				ctl_key_new(key);
				puts(ctl_key_hex(key, hex));
				ctl_key_wipe(key);
				return 0;
			}
			if (ctl_key_make(optarg, err, sizeof(err)) < 0) {
				fprintf(stderr, "incctl: %s\n", err);
				return 1;
			}
			return 0;
		case 't': topo_path = optarg; break;
		case 's': sport = opt_num(optarg, 0, 65535); break;
		case 'g': gport = opt_num(optarg, 0, 65535); break;
		case 'S': nslots = opt_num(optarg, 16, 1 << 20); break;
		case 'R': rto = opt_num(optarg, 1000, 60000000); break;
		case 'W': ctl.switch_wait_ms = (int)opt_num(optarg, 100, 600000); break;
		case 'I': ctl.idle_ms = (int)opt_num(optarg, 100, 3600000); break;
		default: return usage();
		}
	}
	if (ctl_auth_init() < 0) {
		fprintf(stderr, "incctl: libsodium does not initialise\n");
		return 1;
	}
	if (qaddr && optind == argc)
		return query(qaddr, keyf, qnode);
	if (!topo_path || optind != argc || sport < 0 || gport < 0 || nslots < 0 || rto < 0 || ctl.switch_wait_ms < 0 ||
	    ctl.idle_ms < 0)
		return usage();
	ctl.defaults = (struct plan_params){ .nslots = (unsigned)nslots, .retransmit_us = (unsigned)rto, .rnr_timer = 1 };
	if (!(ctl.topo = topo_load(topo_path, stderr)))
		return 1;
	if (!keytab && access(CTL_KEY_TABLE_FILE, F_OK) == 0)
		keytab = CTL_KEY_TABLE_FILE;
	if (keytab && strcmp(keytab, "none") && ctl_keytab_load(keytab, &ctl.keys, err, sizeof(err)) < 0) {
		fprintf(stderr, "incctl: node keys: %s\n", err);
		return 1;
	}
	if (keytab && strcmp(keytab, "none") && !ctl.keys.n) {
		fprintf(stderr, "incctl: node keys: %s holds no key\n", keytab);
		return 1;
	}
	int ls = ctl_listen((int)sport), lg = ctl_listen((int)gport);
	if (ls < 0 || lg < 0) {
		fprintf(stderr, "incctl: cannot listen on TCP %ld and %ld: %s\n", sport, gport, strerror(errno));
		return 1;
	}
	sport = bound_port(ls);
	gport = bound_port(lg);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	srandom((unsigned)ctl_now_ms() ^ (unsigned)getpid());
	logf_("topology '%s' (%d nodes, %d hosts); switches on TCP %ld, groups on TCP %ld", ctl.topo->name,
	      ctl.topo->nnodes, ctl.topo->nhosts, sport, gport);
	if (ctl.keys.n)
		logf_("authentication on: %d node keys from %s", ctl.keys.n, keytab);
	else
		logf_("authentication OFF: any peer may claim to be any node (give -K NODE_KEYS)");
	while (!stop) {
		int n = 0, wait_ms = run_timers(ctl_now_ms());
		for (int i = 0; i < MAX_CONNS; i++) { /* messages that waited for an answer now given */
			struct conn *c = &ctl.conn[i];
			if (c->kind != C_FREE && !c->doomed && c->req.kind == R_NONE && ctl_buffered(&c->in))
				take_input(i);
		}
		for (int i = 0; i < MAX_CONNS; i++)
			if (ctl.conn[i].kind != C_FREE && ctl.conn[i].doomed)
				drop_conn(i, ctl.conn[i].doomed);
		pfd[n] = (struct pollfd){ ls, POLLIN, 0 }, idx[n++] = -1;
		pfd[n] = (struct pollfd){ lg, POLLIN, 0 }, idx[n++] = -2;
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &ctl.conn[i];
			if (c->kind == C_FREE)
				continue;
			short ev = ctl_buffered(&c->in) < CTL_MSG_MAX ? POLLIN : 0; /* full: wait until it is taken */
			if (c->out_len > c->out_off)
				ev |= POLLOUT;
			pfd[n] = (struct pollfd){ c->fd, ev, 0 }, idx[n++] = i;
		}
		if (poll(pfd, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < n; k++) {
			struct conn *c = idx[k] >= 0 ? &ctl.conn[idx[k]] : NULL;
			if (!pfd[k].revents)
				continue;
			if (idx[k] == -1)
				accept_on(ls, C_SWITCH);
			else if (idx[k] == -2)
				accept_on(lg, C_CLIENT);
			else if (c->kind != C_FREE && c->fd == pfd[k].fd && !c->doomed) {
				if (pfd[k].revents & POLLOUT)
					flush_out(idx[k]);
				if (pfd[k].revents & POLLIN)
					on_readable(idx[k]);
				else if (pfd[k].revents & (POLLHUP | POLLERR)) /* also when its input is full */
					doom(idx[k], "connection lost");
			}
		}
		for (int i = 0; i < MAX_CONNS; i++)
			if (ctl.conn[i].kind != C_FREE && ctl.conn[i].doomed)
				drop_conn(i, ctl.conn[i].doomed);
	}
	for (int i = 0; i < MAX_COMMS; i++)
		if (ctl.comm[i].state != CM_FREE)
			release_comm(&ctl.comm[i], "the controller stops");
	for (int i = 0; i < MAX_CONNS; i++) /* what the sockets take now; nobody waits at exit */
		if (ctl.conn[i].kind != C_FREE)
			flush_out(i);
	logf_("stopped");
	ctl_keytab_free(&ctl.keys);
	topo_free(ctl.topo);
	return 0;
}
