/* SPDX-License-Identifier: MIT */
/* vnetctl.c - command-line client of vnetd's control socket: ports, stats, coalescing, raw JSON. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define DEFAULT_CONTROL "/run/vnetd.sock"
#define REPLY_TIMEOUT_MS 5000
#define MAX_REPLY (64u * 1024 * 1024)

enum { EXIT_OK = 0, EXIT_REPLY_ERROR = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
	"Usage: vnetctl [--control PATH] COMMAND [ARGS]\n"
	"\n"
	"Queries and tunes a running vnetd through its control socket: PATH, else\n"
	"$VNETCTL_CONTROL, else " DEFAULT_CONTROL ".\n"
	"\n"
	"Commands:\n"
	"  ports                      list ports: backend, MAC, connection, link, features\n"
	"  stats [--json] [PORT]      per-queue counters, coalescing parameters and the\n"
	"                             lateness of coalescing timers (--json: the daemon's reply)\n"
	"  coalesce PORT [--queue N] [rx-usecs N] [rx-frames N] [tx-usecs N] [tx-frames N]\n"
	"                             set host-side coalescing of every RX/TX queue of PORT,\n"
	"                             or of queue N only (rx-* for an RX, tx-* for a TX queue);\n"
	"                             values not given keep their current setting\n"
	"  coalesce PORT [--queue N] adaptive|rx-adaptive|tx-adaptive on|off\n"
	"                             adaptive coalescing (vnetd picks the values) for every\n"
	"                             RX/TX queue of PORT, or queue N; guest or host values\n"
	"                             set later replace it (the last setter wins)\n"
	"  stall-guard PORT [on|off] [bytes N] [idle-usecs N]\n"
	"                             notify early when holding completions would stall the\n"
	"                             driver (ring nearly used up, N bytes held, TX idle N us)\n"
	"  rate PORT [tx|rx MBIT [BURST_KB]]\n"
	"                             limit what the guest sends (tx: it waits in the ring) or\n"
	"                             receives (rx: dropped over the rate) to MBIT Mbit/s, 0 for\n"
	"                             no limit; BURST_KB KiB (default 10 ms of the rate); without\n"
	"                             tx|rx: show the limits\n"
	"  reset-stats [PORT]         zero the counters of PORT (default: every port)\n"
	"  port-add SPEC              add a port at run time; SPEC exactly as vnetd --port takes\n"
	"                             it; prints the new port's name\n"
	"  port-del PORT              remove a port: its frontend is disconnected (completions\n"
	"                             signalled first), its tap closed, its switch port detached\n"
	"  raw JSON                   send one request line as is and print the reply\n"
	"\n"
	"PORT is a port name (p0, p1, ...) or index. Queues are numbered as in virtio:\n"
	"rx0=0, tx0=1, rx1=2, tx1=3, ..., the control queue last.\n"
	"\n"
	"Examples:\n"
	"  vnetctl stats p0\n"
	"  vnetctl coalesce p0 rx-usecs 64 rx-frames 32\n"
	"  vnetctl coalesce p0 adaptive on\n"
	"  vnetctl stall-guard p0 off\n"
	"  vnetctl rate p0 tx 100\n"
	"  vnetctl raw '{\"cmd\":\"stats\",\"port\":0}'\n"
	"\n"
	"Exit status: 0 success, 1 the daemon answered with an error, 2 usage or connection\n"
	"error.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vnetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see vnetctl --help)\n", stderr);
	return EXIT_USAGE;
}

/* ---- Talking to the daemon ----------------------------------------------------------------- */

static int ctl_connect(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = REPLY_TIMEOUT_MS / 1000};
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "vnetctl: control socket path too long: %s\n", path);
		return -1;
	}
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "vnetctl: socket: %s\n", strerror(errno));
		return -1;
	}
	/* On unix sockets the send timeout also bounds connect() when the backlog is full. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "vnetctl: cannot connect to %s: %s (is vnetd running? see "
			"--control)\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* read_reply_line() - one newline-terminated reply within the timeout; malloc'd, NUL-terminated. */
