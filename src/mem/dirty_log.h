/* SPDX-License-Identifier: MIT */
/* dirty_log.h - the vhost-user dirty page log (live migration): which guest pages vnetd wrote. */
#ifndef VNETD_DIRTY_LOG_H
#define VNETD_DIRTY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mem/guest_mem.h"

/*
 * vhost-user spec, "Dirty logging": one bit per 4 KiB page of guest physical memory, bit
 * (page % 8) of byte (page / 8), set with an atomic OR because the frontend fetches and clears
 * the bitmap concurrently. A bit is set only after the write it covers, so a page the frontend
 * copied between the two is sent again.
 */
#define DIRTY_LOG_PAGE 4096u
#define DIRTY_LOG_MAX_SIZE (1ull << 32) /* bitmap bytes: 128 TiB of guest memory */

struct dirty_log {
	uint8_t *bitmap;   /* NULL: no log */
	uint64_t size;     /* bitmap bytes: pages [0, 8 * size) can be logged */
	void *mmap_base;   /* what to munmap (NULL for memory we do not own) */
	size_t mmap_len;
	uint64_t dropped;  /* pages outside the bitmap (a log too small for guest memory) */
};

/* dirty_log_gpa() - mark guest physical [gpa, gpa + len) dirty; pages past the bitmap dropped. */
void dirty_log_gpa(struct dirty_log *log, uint64_t gpa, uint64_t len);

/*
 * dirty_log_host() - mark dirty what vnetd wrote at host address [host, host + len) of guest
 * memory mem: the region holding it gives the guest physical address (the chain walker's
 * iovecs lie inside one region each). Bytes outside every region are ignored.
 */
void dirty_log_host(struct dirty_log *log, const struct guest_mem *mem, const void *host,
		    size_t len);

/* dirty_log_iov() - dirty_log_host() for the first len bytes of an iovec array. */
void dirty_log_iov(struct dirty_log *log, const struct guest_mem *mem, const struct iovec *iov,
		   unsigned cnt, size_t len);

#endif
