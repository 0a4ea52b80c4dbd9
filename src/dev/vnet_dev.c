/* SPDX-License-Identifier: MIT */
/* vnet_dev.c - virtio-net device model: creation, features, config space, reset, settings. */
#include "dev/dev.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dev/coal/coal_policy.h"
#include "dev/migration_stream.h"
#include "lib/log.h"
#include "dev/net_ctrl.h"
#include "dev/rss/net_rss.h"
#include "dev/net_rate.h"
#include "dev/net_rx.h"
#include "dev/queue_view_internal.h"
#include "dev/vnet_dev_queue.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"
#include "dev/net_rx_internal.h"
#include "dev/rss/net_rss_internal.h"
#include "dev/vnet_dev_queue_internal.h"

/*
 * The top of the device model: the public vnet_dev_* API (vnet_dev.h) is defined here and calls
 * down into the files below it (vnet_dev_queue.c, net_rx.c, net_tx.c, net_ctrl.c, migration_stream.c,
 * coal_policy.c, notify.c, queue_view.c), none of which calls back up. The exceptions are the
 * queues' lifecycle, kicks and timers, defined in vnet_dev_queue.c (vnet_dev_queue.h), and the
 * receive path's per-packet entry points, defined in net_rx.c (net_rx.h says why).
 */

/* Features every vnetd device can offer, before backend offloads and the operator's mask. */
#define VNET_BASE_FEATURES                                                                         \
	(BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_NET_F_MAC) | BIT_ULL(VIRTIO_NET_F_STATUS) |  \
	 BIT_ULL(VIRTIO_NET_F_CTRL_VQ) | BIT_ULL(VIRTIO_NET_F_CTRL_RX) |                           \
	 BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR) | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF) |                   \
	 BIT_ULL(VIRTIO_RING_F_EVENT_IDX) | BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC) |                 \
	 BIT_ULL(VIRTIO_NET_F_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL) |                   \
	 BIT_ULL(VIRTIO_F_RING_PACKED) | BIT_ULL(VIRTIO_F_IN_ORDER))

/* Features that need the control queue. */
#define VNET_CTRL_FEATURES                                                                         \
	(BIT_ULL(VIRTIO_NET_F_CTRL_RX) | BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR) |                     \
	 BIT_ULL(VIRTIO_NET_F_MQ) | BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |                              \
	 BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) |         \
	 VNET_RSS_FEATURES)

/* RSS and hash reporting (params.rss): both need the control queue. */
#define VNET_RSS_FEATURES (BIT_ULL(VIRTIO_NET_F_RSS) | BIT_ULL(VIRTIO_NET_F_HASH_REPORT))

#define VNET_GUEST_TSO                                                                             \
	(BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_GUEST_UFO) |                       \
	 BIT_ULL(VIRTIO_NET_F_GUEST_USO4) | BIT_ULL(VIRTIO_NET_F_GUEST_USO6))
#define VNET_HOST_TSO                                                                              \
	(BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_UFO) |                         \
	 BIT_ULL(VIRTIO_NET_F_HOST_USO))

static uint64_t compute_offered(const struct vnet_dev *dev)
{
	uint64_t f = VNET_BASE_FEATURES;

	if (dev->params.queue_pairs > 1)
		f |= BIT_ULL(VIRTIO_NET_F_MQ);
	if (dev->params.mtu)
		f |= BIT_ULL(VIRTIO_NET_F_MTU);
	if (dev->params.rss)
		f |= VNET_RSS_FEATURES;
	if (dev->be_ops && dev->be_ops->offload_features) {
		f |= dev->be_ops->offload_features;
		f |= BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS);
	}
	f &= dev->params.features_mask;
	/* Keep the offer self-consistent after masking. */
	if (!(f & BIT_ULL(VIRTIO_NET_F_CTRL_VQ)))
		f &= ~VNET_CTRL_FEATURES;
	if (!(f & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		f &= ~VNET_GUEST_TSO;
	if (!(f & BIT_ULL(VIRTIO_NET_F_CSUM)))
		f &= ~VNET_HOST_TSO;
	if (!(f & BIT_ULL(VIRTIO_NET_F_NOTF_COAL)))
		f &= ~BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL);
	return f;
}

