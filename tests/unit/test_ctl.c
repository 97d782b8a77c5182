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
 *
 * Nothing guesses a free port or waits a fixed time: incctl listens on ports
 * the kernel picks (-s 0 -g 0) and the test reads them from its first log
 * line; rank 0's port and the dead controller's are ports the test holds
 * (reserve_port()); every wait is for an event, and SYNC_MS only bounds a
 * failure. Where a rank never comes, only rank 0 has a short timeout, and the
 * others start once it listens, so rank 0's timeout is the one that runs out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../controller/ctlmsg.h"
#include "../../hostlib/inccl.h"
#include "../../switch/swconfig.h"

#ifndef BUILD_DIR
#error "build with make: BUILD_DIR is make's BUILD (where incctl is, where the log goes)"
#endif

#define SYNC_MS 30000        /* bounds every wait for an event; reached only when something is wrong */
#define JOIN_TIMEOUT_MS 2000 /* rank 0's timeout where a rank never comes (the others join in ~1 ms) */

static int sport, gport, master_port;
static pid_t ctl_pid = -1;
static char ctl_addr[32], sw_addr[32], master_addr[32], dead_addr[32];
static int master_fd = -1, dead_fd = -1; /* the reserved ports */
static int log_in = -1;                  /* incctl's stdout */
static FILE *log_out;                    /* BUILD_DIR/test_ctl.log */
static pthread_t log_thread;
static int log_started;

struct fake_switch {
	const char *name;
	pthread_t thread;
	int fd;
	atomic_int rules, stop;
	int releases;         /* under sw_lock */
	struct sw_rules last; /* the rules received, parsed by the switch's parser (written before rules++) */
	int parse_ok;
};

static struct fake_switch sw[3] = { { .name = "sw0" }, { .name = "sw1" }, { .name = "sw2" } };
static pthread_mutex_t sw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sw_released; /* CLOCK_MONOTONIC; signalled under sw_lock on every release */

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
				pthread_mutex_lock(&sw_lock);
				s->releases++;
				pthread_cond_broadcast(&sw_released);
				pthread_mutex_unlock(&sw_lock);
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

/*
 * Wait until the fake switches have taken @n releases in all, or SYNC_MS
 * has passed; returns each switch's count in @each[3].
 */
static void wait_releases(int n, int each[3])
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += SYNC_MS / 1000;
	pthread_mutex_lock(&sw_lock);
	while (rc == 0 && sw[0].releases + sw[1].releases + sw[2].releases < n)
		rc = pthread_cond_timedwait(&sw_released, &sw_lock, &until);
	for (int i = 0; i < 3; i++)
		each[i] = sw[i].releases;
	pthread_mutex_unlock(&sw_lock);
}

/* Connect to a listening @addr ("A.B.C.D:PORT"); the socket or -1. */
static int dial(const char *addr)
{
	return ctl_connect(addr, 0, SYNC_MS);
}

/*
 * Hold a TCP port the kernel picks, for the whole test: bound on every
 * address with SO_REUSEADDR and never listening. ctl_listen() (which sets
 * SO_REUSEADDR too) can listen on it; while nobody does, connections to it
 * are refused; the kernel gives it to no other socket (bind to port 0, or
 * the local port of a connect()) while it is held. Writes "127.0.0.1:PORT"
 * to @addr and the port to @port; returns the socket, or -1.
 */
static int reserve_port(char *addr, size_t addrlen, int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	snprintf(addr, addrlen, "127.0.0.1:%d", *port);
	return fd;
}

/* Does a socket listen on TCP @port (IPv4)? Read from /proc/net/tcp, which only looks. */
static int listening(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	unsigned lport, st;
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, " %*u: %*x:%x %*x:%*x %x", &lport, &st) == 2 && (int)lport == port && st == 0x0a;
	if (f)
		fclose(f);
	return found;
}

/*
 * Read incctl's stdout until the line naming the ports it listens on, into
 * sport and gport; what was read goes to the log. 0, or -1 (and why on
 * stderr) when incctl ended or SYNC_MS passed first.
 */
static int read_ports(void)
{
	char buf[4096], *at = NULL;
	size_t n = 0;
	uint64_t deadline = ctl_now_ms() + SYNC_MS;

	buf[0] = 0;
	while (!((at = strstr(buf, "switches on TCP ")) && strchr(at, '\n'))) {
		uint64_t now = ctl_now_ms();
		struct pollfd p = { log_in, POLLIN, 0 };
		ssize_t k = 0;
		if (now >= deadline || n == sizeof(buf) - 1)
			break;
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		if ((p.revents & (POLLIN | POLLHUP)) && (k = read(log_in, buf + n, sizeof(buf) - 1 - n)) == 0)
			break; /* incctl ended */
		if (k > 0)
			n += (size_t)k;
		buf[n] = 0;
	}
	fwrite(buf, 1, n, log_out);
	fflush(log_out);
	if (at && strchr(at, '\n') && sscanf(at, "switches on TCP %d, groups on TCP %d", &sport, &gport) == 2)
		return 0;
	fprintf(stderr, "test_ctl: incctl ended or did not name its ports within %d ms; it said: '%s'\n", SYNC_MS, buf);
	return -1;
}

