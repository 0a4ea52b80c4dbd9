/* options.c - vnetd command line parsing: strict key=value port specs, one error line on error. */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_cap.h"
#include "metrics.h"
#include "switch.h"
#include "virtio_net_defs.h"

#define TX_TIMER_USECS_DEFAULT 50
#define TX_TIMER_USECS_MAX 1000000 /* one second: anything longer is a mistake */
#define MTU_MIN 68                 /* IPv4 minimum, as Linux enforces */
#define MTU_MAX 65535

static const char usage_text[] =
	"Usage: vnetd --port socket=PATH,tap=IFNAME|switch[,KEY=VALUE...] [--port ...]\n"
	"             --control PATH [--config FILE] [--state-dir DIR] [--workers N]\n"
	"             [--metrics ADDR:PORT] [--user NAME] [--no-sandbox] [-v|--verbose]\n"
	"             [--max-guest-mem SIZE]\n"
	"             [-h|--help]\n"
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
	"  -v, --verbose        more log output (repeat for debug messages)\n"
	"  --max-guest-mem SIZE guest memory all frontends together may map (address space of\n"
	"                       memory tables and dirty logs; K/M/G/T suffixes; default 64T)\n"
	"  -h, --help           print this help and exit\n"
	"\n"
	"Port keys (socket= and exactly one of tap= or switch are required):\n"
	"  socket=PATH          vhost-user socket to listen on; the VMM connects to it\n"
	"  client               connect to socket=PATH instead (the VMM listens, e.g. QEMU\n"
	"                       -chardev socket,server=on); reconnect whenever it goes away\n"
	"  tap=IFNAME           backend: the tap interface IFNAME (at most 15 characters)\n"
	"  switch               backend: the built-in switch joining every switch port\n"
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
	"  worker=N             the --workers thread that owns the port (default: a tap port the\n"
	"                       one with the fewest ports; switch ports stay on one worker)\n"
	"  max-mem=SIZE         guest memory the frontend may map: its memory table (each region\n"
	"                       with its mmap offset) and dirty log; K/M/G/T suffixes (default 2T)\n"
	"  max-macs=N           switch: MACs the port may hold in the switch's table, 1..4096\n"
	"                       (default 256; beyond, new source MACs are not learnt)\n"
	"  learn-rate=N         switch: new source MACs the port may teach a second, one second's\n"
	"                       worth at once; 0 = no limit (default 100)\n"
	"\n"
	"Coalescing values are 0..4294967295; an unset one is 0. A notification is delayed only\n"
	"while both usecs and frames are non-zero, and is sent when either limit is reached.\n"
	"Host values (these keys, vnetctl coalesce) and guest values (ethtool -C in the guest)\n"
	"replace each other: the last one set applies.\n"
	"\n"
	"Example:\n"
	"  vnetd --port socket=/run/vm1.sock,tap=tap0,queues=2,coal-persist=on,rx-usecs=64,rx-frames=32 \\\n"
	"        --port socket=/run/vm2.sock,switch --control /run/vnetd.sock\n";

const char *options_usage(void)
{
	return usage_text;
}

enum port_key {
	K_SOCKET,
	K_TAP,
	K_SWITCH,
	K_MAC,
	K_QUEUES,
	K_MTU,
	K_NOTF_COAL,
	K_VQ_NOTF_COAL,
	K_TX_MODE,
	K_TX_TIMER_USECS,
	K_RX_USECS,
	K_RX_FRAMES,
	K_TX_USECS,
	K_TX_FRAMES,
	K_OFFLOADS,
	K_EVENT_IDX,
	K_INDIRECT,
	K_MRG_RXBUF,
	K_COAL_PERSIST,
	K_CLIENT,
	K_STALL_GUARD,
	K_STALL_BYTES,
	K_STALL_IDLE_USECS,
	K_RX_ADAPTIVE,
	K_TX_ADAPTIVE,
	K_WORKER,
	K_MAX_MEM,
	K_MAX_MACS,
	K_LEARN_RATE,
	K_COUNT,
};

