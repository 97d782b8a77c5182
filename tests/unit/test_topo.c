/*
 * test_topo.c — unit tests of the topology library (topology/topo.c), cmocka.
 *
 * Checks the facts derived from the shipped topologies (tree parents, bridges,
 * routes, ranks) against values written out by hand from SPEC.md, and that
 * each kind of broken file is rejected with a message naming file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "topo.h"

static struct topology *load(const char *path)
{
	struct topology *t = topo_load(path, stderr);
	assert_non_null(t);
	return t;
}

static const struct topo_node *node(const struct topology *t, const char *name)
{
	int i = topo_find(t, name);
	assert_true(i >= 0);
	return &t->nodes[i];
}

static uint32_t ip(const char *s)
{
	unsigned a, b, c, d;
	assert_int_equal(sscanf(s, "%u.%u.%u.%u", &a, &b, &c, &d), 4);
	return a << 24 | b << 16 | c << 8 | d;
}

/* The route of @n to @net (a.b.c.d/p), or fail. */
static const struct topo_route *route_to(const struct topo_node *n, const char *net, int prefix)
{
	for (int r = 0; r < n->nroutes; r++)
		if (n->routes[r].dest.addr == ip(net) && n->routes[r].dest.prefix == prefix)
			return &n->routes[r];
	fail_msg("%s has no route to %s/%d", n->name, net, prefix);
	return NULL;
}

static void test_1_2_4_tree(void **state)
{
	struct topology *t = load("topology/1-2-4.yaml");

	assert_string_equal(t->name, "1-2-4");
	assert_int_equal(t->nnodes, 8);
	assert_int_equal(t->nhosts, 4);
	assert_int_equal(t->nlinks, 6);
	assert_int_equal(t->nsegments, 4); /* two uplinks, two host segments */
	assert_string_equal(t->nodes[t->root].name, "sw0");
	assert_int_equal(node(t, "sw1")->parent, topo_find(t, "sw0"));
	assert_int_equal(node(t, "pku3")->parent, topo_find(t, "sw2"));
	assert_int_equal(node(t, "sw0")->parent, -1);
	assert_int_equal(node(t, "controller")->parent, -1);
	/* ranks and addresses of SPEC.md */
	assert_int_equal(node(t, "pku1")->rank, 0);
	assert_int_equal(node(t, "pku4")->rank, 3);
	assert_int_equal(node(t, "pku2")->ports[0].addr.addr, ip("10.1.1.5"));
	assert_int_equal(node(t, "controller")->mgmt, ip("192.168.0.3"));
	assert_int_equal(node(t, "sw0")->mgmt, ip("192.168.0.19"));
	topo_free(t);
}

static void test_1_2_4_bridges_and_routes(void **state)
{
	struct topology *t = load("topology/1-2-4.yaml");
	const struct topo_node *sw1 = node(t, "sw1"), *pku1 = node(t, "pku1"), *sw0 = node(t, "sw0");

	/* sw1: uplink interface + one bridge over the two host ports */
	assert_int_equal(sw1->nports, 3);
	assert_int_equal(sw1->nl3ifs, 2);
	assert_string_equal(sw1->l3ifs[1].ifname, "br0");
	assert_true(sw1->l3ifs[1].bridge);
	assert_int_equal(sw1->l3ifs[1].addr.addr, ip("10.1.1.1"));
	/* pku1 reaches pku3's subnet through its leaf's bridge address */
	assert_int_equal(route_to(pku1, "10.2.1.0", 24)->via, ip("10.1.1.1"));
	/* sw1 reaches it through the root, the root through sw2 */
	assert_int_equal(route_to(sw1, "10.2.1.0", 24)->via, ip("172.16.0.1"));
	assert_int_equal(route_to(sw0, "10.2.1.0", 24)->via, ip("10.10.0.7"));
	assert_int_equal(route_to(sw0, "10.1.1.0", 24)->via, ip("172.16.0.5"));
	/* a node has routes to exactly the segments it is not on */
	assert_int_equal(pku1->nroutes, 3);
	assert_int_equal(sw0->nroutes, 2);
	topo_free(t);
}

