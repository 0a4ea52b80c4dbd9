/* SPDX-License-Identifier: MIT */
/* port_state_ring.h - packed ring positions in the state file: kept at a clean stop, resumed. */
#ifndef VNETD_PORT_STATE_RING_H
#define VNETD_PORT_STATE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t; /* jansson's; only port_state*.c see its header */

/*
 * Where a packed queue stopped when its frontend went away (a clean stop: held completions
 * published, taken chains given back), so that a restarted vnetd resumes there when the
 * frontend, which lost track of the ring (QEMU keeps no packed position it can send back after
 * the backend's socket closed), repeats the base it gave the previous vnetd. Positions in the
 * vhost-user packed encoding: bits 0-14 the slot, bit 15 its wrap counter. No padding: port
 * states are compared whole.
 */
struct port_state_ring {
	uint64_t desc;     /* the descriptor ring's address, as the frontend gave it */
	uint32_t from;     /* the base (SET_VRING_BASE) the frontend started that ring with */
	uint16_t size;     /* ring size, 1..32768 */
	uint16_t avail;    /* next avail slot | wrap << 15 */
	uint16_t used;     /* next used slot | wrap << 15 */
	bool present;      /* set: the fields above hold a clean stop */
	bool in_order;     /* VIRTIO_F_IN_ORDER was negotiated */
	uint8_t zero[4];   /* always 0: the struct has no padding */
};

_Static_assert(sizeof(struct port_state_ring) == 24, "struct port_state_ring has padding");

/*
 * port_state_ring_check() - is *r (present) a packed position a ring can have: size 1..32768,
 * both slots and from's inside it, the used position not ahead of the avail one and at most a
 * ring behind (wrap counters agree), desc 16-aligned. 0, or -1 with one line in err.
 */
int port_state_ring_check(const struct port_state_ring *r, char *err, size_t err_len);

/*
 * port_state_ring_parse() - the file's "packed" array (one entry per queue, null for a queue
 * with nothing kept) into out[0..nqueues): at most nqueues entries, each checked. 0 or -1 (err).
 */
int port_state_ring_parse(struct json_t *v, unsigned nqueues, struct port_state_ring *out,
			  char *err, size_t err_len);

/* port_state_ring_any() - does any of r[0..n) hold a position (the file then has "packed")? */
bool port_state_ring_any(const struct port_state_ring *r, unsigned n);

/* port_state_ring_format() - r[0..n) as the "packed" array; NULL if out of memory. */
struct json_t *port_state_ring_format(const struct port_state_ring *r, unsigned n);

/*
 * port_state_ring_resume() - the base a packed queue starting after a restart resumes at, in
 * *base: only when r holds a clean stop of the same ring (size, descriptor address, IN_ORDER)
 * and the frontend's base (fe_base, given: fe_set) is the one it gave that ring, both halves
 * (a frontend that sends the avail half only, as DPDK's virtio-user, resets its rings on
 * reconnect: its base is true). False: the frontend's base stands.
 */
bool port_state_ring_resume(const struct port_state_ring *r, uint16_t size, uint64_t desc,
			    bool in_order, bool fe_set, uint32_t fe_base, uint32_t *base);

#endif