static char *read_reply_line(int fd)
{
	long long deadline = now_ms() + REPLY_TIMEOUT_MS, left;
	size_t len = 0, cap = 0;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char *buf = NULL, *grown, *nl;
	ssize_t n;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_REPLY || !(grown = realloc(buf, cap))) {
				fprintf(stderr, "vnetctl: reply too large\n");
				break;
			}
			buf = grown;
		}
		left = deadline - now_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			fprintf(stderr, "vnetctl: no reply from vnetd within %d s\n",
				REPLY_TIMEOUT_MS / 1000);
			break;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "vnetctl: connection closed before a reply%s%s\n",
				n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			break;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			return buf;
		}
	}
	free(buf);
	return NULL;
}

/*
 * transact() - send one request line, return the reply text (*text, malloc'd) and its parsed
 * form (*reply). Returns 0, or EXIT_USAGE after printing why.
 */
static int transact(const char *path, const char *request, char **text, json_t **reply)
{
	size_t len = strlen(request);
	char *line = malloc(len + 1);
	json_error_t jerr;
	int fd, ret;

	if (!line) {
		fprintf(stderr, "vnetctl: out of memory\n");
		return EXIT_USAGE;
	}
	memcpy(line, request, len);
	line[len] = '\n'; /* one write: the daemon may answer before a separate newline */
	fd = ctl_connect(path);
	ret = fd < 0 ? -1 : send_all(fd, line, len + 1);
	free(line);
	if (fd < 0)
		return EXIT_USAGE;
	if (ret < 0) {
		fprintf(stderr, "vnetctl: sending to %s: %s\n", path, strerror(errno));
		close(fd);
		return EXIT_USAGE;
	}
	*text = read_reply_line(fd);
	close(fd);
	if (!*text)
		return EXIT_USAGE;
	*reply = json_loads(*text, 0, &jerr);
	if (!json_is_object(*reply)) {
		fprintf(stderr, "vnetctl: malformed reply from vnetd: %s\n",
			*reply ? "not an object" : jerr.text);
		json_decref(*reply);
		free(*text);
		*text = NULL;
		return EXIT_USAGE;
	}
	return 0;
}

/* reply_ok() - true for {"ok":true}; otherwise prints the daemon's error. */
static bool reply_ok(json_t *reply, bool quiet)
{
	const char *err;

	if (json_is_true(json_object_get(reply, "ok")))
		return true;
	err = json_string_value(json_object_get(reply, "error"));
	if (!quiet)
		fprintf(stderr, "vnetctl: %s\n", err ? err : "request failed");
	return false;
}

/* request() - send the request object (reference stolen); *reply on success. */
static int request(const char *path, json_t *req, json_t **reply)
{
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	char *text = NULL;
	int ret;

	json_decref(req);
	if (!line) {
		fprintf(stderr, "vnetctl: out of memory\n");
		return EXIT_USAGE;
	}
	ret = transact(path, line, &text, reply);
	free(line);
	free(text);
	if (ret)
		return ret;
	if (!reply_ok(*reply, false)) {
		json_decref(*reply);
		return EXIT_REPLY_ERROR;
	}
	return EXIT_OK;
}

/* ---- Tables -------------------------------------------------------------------------------- */

#define MAX_COLS 16

/* A text table: cells of each row collected first, printed with per-column widths. */
struct table {
	unsigned ncols, nrows;
	const char *align; /* 'l' or 'r' per column */
	char **cells;      /* nrows * ncols strdup'd strings */
};

static void table_row(struct table *t, ...)
{
	char **grown = realloc(t->cells, (size_t)(t->nrows + 1) * t->ncols * sizeof(char *));
	const char *s;
	va_list ap;
	unsigned i;

	if (!grown) {
		fprintf(stderr, "vnetctl: out of memory\n");
		exit(EXIT_USAGE);
	}
	t->cells = grown;
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++) {
		s = va_arg(ap, const char *);
		t->cells[t->nrows * t->ncols + i] = strdup(s ? s : "-");
	}
	va_end(ap);
	t->nrows++;
}

static void table_print_free(struct table *t)
{
	size_t width[MAX_COLS] = {0}, len;
	unsigned r, i;
	const char *s;

	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++) {
			s = t->cells[r * t->ncols + i];
			len = s ? strlen(s) : 1;
			if (len > width[i])
				width[i] = len;
		}
	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			s = t->cells[r * t->ncols + i];
			if (i + 1 == t->ncols && t->align[i] == 'l')
				printf("%s", s ? s : "-"); /* no trailing blanks */
			else
				printf(t->align[i] == 'r' ? "%*s%s" : "%-*s%s", (int)width[i],
				       s ? s : "-", i + 1 < t->ncols ? "  " : "");
			free(t->cells[r * t->ncols + i]);
		}
		putchar('\n');
	}
	free(t->cells);
}

