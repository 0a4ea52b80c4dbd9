/* SPDX-License-Identifier: MIT */
/* daemon.c - the vnetd process: set-up, and worker loops dispatching typed references. */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "control/control.h"
#include "loop/loop.h"
#include "mem/mem.h"
#include "lib/log.h"
#include "lib/peer_io.h"
#include "port/port.h"
#include "daemon/sandbox.h"
#include "backend/switch/switch.h"
#include "backend/tap/tap.h"

struct daemon {
	struct worker_pool pool; /* worker 0: this thread, with signals and the control socket */
	int signal_fd;
	struct port_table pt; /* the ports: slots, workers, switch, run-time changes, --config */
	bool reload;   /* SIGHUP: re-read --config after this round */
	int state_dir; /* --state-dir (read-only: fsync needs it) */
	/* Per worker, touched by its own thread only: an EV_SWITCH_RX entry is in its run queue. */
	bool switch_rx_queued[VNETD_MAX_WORKERS];
	struct control_clients *control; /* the control socket and its clients */
	struct metrics_server *metrics; /* NULL without --metrics */
	bool stop;
};

/* control_sync_enter() - before a control request other than "stats": park the other workers. */
static void control_sync_enter(void *ctx)
{
	struct daemon *d = ctx;

	worker_pool_park(&d->pool);
}

/* control_sync_leave() - after it: keep what it changed for a restart, then resume the workers. */
static void control_sync_leave(void *ctx)
{
	struct daemon *d = ctx;

	for (unsigned i = 0; i < port_table_nlive(&d->pt); i++) {
		port_state_sync(port_table_live(&d->pt)[i]); /* e.g. vnetctl coalesce: keep it */
		port_lanes_sync(port_table_live(&d->pt)[i]); /* what the lanes read of the device */
	}
	worker_pool_unpark(&d->pool);
}

static const struct control_sync_ops daemon_sync_ops = {control_sync_enter, control_sync_leave};

/* signal_event() - SIGHUP asks for a --config reload, SIGTERM/SIGINT for the end. */
static void signal_event(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			d->reload = true;
		else
			d->stop = true;
	}
}

/* ---- The switch across workers ------------------------------------------------------------- */

_Static_assert(VNETD_MAX_WORKERS <= SWITCH_MAX_WORKERS, "the switch spans every worker");

/* Another worker queued switch frames for `worker`'s ports: its eventfd. */
static void switch_wake(void *ctx, unsigned worker)
{
	struct daemon *d = ctx;

	worker_wake(&d->pool.w[worker]);
}

static const struct switch_owner_ops daemon_switch_ops = {.wake = switch_wake};

/* One budget of each segment's frames for worker w's ports: true if some are left. */
static bool segments_rx(struct daemon *d, struct worker *w)
{
	bool more = false;

	for (unsigned i = 0; i < port_table_nsegments(&d->pt); i++)
		if (switch_worker_rx(port_table_segment_switch(&d->pt, i), w->id))
			more = true;
	return more;
}

/*
 * switch_rx() - on worker w: one budget (per segment) of the frames other workers queued for
 * its switch ports; what is left waits in the run queue behind the other work (fairness), not
 * for another wake-up. `from_rq`: this is that run-queue entry.
 */
static void switch_rx(struct daemon *d, struct worker *w, bool from_rq)
{
	bool *queued = &d->switch_rx_queued[w->id];

	if (from_rq)
		*queued = false;
	else if (*queued)
		return; /* the queued entry runs this round or the next */
	if (!segments_rx(d, w))
		return;
	if (run_queue_push(&w->rq, (struct ev_ref){.kind = EV_SWITCH_RX, .port = EV_PORT_NONE,
						  .fd = -1})) {
		*queued = true;
		return;
	}
	/* No wake-up would come for what is left: place it all now (a bug: logged). */
	log_err("worker %u: run queue full; placing the switch's frames at once", w->id);
	while (segments_rx(d, w))
		;
}

/* ---- Run-time ports ------------------------------------------------------------------------ */

static int ctl_port_add(void *ctx, const char *spec, char *name, size_t name_len, char *err,
			size_t err_len)
{
	struct daemon *d = ctx;
	int slot = port_table_add_spec(&d->pt, spec, PORT_ORIGIN_RUNTIME, err, err_len);

	if (slot < 0)
		return -1;
	snprintf(name, name_len, "%s", port_name(port_table_port(&d->pt, (unsigned)slot)));
	log_info("%s: added at run time", name);
	return 0;
}

static int ctl_port_del(void *ctx, struct port *p, char *err, size_t err_len)
{
	struct daemon *d = ctx;

	if (port_table_doom(&d->pt, port_index(p)) < 0) {
		snprintf(err, err_len, "%s is being removed already", port_name(p));
		return -1;
	}
	return 0;
}

