/* SPDX-License-Identifier: MIT */
/* fuzz_datapath_kit.c - fuzz_datapath's backend and the driver's guest-memory and ring writers. */
#include <errno.h>
#include <sanitizer/asan_interface.h>
#include <string.h>

#include "fuzz_datapath.h"
#include "lib/iov.h"
#include "lib/virtio_net_defs.h"

/* ---- The backend: checks what the device hands it ---------------------------------------- */

static int be_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *h,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame)
{
	size_t got;
	unsigned type;

	(void)be;
	CHECK(iovcnt >= 1 && iovcnt <= VQ_MAX_CHAIN && frame <= VNET_MAX_FRAME,
	      "TX: more iovecs than a chain holds, or a frame larger than VNET_MAX_FRAME");
	for (unsigned i = 0; i < iovcnt; i++)
		CHECK(iov[i].iov_len > 0, "TX: empty iovec");
	got = iov_copy_from(iov, iovcnt, off, scratch, frame); /* ASan checks each byte */
	CHECK(got == frame, "TX: the iovecs hold less than off + frame_len bytes");
	sink = frame ? scratch[frame - 1] : 0;
	CHECK(!(h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM), "TX: header flags beyond NEEDS_CSUM");
	CHECK(h->num_buffers == 0, "TX: num_buffers not zero");
	if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
		CHECK(has(VIRTIO_NET_F_CSUM) && (size_t)h->csum_start + h->csum_offset + 2 <= frame,
		      "TX: NEEDS_CSUM without CSUM or outside the frame");
	type = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;
	CHECK(h->gso_type == VIRTIO_NET_HDR_GSO_NONE ||
		      (((type == VIRTIO_NET_HDR_GSO_TCPV4 && has(VIRTIO_NET_F_HOST_TSO4)) ||
			(type == VIRTIO_NET_HDR_GSO_TCPV6 && has(VIRTIO_NET_F_HOST_TSO6)) ||
			(type == VIRTIO_NET_HDR_GSO_UDP && has(VIRTIO_NET_F_HOST_UFO))) &&
		       (!(h->gso_type & VIRTIO_NET_HDR_GSO_ECN) || has(VIRTIO_NET_F_HOST_ECN)) &&
		       (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && h->gso_size),
	      "TX: GSO the driver did not negotiate or describe fully");
	if (g.tx_fail)
		return g.tx_fail--, -EIO;
	if (g.td->tx_eagain)
		return g.td->tx_eagain--, -EAGAIN;
	return 0;
}

static bool be_rx_resume(struct vnet_backend *be)
{
	(void)be;
	if (g.rx_pending && vnet_dev_receive(g.dev, g.rx_iov, g.rx_iovcnt) == 1)
		g.rx_pending = false;
	return g.rx_more;
}

const struct vnet_backend_ops fz_backend_ops = {
    .kind = "fuzz",
    .offload_features = BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |
			BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |
			BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6),
    .transmit = be_transmit,
    .rx_resume = be_rx_resume,
};

/* ---- Guest memory and descriptors --------------------------------------------------------- */

/* Copy into guest memory at gpa, across the middle of the adjacent layout. */
void gwrite(uint64_t gpa, const void *src, size_t len)
{
	const uint8_t *s = src;

	for (size_t n; len; gpa += n, s += n, len -= n) {
		n = gpa < g.r1_hi && gpa + len > g.r1_hi ? (size_t)(g.r1_hi - gpa) : len;
		memcpy(fake_mem_host(&g.td->mem, gpa), s, n);
	}
}

/* Data buffer for a well-formed chain: where 0/2 region 1, 1/3 region 2, 2 straddling (adjacent). */
uint64_t dalloc(uint64_t len, unsigned where)
{
	uint64_t *cur = (where & 1) ? &g.cur2 : &g.cur1, a;
	uint64_t lo = (where & 1) ? g.r2_lo : g.data_lo, hi = (where & 1) ? g.r2_hi : g.r1_hi;

	if (!len)
		len = 1;
	if (where == 2 && g.adjacent && len > 1)
		return g.r1_hi - len / 2;
	if (*cur + len > hi)
		*cur = lo;
	a = *cur;
	*cur += (len + 7) & ~7ull;
	return a;
}

/* Data buffer address for a hostile descriptor; never inside the rings or the table area. */
uint64_t data_addr(unsigned mode, uint16_t a)
{
	uint64_t addr;

	switch (mode) {
	case 0: addr = g.data_lo + (8ull * a) % (g.r1_hi - g.data_lo); break;
	case 1: addr = g.r2_lo + (8ull * a) % (g.r2_hi - g.r2_lo); break;
	case 2: addr = g.r1_hi - 1 - a % 4096; break;      /* runs into the gap / region 2 */
	case 3: addr = g.r2_hi - 1 - a % 4096; break;      /* runs off the end */
	case 4: addr = g.r1_lo - 1 - a; break;             /* below memory */
	case 5: addr = g.r1_hi + a; break;                 /* gap, or region 2 */
	case 6: addr = UINT64_MAX - a; break;              /* wraps */
	default: addr = (uint64_t)a << 32 | a; break;      /* far away */
	}
	if (addr >= g.r1_lo && addr < g.data_lo)
		addr += g.data_lo - g.r1_lo;
	return addr;
}

