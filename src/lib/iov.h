/* SPDX-License-Identifier: MIT */
/* iov.h - copying between flat buffers and iovec arrays (a leaf: calls nothing of vnetd's). */
#ifndef VNETD_IOV_H
#define VNETD_IOV_H

#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

/* iov_copy_to_slow(), iov_copy_from_slow() - the general cases of the two below. */
size_t iov_copy_to_slow(const struct iovec *iov, unsigned cnt, size_t off, const void *buf,
			size_t len);
size_t iov_copy_from_slow(const struct iovec *iov, unsigned cnt, size_t off, void *buf, size_t len);

/* iov_copy_to() - copy len bytes from buf into iov at offset off; returns bytes copied. */
static inline size_t iov_copy_to(const struct iovec *iov, unsigned cnt, size_t off,
				 const void *buf, size_t len)
{
	while (cnt && off >= iov[0].iov_len) { /* segments wholly before off */
		off -= iov[0].iov_len;
		iov++;
		cnt--;
	}
	/* Headers: almost always inside one segment. */
	if (cnt && len <= iov[0].iov_len - off) {
		memcpy((char *)iov[0].iov_base + off, buf, len);
		return len;
	}
	return iov_copy_to_slow(iov, cnt, off, buf, len);
}

/* iov_copy_from() - copy up to len bytes from iov at offset off into buf; returns bytes copied. */
static inline size_t iov_copy_from(const struct iovec *iov, unsigned cnt, size_t off, void *buf,
				   size_t len)
{
	while (cnt && off >= iov[0].iov_len) {
		off -= iov[0].iov_len;
		iov++;
		cnt--;
	}
	if (cnt && len <= iov[0].iov_len - off) {
		memcpy(buf, (const char *)iov[0].iov_base + off, len);
		return len;
	}
	return iov_copy_from_slow(iov, cnt, off, buf, len);
}

/* iov_copy_iov_slow() - the general case of iov_copy_iov(). */
size_t iov_copy_iov_slow(const struct iovec *dst, unsigned dst_cnt, size_t dst_off,
			 const struct iovec *src, unsigned src_cnt, size_t src_off, size_t len);

/*
 * iov_copy_iov() - copy up to len bytes from src (starting at byte src_off) to dst (starting at
 * dst_off), segment to segment with no bounce buffer; returns bytes copied. memmove: one
 * frontend may give two ports the same memory. Inline: one segment on each side, or a source
 * in two (a switch's checked copy of a frame's head, then the rest in the sender's buffer).
 */
static inline size_t iov_copy_iov(const struct iovec *dst, unsigned dst_cnt, size_t dst_off,
				  const struct iovec *src, unsigned src_cnt, size_t src_off,
				  size_t len)
{
	while (dst_cnt && dst_off >= dst[0].iov_len) {
		dst_off -= dst[0].iov_len;
		dst++;
		dst_cnt--;
	}
	while (src_cnt && src_off >= src[0].iov_len) {
		src_off -= src[0].iov_len;
		src++;
		src_cnt--;
	}
	if (dst_cnt && src_cnt && len <= dst[0].iov_len - dst_off) {
		char *d = (char *)dst[0].iov_base + dst_off;
		const char *s0 = (const char *)src[0].iov_base + src_off;
		size_t a = src[0].iov_len - src_off; /* > 0: the walk above skipped empty segments */

		/* Small packets: one segment on each side. */
		if (len <= a) {
			memmove(d, s0, len);
			return len;
		}
		/* A source in two pieces that hold len, into one destination segment. */
		if (src_cnt > 1 && len - a <= src[1].iov_len) {
			memmove(d, s0, a);
			memmove(d + a, src[1].iov_base, len - a);
			return len;
		}
	}
	return iov_copy_iov_slow(dst, dst_cnt, dst_off, src, src_cnt, src_off, len);
}

/* iov_length() - total bytes of the iovecs. */
size_t iov_length(const struct iovec *iov, unsigned cnt);

#endif
