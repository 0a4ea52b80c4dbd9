/* SPDX-License-Identifier: MIT */
/* metrics.c - Prometheus /metrics over HTTP: a tiny non-blocking server inside the event loop. */
#include "control/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "lib/listen_addr.h"
#include "lib/log.h"
#include "control/metrics_text.h"
#include "control/stats.h"
#include "lib/textbuf.h"

/* One HTTP connection: reads one request, sends one reply, closes. */
struct metrics_client {
	int fd;
	uint64_t deadline_ns; /* closed when this passes, whatever its state */
	bool replying;	      /* the request is complete: only writing now */
	size_t in_len;
	struct textbuf out; /* the whole reply */
	size_t out_off;	    /* bytes of it already sent */
	char in[METRICS_MAX_REQUEST];
};

struct metrics_server {
	int epfd, listen_fd, timer_fd;
	bool timer_armed;
	bool listen_paused; /* accept failed for want of fds: the 1 s tick listens again */
	struct metrics_client *clients[METRICS_MAX_CLIENTS];
};

/* ---- Parsing (pure) ------------------------------------------------------------------------ */


/* header_end() - whether buf holds a blank line ending the header ("\r\n\r\n" or "\n\n"). */
static bool header_end(const char *buf, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (buf[i] == '\n' &&
		    (buf[i - 1] == '\n' || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')))
			return true;
	return false;
}

/**
 * metrics_http_status() - judge the bytes of a request received so far.
 * @buf: the request; need not be NUL-terminated
 * @len: bytes in @buf
 * @head: set for HEAD, whose reply has no body
 *
 * Pure.
 *
 * Return: 0 while the header is incomplete (and shorter than METRICS_MAX_REQUEST), else the HTTP
 * status to answer: 200 for GET or HEAD of /metrics (a query string allowed), 400 malformed, 404
 * another path, 405 another method, 431 too long.
 */
int metrics_http_status(const char *buf, size_t len, bool *head)
{
	const char *line_end, *sp1, *sp2, *target;
	size_t line_len, tlen;

	*head = false;
	if (!header_end(buf, len))
		return len >= METRICS_MAX_REQUEST ? 431 : 0;
	line_end = memchr(buf, '\n', len);
	line_len = (size_t)(line_end - buf);
	if (line_len > 0 && buf[line_len - 1] == '\r')
		line_len--;
	/* METHOD SP TARGET SP HTTP/1.x */
	sp1 = memchr(buf, ' ', line_len);
	if (!sp1 || sp1 == buf)
		return 400;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', line_len - (size_t)(target - buf));
	if (!sp2 || sp2 == target)
		return 400;
	if ((size_t)(buf + line_len - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    sp2[8] < '0' || sp2[8] > '9')
		return 400;
	tlen = (size_t)(sp2 - target);
	if ((size_t)(sp1 - buf) == 4 && memcmp(buf, "HEAD", 4) == 0)
		*head = true;
	else if ((size_t)(sp1 - buf) != 3 || memcmp(buf, "GET", 3) != 0)
		return 405;
	if (tlen >= 8 && memcmp(target, "/metrics", 8) == 0 && (tlen == 8 || target[8] == '?'))
		return 200;
	return 404;
}

/* ---- Rendering ----------------------------------------------------------------------------- */

/**
 * metrics_render() - the exposition text of the ports, read through stats.c (metrics_text.h).
 * @body: appended to; oom set when memory ran out
 * @ports: the live ports
 * @nports: their number
 *
 * Main thread; the workers keep running (every value is read lock-free).
 */
void metrics_render(struct textbuf *body, struct port *const *ports, unsigned nports)
{
	struct metrics_port_view *views = calloc(nports ? nports : 1, sizeof(*views));
	struct stats_queue *queues;
	unsigned i, j;

	if (!views) {
		body->oom = true;
		return;
	}
	for (i = 0; i < nports; i++) {
		stats_port_read(ports[i], &views[i].port);
		queues = calloc(views[i].port.nqueues ? views[i].port.nqueues : 1, sizeof(*queues));
		if (!queues) {
			body->oom = true;
			views[i].port.nqueues = 0;
			continue;
		}
		for (j = 0; j < views[i].port.nqueues; j++)
			if (!stats_queue_read(ports[i], j, &queues[j]))
				break;
		views[i].port.nqueues = j;
		views[i].queues = queues;
	}
	if (!body->oom)
		metrics_format(body, views, nports);
	for (i = 0; i < nports; i++)
		free((void *)views[i].queues);
	free(views);
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	default:
		return "Internal Server Error";
	}
}

/* build_reply() - the whole HTTP/1.1 reply (Connection: close) into c->out. */
static void build_reply(struct metrics_client *c, int status, bool head, struct port *const *ports,
			unsigned nports)
{
	struct textbuf body = {0};

	if (status == 200)
		metrics_render(&body, ports, nports);
	else
		tb_printf(&body, "%d %s\n", status, reason(status));
	if (body.oom) {
		tb_free(&body);
		status = 500;
		tb_printf(&body, "500 out of memory\n");
	}
	tb_printf(&c->out,
		  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		  "Connection: close\r\n\r\n",
		  status, reason(status),
		  status == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain",
		  body.len, status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head && body.len)
		tb_puts(&c->out, body.p);
	tb_free(&body);
}

/* ---- Connections --------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* arm_timer() - a 1 s tick while connections exist, none otherwise. */
static void arm_timer(struct metrics_server *m)
{
	bool want = false;
	struct itimerspec its = {{0, 0}, {0, 0}};

	for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++)
		want |= m->clients[i] != NULL;
	want |= m->listen_paused;
	if (want == m->timer_armed)
		return;
	if (want)
		its.it_value.tv_sec = its.it_interval.tv_sec = 1;
	if (timerfd_settime(m->timer_fd, 0, &its, NULL) == 0)
		m->timer_armed = want;
}

static void client_close(struct metrics_server *m, unsigned slot)
{
	struct metrics_client *c = m->clients[slot];

	if (!c)
		return;
	event_loop_del(m->epfd, c->fd);
	close(c->fd);
	tb_free(&c->out);
	free(c);
	m->clients[slot] = NULL;
}

/* free_slot() - an empty slot; when all are taken, the oldest connection still reading its
 * request (else the oldest of all) makes room. */
static unsigned free_slot(struct metrics_server *m)
{
	unsigned oldest = 0, oldest_reading = METRICS_MAX_CLIENTS;

	for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++) {
		struct metrics_client *c = m->clients[i];

		if (!c)
			return i;
		if (c->deadline_ns < m->clients[oldest]->deadline_ns)
			oldest = i;
		if (!c->replying && (oldest_reading == METRICS_MAX_CLIENTS ||
				     c->deadline_ns < m->clients[oldest_reading]->deadline_ns))
			oldest_reading = i;
	}
	if (oldest_reading < METRICS_MAX_CLIENTS)
		oldest = oldest_reading;
	log_debug("metrics: %d connections open, closing the oldest", METRICS_MAX_CLIENTS);
	client_close(m, oldest);
	return oldest;
}

