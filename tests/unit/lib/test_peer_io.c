/* SPDX-License-Identifier: MIT */
/* test_peer_io.c - peer_io: no read or write waits on fds whose O_NONBLOCK the peer cleared. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/peer_io.h"

/* A blocking call would hang the test: SIGALRM ends it with a failure instead. */
static int arm(void **state)
{
	(void)state;
	alarm(5);
	return 0;
}

static void fill_pipe(int w)
{
	char page[4096] = {0};

	fcntl(w, F_SETFL, O_NONBLOCK);
	while (write(w, page, sizeof(page)) > 0)
		;
	fcntl(w, F_SETFL, 0); /* the peer clears the flag again */
}

static void test_eventfd_at_its_limit_is_not_written(void **state)
{
	const uint64_t one = 1, max = 0xfffffffffffffffeull;
	int e = eventfd(0, EFD_CLOEXEC); /* blocking */

	(void)state;
	assert_true(e >= 0);
	assert_int_equal(peer_fd_kind(e), PEER_FD_OTHER);
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), 8);
	uint64_t v;
	assert_int_equal(peer_read(e, PEER_FD_OTHER, &v, sizeof(v)), 8);
	assert_int_equal(v, 1);
	assert_int_equal(write(e, &max, sizeof(max)), 8);
	errno = 0;
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), -1);
	assert_int_equal(errno, EAGAIN);
	close(e);
}

static void test_empty_blocking_eventfd_is_not_read(void **state)
{
	int e = eventfd(0, EFD_CLOEXEC);
	uint64_t v;

	(void)state;
	errno = 0;
	assert_int_equal(peer_read(e, PEER_FD_OTHER, &v, sizeof(v)), -1);
	assert_int_equal(errno, EAGAIN);
	close(e);
}

static void test_blocking_pipe_full_or_empty(void **state)
{
	char buf[16384] = {0};
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(peer_fd_kind(p[0]), PEER_FD_FIFO);
	errno = 0;
	assert_int_equal(peer_read(p[0], PEER_FD_FIFO, buf, 8), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(p[0], F_SETPIPE_SZ, 4096), 4096);
	assert_int_equal(peer_write(p[1], PEER_FD_FIFO, buf, 1), 1);
	/* A write larger than the room left takes what fits, or nothing: it never waits. */
	ssize_t n = peer_write(p[1], PEER_FD_FIFO, buf, sizeof(buf));
	assert_true(n < (ssize_t)sizeof(buf));
	fill_pipe(p[1]);
	/* Small writes still merge into the last page while it has room; then EAGAIN. */
	while (peer_write(p[1], PEER_FD_FIFO, buf, 8) == 8)
		;
	assert_int_equal(errno, EAGAIN);
	close(p[0]);
	close(p[1]);
}

static void test_blocking_socket(void **state)
{
	char b[8] = {0};
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(peer_fd_kind(sv[0]), PEER_FD_SOCKET);
	errno = 0;
	assert_int_equal(peer_read(sv[0], PEER_FD_SOCKET, b, sizeof(b)), -1);
	assert_int_equal(errno, EAGAIN);
	while (peer_write(sv[0], PEER_FD_SOCKET, b, sizeof(b)) > 0)
		;
	assert_int_equal(errno, EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* Under the write watchdog (the tests below: it stays on once started). */
static void test_guard_interrupts_a_write_kept_waiting(void **state)
{
	const uint64_t one = 1, max = 0xfffffffffffffffeull;
	int e = eventfd(0, EFD_CLOEXEC); /* blocking */
	uint64_t v;

	(void)state;
	assert_int_equal(peer_io_watchdog_start(), 0);
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), 8);
	assert_int_equal(peer_read(e, PEER_FD_OTHER, &v, sizeof(v)), 8);
	assert_int_equal(write(e, &max, sizeof(max)), 8);
	/* One write(2) alone would wait for ever: the watchdog interrupts it. */
	errno = 0;
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), -1);
	assert_int_equal(errno, ETIMEDOUT);
	/* And again: the watchdog stays on after an interruption. */
	errno = 0;
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), -1);
	assert_int_equal(errno, ETIMEDOUT);
	/* Non-blocking and full: EAGAIN at once, as without the watchdog. */
	assert_int_equal(fcntl(e, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(peer_read(e, PEER_FD_OTHER, &v, sizeof(v)), 8);
	assert_true(v == max);
	assert_int_equal(peer_write(e, PEER_FD_OTHER, &one, sizeof(one)), 8);
	close(e);
}

static void *stalled_writer(void *arg)
{
	const uint64_t one = 1;
	int e = *(int *)arg;
	intptr_t r;

	errno = 0;
	r = peer_write(e, PEER_FD_OTHER, &one, sizeof(one)) == -1 && errno == ETIMEDOUT;
	return (void *)r;
}

static void test_guard_two_threads_stalled_at_once(void **state)
{
	const uint64_t max = 0xfffffffffffffffeull;
	int e = eventfd(0, EFD_CLOEXEC);
	pthread_t t[2];
	void *r;

	(void)state;
	assert_int_equal(peer_io_watchdog_start(), 0); /* started already: nothing */
	assert_int_equal(write(e, &max, sizeof(max)), 8);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, stalled_writer, &e), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], &r), 0);
		assert_true(r == (void *)1);
	}
	close(e);
}

/* The watchdog's signal outside a guarded write interrupts nothing (SA_RESTART, no jump). */
static void *signalled_reader(void *arg)
{
	int fd = *(int *)arg;
	char c = 0;
	intptr_t r = read(fd, &c, 1) == 1 && c == 'x';

	return (void *)r;
}

static void test_guard_signal_elsewhere_is_harmless(void **state)
{
	int p[2];
	pthread_t t;
	void *r;

	(void)state;
	assert_int_equal(peer_io_watchdog_start(), 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pthread_kill(pthread_self(), PEER_IO_WATCHDOG_SIGNAL), 0);
	assert_int_equal(pthread_create(&t, NULL, signalled_reader, &p[0]), 0);
	usleep(50000); /* in read() now, most likely; either way it must not fail */
	assert_int_equal(pthread_kill(t, PEER_IO_WATCHDOG_SIGNAL), 0);
	usleep(10000);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(pthread_join(t, &r), 0);
	assert_true(r == (void *)1);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_eventfd_at_its_limit_is_not_written, arm),
		cmocka_unit_test_setup(test_empty_blocking_eventfd_is_not_read, arm),
		cmocka_unit_test_setup(test_blocking_pipe_full_or_empty, arm),
		cmocka_unit_test_setup(test_blocking_socket, arm),
		cmocka_unit_test_setup(test_guard_interrupts_a_write_kept_waiting, arm),
		cmocka_unit_test_setup(test_guard_two_threads_stalled_at_once, arm),
		cmocka_unit_test_setup(test_guard_signal_elsewhere_is_harmless, arm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
