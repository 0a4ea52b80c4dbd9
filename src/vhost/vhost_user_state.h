/* SPDX-License-Identifier: MIT */
/* vhost_user_state.h - which vhost-user message is legal in which connection and ring state. */
#ifndef VNETD_VHOST_USER_STATE_H
#define VNETD_VHOST_USER_STATE_H

#include <stdbool.h>

#include "vhost/vhost_user_conn.h"
#include "vhost/vhost_user_msg.h"

/* What a refusal breaks when the frontend cannot be told with an ERR ack. */
enum vu_refusal_scope {
	VU_REFUSE_RING,   /* the ring the message names: marked broken (NEEDS_RESET), error fd */
	VU_REFUSE_DEVICE, /* the whole device: the connection is closed */
};

/* Why a message was refused, for the log line and the caller's answer. */
struct vu_refusal {
	const char *why;             /* the rule it broke, e.g. "ring 2 is running" */
	enum vu_refusal_scope scope; /* what breaks when no ERR ack can say it */
	unsigned qidx;               /* the ring, for VU_REFUSE_RING */
};

/*
 * vu_state_allows() - whether message @m is legal in @c's state now (docs/design.md, "The
 * vhost-user state machine"). Pure: reads the connection and its rings, changes nothing.
 * Returns true, or false with @r filled.
 */
bool vu_state_allows(const struct vu_conn *c, const struct vu_msg *m, struct vu_refusal *r);

/* vu_state_name() - the connection's state in a few words, for log lines (a static buffer). */
const char *vu_state_name(const struct vu_conn *c, char *buf, unsigned len);

#endif
