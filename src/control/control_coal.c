/* SPDX-License-Identifier: MIT */
/* control_coal.c - the control socket's coalescing commands: coalesce, stall-guard. */
#include "control/control_coal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "control/control_json.h"
#include "dev/dev.h"

/* Optional coalescing fields of a "coalesce" request. */
struct coal_request {
	bool has_usecs[2], has_frames[2]; /* [0] rx, [1] tx */
	uint32_t usecs[2], frames[2];
};

static json_t *get_u32(json_t *req, const char *key, bool *has, uint32_t *out)
{
	json_t *v = json_object_get(req, key);

	if (!v)
		return NULL;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return control_json_error("\"%s\" must be an integer 0..4294967295", key);
	*has = true;
	*out = (uint32_t)json_integer_value(v);
	return NULL;
}

/* coal_merge() - base with the request's fields for that kind replaced. */
static struct coal_params coal_merge(struct coal_params base, const struct coal_request *r, int k)
{
	if (r->has_frames[k])
		base.max_packets = r->frames[k];
	if (r->has_usecs[k])
		base.max_usecs = r->usecs[k];
	return base;
}

/* coal_apply_queue() - set one RX/TX queue; unspecified fields keep its current value. */
static json_t *coal_apply_queue(struct vnet_dev *dev, unsigned qidx, const struct coal_request *r)
{
	struct vnet_queue_snapshot s;
	struct coal_params p;

	if (!vnet_dev_queue_snapshot(dev, qidx, &s))
		return control_json_error("port has no queue %u", qidx);
	p = coal_merge(s.view.coal, r, s.view.kind == VNET_QUEUE_TX);
	if (vnet_dev_host_coalesce(dev, (int)qidx, s.view.kind, &p) < 0)
		return control_json_error("could not set coalescing of queue %u", qidx);
	return NULL;
}

/*
 * coal_apply_kind() - set every queue of kind. One kind-wide call records the host default
 * (what queues get back after a reset); its unspecified field comes from the first queue of
 * the kind. Queues whose own value of that field differed get it back with a per-queue call.
 */
static json_t *coal_apply_kind(struct vnet_dev *dev, enum vnet_queue_kind kind,
			       const struct coal_request *r)
{
	struct coal_params saved[VNET_MAX_QUEUES], all, own;
	unsigned i, n = vnet_dev_num_queues(dev);
	int k = kind == VNET_QUEUE_TX;
	struct vnet_queue_snapshot s;
	enum vnet_queue_kind kinds[VNET_MAX_QUEUES];
	bool have_base = false;

	if (n > VNET_MAX_QUEUES)
		n = VNET_MAX_QUEUES;
	all = (struct coal_params){0, 0};
	for (i = 0; i < n; i++) {
		bool have = vnet_dev_queue_snapshot(dev, i, &s);

		saved[i] = have ? s.view.coal : (struct coal_params){0, 0};
		kinds[i] = have ? s.view.kind : VNET_QUEUE_CTRL;
		if (have && s.view.kind == kind && !have_base) {
			all = saved[i];
			have_base = true;
		}
	}
	all = coal_merge(all, r, k);
	if (vnet_dev_host_coalesce(dev, -1, kind, &all) < 0)
		return control_json_error("could not set %s coalescing",
					  vnet_queue_kind_name(kind));
	for (i = 0; i < n; i++) {
		if (kinds[i] != kind)
			continue;
		own = coal_merge(saved[i], r, k);
		if ((own.max_packets != all.max_packets || own.max_usecs != all.max_usecs) &&
		    vnet_dev_host_coalesce(dev, (int)i, kind, &own) < 0)
			return control_json_error("could not set coalescing of queue %u", i);
	}
	return NULL;
}

/*
 * get_adaptive() - "adaptive" (both kinds), "rx_adaptive", "tx_adaptive": booleans; a kind's
 * own key wins over "adaptive".
 */
static json_t *get_adaptive(json_t *req, bool has[2], bool on[2])
{
	static const char *const names[3] = {"adaptive", "rx_adaptive", "tx_adaptive"};

	has[0] = has[1] = false;
	for (int i = 0; i < 3; i++) {
		json_t *v = json_object_get(req, names[i]);

		if (!v)
			continue;
		if (!json_is_boolean(v))
			return control_json_error("\"%s\" must be true or false", names[i]);
		for (int k = 0; k < 2; k++) {
			if (i == 0 || i == k + 1) {
				has[k] = true;
				on[k] = json_is_true(v);
			}
		}
	}
	return NULL;
}

/**
 * control_coal_coalesce() - the "coalesce" command: host coalescing values and adaptive mode.
 * @call: the live ports.
 * @req: "port"; optionally "queue" (else every queue of the kinds given); rx_usecs, rx_frames,
 *	tx_usecs, tx_frames (integers); adaptive, rx_adaptive, tx_adaptive (booleans).
 *
 * Changes device state a worker reads: the dispatcher runs it with the workers parked.
 *
 * Return: {"ok": true}, or an error reply; NULL if out of memory.
 */
