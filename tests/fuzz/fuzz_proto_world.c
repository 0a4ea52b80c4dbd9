/* SPDX-License-Identifier: MIT */
/* fuzz_proto_world.c - fuzz_vhost_proto's world: ports, sockets, fds, the event loop, the oracles. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_proto.h"
#include "mem/guest_race.h"
#include "lib/iov.h"
#include "lib/log.h"
#include "backend/switch/switch_ips.h"
#include "backend/switch/switch_lladdr.h"
#include "lib/virtio_net_defs.h"

struct fp_world W;

/* The ports' MACs: what port security admits for each (mac-change off). */
const uint8_t fp_mac[FP_PORTS][6] = {
	{0x02, 0x00, 0x00, 0x00, 0x00, 0xa0},
	{0x02, 0x00, 0x00, 0x00, 0x00, 0xa1},
	{0x02, 0x00, 0x00, 0x00, 0x00, 0xa2},
};

/* Port 1's ips= list: its own IPv4 and IPv6 address. */
static const struct switch_ip_net fp_ips[2] = {
	{.v6 = false, .prefix = 32, .addr = {10, 0, 0, 2}},
	{.v6 = true, .prefix = 128, .addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
};

/* ---- The frontends' own fds: every one is closed at the end of the input ---- */

#define FP_OWN_MAX 1024
static int own[FP_OWN_MAX];
static unsigned nown;

int fp_own_fd(int fd)
{
	if (fd < 0)
		return fd;
	if (nown == FP_OWN_MAX)
		fp_fail("too many frontend fds (fuzzer limit)");
	own[nown++] = fd;
	return fd;
}

void fp_close_own(int *fd)
{
	if (*fd < 0)
		return;
	for (unsigned i = 0; i < nown; i++)
		if (own[i] == *fd) {
			own[i] = own[--nown];
			break;
		}
	close(*fd);
	*fd = -1;
}

static void close_all_own(void)
{
	while (nown)
		close(own[--nown]);
}

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int fp_make_fd(enum fp_fd_kind kind, int *keep, uint8_t *keep_kind)
{
	int fd = -1, pair[2];

	*keep = -1;
	if (keep_kind)
		*keep_kind = (uint8_t)kind;
	switch (kind) {
	case FP_FD_EVENTFD:
		fd = fp_own_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		*keep = fd;
		break;
	case FP_FD_PIPE_R:
	case FP_FD_PIPE_R_DEAD:
	case FP_FD_PIPE_W:
		if (pipe2(pair, O_NONBLOCK | O_CLOEXEC) < 0)
			return -1;
		fp_own_fd(pair[0]);
		fp_own_fd(pair[1]);
		fd = kind == FP_FD_PIPE_W ? pair[1] : pair[0];
		*keep = kind == FP_FD_PIPE_W ? pair[0] : pair[1];
		if (kind == FP_FD_PIPE_R_DEAD)
			fp_close_own(keep);
		break;
	case FP_FD_DEVNULL:
		fd = fp_own_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
		break;
	case FP_FD_SOCKET:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
			return -1;
		fd = fp_own_fd(pair[0]);
		*keep = fp_own_fd(pair[1]);
		break;
	case FP_FD_MEMFD:
		fd = fp_own_fd(memfd_create("fp-odd", MFD_CLOEXEC));
		if (fd >= 0 && ftruncate(fd, 4096) < 0)
			fp_fail("ftruncate");
		break;
	default:
		fd = fp_own_fd(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		break;
	}
	return fd;
}

/* ---- The device's environment and the connection's owner, as port.c's ---- */

#define RUNQ_MAX 256
struct fp_run {
	uint8_t port, q;
};
static struct fp_run runq[RUNQ_MAX];
static unsigned runq_len;

static uint64_t env_now(void *ctx)
{
	(void)ctx;
	return W.now;
}

static void env_notify(void *ctx, unsigned qidx)
{
	struct fp_port *p = ctx;

	if (p->connected)
		vu_conn_notify(&p->conn, qidx);
}

static void env_arm(void *ctx, unsigned qidx, uint64_t deadline)
{
	struct fp_port *p = ctx;

	if (qidx < VNET_MAX_QUEUES)
		p->deadline[qidx] = deadline;
}

static bool env_schedule(void *ctx, unsigned qidx)
{
	struct fp_port *p = ctx;

	if (runq_len == RUNQ_MAX || qidx >= VNET_MAX_QUEUES)
		return false;
	runq[runq_len].port = (uint8_t)p->idx;
	runq[runq_len].q = (uint8_t)qidx;
	runq_len++;
	return true;
}

static void env_queue_error(void *ctx, unsigned qidx)
{
	struct fp_port *p = ctx;

	if (p->connected)
		vu_conn_signal_error(&p->conn, qidx);
}

static void env_rx_dirty(void *ctx)
{
	struct fp_port *p = ctx;

	p->rx_dirty = true;
}

static const struct vnet_env_ops env_ops = {
	.now_ns = env_now,
	.notify = env_notify,
	.arm_timer = env_arm,
	.schedule = env_schedule,
	.queue_error = env_queue_error,
	.rx_dirty = env_rx_dirty,
};

enum { EV_KICK = 1, EV_STATE = 2 };

static uint64_t ev_tag(int kind, unsigned q, int fd)
{
	return (uint64_t)(uint32_t)fd << 32 | (uint64_t)kind << 16 | q;
}

static void own_kick_changed(void *ctx, unsigned qidx, int old_fd, int new_fd)
{
	struct fp_port *p = ctx;
	struct epoll_event ev = {.events = EPOLLIN};

	if (old_fd >= 0)
		epoll_ctl(p->ep, EPOLL_CTL_DEL, old_fd, NULL);
	if (new_fd < 0)
		return;
	ev.data.u64 = ev_tag(EV_KICK, qidx, new_fd);
	(void)epoll_ctl(p->ep, EPOLL_CTL_ADD, new_fd, &ev); /* /dev/null, a memfd: EPERM, as port.c */
}

static void own_state_fd_changed(void *ctx, int old_fd, int new_fd, uint32_t events)
{
	struct fp_port *p = ctx;
	struct epoll_event ev = {.events = events};

	if (old_fd >= 0)
		epoll_ctl(p->ep, EPOLL_CTL_DEL, old_fd, NULL);
	if (new_fd < 0)
		return;
	ev.data.u64 = ev_tag(EV_STATE, 0, new_fd);
	(void)epoll_ctl(p->ep, EPOLL_CTL_ADD, new_fd, &ev);
}

static uint64_t own_mem_cap(void *ctx)
{
	const struct fp_port *p = ctx;

	return p->idx == 1 && W.cfg.small_cap ? 1u << 20 : 0;
}

static bool own_device_state(void *ctx)
{
	(void)ctx;
	return true;
}

static const struct vu_owner_ops owner_ops = {
	.kick_changed = own_kick_changed,
	.state_fd_changed = own_state_fd_changed,
	.mem_cap = own_mem_cap,
	.device_state = own_device_state,
};

static void sw_wake(void *ctx, unsigned worker)
{
	(void)ctx;
	if (worker < 2)
		W.woken[worker] = true;
}

static const struct switch_owner_ops sw_owner = {.wake = sw_wake};

/* ---- Oracle 2: what port security admitted is what is delivered ---- */

static struct fp_port *port_of_be(const struct vnet_backend *be)
{
	for (unsigned i = 0; i < FP_PORTS; i++)
		if (W.p[i].live && W.p[i].be == be)
			return &W.p[i];
	fp_fail("a backend handle of no port");
	return NULL;
}

static struct fp_port *port_of_dev(const struct vnet_dev *dev)
{
	for (unsigned i = 0; i < FP_PORTS; i++)
		if (W.p[i].live && W.p[i].dev == dev)
			return &W.p[i];
	return NULL;
}

static bool mac_in(const struct fp_port *p, const uint8_t *mac)
{
	for (unsigned i = 0; i < p->nallowed; i++)
		if (!memcmp(p->allowed[i], mac, 6))
			return true;
	return false;
}

/* A port with mac-change admits its device's MAC of the moment: remember each it ever had. */
static void refresh_allowed(void)
{
	struct fp_port *p = &W.p[0];

	if (!W.cfg.mac_change || !p->live)
		return;
	if (!mac_in(p, vnet_dev_mac(p->dev)) && p->nallowed < 8)
		memcpy(p->allowed[p->nallowed++], vnet_dev_mac(p->dev), 6);
}

/* The ports whose port security admits this source MAC (a bit each); all when saturated. */
static unsigned owners_of(const uint8_t *mac)
{
	unsigned m = 0;

	for (unsigned k = 0; k < FP_PORTS; k++)
		if (W.p[k].live && (mac_in(&W.p[k], mac) || W.p[k].nallowed >= 8))
			m |= 1u << k;
	return m;
}

/* Which port's guest memory (as vnetd maps it) holds this host byte: -1 if none. */
static int guest_of(const void *host)
{
	const uint8_t *h = host;

	for (unsigned k = 0; k < FP_PORTS; k++) {
		const struct guest_mem *m = &W.p[k].conn.mem;

		if (!W.p[k].live || !W.p[k].connected)
			continue;
		for (unsigned i = 0; i < m->nregions; i++)
			if (h >= m->regions[i].host && h < m->regions[i].host + m->regions[i].size)
				return (int)k;
	}
	return -1;
}

/* The host address of byte `at` of an iovec array (NULL past the end). */
static const void *iov_byte(const struct iovec *iov, unsigned cnt, size_t at)
{
	for (unsigned i = 0; i < cnt; i++) {
		if (at < iov[i].iov_len)
			return (const uint8_t *)iov[i].iov_base + at;
		at -= iov[i].iov_len;
	}
	return NULL;
}

#define MACTAB 64
static uint8_t mactab[MACTAB][6];
static unsigned nmactab;
static uint64_t delivered[FP_PORTS][MACTAB];

static int mac_id(const uint8_t *mac)
{
	for (unsigned i = 0; i < nmactab; i++)
		if (!memcmp(mactab[i], mac, 6))
			return (int)i;
	if (nmactab == MACTAB)
		return -1;
	memcpy(mactab[nmactab], mac, 6);
	return (int)nmactab++;
}

static void violation(const struct fp_port *r, const uint8_t *h, size_t len, const char *what)
{
	fprintf(stderr,
		"fuzz_vhost_proto: ORACLE 2 (port security): %s\n  frame of %zu bytes to port %d: "
		"dst %02x:%02x:%02x:%02x:%02x:%02x src %02x:%02x:%02x:%02x:%02x:%02x type %02x%02x\n ",
		what, len, r->idx, h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10],
		h[11], h[12], h[13]);
	for (size_t i = 0; i < len && i < 96; i++)
		fprintf(stderr, "%s%02x", i % 32 ? " " : "\n  ", h[i]);
	fprintf(stderr, "\n");
	abort();
}

/*
 * A frame about to be delivered to port r (len bytes at byte off of iov, as its guest will get
 * them): the checks of oracle 2. Returns its source MAC's id for the count (-1: not counted).
 */
static int check_frame(struct fp_port *r, const struct iovec *iov, unsigned cnt, size_t off,
		       size_t len)
{
	uint8_t h[SWITCH_IPS_HDR];
	size_t hl = len < sizeof(h) ? len : sizeof(h);
	unsigned owners;
	int from = -1, src_guest;
	const void *at;

	if (len < 14)
		fp_fail("ORACLE 2: a frame shorter than an Ethernet header was delivered");
	if (iov_copy_from(iov, cnt, off, h, hl) != hl)
		fp_fail("ORACLE 2: a delivered frame's iovecs are shorter than its length");
	refresh_allowed();
	if (h[6] & 1)
		violation(r, h, len, "a frame with a group source MAC was delivered");
	owners = owners_of(h + 6);
	if (!owners)
		violation(r, h, len, "a source MAC that port security admits for no port");
	/* Bytes read from a port's guest memory now are that guest's frame: it must be its own. */
	at = iov_byte(iov, cnt, off + 6);
	src_guest = at ? guest_of(at) : -1;
	if (src_guest >= 0 && !(owners >> src_guest & 1))
		violation(r, h, len, "a frame read from one guest's memory carries another's MAC");
	if (src_guest >= 0)
		from = src_guest;
	else if (__builtin_popcount(owners) == 1)
		from = __builtin_ctz(owners);
	if (from >= 0) {
		struct fp_port *s = &W.p[from];
		const struct switch_mac_set macs = {
			s->allowed[0], (const uint8_t(*)[6])&s->allowed[1], s->nallowed - 1};
		unsigned et = (unsigned)h[12] << 8 | h[13];
		const char *why;

		if (from == 2 && (et == 0x8100 || et == 0x88a8 || et == 0x9100))
			violation(r, h, len, "an access port's frame was delivered VLAN-tagged");
		if (from == 1 && (why = switch_ips_check(fp_ips, 2, h, hl)) != NULL)
			violation(r, h, len, why);
		/* Port security reads into ARP, ND and tags, and IPv6 only when it may be ND (the
		 * switch passes other IPv6 on its next header alone: sw_lladdr_pass()). */
		if (s->nallowed < 8 && switch_lladdr_inspects(et) &&
		    (et != 0x86dd || len < 21 || switch_lladdr_ipv6_nh(h[20])) &&
		    (why = switch_lladdr_check(iov, cnt, off, len, &macs)) != NULL)
			violation(r, h, len, why);
	}
	return mac_id(h + 6);
}

/* A frame with source MAC `id` reached port r: never more of them than their owners sent. */
static void count_frame(struct fp_port *r, int id)
{
	uint64_t sent = 0;
	unsigned owners;

	r->rx_seen++;
	if (id < 0)
		return;
	delivered[r->idx][id]++;
	owners = owners_of(mactab[id]);
	for (unsigned k = 0; k < FP_PORTS; k++) {
		uint64_t fwd, flood;

		if (!(owners >> k & 1))
			continue;
		switch_port_stats(W.p[k].be, &fwd, &flood, NULL);
		sent += fwd + flood - W.p[k].sent_base;
	}
	if (delivered[r->idx][id] > sent) {
		uint8_t h[14] = {0};

		memcpy(h + 6, mactab[id], 6);
		violation(r, h, 14, "more frames from this source MAC delivered than its port sent");
	}
}

int __real_vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr,
				  const struct iovec *iov, unsigned iovcnt, size_t off,
				  size_t frame_len);
