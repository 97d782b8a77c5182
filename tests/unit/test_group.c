/*
 * test_group.c — libinccl's bootstrap (hostlib/group.c) as rank 0 of two
 * ranks, its peers (the controller, rank 1) socketpairs whose ends carry
 * prepared messages, the RDMA side faked (fake_comm.c), cmocka.
 *
 * Rank 0 passes on what others send it: each rank's address into its
 * request to the controller, each switch address from the controller's
 * answer into a rank's "config". A value that is not what it should be (a
 * rank's "ip: 1].1.1.7", found by fuzz/fuzz_group.c: rank 0 wrote it into
 * its YAML request, which then did not parse) must be refused with the
 * reason and never written on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define INCCL_BUILD
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "../../hostlib/group.c"
#include "fake_comm.h"

struct side {
	int fd, far;
};

/* A connection whose peer sent @text (then stopped sending). */
static struct side side(const char *text)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[1], text, strlen(text)), (ssize_t)strlen(text));
	shutdown(sv[1], SHUT_WR);
	return (struct side){ sv[0], sv[1] };
}

/* Everything rank 0 sent to the peer at @far, as one string (free()). */
static char *received(int far)
{
	char *buf = calloc(1, 65536);
	size_t n = 0;
	ssize_t k;

	assert_non_null(buf);
	fcntl(far, F_SETFL, O_NONBLOCK);
	while (n < 65535 && (k = read(far, buf + n, 65535 - n)) > 0)
		n += (size_t)k;
	return buf;
}

static const char answer_ok[] = "msg: ok\ncomm: 1\npsn: 100\nroot: sw1\nswitches: [sw1]\nranks:\n"
				"  - {rank: 0, switch: sw1, switch_ip: 10.1.1.1, switch_qpn: 256}\n"
				"  - {rank: 1, switch: sw1, switch_ip: 10.1.1.1, switch_qpn: 257}\n...\n";

/*
 * Rank 0 of two with controller @ctl_text and rank 1 @rank1_text: the
 * return code of inccl_comm_init(), what the controller and rank 1 got.
 */
static int run_rank0(const char *ctl_text, const char *rank1_text, char **to_ctl, char **to_rank1)
{
	inccl_group_t *g = calloc(1, sizeof(*g));
	struct side c = side(ctl_text), r1 = side(rank1_text);
	inccl_comm_t *comm = NULL;
	int rc;

	assert_non_null(g);
	assert_non_null(g->peer = calloc(2, sizeof(*g->peer)));
	*g = (struct inccl_group){ .rank = 0, .nranks = 2, .id = 1, .timeout_ms = 2000, .peer = g->peer };
	g->peer[0].fd = -1;
	g->peer[1].fd = r1.fd;
	g->ctl.fd = c.fd;
	fake_comm_algo = INCCL_ALGO_INC;
	rc = inccl_comm_init(g, NULL, &comm);
	assert_true((rc == INCCL_OK) == (comm != NULL));
	*to_ctl = received(c.far);
	*to_rank1 = received(r1.far);
	if (comm) {
		comm->release = NULL; /* the controller's end says nothing more */
		inccl_comm_destroy(comm);
	}
	inccl_group_destroy(g);
	close(c.far);
	close(r1.far);
	return rc;
}

static void test_passes_on_what_it_got(void **state)
{
	char *to_ctl, *to_r1;

	assert_int_equal(run_rank0(answer_ok, "msg: qp\nrank: 1\nip: 10.1.1.5\nqpn: 18\n...\nmsg: ready\n...\n", &to_ctl,
				   &to_r1), INCCL_OK);
	assert_string_equal(to_ctl, "msg: communicator\ngroup: 1\nranks:\n  - {rank: 0, ip: 10.1.1.21, qpn: 17}\n"
				    "  - {rank: 1, ip: 10.1.1.5, qpn: 18}\n...\n");
	assert_string_equal(to_r1, "msg: config\ncomm: 1\npsn: 100\nswitch_ip: 10.1.1.1\nswitch_qpn: 257\n...\n"
				   "msg: go\n...\n");
	free(to_ctl);
	free(to_r1);
}

/* A rank's address that is no dotted quad: refused, the controller never asked. */
static void test_bad_rank_ip_refused(void **state)
{
	static const char *const bad[] = { "1].1.1.7", "\"10.1.1.5, qpn: 1}\\n  - {rank: 0\"", "10.1.1", "[10.1.1.5]" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char qp[200], *to_ctl, *to_r1;
		snprintf(qp, sizeof(qp), "msg: qp\nrank: 1\nip: %s\nqpn: 18\n...\n", bad[i]);
		assert_int_equal(run_rank0(answer_ok, qp, &to_ctl, &to_r1), INCCL_ECONN);
		assert_string_equal(to_ctl, "");
		assert_non_null(strstr(inccl_last_error(), "rank 1 sent a bad 'qp' message"));
		assert_non_null(strstr(to_r1, "msg: error\n"));
		free(to_ctl);
		free(to_r1);
	}
}

