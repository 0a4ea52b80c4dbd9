/* SPDX-License-Identifier: MIT */
/* fuzz_chain.c - libFuzzer: vq_walk_chain() and vq_pop() on fuzz-built memory and rings. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem/dirty_log.h"
#include "fuzz_touch.h"
#include "mem/guest_mem.h"
#include "mem/guest_race.h"
#include "lib/log.h"
#include "virtq/virtq.h"

/*
 * Input: a 16-byte header, then the image of 64 KiB of guest memory (zero-padded).
 *   [0] flags: bit0 indirect_ok, bit1 EVENT_IDX, bit2 two regions, bit3 rings as UVAs,
 *       bit4 (with bit2) the two regions adjacent in GPA and UVA, so buffers may straddle them,
 *       bit5 IN_ORDER, bit6 (with bit5) a TX queue's batch_used, bit7 dirty logging on
 *   [1] log2 queue size (mod 9: 1..256)   [2..3] walker head   [4..5] vq last_avail
 *   [6] chains to pop   [8..9] desc ring offset/16   [10..11] avail offset/2
 *   [12..13] used offset/4   (ring offsets may point outside memory: vq_start must say no)
 *   [14] the guest's other vCPU (guest_race builds; 0: none): at each GUEST_RACE_RING_WALK point
 *       it rewrites one byte, of the descriptor table (bit0) or anywhere, [15] the value mixed in
 * Oracles besides ASan: a pop reads no more descriptors than the chain it returns counts (one
 * GUEST_RACE_RING_WALK point per descriptor read after the first, and one after the walk), and
 * a publication's logging walks no more than one per buffer plus the credit of the pops.
 * The descriptor table the walker sees is the start of guest memory. Two regions: the halves of
 * the image, 4 KiB apart in both address spaces, or adjacent; adjacent halves live in separate
 * arrays, so an iovec that runs past the end of a region is an ASan error.
 */
#define MEM_GPA 0x100000ull
#define MEM_UVA 0x7f0000100000ull
#define MEM_SIZE 0x10000u
#define GAP 0x1000u
#define HDR_LEN 16u

static _Alignas(64) uint8_t mem_buf[MEM_SIZE];
static _Alignas(64) uint8_t mem_lo[MEM_SIZE / 2], mem_hi[MEM_SIZE / 2]; /* adjacent layout */
static struct vq_chain chain;
static uint8_t log_bitmap[128]; /* pages up to 4 MiB of GPA: all of the fuzz memory */

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
/* The other vCPU: where it writes and what, and how often it ran (the oracles' count). */
static struct {
	uint8_t *mem, *lo, *hi; /* the image, or its two adjacent halves */
	uint8_t *table;         /* the queue's descriptor table (NULL before the start) */
	unsigned table_len, calls;
	uint8_t seed, value;
} race;

static void race_hook(void *ctx, enum guest_race_point point)
{
	unsigned k, off;

	(void)ctx;
	if (point != GUEST_RACE_RING_WALK)
		return;
	k = ++race.calls;
	if ((race.seed & 1) && race.table) {
		race.table[(race.seed * 7u + k * 13u) % race.table_len] ^= (uint8_t)(race.value + k);
		return;
	}
	off = (race.seed * 2654435761u + k * 40503u) % MEM_SIZE;
	if (race.mem)
		race.mem[off] ^= (uint8_t)(race.value + k);
	else if (off < MEM_SIZE / 2)
		race.lo[off] ^= (uint8_t)(race.value + k);
	else
		race.hi[off - MEM_SIZE / 2] ^= (uint8_t)(race.value + k);
}
#endif

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}


/* The region table, the last input's emptied first; returns the host memory of guest memory's
 * first byte. */
static uint8_t *build_mem(struct guest_mem *mem, bool two, bool adjacent)
{
	struct guest_mem_region r = {0};
	uint64_t gap = adjacent ? 0 : GAP;

	guest_mem_unmap_all(mem); /* owns no mapping: frees the arrays */
	r.gpa = MEM_GPA;
	r.uva = MEM_UVA;
	r.size = two ? MEM_SIZE / 2 : MEM_SIZE;
	r.host = adjacent ? mem_lo : mem_buf;
	if (guest_mem_add(mem, &r) != 0)
		abort();
	if (!two)
		return r.host;
	r.gpa = MEM_GPA + MEM_SIZE / 2 + gap;
	r.uva = MEM_UVA + MEM_SIZE / 2 + gap;
	r.host = adjacent ? mem_hi : mem_buf + MEM_SIZE / 2;
	if (guest_mem_add(mem, &r) != 0)
		abort();
	return adjacent ? mem_lo : mem_buf;
}

