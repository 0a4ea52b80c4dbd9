/* guest_fault.c - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#include "guest_fault.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

#define GUEST_FAULT_MAX_MAPS (1024 * 8) /* VNETD_MAX_PORTS frontends of 8 regions each */

/* Only the event loop thread changes the table; the handler runs on that thread too. */
struct watched_map {
	uintptr_t base;
	size_t len;
	volatile sig_atomic_t *flag;
};

/* Set by the handler on any fault: owners then look at their own flags. */
static volatile sig_atomic_t fault_seen;

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
		fault_seen = 1;
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
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++) {
		if (maps[i].len)
			continue;
		maps[i].base = (uintptr_t)base;
		maps[i].flag = flag;
		maps[i].len = len; /* last: the entry is live once len is set */
		return 0;
	}
	return -1;
}

void guest_fault_unwatch(void *base)
{
	for (size_t i = 0; i < GUEST_FAULT_MAX_MAPS; i++)
		if (maps[i].len && maps[i].base == (uintptr_t)base)
			maps[i].len = 0;
}

int guest_fault_take(void)
{
	int seen = fault_seen;

	fault_seen = 0;
	return seen;
}

void guest_fault_note(void)
{
	fault_seen = 1;
}
