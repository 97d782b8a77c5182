/*
 * test_ctl.c — the controller (incctl, run as a real process on loopback)
 * and libinccl's group bootstrap, against fake switches that answer like
 * incswitch (threads speaking the control protocol; the rules they receive
 * are parsed by the switch's own parser, swconfig.c).
 *
 * Covers: switch registration (good and bad names), groups, communicator
 * plans for the 1-2-4 topology (whole tree and one leaf), every kind of bad
 * request answered with a precise error, a busy switch refused, release on
 * disconnect, counters, and inccl_group_create() with all ranks, a duplicate
 * rank, a missing rank and a dead controller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../controller/ctlmsg.h"
#include "../../hostlib/inccl.h"
#include "../../switch/swconfig.h"

static int sport, gport;
static pid_t ctl_pid;
static char ctl_addr[32], sw_addr[32];

struct fake_switch {
	const char *name;
	pthread_t thread;
	int fd;
	volatile int rules, releases, stop;
	struct sw_rules last; /* the rules received, parsed by the switch's parser */
	int parse_ok;
};

static struct fake_switch sw[3] = { { .name = "sw0" }, { .name = "sw1" }, { .name = "sw2" } };

static int request(int fd, const char *text, struct ctl_doc *m)
{
	struct ctl_buf b = { 0 };
	char *ans, err[256];
	int rc = ctl_send(fd, text, 5000);

	if (rc == CTL_OK)
		rc = ctl_recv(fd, &b, 40000, &ans);
	ctl_buf_free(&b);
	if (rc != CTL_OK)
		return rc;
	rc = ctl_parse(ans, m, err, sizeof(err));
	free(ans);
	return rc;
}

/* Answer the controller as incswitch does, until told to stop. */
static void *switch_main(void *arg)
{
	struct fake_switch *s = arg;
	struct ctl_buf b = { 0 };

	while (!s->stop) {
		char *text, err[256];
		struct ctl_doc m;
		if (ctl_recv(s->fd, &b, 100, &text) != CTL_OK)
			continue;
		if (ctl_parse(text, &m, err, sizeof(err)) == 0) {
			const char *comm = ctl_str(&m, NULL, "comm");
			if (!strcmp(m.kind, "rules")) {
				FILE *devnull = fopen("/dev/null", "w");
				s->parse_ok = sw_rules_parse(text, strlen(text), s->name, &s->last, devnull) == 0;
				fclose(devnull);
				s->rules++;
				ctl_sendf(s->fd, 1000, "msg: ok\ncomm: %s\n", comm);
			} else if (!strcmp(m.kind, "release")) {
				s->releases++;
				ctl_sendf(s->fd, 1000, "msg: ok\ncomm: %s\n", comm);
			} else if (!strcmp(m.kind, "counters")) {
				ctl_sendf(s->fd, 1000, "msg: counters\nswitch: %s\ncomm: 0\ncounters: {rx_frames: 7}\n", s->name);
			}
			ctl_doc_free(&m);
		}
		free(text);
	}
	ctl_buf_free(&b);
	return NULL;
}

static int connect_retry(const char *addr)
{
	for (int i = 0; i < 100; i++) {
		int fd = ctl_connect(addr, 0, 1000);
		if (fd >= 0)
			return fd;
		usleep(50000);
	}
	return -1;
}

static int setup(void **state)
{
	(void)state;
	sport = 20000 + getpid() % 20000;
	gport = sport + 1;
	snprintf(ctl_addr, sizeof(ctl_addr), "127.0.0.1:%d", gport);
	snprintf(sw_addr, sizeof(sw_addr), "127.0.0.1:%d", sport);
	if ((ctl_pid = fork()) == 0) {
		char s[16], g[16];
		snprintf(s, sizeof(s), "%d", sport);
		snprintf(g, sizeof(g), "%d", gport);
		freopen("build/test_ctl.log", "w", stdout);
		execl("build/incctl", "incctl", "-t", "topology/1-2-4.yaml", "-s", s, "-g", g, (char *)NULL);
		_exit(127);
	}
	return ctl_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		if (sw[i].fd > 0) {
			sw[i].stop = 1;
			pthread_join(sw[i].thread, NULL);
			close(sw[i].fd);
		}
	kill(ctl_pid, SIGTERM);
	waitpid(ctl_pid, NULL, 0);
	return 0;
}

