/* SPDX-License-Identifier: MIT */
/* fuzz_vhost_proto.c - libFuzzer: whole hostile frontends and guests against vhost-user, device and switch. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_proto.h"
#include "vhost/vhost_user_migrate.h"
#include "lib/virtio_net_defs.h"

/*
 * Input: [config] then operations, each [op][arguments]. The op byte's low 6 bits pick the
 * operation (modulo FP_OPS), its top 2 bits the port (0..2) it acts on. config: bit 0 two
 * switch workers (port 2 on the second: the cross-worker queue), 1 mac-change=on for port 0,
 * 2 tx-mode timer, 3 RSS offered, 4 port 1 max-mem=1M, 5 storm control on port 2.
 * Operations speak the protocol as a VMM does (typed messages with real fds, whole ring set-ups)
 * or break it (raw messages, odd fds, hostile descriptors); guests queue frames, post buffers,
 * send control commands and race the device from a second vCPU (fp_race_set()).
 *
 * Oracles besides ASan/UBSan and libFuzzer's timeout and leak checks:
 *  1. after the operations, with every other frontend still connected, a fresh frontend on
 *     another port still gets SET_MEM_TABLE accepted (nothing daemon-wide is left exhausted by
 *     the others' mappings);
 *  2. every frame delivered to a port's guest carries a source MAC that port security admitted
 *     for its sender, passes its sender's ARP/ND, ips= and access-port checks as delivered,
 *     and no more frames of a MAC arrive than its port sent (fuzz_proto_world.c);
 *  3. no fd is left open once every connection is closed.
 * Everything runs in one thread on a fake clock: an input replays exactly.
 */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum fp_op {
	OP_HELLO,     /* [pf][pf2]: GET_FEATURES, SET_OWNER, GET/SET_PROTOCOL_FEATURES, ... */
	OP_FEATURES,  /* [f1][f2]: SET_FEATURES */
	OP_MEM,	      /* [kind][arg]: memory table, regions added and removed */
	OP_RING,      /* [q][what][v16]: one SET/GET_VRING_* message */
	OP_SETUPQ,    /* [q][num][mode]: NUM, BASE, ADDR, KICK, CALL, ENABLE */
	OP_START,     /* [num][mode]: every queue the features give */
	OP_TX,	      /* fp_op_tx() */
	OP_RX,	      /* fp_op_rx() */
	OP_CTRL,      /* fp_op_ctrl() */
	OP_KICK,      /* [q] */
	OP_POKE,      /* [off16][len][bytes]: the guest writes its memory */
	OP_RACE,      /* [11 bytes]: the second vCPU's next rewrite */
	OP_RECONNECT, /* the frontend goes away and comes back */
	OP_STATE,     /* [dir][mut][flags][off16]: DEVICE_STATE save or load */
	OP_RAW,	      /* [req][flags][size][fds][size bytes]: any message */
	OP_LOG,	      /* [size][flags]: SET_LOG_BASE, LOG_ALL on and off */
	OP_RARP,      /* [sel][6 bytes] */
	OP_CONFIG,    /* [dir][off][len][6 bytes]: SET_CONFIG / GET_CONFIG */
	OP_TIME,      /* [dt16]: the clock moves dt us, timers fire */
	OP_FILL,      /* [spare][n16]: a spare frontend adds n one-page regions */
	OP_DESC,      /* fp_op_desc() */
	OP_AVAIL,     /* fp_op_avail() */
	OP_PUMP,      /* [rounds] */
	OP_BOOT,      /* [f1][f2][pf][num][layout]: HELLO, FEATURES, MEM, START */
	OP_MSG,	      /* [req][arg]: one more message of the protocol, well-formed */
	FP_OPS
};

#define MAX_OPS 256

static uint32_t ack_flag(const struct fp_port *p)
{
	return p->proto & BIT_ULL(VU_PROTOCOL_F_REPLY_ACK) ? VU_FLAG_NEED_REPLY : 0;
}

static void send_u64(struct fp_port *p, uint32_t req, uint64_t v, uint32_t flags)
{
	fp_send(p, req, flags, &v, 8, NULL, 0);
}

static void send_none(struct fp_port *p, uint32_t req)
{
	fp_send(p, req, 0, NULL, 0, NULL, 0);
}