int __wrap_vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr,
				  const struct iovec *iov, unsigned iovcnt, size_t off,
				  size_t frame_len);
int __real_vnet_dev_receive_frame_on(struct vnet_dev *dev, unsigned pair,
				     const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
				     unsigned iovcnt, size_t off, size_t frame_len);
int __wrap_vnet_dev_receive_frame_on(struct vnet_dev *dev, unsigned pair,
				     const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
				     unsigned iovcnt, size_t off, size_t frame_len);
unsigned __real_vnet_dev_receive_burst(struct vnet_dev *dev, const struct vnet_frame *f,
				       const uint8_t (*heads)[14], unsigned n);
/* Weak: a tree without vnet_dev_receive_checked() (before d14064d) still links. */
int __real_vnet_dev_receive_checked(struct vnet_dev *dev, const struct vnet_frame *f,
				    const uint8_t head[14]) __attribute__((weak));
int __wrap_vnet_dev_receive_checked(struct vnet_dev *dev, const struct vnet_frame *f,
				    const uint8_t head[14]);
unsigned __wrap_vnet_dev_receive_burst(struct vnet_dev *dev, const struct vnet_frame *f,
				       const uint8_t (*heads)[14], unsigned n);

/* The receiving guest runs while its device writes into it (its own vCPU's races only). */
int __wrap_vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr,
				  const struct iovec *iov, unsigned iovcnt, size_t off,
				  size_t frame_len)
{
	struct fp_port *r = port_of_dev(dev);
	int id, ret, cur = W.cur;

	if (!r)
		return __real_vnet_dev_receive_frame(dev, hdr, iov, iovcnt, off, frame_len);
	id = check_frame(r, iov, iovcnt, off, frame_len);
	W.cur = r->idx;
	ret = __real_vnet_dev_receive_frame(dev, hdr, iov, iovcnt, off, frame_len);
	W.cur = cur;
	if (ret)
		count_frame(r, id);
	return ret;
}

