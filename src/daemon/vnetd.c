/* SPDX-License-Identifier: MIT */
/* vnetd.c - entry point of the vnetd daemon. */
#include <stdlib.h>

#include "daemon/daemon.h"
#include "lib/log.h"
#include "config/config.h"

/**
 * main() - vnetd: parse the command line, then run the daemon until SIGTERM or SIGINT.
 * @argc: argument count
 * @argv: the arguments (options.h)
 *
 * Return: 0 after --help, 2 for a bad command line, else daemon_run()'s exit status.
 */
int main(int argc, char **argv)
{
	static struct vnetd_options opts;
	int r = options_parse(argc, argv, &opts);

	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : 2;
	if (opts.verbose)
		log_threshold = LOG_DEBUG;
	return daemon_run(&opts);
}
