/* SPDX-License-Identifier: MIT */
/* port.c - one vnetd port: device, backend, queue timers, set-up and event dispatch. */
#include "port/port.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "loop/loop.h"
#include "mem/mem.h"
#include "lib/log.h"
#include "lib/peer_io.h"
#include "port/port_internal.h"
#include "port/port.h"
#include "port/port_lanes.h"
#include "port/port_persist.h"
#include "port/port_sock.h"
#include "port/port_trunk.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch.h"
#include "backend/tap/tap.h"
#include "port/port_xdp.h"

_Static_assert(PORT_ALLOWED_MACS <= SWITCH_ALLOWED_MACS, "allowed-macs= fits a switch port");
_Static_assert(PORT_IPS <= SWITCH_IPS, "ips= fits a switch port");

/*
 * The port itself: what it is (the accessors), its device's environment and its backend, its
 * set-up and teardown, and the dispatch of its events. Its vhost-user socket (listener, client
 * connect, the frontend's connection) is port_sock.c's; its --state-dir file, port_persist.c's.
 */

/**
 * port_name() - the port's name.
 * @p: the port
 *
 * Any thread: set at creation.
 *
 * Return: "p0", "p1", ... by index.
 */
const char *port_name(const struct port *p)
{
	return p->name;
}

/**
 * port_index() - the port's slot in the daemon's port table.
 * @p: the port
 *
 * Any thread: set at creation.
 *
 * Return: the index (also in its name and in its events' ev_ref.port).
 */
unsigned port_index(const struct port *p)
{
	return p->index;
}

/**
 * port_config() - the configuration the port was created with.
 * @p: the port
 *
 * Any thread: never changes.
 *
 * Return: the port's copy.
 */
const struct port_config *port_config(const struct port *p)
{
	return &p->cfg;
}

/**
 * port_dev() - the port's device model.
 * @p: the port
 *
 * Return: the device (always present); touch it on the port's worker, or with it parked.
 */
struct vnet_dev *port_dev(struct port *p)
{
	return p->dev;
}

/**
 * port_connected() - whether a frontend is connected now.
 * @p: the port
 *
 * Any thread (a relaxed atomic load: stats read it without parking).
 *
 * Return: true while a frontend is connected.
 */
bool port_connected(const struct port *p)
{
	return __atomic_load_n(&p->connected, __ATOMIC_RELAXED);
}

/**
 * port_worker() - the worker (event-loop thread) that owns the port.
 * @p: the port
 *
 * Any thread: set at creation.
 *
 * Return: the worker's id.
 */
unsigned port_worker(const struct port *p)
{
	return p->worker;
}

/**
 * port_connections() - frontends accepted so far.
 * @p: the port
 *
 * Any thread (a single-writer counter, stat_atomic.h).
 *
 * Return: the count.
 */
uint64_t port_connections(const struct port *p)
{
	return stat_read(&p->connections);
}

/**
 * port_dirty_logging() - whether the frontend has vnetd log its writes now (live migration).
 * @p: the port
 *
 * On the port's worker, or with it parked.
 *
 * Return: true while a dirty log is set and logging is on.
 */
bool port_dirty_logging(const struct port *p)
{
	return p->connected && p->conn.log_all && p->conn.log.bitmap;
}

/**
 * port_dirty_log_dropped() - pages written outside the frontend's dirty log (log too small).
 * @p: the port
 *
 * On the port's worker, or with it parked.
 *
 * Return: the count for the current frontend; 0 without one.
 */
uint64_t port_dirty_log_dropped(const struct port *p)
{
	return p->connected ? p->conn.log.dropped : 0;
}

/**
 * port_rarps() - SEND_RARP announcements sent for the current frontend.
 * @p: the port
 *
 * On the port's worker, or with it parked.
 *
 * Return: the count; 0 without a frontend.
 */
uint64_t port_rarps(const struct port *p)
{
	return p->connected ? p->conn.rarps : 0;
}

/**
 * port_switch_frames() - the switch's frame counters of port p, its lanes' included.
 * @p: the port
 * @out: [0] forwarded, [1] flooded, [2] dropped, [3] crossed (switch_port_stats(),
 * switch_port_crossed())
 *
 * Plain reads of the workers' counters: with them parked (the "ports" request).
 *
 * Return: false (out untouched) for a tap port.
 */
bool port_switch_frames(const struct port *p, uint64_t out[4])
{
	if (p->cfg.backend != PORT_BACKEND_SWITCH || !p->be)
		return false;
	switch_port_stats(p->be, &out[0], &out[1], &out[2]);
	out[3] = switch_port_crossed(p->be);
	return true;
}

