/* SPDX-License-Identifier: MIT */
/* net_rss.c - the device's RSS and hash settings: in effect, restored (hostile), read back. */
#include "dev/rss/net_rss.h"

#include <string.h>

#include "dev/vnet_dev_core.h"
#include "dev/rss/net_rss_internal.h"
#include "dev/rss/rss_cmd_internal.h"

/**
 * net_rss_publish() - publish the RSS state for readers on other threads
 * @dev: the device
 *
 * After every change of the RSS settings (net_rss_set(), net_rss_features()) and of the
 * negotiated features. A seqcount over 64-bit words, like the queues' settings views
 * (queue_view.c): odd while written, each word a release store.
 * Context: the thread that owns the device.
 */
void net_rss_publish(struct vnet_dev *dev)
{
	struct vnet_rss *r = &dev->rss;
	uint64_t w[RSS_VIEW_WORDS] = {0};
	struct rss_view v = {
	    .rss = dev_has(dev, VIRTIO_NET_F_RSS),
	    .hash_report = dev_has(dev, VIRTIO_NET_F_HASH_REPORT),
	    .steering = r->steer,
	    .reporting = r->report,
	    .cfg = r->cfg,
	};
	uint32_t seq = __atomic_load_n(&r->pub_seq, __ATOMIC_RELAXED);

	memcpy(w, &v, sizeof(v));
	__atomic_store_n(&r->pub_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < RSS_VIEW_WORDS; i++)
		__atomic_store_n(&r->pub_w[i], w[i], __ATOMIC_RELEASE);
	__atomic_store_n(&r->pub_seq, seq + 2, __ATOMIC_RELEASE);
}

/**
 * vnet_dev_rss_read() - the RSS state as last published, from any thread, without a lock
 * @dev: the device
 * @out: filled with one consistent copy (never a half-written one)
 */
void vnet_dev_rss_read(const struct vnet_dev *dev, struct rss_view *out)
{
	const struct vnet_rss *r = &dev->rss;
	uint64_t w[RSS_VIEW_WORDS];
	uint32_t s1, s2;

	do {
		s1 = __atomic_load_n(&r->pub_seq, __ATOMIC_ACQUIRE);
		for (unsigned i = 0; i < RSS_VIEW_WORDS; i++)
			w[i] = __atomic_load_n(&r->pub_w[i], __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&r->pub_seq, __ATOMIC_RELAXED);
	} while ((s1 & 1) || s1 != s2);
	memcpy(out, w, sizeof(*out));
}

/**
 * net_rss_set() - put RSS and hash settings in effect, or switch them off
 * @dev: the device
 * @c: validated settings (rss_cmd_parse()); NULL: all off
 * @steer: whether the indirection table picks the RX queue (RSS_CONFIG with hash types)
 *
 * Hashing happens only while it matters: steering, or HASH_REPORT with hash types set. When
 * it stops, the hash fields of the RX header go back to zero (report NONE).
 */
void net_rss_set(struct vnet_dev *dev, const struct rss_config *c, bool steer)
{
	struct vnet_rss *r = &dev->rss;

	if (c) {
		r->cfg = *c;
		toeplitz_key_init(&r->key, c->key, c->key_len);
	} else {
		memset(&r->cfg, 0, sizeof(r->cfg));
	}
	r->steer = c && steer && c->hash_types;
	r->report = c && c->hash_types && dev_has(dev, VIRTIO_NET_F_HASH_REPORT);
	dev->rss_on = r->steer || r->report;
	if (!dev->rss_on) {
		dev->rx_hdr.hash_value = 0;
		dev->rx_hdr.hash_report = 0;
		dev->rx_hdr.padding_reserved = 0;
	}
	net_rss_publish(dev);
}

/**
 * net_rss_limits() - what this device's RSS settings may be (its config space)
 * @dev: the device
 *
 * Return: the limits RSS_CONFIG, HASH_CONFIG and saved settings are checked against.
 */
