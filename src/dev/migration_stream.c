/* SPDX-License-Identifier: MIT */
/* migration_stream.c - device-model side of live migration: the device state stream and the announce. */
#include "dev/migration_stream.h"

#include <endian.h>
#include <string.h>

#include "lib/le_bytes.h"
#include "dev/rss/net_rss.h"
#include "dev/queue_view_internal.h"
#include "dev/dev.h" /* the public functions defined here */
#include "dev/vnet_dev_core.h"
#include "dev/rss/net_rss_internal.h"

/*
 * The state stream, version 2 (little-endian; every field checked on load):
 *
 *   0  "VNDS"        magic
 *   4  u16 version   2 (1: the same without the RSS section; still loaded, RSS off)
 *   6  u16 nqueues   must equal the destination's
 *   8  u16 pairs     queue pairs the device was created with (must match)
 *  10  u16 active    active queue pairs, 1 .. pairs
 *  12  u8 mac[6]
 *  18  u8 rxmode     bit 0 promisc, 1 allmulti, 2 alluni, 3 nomulti, 4 nouni, 5 nobcast,
 *                    6 unicast table overflowed, 7 multicast table overflowed
 *  19  u8 n_uc, u8 n_mc (each <= VNET_MAC_TABLE_SIZE), u8 reserved 0
 *  22  4 kind settings: host RX, host TX, last RX, last TX, each
 *      {u8 set (0/1), u8 who, u32 max_packets, u32 max_usecs}; unset ones all zero
 *  62  nqueues queues: {u8 who, u8 flags (bit 0: notify once when enabled), u32 max_packets,
 *      u32 max_usecs}; who 0 none, 1 guest, 2 host (kind settings too), 3 adaptive (queues
 *      only; the values must be one of the controller's profiles, which it resumes from)
 *      then n_uc + n_mc MAC addresses of 6 bytes;
 *      then (version 2) the RSS section, 12 + key_len + 2 * table_len bytes (rss_put()):
 *      {u8 flags (bit 0: steering), u32 hash_types, u16 table_len (0: no settings, all zero),
 *      u16 unclassified_queue, u16 max_tx_vq (0: set by HASH_CONFIG), u8 key_len,
 *      key[key_len], u16 table[table_len]}, checked by rss_config_check();
 *      nothing after it.
 *
 * A newer version is refused rather than half understood.
 */
#define STATE_MAGIC "VNDS"
#define STATE_VERSION 2
#define STATE_RSS_HDR 12u
#define RSS_FLAG_STEER 1u
#define STATE_HDR 22u
#define STATE_KIND 10u
#define STATE_QUEUE 10u
#define QFLAG_NOTIFY 1u

_Static_assert(STATE_HDR + 4 * STATE_KIND + VNET_MAX_QUEUES * STATE_QUEUE +
		       2 * VNET_MAC_TABLE_SIZE * 6 + STATE_RSS_HDR + RSS_KEY_MAX +
		       2 * RSS_TABLE_MAX <= VNET_STATE_MAX,
	       "the largest state fits VNET_STATE_MAX");

static uint8_t rxmode_bits(const struct vnet_rx_filter *f)
{
	return (uint8_t)(f->promisc | f->allmulti << 1 | f->alluni << 2 | f->nomulti << 3 |
			 f->nouni << 4 | f->nobcast << 5 | f->uc_overflow << 6 |
			 f->mc_overflow << 7);
}

static void put_kind(uint8_t *p, const struct vnet_kind_coal *k)
{
	p[0] = k->set;
	p[1] = k->set ? (uint8_t)k->who : 0;
	le_put32(p + 2, k->set ? k->params.max_packets : 0);
	le_put32(p + 6, k->set ? k->params.max_usecs : 0);
}

/* The RSS section (version 2): the driver's RSS_CONFIG / HASH_CONFIG settings. */
static size_t rss_put(uint8_t *p, const struct vnet_dev *dev)
{
	const struct rss_config *c = &dev->rss.cfg;

	p[0] = dev->rss.steer ? RSS_FLAG_STEER : 0;
	le_put32(p + 1, c->hash_types);
	le_put16(p + 5, c->table_len);
	le_put16(p + 7, c->unclassified);
	le_put16(p + 9, c->max_tx_vq);
	p[11] = c->key_len;
	memcpy(p + STATE_RSS_HDR, c->key, c->key_len);
	p += STATE_RSS_HDR + c->key_len;
	for (unsigned i = 0; i < c->table_len; i++)
		le_put16(p + 2 * i, c->table[i]);
	return STATE_RSS_HDR + c->key_len + 2u * c->table_len;
}

