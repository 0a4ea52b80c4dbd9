/* SPDX-License-Identifier: MIT */
/* fake_driver.h - in-test virtio driver on fake guest memory, and a device harness. */
#ifndef VNETD_TEST_FAKE_DRIVER_H
#define VNETD_TEST_FAKE_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/guest_mem.h"
#include "lib/virtio_net_defs.h"
#include "virtq/virtq.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: the live queues (vnet_dev_queue()) */

/*
 * Guest memory: one calloc'd buffer at GPA `gpa` (UVA = gpa + FAKE_UVA_OFFSET). With two regions
 * the buffer is split in half. FAKE_MEM_GAP places the second half FAKE_REGION_GAP bytes further
 * up in both address spaces, so nothing may cross the middle. FAKE_MEM_ADJACENT keeps the halves
 * adjacent in GPA and UVA but not in host memory (FAKE_HOST_GAP bytes of 0xdb between them), so
 * a buffer may straddle the middle and only a device that splits it reads it right. Rings and
 * buffers come from a bump allocator that never straddles. The rings are written in host order:
 * these tests assume a little-endian host.
 */
#define FAKE_UVA_OFFSET 0x7f0000000000ull
#define FAKE_REGION_GAP 0x100000ull
#define FAKE_HOST_GAP 4096u

enum fake_mem_layout { FAKE_MEM_ONE, FAKE_MEM_GAP, FAKE_MEM_ADJACENT };

struct fake_mem {
	uint8_t *buf;
	uint64_t gpa; /* GPA of buf[0] */
	uint64_t size;
	uint64_t next; /* bump allocator: offset into the guest's `size` bytes */
	bool two_regions;
	uint64_t gpa_gap, host_gap; /* where the second half starts: + size / 2 + gap */
	struct guest_mem gm;
};

/* fake_mem_init() - `size` zeroed bytes at `gpa`: one region, or two_regions: FAKE_MEM_GAP. */
void fake_mem_init(struct fake_mem *m, uint64_t gpa, uint64_t size, bool two_regions);

/* fake_mem_init_layout() - like fake_mem_init() with any layout. */
void fake_mem_init_layout(struct fake_mem *m, uint64_t gpa, uint64_t size,
			  enum fake_mem_layout layout);

/* fake_mem_alloc_straddling() - FAKE_MEM_ADJACENT: `size` bytes, `before` of them in region 1. */
uint64_t fake_mem_alloc_straddling(struct fake_mem *m, uint64_t size, uint64_t before);

/* fake_mem_free() - release the buffer. */
void fake_mem_free(struct fake_mem *m);

/* fake_mem_alloc() - zeroed guest memory; returns its GPA (aborts when out of memory). */
uint64_t fake_mem_alloc(struct fake_mem *m, uint64_t size, uint64_t align);

/* fake_mem_host() - host pointer for a GPA inside the fake memory (aborts otherwise). */
void *fake_mem_host(const struct fake_mem *m, uint64_t gpa);

/* fake_mem_end_gpa() - first GPA after the last region. */
uint64_t fake_mem_end_gpa(const struct fake_mem *m);

/* One buffer of a chain as the driver describes it. */
struct fake_buf {
	uint64_t gpa;
	uint32_t len;
	bool write; /* device-writable */
};

#define FAKE_MAX_CHAIN 64

/* The driver side of one split virtqueue. */
struct fake_vq {
	struct fake_mem *mem;
	uint16_t num;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx; /* shadow of avail->idx (published by fake_vq_publish) */
	uint16_t last_used; /* next used entry to read */
	uint16_t nfree;
	uint16_t *free_stack; /* free descriptor indexes */
	uint8_t *head_ndesc;  /* per head: descriptors the chain took */
	uint16_t *head_descs; /* per head: FAKE_MAX_CHAIN descriptor indexes */
};

/* fake_vq_init() - allocate rings for a queue of `num` entries in `m`. */
void fake_vq_init(struct fake_vq *q, struct fake_mem *m, uint16_t num);

/* fake_vq_destroy() - free the driver's bookkeeping (ring memory stays in fake_mem). */
void fake_vq_destroy(struct fake_vq *q);

