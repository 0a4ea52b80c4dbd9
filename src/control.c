/* control.c - control socket: one JSON request per line (jansson): ports, stats, coalescing. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "control_internal.h"
#include "log.h"
#include "stats.h"
#include "virtio_net_defs.h"

/* ---- Listening socket ---------------------------------------------------------------------- */

/* stale_socket_check() - 0 if path is free or a dead socket (removed), -1 otherwise (logged). */
static int stale_socket_check(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, alive;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		log_err("control: %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_err("control: %s exists and is not a socket; not removing it", path);
		return -1;
	}
	/* Non-blocking: a listener that never accepts (its backlog full) must not hold start-up;
	 * EAGAIN says someone listens there as surely as a connection does. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("control: socket: %s", strerror(errno));
		return -1;
	}
	alive = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0 || errno == EAGAIN ||
		errno == EINPROGRESS;
	close(fd);
	if (alive) {
		log_err("control: %s is in use by a running process", path);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		log_err("control: cannot remove stale %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int control_listen(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	mode_t old_umask;
	int fd, ret;

	if (path[0] == '\0' || strlen(path) >= sizeof(addr.sun_path)) {
		log_err("control: socket path '%s' is empty or too long", path);
		return -1;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if (stale_socket_check(path, &addr) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("control: socket: %s", strerror(errno));
		return -1;
	}
	/* The node is 0600 from its creation: the socket's own mode (fchmod before bind) under a
	 * umask that keeps it. Never chmod() by path afterwards: a symlink swapped in there would
	 * be followed. */
	if (fchmod(fd, 0600) < 0)
		log_warn("control: fchmod of the socket: %s", strerror(errno));
	old_umask = umask(0177);
	ret = bind(fd, (const struct sockaddr *)&addr, sizeof(addr));
	umask(old_umask);
	if (ret < 0) {
		log_err("control: bind %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (listen(fd, 16) < 0) {
		log_err("control: %s: %s", addr.sun_path, strerror(errno));
		unlink(path);
		close(fd);
		return -1;
	}
	return fd;
}

/**
 * control_unlink() - remove the control socket at the end.
 * @path: --control.
 *
 * Only a socket is removed: whatever else may be there by now is not ours.
 */
void control_unlink(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
}

/* ---- Requests ------------------------------------------------------------------------------ */

typedef json_t *(*command_fn)(struct port *const *ports, unsigned nports, json_t *req);

/* Counters are uint64_t; JSON integers here are signed 64-bit. */
static json_t *ju64(uint64_t v)
{
	return json_integer(v > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)v);
}

/* lossy_string() - a JSON string even for invalid UTF-8 (paths, truncated messages): '?'s. */
static json_t *lossy_string(const char *text)
{
	json_t *s = json_string(text);
	char *copy, *p;

	if (s || !(copy = strdup(text)))
		return s;
	for (p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	s = json_string(copy);
	free(copy);
	return s;
}

json_t *ctl_error_reply(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:o}", "ok", 0, "error", lossy_string(msg));
}

json_t *ctl_ok_reply(void)
{
	return json_pack("{s:b}", "ok", 1);
}

json_t *ctl_check_keys(json_t *req, const char *cmd, const char *const *allowed)
{
	const char *key;
	const char *const *a;
	json_t *v;

	json_object_foreach(req, key, v) {
		if (strcmp(key, "cmd") == 0)
			continue;
		for (a = allowed; *a && strcmp(*a, key) != 0; a++)
			;
		if (!*a)
			return ctl_error_reply("unknown key '%.64s' for cmd '%s'", key, cmd);
	}
	return NULL;
}

struct port *ctl_find_port(struct port *const *ports, unsigned nports, json_t *v, json_t **err)
{
	unsigned i;

