/* SPDX-License-Identifier: MIT */
/* fuzz_vhost_msg.c - libFuzzer target: vu_msg_parse() on raw bytes, and the whole vhost-user dispatcher. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_msg.h"
#include "dev/dev.h"

/*
 * Input layout: byte 0 selects the mode, the rest is wire bytes.
 *   bit 7 clear: parse mode. The rest is one message; nfds = (byte0 & 0x7f) % 9.
 *   bit 7 set:   stream mode. The rest is a stream of messages written into a socketpair and
 *                handled by vu_conn_handle_readable() against a real device, without fds
 *                except one: the first ADD_MEM_REG in the stream comes with a 1 MiB memfd,
 *                so memory slots (ADD, REM, rings in an added region) are exercised too.
 * Parse mode also runs on stream inputs, so every input exercises the validator.
 */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	.now_ns = fake_now,
	.notify = fake_notify,
	.arm_timer = fake_arm_timer,
};

static void fake_kick_changed(void *ctx, unsigned qidx, int old_fd, int new_fd)
{
	(void)ctx;
	(void)qidx;
	(void)old_fd;
	(void)new_fd;
}

static const struct vu_owner_ops fake_owner = {.kick_changed = fake_kick_changed};

static struct vnet_dev *dev;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vnet_dev_params params = {
		.mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
		.queue_pairs = 2,
		.mtu = 1500,
		.features_mask = ~0ull,
		.tx_mode = VNET_TX_KICK,
	};

	(void)argc;
	(void)argv;
	log_threshold = LOG_ERR; /* hostile input is expected: keep the output readable */
	dev = vnet_dev_create(&params, &fake_env, NULL);
	if (!dev)
		abort();
	return 0;
}

/* What a successful parse promises the dispatcher; abort() if the validator lets anything else by. */
static void check_parsed(const struct vu_msg *m, size_t len, unsigned nfds)
{
	int need = vu_msg_fds_needed(m);

	if ((m->flags & VU_FLAG_VERSION_MASK) != VU_VERSION || m->size != len - VU_HDR_SIZE ||
	    m->size > VU_MSG_MAX_PAYLOAD || m->nfds != nfds || nfds > VU_MAX_FDS)
		abort();
	if (need >= 0 && (unsigned)need != nfds)
		abort();
	if (need == VU_FDS_ZERO_OR_ONE && nfds > 1)
		abort();
	switch (m->request) {
	case VU_ADD_MEM_REG:
	case VU_REM_MEM_REG:
		if (m->size != sizeof(struct vu_mem_reg) || nfds > 1 ||
		    (m->request == VU_ADD_MEM_REG && nfds != 1))
			abort();
		break;
	case VU_SET_MEM_TABLE:
		if (m->p.mem.nregions < 1 || m->p.mem.nregions > VU_MAX_REGIONS ||
		    m->size < 8 + m->p.mem.nregions * sizeof(struct vu_mem_region))
			abort();
		break;
	case VU_GET_CONFIG:
	case VU_SET_CONFIG:
		if (m->p.config.size > VU_MAX_CONFIG_SIZE ||
		    (uint64_t)m->p.config.offset + m->p.config.size > VU_MAX_CONFIG_SIZE ||
		    m->size != VU_CONFIG_HDR_SIZE + m->p.config.size)
			abort();
		break;
	case VU_SET_VRING_NUM:
	case VU_SET_VRING_BASE:
	case VU_GET_VRING_BASE:
	case VU_SET_VRING_ENABLE:
	case VU_SET_VRING_ADDR:
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR:
		if (vu_msg_vring_index(m) >= VU_MSG_MAX_VRINGS)
			abort();
		break;
	default:
		break;
	}
}

static void parse_mode(const uint8_t *buf, size_t len, unsigned nfds)
{
	struct vu_msg msg;
	const char *why = NULL;
	uint8_t *copy;

	/* An exact-size heap copy, so ASan catches any read past len. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return;
	if (len)
		memcpy(copy, buf, len);
	if (vu_msg_parse(copy, len, nfds, &msg, &why) == 0)
		check_parsed(&msg, len, nfds);
	else if (!why)
		abort();
	free(copy);
}

static void drain(int fd)
{
	uint8_t sink[4096];

	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

/* Where the first ADD_MEM_REG message starts in the stream, walking the headers; len if none. */
static size_t first_add_mem_reg(const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (len - off >= VU_HDR_SIZE) {
		uint32_t req, size;

		memcpy(&req, buf + off, 4);
		memcpy(&size, buf + off + 8, 4);
		if (req == VU_ADD_MEM_REG)
			return off;
		if (size > len - off - VU_HDR_SIZE)
			break;
		off += VU_HDR_SIZE + size;
	}
	return len;
}

/* send_with_memfd() - one byte at buf with a fresh 1 MiB memfd attached; bytes sent or -1. */
static ssize_t send_with_memfd(int sock, const uint8_t *buf)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
			    .msg_controllen = sizeof(cbuf.b)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int fd = memfd_create("fuzz-mem", MFD_CLOEXEC);
	ssize_t n;

	if (fd < 0 || ftruncate(fd, 1 << 20) < 0)
		abort();
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	close(fd);
	return n;
}

static void stream_mode(const uint8_t *buf, size_t len)
{
	struct vu_conn conn;
	size_t off = 0, add_at = first_add_mem_reg(buf, len);
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0)
		abort();
	/* Whatever fits in the socket buffer; then EOF, so no read ever waits. */
	while (off < len) {
		ssize_t n;

		if (off == add_at)
			n = send_with_memfd(sv[1], buf + off);
		else
			n = send(sv[1], buf + off, (off < add_at ? add_at : len) - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);

	vu_conn_init(&conn, sv[0], dev, &fake_owner, NULL);
	/* Each handled message consumes at least a header: this bounds the loop. */
	for (size_t i = 0; i <= off / VU_HDR_SIZE + 1; i++) {
		int r = vu_conn_handle_readable(&conn);

		drain(sv[1]);
		if (r < 0)
			break;
	}
	for (unsigned q = 0; q < VNET_MAX_QUEUES; q++)
		vu_conn_notify(&conn, q);
	vu_conn_close(&conn);
	vu_conn_close(&conn); /* idempotent */
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	parse_mode(data + 1, size - 1, (data[0] & 0x7fu) % (VU_MAX_FDS + 1));
	if (data[0] & 0x80u)
		stream_mode(data + 1, size - 1);
	return 0;
}
