/* SPDX-License-Identifier: MIT */
/* port_table_internal.h - the port table's segments (port_segment.c), private to src/port/. */
#ifndef VNETD_PORT_TABLE_INTERNAL_H
#define VNETD_PORT_TABLE_INTERNAL_H

#include <stdint.h>

#include "port/port_table.h"

/* port_segment_get() - segment `name` ("": default), VLAN `vlan` of it, made if new; -1: none. */
int port_segment_get(struct port_table *t, const char *name, uint16_t vlan);
/* port_segment_put() - one port fewer in segment i; freed (its switch too) with its last. */
void port_segment_put(struct port_table *t, unsigned i);
/* port_trunk_put() - port_segment_put() each of a trunk's n VLAN segments, highest index first. */
void port_trunk_put(struct port_table *t, const uint8_t *idx, unsigned n);

#endif