int __wrap_vnet_dev_receive_frame_on(struct vnet_dev *dev, unsigned pair,
				     const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
				     unsigned iovcnt, size_t off, size_t frame_len)
{
	struct fp_port *r = port_of_dev(dev);
	int id, ret, cur = W.cur;

	if (!r)
		return __real_vnet_dev_receive_frame_on(dev, pair, hdr, iov, iovcnt, off,
							 frame_len);
	id = check_frame(r, iov, iovcnt, off, frame_len);
	W.cur = r->idx;
	ret = __real_vnet_dev_receive_frame_on(dev, pair, hdr, iov, iovcnt, off, frame_len);
	W.cur = cur;
	if (ret)
		count_frame(r, id);
	return ret;
}

unsigned __wrap_vnet_dev_receive_burst(struct vnet_dev *dev, const struct vnet_frame *f,
				       const uint8_t (*heads)[14], unsigned n)
{
	struct fp_port *r = port_of_dev(dev);
	int ids[VNET_BURST_MAX];
	unsigned ret;
	int cur = W.cur;

	if (!r || n > VNET_BURST_MAX)
		return __real_vnet_dev_receive_burst(dev, f, heads, n);
	for (unsigned i = 0; i < n; i++) {
		struct iovec iov[2];
		unsigned cnt;

		if (f[i].len < 14)
			fp_fail("ORACLE 2: a burst frame shorter than an Ethernet header");
		cnt = vnet_frame_iov(&f[i], heads ? heads[i] : NULL, iov);
		ids[i] = check_frame(r, iov, cnt, 0, f[i].len);
	}
	W.cur = r->idx;
	ret = __real_vnet_dev_receive_burst(dev, f, heads, n);
	W.cur = cur;
	for (unsigned i = 0; i < ret && i < n; i++)
		count_frame(r, ids[i]);
	return ret;
}

