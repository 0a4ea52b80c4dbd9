/* SPDX-License-Identifier: MIT */
/* vhost_user.c - one vhost-user frontend connection: dispatch, device requests, lifecycle. */
#include "vhost/vhost.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/peer_io.h"
#include "vhost/vhost_user_io.h"
#include "vhost/vhost_user_mem.h"
#include "vhost/vhost_user_migrate.h"
#include "vhost/vhost_user_msg.h"
#include "vhost/vhost_user_ring.h"
#include "vhost/vhost_user_state.h"
#include "lib/virtio_net_defs.h"

/*
 * MQ, REPLY_ACK, BACKEND_REQ (UML needs it), CONFIG (MAC, link), RESET_DEVICE,
 * CONFIGURE_MEM_SLOTS (memory hotplug: regions one by one); for live migration LOG_SHMFD (dirty
 * log), RARP (announce) and DEVICE_STATE (vnetd's own state).
 */
#define VU_OFFERED_PROTOCOL_FEATURES                                                               \
	(BIT_ULL(VU_PROTOCOL_F_MQ) | BIT_ULL(VU_PROTOCOL_F_REPLY_ACK) |                            \
	 BIT_ULL(VU_PROTOCOL_F_BACKEND_REQ) | BIT_ULL(VU_PROTOCOL_F_CONFIG) |                      \
	 BIT_ULL(VU_PROTOCOL_F_RESET_DEVICE) | BIT_ULL(VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |        \
	 BIT_ULL(VU_PROTOCOL_F_LOG_SHMFD) | BIT_ULL(VU_PROTOCOL_F_RARP) |                          \
	 BIT_ULL(VU_PROTOCOL_F_DEVICE_STATE))

_Static_assert(VNET_MAX_QUEUES <= VU_MSG_MAX_VRINGS, "ring indexes must fit the wire format");

/* ---- memory table ---- */

/*
 * handle_set_mem_table() - map the new table completely before touching the old one
 * (vu_mem_map_table(): checked and admitted against the caps first). On any failure the old
 * table stays. On success running queues are stopped, the table swapped, the queues restarted
 * (their rings re-translated) and only then the old table unmapped.
 */
static enum vu_result handle_set_mem_table(struct vu_conn *c, struct vu_rx *rx)
{
	bool was_started[VNET_MAX_QUEUES] = {false};
	struct guest_mem nm, old; /* the struct is small: its arrays are on the heap */

	if (vu_mem_map_table(c, &rx->msg.p.mem, rx->fds, &nm) < 0)
		return VU_FAIL;

	vu_ring_pause_all(c, was_started);
	old = c->mem; /* the copies take the arrays over */
	c->mem = nm;
	vu_ring_resume_all(c, was_started);
	vu_mem_unmap_table(&old);
	log_info("vhost-user: memory table set, %u region(s)", c->mem.nregions);
	return VU_OK;
}

static bool mem_slots_negotiated(const struct vu_conn *c, const struct vu_msg *m)
{
	if (c->protocol_features & BIT_ULL(VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return true;
	log_guest("vhost-user: %s without CONFIGURE_MEM_SLOTS negotiated", vu_request_name(m->request));
	return false;
}

/*
 * handle_add_mem_reg() - one more region (vu_mem_add_region(): checked, admitted, mapped),
 * added in place: running queues go on (nothing they point at moves). A queue that waited for
 * its rings' memory (stopped, with a kick fd) is tried again.
 */
static enum vu_result handle_add_mem_reg(struct vu_conn *c, struct vu_rx *rx)
{
	const bool none_started[VNET_MAX_QUEUES] = {false};
	const struct vu_mem_region *r = &rx->msg.p.mem_reg.region;

	if (!mem_slots_negotiated(c, &rx->msg) || vu_mem_add_region(c, r, rx->fds[0]) < 0)
		return VU_FAIL;
	vu_ring_resume_all(c, none_started);
	log_info("vhost-user: memory region added at guest address %#" PRIx64 " (%" PRIu64
		 " bytes), %u region(s)", r->guest_phys_addr, r->memory_size, c->mem.nregions);
	return VU_OK;
}

/*
 * handle_rem_mem_reg() - unmap the region matching the message (guest address, size, user
 * address); an fd that came with it is closed unused (vu_conn_handle_readable()). QEMU never
 * removes memory a started ring lives in (its vhost_commit() aborts first), so this handles a
 * buggy or hostile frontend: every running queue is stopped (buffers it holds are given back),
 * the region unmapped, and the queues restarted with their rings translated again, exactly as
 * for SET_MEM_TABLE. A queue whose rings were in the region stays stopped (its error fd is
 * signalled); a chain into the region breaks its queue when popped. Nothing touches unmapped
 * memory, and vnetd's table stays the frontend's.
 */
static enum vu_result handle_rem_mem_reg(struct vu_conn *c, struct vu_rx *rx)
{
	bool was_started[VNET_MAX_QUEUES] = {false};
	const struct vu_mem_region *r = &rx->msg.p.mem_reg.region;
	int ret;

	if (!mem_slots_negotiated(c, &rx->msg))
		return VU_FAIL;
	if (!vu_mem_has_region(c, r))
		return vu_mem_remove_region(c, r) < 0 ? VU_FAIL : VU_OK; /* logs the miss */
	vu_ring_pause_all(c, was_started);
	ret = vu_mem_remove_region(c, r);
	vu_ring_resume_all(c, was_started);
	if (ret < 0)
		return VU_FAIL;
	/* With no memory left no start is tried (vu_ring_resume_all()): say so here. */
	for (unsigned i = 0; i < VNET_MAX_QUEUES && !c->mem.nregions; i++) {
		if (!was_started[i])
			continue;
		log_guest("vhost-user: queue %u: rings not usable (no guest memory left), queue "
			  "stays stopped", i);
		vu_ring_signal_error(c, i);
	}
	log_info("vhost-user: memory region removed at guest address %#" PRIx64 " (%" PRIu64
		 " bytes), %u region(s)", r->guest_phys_addr, r->memory_size, c->mem.nregions);
	return VU_OK;
}

/* Requests answered with their own reply message (never with a REPLY_ACK). */
static bool has_own_reply(uint32_t request)
{
	return request == VU_GET_FEATURES || request == VU_GET_PROTOCOL_FEATURES ||
	       request == VU_GET_VRING_BASE || request == VU_GET_QUEUE_NUM ||
	       request == VU_GET_CONFIG || request == VU_SET_LOG_BASE ||
	       request == VU_GET_MAX_MEM_SLOTS ||
	       request == VU_SET_DEVICE_STATE_FD || request == VU_CHECK_DEVICE_STATE;
}

/* acked() - whether @m gets a REPLY_ACK: asked for, negotiated, and not a request with a reply. */
static bool acked(const struct vu_conn *c, const struct vu_msg *m)
{
	return (m->flags & VU_FLAG_NEED_REPLY) &&
	       (c->protocol_features & BIT_ULL(VU_PROTOCOL_F_REPLY_ACK)) &&
	       !has_own_reply(m->request);
}

/* ---- device-level requests ---- */

/* conn_reset() - RESET_OWNER / RESET_DEVICE: device reset, rings' fds dropped, memory kept. */
static void conn_reset(struct vu_conn *c)
{
	vnet_dev_reset(c->dev);
	vu_ring_drop_fds(c);
	c->features_set = false;
	vu_mig_reset(c, false);
}

static enum vu_result handle_get_config(struct vu_conn *c, const struct vu_msg *m)
{
	struct vu_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.offset = m->p.config.offset;
	cfg.size = m->p.config.size;
	cfg.flags = m->p.config.flags;
	vnet_dev_config_read(c->dev, cfg.offset, cfg.region, cfg.size);
	if (vu_io_reply(c->sock, m->request, &cfg, VU_CONFIG_HDR_SIZE + cfg.size) < 0)
		return VU_DISCONNECT;
	return VU_OK;
}

/* What GET_PROTOCOL_FEATURES offers: all of the above, DEVICE_STATE as the owner says. */
static uint64_t offered_protocol_features(const struct vu_conn *c)
{
	bool state = !c->ops || !c->ops->device_state || c->ops->device_state(c->ctx);

	return VU_OFFERED_PROTOCOL_FEATURES &
	       ~(state ? 0 : BIT_ULL(VU_PROTOCOL_F_DEVICE_STATE));
}

static enum vu_result handle_set_protocol_features(struct vu_conn *c, const struct vu_msg *m)
{
	uint64_t want = m->p.u64, offered = offered_protocol_features(c);

	c->protocol_features = want & offered;
	if (want & ~offered) {
		log_guest("vhost-user: protocol features %#" PRIx64 " not offered (ignored)",
			  (uint64_t)(want & ~offered));
		return VU_FAIL;
	}
	return VU_OK;
}

/*
 * handle_set_features() - the driver's features. The state table (vhost_user_state.c) lets this
 * through while rings run only when nothing but VHOST_F_LOG_ALL changes (QEMU toggles it around
 * a migration): then only the dirty log is switched. Otherwise every ring is stopped, the device
 * takes the features (layout, header, offloads) and the rings that wait for them start.
 */
static enum vu_result handle_set_features(struct vu_conn *c, const struct vu_msg *m)
{
	const bool none_started[VNET_MAX_QUEUES] = {false};
	uint64_t f = m->p.u64 & ~(BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES) | BIT_ULL(VHOST_F_LOG_ALL));

	if (!vu_ring_any_started(c)) {
		if (vnet_dev_set_features(c->dev, f) < 0) {
			/* Unheard, the frontend would go on with features the device has not. */
			log_guest("vhost-user: SET_FEATURES %#" PRIx64 " refused%s", f,
				  acked(c, m) ? "" : "; no REPLY_ACK to say it: closing the connection");
			return acked(c, m) ? VU_FAIL : VU_DISCONNECT;
		}
		c->features_set = true;
		c->protocol_bit_accepted = m->p.u64 & BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES);
	}
	vu_mig_set_log_all(c, m->p.u64 & BIT_ULL(VHOST_F_LOG_ALL));
	vu_ring_resume_all(c, none_started);
	return VU_OK;
}

/* vu_dispatch() - act on one validated message. */
static enum vu_result vu_dispatch(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_msg *m = &rx->msg;

	switch (m->request) {
	case VU_GET_FEATURES:
		return vu_reply_u64(c->sock, m->request,
				 vnet_dev_offered_features(c->dev) |
					 BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES) |
					 BIT_ULL(VHOST_F_LOG_ALL));
	case VU_SET_FEATURES:
		return handle_set_features(c, m);
	case VU_GET_PROTOCOL_FEATURES:
		return vu_reply_u64(c->sock, m->request, offered_protocol_features(c));
	case VU_SET_PROTOCOL_FEATURES:
		return handle_set_protocol_features(c, m);
	case VU_SET_OWNER:
		c->owner_set = true;
		return VU_OK;
	case VU_RESET_OWNER:
	case VU_RESET_DEVICE:
		conn_reset(c);
		return VU_OK;
	case VU_SET_MEM_TABLE:
		return handle_set_mem_table(c, rx);
	case VU_GET_MAX_MEM_SLOTS:
		return vu_reply_u64(c->sock, m->request, vu_mem_max_slots(c));
	case VU_ADD_MEM_REG:
		return handle_add_mem_reg(c, rx);
	case VU_REM_MEM_REG:
		return handle_rem_mem_reg(c, rx);
	case VU_SET_VRING_NUM:
		return vu_ring_set_num(c, m);
	case VU_SET_VRING_ADDR:
		return vu_ring_set_addr(c, m);
	case VU_SET_VRING_BASE:
		return vu_ring_set_base(c, m);
	case VU_GET_VRING_BASE:
		return vu_ring_get_base(c, m);
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR:
		return vu_ring_set_fd(c, rx);
	case VU_SET_VRING_ENABLE:
		return vu_ring_enable(c, m);
	case VU_GET_QUEUE_NUM:
		return vu_reply_u64(c->sock, m->request, vnet_dev_num_queues(c->dev));
	case VU_SET_BACKEND_REQ_FD:
		/* Never written to (we send no backend requests); kept open until disconnect. */
		vu_close_fd(&c->backend_req_fd);
		c->backend_req_fd = vu_take_fd(rx, 0);
		return VU_OK;
	case VU_GET_CONFIG:
		return handle_get_config(c, m);
	case VU_SET_CONFIG:
		if (vnet_dev_config_write(c->dev, m->p.config.offset, m->p.config.region,
					  m->p.config.size) < 0) {
			log_guest("vhost-user: SET_CONFIG offset %u size %u refused",
				  m->p.config.offset, m->p.config.size);
			return VU_FAIL;
		}
		return VU_OK;
	case VU_SEND_RARP:
		return vu_mig_send_rarp(c, m);
	case VU_NET_SET_MTU:
		log_info("vhost-user: frontend MTU %" PRIu64 " noted (not enforced)", m->p.u64);
		return VU_OK;
	case VU_SET_LOG_BASE:
		return vu_mig_set_log_base(c, rx);
	case VU_SET_LOG_FD:
		return VU_OK; /* the log is polled by the frontend: no kick needed (fd closed) */
	case VU_SET_DEVICE_STATE_FD:
		return vu_mig_set_state_fd(c, rx);
	case VU_CHECK_DEVICE_STATE:
		return vu_mig_check_state(c, m);
	case VU_SET_VRING_ENDIAN:
		log_guest("vhost-user: SET_VRING_ENDIAN: cross-endian rings not offered");
		return VU_FAIL;
	default:
		log_guest("vhost-user: unsupported request %u (%s)", m->request,
			  vu_request_name(m->request));
		return VU_FAIL;
	}
}

