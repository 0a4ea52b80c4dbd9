/* SPDX-License-Identifier: MIT */
/* toeplitz.c - the Toeplitz hash of RSS and the packet fields each virtio hash type names. */
#include "dev/rss/toeplitz.h"

#include <stdbool.h>
#include <string.h>

#include "lib/virtio_net_defs.h"

/* Key byte i, 0 past the key's end. */
static inline uint8_t key_byte(const uint8_t *key, size_t key_len, size_t i)
{
	return i < key_len ? key[i] : 0;
}

/**
 * toeplitz_hash() - the Toeplitz hash, bit by bit (the reference)
 * @key: the secret key
 * @key_len: its bytes; bits past its end count as 0
 * @in: the input bytes, most significant bit of in[0] first
 * @len: their count
 *
 * For every input bit i that is 1, the 32 key bits starting at key bit i are XORed into the
 * result (Microsoft "RSS hashing functions", VIRTIO 1.3 "Hash calculation").
 * Return: the hash.
 */
uint32_t toeplitz_hash(const uint8_t *key, size_t key_len, const uint8_t *in, size_t len)
{
	uint32_t r = 0;
	uint64_t win = 0; /* key bits [8i, 8i + 64) */

	for (size_t j = 0; j < 8; j++)
		win = win << 8 | key_byte(key, key_len, j);
	for (size_t i = 0; i < len; i++) {
		for (unsigned b = 0; b < 8; b++)
			if (in[i] & (0x80u >> b))
				r ^= (uint32_t)(win >> (32 - b));
		win = win << 8 | key_byte(key, key_len, i + 8);
	}
	return r;
}

/**
 * toeplitz_key_init() - unroll a key for toeplitz_hash_fast()
 * @k: filled in
 * @key: the key
 * @key_len: its bytes (at most TOEPLITZ_KEY_MAX are used; bits past the end count as 0)
 *
 * For every byte position and value: the XOR of the 32-bit key windows its set bits select,
 * built from the value without its lowest set bit (one XOR per entry).
 */
void toeplitz_key_init(struct toeplitz_key *k, const uint8_t *key, size_t key_len)
{
	if (key_len > TOEPLITZ_KEY_MAX)
		key_len = TOEPLITZ_KEY_MAX;
	for (unsigned pos = 0; pos < TOEPLITZ_INPUT_MAX; pos++) {
		uint32_t bit[8]; /* the window of each bit of the byte, MSB first */
		uint64_t win = 0; /* key bits [8 pos, 8 pos + 64) */

		for (size_t j = 0; j < 8; j++)
			win = win << 8 | key_byte(key, key_len, pos + j);
		for (unsigned b = 0; b < 8; b++)
			bit[b] = (uint32_t)(win >> (32 - b));
		k->tab[pos][0] = 0;
		for (unsigned v = 1; v < 256; v++) {
			unsigned low = (unsigned)__builtin_ctz(v); /* bit 0 is the byte's last bit */

			k->tab[pos][v] = k->tab[pos][v & (v - 1)] ^ bit[7 - low];
		}
	}
}

/* One lookup per byte; inlined with a constant len (8, 12, 32, 36) it unrolls. */
static inline uint32_t hash_tab(const struct toeplitz_key *k, const uint8_t *in, size_t len)
{
	uint32_t r = 0;

	for (size_t i = 0; i < len; i++)
		r ^= k->tab[i][in[i]];
	return r;
}

/**
 * toeplitz_hash_fast() - the Toeplitz hash by table: one lookup per input byte
 * @k: the unrolled key (toeplitz_key_init())
 * @in: the input bytes
 * @len: their count, at most TOEPLITZ_INPUT_MAX (more are ignored)
 *
 * Return: what toeplitz_hash() returns for the same key and input.
 */
uint32_t toeplitz_hash_fast(const struct toeplitz_key *k, const uint8_t *in, size_t len)
{
	return hash_tab(k, in, len > TOEPLITZ_INPUT_MAX ? TOEPLITZ_INPUT_MAX : len);
}

#define ETH_HLEN 14
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17

/* The L4 choice of a packet whose transport protocol is proto at f[l4..len): 0 TCP, 1 UDP,
 * -1 neither (or not enabled, or no room for the ports). */
static int l4_pick(uint32_t types, uint32_t tcp_type, uint32_t udp_type, unsigned proto,
		   size_t l4, size_t len)
{
	if (l4 + 4 > len)
		return -1;
	if (proto == IPPROTO_TCP_ && (types & tcp_type))
		return 0;
	if (proto == IPPROTO_UDP_ && (types & udp_type))
		return 1;
	return -1;
}

