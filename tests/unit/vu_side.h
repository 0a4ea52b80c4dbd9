/* SPDX-License-Identifier: MIT */
/* vu_side.h - unit-test fixture: a device and a vhost-user connection over a socketpair, driven from the frontend's end. */
#ifndef VNETD_TEST_VU_SIDE_H
#define VNETD_TEST_VU_SIDE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "vhost/vhost.h"
#include "vhost/vhost_user_msg.h"
#include "dev/dev.h"

/* ---- a device, a connection over a socketpair, and the frontend's end of it ---- */

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return 0;
}

static void fake_notify(void *ctx, unsigned qidx)
{
	(void)ctx;
	(void)qidx;
}

static void fake_arm_timer(void *ctx, unsigned qidx, uint64_t deadline_ns)
{
	(void)ctx;
	(void)qidx;
	(void)deadline_ns;
}

static const struct vnet_env_ops fake_env = {
	.now_ns = fake_now, .notify = fake_notify, .arm_timer = fake_arm_timer};

struct side {
	struct vu_conn conn;
	struct vnet_dev *dev;
	int peer;             /* the frontend's end */
	uint64_t cap;         /* what the owner's mem_cap() says */
	int kick_new[VNET_MAX_QUEUES];
	unsigned kick_calls;
};

static void owner_kick_changed(void *ctx, unsigned qidx, int old_fd, int new_fd)
{
	struct side *s = ctx;

	(void)old_fd;
	s->kick_new[qidx] = new_fd;
	s->kick_calls++;
}

static uint64_t owner_mem_cap(void *ctx)
{
	return ((struct side *)ctx)->cap;
}

static const struct vu_owner_ops owner = {.kick_changed = owner_kick_changed,
					  .mem_cap = owner_mem_cap};

static void side_open(struct side *s, uint64_t cap)
{
	struct vnet_dev_params params = {
		.mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
		.queue_pairs = 1,
		.features_mask = ~0ull,
		.tx_mode = VNET_TX_KICK,
	};
	int sv[2];

	memset(s, 0, sizeof(*s));
	s->cap = cap;
	s->dev = vnet_dev_create(&params, &fake_env, NULL);
	assert_non_null(s->dev);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->peer = sv[1];
	vu_conn_init(&s->conn, sv[0], s->dev, &owner, s);
}

static void side_close(struct side *s)
{
	vu_conn_close(&s->conn);
	close(s->peer);
	vnet_dev_destroy(s->dev);
}

/* send_msg() - one request with fds, handled at once. */
static void send_msg(struct side *s, uint32_t req, const void *payload, uint32_t size,
		     const int *fds, unsigned nfds)
{
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];
	union {
		char b[CMSG_SPACE(VU_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	uint32_t flags = VU_VERSION | VU_FLAG_NEED_REPLY;
	struct iovec iov = {.iov_base = buf, .iov_len = VU_HDR_SIZE + size};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	memcpy(buf, &req, 4);
	memcpy(buf + 4, &flags, 4);
	memcpy(buf + 8, &size, 4);
	if (size)
		memcpy(buf + VU_HDR_SIZE, payload, size);
	if (nfds) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	assert_int_equal(sendmsg(s->peer, &mh, 0), (ssize_t)(VU_HDR_SIZE + size));
	do /* the header, then the payload */
		assert_int_equal(vu_conn_handle_readable(&s->conn), 0);
	while (s->conn.rx.len);
}

/* reply() - the u64 of the reply (REPLY_ACK or the request's own). */
static uint64_t reply(struct side *s)
{
	uint8_t buf[VU_HDR_SIZE + 8];
	uint64_t v;

	assert_int_equal(recv(s->peer, buf, sizeof(buf), MSG_DONTWAIT), (ssize_t)sizeof(buf));
	memcpy(&v, buf + VU_HDR_SIZE, 8);
	return v;
}

static uint64_t request_u64(struct side *s, uint32_t req, uint64_t v)
{
	send_msg(s, req, &v, sizeof(v), NULL, 0);
	return reply(s);
}

/*
 * negotiate() - REPLY_ACK and LOG_SHMFD, plus the protocol features in `extra`, then SET_OWNER
 * (acked), as every real frontend sends before its rings (vhost_user_state.c).
 */
static void negotiate_with(struct side *s, uint64_t extra)
{
	assert_int_equal(request_u64(s, VU_SET_PROTOCOL_FEATURES,
				     (1ull << VU_PROTOCOL_F_REPLY_ACK) |
					     (1ull << VU_PROTOCOL_F_LOG_SHMFD) | extra),
			 0);
	send_msg(s, VU_SET_OWNER, NULL, 0, NULL, 0);
	assert_int_equal(reply(s), 0);
}

/* A sparse memfd of `size` bytes: costs nothing until touched. */
static int sparse_memfd(uint64_t size)
{
	int fd = memfd_create("vu-side", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

#endif
