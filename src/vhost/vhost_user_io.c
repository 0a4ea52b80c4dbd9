/* SPDX-License-Identifier: MIT */
/* vhost_user_io.c - vhost-user socket I/O: message reassembly with fds, replies, fd mappings. */
#include "vhost/vhost_user_io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mem/mem.h"
#include "lib/log.h"

/**
 * vu_close_fds() - close every open fd of an array.
 * @fds: the array; each closed entry becomes -1
 * @nfds: its length
 *
 * Return: nothing.
 */
void vu_close_fds(int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		vu_close_fd(&fds[i]);
}

/*
 * write_full() - send all of a (small) reply without blocking: a frontend that lets its socket
 * buffer fill up instead of reading replies is dropped rather than allowed to stall the loop.
 */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			log_guest("vhost-user: frontend does not read its replies; dropping it");
		return -1;
	}
	return 0;
}

/*
 * recv_some() - read at most len bytes into buf, appending any fds (SCM_RIGHTS) to fds/nfds.
 * Returns bytes read, 0 if nothing was there, -1 on EOF, error or too many fds.
 */
static ssize_t recv_some(int sock, uint8_t *buf, size_t len, int *fds, unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(VU_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cmsg;
	bool too_many = false;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		log_warn("vhost-user: recvmsg: %s", strerror(errno));
		return -1;
	}
	for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg)) {
		size_t cnt;

		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
		    cmsg->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(fd));
			if (*nfds < VU_MAX_FDS) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				too_many = true;
			}
		}
	}
	if (too_many || (mh.msg_flags & MSG_CTRUNC)) {
		log_guest("vhost-user: message with more than %u fds", VU_MAX_FDS);
		return -1;
	}
	if (n == 0) {
		log_debug("vhost-user: frontend closed the connection");
		return -1;
	}
	return n;
}

/**
 * vu_io_recv() - gather one message from a non-blocking socket, a piece at a time.
 * @sock: the connection's socket
 * @rb: the message received so far (kept across calls)
 * @out: where a whole message goes, parsed (vu_msg_parse()), with its fds
 *
 * Reads only what the current message still needs: the header, then the payload it announces.
 * A message that fails vu_msg_parse() has its fds closed.
 *
 * Return: 1 with *out filled (the caller owns its fds), 0 when the message is not complete yet,
 * -1 when the connection must be closed (logged; fds still in rb are the caller's to drop with
 * vu_io_reset()).
 */
int vu_io_recv(int sock, struct vu_rxbuf *rb, struct vu_rx *out)
{
	uint32_t request, size = 0;
	const char *why;
	size_t want;
	ssize_t n;

	/* Read only what the current message still needs; a partial one waits for more input. */
	if (rb->len >= VU_HDR_SIZE)
		memcpy(&size, rb->buf + 8, sizeof(size));
	want = rb->len < VU_HDR_SIZE ? VU_HDR_SIZE - rb->len : VU_HDR_SIZE + size - rb->len;
	n = recv_some(sock, rb->buf + rb->len, want, rb->fds, &rb->nfds);
	if (n < 0 && rb->len >= VU_HDR_SIZE) {
		memcpy(&request, rb->buf, sizeof(request));
		log_guest("vhost-user: %s: truncated payload (%zu of %u bytes) at disconnect",
			  vu_request_name(request), rb->len - VU_HDR_SIZE, size);
	} else if (n < 0 && rb->len) {
		log_guest("vhost-user: truncated message header (%zu of %u bytes) at disconnect",
			  rb->len, VU_HDR_SIZE);
	}
	if (n <= 0)
		return n < 0 ? -1 : 0;
	rb->len += (size_t)n;
	if (rb->len < VU_HDR_SIZE)
		return 0;
	memcpy(&request, rb->buf, sizeof(request));
	memcpy(&size, rb->buf + 8, sizeof(size));
	if (size > VU_MSG_MAX_PAYLOAD) {
		log_guest("vhost-user: %s: payload of %u bytes (max %u)", vu_request_name(request),
			  size, VU_MSG_MAX_PAYLOAD);
		return -1;
	}
	if (rb->len < VU_HDR_SIZE + size)
		return 0;

	/* A whole message: take it (and its fds) out of the receive state. */
	memcpy(out->fds, rb->fds, sizeof(out->fds));
	out->nfds = rb->nfds;
	rb->nfds = 0;
	rb->len = 0;
	if (vu_msg_parse(rb->buf, VU_HDR_SIZE + size, out->nfds, &out->msg, &why) < 0) {
		log_guest("vhost-user: bad %s message (%u): %s", vu_request_name(request), request,
			  why);
		vu_close_fds(out->fds, out->nfds);
		return -1;
	}
	return 1;
}

