/* SPDX-License-Identifier: MIT */
/* port_spec_rules.c - the rules between ports: clashes, default MACs, ports added at run time. */
#include "config/port_spec.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/err_msg.h"

/* port_clash() - whether pc (port i) and other (port j) may not both exist; err set if so. */
static bool port_clash(const struct port_config *pc, unsigned i, const struct port_config *other,
		       unsigned j, char *err, size_t err_len)
{
	if (strcmp(pc->socket_path, other->socket_path) == 0) {
		err_msg(err, err_len, "vnetd: ports p%u and p%u both use socket '%s'", j, i,
			pc->socket_path);
		return true;
	}
	if (pc->backend == PORT_BACKEND_TAP && other->backend == PORT_BACKEND_TAP &&
	    strcmp(pc->tap_name, other->tap_name) == 0) {
		err_msg(err, err_len, "vnetd: ports p%u and p%u both use tap '%s'", j, i,
			pc->tap_name);
		return true;
	}
	if (pc->backend == PORT_BACKEND_XDP && other->backend == PORT_BACKEND_XDP &&
	    strcmp(pc->xdp_name, other->xdp_name) == 0) {
		err_msg(err, err_len, "vnetd: ports p%u and p%u both use xdp '%s'", j, i,
			pc->xdp_name);
		return true;
	}
	if (pc->mac_given && other->mac_given && memcmp(pc->dev.mac, other->dev.mac, 6) == 0) {
		err_msg(err, err_len, "vnetd: ports p%u and p%u have the same mac", j, i);
		return true;
	}
	return false;
}

/**
 * port_spec_check() - the rules between ports: may pc join the others?
 * @pc: the port (parsed by port_spec_parse())
 * @index: its index
 * @others: the n ports it must not clash with
 * @other_index: their indexes (for the message)
 * @n: how many
 * @err: one line naming the first clash, "vnetd: ports pJ and pI ..."
 * @err_len: its size
 *
 * Two ports may not share a socket, a tap or a given mac= (derived MACs are made unique by
 * port_spec_derive_mac()). Any thread; no state.
 *
 * Return: 0, or -1 (err set).
 */
int port_spec_check(const struct port_config *pc, unsigned index,
		    const struct port_config *const *others, const unsigned *other_index,
		    unsigned n, char *err, size_t err_len)
{
	for (unsigned j = 0; j < n; j++)
		if (port_clash(pc, index, others[j], other_index[j], err, err_len))
			return -1;
	return 0;
}

/* default_mac() - 52:54:00 (QEMU's locally administered unicast prefix) + a hash. */
static void default_mac(unsigned index, const char *socket_path, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	const unsigned char *p;

	for (p = (const unsigned char *)socket_path; *p; p++)
		h = (h ^ *p) * 16777619u;
	h ^= (index + 1) * 0x9e3779b9u;
	h ^= h >> 15;
	mac[0] = 0x52;
	mac[1] = 0x54;
	mac[2] = 0x00;
	mac[3] = (uint8_t)(h >> 16);
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)h;
}

/* mac_bump() - the next address after a clash: the low 24 bits (the hash part) plus one. */
static void mac_bump(uint8_t mac[6])
{
	uint32_t suffix = (uint32_t)mac[3] << 16 | (uint32_t)mac[4] << 8 | mac[5];

	suffix++;
	mac[3] = (uint8_t)(suffix >> 16);
	mac[4] = (uint8_t)(suffix >> 8);
	mac[5] = (uint8_t)suffix;
}

/**
 * port_spec_derive_mac() - the default MAC of a port without mac=.
 * @pc: the port; pc->dev.mac is set
 * @index: its index (part of the hash)
 * @taken: the ports whose MACs it must not have
 * @n: how many
 *
 * 52:54:00 and a hash of index and socket path; while a port of taken[] has that address, the
 * last three bytes step by one. Any thread; no state.
 */
void port_spec_derive_mac(struct port_config *pc, unsigned index,
			  const struct port_config *const *taken, unsigned n)
{
	uint8_t *mac = pc->dev.mac;
	bool clash;

	default_mac(index, pc->socket_path, mac);
	do {
		clash = false;
		for (unsigned j = 0; j < n && !clash; j++)
			clash = memcmp(taken[j]->dev.mac, mac, 6) == 0;
		if (clash)
			mac_bump(mac);
	} while (clash);
}

/**
 * port_spec_runtime() - a port that joins running ones (vnetctl port-add, --config).
 * @spec: the spec, exactly as --port takes it
 * @index: the port's index (its slot)
 * @pc: fully overwritten
 * @others: the n existing ports
 * @other_index: their indexes
 * @n: how many
 * @err: one line on failure
 * @err_len: its size
 *
 * port_spec_parse(), port_spec_check() against the others, and, without mac=, a MAC unique
 * among theirs (port_spec_derive_mac()). Any thread; no state.
 *
 * Return: 0, or -1 (err set, without a newline).
 */
int port_spec_runtime(const char *spec, unsigned index, struct port_config *pc,
		      const struct port_config *const *others, const unsigned *other_index,
		      unsigned n, char *err, size_t err_len)
{
	if (port_spec_parse(spec, index, pc, err, err_len) < 0 ||
	    port_spec_check(pc, index, others, other_index, n, err, err_len) < 0)
		return -1;
	if (!pc->mac_given)
		port_spec_derive_mac(pc, index, others, n);
	return 0;
}
