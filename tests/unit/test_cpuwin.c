/*
 * test_cpuwin.c — the CPU inside inccl_perf's windows from cpusample's
 * samples (analysis/cpuwin.c), cmocka. Inputs are in memory (fmemopen); the
 * windows are written by inccl_perf's own perf_window_line(); expectations
 * are worked out by hand below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cpuwin.h"
#include "perf_opts.h"

/*
 * clk_tck 100: a tick is 10000 us. PID 7's cumulative ticks at 1000, 2000,
 * 3000, 4000 ns: 0, 10, 10, 30 (rising 1 tick per 100 ns, flat, then 2 per
 * 100 ns). PID 8 has one sample.
 */
static const char samples_text[] = "# cpusample clk_tck=100 interval_ms=10\n"
				   "time_ns,pid,ticks\n"
				   "1000,7,0\n"
				   "1000,8,5\n"
				   "2000,7,10\n"
				   "3000,7,10\n"
				   "4000,7,30\n";

static int read_samples(const char *text, struct cpuwin_samples *s, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	int rc = cpuwin_read_samples(f, "s.csv", s, err, CPUWIN_ERR_LEN);
	fclose(f);
	return rc;
}

static int read_windows(const char *text, struct cpuwin_windows *w, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	int rc = cpuwin_read_windows(f, "w.csv", w, err, CPUWIN_ERR_LEN);
	fclose(f);
	return rc;
}

/*
 * The windows file as inccl_perf -X writes it, every time shifted by @shift
 * ns (a guest clock ahead of the machine's by @shift): A timed 1500..2500,
 * B timed 1200..1800 (overlaps A), C warm-up 3750..4000.
 */
static char *windows_text(int64_t shift)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	fputs(PERF_WINDOWS_HEADER "\n", f);
	assert_int_equal(perf_window_line(f, 1, 0, 4096, 1, 1500 + shift, 2500 + shift, 40, 900), 0);
	assert_int_equal(perf_window_line(f, 1, 0, 4096, 2, 1200 + shift, 1800 + shift, -1, 800), 0);
	assert_int_equal(perf_window_line(f, 1, 1, 8192, 1, 3750 + shift, 4000 + shift, 7, -1), 0);
	fclose(f);
	return s;
}

static int timed_only(const struct cpuwin_window *w, void *arg)
{
	(void)arg;
	return !w->warmup;
}

static void test_header_agrees(void **state)
{
	assert_string_equal(CPUWIN_WINDOWS_HEADER, PERF_WINDOWS_HEADER);
}

static void test_union_interpolated(void **state)
{
	struct cpuwin_samples s;
	struct cpuwin_windows w;
	struct cpuwin_result r;
	char err[CPUWIN_ERR_LEN], *text = windows_text(0);

	assert_int_equal(read_samples(samples_text, &s, err), 0);
	assert_int_equal(s.clk_tck, 100);
	assert_int_equal(s.interval_ms, 10);
	assert_int_equal(read_windows(text, &w, err), 0);
	assert_int_equal(w.n, 3);
	assert_int_equal(w.w[2].warmup, 1);
	assert_int_equal(w.w[2].bytes, 8192);
	/* the counters across each window, -1 where inccl_perf could not read one */
	assert_int_equal(w.w[0].intr, 40);
	assert_int_equal(w.w[0].pkts, 900);
	assert_int_equal(w.w[1].intr, -1);
	assert_int_equal(w.w[1].pkts, 800);
	assert_int_equal(w.w[2].intr, 7);
	assert_int_equal(w.w[2].pkts, -1);

	/*
	 * Every window: the union is 1200..2500 and 3750..4000. C(1200) = 2,
	 * C(2500) = 10: 8 ticks (A and B apart would count 5 + 6 = 11);
	 * C(3750) = 25, C(4000) = 30: 5 ticks. 13 ticks = 130000 us over
	 * 1300 + 250 ns. Bound: edge 1200 in an interval of 10 ticks, 2500 of
	 * 0, 3750 of 20, 4000 on a sample (0), plus 1 per edge: 34 ticks.
	 */
	assert_int_equal(cpuwin_cpu(&s, 7, &w, NULL, NULL, 0, &r, err, sizeof(err)), 0);
	assert_float_equal(r.cpu_us, 130000, 1e-6);
	assert_float_equal(r.span_us, 1.55, 1e-9);
	assert_float_equal(r.bound_us, 340000, 1e-6);
	assert_float_equal(r.tick_us, 10000, 1e-9);
	assert_int_equal(r.interval_ms, 10);
	assert_int_equal(r.intervals, 2);

	/* timed only: 1200..2500, 8 ticks; bound 10 + 0 + 2 ticks */
	assert_int_equal(cpuwin_cpu(&s, 7, &w, timed_only, NULL, 0, &r, err, sizeof(err)), 0);
	assert_float_equal(r.cpu_us, 80000, 1e-6);
	assert_float_equal(r.bound_us, 120000, 1e-6);
	assert_int_equal(r.intervals, 1);
	cpuwin_free_windows(&w);
	free(text);

	/* a guest clock 1000 ns ahead: offset +1000 gives the same; -1000 puts C past the samples */
	text = windows_text(1000);
	assert_int_equal(read_windows(text, &w, err), 0);
	assert_int_equal(cpuwin_cpu(&s, 7, &w, NULL, NULL, 1000, &r, err, sizeof(err)), 0);
	assert_float_equal(r.cpu_us, 130000, 1e-6);
	assert_int_equal(cpuwin_cpu(&s, 7, &w, NULL, NULL, -1000, &r, err, sizeof(err)), -1);
	assert_string_equal(err, "s.csv: the window of rank 1, 4096 bytes, iteration 1 (3500..4500 ns on this machine) "
				 "is outside PID 7's samples (1000..4000)");
	cpuwin_free_windows(&w);
	free(text);
	cpuwin_free_samples(&s);
}

