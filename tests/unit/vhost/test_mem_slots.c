/* SPDX-License-Identifier: MIT */
/* test_mem_slots.c - CONFIGURE_MEM_SLOTS: ADD/REM_MEM_REG, max-mem-slots= (at most 509), caps, rings, ports side by side. */
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

#include "mem/dirty_log.h"
#include "lib/log.h"
#include "mem/mem_cap.h"
#include "config/port_spec.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_mem.h"
#include "vhost/vhost_user_msg.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: vnet_dev_queue() */

#define MIB (1ull << 20)
#define PAGE 4096ull

#include "lib/virtio_net_defs.h"
#include "vu_side.h"

#define negotiate(s) negotiate_with((s), 1ull << VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS)

/* What the owner's mem_slots() says (the port's max-mem-slots=) for sides opened with it. */
static unsigned slots_cap;

static unsigned owner_mem_slots(void *ctx)
{
	(void)ctx;
	return slots_cap;
}

static const struct vu_owner_ops owner_with_slots = {
    .kick_changed = owner_kick_changed, .mem_cap = owner_mem_cap, .mem_slots = owner_mem_slots};

/* side_open_slots() - side_open() for a port of max-mem-slots=slots (0: the default). */
static void side_open_slots(struct side *s, uint64_t cap, unsigned slots)
{
	side_open(s, cap);
	slots_cap = slots;
	s->conn.ops = &owner_with_slots;
}

/* max_slots() - GET_MAX_MEM_SLOTS. */
static uint64_t max_slots(struct side *s)
{
	uint64_t v = 0;

	send_msg(s, VU_GET_MAX_MEM_SLOTS, &v, 0, NULL, 0);
	return reply(s);
}


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
	assert_int_equal(max_slots(&s), MEM_CAP_SLOTS_DEFAULT); /* no max-mem-slots=: 32 */
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
	side_open_slots(&s, 0, 509); /* max-mem-slots=509, the most */
	negotiate(&s);
	assert_int_equal(max_slots(&s), 509);
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

	/* Rings start only once the features (their layout) are known. */
	assert_int_equal(request_u64(s, VU_SET_FEATURES, 1ull << VIRTIO_F_VERSION_1), 0);
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
	side_open_slots(&s, 0, 64);
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

/* A SET_MEM_TABLE of regions 0..n-1 (one page each, a memfd each); its REPLY_ACK. */
static uint64_t set_table(struct side *s, unsigned first, unsigned n)
{
	struct vu_mem_table t = {.nregions = n};
	int fds[VU_MAX_REGIONS];
	uint64_t ack;

	for (unsigned i = 0; i < n; i++) {
		t.regions[i] = slot_region(first + i, PAGE);
		fds[i] = sparse_memfd(PAGE);
	}
	send_msg(s, VU_SET_MEM_TABLE, &t, (uint32_t)(8 + n * sizeof(t.regions[0])), fds, n);
	ack = reply(s);
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	return ack;
}

static void test_max_mem_slots_is_the_ports_cap(void **state)
{
	struct side s;
	struct vu_mem_region r;
	struct vu_log l = {.mmap_size = 4096, .mmap_offset = 0};
	int fd = sparse_memfd(4096);

	(void)state;
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	side_open_slots(&s, 0, 5);
	negotiate(&s);
	assert_int_equal(max_slots(&s), 5);
	/* SET_MEM_TABLE: 6 regions are over the cap, refused before anything is mapped; 5 fit. */
	assert_int_equal(set_table(&s, 0, 6), 1);
	assert_int_equal(s.conn.mem.nregions, 0);
	assert_true(mem_cap_in_use() == 0);
	assert_int_equal(set_table(&s, 0, 5), 0);
	assert_int_equal(s.conn.mem.nregions, 5);
	/* ADD_MEM_REG: no sixth slot until one is removed. */
	r = slot_region(10, PAGE);
	assert_int_equal(add_reg(&s, &r), 1);
	r = slot_region(2, PAGE);
	assert_int_equal(rem_reg(&s, &r, false), 0);
	r = slot_region(10, PAGE);
	assert_int_equal(add_reg(&s, &r), 0);
	r = slot_region(11, PAGE);
	assert_int_equal(add_reg(&s, &r), 1);
	/* The dirty log is one mapping more, beside a full table: never refused for slots. */
	assert_int_equal(vu_mem_maps(&s.conn), 5);
	send_msg(&s, VU_SET_LOG_BASE, &l, sizeof(l), &fd, 1);
	assert_int_equal(reply(&s), 0);
	close(fd);
	assert_int_equal(vu_mem_maps(&s.conn), 6);
	side_close(&s);
	/* Over 509 (an owner that does not check): the table's limit. */
	side_open_slots(&s, 0, 100000);
	negotiate(&s);
	assert_int_equal(max_slots(&s), GUEST_MEM_MAX_REGIONS);
	side_close(&s);
	assert_true(mem_cap_in_use() == 0);
}

