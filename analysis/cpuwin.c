/*
 * cpuwin.c — the CPU of processes inside inccl_perf's windows, from
 * cpusample's samples (see cpuwin.h). Unit tested by tests/unit/test_cpuwin.c.
 */
#include "cpuwin.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 256   /* the longest valid line is under 100 characters */
#define MAX_FIELDS 8       /* a windows line's (CPUWIN_WINDOWS_HEADER); 6 in a file of before its counters */
#define OLD_FIELDS 6       /* CPUWIN_WINDOWS_HEADER_6's */
#define NS_PER_US 1000.0

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** Write the reason into @err. Return -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/**
 * grow() - room for more elements of @size bytes (@size >= 1) in @arr, which
 * has room for @cap of them (@arr NULL when @cap is 0): twice @cap, @first when
 * @cap is 0. Return the reallocated array with its new room in *@newcap, or
 * NULL when out of memory or the room's bytes would overflow size_t: @arr is
 * then untouched (still the caller's to free) and so is *@newcap.
 */
static void *grow(void *arr, size_t cap, size_t size, size_t first, size_t *newcap)
{
	size_t want = cap ? 2 * cap : first;

	if (cap > SIZE_MAX / 2 || want > SIZE_MAX / size)
		return NULL;
	void *p = realloc(arr, want * size);
	if (p)
		*newcap = want;
	return p;
}

/**
 * read_line() - the next line of @f into @buf without its newline, *@lineno
 * counted. Return 1, 0 at the end, or -1 if the line is too long or holds a
 * NUL (reason in @why).
 */
static int read_line(FILE *f, char buf[LINE_MAX_LEN], size_t *lineno, const char **why)
{
	if (!fgets(buf, LINE_MAX_LEN, f))
		return 0;
	++*lineno;
	size_t len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (!feof(f)) {
		*why = "line too long";
		return -1;
	}
	return 1;
}

/** split() - @line's comma-separated fields into @fields (in place). Return how many, up to MAX_FIELDS + 1. */
static int split(char *line, char *fields[MAX_FIELDS + 1])
{
	int n = 0;

	for (char *p = line; n <= MAX_FIELDS; n++) {
		fields[n] = p;
		if (!(p = strchr(p, ',')))
			return n + 1;
		*p++ = '\0';
	}
	return n;
}

/** parse_i64() - @s, a decimal integer in @min..@max and nothing else, into *@v. Return 0 or -1. */
static int parse_i64(const char *s, int64_t min, int64_t max, int64_t *v)
{
	char *end;

	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end || (*s != '-' && (*s < '0' || *s > '9')) || x < min || x > max)
		return -1;
	*v = x;
	return 0;
}

/** series_of() - the series of @pid in @s, added if new. Return it, or NULL if CPUWIN_MAX_PIDS are taken. */
static struct cpuwin_series *series_of(struct cpuwin_samples *s, long pid)
{
	for (int k = 0; k < s->nseries; k++)
		if (s->series[k].pid == pid)
			return &s->series[k];
	if (s->nseries == CPUWIN_MAX_PIDS)
		return NULL;
	s->series[s->nseries] = (struct cpuwin_series){ .pid = pid };
	return &s->series[s->nseries++];
}

/** push_sample() - append (@t, @ticks, @line) to @ser. Return 0, or -1 out of memory. */
static int push_sample(struct cpuwin_series *ser, int64_t t, uint64_t ticks, size_t line)
{
	if (ser->n == ser->cap) { /* the three arrays grow alike; one that grew is kept even if another did not */
		size_t cap = 0;
		int64_t *tt = grow(ser->t_ns, ser->cap, sizeof(*tt), 256, &cap);
		if (tt)
			ser->t_ns = tt;
		uint64_t *kk = grow(ser->ticks, ser->cap, sizeof(*kk), 256, &cap);
		if (kk)
			ser->ticks = kk;
		size_t *ll = grow(ser->line, ser->cap, sizeof(*ll), 256, &cap);
		if (ll)
			ser->line = ll;
		if (!tt || !kk || !ll)
			return -1;
		ser->cap = cap;
	}
	ser->t_ns[ser->n] = t;
	ser->ticks[ser->n] = ticks;
	ser->line[ser->n++] = line;
	return 0;
}

