/* SPDX-License-Identifier: MIT */
/* dirty_log.c - the vhost-user dirty page log: setting bits for the guest pages vnetd wrote. */
#include "mem/dirty_log.h"

/**
 * dirty_log_gpa() - mark a range of guest physical memory dirty.
 * @log: the log (nothing happens without a bitmap)
 * @gpa: first byte written
 * @len: bytes written (0: nothing)
 *
 * Call after the write the bits cover. Pages past the bitmap are not marked but counted in
 * log->dropped. Bits are set with an atomic OR (the frontend fetches and clears the bitmap
 * concurrently); log->dropped is a plain counter of the queue's thread.
 */
void dirty_log_gpa(struct dirty_log *log, uint64_t gpa, uint64_t len)
{
	uint64_t first, last, pages;

	if (!log->bitmap || !len)
		return;
	first = gpa / DIRTY_LOG_PAGE;
	/* Last byte written: gpa + len - 1, clamped instead of wrapping. */
	last = (len - 1 > UINT64_MAX - gpa ? UINT64_MAX : gpa + len - 1) / DIRTY_LOG_PAGE;
	pages = log->size * 8; /* size <= DIRTY_LOG_MAX_SIZE: no overflow */
	if (first >= pages) {
		log->dropped += last - first + 1;
		return;
	}
	if (last >= pages) {
		log->dropped += last - pages + 1;
		last = pages - 1;
	}
	for (uint64_t p = first; p <= last; p++)
		__atomic_fetch_or(&log->bitmap[p / 8], (uint8_t)(1u << (p % 8)), __ATOMIC_RELEASE);
}

/**
 * dirty_log_host() - mark dirty what vnetd wrote at a host address of guest memory.
 * @log: the log
 * @mem: the guest memory table: the region holding @host gives the guest physical address
 * @host: first byte written
 * @len: bytes written; clamped to the end of that region (a chain walker iovec lies in one)
 *
 * Bytes outside every region are ignored. The hot region (the largest) is tried first, then a
 * binary search over the others. Same rules as dirty_log_gpa().
 */
void dirty_log_host(struct dirty_log *log, const struct guest_mem *mem, const void *host,
		    size_t len)
{
	const struct guest_mem_region *r = &mem->hot;
	uint64_t off = (uint64_t)((uintptr_t)host - (uintptr_t)r->host);

	if (off >= r->size && !(r = guest_mem_find_host(mem, host, &off)))
		return;
	if (len > r->size - off)
		len = (size_t)(r->size - off); /* never past the region */
	dirty_log_gpa(log, r->gpa + off, len);
}

/**
 * dirty_log_iov() - dirty_log_host() for the first bytes of an iovec array.
 * @log: the log
 * @mem: the guest memory table
 * @iov: the iovecs written, each inside one region
 * @cnt: number of iovecs
 * @len: bytes written, from the start of @iov
 */
void dirty_log_iov(struct dirty_log *log, const struct guest_mem *mem, const struct iovec *iov,
		   unsigned cnt, size_t len)
{
	for (unsigned i = 0; i < cnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		dirty_log_host(log, mem, iov[i].iov_base, n);
		len -= n;
	}
}
