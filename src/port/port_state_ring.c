/* SPDX-License-Identifier: MIT */
/* port_state_ring.c - packed ring positions in the state file: kept at a clean stop, resumed. */
/*
 * In a version 4 file, "packed" is one entry per queue (null: nothing kept):
 *   {"size":256,"avail":32773,"used":32773,"in_order":false,"from":2147516416,"desc":4096}
 * avail and used are the vhost-user packed encoding (bits 0-14 slot, bit 15 wrap counter),
 * from the 32-bit SET_VRING_BASE value the frontend started the ring with.
 */
#include "port/port_state_ring.h"

#include <string.h>

#include <jansson.h>

#include "lib/err_msg.h"

#define RING_MAX 32768u

/* A position on the ring's two-lap cycle: slot, plus a ring when its wrap counter is 0. */
static unsigned lap_pos(uint16_t v, unsigned size)
{
	return (v & 0x7fffu) + ((v & 0x8000u) ? 0 : size);
}

/**
 * port_state_ring_check() - is a kept packed position one a ring of its size can have?
 * @r: the entry (present)
 * @err: one line on failure
 * @err_len: its size
 *
 * Return: 0, or -1 (err set): size outside 1..32768, a slot outside the ring (avail, used, or
 * either half of from), the used position ahead of the avail one or more than a ring behind
 * it (the wrap counters disagree), or a descriptor address that is not 16-aligned.
 */
int port_state_ring_check(const struct port_state_ring *r, char *err, size_t err_len)
{
	unsigned size = r->size, d;

	if (size == 0 || size > RING_MAX)
		return err_msg(err, err_len, "ring size %u outside 1..%u", size, RING_MAX);
	if ((r->avail & 0x7fffu) >= size || (r->used & 0x7fffu) >= size ||
	    (r->from & 0x7fffu) >= size || ((r->from >> 16) & 0x7fffu) >= size)
		return err_msg(err, err_len, "a slot outside the ring of %u", size);
	d = (lap_pos(r->avail, size) + 2 * size - lap_pos(r->used, size)) % (2 * size);
	if (d > size)
		return err_msg(err, err_len, "used position 0x%x ahead of avail 0x%x (wrap counters "
			       "disagree)", r->used, r->avail);
	if (r->desc & 15)
		return err_msg(err, err_len, "descriptor ring address not 16-aligned");
	return 0;
}

static bool get_num(json_t *o, const char *key, json_int_t max, json_int_t *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return false;
	*out = json_integer_value(v);
	return true;
}

/* One entry: exactly its six keys, each of its type and range, then checked as a whole. */
static int parse_one(json_t *o, struct port_state_ring *r, char *err, size_t err_len)
{
	json_int_t size, avail, used, from, desc;
	json_t *io = json_object_get(o, "in_order");

	if (!json_is_object(o) || json_object_size(o) != 6 || !json_is_boolean(io) ||
	    !get_num(o, "size", RING_MAX, &size) || !get_num(o, "avail", UINT16_MAX, &avail) ||
	    !get_num(o, "used", UINT16_MAX, &used) || !get_num(o, "from", UINT32_MAX, &from) ||
	    !get_num(o, "desc", INT64_MAX, &desc))
		return err_msg(err, err_len, "expected null or {size, avail, used, in_order, from, "
			       "desc} (integers; avail and used 16 bits, from 32)");
	r->size = (uint16_t)size;
	r->avail = (uint16_t)avail;
	r->used = (uint16_t)used;
	r->from = (uint32_t)from;
	r->desc = (uint64_t)desc;
	r->in_order = json_is_true(io);
	r->present = true;
	return port_state_ring_check(r, err, err_len);
}

/**
 * port_state_ring_parse() - the file's "packed" array into per-queue entries.
 * @v: the array (hostile)
 * @nqueues: the port's queues: more entries are refused
 * @out: out[0..nqueues), zeroed by the caller; entries the array has are filled
 * @err: one line on failure
 * @err_len: its size
 *
 * Return: 0, or -1 (err set; out may be partly filled: the caller clears it).
 */
int port_state_ring_parse(json_t *v, unsigned nqueues, struct port_state_ring *out, char *err,
			  size_t err_len)
{
	char why[160];
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) > nqueues)
		return err_msg(err, err_len, "\"packed\" must be an array of at most %u", nqueues);
	json_array_foreach(v, i, e) {
		if (json_is_null(e))
			continue;
		if (parse_one(e, &out[i], why, sizeof(why)) < 0)
			return err_msg(err, err_len, "packed queue %zu: %s", i, why);
	}
	return 0;
}

/**
 * port_state_ring_any() - does any entry hold a position?
 * @r: the entries
 * @n: how many
 *
 * Return: true when one is present (the file is then written as version 4).
 */
bool port_state_ring_any(const struct port_state_ring *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (r[i].present)
			return true;
	return false;
}

/**
 * port_state_ring_format() - the entries as the "packed" array port_state_ring_parse() reads.
 * @r: the entries
 * @n: how many (the array stops after the last present one)
 *
 * Return: the array (a new reference), or NULL if out of memory.
 */
json_t *port_state_ring_format(const struct port_state_ring *r, unsigned n)
{
	json_t *a = json_array();

	while (n > 0 && !r[n - 1].present)
		n--;
	for (unsigned i = 0; i < n && a; i++) {
		json_t *e = r[i].present
			? json_pack("{s:i,s:i,s:i,s:b,s:I,s:I}", "size", r[i].size, "avail", r[i].avail,
				    "used", r[i].used, "in_order", r[i].in_order, "from",
				    (json_int_t)r[i].from, "desc", (json_int_t)r[i].desc)
			: json_null();

		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/**
 * port_state_ring_resume() - where a packed queue starting after a restart resumes.
 * @r: what the file kept for the queue
 * @size: the ring's size now
 * @desc: its descriptor ring's address now
 * @in_order: whether IN_ORDER is negotiated now
 * @fe_set: the frontend gave a base (SET_VRING_BASE) for this start
 * @fe_base: that base
 * @base: the kept position, avail | used << 16, when the result is true
 *
 * The kept position wins only over a frontend that repeats, both halves, the base it gave the
 * ring the previous vnetd stopped cleanly: it lost track of the ring (QEMU, after the backend's
 * socket closed under it, resends the value of its last successful start). A frontend that
 * sends the avail half only (DPDK virtio-user) resets its packed rings on reconnect, and a
 * different ring (size, address, IN_ORDER) or base is a new start: their base stands. A ring
 * that stopped where the frontend's base says (a lap's multiple on) resumes there all the same.
 *
 * Return: true when *base is the kept position.
 */
bool port_state_ring_resume(const struct port_state_ring *r, uint16_t size, uint64_t desc,
			    bool in_order, bool fe_set, uint32_t fe_base, uint32_t *base)
{
	uint32_t kept = (uint32_t)r->avail | (uint32_t)r->used << 16;

	if (!r->present || !fe_set || r->size != size || r->desc != desc ||
	    r->in_order != in_order || fe_base != r->from || !(fe_base >> 16))
		return false;
	*base = kept;
	return true;
}
