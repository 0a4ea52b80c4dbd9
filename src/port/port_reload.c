/* SPDX-License-Identifier: MIT */
/* port_reload.c - the port table's --config file: opened at start-up, applied again on SIGHUP. */
#include "port/port_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "lib/log.h"

/**
 * port_table_reload() - apply the --config file.
 * @t: the table, with port_table_open_config() done
 *
 * Ports it no longer lists (or lists with another spec) go, new ones come; ports it lists
 * unchanged stay untouched (their guests notice nothing). A file that does not parse changes
 * nothing. Ports from the command line or port-add are not its own. Main thread (start-up or
 * SIGHUP), the other workers parked.
 *
 * Return: 0, or -1 (logged) when the file did not parse or a port failed.
 */
int port_table_reload(struct port_table *t)
{
	static struct config_ports cp;
	char err[256];
	bool keep[VNETD_MAX_PORTS] = {false};
	unsigned added = 0, removed = 0, failed = 0;

	if (config_file_load(t->config_dir, t->config_name, &cp, err, sizeof(err)) < 0) {
		log_err("config %s: %s; nothing changed", t->config_path, err);
		return -1;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++) {
		bool listed = false;

		if (!t->ports[i] || t->origin[i] != PORT_ORIGIN_CONFIG || t->doomed[i])
			continue;
		for (unsigned j = 0; j < cp.n && !listed; j++)
			if (!keep[j] && t->config_spec[i] &&
			    strcmp(cp.spec[j], t->config_spec[i]) == 0)
				keep[j] = listed = true;
		if (!listed) {
			port_table_doom(t, i);
			removed++;
		}
	}
	port_table_reap(t); /* a changed port's socket and tap are free again for its new spec */
	for (unsigned j = 0; j < cp.n; j++) {
		int slot;

		if (keep[j])
			continue;
		slot = port_table_add_spec(t, cp.spec[j], PORT_ORIGIN_CONFIG, err, sizeof(err));
		if (slot < 0) {
			log_err("config %s: port %u: %s", t->config_path, j, err);
			failed++;
			continue;
		}
		/* NULL (no memory): the port is replaced at the next reload. */
		t->config_spec[slot] = strdup(cp.spec[j]);
		added++;
	}
	log_info("config %s: %u port(s) added, %u removed, %u unchanged, %u failed", t->config_path,
		 added, removed, cp.n - added - failed, failed);
	return failed ? -1 : 0;
}

/**
 * port_table_open_config() - open the directory of the --config file and keep it.
 * @t: the table
 * @path: --config FILE (kept: static storage of the options)
 *
 * SIGHUP re-reads the file by name in it (an editor's rename is seen), and the sandbox allows
 * opening files there only (the caller allows the directory). Main thread, start-up.
 *
 * Return: the directory (an O_PATH fd the table keeps), or -1 (logged).
 */
int port_table_open_config(struct port_table *t, const char *path)
{
	char dir[256];
	const char *slash = strrchr(path, '/');

	t->config_path = path;
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		t->config_name = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		t->config_name = path;
	}
	t->config_dir = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->config_dir < 0 || t->config_name[0] == '\0') {
		log_err("config %s: cannot open its directory: %s", path,
			t->config_dir < 0 ? strerror(errno) : "no file name");
		return -1;
	}
	return t->config_dir;
}
