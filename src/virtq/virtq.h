/* SPDX-License-Identifier: MIT */
/* virtq.h - the virtqueue API (split or packed rings): start, pop (inline fast path), push, publish. */
#ifndef VNETD_VIRTQ_H
#define VNETD_VIRTQ_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "mem/mem.h"

#define VQ_MAX_SIZE 32768u       /* largest queue size (split: a power of 2; packed: any) */
#define VQ_MAX_CHAIN 1024u       /* descriptors one chain may hold, indirect ones included */

#define VRING_DESC_F_NEXT 1
#define VRING_DESC_F_WRITE 2
#define VRING_DESC_F_INDIRECT 4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY 1

/* Ring layouts as the guest writes them (little-endian). */
struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then le16 used_event */
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[]; /* num entries, then le16 avail_event */
};

/*
 * A walked descriptor chain: readable iovecs first, then writable ones. A buffer straddling
 * adjacent guest memory regions takes one iovec per region; no iovec is empty. At most
 * VQ_MAX_CHAIN iovecs in all (more is VQ_WALK_TOO_MANY_IOV).
 */
struct vq_chain {
	uint16_t head;
	unsigned nread;      /* iov[0 .. nread) are device-readable */
	unsigned nwrite;     /* iov[nread .. nread + nwrite) are device-writable */
	uint64_t read_len;   /* total bytes in readable iovecs */
	uint64_t write_len;  /* total bytes in writable iovecs */
	unsigned ndesc;      /* descriptors walked (indirect ones included): the chain's cost */
	struct iovec iov[VQ_MAX_CHAIN];
};

/* Why a chain walk failed (for the log line and for tests). */
enum vq_walk_error {
	VQ_WALK_OK = 0,
	VQ_WALK_BAD_HEAD,         /* head >= queue size */
	VQ_WALK_BAD_NEXT,         /* next >= table size */
	VQ_WALK_TOO_LONG,         /* more than VQ_MAX_CHAIN / table size descriptors: loop */
	VQ_WALK_BAD_ADDR,         /* buffer not wholly inside guest memory */
	VQ_WALK_INDIRECT_DISALLOWED, /* INDIRECT without VIRTIO_RING_F_INDIRECT_DESC */
	VQ_WALK_BAD_INDIRECT,     /* len 0 / not multiple of 16 / table outside memory */
	VQ_WALK_NESTED_INDIRECT,  /* INDIRECT inside an indirect table, or with NEXT */
	VQ_WALK_READ_AFTER_WRITE, /* readable descriptor after a writable one */
	VQ_WALK_TOO_BIG,          /* total length over 4 GiB */
	VQ_WALK_TOO_MANY_IOV,     /* buffers split over regions need more than VQ_MAX_CHAIN iovecs */
	/* Packed rings and IN_ORDER only. */
	VQ_WALK_NOT_AVAIL,        /* packed: a list's later descriptor not made available */
	VQ_WALK_BAD_ID,           /* packed: buffer id >= queue size */
	VQ_WALK_ID_IN_FLIGHT,     /* packed: buffer id reused while the device holds it */
	VQ_WALK_IN_ORDER,         /* IN_ORDER: descriptors not used in ring order */
	VQ_WALK_TAKEN_BACK,       /* packed: a descriptor seen available is not any more */
	VQ_WALK_OVERRUN,          /* packed: more descriptors in flight than the ring holds */
};

/* vq_walk_error_str() - short text for a walk error. */
const char *vq_walk_error_str(enum vq_walk_error err);

/*
 * vq_walk_chain() - the one descriptor-chain walker. Turns the chain starting at `head` in the
 * descriptor table `desc` (num entries, host pointer already validated) into iovecs (at most
 * VQ_MAX_CHAIN in all). Each descriptor is copied to a local before it is checked. Pure:
 * touches no queue state.
 */
enum vq_walk_error vq_walk_chain(const struct guest_mem *mem, const struct vring_desc *desc,
				 unsigned num, unsigned head, bool indirect_ok, struct vq_chain *out);

