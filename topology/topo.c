/*
 * topo.c — parse and validate a topology file (libyaml), derive the tree.
 *
 * Parsing uses libyaml's document API so that every node carries its line:
 * each complaint names the file and the line of the offending declaration.
 * Validation collects every error before giving up, so a user fixes a broken
 * file in one pass. Derived facts (ports, segments, bridges, parents, routes)
 * are computed only for a file that passed every check.
 */
#include "topo.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ctx {
	struct topology *t;
	yaml_document_t *doc;
	FILE *err;
	int nerr;
	/* memory defaults per role, from "defaults:" */
	int def_vcpus;
	int def_mem[3];
	/* parse_hypervisors() ran (the section was there): a node's "hypervisor:" is looked up */
	int have_hypervisors;
};

static void errf(struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * errf() - report one error of the topology file: "FILE:LINE: message" on
 * c->err, and count it (c->nerr); parsing goes on, so one run names every
 * error.
 */
static void errf(struct ctx *c, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(c->err, "%s:%d: ", c->t->file, line);
	va_start(ap, fmt);
	vfprintf(c->err, fmt, ap);
	va_end(ap);
	fputc('\n', c->err);
	c->nerr++;
}

/*
 * topo_word_ok() - whether @s is a word of the lab's name grammar: 1..@max
 * characters of a-z and 0-9 in groups joined by single '-' (no leading,
 * trailing or doubled '-'), the first one a letter when @letter_first.
 * Names are written unquoted into libvirt XML (also inside comments, where
 * "--" is not allowed), cloud-config, netplan, shell files that are sourced
 * (node.conf) and interface names: this grammar is what makes that safe.
 */
int topo_word_ok(const char *s, size_t max, int letter_first)
{
	size_t len = strlen(s);

	if (len < 1 || len > max || (letter_first && !islower((unsigned char)s[0])) || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || (s[i] == '-' && s[i + 1] != '-')))
			return 0;
	return 1;
}

/* @s for a message in @buf: printable ASCII as is, every other byte as \xNN, at most about 60 characters. */
static const char *shown(const char *s, char buf[80])
{
	size_t n = 0;

	for (; *s && n < 60; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, 80 - n, "\\x%02x", ch);
	}
	if (*s)
		n += (size_t)snprintf(buf + n, 80 - n, "...");
	buf[n] = 0;
	return buf;
}

/*
 * say_bad_char() - @why (of @len) names the byte @bad that a field of the
 * characters @allowed may not hold: the character when printable, its hex
 * value always.
 */
static void say_bad_char(char *why, size_t len, unsigned char bad, const char *allowed)
{
	if (bad >= 0x20 && bad < 0x7f)
		snprintf(why, len, "character %c (0x%02x) is not allowed (%s only)", bad, bad, allowed);
	else
		snprintf(why, len, "byte \\x%02x is not allowed (%s only)", bad, allowed);
}

/* Characters a URI may hold: no quote, blank, '<', '>', '$', '`', ';' or '\\'. */
#define URI_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/@?&=%+,"

int topo_uri_ok(const char *s, char *why, size_t len)
{
	static const char *const transports[] = { "", "+ssh", "+libssh", "+libssh2", "+tls", "+tcp", "+unix" };
	const char *p, *auth, *path, *at, *colon;
	size_t n = strlen(s), tlen, alen;
	int remote = -1;

	if (n < 1 || n > TOPO_URI_MAX) {
		snprintf(why, len, "it must be 1..%d characters", TOPO_URI_MAX);
		return 0;
	}
	if ((tlen = strspn(s, URI_CHARS)) != n) {
		say_bad_char(why, len, (unsigned char)s[tlen], "A-Z a-z 0-9 - . _ ~ : / @ ? & = % + ,");
		return 0;
	}
	if (strncmp(s, "qemu", 4) != 0 || !(p = strstr(s, "://"))) {
		snprintf(why, len, "the driver must be qemu (qemu:// or qemu+TRANSPORT://)");
		return 0;
	}
	tlen = (size_t)(p - (s + 4));
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (strlen(transports[i]) == tlen && strncmp(s + 4, transports[i], tlen) == 0)
			remote = i > 0 && strcmp(transports[i], "+unix") != 0;
	if (remote < 0) {
		snprintf(why, len, "unknown transport '%.*s' (+ssh, +libssh, +libssh2, +tls, +tcp, +unix)",
			 (int)(tlen > 40 ? 40 : tlen), s + 4);
		return 0;
	}
	auth = p + 3;
	path = strchr(auth, '/');
	if (!path) {
		snprintf(why, len, "no path: it must end in /system or /session");
		return 0;
	}
	alen = (size_t)(path - auth);
	at = memchr(auth, '@', alen);
	if (at && (at == auth || memchr(at + 1, '@', (size_t)(path - at - 1)))) {
		snprintf(why, len, "a user name, then one '@', then the host");
		return 0;
	}
	p = at ? at + 1 : auth; /* the host[:port] */
	colon = memchr(p, ':', (size_t)(path - p));
	if ((colon ? colon : path) == p && remote) {
		snprintf(why, len, "a remote transport needs a host (qemu+ssh://user@host/system)");
		return 0;
	}
	if (alen && !remote) {
		snprintf(why, len, "a local connection names no host (qemu:///system)");
		return 0;
	}
	for (const char *q = p; q < (colon ? colon : path); q++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *q)) {
			snprintf(why, len, "the host must be a name or an IPv4 address (letters, digits, '.' and '-')");
			return 0;
		}
	if (colon) {
		long port = 0;
		const char *q = colon + 1;
		for (; q < path && *q >= '0' && *q <= '9' && port <= 65535; q++)
			port = port * 10 + (*q - '0');
		if (q != path || q == colon + 1 || port < 1 || port > 65535) {
			snprintf(why, len, "the port must be a number in 1..65535");
			return 0;
		}
	}
	tlen = strcspn(path, "?");
	if (!((tlen == 7 && strncmp(path, "/system", 7) == 0) || (tlen == 8 && strncmp(path, "/session", 8) == 0))) {
		snprintf(why, len, "the path must be /system or /session, not '%.*s'", (int)(tlen > 40 ? 40 : tlen), path);
		return 0;
	}
	if (path[tlen] == '?' && (strchr(path + tlen + 1, '?') || !path[tlen + 1])) {
		snprintf(why, len, "one '?' before a query that is not empty");
		return 0;
	}
	return 1;
}

