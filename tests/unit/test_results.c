/*
 * test_results.c — the readers of stored results (analysis/results.c) and
 * the LogGP model's parameters and predictions (analysis/loggp.c), cmocka. Inputs are in
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

/*
 * time_max_us: the slowest rank's time, the last column of results.csv
 * (after the round) and of the tools' report; absent (-1) in runs from
 * before it, validated where present.
 */
static void test_time_max_us(void **state)
{
	static const struct {
		const char *header, *row, *msg;
	} bad[] = {
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,abc",
		  "r.csv:2: time_max_us 'abc' is not a time > 0 or -" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,0",
		  "r.csv:2: time_max_us '0' is not a time > 0 or -" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,nan",
		  "r.csv:2: time_max_us 'nan'" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,-6.00",
		  "r.csv:2: time_max_us '-6.00'" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,",
		  "r.csv:2: time_max_us '' is not a time > 0 or -" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,3.98",
		  "r.csv:2: time_max_us 3.98 is below time_us 4.00: the slowest rank cannot be faster than rank 0" },
		{ RES_CSV_HEADER_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,2.50",
		  "r.csv:2: time_max_us 2.50 is below time_us 4.00" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1",
		  "r.csv:2: 14 fields, not 15" },
		{ RES_CSV_HEADER_ROUNDS_MAX, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,6.00,1",
		  "r.csv:2: round '6.00' is not a whole number" },
		{ RES_CSV_HEADER_ROUNDS, "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,1,6.00",
		  "r.csv:2: 15 fields, not 14" },
	};
	struct res_table t = { 0 };
	char err[RES_ERR_LEN] = "";

	/* absent: the runs from before it, with and without rounds */
	assert_int_equal(parse(HEADER "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0\n", &t, err), 0);
	assert_int_equal(t.with_time_max, 0);
	assert_true(t.rows[0].time_max_us == -1);
	res_table_free(&t);
	assert_int_equal(parse(RES_CSV_HEADER_ROUNDS "\ninc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,2\n", &t, err), 0);
	assert_int_equal(t.with_time_max, 0);
	assert_int_equal(t.rows[0].round, 2);
	assert_true(t.rows[0].time_max_us == -1);
	res_table_free(&t);
	/* present: after the round; equal to time_us, a hundredth below it (both rounded), "-" (a ceiling) */
	assert_int_equal(parse(RES_CSV_HEADER_ROUNDS_MAX "\n"
			       "inc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,2,6.50\n"
			       "ring,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,3,4.00\n"
			       "inc,allreduce,float32,sum,-,4,4,1,1,4.00,1.00,1.50,0,1,3.99\n"
			       "ceiling,p2p,-,-,-,2,65536,-,400,27306.67,2.40,2.40,0,1,-\n",
			       &t, err),
			 0);
	assert_int_equal(t.with_time_max, 1);
	assert_int_equal(t.with_rounds, 1);
	assert_int_equal(t.n, 4);
	assert_true(fabs(t.rows[0].time_max_us - 6.5) < 1e-9 && fabs(t.rows[0].time_us - 4) < 1e-9);
	assert_int_equal(t.rows[0].round, 2);
	assert_true(fabs(t.rows[1].time_max_us - 4) < 1e-9);
	assert_int_equal(t.rows[1].round, 3);
	assert_true(fabs(t.rows[2].time_max_us - 3.99) < 1e-9);
	assert_true(t.rows[3].time_max_us == -1);
	res_table_free(&t);
	/* the tools' own report: time_max_us after wrong, no round */
	assert_int_equal(parse(RES_CSV_HEADER_MAX "\ninc,broadcast,float32,-,0,4,4,1,1,4.00,1.00,1.00,0,5.25\n", &t, err), 0);
	assert_true(t.with_time_max && !t.with_rounds && t.rows[0].round == 0);
	assert_true(fabs(t.rows[0].time_max_us - 5.25) < 1e-9);
	res_table_free(&t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[512];

		snprintf(text, sizeof(text), "%s\n%s\n", bad[i].header, bad[i].row);
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

/* loggp_median(): the middle value, or the mean of the middle two; the values sorted in place; NAN for none. */
static void test_median(void **state)
{
	double odd[] = { 3, -1, 2.5, 7, 0 }, even[] = { 4, 1, 3, 2 }, one[] = { 5 };

	(void)state;
	assert_true(loggp_median(odd, 5) == 2.5);
	assert_true(odd[0] == -1 && odd[1] == 0 && odd[2] == 2.5 && odd[3] == 3 && odd[4] == 7);
	assert_true(loggp_median(even, 4) == 2.5);
	assert_true(even[0] == 1 && even[3] == 4);
	assert_true(loggp_median(one, 1) == 5);
	assert_true(isnan(loggp_median(NULL, 0)));
}

/* A loggp.csv in memory, parsed. */
static void points(const char *text, struct res_points *p)
{
	char err[RES_ERR_LEN];
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	assert_non_null(f);
	memset(p, 0, sizeof(*p));
	assert_int_equal(res_parse_loggp(f, "l.csv", p, err, sizeof(err)), 0);
	fclose(f);
}

/* params_of() - loggp.csv @base with @rows after it, parsed into *@p, and its parameters into *@m (which must succeed). */
static void params_of(const char *base, const char *rows, struct res_points *p, struct loggp *m)
{
	char text[4096], err[RES_ERR_LEN];

	assert_true(snprintf(text, sizeof(text), "%s%s", base, rows) < (int)sizeof(text));
	points(text, p);
	assert_int_equal(loggp_params(p->p, p->n, 2, 5000, 2500, 1000, m, err, sizeof(err)), 0);
}

#define NEAR(x, want) assert_true(fabs((double)(x) - (double)(want)) < 1e-6 * (1 + fabs((double)(want))))

static void test_loggp_params(void **state)
{
	/* o_s 30 (median of 29, 30, 31.5), o_r 50, o_sb 20 (of -3, 20, 21: a negative difference is read),
	 * at 65544 B: 30 + 65536 x 0.2 and 50 + 65536 x 0.3; half round trip 183.6 at 8 B: L = 183.6 - 80 */
	const char *csv = RES_LOGGP_HEADER "\nhalf_rtt,8,100,183.6\ngap,8,400,43.2\nhalf_rtt,1024,100,300\n"
					   "gap,1032,400,455.2\ncpu_send,8,5120,29\ncpu_send,8,5120,31.5\ncpu_send,8,5120,30\n"
					   "cpu_recv,8,5120,52.5\ncpu_recv,8,5120,48\ncpu_recv,8,5120,50\n"
					   "cpu_send_batch,8,5120,-3\ncpu_send_batch,8,5120,20\ncpu_send_batch,8,5120,21\n"
					   "cpu_send,65544,400,13137.2\ncpu_recv,65544,400,19710.8\n"
					   "cpu_swap,4194304,3,4194.304\ncpu_copy,4194304,3,8388.608\ncpu_sum,4194304,3,16777.216\n"
					   "cpu_sum,4194304,3,1\ncpu_sum,4194304,3,20000\n";
	struct res_points p;
	struct loggp m;
	char err[RES_ERR_LEN];

	points(csv, &p);
	assert_int_equal(p.p[10].measure, RES_CPU_SEND_BATCH);
	NEAR(p.p[10].value_us, -3);
	/* switches: 5000 us of CPU over 2500 frames counted, 1000 modelled: c_sw 2, f_sw 2.5 */
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	NEAR(m.o_s, 30);
	NEAR(m.o_r, 50);
	NEAR(m.o, 40);
	NEAR(m.o_sb, 20);
	assert_true(m.batch);
	NEAR(m.G_s, 0.2);
	NEAR(m.G_r, 0.3);
	NEAR(m.L, 103.6);
	NEAR(m.g, 43.2);
	NEAR(m.G, (455.2 - 43.2) / 1024); /* the stream's slope: 0.40234375 */
	assert_true(m.hostwork); /* per pass over 4 MiB: 0.001, 0.002 and (the median of 1, 16777.216, 20000) 0.004 us/B */
	NEAR(m.G_swap, 0.001);
	NEAR(m.G_copy, 0.002);
	NEAR(m.G_sum, 0.004);
	NEAR(m.c_sw, 2);
	NEAR(m.f_sw, 2.5);
	assert_false(m.uc); /* no UC stream, no signaled one: those terms are left out */
	assert_false(m.signaled);
	res_points_free(&p);
	/* the UC stream (no ACKs): o_su 12 (of 11, 12, 13), o_ru 40; an ACK costs the sender o_sb - o_su = 8.
	 * 16 KiB with every send signaled: 139.6 against 100 of perftest's one in 100: o_c = 39.6 / 0.99 = 40 */
	char more[2048];
	snprintf(more, sizeof(more), "%scpu_send_uc,8,5120,11\ncpu_send_uc,8,5120,13\ncpu_send_uc,8,5120,12\n"
				     "cpu_recv_uc,8,5120,40\ncpu_send,16384,400,100\ncpu_send_signaled,16384,400,139.6\n", csv);
	points(more, &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	assert_true(m.uc && m.signaled);
	NEAR(m.o_su, 12);
	NEAR(m.o_ru, 40);
	NEAR(m.o_c, 40);
	NEAR(m.o_s, 30); /* the 16 KiB stream changes neither o (the smallest size) nor G (the largest) */
	NEAR(m.G_s, 0.2);
	res_points_free(&p);
	/* o_c in pairs: each repetition's plain stream, then its signaled one. Differences 50, 30 and 270:
	 * their median 50, o_c = 50 / 0.99; the difference of the medians (330 - 130) would give 202 */
	params_of(csv, "cpu_send,16384,400,100\ncpu_send_signaled,16384,400,150\n"
		       "cpu_send,16384,400,300\ncpu_send_signaled,16384,400,330\n"
		       "cpu_send,16384,400,130\ncpu_send_signaled,16384,400,400\n", &p, &m);
	assert_true(m.signaled);
	NEAR(m.o_c, 50 / 0.99);
	assert_int_equal(m.n_signaled_pairs, 3);
	res_points_free(&p);
	/* a repetition without its signaled stream: no pairs, the difference of the medians (240 of 150 and 330, 130 of 100, 300 and 130) */
	params_of(csv, "cpu_send,16384,400,100\ncpu_send_signaled,16384,400,150\n"
		       "cpu_send,16384,400,300\ncpu_send_signaled,16384,400,330\n"
		       "cpu_send,16384,400,130\n", &p, &m);
	NEAR(m.o_c, (240 - 130) / 0.99);
	assert_int_equal(m.n_signaled_pairs, 0);
	res_points_free(&p);
	/* o_e in pairs: each repetition's plain 16 KiB stream, then the same answered with 16 empty sends a
	 * message. Receivers 550, 450, 1075 against 1100, 1000, 1400: pairs (550, 550, 325) / 16, median 550 / 16 */
	params_of(more, "cpu_recv,16384,400,550\ncpu_empty_recv,16384,800,1100\n"
			"cpu_recv,16384,400,450\ncpu_empty_recv,16384,800,1000\n"
			"cpu_recv,16384,400,1075\ncpu_empty_recv,16384,800,1400\n", &p, &m);
	assert_true(m.empty_seen && m.empty);
	NEAR(m.o_e, 550.0 / 16);
	assert_int_equal(m.n_empty_pairs, 3);
	res_points_free(&p);
	params_of(more, "cpu_recv,16384,400,550\ncpu_empty_recv,16384,800,1100\n"
			"cpu_recv,16384,400,1075\ncpu_empty_recv,16384,800,1400\n"
			"cpu_recv,16384,400,450\ncpu_empty_recv,16384,800,1300\n", &p, &m);
	NEAR(m.o_e, 550.0 / 16); /* pairs (550, 325, 850) / 16; the medians' difference would be (1300 - 550) / 16 */
	res_points_free(&p);
	/* a repetition without its answered stream: the medians' difference, (1050 - 550) / 16 */
	params_of(more, "cpu_recv,16384,400,550\ncpu_empty_recv,16384,800,1100\n"
			"cpu_recv,16384,400,450\ncpu_empty_recv,16384,800,1000\n"
			"cpu_recv,16384,400,1075\n", &p, &m);
	NEAR(m.o_e, 500.0 / 16);
	assert_int_equal(m.n_empty_pairs, 0);
	res_points_free(&p);
	/* answering costs nothing (noise): measured, not used */
	params_of(more, "cpu_recv,16384,400,550\ncpu_empty_recv,16384,800,500\n", &p, &m);
	assert_true(m.empty_seen && !m.empty);
	res_points_free(&p);
	points(more, &p);
	/* a UC stream that costs more than the RC one (an ACK below nothing), a completion that costs nothing:
	 * left out, not clamped */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_SEND_UC)
			p.p[i].value_us = 25;
		else if (p.p[i].measure == RES_CPU_SEND_SIGNALED)
			p.p[i].value_us = 99;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	assert_false(m.uc);
	assert_false(m.signaled);
	assert_false(m.waited_seen); /* no ping-pong on events */
	res_points_free(&p);
	/* the 16 KiB ping-pong on events: per round trip 1150, 1250 (median of 1100, 1250, 1300) against the
	 * stream's send 100 and receive 150 at 16 KiB: a message received waiting costs o_w = 1200 - 250 = 950 */
	params_of(more, "cpu_recv,16384,400,150\ncpu_waited_send,16384,400,1150\n"
			"cpu_waited_recv,16384,400,1300\ncpu_waited_recv,16384,400,1100\n"
			"cpu_waited_recv,16384,400,1250\n", &p, &m);
	assert_true(m.waited_seen && m.waited);
	NEAR(m.o_w, 950);
	NEAR(m.o_r, 50); /* the 16 KiB receive changes neither o_r nor G_r */
	NEAR(m.G_r, 0.3);
	/* a ping-pong no dearer than the stream: measured, not used (not clamped) */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_WAITED_SEND || p.p[i].measure == RES_CPU_WAITED_RECV)
			p.p[i].value_us = 240;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	assert_true(m.waited_seen);
	assert_false(m.waited);
	NEAR(m.o_w, -10);
	/* without the stream's receive at 16 KiB there is nothing to subtract: not measured */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_RECV && p.p[i].bytes == 16384)
			p.p[i].bytes = 8;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	assert_false(m.waited_seen || m.waited);
	res_points_free(&p);
	points(more, &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	/* a copy too quick for /proc's 10 ms tick: passes of 3 differ by whole ticks (3333.333 us each); a median
	 * within one tick of 0 is 0, its bound a tick per pass; below by more is refused */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_COPY)
			p.p[i].value_us = -3333.333;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	assert_true(m.hostwork && m.G_copy == 0);
	NEAR(m.hostwork_bound[1], 10000.0 / 3 / 4194304);
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_COPY)
			p.p[i].value_us = -6666.667;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "below 0 by more than a clock tick"));
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_COPY)
			p.p[i].value_us = 8388.608;
	assert_int_equal(loggp_params(p.p, p.n, 2, 5000, 2500, 1000, &m, err, sizeof(err)), 0);
	NEAR(m.C, 2);
	assert_int_equal(m.message, LOGGP_INC_MESSAGE);
	/* no switch figures: no switch term */
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_true(m.c_sw == 0 && m.f_sw == 0);
	/* cores unknown */
	assert_int_equal(loggp_params(p.p, p.n, 0, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cores"));
	/* without the batched stream: every post alone, o_sb = o_s */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_SEND_BATCH)
			p.p[i].measure = RES_GAP, p.p[i].bytes = 2048, p.p[i].value_us = 43.2 + 2040 * (455.2 - 43.2) / 1024;
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_true(!m.batch);
	NEAR(m.o_sb, 30);
	/* a receive that costs nothing is refused, not clamped */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_RECV && p.p[i].bytes == 8)
			p.p[i].value_us = -1;
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "host CPU per message not above 0"));
	/* o so large that L = half round trip - 2o is not above 0: refused */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_RECV && p.p[i].bytes == 8)
			p.p[i].value_us = 160; /* o = (30 + 160) / 2 = 95: L = 183.6 - 190 */
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "L = half round trip 184 us - 2o 190 us is not above 0"));
	res_points_free(&p);
	/* a run from before the CPU measures: no model */
	points(RES_LOGGP_HEADER "\nhalf_rtt,8,100,183.6\ngap,8,400,43.2\ngap,64,400,65.6\n", &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no cpu_send and cpu_recv at two sizes"));
	res_points_free(&p);
}

