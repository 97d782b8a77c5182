/*
 * incctl — the inclab controller.
 *
 *   incctl -t TOPOLOGY.yaml [-s SWITCH_PORT] [-g GROUP_PORT] [-S NSLOTS] [-R RETRANSMIT_US]
 *   incctl -Q CONTROLLER[:PORT]     print every registered switch's counters (YAML)
 *
 * A port of 0 lets the kernel pick a free one; the first line logged names
 * the ports bound ("switches on TCP S, groups on TCP G"), once both listen
 * (tests/unit/test_ctl.c waits for it).
 *
 * Reads the topology (topology/topo.c, libyaml), then serves two kinds of
 * TCP connections, each carrying the YAML messages of controller/ctlmsg.h:
 *  - switches (port 52311) register under their topology name and take the
 *    rules pushed to them;
 *  - rank 0 of a group (port 52200) registers the group and asks for
 *    communicators: the controller finds the ranks' hosts, computes the
 *    aggregation tree and every switch's rules (plan.c), pushes them, waits
 *    for every switch to accept, and answers with each rank's switch end.
 * A communicator lives until rank 0 releases it or its connection closes;
 * then its switches are told to drop the rules. A switch serves one
 * communicator at a time: a second one that needs it is refused with a
 * clear error instead of disturbing the first. Every bad message gets
 * "msg: error" with the reason; nothing a client sends stops the controller.
 * One line is logged per registration, group and communicator.
 */
#include <arpa/inet.h>
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
#include "ctlmsg.h"
#include "plan.h"

#define MAX_CONNS 256
#define MAX_GROUPS 256
#define MAX_COMMS 256
#define REPLY_MS 5000        /* to send one message */
#define SWITCH_ACCEPT_MS 30000 /* a switch resolves its neighbours' MACs before it accepts rules */

enum conn_kind { C_FREE, C_SWITCH, C_CLIENT };

struct conn {
	enum conn_kind kind;
	int fd;
	struct ctl_buf in;
	int node;                /* switches: topology node once registered, else -1 */
	char peer[64];
};

struct group {
	int id, nranks, owner;   /* owner: index into conns */
};

struct comm {
	int id, group, owner;
	int nswitches;
	int sw[TOPO_MAX_NODES];  /* topology nodes serving it */
};

static struct {
	struct topology *topo;
	struct plan_params defaults;
	struct conn conn[MAX_CONNS];
	struct group group[MAX_GROUPS];
	struct comm comm[MAX_COMMS];
	int next_group, next_comm;
} ctl;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

