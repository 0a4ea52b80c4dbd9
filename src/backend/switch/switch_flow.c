/* SPDX-License-Identifier: MIT */
/* switch_flow.c - the switch ports' flow cache in front of the FDB: its misses, out of line. */
#include "backend/switch/switch.h"

#include <stdint.h>
#include <string.h>

#include "lib/stat_atomic.h"
#include "backend/switch/switch_fdb.h"
#include "backend/switch/switch_internal.h"

/*
 * Consecutive frames of a port mostly share their addresses, so each port keeps the FDB's last
 * answers for its source MAC (learning) and for the last destination it looked up, valid while
 * the FDB set they came from is unchanged (struct fdb_ver). A hit costs a compare or two and
 * takes no lock: sw_learn_cached() and sw_lookup_cached(), inline in switch_internal.h so
 * every transmit variant has them in its own code. Here: what a miss does that is worth a call.
 */

/**
 * sw_learn_miss() - sw_learn_cached()'s miss: learn a port's source MAC in the FDB.
 * @sw: the switch
 * @p: the sending port (a lane's frames are learnt as its home's)
 * @mac: the frame's source MAC
 * @now: the worker's clock
 *
 * A MAC refused a moment ago (a limit) gets the same answer until the retry time or a change of
 * its set, so a port sending on from a MAC it may not teach costs a compare a frame; anything
 * else asks the FDB. Out of line: it keeps the hot path's registers.
 */
__attribute__((noinline)) void sw_learn_miss(struct vnet_switch *sw, struct switch_port *p,
					     const uint8_t *mac, uint64_t now)
{
	enum fdb_refusal why;

	if (!p->src_hit && now < p->src_retry_ns && fdb_valid(&p->src_ver) &&
	    !memcmp(p->src_mac, mac, SW_ETH_ALEN))
		return;
	stat_inc(&p->cache_misses);
	p->src_retry_ns = 0;
	p->src_hit = fdb_learn(&sw->fdb, p->home->slot, mac, now, &p->src_ver, &why, &p->src_retry_ns);
	memcpy(p->src_mac, mac, SW_ETH_ALEN);
	if (why != FDB_LEARNT && !p->refusal_logged[why == FDB_OVER_RATE])
		sw_learn_refused(p, why);
}
