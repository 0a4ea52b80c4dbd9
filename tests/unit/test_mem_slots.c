/* SPDX-License-Identifier: MIT */
/* test_mem_slots.c - CONFIGURE_MEM_SLOTS on one connection: ADD/REM_MEM_REG, 509 slots, caps, rings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "dirty_log.h"
#include "log.h"
#include "mem_cap.h"
#include "vhost_user.h"
#include "vhost_user_msg.h"
#include "vnet_dev.h"

#define MIB (1ull << 20)
#define PAGE 4096ull

#include "vu_side.h"

#define negotiate(s) negotiate_with((s), 1ull << VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS)


/* Region i of the tests: gpa and uva 1 MiB apart per slot, `size` bytes. */
static struct vu_mem_region slot_region(unsigned i, uint64_t size)
{
	return (struct vu_mem_region){.guest_phys_addr = (uint64_t)i * MIB,
				      .memory_size = size,
				      .userspace_addr = 0x100000000000ull + (uint64_t)i * MIB,
				      .mmap_offset = 0};
}

/* add_reg() - ADD_MEM_REG of r with a fresh memfd; the REPLY_ACK (0 done). */
static uint64_t add_reg(struct side *s, const struct vu_mem_region *r)
{
	struct vu_mem_reg m = {.padding = 0, .region = *r};
	int fd = sparse_memfd(r->memory_size + r->mmap_offset);
	uint64_t ack;

	send_msg(s, VU_ADD_MEM_REG, &m, sizeof(m), &fd, 1);
	ack = reply(s);
	close(fd);
	return ack;
}

