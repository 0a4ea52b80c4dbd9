/* SPDX-License-Identifier: MIT */
/* fuzz_proto_guest.c - fuzz_vhost_proto's guests: rings, frames and control commands in their memory. */
#include <string.h>

#include "fuzz_proto.h"
#include "lib/virtio_net_defs.h"
#include "virtq/virtq.h"

/* ---- Guest memory, as the guest sees it (the fuzzer's mapping of the memfd) ---- */

void fp_gwrite(struct fp_port *p, uint64_t gpa, const void *src, size_t len)
{
	if (gpa >= FP_MEM_SIZE)
		return;
	if (len > FP_MEM_SIZE - gpa)
		len = FP_MEM_SIZE - gpa;
	memcpy(p->mem + gpa, src, len);
}

bool fp_gread(struct fp_port *p, uint64_t gpa, void *dst, size_t len)
{
	if (gpa >= FP_MEM_SIZE || len > FP_MEM_SIZE - gpa)
		return false;
	memcpy(dst, p->mem + gpa, len);
	return true;
}

static void put16(struct fp_port *p, uint64_t gpa, uint16_t v)
{
	fp_gwrite(p, gpa, &v, 2);
}

static uint16_t get16(struct fp_port *p, uint64_t gpa)
{
	uint16_t v = 0;

	fp_gread(p, gpa, &v, 2);
	return v;
}

unsigned fp_hdr_len(const struct fp_port *p)
{
	if (p->features & BIT_ULL(VIRTIO_NET_F_HASH_REPORT))
		return 20;
	return p->features & (BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF)) ? 12
												 : 10;
}

/* ---- Rings ---- */

void fp_ring_reset(struct fp_port *p, unsigned q, bool packed, uint16_t num)
{
	struct fp_q *d = &p->q[q];

	if (q >= FP_RING_Q)
		return;
	memset(p->mem + FP_RING(q), 0, 0x3000);
	d->packed = packed;
	d->in_order = p->features & BIT_ULL(VIRTIO_F_IN_ORDER);
	d->num = num > FP_QMAX ? 0 : num; /* 0: a ring the driver does not drive itself */
	d->avail = d->cursor = 0;
	d->pnext = d->pused = 0;
	d->pwrap = d->pused_wrap = true;
	d->inflight = 0;
	d->last_head = 0;
	memset(d->chain_len, 0, sizeof(d->chain_len));
}

/* Descriptors (split) or slots (packed) the driver may fill now. */
unsigned fp_reclaim(struct fp_port *p, unsigned q)
{
	struct fp_q *d = &p->q[q];
	uint64_t ring = FP_RING(q);

	if (!d->set || !d->num)
		return 0;
	if (!d->packed) {
		uint16_t used = get16(p, ring + FP_USED_OFF + 2), out = (uint16_t)(d->avail - used);

		return out >= d->num ? 0 : d->num - out;
	}
	for (unsigned k = 0; k < d->num && d->inflight; k++) {
		struct pvirtq_desc pd;
		bool avail, usedf;
		unsigned adv, len;

		fp_gread(p, ring + 16ull * d->pused, &pd, sizeof(pd));
		avail = pd.flags & VRING_PACKED_DESC_F_AVAIL;
		usedf = pd.flags & VRING_PACKED_DESC_F_USED;
		if (avail != d->pused_wrap || usedf != d->pused_wrap || pd.id >= d->num)
			break;
		len = d->chain_len[pd.id] ? d->chain_len[pd.id] : 1;
		if (d->in_order)
			adv = pd.id >= d->pused ? pd.id + len - d->pused : d->num - d->pused + pd.id + len;
		else
			adv = len;
		if (!adv || adv > d->inflight)
			break;
		d->inflight = (uint16_t)(d->inflight - adv);
		d->pused = (uint16_t)(d->pused + adv);
		if (d->pused >= d->num) {
			d->pused = (uint16_t)(d->pused - d->num);
			d->pused_wrap = !d->pused_wrap;
		}
	}
	return d->num - d->inflight;
}

static void put_split_desc(struct fp_port *p, uint64_t at, uint64_t addr, uint32_t len,
			   uint16_t flags, uint16_t next)
{
	struct vring_desc vd = {addr, len, flags, next};

	fp_gwrite(p, at, &vd, sizeof(vd));
}

