/* SPDX-License-Identifier: MIT */
/* test_guest_fault.c - the SIGBUS handler: a truncated guest mapping faults, is patched, is flagged; the table's size and lookup. */
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/guest_fault.h"
#include "lib/log.h"

/*
 * Built twice: as is, and with -fsanitize=thread (test_guest_fault_tsan), where the threaded
 * case has one thread faulting on its guest mapping (the handler scanning the table) while
 * another watches and unwatches mappings of its own (writing the table under its lock, which
 * the handler cannot take). The handler reads one of two copies of the table while the writer
 * changes the other (guest_fault.c): TSan checks that they never meet.
 */

#define PAGES 4

/* A watched mapping of a memfd, which is then truncated: touching it raises SIGBUS. */
struct doomed {
	uint8_t *base;
	size_t len;
	atomic_int flag;
};

static void doomed_map(struct doomed *d)
{
	int fd = memfd_create("guest-fault", MFD_CLOEXEC);

	d->len = PAGES * (size_t)sysconf(_SC_PAGESIZE);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)d->len), 0);
	d->base = mmap(NULL, d->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(d->base != MAP_FAILED);
	atomic_store(&d->flag, 0);
	assert_int_equal(guest_fault_watch(d->base, d->len, &d->flag), 0);
	assert_int_equal(ftruncate(fd, 0), 0); /* the "frontend" shrinks its memory */
	close(fd);
}

static void doomed_unmap(struct doomed *d)
{
	guest_fault_unwatch(d->base);
	munmap(d->base, d->len);
}

/* fault_once() - read and write the mapping's last page: faults, then reads zeros. */
static void fault_once(struct doomed *d)
{
	volatile uint8_t *p = d->base + d->len - 1;
	unsigned gen = guest_fault_generation();

	assert_int_equal(*p, 0); /* SIGBUS: the handler backs the page with zeros */
	*p = 7;
	assert_int_equal(*p, 7);
	assert_int_equal(atomic_load(&d->flag), 1);
	assert_true(guest_fault_generation() != gen);
}

static void test_fault_is_flagged(void **state)
{
	struct doomed d;

	(void)state;
	assert_int_equal(guest_fault_install(), 0); /* cmocka has its own SIGBUS handler per test */
	doomed_map(&d);
	fault_once(&d);
	doomed_unmap(&d);
}

#define CHURN_SLOTS 64
#define MANY_PAGES 512

static atomic_bool churn_stop;
static uint8_t fake[CHURN_SLOTS][64];
static atomic_int fake_flags[CHURN_SLOTS];

/* Another worker's ports connecting and going: table writes under the lock. */
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&churn_stop)) {
		for (unsigned i = 0; i < CHURN_SLOTS; i++)
			if (guest_fault_watch(fake[i], sizeof(fake[i]), &fake_flags[i]) < 0)
				fail();
		for (unsigned i = 0; i < CHURN_SLOTS; i++)
			guest_fault_unwatch(fake[i]);
	}
	return NULL;
}

static void test_fault_while_another_thread_changes_the_table(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct doomed d;
	pthread_t th;
	int fd;

	(void)state;
	assert_int_equal(guest_fault_install(), 0);
	/* The doomed mapping goes after CHURN_SLOTS entries, which the other thread then reuses:
	 * every fault scans the entries it is writing. */
	for (unsigned i = 0; i < CHURN_SLOTS; i++)
		assert_int_equal(guest_fault_watch(fake[i], sizeof(fake[i]), &fake_flags[i]), 0);
	d.len = MANY_PAGES * page;
	fd = memfd_create("guest-fault", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)d.len), 0);
	d.base = mmap(NULL, d.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(d.base != MAP_FAILED);
	atomic_store(&d.flag, 0);
	assert_int_equal(guest_fault_watch(d.base, d.len, &d.flag), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
	for (unsigned i = 0; i < CHURN_SLOTS; i++)
		guest_fault_unwatch(fake[i]);

	atomic_store(&churn_stop, false);
	assert_int_equal(pthread_create(&th, NULL, churn, NULL), 0);
	for (size_t off = 0; off < d.len; off += page) {
		volatile uint8_t *p = d.base + off;

		assert_int_equal(*p, 0); /* a fault per page, each patched with a zero page */
	}
	atomic_store(&churn_stop, true);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&d.flag), 1);
	doomed_unmap(&d);
}

/* ---- the table: every port's mappings at their cap, found in O(log n) ---- */

/*
 * A reserved stretch of address space (PROT_NONE, nothing behind it) cut into slots of STRIDE
 * bytes: slot i is a fake mapping [i * STRIDE, + STRIDE / 2) for the table, or a real memfd
 * mapping put there with MAP_FIXED (doomed_at()), so that real and fake ones interleave in the
 * table's order.
 */
struct arena {
	uint8_t *base;
	size_t stride, n;
};

