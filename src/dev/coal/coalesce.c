/* SPDX-License-Identifier: MIT */
/* coalesce.c - notification coalescing rules for one virtqueue (pure, clock passed in). */
#include "dev/coal/coalesce.h"

/**
 * coal_add_packets() - count packets a queue completed.
 * @c: the queue's counting state
 * @packets: packets completed (0: nothing happens)
 * @now_ns: when; the first packet after a notification starts the window
 *
 * The count saturates at UINT32_MAX.
 */
void coal_add_packets(struct coal_state *c, uint32_t packets, uint64_t now_ns)
{
	if (!packets)
		return;
	/* Counting starts with the first packet after a notification. */
	if (c->pending == 0)
		c->first_ns = now_ns;
	c->pending = c->pending > UINT32_MAX - packets ? UINT32_MAX : c->pending + packets;
}

/**
 * coal_evaluate() - apply the coalescing rules at a point in time.
 * @c: the queue's counting state
 * @now_ns: the time now
 * @deadline_ns: set on COAL_HOLD only: when the notification becomes due
 *
 * Return: COAL_IDLE when nothing is pending; COAL_DUE when max_packets is reached, max_usecs has
 * passed since the first pending packet or coalescing is off; COAL_HOLD otherwise.
 */
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

/**
 * coal_restart() - start counting over after a notification was sent or suppressed by the driver.
 * @c: the queue's counting state
 */
void coal_restart(struct coal_state *c)
{
	c->pending = 0;
	c->first_ns = 0;
}

/**
 * coal_set_params() - give a queue new coalescing parameters.
 * @c: the queue's counting state
 * @p: the new parameters
 * @who: who set them (shown by stats)
 *
 * Pending packets stay counted: the caller re-evaluates afterwards.
 */
void coal_set_params(struct coal_state *c, const struct coal_params *p, enum coal_setter who)
{
	c->params = *p;
	c->setter = who;
}

/**
 * coal_setter_name() - the name of a setter as shown by stats.
 *
 * Return: "none", "guest", "host" or "adaptive" (a static string).
 */
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