static uint16_t packed_flags(bool wrap, uint16_t flags)
{
	return (uint16_t)(flags | (wrap ? VRING_PACKED_DESC_F_AVAIL : VRING_PACKED_DESC_F_USED));
}

/* A well-formed buffer of n pieces (direct, or one indirect table), made available at once. */
bool fp_post(struct fp_port *p, unsigned q, const uint64_t *gpa, const uint32_t *len,
	     const bool *write, unsigned n, bool indirect)
{
	struct fp_q *d = &p->q[q];
	uint64_t ring = FP_RING(q), tab = FP_TAB_BASE + (q % FP_RING_Q) * 0x200ull;
	unsigned need = indirect ? 1 : n;

	if (q >= FP_RING_Q || !n || n > 32 || !d->set || !d->num || fp_reclaim(p, q) < need)
		return false;
	if (!d->packed) {
		uint16_t head = (uint16_t)(d->cursor % d->num);

		if (indirect) {
			for (unsigned j = 0; j < n; j++)
				put_split_desc(p, tab + 16ull * j, gpa[j], len[j],
					       (uint16_t)((write[j] ? VRING_DESC_F_WRITE : 0) |
							  (j + 1 < n ? VRING_DESC_F_NEXT : 0)),
					       (uint16_t)(j + 1));
			put_split_desc(p, ring + 16ull * head, tab, 16u * n, VRING_DESC_F_INDIRECT, 0);
		} else {
			for (unsigned j = 0; j < n; j++) {
				uint16_t i = (uint16_t)((d->cursor + j) % d->num);

				put_split_desc(p, ring + 16ull * i, gpa[j], len[j],
					       (uint16_t)((write[j] ? VRING_DESC_F_WRITE : 0) |
							  (j + 1 < n ? VRING_DESC_F_NEXT : 0)),
					       (uint16_t)((i + 1) % d->num));
			}
		}
		d->cursor = (uint16_t)(d->cursor + need);
		put16(p, ring + FP_AVAIL_OFF + 4 + 2ull * (d->avail % d->num), head);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		d->avail++;
		put16(p, ring + FP_AVAIL_OFF + 2, d->avail);
		d->last_head = head;
		return true;
	}
	/* Packed: the later slots first, the head's flags last. */
	{
		uint16_t head = d->pnext, slot = head, head_flags = 0;
		bool wrap = d->pwrap;
		struct pvirtq_desc pd;

		if (indirect) {
			for (unsigned j = 0; j < n; j++) {
				pd = (struct pvirtq_desc){gpa[j], len[j], 0,
							  write[j] ? VRING_DESC_F_WRITE : 0};
				fp_gwrite(p, tab + 16ull * j, &pd, sizeof(pd));
			}
		}
		for (unsigned j = 0; j < need; j++) {
			uint16_t fl = indirect ? VRING_DESC_F_INDIRECT
					       : (uint16_t)((write[j] ? VRING_DESC_F_WRITE : 0) |
							    (j + 1 < n ? VRING_DESC_F_NEXT : 0));

			pd = (struct pvirtq_desc){indirect ? tab : gpa[j], indirect ? 16u * n : len[j],
						  head, 0};
			fp_gwrite(p, ring + 16ull * slot, &pd, 14);
			if (j)
				put16(p, ring + 16ull * slot + 14, packed_flags(wrap, fl));
			else
				head_flags = packed_flags(wrap, fl);
			if (++slot == d->num) {
				slot = 0;
				wrap = !wrap;
			}
		}
		__atomic_thread_fence(__ATOMIC_RELEASE);
		put16(p, ring + 16ull * head + 14, head_flags);
		d->chain_len[head] = (uint8_t)need;
		d->inflight = (uint16_t)(d->inflight + need);
		d->pnext = slot;
		d->pwrap = wrap;
		d->last_head = head;
		return true;
	}
}

/* ---- Frames ---- */