static const char *fmt_int(char *buf, size_t size, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		return NULL;
	snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	return buf;
}

static const char *fmt_us(char *buf, size_t size, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_number(v))
		return NULL;
	snprintf(buf, size, "%.1f", json_number_value(v));
	return buf;
}

static const char *str_field(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* ---- Commands ------------------------------------------------------------------------------ */

/* port_value() - "p0" stays a name, "3" becomes the index 3. */
static json_t *port_value(const char *arg)
{
	json_t *s;

	if (arg[0] != '\0' && strspn(arg, "0123456789") == strlen(arg) && strlen(arg) < 10)
		return json_integer(atoll(arg));
	s = json_string(arg);
	return s ? s : json_null(); /* not UTF-8: let the daemon say it is no port */
}

/* A port's RSS state under the ports table: on/off, hash types, key, the table's weights. */
static void print_rss(json_t *p)
{
	json_t *r = json_object_get(p, "rss"), *v, *table;
	unsigned count[64] = {0};
	size_t i, n;

	if (!json_is_object(r))
		return;
	printf("%s rss: steering %s, hash report %s, hash types", str_field(p, "name"),
	       json_is_true(json_object_get(r, "steering")) ? "on" : "off",
	       json_is_true(json_object_get(r, "reporting")) ? "on" : "off");
	n = 0;
	json_array_foreach(json_object_get(r, "hash_types"), i, v)
		printf("%s%s", n++ ? "," : " ", json_string_value(v));
	printf("%s\n", n ? "" : " none");
	table = json_object_get(r, "indirection_table");
	n = json_array_size(table);
	json_array_foreach(table, i, v)
		if (json_integer_value(v) >= 0 && json_integer_value(v) < 64)
			count[json_integer_value(v)]++;
	printf("  table %zu entries:", n);
	for (unsigned q = 0; q < 64; q++)
		if (count[q])
			printf(" rx%u x%u", q, count[q]);
	printf(" (unclassified: rx%" JSON_INTEGER_FORMAT ")\n  key %s\n",
	       json_integer_value(json_object_get(r, "unclassified_queue")),
	       str_field(r, "key") && *str_field(r, "key") ? str_field(r, "key") : "none");
}

static int cmd_ports(const char *path, int argc, char **argv)
{
	struct table t = {.ncols = 15, .align = "lrrlllllrllllll"};
	char idx[24], worker[64], conn[48], pairs[48], adapt[16];
	json_t *reply, *p;
	size_t i;
	int ret;

	if (argc > 0)
		return usage_error("ports: unexpected argument '%s'", argv[0]);
	if ((ret = request(path, json_pack("{s:s}", "cmd", "ports"), &reply)))
		return ret;
	table_row(&t, "PORT", "IDX", "WORKER", "BACKEND", "SEGMENT", "MAC", "CONNECTED", "LINK", "PAIRS",
		  "COAL", "GUARD", "ADAPTIVE", "RING", "FEATURES", "SOCKET");
	json_array_foreach(json_object_get(reply, "ports"), i, p) {
		char backend[48], segment[32];
		bool notf = json_is_true(json_object_get(p, "notf_coal"));
		bool vq = json_is_true(json_object_get(p, "vq_notf_coal"));
		char ring[24];

		if (str_field(p, "tap"))
			snprintf(backend, sizeof(backend), "tap:%s", str_field(p, "tap"));
		else
			snprintf(backend, sizeof(backend), "%s", str_field(p, "backend"));
		if (json_is_integer(json_object_get(p, "vlan")))
			snprintf(segment, sizeof(segment), "%s/vlan%" JSON_INTEGER_FORMAT,
				 str_field(p, "segment"),
				 json_integer_value(json_object_get(p, "vlan")));
		else
			snprintf(segment, sizeof(segment), "%s",
				 str_field(p, "segment") ? str_field(p, "segment") : "-");
		snprintf(conn, sizeof(conn), "%s (%" JSON_INTEGER_FORMAT " total)",
			 json_is_true(json_object_get(p, "connected")) ? "yes" : "no",
			 json_integer_value(json_object_get(p, "connections")));
		snprintf(pairs, sizeof(pairs), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(p, "active_pairs")),
			 json_integer_value(json_object_get(p, "queue_pairs")));
		snprintf(ring, sizeof(ring), "%s%s", str_field(p, "ring") ? str_field(p, "ring") : "-",
			 json_is_true(json_object_get(p, "in_order")) ? "+in-order" : "");
		snprintf(adapt, sizeof(adapt), "%s",
			 json_is_true(json_object_get(p, "rx_adaptive"))
				 ? (json_is_true(json_object_get(p, "tx_adaptive")) ? "rx+tx" : "rx")
				 : (json_is_true(json_object_get(p, "tx_adaptive")) ? "tx" : "off"));
		fmt_int(worker, sizeof(worker), p, "worker");
		if (json_is_array(json_object_get(p, "queue_workers"))) { /* queue-workers= */
			json_t *qw = json_object_get(p, "queue_workers"), *w;
			size_t k, len = strlen(worker);

			json_array_foreach(qw, k, w) {
				if (len + 8 >= sizeof(worker))
					break;
				len += (size_t)snprintf(worker + len, sizeof(worker) - len,
							"%s%" JSON_INTEGER_FORMAT, k ? "+" : "/q",
							json_integer_value(w) & 0xff);
			}
		}
		table_row(&t, str_field(p, "name"), fmt_int(idx, sizeof(idx), p, "index"),
			  worker, backend,
			  segment, str_field(p, "mac"), conn,
			  json_is_true(json_object_get(p, "link_up")) ? "up" : "down", pairs,
			  notf ? (vq ? "notf+vq" : "notf") : "off",
			  json_is_true(json_object_get(p, "stall_guard")) ? "on" : "off", adapt,
			  ring, str_field(p, "features"), str_field(p, "socket"));
	}
	table_print_free(&t);
	json_array_foreach(json_object_get(reply, "ports"), i, p)
		print_rss(p);
	printf("(WORKER: the event-loop thread serving the port (--workers), W/qA+B+... with "
	       "queue-workers=:\n queue pair i on worker A, B, ...; SEGMENT: a switch port's"
	       "\n L2 segment (switch=NAME), NAME/vlanN for an access port (vlan=N); PAIRS: active/"
	       "configured\n queue pairs; COAL and FEATURES: what the guest negotiated; GUARD: stall "
	       "guard;\n ADAPTIVE: queue kinds in adaptive mode)\n");
	json_decref(reply);
	return EXIT_OK;
}