static const struct control_port_ops daemon_port_ops = {
	.add = ctl_port_add,
	.del = ctl_port_del,
};

static void dispatch(void *ctx, struct worker *w, struct ev_ref ref, uint32_t events)
{
	struct daemon *d = ctx;
	struct port *p;

	switch (ref.kind) {
	case EV_SIGNAL:
		signal_event(d);
		break;
	case EV_CONTROL_LISTEN:
	case EV_CONTROL_CLIENT:
		/* Requests that read or change ports of every worker park the others
		 * (control_sync_ops, per request); "stats" does not. */
		control_client_event(d->control, ref, events, port_table_live(&d->pt),
				     port_table_nlive(&d->pt));
		break;
	case EV_METRICS_LISTEN:
	case EV_METRICS_CLIENT:
	case EV_METRICS_TIMER:
		/* A scrape reads every worker's ports through stats.c, lock-free: no park. */
		if (d->metrics)
			metrics_event(d->metrics, ref, events, port_table_live(&d->pt),
				      port_table_nlive(&d->pt));
		break;
	case EV_VU_LISTEN:
	case EV_VU_CONN:
	case EV_KICK:
	case EV_QUEUE_TIMER:
	case EV_TAP:
	case EV_QUEUE_RUN:
	case EV_RECONNECT:
	case EV_DEV_STATE:
	case EV_STATE_TIMER:
		if ((p = port_table_port(&d->pt, ref.port)))
			port_handle_event(p, ref, events);
		break;
	case EV_PORT_FLUSH:
		if ((p = port_table_port(&d->pt, ref.port)))
			port_flush_rx(p, ref.queue);
		break;
	case EV_SWITCH_RX:
		switch_rx(d, w, true);
		break;
	default:
		break;
	}
}

/*
 * A guest memory fault, or a frontend that kept a write waiting, found by this worker or
 * another: it checks the ports it owns, and wakes the other workers so that a port's home
 * checks it even when a lane's thread found it and the home sleeps (each worker wakes the
 * others once per generation it sees: rare, and it ends).
 */
static void worker_fault(void *ctx, struct worker *w)
{
	struct daemon *d = ctx;

	port_table_check_faults(&d->pt, w->id);
	for (unsigned i = 0; i < d->pool.n; i++)
		if (i != w->id)
			worker_wake(&d->pool.w[i]);
}

static void worker_round_begin(void *ctx, struct worker *w)
{
	struct daemon *d = ctx;

	/* This worker's switch clock for the round, in every segment. */
	for (unsigned i = 0; i < port_table_nsegments(&d->pt); i++)
		switch_tick(port_table_segment_switch(&d->pt, i), w->id);
}

/* The wake eventfd fired: frames from other workers' switch ports, perhaps (or a park). */
static void worker_woken(void *ctx, struct worker *w)
{
	switch_rx(ctx, w, false);
}

/* After the round: wake the workers this one queued switch frames for. */
static void worker_round_end(void *ctx, struct worker *w)
{
	struct daemon *d = ctx;

	for (unsigned i = 0; i < port_table_nsegments(&d->pt); i++)
		switch_worker_round_end(port_table_segment_switch(&d->pt, i), w->id);
}

static const struct worker_ops daemon_worker_ops = {
	.dispatch = dispatch,
	.fault = worker_fault,
	.round_begin = worker_round_begin,
	.woken = worker_woken,
	.round_end = worker_round_end,
};

/*
 * raise_fd_limit() - a connected port holds about a dozen fds (socket, kick/call/error
 * eventfds, timers, tap): take the hard RLIMIT_NOFILE as the soft one (the usual soft 1024 is
 * too few for a thousand ports). A failure is only logged; ports that do not fit fail to open.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the open-file limit: %s", strerror(errno));
}

/* state_dir_user() - the uid vnetd runs as once set up: --user's (sandbox.c), else ours. */
static unsigned state_dir_user(const struct vnetd_options *opts)
{
	const struct passwd *pw = opts->user[0] && !opts->no_sandbox ? getpwnam(opts->user) : NULL;

	return pw ? (unsigned)pw->pw_uid : (unsigned)geteuid();
}