/* waited_pairs() through loggp_params(): o_w's pairs, matched by their order in the file */
static void test_loggp_waited_pairs(void **state)
{
	/* the base of test_loggp_params (o_s 30, o_r 50 ...), with older ping-pong rows that make o_w 950 */
	const char *base = RES_LOGGP_HEADER "\nhalf_rtt,8,100,183.6\ngap,8,400,43.2\ngap,1032,400,455.2\n"
					    "cpu_send,8,5120,30\ncpu_recv,8,5120,50\ncpu_send,65544,400,13137.2\n"
					    "cpu_recv,65544,400,19710.8\ncpu_send,16384,400,100\ncpu_recv,16384,400,150\n"
					    "cpu_waited_send,16384,400,1150\ncpu_waited_recv,16384,400,1250\n";
	/* per pair: stream send, receive; ping-pong src, dst; interrupts the same. o_w per pair: (1100 + 900) / 2 -
	 * (100 + 100) = 800, 1400 - 600 = 800, 2000 - 400 = 1600: the median 800 (each measure's median apart would
	 * make 1400 - 400 = 1000, the older rows 950). Interrupts: stream 0.6, 1.0, 0.6 (median 0.6), ping-pong
	 * 1.6, 1.5, 2.6 (1.6), a wait's extra 1.0, 0.5, 2.0 (1.0): 800 us each */
	static const char *const pair[3] = { "100 100 1100 900 0.2 0.4 1.4 1.8", "300 300 1400 1400 0.5 0.5 1.5 1.5",
					     "200 200 2000 2000 0.3 0.3 2.6 2.6" };
	static const char *const names[8] = { "cpu_pair_send",  "cpu_pair_recv",  "cpu_pair_waited_send",
					      "cpu_pair_waited_recv", "intr_pair_send", "intr_pair_recv",
					      "intr_pair_waited_send", "intr_pair_waited_recv" };
	char csv[4096], v[8][16];
	size_t len = (size_t)snprintf(csv, sizeof(csv), "%s", base);
	struct res_points p;
	struct loggp m;
	char err[RES_ERR_LEN];

	(void)state;
	for (int k = 0; k < 3; k++) {
		assert_int_equal(sscanf(pair[k], "%15s %15s %15s %15s %15s %15s %15s %15s", v[0], v[1], v[2], v[3], v[4],
					v[5], v[6], v[7]), 8);
		for (int j = 0; j < 8; j++)
			len += (size_t)snprintf(csv + len, sizeof(csv) - len, "%s,16384,%d,%s\n", names[j],
						j % 4 < 2 ? 1024 : 600, v[j]);
	}
	points(csv, &p);
	assert_int_equal(p.p[p.n - 1].measure, RES_INTR_PAIR_WAITED_RECV);
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_true(m.waited_seen && m.waited);
	assert_int_equal(m.n_pairs, 3);
	/* every pair counted its interrupts: o_w the median of the interrupts a wait adds times the ping-pong's
	 * CPU per interrupt, 1.0 x 1000 / 1.6, 0.5 x 1400 / 1.5, 2.0 x 2000 / 2.6: 625, 466.7, 1538.5 */
	assert_true(m.o_w_by_intr);
	NEAR(m.o_w, 625);
	NEAR(m.o_w_cpu, 800);
	NEAR(m.o_w_min, 800);
	NEAR(m.o_w_max, 1600);
	assert_int_equal(m.n_intr, 3);
	NEAR(m.i_stream, 0.6);
	NEAR(m.i_waited, 1.6);
	NEAR(m.i_extra, 1.0);
	NEAR(m.o_intr, 800);
	/* each regime's CPU per interrupt: the stream 200 / 0.6, 600 / 1.0, 400 / 0.6 (600), the ping-pong
	 * 1000 / 1.6, 1400 / 1.5, 2000 / 2.6 (769.2) */
	NEAR(m.o_intr_stream, 600);
	NEAR(m.o_intr_waited, 2000 / 2.6);
	NEAR(m.o_s, 30); /* the pairs' stream changes neither o nor G */
	NEAR(m.G_r, 0.3);
	/* the interrupts of the first two pairs only (loggp.sh stops counting at a pair it could not):
	 * extra 1.0 and 0.5 (0.75), those pairs' o_w 800 and 800: 1066.7 us each */
	size_t drop = 0;
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure >= RES_INTR_PAIR_SEND && ++drop > 8)
			p.p[i].measure = RES_HALF_RTT, p.p[i].bytes = 8, p.p[i].value_us = 183.6;
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_int_equal(m.n_intr, 2);
	assert_false(m.o_w_by_intr); /* not every pair's: o_w the difference of CPU */
	NEAR(m.i_extra, 0.75);
	NEAR(m.o_intr, 800 / 0.75);
	NEAR(m.o_intr_stream, (200 / 0.6 + 600) / 2);
	NEAR(m.o_intr_waited, (1000 / 1.6 + 1400 / 1.5) / 2);
	NEAR(m.o_w, 800);
	/* a pair whose ping-pong cost less than its stream: each pair still its own, the median 800 */
	for (size_t i = 0; i < p.n; i++)
		if (p.p[i].measure == RES_CPU_PAIR_WAITED_SEND && p.p[i].value_us == 2000)
			p.p[i].value_us = 0; /* pair 3: 1000 - 400 = 600 */
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	NEAR(m.o_w, 800);
	NEAR(m.o_w_min, 600);
	/* a pair short of a row: not whole pairs, refused with the counts */
	for (size_t i = p.n; i-- > 0;)
		if (p.p[i].measure == RES_CPU_PAIR_RECV) {
			p.p[i].measure = RES_HALF_RTT, p.p[i].bytes = 8, p.p[i].value_us = 183.6;
			break;
		}
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_string_equal(err, "loggp.csv has 3 cpu_pair_send, 2 cpu_pair_recv, 3 cpu_pair_waited_send and 3 "
				 "cpu_pair_waited_recv rows at 16384 B: not whole pairs of o_w (loggp.sh writes a pair's "
				 "four together, 64 pairs at most)");
	res_points_free(&p);
	/* interrupt rows not one of each: refused */
	len = (size_t)snprintf(csv, sizeof(csv), "%scpu_pair_send,16384,1024,100\ncpu_pair_recv,16384,1024,100\n"
					       "cpu_pair_waited_send,16384,600,1100\ncpu_pair_waited_recv,16384,600,900\n"
					       "intr_pair_send,16384,1024,0.2\n", base);
	points(csv, &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "has 1 intr_pair_send, 0 intr_pair_recv, 0 intr_pair_waited_send and 0 "
				    "intr_pair_waited_recv rows at 16384 B for 1 pairs of o_w"));
	res_points_free(&p);
	/* one pair whose ping-pong is no dearer than its stream: measured, not used; a run before the pairs keeps
	 * its older o_w (950) */
	snprintf(csv, sizeof(csv), "%scpu_pair_send,16384,1024,600\ncpu_pair_recv,16384,1024,600\n"
				   "cpu_pair_waited_send,16384,600,1100\ncpu_pair_waited_recv,16384,600,900\n", base);
	points(csv, &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_true(m.waited_seen && !m.waited && m.n_pairs == 1 && m.n_intr == 0);
	NEAR(m.o_w, -200);
	res_points_free(&p);
	points(base, &p);
	assert_int_equal(loggp_params(p.p, p.n, 2, 0, 0, 0, &m, err, sizeof(err)), 0);
	assert_true(m.waited && m.n_pairs == 0);
	NEAR(m.o_w, 950);
	res_points_free(&p);
}

