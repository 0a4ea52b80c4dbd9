/* SPDX-License-Identifier: MIT */
/* vnetctl.c - command-line client of vnetd's control socket: ports, stats, coalescing, raw JSON. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vnetctl/vnetctl_cmd.h"
#include "vnetctl/vnetctl_show.h"

#define DEFAULT_CONTROL "/run/vnetd.sock"

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

/* ---- Commands ------------------------------------------------------------------------------ */

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
