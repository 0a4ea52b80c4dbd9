/* SPDX-License-Identifier: MIT */
/* port.h - live ports' API: one vnetd port (socket, device, backend, timers) and the port table. */
#ifndef VNETD_PORT_H
#define VNETD_PORT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "dev/dev.h"
#include "loop/loop.h"
#include "vhost/vhost.h"

struct port; /* opaque; defined in port_internal.h, which only the files of src/port/ include */

/* port_name() - "p0", "p1", ... by index. */
const char *port_name(const struct port *p);
/* port_index() - position in the daemon's port table. */
unsigned port_index(const struct port *p);
/* port_config() - the configuration the port was created with. */
const struct port_config *port_config(const struct port *p);
/* port_dev() - the port's device model (always present). */
struct vnet_dev *port_dev(struct port *p);
/* port_connected() - whether a frontend is connected now. */
bool port_connected(const struct port *p);
/* port_worker() - the worker (event-loop thread) that owns the port. */
unsigned port_worker(const struct port *p);

/* port_connections() - frontends accepted so far. */
uint64_t port_connections(const struct port *p);
/* port_dirty_logging() - whether the frontend has vnetd log its writes now (live migration). */
bool port_dirty_logging(const struct port *p);
/* port_dirty_log_dropped() - pages written outside the frontend's dirty log (log too small). */
uint64_t port_dirty_log_dropped(const struct port *p);
/* port_rarps() - SEND_RARP announcements sent for the current frontend. */
uint64_t port_rarps(const struct port *p);

struct switch_port_counters;
/*
 * port_switch_frames() - a switch port's frame counters, its lanes' included: out[0] forwarded,
 * [1] flooded, [2] dropped, [3] crossed to another worker. On its workers' threads or with them
 * parked; false (out untouched) for a tap port.
 */
bool port_switch_frames(const struct port *p, uint64_t out[4]);

/* port_switch_counters() - a switch port's counters (any thread); false for a tap port. */
bool port_switch_counters(const struct port *p, struct switch_port_counters *out);

struct tap_queue_stats;
/*
 * port_tap_queues() - a tap port's queue fds (queues=N > 1: N, IFF_MULTI_QUEUE); 1 for a
 * single-queue tap, 0 for other backends.
 */
unsigned port_tap_queues(const struct port *p);
/* port_tap_queue_stats() - tap queue i's counters (any thread); false: no such tap queue. */
bool port_tap_queue_stats(const struct port *p, unsigned i, struct tap_queue_stats *out);

/* Creating, running and destroying ports (the daemon's calls). */
struct vnet_switch;

/*
 * port_create() - set up a port (backend, listener, timers) of worker `worker` in its epoll
 * set epfd; queues that yield go on rq, and the port goes on flushq when it has received
 * packets to publish. sw: a switch port's switch (sw[0]), or a trunk tap port's VLAN switches
 * (cfg->n_trunk, in cfg->trunk's order). NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, unsigned worker, int epfd,
			 struct run_queue *rq, struct run_queue *flushq,
			 struct vnet_switch *const *sw);

/* port_destroy() - disconnect, close every fd, free. NULL is fine. */
void port_destroy(struct port *p);

/* port_handle_event() - dispatch one epoll event that belongs to this port. */
void port_handle_event(struct port *p, struct ev_ref ref, uint32_t events);

/* port_flush_rx() - publish received packets (the port, or its lane `lane` (1..), asked for it
 * on a flush list: the EV_PORT_FLUSH entry's queue field). */
void port_flush_rx(struct port *p, unsigned lane);

/* port_check_fault() - drop the frontend if its memory faulted or it kept a write waiting. */
void port_check_fault(struct port *p);


/* Lanes, the state directory, the socket owner, a trunk's drops (port_lanes.c, port_persist.c,
 * port_sock.c, port_state.c, port_trunk.c: the rest of those files is private to src/port/). */
/* port_lanes_sync() - copy the device's state into each lane's view (with the lanes parked). */
void port_lanes_sync(struct port *p);

/* port_queue_worker() - the worker that runs queue qidx of p (its home's for its own). */
unsigned port_queue_worker(const struct port *p, unsigned qidx);

/* port_set_state_dir() - the --state-dir directory (an fd) for every port created after. */
void port_set_state_dir(int dirfd);

/*
 * port_state_sync() - write the port's state file now if its state changed since the last
 * write (called after control requests, and by the state timer, at a disconnect and at port
 * removal; never on the data path). A guest's control-queue kicks only arm the timer.
 */
void port_state_sync(struct port *p);

/*
 * port_set_socket_owner() - group (-1: vnetd's own) and mode of the socket= listeners made after
 * (--socket-group, --socket-mode), unless a port has group= / mode=. Start-up, main thread
 * (the daemon, through port_internal.h).
 */
void port_set_socket_owner(long gid, unsigned mode);

/*
 * port_state_dir_check() - refuse a state directory (dirfd) that group or others can write or
 * that neither root nor `uid` (vnetd's user) owns; 0, or -1 with one line in err.
 */
int port_state_dir_check(int dirfd, unsigned uid, char *err, size_t err_len);

/* port_trunk_dropped() - tagged frames the trunk dropped (any thread). */
uint64_t port_trunk_dropped(const struct port *p);

/* Never through a symlink, never waiting on a FIFO (a regular file only: fstat); the temporary
 * file is always a new one (whatever is at its name is unlinked first, never written into). */
#define PORT_STATE_READ_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

#define PORT_STATE_WRITE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)

/* The directory itself, opened once at start-up: a dirfd that fsync() accepts. */
#define PORT_STATE_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)

/* The port table (port_table.c, port_segment.c, port_reload.c). */
#include "port/port_table.h"

#endif
