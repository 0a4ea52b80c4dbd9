/* SPDX-License-Identifier: MIT */
/* control_ports.c - the control socket's port commands: ports, port-add, port-del. */
#include "control/control_ports.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "control/control_json.h"
#include "port/port.h"
#include "lib/virtio_net_defs.h"

/* port_info() - the port's configuration and state, as "ports" lists it. */
static json_t *port_info(struct port *p)
{
	const struct port_config *cfg = port_config(p);
	struct vnet_dev *dev = port_dev(p);
	uint64_t features = vnet_dev_features(dev);
	bool tap = cfg->backend == PORT_BACKEND_TAP;
	bool sw = cfg->backend == PORT_BACKEND_SWITCH;
	char feat[19];

	snprintf(feat, sizeof(feat), "0x%" PRIx64, features);
	return json_pack("{s:s,s:I,s:o,s:s,s:o,s:o,s:o,s:b,s:o,s:o,s:b,s:s,s:b,s:b,s:i,s:i,s:b,s:b,"
			 "s:o,s:o,s:s,s:b,s:b}",
			 "name", port_name(p), "index", (json_int_t)port_index(p),
			 "socket", control_json_string(cfg->socket_path),
			 "backend", tap ? "tap" : sw ? "switch" : "xdp",
			 "tap", tap ? control_json_string(cfg->tap_name) : json_null(),
			 "segment", !sw ? json_null()
					: control_json_string(cfg->segment[0] ? cfg->segment : "default"),
			 "vlan", !sw || !cfg->vlan ? json_null() : json_integer(cfg->vlan),
			 "connected", port_connected(p),
			 "connections", control_json_u64(port_connections(p)),
			 "mac", control_json_mac(vnet_dev_mac(dev)),
			 "link_up", vnet_dev_link_up(dev), "features", feat,
			 "notf_coal", (features & BIT_ULL(VIRTIO_NET_F_NOTF_COAL)) != 0,
			 "vq_notf_coal", (features & BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL)) != 0,
			 "queue_pairs", (int)cfg->dev.queue_pairs,
			 "active_pairs", (int)vnet_dev_active_pairs(dev),
			 "coal_persist", vnet_dev_coal_persist(dev),
			 "dirty_log", port_dirty_logging(p),
			 "rarps", control_json_u64(port_rarps(p)),
			 "dirty_log_dropped", control_json_u64(port_dirty_log_dropped(p)),
			 "ring", (features & BIT_ULL(VIRTIO_F_RING_PACKED)) ? "packed" : "split",
			 "in_order", (features & BIT_ULL(VIRTIO_F_IN_ORDER)) != 0,
			 "migrate_state", !cfg->no_device_state);
}

/* A trunk tap port's segment, VLANs and drops (uplink=, trunk=). */
static void add_trunk(json_t *o, struct port *p)
{
	const struct port_config *cfg = port_config(p);
	json_t *vids;

	if (!o || !cfg->n_trunk)
		return;
	vids = json_array();
	for (unsigned i = 0; i < cfg->n_trunk; i++)
		json_array_append_new(vids, json_integer(cfg->trunk[i]));
	json_object_set_new(o, "uplink", json_string(cfg->uplink[0] ? cfg->uplink : "default"));
	json_object_set_new(o, "trunk", vids);
	json_object_set_new(o, "trunk_dropped", control_json_u64(port_trunk_dropped(p)));
}

/* The worker (event-loop thread) serving the port. */
static void add_worker(json_t *o, struct port *p)
{
	const struct port_config *cfg = port_config(p);
	json_t *qw;

	uint64_t fr[4];

	if (!o)
		return;
	json_object_set_new(o, "worker", json_integer((json_int_t)port_worker(p)));
	if (port_switch_frames(p, fr))
		json_object_set_new(o, "switch_frames",
				    json_pack("{s:o,s:o,s:o,s:o}", "forwarded", control_json_u64(fr[0]),
					      "flooded", control_json_u64(fr[1]), "dropped",
					      control_json_u64(fr[2]), "crossed",
					      control_json_u64(fr[3])));
	if (!cfg->n_queue_workers)
		return;
	/* queue-workers=: the worker running each queue pair (its RX queue's) */
	qw = json_array();
	for (unsigned i = 0; i < cfg->n_queue_workers; i++)
		json_array_append_new(qw, json_integer((json_int_t)port_queue_worker(p, 2 * i)));
	json_object_set_new(o, "queue_workers", qw);
}