/* Address of an indirect table: inside the table area (len clamped to it), or unreadable. */
uint64_t table_addr(unsigned mode, uint16_t a, uint64_t *len)
{
	uint64_t k = 16ull * (1 + a % 16), end = g.td->mem.two_regions ? g.r1_hi : g.r2_hi;

	if (mode < 4) {
		uint64_t addr = g.tab + 16ull * (a % TAB_ENTRIES);

		if (*len > g.tab_end - addr)
			*len = g.tab_end - addr;
		return addr;
	}
	if (mode == 4) { /* crosses the end of a region: never translated */
		*len = *len <= k ? k + 16 : *len;
		return end - k;
	}
	return mode == 5 ? g.r1_lo - 16 - 16ull * a /* below memory */
	       : mode == 6 ? UINT64_MAX - 15 - 16ull * a /* wraps */
			   : (uint64_t)(a | 1) << 36; /* far away */
}

/* A hostile descriptor from 8 input bytes: [flags][amode][le16 a][le16 len][le16 next]. */
void desc_make(struct in *in, void *out)
{
	uint8_t f = u8(in), am = u8(in);
	uint16_t a = u16(in), l = u16(in), next = u16(in);
	uint16_t flags = (uint16_t)((f & 1 ? VRING_DESC_F_NEXT : 0) | (f & 2 ? VRING_DESC_F_WRITE : 0) |
				    (f & 4 ? VRING_DESC_F_INDIRECT : 0) | (f & 8 ? 0x100 : 0));
	struct vring_desc d;
	uint64_t len;

	switch ((am >> 3) & 3) {
	case 0: len = l; break;
	case 1: len = (uint64_t)l << 8; break;
	case 2: len = 0xffffffffu - l; break;
	default: len = 16ull * (l % (VQ_MAX_CHAIN + 2)); break;
	}
	d.addr = (flags & VRING_DESC_F_INDIRECT) ? table_addr(am & 7, a, &len) : data_addr(am & 7, a);
	d.len = (uint32_t)len;
	d.flags = flags;
	d.next = (f & 16) ? next : (uint16_t)(next % g.num);
	memcpy(out, &d, sizeof(d));
}

/* Store one descriptor (little-endian) at slot. */
void put_desc(void *slot, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	struct vring_desc d = {addr, len, flags, next};

	memcpy(slot, &d, sizeof(d));
}

/* The driver moves avail->idx; hi follows every move the device could honour (<= num ahead). */
void avail_seen(unsigned i, uint16_t v)
{
	struct drv_q *d = &g.q[i];
	uint16_t step = (uint16_t)(v - d->hi16);

	if (step <= g.num) {
		d->hi += step;
		d->hi16 = v;
	}
}

/* Publish avail->idx = v and record what the device may honour. */
void set_avail_idx(unsigned i, uint16_t v)
{
	__atomic_store_n(&g.td->vq[i].avail->idx, v, __ATOMIC_RELEASE);
	if (g.q[i].live)
		avail_seen(i, v);
}

/* A well-formed chain of n buffers (direct, or one indirect table), at avail slot `slot`. */
void add_chain(unsigned i, const struct buf *b, unsigned n, bool indirect, uint16_t slot)
{
	struct fake_vq *f = &g.td->vq[i];
	struct drv_q *d = &g.q[i];
	uint16_t head = (uint16_t)(d->cursor % g.num);

	uint8_t *tab;

	if (indirect && g.tcur + n > TAB_ENTRIES)
		g.tcur = 0;
	tab = fake_mem_host(&g.td->mem, g.tab + 16ull * g.tcur);
	n = !indirect && n > g.num ? g.num : n;
	for (unsigned j = 0; j < n; j++) {
		uint16_t idx = (uint16_t)((d->cursor + j) % g.num), next = indirect ? (uint16_t)(j + 1)
										: (uint16_t)((idx + 1) % g.num);

		put_desc(indirect ? tab + 16 * j : (uint8_t *)&f->desc[idx], b[j].gpa, b[j].len,
			 (uint16_t)((b[j].write ? VRING_DESC_F_WRITE : 0) | (j + 1 < n ? VRING_DESC_F_NEXT : 0)),
			 next);
	}
	if (indirect) {
		put_desc(&f->desc[head], g.tab + 16ull * g.tcur, 16u * n, VRING_DESC_F_INDIRECT, 0);
		g.tcur = (uint16_t)(g.tcur + n);
	}
	d->cursor = (uint16_t)(d->cursor + (indirect ? 1 : n));
	f->avail->ring[slot & (g.num - 1)] = head;
}

/* Publish a well-formed chain of n buffers, kick if asked. */
void post(unsigned i, const struct buf *b, unsigned n, bool indirect, bool kick)
{
	uint16_t slot = g.td->vq[i].avail->idx;

	add_chain(i, b, n, indirect, slot);
	set_avail_idx(i, (uint16_t)(slot + 1));
	if (kick)
		vnet_dev_kick(g.dev, i);
}

/* An Ethernet frame of len bytes: dst by sel (ours, broadcast, multicast, other), IPv4 or not. */
void build_frame(uint8_t *p, size_t len, uint8_t sel, uint8_t fill)
{
	uint8_t eth[14] = {0x02, fill, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 0x99, 0x88, 0xb5};

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(fill + i * 7);
	if ((sel & 3) != 3)
		memcpy(eth, (sel & 3) == 0 ? vnet_dev_mac(g.dev)
			    : (sel & 3) == 1 ? (const uint8_t[6]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
					     : (const uint8_t[6]){0x01, 0x00, 0x5e, 0, 0, fill}, 6);
	if (sel & 4)
		eth[12] = 0x08, eth[13] = 0x00; /* IPv4: flows spread over the active pairs */
	memcpy(p, eth, len < 14 ? len : 14);
}