int topo_dir_ok(const char *s, char *why, size_t len)
{
	size_t n = strlen(s), ok = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-");

	if (n < 2 || n > TOPO_IMAGES_MAX || s[0] != '/') {
		snprintf(why, len, "it must be an absolute path (a leading /) of 2..%d characters, not / itself", TOPO_IMAGES_MAX);
		return 0;
	}
	if (ok != n) {
		say_bad_char(why, len, (unsigned char)s[ok], "A-Z a-z 0-9 . _ / + -");
		return 0;
	}
	if (strstr(s, "--")) {
		snprintf(why, len, "'--' is not allowed");
		return 0;
	}
	for (const char *c = s; c; c = strchr(c + 1, '/')) {
		size_t k = strcspn(c + 1, "/"); /* the component after this '/' */
		if (k == 0 || (k == 1 && c[1] == '.') || (k == 2 && c[1] == '.' && c[2] == '.')) {
			snprintf(why, len, "an empty, '.' or '..' component (or a trailing '/') is not allowed");
			return 0;
		}
	}
	return 1;
}

const char *topo_role_name(enum topo_role r)
{
	static const char *const names[] = { "controller", "switch", "host" };
	return names[r];
}

uint32_t topo_mask(int prefix)
{
	return prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
}

const char *topo_ntoa(uint32_t addr, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255,
		 (addr >> 8) & 255, addr & 255);
	return buf;
}

