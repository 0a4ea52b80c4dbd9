/* SPDX-License-Identifier: MIT */
/* guest_fault.c - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#include "guest_fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

#define GUEST_FAULT_MAX_MAPS (1024 * 8) /* VNETD_MAX_PORTS frontends of 8 regions each */

/*
 * Worker threads change the table under table_lock; the handler (on any thread, at any moment,
 * so it cannot take the lock) only reads it. Every field is therefore a C11 atomic (lock-free,
 * so signal-safe): an entry is published by storing len last (release) and retired by storing
 * len 0; the handler loads len first (acquire), then base and flag.
 */
struct watched_map {
	_Atomic uintptr_t base;
	_Atomic size_t len;
	_Atomic(atomic_int *) flag;
};

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 &&
		       ATOMIC_LONG_LOCK_FREE == 2,
	       "the SIGBUS handler needs lock-free atomics");

/* Bumped by the handler on any fault: owners (every worker) then look at their own flags. */
static atomic_uint fault_gen;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct watched_map maps[GUEST_FAULT_MAX_MAPS];
static size_t page_size = 4096; /* set once by guest_fault_install(), before any thread */

static void on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
	uintptr_t addr = (uintptr_t)si->si_addr;

	(void)ucontext;
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++) {
		struct watched_map *m = &maps[i];
		size_t len = atomic_load_explicit(&m->len, memory_order_acquire);
		atomic_int *flag;

		if (!len || addr - atomic_load_explicit(&m->base, memory_order_relaxed) >= len)
			continue;
		flag = atomic_load_explicit(&m->flag, memory_order_relaxed);
		/* Back the page with zeros so the access completes; the owner drops the frontend. */
		if (mmap((void *)(addr & ~(uintptr_t)(page_size - 1)), page_size,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			break;
		if (flag)
			atomic_store_explicit(flag, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&fault_gen, 1, memory_order_release);
		return;
	}
	/* Not guest memory: a real bug. Fault again with the default action (core dump). */
	signal(sig, SIG_DFL);
}

/**
 * guest_fault_install() - install the SIGBUS handler that survives truncated guest memory.
 *
 * Once, on the main thread, before any worker thread and before the sandbox. A SIGBUS outside
 * every watched mapping falls back to the default action (core dump).
 *
 * Return: 0, or -1 (logged).
 */
int guest_fault_install(void)
{
	struct sigaction sa;
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		page_size = (size_t)ps;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0) {
		log_err("cannot install the SIGBUS handler");
		return -1;
	}
	return 0;
}

/**
 * guest_fault_watch() - watch a guest mapping for SIGBUS.
 * @base: the mapping's first byte
 * @len: its length
 * @flag: set to 1 (atomic store) when a page of the mapping faults; may be NULL
 *
 * A SIGBUS inside the mapping replaces the faulting page with a private zero page, so the access
 * completes, sets @flag and bumps guest_fault_generation(); the owner checks its flag after each
 * event and drops the frontend. Any thread: the table is changed under a mutex, the handler reads
 * it lock-free.
 *
 * Return: 0, or -1 when the table is full.
 */
int guest_fault_watch(void *base, size_t len, atomic_int *flag)
{
	int r = -1;

	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++) {
		if (atomic_load_explicit(&maps[i].len, memory_order_relaxed))
			continue;
		atomic_store_explicit(&maps[i].base, (uintptr_t)base, memory_order_relaxed);
		atomic_store_explicit(&maps[i].flag, flag, memory_order_relaxed);
		/* last: the entry is live once len is set */
		atomic_store_explicit(&maps[i].len, len, memory_order_release);
		r = 0;
		break;
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

/**
 * guest_fault_unwatch() - forget the watched mapping starting at @base; call before munmap.
 * @base: as given to guest_fault_watch()
 *
 * Any thread (the table's mutex).
 */
void guest_fault_unwatch(void *base)
{
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++)
		if (atomic_load_explicit(&maps[i].len, memory_order_relaxed) &&
		    atomic_load_explicit(&maps[i].base, memory_order_relaxed) == (uintptr_t)base)
			atomic_store_explicit(&maps[i].len, 0, memory_order_release);
	pthread_mutex_unlock(&table_lock);
}

/**
 * guest_fault_generation() - a counter every fault and guest_fault_note() bumps.
 *
 * An owner that sees it change since its last look checks its own flags (each worker thread keeps
 * its own last value). Any thread; lock-free.
 *
 * Return: the counter now.
 */
unsigned guest_fault_generation(void)
{
	return atomic_load_explicit(&fault_gen, memory_order_acquire);
}

/**
 * guest_fault_note() - report a guest memory fault found another way (EFAULT from a system call),
 * so that every owner looks at its flags. Any thread; lock-free.
 */
void guest_fault_note(void)
{
	atomic_fetch_add_explicit(&fault_gen, 1, memory_order_release);
}
