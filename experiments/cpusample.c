/*
 * cpusample.c — samples the CPU time of running processes on the lab machine
 * (the hosts' QEMU processes, the switches' incswitch processes), so that
 * the CPU each used inside given time windows (inccl_perf -X) can be computed
 * afterwards (analysis/cpuwin.c).
 *
 *   cpusample [-i MS] [-m] -o FILE [PID...]
 *
 * Every MS milliseconds (default 10, 1..1000) it writes, for each PID still
 * running, one line "time_ns,pid,ticks": CLOCK_REALTIME in ns and the PID's
 * utime + stime from /proc/PID/stat in clock ticks. With -m, also the whole
 * machine's busy time as PID 0 (no process has it): /proc/stat's cpu line,
 * user + system + irq + softirq + steal, summed over the CPUs; niced work
 * and idle left out, as experiments/lib.sh's exp_cpu_busy counts it (so the
 * CPU the rest of the machine took from the lab inside the windows is the
 * machine's less the lab's processes'). FILE starts with
 * "# cpusample clk_tck=T interval_ms=MS" and the column header. It runs until
 * SIGTERM or SIGINT (then flushes FILE and exits 0) or until every PID has
 * exited (exit 0; with -m and no PID only on a signal); after
 * CPUSAMPLE_MAX_SAMPLES samples it stops with a message and exits 1 (the
 * file holds every sample up to then). Bad arguments, a PID
 * that does not exist or FILE that cannot be written: a message, exit 2,
 * FILE not created. On exit it says on stderr how many samples it took and
 * the CPU it used itself.
 *
 * Overhead: each PID's stat file is opened once and re-read with pread()
 * (the kernel regenerates it; an fd of a process that exited reads ESRCH
 * even if the PID is reused); samples are timed with absolute sleeps on
 * CLOCK_MONOTONIC, so they do not drift.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CPUSAMPLE_MAX_PIDS 64            /* a lab has at most a few dozen VMs and switches */
#define CPUSAMPLE_MAX_SAMPLES 1000000    /* 2.8 h at 10 ms; with 64 PIDs about 2 GiB of CSV at most */
#define DEFAULT_INTERVAL_MS 10
#define MAX_INTERVAL_MS 1000
#define STAT_LEN 1024 /* /proc/PID/stat is under 400 bytes after a comm of at most 64; /proc/stat's
			 * first line, "cpu" and 10 counters of at most 20 digits, under 220 */
#define UTIME_FIELD 12 /* utime is field 14 of stat(5); fields after the comm's ')' start at 3: 14 - 3 + 1 */
#define MACHINE_PID 0  /* the machine's series (-m): no process has PID 0 */
#define EXIT_LIMIT 1
#define EXIT_USAGE 2

static const char usage[] = "usage: cpusample [-i MS] [-m] -o FILE [PID...] (at least one PID, or -m)\n";

static volatile sig_atomic_t stop;

/** Signal handler: ask the loop to stop after the current sample. */
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/** One watched process, or the machine (pid MACHINE_PID). */
struct proc {
	long pid;
	int fd; /* its /proc/PID/stat (the machine's: /proc/stat); -1 once it has exited */
};

/**
 * parse_long() - @s, a decimal integer in @min..@max with nothing after it,
 * into *@v. Return 0, or -1 if it is not.
 */
static int parse_long(const char *s, long min, long max, long *v)
{
	char *end;

	errno = 0;
	long x = strtol(s, &end, 10);
	if (errno || end == s || *end || x < min || x > max)
		return -1;
	*v = x;
	return 0;
}

/**
 * read_machine() - the machine's busy ticks from the first @n bytes read of
 * /proc/stat in @buf (room for one more): "cpu  user nice system idle iowait
 * irq softirq steal ...", user + system + irq + softirq + steal into *@ticks
 * (nice and idle left out, iowait is idle). Kernels before 2.6.11 have no
 * steal: then 0. Return 0, or -1 if the line did not parse (said on stderr).
 */
static int read_machine(char *buf, ssize_t n, unsigned long long *ticks)
{
	unsigned long long v[8] = { 0 };

	if (n <= 0)
		goto bad;
	buf[n] = '\0';
	int got = sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			 &v[6], &v[7]);
	if (got < 7)
		goto bad;
	*ticks = v[0] + v[2] + v[5] + v[6] + v[7];
	return 0;
bad:
	fprintf(stderr, "cpusample: /proc/stat: no 'cpu' line of at least 7 counters first\n");
	return -1;
}

/**
 * read_ticks() - utime + stime of @p, in clock ticks, into *@ticks: the text
 * after the last ')' of its stat file (the comm may hold spaces and
 * parentheses), fields 14 and 15; the machine's busy ticks for the machine
 * (read_machine()). Return 0, 1 if the process has exited, or -1 if the file
 * did not parse (said on stderr).
 */