int topo_find(const struct topology *t, const char *name)
{
	for (int i = 0; i < t->nnodes; i++)
		if (strcmp(t->nodes[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- YAML access helpers ------------------------------------------------ */

/* The 1-based line of the file where node @n starts (libyaml counts from 0). */
static int line_of(const yaml_node_t *n)
{
	return (int)n->start_mark.line + 1;
}

/* Node @idx of the document being parsed (libyaml's index in a pair or sequence). */
static yaml_node_t *yget(struct ctx *c, int idx)
{
	return yaml_document_get_node(c->doc, idx);
}

/* The text of a scalar node, or NULL (with an error naming @what). */
static const char *scalar(struct ctx *c, yaml_node_t *n, const char *what)
{
	if (n->type != YAML_SCALAR_NODE) {
		errf(c, line_of(n), "%s must be a plain value", what);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

/*
 * The whole decimal integer of scalar @n, in @lo..@hi, into *@out: 0, or -1
 * (an error naming @what and what was written; *@out unchanged).
 */
static int parse_int(struct ctx *c, yaml_node_t *n, const char *what, int lo, int hi, int *out)
{
	const char *s = scalar(c, n, what);
	char *end;
	long v;

	if (!s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		errf(c, line_of(n), "%s must be an integer in %d..%d, not '%s'", what, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/*
 * Parse "a.b.c.d" or "a.b.c.d/p". @want_prefix: 1 requires "/p", 0 forbids it
 * (the prefix is then 32).
 */
static int parse_cidr_text(const char *s, int want_prefix, struct topo_cidr *out)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct in_addr ia;

	if (alen >= sizeof(buf) || (slash != NULL) != (want_prefix != 0))
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = 0;
	if (inet_pton(AF_INET, buf, &ia) != 1)
		return -1;
	out->addr = ntohl(ia.s_addr);
	out->prefix = 32;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || p < 1 || p > 32)
			return -1;
		out->prefix = (int)p;
	}
	return 0;
}

/* parse_cidr_text() of scalar @n into *@out: 0, or -1 with an error naming @what and an example. */
static int parse_cidr(struct ctx *c, yaml_node_t *n, const char *what, int want_prefix,
		      struct topo_cidr *out)
{
	const char *s = scalar(c, n, what);

	if (!s)
		return -1;
	if (parse_cidr_text(s, want_prefix, out) < 0) {
		errf(c, line_of(n), "%s: '%s' is not an IPv4 address%s", what, s,
		     want_prefix ? " with /prefix (like 10.1.1.21/24)" : " (like 192.168.0.3)");
		return -1;
	}
	return 0;
}

/* Is @a a usable host address of its subnet (not the network or broadcast)? */
static int host_address_ok(struct topo_cidr a)
{
	uint32_t hostpart = a.addr & ~topo_mask(a.prefix);

	if (a.prefix >= 31)
		return 1;
	return hostpart != 0 && hostpart != ~topo_mask(a.prefix);
}

/* Do subnets @a and @b share an address (one holds the other, at the shorter prefix)? */
static int overlaps(struct topo_cidr a, struct topo_cidr b)
{
	int p = a.prefix < b.prefix ? a.prefix : b.prefix;
	return (a.addr & topo_mask(p)) == (b.addr & topo_mask(p));
}

/* "a.b.c.d/p" of @a in @buf (24 bytes hold the longest); returns @buf. */
static const char *cidr_str(struct topo_cidr a, char buf[24])
{
	char ip[16];
	snprintf(buf, 24, "%s/%d", topo_ntoa(a.addr, ip), a.prefix);
	return buf;
}

/* ---- sections --------------------------------------------------------- */

/* The role named @s (controller, switch, host) into *@r: 0, or -1 for any other word. */
static int role_from(const char *s, enum topo_role *r)
{
	for (int i = TOPO_CONTROLLER; i <= TOPO_HOST; i++)
		if (strcmp(s, topo_role_name(i)) == 0) {
			*r = i;
			return 0;
		}
	return -1;
}

/*
 * The "defaults:" mapping @m: vcpus and memory per role, into @c for nodes
 * that name neither; an unknown key or role, or a value out of range, is an
 * error (the built-in default stays).
 */
static void parse_defaults(struct ctx *c, yaml_node_t *m)
{
	if (m->type != YAML_MAPPING_NODE) {
		errf(c, line_of(m), "defaults must be a mapping (vcpus:, memory:)");
		return;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yget(c, p->key), *v = yget(c, p->value);
		const char *key = scalar(c, k, "a key");

		if (!key)
			continue;
		if (strcmp(key, "vcpus") == 0) {
			parse_int(c, v, "defaults.vcpus", 1, 64, &c->def_vcpus);
		} else if (strcmp(key, "memory") == 0) {
			if (v->type != YAML_MAPPING_NODE) {
				errf(c, line_of(v), "defaults.memory must map roles to MiB");
				continue;
			}
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
				yaml_node_t *rk = yget(c, q->key);
				const char *rs = scalar(c, rk, "a role");
				enum topo_role r;

				if (!rs)
					continue;
				if (role_from(rs, &r) < 0) {
					errf(c, line_of(rk), "defaults.memory: unknown role '%s' (controller, switch, host)", rs);
					continue;
				}
				parse_int(c, yget(c, q->value), "defaults.memory", 128, 1 << 20, &c->def_mem[r]);
			}
		} else {
			errf(c, line_of(k), "unknown key 'defaults.%s' (known: vcpus, memory)", key);
		}
	}
}

/* The index of the hypervisor called @name, or -1. */
static int hyp_find(const struct topology *t, const char *name)
{
	for (int h = 0; h < t->nhypervisors; h++)
		if (strcmp(t->hypervisors[h].name, name) == 0)
			return h;
	return -1;
}

/*
 * The "hypervisors:" mapping @m, NAME: {uri: URI, address: A.B.C.D}, in the
 * order written (the first is where the lab's own management network is;
 * lab.sh runs there). Every name, URI and address is checked on its own
 * (topo_word_ok, topo_uri_ok, a unicast IPv4 address), names and URIs for
 * duplicates; at most TOPO_MAX_HYPERVISORS.
 */
static void parse_hypervisors(struct ctx *c, yaml_node_t *m)
{
	struct topology *t = c->t;

	c->have_hypervisors = 1;
	if (m->type != YAML_MAPPING_NODE || m->data.mapping.pairs.top == m->data.mapping.pairs.start) {
		errf(c, line_of(m), "hypervisors must map names to {uri: URI, address: A.B.C.D}, like "
				    "{a: {uri: 'qemu:///system', address: 10.0.0.1}}");
		return;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yget(c, p->key), *v = yget(c, p->value);
		const char *name = scalar(c, k, "a hypervisor's name");
		struct topo_hypervisor *h;
		int have_uri = 0, have_addr = 0, other; /* 1: valid; -1: given, not valid (said so) */
		char b[80], why[160];

		if (!name)
			continue;
		if (!topo_word_ok(name, TOPO_NAME_MAX, 1)) {
			errf(c, line_of(k), "hypervisor name '%s' must be 1..%d characters of a-z, 0-9 and single '-' between them, "
					    "starting with a letter", shown(name, b), TOPO_NAME_MAX);
			continue;
		}
		if ((other = hyp_find(t, name)) >= 0) {
			errf(c, line_of(k), "duplicate hypervisor name '%s' (first declared at line %d)", name,
			     t->hypervisors[other].line);
			continue;
		}
		if (t->nhypervisors == TOPO_MAX_HYPERVISORS) {
			errf(c, line_of(k), "too many hypervisors (at most %d)", TOPO_MAX_HYPERVISORS);
			return;
		}
		h = &t->hypervisors[t->nhypervisors++];
		memset(h, 0, sizeof(*h));
		strcpy(h->name, name);
		strcpy(h->images, TOPO_IMAGES_DEFAULT);
		h->line = line_of(k);
		if (v->type != YAML_MAPPING_NODE) {
			errf(c, line_of(v), "hypervisor '%s' must be a mapping {uri: URI, address: A.B.C.D}", name);
			continue;
		}
		for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
			yaml_node_t *hk = yget(c, q->key), *hv = yget(c, q->value);
			const char *key = scalar(c, hk, "a key"), *s;

			if (!key)
				continue;
			if (strcmp(key, "uri") == 0) {
				have_uri = -1;
				if (!(s = scalar(c, hv, "uri")))
					continue;
				if (!topo_uri_ok(s, why, sizeof(why))) {
					errf(c, line_of(hv), "hypervisor '%s': uri '%s' is not a libvirt URI of QEMU that the lab takes: %s",
					     name, shown(s, b), why);
					continue;
				}
				strcpy(h->uri, s);
				have_uri = 1;
				for (int j = 0; j < t->nhypervisors - 1; j++)
					if (strcmp(t->hypervisors[j].uri, s) == 0)
						errf(c, line_of(hv), "hypervisor '%s' has the uri of '%s' (line %d): one connection, one hypervisor",
						     name, t->hypervisors[j].name, t->hypervisors[j].line);
			} else if (strcmp(key, "address") == 0) {
				struct topo_cidr a;
				char ab[80];
				have_addr = -1;
				if (parse_cidr(c, hv, "address", 0, &a) < 0)
					continue;
				/* 0.0.0.0/8, multicast and above: no machine's unicast address */
				if ((a.addr >> 24) == 0 || (a.addr >> 28) >= 14) {
					errf(c, line_of(hv), "hypervisor '%s': address %s is not a unicast address of a machine",
					     name, topo_ntoa(a.addr, ab));
					continue;
				}
				h->addr = a.addr;
				have_addr = 1;
			} else if (strcmp(key, "images") == 0) {
				if (!(s = scalar(c, hv, "images")))
					continue;
				if (!topo_dir_ok(s, why, sizeof(why))) {
					errf(c, line_of(hv), "hypervisor '%s': images '%s' is not a directory the lab takes: %s", name,
					     shown(s, b), why);
					continue;
				}
				strcpy(h->images, s);
			} else {
				errf(c, line_of(hk), "unknown hypervisor key '%s' (known: uri, address, images)", key);
			}
		}
		if (!have_uri)
			errf(c, h->line, "hypervisor '%s' has no uri (its libvirt connection)", name);
		if (!have_addr)
			errf(c, h->line, "hypervisor '%s' has no address (where the others send its tunnels)", name);
	}
}

/*
 * A node's "hypervisor: NAME" (@v) for @n: the hypervisor it runs on, which
 * the hypervisors section must declare.
 */
static void place_node(struct ctx *c, struct topo_node *n, yaml_node_t *v)
{
	struct topology *t = c->t;
	const char *s = scalar(c, v, "hypervisor");
	char b[80], names[TOPO_MAX_HYPERVISORS * (TOPO_NAME_MAX + 2) + 1] = "";

	if (!s)
		return;
	if ((n->hypervisor = hyp_find(t, s)) >= 0) {
		n->placed = 1;
		return;
	}
	if (!c->have_hypervisors) {
		errf(c, line_of(v), "node '%s' is placed on hypervisor '%s', but the topology declares no hypervisors", n->name,
		     shown(s, b));
		return;
	}
	for (int h = 0; h < t->nhypervisors; h++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", h ? ", " : "", t->hypervisors[h].name);
	errf(c, line_of(v), "node '%s' is placed on undeclared hypervisor '%s' (declared: %s)", n->name, shown(s, b), names);
}

/*
 * One item @m of "nodes:" appended to the topology (at most TOPO_MAX_NODES):
 * name, role, rank, mgmt, vcpus, memory, each checked on its own; what a
 * node must have (a name, a role, a mgmt address, a rank for a host and only
 * for a host) is checked here, what depends on other nodes in check_nodes().
 */
static void parse_node(struct ctx *c, yaml_node_t *m)
{
	struct topology *t = c->t;
	struct topo_node *n;
	yaml_node_t *hyp = NULL;
	int have_role = 0, have_mgmt = 0;

	if (m->type != YAML_MAPPING_NODE) {
		errf(c, line_of(m), "a node must be a mapping like {name: pku1, role: host, rank: 0, mgmt: 192.168.0.101}");
		return;
	}
	if (t->nnodes == TOPO_MAX_NODES) {
		errf(c, line_of(m), "too many nodes (at most %d)", TOPO_MAX_NODES);
		return;
	}
	n = &t->nodes[t->nnodes++];
	memset(n, 0, sizeof(*n));
	n->line = line_of(m);
	n->rank = -1;
	n->parent = -1;
	n->hypervisor = -1;
	n->vcpus = -1;
	n->memory_mib = -1;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yget(c, p->key), *v = yget(c, p->value);
		const char *key = scalar(c, k, "a key"), *s;

		if (!key)
			continue;
		if (strcmp(key, "name") == 0) {
			if (!(s = scalar(c, v, "name")))
				continue;
			char b[80];
			if (!topo_word_ok(s, TOPO_NAME_MAX, 1))
				errf(c, line_of(v),
				     "node name '%s' must be 1..%d characters of a-z, 0-9 and single '-' between them, starting with a letter",
				     shown(s, b), TOPO_NAME_MAX);
			else
				strcpy(n->name, s);
		} else if (strcmp(key, "role") == 0) {
			if (!(s = scalar(c, v, "role")))
				continue;
			if (role_from(s, &n->role) < 0)
				errf(c, line_of(v), "unknown role '%s' (controller, switch, host)", s);
			else
				have_role = 1;
		} else if (strcmp(key, "rank") == 0) {
			parse_int(c, v, "rank", 0, TOPO_MAX_NODES - 1, &n->rank);
		} else if (strcmp(key, "mgmt") == 0) {
			struct topo_cidr a;
			if (parse_cidr(c, v, "mgmt", 0, &a) == 0) {
				n->mgmt = a.addr;
				have_mgmt = 1;
			}
		} else if (strcmp(key, "vcpus") == 0) {
			parse_int(c, v, "vcpus", 1, 64, &n->vcpus);
		} else if (strcmp(key, "memory") == 0) {
			parse_int(c, v, "memory", 128, 1 << 20, &n->memory_mib);
		} else if (strcmp(key, "hypervisor") == 0) {
			hyp = v; /* looked up once the node's name is known */
		} else {
			errf(c, line_of(k), "unknown node key '%s' (known: name, role, rank, mgmt, vcpus, memory, hypervisor)", key);
		}
	}
	if (hyp)
		place_node(c, n, hyp);
	if (!n->name[0])
		errf(c, n->line, "node without a valid name");
	if (!have_role)
		errf(c, n->line, "node '%s' has no valid role", n->name);
	if (!have_mgmt)
		errf(c, n->line, "node '%s' has no valid mgmt address", n->name);
	if (have_role && n->role == TOPO_HOST && n->rank < 0)
		errf(c, n->line, "host '%s' has no rank", n->name);
	if (have_role && n->role != TOPO_HOST && n->rank >= 0)
		errf(c, n->line, "%s '%s' cannot have a rank (only hosts have ranks)", topo_role_name(n->role), n->name);
}

/*
 * One item @m of "links:", {NODE_A: ADDR/P, NODE_B: ADDR/P}, appended to the
 * topology (at most TOPO_MAX_LINKS) when both ends name known nodes and both
 * addresses parse; the link's own consistency is check_links()'.
 */
static void parse_link(struct ctx *c, yaml_node_t *m)
{
	struct topology *t = c->t;
	struct topo_link *l;
	int end = 0;

	if (m->type != YAML_MAPPING_NODE ||
	    m->data.mapping.pairs.top - m->data.mapping.pairs.start != 2) {
		errf(c, line_of(m), "a link must name exactly two nodes with their addresses, like {sw1: 10.1.1.1/24, pku1: 10.1.1.21/24}");
		return;
	}
	if (t->nlinks == TOPO_MAX_LINKS) {
		errf(c, line_of(m), "too many links (at most %d)", TOPO_MAX_LINKS);
		return;
	}
	l = &t->links[t->nlinks];
	l->line = line_of(m);
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++, end++) {
		const char *name = scalar(c, yget(c, p->key), "a link end");
		char what[64];

		if (!name)
			return;
		l->node[end] = topo_find(t, name);
		if (l->node[end] < 0) {
			errf(c, l->line, "link names unknown node '%s' (dangling link)", name);
			return;
		}
		snprintf(what, sizeof(what), "address of %s", name);
		if (parse_cidr(c, yget(c, p->value), what, 1, &l->addr[end]) < 0)
			return;
	}
	t->nlinks++;
}

/* ---- validation and derivation ------------------------------------------ */

/* check_nodes() - give each node its default vCPUs and memory, and report (errf) duplicate names,
 * duplicate or out-of-subnet management addresses and a controller count other than one;
 * count the hosts into t->nhosts, then report host ranks out of 0..nhosts-1 or taken twice. */
static void check_nodes(struct ctx *c)
{
	struct topology *t = c->t;
	int ncontrollers = 0;
	int rank_line[TOPO_MAX_NODES] = { 0 };
	char a[16];

	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];

		if (n->vcpus < 0)
			n->vcpus = c->def_vcpus;
		if (n->memory_mib < 0)
			n->memory_mib = c->def_mem[n->role];
		for (int j = 0; j < i; j++) {
			if (n->name[0] && strcmp(n->name, t->nodes[j].name) == 0)
				errf(c, n->line, "duplicate node name '%s' (first declared at line %d)", n->name, t->nodes[j].line);
			if (n->mgmt && n->mgmt == t->nodes[j].mgmt)
				errf(c, n->line, "mgmt address %s of '%s' is already used by '%s' (line %d)",
				     topo_ntoa(n->mgmt, a), n->name, t->nodes[j].name, t->nodes[j].line);
		}
		if (n->mgmt && (!overlaps((struct topo_cidr){ n->mgmt, 32 }, t->mgmt) ||
				!host_address_ok((struct topo_cidr){ n->mgmt, t->mgmt.prefix })))
			errf(c, n->line, "mgmt address %s of '%s' is not a host address of the management subnet",
			     topo_ntoa(n->mgmt, a), n->name);
		if (n->role == TOPO_CONTROLLER)
			ncontrollers++;
		if (n->role == TOPO_HOST)
			t->nhosts++;
	}
	if (ncontrollers != 1)
		errf(c, 1, "a topology needs exactly one controller node, found %d", ncontrollers);
	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];

		if (n->role != TOPO_HOST || n->rank < 0)
			continue;
		if (n->rank >= t->nhosts)
			errf(c, n->line, "rank %d of '%s' is out of range: %d hosts have ranks 0..%d",
			     n->rank, n->name, t->nhosts, t->nhosts - 1);
		else if (rank_line[n->rank])
			errf(c, n->line, "rank %d of '%s' is already taken (line %d)", n->rank, n->name, rank_line[n->rank]);
		else
			rank_line[n->rank] = n->line;
	}
}

