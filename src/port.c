/* SPDX-License-Identifier: MIT */
/* port.c - one vnetd port: vhost-user listener and connection, device, backend, queue timers. */
#include "port.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "event_loop.h"
#include "guest_fault.h"
#include "log.h"
#include "peer_io.h"
#include "port_internal.h"
#include "port_state.h"
#include "stat_atomic.h"
#include "switch.h"
#include "tap.h"

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

/* ---- --state-dir ---------------------------------------------------------------------------- */

static int state_dir = -1;

/**
 * port_set_state_dir() - the --state-dir directory for every port created after.
 * @dirfd: the directory (kept open by the caller), or -1 for none
 *
 * Main thread, at start-up.
 */
void port_set_state_dir(int dirfd)
{
	state_dir = dirfd;
}

static void state_load(struct port *p)
{
	char err[256];
	int r;

	if (state_dir < 0)
		return;
	r = port_state_load(state_dir, p->cfg.socket_path, vnet_dev_num_queues(p->dev), &p->saved,
			    err, sizeof(err));
	if (r < 0)
		log_warn("%s: state file ignored: %s", p->name, err);
	p->restore_pending = r == 0 && (p->saved.nqueues > 0 || p->saved.rx.present);
	p->rx_restored = !p->saved.rx.present;
	if (p->restore_pending)
		log_info("%s: coalescing of %u queue(s)%s restored once the frontend is back",
			 p->name, p->saved.nqueues,
			 p->saved.rx.present ? ", receive filter, RX mode and MAC" : "");
}

/*
 * state_restore_rx() - once the driver runs a queue again (its features negotiated, so the
 * device knows whether it has CTRL_RX / CTRL_MAC_ADDR): its filter, RX mode and MAC back.
 * True when done.
 */
static bool state_restore_rx(struct port *p)
{
	const struct vnet_queue *q = vnet_dev_queue(p->dev, 0);
	const struct port_state_rx *rx = &p->saved.rx;
	struct vnet_rx_filter f;

	if (p->rx_restored)
		return true;
	if (!q || !q->enabled || !q->vq.started)
		return false;
	port_state_rx_filter(rx, &f);
	if (vnet_dev_restore_rx(p->dev, &f, rx->mac_set ? rx->mac : NULL) < 0)
		log_warn("%s: saved receive filter not restored", p->name);
	p->rx_restored = true;
	return true;
}

/* state_restore() - the frontend's queues run again: give each its saved parameters once. */
static void state_restore(struct port *p)
{
	bool pending = !state_restore_rx(p);

	for (unsigned i = 0; i < p->saved.nqueues; i++) {
		const struct vnet_queue *q = vnet_dev_queue(p->dev, i);

		if (p->restored[i] || !q || q->kind == VNET_QUEUE_CTRL ||
		    p->saved.q[i].setter == COAL_SET_NONE) {
			p->restored[i] = true;
			continue;
		}
		if (!q->enabled || !q->vq.started) {
			pending = true;
			continue;
		}
		vnet_dev_restore_coal(p->dev, i, &p->saved.q[i].params,
				      (enum coal_setter)p->saved.q[i].setter);
		p->restored[i] = true;
	}
	p->restore_pending = pending;
}

/* state_write() - write the file if the port's state differs from it; 0 nothing to write,
 * 1 written, -1 the write failed (logged). */
static int state_write(struct port *p)
{
	struct port_state now = p->saved;
	unsigned n = vnet_dev_num_queues(p->dev);

	if (!p->connected || p->restore_pending)
		return 0;
	now.nqueues = n;
	for (unsigned i = 0; i < n; i++) {
		const struct vnet_queue *q = vnet_dev_queue(p->dev, i);

		/* A queue that is not running keeps what it had (a disconnect resets it). */
		if (!q || q->kind == VNET_QUEUE_CTRL || !q->enabled || !q->vq.started)
			continue;
		now.q[i].params = q->coal.params;
		now.q[i].setter = (uint8_t)q->coal.setter;
	}
	port_state_rx_from(&now.rx, vnet_dev_rx_filter(p->dev), vnet_dev_mac(p->dev), p->cfg.dev.mac);
	if (memcmp(&now, &p->saved, sizeof(now)) == 0)
		return 0;
	if (port_state_save(state_dir, p->cfg.socket_path, &now) < 0)
		return -1;
	p->saved = now;
	return 1;
}

static uint64_t env_now_ns(void *ctx);

/*
 * port_state_mark() - the guest may have changed what the file keeps (a control-queue kick):
 * have the state timer write it, at most once per PORT_STATE_WRITE_INTERVAL_NS. No I/O here
 * beyond arming the timer, and none while it is armed.
 */