/** sample_line() - one "time_ns,pid,ticks" line @buf into @s. Return 0, or -1 with the reason in @err (no prefix). */
static int sample_line(struct cpuwin_samples *s, char *buf, size_t lineno, char *err, size_t errlen)
{
	char *fields[MAX_FIELDS + 1];
	int64_t t, pid, ticks;

	if (split(buf, fields) != 3)
		return fail(err, errlen, "not time_ns,pid,ticks");
	if (parse_i64(fields[0], 0, INT64_MAX, &t))
		return fail(err, errlen, "bad time_ns '%s'", fields[0]);
	if (parse_i64(fields[1], CPUWIN_MACHINE_PID, 0x7fffffff, &pid)) /* 0: the machine (cpusample -m) */
		return fail(err, errlen, "bad pid '%s'", fields[1]);
	if (parse_i64(fields[2], 0, INT64_MAX, &ticks))
		return fail(err, errlen, "bad ticks '%s'", fields[2]);
	struct cpuwin_series *ser = series_of(s, (long)pid);
	if (!ser)
		return fail(err, errlen, "more than %d PIDs", CPUWIN_MAX_PIDS);
	if (ser->n && t <= ser->t_ns[ser->n - 1])
		return fail(err, errlen, "PID %lld: time %lld not after line %zu's", (long long)pid, (long long)t,
			    ser->line[ser->n - 1]);
	if (ser->n && (uint64_t)ticks < ser->ticks[ser->n - 1])
		return fail(err, errlen, "PID %lld: ticks %lld fewer than line %zu's", (long long)pid, (long long)ticks,
			    ser->line[ser->n - 1]);
	return push_sample(ser, t, (uint64_t)ticks, lineno) ? fail(err, errlen, "out of memory") : 0;
}

int cpuwin_read_samples(FILE *f, const char *path, struct cpuwin_samples *s, char *err, size_t errlen)
{
	char buf[LINE_MAX_LEN], why[CPUWIN_ERR_LEN];
	const char *toolong = NULL;
	size_t lineno = 0;
	long tck;
	int ms, end, rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "%s", path);
	while ((rc = read_line(f, buf, &lineno, &toolong)) > 0) {
		if (lineno == 1) {
			end = 0;
			if (sscanf(buf, "# cpusample clk_tck=%ld interval_ms=%d%n", &tck, &ms, &end) != 2 || buf[end] ||
			    tck < 1 || ms < 1 || ms > 1000) {
				snprintf(why, sizeof(why), "not a cpusample header (# cpusample clk_tck=T interval_ms=MS)");
				goto bad;
			}
			s->clk_tck = tck;
			s->interval_ms = ms;
		} else if (lineno == 2) {
			if (strcmp(buf, CPUWIN_SAMPLES_HEADER)) {
				snprintf(why, sizeof(why), "not the header %s", CPUWIN_SAMPLES_HEADER);
				goto bad;
			}
		} else if (sample_line(s, buf, lineno, why, sizeof(why))) {
			goto bad;
		}
	}
	if (rc < 0) {
		snprintf(why, sizeof(why), "%s", toolong);
		goto bad;
	}
	if (lineno < 2) {
		lineno++;
		snprintf(why, sizeof(why), "no %s header: not a cpusample file", lineno == 1 ? "cpusample" : "column");
		goto bad;
	}
	return 0;
bad:
	cpuwin_free_samples(s);
	return fail(err, errlen, "%s:%zu: %s", path, lineno, why);
}

