/* SPDX-License-Identifier: MIT */
/* fuzz_rss.c - libFuzzer: the RSS_CONFIG / HASH_CONFIG parser, then the frame hash it sets up. */
#include <stdint.h>
#include <string.h>

#include "dev/rss/rss_cmd.h"
#include "dev/rss/toeplitz.h"
#include "dev/rss/net_rss_internal.h"
#include "dev/rss/rss_cmd_internal.h"

static struct toeplitz_key key;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Byte 0: bit 0 HASH_CONFIG, bits 1-4 the device's pairs - 1; the rest is the payload. The
 * payload also goes through toeplitz_frame() as a frame, under the key and types it set.
 * Accepted settings must pass rss_config_check() (the check of saved ones), steering as
 * net_rss_set() would make them.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rss_limits lim = {1, RSS_TABLE_MAX, RSS_KEY_MAX, RSS_HASH_TYPES_SUPPORTED};
	struct rss_config c, before;
	const char *why = NULL;
	uint32_t hash = 0;
	unsigned report;

	if (size < 1)
		return 0;
	lim.max_pairs = (uint16_t)(((data[0] >> 1) & 15) + 1);
	memset(&c, 0x5a, sizeof(c));
	before = c;
	if (rss_cmd_parse(data + 1, size - 1, data[0] & 1, &lim, &c, &why) < 0) {
		if (!why || memcmp(&c, &before, sizeof(c)))
			__builtin_trap(); /* a reason, and nothing written */
		c.hash_types = RSS_HASH_TYPES_SUPPORTED;
		c.key_len = 0;
	} else {
		if (c.table_len == 0 || (c.table_len & (c.table_len - 1)) ||
		    c.table_len > RSS_TABLE_MAX || c.key_len > RSS_KEY_MAX ||
		    (c.hash_types & ~RSS_HASH_TYPES_SUPPORTED) || c.unclassified >= lim.max_pairs)
			__builtin_trap();
		for (unsigned i = 0; i < c.table_len; i++)
			if (c.table[i] >= lim.max_pairs)
				__builtin_trap();
		/* What a command may set, a migration stream or state file may carry. */
		if (rss_config_check(&c, !(data[0] & 1) && c.hash_types, &lim, &why) < 0)
			__builtin_trap();
	}
	toeplitz_key_init(&key, c.key, c.key_len);
	report = toeplitz_frame(&key, c.hash_types, data + 1, size - 1, &hash);
	if (report > 6 || (report && !(c.hash_types & (1u << (report - 1)))))
		__builtin_trap(); /* only a report of an enabled type */
	if (report && c.key_len == 0 && hash != 0)
		__builtin_trap(); /* no key: every hash is 0 */
	return 0;
}