static void port_state_mark(struct port *p)
{
	struct itimerspec its = {0};
	uint64_t at;

	if (p->state_timer_fd < 0 || p->state_pending)
		return;
	at = port_state_write_at(env_now_ns(NULL), p->state_last_ns);
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	if (timerfd_settime(p->state_timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		/* Written at the next control request or disconnect instead. */
		log_guest("%s: state timer: %s", p->name, strerror(errno));
		return;
	}
	p->state_pending = true;
}

/**
 * port_state_sync() - write the port's state file now if its state changed since the last write.
 * @p: the port (on its worker, or with the workers parked)
 *
 * A failed write is tried again by the state timer after the interval.
 */
void port_state_sync(struct port *p)
{
	int r;

	if (state_dir < 0)
		return;
	p->state_pending = false; /* the timer may still fire: it then finds nothing pending */
	r = state_write(p);
	if (r != 0)
		p->state_last_ns = env_now_ns(NULL);
	if (r < 0)
		port_state_mark(p);
}

/* state_timer_expired() - the state timer fired: write what the guest changed meanwhile. */
static void state_timer_expired(struct port *p)
{
	if (p->state_pending)
		port_state_sync(p);
}

_Static_assert(VNET_MAX_QUEUES <= UINT8_MAX, "a queue index must fit ev_ref.queue");
_Static_assert(VNETD_MAX_PORTS <= UINT16_MAX + 1, "a port index must fit ev_ref.port");

static struct ev_ref port_ref(const struct port *p, enum ev_kind kind, unsigned queue, int fd)
{
	return (struct ev_ref){.kind = kind, .port = (uint16_t)p->index, .queue = (uint8_t)queue, .fd = fd};
}

/* Device environment: real clock, timerfds, call fds. */
static uint64_t env_now_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

	if (run_queue_push(p->rq, port_ref(p, EV_QUEUE_RUN, qidx, -1)))
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

/* vhost-user connection callbacks. */
static void port_kick_changed(void *ctx, unsigned qidx, int old_fd, int new_fd)
{
	struct port *p = ctx;

	event_loop_del(p->epfd, old_fd);
	if (new_fd < 0)
		return;
	if (event_loop_add(p->epfd, new_fd, EPOLLIN, port_ref(p, EV_KICK, qidx, new_fd)) < 0)
		log_err("%s: cannot watch kick fd of queue %u", p->name, qidx);
}

static void port_state_fd_changed(void *ctx, int old_fd, int new_fd, uint32_t events)
{
	struct port *p = ctx;

	event_loop_del(p->epfd, old_fd);
	if (new_fd >= 0 &&
	    event_loop_add(p->epfd, new_fd, events, port_ref(p, EV_DEV_STATE, 0, new_fd)) < 0)
		/* A regular file (no epoll) still works: vnetd reads or writes it at once. */
		log_guest("%s: the device state fd cannot be watched", p->name);
}

/* The port's max-mem= (0: the default). */
static uint64_t port_mem_cap(void *ctx)
{
	const struct port *p = ctx;

	return p->cfg.max_mem;
}

static const struct vu_owner_ops port_vu_ops = {
	.kick_changed = port_kick_changed,
	.state_fd_changed = port_state_fd_changed,
	.mem_cap = port_mem_cap,
};

/* Tap backend callbacks. */
static void port_tap_set_events(void *ctx, int fd, uint32_t events)
{
	struct port *p = ctx;

	event_loop_mod(p->epfd, fd, events, port_ref(p, EV_TAP, 0, fd));
}

static void port_tap_failed(void *ctx, int fd)
{
	struct port *p = ctx;

	log_err("%s: tap %s is gone; port has no backend now", p->name, p->cfg.tap_name);
	event_loop_del(p->epfd, fd);
	p->tap_failed = true;
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
};

/* ---- Client mode: vnetd connects to the VMM's socket, and again whenever it goes away ---- */

#define RECONNECT_MIN_MS 50
#define RECONNECT_MAX_MS 2000

static void port_attach_conn(struct port *p, int fd);

/* arm_reconnect() - try again after the current backoff (doubling up to RECONNECT_MAX_MS). */
static void arm_reconnect(struct port *p)
{
	struct itimerspec its = {0};

	its.it_value.tv_sec = p->backoff_ms / 1000;
	its.it_value.tv_nsec = (long)(p->backoff_ms % 1000) * 1000000L;
	if (timerfd_settime(p->reconnect_fd, 0, &its, NULL) < 0)
		log_err("%s: reconnect timer: %s", p->name, strerror(errno));
	p->backoff_ms = p->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : p->backoff_ms * 2;
}

/* connect_failed() - an attempt did not work: say so once per outage, try again later. */
static void connect_failed(struct port *p, int fd, int err)
{
	if (!p->connect_logged)
		log_info("%s: cannot connect to %s (%s); retrying", p->name, p->cfg.socket_path,
			 err == EAGAIN ? "its listen backlog is full: the VMM does not accept"
				       : strerror(err));
	p->connect_logged = true;
	close(fd);
	arm_reconnect(p);
}

/* connect_done() - the connection is up: serve the frontend on it. */
static void connect_done(struct port *p, int fd)
{
	p->connect_logged = false;
	p->backoff_ms = RECONNECT_MIN_MS;
	port_attach_conn(p, fd);
}

/*
 * port_connect() - one connect attempt to the VMM's listening socket, without waiting for it.
 *
 * A blocking connect() on a unix socket waits as long as the listener's backlog is full: a
 * VMM that listens and never accepts would hold this thread (the main one at start-up,
 * port-add and reload, with every worker parked) for good. Non-blocking, it fails at once
 * with EAGAIN then, and the reconnect timer tries again. EINPROGRESS (not seen on unix
 * sockets, but allowed) waits for EPOLLOUT in the loop, with the reconnect timer as its
 * deadline.
 */
static void port_connect(struct port *p)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd;

	if (p->connected)
		return;
	if (p->connect_fd >= 0) { /* the attempt in progress timed out */
		event_loop_del(p->epfd, p->connect_fd);
		fd = p->connect_fd;
		p->connect_fd = -1;
		connect_failed(p, fd, ETIMEDOUT);
		return;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("%s: socket: %s", p->name, strerror(errno));
		arm_reconnect(p);
		return;
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", p->cfg.socket_path);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
		connect_done(p, fd);
		return;
	}
	if (errno != EINPROGRESS) {
		connect_failed(p, fd, errno);
		return;
	}
	if (event_loop_add(p->epfd, fd, EPOLLOUT, port_ref(p, EV_VU_CONN, 0, fd)) < 0) {
		connect_failed(p, fd, errno);
		return;
	}
	p->connect_fd = fd;
	arm_reconnect(p); /* the deadline of this attempt */
}

