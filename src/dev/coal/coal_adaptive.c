/* SPDX-License-Identifier: MIT */
/* coal_adaptive.c - device-side adaptive coalescing: picks a profile per queue from what it sees (pure). */
#include "dev/coal/coal_adaptive.h"

#include <string.h>

/*
 * Profiles, from "notify every packet" to the most moderation (like Linux net DIM's, which
 * go 1..256 us with 256 packets). Level 0 is what a queue gets with no coalescing at all.
 */
static const struct coal_params profiles[COAL_ADAPT_LEVELS] = {
	{.max_packets = 0, .max_usecs = 0},    {.max_packets = 8, .max_usecs = 20},
	{.max_packets = 16, .max_usecs = 50},  {.max_packets = 32, .max_usecs = 100},
	{.max_packets = 64, .max_usecs = 200}, {.max_packets = 64, .max_usecs = 400},
};

/**
 * coal_adapt_profile() - the coalescing parameters of one adaptive level.
 * @level: 0 (notify every packet) .. COAL_ADAPT_LEVELS - 1; larger values are clamped to the last
 *
 * Return: the level's max_usecs / max_packets (a static table entry, never NULL).
 */
const struct coal_params *coal_adapt_profile(unsigned level)
{
	return &profiles[level < COAL_ADAPT_LEVELS ? level : COAL_ADAPT_LEVELS - 1];
}

/**
 * coal_adapt_level_of() - which adaptive level a set of parameters is.
 * @p: the parameters, e.g. a migrated queue's
 *
 * Return: the level whose profile equals @p exactly, or -1 if none does.
 */
int coal_adapt_level_of(const struct coal_params *p)
{
	for (unsigned l = 0; l < COAL_ADAPT_LEVELS; l++)
		if (profiles[l].max_packets == p->max_packets && profiles[l].max_usecs == p->max_usecs)
			return (int)l;
	return -1;
}

/**
 * coal_adapt_state_name() - the controller's state as shown by stats.
 *
 * Return: "off", "settled" or "probing" (a static string).
 */
const char *coal_adapt_state_name(const struct coal_adapt *a)
{
	if (!a->on)
		return "off";
	return a->state == COAL_ADAPT_PROBING ? "probing" : "settled";
}

/* a - b for a counter that may have been reset (reset-stats) since b was taken: then 0. */
static uint64_t delta(uint64_t a, uint64_t b)
{
	return a >= b ? a - b : 0;
}

/* n events over dur_ns as a rate per second (dur_ns >= the window, so no division by 0). */
static uint64_t per_sec(uint64_t n, uint64_t dur_ns)
{
	uint64_t us = dur_ns / 1000u;

	if (n > UINT64_MAX / 1000000u)
		n = UINT64_MAX / 1000000u;
	return n * 1000000u / us;
}

static void settle(struct coal_adapt *a)
{
	a->state = COAL_ADAPT_SETTLED;
}

/*
 * A probe did not pay: back to the level below, and wait longer before probing from there
 * again (each level keeps its own wait: success higher up does not make a failing probe
 * cheaper).
 */
static void probe_failed(struct coal_adapt *a)
{
	uint16_t *b;

	a->level--;
	settle(a);
	b = &a->backoff[a->level];
	a->tired = *b;
	*b = *b >= COAL_ADAPT_TIRED_MAX / 2 ? COAL_ADAPT_TIRED_MAX : (uint16_t)(*b * 2);
}

/* A new load: probes may come at once, and every level's wait starts short again. */
static void refresh(struct coal_adapt *a)
{
	a->tired = 0;
	for (unsigned l = 0; l < COAL_ADAPT_LEVELS; l++)
		a->backoff[l] = COAL_ADAPT_TIRED_MIN;
}

/**
 * coal_adapt_start() - switch the controller on at level 0.
 * @a: the controller, reset completely (waits before probing start short) except for @a->deep,
 *     which the queue's owner sets (notify.c: RX queues) and which stays
 * @now_ns: start of the first window
 * @c: the queue's counters now, the first window's base
 */
void coal_adapt_start(struct coal_adapt *a, uint64_t now_ns, const struct coal_adapt_counters *c)
{
	bool deep = a->deep;

	memset(a, 0, sizeof(*a));
	a->on = true;
	a->deep = deep; /* the queue's kind: notify.c keeps it */
	refresh(a);
	a->win_start_ns = now_ns;
	a->base = *c;
}

