/* SPDX-License-Identifier: MIT */
/* net_ctrl.c - control virtqueue: RX mode, MAC, MQ, guest offloads and notification coalescing. */
#include "dev/net_ctrl.h"

#include <endian.h>
#include <string.h>

#include "dev/coal/coal_policy.h"
#include "lib/le_bytes.h"
#include "lib/log.h"
#include "dev/rss/net_rss.h"
#include "dev/coal/notify.h"
#include "dev/dev.h" /* the public functions defined here */
#include "dev/vnet_dev_core.h"
#include "dev/rss/net_rss_internal.h"
#include "dev/rss/rss_cmd_internal.h"

#define CTRL_MAX_IN 4096 /* bytes of one command we read (a full MAC table fits) */

static uint8_t ctrl_rx(struct vnet_dev *dev, uint8_t cmd, const uint8_t *p, size_t len)
{
	struct vnet_rx_filter *f = &dev->filter;
	bool on;

	if (!dev_has(dev, VIRTIO_NET_F_CTRL_RX) || len != 1)
		return VIRTIO_NET_ERR;
	on = p[0] != 0;
	switch (cmd) {
	case VIRTIO_NET_CTRL_RX_PROMISC:
		f->promisc = on;
		break;
	case VIRTIO_NET_CTRL_RX_ALLMULTI:
		f->allmulti = on;
		break;
	case VIRTIO_NET_CTRL_RX_ALLUNI:
		f->alluni = on;
		break;
	case VIRTIO_NET_CTRL_RX_NOMULTI:
		f->nomulti = on;
		break;
	case VIRTIO_NET_CTRL_RX_NOUNI:
		f->nouni = on;
		break;
	case VIRTIO_NET_CTRL_RX_NOBCAST:
		f->nobcast = on;
		break;
	default:
		return VIRTIO_NET_ERR;
	}
	return VIRTIO_NET_OK;
}

/* Parse one {le32 entries; u8 macs[entries][6]} table; returns bytes used or 0 if truncated. */
static size_t parse_mac_table(const uint8_t *p, size_t len, uint8_t (*table)[6], unsigned *n,
			      bool *overflow)
{
	uint32_t entries;

	if (len < 4)
		return 0;
	entries = le_get32(p);
	if (entries > (len - 4) / 6)
		return 0;
	*overflow = entries > VNET_MAC_TABLE_SIZE;
	*n = *overflow ? 0 : entries;
	memcpy(table, p + 4, (size_t)*n * 6);
	return 4 + (size_t)entries * 6;
}

