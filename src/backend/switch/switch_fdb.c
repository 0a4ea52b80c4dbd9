/* SPDX-License-Identifier: MIT */
/* switch_fdb.c - the switch's forwarding database: learning, lookup, aging, one lock if threaded. */
#include "backend/switch/switch_fdb.h"

#include <string.h>

static void fdb_lock(struct sw_fdb *f)
{
	if (f->threaded)
		pthread_mutex_lock(&f->lock);
}

static void fdb_unlock(struct sw_fdb *f)
{
	if (f->threaded)
		pthread_mutex_unlock(&f->lock);
}

/* A change the flow caches holding answers from set s must see (under the lock). */
static void fdb_bump(struct sw_fdb *f, unsigned s)
{
	__atomic_store_n(&f->seq[s], f->seq[s] + 1, __ATOMIC_RELEASE);
}

/* A counter the statistics read without the lock (its writers hold it). */
static void fdb_count(uint64_t *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

static void fdb_learned_add(struct fdb_port *fp, int d)
{
	__atomic_store_n(&fp->learned, (uint16_t)(fp->learned + d), __ATOMIC_RELAXED);
}

/**
 * fdb_init() - an empty FDB: every entry free, every set at sequence 1, every slot at the default
 * limits.
 * @f: the FDB
 * @threaded: the switch spans several workers: learning, lookups, aging and removal take f->lock
 * (never touched otherwise)
 * @hash_key: key of the set hash, so a guest cannot aim its source MACs at one set
 */
void fdb_init(struct sw_fdb *f, bool threaded, uint64_t hash_key)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->threaded = threaded;
	f->hash_key = hash_key;
	for (unsigned s = 0; s < FDB_SETS; s++) {
		f->seq[s] = 1; /* a new port's cache (sequence 0) is never valid */
		for (unsigned w = 0; w < FDB_WAYS; w++)
			f->e[s][w].port = FDB_NO_PORT;
	}
	for (unsigned i = 0; i < SWITCH_MAX_PORTS; i++)
		fdb_set_limits(f, (uint16_t)i, SWITCH_FDB_PORT_MAX, SWITCH_LEARN_RATE);
}

/**
 * fdb_fini() - release the FDB's lock.
 * @f: the FDB; no thread may use it any more
 */
void fdb_fini(struct sw_fdb *f)
{
	pthread_mutex_destroy(&f->lock);
}

/**
 * fdb_set_limits() - the limits of one port slot (just attached).
 * @f: the FDB
 * @slot: the port slot
 * @max_macs: entries the slot may hold, clamped to 1..SWITCH_FDB_SIZE
 * @learn_rate: new MACs a second (0: no limit), clamped to SWITCH_LEARN_RATE_MAX
 *
 * The slot's refusal counters and its rate bucket start afresh. Takes the lock when threaded.
 */
void fdb_set_limits(struct sw_fdb *f, uint16_t slot, unsigned max_macs, unsigned learn_rate)
{
	struct fdb_port *fp = &f->port[slot];

	if (max_macs < 1)
		max_macs = 1;
	if (max_macs > SWITCH_FDB_SIZE)
		max_macs = SWITCH_FDB_SIZE;
	if (learn_rate > SWITCH_LEARN_RATE_MAX)
		learn_rate = SWITCH_LEARN_RATE_MAX;
	fdb_lock(f);
	fp->max_macs = (uint16_t)max_macs;
	fp->learn_rate = learn_rate;
	fp->tat_ns = 0; /* a full bucket */
	__atomic_store_n(&fp->limit_hits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&fp->rate_hits, 0, __ATOMIC_RELAXED);
	fdb_unlock(f);
}

static unsigned fdb_set_of(const struct sw_fdb *f, const uint8_t *mac)
{
	uint64_t v = 0;

	memcpy(&v, mac, FDB_ETH_ALEN);
	/* Keyed mix (splitmix64 finalizer). */
	v ^= f->hash_key;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	v ^= v >> 31;
	return (unsigned)(v % FDB_SETS);
}

static bool fdb_used(const struct fdb_entry *e)
{
	return e->port != FDB_NO_PORT;
}

/* Free entry e of set s. */
static void fdb_clear(struct sw_fdb *f, unsigned s, struct fdb_entry *e)
{
	if (!fdb_used(e))
		return;
	fdb_learned_add(&f->port[e->port], -1);
	e->port = FDB_NO_PORT;
	fdb_bump(f, s);
}