/* open_fds() - how many fds this process has open. */
static unsigned open_fds(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* rem_reg() - REM_MEM_REG of r, with an fd when with_fd (which vnetd must close); the ack. */
static uint64_t rem_reg(struct side *s, const struct vu_mem_region *r, bool with_fd)
{
	struct vu_mem_reg m = {.padding = 0, .region = *r};
	int fd = with_fd ? eventfd(0, EFD_CLOEXEC) : -1;
	uint64_t ack;

	send_msg(s, VU_REM_MEM_REG, &m, sizeof(m), &fd, with_fd ? 1 : 0);
	ack = reply(s);
	if (with_fd)
		close(fd);
	return ack;
}

static void test_get_max_mem_slots_and_negotiation(void **state)
{
	struct side s;
	struct vu_mem_region r = slot_region(0, MIB);
	uint64_t v = 0;

	(void)state;
	side_open(&s, 0);
	/* Offered... */
	send_msg(&s, VU_GET_PROTOCOL_FEATURES, &v, 0, NULL, 0);
	assert_true(reply(&s) & (1ull << VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS));
	/* ... and refused until negotiated (REPLY_ACK only). */
	assert_int_equal(request_u64(&s, VU_SET_PROTOCOL_FEATURES, 1ull << VU_PROTOCOL_F_REPLY_ACK),
			 0);
	assert_int_equal(add_reg(&s, &r), 1);
	assert_int_equal(s.conn.mem.nregions, 0);
	negotiate(&s);
	send_msg(&s, VU_GET_MAX_MEM_SLOTS, &v, 0, NULL, 0);
	assert_int_equal(reply(&s), 509);
	assert_int_equal(add_reg(&s, &r), 0);
	assert_int_equal(s.conn.mem.nregions, 1);
	side_close(&s);
}

static void test_509_slots_add_remove_overlap(void **state)
{
	struct side s;
	struct vu_mem_region r;
	unsigned fds;

	(void)state;
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	side_open(&s, 0);
	negotiate(&s);
	for (unsigned i = 0; i < 509; i++) {
		r = slot_region(508 - i, PAGE); /* backwards: each one goes to the front */
		assert_int_equal(add_reg(&s, &r), 0);
	}
	assert_int_equal(s.conn.mem.nregions, 509);
	assert_true(mem_cap_in_use() == 509 * PAGE);
	r = slot_region(600, PAGE);
	assert_int_equal(add_reg(&s, &r), 1); /* no 510th slot */
	/* Every region translates to its own mapping. */
	for (unsigned i = 0; i < 509; i++) {
		uint8_t *p = guest_mem_translate(&s.conn.mem, GUEST_ADDR_GPA, (uint64_t)i * MIB + 5, 1);

		assert_non_null(p);
		p[0] = (uint8_t)i;
	}
	/* Overlap in guest physical or user addresses, exact duplicates: refused, nothing kept. */
	r = slot_region(3, PAGE);
	assert_int_equal(add_reg(&s, &r), 1);
	assert_int_equal(rem_reg(&s, &r, false), 0);
	r.memory_size = 2 * PAGE;
	r.guest_phys_addr -= PAGE; /* its second page would be region 3's ... */
	assert_int_equal(add_reg(&s, &r), 0); /* ... which is gone: fits now */
	assert_int_equal(rem_reg(&s, &r, false), 0);
	r = slot_region(3, PAGE);
	r.guest_phys_addr = 700 * MIB;
	r.userspace_addr = slot_region(4, PAGE).userspace_addr + PAGE - 1;
	assert_int_equal(add_reg(&s, &r), 1); /* user addresses overlap region 4 */
	r = slot_region(3, PAGE);
	r.userspace_addr = 0x300000000000ull;
	r.guest_phys_addr = 4 * MIB + 8;
	assert_int_equal(add_reg(&s, &r), 1); /* guest addresses overlap region 4 */
	assert_int_equal(s.conn.mem.nregions, 508);
	assert_true(mem_cap_in_use() == 508 * PAGE);
	/* REM matches guest address, size and user address; the mmap offset does not count. */
	r = slot_region(5, PAGE);
	r.memory_size = 2 * PAGE;
	assert_int_equal(rem_reg(&s, &r, false), 1);
	r = slot_region(5, PAGE);
	r.userspace_addr += PAGE;
	assert_int_equal(rem_reg(&s, &r, false), 1);
	r = slot_region(5, PAGE);
	r.mmap_offset = 12345;
	fds = open_fds();
	assert_int_equal(rem_reg(&s, &r, true), 0); /* with an fd, closed unused */
	assert_int_equal(open_fds(), fds);
	assert_int_equal(rem_reg(&s, &r, false), 1); /* gone already */
	assert_int_equal(s.conn.mem.nregions, 507);
	assert_true(mem_cap_in_use() == 507 * PAGE);
	side_close(&s);
	assert_true(mem_cap_in_use() == 0);
}

static void test_add_mem_reg_within_the_caps(void **state)
{
	struct side s;
	struct vu_mem_region r;

	(void)state;
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	side_open(&s, 64 * MIB);
	negotiate(&s);
	r = slot_region(0, 40 * MIB);
	assert_int_equal(add_reg(&s, &r), 0);
	r = slot_region(100, 24 * MIB);
	r.mmap_offset = 1; /* 24 MiB + 1 byte from the start of the file: over 64 MiB in all */
	assert_int_equal(add_reg(&s, &r), 1);
	r.mmap_offset = 0;
	assert_int_equal(add_reg(&s, &r), 0); /* exactly 64 MiB */
	r = slot_region(200, PAGE);
	assert_int_equal(add_reg(&s, &r), 1);
	assert_true(mem_cap_in_use() == 64 * MIB);
	/* Removing one makes room again. */
	r = slot_region(100, 24 * MIB);
	assert_int_equal(rem_reg(&s, &r, false), 0);
	assert_true(mem_cap_in_use() == 40 * MIB);
	/* The daemon-wide cap too. */
	mem_cap_set_daemon(48 * MIB);
	r = slot_region(300, 16 * MIB);
	assert_int_equal(add_reg(&s, &r), 1);
	r = slot_region(300, 8 * MIB);
	assert_int_equal(add_reg(&s, &r), 0);
	assert_true(mem_cap_in_use() == 48 * MIB);
	/* Empty and wrapping regions are refused before anything is mapped. */
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	r = slot_region(400, 0);
	assert_int_equal(add_reg(&s, &r), 1);
	r = slot_region(400, PAGE);
	r.guest_phys_addr = UINT64_MAX - 10;
	assert_int_equal(add_reg(&s, &r), 1);
	assert_int_equal(s.conn.mem.nregions, 2);
	side_close(&s);
	assert_true(mem_cap_in_use() == 0);
}

/* Rings of queue q inside region `at` of the test: desc, avail and used at its start. */
static void start_queue(struct side *s, unsigned q, const struct vu_mem_region *at, int errfd)
{
	struct vu_vring_state num = {.index = q, .num = 64};
	uint64_t uva = at->userspace_addr;
	struct vu_vring_addr a = {.index = q, .desc = uva, .avail = uva + 1024, .used = uva + 2048};
	uint64_t idx = q;
	int kick = eventfd(0, EFD_CLOEXEC);

	send_msg(s, VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_ERR, &idx, sizeof(idx), &errfd, 1);
	assert_int_equal(reply(s), 0);
	send_msg(s, VU_SET_VRING_KICK, &idx, sizeof(idx), &kick, 1);
	assert_int_equal(reply(s), 0);
	close(kick);
}

static void test_removing_a_rings_region_stops_that_queue_only(void **state)
{
	struct side s;
	struct vu_mem_region ring0 = slot_region(1, 64 * 1024), ring1 = slot_region(2, 64 * 1024);
	struct vu_mem_region other = slot_region(3, 64 * 1024);
	int err0 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), err1 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t v;

	(void)state;
	side_open(&s, 0);
	negotiate(&s);
	assert_int_equal(add_reg(&s, &ring0), 0);
	assert_int_equal(add_reg(&s, &ring1), 0);
	assert_int_equal(add_reg(&s, &other), 0);
	start_queue(&s, 0, &ring0, err0);
	start_queue(&s, 1, &ring1, err1);
	assert_true(vnet_dev_queue(s.dev, 0)->vq.started && vnet_dev_queue(s.dev, 1)->vq.started);
	/* A region no ring uses: both queues keep running. */
	assert_int_equal(rem_reg(&s, &other, false), 0);
	assert_true(vnet_dev_queue(s.dev, 0)->vq.started && vnet_dev_queue(s.dev, 1)->vq.started);
	/* Queue 1's rings: it stops (never touches the unmapped memory), its error fd says so. */
	assert_int_equal(rem_reg(&s, &ring1, false), 0);
	assert_true(vnet_dev_queue(s.dev, 0)->vq.started);
	assert_false(vnet_dev_queue(s.dev, 1)->vq.started);
	assert_null(vnet_dev_queue(s.dev, 1)->vq.used);
	assert_int_equal(read(err1, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(read(err0, &v, sizeof(v)), -1); /* queue 0: nothing */
	/* The memory comes back: the queue, still kicked, starts again. */
	assert_int_equal(add_reg(&s, &ring1), 0);
	assert_true(vnet_dev_queue(s.dev, 1)->vq.started);
	close(err0);
	close(err1);
	side_close(&s);
}

static void test_dirty_log_through_added_regions(void **state)
{
	struct side s;
	struct vu_log l = {.mmap_size = 4096, .mmap_offset = 0};
	int fd = sparse_memfd(4096);
	const struct guest_mem_region *g;

	(void)state;
	side_open(&s, 0);
	negotiate(&s);
	for (unsigned i = 0; i < 64; i++) {
		struct vu_mem_region r = slot_region(i, 2 * PAGE);

		assert_int_equal(add_reg(&s, &r), 0);
	}
	send_msg(&s, VU_SET_LOG_BASE, &l, sizeof(l), &fd, 1);
	assert_int_equal(reply(&s), 0);
	close(fd);
	/* A write at the second page of region 37 marks guest page 37 MiB / 4 KiB + 1 only. */
	g = guest_mem_find_exact(&s.conn.mem, 37 * MIB, 2 * PAGE, slot_region(37, 0).userspace_addr);
	assert_non_null(g);
	dirty_log_host(&s.conn.log, &s.conn.mem, g->host + PAGE + 10, 20);
	for (uint64_t p = 0; p < l.mmap_size * 8; p++)
		assert_int_equal((s.conn.log.bitmap[p / 8] >> (p % 8)) & 1,
				 p == 37 * MIB / PAGE + 1);
	/* Removed: its bytes are no longer guest memory to log. */
	assert_int_equal(rem_reg(&s, &(struct vu_mem_region){.guest_phys_addr = 37 * MIB,
							     .memory_size = 2 * PAGE,
							     .userspace_addr = g->uva},
				 false),
			 0);
	assert_null(guest_mem_find_exact(&s.conn.mem, 37 * MIB, 2 * PAGE,
					 slot_region(37, 0).userspace_addr));
	side_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_max_mem_slots_and_negotiation),
		cmocka_unit_test(test_509_slots_add_remove_overlap),
		cmocka_unit_test(test_add_mem_reg_within_the_caps),
		cmocka_unit_test(test_removing_a_rings_region_stops_that_queue_only),
		cmocka_unit_test(test_dirty_log_through_added_regions),
	};

	log_threshold = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
