/* vnet_dev.c - virtio-net device model: features, config space, queue lifecycle, kicks, timers. */
#include "vnet_dev_internal.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"

/* Features every vnetd device can offer, before backend offloads and the operator's mask. */
#define VNET_BASE_FEATURES                                                                         \
	(BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_NET_F_MAC) | BIT_ULL(VIRTIO_NET_F_STATUS) |  \
	 BIT_ULL(VIRTIO_NET_F_CTRL_VQ) | BIT_ULL(VIRTIO_NET_F_CTRL_RX) |                           \
	 BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR) | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF) |                   \
	 BIT_ULL(VIRTIO_RING_F_EVENT_IDX) | BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC) |                 \
	 BIT_ULL(VIRTIO_NET_F_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL))

/* Features that need the control queue. */
#define VNET_CTRL_FEATURES                                                                         \
	(BIT_ULL(VIRTIO_NET_F_CTRL_RX) | BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR) |                     \
	 BIT_ULL(VIRTIO_NET_F_MQ) | BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |                              \
	 BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS))

#define VNET_GUEST_TSO                                                                             \
	(BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_GUEST_UFO))
#define VNET_HOST_TSO                                                                              \
	(BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_UFO))

static void assign_queue_kinds(struct vnet_dev *dev);

static uint64_t compute_offered(const struct vnet_dev *dev)
{
	uint64_t f = VNET_BASE_FEATURES;

	if (dev->params.queue_pairs > 1)
		f |= BIT_ULL(VIRTIO_NET_F_MQ);
	if (dev->params.mtu)
		f |= BIT_ULL(VIRTIO_NET_F_MTU);
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

static void queue_reset(struct vnet_dev *dev, struct vnet_queue *q)
{
	if (q->timer_deadline_ns)
		dev->env->arm_timer(dev->env_ctx, q->vq.index, 0);
	vq_reset(&q->vq);
	q->vq.log = dev->dirty_log;
	q->enabled = false;
	q->timer_deadline_ns = q->coal_deadline_ns = q->tx_deadline_ns = 0;
	q->tx_blocked = q->rx_waiting = q->reinit = false;
	q->state_loaded = q->resume_notify = false;
	/* q->scheduled stays: the owner's run queue still holds the entry, which clears it. */
	q->rx_unflushed = 0;
	coal_restart(&q->coal);
	coal_policy_queue_default(dev, q);
}

/*
 * The queue broke: vq_mark_broken() calls this once per break (a queue stays broken until it
 * is started again). Tell the transport, which signals its error fd.
 */
static void dev_queue_broken(void *ctx, unsigned qidx)
{
	struct vnet_dev *dev = ctx;
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return;
	/* Nothing is decided for a broken queue any more: a pending deadline would re-fire. */
	q->coal_deadline_ns = q->tx_deadline_ns = 0;
	queue_rearm_timer(dev, q);
	queue_publish(q);
	if (dev->env->queue_error)
		dev->env->queue_error(dev->env_ctx, qidx);
}

/* The queue stopped at its budget with work left: ask the owner to run it again later. */
static void dev_schedule(struct vnet_dev *dev, struct vnet_queue *q)
{
	stat_inc(&q->stats.yields);
	if (q->scheduled || !dev->env->schedule)
		return;
	/* A full run queue (cannot happen: one entry per queue fits) must not strand the queue. */
	q->scheduled = dev->env->schedule(dev->env_ctx, q->vq.index);
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
	coal_policy_init(dev);
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		q->vq.index = i;
		q->chain = &dev->chain;
		q->vq.on_broken = dev_queue_broken;
		q->vq.owner_ctx = dev;
		q->kind = i + 1 == dev->nqueues ? VNET_QUEUE_CTRL
			  : (i & 1)             ? VNET_QUEUE_TX
						: VNET_QUEUE_RX;
	}
	dev->offered = compute_offered(dev);
	vnet_dev_reset(dev);
	return dev;
}

void vnet_dev_destroy(struct vnet_dev *dev)
{
	if (!dev)
		return;
	munmap(dev->queues, dev_map_size(dev->nqueues));
}

