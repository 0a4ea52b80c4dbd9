/* SPDX-License-Identifier: MIT */
/* vq_ring.c - what both ring layouts use: walk errors, a buffer added to a chain, a broken queue. */
#include <stdint.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "virtq/vq_ring_internal.h"

static const char *const walk_error_names[] = {
	[VQ_WALK_OK] = "ok",
	[VQ_WALK_BAD_HEAD] = "head index out of range",
	[VQ_WALK_BAD_NEXT] = "next index out of range",
	[VQ_WALK_TOO_LONG] = "chain too long (loop?)",
	[VQ_WALK_BAD_ADDR] = "buffer outside guest memory",
	[VQ_WALK_INDIRECT_DISALLOWED] = "indirect descriptor not negotiated",
	[VQ_WALK_BAD_INDIRECT] = "bad indirect table",
	[VQ_WALK_NESTED_INDIRECT] = "nested indirect or indirect with next",
	[VQ_WALK_READ_AFTER_WRITE] = "readable descriptor after writable one",
	[VQ_WALK_TOO_BIG] = "chain larger than 4 GiB",
	[VQ_WALK_TOO_MANY_IOV] = "chain split into more than 1024 pieces of guest memory",
	[VQ_WALK_NOT_AVAIL] = "descriptor in a list not made available",
	[VQ_WALK_BAD_ID] = "buffer id out of range",
	[VQ_WALK_ID_IN_FLIGHT] = "buffer id reused while in flight",
	[VQ_WALK_IN_ORDER] = "descriptors not used in ring order (IN_ORDER)",
	[VQ_WALK_TAKEN_BACK] = "available descriptor taken back",
	[VQ_WALK_OVERRUN] = "more descriptors in flight than the ring holds",
};

/**
 * vq_walk_error_str() - short text for a walk error (log lines, tests).
 *
 * Return: a static string; "unknown" for a value outside the enum.
 */
const char *vq_walk_error_str(enum vq_walk_error err)
{
	if ((unsigned)err >= sizeof(walk_error_names) / sizeof(walk_error_names[0]))
		return "unknown";
	return walk_error_names[err];
}

/**
 * vq_chain_add_buf() - append one data descriptor's buffer to a walked chain (both walkers).
 * @mem: guest memory the buffer is translated in
 * @addr: its GPA
 * @len: its bytes (0: nothing added)
 * @write: device-writable
 * @seen_write: a writable buffer came before (updated): a readable one after it is refused
 * @out: the chain, nread/nwrite/read_len/write_len updated
 *
 * Return: VQ_WALK_OK, or READ_AFTER_WRITE, TOO_MANY_IOV, BAD_ADDR, TOO_BIG.
 */
enum vq_walk_error vq_chain_add_buf(const struct guest_mem *mem, uint64_t addr, uint32_t len,
				    bool write, bool *seen_write, struct vq_chain *out)
{
	unsigned n = out->nread + out->nwrite;
	int got;

	if (write)
		*seen_write = true;
	else if (*seen_write)
		return VQ_WALK_READ_AFTER_WRITE;
	if (!len)
		return VQ_WALK_OK;
	if (n >= VQ_MAX_CHAIN) /* never within one walk; VQ_MAX_CHAIN - n must not wrap */
		return VQ_WALK_TOO_MANY_IOV;
	/* Data buffers may straddle adjacent regions: one iovec per region. */
	got = guest_mem_translate_iov(mem, GUEST_ADDR_GPA, addr, len, &out->iov[n],
				      VQ_MAX_CHAIN - n);
	if (got == GUEST_MEM_IOV_FULL)
		return VQ_WALK_TOO_MANY_IOV;
	if (got < 0)
		return VQ_WALK_BAD_ADDR;
	if (write) {
		out->nwrite += (unsigned)got;
		out->write_len += len;
	} else {
		out->nread += (unsigned)got;
		out->read_len += len;
	}
	if (out->read_len > UINT32_MAX || out->write_len > UINT32_MAX)
		return VQ_WALK_TOO_BIG;
	return VQ_WALK_OK;
}

/**
 * vq_mark_broken() - stop processing the queue after a guest error (NEEDS_RESET semantics).
 * @vq: the queue; stays broken until vq_start() or vq_reset()
 * @what: the error, for the one rate-limited log line
 *
 * The first call logs and calls vq->on_broken; later ones do nothing.
 */
void vq_mark_broken(struct virtqueue *vq, const char *what)
{
	if (vq->broken)
		return;
	log_guest("queue %u: %s; queue stopped until the device is reset", vq->index, what);
	if (vq->ready == VQ_FAST_PACKED)
		vq->shadow_avail = vq->last_avail; /* kept from now (virtq.h) */
	vq->broken = true;
	vq->ready = VQ_FAST_NONE;
	if (vq->on_broken)
		vq->on_broken(vq->owner_ctx, vq->index);
}