struct rss_limits net_rss_limits(const struct vnet_dev *dev)
{
	const struct rss_limits lim = {
	    .max_pairs = dev->params.queue_pairs,
	    .max_table_len = RSS_TABLE_MAX,
	    .max_key_len = RSS_KEY_MAX,
	    .supported = RSS_HASH_TYPES_SUPPORTED,
	};

	return lim;
}

/**
 * net_rss_restore() - check saved RSS settings (hostile), then put them in effect
 * @dev: the device
 * @c: the settings (a migration stream's or a state file's); table_len 0: off
 * @steer: they steer (they came from an RSS_CONFIG with hash types)
 * @why: on failure, what was wrong
 *
 * Refused for a device without rss=on unless they are off. Whether the hash is reported
 * follows the negotiated features (again at vnet_dev_set_features()).
 * Return: 0, or -1 with nothing changed.
 */
int net_rss_restore(struct vnet_dev *dev, const struct rss_config *c, bool steer,
			 const char **why)
{
	const struct rss_limits lim = net_rss_limits(dev);

	if (rss_config_check(c, steer, &lim, why) < 0)
		return -1;
	if (c->table_len && !dev->params.rss)
		return *why = "RSS settings for a device without rss=on", -1;
	net_rss_set(dev, c->table_len ? c : NULL, steer);
	return 0;
}

/**
 * net_rss_features() - the negotiated features changed: hash reporting follows them
 * @dev: the device
 *
 * Settings restored before the features were set (a migration destination) report the hash
 * once HASH_REPORT is negotiated; nothing changes for settings the driver made.
 */
void net_rss_features(struct vnet_dev *dev)
{
	struct vnet_rss *r = &dev->rss;

	if (!r->cfg.table_len) {
		net_rss_publish(dev); /* the features readers see */
		return;
	}
	r->report = r->cfg.hash_types && dev_has(dev, VIRTIO_NET_F_HASH_REPORT);
	dev->rss_on = r->steer || r->report;
	if (!r->report) {
		dev->rx_hdr.hash_value = 0;
		dev->rx_hdr.hash_report = 0;
		dev->rx_hdr.padding_reserved = 0;
	}
	net_rss_publish(dev);
}

/**
 * vnet_dev_rss() - the RSS and hash settings the driver made
 * @dev: the device
 * @steering: set to whether the indirection table picks the RX queue
 * @reporting: set to whether received packets carry their hash (HASH_REPORT)
 *
 * Context: the device's thread, or a reader accepting a torn view (the control socket).
 * Return: the last RSS_CONFIG / HASH_CONFIG in effect (all zero: none).
 */
const struct rss_config *vnet_dev_rss(const struct vnet_dev *dev, bool *steering, bool *reporting)
{
	*steering = dev->rss.steer;
	*reporting = dev->rss.report;
	return &dev->rss.cfg;
}

/**
 * vnet_dev_restore_rss() - RSS settings a state file kept, back once the driver runs again
 * @dev: the device, its features negotiated
 * @c: the settings (hostile: checked as a migration stream's); table_len 0: off
 * @steer: they steer (an RSS_CONFIG with hash types)
 * @why: on failure, what was wrong
 *
 * Settings from an RSS_CONFIG bring back its max_tx_vq as the active queue pairs, as the
 * command did.
 * Return: 0, or -1 with nothing changed.
 */
int vnet_dev_restore_rss(struct vnet_dev *dev, const struct rss_config *c, bool steer,
			 const char **why)
{
	if (c->table_len && !dev_has(dev, VIRTIO_NET_F_RSS) && !dev_has(dev, VIRTIO_NET_F_HASH_REPORT))
		return *why = "neither RSS nor HASH_REPORT negotiated", -1;
	if (c->max_tx_vq && !dev_has(dev, VIRTIO_NET_F_RSS))
		return *why = "RSS_CONFIG settings without VIRTIO_NET_F_RSS", -1;
	if (net_rss_restore(dev, c, steer, why) < 0)
		return -1;
	if (c->max_tx_vq)
		dev->active_pairs = c->max_tx_vq;
	dev_sync_pairs(dev); /* a multi-queue tap attaches the pairs' queues */
	return 0;
}
