/* SPDX-License-Identifier: MIT */
/* vhost_user_ring.c - a connection's rings: SET_VRING_* requests, queue fds, starting and stopping. */
#include "vhost/vhost_user_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/peer_io.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_migrate.h"
#include "vhost/vhost_user_stall.h"
#include "lib/virtio_net_defs.h"

/* ---- queues ---- */

/* ring_info() - a copy of ring qidx's settings and state; false out of range (nothing logged). */
static bool ring_info(const struct vu_conn *c, unsigned qidx, struct vnet_ring_info *ri)
{
	return qidx < VNET_MAX_QUEUES && vnet_dev_ring_info(c->dev, qidx, ri);
}

/* ring_packed() - whether the negotiated features give the rings the packed layout. */
static bool ring_packed(const struct vu_conn *c)
{
	return (vnet_dev_features(c->dev) >> VIRTIO_F_RING_PACKED) & 1;
}

/*
 * conn_queue() - the ring a ring message names, with a copy of its state in *ri (NULL: not
 * wanted), or false (logged) if the device lacks it.
 */
static bool conn_queue(struct vu_conn *c, const struct vu_msg *m, unsigned *qidx,
		       struct vnet_ring_info *ri)
{
	unsigned idx = vu_msg_vring_index(m);
	struct vnet_ring_info spare;

	if (!ring_info(c, idx, ri ? ri : &spare)) {
		log_guest("vhost-user: %s: queue %u out of range (device has %u)",
			  vu_request_name(m->request), idx, vnet_dev_num_queues(c->dev));
		return false;
	}
	*qidx = idx;
	return true;
}

/* replace_kick() - give queue qidx a new kick fd (-1: none); the owner hears before close. */
static void replace_kick(struct vu_conn *c, unsigned qidx, int fd)
{
	int old = c->q[qidx].kick;

	if (old < 0 && fd < 0)
		return;
	if (c->ops && c->ops->kick_changed)
		c->ops->kick_changed(c->ctx, qidx, old, fd);
	c->q[qidx].kick = fd;
	if (old >= 0)
		close(old);
}

/**
 * vu_ring_drop_fds() - close every queue's kick, call and err fd.
 * @c: the connection (its owner hears of each kick fd before it is closed)
 *
 * Return: nothing.
 */
void vu_ring_drop_fds(struct vu_conn *c)
{
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		replace_kick(c, i, -1);
		vu_close_fd(&c->q[i].call);
		vu_close_fd(&c->q[i].err);
	}
}

/*
 * Features (and with them the ring's layout), memory, size and all three ring addresses are
 * known. The layout is fixed from here until the ring stops (vhost_user_state.c).
 */
static bool ring_ready(const struct vu_conn *c, const struct vnet_ring_info *ri)
{
	return c->features_set && c->mem.nregions > 0 && ri->num != 0 && ri->desc_addr != 0 &&
	       ri->avail_addr != 0 && ri->used_addr != 0;
}

/*
 * try_start() - start queue qidx if it is stopped and fully configured. A failure leaves it
 * stopped (logged) and the connection up. After a start the queue is processed once, because a
 * kick that arrived while it was stopped was consumed and ignored.
 */
static void try_start(struct vu_conn *c, unsigned qidx)
{
	struct vnet_ring_info ri;

	if (!ring_info(c, qidx, &ri) || ri.started || !ring_ready(c, &ri))
		return;
	if (c->ops && c->ops->queue_starting)
		c->ops->queue_starting(c->ctx, qidx);
	if (vnet_dev_queue_start(c->dev, qidx, &c->mem) < 0) {
		log_guest("vhost-user: queue %u: rings not usable, queue stays stopped", qidx);
		vu_ring_signal_error(c, qidx);
		return;
	}
	vnet_dev_kick(c->dev, qidx);
}

/* stop_if_started() - stop queue qidx for a ring change; returns whether it was running. */
static bool stop_if_started(struct vu_conn *c, unsigned qidx)
{
	struct vnet_ring_info ri;

	if (!ring_info(c, qidx, &ri) || !ri.started)
		return false;
	vnet_dev_queue_stop(c->dev, qidx);
	return true;
}

/*
 * Rings start disabled (until SET_VRING_ENABLE 1) exactly when the frontend acked
 * VHOST_USER_F_PROTOCOL_FEATURES in SET_FEATURES (vhost-user spec, "Ring states"); otherwise a
 * ring is enabled by its SET_VRING_KICK, whatever SET_PROTOCOL_FEATURES said.
 */
static bool protocol_features_negotiated(const struct vu_conn *c)
{
	return c->protocol_bit_accepted;
}