/* fake_vq_setup_virtqueue() - copy num and ring GPAs into a device virtqueue. */
void fake_vq_setup_virtqueue(const struct fake_vq *q, struct virtqueue *vq);

/* fake_vq_add_chain() - direct chain of n buffers, put in the avail ring; returns the head. */
int fake_vq_add_chain(struct fake_vq *q, const struct fake_buf *bufs, unsigned n);

/* fake_vq_add_indirect() - one INDIRECT descriptor to a table of n buffers; returns the head. */
int fake_vq_add_indirect(struct fake_vq *q, const struct fake_buf *bufs, unsigned n);

/* fake_vq_add_head() - put an arbitrary head index in the avail ring (hostile tests). */
void fake_vq_add_head(struct fake_vq *q, uint16_t head);

/* fake_vq_publish() - store the shadow avail index into avail->idx. */
void fake_vq_publish(struct fake_vq *q);

/* fake_vq_used_idx() - the device's published used index. */
uint16_t fake_vq_used_idx(const struct fake_vq *q);

/* fake_vq_get_used() - next used element, freeing its descriptors; false if none. */
bool fake_vq_get_used(struct fake_vq *q, uint32_t *id, uint32_t *len);

/* fake_vq_set_no_interrupt() - set or clear VRING_AVAIL_F_NO_INTERRUPT. */
void fake_vq_set_no_interrupt(struct fake_vq *q, bool on);

/* fake_vq_set_used_event() - EVENT_IDX: notify me when the used index passes `v`. */
void fake_vq_set_used_event(struct fake_vq *q, uint16_t v);

/* fake_vq_avail_event() - EVENT_IDX: the device's avail_event field. */
uint16_t fake_vq_avail_event(const struct fake_vq *q);

/* ---- Device harness: fake clock, notification/timer recorder, recording backend ---- */

#define TD_MAX_PACKETS 256

struct td_packet {
	uint8_t *data;
	size_t len;
};

struct test_dev;

/* The test's packet backend (backend.h leaves the struct to each backend). */
struct vnet_backend {
	struct test_dev *td;
};

struct test_dev {
	struct test_dev *next_live; /* every td not yet freed, for td_cleanup() */
	struct fake_mem mem;
	struct vnet_dev *dev;
	struct vnet_backend be;
	uint64_t features; /* negotiated */
	unsigned nqueues;  /* queues set up (including the control queue when negotiated) */
	unsigned ctrl_q;   /* control queue index, or ~0u */
	struct fake_vq vq[VNET_MAX_QUEUES];
	/* Environment. */
	uint64_t now;
	uint64_t notifies[VNET_MAX_QUEUES];
	uint64_t deadline[VNET_MAX_QUEUES]; /* armed timer, 0 = none */
	unsigned arm_calls[VNET_MAX_QUEUES];
	bool scheduled[VNET_MAX_QUEUES];	  /* env->schedule() called, not run yet */
	unsigned schedule_calls[VNET_MAX_QUEUES];
	unsigned queue_errors[VNET_MAX_QUEUES]; /* env->queue_error() calls */
	/* Backend. */
	struct td_packet pkts[TD_MAX_PACKETS];
	unsigned npkts;
	unsigned tx_attempts;
	unsigned tx_eagain; /* the next tx_eagain transmit() calls return -EAGAIN */
	unsigned tx_cost;   /* transmit() returns this (further deliveries of each packet) */
	int (*tx_hook)(struct test_dev *td); /* optional: runs inside transmit() */
	unsigned rx_resume_calls;
	unsigned set_offloads_calls;
	uint64_t offloads;
};

/* td_backend_ops - the recording backend every test_dev is attached to. */
extern const struct vnet_backend_ops td_backend_ops;

/* Default feature set the harness asks for (intersected with what the device offers). */
#define TD_BASE_FEATURES                                                                           \
	(BIT_ULL(VIRTIO_F_VERSION_1) | BIT_ULL(VIRTIO_NET_F_MAC) | BIT_ULL(VIRTIO_NET_F_STATUS) |  \
	 BIT_ULL(VIRTIO_NET_F_CTRL_VQ) | BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |                         \
	 BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL) | BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC))