static void test_loggp_tree_and_frames(void **state)
{
	struct loggp_tree t;

	assert_int_equal(loggp_tree_parse("1-2-4", &t), 0);
	assert_int_equal(t.levels, 3);
	assert_int_equal(t.count[2], 4);
	assert_int_equal(loggp_tree_parse("1-4-16", &t), 0);
	/* 1-4-16 AllReduce: the root takes 4 and sends 4, each leaf 4 + 1 each way: 2 x (4 + 20) = 48 data
	 * frames per packet; ACKs: the 4 + 4 frames between switches one per 2, each counted at both ends
	 * (8), the 16 hosts' sends and their 16 results one per 32 (0.5 + 0.5): 57 */
	struct loggp_frames k;
	NEAR(loggp_frames(&t, LOGGP_ALLREDUCE, 1024, 0, &k), 57);
	NEAR(k.data, 48);
	NEAR(k.acks, 9);
	assert_int_equal(loggp_tree_parse("2-4", &t), -1);   /* two roots */
	assert_int_equal(loggp_tree_parse("1-3-4", &t), -1); /* 4 hosts under 3 leaves */
	assert_int_equal(loggp_tree_parse("1-2-x", &t), -1);
	assert_int_equal(loggp_tree_parse("1", &t), -1);
	assert_int_equal(loggp_tree_parse("1-2-", &t), -1);
	assert_int_equal(loggp_tree_parse("unknown topology", &t), -1);
	assert_int_equal(loggp_tree_parse("1-2-4", &t), 0);
	/* per packet on 1-2-4: up the tree sw1, sw2 take 2 and send 1, sw0 takes 2 (8 frames); down the same 8
	 * (16); ACKs: 4 frames between switches (2 up, 2 down) one per 2, counted at both ends (4), the 4
	 * hosts' sends and 4 results one per 32 (0.25): 20.25. The sweep of 2026-11-27 counted 42,889 and
	 * 42,704 frames in its measurements of two 1 MiB AllReduces: 2 x 1024 x 20.25 = 41,472, and 3 calls of
	 * one packet (below) 96 */
	NEAR(loggp_frames(&t, LOGGP_ALLREDUCE, 65536, 0, &k), 64 * 20.25);
	NEAR(k.data, 64 * 16);
	NEAR(k.acks, 64 * 4.25);
	/* a Broadcast sends no result to its root: its leaf sends 3 results (15 data frames), 4 + 7/32 ACKs */
	NEAR(loggp_frames(&t, LOGGP_BROADCAST, 65536, 2, &k), 64 * 19.21875);
	NEAR(k.data, 64 * 15);
	/* one path root -> host: sw0 sends 1, a leaf takes 1 and sends 1 (11 data frames); 3 frames between
	 * switches (3 ACKs at both ends), 4 sends and one result (5/32) */
	NEAR(loggp_frames(&t, LOGGP_REDUCE, 65536, 3, &k), 64 * 14.15625);
	NEAR(k.data, 64 * 11);
	/* libinccl's block collectives, 4 blocks of 16 packets: AllGather 4 Broadcasts, ReduceScatter 4 Reduces */
	NEAR(loggp_frames(&t, LOGGP_REDUCESCATTER, 65536, 0, NULL), 4 * 16 * 14.15625);
	NEAR(loggp_frames(&t, LOGGP_ALLGATHER, 65536, 0, NULL), 4 * 16 * 19.21875);
	NEAR(loggp_frames(&t, LOGGP_ALLREDUCE, 1500, 0, NULL), 2 * 20.25); /* a short last packet is a frame */
	/* AllToAll of 4 KiB: 12 Routes of a 1-packet block, each up the tree and one path down (11) */
	NEAR(loggp_frames(&t, LOGGP_ALLTOALL, 4096, 0, NULL), 12 * 14.15625);
	/* a call of one packet alone (a Barrier): each of its 16 frames acknowledged on its own: 32, as the
	 * sweep of 2026-11-27 counted in each Barrier measurement (224 frames: 7 calls) */
	NEAR(loggp_lone_frames(&t), 32);
	/* leaves of one host each (1-2-4-4): a Broadcast sends nothing down to the root's leaf, which has the
	 * root alone under it: 6 links between switches up, 5 down, 4 sends and 3 results: 2 x 11 + 7 = 29
	 * data frames, 11 + 7/32 ACKs; an AllReduce 2 x 12 + 8 data frames, 12 + 8/32 ACKs */
	assert_int_equal(loggp_tree_parse("1-2-4-4", &t), 0);
	NEAR(loggp_frames(&t, LOGGP_BROADCAST, 1024, 0, &k), 29 + 11.21875);
	NEAR(k.data, 29);
	NEAR(loggp_frames(&t, LOGGP_ALLREDUCE, 1024, 0, &k), 2 * 12 + 8 + 12 + 0.25);
	assert_int_equal(loggp_coll_parse("reducescatter"), LOGGP_REDUCESCATTER);
	assert_int_equal(loggp_coll_parse("alltoall"), LOGGP_ALLTOALL);
	assert_int_equal(loggp_coll_parse("barrier"), -1);
}

