/*
 * test_swconfig.c — the switch's YAML rules (switch/swconfig.c), cmocka.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "swconfig.h"

/* Parse @y; return the error text (caller frees) or NULL when it parsed. */
static char *errors(const char *y, struct sw_rules *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = sw_rules_parse(y, strlen(y), "rules", r, f);

	fclose(f);
	if (rc == 0) {
		assert_int_equal(len, 0);
		free(buf);
		return NULL;
	}
	assert_true(len > 0);
	return buf;
}

static void test_valid_rules(void **state)
{
	static struct sw_rules r;
	const char *y = "switch: sw1\nnslots: 2048\nretransmit_us: 5000\nrnr_timer: 3\nchildren:\n"
			"  - {port: to-pku1, local_ip: 10.1.1.1, peer_ip: 10.1.1.21, local_qpn: 256, peer_qpn: 0x11,\n"
			"     rq_psn: 100, sq_psn: 200, first_rank: 0}\n"
			"  - {port: to-pku2, local_ip: 10.1.1.1, peer_ip: 10.1.1.5, local_qpn: 256, peer_qpn: 18, first_rank: 1, nranks: 1}\n"
			"  - {port: to-pku1, local_ip: 10.1.1.1, peer_ip: 10.1.1.22, local_qpn: 257, peer_qpn: 19, first_rank: 2, udp: 4792}\n";

	assert_null(errors(y, &r));
	assert_string_equal(r.name, "sw1");
	assert_int_equal(r.cfg.nslots, 2048);
	assert_int_equal(r.cfg.retransmit_ns, 5000000);
	assert_int_equal(r.cfg.rnr_timer, 3);
	assert_int_equal(r.cfg.nchildren, 3);
	assert_int_equal(r.nports, 2); /* to-pku1 appears twice: one port */
	assert_string_equal(r.port[r.cfg.child[1].port], "to-pku2");
	assert_int_equal(r.cfg.child[2].port, r.cfg.child[0].port);
	assert_int_equal(r.cfg.child[0].peer_ip, 0x0a010115);
	assert_int_equal(r.cfg.child[0].peer_qpn, 0x11);
	assert_int_equal(r.cfg.child[0].rq_psn, 100);
	assert_int_equal(r.cfg.child[0].sq_psn, 200);
	assert_int_equal(r.cfg.child[0].udp_dst, 4791);
	assert_int_equal(r.cfg.child[2].udp_dst, 4792);
	assert_int_equal(r.cfg.child[1].first_rank, 1);
	assert_false(r.cfg.has_parent);

	const char *leaf = "ranks: 4\nparent: {port: to-sw0, local_ip: 172.16.0.5, peer_ip: 172.16.0.1, local_qpn: 512,"
			   " peer_qpn: 768, sq_psn: 9}\nchildren:\n"
			   "  - {port: to-pku3, local_ip: 10.2.1.1, peer_ip: 10.2.1.7, local_qpn: 256, peer_qpn: 17, first_rank: 2}\n";
	assert_null(errors(leaf, &r));
	assert_true(r.cfg.has_parent);
	assert_int_equal(r.cfg.total_ranks, 4);
	assert_int_equal(r.cfg.parent.udp_dst, 4792);
	assert_int_equal(r.cfg.parent.sq_psn, 9);
	assert_string_equal(r.port[r.cfg.parent.port], "to-sw0");
	assert_int_equal(r.nports, 2);
}

static void test_bad_rules_name_the_line(void **state)
{
	static struct sw_rules r;
	char *e;

	e = errors("children:\n  - {port: p, local_ip: 10.1.1.1, peer_ip: 10.1.1.300, local_qpn: 1, peer_qpn: 2, first_rank: 0}\n", &r);
	assert_non_null(strstr(e, "rules:2: 'peer_ip' must be an IPv4 address, not '10.1.1.300'"));
	free(e);
	e = errors("children:\n  - {port: p, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 1, first_rank: 0}\n", &r);
	assert_non_null(strstr(e, "rules:2: a child needs port, local_ip, peer_ip, local_qpn, peer_qpn (non-zero) and first_rank"));
	free(e);
	e = errors("parent: {port: p, local_ip: 1.2.3.4}\nchildren:\n  - {port: p, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 1, peer_qpn: 2, first_rank: 0}\n", &r);
	assert_non_null(strstr(e, "rules:1: the parent needs port, local_ip, peer_ip, local_qpn, peer_qpn (non-zero)"));
	free(e);
	e = errors("nslots: -5\nchildren: []\n", &r);
	assert_non_null(strstr(e, "rules:1: 'nslots' must be a number"));
	free(e);
	e = errors("children: []\nfoo: 1\n", &r);
	assert_non_null(strstr(e, "rules:2: unknown key 'foo'"));
	free(e);
	e = errors("children: {a: 1}\n", &r);
	assert_non_null(strstr(e, "'children' must be a list"));
	free(e);
	e = errors("children: [\n", &r);
	assert_non_null(strstr(e, "YAML error"));
	free(e);
	e = errors("switch: x\n", &r);
	assert_non_null(strstr(e, "no children"));
	free(e);
	e = errors("children:\n  - {port: p, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 99999999, peer_qpn: 2, first_rank: 0}\n", &r);
	assert_non_null(strstr(e, "'local_qpn' must be a number in 0..16777215"));
	free(e);
}

/* A port is a name the kernel would take (dev_valid_name()); anything else names its line. */
static void test_port_names(void **state)
{
	static struct sw_rules r;
	static const char *bad[] = { "''", "'.'", "'..'", "'a/b'", "'a:b'", "'a b'", "\"a\\tb\"", "\"a\\0b\"",
				     "sixteen-chars-xx" };
	char doc[256], *e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc),
			 "children:\n  - {port: %s, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 1, peer_qpn: 2, first_rank: 0}\n",
			 bad[i]);
		e = errors(doc, &r);
		if (!strstr(e, "rules:2: 'port' must be an interface name (1..15 characters"))
			fail_msg("port %s: got '%s'", bad[i], e);
		free(e);
	}
	snprintf(doc, sizeof(doc),
		 "children:\n  - {port: fifteen-chars-x, local_ip: 10.1.1.1, peer_ip: 10.1.1.3, local_qpn: 1, peer_qpn: 2, first_rank: 0}\n");
	assert_int_equal(sw_rules_parse(doc, strlen(doc), "rules", &r, stderr), 0);
	assert_string_equal(r.port[0], "fifteen-chars-x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_rules),
		cmocka_unit_test(test_bad_rules_name_the_line),
		cmocka_unit_test(test_port_names),
	};
	return cmocka_run_group_tests_name("swconfig", tests, NULL, NULL);
}
