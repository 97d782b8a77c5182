/*
 * cpu.h — what the switch asks the CPU before choosing its kernels (agg.c)
 * and its CRC (crc32.c).
 */
#ifndef INCLAB_CPU_H
#define INCLAB_CPU_H

#include <stdint.h>
#include <string.h>

/*
 * cpu_is_tcg() - is this CPU emulated by QEMU's TCG? CPUID leaf 1 ECX bit 31
 * (the hypervisor bit) set, and leaf 0x40000000 (the hypervisor's vendor
 * leaf) signing "TCGTCGTCGTCG" in EBX, ECX, EDX. QEMU 7.2 reports both,
 * system and user mode (qemu-x86_64), unless the CPU is given
 * tcg-cpuid=off; KVM signs "KVMKVMKVM\0\0\0" instead. Not x86: no.
 */
static inline int cpu_is_tcg(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t a, b, c, d;
	char sig[12];

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	if (!(c & 1u << 31))
		return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x40000000), "c"(0));
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	return !memcmp(sig, "TCGTCGTCGTCG", 12);
#else
	return 0;
#endif
}

#endif