static void test_loggp_predict(void **state)
{
	/* hand-made parameters: per message 10 (send), 20 (receive), 5 (libinccl's batched send); per byte 0.01,
	 * 0.02; L 100, o 15 (so L + 2o = 130); 2 cores; switches 1 us per frame (f_sw, the count's check, is
	 * no factor of the prediction: 2 changes nothing) */
	struct loggp m = { .L = 100, .o = 15, .o_s = 10, .o_r = 20, .o_sb = 5, .G_s = 0.01, .G_r = 0.02, .c_sw = 1,
			   .f_sw = 2, .C = 2, .message = 16 };
	struct loggp_tree t;
	struct loggp_pred r;
	double n = 65536; /* 64 packets: libinccl's 5 messages (packet 0, then 4 of 16); the ring's 4 of 16 KiB */

	assert_int_equal(loggp_tree_parse("1-2-4", &t), 0);
	/* INC AllReduce: a host sends 5 x 5 + 655.36 = 680.36 and receives 5 x 20 + 1310.72 = 1410.72: 2091.08;
	 * four hosts 8364.32 + switches 64 x 20.25 = 1296 frames x 1 = 9660.32 over 2 cores 4830.16 + 130 */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4960.16);
	NEAR(r.w_max, 2091.08);
	NEAR(r.w_hosts, 8364.32);
	NEAR(r.w_sw, 1296);
	/* the machine 1.5 times slower than when loggp.sh measured (speed): every host's work 1.5 times, the
	 * switches' as measured in the collectives */
	m.speed = 1.5;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), (1.5 * 8364.32 + 1296) / 2 + 130);
	NEAR(r.w_max, 1.5 * 2091.08);
	NEAR(r.w_sw, 1296);
	m.speed = 0;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4960.16);
	NEAR(r.frames, 1296);
	NEAR(r.acks, 272);
	NEAR(r.steps, 1);
	assert_true(r.cpu_bound);
	/* INC Reduce to rank 0: three hosts send (680.36), the root also receives: 2091.08; 64 x 14.15625 = 906 frames */
	NEAR(loggp_predict(&m, &t, LOGGP_REDUCE, LOGGP_INC, n, 0, &r), (3 * 680.36 + 2091.08 + 906) / 2 + 130);
	NEAR(r.w_max, 2091.08);
	/* INC Broadcast from rank 0: it sends 680.36; the others send 64 empty packets (5 each) and receive;
	 * 64 x 19.21875 = 1230 frames */
	NEAR(loggp_predict(&m, &t, LOGGP_BROADCAST, LOGGP_INC, n, 0, &r), (680.36 + 3 * (320 + 1410.72) + 1230) / 2 + 130);
	/* INC AllGather, 4 Broadcasts of 16 KiB one after another: a host sends its block (2 messages: 10 +
	 * 163.84), and in each other block 16 empty packets (80) and receives it (40 + 327.68): 1516.88; 1230
	 * frames; 4 steps */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLGATHER, LOGGP_INC, n, 0, &r), (4 * 1516.88 + 1230) / 2 + 4 * 130);
	NEAR(r.steps, 4);
	/* INC ReduceScatter, 4 Reduces: each host sends its 4 parts (4 x 173.84) and receives its block (367.68) */
	NEAR(loggp_predict(&m, &t, LOGGP_REDUCESCATTER, LOGGP_INC, n, 0, &r), (4 * 1063.04 + 906) / 2 + 4 * 130);
	/* INC AllToAll, 12 Routes of 16 KiB one after another (the seed's serial per-peer puts): a host sends
	 * its 3 blocks and receives 3 (3 x 541.52), and 16 empty packets in each of the 9 others' (720);
	 * 12 x 16 x 14.15625 = 2718 frames; 12 steps */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLTOALL, LOGGP_INC, n, 0, &r), (4 * 2344.56 + 2718) / 2 + 12 * 130);
	NEAR(r.frames, 2718);
	/* ring AllToAll, hop by hop: 6 blocks of 16 KiB each way per host (1043.04 + 2086.08), 3 steps */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLTOALL, LOGGP_RING, n, 0, &r), 4 * 3129.12 / 2 + 3 * 130);
	/* ring AllReduce: 6 pieces of 16 KiB each way: 6 x 10 + 983.04 + 6 x 20 + 1966.08 = 3129.12 a host;
	 * no switch work (they route); 4 hosts over 2 cores + 6 steps x 130 */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r), 4 * 3129.12 / 2 + 6 * 130);
	NEAR(r.w_sw, 0);
	/* ring Broadcast from 0: the root sends (4 x 10 + 655.36), 1 and 2 receive and send, 3 receives
	 * (4 x 20 + 1310.72): 6258.24 over 2 cores + 3 steps; Reduce to 0 the same chain reversed */
	NEAR(loggp_predict(&m, &t, LOGGP_BROADCAST, LOGGP_RING, n, 0, &r), 6258.24 / 2 + 390);
	NEAR(r.w_max, 2086.08);
	/* each host's part of it (loggp_host_work()): the root from 1 sends only, 2 and 3 forward, 0 (the
	 * chain's end) only receives; a rank out of range refused */
	double steps = 0;
	NEAR(loggp_host_work(&m, 4, LOGGP_BROADCAST, LOGGP_RING, n, 1, 1, &steps), 695.36);
	NEAR(steps, 3);
	NEAR(loggp_host_work(&m, 4, LOGGP_BROADCAST, LOGGP_RING, n, 1, 2, NULL), 2086.08);
	NEAR(loggp_host_work(&m, 4, LOGGP_BROADCAST, LOGGP_RING, n, 1, 0, NULL), 1390.72);
	assert_true(loggp_host_work(&m, 4, LOGGP_BROADCAST, LOGGP_RING, n, 1, 4, NULL) < 0);
	assert_true(loggp_host_work(&m, 4, LOGGP_BROADCAST, LOGGP_RING, n, 4, 0, NULL) < 0);
	NEAR(loggp_predict(&m, &t, LOGGP_REDUCE, LOGGP_RING, n, 0, &r), 6258.24 / 2 + 390);
	/* ring AllGather: 3 pieces each way, (30 + 491.52) + (60 + 983.04) a host */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLGATHER, LOGGP_RING, n, 0, &r), 4 * 1564.56 / 2 + 390);
	/* many cores: the busiest host bounds it */
	m.C = 16;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 2091.08 + 130);
	assert_false(r.cpu_bound);
	/* messages of 64 packets: 2 messages (packet 0, then 63) */
	m.C = 2;
	m.message = 64;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), (4 * (2 * 5 + 655.36 + 2 * 20 + 1310.72) + 1296) / 2 + 130);
	/* the host's own loops: INC swaps every byte it sends and receives (0.001 us/B); the ring copies every
	 * byte it sends (0.002) and sums (0.004) or copies each it receives. INC AllReduce: a host sends
	 * 25 + 65536 x 0.011 = 745.896, receives 100 + 65536 x 0.021 = 1476.256; (4 x 2222.152 + 1296) / 2 + 130 */
	m.message = 16;
	m.G_swap = 0.001, m.G_copy = 0.002, m.G_sum = 0.004;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 5222.304);
	/* ring AllReduce: sends 6 pieces 60 + 98304 x 0.012, sums 3 (60 + 49152 x 0.024), copies 3 (60 +
	 * 49152 x 0.022): 3620.64 a host, 4 over 2 cores + 780 */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r), 8021.28);
	/* ring Reduce to 0: rank 1 only sends (40 + 65536 x 0.012 = 826.432), 2 and 3 sum what they receive
	 * (80 + 65536 x 0.024 = 1652.864) and send, the root only sums: 3 x 826.432 + 3 x 1652.864 over 2,
	 * + 3 steps */
	NEAR(loggp_predict(&m, &t, LOGGP_REDUCE, LOGGP_RING, n, 0, &r), (3 * 826.432 + 3 * 1652.864) / 2 + 390);
	NEAR(r.w_max, 826.432 + 1652.864);
	/* 1.25 cores left to the lab: (4 x 2222.152 + 1296) / 1.25 + 130 */
	m.C = 1.25;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 10184.608 / 1.25 + 130);
	m.C = 2;
	/* a root that is not a rank */
	assert_true(loggp_predict(&m, &t, LOGGP_REDUCE, LOGGP_INC, n, 4, &r) < 0);
}

