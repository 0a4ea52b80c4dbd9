/* SPDX-License-Identifier: MIT */
/* switch_lladdr.h - port security inside ARP and ND: the link-layer addresses a frame claims. */
#ifndef VNETD_SWITCH_LLADDR_H
#define VNETD_SWITCH_LLADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* The MACs a port-secured port may send from: its own, and its allowed-macs=. */
struct switch_mac_set {
	const uint8_t *own;
	const uint8_t (*allowed)[6];
	unsigned n_allowed;
};

/*
 * switch_lladdr_inspects() - whether switch_lladdr_judge() has anything to look at in a frame
 * of this EtherType (ARP, IPv6, or a VLAN tag that may hide either): two compares, inline.
 */
static inline bool switch_lladdr_inspects(unsigned ethertype)
{
	return ethertype == 0x0806 || ethertype == 0x86dd || ethertype == 0x8100 ||
	       ethertype == 0x88a8 || ethertype == 0x9100;
}

/*
 * switch_lladdr_ipv6_nh() - whether an IPv6 packet with this next header may be ND, or hide it
 * behind hop-by-hop, routing or destination options: else switch_lladdr_judge() passes it.
 */
static inline bool switch_lladdr_ipv6_nh(unsigned nh)
{
	return nh == 58 || nh == 0 || nh == 43 || nh == 60;
}

/* What switch_lladdr_judge() says of a frame. */
enum switch_lladdr_verdict {
	SWITCH_LLADDR_PASS, /* it claims only the port's MACs, or carries no ARP / ND */
	SWITCH_LLADDR_DROP, /* another MAC, or a frame the rules cannot read: *why says which */
	SWITCH_LLADDR_MORE, /* the copy is too short to tell: call again with *need bytes */
};

/*
 * switch_lladdr_judge() - whether a frame from a port-secured port claims only link-layer
 * addresses of `macs`: an ARP sender MAC, the source and target link-layer address options of
 * IPv6 neighbour discovery (router and neighbour solicitations and advertisements), behind up
 * to two VLAN tags. It reads only frame[0 .. have): the caller's copy of the frame's first
 * `have` of `len` bytes, in its own memory (a guest may rewrite its buffer meanwhile: what the
 * rules read is what the switch forwards). Too short a copy: SWITCH_LLADDR_MORE with *need
 * (have < *need <= len); the caller copies more of the frame behind what it has and asks again.
 * A frame the rules cannot read (a truncated ARP or ND message, more than two tags, an option
 * running past its message) is dropped, not passed. The rules are docs/security.md's ("Port
 * security") and switch_lladdr.c's.
 */
enum switch_lladdr_verdict switch_lladdr_judge(const uint8_t *frame, size_t have, size_t len,
					       const struct switch_mac_set *macs, const char **why,
					       size_t *need);

/*
 * switch_lladdr_check() - switch_lladdr_judge() of a frame len bytes at byte off of iov, read
 * into a copy as the switch reads it (its Ethernet header first, then as much as the rules ask
 * for): NULL when it passes, else why not (a static string; "out of memory" if the copy could
 * not be made). For tests and the fuzzer.
 */
const char *switch_lladdr_check(const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
				const struct switch_mac_set *macs);

#endif
