/* SPDX-License-Identifier: MIT */
/* vnetd.c - entry point of the vnetd daemon. */
#include <stdlib.h>

#include "daemon.h"
#include "log.h"
#include "options.h"

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