static void test_loggp_predict_acks_completions_steps(void **state)
{
	/* the parameters of test_loggp_predict, and the UC stream: a send without ACK 2, so an ACK costs 3 */
	struct loggp m = { .L = 100, .o = 15, .o_s = 10, .o_r = 20, .o_sb = 5, .G_s = 0.01, .G_r = 0.02, .c_sw = 1,
			   .f_sw = 2, .C = 2, .message = 16, .o_su = 2, .o_ru = 15, .uc = true };
	struct loggp_tree t;
	struct loggp_pred r;
	double n = 65536;

	assert_int_equal(loggp_tree_parse("1-2-4", &t), 0);
	/* libinccl's 64 packets to the switch, which ACKs one per 32: packet 0 (2 + 3/32 = 2.09375), 3
	 * messages of 16 (2 + 3 x 16/32 = 3.5), one of 15 (2 + 3 x 15/32 = 3.40625): 16, + 655.36 a byte;
	 * receiving as before 1410.72: a host 2082.08, (4 x 2082.08 + 1296) / 2 + 130 */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4942.16);
	/* INC Broadcast: a non-root's 64 empty packets 64 x 2.09375 = 134 (o_sb would make 320) */
	NEAR(loggp_predict(&m, &t, LOGGP_BROADCAST, LOGGP_INC, n, 0, &r), (671.36 + 3 * (134 + 1410.72) + 1230) / 2 + 130);
	/* an empty packet in a receiving host measured (o_e 1): 64 x (1 + 3/32) = 70; the root's sends unchanged;
	 * AllGather, whose hosts send 3 blocks of 16 empty packets each, 3 x 16 x (2.09375 - 1.09375) = 48 less a host */
	double ag = loggp_predict(&m, &t, LOGGP_ALLGATHER, LOGGP_INC, n, 0, &r);
	double a2a = loggp_predict(&m, &t, LOGGP_ALLTOALL, LOGGP_INC, n, 0, &r);
	m.o_e = 1, m.empty = true;
	NEAR(loggp_predict(&m, &t, LOGGP_BROADCAST, LOGGP_INC, n, 0, &r), (671.36 + 3 * (70 + 1410.72) + 1230) / 2 + 130);
	NEAR(loggp_predict(&m, &t, LOGGP_ALLGATHER, LOGGP_INC, n, 0, &r), ag - 4 * 48 / 2.0);
	/* an AllToAll's rank sends the empty packets of the Routes it takes no part in receiving nothing:
	 * the UC stream's sender's price, o_e or not */
	NEAR(loggp_predict(&m, &t, LOGGP_ALLTOALL, LOGGP_INC, n, 0, &r), a2a);
	m.o_e = 0, m.empty = false;
	/* completions, 40 each beyond the streams' one in 100: libinccl asks one per 64 packets (16, at least 4
	 * messages of 16), so its 5 sends of data ask 1 (+ 0.95 x 40 = 38) and 64 empty packets 1 (+ 0.36 x
	 * 40 = 14.4); the ring one per 16 of its messages: 6 pieces ask 1 (+ 0.94 x 40 = 37.6 a host) */
	m.o_c = 40, m.signaled = true;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4942.16 + 4 * 38 / 2.0);
	NEAR(loggp_predict(&m, &t, LOGGP_BROADCAST, LOGGP_INC, n, 0, &r),
	     (671.36 + 38 + 3 * (134 + 14.4 + 1410.72) + 1230) / 2 + 130);
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r), 4 * (3129.12 + 37.6) / 2 + 6 * 130);
	/* steps from the run's Barriers: INC 1000 us a step, the ring 200 */
	m.step_inc = 1000, m.step_ring = 200;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4942.16 + 4 * 38 / 2.0 - 130 + 1000);
	NEAR(r.step, 1000);
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r), 4 * (3129.12 + 37.6) / 2 + 6 * 200);
	NEAR(r.step, 200);
	/* a message the ring waits for, 50 each: the AllReduce's pieces of 16 KiB (N/P) but a round's last,
	 * 2P - 3 = 5 a host; each also leaves its host's core idle for the latency L (100): 4 x 5 x 100 */
	m.o_w = 50, m.waited = true;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r),
	     (4 * (3129.12 + 37.6 + 5 * 50) + 2000) / 2 + 6 * 200);
	NEAR(r.waits, 5);
	NEAR(r.idle, 2000);
	/* on more cores than the hosts keep busy, the busiest host's own work and its waits' latency */
	m.C = 8;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r), 3129.12 + 37.6 + 5 * 50 + 500 + 6 * 200);
	assert_false(r.cpu_bound);
	m.C = 2;
	/* the others, against the same without: every host's waits, the most of one */
	static const struct {
		enum loggp_coll c;
		enum loggp_algo a;
		double all, most;
	} waits[] = {
		{ LOGGP_ALLGATHER, LOGGP_RING, 4 * 2, 2 },     /* P - 2 of each round's P - 1 steps */
		{ LOGGP_REDUCESCATTER, LOGGP_RING, 4 * 2, 2 },
		{ LOGGP_BROADCAST, LOGGP_RING, 0, 0 },         /* a chain from a root that waits for nobody */
		{ LOGGP_ALLTOALL, LOGGP_RING, 0, 0 },          /* what a step forwards came during the longer step before */
		{ LOGGP_REDUCE, LOGGP_RING, 0, 0 },            /* MPI's chain: its ranks poll */
		{ LOGGP_ALLREDUCE, LOGGP_INC, 0, 0 },          /* INC sends within its window, gated by no receive */
	};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		struct loggp_pred r0;
		m.waited = false;
		assert_true(loggp_predict(&m, &t, waits[i].c, waits[i].a, n, 0, &r0) > 0);
		m.waited = true;
		assert_true(loggp_predict(&m, &t, waits[i].c, waits[i].a, n, 0, &r) > 0);
		NEAR(r.w_hosts - r0.w_hosts, waits[i].all * 50);
		NEAR(r.waits, waits[i].most);
	}
	/* P = 2: 64 KiB in blocks of 32 KiB, 2 pieces: the AllReduce waits for 1 of each round's 2 steps, the
	 * AllGather (one step) for none; P = 16, blocks of 4 KiB: 29 of 30 and 14 of 15 */
	static const struct {
		const char *tree;
		enum loggp_coll c;
		double waits;
	} shapes[] = { { "1-2", LOGGP_ALLREDUCE, 2 }, { "1-2", LOGGP_ALLGATHER, 0 }, { "1-16", LOGGP_ALLREDUCE, 29 },
		       { "1-16", LOGGP_REDUCESCATTER, 14 } };
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct loggp_tree ts;
		assert_int_equal(loggp_tree_parse(shapes[i].tree, &ts), 0);
		assert_true(loggp_predict(&m, &ts, shapes[i].c, LOGGP_RING, n, 0, &r) > 0);
		NEAR(r.waits, shapes[i].waits);
	}
	/* the interrupts counted inside the calls in place of the streams' (loggp_predict_intr()): the stream
	 * took 3.4 a 16 KiB message sent and received, 34 packets counted (16 and an ACK, at both ends): 0.1 a
	 * packet; an interrupt costs 100. The ring AllReduce above (each host 3166.72 + 5 waits of 50): with
	 * 200 interrupts over 1700 packets a call, 30 beyond the rate, 3000 more, the waits' CPU left out
	 * (their latency kept: 2000): (4 x 3166.72 + 3000 + 2000) / 2 + 6 x 200; with 100, 70 fewer:
	 * (4 x 3166.72 - 7000 + 2000) / 2 + 1200 */
	struct loggp_pred ri;
	m.n_intr = 3, m.i_stream = 3.4, m.o_intr = 100;
	assert_true(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_RING, n, 0, &r) > 0);
	NEAR(loggp_predict_intr(&m, &t, &r, 200, 1700, &ri), (4 * 3166.72 + 3000 + 2000) / 2 + 1200);
	NEAR(ri.extra_intr, 30);
	NEAR(ri.w_max, 3166.72 + 750);
	NEAR(ri.waits, 0);
	NEAR(loggp_predict_intr(&m, &t, &r, 100, 1700, &ri), (4 * 3166.72 - 7000 + 2000) / 2 + 1200);
	NEAR(ri.extra_intr, -70);
	/* nothing without the interrupts' price, a stream's count or packets */
	assert_true(loggp_predict_intr(&m, &t, &r, 200, 0, &ri) < 0);
	m.o_intr = 0;
	assert_true(loggp_predict_intr(&m, &t, &r, 200, 1700, &ri) < 0);
	m.o_intr = 100, m.n_intr = 0;
	assert_true(loggp_predict_intr(&m, &t, &r, 200, 1700, &ri) < 0);
	m.n_intr = 0, m.i_stream = 0, m.o_intr = 0;
	m.o_w = 0, m.waited = false;
	/* without the UC stream every libinccl send costs o_sb again: 5 x 5 */
	m.uc = false, m.signaled = false, m.step_inc = 0;
	NEAR(loggp_predict(&m, &t, LOGGP_ALLREDUCE, LOGGP_INC, n, 0, &r), 4960.16);
	NEAR(r.step, 130);
}

