/* SPDX-License-Identifier: MIT */
/* fuzz_datapath.c - libFuzzer: a hostile driver against the data path, invariants checked after every op. */
#include <errno.h>
#include <sanitizer/asan_interface.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_datapath.h"
#include "lib/log.h"
#include "lib/virtio_net_defs.h"

/*
 * Input: 2 header bytes, then at most MAX_OPS operations [opcode][fixed operands] (bytes past
 * the end read as 0; the opcode is taken modulo OP_COUNT, operands are listed at enum op).
 *   [0] features: bit0 MRG_RXBUF, bit1 EVENT_IDX, bit2 INDIRECT_DESC, bit3 legacy (no VERSION_1),
 *       bit4 CTRL_VQ + CTRL_RX + CTRL_MAC_ADDR, bit5 NOTF_COAL + VQ_NOTF_COAL,
 *       bit6 CSUM + HOST_TSO4/6, bit7 GUEST_CSUM + GUEST_TSO4/6 + CTRL_GUEST_OFFLOADS
 *   [1] bits0-3 log2 queue size (mod 10), bit4 two queue pairs (+MQ), bits5-6 memory layout
 *       (one region / two with a gap / two adjacent), bit7 TX timer mode
 * Guest memory: the rings and an area for indirect tables sit at the bottom of region 1, data
 * above. Descriptors are only written by desc_make() and add_chain(), which keep buffers out of
 * the rings and tables and point indirect descriptors into the table area (or where no table
 * can be read): the rings then hold only what the device wrote and the checks may trust them,
 * while the device still gets anything else (bad heads and indexes, loops, huge or straddling
 * lengths, addresses outside memory, bad tables). The host gap of the adjacent layout is
 * poisoned, so an access running off region 1 there is an ASan error.
 */
enum op {
	OP_DESC,      /* [q][le16 idx][desc]: write one descriptor of q's table */
	OP_TABLE,     /* [le16 slot][desc]: write one entry of the indirect table area */
	OP_AVAIL,     /* [q][le16 slot][le16 head]: write an avail ring entry */
	OP_AVAIL_IDX, /* [q][mode][le16 v]: avail->idx absolute / + <= num / too far / back */
	OP_FLAGS,     /* [q][le16 flags][mode][le16 v]: avail->flags, used_event */
	OP_POST_TX,   /* [q][opts][hdr][le16 len][fill]: a well-formed TX chain, published */
	OP_POST_RX,   /* [q][count][opts][le16 size]: well-formed RX buffers (1-4 parts), published */
	OP_KICK,      /* [q] */
	OP_RUN,       /* one round of the queues the device scheduled */
	OP_RECEIVE,   /* [mode][le16 len][dst][fill][split]: vnet_dev_receive() */
	OP_DIRECT,    /* [mode][le16 max_len][le16 len][fill][reps]: reserve, backend write, commit */
	OP_FLUSH,     /* vnet_dev_rx_flush() */
	OP_ADVANCE,   /* [unit][le16 v]: the clock moves, timers fire */
	OP_COAL,      /* [mode][q][le16 packets][le16 usecs]: host or guest coalescing; mode bit7:
		       * bit5 stall guard (bit2 on, bytes packets*16, idle usecs%2048), else
		       * adaptive (bit1 whole kind, bit2 on) */
	OP_BACKEND,   /* [mode][k]: next k transmits -EAGAIN (bit0: -EIO); bit1 rx_resume() says
		       * more, bit2 backend detached / attached again */
	OP_RESUME,    /* [mode]: the backend takes packets again: vnet_dev_tx_resume() */
	OP_ENABLE,    /* [q][on] */
	OP_STOP,      /* [q][mode][le16 base][le16 used]: GET_VRING_BASE, then restart or not */
	OP_RESET,     /* [mode][flip]: device reset, then the driver starts again or not */
	OP_CTRL,      /* [class][cmd][plen][8 payload][out]: a control command */
	OP_COUNT
};

struct fz_state g;
uint8_t pkt[PKT_MAX], rxpkt[PKT_MAX], scratch[PKT_MAX];
volatile uint8_t sink;

/* ---- Invariants ----------------------------------------------------------------------------- */