/* A switch address from the controller that is no dotted quad: refused, no rank gets a config. */
static void test_bad_switch_ip_refused(void **state)
{
	static const char *const bad[] = { "\"10.1.1.1\\npsn: 5\"", "10.1.1.1}", "x" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char ans[512], *to_ctl, *to_r1;
		snprintf(ans, sizeof(ans), "msg: ok\ncomm: 1\npsn: 100\nranks:\n"
					   "  - {rank: 0, switch_ip: 10.1.1.1, switch_qpn: 256}\n"
					   "  - {rank: 1, switch_ip: %s, switch_qpn: 257}\n...\n", bad[i]);
		assert_int_equal(run_rank0(ans, "msg: qp\nrank: 1\nip: 10.1.1.5\nqpn: 18\n...\n", &to_ctl, &to_r1),
				 INCCL_ECONN);
		assert_null(strstr(to_r1, "config"));
		assert_non_null(strstr(to_r1, "msg: error\n"));
		assert_non_null(strstr(inccl_last_error(), "controller")); /* a bad answer, or a message that does not parse */
		free(to_ctl);
		free(to_r1);
	}
}

/* ---- destroy is collective: rank 0 drops the rules only after every rank is done ---- */

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/*
 * Rank 0 of two with an in-network communicator made (controller @ctl_text,
 * rank 1's "qp" and "ready" sent); rank 1's end stays open for the test:
 * *@r1_far. The controller's end is closed for writing after @ctl_text.
 */
static inccl_group_t *rank0_with_comm(const char *ctl_text, int timeout_ms, inccl_comm_t **comm, int *ctl_far,
				      int *r1_far)
{
	inccl_group_t *g = calloc(1, sizeof(*g));
	struct side c = side(ctl_text);
	int sv[2];
	const char *r1 = "msg: qp\nrank: 1\nip: 10.1.1.5\nqpn: 18\n...\nmsg: ready\n...\n";

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[1], r1, strlen(r1)), (ssize_t)strlen(r1));
	assert_non_null(g);
	assert_non_null(g->peer = calloc(2, sizeof(*g->peer)));
	*g = (struct inccl_group){ .rank = 0, .nranks = 2, .id = 1, .timeout_ms = timeout_ms, .peer = g->peer };
	g->peer[0].fd = -1;
	g->peer[1].fd = sv[0];
	g->ctl.fd = c.fd;
	fake_comm_algo = INCCL_ALGO_INC;
	assert_int_equal(inccl_comm_init(g, NULL, comm), INCCL_OK);
	*ctl_far = c.far;
	*r1_far = sv[1];
	return g;
}

static const char answer_and_release_ok[] = "msg: ok\ncomm: 1\npsn: 100\nranks:\n"
					    "  - {rank: 0, switch_ip: 10.1.1.1, switch_qpn: 256}\n"
					    "  - {rank: 1, switch_ip: 10.1.1.1, switch_qpn: 257}\n...\n"
					    "msg: ok\n...\n";

/*
 * Rank 1 says "done" 300 ms after rank 0 destroys: rank 0 waits for it
 * before it tells the controller (the CI failure this guards against: rank
 * 0 finished a barrier, released the switches and left while rank 3's
 * result was still on its way, and rank 3 failed with "rank 0 went away").
 * A "done" of an older communicator does not count.
 */
static void test_rank0_waits_for_done(void **state)
{
	inccl_comm_t *comm;
	int ctl_far, r1_far;
	inccl_group_t *g = rank0_with_comm(answer_and_release_ok, 5000, &comm, &ctl_far, &r1_far);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		const char *old = "msg: done\ncomm: 7\n...\n", *done = "msg: done\ncomm: 1\n...\n";
		usleep(300000);
		if (write(r1_far, old, strlen(old)) < 0 || (usleep(100000), write(r1_far, done, strlen(done))) < 0)
			_exit(1);
		_exit(0);
	}
	free(received(ctl_far)); /* the request to the controller */
	double t0 = now_ms();
	inccl_comm_destroy(comm);
	double took = now_ms() - t0;
	char *to_ctl = received(ctl_far);
	assert_true(took >= 390);
	assert_true(took < 4000);
	assert_string_equal(to_ctl, "msg: release\ncomm: 1\n...\n");
	free(to_ctl);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, 0);
	inccl_group_destroy(g);
	close(ctl_far);
	close(r1_far);
}

