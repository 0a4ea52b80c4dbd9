/* SPDX-License-Identifier: MIT */
/* switch_policy.c - a switch port's policies, out of line: FDB refusals, port security, storms. */
#include "backend/switch/switch.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch_fdb.h"
#include "backend/switch/switch_internal.h"
#include "backend/switch/switch_ips.h"
#include "backend/switch/switch_lladdr.h"

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
 * sw_head_need() - make p's checked copy of its frame hold the frame's first n bytes.
 * @p: the sending port, inside sw_admit() (its copy holds head_len bytes)
 * @iov: the frame's chain, in the guest's memory
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: the frame's length
 * @n: how many of its first bytes the caller reads (all of them if len is smaller)
 *
 * Only the bytes beyond what the copy holds are read from the guest, once: the copy grows in
 * p->head up to SW_HEAD_MAX, beyond that the whole frame goes into the worker's `whole` buffer
 * (allocated at its first use), behind what p->head held. Out of line: only frames whose checks
 * read beyond their Ethernet header come here.
 *
 * Return: the copy (sw_head(p)), or NULL when the whole-frame buffer could not be allocated
 * (or the buffers hold less than the frame).
 */
__attribute__((noinline)) const uint8_t *sw_head_need(struct switch_port *p, const struct iovec *iov,
						      unsigned iovcnt, size_t off, size_t len,
						      size_t n)
{
	struct sw_worker *w = &p->sw->w[p->worker];

	if (n > len)
		n = len;
	if (n <= p->head_len)
		return sw_head(p);
	if (n <= SW_HEAD_MAX) {
		p->head_len += (uint32_t)iov_copy_from(iov, iovcnt, off + p->head_len,
						       p->head + p->head_len, n - p->head_len);
		return p->head;
	}
	if (!w->whole && !(w->whole = malloc(SW_MAX_FRAME))) {
		log_err("switch %s: no memory for a copy of a frame: dropped", p->name);
		return NULL;
	}
	/* What the checks read so far stays what they read: the guest's bytes only behind it. */
	memcpy(w->whole, p->head, p->head_len);
	if (iov_copy_from(iov, iovcnt, off + p->head_len, w->whole + p->head_len,
			  len - p->head_len) != len - p->head_len)
		return NULL; /* buffers shorter than the frame (the device never gives such) */
	p->head_len = (uint32_t)len;
	return w->whole;
}

/**
 * sw_lladdr_pass() - a port-secured port's frame that is not IPv4: if ARP or ND (or tagged),
 * whether the link-layer addresses it claims are the port's.
 * @p: the sending port (its checked copy holds the frame's Ethernet header, sw_head())
 * @iov: the frame's chain
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: the frame's length
 *
 * switch_lladdr.c has the rules, which read p's checked copy, grown as they ask (sw_head_need():
 * the switch forwards that copy); dropped, counted and logged (rate-limited) if not. Out of
 * line: IPv4 never comes here.
 *
 * Return: true when the frame may leave.
 */
__attribute__((noinline)) bool sw_lladdr_pass(struct switch_port *p, const struct iovec *iov,
					      unsigned iovcnt, size_t off, size_t len)
{
	unsigned et = (unsigned)p->head[12] << 8 | p->head[13];
	struct switch_mac_set macs;
	const char *why = NULL;
	const uint8_t *f;
	size_t want = SW_HEAD_MAX, need = 0;

	if (!switch_lladdr_inspects(et))
		return true;
	/* IPv6 whose next header is neither ICMPv6 nor an option header (TCP, UDP...): the 7 bytes
	 * behind the Ethernet header (all the copy holds here), read once; the frame's first piece
	 * nearly always holds them. */
	if (et == 0x86dd && len > SW_MIN_FRAME + 6) {
		if (iovcnt && off + SW_MIN_FRAME + 7 <= iov[0].iov_len) {
			memcpy(p->head + SW_MIN_FRAME, (const uint8_t *)iov[0].iov_base + off + SW_MIN_FRAME,
			       7);
			p->head_len = SW_MIN_FRAME + 7;
			f = p->head;
		} else {
			f = sw_head_need(p, iov, iovcnt, off, len, SW_MIN_FRAME + 7);
		}
		if (f && !switch_lladdr_ipv6_nh(f[SW_MIN_FRAME + 6]))
			return true;
	}
	macs = (struct switch_mac_set){p->psec_mac, p->allowed, p->n_allowed};
	/* ARP, ND, tags: their first SW_HEAD_MAX bytes; the whole frame if the rules ask for more. */
	for (;;) {
		enum switch_lladdr_verdict v;

		if (!(f = sw_head_need(p, iov, iovcnt, off, len, want))) {
			p->dropped++;
			return false;
		}
		v = switch_lladdr_judge(f, p->head_len, len, &macs, &why, &need);
		if (v == SWITCH_LLADDR_PASS)
			return true;
		if (v == SWITCH_LLADDR_DROP)
			break;
		if (need <= p->head_len || want >= len) { /* no more to give: cannot be read */
			why = "a frame port security cannot read";
			break;
		}
		want = len;
	}
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
 * @p: the sending port (its checked copy, sw_head(), grows to SWITCH_IPS_HDR bytes here: the
 *     rules read it, the switch forwards it)
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
	const uint8_t *hdr = sw_head_need(p, iov, iovcnt, off, len, SWITCH_IPS_HDR);
	const char *why;

	if (!hdr) {
		p->dropped++;
		return false;
	}
	why = switch_ips_check(p->ips, p->n_ips, hdr,
			       p->head_len < SWITCH_IPS_HDR ? p->head_len : SWITCH_IPS_HDR);
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
 * @p: the sending port, an access port (its checked copy holds the frame's EtherType, which the
 *     switch forwards: the guest cannot tag the frame after this check)
 *
 * A tagged frame is dropped, counted and logged (rate-limited). Out of line: access ports only.
 *
 * Return: true when the frame is tagged (dropped).
 */
__attribute__((noinline)) bool sw_access_tagged(struct switch_port *p)
{
	unsigned type = (unsigned)p->head[2 * SW_ETH_ALEN] << 8 | p->head[2 * SW_ETH_ALEN + 1];

	if (type != 0x8100 && type != 0x88a8 && type != 0x9100)
		return false;
	stat_inc(&p->tagged_dropped);
	log_guest("switch %s: dropped a VLAN-tagged frame (ethertype 0x%04x) from an access port "
		  "(vlan=): its guest sends untagged frames only",
		  p->name, type);
	return true;
}