static void test_switch_registration(void **state)
{
	struct ctl_doc m;
	int fd = connect_retry(sw_addr);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(request(fd, "msg: register\nswitch: pku1\n", &m), 0);
	assert_string_equal(m.kind, "error");
	assert_non_null(strstr(ctl_str(&m, NULL, "error"), "'pku1' is not a switch of topology '1-2-4'"));
	ctl_doc_free(&m);
	close(fd);
	for (int i = 0; i < 3; i++) {
		sw[i].fd = connect_retry(sw_addr);
		assert_true(sw[i].fd >= 0);
		char text[64];
		snprintf(text, sizeof(text), "msg: register\nswitch: %s\n", sw[i].name);
		assert_int_equal(request(sw[i].fd, text, &m), 0);
		assert_string_equal(m.kind, "ok");
		ctl_doc_free(&m);
		pthread_create(&sw[i].thread, NULL, switch_main, &sw[i]);
	}
}

/* Expect an error answer to @text containing @words. */
static void refused(int fd, const char *text, const char *words)
{
	struct ctl_doc m;

	assert_int_equal(request(fd, text, &m), 0);
	if (strcmp(m.kind, "error") || !ctl_str(&m, NULL, "error") || !strstr(ctl_str(&m, NULL, "error"), words))
		fail_msg("answer to '%.60s' is '%s: %s', not an error saying '%s'", text, m.kind,
			 ctl_str(&m, NULL, "error") ? ctl_str(&m, NULL, "error") : ctl_str(&m, NULL, "group"), words);
	ctl_doc_free(&m);
}

static const char *ranks4 = "ranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n  - {rank: 1, ip: 10.1.1.5, qpn: 18}\n"
			    "  - {rank: 2, ip: 10.2.1.7, qpn: 19}\n  - {rank: 3, ip: 10.2.1.12, qpn: 20}\n";

static void test_bad_requests(void **state)
{
	int fd = connect_retry(ctl_addr);
	char text[512];
	struct ctl_doc m;

	(void)state;
	assert_true(fd >= 0);
	refused(fd, "msg: [unclosed\n", "bad message");
	refused(fd, "just: a mapping\n", "msg: KIND");
	refused(fd, "msg: dance\n", "unknown message 'dance'");
	refused(fd, "msg: group\nnranks: 9\n", "has 4 hosts");
	refused(fd, "msg: group\nnranks: -1\n", "nranks");
	refused(fd, "msg: communicator\ngroup: 999\n", "no group 999");
	assert_int_equal(request(fd, "msg: group\nnranks: 4\n", &m), 0);
	assert_string_equal(m.kind, "ok");
	int g = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\nranks: 5\n", g);
	refused(fd, text, "'ranks' must be a list");
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n", g);
	refused(fd, text, "the group has 4 ranks but 1 were listed");
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", g, ranks4);
	*strstr(text, "10.2.1.12") = 0;
	strcat(text, "10.9.9.9, qpn: 20}\n");
	refused(fd, text, "rank 3: address 10.9.9.9 is no host of topology '1-2-4'");
	snprintf(text, sizeof(text),
		 "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n  - {rank: 1, ip: 10.1.1.5, qpn: 18}\n"
		 "  - {rank: 2, ip: 10.2.1.7, qpn: 19}\n  - {rank: 3, ip: 10.2.1.7, qpn: 20}\n", g);
	refused(fd, text, "ranks 2 and 3 are both on host pku3");
	snprintf(text, sizeof(text),
		 "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n  - {rank: 1, ip: 10.2.1.7, qpn: 18}\n"
		 "  - {rank: 2, ip: 10.1.1.5, qpn: 19}\n  - {rank: 3, ip: 10.2.1.12, qpn: 20}\n", g);
	refused(fd, text, "not consecutive");
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", g, ranks4);
	*strstr(text, "qpn: 19") = 0;
	strcat(text, "qpn: 0}\n  - {rank: 3, ip: 10.2.1.12, qpn: 20}\n");
	refused(fd, text, "not a valid QPN");
	close(fd);
}

