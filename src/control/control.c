/* SPDX-License-Identifier: MIT */
/* control.c - the control socket's request dispatch, by a const table of the commands. */
#include "control/control.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/control_coal.h"
#include "control/control_json.h"
#include "control/control_ports.h"
#include "control/control_rate.h"
#include "control/control_stats.h"

static const struct control_port_ops *port_ops;
static void *port_ops_ctx;
static const struct control_sync_ops *sync_ops;
static void *sync_ctx;

/**
 * control_set_port_ops() - let port-add and port-del change ports; without it they fail.
 * @ops: the daemon's table (kept, not copied).
 * @ctx: passed to every op.
 *
 * Thread: call before the first request, from the thread that runs the requests.
 */
void control_set_port_ops(const struct control_port_ops *ops, void *ctx)
{
	port_ops = ops;
	port_ops_ctx = ctx;
}

/**
 * control_set_sync_ops() - what to do around every request that is not lock-free.
 * @ops: enter/leave (kept, not copied); without them requests run as they come (one thread).
 * @ctx: passed to both.
 *
 * Thread: call before the first request, from the thread that runs the requests.
 */
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
static const struct control_command {
	const char *name;
	control_cmd_fn run;
	bool lockfree;
} commands[] = {
	{"port-add", control_ports_add, false},
	{"port-del", control_ports_del, false},
	{"ports", control_ports_list, false},
	{"stats", control_stats_get, true},
	{"coalesce", control_coal_coalesce, false},
	{"reset-stats", control_stats_reset, false},
	{"stall-guard", control_coal_stall_guard, false},
	{"rate", control_rate_set, false},
};

/* run() - one known command, inside sync_ops' enter/leave unless it is lock-free. */
static json_t *run(const struct control_command *c, const struct control_call *call, json_t *req)
{
	bool sync = sync_ops && !c->lockfree;
	json_t *reply;

	if (sync)
		sync_ops->enter(sync_ctx);
	reply = c->run(call, req);
	if (sync)
		sync_ops->leave(sync_ctx);
	return reply;
}

/* dispatch() - parse one request line and run its command; the reply, NULL if out of memory. */
static json_t *dispatch(const struct control_call *call, const char *line)
{
	json_error_t jerr;
	json_t *req, *cmd, *reply;
	size_t i = 0;

	req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (!req)
		return control_json_error("bad JSON at column %d: %s", jerr.column, jerr.text);
	cmd = json_object_get(req, "cmd");
	if (!json_is_object(req)) {
		reply = control_json_error("request must be a JSON object");
	} else if (!json_is_string(cmd)) {
		reply = control_json_error("request needs \"cmd\": a string");
	} else {
		while (i < sizeof(commands) / sizeof(commands[0]) &&
		       strcmp(commands[i].name, json_string_value(cmd)) != 0)
			i++;
		if (i < sizeof(commands) / sizeof(commands[0]))
			reply = run(&commands[i], call, req);
		else
			reply = control_json_error("unknown cmd '%.64s' (ports, stats, coalesce, "
						   "reset-stats, stall-guard, rate, port-add, port-del)",
						   json_string_value(cmd));
	}
	json_decref(req);
	return reply;
}

/**
 * control_execute() - run one request line.
 * @ports: the live ports the request may name, @nports of them.
 * @nports: how many.
 * @line: a JSON object, NUL-terminated, without its newline.
 *
 * Thread: the control socket's (worker 0); the commands that are not lock-free run between
 * the sync ops' enter and leave.
 *
 * Return: the reply, malloc'd compact JSON without a newline (free() it); bad input gets an
 * {"ok":false,...} reply; NULL only when out of memory.
 */
char *control_execute(struct port *const *ports, unsigned nports, const char *line)
{
	const struct control_call call = {ports, nports, port_ops, port_ops_ctx};
	json_t *reply = dispatch(&call, line);
	char *text;

	if (!reply)
		return NULL;
	text = json_dumps(reply, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(reply);
	return text;
}
