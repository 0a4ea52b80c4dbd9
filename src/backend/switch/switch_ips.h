/* SPDX-License-Identifier: MIT */
/* switch_ips.h - IP anti-spoofing of a switch port: may a guest frame carry its IP addresses. */
#ifndef VNETD_SWITCH_IPS_H
#define VNETD_SWITCH_IPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One ips= entry: an IPv4 or IPv6 network (prefix bits; the rest of addr is ignored). */
struct switch_ip_net {
	bool v6;
	uint8_t prefix; /* 0..32 (IPv4, addr[0..3]) or 0..128 (IPv6) */
	uint8_t addr[16];
};

/* The bytes of a frame switch_ips_check() looks at, at most (the rest it never needs). */
#define SWITCH_IPS_HDR 192

/*
 * switch_ips_check() - whether a frame from a port whose guest may use the addresses of nets[n]
 * may leave it: NULL, or why not (for the log line). `hdr` holds the frame's first `len` bytes
 * (at most SWITCH_IPS_HDR, the whole frame if shorter). The rules are docs/security.md's
 * ("IP anti-spoofing") and switch_ips.c's.
 */
const char *switch_ips_check(const struct switch_ip_net *nets, unsigned n, const uint8_t *hdr,
			     size_t len);

#endif
