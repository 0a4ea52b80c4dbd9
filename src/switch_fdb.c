/* switch_fdb.c - the switch's forwarding database: learning, lookup, aging, one lock if threaded. */
#include "switch_fdb.h"

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

/* A change the flow caches must see: a new generation (under the lock). */
static void fdb_bump(struct sw_fdb *f)
{
	__atomic_store_n(&f->gen, f->gen + 1, __ATOMIC_RELEASE);
}

/* fdb_init() - every entry free, generation 1. */
void fdb_init(struct sw_fdb *f, bool threaded, uint64_t hash_key)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->threaded = threaded;
	f->hash_key = hash_key;
	f->gen = 1; /* a new port's cache (generation 0) is never valid */
	for (unsigned s = 0; s < FDB_SETS; s++)
		for (unsigned w = 0; w < FDB_WAYS; w++)
			f->e[s][w].port = FDB_NO_PORT;
}

/* fdb_fini() - release the lock. */
void fdb_fini(struct sw_fdb *f)
{
	pthread_mutex_destroy(&f->lock);
}

static struct fdb_entry *fdb_set(struct sw_fdb *f, const uint8_t *mac)
{
	uint64_t v = 0;

	memcpy(&v, mac, FDB_ETH_ALEN);
	/* Keyed mix (splitmix64 finalizer). */
	v ^= f->hash_key;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	v ^= v >> 31;
	return f->e[v % FDB_SETS];
}

static bool fdb_used(const struct fdb_entry *e)
{
	return e->port != FDB_NO_PORT;
}

static void fdb_clear(struct sw_fdb *f, struct fdb_entry *e)
{
	if (!fdb_used(e))
		return;
	f->learned[e->port]--;
	e->port = FDB_NO_PORT;
	fdb_bump(f);
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
				fdb_clear(f, &f->e[s][w]);
}

/*
 * The entry a new MAC of port slot goes to: a free or aged one, else the set's least recently
 * seen. A port holding its quota of entries may only reuse its own, so one guest sending from
 * random MACs cannot push everyone else out of the table.
 */
static struct fdb_entry *fdb_victim(struct sw_fdb *f, struct fdb_entry *set, uint16_t slot,
				    uint64_t now)
{
	bool at_quota = f->learned[slot] >= SWITCH_FDB_PORT_MAX;
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

static struct fdb_entry *learn_locked(struct sw_fdb *f, uint16_t slot, const uint8_t *mac,
				      uint64_t now)
{
	struct fdb_entry *set = fdb_set(f, mac), *e = NULL;

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
	if (f->learned[slot] >= SWITCH_FDB_PORT_MAX) {
		fdb_sweep(f, now); /* our count may include aged entries */
		if (e && f->learned[slot] >= SWITCH_FDB_PORT_MAX)
			return NULL; /* at quota: the MAC stays where it was */
	}
	if (!e)
		e = fdb_victim(f, set, slot, now);
	if (!e)
		return NULL; /* at quota and nothing of ours in this set: frames to it flood */
	fdb_clear(f, e);
	memcpy(e->mac, mac, FDB_ETH_ALEN);
	e->port = slot;
	fdb_touch(e, now);
	f->learned[slot]++;
	fdb_bump(f);
	return e;
}

/* fdb_learn() - learn under the lock (valid unicast sources only). */
struct fdb_entry *fdb_learn(struct sw_fdb *f, uint16_t slot, const uint8_t *mac, uint64_t now,
			    uint64_t *gen)
{
	static const uint8_t zero[FDB_ETH_ALEN];
	struct fdb_entry *e;

	if ((mac[0] & 1) || !memcmp(mac, zero, FDB_ETH_ALEN)) {
		*gen = 0; /* not a valid source address: never cached */
		return NULL;
	}
	fdb_lock(f);
	e = learn_locked(f, slot, mac, now);
	*gen = f->gen;
	fdb_unlock(f);
	return e;
}

/* fdb_lookup() - look up under the lock, clearing an aged entry. */
uint16_t fdb_lookup(struct sw_fdb *f, const uint8_t *mac, uint64_t now, struct fdb_entry **entry,
		    uint64_t *gen)
{
	struct fdb_entry *set = fdb_set(f, mac);
	uint16_t port = FDB_NO_PORT;

	*entry = NULL;
	fdb_lock(f);
	for (unsigned w = 0; w < FDB_WAYS; w++) {
		struct fdb_entry *e = &set[w];

		if (!fdb_used(e) || memcmp(e->mac, mac, FDB_ETH_ALEN))
			continue;
		if (fdb_expired(e, now)) {
			fdb_clear(f, e);
			break;
		}
		*entry = e;
		port = e->port;
		break;
	}
	*gen = f->gen;
	fdb_unlock(f);
	return port;
}

/* fdb_forget_port() - clear the port's entries and invalidate every flow cache. */
void fdb_forget_port(struct sw_fdb *f, uint16_t slot)
{
	fdb_lock(f);
	for (unsigned s = 0; s < FDB_SETS; s++)
		for (unsigned w = 0; w < FDB_WAYS; w++)
			if (f->e[s][w].port == slot)
				fdb_clear(f, &f->e[s][w]);
	fdb_bump(f);
	fdb_unlock(f);
}
