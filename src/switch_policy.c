/* SPDX-License-Identifier: MIT */
/* switch_policy.c - a switch port's policies, out of line: FDB refusals, port security, storms. */
#include "switch.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iov.h"
#include "log.h"
#include "stat_atomic.h"
#include "switch_fdb.h"
#include "switch_internal.h"
#include "switch_ips.h"
#include "switch_lladdr.h"

/*
 * The slow parts of the checks switch.c's transmit makes a frame: what a drop counts and logs,
 * the storm-control bucket's refill, the ARP/ND, ips= and access-port inspections. Each is
 * called out of line from the data path (the inline parts, in the common case a compare or
 * two, stay in switch.c), only on the ports that have the policy.
 */

/* ---- Learning ----------------------------------------------------------------------------- */

/**
 * sw_learn_refused() - the FDB did not learn p's source MAC (or only in place of one of p's):
 * said once a port.
 * @p: the sending port
 * @why: the FDB's refusal (FDB_AT_LIMIT or FDB_OVER_RATE)
 */
__attribute__((noinline, cold)) void sw_learn_refused(struct switch_port *p, enum fdb_refusal why)
{
	struct fdb_port lim;

	p->refusal_logged[why == FDB_OVER_RATE] = true;
	fdb_port_read(&p->sw->fdb, p->slot, &lim);
	if (why == FDB_AT_LIMIT)
		log_guest("switch %s: holds max-macs=%u MACs: new source MACs only replace its own "
			  "(or are not learned; frames to them flood)",
			  p->name, (unsigned)lim.max_macs);
	else
		log_guest("switch %s: teaches new source MACs faster than learn-rate=%u a second: "
			  "the rest are not learned (frames to them flood)",
			  p->name, (unsigned)lim.learn_rate);
}

/* ---- Port security ------------------------------------------------------------------------ */

/**
 * sw_psec_drop() - the source MAC of p's frame is neither the port's own nor allowed: dropped,
 * counted and logged (rate-limited).
 * @p: the sending port
 * @mac: the frame's source MAC
 *
 * A multicast source always ends here (allowed-macs= holds unicast MACs only).
 */
