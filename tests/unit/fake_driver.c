/* SPDX-License-Identifier: MIT */
/* fake_driver.c - in-test virtio driver on fake guest memory, and a device harness. */
#include "fake_driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"
#include "lib/virtio_net_defs.h"

#define TD_MEM_GPA 0x100000ull
#define TD_HDR_LEN 12u

static void die(const char *what)
{
	fprintf(stderr, "fake_driver: %s\n", what);
	abort();
}

/* fake_mem_init() - `size` zeroed bytes at `gpa`: one region, or two_regions: FAKE_MEM_GAP. */
void fake_mem_init(struct fake_mem *m, uint64_t gpa, uint64_t size, bool two_regions)
{
	fake_mem_init_layout(m, gpa, size, two_regions ? FAKE_MEM_GAP : FAKE_MEM_ONE);
}

/* fake_mem_init_layout() - like fake_mem_init() with any layout. */
void fake_mem_init_layout(struct fake_mem *m, uint64_t gpa, uint64_t size,
			  enum fake_mem_layout layout)
{
	struct guest_mem_region r;

	memset(m, 0, sizeof(*m));
	m->gpa = gpa;
	m->size = size;
	m->two_regions = layout != FAKE_MEM_ONE;
	m->gpa_gap = layout == FAKE_MEM_GAP ? FAKE_REGION_GAP : 0;
	m->host_gap = layout == FAKE_MEM_ADJACENT ? FAKE_HOST_GAP : 0;
	m->buf = calloc(1, size + m->host_gap);
	if (!m->buf)
		die("out of memory");
	memset(m->buf + size / 2, 0xdb, m->host_gap); /* what a device reading across finds */
	m->next = 64; /* keep GPA `gpa` itself unused: a zero-looking address stays invalid-ish */
	memset(&r, 0, sizeof(r));
	r.gpa = gpa;
	r.uva = gpa + FAKE_UVA_OFFSET;
	r.size = m->two_regions ? size / 2 : size;
	r.host = m->buf;
	if (guest_mem_add(&m->gm, &r) != 0)
		die("guest_mem_add failed");
	if (!m->two_regions)
		return;
	r.gpa = gpa + size / 2 + m->gpa_gap;
	r.uva = r.gpa + FAKE_UVA_OFFSET;
	r.size = size - size / 2;
	r.host = m->buf + size / 2 + m->host_gap;
	if (guest_mem_add(&m->gm, &r) != 0)
		die("guest_mem_add failed");
}

/* fake_mem_free() - release the buffer and the region table's arrays. */
void fake_mem_free(struct fake_mem *m)
{
	guest_mem_unmap_all(&m->gm); /* owns no mapping */
	free(m->buf);
	m->buf = NULL;
}

/* Offset into the guest's bytes <-> GPA, honouring the gap of the two-region layouts. */
static uint64_t off_to_gpa(const struct fake_mem *m, uint64_t off)
{
	if (m->two_regions && off >= m->size / 2)
		return m->gpa + off + m->gpa_gap;
	return m->gpa + off;
}

/* fake_mem_alloc() - zeroed guest memory; returns its GPA (aborts when out of memory). */
uint64_t fake_mem_alloc(struct fake_mem *m, uint64_t size, uint64_t align)
{
	uint64_t off = (m->next + align - 1) & ~(align - 1);

	/* Never let an allocation straddle the middle of a two-region layout. */
	if (m->two_regions && off < m->size / 2 && off + size > m->size / 2)
		off = m->size / 2;
	if (off + size > m->size)
		die("fake guest memory exhausted");
	m->next = off + size;
	return off_to_gpa(m, off);
}

/* fake_mem_alloc_straddling() - FAKE_MEM_ADJACENT: `size` bytes, `before` of them in region 1. */
uint64_t fake_mem_alloc_straddling(struct fake_mem *m, uint64_t size, uint64_t before)
{
	uint64_t off = m->size / 2 - before;

	if (!m->two_regions || m->gpa_gap || before == 0 || before >= size || m->next > off ||
	    off + size > m->size)
		die("cannot place a straddling buffer");
	m->next = off + size;
	return off_to_gpa(m, off);
}

