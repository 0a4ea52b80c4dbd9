/* SPDX-License-Identifier: MIT */
/* vu.c - the paced driver's vhost-user frontend: connect or accept, negotiate, share memory, set rings up. */
#include "vu.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Requests (QEMU docs/interop/vhost-user.rst; vnetd's src/vhost/vhost_user_msg.h). */
enum {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_SET_MEM_TABLE = 5,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_SET_VRING_ENABLE = 18,
};

#define VU_VERSION 1u
#define VU_FLAG_REPLY (1u << 2)
#define VU_FLAG_NEED_REPLY (1u << 3)
#define VU_GPA_BASE 0x40000000ull
#define VU_UVA_BASE 0x7f5500000000ull	/* a made-up frontend address: the backend never uses it */

struct vu_hdr {
	uint32_t request, flags, size;
};

struct vu_vring_addr {
	uint32_t index, flags;
	uint64_t desc, used, avail, log;
};

struct vu_region {
	uint64_t gpa, size, uva, mmap_offset;
};

struct vu_mem_table {
	uint32_t nregions, padding;
	struct vu_region region[1];
};

static int fail(const struct vu_dev *d, const char *what, int err)
{
	fprintf(stderr, "paced: %s: %s: %s\n", d->name, what, strerror(err));
	return -err;
}

/* Wait until fd is readable, up to ms; 0 when it is, -ETIMEDOUT otherwise. */
static int wait_in(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static int read_full(int fd, void *buf, size_t len, int ms)
{
	uint8_t *p = buf;

	while (len) {
		int w = wait_in(fd, ms);
		ssize_t n;

		if (w)
			return w;
		n = read(fd, p, len);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(struct vu_dev *d, uint32_t req, uint32_t flags, const void *payload,
		    uint32_t len, const int *fds, int nfds)
{
	struct vu_hdr h = {.request = req, .flags = VU_VERSION | flags, .size = len};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)payload, len}};
	char ctl[CMSG_SPACE(sizeof(int) * 8)];
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
	ssize_t n;

	memset(ctl, 0, sizeof(ctl));
	if (nfds) {
		struct cmsghdr *c;

		m.msg_control = ctl;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(d->sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)(sizeof(h) + len) ? 0 : -EIO;
}

/* The backend's reply to req: exactly len payload bytes into out. */
static int recv_reply(struct vu_dev *d, uint32_t req, void *out, uint32_t len, int ms)
{
	struct vu_hdr h;
	int r = read_full(d->sock, &h, sizeof(h), ms);

	if (r)
		return r;
	if (h.request != req || !(h.flags & VU_FLAG_REPLY) || h.size != len)
		return -EPROTO;
	return read_full(d->sock, out, len, ms);
}

/* A request without a reply of its own; acked (and the ack checked) under REPLY_ACK. */
static int request(struct vu_dev *d, uint32_t req, const void *payload, uint32_t len,
		   const int *fds, int nfds, int ms)
{
	uint64_t ack;
	int r = send_msg(d, req, d->reply_ack ? VU_FLAG_NEED_REPLY : 0, payload, len, fds, nfds);

	if (r || !d->reply_ack)
		return r;
	r = recv_reply(d, req, &ack, sizeof(ack), ms);
	return r ? r : ack ? -EREMOTEIO : 0;
}

static int get_u64(struct vu_dev *d, uint32_t req, uint64_t *v, int ms)
{
	int r = send_msg(d, req, 0, NULL, 0, NULL, 0);

	return r ? r : recv_reply(d, req, v, sizeof(*v), ms);
}

/**
 * vu_listen() - a listening socket at path (a stale one replaced), for --server.
 * @path: the socket's path
 *
 * Return: the fd, or -errno.
 */
int vu_listen(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/* Client: connect to path, retrying while the backend has not made its socket yet. */
static int connect_retry(const char *path, int ms)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec pause = {0, 20 * 1000 * 1000};

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	for (int waited = 0;; waited += 20) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		err = errno;
		close(fd);
		if ((err != ENOENT && err != ECONNREFUSED) || waited >= ms)
			return -err;
		nanosleep(&pause, NULL);
	}
}

