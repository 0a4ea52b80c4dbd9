/* SPDX-License-Identifier: MIT */
/* pkt.h - offloads in software: the virtio-net header checked against a frame, checksums, TCP/UDP segmentation. */
#ifndef VNETD_PKT_H
#define VNETD_PKT_H

/*
 * A frame whose virtio-net header asks for an offload (NEEDS_CSUM, a GSO type) meets a receiver
 * that cannot take it (a guest that did not negotiate it, an AF_XDP socket): vnetd does in
 * software what a NIC would. These functions work on bytes in vnetd's memory and on iovecs
 * (a sender's guest buffers): nothing here knows of devices, rings or ports, so a fuzzer and
 * unit tests drive them directly.
 *
 * The one-read rule: pkt_offload_parse() decides on `head`, a copy of the frame's first bytes
 * the caller took once (the headers the offload needs: pkt_offload_head_need()); pkt_soft()
 * builds its output headers from that same copy and reads only the payload from the guest's
 * buffers, once, computing each checksum over the bytes it copied.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "lib/virtio_net_defs.h"

#define PKT_GSO_MAX_SEGS 1024 /* more segments than this: refused (PKT_BAD_SEGS) */
#define PKT_HEAD_MAX 512      /* the most header bytes an offload may need (Ethernet..L4) */
/* The longest frame a GSO header may describe: Ethernet, two VLAN tags, IPv6, payload_len 65535. */
#define PKT_GSO_FRAME_MAX (14 + 2 * 4 + 40 + 65535)

/* Why a header was refused (pkt_offload_parse()); PKT_OK: accepted. */
enum pkt_bad {
	PKT_OK = 0,
	PKT_BAD_CSUM_POS,   /* csum_start + csum_offset + 2 beyond the frame, or csum_start before
			     * the L4 header (over bytes a switch checked: MACs, tags, IP addresses) */
	PKT_BAD_GSO_TYPE,   /* a gso_type that is no type, ECN alone, ECN on UDP */
	PKT_BAD_GSO_CSUM,   /* a GSO type without NEEDS_CSUM */
	PKT_BAD_GSO_SIZE,   /* gso_size 0 with a GSO type */
	PKT_BAD_L2,	    /* not Ethernet + at most two VLAN tags + IPv4/IPv6 for a GSO type;
			     * or a frame of 4 GiB or more (of any type) */
	PKT_BAD_L3,	    /* IP header not what the type says, short, fragmented, bad lengths,
			     * a GSO frame over PKT_GSO_FRAME_MAX */
	PKT_BAD_L4,	    /* not TCP (UDP) where csum_start points, wrong csum_offset, short */
	PKT_BAD_SEGS,	    /* more than PKT_GSO_MAX_SEGS segments */
	PKT_BAD_COUNT
};

/* What pkt_offload_parse() found: the offload a frame asks for and where its headers are. */
struct pkt_offload {
	bool csum;	  /* NEEDS_CSUM: complete a checksum (every GSO type has it too) */
	uint8_t gso;	  /* VIRTIO_NET_HDR_GSO_NONE / _TCPV4 / _TCPV6 / _UDP_L4 (ECN bit apart) */
	bool ecn;	  /* VIRTIO_NET_HDR_GSO_ECN: the first segment keeps CWR, the others lose it */
	bool ipv6;	  /* GSO: the L3 header is IPv6 (else IPv4) */
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t l3_off;  /* GSO: after the Ethernet header and its VLAN tags */
	uint16_t l4_off;  /* GSO: the TCP / UDP header (== csum_start) */
	uint16_t hdr_len; /* GSO: l4_off + the L4 header: what every segment repeats */
	uint16_t gso_size; /* GSO: payload bytes per segment (the last may hold fewer) */
	uint16_t segs;	  /* segments pkt_soft() makes (1 without GSO) */
	uint32_t frame_len;
};

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* USO (VIRTIO_NET_F_HOST_USO / GUEST_USO4/6) */
#endif

/* pkt_offload_needed() - whether a checked header asks for any offload at all (cheap). */
static inline bool pkt_offload_needed(const struct virtio_net_hdr_v1 *h)
{
	return (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || h->gso_type != VIRTIO_NET_HDR_GSO_NONE;
}

size_t pkt_offload_head_need(const struct virtio_net_hdr_v1 *h, size_t frame_len);
enum pkt_bad pkt_offload_parse(const struct virtio_net_hdr_v1 *h, const uint8_t *head,
			       size_t head_len, size_t frame_len, struct pkt_offload *o);
const char *pkt_bad_name(enum pkt_bad why);

/* One frame pkt_soft() made: len bytes at data (inside the caller's buffer). */
struct pkt_seg {
	uint8_t *data;
	uint32_t len;
};

size_t pkt_soft_size(const struct pkt_offload *o);

/* Where pkt_soft() makes a caller's frames: the buffer, grown as needed, and its frames. */
struct pkt_soft_buf {
	uint8_t *buf;
	size_t cap;
	struct pkt_seg seg[PKT_GSO_MAX_SEGS];
};

struct pkt_soft_buf *pkt_soft_buf_reserve(struct pkt_soft_buf **b, size_t size);
void pkt_soft_buf_free(struct pkt_soft_buf **b);
unsigned pkt_soft(const struct pkt_offload *o, const uint8_t *head, size_t head_len,
		  const struct iovec *iov, unsigned iovcnt, size_t off, uint8_t *buf,
		  size_t buf_len, struct pkt_seg *seg, unsigned max_segs);

void pkt_hdr_for(const struct pkt_offload *o, struct virtio_net_hdr_v1 *h);
bool pkt_rx_takes(uint64_t guest_offloads, const struct pkt_offload *o);

uint32_t pkt_csum_add(uint32_t sum, const void *data, size_t len);
uint16_t pkt_csum_fold(uint32_t sum);

#endif
