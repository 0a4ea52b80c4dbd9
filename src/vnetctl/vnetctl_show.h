/* SPDX-License-Identifier: MIT */
/* vnetctl_show.h - vnetctl's read-only commands: ports and stats, printed as text tables. */
#ifndef VNETD_VNETCTL_SHOW_H
#define VNETD_VNETCTL_SHOW_H

/* cmd_ports() - vnetctl ports: the table of ports and their RSS state. */
int cmd_ports(const char *path, int argc, char **argv);

/* cmd_stats() - vnetctl stats [--json] [PORT]: per-queue counters, coalescing, timer lateness. */
int cmd_stats(const char *path, int argc, char **argv);

#endif /* VNETD_VNETCTL_SHOW_H */