static int read_ticks(struct proc *p, unsigned long long *ticks)
{
	char buf[STAT_LEN];
	ssize_t n = pread(p->fd, buf, sizeof(buf) - 1, 0);

	if (p->pid == MACHINE_PID)
		return read_machine(buf, n, ticks);

	if (n <= 0)
		return 1; /* ESRCH (or an empty file): the process is gone */
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	unsigned long long ut, st;
	if (!s)
		goto bad;
	s++;
	for (int field = 1; field < UTIME_FIELD; field++) { /* skip the fields before utime */
		s += strspn(s, " ");
		s += strcspn(s, " ");
	}
	if (sscanf(s, " %llu %llu", &ut, &st) != 2)
		goto bad;
	*ticks = ut + st;
	return 0;
bad:
	fprintf(stderr, "cpusample: /proc/%ld/stat: no utime and stime after the command name\n", p->pid);
	return -1;
}

/** open_machine() - @p as the machine: /proc/stat opened. Return 0, or -1 with a message. */
static int open_machine(struct proc *p)
{
	p->pid = MACHINE_PID;
	if ((p->fd = open("/proc/stat", O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "cpusample: -m: cannot read /proc/stat: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/** open_proc() - open @p's stat file for pid text @arg. Return 0, or -1 with a message. */
static int open_proc(struct proc *p, const char *arg)
{
	char path[64];

	if (parse_long(arg, 1, 0x7fffffffL, &p->pid)) {
		fprintf(stderr, "cpusample: bad PID '%s' (a positive integer)\n", arg);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/stat", p->pid);
	if ((p->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "cpusample: PID %ld: cannot read %s: %s\n", p->pid, path, strerror(errno));
		return -1;
	}
	return 0;
}

/** now_ns() - @clock in nanoseconds. */
static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * sample() - write one line per running process of @procs (and the
 * machine's) to @out, at CLOCK_REALTIME now; mark those that exited. Return
 * how many processes still run (the machine not counted), or -1 on a stat
 * file that did not parse.
 */
static int sample(struct proc *procs, int n, FILE *out)
{
	int64_t t = now_ns(CLOCK_REALTIME);
	int running = 0;

	for (int k = 0; k < n; k++) {
		unsigned long long ticks;
		if (procs[k].fd < 0)
			continue;
		int rc = read_ticks(&procs[k], &ticks);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			close(procs[k].fd);
			procs[k].fd = -1;
			continue;
		}
		fprintf(out, "%lld,%ld,%llu\n", (long long)t, procs[k].pid, ticks);
		running += procs[k].pid != MACHINE_PID; /* the machine never exits: it alone does not keep the loop */
	}
	return running;
}

/** own_cpu_ms() - the CPU this process has used so far, user and system, in ms. */
static double own_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv)
{
	long interval_ms = DEFAULT_INTERVAL_MS;
	const char *path = NULL;
	struct proc procs[CPUSAMPLE_MAX_PIDS + 1];
	int opt, n = 0, machine = 0;

	while ((opt = getopt(argc, argv, "+i:mo:h")) != -1) {
		switch (opt) {
		case 'i':
			if (parse_long(optarg, 1, MAX_INTERVAL_MS, &interval_ms)) {
				fprintf(stderr, "cpusample: -i: bad interval '%s' (1..%d ms)\n%s", optarg,
					MAX_INTERVAL_MS, usage);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			machine = 1;
			break;
		case 'o':
			path = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!path || !*path || (optind == argc && !machine)) {
		fprintf(stderr, "cpusample: %s\n%s", !path || !*path ? "-o FILE is required" : "no PID given", usage);
		return EXIT_USAGE;
	}
	if (argc - optind > CPUSAMPLE_MAX_PIDS) {
		fprintf(stderr, "cpusample: %d PIDs, at most %d\n", argc - optind, CPUSAMPLE_MAX_PIDS);
		return EXIT_USAGE;
	}
	for (int k = optind; k < argc; k++, n++)
		if (open_proc(&procs[n], argv[k]))
			return EXIT_USAGE;
	if (machine && open_machine(&procs[n++]))
		return EXIT_USAGE;

	long clk_tck = sysconf(_SC_CLK_TCK);
	FILE *out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "cpusample: cannot write %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	fprintf(out, "# cpusample clk_tck=%ld interval_ms=%ld\ntime_ns,pid,ticks\n", clk_tck, interval_ms);

	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: the sleep ends at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	int64_t next = now_ns(CLOCK_MONOTONIC);
	long samples = 0;
	int status = 0, running = n - machine;
	while (!stop && (running > 0 || (machine && n == 1))) {
		if (samples == CPUSAMPLE_MAX_SAMPLES) {
			fprintf(stderr, "cpusample: stopped at the limit of %d samples; %s holds them\n",
				CPUSAMPLE_MAX_SAMPLES, path);
			status = EXIT_LIMIT;
			break;
		}
		if ((running = sample(procs, n, out)) < 0) {
			status = EXIT_LIMIT;
			break;
		}
		samples++;
		next += interval_ms * 1000000;
		struct timespec ts = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
		while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	if (fclose(out)) {
		fprintf(stderr, "cpusample: cannot write %s: %s\n", path, strerror(errno));
		status = EXIT_LIMIT;
	}
	double cpu = own_cpu_ms();
	fprintf(stderr, "cpusample: %ld samples of %d PID(s)%s every %ld ms; own CPU %.1f ms (%.3f ms a sample)\n",
		samples, n - machine, machine ? " and the machine" : "", interval_ms, cpu,
		samples ? cpu / (double)samples : 0.0);
	return status;
}
