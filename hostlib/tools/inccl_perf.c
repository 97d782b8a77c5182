/*
 * inccl_perf — time a libinccl collective over a range of sizes and verify
 * every result, in the spirit of nccl-tests' all_reduce_perf.
 *
 *   inccl_perf -C allreduce -d float32 -b 1K -e 512M -f 2 -r RANK -N NRANKS
 *   inccl_perf -h          (every option; the parsing lives in perf_opts.c)
 *
 * Every rank runs the same sweep. For each size: -w warm-up iterations, then
 * -n timed ones. Before each iteration the buffer (send = receive buffer: in
 * place, so 2 GiB fit a host with 3 GiB) is refilled with this rank's input
 * and the ranks meet at a barrier; only the collective itself is timed, and
 * the ranks meet at another barrier after it (iterate()).
 * After every iteration, warm-up included, each rank checks its buffer
 * against what it computes itself from the deterministic inputs of all
 * ranks (reduce non-roots: still their own input), so one wrong result in
 * any iteration counts. AllGather, ReduceScatter and AllToAll run in place
 * as nccl defines it, their sizes the whole buffer (nccl-tests' way).
 * Barrier moves no data: after its iterations a
 * verification round has rank NRANKS-1 enter a barrier -D ms late, and
 * every other rank that leaves it before half of that counts as one wrong
 * (verify_barrier()). Per size, one more inccl_allreduce (int32 SUM, see
 * perf_tally_*) adds up every rank's wrong count — the library offers
 * nothing else to combine numbers across ranks; every rank says a non-zero
 * total on stderr. Then one inccl_allreduce (float64 MAX) finds the slowest
 * rank's mean time (time_max_us; time_us stays the reporting rank's own).
 * Rank 0 (every rank with -v) reports one line per size.
 *
 * Exit status: 0 if every call succeeded and no element was wrong on any
 * rank, 1 a wrong element or a call that failed after the bootstrap, 2 for
 * bad arguments, 3 could not start: allocation, the report file or the
 * bootstrap (group, communicator) failed, no collective ran
 * (experiments/lib.sh tells a baseline that could not start by it).
 */
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_ref.h"
#include "inccl.h"
#include "perf_opts.h"

_Static_assert(PERF_BARRIER_DELAY_MS == CREF_BARRIER_DELAY_MS, "inccl_perf and inccl_check: one default delay");

#define PROGRESS_BYTES ((size_t)64 << 20) /* sizes from here up print their progress on stderr */
#define NOT_A_RANK (-1)                   /* broadcast non-roots start with this "rank's" input */
#define EXIT_NOT_STARTED 3                /* prepare() or bootstrap() failed: no collective ran */

/** One run of the tool: options, library handles, the buffer and the report. */
struct bench {
	const struct perf_opts *o;
	inccl_group_t *group;
	inccl_comm_t *comm;
	void *buf;   /* holds the largest size; NULL for barrier */
	FILE *out;   /* the report; NULL on a quiet rank */
	FILE *windows; /* -X: the windows file, every rank; NULL without -X */
	int talk;    /* rank 0, or -v: report and show progress */
};

/** Monotonic time in microseconds. */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/** CLOCK_REALTIME in ns: the clock of the windows file (-X), comparable with other processes' samples. */
static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** The name of a libinccl status. */
static const char *status_name(int rc)
{
	switch (rc) {
	case INCCL_EINVAL: return "EINVAL";
	case INCCL_ENODEV: return "ENODEV";
	case INCCL_ENOMEM: return "ENOMEM";
	case INCCL_EIO: return "EIO";
	case INCCL_ETIMEDOUT: return "ETIMEDOUT";
	case INCCL_ECONN: return "ECONN";
	case INCCL_EREFUSED: return "EREFUSED";
	case INCCL_EBUSY: return "EBUSY";
	default: return "unknown status";
	}
}

