/* SPDX-License-Identifier: MIT */
/* test_vu_state.c - unit tests: the vhost-user state table refuses what would change a running ring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "vhost/vhost.h"
#include "vhost/vhost_user_msg.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: vnet_dev_queue() */
#include "dev/vnet_dev_queue.h"
#include "vu_side.h"

#define MIB (1024ull * 1024)
#define UVA 0x100000000000ull
#define GPA 0x40000000ull
#define SPLIT (BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_RING_F_EVENT_IDX))
#define PACKED BIT_ULL(VIRTIO_F_RING_PACKED)
#define IN_ORDER BIT_ULL(VIRTIO_F_IN_ORDER)
#define LOG_ALL (1ull << 26)
#define NQ 2 /* RX and TX of the one pair; the control queue is left alone */

/* The frontend's side of one test: the connection, its guest memory, the rings' fds. */
struct fe {
	struct side s;
	int memfd;
	int kick[NQ], err[NQ];
	bool acks; /* REPLY_ACK negotiated */
};

/* Ring addresses of queue q: 64 KiB apart, desc / driver area / device area 4 KiB apart. */
static struct vu_vring_addr ring_addr(unsigned q, uint64_t shift)
{
	uint64_t base = UVA + (uint64_t)q * 65536 + shift;

	return (struct vu_vring_addr){.index = q, .desc = base, .avail = base + 4096,
				      .used = base + 8192};
}

/* send_raw() - one request, as send_msg() but returning what the connection said (0 / -1). */
static int send_raw(struct side *s, uint32_t req, const void *payload, uint32_t size)
{
	uint8_t buf[VU_HDR_SIZE + 64];
	uint32_t flags = VU_VERSION | VU_FLAG_NEED_REPLY;
	int r;

	memcpy(buf, &req, 4);
	memcpy(buf + 4, &flags, 4);
	memcpy(buf + 8, &size, 4);
	memcpy(buf + VU_HDR_SIZE, payload, size);
	assert_int_equal(send(s->peer, buf, VU_HDR_SIZE + size, 0), (ssize_t)(VU_HDR_SIZE + size));
	do
		r = vu_conn_handle_readable(&s->conn);
	while (r == 0 && s->conn.rx.len);
	return r;
}

/* req() - a request with a u64 or struct payload: its ack (REPLY_ACK negotiated) or 0. */
static uint64_t req(struct fe *f, uint32_t r, const void *p, uint32_t size)
{
	send_msg(&f->s, r, p, size, NULL, 0);
	return f->acks ? reply(&f->s) : 0;
}

static uint64_t set_features(struct fe *f, uint64_t feat)
{
	return req(f, VU_SET_FEATURES, &feat, sizeof(feat));
}