	if (json_is_string(v)) {
		for (i = 0; i < nports; i++)
			if (strcmp(port_name(ports[i]), json_string_value(v)) == 0)
				return ports[i];
		*err = ctl_error_reply("no port named '%.64s'", json_string_value(v));
		return NULL;
	}
	if (json_is_integer(v)) {
		for (i = 0; i < nports; i++)
			if ((json_int_t)port_index(ports[i]) == json_integer_value(v))
				return ports[i];
		*err = ctl_error_reply("no port with index %" JSON_INTEGER_FORMAT,
				   json_integer_value(v));
		return NULL;
	}
	*err = ctl_error_reply("\"port\" must be a port name or index");
	return NULL;
}

static json_t *port_info(struct port *p)
{
	const struct port_config *cfg = port_config(p);
	struct vnet_dev *dev = port_dev(p);
	const uint8_t *m = vnet_dev_mac(dev);
	uint64_t features = vnet_dev_features(dev);
	char mac[18], feat[19];

	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	snprintf(feat, sizeof(feat), "0x%" PRIx64, features);
	return json_pack("{s:s,s:I,s:o,s:s,s:o,s:b,s:o,s:s,s:b,s:s,s:b,s:b,s:i,s:i,s:b,s:b,s:o,s:o}",
			 "name", port_name(p), "index", (json_int_t)port_index(p),
			 "socket", lossy_string(cfg->socket_path),
			 "backend", cfg->backend == PORT_BACKEND_TAP ? "tap" : "switch",
			 "tap", cfg->backend == PORT_BACKEND_TAP ? lossy_string(cfg->tap_name)
								  : json_null(),
			 "connected", port_connected(p), "connections", ju64(port_connections(p)),
			 "mac", mac, "link_up", vnet_dev_link_up(dev), "features", feat,
			 "notf_coal", (features & BIT_ULL(VIRTIO_NET_F_NOTF_COAL)) != 0,
			 "vq_notf_coal", (features & BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL)) != 0,
			 "queue_pairs", (int)cfg->dev.queue_pairs,
			 "active_pairs", (int)vnet_dev_active_pairs(dev), "coal_persist",
			 vnet_dev_coal_persist(dev), "dirty_log", port_dirty_logging(p),
			 "rarps", ju64(port_rarps(p)), "dirty_log_dropped",
			 ju64(port_dirty_log_dropped(p)));
}

/* The worker (event-loop thread) serving the port, in "ports" and "stats". */
static void add_worker(json_t *o, struct port *p)
{
	if (o)
		json_object_set_new(o, "worker", json_integer((json_int_t)port_worker(p)));
}

static json_t *mac_json(const uint8_t *m)
{
	char mac[18];

	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return json_string(mac);
}

/* The driver's RX mode and MAC filter tables (VIRTIO_NET_CTRL_RX, CTRL_MAC), in "ports". */
static void add_rx_filter(json_t *o, const struct vnet_dev *dev)
{
	const struct vnet_rx_filter *f = vnet_dev_rx_filter(dev);
	const struct {
		const char *name;
		bool on;
	} modes[] = {{"promisc", f->promisc}, {"allmulti", f->allmulti}, {"alluni", f->alluni},
		     {"nomulti", f->nomulti}, {"nouni", f->nouni},	    {"nobcast", f->nobcast}};
	json_t *mode = json_array(), *uc = json_array(), *mc = json_array();

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (modes[i].on)
			json_array_append_new(mode, json_string(modes[i].name));
	for (unsigned i = 0; i < f->n_uc && i < VNET_MAC_TABLE_SIZE; i++)
		json_array_append_new(uc, mac_json(f->uc[i]));
	for (unsigned i = 0; i < f->n_mc && i < VNET_MAC_TABLE_SIZE; i++)
		json_array_append_new(mc, mac_json(f->mc[i]));
	json_object_set_new(o, "rx_mode", mode);
	json_object_set_new(o, "mac_table",
			    json_pack("{s:o,s:o,s:b,s:b}", "unicast", uc, "multicast", mc,
				      "unicast_overflow", f->uc_overflow, "multicast_overflow",
				      f->mc_overflow));
}

