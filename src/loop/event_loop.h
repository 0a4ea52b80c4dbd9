/* SPDX-License-Identifier: MIT */
/* event_loop.h - the one epoll loop: every fd is registered with a small typed reference. */
#ifndef VNETD_EVENT_LOOP_H
#define VNETD_EVENT_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

/* What an fd is; the daemon dispatches on this with one switch. */
enum ev_kind {
	EV_NONE = 0,
	EV_SIGNAL,          /* signalfd: SIGTERM/SIGINT */
	EV_CONTROL_LISTEN,  /* control socket listener */
	EV_CONTROL_CLIENT,  /* one control socket client */
	EV_VU_LISTEN,       /* vhost-user listener of port `port` */
	EV_VU_CONN,         /* vhost-user connection of port `port` */
	EV_VU_BACKEND_REQ,  /* backend request channel (unused for reads, kept for HUP) */
	EV_KICK,            /* kick fd of queue `queue` of port `port` */
	EV_QUEUE_TIMER,     /* timerfd of queue `queue` of port `port` */
	EV_TAP,             /* tap fd of port `port` */
	EV_QUEUE_RUN,       /* run queue entry: queue `queue` of port `port` has work left */
	EV_PORT_FLUSH,      /* flush list entry: port `port` has received packets to publish */
	EV_METRICS_LISTEN,  /* Prometheus metrics listener */
	EV_METRICS_CLIENT,  /* one metrics HTTP connection (`queue`: its slot) */
	EV_METRICS_TIMER,   /* timerfd closing metrics connections past their time */
	EV_DEV_STATE,       /* device-state pipe of port `port` (live migration) */
	EV_RECONNECT,       /* timerfd of client-mode port `port`: connect again */
	EV_WAKE,            /* eventfd of a worker: park request, stop, or switch frames (worker.c) */
	EV_SWITCH_RX,       /* run queue entry: frames other workers queued for this worker's
	                     * switch ports are left (`port` is EV_PORT_NONE) */
	EV_STATE_TIMER,     /* timerfd of port `port`: write its --state-dir file (port.c) */
};

/* Typed reference carried in epoll_event.data.u64. */
struct ev_ref {
	uint8_t kind;   /* enum ev_kind */
	uint8_t queue;  /* queue index, or client slot */
	uint16_t port;  /* port index (slot in the daemon's port table) */
	int32_t fd;
};

_Static_assert(sizeof(struct ev_ref) == sizeof(uint64_t), "ev_ref must fit epoll data");

#define EV_PORT_NONE 0xffffu /* ev_ref.port of entries that belong to no port */

/* ev_ref_pack() / ev_ref_unpack() - convert to and from the epoll data word. */
uint64_t ev_ref_pack(struct ev_ref ref);
struct ev_ref ev_ref_unpack(uint64_t word);

/* event_loop_add() - register fd with events and ref; 0 or -errno. */
int event_loop_add(int epfd, int fd, uint32_t events, struct ev_ref ref);

/* event_loop_mod() - change the events of a registered fd; 0 or -errno. */
int event_loop_mod(int epfd, int fd, uint32_t events, struct ev_ref ref);

/* event_loop_del() - unregister fd (ignores fds that were not registered). */
void event_loop_del(int epfd, int fd);

/*
 * A FIFO of work that stopped at its budget (fairness): the loop polls epoll without waiting
 * while it is non-empty and runs the entries that were queued before each round, so work
 * re-queued during a round waits behind everything else that is ready. Owners make sure an
 * entry is queued at most once, so `cap` entries (one per queue) never overflow.
 */
struct run_queue {
	struct ev_ref *ring;
	unsigned cap, head, len;
};

/* run_queue_init() - room for cap entries; 0 or -ENOMEM. */
int run_queue_init(struct run_queue *rq, unsigned cap);

/* run_queue_free() - release the ring. */
void run_queue_free(struct run_queue *rq);

/* run_queue_push() - append ref; false if full (a bug: logged by the caller). */
bool run_queue_push(struct run_queue *rq, struct ev_ref ref);

/* run_queue_pop() - take the oldest entry; false if empty. */
bool run_queue_pop(struct run_queue *rq, struct ev_ref *ref);

/* run_queue_drop_port() - forget every entry of port `port` (it is being removed). */
void run_queue_drop_port(struct run_queue *rq, unsigned port);

/* run_queue_len() - entries waiting. */
static inline unsigned run_queue_len(const struct run_queue *rq)
{
	return rq->len;
}

#endif