static void test_other_trees(void **state)
{
	struct topology *t = load("topology/1-2.yaml");
	assert_int_equal(t->nhosts, 2);
	assert_int_equal(t->nsegments, 1);
	assert_int_equal(node(t, "pku1")->nroutes, 0);
	topo_free(t);

	t = load("topology/1-4-16.yaml");
	assert_int_equal(t->nhosts, 16);
	assert_int_equal(t->nsegments, 8);
	for (int r = 0; r < 16; r++) {
		char name[8], leaf[8];
		snprintf(name, sizeof(name), "h%d", r + 1);
		snprintf(leaf, sizeof(leaf), "sw%d", r / 4 + 1);
		assert_int_equal(node(t, name)->rank, r);
		/* host h(4L+k) hangs off leaf sw(L+1) */
		assert_string_equal(t->nodes[node(t, name)->parent].name, leaf);
	}
	assert_int_equal(route_to(node(t, "h1"), "10.4.1.0", 24)->via, ip("10.1.1.1"));
	topo_free(t);
}

/* Load a topology from text; return the error output (caller frees) or NULL if it loaded. */
static char *errors_of(const char *text)
{
	char path[] = "/tmp/test_topo_XXXXXX";
	int fd = mkstemp(path);
	char *buf = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&buf, &len);
	struct topology *t;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	t = topo_load(path, err);
	fclose(err);
	unlink(path);
	if (t) {
		topo_free(t);
		free(buf);
		return NULL;
	}
	/* drop the temporary path so messages can be compared */
	char *colon = strchr(buf, ':');
	assert_non_null(colon);
	memmove(buf, colon, strlen(colon) + 1);
	return buf;
}

#define HEAD "name: t\nroot: sw0\nmanagement: 192.168.0.0/16\nnodes:\n" \
	     "  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"  \
	     "  - {name: sw0, role: switch, mgmt: 192.168.0.19}\n"
/* line numbers: HEAD has 6 lines, the next node is line 7 */

static void test_rejections(void **state)
{
	char *e;

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.1.2/24}\n");
	assert_null(e); /* the base case is valid */

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.2.2/24}\n");
	assert_non_null(e);
	assert_string_equal(e, ":9: the ends of the link sw0-h1 are not in one subnet (10.1.1.1/24, 10.1.2.2/24)\n");
	free(e);

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 10.0.0.1}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.1.2/24}\n");
	assert_string_equal(e, ":7: mgmt address 10.0.0.1 of 'h1' is not a host address of the management subnet\n");
	free(e);

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\nlinks:\n"
			   "  - {sw0: 192.168.5.1/24, h1: 192.168.5.2/24}\n");
	assert_non_null(strstr(e, ":9: data address 192.168.5.1/24 overlaps the management subnet 192.168.0.0/16\n"));
	free(e);

	e = errors_of(HEAD "  - {name: h1, role: host, mgmt: 192.168.0.101}\nlinks: []\n");
	assert_string_equal(e, ":7: host 'h1' has no rank\n");
	free(e);

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\n"
			   "  - {name: h2, role: host, rank: 1, mgmt: 192.168.0.102}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.1.2/24}\n  - {h1: 10.2.1.1/24, h2: 10.2.1.2/24}\n");
	assert_non_null(strstr(e, ":11: link joins two hosts 'h1' and 'h2': hosts connect only to switches\n"));
	free(e);

	e = errors_of(HEAD "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\n"
			   "  - {name: h2, role: host, rank: 1, mgmt: 192.168.0.102}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.1.2/24}\n  - {sw0: 10.1.1.1/24, h2: 10.1.1.2/24}\n");
	assert_string_equal(e, ":11: address 10.1.1.2 of 'h2' is also used by 'h1' (line 10)\n");
	free(e);

	e = errors_of("name: t\nroot: pku1\nmanagement: 192.168.0.0/16\nnodes:\n"
		      "  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"
		      "  - {name: pku1, role: host, rank: 0, mgmt: 192.168.0.101}\nlinks: []\n");
	assert_non_null(strstr(e, ":2: root 'pku1' is not a switch\n"));
	free(e);

	e = errors_of("- just\n- a list\n");
	assert_string_equal(e, ":1: a topology file is a mapping with name, root, management, nodes and links\n");
	free(e);
}

