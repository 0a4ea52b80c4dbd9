/* SPDX-License-Identifier: MIT */
/* toeplitz.h - the Toeplitz hash of RSS and the packet fields each virtio hash type names. */
#ifndef VNETD_TOEPLITZ_H
#define VNETD_TOEPLITZ_H

#include <stddef.h>
#include <stdint.h>

#define TOEPLITZ_KEY_MAX 40   /* bytes of key (rss_max_key_size) */
#define TOEPLITZ_INPUT_MAX 36 /* bytes hashed at most: IPv6 addresses and ports */
#define TOEPLITZ_PARSE_MAX 128 /* frame bytes toeplitz_frame() looks at, at most */

/*
 * A key unrolled for toeplitz_hash_fast(): for every input byte position, the XOR of the key
 * windows each of the 256 byte values selects (36 KB; one lookup per input byte).
 */
struct toeplitz_key {
	uint32_t tab[TOEPLITZ_INPUT_MAX][256];
};

/* toeplitz_hash() - the reference bit-by-bit Toeplitz hash of in[0..len) under key. */
uint32_t toeplitz_hash(const uint8_t *key, size_t key_len, const uint8_t *in, size_t len);

/* toeplitz_key_init() - unroll key (key_len <= TOEPLITZ_KEY_MAX; missing bits are 0). */
void toeplitz_key_init(struct toeplitz_key *k, const uint8_t *key, size_t key_len);

/* toeplitz_hash_fast() - toeplitz_hash() with an unrolled key; len <= TOEPLITZ_INPUT_MAX. */
uint32_t toeplitz_hash_fast(const struct toeplitz_key *k, const uint8_t *in, size_t len);

/*
 * toeplitz_frame() - the hash of an Ethernet frame's first bytes (f[0..len), at most
 * TOEPLITZ_PARSE_MAX matter) under the enabled VIRTIO_NET_RSS_HASH_TYPE_* bits `types`, per
 * the VIRTIO 1.3 rules: TCP before UDP before IP, fragments as IP only, IPv6 extension
 * headers skipped (the _EX types are not supported). Returns the VIRTIO_NET_HASH_REPORT_*
 * value (NONE: no hash; *hash untouched) and sets *hash.
 */
unsigned toeplitz_frame(const struct toeplitz_key *k, uint32_t types, const uint8_t *f,
			size_t len, uint32_t *hash);

#endif
