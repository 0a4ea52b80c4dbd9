/* SPDX-License-Identifier: MIT */
/* xsave_size.c - print the host CPU's XSAVE area size for the enabled features (CPUID 0xD). */
#include <cpuid.h>
#include <stdio.h>

/**
 * main() - print "XSAVE_BYTES MAX_BYTES" (CPUID leaf 0xD, sub-leaf 0: EBX is the size the
 * features enabled in XCR0 need, ECX the size all supported features would need).
 *
 * Return: 0, or 1 when the CPU has no CPUID leaf 0xD.
 */
int main(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, NULL) < 0xd)
		return 1;
	__cpuid_count(0xd, 0, a, b, c, d);
	(void)a;
	(void)d;
	printf("%u %u\n", b, c);
	return 0;
}
