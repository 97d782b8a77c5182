/*
 * cpuwin_cmd.c — build/cpuwin: the rows of an experiment's cpuwin.csv, each
 * process's CPU inside the timed windows of one inccl_perf run (cpuwin.h).
 *
 *   cpuwin -s SAMPLES -p NODE:ROLE:PID [-p ...] -w FILE=OFFSET_NS [-w ...]
 *
 * SAMPLES is cpusample's file of the run; each -p a process it sampled (a
 * host's QEMU, a switch's incswitch) with its node and role, or the
 * machine's busy time (cpusample -m) as NODE:machine:0; each -w one
 * rank's inccl_perf -X file and the offset of that rank's clock (guest ns -
 * machine ns; a negative number when the guest is behind). Every rank's
 * windows are moved onto the machine's clock by their own offset and joined:
 * a process's CPU is counted over the union of all ranks' timed windows of a
 * size (warm-up left out), once where they overlap.
 *
 * Prints "bytes,calls,node,role,pid,cpu_us,span_us,bound_us" (CPUWIN_CMD_HEADER),
 * one row per size (ascending) and process (in -p order): calls is the timed
 * iterations of that size (the most any rank wrote), cpu_us, span_us and
 * bound_us cpuwin_cpu()'s. Nothing is printed unless every row could be
 * computed: a file that does not parse is "FILE:LINE: reason", a window
 * outside the samples or a PID not sampled its reason; exit 1. Bad
 * arguments: usage, exit 2.
 */
#include "cpuwin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPUWIN_CMD_HEADER "bytes,calls,node,role,pid,cpu_us,span_us,bound_us"
#define MAX_FILES 1024   /* windows files: one per rank; the largest tree planned has 1,024 hosts */
#define MAX_NAME 64      /* a node's name: a topology word (topogen: at most 12) with room */
#define EXIT_DATA 1
#define EXIT_USAGE 2

static const char usage[] = "usage: cpuwin -s SAMPLES -p NODE:ROLE:PID [-p ...] -w FILE=OFFSET_NS [-w ...]\n";

/** One process of -p. */
struct proc {
	char node[MAX_NAME + 1], role[MAX_NAME + 1];
	long pid;
};

/** word_ok() - @s is 1..MAX_NAME of A-Z a-z 0-9 _ . - (a node or role name). */
static int word_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= MAX_NAME && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/**
 * parse_proc() - "NODE:ROLE:PID" @arg into *@p: PID 1..2^31-1, or 0 with ROLE
 * "machine" (and only with it). Return 0, or -1 with the reason on stderr.
 */
static int parse_proc(const char *arg, struct proc *p)
{
	char buf[2 * MAX_NAME + 16], *role, *pid, *end;

	if (strlen(arg) >= sizeof(buf) || !(role = strchr(strcpy(buf, arg), ':')) || !(pid = strchr(role + 1, ':'))) {
		fprintf(stderr, "cpuwin: -p '%.80s': not NODE:ROLE:PID\n", arg);
		return -1;
	}
	*role++ = *pid++ = '\0';
	errno = 0;
	long v = strtol(pid, &end, 10);
	if (!word_ok(buf) || !word_ok(role) || errno || end == pid || *end || *pid < '0' || *pid > '9' || v < 0 ||
	    v > 0x7fffffff || (v == CPUWIN_MACHINE_PID) != !strcmp(role, "machine")) {
		fprintf(stderr, "cpuwin: -p '%.80s': not NODE:ROLE:PID (names of A-Z a-z 0-9 _ . -, a PID 1..2^31-1; "
			"the machine's busy time as NODE:machine:0)\n", arg);
		return -1;
	}
	snprintf(p->node, sizeof(p->node), "%s", buf);
	snprintf(p->role, sizeof(p->role), "%s", role);
	p->pid = v;
	return 0;
}