static const uint8_t mac_bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* An Ethernet frame of len bytes into f (len >= 64): sel picks addresses and EtherType. */
static size_t build_frame(const struct fp_port *p, uint8_t *f, size_t len, uint8_t fsel,
			  uint8_t lsel)
{
	unsigned k = (unsigned)p->idx % FP_PORTS, other = (fsel >> 6) % FP_PORTS;
	uint8_t *l3 = f + 14;
	size_t i;

	for (i = 0; i < len; i++)
		f[i] = (uint8_t)(i * 7 + lsel);
	switch (fsel & 3) {
	case 0: memcpy(f, fp_mac[other], 6); break;
	case 1: memcpy(f, mac_bcast, 6); break;
	case 2: memcpy(f, (const uint8_t[6]){0x01, 0x00, 0x5e, 0x00, 0x00, lsel}, 6); break;
	default: memcpy(f, (const uint8_t[6]){0x02, 0x99, 0x00, 0x00, 0x00, lsel}, 6); break;
	}
	switch (fsel >> 2 & 3) {
	case 0: memcpy(f + 6, fp_mac[k], 6); break;
	case 1: memcpy(f + 6, fp_mac[(k + 1 + (lsel & 1)) % FP_PORTS], 6); break;
	case 2: memcpy(f + 6, (const uint8_t[6]){0x03, 0, 0, 0, 0, lsel}, 6); break;
	default: memcpy(f + 6, fp_mac[k], 5); f[11] = lsel; break;
	}
	switch (fsel >> 4 & 3) {
	case 2: /* an 802.1Q tag in front of IPv4 */
		f[12] = 0x81, f[13] = 0x00, f[14] = 0, f[15] = lsel & 0x0f;
		l3 = f + 18;
		/* fall through */
	case 0:
		l3[-2] = 0x08, l3[-1] = 0x00;
		memset(l3, 0, 20);
		l3[0] = 0x45, l3[8] = 64, l3[9] = 17;
		l3[2] = (uint8_t)((len - (size_t)(l3 - f)) >> 8), l3[3] = (uint8_t)(len - (size_t)(l3 - f));
		memcpy(l3 + 12, (const uint8_t[4]){10, 0, 0, (uint8_t)(k + 1)}, 4);
		memcpy(l3 + 16, (const uint8_t[4]){10, 0, 0, (uint8_t)(other + 1)}, 4);
		break;
	case 1: /* ARP request: sender MAC and IP the port's own (or the frame's source) */
		f[12] = 0x08, f[13] = 0x06;
		memcpy(l3, (const uint8_t[8]){0, 1, 8, 0, 6, 4, 0, 1}, 8);
		memcpy(l3 + 8, f + 6, 6);
		memcpy(l3 + 14, (const uint8_t[4]){10, 0, 0, (uint8_t)(k + 1)}, 4);
		memset(l3 + 18, 0, 6);
		memcpy(l3 + 24, (const uint8_t[4]){10, 0, 0, (uint8_t)(other + 1)}, 4);
		break;
	default: { /* IPv6 neighbour advertisement with a target link-layer address option */
		uint8_t *icmp = l3 + 40;

		f[12] = 0x86, f[13] = 0xdd;
		memset(l3, 0, 40 + 32);
		l3[0] = 0x60, l3[4] = 0, l3[5] = 32, l3[6] = 58, l3[7] = 255;
		l3[8] = 0xfd, l3[23] = (uint8_t)(k + 1);
		l3[24] = 0xff, l3[25] = 0x02, l3[39] = 1;
		icmp[0] = 136;
		icmp[4] = 0x20;
		icmp[8] = 0xfd, icmp[23] = (uint8_t)(k + 1);
		icmp[24] = 2, icmp[25] = 1;
		memcpy(icmp + 26, f + 6, 6);
		break;
	}
	}
	return len;
}

/*
 * TX: [qsel][n][fsel][shape][lsel]. n frames on queue pair qsel's TX ring, each as header +
 * frame in one of four layouts (shape & 3: one buffer; header | frame; the same through an
 * indirect table; a cut inside the source MAC), then a kick (unless qsel bit 7).
 */
