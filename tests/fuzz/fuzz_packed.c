/* SPDX-License-Identifier: MIT */
/* fuzz_packed.c - libFuzzer: vq_walk_packed() and packed-ring pops, pushes, events, bases. */
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
#include "virtq/vq_packed_internal.h"

/*
 * Input: a 16-byte header, then the image of 64 KiB of guest memory (zero-padded).
 *   [0] flags: bit0 indirect_ok, bit1 EVENT_IDX, bit2 IN_ORDER + one descriptor per batch,
 *       bit3 reads_only (TX: lengths 0, published from the records), bit4 dirty logging on,
 *       bit5 the guest's other vCPU (guest_race builds): at each GUEST_RACE_RING_WALK point it
 *       rewrites a byte of guest memory, where and what from [3..5]
 *   [1..2] queue size - 1 (mod 600: 1..600, any value)   [3..4] walker slot
 *   [5] pops   [6..7] desc ring offset/16   [8..9] driver area offset/4
 *   [10..11] device area offset/4   [12..15] vring base (set before the start)
 * The ring's descriptors, tables and buffers are all fuzz-written guest memory. Oracles besides
 * ASan: a pop reads no more descriptors than the chain it returns counts (one
 * GUEST_RACE_RING_WALK point per descriptor read after the first of a walk, and one after it),
 * and a publication's logging walks no more than one per buffer plus the pops' credit.
 */
#define MEM_GPA 0x100000ull
#define MEM_SIZE 0x10000u
#define HDR_LEN 16u

static _Alignas(64) uint8_t mem_buf[MEM_SIZE];
static struct vq_chain chain;
static uint8_t log_bitmap[128]; /* pages up to 4 MiB of GPA: all of the fuzz memory */
static unsigned race_calls;

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
static unsigned race_seed;
static uint8_t race_value;

/* The other vCPU: one byte of guest memory rewritten at each point, deterministically. */
static void race_hook(void *ctx, enum guest_race_point point)
{
	(void)ctx;
	if (point != GUEST_RACE_RING_WALK)
		return;
	race_calls++;
	mem_buf[(race_seed * 2654435761u + race_calls * 40503u) % MEM_SIZE] ^=
		(uint8_t)(race_value + race_calls);
}
#endif

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}


/* LLVMFuzzerTestOneInput() - one walk plus up to 255 pops on a fuzz-built packed queue. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct virtqueue vq; /* vq_reset() frees what a failed run left */
	struct dirty_log log = {.bitmap = log_bitmap, .size = sizeof(log_bitmap)};
	static struct guest_mem mem; /* emptied (its arrays freed) at each input */
	struct guest_mem_region r = {0};
	unsigned num, npop, nslots, held = 0;
	uint8_t flags;

	if (size < HDR_LEN)
		return 0;
	log_threshold = LOG_ERR;
	flags = data[0];
	num = le16(data + 1) % 600 + 1;
	npop = data[5];
	memset(mem_buf, 0, sizeof(mem_buf));
	memcpy(mem_buf, data + HDR_LEN,
	       size - HDR_LEN < sizeof(mem_buf) ? size - HDR_LEN : sizeof(mem_buf));
	guest_mem_unmap_all(&mem); /* owns no mapping */
	r.gpa = MEM_GPA;
	r.uva = MEM_GPA;
	r.size = MEM_SIZE;
	r.host = mem_buf;
	if (guest_mem_add(&mem, &r) != 0)
		abort();

	/* The pure walker on a ring at the start of memory, if it fits there. */
	if (16u * num <= MEM_SIZE) {
		unsigned slot = le16(data + 3) % num;
		const struct pvirtq_desc *ring = (const struct pvirtq_desc *)(void *)mem_buf;
		uint16_t f = le16((const uint8_t *)&ring[slot].flags);

		if (vq_walk_packed(&mem, ring, num, slot, f & VRING_PACKED_DESC_F_AVAIL, f,
				   flags & 1, VQ_MAX_CHAIN, &chain, &nslots) == VQ_WALK_OK) {
			fuzz_touch_chain(&chain);
			if (nslots < 1 || nslots > num || chain.head >= num)
				abort();
		}
	}

	vq_reset(&vq);
	vq.packed = true;
	vq.num = (uint16_t)num;
	vq.desc_addr = MEM_GPA + 16ull * le16(data + 6);
	vq.avail_addr = MEM_GPA + 4ull * le16(data + 8);
	vq.used_addr = MEM_GPA + 4ull * le16(data + 10);
	vq.ring_space = GUEST_ADDR_GPA;
	vq.indirect = flags & 1;
	vq.event_idx = flags & 2;
	vq.in_order = vq.batch_used = flags & 4;
	vq.reads_only = flags & 8; /* a TX queue: pushes of length 0, published from the records */
	(void)vq_set_base(&vq, (uint32_t)le16(data + 12) | (uint32_t)le16(data + 14) << 16);
	if (vq_start(&vq, &mem) != 0)
		return 0;
	if (flags & 16) {
		memset(log_bitmap, 0, sizeof(log_bitmap));
		vq.log = &log;
		vq.log_used = true;
		vq.log_used_gpa = MEM_GPA;
	}
	race_calls = 0;
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
	race_seed = le16(data + 3);
	race_value = data[5];
	guest_race_hook = (flags & 32) ? race_hook : NULL;
#endif
	for (unsigned i = 0; i < npop; i++) {
		unsigned calls_before = race_calls;
		int got = vq_pop(&vq, &chain);

		if (got < 0) {
			if (!vq.broken)
				abort();
			break;
		}
		if (got == 0)
			break;
		fuzz_touch_chain(&chain);
		if (chain.head >= num)
			abort();
		if (race_calls - calls_before > chain.ndesc)
			abort(); /* a pop read more descriptors than it counts */
		if (i % 5 == 3) {
			vq_unpop(&vq, 1); /* walked again next round */
			continue;
		}
		if (vq.reads_only && !vq.batch_used)
			vq_push_read_n(&vq, 1);
		else
			vq_push(&vq, chain.head, vq.reads_only ? 0 : (uint32_t)chain.write_len);
		if (++held % 7 == 0) {
			uint32_t credit = vq.log_credit;
			uint16_t n = (uint16_t)(vq.used_idx - vq.used_published);
			unsigned publish_before = race_calls;

			vq_publish(&vq);
			if (race_calls - publish_before > n + credit)
				abort(); /* logging walks beyond what the pops read */
			(void)vq_driver_wants_notify(&vq);
		}
	}
	vq_publish(&vq);
	(void)vq_driver_wants_notify(&vq);
	(void)vq_driver_would_notify(&vq);
	(void)vq_kick_enable(&vq);
	vq_kick_disable(&vq);
	(void)vq_has_avail(&vq);
	(void)vq_avail_idx(&vq);
	/* Positions stay inside the ring whatever the guest wrote. */
	if ((vq_get_base(&vq) & 0x7fff) >= num || (vq_get_base(&vq) >> 16 & 0x7fff) >= num)
		abort();
	vq_stop(&vq);
#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
	guest_race_hook = NULL;
#endif
	return 0;
}