/* Forget entries not refreshed for SWITCH_FDB_AGE_SEC; at most once a second. */
static void fdb_sweep(struct sw_fdb *f, uint64_t now)
{
	if (f->last_sweep_ns && now < f->last_sweep_ns + FDB_NS)
		return;
	f->last_sweep_ns = now;
	for (unsigned s = 0; s < FDB_SETS; s++)
		for (unsigned w = 0; w < FDB_WAYS; w++)
			if (fdb_used(&f->e[s][w]) && fdb_expired(&f->e[s][w], now))
				fdb_clear(f, s, &f->e[s][w]);
}

/*
 * The entry a new MAC of port slot goes to: a free or aged one, else the set's least recently
 * seen. A port holding its quota of entries may only reuse its own, so one guest sending from
 * random MACs cannot push everyone else out of the table.
 */
static struct fdb_entry *fdb_victim(struct sw_fdb *f, struct fdb_entry *set, uint16_t slot,
				    uint64_t now)
{
	const struct fdb_port *fp = &f->port[slot];
	bool at_quota = fp->learned >= fp->max_macs;
	struct fdb_entry *lru = NULL;

	for (unsigned w = 0; w < FDB_WAYS; w++) {
		struct fdb_entry *e = &set[w];

		if (at_quota && e->port != slot)
			continue;
		if (!fdb_used(e) || fdb_expired(e, now))
			return e;
		if (!lru || __atomic_load_n(&e->last_seen_ns, __ATOMIC_RELAXED) <
				    __atomic_load_n(&lru->last_seen_ns, __ATOMIC_RELAXED))
			lru = e;
	}
	return lru;
}

/*
 * A token of slot's learning rate, if there is one (GCRA: one token every 1/rate s, at most
 * rate of them, i.e. one second's worth, saved up). The slot's own worker's clock only moves
 * forward; a time before tat (a full bucket's slack used up) refuses.
 */
static bool fdb_rate_take(struct fdb_port *fp, uint64_t now, uint64_t *retry_ns)
{
	uint64_t step, slack, t;

	if (!fp->learn_rate)
		return true;
	step = FDB_NS / fp->learn_rate;
	slack = step * (fp->learn_rate - 1);
	t = fp->tat_ns > now ? fp->tat_ns : now;
	if (t - now > slack) {
		*retry_ns = t - slack; /* the next token */
		return false;
	}
	fp->tat_ns = t + step;
	return true;
}

static struct fdb_entry *learn_locked(struct sw_fdb *f, uint16_t slot, const uint8_t *mac,
				      uint64_t now, unsigned s, enum fdb_refusal *why,
				      uint64_t *retry_ns)
{
	struct fdb_entry *set = f->e[s], *e = NULL;
	struct fdb_port *fp = &f->port[slot];

	for (unsigned w = 0; w < FDB_WAYS; w++) {
		if (fdb_used(&set[w]) && !memcmp(set[w].mac, mac, FDB_ETH_ALEN)) {
			e = &set[w];
			break;
		}
	}
	if (e && e->port == slot) {
		fdb_touch(e, now);
		return e;
	}
	if (fp->learned >= fp->max_macs) {
		fdb_sweep(f, now); /* our count may include aged entries */
		if (fp->learned >= fp->max_macs) {
			*why = FDB_AT_LIMIT;
			*retry_ns = now + FDB_NS; /* the next sweep may free some */
			fdb_count(&fp->limit_hits);
			if (e)
				return NULL; /* the MAC stays where it was */
		}
	}
	if (!e)
		e = fdb_victim(f, set, slot, now);
	if (!e)
		return NULL; /* at quota and nothing of ours in this set: frames to it flood */
	if (!fdb_rate_take(fp, now, retry_ns)) {
		*why = FDB_OVER_RATE;
		fdb_count(&fp->rate_hits);
		return NULL; /* not learned (now): frames to it flood, or go where it was */
	}
	fdb_clear(f, s, e);
	memcpy(e->mac, mac, FDB_ETH_ALEN);
	e->port = slot;
	fdb_touch(e, now);
	fdb_learned_add(fp, 1);
	fdb_bump(f, s);
	return e;
}