/*
 * The device and its queues, in one mapping: the queues first, then the device, so that what
 * every port touches (queues, the device's first fields) shares pages and the large scratch
 * at the device's end (RX cache, chain iovecs) stays untouched until used.
 */
static size_t dev_queues_size(unsigned nqueues)
{
	size_t a = _Alignof(struct vnet_dev);

	return (nqueues * sizeof(struct vnet_queue) + a - 1) / a * a;
}

static size_t dev_map_size(unsigned nqueues)
{
	return dev_queues_size(nqueues) + sizeof(struct vnet_dev);
}

/**
 * vnet_dev_create() - a device in reset state
 * @params: its static configuration (copied)
 * @env: the owner's clock, timers, notifications, run queue (kept: must outlive the device)
 * @env_ctx: passed to every @env call
 *
 * The device and its queues share one anonymous mapping.
 * Return: the device, or NULL on bad params (logged) or no memory.
 */
struct vnet_dev *vnet_dev_create(const struct vnet_dev_params *params, const struct vnet_env_ops *env,
				 void *env_ctx)
{
	struct vnet_dev *dev;
	void *map;
	unsigned nqueues = 2u * params->queue_pairs + 1;

	if (params->queue_pairs < 1 || params->queue_pairs > VNET_MAX_QUEUE_PAIRS) {
		log_err("queue pairs must be 1..%d", VNET_MAX_QUEUE_PAIRS);
		return NULL;
	}
	/*
	 * Fresh anonymous pages, not the heap: most of a device is scratch (chain iovecs, the RX
	 * cache, ~35 KB) that an idle port never touches, and an untouched page costs no memory.
	 * The queues share the mapping: no heap pointer lives only in memory that leak checkers
	 * do not scan.
	 */
	map = mmap(NULL, dev_map_size(nqueues), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	dev = (struct vnet_dev *)((char *)map + dev_queues_size(nqueues));
	dev->params = *params;
	dev->env = env;
	dev->env_ctx = env_ctx;
	dev->nqueues = nqueues;
	dev->queues = map;
	dev->qmask = ~0ull;
	coal_policy_init(dev);
	net_rate_init(dev);
	vnet_dev_queue_init_all(dev);
	dev->offered = compute_offered(dev);
	vnet_dev_reset(dev);
	return dev;
}

/**
 * vnet_dev_destroy() - free the device (the backend is not touched)
 * @dev: the device, or NULL
 */
void vnet_dev_destroy(struct vnet_dev *dev)
{
	if (!dev)
		return;
	for (unsigned i = 0; i < dev->nqueues; i++)
		vq_free(&dev->queues[i].vq);
	munmap(dev->queues, dev_map_size(dev->nqueues));
}

/**
 * vnet_dev_attach_backend() - set the packet backend
 * @dev: the device
 * @ops: the backend's operations (ignored when @be is NULL)
 * @be: the backend; NULL detaches it (the link goes down)
 *
 * The offer follows the backend's offloads; the backend gets the current guest offloads. Every
 * queue transmits through @be (vnet_dev_attach_queue_backend() gives a pair its own).
 */
void vnet_dev_attach_backend(struct vnet_dev *dev, const struct vnet_backend_ops *ops,
			     struct vnet_backend *be)
{
	dev->be_ops = be ? ops : NULL;
	dev->be = be;
	for (unsigned i = 0; i < dev->nqueues; i++)
		dev->queues[i].be = be;
	dev->be_pairs = 0; /* a new backend: tell it */
	dev_sync_pairs(dev);
	dev->offered = compute_offered(dev);
	if (dev->be_ops && dev->be_ops->set_offloads)
		dev->be_ops->set_offloads(dev->be, dev->guest_offloads);
}

/**
 * vnet_dev_offered_features() - the feature bits offered to the driver
 * @dev: the device
 *
 * Return: base features, the backend's offloads, masked by the operator and kept consistent.
 */
uint64_t vnet_dev_offered_features(const struct vnet_dev *dev)
{
	return dev->offered;
}

/**
 * vnet_dev_set_features() - the features the driver accepted
 * @dev: the device
 * @features: they must be a subset of the offer
 *
 * Sets the header length, guest offloads, queue kinds and ring options that follow from them.
 * Return: 0, or -1 (logged) if not a subset of the offer.
 */
int vnet_dev_set_features(struct vnet_dev *dev, uint64_t features)
{
	if (features & ~dev->offered) {
		log_guest("driver accepted features 0x%llx that were not offered (0x%llx)",
			  (unsigned long long)features, (unsigned long long)dev->offered);
		return -1;
	}
	net_rx_cache_release(dev, &dev->queues[0]); /* reserved under the old features */
	dev->features = features;
	/* As Linux's virtnet_probe(): HASH_REPORT's header whenever it is negotiated. */
	if (dev_has(dev, VIRTIO_NET_F_HASH_REPORT))
		dev->hdr_len = VNET_HDR_HASH_LEN;
	else if (dev_has(dev, VIRTIO_F_VERSION_1) || dev_has(dev, VIRTIO_NET_F_MRG_RXBUF))
		dev->hdr_len = VNET_HDR_LEN;
	else
		dev->hdr_len = VNET_HDR_LEN - 2;
	dev->guest_offloads = features & VNET_GUEST_OFFLOAD_MASK;
	net_rss_features(dev);
	vnet_dev_queue_assign_kinds(dev);
	for (unsigned i = 0; i < dev->nqueues; i++) {
		dev->queues[i].vq.event_idx = dev_has(dev, VIRTIO_RING_F_EVENT_IDX);
		dev->queues[i].vq.indirect = dev_has(dev, VIRTIO_RING_F_INDIRECT_DESC);
		dev->queues[i].vq.packed = dev_has(dev, VIRTIO_F_RING_PACKED);
	}
	if (dev->be_ops && dev->be_ops->set_offloads)
		dev->be_ops->set_offloads(dev->be, dev->guest_offloads);
	return 0;
}

/**
 * vnet_dev_features() - the negotiated features
 * @dev: the device
 *
 * Return: what vnet_dev_set_features() accepted (0 after a reset).
 */
uint64_t vnet_dev_features(const struct vnet_dev *dev)
{
	return dev->features;
}

/**
 * vnet_dev_num_queues() - the queues the device has
 * @dev: the device
 *
 * Return: 2 * queue pairs + 1 (a control queue slot last).
 */
unsigned vnet_dev_num_queues(const struct vnet_dev *dev)
{
	return dev->nqueues;
}

static void fill_config(const struct vnet_dev *dev, struct virtio_net_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->mac, dev->mac, 6);
	cfg->status = htole16(dev->be ? VIRTIO_NET_S_LINK_UP : 0);
	cfg->max_virtqueue_pairs = htole16(dev->params.queue_pairs);
	cfg->mtu = htole16(dev->params.mtu ? dev->params.mtu : 1500);
	if (dev->offered & VNET_RSS_FEATURES) {
		cfg->rss_max_key_size = RSS_KEY_MAX;
		cfg->supported_hash_types = htole32(RSS_HASH_TYPES_SUPPORTED);
	}
	if (dev->offered & BIT_ULL(VIRTIO_NET_F_RSS))
		cfg->rss_max_indirection_table_length = htole16(RSS_TABLE_MAX);
}