/* Follow queue i's used ring: what the device published since the last look. */
/* Check queue i's new used entries; `kind` is what the queue was when it completed them. */
static void check_used_as(unsigned i, enum vnet_queue_kind kind)
{
	struct fake_vq *f = &g.td->vq[i];
	struct drv_q *d = &g.q[i];
	uint16_t idx = __atomic_load_n(&f->used->idx, __ATOMIC_ACQUIRE);
	uint16_t delta = (uint16_t)(idx - d->used_seen);

	/* Each used entry completes a distinct chain the driver made available. */
	CHECK(d->used + delta <= d->hi, "used index ran past the chains the driver made available");
	CHECK(!(f->used->flags & ~VRING_USED_F_NO_NOTIFY), "used->flags beyond NO_NOTIFY");
	for (unsigned k = delta > g.num ? delta - g.num : 0; k < delta; k++) {
		struct vring_used_elem e = f->used->ring[(uint16_t)(d->used_seen + k) & (g.num - 1)];

		CHECK(e.id < g.num, "used element id >= queue size");
		/* TX completes with 0, control with ack + result, RX with at most one packet. */
		CHECK(e.len <= (kind == VNET_QUEUE_TX ? 0 : kind == VNET_QUEUE_CTRL ? 65
				: VNET_HDR_LEN + VNET_MAX_FRAME), "used length its queue kind cannot have");
	}
	d->used_seen = idx;
	d->used += delta;
}

static void check_used(unsigned i)
{
	check_used_as(i, vnet_dev_queue(g.dev, i)->kind);
}

/* After an op (check: what changed since the snapshot s) and before the next (s taken anew). */
static void check_op(struct snap *s, bool check)
{
	for (unsigned i = 0; i < g.nq; i++) {
		const struct vnet_queue *dq = vnet_dev_queue(g.dev, i);
		const struct snap *b = &s[i];
		uint64_t notifies = g.td->notifies[i];

		if (g.q[i].live)
			check_used(i);
		CHECK(dq->coal.setter != COAL_SET_ADAPTIVE || !dq->adapt.on ||
		      !memcmp(&dq->coal.params, coal_adapt_profile(dq->adapt.level),
			      sizeof(dq->coal.params)),
		      "adaptive queue with values that are not its level's");
		CHECK(!dq->adapt.on || dq->kind != VNET_QUEUE_CTRL || !dq->vq.started,
		      "adaptive coalescing on a running control queue");
		CHECK(dq->vq.started || !g.td->deadline[i], "timer armed for a stopped queue");
		if (!check || g.q[i].fresh)
			goto snap;
		/* Flags only change in OP_FLAGS, so a driver asking for none had them all op long. */
		if (dq->vq.started && !dq->vq.event_idx && g.last_op != OP_FLAGS &&
		    (g.td->vq[i].avail->flags & VRING_AVAIL_F_NO_INTERRUPT))
			CHECK(notifies == b->notifies, "notification while the driver suppresses them");
		if (b->broken) {
			CHECK(dq->vq.broken, "broken queue works again without reset or restart");
			CHECK(dq->vq.used_idx == b->pushed, "used element pushed on a broken queue");
			CHECK(notifies == b->notifies, "notification on a broken queue");
		}
		CHECK(g.td->queue_errors[i] - b->errors == (unsigned)(dq->vq.broken && !b->broken),
		      "queue error not signalled exactly once when the queue broke");
		if (!b->started && !dq->vq.started)
			CHECK(notifies == b->notifies, "notification for a queue that is not started");
		if (b->started && dq->vq.started && !b->enabled && !dq->enabled) {
			CHECK(dq->vq.used_idx == b->pushed, "used element pushed on a disabled queue");
			CHECK(notifies == b->notifies, "notification on a disabled queue");
		}
snap:
		s[i] = (struct snap){dq->vq.started, dq->vq.broken, dq->enabled, dq->vq.used_idx,
				     notifies, g.td->queue_errors[i]};
		g.q[i].fresh = false;
	}
}

/* ---- Queue lifecycle --------------------------------------------------------------------- */

static void queue_start(unsigned i, uint16_t base)
{
	struct vnet_queue *dq = vnet_dev_queue(g.dev, i);
	struct fake_vq *f = &g.td->vq[i];
	struct drv_q *d = &g.q[i];

	fake_vq_setup_virtqueue(f, &dq->vq);
	dq->vq.last_avail = base; /* SET_VRING_BASE */
	dq->vq.used_idx = base;
	d->fresh = true;
	d->live = false;
	if (vnet_dev_queue_start(g.dev, i, &g.td->mem.gm) != 0)
		fail("queue start refused good rings");
	d->live = true;
	d->start = d->hi16 = base;
	d->hi = 0;
	avail_seen(i, f->avail->idx);
	d->used_seen = f->used->idx;
	d->used = 0;
	vnet_dev_kick(g.dev, i); /* as the transport does after a start */
}

