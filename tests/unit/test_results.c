/*
 * test_results.c — the readers of stored results (analysis/results.c) and
 * the LogGP fit and predictions (analysis/loggp.c), cmocka. Inputs are in
 * memory (fmemopen); expectations are written out by hand from the model's
 * formulas.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include "loggp.h"
#include "results.h"

#define HEADER RES_CSV_HEADER "\n"

static int parse(const char *text, struct res_table *t, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	assert_non_null(f);
	rc = res_parse_csv(f, "r.csv", t, err, RES_ERR_LEN);
	fclose(f);
	return rc;
}

static void test_rows_of_every_kind(void **state)
{
	struct res_table t = { 0 };
	char err[RES_ERR_LEN];

	assert_int_equal(parse(HEADER "# a comment\n\n"
				      "inc,allreduce,float32,sum,-,4,1048576,262144,3,1048576.00,1.00,1.50,0\n"
				      "ring,reduce,int32,max,3,4,4,1,1,2.00,2.00,2.00,0\r\n"
				      "mpi-tcp,barrier,-,-,-,4,0,0,3,90.41,-,-,0\n"
				      "ceiling,p2p,-,-,-,2,65536,-,400,27306.67,2.40,2.40,0\n"
				      "inc,broadcast,int32,-,1,4,8,2,1,4.00,2.00,2.00,17\n"
				      "inc,allreduce,bfloat16,sum,-,4,8,4,1,4.00,2.00,3.00,0\n"
				      "inc,allreduce,float64,min,-,4,8,1,1,4.00,2.00,3.00,0\n",
			       &t, err),
			 0);
	assert_int_equal(t.n, 7);
	assert_string_equal(t.rows[5].dtype, "bfloat16"); /* 2-byte elements */
	assert_int_equal(t.rows[5].elements, 4);
	assert_string_equal(t.rows[6].dtype, "float64"); /* 8-byte elements */
	assert_string_equal(t.rows[0].algo, "inc");
	assert_int_equal(t.rows[0].coll, RES_ALLREDUCE);
	assert_int_equal(t.rows[0].root, -1);
	assert_int_equal(t.rows[0].bytes, 1048576);
	assert_int_equal(t.rows[0].elements, 262144);
	assert_true(fabs(t.rows[0].busbw - 1.5) < 1e-9);
	assert_int_equal(t.rows[0].line, 4);
	assert_int_equal(t.rows[1].root, 3);
	assert_int_equal(t.rows[1].coll, RES_REDUCE);
	assert_int_equal(t.rows[2].coll, RES_BARRIER);
	assert_true(t.rows[2].algbw < 0 && t.rows[2].busbw < 0);
	assert_int_equal(t.rows[3].coll, RES_P2P);
	assert_int_equal(t.rows[3].elements, -1);
	assert_int_equal(t.rows[4].wrong, 17);
	res_table_free(&t);
}