/*
 * Packed-ring state (VIRTIO_F_RING_PACKED). Positions are a slot and that slot's wrap counter;
 * the chain counters of struct virtqueue (last_avail, used_idx, ...) count buffers on both
 * layouts, so notify.c and the device see one model. vq_packed.c owns all of it but the
 * inline fast-path pop below (vq_packed_pop_one()), kept here to inline into the device's loops.
 */
/* Packed descriptor and event suppression layouts (little-endian, spec "Packed Virtqueues"). */
struct pvirtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};

#define VRING_PACKED_DESC_F_AVAIL (1u << 7) /* a mask here: Linux uapi defines the shift */
#define VRING_PACKED_DESC_F_USED (1u << 15)
#define VRING_PACKED_EVENT_F_ENABLE 0
#define VRING_PACKED_EVENT_F_DISABLE 1
#define VRING_PACKED_EVENT_F_DESC 2

/*
 * One popped buffer of a packed ring: its id and how many slots its list takes. Where it starts
 * is not kept: buffers complete in the order popped, so buffer used_published starts at the
 * used position and each later one nslots further on.
 */
struct vq_packed_rec {
	uint16_t id;
	uint16_t nslots;
};
_Static_assert(sizeof(struct vq_packed_rec) == 4, "vq_packed_pop_one() stores it as 32 bits");

struct vq_packed_state {
	uint16_t next_slot;    /* where the buffer last_avail starts */
	uint16_t far_slot;     /* where the buffer shadow_avail starts (the farthest looked at): */
			       /* valid only while buffers are given back (last_avail != shadow_avail) */
	uint16_t used_slot;    /* where the next used descriptor goes (buffer used_published) */
	uint16_t next_want;    /* AVAIL/USED bits of an available descriptor at next_slot */
	bool next_wrap, far_wrap, used_wrap;
	uint32_t used_lin, sig_lin; /* free-running slot counts (EVENT_IDX) */
	uint32_t room;         /* slots not in flight: num - slots popped and not published */
	uint16_t max_nslots;   /* the most slots one popped list took since start (>= 1) */
	unsigned cap;          /* power of 2 >= num: rec[] and the shadow used ring */
	/* rec, the shadow used ring and in_flight lie in the ring's private block (vq->priv): */
	/* set by vq_packed_start(), NULL from vq_stop() on. */
	struct vq_packed_rec *rec; /* per popped list, at the slot it starts at (and, of several */
				   /* slots, at its last one: vq_packed_unpop() walks back) */
	uint8_t *in_flight;    /* per buffer id (all 65536: VQ_PACKED_IDS): popped and not yet */
			       /* published, */
			       /* or >= num (so one test covers the id's range too) */
	uint64_t desc_gpa;     /* the descriptor ring's GPA (dirty log); 0: unknown */
	uint16_t *dev_event;   /* Device Event Suppression (we write), NULL for split */
	const uint32_t *drv_event; /* Driver Event Suppression, read as one 32-bit snapshot */
};

/*
 * vq->ready: 0 (not started or broken), or the layout vq_pop()'s inline fast path is for;
 * VQ_FAST_PACKED_BACK: a packed queue with buffers given back (vq_unpop()), which take the
 * slow path until they are popped again (VQ_FAST_PACKED means none is).
 */
enum { VQ_FAST_NONE, VQ_FAST_SPLIT, VQ_FAST_PACKED, VQ_FAST_SPLIT_IN_ORDER, VQ_FAST_PACKED_BACK };

/*
 * What a ring runs with: its size and layout as vq_start() found them in the transport's fields
 * of struct virtqueue, fixed until the ring stops (and kept after, as what the last run was).
 * Every function of the virtqueue reads these, never the transport's fields: a field rewritten
 * while the ring runs (a SET_FEATURES or SET_VRING_NUM the transport should have refused)
 * changes nothing until the next vq_start().
 */
struct vq_run {
	uint16_t num;
	bool packed, in_order, batch_used, reads_only, event_idx, indirect;
};

