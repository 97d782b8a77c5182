/*
 * group.c — libinccl's bootstrap: groups and communicators (see inccl.h).
 *
 * Ranks meet at rank 0 over TCP (CTL_PORT_MASTER) and speak the control
 * protocol of proto/ctlmsg.h:
 *
 *   rank r -> rank 0   msg: join      rank, nranks
 *   rank 0 -> rank r   msg: group     group            (or msg: error)
 *   rank r -> rank 0   msg: qp        rank, ip, qpn    (or msg: error)
 *   rank 0 -> rank r   msg: config    comm, psn, switch_ip, switch_qpn
 *   rank r -> rank 0   msg: ready                      (or msg: error)
 *   rank 0 -> rank r   msg: go                         (or msg: error)
 *
 * and, when a rank destroys the communicator,
 *
 *   rank r -> rank 0   msg: done      comm
 *
 * Rank 0 drops the communicator's switch rules and may close the group only
 * after every rank said "done" (or went away, or the group's timeout passed):
 * a result still on its way to a slow rank (a VM the emulator runs late, a
 * retransmission) reaches it before its switches forget the communicator
 * and before rank 0's connection, which that rank watches, ends.
 *
 * A ring communicator (INCCL_ALGO_RING) replaces qp/config with
 *
 *   rank r -> rank 0   msg: ring      rank, ip, qpn_left, qpn_right
 *   rank 0 -> rank r   msg: ringcfg   psn, left_ip, left_qpn, right_ip, right_qpn
 *
 * and does not ask the controller: the switches only route its frames.
 *
 * Rank 0 also holds the group's connection to the controller
 * (CTL_PORT_GROUP): "group" registers it, "communicator" asks for the
 * switch rules, "release" drops them; closing it ends the group. Any rank
 * that fails tells rank 0, and rank 0 tells every rank, so all ranks return
 * an error with the same reason instead of some of them waiting; every wait
 * has a deadline.
 *
 * Who is who (proto/ctlauth.h). Rank 0 proves to the controller that it runs
 * on lab node NODE with that node's key: $INCCL_NODE_KEY (a key file), else
 * CTL_NODE_KEY_FILE when it exists; NODE is $INCCL_NODE, else NODE= of
 * node.conf. The ranks of a job prove to rank 0 that they hold the job's key:
 * $INCCL_JOB_KEY (64 hex digits), else the key file $INCCL_JOB_KEY_FILE.
 * With a job key, rank 0 challenges each connection as it is accepted and
 * takes its join only after the answer; a connection that answers wrong (or
 * does not answer within JOIN_MS) is refused and closed alone, the others go
 * on. After either handshake every message on the connection is sealed.
 * Without a job key nothing is asked (and a member that has one refuses a
 * rank 0 that does not challenge it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../proto/ctlmsg.h"
#include "../proto/ctlauth.h"
#include "inccl.h"
#include "internal.h"

#define NODE_CONF "/etc/inclab/node.conf" /* the lab's per-node facts (topogen) */
#define RETRY_MS 200                      /* between attempts to reach rank 0 */
#define RELEASE_MS 5000                   /* the controller drops a communicator's rules */
#define JOIN_PENDING 64                   /* connections at rank 0 that have not sent their join yet */
#define JOIN_MS 5000                      /* ... and the time each has to send it */
#define DONE_SEND_MS 1000                 /* a member's "done": one small message */

struct peer {
	int fd;
	struct ctl_buf in;
	char fault[256];     /* a "fault" this peer sent while an answer was awaited (expect()) */
	unsigned fault_comm;
	struct ctl_auth auth; /* on after the handshake: messages sealed */
};

struct inccl_group {
	int rank, nranks, id, timeout_ms;
	struct peer *peer; /* rank 0: one per rank (peer[0] unused); others: peer[0] is rank 0 */
	struct peer ctl;   /* rank 0: the controller */
	char controller[64];
	unsigned comm;     /* the in-network communicator in use (0: none): faults of others are old news */
	char fault[256];   /* why the group's collectives fail from now on ("" while none) */
	unsigned fault_comm; /* ... for this communicator; 0: every one (a rank went away) */
	int has_job_key;
	unsigned char job_key[CTL_KEY_BYTES];
};

int inccl_group_id(const inccl_group_t *g)
{
	return g ? g->id : -1;
}

/* KEY's value in the lab's node.conf (KEY=VALUE lines), into @out; 0 or -1. */
static int node_conf(const char *key, char *out, size_t outlen)
{
	FILE *f = fopen(NODE_CONF, "r");
	char line[512];
	size_t klen = strlen(key);
	int rc = -1;

	while (f && rc < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '=') {
			char *v = line + klen + 1;
			v[strcspn(v, "\r\n")] = 0;
			if (*v == '"' && v[strlen(v) - 1] == '"' && strlen(v) >= 2) {
				v[strlen(v) - 1] = 0;
				v++;
			}
			snprintf(out, outlen, "%s", v);
			rc = 0;
		}
	if (f)
		fclose(f);
	return rc;
}

/* Where to find @what: the option, else $ENV, else KEY of node.conf. */
static int locate(const char *opt, const char *env, const char *key, const char *what, char *out, size_t outlen)
{
	const char *e = getenv(env);

	if (opt && *opt)
		snprintf(out, outlen, "%s", opt);
	else if (e && *e)
		snprintf(out, outlen, "%s", e);
	else if (node_conf(key, out, outlen) < 0) {
		inccl__set_last_error("where is %s? pass it in the options, set %s, or run on a lab node (%s)", what, env,
				      NODE_CONF);
		return INCCL_EINVAL;
	}
	return INCCL_OK;
}

/* Close @p's connection (if open) and forget its buffer and keys; @p reads as gone (fd -1) after. */
static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	ctl_buf_free(&p->in);
	memset(&p->auth, 0, sizeof(p->auth));
}

/*
 * Receive the next message from @p within the deadline into @m, and check
 * its kind is @want; "msg: error" from the other side becomes INCCL_EREFUSED
 * with its reason, or INCCL_EBUSY when it says "code: busy" (no room now).
 * @who names the other side in messages.
 */
