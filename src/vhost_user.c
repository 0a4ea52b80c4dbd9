/* vhost_user.c - one vhost-user frontend connection: message I/O, dispatch, memory table, queue fds. */
#include "vhost_user.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_fault.h"
#include "log.h"
#include "peer_io.h"
#include "mem_cap.h"
#include "vhost_user_internal.h"
#include "virtio_net_defs.h"

/*
 * MQ, REPLY_ACK, BACKEND_REQ (UML needs it), CONFIG (MAC, link), RESET_DEVICE; for live
 * migration LOG_SHMFD (dirty log), RARP (announce) and DEVICE_STATE (vnetd's own state).
 */
#define VU_OFFERED_PROTOCOL_FEATURES                                                               \
	(BIT_ULL(VU_PROTOCOL_F_MQ) | BIT_ULL(VU_PROTOCOL_F_REPLY_ACK) |                            \
	 BIT_ULL(VU_PROTOCOL_F_BACKEND_REQ) | BIT_ULL(VU_PROTOCOL_F_CONFIG) |                      \
	 BIT_ULL(VU_PROTOCOL_F_RESET_DEVICE) | BIT_ULL(VU_PROTOCOL_F_LOG_SHMFD) |                  \
	 BIT_ULL(VU_PROTOCOL_F_RARP) | BIT_ULL(VU_PROTOCOL_F_DEVICE_STATE))

_Static_assert(VNET_MAX_QUEUES <= VU_MSG_MAX_VRINGS, "ring indexes must fit the wire format");

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void close_rx_fds(int *fds, unsigned nfds)
{
	for (unsigned i = 0; i < nfds; i++)
		close_fd(&fds[i]);
}

/* ---- socket I/O ---- */

/*
 * write_full() - send all of a (small) reply without blocking: a frontend that lets its socket
 * buffer fill up instead of reading replies is dropped rather than allowed to stall the loop.
 */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			log_guest("vhost-user: frontend does not read its replies; dropping it");
		return -1;
	}
	return 0;
}

/*
 * recv_some() - read at most len bytes into buf, appending any fds (SCM_RIGHTS) to fds/nfds.
 * Returns bytes read, 0 if nothing was there, -1 on EOF, error or too many fds.
 */
static ssize_t recv_some(int sock, uint8_t *buf, size_t len, int *fds, unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(VU_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cmsg;
	bool too_many = false;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		log_warn("vhost-user: recvmsg: %s", strerror(errno));
		return -1;
	}
	for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg)) {
		size_t cnt;

		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
		    cmsg->cmsg_len < CMSG_LEN(0))
			continue;
		cnt = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(fd));
			if (*nfds < VU_MAX_FDS) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				too_many = true;
			}
		}
	}
	if (too_many || (mh.msg_flags & MSG_CTRUNC)) {
		log_guest("vhost-user: message with more than %u fds", VU_MAX_FDS);
		return -1;
	}
	if (n == 0) {
		log_debug("vhost-user: frontend closed the connection");
		return -1;
	}
	return n;
}

/* send_reply() - a reply to `request` with `size` payload bytes; 0 or -1 (disconnect). */
static int send_reply(struct vu_conn *c, uint32_t request, const void *payload, uint32_t size)
{
	uint8_t buf[VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD];

	vu_msg_put_header(buf, request, VU_FLAG_REPLY | VU_VERSION, size);
	memcpy(buf + VU_HDR_SIZE, payload, size);
	if (write_full(c->sock, buf, VU_HDR_SIZE + size) < 0) {
		log_warn("vhost-user: cannot send %s reply", vu_request_name(request));
		return -1;
	}
	return 0;
}

enum vu_result vu_reply_u64(struct vu_conn *c, uint32_t request, uint64_t v)
{
	return send_reply(c, request, &v, sizeof(v)) < 0 ? VU_DISCONNECT : VU_OK;
}

/* ---- queues ---- */

/* conn_queue() - the queue a ring message names, or NULL (logged) if the device lacks it. */
static struct vnet_queue *conn_queue(struct vu_conn *c, const struct vu_msg *m, unsigned *qidx)
{
	unsigned idx = vu_msg_vring_index(m);
	unsigned n = vnet_dev_num_queues(c->dev);
	struct vnet_queue *q = NULL;

