/* vhost_user_internal.h - what vhost_user.c shares with vhost_user_migrate.c (one connection). */
#ifndef VNETD_VHOST_USER_INTERNAL_H
#define VNETD_VHOST_USER_INTERNAL_H

#include "vhost_user.h"
#include "vhost_user_msg.h"

/* Outcome of one request. */
enum vu_result {
	VU_OK = 0,          /* done; REPLY_ACK 0 */
	VU_FAIL = -1,       /* refused; REPLY_ACK 1, the connection stays */
	VU_DISCONNECT = -2, /* the connection must be closed (reply could not be sent) */
};

/* One received message with the fds that came with it; a handler keeping fds[i] sets it to -1. */
struct vu_rx {
	struct vu_msg msg;
	int fds[VU_MAX_FDS];
	unsigned nfds;
};

/* vu_take_fd() - take fd i of a message: the caller owns it from now on. */
static inline int vu_take_fd(struct vu_rx *rx, unsigned i)
{
	int fd = rx->fds[i];

	rx->fds[i] = -1;
	return fd;
}

/* vu_reply_u64() - answer request with a u64 (its own reply, not a REPLY_ACK). */
enum vu_result vu_reply_u64(struct vu_conn *c, uint32_t request, uint64_t v);

/*
 * vu_mem_admit() - may the connection map `bytes` more of guest memory (mem_cap.h), `kept`
 * being what it keeps mapped besides (the table for a new log, the log for a new table)?
 * Checks the port's max-mem= and charges the daemon-wide cap: 0, or -1 (logged, naming the
 * cap, nothing charged). The caller gives the bytes back (mem_cap_uncharge()) when it unmaps.
 */
int vu_mem_admit(struct vu_conn *c, const char *what, uint64_t bytes, uint64_t kept);

/* ---- vhost_user_migrate.c: live migration (dirty log, device state, announce) ---- */

/* VHOST_F_LOG_ALL: the frontend asks for dirty logging (a vhost feature bit in SET_FEATURES). */
#define VHOST_F_LOG_ALL 26

/* vu_mig_set_log_base() - SET_LOG_BASE: map the log fd (checked), reply; logging per features. */
enum vu_result vu_mig_set_log_base(struct vu_conn *c, struct vu_rx *rx);

/* vu_mig_set_log_all() - SET_FEATURES said whether VHOST_F_LOG_ALL is on. */
void vu_mig_set_log_all(struct vu_conn *c, bool on);

/* vu_mig_vring_addr() - SET_VRING_ADDR's logging part (VHOST_VRING_F_LOG, log_guest_addr). */
void vu_mig_vring_addr(struct vnet_queue *q, const struct vu_vring_addr *a);

/* vu_mig_send_rarp() - SEND_RARP: announce the guest's MAC through the backend. */
enum vu_result vu_mig_send_rarp(struct vu_conn *c, const struct vu_msg *m);

/* vu_mig_set_state_fd() - SET_DEVICE_STATE_FD: start saving or loading over the pipe. */
enum vu_result vu_mig_set_state_fd(struct vu_conn *c, struct vu_rx *rx);

/* vu_mig_check_state() - CHECK_DEVICE_STATE: reply whether the transfer succeeded. */
enum vu_result vu_mig_check_state(struct vu_conn *c, const struct vu_msg *m);

/* vu_mig_reset() - device reset or disconnect: logging off, transfer dropped, log unmapped. */
void vu_mig_reset(struct vu_conn *c, bool unmap);

#endif