void vnet_dev_attach_backend(struct vnet_dev *dev, const struct vnet_backend_ops *ops,
			     struct vnet_backend *be)
{
	dev->be_ops = be ? ops : NULL;
	dev->be = be;
	dev->offered = compute_offered(dev);
	if (dev->be_ops && dev->be_ops->set_offloads)
		dev->be_ops->set_offloads(dev->be, dev->guest_offloads);
}

uint64_t vnet_dev_offered_features(const struct vnet_dev *dev)
{
	return dev->offered;
}

int vnet_dev_set_features(struct vnet_dev *dev, uint64_t features)
{
	if (features & ~dev->offered) {
		log_guest("driver accepted features 0x%llx that were not offered (0x%llx)",
			  (unsigned long long)features, (unsigned long long)dev->offered);
		return -1;
	}
	net_rx_cache_release(dev, &dev->queues[0]); /* reserved under the old features */
	dev->features = features;
	dev->hdr_len = dev_has(dev, VIRTIO_F_VERSION_1) || dev_has(dev, VIRTIO_NET_F_MRG_RXBUF)
			       ? VNET_HDR_LEN
			       : VNET_HDR_LEN - 2;
	dev->guest_offloads = features & VNET_GUEST_OFFLOAD_MASK;
	assign_queue_kinds(dev);
	for (unsigned i = 0; i < dev->nqueues; i++) {
		dev->queues[i].vq.event_idx = dev_has(dev, VIRTIO_RING_F_EVENT_IDX);
		dev->queues[i].vq.indirect = dev_has(dev, VIRTIO_RING_F_INDIRECT_DESC);
	}
	if (dev->be_ops && dev->be_ops->set_offloads)
		dev->be_ops->set_offloads(dev->be, dev->guest_offloads);
	return 0;
}

uint64_t vnet_dev_features(const struct vnet_dev *dev)
{
	return dev->features;
}

unsigned vnet_dev_num_queues(const struct vnet_dev *dev)
{
	return dev->nqueues;
}

unsigned vnet_dev_ctrl_queue_index(const struct vnet_dev *dev)
{
	return dev_has(dev, VIRTIO_NET_F_MQ) ? 2u * dev->params.queue_pairs : 2u;
}

struct vnet_queue *vnet_dev_queue(struct vnet_dev *dev, unsigned qidx)
{
	return qidx < dev->nqueues ? &dev->queues[qidx] : NULL;
}

/* Without MQ the control queue sits at index 2: give that slot the control role. */
static void assign_queue_kinds(struct vnet_dev *dev)
{
	unsigned ctrl = vnet_dev_ctrl_queue_index(dev);

	for (unsigned i = 0; i < dev->nqueues; i++)
		dev->queues[i].kind = i == ctrl ? VNET_QUEUE_CTRL
				      : (i & 1) ? VNET_QUEUE_TX
						: VNET_QUEUE_RX;
	vnet_dev_publish(dev); /* the kinds are part of the queues' views */
}

int vnet_dev_queue_start(struct vnet_dev *dev, unsigned qidx, const struct guest_mem *mem)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return -1;
	assign_queue_kinds(dev);
	q->vq.event_idx = dev_has(dev, VIRTIO_RING_F_EVENT_IDX);
	q->vq.indirect = dev_has(dev, VIRTIO_RING_F_INDIRECT_DESC);
	if (vq_start(&q->vq, mem) < 0) {
		queue_publish(q);
		return -1;
	}
	/* Rings set up while the queue is disabled: the driver set the queue up anew. */
	if (!q->enabled)
		q->reinit = true;
	q->rx_waiting = q->kind == VNET_QUEUE_RX;
	queue_publish(q);
	return 0;
}

/*
 * Nothing the driver can see may wait for a notification that never comes once the queue stops
 * or is disabled: publish RX packets and signal held completions (the driver's suppression
 * still applies).
 */
static void queue_flush_held(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t before = q->stats.notifications;

	if (!q->vq.started || q->vq.broken)
		return;
	if (q->kind == VNET_QUEUE_RX && q->rx_unflushed)
		net_rx_flush_queue(dev, q);
	notify_decide(dev, q, NOTIFY_STOP, 0);
	stat_add(&q->stats.stop_notifications, q->stats.notifications - before);
}