void fp_op_tx(struct fp_port *p, struct fp_in *in)
{
	uint8_t qsel = in8(in), n = (uint8_t)(1 + in8(in) % 8), fsel = in8(in), shape = in8(in),
		lsel = in8(in);
	unsigned q = 2u * (qsel % FP_PAIRS) + 1, hl = fp_hdr_len(p);
	size_t flen = shape & 8 ? 1514u - lsel : 64u + 4u * lsel;
	uint8_t frame[1600];

	p->nbatch = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t slot = FP_TX_BASE + (uint64_t)(p->tx_slot++ % FP_TX_SLOTS) * FP_TX_SLOT;
		uint8_t hdr[20] = {0};
		uint64_t gpa[3];
		uint32_t len[3];
		bool wr[3] = {false, false, false};
		struct fp_frame_ref *ref = &p->batch[p->nbatch < 8 ? p->nbatch++ : 7];
		unsigned nb;

		build_frame(p, frame, flen, (uint8_t)(fsel + i * ((shape >> 4) & 3)), (uint8_t)(lsel + i));
		if (shape & 4)
			hdr[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		switch (shape & 3) {
		case 0:
			fp_gwrite(p, slot, hdr, hl);
			fp_gwrite(p, slot + hl, frame, flen);
			gpa[0] = slot, len[0] = (uint32_t)(hl + flen), nb = 1;
			*ref = (struct fp_frame_ref){{slot + hl, 0}, 14, (uint16_t)flen};
			break;
		case 1:
		case 2:
			fp_gwrite(p, slot, hdr, hl);
			fp_gwrite(p, slot + 32, frame, flen);
			gpa[0] = slot, len[0] = hl, gpa[1] = slot + 32, len[1] = (uint32_t)flen, nb = 2;
			*ref = (struct fp_frame_ref){{slot + 32, 0}, 14, (uint16_t)flen};
			break;
		default: /* the source MAC cut after its third byte */
			fp_gwrite(p, slot, hdr, hl);
			fp_gwrite(p, slot + hl, frame, 9);
			fp_gwrite(p, slot + 64, frame + 9, flen - 9);
			gpa[0] = slot, len[0] = hl + 9, gpa[1] = slot + 64, len[1] = (uint32_t)flen - 9;
			nb = 2;
			*ref = (struct fp_frame_ref){{slot + hl, slot + 64}, 9, (uint16_t)flen};
			break;
		}
		if (!fp_post(p, q, gpa, len, wr, nb, (shape & 3) == 2))
			break;
	}
	if (!(qsel & 0x80))
		fp_kick(p, q);
}

/* RX: [qsel][n][size]: n writable buffers on queue pair qsel's RX ring, then a kick. */
void fp_op_rx(struct fp_port *p, struct fp_in *in)
{
	static const uint32_t sizes[4] = {2048, 1526, 64, 300};
	uint8_t qsel = in8(in), n = (uint8_t)(1 + in8(in) % 32), ssel = in8(in);
	unsigned q = 2u * (qsel % FP_PAIRS);

	for (unsigned i = 0; i < n; i++) {
		uint64_t gpa = FP_RX_BASE + (uint64_t)(p->rx_slot++ % FP_RX_SLOTS) * FP_RX_SLOT;
		uint32_t len = sizes[ssel & 3];
		bool wr = true;

		if (!fp_post(p, q, &gpa, &len, &wr, 1, ssel & 4))
			break;
	}
	if (!(qsel & 0x80))
		fp_kick(p, q);
}

/* The control queue's index as the driver negotiated (the device's rule). */
static unsigned ctrl_q(const struct fp_port *p)
{
	return p->features & BIT_ULL(VIRTIO_NET_F_MQ) ? 2u * FP_PAIRS : 2u;
}

/* CTRL: [class][cmd][len][len bytes]: one control command, then a kick. */
void fp_op_ctrl(struct fp_port *p, struct fp_in *in)
{
	uint8_t cls = in8(in), cmd = in8(in), n = in8(in) % 64, data[64];
	uint64_t slot = FP_CTRL_BASE + (uint64_t)(p->ctrl_slot++ % 8) * 0x200;
	uint64_t gpa[3] = {slot, slot + 16, slot + 0x1f0};
	uint32_t len[3] = {2, n, 1};
	bool wr[3] = {false, false, true};
	unsigned q = ctrl_q(p);

	for (unsigned i = 0; i < n; i++)
		data[i] = in8(in);
	fp_gwrite(p, slot, (const uint8_t[2]){cls, cmd}, 2);
	fp_gwrite(p, slot + 16, data, n);
	fp_gwrite(p, slot + 0x1f0, (const uint8_t[1]){0xee}, 1);
	p->last_ctrl_len = n;
	if (n)
		fp_post(p, q, gpa, len, wr, 3, false);
	else
		fp_post(p, q, (const uint64_t[2]){gpa[0], gpa[2]}, (const uint32_t[2]){2, 1},
			(const bool[2]){false, true}, 2, false);
	fp_kick(p, q);
}

