/* SPDX-License-Identifier: MIT */
/* port_spec_keys.c - each key=value of a port spec: key names, value parsers, what each sets. */
#include "config/port_spec_keys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err_msg.h"
#include "mem/mem.h"
#include "lib/hex_text.h"
#include "config/port_config.h"
#include "config/port_spec_types.h"
#include "backend/switch/switch.h"
#include "lib/virtio_net_defs.h"
#include "backend/xdp/xdp.h"

#define TX_TIMER_USECS_MAX 1000000 /* one second: anything longer is a mistake */
#define MTU_MIN 68                 /* IPv4 minimum, as Linux enforces */
#define MTU_MAX 65535

static const char *const port_key_names[K_COUNT] = {
	[K_SOCKET] = "socket",	       [K_TAP] = "tap",
	[K_SWITCH] = "switch",	       [K_MAC] = "mac",
	[K_QUEUES] = "queues",	       [K_MTU] = "mtu",
	[K_NOTF_COAL] = "notf-coal",   [K_VQ_NOTF_COAL] = "vq-notf-coal",
	[K_TX_MODE] = "tx-mode",       [K_TX_TIMER_USECS] = "tx-timer-usecs",
	[K_RX_USECS] = "rx-usecs",     [K_RX_FRAMES] = "rx-frames",
	[K_TX_USECS] = "tx-usecs",     [K_TX_FRAMES] = "tx-frames",
	[K_OFFLOADS] = "offloads",     [K_EVENT_IDX] = "event-idx",
	[K_INDIRECT] = "indirect",     [K_MRG_RXBUF] = "mrg-rxbuf",
	[K_PACKED] = "packed",         [K_IN_ORDER] = "in-order",
	[K_COAL_PERSIST] = "coal-persist", [K_STALL_GUARD] = "stall-guard",
	[K_STALL_BYTES] = "stall-bytes", [K_STALL_IDLE_USECS] = "stall-idle-usecs",
	[K_RX_ADAPTIVE] = "rx-adaptive", [K_TX_ADAPTIVE] = "tx-adaptive",
	[K_RSS] = "rss",
	[K_CLIENT] = "client",	       [K_WORKER] = "worker",
	[K_MAX_MEM] = "max-mem",       [K_MIGRATE_STATE] = "migrate-state",
	[K_MAX_MEM_SLOTS] = "max-mem-slots",
	[K_MAX_MACS] = "max-macs",     [K_LEARN_RATE] = "learn-rate",
	[K_PORT_SECURITY] = "port-security", [K_MAC_CHANGE] = "mac-change",
	[K_ALLOWED_MACS] = "allowed-macs",
	[K_TX_RATE] = "tx-rate",       [K_TX_BURST] = "tx-burst",
	[K_RX_RATE] = "rx-rate",       [K_RX_BURST] = "rx-burst",
	[K_FLOOD_RATE] = "flood-rate",
	[K_GROUP] = "group",	       [K_MODE] = "mode",
	[K_IPS] = "ips",
	[K_VLAN] = "vlan",
	[K_UPLINK] = "uplink",	       [K_TRUNK] = "trunk",
	[K_XDP] = "xdp",	       [K_XDP_QUEUE] = "queue",
	[K_QUEUE_WORKERS] = "queue-workers",
};

/* max-mem-slots= ends at what the SIGBUS table holds for every port (guest_fault.h). */
_Static_assert(GUEST_FAULT_PORTS >= VNETD_MAX_PORTS, "the SIGBUS table has room for every port");
_Static_assert(GUEST_MEM_MAX_REGIONS == 509, "max-mem-slots='s message says 1..509");

static int bad_value(struct port_parse *pp, const char *key, const char *value, const char *expect)
{
	return err_msg(pp->err, pp->err_len, "vnetd: bad value '%s' for %s (expected %s)", value,
		       key, expect);
}