static json_int_t int_field(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Early notifications of the stall guard: idle/ring/bytes. */
static const char *fmt_early(char *buf, size_t len, json_t *q)
{
	if (!json_object_get(q, "early_idle"))
		return "-";
	snprintf(buf, len, "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
		 int_field(q, "early_idle"), int_field(q, "early_ring"), int_field(q, "early_bytes"));
	return buf;
}

/* Adaptive controller: "off", or its state and level. */
static const char *fmt_adaptive(char *buf, size_t len, json_t *q)
{
	if (!json_is_true(json_object_get(q, "adaptive")))
		return "off";
	snprintf(buf, len, "%s:L%" JSON_INTEGER_FORMAT, str_field(q, "adaptive_state"),
		 int_field(q, "adaptive_level"));
	return buf;
}

static void stats_rows(struct table *t, json_t *port)
{
	char c[13][24];
	json_t *q, *lat;
	size_t i;

	json_array_foreach(json_object_get(port, "queues"), i, q) {
		const char *state = "off";

		lat = json_object_get(q, "lateness_us");
		if (json_is_true(json_object_get(q, "broken")))
			state = "BROKEN";
		else if (json_is_true(json_object_get(q, "enabled")) &&
			 json_is_true(json_object_get(q, "started")))
			state = "on";
		table_row(t, str_field(port, "name"), fmt_int(c[0], 24, q, "index"),
			  str_field(q, "kind"), state,
			  fmt_int(c[1], 24, q, "packets"), fmt_int(c[2], 24, q, "bytes"),
			  fmt_int(c[3], 24, q, "notifications"), fmt_int(c[4], 24, q, "suppressed"),
			  fmt_int(c[5], 24, q, "held"), fmt_int(c[6], 24, q, "timer_notifications"),
			  fmt_int(c[7], 24, q, "max_packets"), fmt_int(c[8], 24, q, "max_usecs"),
			  str_field(q, "set_by"), fmt_us(c[9], 24, lat, "p50"),
			  fmt_us(c[10], 24, lat, "p99"), fmt_early(c[11], 24, q),
			  fmt_adaptive(c[12], 24, q));
	}
}

static int cmd_stats(const char *path, int argc, char **argv)
{
	struct table t = {.ncols = 17, .align = "lrllrrrrrrrrlrrrl"};
	const char *port = NULL;
	bool as_json = false;
	json_t *req, *reply, *p;
	char *text = NULL;
	size_t i;
	int a, ret;

	for (a = 0; a < argc; a++) {
		if (strcmp(argv[a], "--json") == 0)
			as_json = true;
		else if (argv[a][0] == '-' || port)
			return usage_error("stats: unexpected argument '%s'", argv[a]);
		else
			port = argv[a];
	}
	req = json_pack("{s:s}", "cmd", "stats");
	if (port)
		json_object_set_new(req, "port", port_value(port));
	if (as_json) {
		char *line = json_dumps(req, JSON_COMPACT);

		json_decref(req);
		ret = line ? transact(path, line, &text, &reply) : EXIT_USAGE;
		free(line);
		if (ret)
			return ret;
		puts(text); /* the daemon's reply, byte for byte */
		ret = reply_ok(reply, true) ? EXIT_OK : EXIT_REPLY_ERROR;
		free(text);
		json_decref(reply);
		return ret;
	}
	if ((ret = request(path, req, &reply)))
		return ret;
	table_row(&t, "PORT", "Q", "KIND", "STATE", "PACKETS", "BYTES", "NOTIF", "SUPPR", "HELD", "TIMER",
		  "MAX_PKTS", "MAX_US", "SET_BY", "LATE_P50us", "LATE_P99us", "EARLY", "ADAPTIVE");
	json_array_foreach(json_object_get(reply, "ports"), i, p)
		stats_rows(&t, p);
	table_print_free(&t);
	printf("(STATE: on = enabled and running, BROKEN = stopped after a guest error; NOTIF\n"
	       " notifications sent, SUPPR suppressed by the guest, HELD held back by coalescing,\n"
	       " TIMER sent when a coalescing timer fired, LATE_* how late those timers fired,\n"
	       " EARLY sent early by the stall guard: driver idle/ring low/bytes held, ADAPTIVE\n"
	       " the adaptive controller's state and level)\n");
	json_decref(reply);
	return EXIT_OK;
}

static bool parse_u32(const char *s, json_int_t *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 4294967295ul)
		return false;
	*out = (json_int_t)v;
	return true;
}