/* Rings for every queue the driver uses and the table area at the bottom, then start them. */
static void driver_start(void)
{
	struct fake_mem *m = &g.td->mem;
	unsigned data_queues;

	g.nq = vnet_dev_num_queues(g.dev);
	data_queues = has(VIRTIO_NET_F_MQ) ? g.nq - 1 : 2;
	g.adjacent = m->host_gap != 0;
	g.r1_lo = m->gpa;
	g.r1_hi = m->gpa + m->size / 2;
	g.r2_lo = g.r1_hi + m->gpa_gap;
	g.r2_hi = fake_mem_end_gpa(m);
	g.ctrl_q = has(VIRTIO_NET_F_CTRL_VQ) ? vnet_dev_ctrl_queue_index(g.dev) : ~0u;
	g.tab = fake_mem_alloc(m, 16ull * TAB_ENTRIES, 16);
	g.tab_end = g.tab + 16ull * TAB_ENTRIES;
	for (unsigned i = 0; i < g.nq; i++) {
		if (i >= data_queues && i != g.ctrl_q)
			continue;
		fake_vq_destroy(&g.td->vq[i]);
		fake_vq_init(&g.td->vq[i], m, g.num);
		g.q[i].rings = true;
		queue_start(i, 0);
		vnet_dev_queue_enable(g.dev, i, true);
	}
	g.data_lo = g.cur1 = (g.r1_lo + m->next + 63) & ~63ull; /* data above every ring */
	g.cur2 = g.r2_lo;
}

static void op_stop(struct in *in)
{
	unsigned i = u8(in) % g.nq;
	uint8_t mode = u8(in);
	uint16_t hostile_base = u16(in), used_idx = u16(in);
	struct vnet_queue *dq = vnet_dev_queue(g.dev, i);
	struct drv_q *d = &g.q[i];
	bool was_started = dq->vq.started, was_broken = dq->vq.broken;
	uint16_t base = vnet_dev_queue_stop(g.dev, i), rel = (uint16_t)(base - d->start);

	if (was_started && d->live) {
		check_used(i);
		CHECK(rel <= d->hi, "stop: base beyond the chains the driver made available");
		CHECK(rel >= d->used, "stop: base behind the chains the device completed");
		CHECK(was_broken || rel == d->used, "stop: chain taken but neither completed nor given back");
	}
	d->live = false;
	d->fresh = true;
	CHECK(!g.td->deadline[i], "stop: timer still armed");
	if (!d->rings || (mode & 3) == 2)
		return;
	if (mode & 8) {
		vnet_dev_queue_enable(g.dev, i, false);
		vnet_dev_queue_enable(g.dev, i, true);
	}
	if (mode & 4)
		g.td->vq[i].used->idx = used_idx; /* a frontend lying about the used index */
	if ((mode & 3) == 3) { /* misaligned, not a power of 2, or outside memory */
		fake_vq_setup_virtqueue(&g.td->vq[i], &dq->vq);
		dq->vq.desc_addr += hostile_base % 3 == 0 ? 8 : 0;
		dq->vq.num = (uint16_t)(hostile_base % 3 == 1 ? 3 * g.num : g.num);
		dq->vq.used_addr = hostile_base % 3 == 2 ? g.r2_hi - 4 : dq->vq.used_addr;
		CHECK(vnet_dev_queue_start(g.dev, i, &g.td->mem.gm) != 0 && !dq->vq.started,
		      "queue started on bad rings");
		return;
	}
	queue_start(i, (mode & 3) == 1 ? hostile_base : base);
}

