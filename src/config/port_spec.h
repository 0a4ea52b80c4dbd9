/* SPDX-License-Identifier: MIT */
/* port_spec.h - the port specification grammar (key=value,...) of --port, --config and port-add. */
#ifndef VNETD_PORT_SPEC_H
#define VNETD_PORT_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "config/port_config.h"
#include "config/port_spec_keys.h" /* port_spec_parse_ulong() and the plain value parsers */

/*
 * port_spec_parse() - SPEC ("socket=PATH,tap=IFNAME|xdp=IFNAME|switch,KEY=VALUE...") into *pc (fully
 * overwritten) for port `index`, on its own; no MAC yet without mac=. 0, or -1 with one line
 * ("vnetd: ...") in err.
 */
int port_spec_parse(const char *spec, unsigned index, struct port_config *pc, char *err,
		    size_t err_len);

/*
 * port_spec_check() - pc (port `index`) against the n ports others[] (indexes other_index[]):
 * no shared socket, tap, xdp interface or given mac. 0, or -1 with the first clash in err.
 */
int port_spec_check(const struct port_config *pc, unsigned index,
		    const struct port_config *const *others, const unsigned *other_index,
		    unsigned n, char *err, size_t err_len);

/* port_spec_derive_mac() - the default MAC of pc (no mac=), unlike that of any of taken[n]. */
void port_spec_derive_mac(struct port_config *pc, unsigned index,
			  const struct port_config *const *taken, unsigned n);

/*
 * port_spec_runtime() - a port added at run time (vnetctl port-add, --config): SPEC exactly
 * as --port takes it, for port `index`, checked against the n existing ports others[] (with
 * indexes other_index[]) for the same socket, tap or mac; a default MAC is derived unique
 * among them. 0, or -1 with one line in err.
 */
int port_spec_runtime(const char *spec, unsigned index, struct port_config *pc,
		      const struct port_config *const *others, const unsigned *other_index,
		      unsigned n, char *err, size_t err_len);

#endif