static void test_bad_rows_named_by_line(void **state)
{
	static const struct {
		const char *row, *msg;
	} bad[] = {
		{ "inc,allreduce,float32,sum,-,4,1048576,262144,3,1048576.00,1.00,1.50", "r.csv:2: 12 fields, not 13" },
		{ "inc,allreduce,float32,sum,-,4,1048576,262144,3,1048576.00,1.00,1.50,0,9", "r.csv:2: 14 fields, not 13" },
		{ "in c,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0", "r.csv:2: algorithm 'in c' is not a name" },
		{ "inc,alltogether,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0", "r.csv:2: collective 'alltogether'" },
		{ "inc,allreduce,float128,sum,-,4,4,1,1,4.00,1.00,1.50,0", "r.csv:2: dtype 'float128'" },
		{ "inc,allreduce,float64,sum,-,4,16,4,1,4.00,1.00,1.50,0", "r.csv:2: elements 4 does not match bytes 16 (8-byte" },
		{ "inc,allreduce,bfloat16,sum,-,4,16,4,1,4.00,1.00,1.50,0", "r.csv:2: elements 4 does not match bytes 16 (2-byte" },
		{ "inc,allreduce,float32,prod,-,4,4,1,1,4.00,1.00,1.50,0", "r.csv:2: op 'prod'" },
		{ "inc,allreduce,float32,sum,-,0,4,1,1,4.00,1.00,1.50,0", "r.csv:2: nranks '0'" },
		{ "inc,reduce,float32,sum,-1,4,4,1,1,4.00,1.00,1.00,0", "r.csv:2: root '-1' is not a rank of 0..3" },
		{ "inc,allreduce,float32,sum,-,4,0,0,1,4.00,0.00,0.00,0", "r.csv:2: bytes is 0 for allreduce" },
		{ "inc,allreduce,float32,sum,-,4,4,2,1,4.00,1.00,1.50,0", "r.csv:2: elements 2 does not match bytes 4" },
		{ "inc,allreduce,float32,sum,-,4,4,1,0,4.00,1.00,1.50,0", "r.csv:2: iters '0'" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,0,1.00,1.50,0", "r.csv:2: time_us '0' is not a time > 0" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,inf,1.00,1.50,0", "r.csv:2: time_us 'inf'" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,0x10,1.00,1.50,0", "r.csv:2: time_us '0x10'" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,4.00,-,1.50,0", "r.csv:2: algbw_MBps is missing for allreduce" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.50,1.50,0", "r.csv:2: algbw_MBps 1.50 is not bytes / time_us = 1.00" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,-1", "r.csv:2: wrong '-1'" },
		{ "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50, 0", "r.csv:2: wrong ' 0'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct res_table t = { 0 };
		char text[512], err[RES_ERR_LEN] = "";

		snprintf(text, sizeof(text), HEADER "%s\n", bad[i].row);
		if (parse(text, &t, err) != -1 || !strstr(err, bad[i].msg))
			fail_msg("row '%s': got '%s', want '%s'", bad[i].row, err, bad[i].msg);
		res_table_free(&t);
	}
}

static void test_header_and_empty(void **state)
{
	struct res_table t = { 0 };
	char err[RES_ERR_LEN];

	assert_int_equal(parse("", &t, err), -1);
	assert_string_equal(err, "r.csv: empty: no header line");
	assert_int_equal(parse("algorithm,collective\n", &t, err), -1);
	assert_non_null(strstr(err, "r.csv:1: header is not"));
	assert_int_equal(parse(HEADER, &t, err), 0); /* a run that measured nothing yet */
	assert_int_equal(t.n, 0);
	res_table_free(&t);
}

static void test_binary_and_long_lines(void **state)
{
	static const char nul[] = HEADER "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0\0garbage\n";
	struct res_table t = { 0 };
	char err[RES_ERR_LEN], *big;
	FILE *f = fmemopen((void *)nul, sizeof(nul) - 1, "r");

	assert_int_equal(res_parse_csv(f, "r.csv", &t, err, sizeof(err)), -1);
	fclose(f);
	assert_non_null(strstr(err, "r.csv:2: a line longer than 4095 bytes or with a NUL byte"));
	big = malloc(8192);
	assert_non_null(big);
	snprintf(big, 8192, HEADER "%05000d\n", 1);
	assert_int_equal(parse(big, &t, err), -1);
	assert_non_null(strstr(err, "r.csv:2: a line longer than"));
	free(big);
	res_table_free(&t);
}

static void test_loggp_csv(void **state)
{
	const char *ok = RES_LOGGP_HEADER "\nhalf_rtt,8,100,183.6\ngap,8,400,43.2\n";
	const char *bad = RES_LOGGP_HEADER "\ngap,8,400,0\n";
	struct res_points p = { 0 };
	char err[RES_ERR_LEN];
	FILE *f;

	f = fmemopen((void *)ok, strlen(ok), "r");
	assert_int_equal(res_parse_loggp(f, "l.csv", &p, err, sizeof(err)), 0);
	fclose(f);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.p[1].measure, RES_GAP);
	assert_true(fabs(p.p[1].value_us - 43.2) < 1e-9);
	f = fmemopen((void *)bad, strlen(bad), "r");
	assert_int_equal(res_parse_loggp(f, "l.csv", &p, err, sizeof(err)), -1);
	fclose(f);
	assert_string_equal(err, "l.csv:2: value_us '0' is not a time > 0");
	res_points_free(&p);
}