/* fake_mem_host() - host pointer for a GPA inside the fake memory (aborts otherwise). */
void *fake_mem_host(const struct fake_mem *m, uint64_t gpa)
{
	uint64_t off;

	if (gpa < m->gpa)
		die("GPA below fake memory");
	off = gpa - m->gpa;
	if (m->two_regions && off >= m->size / 2) {
		if (off < m->size / 2 + m->gpa_gap)
			die("GPA in the gap");
		off -= m->gpa_gap;
	}
	if (off >= m->size)
		die("GPA above fake memory");
	if (m->two_regions && off >= m->size / 2)
		off += m->host_gap;
	return m->buf + off;
}

/* fake_mem_end_gpa() - first GPA after the last region. */
uint64_t fake_mem_end_gpa(const struct fake_mem *m)
{
	return off_to_gpa(m, m->size - 1) + 1;
}

/* fake_vq_init() - allocate rings for a queue of `num` entries in `m`. */
void fake_vq_init(struct fake_vq *q, struct fake_mem *m, uint16_t num)
{
	memset(q, 0, sizeof(*q));
	q->mem = m;
	q->num = num;
	q->desc_gpa = fake_mem_alloc(m, 16ull * num, 16);
	q->avail_gpa = fake_mem_alloc(m, 6ull + 2ull * num, 2);
	q->used_gpa = fake_mem_alloc(m, 6ull + 8ull * num, 4);
	q->desc = fake_mem_host(m, q->desc_gpa);
	q->avail = fake_mem_host(m, q->avail_gpa);
	q->used = fake_mem_host(m, q->used_gpa);
	q->free_stack = calloc(num, sizeof(*q->free_stack));
	q->head_ndesc = calloc(num, 1);
	q->head_descs = calloc((size_t)num * FAKE_MAX_CHAIN, sizeof(*q->head_descs));
	if (!q->free_stack || !q->head_ndesc || !q->head_descs)
		die("out of memory");
	/* Lowest index on top of the stack, so heads come out 0, 1, 2, ... */
	for (unsigned i = 0; i < num; i++)
		q->free_stack[i] = (uint16_t)(num - 1 - i);
	q->nfree = num;
}

/* fake_vq_destroy() - free the driver's bookkeeping (ring memory stays in fake_mem). */
void fake_vq_destroy(struct fake_vq *q)
{
	free(q->free_stack);
	free(q->head_ndesc);
	free(q->head_descs);
	q->free_stack = NULL;
	q->head_ndesc = NULL;
	q->head_descs = NULL;
}

/* fake_vq_setup_virtqueue() - copy num and ring GPAs into a device virtqueue. */
void fake_vq_setup_virtqueue(const struct fake_vq *q, struct virtqueue *vq)
{
	vq->num = q->num;
	vq->desc_addr = q->desc_gpa;
	vq->avail_addr = q->avail_gpa;
	vq->used_addr = q->used_gpa;
	vq->ring_space = GUEST_ADDR_GPA;
}

static uint16_t take_desc(struct fake_vq *q)
{
	if (q->nfree == 0)
		die("descriptor table full");
	return q->free_stack[--q->nfree];
}

/* fake_vq_add_head() - put an arbitrary head index in the avail ring (hostile tests). */
void fake_vq_add_head(struct fake_vq *q, uint16_t head)
{
	q->avail->ring[q->avail_idx % q->num] = head;
	q->avail_idx++;
}