/**
 * vu_ring_started() - whether a ring is started (running, or broken and not yet stopped).
 * @c: the connection
 * @qidx: the ring
 *
 * Return: true if started; false if stopped or out of range.
 */
bool vu_ring_started(const struct vu_conn *c, unsigned qidx)
{
	struct vnet_ring_info ri;

	return ring_info(c, qidx, &ri) && ri.started;
}

/**
 * vu_ring_any_started() - whether any ring of the device is started.
 * @c: the connection
 *
 * Return: true if one is.
 */
bool vu_ring_any_started(const struct vu_conn *c)
{
	for (unsigned i = 0; i < vnet_dev_num_queues(c->dev) && i < VNET_MAX_QUEUES; i++)
		if (vu_ring_started(c, i))
			return true;
	return false;
}

/**
 * vu_ring_addr() - a ring's addresses as SET_VRING_ADDR set them.
 * @c: the connection
 * @qidx: the ring
 * @a: filled (index, desc, avail, used; flags and log as the ring logs now)
 *
 * Return: false if the ring is out of range.
 */
bool vu_ring_addr(const struct vu_conn *c, unsigned qidx, struct vu_vring_addr *a)
{
	struct vnet_ring_info ri;

	if (!ring_info(c, qidx, &ri))
		return false;
	*a = (struct vu_vring_addr){.index = qidx, .desc = ri.desc_addr, .avail = ri.avail_addr,
				    .used = ri.used_addr, .flags = ri.log_used ? VU_VRING_F_LOG : 0,
				    .log = ri.log_used_gpa};
	return true;
}

/**
 * vu_ring_break() - a ring message was refused and the frontend cannot hear it (no REPLY_ACK):
 * break the ring, so that frontend and device never run it on different settings.
 * @c: the connection
 * @qidx: the ring (out of range: nothing)
 * @why: the refusal, for the log line
 *
 * Only started rings are refused such messages (vhost_user_state.c).
 *
 * Return: nothing; the ring is marked broken (NEEDS_RESET: it runs again only after a stop and
 * a new start) and its error fd signalled.
 */
void vu_ring_break(struct vu_conn *c, unsigned qidx, const char *why)
{
	struct vnet_ring_info ri;

	if (!ring_info(c, qidx, &ri))
		return;
	vnet_dev_ring_break(c->dev, qidx, why);
	vu_ring_signal_error(c, qidx);
}

/**
 * vu_ring_pause_all() - stop every running queue for a memory table swap.
 * @c: the connection
 * @was_started: per queue, set to whether it was running
 *
 * Return: nothing.
 */
void vu_ring_pause_all(struct vu_conn *c, bool was_started[VNET_MAX_QUEUES])
{
	unsigned n = vnet_dev_num_queues(c->dev);

	if (n > VNET_MAX_QUEUES)
		n = VNET_MAX_QUEUES;
	for (unsigned i = 0; i < n; i++)
		was_started[i] = stop_if_started(c, i);
}

/**
 * vu_ring_resume_all() - after a memory table swap, restart what ran or has a kick fd.
 * @c: the connection (c->mem is the new table: the rings are translated again)
 * @was_started: what vu_ring_pause_all() recorded
 *
 * A ring that was broken (a guest error, or a refused ring message the frontend believes taken)
 * is not restarted: it runs again only when the frontend sets it up again (its SET_VRING_KICK).
 *
 * Return: nothing; a queue whose rings do not translate stays stopped (logged).
 */
void vu_ring_resume_all(struct vu_conn *c, const bool was_started[VNET_MAX_QUEUES])
{
	unsigned n = vnet_dev_num_queues(c->dev);

	if (n > VNET_MAX_QUEUES)
		n = VNET_MAX_QUEUES;
	for (unsigned i = 0; i < n; i++) {
		struct vnet_ring_info ri;

		/* A broken ring stays stopped: a restart would clear what broke it. */
		if (ring_info(c, i, &ri) && !ri.broken && (was_started[i] || c->q[i].kick >= 0))
			try_start(c, i);
	}
}

/* ---- ring requests ---- */

/**
 * vu_ring_set_num() - SET_VRING_NUM: the ring's size (1..VNET_RING_MAX_SIZE; a power of two unless
 * VIRTIO_F_RING_PACKED is negotiated: packed rings may have any size).
 * @c: the connection
 * @m: the message
 *
 * The ring is stopped (vhost_user_state.c refuses this for a started one). (Features changed
 * to split later with a size that is not a power of two: vq_start() refuses the ring.)
 *
 * Return: VU_OK, or VU_FAIL (logged) for a bad queue index or size.
 */