static void op_reset(struct in *in)
{
	uint8_t mode = u8(in), flip = u8(in);
	uint64_t want = g.want;
	enum vnet_queue_kind kinds[VNET_MAX_QUEUES];

	/* A reset signals and publishes first, then gives queues their reset roles: check the
	 * entries against the role the queue had when it completed them. */
	for (unsigned i = 0; i < g.nq; i++)
		kinds[i] = vnet_dev_queue(g.dev, i)->kind;
	vnet_dev_reset(g.dev);
	for (unsigned i = 0; i < g.nq; i++) {
		if (g.q[i].live)
			check_used_as(i, kinds[i]);
		g.q[i].live = false;
		g.q[i].fresh = true;
	}
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		CHECK(!g.td->deadline[i], "timer armed after reset");
	if (!(mode & 1))
		return; /* the driver does not come back (yet) */
	for (unsigned j = 0; j < 5; j++) /* what the driver accepts this time */
		want ^= (flip >> j & 1) ? BIT_ULL(((const unsigned[]){VIRTIO_NET_F_MRG_RXBUF,
				VIRTIO_RING_F_EVENT_IDX, VIRTIO_RING_F_INDIRECT_DESC, VIRTIO_F_VERSION_1,
				VIRTIO_NET_F_CSUM})[j]) : 0;
	g.td->features = vnet_dev_offered_features(g.dev) & want;
	CHECK(vnet_dev_set_features(g.dev, g.td->features) == 0, "features refused after reset");
	for (unsigned i = 0; i < g.nq; i++) {
		struct fake_vq *f = &g.td->vq[i];

		if (!g.q[i].rings)
			continue;
		memset(f->desc, 0, 16u * g.num);
		memset(f->avail, 0, 6u + 2u * g.num);
		memset(f->used, 0, 6u + 8u * g.num);
		queue_start(i, 0);
		vnet_dev_queue_enable(g.dev, i, true);
	}
}

/* ---- Traffic ------------------------------------------------------------------------------ */

/* A frame length: small, any u16, around VNET_MAX_FRAME, or `other`. */
static size_t frame_len(unsigned mode, uint16_t v, size_t other)
{
	return mode == 0 ? 14 + v % 1500u : mode == 1 ? v : mode == 2 ? VNET_MAX_FRAME - 32 + v % 64u : other;
}

static void op_post_tx(struct in *in)
{
	static const uint8_t kflags[8] = {0, 1, 1, 1, 1, 1, 3, 0}, kgso[8] = {0, 0, 1, 4, 3, 0x81, 0, 0};
	unsigned i = u8(in) % g.nq, n, hl = hdr_len();
	uint8_t opts = u8(in), hk = u8(in);
	uint16_t lv = u16(in);
	uint8_t fill = u8(in);
	size_t frame = frame_len((opts >> 2) & 3, lv, 0);
	size_t total = ((opts >> 2) & 3) == 3 ? lv % (hl + 1) : hl + frame; /* 3: header cut short */
	struct virtio_net_hdr_v1 h = {kflags[hk & 7], kgso[hk & 7], 0, (hk & 8) ? 0 : 1448,
				      (hk & 16) ? lv : 34, 16, 0};
	struct buf b[4];
	uint64_t gpa;

	if (!g.q[i].rings)
		return;
	if ((hk & 7) == 7)
		memset(&h, fill, sizeof(h));
	memcpy(pkt, &h, hl);
	build_frame(pkt + hl, frame, hk >> 5, fill);
	gpa = dalloc(total, opts >> 6);
	gwrite(gpa, pkt, total);
	n = 1 + (opts & 3);
	for (unsigned j = 0; j < n; j++)
		b[j] = (struct buf){gpa + j * (total / n),
				    (uint32_t)(j + 1 < n ? total / n : total - j * (total / n)), false};
	post(i, b, n, opts & 16, opts & 32);
}

static void op_post_rx(struct in *in)
{
	unsigned i = u8(in) % g.nq, count = 1 + u8(in) % 64;
	uint8_t opts = u8(in);
	uint16_t sv = u16(in);
	uint32_t size = (opts & 3) == 0 ? 64 + sv % 2048u : (opts & 3) == 1 ? sv
			: (opts & 3) == 2 ? 1518 + sv % 32u : sv % 16u;

	if (!g.q[i].rings)
		return;
	for (unsigned c = 0; c < count; c++) {
		struct buf b[5];
		unsigned n = 0, parts = (opts & 4) && size >= 4 ? 4 : 1;
		uint64_t gpa = dalloc(size, (opts & 16) ? 2 : (opts >> 7) & 1);

		if (opts & 32) /* a readable part first: RX ignores it */
			b[n++] = (struct buf){dalloc(16, 0), 16, false};
		for (unsigned j = 0; j < parts; j++)
			b[n++] = (struct buf){gpa + j * (size / parts),
					      j + 1 < parts ? size / parts : size - j * (size / parts), true};
		post(i, b, n, opts & 8, (opts & 64) && c + 1 == count);
	}
}

