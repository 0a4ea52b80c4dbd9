/* SPDX-License-Identifier: MIT */
/* port_persist.c - a port's --state-dir glue: load, restore, timed writes of its state file. */
#include "port/port_persist.h"
#include "port/port.h" /* the folder's API this file defines part of */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "loop/loop.h"
#include "lib/log.h"
#include "port/port_internal.h"
#include "port/port_state.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * What the port keeps across a vnetd restart (port_state.c has the file's format): read when
 * the port is created, put back once the first frontend's queues run, written again after the
 * guest or the host changed it, by a timer, at most once per PORT_STATE_WRITE_INTERVAL_NS.
 */

static int state_dir = -1;

/**
 * port_set_state_dir() - the --state-dir directory for every port created after.
 * @dirfd: the directory (kept open by the caller), or -1 for none
 *
 * Main thread, at start-up.
 */
void port_set_state_dir(int dirfd)
{
	state_dir = dirfd;
}

static void state_load(struct port *p)
{
	char err[256];
	int r;

	if (state_dir < 0)
		return;
	r = port_state_load(state_dir, p->cfg.socket_path, vnet_dev_num_queues(p->dev), p->saved,
			    err, sizeof(err));
	if (r < 0)
		log_warn("%s: state file ignored: %s", p->name, err);
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		p->rings[i].kept = p->saved->ring[i];
	if (port_state_ring_any(p->saved->ring, VNET_MAX_QUEUES))
		log_info("%s: packed ring positions kept from a clean stop", p->name);
	p->rss_restored = !p->saved->rss.cfg.table_len;
	p->restore_pending = r == 0 && (p->saved->nqueues > 0 || p->saved->rx.present ||
					!p->rss_restored);
	p->rx_restored = !p->saved->rx.present;
	if (p->restore_pending)
		log_info("%s: coalescing of %u queue(s)%s%s restored once the frontend is back",
			 p->name, p->saved->nqueues,
			 p->saved->rx.present ? ", receive filter, RX mode and MAC" : "",
			 p->rss_restored ? "" : ", RSS settings");
}

/**
 * port_persist_open() - read the port's state file, and set up the timer that writes it.
 * @p: the port, its device created, not yet in use
 *
 * Nothing to do without --state-dir (p->saved stays NULL). Main thread, the port's worker
 * parked or not started.
 *
 * Return: 0, or -1 (logged) when there is no memory for the state or the timer cannot be set
 * up; port_persist_close() cleans up.
 */
int port_persist_open(struct port *p)
{
	if (state_dir < 0)
		return 0;
	p->saved = calloc(1, sizeof(*p->saved)); /* 2.3 KB a port without --state-dir does not pay */
	if (!p->saved) {
		log_err("%s: state: out of memory", p->name);
		return -1;
	}
	state_load(p);
	p->state_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->state_timer_fd < 0 ||
	    event_loop_add(p->epfd, p->state_timer_fd, EPOLLIN,
			   port_ref(p, EV_STATE_TIMER, 0, p->state_timer_fd)) < 0) {
		log_err("%s: state timer: %s", p->name, strerror(errno));
		return -1;
	}
	return 0;
}

/**
 * port_persist_close() - close the port's state write timer and free its state (the file stays
 * for the next vnetd).
 * @p: the port
 *
 * Main thread, the port's worker parked or stopped.
 */
void port_persist_close(struct port *p)
{
	free(p->saved);
	p->saved = NULL;
	if (p->state_timer_fd >= 0) {
		event_loop_del(p->epfd, p->state_timer_fd);
		close(p->state_timer_fd);
	}
}

/*
 * state_restore_rx() - once the driver runs a queue again (its features negotiated, so the
 * device knows whether it has CTRL_RX / CTRL_MAC_ADDR): its filter, RX mode and MAC back.
 * True when done.
 */
static bool state_restore_rx(struct port *p)
{
	const struct port_state_rx *rx = &p->saved->rx;
	struct vnet_rx_filter f;
	struct vnet_ring_info ri;

	if (p->rx_restored)
		return true;
	if (!vnet_dev_ring_info(p->dev, 0, &ri) || !ri.enabled || !ri.started)
		return false;
	port_state_rx_filter(rx, &f);
	if (vnet_dev_restore_rx(p->dev, &f, rx->mac_set ? rx->mac : NULL) < 0)
		log_warn("%s: saved receive filter not restored", p->name);
	p->rx_restored = true;
	return true;
}

/*
 * state_restore_rss() - the driver's RSS settings (RSS_CONFIG / HASH_CONFIG) back, checked as
 * hostile input against the device, once its features are negotiated and queue 0 runs. True
 * when done (restored, or refused and logged).
 */
