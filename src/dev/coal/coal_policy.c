/* SPDX-License-Identifier: MIT */
/* coal_policy.c - whose coalescing values a queue uses: guest, host, adaptive, defaults, reset and re-enable. */
#include "dev/coal/coal_policy.h"

#include "dev/coal/notify.h"
#include "dev/dev.h" /* the public functions defined here */
#include "dev/vnet_dev_core.h"
#include "dev/queue_view_internal.h"

static unsigned kind_slot(enum vnet_queue_kind kind)
{
	return kind == VNET_QUEUE_TX;
}

/**
 * coal_policy_default() - the parameters a queue gets after reset or a virtio re-enable
 * @dev: the device
 * @q: the queue
 * @p: set to the last setting for all queues of its kind since reset (guest TX_SET/RX_SET or
 *     host), else zero (spec)
 * @who: set to who made that setting (COAL_SET_NONE for zero)
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

/* The controller takes the queue over at level 0 (notify every packet) from now. */
static void adapt_begin(struct vnet_dev *dev, struct vnet_queue *q)
{
	const struct coal_adapt_counters c = dev_adapt_counters(dev, q);

	coal_adapt_start(&q->adapt, dev_now(dev), &c);
	coal_set_params(&q->coal, coal_adapt_profile(0), COAL_SET_ADAPTIVE);
}

/**
 * coal_policy_queue_default() - give a queue its parameters after reset or a virtio re-enable
 * @dev: the device
 * @q: the queue
 *
 * coal_policy_default()'s values, then the port's adaptive mode unless the guest set the
 * queue's kind since reset (the guest wins).
 */
void coal_policy_queue_default(struct vnet_dev *dev, struct vnet_queue *q)
{
	struct coal_params p;
	enum coal_setter who;

	coal_policy_default(dev, q, &p, &who);
	coal_set_params(&q->coal, &p, who);
	coal_adapt_stop(&q->adapt);
	/* The port's adaptive mode, unless the guest set this kind since reset (it wins). */
	if (q->kind != VNET_QUEUE_CTRL && dev->adaptive[kind_slot(q->kind)] && who != COAL_SET_GUEST)
		adapt_begin(dev, q);
}

/**
 * coal_policy_reset() - device reset: forget every coalescing setting
 * @dev: the device
 *
 * Host defaults stay only with params.coal_persist.
 */
void coal_policy_reset(struct vnet_dev *dev)
{
	/* Spec: reset sets every coalescing parameter to 0; host defaults only on opt-in. */
	for (unsigned k = 0; k < 2; k++)
		dev->last[k] = dev->params.coal_persist ? dev->host[k] : (struct vnet_kind_coal){0};
}

/**
 * coal_policy_init() - host defaults, adaptive modes and stall guard from the device parameters
 * @dev: the device being created
 */
void coal_policy_init(struct vnet_dev *dev)
{
	const struct vnet_dev_params *p = &dev->params;

	dev->host[0] = (struct vnet_kind_coal){p->host_coal_rx_set, p->host_coal_rx, COAL_SET_HOST};
	dev->host[1] = (struct vnet_kind_coal){p->host_coal_tx_set, p->host_coal_tx, COAL_SET_HOST};
	dev->adaptive[0] = p->rx_adaptive;
	dev->adaptive[1] = p->tx_adaptive;
	dev->guard = p->stall_guard;
}

/**
 * coal_policy_set_kind() - set every RX or TX queue, and remember it for queues re-enabled later
 * @dev: the device
 * @kind: VNET_QUEUE_RX or VNET_QUEUE_TX
 * @p: the parameters
 * @who: the setter (guest TX_SET/RX_SET, or the host)
 */
void coal_policy_set_kind(struct vnet_dev *dev, enum vnet_queue_kind kind,
			  const struct coal_params *p, enum coal_setter who)
{
	dev->last[kind_slot(kind)] = (struct vnet_kind_coal){true, *p, who};
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind == kind)
			coal_policy_apply(dev, &dev->queues[i], p, who);
}

/**
 * coal_policy_apply() - set one queue's parameters and re-check its notification at once
 * @dev: the device
 * @q: the queue
 * @p: the parameters
 * @who: the setter; any but COAL_SET_ADAPTIVE ends the adaptive controller (last setter wins)
 *
 * Spec: a notification already due under the new parameters is sent now.
 */
void coal_policy_apply(struct vnet_dev *dev, struct vnet_queue *q, const struct coal_params *p,
		       enum coal_setter who)
{
	if (who != COAL_SET_ADAPTIVE)
		coal_adapt_stop(&q->adapt); /* the last setter wins: guest or host values now */
	coal_set_params(&q->coal, p, who);
	queue_view_publish(q);
	notify_decide(dev, q, NOTIFY_PARAMS_CHANGED, 0);
}

