/*
 * plan.c — the aggregation tree and switch rules of a communicator (plan.h).
 *
 * Conventions the switches and hosts rely on:
 *  - every host connection of a communicator starts at the same PSN both
 *    ways (packet k of a collective has the same PSN on every child, which
 *    is what the switches aggregate on); switch-switch links share another;
 *  - the children of a switch are listed in rank order and each covers
 *    consecutive ranks (Reduce finds the child holding its root that way);
 *  - switch queue pair numbers say what they are and whose they are
 *    (INC_QPN_TO_CHILD(), INC_QPN_TO_PARENT() of proto/inc_proto.h).
 */
#include "plan.h"

#include "../proto/inc_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SW_MAX_CHILDREN_PLAN 64 /* children a switch serves: SW_MAX_CHILDREN of switch/engine.h */

struct tree {
	const struct topology *t;
	int count[TOPO_MAX_NODES];  /* ranks at or below the node */
	int lo[TOPO_MAX_NODES], hi[TOPO_MAX_NODES];
	int host_rank[TOPO_MAX_NODES]; /* hosts: their rank in the communicator, else -1 */
	int member[TOPO_MAX_NODES]; /* switches of the communicator's tree */
};

/* The host whose data port has address @ip, or -1. */
static int host_by_ip(const struct topology *t, uint32_t ip)
{
	for (int n = 0; n < t->nnodes; n++)
		for (int p = 0; t->nodes[n].role == TOPO_HOST && p < t->nodes[n].nports; p++)
			if (t->nodes[n].ports[p].addr.addr == ip)
				return n;
	return -1;
}

/* The port of node @n whose other end is node @peer, or NULL. */
static const struct topo_port *port_to(const struct topology *t, int n, int peer)
{
	for (int p = 0; p < t->nodes[n].nports; p++)
		if (t->nodes[n].ports[p].peer == peer)
			return &t->nodes[n].ports[p];
	return NULL;
}

/* Is node @a above node @n in the tree (on @n's path of parents to the root, @n itself excluded)? */
static int is_ancestor(const struct topology *t, int a, int n)
{
	for (n = t->nodes[n].parent; n >= 0; n = t->nodes[n].parent)
		if (n == a)
			return 1;
	return 0;
}

/* Count the ranks below every node; find the top; mark the member switches. */
static int build_tree(struct tree *tr, const struct plan_rank_in *in, int nranks, int *top, char *err, size_t errlen)
{
	const struct topology *t = tr->t;
	char a[16];

	for (int n = 0; n < t->nnodes; n++) {
		tr->count[n] = 0;
		tr->lo[n] = nranks;
		tr->hi[n] = -1;
		tr->host_rank[n] = -1;
		tr->member[n] = 0;
	}
	for (int r = 0; r < nranks; r++) {
		int h = host_by_ip(t, in[r].ip);
		if (h < 0) {
			snprintf(err, errlen, "rank %d: address %s is no host of topology '%s'", r, topo_ntoa(in[r].ip, a),
				 t->name);
			return -1;
		}
		if (tr->host_rank[h] >= 0) {
			snprintf(err, errlen, "ranks %d and %d are both on host %s: one rank per host", tr->host_rank[h], r,
				 t->nodes[h].name);
			return -1;
		}
		if (!in[r].qpn || in[r].qpn > 0xffffff) {
			snprintf(err, errlen, "rank %d: queue pair number %u is not a valid QPN", r, in[r].qpn);
			return -1;
		}
		tr->host_rank[h] = r;
		for (int n = h; n >= 0; n = t->nodes[n].parent) {
			tr->count[n]++;
			tr->lo[n] = r < tr->lo[n] ? r : tr->lo[n];
			tr->hi[n] = r > tr->hi[n] ? r : tr->hi[n];
		}
	}
	/* the top is the lowest switch above every rank */
	*top = -1;
	for (int n = t->nodes[host_by_ip(t, in[0].ip)].parent; n >= 0 && *top < 0; n = t->nodes[n].parent)
		if (tr->count[n] == nranks)
			*top = n;
	if (*top < 0 || t->nodes[*top].role != TOPO_SWITCH) {
		snprintf(err, errlen, "the ranks have no switch in common");
		return -1;
	}
	for (int n = 0; n < t->nnodes; n++) {
		if (t->nodes[n].role != TOPO_SWITCH || !tr->count[n] || (n != *top && !is_ancestor(t, *top, n)))
			continue;
		tr->member[n] = 1;
		if (tr->hi[n] - tr->lo[n] + 1 != tr->count[n]) {
			snprintf(err, errlen,
				 "the %d ranks under switch %s (%d..%d) are not consecutive: number the ranks of the hosts "
				 "under one switch consecutively",
				 tr->count[n], t->nodes[n].name, tr->lo[n], tr->hi[n]);
			return -1;
		}
	}
	return 0;
}

