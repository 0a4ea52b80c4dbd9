/* SPDX-License-Identifier: MIT */
/* test_switch_xq.c - cross-worker frame queues: order, bounds, drops, wrap, wake-ups, threads. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/switch/switch_xq.h"

/*
 * Linked with switch_xq.c and iov.c only, so that the same file also builds with
 * -fsanitize=thread (test_switch_xq_tsan): the threaded case then checks that a frame's bytes
 * are ordered by the ring's release/acquire pair and never read while written.
 */

#define RING XQ_MIN_RING /* the smallest ring xq_create() takes */

static uint8_t frame[XQ_MAX_FRAME + 1];

/* ---- A single-thread harness: wake-ups counted, deliveries recorded ---- */

static unsigned wakes[XQ_MAX_WORKERS];

static void count_wake(void *ctx, unsigned worker)
{
	(void)ctx;
	wakes[worker]++;
}

struct got {
	unsigned n;
	unsigned ret; /* what deliver() returns */
	uint64_t tag[4096];
	size_t len[4096];
	bool bad; /* a frame's bytes were not what fill() wrote */
};

static struct got got;

/* Frame bytes derived from the tag and the position: a mix-up or a torn copy shows. */
static uint8_t pattern(uint64_t tag, size_t i)
{
	return (uint8_t)(tag * 131 + i * 7 + (i >> 8));
}

static void fill(uint64_t tag, size_t len)
{
	for (size_t i = 0; i < len; i++)
		frame[i] = pattern(tag, i);
}

static unsigned record(void *ctx, unsigned worker, uint64_t tag, const uint8_t *data, size_t len)
{
	(void)ctx;
	(void)worker;
	for (size_t i = 0; i < len; i++)
		if (data[i] != pattern(tag, i)) {
			got.bad = true;
			break;
		}
	if (got.n < 4096) {
		got.tag[got.n] = tag;
		got.len[got.n] = len;
	}
	got.n++;
	return got.ret;
}

static int push(struct xq *q, unsigned from, unsigned to, uint64_t tag, size_t len)
{
	struct iovec iov = {.iov_base = frame, .iov_len = len};

	fill(tag, len);
	return xq_push(q, from, to, tag, &iov, 1, 0, len);
}

static struct xq *xq_new(unsigned n)
{
	struct xq *q = xq_create(n, RING, count_wake, NULL);

	assert_non_null(q);
	memset(wakes, 0, sizeof(wakes));
	memset(&got, 0, sizeof(got));
	got.ret = 1;
	return q;
}

/* (1) Frames come out in the order they went in, byte-exact, with their tags and lengths. */
static void test_order_and_bytes(void **state)
{
	struct xq *q = xq_new(2);
	static const size_t sizes[] = {14, 15, 16, 17, 60, 1514, 9000, 65536};
	unsigned n = 0;

	(void)state;
	for (unsigned i = 0; i < 16; i++, n++)
		assert_int_equal(push(q, 0, 1, 1000 + i, sizes[i % 8]), 0);
	assert_int_equal(xq_queued_bytes(q, 0, 1) > 0, 1);
	assert_int_equal(xq_queued_bytes(q, 1, 0), 0);
	/* Several drains (the ring had to make room on the way) until it is empty. */
	while (xq_drain(q, 1, 1000, 1u << 30, record, NULL))
		;
	assert_int_equal(got.n, n);
	assert_false(got.bad);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(got.tag[i], 1000 + i);
		assert_int_equal(got.len[i], sizes[i % 8]);
	}
	assert_int_equal(xq_queued_bytes(q, 0, 1), 0);
	/* Nothing for worker 0: an empty drain. */
	assert_int_equal(xq_drain(q, 0, 1000, 1u << 30, record, NULL), 0);
	xq_destroy(q);
}

/* (2) A full ring refuses frames (bounded memory): nothing accepted is lost, order kept. */
static void test_full_ring_refuses_and_recovers(void **state)
{
	struct xq *q = xq_new(2);
	unsigned ok = 0, refused = 0;

	(void)state;
	for (unsigned i = 0; i < 1000; i++) {
		int r = push(q, 0, 1, i, 1514);

		if (r == 0 && !refused)
			ok++;
		else if (r == -ENOSPC)
			refused++;
		else
			fail_msg("push %u: %d after a refusal", i, r);
	}
	/* 1514 bytes take 16 + 1520 in the ring. */
	assert_int_equal(ok, RING / 1536);
	assert_int_equal(refused, 1000 - ok);
	assert_true(xq_queued_bytes(q, 0, 1) <= RING);
	assert_int_equal(push(q, 0, 1, 5000, XQ_MAX_FRAME + 1), -EMSGSIZE);
	assert_int_equal(xq_drain(q, 1, 100000, 1u << 30, record, NULL), 0);
	assert_int_equal(got.n, ok);
	for (unsigned i = 0; i < ok; i++)
		assert_int_equal(got.tag[i], i);
	assert_false(got.bad);
	/* Room again. */
	assert_int_equal(push(q, 0, 1, 7, 1514), 0);
	xq_destroy(q);
}

