/* SPDX-License-Identifier: MIT */
/* control_client.c - the control socket's connections: listener, accept, line buffers, replies. */
#include "control/control_client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/control.h"
#include "lib/log.h"

/* One vnetctl connection: request lines in, reply lines out. */
struct client {
	int fd;
	bool eof;      /* the peer closed its side: close once the output is sent */
	size_t in_len; /* bytes in `in` not yet executed (no newline among them) */
	char *out;     /* unsent reply bytes out[out_off .. out_len) */
	size_t out_off, out_len, out_cap;
	char in[CONTROL_MAX_LINE + 2]; /* a full line, its newline and a NUL */
};

struct control_clients {
	int epfd, listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* removed at the end */
	struct client *clients[CONTROL_MAX_CLIENTS];
};

/* ---- Listening socket ---------------------------------------------------------------------- */

/* stale_socket_check() - 0 if path is free or a dead socket (removed), -1 otherwise (logged). */
static int stale_socket_check(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, alive;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		log_err("control: %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("control: %s exists and is not a socket; not removing it", path);
		return -1;
	}
	/* Non-blocking: a listener that never accepts (its backlog full) must not hold start-up;
	 * EAGAIN says someone listens there as surely as a connection does. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("control: socket: %s", strerror(errno));
		return -1;
	}
	alive = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0 || errno == EAGAIN ||
		errno == EINPROGRESS;
	close(fd);
	if (alive) {
		log_err("control: %s is in use by a running process", path);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		log_err("control: cannot remove stale %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* listen_at() - listening socket at path, mode 0600, non-blocking, close-on-exec; fd or -1. */
static int listen_at(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	mode_t old_umask;
	int fd, ret;

	if (path[0] == '\0' || strlen(path) >= sizeof(addr.sun_path)) {
		log_err("control: socket path '%s' is empty or too long", path);
		return -1;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if (stale_socket_check(path, &addr) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("control: socket: %s", strerror(errno));
		return -1;
	}
	/* The node is 0600 from its creation: the socket's own mode (fchmod before bind) under a
	 * umask that keeps it. Never chmod() by path afterwards: a symlink swapped in there would
	 * be followed. */
	if (fchmod(fd, 0600) < 0)
		log_warn("control: fchmod of the socket: %s", strerror(errno));
	old_umask = umask(0177);
	ret = bind(fd, (const struct sockaddr *)&addr, sizeof(addr));
	umask(old_umask);
	if (ret < 0) {
		log_err("control: bind %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (listen(fd, 16) < 0) {
		log_err("control: %s: %s", addr.sun_path, strerror(errno));
		unlink(path);
		close(fd);
		return -1;
	}
	return fd;
}

/* unlink_socket() - remove path if a socket is still there: whatever else is there is not ours. */
static void unlink_socket(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
}

/* ---- Output -------------------------------------------------------------------------------- */

/* client_writable() - send buffered replies; 0 keep, -1 close the client. */
static int client_writable(struct client *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0) {
			log_debug("control: client send: %s", strerror(errno));
			return -1;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	if (c->out_cap > 256 * 1024) { /* a big reply went out: do not keep its buffer */
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return c->eof ? -1 : 0;
}

/*
 * queue_output() - append text and a newline, then send what the socket takes. A client that
 * lets more than CONTROL_MAX_OUTBUF wait unread is dropped.
 */
static int queue_output(struct client *c, const char *text)
{
	size_t len = strlen(text), need = c->out_len + len + 1, cap;
	char *grown;

	if (need > CONTROL_MAX_OUTBUF) {
		log_warn("control: client does not read its replies; dropping it");
		return -1;
	}
	if (need > c->out_cap) {
		cap = c->out_cap * 2 > need ? c->out_cap * 2 : need;
		grown = realloc(c->out, cap);
		if (!grown)
			return -1;
		c->out = grown;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, text, len);
	c->out[c->out_len + len] = '\n';
	c->out_len = need;
	return client_writable(c) < 0 && !c->eof ? -1 : 0;
}

/* ---- Input --------------------------------------------------------------------------------- */

/* execute_line() - run one request line in place (NUL-terminated) and queue its reply. */
static int execute_line(struct client *c, char *line, size_t len, struct port *const *ports,
			unsigned nports)
{
	char *reply;
	int ret;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (strspn(line, " \t") == len)
		return 0; /* blank line */
	reply = control_execute(ports, nports, line);
	if (!reply)
		return -1;
	ret = queue_output(c, reply);
	free(reply);
	return ret;
}

/* process_lines() - execute every complete line in `in`; keep the partial rest. */
static int process_lines(struct client *c, struct port *const *ports, unsigned nports)
{
	char *start = c->in, *nl;
	size_t left = c->in_len;

	while ((nl = memchr(start, '\n', left))) {
		*nl = '\0';
		if (execute_line(c, start, (size_t)(nl - start), ports, nports) < 0)
			return -1;
		left -= (size_t)(nl - start) + 1;
		start = nl + 1;
	}
	memmove(c->in, start, left);
	c->in_len = left;
	if (left > CONTROL_MAX_LINE) {
		queue_output(c, "{\"ok\":false,\"error\":\"request line longer than 65536 "
				"bytes\"}");
		return -1;
	}
	return 0;
}

/*
 * client_readable() - read what is available, execute every complete request line and send
 * the replies; while replies wait for the socket to drain, nothing more is read. 0 keep, -1
 * close the client (EOF with nothing left to send, I/O error, line over CONTROL_MAX_LINE, or
 * too much unsent output).
 */
static int client_readable(struct client *c, struct port *const *ports, unsigned nports)
{
	ssize_t n;

	while (!c->eof && c->out_off == c->out_len) {
		n = read(c->fd, c->in + c->in_len, CONTROL_MAX_LINE + 1 - c->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			log_debug("control: client read: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			/* A last request without a newline still counts. */
			c->eof = true;
			c->in[c->in_len] = '\0';
			if (execute_line(c, c->in, c->in_len, ports, nports) < 0)
				return -1;
			c->in_len = 0;
			break;
		}
		c->in_len += (size_t)n;
		if (process_lines(c, ports, nports) < 0)
			return -1;
	}
	return client_writable(c);
}

/* ---- Client slots -------------------------------------------------------------------------- */

/* client_close() - close the client in slot (if any) and free the slot. */
static void client_close(struct control_clients *cc, unsigned slot)
{
	struct client *c = cc->clients[slot];

	if (!c)
		return;
	event_loop_del(cc->epfd, c->fd);
	close(c->fd);
	free(c->out);
	free(c);
	cc->clients[slot] = NULL;
}

/*
 * accept_client() - one pending connection into a free slot; refused when all are taken.
 * Returns false when there is nothing (more) to accept: the listener is edge-triggered, so
 * accept_clients() takes connections until then. Out of fds (EMFILE, ENFILE) the rest wait for
 * the next connection: level-triggered they would wake the loop again at once, for ever.
 */
static bool accept_client(struct control_clients *cc)
{
	int fd = accept4(cc->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct client *c;
	unsigned slot;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			log_guest("control: cannot accept a client: %s (retried at the next "
				  "connection)", strerror(errno));
		return false;
	}
	for (slot = 0; slot < CONTROL_MAX_CLIENTS && cc->clients[slot]; slot++)
		;
	if (slot == CONTROL_MAX_CLIENTS) {
		log_warn("control: too many clients");
		close(fd);
		return true;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return true;
	}
	c->fd = fd;
	c->eof = false;
	c->in_len = 0;
	c->out = NULL;
	c->out_off = c->out_len = c->out_cap = 0;
	cc->clients[slot] = c;
	struct ev_ref ref = {.kind = EV_CONTROL_CLIENT, .queue = (uint8_t)slot, .fd = fd};
	if (event_loop_add(cc->epfd, fd, EPOLLIN, ref) < 0)
		client_close(cc, slot);
	return true;
}

/*
 * client_event() - a client's socket is ready. Afterwards it is watched for EPOLLIN normally,
 * EPOLLOUT alone while replies wait for the socket to drain (no new requests are read then).
 */
static void client_event(struct control_clients *cc, struct ev_ref ref, uint32_t events,
			 struct port *const *ports, unsigned nports)
{
	struct client *c = ref.queue < CONTROL_MAX_CLIENTS ? cc->clients[ref.queue] : NULL;
	int r = 0;

	if (!c || c->fd != ref.fd)
		return;
	if (events & EPOLLIN)
		r = client_readable(c, ports, nports);
	if (r == 0 && (events & EPOLLOUT))
		r = client_writable(c);
	if (r == 0 && (events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
		r = -1;
	if (r < 0) {
		client_close(cc, ref.queue);
		return;
	}
	event_loop_mod(cc->epfd, ref.fd, c->out_off < c->out_len ? EPOLLOUT : EPOLLIN, ref);
}

/* ---- The unit ------------------------------------------------------------------------------ */

/**
 * control_client_open() - open the control socket.
 * @path: --control (a stale socket there is removed; anything else there is an error).
 * @epfd: the epoll set of the thread that serves the socket (worker 0).
 *
 * The socket is created 0600, non-blocking and close-on-exec, and its listener registered as
 * EV_CONTROL_LISTEN. Call before sandbox_enter().
 *
 * Return: the handle, or NULL (logged; nothing left behind).
 */
struct control_clients *control_client_open(const char *path, int epfd)
{
	struct control_clients *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return NULL;
	cc->epfd = epfd;
	cc->listen_fd = listen_at(path);
	if (cc->listen_fd < 0) {
		free(cc);
		return NULL;
	}
	memcpy(cc->path, path, strlen(path) + 1); /* listen_at() checked its length */
	if (event_loop_add(epfd, cc->listen_fd, EPOLLIN | EPOLLET,
			   (struct ev_ref){.kind = EV_CONTROL_LISTEN, .fd = cc->listen_fd}) < 0) {
		control_client_close(cc);
		return NULL;
	}
	return cc;
}

/**
 * control_client_event() - handle an EV_CONTROL_LISTEN or EV_CONTROL_CLIENT event.
 * @cc: the handle.
 * @ref: the event's reference (a client's: its slot in ref.queue, its fd in ref.fd).
 * @events: the epoll events.
 * @ports: the live ports the requests may name, @nports of them.
 * @nports: how many.
 *
 * Accepts the pending connections, or reads a client's request lines, runs each (control_execute())
 * and sends the replies. A client is closed at EOF once its replies are out, on an I/O error,
 * on a line over CONTROL_MAX_LINE, or with more than CONTROL_MAX_OUTBUF unsent. Never blocks.
 *
 * Thread: the one that owns @cc's epoll set.
 */
void control_client_event(struct control_clients *cc, struct ev_ref ref, uint32_t events,
			  struct port *const *ports, unsigned nports)
{
	if (ref.kind == EV_CONTROL_LISTEN)
		while (accept_client(cc))
			;
	else if (ref.kind == EV_CONTROL_CLIENT)
		client_event(cc, ref, events, ports, nports);
}

/**
 * control_client_close() - close every client and the listener, then remove the socket.
 * @cc: the handle; NULL is ignored.
 *
 * Only a socket is removed from the path: whatever else may be there by now is not ours.
 */
void control_client_close(struct control_clients *cc)
{
	if (!cc)
		return;
	for (unsigned i = 0; i < CONTROL_MAX_CLIENTS; i++)
		client_close(cc, i);
	close(cc->listen_fd);
	unlink_socket(cc->path);
	free(cc);
}
