/* SPDX-License-Identifier: MIT */
/* test_vq_race.c - the guest's other vCPU against the ring walkers (guest_race), dirty logging on two threads. */
#include <pthread.h>

#include "vq_packed_driver.h"

#include "mem/dirty_log.h"
#include "mem/guest_race.h"

/*
 * A split or packed ring in fake guest memory of its own, with a dirty log of its own: two of
 * them are two ports (each its own frontend) whose queues a test runs at once.
 */
#define NUM 16
#define LOG_BYTES 256 /* 2048 pages: the whole 2 MiB of fake memory from GPA 0 up */

struct ring {
	struct pd *p;      /* memory, the packed ring's driver side, the queue, a chain */
	struct fake_vq fq; /* the split ring's driver side */
	bool packed;
	uint8_t bitmap[LOG_BYTES];
	struct dirty_log log;
};

static struct ring *ring_new(bool packed, bool in_order)
{
	struct ring *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->p = pd_new(NUM, false, true);
	r->packed = packed;
	if (!packed) {
		fake_vq_init(&r->fq, &r->p->mem, NUM);
		r->p->vq.packed = false;
		fake_vq_setup_virtqueue(&r->fq, &r->p->vq);
	}
	r->p->vq.in_order = in_order;
	r->log = (struct dirty_log){.bitmap = r->bitmap, .size = sizeof(r->bitmap)};
	pd_start(r->p);
	return r;
}

static void ring_free(struct ring *r)
{
	vq_reset(&r->p->vq);
	if (!r->packed)
		fake_vq_destroy(&r->fq);
	fake_mem_free(&r->p->mem);
	free(r->p);
	free(r);
}

static bool page_logged(const struct ring *r, uint64_t gpa)
{
	uint64_t page = gpa / DIRTY_LOG_PAGE;

	return r->bitmap[page / 8] >> (page % 8) & 1;
}

static __attribute__((unused)) unsigned pages_logged(const struct ring *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < LOG_BYTES; i++)
		n += (unsigned)__builtin_popcount(r->bitmap[i]);
	return n;
}

/*
 * The pages a publication of one buffer at data + off1 and data + off2 logs: theirs, and on a
 * packed ring the descriptor slot it rewrote (slot 0: the ring's first page).
 */
static __attribute__((unused)) unsigned expected_pages(const struct ring *r, uint64_t off1,
						       uint64_t off2)
{
	uint64_t pages[3] = {(r->p->data + off1) / DIRTY_LOG_PAGE,
			     (r->p->data + off2) / DIRTY_LOG_PAGE, r->p->ring_gpa / DIRTY_LOG_PAGE};
	unsigned n = 2;

	if (r->packed && pages[2] != pages[0] && pages[2] != pages[1])
		n++;
	return n;
}

/*
 * The driver offers one RX buffer of two device-writable pieces of 64 bytes, at data + off1
 * and data + off2 (pages apart): a chain of two descriptors (split) or a list of two slots
 * (packed), so the walkers' general loops take it. Returns its head / buffer id.
 */
static uint16_t offer_two(struct ring *r, uint16_t id, uint64_t off1, uint64_t off2)
{
	struct fake_buf b[2] = {{r->p->data + off1, 64, true}, {r->p->data + off2, 64, true}};

	if (r->packed) {
		pd_add(r->p, b, 2, id);
		return id;
	}
	id = (uint16_t)fake_vq_add_chain(&r->fq, b, 2);
	fake_vq_publish(&r->fq);
	return id;
}

/* The driver takes back every used entry (split: frees the descriptors for the next chain). */
static void reap(struct ring *r)
{
	if (r->packed) {
		uint16_t id;
		uint32_t len;

		while (pd_get_used(r->p, &id, &len, NULL))
			;
		return;
	}
	while (fake_vq_get_used(&r->fq, NULL, NULL))
		;
}

/* The device pops the buffer offered and pushes it as written whole (128 bytes). */
static __attribute__((unused)) void take_and_push(struct ring *r, uint16_t id)
{
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	assert_int_equal(r->p->chain.head, id);
	assert_int_equal(r->p->chain.nwrite, 2);
	vq_push(&r->p->vq, id, 128);
}

