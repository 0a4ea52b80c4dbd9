/* SPDX-License-Identifier: MIT */
/* vhost.h - the vhost-user protocol's API: one frontend connection, what its owner (port.c) calls. */
#ifndef VNETD_VHOST_H
#define VNETD_VHOST_H

#include <stdint.h>

#include "vhost/vhost_user_conn.h"

/* vu_conn_init() - take ownership of an accepted socket for device dev (dev is reset). */
void vu_conn_init(struct vu_conn *c, int sock, struct vnet_dev *dev, const struct vu_owner_ops *ops,
		  void *ctx);

/*
 * vu_conn_handle_readable() - read and handle one message from the socket. Returns 0 to keep
 * the connection, -1 when it must be closed (EOF, I/O error, protocol violation: logged).
 */
int vu_conn_handle_readable(struct vu_conn *c);

/* vu_conn_close() - close every fd, unmap guest memory, reset the device. Idempotent. */
void vu_conn_close(struct vu_conn *c);

/*
 * vu_conn_kick_failed() - queue qidx's kick fd reported EPOLLHUP or EPOLLERR (a pipe whose
 * write end is closed, a socket whose peer went): it is closed (the owner takes it out of epoll
 * first) and the queue marked broken, with one log line. A new SET_VRING_KICK gives it another.
 */
void vu_conn_kick_failed(struct vu_conn *c, unsigned qidx, uint32_t events);

/* vu_conn_signal_error() - signal queue qidx's SET_VRING_ERR eventfd (the queue broke). */
void vu_conn_signal_error(struct vu_conn *c, unsigned qidx);

/*
 * vu_conn_state_io() - the device-state pipe is ready (events from epoll): write or read what
 * it takes without blocking; at the end the pipe is closed (owner told) and the result kept
 * for CHECK_DEVICE_STATE.
 */
void vu_conn_state_io(struct vu_conn *c, uint32_t events);

/* vu_conn_notify() - signal queue qidx's call fd (8 bytes, eventfd or socketpair). */
void vu_conn_notify(struct vu_conn *c, unsigned qidx);

/* vu_conn_stalled() - a write to the frontend's fd was kept waiting: stop writing, drop it. */
void vu_conn_stalled(struct vu_conn *c, unsigned qidx, const char *what);

#endif
