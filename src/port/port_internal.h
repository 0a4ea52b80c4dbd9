/* SPDX-License-Identifier: MIT */
/* port_internal.h - struct port and its inline helpers: private to the files of src/port/. */
#ifndef VNETD_PORT_INTERNAL_H
#define VNETD_PORT_INTERNAL_H

/*
 * Only the port's own files (port.c, port_sock.c, port_persist.c, port_trunk.c) include this:
 * to the rest of vnetd a port is the opaque handle of port.h and port_internal.h. It declares
 * no function of any of them (each has its own header), so including it never makes a file
 * depend on a file above it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "loop/loop.h"
#include "config/config.h"
#include "port/port_state.h"
#include "vhost/vhost.h"
#include "dev/dev.h"

/* One port; the rest of vnetd holds it as an opaque handle (port.h, port_internal.h). */
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
	bool peer_stalled;       /* a frontend kept a write waiting: later ones are polled first */
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
	 * what was last written (saved: allocated by port_persist_open() with --state-dir only,
	 * NULL without). */
	bool restore_pending;
	bool restored[VNET_MAX_QUEUES];
	bool rx_restored;        /* the receive filter, RX mode and MAC (saved.rx) */
	bool rss_restored;       /* the driver's RSS settings (saved.rss) */
	struct port_state *saved;
	/* A guest's changes are written by a timer, at most once a second (port_persist_mark). */
	int state_timer_fd;      /* timerfd; -1 without --state-dir */
	bool state_pending;      /* the timer is armed for a change that may be unwritten */
	uint64_t state_last_ns;  /* the last write attempt (CLOCK_MONOTONIC); 0: none yet */
	/* --state-dir, packed rings (port_persist.c): per queue, what the file keeps of it (a
	 * clean stop; cleared when it starts again) and the frontend's SET_VRING_BASE. */
	struct port_ring_keep {
		struct port_state_ring kept;
		uint32_t from;
		bool from_set;
	} rings[VNET_MAX_QUEUES];
	/* A tap trunk (uplink=NAME,trunk=N+...; port_trunk.c): the tap's side of each VLAN. */
	struct port_uplink {
		struct port *p;
		uint16_t vid;
		struct vnet_backend *be; /* switch_attach_uplink() in the VLAN's switch */
	} uplinks[PORT_MAX_TRUNK];
	unsigned n_uplinks;
	uint64_t trunk_dropped; /* stat_atomic.h: tagged frames of no trunk VLAN, and failed sends */
	/*
	 * queue-workers= (port_lanes.c): the pairs other workers run, one lane per such worker.
	 * The port itself (its home, worker 0) keeps the vhost-user connection, the control queue
	 * and the device-wide state; lane_of_q[q] is 0 for its own queues, else 1 + the lane.
	 */
	struct port_lane {
		struct port *p;
		unsigned worker;
		int epfd;
		struct run_queue *rq, *flushq; /* that worker's */
		struct vnet_dev *dev;	       /* its view of the device (vnet_dev_lane.c) */
		struct vnet_backend *be;       /* its switch lane (switch_attach_lane()) */
	} lanes[VNET_MAX_QUEUE_PAIRS];
	unsigned nlanes;
	uint8_t lane_of_q[VNET_MAX_QUEUES];
	struct worker_pool *pool; /* with lanes: parked around whatever changes the device */
};

/* port_q_epfd() - the epoll set queue qidx's fds belong in (its worker's). */
static inline int port_q_epfd(const struct port *p, unsigned qidx)
{
	return qidx < VNET_MAX_QUEUES && p->lane_of_q[qidx] ? p->lanes[p->lane_of_q[qidx] - 1].epfd
							    : p->epfd;
}

/* port_q_dev() - the device view that runs queue qidx (the port's device, or a lane's). */
static inline struct vnet_dev *port_q_dev(const struct port *p, unsigned qidx)
{
	return qidx < VNET_MAX_QUEUES && p->lane_of_q[qidx] ? p->lanes[p->lane_of_q[qidx] - 1].dev
							    : p->dev;
}

_Static_assert(VNET_MAX_QUEUES <= UINT8_MAX, "a queue index must fit ev_ref.queue");
_Static_assert(VNETD_MAX_PORTS <= UINT16_MAX + 1, "a port index must fit ev_ref.port");

/* port_ref() - the reference an event of the port carries (its kind, queue and fd). */
static inline struct ev_ref port_ref(const struct port *p, enum ev_kind kind, unsigned queue, int fd)
{
	return (struct ev_ref){.kind = kind, .port = (uint16_t)p->index, .queue = (uint8_t)queue, .fd = fd};
}

/* port_now_ns() - the ports' clock: CLOCK_MONOTONIC in ns. */
static inline uint64_t port_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