/* Union-find: the representative of @i's set in @parent, halving the path as it goes. */
static int seg_find(int *parent, int i)
{
	while (parent[i] != i)
		i = parent[i] = parent[parent[i]];
	return i;
}

/* Check each link on its own, then give every node its ports. */
static void check_links(struct ctx *c)
{
	struct topology *t = c->t;
	char a[24], b[24];

	for (int i = 0; i < t->nlinks; i++) {
		struct topo_link *l = &t->links[i];
		struct topo_node *x = &t->nodes[l->node[0]], *y = &t->nodes[l->node[1]];

		if (l->node[0] == l->node[1]) {
			errf(c, l->line, "link connects '%s' to itself", x->name);
			continue;
		}
		if (x->role == TOPO_CONTROLLER || y->role == TOPO_CONTROLLER) {
			errf(c, l->line, "the controller has no data-plane links (it is reached over the management network)");
			continue;
		}
		if (x->role == TOPO_HOST && y->role == TOPO_HOST)
			errf(c, l->line, "link joins two hosts '%s' and '%s': hosts connect only to switches", x->name, y->name);
		if (l->addr[0].prefix != l->addr[1].prefix || !overlaps(l->addr[0], l->addr[1]))
			errf(c, l->line, "the ends of the link %s-%s are not in one subnet (%s, %s)", x->name, y->name,
			     cidr_str(l->addr[0], a), cidr_str(l->addr[1], b));
		else if (l->addr[0].addr == l->addr[1].addr)
			errf(c, l->line, "both ends of the link %s-%s have address %s", x->name, y->name, cidr_str(l->addr[0], a));
		for (int e = 0; e < 2; e++) {
			if (!host_address_ok(l->addr[e]))
				errf(c, l->line, "%s is a network or broadcast address, not a host address",
				     cidr_str(l->addr[e], a));
			if (overlaps(l->addr[e], t->mgmt))
				errf(c, l->line, "data address %s overlaps the management subnet %s",
				     cidr_str(l->addr[e], a), cidr_str(t->mgmt, b));
		}
		for (int j = 0; j < i; j++) {
			const struct topo_link *m = &t->links[j];
			if ((m->node[0] == l->node[0] && m->node[1] == l->node[1]) ||
			    (m->node[0] == l->node[1] && m->node[1] == l->node[0]))
				errf(c, l->line, "second link between '%s' and '%s' (first at line %d)", x->name, y->name, m->line);
		}
	}
	if (c->nerr)
		return;
	for (int i = 0; i < t->nlinks; i++) {
		for (int e = 0; e < 2; e++) {
			struct topo_node *n = &t->nodes[t->links[i].node[e]];
			struct topo_port *p;

			if (n->nports == TOPO_MAX_PORTS) {
				errf(c, t->links[i].line, "'%s' has more than %d links", n->name, TOPO_MAX_PORTS);
				return;
			}
			p = &n->ports[n->nports++];
			p->link = i;
			p->peer = t->links[i].node[!e];
			p->addr = t->links[i].addr[e];
			char peer_name[TOPO_NAME_MAX + 1];
			memcpy(peer_name, t->nodes[p->peer].name, sizeof(peer_name));
			snprintf(p->ifname, sizeof(p->ifname), "to-%s", peer_name);
		}
	}
	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];
		if (n->role == TOPO_HOST && n->nports == 0)
			errf(c, n->line, "host '%s' is not linked to any switch", n->name);
		else if (n->role == TOPO_HOST && n->nports > 1)
			errf(c, n->line, "host '%s' has %d links; a host has exactly one link, to its switch", n->name, n->nports);
		else if (n->role == TOPO_SWITCH && n->nports == 0)
			errf(c, n->line, "switch '%s' has no links", n->name);
	}
}