enum vu_result vu_ring_set_num(struct vu_conn *c, const struct vu_msg *m)
{
	uint32_t num = m->p.state.num;
	bool packed = ring_packed(c);
	unsigned qidx;

	if (!conn_queue(c, m, &qidx, NULL))
		return VU_FAIL;
	if (num == 0 || num > VNET_RING_MAX_SIZE || (!packed && (num & (num - 1)) != 0)) {
		log_guest("vhost-user: queue %u: bad size %u (%s1..%u)", qidx, num,
			  packed ? "" : "power of two, ", VNET_RING_MAX_SIZE);
		return VU_FAIL;
	}
	return vnet_dev_ring_set_num(c->dev, qidx, (uint16_t)num) < 0 ? VU_FAIL : VU_OK;
}

/**
 * vu_ring_set_addr() - SET_VRING_ADDR: the three ring addresses (user addresses) and logging.
 * @c: the connection
 * @m: the message
 *
 * The queue starts once it is fully configured and has a kick fd. A running queue may be sent
 * only its own ring addresses again (vhost_user_state.c), with logging turned on or off (QEMU
 * does so around a migration): it is stopped for the change and restarted. A broken one is
 * stopped and stays so: a restart would clear what broke it (a guest error, or a refused ring
 * message the frontend believes taken) without the frontend setting the ring up again.
 *
 * Return: VU_OK, or VU_FAIL (logged) for a bad queue index.
 */
enum vu_result vu_ring_set_addr(struct vu_conn *c, const struct vu_msg *m)
{
	const struct vu_vring_addr *a = &m->p.addr;
	struct vnet_ring_info ri;
	unsigned qidx;
	bool was, broken;

	if (!conn_queue(c, m, &qidx, &ri))
		return VU_FAIL;
	broken = ri.started && ri.broken;
	was = stop_if_started(c, qidx);
	if (vnet_dev_ring_set_addr(c->dev, qidx, a->desc, a->avail, a->used,
				   (a->flags & VU_VRING_F_LOG) != 0, a->log) < 0)
		return VU_FAIL;
	if (!broken && (was || c->q[qidx].kick >= 0))
		try_start(c, qidx);
	return VU_OK;
}

/**
 * vu_ring_set_base() - SET_VRING_BASE: where the device resumes in the avail and used rings.
 * @c: the connection
 * @m: the message
 *
 * The ring is stopped (vhost_user_state.c refuses this for a started one).
 *
 * Return: VU_OK, or VU_FAIL (logged) for a bad queue index or a split-ring base over 16 bits.
 */
enum vu_result vu_ring_set_base(struct vu_conn *c, const struct vu_msg *m)
{
	uint32_t base = m->p.state.num;
	unsigned qidx;

	if (!conn_queue(c, m, &qidx, NULL))
		return VU_FAIL;
	/* The layout is the negotiated one (QEMU sets features before the rings). */
	if (!ring_packed(c) && base > UINT16_MAX) {
		log_guest("vhost-user: queue %u: base %u is not a split-ring index", qidx, base);
		return VU_FAIL;
	}
	/* As before the device calls: a packed base the ring cannot take is left unset, not failed. */
	(void)vnet_dev_ring_set_base(c->dev, qidx, ring_packed(c), base);
	if (c->ops && c->ops->ring_base)
		c->ops->ring_base(c->ctx, qidx, base);
	return VU_OK;
}

/**
 * vu_ring_get_base() - GET_VRING_BASE: stop the ring, drop its kick fd, reply its next index.
 * @c: the connection
 * @m: the message
 *
 * A bad index still gets an answer (0).
 *
 * Return: VU_OK, VU_FAIL (bad index, answered) or VU_DISCONNECT (the reply could not be sent).
 */
enum vu_result vu_ring_get_base(struct vu_conn *c, const struct vu_msg *m)
{
	struct vu_vring_state st = {.index = m->p.state.index, .num = 0};
	unsigned qidx;
	bool have = conn_queue(c, m, &qidx, NULL);

	if (have) {
		st.num = vnet_dev_queue_stop(c->dev, qidx);
		replace_kick(c, qidx, -1);
	}
	return vu_io_reply(c->sock, m->request, &st, sizeof(st)) < 0 ? VU_DISCONNECT
							       : (have ? VU_OK : VU_FAIL);
}

/**
 * vu_ring_set_fd() - SET_VRING_KICK / CALL / ERR: the message's fd replaces the queue's old one.
 * @c: the connection
 * @rx: the message; its fd is taken (none with VU_VRING_NOFD)
 *
 * Without negotiated protocol features a kick fd also enables the ring; a new kick fd starts
 * a fully configured queue.
 *
 * Return: VU_OK, or VU_FAIL (logged) for a bad queue index (the fd stays the caller's).
 */