/* The test_<name>_split and test_<name>_packed cmocka tests: fn(false) and fn(true). */
#define BOTH_LAYOUTS(name, fn)                                                                     \
	static void test_##name##_split(void **state)                                              \
	{                                                                                          \
		(void)state;                                                                       \
		fn(false);                                                                         \
	}                                                                                          \
	static void test_##name##_packed(void **state)                                             \
	{                                                                                          \
		(void)state;                                                                       \
		fn(true);                                                                          \
	}

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE

/* ---- The other vCPU rewrites descriptors the walker has read (GUEST_RACE_RING_WALK) ---- */

struct walk_race {
	struct ring *r;
	unsigned calls;   /* GUEST_RACE_RING_WALK points passed */
	unsigned act_at;  /* the call at which the guest rewrites (0: never) */
	void (*act)(struct walk_race *w);
	struct ring *other; /* logging: a queue of another port, published from inside the walk */
};

static void walk_race_hook(void *ctx, enum guest_race_point point)
{
	struct walk_race *w = ctx;

	if (point != GUEST_RACE_RING_WALK)
		return;
	if (++w->calls == w->act_at)
		w->act(w);
}

static void race_install(struct walk_race *w)
{
	guest_race_ctx = w;
	guest_race_hook = walk_race_hook;
}

static void race_remove(void)
{
	guest_race_hook = NULL;
	guest_race_ctx = NULL;
}

/* Split descriptors 0..NUM-1, readable, 64 bytes each at data + 64 * i, no links. */
static void split_table(struct ring *r)
{
	for (unsigned i = 0; i < NUM; i++)
		r->fq.desc[i] = (struct vring_desc){.addr = r->p->data + 64u * i, .len = 64};
}

/* The guest links every descriptor to the next in ring order: a chain around the ring. */
static void link_all(struct walk_race *w)
{
	for (unsigned i = 0; i < NUM; i++) {
		w->r->fq.desc[i].flags = VRING_DESC_F_NEXT;
		w->r->fq.desc[i].next = (uint16_t)((i + 1) % NUM);
	}
}

/* The guest ends the chain at its head. */
static void cut_head(struct walk_race *w)
{
	w->r->fq.desc[0].flags = 0;
}

/*
 * Split IN_ORDER: the chain 0 -> 1 is popped; once the device has read it, the guest links every
 * descriptor to the next (a chain around the ring). The pop is decided on the one read of each
 * descriptor: a chain of 2, the next one expected at 2, and no more descriptors read than the
 * chain has (one GUEST_RACE_RING_WALK point per descriptor read). Before, the IN_ORDER check
 * walked the chain again: it followed the rewritten links around the ring (NUM reads for a
 * chain counted as 2) and broke the queue ("chain too long").
 */
static void test_in_order_chain_rewritten_after_read_longer(void **state)
{
	struct ring *r = ring_new(false, true);
	struct walk_race w = {.r = r, .act_at = 2, .act = link_all};

	(void)state;
	split_table(r);
	r->fq.desc[0].flags = VRING_DESC_F_NEXT;
	r->fq.desc[0].next = 1;
	fake_vq_add_head(&r->fq, 0);
	fake_vq_publish(&r->fq);
	race_install(&w);
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	race_remove();
	assert_false(r->p->vq.broken);
	assert_int_equal(r->p->chain.ndesc, 2);
	assert_int_equal(r->p->chain.read_len, 128);
	assert_true(w.calls >= 2); /* the rewrite happened */
	assert_true(w.calls <= r->p->chain.ndesc); /* bounded: one read per descriptor counted */
	/* The driver's next chain starts at 2, where the chain as read ended. */
	split_table(r);
	fake_vq_add_head(&r->fq, 2);
	fake_vq_publish(&r->fq);
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	assert_int_equal(r->p->chain.head, 2);
	ring_free(r);
}

