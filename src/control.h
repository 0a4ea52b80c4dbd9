/* control.h - daemon side of the control socket: one JSON request per line, one reply per line. */
#ifndef VNETD_CONTROL_H
#define VNETD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port.h"

#define CONTROL_MAX_LINE (64 * 1024)       /* longest request line */
#define CONTROL_MAX_OUTBUF (8 * 1024 * 1024) /* unsent replies kept per client before dropping it */

/*
 * control_listen() - listening unix stream socket at path (a stale socket there is removed),
 * mode 0600, non-blocking and close-on-exec. Returns the fd, or -1 (logged).
 */
int control_listen(const char *path);

/* control_unlink() - remove the control socket at path at the end, if a socket is still there. */
void control_unlink(const char *path);

struct control_client; /* opaque: buffered connection of one vnetctl */

/* control_client_new() - own an accepted fd (made non-blocking); NULL (fd untouched) if no memory. */
struct control_client *control_client_new(int fd);

/* control_client_free() - close the fd and free the client; NULL is ignored. */
void control_client_free(struct control_client *c);

/* control_client_fd() - the client's socket, for epoll. */
int control_client_fd(const struct control_client *c);

/*
 * control_client_readable() - read what is available, execute every complete request line and
 * send the replies. Returns 0 to keep the client, -1 when it must be freed (EOF with nothing
 * left to send, I/O error, line over CONTROL_MAX_LINE, or too much unsent output).
 */
int control_client_readable(struct control_client *c, struct port *const *ports, unsigned nports);

/*
 * control_client_events() - epoll events to watch after any call: EPOLLIN normally; EPOLLOUT
 * alone while replies wait for the socket to drain (no new requests are read meanwhile).
 */
uint32_t control_client_events(const struct control_client *c);

/* control_client_writable() - send buffered replies; 0 keep, -1 free the client. */
int control_client_writable(struct control_client *c);

/*
 * control_execute() - run one request (a JSON object, no newline) and return the reply as
 * malloc'd compact JSON without a trailing newline; free() it. Never fails on bad input
 * (that gets an {"ok":false,...} reply); NULL only when out of memory.
 */
char *control_execute(struct port *const *ports, unsigned nports, const char *line);

/* Run-time port changes the daemon makes for "port-add" / "port-del" requests. */
struct control_port_ops {
	/* Add a port from SPEC (as --port takes it); its name into name. 0, or -1 (err). */
	int (*add)(void *ctx, const char *spec, char *name, size_t name_len, char *err,
		   size_t err_len);
	/*
	 * Remove port p (it stays valid until the end of the event-loop round, so the ports
	 * array a request runs with never dangles). 0, or -1 (err).
	 */
	int (*del)(void *ctx, struct port *p, char *err, size_t err_len);
};

/* control_set_port_ops() - enable port-add/port-del; without it they fail. */
void control_set_port_ops(const struct control_port_ops *ops, void *ctx);

/* What the daemon does around a request that must not run beside the other workers. */
struct control_sync_ops {
	void (*enter)(void *ctx); /* park the other workers */
	void (*leave)(void *ctx); /* e.g. keep changed state for a restart, then let them go */
};

/*
 * control_set_sync_ops() - wrap every request except "stats" (which reads lock-free through
 * stats.c) in enter/leave. Without it requests run as they come (one thread).
 */
void control_set_sync_ops(const struct control_sync_ops *ops, void *ctx);

#endif
