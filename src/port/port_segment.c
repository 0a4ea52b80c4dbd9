/* SPDX-License-Identifier: MIT */
/* port_segment.c - the port table's switch segments: one switch per segment and VLAN, freed with its last port. */
#include "port/port_table.h"
#include "port/port_table_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/switch/switch.h"
#include "lib/log.h"
#include "port/port.h"

/**
 * port_segment_get() - the segment named @name, VLAN @vlan of it, made (its switch too) if it
 * has no ports yet.
 * @t: the table
 * @name: the segment's name ("": the default one)
 * @vlan: the VLAN of it (0: its untagged domain)
 *
 * Main thread, workers parked.
 *
 * Return: its index, or -1 (logged) at PORT_MAX_SEGMENTS or out of memory.
 */
int port_segment_get(struct port_table *t, const char *name, uint16_t vlan)
{
	struct port_segment *s;

	for (unsigned i = 0; i < t->nsegments; i++)
		if (strcmp(t->segments[i].name, name) == 0 && t->segments[i].vlan == vlan)
			return (int)i;
	if (t->nsegments == PORT_MAX_SEGMENTS) {
		log_err("switch=%s: already %d segments (each VLAN of one counts)",
			name[0] ? name : "default", PORT_MAX_SEGMENTS);
		return -1;
	}
	s = &t->segments[t->nsegments];
	s->sw = switch_create(t->pool->n, t->sw_ops, t->sw_ctx);
	if (!s->sw)
		return -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->vlan = vlan;
	s->home = -1;
	s->nports = 0;
	if (vlan)
		log_info("switch segment %s VLAN %u: created", name[0] ? name : "default", vlan);
	else if (name[0])
		log_info("switch segment %s: created", name);
	return (int)t->nsegments++;
}

/**
 * port_segment_put() - a port of segment @i went: with its last, the segment and its switch go
 * too (the last segment takes its place in the packed array).
 * @t: the table
 * @i: the segment's index
 *
 * Main thread, workers parked.
 */
void port_segment_put(struct port_table *t, unsigned i)
{
	unsigned last = t->nsegments - 1;

	if (--t->segments[i].nports)
		return;
	if (t->segments[i].vlan)
		log_info("switch segment %s VLAN %u: removed (no ports left)",
			 t->segments[i].name[0] ? t->segments[i].name : "default",
			 t->segments[i].vlan);
	else if (t->segments[i].name[0])
		log_info("switch segment %s: removed (no ports left)", t->segments[i].name);
	switch_destroy(t->segments[i].sw);
	if (i != last) {
		t->segments[i] = t->segments[last];
		for (unsigned k = 0; k < VNETD_MAX_PORTS; k++) {
			const struct port_config *c = t->ports[k] ? port_config(t->ports[k]) : NULL;

			if (c && c->backend == PORT_BACKEND_SWITCH && t->segment_of[k] == last)
				t->segment_of[k] = (uint8_t)i;
			for (unsigned v = 0; c && v < c->n_trunk; v++)
				if (t->trunk_of[k][v] == last)
					t->trunk_of[k][v] = (uint8_t)i;
		}
	}
	memset(&t->segments[last], 0, sizeof(t->segments[last]));
	t->nsegments--;
}

/**
 * port_trunk_put() - a trunk's VLANs went (its port gone, or never made): port_segment_put()
 * each, the highest index first, so a segment moved into a freed place is never one still to
 * put (the port is out of the table: port_segment_put() cannot fix its indexes).
 * @t: the table
 * @idx: the trunk's segment indexes
 * @n: how many
 */
void port_trunk_put(struct port_table *t, const uint8_t *idx, unsigned n)
{
	uint8_t left[PORT_MAX_TRUNK];

	memcpy(left, idx, n);
	while (n) {
		unsigned top = 0;

		for (unsigned v = 1; v < n; v++)
			if (left[v] > left[top])
				top = v;
		port_segment_put(t, left[top]);
		left[top] = left[--n];
	}
}