static void arena_open(struct arena *a, size_t n)
{
	a->stride = 2 * (size_t)sysconf(_SC_PAGESIZE);
	a->n = n;
	a->base = mmap(NULL, n * a->stride, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	assert_true(a->base != MAP_FAILED);
}

static void arena_close(struct arena *a)
{
	munmap(a->base, a->n * a->stride);
}

/* A memfd mapped at slot i, watched, then truncated: touching it raises SIGBUS. */
static void doomed_at(struct arena *a, size_t i, struct doomed *d)
{
	int fd = memfd_create("guest-fault", MFD_CLOEXEC);

	d->len = a->stride;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)d->len), 0);
	d->base = mmap(a->base + i * a->stride, d->len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED, fd, 0);
	assert_true(d->base == a->base + i * a->stride);
	atomic_store(&d->flag, 0);
	assert_int_equal(guest_fault_watch(d->base, d->len, &d->flag), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
}

/* Slot i of n in a scattered order (a multiplier prime to n), so the tree rebalances. */
static size_t scattered(size_t i, size_t n)
{
	return (size_t)(((uint64_t)i * 2654435761u) % n);
}

static atomic_int fake_flag; /* the fake mappings' flag: no fault may set it */

#define DOOMED 16

static bool is_doomed(size_t slot, size_t n)
{
	return slot % (n / DOOMED) == n / DOOMED / 2; /* DOOMED slots spread over the arena */
}

/*
 * Fills the table to GUEST_FAULT_MAX_MAPS (every port at max-mem-slots=509, with its dirty log
 * and a new SET_MEM_TABLE beside its table): one more is refused. Among them DOOMED real
 * mappings fault, each found (its own flag set, nobody else's) by the handler's tree walk.
 */
static void test_full_table_finds_each_fault(void **state)
{
	const size_t n = GUEST_FAULT_MAX_MAPS;
	struct doomed d[DOOMED];
	struct arena a;
	unsigned k = 0;

	(void)state;
	assert_int_equal(n, 1024 * (509 + 8 + 1)); /* VNETD_MAX_PORTS x their largest count */
	assert_int_equal(guest_fault_install(), 0);
	assert_int_equal(guest_fault_watched(), 0);
	arena_open(&a, n);
	for (size_t i = 0; i < n; i++) {
		size_t slot = scattered(i, n);

		if (is_doomed(slot, n))
			doomed_at(&a, slot, &d[k++]);
		else
			assert_int_equal(guest_fault_watch(a.base + slot * a.stride, a.stride / 2,
							   &fake_flag), 0);
	}
	assert_int_equal(k, DOOMED);
	assert_int_equal(guest_fault_watched(), n);
	/* Full: one more is refused (a slot's free second half). */
	assert_int_equal(guest_fault_watch(a.base + a.stride / 2, 1, &fake_flag), -1);
	for (unsigned i = 0; i < DOOMED; i++) {
		for (unsigned j = 0; j < DOOMED; j++)
			assert_int_equal(atomic_load(&d[j].flag), j < i);
		fault_once(&d[i]);
	}
	assert_int_equal(atomic_load(&fake_flag), 0);
	/* Out again, in another order: the table is empty and takes a mapping anywhere. */
	for (size_t i = n; i-- > 0;)
		guest_fault_unwatch(a.base + scattered(i, n) * a.stride);
	assert_int_equal(guest_fault_watched(), 0);
	assert_int_equal(guest_fault_watch(a.base + a.stride / 2, 1, &fake_flag), 0);
	guest_fault_unwatch(a.base + a.stride / 2);
	arena_close(&a);
}

static void test_overlaps_and_empty_ranges_are_refused(void **state)
{
	static uint8_t mem[256];
	atomic_int f;

	(void)state;
	assert_int_equal(guest_fault_watch(mem + 64, 64, &f), 0);
	assert_int_equal(guest_fault_watch(mem + 64, 64, &f), -1);  /* the same again */
	assert_int_equal(guest_fault_watch(mem + 127, 8, &f), -1);  /* its last byte */
	assert_int_equal(guest_fault_watch(mem, 65, &f), -1);       /* its first byte */
	assert_int_equal(guest_fault_watch(mem + 32, 128, &f), -1); /* around it */
	assert_int_equal(guest_fault_watch(mem + 100, 1, &f), -1);  /* inside it */
	assert_int_equal(guest_fault_watch(mem + 16, 0, &f), -1);   /* empty */
	assert_int_equal(guest_fault_watch((void *)(UINTPTR_MAX - 3), 8, &f), -1); /* wraps */
	assert_int_equal(guest_fault_watch(mem, 64, &f), 0);        /* adjacent below ... */
	assert_int_equal(guest_fault_watch(mem + 128, 64, &f), 0);  /* ... and above */
	assert_int_equal(guest_fault_watched(), 3);
	guest_fault_unwatch(mem + 65); /* not a mapping's start: nothing */
	assert_int_equal(guest_fault_watched(), 3);
	guest_fault_unwatch(mem + 64);
	guest_fault_unwatch(mem);
	guest_fault_unwatch(mem + 128);
	assert_int_equal(guest_fault_watched(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_is_flagged),
		cmocka_unit_test(test_fault_while_another_thread_changes_the_table),
		cmocka_unit_test(test_overlaps_and_empty_ranges_are_refused),
		cmocka_unit_test(test_full_table_finds_each_fault),
	};

	log_threshold = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
