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
 * switch_lladdr_inspects() - whether switch_lladdr_check() has anything to look at in a frame
 * of this EtherType (ARP, IPv6, or a VLAN tag that may hide either): two compares, inline.
 */
static inline bool switch_lladdr_inspects(unsigned ethertype)
{
	return ethertype == 0x0806 || ethertype == 0x86dd || ethertype == 0x8100 ||
	       ethertype == 0x88a8 || ethertype == 0x9100;
}

/*
 * switch_lladdr_ipv6_nh() - whether an IPv6 packet with this next header may be ND, or hide it
 * behind hop-by-hop, routing or destination options: else switch_lladdr_check() passes it.
 */
static inline bool switch_lladdr_ipv6_nh(unsigned nh)
{
	return nh == 58 || nh == 0 || nh == 43 || nh == 60;
}

/*
 * switch_lladdr_check() - whether a frame (len bytes at byte off of iov) from a port-secured
 * port claims only link-layer addresses of `macs`: an ARP sender MAC, the source and target
 * link-layer address options of IPv6 neighbour discovery (router and neighbour solicitations and
 * advertisements), behind up to two VLAN tags. NULL, or why not (a static string for the log).
 * The rules are docs/security.md's ("Port security") and switch_lladdr.c's.
 */
const char *switch_lladdr_check(const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
				const struct switch_mac_set *macs);

#endif