static int expect(struct peer *p, uint64_t deadline, const char *want, const char *who, struct ctl_doc *m)
{
	char *text, err[256];
	int rc;

	if (p->fd < 0) { /* closed when its end was seen (look_at()): nothing will come */
		inccl__set_last_error("%s went away earlier", who);
		return INCCL_ECONN;
	}
	if ((rc = ctl_arecv(&p->auth, p->fd, &p->in, ctl_left_ms(deadline), &text)) < 0) {
		inccl__set_last_error("%s: %s", who, rc == CTL_ETIMEDOUT ? "no answer in time"
						    : rc == CTL_EAUTH ? p->auth.err : ctl_strerror(rc));
		return rc == CTL_ETIMEDOUT ? INCCL_ETIMEDOUT : rc == CTL_EAUTH ? INCCL_EREFUSED : INCCL_ECONN;
	}
	rc = ctl_parse(text, m, err, sizeof(err));
	free(text);
	if (rc < 0) {
		inccl__set_last_error("%s sent a bad message: %s", who, err);
		return INCCL_ECONN;
	}
	if (!strcmp(m->kind, "fault")) { /* not an answer: kept for the collectives (group_watch()) */
		unsigned long comm = 0;
		const char *why = ctl_str(m, NULL, "error");
		ctl_uint(m, NULL, "comm", 0x7fffffff, &comm, err, sizeof(err));
		if (!p->fault[0]) {
			snprintf(p->fault, sizeof(p->fault), "%s: %s", who, why ? why : "fault (no reason given)");
			p->fault_comm = (unsigned)comm;
		}
		ctl_doc_free(m);
		return expect(p, deadline, want, who, m);
	}
	if (!strcmp(m->kind, "done") && strcmp(want, "done")) { /* of a communicator rank 0 has not destroyed */
		ctl_doc_free(m);
		return expect(p, deadline, want, who, m);
	}
	if (!strcmp(m->kind, "error")) {
		const char *why = ctl_str(m, NULL, "error"), *code = ctl_str(m, NULL, "code");
		int busy = code && !strcmp(code, "busy");
		inccl__set_last_error("%s: %s", who, why ? why : "refused (no reason given)");
		ctl_doc_free(m);
		return busy ? INCCL_EBUSY : INCCL_EREFUSED;
	}
	if (strcmp(m->kind, want)) {
		inccl__set_last_error("%s sent '%s' where '%s' was due", who, m->kind, want);
		ctl_doc_free(m);
		return INCCL_ECONN;
	}
	return INCCL_OK;
}

/* Rank 0: tell the controller communicator @comm_id is gone (its switches drop the rules). */
static void group_release(inccl_group_t *g, unsigned comm_id)
{
	struct ctl_doc m;

	if (!g || g->rank != 0 || g->ctl.fd < 0)
		return;
	if (ctl_asendf(&g->ctl.auth, g->ctl.fd, RELEASE_MS, "msg: release\ncomm: %u\n", comm_id) == CTL_OK &&
	    expect(&g->ctl, ctl_now_ms() + RELEASE_MS, "ok", "controller", &m) == INCCL_OK)
		ctl_doc_free(&m);
}

/*
 * Rank 0: wait until every member said "done" with communicator @comm_id,
 * or its connection ended, or the group's timeout passed, so that no rank
 * still waits for a result of it when its switch rules go. One member
 * after another on one deadline: the whole wait is the slowest member's,
 * a member gone costs nothing, and none is waited for once the group has
 * failed (every rank returns that fault anyway). Leaves inccl_last_error()
 * as it was.
 */
static void wait_done(inccl_group_t *g, unsigned comm_id)
{
	uint64_t deadline = ctl_now_ms() + (uint64_t)g->timeout_ms;
	char saved[300], who[32], err[128];
	struct ctl_doc m;

	snprintf(saved, sizeof(saved), "%s", inccl_last_error());
	for (int r = 1; r < g->nranks; r++) {
		if (g->fault[0] && (!g->fault_comm || g->fault_comm == comm_id))
			break;
		snprintf(who, sizeof(who), "rank %d", r);
		while (expect(&g->peer[r], deadline, "done", who, &m) == INCCL_OK) {
			unsigned long c = 0;
			int mine = ctl_uint(&m, NULL, "comm", 0x7fffffff, &c, err, sizeof(err)) == 0 && c == comm_id;
			ctl_doc_free(&m);
			if (mine)
				break; /* else the "done" of an older communicator this rank 0 never destroyed */
		}
	}
	inccl__set_last_error("%s", saved);
}

/*
 * Rank 0: drain what member @p sent before its connection ended; 1 when a
 * "done" of communicator @comm is among it (the member finished with @comm
 * and left, which is no fault of a collective of @comm still running here),
 * else 0. Only for a connection being closed: it takes every message.
 */
static int said_done(struct peer *p, unsigned comm)
{
	char *text, err[128];
	int rc, done = 0;

	while (comm && !done && (text = ctl_next(&p->in, &rc))) {
		struct ctl_doc m;
		unsigned long c = 0;
		int ok = ctl_auth_open(&p->auth, text) == 0 && ctl_parse(text, &m, err, sizeof(err)) == 0;
		free(text);
		if (!ok)
			break;
		done = !strcmp(m.kind, "done") && ctl_uint(&m, NULL, "comm", 0x7fffffff, &c, err, sizeof(err)) == 0 &&
		       c == comm;
		ctl_doc_free(&m);
	}
	return done;
}

/*
 * What comm.c calls when a rank destroys communicator @comm_id
 * (inccl__comm_attach()): a member tells rank 0 it is done with it (one
 * small message, never waits for an answer); rank 0 waits for every
 * member's "done" (wait_done()), then has the controller drop its rules.
 */
static void release_hook(void *ctx, unsigned comm_id)
{
	inccl_group_t *g = ctx;

	if (g->rank != 0) {
		if (g->peer[0].fd >= 0)
			ctl_asendf(&g->peer[0].auth, g->peer[0].fd, DONE_SEND_MS, "msg: done\ncomm: %u\n", comm_id);
	} else {
		wait_done(g, comm_id);
		group_release(g, comm_id);
	}
	if (g->comm == comm_id)
		g->comm = 0;
}

/*
 * Record fault @why of communicator @comm (0: of the group: a rank went away)
 * unless one is recorded or it is of a communicator no longer in use. Rank
 * 0 passes it on to every rank at once: one small message each, sent
 * without waiting on any of them.
 */
static void note_fault(inccl_group_t *g, unsigned comm, const char *why)
{
	char q[600];

	if (g->fault[0] || (comm && comm != g->comm))
		return;
	snprintf(g->fault, sizeof(g->fault), "%s", why);
	g->fault_comm = comm;
	if (g->rank != 0)
		return;
	ctl_quote(why, q, sizeof(q));
	for (int r = 1; r < g->nranks; r++)
		if (g->peer[r].fd >= 0)
			ctl_asendf(&g->peer[r].auth, g->peer[r].fd, 100, "msg: fault\ncomm: %u\nerror: %s\n", comm, q);
}