/**
 * port_switch_counters() - the switch's counters of port p (lock-free, switch_port_counters()).
 * @p: the port
 * @out: filled for a switch port
 *
 * Return: false (out untouched) for a tap port.
 */
bool port_switch_counters(const struct port *p, struct switch_port_counters *out)
{
	if (p->cfg.backend != PORT_BACKEND_SWITCH || !p->be)
		return false;
	switch_port_counters(p->be, out);
	return true;
}

/**
 * port_tap_queues() - how many queue fds the port's tap has.
 * @p: the port
 *
 * Return: queues=N's N for a multi-queue tap, 1 for a single-queue one, 0 for other backends.
 */
unsigned port_tap_queues(const struct port *p)
{
	if (p->cfg.backend != PORT_BACKEND_TAP || !p->be)
		return 0;
	return tap_backend_nqueues(p->be);
}

/**
 * port_tap_queue_stats() - one tap queue's packet counters (lock-free, any thread).
 * @p: the port
 * @i: the tap queue (queue pair i's)
 * @out: filled
 *
 * Return: false (out untouched) for a port without tap queue @i.
 */
bool port_tap_queue_stats(const struct port *p, unsigned i, struct tap_queue_stats *out)
{
	if (p->cfg.backend != PORT_BACKEND_TAP || !p->be)
		return false;
	return tap_backend_queue_stats(p->be, i, out);
}

/* Device environment: real clock, timerfds, call fds. */
static uint64_t env_now_ns(void *ctx)
{
	(void)ctx;
	return port_now_ns();
}

static void env_notify(void *ctx, unsigned qidx)
{
	struct port *p = ctx;

	if (p->connected)
		vu_conn_notify(&p->conn, qidx);
}