/** Say on stderr that library call @what returned @rc, and why. Return -1. */
static int call_failed(const struct bench *b, const char *what, int rc, const char *why)
{
	fprintf(stderr, "inccl_perf: rank %d: %s failed: %d (%s): %s\n", b->o->rank, what, rc, status_name(rc),
		why && *why ? why : "no reason given");
	return -1;
}

/** Say on stderr that the collective on @bytes failed with @rc. Return -1. */
static int collective_failed(const struct bench *b, size_t bytes, int rc)
{
	char what[96], size[32];

	snprintf(what, sizeof(what), "%s of %s", perf_coll_name(b->o->coll), perf_format_size(bytes, size, sizeof(size)));
	return call_failed(b, what, rc, inccl_errmsg(b->comm));
}

/** Open the windows file of -X for appending (every rank); write its header if it is empty. Return 0 or -1. */
static int open_windows(struct bench *b)
{
	const struct perf_opts *o = b->o;

	if (!o->windows_path)
		return 0;
	if (!(b->windows = fopen(o->windows_path, "a")) || fseek(b->windows, 0, SEEK_END) ||
	    (ftell(b->windows) == 0 && fprintf(b->windows, PERF_WINDOWS_HEADER "\n") < 0) || fflush(b->windows)) {
		fprintf(stderr, "inccl_perf: rank %d: cannot append to %s: ", o->rank, o->windows_path);
		perror(NULL);
		return -1;
	}
	return 0;
}

/** Allocate the buffer for the largest size, open the windows file (-X) and the report (talking ranks only). */
static int prepare(struct bench *b, size_t largest)
{
	const struct perf_opts *o = b->o;
	char size[32];

	if (o->coll != PERF_BARRIER && !(b->buf = malloc(largest))) {
		fprintf(stderr, "inccl_perf: rank %d: cannot allocate %s for the largest size\n", o->rank,
			perf_format_size(largest, size, sizeof(size)));
		return -1;
	}
	if (open_windows(b))
		return -1;
	if (!b->talk)
		return 0;
	b->out = o->out_path ? fopen(o->out_path, "w") : stdout;
	if (!b->out) {
		fprintf(stderr, "inccl_perf: rank %d: cannot write %s: ", o->rank, o->out_path);
		perror(NULL);
		return -1;
	}
	return 0;
}

/** Join the group and build the communicator; check it agrees on rank and size. */
static int bootstrap(struct bench *b)
{
	const struct perf_opts *o = b->o;
	struct inccl_group_opts gopts = { .master = o->master, .controller = o->controller, .timeout_ms = o->timeout_ms };
	struct inccl_comm_opts copts = { .window = o->window, .timeout_ms = o->comm_timeout_ms,
					 .algorithm = (int)o->algorithm, .message = o->message };
	int rc;

	if ((rc = inccl_group_create(&gopts, o->rank, o->nranks, &b->group)))
		return call_failed(b, "inccl_group_create", rc, inccl_last_error());
	if ((rc = inccl_comm_init(b->group, &copts, &b->comm)))
		return call_failed(b, "inccl_comm_init", rc, inccl_last_error());
	if (inccl_comm_rank(b->comm) != o->rank || inccl_comm_size(b->comm) != o->nranks) {
		fprintf(stderr, "inccl_perf: rank %d: the communicator is rank %d of %d, not %d of %d\n", o->rank,
			inccl_comm_rank(b->comm), inccl_comm_size(b->comm), o->rank, o->nranks);
		return -1;
	}
	if (o->verbose)
		fprintf(stderr, "inccl_perf: rank %d of %d: group %d, communicator ready\n", o->rank, o->nranks,
			inccl_group_id(b->group));
	return 0;
}