/*
 * Take what peer @p sent without waiting: a "fault" or "error" message is
 * the group's fault (@who says it); its end means @gone. Rank 0 does not
 * read its members' messages here (a member that finished may already send
 * its next step, which init reads later): it only notices their end.
 */
static void look_at(inccl_group_t *g, struct peer *p, const char *who, const char *gone, int take)
{
	char *text, err[256], why[300];
	int rc;

	if (p->fault[0]) { /* seen by expect() */
		note_fault(g, p->fault_comm, p->fault);
		p->fault[0] = 0;
	}
	if ((rc = ctl_feed(&p->in, p->fd)) < 0) {
		/* a member that said "done" with the communicator in use and left is no fault of it */
		if (gone && !(g->rank == 0 && p != &g->ctl && said_done(p, g->comm))) {
			/* how: its end closed (the process ended), or this machine's TCP gave up on it
			 * (the peer's machine did not acknowledge for CTL_DEAD_MS): ctl_gone_strerror() */
			char how[160];
			snprintf(how, sizeof(how), "%s (%s)", gone, ctl_gone_strerror(rc));
			note_fault(g, 0, how);
		}
		peer_close(p);
		return;
	}
	while (take && (text = ctl_next(&p->in, &rc))) {
		struct ctl_doc m;
		unsigned long comm = 0;
		if (ctl_auth_open(&p->auth, text) < 0) {
			char w[200];
			snprintf(w, sizeof(w), "%.30s: refused a message: %.140s", who, p->auth.err);
			note_fault(g, 0, w);
			free(text);
			peer_close(p);
			return;
		}
		if (ctl_parse(text, &m, err, sizeof(err)) == 0) {
			const char *e = ctl_str(&m, NULL, "error");
			ctl_uint(&m, NULL, "comm", 0x7fffffff, &comm, err, sizeof(err));
			snprintf(why, sizeof(why), "%s: %s", who, e ? e : m.kind);
			note_fault(g, !strcmp(m.kind, "fault") ? (unsigned)comm : 0, why);
			ctl_doc_free(&m);
		}
		free(text);
	}
}

/*
 * The watch libinccl's collectives call while they wait (inccl__comm_attach()):
 * 1 and the reason in @why when communicator @comm cannot go on: a switch of
 * it went away (the controller says so to rank 0, rank 0 to every rank), a
 * member went away (rank 0 sees its connection end), or rank 0 did. Never
 * waits: one poll() of the group's connections.
 */
static int group_watch(void *ctx, unsigned comm, char *why, size_t len)
{
	inccl_group_t *g = ctx;
	struct pollfd pf[1 + 1024];
	int n = 0;

	if (!g->fault[0]) {
		if (g->rank == 0) {
			if (g->ctl.fd >= 0)
				pf[n++] = (struct pollfd){ g->ctl.fd, POLLIN, 0 };
			for (int r = 1; r < g->nranks && n < 1025; r++)
				if (g->peer[r].fd >= 0)
					pf[n++] = (struct pollfd){ g->peer[r].fd, POLLIN, 0 };
		} else if (g->peer[0].fd >= 0) {
			pf[n++] = (struct pollfd){ g->peer[0].fd, POLLIN, 0 };
		}
		if (g->ctl.fault[0] || (g->rank != 0 && g->peer[0].fault[0]) || (n && poll(pf, (nfds_t)n, 0) > 0)) {
			if (g->rank != 0) {
				look_at(g, &g->peer[0], "rank 0", "rank 0 went away", 1);
			} else {
				if (g->ctl.fd >= 0) /* the controller gone is no fault: the switches keep their rules */
					look_at(g, &g->ctl, "controller", NULL, 1);
				for (int r = 1; r < g->nranks && !g->fault[0]; r++) {
					char gone[64];
					snprintf(gone, sizeof(gone), "rank %d went away", r);
					struct pollfd one = { g->peer[r].fd, POLLIN, 0 };
					if (g->peer[r].fd >= 0 && poll(&one, 1, 0) > 0)
						look_at(g, &g->peer[r], gone, gone, 0);
				}
			}
		}
	}
	if (g->fault[0] && (!g->fault_comm || g->fault_comm == comm)) {
		snprintf(why, len, "%s", g->fault);
		return 1;
	}
	return 0;
}

/*
 * Rank 0: tell every rank that the current step failed (with @rc), with
 * inccl_last_error(); INCCL_EBUSY goes as "code: busy", so every rank
 * returns it.
 */
static void fail_all_rc(inccl_group_t *g, int rc)
{
	char q[1100];

	ctl_quote(inccl_last_error(), q, sizeof(q));
	for (int r = 1; r < g->nranks; r++)
		if (g->peer[r].fd >= 0)
			ctl_asendf(&g->peer[r].auth, g->peer[r].fd, 2000, "msg: error\nerror: %s\n%s", q,
				  rc == INCCL_EBUSY ? "code: busy\n" : "");
}

/* fail_all_rc() of a failure that is not INCCL_EBUSY. */
static void fail_all(inccl_group_t *g)
{
	fail_all_rc(g, INCCL_EIO);
}

/* Rank r != 0: tell rank 0 this step failed here. */
static void fail_to_master(inccl_group_t *g)
{
	char q[1100];
	ctl_asendf(&g->peer[0].auth, g->peer[0].fd, 2000, "msg: error\nerror: %s\n", ctl_quote(inccl_last_error(), q, sizeof(q)));
}

void inccl_group_destroy(inccl_group_t *g)
{
	if (!g)
		return;
	for (int r = 0; g->peer && r < (g->rank == 0 ? g->nranks : 1); r++)
		peer_close(&g->peer[r]);
	peer_close(&g->ctl);
	ctl_key_wipe(g->job_key);
	free(g->peer);
	free(g);
}

/*
 * Rank 0: the join message @text of connection @np. Returns 1 when it is a
 * rank that has not joined yet (@np moves into g->peer), else 0 after
 * telling it why it is refused.
 */