/*
 * vu_refuse() - a message the state does not allow: logged with the state, and answered so that
 * frontend and device never go on with different ideas of the device. An ERR ack (REPLY_ACK) or
 * a request's own failure reply says it, and the connection stays for a retry or a reset.
 * Without either, a refused ring message breaks its ring (NEEDS_RESET, error fd) and a refused
 * device message closes the connection.
 */
static enum vu_result vu_refuse(struct vu_conn *c, const struct vu_msg *m,
				const struct vu_refusal *r)
{
	char state[96];

	log_guest("vhost-user: %s refused: %s (state: %s)", vu_request_name(m->request), r->why,
		  vu_state_name(c, state, sizeof(state)));
	if (has_own_reply(m->request)) /* SET_DEVICE_STATE_FD: the failure form of its reply */
		return vu_reply_u64(c->sock, m->request, 1) == VU_OK ? VU_FAIL : VU_DISCONNECT;
	if (acked(c, m))
		return VU_FAIL;
	if (r->scope == VU_REFUSE_RING) {
		vu_ring_break(c, r->qidx, "a message refused while the ring runs");
		return VU_FAIL;
	}
	log_guest("vhost-user: no REPLY_ACK to refuse %s with: closing the connection",
		  vu_request_name(m->request));
	return VU_DISCONNECT;
}

