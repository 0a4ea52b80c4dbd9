/* coal_policy.c - whose coalescing values a queue uses: guest, host, defaults, reset and re-enable. */
#include "vnet_dev_internal.h"

static unsigned kind_slot(enum vnet_queue_kind kind)
{
	return kind == VNET_QUEUE_TX;
}

/*
 * Parameters a queue gets after reset or a virtio re-enable: the last setting for all queues of
 * its kind since reset (guest TX_SET/RX_SET or host), else zero (spec).
 */
void coal_policy_default(const struct vnet_dev *dev, const struct vnet_queue *q,
			       struct coal_params *p, enum coal_setter *who)
{
	const struct vnet_kind_coal *k = &dev->last[kind_slot(q->kind)];

	*p = (struct coal_params){0, 0};
	*who = COAL_SET_NONE;
	if (q->kind == VNET_QUEUE_CTRL || !k->set)
		return;
	*p = k->params;
	*who = k->who;
}

void coal_policy_reset(struct vnet_dev *dev)
{
	/* Spec: reset sets every coalescing parameter to 0; host defaults only on opt-in. */
	for (unsigned k = 0; k < 2; k++)
		dev->last[k] = dev->params.coal_persist ? dev->host[k] : (struct vnet_kind_coal){0};
}

void coal_policy_init(struct vnet_dev *dev)
{
	const struct vnet_dev_params *p = &dev->params;

	dev->host[0] = (struct vnet_kind_coal){p->host_coal_rx_set, p->host_coal_rx, COAL_SET_HOST};
	dev->host[1] = (struct vnet_kind_coal){p->host_coal_tx_set, p->host_coal_tx, COAL_SET_HOST};
}

void dev_set_kind_coal(struct vnet_dev *dev, enum vnet_queue_kind kind, const struct coal_params *p,
		       enum coal_setter who)
{
	dev->last[kind_slot(kind)] = (struct vnet_kind_coal){true, *p, who};
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind == kind)
			dev_apply_coal(dev, &dev->queues[i], p, who);
}

void dev_apply_coal(struct vnet_dev *dev, struct vnet_queue *q, const struct coal_params *p,
		    enum coal_setter who)
{
	coal_set_params(&q->coal, p, who);
	notify_decide(dev, q, NOTIFY_PARAMS_CHANGED, 0);
}

int vnet_dev_host_coalesce(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind,
			   const struct coal_params *params)
{
	if (qidx >= 0) {
		struct vnet_queue *q = dev_queue(dev, (unsigned)qidx);

		if (!q || q->kind == VNET_QUEUE_CTRL)
			return -1;
		dev_apply_coal(dev, q, params, COAL_SET_HOST);
		return 0;
	}
	if (kind != VNET_QUEUE_RX && kind != VNET_QUEUE_TX)
		return -1;
	/* The new host default (kept across resets only with coal_persist). */
	dev->host[kind_slot(kind)] = (struct vnet_kind_coal){true, *params, COAL_SET_HOST};
	dev_set_kind_coal(dev, kind, params, COAL_SET_HOST);
	return 0;
}

bool vnet_dev_coal_persist(const struct vnet_dev *dev)
{
	return dev->params.coal_persist;
}

int vnet_dev_restore_coal(struct vnet_dev *dev, unsigned qidx, const struct coal_params *params,
			  enum coal_setter who)
{
	struct vnet_queue *q = dev_queue(dev, qidx);

	if (!q || q->kind == VNET_QUEUE_CTRL || (who != COAL_SET_GUEST && who != COAL_SET_HOST))
		return -1;
	dev_apply_coal(dev, q, params, who);
	return 0;
}