/* A descriptor address for hostile descriptors: mode picks where (ours, rings, outside). */
static uint64_t desc_addr(unsigned mode, uint16_t a)
{
	switch (mode & 7) {
	case 0: return FP_TX_BASE + (8ull * a) % 0x10000;
	case 1: return FP_RX_BASE + (8ull * a) % 0x20000;
	case 2: return (8ull * a) % 0x18000; /* the rings themselves */
	case 3: return FP_TAB_BASE + (16ull * a) % 0x1000;
	case 4: return FP_MEM_SIZE - 1 - a % 4096; /* runs off the end */
	case 5: return FP_MEM_SIZE + a;
	case 6: return UINT64_MAX - a;
	default: return (uint64_t)a << 32 | a;
	}
}

/*
 * DESC: [q][slot lo][flags][mode][a lo][a hi][len lo][len hi][next lo][next hi]: one hostile
 * descriptor written at a slot and made available (split: avail ring + idx; packed: its flags
 * say available, with the right or the wrong wrap counter), then a kick.
 */
void fp_op_desc(struct fp_port *p, struct fp_in *in)
{
	unsigned q = in8(in) % FP_RING_Q;
	uint8_t slot8 = in8(in), f = in8(in), mode = in8(in);
	uint16_t a = in16(in), l = in16(in), next = in16(in);
	struct fp_q *d = &p->q[q];
	uint64_t ring = FP_RING(q), addr = desc_addr(mode, a);
	uint32_t len = mode & 8 ? (uint32_t)l << 8 : mode & 16 ? 0xffffffffu - l : l;
	uint16_t flags = (uint16_t)((f & 1 ? VRING_DESC_F_NEXT : 0) | (f & 2 ? VRING_DESC_F_WRITE : 0) |
				    (f & 4 ? VRING_DESC_F_INDIRECT : 0));
	unsigned num = d->num ? d->num : 256;
	uint16_t s = (uint16_t)(f & 8 ? slot8 % num : d->packed ? d->pnext : d->cursor % num);

	if (!d->packed) {
		put_split_desc(p, ring + 16ull * s, addr, len, flags, next);
		if (!(f & 16)) {
			put16(p, ring + FP_AVAIL_OFF + 4 + 2ull * (d->avail % num), s);
			d->avail++;
			put16(p, ring + FP_AVAIL_OFF + 2, d->avail);
			d->cursor = (uint16_t)(s + 1);
		}
	} else {
		bool wrap = f & 32 ? !d->pwrap : d->pwrap;
		struct pvirtq_desc pd = {addr, len, next, packed_flags(wrap, flags)};

		fp_gwrite(p, ring + 16ull * s, &pd, sizeof(pd));
		if (!(f & 8) && d->num) {
			if (!(flags & VRING_DESC_F_NEXT) && next < FP_QMAX)
				d->chain_len[next] = 1;
			d->inflight++;
			if (++d->pnext == d->num) {
				d->pnext = 0;
				d->pwrap = !d->pwrap;
			}
		}
	}
	if (!(f & 64))
		fp_kick(p, q);
}

/*
 * AVAIL: [q][mode][v lo][v hi]: split: avail->idx = v, += v, used_event = v, avail flags = v;
 * packed: a slot's flags flipped, the driver event area's flags / offset.
 */
