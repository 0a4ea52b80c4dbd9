/* port_internal.h - the port structure and the daemon-facing port functions. */
#ifndef VNETD_PORT_INTERNAL_H
#define VNETD_PORT_INTERNAL_H

#include <sys/types.h>

#include "event_loop.h"
#include "port.h"
#include "port_state.h"

struct vnet_switch;

struct port {
	unsigned index;
	char name[8];
	struct port_config cfg;
	int epfd;
	struct run_queue *rq;     /* the daemon's: queues that yielded at their budget */
	struct run_queue *flushq; /* the daemon's: ports with received packets to publish */
	int listen_fd;
	bool connected;
	bool tap_failed;
	uint64_t connections;
	struct vu_conn conn;
	struct vnet_dev *dev;
	struct vnet_backend *be;
	int timer_fd[VNET_MAX_QUEUES];
	unsigned worker;         /* the worker that owns it */
	int reconnect_fd;        /* client mode: timerfd for the next connect attempt */
	unsigned backoff_ms;     /* client mode: delay before the next attempt */
	bool connect_logged;     /* client mode: "cannot connect" said once per outage */
	int connect_fd;          /* client mode: a connect() in progress (EINPROGRESS), or -1 */
	dev_t sock_dev;          /* the listener's node at socket= (removed at the end if it */
	ino_t sock_ino;          /* is still the same one) */
	/* --state-dir: what the file says (restored once the first frontend's queues run), and
	 * what was last written. */
	bool restore_pending;
	bool restored[VNET_MAX_QUEUES];
	bool rx_restored;        /* the receive filter, RX mode and MAC (saved.rx) */
	struct port_state saved;
	/* A guest's changes are written by a timer, at most once a second (port_state_mark). */
	int state_timer_fd;      /* timerfd; -1 without --state-dir */
	bool state_pending;      /* the timer is armed for a change that may be unwritten */
	uint64_t state_last_ns;  /* the last write attempt (CLOCK_MONOTONIC); 0: none yet */
};

/* port_set_state_dir() - the --state-dir directory (an fd) for every port created after. */
void port_set_state_dir(int dirfd);

/*
 * port_state_sync() - write the port's state file now if its state changed since the last
 * write (called after control requests, and by the state timer, at a disconnect and at port
 * removal; never on the data path). A guest's control-queue kicks only arm the timer.
 */
void port_state_sync(struct port *p);

/*
 * port_create() - set up a port (backend, listener, timers) of worker `worker` in its epoll
 * set epfd; queues that yield go on rq, and the port goes on flushq when it has received
 * packets to publish. NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, unsigned worker, int epfd,
			 struct run_queue *rq, struct run_queue *flushq, struct vnet_switch *sw);

/* port_destroy() - disconnect, close every fd, free. NULL is fine. */
void port_destroy(struct port *p);

/* port_handle_event() - dispatch one epoll event that belongs to this port. */
void port_handle_event(struct port *p, struct ev_ref ref, uint32_t events);

/* port_flush_rx() - publish received packets (the port asked for it on flushq). */
void port_flush_rx(struct port *p);

/* port_check_fault() - drop the frontend if its guest memory faulted (SIGBUS). */
void port_check_fault(struct port *p);

#endif