/* fake_vq_add_chain() - direct chain of n buffers, put in the avail ring; returns the head. */
int fake_vq_add_chain(struct fake_vq *q, const struct fake_buf *bufs, unsigned n)
{
	uint16_t idx[FAKE_MAX_CHAIN];

	if (n == 0 || n > FAKE_MAX_CHAIN || n > q->nfree)
		die("bad chain length");
	for (unsigned i = 0; i < n; i++)
		idx[i] = take_desc(q);
	for (unsigned i = 0; i < n; i++) {
		struct vring_desc *d = &q->desc[idx[i]];

		d->addr = bufs[i].gpa;
		d->len = bufs[i].len;
		d->flags = (uint16_t)((bufs[i].write ? VRING_DESC_F_WRITE : 0) |
				      (i + 1 < n ? VRING_DESC_F_NEXT : 0));
		d->next = i + 1 < n ? idx[i + 1] : 0;
		q->head_descs[(size_t)idx[0] * FAKE_MAX_CHAIN + i] = idx[i];
	}
	q->head_ndesc[idx[0]] = (uint8_t)n;
	fake_vq_add_head(q, idx[0]);
	return idx[0];
}

/* fake_vq_add_indirect() - one INDIRECT descriptor to a table of n buffers; returns the head. */
int fake_vq_add_indirect(struct fake_vq *q, const struct fake_buf *bufs, unsigned n)
{
	uint64_t table_gpa = fake_mem_alloc(q->mem, 16ull * n, 16);
	struct vring_desc *t = fake_mem_host(q->mem, table_gpa);
	uint16_t head = take_desc(q);

	for (unsigned i = 0; i < n; i++) {
		t[i].addr = bufs[i].gpa;
		t[i].len = bufs[i].len;
		t[i].flags = (uint16_t)((bufs[i].write ? VRING_DESC_F_WRITE : 0) |
					(i + 1 < n ? VRING_DESC_F_NEXT : 0));
		t[i].next = (uint16_t)(i + 1 < n ? i + 1 : 0);
	}
	q->desc[head].addr = table_gpa;
	q->desc[head].len = 16u * n;
	q->desc[head].flags = VRING_DESC_F_INDIRECT;
	q->desc[head].next = 0;
	q->head_descs[(size_t)head * FAKE_MAX_CHAIN] = head;
	q->head_ndesc[head] = 1;
	fake_vq_add_head(q, head);
	return head;
}

/* fake_vq_publish() - store the shadow avail index into avail->idx. */
void fake_vq_publish(struct fake_vq *q)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->avail->idx = q->avail_idx;
}

/* fake_vq_used_idx() - the device's published used index. */
uint16_t fake_vq_used_idx(const struct fake_vq *q)
{
	return __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
}

/* fake_vq_get_used() - next used element, freeing its descriptors; false if none. */
bool fake_vq_get_used(struct fake_vq *q, uint32_t *id, uint32_t *len)
{
	struct vring_used_elem e;

	if (fake_vq_used_idx(q) == q->last_used)
		return false;
	e = q->used->ring[q->last_used % q->num];
	q->last_used++;
	if (id)
		*id = e.id;
	if (len)
		*len = e.len;
	if (e.id < q->num) {
		for (unsigned i = 0; i < q->head_ndesc[e.id]; i++)
			q->free_stack[q->nfree++] =
			    q->head_descs[(size_t)e.id * FAKE_MAX_CHAIN + i];
		q->head_ndesc[e.id] = 0;
	}
	return true;
}

/* fake_vq_set_no_interrupt() - set or clear VRING_AVAIL_F_NO_INTERRUPT. */
void fake_vq_set_no_interrupt(struct fake_vq *q, bool on)
{
	if (on)
		q->avail->flags |= VRING_AVAIL_F_NO_INTERRUPT;
	else
		q->avail->flags &= (uint16_t)~VRING_AVAIL_F_NO_INTERRUPT;
}

/* fake_vq_set_used_event() - EVENT_IDX: notify me when the used index passes `v`. */
void fake_vq_set_used_event(struct fake_vq *q, uint16_t v)
{
	q->avail->ring[q->num] = v;
}

/* fake_vq_avail_event() - EVENT_IDX: the device's avail_event field. */
uint16_t fake_vq_avail_event(const struct fake_vq *q)
{
	const uint16_t *p = (const uint16_t *)&q->used->ring[q->num];

	return *p;
}

/* ---- Device harness ---- */