static void env_arm_timer(void *ctx, unsigned qidx, uint64_t deadline_ns)
{
	struct port *p = ctx;
	struct itimerspec its = {0};

	if (qidx >= VNET_MAX_QUEUES || p->timer_fd[qidx] < 0)
		return;
	its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
	if (timerfd_settime(p->timer_fd[qidx], TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_err("%s: timerfd_settime: %s", p->name, strerror(errno));
}

static bool env_schedule(void *ctx, unsigned qidx)
{
	struct port *p = ctx;
	/* A queue a lane runs (a start or enable on the home): that worker's run queue, parked. */
	struct run_queue *rq = qidx < VNET_MAX_QUEUES && p->lane_of_q[qidx]
				       ? p->lanes[p->lane_of_q[qidx] - 1].rq
				       : p->rq;

	if (run_queue_push(rq, port_ref(p, EV_QUEUE_RUN, qidx, -1)))
		return true;
	log_err("%s: run queue full; queue %u waits for its next kick", p->name, qidx);
	return false;
}

static void env_queue_error(void *ctx, unsigned qidx)
{
	struct port *p = ctx;

	if (p->connected)
		vu_conn_signal_error(&p->conn, qidx);
}

static void env_rx_dirty(void *ctx)
{
	struct port *p = ctx;

	if (!run_queue_push(p->flushq, port_ref(p, EV_PORT_FLUSH, 0, -1))) {
		log_err("%s: flush list full; publishing at once", p->name);
		vnet_dev_rx_flush(p->dev);
	}
}

static const struct vnet_env_ops port_env_ops = {
	.now_ns = env_now_ns,
	.notify = env_notify,
	.arm_timer = env_arm_timer,
	.schedule = env_schedule,
	.queue_error = env_queue_error,
	.rx_dirty = env_rx_dirty,
};

/* Tap backend callbacks. */
static const struct tap_owner_ops port_tap_ops;

static void port_tap_set_events(void *ctx, unsigned queue, int fd, uint32_t events)
{
	struct port *p = ctx;

	event_loop_mod(p->epfd, fd, events, port_ref(p, EV_TAP, queue, fd));
}

/* A multi-queue tap detached a queue (its pair unused) or attached it again. */
static void port_tap_queue_attached(void *ctx, unsigned queue, int fd, bool attached,
				    uint32_t events)
{
	struct port *p = ctx;

	if (!attached)
		event_loop_del(p->epfd, fd);
	else if (event_loop_add(p->epfd, fd, events, port_ref(p, EV_TAP, queue, fd)) < 0)
		log_err("%s: tap queue %u: cannot watch its fd again; the pair reads nothing",
			p->name, queue);
}

/* Every queue's fd out of the worker's epoll set (tap_failed: they already are). */
static void port_tap_unregister(struct port *p)
{
	for (unsigned i = 0; i < tap_backend_nqueues(p->be); i++)
		event_loop_del(p->epfd, tap_backend_queue_fd(p->be, i));
}

static void port_tap_failed(void *ctx)
{
	struct port *p = ctx;

	log_err("%s: tap %s is gone; port has no backend now", p->name, p->cfg.tap_name);
	port_tap_unregister(p);
	p->tap_failed = true;
}

/*
 * Open the port's tap, one queue fd per queue pair (queues=N > 1: IFF_MULTI_QUEUE), attach it
 * to the device with each pair transmitting through its own queue, and register every fd.
 * On failure p->be may be set: port_destroy() cleans up.
 */
static int port_tap_attach(struct port *p)
{
	unsigned nq = p->cfg.dev.queue_pairs ? p->cfg.dev.queue_pairs : 1;

	p->be = tap_backend_open(p->cfg.tap_name, nq, p->dev, &port_tap_ops, p);
	if (!p->be)
		return -1;
	/* Every fd first: attaching tells the tap the pairs in use, and it then detaches (and
	 * unregisters) the queues of the others. */
	for (unsigned i = 0; i < tap_backend_nqueues(p->be); i++) {
		int fd = tap_backend_queue_fd(p->be, i);

		if (event_loop_add(p->epfd, fd, EPOLLIN, port_ref(p, EV_TAP, i, fd)) < 0) {
			while (i-- > 0)
				event_loop_del(p->epfd, tap_backend_queue_fd(p->be, i));
			p->tap_failed = true; /* none registered: port_destroy() deletes none */
			return -1;
		}
	}
	vnet_dev_attach_backend(p->dev, tap_backend_ops_of(p->be), p->be);
	for (unsigned i = 1; i < tap_backend_nqueues(p->be); i++)
		(void)vnet_dev_attach_queue_backend(p->dev, i, tap_backend_queue(p->be, i));
	return 0;
}

/* A readv into guest memory faulted: treat it like a SIGBUS there (port_check_fault drops). */
static void port_tap_guest_fault(void *ctx)
{
	struct port *p = ctx;

	if (!p->connected || p->conn.mem_fault)
		return;
	p->conn.mem_fault = 1;
	guest_fault_note();
}

static const struct tap_owner_ops port_tap_ops = {
	.set_events = port_tap_set_events,
	.failed = port_tap_failed,
	.guest_fault = port_tap_guest_fault,
	.queue_attached = port_tap_queue_attached,
};

/**
 * port_create() - set up a port: backend, listener (or connection), timers.
 * @index: its slot (name and ev_ref.port)
 * @cfg: its configuration (copied)
 * @worker: the worker that owns it
 * @epfd: that worker's epoll set
 * @rq: that worker's run queue, for queues that yield at their budget
 * @flushq: that worker's flush list, for received packets to publish
 * @sw: a switch port's switch (sw[0]), or a trunk tap port's VLAN switches (cfg->n_trunk of
 * them, in cfg->trunk's order; port_trunk.c)
 *
 * Main thread, the worker parked or not started.
 *
 * Return: the port, or NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, unsigned worker, int epfd,
			 struct run_queue *rq, struct run_queue *flushq,
			 struct vnet_switch *const *sw)
{
	struct port *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->index = index;
	snprintf(p->name, sizeof(p->name), "p%u", index);
	p->cfg = *cfg;
	p->worker = worker;
	p->epfd = epfd;
	p->rq = rq;
	p->flushq = flushq;
	p->listen_fd = -1;
	p->reconnect_fd = -1;
	p->connect_fd = -1;
	p->conn.sock = -1;
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		p->timer_fd[i] = -1;
	p->state_timer_fd = -1;
	p->dev = vnet_dev_create(&cfg->dev, &port_env_ops, p);
	if (!p->dev)
		goto fail;
	if (port_persist_open(p) < 0)
		goto fail;
	for (unsigned i = 0; i < vnet_dev_num_queues(p->dev); i++) {
		p->timer_fd[i] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (p->timer_fd[i] < 0 ||
		    event_loop_add(epfd, p->timer_fd[i], EPOLLIN,
				   port_ref(p, EV_QUEUE_TIMER, i, p->timer_fd[i])) < 0) {
			log_err("%s: timerfd: %s", p->name, strerror(errno));
			goto fail;
		}
	}
	if (cfg->backend == PORT_BACKEND_TAP) {
		if (port_tap_attach(p) < 0)
			goto fail;
		if (cfg->n_trunk && port_trunk_attach(p, sw) < 0)
			goto fail;
	} else if (cfg->backend == PORT_BACKEND_XDP) {
		if (port_xdp_attach(p) < 0)
			goto fail;
	} else {
		p->be = switch_attach(sw[0], p->dev, p->name, worker);
		if (!p->be)
			goto fail;
		if (cfg->max_macs) /* 0: a config not from the options, the switch's defaults */
			switch_port_set_limits(p->be, cfg->max_macs, cfg->learn_rate);
		switch_port_set_flood_rate(p->be, cfg->flood_rate);
		switch_port_set_access(p->be, cfg->vlan != 0);
		if (switch_port_set_security(p->be, &(struct switch_port_security){
						 .on = !cfg->psec_off,
						 .mac_change = cfg->mac_change,
						 .n_allowed = cfg->n_allowed_macs,
						 .allowed = (const uint8_t(*)[6])cfg->allowed_macs,
					     }) < 0)
			goto fail;
		if (switch_port_set_ips(p->be, cfg->ips, cfg->n_ips) < 0)
			goto fail;
		vnet_dev_attach_backend(p->dev, switch_port_ops(p->be), p->be);
	}
	log_info("%s: %s backend %s, vhost-user %s %s", p->name,
		 cfg->backend == PORT_BACKEND_TAP   ? "tap"
		 : cfg->backend == PORT_BACKEND_XDP ? "xdp"
						    : "switch",
		 cfg->backend == PORT_BACKEND_TAP   ? cfg->tap_name
		 : cfg->backend == PORT_BACKEND_XDP ? cfg->xdp_name
						    : "",
		 cfg->client ? "client of" : "socket", cfg->socket_path);
	if (port_sock_open(p) < 0)
		goto fail;
	return p;
fail:
	port_destroy(p);
	return NULL;
}

