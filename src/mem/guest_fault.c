/* SPDX-License-Identifier: MIT */
/* guest_fault.c - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#include "mem/guest_fault.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/log.h"

/*
 * The watched mappings are kept in an AVL tree by first address, so the handler finds a fault's
 * mapping in O(log n) (at most 28 steps for GUEST_FAULT_MAX_MAPS) and a watch or unwatch costs
 * O(log n) too. The nodes live in a static pool indexed from 1 (0: none): no malloc, and only
 * the nodes ever used are touched (a node is 40 bytes; the untouched pool costs no memory).
 *
 * Worker threads change the table under table_lock; the handler (on any thread, at any moment,
 * so it can take no lock) only reads it. Two copies ("left-right"): the handler reads the copy
 * `active` names, announcing itself in readers[] first; a writer changes the other copy,
 * publishes it, waits until no handler is still in the old one, then makes the same change
 * there. The handler never waits on a writer; a writer waits at most for the handlers in
 * flight (one tree walk and one mmap each). Every atomic is lock-free, so signal-safe.
 */
struct fault_node {
	uintptr_t base;
	size_t len;
	atomic_int *flag;
	uint32_t child[2]; /* lower bases, higher bases; 0: none */
	int32_t height;    /* of the subtree: a leaf is 1 */
};

struct fault_tree {
	uint32_t root;
	uint32_t free_head; /* released nodes, linked through child[0] */
	uint32_t next_new;  /* the pool's first node never used (from 1) */
	uint32_t count;
	struct fault_node node[GUEST_FAULT_MAX_MAPS + 1];
};

/* A change both copies of the table go through, one after the other. */
struct fault_change {
	bool add;
	uintptr_t base;
	size_t len;
	atomic_int *flag;
};

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "the SIGBUS handler needs lock-free atomics");
_Static_assert(GUEST_FAULT_MAX_MAPS < UINT32_MAX, "node indexes fit 32 bits");

#define TREE_MAX_DEPTH 64 /* an AVL tree of 2^32 nodes is less than 47 deep */

/* Bumped by the handler on any fault: owners (every worker) then look at their own flags. */
static atomic_uint fault_gen;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fault_tree trees[2];
static atomic_uint active;     /* the copy handlers read */
static atomic_uint readers[2]; /* handlers reading each copy now */
static size_t page_size = 4096; /* set once by guest_fault_install(), before any thread */

/* ---- the tree (one copy) -------------------------------------------------------------------- */

/*
 * The node with the highest base at or below addr, or 0. Read by the handler: a bounded walk
 * of plain loads (the copy it reads does not change under it).
 */
static uint32_t tree_floor(const struct fault_tree *t, uintptr_t addr)
{
	uint32_t n = t->root, best = 0;

	for (unsigned depth = 0; n && depth < TREE_MAX_DEPTH; depth++) {
		const struct fault_node *x = &t->node[n];

		if (x->base <= addr) {
			best = n;
			n = x->child[1];
		} else {
			n = x->child[0];
		}
	}
	return best;
}

static int32_t height(const struct fault_tree *t, uint32_t n)
{
	return n ? t->node[n].height : 0;
}

static void fix_height(struct fault_tree *t, uint32_t n)
{
	int32_t l = height(t, t->node[n].child[0]), r = height(t, t->node[n].child[1]);

	t->node[n].height = 1 + (l > r ? l : r);
}

/* Rotate the subtree at n towards dir (1: right, its left child comes up); the new root. */
static uint32_t rotate(struct fault_tree *t, uint32_t n, int dir)
{
	uint32_t c = t->node[n].child[!dir];

	t->node[n].child[!dir] = t->node[c].child[dir];
	t->node[c].child[dir] = n;
	fix_height(t, n);
	fix_height(t, c);
	return c;
}

