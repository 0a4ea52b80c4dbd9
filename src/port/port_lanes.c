/* SPDX-License-Identifier: MIT */
/* port_lanes.c - a port's queue pairs on other workers (queue-workers=): lanes, parking, sync. */
#include "port/port_lanes.h"
#include "port/port.h" /* the folder's API this file defines part of */

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>

#include "lib/log.h"
#include "port/port_internal.h"
#include "backend/switch/switch.h"
#include "dev/dev.h"
#include "loop/loop.h"

/*
 * A switch port with queue-workers=W0+W1+... lives on worker 0, its *home*: the vhost-user
 * connection, the control queue, the device-wide state (features, memory table, dirty log, RSS,
 * filter, coalescing settings) and its own pairs. Each other worker named gets a *lane*: a view
 * of the device (vnet_dev_lane.c) that runs that worker's pairs with scratch of its own, and a
 * switch lane (switch_attach_lane()) for their TX and RX. A pair's kick and call fds, queue
 * timer and run-queue entries are its worker's; its TX is processed there, and frames for the
 * port reach the pair the device picks on that pair's worker (switch.c). Everything that changes
 * the device runs on the home, the main thread, with every other worker parked, and is copied
 * into the lanes before they run again (port_lanes_unpark()).
 */

/* A lane's device environment: the port's fds, its worker's run queue and flush list. */
static uint64_t lane_now_ns(void *ctx)
{
	(void)ctx;
	return port_now_ns();
}

static void lane_notify(void *ctx, unsigned qidx)
{
	struct port_lane *l = ctx;

	if (l->p->connected)
		vu_conn_notify(&l->p->conn, qidx);
}