/* port_connect_ready() - the attempt in progress has an answer (EPOLLOUT / ERR / HUP). */
static void port_connect_ready(struct port *p)
{
	int fd = p->connect_fd, err = 0;
	socklen_t len = sizeof(err);
	struct itimerspec off = {0};

	p->connect_fd = -1;
	event_loop_del(p->epfd, fd);
	timerfd_settime(p->reconnect_fd, 0, &off, NULL); /* no deadline now */
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		connect_failed(p, fd, err);
		return;
	}
	connect_done(p, fd);
}

static int port_client_init(struct port *p)
{
	p->backoff_ms = RECONNECT_MIN_MS;
	p->reconnect_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->reconnect_fd < 0 ||
	    event_loop_add(p->epfd, p->reconnect_fd, EPOLLIN,
			   port_ref(p, EV_RECONNECT, 0, p->reconnect_fd)) < 0) {
		log_err("%s: reconnect timer: %s", p->name, strerror(errno));
		return -1;
	}
	port_connect(p);
	return 0;
}

/*
 * remove_stale_socket() - make room at socket= for a new listener: only a socket is removed (a
 * stale one of an earlier vnetd or VMM); a file, symlink or directory there is left alone and
 * the port refused. 0, or -1 (logged).
 */
static int remove_stale_socket(const struct port *p)
{
	struct stat st;

	if (lstat(p->cfg.socket_path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		log_err("%s: %s: %s", p->name, p->cfg.socket_path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("%s: %s exists and is not a socket; not removing it", p->name,
			p->cfg.socket_path);
		return -1;
	}
	if (unlink(p->cfg.socket_path) < 0 && errno != ENOENT) {
		log_err("%s: cannot remove stale %s: %s", p->name, p->cfg.socket_path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * port_listen() - the vhost-user listener at socket=, mode 0660 from its creation: the mode is
 * set on the socket before bind() (and bind runs under a umask that keeps exactly it), never by
 * path afterwards, where a symlink swapped in would be followed. Called with every worker
 * parked (start-up, port-add, reload), so the process-wide umask is ours for the moment.
 */
static int port_listen(struct port *p)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old_umask;
	int fd, r;

	if (remove_stale_socket(p) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", p->cfg.socket_path);
	if (fchmod(fd, 0660) < 0)
		log_warn("%s: fchmod of the socket: %s", p->name, strerror(errno));
	old_umask = umask(0117);
	r = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_umask);
	if (r < 0 || listen(fd, 4) < 0) {
		log_err("%s: cannot listen on %s: %s", p->name, addr.sun_path, strerror(errno));
		close(fd);
		return -1;
	}
	/* What port_destroy() may remove: this node, not whatever is at the path by then. */
	if (lstat(addr.sun_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		p->sock_dev = st.st_dev;
		p->sock_ino = st.st_ino;
	}
	return fd;
}

/* unlink_own_socket() - remove socket= if it is still the socket port_listen() made. */
static void unlink_own_socket(const struct port *p)
{
	struct stat st;

	if (lstat(p->cfg.socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == p->sock_dev &&
	    st.st_ino == p->sock_ino)
		unlink(p->cfg.socket_path);
}

/**
 * port_create() - set up a port: backend, listener (or connection), timers.
 * @index: its slot (name and ev_ref.port)
 * @cfg: its configuration (copied)
 * @worker: the worker that owns it
 * @epfd: that worker's epoll set
 * @rq: that worker's run queue, for queues that yield at their budget
 * @flushq: that worker's flush list, for received packets to publish
 * @sw: the switch (for a switch port)
 *
 * Main thread, the worker parked or not started.
 *
 * Return: the port, or NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, unsigned worker, int epfd,
			 struct run_queue *rq, struct run_queue *flushq, struct vnet_switch *sw)
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
	state_load(p);
	if (state_dir >= 0) {
		p->state_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (p->state_timer_fd < 0 ||
		    event_loop_add(epfd, p->state_timer_fd, EPOLLIN,
				   port_ref(p, EV_STATE_TIMER, 0, p->state_timer_fd)) < 0) {
			log_err("%s: state timer: %s", p->name, strerror(errno));
			goto fail;
		}
	}
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
		p->be = tap_backend_open(cfg->tap_name, p->dev, &port_tap_ops, p);
		if (!p->be)
			goto fail;
		vnet_dev_attach_backend(p->dev, &tap_backend_ops, p->be);
		if (event_loop_add(epfd, tap_backend_fd(p->be), EPOLLIN,
				   port_ref(p, EV_TAP, 0, tap_backend_fd(p->be))) < 0)
			goto fail;
	} else {
		p->be = switch_attach(sw, p->dev, p->name, worker);
		if (!p->be)
			goto fail;
		if (cfg->max_macs) /* 0: a config not from the options, the switch's defaults */
			switch_port_set_limits(p->be, cfg->max_macs, cfg->learn_rate);
		vnet_dev_attach_backend(p->dev, switch_port_ops(p->be), p->be);
	}
	log_info("%s: %s backend %s, vhost-user %s %s", p->name,
		 cfg->backend == PORT_BACKEND_TAP ? "tap" : "switch",
		 cfg->backend == PORT_BACKEND_TAP ? cfg->tap_name : "",
		 cfg->client ? "client of" : "socket", cfg->socket_path);
	if (cfg->client) {
		if (port_client_init(p) < 0)
			goto fail;
		return p;
	}
	p->listen_fd = port_listen(p);
	if (p->listen_fd < 0 ||
	    event_loop_add(epfd, p->listen_fd, EPOLLIN | EPOLLET,
			   port_ref(p, EV_VU_LISTEN, 0, p->listen_fd)) < 0)
		goto fail;
	return p;
fail:
	port_destroy(p);
	return NULL;
}

static void port_disconnect(struct port *p)
{
	if (!p->connected)
		return;
	if (p->state_pending)
		port_state_sync(p); /* a change still waiting for the timer, before the queues reset */
	event_loop_del(p->epfd, p->conn.sock);
	vu_conn_close(&p->conn);
	__atomic_store_n(&p->connected, false, __ATOMIC_RELAXED); /* stats read it unparked */
	log_info("%s: frontend disconnected", p->name);
	if (p->cfg.client && p->reconnect_fd >= 0) {
		p->backoff_ms = RECONNECT_MIN_MS; /* the VMM restarting: it listens again soon */
		arm_reconnect(p);
	}
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
	port_disconnect(p);
	if (p->connect_fd >= 0) {
		event_loop_del(p->epfd, p->connect_fd);
		close(p->connect_fd);
		p->connect_fd = -1;
	}
	if (p->reconnect_fd >= 0) {
		event_loop_del(p->epfd, p->reconnect_fd);
		close(p->reconnect_fd);
		p->reconnect_fd = -1;
	}
	if (p->listen_fd >= 0) {
		event_loop_del(p->epfd, p->listen_fd);
		close(p->listen_fd);
		unlink_own_socket(p);
	}
	if (p->be) {
		vnet_dev_attach_backend(p->dev, NULL, NULL);
		if (p->cfg.backend == PORT_BACKEND_TAP) {
			event_loop_del(p->epfd, tap_backend_fd(p->be));
			tap_backend_close(p->be);
		} else {
			switch_detach(p->be);
		}
	}
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		if (p->timer_fd[i] >= 0) {
			event_loop_del(p->epfd, p->timer_fd[i]);
			close(p->timer_fd[i]);
		}
	if (p->state_timer_fd >= 0) {
		event_loop_del(p->epfd, p->state_timer_fd);
		close(p->state_timer_fd);
	}
	vnet_dev_destroy(p->dev);
	free(p);
}

static void port_accept(struct port *p)
{
	/*
	 * Edge-triggered (port_create): take every pending connection until EAGAIN. Out of fds
	 * (EMFILE, ENFILE) the rest stay queued until the next connection wakes us; level-triggered
	 * they would wake the loop at once, for ever.
	 */
	for (;;) {
		int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				log_guest("%s: cannot accept a frontend: %s (retried at the next "
					  "connection)", p->name, strerror(errno));
			return;
		}
		if (p->connected) {
			log_warn("%s: a frontend is already connected; refusing another", p->name);
			close(fd);
			continue;
		}
		port_attach_conn(p, fd);
	}
}

/* port_attach_conn() - serve the frontend on connected socket fd (accepted or connected). */
static void port_attach_conn(struct port *p, int fd)
{
	vu_conn_init(&p->conn, fd, p->dev, &port_vu_ops, p);
	if (event_loop_add(p->epfd, fd, EPOLLIN, port_ref(p, EV_VU_CONN, 0, fd)) < 0) {
		vu_conn_close(&p->conn);
		return;
	}
	/* Read by statistics on the main thread without parking this worker (stat_atomic.h). */
	__atomic_store_n(&p->connected, true, __ATOMIC_RELAXED);
	stat_inc(&p->connections);
	log_info("%s: frontend connected", p->name);
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
	switch (ref.kind) {
	case EV_VU_LISTEN:
		port_accept(p);
		break;
	case EV_VU_CONN:
		if (!p->connected && p->connect_fd >= 0 && ref.fd == p->connect_fd) {
			port_connect_ready(p);
			break;
		}
		if (!p->connected || ref.fd != p->conn.sock)
			break;
		if (events & EPOLLIN) {
			if (vu_conn_handle_readable(&p->conn) < 0)
				port_disconnect(p);
			else if (p->restore_pending)
				state_restore(p);
		} else if (events & (EPOLLHUP | EPOLLERR)) {
			port_disconnect(p);
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
		vnet_dev_kick(p->dev, ref.queue);
		if (ref.queue == vnet_dev_ctrl_queue_index(p->dev))
			port_state_mark(p); /* the guest may have changed its coalescing or filter */
		break;
	case EV_STATE_TIMER:
		if (ref.fd != p->state_timer_fd)
			break;
		drain_fd(ref.fd);
		state_timer_expired(p);
		break;
	case EV_QUEUE_TIMER:
		drain_fd(ref.fd);
		vnet_dev_timer_expired(p->dev, ref.queue);
		break;
	case EV_QUEUE_RUN:
		vnet_dev_queue_run(p->dev, ref.queue);
		if (ref.queue == vnet_dev_ctrl_queue_index(p->dev))
			port_state_mark(p); /* commands left over from a kick past its budget */
		break;
	case EV_RECONNECT:
		drain_fd(ref.fd);
		port_connect(p);
		break;
	case EV_DEV_STATE:
		if (p->connected && ref.fd == p->conn.xfer.fd)
			vu_conn_state_io(&p->conn, events);
		break;
	case EV_TAP:
		if (p->be && !p->tap_failed)
			tap_backend_handle_events(p->be, events);
		break;
	default:
		break;
	}
}

/**
 * port_flush_rx() - publish received packets (the port asked for it on the flush list).
 * @p: the port
 *
 * On the port's worker.
 */
void port_flush_rx(struct port *p)
{
	vnet_dev_rx_flush(p->dev);
}

/**
 * port_check_fault() - drop the frontend if its guest memory faulted (SIGBUS).
 * @p: the port
 *
 * On the port's worker.
 */
void port_check_fault(struct port *p)
{
	if (p->connected && p->conn.mem_fault) {
		log_warn("%s: the frontend shrank guest memory under us (SIGBUS); dropping it",
			 p->name);
		port_disconnect(p);
	}
}
