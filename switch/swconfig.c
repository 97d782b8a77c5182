/*
 * swconfig.c — the switch's rules for one communicator, from YAML (libyaml).
 *
 * The controller sends this document (switch/README.md); the daemon also
 * reads it from a file. Example:
 *
 *   msg: rules              # when it comes from the controller (TCP 52311)
 *   comm: 3                 # the communicator these rules serve
 *   switch: sw1
 *   nslots: 1024            # aggregation slots (>= the hosts' window)
 *   retransmit_us: 20000    # resend unacknowledged results after this long (the longest timeout)
 *   window: 64              # frames in flight on a switch-switch link (default SW_WINDOW)
 *   min_rto_us: 50000       # the adaptive retransmit timeout never goes below this
 *   rnr_timer: 1            # RNR NAK timer code for a busy slot (IBTA table 45)
 *   ranks: 4                # ranks of the communicator (a leaf; default: the children's)
 *   parent: {port: to-sw0, local_ip: 172.16.0.5, peer_ip: 172.16.0.1,
 *            local_qpn: 512, peer_qpn: 768, rq_psn: 0, sq_psn: 0}   # a leaf only
 *   children:
 *     - {port: to-pku1, local_ip: 10.1.1.1, peer_ip: 10.1.1.21, local_qpn: 256,
 *        peer_qpn: 17, rq_psn: 0, sq_psn: 0, first_rank: 0, nranks: 1}
 *
 * Every error names the line; nothing is half-applied.
 */
#include "swconfig.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ld {
	yaml_document_t doc;
	const char *name;
	FILE *err;
	int nerr;
};

static void bad(struct ld *l, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void bad(struct ld *l, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	fprintf(l->err, "%s:%zu: ", l->name, n ? n->start_mark.line + 1 : 1);
	va_start(ap, fmt);
	vfprintf(l->err, fmt, ap);
	va_end(ap);
	fputc('\n', l->err);
	l->nerr++;
}

static const char *text(struct ld *l, yaml_node_t *n, const char *key)
{
	if (n->type != YAML_SCALAR_NODE) {
		bad(l, n, "'%s' must be a plain value", key);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

static int num(struct ld *l, yaml_node_t *n, const char *key, unsigned long max, unsigned long *out)
{
	const char *s = text(l, n, key);
	char *end;

	if (!s)
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 0);
	if (errno || end == s || *end || *out > max || s[0] == '-') {
		bad(l, n, "'%s' must be a number in 0..%lu, not '%s'", key, max, s);
		return -1;
	}
	return 0;
}

static int ip(struct ld *l, yaml_node_t *n, const char *key, uint32_t *out)
{
	const char *s = text(l, n, key);
	struct in_addr a;

	if (!s)
		return -1;
	if (inet_pton(AF_INET, s, &a) != 1) {
		bad(l, n, "'%s' must be an IPv4 address, not '%s'", key, s);
		return -1;
	}
	*out = ntohl(a.s_addr);
	return 0;
}

/*
 * ifname_ok — @s (@len bytes, as the YAML scalar holds them) is a name the
 * kernel would give an interface: what net/core/dev.c's dev_valid_name()
 * accepts. Non-empty, at most IFNAMSIZ - 1 = 15 bytes, no NUL inside (a
 * "\0" escape would cut it short in strcmp), not "." or "..", no '/', ':'
 * or white space.
 */
static int ifname_ok(const char *s, size_t len)
{
	if (!len || len >= SW_PORT_NAME_MAX || strlen(s) != len || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s))
			return 0;
	return 1;
}

/* A connection: a child, or (@is_parent) the parent, which has no ranks and uses UDP 4792. */
static void conn(struct ld *l, yaml_node_t *m, struct sw_rules *r, int is_parent)
{
	struct sw_conn_cfg *c;
	unsigned long v;
	int have = 0;
	enum { PORT = 1, LIP = 2, PIP = 4, LQPN = 8, PQPN = 16, RANKS = 32 };
	const char *what = is_parent ? "the parent" : "a child";

	if (m->type != YAML_MAPPING_NODE) {
		bad(l, m, "%s must be a mapping (port, local_ip, peer_ip, local_qpn, peer_qpn, ...)", what);
		return;
	}
	if (!is_parent && r->cfg.nchildren == SW_MAX_CHILDREN) {
		bad(l, m, "more than %d children", SW_MAX_CHILDREN);
		return;
	}
	c = is_parent ? &r->cfg.parent : &r->cfg.child[r->cfg.nchildren];
	memset(c, 0, sizeof(*c));
	c->udp_dst = is_parent ? 4792 : 4791;
	if (is_parent)
		have |= RANKS;
	c->nranks = 1;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&l->doc, p->key), *vn = yaml_document_get_node(&l->doc, p->value);
		const char *key = text(l, k, "key");
		if (!key)
			continue;
		if (!strcmp(key, "port")) {
			const char *s = text(l, vn, key);
			int i;
			if (!s)
				continue;
			if (!ifname_ok(s, vn->data.scalar.length)) {
				bad(l, vn, "'port' must be an interface name (1..%d characters, no '/', ':' or space)",
				    SW_PORT_NAME_MAX - 1);
				continue;
			}
			for (i = 0; i < r->nports && strcmp(r->port[i], s); i++)
				;
			if (i == r->nports) {
				if (r->nports == SW_MAX_CHILDREN) {
					bad(l, vn, "too many ports");
					continue;
				}
				strcpy(r->port[r->nports++], s);
			}
			c->port = i;
			have |= PORT;
		} else if (!strcmp(key, "local_ip")) {
			if (!ip(l, vn, key, &c->local_ip))
				have |= LIP;
		} else if (!strcmp(key, "peer_ip")) {
			if (!ip(l, vn, key, &c->peer_ip))
				have |= PIP;
		} else if (!strcmp(key, "local_qpn")) {
			if (!num(l, vn, key, 0xffffff, &v) && v) {
				c->local_qpn = (uint32_t)v;
				have |= LQPN;
			}
		} else if (!strcmp(key, "peer_qpn")) {
			if (!num(l, vn, key, 0xffffff, &v) && v) {
				c->peer_qpn = (uint32_t)v;
				have |= PQPN;
			}
		} else if (!strcmp(key, "rq_psn")) {
			if (!num(l, vn, key, 0xffffff, &v))
				c->rq_psn = (uint32_t)v;
		} else if (!strcmp(key, "sq_psn")) {
			if (!num(l, vn, key, 0xffffff, &v))
				c->sq_psn = (uint32_t)v;
		} else if (!strcmp(key, "udp")) {
			if (!num(l, vn, key, 65535, &v))
				c->udp_dst = (uint16_t)v;
		} else if (!strcmp(key, "first_rank")) {
			if (!num(l, vn, key, 0xfffe, &v)) {
				c->first_rank = (uint16_t)v;
				have |= RANKS;
			}
		} else if (!strcmp(key, "nranks")) {
			if (!num(l, vn, key, 0xfffe, &v) && v)
				c->nranks = (uint16_t)v;
		} else {
			bad(l, k, "unknown child key '%s'", key);
		}
	}
	if (have != (PORT | LIP | PIP | LQPN | PQPN | RANKS))
		bad(l, m, "%s needs port, local_ip, peer_ip, local_qpn, peer_qpn (non-zero)%s", what,
		    is_parent ? "" : " and first_rank");
	if (is_parent)
		r->cfg.has_parent = 1;
	else
		r->cfg.nchildren++;
}

