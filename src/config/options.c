/* SPDX-License-Identifier: MIT */
/* options.c - vnetd command line parsing: the daemon's options and the --help text. */
#include "config/options.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"
#include "lib/listen_addr.h"
#include "dev/dev.h"
#include "config/port_spec.h"

#ifndef VNETD_VERSION
#define VNETD_VERSION "unknown" /* meson passes the project version */
#endif

static const char usage_text[] =
	"Usage: vnetd --port socket=PATH,tap=IFNAME|xdp=IFNAME|switch[,KEY=VALUE...] [--port ...]\n"
	"             --control PATH [--config FILE] [--state-dir DIR] [--workers N]\n"
	"             [--metrics ADDR:PORT] [--user NAME] [--no-sandbox] [--no-io-uring]\n"
	"             [-v|--verbose]\n"
	"             [--max-guest-mem SIZE] [--socket-group NAME] [--socket-mode OCTAL]\n"
	"             [--poll-us [W:]N|auto] [--poll-budget NS] [-h|--help] [--version]\n"
	"\n"
	"Serves virtio-net devices to VMs over vhost-user, with notification (interrupt)\n"
	"coalescing. Each --port is one device; ports are named p0, p1, ... in order.\n"
	"\n"
	"Options:\n"
	"  --port SPEC          add a port (at most 1024); SPEC is a comma-separated list of keys\n"
	"  --control PATH       control socket for vnetctl (required; created with mode 0600)\n"
	"  --config FILE        more ports from a JSON file (docs/scale.md); SIGHUP re-reads it\n"
	"                       and applies only what changed\n"
	"  --state-dir DIR      keep per-port settings a frontend cannot resend (coalescing)\n"
	"                       in DIR, so they survive a vnetd restart\n"
	"  --workers N          event-loop threads, 1..16 (default 1); ports (tap and switch)\n"
	"                       are spread over them, fewest ports first\n"
	"  --metrics ADDR:PORT  serve Prometheus metrics on http://ADDR:PORT/metrics; numeric\n"
	"                       IPv4 or [IPv6] address, e.g. 127.0.0.1:9465 (default: off)\n"
	"  --user NAME          drop privileges to user NAME once the sockets are open\n"
	"  --no-sandbox         do not drop privileges or install the seccomp filter\n"
	"  --no-io-uring        taps get one writev() per frame; by default a burst of a\n"
	"                       guest's frames goes to a tap in one io_uring_enter() (each\n"
	"                       worker has its own ring, restricted to writes)\n"
	"  -v, --verbose        more log output (repeat for debug messages)\n"
	"  --max-guest-mem SIZE guest memory all frontends together may map (address space of\n"
	"                       memory tables and dirty logs; K/M/G/T suffixes; default 64T)\n"
	"  --socket-group NAME  group of every socket= vnetd listens on (a name or gid; default:\n"
	"                       vnetd's own), e.g. libvirt-qemu, so that QEMU run by libvirt\n"
	"                       may connect; --user keeps it as its one supplementary group\n"
	"  --socket-mode OCTAL  permission bits of those sockets, at most 0777 (default 0660)\n"
	"  --poll-us [W:]N|auto poll mode: a TX ring that had work is polled for up to N us\n"
	"                       (0..1000000) before kicks are asked for again; kicks stay off\n"
	"                       meanwhile and idle ports cost nothing; 0: kicks only; auto\n"
	"                       (default): each ring's window adapts to how soon kicks come,\n"
	"                       up to 32 us; W:N sets worker W's alone (repeatable)\n"
	"  --poll-budget NS     auto poll mode: a ring may poll its empty ring for NS ns per\n"
	"                       packet it moves (0..100000, default 2000): polling costs at most\n"
	"                       that much CPU per packet\n"
	"  -h, --help           print this help and exit\n"
	"  --version            print the version and exit\n"
	"\n"
	"Port keys (socket= and exactly one of tap=, xdp= or switch are required):\n"
	"  socket=PATH          vhost-user socket to listen on; the VMM connects to it\n"
	"  client               connect to socket=PATH instead (the VMM listens, e.g. QEMU\n"
	"                       -chardev socket,server=on); reconnect whenever it goes away\n"
	"  tap=IFNAME           backend: the tap interface IFNAME (at most 15 characters)\n"
	"  xdp=IFNAME           backend: AF_XDP sockets on IFNAME's queues (one a queue pair),\n"
	"                       zero-copy where the driver can; no offloads, frames <= 3840 B;\n"
	"                       set up before the sandbox (not by port-add); docs/xdp.md\n"
	"  queue=N              xdp: the first of IFNAME's queues, 0..255 (default 0)\n"
	"  switch[=NAME]        backend: the built-in switch joining the switch ports of one\n"
	"                       segment (NAME: 1..15 of A-Za-z0-9_.-; default: \"default\")\n"
	"  vlan=N               switch: an access port of VLAN N (1..4094) of its segment, an L2\n"
	"                       domain of its own; the guest's tagged frames are dropped\n"
	"  uplink=NAME,trunk=N+M  tap: the tap is the trunk of segment NAME's VLANs N, M (at most\n"
	"                       8): their frames leave it 802.1Q-tagged, tagged frames read from\n"
	"                       it go untagged into their VLAN; other tags are dropped, untagged\n"
	"                       frames stay the port's guest's; offloads off\n"
	"  mac=MAC              guest MAC, unicast XX:XX:XX:XX:XX:XX (default 52:54:00:xx:xx:xx,\n"
	"                       derived from the port index and socket path)\n"
	"  queues=N             queue pairs, 1..16 (default 1; above 1 offers VIRTIO_NET_F_MQ)\n"
	"  mtu=N                offer VIRTIO_NET_F_MTU with MTU N, 68..65535 (default: none)\n"
	"  notf-coal=on|off     offer VIRTIO_NET_F_NOTF_COAL, guest ethtool -C (default on);\n"
	"                       off also turns vq-notf-coal off\n"
	"  vq-notf-coal=on|off  offer VIRTIO_NET_F_VQ_NOTF_COAL, per-queue settings (default on)\n"
	"  tx-mode=kick|timer   kick: transmit as soon as the guest kicks (default); timer: wait\n"
	"                       tx-timer-usecs after a kick, then transmit the whole batch\n"
	"  tx-timer-usecs=N     batching delay of tx-mode=timer, 1..1000000 us (default 50)\n"
	"  coal-persist=on|off  host coalescing defaults (the keys below, vnetctl coalesce for all\n"
	"                       queues of a kind) survive device resets (default off: a reset,\n"
	"                       e.g. a new frontend, sets every parameter to 0 as the spec says);\n"
	"                       required with the keys below\n"
	"  rx-usecs=N           host RX coalescing: notify at most N us after the first packet\n"
	"  rx-frames=N          host RX coalescing: notify once N packets are pending\n"
	"  tx-usecs=N           host TX coalescing: like rx-usecs, for transmit completions\n"
	"  tx-frames=N          host TX coalescing: like rx-frames, for transmit completions\n"
	"  stall-guard=on|off   notify before a coalescing deadline when holding would stall the\n"
	"                       driver: its RX buffers or TX descriptors nearly used up, stall-bytes\n"
	"                       held, or it went idle waiting (default on; docs/coalescing.md)\n"
	"  stall-bytes=N        bytes held that end a hold early, 0 = never (default 0)\n"
	"  stall-idle-usecs=N   TX: a driver that posted nothing this long gets its completions;\n"
	"                       RX: a quarter of it after the guest stopped sending; 0 = never\n"
	"                       (default 2000)\n"
	"  rx-adaptive=on|off   adaptive coalescing of every RX queue: vnetd picks max_usecs and\n"
	"                       max_packets from the traffic (default off; guest values replace\n"
	"                       it until the next reset, host values for all RX queues end it)\n"
	"  tx-adaptive=on|off   the same for every TX queue (default off)\n"
	"  offloads=on|off      offer checksum and TSO/UFO offloads (default on)\n"
	"  event-idx=on|off     offer VIRTIO_RING_F_EVENT_IDX (default on)\n"
	"  indirect=on|off      offer VIRTIO_RING_F_INDIRECT_DESC (default on)\n"
	"  mrg-rxbuf=on|off     offer VIRTIO_NET_F_MRG_RXBUF (default on)\n"
	"  packed=on|off        offer VIRTIO_F_RING_PACKED, packed virtqueues (default off)\n"
	"  in-order=on|off      offer VIRTIO_F_IN_ORDER (default off)\n"
	"  worker=N             the --workers thread that owns the port (default: a tap port the\n"
	"                       one with the fewest ports; switch ports stay on one worker)\n"
	"  queue-workers=A+B+.. switch: queue pair i on worker A, B, ... (one per pair; the port's\n"
	"                       home, its vhost-user and control queue, is worker 0; default: off)\n"
	"  max-mem=SIZE         guest memory the frontend may map: its memory table (each region\n"
	"                       with its mmap offset) and dirty log; K/M/G/T suffixes (default 2T)\n"
	"  max-mem-slots=N      memory regions the frontend may map, 1..509 (default 32;\n"
	"                       GET_MAX_MEM_SLOTS answers it)\n"
	"  migrate-state=on|off offer DEVICE_STATE: a QEMU >= 10 migration carries the port's\n"
	"                       coalescing, control-queue and RSS state (default on)\n"
	"  max-macs=N           switch: MACs the port may hold in the switch's table, 1..4096\n"
	"                       (default 256; beyond, new source MACs are not learnt)\n"
	"  learn-rate=N         switch: new source MACs the port may teach a second, one second's\n"
	"                       worth at once; 0 = no limit (default 100)\n"
	"  port-security=on|off switch: the guest sends only from its MAC (mac=, or the one it\n"
	"                       set with mac-change=on) and allowed-macs=; others dropped (on)\n"
	"  mac-change=on|off    switch: the MAC the driver sets is the port's, not mac= (off)\n"
	"  allowed-macs=M+M...  switch: up to 8 more source MACs, '+' between them (none)\n"
	"  tx-rate=MBIT         limit what the guest sends to MBIT Mbit/s; over it packets wait\n"
	"                       in its ring (0 = no limit, the default; vnetctl rate at run time)\n"
	"  tx-burst=KB          the TX bucket in KiB (default 10 ms of the rate, at least 128)\n"
	"  rx-rate=MBIT         limit what the guest receives; over it packets are dropped, counted\n"
	"  rx-burst=KB          the RX bucket in KiB (default as tx-burst)\n"
	"  flood-rate=N         switch: broadcast, multicast and unknown-unicast frames the port\n"
	"                       may flood a second, over it dropped; 0 = no limit (default 0)\n"
	"  group=NAME|GID       the listening socket's group (default --socket-group)\n"
	"  mode=OCTAL           the listening socket's mode, e.g. 0660 (default --socket-mode)\n"
	"  ips=A[/LEN]+...      switch: IP anti-spoofing, up to 16 IPv4/IPv6 networks the guest\n"
	"                       may send from (and ARP/ND for); others dropped (no list, no check)\n"
	"\n"
	"Coalescing values are 0..4294967295; an unset one is 0. A notification is delayed only\n"
	"while both usecs and frames are non-zero, and is sent when either limit is reached.\n"
	"Host values (these keys, vnetctl coalesce) and guest values (ethtool -C in the guest)\n"
	"replace each other: the last one set applies.\n"
	"\n"
	"Example:\n"
	"  vnetd --port socket=/run/vm1.sock,tap=tap0,queues=2,coal-persist=on,rx-usecs=64,rx-frames=32 \\\n"
	"        --port socket=/run/vm2.sock,switch --control /run/vnetd.sock\n";