/* The driver's RX mode and MAC filter tables (VIRTIO_NET_CTRL_RX, CTRL_MAC). */
static void add_rx_filter(json_t *o, const struct vnet_dev *dev)
{
	const struct vnet_rx_filter *f = vnet_dev_rx_filter(dev);
	const struct {
		const char *name;
		bool on;
	} modes[] = {
	    {"promisc", f->promisc}, {"allmulti", f->allmulti}, {"alluni", f->alluni},
	    {"nomulti", f->nomulti}, {"nouni", f->nouni},	{"nobcast", f->nobcast},
	};
	json_t *mode = json_array(), *uc = json_array(), *mc = json_array();

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (modes[i].on)
			json_array_append_new(mode, json_string(modes[i].name));
	for (unsigned i = 0; i < f->n_uc && i < VNET_MAC_TABLE_SIZE; i++)
		json_array_append_new(uc, control_json_mac(f->uc[i]));
	for (unsigned i = 0; i < f->n_mc && i < VNET_MAC_TABLE_SIZE; i++)
		json_array_append_new(mc, control_json_mac(f->mc[i]));
	json_object_set_new(o, "rx_mode", mode);
	json_object_set_new(o, "mac_table",
			    json_pack("{s:o,s:o,s:b,s:b}", "unicast", uc, "multicast", mc,
				      "unicast_overflow", f->uc_overflow, "multicast_overflow",
				      f->mc_overflow));
}

/**
 * control_ports_list() - the "ports" command.
 * @call: the live ports.
 * @req: {"cmd": "ports"}, no other key.
 *
 * Reads fields the workers do not publish: the dispatcher runs it with the workers parked.
 *
 * Return: {"ok": true, "ports": [...]}, or an error reply; NULL if out of memory.
 */
json_t *control_ports_list(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {NULL};
	json_t *err = control_json_check_keys(req, "ports", keys);
	json_t *list;
	unsigned i;

	if (err)
		return err;
	list = json_array();
	for (i = 0; i < call->nports; i++) {
		struct port *p = call->ports[i];
		json_t *o = port_info(p);

		control_json_coal_modes(o, port_dev(p));
		add_worker(o, p);
		add_trunk(o, p);
		if (o) {
			/* A tap's queue fds (queues=N > 1: IFF_MULTI_QUEUE, one per pair). */
			json_object_set_new(o, "tap_queues",
					    port_tap_queues(p) ? json_integer(port_tap_queues(p))
							       : json_null());
			add_rx_filter(o, port_dev(p));
			json_object_set_new(o, "rss", control_json_rss(port_dev(p)));
		}
		json_array_append_new(list, o);
	}
	return json_pack("{s:b,s:o}", "ok", 1, "ports", list);
}

/**
 * control_ports_add() - the "port-add" command.
 * @call: the daemon's port ops (none: the command fails).
 * @req: {"cmd": "port-add", "spec": a --port SPEC}.
 *
 * Return: {"ok": true, "port": its name}, or an error reply; NULL if out of memory.
 */
json_t *control_ports_add(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"spec", NULL};
	json_t *err = control_json_check_keys(req, "port-add", keys);
	json_t *spec = json_object_get(req, "spec");
	char name[16], msg[256];

	if (err)
		return err;
	if (!json_is_string(spec) || strlen(json_string_value(spec)) != json_string_length(spec))
		return control_json_error("\"spec\" must be a string: a --port SPEC");
	if (!call->port_ops)
		return control_json_error("run-time ports are not available");
	if (call->port_ops->add(call->port_ctx, json_string_value(spec), name, sizeof(name), msg,
				sizeof(msg)) < 0)
		return control_json_error("%s", msg);
	return json_pack("{s:b,s:s}", "ok", 1, "port", name);
}

/**
 * control_ports_del() - the "port-del" command.
 * @call: the live ports and the daemon's port ops (none: the command fails).
 * @req: {"cmd": "port-del", "port": a name or index}.
 *
 * Return: {"ok": true}, or an error reply; NULL if out of memory.
 */
json_t *control_ports_del(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = control_json_check_keys(req, "port-del", keys);
	struct port *p;
	char msg[256];

	if (err)
		return err;
	if (!(p = control_json_find_port(call->ports, call->nports, json_object_get(req, "port"),
					 &err)))
		return err;
	if (!call->port_ops)
		return control_json_error("run-time ports are not available");
	if (call->port_ops->del(call->port_ctx, p, msg, sizeof(msg)) < 0)
		return control_json_error("%s", msg);
	return control_json_ok();
}
