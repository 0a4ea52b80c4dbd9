/* SPDX-License-Identifier: MIT */
/* vhost_user_migrate.c - live migration over vhost-user: dirty log base, device state pipe, RARP. */
#include "vhost/vhost_user_migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "lib/peer_io.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_io.h"
#include "vhost/vhost_user_mem.h"
#include "vhost/vhost_user_stall.h"
#include "lib/virtio_net_defs.h"

/* SET_DEVICE_STATE_FD reply: 0 = accepted, bit 8 = we hand back no fd of our own. */
#define VU_STATE_FD_REPLY_NOFD (1ull << 8)

/* ---- dirty log ---- */

/* Logging is on exactly while the frontend asked for it (LOG_ALL) and gave us a log. */
static void update_logging(struct vu_conn *c)
{
	bool on = c->log_all && c->log.bitmap;

	vnet_dev_set_dirty_log(c->dev, on ? &c->log : NULL);
}

static void unmap_log(struct dirty_log *log)
{
	if (log->mmap_base) {
		vu_unmap_fd(log->mmap_base, log->mmap_len);
		mem_cap_uncharge(log->mmap_len);
	}
	memset(log, 0, sizeof(*log));
}

/*
 * map_log() - the log the frontend describes (mmap_size bytes at mmap_offset of fd), checked
 * like a memory region: no wrap, within our limit, not past the end of the file (else SIGBUS),
 * within the guest memory caps (vu_mem_admit(): the old log goes, the table stays), and watched
 * for SIGBUS (the frontend keeps the fd). 0, or -1 (logged).
 */
