/* SPDX-License-Identifier: MIT */
/* test_vu_limits.c - per connection: memory caps (max-mem=, --max-guest-mem), ring sizes, fds that hang up, migrate-state=. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/log.h"
#include "mem/mem_cap.h"
#include "config/options.h"
#include "config/port_spec.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_msg.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: vnet_dev_queue() */

#define MIB (1ull << 20)

#include "vu_side.h"

#define negotiate(s) negotiate_with((s), 0)


/* set_mem_table() - n regions of `size` bytes each (mmap_offset `off`); the REPLY_ACK. */
static uint64_t set_mem_table(struct side *s, unsigned n, uint64_t size, uint64_t off)
{
	uint8_t p[8 + VU_MAX_REGIONS * sizeof(struct vu_mem_region)] = {0};
	int fds[VU_MAX_REGIONS];
	uint32_t nr = n;
	uint64_t ack;

	memcpy(p, &nr, 4);
	for (unsigned i = 0; i < n; i++) {
		struct vu_mem_region r = {
			.guest_phys_addr = (uint64_t)i << 40,
			.memory_size = size,
			.userspace_addr = 0x100000000000ull + ((uint64_t)i << 40),
			.mmap_offset = off,
		};

		memcpy(p + 8 + i * sizeof(r), &r, sizeof(r));
		fds[i] = sparse_memfd(size + off);
	}
	send_msg(s, VU_SET_MEM_TABLE, p, 8 + n * sizeof(struct vu_mem_region), fds, n);
	ack = reply(s);
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	return ack;
}

static uint64_t set_log_base(struct side *s, uint64_t size)
{
	struct vu_log l = {.mmap_size = size, .mmap_offset = 0};
	int fd = sparse_memfd(size);
	uint64_t r;

	send_msg(s, VU_SET_LOG_BASE, &l, sizeof(l), &fd, 1);
	r = reply(s);
	close(fd);
	return r;
}

static uint64_t mapped(const struct side *s)
{
	uint64_t n = s->conn.log.mmap_len;

	for (unsigned i = 0; i < s->conn.mem.nregions; i++)
		n += s->conn.mem.regions[i].mmap_len;
	return n;
}

/* ---- sizes ---- */

static void test_size_strings(void **state)
{
	char buf[MEM_CAP_STR_LEN];
	uint64_t v;

	(void)state;
	assert_int_equal(mem_cap_parse("2T", &v), 0);
	assert_true(v == 2ull << 40);
	assert_int_equal(mem_cap_parse("1536m", &v), 0);
	assert_true(v == 1536 * MIB);
	assert_int_equal(mem_cap_parse("4097", &v), 0);
	assert_true(v == 4097);
	assert_int_equal(mem_cap_parse("8388608T", &v), 0); /* 2^63 */
	for (const char *const *b = (const char *const[]){"", "0", "0G", "-1G", " 1G", "1GB", "1P",
							   "8388609T", "99999999999999999999",
							   "1.5G", "G", NULL};
	     *b; b++)
		assert_int_equal(mem_cap_parse(*b, &v), -1);
	assert_string_equal(mem_cap_format(2ull << 40, buf), "2T");
	assert_string_equal(mem_cap_format(1536 * MIB, buf), "1536M");
	assert_string_equal(mem_cap_format(4097, buf), "4097");
	assert_string_equal(mem_cap_format(1ull << 50, buf), "1024T");
}

static void test_max_mem_port_key(void **state)
{
	struct port_config pc;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/a,switch", 0, &pc, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_true(pc.max_mem == 0); /* the default, MEM_CAP_PORT_DEFAULT */
	assert_int_equal(port_spec_runtime("socket=/a,switch,max-mem=16G", 0, &pc, NULL, NULL,
					   0, err, sizeof(err)), 0);
	assert_true(pc.max_mem == 16ull << 30);
	assert_int_equal(port_spec_runtime("socket=/a,switch,max-mem=16Q", 0, &pc, NULL, NULL,
					   0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "max-mem"));
	/* A 1 TiB QEMU guest (memory below 4 GiB mapped twice) and its dirty log fit by default. */
	assert_true((1ull << 40) + (3ull << 30) + (32 * MIB) <= MEM_CAP_PORT_DEFAULT);
}

static void test_max_guest_mem_option(void **state)
{
	static struct vnetd_options o;
	char *argv[] = {"vnetd", "--port", "socket=/a,switch", "--control", "/c",
			"--max-guest-mem", "3T", NULL};

	(void)state;
	assert_int_equal(options_parse(7, argv, &o), 0);
	assert_true(o.max_guest_mem == 3ull << 40);
	argv[6] = "0";
	assert_int_equal(options_parse(7, argv, &o), -1);
	assert_int_equal(options_parse(5, argv, &o), 0);
	assert_true(o.max_guest_mem == 0); /* MEM_CAP_DAEMON_DEFAULT */
}