/** window_line() - one windows line @buf into *@out. Return 0, or -1 with the reason in @err. */
static int window_line(char *buf, struct cpuwin_window *out, char *err, size_t errlen)
{
	char *fields[MAX_FIELDS + 1];
	int64_t rank, bytes, iter, start, end, intr = -1, pkts = -1;
	int n = split(buf, fields);

	if (n != MAX_FIELDS && n != OLD_FIELDS)
		return fail(err, errlen, "not %s", CPUWIN_WINDOWS_HEADER);
	if (parse_i64(fields[0], 0, 0x7fffffff, &rank))
		return fail(err, errlen, "bad rank '%s'", fields[0]);
	if (strcmp(fields[1], "warmup") && strcmp(fields[1], "timed"))
		return fail(err, errlen, "bad phase '%s' (warmup, timed)", fields[1]);
	if (parse_i64(fields[2], 0, INT64_MAX, &bytes))
		return fail(err, errlen, "bad bytes '%s'", fields[2]);
	if (parse_i64(fields[3], 1, 0x7fffffff, &iter))
		return fail(err, errlen, "bad iteration '%s'", fields[3]);
	if (parse_i64(fields[4], 0, INT64_MAX, &start))
		return fail(err, errlen, "bad start_ns '%s'", fields[4]);
	if (parse_i64(fields[5], 0, INT64_MAX, &end))
		return fail(err, errlen, "bad end_ns '%s'", fields[5]);
	if (end < start)
		return fail(err, errlen, "end_ns %lld before start_ns %lld", (long long)end, (long long)start);
	/* the counters: -1 where inccl_perf could not read them, else a count */
	if (n == MAX_FIELDS && strcmp(fields[6], "-1") && parse_i64(fields[6], 0, INT64_MAX, &intr))
		return fail(err, errlen, "bad intr '%s' (a count or -1)", fields[6]);
	if (n == MAX_FIELDS && strcmp(fields[7], "-1") && parse_i64(fields[7], 0, INT64_MAX, &pkts))
		return fail(err, errlen, "bad pkts '%s' (a count or -1)", fields[7]);
	*out = (struct cpuwin_window){ .rank = (int)rank, .warmup = !strcmp(fields[1], "warmup"),
				       .bytes = (uint64_t)bytes, .iter = (int)iter, .start_ns = start, .end_ns = end,
				       .intr = intr, .pkts = pkts };
	return 0;
}

