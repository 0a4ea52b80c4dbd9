/* SPDX-License-Identifier: MIT */
/* uring_tx.h - batched writes through one restricted io_uring per thread: a burst, one system call. */
#ifndef VNETD_URING_TX_H
#define VNETD_URING_TX_H

#include <stdbool.h>
#include <sys/uio.h>

/* The most writes one uring_tx_writev() call submits (the ring's size). */
#define URING_TX_MAX 64

struct uring_tx; /* opaque */

/* One write of a burst: cnt iovecs (at most 2) to fd. */
struct uring_tx_req {
	struct iovec iov[2];
	unsigned cnt;
};

struct uring_tx *uring_tx_create(void);
void uring_tx_destroy(struct uring_tx *u);
void uring_tx_bind(struct uring_tx *u);
struct uring_tx *uring_tx_self(void);
int uring_tx_writev(struct uring_tx *u, int fd, const struct uring_tx_req *req, unsigned n,
		    int *res);

#endif
