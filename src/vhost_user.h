/* vhost_user.h - one vhost-user frontend connection: protocol state, memory table, queue fds. */
#ifndef VNETD_VHOST_USER_H
#define VNETD_VHOST_USER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vnet_dev.h"

/* Callbacks into the port that owns the connection. */
struct vu_owner_ops {
	/*
	 * Queue qidx's kick fd changes from old_fd to new_fd (-1: none). Called before old_fd is
	 * closed, so the owner can take it out of epoll and register new_fd.
	 */
	void (*kick_changed)(void *ctx, unsigned qidx, int old_fd, int new_fd);
};

struct vu_queue_fds {
	int kick; /* eventfd the frontend signals; -1 if none */
	int call; /* eventfd or socketpair end we write 8 bytes to; -1 if none */
	bool call_is_socket; /* decided once at SET_VRING_CALL, not per notification */
	int err;  /* eventfd for queue errors; -1 if none */
};

/* State of one frontend connection. */
struct vu_conn {
	int sock;
	int backend_req_fd;          /* SET_BACKEND_REQ_FD channel, -1 if none */
	uint64_t protocol_features;  /* negotiated */
	bool features_set;           /* SET_FEATURES seen */
	bool protocol_bit_accepted;  /* SET_FEATURES carried VHOST_USER_F_PROTOCOL_FEATURES */
	bool owner_set;
	struct guest_mem mem;
	struct vnet_dev *dev;
	struct vu_queue_fds q[VNET_MAX_QUEUES];
	const struct vu_owner_ops *ops;
	void *ctx;
	uint64_t messages;           /* handled, for stats */
	volatile sig_atomic_t mem_fault; /* guest memory shrank under us (SIGBUS): drop frontend */
	/* The message being received: bytes and fds gathered so far (never blocks the loop). */
	uint8_t rxbuf[12 + 512];
	size_t rxlen;
	int rxfds[8];
	unsigned nrxfds;
};

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

/* vu_conn_signal_error() - signal queue qidx's SET_VRING_ERR eventfd (the queue broke). */
void vu_conn_signal_error(struct vu_conn *c, unsigned qidx);

/* vu_conn_notify() - signal queue qidx's call fd (8 bytes, eventfd or socketpair). */
void vu_conn_notify(struct vu_conn *c, unsigned qidx);

#endif