/**
 * options_usage() - the --help text.
 *
 * Return: static storage, the same text -h prints.
 */
const char *options_usage(void)
{
	return usage_text;
}

/* The options that take a value, "--name VALUE" or "--name=VALUE". */
enum valued_option {
	OPT_PORT,
	OPT_CONTROL,
	OPT_USER,
	OPT_CONFIG,
	OPT_STATE_DIR,
	OPT_WORKERS,
	OPT_METRICS,
	OPT_MAX_GUEST_MEM,
	OPT_SOCKET_GROUP,
	OPT_SOCKET_MODE,
	OPT_POLL_US,
	OPT_POLL_BUDGET,
	OPT_COUNT,
};

static const char *const valued_names[OPT_COUNT] = {
	[OPT_PORT] = "--port",		 [OPT_CONTROL] = "--control",
	[OPT_USER] = "--user",		 [OPT_CONFIG] = "--config",
	[OPT_STATE_DIR] = "--state-dir", [OPT_WORKERS] = "--workers",
	[OPT_METRICS] = "--metrics",	 [OPT_MAX_GUEST_MEM] = "--max-guest-mem",
	[OPT_SOCKET_GROUP] = "--socket-group", [OPT_SOCKET_MODE] = "--socket-mode",
	[OPT_POLL_US] = "--poll-us",	 [OPT_POLL_BUDGET] = "--poll-budget",
};