int __wrap_vnet_dev_receive_checked(struct vnet_dev *dev, const struct vnet_frame *f,
				    const uint8_t head[14])
{
	struct fp_port *r = port_of_dev(dev);
	struct iovec iov[2];
	int id, ret, cur = W.cur;

	if (!r)
		return __real_vnet_dev_receive_checked(dev, f, head);
	if (f->len < 14)
		fp_fail("ORACLE 2: a checked frame shorter than an Ethernet header");
	id = check_frame(r, iov, vnet_frame_iov(f, head, iov), 0, f->len);
	W.cur = r->idx;
	ret = __real_vnet_dev_receive_checked(dev, f, head);
	W.cur = cur;
	if (ret)
		count_frame(r, id);
	return ret;
}

/* The ports' backend: the switch's own ops, each send seen first (mac-change's MAC). */
static int my_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct fp_port *p = port_of_be(be);

	refresh_allowed();
	return p->sw_ops->transmit(be, hdr, iov, iovcnt, off, frame_len);
}

static unsigned my_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
				  const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				  uint32_t *extra, bool *full)
{
	struct fp_port *p = port_of_be(be);

	refresh_allowed();
	return p->sw_ops->transmit_burst(be, f, hdr, n, room, extra, full);
}

/*
 * Every delivery to a port's guest must pass the wrappers above: the device's RX packet count
 * may not grow by more than they saw (a delivery path they miss would blind oracle 2).
 */
static uint64_t rx_packets(struct fp_port *p)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < vnet_dev_num_queues(p->dev); i++) {
		struct vnet_queue *q = vnet_dev_queue(p->dev, i);

		if (q && q->kind == VNET_QUEUE_RX)
			n += q->stats.packets;
	}
	return n;
}

static void blind_check(void)
{
	for (unsigned k = 0; k < FP_PORTS; k++) {
		struct fp_port *p = &W.p[k];
		uint64_t now;

		if (!p->live)
			continue;
		now = rx_packets(p);
		if (now >= p->rx_stats && now - p->rx_stats > p->rx_seen)
			fp_fail("oracle 2 is blind: frames reached a guest past the receive wrappers");
		p->rx_stats = now;
		p->rx_seen = 0;
	}
}

/* ---- The second vCPU ---- */

/* FP_DEBUG=1 in the environment: what each port's device did, and each race (read once). */
static bool debug_on(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("FP_DEBUG") != NULL;
	return on;
}

struct fp_race {
	bool on, repeat, flip;
	uint8_t points, target, a, b, skip;
	uint8_t v[6];
};

static struct fp_race races[4];
static unsigned nraces;

void fp_race_set(const uint8_t v[11])
{
	struct fp_race *r = &races[nraces++ % 4];

	r->on = true;
	r->points = v[0] ? v[0] : 0xff;
	r->target = v[1];
	r->a = v[2];
	r->b = v[3];
	r->skip = v[4] & 15;
	r->repeat = v[4] & 16;
	r->flip = false;
	memcpy(r->v, v + 5, 6);
}