/* LLVMFuzzerTestOneInput() - one walk plus up to 255 pops on a fuzz-built queue. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest_mem mem; /* build_mem() frees the last input's arrays */
	struct virtqueue vq;
	struct dirty_log log = {.bitmap = log_bitmap, .size = sizeof(log_bitmap)};
	uint8_t flags, *table;
	unsigned num, npop;
	uint64_t base;
	bool adjacent;

	if (size < HDR_LEN)
		return 0;
	log_threshold = LOG_ERR;
	flags = data[0];
	num = 1u << (data[1] % 9);
	npop = data[6];
	adjacent = (flags & 4) && (flags & 16);
	memset(mem_buf, 0, sizeof(mem_buf));
	memcpy(mem_buf, data + HDR_LEN,
	       size - HDR_LEN < sizeof(mem_buf) ? size - HDR_LEN : sizeof(mem_buf));
	if (adjacent) {
		memcpy(mem_lo, mem_buf, sizeof(mem_lo));
		memcpy(mem_hi, mem_buf + sizeof(mem_lo), sizeof(mem_hi));
	}
	table = build_mem(&mem, flags & 4, adjacent);

	/* The pure walker, on the table at the start of memory (head may be out of range). */
	if (vq_walk_chain(&mem, (const struct vring_desc *)table, num, le16(data + 2) % (num + 2),
			  flags & 1, &chain) == VQ_WALK_OK)
		fuzz_touch_chain(&chain);
	(void)vq_walk_error_str((enum vq_walk_error)(data[7] % (VQ_WALK_TOO_MANY_IOV + 2)));

	/* A queue whose rings live in that memory. */
	memset(&vq, 0, sizeof(vq));
	base = (flags & 8) ? MEM_UVA : MEM_GPA;
	vq.num = (uint16_t)num;
	vq.desc_addr = base + 16ull * le16(data + 8);
	vq.avail_addr = base + 2ull * le16(data + 10);
	vq.used_addr = base + 4ull * le16(data + 12);
	vq.ring_space = (flags & 8) ? GUEST_ADDR_UVA : GUEST_ADDR_GPA;
	vq.event_idx = flags & 2;
	vq.indirect = flags & 1;
	vq.in_order = flags & 32;
	vq.batch_used = vq.reads_only = (flags & 32) && (flags & 64);
	if (vq_start(&vq, &mem) != 0)
		return 0;
	if (flags & 128) {
		memset(log_bitmap, 0, sizeof(log_bitmap));
		vq.log = &log;
		vq.log_used = true;
		vq.log_used_gpa = MEM_GPA;
	}
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
	race.mem = adjacent ? NULL : mem_buf;
	race.lo = mem_lo;
	race.hi = mem_hi;
	race.table = (uint8_t *)vq.desc;
	race.table_len = 16u * num;
	race.seed = data[14];
	race.value = data[15];
	race.calls = 0;
	guest_race_hook = data[14] ? race_hook : NULL;
#endif
	vq.last_avail = le16(data + 4);
	for (unsigned i = 0; i < npop; i++) {
		unsigned calls_before = 0;
		int r;

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
		calls_before = race.calls;
#endif
		r = vq_pop(&vq, &chain);
		if (r < 0) {
			if (!vq.broken)
				abort(); /* -1 means the queue is broken */
			break;
		}
		if (r == 0)
			break;
		fuzz_touch_chain(&chain);
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
		if (race.calls - calls_before > chain.ndesc)
			abort(); /* a pop read more descriptors than it counts */
#endif
		(void)calls_before;
		if (i == 3)
			vq_unpop(&vq, 1); /* popped again next round */
		else if (vq.batch_used)
			vq_push_last(&vq, chain.head, 1);
		else
			vq_push(&vq, chain.head, vq.reads_only ? 0 : (uint32_t)chain.write_len);
		if (i % 8 == 7) {
			uint32_t credit = vq.log_credit;
			uint16_t n = (uint16_t)(vq.used_idx - vq.used_published);

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
			calls_before = race.calls;
#endif
			vq_publish(&vq);
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
			if (race.calls - calls_before > n + credit)
				abort(); /* logging walks beyond what the pops read */
#endif
			(void)credit;
			(void)n;
			(void)vq_driver_wants_notify(&vq);
		}
	}
	vq_publish(&vq);
	(void)vq_driver_wants_notify(&vq);
	(void)vq_pending_since_decision(&vq);
	(void)vq_kick_enable(&vq);
	vq_kick_disable(&vq);
	(void)vq_has_avail(&vq);
	vq_stop(&vq);
	vq_reset(&vq);
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
	guest_race_hook = NULL;
	race.table = NULL;
#endif
	return 0;
}