/*
 * (2b) What a ring holds in memory is its size, whatever the frames: the smallest take a
 * record header and padding each (16 + 16 bytes for 14), counted against the ring like the
 * frame's bytes, so many tiny frames cannot hold more than RING bytes either.
 */
/* A sender that found the ring full waits (xq_block()) and is woken once half of it is free. */
static void test_blocked_sender_woken_at_half(void **state)
{
	struct xq *q = xq_new(2);
	unsigned ok = 0, w0;

	(void)state;
	while (push(q, 0, 1, ok, 1514) == 0)
		ok++;
	assert_true(xq_block(q, 0, 1, 1514));
	assert_true(xq_blocked(q, 0, 1));
	w0 = wakes[0];
	/* A budget of a quarter of the ring: bytes given back, but not half free yet. */
	assert_int_equal(xq_drain(q, 1, ok / 4, 1u << 30, record, NULL), 1);
	assert_int_equal(wakes[0], w0);
	assert_true(xq_blocked(q, 0, 1));
	/* The rest: the drain's last give-back wakes the sender, once. */
	assert_int_equal(xq_drain(q, 1, 100000, 1u << 30, record, NULL), 0);
	assert_int_equal(wakes[0], w0 + 1);
	assert_false(xq_blocked(q, 0, 1));
	assert_int_equal(got.n, ok);
	assert_false(got.bad);
	/* Room now: xq_block() says so, and leaves nothing marked. */
	assert_int_equal(push(q, 0, 1, 9, 1514), 0);
	assert_false(xq_block(q, 0, 1, 1514));
	assert_false(xq_blocked(q, 0, 1));
	xq_destroy(q);
}

static void test_tiny_frames_count_their_records(void **state)
{
	struct xq *q = xq_new(2);
	unsigned ok = 0;

	(void)state;
	while (push(q, 0, 1, ok, 14) == 0)
		ok++;
	assert_int_equal(ok, RING / 32);
	assert_int_equal(xq_queued_bytes(q, 0, 1), RING);
	assert_int_equal(xq_drain(q, 1, 100000, 1u << 30, record, NULL), 0);
	assert_int_equal(got.n, ok);
	assert_false(got.bad);
	xq_destroy(q);
}

/* (3) Records never straddle the end: many laps of odd sizes, every byte checked. */
static void test_wrap_around_laps(void **state)
{
	struct xq *q = xq_new(2);
	uint64_t tag = 0, next = 0;
	size_t pushed = 0;

	(void)state;
	while (pushed < 8u * RING) {
		size_t len = 14 + (size_t)(tag * 7919 % 20000);

		if (push(q, 0, 1, tag, len) == 0) {
			tag++;
			pushed += len;
			continue;
		}
		/* Full: take a few, as a receiver with a small budget would. */
		assert_int_equal(xq_drain(q, 1, 5, 1u << 30, record, NULL), 1);
		for (unsigned i = 0; i < got.n; i++)
			assert_int_equal(got.tag[i], next + i);
		next += got.n;
		got.n = 0;
	}
	assert_int_equal(xq_drain(q, 1, 100000, 1u << 30, record, NULL), 0);
	for (unsigned i = 0; i < got.n; i++)
		assert_int_equal(got.tag[i], next + i);
	assert_int_equal(next + got.n, tag);
	assert_false(got.bad);
	xq_destroy(q);
}