/* The hook: the guest whose device code runs now rewrites its own memory. */
static void race_hook(void *ctx, enum guest_race_point point)
{
	struct fp_port *p;

	(void)ctx;
	if (W.cur < 0 || W.cur >= FP_PORTS)
		return;
	p = &W.p[W.cur];
	for (unsigned i = 0; i < 4; i++) {
		struct fp_race *r = &races[i];

		if (!r->on || !(r->points >> ((unsigned)point & 7) & 1))
			continue;
		if (r->skip) {
			r->skip--;
			continue;
		}
		if (debug_on())
			fprintf(stderr, "race: point %u port %d target %u\n", (unsigned)point, p->idx,
				r->target & 7);
		fp_race_write(p, r->target, r->a, r->b, r->v, r->flip);
		r->flip = !r->flip;
		if (!r->repeat)
			r->on = false;
	}
}

/* ---- Ports and connections ---- */

/*
 * Devices and the switch live as long as the process (creating a switch, with its FDB, for
 * every input took a third of the time): one world per variant of the configuration that
 * needs its own (workers, tx-mode, RSS). Each input starts from reset devices (vu_conn_init()),
 * empty queues (drained and reset at the end of the last input) and a clock SWITCH_FDB_AGE_SEC
 * past everything the FDB learnt before, so what an input does does not depend on the last.
 */
struct fp_variant {
	bool made;
	struct vnet_switch *sw;
	struct vnet_dev *dev[FP_PORTS];
	struct vnet_backend *be[FP_PORTS];
	const struct vnet_backend_ops *sw_ops[FP_PORTS];
	struct vnet_backend_ops ops[FP_PORTS];
};

static struct fp_variant variants[8];
static struct vnet_dev *lone_dev[FP_ALL]; /* spares and the probe: no backend */

static struct vnet_dev *dev_create(unsigned k, bool tx_timer, bool rss)
{
	struct vnet_dev_params params = {
		.queue_pairs = FP_PAIRS,
		.mtu = 1500,
		.features_mask = ~0ull,
		.tx_mode = tx_timer ? VNET_TX_TIMER : VNET_TX_KICK,
		.tx_timer_usecs = 50,
		.rss = rss,
	};
	struct vnet_dev *dev;

	if (k < FP_PORTS)
		memcpy(params.mac, fp_mac[k], 6);
	else
		memcpy(params.mac, (const uint8_t[6]){0x02, 0, 0, 0, 0x55, (uint8_t)k}, 6);
	dev = vnet_dev_create(&params, &env_ops, &W.p[k]);
	if (!dev)
		fp_fail("vnet_dev_create");
	return dev;
}

static void variant_make(struct fp_variant *v, unsigned bits)
{
	unsigned nworkers = bits & 1 ? 2 : 1;

	v->sw = switch_create(nworkers, nworkers > 1 ? &sw_owner : NULL, NULL);
	if (!v->sw)
		fp_fail("switch_create");
	for (unsigned k = 0; k < FP_PORTS; k++) {
		v->dev[k] = dev_create(k, bits & 2, bits & 4);
		v->be[k] = switch_attach(v->sw, v->dev[k], k == 0 ? "a" : k == 1 ? "b" : "c",
					 k == 2 && nworkers == 2 ? 1 : 0);
		if (!v->be[k])
			fp_fail("switch_attach");
		if (k == 1 && switch_port_set_ips(v->be[k], fp_ips, 2) < 0)
			fp_fail("switch_port_set_ips");
		if (k == 2)
			switch_port_set_access(v->be[k], true);
		v->sw_ops[k] = switch_port_ops(v->be[k]);
		v->ops[k] = *v->sw_ops[k];
		if (v->sw_ops[k]->transmit)
			v->ops[k].transmit = my_transmit;
		if (v->sw_ops[k]->transmit_burst)
			v->ops[k].transmit_burst = my_transmit_burst;
		vnet_dev_attach_backend(v->dev[k], &v->ops[k], v->be[k]);
	}
	v->made = true;
}

/* A port of this input: its device (reset when its frontend connects), fds of its own. */
static void port_open(struct fp_port *p, struct vnet_dev *dev)
{
	p->dev = dev;
	p->ep = fp_own_fd(epoll_create1(EPOLL_CLOEXEC));
	p->live = true;
	p->sock = -1;
	p->state_fd = -1;
	for (unsigned q = 0; q < FP_RING_Q; q++)
		p->q[q].kick = p->q[q].call = p->q[q].err = -1;
}

struct fp_port *fp_port_get(unsigned i)
{
	struct fp_port *p = &W.p[i];

	if (!p->live) {
		if (!lone_dev[i])
			lone_dev[i] = dev_create(i, false, false);
		port_open(p, lone_dev[i]);
		fp_connect(p);
	}
	return p;
}

void fp_connect(struct fp_port *p)
{
	int sv[2];

	if (p->connected)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fp_fail("socketpair");
	p->sock = fp_own_fd(sv[1]);
	if (fcntl(p->sock, F_SETFL, O_NONBLOCK) < 0)
		fp_fail("fcntl");
	W.cur = p->idx;
	vu_conn_init(&p->conn, sv[0], p->dev, &owner_ops, p); /* sv[0] is vnetd's now */
	W.cur = -1;
	p->connected = true;
	p->features = p->proto = p->offered = 0;
	p->features_sent = false;
	p->last_ack = -1;
	p->regions_added = 0;
	for (unsigned q = 0; q < FP_RING_Q; q++) {
		p->q[q].set = false;
		p->q[q].base_valid = false;
	}
}

