/* SPDX-License-Identifier: MIT */
/* switch_fixture.h - the switch unit tests' ports, frames, guests and expectations. */
#ifndef VNETD_SWITCH_FIXTURE_H
#define VNETD_SWITCH_FIXTURE_H

/*
 * Shared by the test_switch_*.c files (each a feature: FDB, delivery, port security, flooding,
 * IP anti-spoofing, VLANs): a switch of up to MAX_PORTS test devices (fake_driver.h), frames
 * with a seeded pattern, the receiving guests' RX buffers and what they got.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "backend/switch/switch.h"
#include "switch_test_stats.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define RXQ 0
#define TXQ 1
#define HDR 12u
#define QSIZE 256u
#define MAX_PORTS 5
#define BIG (HDR + 65536u + 64u) /* the largest frame (SWITCH_MAX_FRAME) and more */
#define NS 1000000000ull

/* A test device attached to the switch, and its guest's RX buffers. */
struct port {
	struct test_dev *td;
	struct vnet_backend *be;
	uint8_t mac[6];
	uint64_t rx_gpa[QSIZE]; /* by RX head: the buffer posted there */
	uint32_t rx_cap[QSIZE];
};

/* The switch under test, its ports (ports[0..nports)), what a guest got, the frame built. */
extern struct vnet_switch *sw;
extern uint64_t clock_ns; /* the learning clock (switch_set_clock()): sw_new() starts it at 1000 s */
extern struct port ports[MAX_PORTS];
extern unsigned nports;
extern uint8_t rx_out[BIG + 4096], frame_buf[BIG];
extern const uint8_t mac_bcast[6];
extern const uint8_t mac_mcast[6];
extern const uint8_t mac_zero[6];
extern const uint8_t mac_unknown[6];

/* switch_fixture.c has what each does. */
void clock_advance(uint64_t sec);
void tx_header(uint8_t *h);
void sw_new(void);
struct port *port_add(uint64_t features);
void port_detach(struct port *p);
int sw_teardown(void **state);
void pump(void);
const uint8_t *make_frame(const uint8_t *dst, const uint8_t *src, size_t len, unsigned seed);
void tx_queue_cut(struct port *p, const uint8_t *frame, size_t len, const uint32_t *cuts,
		  unsigned ncuts, bool indirect);
void tx_queue_hdr_cut(struct port *p, const struct virtio_net_hdr_v1 *h, const uint8_t *frame,
		      size_t len, const uint32_t *cuts, unsigned ncuts, bool indirect);
void tx_kick(struct port *p);
void tx_send_hdr(struct port *p, const struct virtio_net_hdr_v1 *h, const uint8_t *frame,
		 size_t len);
void send_from(struct port *p, const uint8_t *dst, const uint8_t *src, size_t len,
	       unsigned seed);
void tx_send(struct port *p, const uint8_t *dst, size_t len, unsigned seed);
void send_many(struct port *p, const uint8_t *dst, size_t len, unsigned first, unsigned n);
void rx_post_kick(struct port *p, unsigned n, uint32_t size, bool kick);
void rx_post(struct port *p, unsigned n, uint32_t size);
void sw_up(unsigned n, unsigned bufs);
bool rx_pending(const struct port *p);
void rx_take_one(struct port *p, size_t *at);
size_t rx_take(struct port *p, unsigned *nbufs);
unsigned expect_frame(struct port *p, const uint8_t *dst, const uint8_t *src, size_t len,
		      unsigned seed);
void expect_from(struct port *r, const struct port *s, const uint8_t *dst, size_t len,
		 unsigned seed);
void expect_nothing(const struct port *p);
void two_ports_b_learned(void);
struct switch_port_counters counters(const struct port *p);

/*
 * The frames queued on TX rings since tx_track_reset(), by where their bytes lie in the sending
 * guest's memory: what a test's "other vCPU" (guest_race.h) rewrites while the switch works.
 */
#define TX_TRACK 256
struct tx_tracked {
	uint8_t *host[FAKE_MAX_CHAIN]; /* each descriptor's bytes (the first holds the header) */
	uint32_t len[FAKE_MAX_CHAIN];
	unsigned n;
};
extern struct tx_tracked tx_tracked[TX_TRACK];
extern unsigned tx_ntracked;
void tx_track_reset(void);
void tx_guest_write(unsigned k, size_t frame_off, const void *bytes, size_t n);

/* A switch over nworkers workers (ports: port_add_on()); drain_workers() plays their threads. */
void sw_new_workers(unsigned nworkers);
struct port *port_add_on(uint64_t features, unsigned worker);
struct port *port_add_offloads(uint64_t features, unsigned worker);
void drain_workers(void);

/* A test: the switch destroyed and the devices freed after it. */
#define T(fn) cmocka_unit_test_teardown(fn, sw_teardown)

#endif