/**
 * vnet_dev_host_coalesce() - host-side coalescing for one queue or every queue of a kind
 * @dev: the device
 * @qidx: the queue, or < 0 for every queue of @kind (which then becomes the host default,
 *        kept across resets only with coal_persist, and ends the port's adaptive mode for it)
 * @kind: VNET_QUEUE_RX or VNET_QUEUE_TX when @qidx < 0
 * @params: the parameters
 *
 * Return: 0, or -1 for a bad queue or kind.
 */
int vnet_dev_host_coalesce(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind,
			      const struct coal_params *params)
{
	if (qidx >= 0) {
		struct vnet_queue *q = dev_queue(dev, (unsigned)qidx);

		if (!q || q->kind == VNET_QUEUE_CTRL)
			return -1;
		coal_policy_apply(dev, q, params, COAL_SET_HOST);
		return 0;
	}
	if (kind != VNET_QUEUE_RX && kind != VNET_QUEUE_TX)
		return -1;
	/* The new host default (kept across resets only with coal_persist); it replaces the
	 * port's adaptive mode for this kind. */
	dev->host[kind_slot(kind)] = (struct vnet_kind_coal){true, *params, COAL_SET_HOST};
	dev->adaptive[kind_slot(kind)] = false;
	coal_policy_set_kind(dev, kind, params, COAL_SET_HOST);
	return 0;
}

/* Adaptive on: the controller takes over; off: the values of the last setting for the kind. */
static void adapt_switch(struct vnet_dev *dev, struct vnet_queue *q, bool on)
{
	struct coal_params p;
	enum coal_setter who;

	if (on == q->adapt.on)
		return;
	if (on) {
		adapt_begin(dev, q);
	} else {
		coal_policy_default(dev, q, &p, &who);
		coal_set_params(&q->coal, &p, who);
		coal_adapt_stop(&q->adapt);
	}
	queue_view_publish(q);
	notify_decide(dev, q, NOTIFY_PARAMS_CHANGED, 0);
}

/**
 * vnet_dev_host_adaptive() - adaptive coalescing on or off for one queue or a kind
 * @dev: the device
 * @qidx: the queue, or < 0 for every queue of @kind (then the port's mode for that kind too)
 * @kind: VNET_QUEUE_RX or VNET_QUEUE_TX when @qidx < 0
 * @on: on: the controller takes over; off: the last setting for the kind since reset, else 0
 *
 * Return: 0, or -1 for a bad queue or kind.
 */
int vnet_dev_host_adaptive(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind, bool on)
{
	if (qidx >= 0) {
		struct vnet_queue *q = dev_queue(dev, (unsigned)qidx);

		if (!q || q->kind == VNET_QUEUE_CTRL)
			return -1;
		adapt_switch(dev, q, on);
		return 0;
	}
	if (kind != VNET_QUEUE_RX && kind != VNET_QUEUE_TX)
		return -1;
	dev->adaptive[kind_slot(kind)] = on;
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind == kind)
			adapt_switch(dev, &dev->queues[i], on);
	return 0;
}

/**
 * vnet_dev_adaptive_mode() - whether every queue of a kind starts adaptive (port setting)
 * @dev: the device
 * @kind: the queue kind
 *
 * Return: the port's adaptive mode for @kind (false for VNET_QUEUE_CTRL).
 */
bool vnet_dev_adaptive_mode(const struct vnet_dev *dev, enum vnet_queue_kind kind)
{
	return kind != VNET_QUEUE_CTRL && dev->adaptive[kind_slot(kind)];
}

/**
 * vnet_dev_set_stall_guard() - the port's stall guard settings, in effect at once
 * @dev: the device
 * @g: the settings (copied)
 *
 * Held completions may be due under the new thresholds: every RX and TX queue is re-checked.
 */
void vnet_dev_set_stall_guard(struct vnet_dev *dev, const struct vnet_stall_guard *g)
{
	dev->guard = *g;
	/* Held completions may be due under the new thresholds: re-check every queue. */
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind != VNET_QUEUE_CTRL)
			notify_decide(dev, &dev->queues[i], NOTIFY_PARAMS_CHANGED, 0);
}

/**
 * vnet_dev_restore_coal() - put back a queue's parameters from before a vnetd restart
 * @dev: the device
 * @qidx: the queue (RX or TX)
 * @params: the parameters
 * @who: COAL_SET_GUEST or COAL_SET_HOST
 *
 * Return: 0, or -1 for a bad queue or setter.
 */
int vnet_dev_restore_coal(struct vnet_dev *dev, unsigned qidx, const struct coal_params *params,
			enum coal_setter who)
{
	struct vnet_queue *q = dev_queue(dev, qidx);

	if (!q || q->kind == VNET_QUEUE_CTRL || (who != COAL_SET_GUEST && who != COAL_SET_HOST))
		return -1;
	coal_policy_apply(dev, q, params, who);
	return 0;
}