uint16_t vnet_dev_queue_stop(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return 0;
	queue_flush_held(dev, q);
	if (qidx == 0)
		net_rx_cache_release(dev, q); /* reserved, unused RX buffers go back to the ring */
	q->tx_blocked = false; /* the chain the backend refused was given back already */
	if (q->timer_deadline_ns)
		dev->env->arm_timer(dev->env_ctx, qidx, 0);
	q->timer_deadline_ns = q->coal_deadline_ns = q->tx_deadline_ns = 0;
	coal_restart(&q->coal);
	vq_stop(&q->vq);
	queue_publish(q);
	return q->vq.last_avail;
}

void vnet_dev_queue_enable(struct vnet_dev *dev, unsigned qidx, bool enable)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q || q->enabled == enable)
		return;
	if (!enable) {
		queue_flush_held(dev, q);
		q->enabled = false;
		queue_publish(q);
		return;
	}
	q->enabled = true;
	/*
	 * Virtio re-enable (rings set up anew while disabled): the last TX_SET / RX_SET, else 0.
	 * A vhost-user enable cycle on the same rings (e.g. QEMU switching queue pairs) keeps the
	 * queue's own values (VQ_SET). Either way counting starts afresh.
	 */
	if (q->reinit && !q->state_loaded)
		coal_policy_queue_default(dev, q);
	q->reinit = q->state_loaded = false;
	queue_publish(q);
	coal_restart(&q->coal);
	q->coal_deadline_ns = 0;
	queue_rearm_timer(dev, q);
	if (q->resume_notify) {
		/* Migrated while completions were held: the driver may be waiting for this. */
		q->resume_notify = false;
		dev->env->notify(dev->env_ctx, qidx);
		stat_inc(&q->stats.notifications);
	}
	if (q->kind == VNET_QUEUE_RX)
		q->rx_waiting = true;
	vnet_dev_kick(dev, qidx);
}

/* One budget of TX work (whatever started it: kick, TX timer, resume); schedules the rest. */
static void tx_run(struct vnet_dev *dev, struct vnet_queue *q)
{
	if (net_tx_process(dev, q))
		dev_schedule(dev, q);
}

/* One budget of the queue's work; schedules the rest. */
static void queue_work(struct vnet_dev *dev, struct vnet_queue *q)
{
	bool more = false;

	switch (q->kind) {
	case VNET_QUEUE_RX:
		/* Waiting but nothing posted yet: re-arm the kick (avail_event), then re-check, or a
		 * run that found the ring empty would leave a stale event and lose the next kick. */
		if (q->rx_waiting && (vq_has_avail(&q->vq) || vq_kick_enable(&q->vq))) {
			q->rx_waiting = false;
			if (dev->be_ops && dev->be_ops->rx_resume)
				more = dev->be_ops->rx_resume(dev->be);
		}
		/* RX kicks only matter while a packet waits for buffers (rx_wait_for_buffers). */
		if (!q->rx_waiting && !more)
			vq_kick_disable(&q->vq);
		break;
	case VNET_QUEUE_TX:
		if (dev->params.tx_mode == VNET_TX_TIMER && !q->tx_blocked) {
			if (!q->tx_deadline_ns) {
				q->tx_deadline_ns =
					dev_now(dev) + (uint64_t)dev->params.tx_timer_usecs * 1000u;
				vq_kick_disable(&q->vq);
				queue_rearm_timer(dev, q);
			}
			break;
		}
		more = net_tx_process(dev, q);
		break;
	case VNET_QUEUE_CTRL:
		more = net_ctrl_process(dev, q);
		break;
	}
	if (more) {
		if (q->kind == VNET_QUEUE_RX)
			q->rx_waiting = true; /* the backend continues on the next run */
		dev_schedule(dev, q);
	}
}

void vnet_dev_kick(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return;
	stat_inc(&q->stats.kicks);
	/* Already waiting in the run queue: that run sees whatever this kick announced. */
	if (q->scheduled || !dev_queue_usable(q))
		return;
	queue_work(dev, q);
}