/* The RSS section of p[0..len) into *c: exactly its length; checked later. */
static int rss_get(const uint8_t *p, size_t len, struct rss_config *c, bool *steer,
		   const char **why)
{
	size_t n;

	memset(c, 0, sizeof(*c));
	if (len < STATE_RSS_HDR)
		return *why = "device state length does not match its contents", -1;
	if (p[0] & ~RSS_FLAG_STEER)
		return *why = "bad RSS flags", -1;
	*steer = p[0] & RSS_FLAG_STEER;
	c->hash_types = le_get32(p + 1);
	n = le_get16(p + 5);
	c->unclassified = le_get16(p + 7);
	c->max_tx_vq = le_get16(p + 9);
	c->key_len = p[11];
	if (n > RSS_TABLE_MAX)
		return *why = "indirection table longer than the maximum", -1;
	if (c->key_len > RSS_KEY_MAX)
		return *why = "key longer than rss_max_key_size", -1;
	if (len != STATE_RSS_HDR + c->key_len + 2 * n)
		return *why = "device state length does not match its contents", -1;
	c->table_len = (uint16_t)n;
	memcpy(c->key, p + STATE_RSS_HDR, c->key_len);
	p += STATE_RSS_HDR + c->key_len;
	for (size_t i = 0; i < n; i++)
		c->table[i] = le_get16(p + 2 * i);
	return 0;
}

/**
 * vnet_dev_state_save() - serialise what the frontend cannot resend, in the format above
 * @dev: the device
 * @buf: the stream goes here
 * @cap: room in @buf, at least VNET_STATE_MAX
 *
 * Return: the bytes written.
 */
size_t vnet_dev_state_save(const struct vnet_dev *dev, uint8_t *buf, size_t cap)
{
	const struct vnet_rx_filter *f = &dev->filter;
	const struct vnet_kind_coal *kinds[4] = {&dev->host[0], &dev->host[1], &dev->last[0],
						 &dev->last[1]};
	size_t off;

	if (cap < VNET_STATE_MAX)
		return 0;
	memcpy(buf, STATE_MAGIC, 4);
	le_put16(buf + 4, STATE_VERSION);
	le_put16(buf + 6, (uint16_t)dev->nqueues);
	le_put16(buf + 8, dev->params.queue_pairs);
	le_put16(buf + 10, dev->active_pairs);
	memcpy(buf + 12, dev->mac, 6);
	buf[18] = rxmode_bits(f);
	buf[19] = (uint8_t)f->n_uc;
	buf[20] = (uint8_t)f->n_mc;
	buf[21] = 0;
	off = STATE_HDR;
	for (unsigned k = 0; k < 4; k++, off += STATE_KIND)
		put_kind(buf + off, kinds[k]);
	for (unsigned i = 0; i < dev->nqueues; i++, off += STATE_QUEUE) {
		const struct vnet_queue *q = &dev->queues[i];
		/* Whatever was still held is owed: the destination notifies at once instead. */
		bool owed = q->coal.pending || q->coal_deadline_ns || q->rx_unflushed ||
			    q->resume_notify;

		buf[off] = (uint8_t)q->coal.setter;
		buf[off + 1] = owed ? QFLAG_NOTIFY : 0;
		le_put32(buf + off + 2, q->coal.params.max_packets);
		le_put32(buf + off + 6, q->coal.params.max_usecs);
	}
	memcpy(buf + off, f->uc, f->n_uc * 6u);
	off += f->n_uc * 6u;
	memcpy(buf + off, f->mc, f->n_mc * 6u);
	off += f->n_mc * 6u;
	return off + rss_put(buf + off, dev);
}

static bool valid_who(uint8_t who)
{
	return who == COAL_SET_NONE || who == COAL_SET_GUEST || who == COAL_SET_HOST;
}

