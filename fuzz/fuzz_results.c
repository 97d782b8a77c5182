/*
 * fuzz_results.c — libFuzzer target: a stored run's files through the
 * strict readers of analysis/results.c, as increport and `make plots` read
 * every run under results/ (files anyone may have copied or edited there).
 *
 * Input: one byte choosing the reader (0 results.csv, 1 loggp.csv, 2
 * meta.yaml, 3 results.csv then meta.yaml: the rest is split at the first
 * line "---"), then the file's bytes.
 * Properties: a reader that refuses a file says why, as "NAME:LINE: ..." or
 * "NAME: ..."; one that accepts it returns only values its header promises
 * (collective known, nranks >= 1, root < nranks, time > 0, elements * 4 =
 * bytes, rounds 1..RES_MAX_ROUNDS, text without control characters); the
 * LogGP parameters of accepted points are refused with a reason, or give a
 * finite positive prediction of every collective (or -1: no such algorithm).
 */
#include <math.h>

#include "../analysis/loggp.h"
#include "../analysis/results.h"
#include "fuzz.h"

#define NAME "run/file"

static void check_err(int rc, const char *err)
{
	if (rc < 0)
		FZ_CHECK(!strncmp(err, NAME ":", strlen(NAME ":")) && strlen(err) > strlen(NAME ": "));
}

static void check_text(const char *s, size_t cap)
{
	FZ_CHECK(strnlen(s, cap) < cap);
	for (; *s; s++)
		FZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

static void check_meta(const struct res_meta *m)
{
	check_text(m->experiment, sizeof(m->experiment));
	check_text(m->date, sizeof(m->date));
	check_text(m->commit, sizeof(m->commit));
	check_text(m->topology, sizeof(m->topology));
	check_text(m->accelerator, sizeof(m->accelerator));
	check_text(m->status, sizeof(m->status));
	check_text(m->host_cpu, sizeof(m->host_cpu));
	check_text(m->switch_mode, sizeof(m->switch_mode));
	FZ_CHECK(m->rounds >= 0 && m->rounds <= RES_MAX_ROUNDS && m->ncond >= 0 && m->ncond <= RES_MAX_ROUNDS);
	FZ_CHECK(!m->rounds || m->ncond == m->rounds);
	for (int i = 0; i < m->ncond; i++) {
		FZ_CHECK(m->cond[i].round >= 1 && m->cond[i].round <= RES_MAX_ROUNDS);
		check_text(m->cond[i].start, sizeof(m->cond[i].start));
	}
	FZ_CHECK(isfinite(m->ceiling_poll) && m->ceiling_poll >= 0);
}

static void check_table(const struct res_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct res_row *r = &t->rows[i];
		FZ_CHECK(r->coll >= RES_ALLREDUCE && r->coll < RES_NCOLL && r->nranks >= 1 && r->root < r->nranks);
		FZ_CHECK(r->elements < 0 || (uint64_t)r->elements * 4 == r->bytes);
		FZ_CHECK(isfinite(r->time_us) && r->time_us > 0 && r->iters >= 1);
		FZ_CHECK(t->with_rounds ? r->round >= 1 && r->round <= RES_MAX_ROUNDS : r->round == 0);
		FZ_CHECK(r->time_max_us == -1 || (t->with_time_max && isfinite(r->time_max_us) && r->time_max_us > 0 &&
						   r->time_max_us >= r->time_us - 0.011));
		check_text(r->algo, sizeof(r->algo));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[RES_ERR_LEN];
	struct fz f = { data, size };
	unsigned which = fz_u8(&f) % 4;
	size_t n = fz_left(&f), got;
	const char *text = (const char *)fz_take(&f, n, &got);
	size_t split = n;
	FILE *in;
	int rc;

	if (which == 3) { /* results.csv, "---", meta.yaml */
		const char *sep = memmem(text, n, "\n---\n", 5);
		split = sep ? (size_t)(sep - text) + 1 : n;
	}
	if (!(in = fmemopen((void *)text, split ? split : 1, "r")))
		abort();
	if (!split)
		fgetc(in); /* fmemopen() refuses size 0: an empty file */
	if (which == 0 || which == 3) {
		struct res_table t = { 0 };
		struct res_meta m;
		rc = res_parse_csv(in, NAME, &t, err, sizeof(err));
		check_err(rc, err);
		if (rc == 0)
			check_table(&t);
		if (which == 3 && rc == 0) {
			size_t rest = split < n ? n - split - 4 : 0;
			FILE *mf = fmemopen((void *)(text + n - rest), rest ? rest : 1, "r");
			if (!mf)
				abort();
			if (!rest)
				fgetc(mf);
			if (res_parse_meta(mf, NAME, &m, err, sizeof(err)) == 0) {
				check_meta(&m);
				check_err(res_check_rounds(&t, &m, NAME, err, sizeof(err)), err);
			}
			fclose(mf);
		}
		res_table_free(&t);
	} else if (which == 1) {
		struct res_points pts = { 0 };
		struct loggp lg;
		rc = res_parse_loggp(in, NAME, &pts, err, sizeof(err));
		check_err(rc, err);
		if (rc == 0 && loggp_params(pts.p, pts.n, 2, 0, 0, 0, &lg, err, sizeof(err)) == 0) {
			struct loggp_tree tree;
			FZ_CHECK(loggp_tree_parse("1-2-4", &tree) == 0);
			for (int c = 0; c < LOGGP_NCOLL; c++)
				for (int a = LOGGP_INC; a <= LOGGP_RING; a++) {
					struct loggp_pred pr;
					double t = loggp_predict(&lg, &tree, c, a, 1 << 20, 0, &pr);
					/* a prediction is finite and positive, or -1: no such algorithm */
					FZ_CHECK(t == -1 || (isfinite(t) && t > 0));
				}
		}
		res_points_free(&pts);
	} else {
		struct res_meta m;
		rc = res_parse_meta(in, NAME, &m, err, sizeof(err));
		check_err(rc, err);
		if (rc == 0)
			check_meta(&m);
	}
	fclose(in);
	return 0;
}