static void op_receive(struct in *in)
{
	uint8_t mode = u8(in);
	uint16_t lv = u16(in);
	uint8_t dst = u8(in), fill = u8(in), split = u8(in);
	size_t total = VNET_HDR_LEN + frame_len(mode & 3, lv, lv % 40u), a, c;
	int r;

	for (unsigned j = 0; j < VNET_HDR_LEN; j++)
		rxpkt[j] = (mode & 8) ? (uint8_t)(fill ^ j) : 0;
	build_frame(rxpkt + VNET_HDR_LEN, total - VNET_HDR_LEN, dst, fill);
	/* One piece, or three cut inside the header and the frame (empty pieces too). */
	a = (split >> 2) % 16;
	c = a + (size_t)(split >> 6) * 700u;
	a = a < total ? a : total;
	c = c < total ? c : total;
	g.rx_iov[0] = (struct iovec){rxpkt, split % 3 ? a : total};
	g.rx_iov[1] = (struct iovec){rxpkt + a, c - a};
	g.rx_iov[2] = (struct iovec){rxpkt + c, total - c};
	g.rx_iovcnt = split % 3 ? 3 : 1;
	r = vnet_dev_receive(g.dev, g.rx_iov, g.rx_iovcnt);
	CHECK(r == 0 || r == 1, "receive: bad return value");
	g.rx_pending = r == 0;
	if (mode & 16)
		vnet_dev_rx_flush(g.dev);
}

/* The tap backend's path: reserve guest buffers, readv() into them, commit what was read. */
static void direct_once(uint8_t mode, uint16_t ml, uint16_t lv, uint8_t fill)
{
	uint16_t pushed;
	uint8_t nb[2] = {0, 0};
	size_t max_len = (mode & 3) == 0 ? 0 : (mode & 3) == 1 ? ml
			 : (mode & 3) == 2 ? VNET_HDR_LEN + VNET_MAX_FRAME : 4u * ml;
	const struct iovec *iov = NULL;
	struct vnet_queue *q0 = vnet_dev_queue(g.dev, 0);
	size_t sum = 0, len, wlen;
	uint64_t total = 0;
	unsigned k;
	int n = vnet_dev_rx_reserve(g.dev, max_len, &iov);

	CHECK(n >= -1 && n <= VNET_RX_CACHE_IOV, "reserve: bad iovec count");
	for (int j = 0; j < n; j++) {
		CHECK(iov[j].iov_len > 0, "reserve: empty iovec");
		sum += iov[j].iov_len;
	}
	if (n <= 0)
		return;
	CHECK(sum >= max_len && sum >= VNET_HDR_LEN + 14, "reserve: fewer bytes than asked for");
	len = (mode & 12) == 0 ? 26 + lv % (sum - 25) /* fits */ : (mode & 12) == 4 ? sum
	      : (mode & 12) == 8 ? sum + 1 + lv % 64u /* the backend truncated it */ : lv % 26u;
	if (len <= sum && len > VNET_HDR_LEN + VNET_MAX_FRAME)
		len = VNET_HDR_LEN + VNET_MAX_FRAME; /* no tap reads more than one frame */
	/* The backend may write anywhere in the reservation. */
	for (size_t j = 0, done = 0; j < (size_t)n; done += iov[j++].iov_len) {
		uint8_t *p = iov[j].iov_base;

		if (done < TOUCH_MAX)
			memset(p, fill, iov[j].iov_len);
		p[0] = p[iov[j].iov_len - 1] = fill;
	}
	memset(pkt, 0, VNET_HDR_LEN);
	pkt[0] = fill & 1;        /* NEEDS_CSUM as tun may set it */
	pkt[10] = pkt[11] = 0xee; /* num_buffers: tun leaves it to the device */
	wlen = len < sum ? len : sum;
	wlen = wlen < PKT_MAX ? wlen : PKT_MAX;
	build_frame(pkt + VNET_HDR_LEN, wlen > VNET_HDR_LEN ? wlen - VNET_HDR_LEN : 0, mode >> 4, fill);
	iov_copy_to(iov, (unsigned)n, 0, pkt, wlen);
	if (mode & 0x40)
		return; /* readv() found nothing: the reservation waits for the next packet */
	pushed = q0->vq.used_idx;
	vnet_dev_rx_commit(g.dev, len);
	k = (uint16_t)(q0->vq.used_idx - pushed);
	if (k) {
		CHECK(len >= VNET_HDR_LEN + 14 && len <= sum, "commit: completed a packet it must drop");
		iov_copy_from(iov, (unsigned)n, 10, nb, 2); /* the device wrote the header last */
		CHECK(get_le16(nb) == (has(VIRTIO_NET_F_MRG_RXBUF) ? k : 1),
		      "commit: num_buffers in the guest's header is not the number of buffers used");
		for (unsigned j = 0; j < k && k <= g.num; j++)
			total += g.td->vq[0].used->ring[(uint16_t)(pushed + j) & (g.num - 1)].len;
		CHECK(k > g.num || total == len, "commit: used lengths do not add up to the packet");
	}
	if (mode & 0x80)
		vnet_dev_rx_flush(g.dev);
}