/** Release the communicator, the group and the buffer; close the report. Return -1 if it was not written. */
static int cleanup(struct bench *b)
{
	int bad = 0;

	inccl_comm_destroy(b->comm);
	inccl_group_destroy(b->group);
	free(b->buf);
	if (b->windows && fclose(b->windows)) {
		fprintf(stderr, "inccl_perf: rank %d: cannot write the windows to %s\n", b->o->rank, b->o->windows_path);
		bad = 1;
	}
	if (b->out) {
		bad = ferror(b->out);
		bad |= b->out == stdout ? fflush(b->out) : fclose(b->out);
		if (bad)
			fprintf(stderr, "inccl_perf: rank %d: cannot write the report to %s\n", b->o->rank,
				b->o->out_path ? b->o->out_path : "stdout");
	}
	return bad ? -1 : 0;
}

/** On a talking rank, show on stderr how far a slow size got ("size 512 MiB: iteration 3/5"). */
static void progress(const struct bench *b, size_t bytes, const char *phase, int k, int n)
{
	char size[32];

	if (!b->talk || bytes < PROGRESS_BYTES)
		return;
	if (n)
		fprintf(stderr, "size %s: %s %d/%d\n", perf_format_size(bytes, size, sizeof(size)), phase, k, n);
	else
		fprintf(stderr, "size %s: %s\n", perf_format_size(bytes, size, sizeof(size)), phase);
}

/** Put this rank's input of @count elements into the buffer (broadcast non-roots: data to be overwritten). */
static void refill(struct bench *b, size_t count)
{
	const struct perf_opts *o = b->o;

	if (o->coll == PERF_BARRIER)
		return;
	if (perf_coll_blocks(o->coll))
		perf_fill_blocks(o, b->buf, count);
	else
		perf_fill(b->buf, count, o->dtype, o->coll == PERF_BROADCAST && o->rank != o->root ? NOT_A_RANK : o->rank);
}

/** The block of this rank in a buffer of @count elements (allgather's send, reducescatter's result). */
static uint8_t *own_block(const struct bench *b, size_t count)
{
	return (uint8_t *)b->buf + (size_t)b->o->rank * (count / (size_t)b->o->nranks) * perf_dtype_size(b->o->dtype);
}

/** One call of the collective on @count elements (all blocks), in place (nccl's conventions). */
static int collective(struct bench *b, size_t count)
{
	const struct perf_opts *o = b->o;
	size_t blk = count / (size_t)o->nranks;

	switch (o->coll) {
	case PERF_ALLGATHER: return inccl_allgather(b->comm, own_block(b, count), b->buf, blk, o->dtype);
	case PERF_REDUCESCATTER: return inccl_reducescatter(b->comm, b->buf, own_block(b, count), blk, o->dtype, o->op);
	case PERF_ALLTOALL: return inccl_alltoall(b->comm, b->buf, b->buf, blk, o->dtype);
	case PERF_ALLREDUCE: return inccl_allreduce(b->comm, b->buf, b->buf, count, o->dtype, o->op);
	case PERF_REDUCE: return inccl_reduce(b->comm, b->buf, b->buf, count, o->dtype, o->op, o->root);
	case PERF_BROADCAST: return inccl_broadcast(b->comm, b->buf, count, o->dtype, o->root);
	default: return inccl_barrier(b->comm);
	}
}

/**
 * read_count() - the first whole number in file @path after the word @key
 * (NULL: the file's first), e.g. /proc/stat's "intr N ..." or a hw_counters
 * file's "N". Return it, or -1 when the file cannot be read or holds no such
 * number. Reads at most 4 KiB of a line (the intr line of /proc/stat lists
 * every IRQ after its total; only the total is wanted).
 */
static int64_t read_count(const char *path, const char *key)
{
	char line[4096];
	int64_t v = -1;
	size_t klen = key ? strlen(key) : 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (key && (strncmp(line, key, klen) || line[klen] != ' '))
			continue;
		if (sscanf(line + klen, "%" SCNd64, &v) != 1 || v < 0)
			v = -1;
		break;
	}
	fclose(f);
	return v;
}

/**
 * machine_counts() - what this machine has counted so far for the windows
 * file (PERF_WINDOWS_HEADER): its interrupts into *@intr and the packets its
 * RDMA devices sent and received into *@pkts (each device's port 1
 * hw_counters sent_pkts + rcvd_pkts, summed over devices), each -1 where it
 * cannot be read. Called just outside the timed span, before and after.
 */