/* A queue may also be adaptive, at one of the controller's levels. */
static bool valid_queue_who(uint8_t who, const struct coal_params *p)
{
	return valid_who(who) || (who == COAL_SET_ADAPTIVE && coal_adapt_level_of(p) >= 0);
}

/* One kind setting; host defaults can only have been set by the host. */
static int get_kind(const uint8_t *p, bool host, struct vnet_kind_coal *k, const char **why)
{
	k->set = p[0] == 1;
	k->who = (enum coal_setter)p[1];
	k->params.max_packets = le_get32(p + 2);
	k->params.max_usecs = le_get32(p + 6);
	if (p[0] > 1 || !valid_who(p[1]))
		return *why = "bad kind-wide coalescing setting", -1;
	if (!k->set && (p[1] || k->params.max_packets || k->params.max_usecs))
		return *why = "values in an unset coalescing setting", -1;
	if (k->set && (host ? k->who != COAL_SET_HOST : k->who == COAL_SET_NONE))
		return *why = "coalescing setting with the wrong setter", -1;
	return 0;
}

/* Everything a stream carries, parsed and checked before any of it is applied. */
struct state_in {
	uint16_t active;
	uint8_t mac[6];
	struct vnet_rx_filter filter;
	struct vnet_kind_coal kinds[4];
	struct coal_params qp[VNET_MAX_QUEUES];
	uint8_t qwho[VNET_MAX_QUEUES], qflags[VNET_MAX_QUEUES];
	struct rss_config rss; /* table_len 0: off (version 1: always) */
	bool rss_steer;
};

static int state_parse(const struct vnet_dev *dev, const uint8_t *buf, size_t len,
		       struct state_in *in, const char **why)
{
	struct vnet_rx_filter *f = &in->filter;
	unsigned nq, n_uc, n_mc;
	size_t off, need;
	unsigned version;
	uint8_t mode;

	if (len < STATE_HDR)
		return *why = "state shorter than its header", -1;
	if (memcmp(buf, STATE_MAGIC, 4))
		return *why = "not a vnetd device state", -1;
	version = le_get16(buf + 4);
	if (version < 1 || version > STATE_VERSION)
		return *why = "unknown device state version", -1;
	nq = le_get16(buf + 6);
	if (nq != dev->nqueues || le_get16(buf + 8) != dev->params.queue_pairs)
		return *why = "device state of a device with other queues", -1;
	in->active = le_get16(buf + 10);
	if (in->active < 1 || in->active > dev->params.queue_pairs)
		return *why = "bad number of active queue pairs", -1;
	memcpy(in->mac, buf + 12, 6);
	if (mac_is_group(in->mac))
		return *why = "a group address as the device's MAC", -1;
	mode = buf[18];
	n_uc = buf[19];
	n_mc = buf[20];
	if (n_uc > VNET_MAC_TABLE_SIZE || n_mc > VNET_MAC_TABLE_SIZE || buf[21])
		return *why = "bad MAC table sizes", -1;
	need = STATE_HDR + 4 * STATE_KIND + nq * STATE_QUEUE + (n_uc + n_mc) * 6u;
	if (version == 1 ? len != need : len < need)
		return *why = "device state length does not match its contents", -1;
	memset(&in->rss, 0, sizeof(in->rss));
	in->rss_steer = false;
	if (version >= 2 && rss_get(buf + need, len - need, &in->rss, &in->rss_steer, why) < 0)
		return -1;

	off = STATE_HDR;
	for (unsigned k = 0; k < 4; k++, off += STATE_KIND)
		if (get_kind(buf + off, k < 2, &in->kinds[k], why) < 0)
			return -1;
	for (unsigned i = 0; i < nq; i++, off += STATE_QUEUE) {
		in->qwho[i] = buf[off];
		in->qflags[i] = buf[off + 1];
		in->qp[i].max_packets = le_get32(buf + off + 2);
		in->qp[i].max_usecs = le_get32(buf + off + 6);
		if (!valid_queue_who(in->qwho[i], &in->qp[i]) || (in->qflags[i] & ~QFLAG_NOTIFY))
			return *why = "bad queue coalescing state", -1;
		if (in->qwho[i] == COAL_SET_NONE && (in->qp[i].max_packets || in->qp[i].max_usecs))
			return *why = "queue coalescing values nobody set", -1;
	}
	memset(f, 0, sizeof(*f));
	f->promisc = mode & 1;
	f->allmulti = mode >> 1 & 1;
	f->alluni = mode >> 2 & 1;
	f->nomulti = mode >> 3 & 1;
	f->nouni = mode >> 4 & 1;
	f->nobcast = mode >> 5 & 1;
	f->uc_overflow = mode >> 6 & 1;
	f->mc_overflow = mode >> 7 & 1;
	f->n_uc = n_uc;
	f->n_mc = n_mc;
	memcpy(f->uc, buf + off, n_uc * 6u);
	memcpy(f->mc, buf + off + n_uc * 6u, n_mc * 6u);
	return 0;
}

