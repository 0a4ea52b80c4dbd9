/* daemon.c - the vnetd process: worker loops dispatching typed references, control, ports. */
#include "daemon.h"

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

#include "config_file.h"
#include "control.h"
#include "event_loop.h"
#include "guest_fault.h"
#include "log.h"
#include "mem_cap.h"
#include "metrics.h"
#include "options.h"
#include "port_internal.h"
#include "port_spec.h"
#include "sandbox.h"
#include "switch.h"
#include "tap.h"
#include "worker.h"

#define MAX_CONTROL_CLIENTS 32

/* Where a port came from: a --config reload only adds, changes and removes its own. */
enum port_origin { ORIGIN_CMDLINE, ORIGIN_CONFIG, ORIGIN_RUNTIME };

struct daemon {
	struct worker_pool pool; /* worker 0: this thread, with signals and the control socket */
	int signal_fd;
	int control_fd;
	const struct vnetd_options *opts;
	/* Ports by slot (the index in their name and in ev_ref.port); NULL: free. */
	struct port *ports[VNETD_MAX_PORTS];
	/* The same, packed, for the control socket; removed ones leave at the end of a round. */
	struct port *live[VNETD_MAX_PORTS];
	unsigned nlive;
	uint8_t origin[VNETD_MAX_PORTS];      /* enum port_origin */
	uint8_t worker_of[VNETD_MAX_PORTS];   /* the worker that owns the port */
	int switch_home; /* where switch ports without worker= go; -1 until the first one */
	char *config_spec[VNETD_MAX_PORTS];   /* ORIGIN_CONFIG: the spec it was made from */
	bool doomed[VNETD_MAX_PORTS];         /* port-del'd: destroyed at the end of the round */
	unsigned ndoomed;
	bool reload;                          /* SIGHUP: re-read --config after this round */
	int config_dir;                       /* --config's directory (O_PATH) */
	int state_dir;                        /* --state-dir (read-only: fsync needs it) */
	const char *config_name;              /* ... and the file's name in it */
	struct vnet_switch *sw;  /* its ports are spread over the workers like the others */
	/* Per worker, touched by its own thread only: an EV_SWITCH_RX entry is in its run queue. */
	bool switch_rx_queued[VNETD_MAX_WORKERS];
	struct control_client *clients[MAX_CONTROL_CLIENTS];
	struct metrics_server *metrics; /* NULL without --metrics */
	bool stop;
};

static void client_close(struct daemon *d, unsigned slot)
{
	struct control_client *c = d->clients[slot];

	event_loop_del(d->pool.w[0].epfd, control_client_fd(c));
	control_client_free(c);
	d->clients[slot] = NULL;
}

