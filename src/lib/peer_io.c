/* SPDX-License-Identifier: MIT */
/* peer_io.c - reads and writes on fds a peer shares with us, that do not wait for that peer. */
#include "lib/peer_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"

/*
 * The write watchdog. An eventfd write has no per-call flag that keeps it from waiting: it waits
 * only while the counter is full (2^64 - 2), which a frontend can arrange after clearing the
 * O_NONBLOCK vnetd set on the file it shares. A poll() of no time before each write costs a
 * second system call per guest interrupt (300 ns of 560 here) and still loses to a peer that
 * fills the counter between the two calls. So once peer_io_watchdog_start() ran, a thread
 * writes an eventfd with one write(2), marking that it is inside it (an odd seq); a watchdog
 * thread looks every PEER_GUARD_PERIOD_NS, and a write it finds at two looks in a row (the same
 * odd seq) is interrupted by a tgkill of PEER_IO_WATCHDOG_SIGNAL. The handler jumps out only
 * for that: a signal the watchdog sent (SI_TKILL from this process) for the write the thread
 * is still in (kill_seq == seq). If the file is still O_NONBLOCK the write cannot have waited
 * (the thread was off the CPU): it is tried once more; else the write fails with ETIMEDOUT,
 * after 100 to 200 ms. The handler is SA_RESTART and does nothing else, so a stray signal
 * interrupts no system call.
 */
#define PEER_GUARD_PERIOD_NS 100000000L /* ten looks a second; a stall ends in 100-200 ms */
#define PEER_GUARD_THREADS 64

struct guard_slot {
	pthread_t tid;
	_Atomic uint32_t seq;      /* odd while the thread is inside a guarded write */
	_Atomic uint32_t kill_seq; /* the write the watchdog interrupts (its odd seq) */
};

static struct guard_slot guard_slots[PEER_GUARD_THREADS];
static _Atomic unsigned guard_nslots;
static atomic_bool guard_running;
static pid_t guard_pid;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int guard_self = -1; /* slot index; -2: none free, unguarded */
static _Thread_local sigjmp_buf guard_jmp;
static _Thread_local volatile sig_atomic_t guard_armed;

/* on_guard_signal() - leave the write the watchdog found kept waiting; ignore anything else. */
static void on_guard_signal(int sig, siginfo_t *si, void *uc)
{
	struct guard_slot *g;

	(void)sig;
	(void)uc;
	if (!guard_armed || guard_self < 0 || si->si_code != SI_TKILL || si->si_pid != guard_pid)
		return;
	g = &guard_slots[guard_self];
	if (atomic_load_explicit(&g->kill_seq, memory_order_relaxed) !=
	    atomic_load_explicit(&g->seq, memory_order_relaxed))
		return; /* sent for an earlier write, which ended */
	guard_armed = 0;
	siglongjmp(guard_jmp, 1);
}

/* guard_watch() - the watchdog thread: a look each period at every writing thread's seq. */
static void *guard_watch(void *arg)
{
	static uint32_t last[PEER_GUARD_THREADS];
	struct timespec next;

	pthread_setname_np(pthread_self(), "vnetd-watchdog"); /* top -H, /proc/PID/task/TID/comm */
	sem_post(arg); /* running: glibc's per-thread set-up is done before any sandbox */
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		unsigned n = atomic_load_explicit(&guard_nslots, memory_order_acquire);
		int err;

		next.tv_nsec += PEER_GUARD_PERIOD_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		/* Absolute: an early return (EINTR) sleeps again, looks stay a period apart. */
		while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL)) == EINTR)
			;
		if (err) {
			/* Writers go back to a poll() before each write (peer_write()). */
			atomic_store_explicit(&guard_running, false, memory_order_relaxed);
			log_err("peer I/O: write watchdog stops: clock_nanosleep: %s", strerror(err));
			return NULL;
		}
		for (unsigned i = 0; i < n; i++) {
			struct guard_slot *g = &guard_slots[i];
			uint32_t v = atomic_load_explicit(&g->seq, memory_order_relaxed);

			if ((v & 1) && v == last[i]) {
				atomic_store_explicit(&g->kill_seq, v, memory_order_relaxed);
				pthread_kill(g->tid, PEER_IO_WATCHDOG_SIGNAL);
			}
			last[i] = v;
		}
	}
	return NULL;
}