/* The config space's length: the RSS fields exist only when RSS or HASH_REPORT is offered. */
static uint32_t config_len(const struct vnet_dev *dev)
{
	return dev->offered & VNET_RSS_FEATURES ? (uint32_t)sizeof(struct virtio_net_config)
						: VIRTIO_NET_CONFIG_BASE_LEN;
}

/**
 * vnet_dev_config_read() - read the device's config space
 * @dev: the device
 * @offset: byte offset into struct virtio_net_config
 * @buf: the bytes go here; what lies beyond the config space reads as zero
 * @len: bytes wanted
 *
 * Return: the bytes copied from the config space.
 */
uint32_t vnet_dev_config_read(const struct vnet_dev *dev, uint32_t offset, void *buf, uint32_t len)
{
	struct virtio_net_config cfg;
	uint32_t n = 0;

	fill_config(dev, &cfg);
	memset(buf, 0, len);
	if (offset < config_len(dev)) {
		n = config_len(dev) - offset;
		if (n > len)
			n = len;
		memcpy(buf, (const uint8_t *)&cfg + offset, n);
	}
	return n;
}

/**
 * vnet_dev_config_write() - the driver writes the config space
 * @dev: the device
 * @offset: byte offset
 * @buf: the bytes
 * @len: their count
 *
 * Only the mac field is writable, and only without CTRL_MAC_ADDR (legacy drivers), and only
 * to a station address (mac_is_group(): checked on the address the write leaves).
 * Return: 0, or -1 (logged) for anything else.
 */
