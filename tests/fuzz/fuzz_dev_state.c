/* SPDX-License-Identifier: MIT */
/* fuzz_dev_state.c - libFuzzer: the device state stream a migration destination loads (hostile). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "lib/log.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * Input: one byte (bits 0-1: queue pairs 1..4; bit 2: rss=on with RSS and HASH_REPORT
 * negotiated), then the stream. Whatever is accepted must save back byte for byte (the format
 * has one encoding per state; a version 1 stream comes back as version 2 with RSS off), and
 * load again; a refused stream changes nothing.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct test_dev *devs[8];
	static uint8_t before[VNET_STATE_MAX], after[VNET_STATE_MAX];
	struct test_dev *td;
	const char *why;
	size_t nb, na;
	unsigned pairs, slot;
	bool rss;

	if (size < 1)
		return 0;
	log_threshold = LOG_ERR;
	pairs = 1u + data[0] % 4u;
	rss = data[0] & 4;
	slot = (pairs - 1) + (rss ? 4 : 0);
	if (!devs[slot]) {
		struct vnet_dev_params p;

		td_mem_size = 64u << 10;
		td_default_params(&p, (uint16_t)pairs);
		p.rss = rss;
		devs[slot] = td_create(&p, TD_BASE_FEATURES |
					       (rss ? BIT_ULL(VIRTIO_NET_F_MQ) |
							      BIT_ULL(VIRTIO_NET_F_RSS) |
							      BIT_ULL(VIRTIO_NET_F_HASH_REPORT)
						    : 0));
		if (!devs[slot])
			abort();
	}
	td = devs[slot];
	nb = vnet_dev_state_save(td->dev, before, sizeof(before));
	if (vnet_dev_state_load(td->dev, data + 1, size - 1, &why) < 0) {
		na = vnet_dev_state_save(td->dev, after, sizeof(after));
		if (na != nb || memcmp(before, after, nb))
			abort(); /* a refused stream changed the device */
		return 0;
	}
	na = vnet_dev_state_save(td->dev, after, sizeof(after));
	if (data[5] == 1 && data[6] == 0) {
		/* Version 1 saves back as version 2 with an empty RSS section (12 zero bytes). */
		static const uint8_t none[12];

		if (na != size - 1 + 12 || after[4] != 2 || memcmp(after, data + 1, 4) ||
		    memcmp(after + 6, data + 7, size - 7) || memcmp(after + na - 12, none, 12))
			abort();
	} else if (na != size - 1 || memcmp(after, data + 1, na)) {
		abort(); /* accepted, but not what it says */
	}
	if (vnet_dev_state_load(td->dev, after, na, &why) < 0)
		abort(); /* our own output refused */
	return 0;
}