/**
 * fdb_learn() - learn that a source MAC is behind a port slot.
 * @f: the FDB
 * @slot: the port slot the frame came from
 * @mac: the source MAC; multicast and all-zero sources are never learnt (nor cached)
 * @now: the calling worker's clock (ns)
 * @ver: out: the version of the answer (seq 0: never valid)
 * @why: out: the limit the MAC met (FDB_LEARNT: none)
 * @retry_ns: out, when a limit refused the MAC: asking again before this time (the next token; a
 * second at max_macs) with *@ver still valid gets the same answer
 *
 * A MAC that moves follows its port, within the slot's limits: at max_macs the slot may only reuse
 * its own entries, and a MAC it does not hold yet takes a token of its learning rate. Takes the
 * lock when threaded.
 *
 * Return: the entry now holding @mac for @slot, or NULL.
 */
struct fdb_entry *fdb_learn(struct sw_fdb *f, uint16_t slot, const uint8_t *mac, uint64_t now,
			    struct fdb_ver *ver, enum fdb_refusal *why, uint64_t *retry_ns)
{
	static const uint8_t zero[FDB_ETH_ALEN];
	struct fdb_entry *e;
	unsigned s;

	*why = FDB_LEARNT;
	if ((mac[0] & 1) || !memcmp(mac, zero, FDB_ETH_ALEN)) {
		*ver = fdb_ver_none(f); /* not a valid source address: never cached */
		return NULL;
	}
	s = fdb_set_of(f, mac);
	fdb_lock(f);
	e = learn_locked(f, slot, mac, now, s, why, retry_ns);
	*ver = (struct fdb_ver){.seqp = &f->seq[s], .seq = f->seq[s]};
	fdb_unlock(f);
	return e;
}

/**
 * fdb_lookup() - the port slot a MAC was last seen behind.
 * @f: the FDB
 * @mac: the destination MAC
 * @now: the calling worker's clock (ns); an aged entry is cleared
 * @entry: out: the entry, NULL if none
 * @ver: out: the answer's version, for the flow caches
 *
 * Takes the lock when threaded.
 *
 * Return: the slot, or FDB_NO_PORT if unknown or aged.
 */
uint16_t fdb_lookup(struct sw_fdb *f, const uint8_t *mac, uint64_t now, struct fdb_entry **entry,
		    struct fdb_ver *ver)
{
	unsigned s = fdb_set_of(f, mac);
	struct fdb_entry *set = f->e[s];
	uint16_t port = FDB_NO_PORT;

	*entry = NULL;
	fdb_lock(f);
	for (unsigned w = 0; w < FDB_WAYS; w++) {
		struct fdb_entry *e = &set[w];

		if (!fdb_used(e) || memcmp(e->mac, mac, FDB_ETH_ALEN))
			continue;
		if (fdb_expired(e, now)) {
			fdb_clear(f, s, e);
			break;
		}
		*entry = e;
		port = e->port;
		break;
	}
	*ver = (struct fdb_ver){.seqp = &f->seq[s], .seq = f->seq[s]};
	fdb_unlock(f);
	return port;
}

/**
 * fdb_forget_port() - clear every entry of a port slot (a port that goes); the flow caches holding
 * answers from their sets go stale. Takes the lock when threaded.
 * @f: the FDB
 * @slot: the port slot
 */
void fdb_forget_port(struct sw_fdb *f, uint16_t slot)
{
	fdb_lock(f);
	for (unsigned s = 0; s < FDB_SETS; s++)
		for (unsigned w = 0; w < FDB_WAYS; w++)
			if (f->e[s][w].port == slot)
				fdb_clear(f, s, &f->e[s][w]);
	fdb_unlock(f);
}

/**
 * fdb_port_read() - a copy of a slot's limits and counters (tat_ns reads 0).
 * @f: the FDB
 * @slot: the port slot
 * @out: the copy
 *
 * Any thread, without the lock: relaxed loads of what the lock's holders store atomically.
 */
void fdb_port_read(const struct sw_fdb *f, uint16_t slot, struct fdb_port *out)
{
	const struct fdb_port *fp = &f->port[slot];

	out->learned = __atomic_load_n(&fp->learned, __ATOMIC_RELAXED);
	out->max_macs = fp->max_macs;
	out->learn_rate = fp->learn_rate;
	out->tat_ns = 0;
	out->limit_hits = __atomic_load_n(&fp->limit_hits, __ATOMIC_RELAXED);
	out->rate_hits = __atomic_load_n(&fp->rate_hits, __ATOMIC_RELAXED);
}