void fp_op_avail(struct fp_port *p, struct fp_in *in)
{
	unsigned q = in8(in) % FP_RING_Q, mode = in8(in);
	uint16_t v = in16(in);
	struct fp_q *d = &p->q[q];
	uint64_t ring = FP_RING(q);
	unsigned num = d->num ? d->num : 256;

	if (!d->packed) {
		switch (mode & 3) {
		case 0: put16(p, ring + FP_AVAIL_OFF + 2, v); break;
		case 1:
			d->avail = (uint16_t)(d->avail + v % 512);
			put16(p, ring + FP_AVAIL_OFF + 2, d->avail);
			break;
		case 2: put16(p, ring + FP_AVAIL_OFF + 4 + 2ull * num, v); break;
		default: put16(p, ring + FP_AVAIL_OFF, v); break;
		}
	} else {
		switch (mode & 3) {
		case 0:
		case 1: {
			uint64_t at = ring + 16ull * (v % num) + 14;

			put16(p, at, (uint16_t)(get16(p, at) ^ (mode & 1 ? VRING_PACKED_DESC_F_AVAIL
								      : VRING_PACKED_DESC_F_USED |
									VRING_PACKED_DESC_F_AVAIL)));
			break;
		}
		case 2: put16(p, ring + FP_AVAIL_OFF + 2, v); break;
		default: put16(p, ring + FP_AVAIL_OFF, v); break;
		}
	}
	if (!(mode & 4))
		fp_kick(p, q);
}

/* ---- The second vCPU's writes ---- */

static void frame_write(struct fp_port *p, const struct fp_frame_ref *r, unsigned off,
			const uint8_t *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned o = off + i;

		if (o >= r->flen)
			return;
		fp_gwrite(p, o < r->len0 || !r->gpa[1] ? r->gpa[0] + o : r->gpa[1] + (o - r->len0),
			  &v[i], 1);
	}
}

/*
 * What the other vCPU rewrites (target & 7): 0 the source MAC of the last TX frames (another
 * port's, then its own again), 1 any bytes of them, 2 their EtherType to an 802.1Q tag and back,
 * 3 an ARP sender MAC, 4 an IPv4 source, 5 the last chain's head descriptor, 6 the last control
 * command, 7 any 6 bytes of its memory. b selects the frame (b % 9 == 8: all of them).
 */
void fp_race_write(struct fp_port *p, uint8_t target, uint8_t a, uint8_t b, const uint8_t *v,
		   bool flip)
{
	unsigned k = (unsigned)p->idx % FP_PORTS, from = 0, to = p->nbatch;

	if ((target & 7) <= 4) {
		if (!p->nbatch)
			return;
		if (b % 9 != 8) {
			from = (b % 9) % p->nbatch;
			to = from + 1;
		}
	}
	for (unsigned i = from; i < to || (target & 7) > 4; i++) {
		const struct fp_frame_ref *r = &p->batch[i < 8 ? i : 7];

		switch (target & 7) {
		case 0:
			frame_write(p, r, 6, flip ? fp_mac[k] : fp_mac[(k + 1 + (a & 1)) % FP_PORTS], 6);
			break;
		case 1: frame_write(p, r, a % 64, v, 1 + (b >> 4) % 6); break;
		case 2:
			frame_write(p, r, 12, flip ? (const uint8_t[2]){0x08, 0x00}
						   : (const uint8_t[2]){0x81, 0x00}, 2);
			break;
		case 3:
			frame_write(p, r, 22, flip ? fp_mac[k] : fp_mac[(k + 1 + (a & 1)) % FP_PORTS], 6);
			break;
		case 4: frame_write(p, r, b & 1 ? 30 : 26, (const uint8_t[4]){10, 0, 0, v[0]}, 4); break;
		case 5: {
			unsigned q = a % FP_RING_Q;
			uint64_t at = FP_RING(q) + 16ull * p->q[q].last_head;
			static const unsigned off[4] = {0, 8, 12, 14};

			fp_gwrite(p, at + off[b & 3], v, (b & 3) == 1 ? 4 : (b & 3) == 0 ? 6 : 2);
			return;
		}
		case 6:
			fp_gwrite(p, FP_CTRL_BASE + (uint64_t)((p->ctrl_slot + 7) % 8) * 0x200 + a % 64,
				  v, 1);
			return;
		default:
			fp_gwrite(p, ((uint64_t)a | (uint64_t)b << 8) * 8 % FP_MEM_SIZE, v, 6);
			return;
		}
	}
}
