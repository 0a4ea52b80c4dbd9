/* SPDX-License-Identifier: MIT */
/* peer_io.h - reads and writes on fds a peer shares with us, that do not wait for that peer. */
#ifndef VNETD_PEER_IO_H
#define VNETD_PEER_IO_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A kick, call, error or device-state fd comes from the frontend, which keeps its own copy of
 * the same open file: it can clear the O_NONBLOCK vnetd set there at any time (F_SETFL), then
 * fill the pipe or the eventfd's counter, or empty it. Each call below is non-blocking by
 * itself: MSG_DONTWAIT on sockets, RWF_NOWAIT on pipes (and eventfd reads). Where the kernel
 * has no per-call flag (eventfd writes, older kernels), a poll() of no time comes first, or,
 * once peer_io_watchdog_start() ran, an eventfd write is one write(2) that a watchdog thread
 * ends if the peer keeps it waiting: ETIMEDOUT after 100-200 ms (peer_io.c).
 */
enum peer_fd_kind {
	PEER_FD_OTHER = 0, /* eventfd, ...: RWF_NOWAIT reads, guarded (or polled) writes */
	PEER_FD_SOCKET,    /* MSG_DONTWAIT */
	PEER_FD_FIFO,      /* RWF_NOWAIT */
	PEER_FD_FILE,      /* a regular file: plain read(2) and write(2), no peer to wait for */
	PEER_FD_POLLED,    /* as OTHER, from a peer that kept a write waiting: poll() first too */
};

/* The signal peer_io.c's watchdog thread sends a thread to end a write kept waiting. */
#define PEER_IO_WATCHDOG_SIGNAL SIGURG

/* peer_io_watchdog_start() - eventfd writes by one write(2) each, a watchdog ending a stall. */
int peer_io_watchdog_start(void);

/* peer_fd_kind() - what fd is (once, when it is handed over: fstat). */
enum peer_fd_kind peer_fd_kind(int fd);

/* peer_read() - read(2) that does not wait; -1 with errno EAGAIN when nothing is there. */
ssize_t peer_read(int fd, enum peer_fd_kind kind, void *buf, size_t len);

/* peer_write() - write(2) that does not wait; -1, errno EAGAIN (peer full) or ETIMEDOUT. */
ssize_t peer_write(int fd, enum peer_fd_kind kind, const void *buf, size_t len);

#endif
