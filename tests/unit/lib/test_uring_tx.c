/* SPDX-License-Identifier: MIT */
/* test_uring_tx.c - uring_tx: a burst of writes in order, a full fd stops it, nothing after runs. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/uring_tx.h"

struct fixture {
	struct uring_tx *u;
	int p[2];
};

static int setup(void **state)
{
	static struct fixture f;

	alarm(5); /* a write that waited would hang the test: SIGALRM fails it instead */
	f.u = uring_tx_create(); /* NULL: no io_uring here (or disabled): the tests skip */
	if (pipe2(f.p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->p[0]);
	close(f->p[1]);
	uring_tx_destroy(f->u);
	return 0;
}

static void req2(struct uring_tx_req *r, const void *a, size_t alen, const void *b, size_t blen)
{
	r->iov[0] = (struct iovec){.iov_base = (void *)a, .iov_len = alen};
	r->iov[1] = (struct iovec){.iov_base = (void *)b, .iov_len = blen};
	r->cnt = 2;
}

/* Three writes of two pieces each: all complete, in order, with their lengths. */
static void test_burst_in_order(void **state)
{
	struct fixture *f = *state;
	static const char hdr[4] = "HDR", a[] = "first", b[] = "second", c[] = "third";
	struct uring_tx_req req[3];
	int res[3] = {0};
	char got[64];
	ssize_t n;

	if (!f->u) /* no io_uring on this host */
		skip();
	req2(&req[0], hdr, 3, a, 5);
	req2(&req[1], hdr, 3, b, 6);
	req2(&req[2], hdr, 3, c, 5);
	assert_int_equal(uring_tx_writev(f->u, f->p[1], req, 3, res), 0);
	assert_int_equal(res[0], 8);
	assert_int_equal(res[1], 9);
	assert_int_equal(res[2], 8);
	n = read(f->p[0], got, sizeof(got));
	assert_int_equal(n, 25);
	assert_memory_equal(got, "HDRfirstHDRsecondHDRthird", 25);
}

/*
 * A pipe of one page takes two writes of 2000 bytes; the third gets -EAGAIN at once (the fd is
 * non-blocking: nothing waits) and the fourth is not tried (-ECANCELED), so what went out is a
 * prefix of the burst. The ring is usable again afterwards.
 */
static void test_full_fd_stops_the_burst(void **state)
{
	struct fixture *f = *state;
	static char big[2000];
	struct uring_tx_req req[4];
	int res[4] = {0};
	char drain[8192];

	if (!f->u) /* no io_uring on this host */
		skip();
	if (fcntl(f->p[1], F_SETPIPE_SZ, 4096) < 0)
		skip();
	for (unsigned i = 0; i < 4; i++)
		req2(&req[i], big, 1000, big + 1000, 1000);
	assert_int_equal(uring_tx_writev(f->u, f->p[1], req, 4, res), 0);
	assert_int_equal(res[0], 2000);
	assert_int_equal(res[1], 2000);
	assert_int_equal(res[2], -EAGAIN);
	assert_int_equal(res[3], -ECANCELED);
	assert_int_equal(read(f->p[0], drain, sizeof(drain)), 4000);
	assert_int_equal(uring_tx_writev(f->u, f->p[1], req, 1, res), 0);
	assert_int_equal(res[0], 2000);
}

/* A closed reader: the first write fails (-EPIPE; SIGPIPE ignored), the rest are cancelled. */
static void test_error_cancels_the_rest(void **state)
{
	struct fixture *f = *state;
	static const char x[8];
	struct uring_tx_req req[2];
	int res[2] = {0}, p[2];

	if (!f->u) /* no io_uring on this host */
		skip();
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	close(p[0]);
	req2(&req[0], x, 4, x + 4, 4);
	req2(&req[1], x, 4, x + 4, 4);
	assert_int_equal(uring_tx_writev(f->u, p[1], req, 2, res), 0);
	assert_int_equal(res[0], -EPIPE);
	assert_int_equal(res[1], -ECANCELED);
	close(p[1]);
}

/* Bursts outside 1..URING_TX_MAX are refused before anything is written. */
static void test_bad_counts(void **state)
{
	struct fixture *f = *state;
	struct uring_tx_req req[1];
	int res[1];

	if (!f->u) /* no io_uring on this host */
		skip();
	req2(&req[0], "a", 1, "b", 1);
	assert_int_equal(uring_tx_writev(f->u, f->p[1], req, 0, res), -EINVAL);
	assert_int_equal(uring_tx_writev(f->u, f->p[1], req, URING_TX_MAX + 1, res), -EINVAL);
}

static void *other_thread(void *arg)
{
	(void)arg;
	return uring_tx_self();
}

/* The ring a thread binds is that thread's only: another thread sees none. */
static void test_bind_is_per_thread(void **state)
{
	struct fixture *f = *state;
	pthread_t t;
	void *seen = (void *)1;

	if (!f->u) /* no io_uring on this host */
		skip();
	uring_tx_bind(f->u);
	assert_ptr_equal(uring_tx_self(), f->u);
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	pthread_join(t, &seen);
	assert_null(seen);
	uring_tx_bind(NULL);
	assert_null(uring_tx_self());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_in_order),
		cmocka_unit_test(test_full_fd_stops_the_burst),
		cmocka_unit_test(test_error_cancels_the_rest),
		cmocka_unit_test(test_bad_counts),
		cmocka_unit_test(test_bind_is_per_thread),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