static void op_direct(struct in *in)
{
	uint8_t mode = u8(in);
	uint16_t ml = u16(in), lv = u16(in);
	uint8_t fill = u8(in), reps = 1 + u8(in) % 32;

	for (unsigned r = 0; r < reps; r++) /* packet after packet: the reservation carries over */
		direct_once(mode, ml, (uint16_t)(lv + 7 * r), fill);
}

/* The clock moves; expired timers fire like a timerfd's; none may come back already expired. */
static void advance(uint64_t ns)
{
	g.td->now += ns;
	for (bool fired = true; fired;) {
		fired = false;
		for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
			if (!g.td->deadline[i] || g.td->deadline[i] > g.td->now)
				continue;
			g.td->deadline[i] = 0;
			vnet_dev_timer_expired(g.dev, i);
			CHECK(!g.td->deadline[i] || g.td->deadline[i] > g.td->now,
			      "timer re-armed in the past after it fired: the event loop would spin");
			fired = true;
		}
	}
}

/* Coalescing: host for one queue / one kind, guest TX_SET / RX_SET / VQ_SET. */
static void op_coal(struct in *in)
{
	uint8_t mode = u8(in), qs = u8(in), cmd[14] = {VIRTIO_NET_CTRL_NOTF_COAL}, out[16];
	uint16_t mp = u16(in), us = u16(in);
	struct coal_params p = {(mode & 4) ? mp : mp % 8u,
				(mode & 8) ? 0xffffffffu - us : (mode & 16) ? 0 : us};
	unsigned qi = qs % (g.nq + 1), off = (mode & 3) == 2 ? 2 : 6;
	size_t written;
	int r;

	if ((mode & 0xa0) == 0xa0) {
		struct vnet_stall_guard sg = {(mode & 4) != 0, mp * 16u, us % 2048u};

		vnet_dev_set_stall_guard(g.dev, &sg);
		return;
	}
	if (mode & 0x80) {
		bool kind = (mode & 2) != 0, ok = kind ? qs % 3 != VNET_QUEUE_CTRL
						       : qi < g.nq && vnet_dev_queue(g.dev, qi)->kind !=
									   VNET_QUEUE_CTRL;

		r = vnet_dev_host_adaptive(g.dev, kind ? -1 : (int)qi,
					   (enum vnet_queue_kind)(qs % 3), (mode & 4) != 0);
		CHECK(r == (ok ? 0 : -1), "host adaptive: wrong answer for the queue or kind");
		return;
	}
	if ((mode & 3) < 2) { /* a data queue, or every queue of a data kind: 0; else -1 */
		bool ok = (mode & 3) ? qs % 3 != VNET_QUEUE_CTRL
				     : qi < g.nq && vnet_dev_queue(g.dev, qi)->kind != VNET_QUEUE_CTRL;

		r = vnet_dev_host_coalesce(g.dev, (mode & 3) ? -1 : (int)qi, (enum vnet_queue_kind)(qs % 3), &p);
		CHECK(r == (ok ? 0 : -1), "host coalesce: wrong answer for the queue or kind");
		return;
	}
	cmd[1] = off == 6 ? VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET
		 : (qs & 1) ? VIRTIO_NET_CTRL_NOTF_COAL_RX_SET : VIRTIO_NET_CTRL_NOTF_COAL_TX_SET;
	put_le16(cmd + 2, (uint16_t)qi); /* VQ_SET: vq_index, reserved */
	put_le32(cmd + off, p.max_packets);
	put_le32(cmd + off + 4, p.max_usecs);
	r = vnet_dev_ctrl_execute(g.dev, cmd, off + 8, out, sizeof(out), &written);
	CHECK(r == VIRTIO_NET_OK || r == VIRTIO_NET_ERR, "control: bad ack");
}

