/* SPDX-License-Identifier: MIT */
/* control_rate.c - the control socket's rate-limit command: rate. */
#include "control/control_rate.h"

#include <string.h>

#include "control/control_json.h"
#include "dev/dev.h"

/* limits() - {"tx": {"mbit", "burst_kb"}, "rx": {...}} as in effect. */
static json_t *limits(const struct vnet_dev *dev)
{
	const struct rate_params *tx = vnet_dev_rate(dev, VNET_RATE_TX);
	const struct rate_params *rx = vnet_dev_rate(dev, VNET_RATE_RX);

	return json_pack("{s:{s:I,s:I},s:{s:I,s:I}}", "tx", "mbit", (json_int_t)tx->mbit,
			 "burst_kb", (json_int_t)tx->burst_kb, "rx", "mbit", (json_int_t)rx->mbit,
			 "burst_kb", (json_int_t)rx->burst_kb);
}

static json_t *get_u32_max(json_t *req, const char *key, uint32_t max, uint32_t *out)
{
	json_t *v = json_object_get(req, key);

	if (!v)
		return NULL;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return control_json_error("\"%s\" must be an integer 0..%u", key, max);
	*out = (uint32_t)json_integer_value(v);
	return NULL;
}

/**
 * control_rate_set() - the "rate" command: a port's rate limit for guest TX or RX.
 * @call: the live ports.
 * @req: "port"; "dir" ("tx" or "rx") with "mbit" (0: no limit) and optionally "burst_kb" (0 or
 *	absent: 10 ms of the rate); without "dir", nothing changes and the limits are shown.
 *
 * Changes device state a worker reads: the dispatcher runs it with the workers parked. The
 * limit lasts for the life of the port (device resets keep it).
 *
 * Return: {"ok": true, "rate": {"tx": {...}, "rx": {...}}}, or an error reply; NULL if out of
 * memory.
 */
json_t *control_rate_set(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port", "dir", "mbit", "burst_kb", NULL};
	json_t *err = control_json_check_keys(req, "rate", keys);
	json_t *vport = json_object_get(req, "port"), *vdir = json_object_get(req, "dir");
	struct rate_params rp = {0, 0};
	enum vnet_rate_dir dir;
	struct port *p;
	json_t *reply;

	if (err)
		return err;
	if (!vport)
		return control_json_error("rate needs \"port\"");
	if (!(p = control_json_find_port(call->ports, call->nports, vport, &err)))
		return err;
	if (vdir) {
		if (!json_is_string(vdir) || (strcmp(json_string_value(vdir), "tx") != 0 &&
					      strcmp(json_string_value(vdir), "rx") != 0))
			return control_json_error("\"dir\" must be \"tx\" or \"rx\"");
		dir = json_string_value(vdir)[0] == 't' ? VNET_RATE_TX : VNET_RATE_RX;
		if (!json_object_get(req, "mbit"))
			return control_json_error("rate needs \"mbit\" with \"dir\" (0: no limit)");
		if ((err = get_u32_max(req, "mbit", RATE_MBIT_MAX, &rp.mbit)) ||
		    (err = get_u32_max(req, "burst_kb", RATE_BURST_KB_MAX, &rp.burst_kb)))
			return err;
		if (rp.burst_kb && !rp.mbit)
			return control_json_error("\"burst_kb\" needs a \"mbit\" above 0");
		/* One bucket per port, and its pairs on several threads: not supported (yet). */
		if (rp.mbit && port_config(p)->n_queue_workers)
			return control_json_error("%s has queue-workers=: its pairs run on several "
						  "workers, which a rate limit does not span", port_name(p));
		vnet_dev_set_rate(port_dev(p), dir, &rp);
	} else if (json_object_get(req, "mbit") || json_object_get(req, "burst_kb")) {
		return control_json_error("rate needs \"dir\": \"tx\" or \"rx\"");
	}
	reply = json_pack("{s:b}", "ok", 1);
	if (reply)
		json_object_set_new(reply, "rate", limits(port_dev(p)));
	return reply;
}