/**
 * port_spec_parse_ulong() - a strict decimal number: digits and nothing else.
 * @s: the text
 * @min: the smallest value taken
 * @max: the largest value taken
 * @out: the value (untouched on failure)
 *
 * Unlike strtoul(), no spaces, signs ("-1") or trailing text. Any thread.
 *
 * Return: whether s is such a number within [min, max].
 */
bool port_spec_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9') /* strtoul would take spaces, signs and "-1" */
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_u32_key(struct port_parse *pp, const char *key, const char *value, uint32_t *out)
{
	unsigned long v;

	if (!port_spec_parse_ulong(value, 0, UINT32_MAX, &v))
		return bad_value(pp, key, value, "0..4294967295");
	*out = (uint32_t)v;
	return 0;
}

static int parse_on_off(struct port_parse *pp, const char *key, const char *value, bool *out)
{
	if (strcmp(value, "on") == 0)
		*out = true;
	else if (strcmp(value, "off") == 0)
		*out = false;
	else
		return bad_value(pp, key, value, "on or off");
	return 0;
}

/* parse_mac() - exactly XX:XX:XX:XX:XX:XX; rejects multicast and all-zero addresses. */
static int parse_mac(struct port_parse *pp, const char *value, uint8_t mac[6])
{
	if (!hex_parse_mac(value, mac))
		return bad_value(pp, "mac", value, "XX:XX:XX:XX:XX:XX");
	if (mac[0] & 1)
		return bad_value(pp, "mac", value, "a unicast address");
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return bad_value(pp, "mac", value, "a non-zero address");
	return 0;
}

/*
 * parse_allowed_macs() - allowed-macs=MAC+MAC+... ('+' between MACs: ',' ends the key), at most
 * PORT_ALLOWED_MACS unicast MACs.
 */
static int parse_allowed_macs(struct port_config *pc, struct port_parse *pp, const char *value)
{
	char buf[PORT_ALLOWED_MACS * 18 + 1];
	char *mac, *next;

	pc->n_allowed_macs = 0;
	if (strlen(value) >= sizeof(buf))
		return bad_value(pp, "allowed-macs", value, "at most 8 MACs, MAC+MAC+...");
	strcpy(buf, value);
	for (mac = buf; mac; mac = next) {
		next = strchr(mac, '+');
		if (next)
			*next++ = '\0';
		if (pc->n_allowed_macs == PORT_ALLOWED_MACS)
			return bad_value(pp, "allowed-macs", value, "at most 8 MACs, MAC+MAC+...");
		if (parse_mac(pp, mac, pc->allowed_macs[pc->n_allowed_macs]) < 0)
			return bad_value(pp, "allowed-macs", value,
					 "unicast MACs XX:XX:XX:XX:XX:XX, '+' between them");
		pc->n_allowed_macs++;
	}
	return 0;
}

/*
 * parse_ips() - ips=ADDR[/LEN]+ADDR[/LEN]+... ('+' between entries: ',' ends the key), at most
 * PORT_IPS IPv4 or IPv6 networks (no /LEN: one address, /32 or /128).
 */
static int parse_ips(struct port_config *pc, struct port_parse *pp, const char *value)
{
	static const char what[] = "at most 16 ADDR[/LEN], IPv4 or IPv6, '+' between them";
	char buf[PORT_IPS * 44 + 1];
	char *ent, *next;

	pc->n_ips = 0;
	if (strlen(value) >= sizeof(buf))
		return bad_value(pp, "ips", value, what);
	strcpy(buf, value);
	for (ent = buf; ent; ent = next) {
		struct switch_ip_net *e = &pc->ips[pc->n_ips];
		char *slash;
		unsigned long plen;

		next = strchr(ent, '+');
		if (next)
			*next++ = '\0';
		if (pc->n_ips == PORT_IPS)
			return bad_value(pp, "ips", value, what);
		slash = strchr(ent, '/');
		if (slash)
			*slash++ = '\0';
		memset(e, 0, sizeof(*e));
		e->v6 = strchr(ent, ':') != NULL;
		if (inet_pton(e->v6 ? AF_INET6 : AF_INET, ent, e->addr) != 1)
			return bad_value(pp, "ips", value, what);
		plen = e->v6 ? 128 : 32;
		if (slash && !port_spec_parse_ulong(slash, 0, plen, &plen))
			return bad_value(pp, "ips", value, what);
		e->prefix = (uint8_t)plen;
		pc->n_ips++;
	}
	return 0;
}