	if (idx < n && idx < VNET_MAX_QUEUES)
		q = vnet_dev_queue(c->dev, idx);
	if (!q) {
		log_guest("vhost-user: %s: queue %u out of range (device has %u)",
			  vu_request_name(m->request), idx, n);
		return NULL;
	}
	*qidx = idx;
	return q;
}

/* replace_kick() - give queue qidx a new kick fd (-1: none); the owner hears before close. */
static void replace_kick(struct vu_conn *c, unsigned qidx, int fd)
{
	int old = c->q[qidx].kick;

	if (old < 0 && fd < 0)
		return;
	if (c->ops && c->ops->kick_changed)
		c->ops->kick_changed(c->ctx, qidx, old, fd);
	c->q[qidx].kick = fd;
	if (old >= 0)
		close(old);
}

/* drop_queue_fds() - close every queue's kick, call and err fd. */
static void drop_queue_fds(struct vu_conn *c)
{
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		replace_kick(c, i, -1);
		close_fd(&c->q[i].call);
		close_fd(&c->q[i].err);
	}
}

/* Memory, size and all three ring addresses are known. */
static bool ring_ready(const struct vu_conn *c, const struct vnet_queue *q)
{
	return c->mem.nregions > 0 && q->vq.num != 0 && q->vq.desc_addr != 0 &&
	       q->vq.avail_addr != 0 && q->vq.used_addr != 0;
}

/*
 * try_start() - start queue qidx if it is stopped and fully configured. A failure leaves it
 * stopped (logged) and the connection up. After a start the queue is processed once, because a
 * kick that arrived while it was stopped was consumed and ignored.
 */
static void try_start(struct vu_conn *c, unsigned qidx, struct vnet_queue *q)
{
	if (q->vq.started || !ring_ready(c, q))
		return;
	if (vnet_dev_queue_start(c->dev, qidx, &c->mem) < 0) {
		log_guest("vhost-user: queue %u: rings not usable, queue stays stopped", qidx);
		vu_conn_signal_error(c, qidx);
		return;
	}
	vnet_dev_kick(c->dev, qidx);
}

/* stop_if_started() - stop queue qidx for a ring change; returns whether it was running. */
static bool stop_if_started(struct vu_conn *c, unsigned qidx, struct vnet_queue *q)
{
	if (!q->vq.started)
		return false;
	vnet_dev_queue_stop(c->dev, qidx);
	return true;
}

/*
 * Rings start disabled (until SET_VRING_ENABLE 1) exactly when the frontend acked
 * VHOST_USER_F_PROTOCOL_FEATURES in SET_FEATURES (vhost-user spec, "Ring states"); otherwise a
 * ring is enabled by its SET_VRING_KICK, whatever SET_PROTOCOL_FEATURES said.
 */
static bool protocol_features_negotiated(const struct vu_conn *c)
{
	return c->protocol_bit_accepted;
}

/* ---- memory table ---- */

/* table_bytes() - the address space a table's own mappings take (what mem_cap counts). */
static uint64_t table_bytes(const struct guest_mem *mem)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < mem->nregions; i++)
		if (mem->regions[i].mmap_base)
			n += mem->regions[i].mmap_len;
	return n;
}

/* Unmap a table, first taking its mappings off the SIGBUS watch list; their bytes are free. */
static void unmap_table(struct guest_mem *mem)
{
	uint64_t bytes = table_bytes(mem);

	for (unsigned i = 0; i < mem->nregions; i++)
		if (mem->regions[i].mmap_base)
			guest_fault_unwatch(mem->regions[i].mmap_base);
	guest_mem_unmap_all(mem);
	mem_cap_uncharge(bytes);
}

static uint64_t conn_mem_cap(const struct vu_conn *c)
{
	uint64_t cap = c->ops && c->ops->mem_cap ? c->ops->mem_cap(c->ctx) : 0;

	return cap ? cap : MEM_CAP_PORT_DEFAULT;
}

/**
 * vu_mem_admit() - admit `bytes` more guest mappings for connection c against the caps.
 * @c: the connection (its owner's mem_cap() gives the port's max-mem=)
 * @what: the request, for the log line
 * @bytes: address space the new mapping takes
 * @kept: what the connection keeps mapped besides it
 *
 * Return: 0 with `bytes` charged to the daemon-wide cap, or -1 (logged, naming the cap).
 */