/* ---- Features ---- */

static uint64_t features_of(const struct fp_port *p, uint8_t f1, uint8_t f2)
{
	uint64_t f = BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_NET_F_MAC) |
		     BIT_ULL(VIRTIO_NET_F_STATUS);

	if (f1 & 1)
		f |= BIT_ULL(VIRTIO_F_RING_PACKED);
	if (f1 & 2)
		f |= BIT_ULL(VIRTIO_F_IN_ORDER);
	if (f1 & 4)
		f |= BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	if (f1 & 8)
		f |= BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC);
	if (f1 & 16)
		f |= BIT_ULL(VIRTIO_NET_F_MRG_RXBUF);
	if (f1 & 32)
		f |= BIT_ULL(VIRTIO_NET_F_CTRL_VQ) | BIT_ULL(VIRTIO_NET_F_CTRL_RX) |
		     BIT_ULL(VIRTIO_NET_F_CTRL_MAC_ADDR);
	if (f1 & 64)
		f |= BIT_ULL(VIRTIO_NET_F_MQ);
	if (f1 & 128)
		f |= BIT_ULL(VHOST_F_LOG_ALL);
	if (f2 & 1)
		f |= BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES);
	if (f2 & 2)
		f |= BIT_ULL(VIRTIO_NET_F_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL);
	if (f2 & 4)
		f &= ~BIT_ULL(VIRTIO_F_VERSION_1);
	if (f2 & 8)
		f |= BIT_ULL(VIRTIO_NET_F_MTU);
	if (f2 & 16)
		f |= BIT_ULL(VIRTIO_NET_F_RSS) | BIT_ULL(VIRTIO_NET_F_HASH_REPORT);
	if (f2 & 32)
		f |= BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS);
	if (f2 & 64)
		f |= BIT_ULL(VIRTIO_NET_F_GUEST_CSUM); /* not offered by a switch port */
	if (f2 & 128)
		f |= p->offered;
	return f;
}

static void set_features(struct fp_port *p, uint64_t f)
{
	send_u64(p, VU_SET_FEATURES, f, ack_flag(p));
	/* Without REPLY_ACK the frontend cannot know; it believes it was taken. */
	if (!ack_flag(p) || p->last_ack == 0) {
		p->features = f;
		p->features_sent = true;
	}
}

static uint64_t pf_of(uint8_t pf, uint8_t pf2)
{
	static const uint8_t bits[8] = {
		VU_PROTOCOL_F_MQ,	   VU_PROTOCOL_F_LOG_SHMFD,	VU_PROTOCOL_F_RARP,
		VU_PROTOCOL_F_REPLY_ACK,   VU_PROTOCOL_F_BACKEND_REQ,	VU_PROTOCOL_F_CONFIG,
		VU_PROTOCOL_F_RESET_DEVICE, VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS};
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		if (pf >> i & 1)
			v |= BIT_ULL(bits[i]);
	if (pf2 & 1)
		v |= BIT_ULL(VU_PROTOCOL_F_DEVICE_STATE);
	if (pf2 & 2)
		v |= BIT_ULL(VU_PROTOCOL_F_STATUS); /* not offered */
	return v;
}

static void send_fd_msg(struct fp_port *p, uint32_t req, uint64_t v, enum fp_fd_kind kind)
{
	int keep, fd = fp_make_fd(kind, &keep, NULL);

	fp_send(p, req, 0, &v, 8, &fd, fd >= 0);
	fp_close_own(&fd);
	if (keep >= 0)
		fp_close_own(&keep);
}

static void op_hello(struct fp_port *p, uint8_t pf, uint8_t pf2)
{
	uint64_t want = pf_of(pf, pf2), offered;

	send_none(p, VU_GET_FEATURES);
	if (!(pf2 & 4))
		send_none(p, VU_SET_OWNER);
	send_none(p, VU_GET_PROTOCOL_FEATURES);
	offered = p->reply_req == VU_GET_PROTOCOL_FEATURES ? p->reply_u64 : ~0ull;
	send_u64(p, VU_SET_PROTOCOL_FEATURES, want, 0);
	p->proto = want & offered; /* what vnetd takes */
	send_none(p, VU_GET_QUEUE_NUM);
	if (p->proto & BIT_ULL(VU_PROTOCOL_F_BACKEND_REQ))
		send_fd_msg(p, VU_SET_BACKEND_REQ_FD, 0, FP_FD_SOCKET);
}