/*
 * parse_segment() - switch=NAME: the port's L2 segment, 1..15 of [A-Za-z0-9_.-]; "default" is
 * plain switch's segment.
 */
static int parse_segment(struct port_config *pc, struct port_parse *pp, const char *value)
{
	size_t n = strlen(value);

	if (n == 0 || n >= sizeof(pc->segment) || strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
							   "abcdefghijklmnopqrstuvwxyz"
							   "0123456789_.-") != n)
		return bad_value(pp, "switch", value, "a segment name of 1..15 of A-Z a-z 0-9 _ . -");
	if (strcmp(value, "default") != 0)
		strcpy(pc->segment, value);
	return 0;
}

/**
 * port_spec_parse_group() - a socket group: a numeric gid, or a group name (getgrnam()).
 * @s: the text
 * @gid: the group id (untouched on failure)
 *
 * A name needs /etc/group (or NSS): at start-up, before the sandbox, always; at run time
 * (port-add, a reload) under the seccomp filter only a numeric gid is certain to resolve.
 * Any thread; getgrnam() is not reentrant, so not two at once.
 *
 * Return: whether s names a group.
 */
bool port_spec_parse_group(const char *s, long *gid)
{
	const struct group *gr;
	unsigned long v;

	if (port_spec_parse_ulong(s, 0, 0x7fffffffUL, &v)) {
		*gid = (long)v;
		return true;
	}
	if (s[0] == '\0')
		return false;
	gr = getgrnam(s);
	if (!gr)
		return false;
	*gid = (long)gr->gr_gid;
	return true;
}

/**
 * port_spec_parse_mode() - socket permission bits in octal: 1..4 digits 0-7, at most 0777.
 * @s: the text, e.g. "0660" or "660"
 * @mode: the bits (untouched on failure)
 *
 * Any thread; no state.
 *
 * Return: whether s is such a mode.
 */
bool port_spec_parse_mode(const char *s, unsigned *mode)
{
	size_t len = strlen(s);
	unsigned v = 0;

	if (len == 0 || len > 4 || strspn(s, "01234567") != len)
		return false;
	for (size_t i = 0; i < len; i++)
		v = v * 8 + (unsigned)(s[i] - '0');
	if (v > 0777)
		return false;
	*mode = v;
	return true;
}

/* parse_queue_workers() - queue-workers=A+B+...: one worker (0..15) per queue pair. */
static int parse_queue_workers(struct port_config *pc, struct port_parse *pp, const char *value)
{
	char buf[64], *w = buf, *plus;
	unsigned long v;

	pc->n_queue_workers = 0;
	if (strlen(value) >= sizeof(buf))
		return bad_value(pp, "queue-workers", value, "W+W+..., one worker per queue pair");
	strcpy(buf, value);
	for (;; w = plus + 1) { /* strict: no empty item ("0++1", "+0", "0+") */
		plus = strchr(w, '+');
		if (plus)
			*plus = '\0';
		if (pc->n_queue_workers == VNET_MAX_QUEUE_PAIRS || !port_spec_parse_ulong(w, 0, 15, &v))
			return bad_value(pp, "queue-workers", value,
					 "W+W+..., one worker (0..15) per queue pair");
		pc->queue_workers[pc->n_queue_workers++] = (uint8_t)v;
		if (!plus)
			return 0;
	}
}