/* (4) One wake-up per idle receiver: at the sender's flush, not again while it is awake. */
static void test_wakeups(void **state)
{
	struct xq *q = xq_new(3);
	unsigned before;

	(void)state;
	assert_int_equal(push(q, 0, 1, 1, 60), 0);
	assert_int_equal(push(q, 0, 1, 2, 60), 0);
	assert_int_equal(wakes[1], 0); /* not per frame: at the end of the sender's round */
	xq_flush(q, 0);
	assert_int_equal(wakes[1], 1);
	assert_int_equal(wakes[2], 0); /* nothing queued for worker 2 */
	xq_flush(q, 0);
	assert_int_equal(wakes[1], 1); /* nothing new since */
	/* Woken but not drained yet: new frames need no second wake-up. */
	assert_int_equal(push(q, 0, 1, 3, 60), 0);
	assert_int_equal(push(q, 2, 1, 4, 60), 0);
	xq_flush(q, 0);
	xq_flush(q, 2);
	assert_int_equal(wakes[1], 1);
	/* A drain that ends on its budget stays awake (the caller runs it again)... */
	assert_int_equal(xq_drain(q, 1, 2, 1u << 30, record, NULL), 1);
	assert_int_equal(push(q, 0, 1, 5, 60), 0);
	xq_flush(q, 0);
	assert_int_equal(wakes[1], 1);
	/* ... one that empties every ring goes idle: the next frame wakes it again. */
	assert_int_equal(xq_drain(q, 1, 100, 1u << 30, record, NULL), 0);
	assert_int_equal(got.n, 5);
	assert_int_equal(push(q, 2, 1, 6, 60), 0);
	xq_flush(q, 2);
	assert_int_equal(wakes[1], 2);
	assert_int_equal(xq_drain(q, 1, 100, 1u << 30, record, NULL), 0);
	/* A ring more than half full wakes its receiver at once, mid-round, once. */
	before = wakes[1];
	for (unsigned i = 0; i < RING / 2 / 1536 + 10; i++)
		assert_int_equal(push(q, 0, 1, 100 + i, 1514), 0);
	assert_int_equal(wakes[1], before + 1);
	xq_flush(q, 0);
	assert_int_equal(wakes[1], before + 1);
	assert_int_equal(xq_drain(q, 1, 1000, 1u << 30, record, NULL), 0);
	xq_destroy(q);
}

/* (5) Budgets: frames, bytes and what deliver() reports; senders take turns. */
static void test_budgets_and_turns(void **state)
{
	struct xq *q = xq_new(3);

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(push(q, 0, 2, 100 + i, 60), 0);
		assert_int_equal(push(q, 1, 2, 200 + i, 60), 0);
	}
	/* One frame per drain: sender 0, then 1, then 0 ... */
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(xq_drain(q, 2, 1, 1u << 30, record, NULL), 1);
	assert_int_equal(got.n, 6);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(got.tag[i], (i % 2 ? 200 : 100) + i / 2);
	got.n = 0;
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(push(q, 0, 2, 104 + i, 60), 0);
	/* A delivery to 3 ports (a flood) costs 3 of the budget: 2 of the 6 frames left. */
	got.ret = 3;
	assert_int_equal(xq_drain(q, 2, 4, 1u << 30, record, NULL), 1);
	assert_int_equal(got.n, 2);
	got.ret = 1;
	/* The byte budget: 60 bytes each, at least one frame. */
	assert_int_equal(push(q, 0, 2, 300, 60), 0);
	assert_int_equal(push(q, 0, 2, 301, 60), 0);
	got.n = 0;
	assert_int_equal(xq_drain(q, 2, 100, 1, record, NULL), 1);
	assert_int_equal(got.n, 1);
	assert_int_equal(xq_drain(q, 2, 100, 1u << 30, record, NULL), 0);
	assert_int_equal(got.n, 6);
	xq_destroy(q);
}

/* (6) Bad configurations are refused. */
static void test_create_checks(void **state)
{
	(void)state;
	assert_null(xq_create(1, RING, count_wake, NULL));
	assert_null(xq_create(XQ_MAX_WORKERS + 1, RING, count_wake, NULL));
	assert_null(xq_create(2, RING / 2, count_wake, NULL));
	assert_null(xq_create(2, RING + 4096, count_wake, NULL));
	assert_null(xq_create(2, RING, NULL, NULL));
}

/* ---- Threads: two senders, one receiver woken only through the wake callback ---- */

#define T_FRAMES 20000u
#define T_SENDERS 2

struct tshared {
	struct xq *q;
	int efd[T_SENDERS + 1]; /* each worker's wake eventfd */
	unsigned done;		/* senders finished (atomic) */
	/* The receiver's findings (cmocka is not thread-safe: checked on the main thread). */
	unsigned got[T_SENDERS], bad, out_of_order, stalls;
};

static struct tshared ts;

static void efd_wake(void *ctx, unsigned worker)
{
	uint64_t one = 1;

	(void)ctx;
	if (write(ts.efd[worker], &one, sizeof(one)) != sizeof(one))
		abort();
}