/* Restore the AVL balance at n after one of its subtrees changed by one; the new root. */
static uint32_t rebalance(struct fault_tree *t, uint32_t n)
{
	struct fault_node *x = &t->node[n];
	int32_t bal = height(t, x->child[0]) - height(t, x->child[1]);

	fix_height(t, n);
	if (bal > 1) {
		const struct fault_node *l = &t->node[x->child[0]];

		if (height(t, l->child[0]) < height(t, l->child[1]))
			x->child[0] = rotate(t, x->child[0], 0);
		return rotate(t, n, 1);
	}
	if (bal < -1) {
		const struct fault_node *r = &t->node[x->child[1]];

		if (height(t, r->child[1]) < height(t, r->child[0]))
			x->child[1] = rotate(t, x->child[1], 1);
		return rotate(t, n, 0);
	}
	return n;
}

static uint32_t tree_insert(struct fault_tree *t, uint32_t n, uint32_t fresh)
{
	int dir;

	if (!n)
		return fresh;
	dir = t->node[fresh].base > t->node[n].base;
	t->node[n].child[dir] = tree_insert(t, t->node[n].child[dir], fresh);
	return rebalance(t, n);
}

/* Take the lowest node out of the subtree at n (into *min); the subtree's new root. */
static uint32_t tree_remove_min(struct fault_tree *t, uint32_t n, uint32_t *min)
{
	if (!t->node[n].child[0]) {
		*min = n;
		return t->node[n].child[1];
	}
	t->node[n].child[0] = tree_remove_min(t, t->node[n].child[0], min);
	return rebalance(t, n);
}

/* Take the node of this base out of the subtree at n (into *gone, 0 if none); its new root. */
static uint32_t tree_remove(struct fault_tree *t, uint32_t n, uintptr_t base, uint32_t *gone)
{
	struct fault_node *x;
	uint32_t m;

	if (!n)
		return 0;
	x = &t->node[n];
	if (base != x->base) {
		int dir = base > x->base;

		x->child[dir] = tree_remove(t, x->child[dir], base, gone);
		return rebalance(t, n);
	}
	*gone = n;
	if (!x->child[0] || !x->child[1])
		return x->child[0] ? x->child[0] : x->child[1];
	x->child[1] = tree_remove_min(t, x->child[1], &m);
	t->node[m].child[0] = x->child[0];
	t->node[m].child[1] = x->child[1];
	return rebalance(t, m);
}

/* Apply a change that the caller checked (room, no overlap, present) to one copy. */
static void tree_apply(struct fault_tree *t, const struct fault_change *ch)
{
	uint32_t n = 0;

	if (ch->add) {
		if (t->free_head) {
			n = t->free_head;
			t->free_head = t->node[n].child[0];
		} else {
			n = ++t->next_new;
		}
		t->node[n] = (struct fault_node){
		    .base = ch->base, .len = ch->len, .flag = ch->flag, .height = 1};
		t->root = tree_insert(t, t->root, n);
		t->count++;
		return;
	}
	t->root = tree_remove(t, t->root, ch->base, &n);
	if (n) {
		t->node[n].child[0] = t->free_head;
		t->free_head = n;
		t->count--;
	}
}

/* ---- the two copies ------------------------------------------------------------------------- */

/* A handler starts reading: the copy it may read until reader_exit(). Lock-free, no wait. */
static unsigned reader_enter(void)
{
	for (;;) {
		unsigned i = atomic_load_explicit(&active, memory_order_seq_cst);

		atomic_fetch_add_explicit(&readers[i], 1, memory_order_seq_cst);
		/* Still the active copy after we announced ourselves: no writer touches it now. */
		if (atomic_load_explicit(&active, memory_order_seq_cst) == i)
			return i;
		atomic_fetch_sub_explicit(&readers[i], 1, memory_order_release);
	}
}