/* The JSON key of an adaptive word of "coalesce", or NULL. */
static const char *adaptive_key(const char *word)
{
	if (strcmp(word, "adaptive") == 0)
		return "adaptive";
	if (strcmp(word, "rx-adaptive") == 0)
		return "rx_adaptive";
	if (strcmp(word, "tx-adaptive") == 0)
		return "tx_adaptive";
	return NULL;
}

static int cmd_coalesce(const char *path, int argc, char **argv)
{
	static const char *const words[][2] = {{"rx-usecs", "rx_usecs"},
						{"rx-frames", "rx_frames"},
						{"tx-usecs", "tx_usecs"},
						{"tx-frames", "tx_frames"}};
	json_t *req, *reply;
	const char *value, *word;
	json_int_t v;
	size_t w;
	int a, ret;

	if (argc < 1 || argv[0][0] == '-')
		return usage_error("coalesce needs a PORT");
	req = json_pack("{s:s,s:o}", "cmd", "coalesce", "port", port_value(argv[0]));
	for (a = 1; a < argc; a++) {
		const char *key = NULL;

		word = argv[a];
		if ((key = adaptive_key(argv[a]))) {
			if (a + 1 >= argc || (strcmp(argv[a + 1], "on") && strcmp(argv[a + 1], "off"))) {
				json_decref(req);
				return usage_error("coalesce: %s needs on or off", argv[a]);
			}
			json_object_set_new(req, key, json_boolean(strcmp(argv[++a], "on") == 0));
			continue;
		}
		if (strncmp(argv[a], "--queue=", 8) == 0) {
			key = "queue";
			word = "--queue";
			value = argv[a] + 8;
		} else {
			if (strcmp(argv[a], "--queue") == 0)
				key = "queue";
			for (w = 0; !key && w < sizeof(words) / sizeof(words[0]); w++)
				if (strcmp(argv[a], words[w][0]) == 0)
					key = words[w][1];
			if (!key) {
				json_decref(req);
				return usage_error("coalesce: unknown parameter '%s' (rx-usecs, "
						   "rx-frames, tx-usecs, tx-frames, adaptive, "
						   "rx-adaptive, tx-adaptive, --queue)", argv[a]);
			}
			if (a + 1 >= argc) {
				json_decref(req);
				return usage_error("coalesce: %s needs a value", argv[a]);
			}
			value = argv[++a];
		}
		if (!parse_u32(value, &v)) {
			json_decref(req);
			return usage_error("coalesce: bad value '%s' for %s (expected "
					   "0..4294967295)", value, word);
		}
		json_object_set_new(req, key, json_integer(v));
	}
	if (json_object_size(req) == 2 + (json_object_get(req, "queue") != NULL)) {
		json_decref(req);
		return usage_error("coalesce: give at least one of rx-usecs, rx-frames, tx-usecs, "
				   "tx-frames, adaptive");
	}
	if ((ret = request(path, req, &reply)))
		return ret;
	json_decref(reply);
	return EXIT_OK;
}

