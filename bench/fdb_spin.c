/* SPDX-License-Identifier: MIT */
/* fdb_spin.c - bench/fdb_flood.py's hostile guest: a TX ring kept full of frames from random MACs. */
/*
 * Like tests/kit/ringspin.c (TX mode), but every chain has its own buffer and each buffer gets
 * a fresh random source MAC (locally administered unicast) before its chain is posted again,
 * so every frame vnetd takes teaches its switch a MAC it has not seen. The frontend (Python)
 * writes descriptor i -> buffer i (buf_off + i * stride: a 12-byte virtio-net header, then the
 * frame) and avail slot i = head i, leaving avail.idx unpublished; the device completes chains
 * in order, so re-posting is avail.idx = used.idx + num.
 *
 * usage: fdb_spin MEMFD SIZE AVAIL_OFF USED_OFF NUM KICKFD COUNTER_OFF SECONDS BUF_OFF STRIDE
 *                 RATE IDLE_US RANDOM
 *   RATE     frames a second at most (0: as fast as vnetd takes them)
 *   IDLE_US  sleep this long when there is nothing to post
 *   RANDOM   1: a new source MAC per frame; 0: the frames as the frontend wrote them
 * On exit prints "completed N kicks K seconds S".
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define USED_F_NO_NOTIFY 1
#define NET_HDR 12

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
		fprintf(stderr, "fdb_spin: bad argument %d: %s\n", i, argv[i]);
		exit(2);
	}
	return v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	if (argc != 14) {
		fprintf(stderr, "usage: fdb_spin MEMFD SIZE AVAIL_OFF USED_OFF NUM KICKFD COUNTER_OFF "
				"SECONDS BUF_OFF STRIDE RATE IDLE_US RANDOM\n");
		return 2;
	}
	int memfd = (int)arg(argv, 1), kickfd = (int)arg(argv, 6);
	size_t size = arg(argv, 2), avail_off = arg(argv, 3), used_off = arg(argv, 4);
	uint16_t num = (uint16_t)arg(argv, 5);
	size_t counter_off = arg(argv, 7);
	double seconds = strtod(argv[8], NULL);
	size_t buf_off = arg(argv, 9), stride = arg(argv, 10);
	double rate = (double)arg(argv, 11);
	struct timespec idle = {0, (long)arg(argv, 12) * 1000};
	int random = arg(argv, 13) != 0;
	uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	if (mem == MAP_FAILED || !num || avail_off + 4 > size || used_off + 4 > size ||
	    counter_off + 8 > size || counter_off % 8 || buf_off + (size_t)num * stride > size ||
	    stride < NET_HDR + 14) {
		fprintf(stderr, "fdb_spin: cannot map guest memory or offsets outside it\n");
		return 2;
	}
	uint16_t *avail_idx = (uint16_t *)(mem + avail_off + 2);
	uint16_t *used_flags = (uint16_t *)(mem + used_off);
	uint16_t *used_idx = (uint16_t *)(mem + used_off + 2);
	uint64_t *counter = (uint64_t *)(mem + counter_off);
	uint16_t last_used = __atomic_load_n(used_idx, __ATOMIC_ACQUIRE);
	uint16_t avail = __atomic_load_n(avail_idx, __ATOMIC_RELAXED);
	unsigned long long total = 0, kicks = 0, posted = 0;
	double t0 = now_s(), t_end = seconds > 0 ? t0 + seconds : 0;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	prctl(PR_SET_TIMERSLACK, 1000UL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		return 2;
	rng ^= (uint64_t)getpid() << 32 ^ (uint64_t)(t0 * 1e9);
	while (!stop) {
		uint16_t u = __atomic_load_n(used_idx, __ATOMIC_ACQUIRE);
		uint16_t want = (uint16_t)(u + num), n = (uint16_t)(want - avail);
		double t = now_s();

		if (u != last_used) {
			total += (uint16_t)(u - last_used);
			last_used = u;
			__atomic_store_n(counter, total, __ATOMIC_RELAXED);
		}
		if (rate > 0) {
			double allowed = rate * (t - t0) - (double)posted;

			if (allowed < n)
				n = allowed < 1 ? 0 : (uint16_t)allowed;
		}
		if (n) {
			for (uint16_t k = 0; random && k < n; k++) {
				uint8_t *src = mem + buf_off + (size_t)((uint16_t)(avail + k) % num) *
								   stride + NET_HDR + 6;
				uint64_t r = next_rand();

				memcpy(src, &r, 6);
				src[0] = (uint8_t)((src[0] & 0xfc) | 0x02); /* local, unicast */
			}
			avail = (uint16_t)(avail + n);
			posted += n;
			__atomic_store_n(avail_idx, avail, __ATOMIC_RELEASE);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (!(__atomic_load_n(used_flags, __ATOMIC_RELAXED) & USED_F_NO_NOTIFY)) {
				eventfd_write(kickfd, 1);
				kicks++;
			}
		} else if (idle.tv_nsec) {
			nanosleep(&idle, NULL);
		}
		if (t_end && t >= t_end)
			break;
	}
	printf("completed %llu kicks %llu seconds %.3f\n", total, kicks, now_s() - t0);
	return 0;
}