/* ---- Memory ---- */

static const uint64_t cuts[4] = {FP_RX_BASE, FP_TX_BASE + 3 * FP_TX_SLOT + 12 + 3, 0x10000,
				 0x3000};

static struct vu_mem_region region(const struct fp_port *p, uint64_t gpa, uint64_t size,
				   uint64_t off)
{
	return (struct vu_mem_region){gpa, size, FP_UVA(p->idx) + gpa, off};
}

static void mem_table(struct fp_port *p, const struct vu_mem_region *r, unsigned n, const int *fds)
{
	struct vu_mem_table t = {.nregions = n};

	memcpy(t.regions, r, sizeof(r[0]) * n);
	fp_send(p, VU_SET_MEM_TABLE, ack_flag(p), &t, 8 + (uint32_t)sizeof(r[0]) * n, fds, n);
}

static void mem_reg(struct fp_port *p, uint32_t req, struct vu_mem_region r, int fd)
{
	struct vu_mem_reg m = {.region = r};

	fp_send(p, req, ack_flag(p), &m, sizeof(m), &fd, fd >= 0);
}

static void op_mem(struct fp_port *p, uint8_t kind, uint8_t arg)
{
	uint64_t h = cuts[arg & 3];
	int fds[VU_MAX_REGIONS];
	struct vu_mem_region r[VU_MAX_REGIONS];

	for (unsigned i = 0; i < VU_MAX_REGIONS; i++)
		fds[i] = p->memfd;
	switch (kind & 7) {
	case 0:
		r[0] = region(p, 0, FP_MEM_SIZE, 0);
		mem_table(p, r, 1, fds);
		break;
	case 1:
		r[0] = region(p, 0, h, 0);
		r[1] = region(p, h, FP_MEM_SIZE - h, h);
		mem_table(p, r, 2, fds);
		break;
	case 2:
		r[0] = region(p, 0, h, 0);
		mem_table(p, r, 1, fds);
		mem_reg(p, VU_ADD_MEM_REG, region(p, h, FP_MEM_SIZE - h, h), p->memfd);
		break;
	case 3: { /* the whole guest (QEMU with memory slots), or a region of its own file */
		int keep, fd;
		uint64_t gpa = 0x10000000ull + 0x100000ull * p->regions_added++;

		if (arg & 0x40) {
			mem_reg(p, VU_ADD_MEM_REG, region(p, 0, FP_MEM_SIZE, 0), p->memfd);
			break;
		}
		fd = fp_make_fd(FP_FD_MEMFD, &keep, NULL);
		mem_reg(p, VU_ADD_MEM_REG, region(p, gpa, arg & 0x80 ? 1 : 4096, 0), fd);
		fp_close_own(&fd);
		W.fills++;
		break;
	}
	case 4:
		mem_reg(p, VU_REM_MEM_REG, region(p, h, FP_MEM_SIZE - h, h), -1);
		break;
	case 5: /* a region larger than its file, or at an odd offset of it */
		r[0] = region(p, 0, arg & 1 ? 2ull * FP_MEM_SIZE : FP_MEM_SIZE - 4096,
			      arg & 2 ? 4096 : arg & 4 ? 1 + (arg >> 3) % 15 : 0);
		mem_table(p, r, 1, fds);
		break;
	case 6: { /* n pieces of the same file */
		unsigned n = 2 + arg % 7;
		uint64_t piece = (FP_MEM_SIZE / n) & ~4095ull, at = 0;

		for (unsigned i = 0; i < n; i++) {
			uint64_t len = i + 1 == n ? FP_MEM_SIZE - at : piece;

			r[i] = region(p, at, len, at);
			at += len;
		}
		mem_table(p, r, n, fds);
		break;
	}
	default: /* user addresses not the rings', regions on top of each other, bad numbers */
		r[0] = region(p, 0, FP_MEM_SIZE, 0);
		switch (arg & 7) {
		case 1:
			r[1] = r[0];
			mem_table(p, r, 2, fds);
			return;
		case 2: r[0].memory_size = 0; break;
		case 3: r[0].guest_phys_addr = UINT64_MAX - 4095; break;
		case 4: r[0].userspace_addr = UINT64_MAX - 4095; break;
		case 5: r[0].mmap_offset = UINT64_MAX - 4095; break;
		case 6: r[0].memory_size = 1ull << 62; break;
		default: r[0].userspace_addr += 4096ull * (1 + arg); break;
		}
		if (arg & 8)
			mem_reg(p, VU_ADD_MEM_REG, r[0], p->memfd);
		else
			mem_table(p, r, 1, fds);
		break;
	}
}

