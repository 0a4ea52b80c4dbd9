/* SPDX-License-Identifier: MIT */
/* fuzz_proto.h - fuzz_vhost_proto's shared state: frontends, guests, the switch and the oracles. */
#ifndef VNETD_FUZZ_PROTO_H
#define VNETD_FUZZ_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/switch/switch.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_msg.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: vnet_dev_queue() */

/*
 * fuzz_vhost_proto plays whole frontends (QEMU, UML, DPDK as a hostile VMM would) against the
 * real vhost-user code (vu_conn_*) and device model, in one thread: FP_PORTS switch ports with
 * port security, each with its own guest memory (a memfd the fuzzer maps too), plus spare
 * connections (memory only) and a probe connection for the oracles. Every fd a frontend sends
 * is a real one (memfd, eventfd, pipe, /dev/null, ...) through SCM_RIGHTS over a socketpair.
 */

#define FP_PORTS 3
#define FP_SPARES 20 /* memory-only frontends: finding 3's daemon-wide table */
#define FP_ALL (FP_PORTS + FP_SPARES + 1)
#define FP_PROBE (FP_PORTS + FP_SPARES) /* the fresh connection of oracle 1 */
#define FP_PAIRS 2

/* A guest's memory: one memfd, guest physical address = file offset. */
#define FP_MEM_SIZE 0x50000u
#define FP_RING_Q 8u			     /* ring areas (queues 0..7; the device has 5) */
#define FP_RING(q) ((uint64_t)(q) * 0x3000u) /* desc +0, avail/driver +0x1000, used/device +0x1400 */
#define FP_AVAIL_OFF 0x1000u
#define FP_USED_OFF 0x1400u
#define FP_TX_BASE 0x18000u
#define FP_TX_SLOT 0x800u
#define FP_TX_SLOTS 32u
#define FP_RX_BASE 0x28000u
#define FP_RX_SLOT 0x800u
#define FP_RX_SLOTS 64u
#define FP_CTRL_BASE 0x48000u
#define FP_TAB_BASE 0x49000u
#define FP_QMAX 256u /* the largest ring the driver builds itself */
/* The frontend's user address of guest address 0 (what SET_VRING_ADDR speaks). */
#define FP_UVA(p) (0x7f0000000000ull + ((uint64_t)(p) << 32))

/* The driver's view of one of its rings. */
struct fp_q {
	bool set;	/* the driver set it up (addresses sent) */
	bool packed;	/* its layout, as the driver writes it */
	bool in_order;
	uint16_t num;
	uint16_t avail;	   /* split: shadow avail->idx */
	uint16_t cursor;   /* split: next descriptor */
	uint16_t pnext;	   /* packed: next slot to fill */
	bool pwrap;	   /* packed: its wrap counter */
	uint16_t pused;	   /* packed: where the next used descriptor shows */
	bool pused_wrap;
	uint16_t inflight; /* packed: slots the device holds */
	uint8_t chain_len[FP_QMAX];
	uint16_t last_head;
	int kick, call, err; /* the frontend's own ends (-1: none) */
	uint8_t kick_kind;   /* enum fp_fd_kind of the kick end */
	uint32_t base;	     /* the last GET_VRING_BASE answer */
	bool base_valid;
};

/* Where the Ethernet header of a frame the guest queued lies (split across two buffers maybe). */
struct fp_frame_ref {
	uint64_t gpa[2];
	uint16_t len0; /* bytes at gpa[0]; the rest at gpa[1] */
	uint16_t flen;
};

struct fp_port {
	int idx;
	bool live; /* device created for this input */
	struct vnet_dev *dev;
	struct vnet_backend *be; /* switch handle (ports only) */
	const struct vnet_backend_ops *sw_ops;
	struct vu_conn conn;
	bool connected;
	int sock; /* the frontend's end */
	int ep;	  /* epoll of kick and state fds, as port.c's */
	int memfd;
	uint8_t *mem; /* the fuzzer's mapping of memfd */
	uint64_t offered, features, proto;
	bool features_sent;
	struct fp_q q[FP_RING_Q];
	uint64_t deadline[VNET_MAX_QUEUES];
	bool rx_dirty;
	unsigned tx_slot, rx_slot, ctrl_slot;
	struct fp_frame_ref batch[8];
	unsigned nbatch;
	uint16_t last_ctrl_len;
	unsigned regions_added; /* ADD_MEM_REG extra regions */
	/* Replies the frontend read. */
	uint32_t reply_req;
	uint64_t reply_u64;
	int last_ack; /* -1 none, else the REPLY_ACK value */
	int state_fd; /* the frontend's end of a device-state pipe (-1) */
	bool state_load;
	/* Oracle 2: every MAC this port's port security ever admitted. */
	uint8_t allowed[8][6];
	unsigned nallowed;
	uint64_t rx_seen; /* deliveries the wrappers saw since the last blind check */
	uint64_t rx_stats; /* the device's RX packet count at the last blind check */
	uint64_t sent_base; /* the switch's forwarded + flooded count at the input's start */
};