/* One virtqueue as the device sees it; split unless `packed`. */
struct virtqueue {
	unsigned index;
	/* Set by the transport before start: the next vq_start() takes them (struct vq_run). */
	uint16_t num;
	uint64_t desc_addr, avail_addr, used_addr; /* packed: descriptors, Driver, Device Area */
	enum guest_addr_space ring_space;
	bool event_idx;       /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect;        /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	bool packed;          /* VIRTIO_F_RING_PACKED negotiated */
	bool in_order;        /* VIRTIO_F_IN_ORDER negotiated */
	bool batch_used;      /* IN_ORDER and lengths do not matter (TX): one used entry a batch */
	bool reads_only;      /* the device only reads the buffers (TX): every used length is 0 */
	bool base_set;        /* base holds a SET_VRING_BASE value (or the last stop's) */
	bool base_packed;     /* ... for a packed ring (a base of the other layout is not used) */
	uint32_t base;        /* vring base as vhost-user encodes it (packed: both positions) */
	/* State. */
	bool started;         /* rings translated and usable */
	bool broken;          /* guest broke the ring: stopped until reset */
	uint8_t ready;        /* started, not broken: which inline fast path vq_pop() takes */
	struct vq_run run;    /* size and layout of this run (of the last, when stopped) */
	uint16_t mask;        /* vq_push()'s index mask: num - 1, or the packed shadow's cap - 1 */
	uint32_t io_next;     /* split IN_ORDER: the head the next chain must start at (always */
			      /* below num: vq_pop()'s fast path relies on it), or VQ_IO_ANY */
			      /* (0x10000): unknown (after a start, or a given-back head no */
			      /* longer valid) */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;  /* where vq_push() writes: the used ring, or a private shadow */
	struct vring_used *uring; /* split: the guest's used ring (== used unless batch_used) */
	struct vq_packed_state pk;
	/*
	 * The ring's private memory: what its layout allocated at vq_start() (packed: records,
	 * shadow used ring, in_flight; split with batch_used: the shadow), freed at vq_stop(),
	 * vq_reset() and vq_free(). Non-NULL exactly while the ring is started: nothing of one run
	 * is reused by the next, whatever its layout.
	 */
	void *priv;
	uint16_t last_avail;  /* next avail ring entry to consume */
	uint16_t shadow_avail; /* driver's avail index as last read (vq_pop reads it once per batch); */
			       /* packed: not kept while ready is VQ_FAST_PACKED (= last_avail then) */
	uint16_t used_idx;    /* next used ring entry to write (published or not) */
	uint16_t used_published; /* used index the driver can see (last vq_publish()) */
	/*
	 * Descriptors the pops read beyond one a chain, not yet read again by a dirty-log walk
	 * (at most VQ_LOG_CREDIT_MAX): the logging walks of a publication read no more than the
	 * pops of its chains did, whatever the driver rewrote in between (vq_ring_internal.h).
	 */
	uint32_t log_credit;
	uint16_t signalled_used; /* used index at the last notification decision */
	bool signalled_valid;
	uint32_t unsignalled; /* used entries published since the last decision (wrap guard) */
	const struct guest_mem *mem;
	/*
	 * Dirty logging (live migration): NULL when off, and then the only cost is one branch per
	 * published batch. With VHOST_VRING_F_LOG the used ring's writes are logged at
	 * log_used_gpa (the frontend's log_guest_addr for this ring).
	 */
	struct dirty_log *log;
	uint64_t log_used_gpa;
	bool log_used;
	/* Owner's hook, called once when the queue breaks (NULL: none); survives vq_reset(). */
	void (*on_broken)(void *ctx, unsigned index);
	void *owner_ctx;
};

/* ---- Hot-path helpers, inline (the walker's one-descriptor case, prefetch, push) ---------- */

/* Guest memory is shared with a running driver: every ring field is read exactly once. */
#define VQ_READ_ONCE_U16(p) le16toh(__atomic_load_n((p), __ATOMIC_RELAXED))
#define VQ_READ_ONCE_U32(p) le32toh(__atomic_load_n((p), __ATOMIC_RELAXED))
#define VQ_WRITE_ONCE_U16(p, v) __atomic_store_n((p), htole16(v), __ATOMIC_RELAXED)
#define VQ_WRITE_ONCE_U32(p, v) __atomic_store_n((p), htole32(v), __ATOMIC_RELAXED)

/*
 * vq_desc_read() - copy one descriptor out of guest memory; only the copy is checked and used.
 * memcpy: an indirect table may sit at any guest address, aligned or not.
 */
