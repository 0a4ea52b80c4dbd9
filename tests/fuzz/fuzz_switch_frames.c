/* SPDX-License-Identifier: MIT */
/* fuzz_switch_frames.c - libFuzzer: the switch's guest-frame checks (ARP/ND MACs, ips= rules). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "backend/switch/switch_ips.h"
#include "backend/switch/switch_lladdr.h"

/*
 * Input: [n][n cut lengths, one byte each] then a frame. The frame goes to switch_lladdr_check()
 * whole and cut into n + 1 buffers at those lengths: the answer must not depend on the cuts
 * (the window along the options reads across them). Its first SWITCH_IPS_HDR bytes go to
 * switch_ips_check() with a fixed IPv4 + IPv6 list. Neither may read outside the frame
 * (ASan) or take more than bounded work (libFuzzer's timeout).
 */
#define MAX_CUTS 16

static const uint8_t own[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
static const uint8_t allowed[2][6] = {{0x02, 0, 0, 0, 0, 1}, {0x02, 0, 0, 0, 0, 2}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct switch_ip_net nets[] = {
	    {.v6 = false, .prefix = 24, .addr = {10, 0, 0, 0}},
	    {.v6 = true, .prefix = 64, .addr = {0xfe, 0x80}},
	};
	const struct switch_mac_set macs = {own, allowed, 2};
	struct iovec whole, cut[MAX_CUTS + 1];
	unsigned n, k = 0;
	const uint8_t *frame;
	size_t len, at = 0;
	const char *a, *b;
	uint8_t *copy;

	if (size < 1)
		return 0;
	n = data[0] % (MAX_CUTS + 1);
	if (size < 1 + n)
		return 0;
	frame = data + 1 + n;
	len = size - 1 - n;
	if (len < 14)
		return 0;
	copy = malloc(len); /* its own allocation: ASan sees any read past the end */
	if (!copy)
		return 0;
	memcpy(copy, frame, len);
	whole = (struct iovec){copy, len};
	for (unsigned i = 0; i < n && at < len; i++) {
		size_t c = data[1 + i] % 64;

		if (c > len - at)
			c = len - at;
		cut[k++] = (struct iovec){copy + at, c};
		at += c;
	}
	cut[k++] = (struct iovec){copy + at, len - at};
	a = switch_lladdr_check(&whole, 1, 0, len, &macs);
	b = switch_lladdr_check(cut, k, 0, len, &macs);
	if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
		abort();
	(void)switch_ips_check(nets, 2, copy, len < SWITCH_IPS_HDR ? len : SWITCH_IPS_HDR);
	free(copy);
	return 0;
}