static void control_accept(struct daemon *d)
{
	int fd = accept4(d->control_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	unsigned slot;

	if (fd < 0)
		return;
	for (slot = 0; slot < MAX_CONTROL_CLIENTS && d->clients[slot]; slot++)
		;
	if (slot == MAX_CONTROL_CLIENTS) {
		log_warn("control: too many clients");
		close(fd);
		return;
	}
	d->clients[slot] = control_client_new(fd);
	if (!d->clients[slot]) {
		close(fd);
		return;
	}
	struct ev_ref ref = {.kind = EV_CONTROL_CLIENT, .queue = (uint8_t)slot, .fd = fd};
	if (event_loop_add(d->pool.w[0].epfd, fd, EPOLLIN, ref) < 0)
		client_close(d, slot);
}

static void control_event(struct daemon *d, struct ev_ref ref, uint32_t events)
{
	struct control_client *c = ref.queue < MAX_CONTROL_CLIENTS ? d->clients[ref.queue] : NULL;
	int r = 0;

	if (!c || control_client_fd(c) != ref.fd)
		return;
	/* Requests that read or change ports of every worker park the others (control_sync_ops,
	 * per request); "stats" does not. */
	if (events & EPOLLIN)
		r = control_client_readable(c, d->live, d->nlive);
	if (r == 0 && (events & EPOLLOUT))
		r = control_client_writable(c);
	if (r == 0 && (events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
		r = -1;
	if (r < 0) {
		client_close(d, ref.queue);
		return;
	}
	event_loop_mod(d->pool.w[0].epfd, ref.fd, control_client_events(c), ref);
}

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

	for (unsigned i = 0; i < d->nlive; i++)
		port_state_sync(d->live[i]); /* e.g. vnetctl coalesce: keep it for a restart */
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

/*
 * switch_rx() - on worker w: one budget of the frames other workers queued for its switch
 * ports; what is left waits in the run queue behind the other work (fairness), not for another
 * wake-up. `from_rq`: this is that run-queue entry.
 */
static void switch_rx(struct daemon *d, struct worker *w, bool from_rq)
{
	bool *queued = &d->switch_rx_queued[w->id];

	if (from_rq)
		*queued = false;
	else if (*queued)
		return; /* the queued entry runs this round or the next */
	if (!d->sw || !switch_worker_rx(d->sw, w->id))
		return;
	if (run_queue_push(&w->rq, (struct ev_ref){.kind = EV_SWITCH_RX, .port = EV_PORT_NONE,
						  .fd = -1})) {
		*queued = true;
		return;
	}
	/* No wake-up would come for what is left: place it all now (a bug: logged). */
	log_err("worker %u: run queue full; placing the switch's frames at once", w->id);
	while (switch_worker_rx(d->sw, w->id))
		;
}

/* ---- Run-time ports ------------------------------------------------------------------------ */

/* add_port_cfg() - create a port from cfg in `slot`; the slot, or -1 (logged). */
static int add_port_cfg(struct daemon *d, unsigned slot, const struct port_config *cfg,
			enum port_origin origin)
{
	struct worker *w = &d->pool.w[0];
	struct port *p;

	if (cfg->backend == PORT_BACKEND_SWITCH && !d->sw) {
		d->sw = switch_create(d->pool.n, &daemon_switch_ops, d);
		if (!d->sw)
			return -1;
	}
	/*
	 * A port goes to its worker=. Else a tap port goes to the worker with the fewest ports (the
	 * lowest on a tie), and a switch port to the switch's home worker: the one the first such
	 * port got that way. The switch hands frames between workers (switch_xq.c), but a frame
	 * that crosses costs several times a direct copy, so unpinned switch ports stay together
	 * (as talking guests should) and the operator spreads groups with worker=.
	 */
	if (cfg->worker >= 0) { /* < d->pool.n: options_parse() and add_port_spec() checked */
		w = &d->pool.w[cfg->worker];
	} else if (cfg->backend == PORT_BACKEND_SWITCH && d->switch_home >= 0) {
		w = &d->pool.w[d->switch_home];
	} else {
		for (unsigned i = 1; i < d->pool.n; i++)
			if (d->pool.w[i].nports < w->nports)
				w = &d->pool.w[i];
		if (cfg->backend == PORT_BACKEND_SWITCH)
			d->switch_home = (int)w->id;
	}
	p = port_create(slot, cfg, w->id, w->epfd, &w->rq, &w->flushq, d->sw);
	if (!p)
		return -1;
	w->nports++;
	d->worker_of[slot] = (uint8_t)w->id;
	if (d->pool.n > 1)
		log_info("%s: worker %u", port_name(p), w->id);
	d->ports[slot] = p;
	d->origin[slot] = (uint8_t)origin;
	d->doomed[slot] = false;
	d->live[d->nlive++] = p;
	return (int)slot;
}

static int free_slot(const struct daemon *d)
{
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (!d->ports[i])
			return (int)i;
	return -1;
}

/* add_port_spec() - parse SPEC against the live ports and create it; slot, or -1 (err). */
static int add_port_spec(struct daemon *d, const char *spec, enum port_origin origin, char *err,
			 size_t err_len)
{
	static const struct port_config *others[VNETD_MAX_PORTS];
	static unsigned other_index[VNETD_MAX_PORTS];
	static struct port_config cfg;
	int slot = free_slot(d), r;
	unsigned n = 0;

	if (slot < 0) {
		snprintf(err, err_len, "all %d ports are in use", VNETD_MAX_PORTS);
		return -1;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (d->ports[i]) {
			others[n] = port_config(d->ports[i]);
			other_index[n++] = i;
		}
	if (port_spec_runtime(spec, (unsigned)slot, &cfg, others, other_index, n, err,
			      err_len) < 0)
		return -1;
	if (cfg.worker >= (int)d->pool.n) {
		snprintf(err, err_len, "worker=%d, but vnetd runs %u worker(s) (0..%u)", cfg.worker,
			 d->pool.n, d->pool.n - 1);
		return -1;
	}
	r = add_port_cfg(d, (unsigned)slot, &cfg, origin);
	if (r < 0)
		snprintf(err, err_len, "cannot set up the port (see vnetd's log)");
	return r;
}

/* doom_port() - remove the port at the end of this round (nothing may dangle before). */
static int doom_port(struct daemon *d, unsigned slot)
{
	if (d->doomed[slot])
		return -1;
	d->doomed[slot] = true;
	d->ndoomed++;
	return 0;
}

/* reap_ports() - destroy the doomed ports: frontend disconnected (held completions signalled,
 * queues stopped as for any disconnect), tap closed, switch port detached. Other workers are
 * parked by the caller. */
static void reap_ports(struct daemon *d)
{
	unsigned n = 0;

	for (unsigned i = 0; i < VNETD_MAX_PORTS && d->ndoomed; i++) {
		if (!d->doomed[i])
			continue;
		struct worker *w = &d->pool.w[d->worker_of[i]];

		log_info("%s: removed", port_name(d->ports[i]));
		port_destroy(d->ports[i]);
		/* Entries the port (or its teardown) queued must not reach the slot's next port. */
		run_queue_drop_port(&w->rq, i);
		run_queue_drop_port(&w->flushq, i);
		w->nports--;
		d->ports[i] = NULL;
		d->doomed[i] = false;
		free(d->config_spec[i]);
		d->config_spec[i] = NULL;
		d->ndoomed--;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (d->ports[i])
			d->live[n++] = d->ports[i];
	d->nlive = n;
}

static int ctl_port_add(void *ctx, const char *spec, char *name, size_t name_len, char *err,
			size_t err_len)
{
	struct daemon *d = ctx;
	int slot = add_port_spec(d, spec, ORIGIN_RUNTIME, err, err_len);

	if (slot < 0)
		return -1;
	snprintf(name, name_len, "%s", port_name(d->ports[slot]));
	log_info("%s: added at run time", name);
	return 0;
}

static int ctl_port_del(void *ctx, struct port *p, char *err, size_t err_len)
{
	if (doom_port(ctx, port_index(p)) < 0) {
		snprintf(err, err_len, "%s is being removed already", port_name(p));
		return -1;
	}
	return 0;
}

static const struct control_port_ops daemon_port_ops = {
	.add = ctl_port_add,
	.del = ctl_port_del,
};

/*
 * load_config() - apply --config: ports it no longer lists (or lists with another spec) go,
 * new ones come; ports it lists unchanged stay untouched (their guests notice nothing). A file
 * that does not parse changes nothing. Ports from the command line or port-add are not its own.
 */
static int load_config(struct daemon *d)
{
	static struct config_ports cp;
	char err[256];
	bool keep[VNETD_MAX_PORTS] = {false};
	unsigned added = 0, removed = 0, failed = 0;

	if (config_file_load(d->config_dir, d->config_name, &cp, err, sizeof(err)) < 0) {
		log_err("config %s: %s; nothing changed", d->opts->config_path, err);
		return -1;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++) {
		bool listed = false;

		if (!d->ports[i] || d->origin[i] != ORIGIN_CONFIG || d->doomed[i])
			continue;
		for (unsigned j = 0; j < cp.n && !listed; j++)
			if (!keep[j] && d->config_spec[i] && strcmp(cp.spec[j], d->config_spec[i]) == 0)
				keep[j] = listed = true;
		if (!listed) {
			doom_port(d, i);
			removed++;
		}
	}
	reap_ports(d); /* a changed port's socket and tap are free again for its new spec */
	for (unsigned j = 0; j < cp.n; j++) {
		int slot;

		if (keep[j])
			continue;
		slot = add_port_spec(d, cp.spec[j], ORIGIN_CONFIG, err, sizeof(err));
		if (slot < 0) {
			log_err("config %s: port %u: %s", d->opts->config_path, j, err);
			failed++;
			continue;
		}
		d->config_spec[slot] = strdup(cp.spec[j]); /* NULL (no memory): replaced next time */
		added++;
	}
	log_info("config %s: %u port(s) added, %u removed, %u unchanged, %u failed",
		 d->opts->config_path, added, removed, cp.n - added - failed, failed);
	return failed ? -1 : 0;
}

/*
 * open_config_dir() - the directory of --config, kept open: SIGHUP re-reads the file by name
 * in it (an editor's rename is seen), and the sandbox allows opening files there only.
 */
static int open_config_dir(struct daemon *d)
{
	static char dir[sizeof(d->opts->config_path)];
	const char *path = d->opts->config_path, *slash = strrchr(path, '/');

	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		d->config_name = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		d->config_name = path;
	}
	d->config_dir = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d->config_dir < 0 || d->config_name[0] == '\0') {
		log_err("config %s: cannot open its directory: %s", path,
			d->config_dir < 0 ? strerror(errno) : "no file name");
		return -1;
	}
	sandbox_allow_openat(d->config_dir, CONFIG_OPEN_FLAGS);
	return 0;
}

static void dispatch(void *ctx, struct worker *w, struct ev_ref ref, uint32_t events)
{
	struct daemon *d = ctx;

	switch (ref.kind) {
	case EV_SIGNAL:
		signal_event(d);
		break;
	case EV_CONTROL_LISTEN:
		control_accept(d);
		break;
	case EV_CONTROL_CLIENT:
		control_event(d, ref, events);
		break;
	case EV_METRICS_LISTEN:
	case EV_METRICS_CLIENT:
	case EV_METRICS_TIMER:
		/* A scrape reads every worker's ports through stats.c, lock-free: no park. */
		if (d->metrics)
			metrics_event(d->metrics, ref, events, d->live, d->nlive);
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
		if (ref.port < VNETD_MAX_PORTS && d->ports[ref.port])
			port_handle_event(d->ports[ref.port], ref, events);
		break;
	case EV_PORT_FLUSH:
		if (ref.port < VNETD_MAX_PORTS && d->ports[ref.port])
			port_flush_rx(d->ports[ref.port]);
		break;
	case EV_SWITCH_RX:
		switch_rx(d, w, true);
		break;
	default:
		break;
	}
}

/* A guest memory fault somewhere: the worker checks the ports it owns. */
static void worker_fault(void *ctx, struct worker *w)
{
	struct daemon *d = ctx;

	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (d->ports[i] && d->worker_of[i] == w->id)
			port_check_fault(d->ports[i]);
}

static void worker_round_begin(void *ctx, struct worker *w)
{
	struct daemon *d = ctx;

	if (d->sw)
		switch_tick(d->sw, w->id); /* this worker's switch clock for the round */
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

	if (d->sw)
		switch_worker_round_end(d->sw, w->id);
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
	if (guest_fault_install() < 0 ||
	    worker_pool_init(&d->pool, opts->workers ? opts->workers : 1,
			     VNETD_MAX_PORTS * VNET_MAX_QUEUES, &daemon_worker_ops, d) < 0)
		return -1;
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
		if (add_port_cfg(d, i, &opts->ports[i], ORIGIN_CMDLINE) < 0)
			return -1;
	if (opts->config_path[0] && (open_config_dir(d) < 0 || load_config(d) < 0))
		return -1;
	/* Run-time taps open /dev/net/tun relative to /dev/net; the filter allows only that. */
	if (tap_open_tun_dir() >= 0)
		sandbox_allow_openat(tap_open_tun_dir(), TAP_TUN_FLAGS);
	control_set_port_ops(&daemon_port_ops, d);
	control_set_sync_ops(&daemon_sync_ops, d);
	d->control_fd = control_listen(opts->control_path);
	if (d->control_fd < 0 ||
	    event_loop_add(d->pool.w[0].epfd, d->control_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_CONTROL_LISTEN, .fd = d->control_fd}) < 0)
		return -1;
	if (opts->metrics[0] && !(d->metrics = metrics_open(opts->metrics, d->pool.w[0].epfd)))
		return -1;
	return 0;
}

static void teardown(struct daemon *d, const struct vnetd_options *opts)
{
	worker_pool_stop(&d->pool); /* the threads end; their ports are ours to destroy */
	for (unsigned i = 0; i < MAX_CONTROL_CLIENTS; i++)
		if (d->clients[i])
			client_close(d, i);
	metrics_close(d->metrics);
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++) {
		port_destroy(d->ports[i]);
		free(d->config_spec[i]);
	}
	if (d->sw)
		switch_destroy(d->sw);
	if (d->control_fd >= 0) {
		close(d->control_fd);
		control_unlink(opts->control_path);
	}
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->config_dir >= 0)
		close(d->config_dir);
	if (d->state_dir >= 0)
		close(d->state_dir);
	worker_pool_free(&d->pool);
}