/*
 * The topology's name goes into generated shell (node.conf, sourced), YAML
 * (cloud-config) and XML (libvirt descriptions and comments): only words of
 * a-z and 0-9 joined by single '-' are a name; anything else is refused with
 * the line (a name like 'x$(reboot)' was written into them as it was).
 */
static void test_topology_name(void **state)
{
	static const char *const bad[] = { "x$(reboot)", "\"a b\"", "\"a\\nb\"", "\"lab'</description>\"", "\"-\"", "\"\"",
					   "a--b", "Lab_1.2-4", "a0123456789012345678901234567890123456789012345678901234567890123" };
	const char *tail = "root: sw0\nmanagement: 192.168.0.0/16\nnodes:\n"
			   "  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"
			   "  - {name: sw0, role: switch, mgmt: 192.168.0.19}\n"
			   "  - {name: h1, role: host, rank: 0, mgmt: 192.168.0.101}\nlinks:\n"
			   "  - {sw0: 10.1.1.1/24, h1: 10.1.1.2/24}\n";
	char text[1024], want[200], *e;

	snprintf(want, sizeof(want), "must be 1..%d characters of a-z, 0-9 and single '-' between them", TOPO_TOPONAME_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "name: %s\n%s", bad[i], tail);
		e = errors_of(text);
		assert_non_null(e);
		if (strncmp(e, ":1: topology name '", 19) || !strstr(e, want))
			fail_msg("name %s: '%s' is not ':1: topology name ... %s'", bad[i], e, want);
		free(e);
	}
	snprintf(text, sizeof(text), "name: lab-1-2-4\n%s", tail);
	assert_null(errors_of(text));
}

static void test_missing_file(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&buf, &len);

	assert_null(topo_load("/nonexistent/topology.yaml", err));
	fclose(err);
	assert_string_equal(buf, "/nonexistent/topology.yaml: cannot open: No such file or directory\n");
	free(buf);
}

/* The text of file @path with @extra appended, parsed: NULL when refused, its
 * messages then in *@err (free()) when @err is given, else on stderr. */
static struct topology *with_extra(const char *path, const char *extra, char **err)
{
	FILE *f = fopen(path, "rb"), *ef;
	char buf[1 << 14];
	size_t n, elen;
	struct topology *t;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	assert_true(n + strlen(extra) < sizeof(buf));
	memcpy(buf + n, extra, strlen(extra) + 1);
	if (!err)
		return topo_parse(buf, strlen(buf), path, stderr);
	*err = NULL;
	ef = open_memstream(err, &elen);
	assert_non_null(ef);
	t = topo_parse(buf, strlen(buf), path, ef);
	fclose(ef);
	return t;
}

/* The name of the hypervisor node @name runs on. */
static const char *hyp(const struct topology *t, const char *name)
{
	int h = node(t, name)->hypervisor;
	assert_true(h >= 0 && h < t->nhypervisors);
	return t->hypervisors[h].name;
}

/* Without a hypervisors section no node is placed (the lab is one machine, as always). */
static void test_no_hypervisors(void **state)
{
	const char *files[] = { "topology/1-2.yaml", "topology/1-2-4.yaml", "topology/1-4-16.yaml", "topology/1-2-2-2.yaml" };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct topology *t = load(files[f]);
		assert_int_equal(t->nhypervisors, 0);
		for (int i = 0; i < t->nnodes; i++)
			assert_int_equal(t->nodes[i].hypervisor, -1);
		topo_free(t);
	}
}

/*
 * The automatic balance on 1-4-16 over three hypervisors, worked out by hand
 * from the rule (topo.c balance()): four leaf groups of 512 + 4 x 768 = 3584
 * MiB go to a, b, c, then a again (a tie: the first declared); the root
 * switch (512) to the lightest then, b (b and c tie), the controller with it.
 */
