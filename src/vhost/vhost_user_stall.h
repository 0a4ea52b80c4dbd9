/* SPDX-License-Identifier: MIT */
/* vhost_user_stall.h - how to write the fds of a connection on a port that saw a frontend stall. */
#ifndef VNETD_VHOST_USER_STALL_H
#define VNETD_VHOST_USER_STALL_H

#include "lib/peer_io.h"
#include "vhost/vhost_user_conn.h"

/* vu_peer_fd_kind() - peer_fd_kind(fd), PEER_FD_POLLED for an eventfd if c->polled_writes. */
enum peer_fd_kind vu_peer_fd_kind(const struct vu_conn *c, int fd);

#endif