static int setup(struct daemon *d, const struct vnetd_options *opts)
{
	sigset_t mask;

	raise_fd_limit();
	if (opts->max_guest_mem)
		mem_cap_set_daemon(opts->max_guest_mem);
	port_set_socket_owner(opts->socket_gid, opts->socket_mode ? opts->socket_mode : 0660);
	d->pool.no_uring = opts->no_io_uring;
	(void)peer_io_watchdog_start(); /* without it, calls cost a poll() more (logged) */
	if (guest_fault_install() < 0 ||
	    worker_pool_init(&d->pool, opts->workers ? opts->workers : 1,
			     VNETD_MAX_PORTS * VNET_MAX_QUEUES, &daemon_worker_ops, d) < 0)
		return -1;
	for (unsigned i = 0; i < d->pool.n; i++) { /* before any port: they take it when created */
		d->pool.w[i].poll_us = opts->poll_us_worker[i] >= 0 ? (unsigned)opts->poll_us_worker[i]
								    : opts->poll_us;
		d->pool.w[i].poll_budget_ns = opts->poll_budget_ns;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->signal_fd < 0 ||
	    event_loop_add(d->pool.w[0].epfd, d->signal_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_SIGNAL, .fd = d->signal_fd}) < 0)
		return -1;
	if (opts->state_dir[0]) {
		char err[256];

		d->state_dir = open(opts->state_dir, PORT_STATE_DIR_FLAGS);
		if (d->state_dir < 0 ||
		    port_state_dir_check(d->state_dir, state_dir_user(opts), err, sizeof(err)) < 0) {
			log_err("--state-dir %s: %s", opts->state_dir,
				d->state_dir < 0 ? strerror(errno) : err);
			return -1;
		}
		port_set_state_dir(d->state_dir);
		sandbox_allow_openat(d->state_dir, PORT_STATE_READ_FLAGS);
		sandbox_allow_openat(d->state_dir, PORT_STATE_WRITE_FLAGS);
	}
	for (unsigned i = 0; i < opts->nports; i++)
		if (port_table_add(&d->pt, i, &opts->ports[i], PORT_ORIGIN_CMDLINE) < 0)
			return -1;
	if (opts->config_path[0]) {
		int dir = port_table_open_config(&d->pt, opts->config_path);

		if (dir < 0)
			return -1;
		sandbox_allow_openat(dir, CONFIG_OPEN_FLAGS);
		if (port_table_reload(&d->pt) < 0)
			return -1;
	}
	/* Run-time taps open /dev/net/tun relative to /dev/net; the filter allows only that. */
	if (tap_open_tun_dir() >= 0)
		sandbox_allow_openat(tap_open_tun_dir(), TAP_TUN_FLAGS);
	control_set_port_ops(&daemon_port_ops, d);
	control_set_sync_ops(&daemon_sync_ops, d);
	if (!(d->control = control_client_open(opts->control_path, d->pool.w[0].epfd)))
		return -1;
	if (opts->metrics[0] && !(d->metrics = metrics_open(opts->metrics, d->pool.w[0].epfd)))
		return -1;
	return 0;
}

static void teardown(struct daemon *d, const struct vnetd_options *opts)
{
	worker_pool_stop(&d->pool); /* the threads end; their ports are ours to destroy */
	metrics_close(d->metrics);
	port_table_free(&d->pt); /* the ports, the switch, the --config directory */
	control_client_close(d->control);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->state_dir >= 0)
		close(d->state_dir);
	worker_pool_free(&d->pool);
}

/**
 * daemon_run() - set everything up from the options and serve until SIGTERM/SIGINT.
 * @opts: the parsed command line (kept: the daemon refers to it until it returns)
 *
 * Main thread; starts the other workers' threads, then enters the sandbox. Port changes
 * (port-del, SIGHUP's --config reload) take effect between rounds, the workers parked.
 *
 * Return: the process's exit status: 0 after a signal, 1 when set-up or the loop failed.
 */
int daemon_run(const struct vnetd_options *opts)
{
	static struct daemon d; /* ~60 KB of port tables: not on the stack */
	int status = 0;

	memset(&d, 0, sizeof(d));
	d.signal_fd = d.state_dir = -1;
	port_table_init(&d.pt, &d.pool, &daemon_switch_ops, &d);
	/* Threads before the sandbox: creating one needs clone(), which the filter kills. */
	if (setup(&d, opts) < 0 || worker_pool_start(&d.pool) < 0 || sandbox_enter(opts) < 0) {
		teardown(&d, opts);
		return 1;
	}
	log_info("ready: %u port(s), %u worker(s), control socket %s", port_table_nlive(&d.pt),
		 d.pool.n, opts->control_path);
	while (!d.stop) {
		if (worker_round(&d.pool.w[0]) < 0) {
			status = 1;
			break;
		}
		/* Port changes take effect between rounds: nothing of this round refers to them. */
		if (port_table_doomed(&d.pt)) {
			worker_pool_park(&d.pool);
			port_table_reap(&d.pt);
			worker_pool_unpark(&d.pool);
		}
		if (d.reload) {
			d.reload = false;
			worker_pool_park(&d.pool);
			if (opts->config_path[0]) {
				port_table_reload(&d.pt);
			} else {
				log_info("SIGHUP without --config: nothing to reload");
			}
			worker_pool_unpark(&d.pool);
		}
	}
	log_info("shutting down");
	teardown(&d, opts);
	return status;
}
