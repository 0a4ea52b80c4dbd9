/* SPDX-License-Identifier: MIT */
/* port_trunk.h - a tap port as a segment's trunk: 802.1Q tagging and untagging at the boundary. */
#ifndef VNETD_PORT_TRUNK_H
#define VNETD_PORT_TRUNK_H

#include <stdint.h>

struct port;
struct vnet_switch;

/* port_trunk_attach() - one uplink per trunk= VLAN, in sw[i]; 0, or -1 (logged). */
int port_trunk_attach(struct port *p, struct vnet_switch *const *sw);

/* port_trunk_detach() - detach the uplinks (none: nothing to do). */
void port_trunk_detach(struct port *p);

#endif