int vu_mem_admit(struct vu_conn *c, const char *what, uint64_t bytes, uint64_t kept)
{
	char a[MEM_CAP_STR_LEN], b[MEM_CAP_STR_LEN], u[MEM_CAP_STR_LEN];
	uint64_t cap = conn_mem_cap(c);

	if (bytes > cap || kept > cap - bytes) {
		log_guest("vhost-user: %s: refused %s of guest memory (%s mapped besides): over "
			  "the port's max-mem=%s", what, mem_cap_format(bytes, a),
			  mem_cap_format(kept, u), mem_cap_format(cap, b));
		return -1;
	}
	if (mem_cap_charge(bytes) < 0) {
		log_guest("vhost-user: %s: refused %s of guest memory: over vnetd's "
			  "--max-guest-mem=%s (%s mapped for all ports)", what,
			  mem_cap_format(bytes, a), mem_cap_format(mem_cap_daemon(), b),
			  mem_cap_format(mem_cap_in_use(), u));
		return -1;
	}
	return 0;
}

/*
 * region_len() - check one SET_MEM_TABLE region's numbers and give the length to map (from
 * the start of the file, so mmap_offset need not be page-aligned); 0, or -1 (logged).
 */
static int region_len(const struct vu_mem_region *r, uint64_t *len)
{
	if (r->memory_size == 0) {
		log_guest("vhost-user: SET_MEM_TABLE: empty region");
		return -1;
	}
	if (r->mmap_offset > UINT64_MAX - r->memory_size ||
	    r->guest_phys_addr > UINT64_MAX - (r->memory_size - 1) ||
	    r->userspace_addr > UINT64_MAX - (r->memory_size - 1)) {
		log_guest("vhost-user: SET_MEM_TABLE: region wraps around");
		return -1;
	}
	*len = r->memory_size + r->mmap_offset;
	if (*len > SIZE_MAX) {
		log_guest("vhost-user: SET_MEM_TABLE: region too large");
		return -1;
	}
	return 0;
}

/* map_region() - mmap one checked region (len from region_len()); 0, or -1 (logged, unmapped). */
static int map_region(struct vu_conn *c, const struct vu_mem_region *r, uint64_t len, int fd,
		      struct guest_mem_region *out)
{
	struct stat st;
	void *base;