/* put_le16() - store v little-endian at p. */
void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* put_le32() - store v little-endian at p. */
void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* put_le64() - store v little-endian at p. */
void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* get_le16() - load a little-endian u16. */
uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* get_le32() - load a little-endian u32. */
uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t env_now(void *ctx)
{
	return ((struct test_dev *)ctx)->now;
}

static void env_notify(void *ctx, unsigned qidx)
{
	struct test_dev *td = ctx;

	if (qidx >= VNET_MAX_QUEUES)
		die("notify for a queue that does not exist");
	td->notifies[qidx]++;
}

static void env_arm_timer(void *ctx, unsigned qidx, uint64_t deadline_ns)
{
	struct test_dev *td = ctx;

	if (qidx >= VNET_MAX_QUEUES)
		die("timer for a queue that does not exist");
	td->deadline[qidx] = deadline_ns;
	td->arm_calls[qidx]++;
}

static bool env_schedule(void *ctx, unsigned qidx)
{
	struct test_dev *td = ctx;

	if (qidx >= VNET_MAX_QUEUES)
		die("schedule for a queue that does not exist");
	if (td->scheduled[qidx])
		die("a queue was scheduled twice before it ran");
	td->scheduled[qidx] = true;
	td->schedule_calls[qidx]++;
	return true;
}

static void env_queue_error(void *ctx, unsigned qidx)
{
	struct test_dev *td = ctx;

	if (qidx >= VNET_MAX_QUEUES)
		die("error for a queue that does not exist");
	td->queue_errors[qidx]++;
}

static const struct vnet_env_ops td_env_ops = {
    .now_ns = env_now,
    .notify = env_notify,
    .arm_timer = env_arm_timer,
    .schedule = env_schedule,
    .queue_error = env_queue_error,
};

/* td_run_scheduled() - one round of the owner's run queue: each scheduled queue runs once. */
unsigned td_run_scheduled(struct test_dev *td)
{
	bool due[VNET_MAX_QUEUES];
	unsigned n = 0;

	memcpy(due, td->scheduled, sizeof(due));
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		if (!due[i])
			continue;
		td->scheduled[i] = false;
		vnet_dev_queue_run(td->dev, i);
		n++;
	}
	return n;
}

/* Records header + frame as one flat packet (what a tap would be written). */
static int be_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct test_dev *td = be->td;
	struct td_packet *p;
	size_t len = sizeof(*hdr) + frame_len;

	td->tx_attempts++;
	if (td->tx_hook && td->tx_hook(td) != 0)
		return -EIO;
	if (td->tx_eagain) {
		td->tx_eagain--;
		return -EAGAIN;
	}
	if (td->npkts == TD_MAX_PACKETS)
		die("too many packets recorded");
	p = &td->pkts[td->npkts++];
	p->data = malloc(len);
	if (!p->data)
		die("out of memory");
	memcpy(p->data, hdr, sizeof(*hdr));
	p->len = sizeof(*hdr) + iov_copy_from(iov, iovcnt, off, p->data + sizeof(*hdr), frame_len);
	if (p->len != len)
		die("transmit: the iovecs hold less than off + frame_len bytes");
	return (int)td->tx_cost; /* further deliveries a backend may report */
}

static void be_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	be->td->set_offloads_calls++;
	be->td->offloads = guest_features;
}

static bool be_rx_resume(struct vnet_backend *be)
{
	be->td->rx_resume_calls++;
	return false;
}

const struct vnet_backend_ops td_backend_ops = {
    .kind = "test",
    .offload_features = BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |
			BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |
			BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6),
    .transmit = be_transmit,
    .set_offloads = be_set_offloads,
    .rx_resume = be_rx_resume,
};

/* td_default_params() - a 1..pairs device with every feature allowed. */
void td_default_params(struct vnet_dev_params *p, uint16_t pairs)
{
	static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

	memset(p, 0, sizeof(*p));
	memcpy(p->mac, mac, sizeof(mac));
	p->queue_pairs = pairs;
	p->mtu = 1500;
	/* The fake driver drives split rings and does not keep IN_ORDER: test_vq_packed tests
	 * the packed layout and in-order on the virtqueue itself. */
	p->features_mask = ~(BIT_ULL(VIRTIO_F_RING_PACKED) | BIT_ULL(VIRTIO_F_IN_ORDER));
	p->tx_mode = VNET_TX_KICK;
}