/* A control command on the control queue (readable command, writable ack + result). */
static void op_ctrl(struct in *in)
{
	uint8_t cmd[10], out[16], ack = 0xee;
	unsigned len, olen;
	size_t written;
	struct buf b[2];

	cmd[0] = u8(in) % 7;
	cmd[1] = u8(in) % 4;
	len = 2 + u8(in) % 9;
	for (unsigned j = 2; j < 10; j++)
		cmd[j] = u8(in);
	olen = 1 + u8(in) % 17;
	if (g.ctrl_q == ~0u) {
		(void)vnet_dev_ctrl_execute(g.dev, cmd, len, out, sizeof(out), &written);
		return;
	}
	b[0] = (struct buf){dalloc(len, 0), len, false};
	b[1] = (struct buf){dalloc(olen, 0), olen, true};
	gwrite(b[0].gpa, cmd, len);
	gwrite(b[1].gpa, &ack, 1);
	post(g.ctrl_q, b, 2, false, true);
}

/* ---- Hostile ring writes and the dispatcher ---------------------------------------------- */

static void run_op(unsigned op, struct in *in)
{
	struct fake_vq *f = NULL;
	uint8_t m;
	uint16_t v, w;

	if (op <= OP_FLAGS && op != OP_TABLE) { /* [q] first: queue q's rings (none: ignored) */
		v = u8(in) % g.nq;
		f = g.q[v].rings ? &g.td->vq[v] : NULL;
	}
	switch (op) {
	case OP_DESC:
		v = u16(in);
		desc_make(in, f ? (void *)&f->desc[v % g.num] : scratch); /* no rings: read, ignore */
		break;
	case OP_TABLE:
		desc_make(in, fake_mem_host(&g.td->mem, g.tab + 16ull * (u16(in) % TAB_ENTRIES)));
		break;
	case OP_AVAIL:
		v = u16(in);
		w = u16(in);
		if (f) /* mostly heads in range (or just past it), else anything */
			f->avail->ring[v & (g.num - 1)] = (w & 0x8000) ? w : (uint16_t)(w % (g.num + 1u));
		break;
	case OP_AVAIL_IDX:
		m = u8(in);
		v = u16(in);
		if (!f)
			break;
		w = f->avail->idx;
		w = (m & 3) == 0 ? v : (m & 3) == 1 ? (uint16_t)(w + v % (g.num + 1u))
		    : (m & 3) == 2 ? (uint16_t)(w + g.num + 1u + v % 64u) : (uint16_t)(w - 1 - v % 64u);
		set_avail_idx((unsigned)(f - g.td->vq), w);
		break;
	case OP_FLAGS:
		v = u16(in);
		m = u8(in);
		w = u16(in);
		if (f)
			f->avail->flags = v;
		if (f && !(m & 2)) /* used_event: near the used index, or anything */
			f->avail->ring[g.num] = (m & 1) ? w : (uint16_t)(f->used->idx + w % 32u - 16);
		break;
	case OP_POST_TX: op_post_tx(in); break;
	case OP_POST_RX: op_post_rx(in); break;
	case OP_KICK: vnet_dev_kick(g.dev, u8(in) % (g.nq + 1)); break;
	case OP_RUN: td_run_scheduled(g.td); break;
	case OP_RECEIVE: op_receive(in); break;
	case OP_DIRECT: op_direct(in); break;
	case OP_FLUSH: vnet_dev_rx_flush(g.dev); break;
	case OP_ADVANCE:
		m = u8(in);
		v = u16(in);
		advance((m & 3) == 0 ? v : (m & 3) == 1 ? v * 1000ull : (m & 3) == 2 ? v * 1000000ull : 0);
		break;
	case OP_COAL: op_coal(in); break;
	case OP_BACKEND:
		m = u8(in);
		*((m & 1) ? &g.tx_fail : &g.td->tx_eagain) = u8(in);
		g.rx_more ^= (m & 2) != 0;
		if (m & 4) /* link down (packets dropped) or up again */
			vnet_dev_attach_backend(g.dev, (g.detached = !g.detached) ? NULL : &fz_backend_ops,
						g.detached ? NULL : &g.td->be);
		break;
	case OP_RESUME:
		m = u8(in);
		g.td->tx_eagain = (m & 1) ? 0 : g.td->tx_eagain;
		g.tx_fail = (m & 2) ? 0 : g.tx_fail;
		vnet_dev_tx_resume(g.dev);
		break;
	case OP_ENABLE:
		m = u8(in);
		vnet_dev_queue_enable(g.dev, m % (g.nq + 1), u8(in) & 1);
		break;
	case OP_STOP: op_stop(in); break;
	case OP_RESET: op_reset(in); break;
	default: op_ctrl(in); break;
	}
}