/* The port's coalescing modes: stall guard and adaptive, in "ports" and "stats". */
static void add_coal_modes(json_t *o, const struct vnet_dev *dev)
{
	const struct vnet_stall_guard *g = vnet_dev_stall_guard(dev);

	if (!o)
		return;
	json_object_set_new(o, "stall_guard", json_boolean(g->on));
	json_object_set_new(o, "stall_bytes", ju64(g->bytes));
	json_object_set_new(o, "stall_idle_usecs", ju64(g->idle_usecs));
	json_object_set_new(o, "rx_adaptive", json_boolean(vnet_dev_adaptive_mode(dev,
									       VNET_QUEUE_RX)));
	json_object_set_new(o, "tx_adaptive", json_boolean(vnet_dev_adaptive_mode(dev,
									       VNET_QUEUE_TX)));
}

static json_t *cmd_ports(struct port *const *ports, unsigned nports, json_t *req)
{
	static const char *const keys[] = {NULL};
	json_t *err = ctl_check_keys(req, "ports", keys);
	json_t *list;
	unsigned i;

	if (err)
		return err;
	list = json_array();
	for (i = 0; i < nports; i++) {
		json_t *o = port_info(ports[i]);

		add_coal_modes(o, port_dev(ports[i]));
		add_worker(o, ports[i]);
		if (o)
			add_rx_filter(o, port_dev(ports[i]));
		json_array_append_new(list, o);
	}
	return json_pack("{s:b,s:o}", "ok", 1, "ports", list);
}

/*
 * lateness_summary() - nearest-rank percentiles of the lateness histogram, in us: the upper
 * bound of the bucket (about 19% wide) holding the rank; max is exact. Every value since the
 * last reset counts, so samples == total.
 */
static json_t *lateness_summary(struct port *p, unsigned index)
{
	struct lat_hist copy, *h = &copy;

	if (!stats_queue_lateness(p, index, h) || h->count == 0)
		return json_pack("{s:i,s:I,s:n,s:n,s:n}", "samples", 0, "total", (json_int_t)0,
				 "p50", "p99", "max");
	return json_pack("{s:o,s:o,s:f,s:f,s:f}", "samples", ju64(h->count), "total",
			 ju64(h->count), "p50", lat_hist_percentile(h, 50) / 1e3,
			 "p99", lat_hist_percentile(h, 99) / 1e3, "max", h->max_ns / 1e3);
}

/* queue_stats() - one queue, read through stats.c like the Prometheus metrics. */
static json_t *queue_stats(struct port *p, unsigned index)
{
	struct stats_queue sq;
	json_t *o;

	if (!stats_queue_read(p, index, &sq))
		return NULL;
	o = json_pack("{s:i,s:s,s:b,s:b,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:s,"
			 "s:o}",
			 "index", (int)index, "kind", sq.kind,
			 "enabled", sq.enabled, "started", sq.started, "broken", sq.broken,
			 "packets", ju64(sq.packets), "bytes", ju64(sq.bytes),
			 "kicks", ju64(sq.kicks), "notifications", ju64(sq.notifications),
			 "suppressed", ju64(sq.suppressed), "held", ju64(sq.held),
			 "timer_notifications", ju64(sq.timer),
			 "dropped", ju64(sq.dropped), "rx_no_buffers", ju64(sq.rx_no_buffers),
			 "max_packets", (json_int_t)sq.max_packets,
			 "max_usecs", (json_int_t)sq.max_usecs,
			 "set_by", sq.set_by,
			 "lateness_us", lateness_summary(p, index));
	if (o) {
		json_object_set_new(o, "yields", ju64(sq.yields));
		json_object_set_new(o, "rx_direct", ju64(sq.rx_direct));
		json_object_set_new(o, "stop_notifications", ju64(sq.stop));
		json_object_set_new(o, "early_idle", ju64(sq.early_idle));
		json_object_set_new(o, "early_ring", ju64(sq.early_ring));
		json_object_set_new(o, "early_bytes", ju64(sq.early_bytes));
		json_object_set_new(o, "adaptive", json_boolean(sq.adaptive));
		json_object_set_new(o, "adaptive_state", json_string(sq.adaptive_state));
		json_object_set_new(o, "adaptive_level", json_integer(sq.adaptive_level));
		json_object_set_new(o, "adaptive_changes", ju64(sq.adaptive_changes));
		json_object_set_new(o, "adaptive_windows", ju64(sq.adaptive_windows));
	}
	return o;
}