/**
 * coal_adapt_stop() - switch the controller off.
 * @a: the controller; its level and counters stay, the queue keeps whatever parameters it has
 */
void coal_adapt_stop(struct coal_adapt *a)
{
	a->on = false;
	a->state = COAL_ADAPT_SETTLED;
}

/*
 * A request/response pattern: at least 90 % of the packets were notified one by one (nothing
 * merged, by the driver or by a hold) and the pair's other queue moved 75..125 % as many (an
 * answer per request). A stream into a guest that sends nothing back, or one whose driver
 * polls (NAPI suppresses notifications), is not one.
 */
static bool request_response(const struct coal_adapt_rates *r)
{
	return r->nps >= r->pps - r->pps / 10u && r->peer_pps >= r->pps - r->pps / 4u &&
	       r->peer_pps <= r->pps + r->pps / 4u;
}

/*
 * A return stream on a TX queue: small packets (ACKs: at most COAL_ADAPT_ACK_BYTES on average)
 * while the pair's RX queue moves at least COAL_ADAPT_ACK_RATIO x their bytes and more packets:
 * the guest acknowledging a stream it receives. Their completions only free the ACKs (TCP's
 * small-queue limit counts data, not pure ACKs), so the longest hold costs the stream nothing,
 * though at an ACK rate no level spans a batch. RX queues never: ACKs coming in clock the
 * guest's own sending.
 */
static bool return_stream(const struct coal_adapt *a, const struct coal_adapt_rates *r)
{
	return !a->deep && r->pps && r->bps <= r->pps * COAL_ADAPT_ACK_BYTES &&
	       r->peer_bps / COAL_ADAPT_ACK_RATIO >= r->bps && r->peer_pps > r->pps;
}

/* The lowest level whose hold spans batch packets at this rate; 0 if none does. */
static unsigned lowest_spanning(uint64_t pps, uint64_t batch)
{
	for (unsigned l = 1; l < COAL_ADAPT_LEVELS; l++)
		if (pps * profiles[l].max_usecs >= batch * 1000000ull)
			return l;
	return 0;
}

/*
 * The lowest level whose hold spans COAL_ADAPT_BATCH packets at this rate (0 if none does);
 * on a deep queue, the lowest spanning COAL_ADAPT_BATCH_DEEP where one does. Deep is for RX:
 * a guest that receives a stream this fast polls it (NAPI) and takes a notification per poll;
 * a longer hold merges polls, and what is held is data its driver would only batch anyway.
 * TX stays shallow: held TX completions are socket memory the guest's TCP (TSQ) waits for,
 * except for a return stream (return_stream(): ACKs), whose target is the top level.
 */
static unsigned target_level(const struct coal_adapt *a, const struct coal_adapt_rates *r)
{
	uint64_t pps = r->pps;
	unsigned t = lowest_spanning(pps, COAL_ADAPT_BATCH);

	if (return_stream(a, r))
		return COAL_ADAPT_LEVELS - 1;
	if (a->deep) {
		unsigned d = lowest_spanning(pps, COAL_ADAPT_BATCH_DEEP);

		if (d > t)
			t = d;
	}
	return t;
}

/* Whether a level's hold spans 1 .. 4 x the queue's batch of packets at this rate. */
static bool in_band(const struct coal_adapt *a, unsigned level, uint64_t pps)
{
	/* packets per hold, times 10^6 */
	uint64_t span_x1m = pps * coal_adapt_profile(level)->max_usecs;
	uint64_t batch = a->deep ? COAL_ADAPT_BATCH_DEEP : COAL_ADAPT_BATCH;

	return span_x1m >= 1000000ull && span_x1m <= 4ull * batch * 1000000ull;
}