static uint8_t ctrl_mac(struct vnet_dev *dev, uint8_t cmd, const uint8_t *p, size_t len)
{
	struct vnet_rx_filter f = dev->filter;
	size_t used, mc_used;

	switch (cmd) {
	case VIRTIO_NET_CTRL_MAC_ADDR_SET:
		/* A station address is unicast (mac_is_group()). */
		if (!dev_has(dev, VIRTIO_NET_F_CTRL_MAC_ADDR) || len != 6 || mac_is_group(p))
			return VIRTIO_NET_ERR;
		memcpy(dev->mac, p, 6);
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MAC_TABLE_SET:
		if (!dev_has(dev, VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		used = parse_mac_table(p, len, f.uc, &f.n_uc, &f.uc_overflow);
		if (!used)
			return VIRTIO_NET_ERR;
		mc_used = parse_mac_table(p + used, len - used, f.mc, &f.n_mc, &f.mc_overflow);
		if (!mc_used || used + mc_used != len)
			return VIRTIO_NET_ERR;
		dev->filter = f; /* all or nothing */
		return VIRTIO_NET_OK;
	default:
		return VIRTIO_NET_ERR;
	}
}

/**
 * vnet_dev_restore_rx() - put back the receive filter, RX mode and MAC from before a restart
 * @dev: the device
 * @f: the filter and RX mode (applied only with CTRL_RX negotiated)
 * @mac: the address CTRL_MAC_ADDR_SET gave (applied only with CTRL_MAC_ADDR); NULL: keep it
 *
 * Return: 0, or -1 (nothing changed) for a table over VNET_MAC_TABLE_SIZE, an overflowed
 * one with entries, or a group address for the MAC (CTRL_MAC_ADDR_SET refuses those too).
 */
int vnet_dev_restore_rx(struct vnet_dev *dev, const struct vnet_rx_filter *f, const uint8_t *mac)
{
	if (f->n_uc > VNET_MAC_TABLE_SIZE || f->n_mc > VNET_MAC_TABLE_SIZE ||
	    (f->uc_overflow && f->n_uc) || (f->mc_overflow && f->n_mc) || (mac && mac_is_group(mac)))
		return -1;
	/* What CTRL_RX / CTRL_MAC_TABLE_SET and CTRL_MAC_ADDR_SET could have set, no more. */
	if (dev_has(dev, VIRTIO_NET_F_CTRL_RX))
		dev->filter = *f;
	if (mac && dev_has(dev, VIRTIO_NET_F_CTRL_MAC_ADDR))
		memcpy(dev->mac, mac, 6);
	return 0;
}

/* RSS_CONFIG (with RSS) or HASH_CONFIG (with HASH_REPORT): all or nothing. */
static uint8_t ctrl_rss(struct vnet_dev *dev, bool hash_config, const uint8_t *p, size_t len)
{
	const struct rss_limits lim = net_rss_limits(dev);
	struct rss_config c;
	const char *why;

	if (!dev_has(dev, hash_config ? VIRTIO_NET_F_HASH_REPORT : VIRTIO_NET_F_RSS))
		return VIRTIO_NET_ERR;
	if (rss_cmd_parse(p, len, hash_config, &lim, &c, &why) < 0) {
		log_guest("%s refused: %s", hash_config ? "HASH_CONFIG" : "RSS_CONFIG", why);
		return VIRTIO_NET_ERR;
	}
	if (!hash_config)
		dev->active_pairs = c.max_tx_vq; /* as QEMU: the pairs in use */
	net_rss_set(dev, &c, !hash_config);
	dev_sync_pairs(dev);
	return VIRTIO_NET_OK;
}

static uint8_t ctrl_mq(struct vnet_dev *dev, uint8_t cmd, const uint8_t *p, size_t len)
{
	uint16_t pairs;

	if (cmd == VIRTIO_NET_CTRL_MQ_RSS_CONFIG || cmd == VIRTIO_NET_CTRL_MQ_HASH_CONFIG)
		return ctrl_rss(dev, cmd == VIRTIO_NET_CTRL_MQ_HASH_CONFIG, p, len);
	if (!dev_has(dev, VIRTIO_NET_F_MQ) || cmd != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || len != 2)
		return VIRTIO_NET_ERR;
	pairs = le_get16(p);
	if (pairs < VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MIN || pairs > dev->params.queue_pairs)
		return VIRTIO_NET_ERR;
	dev->active_pairs = pairs;
	if (dev->rss_on || dev->rss.cfg.key_len)
		net_rss_set(dev, NULL, false); /* as QEMU: a pair count ends RSS */
	dev_sync_pairs(dev);
	return VIRTIO_NET_OK;
}

static uint8_t ctrl_guest_offloads(struct vnet_dev *dev, uint8_t cmd, const uint8_t *p,
				   size_t len)
{
	uint64_t v;

	if (!dev_has(dev, VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) ||
	    cmd != VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET || len != 8)
		return VIRTIO_NET_ERR;
	memcpy(&v, p, 8);
	v = le64toh(v);
	if (v & ~(dev->features & VNET_GUEST_OFFLOAD_MASK))
		return VIRTIO_NET_ERR;
	dev->guest_offloads = v;
	if (dev->be_ops && dev->be_ops->set_offloads)
		dev->be_ops->set_offloads(dev->be, v);
	return VIRTIO_NET_OK;
}

/* The queue a VQ_SET / VQ_GET names, or NULL (control queue, out of range, not enabled). */
static struct vnet_queue *coal_vq(struct vnet_dev *dev, const uint8_t *p)
{
	struct vnet_queue *q = dev_queue(dev, le_get16(p)); /* reserved: ignored */

	if (!q || q->kind == VNET_QUEUE_CTRL || !q->enabled)
		return NULL;
	return q;
}

static uint8_t ctrl_notf_coal(struct vnet_dev *dev, uint8_t cmd, const uint8_t *p, size_t len,
			      uint8_t *out, size_t out_len, size_t *written)
{
	struct virtio_net_ctrl_coal wire;
	struct coal_params params;
	enum vnet_queue_kind kind;
	struct vnet_queue *q;

	if (!dev_has(dev, VIRTIO_NET_F_NOTF_COAL) && !dev_has(dev, VIRTIO_NET_F_VQ_NOTF_COAL))
		return VIRTIO_NET_ERR;
	switch (cmd) {
	case VIRTIO_NET_CTRL_NOTF_COAL_TX_SET:
	case VIRTIO_NET_CTRL_NOTF_COAL_RX_SET:
		if (!dev_has(dev, VIRTIO_NET_F_NOTF_COAL) || len != sizeof(wire))
			return VIRTIO_NET_ERR;
		params.max_packets = le_get32(p);
		params.max_usecs = le_get32(p + 4);
		kind = cmd == VIRTIO_NET_CTRL_NOTF_COAL_TX_SET ? VNET_QUEUE_TX : VNET_QUEUE_RX;
		coal_policy_set_kind(dev, kind, &params, COAL_SET_GUEST);
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET:
		if (!dev_has(dev, VIRTIO_NET_F_VQ_NOTF_COAL) ||
		    len != sizeof(struct virtio_net_ctrl_coal_vq))
			return VIRTIO_NET_ERR;
		q = coal_vq(dev, p);
		if (!q)
			return VIRTIO_NET_ERR;
		params.max_packets = le_get32(p + 4);
		params.max_usecs = le_get32(p + 8);
		coal_policy_apply(dev, q, &params, COAL_SET_GUEST);
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET:
		if (!dev_has(dev, VIRTIO_NET_F_VQ_NOTF_COAL) || len != 4 || out_len < sizeof(wire))
			return VIRTIO_NET_ERR;
		q = coal_vq(dev, p);
		if (!q)
			return VIRTIO_NET_ERR;
		wire.max_packets = htole32(q->coal.params.max_packets);
		wire.max_usecs = htole32(q->coal.params.max_usecs);
		memcpy(out, &wire, sizeof(wire));
		*written = sizeof(wire);
		return VIRTIO_NET_OK;
	default:
		return VIRTIO_NET_ERR;
	}
}

/**
 * vnet_dev_ctrl_execute() - run one control command
 * @dev: the device
 * @in: class, command, then the payload
 * @in_len: bytes of @in
 * @out: command output (VQ_GET) goes here
 * @out_len: room in @out
 * @out_written: set to the output bytes written
 *
 * Return: the ack byte, VIRTIO_NET_OK or VIRTIO_NET_ERR (logged).
 */
uint8_t vnet_dev_ctrl_execute(struct vnet_dev *dev, const uint8_t *in, size_t in_len, uint8_t *out,
			 size_t out_len, size_t *out_written)
{
	const uint8_t *p = in + 2;
	size_t len;
	uint8_t ack;

	*out_written = 0;
	if (!dev_has(dev, VIRTIO_NET_F_CTRL_VQ) || in_len < 2)
		return VIRTIO_NET_ERR;
	len = in_len - 2;
	switch (in[0]) {
	case VIRTIO_NET_CTRL_RX:
		ack = ctrl_rx(dev, in[1], p, len);
		break;
	case VIRTIO_NET_CTRL_MAC:
		ack = ctrl_mac(dev, in[1], p, len);
		break;
	case VIRTIO_NET_CTRL_MQ:
		ack = ctrl_mq(dev, in[1], p, len);
		break;
	case VIRTIO_NET_CTRL_GUEST_OFFLOADS:
		ack = ctrl_guest_offloads(dev, in[1], p, len);
		break;
	case VIRTIO_NET_CTRL_NOTF_COAL:
		ack = ctrl_notf_coal(dev, in[1], p, len, out, out_len, out_written);
		break;
	default:
		ack = VIRTIO_NET_ERR;
		break;
	}
	if (ack != VIRTIO_NET_OK)
		log_guest("control command class %u cmd %u (%zu bytes) answered ERR", in[0], in[1],
			  len);
	return ack;
}

/*
 * Execute the command in q->chain and write the ack and result into its writable part; returns
 * the used length. Layout (spec struct virtio_net_ctrl: ..., u8 ack, command-specific-result[]):
 * the ack is the FIRST writable byte and the result follows it. Linux adds its status sg before
 * the result sg (virtnet_send_command_reply()) and QEMU writes the ack at offset 0 of the
 * writable part. The used length is what the device wrote from the start of the writable part:
 * 1 + result bytes (QEMU reports 1 for its result-less commands), never the whole area.
 */
static uint32_t ctrl_run_chain(struct vnet_dev *dev, struct vnet_queue *q)
{
	const struct vq_chain *c = q->chain;
	const struct iovec *w = &c->iov[c->nread];
	uint8_t in[CTRL_MAX_IN], out[64], ack;
	size_t in_len, written = 0;

	if (c->write_len < 1) {
		log_guest("queue %u: control command without a writable ack byte", q->vq.index);
		return 0;
	}
	in_len = iov_copy_from(c->iov, c->nread, 0, in, sizeof(in));
	if (c->read_len > sizeof(in)) {
		log_guest("queue %u: control command of %llu bytes too long", q->vq.index,
			  (unsigned long long)c->read_len);
		ack = VIRTIO_NET_ERR;
	} else {
		ack = vnet_dev_ctrl_execute(dev, in, in_len, out, sizeof(out), &written);
	}
	if (written > c->write_len - 1) {
		written = 0; /* no room for the result after the ack */
		ack = VIRTIO_NET_ERR;
	}
	iov_copy_to(w, c->nwrite, 0, &ack, 1);
	iov_copy_to(w, c->nwrite, 1, out, written);
	return (uint32_t)(1 + written);
}

/**
 * net_ctrl_process() - execute the control commands the driver posted, one budget
 * @dev: the device
 * @q: its control queue
 *
 * At most VNET_BUDGET_CTRL commands; each batch is published and its notification decided.
 * Return: true if it stopped at the budget with commands left (the caller schedules a run).
 */
bool net_ctrl_process(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint32_t total = 0;

	vq_kick_disable(&q->vq);
	for (;;) {
		uint32_t done = 0;

		while (done < VNET_BUDGET_CTRL - total && vq_pop(&q->vq, q->chain) == 1) {
			vq_push(&q->vq, q->chain->head, ctrl_run_chain(dev, q));
			done++;
		}
		if (done) {
			vq_publish(&q->vq);
			notify_decide(dev, q, NOTIFY_COMPLETED, done);
		}
		total += done;
		if (q->vq.broken)
			return false;
		if (total >= VNET_BUDGET_CTRL)
			return true; /* yield: a driver that floods its control queue waits its turn */
		if (!vq_kick_enable(&q->vq))
			return false;
		vq_kick_disable(&q->vq);
	}
}
