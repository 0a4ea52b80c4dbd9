/* SPDX-License-Identifier: MIT */
/* vnetctl_show.c - vnetctl's read-only commands: ports and stats, printed as text tables. */
#include "vnetctl/vnetctl_show.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnetctl/vnetctl_cmd.h"

/* ---- Tables -------------------------------------------------------------------------------- */

#define MAX_COLS 24 /* the widest table (stats) has 17 columns */

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

	if (t->ncols > MAX_COLS) {
		fprintf(stderr, "vnetctl: a table of %u columns (at most %d)\n", t->ncols, MAX_COLS);
		exit(EXIT_USAGE);
	}
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

static json_int_t int_field(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
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

/**
 * cmd_ports() - vnetctl ports: the table of ports, then each port's RSS state.
 * @path: the control socket
 * @argc: the command's argument count (none are taken)
 * @argv: its arguments
 *
 * Return: the exit status.
 */
int cmd_ports(const char *path, int argc, char **argv)
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

		if (str_field(p, "tap") && int_field(p, "tap_queues") > 1)
			snprintf(backend, sizeof(backend), "tap:%s/mq%" JSON_INTEGER_FORMAT,
				 str_field(p, "tap"), int_field(p, "tap_queues"));
		else if (str_field(p, "tap"))
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
	       "queue-workers=:\n queue pair i on worker A, B, ...; BACKEND tap:IF/mqN: a multi-queue "
	       "tap, N queue fds;\n SEGMENT: a switch port's"
	       "\n L2 segment (switch=NAME), NAME/vlanN for an access port (vlan=N); PAIRS: active/"
	       "configured\n queue pairs; COAL and FEATURES: what the guest negotiated; GUARD: stall "
	       "guard;\n ADAPTIVE: queue kinds in adaptive mode)\n");
	json_decref(reply);
	return EXIT_OK;
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

/* A multi-queue tap's packets per queue fd, under the stats table. */
static void print_tap_queues(json_t *port)
{
	json_t *tq = json_object_get(port, "tap_queues"), *q;
	size_t i;

	if (!json_array_size(tq))
		return;
	printf("%s tap queues (packets read/written per queue fd):", str_field(port, "name"));
	json_array_foreach(tq, i, q)
		printf(" q%" JSON_INTEGER_FORMAT " rx %" JSON_INTEGER_FORMAT " tx %" JSON_INTEGER_FORMAT,
		       int_field(q, "queue"), int_field(q, "rx_packets"), int_field(q, "tx_packets"));
	printf("\n");
}

/**
 * cmd_stats() - vnetctl stats [--json] [PORT]: the per-queue counters of every port, or of PORT.
 * @path: the control socket
 * @argc: the command's argument count
 * @argv: its arguments
 *
 * Return: the exit status.
 */
int cmd_stats(const char *path, int argc, char **argv)
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
	json_array_foreach(json_object_get(reply, "ports"), i, p) {
		print_rss(p);
		print_tap_queues(p);
	}
	printf("(STATE: on = enabled and running, BROKEN = stopped after a guest error; NOTIF\n"
	       " notifications sent, SUPPR suppressed by the guest, HELD held back by coalescing,\n"
	       " TIMER sent when a coalescing timer fired, LATE_* how late those timers fired,\n"
	       " EARLY sent early by the stall guard: driver idle/ring low/bytes held, ADAPTIVE\n"
	       " the adaptive controller's state and level)\n");
	json_decref(reply);
	return EXIT_OK;
}
