/* SPDX-License-Identifier: MIT */
/* vhost_user_conn.h - the state of one vhost-user frontend connection (types only, no functions). */
#ifndef VNETD_VHOST_USER_CONN_H
#define VNETD_VHOST_USER_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mem/mem.h"
#include "vhost/vhost_user_io.h"
#include "dev/dev.h"

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
	/*
	 * The most memory regions (mappings in the daemon-wide SIGBUS table, guest_fault.h) this
	 * connection may map, which GET_MAX_MEM_SLOTS answers: the port's max-mem-slots=. NULL or
	 * 0: MEM_CAP_SLOTS_DEFAULT; at most GUEST_MEM_MAX_REGIONS.
	 */
	unsigned (*mem_slots)(void *ctx);
	/*
	 * Whether to offer VHOST_USER_PROTOCOL_F_DEVICE_STATE (the port's migrate-state=): false
	 * leaves vnetd's per-port state out of a migration. NULL: offered.
	 */
	bool (*device_state)(void *ctx);
	/* SET_VRING_BASE gave queue qidx `base` (before any start it leads to). NULL: not told. */
	void (*ring_base)(void *ctx, unsigned qidx, uint32_t base);
	/*
	 * Queue qidx is about to start (fully configured, nothing processed yet): the owner may
	 * set where it resumes (vq_set_base()). NULL: not told.
	 */
	void (*queue_starting)(void *ctx, unsigned qidx);
};

/* A device-state transfer over a pipe (SET_DEVICE_STATE_FD ... CHECK_DEVICE_STATE). */
struct vu_state_xfer {
	int fd;           /* our end of the pipe while the transfer runs; -1 otherwise */
	bool load;        /* reading the destination's state (else writing the source's) */
	bool active;      /* a transfer was started and not yet checked */
	int result;       /* 0 done and valid, 1 in progress, -1 failed */
	size_t len, off;  /* save: bytes to write, written; load: bytes read */
	uint8_t kind;     /* enum peer_fd_kind of fd */
	/* VNET_STATE_MAX bytes while the pipe is open (allocated at SET_DEVICE_STATE_FD, freed
	 * with the pipe): a connection that never migrates holds none. */
	uint8_t *buf;
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
	/* A write to its call or error fd was kept waiting (peer_io.h, ETIMEDOUT): no more
	 * writes, and the owner drops the frontend (guest_fault_note(), like mem_fault). */
	atomic_int peer_stalled;
	bool polled_writes;          /* set by the owner: poll() before each eventfd write too */
	struct vu_rxbuf rx;          /* the message being received (vhost_user_io.h) */
};

#endif