static int map_log(struct vu_conn *c, const struct vu_log *l, int fd, struct dirty_log *out)
{
	int64_t size;
	uint64_t len;
	void *base;

	/* QEMU maps from offset 0; a far offset would only reserve address space. */
	if (l->mmap_size == 0 || l->mmap_size > DIRTY_LOG_MAX_SIZE ||
	    l->mmap_offset > DIRTY_LOG_MAX_SIZE) {
		log_guest("vhost-user: SET_LOG_BASE: bad size %" PRIu64 " / offset %" PRIu64,
			  l->mmap_size, l->mmap_offset);
		return -1;
	}
	len = l->mmap_offset + l->mmap_size;
	if (len > SIZE_MAX) {
		log_guest("vhost-user: SET_LOG_BASE: log too large");
		return -1;
	}
	if (vu_fd_short(fd, len, &size) != 0) {
		log_guest("vhost-user: SET_LOG_BASE: fd does not hold %" PRIu64 " bytes", len);
		return -1;
	}
	/* Counted like guest memory: with the table against max-mem=, and daemon-wide. */
	if (vu_mem_admit(c, "SET_LOG_BASE", len, vu_mem_table_bytes(&c->mem)) < 0)
		return -1;
	/* From offset 0, as for memory regions: mmap offsets must be page-aligned, ours need not. */
	if (!(base = vu_map_fd(fd, len, &c->mem_fault, "SET_LOG_BASE"))) {
		mem_cap_uncharge(len);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->bitmap = (uint8_t *)base + l->mmap_offset;
	out->size = l->mmap_size;
	out->mmap_base = base;
	out->mmap_len = (size_t)len;
	return 0;
}

/**
 * vu_mig_set_log_base() - SET_LOG_BASE: map the frontend's dirty log and log through it.
 * @c: the connection (LOG_SHMFD must be negotiated)
 * @rx: the message; its fd stays the caller's to close (the mapping outlives it)
 *
 * The new log replaces the old one in place (the device logs through &c->log), then the old
 * one is unmapped. The reply always goes out (QEMU waits for it): 0 mapped, 1 refused.
 *
 * Return: VU_OK, VU_FAIL (refused, logged) or VU_DISCONNECT (the reply could not be sent).
 */
enum vu_result vu_mig_set_log_base(struct vu_conn *c, struct vu_rx *rx)
{
	struct dirty_log nl;
	int ok;

	if (!(c->protocol_features & BIT_ULL(VU_PROTOCOL_F_LOG_SHMFD))) {
		log_guest("vhost-user: SET_LOG_BASE without LOG_SHMFD negotiated");
		return VU_FAIL;
	}
	ok = map_log(c, &rx->msg.p.log, rx->fds[0], &nl) == 0;
	if (ok) {
		/* The device logs through &c->log: swap in place, then drop the old mapping. */
		struct dirty_log old = c->log;

		c->log = nl;
		update_logging(c);
		unmap_log(&old);
		log_info("vhost-user: dirty log of %" PRIu64 " bytes (%" PRIu64 " MiB of guest memory)",
			 nl.size, nl.size * 8 * DIRTY_LOG_PAGE >> 20);
	}
	/* QEMU waits for this reply (and ignores its value): 0 mapped, 1 refused. */
	return vu_reply_u64(c->sock, rx->msg.request, ok ? 0 : 1) == VU_OK ? (ok ? VU_OK : VU_FAIL)
								     : VU_DISCONNECT;
}

/**
 * vu_mig_set_log_all() - SET_FEATURES turned VHOST_F_LOG_ALL on or off.
 * @c: the connection
 * @on: whether the bit was set
 *
 * Return: nothing; the device logs while this is on and a log is mapped.
 */
void vu_mig_set_log_all(struct vu_conn *c, bool on)
{
	if (on != c->log_all)
		log_info("vhost-user: dirty logging %s", on ? "on" : "off");
	c->log_all = on;
	update_logging(c);
}

/* ---- announce ---- */

/**
 * vu_mig_send_rarp() - SEND_RARP: announce the guest's MAC (the u64's first 6 bytes).
 * @c: the connection
 * @m: the message
 *
 * Return: VU_OK (counted in c->rarps), or VU_FAIL when the device has no backend to send on.
 */
enum vu_result vu_mig_send_rarp(struct vu_conn *c, const struct vu_msg *m)
{
	uint8_t mac[6];

	memcpy(mac, &m->p.u64, 6); /* the MAC is the first 6 bytes of the u64 */
	if (vnet_dev_send_rarp(c->dev, mac) < 0) {
		log_guest("vhost-user: SEND_RARP: no backend to announce on");
		return VU_FAIL;
	}
	c->rarps++;
	log_debug("vhost-user: SEND_RARP %02x:%02x:%02x:%02x:%02x:%02x announced", mac[0], mac[1],
		  mac[2], mac[3], mac[4], mac[5]);
	return VU_OK;
}

/* ---- device state ---- */

/* End the transfer's pipe (the owner stops watching it first) and free its buffer; the result
 * stays. */
static void xfer_close(struct vu_conn *c)
{
	struct vu_state_xfer *x = &c->xfer;

	free(x->buf);
	x->buf = NULL;
	if (x->fd < 0)
		return;
	if (c->ops && c->ops->state_fd_changed)
		c->ops->state_fd_changed(c->ctx, x->fd, -1, 0);
	close(x->fd);
	x->fd = -1;
}

static void xfer_finish(struct vu_conn *c, int result, const char *why)
{
	c->xfer.result = result;
	if (result < 0)
		log_guest("vhost-user: device state %s failed: %s", c->xfer.load ? "load" : "save",
			  why);
	else
		log_info("vhost-user: device state %s: %zu bytes", c->xfer.load ? "loaded" : "saved",
			 c->xfer.load ? c->xfer.len : c->xfer.off);
	xfer_close(c);
}

/* Move what the pipe takes or has now; never waits. */
static void xfer_step(struct vu_conn *c)
{
	struct vu_state_xfer *x = &c->xfer;
	const char *why = "";

	while (x->fd >= 0 && x->result == 1) {
		ssize_t n;

		if (!x->load) {
			if (x->off == x->len) {
				xfer_finish(c, 0, NULL); /* closing is the end of the stream */
				return;
			}
			n = peer_write(x->fd, x->kind, x->buf + x->off, x->len - x->off);
		} else {
			/* One byte more than the limit: a longer stream is refused, not cut. */
			uint8_t extra;

			/* The frontend shares the pipe and may have cleared O_NONBLOCK: peer_io.h. */
			n = x->len < VNET_STATE_MAX
				? peer_read(x->fd, x->kind, x->buf + x->len, VNET_STATE_MAX - x->len)
				: peer_read(x->fd, x->kind, &extra, 1);
			if (n > 0 && x->len == VNET_STATE_MAX) {
				xfer_finish(c, -1, "stream longer than VNET_STATE_MAX");
				return;
			}
			if (n == 0) {
				/* The result first: argument order is unspecified and sets `why`. */
				int r = vnet_dev_state_load(c->dev, x->buf, x->len, &why);

				xfer_finish(c, r < 0 ? -1 : 0, why);
				return;
			}
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* the owner's epoll tells us when to go on */
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			if (err == ETIMEDOUT) /* not a pipe, and it kept the write waiting */
				vu_conn_stalled(c, 0, "device state");
			xfer_finish(c, -1, strerror(err));
			return;
		}
		if (x->load)
			x->len += (size_t)n;
		else
			x->off += (size_t)n;
	}
}

/**
 * vu_mig_state_io() - move device state over the pipe as far as it goes without waiting.
 * @c: the connection
 * @events: what epoll reported for the pipe; HUP or ERR with the transfer still open ends it
 *
 * Return: nothing; at the end the pipe is closed (owner told) and the result kept for
 * CHECK_DEVICE_STATE.
 */
void vu_mig_state_io(struct vu_conn *c, uint32_t events)
{
	xfer_step(c); /* EPOLLHUP/ERR: a pipe's read (EOF) or write (EPIPE) ends the transfer */
	/* An fd that hangs up yet still says "try again" would be reported for ever: end it. */
	if (c->xfer.fd >= 0 && (events & (EPOLLHUP | EPOLLERR)))
		xfer_finish(c, -1, "the frontend's end hung up");
}

/**
 * vu_mig_set_state_fd() - SET_DEVICE_STATE_FD: start a save or load over the frontend's pipe.
 * @c: the connection (its device is stopped: the frontend sends this after GET_VRING_BASE)
 * @rx: the message; the pipe's fd is taken from it
 *
 * Only the stopped phase and the save and load directions are supported. A transfer still
 * open is dropped. The owner is told to watch the pipe, the reply goes out (no fd of ours),
 * then what the pipe takes at once is moved.
 *
 * Return: VU_OK, VU_FAIL (refused, reply 1) or VU_DISCONNECT (the reply could not be sent).
 */
enum vu_result vu_mig_set_state_fd(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_transfer_state *t = &rx->msg.p.xfer;
	struct vu_state_xfer *x = &c->xfer;
	int fd, fl;

	if (!(c->protocol_features & BIT_ULL(VU_PROTOCOL_F_DEVICE_STATE))) {
		log_guest("vhost-user: SET_DEVICE_STATE_FD without the DEVICE_STATE protocol "
			  "feature (not offered with migrate-state=off, or not negotiated)");
		return vu_reply_u64(c->sock, rx->msg.request, 1) == VU_OK ? VU_FAIL : VU_DISCONNECT;
	}
	if (t->phase != VU_TRANSFER_STATE_PHASE_STOPPED ||
	    (t->direction != VU_TRANSFER_STATE_SAVE && t->direction != VU_TRANSFER_STATE_LOAD)) {
		log_guest("vhost-user: SET_DEVICE_STATE_FD: direction %u phase %u not supported",
			  t->direction, t->phase);
		return vu_reply_u64(c->sock, rx->msg.request, 1) == VU_OK ? VU_FAIL : VU_DISCONNECT;
	}
	xfer_close(c); /* a transfer the frontend gave up on */
	fd = vu_take_fd(rx, 0);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		log_guest("vhost-user: SET_DEVICE_STATE_FD: unusable fd: %s", strerror(errno));
		close(fd);
		return vu_reply_u64(c->sock, rx->msg.request, 1) == VU_OK ? VU_FAIL : VU_DISCONNECT;
	}
	x->buf = malloc(VNET_STATE_MAX);
	if (!x->buf) {
		log_err("vhost-user: SET_DEVICE_STATE_FD: out of memory");
		close(fd);
		return vu_reply_u64(c->sock, rx->msg.request, 1) == VU_OK ? VU_FAIL : VU_DISCONNECT;
	}
	x->fd = fd;
	x->kind = (uint8_t)vu_peer_fd_kind(c, fd); /* polled if not a pipe, on a stalled port */
	x->load = t->direction == VU_TRANSFER_STATE_LOAD;
	x->active = true;
	x->result = 1;
	x->off = x->len = 0;
	if (!x->load)
		x->len = vnet_dev_state_save(c->dev, x->buf, VNET_STATE_MAX); /* device is stopped */
	if (c->ops && c->ops->state_fd_changed)
		c->ops->state_fd_changed(c->ctx, -1, fd, x->load ? EPOLLIN : EPOLLOUT);
	/* Reply first: the frontend only starts reading (or writing) the pipe after it. */
	if (vu_reply_u64(c->sock, rx->msg.request, VU_STATE_FD_REPLY_NOFD) != VU_OK)
		return VU_DISCONNECT;
	xfer_step(c);
	return VU_OK;
}