static int reply_error(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Answer "msg: error" with the formatted reason; returns -1 for the caller's convenience. */
static int reply_error(int fd, const char *fmt, ...)
{
	char why[512], q[1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ctl_sendf(fd, REPLY_MS, "msg: error\nerror: %s\n", ctl_quote(why, q, sizeof(q)));
	return -1;
}

/* The connection of the switch registered as topology node @node, or -1. */
static int switch_conn(int node)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (ctl.conn[i].kind == C_SWITCH && ctl.conn[i].node == node)
			return i;
	return -1;
}

/* The live communicator served by switch @node, or NULL. */
static struct comm *comm_on_switch(int node)
{
	for (int i = 0; i < MAX_COMMS; i++)
		for (int k = 0; ctl.comm[i].id && k < ctl.comm[i].nswitches; k++)
			if (ctl.comm[i].sw[k] == node)
				return &ctl.comm[i];
	return NULL;
}

static struct group *find_group(int id)
{
	for (int i = 0; i < MAX_GROUPS; i++)
		if (ctl.group[i].id == id && id)
			return &ctl.group[i];
	return NULL;
}

/*
 * Wait for the answer of switch connection @ci to a message about
 * communicator @comm: 0 when it says ok, -1 with its reason in @err.
 */
static int await_switch(int ci, unsigned comm, char *err, size_t errlen)
{
	struct conn *c = &ctl.conn[ci];
	uint64_t deadline = ctl_now_ms() + SWITCH_ACCEPT_MS;

	for (;;) {
		char *text, perr[256];
		struct ctl_doc m;
		unsigned long got = 0;
		uint64_t now = ctl_now_ms();
		int rc = ctl_recv(c->fd, &c->in, now < deadline ? (int)(deadline - now) : 0, &text);

		if (rc < 0) {
			snprintf(err, errlen, "switch %s did not answer: %s", ctl.topo->nodes[c->node].name, ctl_strerror(rc));
			return -1;
		}
		if (ctl_parse(text, &m, perr, sizeof(perr)) < 0) {
			free(text);
			continue; /* a switch never sends those; skip */
		}
		free(text);
		ctl_uint(&m, NULL, "comm", 0xffffffff, &got, perr, sizeof(perr));
		int done = got == comm && (!strcmp(m.kind, "ok") || !strcmp(m.kind, "error"));
		if (done && !strcmp(m.kind, "error")) {
			const char *why = ctl_str(&m, NULL, "error");
			snprintf(err, errlen, "switch %s refused the rules: %s", ctl.topo->nodes[c->node].name,
				 why ? why : "(no reason)");
			ctl_doc_free(&m);
			return -1;
		}
		ctl_doc_free(&m);
		if (done)
			return 0;
	}
}

/* Tell the switches of @cm to drop its rules; forget it. */
static void release_comm(struct comm *cm, const char *why)
{
	char err[256];

	for (int k = 0; k < cm->nswitches; k++) {
		int ci = switch_conn(cm->sw[k]);
		if (ci >= 0 && ctl_sendf(ctl.conn[ci].fd, REPLY_MS, "msg: release\ncomm: %d\n", cm->id) == CTL_OK)
			await_switch(ci, (unsigned)cm->id, err, sizeof(err));
	}
	logf_("communicator %d of group %d released (%s)", cm->id, cm->group, why);
	memset(cm, 0, sizeof(*cm));
}

/* Read the ranks of a communicator request into @in; -1 after answering the error. */
static int read_ranks(int fd, struct ctl_doc *m, int nranks, struct plan_rank_in *in)
{
	yaml_node_t *seq = ctl_get(m, NULL, "ranks"), *item;
	static int seen[PLAN_MAX_RANKS];
	char err[256];
	int n = 0;

	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return reply_error(fd, "'ranks' must be a list of {rank, ip, qpn}");
	memset(seen, 0, sizeof(seen));
	for (; (item = ctl_item(m, seq, n)); n++) {
		unsigned long r, qpn;
		uint32_t ip;
		int port;
		const char *a = ctl_str(m, item, "ip");
		if (ctl_uint(m, item, "rank", (unsigned long)nranks - 1, &r, err, sizeof(err)) < 0 ||
		    ctl_uint(m, item, "qpn", 0xffffff, &qpn, err, sizeof(err)) < 0)
			return reply_error(fd, "ranks[%d]: %s", n, err);
		if (!a || ctl_parse_addr(a, 0, &ip, &port) < 0 || strchr(a, ':'))
			return reply_error(fd, "ranks[%d]: 'ip' must be an IPv4 address", n);
		if (seen[r]++)
			return reply_error(fd, "rank %lu is listed twice", r);
		in[r] = (struct plan_rank_in){ ntohl(ip), (uint32_t)qpn };
	}
	if (n != nranks)
		return reply_error(fd, "the group has %d ranks but %d were listed", nranks, n);
	return 0;
}

/* "msg: communicator": plan, push the rules, answer every rank's switch end. */
static void on_communicator(int ci, struct ctl_doc *m)
{
	static struct plan_rank_in in[PLAN_MAX_RANKS];
	static struct plan pl;
	int fd = ctl.conn[ci].fd;
	unsigned long gid;
	char err[512];
	struct group *g;
	struct comm *cm = NULL;

	if (ctl_uint(m, NULL, "group", 0x7fffffff, &gid, err, sizeof(err)) < 0) {
		reply_error(fd, "%s", err);
		return;
	}
	if (!(g = find_group((int)gid))) {
		reply_error(fd, "no group %lu (register it with 'msg: group' first)", gid);
		return;
	}
	if (read_ranks(fd, m, g->nranks, in) < 0)
		return;
	for (int i = 0; i < MAX_COMMS && !cm; i++)
		if (!ctl.comm[i].id)
			cm = &ctl.comm[i];
	if (!cm) {
		reply_error(fd, "too many communicators (%d)", MAX_COMMS);
		return;
	}
	struct plan_params p = ctl.defaults;
	p.comm = (unsigned)++ctl.next_comm;
	p.host_psn = (uint32_t)random() & 0xffffff;
	p.link_psn = (uint32_t)random() & 0xffffff;
	if (plan_make(ctl.topo, &p, in, g->nranks, &pl, err, sizeof(err)) < 0) {
		reply_error(fd, "%s", err);
		return;
	}
	for (int k = 0; k < pl.nswitches; k++) {
		const char *name = ctl.topo->nodes[pl.sw[k].node].name;
		struct comm *busy = comm_on_switch(pl.sw[k].node);
		if (switch_conn(pl.sw[k].node) < 0) {
			reply_error(fd, "switch %s is not registered with the controller (is incswitch running there?)", name);
			goto out;
		}
		if (busy) {
			reply_error(fd, "switch %s is serving communicator %d of group %d; destroy it first", name, busy->id,
				    busy->group);
			goto out;
		}
	}
	*cm = (struct comm){ .id = (int)p.comm, .group = g->id, .owner = ci };
	for (int k = 0; k < pl.nswitches; k++) {
		int sci = switch_conn(pl.sw[k].node);
		int rc = ctl_send(ctl.conn[sci].fd, pl.sw[k].rules, REPLY_MS);
		if (rc < 0) {
			snprintf(err, sizeof(err), "cannot send the rules to switch %s: %s",
				 ctl.topo->nodes[pl.sw[k].node].name, ctl_strerror(rc));
			rc = -1;
		} else {
			rc = await_switch(sci, p.comm, err, sizeof(err));
		}
		cm->sw[cm->nswitches++] = pl.sw[k].node; /* it may hold a part: release it too */
		if (rc < 0) {
			release_comm(cm, "a switch failed");
			reply_error(fd, "%s", err);
			goto out;
		}
	}
	char *text = NULL, a[16];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		release_comm(cm, "out of memory");
		reply_error(fd, "out of memory");
		goto out;
	}
	fprintf(f, "msg: ok\ncomm: %u\npsn: %u\nroot: %s\nswitches: [", p.comm, p.host_psn,
		ctl.topo->nodes[pl.root].name);
	for (int k = 0; k < pl.nswitches; k++)
		fprintf(f, "%s%s", k ? ", " : "", ctl.topo->nodes[pl.sw[k].node].name);
	fprintf(f, "]\nranks:\n");
	for (int r = 0; r < g->nranks; r++)
		fprintf(f, "  - {rank: %d, switch: %s, switch_ip: %s, switch_qpn: %u}\n", r,
			ctl.topo->nodes[pl.rank[r].leaf].name, topo_ntoa(pl.rank[r].switch_ip, a), pl.rank[r].switch_qpn);
	fclose(f);
	if (ctl_send(fd, text, REPLY_MS) < 0)
		release_comm(cm, "rank 0 went away");
	else
		logf_("communicator %u of group %d: %d ranks, %d switches, top %s, PSN %u", p.comm, g->id, g->nranks,
		      pl.nswitches, ctl.topo->nodes[pl.root].name, p.host_psn);
	free(text);
out:
	plan_free(&pl);
}