/* Links whose shared node uses one address on both form one segment. */
static void derive_segments(struct ctx *c)
{
	struct topology *t = c->t;
	int parent[TOPO_MAX_LINKS], seg_of_root[TOPO_MAX_LINKS];
	char a[24], b[24], ip[16];

	for (int i = 0; i < t->nlinks; i++)
		parent[i] = i;
	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];
		for (int p = 0; p < n->nports; p++)
			for (int q = 0; q < p; q++)
				if (n->ports[p].addr.addr == n->ports[q].addr.addr)
					parent[seg_find(parent, n->ports[p].link)] = seg_find(parent, n->ports[q].link);
	}
	for (int i = 0; i < t->nlinks; i++) {
		int r = seg_find(parent, i);
		if (r == i) {
			struct topo_segment *s = &t->segments[t->nsegments];
			s->net.prefix = t->links[i].addr[0].prefix;
			s->net.addr = t->links[i].addr[0].addr & topo_mask(s->net.prefix);
			s->line = t->links[i].line;
			seg_of_root[i] = t->nsegments++;
		}
	}
	for (int i = 0; i < t->nnodes; i++)
		for (int p = 0; p < t->nodes[i].nports; p++)
			t->nodes[i].ports[p].segment = seg_of_root[seg_find(parent, t->nodes[i].ports[p].link)];

	for (int i = 0; i < t->nsegments; i++)
		for (int j = 0; j < i; j++)
			if (overlaps(t->segments[i].net, t->segments[j].net))
				errf(c, t->segments[i].line, "subnet %s overlaps subnet %s of the link at line %d",
				     cidr_str(t->segments[i].net, a), cidr_str(t->segments[j].net, b), t->segments[j].line);
	/* Two nodes may not use one address; within a segment this is the only way to clash. */
	for (int i = 0; i < t->nnodes; i++)
		for (int p = 0; p < t->nodes[i].nports; p++)
			for (int j = 0; j < i; j++)
				for (int q = 0; q < t->nodes[j].nports; q++)
					if (t->nodes[i].ports[p].addr.addr == t->nodes[j].ports[q].addr.addr)
						errf(c, t->links[t->nodes[i].ports[p].link].line,
						     "address %s of '%s' is also used by '%s' (line %d)",
						     topo_ntoa(t->nodes[i].ports[p].addr.addr, ip), t->nodes[i].name,
						     t->nodes[j].name, t->links[t->nodes[j].ports[q].link].line);
}