int vnet_dev_config_write(struct vnet_dev *dev, uint32_t offset, const void *buf, uint32_t len)
{
	uint8_t mac[6];

	/* Legacy drivers without CTRL_MAC_ADDR may write the mac field; nothing else is writable. */
	if (offset >= 6 || len > 6 - offset || dev_has(dev, VIRTIO_NET_F_CTRL_MAC_ADDR)) {
		log_guest("config write of %u bytes at offset %u refused", len, offset);
		return -1;
	}
	/* Writes may come a byte at a time: what is checked is the address they leave. */
	memcpy(mac, dev->mac, 6);
	memcpy(mac + offset, buf, len);
	if (mac_is_group(mac)) {
		log_guest("config write of %u bytes at offset %u refused: a group address as the "
			  "device's MAC", len, offset);
		return -1;
	}
	memcpy(dev->mac, mac, 6);
	return 0;
}

/**
 * vnet_dev_reset() - device reset
 * @dev: the device
 *
 * Started queues stop (held completions signalled first); features, MAC, receive filter and
 * every coalescing parameter go back to their initial values (host defaults come back only
 * with coal_persist). Frames the backend held for the guest's RX are dropped (ops->reset).
 */
void vnet_dev_reset(struct vnet_dev *dev)
{
	/* Completions the driver can already see are signalled before the queues go. */
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].vq.started)
			vnet_dev_queue_stop(dev, i);
	if (dev->be_ops && dev->be_ops->reset)
		dev->be_ops->reset(dev->be);
	dev->features = 0;
	dev->hdr_len = VNET_HDR_LEN;
	dev->guest_offloads = 0;
	dev->active_pairs = 1;
	memcpy(dev->mac, dev->params.mac, 6);
	memset(&dev->filter, 0, sizeof(dev->filter));
	dev->filter.promisc = true;
	net_rss_set(dev, NULL, false); /* spec: every hash type off, report NONE */
	dev_sync_pairs(dev);
	coal_policy_reset(dev);
	vnet_dev_queue_assign_kinds(dev);
	for (unsigned i = 0; i < dev->nqueues; i++)
		vnet_dev_queue_reset(dev, &dev->queues[i]);
	vnet_dev_publish(dev);
}

/**
 * vnet_dev_set_dirty_log() - log every guest page the device writes, or stop
 * @dev: the device
 * @log: the dirty log (live migration: VHOST_F_LOG_ALL with a log base), or NULL to stop;
 *       it stays the caller's and must outlive its use here
 */
void vnet_dev_set_dirty_log(struct vnet_dev *dev, struct dirty_log *log)
{
	dev->dirty_log = log;
	for (unsigned i = 0; i < dev->nqueues; i++)
		dev->queues[i].vq.log = log;
}

/**
 * vnet_dev_mac() - the device's current MAC address
 * @dev: the device
 *
 * Return: 6 bytes (the driver may have changed them from the configured one).
 */
const uint8_t *vnet_dev_mac(const struct vnet_dev *dev)
{
	return dev->mac;
}

/**
 * vnet_dev_link_up() - whether the link is up
 * @dev: the device
 *
 * Return: true while a backend is attached.
 */
bool vnet_dev_link_up(const struct vnet_dev *dev)
{
	return dev->be != NULL;
}

/**
 * vnet_dev_offload_stats() - what the device's backend did with frames that ask for offloads
 * @dev: the device
 * @out: its counters (backend.h)
 *
 * From any thread: the backend's counters are read torn-free.
 *
 * Return: false (out untouched) when the backend keeps none (a tap: the kernel does the work).
 */
bool vnet_dev_offload_stats(const struct vnet_dev *dev, struct vnet_offload_stats *out)
{
	if (!dev->be || !dev->be_ops || !dev->be_ops->offload_stats)
		return false;
	dev->be_ops->offload_stats(dev->be, out);
	return true;
}

