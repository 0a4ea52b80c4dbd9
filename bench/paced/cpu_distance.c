/* SPDX-License-Identifier: MIT */
/* cpu_distance.c - how far apart two CPUs are now: a cache line's round trip between them, sampled. */
/*
 * On a VM the hypervisor places its vCPUs on host cores as it likes and moves them: two vCPUs
 * on cores that share a cache hand a cache line over in ~25 ns, on cores that do not in ~170
 * (measured on the 2-vCPU AMD EPYC VMs: round trips of ~52 and ~330 ns, switching every few
 * seconds, idle or loaded). Every virtio ring and every frame crosses between the backend's CPU
 * and the driver's, so a benchmark's rates follow this placement (docs/benchmarks.md). This
 * samples it beside a measurement: two threads, one on each CPU, pass a line back and forth
 * `rounds` times per sample; SCHED_FIFO (when allowed) so a sample runs at once on busy CPUs:
 * 2000 rounds take ~0.1-0.7 ms of each CPU, 200 (beside a latency measurement) ~10-70 µs.
 */
#include "cpu_distance.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "loops.h"
#include "probe.h"

#define SPIN_LIMIT_NS 20000000ull /* a partner that does not answer in 20 ms: no sample */

struct dist {
	_Alignas(64) _Atomic uint64_t line;
	_Alignas(64) _Atomic bool quit;
	_Atomic bool ready;
	sem_t go;
	unsigned rounds;
	int cpu;
	bool fifo;
};

#define FIFO_PRIO 50

/* Spin until *line == want; false past deadline (the clock read once per 1024 spins, so it
 * adds nothing measurable to a round trip). */
static bool dist_await(_Atomic uint64_t *line, uint64_t want, uint64_t deadline)
{
	for (unsigned spins = 0; atomic_load_explicit(line, memory_order_acquire) != want;)
		if ((++spins & 1023u) == 0 && now_ns() > deadline)
			return false;
	return true;
}

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

/* The far side: per sample, answer each odd value with the next even one. */
static void *dist_partner(void *arg)
{
	struct dist *d = arg;

	dist_place(d->cpu); /* placed at creation already where allowed (dist_start()) */
	atomic_store(&d->ready, true);
	for (;;) {
		uint64_t deadline;

		sem_wait(&d->go);
		if (atomic_load(&d->quit))
			return NULL;
		atomic_store_explicit(&d->line, 1, memory_order_release); /* here */
		deadline = now_ns() + SPIN_LIMIT_NS;
		for (uint64_t i = 1; i <= d->rounds; i++) {
			if (!dist_await(&d->line, 2 * i + 1, deadline))
				break;
			atomic_store_explicit(&d->line, 2 * i + 2, memory_order_release);
		}
	}
}

/* One sample: ns per round trip, or -1 when the partner did not keep up in time. */
static double dist_sample(struct dist *d)
{
	uint64_t t0, deadline;

	atomic_store(&d->line, 0);
	sem_post(&d->go);
	deadline = now_ns() + SPIN_LIMIT_NS;
	if (!dist_await(&d->line, 1, deadline))
		return -1;
	t0 = now_ns();
	for (uint64_t i = 1; i <= d->rounds; i++) {
		atomic_store_explicit(&d->line, 2 * i + 1, memory_order_release);
		if (!dist_await(&d->line, 2 * i + 2, deadline))
			return -1;
	}
	return (double)(now_ns() - t0) / d->rounds;
}

/*
 * Start the partner on its CPU, SCHED_FIFO from its first instruction where allowed (else as
 * this thread is: on a busy CPU it may wait its turn), and wait until it runs (at most 2 s).
 */
static int dist_start(struct dist *d, pthread_t *th)
{
	struct sched_param p = {.sched_priority = FIFO_PRIO};
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
	rc = pthread_create(th, &a, dist_partner, d);
	if (rc == EPERM) /* no SCHED_FIFO here */
		rc = pthread_create(th, NULL, dist_partner, d);
	pthread_attr_destroy(&a);
	if (rc)
		return -1;
	deadline = now_ns() + 2000000000ull;
	while (!atomic_load(&d->ready) && now_ns() < deadline) {
		struct timespec ms = {.tv_nsec = 1000000};

		nanosleep(&ms, NULL);
	}
	return 0;
}

/**
 * cpu_distance_json() - sample the cache-line round trip between two CPUs for a while.
 * @f:		where: one JSON line per sample ({"t_s", "round_trip_ns"}), flushed, then one
 *		{"cpus", "fifo", "samples", "lost"} line
 * @cpu:	the two CPUs
 * @duration_s:	how long to go on (SIGTERM/SIGINT end it early: paced_stop)
 * @interval_s:	time between samples
 * @rounds:	round trips per sample (1..1000000)
 *
 * Return: 0, or -1 when the threads could not be placed or started.
 */
int cpu_distance_json(FILE *f, const int cpu[2], double duration_s, double interval_s,
		      unsigned rounds)
{
	static struct dist d;
	const uint64_t t_start = now_ns(), step = (uint64_t)(interval_s * 1e9);
	const uint64_t end = t_start + (uint64_t)(duration_s * 1e9);
	unsigned n = 0, lost = 0;
	pthread_t th;

	d.cpu = cpu[1];
	d.rounds = rounds;
	if (sem_init(&d.go, 0, 0))
		return -1;
	/* The partner first: a thread would inherit this one's CPU and policy. */
	if (dist_start(&d, &th))
		return -1;
	d.fifo = dist_place(cpu[0]);
	for (uint64_t next = t_start; !paced_stop && next <= end; next += step) {
		struct timespec ts = {.tv_sec = (time_t)(next / 1000000000ull),
				      .tv_nsec = (long)(next % 1000000000ull)};
		double rt;

		if (next > now_ns() + 1000)
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (paced_stop)
			break;
		rt = dist_sample(&d);
		if (rt < 0) {
			lost++;
			continue;
		}
		n++;
		fprintf(f, "{\"t_s\": %.3f, \"round_trip_ns\": %.1f}\n",
			(double)(now_ns() - t_start) / 1e9, rt);
		fflush(f);
	}
	atomic_store(&d.quit, true);
	sem_post(&d.go);
	pthread_join(th, NULL);
	fprintf(f, "{\"cpus\": [%d, %d], \"fifo\": %s, \"samples\": %u, \"lost\": %u}\n", cpu[0],
		cpu[1], d.fifo ? "true" : "false", n, lost);
	return 0;
}