static void test_tree_communicator(void **state)
{
	int fd = connect_retry(ctl_addr), fd2;
	char text[512];
	struct ctl_doc m;

	(void)state;
	assert_int_equal(request(fd, "msg: group\nnranks: 4\n", &m), 0);
	int g = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", g, ranks4);
	assert_int_equal(request(fd, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	assert_string_equal(ctl_str(&m, NULL, "root"), "sw0");
	const char *want_ip[4] = { "10.1.1.1", "10.1.1.1", "10.2.1.1", "10.2.1.1" };
	for (int r = 0; r < 4; r++) {
		yaml_node_t *it = ctl_item(&m, ctl_get(&m, NULL, "ranks"), r);
		assert_string_equal(ctl_str(&m, it, "switch_ip"), want_ip[r]);
	}
	unsigned long psn = strtoul(ctl_str(&m, NULL, "psn"), NULL, 10);
	ctl_doc_free(&m);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sw[i].rules, 1);
		assert_true(sw[i].parse_ok);
	}
	/* sw1: pku1 (rank 0) and pku2 (rank 1), parent sw0 over 172.16/16 */
	const struct sw_cfg *c1 = &sw[1].last.cfg;
	assert_int_equal(c1->nchildren, 2);
	assert_int_equal(c1->child[0].peer_ip, ntohl(inet_addr("10.1.1.21")));
	assert_int_equal(c1->child[0].peer_qpn, 17);
	assert_int_equal(c1->child[1].first_rank, 1);
	assert_int_equal(c1->child[0].rq_psn, psn);
	assert_true(c1->has_parent);
	assert_int_equal(c1->parent.peer_ip, ntohl(inet_addr("172.16.0.1")));
	assert_int_equal(c1->total_ranks, 4);
	/* sw0: the two leaves, ranks 0-1 and 2-3, on UDP 4792, QPNs crossed with theirs */
	const struct sw_cfg *c0 = &sw[0].last.cfg;
	assert_int_equal(c0->nchildren, 2);
	assert_false(c0->has_parent);
	assert_int_equal(c0->child[1].first_rank, 2);
	assert_int_equal(c0->child[1].nranks, 2);
	assert_int_equal(c0->child[0].udp_dst, 4792);
	assert_int_equal(c0->child[0].peer_qpn, c1->parent.local_qpn);
	assert_int_equal(c0->child[0].local_qpn, c1->parent.peer_qpn);
	assert_string_equal(sw[0].last.port[c0->child[1].port], "to-sw2");

	/* a second communicator needing the same switches is refused while this one lives */
	fd2 = connect_retry(ctl_addr);
	assert_int_equal(request(fd2, "msg: group\nnranks: 2\n", &m), 0);
	int g2 = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	snprintf(text, sizeof(text),
		 "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.2.1.7, qpn: 30}\n  - {rank: 1, ip: 10.2.1.12, qpn: 31}\n", g2);
	refused(fd2, text, "switch sw2 is serving communicator");

	/* counters of every switch */
	assert_int_equal(request(fd2, "msg: counters\n", &m), 0);
	assert_string_equal(m.kind, "counters");
	assert_string_equal(ctl_str(&m, ctl_get(&m, NULL, "switches") ? ctl_get(&m, ctl_get(&m, NULL, "switches"), "sw2") : NULL,
				    "rx_frames"), "7");
	ctl_doc_free(&m);

	/* rank 0 going away releases the communicator on every switch; then the leaf-only one fits */
	close(fd);
	for (int i = 0; i < 100 && sw[0].releases + sw[1].releases + sw[2].releases < 3; i++)
		usleep(20000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sw[i].releases, 1);
	assert_int_equal(request(fd2, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	assert_string_equal(ctl_str(&m, NULL, "root"), "sw2"); /* one leaf: its switch is the top */
	ctl_doc_free(&m);
	assert_int_equal(sw[2].rules, 2);
	assert_int_equal(sw[0].rules, 1);
	assert_false(sw[2].last.cfg.has_parent);
	close(fd2);
}

struct rank_arg {
	int rank, nranks, timeout_ms, rc;
	const char *controller;
	char err[512];
	int group;
};

static char master_addr[32];

static void *rank_main(void *arg)
{
	struct rank_arg *a = arg;
	struct inccl_group_opts o = { master_addr, a->controller, a->timeout_ms };
	inccl_group_t *g = NULL;

	a->rc = inccl_group_create(&o, a->rank, a->nranks, &g);
	snprintf(a->err, sizeof(a->err), "%s", inccl_last_error());
	a->group = inccl_group_id(g);
	inccl_group_destroy(g);
	return NULL;
}

/* Run ranks @ranks[0..n) of a group of @nranks in threads. */
static void run_ranks(struct rank_arg *ra, int n)
{
	pthread_t t[8];
	for (int i = 0; i < n; i++) {
		pthread_create(&t[i], NULL, rank_main, &ra[i]);
		if (i == 0)
			usleep(100000);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void test_group_bootstrap(void **state)
{
	struct rank_arg ra[4];

	(void)state;
	snprintf(master_addr, sizeof(master_addr), "127.0.0.1:%d", gport + 1);
	for (int i = 0; i < 4; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = 10000, .controller = ctl_addr };
	run_ranks(ra, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ra[i].rc, INCCL_OK);
		assert_int_equal(ra[i].group, ra[0].group);
	}
	assert_true(ra[0].group > 0);

	/* a rank missing: rank 0 names it, the others hear it from rank 0 */
	for (int i = 0; i < 3; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = 1500, .controller = ctl_addr };
	run_ranks(ra, 3);
	assert_int_equal(ra[0].rc, INCCL_ETIMEDOUT);
	assert_non_null(strstr(ra[0].err, "3 of 4 ranks joined within 1500 ms; missing: 3"));
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_non_null(strstr(ra[1].err, "rank 0: rank 0: 3 of 4 ranks joined"));

	/* ranks that disagree on the size: refused with both numbers */
	ra[0] = (struct rank_arg){ .rank = 0, .nranks = 2, .timeout_ms = 1500, .controller = ctl_addr };
	ra[1] = (struct rank_arg){ .rank = 1, .nranks = 3, .timeout_ms = 1500, .controller = ctl_addr };
	run_ranks(ra, 2);
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_non_null(strstr(ra[1].err, "rank 1 says 3 ranks, rank 0 says 2"));
	assert_int_equal(ra[0].rc, INCCL_ETIMEDOUT);

	/* a duplicate rank is refused with the reason */
	for (int i = 0; i < 3; i++)
		ra[i] = (struct rank_arg){ .rank = i ? 1 : 0, .nranks = 3, .timeout_ms = 1500, .controller = ctl_addr };
	run_ranks(ra, 3);
	assert_int_equal((ra[1].rc == INCCL_EREFUSED) + (ra[2].rc == INCCL_EREFUSED), 2);
	assert_non_null(strstr(ra[1].err, "has joined already") ? ra[1].err : strstr(ra[2].err, "has joined already"));

	/* the controller down: every rank gets the reason within the timeout */
	ra[0] = (struct rank_arg){ .rank = 0, .nranks = 2, .timeout_ms = 3000, .controller = "127.0.0.1:1" };
	ra[1] = (struct rank_arg){ .rank = 1, .nranks = 2, .timeout_ms = 3000, .controller = "127.0.0.1:1" };
	run_ranks(ra, 2);
	assert_int_equal(ra[0].rc, INCCL_ECONN);
	assert_non_null(strstr(ra[0].err, "cannot reach the controller at 127.0.0.1:1"));
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_non_null(strstr(ra[1].err, "cannot reach the controller"));

	/* nobody at rank 0: a bounded wait and a clear message */
	ra[0] = (struct rank_arg){ .rank = 1, .nranks = 2, .timeout_ms = 1000, .controller = ctl_addr };
	run_ranks(ra, 1);
	assert_int_equal(ra[0].rc, INCCL_ECONN);
	assert_non_null(strstr(ra[0].err, "cannot reach rank 0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_registration),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_tree_communicator),
		cmocka_unit_test(test_group_bootstrap),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("controller", tests, setup, teardown);
}
