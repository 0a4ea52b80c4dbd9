/* SPDX-License-Identifier: MIT */
/* worker.c - event-loop threads: one epoll loop each, parking for the main thread's changes. */
#include "loop/worker.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "mem/mem.h"
#include "lib/log.h"
#include "lib/uring_tx.h"
#include "dev/dev.h"

#define MAX_EVENTS 64

/**
 * worker_pool_init() - set up the workers: an epoll set with its wake eventfd and two run queues
 * (yielded work, the flush list) each.
 * @p: the pool, zeroed by the caller
 * @n: number of workers, 1..VNETD_MAX_WORKERS
 * @rq_cap: entries of each run queue (one per queue the worker may own)
 * @ops: what the owner does with events (const table, kept)
 * @ctx: passed to every @ops call
 *
 * No thread starts here (worker_pool_start()). Main thread.
 *
 * Return: 0, or -1 (logged); worker_pool_free() cleans up either way.
 */
int worker_pool_init(struct worker_pool *p, unsigned n, unsigned rq_cap,
		     const struct worker_ops *ops, void *ctx)
{
	for (unsigned i = 0; i < n; i++)
		p->w[i].epfd = p->w[i].wake_fd = -1;
	p->n = n;
	p->ops = ops;
	p->ctx = ctx;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = &p->w[i];

		w->id = i;
		w->pool = p;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		w->fault_gen = guest_fault_generation();
		/* Before the sandbox, which allows io_uring_enter() but no io_uring_setup(). Once
		 * one could not be made, the others would not be either. */
		if (!p->no_uring && (i == 0 || p->w[0].uring))
			w->uring = uring_tx_create();
		if (w->epfd < 0 || w->wake_fd < 0 || run_queue_init(&w->rq, rq_cap) < 0 ||
		    run_queue_init(&w->flushq, rq_cap) < 0 ||
		    event_loop_add(w->epfd, w->wake_fd, EPOLLIN,
				   (struct ev_ref){.kind = EV_WAKE, .fd = w->wake_fd}) < 0) {
			log_err("worker %u: %s", i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * A polling worker's rounds are short (its queues find their rings empty and stay queued), and
 * an epoll_wait() per round would be a system call per few packets. It looks at its fds at most
 * every WORKER_LOOK_NS while it has queued work: other ports' kicks, the wake eventfd and
 * signals wait that long at most. With adaptive polling (--poll-us auto) most rings are
 * event-driven while a few poll, windows of a few µs: the worker looks every
 * WORKER_LOOK_AUTO_NS after a look that found events, and each look that finds none doubles
 * that, up to WORKER_LOOK_AUTO_MAX_NS, so a worker whose only traffic is on its polling rings
 * (a ping-pong) pays few system calls, and a kick that comes waits at most the longer gap once.
 * Event-driven workers (poll_us 0) look every round.
 */
#define WORKER_LOOK_NS 20000u
#define WORKER_LOOK_AUTO_NS 2000u
#define WORKER_LOOK_AUTO_MAX_NS 16000u

/* worker_now() - CLOCK_MONOTONIC in ns. */
static uint64_t worker_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* worker_look_due() - with work queued: whether this round looks at the fds (poll mode: rarely). */
static bool worker_look_due(struct worker *w)
{
	uint64_t now;

	if (!w->poll_us)
		return true;
	now = worker_now();
	if (now - w->look_ns < (w->poll_us == VNET_POLL_AUTO ? w->look_gap_ns : WORKER_LOOK_NS))
		return false;
	w->look_ns = now;
	return true;
}

/*
 * worker_looked() - adaptive poll mode: a look found n events; the next comes sooner or later.
 * A wait that slept counts as a look now (the next round need not look again at once).
 */
static void worker_looked(struct worker *w, int n, bool slept)
{
	if (slept)
		w->look_ns = worker_now();
	if (n > 0 || w->look_gap_ns < WORKER_LOOK_AUTO_NS)
		w->look_gap_ns = WORKER_LOOK_AUTO_NS;
	else if (n == 0 && w->look_gap_ns < WORKER_LOOK_AUTO_MAX_NS)
		w->look_gap_ns *= 2;
}

/**
 * worker_round() - one round of a worker's event loop.
 * @w: the worker; called on its own thread (worker 0: the main thread)
 *
 * Waits for events (without waiting while work is queued; a polling worker with queued work
 * looks at its fds every WORKER_LOOK_NS, or adaptively: worker_looked()), calls
 * ops->round_begin, dispatches the
 * events (the wake eventfd is read here and reported through ops->woken), gives one budget to each
 * run-queue entry queued before the round, dispatches the flush list (received packets published
 * once per round), calls ops->round_end, then ops->fault if a guest memory fault happened since
 * the worker last looked.
 *
 * Return: 0 (EINTR included), or -1 when epoll_wait failed (logged).
 */
int worker_round(struct worker *w)
{
	const struct worker_ops *ops = w->pool->ops;
	void *ctx = w->pool->ctx;
	struct epoll_event events[MAX_EVENTS];
	/* Work left over from budgets: look at the other fds without sleeping, then run it. */
	unsigned pending = run_queue_len(&w->rq);
	unsigned gen;
	int n = 0;

	if (!pending || worker_look_due(w)) {
		n = epoll_wait(w->epfd, events, MAX_EVENTS, pending ? 0 : -1);
		if (w->poll_us == VNET_POLL_AUTO)
			worker_looked(w, pending ? n : 1, !pending); /* woken: events came */
	}

	if (n < 0) {
		if (errno == EINTR)
			return 0;
		log_err("worker %u: epoll_wait: %s", w->id, strerror(errno));
		return -1;
	}
	if (ops->round_begin)
		ops->round_begin(ctx, w);
	for (int i = 0; i < n; i++) {
		struct ev_ref ref = ev_ref_unpack(events[i].data.u64);
		uint64_t v;

		if (ref.kind == EV_WAKE) {
			if (read(w->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_warn("worker %u: wake fd: %s", w->id, strerror(errno));
			if (ops->woken)
				ops->woken(ctx, w);
			continue;
		}
		ops->dispatch(ctx, w, ref, events[i].events);
	}
	/* One budget each for what waited before this round; re-queued work goes behind. */
	for (struct ev_ref ref; pending-- && run_queue_pop(&w->rq, &ref);)
		ops->dispatch(ctx, w, ref, 0);
	/* Batch: received packets become visible once per round, on the ports that have some. */
	for (struct ev_ref ref; run_queue_pop(&w->flushq, &ref);)
		ops->dispatch(ctx, w, ref, 0);
	if (ops->round_end)
		ops->round_end(ctx, w);
	gen = guest_fault_generation();
	if (gen != w->fault_gen) {
		w->fault_gen = gen;
		ops->fault(ctx, w);
	}
	return 0;
}

/**
 * worker_wake() - make a worker's epoll_wait() return; its thread then calls ops->woken.
 * @w: the worker
 *
 * Any thread; one eventfd write (EAGAIN: a wake-up is pending anyway, so wake-ups that come close
 * together are read as one).
 */
void worker_wake(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("worker %u: wake: %s", w->id, strerror(errno));
}

/* park_point() - between two rounds of a worker thread: wait while the main thread works. */
static bool park_point(struct worker_pool *p)
{
	bool stop;

	pthread_mutex_lock(&p->lock);
	if (p->park) {
		p->parked++;
		pthread_cond_broadcast(&p->cond);
		while (p->park && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		p->parked--;
	}
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return !stop;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct worker_pool *p = w->pool;

	uring_tx_bind(w->uring); /* its ports' taps write through it */
	/* Running: glibc's per-thread set-up (rseq registration...) is done, so the sandbox
	 * may come now (worker_pool_start() waits for this). */
	pthread_mutex_lock(&p->lock);
	p->running++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	while (park_point(w->pool))
		if (worker_round(w) < 0)
			break;
	return NULL;
}

/**
 * worker_pool_start() - start the threads of workers 1..n-1 and wait until each runs its loop.
 * @p: the pool
 *
 * Main thread, before the sandbox (which must come after the threads' start-up system calls).
 *
 * Return: 0, or -1 (logged) when a thread could not be created.
 */
int worker_pool_start(struct worker_pool *p)
{
	uring_tx_bind(p->w[0].uring); /* worker 0 is this thread */
	for (unsigned i = 1; i < p->n; i++) {
		int r = pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i]);

		if (r != 0) {
			log_err("worker %u: pthread_create: %s", i, strerror(r));
			return -1;
		}
		p->w[i].started = true;
	}
	pthread_mutex_lock(&p->lock);
	while (p->running + 1 < p->n)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/**
 * worker_pool_park() - stop every other worker between two rounds.
 * @p: the pool
 *
 * Main thread only; not nested. Returns when every started worker waits, so the caller may touch
 * any port (control requests, port changes); their data path pauses until worker_pool_unpark().
 * A no-op with one worker.
 */
void worker_pool_park(struct worker_pool *p)
{
	if (p->n < 2)
		return;
	pthread_mutex_lock(&p->lock);
	p->park = true;
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 1; i < p->n; i++)
		if (p->w[i].started)
			worker_wake(&p->w[i]);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		unsigned want = 0;

		for (unsigned i = 1; i < p->n; i++)
			want += p->w[i].started;
		if (p->parked >= want)
			break;
		pthread_cond_wait(&p->cond, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
}

/**
 * worker_pool_unpark() - let the workers worker_pool_park() stopped run again.
 * @p: the pool
 *
 * Main thread only; a no-op with one worker.
 */
void worker_pool_unpark(struct worker_pool *p)
{
	if (p->n < 2)
		return;
	pthread_mutex_lock(&p->lock);
	p->park = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/**
 * worker_pool_stop() - end the worker threads and join them.
 * @p: the pool
 *
 * Main thread. Their ports stay, for the main thread to remove.
 */
void worker_pool_stop(struct worker_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 1; i < p->n; i++)
		if (p->w[i].started) {
			worker_wake(&p->w[i]);
			pthread_join(p->w[i].thread, NULL);
			p->w[i].started = false;
		}
}

/**
 * worker_pool_free() - close the epoll sets and wake fds and free the run queues.
 * @p: the pool; after worker_pool_stop() and after the ports went
 */
void worker_pool_free(struct worker_pool *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];

		if (w->wake_fd >= 0)
			close(w->wake_fd);
		if (w->epfd >= 0)
			close(w->epfd);
		w->wake_fd = w->epfd = -1;
		run_queue_free(&w->rq);
		run_queue_free(&w->flushq);
		uring_tx_destroy(w->uring);
		w->uring = NULL;
	}
}