/* "msg: counters": every registered switch's counters, as one mapping per switch. */
static void on_counters(int ci)
{
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "msg: counters\nswitches:\n");
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *s = &ctl.conn[i];
		char *ans;
		struct ctl_doc m;
		if (s->kind != C_SWITCH || s->node < 0)
			continue;
		fprintf(f, "  %s: {", ctl.topo->nodes[s->node].name);
		if (ctl_send(s->fd, "msg: counters\n", REPLY_MS) == CTL_OK && ctl_recv(s->fd, &s->in, REPLY_MS, &ans) == CTL_OK) {
			if (ctl_parse(ans, &m, err, sizeof(err)) == 0) {
				yaml_node_t *cs = ctl_get(&m, NULL, "counters");
				const char *comm = ctl_str(&m, NULL, "comm");
				fprintf(f, "comm: %s", comm ? comm : "0");
				for (yaml_node_pair_t *p = cs && cs->type == YAML_MAPPING_NODE ? cs->data.mapping.pairs.start : NULL;
				     p && p < cs->data.mapping.pairs.top; p++) {
					yaml_node_t *k = yaml_document_get_node(&m.doc, p->key), *v = yaml_document_get_node(&m.doc, p->value);
					if (k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE)
						fprintf(f, ", %s: %s", k->data.scalar.value, v->data.scalar.value);
				}
				ctl_doc_free(&m);
			}
			free(ans);
		}
		fprintf(f, "}\n");
	}
	fclose(f);
	ctl_send(ctl.conn[ci].fd, text, REPLY_MS);
	free(text);
}

