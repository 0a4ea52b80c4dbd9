/* SPDX-License-Identifier: MIT */
/* cpu_distance.c - how far apart two CPUs are now: a cache line's round trip between them, sampled. */
/*
 * On a VM the hypervisor places its vCPUs on host cores as it likes and moves them: two vCPUs
 * on cores that share a cache hand a cache line over in tens of ns, on cores that do not in
 * ~150 (measured on the 2-vCPU AMD EPYC VMs: round trips of ~52-70 and ~300-340 ns, switching
 * every few seconds, idle or loaded). Every virtio ring and every frame crosses between the
 * backend's CPU and the driver's, so a benchmark's rates follow this placement
 * (docs/benchmarks.md). This samples it beside a measurement: two threads, one on each CPU,
 * pass a line back and forth `rounds` times per sample; SCHED_FIFO (when allowed) so a sample
 * runs at once on busy CPUs: 2000 rounds take ~0.1-0.7 ms of each CPU, 200 (beside a latency
 * measurement) ~10-70 µs. A side that waits for the other gives up after a deadline that grows
 * with the rounds (DIST_BASE_NS + DIST_PER_ROUND_NS each), and the other side with it.
 */
#include "cpu_distance.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "loops.h"
#include "probe.h"

#define DIST_BASE_NS 1000000ull   /* a sample's deadline: 1 ms ... */
#define DIST_PER_ROUND_NS 2000ull /* ... + 2 µs a round trip (~6x the farthest seen) */
#define DIST_MAX_ROUNDS 20000u    /* so a FIFO thread spins at most ~41 ms */
#define FIFO_PRIO 50

struct dist {
	_Alignas(64) _Atomic uint64_t line;
	_Alignas(64) _Atomic bool quit;
	_Atomic bool abort;        /* this sample is given up: stop waiting */
	_Atomic bool ready;        /* the partner runs */
	_Atomic bool partner_fifo; /* ... at SCHED_FIFO */
	sem_t go;
	unsigned rounds;
	int cpu;
};

/* Pin the calling thread to cpu and, where allowed, make it SCHED_FIFO: true if both. */
static bool dist_place(int cpu)
{
	struct sched_param p = {.sched_priority = FIFO_PRIO};
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		return false;
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
}

/* A sample's deadline, from now. */
static uint64_t dist_deadline(const struct dist *d)
{
	return now_ns() + DIST_BASE_NS + DIST_PER_ROUND_NS * d->rounds;
}

/* Spin until *line == want; false past deadline or once the sample is given up (both read once
 * per 1024 spins, so they add nothing measurable to a round trip). */
static bool dist_await(struct dist *d, uint64_t want, uint64_t deadline)
{
	for (unsigned spins = 0; atomic_load_explicit(&d->line, memory_order_acquire) != want;)
		if ((++spins & 1023u) == 0 && (atomic_load(&d->abort) || now_ns() > deadline))
			return false;
	return true;
}

/* The far side: per sample, answer each odd value with the next even one. */
static void *dist_partner(void *arg)
{
	struct dist *d = arg;
	int policy;
	struct sched_param p;

	dist_place(d->cpu); /* placed at creation already where allowed (dist_start()) */
	atomic_store(&d->partner_fifo,
		     pthread_getschedparam(pthread_self(), &policy, &p) == 0 && policy == SCHED_FIFO);
	atomic_store(&d->ready, true);
	for (;;) {
		uint64_t deadline;

		while (sem_wait(&d->go) && errno == EINTR)
			;
		if (atomic_load(&d->quit))
			return NULL;
		atomic_store_explicit(&d->line, 1, memory_order_release); /* here */
		deadline = dist_deadline(d);
		for (uint64_t i = 1; i <= d->rounds; i++) {
			if (!dist_await(d, 2 * i + 1, deadline))
				break;
			atomic_store_explicit(&d->line, 2 * i + 2, memory_order_release);
		}
	}
}

/* One sample: ns per round trip, or -1 when the partner did not keep up in time. */
static double dist_sample(struct dist *d)
{
	uint64_t t0, deadline;

	atomic_store(&d->abort, false);
	atomic_store(&d->line, 0);
	sem_post(&d->go);
	deadline = dist_deadline(d);
	if (!dist_await(d, 1, deadline))
		goto lost;
	t0 = now_ns();
	for (uint64_t i = 1; i <= d->rounds; i++) {
		atomic_store_explicit(&d->line, 2 * i + 1, memory_order_release);
		if (!dist_await(d, 2 * i + 2, deadline))
			goto lost;
	}
	return (double)(now_ns() - t0) / d->rounds;
lost:
	atomic_store(&d->abort, true); /* the partner stops waiting too */
	return -1;
}