/*
 * One window's decision. The rules, in order:
 *  - fewer than COAL_ADAPT_MIN_PACKETS packets: sparse traffic (a ping-pong, an idle queue);
 *    nothing to batch, so level 0 (after COAL_ADAPT_IDLE_NS without a decision, every wait
 *    before probing is forgotten: a new load);
 *  - request/response (every packet notified, and the pair's other queue moves about as many
 *    packets: each one answers the last): nothing can batch, a hold only delays the answer;
 *    level 0, and a probe that got here failed;
 *  - probing (the first window one level up): kept unless the packet or byte rate fell by
 *    more than a quarter (a flow that slows down when its notifications wait is latency-bound:
 *    back down, and a longer wait before probing from there again);
 *  - the target is the lowest level whose max_usecs spans COAL_ADAPT_BATCH packets at the
 *    window's packet rate (so a hold costs about two packet gaps), on a deep (RX) queue
 *    COAL_ADAPT_BATCH_DEEP where a level spans that many; a level above it that spans 1 to 4 x
 *    the batch is kept (hysteresis); a TX queue carrying a return stream (ACKs of a stream
 *    its pair receives) targets the top level;
 *  - settled at or above the target, every notification sent still carrying about one packet
 *    (holding gains nothing: a ping-pong, the stall guard firing): one level down, as after a
 *    failed probe;
 *  - below the level: straight there (the load fell); above it and not tired: probe one
 *    level up (the levels on the way batch nothing yet: that is no reason to stop).
 * A failed probe doubles the wait before the next probe from that level (COAL_ADAPT_TIRED_MIN
 * .. _MAX windows); only an idle queue resets it, so a load that loses settles for good.
 */
static void decide(struct coal_adapt *a, uint64_t packets, uint64_t dur_ns,
		   const struct coal_adapt_rates *r)
{
	unsigned target;

	if (packets < COAL_ADAPT_MIN_PACKETS) {
		a->level = 0;
		settle(a);
		if (dur_ns >= COAL_ADAPT_IDLE_NS)
			refresh(a); /* idle that long: what comes next is a new load */
		return;
	}
	if (request_response(r)) {
		if (a->state == COAL_ADAPT_PROBING)
			probe_failed(a);
		a->level = 0;
		settle(a);
		return;
	}
	if (a->state == COAL_ADAPT_PROBING) {
		if (r->pps < a->ref.pps - a->ref.pps / 4 || r->bps < a->ref.bps - a->ref.bps / 4)
			probe_failed(a);
		else
			settle(a);
		return;
	}
	target = target_level(a, r);
	if (target < a->level && in_band(a, a->level, r->pps))
		target = a->level; /* hysteresis: no flapping at a boundary */
	if (target < a->level) {
		a->level = (uint8_t)target;
		settle(a);
	} else if (a->level > 0 && a->level >= target && r->nps >= r->pps - r->pps / 10u) {
		a->ref = *r;
		probe_failed(a);
	} else if (target > a->level && !a->tired) {
		a->ref = *r;
		a->level++;
		a->state = COAL_ADAPT_PROBING;
	} else if (a->tired) {
		a->tired--;
	}
}

/**
 * coal_adapt_tick() - sample the queue; once a window has passed, evaluate it.
 * @a: the controller (does nothing when off)
 * @now_ns: the time of this notification decision
 * @c: the queue's cumulative counters now
 *
 * Called on every notification decision of the queue. A window lasts at least
 * COAL_ADAPT_WINDOW_NS; evaluating it may move the controller one or more levels (see decide()).
 *
 * Return: true when the level changed: the caller applies coal_adapt_profile(a->level) then.
 */
bool coal_adapt_tick(struct coal_adapt *a, uint64_t now_ns, const struct coal_adapt_counters *c)
{
	uint64_t dur, packets;
	struct coal_adapt_rates r;
	uint8_t before = a->level;

	if (!a->on || now_ns < a->win_start_ns || now_ns - a->win_start_ns < COAL_ADAPT_WINDOW_NS)
		return false;
	dur = now_ns - a->win_start_ns;
	packets = delta(c->packets, a->base.packets);
	r.pps = per_sec(packets, dur);
	r.bps = per_sec(delta(c->bytes, a->base.bytes), dur);
	r.nps = per_sec(delta(c->notifications, a->base.notifications), dur);
	r.peer_pps = per_sec(delta(c->peer_packets, a->base.peer_packets), dur);
	r.peer_bps = per_sec(delta(c->peer_bytes, a->base.peer_bytes), dur);
	a->windows++;
	a->win_start_ns = now_ns;
	a->base = *c;
	decide(a, packets, dur, &r);
	if (a->level == before)
		return false;
	a->changes++;
	return true;
}