/* parse_trunk() - trunk=N+M+...: 1..PORT_MAX_TRUNK distinct VLAN IDs of 1..4094. */
static int parse_trunk(struct port_config *pc, struct port_parse *pp, const char *value)
{
	char buf[PORT_MAX_TRUNK * 5 + 1];
	char *vid, *next;
	unsigned long v;

	pc->n_trunk = 0;
	if (strlen(value) >= sizeof(buf))
		return bad_value(pp, "trunk", value, "at most 8 VLAN IDs, N+M+...");
	strcpy(buf, value);
	for (vid = buf; vid; vid = next) {
		next = strchr(vid, '+');
		if (next)
			*next++ = '\0';
		if (pc->n_trunk == PORT_MAX_TRUNK || !port_spec_parse_ulong(vid, 1, 4094, &v))
			return bad_value(pp, "trunk", value,
					 "1..8 VLAN IDs of 1..4094, '+' between them");
		for (unsigned i = 0; i < pc->n_trunk; i++)
			if (pc->trunk[i] == v)
				return bad_value(pp, "trunk", value, "distinct VLAN IDs");
		pc->trunk[pc->n_trunk++] = (uint16_t)v;
	}
	return 0;
}

/* Linux dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace. */
static bool valid_ifname(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= 16 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strpbrk(name, "/: \t\n\r\v\f") == NULL;
}

/* parse_rate_key() - tx-/rx-rate= (Mbit/s, 0: none) and tx-/rx-burst= (KiB, 0: default). */
static int parse_rate_key(struct port_parse *pp, const char *key, const char *value,
			  bool burst, uint32_t *out)
{
	unsigned long v;

	if (!port_spec_parse_ulong(value, 0, burst ? RATE_BURST_KB_MAX : RATE_MBIT_MAX, &v))
		return bad_value(pp, key, value,
				 burst ? "0..1048576 KiB (0: 10 ms of the rate)"
				       : "0..1000000 Mbit/s (0: no limit)");
	*out = (uint32_t)v;
	return 0;
}

