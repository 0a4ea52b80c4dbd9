/* SPDX-License-Identifier: MIT */
/* coalesce.h - per-virtqueue notification coalescing state and rules (VIRTIO_NET_F_NOTF_COAL). */
#ifndef VNETD_COALESCE_H
#define VNETD_COALESCE_H

#include <stdbool.h>
#include <stdint.h>

/* The spec's struct virtio_net_ctrl_coal, in host order. 0 in either field: notify each packet. */
struct coal_params {
	uint32_t max_packets;
	uint32_t max_usecs;
};

/* Who set the parameters a queue uses now. */
enum coal_setter {
	COAL_SET_NONE = 0, /* defaults (zero): notify after every packet */
	COAL_SET_GUEST,    /* the driver, over the control queue */
	COAL_SET_HOST,     /* the host: command line or control socket */
	COAL_SET_ADAPTIVE, /* the device's adaptive controller (coal_adaptive.c) */
};

/* Counting state of one queue. */
struct coal_state {
	struct coal_params params;
	enum coal_setter setter;
	uint32_t pending;     /* packets completed since the last notification */
	uint64_t first_ns;    /* when the first of them completed */
};

/* What coal_evaluate() says. */
enum coal_verdict {
	COAL_IDLE,   /* nothing pending */
	COAL_DUE,    /* notify now */
	COAL_HOLD,   /* wait; a deadline applies */
};

/* coal_active() - whether these parameters ever delay a notification. */
static inline bool coal_active(const struct coal_params *p)
{
	return p->max_packets != 0 && p->max_usecs != 0;
}

/* coal_add_packets() - count packets completed at now_ns (starts the window on the first). */
void coal_add_packets(struct coal_state *c, uint32_t packets, uint64_t now_ns);

/* coal_evaluate() - apply the rules at now_ns; on COAL_HOLD *deadline_ns is when it is due. */
enum coal_verdict coal_evaluate(const struct coal_state *c, uint64_t now_ns, uint64_t *deadline_ns);

/* coal_restart() - a notification was sent (or suppressed by the driver): start over. */
void coal_restart(struct coal_state *c);

/* coal_set_params() - new parameters; pending packets stay counted (re-evaluate after). */
void coal_set_params(struct coal_state *c, const struct coal_params *p, enum coal_setter who);

/* coal_setter_name() - "none", "guest", "host" or "adaptive". */
const char *coal_setter_name(enum coal_setter who);

#endif
