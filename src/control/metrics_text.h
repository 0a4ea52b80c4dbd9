/* SPDX-License-Identifier: MIT */
/* metrics_text.h - Prometheus text exposition (format 0.0.4) of port and queue statistics. */
#ifndef VNETD_METRICS_TEXT_H
#define VNETD_METRICS_TEXT_H

#include "control/stats.h"
#include "lib/textbuf.h"

/* A port and its queues, as read by stats.c. */
struct metrics_port_view {
	struct stats_port port;
	const struct stats_queue *queues; /* port.nqueues entries */
};

/* metrics_format() - append every vnetd metric family (HELP, TYPE, samples) for these ports. */
void metrics_format(struct textbuf *tb, const struct metrics_port_view *ports, unsigned nports);

#endif