static void lane_arm_timer(void *ctx, unsigned qidx, uint64_t deadline_ns)
{
	struct port_lane *l = ctx;
	struct itimerspec its = {0};

	if (qidx >= VNET_MAX_QUEUES || l->p->timer_fd[qidx] < 0)
		return;
	its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
	if (timerfd_settime(l->p->timer_fd[qidx], TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_err("%s: timerfd_settime: %s", l->p->name, strerror(errno));
}

static bool lane_schedule(void *ctx, unsigned qidx)
{
	struct port_lane *l = ctx;

	if (run_queue_push(l->rq, port_ref(l->p, EV_QUEUE_RUN, qidx, -1)))
		return true;
	log_err("%s: run queue full; queue %u waits for its next kick", l->p->name, qidx);
	return false;
}

static void lane_queue_error(void *ctx, unsigned qidx)
{
	struct port_lane *l = ctx;

	if (l->p->connected)
		vu_conn_signal_error(&l->p->conn, qidx);
}

static void lane_rx_dirty(void *ctx)
{
	struct port_lane *l = ctx;
	unsigned lane = (unsigned)(l - l->p->lanes) + 1u;

	if (!run_queue_push(l->flushq, port_ref(l->p, EV_PORT_FLUSH, lane, -1))) {
		log_err("%s: flush list full; publishing at once", l->p->name);
		vnet_dev_rx_flush(l->dev);
	}
}

static const struct vnet_env_ops lane_env_ops = {
	.now_ns = lane_now_ns,
	.notify = lane_notify,
	.arm_timer = lane_arm_timer,
	.schedule = lane_schedule,
	.queue_error = lane_queue_error,
	.rx_dirty = lane_rx_dirty,
};

/* Move queue qidx's timer into lane l's epoll set. */
static int move_timer(struct port *p, struct port_lane *l, unsigned qidx)
{
	int fd = p->timer_fd[qidx];

	if (fd < 0)
		return 0;
	event_loop_del(p->epfd, fd);
	return event_loop_add(l->epfd, fd, EPOLLIN, port_ref(p, EV_QUEUE_TIMER, qidx, fd));
}

/**
 * port_lanes_setup() - put a switch port's queue pairs on the workers its queue-workers= names.
 * @p: the port, just created on worker 0 (its home)
 * @pool: the workers
 *
 * Each worker other than the home gets a lane: a device view running its pairs, a switch lane,
 * and its pairs' queue timers in its epoll set (the kick fds follow when the frontend sends
 * them: port_sock.c asks port_q_epfd()). Main thread, the workers parked or not started.
 *
 * Return: 0 (also without queue-workers=), or -1 (logged).
 */
int port_lanes_setup(struct port *p, struct worker_pool *pool)
{
	const struct port_config *c = &p->cfg;
	struct vnet_backend *runs[VNET_MAX_QUEUE_PAIRS];
	uint64_t mask[VNETD_MAX_WORKERS] = {0};

	p->pool = pool;
	if (!c->n_queue_workers)
		return 0;
	for (unsigned i = 0; i < c->n_queue_workers; i++)
		if (c->queue_workers[i] != p->worker)
			mask[c->queue_workers[i]] |= vnet_dev_pair_mask(i);
	for (unsigned w = 0; w < pool->n && w < VNETD_MAX_WORKERS; w++) {
		struct port_lane *l = &p->lanes[p->nlanes];

		if (!mask[w])
			continue;
		*l = (struct port_lane){.p = p, .worker = w, .epfd = pool->w[w].epfd,
					.rq = &pool->w[w].rq, .flushq = &pool->w[w].flushq};
		l->dev = vnet_dev_lane_create(p->dev, mask[w], &lane_env_ops, l);
		if (!l->dev) {
			log_err("%s: no memory for the pairs of worker %u", p->name, w);
			return -1;
		}
		p->nlanes++;
		for (unsigned q = 0; q < VNET_MAX_QUEUES; q++)
			if (mask[w] >> q & 1u) {
				p->lane_of_q[q] = (uint8_t)p->nlanes;
				if (move_timer(p, l, q) < 0) {
					log_err("%s: cannot watch the timer of queue %u", p->name, q);
					return -1;
				}
			}
		l->be = switch_attach_lane(p->be, l->dev, w);
		if (!l->be)
			return -1;
		vnet_dev_lane_sync(l->dev, p->dev, l->be);
		vnet_dev_set_poll(l->dev, pool->w[w].poll_us, pool->w[w].poll_budget_ns);
	}
	for (unsigned i = 0; i < c->n_queue_workers; i++) {
		unsigned lane = p->lane_of_q[2 * i];

		runs[i] = lane ? p->lanes[lane - 1].be : p->be;
		log_info("%s: queue pair %u on worker %u", p->name, i, c->queue_workers[i]);
	}
	return switch_port_set_pairs(p->be, runs, c->n_queue_workers);
}

/**
 * port_lanes_free() - free the lanes' device views; the port's queues are its device's again.
 * @p: the port, its switch port (and so its switch lanes) detached
 *
 * Main thread, the workers parked or stopped.
 */
void port_lanes_free(struct port *p)
{
	while (p->nlanes) {
		struct port_lane *l = &p->lanes[--p->nlanes];

		vnet_dev_lane_destroy(l->dev, p->dev);
		l->dev = NULL;
	}
	memset(p->lane_of_q, 0, sizeof(p->lane_of_q));
}

/**
 * port_lanes_sync() - copy the device's device-wide state into each lane's view.
 * @p: the port
 *
 * Main thread, the lanes' workers parked. A no-op without lanes.
 */
void port_lanes_sync(struct port *p)
{
	for (unsigned i = 0; i < p->nlanes; i++)
		vnet_dev_lane_sync(p->lanes[i].dev, p->dev, p->lanes[i].be);
}

/**
 * port_lanes_is_home() - whether an event of a port with lanes may change what they read.
 * @p: the port
 * @ref: the event
 *
 * Return: false for a data queue's kick, timer or run (its own worker's business), true for the
 * rest: vhost-user messages, the control queue, reconnects, state files.
 */
bool port_lanes_is_home(const struct port *p, struct ev_ref ref)
{
	if (ref.kind != EV_KICK && ref.kind != EV_QUEUE_TIMER && ref.kind != EV_QUEUE_RUN)
		return true;
	return ref.queue == vnet_dev_ctrl_queue_index(p->dev);
}

/**
 * port_lanes_park() - before a home event of a port with lanes: park the other workers.
 * @p: the port; on its home, the main thread
 *
 * Return: true when it parked them, false when they were parked already (a control request)
 * or the port has no lanes.
 */
bool port_lanes_park(struct port *p)
{
	if (!p->nlanes || !p->pool || p->pool->park)
		return false;
	worker_pool_park(p->pool);
	return true;
}

/**
 * port_lanes_unpark() - after it: copy the device's state into the lanes, let them run.
 * @p: the port
 * @parked: what port_lanes_park() returned
 */
void port_lanes_unpark(struct port *p, bool parked)
{
	port_lanes_sync(p);
	if (parked)
		worker_pool_unpark(p->pool);
}

/**
 * port_lanes_flush() - publish one lane's received packets.
 * @p: the port
 * @lane: 1 + the lane's index (the EV_PORT_FLUSH entry's queue field)
 *
 * On that lane's worker.
 */
void port_lanes_flush(struct port *p, unsigned lane)
{
	if (lane >= 1 && lane <= p->nlanes)
		vnet_dev_rx_flush(p->lanes[lane - 1].dev);
}

/**
 * port_queue_worker() - the worker that runs one of a port's queues.
 * @p: the port
 * @qidx: the queue
 *
 * Return: its lane's worker, else the port's own.
 */
unsigned port_queue_worker(const struct port *p, unsigned qidx)
{
	if (qidx < VNET_MAX_QUEUES && p->lane_of_q[qidx])
		return p->lanes[p->lane_of_q[qidx] - 1].worker;
	return p->worker;
}