/* One message from a client (rank 0 of a group, or a tool). */
static void on_client(int ci, const char *text)
{
	struct conn *c = &ctl.conn[ci];
	struct ctl_doc m;
	char err[512];
	unsigned long v;

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		reply_error(c->fd, "bad message: %s", err);
		return;
	}
	if (!strcmp(m.kind, "group")) {
		struct group *g = NULL;
		for (int i = 0; i < MAX_GROUPS && !g; i++)
			if (!ctl.group[i].id)
				g = &ctl.group[i];
		if (ctl_uint(&m, NULL, "nranks", PLAN_MAX_RANKS, &v, err, sizeof(err)) < 0)
			reply_error(c->fd, "group: %s", err);
		else if (v < 1)
			reply_error(c->fd, "group: 'nranks' must be at least 1");
		else if ((int)v > ctl.topo->nhosts)
			reply_error(c->fd, "group of %lu ranks, but topology '%s' has %d hosts", v, ctl.topo->name,
				    ctl.topo->nhosts);
		else if (!g)
			reply_error(c->fd, "too many groups (%d)", MAX_GROUPS);
		else {
			*g = (struct group){ ++ctl.next_group, (int)v, ci };
			ctl_sendf(c->fd, REPLY_MS, "msg: ok\ngroup: %d\n", g->id);
			logf_("group %d: %d ranks, from %s", g->id, g->nranks, c->peer);
		}
	} else if (!strcmp(m.kind, "communicator")) {
		on_communicator(ci, &m);
	} else if (!strcmp(m.kind, "release")) {
		struct comm *cm = NULL;
		int bad = ctl_uint(&m, NULL, "comm", 0x7fffffff, &v, err, sizeof(err)) < 0;
		for (int i = 0; i < MAX_COMMS && !cm && !bad; i++)
			if (ctl.comm[i].id && ctl.comm[i].id == (int)v)
				cm = &ctl.comm[i];
		if (bad)
			reply_error(c->fd, "release: %s", err);
		else if (!cm)
			reply_error(c->fd, "no communicator %lu", v);
		else {
			release_comm(cm, "released by its group");
			ctl_sendf(c->fd, REPLY_MS, "msg: ok\ncomm: %lu\n", v);
		}
	} else if (!strcmp(m.kind, "counters")) {
		on_counters(ci);
	} else {
		reply_error(c->fd, "unknown message '%.40s' (group, communicator, release, counters)", m.kind);
	}
	ctl_doc_free(&m);
}