size_t td_mem_size = 4u << 20;

static struct test_dev *live_devs;

/* td_create() - device + memory + backend, features negotiated, no queues started. */
struct test_dev *td_create(const struct vnet_dev_params *params, uint64_t want_features)
{
	struct test_dev *td = calloc(1, sizeof(*td));

	if (!td)
		die("out of memory");
	td->next_live = live_devs;
	live_devs = td;
	td->now = 1000000000ull; /* not 0: a deadline of 0 means "disarmed" */
	td->ctrl_q = ~0u;
	td->be.td = td;
	fake_mem_init(&td->mem, TD_MEM_GPA, td_mem_size, false);
	td->dev = vnet_dev_create(params, &td_env_ops, td);
	if (!td->dev)
		die("vnet_dev_create failed");
	vnet_dev_attach_backend(td->dev, &td_backend_ops, &td->be);
	td->features = vnet_dev_offered_features(td->dev) & want_features;
	if (vnet_dev_set_features(td->dev, td->features) != 0)
		die("vnet_dev_set_features refused a subset of the offered features");
	return td;
}

/* td_set_mem_layout() - new, empty guest memory of `layout`; call before td_start_queues(). */
void td_set_mem_layout(struct test_dev *td, enum fake_mem_layout layout)
{
	uint64_t gpa = td->mem.gpa, size = td->mem.size;

	fake_mem_free(&td->mem);
	fake_mem_init_layout(&td->mem, gpa, size, layout);
}

/*
 * td_recycle() - reset a test_dev for reuse (fuzzers: one device per process instead of one
 * per input): device reset, guest memory wiped, features negotiated again.
 */
void td_recycle(struct test_dev *td, uint64_t want_features)
{
	vnet_dev_reset(td->dev);
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		fake_vq_destroy(&td->vq[i]);
		td->notifies[i] = 0;
		td->deadline[i] = 0;
		td->arm_calls[i] = 0;
	}
	td_clear_packets(td);
	memset(td->mem.buf, 0, td->mem.size + td->mem.host_gap);
	td->mem.next = 64;
	td->now = 1000000000ull;
	td->ctrl_q = ~0u;
	td->tx_attempts = td->tx_eagain = td->rx_resume_calls = td->set_offloads_calls = 0;
	td->tx_hook = NULL;
	td->features = vnet_dev_offered_features(td->dev) & want_features;
	if (vnet_dev_set_features(td->dev, td->features) != 0)
		die("vnet_dev_set_features refused a subset of the offered features");
}

/* td_start_queues() - set up, start and enable every queue (control queue if negotiated). */
void td_start_queues(struct test_dev *td, uint16_t qsize)
{
	unsigned pairs = vnet_dev_num_queues(td->dev) / 2;
	unsigned data_queues = (td->features & BIT_ULL(VIRTIO_NET_F_MQ)) ? 2 * pairs : 2;

	td->nqueues = data_queues;
	td->ctrl_q = ~0u;
	if (td->features & BIT_ULL(VIRTIO_NET_F_CTRL_VQ)) {
		td->ctrl_q = vnet_dev_ctrl_queue_index(td->dev);
		td->nqueues = td->ctrl_q + 1;
	}
	for (unsigned i = 0; i < td->nqueues; i++) {
		struct vnet_queue *q = vnet_dev_queue(td->dev, i);

		if (i >= data_queues && i != td->ctrl_q)
			continue;
		if (!q)
			die("vnet_dev_queue returned NULL");
		fake_vq_destroy(&td->vq[i]);
		fake_vq_init(&td->vq[i], &td->mem, qsize);
		fake_vq_setup_virtqueue(&td->vq[i], &q->vq);
		if (vnet_dev_queue_start(td->dev, i, &td->mem.gm) != 0)
			die("vnet_dev_queue_start failed");
		vnet_dev_queue_enable(td->dev, i, true);
	}
}

