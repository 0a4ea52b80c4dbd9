/* SPDX-License-Identifier: MIT */
/* fuzz_dev_state.c - libFuzzer: the device state stream a migration destination loads (hostile). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "log.h"
#include "vnet_dev.h"

/*
 * Input: one byte of queue pairs (1..4), then the stream. Whatever is accepted must save back
 * byte for byte (the format has one encoding per state), and load again; a refused stream
 * changes nothing.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct test_dev *devs[4];
	static uint8_t before[VNET_STATE_MAX], after[VNET_STATE_MAX];
	struct test_dev *td;
	const char *why;
	size_t nb, na;
	unsigned pairs;

	if (size < 1)
		return 0;
	log_threshold = LOG_ERR;
	pairs = 1u + data[0] % 4u;
	if (!devs[pairs - 1]) {
		struct vnet_dev_params p;

		td_mem_size = 64u << 10;
		td_default_params(&p, (uint16_t)pairs);
		devs[pairs - 1] = td_create(&p, TD_BASE_FEATURES);
		if (!devs[pairs - 1])
			abort();
	}
	td = devs[pairs - 1];
	nb = vnet_dev_state_save(td->dev, before, sizeof(before));
	if (vnet_dev_state_load(td->dev, data + 1, size - 1, &why) < 0) {
		na = vnet_dev_state_save(td->dev, after, sizeof(after));
		if (na != nb || memcmp(before, after, nb))
			abort(); /* a refused stream changed the device */
		return 0;
	}
	na = vnet_dev_state_save(td->dev, after, sizeof(after));
	if (na != size - 1 || memcmp(after, data + 1, na))
		abort(); /* accepted, but not what it says */
	if (vnet_dev_state_load(td->dev, after, na, &why) < 0)
		abort(); /* our own output refused */
	return 0;
}