__attribute__((noinline, cold)) void sw_psec_drop(struct switch_port *p, const uint8_t *mac)
{
	stat_inc(&p->spoofed);
	log_guest("switch %s: dropped a frame from source MAC %02x:%02x:%02x:%02x:%02x:%02x: not "
		  "the port's (port security)",
		  p->name, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

/**
 * sw_lladdr_pass() - a port-secured port's frame that is not IPv4: if ARP or ND (or tagged),
 * whether the link-layer addresses it claims are the port's.
 * @p: the sending port (p->macs: the frame's addresses and EtherType)
 * @iov: the frame's chain
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: the frame's length
 *
 * switch_lladdr.c has the rules; dropped, counted and logged (rate-limited) if not. Out of
 * line: IPv4 never comes here.
 *
 * Return: true when the frame may leave.
 */
__attribute__((noinline)) bool sw_lladdr_pass(struct switch_port *p, const struct iovec *iov,
					      unsigned iovcnt, size_t off, size_t len)
{
	const struct switch_mac_set macs = {p->psec_mac, p->allowed, p->n_allowed};
	unsigned et = (unsigned)p->macs[12] << 8 | p->macs[13];
	const char *why;
	uint8_t nh;

	if (!switch_lladdr_inspects(et))
		return true;
	/* IPv6 whose next header is neither ICMPv6 nor an option header (TCP, UDP...): one byte. */
	if (et == 0x86dd && iov_copy_from(iov, iovcnt, off + SW_MIN_FRAME + 6, &nh, 1) == 1 &&
	    !switch_lladdr_ipv6_nh(nh))
		return true;
	why = switch_lladdr_check(iov, iovcnt, off, len, &macs);
	if (!why)
		return true;
	stat_inc(&p->arp_nd_spoofed);
	log_guest("switch %s: dropped %s (port security)", p->name, why);
	return false;
}

/* ---- Storm control ------------------------------------------------------------------------ */

/**
 * sw_storm_refill() - refill p's bucket for the time since the last refill (at most one
 * second's worth: the bucket's depth).
 * @p: the port, which has a flood-rate
 * @now: the worker's clock
 *
 * Out of line: once per tick of the worker's clock (a coarse one), not a frame.
 */
__attribute__((noinline)) void sw_storm_refill(struct switch_port *p, uint64_t now)
{
	uint64_t cap = (uint64_t)p->flood_rate * SW_NS;

	if (now > p->flood_ns) {
		uint64_t dt = now - p->flood_ns;

		p->flood_credit = dt >= SW_NS ? cap : p->flood_credit + dt * p->flood_rate;
		if (p->flood_credit > cap)
			p->flood_credit = cap;
		p->flood_ns = now;
	}
}

/**
 * sw_storm_log() - the log line for p's storm-control drops: at most one a second per port,
 * timed by the worker's clock.
 * @p: the port
 * @now: the worker's clock
 */
__attribute__((noinline, cold)) void sw_storm_log(struct switch_port *p, uint64_t now)
{
	p->storm_log_ns = now + SW_NS;
	log_guest("switch %s: floods (broadcast, multicast, unknown unicast) over flood-rate=%u a "
		  "second: dropped (storm control; %" PRIu64 " so far)",
		  p->name, p->flood_rate, stat_read(&p->storm_dropped));
}

/* ---- IP anti-spoofing ---------------------------------------------------------------------- */

/**
 * sw_ips_pass() - p has an ips= list: whether its frame may leave.
 * @p: the sending port
 * @iov: the frame's chain
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: the frame's length
 *
 * switch_ips.c has the rules; dropped, counted and logged (rate-limited) if not. Out of line:
 * only the ips ops tables call it.
 *
 * Return: true when the frame may leave.
 */
__attribute__((noinline)) bool sw_ips_pass(struct switch_port *p, const struct iovec *iov,
					   unsigned iovcnt, size_t off, size_t len)
{
	uint8_t hdr[SWITCH_IPS_HDR];
	size_t n = iov_copy_from(iov, iovcnt, off, hdr, len < sizeof(hdr) ? len : sizeof(hdr));
	const char *why = switch_ips_check(p->ips, p->n_ips, hdr, n);

	if (!why)
		return true;
	stat_inc(&p->ip_spoofed);
	log_guest("switch %s: dropped %s (IP anti-spoofing)", p->name, why);
	return false;
}

/* ---- Access ports (vlan=N) -------------------------------------------------------------- */

/**
 * sw_access_tagged() - whether an access port's frame carries a VLAN tag (802.1Q 0x8100,
 * 802.1ad 0x88a8, the old QinQ 0x9100): the guest of an access port sends untagged frames only.
 * @p: the sending port, an access port
 * @iov: the frame's chain
 * @iovcnt: its entries
 * @off: where the frame starts in it
 *
 * A tagged frame is dropped, counted and logged (rate-limited). Out of line: access ports only.
 *
 * Return: true when the frame is tagged (dropped).
 */
__attribute__((noinline)) bool sw_access_tagged(struct switch_port *p, const struct iovec *iov,
						unsigned iovcnt, size_t off)
{
	uint8_t et[2];
	unsigned type;

	iov_copy_from(iov, iovcnt, off + 2 * SW_ETH_ALEN, et, sizeof(et));
	type = (unsigned)et[0] << 8 | et[1];
	if (type != 0x8100 && type != 0x88a8 && type != 0x9100)
		return false;
	stat_inc(&p->tagged_dropped);
	log_guest("switch %s: dropped a VLAN-tagged frame (ethertype 0x%04x) from an access port "
		  "(vlan=): its guest sends untagged frames only",
		  p->name, type);
	return true;
}