/**
 * vu_io_reset() - forget a partly received message.
 * @rb: the receive state; its fds are closed
 *
 * Return: nothing.
 */
void vu_io_reset(struct vu_rxbuf *rb)
{
	vu_close_fds(rb->fds, rb->nfds);
	rb->nfds = 0;
	rb->len = 0;
}

/**
 * vu_io_reply() - send one reply message, never waiting.
 * @sock: the connection's socket
 * @request: the request answered (the reply's header carries it, with VU_FLAG_REPLY)
 * @payload: @size bytes (at most VU_MSG_MAX_PAYLOAD)
 * @size: payload length
 *
 * Return: 0, or -1 (logged) when the reply could not be sent: the connection must be closed.
 */
int vu_io_reply(int sock, uint32_t request, const void *payload, uint32_t size)
{
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];

	vu_msg_put_header(buf, request, VU_FLAG_REPLY | VU_VERSION, size);
	memcpy(buf + VU_HDR_SIZE, payload, size);
	if (write_full(sock, buf, VU_HDR_SIZE + size) < 0) {
		log_warn("vhost-user: cannot send %s reply", vu_request_name(request));
		return -1;
	}
	return 0;
}

/**
 * vu_reply_u64() - answer a request with a u64 payload (its own reply, not a REPLY_ACK).
 * @sock: the connection's socket
 * @request: the request answered
 * @v: the value
 *
 * Return: VU_OK, or VU_DISCONNECT when the reply could not be sent.
 */
enum vu_result vu_reply_u64(int sock, uint32_t request, uint64_t v)
{
	return vu_io_reply(sock, request, &v, sizeof(v)) < 0 ? VU_DISCONNECT : VU_OK;
}

/**
 * vu_fd_short() - is a frontend's fd a regular file too short to map len bytes of?
 * @fd: the fd
 * @len: bytes to be mapped from offset 0
 * @size: the file's size (st_size), when fstat succeeded
 *
 * Return: 1 if it is a regular file of fewer than @len bytes, 0 if not (or not a regular file:
 * mmap decides), -1 if fstat failed.
 */
int vu_fd_short(int fd, uint64_t len, int64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	*size = (int64_t)st.st_size;
	return S_ISREG(st.st_mode) && (uint64_t)st.st_size < len;
}

/**
 * vu_map_fd() - map a frontend's fd and watch the mapping for SIGBUS.
 * @fd: the fd (the caller keeps it; the mapping stays valid after it is closed)
 * @len: bytes from offset 0 (mmap offsets must be page-aligned, the protocol's need not)
 * @fault: set (atomically) when the mapping faults, see guest_fault_watch()
 * @what: the request, for the log lines
 *
 * Return: the mapping's base, or NULL (logged; nothing mapped).
 */
void *vu_map_fd(int fd, uint64_t len, atomic_int *fault, const char *what)
{
	void *base = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			  fd, 0);

	if (base == MAP_FAILED) {
		log_guest("vhost-user: %s: mmap of %" PRIu64 " bytes: %s", what, len,
			  strerror(errno));
		return NULL;
	}
	/* The frontend keeps the fd and may still shrink the file: watch for SIGBUS. */
	if (guest_fault_watch(base, (size_t)len, fault) < 0) {
		log_err("vhost-user: %s: too many guest mappings", what);
		munmap(base, (size_t)len);
		return NULL;
	}
	return base;
}

/**
 * vu_unmap_fd() - undo vu_map_fd().
 * @base: what vu_map_fd() returned
 * @len: the length it was given
 *
 * Return: nothing.
 */
void vu_unmap_fd(void *base, size_t len)
{
	guest_fault_unwatch(base);
	munmap(base, len);
}
