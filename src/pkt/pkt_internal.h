/* SPDX-License-Identifier: MIT */
/* pkt_internal.h - big-endian fields at any alignment and the protocol numbers pkt_parse.c and pkt_gso.c share. */
#ifndef VNETD_PKT_INTERNAL_H
#define VNETD_PKT_INTERNAL_H

#include <stdint.h>

#define PKT_ETH_HLEN 14
#define PKT_VLAN_HLEN 4
#define PKT_ETH_P_IPV4 0x0800
#define PKT_ETH_P_IPV6 0x86dd
#define PKT_ETH_P_8021Q 0x8100
#define PKT_ETH_P_8021AD 0x88a8
#define PKT_IPPROTO_TCP 6
#define PKT_IPPROTO_UDP 17
#define PKT_IPV4_HLEN 20  /* without options */
#define PKT_IPV6_HLEN 40
#define PKT_TCP_HLEN 20	  /* without options */
#define PKT_TCP_HLEN_MAX 60
#define PKT_UDP_HLEN 8
#define PKT_TCP_CSUM_OFF 16
#define PKT_UDP_CSUM_OFF 6

/* TCP flags (byte 13 of the header). */
#define PKT_TCP_FIN 0x01
#define PKT_TCP_PSH 0x08
#define PKT_TCP_CWR 0x80

/* pkt_get16(), pkt_get32() - a big-endian (network order) field at p, any alignment. */
static inline uint16_t pkt_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t pkt_get32(const uint8_t *p)
{
	return (uint32_t)pkt_get16(p) << 16 | pkt_get16(p + 2);
}

/* pkt_put16(), pkt_put32() - write v big-endian at p, any alignment. */
static inline void pkt_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void pkt_put32(uint8_t *p, uint32_t v)
{
	pkt_put16(p, (uint16_t)(v >> 16));
	pkt_put16(p + 2, (uint16_t)v);
}

#endif