static bool state_restore_rss(struct port *p)
{
	const struct port_state_rss *rss = &p->saved->rss;
	struct vnet_ring_info ri;
	const char *why;

	if (p->rss_restored)
		return true;
	if (!vnet_dev_ring_info(p->dev, 0, &ri) || !ri.enabled || !ri.started)
		return false;
	if (vnet_dev_restore_rss(p->dev, &rss->cfg, rss->steer, &why) < 0)
		log_warn("%s: saved RSS settings not restored: %s", p->name, why);
	p->rss_restored = true;
	return true;
}

/**
 * port_persist_restore() - the frontend's queues run again: give each its saved parameters once.
 * @p: the port, with a restore pending (p->restore_pending)
 *
 * Queues not running yet keep the restore pending for a later call. On the port's worker.
 */
void port_persist_restore(struct port *p)
{
	bool pending = !state_restore_rx(p);

	pending |= !state_restore_rss(p);

	for (unsigned i = 0; i < p->saved->nqueues; i++) {
		struct vnet_ring_info ri;
		bool have = vnet_dev_ring_info(p->dev, i, &ri);

		if (p->restored[i] || !have || ri.kind == VNET_QUEUE_CTRL ||
		    p->saved->q[i].setter == COAL_SET_NONE) {
			p->restored[i] = true;
			continue;
		}
		if (!ri.enabled || !ri.started) {
			pending = true;
			continue;
		}
		vnet_dev_restore_coal(p->dev, i, &p->saved->q[i].params,
				      (enum coal_setter)p->saved->q[i].setter);
		p->restored[i] = true;
	}
	p->restore_pending = pending;
}

/* state_rss_from() - what the file keeps of the device's RSS settings now. */
static void state_rss_from(struct port *p, struct port_state_rss *out)
{
	bool steer, report;
	const struct rss_config *c = vnet_dev_rss(p->dev, &steer, &report);

	port_state_rss_from(out, c, steer);
}

/* state_write() - write the file if the port's state differs from it; 0 nothing to write,
 * 1 written, -1 the write failed (logged). */
static int state_write(struct port *p)
{
	struct port_state now = *p->saved;
	unsigned n = vnet_dev_num_queues(p->dev);

	if (!p->connected)
		return 0;
	/* Packed positions are written even before the coalescing is restored (the file's stays). */
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		now.ring[i] = p->rings[i].kept;
	if (p->restore_pending)
		goto write;
	now.nqueues = n;
	for (unsigned i = 0; i < n; i++) {
		struct vnet_queue_snapshot s;

		/* A queue that is not running keeps what it had (a disconnect resets it). */
		if (!vnet_dev_queue_snapshot(p->dev, i, &s) || s.view.kind == VNET_QUEUE_CTRL ||
		    !s.view.enabled || !s.view.started)
			continue;
		now.q[i].params = s.view.coal;
		now.q[i].setter = (uint8_t)s.view.set_by;
	}
	port_state_rx_from(&now.rx, vnet_dev_rx_filter(p->dev), vnet_dev_mac(p->dev), p->cfg.dev.mac);
	state_rss_from(p, &now.rss);
write:
	if (memcmp(&now, p->saved, sizeof(now)) == 0)
		return 0;
	if (port_state_save(state_dir, p->cfg.socket_path, &now) < 0)
		return -1;
	*p->saved = now;
	return 1;
}

/**
 * port_persist_mark() - the guest may have changed what the file keeps (a control-queue kick).
 * @p: the port
 *
 * Has the state timer write it, at most once per PORT_STATE_WRITE_INTERVAL_NS. No I/O here
 * beyond arming the timer, and none while it is armed. On the port's worker.
 */