	/* A file shorter than the region would SIGBUS us on first touch. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < len) {
		log_guest("vhost-user: SET_MEM_TABLE: file of %jd bytes, region needs %" PRIu64,
			  (intmax_t)st.st_size, len);
		return -1;
	}
	base = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (base == MAP_FAILED) {
		log_guest("vhost-user: SET_MEM_TABLE: mmap of %" PRIu64 " bytes: %s", len,
			  strerror(errno));
		return -1;
	}
	/* The frontend keeps the fd and may still shrink the file: watch for SIGBUS. */
	if (guest_fault_watch(base, (size_t)len, &c->mem_fault) < 0) {
		log_err("vhost-user: SET_MEM_TABLE: too many guest mappings");
		munmap(base, (size_t)len);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->gpa = r->guest_phys_addr;
	out->uva = r->userspace_addr;
	out->size = r->memory_size;
	out->host = (uint8_t *)base + r->mmap_offset;
	out->mmap_base = base;
	out->mmap_len = (size_t)len;
	return 0;
}

/*
 * handle_set_mem_table() - map the new table completely before touching the old one. On any
 * failure the old table stays. On success running queues are stopped, the table swapped, the
 * queues restarted (their rings re-translated) and only then the old table unmapped.
 *
 * Before anything is mapped, the whole table is admitted against the caps (vu_mem_admit()):
 * the new table and the dirty log against the port's max-mem= (the old table goes), and the
 * new table against the daemon-wide cap (which still holds the old one until it is unmapped).
 */
static enum vu_result handle_set_mem_table(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_mem_table *t = &rx->msg.p.mem;
	bool was_started[VNET_MAX_QUEUES] = {false};
	uint64_t len[VU_MAX_REGIONS], total = 0;
	struct guest_mem nm, old;
	unsigned n;

	_Static_assert(VU_MAX_REGIONS <= GUEST_MEM_MAX_REGIONS, "a table fits guest_mem");
	for (unsigned i = 0; i < t->nregions; i++) {
		if (region_len(&t->regions[i], &len[i]) < 0)
			return VU_FAIL;
		total = len[i] > UINT64_MAX - total ? UINT64_MAX : total + len[i];
	}
	if (vu_mem_admit(c, "SET_MEM_TABLE", total, c->log.mmap_len) < 0)
		return VU_FAIL;

	memset(&nm, 0, sizeof(nm));
	for (unsigned i = 0; i < t->nregions; i++) {
		struct guest_mem_region reg;

		if (map_region(c, &t->regions[i], len[i], rx->fds[i], &reg) < 0)
			goto fail;
		if (guest_mem_add(&nm, &reg) < 0) {
			log_guest("vhost-user: SET_MEM_TABLE: region %u overlaps another", i);
			guest_fault_unwatch(reg.mmap_base);
			munmap(reg.mmap_base, reg.mmap_len);
			goto fail;
		}
	}

	n = vnet_dev_num_queues(c->dev);
	if (n > VNET_MAX_QUEUES)
		n = VNET_MAX_QUEUES;
	for (unsigned i = 0; i < n; i++) {
		struct vnet_queue *q = vnet_dev_queue(c->dev, i);

		if (q)
			was_started[i] = stop_if_started(c, i, q);
	}
	old = c->mem;
	c->mem = nm;
	for (unsigned i = 0; i < n; i++) {
		struct vnet_queue *q = vnet_dev_queue(c->dev, i);

		if (q && (was_started[i] || c->q[i].kick >= 0))
			try_start(c, i, q);
	}
	unmap_table(&old);
	log_info("vhost-user: memory table set, %u region(s)", c->mem.nregions);
	return VU_OK;

fail:
	/* What was admitted but never mapped; unmap_table() gives back the rest. */
	mem_cap_uncharge(total - table_bytes(&nm));
	unmap_table(&nm);
	return VU_FAIL;
}

/* ---- ring requests ---- */

static enum vu_result handle_vring_num(struct vu_conn *c, const struct vu_msg *m)
{
	uint32_t num = m->p.state.num;
	struct vnet_queue *q;
	unsigned qidx;
	bool was;

	if (!(q = conn_queue(c, m, &qidx)))
		return VU_FAIL;
	if (num == 0 || num > VQ_MAX_SIZE || (num & (num - 1)) != 0) {
		log_guest("vhost-user: queue %u: bad size %u (power of two, 1..%u)", qidx, num,
			  VQ_MAX_SIZE);
		return VU_FAIL;
	}
	was = stop_if_started(c, qidx, q);
	q->vq.num = (uint16_t)num;
	if (was)
		try_start(c, qidx, q);
	return VU_OK;
}

static enum vu_result handle_vring_addr(struct vu_conn *c, const struct vu_msg *m)
{
	const struct vu_vring_addr *a = &m->p.addr;
	struct vnet_queue *q;
	unsigned qidx;
	bool was;

	if (!(q = conn_queue(c, m, &qidx)))
		return VU_FAIL;
	was = stop_if_started(c, qidx, q);
	q->vq.desc_addr = a->desc;
	q->vq.avail_addr = a->avail;
	q->vq.used_addr = a->used;
	q->vq.ring_space = GUEST_ADDR_UVA;
	vu_mig_vring_addr(q, a);
	if (was || c->q[qidx].kick >= 0)
		try_start(c, qidx, q);
	return VU_OK;
}

static enum vu_result handle_vring_base(struct vu_conn *c, const struct vu_msg *m)
{
	uint32_t base = m->p.state.num;
	struct vnet_queue *q;
	unsigned qidx;
	bool was;

	if (!(q = conn_queue(c, m, &qidx)))
		return VU_FAIL;
	if (base > UINT16_MAX) {
		log_guest("vhost-user: queue %u: base %u is not a split-ring index", qidx, base);
		return VU_FAIL;
	}
	was = stop_if_started(c, qidx, q);
	q->vq.last_avail = (uint16_t)base;
	q->vq.used_idx = (uint16_t)base;
	if (was)
		try_start(c, qidx, q);
	return VU_OK;
}

/* GET_VRING_BASE stops the ring and drops its kick fd; a bad index still gets an answer (0). */
static enum vu_result handle_get_vring_base(struct vu_conn *c, const struct vu_msg *m)
{
	struct vu_vring_state st = {.index = m->p.state.index, .num = 0};
	struct vnet_queue *q;
	unsigned qidx;