/* A windows file of an inccl_perf from before its counters (6 fields, its header): read, the counters -1. */
static void test_old_windows(void **state)
{
	struct cpuwin_windows w;
	char err[CPUWIN_ERR_LEN];

	assert_int_equal(read_windows(CPUWIN_WINDOWS_HEADER_6 "\n1,timed,4096,1,10,20\n0,warmup,4096,1,5,9\n", &w, err), 0);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.w[0].end_ns, 20);
	assert_int_equal(w.w[0].intr, -1);
	assert_int_equal(w.w[1].pkts, -1);
	cpuwin_free_windows(&w);
}

static void test_refusals(void **state)
{
	struct cpuwin_samples s;
	struct cpuwin_windows w;
	struct cpuwin_result r;
	char err[CPUWIN_ERR_LEN], *text = windows_text(0);

	assert_int_equal(read_samples(samples_text, &s, err), 0);
	assert_int_equal(read_windows(text, &w, err), 0);
	assert_int_equal(cpuwin_cpu(&s, 8, &w, NULL, NULL, 0, &r, err, sizeof(err)), -1);
	assert_string_equal(err, "s.csv: PID 8 has one sample only");
	assert_int_equal(cpuwin_cpu(&s, 9, &w, NULL, NULL, 0, &r, err, sizeof(err)), -1);
	assert_string_equal(err, "s.csv: PID 9 has no samples");
	struct cpuwin_windows none = { 0 };
	assert_int_equal(cpuwin_cpu(&s, 7, &none, NULL, NULL, 0, &r, err, sizeof(err)), -1);
	assert_string_equal(err, "no window chosen");
	w.w[1].start_ns = 999; /* one ns before the first sample: an error, not a smaller CPU */
	assert_int_equal(cpuwin_cpu(&s, 7, &w, NULL, NULL, 0, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "iteration 2 (999..1800 ns on this machine) is outside"));
	cpuwin_free_windows(&w);
	cpuwin_free_samples(&s);
	free(text);
}

#define HEAD "# cpusample clk_tck=100 interval_ms=10\ntime_ns,pid,ticks\n"
#define WHEAD PERF_WINDOWS_HEADER "\n"

