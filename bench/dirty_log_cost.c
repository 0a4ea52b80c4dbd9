/* SPDX-License-Identifier: MIT */
/* dirty_log_cost.c - instructions the dirty log adds per received/sent packet (run under callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/dirty_log.h"
#include "fake_driver.h"
#include "dev/dev.h"

/*
 * Usage: dirty_log_cost on|off rx|tx PACKETS. A device on the unit tests' fake guest memory
 * (tests/unit/fake_driver.c) receives or sends PACKETS frames of 1500 bytes in batches of 64,
 * with every guest write logged (as during a live migration) or not. bench/dirty_log_cost.py
 * runs it under callgrind and reports the difference per packet.
 */
int main(int argc, char **argv)
{
	static uint8_t bitmap[1 << 12];
	struct dirty_log log = {.bitmap = bitmap, .size = sizeof(bitmap)};
	struct test_dev *td;
	unsigned long n;
	unsigned pages = 0;
	uint64_t bufs;
	bool on, rx;

	if (argc != 4)
		return 2;
	on = !strcmp(argv[1], "on");
	rx = !strcmp(argv[2], "rx");
	n = strtoul(argv[3], NULL, 10);
	td_mem_size = 16u << 20;
	td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));
	if (on) {
		vnet_dev_set_dirty_log(td->dev, &log);
		for (unsigned i = 0; i < td->nqueues; i++) {
			struct vnet_queue *q = vnet_dev_queue(td->dev, i);

			q->vq.log_used = true;
			q->vq.log_used_gpa = td->vq[i].used_gpa;
		}
	}
	bufs = fake_mem_alloc(&td->mem, 64 * 2048, 4096);
	for (unsigned long done = 0; done < n; done += 64) {
		if (rx) {
			uint32_t id, len;

			/* Re-post the same 64 buffers: guest memory stays bounded. */
			for (unsigned i = 0; i < 64; i++) {
				struct fake_buf b = {bufs + (uint64_t)i * 2048, 2048, true};

				fake_vq_add_chain(&td->vq[0], &b, 1);
			}
			fake_vq_publish(&td->vq[0]);
			for (unsigned i = 0; i < 64; i++)
				td_receive(td, 1500, (uint8_t)i);
			while (fake_vq_get_used(&td->vq[0], &id, &len))
				;
		} else {
			td_tx(td, 1, 64, 1500); /* new buffers each time: n <= 8000 */
			td_clear_packets(td);
		}
	}
	for (size_t i = 0; i < sizeof(bitmap); i++)
		pages += (unsigned)__builtin_popcount(bitmap[i]);
	printf("%s %s %lu packets, %u pages logged\n", argv[1], argv[2], n, pages);
	td_free(td);
	return 0;
}
