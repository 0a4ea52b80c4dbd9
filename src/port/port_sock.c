/* SPDX-License-Identifier: MIT */
/* port_sock.c - a port's vhost-user socket: listener, accept, client connect, (dis)connection. */
#include "port/port_sock.h"
#include "port/port.h" /* the folder's API this file defines part of */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "loop/loop.h"
#include "lib/log.h"
#include "port/port_internal.h"
#include "port/port_persist.h"
#include "lib/stat_atomic.h"

/* ---- The frontend's connection ------------------------------------------------------------- */

/* vhost-user connection callbacks. */
static void port_kick_changed(void *ctx, unsigned qidx, int old_fd, int new_fd)
{
	struct port *p = ctx;

	/* A pair another worker runs (queue-workers=): its kicks go to that worker. */
	event_loop_del(port_q_epfd(p, qidx), old_fd);
	if (new_fd < 0)
		return;
	if (event_loop_add(port_q_epfd(p, qidx), new_fd, EPOLLIN,
			   port_ref(p, EV_KICK, qidx, new_fd)) < 0)
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

/* The port's max-mem-slots= (0: the default). */
static unsigned port_mem_slots(void *ctx)
{
	const struct port *p = ctx;

	return p->cfg.max_mem_slots;
}

/* The port's migrate-state= (default on): offer DEVICE_STATE. */
static bool port_device_state(void *ctx)
{
	const struct port *p = ctx;

	return !p->cfg.no_device_state;
}

static void port_ring_base(void *ctx, unsigned qidx, uint32_t base)
{
	port_persist_ring_base(ctx, qidx, base);
}

static void port_queue_starting(void *ctx, unsigned qidx)
{
	port_persist_ring_starting(ctx, qidx);
}

static const struct vu_owner_ops port_vu_ops = {
	.kick_changed = port_kick_changed,
	.state_fd_changed = port_state_fd_changed,
	.mem_cap = port_mem_cap,
	.mem_slots = port_mem_slots,
	.device_state = port_device_state,
	.ring_base = port_ring_base,
	.queue_starting = port_queue_starting,
};

/* port_attach_conn() - serve the frontend on connected socket fd (accepted or connected). */
static void port_attach_conn(struct port *p, int fd)
{
	vu_conn_init(&p->conn, fd, p->dev, &port_vu_ops, p);
	p->conn.polled_writes = p->peer_stalled; /* an earlier frontend kept a write waiting */
	if (event_loop_add(p->epfd, fd, EPOLLIN, port_ref(p, EV_VU_CONN, 0, fd)) < 0) {
		vu_conn_close(&p->conn);
		return;
	}
	/* Read by statistics on the main thread without parking this worker (stat_atomic.h). */
	__atomic_store_n(&p->connected, true, __ATOMIC_RELAXED);
	stat_inc(&p->connections);
	log_info("%s: frontend connected", p->name);
}

/* ---- Client mode: vnetd connects to the VMM's socket, and again whenever it goes away ---- */

#define RECONNECT_MIN_MS 50
#define RECONNECT_MAX_MS 2000

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

/**
 * port_sock_connect() - one connect attempt to the VMM's listening socket, without waiting for it.
 * @p: a client-mode port (the reconnect timer fired, or it is being set up)
 *
 * A blocking connect() on a unix socket waits as long as the listener's backlog is full: a
 * VMM that listens and never accepts would hold this thread (the main one at start-up,
 * port-add and reload, with every worker parked) for good. Non-blocking, it fails at once
 * with EAGAIN then, and the reconnect timer tries again. EINPROGRESS (not seen on unix
 * sockets, but allowed) waits for EPOLLOUT in the loop, with the reconnect timer as its
 * deadline: an attempt still in progress when it fires has failed.
 *
 * On the port's worker, or on the main thread with it parked.
 */
void port_sock_connect(struct port *p)
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

/**
 * port_sock_connect_ready() - the attempt in progress has an answer (EPOLLOUT / ERR / HUP).
 * @p: a client-mode port with a connect() in progress (p->connect_fd)
 *
 * On the port's worker.
 */
void port_sock_connect_ready(struct port *p)
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
	port_sock_connect(p);
	return 0;
}

/* ---- Server mode: vnetd listens at socket= ------------------------------------------------- */

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