/*
 * --poll-us N|auto for every worker, W:N|W:auto for one (auto the default), --poll-budget NS; bad
 * values and workers beyond --workers fail.
 */
static void test_poll_us_option(void **state)
{
	static struct vnetd_options o;
	char *argv[] = {"vnetd", "--port", "socket=/a,switch", "--control", "/c", "--workers", "2",
			"--poll-us", "200", "--poll-us", "1:0", NULL};

	(void)state;
	assert_int_equal(options_parse(11, argv, &o), 0);
	assert_int_equal(o.poll_us, 200);
	assert_int_equal(o.poll_us_worker[0], -1);
	assert_int_equal(o.poll_us_worker[1], 0);
	assert_int_equal(options_parse(5, argv, &o), 0);
	assert_true(o.poll_us == VNET_POLL_AUTO); /* the default: adaptive */
	assert_int_equal(o.poll_budget_ns, VNET_POLL_BUDGET_DEFAULT);
	argv[7] = "--poll-budget";
	argv[8] = "10";
	argv[10] = "1:auto";
	assert_int_equal(options_parse(11, argv, &o), 0);
	assert_int_equal(o.poll_budget_ns, 10);
	assert_true(o.poll_us == VNET_POLL_AUTO);
	assert_true(o.poll_us_worker[1] == VNET_POLL_AUTO);
	argv[8] = "100001";
	assert_int_equal(options_parse(11, argv, &o), -1); /* over 100 us a packet */
	argv[7] = "--poll-us";
	argv[8] = "auto";
	argv[10] = "2:50"; /* worker 2 of 2 */
	assert_int_equal(options_parse(11, argv, &o), -1);
	for (unsigned i = 0; i < 6; i++) {
		static char *bad[] = {"x", "1000001", ":5", "1:", "16:5", "1:autox"};

		argv[10] = bad[i];
		assert_int_equal(options_parse(11, argv, &o), -1);
	}
}

/* ---- the per-port cap ---- */

static void test_port_cap_refuses_and_keeps_the_old_table(void **state)
{
	struct side s;

	(void)state;
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
	side_open(&s, 64 * MIB);
	negotiate(&s);
	/* 2 x 48 MiB: over 64 MiB. Refused before anything is mapped; the connection stays. */
	assert_true(set_mem_table(&s, 2, 48 * MIB, 0) != 0);
	assert_int_equal(s.conn.mem.nregions, 0);
	assert_true(mem_cap_in_use() == 0);
	/* The mmap offset counts: the region is mapped from the start of the file. */
	assert_true(set_mem_table(&s, 1, 32 * MIB, 40 * MIB) != 0);
	assert_true(mem_cap_in_use() == 0);
	/* Within the cap. */
	assert_int_equal(set_mem_table(&s, 2, 16 * MIB, 0), 0);
	assert_int_equal(s.conn.mem.nregions, 2);
	assert_true(mem_cap_in_use() == 32 * MIB);
	/* A new table replaces the old one: only the new one counts against max-mem=. */
	assert_int_equal(set_mem_table(&s, 1, 48 * MIB, 0), 0);
	assert_true(mem_cap_in_use() == 48 * MIB && mapped(&s) == 48 * MIB);
	/* Refused: the table in use stays, and so does its charge. */
	assert_true(set_mem_table(&s, 4, 20 * MIB, 0) != 0);
	assert_int_equal(s.conn.mem.nregions, 1);
	assert_true(mem_cap_in_use() == 48 * MIB);
	/* The dirty log counts with the table: 48 + 32 > 64, 48 + 8 fits. */
	assert_int_equal(set_log_base(&s, 32 * MIB), 1);
	assert_null(s.conn.log.bitmap);
	assert_int_equal(set_log_base(&s, 8 * MIB), 0);
	assert_true(mem_cap_in_use() == 56 * MIB);
	/* ... and the other way round: a table that no longer fits next to the log. */
	assert_true(set_mem_table(&s, 1, 60 * MIB, 0) != 0);
	assert_true(mem_cap_in_use() == 56 * MIB);
	side_close(&s);
	assert_true(mem_cap_in_use() == 0);
}

/* ---- the daemon-wide cap ---- */

