/* SPDX-License-Identifier: MIT */
/* mem_cap.c - caps on the guest memory vnetd maps: the daemon-wide budget and size strings. */
#include "mem/mem_cap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Every worker maps and unmaps its own ports' memory: one shared, lock-free total. */
static _Atomic uint64_t cap_daemon = MEM_CAP_DAEMON_DEFAULT;
static _Atomic uint64_t in_use;

/**
 * mem_cap_set_daemon() - set the daemon-wide cap (--max-guest-mem) on all ports' guest mappings.
 * @bytes: the cap; mappings already counted stay
 */
void mem_cap_set_daemon(uint64_t bytes)
{
	atomic_store_explicit(&cap_daemon, bytes, memory_order_relaxed);
}

/**
 * mem_cap_daemon() - the daemon-wide cap now. Any thread; lock-free.
 *
 * Return: the cap in bytes (MEM_CAP_DAEMON_DEFAULT unless set).
 */
uint64_t mem_cap_daemon(void)
{
	return atomic_load_explicit(&cap_daemon, memory_order_relaxed);
}

/**
 * mem_cap_charge() - count guest mappings against the daemon-wide cap.
 * @bytes: address space the mappings cost (see mem_cap.h for what is counted)
 *
 * Any thread; lock-free (one shared total, compare-and-swap).
 *
 * Return: 0, or -1 (nothing counted) when the total would exceed the cap.
 */
int mem_cap_charge(uint64_t bytes)
{
	uint64_t cap = mem_cap_daemon();
	uint64_t cur = atomic_load_explicit(&in_use, memory_order_relaxed);

	do {
		if (bytes > cap || cur > cap - bytes)
			return -1;
	} while (!atomic_compare_exchange_weak_explicit(&in_use, &cur, cur + bytes,
							memory_order_relaxed, memory_order_relaxed));
	return 0;
}

/**
 * mem_cap_uncharge() - a charged mapping is gone: its bytes are free again. Any thread; lock-free.
 * @bytes: as given to mem_cap_charge()
 */
void mem_cap_uncharge(uint64_t bytes)
{
	atomic_fetch_sub_explicit(&in_use, bytes, memory_order_relaxed);
}

/**
 * mem_cap_in_use() - bytes of guest mappings counted now, over all ports. Any thread; lock-free.
 *
 * Return: the total.
 */
uint64_t mem_cap_in_use(void)
{
	return atomic_load_explicit(&in_use, memory_order_relaxed);
}

static const char suffixes[] = "KMGT";

/**
 * mem_cap_parse() - parse a size: decimal digits with an optional K, M, G or T suffix (powers of
 * 1024, either case).
 * @s: the string; no sign, no spaces, nothing after the suffix
 * @out: the size in bytes; set on success only
 *
 * Return: 0, or -1 if @s is not a size from 1 to 2^63.
 */
int mem_cap_parse(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (s[0] < '0' || s[0] > '9') /* strtoull would take spaces, signs and "-1" */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end) {
		for (unsigned i = 0; suffixes[i]; i++)
			if ((*end | 0x20) == (suffixes[i] | 0x20))
				shift = 10 * (i + 1);
		if (!shift || end[1] != '\0')
			return -1;
	}
	if (v == 0 || v > (1ull << 63) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/**
 * mem_cap_format() - a size the way mem_cap_parse() reads it ("2T", "1536M", "4097").
 * @bytes: the size
 * @buf: where the text goes
 *
 * Return: @buf.
 */
const char *mem_cap_format(uint64_t bytes, char buf[MEM_CAP_STR_LEN])
{
	unsigned i = 0;

	while (i < sizeof(suffixes) - 1 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		i++;
	}
	if (i)
		snprintf(buf, MEM_CAP_STR_LEN, "%" PRIu64 "%c", bytes, suffixes[i - 1]);
	else
		snprintf(buf, MEM_CAP_STR_LEN, "%" PRIu64, bytes);
	return buf;
}
