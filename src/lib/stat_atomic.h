/* SPDX-License-Identifier: MIT */
/* stat_atomic.h - single-writer counters another thread reads without a lock (a leaf). */
#ifndef VNETD_STAT_ATOMIC_H
#define VNETD_STAT_ATOMIC_H

#include <stdint.h>

/*
 * Why relaxed atomics and no lock or seqcount: a counter has one writer, the worker thread
 * that owns its port (or the main thread while that worker is parked, which the park's mutex
 * orders). The writer therefore never needs a read-modify-write instruction: it loads, adds and
 * stores, and only the store must not tear. A reader on another thread (vnetctl stats, a
 * Prometheus scrape) loads each counter once. Relaxed 64-bit atomic loads and stores of an
 * aligned uint64_t are plain `mov`s on x86-64 (and single loads/stores on every 64-bit target
 * vnetd builds for), so the data path pays nothing for them, while the builtins make the
 * concurrent access well-defined C11 (no data race; ThreadSanitizer agrees). Each value a
 * reader gets is one the counter really had; two counters read one after the other may be a
 * few packets apart (a reader that needs a consistent set uses a seqcount: queue_view.c).
 */

/* stat_add() - add n to counter *c (its one writer only). */
static inline void stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* stat_inc() - add 1 to counter *c (its one writer only). */
static inline void stat_inc(uint64_t *c)
{
	stat_add(c, 1);
}

/* stat_set() - store v into *c (its one writer only: a maximum, a reset to 0). */
static inline void stat_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/* stat_read() - the counter's value, from any thread: never torn. */
static inline uint64_t stat_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#endif
