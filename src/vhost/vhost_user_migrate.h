/* SPDX-License-Identifier: MIT */
/* vhost_user_migrate.h - live migration's requests on one connection: dirty log, device state, RARP. */
#ifndef VNETD_VHOST_USER_MIGRATE_H
#define VNETD_VHOST_USER_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost/vhost_user_conn.h"
#include "vhost/vhost_user_io.h"
#include "vhost/vhost_user_msg.h"

/* VHOST_F_LOG_ALL: the frontend asks for dirty logging (a vhost feature bit in SET_FEATURES). */
#define VHOST_F_LOG_ALL 26

/* vu_mig_set_log_base() - SET_LOG_BASE: map the log fd (checked), reply; logging per features. */
enum vu_result vu_mig_set_log_base(struct vu_conn *c, struct vu_rx *rx);

/* vu_mig_set_log_all() - SET_FEATURES said whether VHOST_F_LOG_ALL is on. */
void vu_mig_set_log_all(struct vu_conn *c, bool on);


/* vu_mig_send_rarp() - SEND_RARP: announce the guest's MAC through the backend. */
enum vu_result vu_mig_send_rarp(struct vu_conn *c, const struct vu_msg *m);

/* vu_mig_set_state_fd() - SET_DEVICE_STATE_FD: start saving or loading over the pipe. */
enum vu_result vu_mig_set_state_fd(struct vu_conn *c, struct vu_rx *rx);

/* vu_mig_state_io() - the device-state pipe is ready (vu_conn_state_io() in vhost_user.h). */
void vu_mig_state_io(struct vu_conn *c, uint32_t events);

/* vu_mig_check_state() - CHECK_DEVICE_STATE: reply whether the transfer succeeded. */
enum vu_result vu_mig_check_state(struct vu_conn *c, const struct vu_msg *m);

/* vu_mig_reset() - device reset or disconnect: logging off, transfer dropped, log unmapped. */
void vu_mig_reset(struct vu_conn *c, bool unmap);

#endif