json_t *control_coal_coalesce(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port",	  "queue",	 "rx_usecs",
					   "rx_frames",	  "tx_usecs",	 "tx_frames",
					   "adaptive",	  "rx_adaptive", "tx_adaptive", NULL};
	json_t *err = control_json_check_keys(req, "coalesce", keys);
	json_t *vport = json_object_get(req, "port"), *vq = json_object_get(req, "queue");
	struct coal_request r;
	struct vnet_queue_snapshot s;
	struct vnet_dev *dev;
	struct port *p;
	json_int_t qidx;
	bool any[2], has_ad[2], ad[2];
	int k;

	memset(&r, 0, sizeof(r));
	if (err)
		return err;
	if (!vport)
		return control_json_error("coalesce needs \"port\"");
	if (!(p = control_json_find_port(call->ports, call->nports, vport, &err)))
		return err;
	if ((err = get_u32(req, "rx_usecs", &r.has_usecs[0], &r.usecs[0])) ||
	    (err = get_u32(req, "rx_frames", &r.has_frames[0], &r.frames[0])) ||
	    (err = get_u32(req, "tx_usecs", &r.has_usecs[1], &r.usecs[1])) ||
	    (err = get_u32(req, "tx_frames", &r.has_frames[1], &r.frames[1])))
		return err;
	if ((err = get_adaptive(req, has_ad, ad)))
		return err;
	any[0] = r.has_usecs[0] || r.has_frames[0];
	any[1] = r.has_usecs[1] || r.has_frames[1];
	if (!any[0] && !any[1] && !has_ad[0] && !has_ad[1])
		return control_json_error("nothing to set: give rx_usecs, rx_frames, tx_usecs, "
					  "tx_frames or adaptive");
	for (k = 0; k < 2; k++)
		if (has_ad[k] && ad[k] && any[k])
			return control_json_error("%s: adaptive on and fixed values exclude "
						  "each other", k ? "tx" : "rx");
	dev = port_dev(p);
	if (!vq) {
		for (k = 0; k < 2; k++)
			if (has_ad[k])
				vnet_dev_host_adaptive(dev, -1, k ? VNET_QUEUE_TX : VNET_QUEUE_RX,
						       ad[k]);
		if (any[0] && (err = coal_apply_kind(dev, VNET_QUEUE_RX, &r)))
			return err;
		if (any[1] && (err = coal_apply_kind(dev, VNET_QUEUE_TX, &r)))
			return err;
		return control_json_ok();
	}
	if (!json_is_integer(vq))
		return control_json_error("\"queue\" must be a queue index");
	qidx = json_integer_value(vq);
	if (qidx < 0 || qidx >= (json_int_t)vnet_dev_num_queues(dev) ||
	    !vnet_dev_queue_snapshot(dev, (unsigned)qidx, &s))
		return control_json_error("port %s has no queue %" JSON_INTEGER_FORMAT " (0..%u)",
					  port_name(p), qidx, vnet_dev_num_queues(dev) - 1);
	if (s.view.kind == VNET_QUEUE_CTRL)
		return control_json_error("queue %" JSON_INTEGER_FORMAT " is the control queue",
					  qidx);
	k = s.view.kind == VNET_QUEUE_TX;
	if (any[!k] || (has_ad[!k] && !json_object_get(req, "adaptive")))
		return control_json_error("queue %" JSON_INTEGER_FORMAT
					  " is a%s queue: use %s_usecs/%s_frames/%s_adaptive", qidx,
					  k ? " TX" : "n RX", k ? "tx" : "rx", k ? "tx" : "rx",
					  k ? "tx" : "rx");
	if (has_ad[k] && vnet_dev_host_adaptive(dev, (int)qidx, s.view.kind, ad[k]) < 0)
		return control_json_error("could not switch adaptive coalescing of queue %u",
					  (unsigned)qidx);
	if (any[k] && (err = coal_apply_queue(dev, (unsigned)qidx, &r)))
		return err;
	return control_json_ok();
}

/**
 * control_coal_stall_guard() - the "stall-guard" command: the port's early-notification guard.
 * @call: the live ports.
 * @req: "port"; at least one of "on" (boolean), "bytes", "idle_usecs" (integers).
 *
 * Changes device state a worker reads: the dispatcher runs it with the workers parked.
 *
 * Return: {"ok": true}, or an error reply; NULL if out of memory.
 */
json_t *control_coal_stall_guard(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port", "on", "bytes", "idle_usecs", NULL};
	json_t *err = control_json_check_keys(req, "stall-guard", keys);
	json_t *vport = json_object_get(req, "port"), *von = json_object_get(req, "on");
	struct vnet_stall_guard g;
	bool has_bytes = false, has_idle = false;
	struct port *p;

	if (err)
		return err;
	if (!vport)
		return control_json_error("stall-guard needs \"port\"");
	if (!(p = control_json_find_port(call->ports, call->nports, vport, &err)))
		return err;
	g = *vnet_dev_stall_guard(port_dev(p));
	if (von && !json_is_boolean(von))
		return control_json_error("\"on\" must be true or false");
	if ((err = get_u32(req, "bytes", &has_bytes, &g.bytes)) ||
	    (err = get_u32(req, "idle_usecs", &has_idle, &g.idle_usecs)))
		return err;
	if (!von && !has_bytes && !has_idle)
		return control_json_error("nothing to set: give on, bytes or idle_usecs");
	if (von)
		g.on = json_is_true(von);
	vnet_dev_set_stall_guard(port_dev(p), &g);
	return control_json_ok();
}