static void accept_clients(struct metrics_server *m)
{
	/* A bounded number per event, so a connection flood cannot hold the loop. */
	for (int n = 0; n < 2 * METRICS_MAX_CLIENTS; n++) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct metrics_client *c;
		unsigned slot;

		if (fd < 0) {
			/* Out of fds the connection stays pending and the level-triggered listener
			 * would wake the loop at once, for ever: stop listening until the tick. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				log_guest("metrics: cannot accept a connection: %s (listening again in "
					  "1 s)", strerror(errno));
				if (event_loop_mod(m->epfd, m->listen_fd, 0,
						   (struct ev_ref){.kind = EV_METRICS_LISTEN,
								   .fd = m->listen_fd}) == 0)
					m->listen_paused = true;
			}
			break;
		}
		slot = free_slot(m);
		c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			break;
		}
		c->fd = fd;
		c->deadline_ns = now_ns() + (uint64_t)METRICS_TIMEOUT_MS * 1000000u;
		c->replying = false;
		c->in_len = 0;
		c->out = (struct textbuf){0};
		c->out_off = 0;
		m->clients[slot] = c;
		if (event_loop_add(m->epfd, fd, EPOLLIN,
				   (struct ev_ref){.kind = EV_METRICS_CLIENT,
						   .queue = (uint8_t)slot,
						   .fd = fd}) < 0)
			client_close(m, slot);
	}
	arm_timer(m);
}

/* client_send() - send what the socket takes; 1 when all is sent, 0 to wait, -1 on error. */
static int client_send(struct metrics_client *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->out_off += (size_t)n;
	}
	return 1;
}

/* client_read() - take request bytes; 1 when a reply is due, 0 to wait, -1 to close. */
static int client_read(struct metrics_client *c, int *status, bool *head)
{
	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		if (n == 0)
			return -1; /* closed before the request was complete */
		c->in_len += (size_t)n;
		*status = metrics_http_status(c->in, c->in_len, head);
		if (*status)
			return 1;
	}
}

static void client_event(struct metrics_server *m, struct ev_ref ref, uint32_t events,
			 struct port *const *ports, unsigned nports)
{
	struct metrics_client *c = ref.queue < METRICS_MAX_CLIENTS ? m->clients[ref.queue] : NULL;
	int r = 0, status = 0;
	bool head = false;