/**
 * port_destroy() - disconnect the frontend, close every fd, free.
 * @p: the port, or NULL (nothing to do)
 *
 * Main thread, the port's worker parked or stopped.
 */
void port_destroy(struct port *p)
{
	if (!p)
		return;
	port_sock_disconnect(p);
	port_sock_close(p);
	if (p->cfg.backend == PORT_BACKEND_XDP)
		port_xdp_detach(p); /* p->be NULL afterwards */
	if (p->be) {
		vnet_dev_attach_backend(p->dev, NULL, NULL);
		if (p->cfg.backend == PORT_BACKEND_TAP) {
			port_trunk_detach(p);
			if (!p->tap_failed) /* failed(): already unregistered */
				port_tap_unregister(p);
			tap_backend_close(p->be);
		} else {
			switch_detach(p->be);
		}
	}
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		if (p->timer_fd[i] >= 0) {
			event_loop_del(port_q_epfd(p, i), p->timer_fd[i]);
			close(p->timer_fd[i]);
		}
	port_lanes_free(p);
	port_persist_close(p);
	vnet_dev_destroy(p->dev);
	free(p);
}

/* One read takes an eventfd's or timerfd's whole count: a second could only return EAGAIN. */
static void drain_fd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("read of timer fd %d: %s", fd, strerror(errno));
}

/*
 * drain_kick() - the same for a kick fd, which the frontend shares: it may have cleared
 * O_NONBLOCK and read the count itself after epoll saw it (peer_io.h: never waits).
 */