/* ---- Rings ---- */

static uint16_t num_of(uint8_t sel, bool packed)
{
	static const uint16_t nums[8] = {64, 256, 16, 8, 4, 2, 1, 128};

	if (packed && (sel & 8))
		return (uint16_t)(1 + (sel >> 4) * 17 % 255); /* any size: packed rings */
	return nums[sel & 7];
}

static void ring_state(struct fp_port *p, uint32_t req, unsigned q, uint32_t num)
{
	struct vu_vring_state s = {q, num};

	fp_send(p, req, req == VU_GET_VRING_BASE ? 0 : ack_flag(p), &s, sizeof(s), NULL, 0);
}

static void ring_addr(struct fp_port *p, unsigned q, uint16_t v)
{
	uint64_t base = FP_UVA(p->idx) + FP_RING(v & 8 ? (q + 1) % FP_RING_Q : q);
	struct vu_vring_addr a = {
		.index = q,
		.flags = v & 1 ? VU_VRING_F_LOG : 0,
		.desc = base + (v & 2 ? 8 : 0) + (v & 4 ? 1ull << 40 : 0),
		.used = base + FP_USED_OFF,
		.avail = base + FP_AVAIL_OFF,
		.log = FP_RING(q) + FP_USED_OFF,
	};

	fp_send(p, VU_SET_VRING_ADDR, ack_flag(p), &a, sizeof(a), NULL, 0);
}

static void ring_fd(struct fp_port *p, uint32_t req, unsigned q, enum fp_fd_kind kind, bool nofd)
{
	uint64_t v = q | (nofd ? VU_VRING_NOFD : 0);
	int keep = -1, fd = -1, *slot = NULL;
	uint8_t kk = 0;

	if (!nofd)
		fd = fp_make_fd(kind, &keep, &kk);
	fp_send(p, req, ack_flag(p), &v, 8, &fd, fd >= 0);
	if (fd != keep)
		fp_close_own(&fd);
	if (q < FP_RING_Q)
		slot = req == VU_SET_VRING_KICK ? &p->q[q].kick
		       : req == VU_SET_VRING_CALL ? &p->q[q].call
						  : &p->q[q].err;
	if (!slot) {
		fp_close_own(&keep);
		return;
	}
	fp_close_own(slot);
	*slot = keep;
	if (req == VU_SET_VRING_KICK)
		p->q[q].kick_kind = kk;
}

static void setup_q(struct fp_port *p, unsigned q, uint8_t numsel, uint8_t mode)
{
	bool packed = p->features & BIT_ULL(VIRTIO_F_RING_PACKED);
	uint16_t num = num_of(numsel, packed);
	struct fp_q *d = &p->q[q % FP_RING_Q];
	bool restart = (mode & 1) && d->num == num && d->packed == packed && d->base_valid;
	uint32_t base = restart ? d->base : packed ? 0x80008000u : 0;

	if (q >= FP_RING_Q)
		return;
	if (!restart)
		fp_ring_reset(p, q, packed, num);
	d->in_order = p->features & BIT_ULL(VIRTIO_F_IN_ORDER);
	ring_state(p, VU_SET_VRING_NUM, q, num);
	ring_state(p, VU_SET_VRING_BASE, q, base);
	d->set = true;
	ring_addr(p, q, p->features & BIT_ULL(VHOST_F_LOG_ALL) ? 1 : 0);
	ring_fd(p, VU_SET_VRING_KICK, q, FP_FD_EVENTFD, false);
	ring_fd(p, VU_SET_VRING_CALL, q, mode & 2 ? FP_FD_PIPE_W : FP_FD_EVENTFD, false);
	if (p->features & BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES))
		ring_state(p, VU_SET_VRING_ENABLE, q, 1);
}

