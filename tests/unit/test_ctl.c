/*
 * test_ctl.c — the controller (incctl, run as a real process on loopback)
 * and libinccl's group bootstrap, against fake switches that answer like
 * incswitch (threads speaking the control protocol; the rules they receive
 * are parsed by the switch's own parser, swconfig.c).
 *
 * Covers: message framing, switch registration (good and bad names),
 * groups, communicator plans for the 1-2-4 topology (whole tree and one
 * leaf), every kind of bad request answered with a precise error, two
 * communicators sharing a switch (their own ids, queue pairs and slots) and
 * a third refused at once with "code: busy" when the switch is full (as it
 * registered) while the others are untouched, release on disconnect and
 * only by its owner, counters (of every switch, of one communicator),
 * inccl_group_create() with all ranks, silent peers at rank 0, a duplicate
 * rank, a missing rank and a dead controller; and that no peer waits on
 * another (test_nothing_waits: mute switches, a client that does not read,
 * idle and unfinished connections, the per-address and per-connection
 * limits), and that a switch of a live communicator going away is a "fault"
 * its rank 0 hears at once. With node keys (test_auth, its own incctl -K):
 * a wrong key, another node's name, no handshake, a message replayed on its
 * connection or on another, or altered, rank 0 on a host it did not prove, a
 * non-member using a communicator and a non-owner releasing it are refused;
 * a rank with a wrong job key is refused by rank 0 while the others form the
 * group; the normal path works sealed.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../proto/ctlmsg.h"
#include "../../proto/ctlauth.h"
#include "../../hostlib/inccl.h"
#include "../../switch/swconfig.h"

#ifndef BUILD_DIR
#error "build with make: BUILD_DIR is make's BUILD (where incctl is, where the log goes)"
#endif

#define SYNC_MS 30000        /* bounds every wait for an event; reached only when something is wrong */
#define JOIN_TIMEOUT_MS 2000 /* rank 0's timeout where a rank never comes (the others join in ~1 ms) */