static void machine_counts(int64_t *intr, int64_t *pkts)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;

	*intr = read_count("/proc/stat", "intr");
	*pkts = -1;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[512];
		int64_t s, r;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts", e->d_name);
		s = read_count(path, NULL);
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_pkts", e->d_name);
		r = read_count(path, NULL);
		if (s >= 0 && r >= 0)
			*pkts = (*pkts < 0 ? 0 : *pkts) + s + r;
	}
	closedir(d);
}

/** since() - the count from @before to @after, -1 when either is unknown or it went backwards. */
static int64_t since(int64_t before, int64_t after) { return before < 0 || after < before ? -1 : after - before; }

/**
 * One iteration on @bytes: refill, barrier, then the timed collective, whose
 * time is added to *@elapsed_us; with -X, then its window (iteration @k,
 * @warmup or timed) is appended to the windows file, the real-time clock read
 * just outside the timed span and the machine's counters just outside that
 * (machine_counts(): reading them is not timed). Then the ranks meet at a
 * barrier again, so that none checks its result or refills while another is
 * still inside its timed call: where the ranks share the machine's cores (a
 * lab under emulation), that work would take cores from the slower ranks'
 * calls and time it (a 1 MiB Reduce of 2026-11-30 on 1-2-4: the ranks' calls
 * ended up to 250 ms apart, a rank's own call lasting 34 - 239 ms).
 */
static int iterate(struct bench *b, size_t bytes, int warmup, int k, double *elapsed_us)
{
	int rc;

	refill(b, bytes / perf_dtype_size(b->o->dtype));
	if ((rc = inccl_barrier(b->comm)))
		return call_failed(b, "the barrier before an iteration", rc, inccl_errmsg(b->comm));
	int64_t intr0 = -1, pkts0 = -1, intr1 = -1, pkts1 = -1;
	if (b->windows)
		machine_counts(&intr0, &pkts0);
	int64_t start_ns = b->windows ? realtime_ns() : 0;
	double t0 = now_us();
	rc = collective(b, bytes / perf_dtype_size(b->o->dtype));
	*elapsed_us += now_us() - t0;
	int64_t end_ns = b->windows ? realtime_ns() : 0;
	if (b->windows)
		machine_counts(&intr1, &pkts1);
	if (rc)
		return collective_failed(b, bytes, rc);
	if (b->windows && perf_window_line(b->windows, b->o->rank, warmup, bytes, k, start_ns, end_ns,
					   since(intr0, intr1), since(pkts0, pkts1))) {
		fprintf(stderr, "inccl_perf: rank %d: cannot write the windows to %s\n", b->o->rank, b->o->windows_path);
		return -1;
	}
	if ((rc = inccl_barrier(b->comm)))
		return call_failed(b, "the barrier after an iteration", rc, inccl_errmsg(b->comm));
	return 0;
}

/** Wrong elements in this rank's buffer after an iteration on @count elements. */
static size_t count_wrong(const struct bench *b, size_t count)
{
	const struct perf_opts *o = b->o;

	switch (o->coll) {
	case PERF_ALLREDUCE:
		return perf_count_wrong_reduced(b->buf, count, o->dtype, o->op, o->nranks);
	case PERF_REDUCE: /* non-roots receive nothing: their buffer must still hold their input */
		return o->rank == o->root ? perf_count_wrong_reduced(b->buf, count, o->dtype, o->op, o->nranks)
					  : perf_count_wrong_input(b->buf, count, o->dtype, o->rank);
	case PERF_BROADCAST:
		return perf_count_wrong_input(b->buf, count, o->dtype, o->root);
	case PERF_ALLGATHER:
	case PERF_ALLTOALL:
		return perf_count_wrong_blocks(o, b->buf, count);
	case PERF_REDUCESCATTER: /* only this rank's block is the result */
		return perf_count_wrong_blocks(o, own_block(b, count), count);
	default:
		return 0;
	}
}