static unsigned queues_of(const struct fp_port *p)
{
	return 2u * (p->features & BIT_ULL(VIRTIO_NET_F_MQ) ? FP_PAIRS : 1) +
	       (p->features & BIT_ULL(VIRTIO_NET_F_CTRL_VQ) ? 1 : 0);
}

static void op_start(struct fp_port *p, uint8_t numsel, uint8_t mode)
{
	for (unsigned q = 0; q < queues_of(p); q++)
		setup_q(p, q, numsel, mode);
}

static void op_ring(struct fp_port *p, struct fp_in *in)
{
	unsigned q = in8(in) % 10, what = in8(in);
	uint16_t v = in16(in);
	struct fp_q *d = &p->q[q % FP_RING_Q];

	switch (what & 7) {
	case 0: {
		bool packed = p->features & BIT_ULL(VIRTIO_F_RING_PACKED);
		uint32_t num = v & 0x8000 ? v & 0x7fffu : num_of((uint8_t)v, packed);

		ring_state(p, VU_SET_VRING_NUM, q, num);
		if (q < FP_RING_Q && (!d->set || d->packed != packed || d->num != num))
			fp_ring_reset(p, q, packed, (uint16_t)(num <= FP_QMAX ? num : 0));
		break;
	}
	case 1:
		ring_addr(p, q, v);
		if (q < FP_RING_Q)
			d->set = true;
		break;
	case 2: {
		uint32_t base = v & 1 && d->base_valid ? d->base
				: p->features & BIT_ULL(VIRTIO_F_RING_PACKED) ? 0x80008000u | (v >> 1)
									     : (uint32_t)(v >> 1);

		if (v & 0x8000)
			base = (uint32_t)v << 16 | v;
		ring_state(p, VU_SET_VRING_BASE, q, base);
		break;
	}
	case 3: ring_fd(p, VU_SET_VRING_KICK, q, (enum fp_fd_kind)(v % FP_FD_KINDS), v & 8); break;
	case 4: ring_fd(p, VU_SET_VRING_CALL, q, (enum fp_fd_kind)(v % FP_FD_KINDS), v & 8); break;
	case 5: ring_fd(p, VU_SET_VRING_ERR, q, (enum fp_fd_kind)(v % FP_FD_KINDS), v & 8); break;
	case 6: ring_state(p, VU_SET_VRING_ENABLE, q, v & 1); break;
	default: ring_state(p, VU_GET_VRING_BASE, q, 0); break;
	}
}

/* ---- Device state, log, RARP, config ---- */

static void op_state(struct fp_port *p, struct fp_in *in)
{
	uint8_t dir = in8(in), mv = in8(in), fl = in8(in);
	uint16_t mo = in16(in);
	struct vu_transfer_state t = {dir & 1 ? VU_TRANSFER_STATE_LOAD : VU_TRANSFER_STATE_SAVE,
				      fl & 8 ? 1u : 0u};
	int keep, fd;

	if (dir & 2)
		fd = fp_make_fd((enum fp_fd_kind)((fl >> 4) % FP_FD_KINDS), &keep, NULL);
	else
		fd = fp_make_fd(t.direction == VU_TRANSFER_STATE_SAVE ? FP_FD_PIPE_W : FP_FD_PIPE_R,
				&keep, NULL);
	fp_send(p, VU_SET_DEVICE_STATE_FD, 0, &t, sizeof(t), &fd, fd >= 0);
	if (fd != keep)
		fp_close_own(&fd);
	fp_close_own(&p->state_fd);
	p->state_fd = keep;
	if (t.direction == VU_TRANSFER_STATE_SAVE) {
		size_t got = 0;

		for (unsigned k = 0; k < 8 && p->state_fd >= 0; k++) {
			ssize_t n = read(p->state_fd, W.state + got, sizeof(W.state) - got);

			if (n > 0)
				got += (size_t)n;
			else if (n == 0 || got == sizeof(W.state))
				break;
			fp_loop(1);
		}
		if (got)
			W.state_len = got;
		if (fl & 1)
			fp_close_own(&p->state_fd);
	} else if (p->state_fd >= 0) {
		size_t len;

		if (!W.state_len)
			W.state_len = vnet_dev_state_save(p->dev, W.state, VNET_STATE_MAX);
		len = W.state_len;
		if (fl & 4)
			W.state[mo % len] ^= mv;
		if (fl & 2)
			len = mo % (len + 64 < sizeof(W.state) ? len + 64 : sizeof(W.state));
		if (write(p->state_fd, W.state, len) < 0)
			(void)0; /* not a pipe we can write: the transfer fails, as it should */
		if (!(fl & 1))
			fp_close_own(&p->state_fd);
		fp_loop(2);
	}
	if (!(fl & 64))
		send_u64(p, VU_CHECK_DEVICE_STATE, 0, 0);
}