/**
 * peer_io_watchdog_start() - eventfd writes by one write(2) each, a watchdog ending a stalled one.
 *
 * Before the sandbox (it starts a thread, returns once that thread runs, and installs a
 * signal handler), before the threads that write; again: nothing. Without it peer_write()
 * polls an eventfd before each write.
 *
 * Return: 0, or -1 (logged; peer_write() then stays with poll() and write()).
 */
int peer_io_watchdog_start(void)
{
	struct sigaction sa;
	sigset_t all, old;
	sem_t started;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (atomic_load_explicit(&guard_running, memory_order_acquire))
		return 0; /* started already */
	guard_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_guard_signal;
	/* SA_NODEFER: the jump leaves the handler, and the signal must not stay blocked. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(PEER_IO_WATCHDOG_SIGNAL, &sa, NULL) < 0) {
		log_err("peer I/O: write watchdog: sigaction: %s", strerror(errno));
		return -1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	/* The watchdog takes no signal: SIGTERM and the others go to the threads that wait for
	 * them (a signalfd), whatever mask they set up later. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sem_init(&started, 0, 0);
	err = pthread_create(&t, &attr, guard_watch, &started);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		sem_destroy(&started);
		log_err("peer I/O: write watchdog: thread: %s", strerror(err));
		return -1;
	}
	while (sem_wait(&started) < 0 && errno == EINTR)
		;
	sem_destroy(&started);
	atomic_store_explicit(&guard_running, true, memory_order_release);
	return 0;
}

/* guard_slot() - this thread's slot (taken at its first guarded write), or -1: none. */
static int guard_slot(void)
{
	if (guard_self == -1) {
		pthread_mutex_lock(&guard_lock);
		unsigned n = atomic_load_explicit(&guard_nslots, memory_order_relaxed);

		if (n < PEER_GUARD_THREADS) {
			guard_slots[n].tid = pthread_self();
			atomic_store_explicit(&guard_nslots, n + 1, memory_order_release);
			guard_self = (int)n;
		} else {
			guard_self = -2;
		}
		pthread_mutex_unlock(&guard_lock);
	}
	return guard_self >= 0 ? guard_self : -1;
}

/* armed_write() - one write(2) the watchdog may interrupt: false if it did, else true, *out set. */
static bool armed_write(struct guard_slot *g, int fd, const void *buf, size_t len, ssize_t *out)
{
	uint32_t seq = atomic_load_explicit(&g->seq, memory_order_relaxed);
	ssize_t n;

	if (sigsetjmp(guard_jmp, 0)) {
		atomic_store_explicit(&g->seq, seq + 2, memory_order_release);
		return false;
	}
	atomic_store_explicit(&g->seq, seq + 1, memory_order_release);
	guard_armed = 1;
	atomic_signal_fence(memory_order_seq_cst); /* armed before the write, disarmed after */
	/* The system call itself: glibc's write() would leave async cancellation on if we jump. */
	n = syscall(SYS_write, fd, buf, len);
	atomic_signal_fence(memory_order_seq_cst);
	guard_armed = 0;
	atomic_store_explicit(&g->seq, seq + 2, memory_order_release);
	*out = n;
	return true;
}

/*
 * guarded_write() - write(2) under the watchdog; -1 with errno ETIMEDOUT when the peer kept it
 * waiting (interrupted with O_NONBLOCK cleared, or twice).
 */
static ssize_t guarded_write(struct guard_slot *g, int fd, const void *buf, size_t len)
{
	ssize_t n;

	for (int tries = 0; tries < 2; tries++) {
		if (armed_write(g, fd, buf, len, &n))
			return n;
		/* Still non-blocking: it cannot have waited (the thread was off the CPU). */
		if (!(fcntl(fd, F_GETFL) & O_NONBLOCK))
			break;
	}
	errno = ETIMEDOUT;
	return -1;
}

/**
 * peer_fd_kind() - classify an fd a peer handed over.
 * @fd: the fd.
 *
 * Return: PEER_FD_SOCKET, PEER_FD_FIFO (pipes), PEER_FD_FILE (regular files) or
 * PEER_FD_OTHER (eventfds, anything else, errors).
 */
enum peer_fd_kind peer_fd_kind(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return PEER_FD_OTHER;
	if (S_ISSOCK(st.st_mode))
		return PEER_FD_SOCKET;
	if (S_ISFIFO(st.st_mode))
		return PEER_FD_FIFO;
	if (S_ISREG(st.st_mode))
		return PEER_FD_FILE;
	return PEER_FD_OTHER;
}

/* RWF_NOWAIT refused (a file type or kernel without it): poll() of no time instead. */
static bool nowait_unsupported(void)
{
	return errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS;
}

/* ready_now() - whether fd is ready for `events` now; false with errno EAGAIN (or EPIPE). */
static bool ready_now(int fd, short events)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int n = poll(&pfd, 1, 0);

	if (n > 0 && (pfd.revents & events))
		return true;
	if (n >= 0)
		errno = (n > 0 && (pfd.revents & (POLLERR | POLLNVAL))) ? EPIPE : EAGAIN;
	return false;
}

