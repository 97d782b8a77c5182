/*
 * results.c — strict readers of an experiment run's files (see results.h).
 *
 * results.csv and loggp.csv are plain comma-separated text without quoting,
 * written by the project's own tools; anything else in them is a mistake
 * (a hand edit, a truncated copy, another tool's file) and is refused with
 * the file, the line and the field, so a plot never shows a silent wrong
 * number. meta.yaml is read with libyaml.
 */
#include "results.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define CSV_FIELDS 13
#define CSV_FIELDS_ROUNDS 14
#define CSV_FIELDS_MAX 15 /* the most: RES_CSV_HEADER_ROUNDS_MAX */
#define TIME_ROUNDING 0.0105 /* two times printed with two decimals: each off by at most 0.005 */
#define MAX_LINE 4096

static const char *const coll_names[RES_NCOLL] = { "allreduce", "reduce",   "broadcast", "allgather",
						    "reducescatter", "alltoall", "barrier",   "p2p" };

const char *res_coll_name(enum res_coll c)
{
	return (unsigned)c < RES_NCOLL ? coll_names[c] : "?";
}

int res_coll_parse(const char *s)
{
	for (int i = 0; i < RES_NCOLL; i++)
		if (!strcmp(s, coll_names[i]))
			return i;
	return -1;
}

/*
 * fail() - "NAME:LINE: message" (@line above 0) or "NAME: message" into @err
 * (@len bytes), the message cut to fit; only the prefix (cut) when it alone
 * fills @err.
 * Returns -1, for the readers' error returns.
 */
static int fail(char *err, size_t len, const char *name, int line, const char *fmt, ...)
{
	va_list ap;
	int n = line > 0 ? snprintf(err, len, "%s:%d: ", name, line) : snprintf(err, len, "%s: ", name);

	if (n < 0 || (size_t)n >= len)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A whole decimal number 0..max, nothing else (no sign, no spaces). */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* A finite decimal number >= 0 (no hex, inf or nan). */
static bool parse_real(const char *s, double *out)
{
	char *end;
	double v;

	if (!((*s >= '0' && *s <= '9') || *s == '.') || strpbrk(s, "xXnNiI"))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return false;
	*out = v;
	return true;
}

/* Whether field @s is "-" alone: a value not given (a root, elements, a bandwidth, time_max_us that does not apply). */
static bool is_dash(const char *s)
{
	return s[0] == '-' && s[1] == 0;
}

/* Split @line at commas into at most @max fields; returns the number of fields. */
static int split(char *line, char **fields, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		if (n < max)
			fields[n] = p;
		n++;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = 0;
	}
	return n;
}

/*
 * Read the next meaningful line of @f into @buf (without its end of line);
 * skips empty lines and '#' comments. Returns 1, 0 at the end, -1 on a line
 * of MAX_LINE bytes or more, or one holding a NUL byte (a binary file).
 */
static int next_line(FILE *f, char *buf, int *lineno)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	while ((n = getline(&line, &cap, f)) >= 0) {
		++*lineno;
		if ((size_t)n != strlen(line) || n >= MAX_LINE) {
			rc = -1;
			break;
		}
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (n > 0 && line[0] != '#') {
			memcpy(buf, line, (size_t)n + 1);
			rc = 1;
			break;
		}
	}
	free(line);
	return rc;
}

/* Whether @s is one of @choices (a NULL-terminated list), compared exactly. */
static bool one_of(const char *s, const char *const *choices)
{
	for (; *choices; choices++)
		if (!strcmp(s, *choices))
			return true;
	return false;
}

/* elem_width() - the bytes of an element of dtype @d (a name parse_row() accepted; "-": 4). */
static unsigned elem_width(const char *d)
{
	if (!strcmp(d, "float16") || !strcmp(d, "bfloat16"))
		return 2;
	if (!strcmp(d, "int64") || !strcmp(d, "uint64") || !strcmp(d, "float64"))
		return 8;
	return 4;
}