/* A rank that went away without "done" is not waited for; one that says nothing is, up to the group's timeout. */
static void test_rank0_wait_is_bounded(void **state)
{
	for (int gone = 0; gone < 2; gone++) {
		inccl_comm_t *comm;
		int ctl_far, r1_far;
		inccl_group_t *g = rank0_with_comm(answer_and_release_ok, 600, &comm, &ctl_far, &r1_far);
		if (gone)
			close(r1_far);
		free(received(ctl_far));
		double t0 = now_ms();
		inccl_comm_destroy(comm);
		double took = now_ms() - t0;
		char *to_ctl = received(ctl_far);
		if (gone)
			assert_true(took < 300);
		else
			assert_true(took >= 590 && took < 3000);
		assert_string_equal(to_ctl, "msg: release\ncomm: 1\n...\n");
		free(to_ctl);
		inccl_group_destroy(g);
		close(ctl_far);
		if (!gone)
			close(r1_far);
	}
}

/*
 * Rank 0 still in a collective of communicator 1 (its watch): rank 1 said
 * "done" with it and left, which is no fault; a rank that leaves without
 * saying so is ("rank 1 went away (closed its connection)"), and a later communicator finds that
 * rank gone at once instead of waiting for it.
 */
static void test_done_then_gone_is_no_fault(void **state)
{
	for (int said = 1; said >= 0; said--) {
		inccl_comm_t *comm;
		int ctl_far, r1_far;
		char why[200] = "";
		inccl_group_t *g = rank0_with_comm(answer_and_release_ok, 5000, &comm, &ctl_far, &r1_far);
		if (said)
			assert_int_equal(write(r1_far, "msg: done\ncomm: 1\n...\n", 22), 22);
		close(r1_far);
		int faulted = 0;
		for (int i = 0; i < 5 && !faulted; i++) /* one read per look, as a collective's wait loop does */
			faulted = comm->watch(comm->ctx, comm->comm_id, why, sizeof(why));
		if (said) {
			assert_int_equal(faulted, 0);
		} else {
			assert_int_equal(faulted, 1);
			assert_string_equal(why, "rank 1 went away (closed its connection)");
		}
		assert_int_equal(g->peer[1].fd, -1);
		comm->release = NULL;
		inccl_comm_destroy(comm);
		double t0 = now_ms();
		inccl_comm_t *next = NULL;
		assert_int_equal(inccl_comm_init(g, NULL, &next), INCCL_ECONN);
		assert_true(now_ms() - t0 < 1000);
		assert_non_null(strstr(inccl_last_error(), "rank 1 went away"));
		inccl_group_destroy(g);
		close(ctl_far);
	}
}

/* A member's destroy sends "done" with the communicator's id to rank 0, and waits for nothing. */
static void test_member_says_done(void **state)
{
	inccl_group_t *g = calloc(1, sizeof(*g));
	struct side r0 = side("msg: config\ncomm: 9\npsn: 100\nswitch_ip: 10.1.1.1\nswitch_qpn: 257\n...\nmsg: go\n...\n");
	inccl_comm_t *comm = NULL;

	assert_non_null(g);
	assert_non_null(g->peer = calloc(1, sizeof(*g->peer)));
	*g = (struct inccl_group){ .rank = 1, .nranks = 2, .id = 1, .timeout_ms = 2000, .peer = g->peer };
	g->peer[0].fd = r0.fd;
	g->ctl.fd = -1;
	fake_comm_algo = INCCL_ALGO_INC;
	assert_int_equal(inccl_comm_init(g, NULL, &comm), INCCL_OK);
	double t0 = now_ms();
	inccl_comm_destroy(comm);
	assert_true(now_ms() - t0 < 500);
	char *to_r0 = received(r0.far);
	assert_string_equal(to_r0, "msg: qp\nrank: 1\nip: 10.1.1.21\nqpn: 18\n...\nmsg: ready\n...\n"
				   "msg: done\ncomm: 9\n...\n");
	free(to_r0);
	inccl_group_destroy(g);
	close(r0.far);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_passes_on_what_it_got),
		cmocka_unit_test(test_bad_rank_ip_refused),
		cmocka_unit_test(test_bad_switch_ip_refused),
		cmocka_unit_test(test_rank0_waits_for_done),
		cmocka_unit_test(test_rank0_wait_is_bounded),
		cmocka_unit_test(test_done_then_gone_is_no_fault),
		cmocka_unit_test(test_member_says_done),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