static int take_join(inccl_group_t *g, struct peer *np, const char *text)
{
	struct ctl_doc m;
	char err[256], q[600];
	unsigned long r, n;
	int ok = 0;

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: \"join: bad message\"\n");
		return 0;
	}
	if (strcmp(m.kind, "join"))
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: \"'join' was due\"\n");
	else if (ctl_uint(&m, NULL, "rank", 0xffff, &r, err, sizeof(err)) < 0 ||
		 ctl_uint(&m, NULL, "nranks", 0xffff, &n, err, sizeof(err)) < 0)
		/* err quotes what the peer sent: quoted as YAML by libyaml */
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: %s\n", ctl_quote(err, q, sizeof(q)));
	else if ((int)n != g->nranks)
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: \"rank %lu says %lu ranks, rank 0 says %d\"\n", r, n, g->nranks);
	else if (r == 0 || (int)r >= g->nranks)
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: \"rank %lu is not one of 1..%d\"\n", r, g->nranks - 1);
	else if (g->peer[r].fd >= 0)
		ctl_asendf(&np->auth, np->fd, 100, "msg: error\nerror: \"rank %lu has joined already\"\n", r);
	else {
		g->peer[r] = *np;
		*np = (struct peer){ .fd = -1 };
		ok = 1;
	}
	ctl_doc_free(&m);
	return ok;
}

/*
 * Rank 0: message @text of connection @np not joined yet: with a job key
 * first its answer to the challenge, then (sealed) its join. Returns 0 while
 * it may go on, 1 when it joined (@np moved into g->peer), -1 when refused.
 */
static int pending_message(inccl_group_t *g, struct peer *np, char *text)
{
	char err[256], q[300];
	struct ctl_doc m;

	if (g->has_job_key && !np->auth.on) {
		if (ctl_parse(text, &m, err, sizeof(err)) < 0 || strcmp(m.kind, "auth")) {
			snprintf(err, sizeof(err), "prove you are of this job first: answer the challenge ('msg: auth')");
		} else if (ctl_auth_verify(&np->auth, g->job_key, ctl_str(&m, NULL, "node"), ctl_str(&m, NULL, "role"),
					   ctl_str(&m, NULL, "mac"), err, sizeof(err)) == 0 &&
			   !strcmp(ctl_str(&m, NULL, "role"), "member")) {
			ctl_doc_free(&m);
			return ctl_asend(&np->auth, np->fd, "msg: welcome\n", 100) == CTL_OK ? 0 : -1;
		} else if (np->auth.on) {
			snprintf(err, sizeof(err), "role '%.20s': a rank is a 'member'", ctl_str(&m, NULL, "role"));
		} else {
			strncat(err, ": not of this job (wrong job key)", sizeof(err) - strlen(err) - 1);
		}
		if (m.root)
			ctl_doc_free(&m);
		memset(&np->auth, 0, sizeof(np->auth)); /* the refusal goes out unsealed */
		ctl_sendf(np->fd, 100, "msg: error\nerror: %s\n", ctl_quote(err, q, sizeof(q)));
		return -1;
	}
	if (ctl_auth_open(&np->auth, text) < 0) {
		ctl_sendf(np->fd, 100, "msg: error\nerror: %s\n", ctl_quote(np->auth.err, q, sizeof(q)));
		return -1;
	}
	return take_join(g, np, text) ? 1 : -1;
}

/*
 * Rank 0: accept connections and take their joins until every rank joined
 * or @deadline passed; returns the ranks joined (rank 0 included). One loop
 * over the listening socket and every connection not joined yet, so a peer
 * that connects and says nothing (or trickles) holds only its own place:
 * at most JOIN_PENDING such connections at a time, each closed after
 * JOIN_MS, while the others' joins are taken as they come. Refusals are
 * one small message each, sent without waiting on the peer.
 */
static int gather_joins(inccl_group_t *g, int lfd, uint64_t deadline)
{
	struct {
		struct peer p;
		uint64_t until;
	} pend[JOIN_PENDING];
	struct pollfd pf[JOIN_PENDING + 1];
	int npend = 0, joined = 1;

	while (joined < g->nranks && ctl_left_ms(deadline) > 0) {
		uint64_t now = ctl_now_ms(), next = deadline;
		int n = 0;
		for (int i = 0; i < npend; i++)
			if (now >= pend[i].until) { /* too slow to say who it is */
				peer_close(&pend[i].p);
				pend[i--] = pend[--npend];
			}
		pf[n++] = (struct pollfd){ lfd, npend < JOIN_PENDING ? POLLIN : 0, 0 };
		for (int i = 0; i < npend; i++) {
			pf[n++] = (struct pollfd){ pend[i].p.fd, POLLIN, 0 };
			if (pend[i].until < next)
				next = pend[i].until;
		}
		if (poll(pf, (nfds_t)n, ctl_left_ms(next)) <= 0)
			continue;
		for (int i = npend - 1; i >= 0; i--) { /* from the end: removal moves the last one into i */
			char *text = NULL;
			int rc = CTL_OK, st = 0;
			if (!pf[i + 1].revents)
				continue;
			if (ctl_feed(&pend[i].p.in, pend[i].p.fd) < 0)
				st = -1;
			while (!st && (text = ctl_next(&pend[i].p.in, &rc))) { /* its answer and join may come together */
				st = pending_message(g, &pend[i].p, text);
				free(text);
			}
			if (!st && rc == CTL_OK)
				continue; /* a part of its join */
			joined += st > 0;
			peer_close(&pend[i].p); /* refused, gone, or moved into g->peer */
			pend[i] = pend[--npend];
		}
		if (pf[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd >= 0) {
				char text[160];
				ctl_keepalive(fd); /* a rank whose machine vanished shows within CTL_DEAD_MS */
				pend[npend].p = (struct peer){ .fd = fd };
				pend[npend].until = ctl_now_ms() + JOIN_MS;
				if (g->has_job_key) { /* prove it is of this job; the join comes after */
					ctl_auth_challenge(&pend[npend].p.auth, text, sizeof(text));
					ctl_send(fd, text, 100);
				}
				npend++;
			}
		}
	}
	for (int i = 0; i < npend; i++)
		peer_close(&pend[i].p);
	return joined;
}

/*
 * Rank 0: prove to the controller which lab node this is, when this node
 * has a key ($INCCL_NODE_KEY, else CTL_NODE_KEY_FILE when it exists).
 */
static int controller_auth(inccl_group_t *g, uint64_t deadline)
{
	const char *kf = getenv("INCCL_NODE_KEY");
	unsigned char key[CTL_KEY_BYTES];
	char node[64], err[300];
	int rc;

	if (!kf || !*kf) {
		if (access(CTL_NODE_KEY_FILE, F_OK) < 0)
			return INCCL_OK; /* no key: the controller decides whether it talks to us */
		kf = CTL_NODE_KEY_FILE;
	}
	if ((rc = locate(NULL, "INCCL_NODE", "NODE", "this lab node's name", node, sizeof(node))))
		return rc;
	if (ctl_key_load(kf, key, err, sizeof(err)) < 0) {
		inccl__set_last_error("node key: %s", err);
		return INCCL_EINVAL;
	}
	rc = ctl_auth_client(&g->ctl.auth, g->ctl.fd, &g->ctl.in, key, node, "client", ctl_left_ms(deadline), err, sizeof(err));
	ctl_key_wipe(key);
	if (rc < 0) {
		inccl__set_last_error("controller %s: %s", g->controller, err);
		return INCCL_EREFUSED;
	}
	return INCCL_OK;
}