/** Sum every rank's @local wrong count into *@total: one int32 allreduce, checked for consistency. */
static int tally(struct bench *b, size_t local, uint64_t *total)
{
	int32_t v[PERF_TALLY_LEN];
	int rc;

	perf_tally_encode(local, b->o->rank, v);
	if ((rc = inccl_allreduce(b->comm, v, v, PERF_TALLY_LEN, INCCL_INT32, INCCL_SUM)))
		return call_failed(b, "the allreduce of the wrong counts", rc, inccl_errmsg(b->comm));
	if (perf_tally_decode(v, b->o->nranks, total)) {
		fprintf(stderr,
			"inccl_perf: rank %d: the allreduce of the wrong counts is inconsistent "
			"(%d %d %d ranks %d rank sum %d): the number of wrong elements is unknown\n",
			b->o->rank, v[0], v[1], v[2], v[3], v[4]);
		return -1;
	}
	return 0;
}

/**
 * slowest() - the largest over the ranks of each rank's @mean_us into
 * *@max_us: one inccl_allreduce (float64 MAX) on the communicator, untimed,
 * after the wrong counts. Return 0, or -1 if the call failed or its result is
 * not a finite time at least this rank's own (said on stderr).
 */
static int slowest(struct bench *b, double mean_us, double *max_us)
{
	double v = mean_us;
	int rc;

	if ((rc = inccl_allreduce(b->comm, &v, &v, 1, INCCL_FLOAT64, INCCL_MAX)))
		return call_failed(b, "the allreduce of the times", rc, inccl_errmsg(b->comm));
	if (!(v >= mean_us) || v > 1e15) { /* NaN, below its own, or beyond any run (31 years) */
		fprintf(stderr, "inccl_perf: rank %d: the allreduce of the times gave %g us, not a time >= this rank's %g us\n",
			b->o->rank, v, mean_us);
		return -1;
	}
	*max_us = v;
	return 0;
}

/**
 * Iteration @k of @n of @phase ("warm-up", "iteration") on @bytes, its time
 * added to *@elapsed_us; then this rank's result is checked and its wrong
 * elements (said on stderr) added to *@wrong. Return 0, or -1 if a call failed.
 */
static int checked_iteration(struct bench *b, size_t bytes, const char *phase, int k, int n, double *elapsed_us,
			     size_t *wrong)
{
	size_t count = bytes / perf_dtype_size(b->o->dtype), w;

	progress(b, bytes, phase, k, n);
	if (iterate(b, bytes, !strcmp(phase, "warm-up"), k, elapsed_us))
		return -1;
	if ((w = count_wrong(b, count))) {
		fprintf(stderr, "inccl_perf: rank %d: %s of %zu bytes, %s %d/%d: %zu of %zu elements wrong\n",
			b->o->rank, perf_coll_name(b->o->coll), bytes, phase, k, n, w, count);
		*wrong += w;
	}
	return 0;
}

/*
 * verify_barrier() - the barrier's verification round (-D; 0: none): one
 * barrier lines the ranks up, then rank nranks-1 sleeps the delay before it
 * enters the next; every other rank times that barrier and must have waited
 * at least half the delay — the rest is headroom for the skew with which the
 * ranks left the first one (check_ref.h). A barrier that releases ranks
 * early lets them go within a round trip. Return: 0, with *@early 1 if this
 * rank left too early (said on stderr); or -1 if a barrier failed.
 */