static int negotiate(struct vu_dev *d, const struct vu_opts *o)
{
	uint64_t offered, want = 1ull << VIRTIO_F_VERSION_1, pf;
	int r = get_u64(d, VU_GET_FEATURES, &offered, o->timeout_ms);

	if (r)
		return fail(d, "GET_FEATURES", -r);
	if (!(offered & want))
		return fail(d, "the backend does not offer VIRTIO_F_VERSION_1", EPROTO);
	if (o->event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (offered & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) {
		want |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
		r = get_u64(d, VU_GET_PROTOCOL_FEATURES, &pf, o->timeout_ms);
		if (r)
			return fail(d, "GET_PROTOCOL_FEATURES", -r);
		pf &= 1ull << VU_PROTOCOL_F_REPLY_ACK;
		d->reply_ack = pf != 0;	/* this very request is acked then */
		r = request(d, VU_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0, o->timeout_ms);
		if (r)
			return fail(d, "SET_PROTOCOL_FEATURES", -r);
	}
	d->features = want & offered;
	r = request(d, VU_SET_OWNER, NULL, 0, NULL, 0, o->timeout_ms);
	if (!r)
		r = request(d, VU_SET_FEATURES, &d->features, sizeof(d->features), NULL, 0,
			    o->timeout_ms);
	return r ? fail(d, "SET_OWNER/SET_FEATURES", -r) : 0;
}

static int share_memory(struct vu_dev *d, const struct vu_opts *o)
{
	struct vu_mem_table t = {.nregions = 1};
	size_t rx = vq_bytes(o->num, o->buf_size);
	int r;

	d->mem_size = rx + vq_bytes(o->num, o->buf_size);
	d->gpa = VU_GPA_BASE;
	d->uva = VU_UVA_BASE;
	d->memfd = memfd_create("paced-guest", MFD_CLOEXEC);
	if (d->memfd < 0 || ftruncate(d->memfd, (off_t)d->mem_size))
		return fail(d, "guest memory (memfd)", errno);
	d->mem = mmap(NULL, d->mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		      d->memfd, 0);
	if (d->mem == MAP_FAILED) {
		d->mem = NULL;
		return fail(d, "mmap guest memory", errno);
	}
	r = vq_init(&d->rx, d->mem, d->gpa, o->num, o->buf_size, true);
	if (!r)
		r = vq_init(&d->tx, d->mem + rx, d->gpa + rx, o->num, o->buf_size, false);
	if (r)
		return fail(d, "queue set-up", -r);
	d->rx.event_idx = d->tx.event_idx = d->features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	vq_irq_set(&d->rx, false);
	vq_irq_set(&d->tx, false);
	t.region[0] = (struct vu_region){d->gpa, d->mem_size, d->uva, 0};
	r = request(d, VU_SET_MEM_TABLE, &t, sizeof(t), &d->memfd, 1, o->timeout_ms);
	return r ? fail(d, "SET_MEM_TABLE", -r) : 0;
}

static uint64_t uva_of(const struct vu_dev *d, const void *p)
{
	return d->uva + (uint64_t)((const uint8_t *)p - d->mem);
}

static int ring_up(struct vu_dev *d, struct vq *q, uint32_t index, int ms)
{
	uint32_t state[2] = {index, q->num}, base[2] = {index, 0}, on[2] = {index, 1};
	struct vu_vring_addr a = {.index = index, .desc = uva_of(d, q->desc),
				  .used = uva_of(d, q->used_flags),
				  .avail = uva_of(d, q->avail_flags)};
	uint64_t idx = index;
	int r = request(d, VU_SET_VRING_NUM, state, sizeof(state), NULL, 0, ms);

	if (!r)
		r = request(d, VU_SET_VRING_BASE, base, sizeof(base), NULL, 0, ms);
	if (!r)
		r = request(d, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, ms);
	if (!r)
		r = request(d, VU_SET_VRING_CALL, &idx, sizeof(idx), &q->call_fd, 1, ms);
	if (!r)
		r = request(d, VU_SET_VRING_KICK, &idx, sizeof(idx), &q->kick_fd, 1, ms);
	if (!r && (d->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		r = request(d, VU_SET_VRING_ENABLE, on, sizeof(on), NULL, 0, ms);
	return r ? fail(d, index ? "TX ring set-up" : "RX ring set-up", -r) : 0;
}

/**
 * vu_open() - one device, up and running: its socket, features, shared memory and both rings.
 * @d:		filled in (vu_close() it, also after a failure)
 * @path:	the socket (for messages; in client mode, where to connect)
 * @listen_fd:	server mode: the vu_listen() socket to accept from; else -1
 * @o:		the options
 *
 * The RX ring starts full of buffers and both rings with calls suppressed (the caller turns
 * RX calls on with vq_irq_set()); each queue is kicked once at the end.
 * Return: 0, or -errno (the reason printed).
 */
int vu_open(struct vu_dev *d, const char *path, int listen_fd, const struct vu_opts *o)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->name = path;
	d->memfd = d->rx.kick_fd = d->rx.call_fd = d->tx.kick_fd = d->tx.call_fd = -1;
	if (listen_fd >= 0) {
		r = wait_in(listen_fd, o->timeout_ms);
		d->sock = r ? r : accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (d->sock < 0)
			return fail(d, "no backend connected", r ? -r : errno);
	} else {
		d->sock = connect_retry(path, o->timeout_ms);
		if (d->sock < 0)
			return fail(d, "connect", -d->sock);
	}
	r = negotiate(d, o);
	if (!r)
		r = share_memory(d, o);
	if (!r)
		r = ring_up(d, &d->rx, 0, o->timeout_ms);
	if (!r)
		r = ring_up(d, &d->tx, 1, o->timeout_ms);
	if (r)
		return r;
	eventfd_write(d->rx.kick_fd, 1);
	eventfd_write(d->tx.kick_fd, 1);
	return 0;
}

/* Close the connection (the backend stops the device), the eventfds and the memory. */
void vu_close(struct vu_dev *d)
{
	if (!d->name)		/* never opened */
		return;
	if (d->sock >= 0)
		close(d->sock);
	d->sock = -1;
	vq_fini(&d->rx);
	vq_fini(&d->tx);
	if (d->mem)
		munmap(d->mem, d->mem_size);
	if (d->memfd >= 0)
		close(d->memfd);
	d->mem = NULL;
	d->memfd = -1;
}
