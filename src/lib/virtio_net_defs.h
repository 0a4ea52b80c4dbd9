/* SPDX-License-Identifier: MIT */
/* virtio_net_defs.h - virtio-net constants and wire structures from the VIRTIO 1.3 spec. */
#ifndef VNETD_VIRTIO_NET_DEFS_H
#define VNETD_VIRTIO_NET_DEFS_H

#include <stdint.h>

/* Feature bits (device-type specific). */
#define VIRTIO_NET_F_CSUM 0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_CTRL_GUEST_OFFLOADS 2
#define VIRTIO_NET_F_MTU 3
#define VIRTIO_NET_F_MAC 5
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_GUEST_TSO6 8
#define VIRTIO_NET_F_GUEST_ECN 9
#define VIRTIO_NET_F_GUEST_UFO 10
#define VIRTIO_NET_F_HOST_TSO4 11
#define VIRTIO_NET_F_HOST_TSO6 12
#define VIRTIO_NET_F_HOST_ECN 13
#define VIRTIO_NET_F_HOST_UFO 14
#define VIRTIO_NET_F_MRG_RXBUF 15
#define VIRTIO_NET_F_STATUS 16
#define VIRTIO_NET_F_CTRL_VQ 17
#define VIRTIO_NET_F_CTRL_RX 18
#define VIRTIO_NET_F_CTRL_VLAN 19
#define VIRTIO_NET_F_GUEST_ANNOUNCE 21
#define VIRTIO_NET_F_MQ 22
#define VIRTIO_NET_F_CTRL_MAC_ADDR 23
#define VIRTIO_NET_F_VQ_NOTF_COAL 52
#define VIRTIO_NET_F_NOTF_COAL 53
#define VIRTIO_NET_F_GUEST_USO4 54 /* UDP segmentation offload, device to driver, IPv4 */
#define VIRTIO_NET_F_GUEST_USO6 55 /* the same, IPv6 */
#define VIRTIO_NET_F_HOST_USO 56   /* UDP segmentation offload, driver to device */
#define VIRTIO_NET_F_HASH_REPORT 57
#define VIRTIO_NET_F_RSS 60

/* Transport/ring feature bits. */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX 29
#define VHOST_USER_F_PROTOCOL_FEATURES 30
#define VIRTIO_F_VERSION_1 32
#define VIRTIO_F_RING_PACKED 34
#define VIRTIO_F_IN_ORDER 35

#define BIT_ULL(n) (1ull << (n))

/* Config space status bits. */
#define VIRTIO_NET_S_LINK_UP 1
#define VIRTIO_NET_S_ANNOUNCE 2

/* Device config space (only the fields we implement). */
struct virtio_net_config {
	uint8_t mac[6];
	uint16_t status;
	uint16_t max_virtqueue_pairs;
	uint16_t mtu;
	/* The rest is valid with RSS or HASH_REPORT (config length 24, as QEMU's). */
	uint32_t speed;
	uint8_t duplex;
	uint8_t rss_max_key_size;
	uint16_t rss_max_indirection_table_length;
	uint32_t supported_hash_types;
} __attribute__((packed));

#define VIRTIO_NET_CONFIG_BASE_LEN 12 /* mac, status, max_virtqueue_pairs, mtu */

/* Per-packet header with VERSION_1 (12 bytes); num_buffers used with MRG_RXBUF. */
struct virtio_net_hdr_v1 {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
} __attribute__((packed));

/* With HASH_REPORT (20 bytes, both directions): the hash and its type follow. */
struct virtio_net_hdr_v1_hash {
	struct virtio_net_hdr_v1 hdr;
	uint32_t hash_value;
	uint16_t hash_report;
	uint16_t padding_reserved;
} __attribute__((packed));