void fp_disconnect(struct fp_port *p)
{
	if (!p->connected)
		return;
	W.cur = p->idx;
	vu_conn_close(&p->conn);
	W.cur = -1;
	p->connected = false;
	fp_close_own(&p->sock);
	fp_close_own(&p->state_fd);
	for (unsigned q = 0; q < FP_RING_Q; q++) {
		fp_close_own(&p->q[q].kick);
		fp_close_own(&p->q[q].call);
		fp_close_own(&p->q[q].err);
		p->q[q].set = false;
	}
}

/* Read what vnetd answered; remember the last reply and GET_VRING_BASE's values. */
static void read_replies(struct fp_port *p)
{
	uint8_t buf[4096];
	ssize_t n;

	while (p->connected && (n = recv(p->sock, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		size_t off = 0;

		while ((size_t)n - off >= VU_HDR_SIZE) {
			uint32_t req, flags, size;
			uint64_t v = 0;

			memcpy(&req, buf + off, 4);
			memcpy(&flags, buf + off + 4, 4);
			memcpy(&size, buf + off + 8, 4);
			off += VU_HDR_SIZE;
			if (size > (size_t)n - off)
				break; /* replies are small and whole: not one of ours */
			memcpy(&v, buf + off, size < 8 ? size : 8);
			p->reply_req = req;
			p->reply_u64 = v;
			if (req == VU_GET_VRING_BASE && size >= 8) {
				uint32_t idx = (uint32_t)v, num = (uint32_t)(v >> 32);

				if (idx < FP_RING_Q) {
					p->q[idx].base = num;
					p->q[idx].base_valid = true;
				}
			} else if (req == VU_GET_FEATURES) {
				p->offered = v;
			} else if (size == 8) {
				p->last_ack = (int)v;
			}
			off += size;
		}
	}
}

/* vnetd's side: handle what arrived, as port.c does on EPOLLIN. */
static void serve(struct fp_port *p, bool reply)
{
	for (unsigned k = 0; k < 8 && p->connected; k++) {
		uint64_t msgs = p->conn.messages;
		size_t had = p->conn.rx.len;
		int r;

		W.cur = p->idx;
		r = vu_conn_handle_readable(&p->conn);
		W.cur = -1;
		if (r < 0) {
			read_replies(p);
			fp_disconnect(p);
			return;
		}
		/* Nothing more came in: the message is whole and handled, or waits for more bytes. */
		if (p->conn.messages == msgs && p->conn.rx.len == had)
			break;
		if (p->conn.messages != msgs && !p->conn.rx.len) {
			int avail = 0;

			if (ioctl(p->conn.sock, FIONREAD, &avail) < 0 || avail <= 0)
				break;
		}
	}
	if (reply)
		read_replies(p);
}

static void send_msg(struct fp_port *p, const uint8_t *bytes, size_t len, const int *fds,
		     unsigned nfds, bool reply)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * FP_RAW_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	unsigned k = 0;

	if (!p->connected || !len)
		return;
	for (unsigned i = 0; i < nfds && i < FP_RAW_FDS; i++)
		if (fds[i] >= 0)
			k++;
	if (k) {
		struct cmsghdr *cm;
		unsigned j = 0;

		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * k);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * k);
		for (unsigned i = 0; i < nfds && i < FP_RAW_FDS; i++)
			if (fds[i] >= 0)
				memcpy(CMSG_DATA(cm) + sizeof(int) * j++, &fds[i], sizeof(int));
	}
	if (sendmsg(p->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
		return;
	serve(p, reply);
}

void fp_send_raw(struct fp_port *p, const uint8_t *bytes, size_t len, const int *fds, unsigned nfds)
{
	send_msg(p, bytes, len, fds, nfds, true);
}

void fp_hangup(struct fp_port *p)
{
	if (!p->connected)
		return;
	fp_close_own(&p->sock);
	for (unsigned k = 0; k < 4 && p->connected; k++) {
		W.cur = p->idx;
		if (vu_conn_handle_readable(&p->conn) < 0) {
			W.cur = -1;
			fp_disconnect(p);
			return;
		}
		W.cur = -1;
	}
	fp_disconnect(p);
}

/* Requests vnetd answers with a message of their own (else only with NEED_REPLY). */
static bool answered(uint32_t req, uint32_t flags)
{
	switch (req) {
	case VU_GET_FEATURES:
	case VU_GET_PROTOCOL_FEATURES:
	case VU_GET_VRING_BASE:
	case VU_GET_QUEUE_NUM:
	case VU_GET_CONFIG:
	case VU_SET_LOG_BASE:
	case VU_GET_MAX_MEM_SLOTS:
	case VU_SET_DEVICE_STATE_FD:
	case VU_CHECK_DEVICE_STATE:
	case VU_GET_STATUS:
		return true;
	default:
		return flags & VU_FLAG_NEED_REPLY;
	}
}

int fp_send(struct fp_port *p, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned nfds)
{
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];

	if (size > VU_MSG_MAX_PAYLOAD)
		size = VU_MSG_MAX_PAYLOAD;
	vu_msg_put_header(buf, req, flags | VU_VERSION, size);
	if (size)
		memcpy(buf + VU_HDR_SIZE, payload, size);
	p->last_ack = -1;
	send_msg(p, buf, VU_HDR_SIZE + size, fds, nfds, answered(req, flags));
	return p->connected ? 0 : -1;
}

