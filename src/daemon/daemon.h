/* SPDX-License-Identifier: MIT */
/* daemon.h - the vnetd process: ports, control socket and the one event loop. */
#ifndef VNETD_DAEMON_H
#define VNETD_DAEMON_H

#include "config/config.h"

/* daemon_run() - set everything up from opts and serve until SIGTERM/SIGINT; exit status. */
int daemon_run(const struct vnetd_options *opts);

#endif