static void op_log(struct fp_port *p, uint8_t size, uint8_t fl)
{
	static const uint64_t sizes[4] = {4096, 65536, 1, 1u << 20};
	struct vu_log l = {.mmap_size = sizes[size & 3], .mmap_offset = fl & 2 ? 4096 : 0};
	int fd = fp_own_fd(memfd_create("fp-log", MFD_CLOEXEC));

	if (size & 4)
		l.mmap_size = 0;
	if (fd >= 0 && ftruncate(fd, (off_t)((fl & 1 ? l.mmap_size / 2 : l.mmap_size) +
					     l.mmap_offset)) < 0)
		fp_fail("ftruncate");
	fp_send(p, VU_SET_LOG_BASE, 0, &l, sizeof(l), &fd, fd >= 0);
	fp_close_own(&fd);
	if (fl & 4)
		set_features(p, p->features | BIT_ULL(VHOST_F_LOG_ALL));
	if (fl & 8)
		set_features(p, p->features & ~BIT_ULL(VHOST_F_LOG_ALL));
}

static void pick_mac(const struct fp_port *p, uint8_t sel, const uint8_t *raw, uint8_t mac[6])
{
	unsigned k = (unsigned)p->idx % FP_PORTS;

	switch (sel & 3) {
	case 0: memcpy(mac, fp_mac[k], 6); break;
	case 1: memcpy(mac, fp_mac[(k + 1 + (sel >> 2 & 1)) % FP_PORTS], 6); break;
	case 2: memcpy(mac, (const uint8_t[6]){0x01, 0x00, 0x5e, 0, 0, raw[5]}, 6); break;
	default: memcpy(mac, raw, 6); break;
	}
}

static void op_config(struct fp_port *p, struct fp_in *in)
{
	uint8_t dir = in8(in), off = in8(in), len = in8(in), raw[6];
	struct vu_config c = {0};

	for (unsigned i = 0; i < 6; i++)
		raw[i] = in8(in);
	if (dir & 1) {
		c.offset = off % 16;
		c.size = len % 9;
		if (dir & 2) {
			c.offset = 0, c.size = 6;
			pick_mac(p, dir >> 2, raw, c.region);
		} else {
			memcpy(c.region, raw, 6);
		}
		fp_send(p, VU_SET_CONFIG, ack_flag(p), &c, VU_CONFIG_HDR_SIZE + c.size, NULL, 0);
	} else {
		c.offset = off;
		c.size = len % 64;
		fp_send(p, VU_GET_CONFIG, 0, &c, VU_CONFIG_HDR_SIZE + c.size, NULL, 0);
	}
}

/* ---- Raw messages and the rest ---- */

/*
 * RAW: [req][flags][size][fds][size bytes]. fds: bits 0-1 how many (bit 5: 8 more, past what a
 * message may carry), bits 2-4 their kind, bit 6 the frontend hangs up right after, bit 7 nine
 * more payload bytes. flags bit 6 (no meaning on the wire): the header claims 3 more bytes than
 * follow; size 255: it claims 4096 (over any payload).
 */