static unsigned hash_ipv4(const struct toeplitz_key *k, uint32_t types, const uint8_t *ip,
			  size_t len, uint32_t *hash)
{
	uint8_t in[12];
	size_t ihl;
	int l4 = -1;

	if (len < 20 || (ip[0] >> 4) != 4)
		return VIRTIO_NET_HASH_REPORT_NONE;
	ihl = (size_t)(ip[0] & 15) * 4;
	if (ihl < 20 || ihl > len)
		return VIRTIO_NET_HASH_REPORT_NONE;
	memcpy(in, ip + 12, 8);
	/* Not a fragment (MF clear, offset 0): the ports are there. */
	if (!(ip[6] & 0x3f) && !ip[7])
		l4 = l4_pick(types, VIRTIO_NET_RSS_HASH_TYPE_TCPv4, VIRTIO_NET_RSS_HASH_TYPE_UDPv4,
			     ip[9], ihl, len);
	if (l4 >= 0) {
		memcpy(in + 8, ip + ihl, 4);
		*hash = hash_tab(k, in, 12);
		return l4 == 0 ? VIRTIO_NET_HASH_REPORT_TCPv4 : VIRTIO_NET_HASH_REPORT_UDPv4;
	}
	if (!(types & VIRTIO_NET_RSS_HASH_TYPE_IPv4))
		return VIRTIO_NET_HASH_REPORT_NONE;
	*hash = hash_tab(k, in, 8);
	return VIRTIO_NET_HASH_REPORT_IPv4;
}

static unsigned hash_ipv6(const struct toeplitz_key *k, uint32_t types, const uint8_t *ip,
			  size_t len, uint32_t *hash)
{
	uint8_t in[36];
	unsigned proto;
	size_t off = 40;
	bool frag = false;
	int l4 = -1;

	if (len < 40 || (ip[0] >> 4) != 6)
		return VIRTIO_NET_HASH_REPORT_NONE;
	proto = ip[6];
	/* Skip extension headers (a bounded number, within the bytes we have). */
	for (unsigned n = 0; n < 8 && off + 8 <= len; n++) {
		if (proto == 0 || proto == 43 || proto == 60) { /* hop-by-hop, routing, dst opts */
			proto = ip[off];
			off += ((size_t)ip[off + 1] + 1) * 8;
		} else if (proto == 44) { /* fragment */
			frag = frag || (ip[off + 2] << 8 | (ip[off + 3] & 0xf9)) != 0;
			proto = ip[off];
			off += 8;
		} else if (proto == 51) { /* authentication header */
			proto = ip[off];
			off += ((size_t)ip[off + 1] + 2) * 4;
		} else {
			break;
		}
	}
	memcpy(in, ip + 8, 32);
	if (!frag && off <= len)
		l4 = l4_pick(types, VIRTIO_NET_RSS_HASH_TYPE_TCPv6, VIRTIO_NET_RSS_HASH_TYPE_UDPv6,
			     proto, off, len);
	if (l4 >= 0) {
		memcpy(in + 32, ip + off, 4);
		*hash = hash_tab(k, in, 36);
		return l4 == 0 ? VIRTIO_NET_HASH_REPORT_TCPv6 : VIRTIO_NET_HASH_REPORT_UDPv6;
	}
	if (!(types & VIRTIO_NET_RSS_HASH_TYPE_IPv6))
		return VIRTIO_NET_HASH_REPORT_NONE;
	*hash = hash_tab(k, in, 32);
	return VIRTIO_NET_HASH_REPORT_IPv6;
}

/**
 * toeplitz_frame() - hash an Ethernet frame as its enabled hash types say
 * @k: the unrolled key
 * @types: the enabled VIRTIO_NET_RSS_HASH_TYPE_* bits
 * @f: the frame's first bytes
 * @len: how many (at most TOEPLITZ_PARSE_MAX are looked at)
 * @hash: set to the hash when one was computed
 *
 * IPv4: TCP or UDP ports with the addresses when that type is enabled and the packet is not a
 * fragment, else the addresses with IPv4 enabled. IPv6 the same over 16-byte addresses, after
 * the extension headers. One 802.1Q / 802.1ad tag is looked through. Pure; any thread.
 * Return: the VIRTIO_NET_HASH_REPORT_* of the hash, NONE when nothing was hashed.
 */
unsigned toeplitz_frame(const struct toeplitz_key *k, uint32_t types, const uint8_t *f,
			size_t len, uint32_t *hash)
{
	size_t l3 = ETH_HLEN;
	unsigned type;

	if (len > TOEPLITZ_PARSE_MAX)
		len = TOEPLITZ_PARSE_MAX;
	if (len < ETH_HLEN)
		return VIRTIO_NET_HASH_REPORT_NONE;
	type = (unsigned)f[12] << 8 | f[13];
	if ((type == 0x8100 || type == 0x88a8) && len >= ETH_HLEN + 4) {
		type = (unsigned)f[16] << 8 | f[17];
		l3 += 4;
	}
	if (type == 0x0800)
		return hash_ipv4(k, types, f + l3, len - l3, hash);
	if (type == 0x86dd)
		return hash_ipv6(k, types, f + l3, len - l3, hash);
	return VIRTIO_NET_HASH_REPORT_NONE;
}