/* The data plane must be one tree containing the root switch and every switch and host. */
static void derive_tree(struct ctx *c)
{
	struct topology *t = c->t;
	int queue[TOPO_MAX_NODES], seen[TOPO_MAX_NODES] = { 0 }, head = 0, tail = 0, nreach = 0, nplane = 0;

	queue[tail++] = t->root;
	seen[t->root] = 1;
	while (head < tail) {
		struct topo_node *n = &t->nodes[queue[head++]];
		nreach++;
		for (int p = 0; p < n->nports; p++) {
			int peer = n->ports[p].peer;
			if (seen[peer])
				continue;
			seen[peer] = 1;
			t->nodes[peer].parent = (int)(n - t->nodes);
			queue[tail++] = peer;
		}
	}
	for (int i = 0; i < t->nnodes; i++) {
		if (t->nodes[i].role == TOPO_CONTROLLER)
			continue;
		nplane++;
		if (!seen[i])
			errf(c, t->nodes[i].line, "'%s' is not connected to the root switch '%s'",
			     t->nodes[i].name, t->nodes[t->root].name);
	}
	if (nreach == nplane && t->nlinks != nplane - 1)
		errf(c, t->links[t->nlinks - 1].line, "the links form a cycle: %d switches and hosts need exactly %d links for a tree, found %d",
		     nplane, nplane - 1, t->nlinks);
}

/*
 * Hypervisors' addresses are the machines' own: none may be in the lab's
 * management subnet or a data segment, which the nodes use (a tunnel to such
 * an address would be routed into the lab).
 */
static void check_hypervisors(struct ctx *c)
{
	struct topology *t = c->t;
	char a[16], b[24];

	for (int h = 0; h < t->nhypervisors; h++) {
		struct topo_cidr me = { t->hypervisors[h].addr, 32 };
		if (overlaps(me, t->mgmt))
			errf(c, t->hypervisors[h].line, "address %s of hypervisor '%s' is in the management subnet %s",
			     topo_ntoa(me.addr, a), t->hypervisors[h].name, cidr_str(t->mgmt, b));
		for (int s = 0; s < t->nsegments; s++)
			if (overlaps(me, t->segments[s].net))
				errf(c, t->hypervisors[h].line, "address %s of hypervisor '%s' is in the data subnet %s (link at line %d)",
				     topo_ntoa(me.addr, a), t->hypervisors[h].name, cidr_str(t->segments[s].net, b),
				     t->segments[s].line);
	}
}

/* The hypervisor with the least memory placed on it so far (@load), the first declared on a tie. */
static int least_loaded(const struct topology *t, const long *load)
{
	int best = 0;

	for (int h = 1; h < t->nhypervisors; h++)
		if (load[h] < load[best])
			best = h;
	return best;
}