/* @text written to a temporary file; its path in @path (of PATH_LEN). */
#define PATH_LEN 64
static void temp_file(char *path, const char *text)
{
	int fd;

	snprintf(path, PATH_LEN, "/tmp/test_loggpXXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_loggp_cpu_and_frames(void **state)
{
	char path[PATH_LEN], err[RES_ERR_LEN];
	struct loggp_cpu c;
	double frames;

	temp_file(path, LOGGP_CPU_HEADER "\ninc,allreduce,1048576,1,4,pku1,host,300000,900000\n"
					 "inc,allreduce,1048576,1,4,pku2,host,500000,900000\ninc,allreduce,1048576,1,4,sw0,switch,"
					 "40000,900000\ninc,allreduce,1048576,1,4,sw1,switch,60000,900000\n"
					 "inc,allreduce,1048576,1,4,machine,machine,1700000,900000\n"
					 "inc,allreduce,1048576,1,4,pku1,probe,210000,900000\n"
					 "ring,allreduce,1048576,1,4,pku1,host,700000,1200000\n");
	assert_int_equal(loggp_load_cpu(path, &c, err, sizeof(err)), 0);
	unlink(path);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.r[0].algo, "inc");
	assert_int_equal(c.r[0].calls, 4);
	assert_int_equal(c.r[0].hosts, 2);
	NEAR(c.r[0].host_max, 500000);
	NEAR(c.r[0].host_sum, 800000);
	NEAR(c.r[0].sw_sum, 100000);
	NEAR(c.r[0].machine, 1700000);
	NEAR(c.r[1].host_sum, 700000);
	NEAR(c.r[1].machine, -1); /* not recorded */
	NEAR(c.r[0].probe, 210000); /* the speed probe: not a host's CPU */
	assert_int_equal(c.r[0].hosts, 2);
	NEAR(c.r[1].probe, -1);
	loggp_cpu_free(&c);
	temp_file(path, LOGGP_CPU_HEADER "\ninc,allreduce,1048576,1,4,pku1,probe,0,900000\n"); /* a probe of no CPU */
	assert_int_equal(loggp_load_cpu(path, &c, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, ":2: not 'algorithm,"));
	temp_file(path, LOGGP_CPU_HEADER "\ninc,allreduce,1048576,1,4,pku1,vm,300000,900000\n");
	assert_int_equal(loggp_load_cpu(path, &c, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, ":2: not 'algorithm,"));
	temp_file(path, "algorithm,bytes\n");
	assert_int_equal(loggp_load_cpu(path, &c, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, ":1: header is not"));

	/* the switches' work over the INC measurements on 1-2-4 (inccl_perf, 2 calls each): an AllReduce of
	 * 1 MiB, 2 x 1024 x 20.25 frames and 3 lone calls of 32 (a barrier before each call, the tally); a
	 * Barrier measurement, 7 lone calls (its 2, a barrier before each, the 2 of its verification round, the
	 * tally): 41,472 + 96 + 224 = 41,792; the ring's measurement is not the switches' */
	struct loggp_tree t;
	double sw_cpu, model;
	assert_int_equal(loggp_tree_parse("1-2-4", &t), 0);
	temp_file(path, LOGGP_CPU_HEADER "\ninc,allreduce,1048576,1,2,sw0,switch,40000,900000\n"
					 "inc,allreduce,1048576,1,2,sw1,switch,60000,900000\n"
					 "inc,barrier,4,1,2,sw0,switch,1000,800000\ninc,barrier,4,1,2,pku1,host,9000,800000\n"
					 "ring,allreduce,1048576,1,2,sw0,switch,5000,1200000\n");
	assert_int_equal(loggp_load_cpu(path, &c, err, sizeof(err)), 0);
	unlink(path);
	loggp_inc_switch_work(&c, &t, &sw_cpu, &model);
	NEAR(sw_cpu, 101000);
	NEAR(model, 41792);
	loggp_cpu_free(&c);

	/* a communicator's counters grow (its last line counts); a drop starts a new one of that number */
	temp_file(path, "incswitch sw1 comm 1: rx_frames=10 tx_frames=5 aggregations=3\n"
			"incswitch sw1 comm 1: rx_frames=100 tx_frames=50 aggregations=30\n"
			"incswitch sw0 comm 1: rx_frames=7 tx_frames=3\n"
			"incswitch sw1 comm 1: FAULT INJECTION armed: drop (test lab)\n"
			"incswitch sw1 comm 1: rx_frames=20 tx_frames=10\n"
			"incswitch sw1 comm 2: rx_frames=1 tx_frames=1\n");
	assert_int_equal(loggp_load_frames(path, &frames, err, sizeof(err)), 0);
	unlink(path);
	NEAR(frames, 150 + 10 + 30 + 2);
	temp_file(path, "incswitch sw1 comm 1: rx_frames=1x tx_frames=5\n");
	assert_int_equal(loggp_load_frames(path, &frames, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, ":1: rx_frames or tx_frames"));
	assert_int_equal(loggp_load_frames("/nonexistent/switch-counters.txt", &frames, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_of_every_kind),
		cmocka_unit_test(test_bad_rows_named_by_line),
		cmocka_unit_test(test_time_max_us),
		cmocka_unit_test(test_header_and_empty),
		cmocka_unit_test(test_binary_and_long_lines),
		cmocka_unit_test(test_loggp_csv),
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_meta_rounds),
		cmocka_unit_test(test_line_fit),
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_loggp_params),
		cmocka_unit_test(test_loggp_waited_pairs),
		cmocka_unit_test(test_loggp_tree_and_frames),
		cmocka_unit_test(test_loggp_predict),
		cmocka_unit_test(test_loggp_predict_acks_completions_steps),
		cmocka_unit_test(test_loggp_cpu_and_frames),
	};
	return cmocka_run_group_tests_name("results", tests, NULL, NULL);
}
