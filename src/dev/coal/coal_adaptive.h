/* SPDX-License-Identifier: MIT */
/* coal_adaptive.h - device-side adaptive coalescing: a deterministic DIM-like controller per queue. */
#ifndef VNETD_COAL_ADAPTIVE_H
#define VNETD_COAL_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/coal/coalesce.h"

#define COAL_ADAPT_LEVELS 6                 /* profiles, level 0 = notify every packet */
#define COAL_ADAPT_WINDOW_NS 4000000ull     /* a sample covers at least 4 ms */
#define COAL_ADAPT_MIN_PACKETS 8            /* fewer in a window: sparse traffic, level 0 */
#define COAL_ADAPT_BATCH 2                  /* packets a hold should span */
#define COAL_ADAPT_BATCH_DEEP 8             /* ... on a deep queue, where some level spans it */
#define COAL_ADAPT_TIRED_MIN 8              /* windows parked after the first failed probe */
#define COAL_ADAPT_TIRED_MAX 256            /* ... doubling per failure up to this (~1 s) */
#define COAL_ADAPT_IDLE_NS 256000000ull     /* a window this long (no traffic): a new load */
#define COAL_ADAPT_ACK_BYTES 128            /* return stream: its packets average at most this */
#define COAL_ADAPT_ACK_RATIO 16             /* ... while the pair's other queue moves x this */

/*
 * Cumulative counters of one queue, as the controller samples them. Notifications are those
 * sent: the ones the driver suppressed (flags, EVENT_IDX) cost nothing and do not count.
 */
struct coal_adapt_counters {
	uint64_t packets, bytes, notifications;
	uint64_t peer_packets; /* packets of the pair's other queue (RX for a TX queue, and back) */
	uint64_t peer_bytes;   /* ... and its bytes */
};

enum coal_adapt_state {
	COAL_ADAPT_SETTLED, /* on a level; probes one up towards its target when not tired */
	COAL_ADAPT_PROBING, /* first window on the level above `ref`: kept unless the flow slowed */
};

/* Rates of one window, per second. */
struct coal_adapt_rates {
	uint64_t pps, bps, nps; /* packets, bytes, notifications sent (after driver suppression) */
	uint64_t peer_pps;      /* packets of the pair's other queue */
	uint64_t peer_bps;      /* bytes of the pair's other queue */
};

/* Controller state of one queue (all zero: off). */
struct coal_adapt {
	bool on;
	bool deep;        /* RX: batch COAL_ADAPT_BATCH_DEEP packets where a level spans them */
	uint8_t level;
	enum coal_adapt_state state;
	uint16_t tired;   /* windows left before the next probe up */
	uint16_t backoff[COAL_ADAPT_LEVELS]; /* `tired` after the next failed probe from a level */
	uint64_t win_start_ns;
	struct coal_adapt_counters base; /* counters when the window started */
	struct coal_adapt_rates ref;     /* rates on the level below, before the probe */
	uint64_t windows;                /* windows evaluated */
	uint64_t changes;                /* level changes */
};

/* coal_adapt_start() - switch the controller on at level 0, first window from now_ns. */
void coal_adapt_start(struct coal_adapt *a, uint64_t now_ns, const struct coal_adapt_counters *c);

/* coal_adapt_stop() - switch it off (the queue keeps whatever parameters it has). */
void coal_adapt_stop(struct coal_adapt *a);

/*
 * coal_adapt_tick() - called on every notification decision of the queue. Once a window has
 * passed, evaluates it and may change level: true when the level changed (apply
 * coal_adapt_profile(a->level) then).
 */
bool coal_adapt_tick(struct coal_adapt *a, uint64_t now_ns, const struct coal_adapt_counters *c);

/* coal_adapt_profile() - max_usecs / max_packets of a level (clamped to the last one). */
const struct coal_params *coal_adapt_profile(unsigned level);

/* coal_adapt_level_of() - the level whose profile p is, or -1 (a migrated queue's values). */
int coal_adapt_level_of(const struct coal_params *p);

/* coal_adapt_state_name() - "off", "settled" or "probing". */
const char *coal_adapt_state_name(const struct coal_adapt *a);

#endif