	q = conn_queue(c, m, &qidx);
	if (q) {
		st.num = vnet_dev_queue_stop(c->dev, qidx);
		replace_kick(c, qidx, -1);
	}
	return send_reply(c, m->request, &st, sizeof(st)) < 0 ? VU_DISCONNECT
							       : (q ? VU_OK : VU_FAIL);
}

/* SET_VRING_KICK / CALL / ERR: the message's fd (or none with NOFD) replaces the old one. */
static enum vu_result handle_vring_fd(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_msg *m = &rx->msg;
	bool nofd = (m->p.u64 & VU_VRING_NOFD) != 0;
	struct vnet_queue *q;
	unsigned qidx;
	uint8_t kind;
	int fd;

	if (!(q = conn_queue(c, m, &qidx)))
		return VU_FAIL; /* the fd is closed by the caller */
	fd = nofd ? -1 : vu_take_fd(rx, 0);
	/*
	 * Every queue fd the frontend hands over is used without waiting: a call or error fd that
	 * is a full blocking pipe must not stop the daemon, nor a kick fd with nothing to read.
	 * The frontend shares the open file and can clear O_NONBLOCK again: every read and write
	 * goes through peer_io.h, which does not wait whatever the flag says.
	 */
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		log_guest("vhost-user: queue %u: cannot make fd non-blocking: %s", qidx,
			  strerror(errno));
	kind = (uint8_t)peer_fd_kind(fd);

	switch (m->request) {
	case VU_SET_VRING_KICK:
		c->q[qidx].kick_kind = kind;
		replace_kick(c, qidx, fd);
		if (nofd)
			log_guest("vhost-user: queue %u: polling mode (no kick fd) not supported",
				  qidx);
		if (!protocol_features_negotiated(c))
			vnet_dev_queue_enable(c->dev, qidx, true);
		try_start(c, qidx, q);
		break;
	case VU_SET_VRING_CALL:
		close_fd(&c->q[qidx].call);
		c->q[qidx].call = fd;
		c->q[qidx].call_kind = kind;
		break;
	default: /* VU_SET_VRING_ERR */
		close_fd(&c->q[qidx].err);
		c->q[qidx].err = fd;
		c->q[qidx].err_kind = kind;
		break;
	}
	return VU_OK;
}

static enum vu_result handle_vring_enable(struct vu_conn *c, const struct vu_msg *m)
{
	unsigned qidx;

	if (!conn_queue(c, m, &qidx))
		return VU_FAIL;
	if (m->p.state.num > 1) {
		log_guest("vhost-user: queue %u: SET_VRING_ENABLE %u", qidx, m->p.state.num);
		return VU_FAIL;
	}
	vnet_dev_queue_enable(c->dev, qidx, m->p.state.num == 1);
	return VU_OK;
}

/* ---- device-level requests ---- */

/* conn_reset() - RESET_OWNER / RESET_DEVICE: device reset, rings' fds dropped, memory kept. */
static void conn_reset(struct vu_conn *c)
{
	vnet_dev_reset(c->dev);
	drop_queue_fds(c);
	c->features_set = false;
	vu_mig_reset(c, false);
}

static enum vu_result handle_get_config(struct vu_conn *c, const struct vu_msg *m)
{
	struct vu_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.offset = m->p.config.offset;
	cfg.size = m->p.config.size;
	cfg.flags = m->p.config.flags;
	vnet_dev_config_read(c->dev, cfg.offset, cfg.region, cfg.size);
	if (send_reply(c, m->request, &cfg, VU_CONFIG_HDR_SIZE + cfg.size) < 0)
		return VU_DISCONNECT;
	return VU_OK;
}

static enum vu_result handle_set_protocol_features(struct vu_conn *c, const struct vu_msg *m)
{
	uint64_t want = m->p.u64;

	c->protocol_features = want & VU_OFFERED_PROTOCOL_FEATURES;
	if (want & ~VU_OFFERED_PROTOCOL_FEATURES) {
		log_guest("vhost-user: protocol features %#" PRIx64 " not offered (ignored)",
			  (uint64_t)(want & ~VU_OFFERED_PROTOCOL_FEATURES));
		return VU_FAIL;
	}
	return VU_OK;
}

static enum vu_result handle_set_features(struct vu_conn *c, const struct vu_msg *m)
{
	uint64_t f = m->p.u64 & ~(BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES) | BIT_ULL(VHOST_F_LOG_ALL));