/* ---- public interface ---- */

/**
 * vu_conn_init() - start a connection on an accepted socket.
 * @c: the connection's state, overwritten
 * @sock: the accepted socket, owned by @c from now on (made non-blocking)
 * @dev: the device it drives (reset here)
 * @ops: the owner's callbacks (may be NULL), called with @ctx
 * @ctx: the owner's argument to @ops
 *
 * Return: nothing. Runs on the thread that owns the port, like every vu_conn_*() call.
 */
void vu_conn_init(struct vu_conn *c, int sock, struct vnet_dev *dev, const struct vu_owner_ops *ops,
		  void *ctx)
{
	int fl;

	memset(c, 0, sizeof(*c));
	c->sock = sock;
	c->backend_req_fd = -1;
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		c->q[i].kick = -1;
		c->q[i].call = -1;
		c->q[i].err = -1;
	}
	c->dev = dev;
	c->ops = ops;
	c->ctx = ctx;
	c->xfer.fd = -1;
	/* A frontend that stalls mid-message must not block the whole daemon: never wait. */
	fl = fcntl(sock, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(sock, F_SETFL, fl | O_NONBLOCK) < 0)
		log_warn("vhost-user: cannot make socket non-blocking: %s", strerror(errno));
	if (dev)
		vnet_dev_reset(dev);
}