static void test_balance_1_4_16(void **state)
{
	struct topology *t = with_extra("topology/1-4-16.yaml",
					"hypervisors:\n"
					"  a: {uri: 'qemu:///system', address: 127.0.0.1}\n"
					"  b: {uri: 'qemu+ssh://root@127.0.0.1:2222/system?keyfile=/k&no_verify=1', address: 127.0.0.1}\n"
					"  c: {uri: 'qemu+tls://c.example.org/system', address: 198.51.100.3}\n", NULL);
	const char *want[][2] = { { "sw1", "a" }, { "sw2", "b" }, { "sw3", "c" }, { "sw4", "a" },
				  { "sw0", "b" }, { "controller", "b" } };

	assert_non_null(t);
	assert_int_equal(t->nhypervisors, 3);
	assert_string_equal(t->hypervisors[1].uri, "qemu+ssh://root@127.0.0.1:2222/system?keyfile=/k&no_verify=1");
	assert_int_equal(t->hypervisors[2].addr, ip("198.51.100.3"));
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		assert_string_equal(hyp(t, want[k][0]), want[k][1]);
	for (int i = 0; i < t->nnodes; i++) { /* every host with its leaf switch; nothing placed by the file */
		assert_int_equal(t->nodes[i].placed, 0);
		if (t->nodes[i].role == TOPO_HOST)
			assert_int_equal(t->nodes[i].hypervisor, t->nodes[t->nodes[i].parent].hypervisor);
	}
	assert_int_equal(t->hypervisors[0].memory_mib, 2 * 3584);
	assert_int_equal(t->hypervisors[1].memory_mib, 3584 + 512 + 512);
	assert_int_equal(t->hypervisors[2].memory_mib, 3584);
	assert_int_equal(t->hypervisors[0].nnodes + t->hypervisors[1].nnodes + t->hypervisors[2].nnodes, t->nnodes);
	assert_int_equal(t->hypervisors[1].nnodes, 7);
	topo_free(t);
}

/*
 * Placement by the file wins: a host placed away from its switch stays there
 * (its edge crosses), the hosts of a placed switch follow it, and the rest
 * is balanced around them (tests/topology/hypervisors/placed.yaml's comment).
 */
static void test_balance_placed(void **state)
{
	struct topology *t = load("tests/topology/hypervisors/placed.yaml");
	const char *want[][2] = { { "sw1", "b" }, { "pku1", "b" }, { "pku3", "b" }, { "sw0", "a" },
				  { "pku4", "a" }, { "sw2", "c" }, { "pku2", "c" }, { "controller", "a" } };

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		assert_string_equal(hyp(t, want[k][0]), want[k][1]);
	assert_int_equal(node(t, "sw1")->placed, 1);
	assert_int_equal(node(t, "pku3")->placed, 1);
	assert_int_equal(node(t, "pku1")->placed, 0);
	assert_int_equal(t->hypervisors[1].memory_mib, 512 + 1536 + 1536);
	topo_free(t);
}