static int cmd_stall_guard(const char *path, int argc, char **argv)
{
	json_t *req, *reply;
	json_int_t v;
	int a, ret;

	if (argc < 2 || argv[0][0] == '-')
		return usage_error("stall-guard needs a PORT and on, off, bytes N or idle-usecs N");
	req = json_pack("{s:s,s:o}", "cmd", "stall-guard", "port", port_value(argv[0]));
	for (a = 1; a < argc; a++) {
		const char *key = strcmp(argv[a], "bytes") == 0	       ? "bytes"
				  : strcmp(argv[a], "idle-usecs") == 0 ? "idle_usecs"
								       : NULL;

		if (strcmp(argv[a], "on") == 0 || strcmp(argv[a], "off") == 0) {
			json_object_set_new(req, "on", json_boolean(argv[a][1] == 'n'));
			continue;
		}
		if (!key || a + 1 >= argc || !parse_u32(argv[a + 1], &v)) {
			json_decref(req);
			return usage_error("stall-guard: bad argument '%s' (on, off, bytes N, "
					   "idle-usecs N; N 0..4294967295)", argv[a]);
		}
		json_object_set_new(req, key, json_integer(v));
		a++;
	}
	if ((ret = request(path, req, &reply)))
		return ret;
	json_decref(reply);
	return EXIT_OK;
}

/* One direction of a "rate" reply: "tx 100 Mbit/s burst 1220 KiB", "rx none". */
static void print_rate(const char *dir, json_t *r)
{
	json_int_t mbit = json_integer_value(json_object_get(r, "mbit"));
	json_int_t burst = json_integer_value(json_object_get(r, "burst_kb"));

	if (!mbit)
		printf("%s none\n", dir);
	else if (!burst)
		printf("%s %" JSON_INTEGER_FORMAT " Mbit/s burst default (10 ms)\n", dir, mbit);
	else
		printf("%s %" JSON_INTEGER_FORMAT " Mbit/s burst %" JSON_INTEGER_FORMAT " KiB\n",
		       dir, mbit, burst);
}

static int cmd_rate(const char *path, int argc, char **argv)
{
	json_t *req, *reply, *r;
	json_int_t mbit, burst = 0;
	int ret;

	if (argc < 1 || argv[0][0] == '-')
		return usage_error("rate needs a PORT");
	if (argc == 2 || argc > 4)
		return usage_error("rate: PORT, then tx or rx and MBIT [BURST_KB]");
	req = json_pack("{s:s,s:o}", "cmd", "rate", "port", port_value(argv[0]));
	if (argc >= 3) {
		if (strcmp(argv[1], "tx") != 0 && strcmp(argv[1], "rx") != 0) {
			json_decref(req);
			return usage_error("rate: bad direction '%s' (tx or rx)", argv[1]);
		}
		for (int a = 2; a < argc; a++) {
			if (!parse_u32(argv[a], a == 2 ? &mbit : &burst)) {
				json_decref(req);
				return usage_error("rate: bad number '%s' (MBIT 0..1000000, "
						   "BURST_KB 0..1048576)", argv[a]);
			}
		}
		json_object_set_new(req, "dir", json_string(argv[1]));
		json_object_set_new(req, "mbit", json_integer(mbit));
		if (argc == 4)
			json_object_set_new(req, "burst_kb", json_integer(burst));
	}
	if ((ret = request(path, req, &reply)))
		return ret;
	r = json_object_get(reply, "rate");
	print_rate("tx", json_object_get(r, "tx"));
	print_rate("rx", json_object_get(r, "rx"));
	json_decref(reply);
	return EXIT_OK;
}