static const char *const port_key_names[K_COUNT] = {
	[K_SOCKET] = "socket",	       [K_TAP] = "tap",
	[K_SWITCH] = "switch",	       [K_MAC] = "mac",
	[K_QUEUES] = "queues",	       [K_MTU] = "mtu",
	[K_NOTF_COAL] = "notf-coal",   [K_VQ_NOTF_COAL] = "vq-notf-coal",
	[K_TX_MODE] = "tx-mode",       [K_TX_TIMER_USECS] = "tx-timer-usecs",
	[K_RX_USECS] = "rx-usecs",     [K_RX_FRAMES] = "rx-frames",
	[K_TX_USECS] = "tx-usecs",     [K_TX_FRAMES] = "tx-frames",
	[K_OFFLOADS] = "offloads",     [K_EVENT_IDX] = "event-idx",
	[K_INDIRECT] = "indirect",     [K_MRG_RXBUF] = "mrg-rxbuf",
	[K_COAL_PERSIST] = "coal-persist", [K_STALL_GUARD] = "stall-guard",
	[K_STALL_BYTES] = "stall-bytes", [K_STALL_IDLE_USECS] = "stall-idle-usecs",
	[K_RX_ADAPTIVE] = "rx-adaptive", [K_TX_ADAPTIVE] = "tx-adaptive",
	[K_CLIENT] = "client",	       [K_WORKER] = "worker",
	[K_MAX_MEM] = "max-mem",
	[K_MAX_MACS] = "max-macs",     [K_LEARN_RATE] = "learn-rate",
};

#define OFFLOAD_BITS                                                                               \
	(BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |                           \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_GUEST_UFO) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_UFO) |                         \
	 BIT_ULL(VIRTIO_NET_F_CTRL_GUEST_OFFLOADS))

/* Per-port parse state that does not end up in struct port_config as is. */
struct port_parse {
	bool seen[K_COUNT];
	bool mac_given;
	bool notf_coal, vq_notf_coal, offloads, event_idx, indirect, mrg_rxbuf, coal_persist;
};

/* Where port-spec errors go: stderr at start-up, a buffer for run-time ports (the reply). */
static FILE *opt_err;

static int bad_value(const char *key, const char *value, const char *expect)
{
	fprintf(opt_err, "vnetd: bad value '%s' for %s (expected %s)\n", value, key, expect);
	return -1;
}

/* parse_ulong() - decimal only: digits and nothing else, within [min, max]. */
static bool parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9') /* strtoul would take spaces, signs and "-1" */
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_u32_key(const char *key, const char *value, uint32_t *out)
{
	unsigned long v;

	if (!parse_ulong(value, 0, UINT32_MAX, &v))
		return bad_value(key, value, "0..4294967295");
	*out = (uint32_t)v;
	return 0;
}

static int parse_on_off(const char *key, const char *value, bool *out)
{
	if (strcmp(value, "on") == 0)
		*out = true;
	else if (strcmp(value, "off") == 0)
		*out = false;
	else
		return bad_value(key, value, "on or off");
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* parse_mac() - exactly XX:XX:XX:XX:XX:XX; rejects multicast and all-zero addresses. */
static int parse_mac(const char *value, uint8_t mac[6])
{
	const char *s = value;
	int i, hi, lo;

	for (i = 0; i < 6; i++) {
		hi = hex_digit(s[0]);
		lo = hi < 0 ? -1 : hex_digit(s[1]);
		if (lo < 0 || s[2] != (i == 5 ? '\0' : ':'))
			return bad_value("mac", value, "XX:XX:XX:XX:XX:XX");
		mac[i] = (uint8_t)(hi << 4 | lo);
		s += 3;
	}
	if (mac[0] & 1)
		return bad_value("mac", value, "a unicast address");
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return bad_value("mac", value, "a non-zero address");
	return 0;
}

/* Linux dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace. */
static bool valid_ifname(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= 16 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strpbrk(name, "/: \t\n\r\v\f") == NULL;
}

/* default_mac() - 52:54:00 (QEMU's locally administered unicast prefix) + a hash. */
static void default_mac(unsigned index, const char *socket_path, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	const unsigned char *p;

	for (p = (const unsigned char *)socket_path; *p; p++)
		h = (h ^ *p) * 16777619u;
	h ^= (index + 1) * 0x9e3779b9u;
	h ^= h >> 15;
	mac[0] = 0x52;
	mac[1] = 0x54;
	mac[2] = 0x00;
	mac[3] = (uint8_t)(h >> 16);
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)h;
}

