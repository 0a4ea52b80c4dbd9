/* SPDX-License-Identifier: MIT */
/* fuzz_port_state.c - libFuzzer: the --state-dir file parser (hostile input, packed positions too), and round trips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "port/port_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char sock[] = "/run/vm1.sock";
	struct port_state st, again;
	char err[256], *text;

	if (port_state_parse((const char *)data, size, sock, 5, &st, err, sizeof(err)) < 0) {
		if (!memchr(err, '\0', sizeof(err)) || st.nqueues != 0)
			__builtin_trap();
		return 0;
	}
	if (st.nqueues > 5 || st.rx.n_uc > VNET_MAC_TABLE_SIZE || st.rx.n_mc > VNET_MAC_TABLE_SIZE ||
	    (st.rx.uc_overflow && st.rx.n_uc) || (st.rx.mc_overflow && st.rx.n_mc))
		__builtin_trap();
	/* Every packed position it keeps is one a ring can have, for a queue the port has. */
	for (unsigned i = 0; i < VNET_MAX_QUEUES; i++) {
		const struct port_state_ring *r = &st.ring[i];
		uint32_t base;

		if (!r->present)
			continue;
		if (i >= 5 || port_state_ring_check(r, err, sizeof(err)) < 0)
			__builtin_trap();
		/* What it would resume at is that position, only for the base it names. */
		if (port_state_ring_resume(r, r->size, r->desc, r->in_order, true, r->from, &base) &&
		    base != ((uint32_t)r->avail | (uint32_t)r->used << 16))
			__builtin_trap();
		if (port_state_ring_resume(r, r->size, r->desc, r->in_order, true, ~r->from, &base))
			__builtin_trap();
	}
	if (st.rx.present) {
		/* The receive filter it gives the device says the same (the MAC aside). */
		static const uint8_t cfg[6];
		struct vnet_rx_filter f;
		struct port_state_rx rx;

		port_state_rx_filter(&st.rx, &f);
		port_state_rx_from(&rx, &f, cfg, cfg);
		rx.mac_set = st.rx.mac_set;
		memcpy(rx.mac, st.rx.mac, 6);
		if (memcmp(&rx, &st.rx, sizeof(rx)) != 0)
			__builtin_trap();
	}
	if (st.rss.present) {
		/* Accepted RSS settings are what the device's own check accepts (2 pairs). */
		const struct rss_limits lim = {2, RSS_TABLE_MAX, RSS_KEY_MAX, RSS_HASH_TYPES_SUPPORTED};
		const char *why;

		if (rss_config_check(&st.rss.cfg, st.rss.steer, &lim, &why) < 0)
			__builtin_trap();
	}
	/* What parses formats back to the same state. */
	text = port_state_format(&st, sock);
	if (!text)
		return 0;
	if (port_state_parse(text, strlen(text), sock, 5, &again, err, sizeof(err)) < 0 ||
	    memcmp(&st, &again, sizeof(st)) != 0)
		__builtin_trap();
	free(text);
	return 0;
}