/* parse_port() - one --port SPEC into out->ports[out->nports]; errors to stderr. */
static int parse_port(struct vnetd_options *out, const char *spec)
{
	size_t err_len = strlen(spec) + 512; /* a message quotes at most the spec */
	char *err;
	int r;

	if (out->nports >= VNETD_MAX_PORTS) {
		fprintf(stderr, "vnetd: too many --port options (at most %d)\n", VNETD_MAX_PORTS);
		return -1;
	}
	err = malloc(err_len);
	if (!err) {
		fprintf(stderr, "vnetd: out of memory\n");
		return -1;
	}
	r = port_spec_parse(spec, out->nports, &out->ports[out->nports], err, err_len);
	if (r < 0)
		fprintf(stderr, "%s\n", err);
	else
		out->nports++;
	free(err);
	return r;
}

/* check_ports() - cross-port rules; derives default MACs unique among all ports. */
static int check_ports(struct vnetd_options *o)
{
	static const struct port_config *others[VNETD_MAX_PORTS];
	static unsigned index[VNETD_MAX_PORTS];
	char err[256];
	unsigned i, j, n;

	for (i = 0; i < o->nports; i++) {
		if (o->ports[i].worker >= (int)o->workers) {
			fprintf(stderr, "vnetd: --port %u: worker=%d, but --workers is %u (workers "
				"0..%u)\n", i, o->ports[i].worker, o->workers, o->workers - 1);
			return -1;
		}
		for (unsigned k = 0; k < o->ports[i].n_queue_workers; k++)
			if (o->ports[i].queue_workers[k] >= o->workers || o->workers < 2) {
				fprintf(stderr, "vnetd: --port %u: queue-workers= names worker %u, but "
					"--workers is %u (queue-workers= needs 2 or more)\n", i,
					o->ports[i].queue_workers[k], o->workers);
				return -1;
			}
		if (port_spec_check(&o->ports[i], i, others, index, i, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return -1;
		}
		others[i] = &o->ports[i];
		index[i] = i;
	}
	/* Derived MACs: unlike the given ones and the ones derived before. */
	for (i = 0; i < o->nports; i++) {
		if (o->ports[i].mac_given)
			continue;
		for (j = n = 0; j < o->nports; j++)
			if (j != i && (o->ports[j].mac_given || j < i))
				others[n++] = &o->ports[j];
		port_spec_derive_mac(&o->ports[i], i, others, n);
	}
	return 0;
}

/* option_value() - value of "--name VALUE" or "--name=VALUE"; NULL if arg is not --name. */
static const char *option_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);

	if (strncmp(arg, name, len) != 0)
		return NULL;
	if (arg[len] == '=')
		return arg + len + 1;
	if (arg[len] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

static int copy_string_option(const char *name, const char *value, char *dst, size_t size)
{
	if (value[0] == '\0' || strlen(value) >= size) {
		fprintf(stderr, "vnetd: bad value '%s' for %s (expected 1..%zu bytes)\n", value,
			name, size - 1);
		return -1;
	}
	strcpy(dst, value);
	return 0;
}

/* parse_metrics() - --metrics ADDR:PORT, checked now so a typo fails before anything starts. */
static int parse_metrics(const char *value, char *dst, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (strlen(value) >= size || listen_addr_parse(value, &ss, &len) < 0) {
		fprintf(stderr, "vnetd: bad value '%s' for --metrics (expected IPV4:PORT or "
			"[IPV6]:PORT, e.g. 127.0.0.1:9465)\n", value);
		return -1;
	}
	strcpy(dst, value);
	return 0;
}

/*
 * parse_poll_us() - --poll-us N|auto (every worker) or W:N|W:auto (worker W; checked against
 * --workers).
 */
static int parse_poll_us(struct vnetd_options *out, const char *value)
{
	const char *colon = strchr(value, ':');
	const char *v = colon ? colon + 1 : value;
	size_t wlen = colon ? (size_t)(colon - value) : 0;
	unsigned long w = 0, n = VNET_POLL_AUTO;
	char wbuf[8] = "";
	bool ok = !colon || (wlen > 0 && wlen < sizeof(wbuf));

	if (ok && colon) {
		memcpy(wbuf, value, wlen);
		ok = port_spec_parse_ulong(wbuf, 0, 15, &w);
	}
	if (!ok || (strcmp(v, "auto") != 0 && !port_spec_parse_ulong(v, 0, 1000000, &n))) {
		fprintf(stderr, "vnetd: bad value '%s' for --poll-us (expected N, auto, W:N or "
			"W:auto; N 0..1000000 us, W a worker 0..15)\n", value);
		return -1;
	}
	if (colon)
		out->poll_us_worker[w] = (long)n;
	else
		out->poll_us = (unsigned)n;
	return 0;
}

/* apply_option() - the value of one valued option into *out; 0, or -1 (one line to stderr). */
static int apply_option(struct vnetd_options *out, enum valued_option opt, const char *value)
{
	const char *name = valued_names[opt];
	unsigned long n;

	switch (opt) {
	case OPT_PORT:
		return parse_port(out, value);
	case OPT_CONTROL:
		return copy_string_option(name, value, out->control_path,
					  sizeof(out->control_path));
	case OPT_USER:
		return copy_string_option(name, value, out->user, sizeof(out->user));
	case OPT_CONFIG:
		return copy_string_option(name, value, out->config_path, sizeof(out->config_path));
	case OPT_STATE_DIR:
		return copy_string_option(name, value, out->state_dir, sizeof(out->state_dir));
	case OPT_WORKERS:
		if (!port_spec_parse_ulong(value, 1, 16, &n)) {
			fprintf(stderr, "vnetd: bad value '%s' for --workers (expected 1..16)\n",
				value);
			return -1;
		}
		out->workers = (unsigned)n;
		return 0;
	case OPT_METRICS:
		return parse_metrics(value, out->metrics, sizeof(out->metrics));
	case OPT_MAX_GUEST_MEM:
		if (mem_cap_parse(value, &out->max_guest_mem) < 0) {
			fprintf(stderr, "vnetd: bad value '%s' for --max-guest-mem (expected a "
				"size of 1..2^63 bytes, K/M/G/T suffixes)\n", value);
			return -1;
		}
		return 0;
	case OPT_SOCKET_GROUP:
		if (!port_spec_parse_group(value, &out->socket_gid)) {
			fprintf(stderr, "vnetd: bad value '%s' for --socket-group (expected a group "
				"name known to this host or a numeric gid)\n", value);
			return -1;
		}
		return 0;
	case OPT_SOCKET_MODE:
		if (!port_spec_parse_mode(value, &out->socket_mode) || out->socket_mode == 0) {
			fprintf(stderr, "vnetd: bad value '%s' for --socket-mode (expected octal "
				"permission bits 1..0777, e.g. 0660)\n", value);
			return -1;
		}
		return 0;
	case OPT_POLL_US:
		return parse_poll_us(out, value);
	case OPT_POLL_BUDGET: {
		unsigned long ns;

		if (!port_spec_parse_ulong(value, 0, 100000, &ns)) {
			fprintf(stderr, "vnetd: bad value '%s' for --poll-budget (expected 0..100000 "
				"ns per packet)\n", value);
			return -1;
		}
		out->poll_budget_ns = (unsigned)ns;
		return 0;
	}
	case OPT_COUNT:
		break;
	}
	return -1;
}

/**
 * options_parse() - the command line into the daemon's options.
 * @argc: argument count
 * @argv: the arguments (argv[0] is skipped); not modified
 * @out: overwritten, but for ports[] beyond the ports given (never read; a static struct's
 *       untouched pages cost no memory)
 *
 * Each --port SPEC goes to port_spec_parse(); then the rules between ports (port_spec_check())
 * and their default MACs (port_spec_derive_mac()). Errors, --help and --version are printed
 * here. Start-up only: static scratch space.
 *
 * Return: 0 on success, 1 when --help or --version was printed to stdout (exit 0), -1 on an
 * error (one line printed to stderr).
 */
int options_parse(int argc, char **argv, struct vnetd_options *out)
{
	bool missing = false;
	const char *value;
	unsigned k;
	int i;

	memset(out, 0, offsetof(struct vnetd_options, ports)); /* ports[]: as they come */
	out->workers = 1;
	out->socket_gid = -1;
	out->socket_mode = 0660;
	out->poll_us = VNET_POLL_AUTO; /* docs/design.md, "Polling" */
	out->poll_budget_ns = VNET_POLL_BUDGET_DEFAULT;
	for (k = 0; k < 16; k++)
		out->poll_us_worker[k] = -1;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			fputs(usage_text, stdout);
			return 1;
		}
		if (strcmp(arg, "--version") == 0) {
			fputs("vnetd " VNETD_VERSION "\n", stdout);
			return 1;
		}
		if (strcmp(arg, "--verbose") == 0) {
			out->verbose++;
			continue;
		}
		if (arg[0] == '-' && arg[1] == 'v' && arg[strspn(arg + 1, "v") + 1] == '\0') {
			out->verbose += (int)strlen(arg + 1); /* -v, -vv, ... */
			continue;
		}
		if (strcmp(arg, "--no-sandbox") == 0) {
			out->no_sandbox = true;
			continue;
		}
		if (strcmp(arg, "--no-io-uring") == 0) {
			out->no_io_uring = true;
			continue;
		}
		value = NULL;
		for (k = 0; k < OPT_COUNT; k++) {
			value = option_value(argc, argv, &i, valued_names[k], &missing);
			if (value || missing)
				break;
		}
		if (missing) {
			fprintf(stderr, "vnetd: %s needs a value\n", arg);
			return -1;
		}
		if (!value) {
			fprintf(stderr, "vnetd: %s '%s' (see --help)\n",
				arg[0] == '-' ? "unknown option" : "unexpected argument", arg);
			return -1;
		}
		if (apply_option(out, (enum valued_option)k, value) < 0)
			return -1;
	}
	if (out->nports == 0 && out->config_path[0] == '\0') {
		fprintf(stderr, "vnetd: at least one --port (or --config) is required (see --help)\n");
		return -1;
	}
	for (k = out->workers; k < 16; k++)
		if (out->poll_us_worker[k] >= 0) {
			fprintf(stderr, "vnetd: --poll-us %u:..., but --workers is %u\n", k,
				out->workers);
			return -1;
		}
	if (out->control_path[0] == '\0') {
		fprintf(stderr, "vnetd: --control PATH is required (see --help)\n");
		return -1;
	}
	return check_ports(out);
}