enum vu_result vu_ring_set_fd(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_msg *m = &rx->msg;
	bool nofd = (m->p.u64 & VU_VRING_NOFD) != 0;
	unsigned qidx;
	uint8_t kind;
	int fd;

	if (!conn_queue(c, m, &qidx, NULL))
		return VU_FAIL; /* the fd is closed by the caller */
	fd = nofd ? -1 : vu_take_fd(rx, 0);
	/*
	 * Every queue fd the frontend hands over is used without waiting: a call or error fd that
	 * is a full blocking pipe must not stop the daemon, nor a kick fd with nothing to read.
	 * The frontend shares the open file and can clear O_NONBLOCK again: every read and write
	 * goes through peer_io.h, which does not wait whatever the flag says.
	 */
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		log_guest("vhost-user: queue %u: cannot make fd non-blocking: %s", qidx,
			  strerror(errno));
	kind = (uint8_t)vu_peer_fd_kind(c, fd);

	switch (m->request) {
	case VU_SET_VRING_KICK:
		c->q[qidx].kick_kind = kind;
		replace_kick(c, qidx, fd);
		if (nofd)
			log_guest("vhost-user: queue %u: polling mode (no kick fd) not supported",
				  qidx);
		if (!protocol_features_negotiated(c))
			vnet_dev_queue_enable(c->dev, qidx, true);
		try_start(c, qidx);
		break;
	case VU_SET_VRING_CALL:
		vu_close_fd(&c->q[qidx].call);
		c->q[qidx].call = fd;
		c->q[qidx].call_kind = kind;
		break;
	default: /* VU_SET_VRING_ERR */
		vu_close_fd(&c->q[qidx].err);
		c->q[qidx].err = fd;
		c->q[qidx].err_kind = kind;
		break;
	}
	return VU_OK;
}

/**
 * vu_ring_enable() - SET_VRING_ENABLE: enable (1) or disable (0) a ring.
 * @c: the connection
 * @m: the message
 *
 * Return: VU_OK, or VU_FAIL (logged) for a bad queue index or value.
 */
enum vu_result vu_ring_enable(struct vu_conn *c, const struct vu_msg *m)
{
	unsigned qidx;

	if (!conn_queue(c, m, &qidx, NULL))
		return VU_FAIL;
	if (m->p.state.num > 1) {
		log_guest("vhost-user: queue %u: SET_VRING_ENABLE %u", qidx, m->p.state.num);
		return VU_FAIL;
	}
	vnet_dev_queue_enable(c->dev, qidx, m->p.state.num == 1);
	return VU_OK;
}

/* ---- queue fd events ---- */

/**
 * vu_ring_kick_failed() - queue qidx's kick fd reported HUP or ERR: drop it, break the queue.
 * @c: the connection
 * @qidx: the queue whose kick fd it is
 * @events: what epoll reported (EPOLLERR and/or EPOLLHUP)
 *
 * Return: nothing; the kick fd is closed (owner told first) and one line logged.
 */
void vu_ring_kick_failed(struct vu_conn *c, unsigned qidx, uint32_t events)
{
	const char *what = events & EPOLLERR ? "kick fd reported an error (EPOLLERR)"
					     : "kick fd hung up (EPOLLHUP)";

	if (qidx >= VNET_MAX_QUEUES || c->q[qidx].kick < 0)
		return;
	replace_kick(c, qidx, -1); /* out of epoll and closed: it cannot report again */
	/* One line: the break says it, or this if the queue was broken already. */
	if (!vnet_dev_ring_break(c->dev, qidx, what))
		log_guest("vhost-user: queue %u: %s; kick fd dropped", qidx, what);
}

/**
 * vu_ring_signal_error() - write u64 1 to queue qidx's error fd (SET_VRING_ERR), if it has one.
 * @c: the connection
 * @qidx: the queue that broke
 *
 * Return: nothing; a full or closed peer is ignored, other errors logged.
 */
void vu_ring_signal_error(struct vu_conn *c, unsigned qidx)
{
	const uint64_t one = 1;
	int fd;

	if (qidx >= VNET_MAX_QUEUES || (fd = c->q[qidx].err) < 0)
		return;
	if (atomic_load_explicit(&c->peer_stalled, memory_order_relaxed))
		return;
	if (peer_write(fd, c->q[qidx].err_kind, &one, sizeof(one)) < 0 && errno != EAGAIN &&
	    errno != EPIPE) {
		if (errno == ETIMEDOUT)
			vu_conn_stalled(c, qidx, "error");
		else
			log_guest("vhost-user: queue %u: error fd: %s", qidx, strerror(errno));
	}
}