/* Hash types (supported_hash_types, hash_types of RSS_CONFIG / HASH_CONFIG). */
#define VIRTIO_NET_RSS_HASH_TYPE_IPv4 (1u << 0)
#define VIRTIO_NET_RSS_HASH_TYPE_TCPv4 (1u << 1)
#define VIRTIO_NET_RSS_HASH_TYPE_UDPv4 (1u << 2)
#define VIRTIO_NET_RSS_HASH_TYPE_IPv6 (1u << 3)
#define VIRTIO_NET_RSS_HASH_TYPE_TCPv6 (1u << 4)
#define VIRTIO_NET_RSS_HASH_TYPE_UDPv6 (1u << 5)
#define VIRTIO_NET_RSS_HASH_TYPE_IP_EX (1u << 6)
#define VIRTIO_NET_RSS_HASH_TYPE_TCP_EX (1u << 7)
#define VIRTIO_NET_RSS_HASH_TYPE_UDP_EX (1u << 8)

/* hash_report values (type = 1 << (report - 1)). */
#define VIRTIO_NET_HASH_REPORT_NONE 0
#define VIRTIO_NET_HASH_REPORT_IPv4 1
#define VIRTIO_NET_HASH_REPORT_TCPv4 2
#define VIRTIO_NET_HASH_REPORT_UDPv4 3
#define VIRTIO_NET_HASH_REPORT_IPv6 4
#define VIRTIO_NET_HASH_REPORT_TCPv6 5
#define VIRTIO_NET_HASH_REPORT_UDPv6 6

#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_F_DATA_VALID 2
#define VIRTIO_NET_HDR_GSO_NONE 0
#define VIRTIO_NET_HDR_GSO_TCPV4 1
#define VIRTIO_NET_HDR_GSO_UDP 3
#define VIRTIO_NET_HDR_GSO_TCPV6 4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* USO */
#define VIRTIO_NET_HDR_GSO_ECN 0x80

/* Control queue. */
#define VIRTIO_NET_OK 0
#define VIRTIO_NET_ERR 1

#define VIRTIO_NET_CTRL_RX 0
#define VIRTIO_NET_CTRL_RX_PROMISC 0
#define VIRTIO_NET_CTRL_RX_ALLMULTI 1
#define VIRTIO_NET_CTRL_RX_ALLUNI 2
#define VIRTIO_NET_CTRL_RX_NOMULTI 3
#define VIRTIO_NET_CTRL_RX_NOUNI 4
#define VIRTIO_NET_CTRL_RX_NOBCAST 5

#define VIRTIO_NET_CTRL_MAC 1
#define VIRTIO_NET_CTRL_MAC_TABLE_SET 0
#define VIRTIO_NET_CTRL_MAC_ADDR_SET 1

#define VIRTIO_NET_CTRL_VLAN 2

#define VIRTIO_NET_CTRL_ANNOUNCE 3
#define VIRTIO_NET_CTRL_ANNOUNCE_ACK 0

#define VIRTIO_NET_CTRL_MQ 4
#define VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET 0
#define VIRTIO_NET_CTRL_MQ_RSS_CONFIG 1
#define VIRTIO_NET_CTRL_MQ_HASH_CONFIG 2
#define VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MIN 1
#define VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MAX 0x8000

#define VIRTIO_NET_CTRL_GUEST_OFFLOADS 5
#define VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET 0

#define VIRTIO_NET_CTRL_NOTF_COAL 6
#define VIRTIO_NET_CTRL_NOTF_COAL_TX_SET 0
#define VIRTIO_NET_CTRL_NOTF_COAL_RX_SET 1
#define VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET 2
#define VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET 3

/* struct virtio_net_ctrl_coal: packets first. */
struct virtio_net_ctrl_coal {
	uint32_t max_packets;
	uint32_t max_usecs;
} __attribute__((packed));

/* struct virtio_net_ctrl_coal_vq (12 bytes). */
struct virtio_net_ctrl_coal_vq {
	uint16_t vq_index;
	uint16_t reserved;
	struct virtio_net_ctrl_coal coal;
} __attribute__((packed));

#endif