static int sport, gport, master_port;
static pid_t ctl_pid = -1, ctl2_pid = -1; /* ctl2: test_nothing_waits' own incctl */
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
	struct sw_rules prev; /* the rules before them */
	char counters_comm[16]; /* the "comm" of the last counters request ("" without one) */
	int parse_ok;
	struct ctl_auth auth; /* test_auth's switches: on after the handshake */
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
		if (ctl_arecv(&s->auth, s->fd, &b, 100, &text) != CTL_OK)
			continue;
		if (ctl_parse(text, &m, err, sizeof(err)) == 0) {
			const char *comm = ctl_str(&m, NULL, "comm");
			if (!strcmp(m.kind, "rules")) {
				FILE *devnull = fopen("/dev/null", "w");
				s->prev = s->last;
				s->parse_ok = sw_rules_parse(text, strlen(text), s->name, &s->last, devnull) == 0;
				fclose(devnull);
				s->rules++;
				ctl_asendf(&s->auth, s->fd, 1000, "msg: ok\ncomm: %s\n", comm);
			} else if (!strcmp(m.kind, "release")) {
				pthread_mutex_lock(&sw_lock);
				s->releases++;
				pthread_cond_broadcast(&sw_released);
				pthread_mutex_unlock(&sw_lock);
				ctl_asendf(&s->auth, s->fd, 1000, "msg: ok\ncomm: %s\n", comm);
			} else if (!strcmp(m.kind, "counters")) {
				snprintf(s->counters_comm, sizeof(s->counters_comm), "%s", comm ? comm : "");
				ctl_asendf(&s->auth, s->fd, 1000, "msg: counters\nswitch: %s\ncomm: %s\ncounters: {rx_frames: 7}\n", s->name,
					  comm ? comm : "0");
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
 * Read an incctl's stdout (@fd) until the line naming the ports it listens
 * on, into *@sp and *@gp; what was read goes to the log. 0, or -1 (and why
 * on stderr) when incctl ended or SYNC_MS passed first.
 */
static int read_ports(int fd, int *sp, int *gp)
{
	char buf[4096], *at = NULL;
	size_t n = 0;
	uint64_t deadline = ctl_now_ms() + SYNC_MS;

	buf[0] = 0;
	while (!((at = strstr(buf, "switches on TCP ")) && strchr(at, '\n'))) {
		uint64_t now = ctl_now_ms();
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t k = 0;
		if (now >= deadline || n == sizeof(buf) - 1)
			break;
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		if ((p.revents & (POLLIN | POLLHUP)) && (k = read(fd, buf + n, sizeof(buf) - 1 - n)) == 0)
			break; /* incctl ended */
		if (k > 0)
			n += (size_t)k;
		buf[n] = 0;
	}
	fwrite(buf, 1, n, log_out);
	fflush(log_out);
	if (at && strchr(at, '\n') && sscanf(at, "switches on TCP %d, groups on TCP %d", sp, gp) == 2)
		return 0;
	fprintf(stderr, "test_ctl: incctl ended or did not name its ports within %d ms; it said: '%s'\n", SYNC_MS, buf);
	return -1;
}

/* Copy an incctl's stdout (@fd) to the log until incctl closes it, each piece also to @also when given. */
static void copy_log(int fd, void (*also)(const char *text, size_t len))
{
	char buf[4096];
	ssize_t k;

	while ((k = read(fd, buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
		if (k > 0) {
			fwrite(buf, 1, (size_t)k, log_out);
			fflush(log_out);
			if (also)
				also(buf, (size_t)k);
		}
}

/* Copy an incctl's stdout (the fd in @arg) to the log until incctl closes it. */
static void *log_main(void *arg)
{
	copy_log((int)(intptr_t)arg, NULL);
	return NULL;
}

/*
 * Start incctl on the 1-2-4 topology with ports the kernel picks and the
 * options @extra (NULL-terminated); its stdout goes to *@out_fd. Returns its
 * pid and the ports in *@sp and *@gp, or -1.
 */
static pid_t spawn_ctl(const char *const *extra, int *out_fd, int *sp, int *gp)
{
	const char *argv[16] = { "incctl", "-t", "topology/1-2-4.yaml", "-s", "0", "-g", "0" };
	int out[2], n = 7;
	pid_t pid;

	for (; extra && *extra && n < 15; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	if (pipe2(out, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		dup2(out[1], STDOUT_FILENO);
		execv(BUILD_DIR "/incctl", (char *const *)argv);
		fprintf(stderr, "test_ctl: cannot run %s: %s\n", BUILD_DIR "/incctl", strerror(errno));
		_exit(127);
	}
	close(out[1]);
	*out_fd = out[0];
	if (pid < 0 || read_ports(out[0], sp, gp) < 0) {
		if (pid > 0) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
		}
		close(out[0]);
		return -1;
	}
	return pid;
}

static int setup(void **state)
{
	pthread_condattr_t ca;
	int dead_port;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw_released, &ca);
	pthread_condattr_destroy(&ca);
	if ((master_fd = reserve_port(master_addr, sizeof(master_addr), &master_port)) < 0 ||
	    (dead_fd = reserve_port(dead_addr, sizeof(dead_addr), &dead_port)) < 0 ||
	    !(log_out = fopen(BUILD_DIR "/test_ctl.log", "we"))) {
		perror("test_ctl: setup");
		return -1;
	}
	if ((ctl_pid = spawn_ctl(NULL, &log_in, &sport, &gport)) < 0 ||
	    pthread_create(&log_thread, NULL, log_main, (void *)(intptr_t)log_in))
		return -1; /* cmocka runs teardown() */
	log_started = 1;
	snprintf(ctl_addr, sizeof(ctl_addr), "127.0.0.1:%d", gport);
	snprintf(sw_addr, sizeof(sw_addr), "127.0.0.1:%d", sport);
	return 0;
}

static void remove_keys(void);
static char auth_dir[256]; /* test_auth's keys, removed here too when it failed half-way */

/* Stop the fake switches and incctl, close everything; also after a failed setup(). */
static int teardown(void **state)
{
	(void)state;
	if (auth_dir[0])
		remove_keys();
	for (int i = 0; i < 3; i++)
		if (sw[i].fd > 0) {
			sw[i].stop = 1;
			pthread_join(sw[i].thread, NULL);
			close(sw[i].fd);
			sw[i].fd = 0;
		}
	if (ctl2_pid > 0) { /* test_nothing_waits failed half-way */
		kill(ctl2_pid, SIGTERM);
		waitpid(ctl2_pid, NULL, 0);
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

/* Feed @piece into @b through socket pair @sv, as if it came from the network. */
static void feed(int sv[2], struct ctl_buf *b, const char *piece)
{
	assert_int_equal(send(sv[0], piece, strlen(piece), 0), (ssize_t)strlen(piece));
	assert_true(ctl_feed(b, sv[1]) > 0);
}

/*
 * Message framing (no controller): an end marker split over reads, lines
 * that only look like one, blanks after it, and 20,000 pipelined messages
 * taken one by one in order (the buffer keeps a read offset; this would be
 * quadratic with a move per message).
 */
static void test_framing(void **state)
{
	struct ctl_buf b = { 0 };
	int sv[2], rc;
	char *msg;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	feed(sv, &b, "msg: a\nx: ....\n..");
	assert_null(ctl_next(&b, &rc));
	assert_int_equal(rc, CTL_OK);
	feed(sv, &b, ". \r");
	assert_null(ctl_next(&b, &rc));
	feed(sv, &b, "\nmsg: b\n....\n...x\n...\n");
	assert_non_null(msg = ctl_next(&b, &rc));
	assert_string_equal(msg, "msg: a\nx: ....\n... \r\n");
	free(msg);
	assert_non_null(msg = ctl_next(&b, &rc));
	assert_string_equal(msg, "msg: b\n....\n...x\n...\n");
	free(msg);
	assert_null(ctl_next(&b, &rc));
	assert_int_equal(ctl_buffered(&b), 0);

	static char burst[20000 * 24];
	size_t off = 0;
	int got = 0;
	for (int i = 0; i < 20000; i++)
		off += (size_t)sprintf(burst + off, "msg: n\ni: %d\n...\n", i);
	for (size_t sent = 0; sent < off || ctl_buffered(&b);) {
		if (sent < off) {
			ssize_t k = send(sv[0], burst + sent, off - sent < 3000 ? off - sent : 3000, 0);
			assert_true(k > 0);
			sent += (size_t)k;
			assert_true(ctl_feed(&b, sv[1]) > 0);
		}
		while ((msg = ctl_next(&b, &rc))) {
			char want[32];
			snprintf(want, sizeof(want), "msg: n\ni: %d\n...\n", got++);
			assert_string_equal(msg, want);
			free(msg);
		}
		assert_int_equal(rc, CTL_OK);
		if (sent == off && ctl_buffered(&b))
			fail_msg("%zu bytes left after the last message", ctl_buffered(&b));
	}
	assert_int_equal(got, 20000);

	/* no end marker within CTL_MSG_MAX: too big, said once the buffer is full */
	static char junk[65536];
	memset(junk, 'x', sizeof(junk));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	for (size_t fed = 0; fed < CTL_MSG_MAX;) {
		assert_int_equal(send(sv[0], junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
		while ((rc = ctl_feed(&b, sv[1])) > 0)
			fed += (size_t)rc;
	}
	assert_null(ctl_next(&b, &rc));
	assert_int_equal(rc, CTL_ETOOBIG);
	ctl_buf_free(&b);
	close(sv[0]);
	close(sv[1]);
}

/* a loopback TCP connection: @cl connected to @sv, which accepted it */
static void tcp_pair(int *cl, int *sv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &len), 0);
	*cl = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true((*sv = accept(ls, NULL, NULL)) >= 0);
	close(ls);
}

/* what ctl_feed() returns on @fd once its peer's end shows (at most 5 s) */
static int feed_end(int fd)
{
	struct ctl_buf b = { 0 };
	struct pollfd p = { fd, POLLIN, 0 };
	int rc;

	assert_int_equal(poll(&p, 1, 5000), 1);
	rc = ctl_feed(&b, fd);
	ctl_buf_free(&b);
	return rc;
}

/*
 * How a control peer went away, in the words libinccl (a rank) and incctl (a
 * switch) both use: its process closed the connection (an end, or a reset
 * when it left our message unread), its machine acknowledged nothing (this
 * machine's TCP gave up: CTL_DEAD_MS); a connect that timed out and a message
 * not in time keep their own words.
 */
static void test_gone_words(void **state)
{
	int cl, sv, rc;
	struct linger hard = { 1, 0 };

	(void)state;
	tcp_pair(&cl, &sv); /* its process ended: an orderly end */
	close(sv);
	rc = feed_end(cl);
	assert_int_equal(rc, CTL_EOF);
	assert_string_equal(ctl_gone_strerror(rc), "closed its connection");
	close(cl);

	tcp_pair(&cl, &sv); /* it closed with our message unread: a reset */
	assert_int_equal(send(cl, "msg: x\n...\n", 11, 0), 11);
	usleep(100 * 1000);
	assert_int_equal(setsockopt(sv, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard)), 0);
	close(sv);
	rc = feed_end(cl);
	assert_int_equal(rc, CTL_EIO);
	assert_int_equal(errno, ECONNRESET);
	assert_string_equal(ctl_gone_strerror(rc), "closed its connection");
	close(cl);

	errno = ETIMEDOUT; /* what recv() says when TCP_USER_TIMEOUT gave up (20 s: not waited for here) */
	assert_string_equal(ctl_gone_strerror(CTL_EIO), "its machine acknowledged nothing for 20 s");
	errno = ETIMEDOUT; /* ctl_connect()'s timeout: no dead peer */
	assert_string_equal(ctl_strerror(CTL_EIO), strerror(ETIMEDOUT));
	assert_string_equal(ctl_gone_strerror(CTL_ETIMEDOUT), "timed out");
	errno = EPIPE;
	assert_string_equal(ctl_gone_strerror(CTL_EIO), strerror(EPIPE));
	assert_string_equal(ctl_gone_strerror(CTL_EAUTH), ctl_strerror(CTL_EAUTH));
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
		/* room for two communicators of incctl's default 8192 slots */
		snprintf(text, sizeof(text), "msg: register\nswitch: %s\ncomms: 2\nslots: 16384\n", sw[i].name);
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
	char text[512], want_err[128];
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
	unsigned long comm = strtoul(ctl_str(&m, NULL, "comm"), NULL, 10);
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

	/* a second communicator (another job) over sw2: its own id, queue pairs and slots */
	fd2 = dial(ctl_addr);
	assert_true(fd2 >= 0);
	assert_int_equal(request(fd2, "msg: group\nnranks: 2\n", &m), 0);
	int g2 = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	snprintf(text, sizeof(text),
		 "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.2.1.7, qpn: 30}\n  - {rank: 1, ip: 10.2.1.12, qpn: 31}\n", g2);
	assert_int_equal(request(fd2, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	assert_string_equal(ctl_str(&m, NULL, "root"), "sw2"); /* one leaf: its switch is the top */
	unsigned long comm2 = strtoul(ctl_str(&m, NULL, "comm"), NULL, 10);
	ctl_doc_free(&m);
	assert_int_equal(sw[2].rules, 2);
	assert_int_equal(sw[0].rules, 1);
	assert_int_equal(sw[2].last.comm, comm2);
	assert_int_equal(sw[2].prev.comm, comm);
	assert_true((comm2 & 0xfff) != (comm & 0xfff));
	assert_false(sw[2].last.cfg.has_parent);
	for (int k = 0; k < 2; k++) /* the same hosts' ends at sw2, other queue pairs */
		assert_int_not_equal(sw[2].last.cfg.child[k].local_qpn, sw[2].prev.cfg.child[k].local_qpn);
	assert_int_equal(sw[2].last.cfg.nslots, 8192);

	/* a third one over sw2 finds it full (two communicators, as it registered): refused at once with
	 * "code: busy", no rules sent anywhere, nothing released */
	int fd3 = dial(ctl_addr);
	assert_true(fd3 >= 0);
	assert_int_equal(request(fd3, "msg: group\nnranks: 2\n", &m), 0);
	int g3 = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	char third[512];
	snprintf(third, sizeof(third),
		 "msg: communicator\ngroup: %d\nranks:\n  - {rank: 0, ip: 10.2.1.7, qpn: 40}\n  - {rank: 1, ip: 10.2.1.12, qpn: 41}\n", g3);
	assert_int_equal(request(fd3, third, &m), 0);
	assert_string_equal(m.kind, "error");
	assert_string_equal(ctl_str(&m, NULL, "code"), "busy");
	snprintf(want_err, sizeof(want_err), "switch sw2 is full: 2 communicators (at most 2: %lu, %lu) hold 16384 of its 16384",
		 comm < comm2 ? comm : comm2, comm < comm2 ? comm2 : comm);
	if (!strstr(ctl_str(&m, NULL, "error"), want_err))
		fail_msg("busy answer '%s' does not say '%s'", ctl_str(&m, NULL, "error"), want_err);
	ctl_doc_free(&m);
	assert_int_equal(sw[2].rules, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sw[i].releases, 0);

	/* another connection may neither release the communicator nor use its group */
	char other[600];
	snprintf(other, sizeof(other), "msg: release\ncomm: %lu\n", comm);
	refused(fd2, other, "belongs to another connection; only its rank 0 may release it");
	snprintf(other, sizeof(other), "msg: communicator\ngroup: %d\n%s", g, ranks4);
	snprintf(want_err, sizeof(want_err), "group %d belongs to another connection", g);
	refused(fd2, other, want_err);

	/* counters of every switch, then of one communicator: only its switches are asked, for it */
	assert_int_equal(request(fd2, "msg: counters\n", &m), 0);
	assert_string_equal(m.kind, "counters");
	assert_string_equal(ctl_str(&m, ctl_get(&m, NULL, "switches") ? ctl_get(&m, ctl_get(&m, NULL, "switches"), "sw2") : NULL,
				    "rx_frames"), "7");
	ctl_doc_free(&m);
	assert_string_equal(sw[2].counters_comm, "");
	snprintf(other, sizeof(other), "msg: counters\ncomm: %lu\n", comm2);
	assert_int_equal(request(fd2, other, &m), 0);
	assert_string_equal(m.kind, "counters");
	yaml_node_t *sws = ctl_get(&m, NULL, "switches");
	assert_non_null(sws);
	assert_null(ctl_get(&m, sws, "sw0"));
	assert_null(ctl_get(&m, sws, "sw1"));
	assert_int_equal(strtoul(ctl_str(&m, ctl_get(&m, sws, "sw2"), "comm"), NULL, 10), comm2);
	ctl_doc_free(&m);
	refused(fd2, "msg: counters\ncomm: 999999\n", "no communicator 999999");

	/* rank 0 going away releases its communicator on every switch, and only it; then the third fits */
	close(fd);
	wait_releases(3, released);
	for (int i = 0; i < 3; i++)
		assert_int_equal(released[i], 1);
	assert_int_equal(request(fd3, third, &m), 0);
	assert_string_equal(m.kind, "ok");
	ctl_doc_free(&m);
	assert_int_equal(sw[2].rules, 3);
	assert_int_equal(sw[2].releases, 1); /* the second one still lives */
	close(fd3);
	close(fd2);
	wait_releases(5, released);
	assert_int_equal(released[2], 3);
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
static void run_ranks_silent(struct rank_arg *ra, int n, int silent)
{
	pthread_t t[8];
	uint64_t deadline = ctl_now_ms() + SYNC_MS;
	int late = 0, quiet[8];

	rank0_done = 0;
	for (int i = 0; i < n; i++) {
		assert_int_equal(pthread_create(&t[i], NULL, rank_main, &ra[i]), 0);
		while (i == 0 && ra[0].rank == 0 && n > 1 && !rank0_done && !listening(master_port) && !late) {
			late = ctl_now_ms() >= deadline;
			usleep(1000); /* how often to look, not an order of events */
		}
		for (int k = 0; i == 0 && k < silent; k++) /* connected before any rank: they never say a word */
			assert_true((quiet[k] = dial(master_addr)) >= 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (int k = 0; k < silent; k++)
		close(quiet[k]);
	if (late)
		fail_msg("rank 0 neither listened on TCP %d nor returned within %d ms", master_port, SYNC_MS);
}

/* run_ranks_silent() without silent connections */
static void run_ranks(struct rank_arg *ra, int n)
{
	run_ranks_silent(ra, n, 0);
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

	/* peers that connect to rank 0 first and never send a join do not hold the ranks up: rank 0's
	 * timeout (2 s) is shorter than the time each may take to join (5 s), yet all ranks join */
	for (int i = 0; i < 4; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = i ? SYNC_MS : JOIN_TIMEOUT_MS,
					   .controller = ctl_addr };
	run_ranks_silent(ra, 4, 3);
	for (int i = 0; i < 4; i++) {
		if (ra[i].rc != INCCL_OK)
			fail_msg("rank %d with 3 silent peers at rank 0: %s", i, ra[i].err);
		assert_int_equal(ra[i].group, ra[0].group);
	}

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

/* Has @fd something to read (an answer, or its end) within @ms? */
static int readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, ms) == 1;
}

/* Read and drop what @fd receives until the peer closes it (EOF or reset), at most SYNC_MS: 1 if it did. */
static int closed_by_peer(int fd)
{
	uint64_t deadline = ctl_now_ms() + SYNC_MS;
	char buf[65536];

	for (;;) {
		uint64_t now = ctl_now_ms();
		if (now >= deadline || !readable(fd, (int)(deadline - now)))
			return 0;
		ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
}

/* A group of @n ranks on @fd: its id, or -1 (and the answer's kind on stderr). */
static int new_group(int fd, int n)
{
	char text[64];
	struct ctl_doc m;
	int id = -1;

	snprintf(text, sizeof(text), "msg: group\nnranks: %d\n", n);
	if (request(fd, text, &m) == 0) {
		if (!strcmp(m.kind, "ok"))
			id = atoi(ctl_str(&m, NULL, "group"));
		else
			fprintf(stderr, "test_ctl: group of %d: %s: %s\n", n, m.kind, ctl_str(&m, NULL, "error"));
		ctl_doc_free(&m);
	}
	return id;
}

/*
 * Nothing waits on one peer (a second incctl, with a 1.5 s switch deadline
 * and a 1 s idle limit): switches that never answer delay only the request
 * that needs them, and that request gets an error naming one once the
 * deadline passed; meanwhile other clients are answered. A client that does
 * not read its answers is disconnected when its output buffer is full, an
 * idle connection and an unfinished message are closed, and one address or
 * one connection cannot take every connection or group.
 */
static void test_nothing_waits(void **state)
{
	const char *opts[] = { "-W", "1500", "-I", "1000", NULL };
	int out = -1, sp, gp, mute[3], a, b, c, d, e;
	char saddr[32], gaddr[32], text[600];
	pthread_t logger;
	struct ctl_doc m;
	pid_t pid = ctl2_pid = spawn_ctl(opts, &out, &sp, &gp);

	(void)state;
	assert_true(pid > 0);
	assert_int_equal(pthread_create(&logger, NULL, log_main, (void *)(intptr_t)out), 0);
	snprintf(saddr, sizeof(saddr), "127.0.0.1:%d", sp);
	snprintf(gaddr, sizeof(gaddr), "127.0.0.1:%d", gp);

	/* three switches register, then never read or answer again */
	for (int i = 0; i < 3; i++) {
		assert_true((mute[i] = dial(saddr)) >= 0);
		snprintf(text, sizeof(text), "msg: register\nswitch: sw%d\n", i);
		assert_int_equal(request(mute[i], text, &m), 0);
		assert_string_equal(m.kind, "ok");
		ctl_doc_free(&m);
	}

	/* A asks for a communicator over them; B is served while A waits */
	assert_true((a = dial(gaddr)) >= 0);
	int ga = new_group(a, 4);
	assert_true(ga > 0);
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", ga, ranks4);
	assert_int_equal(ctl_send(a, text, 5000), CTL_OK);
	assert_true((b = dial(gaddr)) >= 0);
	assert_true(new_group(b, 2) > 0);
	assert_false(readable(a, 0)); /* B's answer came while A's request still waits */
	struct ctl_buf in = { 0 };
	char *ans;
	assert_int_equal(ctl_recv(a, &in, SYNC_MS, &ans), CTL_OK);
	assert_int_equal(ctl_parse(ans, &m, text, sizeof(text)), 0);
	free(ans);
	ctl_buf_free(&in);
	assert_string_equal(m.kind, "error");
	assert_non_null(strstr(ctl_str(&m, NULL, "error"), "did not answer within 1500 ms"));
	ctl_doc_free(&m);

	/* counters: the silent switches are named, within the counters deadline */
	assert_int_equal(request(b, "msg: counters\n", &m), 0);
	assert_string_equal(m.kind, "counters");
	yaml_node_t *sws = ctl_get(&m, NULL, "switches");
	for (int i = 0; i < 3; i++) {
		char name[8];
		snprintf(name, sizeof(name), "sw%d", i);
		const char *why = sws ? ctl_str(&m, ctl_get(&m, sws, name), "error") : NULL;
		assert_non_null(why);
		assert_non_null(strstr(why, "no answer within"));
	}
	ctl_doc_free(&m);

	/* C connects and says nothing: closed once idle; D holds a group but leaves a message unfinished */
	assert_true((c = dial(gaddr)) >= 0);
	assert_true((d = dial(gaddr)) >= 0);
	assert_true(new_group(d, 1) > 0);
	assert_int_equal(send(d, "msg: gro", 8, MSG_NOSIGNAL), 8);
	assert_true(closed_by_peer(c));
	assert_true(closed_by_peer(d));

	/* E sends requests and never reads: disconnected once its answers pile up; B is still served */
	int small = 4096, sent = 0, gone = 0;
	assert_true((e = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	setsockopt(e, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)gp),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(e, (struct sockaddr *)&sa, sizeof(sa)), 0);
	static const char flood[] = "msg: dance\n...\n";
	for (uint64_t deadline = ctl_now_ms() + SYNC_MS; !gone && sent < 1000000 && ctl_now_ms() < deadline;) {
		ssize_t k = send(e, flood, sizeof(flood) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k == (ssize_t)sizeof(flood) - 1)
			sent++;
		else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = { e, POLLOUT, 0 };
			poll(&p, 1, 100);
		} else
			gone = 1; /* EPIPE or ECONNRESET: the controller closed it */
	}
	if (!gone)
		gone = closed_by_peer(e);
	if (!gone)
		fail_msg("a client that sent %d requests without reading an answer is still connected", sent);
	close(e);
	assert_true(new_group(b, 1) > 0);

	/* one address holds at most 32 connections; one connection at most 16 groups */
	int fds[40], accepted = 0;
	for (int i = 0; i < 40; i++)
		assert_true((fds[i] = dial(gaddr)) >= 0);
	for (int i = 0; i < 40; i++) { /* a refused one reads why, at once; an accepted one nothing (until idle) */
		char buf[256];
		ssize_t k = readable(fds[i], 500) ? recv(fds[i], buf, sizeof(buf) - 1, MSG_DONTWAIT) : -1;
		buf[k > 0 ? k : 0] = 0;
		if (k > 0)
			assert_non_null(strstr(buf, "too many connections from this address"));
		else
			accepted++;
		close(fds[i]);
	}
	assert_int_equal(accepted, 32 - 5); /* the 3 switches, A and B hold the rest */
	int made = 0;
	while (made < 40 && new_group(b, 1) > 0)
		made++;
	assert_int_equal(made, 16 - 2); /* B held 2 already */
	snprintf(text, sizeof(text), "msg: group\nnranks: 1\n");
	refused(b, text, "holds 16 groups already (at most 16)");

	/* the switches answer now; one of them going away is a fault rank 0 hears about at once */
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", ga, ranks4);
	assert_int_equal(ctl_send(a, text, 5000), CTL_OK);
	struct ctl_buf sin[3] = { { 0 } };
	for (int i = 0; i < 3; i++) /* what they were sent: the rules of both requests, a release */
		for (int got_rules = 0; got_rules < 2;) {
			assert_int_equal(ctl_recv(mute[i], &sin[i], SYNC_MS, &ans), CTL_OK);
			assert_int_equal(ctl_parse(ans, &m, text, sizeof(text)), 0);
			free(ans);
			if (!strcmp(m.kind, "rules")) {
				got_rules++;
				assert_int_equal(ctl_sendf(mute[i], 5000, "msg: ok\ncomm: %s\n", ctl_str(&m, NULL, "comm")), CTL_OK);
			}
			ctl_doc_free(&m);
		}
	assert_int_equal(ctl_recv(a, &in, SYNC_MS, &ans), CTL_OK);
	assert_int_equal(ctl_parse(ans, &m, text, sizeof(text)), 0);
	free(ans);
	assert_string_equal(m.kind, "ok");
	char comm_id[16];
	snprintf(comm_id, sizeof(comm_id), "%s", ctl_str(&m, NULL, "comm"));
	ctl_doc_free(&m);
	close(mute[1]);
	mute[1] = -1;
	assert_int_equal(ctl_recv(a, &in, SYNC_MS, &ans), CTL_OK);
	assert_int_equal(ctl_parse(ans, &m, text, sizeof(text)), 0);
	free(ans);
	assert_string_equal(m.kind, "fault");
	assert_string_equal(ctl_str(&m, NULL, "comm"), comm_id);
	/* how it went: its process closed the connection (libinccl's words for a rank gone) */
	assert_string_equal(ctl_str(&m, NULL, "error"), "switch sw1 went away (closed its connection)");
	ctl_doc_free(&m);
	ctl_buf_free(&in);
	for (int i = 0; i < 3; i++)
		ctl_buf_free(&sin[i]);

	for (int i = 0; i < 3; i++)
		if (mute[i] >= 0)
			close(mute[i]);
	close(a);
	close(b);
	close(c);
	close(d);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	ctl2_pid = -1;
	pthread_join(logger, NULL);
	close(out);
}

/* ---- identity and ownership (node keys, job keys) ------------------------ */

static char auth_log[1 << 16];      /* what test_auth's incctl said, for its refusals */
static size_t auth_log_len;
static pthread_mutex_t auth_log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t auth_log_grew = PTHREAD_COND_INITIALIZER;

/* Append @len bytes of @text to auth_log (what fits) and wake logged(). */
static void keep_auth_log(const char *text, size_t len)
{
	pthread_mutex_lock(&auth_log_lock);
	size_t n = len < sizeof(auth_log) - 1 - auth_log_len ? len : sizeof(auth_log) - 1 - auth_log_len;
	memcpy(auth_log + auth_log_len, text, n);
	auth_log_len += n;
	auth_log[auth_log_len] = 0;
	pthread_cond_broadcast(&auth_log_grew);
	pthread_mutex_unlock(&auth_log_lock);
}

/* Copy an incctl's stdout (fd @arg) to the log and to auth_log until it closes it. */
static void *auth_log_main(void *arg)
{
	copy_log((int)(intptr_t)arg, keep_auth_log);
	return NULL;
}

/* Has test_auth's incctl logged a line with @words (waiting up to SYNC_MS)? */
static int logged(const char *words)
{
	uint64_t deadline = ctl_now_ms() + SYNC_MS;
	int found;

	pthread_mutex_lock(&auth_log_lock);
	while (!(found = strstr(auth_log, words) != NULL) && ctl_now_ms() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&auth_log_grew, &auth_log_lock, &ts);
	}
	pthread_mutex_unlock(&auth_log_lock);
	return found;
}

/* The key of node @name made for test_auth, into @key. */
static void node_key(const char *name, unsigned char key[CTL_KEY_BYTES])
{
	char path[300], err[300];

	snprintf(path, sizeof(path), "%s/%s.key", auth_dir, name);
	if (ctl_key_load(path, key, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

/* Connect to @addr and prove to be @name in @role with @key; the socket. */
static int dial_as(const char *addr, const char *name, const char *role, const unsigned char *key, struct ctl_auth *a,
		   struct ctl_buf *b)
{
	char err[300];
	int fd = dial(addr);

	assert_true(fd >= 0);
	if (ctl_auth_client(a, fd, b, key, name, role, SYNC_MS, err, sizeof(err)) < 0)
		fail_msg("%s as %s: %s", addr, name, err);
	return fd;
}

/*
 * Connect to @addr as @name/@role with @key: the handshake is refused with
 * @words (the server's reason, from its unsealed error), and the server
 * closes the connection.
 */
static void auth_refused(const char *addr, const char *name, const char *role, const unsigned char *key,
			 const char *words)
{
	struct ctl_auth a;
	struct ctl_buf b = { 0 };
	char err[300], c;
	int fd = dial(addr);

	assert_true(fd >= 0);
	assert_int_equal(ctl_auth_client(&a, fd, &b, key, name, role, SYNC_MS, err, sizeof(err)), -1);
	if (strncmp(err, "refused: ", 9) || !strstr(err, words))
		fail_msg("%s as %s: '%s', not a refusal saying '%s'", addr, name, err, words);
	assert_true(readable(fd, SYNC_MS));
	assert_int_equal(recv(fd, &c, 1, 0), 0); /* closed */
	close(fd);
	ctl_buf_free(&b);
}

/* A sealed request on an authenticated connection, its answer opened and parsed. */
static int arequest(int fd, struct ctl_auth *a, struct ctl_buf *b, const char *text, struct ctl_doc *m)
{
	char *ans, err[256];
	int rc = ctl_asend(a, fd, text, 5000);

	if (rc == CTL_OK)
		rc = ctl_arecv(a, fd, b, SYNC_MS, &ans);
	if (rc != CTL_OK)
		return rc;
	rc = ctl_parse(ans, m, err, sizeof(err));
	free(ans);
	return rc;
}

/* The next message on @fd is an unsealed "error" saying @words, then the controller closes @fd. */
static void refused_then_closed(int fd, struct ctl_buf *b, const char *words)
{
	char *ans, err[256], c;
	struct ctl_doc m;

	assert_int_equal(ctl_recv(fd, b, SYNC_MS, &ans), CTL_OK);
	assert_int_equal(ctl_parse(ans, &m, err, sizeof(err)), 0);
	free(ans);
	if (strcmp(m.kind, "error") || !ctl_str(&m, NULL, "error") || !strstr(ctl_str(&m, NULL, "error"), words))
		fail_msg("'%s: %s', not an error saying '%s'", m.kind, ctl_str(&m, NULL, "error"), words);
	ctl_doc_free(&m);
	assert_true(readable(fd, SYNC_MS));
	assert_int_equal(recv(fd, &c, 1, 0), 0); /* closed */
	close(fd);
	ctl_buf_free(b);
}

/* An error answer (sealed) to @text on an authenticated connection, saying @words. */
static void arefused(int fd, struct ctl_auth *a, struct ctl_buf *b, const char *text, const char *words)
{
	struct ctl_doc m;

	assert_int_equal(arequest(fd, a, b, text, &m), 0);
	if (strcmp(m.kind, "error") || !ctl_str(&m, NULL, "error") || !strstr(ctl_str(&m, NULL, "error"), words))
		fail_msg("answer to '%.60s' is '%s: %s', not an error saying '%s'", text, m.kind,
			 ctl_str(&m, NULL, "error") ? ctl_str(&m, NULL, "error") : "", words);
	ctl_doc_free(&m);
}

static const char *auth_nodes[] = { "controller", "sw0", "sw1", "sw2", "pku1", "pku2", "pku3", "pku4" };

/* Make test_auth's keys: one per node of 1-2-4 and the controller's table. */
static void make_keys(void)
{
	char path[300], err[300], hex[2 * CTL_KEY_BYTES + 1];
	unsigned char key[CTL_KEY_BYTES];
	FILE *t;

	snprintf(auth_dir, sizeof(auth_dir), "%s/test_ctl.keys.XXXXXX", BUILD_DIR);
	assert_non_null(mkdtemp(auth_dir));
	snprintf(path, sizeof(path), "%s/node-keys", auth_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0 && (t = fdopen(fd, "w")));
	for (size_t i = 0; i < sizeof(auth_nodes) / sizeof(*auth_nodes); i++) {
		snprintf(path, sizeof(path), "%s/%s.key", auth_dir, auth_nodes[i]);
		if (ctl_key_make(path, err, sizeof(err)) < 0)
			fail_msg("%s", err);
		node_key(auth_nodes[i], key);
		fprintf(t, "%s %s\n", auth_nodes[i], ctl_key_hex(key, hex));
	}
	assert_int_equal(fclose(t), 0);
}

static void remove_keys(void)
{
	char path[300];

	for (size_t i = 0; i < sizeof(auth_nodes) / sizeof(*auth_nodes); i++) {
		snprintf(path, sizeof(path), "%s/%s.key", auth_dir, auth_nodes[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/node-keys", auth_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/open-keys", auth_dir);
	unlink(path);
	rmdir(auth_dir);
	auth_dir[0] = 0;
}

static void test_auth(void **state)
{
	static struct fake_switch asw[3] = { { .name = "sw0" }, { .name = "sw1" }, { .name = "sw2" } };
	unsigned char key[8][CTL_KEY_BYTES], wrong[CTL_KEY_BYTES];
	char table[300], saddr[32], gaddr[32], text[700], path[300], *sealed;
	struct ctl_buf b = { 0 }, b2 = { 0 };
	struct ctl_auth a, a2;
	struct ctl_doc m;
	pthread_t logger;
	int out = -1, sp, gp, fd, fd2;

	(void)state;
	ctl_auth_init();
	make_keys();
	for (int i = 0; i < 8; i++)
		node_key(auth_nodes[i], key[i]); /* 1: sw0 ... 4: pku1 (rank 0 of ranks4) ... 7: pku4 */
	memcpy(wrong, key[1], sizeof(wrong));
	wrong[0] ^= 1; /* sw0's key, one bit off */

	/* a key table others may read is refused: incctl does not start */
	snprintf(path, sizeof(path), "%s/open-keys", auth_dir);
	FILE *o = fopen(path, "w");
	assert_non_null(o);
	fprintf(o, "sw0 %064d\n", 0);
	fclose(o);
	chmod(path, 0644);
	const char *bad_opts[] = { "-K", path, NULL };
	assert_true(spawn_ctl(bad_opts, &out, &sp, &gp) < 0);
	close(out);

	/* a malformed table: each bad line named (in-process: the parser incctl uses) */
	static const struct {
		const char *text, *words;
	} bad_tables[] = {
		{ "# c\nsw0 abc\n", ":2: want 'NODE KEY'" },
		{ "sw0 00000000000000000000000000000000000000000000000000000000000000zz\n", ":1: want 'NODE KEY'" },
		{ "sw0 0000000000000000000000000000000000000000000000000000000000000000 x\n", ":1: want 'NODE KEY'" },
		{ "sw0 0000000000000000000000000000000000000000000000000000000000000000\n"
		  "sw0 1111111111111111111111111111111111111111111111111111111111111111\n", ":2: node 'sw0' has a key already" },
	};
	for (size_t i = 0; i < sizeof(bad_tables) / sizeof(*bad_tables); i++) {
		struct ctl_keytab kt;
		char err[400];
		unlink(path);
		int tf = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(tf >= 0);
		assert_int_equal(write(tf, bad_tables[i].text, strlen(bad_tables[i].text)), (ssize_t)strlen(bad_tables[i].text));
		close(tf);
		assert_int_equal(ctl_keytab_load(path, &kt, err, sizeof(err)), -1);
		if (!strstr(err, bad_tables[i].words))
			fail_msg("table %zu: '%s', not '%s'", i, err, bad_tables[i].words);
	}
	unsigned char scratch[CTL_KEY_BYTES];
	assert_int_equal(ctl_key_parse("00", scratch), -1);
	assert_int_equal(ctl_key_parse("0000000000000000000000000000000000000000000000000000000000000000\n", scratch), 0);

	snprintf(table, sizeof(table), "%s/node-keys", auth_dir);
	const char *opts[] = { "-K", table, "-I", "1000", NULL };
	pid_t pid = ctl2_pid = spawn_ctl(opts, &out, &sp, &gp);
	assert_true(pid > 0);
	auth_log_len = 0;
	auth_log[0] = 0;
	assert_int_equal(pthread_create(&logger, NULL, auth_log_main, (void *)(intptr_t)out), 0);
	snprintf(saddr, sizeof(saddr), "127.0.0.1:%d", sp);
	snprintf(gaddr, sizeof(gaddr), "127.0.0.1:%d", gp);

	/* no handshake: the challenge comes, a plain register is refused and the connection closed */
	fd = dial(saddr);
	assert_true(fd >= 0);
	char *ch;
	assert_int_equal(ctl_recv(fd, &b, SYNC_MS, &ch), CTL_OK);
	assert_non_null(strstr(ch, "msg: challenge"));
	free(ch);
	assert_int_equal(ctl_send(fd, "msg: register\nswitch: sw0\n", 1000), CTL_OK);
	refused_then_closed(fd, &b, "authenticate first");

	/* sw0 with a wrong key: refused at the handshake, logged, closed */
	auth_refused(saddr, "sw0", "switch", wrong, "node 'sw0' (switch) failed to prove its key");
	assert_true(logged("authentication refused from 127.0.0.1"));

	/* sw1 proves it is sw1, then registers as sw0: refused, closed */
	fd = dial_as(saddr, "sw1", "switch", key[2], &a, &b);
	assert_int_equal(ctl_asend(&a, fd, "msg: register\nswitch: sw0\n", 1000), CTL_OK);
	char *ans;
	assert_int_equal(ctl_arecv(&a, fd, &b, SYNC_MS, &ans), CTL_OK);
	assert_non_null(strstr(ans, "this connection proved it is node sw1, not switch sw0"));
	free(ans);
	assert_true(readable(fd, SYNC_MS));
	close(fd);
	ctl_buf_free(&b);
	assert_true(logged("switch registration as sw0 refused"));

	/* a node's key on the wrong port's role, and a node the topology does not have */
	auth_refused(saddr, "pku1", "client", key[4], "role 'client' on the switch port");
	auth_refused(saddr, "sw9", "switch", key[1], "'sw9' is not a node of topology '1-2-4'");

	/* replay: sw2's sealed registration re-sent on its own connection, then on a new one */
	fd = dial_as(saddr, "sw2", "switch", key[3], &a, &b);
	assert_non_null(sealed = ctl_auth_seal(&a, "msg: register\nswitch: sw2\n"));
	assert_int_equal(ctl_send(fd, sealed, 1000), CTL_OK);
	assert_int_equal(ctl_arecv(&a, fd, &b, SYNC_MS, &ans), CTL_OK);
	assert_non_null(strstr(ans, "msg: ok"));
	free(ans);
	fd2 = dial_as(saddr, "sw2", "switch", key[3], &a2, &b2); /* another connection: another nonce */
	assert_int_equal(ctl_send(fd2, sealed, 1000), CTL_OK);
	refused_then_closed(fd2, &b2, "bad MAC: forged, altered, or recorded on another connection");
	assert_true(logged("refused: bad MAC"));
	assert_int_equal(ctl_send(fd, sealed, 1000), CTL_OK); /* the same bytes again on their own connection */
	assert_int_equal(ctl_arecv(&a, fd, &b, SYNC_MS, &ans), CTL_OK);
	assert_non_null(strstr(ans, "message 0 replayed (message 1 was due)"));
	free(ans);
	assert_true(readable(fd, SYNC_MS));
	close(fd);
	ctl_buf_free(&b);
	free(sealed);
	assert_true(logged("message 0 replayed"));

	/* a message altered in flight (one character of a sealed one changed) */
	fd = dial_as(saddr, "sw2", "switch", key[3], &a, &b);
	assert_non_null(sealed = ctl_auth_seal(&a, "msg: register\nswitch: sw2\n"));
	sealed[strlen("msg: register\nswitch: sw")] = '1';
	assert_int_equal(ctl_send(fd, sealed, 1000), CTL_OK);
	free(sealed);
	assert_int_equal(ctl_arecv(&a, fd, &b, SYNC_MS, &ans), CTL_OK);
	assert_non_null(strstr(ans, "bad MAC"));
	free(ans);
	close(fd);
	ctl_buf_free(&b);

	/* reflection: a message sealed as the controller's own (direction 's', its first sequence number)
	 * sent back to it */
	fd = dial_as(saddr, "sw2", "switch", key[3], &a, &b);
	struct ctl_auth mirror = a;
	mirror.out_dir = 's';
	mirror.out_seq = 0;
	assert_non_null(sealed = ctl_auth_seal(&mirror, "msg: register\nswitch: sw2\n"));
	assert_int_equal(ctl_send(fd, sealed, 1000), CTL_OK);
	free(sealed);
	assert_int_equal(ctl_arecv(&a, fd, &b, SYNC_MS, &ans), CTL_OK);
	assert_non_null(strstr(ans, "bad MAC"));
	free(ans);
	close(fd);
	ctl_buf_free(&b);

	/* the normal path, sealed: three switches register, each under the name it proved */
	for (int i = 0; i < 3; i++) {
		asw[i].fd = dial_as(saddr, asw[i].name, "switch", key[1 + i], &asw[i].auth, &b);
		snprintf(text, sizeof(text), "msg: register\nswitch: %s\n", asw[i].name);
		assert_int_equal(arequest(asw[i].fd, &asw[i].auth, &b, text, &m), 0);
		assert_string_equal(m.kind, "ok");
		ctl_doc_free(&m);
		ctl_buf_free(&b);
		pthread_create(&asw[i].thread, NULL, switch_main, &asw[i]);
	}

	/* rank 0 on pku1 asks for a communicator of pku1 and pku2 (one leaf, sw1) */
	struct ctl_auth ao, am, an, ax;
	struct ctl_buf bo = { 0 }, bm = { 0 }, bn = { 0 }, bx = { 0 };
	int owner = dial_as(gaddr, "pku1", "client", key[4], &ao, &bo);
	int member = dial_as(gaddr, "pku2", "client", key[5], &am, &bm);
	int other = dial_as(gaddr, "pku3", "client", key[6], &an, &bn);
	assert_int_equal(arequest(owner, &ao, &bo, "msg: group\nnranks: 2\n", &m), 0);
	assert_string_equal(m.kind, "ok");
	int g = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	const char *ranks2 = "ranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n  - {rank: 1, ip: 10.1.1.5, qpn: 18}\n";

	/* pku3 acting as rank 0 of ranks on pku1: refused (its own group, rank 0 not on pku3) */
	assert_int_equal(arequest(other, &an, &bn, "msg: group\nnranks: 2\n", &m), 0);
	int g3 = atoi(ctl_str(&m, NULL, "group"));
	ctl_doc_free(&m);
	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", g3, ranks2);
	arefused(other, &an, &bn, text, "rank 0 (10.1.1.21) is not on node pku3, the node this connection proved it is");

	snprintf(text, sizeof(text), "msg: communicator\ngroup: %d\n%s", g, ranks2);
	assert_int_equal(arequest(owner, &ao, &bo, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	unsigned long comm = strtoul(ctl_str(&m, NULL, "comm"), NULL, 10);
	ctl_doc_free(&m);

	/* a member may look at it, not release it; a non-member may do neither */
	snprintf(text, sizeof(text), "msg: comm\ncomm: %lu\n", comm);
	assert_int_equal(arequest(member, &am, &bm, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	assert_string_equal(ctl_str(&m, NULL, "state"), "live");
	ctl_doc_free(&m);
	char want[160];
	snprintf(want, sizeof(want), "node pku3 is not a member of communicator %lu", comm);
	arefused(other, &an, &bn, text, want);
	snprintf(text, sizeof(text), "msg: release\ncomm: %lu\n", comm);
	arefused(other, &an, &bn, text, want);
	snprintf(want, sizeof(want), "communicator %lu belongs to another connection; only its rank 0 may release it", comm);
	arefused(member, &am, &bm, text, want);
	/* the same node on another connection is not the owner either */
	int owner2 = dial_as(gaddr, "pku1", "client", key[4], &ax, &bx);
	arefused(owner2, &ax, &bx, text, want);
	close(owner2);
	ctl_buf_free(&bx);
	/* its owner releases it */
	assert_int_equal(arequest(owner, &ao, &bo, text, &m), 0);
	assert_string_equal(m.kind, "ok");
	ctl_doc_free(&m);
	snprintf(text, sizeof(text), "msg: comm\ncomm: %lu\n", comm);
	arefused(owner, &ao, &bo, text, "no communicator");

	/* the counters query of a tool that proved it is the controller node */
	fd = dial_as(gaddr, "controller", "client", key[0], &a, &b);
	assert_int_equal(arequest(fd, &a, &b, "msg: counters\n", &m), 0);
	assert_string_equal(m.kind, "counters");
	ctl_doc_free(&m);
	close(fd);
	ctl_buf_free(&b);
	close(owner);
	close(member);
	close(other);
	ctl_buf_free(&bo);
	ctl_buf_free(&bm);
	ctl_buf_free(&bn);

	/* a connection that never answers the challenge is closed within the bound (-I 1000 here) */
	fd = dial(gaddr);
	assert_true(fd >= 0);
	uint64_t t0 = ctl_now_ms();
	assert_int_equal(ctl_recv(fd, &b, SYNC_MS, &ch), CTL_OK);
	free(ch);
	assert_true(readable(fd, SYNC_MS));
	char c;
	assert_int_equal(recv(fd, &c, 1, 0), 0);
	assert_true(ctl_now_ms() - t0 < 1000 + 1000); /* the bound, and the loop's timer turn */
	close(fd);
	ctl_buf_free(&b);
	assert_true(logged("did not authenticate in time"));

	/* a job: rank 0 on pku1 (its node key), the ranks with the job key; an impostor with another key is
	 * refused by rank 0 at once, and the four ranks form the group */
	char hex[2 * CTL_KEY_BYTES + 1], kpath[300];
	unsigned char job[CTL_KEY_BYTES], nojob[CTL_KEY_BYTES];
	crypto_auth_keygen(job);
	crypto_auth_keygen(nojob);
	snprintf(kpath, sizeof(kpath), "%s/pku1.key", auth_dir);
	setenv("INCCL_JOB_KEY", ctl_key_hex(job, hex), 1);
	setenv("INCCL_NODE_KEY", kpath, 1);
	setenv("INCCL_NODE", "pku1", 1);
	struct rank_arg ra[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		ra[i] = (struct rank_arg){ .rank = i, .nranks = 4, .timeout_ms = SYNC_MS, .controller = gaddr };
	rank0_done = 0;
	assert_int_equal(pthread_create(&t[0], NULL, rank_main, &ra[0]), 0);
	uint64_t until = ctl_now_ms() + SYNC_MS;
	while (!listening(master_port) && ctl_now_ms() < until)
		usleep(1000);
	auth_refused(master_addr, "rank 1", "member", nojob, "not of this job (wrong job key)");
	for (int i = 1; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rank_main, &ra[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		if (ra[i].rc != INCCL_OK)
			fail_msg("rank %d with the job key: %s", i, ra[i].err);
		assert_int_equal(ra[i].group, ra[0].group);
	}
	assert_true(ra[0].group > 0); /* registered by rank 0 over its authenticated connection */

	/* rank 0 with a node key the controller does not hold for that name: refused, every rank told */
	snprintf(kpath, sizeof(kpath), "%s/pku2.key", auth_dir);
	setenv("INCCL_NODE_KEY", kpath, 1); /* pku2's key, but calls itself pku1 */
	ra[0] = (struct rank_arg){ .rank = 0, .nranks = 2, .timeout_ms = SYNC_MS, .controller = gaddr };
	ra[1] = (struct rank_arg){ .rank = 1, .nranks = 2, .timeout_ms = SYNC_MS, .controller = gaddr };
	run_ranks(ra, 2);
	if (ra[0].rc != INCCL_EREFUSED || !strstr(ra[0].err, "node 'pku1' (client) failed to prove its key"))
		fail_msg("rank 0 with another node's key: %d, %s", ra[0].rc, ra[0].err);
	assert_int_equal(ra[1].rc, INCCL_EREFUSED);
	unsetenv("INCCL_JOB_KEY");
	unsetenv("INCCL_NODE_KEY");
	unsetenv("INCCL_NODE");

	for (int i = 0; i < 3; i++) {
		asw[i].stop = 1;
		pthread_join(asw[i].thread, NULL);
		close(asw[i].fd);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	ctl2_pid = -1;
	pthread_join(logger, NULL);
	close(out);
	remove_keys();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_gone_words),
		cmocka_unit_test(test_switch_registration),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_tree_communicator),
		cmocka_unit_test(test_group_bootstrap),
		cmocka_unit_test(test_nothing_waits),
		cmocka_unit_test(test_auth),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("controller", tests, setup, teardown);
}