static void test_daemon_cap_across_ports(void **state)
{
	struct side a, b;

	(void)state;
	mem_cap_set_daemon(100 * MIB);
	side_open(&a, 0); /* the default per-port cap */
	side_open(&b, 0);
	negotiate(&a);
	negotiate(&b);
	assert_int_equal(set_mem_table(&a, 1, 64 * MIB, 0), 0);
	assert_true(set_mem_table(&b, 1, 40 * MIB, 0) != 0); /* 64 + 40 > 100 */
	assert_int_equal(b.conn.mem.nregions, 0);
	assert_int_equal(set_mem_table(&b, 1, 32 * MIB, 0), 0);
	assert_true(mem_cap_in_use() == 96 * MIB);
	assert_int_equal(set_log_base(&b, 8 * MIB), 1); /* 96 + 8 > 100 */
	/* A table replaced while the old one is still mapped: both count until the swap. */
	assert_true(set_mem_table(&a, 1, 8 * MIB, 0) != 0);
	side_close(&a);
	assert_true(mem_cap_in_use() == 32 * MIB);
	assert_int_equal(set_log_base(&b, 8 * MIB), 0);
	side_close(&b);
	assert_true(mem_cap_in_use() == 0);
	mem_cap_set_daemon(MEM_CAP_DAEMON_DEFAULT);
}

/* ---- a kick fd that hangs up ---- */

static void test_dead_kick_fd_breaks_the_queue_once(void **state)
{
	struct side s;
	struct vnet_queue *q;
	uint64_t idx = 1; /* TX */
	int p[2];

	(void)state;
	side_open(&s, 0);
	negotiate(&s);
	assert_int_equal(pipe(p), 0);
	send_msg(&s, VU_SET_VRING_KICK, &idx, sizeof(idx), &p[0], 1);
	assert_int_equal(reply(&s), 0);
	close(p[0]);
	close(p[1]); /* the write end gone: the read end reports EPOLLHUP for ever */
	assert_true(s.conn.q[1].kick >= 0);
	s.kick_calls = 0;
	vu_conn_kick_failed(&s.conn, 1, EPOLLHUP);
	q = vnet_dev_queue(s.dev, 1);
	assert_true(q->vq.broken);
	assert_int_equal(s.conn.q[1].kick, -1);
	assert_int_equal(s.kick_new[1], -1); /* the owner took it out of epoll */
	assert_int_equal(s.kick_calls, 1);
	vu_conn_kick_failed(&s.conn, 1, EPOLLHUP); /* a stale event: nothing more */
	assert_int_equal(s.kick_calls, 1);
	side_close(&s);
}

/* ---- SET_VRING_NUM: any size for a packed ring, a power of two for a split one ---- */

static uint64_t set_vring_num(struct side *s, uint32_t idx, uint32_t num)
{
	struct vu_vring_state st = {.index = idx, .num = num};

	send_msg(s, VU_SET_VRING_NUM, &st, sizeof(st), NULL, 0);
	return reply(s);
}

static void test_vring_num_packed_any_size(void **state)
{
	struct side s;

	(void)state;
	side_open(&s, 0);
	negotiate(&s);
	/* Split (features without RING_PACKED): powers of two only. */
	assert_int_equal(request_u64(&s, VU_SET_FEATURES, 1ull << VIRTIO_F_VERSION_1), 0);
	assert_int_not_equal(set_vring_num(&s, 1, 200), 0);
	assert_int_not_equal(set_vring_num(&s, 1, 3), 0);
	assert_int_equal(set_vring_num(&s, 1, 256), 0);
	/* Packed: any size 1..32768 (VIRTIO 1.3 "Packed Virtqueues": no power of two needed). */
	assert_int_equal(request_u64(&s, VU_SET_FEATURES,
				     (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_F_RING_PACKED)),
			 0);
	assert_int_equal(set_vring_num(&s, 1, 200), 0);
	assert_int_equal(vnet_dev_queue(s.dev, 1)->vq.num, 200);
	assert_int_equal(set_vring_num(&s, 0, 3), 0);
	assert_int_equal(set_vring_num(&s, 2, 1), 0);
	assert_int_equal(set_vring_num(&s, 1, 32768), 0);
	assert_int_not_equal(set_vring_num(&s, 1, 0), 0);
	assert_int_not_equal(set_vring_num(&s, 1, 32769), 0);
	assert_int_equal(vnet_dev_queue(s.dev, 1)->vq.num, 32768);
	side_close(&s);
}

/* ---- a device-state fd that hangs up without an EOF or error to read ---- */

static void state_fd_changed(void *ctx, int old_fd, int new_fd, uint32_t events)
{
	struct side *s = ctx;

	(void)old_fd;
	(void)events;
	s->kick_new[0] = new_fd; /* reused: the state fd the owner watches now */
	s->kick_calls++;
}