static void reader_exit(unsigned i)
{
	atomic_fetch_sub_explicit(&readers[i], 1, memory_order_release);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Make a change on both copies (table_lock held): the inactive copy first (no handler reads
 * it), then it becomes the active one, and once the handlers still in the old copy are out, the
 * old copy too. After this returns no handler reads a node the change removed.
 */
static void publish(const struct fault_change *ch)
{
	unsigned old = atomic_load_explicit(&active, memory_order_relaxed);

	tree_apply(&trees[!old], ch);
	atomic_store_explicit(&active, !old, memory_order_seq_cst);
	/* The seccomp filter allows no sched_yield: a handler's walk and mmap are short. */
	while (atomic_load_explicit(&readers[old], memory_order_seq_cst))
		cpu_relax();
	tree_apply(&trees[old], ch);
}

/* ---- the handler and the interface ---------------------------------------------------------- */

/* Back the faulting page of watched node n with zeros and flag its owner; false if we cannot. */
static bool patch_fault(const struct fault_node *x, uintptr_t addr)
{
	void *page = (void *)(addr & ~(uintptr_t)(page_size - 1));

	/* A private zero page lets the access complete; the owner then drops the frontend. */
	if (mmap(page, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) == MAP_FAILED)
		return false;
	if (x->flag)
		atomic_store_explicit(x->flag, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&fault_gen, 1, memory_order_release);
	return true;
}

static void on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	int saved_errno = errno;
	bool handled = false;
	unsigned i = reader_enter();
	const struct fault_tree *t = &trees[i];
	uint32_t n = tree_floor(t, addr);

	(void)ucontext;
	/* The node (and its flag) stays valid until reader_exit(): unwatch waits for us. */
	if (n && addr - t->node[n].base < t->node[n].len)
		handled = patch_fault(&t->node[n], addr);
	reader_exit(i);
	errno = saved_errno;
	/* Not guest memory: a real bug. Fault again with the default action (core dump). */
	if (!handled)
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
 * it lock-free. O(log n) in the mappings watched.
 *
 * Return: 0, or -1 when the table is full (GUEST_FAULT_MAX_MAPS, which the per-port caps keep it
 * below), or [@base, @base + @len) is empty, wraps or overlaps a watched mapping (which two live
 * mappings cannot: one was not unwatched before its munmap).
 */
int guest_fault_watch(void *base, size_t len, atomic_int *flag)
{
	const struct fault_change ch = {.add = true, .base = (uintptr_t)base, .len = len,
					.flag = flag};
	int r = -1;

	if (len == 0 || ch.base + (len - 1) < ch.base)
		return -1;
	pthread_mutex_lock(&table_lock);
	{
		/* Both copies hold the same mappings between changes: ask the one we may read. */
		const struct fault_tree *t = &trees[atomic_load_explicit(&active,
									 memory_order_relaxed)];
		/* The last mapping starting before our end overlaps us if any does (disjoint). */
		uint32_t n = tree_floor(t, ch.base + (len - 1));

		if (t->count < GUEST_FAULT_MAX_MAPS &&
		    !(n && t->node[n].base + (t->node[n].len - 1) >= ch.base)) {
			publish(&ch);
			r = 0;
		}
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

/**
 * guest_fault_unwatch() - forget the watched mapping starting at @base; call before munmap.
 * @base: as given to guest_fault_watch()
 *
 * Once it returns, no SIGBUS handler is still acting on the mapping (so none maps a zero page
 * over whatever is mapped there next) or storing to its flag. Any thread (the table's mutex);
 * O(log n).
 */
void guest_fault_unwatch(void *base)
{
	const struct fault_change ch = {.add = false, .base = (uintptr_t)base};

	pthread_mutex_lock(&table_lock);
	{
		const struct fault_tree *t = &trees[atomic_load_explicit(&active,
									 memory_order_relaxed)];
		uint32_t n = tree_floor(t, ch.base);

		if (n && t->node[n].base == ch.base)
			publish(&ch);
	}
	pthread_mutex_unlock(&table_lock);
}

/**
 * guest_fault_watched() - how many mappings are watched now.
 *
 * Any thread (the table's mutex).
 *
 * Return: the count, at most GUEST_FAULT_MAX_MAPS.
 */
size_t guest_fault_watched(void)
{
	size_t n;

	pthread_mutex_lock(&table_lock);
	n = trees[atomic_load_explicit(&active, memory_order_relaxed)].count;
	pthread_mutex_unlock(&table_lock);
	return n;
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