static void test_malformed(void **state)
{
	static const char *const bad_samples[][2] = {
		{ "", "s.csv:1: no cpusample header: not a cpusample file" },
		{ "# cpusample clk_tck=100 interval_ms=10\n", "s.csv:2: no column header: not a cpusample file" },
		{ "# cpusample clk_tck=0 interval_ms=10\n", "s.csv:1: not a cpusample header" },
		{ "# cpusample clk_tck=100 interval_ms=10 x\n", "s.csv:1: not a cpusample header" },
		{ "# cpusample clk_tck=100 interval_ms=10\ntime,pid,ticks\n", "s.csv:2: not the header time_ns,pid,ticks" },
		{ HEAD "1000,7\n", "s.csv:3: not time_ns,pid,ticks" },
		{ HEAD "1000,7,1,2\n", "s.csv:3: not time_ns,pid,ticks" },
		{ HEAD "1000,7,x\n", "s.csv:3: bad ticks 'x'" },
		{ HEAD "1000,7, 5\n", "s.csv:3: bad ticks ' 5'" },
		{ HEAD "1000,-1,5\n", "s.csv:3: bad pid '-1'" },
		{ HEAD "1000,2147483648,5\n", "s.csv:3: bad pid '2147483648'" },
		{ HEAD "-1,7,5\n", "s.csv:3: bad time_ns '-1'" },
		{ HEAD "99999999999999999999,7,5\n", "s.csv:3: bad time_ns '99999999999999999999'" },
		{ HEAD "1000,7,5\n1000,7,6\n", "s.csv:4: PID 7: time 1000 not after line 3's" },
		{ HEAD "1000,7,5\n2000,8,1\n3000,7,4\n", "s.csv:5: PID 7: ticks 4 fewer than line 3's" },
	};
	static const char *const bad_windows[][2] = {
		{ WHEAD "1,timed,4096,1,10\n", "w.csv:2: not rank,phase,bytes,iter,start_ns,end_ns,intr,pkts" },
		{ WHEAD "1,timed,4096,1,10,20,30\n", "w.csv:2: not rank,phase,bytes,iter,start_ns,end_ns,intr,pkts" },
		{ WHEAD "1,timed,4096,1,10,20,30,40,50\n", "w.csv:2: not rank,phase,bytes,iter,start_ns,end_ns,intr,pkts" },
		{ WHEAD "1,timed,4096,1,10,20,-2,40\n", "w.csv:2: bad intr '-2' (a count or -1)" },
		{ WHEAD "1,timed,4096,1,10,20,5,x\n", "w.csv:2: bad pkts 'x' (a count or -1)" },
		{ WHEAD "1,timed,4096,1,10,20,,40\n", "w.csv:2: bad intr '' (a count or -1)" },
		{ WHEAD "1,warm,4096,1,10,20\n", "w.csv:2: bad phase 'warm' (warmup, timed)" },
		{ WHEAD "-1,timed,4096,1,10,20\n", "w.csv:2: bad rank '-1'" },
		{ WHEAD "1,timed,4K,1,10,20\n", "w.csv:2: bad bytes '4K'" },
		{ WHEAD "1,timed,4096,0,10,20\n", "w.csv:2: bad iteration '0'" },
		{ WHEAD "1,timed,4096,1,10,\n", "w.csv:2: bad end_ns ''" },
		{ WHEAD WHEAD "1,timed,4096,1,20,10\n", "w.csv:3: end_ns 10 before start_ns 20" },
	};
	char err[CPUWIN_ERR_LEN];

	for (size_t k = 0; k < sizeof(bad_samples) / sizeof(bad_samples[0]); k++) {
		struct cpuwin_samples s;
		if (read_samples(bad_samples[k][0], &s, err) != -1 || strncmp(err, bad_samples[k][1], strlen(bad_samples[k][1])))
			fail_msg("samples %zu: got '%s', not '%s'", k, err, bad_samples[k][1]);
	}
	for (size_t k = 0; k < sizeof(bad_windows) / sizeof(bad_windows[0]); k++) {
		struct cpuwin_windows w;
		if (read_windows(bad_windows[k][0], &w, err) != -1 || strcmp(err, bad_windows[k][1]))
			fail_msg("windows %zu: got '%s', not '%s'", k, err, bad_windows[k][1]);
	}
	char longline[400];
	memset(longline, '1', sizeof(longline) - 2);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	struct cpuwin_windows w;
	assert_int_equal(read_windows(longline, &w, err), -1);
	assert_string_equal(err, "w.csv:1: line too long");
}

/*
 * The machine's series (cpusample -m, PID 0) reads and is windowed like a
 * process's; in cpuwin.csv its line is kept apart from the processes': the
 * busiest host and the sum are the processes' alone.
 */
static void test_machine(void **state)
{
	static const char text[] = HEAD "1000,0,100\n1000,7,0\n2000,0,130\n2000,7,10\n";
	static const char csv[] = CPUWIN_CSV_HEADER "\n"
				  "inc,allreduce,4096,1,2,pku1,host,7,300,1000,20,5\n"
				  "inc,allreduce,4096,1,2,machine,machine,0,900,1000,30,5\n"
				  "inc,allreduce,4096,1,2,sw1,switch,9,100,1000,10,5\n"
				  "ring,allreduce,4096,1,2,pku1,host,7,50,1000,20,5\n";
	struct cpuwin_samples s;
	struct cpuwin_windows w;
	struct cpuwin_result r;
	struct cpuwin_table t;
	char err[CPUWIN_ERR_LEN];

	/* 1200..1800 of the machine's 30 ticks over 1000..2000 ns: 60 % of them, 18 ticks */
	assert_int_equal(read_samples(text, &s, err), 0);
	assert_int_equal(read_windows(WHEAD "1,timed,4096,1,1200,1800\n", &w, err), 0);
	assert_int_equal(cpuwin_cpu(&s, CPUWIN_MACHINE_PID, &w, NULL, NULL, 0, &r, err, sizeof(err)), 0);
	assert_float_equal(r.cpu_us, 180000, 1e-6);
	cpuwin_free_windows(&w);
	cpuwin_free_samples(&s);

	FILE *f = fmemopen((void *)csv, strlen(csv), "r");
	assert_non_null(f);
	assert_int_equal(cpuwin_parse_csv(f, "c.csv", &t, err, sizeof(err)), 0);
	fclose(f);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.m[0].procs, 2);
	assert_int_equal(t.m[0].hosts, 1);
	assert_float_equal(t.m[0].sum, 400, 1e-9);
	assert_float_equal(t.m[0].sum_bound, 30, 1e-9);
	assert_float_equal(t.m[0].host_max, 300, 1e-9);
	assert_float_equal(t.m[0].machine, 900, 1e-9);
	assert_float_equal(t.m[0].machine_bound, 30, 1e-9);
	assert_float_equal(t.m[1].machine, -1, 1e-9); /* no machine line: -1 */
	cpuwin_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_agrees),
		cmocka_unit_test(test_union_interpolated),
		cmocka_unit_test(test_old_windows),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_machine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