static void op_raw(struct fp_port *p, struct fp_in *in)
{
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];
	uint32_t req = in8(in) % 48, flags = in8(in), size = in8(in), claim;
	uint8_t fdspec = in8(in);
	unsigned nfds = (fdspec & 3) + (fdspec & 0x20 ? 8 : 0);
	enum fp_fd_kind kind = (enum fp_fd_kind)((fdspec >> 2) % FP_FD_KINDS);
	int fds[FP_RAW_FDS], keep[FP_RAW_FDS];

	claim = size == 255 ? 4096 : size;
	if (fdspec & 0x80)
		size += 9, claim += 9;
	if (size > VU_MSG_MAX_PAYLOAD)
		size = VU_MSG_MAX_PAYLOAD;
	if (flags & 0x40)
		claim = size + 3;
	vu_msg_put_header(buf, req, flags, claim);
	for (uint32_t i = 0; i < size; i++)
		buf[VU_HDR_SIZE + i] = in8(in);
	for (unsigned i = 0; i < nfds; i++) {
		keep[i] = -1;
		if (kind == FP_FD_MEMFD && i == 0)
			fds[i] = p->memfd; /* the guest's own memory: a table that maps */
		else
			fds[i] = fp_make_fd(kind, &keep[i], NULL);
	}
	fp_send_raw(p, buf, VU_HDR_SIZE + size, fds, nfds);
	for (unsigned i = 0; i < nfds; i++) {
		if (fds[i] != p->memfd)
			fp_close_own(&fds[i]);
		if (keep[i] != fds[i])
			fp_close_own(&keep[i]);
	}
	if (fdspec & 0x40)
		fp_hangup(p);
}

static void op_fill(uint8_t spare, uint16_t n)
{
	struct fp_port *p = fp_port_get(FP_PORTS + spare % FP_SPARES);

	if (!p->connected)
		fp_connect(p);
	if (!p->features_sent) {
		send_none(p, VU_SET_OWNER);
		p->proto = BIT_ULL(VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS) | BIT_ULL(VU_PROTOCOL_F_REPLY_ACK);
		send_u64(p, VU_SET_PROTOCOL_FEATURES, p->proto, 0);
		send_u64(p, VU_SET_FEATURES, BIT_ULL(VIRTIO_F_VERSION_1), 0);
		p->features_sent = true;
	}
	/* One-byte regions until refused (a tenant at its cap gets nothing more by insisting). */
	for (unsigned i = 0; i < n % 512u && p->connected && W.fills < 20u * 512u; i++) {
		uint64_t gpa = 0x100000000ull + 0x2000ull * p->regions_added++;

		mem_reg(p, VU_ADD_MEM_REG, region(p, gpa, n & 0x8000 ? 4096 : 1, 0), p->memfd);
		W.fills++;
		if (p->last_ack != 0)
			break;
	}
}

static void op_msg(struct fp_port *p, uint8_t req, uint8_t arg)
{
	switch (req % 16) {
	case 0: send_none(p, VU_GET_FEATURES); break;
	case 1: send_none(p, VU_SET_OWNER); break;
	case 2: send_none(p, VU_GET_PROTOCOL_FEATURES); break;
	case 3:
		p->proto = pf_of(arg, 1);
		send_u64(p, VU_SET_PROTOCOL_FEATURES, p->proto, 0);
		break;
	case 4: send_none(p, VU_GET_QUEUE_NUM); break;
	case 5: send_fd_msg(p, VU_SET_BACKEND_REQ_FD, 0, FP_FD_SOCKET); break;
	case 6: send_none(p, VU_GET_MAX_MEM_SLOTS); break;
	case 7: send_u64(p, VU_NET_SET_MTU, arg & 1 ? 1500 : 9000u + arg, ack_flag(p)); break;
	case 8:
	case 9:
		fp_send(p, req % 16 == 8 ? VU_RESET_OWNER : VU_RESET_DEVICE, ack_flag(p), NULL, 0,
			NULL, 0);
		p->features_sent = false;
		break;
	case 10: {
		struct vu_config c = {.offset = 0, .size = arg % 32};

		fp_send(p, VU_GET_CONFIG, 0, &c, VU_CONFIG_HDR_SIZE + c.size, NULL, 0);
		break;
	}
	case 11: send_fd_msg(p, VU_SET_LOG_FD, 0, FP_FD_EVENTFD); break;
	case 12: send_u64(p, VU_CHECK_DEVICE_STATE, 0, 0); break;
	case 13: ring_state(p, VU_SET_VRING_ENDIAN, arg % 5, arg & 1); break;
	case 14: send_u64(p, VU_SET_STATUS, arg, ack_flag(p)); break;
	default: send_none(p, VU_GET_STATUS); break;
	}
}