/*
 * The same with a chain 0 -> 1 -> 2 the guest cuts at its head once read: the next chain is
 * expected at 3, where the chain the device took ended (before: the second walk stopped at 0,
 * expected 1 and broke the queue at the driver's chain at 3).
 */
static void test_in_order_chain_rewritten_after_read_shorter(void **state)
{
	struct ring *r = ring_new(false, true);
	struct walk_race w = {.r = r, .act_at = 3, .act = cut_head};

	(void)state;
	split_table(r);
	r->fq.desc[0] = (struct vring_desc){r->p->data, 64, VRING_DESC_F_NEXT, 1};
	r->fq.desc[1] = (struct vring_desc){r->p->data + 64, 64, VRING_DESC_F_NEXT, 2};
	fake_vq_add_head(&r->fq, 0);
	fake_vq_publish(&r->fq);
	race_install(&w);
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	race_remove();
	assert_int_equal(r->p->chain.ndesc, 3);
	assert_true(w.calls >= 3 && w.calls <= r->p->chain.ndesc);
	split_table(r);
	fake_vq_add_head(&r->fq, 3);
	fake_vq_publish(&r->fq);
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	assert_int_equal(r->p->chain.head, 3);
	assert_false(r->p->vq.broken);
	ring_free(r);
}

/* The guest takes back the packed list's head (flags of neither wrap) once it was read. */
static void unavail_head(struct walk_race *w)
{
	w->r->p->ring[0].flags = 0;
}

/*
 * Packed IN_ORDER: a list of three slots is taken as read, whatever the guest writes into its
 * slots after each was read; one GUEST_RACE_RING_WALK point per slot.
 */
static void test_packed_list_rewritten_after_read(void **state)
{
	struct ring *r = ring_new(true, true);
	struct walk_race w = {.r = r, .act_at = 3, .act = unavail_head};
	struct fake_buf b[3] = {{r->p->data, 10, false}, {r->p->data + 64, 20, false},
				{r->p->data + 128, 30, false}};

	(void)state;
	pd_add(r->p, b, 3, 7);
	race_install(&w);
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	race_remove();
	assert_int_equal(r->p->chain.head, 7);
	assert_int_equal(r->p->chain.read_len, 60);
	assert_true(w.calls >= 3 && w.calls <= r->p->chain.ndesc);
	assert_false(r->p->vq.broken);
	ring_free(r);
}

/* Logging: a queue of another port publishes (and logs) inside this walk, on "another worker". */
static void publish_other(struct walk_race *w)
{
	vq_publish(&w->other->p->vq);
}

/*
 * Two ports' RX queues log the buffers they wrote at their publications; one port's logging
 * runs in the middle of the other's walk (what two workers do at once, made deterministic).
 * Each log gets exactly its own buffers' pages. Before, both walks used one static chain: the
 * inner walk's iovecs replaced the outer one's, and the outer port's pages were not logged (a
 * migration would have sent stale pages).
 */
static void log_interleaved(bool packed)
{
	struct ring *a = ring_new(packed, false), *b = ring_new(packed, false);
	struct walk_race w = {.r = a, .act_at = 1, .act = publish_other, .other = b};
	uint16_t ia = offer_two(a, 1, 0x0000, 0x3000), ib = offer_two(b, 2, 0x5000, 0x7000);

	take_and_push(a, ia);
	take_and_push(b, ib);
	a->p->vq.log = &a->log;
	b->p->vq.log = &b->log;
	race_install(&w);
	vq_publish(&a->p->vq);
	race_remove();
	assert_int_equal(w.calls, 2); /* a's walk, then b's inside it */
	assert_true(page_logged(a, a->p->data + 0x0000));
	assert_true(page_logged(a, a->p->data + 0x3000));
	assert_int_equal(pages_logged(a), expected_pages(a, 0x0000, 0x3000));
	assert_true(page_logged(b, b->p->data + 0x5000));
	assert_true(page_logged(b, b->p->data + 0x7000));
	assert_int_equal(pages_logged(b), expected_pages(b, 0x5000, 0x7000));
	reap(a);
	reap(b);
	ring_free(a);
	ring_free(b);
}