/* Check and store the first 13 fields @v of one results.csv row (time_max_us: absent, -1). */
static int parse_row(char **v, struct res_row *r, const char *name, int line, char *err, size_t len)
{
	static const char *const dtypes[] = { "int32",    "float32", "uint32",  "int64", "uint64",
					      "float16", "bfloat16", "float64", "-",     NULL };
	static const char *const ops[] = { "sum", "max", "min", "-", NULL };
	uint64_t u;
	int c;

	memset(r, 0, sizeof(*r));
	r->line = line;
	if (!*v[0] || strlen(v[0]) >= sizeof(r->algo) || strspn(v[0], "abcdefghijklmnopqrstuvwxyz"
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(v[0]))
		return fail(err, len, name, line, "algorithm '%s' is not a name (letters, digits, . _ + -)", v[0]);
	strcpy(r->algo, v[0]);
	if ((c = res_coll_parse(v[1])) < 0)
		return fail(err, len, name, line, "collective '%s' is not allreduce, reduce, broadcast, allgather, reducescatter, alltoall, barrier or p2p", v[1]);
	r->coll = (enum res_coll)c;
	if (!one_of(v[2], dtypes))
		return fail(err, len, name, line,
			    "dtype '%s' is not int32, uint32, int64, uint64, float16, bfloat16, float32, float64 or -", v[2]);
	strcpy(r->dtype, v[2]);
	if (!one_of(v[3], ops))
		return fail(err, len, name, line, "op '%s' is not sum, max, min or -", v[3]);
	strcpy(r->op, v[3]);
	if (!parse_uint(v[5], 1 << 20, &u) || u < 1)
		return fail(err, len, name, line, "nranks '%s' is not a whole number >= 1", v[5]);
	r->nranks = (int)u;
	r->root = -1;
	if (!is_dash(v[4])) {
		if (!parse_uint(v[4], 1 << 20, &u) || u >= (uint64_t)r->nranks)
			return fail(err, len, name, line, "root '%s' is not a rank of 0..%d", v[4], r->nranks - 1);
		r->root = (int)u;
	}
	if (!parse_uint(v[6], UINT64_MAX / 2, &r->bytes))
		return fail(err, len, name, line, "bytes '%s' is not a whole number", v[6]);
	if (r->coll != RES_BARRIER && r->bytes == 0)
		return fail(err, len, name, line, "bytes is 0 for %s", v[1]);
	r->elements = -1;
	if (!is_dash(v[7])) {
		if (!parse_uint(v[7], UINT64_MAX / 8, &u))
			return fail(err, len, name, line, "elements '%s' is not a whole number or -", v[7]);
		unsigned w = elem_width(v[2]);
		if (u * w != r->bytes)
			return fail(err, len, name, line, "elements %s does not match bytes %s (%u-byte elements)", v[7],
				    v[6], w);
		r->elements = (int64_t)u;
	}
	if (!parse_uint(v[8], INT32_MAX, &u) || u < 1)
		return fail(err, len, name, line, "iters '%s' is not a whole number >= 1", v[8]);
	r->iters = (int)u;
	if (!parse_real(v[9], &r->time_us) || r->time_us <= 0)
		return fail(err, len, name, line, "time_us '%s' is not a time > 0", v[9]);
	r->algbw = r->busbw = -1;
	if (!is_dash(v[10]) && !parse_real(v[10], &r->algbw))
		return fail(err, len, name, line, "algbw_MBps '%s' is not a number >= 0 or -", v[10]);
	if (!is_dash(v[11]) && !parse_real(v[11], &r->busbw))
		return fail(err, len, name, line, "busbw_MBps '%s' is not a number >= 0 or -", v[11]);
	if (r->coll != RES_BARRIER && r->algbw < 0)
		return fail(err, len, name, line, "algbw_MBps is missing for %s", v[1]);
	if (r->algbw >= 0 && r->bytes > 0) {
		/* bytes / time_us is MB/s; both were printed with two decimals */
		double want = (double)r->bytes / r->time_us;
		if (fabs(r->algbw - want) > 0.01 * want + 0.011)
			return fail(err, len, name, line, "algbw_MBps %s is not bytes / time_us = %.2f", v[10], want);
	}
	if (!parse_uint(v[12], UINT64_MAX / 2, &r->wrong))
		return fail(err, len, name, line, "wrong '%s' is not a whole number", v[12]);
	r->time_max_us = -1; /* absent unless parse_time_max() reads one */
	return 0;
}

/* The round of a row (field 14 of RES_CSV_HEADER_ROUNDS). */
static int parse_round(const char *v, struct res_row *r, const char *name, int line, char *err, size_t len)
{
	uint64_t u;

	if (!parse_uint(v, RES_MAX_ROUNDS, &u) || u < 1)
		return fail(err, len, name, line, "round '%s' is not a whole number 1..%d", v, RES_MAX_ROUNDS);
	r->round = (int)u;
	return 0;
}

/*
 * parse_time_max() - the slowest rank's time @v of row @r (whose time_us is
 * parsed): "-" leaves it absent (-1); else a time > 0 not below time_us by
 * more than TIME_ROUNDING (rank 0 is one of the ranks). Return 0, or -1 with
 * "name:LINE: reason" in @err.
 */
static int parse_time_max(const char *v, struct res_row *r, const char *name, int line, char *err, size_t len)
{
	r->time_max_us = -1;
	if (is_dash(v))
		return 0;
	if (!parse_real(v, &r->time_max_us) || r->time_max_us <= 0) {
		r->time_max_us = -1;
		return fail(err, len, name, line, "time_max_us '%s' is not a time > 0 or -", v);
	}
	if (r->time_max_us < r->time_us - TIME_ROUNDING)
		return fail(err, len, name, line,
			    "time_max_us %s is below time_us %.2f: the slowest rank cannot be faster than rank 0", v,
			    r->time_us);
	return 0;
}

/* Room for one more element of @size in the array *@arr of capacity *@cap holding @n; -1 when out of memory. */
static int grow(void *arr, size_t *cap, size_t n, size_t size)
{
	void **p = arr, *np;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 32;
	if (!(np = realloc(*p, c * size)))
		return -1;
	*p = np;
	*cap = c;
	return 0;
}

/* After the last line: a line too long or a read error is an error. */
static int end_of_input(FILE *f, int got, const char *name, int line, char *err, size_t errlen)
{
	if (got < 0)
		return fail(err, errlen, name, line, "a line longer than %d bytes or with a NUL byte: not a text results file",
			    MAX_LINE - 1);
	if (ferror(f))
		return fail(err, errlen, name, line, "read error: %s", strerror(errno));
	return 0;
}

/*
 * Open @path for reading: NULL with the reason in @err when it cannot be
 * opened or is not a regular file (a directory opens but reads as nothing:
 * "empty" would be the wrong reason).
 */
static FILE *open_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;

	if (!f) {
		fail(err, errlen, path, 0, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) < 0) {
		fail(err, errlen, path, 0, "%s", strerror(errno));
		fclose(f);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(err, errlen, path, 0, "%s", S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
		fclose(f);
		return NULL;
	}
	return f;
}

/* Open @path and read it with the parser of @loggp (loggp.csv) or results.csv. */
static int load(const char *path, bool loggp, void *out, char *err, size_t errlen)
{
	FILE *f = open_file(path, err, errlen);
	int rc;

	if (!f)
		return -1;
	rc = loggp ? res_parse_loggp(f, path, out, err, errlen) : res_parse_csv(f, path, out, err, errlen);
	fclose(f);
	return rc;
}

int res_parse_csv(FILE *f, const char *name, struct res_table *t, char *err, size_t errlen)
{
	char buf[MAX_LINE];
	char *v[CSV_FIELDS_MAX];
	int line = 0, got, nf, want;
	bool rounds, tmax;
	struct res_row r;

	got = next_line(f, buf, &line);
	if (got == 0)
		return fail(err, errlen, name, 0, "empty: no header line");
	rounds = got > 0 && (!strcmp(buf, RES_CSV_HEADER_ROUNDS) || !strcmp(buf, RES_CSV_HEADER_ROUNDS_MAX));
	tmax = got > 0 && (!strcmp(buf, RES_CSV_HEADER_MAX) || !strcmp(buf, RES_CSV_HEADER_ROUNDS_MAX));
	if (!rounds && !tmax && !(got > 0 && !strcmp(buf, RES_CSV_HEADER)))
		return fail(err, errlen, name, line, "header is not '%s' (or the same with ',round', ',time_max_us' or both)",
			    RES_CSV_HEADER);
	want = CSV_FIELDS + rounds + tmax;
	t->with_rounds = rounds;
	t->with_time_max = tmax;
	while ((got = next_line(f, buf, &line)) > 0) {
		if (strchr(buf, '"'))
			return fail(err, errlen, name, line, "quoted fields are not part of this format");
		nf = split(buf, v, want);
		if (nf != want)
			return fail(err, errlen, name, line, "%d fields, not %d", nf, want);
		if (parse_row(v, &r, name, line, err, errlen) < 0 ||
		    (rounds && parse_round(v[CSV_FIELDS], &r, name, line, err, errlen) < 0) ||
		    (tmax && parse_time_max(v[want - 1], &r, name, line, err, errlen) < 0))
			return -1;
		if (grow(&t->rows, &t->cap, t->n, sizeof(*t->rows)) < 0)
			return fail(err, errlen, name, line, "out of memory");
		t->rows[t->n++] = r;
	}
	return end_of_input(f, got, name, line, err, errlen);
}

int res_load_csv(const char *path, struct res_table *t, char *err, size_t errlen)
{
	return load(path, false, t, err, errlen);
}

void res_table_free(struct res_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

int res_parse_loggp(FILE *f, const char *name, struct res_points *pts, char *err, size_t errlen)
{
	char buf[MAX_LINE];
	char *v[4];
	int line = 0, got;
	uint64_t u;

	got = next_line(f, buf, &line);
	if (got == 0)
		return fail(err, errlen, name, 0, "empty: no header line");
	if (got < 0 || strcmp(buf, RES_LOGGP_HEADER))
		return fail(err, errlen, name, line, "header is not '%s'", RES_LOGGP_HEADER);
	while ((got = next_line(f, buf, &line)) > 0) {
		struct res_point p;
		int nf = split(buf, v, 4);

		if (nf != 4)
			return fail(err, errlen, name, line, "%d fields, not 4", nf);
		static const char *const measures[] = { "half_rtt",    "gap",         "cpu_send",         "cpu_recv",
							"cpu_send_batch", "cpu_swap", "cpu_copy",  "cpu_sum",
							"cpu_send_uc", "cpu_recv_uc", "cpu_send_signaled",
							"cpu_waited_send", "cpu_waited_recv", "cpu_pair_send",
							"cpu_pair_recv", "cpu_pair_waited_send", "cpu_pair_waited_recv",
							"intr_pair_send", "intr_pair_recv", "intr_pair_waited_send",
							"intr_pair_waited_recv", "cpu_empty_recv" };
		size_t mi = 0;
		while (mi < sizeof(measures) / sizeof(measures[0]) && strcmp(v[0], measures[mi]))
			mi++;
		if (mi == sizeof(measures) / sizeof(measures[0]))
			return fail(err, errlen, name, line,
				    "measure '%s' is not half_rtt, gap, cpu_send, cpu_recv, cpu_send_batch, cpu_swap, "
				    "cpu_copy, cpu_sum, cpu_send_uc, cpu_recv_uc, cpu_send_signaled, cpu_waited_send, "
				    "cpu_waited_recv, cpu_pair_send, cpu_pair_recv, cpu_pair_waited_send, "
				    "cpu_pair_waited_recv, intr_pair_send, intr_pair_recv, intr_pair_waited_send, "
				    "intr_pair_waited_recv or cpu_empty_recv", v[0]);
		p.measure = (enum res_measure)mi;
		if (!parse_uint(v[1], UINT64_MAX / 2, &u))
			return fail(err, errlen, name, line, "bytes '%s' is not a whole number", v[1]);
		p.bytes = (double)u;
		if (p.measure >= RES_CPU_PAIR_SEND && u != 16384) /* loggp.h LOGGP_RING_PIECE */
			return fail(err, errlen, name, line, "%s at %s B: %s measured at 16384 B (the ring's "
				    "message)", v[0], v[1], p.measure == RES_CPU_EMPTY_RECV ? "the empty packets' stream is" : "o_w's pairs are");
		if (!parse_uint(v[2], INT32_MAX, &u) || u < 1)
			return fail(err, errlen, name, line, "iters '%s' is not a whole number >= 1", v[2]);
		p.iters = (int)u;
		if (p.measure >= RES_CPU_SEND) { /* a difference of two CPU times (or interrupt counts): any sign */
			bool neg = v[3][0] == '-';
			if (!parse_real(v[3] + neg, &p.value_us))
				return fail(err, errlen, name, line, "value_us '%s' is not a number", v[3]);
			if (neg)
				p.value_us = -p.value_us;
		} else if (!parse_real(v[3], &p.value_us) || p.value_us <= 0)
			return fail(err, errlen, name, line, "value_us '%s' is not a time > 0", v[3]);
		if (grow(&pts->p, &pts->cap, pts->n, sizeof(*pts->p)) < 0)
			return fail(err, errlen, name, line, "out of memory");
		pts->p[pts->n++] = p;
	}
	return end_of_input(f, got, name, line, err, errlen);
}

int res_load_loggp(const char *path, struct res_points *pts, char *err, size_t errlen)
{
	return load(path, true, pts, err, errlen);
}

void res_points_free(struct res_points *pts)
{
	free(pts->p);
	memset(pts, 0, sizeof(*pts));
}

/* Copy text @src into @dst of @len bytes (truncated), a control character (below 0x20, DEL) as a space. */
static void copy_text(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < len; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
	dst[i] = 0;
}

/* What meta_set() wants of @key's value, for the message when it refuses one. */
static const char *meta_want(const char *key)
{
	if (!strcmp(key, "simulated"))
		return "true or false";
	if (!strcmp(key, "hypervisors"))
		return "a whole number 1..16";
	return "a number";
}

/* Copy scalar @val of @key into the field of @m it names, if any; -1 when a number (or simulated's boolean) is not one. */
static int meta_set(struct res_meta *m, const char *key, const char *val)
{
	uint64_t u;
	double d;

	static const struct {
		const char *key;
		size_t off, len;
	} text[] = {
#define TEXT(k) { #k, offsetof(struct res_meta, k), sizeof(((struct res_meta *)0)->k) }
		TEXT(experiment), TEXT(date), TEXT(commit), TEXT(topology), TEXT(accelerator), TEXT(status), TEXT(host_cpu),
		TEXT(switch_mode),
#undef TEXT
	};

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		if (!strcmp(key, text[i].key)) {
			copy_text((char *)m + text[i].off, text[i].len, val);
			return 0;
		}
	if (!strcmp(key, "hypervisors")) { /* 1..16 (topogen's limit) */
		if (!parse_uint(val, 16, &u) || u < 1)
			return -1;
		m->hypervisors = (int)u;
	} else if (!strcmp(key, "nranks") || !strcmp(key, "tree_levels") || !strcmp(key, "host_cores")) {
		if (!parse_uint(val, 1 << 20, &u))
			return -1;
		*(!strcmp(key, "nranks") ? &m->nranks : !strcmp(key, "tree_levels") ? &m->tree_levels : &m->host_cores) = (int)u;
	} else if (!strcmp(key, "message")) { /* a number, or "default" (0) */
		if (strcmp(val, "default") && (!parse_uint(val, 64, &u) || u < 1))
			return -1;
		m->message = strcmp(val, "default") ? (int)u : 0;
	} else if (!strcmp(key, "rounds")) {
		if (!parse_uint(val, RES_MAX_ROUNDS, &u) || u < 1)
			return -1;
		m->rounds = (int)u;
	} else if (!strcmp(key, "simulated")) { /* YAML's two booleans as incsim writes them, nothing looser */
		if (strcmp(val, "true") && strcmp(val, "false"))
			return -1;
		m->simulated = !strcmp(val, "true");
	} else if (!strcmp(key, "ceiling_busy_poll_MBps")) {
		if (!parse_real(val, &d))
			return -1;
		m->ceiling_poll = d;
	}
	return 0;
}

/*
 * The first figure of /proc/loadavg's "1min 5min 15min" in @s (exactly three
 * numbers 0..1e6, one space apart, nothing else), -1 for "unknown"; false
 * when neither.
 */
static bool parse_load(const char *s, double *out)
{
	char fig[32];
	double v;

	if (!strcmp(s, "unknown")) {
		*out = -1;
		return true;
	}
	for (int i = 0; i < 3; i++) {
		size_t n = strcspn(s, " ");
		if (n == 0 || n >= sizeof(fig))
			return false;
		memcpy(fig, s, n);
		fig[n] = 0;
		if (!parse_real(fig, &v) || v >= 1e6)
			return false;
		if (i == 0)
			*out = v;
		s += n;
		if (i < 2 && *s++ != ' ')
			return false;
	}
	return *s == 0;
}

/* One item of round_conditions (@node, a mapping) into @c; -1 with the reason in @err. */
static int meta_round(yaml_document_t *doc, yaml_node_t *node, struct res_round *c, const char *path, char *err, size_t errlen)
{
	uint64_t u;

	memset(c, 0, sizeof(*c));
	c->load_before = c->load_after = c->steal_pct = -1;
	c->line = (int)node->start_mark.line + 1;
	if (node->type != YAML_MAPPING_NODE)
		return fail(err, errlen, path, (int)node->start_mark.line + 1, "round_conditions: an item is not a mapping");
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key), *v = yaml_document_get_node(doc, p->value);
		const char *key, *val;
		bool ok = true;

		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE)
			return fail(err, errlen, path, (int)node->start_mark.line + 1, "round_conditions: an item holds more than key: value");
		key = (const char *)k->data.scalar.value;
		val = (const char *)v->data.scalar.value;
		if (!strcmp(key, "round"))
			ok = parse_uint(val, RES_MAX_ROUNDS, &u) && u >= 1 && (c->round = (int)u);
		else if (!strcmp(key, "start"))
			copy_text(c->start, sizeof(c->start), val);
		else if (!strcmp(key, "loadavg_before"))
			ok = parse_load(val, &c->load_before);
		else if (!strcmp(key, "loadavg_after"))
			ok = parse_load(val, &c->load_after);
		else if (!strcmp(key, "steal_pct"))
			ok = parse_real(val, &c->steal_pct) && c->steal_pct <= 100;
		if (!ok)
			return fail(err, errlen, path, (int)v->start_mark.line + 1, "round_conditions: %s '%.60s' is not what it should be", key, val);
	}
	if (!c->round)
		return fail(err, errlen, path, (int)node->start_mark.line + 1, "round_conditions: an item without its round");
	return 0;
}