/* unlink_own_socket() - remove socket= if it is still the socket port_listen() made. */
static void unlink_own_socket(const struct port *p)
{
	struct stat st;

	if (lstat(p->cfg.socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == p->sock_dev &&
	    st.st_ino == p->sock_ino)
		unlink(p->cfg.socket_path);
}

/* The listeners' ownership when a port has no group= / mode= (--socket-group, --socket-mode). */
static long sock_gid_default = -1;
static unsigned sock_mode_default = 0660;

/**
 * port_set_socket_owner() - the group and mode of every socket= listener created after, unless
 * its port has group= or mode=.
 * @gid: the group id, or -1: vnetd's own (the node's group as bind() makes it)
 * @mode: permission bits, 1..0777
 *
 * Main thread, at start-up, before the first port.
 */
void port_set_socket_owner(long gid, unsigned mode)
{
	sock_gid_default = gid;
	sock_mode_default = mode;
}

/*
 * own_node() - check what bind() made at socket= and give it its group: opened with O_PATH and
 * O_NOFOLLOW (no symlink followed, nothing read), it must be a socket that this process owns;
 * then fchownat() on that fd (AT_EMPTY_PATH), never chown by path. Its device and inode are
 * what port_destroy() may remove. A socket fd's own fchown() does not reach the node (bind()
 * makes it with our fsgid), unlike fchmod(), which bind() applies. 0, or -1 (logged).
 */
static int own_node(struct port *p, long gid)
{
	struct stat st;
	int node, r = -1;

	node = openat(AT_FDCWD, p->cfg.socket_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (node < 0) {
		log_err("%s: %s after bind: %s", p->name, p->cfg.socket_path, strerror(errno));
		return -1;
	}
	if (fstat(node, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		log_err("%s: %s is not the socket vnetd just made; refusing the port", p->name,
			p->cfg.socket_path);
		goto out;
	}
	p->sock_dev = st.st_dev;
	p->sock_ino = st.st_ino;
	if (gid >= 0 && st.st_gid != (gid_t)gid &&
	    fchownat(node, "", (uid_t)-1, (gid_t)gid, AT_EMPTY_PATH) < 0) {
		log_err("%s: cannot give %s group %ld: %s (vnetd must be root, or be in that group: "
			"--user keeps --socket-group's)", p->name, p->cfg.socket_path, gid,
			strerror(errno));
		goto out;
	}
	r = 0;
out:
	close(node);
	return r;
}

/*
 * port_listen() - the vhost-user listener at socket=, its mode (mode=, --socket-mode: 0660 by
 * default) from its creation: the mode is set on the socket before bind() (and bind runs under
 * a umask that keeps exactly it), never by path afterwards, where a symlink swapped in would be
 * followed; then its group (group=, --socket-group) by own_node(). Called with every worker
 * parked (start-up, port-add, reload), so the process-wide umask is ours for the moment.
 */
static int port_listen(struct port *p)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	unsigned mode = p->cfg.sock_mode ? p->cfg.sock_mode : sock_mode_default;
	long gid = p->cfg.sock_gid >= 0 ? p->cfg.sock_gid : sock_gid_default;
	mode_t old_umask;
	int fd, r;

	if (remove_stale_socket(p) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", p->cfg.socket_path);
	if (fchmod(fd, mode) < 0)
		log_warn("%s: fchmod of the socket: %s", p->name, strerror(errno));
	old_umask = umask(~mode & 0777);
	r = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_umask);
	if (r < 0 || listen(fd, 4) < 0) {
		log_err("%s: cannot listen on %s: %s", p->name, addr.sun_path, strerror(errno));
		close(fd);
		return -1;
	}
	if (own_node(p, gid) < 0) {
		close(fd);
		unlink_own_socket(p);
		return -1;
	}
	return fd;
}

/**
 * port_sock_accept() - the listener is readable: serve the first frontend, refuse any other.
 * @p: a server-mode port
 *
 * On the port's worker.
 */
void port_sock_accept(struct port *p)
{
	/*
	 * Edge-triggered (port_sock_open): take every pending connection until EAGAIN. Out of fds
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

/* ---- Both modes ---------------------------------------------------------------------------- */

/**
 * port_sock_open() - the port's vhost-user side: its listener at socket=, or (client=) its
 * reconnect timer and a first connect attempt.
 * @p: the port, its device and backend set up
 *
 * Main thread, the port's worker parked or not started.
 *
 * Return: 0, or -1 (logged) with what was set up left for port_sock_close().
 */
int port_sock_open(struct port *p)
{
	if (p->cfg.client)
		return port_client_init(p);
	p->listen_fd = port_listen(p);
	if (p->listen_fd < 0 ||
	    event_loop_add(p->epfd, p->listen_fd, EPOLLIN | EPOLLET,
			   port_ref(p, EV_VU_LISTEN, 0, p->listen_fd)) < 0)
		return -1;
	return 0;
}

/**
 * port_sock_close() - close a connect() in progress, the reconnect timer and the listener, and
 * remove the listener's socket if it is still the one made.
 * @p: the port, its frontend disconnected (port_sock_disconnect())
 *
 * Main thread, the port's worker parked or stopped.
 */
void port_sock_close(struct port *p)
{
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
}

/**
 * port_sock_disconnect() - drop the frontend: write a state change still pending, close the
 * connection (its queues reset); a client-mode port tries to connect again soon.
 * @p: the port; without a frontend nothing happens
 *
 * On the port's worker, or on the main thread with it parked.
 */
void port_sock_disconnect(struct port *p)
{
	if (!p->connected)
		return;
	if (p->state_pending)
		port_state_sync(p); /* a change still waiting for the timer, before the queues reset */
	port_persist_rings_stop(p); /* where packed rings stopped: the frontend may not know */
	/* A frontend that kept a write waiting and went away before port_check_fault() saw it:
	 * its port polls eventfds for every later frontend all the same. */
	if (atomic_load_explicit(&p->conn.peer_stalled, memory_order_relaxed))
		p->peer_stalled = true;
	event_loop_del(p->epfd, p->conn.sock);
	vu_conn_close(&p->conn);
	__atomic_store_n(&p->connected, false, __ATOMIC_RELAXED); /* stats read it unparked */
	log_info("%s: frontend disconnected", p->name);
	if (p->cfg.client && p->reconnect_fd >= 0) {
		p->backoff_ms = RECONNECT_MIN_MS; /* the VMM restarting: it listens again soon */
		arm_reconnect(p);
	}
}