BOTH_LAYOUTS(log_interleaved, log_interleaved)

/* The guest turns the buffer it made available at head (split) / slot 0 (packed) into an
 * INDIRECT descriptor to a table of VQ_MAX_CHAIN writable buffers. */
static void grow_into_table(struct ring *r, uint16_t head)
{
	uint64_t t = fake_mem_alloc(&r->p->mem, 16ull * VQ_MAX_CHAIN, 16);
	struct vring_desc *table = fake_mem_host(&r->p->mem, t);
	struct pvirtq_desc *ptable = fake_mem_host(&r->p->mem, t);

	for (unsigned i = 0; i < VQ_MAX_CHAIN; i++) {
		uint64_t addr = r->p->data + 64u * (i % 64);

		if (r->packed)
			ptable[i] = (struct pvirtq_desc){.addr = addr, .len = 64,
							 .flags = VRING_DESC_F_WRITE};
		else /* linked by NEXT in a split table */
			table[i] = (struct vring_desc){
				.addr = addr, .len = 64, .next = (uint16_t)(i + 1),
				.flags = VRING_DESC_F_WRITE |
					 (i + 1 < VQ_MAX_CHAIN ? VRING_DESC_F_NEXT : 0)};
	}
	if (r->packed) {
		r->p->ring[0].addr = t;
		r->p->ring[0].len = 16u * VQ_MAX_CHAIN;
		r->p->ring[0].flags |= VRING_DESC_F_INDIRECT;
		return;
	}
	r->fq.desc[head] = (struct vring_desc){t, 16u * VQ_MAX_CHAIN, VRING_DESC_F_INDIRECT, 0};
}

/*
 * Dirty logging re-walks the chains a publication covers. A guest that turns a one-descriptor
 * chain, popped (and counted) as one, into an indirect table of VQ_MAX_CHAIN buffers before the
 * publication gets a logging walk of no more descriptors than its pops read (one
 * GUEST_RACE_RING_WALK point: the second read ends it), not VQ_MAX_CHAIN of them (before: 1,024
 * reads and translations per such buffer, on the worker every port of it shares).
 */
static void log_walk_after_rewrite(bool packed)
{
	struct ring *r = ring_new(packed, false);
	struct walk_race w = {.r = r};
	struct fake_buf b = {r->p->data, 64, true};
	uint16_t head;

	if (packed) {
		pd_add(r->p, &b, 1, 3);
		head = 3;
	} else {
		head = (uint16_t)fake_vq_add_chain(&r->fq, &b, 1);
		fake_vq_publish(&r->fq);
	}
	assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
	assert_int_equal(r->p->chain.ndesc, 1);
	vq_push(&r->p->vq, head, 64);
	grow_into_table(r, head);
	r->p->vq.log = &r->log;
	race_install(&w);
	vq_publish(&r->p->vq);
	race_remove();
	assert_true(w.calls <= 1);
	assert_false(r->p->vq.broken);
	ring_free(r);
}

BOTH_LAYOUTS(log_walk_bounded_by_pops, log_walk_after_rewrite)

#else

static void skip_without_race(void **state)
{
	(void)state;
	skip(); /* needs a -Dguest_race=true build (the ASan one) */
}

#define test_in_order_chain_rewritten_after_read_longer skip_without_race
#define test_in_order_chain_rewritten_after_read_shorter skip_without_race
#define test_packed_list_rewritten_after_read skip_without_race
#define test_log_interleaved_split skip_without_race
#define test_log_interleaved_packed skip_without_race
#define test_log_walk_bounded_by_pops_split skip_without_race
#define test_log_walk_bounded_by_pops_packed skip_without_race

#endif

/*
 * A driver that leaves its chains alone is logged whole, however long they are and whichever
 * publication covers them: two chains of three popped together, published one at a time.
 */