static int cmd_reset_stats(const char *path, int argc, char **argv)
{
	json_t *req, *reply;
	int ret;

	if (argc > 1 || (argc == 1 && argv[0][0] == '-'))
		return usage_error("reset-stats takes at most a PORT");
	req = json_pack("{s:s}", "cmd", "reset-stats");
	if (argc == 1)
		json_object_set_new(req, "port", port_value(argv[0]));
	if ((ret = request(path, req, &reply)))
		return ret;
	json_decref(reply);
	return EXIT_OK;
}

static int cmd_port_add(const char *path, int argc, char **argv)
{
	json_t *req, *reply;
	int ret;

	if (argc != 1)
		return usage_error("port-add needs exactly one SPEC");
	req = json_pack("{s:s,s:s}", "cmd", "port-add", "spec", argv[0]);
	if (!req)
		return usage_error("port-add: SPEC must be UTF-8");
	if ((ret = request(path, req, &reply)))
		return ret;
	printf("%s\n", json_string_value(json_object_get(reply, "port")) ?: "?");
	json_decref(reply);
	return EXIT_OK;
}

static int cmd_port_del(const char *path, int argc, char **argv)
{
	json_t *req, *reply;
	int ret;

	if (argc != 1 || argv[0][0] == '-')
		return usage_error("port-del needs exactly one PORT");
	req = json_pack("{s:s,s:o}", "cmd", "port-del", "port", port_value(argv[0]));
	if ((ret = request(path, req, &reply)))
		return ret;
	json_decref(reply);
	return EXIT_OK;
}

static int cmd_raw(const char *path, int argc, char **argv)
{
	json_t *reply;
	char *text;
	int ret;

	if (argc != 1)
		return usage_error("raw needs exactly one JSON argument");
	if (strchr(argv[0], '\n'))
		return usage_error("raw: the request must be one line");
	if ((ret = transact(path, argv[0], &text, &reply)))
		return ret;
	puts(text);
	ret = reply_ok(reply, true) ? EXIT_OK : EXIT_REPLY_ERROR;
	free(text);
	json_decref(reply);
	return ret;
}

/**
 * main() - vnetctl: send one command to vnetd's control socket and print the reply.
 * @argc: argument count
 * @argv: [--control PATH] COMMAND [ARGS]; the socket path may also come from VNETCTL_CONTROL
 *
 * Return: the exit status: 0 success, 1 the daemon answered with an error, 2 usage or connection
 * error.
 */
int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(const char *path, int argc, char **argv);
	} commands[] = {
		{"ports", cmd_ports},	      {"stats", cmd_stats}, {"coalesce", cmd_coalesce},
		{"stall-guard", cmd_stall_guard}, {"rate", cmd_rate},
		{"reset-stats", cmd_reset_stats}, {"raw", cmd_raw},
		{"port-add", cmd_port_add},	  {"port-del", cmd_port_del},
	};
	const char *path = getenv("VNETCTL_CONTROL");
	size_t c;
	int a;

	if (!path || path[0] == '\0')
		path = DEFAULT_CONTROL;
	for (a = 1; a < argc; a++)
		if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
			fputs(usage_text, stdout);
			return EXIT_OK;
		}
	for (a = 1; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "--control") == 0 && a + 1 < argc)
			path = argv[++a];
		else if (strncmp(argv[a], "--control=", 10) == 0)
			path = argv[a] + 10;
		else if (strcmp(argv[a], "--control") == 0)
			return usage_error("--control needs a PATH");
		else
			return usage_error("unknown option '%s'", argv[a]);
	}
	if (a >= argc)
		return usage_error("no command given");
	if (path[0] == '\0')
		return usage_error("empty control socket path");
	for (c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
		if (strcmp(argv[a], commands[c].name) == 0)
			return commands[c].run(path, argc - a - 1, argv + a + 1);
	return usage_error("unknown command '%s'", argv[a]);
}