/* apply_port_key() - the value of one key into *pc (or *pp); 0, or -1 (pp->err). */
static int apply_port_key(struct port_config *pc, struct port_parse *pp, enum port_key key,
			  const char *value)
{
	struct vnet_dev_params *d = &pc->dev;
	const char *name = port_key_names[key];
	unsigned long v;

	switch (key) {
	case K_SOCKET:
		if (value[0] == '\0' || strlen(value) >= sizeof(pc->socket_path))
			return bad_value(pp, name, value, "a path of 1..107 bytes");
		strcpy(pc->socket_path, value);
		return 0;
	case K_TAP:
		if (!valid_ifname(value))
			return bad_value(pp, name, value, "an interface name of 1..15 bytes");
		strcpy(pc->tap_name, value);
		pc->backend = PORT_BACKEND_TAP;
		return 0;
	case K_XDP:
		if (!valid_ifname(value))
			return bad_value(pp, name, value, "an interface name of 1..15 bytes");
		strcpy(pc->xdp_name, value);
		pc->backend = PORT_BACKEND_XDP;
		return 0;
	case K_XDP_QUEUE:
		if (!port_spec_parse_ulong(value, 0, 255, &v))
			return bad_value(pp, name, value, "0..255 (the interface's first queue)");
		pc->xdp_queue = (unsigned)v;
		return 0;
	case K_SWITCH:
		pc->backend = PORT_BACKEND_SWITCH;
		return value ? parse_segment(pc, pp, value) : 0;
	case K_CLIENT:
		pc->client = true;
		return 0;
	case K_WORKER:
		if (!port_spec_parse_ulong(value, 0, 15, &v))
			return bad_value(pp, name, value, "0..15 (a worker of --workers)");
		pc->worker = (int)v;
		return 0;
	case K_MAX_MEM:
		if (mem_cap_parse(value, &pc->max_mem) < 0)
			return bad_value(pp, name, value,
					 "a size of 1..2^63 bytes, K/M/G/T suffixes");
		return 0;
	case K_MAX_MEM_SLOTS:
		if (!port_spec_parse_ulong(value, 1, GUEST_MEM_MAX_REGIONS, &v))
			return bad_value(pp, name, value, "1..509 memory regions");
		pc->max_mem_slots = (unsigned)v;
		return 0;
	case K_MIGRATE_STATE: {
		bool on;

		if (parse_on_off(pp, name, value, &on) < 0)
			return -1;
		pc->no_device_state = !on;
		return 0;
	}
	case K_MAC:
		pp->mac_given = true;
		return parse_mac(pp, value, d->mac);
	case K_QUEUES:
		if (!port_spec_parse_ulong(value, 1, VNET_MAX_QUEUE_PAIRS, &v))
			return bad_value(pp, name, value, "1..16");
		d->queue_pairs = (uint16_t)v;
		return 0;
	case K_MTU:
		if (!port_spec_parse_ulong(value, MTU_MIN, MTU_MAX, &v))
			return bad_value(pp, name, value, "68..65535");
		d->mtu = (uint16_t)v;
		return 0;
	case K_TX_MODE:
		if (strcmp(value, "kick") == 0)
			d->tx_mode = VNET_TX_KICK;
		else if (strcmp(value, "timer") == 0)
			d->tx_mode = VNET_TX_TIMER;
		else
			return bad_value(pp, name, value, "kick or timer");
		return 0;
	case K_TX_TIMER_USECS:
		if (!port_spec_parse_ulong(value, 1, TX_TIMER_USECS_MAX, &v))
			return bad_value(pp, name, value, "1..1000000");
		d->tx_timer_usecs = (uint32_t)v;
		return 0;
	case K_RX_USECS:
		d->host_coal_rx_set = true;
		return parse_u32_key(pp, name, value, &d->host_coal_rx.max_usecs);
	case K_RX_FRAMES:
		d->host_coal_rx_set = true;
		return parse_u32_key(pp, name, value, &d->host_coal_rx.max_packets);
	case K_TX_USECS:
		d->host_coal_tx_set = true;
		return parse_u32_key(pp, name, value, &d->host_coal_tx.max_usecs);
	case K_TX_FRAMES:
		d->host_coal_tx_set = true;
		return parse_u32_key(pp, name, value, &d->host_coal_tx.max_packets);
	case K_NOTF_COAL:
		return parse_on_off(pp, name, value, &pp->notf_coal);
	case K_VQ_NOTF_COAL:
		return parse_on_off(pp, name, value, &pp->vq_notf_coal);
	case K_OFFLOADS:
		return parse_on_off(pp, name, value, &pp->offloads);
	case K_EVENT_IDX:
		return parse_on_off(pp, name, value, &pp->event_idx);
	case K_INDIRECT:
		return parse_on_off(pp, name, value, &pp->indirect);
	case K_MRG_RXBUF:
		return parse_on_off(pp, name, value, &pp->mrg_rxbuf);
	case K_PACKED:
		return parse_on_off(pp, name, value, &pp->packed);
	case K_IN_ORDER:
		return parse_on_off(pp, name, value, &pp->in_order);
	case K_COAL_PERSIST:
		return parse_on_off(pp, name, value, &pp->coal_persist);
	case K_STALL_GUARD:
		return parse_on_off(pp, name, value, &d->stall_guard.on);
	case K_STALL_BYTES:
		return parse_u32_key(pp, name, value, &d->stall_guard.bytes);
	case K_STALL_IDLE_USECS:
		return parse_u32_key(pp, name, value, &d->stall_guard.idle_usecs);
	case K_RX_ADAPTIVE:
		return parse_on_off(pp, name, value, &d->rx_adaptive);
	case K_RSS:
		return parse_on_off(pp, name, value, &d->rss);
	case K_TX_ADAPTIVE:
		return parse_on_off(pp, name, value, &d->tx_adaptive);
	case K_MAX_MACS:
		if (!port_spec_parse_ulong(value, 1, SWITCH_FDB_SIZE, &v))
			return bad_value(pp, name, value, "1..4096 (the switch's table size)");
		pc->max_macs = (unsigned)v;
		return 0;
	case K_LEARN_RATE:
		if (!port_spec_parse_ulong(value, 0, SWITCH_LEARN_RATE_MAX, &v))
			return bad_value(pp, name, value,
					 "0..1000000 new MACs a second (0: no limit)");
		pc->learn_rate = (unsigned)v;
		return 0;
	case K_PORT_SECURITY:
		if (parse_on_off(pp, name, value, &pc->psec_off) < 0)
			return -1;
		pc->psec_off = !pc->psec_off;
		return 0;
	case K_MAC_CHANGE:
		return parse_on_off(pp, name, value, &pc->mac_change);
	case K_ALLOWED_MACS:
		return parse_allowed_macs(pc, pp, value);
	case K_TX_RATE:
		return parse_rate_key(pp, name, value, false, &d->tx_rate.mbit);
	case K_TX_BURST:
		return parse_rate_key(pp, name, value, true, &d->tx_rate.burst_kb);
	case K_RX_RATE:
		return parse_rate_key(pp, name, value, false, &d->rx_rate.mbit);
	case K_RX_BURST:
		return parse_rate_key(pp, name, value, true, &d->rx_rate.burst_kb);
	case K_FLOOD_RATE:
		if (!port_spec_parse_ulong(value, 0, SWITCH_FLOOD_RATE_MAX, &v))
			return bad_value(pp, name, value,
					 "0..10000000 flooded frames a second (0: no limit)");
		pc->flood_rate = (unsigned)v;
		return 0;
	case K_GROUP:
		if (!port_spec_parse_group(value, &pc->sock_gid))
			return bad_value(pp, name, value,
					 "a group name known to this host or a numeric gid");
		return 0;
	case K_MODE:
		if (!port_spec_parse_mode(value, &pc->sock_mode) || pc->sock_mode == 0)
			return bad_value(pp, name, value, "octal permission bits 1..0777, e.g. 0660");
		return 0;
	case K_IPS:
		return parse_ips(pc, pp, value);
	case K_VLAN:
		if (!port_spec_parse_ulong(value, 1, 4094, &v))
			return bad_value(pp, name, value, "a VLAN ID of 1..4094");
		pc->vlan = (uint16_t)v;
		return 0;
	case K_UPLINK:
		if (parse_segment(pc, pp, value) < 0)
			return -1;
		memcpy(pc->uplink, pc->segment, sizeof(pc->uplink));
		memset(pc->segment, 0, sizeof(pc->segment));
		return 0;
	case K_TRUNK:
		return parse_trunk(pc, pp, value);
	case K_QUEUE_WORKERS:
		return parse_queue_workers(pc, pp, value);
	case K_COUNT:
		break;
	}
	return -1;
}

