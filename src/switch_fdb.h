/* switch_fdb.h - the switch's forwarding database: learned MACs, aging, per-port quotas. */
#ifndef VNETD_SWITCH_FDB_H
#define VNETD_SWITCH_FDB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "switch.h"

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
 * A leaf (calls nothing of vnetd's). With `threaded`, learning, lookups, aging and removal
 * take `lock`, and `gen` (bumped under the lock whenever an entry is added, moved or cleared)
 * is published with release stores: a flow cache holding an answer for generation g stays
 * valid, without the lock, while fdb_gen() is still g. Without `threaded` (one worker) the
 * lock is never touched.
 */
struct sw_fdb {
	pthread_mutex_t lock;
	bool threaded;
	uint64_t hash_key;	/* so a guest cannot aim its source MACs at one set */
	uint64_t last_sweep_ns; /* last full scan for aged entries */
	uint64_t gen;
	uint16_t learned[SWITCH_MAX_PORTS]; /* entries each port slot holds */
	struct fdb_entry e[FDB_SETS][FDB_WAYS];
};

_Static_assert(SWITCH_MAX_PORTS < FDB_NO_PORT, "port slots must fit an FDB entry");
_Static_assert(FDB_SETS * FDB_WAYS == SWITCH_FDB_SIZE, "FDB size must be a multiple of FDB_WAYS");

/* fdb_init() - an empty FDB keyed with hash_key; its lock only used when threaded. */
void fdb_init(struct sw_fdb *f, bool threaded, uint64_t hash_key);

/* fdb_fini() - release the lock. */
void fdb_fini(struct sw_fdb *f);

/* fdb_gen() - the current generation: cached answers of another generation are stale. */
static inline uint64_t fdb_gen(const struct sw_fdb *f)
{
	return __atomic_load_n(&f->gen, __ATOMIC_ACQUIRE);
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
 * fdb_learn() - `mac` is behind port `slot` (a MAC that moves follows it, a port at its quota
 * of SWITCH_FDB_PORT_MAX may only reuse its own entries). Returns the entry now holding it for
 * slot, or NULL; *gen is the generation that answer belongs to.
 */
struct fdb_entry *fdb_learn(struct sw_fdb *f, uint16_t slot, const uint8_t *mac, uint64_t now,
			    uint64_t *gen);

/*
 * fdb_lookup() - the port slot `mac` was last seen behind, FDB_NO_PORT if unknown or aged
 * (an aged entry is cleared); *entry the entry (NULL if none), *gen the answer's generation.
 */
uint16_t fdb_lookup(struct sw_fdb *f, const uint8_t *mac, uint64_t now, struct fdb_entry **entry,
		    uint64_t *gen);

/* fdb_forget_port() - clear every entry of port `slot`; bumps the generation in any case. */
void fdb_forget_port(struct sw_fdb *f, uint16_t slot);

#endif