/*
 * Rank 0's part of inccl_group_create(): listen on TCP @port, take every
 * rank's join (gather_joins()), register the group with the controller
 * (authenticated with the node's key) and send each rank the group's id.
 * Any failure is told to every rank that joined (fail_all()) and returned;
 * the listening socket is closed either way.
 */
static int create_rank0(inccl_group_t *g, int port, uint64_t deadline)
{
	int lfd = ctl_listen(port), joined, rc;
	struct ctl_doc m;
	unsigned long id;
	char err[256];

	if (lfd < 0) {
		inccl__set_last_error("rank 0 cannot listen on TCP %d: %s", port, strerror(errno));
		return INCCL_ECONN;
	}
	joined = gather_joins(g, lfd, deadline);
	close(lfd);
	if (joined < g->nranks) {
		char missing[256] = "";
		for (int r = 1, o = 0; r < g->nranks && o < (int)sizeof(missing) - 8; r++)
			if (g->peer[r].fd < 0)
				o += snprintf(missing + o, sizeof(missing) - (size_t)o, " %d", r);
		inccl__set_last_error("rank 0: %d of %d ranks joined within %d ms; missing:%s", joined, g->nranks,
				      g->timeout_ms, missing);
		fail_all(g);
		return INCCL_ETIMEDOUT;
	}
	if ((g->ctl.fd = ctl_connect(g->controller, CTL_PORT_GROUP, ctl_left_ms(deadline))) < 0) {
		inccl__set_last_error("cannot reach the controller at %s: %s", g->controller, strerror(errno));
		fail_all(g);
		return INCCL_ECONN;
	}
	if ((rc = controller_auth(g, deadline))) {
		fail_all(g);
		return rc;
	}
	if (ctl_asendf(&g->ctl.auth, g->ctl.fd, ctl_left_ms(deadline), "msg: group\nnranks: %d\n", g->nranks) < 0) {
		inccl__set_last_error("controller %s: cannot send: %s", g->controller, strerror(errno));
		fail_all(g);
		return INCCL_ECONN;
	}
	if ((rc = expect(&g->ctl, deadline, "ok", "controller", &m))) {
		fail_all(g);
		return rc;
	}
	rc = ctl_uint(&m, NULL, "group", 0x7fffffff, &id, err, sizeof(err));
	ctl_doc_free(&m);
	if (rc < 0) {
		inccl__set_last_error("controller: bad answer to 'group': %s", err);
		fail_all(g);
		return INCCL_ECONN;
	}
	g->id = (int)id;
	for (int r = 1; r < g->nranks; r++)
		if (ctl_asendf(&g->peer[r].auth, g->peer[r].fd, ctl_left_ms(deadline), "msg: group\ngroup: %d\n", g->id) < 0) {
			inccl__set_last_error("rank 0: rank %d went away while the group formed", r);
			fail_all(g);
			return INCCL_ECONN;
		}
	return INCCL_OK;
}

/*
 * A member's part of inccl_group_create(): reach rank 0 at @master (retried
 * every RETRY_MS while it is not listening yet, until @deadline; a @master
 * that is no address fails at once with INCCL_EINVAL), answer its challenge
 * with the job key if there is one, join, and take the group's id.
 */
static int create_member(inccl_group_t *g, const char *master, uint64_t deadline)
{
	struct ctl_doc m;
	unsigned long id;
	char err[256];
	int rc, last_errno = 0;

	while ((g->peer[0].fd = ctl_connect(master, CTL_PORT_MASTER, ctl_left_ms(deadline) < 1000 ? ctl_left_ms(deadline) : 1000)) < 0) {
		last_errno = errno;
		if (errno == EINVAL || ctl_left_ms(deadline) <= RETRY_MS) {
			inccl__set_last_error("rank %d cannot reach rank 0 at %s within %d ms: %s", g->rank, master,
					      g->timeout_ms, strerror(last_errno));
			return errno == EINVAL ? INCCL_EINVAL : INCCL_ECONN;
		}
		usleep(RETRY_MS * 1000);
	}
	if (g->has_job_key) { /* rank 0 challenges at once */
		char name[32], aerr[300];
		snprintf(name, sizeof(name), "rank %d", g->rank);
		if (ctl_auth_client(&g->peer[0].auth, g->peer[0].fd, &g->peer[0].in, g->job_key, name, "member",
				    ctl_left_ms(deadline) < JOIN_MS ? ctl_left_ms(deadline) : JOIN_MS, aerr, sizeof(aerr)) < 0) {
			inccl__set_last_error("rank %d: rank 0 at %s: %s", g->rank, master, aerr);
			return INCCL_EREFUSED;
		}
	}
	if (ctl_asendf(&g->peer[0].auth, g->peer[0].fd, ctl_left_ms(deadline), "msg: join\nrank: %d\nnranks: %d\n", g->rank, g->nranks) < 0) {
		inccl__set_last_error("rank %d: rank 0 at %s went away", g->rank, master);
		return INCCL_ECONN;
	}
	if ((rc = expect(&g->peer[0], deadline, "group", "rank 0", &m)))
		return rc;
	rc = ctl_uint(&m, NULL, "group", 0x7fffffff, &id, err, sizeof(err));
	ctl_doc_free(&m);
	if (rc < 0) {
		inccl__set_last_error("rank 0: bad 'group' message: %s", err);
		return INCCL_ECONN;
	}
	g->id = (int)id;
	return INCCL_OK;
}

/* The job's key from $INCCL_JOB_KEY (hex) or the file $INCCL_JOB_KEY_FILE, if any, into @g. */
static int load_job_key(inccl_group_t *g)
{
	const char *hex = getenv("INCCL_JOB_KEY"), *file = getenv("INCCL_JOB_KEY_FILE");
	char err[300];

	if (ctl_auth_init() < 0) {
		inccl__set_last_error("libsodium does not initialise");
		return INCCL_ENOMEM;
	}
	if (hex && *hex) {
		if (ctl_key_parse(hex, g->job_key) < 0) {
			inccl__set_last_error("INCCL_JOB_KEY: want %d hex digits", 2 * CTL_KEY_BYTES);
			return INCCL_EINVAL;
		}
		g->has_job_key = 1;
	} else if (file && *file) {
		if (ctl_key_load(file, g->job_key, err, sizeof(err)) < 0) {
			inccl__set_last_error("INCCL_JOB_KEY_FILE: %s", err);
			return INCCL_EINVAL;
		}
		g->has_job_key = 1;
	}
	return INCCL_OK;
}