/**
 * vu_mig_check_state() - CHECK_DEVICE_STATE: finish what the pipe still holds, reply the result.
 * @c: the connection
 * @m: the message
 *
 * A transfer not complete by now has failed; without a transfer to check the answer is 1.
 *
 * Return: VU_OK, or VU_DISCONNECT when the reply could not be sent.
 */
enum vu_result vu_mig_check_state(struct vu_conn *c, const struct vu_msg *m)
{
	struct vu_state_xfer *x = &c->xfer;

	/* The frontend has finished its side (closed its end, or read ours to EOF): whatever
	 * is still in the pipe can be taken now without waiting. */
	xfer_step(c);
	if (x->result == 1)
		xfer_finish(c, -1, "incomplete at CHECK_DEVICE_STATE");
	if (!x->active)
		x->result = -1; /* no transfer to check */
	x->active = false;
	return vu_reply_u64(c->sock, m->request, x->result == 0 ? 0 : 1);
}

/**
 * vu_mig_reset() - end migration state for a device reset or a disconnect.
 * @c: the connection
 * @unmap: also unmap the dirty log (disconnect); a reset keeps it for the next LOG_ALL
 *
 * Return: nothing; logging is off and any device-state transfer is dropped.
 */
void vu_mig_reset(struct vu_conn *c, bool unmap)
{
	c->log_all = false;
	if (unmap)
		unmap_log(&c->log);
	update_logging(c);
	xfer_close(c);
	c->xfer.active = false;
	c->xfer.result = 0;
}
