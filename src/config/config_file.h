/* SPDX-License-Identifier: MIT */
/* config_file.h - the --config file: a JSON list of port specs (jansson), a pure parser. */
#ifndef VNETD_CONFIG_FILE_H
#define VNETD_CONFIG_FILE_H

#include <fcntl.h>
#include <stddef.h>

#include "config/port_config.h"

#define CONFIG_SPEC_MAX 512 /* one port spec, as --port takes it, NUL included */
#define CONFIG_FILE_MAX (1u << 20) /* larger files are refused */

/* The ports a config file lists, each as the --port SPEC it stands for. */
struct config_ports {
	unsigned n;
	char spec[VNETD_MAX_PORTS][CONFIG_SPEC_MAX];
};

/*
 * config_file_parse() - text[0..len) (need not be NUL-terminated) into *out:
 *   {"ports": [ "socket=/run/vm1.sock,tap=tap0", {"socket": "/run/vm2.sock", "switch": true,
 *              "queues": 2, "rx-usecs": 64}, ... ]}
 * A port is a SPEC string or an object of keys: strings (no commas) and non-negative integers
 * become key=value, true/false become the bare key (switch, client) or key=on/off. Only the
 * spec syntax is built here; port_spec_runtime() checks the keys. 0, or -1 with one line
 * in err (hostile input: any bytes at all).
 */
int config_file_parse(const char *text, size_t len, struct config_ports *out, char *err,
		      size_t err_len);

/*
 * config_file_load() - read file `name` in directory dirfd (at most CONFIG_FILE_MAX bytes,
 * opened with CONFIG_OPEN_FLAGS, which the sandbox allows there) and parse it; 0 or -1 (err).
 */
int config_file_load(int dirfd, const char *name, struct config_ports *out, char *err,
		     size_t err_len);

/* O_NONBLOCK: a FIFO planted there must not hold the open (SIGHUP, main thread) until a writer
 * comes; config_file_load() then takes only a regular file. */
#define CONFIG_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

#endif