/* td_new() - td_create() with default params and `pairs`, then td_start_queues(256). */
struct test_dev *td_new(uint16_t pairs, uint64_t want_features)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, pairs);
	td = td_create(&p, want_features);
	td_start_queues(td, 256);
	return td;
}

/* td_clear_packets() - forget recorded backend packets. */
void td_clear_packets(struct test_dev *td)
{
	for (unsigned i = 0; i < td->npkts; i++)
		free(td->pkts[i].data);
	td->npkts = 0;
}

/* td_free() - destroy device, memory and recorded packets. */
void td_free(struct test_dev *td)
{
	if (!td)
		return;
	for (struct test_dev **pp = &live_devs; *pp; pp = &(*pp)->next_live) {
		if (*pp == td) {
			*pp = td->next_live;
			break;
		}
	}
	vnet_dev_destroy(td->dev);
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++)
		fake_vq_destroy(&td->vq[i]);
	td_clear_packets(td);
	fake_mem_free(&td->mem);
	free(td);
}

/* td_advance() - move the fake clock forward, firing expired timers like a timerfd would. */
void td_advance(struct test_dev *td, uint64_t ns)
{
	bool fired;

	td->now += ns;
	do {
		fired = false;
		for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
			if (td->deadline[i] == 0 || td->deadline[i] > td->now)
				continue;
			td->deadline[i] = 0; /* one-shot, like the timerfd */
			vnet_dev_timer_expired(td->dev, i);
			fired = true;
		}
	} while (fired);
}

/* td_tx_queue() - like td_tx() but without the kick; returns the head of the last chain. */
int td_tx_queue(struct test_dev *td, unsigned qidx, uint32_t len, uint8_t fill)
{
	struct fake_vq *q = &td->vq[qidx];
	struct fake_buf b[2];
	uint8_t *hdr, *data;

	/* Reclaim completed chains when the table runs low (like a driver's free_old_xmit). */
	if (q->nfree < 2)
		while (fake_vq_get_used(q, NULL, NULL))
			;
	b[0].gpa = fake_mem_alloc(&td->mem, TD_HDR_LEN, 2);
	b[0].len = TD_HDR_LEN;
	b[0].write = false;
	b[1].gpa = fake_mem_alloc(&td->mem, len ? len : 1, 1);
	b[1].len = len;
	b[1].write = false;
	hdr = fake_mem_host(&td->mem, b[0].gpa);
	memset(hdr, 0, TD_HDR_LEN);
	data = fake_mem_host(&td->mem, b[1].gpa);
	memset(data, fill, len);
	return fake_vq_add_chain(q, b, len ? 2 : 1);
}

/* td_tx() - the guest sends n packets of `len` data bytes (12-byte header + data) and kicks. */
void td_tx(struct test_dev *td, unsigned qidx, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++)
		td_tx_queue(td, qidx, len, (uint8_t)(td->npkts + i));
	fake_vq_publish(&td->vq[qidx]);
	vnet_dev_kick(td->dev, qidx);
}

/* td_post_rx() - the guest posts n writable buffers of `size` bytes (no kick); returns first GPA.
 */
uint64_t td_post_rx(struct test_dev *td, unsigned qidx, unsigned n, uint32_t size)
{
	uint64_t first = 0;

	for (unsigned i = 0; i < n; i++) {
		struct fake_buf b = {fake_mem_alloc(&td->mem, size, 8), size, true};

		if (i == 0)
			first = b.gpa;
		fake_vq_add_chain(&td->vq[qidx], &b, 1);
	}
	fake_vq_publish(&td->vq[qidx]);
	return first;
}

/*
 * td_receive() - the backend delivers a frame of `len` bytes to the device's MAC (payload after
 * the 14-byte Ethernet header filled with `fill`), then flushes like the event loop does.
 */