/**
 * add_windows() - read the windows file and offset of "FILE=OFFSET_NS" @arg
 * (the last '=' splits them) and append its windows, moved onto the
 * machine's clock (start_ns - OFFSET_NS), to @all. Return 0, or -1 (the
 * reason on stderr; EXIT_USAGE in *@code for a bad argument, EXIT_DATA for a
 * file that does not read or a window that leaves the clock's range).
 */
static int add_windows(const char *arg, struct cpuwin_windows *all, int *code)
{
	const char *eq = strrchr(arg, '=');
	char path[4096], *end, err[CPUWIN_ERR_LEN];
	struct cpuwin_windows w;

	*code = EXIT_USAGE;
	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(path)) {
		fprintf(stderr, "cpuwin: -w '%.80s': not FILE=OFFSET_NS\n", arg);
		return -1;
	}
	errno = 0;
	long long off = strtoll(eq + 1, &end, 10);
	if (errno || end == eq + 1 || *end) {
		fprintf(stderr, "cpuwin: -w '%.80s': offset '%.30s' is not a whole number of ns\n", arg, eq + 1);
		return -1;
	}
	snprintf(path, sizeof(path), "%.*s", (int)(eq - arg), arg);
	*code = EXIT_DATA;
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cpuwin: %s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = cpuwin_read_windows(f, path, &w, err, sizeof(err));
	fclose(f);
	if (rc) {
		fprintf(stderr, "cpuwin: %s\n", err);
		return -1;
	}
	for (size_t k = 0; k < w.n; k++) {
		struct cpuwin_window x = w.w[k];
		/* machine ns = guest ns - offset, within int64 (a hostile offset could wrap it) */
		if ((off > 0 && (x.start_ns < INT64_MIN + off)) || (off < 0 && x.end_ns > INT64_MAX + off)) {
			fprintf(stderr, "cpuwin: %s: offset %lld moves rank %d's window %d out of range\n", path, off, x.rank,
				x.iter);
			cpuwin_free_windows(&w);
			return -1;
		}
		x.start_ns -= off;
		x.end_ns -= off;
		if (all->n == all->cap) {
			size_t cap = all->cap ? 2 * all->cap : 64;
			struct cpuwin_window *p = realloc(all->w, cap * sizeof(*p));
			if (!p) {
				fprintf(stderr, "cpuwin: out of memory\n");
				cpuwin_free_windows(&w);
				return -1;
			}
			all->w = p;
			all->cap = cap;
		}
		all->w[all->n++] = x;
	}
	cpuwin_free_windows(&w);
	return 0;
}

/** timed_of() - cpuwin_cpu()'s choice: the timed windows of the size *@arg. */
static int timed_of(const struct cpuwin_window *w, void *arg)
{
	return !w->warmup && w->bytes == *(const uint64_t *)arg;
}

/** calls_of() - the timed windows of size @bytes the busiest rank of @w wrote. */
static int calls_of(const struct cpuwin_windows *w, uint64_t bytes)
{
	int most = 0;

	for (size_t k = 0; k < w->n; k++) {
		int n = 0;
		for (size_t j = 0; j < w->n; j++)
			n += w->w[j].rank == w->w[k].rank && !w->w[j].warmup && w->w[j].bytes == bytes;
		if (n > most)
			most = n;
	}
	return most;
}

/** next_size() - the smallest timed size of @w above @last, 0 when none. */
static uint64_t next_size(const struct cpuwin_windows *w, uint64_t last, int first)
{
	uint64_t next = 0;
	int found = 0;

	for (size_t k = 0; k < w->n; k++)
		if (!w->w[k].warmup && (first || w->w[k].bytes > last) && (!found || w->w[k].bytes < next)) {
			next = w->w[k].bytes;
			found = 1;
		}
	return found ? next : UINT64_MAX;
}

