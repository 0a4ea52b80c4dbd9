/* SPDX-License-Identifier: MIT */
/* coalesce.c - notification coalescing rules for one virtqueue (pure, clock passed in). */
#include "coalesce.h"

void coal_add_packets(struct coal_state *c, uint32_t packets, uint64_t now_ns)
{
	if (!packets)
		return;
	/* Counting starts with the first packet after a notification. */
	if (c->pending == 0)
		c->first_ns = now_ns;
	c->pending = c->pending > UINT32_MAX - packets ? UINT32_MAX : c->pending + packets;
}

enum coal_verdict coal_evaluate(const struct coal_state *c, uint64_t now_ns, uint64_t *deadline_ns)
{
	uint64_t deadline;

	if (c->pending == 0)
		return COAL_IDLE;
	/* usecs = 0 or packets = 0: notify after every packet. */
	if (!coal_active(&c->params) || c->pending >= c->params.max_packets)
		return COAL_DUE;
	deadline = c->first_ns + (uint64_t)c->params.max_usecs * 1000u;
	if (now_ns >= deadline)
		return COAL_DUE;
	*deadline_ns = deadline;
	return COAL_HOLD;
}

void coal_restart(struct coal_state *c)
{
	c->pending = 0;
	c->first_ns = 0;
}

void coal_set_params(struct coal_state *c, const struct coal_params *p, enum coal_setter who)
{
	c->params = *p;
	c->setter = who;
}

const char *coal_setter_name(enum coal_setter who)
{
	switch (who) {
	case COAL_SET_GUEST:
		return "guest";
	case COAL_SET_HOST:
		return "host";
	case COAL_SET_ADAPTIVE:
		return "adaptive";
	default:
		return "none";
	}
}