int td_receive(struct test_dev *td, uint32_t len, uint8_t fill)
{
	uint8_t hdr[TD_HDR_LEN] = {0};
	struct iovec iov[2];
	uint8_t *data = malloc(len ? len : 1);
	int r;

	if (!data)
		die("out of memory");
	memset(data, fill, len);
	/* An Ethernet frame to the device's own MAC (passes any receive filter). */
	if (len >= 14) {
		memcpy(data, vnet_dev_mac(td->dev), 6);
		memcpy(data + 6, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x99}, 6);
		data[12] = 0x88; /* local experimental ethertype: no flow hashing */
		data[13] = 0xb5;
	}
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = data;
	iov[1].iov_len = len;
	r = vnet_dev_receive(td->dev, iov, 2);
	vnet_dev_rx_flush(td->dev); /* the event loop flushes after every event */
	free(data);
	return r;
}

/* td_ctrl() - send a command through the control queue (Linux layout: ack, then result). */
int td_ctrl(struct test_dev *td, const uint8_t *in, size_t in_len, uint8_t *out, uint32_t out_len,
	    uint32_t *used_len)
{
	struct fake_vq *q = &td->vq[td->ctrl_q];
	struct fake_buf b[3];
	unsigned n = 0;
	uint64_t ack_gpa, out_gpa = 0;
	uint8_t *ack;
	uint32_t id, len;
	int head;

	b[n].gpa = fake_mem_alloc(&td->mem, in_len ? in_len : 1, 8);
	b[n].len = (uint32_t)in_len;
	b[n++].write = false;
	memcpy(fake_mem_host(&td->mem, b[0].gpa), in, in_len);
	/* Writable part as Linux's virtnet_send_command_reply() adds it: ack, then the result. */
	ack_gpa = fake_mem_alloc(&td->mem, 1, 1);
	ack = fake_mem_host(&td->mem, ack_gpa);
	*ack = 0xee; /* neither OK nor ERR: shows whether the device wrote it */
	b[n].gpa = ack_gpa;
	b[n].len = 1;
	b[n++].write = true;
	if (out_len) {
		out_gpa = fake_mem_alloc(&td->mem, out_len, 8);
		memset(fake_mem_host(&td->mem, out_gpa), 0xee, out_len);
		b[n].gpa = out_gpa;
		b[n].len = out_len;
		b[n++].write = true;
	}
	head = fake_vq_add_chain(q, b, n);
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, td->ctrl_q);
	if (!fake_vq_get_used(q, &id, &len) || id != (uint32_t)head)
		return -1;
	if (used_len)
		*used_len = len;
	if (out_len && out)
		memcpy(out, fake_mem_host(&td->mem, out_gpa), out_len);
	return *ack;
}

/* td_exec() - vnet_dev_ctrl_execute() without output. */
uint8_t td_exec(struct test_dev *td, const uint8_t *in, size_t in_len)
{
	uint8_t out[16];
	size_t written = 0;

	return vnet_dev_ctrl_execute(td->dev, in, in_len, out, 0, &written);
}

/* td_coal_cmd() - TX_SET/RX_SET {max_packets, max_usecs} via vnet_dev_ctrl_execute(). */
uint8_t td_coal_cmd(struct test_dev *td, uint8_t cmd, uint32_t max_packets, uint32_t max_usecs)
{
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, cmd};

	put_le32(in + 2, max_packets);
	put_le32(in + 6, max_usecs);
	return td_exec(td, in, sizeof(in));
}

/* td_vq_set() - VQ_SET for one virtqueue via vnet_dev_ctrl_execute(). */
uint8_t td_vq_set(struct test_dev *td, uint16_t vq_index, uint32_t max_packets, uint32_t max_usecs)
{
	uint8_t in[14] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET};

	put_le16(in + 2, vq_index);
	put_le16(in + 4, 0);
	put_le32(in + 6, max_packets);
	put_le32(in + 10, max_usecs);
	return td_exec(td, in, sizeof(in));
}

/* td_cleanup() - cmocka teardown: free every test_dev a failed test left behind. */
int td_cleanup(void **state)
{
	(void)state;
	while (live_devs)
		td_free(live_devs);
	return 0;
}
