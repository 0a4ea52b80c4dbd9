/* SPDX-License-Identifier: MIT */
/* test_vu_ring_owner.c - the owner's ring hooks: the frontend's base, a resume set before start. */
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

#define RING_UVA 0x100000100000ull
#define RING_SIZE (64 * 1024)

/* What the owner heard, and the base it sets when a queue starts (0: none). */
static struct {
	uint32_t base[VNET_MAX_QUEUES];
	unsigned base_calls, starting_calls;
	bool started_before[VNET_MAX_QUEUES];
	uint32_t resume_at;
	struct side *s;
} seen;

static void owner_ring_base(void *ctx, unsigned qidx, uint32_t base)
{
	(void)ctx;
	seen.base[qidx] = base;
	seen.base_calls++;
}

static void owner_queue_starting(void *ctx, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(seen.s->dev, qidx);

	(void)ctx;
	seen.started_before[qidx] = q->vq.started;
	seen.starting_calls++;
	if (seen.resume_at)
		assert_int_equal(vq_set_base(&q->vq, seen.resume_at), 0);
}

static const struct vu_owner_ops ring_owner = {.kick_changed = owner_kick_changed,
					       .ring_base = owner_ring_base,
					       .queue_starting = owner_queue_starting};

static void open_packed(struct side *s)
{
	struct vu_mem_reg m = {.padding = 0,
			       .region = {.guest_phys_addr = 0x100000, .memory_size = RING_SIZE,
					  .userspace_addr = RING_UVA, .mmap_offset = 0}};
	int fd = sparse_memfd(RING_SIZE);

	side_open(s, 0);
	s->conn.ops = &ring_owner; /* the fixture's owner, plus the two ring hooks */
	memset(&seen, 0, sizeof(seen));
	seen.s = s;
	negotiate_with(s, 1ull << VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	assert_int_equal(request_u64(s, VU_SET_FEATURES, (1ull << VIRTIO_F_VERSION_1) |
							 (1ull << VIRTIO_F_RING_PACKED)), 0);
	send_msg(s, VU_ADD_MEM_REG, &m, sizeof(m), &fd, 1);
	assert_int_equal(reply(s), 0);
	close(fd);
}

/* Queue q's packed ring (64 slots) at the region's start; `base` sent before its kick. */
static void set_up(struct side *s, unsigned q, uint32_t base)
{
	struct vu_vring_state num = {.index = q, .num = 64}, b = {.index = q, .num = base};
	uint64_t uva = RING_UVA + (uint64_t)q * 4096;
	struct vu_vring_addr a = {.index = q, .desc = uva, .avail = uva + 1024, .used = uva + 2048};
	uint64_t idx = q;
	int kick = eventfd(0, EFD_CLOEXEC);

	send_msg(s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_BASE, &b, sizeof(b), NULL, 0);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_KICK, &idx, sizeof(idx), &kick, 1);
	assert_int_equal(reply(s), 0);
	close(kick);
}

static uint32_t get_base(struct side *s, unsigned q)
{
	struct vu_vring_state st = {.index = q, .num = 0};
	uint8_t buf[VU_HDR_SIZE + sizeof(st)];

	send_msg(s, VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0);
	assert_int_equal(recv(s->peer, buf, sizeof(buf), MSG_DONTWAIT), (ssize_t)sizeof(buf));
	memcpy(&st, buf + VU_HDR_SIZE, sizeof(st));
	return st.num;
}

/* The owner hears the frontend's own base, and is asked once, before the start. */
static void test_owner_hears_base_then_start(void **state)
{
	struct side s;

	(void)state;
	open_packed(&s);
	set_up(&s, 1, 0x80008000u);
	assert_int_equal(seen.base_calls, 1);
	assert_int_equal(seen.base[1], 0x80008000u);
	assert_int_equal(seen.starting_calls, 1);
	assert_false(seen.started_before[1]);
	assert_true(vnet_dev_queue(s.dev, 1)->vq.started);
	/* Nothing available: it stopped where the frontend said. */
	assert_int_equal(get_base(&s, 1), 0x80008000u);
	side_close(&s);
}

/* A base the owner sets while the queue starts is where it resumes; the frontend's stays its. */
static void test_owner_sets_where_it_resumes(void **state)
{
	struct side s;

	(void)state;
	open_packed(&s);
	seen.resume_at = 0x00050005u; /* slot 5, wrap 0, both halves */
	set_up(&s, 0, 0x80008000u);
	assert_int_equal(seen.base[0], 0x80008000u);
	assert_true(vnet_dev_queue(s.dev, 0)->vq.started);
	assert_int_equal(get_base(&s, 0), 0x00050005u);
	side_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_owner_hears_base_then_start),
	    cmocka_unit_test(test_owner_sets_where_it_resumes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