/* td_mem_size - bytes of fake guest memory each new test_dev gets (fuzzers use less). */
extern size_t td_mem_size;

/* td_default_params() - a 1..pairs device with every feature allowed. */
void td_default_params(struct vnet_dev_params *p, uint16_t pairs);

/* td_create() - device + memory + backend, features negotiated, no queues started. */
struct test_dev *td_create(const struct vnet_dev_params *params, uint64_t want_features);

/* td_set_mem_layout() - new, empty guest memory of `layout`; call before td_start_queues(). */
void td_set_mem_layout(struct test_dev *td, enum fake_mem_layout layout);

/* td_recycle() - reset a test_dev for reuse with newly negotiated features. */
void td_recycle(struct test_dev *td, uint64_t want_features);

/* td_start_queues() - set up, start and enable every queue (control queue if negotiated). */
void td_start_queues(struct test_dev *td, uint16_t qsize);

/* td_new() - td_create() with default params and `pairs`, then td_start_queues(256). */
struct test_dev *td_new(uint16_t pairs, uint64_t want_features);

/* td_free() - destroy device, memory and recorded packets. */
void td_free(struct test_dev *td);

/* td_cleanup() - cmocka teardown: free every test_dev a failed test left behind. */
int td_cleanup(void **state);

/* td_run_scheduled() - run every queue the device scheduled (one round); returns how many. */
unsigned td_run_scheduled(struct test_dev *td);

/* td_advance() - move the fake clock forward, firing expired timers like a timerfd would. */
void td_advance(struct test_dev *td, uint64_t ns);

/* td_tx() - the guest sends n packets of `len` data bytes (12-byte header + data) and kicks. */
void td_tx(struct test_dev *td, unsigned qidx, unsigned n, uint32_t len);

/* td_tx_queue() - queue one packet (data filled with `fill`), no publish/kick; returns its head. */
int td_tx_queue(struct test_dev *td, unsigned qidx, uint32_t len, uint8_t fill);

/* td_post_rx() - post n writable buffers of `size` bytes (no kick); returns the first GPA. */
uint64_t td_post_rx(struct test_dev *td, unsigned qidx, unsigned n, uint32_t size);

/*
 * td_receive() - the backend delivers a frame of `len` bytes to the device's MAC (payload after
 * the 14-byte Ethernet header filled with `fill`), then flushes like the event loop does.
 */
int td_receive(struct test_dev *td, uint32_t len, uint8_t fill);

/*
 * td_ctrl() - send a command through the control queue, laid out like Linux does it: readable
 * command, writable ack byte, then out_len writable result bytes (0xee-filled) when out_len > 0.
 * Returns the ack byte or -1 (no used element).
 */
int td_ctrl(struct test_dev *td, const uint8_t *in, size_t in_len, uint8_t *out, uint32_t out_len,
	    uint32_t *used_len);

/* td_exec() - vnet_dev_ctrl_execute() without output. */
uint8_t td_exec(struct test_dev *td, const uint8_t *in, size_t in_len);

/* td_coal_cmd() - TX_SET/RX_SET {max_packets, max_usecs} via vnet_dev_ctrl_execute(). */
uint8_t td_coal_cmd(struct test_dev *td, uint8_t cmd, uint32_t max_packets, uint32_t max_usecs);

/* td_vq_set() - VQ_SET for one virtqueue via vnet_dev_ctrl_execute(). */
uint8_t td_vq_set(struct test_dev *td, uint16_t vq_index, uint32_t max_packets, uint32_t max_usecs);

/* td_clear_packets() - forget recorded backend packets. */
void td_clear_packets(struct test_dev *td);

/* Little-endian helpers for command payloads. */
void put_le16(uint8_t *p, uint16_t v);
void put_le32(uint8_t *p, uint32_t v);
void put_le64(uint8_t *p, uint64_t v);
uint16_t get_le16(const uint8_t *p);
uint32_t get_le32(const uint8_t *p);

#endif