void vnet_dev_queue_run(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q || !q->scheduled)
		return;
	q->scheduled = false;
	if (!dev_queue_usable(q))
		return;
	if (q->kind == VNET_QUEUE_TX)
		tx_run(dev, q); /* continue the batch that yielded, TX timer mode included */
	else
		queue_work(dev, q);
}

void vnet_dev_timer_expired(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);
	uint64_t now;

	if (!q)
		return;
	now = dev_now(dev);
	q->timer_deadline_ns = 0;
	if (q->tx_deadline_ns && now >= q->tx_deadline_ns) {
		q->tx_deadline_ns = 0;
		if (dev_queue_usable(q) && !q->scheduled)
			tx_run(dev, q);
	}
	if (q->coal_deadline_ns && now >= q->coal_deadline_ns)
		notify_decide(dev, q, NOTIFY_TIMER, 0);
	queue_rearm_timer(dev, q);
}

void vnet_dev_tx_resume(struct vnet_dev *dev)
{
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		if (q->kind == VNET_QUEUE_TX && q->tx_blocked && dev_queue_usable(q) &&
		    !q->scheduled)
			tx_run(dev, q);
	}
}

static void fill_config(const struct vnet_dev *dev, struct virtio_net_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->mac, dev->mac, 6);
	cfg->status = htole16(dev->be ? VIRTIO_NET_S_LINK_UP : 0);
	cfg->max_virtqueue_pairs = htole16(dev->params.queue_pairs);
	cfg->mtu = htole16(dev->params.mtu ? dev->params.mtu : 1500);
}

uint32_t vnet_dev_config_read(const struct vnet_dev *dev, uint32_t offset, void *buf, uint32_t len)
{
	struct virtio_net_config cfg;
	uint32_t n = 0;

	fill_config(dev, &cfg);
	memset(buf, 0, len);
	if (offset < sizeof(cfg)) {
		n = (uint32_t)sizeof(cfg) - offset;
		if (n > len)
			n = len;
		memcpy(buf, (const uint8_t *)&cfg + offset, n);
	}
	return n;
}

int vnet_dev_config_write(struct vnet_dev *dev, uint32_t offset, const void *buf, uint32_t len)
{
	/* Legacy drivers without CTRL_MAC_ADDR may write the mac field; nothing else is writable. */
	if (offset >= 6 || len > 6 - offset || dev_has(dev, VIRTIO_NET_F_CTRL_MAC_ADDR)) {
		log_guest("config write of %u bytes at offset %u refused", len, offset);
		return -1;
	}
	memcpy(dev->mac + offset, buf, len);
	return 0;
}

void vnet_dev_reset(struct vnet_dev *dev)
{
	/* Completions the driver can already see are signalled before the queues go. */
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].vq.started)
			vnet_dev_queue_stop(dev, i);
	dev->features = 0;
	dev->hdr_len = VNET_HDR_LEN;
	dev->guest_offloads = 0;
	dev->active_pairs = 1;
	memcpy(dev->mac, dev->params.mac, 6);
	memset(&dev->filter, 0, sizeof(dev->filter));
	dev->filter.promisc = true;
	coal_policy_reset(dev);
	assign_queue_kinds(dev);
	for (unsigned i = 0; i < dev->nqueues; i++)
		queue_reset(dev, &dev->queues[i]);
	vnet_dev_publish(dev);
}

void vnet_dev_set_dirty_log(struct vnet_dev *dev, struct dirty_log *log)
{
	dev->dirty_log = log;
	for (unsigned i = 0; i < dev->nqueues; i++)
		dev->queues[i].vq.log = log;
}

const uint8_t *vnet_dev_mac(const struct vnet_dev *dev)
{
	return dev->mac;
}

bool vnet_dev_link_up(const struct vnet_dev *dev)
{
	return dev->be != NULL;
}

uint16_t vnet_dev_active_pairs(const struct vnet_dev *dev)
{
	return dev->active_pairs;
}

const char *vnet_queue_kind_name(enum vnet_queue_kind kind)
{
	return kind == VNET_QUEUE_RX ? "rx" : kind == VNET_QUEUE_TX ? "tx" : "ctrl";
}