static json_t *port_stats(struct port *p)
{
	json_t *queues = json_array(), *q;
	struct stats_port sp;
	unsigned i;

	stats_port_read(p, &sp);
	for (i = 0; i < sp.nqueues; i++)
		if ((q = queue_stats(p, i)))
			json_array_append_new(queues, q);
	q = json_pack("{s:s,s:I,s:I,s:o}", "name", sp.name, "index", (json_int_t)sp.index, "worker",
		      (json_int_t)sp.worker, "queues", queues);
	add_coal_modes(q, port_dev(p));
	if (q && sp.is_switch)
		json_object_set_new(
		    q, "switch",
		    json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "macs", ju64(sp.sw.macs), "max_macs",
			      ju64(sp.sw.max_macs), "learn_rate", ju64(sp.sw.learn_rate),
			      "mac_limit_hits", ju64(sp.sw.mac_limit_hits), "learn_rate_hits",
			      ju64(sp.sw.learn_rate_hits), "flow_cache_misses",
			      ju64(sp.sw.cache_misses)));
	return q;
}

static json_t *cmd_stats(struct port *const *ports, unsigned nports, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = ctl_check_keys(req, "stats", keys);
	json_t *v = json_object_get(req, "port");
	struct port *only = NULL;
	json_t *list;
	unsigned i;

	if (err)
		return err;
	if (v && !(only = ctl_find_port(ports, nports, v, &err)))
		return err;
	list = json_array();
	for (i = 0; i < nports; i++)
		if (!only || ports[i] == only)
			json_array_append_new(list, port_stats(ports[i]));
	return json_pack("{s:b,s:o}", "ok", 1, "ports", list);
}

static json_t *cmd_reset_stats(struct port *const *ports, unsigned nports, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = ctl_check_keys(req, "reset-stats", keys);
	json_t *v = json_object_get(req, "port");
	struct port *only = NULL;
	struct vnet_queue *q;
	unsigned i, j;

	if (err)
		return err;
	if (v && !(only = ctl_find_port(ports, nports, v, &err)))
		return err;
	for (i = 0; i < nports; i++) {
		if (only && ports[i] != only)
			continue;
		for (j = 0; j < vnet_dev_num_queues(port_dev(ports[i])); j++)
			if ((q = vnet_dev_queue(port_dev(ports[i]), j)))
				memset(&q->stats, 0, sizeof(q->stats));
	}
	return ctl_ok_reply();
}

/* ---- Run-time ports: the daemon does the work (control_set_port_ops) ---------------------- */

static const struct control_port_ops *port_ops;
static void *port_ops_ctx;

void control_set_port_ops(const struct control_port_ops *ops, void *ctx)
{
	port_ops = ops;
	port_ops_ctx = ctx;
}

