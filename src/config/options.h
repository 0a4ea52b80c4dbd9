/* SPDX-License-Identifier: MIT */
/* options.h - vnetd command line: ports (--port, port_spec.h), control, metrics, sandbox. */
#ifndef VNETD_OPTIONS_H
#define VNETD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "config/port_config.h"

/* Everything the command line configures. */
struct vnetd_options {
	unsigned nports;
	char control_path[108]; /* control socket path (required) */
	char user[64];          /* drop privileges to this user; "" keeps the current one */
	char metrics[64];       /* Prometheus listener ADDR:PORT; "" for none */
	char config_path[256];  /* --config FILE: more ports, re-read on SIGHUP; "" none */
	char state_dir[256];    /* --state-dir DIR: per-port state kept across restarts; "" none */
	bool no_sandbox;        /* skip seccomp and privilege dropping */
	bool no_io_uring;       /* taps write one frame per writev(), no io_uring */
	int verbose;            /* number of -v given */
	unsigned workers;       /* --workers N: event-loop threads, 1 (default) .. 16 */
	uint64_t max_guest_mem; /* --max-guest-mem: all ports' guest mappings (mem_cap.h); 0 default */
	long socket_gid;        /* --socket-group: socket= listeners' group; -1: vnetd's own */
	unsigned socket_mode;   /* --socket-mode: their permission bits (default 0660) */
	unsigned poll_us;       /* --poll-us N: every worker's TX poll window, µs (0: kicks only;
				 * VNET_POLL_AUTO: adaptive, the default) */
	long poll_us_worker[16]; /* --poll-us W:N: worker W's own window; -1: poll_us */
	unsigned poll_budget_ns; /* --poll-budget NS: adaptive polling's ns per packet (default 2000) */
	/* Last: options_parse() clears the fields before it, and ports[i] only when a port lands
	 * there (port_spec_parse() sets the whole entry), so the ~730 KB of a static struct cost
	 * memory for the ports given only. */
	struct port_config ports[VNETD_MAX_PORTS];
};

/*
 * options_parse() - parse argv into *out (overwritten, but ports[] beyond nports: never read).
 * Returns 0 on success, 1 when --help was printed to stdout (exit 0), -1 on an error (one line
 * printed to stderr).
 */
int options_parse(int argc, char **argv, struct vnetd_options *out);

/* options_usage() - the --help text (static storage). */
const char *options_usage(void);

#endif
