/* SPDX-License-Identifier: MIT */
/* port_spec.c - the port specification grammar (key=value,...) of --port, --config and port-add. */
#include "config/port_spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err_msg.h"
#include "config/port_spec_keys.h"
#include "config/port_spec_types.h"
#include "backend/switch/switch.h"
#include "lib/virtio_net_defs.h"
#include "backend/xdp/xdp.h"

#define TX_TIMER_USECS_DEFAULT 50

#define OFFLOAD_BITS                                                                               \
	(BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |                           \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_GUEST_UFO) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_UFO) |                         \
	 BIT_ULL(VIRTIO_NET_F_HOST_USO) | BIT_ULL(VIRTIO_NET_F_GUEST_USO4) |                       \
	 BIT_ULL(VIRTIO_NET_F_GUEST_USO6) | BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS))

/* finish_port() - required keys, conflicts, and the feature mask from the on/off keys. */
static int finish_port(struct port_config *pc, struct port_parse *pp, unsigned index)
{
	struct vnet_dev_params *d = &pc->dev;

	if (!pp->seen[K_SOCKET])
		return err_msg(pp->err, pp->err_len, "vnetd: --port p%u needs socket=PATH", index);
	if (pp->seen[K_TAP] + pp->seen[K_SWITCH] + pp->seen[K_XDP] != 1)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u needs exactly one of tap=IFNAME, xdp=IFNAME or "
			       "switch", index);
	if (pp->seen[K_XDP_QUEUE] && !pp->seen[K_XDP])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: queue= is for xdp= ports", index);
	if (pp->seen[K_XDP] && d->mtu > XDP_PORT_MAX_FRAME - 14)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: an xdp= port takes frames of at most %u bytes "
			       "(mtu=%u at most)", index, XDP_PORT_MAX_FRAME, XDP_PORT_MAX_FRAME - 14);
	if ((pp->seen[K_MAX_MACS] || pp->seen[K_LEARN_RATE]) && !pp->seen[K_SWITCH])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: max-macs= and learn-rate= are for switch ports",
			       index);
	if ((pp->seen[K_PORT_SECURITY] || pp->seen[K_MAC_CHANGE] || pp->seen[K_ALLOWED_MACS]) &&
	    !pp->seen[K_SWITCH])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: port-security=, mac-change= and allowed-macs= "
			       "are for switch ports", index);
	if ((pp->seen[K_TX_BURST] && !d->tx_rate.mbit) || (pp->seen[K_RX_BURST] && !d->rx_rate.mbit))
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: tx-burst= / rx-burst= need a tx-rate= / rx-rate= "
			       "above 0", index);
	if (pp->seen[K_FLOOD_RATE] && !pp->seen[K_SWITCH])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: flood-rate= is for switch ports", index);
	if ((pp->seen[K_GROUP] || pp->seen[K_MODE]) && pp->seen[K_CLIENT])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: group= and mode= are for the socket vnetd "
			       "listens on, not for client ports", index);
	if (pp->seen[K_IPS] && !pp->seen[K_SWITCH])
		return err_msg(pp->err, pp->err_len, "vnetd: --port p%u: ips= is for switch ports",
			       index);
	if (pp->seen[K_VLAN] && !pp->seen[K_SWITCH])
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: vlan= is for switch ports", index);
	if (pp->seen[K_UPLINK] != pp->seen[K_TRUNK] || (pp->seen[K_TRUNK] && !pp->seen[K_TAP]))
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: uplink=NAME and trunk=N+... go together, on a tap "
			       "port", index);
	if (pp->seen[K_QUEUE_WORKERS] &&
	    (!pp->seen[K_SWITCH] || pc->n_queue_workers != d->queue_pairs || pc->worker > 0 ||
	     d->tx_rate.mbit || d->rx_rate.mbit || pc->vlan))
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: queue-workers= is for a switch port, one worker "
			       "per queue pair (queues=%u), its home worker=0, without tx-rate=, "
			       "rx-rate= or vlan=", index, d->queue_pairs);
	if (pp->seen[K_VQ_NOTF_COAL] && pp->vq_notf_coal && !pp->notf_coal)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: vq-notf-coal=on conflicts with notf-coal=off",
			       index);
	if ((d->host_coal_rx_set || d->host_coal_tx_set) && !pp->coal_persist)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port p%u: rx-/tx-usecs/frames are host defaults that "
			       "must outlive device resets (the virtio spec resets coalescing to "
			       "0): add coal-persist=on", index);
	d->coal_persist = pp->coal_persist;
	if (!pp->notf_coal)
		d->features_mask &= ~(BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |
				      BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL));
	if (!pp->vq_notf_coal)
		d->features_mask &= ~BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL);
	if (!pp->offloads)
		d->features_mask &= ~OFFLOAD_BITS;
	if (!pp->event_idx)
		d->features_mask &= ~BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	if (!pp->indirect)
		d->features_mask &= ~BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC);
	if (!pp->mrg_rxbuf)
		d->features_mask &= ~BIT_ULL(VIRTIO_NET_F_MRG_RXBUF);
	if (!pp->packed)
		d->features_mask &= ~BIT_ULL(VIRTIO_F_RING_PACKED);
	if (!pp->in_order)
		d->features_mask &= ~BIT_ULL(VIRTIO_F_IN_ORDER);
	return 0;
}

/**
 * port_spec_parse() - one port specification into a port configuration.
 * @spec: "key=value,..." (the --port syntax)
 * @index: the port's index (p<index> in messages)
 * @pc: fully overwritten: defaults, then the keys; pc->mac_given tells whether mac= was there
 * @err: one line on failure, "vnetd: ..."
 * @err_len: its size
 *
 * Checks the port on its own only (port_spec_check() compares it with others); without mac=
 * the MAC is left zero for port_spec_derive_mac(). Any thread; no state.
 *
 * Return: 0, or -1 (err set).
 */
int port_spec_parse(const char *spec, unsigned index, struct port_config *pc, char *err,
		    size_t err_len)
{
	struct port_parse pp = {
		.notf_coal = true,
		.vq_notf_coal = true,
		.offloads = true,
		.event_idx = true,
		.indirect = true,
		.mrg_rxbuf = true,
		.packed = true,
		.in_order = true,
		.err = err,
		.err_len = err_len,
	};
	char *copy, *item, *next;
	int ret = 0;

	err[0] = '\0';
	memset(pc, 0, sizeof(*pc));
	pc->worker = -1;
	pc->sock_gid = -1;
	pc->max_macs = SWITCH_FDB_PORT_MAX;
	pc->learn_rate = SWITCH_LEARN_RATE;
	pc->dev.queue_pairs = 1;
	pc->dev.features_mask = ~0ull;
	pc->dev.tx_mode = VNET_TX_KICK;
	pc->dev.tx_timer_usecs = TX_TIMER_USECS_DEFAULT;
	pc->dev.tx_relook = true;
	pc->dev.stall_guard = (struct vnet_stall_guard){true, VNET_STALL_BYTES_DEFAULT,
						       VNET_STALL_IDLE_USECS_DEFAULT};

	copy = strdup(spec);
	if (!copy)
		return err_msg(err, err_len, "vnetd: out of memory");
	for (item = copy; item && ret == 0; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		if (item[0] == '\0')
			ret = err_msg(err, err_len, "vnetd: empty key in --port '%s'", spec);
		else
			ret = port_spec_parse_item(pc, &pp, item);
	}
	free(copy);
	if (ret == 0)
		ret = finish_port(pc, &pp, index);
	pc->mac_given = pp.mac_given;
	return ret;
}
