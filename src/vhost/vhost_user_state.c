/* SPDX-License-Identifier: MIT */
/* vhost_user_state.c - which vhost-user message is legal in which connection and ring state. */
#include "vhost/vhost_user_state.h"

#include <stdio.h>

#include "vhost/vhost_user_migrate.h"
#include "vhost/vhost_user_ring.h"
#include "lib/virtio_net_defs.h"

/*
 * What a message needs of the state before its handler runs. A frontend may send anything in
 * any order; the handlers may assume what the table says and nothing else. The states:
 *
 *   connection: fresh -> features set (SET_FEATURES) -> memory set (SET_MEM_TABLE, ADD_MEM_REG);
 *               RESET_OWNER / RESET_DEVICE clear the features (memory kept)
 *   each ring:  stopped -> started (configured, memory and features known, kick fd: it runs)
 *               -> broken (the guest broke it: stopped processing, NEEDS_RESET) ;
 *               GET_VRING_BASE, RESET_* and the connection's end stop it again
 *
 * A ring's layout (split or packed, IN_ORDER, EVENT_IDX, indirect: all from SET_FEATURES), size,
 * base and ring addresses change only while it is stopped; its memory only under
 * SET_MEM_TABLE / REM_MEM_REG, whose handlers stop the rings around the change themselves.
 * docs/design.md shows this table as prose.
 */
enum vu_need {
	NEED_RING_STOPPED = 1u << 0,   /* the ring it names is not started (a broken one is) */
	NEED_ALL_STOPPED = 1u << 1,    /* no ring is started */
	NEED_SAME_FEATURES = 1u << 2,  /* while a ring is started only VHOST_F_LOG_ALL may change */
	NEED_SAME_RING_ADDR = 1u << 3, /* while its ring is started only the log fields may change */
};

/*
 * Requests not named here need nothing: they answer, reset, stop, or change nothing a running
 * ring uses (the handlers of SET_MEM_TABLE and REM_MEM_REG stop the rings around their change
 * themselves). SET_OWNER is not required first: DPDK 22.11's virtio-user sends none when it
 * reconnects (SET_VRING_ENABLE, then SET_FEATURES, memory and rings), and DPDK's vhost library
 * and QEMU's libvhost-user take it so too.
 */
static const uint8_t vu_needs[VU_CHECK_DEVICE_STATE + 1] = {
	[VU_SET_FEATURES] = NEED_SAME_FEATURES,
	[VU_SET_PROTOCOL_FEATURES] = NEED_ALL_STOPPED,
	[VU_SET_VRING_NUM] = NEED_RING_STOPPED,
	[VU_SET_VRING_ADDR] = NEED_SAME_RING_ADDR,
	[VU_SET_VRING_BASE] = NEED_RING_STOPPED,
	[VU_SET_DEVICE_STATE_FD] = NEED_ALL_STOPPED,
};

/* The features SET_FEATURES last set, as the frontend wrote them (LOG_ALL aside). */
static uint64_t accepted_features(const struct vu_conn *c)
{
	return vnet_dev_features(c->dev) |
	       (c->protocol_bit_accepted ? BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES) : 0);
}

static bool refuse(struct vu_refusal *r, const char *why, enum vu_refusal_scope scope,
		   unsigned qidx)
{
	r->why = why;
	r->scope = scope;
	r->qidx = qidx;
	return false;
}

/* A running ring's SET_VRING_ADDR names the same three rings (QEMU's LOG_ALL toggling does). */
static bool same_ring_addr(const struct vu_conn *c, unsigned qidx, const struct vu_vring_addr *a)
{
	struct vu_vring_addr now;

	return vu_ring_addr(c, qidx, &now) && now.desc == a->desc && now.avail == a->avail &&
	       now.used == a->used;
}

/**
 * vu_state_allows() - whether a message is legal in the connection's state now.
 * @c: the connection
 * @m: the validated message
 * @r: filled when the answer is no: the broken rule and what a refusal breaks
 *
 * Ring indexes out of range are left to the handlers (they refuse them). Pure: nothing changes.
 *
 * Return: true if the handler may run.
 */
bool vu_state_allows(const struct vu_conn *c, const struct vu_msg *m, struct vu_refusal *r)
{
	unsigned need = m->request < sizeof(vu_needs) ? vu_needs[m->request] : 0;
	unsigned qidx = vu_msg_vring_index(m);

	if ((need & NEED_ALL_STOPPED) && vu_ring_any_started(c))
		return refuse(r, "a ring is running (stop every ring with GET_VRING_BASE first)",
			      VU_REFUSE_DEVICE, 0);
	if ((need & NEED_RING_STOPPED) && vu_ring_started(c, qidx))
		return refuse(r, "its ring is running (stop it with GET_VRING_BASE first)",
			      VU_REFUSE_RING, qidx);
	if ((need & NEED_SAME_RING_ADDR) && vu_ring_started(c, qidx) &&
	    !same_ring_addr(c, qidx, &m->p.addr))
		return refuse(r, "new ring addresses for a running ring (stop it first)",
			      VU_REFUSE_RING, qidx);
	if ((need & NEED_SAME_FEATURES) && vu_ring_any_started(c) &&
	    (!c->features_set ||
	     (m->p.u64 & ~BIT_ULL(VHOST_F_LOG_ALL)) != accepted_features(c)))
		return refuse(r, "features other than LOG_ALL change while rings run (stop every "
				 "ring first)", VU_REFUSE_DEVICE, 0);
	return true;
}

/**
 * vu_state_name() - the connection's state in a few words, for log lines.
 * @c: the connection
 * @buf: where the words go
 * @len: its size
 *
 * Return: @buf, e.g. "owned, features set, memory set, 2 of 3 rings started".
 */
const char *vu_state_name(const struct vu_conn *c, char *buf, unsigned len)
{
	unsigned n = vnet_dev_num_queues(c->dev), started = 0;

	for (unsigned i = 0; i < n && i < VNET_MAX_QUEUES; i++)
		started += vu_ring_started(c, i);
	snprintf(buf, len, "%s, features %s, memory %s, %u of %u rings started",
		 c->owner_set ? "owned" : "no owner", c->features_set ? "set" : "not set",
		 c->mem.nregions ? "set" : "not set", started, n);
	return buf;
}
