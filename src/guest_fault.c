/* guest_fault.c - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#include "guest_fault.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

#define GUEST_FAULT_MAX_MAPS (1024 * 8) /* VNETD_MAX_PORTS frontends of 8 regions each */

/* Worker threads change the table under table_lock; the handler (any thread) only reads it. */
struct watched_map {
	uintptr_t base;
	size_t len;
	volatile sig_atomic_t *flag;
};

/* Bumped by the handler on any fault: owners (every worker) then look at their own flags. */
static unsigned fault_gen;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct watched_map maps[GUEST_FAULT_MAX_MAPS];
static size_t page_size = 4096;

static void on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
	uintptr_t addr = (uintptr_t)si->si_addr;

	(void)ucontext;
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++) {
		const struct watched_map *m = &maps[i];

		if (!m->len || addr - m->base >= m->len)
			continue;
		/* Back the page with zeros so the access completes; the owner drops the frontend. */
		if (mmap((void *)(addr & ~(uintptr_t)(page_size - 1)), page_size,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			break;
		*m->flag = 1;
		__atomic_add_fetch(&fault_gen, 1, __ATOMIC_RELEASE); /* lock-free: signal-safe */
		return;
	}
	/* Not guest memory: a real bug. Fault again with the default action (core dump). */
	signal(sig, SIG_DFL);
}

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

int guest_fault_watch(void *base, size_t len, volatile sig_atomic_t *flag)
{
	int r = -1;

	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++) {
		if (maps[i].len)
			continue;
		maps[i].base = (uintptr_t)base;
		maps[i].flag = flag;
		/* last: the entry is live once len is set */
		__atomic_store_n(&maps[i].len, len, __ATOMIC_RELEASE);
		r = 0;
		break;
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

void guest_fault_unwatch(void *base)
{
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++)
		if (maps[i].len && maps[i].base == (uintptr_t)base)
			__atomic_store_n(&maps[i].len, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&table_lock);
}

unsigned guest_fault_generation(void)
{
	return __atomic_load_n(&fault_gen, __ATOMIC_ACQUIRE);
}

void guest_fault_note(void)
{
	__atomic_add_fetch(&fault_gen, 1, __ATOMIC_RELEASE);
}