/*
 * Start the partner on its CPU, SCHED_FIFO from its first instruction where allowed (else as
 * this thread is: on a busy CPU it may wait its turn), with SIGINT and SIGTERM blocked (they are
 * the main thread's: paced_stop), and wait until it runs (at most 2 s).
 */
static int dist_start(struct dist *d, pthread_t *th)
{
	struct sched_param p = {.sched_priority = FIFO_PRIO};
	sigset_t block, old;
	pthread_attr_t a;
	cpu_set_t set;
	uint64_t deadline;
	int rc;

	CPU_ZERO(&set);
	CPU_SET(d->cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &p);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old); /* the new thread inherits the mask */
	rc = pthread_create(th, &a, dist_partner, d);
	if (rc == EPERM) /* no SCHED_FIFO here */
		rc = pthread_create(th, NULL, dist_partner, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc)
		return -1;
	deadline = now_ns() + 2000000000ull;
	while (!atomic_load(&d->ready) && now_ns() < deadline && !paced_stop) {
		struct timespec ms = {.tv_nsec = 1000000};

		nanosleep(&ms, NULL);
	}
	return 0;
}

/**
 * cpu_distance_json() - sample the cache-line round trip between two CPUs for a while.
 * @f:		where: one JSON line per sample ({"t_s", "round_trip_ns"}), flushed, then one
 *		{"cpus", "fifo", "samples", "lost"} line ("fifo": both threads ran SCHED_FIFO; without
 *		it, on busy CPUs, a sample also measures the scheduler)
 * @cpu:	the two CPUs, different
 * @duration_s:	how long to go on, from when both threads run (SIGTERM/SIGINT end it early:
 *		paced_stop)
 * @interval_s:	time between samples; a sample that comes late moves the next ones (none
 *		is taken twice to catch up)
 * @rounds:	round trips per sample, 1..DIST_MAX_ROUNDS
 *
 * Return: 0, or -1 for bad arguments or when the partner could not be started.
 */
int cpu_distance_json(FILE *f, const int cpu[2], double duration_s, double interval_s,
		      unsigned rounds)
{
	static struct dist d;
	const uint64_t step = (uint64_t)(interval_s * 1e9);
	uint64_t t_start, end;
	unsigned n = 0, lost = 0;
	bool fifo;
	pthread_t th;

	if (cpu[0] == cpu[1] || rounds < 1 || rounds > DIST_MAX_ROUNDS) {
		fprintf(stderr, "paced: cpu-distance: two different CPUs and 1..%u rounds\n",
			DIST_MAX_ROUNDS);
		return -1;
	}
	d.cpu = cpu[1];
	d.rounds = rounds;
	if (sem_init(&d.go, 0, 0))
		return -1;
	/* The partner first: a thread would inherit this one's CPU and policy. */
	if (dist_start(&d, &th))
		return -1;
	fifo = dist_place(cpu[0]) && atomic_load(&d.partner_fifo);
	t_start = now_ns();
	end = t_start + (uint64_t)(duration_s * 1e9);
	for (uint64_t next = t_start; !paced_stop && next <= end;) {
		struct timespec ts = {.tv_sec = (time_t)(next / 1000000000ull),
				      .tv_nsec = (long)(next % 1000000000ull)};
		uint64_t now;
		double rt;

		if (next > now_ns() + 1000)
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (paced_stop)
			break;
		rt = dist_sample(&d);
		now = now_ns();
		next += step;
		if (next < now)
			next = now + step; /* late: no catching up */
		if (rt < 0) {
			lost++;
			continue;
		}
		n++;
		fprintf(f, "{\"t_s\": %.3f, \"round_trip_ns\": %.1f}\n",
			(double)(now - t_start) / 1e9, rt);
		fflush(f);
	}
	atomic_store(&d.quit, true);
	sem_post(&d.go);
	pthread_join(th, NULL);
	fprintf(f, "{\"cpus\": [%d, %d], \"fifo\": %s, \"samples\": %u, \"lost\": %u}\n", cpu[0],
		cpu[1], fifo ? "true" : "false", n, lost);
	return 0;
}