static json_t *cmd_port_add(struct port *const *ports, unsigned nports, json_t *req)
{
	static const char *const keys[] = {"spec", NULL};
	json_t *err = ctl_check_keys(req, "port-add", keys);
	json_t *spec = json_object_get(req, "spec");
	char name[16], msg[256];

	(void)ports;
	(void)nports;
	if (err)
		return err;
	if (!json_is_string(spec) || strlen(json_string_value(spec)) != json_string_length(spec))
		return ctl_error_reply("\"spec\" must be a string: a --port SPEC");
	if (!port_ops)
		return ctl_error_reply("run-time ports are not available");
	if (port_ops->add(port_ops_ctx, json_string_value(spec), name, sizeof(name), msg,
			  sizeof(msg)) < 0)
		return ctl_error_reply("%s", msg);
	return json_pack("{s:b,s:s}", "ok", 1, "port", name);
}

static json_t *cmd_port_del(struct port *const *ports, unsigned nports, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = ctl_check_keys(req, "port-del", keys);
	struct port *p;
	char msg[256];

	if (err)
		return err;
	if (!(p = ctl_find_port(ports, nports, json_object_get(req, "port"), &err)))
		return err;
	if (!port_ops)
		return ctl_error_reply("run-time ports are not available");
	if (port_ops->del(port_ops_ctx, p, msg, sizeof(msg)) < 0)
		return ctl_error_reply("%s", msg);
	return ctl_ok_reply();
}

/* ---- Which requests run beside the workers ------------------------------------------------ */

static const struct control_sync_ops *sync_ops;
static void *sync_ctx;

void control_set_sync_ops(const struct control_sync_ops *ops, void *ctx)
{
	sync_ops = ops;
	sync_ctx = ctx;
}

/*
 * lockfree: the command only reads through stats.c, which is safe while the workers run (the
 * data path is not stopped for it). Every other command runs inside sync_ops' enter/leave (the
 * workers parked): they read fields that are not published for other threads (features, MAC,
 * ...) or change ports — reset-stats included, which zeroes counters whose one writer is the
 * worker, so that worker must not run meanwhile.
 */
static const struct {
	const char *name;
	command_fn run;
	bool lockfree;
} commands[] = {
	{"port-add", cmd_port_add, false},
	{"port-del", cmd_port_del, false},
	{"ports", cmd_ports, false},
	{"stats", cmd_stats, true},
	{"coalesce", cmd_coalesce, false},
	{"reset-stats", cmd_reset_stats, false},
	{"stall-guard", cmd_stall_guard, false},
};

static json_t *dispatch(struct port *const *ports, unsigned nports, const char *line)
{
	json_error_t jerr;
	json_t *req, *cmd, *reply;
	size_t i = 0;

	req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (!req)
		return ctl_error_reply("bad JSON at column %d: %s", jerr.column, jerr.text);
	cmd = json_object_get(req, "cmd");
	if (!json_is_object(req)) {
		reply = ctl_error_reply("request must be a JSON object");
	} else if (!json_is_string(cmd)) {
		reply = ctl_error_reply("request needs \"cmd\": a string");
	} else {
		while (i < sizeof(commands) / sizeof(commands[0]) &&
		       strcmp(commands[i].name, json_string_value(cmd)) != 0)
			i++;
		if (i < sizeof(commands) / sizeof(commands[0])) {
			bool sync = sync_ops && !commands[i].lockfree;

			if (sync)
				sync_ops->enter(sync_ctx);
			reply = commands[i].run(ports, nports, req);
			if (sync)
				sync_ops->leave(sync_ctx);
		} else
			reply = ctl_error_reply("unknown cmd '%.64s' (ports, stats, coalesce, "
					    "reset-stats, stall-guard, port-add, port-del)", json_string_value(cmd));
	}
	json_decref(req);
	return reply;
}