int inccl_group_create(const struct inccl_group_opts *o, int rank, int nranks, inccl_group_t **out)
{
	char master[64];
	uint32_t addr;
	int port, rc;
	inccl_group_t *g;

	if (!out) {
		inccl__set_last_error("inccl_group_create: out is NULL");
		return INCCL_EINVAL;
	}
	*out = NULL;
	inccl__set_last_error("%s", "");
	if (nranks < 1 || nranks > 0xfffe || rank < 0 || rank >= nranks) {
		inccl__set_last_error("inccl_group_create: bad %s: rank %d of nranks %d, want 0 <= rank < nranks <= 65534",
				      nranks < 1 || nranks > 0xfffe ? "nranks" : "rank", rank, nranks);
		return INCCL_EINVAL;
	}
	if (o && o->timeout_ms < 0) {
		inccl__set_last_error("inccl_group_create: bad timeout_ms %d (> 0, or 0 for the default)", o->timeout_ms);
		return INCCL_EINVAL;
	}
	if (!(g = calloc(1, sizeof(*g))) || !(g->peer = calloc((size_t)nranks, sizeof(*g->peer)))) {
		free(g);
		inccl__set_last_error("out of memory");
		return INCCL_ENOMEM;
	}
	g->rank = rank;
	g->nranks = nranks;
	g->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 120000;
	g->ctl.fd = -1;
	for (int r = 0; r < nranks; r++)
		g->peer[r].fd = -1;
	if ((rc = locate(o ? o->master : NULL, "INCCL_MASTER", "MASTER", "rank 0 (the master)", master, sizeof(master))) ||
	    (rank == 0 &&
	     (rc = locate(o ? o->controller : NULL, "INCCL_CONTROLLER", "CONTROLLER", "the controller", g->controller,
			  sizeof(g->controller)))))
		goto fail;
	const char *bad = ctl_parse_addr(master, CTL_PORT_MASTER, &addr, &port) < 0 ? master
			  : rank == 0 && ctl_parse_addr(g->controller, CTL_PORT_GROUP, &addr, &rc) < 0 ? g->controller
			  : NULL;
	if (bad) {
		inccl__set_last_error("bad address '%s' (want A.B.C.D[:PORT])", bad);
		rc = INCCL_EINVAL;
		goto fail;
	}
	if ((rc = load_job_key(g)))
		goto fail;
	uint64_t deadline = ctl_now_ms() + (uint64_t)g->timeout_ms;
	rc = rank == 0 ? create_rank0(g, port, deadline) : create_member(g, master, deadline);
	if (rc)
		goto fail;
	*out = g;
	return INCCL_OK;
fail:
	inccl_group_destroy(g);
	return rc;
}

/* ---- communicators ------------------------------------------------------- */

struct rank_cfg {
	unsigned comm, psn, qpn;
	char ip[16];
};

int inccl__qp_entry(FILE *f, int rank, struct ctl_doc *m, char *err, size_t errlen)
{
	const char *ip = ctl_str(m, NULL, "ip");
	struct in_addr ia;
	unsigned long qpn;
	char a[16];

	/* the address is parsed, and what is written is this rank's own rendering of it:
	 * no text of a peer's reaches the YAML written here */
	if (!ip || inet_pton(AF_INET, ip, &ia) != 1) {
		snprintf(err, errlen, "ip is not an IPv4 address (a.b.c.d)");
		return -1;
	}
	if (ctl_uint(m, NULL, "qpn", 0xffffff, &qpn, err, errlen) < 0)
		return -1;
	fprintf(f, "  - {rank: %d, ip: %s, qpn: %lu}\n", rank, inet_ntop(AF_INET, &ia, a, sizeof(a)), qpn);
	return 0;
}

/* Rank 0: collect every rank's queue pair; ask the controller; hand out the configs. */
static int init_rank0(inccl_group_t *g, uint32_t my_ip, uint32_t my_qpn, uint64_t deadline, struct rank_cfg *mine)
{
	char *req = NULL, a[16], who[32], err[256];
	size_t len = 0;
	FILE *f = open_memstream(&req, &len);
	struct ctl_doc m;
	int rc = INCCL_OK;

	if (!f) {
		inccl__set_last_error("out of memory");
		return INCCL_ENOMEM;
	}
	fprintf(f, "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: %s, qpn: %u}\n", g->id,
		inet_ntop(AF_INET, &my_ip, a, sizeof(a)), my_qpn);
	for (int r = 1; r < g->nranks && rc == INCCL_OK; r++) {
		snprintf(who, sizeof(who), "rank %d", r);
		if ((rc = expect(&g->peer[r], deadline, "qp", who, &m)))
			break;
		if (inccl__qp_entry(f, r, &m, err, sizeof(err)) < 0) {
			inccl__set_last_error("rank %d sent a bad 'qp' message: %s", r, err);
			rc = INCCL_ECONN;
		}
		ctl_doc_free(&m);
	}
	fclose(f);
	if (rc == INCCL_OK && ctl_asend(&g->ctl.auth, g->ctl.fd, req, ctl_left_ms(deadline)) < 0) {
		inccl__set_last_error("the controller went away");
		rc = INCCL_ECONN;
	}
	free(req);
	if (rc == INCCL_OK)
		rc = expect(&g->ctl, deadline, "ok", "controller", &m);
	if (rc) {
		fail_all_rc(g, rc);
		return rc;
	}
	unsigned long comm, psn, qpn;
	yaml_node_t *ranks = ctl_get(&m, NULL, "ranks");
	if (ctl_uint(&m, NULL, "comm", 0x7fffffff, &comm, err, sizeof(err)) < 0 ||
	    ctl_uint(&m, NULL, "psn", 0xffffff, &psn, err, sizeof(err)) < 0)
		goto bad;
	for (int r = 0; r < g->nranks; r++) {
		yaml_node_t *it = ctl_item(&m, ranks, r);
		const char *ip = it ? ctl_str(&m, it, "switch_ip") : NULL;
		unsigned long rr;
		struct in_addr ia;
		if (!ip || inet_pton(AF_INET, ip, &ia) != 1 || ctl_uint(&m, it, "rank", 0xffff, &rr, err, sizeof(err)) < 0 ||
		    (int)rr != r || ctl_uint(&m, it, "switch_qpn", 0xffffff, &qpn, err, sizeof(err)) < 0) {
			snprintf(err, sizeof(err), "ranks[%d] is not {rank: %d, switch_ip: A.B.C.D, switch_qpn}", r, r);
			goto bad;
		}
		inet_ntop(AF_INET, &ia, a, sizeof(a)); /* the controller's address, as this rank writes it */
		if (r == 0) {
			*mine = (struct rank_cfg){ (unsigned)comm, (unsigned)psn, (unsigned)qpn, "" };
			snprintf(mine->ip, sizeof(mine->ip), "%s", a);
		} else if (ctl_asendf(&g->peer[r].auth, g->peer[r].fd, ctl_left_ms(deadline), "msg: config\ncomm: %lu\npsn: %lu\nswitch_ip: %s\nswitch_qpn: %lu\n",
				     comm, psn, a, qpn) < 0) {
			ctl_doc_free(&m);
			inccl__set_last_error("rank %d went away", r);
			fail_all(g);
			group_release(g, (unsigned)comm);
			return INCCL_ECONN;
		}
	}
	ctl_doc_free(&m);
	return INCCL_OK;
bad:
	ctl_doc_free(&m);
	inccl__set_last_error("controller: bad answer to 'communicator': %s", err);
	fail_all(g);
	return INCCL_ECONN;
}