static void test_meta(void **state)
{
	char path[] = "/tmp/test_results_metaXXXXXX", err[RES_ERR_LEN];
	int fd = mkstemp(path);
	struct res_meta m;
	const char *yaml = "experiment: paper\ndate: 2026-11-01T12:00:00Z\ntopology: 1-2-4\naccelerator: tcg\n"
			   "host_cpu: \"Some CPU: 2 cores\"\nnranks: 4\ntree_levels: 2\nstatus: failed (inc reduce 4)\n"
			   "images:\n  host: host-1\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	assert_int_equal(res_load_meta(path, &m, err, sizeof(err)), 0);
	assert_string_equal(m.experiment, "paper");
	assert_string_equal(m.topology, "1-2-4");
	assert_string_equal(m.host_cpu, "Some CPU: 2 cores");
	assert_string_equal(m.status, "failed (inc reduce 4)");
	assert_int_equal(m.nranks, 4);
	assert_int_equal(m.tree_levels, 2);
	/* control characters (a newline, a tab, DEL) come out as spaces: the values go into gnuplot and Markdown */
	fd = open(path, O_WRONLY | O_TRUNC);
	yaml = "topology: \"1-2-4\\nsystem(x)\"\nhost_cpu: \"a\\tb\\x7fc\"\n";
	assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	assert_int_equal(res_load_meta(path, &m, err, sizeof(err)), 0);
	assert_string_equal(m.topology, "1-2-4 system(x)");
	assert_string_equal(m.host_cpu, "a b c");
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "topology: 1-2-4\nnranks: four\n", 29), 29);
	close(fd);
	assert_int_equal(res_load_meta(path, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ":2: nranks 'four' is not a number"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "a: [1, 2\n", 9), 9);
	close(fd);
	assert_int_equal(res_load_meta(path, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not YAML"));
	unlink(path);
	assert_int_equal(res_load_meta(path, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
}

/* Write @yaml to a fresh file, load it; its result, the error in @err. */
static int load_meta_text(const char *yaml, struct res_meta *m, char *err)
{
	char path[] = "/tmp/test_results_metaXXXXXX";
	int fd = mkstemp(path), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
	close(fd);
	rc = res_load_meta(path, m, err, RES_ERR_LEN);
	unlink(path);
	return rc;
}

#define ROUND(n, load) "  - round: " #n "\n    loadavg_before: '" load "'\n"

static void test_meta_rounds(void **state)
{
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "rounds: 2\nround_conditions:\n" ROUND(1, "0.5 0.4 0.3") ROUND(1, "0.6 0.4 0.3"),
		  ":5: round_conditions: round 1 is listed twice (also at line 3)" },
		{ "rounds: 3\nround_conditions:\n" ROUND(1, "0.5 0.4 0.3") ROUND(2, "0.6 0.4 0.3"),
		  ":2: round_conditions has 2 item(s) but rounds is 3" },
		{ "round_conditions:\n" ROUND(1, "0.5 0.4 0.3") ROUND(3, "0.6 0.4 0.3") "rounds: 2\n",
		  ":4: round_conditions: round 3, but rounds is 2" },
		{ "rounds: 1\n", ":1: rounds is 1 but there is no round_conditions" },
		{ "rounds: 1\nround_conditions:\n" ROUND(1, "0.5 junk"), ":4: round_conditions: loadavg_before '0.5 junk'" },
		{ "rounds: 1\nround_conditions:\n" ROUND(1, "0.5 0.4 0.3 junk"), ":4: round_conditions: loadavg_before" },
		{ "rounds: 1\nround_conditions:\n" ROUND(1, "0.5"), ":4: round_conditions: loadavg_before '0.5'" },
		{ "rounds: 1\nround_conditions:\n" ROUND(1, "0.5  0.4 0.3"), ":4: round_conditions: loadavg_before" },
		{ "rounds: 1\nround_conditions:\n" ROUND(1, "0.5 0.4 -0.3"), ":4: round_conditions: loadavg_before" },
	};
	struct res_meta m;
	struct res_table t = { 0 };
	char err[RES_ERR_LEN] = "";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (load_meta_text(bad[i].yaml, &m, err) != -1 || !strstr(err, bad[i].msg))
			fail_msg("meta '%s': got '%s', want '%s'", bad[i].yaml, err, bad[i].msg);
	/* what exp.sh writes reads: rounds 2, two items, loads of three figures or unknown */
	assert_int_equal(load_meta_text("rounds: 2\nround_conditions:\n" ROUND(2, "unknown") ROUND(1, "0.52 0.40 0.33"), &m, err), 0);
	assert_int_equal(m.ncond, 2);
	assert_true(m.cond[0].load_before == -1 && fabs(m.cond[1].load_before - 0.52) < 1e-9);
	/* a results.csv row of a round meta.yaml does not have is refused, by its line */
	assert_int_equal(parse(RES_CSV_HEADER_ROUNDS "\n"
			       "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0,2\n"
			       "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0,3\n", &t, err), 0);
	assert_int_equal(res_check_rounds(&t, &m, "r.csv", err, sizeof(err)), -1);
	assert_string_equal(err, "r.csv:3: round 3, but meta.yaml says rounds: 2");
	m.rounds = 3;
	assert_int_equal(res_check_rounds(&t, &m, "r.csv", err, sizeof(err)), 0);
	res_table_free(&t);
}

static void test_line_fit(void **state)
{
	double x[] = { 1, 2, 3, 4 }, y[] = { 3.1, 4.9, 7.1, 8.9 }, a, b;

	assert_int_equal(loggp_line(x, y, 4, &a, &b), 0);
	/* least squares by hand: mean x 2.5, mean y 6, Sxy = 9.8, Sxx = 5 */
	assert_true(fabs(b - 1.96) < 1e-12);
	assert_true(fabs(a - (6 - 1.96 * 2.5)) < 1e-12);
	assert_int_equal(loggp_line(x, y, 1, &a, &b), -1);
	x[1] = x[0];
	assert_int_equal(loggp_line(x, y, 2, &a, &b), -1); /* one distinct size */
}

static void test_loggp_fit_and_predictions(void **state)
{
	/* generated from L = 100 us, o = 40 us, G = 0.4 us/B, G_pp = 0.45 us/B */
	struct res_point p[] = {
		{ RES_HALF_RTT, 8, 100, 180 + 0.45 * 8 },    { RES_GAP, 8, 400, 40 + 0.4 * 8 },
		{ RES_HALF_RTT, 4096, 100, 180 + 0.45 * 4096 }, { RES_GAP, 4096, 400, 40 + 0.4 * 4096 },
		{ RES_HALF_RTT, 32768, 100, 180 + 0.45 * 32768 }, { RES_GAP, 32768, 400, 40 + 0.4 * 32768 },
	};
	struct loggp m;
	char err[RES_ERR_LEN];

	assert_int_equal(loggp_fit(p, 6, &m, err, sizeof(err)), 0);
	assert_true(fabs(m.L - 100) < 1e-6 && fabs(m.o - 40) < 1e-6 && fabs(m.G - 0.4) < 1e-9);
	assert_true(fabs(m.g - m.o) < 1e-12 && !m.L_clamped);
	assert_int_equal(m.n_pp, 3);
	assert_true(fabs(loggp_p2p_us(&m, 1000) - (100 + 80 + 400)) < 1e-6);
	assert_true(fabs(loggp_inc_allreduce_us(&m, 1 << 20) - (180 + 0.4 * (1 << 20))) < 1e-6);
	/* ring, 4 ranks: 6 steps of L + 2o, and 6/4 of n·G */
	assert_true(fabs(loggp_ring_allreduce_us(&m, 1 << 20, 4) - (6 * 180 + 1.5 * 0.4 * (1 << 20))) < 1e-6);

	/* L + 2o below 2o: L clamped at 0, said */
	for (int i = 0; i < 6; i += 2)
		p[i].value_us -= 150;
	assert_int_equal(loggp_fit(p, 6, &m, err, sizeof(err)), 0);
	assert_true(m.L_clamped && m.L == 0);

	/* one size of gap only: no fit */
	assert_int_equal(loggp_fit(p, 3, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "gap measured at 1 size(s)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_of_every_kind),
		cmocka_unit_test(test_bad_rows_named_by_line),
		cmocka_unit_test(test_header_and_empty),
		cmocka_unit_test(test_binary_and_long_lines),
		cmocka_unit_test(test_loggp_csv),
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_meta_rounds),
		cmocka_unit_test(test_line_fit),
		cmocka_unit_test(test_loggp_fit_and_predictions),
	};
	return cmocka_run_group_tests_name("results", tests, NULL, NULL);
}