char *control_execute(struct port *const *ports, unsigned nports, const char *line)
{
	json_t *reply = dispatch(ports, nports, line);
	char *text;

	if (!reply)
		return NULL;
	text = json_dumps(reply, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(reply);
	return text;
}

/* ---- Clients ------------------------------------------------------------------------------- */

struct control_client {
	int fd;
	bool eof;       /* the peer closed its side: close once the output is sent */
	size_t in_len;  /* bytes in `in` not yet executed (no newline among them) */
	char *out;      /* unsent reply bytes out[out_off .. out_len) */
	size_t out_off, out_len, out_cap;
	char in[CONTROL_MAX_LINE + 2]; /* a full line, its newline and a NUL */
};

struct control_client *control_client_new(int fd)
{
	struct control_client *c = malloc(sizeof(*c));
	int flags = fcntl(fd, F_GETFL);

	if (!c)
		return NULL;
	if (flags >= 0 && !(flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	c->fd = fd;
	c->eof = false;
	c->in_len = 0;
	c->out = NULL;
	c->out_off = c->out_len = c->out_cap = 0;
	return c;
}

void control_client_free(struct control_client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->out);
	free(c);
}

int control_client_fd(const struct control_client *c)
{
	return c->fd;
}

uint32_t control_client_events(const struct control_client *c)
{
	return c->out_off < c->out_len ? EPOLLOUT : EPOLLIN;
}

int control_client_writable(struct control_client *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0) {
			log_debug("control: client send: %s", strerror(errno));
			return -1;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	if (c->out_cap > 256 * 1024) { /* a big reply went out: do not keep its buffer */
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return c->eof ? -1 : 0;
}

/* queue_output() - append text and a newline, then send what the socket takes. */
static int queue_output(struct control_client *c, const char *text)
{
	size_t len = strlen(text), need = c->out_len + len + 1, cap;
	char *grown;

	if (need > CONTROL_MAX_OUTBUF) {
		log_warn("control: client does not read its replies; dropping it");
		return -1;
	}
	if (need > c->out_cap) {
		cap = c->out_cap * 2 > need ? c->out_cap * 2 : need;
		grown = realloc(c->out, cap);
		if (!grown)
			return -1;
		c->out = grown;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, text, len);
	c->out[c->out_len + len] = '\n';
	c->out_len = need;
	return control_client_writable(c) < 0 && !c->eof ? -1 : 0;
}

/* execute_line() - run one request line in place (NUL-terminated) and queue its reply. */
static int execute_line(struct control_client *c, char *line, size_t len,
			struct port *const *ports, unsigned nports)
{
	char *reply;
	int ret;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (strspn(line, " \t") == len)
		return 0; /* blank line */
	reply = control_execute(ports, nports, line);
	if (!reply)
		return -1;
	ret = queue_output(c, reply);
	free(reply);
	return ret;
}

/* process_lines() - execute every complete line in `in`; keep the partial rest. */
static int process_lines(struct control_client *c, struct port *const *ports, unsigned nports)
{
	char *start = c->in, *nl;
	size_t left = c->in_len;

	while ((nl = memchr(start, '\n', left))) {
		*nl = '\0';
		if (execute_line(c, start, (size_t)(nl - start), ports, nports) < 0)
			return -1;
		left -= (size_t)(nl - start) + 1;
		start = nl + 1;
	}
	memmove(c->in, start, left);
	c->in_len = left;
	if (left > CONTROL_MAX_LINE) {
		queue_output(c, "{\"ok\":false,\"error\":\"request line longer than 65536 "
				"bytes\"}");
		return -1;
	}
	return 0;
}

int control_client_readable(struct control_client *c, struct port *const *ports, unsigned nports)
{
	ssize_t n;

	while (!c->eof && c->out_off == c->out_len) {
		n = read(c->fd, c->in + c->in_len, CONTROL_MAX_LINE + 1 - c->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			log_debug("control: client read: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			/* A last request without a newline still counts. */
			c->eof = true;
			c->in[c->in_len] = '\0';
			if (execute_line(c, c->in, c->in_len, ports, nports) < 0)
				return -1;
			c->in_len = 0;
			break;
		}
		c->in_len += (size_t)n;
		if (process_lines(c, ports, nports) < 0)
			return -1;
	}
	return control_client_writable(c);
}
