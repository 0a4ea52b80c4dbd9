/* vhost_user.h - one vhost-user frontend connection: protocol state, memory table, queue fds. */
#ifndef VNETD_VHOST_USER_H
#define VNETD_VHOST_USER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dirty_log.h"
#include "guest_mem.h"
#include "vnet_dev.h"

/* Callbacks into the port that owns the connection. */
struct vu_owner_ops {
	/*
	 * Queue qidx's kick fd changes from old_fd to new_fd (-1: none). Called before old_fd is
	 * closed, so the owner can take it out of epoll and register new_fd.
	 */
	void (*kick_changed)(void *ctx, unsigned qidx, int old_fd, int new_fd);
	/*
	 * The device-state pipe (SET_DEVICE_STATE_FD) changes from old_fd to new_fd (-1: none),
	 * to be watched for `events` (EPOLLIN to load, EPOLLOUT to save); call
	 * vu_conn_state_io() when it is ready. Called before old_fd is closed.
	 */
	void (*state_fd_changed)(void *ctx, int old_fd, int new_fd, uint32_t events);
	/*
	 * The most guest memory (mem_cap.h: table and dirty log, in bytes of address space) this
	 * connection may map: the port's max-mem=. NULL or 0: MEM_CAP_PORT_DEFAULT.
	 */
	uint64_t (*mem_cap)(void *ctx);
};

/* A device-state transfer over a pipe (SET_DEVICE_STATE_FD ... CHECK_DEVICE_STATE). */
struct vu_state_xfer {
	int fd;           /* our end of the pipe while the transfer runs; -1 otherwise */
	bool load;        /* reading the destination's state (else writing the source's) */
	bool active;      /* a transfer was started and not yet checked */
	int result;       /* 0 done and valid, 1 in progress, -1 failed */
	size_t len, off;  /* save: bytes to write, written; load: bytes read */
	uint8_t kind;     /* enum peer_fd_kind of fd */
	uint8_t buf[VNET_STATE_MAX];
};

struct vu_queue_fds {
	int kick; /* eventfd the frontend signals; -1 if none */
	int call; /* eventfd or socketpair end we write 8 bytes to; -1 if none */
	int err;  /* eventfd for queue errors; -1 if none */
	/* What each is (peer_io.h), decided once when it is handed over, not per use. */
	uint8_t kick_kind, call_kind, err_kind;
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
	/* Live migration (vhost_user_migrate.c). */
	bool log_all;                /* SET_FEATURES carried VHOST_F_LOG_ALL */
	struct dirty_log log;        /* SET_LOG_BASE's bitmap (log.bitmap NULL: none) */
	uint64_t rarps;              /* SEND_RARP announcements sent through the backend */
	struct vu_state_xfer xfer;
	atomic_int mem_fault;        /* guest memory shrank under us (SIGBUS): drop frontend */
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

#endif