/* ---- The event loop: kicks, the run queue, the switch's workers, timers, RX flushes ---- */

static void handle_event(struct fp_port *p, const struct epoll_event *ev)
{
	int fd = (int)(ev->data.u64 >> 32), kind = (int)(ev->data.u64 >> 16 & 0xffff);
	unsigned q = (unsigned)(ev->data.u64 & 0xffff);

	if (!p->connected)
		return;
	W.cur = p->idx;
	if (kind == EV_KICK && q < VNET_MAX_QUEUES && p->conn.q[q].kick == fd) {
		if (ev->events & (EPOLLHUP | EPOLLERR)) {
			vu_conn_kick_failed(&p->conn, q, ev->events);
		} else {
			uint64_t v;

			if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				(void)0; /* a write-only or odd fd: the device is kicked anyway */
			vnet_dev_kick(p->dev, q);
		}
	} else if (kind == EV_STATE && fd == p->conn.xfer.fd) {
		vu_conn_state_io(&p->conn, ev->events);
	}
	W.cur = -1;
}

void fp_loop(unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		bool any = false;
		unsigned n;

		for (unsigned i = 0; i < FP_ALL; i++) {
			struct fp_port *p = &W.p[i];
			struct epoll_event ev[16];
			int got;

			if (!p->live || !p->connected)
				continue;
			got = epoll_wait(p->ep, ev, 16, 0);
			for (int k = 0; k < got; k++) {
				handle_event(p, &ev[k]);
				any = true;
			}
		}
		n = runq_len;
		if (n) {
			struct fp_run now[RUNQ_MAX];

			memcpy(now, runq, sizeof(now[0]) * n);
			memmove(runq, runq + n, sizeof(runq[0]) * (runq_len - n));
			runq_len -= n;
			for (unsigned k = 0; k < n; k++) {
				struct fp_port *p = &W.p[now[k].port];

				W.cur = p->idx;
				vnet_dev_queue_run(p->dev, now[k].q);
				W.cur = -1;
			}
			any = true;
		}
		for (unsigned w = 0; w < W.nworkers; w++) {
			if (!W.woken[w])
				continue;
			W.woken[w] = false;
			any = true;
			if (switch_worker_rx(W.sw, w))
				W.woken[w] = true;
		}
		for (unsigned w = 0; w < W.nworkers; w++)
			switch_worker_round_end(W.sw, w);
		for (unsigned i = 0; i < FP_ALL; i++) {
			struct fp_port *p = &W.p[i];

			if (!p->live)
				continue;
			for (unsigned q = 0; q < VNET_MAX_QUEUES; q++) {
				if (!p->deadline[q] || p->deadline[q] > W.now)
					continue;
				p->deadline[q] = 0;
				W.cur = p->idx;
				vnet_dev_timer_expired(p->dev, q);
				W.cur = -1;
				any = true;
			}
			if (p->rx_dirty) {
				p->rx_dirty = false;
				W.cur = p->idx;
				vnet_dev_rx_flush(p->dev);
				W.cur = -1;
			}
		}
		if (!any)
			break;
	}
	blind_check();
}

void fp_kick(struct fp_port *p, unsigned q)
{
	const uint64_t one = 1;

	if (q < FP_RING_Q && p->q[q].kick >= 0 && write(p->q[q].kick, &one, sizeof(one)) < 0)
		(void)0; /* full or gone: the kick is lost, as a guest's would be */
	fp_loop(4);
}

/* ---- Oracle 1: a fresh frontend on another port still gets its memory table ---- */

void fp_oracle_probe(void)
{
	struct fp_port *p = fp_port_get(FP_PROBE);
	uint64_t pf = BIT_ULL(VU_PROTOCOL_F_REPLY_ACK) | BIT_ULL(VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	uint64_t f = BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES);
	struct vu_mem_table t = {.nregions = 1};

	fp_disconnect(p);
	fp_connect(p);
	fp_send(p, VU_SET_OWNER, 0, NULL, 0, NULL, 0);
	fp_send(p, VU_SET_PROTOCOL_FEATURES, 0, &pf, 8, NULL, 0);
	fp_send(p, VU_SET_FEATURES, 0, &f, 8, NULL, 0);
	t.regions[0] = (struct vu_mem_region){.guest_phys_addr = 0, .memory_size = 1u << 16,
					      .userspace_addr = FP_UVA(FP_PROBE)};
	fp_send(p, VU_SET_MEM_TABLE, VU_FLAG_NEED_REPLY, &t, 8 + sizeof(t.regions[0]), &p->memfd, 1);
	if (!p->connected || p->last_ack != 0) {
		fprintf(stderr, "fuzz_vhost_proto: ORACLE 1 (daemon-wide tables): a fresh frontend's "
				"SET_MEM_TABLE was refused (ack %d, %s) after the other ports' %u "
				"extra regions\n",
			p->last_ack, p->connected ? "connected" : "disconnected", W.fills);
		abort();
	}
	fp_disconnect(p);
}

/* ---- The world of one input ---- */

static unsigned fds_at_start;