	if (vnet_dev_set_features(c->dev, f) < 0) {
		log_guest("vhost-user: SET_FEATURES %#" PRIx64 " refused", f);
		return VU_FAIL;
	}
	c->features_set = true;
	c->protocol_bit_accepted = m->p.u64 & BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES);
	vu_mig_set_log_all(c, m->p.u64 & BIT_ULL(VHOST_F_LOG_ALL));
	return VU_OK;
}

/* vu_dispatch() - act on one validated message. */
static enum vu_result vu_dispatch(struct vu_conn *c, struct vu_rx *rx)
{
	const struct vu_msg *m = &rx->msg;

	switch (m->request) {
	case VU_GET_FEATURES:
		return vu_reply_u64(c, m->request,
				 vnet_dev_offered_features(c->dev) |
					 BIT_ULL(VHOST_USER_F_PROTOCOL_FEATURES) |
					 BIT_ULL(VHOST_F_LOG_ALL));
	case VU_SET_FEATURES:
		return handle_set_features(c, m);
	case VU_GET_PROTOCOL_FEATURES:
		return vu_reply_u64(c, m->request, VU_OFFERED_PROTOCOL_FEATURES);
	case VU_SET_PROTOCOL_FEATURES:
		return handle_set_protocol_features(c, m);
	case VU_SET_OWNER:
		c->owner_set = true;
		return VU_OK;
	case VU_RESET_OWNER:
	case VU_RESET_DEVICE:
		conn_reset(c);
		return VU_OK;
	case VU_SET_MEM_TABLE:
		return handle_set_mem_table(c, rx);
	case VU_SET_VRING_NUM:
		return handle_vring_num(c, m);
	case VU_SET_VRING_ADDR:
		return handle_vring_addr(c, m);
	case VU_SET_VRING_BASE:
		return handle_vring_base(c, m);
	case VU_GET_VRING_BASE:
		return handle_get_vring_base(c, m);
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR:
		return handle_vring_fd(c, rx);
	case VU_SET_VRING_ENABLE:
		return handle_vring_enable(c, m);
	case VU_GET_QUEUE_NUM:
		return vu_reply_u64(c, m->request, vnet_dev_num_queues(c->dev));
	case VU_SET_BACKEND_REQ_FD:
		/* Never written to (we send no backend requests); kept open until disconnect. */
		close_fd(&c->backend_req_fd);
		c->backend_req_fd = vu_take_fd(rx, 0);
		return VU_OK;
	case VU_GET_CONFIG:
		return handle_get_config(c, m);
	case VU_SET_CONFIG:
		if (vnet_dev_config_write(c->dev, m->p.config.offset, m->p.config.region,
					  m->p.config.size) < 0) {
			log_guest("vhost-user: SET_CONFIG offset %u size %u refused",
				  m->p.config.offset, m->p.config.size);
			return VU_FAIL;
		}
		return VU_OK;
	case VU_SEND_RARP:
		return vu_mig_send_rarp(c, m);
	case VU_NET_SET_MTU:
		log_info("vhost-user: frontend MTU %" PRIu64 " noted (not enforced)", m->p.u64);
		return VU_OK;
	case VU_SET_LOG_BASE:
		return vu_mig_set_log_base(c, rx);
	case VU_SET_LOG_FD:
		return VU_OK; /* the log is polled by the frontend: no kick needed (fd closed) */
	case VU_SET_DEVICE_STATE_FD:
		return vu_mig_set_state_fd(c, rx);
	case VU_CHECK_DEVICE_STATE:
		return vu_mig_check_state(c, m);
	case VU_SET_VRING_ENDIAN:
		log_guest("vhost-user: SET_VRING_ENDIAN: cross-endian rings not offered");
		return VU_FAIL;
	default:
		log_guest("vhost-user: unsupported request %u (%s)", m->request,
			  vu_request_name(m->request));
		return VU_FAIL;
	}
}