/* One message from a switch outside a request: its registration. */
static void on_switch(int ci, const char *text)
{
	struct conn *c = &ctl.conn[ci];
	struct ctl_doc m;
	char err[512];

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		reply_error(c->fd, "bad message: %s", err);
		return;
	}
	if (!strcmp(m.kind, "register")) {
		const char *name = ctl_str(&m, NULL, "switch");
		int n = name ? topo_find(ctl.topo, name) : -1;
		if (!name)
			reply_error(c->fd, "register: 'switch: NAME' is missing");
		else if (n < 0 || ctl.topo->nodes[n].role != TOPO_SWITCH)
			reply_error(c->fd, "'%s' is not a switch of topology '%s'", name, ctl.topo->name);
		else {
			int old = switch_conn(n);
			if (old >= 0 && old != ci) { /* the switch restarted: its old connection is dead */
				struct comm *cm = comm_on_switch(n);
				close(ctl.conn[old].fd);
				ctl_buf_free(&ctl.conn[old].in);
				ctl.conn[old].kind = C_FREE;
				if (cm)
					release_comm(cm, "a switch restarted");
			}
			c->node = n;
			ctl_sendf(c->fd, REPLY_MS, "msg: ok\nswitch: %s\n", name);
			logf_("switch %s registered from %s", name, c->peer);
		}
	} else if (strcmp(m.kind, "ok") && strcmp(m.kind, "error")) { /* late answers are dropped */
		reply_error(c->fd, "unknown message '%.40s' from a switch (register)", m.kind);
	}
	ctl_doc_free(&m);
}

static void drop_conn(int ci, const char *why)
{
	struct conn *c = &ctl.conn[ci];

	if (c->kind == C_SWITCH && c->node >= 0) {
		struct comm *cm = comm_on_switch(c->node);
		logf_("switch %s went away (%s)", ctl.topo->nodes[c->node].name, why);
		c->node = -1; /* no release can reach it */
		if (cm)
			release_comm(cm, "a switch went away");
	}
	for (int i = 0; i < MAX_COMMS; i++)
		if (ctl.comm[i].id && ctl.comm[i].owner == ci)
			release_comm(&ctl.comm[i], "its group's connection closed");
	for (int i = 0; i < MAX_GROUPS; i++)
		if (ctl.group[i].id && ctl.group[i].owner == ci) {
			logf_("group %d ended", ctl.group[i].id);
			memset(&ctl.group[i], 0, sizeof(ctl.group[i]));
		}
	close(c->fd);
	ctl_buf_free(&c->in);
	c->kind = C_FREE;
}

static void accept_on(int lfd, enum conn_kind kind)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK), i;

	if (fd < 0)
		return;
	for (i = 0; i < MAX_CONNS && ctl.conn[i].kind != C_FREE; i++)
		;
	if (i == MAX_CONNS) {
		reply_error(fd, "too many connections");
		close(fd);
		return;
	}
	ctl.conn[i] = (struct conn){ .kind = kind, .fd = fd, .node = -1 };
	char a[16];
	snprintf(ctl.conn[i].peer, sizeof(ctl.conn[i].peer), "%s:%u", topo_ntoa(ntohl(sa.sin_addr.s_addr), a),
		 ntohs(sa.sin_port));
}

