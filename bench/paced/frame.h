/* SPDX-License-Identifier: MIT */
/* frame.h - the paced driver's frames: Ethernet + IPv4 + UDP, then an origin, a sequence number and a timestamp. */
#ifndef PACED_FRAME_H
#define PACED_FRAME_H

#include <stdint.h>
#include <string.h>

#define FRAME_MIN 60			/* Ethernet minimum without FCS; the payload fits in 58 */
#define PL_OFF 42			/* after 14 + 20 + 8 bytes of headers */
#define PL_MAGIC 0x7ace

enum { PL_DATA = 1, PL_LEARN = 2 };

/**
 * struct pl - what every frame carries after its UDP header.
 * @magic:	PL_MAGIC (anything else is not ours: counted and dropped)
 * @origin:	the port that made the frame (a closed loop echoes the others' back)
 * @kind:	PL_DATA, or PL_LEARN (teaches a learning switch the sender's MAC; not counted)
 * @seq:	per-port sequence number
 * @ts:		CLOCK_MONOTONIC ns when the frame was first sent
 */
struct pl {
	uint16_t magic;
	uint8_t origin;
	uint8_t kind;
	uint32_t seq;
	uint64_t ts;
} __attribute__((packed));

void frame_template(uint8_t *f, uint32_t size, const uint8_t dst[6], const uint8_t src[6]);

/* Write the payload of a frame at f (its first byte, after the virtio-net header). */
static inline void frame_stamp(uint8_t *f, uint8_t origin, uint8_t kind, uint32_t seq, uint64_t ts)
{
	struct pl p = {PL_MAGIC, origin, kind, seq, ts};

	memcpy(f + PL_OFF, &p, sizeof(p));
}

/* Read it back; 0 if the frame is too short or not ours. */
static inline int frame_read(const uint8_t *f, uint32_t len, struct pl *p)
{
	if (len < PL_OFF + sizeof(*p))
		return 0;
	memcpy(p, f + PL_OFF, sizeof(*p));
	return p->magic == PL_MAGIC;
}

#endif