/* The children of switch @s in the communicator, in rank order; returns how many. */
static int children_of(const struct tree *tr, int s, int *child)
{
	const struct topology *t = tr->t;
	int n = 0;

	for (int c = 0; c < t->nnodes; c++) {
		if (t->nodes[c].parent != s || !tr->count[c])
			continue;
		int k = n++;
		while (k > 0 && tr->lo[child[k - 1]] > tr->lo[c]) {
			child[k] = child[k - 1];
			k--;
		}
		child[k] = c;
	}
	return n;
}

/* The rules document of member switch @s; NULL when out of memory. */
static char *rules_of(const struct tree *tr, const struct plan_params *p, const struct plan_rank_in *in, int nranks,
		      int s, int top, struct plan *out)
{
	const struct topology *t = tr->t;
	int child[TOPO_MAX_NODES], nchild = children_of(tr, s, child);
	char *text = NULL, a[16], b[16];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, "msg: rules\ncomm: %u\nswitch: %s\nnslots: %u\nretransmit_us: %u\nrnr_timer: %u\nranks: %d\n", p->comm,
		t->nodes[s].name, p->nslots, p->retransmit_us, p->rnr_timer, nranks);
	if (s != top) {
		int up = t->nodes[s].parent;
		const struct topo_port *mine = port_to(t, s, up), *theirs = port_to(t, up, s);
		int k = 0;
		int sib[TOPO_MAX_NODES], nsib = children_of(tr, up, sib);
		while (k < nsib && sib[k] != s)
			k++;
		fprintf(f,
			"parent: {port: %s, local_ip: %s, peer_ip: %s, local_qpn: %u, peer_qpn: %u, rq_psn: %u, sq_psn: %u}\n",
			mine->ifname, topo_ntoa(mine->addr.addr, a), topo_ntoa(theirs->addr.addr, b), INC_QPN_TO_PARENT(p->comm),
			INC_QPN_TO_CHILD(p->comm, k), p->link_psn, p->link_psn);
	}
	fprintf(f, "children:\n");
	for (int k = 0; k < nchild; k++) {
		int c = child[k];
		const struct topo_port *mine = port_to(t, s, c), *theirs = port_to(t, c, s);
		fprintf(f, "  - {port: %s, local_ip: %s, peer_ip: %s, local_qpn: %u, ", mine->ifname,
			topo_ntoa(mine->addr.addr, a), topo_ntoa(theirs->addr.addr, b), INC_QPN_TO_CHILD(p->comm, k));
		if (t->nodes[c].role == TOPO_HOST) {
			int r = tr->host_rank[c];
			fprintf(f, "peer_qpn: %u, rq_psn: %u, sq_psn: %u, first_rank: %d, nranks: 1}\n", in[r].qpn,
				p->host_psn, p->host_psn, r);
			out->rank[r] = (struct plan_rank_out){ mine->addr.addr, INC_QPN_TO_CHILD(p->comm, k), s };
		} else {
			fprintf(f, "peer_qpn: %u, udp: 4792, rq_psn: %u, sq_psn: %u, first_rank: %d, nranks: %d}\n",
				INC_QPN_TO_PARENT(p->comm), p->link_psn, p->link_psn, tr->lo[c], tr->count[c]);
		}
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int plan_make(const struct topology *t, const struct plan_params *p, const struct plan_rank_in *in, int nranks,
	      struct plan *out, char *err, size_t errlen)
{
	static struct tree tr; /* large; the controller plans one communicator at a time */
	int top;

	memset(out, 0, sizeof(*out));
	if (nranks < 1 || nranks > PLAN_MAX_RANKS) {
		snprintf(err, errlen, "a communicator has 1..%d ranks, not %d", PLAN_MAX_RANKS, nranks);
		return -1;
	}
	tr.t = t;
	if (build_tree(&tr, in, nranks, &top, err, errlen) < 0)
		return -1;
	out->nranks = nranks;
	out->root = top;
	/* deepest switches first: a leaf's rules before its parent's */
	int depth[TOPO_MAX_NODES], deepest = 0;
	for (int n = 0; n < t->nnodes; n++) {
		depth[n] = 0;
		for (int a = t->nodes[n].parent; a >= 0; a = t->nodes[a].parent)
			depth[n]++;
		deepest = depth[n] > deepest ? depth[n] : deepest;
	}
	for (int d = deepest; d >= 0; d--)
		for (int n = 0; n < t->nnodes; n++) {
			if (!tr.member[n] || depth[n] != d)
				continue;
			if (t->nodes[n].nports > SW_MAX_CHILDREN_PLAN) {
				snprintf(err, errlen, "switch %s has more ports than a switch serves", t->nodes[n].name);
				plan_free(out);
				return -1;
			}
			out->sw[out->nswitches].node = n;
			if (!(out->sw[out->nswitches++].rules = rules_of(&tr, p, in, nranks, n, top, out))) {
				snprintf(err, errlen, "out of memory");
				plan_free(out);
				return -1;
			}
		}
	return 0;
}

void plan_free(struct plan *pl)
{
	for (int i = 0; i < pl->nswitches; i++)
		free(pl->sw[i].rules);
	pl->nswitches = 0;
}