static void log_honest_long_chains(bool packed)
{
	struct ring *r = ring_new(packed, false);
	uint16_t id[2];

	for (unsigned k = 0; k < 2; k++) {
		struct fake_buf b[3] = {{r->p->data + 0x4000u * k, 64, true},
					{r->p->data + 0x4000u * k + 0x1000, 64, true},
					{r->p->data + 0x4000u * k + 0x2000, 64, true}};

		if (packed) {
			pd_add(r->p, b, 3, (uint16_t)(5 + k));
			id[k] = (uint16_t)(5 + k);
		} else {
			id[k] = (uint16_t)fake_vq_add_chain(&r->fq, b, 3);
		}
	}
	if (!packed)
		fake_vq_publish(&r->fq);
	for (unsigned k = 0; k < 2; k++) {
		assert_int_equal(vq_pop(&r->p->vq, &r->p->chain), 1);
		assert_int_equal(r->p->chain.ndesc, 3);
	}
	r->p->vq.log = &r->log;
	for (unsigned k = 0; k < 2; k++) {
		vq_push(&r->p->vq, id[k], 3 * 64);
		vq_publish(&r->p->vq);
		for (unsigned j = 0; j < 3; j++)
			assert_true(page_logged(r, r->p->data + 0x4000u * k + 0x1000u * j));
	}
	reap(r);
	ring_free(r);
}

BOTH_LAYOUTS(log_honest_long_chains, log_honest_long_chains)

/* ---- Two workers logging at once (real threads; the TSan build checks for races) ---- */

#define ROUNDS 400

struct worker {
	struct ring *r;
	pthread_barrier_t *go;
	unsigned bad; /* rounds whose log was not exactly the buffer's two pages */
};

/* One port's worker: RX buffers written, published with logging on, the log checked, cleared. */
static void *log_worker(void *arg)
{
	struct worker *wk = arg;
	struct ring *r = wk->r;

	pthread_barrier_wait(wk->go);
	for (unsigned i = 0; i < ROUNDS; i++) {
		uint64_t off1 = 0x1000u * (i % 7), off2 = 0x8000u + 0x1000u * (i % 5);
		uint16_t id = offer_two(r, (uint16_t)(i % NUM), off1, off2);

		if (vq_pop(&r->p->vq, &r->p->chain) != 1 || r->p->chain.head != id) {
			wk->bad++;
			break;
		}
		vq_push(&r->p->vq, id, 128);
		vq_publish(&r->p->vq);
		if (!page_logged(r, r->p->data + off1) || !page_logged(r, r->p->data + off2))
			wk->bad++;
		memset(r->bitmap, 0, sizeof(r->bitmap));
		reap(r);
	}
	return NULL;
}

static void log_two_threads(bool packed)
{
	pthread_barrier_t go;
	pthread_t t[2];
	struct worker wk[2];

	pthread_barrier_init(&go, NULL, 2);
	for (unsigned k = 0; k < 2; k++) {
		wk[k] = (struct worker){.r = ring_new(packed, false), .go = &go};
		wk[k].r->p->vq.log = &wk[k].r->log;
		assert_int_equal(pthread_create(&t[k], NULL, log_worker, &wk[k]), 0);
	}
	for (unsigned k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		assert_int_equal(wk[k].bad, 0);
		ring_free(wk[k].r);
	}
	pthread_barrier_destroy(&go);
}

BOTH_LAYOUTS(log_two_threads, log_two_threads)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_chain_rewritten_after_read_longer),
		cmocka_unit_test(test_in_order_chain_rewritten_after_read_shorter),
		cmocka_unit_test(test_packed_list_rewritten_after_read),
		cmocka_unit_test(test_log_interleaved_split),
		cmocka_unit_test(test_log_interleaved_packed),
		cmocka_unit_test(test_log_walk_bounded_by_pops_split),
		cmocka_unit_test(test_log_walk_bounded_by_pops_packed),
		cmocka_unit_test(test_log_honest_long_chains_split),
		cmocka_unit_test(test_log_honest_long_chains_packed),
		cmocka_unit_test(test_log_two_threads_split),
		cmocka_unit_test(test_log_two_threads_packed),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* one test by name (a pattern) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
