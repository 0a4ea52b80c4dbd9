/* SPDX-License-Identifier: MIT */
/* switch_fdb.h - the switch's forwarding database: learned MACs, aging, per-port limits. */
#ifndef VNETD_SWITCH_FDB_H
#define VNETD_SWITCH_FDB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/switch/switch_limits.h"

#define FDB_ETH_ALEN 6
#define FDB_WAYS 4 /* set-associative, LRU within a set */
#define FDB_SETS (SWITCH_FDB_SIZE / FDB_WAYS)
#define FDB_NO_PORT 0xffffu
#define FDB_NS 1000000000ull

/*
 * One learned source MAC. mac and port change only under the FDB's lock (a thread that did
 * not take it never reads them: the flow caches keep copies); last_seen_ns is refreshed by
 * whichever worker forwards from the MAC, so it is read and written with relaxed atomics.
 */
struct fdb_entry {
	uint8_t mac[FDB_ETH_ALEN];
	uint16_t port; /* port slot, FDB_NO_PORT if unused */
	uint64_t last_seen_ns;
};

/*
 * What one port slot may teach the table, and what it was refused (under the lock; `learned`
 * and the two counters are stored with relaxed atomics, so the statistics read them without
 * it). Learning a MAC the slot does not hold yet (new, or moving from another port) needs a
 * token of a bucket of learn_rate tokens refilled at learn_rate a second (a GCRA: tat_ns is
 * when the bucket is full again); learn_rate 0 is no rate limit.
 */
struct fdb_port {
	uint16_t learned;    /* entries the slot holds */
	uint16_t max_macs;   /* ... at most (SWITCH_FDB_PORT_MAX unless set) */
	uint32_t learn_rate; /* new MACs a second */
	uint64_t tat_ns;
	uint64_t limit_hits; /* new MACs that found the slot at max_macs */
	uint64_t rate_hits;  /* new MACs not learned: over learn_rate */
};

/*
 * A cached answer's version: its set's sequence number, and where that lives. An answer (an
 * entry, or "not there") read under the lock from a set at sequence q stays valid, without the
 * lock, while the set is still at q: every change of an entry bumps its set's sequence only,
 * so learning a new MAC invalidates the flow caches holding an answer from that one set (of
 * FDB_SETS), not every port's cache on every worker. seq 0 is never valid (sets start at 1);
 * seqp is never NULL (fdb_ver_none()), so a check is two loads and a compare.
 */
struct fdb_ver {
	const uint64_t *seqp;
	uint64_t seq;
};

/* Why fdb_learn() did not learn a MAC as asked (or learnt it in place of one of the port's). */
enum fdb_refusal {
	FDB_LEARNT = 0,
	FDB_AT_LIMIT, /* the slot holds max_macs: only its own entries may be reused */
	FDB_OVER_RATE,
};

/*
 * A leaf (calls nothing of vnetd's). With `threaded`, learning, lookups, aging and removal
 * take `lock`; set sequences are published with release stores after the change (under the
 * lock) and read with acquire loads. Without `threaded` (one worker) the lock is never
 * touched.
 */
struct sw_fdb {
	pthread_mutex_t lock;
	bool threaded;
	uint64_t hash_key;	/* so a guest cannot aim its source MACs at one set */
	uint64_t last_sweep_ns; /* last full scan for aged entries */
	struct fdb_port port[SWITCH_MAX_PORTS];
	uint64_t seq[FDB_SETS]; /* apart from the entries: a hit reads one line of them */
	struct fdb_entry e[FDB_SETS][FDB_WAYS];
};

_Static_assert(SWITCH_MAX_PORTS < FDB_NO_PORT, "port slots must fit an FDB entry");
_Static_assert(FDB_SETS * FDB_WAYS == SWITCH_FDB_SIZE, "FDB size must be a multiple of FDB_WAYS");
_Static_assert(SWITCH_FDB_SIZE <= UINT16_MAX, "a slot's count of entries fits fdb_port.learned");

/* fdb_init() - an empty FDB keyed with hash_key; its lock only used when threaded. */
void fdb_init(struct sw_fdb *f, bool threaded, uint64_t hash_key);

/* fdb_fini() - release the lock. */
void fdb_fini(struct sw_fdb *f);

/* fdb_valid() - whether an answer of version v is still current (any thread, no lock). */
static inline bool fdb_valid(const struct fdb_ver *v)
{
	return v->seq == __atomic_load_n(v->seqp, __ATOMIC_ACQUIRE);
}

/* fdb_ver_none() - the version of no answer: never valid. */
static inline struct fdb_ver fdb_ver_none(const struct sw_fdb *f)
{
	return (struct fdb_ver){.seqp = &f->seq[0], .seq = 0};
}

/* fdb_expired() - whether e was not refreshed for SWITCH_FDB_AGE_SEC by `now`. */
static inline bool fdb_expired(const struct fdb_entry *e, uint64_t now)
{
	uint64_t seen = __atomic_load_n(&e->last_seen_ns, __ATOMIC_RELAXED);

	/* Workers keep their own clocks: one a little behind another (a negative age) is not
	 * "aged". Monotonic nanoseconds: the difference always fits. */
	return (int64_t)(now - seen) >= (int64_t)SWITCH_FDB_AGE_SEC * (int64_t)FDB_NS;
}

/* fdb_touch() - e's MAC was seen again as a source at `now`. */
static inline void fdb_touch(struct fdb_entry *e, uint64_t now)
{
	__atomic_store_n(&e->last_seen_ns, now, __ATOMIC_RELAXED);
}

/*
 * fdb_set_limits() - port slot `slot` (just attached: its counters start at 0) may hold at
 * most max_macs (1..SWITCH_FDB_SIZE) entries and learn learn_rate (0: any number) new MACs a
 * second.
 */
void fdb_set_limits(struct sw_fdb *f, uint16_t slot, unsigned max_macs, unsigned learn_rate);

/*
 * fdb_learn() - `mac` is behind port `slot` (a MAC that moves follows it, within the slot's
 * limits: at max_macs it may only reuse its own entries, and a MAC it does not hold yet takes
 * a token of its learning rate). Returns the entry now holding it for slot, or NULL; *ver is
 * the version of that answer (seq 0: never valid), *why what limit the MAC met (FDB_LEARNT:
 * none). When the MAC was not learnt for a limit, asking again before *retry_ns (the next
 * token; a second at max_macs) with its set unchanged (*ver valid) gets the same answer.
 */
struct fdb_entry *fdb_learn(struct sw_fdb *f, uint16_t slot, const uint8_t *mac, uint64_t now,
			    struct fdb_ver *ver, enum fdb_refusal *why, uint64_t *retry_ns);

/*
 * fdb_lookup() - the port slot `mac` was last seen behind, FDB_NO_PORT if unknown or aged
 * (an aged entry is cleared); *entry the entry (NULL if none), *ver the answer's version.
 */
uint16_t fdb_lookup(struct sw_fdb *f, const uint8_t *mac, uint64_t now, struct fdb_entry **entry,
		    struct fdb_ver *ver);

/* fdb_forget_port() - clear every entry of port `slot` (their sets' answers go stale). */
void fdb_forget_port(struct sw_fdb *f, uint16_t slot);

/* fdb_port_read() - a copy of slot's limits and counters; any thread, no lock. */
void fdb_port_read(const struct sw_fdb *f, uint16_t slot, struct fdb_port *out);

#endif