int daemon_run(const struct vnetd_options *opts)
{
	static struct daemon d; /* ~60 KB of port tables: not on the stack */
	int status = 0;

	memset(&d, 0, sizeof(d));
	d.switch_home = -1;
	d.signal_fd = d.control_fd = d.config_dir = d.state_dir = -1;
	d.opts = opts;
	/* Threads before the sandbox: creating one needs clone(), which the filter kills. */
	if (setup(&d, opts) < 0 || worker_pool_start(&d.pool) < 0 || sandbox_enter(opts) < 0) {
		teardown(&d, opts);
		return 1;
	}
	log_info("ready: %u port(s), %u worker(s), control socket %s", d.nlive, d.pool.n,
		 opts->control_path);
	while (!d.stop) {
		if (worker_round(&d.pool.w[0]) < 0) {
			status = 1;
			break;
		}
		/* Port changes take effect between rounds: nothing of this round refers to them. */
		if (d.ndoomed) {
			worker_pool_park(&d.pool);
			reap_ports(&d);
			worker_pool_unpark(&d.pool);
		}
		if (d.reload) {
			d.reload = false;
			worker_pool_park(&d.pool);
			if (opts->config_path[0])
				load_config(&d);
			else
				log_info("SIGHUP without --config: nothing to reload");
			worker_pool_unpark(&d.pool);
		}
	}
	log_info("shutting down");
	teardown(&d, opts);
	return status;
}
