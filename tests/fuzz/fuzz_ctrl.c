/* SPDX-License-Identifier: MIT */
/* fuzz_ctrl.c - libFuzzer: control commands, direct and via the control queue. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "lib/log.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * Input: le64 features (intersected with what the device offers), one byte of queue pairs
 * (1..4), then commands: [len][mode][len bytes of {class, cmd, payload}].
 *   mode bit0: through the control queue (else vnet_dev_ctrl_execute())
 *   bits1-4: size of the output / writable part   bit5: guest sends a TX packet first
 *   bit6: advance the clock 50 us (fires timers)    bit7: disable and re-enable queue 1
 */
#define MAX_CMDS 48

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void run_direct(struct test_dev *td, const uint8_t *in, size_t len, size_t out_len)
{
	uint8_t out[16];
	size_t written = 12345;
	uint8_t ack = vnet_dev_ctrl_execute(td->dev, in, len, out, out_len, &written);

	if (ack != VIRTIO_NET_OK && ack != VIRTIO_NET_ERR)
		abort();
	if (written > out_len)
		abort(); /* wrote past the output buffer it was given */
}

static void run_queued(struct test_dev *td, const uint8_t *in, size_t len, uint32_t out_len)
{
	uint8_t out[16];
	uint32_t used_len = 0;
	int ack = td_ctrl(td, in, len, out, out_len, &used_len);

	/* Every command completes (the Linux driver busy-waits for it) with a valid ack. */
	if (ack != VIRTIO_NET_OK && ack != VIRTIO_NET_ERR)
		abort();
	if (used_len > out_len + 1)
		abort();
}

/* LLVMFuzzerTestOneInput() - one device, up to MAX_CMDS commands. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct test_dev *devs[4]; /* one per queue-pair count, reused across inputs */
	struct vnet_dev_params p;
	struct test_dev *td;
	size_t off = 9;
	unsigned ncmds = 0;

	if (size < 9)
		return 0;
	log_threshold = LOG_ERR;
	td_mem_size = 256u << 10;
	td = devs[data[8] % 4];
	if (!td) {
		td_default_params(&p, (uint16_t)(1 + data[8] % 4));
		p.rss = true; /* RSS_CONFIG / HASH_CONFIG reachable when the input negotiates them */
		td = devs[data[8] % 4] = td_create(&p, le64(data));
	} else {
		td_recycle(td, le64(data));
	}
	td_start_queues(td, 64);
	while (off + 2 <= size && ncmds++ < MAX_CMDS) {
		size_t len = data[off];
		uint8_t mode = data[off + 1];
		const uint8_t *in = data + off + 2;
		uint32_t out_len = (mode >> 1) & 15;

		off += 2;
		if (len > size - off)
			len = size - off;
		off += len;
		if (mode & 32)
			td_tx(td, 1, 1, 64);
		if (mode & 64)
			td_advance(td, 50000);
		if (mode & 128) {
			vnet_dev_queue_enable(td->dev, 1, false);
			vnet_dev_queue_enable(td->dev, 1, true);
		}
		if ((mode & 1) && td->ctrl_q != ~0u)
			run_queued(td, in, len, out_len);
		else
			run_direct(td, in, len, out_len);
	}
	/* Config space must stay readable whatever the commands did. */
	{
		uint8_t cfg[12];

		if (vnet_dev_config_read(td->dev, 0, cfg, sizeof(cfg)) > sizeof(cfg))
			abort();
	}
	td_advance(td, 10000000000ull);
	return 0;
}