/**
 * vnet_dev_active_pairs() - the queue pairs the driver uses (CTRL_MQ)
 * @dev: the device
 *
 * Return: 1 .. queue pairs.
 */
uint16_t vnet_dev_active_pairs(const struct vnet_dev *dev)
{
	return dev->active_pairs;
}

/**
 * vnet_queue_lateness() - the queue's deadline lateness as a cumulative histogram
 * @q: the queue
 * @out: filled in; its buckets add up to count
 *
 * The one reader of what notify.c records.
 * Context: any thread (relaxed loads of single-writer counters).
 */
void vnet_queue_lateness(const struct vnet_queue *q, struct vnet_lateness_hist *out)
{
	uint64_t sum = 0;

	/* Each bucket once, and the count from those very values: a Prometheus histogram whose
	 * buckets add up even while the worker records (sum_ns may be one value ahead). */
	for (unsigned b = 0; b < VNET_LATENESS_BUCKETS; b++) {
		sum += stat_read(&q->stats.lateness_bucket[b]);
		out->cumulative[b] = sum;
	}
	out->count = sum + stat_read(&q->stats.lateness_bucket[VNET_LATENESS_BUCKETS]);
	out->sum_ns = stat_read(&q->stats.lateness_sum_ns);
}

/**
 * vnet_queue_kind_name() - a queue kind's name for logs and the control socket
 * @kind: the kind
 *
 * Return: "rx", "tx" or "ctrl".
 */
const char *vnet_queue_kind_name(enum vnet_queue_kind kind)
{
	return kind == VNET_QUEUE_RX ? "rx" : kind == VNET_QUEUE_TX ? "tx" : "ctrl";
}

/* ---- Control queue (net_ctrl.c), coalescing policy (coal_policy.c), migration (migration_stream.c) ---- */

/**
 * vnet_dev_rx_filter() - the receive filter and RX mode the driver set
 * @dev: the device
 *
 * Return: the filter (after a reset: promiscuous only).
 */
const struct vnet_rx_filter *vnet_dev_rx_filter(const struct vnet_dev *dev)
{
	return &dev->filter;
}

/**
 * vnet_dev_set_poll() - the device's poll mode
 * @dev: the device
 * @us: microseconds a TX queue keeps polling after its last run that found work; 0: off (kicks
 *      only); VNET_POLL_AUTO: adaptive (net_tx.c), each queue's window up to
 *      VNET_POLL_AUTO_MAX_US
 * @budget_ns: adaptive: how long a queue may poll an empty ring for each packet it moves
 *
 * While a queue polls, its kicks stay suppressed and it waits in the owner's run queue (so the
 * owner looks at its other fds without sleeping); once the window passed with an empty ring,
 * kicks are enabled again, with the re-check for chains that raced in. Queues that found no work
 * never poll. Takes effect at each queue's next run. Context: the thread that owns the device
 * (or with it parked).
 */
void vnet_dev_set_poll(struct vnet_dev *dev, unsigned us, unsigned budget_ns)
{
	const bool was_auto = dev->poll_auto;

	dev->poll_auto = us == VNET_POLL_AUTO;
	dev->poll_ns = (uint64_t)(dev->poll_auto ? VNET_POLL_AUTO_MAX_US : us) * 1000u;
	dev->poll_budget_ns = budget_ns;
	if (dev->poll_auto == was_auto)
		return;
	/* Another mode (a port moved to another worker): the adaptive state starts afresh. */
	for (unsigned i = 0; i < dev->nqueues; i++)
		queue_poll_forget(&dev->queues[i]);
}

/**
 * vnet_dev_stall_guard() - the port's stall guard settings
 * @dev: the device
 *
 * Return: the settings in effect.
 */
const struct vnet_stall_guard *vnet_dev_stall_guard(const struct vnet_dev *dev)
{
	return &dev->guard;
}

/**
 * vnet_dev_coal_persist() - whether host coalescing defaults survive a device reset
 * @dev: the device
 *
 * Return: params.coal_persist.
 */
bool vnet_dev_coal_persist(const struct vnet_dev *dev)
{
	return dev->params.coal_persist;
}

