/* SPDX-License-Identifier: MIT */
/* vhost_user_io.h - vhost-user socket I/O: messages and fds in, replies out, guest fds mapped. */
#ifndef VNETD_VHOST_USER_IO_H
#define VNETD_VHOST_USER_IO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "vhost/vhost_user_msg.h"

/* Outcome of one request. */
enum vu_result {
	VU_OK = 0,          /* done; REPLY_ACK 0 */
	VU_FAIL = -1,       /* refused; REPLY_ACK 1, the connection stays */
	VU_DISCONNECT = -2, /* the connection must be closed (reply could not be sent) */
};

/* One received message with the fds that came with it; a handler keeping fds[i] sets it to -1. */
struct vu_rx {
	struct vu_msg msg;
	int fds[VU_MAX_FDS];
	unsigned nfds;
};

/* The message being received: bytes and fds gathered so far (never blocks the loop). */
struct vu_rxbuf {
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];
	size_t len;
	int fds[VU_MAX_FDS];
	unsigned nfds;
};

/* vu_take_fd() - take fd i of a message: the caller owns it from now on. */
static inline int vu_take_fd(struct vu_rx *rx, unsigned i)
{
	int fd = rx->fds[i];

	rx->fds[i] = -1;
	return fd;
}

/* vu_close_fd() - close *fd if open and mark it closed (-1). */
static inline void vu_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* vu_close_fds() - close every open fd of fds[0..nfds). */
void vu_close_fds(int *fds, unsigned nfds);

/*
 * vu_io_recv() - read what the message in rb still needs from sock (never waits). 1: a whole,
 * valid message was moved into *out (with its fds; rb is empty again); 0: not yet; -1: the
 * connection must be closed (EOF, I/O error, too many fds, malformed message: logged).
 */
int vu_io_recv(int sock, struct vu_rxbuf *rb, struct vu_rx *out);

/* vu_io_reset() - drop a partly received message and close its fds. */
void vu_io_reset(struct vu_rxbuf *rb);

/* vu_io_reply() - send a reply to `request` with `size` payload bytes; 0, or -1 (disconnect). */
int vu_io_reply(int sock, uint32_t request, const void *payload, uint32_t size);

/* vu_reply_u64() - answer request with a u64 (its own reply, not a REPLY_ACK). */
enum vu_result vu_reply_u64(int sock, uint32_t request, uint64_t v);

/*
 * vu_fd_short() - fstat a frontend's fd: 1 if it is a regular file shorter than len (mapping it
 * would SIGBUS on first touch), 0 if not, -1 if fstat failed. *size gets the file's size.
 */
int vu_fd_short(int fd, uint64_t len, int64_t *size);

/*
 * vu_map_fd() - map the first len bytes of fd shared (MAP_NORESERVE), watched for SIGBUS with
 * *fault (guest_fault.h), since the frontend keeps the fd and may still shrink the file. The
 * mapping, or NULL (logged, naming `what`: the request); unmap with vu_unmap_fd().
 */
void *vu_map_fd(int fd, uint64_t len, atomic_int *fault, const char *what);

/* vu_unmap_fd() - take a vu_map_fd() mapping off the SIGBUS watch list and unmap it. */
void vu_unmap_fd(void *base, size_t len);

#endif