/**
 * vu_conn_handle_readable() - read, validate and handle one message.
 * @c: the connection; its socket is readable
 *
 * Malformed messages (vu_msg_parse() fails) close the connection; well-formed requests we
 * refuse get a REPLY_ACK failure when asked for and keep it. A message that arrives in pieces
 * is gathered across calls (vhost_user_io.h).
 *
 * Return: 0 to keep the connection, -1 when it must be closed (logged).
 */
int vu_conn_handle_readable(struct vu_conn *c)
{
	struct vu_refusal refusal;
	struct vu_rx rx;
	enum vu_result res;
	int got;

	if (c->sock < 0 || !c->dev)
		return -1;
	/* A partial message waits for more input; a malformed one closes the connection. */
	got = vu_io_recv(c->sock, &c->rx, &rx);
	if (got <= 0)
		return got;
	c->messages++;
	log_debug("vhost-user: %s", vu_request_name(rx.msg.request));

	if (vu_state_allows(c, &rx.msg, &refusal))
		res = vu_dispatch(c, &rx);
	else
		res = vu_refuse(c, &rx.msg, &refusal);
	vu_close_fds(rx.fds, rx.nfds); /* every fd a handler did not keep */
	if (res == VU_DISCONNECT)
		return -1;
	/* After dispatch: UML asks for an ack on the very SET_PROTOCOL_FEATURES enabling it. */
	if (acked(c, &rx.msg)) {
		uint64_t ack = res == VU_OK ? 0 : 1;

		if (vu_io_reply(c->sock, rx.msg.request, &ack, sizeof(ack)) < 0)
			return -1;
	}
	return 0;
}