static void run_op(struct fp_in *in)
{
	uint8_t b = in8(in);
	struct fp_port *p = &W.p[(b >> 6) % FP_PORTS];
	unsigned op = (b & 0x3f) % FP_OPS;

	if (op != OP_RECONNECT && op != OP_BOOT && !p->connected && op != OP_FILL) {
		fp_loop(1); /* a frontend that went away: its guest still runs */
	}
	switch (op) {
	case OP_HELLO: {
		uint8_t pf = in8(in), pf2 = in8(in);

		op_hello(p, pf, pf2);
		break;
	}
	case OP_FEATURES: {
		uint8_t f1 = in8(in), f2 = in8(in);

		set_features(p, features_of(p, f1, f2));
		break;
	}
	case OP_MEM: {
		uint8_t kind = in8(in), arg = in8(in);

		op_mem(p, kind, arg);
		break;
	}
	case OP_RING: op_ring(p, in); break;
	case OP_SETUPQ: {
		uint8_t q = in8(in), num = in8(in), mode = in8(in);

		setup_q(p, q % FP_RING_Q, num, mode);
		break;
	}
	case OP_START: {
		uint8_t num = in8(in), mode = in8(in);

		op_start(p, num, mode);
		break;
	}
	case OP_TX: fp_op_tx(p, in); break;
	case OP_RX: fp_op_rx(p, in); break;
	case OP_CTRL: fp_op_ctrl(p, in); break;
	case OP_KICK: fp_kick(p, in8(in) % FP_RING_Q); break;
	case OP_POKE: {
		uint16_t off = in16(in);
		uint8_t n = in8(in) % 17, v[16];

		for (unsigned i = 0; i < n; i++)
			v[i] = in8(in);
		fp_gwrite(p, 8ull * off % FP_MEM_SIZE, v, n);
		break;
	}
	case OP_RACE: {
		uint8_t v[11];

		for (unsigned i = 0; i < 11; i++)
			v[i] = in8(in);
		fp_race_set(v);
		break;
	}
	case OP_RECONNECT:
		fp_disconnect(p);
		fp_connect(p);
		break;
	case OP_STATE: op_state(p, in); break;
	case OP_RAW: op_raw(p, in); break;
	case OP_LOG: {
		uint8_t size = in8(in), fl = in8(in);

		op_log(p, size, fl);
		break;
	}
	case OP_RARP: {
		uint8_t sel = in8(in), raw[6], mac[8] = {0};
		uint64_t v;

		for (unsigned i = 0; i < 6; i++)
			raw[i] = in8(in);
		pick_mac(p, sel, raw, mac);
		memcpy(&v, mac, 8);
		send_u64(p, VU_SEND_RARP, v, ack_flag(p));
		fp_loop(2);
		break;
	}
	case OP_CONFIG: op_config(p, in); break;
	case OP_TIME:
		W.now += 1000ull * in16(in);
		switch_set_clock(W.sw, W.now);
		fp_loop(4);
		break;
	case OP_FILL: {
		uint8_t spare = in8(in);

		op_fill(spare, in16(in));
		break;
	}
	case OP_DESC: fp_op_desc(p, in); break;
	case OP_AVAIL: fp_op_avail(p, in); break;
	case OP_PUMP: fp_loop(1 + in8(in) % 8); break;
	case OP_BOOT: {
		uint8_t f1 = in8(in), f2 = in8(in), pf = in8(in), num = in8(in), layout = in8(in);

		fp_connect(p);
		op_hello(p, pf, 1);
		set_features(p, features_of(p, f1, f2));
		op_mem(p, layout & 7, layout >> 3);
		op_start(p, num, layout >> 6);
		break;
	}
	default: {
		uint8_t req = in8(in), arg = in8(in);

		op_msg(p, req, arg);
		break;
	}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fp_world_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fp_in in = {data, size, 0};
	struct fp_config cfg;
	uint8_t c;

	if (size < 2)
		return 0;
	c = in8(&in);
	cfg = (struct fp_config){.two_workers = c & 1, .mac_change = c & 2, .tx_timer = c & 4,
				 .rss = c & 8, .small_cap = c & 16, .flood_rate = c & 32};
	fp_world_begin(&cfg);
	for (unsigned n = 0; n < MAX_OPS && in.off < in.n; n++)
		run_op(&in);
	fp_loop(8);
	fp_oracle_probe(); /* while every other frontend of the input is still connected */
	fp_world_end();
	return 0;
}
