/* SPDX-License-Identifier: MIT */
/* fuzz_datapath.h - shared state of fuzz_datapath: the driver's view, the backend, ring helpers. */
#ifndef VNETD_FUZZ_DATAPATH_H
#define VNETD_FUZZ_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "fake_driver.h"
#include "dev/vnet_dev_core.h"

#define MEM_SIZE (512u << 10)
#define MAX_OPS 64
#define TAB_ENTRIES 1024u
#define PKT_MAX (VNET_HDR_LEN + VNET_MAX_FRAME + 64)
#define TOUCH_MAX (1u << 20) /* reserved bytes the backend writes in full; beyond: ends only */


/* The driver's (and checker's) view of one queue. */
struct drv_q {
	bool rings;         /* the driver set up rings for it */
	bool live;          /* started: its used ring is followed */
	bool fresh;         /* (re)started or reset in this op: no before/after checks */
	uint16_t start;     /* avail index it started at */
	uint16_t hi16;      /* start + hi */
	uint32_t hi;        /* avail positions the driver made available since the start */
	uint16_t used_seen; /* used->idx at the last check */
	uint32_t used;      /* used entries published since the start */
	uint16_t cursor;    /* next descriptor for well-formed chains */
};

/* Device state before an op. */
struct snap {
	bool started, broken, enabled;
	uint16_t pushed; /* vq.used_idx: pushed, published or not */
	uint64_t notifies, errors;
};

struct buf { uint64_t gpa; uint32_t len; bool write; };

struct fz_state {
	struct test_dev *td;
	struct vnet_dev *dev;
	unsigned nq, ctrl_q;
	uint16_t num;
	uint64_t want;
	uint64_t r1_lo, r1_hi, r2_lo, r2_hi, tab, tab_end, data_lo, cur1, cur2;
	uint16_t tcur;
	bool adjacent;
	unsigned tx_fail; /* the next tx_fail transmits fail with -EIO */
	bool rx_pending;  /* the last packet waited for buffers: rx_resume() delivers it */
	bool rx_more, detached; /* rx_resume() says packets are left; no backend attached */
	struct iovec rx_iov[3];
	unsigned rx_iovcnt;
	unsigned last_op; /* the op running (or just run) */
	struct drv_q q[VNET_MAX_QUEUES];
};

/* g - everything the fuzzer knows about the device and its driver (fuzz_datapath.c). */
extern struct fz_state g;

/* Packet buffers shared by the ops and the backend. */
extern uint8_t pkt[PKT_MAX], rxpkt[PKT_MAX], scratch[PKT_MAX];
extern volatile uint8_t sink;

/* fail() - report a violated invariant and abort (libFuzzer saves the input). */
static inline void fail(const char *what)
{
	fprintf(stderr, "fuzz_datapath: invariant violated: %s\n", what);
	abort();
}

#define CHECK(cond, what) ((cond) ? (void)0 : fail(what))

struct in { const uint8_t *p; size_t n, off; };

static inline uint8_t u8(struct in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

static inline uint16_t u16(struct in *in)
{
	uint16_t lo = u8(in);

	return (uint16_t)(lo | u8(in) << 8);
}

static inline bool has(unsigned bit)
{
	return g.td->features & BIT_ULL(bit);
}

static inline unsigned hdr_len(void)
{
	return has(VIRTIO_F_VERSION_1) || has(VIRTIO_NET_F_MRG_RXBUF) ? VNET_HDR_LEN : VNET_HDR_LEN - 2;
}

/* The fuzzer's backend: checks every TX packet the device hands it (fuzz_datapath_kit.c). */
extern const struct vnet_backend_ops fz_backend_ops;

/* Guest memory, descriptors and rings as the (hostile) driver writes them (fuzz_datapath_kit.c). */
void gwrite(uint64_t gpa, const void *src, size_t len);
uint64_t dalloc(uint64_t len, unsigned where);
uint64_t data_addr(unsigned mode, uint16_t a);
uint64_t table_addr(unsigned mode, uint16_t a, uint64_t *len);
void desc_make(struct in *in, void *out);
void put_desc(void *slot, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next);
void avail_seen(unsigned i, uint16_t v);
void set_avail_idx(unsigned i, uint16_t v);
void add_chain(unsigned i, const struct buf *b, unsigned n, bool indirect, uint16_t slot);
void post(unsigned i, const struct buf *b, unsigned n, bool indirect, bool kick);
void build_frame(uint8_t *p, size_t len, uint8_t sel, uint8_t fill);

#endif