static inline struct vring_desc vq_desc_read(const struct vring_desc *table, unsigned idx)
{
	struct vring_desc d;

	memcpy(&d, (const uint8_t *)table + (size_t)idx * sizeof(d), sizeof(d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the copy is taken once, here */
	d.addr = le64toh(d.addr);
	d.len = le32toh(d.len);
	d.flags = le16toh(d.flags);
	d.next = le16toh(d.next);
	return d;
}

/*
 * vq_chain_set_one() - out becomes a chain of one buffer, len bytes at host, device-writable if
 * w (the fast paths of both layouts; out->head is the caller's).
 */
static inline __attribute__((always_inline)) void vq_chain_set_one(struct vq_chain *out,
								   uint8_t *host, uint32_t len,
								   bool w)
{
	out->iov[0].iov_base = host;
	out->iov[0].iov_len = len;
	out->nread = !w;
	out->nwrite = w;
	out->read_len = w ? 0 : len;
	out->write_len = w ? len : 0;
	out->ndesc = 1;
}

/*
 * vq_chain_one() - the chain walker's fast path: a head descriptor d that is the whole chain
 * (no NEXT, not INDIRECT, not empty) inside the hot memory region becomes out's one iovec
 * (out->head is the caller's). False: anything else, for vq_walk_chain()'s general loop.
 */
static inline bool vq_chain_one(const struct guest_mem *mem, const struct vring_desc *d,
				struct vq_chain *out)
{
	const struct guest_mem_region *r = &mem->hot; /* size 0 when there is no memory */
	uint64_t off = d->addr - r->gpa;
	bool w = d->flags & VRING_DESC_F_WRITE;

	if ((d->flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)) || !d->len ||
	    off >= r->size || d->len > r->size - off)
		return false;
	vq_chain_set_one(out, r->host + off, d->len, w);
	return true;
}

/*
 * Packed rings: how many slots ahead of the list just popped a pop prefetches the buffer. 4 hides
 * the fetch of a cold guest buffer behind the copies before it (A/B runs at 64 and 1500 B: the
 * next slot was faster than none, 2 faster than 1, 4 than 2; 8 no better). A split pop
 * prefetches the next announced chain only: looking further reads avail entries the driver is
 * writing, and was slower at 64 B.
 */
#define VQ_PREFETCH_AHEAD 4u

/*
 * vq_prefetch_buf() - hint the CPU to fetch the 128 bytes at p (a guest buffer in the hot region,
 * checked by the caller): they arrive while the current packet is copied. `write`: the device
 * will write there (RX): fetched ready to be written (PREFETCHW, a no-op where the CPU lacks it).
 */
static inline __attribute__((always_inline)) void vq_prefetch_buf(const uint8_t *p, const bool write)
{
	if (write) {
#if defined(__x86_64__)
		__asm__ volatile("prefetchw %0" : : "m"(*(const volatile uint8_t *)p));
		__asm__ volatile("prefetchw %0" : : "m"(*(const volatile uint8_t *)(p + 64)));
#else
		__builtin_prefetch(p, 1); /* constant arguments: clang insists */
		__builtin_prefetch(p + 64, 1);
#endif
	} else {
		__builtin_prefetch(p, 0);
		__builtin_prefetch(p + 64, 0);
	}
}

/*
 * vq_prefetch_desc() - vq_prefetch_buf() of the first 128 bytes descriptor head (below num)
 * points at, if it starts inside the hot region. Trusts nothing it reads: a wrong guess costs a
 * cache miss, and prefetching never faults (a buffer that starts in the region's last 127 bytes
 * has its second line prefetched from beyond it: one compare, not two, per pop).
 */
static inline __attribute__((always_inline)) void vq_prefetch_desc(const struct virtqueue *vq,
								   unsigned head, const bool write)
{
	const struct guest_mem_region *r = &vq->mem->hot; /* size 0: nothing to prefetch */
	uint64_t off;

	off = le64toh(__atomic_load_n(&vq->desc[head].addr, __ATOMIC_RELAXED)) - r->gpa;
	if (off >= r->size)
		return;
	vq_prefetch_buf(r->host + off, write);
}

/* vq_prefetch_head() - vq_prefetch_desc() for a head read from the ring (checked here). */
static inline __attribute__((always_inline)) void vq_prefetch_head(const struct virtqueue *vq,
								   unsigned head, const bool write)
{
	if (head < vq->run.num)
		vq_prefetch_desc(vq, head, write);
}

/*
 * vq_start() - take the size and layout the transport set (vq->run: fixed for this run),
 * allocate the ring's private memory, translate and check ring addresses; 0, or -1 (logged).
 */
int vq_start(struct virtqueue *vq, const struct guest_mem *mem);

/* vq_stop() - forget ring pointers, free the private memory; keeps the position as a base. */
void vq_stop(struct virtqueue *vq);

/* vq_mark_broken() - stop processing this queue after a guest error (NEEDS_RESET); tells on_broken. */
void vq_mark_broken(struct virtqueue *vq, const char *what);

/* vq_pop_slow() - vq_pop() for every case its inline fast path does not take. */
int vq_pop_slow(struct virtqueue *vq, struct vq_chain *chain);

/*
 * vq_packed_pop_one() - the packed walker's fast path: the list at the next slot is one
 * available descriptor (no NEXT, not INDIRECT, not empty) inside the hot region, with an id
 * below num and not in flight (one test: ids >= num are marked in flight), and the ring has
 * room: it becomes chain's one iovec and its record. False: anything else (nothing taken), for
 * vq_packed_pop()'s full checks. Only for a queue whose ready is VQ_FAST_PACKED (no buffer
 * given back).
 */
static inline __attribute__((always_inline)) bool vq_packed_pop_one(struct virtqueue *vq,
								    struct vq_chain *chain,
								    const bool write)
{
	struct vq_packed_state *pk = &vq->pk;
	const struct pvirtq_desc *p = (const struct pvirtq_desc *)(const void *)vq->desc +
				      pk->next_slot;
	const struct guest_mem_region *r = &vq->mem->hot;
	uint16_t flags = le16toh(__atomic_load_n(&p->flags, __ATOMIC_ACQUIRE));
	struct pvirtq_desc d;
	uint64_t off;
	bool w;

	/* Available (AVAIL == wrap != USED), and neither NEXT nor INDIRECT, in one compare. */
	if ((flags & (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED | VRING_DESC_F_NEXT |
		      VRING_DESC_F_INDIRECT)) != pk->next_want)
		return false;
	memcpy(&d, p, sizeof(d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the copy is taken once, here */
	d.addr = le64toh(d.addr);
	d.len = le32toh(d.len);
	d.id = le16toh(d.id);
	off = d.addr - r->gpa;
	if (!d.len || off >= r->size || d.len > r->size - off || pk->in_flight[d.id] ||
	    !pk->room)
		return false;
	w = flags & VRING_DESC_F_WRITE;
	vq_chain_set_one(chain, r->host + off, d.len, w);
	chain->head = d.id;
	pk->in_flight[d.id] = 1;
	{
		/* The record {id, nslots 1} as one 32-bit store (compilers store the struct's two
		 * halves one by one). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		const uint32_t rec = (uint32_t)d.id | 1u << 16;
#else
		const uint32_t rec = (uint32_t)d.id << 16 | 1u;
#endif
		memcpy(&pk->rec[pk->next_slot], &rec, sizeof(rec));
	}
	if (++pk->next_slot >= vq->run.num) {
		pk->next_slot = 0;
		pk->next_wrap = !pk->next_wrap;
		pk->next_want ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
	}
	pk->room--;
	vq->last_avail++; /* shadow_avail is last_avail while ready is VQ_FAST_PACKED */
	{
		/* The buffer VQ_PREFETCH_AHEAD lists on (if one slot each), available or not yet:
		 * its lines come while those before it are copied (written, for RX). A ring of
		 * fewer slots (any size is legal) is not worth it. */
		unsigned ahead = pk->next_slot + VQ_PREFETCH_AHEAD - 1u;

		if (ahead >= vq->run.num)
			ahead -= vq->run.num;
		if (ahead < vq->run.num)
			vq_prefetch_desc(vq, ahead, write);
	}
	return true;
}

/*
 * vq_split_pop_one() - vq_pop()'s split fast path: the next chain of an avail index already read
 * is one descriptor (vq_chain_one()) and, with in_order, the head IN_ORDER expects (known). False:
 * nothing taken, for vq_pop_slow().
 */
static inline __attribute__((always_inline)) bool vq_split_pop_one(struct virtqueue *vq, struct vq_chain *chain,
				    const bool in_order, const bool write)
{
	uint16_t mask = (uint16_t)(vq->run.num - 1);
	uint16_t head;
	struct vring_desc d;

	if (vq->shadow_avail == vq->last_avail)
		return false;
	head = VQ_READ_ONCE_U16(&vq->avail->ring[vq->last_avail & mask]);
	/* IN_ORDER: io_next is below num (or VQ_IO_ANY, which no head equals). */
	if (in_order ? head != vq->io_next : head >= vq->run.num)
		return false;
	d = vq_desc_read(vq->desc, head);
	if (!vq_chain_one(vq->mem, &d, chain))
		return false;
	chain->head = head;
	vq->last_avail++;
	if (in_order) {
		/* One descriptor: IN_ORDER's next chain starts right after it. */
		vq->io_next = (uint16_t)((head + 1) & mask);
	}
	if (vq->shadow_avail == vq->last_avail)
		return true;
	if (in_order) /* the next chain's head is known, and below num */
		vq_prefetch_desc(vq, vq->io_next, write);
	else
		vq_prefetch_head(vq, VQ_READ_ONCE_U16(&vq->avail->ring[vq->last_avail & mask]),
				 write);
	return true;
}

/*
 * vq_pop() - take the next available chain: 1 got one, 0 ring empty, -1 queue broken. When the
 * batch announced another chain, its first buffer is prefetched (a wrong guess costs a miss).
 * Inline: a one-descriptor chain (split: of an index already read) costs no call, on either
 * layout and with IN_ORDER (split: the head must be the one IN_ORDER expects).
 */
static inline __attribute__((always_inline)) int vq_pop(struct virtqueue *vq,
							  struct vq_chain *chain)
{
	if (__builtin_expect(vq->ready == VQ_FAST_SPLIT, 1)) {
		if (vq_split_pop_one(vq, chain, false, false))
			return 1;
	} else if (vq->ready == VQ_FAST_PACKED) {
		if (vq_packed_pop_one(vq, chain, false))
			return 1;
	} else if (vq->ready == VQ_FAST_SPLIT_IN_ORDER) {
		if (vq_split_pop_one(vq, chain, true, false))
			return 1;
	}
	return vq_pop_slow(vq, chain);
}

/*
 * vq_pop_as() - vq_pop() for a loop specialised on the queue's fast path `kind` (a constant: the
 * queue's ready when the loop began, or VQ_FAST_NONE for vq_pop() itself): one compare selects
 * the fast path, whichever layout it is, where vq_pop() tries them in turn. A queue whose ready
 * changed meanwhile (broken, stopped, buffers given back) takes the slow path, as there. `write`
 * (a constant): the device writes the buffers (RX), so the next one is prefetched for writing
 * (the specialised fast paths only: VQ_FAST_NONE and the slow path prefetch for reading).
 */
static inline __attribute__((always_inline)) int vq_pop_as(struct virtqueue *vq,
							     struct vq_chain *chain,
							     const unsigned kind, const bool write)
{
	if (kind == VQ_FAST_NONE)
		return vq_pop(vq, chain);
	if (__builtin_expect(vq->ready == kind, 1) &&
	    (kind == VQ_FAST_PACKED
		 ? vq_packed_pop_one(vq, chain, write)
		 : vq_split_pop_one(vq, chain, kind == VQ_FAST_SPLIT_IN_ORDER, write)))
		return 1;
	return vq_pop_slow(vq, chain);
}

/* vq_unpop() - give back the last n popped chains (they will be popped again). */
void vq_unpop(struct virtqueue *vq, unsigned n);

/* vq_avail_idx() - the driver's avail index now (started queue only). */
uint16_t vq_avail_idx(struct virtqueue *vq);

/*
 * vq_avail_seen() - the avail index as vq_pop() last read it (no guest memory access): after a
 * vq_pop() that found too few chains, what vq_avail_idx() must differ from to mean "more".
 */
static inline uint16_t vq_avail_seen(const struct virtqueue *vq)
{
	return vq->ready == VQ_FAST_PACKED ? vq->last_avail : vq->shadow_avail;
}

/*
 * vq_avail_at_least() - whether at least n chains are available and not popped: a count a packed
 * ring has no index for (it reads one descriptor, as many slots on as n of its longest lists).
 */
bool vq_avail_at_least(struct virtqueue *vq, unsigned n);

/* vq_has_avail() - whether the driver made chains available that we have not popped. */
bool vq_has_avail(struct virtqueue *vq);

/*
 * vq_push() - write one used element; invisible to the driver until vq_publish(). Elements are
 * pushed in the order their chains were popped. Packed rings (and IN_ORDER batches) push into a
 * private shadow that vq_publish() turns into the ring's layout.
 */
static inline void vq_push(struct virtqueue *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem *e = &vq->used->ring[vq->used_idx & vq->mask];

	VQ_WRITE_ONCE_U32(&e->id, head);
	VQ_WRITE_ONCE_U32(&e->len, len);
	vq->used_idx++;
}

/*
 * vq_push_last() - n >= 1 chains the device only read (TX) are used, in pop order, the last of
 * them `head`, on a batch_used queue (IN_ORDER, TX): its element alone is written, as
 * vq_split_publish() and vq_packed_publish() read no other (the walk that logs dirty buffers
 * skips elements of length 0, and every element of such a queue has length 0).
 */
static inline void vq_push_last(struct virtqueue *vq, uint16_t head, unsigned n)
{
	vq->used_idx = (uint16_t)(vq->used_idx + n - 1);
	vq_push(vq, head, 0);
}

/*
 * vq_push_read_n() - n chains a packed reads_only queue's device only read (TX) are used, in pop
 * order: the publication takes their ids from the ring's own records and lengths as 0, so
 * nothing is written before it (vq_push(head, 0) each would fill the shadow it does not read).
 */
static inline void vq_push_read_n(struct virtqueue *vq, unsigned n)
{
	vq->used_idx = (uint16_t)(vq->used_idx + n);
}

/* vq_publish() - make every pushed used element visible with one index store. */
void vq_publish(struct virtqueue *vq);

/*
 * vq_driver_wants_notify() - does the driver accept a notification for what was PUBLISHED
 * since the last decision (flags or EVENT_IDX used_event)? Records the decision point. Entries
 * pushed but not yet published are not covered: deciding for them would let a driver that
 * cannot see them yet be skipped.
 */
bool vq_driver_wants_notify(struct virtqueue *vq);

/*
 * vq_driver_would_notify() - what vq_driver_wants_notify() would answer now, without recording
 * a decision point (the stall guard asks before it forces an early notification).
 */
bool vq_driver_would_notify(const struct virtqueue *vq);

/* vq_pending_since_decision() - used entries published since the last decision. */
static inline uint16_t vq_pending_since_decision(const struct virtqueue *vq)
{
	return (uint16_t)(vq->used_published - vq->signalled_used);
}

/*
 * vq_kick_enable() - ask the driver to kick when it adds chains after those it has made
 * available now; true if there are chains we have not popped (check again before sleeping).
 */
bool vq_kick_enable(struct virtqueue *vq);

/* vq_kick_disable() - tell the driver kicks are not needed now (best effort). */
void vq_kick_disable(struct virtqueue *vq);

/* vq_reset() - back to the state after device reset (not started, indexes 0). */
void vq_reset(struct virtqueue *vq);

/* vq_free() - release what a packed or IN_ORDER queue allocated (device teardown). */
void vq_free(struct virtqueue *vq);

/*
 * vq_set_base() - SET_VRING_BASE: where the next start resumes, if on vq->packed's layout; -1
 * if the value cannot be one or the ring is started.
 */
int vq_set_base(struct virtqueue *vq, uint32_t base);

/* vq_get_base() - GET_VRING_BASE's value (packed: avail and used position with wraps). */
uint32_t vq_get_base(const struct virtqueue *vq);

#endif