/* mac_bump() - the next address after a clash: the low 24 bits (the hash part) plus one. */
static void mac_bump(uint8_t mac[6])
{
	uint32_t suffix = (uint32_t)mac[3] << 16 | (uint32_t)mac[4] << 8 | mac[5];

	suffix++;
	mac[3] = (uint8_t)(suffix >> 16);
	mac[4] = (uint8_t)(suffix >> 8);
	mac[5] = (uint8_t)suffix;
}

static int apply_port_key(struct port_config *pc, struct port_parse *pp, enum port_key key,
			  const char *value)
{
	struct vnet_dev_params *d = &pc->dev;
	const char *name = port_key_names[key];
	unsigned long v;

	switch (key) {
	case K_SOCKET:
		if (value[0] == '\0' || strlen(value) >= sizeof(pc->socket_path))
			return bad_value(name, value, "a path of 1..107 bytes");
		strcpy(pc->socket_path, value);
		return 0;
	case K_TAP:
		if (!valid_ifname(value))
			return bad_value(name, value, "an interface name of 1..15 bytes");
		strcpy(pc->tap_name, value);
		pc->backend = PORT_BACKEND_TAP;
		return 0;
	case K_SWITCH:
		pc->backend = PORT_BACKEND_SWITCH;
		return 0;
	case K_CLIENT:
		pc->client = true;
		return 0;
	case K_WORKER:
		if (!parse_ulong(value, 0, 15, &v))
			return bad_value(name, value, "0..15 (a worker of --workers)");
		pc->worker = (int)v;
		return 0;
	case K_MAX_MEM:
		if (mem_cap_parse(value, &pc->max_mem) < 0)
			return bad_value(name, value, "a size of 1..2^63 bytes, K/M/G/T suffixes");
		return 0;
	case K_MAC:
		pp->mac_given = true;
		return parse_mac(value, d->mac);
	case K_QUEUES:
		if (!parse_ulong(value, 1, VNET_MAX_QUEUE_PAIRS, &v))
			return bad_value(name, value, "1..16");
		d->queue_pairs = (uint16_t)v;
		return 0;
	case K_MTU:
		if (!parse_ulong(value, MTU_MIN, MTU_MAX, &v))
			return bad_value(name, value, "68..65535");
		d->mtu = (uint16_t)v;
		return 0;
	case K_TX_MODE:
		if (strcmp(value, "kick") == 0)
			d->tx_mode = VNET_TX_KICK;
		else if (strcmp(value, "timer") == 0)
			d->tx_mode = VNET_TX_TIMER;
		else
			return bad_value(name, value, "kick or timer");
		return 0;
	case K_TX_TIMER_USECS:
		if (!parse_ulong(value, 1, TX_TIMER_USECS_MAX, &v))
			return bad_value(name, value, "1..1000000");
		d->tx_timer_usecs = (uint32_t)v;
		return 0;
	case K_RX_USECS:
		d->host_coal_rx_set = true;
		return parse_u32_key(name, value, &d->host_coal_rx.max_usecs);
	case K_RX_FRAMES:
		d->host_coal_rx_set = true;
		return parse_u32_key(name, value, &d->host_coal_rx.max_packets);
	case K_TX_USECS:
		d->host_coal_tx_set = true;
		return parse_u32_key(name, value, &d->host_coal_tx.max_usecs);
	case K_TX_FRAMES:
		d->host_coal_tx_set = true;
		return parse_u32_key(name, value, &d->host_coal_tx.max_packets);
	case K_NOTF_COAL:
		return parse_on_off(name, value, &pp->notf_coal);
	case K_VQ_NOTF_COAL:
		return parse_on_off(name, value, &pp->vq_notf_coal);
	case K_OFFLOADS:
		return parse_on_off(name, value, &pp->offloads);
	case K_EVENT_IDX:
		return parse_on_off(name, value, &pp->event_idx);
	case K_INDIRECT:
		return parse_on_off(name, value, &pp->indirect);
	case K_MRG_RXBUF:
		return parse_on_off(name, value, &pp->mrg_rxbuf);
	case K_COAL_PERSIST:
		return parse_on_off(name, value, &pp->coal_persist);
	case K_STALL_GUARD:
		return parse_on_off(name, value, &d->stall_guard.on);
	case K_STALL_BYTES:
		return parse_u32_key(name, value, &d->stall_guard.bytes);
	case K_STALL_IDLE_USECS:
		return parse_u32_key(name, value, &d->stall_guard.idle_usecs);
	case K_RX_ADAPTIVE:
		return parse_on_off(name, value, &d->rx_adaptive);
	case K_TX_ADAPTIVE:
		return parse_on_off(name, value, &d->tx_adaptive);
	case K_MAX_MACS:
		if (!parse_ulong(value, 1, SWITCH_FDB_SIZE, &v))
			return bad_value(name, value, "1..4096 (the switch's table size)");
		pc->max_macs = (unsigned)v;
		return 0;
	case K_LEARN_RATE:
		if (!parse_ulong(value, 0, SWITCH_LEARN_RATE_MAX, &v))
			return bad_value(name, value, "0..1000000 new MACs a second (0: no limit)");
		pc->learn_rate = (unsigned)v;
		return 0;
	case K_COUNT:
		break;
	}
	return -1;
}

