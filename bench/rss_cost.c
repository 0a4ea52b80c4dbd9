/* SPDX-License-Identifier: MIT */
/* rss_cost.c - instructions RSS and hash reporting add per received packet (run under callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fake_driver.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)

static const uint8_t key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/*
 * Usage: rss_cost off|rss|hash PACKETS. A device with 2 queue pairs on the unit tests' fake
 * guest memory (tests/unit/fake_driver.c) receives PACKETS TCP/IPv4 frames of 64 bytes (64
 * flows) in batches of 64: off - both pairs active, vnetd's own flow spreading (VQ_PAIRS_SET 2);
 * rss - RSS_CONFIG with every hash type, a 128-entry table over both pairs; hash - the same with
 * HASH_REPORT (20-byte headers carrying the hash). bench/rss_cost.py runs it under callgrind.
 */
int main(int argc, char **argv)
{
	struct vnet_dev_params prm;
	struct test_dev *td;
	uint8_t cmd[2 + 8 + 256 + 3 + 40], f[64];
	uint64_t bufs;
	unsigned long n;
	size_t o;
	bool rss, hash;

	if (argc != 3)
		return 2;
	rss = strcmp(argv[1], "off") != 0;
	hash = !strcmp(argv[1], "hash");
	n = strtoul(argv[2], NULL, 10);
	td_mem_size = 16u << 20;
	td_default_params(&prm, 2);
	prm.rss = true;
	td = td_create(&prm, TD_BASE_FEATURES | F(MQ) | F(MRG_RXBUF) | (rss ? F(RSS) : 0) |
				 (hash ? F(HASH_REPORT) : 0));
	td_start_queues(td, 256);
	cmd[0] = VIRTIO_NET_CTRL_MQ;
	if (rss) {
		cmd[1] = VIRTIO_NET_CTRL_MQ_RSS_CONFIG;
		put_le32(cmd + 2, 0x3f);
		put_le16(cmd + 6, 127);
		put_le16(cmd + 8, 0);
		for (unsigned i = 0; i < 128; i++)
			put_le16(cmd + 10 + 2 * i, (uint16_t)(i & 1));
		o = 10 + 256;
		put_le16(cmd + o, 2);
		cmd[o + 2] = 40;
		memcpy(cmd + o + 3, key, 40);
		o += 43;
	} else {
		cmd[1] = VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET;
		put_le16(cmd + 2, 2);
		o = 4;
	}
	if (td_exec(td, cmd, o) != VIRTIO_NET_OK)
		return 1;
	memset(f, 0, sizeof(f));
	memcpy(f, vnet_dev_mac(td->dev), 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 9] = 6;
	f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
	bufs = fake_mem_alloc(&td->mem, 2 * 64 * 2048, 4096);
	unsigned used[2] = {64, 64};
	for (unsigned long done = 0; done < n; done += 64) {
		uint32_t id, len;

		/* Re-post as many buffers as each RX queue used (64 held on each): guest memory
		 * stays bounded, and the fake buffers' contents do not matter here. */
		for (unsigned q = 0; q < 2; q++) {
			for (unsigned i = 0; i < used[q]; i++) {
				struct fake_buf b = {bufs + (uint64_t)(q * 64 + i) * 2048, 2048, true};

				fake_vq_add_chain(&td->vq[2 * q], &b, 1);
			}
			fake_vq_publish(&td->vq[2 * q]);
		}
		for (unsigned i = 0; i < 64; i++) {
			struct iovec iov = {f, sizeof(f)};

			f[34] = (uint8_t)(i * 13), f[35] = (uint8_t)i; /* 64 flows */
			vnet_dev_receive_frame(td->dev, NULL, &iov, 1, 0, sizeof(f));
		}
		vnet_dev_rx_flush(td->dev);
		for (unsigned q = 0; q < 2; q++)
			for (used[q] = 0; fake_vq_get_used(&td->vq[2 * q], &id, &len); used[q]++)
				;
	}
	printf("%s %lu packets\n", argv[1], n);
	td_free(td);
	return 0;
}
