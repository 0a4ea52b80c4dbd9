/* SPDX-License-Identifier: MIT */
/* frame.c - the frame template: addresses, IPv4 header with its checksum, UDP header. */
#include "frame.h"

#include <arpa/inet.h>

/**
 * frame_template() - an Ethernet/IPv4/UDP frame of size bytes (no FCS) from src to dst.
 * @f:		its first byte (size bytes, zeroed by the caller)
 * @size:	FRAME_MIN or more
 * @dst, @src:	MAC addresses
 *
 * 10.0.0.1:5001 -> 10.0.0.2:5002, UDP checksum 0 (none): every frame of a port is the same
 * flow, as the DPDK sources of bench/datapath.py send.
 */
void frame_template(uint8_t *f, uint32_t size, const uint8_t dst[6], const uint8_t src[6])
{
	uint8_t *ip = f + 14, *udp = f + 34;
	uint16_t iplen = htons((uint16_t)(size - 14)), udplen = htons((uint16_t)(size - 34));
	uint32_t sum = 0;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	ip[0] = 0x45;
	memcpy(ip + 2, &iplen, 2);
	ip[8] = 64;			/* TTL */
	ip[9] = 17;			/* UDP */
	memcpy(ip + 12, (uint8_t[]){10, 0, 0, 1}, 4);
	memcpy(ip + 16, (uint8_t[]){10, 0, 0, 2}, 4);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
	udp[0] = 5001 >> 8;
	udp[1] = 5001 & 0xff;
	udp[2] = 5002 >> 8;
	udp[3] = 5002 & 0xff;
	memcpy(udp + 4, &udplen, 2);
}