/**
 * vu_conn_close() - stop the device, then close every fd and unmap memory.
 * @c: the connection (one never initialised is left alone)
 *
 * Return: nothing. Idempotent.
 */
void vu_conn_close(struct vu_conn *c)
{
	if (!c->dev)
		return; /* never initialised */
	vnet_dev_reset(c->dev); /* queues stop before their memory goes away */
	vu_mig_reset(c, true);
	vu_ring_drop_fds(c);
	vu_io_reset(&c->rx);
	vu_close_fd(&c->backend_req_fd);
	vu_close_fd(&c->sock);
	vu_mem_unmap_table(&c->mem);
	c->mem_fault = 0;
	c->protocol_features = 0;
	c->features_set = false;
	c->protocol_bit_accepted = false;
	c->owner_set = false;
}

/**
 * vu_conn_state_io() - the device-state pipe is ready: move what it takes (vhost_user_migrate.c).
 * @c: the connection
 * @events: what epoll reported for the pipe
 *
 * Return: nothing; at the end the pipe is closed (owner told) and the result kept for
 * CHECK_DEVICE_STATE.
 */
void vu_conn_state_io(struct vu_conn *c, uint32_t events)
{
	vu_mig_state_io(c, events);
}

/**
 * vu_conn_kick_failed() - queue qidx's kick fd reported HUP or ERR: drop it, break the queue.
 * @c: the connection
 * @qidx: the queue whose kick fd it is
 * @events: what epoll reported (EPOLLERR and/or EPOLLHUP)
 *
 * Return: nothing; the kick fd is closed (owner told first) and one line logged.
 */
void vu_conn_kick_failed(struct vu_conn *c, unsigned qidx, uint32_t events)
{
	vu_ring_kick_failed(c, qidx, events);
}

/**
 * vu_conn_signal_error() - signal queue qidx's error fd (SET_VRING_ERR), if it has one.
 * @c: the connection
 * @qidx: the queue that broke
 *
 * Return: nothing; a full or closed peer is ignored, other errors logged.
 */
void vu_conn_signal_error(struct vu_conn *c, unsigned qidx)
{
	vu_ring_signal_error(c, qidx);
}

/**
 * vu_conn_notify() - write u64 1 to queue qidx's call fd (the guest's interrupt).
 * @c: the connection
 * @qidx: the queue
 *
 * Return: nothing; a full or closed peer is ignored, other errors logged. Hot path.
 */
void vu_conn_notify(struct vu_conn *c, unsigned qidx)
{
	const uint64_t one = 1;
	ssize_t n;
	int fd;

	if (qidx >= VNET_MAX_QUEUES || (fd = c->q[qidx].call) < 0 ||
	    atomic_load_explicit(&c->peer_stalled, memory_order_relaxed))
		return;
	/* UML's call fds are socketpair ends, QEMU's eventfds: neither may block (peer_io.h). */
	n = peer_write(fd, c->q[qidx].call_kind, &one, sizeof(one));
	if (n < 0 && errno == ETIMEDOUT)
		vu_conn_stalled(c, qidx, "call");
	else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EPIPE &&
		 errno != ECONNRESET && errno != EINTR)
		log_guest("vhost-user: queue %u: call fd: %s", qidx, strerror(errno));
}