/*
 * balance() - place every node that names no hypervisor (README: "Labs over
 * several hypervisors"). A leaf group is a switch with the hosts below it
 * that are not placed: they stay together, so a host's edge to its switch
 * never crosses machines unless the file says so.
 *   1. a host whose switch is placed goes with its switch;
 *   2. the groups of the switches not placed go, heaviest first (memory of
 *      its members; a tie: the switch declared first), each to the
 *      hypervisor with the least memory placed on it so far (explicit
 *      placements and steps 1-2; a tie: the hypervisor declared first);
 *   3. a controller not placed goes with the root switch.
 * Then each hypervisor's count and memory of nodes. Without hypervisors,
 * nothing.
 */
static void balance(struct topology *t)
{
	long load[TOPO_MAX_HYPERVISORS] = { 0 }, weight[TOPO_MAX_NODES] = { 0 };
	int order[TOPO_MAX_NODES], ngroups = 0;

	if (!t->nhypervisors)
		return;
	for (int i = 0; i < t->nnodes; i++)
		if (t->nodes[i].hypervisor >= 0)
			load[t->nodes[i].hypervisor] += t->nodes[i].memory_mib;
	for (int i = 0; i < t->nnodes; i++) { /* 1 */
		struct topo_node *n = &t->nodes[i];
		if (n->role == TOPO_HOST && n->hypervisor < 0 && t->nodes[n->parent].hypervisor >= 0 &&
		    t->nodes[n->parent].placed) {
			n->hypervisor = t->nodes[n->parent].hypervisor;
			load[n->hypervisor] += n->memory_mib;
		}
	}
	for (int i = 0; i < t->nnodes; i++) { /* 2: the groups, by weight */
		if (t->nodes[i].role != TOPO_SWITCH || t->nodes[i].hypervisor >= 0)
			continue;
		weight[i] = t->nodes[i].memory_mib;
		for (int k = 0; k < t->nnodes; k++)
			if (t->nodes[k].role == TOPO_HOST && t->nodes[k].parent == i && t->nodes[k].hypervisor < 0)
				weight[i] += t->nodes[k].memory_mib;
		int at = ngroups++;
		while (at > 0 && weight[order[at - 1]] < weight[i]) { /* stable: declaration order on a tie */
			order[at] = order[at - 1];
			at--;
		}
		order[at] = i;
	}
	for (int g = 0; g < ngroups; g++) {
		int sw = order[g], h = least_loaded(t, load);
		t->nodes[sw].hypervisor = h;
		for (int k = 0; k < t->nnodes; k++)
			if (t->nodes[k].role == TOPO_HOST && t->nodes[k].parent == sw && t->nodes[k].hypervisor < 0)
				t->nodes[k].hypervisor = h;
		load[h] += weight[sw];
	}
	for (int i = 0; i < t->nnodes; i++) /* 3 */
		if (t->nodes[i].hypervisor < 0)
			t->nodes[i].hypervisor = t->nodes[t->root].hypervisor;
	for (int i = 0; i < t->nnodes; i++) {
		t->hypervisors[t->nodes[i].hypervisor].nnodes++;
		t->hypervisors[t->nodes[i].hypervisor].memory_mib += t->nodes[i].memory_mib;
	}
}

/* Layer-3 interfaces (bridges where a switch has several ports in one segment) and routes. */
static void derive_l3(struct topology *t)
{
	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];
		int nbridges = 0;

		for (int p = 0; p < n->nports; p++) {
			int k, members = 0;
			for (k = 0; k < n->nl3ifs; k++)
				if (n->l3ifs[k].segment == n->ports[p].segment)
					break;
			if (k < n->nl3ifs)
				continue;
			for (int q = 0; q < n->nports; q++)
				members += n->ports[q].segment == n->ports[p].segment;
			struct topo_l3if *l3 = &n->l3ifs[n->nl3ifs++];
			l3->addr = n->ports[p].addr;
			l3->segment = n->ports[p].segment;
			l3->bridge = members > 1;
			if (l3->bridge)
				snprintf(l3->ifname, sizeof(l3->ifname), "br%d", nbridges++);
			else
				strcpy(l3->ifname, n->ports[p].ifname);
		}
	}
	/* Routes: for each segment a node is not on, the first hop of its tree path. */
	for (int i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];
		int first_port[TOPO_MAX_NODES], queue[TOPO_MAX_NODES], head = 0, tail = 0;

		if (n->role == TOPO_CONTROLLER)
			continue;
		for (int k = 0; k < t->nnodes; k++)
			first_port[k] = -2;
		first_port[i] = -1;
		queue[tail++] = i;
		while (head < tail) { /* BFS order = distance order */
			int u = queue[head++];
			for (int p = 0; p < t->nodes[u].nports; p++) {
				int v = t->nodes[u].ports[p].peer;
				if (first_port[v] != -2)
					continue;
				first_port[v] = u == i ? p : first_port[u];
				queue[tail++] = v;
			}
		}
		for (int s = 0; s < t->nsegments; s++) {
			int on = 0, hop = -1;
			for (int k = 0; k < n->nl3ifs; k++)
				on |= n->l3ifs[k].segment == s;
			if (on)
				continue;
			for (int q = 0; q < tail && hop < 0; q++) { /* nearest node on segment s */
				const struct topo_node *m = &t->nodes[queue[q]];
				for (int p = 0; p < m->nports; p++)
					if (m->ports[p].segment == s) {
						hop = first_port[queue[q]];
						break;
					}
			}
			const struct topo_port *out = &n->ports[hop];
			const struct topo_node *peer = &t->nodes[out->peer];
			struct topo_route *r = &n->routes[n->nroutes++];
			r->dest = t->segments[s].net;
			for (int p = 0; p < peer->nports; p++)
				if (peer->ports[p].link == out->link)
					r->via = peer->ports[p].addr.addr;
			for (int k = 0; k < n->nl3ifs; k++)
				if (n->l3ifs[k].segment == out->segment)
					r->l3if = k;
		}
	}
}