int main(int argc, char **argv)
{
	const char *samples = NULL;
	struct proc procs[CPUWIN_MAX_PIDS];
	int nprocs = 0, nfiles = 0, opt, code = EXIT_DATA;
	struct cpuwin_windows all = { 0 };
	struct cpuwin_samples s;
	char err[CPUWIN_ERR_LEN];
	char *out = NULL;
	size_t outlen = 0;

	while ((opt = getopt(argc, argv, "s:p:w:")) != -1) {
		switch (opt) {
		case 's':
			samples = optarg;
			break;
		case 'p':
			if (nprocs == CPUWIN_MAX_PIDS) {
				fprintf(stderr, "cpuwin: more than %d processes (-p)\n", CPUWIN_MAX_PIDS);
				goto usage_exit;
			}
			if (parse_proc(optarg, &procs[nprocs++]))
				goto usage_exit;
			break;
		case 'w':
			if (nfiles++ == MAX_FILES) {
				fprintf(stderr, "cpuwin: more than %d windows files (-w)\n", MAX_FILES);
				goto usage_exit;
			}
			if (add_windows(optarg, &all, &code)) {
				if (code == EXIT_USAGE)
					goto usage_exit;
				goto fail;
			}
			break;
		default:
			goto usage_exit;
		}
	}
	if (optind < argc || !samples || !nprocs || !nfiles) {
		fprintf(stderr, "cpuwin: %s\n", optind < argc ? "unexpected argument" : !samples ? "-s SAMPLES is required"
						  : !nprocs ? "no process (-p)" : "no windows file (-w)");
		goto usage_exit;
	}
	FILE *f = fopen(samples, "r");
	if (!f) {
		fprintf(stderr, "cpuwin: %s: cannot open: %s\n", samples, strerror(errno));
		goto fail;
	}
	int rc = cpuwin_read_samples(f, samples, &s, err, sizeof(err));
	fclose(f);
	if (rc) {
		fprintf(stderr, "cpuwin: %s\n", err);
		goto fail;
	}
	FILE *o = open_memstream(&out, &outlen); /* printed only once every row is computed */
	if (!o) {
		fprintf(stderr, "cpuwin: out of memory\n");
		goto fail_s;
	}
	fprintf(o, "%s\n", CPUWIN_CMD_HEADER);
	int sizes = 0;
	for (uint64_t b = next_size(&all, 0, 1); b != UINT64_MAX; b = next_size(&all, b, 0), sizes++) {
		int calls = calls_of(&all, b);
		for (int k = 0; k < nprocs; k++) {
			struct cpuwin_result r;
			if (cpuwin_cpu(&s, procs[k].pid, &all, timed_of, &b, 0, &r, err, sizeof(err))) {
				fprintf(stderr, "cpuwin: %s (%s, %s, %llu bytes)\n", err, procs[k].node, procs[k].role,
					(unsigned long long)b);
				fclose(o);
				goto fail_s;
			}
			fprintf(o, "%llu,%d,%s,%s,%ld,%.0f,%.0f,%.0f\n", (unsigned long long)b, calls, procs[k].node,
				procs[k].role, procs[k].pid, r.cpu_us, r.span_us, r.bound_us);
		}
	}
	if (fclose(o)) {
		fprintf(stderr, "cpuwin: out of memory\n");
		goto fail_s;
	}
	if (!sizes) {
		fprintf(stderr, "cpuwin: no timed window in the %d windows file(s)\n", nfiles);
		goto fail_s;
	}
	if (fwrite(out, 1, outlen, stdout) != outlen || fflush(stdout)) {
		fprintf(stderr, "cpuwin: cannot write standard output\n");
		goto fail_s;
	}
	free(out);
	cpuwin_free_samples(&s);
	cpuwin_free_windows(&all);
	return 0;
fail_s:
	free(out);
	cpuwin_free_samples(&s);
fail:
	cpuwin_free_windows(&all);
	return EXIT_DATA;
usage_exit:
	fputs(usage, stderr);
	cpuwin_free_windows(&all);
	return EXIT_USAGE;
}
