/* SPDX-License-Identifier: MIT */
/* test_guest_fault.c - the SIGBUS handler: a truncated guest mapping faults, is patched, is flagged. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest_fault.h"
#include "log.h"

/*
 * Built twice: as is, and with -fsanitize=thread (test_guest_fault_tsan), where the threaded
 * case has one thread faulting on its guest mapping (the handler scanning the table) while
 * another watches and unwatches mappings of its own (writing the table under its lock, which
 * the handler cannot take). Every access to the table must be atomic for TSan to stay quiet.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_is_flagged),
		cmocka_unit_test(test_fault_while_another_thread_changes_the_table),
	};

	log_threshold = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
