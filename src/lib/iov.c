/* SPDX-License-Identifier: MIT */
/* iov.c - copying between flat buffers and iovec arrays. */
#include "lib/iov.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Copy between a flat buffer and iov starting at byte off; to_iov picks the direction. */
static size_t iov_copy(const struct iovec *iov, unsigned cnt, size_t off, uint8_t *buf, size_t len,
		       bool to_iov)
{
	size_t done = 0;

	for (unsigned i = 0; i < cnt && done < len; i++) {
		uint8_t *base = iov[i].iov_base;
		size_t n;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		if (to_iov)
			memcpy(base + off, buf + done, n);
		else
			memcpy(buf + done, base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

/**
 * iov_copy_to_slow() - copy a flat buffer into an iovec array: the general case of iov_copy_to().
 * @iov: the destination segments
 * @cnt: number of segments
 * @off: byte offset into @iov where the copy starts
 * @buf: the source
 * @len: bytes to copy
 *
 * Return: bytes copied (less than @len when @iov ends first).
 */
size_t iov_copy_to_slow(const struct iovec *iov, unsigned cnt, size_t off, const void *buf,
			size_t len)
{
	return iov_copy(iov, cnt, off, (uint8_t *)(uintptr_t)buf, len, true);
}

/**
 * iov_copy_from_slow() - copy from an iovec array into a flat buffer: the general case of
 * iov_copy_from().
 * @iov: the source segments
 * @cnt: number of segments
 * @off: byte offset into @iov where the copy starts
 * @buf: the destination
 * @len: at most this many bytes
 *
 * Return: bytes copied (less than @len when @iov ends first).
 */
size_t iov_copy_from_slow(const struct iovec *iov, unsigned cnt, size_t off, void *buf, size_t len)
{
	return iov_copy(iov, cnt, off, buf, len, false);
}

/* Advance (*i, *off) past `skip` bytes of iov. */
static void iov_seek(const struct iovec *iov, unsigned cnt, unsigned *i, size_t *off, size_t skip)
{
	while (*i < cnt && skip >= iov[*i].iov_len - *off) {
		skip -= iov[*i].iov_len - *off;
		(*i)++;
		*off = 0;
	}
	*off += skip;
}

/**
 * iov_copy_iov_slow() - copy segment to segment between iovec arrays: the general case of
 * iov_copy_iov().
 * @dst: the destination segments
 * @dst_cnt: their number
 * @dst_off: byte offset into @dst where the copy starts
 * @src: the source segments
 * @src_cnt: their number
 * @src_off: byte offset into @src where the copy starts
 * @len: at most this many bytes
 *
 * No bounce buffer; memmove, as one frontend may give two ports the same memory.
 *
 * Return: bytes copied (less than @len when either array ends first).
 */
size_t iov_copy_iov_slow(const struct iovec *dst, unsigned dst_cnt, size_t dst_off,
			 const struct iovec *src, unsigned src_cnt, size_t src_off, size_t len)
{
	unsigned di = 0, si = 0;
	size_t doff = 0, soff = 0, done = 0;

	iov_seek(dst, dst_cnt, &di, &doff, dst_off);
	iov_seek(src, src_cnt, &si, &soff, src_off);
	while (done < len && di < dst_cnt && si < src_cnt) {
		size_t n = dst[di].iov_len - doff;

		if (n > src[si].iov_len - soff)
			n = src[si].iov_len - soff;
		if (n > len - done)
			n = len - done;
		if (n) /* memmove: one frontend may give two ports the same memory */
			memmove((uint8_t *)dst[di].iov_base + doff,
				(const uint8_t *)src[si].iov_base + soff, n);
		done += n;
		doff += n;
		soff += n;
		if (doff == dst[di].iov_len) {
			di++;
			doff = 0;
		}
		if (soff == src[si].iov_len) {
			si++;
			soff = 0;
		}
	}
	return done;
}

/**
 * iov_length() - total bytes of an iovec array.
 * @iov: the segments
 * @cnt: their number
 *
 * Return: the sum of the segment lengths.
 */
size_t iov_length(const struct iovec *iov, unsigned cnt)
{
	size_t n = 0;

	for (unsigned i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}
