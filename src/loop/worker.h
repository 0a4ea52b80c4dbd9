/* SPDX-License-Identifier: MIT */
/* worker.h - event-loop threads: each owns an epoll set, its run queues and its ports' fds. */
#ifndef VNETD_WORKER_H
#define VNETD_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop/event_loop.h"

#define VNETD_MAX_WORKERS 16

struct worker;
struct uring_tx;

/* What a worker's owner does with its events (a const table, like every other owner). */
struct worker_ops {
	/* One event of this worker's epoll set, or a run-queue / flush-list entry. */
	void (*dispatch)(void *ctx, struct worker *w, struct ev_ref ref, uint32_t events);
	/* A guest memory fault happened somewhere: check this worker's ports. */
	void (*fault)(void *ctx, struct worker *w);
	/* Start of a round, before its events (the switch's clock). May be NULL. */
	void (*round_begin)(void *ctx, struct worker *w);
	/* The worker's wake eventfd fired (worker_wake(): the switch's frames, a park). May be NULL. */
	void (*woken)(void *ctx, struct worker *w);
	/* End of a round, after the flush list (the switch wakes whom it queued for). May be NULL. */
	void (*round_end)(void *ctx, struct worker *w);
};

/*
 * One event loop. Worker 0 runs on the main thread (with the signal fd and the control
 * socket); workers 1.. run on their own threads, created before the sandbox. A port belongs to
 * one worker for its whole life: its fds are in that worker's epoll set, its queues yield to
 * that worker's run queue, so its device is only ever touched by that thread — except while
 * the worker is parked (worker_pool_park()), when the main thread may read and change it. The
 * one exception, a switch port with queue-workers= (port_lanes.c): its home is worker 0 and
 * each pair's queues belong to the pair's worker, which runs them through a view of its own
 * (vnet_dev_lane.c); the home parks the others around whatever changes the device.
 */
struct worker {
	unsigned id;
	int epfd;
	int wake_fd;             /* eventfd in epfd: a park request, the stop, switch frames */
	struct run_queue rq;     /* queues that yielded at their budget, oldest first */
	struct run_queue flushq; /* ports holding received packets the guest cannot see yet */
	unsigned fault_gen;      /* guest_fault_generation() last looked at */
	unsigned nports;         /* ports it owns (for placing new ones) */
	unsigned poll_us;        /* --poll-us: its ports' TX poll window (vnet_dev_set_poll()) */
	unsigned poll_budget_ns; /* --poll-budget: adaptive polling's ns per packet */
	uint64_t look_ns;        /* poll mode: when a round with queued work last looked at fds */
	uint32_t look_gap_ns;    /* adaptive poll mode: the gap to the next look (worker.c) */
	struct worker_pool *pool;
	pthread_t thread;
	bool started;
	struct uring_tx *uring;  /* its taps' batched writes (uring_tx.c), or NULL: one by one */
};

struct worker_pool {
	struct worker w[VNETD_MAX_WORKERS];
	unsigned n;
	const struct worker_ops *ops;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool park;       /* the main thread wants every other worker to stop between rounds */
	unsigned parked; /* workers waiting in park */
	unsigned running; /* threads that reached their loop */
	bool stop;
	bool no_uring; /* --no-io-uring: set before worker_pool_init(), which makes no rings then */
};

/* worker_pool_init() - n workers (epoll sets, run queues of rq_cap entries); 0 or -1 (logged). */
int worker_pool_init(struct worker_pool *p, unsigned n, unsigned rq_cap,
		     const struct worker_ops *ops, void *ctx);

/*
 * worker_pool_start() - start the threads of workers 1..n-1 and wait until each runs (the
 * sandbox must come after their start-up system calls); 0 or -1 (logged).
 */
int worker_pool_start(struct worker_pool *p);

/* worker_round() - one round of worker w: wait for events (not while work is queued), dispatch
 * them, one budget for each queue that waited, publish received packets, check faults. 0, or
 * -1 when epoll_wait failed (logged). */
int worker_round(struct worker *w);

/*
 * worker_pool_park() / worker_pool_unpark() - from the main thread: every other worker finishes
 * its round and waits, so the caller may touch any port (control requests, port changes); the
 * data path of the other workers pauses meanwhile. No-ops with one worker. Not nested.
 */
void worker_pool_park(struct worker_pool *p);
void worker_pool_unpark(struct worker_pool *p);

/*
 * worker_wake() - from any thread: make worker w's epoll_wait() return; its thread then calls
 * ops->woken (one eventfd write; wake-ups that come close together are read as one).
 */
void worker_wake(struct worker *w);

/* worker_pool_stop() - end and join the threads (their ports stay, for the main thread). */
void worker_pool_stop(struct worker_pool *p);

/* worker_pool_free() - close the epoll sets and free the run queues (after the ports went). */
void worker_pool_free(struct worker_pool *p);

#endif