/* Requests answered with their own reply message (never with a REPLY_ACK). */
static bool has_own_reply(uint32_t request)
{
	return request == VU_GET_FEATURES || request == VU_GET_PROTOCOL_FEATURES ||
	       request == VU_GET_VRING_BASE || request == VU_GET_QUEUE_NUM ||
	       request == VU_GET_CONFIG || request == VU_SET_LOG_BASE ||
	       request == VU_SET_DEVICE_STATE_FD || request == VU_CHECK_DEVICE_STATE;
}

/* ---- public interface ---- */

/* vu_conn_init() - start a connection on an accepted socket (made non-blocking); resets dev. */
void vu_conn_init(struct vu_conn *c, int sock, struct vnet_dev *dev, const struct vu_owner_ops *ops,
		  void *ctx)
{
	int fl;

	memset(c, 0, sizeof(*c));
	c->sock = sock;
	c->backend_req_fd = -1;
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		c->q[i].kick = -1;
		c->q[i].call = -1;
		c->q[i].err = -1;
	}
	c->dev = dev;
	c->ops = ops;
	c->ctx = ctx;
	c->xfer.fd = -1;
	/* A frontend that stalls mid-message must not block the whole daemon: never wait. */
	fl = fcntl(sock, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(sock, F_SETFL, fl | O_NONBLOCK) < 0)
		log_warn("vhost-user: cannot make socket non-blocking: %s", strerror(errno));
	if (dev)
		vnet_dev_reset(dev);
}

/*
 * vu_conn_handle_readable() - read, validate and handle one message. Malformed messages
 * (vu_msg_parse() fails) close the connection; well-formed requests we refuse get a REPLY_ACK
 * failure when asked for and keep it.
 */
int vu_conn_handle_readable(struct vu_conn *c)
{
	struct vu_rx rx;
	enum vu_result res;
	const char *why;
	uint32_t request, size = 0;
	size_t want;
	ssize_t n;

	_Static_assert(sizeof(c->rxbuf) >= VU_HDR_SIZE + VU_MSG_MAX_PAYLOAD, "rxbuf too small");
	_Static_assert(sizeof(c->rxfds) / sizeof(c->rxfds[0]) == VU_MAX_FDS, "rxfds size");
	if (c->sock < 0 || !c->dev)
		return -1;
	/* Read only what the current message still needs; a partial one waits for more input. */
	if (c->rxlen >= VU_HDR_SIZE)
		memcpy(&size, c->rxbuf + 8, sizeof(size));
	want = c->rxlen < VU_HDR_SIZE ? VU_HDR_SIZE - c->rxlen : VU_HDR_SIZE + size - c->rxlen;
	n = recv_some(c->sock, c->rxbuf + c->rxlen, want, c->rxfds, &c->nrxfds);
	if (n < 0 && c->rxlen >= VU_HDR_SIZE) {
		memcpy(&request, c->rxbuf, sizeof(request));
		log_guest("vhost-user: %s: truncated payload (%zu of %u bytes) at disconnect",
			  vu_request_name(request), c->rxlen - VU_HDR_SIZE, size);
	} else if (n < 0 && c->rxlen) {
		log_guest("vhost-user: truncated message header (%zu of %u bytes) at disconnect",
			  c->rxlen, VU_HDR_SIZE);
	}
	if (n <= 0)
		return n < 0 ? -1 : 0;
	c->rxlen += (size_t)n;
	if (c->rxlen < VU_HDR_SIZE)
		return 0;
	memcpy(&request, c->rxbuf, sizeof(request));
	memcpy(&size, c->rxbuf + 8, sizeof(size));
	if (size > VU_MSG_MAX_PAYLOAD) {
		log_guest("vhost-user: %s: payload of %u bytes (max %u)", vu_request_name(request),
			  size, VU_MSG_MAX_PAYLOAD);
		return -1;
	}
	if (c->rxlen < VU_HDR_SIZE + size)
		return 0;

	/* A whole message: take it (and its fds) out of the connection's receive state. */
	memcpy(rx.fds, c->rxfds, sizeof(rx.fds));
	rx.nfds = c->nrxfds;
	c->nrxfds = 0;
	c->rxlen = 0;
	if (vu_msg_parse(c->rxbuf, VU_HDR_SIZE + size, rx.nfds, &rx.msg, &why) < 0) {
		log_guest("vhost-user: bad %s message (%u): %s", vu_request_name(request), request,
			  why);
		close_rx_fds(rx.fds, rx.nfds);
		return -1;
	}
	c->messages++;
	log_debug("vhost-user: %s", vu_request_name(request));

	res = vu_dispatch(c, &rx);
	close_rx_fds(rx.fds, rx.nfds); /* every fd a handler did not keep */
	if (res == VU_DISCONNECT)
		return -1;
	/* After dispatch: UML asks for an ack on the very SET_PROTOCOL_FEATURES enabling it. */
	if ((rx.msg.flags & VU_FLAG_NEED_REPLY) &&
	    (c->protocol_features & BIT_ULL(VU_PROTOCOL_F_REPLY_ACK)) && !has_own_reply(request)) {
		uint64_t ack = res == VU_OK ? 0 : 1;

		if (send_reply(c, request, &ack, sizeof(ack)) < 0)
			return -1;
	}
	return 0;
}