/* parse_port_item() - one "key=value" (or bare "switch") of a --port spec. */
static int parse_port_item(struct port_config *pc, struct port_parse *pp, char *item)
{
	char *eq = strchr(item, '=');
	const char *value = NULL;
	unsigned k;

	if (eq) {
		*eq = '\0';
		value = eq + 1;
	}
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(item, port_key_names[k]) == 0)
			break;
	if (k == K_COUNT) {
		fprintf(opt_err, "vnetd: bad --port key '%s'\n", item);
		return -1;
	}
	if (pp->seen[k]) {
		fprintf(opt_err, "vnetd: --port key '%s' given twice\n", item);
		return -1;
	}
	pp->seen[k] = true;
	if ((k == K_SWITCH || k == K_CLIENT) && value) {
		fprintf(opt_err, "vnetd: --port key '%s' takes no value (got '%s')\n", item, value);
		return -1;
	}
	if (k != K_SWITCH && k != K_CLIENT && !value) {
		fprintf(opt_err, "vnetd: --port key '%s' needs a value (%s=...)\n", item, item);
		return -1;
	}
	return apply_port_key(pc, pp, (enum port_key)k, value);
}

/* finish_port() - required keys, conflicts, and the feature mask from the on/off keys. */
static int finish_port(struct port_config *pc, const struct port_parse *pp, unsigned index)
{
	struct vnet_dev_params *d = &pc->dev;

	if (!pp->seen[K_SOCKET]) {
		fprintf(opt_err, "vnetd: --port p%u needs socket=PATH\n", index);
		return -1;
	}
	if (pp->seen[K_TAP] == pp->seen[K_SWITCH]) {
		fprintf(opt_err, "vnetd: --port p%u needs exactly one of tap=IFNAME or switch\n",
			index);
		return -1;
	}
	if ((pp->seen[K_MAX_MACS] || pp->seen[K_LEARN_RATE]) && !pp->seen[K_SWITCH]) {
		fprintf(opt_err,
			"vnetd: --port p%u: max-macs= and learn-rate= are for switch ports\n", index);
		return -1;
	}
	if (pp->seen[K_VQ_NOTF_COAL] && pp->vq_notf_coal && !pp->notf_coal) {
		fprintf(opt_err, "vnetd: --port p%u: vq-notf-coal=on conflicts with notf-coal=off\n",
			index);
		return -1;
	}
	if ((d->host_coal_rx_set || d->host_coal_tx_set) && !pp->coal_persist) {
		fprintf(opt_err,
			"vnetd: --port p%u: rx-/tx-usecs/frames are host defaults that must outlive "
			"device resets (the virtio spec resets coalescing to 0): add coal-persist=on\n",
			index);
		return -1;
	}
	d->coal_persist = pp->coal_persist;
	if (!pp->notf_coal)
		d->features_mask &= ~(BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |
				      BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL));
	if (!pp->vq_notf_coal)
		d->features_mask &= ~BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL);
	if (!pp->offloads)
		d->features_mask &= ~OFFLOAD_BITS;
	if (!pp->event_idx)
		d->features_mask &= ~BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	if (!pp->indirect)
		d->features_mask &= ~BIT_ULL(VIRTIO_RING_F_INDIRECT_DESC);
	if (!pp->mrg_rxbuf)
		d->features_mask &= ~BIT_ULL(VIRTIO_NET_F_MRG_RXBUF);
	return 0;
}