int cpuwin_read_windows(FILE *f, const char *path, struct cpuwin_windows *w, char *err, size_t errlen)
{
	char buf[LINE_MAX_LEN], why[CPUWIN_ERR_LEN];
	const char *toolong = NULL;
	size_t lineno = 0;
	int rc;

	memset(w, 0, sizeof(*w));
	while ((rc = read_line(f, buf, &lineno, &toolong)) > 0) {
		if (!strcmp(buf, CPUWIN_WINDOWS_HEADER) || !strcmp(buf, CPUWIN_WINDOWS_HEADER_6))
			continue; /* each run appended starts with it when the file was empty; more are harmless */
		if (w->n == w->cap) {
			struct cpuwin_window *p = grow(w->w, w->cap, sizeof(*p), 64, &w->cap);
			if (!p) {
				snprintf(why, sizeof(why), "out of memory");
				goto bad;
			}
			w->w = p;
		}
		if (window_line(buf, &w->w[w->n], why, sizeof(why)))
			goto bad;
		w->n++;
	}
	if (rc == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", toolong);
bad:
	cpuwin_free_windows(w);
	return fail(err, errlen, "%s:%zu: %s", path, lineno, why);
}

/** The machine-time interval [a, b] of a window. */
struct span {
	int64_t a, b;
};

/** by_start() - qsort's order of spans: by start. */
static int by_start(const void *x, const void *y)
{
	const struct span *p = x, *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

/**
 * at() - the cumulative ticks of @ser at @t (within its samples), linearly
 * interpolated, into *@ticks; the ticks of the sample interval around @t
 * into *@step (0 on a sample).
 */
static void at(const struct cpuwin_series *ser, int64_t t, double *ticks, double *step)
{
	size_t lo = 0, hi = ser->n - 1; /* t_ns[lo] <= t <= t_ns[hi] */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (ser->t_ns[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	if (t == ser->t_ns[lo] || t == ser->t_ns[hi]) { /* on a sample: its value, exact to the tick */
		*ticks = (double)ser->ticks[t == ser->t_ns[lo] ? lo : hi];
		*step = 0;
		return;
	}
	double d = (double)(ser->ticks[hi] - ser->ticks[lo]);
	*ticks = (double)ser->ticks[lo] + d * (double)(t - ser->t_ns[lo]) / (double)(ser->t_ns[hi] - ser->t_ns[lo]);
	*step = d;
}

int cpuwin_cpu(const struct cpuwin_samples *s, long pid, const struct cpuwin_windows *w,
	       int (*want)(const struct cpuwin_window *, void *), void *arg, int64_t offset_ns,
	       struct cpuwin_result *r, char *err, size_t errlen)
{
	const struct cpuwin_series *ser = NULL;
	size_t n = 0;

	for (int k = 0; k < s->nseries; k++)
		if (s->series[k].pid == pid)
			ser = &s->series[k];
	if (!ser || ser->n < 2)
		return fail(err, errlen, "%s: PID %ld has %s", s->path, pid, ser ? "one sample only" : "no samples");
	struct span *sp = malloc((w->n ? w->n : 1) * sizeof(*sp));
	if (!sp)
		return fail(err, errlen, "out of memory");
	for (size_t k = 0; k < w->n; k++) {
		if (want && !want(&w->w[k], arg))
			continue;
		sp[n] = (struct span){ w->w[k].start_ns - offset_ns, w->w[k].end_ns - offset_ns };
		if (sp[n].a < ser->t_ns[0] || sp[n].b > ser->t_ns[ser->n - 1]) {
			struct span out = sp[n];
			free(sp);
			return fail(err, errlen,
				    "%s: the window of rank %d, %llu bytes, iteration %d (%lld..%lld ns on this machine) is "
				    "outside PID %ld's samples (%lld..%lld)",
				    s->path, w->w[k].rank, (unsigned long long)w->w[k].bytes, w->w[k].iter,
				    (long long)out.a, (long long)out.b, pid, (long long)ser->t_ns[0],
				    (long long)ser->t_ns[ser->n - 1]);
		}
		n++;
	}
	if (!n) {
		free(sp);
		return fail(err, errlen, "no window chosen");
	}
	qsort(sp, n, sizeof(*sp), by_start);
	double tick_us = 1e6 / (double)s->clk_tck, ticks = 0, bound = 0, span_ns = 0;
	int intervals = 0;
	for (size_t k = 0; k < n;) {
		struct span u = sp[k]; /* merge every window that overlaps or touches this one */
		for (k++; k < n && sp[k].a <= u.b; k++)
			if (sp[k].b > u.b)
				u.b = sp[k].b;
		double ca, cb, da, db;
		at(ser, u.a, &ca, &da);
		at(ser, u.b, &cb, &db);
		ticks += cb - ca;
		bound += da + db + 2; /* per edge: that interval's ticks, and one for the counter's floor */
		span_ns += (double)(u.b - u.a);
		intervals++;
	}
	free(sp);
	*r = (struct cpuwin_result){ .cpu_us = ticks * tick_us, .span_us = span_ns / NS_PER_US,
				     .bound_us = bound * tick_us, .tick_us = tick_us, .interval_ms = s->interval_ms,
				     .intervals = intervals };
	return 0;
}

void cpuwin_free_samples(struct cpuwin_samples *s)
{
	for (int k = 0; k < s->nseries; k++) {
		free(s->series[k].t_ns);
		free(s->series[k].ticks);
		free(s->series[k].line);
	}
	s->nseries = 0;
}

void cpuwin_free_windows(struct cpuwin_windows *w)
{
	free(w->w);
	*w = (struct cpuwin_windows){ 0 };
}

/** name_ok() - @s is 1..@max characters of @set. */
static int name_ok(const char *s, size_t max, const char *set)
{
	size_t n = strlen(s);

	return n >= 1 && n <= max && strspn(s, set) == n;
}

/** parse_us() - @s, a finite decimal number >= 0 (no sign, no exponent), into *@v. Return 0 or -1. */
static int parse_us(const char *s, double *v)
{
	char *end;

	if (!name_ok(s, 24, "0123456789.") || *s == '.')
		return -1;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || *end || !isfinite(x))
		return -1;
	*v = x;
	return 0;
}

#define CSV_LINE_LEN 512 /* a valid line is under 200 characters */
#define CSV_MAX_ROUND 20 /* exp.sh ROUNDS: 1..20 */

int cpuwin_parse_csv(FILE *f, const char *path, struct cpuwin_table *t, char *err, size_t errlen)
{
	static const char lower[] = "abcdefghijklmnopqrstuvwxyz0123456789-";
	static const char word[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
	char buf[CSV_LINE_LEN], why[CPUWIN_ERR_LEN];
	size_t lineno = 0;

	memset(t, 0, sizeof(*t));
	while (fgets(buf, sizeof(buf), f)) {
		char *v[CPUWIN_CSV_FIELDS + 1], *nl = strchr(buf, '\n'), *s = buf;
		int nf = 0;
		int64_t bytes, round, calls, pid;
		double cpu, span, bound, off;

		lineno++;
		if (!nl && !feof(f)) {
			snprintf(why, sizeof(why), "line longer than %d characters", CSV_LINE_LEN - 2);
			goto bad;
		}
		if (nl)
			*nl = '\0';
		if (lineno == 1) {
			if (strcmp(buf, CPUWIN_CSV_HEADER)) {
				snprintf(why, sizeof(why), "header is not '%s'", CPUWIN_CSV_HEADER);
				goto bad;
			}
			continue;
		}
		for (v[nf++] = s; *s && nf <= CPUWIN_CSV_FIELDS; s++)
			if (*s == ',') {
				*s = '\0';
				v[nf++] = s + 1;
			}
		if (nf != CPUWIN_CSV_FIELDS) {
			snprintf(why, sizeof(why), "%s%d fields, not %d", nf > CPUWIN_CSV_FIELDS ? "more than " : "",
				 nf > CPUWIN_CSV_FIELDS ? CPUWIN_CSV_FIELDS : nf, CPUWIN_CSV_FIELDS);
			goto bad;
		}
		/* the first field that is not what it should be, -1: none */
		static const char *const names[CPUWIN_CSV_FIELDS] = { "algorithm", "collective", "bytes", "round",
			"calls", "node", "role", "pid", "cpu_us", "span_us", "bound_us", "offset_us" };
		static const char *const wants[CPUWIN_CSV_FIELDS] = { "a name (1..15 of a-z 0-9 -)",
			"a name (1..15 of a-z 0-9 -)", "a whole number", "a whole number 1..20", "a whole number >= 1",
			"a node name (1..64 of A-Z a-z 0-9 _ . -)", "host, switch or machine",
			"a PID (1..2^31-1; 0 for the machine, which alone has 0)", "a number of us >= 0",
			"a number of us >= 0", "a number of us >= 0", "a number of us >= 0" };
		int k = !name_ok(v[0], CPUWIN_NAME_LEN - 1, lower)		 ? 0
			: !name_ok(v[1], CPUWIN_NAME_LEN - 1, lower)		 ? 1
			: parse_i64(v[2], 0, INT64_MAX, &bytes)		 ? 2
			: parse_i64(v[3], 1, CSV_MAX_ROUND, &round)		 ? 3
			: parse_i64(v[4], 1, 0x7fffffff, &calls)		 ? 4
			: !name_ok(v[5], 64, word)				 ? 5
			: strcmp(v[6], "host") && strcmp(v[6], "switch") && strcmp(v[6], "machine") ? 6
			: parse_i64(v[7], 0, 0x7fffffff, &pid) || (pid == CPUWIN_MACHINE_PID) != !strcmp(v[6], "machine") ? 7
			: parse_us(v[8], &cpu)					 ? 8
			: parse_us(v[9], &span)				 ? 9
			: parse_us(v[10], &bound)				 ? 10
			: parse_us(v[11], &off)				 ? 11
										 : -1;
		if (k >= 0) {
			snprintf(why, sizeof(why), "%s '%.40s' is not %s", names[k], v[k], wants[k]);
			goto bad;
		}
		struct cpuwin_meas *m = t->n ? &t->m[t->n - 1] : NULL;
		if (!m || strcmp(m->algo, v[0]) || strcmp(m->coll, v[1]) || m->bytes != (double)bytes || m->round != round) {
			for (size_t j = 0; j < t->n; j++)
				if (!strcmp(t->m[j].algo, v[0]) && !strcmp(t->m[j].coll, v[1]) &&
				    t->m[j].bytes == (double)bytes && t->m[j].round == round) {
					snprintf(why, sizeof(why), "%s %s %lld B round %lld: its lines are not together",
						 v[0], v[1], (long long)bytes, (long long)round);
					goto bad;
				}
			if (t->n == t->cap) {
				struct cpuwin_meas *p = grow(t->m, t->cap, sizeof(*p), 32, &t->cap);
				if (!p) {
					snprintf(why, sizeof(why), "out of memory");
					goto bad;
				}
				t->m = p;
			}
			m = &t->m[t->n++];
			*m = (struct cpuwin_meas){ .bytes = (double)bytes, .round = (int)round, .calls = (int)calls,
						   .span = span, .offset = off, .machine = -1, .machine_bound = -1 };
			snprintf(m->algo, sizeof(m->algo), "%s", v[0]);
			snprintf(m->coll, sizeof(m->coll), "%s", v[1]);
		} else if (m->calls != calls || m->span != span || m->offset != off) {
			snprintf(why, sizeof(why), "calls, span_us or offset_us differ from the measurement's first line's "
				 "(%d, %.0f, %.0f)", m->calls, m->span, m->offset);
			goto bad;
		}
		if (pid == CPUWIN_MACHINE_PID) { /* the machine: not a process of the lab */
			if (m->machine >= 0) {
				snprintf(why, sizeof(why), "a second machine line for %s %s %lld B round %lld", v[0], v[1],
					 (long long)bytes, (long long)round);
				goto bad;
			}
			m->machine = cpu;
			m->machine_bound = bound;
			continue;
		}
		m->procs++;
		m->sum += cpu;
		m->sum_bound += bound;
		if (!strcmp(v[6], "host")) {
			if (m->hosts == CPUWIN_MAX_PIDS) {
				snprintf(why, sizeof(why), "more than %d hosts in one measurement", CPUWIN_MAX_PIDS);
				goto bad;
			}
			m->host_cpu[m->hosts] = cpu;
			snprintf(m->host_node[m->hosts], CPUWIN_NODE_LEN, "%s", v[5]);
			if (!m->hosts++ || cpu > m->host_max) {
				m->host_max = cpu;
				m->host_max_bound = bound;
			}
		}
	}
	if (ferror(f)) {
		snprintf(why, sizeof(why), "read error");
		goto bad;
	}
	if (lineno == 0) {
		snprintf(why, sizeof(why), "empty: no header line");
		goto bad;
	}
	return 0;
bad:
	cpuwin_table_free(t);
	return fail(err, errlen, "%s:%zu: %s", path, lineno, why);
}

void cpuwin_table_free(struct cpuwin_table *t)
{
	free(t->m);
	*t = (struct cpuwin_table){ 0 };
}