/* fe_open() - owner, protocol features (REPLY_ACK if acks), one 1 MiB region. */
static void fe_open(struct fe *f, bool acks)
{
	struct vu_mem_table t = {.nregions = 1};

	memset(f, 0, sizeof(*f));
	f->acks = acks;
	side_open(&f->s, 0);
	if (acks) {
		negotiate_with(&f->s, 0);
	} else {
		uint64_t none = 0;

		send_msg(&f->s, VU_SET_PROTOCOL_FEATURES, &none, sizeof(none), NULL, 0);
		send_msg(&f->s, VU_SET_OWNER, NULL, 0, NULL, 0);
	}
	f->memfd = sparse_memfd(MIB);
	t.regions[0] = (struct vu_mem_region){.guest_phys_addr = GPA, .memory_size = MIB,
					      .userspace_addr = UVA};
	send_msg(&f->s, VU_SET_MEM_TABLE, &t, sizeof(t), &f->memfd, 1);
	if (acks)
		assert_int_equal(reply(&f->s), 0);
	for (unsigned q = 0; q < NQ; q++) {
		f->kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		f->err[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
}

static void fe_close(struct fe *f)
{
	side_close(&f->s);
	close(f->memfd);
	for (unsigned q = 0; q < NQ; q++) {
		close(f->kick[q]);
		close(f->err[q]);
	}
}

/* start_ring() - size, addresses, base 0, error and kick fds: the ring starts. */
static void start_ring(struct fe *f, unsigned q)
{
	struct vu_vring_state num = {.index = q, .num = 64}, base = {.index = q, .num = 0};
	struct vu_vring_addr a = ring_addr(q, 0);
	uint64_t idx = q;

	assert_int_equal(req(f, VU_SET_VRING_NUM, &num, sizeof(num)), 0);
	assert_int_equal(req(f, VU_SET_VRING_ADDR, &a, sizeof(a)), 0);
	assert_int_equal(req(f, VU_SET_VRING_BASE, &base, sizeof(base)), 0);
	send_msg(&f->s, VU_SET_VRING_ERR, &idx, sizeof(idx), &f->err[q], 1);
	if (f->acks)
		assert_int_equal(reply(&f->s), 0);
	send_msg(&f->s, VU_SET_VRING_KICK, &idx, sizeof(idx), &f->kick[q], 1);
	if (f->acks)
		assert_int_equal(reply(&f->s), 0);
	send_msg(&f->s, VU_SET_VRING_ENABLE, &(struct vu_vring_state){.index = q, .num = 1},
		 sizeof(struct vu_vring_state), NULL, 0);
	if (f->acks)
		assert_int_equal(reply(&f->s), 0);
}

/* stop_ring() - GET_VRING_BASE: the ring stops, its base comes back. */
static void stop_ring(struct fe *f, unsigned q)
{
	struct vu_vring_state st = {.index = q, .num = 0};
	uint8_t buf[VU_HDR_SIZE + sizeof(st)];

	send_msg(&f->s, VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0);
	assert_int_equal(recv(f->s.peer, buf, sizeof(buf), MSG_DONTWAIT), (ssize_t)sizeof(buf));
}

static struct virtqueue *vq(struct fe *f, unsigned q)
{
	return &vnet_dev_queue(f->s.dev, q)->vq;
}

static void start_all(struct fe *f, uint64_t feat)
{
	assert_int_equal(set_features(f, feat), 0);
	for (unsigned q = 0; q < NQ; q++) {
		start_ring(f, q);
		assert_true(vq(f, q)->started);
		assert_int_equal(vq(f, q)->packed, !!(feat & PACKED));
	}
}

/* Finding 1: RING_PACKED added under running split rings crashed the kick (NULL dev_event). */
static void test_layout_flip_under_running_rings_refused(void **state)
{
	struct fe f;

	(void)state;
	fe_open(&f, true);
	start_all(&f, SPLIT);
	assert_int_equal(set_features(&f, SPLIT | PACKED), 1);           /* ERR ack */
	assert_int_equal(set_features(&f, SPLIT | PACKED | IN_ORDER), 1);
	assert_int_equal(set_features(&f, BIT_ULL(VIRTIO_F_VERSION_1)), 1); /* EVENT_IDX off */
	for (unsigned q = 0; q < NQ; q++) {
		assert_true(vq(&f, q)->started);
		assert_false(vq(&f, q)->packed);
		assert_false(vq(&f, q)->broken);
		vnet_dev_kick(f.s.dev, q); /* the split walker still runs: no crash */
	}
	assert_true(vnet_dev_features(f.s.dev) == SPLIT);
	fe_close(&f);
}

/* QEMU toggles VHOST_F_LOG_ALL and re-sends the same ring addresses while rings run. */
static void test_log_all_toggle_while_running(void **state)
{
	struct fe f;

	(void)state;
	fe_open(&f, true);
	start_all(&f, SPLIT);
	assert_int_equal(set_features(&f, SPLIT | LOG_ALL), 0);
	for (unsigned q = 0; q < NQ; q++) {
		struct vu_vring_addr a = ring_addr(q, 0);

		a.flags = 1; /* VU_VRING_F_LOG */
		a.log = GPA + 8192 + (uint64_t)q * 65536;
		assert_int_equal(req(&f, VU_SET_VRING_ADDR, &a, sizeof(a)), 0);
		assert_true(vq(&f, q)->started);
		assert_true(vq(&f, q)->log_used);
	}
	assert_true(f.s.conn.log_all);
	assert_int_equal(set_features(&f, SPLIT), 0);
	assert_false(f.s.conn.log_all);
	for (unsigned q = 0; q < NQ; q++)
		assert_true(vq(&f, q)->started);
	fe_close(&f);
}

/* A running ring's size, base and addresses change only after it stops. */
static void test_ring_messages_on_running_ring_refused(void **state)
{
	struct vu_vring_state num = {.index = 1, .num = 128}, base = {.index = 1, .num = 7};
	struct vu_vring_addr moved = ring_addr(1, 16384);
	struct fe f;

	(void)state;
	fe_open(&f, true);
	start_all(&f, SPLIT);
	assert_int_equal(req(&f, VU_SET_VRING_NUM, &num, sizeof(num)), 1);
	assert_int_equal(req(&f, VU_SET_VRING_BASE, &base, sizeof(base)), 1);
	assert_int_equal(req(&f, VU_SET_VRING_ADDR, &moved, sizeof(moved)), 1);
	assert_int_equal(vq(&f, 1)->num, 64);
	assert_true(vq(&f, 1)->started && !vq(&f, 1)->broken);
	/* Stopped, the same messages are taken and the ring restarts on them. */
	stop_ring(&f, 1);
	assert_int_equal(req(&f, VU_SET_VRING_NUM, &num, sizeof(num)), 0);
	assert_int_equal(req(&f, VU_SET_VRING_ADDR, &moved, sizeof(moved)), 0);
	assert_int_equal(req(&f, VU_SET_VRING_BASE, &base, sizeof(base)), 0);
	assert_false(vq(&f, 1)->started); /* GET_VRING_BASE dropped its kick fd */
	send_msg(&f.s, VU_SET_VRING_KICK, &(uint64_t){1}, sizeof(uint64_t), &f.kick[1], 1);
	assert_int_equal(reply(&f.s), 0);
	assert_true(vq(&f, 1)->started);
	assert_int_equal(vq(&f, 1)->num, 128);
	fe_close(&f);
}

/* The driver reloads with other features: stop, renegotiate, restart, in both directions. */
static void test_stop_renegotiate_restart_cycle(void **state)
{
	static const uint64_t cycle[] = {SPLIT | PACKED | IN_ORDER, SPLIT | IN_ORDER,
					 SPLIT | PACKED, SPLIT,
					 SPLIT | PACKED | IN_ORDER, SPLIT | PACKED};
	struct fe f;

	(void)state;
	fe_open(&f, true);
	for (unsigned i = 0; i < sizeof(cycle) / sizeof(cycle[0]); i++) {
		start_all(&f, cycle[i]);
		for (unsigned q = 0; q < NQ; q++)
			vnet_dev_kick(f.s.dev, q);
		for (unsigned q = 0; q < NQ; q++) {
			stop_ring(&f, q);
			assert_false(vq(&f, q)->started);
		}
	}
	fe_close(&f);
}

/* Without REPLY_ACK a refusal cannot be heard: the ring breaks, or the connection closes. */
static void test_refusal_without_reply_ack(void **state)
{
	struct vu_vring_state num = {.index = 1, .num = 128};
	uint64_t flip = SPLIT | PACKED, errs = 0;
	struct fe f;

	(void)state;
	fe_open(&f, false);
	start_all(&f, SPLIT);
	send_msg(&f.s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_true(vq(&f, 1)->broken); /* NEEDS_RESET, and the frontend hears of it */
	assert_int_equal(read(f.err[1], &errs, sizeof(errs)), (ssize_t)sizeof(errs));
	assert_int_equal(errs, 1);
	assert_false(vq(&f, 0)->broken);
	assert_int_equal(send_raw(&f.s, VU_SET_FEATURES, &flip, sizeof(flip)), -1);
	fe_close(&f);
}

/*
 * A ring broken by a refused SET_VRING_NUM (no REPLY_ACK) and then sent its own addresses again
 * (allowed on a running ring, for QEMU's log toggling) must not run again on the old size that
 * the frontend believes replaced: it stays down until the frontend sets it up again. Before, the
 * address message restarted it (vq_start() clears broken) with 64 entries, the frontend on 128.
 */
static void test_same_addr_does_not_revive_broken_ring(void **state)
{
	struct vu_vring_state num = {.index = 1, .num = 128};
	struct vu_vring_addr a = ring_addr(1, 0);
	struct fe f;

	(void)state;
	fe_open(&f, false);
	start_all(&f, SPLIT);
	send_msg(&f.s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_true(vq(&f, 1)->broken);
	send_msg(&f.s, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	assert_false(vq(&f, 1)->started && !vq(&f, 1)->broken); /* not running on 64 entries */
	assert_true(vq(&f, 0)->started && !vq(&f, 0)->broken);
	/* Set up again (stopped: GET_VRING_BASE, size, addresses, kick), it runs on 128. */
	stop_ring(&f, 1);
	send_msg(&f.s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	send_msg(&f.s, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	send_msg(&f.s, VU_SET_VRING_KICK, &(uint64_t){1}, sizeof(uint64_t), &f.kick[1], 1);
	assert_true(vq(&f, 1)->started && !vq(&f, 1)->broken);
	assert_int_equal(vq(&f, 1)->run.num, 128);
	fe_close(&f);
}

/* A new memory table stops and restarts the rings, but not a broken one (review of 7702d59). */
static void test_mem_table_does_not_revive_broken_ring(void **state)
{
	struct vu_vring_state num = {.index = 1, .num = 128};
	struct vu_mem_table t = {.nregions = 1};
	struct fe f;

	(void)state;
	fe_open(&f, false);
	start_all(&f, SPLIT);
	send_msg(&f.s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_true(vq(&f, 1)->broken);
	t.regions[0] = (struct vu_mem_region){.guest_phys_addr = GPA, .memory_size = MIB,
					      .userspace_addr = UVA};
	send_msg(&f.s, VU_SET_MEM_TABLE, &t, sizeof(t), &f.memfd, 1);
	assert_true(vq(&f, 0)->started && !vq(&f, 0)->broken); /* the healthy ring runs on */
	assert_false(vq(&f, 1)->started);                       /* the broken one stays stopped */
	assert_int_equal(vq(&f, 1)->run.num, 64);
	fe_close(&f);
}

/*
 * DPDK 22.11's virtio-user reconnects without SET_OWNER (SET_VRING_ENABLE, SET_FEATURES, memory,
 * rings): taken. A kick before SET_FEATURES waits for the features (the ring's layout).
 */
static void test_reconnect_without_owner_and_kick_before_features(void **state)
{
	struct vu_mem_table t = {.nregions = 1};
	struct vu_vring_state num = {.index = 1, .num = 64}, en = {.index = 1, .num = 1};
	struct vu_vring_addr a = ring_addr(1, 0);
	uint64_t idx = 1;
	int memfd = sparse_memfd(MIB), kick = eventfd(0, EFD_CLOEXEC);
	struct side s;

	(void)state;
	side_open(&s, 0);
	assert_int_equal(request_u64(&s, VU_SET_PROTOCOL_FEATURES, 1ull << VU_PROTOCOL_F_REPLY_ACK),
			 0);
	send_msg(&s, VU_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0);
	assert_int_equal(reply(&s), 0);
	t.regions[0] = (struct vu_mem_region){.guest_phys_addr = GPA, .memory_size = MIB,
					      .userspace_addr = UVA};
	send_msg(&s, VU_SET_MEM_TABLE, &t, sizeof(t), &memfd, 1);
	assert_int_equal(reply(&s), 0);
	send_msg(&s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_int_equal(reply(&s), 0);
	send_msg(&s, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	assert_int_equal(reply(&s), 0);
	send_msg(&s, VU_SET_VRING_KICK, &idx, sizeof(idx), &kick, 1);
	assert_int_equal(reply(&s), 0);
	assert_false(vnet_dev_queue(s.dev, 1)->vq.started); /* no layout known yet */
	assert_int_equal(request_u64(&s, VU_SET_FEATURES, SPLIT | PACKED), 0);
	assert_true(vnet_dev_queue(s.dev, 1)->vq.started);
	assert_true(vnet_dev_queue(s.dev, 1)->vq.packed);
	side_close(&s);
	close(memfd);
	close(kick);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_flip_under_running_rings_refused),
		cmocka_unit_test(test_log_all_toggle_while_running),
		cmocka_unit_test(test_ring_messages_on_running_ring_refused),
		cmocka_unit_test(test_stop_renegotiate_restart_cycle),
		cmocka_unit_test(test_refusal_without_reply_ack),
		cmocka_unit_test(test_same_addr_does_not_revive_broken_ring),
		cmocka_unit_test(test_mem_table_does_not_revive_broken_ring),
		cmocka_unit_test(test_reconnect_without_owner_and_kick_before_features),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