static void *sender(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint8_t buf[1600];

	for (unsigned i = 0; i < T_FRAMES;) {
		/* A "round": a burst, then the flush that wakes the receiver. */
		for (unsigned k = 0; k < 32 && i < T_FRAMES; k++) {
			uint64_t tag = (uint64_t)me << 32 | i;
			size_t len = 14 + (i * 37) % 1500;
			struct iovec iov = {.iov_base = buf, .iov_len = len};

			for (size_t j = 0; j < len; j++)
				buf[j] = pattern(tag, j);
			if (xq_push(ts.q, me, T_SENDERS, tag, &iov, 1, 0, len) == 0)
				i++;
			else
				break; /* full: flush, let the receiver catch up */
		}
		xq_flush(ts.q, me);
		sched_yield();
	}
	__atomic_fetch_add(&ts.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static unsigned t_deliver(void *ctx, unsigned worker, uint64_t tag, const uint8_t *data, size_t len)
{
	unsigned from = (unsigned)(tag >> 32), seq = (unsigned)tag;

	(void)ctx;
	(void)worker;
	if (from >= T_SENDERS || len != 14 + (seq * 37) % 1500) {
		ts.bad++;
		return 1;
	}
	for (size_t j = 0; j < len; j++)
		if (data[j] != pattern(tag, j)) {
			ts.bad++;
			break;
		}
	if (seq != ts.got[from])
		ts.out_of_order++;
	ts.got[from] = seq + 1;
	return 1;
}

/* The receiving worker: sleeps on its eventfd, drains one budget at a time. */
static void *receiver(void *arg)
{
	struct pollfd pfd = {.fd = ts.efd[T_SENDERS], .events = POLLIN};

	(void)arg;
	for (;;) {
		uint64_t v;
		bool more;

		if (ts.got[0] == T_FRAMES && ts.got[1] == T_FRAMES)
			break;
		if (poll(&pfd, 1, 5000) == 0) {
			/* Five seconds without a wake-up while frames wait: one was lost. */
			ts.stalls++;
			if (ts.stalls > 1)
				break;
		}
		if (read(ts.efd[T_SENDERS], &v, sizeof(v)) < 0 && errno != EAGAIN)
			abort();
		do
			more = xq_drain(ts.q, T_SENDERS, 64, 256 * 1024, t_deliver, NULL) != 0;
		while (more);
	}
	return NULL;
}

/* (7) Real threads: every frame arrives once, in order, byte-exact; no wake-up is lost. */
static void test_threads_two_senders_one_receiver(void **state)
{
	pthread_t s[T_SENDERS], r;

	(void)state;
	memset(&ts, 0, sizeof(ts));
	for (unsigned i = 0; i <= T_SENDERS; i++) {
		ts.efd[i] = eventfd(0, EFD_NONBLOCK);
		assert_true(ts.efd[i] >= 0);
	}
	ts.q = xq_create(T_SENDERS + 1, RING, efd_wake, NULL);
	assert_non_null(ts.q);
	assert_int_equal(pthread_create(&r, NULL, receiver, NULL), 0);
	for (unsigned i = 0; i < T_SENDERS; i++)
		assert_int_equal(pthread_create(&s[i], NULL, sender, (void *)(uintptr_t)i), 0);
	for (unsigned i = 0; i < T_SENDERS; i++)
		pthread_join(s[i], NULL);
	pthread_join(r, NULL);
	assert_int_equal(__atomic_load_n(&ts.done, __ATOMIC_ACQUIRE), T_SENDERS);
	assert_int_equal(ts.bad, 0);
	assert_int_equal(ts.out_of_order, 0);
	assert_int_equal(ts.stalls, 0);
	assert_int_equal(ts.got[0], T_FRAMES);
	assert_int_equal(ts.got[1], T_FRAMES);
	xq_destroy(ts.q);
	for (unsigned i = 0; i <= T_SENDERS; i++)
		close(ts.efd[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_bytes),
		cmocka_unit_test(test_full_ring_refuses_and_recovers),
		cmocka_unit_test(test_blocked_sender_woken_at_half),
		cmocka_unit_test(test_tiny_frames_count_their_records),
		cmocka_unit_test(test_wrap_around_laps),
		cmocka_unit_test(test_wakeups),
		cmocka_unit_test(test_budgets_and_turns),
		cmocka_unit_test(test_create_checks),
		cmocka_unit_test(test_threads_two_senders_one_receiver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
