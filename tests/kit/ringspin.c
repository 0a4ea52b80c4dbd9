/* SPDX-License-Identifier: MIT */
/* ringspin.c - a test guest's driver loop on one split virtqueue: keep it full (TX) or refilled (RX). */
/*
 * The frontend (Python, vhost_user_client.py) sets the ring up and writes descriptor i and avail
 * slot i = head i for every i, leaving avail.idx unpublished; the device completes chains in
 * order, so re-posting what it used is one store: avail.idx = used.idx + num. This program does
 * that, as fast as the device consumes, for a TX queue (a bulk sender, or with batch 1 and no
 * sleep the hostile flooder of issue "one guest must never starve the others") or an RX queue
 * (a receiver that never runs out of buffers). It kicks whenever the device has notifications
 * on (used.flags without NO_NOTIFY; EVENT_IDX is not negotiated by the test frontends).
 *
 * usage: ringspin MEMFD SIZE AVAIL_OFF USED_OFF NUM KICKFD BATCH IDLE_US COUNTER_OFF SECONDS
 *   MEMFD, KICKFD  inherited fds: guest memory (memfd) and the queue's kick eventfd
 *   *_OFF          byte offsets in the memfd of the avail ring, the used ring, and a u64 where
 *                  the running count of completed chains is stored (the parent reads it)
 *   BATCH          re-post once at least this many chains are free (1 = keep it always full)
 *   IDLE_US        sleep this long when there is nothing to do (0 = spin)
 *   SECONDS        stop after this long (0 = until SIGTERM/SIGINT)
 * On exit prints "completed N kicks K seconds S".
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define USED_F_NO_NOTIFY 1

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long arg(char **argv, int i)
{
	char *end;
	unsigned long long v = strtoull(argv[i], &end, 0);

	if (*end) {
		fprintf(stderr, "ringspin: bad argument %d: %s\n", i, argv[i]);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 11) {
		fprintf(stderr, "usage: ringspin MEMFD SIZE AVAIL_OFF USED_OFF NUM KICKFD BATCH "
				"IDLE_US COUNTER_OFF SECONDS\n");
		return 2;
	}
	int memfd = (int)arg(argv, 1), kickfd = (int)arg(argv, 6);
	size_t size = arg(argv, 2), avail_off = arg(argv, 3), used_off = arg(argv, 4);
	uint16_t num = (uint16_t)arg(argv, 5), batch = (uint16_t)arg(argv, 7);
	unsigned idle_us = (unsigned)arg(argv, 8);
	size_t counter_off = arg(argv, 9);
	double seconds = strtod(argv[10], NULL);
	uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	if (mem == MAP_FAILED || avail_off + 4 > size || used_off + 4 > size ||
	    counter_off + 8 > size || counter_off % 8) {
		fprintf(stderr, "ringspin: cannot map guest memory or offsets outside it\n");
		return 2;
	}
	uint16_t *avail_idx = (uint16_t *)(mem + avail_off + 2);
	uint16_t *used_flags = (uint16_t *)(mem + used_off);
	uint16_t *used_idx = (uint16_t *)(mem + used_off + 2);
	uint64_t *counter = (uint64_t *)(mem + counter_off);
	struct timespec idle = {0, (long)idle_us * 1000};
	uint16_t last_used = __atomic_load_n(used_idx, __ATOMIC_ACQUIRE);
	uint16_t avail = __atomic_load_n(avail_idx, __ATOMIC_RELAXED);
	unsigned long long total = 0, kicks = 0, spins = 0;
	double t0 = now_s(), t_end = seconds > 0 ? t0 + seconds : 0;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	prctl(PR_SET_TIMERSLACK, 1000UL);     /* short sleeps stay short */
	prctl(PR_SET_PDEATHSIG, SIGTERM);     /* never outlive the test that started us */
	if (getppid() == 1)
		return 2;
	if (batch < 1 || batch > num)
		batch = 1;
	while (!stop) {
		uint16_t u = __atomic_load_n(used_idx, __ATOMIC_ACQUIRE);
		uint16_t want = (uint16_t)(u + num);

		if (u != last_used) {
			total += (uint16_t)(u - last_used);
			last_used = u;
			__atomic_store_n(counter, total, __ATOMIC_RELAXED);
		}
		if ((uint16_t)(want - avail) >= batch) {
			avail = want;
			/* Release: the device sees the slots (written once, by the frontend) first. */
			__atomic_store_n(avail_idx, avail, __ATOMIC_RELEASE);
			__atomic_thread_fence(__ATOMIC_SEQ_CST); /* avail.idx before used.flags */
			if (!(__atomic_load_n(used_flags, __ATOMIC_RELAXED) & USED_F_NO_NOTIFY)) {
				eventfd_write(kickfd, 1);
				kicks++;
			}
		} else if (idle_us) {
			nanosleep(&idle, NULL);
			spins = 1023; /* look at the clock after every sleep */
		}
		if (t_end && (++spins & 1023) == 0 && now_s() >= t_end)
			break;
	}
	printf("completed %llu kicks %llu seconds %.3f\n", total, kicks, now_s() - t0);
	return 0;
}
