/* SPDX-License-Identifier: MIT */
/* fuzz_config.c - libFuzzer: config space reads and writes at fuzz offsets and lengths. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "lib/log.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * Input: [6 mac][pairs][le16 mtu][le64 features wanted], then operations
 * [op][le32 offset][le16 len] followed, for writes, by the bytes to write.
 *   op bit0: write (else read)   bit1: detach/attach the backend first   bit2: reset first
 */
#define BUF 512
#define CANARY 0xa5

static uint32_t le(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_read(struct test_dev *td, uint32_t offset, uint32_t len)
{
	uint8_t buf[BUF + 16];
	uint32_t got;

	memset(buf, CANARY, sizeof(buf));
	got = vnet_dev_config_read(td->dev, offset, buf, len);
	if (got > len)
		abort();
	for (uint32_t i = got; i < len; i++)
		if (buf[i] != 0)
			abort(); /* the rest is zero-filled */
	for (uint32_t i = len; i < sizeof(buf); i++)
		if (buf[i] != CANARY)
			abort(); /* nothing written past len */
}

/* LLVMFuzzerTestOneInput() - one device, a sequence of config reads and writes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct test_dev *cache[VNET_MAX_QUEUE_PAIRS][2];
	struct vnet_dev_params p;
	struct test_dev *td;
	uint64_t want = 0;
	size_t off = 17;
	bool attached = true;

	if (size < 17)
		return 0;
	log_threshold = LOG_ERR;
	td_mem_size = 4096; /* no rings here */
	td_default_params(&p, (uint16_t)(1 + data[6] % VNET_MAX_QUEUE_PAIRS));
	memcpy(p.mac, data, 6);
	p.mtu = (uint16_t)le(data + 7, 2);
	for (int i = 0; i < 8; i++)
		want |= (uint64_t)data[9 + i] << (8 * i);
	/* One device per (pairs, MTU offered or not), reused: creating one per input is slow. */
	td = cache[data[6] % VNET_MAX_QUEUE_PAIRS][p.mtu != 0];
	if (!td) {
		td = cache[data[6] % VNET_MAX_QUEUE_PAIRS][p.mtu != 0] = td_create(&p, want);
	} else {
		vnet_dev_attach_backend(td->dev, &td_backend_ops, &td->be);
		td_recycle(td, want);
	}
	while (off + 7 <= size) {
		uint8_t op = data[off];
		uint32_t offset = le(data + off + 1, 4);
		uint32_t len = le(data + off + 5, 2) % (BUF + 1);

		off += 7;
		if (op & 2) {
			attached = !attached;
			vnet_dev_attach_backend(td->dev, NULL, NULL);
			if (attached)
				vnet_dev_attach_backend(td->dev, &td_backend_ops, &td->be);
		}
		if (op & 4) {
			vnet_dev_reset(td->dev);
			(void)vnet_dev_set_features(td->dev,
						    vnet_dev_offered_features(td->dev) & want);
		}
		if (op & 1) {
			uint8_t w[BUF];
			uint32_t n = len < size - off ? len : (uint32_t)(size - off);

			memcpy(w, data + off, n);
			off += n;
			if (vnet_dev_config_write(td->dev, offset, w, n) < -1)
				abort();
		} else {
			check_read(td, offset, len);
		}
	}
	check_read(td, 0, 12);
	return 0;
}
