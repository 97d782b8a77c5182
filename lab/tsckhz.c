/*
 * tsckhz.c — print this machine's TSC frequency in kHz, for the guests' kernel
 * command line (tsc_early_khz=).
 *
 * Under QEMU TCG a guest's TSC is this machine's (QEMU reads the host's TSC
 * for the guest's RDTSC), but the guest kernel measures its frequency at boot
 * against emulated timers. On a loaded machine that measurement can go wrong
 * by a factor: a lab guest booted with "tsc: PIT calibration deviates from
 * HPET: 744642 2594141", believed its TSC ran at 745 MHz and kept a clock
 * 3.49 times too fast, so every time measured on it was wrong. Told the
 * frequency, the kernel skips that measurement and only refines the value
 * against its HPET (within 1 %).
 *
 * Measures TSC ticks against CLOCK_MONOTONIC_RAW over MEASURE_NS. Each end is
 * a TSC read on either side of the clock read, the tightest of TRIES pairs,
 * so a preemption between the reads is not counted. Exit 0 and the
 * frequency; 1 with a message on a CPU without a usable TSC or when the two
 * measurements disagree by more than AGREE_PPM (a machine too busy to tell).
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>

#define MEASURE_NS 100000000ll /* 100 ms: a few microseconds of read skew is 0.005 % of it */
#define TRIES 64               /* clock reads bracketed per end, the tightest kept */
#define AGREE_PPM 200          /* two measurements in a row agree within this, or the result is refused */

static int64_t mono_raw_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* stamp() - a (TSC, ns) pair taken as close together as TRIES attempts allow. */
static void stamp(uint64_t *tsc, int64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TRIES; i++) {
		uint64_t a = __rdtsc();
		int64_t t = mono_raw_ns();
		uint64_t b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
}

/* measure() - TSC kHz over MEASURE_NS of CLOCK_MONOTONIC_RAW. */
static double measure(void)
{
	uint64_t t0, t1;
	int64_t n0, n1;
	struct timespec d = { 0, MEASURE_NS };

	stamp(&t0, &n0);
	nanosleep(&d, NULL);
	stamp(&t1, &n1);
	return (double)(t1 - t0) / (double)(n1 - n0) * 1e6;
}

int main(void)
{
	unsigned a, b, c, d;
	double k1, k2;

	/* CPUID 0x80000007 EDX bit 8: an invariant TSC, one rate whatever the core's clock */
	if (__get_cpuid(0x80000007, &a, &b, &c, &d) == 0 || !(d & (1u << 8))) {
		fprintf(stderr, "tsckhz: this CPU has no invariant TSC: its rate is not one number\n");
		return 1;
	}
	k1 = measure();
	k2 = measure();
	if (k1 < 1e5 || k1 > 1e8 || (k1 > k2 ? k1 - k2 : k2 - k1) > k1 * AGREE_PPM / 1e6) {
		fprintf(stderr, "tsckhz: two measurements disagree (%.0f and %.0f kHz): the machine is too busy\n", k1,
			k2);
		return 1;
	}
	printf("%.0f\n", (k1 + k2) / 2);
	return 0;
}

#else
int main(void)
{
	fprintf(stderr, "tsckhz: not an x86 CPU: no TSC\n");
	return 1;
}
#endif