/**
 * port_spec_parse_item() - one "key=value" (or bare "switch") of a port spec into *pc (or *pp).
 * @pc: the port being parsed
 * @pp: its parse state: the keys seen so far, the on/off keys, the error line
 * @item: the item, modified (its '=' becomes a NUL)
 *
 * A key unknown, given twice, or without the value it needs (with one it takes none) is an
 * error, as is a bad value. Any thread; no state.
 *
 * Return: 0, or -1 (pp->err set).
 */
int port_spec_parse_item(struct port_config *pc, struct port_parse *pp, char *item)
{
	char *eq = strchr(item, '=');
	const char *value = NULL;
	unsigned k;

	if (eq) {
		*eq = '\0';
		value = eq + 1;
	}
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(item, port_key_names[k]) == 0)
			break;
	if (k == K_COUNT)
		return err_msg(pp->err, pp->err_len, "vnetd: bad --port key '%s'", item);
	if (pp->seen[k])
		return err_msg(pp->err, pp->err_len, "vnetd: --port key '%s' given twice", item);
	pp->seen[k] = true;
	if (k == K_CLIENT && value)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port key '%s' takes no value (got '%s')", item, value);
	if (k != K_SWITCH && k != K_CLIENT && !value)
		return err_msg(pp->err, pp->err_len,
			       "vnetd: --port key '%s' needs a value (%s=...)", item, item);
	return apply_port_key(pc, pp, (enum port_key)k, value);
}