/* vu_conn_close() - stop the device, then close every fd and unmap memory. Idempotent. */
void vu_conn_close(struct vu_conn *c)
{
	if (!c->dev)
		return; /* never initialised */
	vnet_dev_reset(c->dev); /* queues stop before their memory goes away */
	vu_mig_reset(c, true);
	drop_queue_fds(c);
	close_rx_fds(c->rxfds, c->nrxfds);
	c->nrxfds = 0;
	c->rxlen = 0;
	close_fd(&c->backend_req_fd);
	close_fd(&c->sock);
	unmap_table(&c->mem);
	c->mem_fault = 0;
	c->protocol_features = 0;
	c->features_set = false;
	c->protocol_bit_accepted = false;
	c->owner_set = false;
}

/**
 * vu_conn_kick_failed() - queue qidx's kick fd reported HUP or ERR: drop it, break the queue.
 * @c: the connection
 * @qidx: the queue whose kick fd it is
 * @events: what epoll reported (EPOLLERR and/or EPOLLHUP)
 *
 * Return: nothing; the kick fd is closed (owner told first) and one line logged.
 */
void vu_conn_kick_failed(struct vu_conn *c, unsigned qidx, uint32_t events)
{
	struct vnet_queue *q;
	const char *what = events & EPOLLERR ? "kick fd reported an error (EPOLLERR)"
					     : "kick fd hung up (EPOLLHUP)";

	if (qidx >= VNET_MAX_QUEUES || c->q[qidx].kick < 0)
		return;
	replace_kick(c, qidx, -1); /* out of epoll and closed: it cannot report again */
	q = qidx < vnet_dev_num_queues(c->dev) ? vnet_dev_queue(c->dev, qidx) : NULL;
	/* One line: vq_mark_broken() says it, or this if the queue was broken already. */
	if (q && !q->vq.broken)
		vq_mark_broken(&q->vq, what);
	else
		log_guest("vhost-user: queue %u: %s; kick fd dropped", qidx, what);
}

/* vu_conn_signal_error() - write u64 1 to queue qidx's error fd (SET_VRING_ERR), if it has one. */
void vu_conn_signal_error(struct vu_conn *c, unsigned qidx)
{
	const uint64_t one = 1;
	int fd;

	if (qidx >= VNET_MAX_QUEUES || (fd = c->q[qidx].err) < 0)
		return;
	if (peer_write(fd, c->q[qidx].err_kind, &one, sizeof(one)) < 0 && errno != EAGAIN &&
	    errno != EPIPE)
		log_guest("vhost-user: queue %u: error fd: %s", qidx, strerror(errno));
}

/* vu_conn_notify() - write u64 1 to queue qidx's call fd; a full or closed peer is ignored. */
void vu_conn_notify(struct vu_conn *c, unsigned qidx)
{
	const uint64_t one = 1;
	ssize_t n;
	int fd;

	if (qidx >= VNET_MAX_QUEUES || (fd = c->q[qidx].call) < 0)
		return;
	/* UML's call fds are socketpair ends, QEMU's eventfds: neither may block (peer_io.h). */
	n = peer_write(fd, c->q[qidx].call_kind, &one, sizeof(one));
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EPIPE &&
	    errno != ECONNRESET && errno != EINTR)
		log_guest("vhost-user: queue %u: call fd: %s", qidx, strerror(errno));
}