/**
 * peer_read() - read without waiting, whatever the file's O_NONBLOCK says now.
 * @fd: the fd.
 * @kind: what peer_fd_kind() said of it.
 * @buf: where to read to.
 * @len: at most this many bytes.
 *
 * Return: bytes read, 0 at EOF, -1 with errno (EAGAIN: nothing to read now).
 */
ssize_t peer_read(int fd, enum peer_fd_kind kind, void *buf, size_t len)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	ssize_t n;

	if (kind == PEER_FD_SOCKET)
		return recv(fd, buf, len, MSG_DONTWAIT);
	if (kind == PEER_FD_FILE)
		return read(fd, buf, len);
	n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT); /* pipes; eventfds since Linux 5.12 */
	if (n >= 0 || !nowait_unsupported())
		return n;
	/* POLLHUP: the writer is gone, read() returns what is left or EOF at once. */
	if (!ready_now(fd, POLLIN | POLLHUP))
		return -1;
	return read(fd, buf, len);
}

/**
 * peer_write() - write without waiting, whatever the file's O_NONBLOCK says now.
 * @fd: the fd.
 * @kind: what peer_fd_kind() said of it.
 * @buf: the bytes.
 * @len: how many.
 *
 * An eventfd write has no per-call flag. Once peer_io_watchdog_start() ran it is one write(2)
 * (PEER_FD_POLLED: after a poll() of no time too) that the watchdog ends if the peer keeps it
 * waiting; before, a poll() of no time makes sure the counter has room (a peer racing us
 * between the two calls could still fill it). A pipe without RWF_NOWAIT takes at most
 * PIPE_BUF bytes after a poll(): a free slot holds that many.
 *
 * Return: bytes written, -1 with errno (EAGAIN: the peer is full; ETIMEDOUT: the peer kept the
 * write waiting, 100 to 200 ms, until the watchdog ended it).
 */
ssize_t peer_write(int fd, enum peer_fd_kind kind, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	ssize_t n;

	if (kind == PEER_FD_SOCKET)
		return send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (kind == PEER_FD_FILE)
		return write(fd, buf, len);
	if (kind == PEER_FD_FIFO) {
		n = pwritev2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (n >= 0 || !nowait_unsupported())
			return n;
		if (len > PIPE_BUF)
			len = PIPE_BUF;
	} else if (atomic_load_explicit(&guard_running, memory_order_relaxed)) {
		int slot = guard_slot();

		if (slot >= 0) {
			if (kind == PEER_FD_POLLED && !ready_now(fd, POLLOUT))
				return -1;
			return guarded_write(&guard_slots[slot], fd, buf, len);
		}
	}
	if (!ready_now(fd, POLLOUT))
		return -1;
	return write(fd, buf, len);
}