/* Per-input configuration (the input's first byte). */
struct fp_config {
	bool two_workers;  /* port 2 on worker 1: the cross-worker queue */
	bool mac_change;   /* port 0: mac-change=on */
	bool tx_timer;     /* tx-mode timer */
	bool rss;          /* offer RSS */
	bool small_cap;    /* port 1: max-mem= 1 MiB */
	bool flood_rate;   /* port 2: storm control */
};

struct fp_world {
	struct fp_config cfg;
	struct fp_port p[FP_ALL];
	struct vnet_switch *sw;
	unsigned nworkers;
	bool woken[2];
	uint64_t now;
	int cur; /* the port whose guest is "running" (the race hook writes its memory); -1 */
	uint8_t state[VNET_STATE_MAX + 64]; /* the last saved device state */
	size_t state_len;
	unsigned fills; /* spare regions added: oracle 1 runs when some were */
};

extern struct fp_world W;
extern const uint8_t fp_mac[FP_PORTS][6];

static inline void fp_fail(const char *what)
{
	fprintf(stderr, "fuzz_vhost_proto: %s\n", what);
	abort();
}

/* The input. */
struct fp_in {
	const uint8_t *p;
	size_t n, off;
};

static inline uint8_t in8(struct fp_in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

static inline uint16_t in16(struct fp_in *in)
{
	uint16_t lo = in8(in);

	return (uint16_t)(lo | in8(in) << 8);
}

/* What an fd the frontend hands over is (SET_VRING_KICK/CALL/ERR, device state, ...). */
enum fp_fd_kind {
	FP_FD_EVENTFD,
	FP_FD_PIPE_R,	   /* read end; the frontend writes the other */
	FP_FD_PIPE_R_DEAD, /* read end whose write end is closed at once */
	FP_FD_PIPE_W,	   /* write end; the frontend keeps the read end */
	FP_FD_DEVNULL,
	FP_FD_SOCKET,
	FP_FD_MEMFD,
	FP_FD_DIR,
	FP_FD_KINDS
};

/* ---- fuzz_proto_world.c: ports, connections, the event loop, fds, the oracles ---- */
void fp_world_init(void);			     /* once */
void fp_world_begin(const struct fp_config *cfg);    /* each input */
void fp_world_end(void);			     /* each input: close all, check fds */
struct fp_port *fp_port_get(unsigned i);	     /* create a spare or the probe on demand */
void fp_connect(struct fp_port *p);
void fp_disconnect(struct fp_port *p);
int fp_own_fd(int fd);				     /* register a frontend fd (closed at the end) */
void fp_close_own(int *fd);
int fp_make_fd(enum fp_fd_kind kind, int *keep, uint8_t *keep_kind); /* the fd to send */
int fp_send(struct fp_port *p, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned nfds);
#define FP_RAW_FDS 11 /* the most fds a raw message carries (more than vhost-user's 8) */
void fp_send_raw(struct fp_port *p, const uint8_t *bytes, size_t len, const int *fds, unsigned nfds);
void fp_hangup(struct fp_port *p); /* the frontend closes its end: vnetd sees EOF */
void fp_loop(unsigned rounds);
void fp_kick(struct fp_port *p, unsigned q); /* the frontend's side: write the kick fd */
void fp_oracle_probe(void);
void fp_race_set(const uint8_t v[10]);

/* ---- fuzz_proto_guest.c: the guest driver on its memory ---- */
void fp_gwrite(struct fp_port *p, uint64_t gpa, const void *src, size_t len);
bool fp_gread(struct fp_port *p, uint64_t gpa, void *dst, size_t len);
unsigned fp_hdr_len(const struct fp_port *p);
void fp_ring_reset(struct fp_port *p, unsigned q, bool packed, uint16_t num);
unsigned fp_reclaim(struct fp_port *p, unsigned q); /* free room in the ring */
bool fp_post(struct fp_port *p, unsigned q, const uint64_t *gpa, const uint32_t *len,
	     const bool *write, unsigned n, bool indirect);
void fp_op_tx(struct fp_port *p, struct fp_in *in);
void fp_op_rx(struct fp_port *p, struct fp_in *in);
void fp_op_ctrl(struct fp_port *p, struct fp_in *in);
void fp_op_desc(struct fp_port *p, struct fp_in *in);
void fp_op_avail(struct fp_port *p, struct fp_in *in);
void fp_race_write(struct fp_port *p, uint8_t target, uint8_t a, uint8_t b, const uint8_t *v,
		   bool flip);

#endif
