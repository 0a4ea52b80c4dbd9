/* SPDX-License-Identifier: MIT */
/* port_spec_keys.h - each key=value of a port spec: key names, value parsers, what each sets. */
#ifndef VNETD_PORT_SPEC_KEYS_H
#define VNETD_PORT_SPEC_KEYS_H

#include <stdbool.h>

struct port_config;
struct port_parse;

/* port_spec_parse_item() - one "key=value" of a spec into *pc (or *pp); 0, or -1 (pp->err). */
int port_spec_parse_item(struct port_config *pc, struct port_parse *pp, char *item);

/* port_spec_parse_ulong() - decimal digits only, within [min, max]; false otherwise. */
bool port_spec_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* port_spec_parse_group() - a numeric gid or a group name (getgrnam()); false if neither. */
bool port_spec_parse_group(const char *s, long *gid);

/* port_spec_parse_mode() - octal permission bits, at most 0777; false otherwise. */
bool port_spec_parse_mode(const char *s, unsigned *mode);

#endif /* VNETD_PORT_SPEC_KEYS_H */