static void test_max_mem_slots_port_key(void **state)
{
	struct port_config pc;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/a,switch", 0, &pc, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(pc.max_mem_slots, 0); /* the default, MEM_CAP_SLOTS_DEFAULT */
	assert_int_equal(port_spec_runtime("socket=/a,switch,max-mem-slots=509", 0, &pc, NULL, NULL,
					   0, err, sizeof(err)), 0);
	assert_int_equal(pc.max_mem_slots, 509);
	assert_int_equal(port_spec_runtime("socket=/a,switch,max-mem-slots=8", 0, &pc, NULL, NULL,
					   0, err, sizeof(err)), 0);
	assert_int_equal(pc.max_mem_slots, 8);
	for (const char *const *b = (const char *const[]){"0", "510", "-1", "8k", "", NULL}; *b;
	     b++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "socket=/a,switch,max-mem-slots=%s", *b);
		assert_int_equal(port_spec_runtime(spec, 0, &pc, NULL, NULL, 0, err, sizeof(err)),
				 -1);
		assert_non_null(strstr(err, "max-mem-slots"));
	}
}

/*
 * Finding 3 of issue 40: the SIGBUS watch table was daemon-wide (8192 mappings) and each port
 * was told 509 slots, so 17 frontends adding one-page regions filled it and a fresh VM on
 * another port had its SET_MEM_TABLE refused. Each port now gets its own cap and the table
 * holds every port's: the 17 ports fill their caps, get an ERR beyond them, and an 18th port
 * still maps its table.
 */
#define TENANTS 17

static struct side tenants[TENANTS + 1];

static void test_ports_at_their_cap_leave_room_for_a_fresh_one(void **state)
{
	(void)state;
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	for (unsigned t = 0; t < TENANTS; t++) {
		struct side *s = &tenants[t];
		uint64_t n;
		unsigned ok = 0;

		side_open(s, 0); /* the default max-mem-slots= */
		negotiate(s);
		n = max_slots(s);
		assert_true(n >= VU_MAX_REGIONS && n <= GUEST_MEM_MAX_REGIONS);
		for (unsigned i = 0; i < n; i++) {
			struct vu_mem_region r = slot_region(i, 1); /* one byte: one page mapped */

			ok += add_reg(s, &r) == 0;
		}
		assert_int_equal(ok, n); /* all it was promised */
		{
			struct vu_mem_region r = slot_region((unsigned)n, 1);

			assert_int_equal(add_reg(s, &r), 1); /* ERR beyond its cap */
		}
	}
	/* A fresh VM on another port: its 8-region table maps. */
	side_open(&tenants[TENANTS], 0);
	negotiate(&tenants[TENANTS]);
	assert_int_equal(set_table(&tenants[TENANTS], 0, VU_MAX_REGIONS), 0);
	assert_int_equal(tenants[TENANTS].conn.mem.nregions, VU_MAX_REGIONS);
	for (unsigned t = 0; t <= TENANTS; t++)
		side_close(&tenants[t]);
	assert_true(mem_cap_in_use() == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_max_mem_slots_and_negotiation),
		cmocka_unit_test(test_509_slots_add_remove_overlap),
		cmocka_unit_test(test_add_mem_reg_within_the_caps),
		cmocka_unit_test(test_removing_a_rings_region_stops_that_queue_only),
		cmocka_unit_test(test_dirty_log_through_added_regions),
		cmocka_unit_test(test_max_mem_slots_is_the_ports_cap),
		cmocka_unit_test(test_max_mem_slots_port_key),
		cmocka_unit_test(test_ports_at_their_cap_leave_room_for_a_fresh_one),
	};

	log_threshold = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