static const struct vu_owner_ops owner_with_state = {.kick_changed = owner_kick_changed,
						     .state_fd_changed = state_fd_changed};

static void test_state_fd_hangup_ends_the_transfer(void **state)
{
	struct vu_transfer_state t = {.direction = VU_TRANSFER_STATE_LOAD,
				      .phase = VU_TRANSFER_STATE_PHASE_STOPPED};
	int efd = eventfd(0, EFD_CLOEXEC); /* reads say EAGAIN (count 0), never EOF */
	struct side s;

	(void)state;
	side_open(&s, 0);
	s.conn.ops = &owner_with_state;
	negotiate_with(&s, 1ull << VU_PROTOCOL_F_DEVICE_STATE);
	send_msg(&s, VU_SET_DEVICE_STATE_FD, &t, sizeof(t), &efd, 1);
	assert_true(reply(&s) == (1ull << 8)); /* accepted, no fd of ours */
	assert_true(s.conn.xfer.fd >= 0);
	vu_conn_state_io(&s.conn, EPOLLIN);
	assert_true(s.conn.xfer.fd >= 0); /* nothing yet: wait */
	vu_conn_state_io(&s.conn, EPOLLHUP); /* epoll would say so again and again */
	assert_int_equal(s.conn.xfer.fd, -1);
	assert_int_equal(s.kick_new[0], -1); /* the owner stopped watching it */
	assert_int_equal(request_u64(&s, VU_CHECK_DEVICE_STATE, 0), 1);
	close(efd);
	side_close(&s);
}

static bool no_device_state(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct vu_owner_ops owner_without_state = {.kick_changed = owner_kick_changed,
							.state_fd_changed = state_fd_changed,
							.device_state = no_device_state};

/* migrate-state=off: DEVICE_STATE is not offered, asking for it fails, a pipe is refused. */
static void test_migrate_state_off(void **state)
{
	struct vu_transfer_state t = {.direction = VU_TRANSFER_STATE_SAVE,
				      .phase = VU_TRANSFER_STATE_PHASE_STOPPED};
	int fds[2];
	struct port_config pc;
	char err[256];
	struct side s;

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/a,switch", 0, &pc, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_false(pc.no_device_state); /* on by default */
	assert_int_equal(port_spec_runtime("socket=/a,switch,migrate-state=off", 0, &pc, NULL,
					   NULL, 0, err, sizeof(err)), 0);
	assert_true(pc.no_device_state);
	assert_int_equal(port_spec_runtime("socket=/a,switch,migrate-state=maybe", 0, &pc, NULL,
					   NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "migrate-state"));

	side_open(&s, 0);
	send_msg(&s, VU_GET_PROTOCOL_FEATURES, NULL, 0, NULL, 0);
	assert_true(reply(&s) & (1ull << VU_PROTOCOL_F_DEVICE_STATE)); /* no owner: offered */
	s.conn.ops = &owner_without_state;
	send_msg(&s, VU_GET_PROTOCOL_FEATURES, NULL, 0, NULL, 0);
	assert_false(reply(&s) & (1ull << VU_PROTOCOL_F_DEVICE_STATE));
	assert_int_equal(request_u64(&s, VU_SET_PROTOCOL_FEATURES,
				     (1ull << VU_PROTOCOL_F_REPLY_ACK) |
					     (1ull << VU_PROTOCOL_F_DEVICE_STATE)),
			 1); /* not offered: NAK (REPLY_ACK still taken) */
	assert_false(s.conn.protocol_features & (1ull << VU_PROTOCOL_F_DEVICE_STATE));
	negotiate(&s);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	send_msg(&s, VU_SET_DEVICE_STATE_FD, &t, sizeof(t), &fds[1], 1);
	assert_true(reply(&s) == 1); /* refused */
	assert_int_equal(s.conn.xfer.fd, -1);
	assert_int_equal(request_u64(&s, VU_CHECK_DEVICE_STATE, 0), 1);
	close(fds[0]);
	close(fds[1]);
	side_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_strings),
		cmocka_unit_test(test_max_mem_port_key),
		cmocka_unit_test(test_max_guest_mem_option),
		cmocka_unit_test(test_poll_us_option),
		cmocka_unit_test(test_port_cap_refuses_and_keeps_the_old_table),
		cmocka_unit_test(test_daemon_cap_across_ports),
		cmocka_unit_test(test_dead_kick_fd_breaks_the_queue_once),
		cmocka_unit_test(test_vring_num_packed_any_size),
		cmocka_unit_test(test_state_fd_hangup_ends_the_transfer),
		cmocka_unit_test(test_migrate_state_off),
	};

	log_threshold = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