void port_persist_mark(struct port *p)
{
	struct itimerspec its = {0};
	uint64_t at;

	if (p->state_timer_fd < 0 || p->state_pending)
		return;
	at = port_state_write_at(port_now_ns(), p->state_last_ns);
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	if (timerfd_settime(p->state_timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		/* Written at the next control request or disconnect instead. */
		log_guest("%s: state timer: %s", p->name, strerror(errno));
		return;
	}
	p->state_pending = true;
}

/**
 * port_state_sync() - write the port's state file now if its state changed since the last write.
 * @p: the port (on its worker, or with the workers parked)
 *
 * A failed write is tried again by the state timer after the interval.
 */
void port_state_sync(struct port *p)
{
	int r;

	if (state_dir < 0 || !p->saved)
		return;
	p->state_pending = false; /* the timer may still fire: it then finds nothing pending */
	r = state_write(p);
	if (r != 0)
		p->state_last_ns = port_now_ns();
	if (r < 0)
		port_persist_mark(p);
}

/**
 * port_persist_timer() - the state timer fired: write what the guest changed meanwhile.
 * @p: the port (its timer already drained)
 *
 * On the port's worker.
 */
void port_persist_timer(struct port *p)
{
	if (p->state_pending)
		port_state_sync(p);
}

/* ---- Packed ring positions: kept at a clean stop, resumed when the frontend lost track ---- */

/*
 * A packed ring has no index in guest memory: a frontend that lost its backend mid-run (QEMU:
 * GET_VRING_BASE failed on the closed socket) can only resend the base it last gave, which the
 * rings left behind long ago. When the frontend goes away vnetd stops each running packed
 * queue cleanly and keeps where it stopped (in the file with --state-dir, so a restarted vnetd
 * has it too); the next start of that ring resumes there if the frontend repeats that base
 * (port_state_ring_resume() has the rule). A start drops the kept position at once: a ring
 * that runs has none, and a SIGKILL must not leave one behind that is no longer true.
 */

/**
 * port_persist_ring_base() - the frontend's own SET_VRING_BASE for a queue.
 * @p: the port
 * @qidx: the queue (checked by the caller)
 * @base: the value
 *
 * On the port's worker.
 */
void port_persist_ring_base(struct port *p, unsigned qidx, uint32_t base)
{
	if (qidx >= VNET_MAX_QUEUES)
		return;
	p->rings[qidx].from = base;
	p->rings[qidx].from_set = true;
}

/**
 * port_persist_ring_starting() - a queue is about to start: resume a packed ring kept at a stop.
 * @p: the port
 * @qidx: the queue (fully configured, not started)
 *
 * On the port's worker.
 */
void port_persist_ring_starting(struct port *p, unsigned qidx)
{
	struct port_ring_keep *k;
	struct vnet_ring_info ri;
	uint32_t base;
	bool packed, io;

	if (qidx >= VNET_MAX_QUEUES || !vnet_dev_ring_info(p->dev, qidx, &ri))
		return;
	k = &p->rings[qidx];
	if (!k->kept.present)
		return;
	packed = (vnet_dev_features(p->dev) >> VIRTIO_F_RING_PACKED) & 1;
	io = (vnet_dev_features(p->dev) >> VIRTIO_F_IN_ORDER) & 1;
	if (packed && port_state_ring_resume(&k->kept, ri.num, ri.desc_addr, io, k->from_set,
					     k->from, &base) &&
	    vnet_dev_ring_set_base(p->dev, qidx, true, base) == 0) {
		log_info("%s: queue %u: packed ring resumes where it stopped (avail 0x%04x, used "
			 "0x%04x), %s 0x%08x", p->name, qidx, base & 0xffff, base >> 16,
			 base == k->from ? "which is the frontend's base" :
					   "not at the frontend's stale base", k->from);
	} else {
		log_info("%s: queue %u: the frontend's base 0x%08x stands (the ring kept at 0x%04x "
			 "is not this one, or the frontend knows where it is)", p->name, qidx,
			 k->from_set ? k->from : 0, k->kept.used);
	}
	memset(&k->kept, 0, sizeof(k->kept));
	port_state_sync(p);
}

/**
 * port_persist_rings_stop() - the frontend goes: stop running packed queues, keep where.
 * @p: the port, connected
 *
 * Each running, unbroken packed queue is stopped as GET_VRING_BASE would (nothing the driver
 * handed over is lost: held completions are published, taken chains given back) and its
 * position kept with the frontend's base; the file is written at once. On the port's worker,
 * or on the main thread with it parked.
 */
void port_persist_rings_stop(struct port *p)
{
	bool any = false;

	for (unsigned i = 0; i < vnet_dev_num_queues(p->dev) && i < VNET_MAX_QUEUES; i++) {
		struct port_ring_keep *k = &p->rings[i];
		struct vnet_ring_info ri;
		struct port_state_ring r = {0};
		char err[160];
		uint32_t base;

		/* What the ring ran with (run_*), not what the transport set since. */
		if (!vnet_dev_ring_info(p->dev, i, &ri) || !ri.started || !ri.run_packed ||
		    ri.broken || !k->from_set || ri.desc_addr > INT64_MAX)
			continue;
		r.size = ri.run_num;
		r.in_order = ri.run_in_order;
		base = vnet_dev_queue_stop(p->dev, i);
		r.desc = ri.desc_addr;
		r.from = k->from;
		r.avail = (uint16_t)base;
		r.used = (uint16_t)(base >> 16);
		r.present = true;
		if (port_state_ring_check(&r, err, sizeof(err)) < 0) {
			log_guest("%s: queue %u: stop position not kept: %s", p->name, i, err);
			continue;
		}
		k->kept = r;
		any = true;
	}
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		p->rings[i].from_set = false; /* the next frontend gives its own */
	if (any)
		port_state_sync(p);
}