void fp_world_init(void)
{
	log_threshold = LOG_ERR;
	signal(SIGPIPE, SIG_IGN); /* as the daemon: a peer that went away is an EPIPE */
	for (unsigned i = 0; i < FP_ALL; i++) {
		struct fp_port *p = &W.p[i];

		p->idx = (int)i;
		p->memfd = memfd_create("fp-guest", MFD_CLOEXEC);
		if (p->memfd < 0 || ftruncate(p->memfd, FP_MEM_SIZE) < 0)
			fp_fail("memfd");
		p->mem = mmap(NULL, FP_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, p->memfd, 0);
		if (p->mem == MAP_FAILED)
			fp_fail("mmap");
	}
	guest_race_hook = race_hook;
	guest_race_ctx = NULL;
	W.now = 1000000000000ull;
}

void fp_world_begin(const struct fp_config *cfg)
{
	unsigned bits = (cfg->two_workers ? 1 : 0) | (cfg->tx_timer ? 2 : 0) | (cfg->rss ? 4 : 0);
	struct fp_variant *v = &variants[bits];

	fds_at_start = count_fds();
	W.cfg = *cfg;
	W.nworkers = cfg->two_workers ? 2 : 1;
	W.woken[0] = W.woken[1] = false;
	W.now += (SWITCH_FDB_AGE_SEC + 60) * 1000000000ull; /* all the FDB learnt before is stale */
	W.cur = -1;
	W.state_len = 0;
	W.fills = 0;
	runq_len = 0;
	nraces = 0;
	memset(races, 0, sizeof(races));
	nmactab = 0;
	memset(delivered, 0, sizeof(delivered));
	if (!v->made)
		variant_make(v, bits);
	W.sw = v->sw;
	switch_set_clock(W.sw, W.now);
	for (unsigned i = 0; i < FP_ALL; i++) {
		struct fp_port *p = &W.p[i];
		uint8_t *mem = p->mem;
		int memfd = p->memfd;

		memset(p, 0, sizeof(*p));
		p->idx = (int)i;
		p->mem = mem;
		p->memfd = memfd;
		/* A fresh guest: zero memory (the pages are given back, the next touch faults in zeroes). */
		if (i < FP_PORTS && madvise(mem, FP_MEM_SIZE, MADV_REMOVE) < 0)
			memset(mem, 0, FP_MEM_SIZE);
	}
	for (unsigned k = 0; k < FP_PORTS; k++) {
		struct fp_port *p = &W.p[k];
		uint64_t fwd, flood;

		port_open(p, v->dev[k]);
		p->be = v->be[k];
		p->sw_ops = v->sw_ops[k];
		if (switch_port_set_security(p->be, &(struct switch_port_security){
							    .on = true,
							    .mac_change = k == 0 && cfg->mac_change}) < 0)
			fp_fail("switch_port_set_security");
		if (k == 2)
			switch_port_set_flood_rate(p->be, cfg->flood_rate ? 20 : 0);
		memcpy(p->allowed[0], fp_mac[k], 6);
		p->nallowed = 1;
		switch_port_stats(p->be, &fwd, &flood, NULL);
		p->sent_base = fwd + flood;
		p->rx_stats = rx_packets(p);
		fp_connect(p);
	}
}

/* FP_DEBUG: each port's queues and counters (to see that inputs reach the data path). */
static void debug_report(void)
{
	if (!debug_on())
		return;
	for (unsigned i = 0; i < FP_ALL; i++) {
		struct fp_port *p = &W.p[i];
		uint64_t fwd = 0, flood = 0, drop = 0;

		if (!p->live)
			continue;
		if (p->be)
			switch_port_stats(p->be, &fwd, &flood, &drop);
		fprintf(stderr, "port %u: %s features %#llx regions %u fwd %llu flood %llu drop %llu\n",
			i, p->connected ? "connected" : "closed",
			(unsigned long long)vnet_dev_features(p->dev), p->conn.mem.nregions,
			(unsigned long long)fwd, (unsigned long long)flood, (unsigned long long)drop);
		for (unsigned q = 0; q < 5; q++) {
			struct vnet_queue *vq = vnet_dev_queue(p->dev, q);

			if (vq)
				fprintf(stderr, "  q%u %s%s%s num %u packets %llu dropped %llu kicks %llu\n",
					q, vq->vq.started ? "started" : "stopped",
					vq->vq.broken ? " broken" : "", vq->vq.packed ? " packed" : "",
					vq->vq.num, (unsigned long long)vq->stats.packets,
					(unsigned long long)vq->stats.dropped,
					(unsigned long long)vq->stats.kicks);
		}
	}
}

void fp_world_end(void)
{
	unsigned now;

	debug_report();
	/* Frames still in the cross-worker queues go now, while their ports are there to queue. */
	for (unsigned k = 0; k < 100000 && W.nworkers > 1; k++) {
		bool more = false;

		for (unsigned w = 0; w < W.nworkers; w++)
			more |= switch_worker_rx(W.sw, w);
		for (unsigned w = 0; w < W.nworkers; w++)
			switch_worker_round_end(W.sw, w);
		if (!more)
			break;
	}
	for (unsigned i = 0; i < FP_ALL; i++) {
		fp_disconnect(&W.p[i]); /* resets the device: what its port queued is dropped */
		W.p[i].live = false;
	}
	close_all_own();
	now = count_fds();
	if (now != fds_at_start) {
		fprintf(stderr, "fuzz_vhost_proto: %u fds open after the input, %u before: vnetd "
				"leaked an fd\n", now, fds_at_start);
		abort();
	}
}