/* Rank r != 0: send the queue pair, get the config. */
static int init_member(inccl_group_t *g, uint32_t my_ip, uint32_t my_qpn, uint64_t deadline, struct rank_cfg *mine)
{
	char a[16], err[256];
	struct ctl_doc m;
	unsigned long comm, psn, qpn;
	int rc;

	if (ctl_asendf(&g->peer[0].auth, g->peer[0].fd, ctl_left_ms(deadline), "msg: qp\nrank: %d\nip: %s\nqpn: %u\n", g->rank,
		      inet_ntop(AF_INET, &my_ip, a, sizeof(a)), my_qpn) < 0) {
		inccl__set_last_error("rank 0 went away");
		return INCCL_ECONN;
	}
	if ((rc = expect(&g->peer[0], deadline, "config", "rank 0", &m)))
		return rc;
	const char *ip = ctl_str(&m, NULL, "switch_ip");
	struct in_addr ia;
	if (!ip || inet_pton(AF_INET, ip, &ia) != 1 || ctl_uint(&m, NULL, "comm", 0x7fffffff, &comm, err, sizeof(err)) < 0 ||
	    ctl_uint(&m, NULL, "psn", 0xffffff, &psn, err, sizeof(err)) < 0 ||
	    ctl_uint(&m, NULL, "switch_qpn", 0xffffff, &qpn, err, sizeof(err)) < 0) {
		ctl_doc_free(&m);
		inccl__set_last_error("rank 0 sent a bad 'config' message");
		return INCCL_ECONN;
	}
	*mine = (struct rank_cfg){ (unsigned)comm, (unsigned)psn, (unsigned)qpn, "" };
	inet_ntop(AF_INET, &ia, mine->ip, sizeof(mine->ip));
	ctl_doc_free(&m);
	return INCCL_OK;
}

/* ---- ring communicators (the host-based baseline) ---------------------------- */

struct ring_end {
	uint32_t ip, qpn_left, qpn_right; /* ip in network order */
};

/* Read a "ring" message's rank, ip and queue pair numbers into @e; 0 or -1. */
static int ring_end_of(struct ctl_doc *m, int rank, struct ring_end *e)
{
	unsigned long rr, ql, qr;
	const char *ip = ctl_str(m, NULL, "ip");
	char err[256];
	struct in_addr a;

	if (!ip || inet_pton(AF_INET, ip, &a) != 1 || ctl_uint(m, NULL, "rank", 0xffff, &rr, err, sizeof(err)) < 0 ||
	    (int)rr != rank || ctl_uint(m, NULL, "qpn_left", 0xffffff, &ql, err, sizeof(err)) < 0 ||
	    ctl_uint(m, NULL, "qpn_right", 0xffffff, &qr, err, sizeof(err)) < 0)
		return -1;
	*e = (struct ring_end){ a.s_addr, (uint32_t)ql, (uint32_t)qr };
	return 0;
}

/*
 * Exchange the ring's queue pairs through rank 0 and connect them: every rank
 * learns its left neighbour's "to the right" queue pair and its right
 * neighbour's "from the left" one.
 */
static int init_ring(inccl_group_t *g, inccl_comm_t *c, uint32_t my_ip, uint64_t deadline)
{
	struct ring_end mine, *all = NULL;
	struct ctl_doc m;
	char a[16], b[16], who[32];
	uint32_t qpn[2], psn = (uint32_t)(ctl_now_ms() * 2654435761u) & 0xffffff;
	int n = g->nranks, rc;

	if ((rc = inccl__comm_ring_create(c, qpn))) {
		if (g->rank == 0)
			fail_all(g);
		return rc;
	}
	mine = (struct ring_end){ my_ip, qpn[0], qpn[1] };
	if (g->rank != 0) {
		unsigned long lq, rq, p;
		const char *lip, *rip;
		struct in_addr la, ra;
		char err[256];
		if (ctl_asendf(&g->peer[0].auth, g->peer[0].fd, ctl_left_ms(deadline), "msg: ring\nrank: %d\nip: %s\nqpn_left: %u\nqpn_right: %u\n",
			      g->rank, inet_ntop(AF_INET, &my_ip, a, sizeof(a)), qpn[0], qpn[1]) < 0) {
			inccl__set_last_error("rank 0 went away");
			return INCCL_ECONN;
		}
		if ((rc = expect(&g->peer[0], deadline, "ringcfg", "rank 0", &m)))
			return rc;
		lip = ctl_str(&m, NULL, "left_ip");
		rip = ctl_str(&m, NULL, "right_ip");
		if (!lip || !rip || inet_pton(AF_INET, lip, &la) != 1 || inet_pton(AF_INET, rip, &ra) != 1 ||
		    ctl_uint(&m, NULL, "left_qpn", 0xffffff, &lq, err, sizeof(err)) < 0 ||
		    ctl_uint(&m, NULL, "right_qpn", 0xffffff, &rq, err, sizeof(err)) < 0 ||
		    ctl_uint(&m, NULL, "psn", 0xffffff, &p, err, sizeof(err)) < 0) {
			ctl_doc_free(&m);
			inccl__set_last_error("rank 0 sent a bad 'ringcfg' message");
			return INCCL_ECONN;
		}
		ctl_doc_free(&m);
		return inccl__comm_ring_connect(c, la.s_addr, (uint32_t)lq, ra.s_addr, (uint32_t)rq, (uint32_t)p);
	}
	if (!(all = calloc((size_t)n, sizeof(*all)))) {
		inccl__set_last_error("out of memory");
		fail_all(g);
		return INCCL_ENOMEM;
	}
	all[0] = mine;
	for (int r = 1; r < n && rc == INCCL_OK; r++) {
		snprintf(who, sizeof(who), "rank %d", r);
		if ((rc = expect(&g->peer[r], deadline, "ring", who, &m)))
			break;
		if (ring_end_of(&m, r, &all[r]) < 0) {
			inccl__set_last_error("rank %d sent a bad 'ring' message", r);
			rc = INCCL_ECONN;
		}
		ctl_doc_free(&m);
	}
	for (int r = 1; r < n && rc == INCCL_OK; r++) {
		const struct ring_end *l = &all[(r + n - 1) % n], *rt = &all[(r + 1) % n];
		if (ctl_asendf(&g->peer[r].auth, g->peer[r].fd, ctl_left_ms(deadline),
			      "msg: ringcfg\npsn: %u\nleft_ip: %s\nleft_qpn: %u\nright_ip: %s\nright_qpn: %u\n", psn,
			      inet_ntop(AF_INET, &l->ip, a, sizeof(a)), l->qpn_right,
			      inet_ntop(AF_INET, &rt->ip, b, sizeof(b)), rt->qpn_left) < 0) {
			inccl__set_last_error("rank %d went away", r);
			rc = INCCL_ECONN;
		}
	}
	if (rc == INCCL_OK)
		rc = inccl__comm_ring_connect(c, all[n - 1].ip, all[n - 1].qpn_right, all[1 % n].ip, all[1 % n].qpn_left,
					      psn);
	if (rc)
		fail_all(g);
	free(all);
	return rc;
}