static void on_readable(int ci)
{
	struct conn *c = &ctl.conn[ci];
	int rc = ctl_feed(&c->in, c->fd);
	char *msg;

	if (rc < 0) {
		drop_conn(ci, ctl_strerror(rc));
		return;
	}
	while (c->kind != C_FREE && (msg = ctl_next(&c->in, &rc))) {
		if (c->kind == C_SWITCH)
			on_switch(ci, msg);
		else
			on_client(ci, msg);
		free(msg);
	}
	if (rc < 0 && c->kind != C_FREE) {
		reply_error(c->fd, "%s", ctl_strerror(rc));
		drop_conn(ci, ctl_strerror(rc));
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: incctl -t TOPOLOGY.yaml [-s SWITCH_PORT] [-g GROUP_PORT] [-S NSLOTS] [-R RETRANSMIT_US]\n"
			"       incctl -Q CONTROLLER[:PORT]   (print the switches' counters)\n"
			"       (port 0: the kernel picks one; the first line logged names the ports bound)\n");
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

/* -Q: ask a running controller for the counters of every switch; print the answer. */
static int query(const char *addr)
{
	struct ctl_buf in = { 0 };
	char *ans;
	int fd = ctl_connect(addr, CTL_PORT_GROUP, 5000), rc;

	if (fd < 0) {
		fprintf(stderr, "incctl: cannot reach the controller at %s: %s\n", addr, strerror(errno));
		return 1;
	}
	if ((rc = ctl_send(fd, "msg: counters\n", REPLY_MS)) < 0 || (rc = ctl_recv(fd, &in, 30000, &ans)) < 0) {
		fprintf(stderr, "incctl: controller %s: %s\n", addr, ctl_strerror(rc));
		close(fd);
		return 1;
	}
	fputs(ans, stdout);
	free(ans);
	ctl_buf_free(&in);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *topo_path = NULL;
	int sport = CTL_PORT_SWITCH, gport = CTL_PORT_GROUP, opt;
	struct pollfd pfd[MAX_CONNS + 2];
	int idx[MAX_CONNS + 2];

	/* 8192 slots: with 1024, slots still waiting for a slow TCG guest's ACK were
	 * busy when their PSN came round again, and each RNR NAK made the host's
	 * rxe resend its whole window (lab, 4 MiB tree AllReduce: 1,941 RNR NAKs,
	 * 44,527 out-of-sequence drops; none with 8192) */
	ctl.defaults = (struct plan_params){ .nslots = 8192, .retransmit_us = 200000, .rnr_timer = 1 };
	while ((opt = getopt(argc, argv, "t:s:g:S:R:Q:")) != -1) {
		switch (opt) {
		case 'Q': return query(optarg);
		case 't': topo_path = optarg; break;
		case 's': sport = atoi(optarg); break;
		case 'g': gport = atoi(optarg); break;
		case 'S': ctl.defaults.nslots = (unsigned)atoi(optarg); break;
		case 'R': ctl.defaults.retransmit_us = (unsigned)atoi(optarg); break;
		default: return usage();
		}
	}
	if (!topo_path || optind != argc || sport < 0 || sport > 65535 || gport < 0 || gport > 65535 ||
	    ctl.defaults.nslots < 16 || ctl.defaults.retransmit_us < 1000)
		return usage();
	if (!(ctl.topo = topo_load(topo_path, stderr)))
		return 1;
	int ls = ctl_listen(sport), lg = ctl_listen(gport);
	if (ls < 0 || lg < 0) {
		fprintf(stderr, "incctl: cannot listen on TCP %d and %d: %s\n", sport, gport, strerror(errno));
		return 1;
	}
	sport = bound_port(ls);
	gport = bound_port(lg);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	srandom((unsigned)ctl_now_ms() ^ (unsigned)getpid());
	logf_("topology '%s' (%d nodes, %d hosts); switches on TCP %d, groups on TCP %d", ctl.topo->name,
	      ctl.topo->nnodes, ctl.topo->nhosts, sport, gport);
	while (!stop) {
		int n = 0;
		pfd[n] = (struct pollfd){ ls, POLLIN, 0 }, idx[n++] = -1;
		pfd[n] = (struct pollfd){ lg, POLLIN, 0 }, idx[n++] = -2;
		for (int i = 0; i < MAX_CONNS; i++)
			if (ctl.conn[i].kind != C_FREE)
				pfd[n] = (struct pollfd){ ctl.conn[i].fd, POLLIN, 0 }, idx[n++] = i;
		if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < n; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (idx[k] == -1)
				accept_on(ls, C_SWITCH);
			else if (idx[k] == -2)
				accept_on(lg, C_CLIENT);
			else if (ctl.conn[idx[k]].kind != C_FREE && ctl.conn[idx[k]].fd == pfd[k].fd)
				on_readable(idx[k]);
		}
	}
	for (int i = 0; i < MAX_COMMS; i++)
		if (ctl.comm[i].id)
			release_comm(&ctl.comm[i], "the controller stops");
	logf_("stopped");
	topo_free(ctl.topo);
	return 0;
}