/* Hypervisor errors: each named with its line (1-4-16.yaml has 57 lines: the section starts at 58). */
static void test_hypervisor_rejections(void **state)
{
	const char *bad[][2] = {
		{ "hypervisors:\n  a: {uri: 'qemu:///system', address: 127.0.0.1}\n  a: {uri: 'qemu:///session', address: 127.0.0.2}\n",
		  "topology/1-4-16.yaml:60: duplicate hypervisor name 'a' (first declared at line 59)\n" },
		{ "hypervisors:\n  a: {uri: 'qemu:///system'}\n",
		  "topology/1-4-16.yaml:59: hypervisor 'a' has no address (where the others send its tunnels)\n" },
		{ "hypervisors:\n  a: {uri: 'qemu:///system', address: 192.168.9.9}\n",
		  "topology/1-4-16.yaml:59: address 192.168.9.9 of hypervisor 'a' is in the management subnet 192.168.0.0/16\n" },
		{ "hypervisors: {}\n", "topology/1-4-16.yaml:58: hypervisors must map names to" },
		{ "hypervisors: [a, b]\n", "topology/1-4-16.yaml:58: hypervisors must map names to" },
	};
	char many[4096] = "hypervisors:\n", *err;
	struct topology *t;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		if ((t = with_extra("topology/1-4-16.yaml", bad[k][0], &err)))
			fail_msg("accepted: %s", bad[k][0]);
		if (strncmp(err, bad[k][1], strlen(bad[k][1])) != 0)
			fail_msg("for %s: '%s', want '%s'", bad[k][0], err, bad[k][1]);
		free(err);
	}
	/* the bound: TOPO_MAX_HYPERVISORS pass, one more is refused at its line */
	for (int h = 0; h <= TOPO_MAX_HYPERVISORS; h++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "  h%d: {uri: 'qemu+ssh://h%d/system', address: 198.51.100.%d}\n", h, h, h + 1);
	assert_null(with_extra("topology/1-4-16.yaml", many, &err));
	assert_string_equal(err, "topology/1-4-16.yaml:75: too many hypervisors (at most 16)\n");
	free(err);
	many[strlen(many) - strlen("  h16: {uri: 'qemu+ssh://h16/system', address: 198.51.100.17}\n")] = 0;
	t = with_extra("topology/1-4-16.yaml", many, NULL);
	assert_non_null(t);
	assert_int_equal(t->nhypervisors, TOPO_MAX_HYPERVISORS);
	topo_free(t);
}

/* topo_uri_ok(): the grammar of a hypervisor's libvirt URI. */
static void test_uri_ok(void **state)
{
	const char *good[] = {
		"qemu:///system", "qemu:///session", "qemu+ssh://root@127.0.0.1:2222/system?keyfile=/k&no_verify=1",
		"qemu+tls://server-a.example.org/system", "qemu+tcp://203.0.113.12:16509/system", "qemu+unix:///system",
		"qemu+libssh2://u@h/system?known_hosts=/root/.ssh/known_hosts&sshauth=privkey", "qemu+ssh://h/system",
	};
	const char *bad[] = {
		"", "xen:///system", "qemu:/system", "qemu+ssh:///system", "qemu://h/system", "qemu+ssh://h/etc",
		"qemu+ssh://h:0/system", "qemu+ssh://h:65536/system", "qemu+ssh://h:/system", "qemu+ssh://@h/system",
		"qemu+ssh://a@b@h/system", "qemu+ssh://h/system?", "qemu+ssh://h/system?a?b", "qemu+ssh://h/system?x='y'",
		"qemu+ssh://h/system?x=$(id)", "qemu+ssh://h/system?x=`id`", "qemu+ssh://h/system;id", "qemu+ssh://h /system",
		"qemu+ssh://h/system\n", "qemu+ssh://h/system?x=<y>", "qemu+ftp://h/system", "qemu+ssh://h_x/system",
		"qemu+ssh://[::1]/system", "qemu+ssh://h/systemd",
	};
	char why[160], longer[TOPO_URI_MAX + 2];

	for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++)
		if (!topo_uri_ok(good[k], why, sizeof(why)))
			fail_msg("refused '%s': %s", good[k], why);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		why[0] = 0;
		if (topo_uri_ok(bad[k], why, sizeof(why)))
			fail_msg("accepted '%s'", bad[k]);
		assert_true(why[0] != 0);
	}
	/* the bound: TOPO_URI_MAX characters pass, one more does not */
	memset(longer, 0, sizeof(longer));
	strcpy(longer, "qemu+ssh://h/system?k=");
	memset(longer + strlen(longer), 'x', TOPO_URI_MAX - strlen(longer));
	assert_true(topo_uri_ok(longer, why, sizeof(why)));
	longer[TOPO_URI_MAX] = 'x';
	assert_false(topo_uri_ok(longer, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1_2_4_tree),
		cmocka_unit_test(test_1_2_4_bridges_and_routes),
		cmocka_unit_test(test_other_trees),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_topology_name),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_no_hypervisors),
		cmocka_unit_test(test_balance_1_4_16),
		cmocka_unit_test(test_balance_placed),
		cmocka_unit_test(test_hypervisor_rejections),
		cmocka_unit_test(test_uri_ok),
	};
	return cmocka_run_group_tests_name("topology", tests, NULL, NULL);
}