/**
 * vnet_dev_state_load() - validate a whole state stream (hostile input), then apply it
 * @dev: the device, stopped
 * @buf: the stream
 * @len: its bytes
 * @why: set to what was wrong ("ok" on success)
 *
 * Queues keep the loaded coalescing through their first enable; those that owed a
 * notification get one when they are enabled.
 * Return: 0, or -1 with nothing changed.
 */
int vnet_dev_state_load(struct vnet_dev *dev, const uint8_t *buf, size_t len, const char **why)
{
	struct state_in in;

	*why = "ok";
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].vq.started)
			return *why = "device state loaded into a running device", -1;
	if (state_parse(dev, buf, len, &in, why) < 0)
		return -1;
	/* Checked against this device's limits; applied first, as the only step that can fail. */
	if (net_rss_restore(dev, &in.rss, in.rss_steer, why) < 0)
		return -1;
	/* All checked: apply. */
	dev->active_pairs = in.active;
	memcpy(dev->mac, in.mac, 6);
	dev->filter = in.filter;
	dev->host[0] = in.kinds[0];
	dev->host[1] = in.kinds[1];
	dev->last[0] = in.kinds[2];
	dev->last[1] = in.kinds[3];
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		coal_set_params(&q->coal, &in.qp[i], (enum coal_setter)in.qwho[i]);
		coal_restart(&q->coal);
		coal_adapt_stop(&q->adapt);
		if (in.qwho[i] == COAL_SET_ADAPTIVE) {
			/* The controller goes on from the level the source had reached. */
			const struct coal_adapt_counters c = dev_adapt_counters(dev, q);

			coal_adapt_start(&q->adapt, dev_now(dev), &c);
			q->adapt.level = (uint8_t)coal_adapt_level_of(&in.qp[i]);
		}
		q->state_loaded = true;
		q->resume_notify = in.qflags[i] & QFLAG_NOTIFY;
	}
	vnet_dev_publish(dev);
	return 0;
}

/**
 * vnet_dev_send_rarp() - announce a migrated guest's MAC through the backend
 * @dev: the device
 * @mac: the guest's address
 *
 * A broadcast RARP as QEMU's announce sends it, so switches learn the guest's new port.
 * Return: 0, or -1 without a backend or when it refused the frame.
 */
int vnet_dev_send_rarp(struct vnet_dev *dev, const uint8_t mac[6])
{
	/* A 60-byte RARP request as QEMU's announce builds it; an all-zero header (no offloads). */
	struct virtio_net_hdr_v1 hdr;
	uint8_t f[60];
	struct iovec iov = {f, sizeof(f)};

	if (!dev->be_ops)
		return -1;
	memset(&hdr, 0, sizeof(hdr));
	memset(f, 0, sizeof(f));
	memset(f, 0xff, 6);               /* broadcast */
	memcpy(f + 6, mac, 6);            /* from the guest: the switch learns its port */
	f[12] = 0x80, f[13] = 0x35;       /* ETH_P_RARP */
	f[14] = 0, f[15] = 1;             /* hardware type Ethernet */
	f[16] = 0x08, f[17] = 0x00;       /* protocol IPv4 */
	f[18] = 6, f[19] = 4;             /* address lengths */
	f[20] = 0, f[21] = 3;             /* reverse request */
	memcpy(f + 22, mac, 6);           /* sender hardware address; sender IP 0 */
	memcpy(f + 32, mac, 6);           /* target hardware address; target IP 0 */
	return dev->be_ops->transmit(dev->be, &hdr, &iov, 1, 0, sizeof(f)) < 0 ? -1 : 0;
}