/*
 * The whole of file @path, NUL-terminated (free()), or NULL after a message
 * on @err: it cannot be opened or read, or it is 16 MiB or more (no
 * topology is; a bound on what a hostile path could make us allocate).
 */
static char *read_file(const char *path, FILE *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f) {
		fprintf(err, "%s: cannot open: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && len < (1 << 24) &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = 0;
	} else {
		fprintf(err, "%s: cannot read (or larger than 16 MiB)\n", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * The document's top mapping @top: name, management, defaults, nodes, links
 * and root, each to its parser (nodes before links, which name them); an
 * unknown or missing key, and a root that is not a switch, is an error.
 */
static void parse_top(struct ctx *c, yaml_node_t *top)
{
	struct topology *t = c->t;
	yaml_node_t *nodes = NULL, *links = NULL, *rootv = NULL, *hyps = NULL;
	int have_name = 0, have_mgmt = 0;

	for (yaml_node_pair_t *p = top->data.mapping.pairs.start; p < top->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yget(c, p->key), *v = yget(c, p->value);
		const char *key = scalar(c, k, "a key"), *s;

		if (!key)
			continue;
		if (strcmp(key, "name") == 0) {
			char b[80];
			if (!(s = scalar(c, v, "name"))) {
				have_name = -1;
			} else if (!topo_word_ok(s, TOPO_TOPONAME_MAX, 0)) {
				errf(c, line_of(v),
				     "topology name '%s' must be 1..%d characters of a-z, 0-9 and single '-' between them "
				     "(it names the lab in XML, cloud-config and shell files)",
				     shown(s, b), TOPO_TOPONAME_MAX);
				have_name = -1;
			} else {
				strcpy(t->name, s);
				have_name = 1;
			}
		} else if (strcmp(key, "root") == 0) {
			rootv = v;
		} else if (strcmp(key, "management") == 0) {
			if (parse_cidr(c, v, "management", 1, &t->mgmt) == 0) {
				have_mgmt = 1;
				if (t->mgmt.addr & ~topo_mask(t->mgmt.prefix))
					errf(c, line_of(v), "management must be a network address (like 192.168.0.0/16)");
			}
		} else if (strcmp(key, "defaults") == 0) {
			parse_defaults(c, v);
		} else if (strcmp(key, "nodes") == 0) {
			nodes = v;
		} else if (strcmp(key, "links") == 0) {
			links = v;
		} else if (strcmp(key, "hypervisors") == 0) {
			hyps = v;
		} else {
			errf(c, line_of(k), "unknown key '%s' (known: name, root, management, defaults, nodes, links, hypervisors)", key);
		}
	}
	if (hyps) /* before the nodes, which name them */
		parse_hypervisors(c, hyps);
	if (have_name == 0)
		errf(c, line_of(top), "missing 'name:'");
	if (!have_mgmt)
		errf(c, line_of(top), "missing 'management:' subnet");
	if (!nodes || nodes->type != YAML_SEQUENCE_NODE) {
		errf(c, nodes ? line_of(nodes) : line_of(top), "'nodes:' must be a list of nodes");
		return;
	}
	for (yaml_node_item_t *i = nodes->data.sequence.items.start; i < nodes->data.sequence.items.top; i++)
		parse_node(c, yget(c, *i));
	if (!links || links->type != YAML_SEQUENCE_NODE) {
		errf(c, links ? line_of(links) : line_of(top), "'links:' must be a list of links");
		return;
	}
	for (yaml_node_item_t *i = links->data.sequence.items.start; i < links->data.sequence.items.top; i++)
		parse_link(c, yget(c, *i));
	t->root = -1;
	if (!rootv) {
		errf(c, line_of(top), "missing 'root:' (the name of the root switch)");
	} else {
		const char *s = scalar(c, rootv, "root");
		if (s && (t->root = topo_find(t, s)) < 0)
			errf(c, line_of(rootv), "root names unknown node '%s'", s);
		else if (s && t->nodes[t->root].role != TOPO_SWITCH)
			errf(c, line_of(rootv), "root '%s' is not a switch", s);
	}
}

struct topology *topo_parse(const char *text, size_t len, const char *name, FILE *err)
{
	struct topology *t = calloc(1, sizeof(*t));
	struct ctx c = { .t = t, .err = err, .def_vcpus = 1, .def_mem = { 512, 512, 1024 } };
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *top;

	if (!t || !(t->source = malloc(len + 1))) {
		fprintf(err, "%s: out of memory\n", name);
		free(t);
		return NULL;
	}
	snprintf(t->file, sizeof(t->file), "%s", name);
	memcpy(t->source, text, len);
	t->source[len] = 0;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)t->source, len);
	if (!yaml_parser_load(&parser, &doc)) {
		fprintf(err, "%s:%zu:%zu: YAML error: %s%s%s\n", name, parser.problem_mark.line + 1,
			parser.problem_mark.column + 1, parser.problem ? parser.problem : "unknown",
			parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		topo_free(t);
		return NULL;
	}
	c.doc = &doc;
	top = yaml_document_get_root_node(&doc);
	if (!top || top->type != YAML_MAPPING_NODE) {
		errf(&c, top ? line_of(top) : 1, "a topology file is a mapping with name, root, management, nodes and links");
	} else {
		parse_top(&c, top);
		if (!c.nerr)
			check_nodes(&c);
		if (!c.nerr)
			check_links(&c);
		if (!c.nerr)
			derive_segments(&c);
		if (!c.nerr)
			derive_tree(&c);
		if (!c.nerr)
			check_hypervisors(&c);
		if (!c.nerr) {
			derive_l3(t);
			balance(t);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (c.nerr) {
		topo_free(t);
		return NULL;
	}
	return t;
}

struct topology *topo_load(const char *path, FILE *err)
{
	char *text = read_file(path, err);
	struct topology *t;

	if (!text)
		return NULL;
	t = topo_parse(text, strlen(text), path, err); /* a NUL byte ends the text, as it always did */
	free(text);
	return t;
}

void topo_free(struct topology *t)
{
	if (t) {
		free(t->source);
		free(t);
	}
}