/* parse_port_spec() - SPEC into *pc (fully overwritten) for port `index`; errors to opt_err. */
static int parse_port_spec(struct port_config *pc, const char *spec, unsigned index)
{
	struct port_parse pp = {
		.notf_coal = true,
		.vq_notf_coal = true,
		.offloads = true,
		.event_idx = true,
		.indirect = true,
		.mrg_rxbuf = true,
	};
	char *copy, *item, *next;
	int ret = 0;

	memset(pc, 0, sizeof(*pc));
	pc->worker = -1;
	pc->max_macs = SWITCH_FDB_PORT_MAX;
	pc->learn_rate = SWITCH_LEARN_RATE;
	pc->dev.queue_pairs = 1;
	pc->dev.features_mask = ~0ull;
	pc->dev.tx_mode = VNET_TX_KICK;
	pc->dev.tx_timer_usecs = TX_TIMER_USECS_DEFAULT;
	pc->dev.stall_guard = (struct vnet_stall_guard){true, VNET_STALL_BYTES_DEFAULT,
						       VNET_STALL_IDLE_USECS_DEFAULT};

	copy = strdup(spec);
	if (!copy) {
		fprintf(opt_err, "vnetd: out of memory\n");
		return -1;
	}
	for (item = copy; item && ret == 0; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		if (item[0] == '\0') {
			fprintf(opt_err, "vnetd: empty key in --port '%s'\n", spec);
			ret = -1;
		} else {
			ret = parse_port_item(pc, &pp, item);
		}
	}
	free(copy);
	if (ret == 0)
		ret = finish_port(pc, &pp, index);
	pc->mac_given = pp.mac_given;
	return ret;
}

/* parse_port() - one --port SPEC into out->ports[out->nports]. */
static int parse_port(struct vnetd_options *out, const char *spec, bool *mac_given)
{
	if (out->nports >= VNETD_MAX_PORTS) {
		fprintf(opt_err, "vnetd: too many --port options (at most %d)\n", VNETD_MAX_PORTS);
		return -1;
	}
	if (parse_port_spec(&out->ports[out->nports], spec, out->nports) < 0)
		return -1;
	mac_given[out->nports] = out->ports[out->nports].mac_given;
	out->nports++;
	return 0;
}

static bool port_clash(const struct port_config *pc, unsigned i, const struct port_config *other,
		       unsigned j);