/* Copy incctl's stdout to the log until incctl closes it. */
static void *log_main(void *arg)
{
	char buf[4096];
	ssize_t k;

	(void)arg;
	while ((k = read(log_in, buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
		if (k > 0) {
			fwrite(buf, 1, (size_t)k, log_out);
			fflush(log_out);
		}
	return NULL;
}

static int setup(void **state)
{
	pthread_condattr_t ca;
	int out[2], dead_port;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw_released, &ca);
	pthread_condattr_destroy(&ca);
	if ((master_fd = reserve_port(master_addr, sizeof(master_addr), &master_port)) < 0 ||
	    (dead_fd = reserve_port(dead_addr, sizeof(dead_addr), &dead_port)) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    !(log_out = fopen(BUILD_DIR "/test_ctl.log", "we"))) {
		perror("test_ctl: setup");
		return -1;
	}
	if ((ctl_pid = fork()) == 0) {
		dup2(out[1], STDOUT_FILENO);
		execl(BUILD_DIR "/incctl", "incctl", "-t", "topology/1-2-4.yaml", "-s", "0", "-g", "0", (char *)NULL);
		fprintf(stderr, "test_ctl: cannot run %s: %s\n", BUILD_DIR "/incctl", strerror(errno));
		_exit(127);
	}
	close(out[1]);
	log_in = out[0];
	if (ctl_pid < 0 || read_ports() < 0 || pthread_create(&log_thread, NULL, log_main, NULL))
		return -1; /* cmocka runs teardown() */
	log_started = 1;
	snprintf(ctl_addr, sizeof(ctl_addr), "127.0.0.1:%d", gport);
	snprintf(sw_addr, sizeof(sw_addr), "127.0.0.1:%d", sport);
	return 0;
}

/* Stop the fake switches and incctl, close everything; also after a failed setup(). */
static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		if (sw[i].fd > 0) {
			sw[i].stop = 1;
			pthread_join(sw[i].thread, NULL);
			close(sw[i].fd);
			sw[i].fd = 0;
		}
	if (ctl_pid > 0) {
		kill(ctl_pid, SIGTERM);
		waitpid(ctl_pid, NULL, 0);
		ctl_pid = -1;
	}
	if (log_started)
		pthread_join(log_thread, NULL); /* incctl closed its stdout: the log is complete */
	log_started = 0;
	if (log_out)
		fclose(log_out);
	log_out = NULL;
	if (log_in >= 0)
		close(log_in);
	if (master_fd >= 0)
		close(master_fd);
	if (dead_fd >= 0)
		close(dead_fd);
	log_in = master_fd = dead_fd = -1;
	return 0;
}

static void test_switch_registration(void **state)
{
	struct ctl_doc m;
	int fd = dial(sw_addr);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(request(fd, "msg: register\nswitch: pku1\n", &m), 0);
	assert_string_equal(m.kind, "error");
	assert_non_null(strstr(ctl_str(&m, NULL, "error"), "'pku1' is not a switch of topology '1-2-4'"));
	ctl_doc_free(&m);
	close(fd);
	for (int i = 0; i < 3; i++) {
		sw[i].fd = dial(sw_addr);
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
	int fd = dial(ctl_addr);
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
	int fd = dial(ctl_addr), fd2, released[3];
	char text[512];
	struct ctl_doc m;

	(void)state;
	assert_true(fd >= 0);
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
	fd2 = dial(ctl_addr);
	assert_true(fd2 >= 0);
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
	wait_releases(3, released);
	for (int i = 0; i < 3; i++)
		assert_int_equal(released[i], 1);
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

static atomic_int rank0_done; /* the thread of rank 0 has returned */

static void *rank_main(void *arg)
{
	struct rank_arg *a = arg;
	struct inccl_group_opts o = { master_addr, a->controller, a->timeout_ms };
	inccl_group_t *g = NULL;

	a->rc = inccl_group_create(&o, a->rank, a->nranks, &g);
	snprintf(a->err, sizeof(a->err), "%s", inccl_last_error());
	a->group = inccl_group_id(g);
	inccl_group_destroy(g);
	if (a->rank == 0)
		rank0_done = 1;
	return NULL;
}

/*
 * Run ranks @ra[0..n) in threads and wait for them all. When ra[0] is rank 0,
 * the others start once it listens (or has returned already), so each
 * reaches it at its first attempt: where a rank never comes, rank 0's
 * timeout is the one that runs out, whatever the scheduling.
 */
static void run_ranks(struct rank_arg *ra, int n)
{
	pthread_t t[8];
	uint64_t deadline = ctl_now_ms() + SYNC_MS;
	int late = 0;

	rank0_done = 0;
	for (int i = 0; i < n; i++) {
		assert_int_equal(pthread_create(&t[i], NULL, rank_main, &ra[i]), 0);
		while (i == 0 && ra[0].rank == 0 && n > 1 && !rank0_done && !listening(master_port) && !late) {
			late = ctl_now_ms() >= deadline;
			usleep(1000); /* how often to look, not an order of events */
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (late)
		fail_msg("rank 0 neither listened on TCP %d nor returned within %d ms", master_port, SYNC_MS);
}

static void test_group_bootstrap(void **state)
{
	struct rank_arg ra[4];
	char want[128];

	(void)state;
	for (int i = 0; i < 4; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = SYNC_MS, .controller = ctl_addr };
	run_ranks(ra, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ra[i].rc, INCCL_OK);
		assert_int_equal(ra[i].group, ra[0].group);
	}
	assert_true(ra[0].group > 0);

	/* a rank missing (rank 3 never starts): rank 0 names it, the others (waiting longer) hear it from rank 0 */
	for (int i = 0; i < 3; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = i ? SYNC_MS : JOIN_TIMEOUT_MS,
					   .controller = ctl_addr };
	run_ranks(ra, 3);
	assert_int_equal(ra[0].rc, INCCL_ETIMEDOUT);
	snprintf(want, sizeof(want), "3 of 4 ranks joined within %d ms; missing: 3", JOIN_TIMEOUT_MS);
	assert_non_null(strstr(ra[0].err, want));
	for (int i = 1; i < 3; i++) {
		assert_int_equal(ra[i].rc, INCCL_EREFUSED);
		assert_non_null(strstr(ra[i].err, "rank 0: rank 0: 3 of 4 ranks joined"));
	}

	/* ranks that disagree on the size: refused with both numbers */
	ra[0] = (struct rank_arg){ .rank = 0, .nranks = 2, .timeout_ms = JOIN_TIMEOUT_MS, .controller = ctl_addr };
	ra[1] = (struct rank_arg){ .rank = 1, .nranks = 3, .timeout_ms = SYNC_MS, .controller = ctl_addr };
	run_ranks(ra, 2);
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_non_null(strstr(ra[1].err, "rank 1 says 3 ranks, rank 0 says 2"));
	assert_int_equal(ra[0].rc, INCCL_ETIMEDOUT);
	assert_non_null(strstr(ra[0].err, "1 of 2 ranks joined"));

	/* a duplicate rank is refused with the reason; the rank 1 that joined hears rank 0's timeout */
	for (int i = 0; i < 3; i++)
		ra[i] = (struct rank_arg){ .rank = i ? 1 : 0, .nranks = 3, .timeout_ms = i ? SYNC_MS : JOIN_TIMEOUT_MS,
					   .controller = ctl_addr };
	run_ranks(ra, 3);
	assert_int_equal(ra[0].rc, INCCL_ETIMEDOUT);
	assert_non_null(strstr(ra[0].err, "2 of 3 ranks joined"));
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_int_equal(ra[2].rc, INCCL_EREFUSED);
	int dup = strstr(ra[1].err, "has joined already") ? 1 : 2;
	assert_non_null(strstr(ra[dup].err, "rank 1 has joined already"));
	assert_non_null(strstr(ra[3 - dup].err, "rank 0: rank 0: 2 of 3 ranks joined"));

	/* the controller down (a port held, nobody listening): every rank gets the reason */
	ra[0] = (struct rank_arg){ .rank = 0, .nranks = 2, .timeout_ms = SYNC_MS, .controller = dead_addr };
	ra[1] = (struct rank_arg){ .rank = 1, .nranks = 2, .timeout_ms = SYNC_MS, .controller = dead_addr };
	run_ranks(ra, 2);
	assert_int_equal(ra[0].rc, INCCL_ECONN);
	snprintf(want, sizeof(want), "cannot reach the controller at %s", dead_addr);
	assert_non_null(strstr(ra[0].err, want));
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	assert_non_null(strstr(ra[1].err, "cannot reach the controller"));

	/* nobody at rank 0 (its port held, nobody listening): a bounded wait and a clear message */
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