int sw_rules_parse(const char *yaml, size_t len, const char *name, struct sw_rules *r, FILE *err)
{
	struct ld l = { .name = name, .err = err };
	yaml_parser_t parser;
	yaml_node_t *top;
	unsigned long v;

	memset(r, 0, sizeof(*r));
	r->cfg.nslots = 1024;
	r->cfg.retransmit_ns = 20000000;
	r->cfg.rnr_timer = 1;
	/* A TCG guest (host or switch VM) stalls for tens of ms: a shorter floor resends
	 * what is only late (lab, 4 MiB tree AllReduce: 2 ms gave 25k needless resends). */
	r->cfg.min_rto_ns = 50000000;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &l.doc)) {
		fprintf(err, "%s:%zu: YAML error: %s\n", name, parser.problem_mark.line + 1,
			parser.problem ? parser.problem : "unknown");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_parser_delete(&parser);
	top = yaml_document_get_root_node(&l.doc);
	if (!top || top->type != YAML_MAPPING_NODE) {
		bad(&l, top, "switch rules must be a mapping with 'children:'");
		goto out;
	}
	for (yaml_node_pair_t *p = top->data.mapping.pairs.start; p < top->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&l.doc, p->key), *vn = yaml_document_get_node(&l.doc, p->value);
		const char *key = text(&l, k, "key");
		if (!key)
			continue;
		if (!strcmp(key, "switch")) {
			const char *s = text(&l, vn, key);
			if (s)
				snprintf(r->name, sizeof(r->name), "%s", s);
		} else if (!strcmp(key, "nslots")) {
			if (!num(&l, vn, key, SW_MAX_SLOTS, &v))
				r->cfg.nslots = (uint32_t)v;
		} else if (!strcmp(key, "retransmit_us")) {
			if (!num(&l, vn, key, 10000000, &v))
				r->cfg.retransmit_ns = v * 1000;
		} else if (!strcmp(key, "rnr_timer")) {
			if (!num(&l, vn, key, 31, &v))
				r->cfg.rnr_timer = (uint8_t)v;
		} else if (!strcmp(key, "children")) {
			if (vn->type != YAML_SEQUENCE_NODE) {
				bad(&l, vn, "'children' must be a list");
				continue;
			}
			for (yaml_node_item_t *i = vn->data.sequence.items.start; i < vn->data.sequence.items.top; i++)
				conn(&l, yaml_document_get_node(&l.doc, *i), r, 0);
		} else if (!strcmp(key, "parent")) {
			conn(&l, vn, r, 1);
		} else if (!strcmp(key, "ranks")) {
			if (!num(&l, vn, key, 0xfffe, &v))
				r->cfg.total_ranks = (uint16_t)v;
		} else if (!strcmp(key, "min_rto_us")) {
			if (!num(&l, vn, key, 10000000, &v))
				r->cfg.min_rto_ns = v * 1000;
		} else if (!strcmp(key, "window")) {
			if (!num(&l, vn, key, SW_MAX_WINDOW, &v))
				r->cfg.window = (uint32_t)v;
		} else if (!strcmp(key, "comm")) {
			if (!num(&l, vn, key, 0xffffffff, &v))
				r->comm = (unsigned)v;
		} else if (!strcmp(key, "msg")) {
			/* the controller's message kind; a rules file may carry it too */
			const char *s = text(&l, vn, key);
			if (s && strcmp(s, "rules"))
				bad(&l, vn, "'msg' of switch rules must be 'rules', not '%s'", s);
		} else {
			bad(&l, k, "unknown key '%s' (switch, comm, nslots, retransmit_us, min_rto_us, window, rnr_timer, ranks, children, parent)",
			    key);
		}
	}
	if (!l.nerr && r->cfg.nchildren == 0)
		bad(&l, top, "no children");
out:
	yaml_document_delete(&l.doc);
	return l.nerr ? -1 : 0;
}
