/* coal_adaptive.c - device-side adaptive coalescing: picks a profile per queue from what it sees (pure). */
#include "coal_adaptive.h"

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

const struct coal_params *coal_adapt_profile(unsigned level)
{
	return &profiles[level < COAL_ADAPT_LEVELS ? level : COAL_ADAPT_LEVELS - 1];
}

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

/* Whether x is more than 10 % below ref. */
static bool fell(uint64_t x, uint64_t ref)
{
	return x < ref - ref / 10u;
}

static void settle(struct coal_adapt *a, uint64_t pps)
{
	a->state = COAL_ADAPT_SETTLED;
	a->settled_pps = pps;
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
	settle(a, a->ref.pps);
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

void coal_adapt_start(struct coal_adapt *a, uint64_t now_ns, const struct coal_adapt_counters *c)
{
	memset(a, 0, sizeof(*a));
	a->on = true;
	refresh(a);
	a->win_start_ns = now_ns;
	a->base = *c;
}

void coal_adapt_stop(struct coal_adapt *a)
{
	a->on = false;
	a->state = COAL_ADAPT_SETTLED;
}

/*
 * One window's decision. The rules, in order:
 *  - fewer than COAL_ADAPT_MIN_PACKETS packets: sparse traffic (a ping-pong, an idle queue);
 *    nothing to batch, so level 0 (and after COAL_ADAPT_IDLE_NS without a decision, the wait
 *    before probing is forgotten: a new load);
 *  - probing (one window one level up): kept only if the notification rate fell by more than
 *    10 % while neither the packet nor the byte rate fell by more than 10 % (a flow that slows
 *    down when its notifications wait is latency-bound); else back down, tired for a while;
 *  - settled: if the packet rate changed fourfold since it settled, the load changed: re-learn
 *    (from level 0 if it fell: bulk ended); above level 0, if every notification sent still
 *    carries about one packet (holding gains nothing: a ping-pong, a stall guard firing), one
 *    level down and tired, as after a failed probe;
 *  - settled and not tired: probe one level up.
 * Each failure doubles the wait before the next probe from that level (COAL_ADAPT_TIRED_MIN
 * .. _MAX windows); only an idle queue resets it: a load that does not gain settles.
 */
static void decide(struct coal_adapt *a, uint64_t packets, uint64_t dur_ns,
		   const struct coal_adapt_rates *r)
{
	if (packets < COAL_ADAPT_MIN_PACKETS) {
		a->level = 0;
		settle(a, r->pps);
		if (dur_ns >= COAL_ADAPT_IDLE_NS)
			refresh(a); /* idle that long: what comes next is a new load */
		return;
	}
	if (a->state == COAL_ADAPT_PROBING) {
		if (!fell(r->pps, a->ref.pps) && !fell(r->bps, a->ref.bps) && fell(r->nps, a->ref.nps)) {
			settle(a, r->pps); /* better: the next window tries one more level */
			a->tired = 0;
		} else {
			probe_failed(a);
		}
		return;
	}
	if (a->settled_pps / 4 > r->pps || r->pps / 4 > a->settled_pps) {
		/* The load changed fourfold: re-learn, from level 0 if it fell (bulk ended). The
		 * wait before probing stays: a load that changes all the time is no reason to. */
		if (r->pps < a->settled_pps)
			a->level = 0;
		settle(a, r->pps);
		return;
	}
	if (a->level > 0 && r->nps >= r->pps - r->pps / 10u) {
		a->ref = *r;
		probe_failed(a);
		return;
	}
	if (a->tired) {
		a->tired--;
		return;
	}
	if (a->level + 1 < COAL_ADAPT_LEVELS) {
		a->ref = *r;
		a->level++;
		a->state = COAL_ADAPT_PROBING;
	}
}

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
	a->last = r;
	a->windows++;
	a->win_start_ns = now_ns;
	a->base = *c;
	decide(a, packets, dur, &r);
	if (a->level == before)
		return false;
	a->changes++;
	return true;
}