static int verify_barrier(struct bench *b, size_t *early)
{
	const struct perf_opts *o = b->o;
	int late = o->nranks - 1, delay = o->barrier_delay_ms, rc;
	double t0, waited;

	*early = 0;
	if (delay == 0)
		return 0;
	if ((rc = inccl_barrier(b->comm)))
		return call_failed(b, "the barrier that starts the verification round", rc, inccl_errmsg(b->comm));
	if (o->rank == late)
		cref_sleep_ms(delay);
	t0 = cref_now_ms();
	if ((rc = inccl_barrier(b->comm)))
		return call_failed(b, "the barrier of the verification round", rc, inccl_errmsg(b->comm));
	waited = cref_now_ms() - t0;
	if (o->rank != late && cref_barrier_left_early(waited, delay)) {
		fprintf(stderr,
			"inccl_perf: rank %d: barrier: left after %.1f ms, before rank %d entered (it was %d ms late)\n",
			o->rank, waited, late, delay);
		*early = 1;
	} else if (o->verbose) {
		fprintf(stderr, "inccl_perf: rank %d: barrier: %s %.1f ms (rank %d was %d ms late)\n", o->rank,
			o->rank == late ? "this rank entered late and left after" : "waited", waited, late, delay);
	}
	return 0;
}

/** Run one size: warm-up and timed iterations, each checked (barrier: the verification round), tally, slowest(); fill @row. */
static int run_size(struct bench *b, size_t bytes, struct perf_row *row)
{
	const struct perf_opts *o = b->o;
	double elapsed_us = 0, warmup_us = 0, max_us = 0;
	size_t count = bytes / perf_dtype_size(b->o->dtype), local = 0, early;
	uint64_t total;

	for (int k = 1; k <= o->warmup; k++)
		if (checked_iteration(b, bytes, "warm-up", k, o->warmup, &warmup_us, &local))
			return -1;
	for (int k = 1; k <= o->iters; k++)
		if (checked_iteration(b, bytes, "iteration", k, o->iters, &elapsed_us, &local))
			return -1;
	if (o->coll == PERF_BARRIER) {
		if (verify_barrier(b, &early))
			return -1;
		local += early;
	}
	if (tally(b, local, &total) || slowest(b, elapsed_us / o->iters, &max_us))
		return -1;
	*row = (struct perf_row){ .bytes = bytes, .elements = count, .iters = o->iters,
				  .time_us = elapsed_us / o->iters, .wrong = total, .time_max_us = max_us };
	return 0;
}

/** Bootstrap, run every size of @sizes, report. Return the exit status. */
static int run(struct bench *b, const size_t *sizes, size_t nsizes)
{
	struct perf_report rep;
	uint64_t wrong = 0;
	size_t k;

	if (prepare(b, sizes[nsizes - 1]) || bootstrap(b))
		return EXIT_NOT_STARTED;
	if (b->out)
		perf_report_begin(&rep, b->out, b->o);
	for (k = 0; k < nsizes; k++) {
		struct perf_row row;
		if (run_size(b, sizes[k], &row))
			break;
		if (b->out)
			perf_report_row(&rep, &row);
		wrong += row.wrong;
	}
	if (b->out)
		perf_report_end(&rep, k == nsizes);
	if (wrong && b->o->coll == PERF_BARRIER)
		fprintf(stderr, "inccl_perf: rank %d: barrier: %llu rank(s) left before the late rank entered\n",
			b->o->rank, (unsigned long long)wrong);
	else if (wrong)
		fprintf(stderr, "inccl_perf: rank %d: %llu wrong elements over all ranks\n", b->o->rank,
			(unsigned long long)wrong);
	return k == nsizes && !wrong ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	char err[256];
	size_t sizes[PERF_MAX_SIZES];

	switch (perf_parse_args(argc, argv, &o, err, sizeof(err))) {
	case PERF_PARSE_HELP:
		printf("%s\n%s", perf_usage, perf_help);
		return 0;
	case PERF_PARSE_ERROR:
		fprintf(stderr, "inccl_perf: %s\n%s", err, perf_usage);
		return 2;
	default:
		break;
	}
	signal(SIGPIPE, SIG_IGN); /* a closed pipe or socket is an error to report, not a crash */
	size_t nsizes = perf_sweep(&o, sizes);
	struct bench b = { .o = &o, .talk = o.rank == 0 || o.verbose };
	int status = run(&b, sizes, nsizes);
	if (cleanup(&b))
		status = 1;
	return status;
}