/* check_ports() - cross-port rules; derives default MACs unique among all ports. */
static int check_ports(struct vnetd_options *o, const bool *mac_given)
{
	unsigned i, j;
	bool clash;

	for (i = 0; i < o->nports; i++) {
		if (o->ports[i].worker >= (int)o->workers) {
			fprintf(opt_err, "vnetd: --port %u: worker=%d, but --workers is %u (workers 0..%u)\n",
				i, o->ports[i].worker, o->workers, o->workers - 1);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (port_clash(&o->ports[i], i, &o->ports[j], j))
				return -1;
	}
	/* Derived MACs: step the last three bytes until no other port has the address. */
	for (i = 0; i < o->nports; i++) {
		uint8_t *mac = o->ports[i].dev.mac;

		if (mac_given[i])
			continue;
		default_mac(i, o->ports[i].socket_path, mac);
		do {
			clash = false;
			for (j = 0; j < o->nports && !clash; j++)
				clash = j != i && (mac_given[j] || j < i) &&
					memcmp(o->ports[j].dev.mac, mac, 6) == 0;
			if (clash) {
				mac_bump(mac);
			}
		} while (clash);
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

/* port_clash() - whether pc and other (port `j`) may not both exist; one line to opt_err. */
static bool port_clash(const struct port_config *pc, unsigned i, const struct port_config *other,
		       unsigned j)
{
	if (strcmp(pc->socket_path, other->socket_path) == 0) {
		fprintf(opt_err, "vnetd: ports p%u and p%u both use socket '%s'\n", j, i,
			pc->socket_path);
		return true;
	}
	if (pc->backend == PORT_BACKEND_TAP && other->backend == PORT_BACKEND_TAP &&
	    strcmp(pc->tap_name, other->tap_name) == 0) {
		fprintf(opt_err, "vnetd: ports p%u and p%u both use tap '%s'\n", j, i, pc->tap_name);
		return true;
	}
	if (pc->mac_given && other->mac_given && memcmp(pc->dev.mac, other->dev.mac, 6) == 0) {
		fprintf(opt_err, "vnetd: ports p%u and p%u have the same mac\n", j, i);
		return true;
	}
	return false;
}

/* runtime_port() - the body of options_runtime_port() with opt_err set. */
static int runtime_port(const char *spec, unsigned index, struct port_config *pc,
			const struct port_config *const *others, const unsigned *other_index,
			unsigned n)
{
	uint8_t *mac = pc->dev.mac;
	bool clash;

	if (parse_port_spec(pc, spec, index) < 0)
		return -1;
	for (unsigned j = 0; j < n; j++)
		if (port_clash(pc, index, others[j], other_index[j]))
			return -1;
	if (pc->mac_given)
		return 0;
	default_mac(index, pc->socket_path, mac);
	do {
		clash = false;
		for (unsigned j = 0; j < n && !clash; j++)
			clash = memcmp(others[j]->dev.mac, mac, 6) == 0;
		if (clash) {
			mac_bump(mac);
		}
	} while (clash);
	return 0;
}

int options_runtime_port(const char *spec, unsigned index, struct port_config *pc,
			 const struct port_config *const *others, const unsigned *other_index,
			 unsigned n, char *err, size_t err_len)
{
	FILE *saved = opt_err;
	int r;

	err[0] = '\0';
	opt_err = fmemopen(err, err_len, "w");
	if (!opt_err) {
		opt_err = saved;
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	r = runtime_port(spec, index, pc, others, other_index, n);
	fclose(opt_err);
	opt_err = saved;
	err[strcspn(err, "\n")] = '\0';
	return r;
}

/* parse_metrics() - --metrics ADDR:PORT, checked now so a typo fails before anything starts. */
static int parse_metrics(const char *value, char *dst, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (strlen(value) >= size || metrics_parse_addr(value, &ss, &len) < 0) {
		fprintf(stderr, "vnetd: bad value '%s' for --metrics (expected IPV4:PORT or "
			"[IPV6]:PORT, e.g. 127.0.0.1:9465)\n", value);
		return -1;
	}
	strcpy(dst, value);
	return 0;
}

int options_parse(int argc, char **argv, struct vnetd_options *out)
{
	static const char *const valued[] = {"--port",	    "--control", "--user",   "--config",
					     "--state-dir", "--workers", "--metrics", "--max-guest-mem"};
	unsigned long n;
	bool mac_given[VNETD_MAX_PORTS] = {false};
	bool missing = false;
	const char *value;
	unsigned k;
	int i;

	memset(out, 0, sizeof(*out));
	out->workers = 1;
	opt_err = stderr;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			fputs(usage_text, stdout);
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
		value = NULL;
		for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
			value = option_value(argc, argv, &i, valued[k], &missing);
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
		if (k == 0 && parse_port(out, value, mac_given) < 0)
			return -1;
		if (k == 1 && copy_string_option("--control", value, out->control_path,
						  sizeof(out->control_path)) < 0)
			return -1;
		if (k == 2 && copy_string_option("--user", value, out->user, sizeof(out->user)) < 0)
			return -1;
		if (k == 3 && copy_string_option("--config", value, out->config_path,
						  sizeof(out->config_path)) < 0)
			return -1;
		if (k == 4 && copy_string_option("--state-dir", value, out->state_dir,
						  sizeof(out->state_dir)) < 0)
			return -1;
		if (k == 5) {
			if (!parse_ulong(value, 1, 16, &n)) {
				fprintf(stderr, "vnetd: bad value '%s' for --workers (expected 1..16)\n",
					value);
				return -1;
			}
			out->workers = (unsigned)n;
		}
		if (k == 6 && parse_metrics(value, out->metrics, sizeof(out->metrics)) < 0)
			return -1;
		if (k == 7 && mem_cap_parse(value, &out->max_guest_mem) < 0) {
			fprintf(stderr, "vnetd: bad value '%s' for --max-guest-mem (expected a size "
				"of 1..2^63 bytes, K/M/G/T suffixes)\n", value);
			return -1;
		}
	}
	if (out->nports == 0 && out->config_path[0] == '\0') {
		fprintf(stderr, "vnetd: at least one --port (or --config) is required (see --help)\n");
		return -1;
	}
	if (out->control_path[0] == '\0') {
		fprintf(stderr, "vnetd: --control PATH is required (see --help)\n");
		return -1;
	}
	return check_ports(out, mac_given);
}
