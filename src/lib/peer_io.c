/* SPDX-License-Identifier: MIT */
/* peer_io.c - reads and writes on fds a peer shares with us, that never wait for that peer. */
#include "lib/peer_io.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/**
 * peer_fd_kind() - classify an fd a peer handed over.
 * @fd: the fd.
 *
 * Return: PEER_FD_SOCKET, PEER_FD_FIFO (pipes), PEER_FD_FILE (regular files) or
 * PEER_FD_OTHER (eventfds, anything else, errors).
 */
enum peer_fd_kind peer_fd_kind(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return PEER_FD_OTHER;
	if (S_ISSOCK(st.st_mode))
		return PEER_FD_SOCKET;
	if (S_ISFIFO(st.st_mode))
		return PEER_FD_FIFO;
	if (S_ISREG(st.st_mode))
		return PEER_FD_FILE;
	return PEER_FD_OTHER;
}

/* RWF_NOWAIT refused (a file type or kernel without it): poll() of no time instead. */
static bool nowait_unsupported(void)
{
	return errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS;
}

/* ready_now() - whether fd is ready for `events` now; false with errno EAGAIN (or EPIPE). */
static bool ready_now(int fd, short events)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int n = poll(&pfd, 1, 0);

	if (n > 0 && (pfd.revents & events))
		return true;
	if (n >= 0)
		errno = (n > 0 && (pfd.revents & (POLLERR | POLLNVAL))) ? EPIPE : EAGAIN;
	return false;
}

/**
 * peer_read() - read without waiting, whatever the file's O_NONBLOCK says now.
 * @fd: the fd.
 * @kind: what peer_fd_kind() said of it.
 * @buf: where to read to.
 * @len: at most this many bytes.
 *
 * Return: bytes read, 0 at EOF, -1 with errno (EAGAIN: nothing to read now).
 */
ssize_t peer_read(int fd, enum peer_fd_kind kind, void *buf, size_t len)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	ssize_t n;

	if (kind == PEER_FD_SOCKET)
		return recv(fd, buf, len, MSG_DONTWAIT);
	if (kind == PEER_FD_FILE)
		return read(fd, buf, len);
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT); /* pipes; eventfds since Linux 5.12 */
	if (n >= 0 || !nowait_unsupported())
		return n;
	/* POLLHUP: the writer is gone, read() returns what is left or EOF at once. */
	if (!ready_now(fd, POLLIN | POLLHUP))
		return -1;
	return read(fd, buf, len);
}

/**
 * peer_write() - write without waiting, whatever the file's O_NONBLOCK says now.
 * @fd: the fd.
 * @kind: what peer_fd_kind() said of it.
 * @buf: the bytes.
 * @len: how many.
 *
 * An eventfd write has no per-call flag: a poll() of no time first makes sure the counter has
 * room (only a peer racing us between the two calls could still fill it). A pipe without
 * RWF_NOWAIT takes at most PIPE_BUF bytes after a poll(): a free slot holds that many.
 *
 * Return: bytes written, -1 with errno (EAGAIN: the peer is full).
 */
ssize_t peer_write(int fd, enum peer_fd_kind kind, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	ssize_t n;

	if (kind == PEER_FD_SOCKET)
		return send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (kind == PEER_FD_FILE)
		return write(fd, buf, len);
	if (kind == PEER_FD_FIFO) {
		n = pwritev2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (n >= 0 || !nowait_unsupported())
			return n;
		if (len > PIPE_BUF)
			len = PIPE_BUF;
	}
	if (!ready_now(fd, POLLOUT))
		return -1;
	return write(fd, buf, len);
}
