/* SPDX-License-Identifier: MIT */
/* uring_tx.c - batched writes through one restricted io_uring per thread: a burst, one system call. */
#include "lib/uring_tx.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/log.h"

struct uring_tx {
	struct io_uring ring;
	bool broken; /* an io_uring_enter() failed: never again (its SQEs must not run later) */
};

/* The calling thread's ring (uring_tx_bind()): each worker writes through its own. */
static _Thread_local struct uring_tx *self;

/**
 * uring_tx_create() - an io_uring that can only write: created disabled, restricted to
 * IORING_OP_WRITEV with no SQE flag but IOSQE_IO_LINK, then enabled.
 *
 * Made before the sandbox (whose filter allows io_uring_enter() only, not io_uring_setup()), one
 * per worker thread. A process that is taken over can use the ring for nothing a write(2) of
 * its own could not do. A kernel without io_uring or without restrictions (before 5.10), or
 * with io_uring disabled (the kernel.io_uring_disabled sysctl, a container's seccomp profile),
 * gives NULL: the caller writes one frame per system call, as before.
 *
 * Return: the ring, or NULL (logged at info level).
 */
struct uring_tx *uring_tx_create(void)
{
	struct io_uring_restriction res[2];
	struct uring_tx *u = calloc(1, sizeof(*u));
	int r;

	if (!u)
		return NULL;
	r = io_uring_queue_init(URING_TX_MAX, &u->ring, IORING_SETUP_R_DISABLED);
	if (r < 0) {
		log_info("io_uring: not available (%s): taps get one write per frame",
			 strerror(-r));
		free(u);
		return NULL;
	}
	memset(res, 0, sizeof(res));
	res[0].opcode = IORING_RESTRICTION_SQE_OP;
	res[0].sqe_op = IORING_OP_WRITEV;
	res[1].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[1].sqe_flags = IOSQE_IO_LINK;
	/* Debian 12's liburing 2.3 declares io_uring_register_restrictions() and
	 * io_uring_enable_rings() but does not export them: the system call itself. */
	r = (int)syscall(__NR_io_uring_register, u->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, res,
			 2);
	if (r == 0)
		r = (int)syscall(__NR_io_uring_register, u->ring.ring_fd,
				 IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (r < 0) {
		log_info("io_uring: cannot restrict a ring to writes (%s): taps get one write per "
			 "frame", strerror(errno));
		io_uring_queue_exit(&u->ring);
		free(u);
		return NULL;
	}
	return u;
}

/**
 * uring_tx_destroy() - close a ring (no thread may use it any more).
 * @u: the ring, or NULL
 */
void uring_tx_destroy(struct uring_tx *u)
{
	if (!u)
		return;
	if (self == u)
		self = NULL;
	io_uring_queue_exit(&u->ring);
	free(u);
}

/**
 * uring_tx_bind() - make @u the calling thread's ring (uring_tx_self()).
 * @u: a ring no other thread is bound to, or NULL (none: writes one by one)
 */
void uring_tx_bind(struct uring_tx *u)
{
	self = u;
}

/**
 * uring_tx_self() - the calling thread's ring.
 *
 * Return: what uring_tx_bind() set on this thread, or NULL.
 */
struct uring_tx *uring_tx_self(void)
{
	return self;
}

/**
 * uring_tx_writev() - write a burst to one fd with one io_uring_enter(), in order.
 * @u: the calling thread's ring
 * @fd: the fd (a full one answers -EAGAIN at once: each write is RWF_NOWAIT, nothing waits)
 * @req: the writes, in order; their iovecs only need to stay valid during the call
 * @n: 1..URING_TX_MAX
 * @res: gets each write's result: bytes written, or -errno; a write after a failed one is not
 *       tried (-ECANCELED), so what went out is always a prefix of the burst
 *
 * The writes are linked: each starts after the one before completed, and the first that fails
 * (or writes short) cancels the rest. The call returns once every write completed.
 *
 * Return: 0, or -errno when the ring could not take the burst (nothing was written: the caller
 * writes them one by one; after a failed io_uring_enter() the ring is not used again):
 * -EOPNOTSUPP for an fd that cannot take a write without waiting.
 */
int uring_tx_writev(struct uring_tx *u, int fd, const struct uring_tx_req *req, unsigned n,
		    int *res)
{
	unsigned got = 0;
	int r;

	if (!n || n > URING_TX_MAX)
		return -EINVAL;
	if (u->broken)
		return -EIO;
	/* Every call reaps all it submitted, so the ring is empty here. */
	if (io_uring_sq_space_left(&u->ring) < n)
		return -EBUSY;
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

		/* offset -1: the file's position, as write(2) (a tap or a pipe has none) */
		io_uring_prep_writev(sqe, fd, req[i].iov, req[i].cnt, (__u64)-1);
		/* A full fd answers -EAGAIN: without it the ring would wait for room (it polls a
		 * pollable fd that refused a write), and the worker with it. */
		sqe->rw_flags = RWF_NOWAIT;
		io_uring_sqe_set_data64(sqe, i);
		if (i + 1 < n)
			sqe->flags |= IOSQE_IO_LINK;
	}
	do
		r = io_uring_submit_and_wait(&u->ring, n);
	while (r == -EINTR);
	if (r < 0) {
		/* Not taken (e.g. a seccomp filter refused io_uring_enter()): the SQEs stay in the
		 * shared ring, where a later enter would run them with stale iovecs. So none comes:
		 * this thread writes one by one from now on. */
		u->broken = true;
		log_warn("io_uring: io_uring_enter: %s: taps get one write per frame from now on",
			 strerror(-r));
		return r;
	}
	while (got < n) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		io_uring_for_each_cqe(&u->ring, head, cqe)
		{
			unsigned i = (unsigned)io_uring_cqe_get_data64(cqe);

			if (i < n)
				res[i] = cqe->res;
			seen++;
		}
		io_uring_cq_advance(&u->ring, seen);
		got += seen;
		if (got < n) {
			/* cannot happen: every write completes in the enter (RWF_NOWAIT) */
			do
				r = io_uring_wait_cqe(&u->ring, &cqe);
			while (r == -EINTR);
			if (r < 0) { /* cannot happen: the results we lack stay unknown */
				u->broken = true;
				return r;
			}
		}
	}
	/* An fd that cannot be written without waiting (no RWF_NOWAIT): the first write was
	 * refused and the rest cancelled, nothing went out: the caller writes them one by one. */
	if (res[0] == -EOPNOTSUPP)
		return -EOPNOTSUPP;
	return 0;
}
