/* daemon.c - the vnetd process: one epoll loop dispatching typed references to their owners. */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "event_loop.h"
#include "guest_fault.h"
#include "log.h"
#include "metrics.h"
#include "port_internal.h"
#include "sandbox.h"
#include "switch.h"

#define MAX_CONTROL_CLIENTS 32
#define MAX_EVENTS 64

struct daemon {
	int epfd;
	int signal_fd;
	int control_fd;
	unsigned nports;
	struct port *ports[VNETD_MAX_PORTS];
	struct vnet_switch *sw;
	struct run_queue rq;     /* queues that yielded at their budget, oldest first */
	struct run_queue flushq; /* ports holding received packets the guest cannot see yet */
	struct control_client *clients[MAX_CONTROL_CLIENTS];
	struct metrics_server *metrics; /* NULL without --metrics */
	bool stop;
};

static void client_close(struct daemon *d, unsigned slot)
{
	struct control_client *c = d->clients[slot];

	event_loop_del(d->epfd, control_client_fd(c));
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
	struct ev_ref ref = {.kind = EV_CONTROL_CLIENT, .queue = (uint16_t)slot, .fd = fd};
	if (event_loop_add(d->epfd, fd, EPOLLIN, ref) < 0)
		client_close(d, slot);
}

static void control_event(struct daemon *d, struct ev_ref ref, uint32_t events)
{
	struct control_client *c = ref.queue < MAX_CONTROL_CLIENTS ? d->clients[ref.queue] : NULL;
	int r = 0;

	if (!c || control_client_fd(c) != ref.fd)
		return;
	if (events & EPOLLIN)
		r = control_client_readable(c, d->ports, d->nports);
	if (r == 0 && (events & EPOLLOUT))
		r = control_client_writable(c);
	if (r == 0 && (events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
		r = -1;
	if (r < 0) {
		client_close(d, ref.queue);
		return;
	}
	event_loop_mod(d->epfd, ref.fd, control_client_events(c), ref);
}

static void dispatch(struct daemon *d, struct ev_ref ref, uint32_t events)
{
	switch (ref.kind) {
	case EV_SIGNAL:
		d->stop = true;
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
		if (d->metrics)
			metrics_event(d->metrics, ref, events, d->ports, d->nports);
		break;
	case EV_VU_LISTEN:
	case EV_VU_CONN:
	case EV_KICK:
	case EV_QUEUE_TIMER:
	case EV_TAP:
	case EV_QUEUE_RUN:
	case EV_DEV_STATE:
		if (ref.port < d->nports)
			port_handle_event(d->ports[ref.port], ref, events);
		break;
	default:
		break;
	}
}

static int setup(struct daemon *d, const struct vnetd_options *opts)
{
	sigset_t mask;

	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0 || guest_fault_install() < 0 ||
	    run_queue_init(&d->rq, VNETD_MAX_PORTS * VNET_MAX_QUEUES) < 0 ||
	    run_queue_init(&d->flushq, VNETD_MAX_PORTS) < 0)
		return -1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->signal_fd < 0 ||
	    event_loop_add(d->epfd, d->signal_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_SIGNAL, .fd = d->signal_fd}) < 0)
		return -1;
	for (unsigned i = 0; i < opts->nports; i++) {
		if (opts->ports[i].backend == PORT_BACKEND_SWITCH && !d->sw) {
			d->sw = switch_create();
			if (!d->sw)
				return -1;
		}
		d->ports[i] = port_create(i, &opts->ports[i], d->epfd, &d->rq, &d->flushq, d->sw);
		if (!d->ports[i])
			return -1;
		d->nports = i + 1;
	}
	d->control_fd = control_listen(opts->control_path);
	if (d->control_fd < 0 ||
	    event_loop_add(d->epfd, d->control_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_CONTROL_LISTEN, .fd = d->control_fd}) < 0)
		return -1;
	if (opts->metrics[0] && !(d->metrics = metrics_open(opts->metrics, d->epfd)))
		return -1;
	return 0;
}

static void teardown(struct daemon *d, const struct vnetd_options *opts)
{
	for (unsigned i = 0; i < MAX_CONTROL_CLIENTS; i++)
		if (d->clients[i])
			client_close(d, i);
	metrics_close(d->metrics);
	for (unsigned i = 0; i < d->nports; i++)
		port_destroy(d->ports[i]);
	if (d->sw)
		switch_destroy(d->sw);
	if (d->control_fd >= 0) {
		close(d->control_fd);
		unlink(opts->control_path);
	}
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->epfd >= 0)
		close(d->epfd);
	run_queue_free(&d->rq);
	run_queue_free(&d->flushq);
}

int daemon_run(const struct vnetd_options *opts)
{
	struct daemon d = {.epfd = -1, .signal_fd = -1, .control_fd = -1};
	struct epoll_event events[MAX_EVENTS];
	int status = 0;

	if (setup(&d, opts) < 0 || sandbox_enter(opts) < 0) {
		teardown(&d, opts);
		return 1;
	}
	log_info("ready: %u port(s), control socket %s", d.nports, opts->control_path);
	while (!d.stop) {
		/* Work left over from budgets: look at the other fds without sleeping, then run it. */
		unsigned pending = run_queue_len(&d.rq);
		int n = epoll_wait(d.epfd, events, MAX_EVENTS, pending ? 0 : -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("epoll_wait: %s", strerror(errno));
			status = 1;
			break;
		}
		if (d.sw)
			switch_tick(d.sw); /* the switch's clock for this round */
		for (int i = 0; i < n; i++)
			dispatch(&d, ev_ref_unpack(events[i].data.u64), events[i].events);
		/* One budget each for what waited before this round; re-queued work goes behind. */
		for (struct ev_ref ref; pending-- && run_queue_pop(&d.rq, &ref);)
			dispatch(&d, ref, 0);
		/* Batch: received packets become visible once per loop iteration, on the ports that
		 * have some (work proportional to what is active, not to the number of ports). */
		for (struct ev_ref ref; run_queue_pop(&d.flushq, &ref);)
			if (ref.port < d.nports)
				port_flush_rx(d.ports[ref.port]);
		if (guest_fault_take())
			for (unsigned i = 0; i < d.nports; i++)
				port_check_fault(d.ports[i]);
	}
	log_info("shutting down");
	teardown(&d, opts);
	return status;
}