static void drain_kick(struct port *p, unsigned qidx, int fd)
{
	uint64_t v;

	if (peer_read(fd, p->conn.q[qidx].kick_kind, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_guest("%s: read of the kick fd of queue %u: %s", p->name, qidx,
			  strerror(errno));
}

static void handle_event(struct port *p, struct ev_ref ref, uint32_t events);

/**
 * port_handle_event() - one epoll event (or run-queue entry) that belongs to this port.
 * @p: the port
 * @ref: the event's reference (its kind, queue and fd)
 * @events: epoll events (0 for a run-queue entry)
 *
 * On the port's worker.
 */
void port_handle_event(struct port *p, struct ev_ref ref, uint32_t events)
{
	/* A port with lanes: whatever may change what they read runs with them parked. */
	if (__builtin_expect(p->nlanes != 0, 0) && port_lanes_is_home(p, ref)) {
		bool parked = port_lanes_park(p);

		handle_event(p, ref, events);
		port_lanes_unpark(p, parked);
		return;
	}
	handle_event(p, ref, events);
}

/* port_handle_event()'s work; a data queue's events on the device view that runs it. */
static void handle_event(struct port *p, struct ev_ref ref, uint32_t events)
{
	switch (ref.kind) {
	case EV_VU_LISTEN:
		port_sock_accept(p);
		break;
	case EV_VU_CONN:
		if (!p->connected && p->connect_fd >= 0 && ref.fd == p->connect_fd) {
			port_sock_connect_ready(p);
			break;
		}
		if (!p->connected || ref.fd != p->conn.sock)
			break;
		if (events & EPOLLIN) {
			if (vu_conn_handle_readable(&p->conn) < 0)
				port_sock_disconnect(p);
			else if (p->restore_pending)
				port_persist_restore(p);
		} else if (events & (EPOLLHUP | EPOLLERR)) {
			port_sock_disconnect(p);
		}
		break;
	case EV_KICK:
		/* An earlier event of this batch may have closed the fd (and its number reused). */
		if (!p->connected || ref.queue >= VNET_MAX_QUEUES || p->conn.q[ref.queue].kick != ref.fd)
			break;
		/* A dead kick fd (a pipe with no writer) reports HUP forever: drop it, once. */
		if (events & (EPOLLHUP | EPOLLERR)) {
			vu_conn_kick_failed(&p->conn, ref.queue, events);
			break;
		}
		drain_kick(p, ref.queue, ref.fd);
		vnet_dev_kick(port_q_dev(p, ref.queue), ref.queue);
		if (ref.queue == vnet_dev_ctrl_queue_index(p->dev))
			port_persist_mark(p); /* the guest may have changed its coalescing or filter */
		break;
	case EV_STATE_TIMER:
		if (ref.fd != p->state_timer_fd)
			break;
		drain_fd(ref.fd);
		port_persist_timer(p);
		break;
	case EV_QUEUE_TIMER:
		drain_fd(ref.fd);
		vnet_dev_timer_expired(port_q_dev(p, ref.queue), ref.queue);
		break;
	case EV_QUEUE_RUN:
		vnet_dev_queue_run(port_q_dev(p, ref.queue), ref.queue);
		if (ref.queue == vnet_dev_ctrl_queue_index(p->dev))
			port_persist_mark(p); /* commands left over from a kick past its budget */
		break;
	case EV_RECONNECT:
		drain_fd(ref.fd);
		port_sock_connect(p);
		break;
	case EV_DEV_STATE:
		if (p->connected && ref.fd == p->conn.xfer.fd)
			vu_conn_state_io(&p->conn, events);
		break;
	case EV_TAP:
		if (p->cfg.backend == PORT_BACKEND_XDP)
			port_xdp_event(p, ref.queue, events);
		else if (p->be && !p->tap_failed)
			tap_backend_handle_events(p->be, ref.queue, events);
		break;
	default:
		break;
	}
}

/**
 * port_flush_rx() - publish received packets (the port asked for it on the flush list).
 * @p: the port
 * @lane: 0, or which of its lanes (port_lanes.c) asked, on that lane's worker
 *
 * On the port's worker.
 */
void port_flush_rx(struct port *p, unsigned lane)
{
	if (lane) {
		port_lanes_flush(p, lane);
		return;
	}
	if (p->cfg.backend == PORT_BACKEND_XDP)
		port_xdp_flush(p);
	vnet_dev_rx_flush(p->dev);
}

/**
 * port_check_fault() - drop the frontend if its guest memory faulted (SIGBUS) or it kept a
 * write to one of its fds waiting (vu_conn_stalled()).
 * @p: the port
 *
 * On the port's worker. A port whose frontend kept a write waiting polls each eventfd before
 * writing it for every later frontend (port_sock_disconnect() remembers it).
 *
 * Return: nothing; the frontend is dropped with its lanes parked, logged.
 */
void port_check_fault(struct port *p)
{
	bool stalled;

	if (!p->connected)
		return;
	stalled = atomic_load_explicit(&p->conn.peer_stalled, memory_order_relaxed) != 0;
	if (p->conn.mem_fault || stalled) {
		bool parked = port_lanes_park(p);

		log_warn("%s: %s; dropping it", p->name,
			 stalled ? "the frontend kept a write to its fds waiting"
				 : "the frontend shrank guest memory under us (SIGBUS)");
		port_sock_disconnect(p);
		port_lanes_unpark(p, parked);
	}
}