/* meta.yaml's round_conditions (@v, a sequence) into @m; -1 with the reason in @err. */
static int meta_rounds(yaml_document_t *doc, yaml_node_t *v, struct res_meta *m, const char *path, char *err, size_t errlen)
{
	if (v->type != YAML_SEQUENCE_NODE)
		return fail(err, errlen, path, (int)v->start_mark.line + 1, "round_conditions is not a list");
	m->ncond = 0;
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
		yaml_node_t *item = yaml_document_get_node(doc, *i);

		if (m->ncond == RES_MAX_ROUNDS)
			return fail(err, errlen, path, (int)v->start_mark.line + 1, "round_conditions: more than %d rounds", RES_MAX_ROUNDS);
		if (!item || meta_round(doc, item, &m->cond[m->ncond], path, err, errlen) < 0)
			return item ? -1 : fail(err, errlen, path, 0, "round_conditions: a missing item");
		for (int k = 0; k < m->ncond; k++)
			if (m->cond[k].round == m->cond[m->ncond].round)
				return fail(err, errlen, path, m->cond[m->ncond].line, "round_conditions: round %d is listed twice (also at line %d)",
					    m->cond[k].round, m->cond[k].line);
		m->ncond++;
	}
	return 0;
}

int res_load_meta(const char *path, struct res_meta *m, char *err, size_t errlen)
{
	FILE *f = open_file(path, err, errlen);
	int rc;

	if (!f) {
		memset(m, 0, sizeof(*m));
		return -1;
	}
	rc = res_parse_meta(f, path, m, err, errlen);
	fclose(f);
	return rc;
}

