/* SPDX-License-Identifier: MIT */
/* listen_addr.h - a numeric listen address, "IPV4:PORT" or "[IPV6]:PORT", into a sockaddr (pure). */
#ifndef VNETD_LISTEN_ADDR_H
#define VNETD_LISTEN_ADDR_H

#include <sys/socket.h>

/*
 * listen_addr_parse() - "IPV4:PORT" or "[IPV6]:PORT", numeric only (no name lookups), port
 * 0..65535 (0: any free port), into *ss and *len. 0, or -1 for anything else.
 */
int listen_addr_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len);

#endif