/* Every rank connected: ranks say "ready" (or why not), rank 0 answers "go" to all (or the failure). */
static int init_release(inccl_group_t *g, int my_rc, uint64_t deadline)
{
	struct ctl_doc m;
	char who[32];
	int rc = my_rc;

	if (g->rank != 0) {
		if (my_rc) {
			fail_to_master(g);
			return my_rc;
		}
		if (ctl_asendf(&g->peer[0].auth, g->peer[0].fd, ctl_left_ms(deadline), "msg: ready\n") < 0) {
			inccl__set_last_error("rank 0 went away");
			return INCCL_ECONN;
		}
		if ((rc = expect(&g->peer[0], deadline, "go", "rank 0", &m)) == INCCL_OK)
			ctl_doc_free(&m);
		return rc;
	}
	for (int r = 1; r < g->nranks; r++) {
		snprintf(who, sizeof(who), "rank %d", r);
		int k = expect(&g->peer[r], deadline, "ready", who, &m);
		if (k == INCCL_OK)
			ctl_doc_free(&m);
		else if (rc == INCCL_OK)
			rc = k; /* the first failure is the reason everyone gets */
	}
	if (rc) {
		fail_all(g);
		return rc;
	}
	for (int r = 1; r < g->nranks; r++)
		ctl_asendf(&g->peer[r].auth, g->peer[r].fd, ctl_left_ms(deadline), "msg: go\n");
	return INCCL_OK;
}

int inccl_comm_init(inccl_group_t *g, const struct inccl_comm_opts *opts, inccl_comm_t **out)
{
	inccl_comm_t *c = NULL;
	uint32_t qpn = 0, ip = 0;
	struct rank_cfg mine = { 0 };
	int rc;

	if (!out) {
		inccl__set_last_error("inccl_comm_init: out is NULL");
		return INCCL_EINVAL;
	}
	*out = NULL;
	inccl__set_last_error("%s", "");
	if (!g) {
		inccl__set_last_error("inccl_comm_init: g is NULL (no group)");
		return INCCL_EINVAL;
	}
	uint64_t deadline = ctl_now_ms() + (uint64_t)g->timeout_ms;
	rc = inccl_comm_create(opts, g->rank, g->nranks, &c, &qpn);
	if (rc == INCCL_OK && inccl__comm_local_ipv4(c, &ip) < 0) {
		inccl__set_last_error("rank %d: cannot read the address of the RDMA port", g->rank);
		rc = INCCL_ENODEV;
	}
	if (rc) {
		if (!inccl_last_error()[0])
			inccl__set_last_error("rank %d: cannot create the queue pair (error %d)", g->rank, rc);
		if (g->rank == 0)
			fail_all(g);
		else
			fail_to_master(g);
		return rc;
	}
	int crc = INCCL_OK;
	if (inccl__comm_algorithm(c) == INCCL_ALGO_RING) {
		rc = init_ring(g, c, ip, deadline);
		if (rc && g->rank != 0 && !inccl_last_error()[0])
			inccl__set_last_error("rank %d: %s", g->rank, inccl_errmsg(c));
		if (rc && g->rank != 0 && rc != INCCL_ECONN && rc != INCCL_ETIMEDOUT && rc != INCCL_EREFUSED &&
		    rc != INCCL_EBUSY) {
			crc = rc; /* a local failure: rank 0 hears it at "ready" */
			rc = INCCL_OK;
		}
	} else {
		rc = g->rank == 0 ? init_rank0(g, ip, qpn, deadline, &mine) : init_member(g, ip, qpn, deadline, &mine);
		if (rc == INCCL_OK && (crc = inccl_comm_connect(c, mine.ip, mine.qpn, mine.psn)))
			inccl__set_last_error("rank %d: %s", g->rank, inccl_errmsg(c));
	}
	if (rc) { /* rank 0 told everyone already; a member that lost rank 0 has nobody to tell */
		inccl_comm_destroy(c);
		return rc;
	}
	if ((rc = init_release(g, crc, deadline))) {
		if (g->rank == 0 && inccl__comm_algorithm(c) == INCCL_ALGO_INC)
			group_release(g, mine.comm);
		inccl_comm_destroy(c);
		return rc;
	}
	if (inccl__comm_algorithm(c) == INCCL_ALGO_INC) {
		g->comm = mine.comm;
		if (g->fault_comm) /* a fault of an older communicator is old news; a rank gone stays gone */
			g->fault[0] = 0;
		inccl__comm_attach(c, release_hook, group_watch, g, mine.comm);
	}
	*out = c;
	return INCCL_OK;
}