static uint64_t features_from(uint8_t fb, unsigned pairs)
{
	static const uint64_t by_bit[8] = {
	    BIT_ULL(VIRTIO_NET_F_MRG_RXBUF), BIT_ULL(VIRTIO_RING_F_EVENT_IDX),
	    BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC), 0,
	    BIT_ULL(VIRTIO_NET_F_CTRL_VQ) | BIT_ULL(VIRTIO_NET_F_CTRL_RX) | BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR),
	    BIT_ULL(VIRTIO_NET_F_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL),
	    BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6),
	    BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) |
		BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) | BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS)};
	uint64_t f = BIT_ULL(VIRTIO_NET_F_MAC) | BIT_ULL(VIRTIO_NET_F_STATUS) |
		     ((fb & 8) ? 0 : BIT_ULL(VIRTIO_F_VERSION_1)) | (pairs > 1 ? BIT_ULL(VIRTIO_NET_F_MQ) : 0);

	for (unsigned i = 0; i < 8; i++)
		f |= (fb >> i & 1) ? by_bit[i] : 0;
	return f;
}

/* LLVMFuzzerTestOneInput() - one device (reused per configuration), at most MAX_OPS ops. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct test_dev *cache[2][3][2];
	struct in in = {data, size, 2};
	struct snap s[VNET_MAX_QUEUES];
	unsigned pairs, layout, timer, nops = 0;
	struct test_dev **slot;

	if (size < 2)
		return 0;
	log_threshold = LOG_ERR;
	pairs = (data[1] & 16) ? 2 : 1;
	layout = ((data[1] >> 5) & 3) % 3;
	timer = data[1] >> 7;
	slot = &cache[pairs - 1][layout][timer];
	memset(&g, 0, sizeof(g));
	g.num = (uint16_t)(1u << ((data[1] & 15) % 10));
	g.want = features_from(data[0], pairs);
	if (!*slot) {
		struct vnet_dev_params p;

		td_mem_size = MEM_SIZE;
		td_default_params(&p, (uint16_t)pairs);
		p.tx_mode = timer ? VNET_TX_TIMER : VNET_TX_KICK;
		p.tx_timer_usecs = 20;
		p.rss = true; /* 20-byte headers and RSS steering when the input negotiates them */
		*slot = td_create(&p, g.want);
		td_set_mem_layout(*slot, (enum fake_mem_layout)layout);
		vnet_dev_attach_backend((*slot)->dev, &fz_backend_ops, &(*slot)->be);
	}
	g.td = *slot;
	g.dev = g.td->dev;
	vnet_dev_attach_backend(g.dev, &fz_backend_ops, &g.td->be);
	/* The adjacent layout's host gap is poisoned, but for td_recycle()'s memset. */
	ASAN_UNPOISON_MEMORY_REGION(g.td->mem.buf + g.td->mem.size / 2, g.td->mem.host_gap);
	td_recycle(g.td, g.want);
	ASAN_POISON_MEMORY_REGION(g.td->mem.buf + g.td->mem.size / 2, g.td->mem.host_gap);
	td_run_scheduled(g.td); /* entries the last input left in the run queue */
	memset(g.td->queue_errors, 0, sizeof(g.td->queue_errors));
	driver_start();
	check_op(s, false);
	/* Port settings outlive resets: every input starts from the same ones. */
	vnet_dev_set_stall_guard(g.dev, &(struct vnet_stall_guard){true, 4096, 100});
	vnet_dev_host_adaptive(g.dev, -1, VNET_QUEUE_RX, false);
	vnet_dev_host_adaptive(g.dev, -1, VNET_QUEUE_TX, false);
	while (in.off < in.n && nops++ < MAX_OPS) {
		g.last_op = u8(&in) % OP_COUNT;
		run_op(g.last_op, &in);
		check_op(s, true);
	}
	return 0;
}