	if (!c || c->fd != ref.fd)
		return;
	if (!c->replying && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		r = client_read(c, &status, &head);
		if (r == 1) {
			c->replying = true;
			build_reply(c, status, head, ports, nports);
			if (c->out.oom)
				r = -1;
		}
	}
	if (r >= 0 && c->replying) {
		r = client_send(c);
		if (r == 0)
			r = event_loop_mod(m->epfd, c->fd, EPOLLOUT, ref) < 0 ? -1 : 0;
	}
	if (r != 0) /* sent in full, or an error */
		client_close(m, ref.queue);
	arm_timer(m);
}

static void expire_clients(struct metrics_server *m)
{
	uint64_t ticks, now = now_ns();

	if (read(m->timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		log_debug("metrics: timer read: %s", strerror(errno));
	for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++)
		if (m->clients[i] && now >= m->clients[i]->deadline_ns)
			client_close(m, i);
	if (m->listen_paused &&
	    event_loop_mod(m->epfd, m->listen_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_METRICS_LISTEN, .fd = m->listen_fd}) == 0)
		m->listen_paused = false;
	arm_timer(m);
}

/**
 * metrics_event() - handle an EV_METRICS_* event: accept, serve or time out connections.
 * @m: the server
 * @ref: the event's reference
 * @events: the epoll events
 * @ports: the live ports, for a reply rendered now
 * @nports: their number
 *
 * Never blocks. Main thread (the server's fds are in its epoll set); workers are not parked.
 */
void metrics_event(struct metrics_server *m, struct ev_ref ref, uint32_t events,
		   struct port *const *ports, unsigned nports)
{
	if (ref.kind == EV_METRICS_LISTEN)
		accept_clients(m);
	else if (ref.kind == EV_METRICS_CLIENT)
		client_event(m, ref, events, ports, nports);
	else if (ref.kind == EV_METRICS_TIMER)
		expire_clients(m);
}

/* ---- Listener ------------------------------------------------------------------------------ */

static int listen_on(const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;
	char shown[INET6_ADDRSTRLEN];
	uint16_t port;

	if (listen_addr_parse(spec, &ss, &len) < 0) {
		log_err("metrics: bad address '%s' (expected IPV4:PORT or [IPV6]:PORT)", spec);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("metrics: socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		log_err("metrics: %s: %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a6->sin6_addr, shown, sizeof(shown));
		port = ntohs(a6->sin6_port);
		if (!IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr))
			log_warn(
			    "metrics: [%s] is not a loopback address: whoever reaches it reads "
			    "the statistics (no authentication)",
			    shown);
		log_info("metrics: http://[%s]:%u/metrics", shown, port);
	} else {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a4->sin_addr, shown, sizeof(shown));
		port = ntohs(a4->sin_port);
		if ((ntohl(a4->sin_addr.s_addr) >> 24) != 127)
			log_warn("metrics: %s is not a loopback address: whoever reaches it reads "
				 "the statistics (no authentication)",
				 shown);
		log_info("metrics: http://%s:%u/metrics", shown, port);
	}
	return fd;
}

/**
 * metrics_open() - listen for scrapes and register the listener and a timeout timer (EV_METRICS_*).
 * @spec: the address (listen_addr_parse()); a non-loopback address is warned about
 * @epfd: the main thread's epoll set
 *
 * Call before sandbox_enter().
 *
 * Return: the server, or NULL on error (logged).
 */
struct metrics_server *metrics_open(const char *spec, int epfd)
{
	struct metrics_server *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->epfd = epfd;
	m->timer_fd = -1;
	m->listen_fd = listen_on(spec);
	if (m->listen_fd < 0)
		goto fail;
	m->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->timer_fd < 0 ||
	    event_loop_add(epfd, m->listen_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_METRICS_LISTEN, .fd = m->listen_fd}) < 0 ||
	    event_loop_add(epfd, m->timer_fd, EPOLLIN,
			   (struct ev_ref){.kind = EV_METRICS_TIMER, .fd = m->timer_fd}) < 0) {
		log_err("metrics: timer or epoll: %s", strerror(errno));
		goto fail;
	}
	return m;
fail:
	metrics_close(m);
	return NULL;
}

/**
 * metrics_close() - close every connection, the listener and the timer, and free the server.
 * @m: the server, or NULL
 */
void metrics_close(struct metrics_server *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++)
		client_close(m, i);
	if (m->listen_fd >= 0) {
		event_loop_del(m->epfd, m->listen_fd);
		close(m->listen_fd);
	}
	if (m->timer_fd >= 0) {
		event_loop_del(m->epfd, m->timer_fd);
		close(m->timer_fd);
	}
	free(m);
}