int res_parse_meta(FILE *f, const char *path, struct res_meta *m, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc = -1, rounds_line = 0, cond_line = 0;

	memset(m, 0, sizeof(*m));
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		fail(err, errlen, path, (int)parser.problem_mark.line + 1, "not YAML: %s",
		     parser.problem ? parser.problem : "parse error");
		yaml_parser_delete(&parser);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		fail(err, errlen, path, 0, "the top level is not a mapping of keys");
		goto out;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		if (k && v && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, "round_conditions")) {
			if (meta_rounds(&doc, v, m, path, err, errlen) < 0)
				goto out;
			cond_line = (int)k->start_mark.line + 1;
			continue;
		}
		if (k && v && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, "rounds"))
			rounds_line = (int)k->start_mark.line + 1;
		if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
		    meta_set(m, (const char *)k->data.scalar.value, (const char *)v->data.scalar.value) < 0) {
			fail(err, errlen, path, (int)v->start_mark.line + 1, "%s '%s' is not %s", k->data.scalar.value,
			     v->data.scalar.value, meta_want((const char *)k->data.scalar.value));
			goto out;
		}
	}
	/* the rounds and their conditions must tell the same story */
	if (m->rounds && !cond_line) {
		fail(err, errlen, path, rounds_line, "rounds is %d but there is no round_conditions", m->rounds);
		goto out;
	}
	if (m->rounds && m->ncond != m->rounds) {
		fail(err, errlen, path, cond_line, "round_conditions has %d item(s) but rounds is %d", m->ncond, m->rounds);
		goto out;
	}
	for (int i = 0; m->rounds && i < m->ncond; i++)
		if (m->cond[i].round > m->rounds) {
			fail(err, errlen, path, m->cond[i].line, "round_conditions: round %d, but rounds is %d", m->cond[i].round,
			     m->rounds);
			goto out;
		}
	rc = 0;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int res_check_rounds(const struct res_table *t, const struct res_meta *m, const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; m->rounds && i < t->n; i++)
		if (t->rows[i].round > m->rounds)
			return fail(err, errlen, name, t->rows[i].line, "round %d, but meta.yaml says rounds: %d", t->rows[i].round,
				    m->rounds);
	return 0;
}
