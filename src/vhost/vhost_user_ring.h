/* SPDX-License-Identifier: MIT */
/* vhost_user_ring.h - a connection's rings: SET_VRING_* requests, queue fds, start and stop. */
#ifndef VNETD_VHOST_USER_RING_H
#define VNETD_VHOST_USER_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost/vhost_user_conn.h"
#include "vhost/vhost_user_io.h"
#include "vhost/vhost_user_msg.h"

/* The ring requests (vhost_user.c dispatches them): each checks the queue index (VU_FAIL). */
enum vu_result vu_ring_set_num(struct vu_conn *c, const struct vu_msg *m);   /* SET_VRING_NUM */
enum vu_result vu_ring_set_addr(struct vu_conn *c, const struct vu_msg *m);  /* SET_VRING_ADDR */
enum vu_result vu_ring_set_base(struct vu_conn *c, const struct vu_msg *m);  /* SET_VRING_BASE */
enum vu_result vu_ring_get_base(struct vu_conn *c, const struct vu_msg *m);  /* GET_VRING_BASE */
enum vu_result vu_ring_set_fd(struct vu_conn *c, struct vu_rx *rx);          /* KICK, CALL, ERR */
enum vu_result vu_ring_enable(struct vu_conn *c, const struct vu_msg *m);    /* SET_VRING_ENABLE */

/* vu_ring_pause_all() - stop the running queues (a memory table swap), noting which ran. */
void vu_ring_pause_all(struct vu_conn *c, bool was_started[VNET_MAX_QUEUES]);

/* vu_ring_resume_all() - restart the queues that ran or have a kick fd, on the new table. */
void vu_ring_resume_all(struct vu_conn *c, const bool was_started[VNET_MAX_QUEUES]);

/* vu_ring_started() - whether ring qidx is started (running or broken); false out of range. */
bool vu_ring_started(const struct vu_conn *c, unsigned qidx);

/* vu_ring_any_started() - whether any of the device's rings is started. */
bool vu_ring_any_started(const struct vu_conn *c);

/* vu_ring_addr() - ring qidx's addresses as SET_VRING_ADDR set them; false out of range. */
bool vu_ring_addr(const struct vu_conn *c, unsigned qidx, struct vu_vring_addr *a);

/* vu_ring_break() - a refused ring message the frontend cannot be told of: break the ring. */
void vu_ring_break(struct vu_conn *c, unsigned qidx, const char *why);

/* vu_ring_drop_fds() - close every queue's kick, call and err fd (the owner hears of kicks). */
void vu_ring_drop_fds(struct vu_conn *c);

/* vu_ring_kick_failed() - vu_conn_kick_failed() (vhost_user.h). */
void vu_ring_kick_failed(struct vu_conn *c, unsigned qidx, uint32_t events);

/* vu_ring_signal_error() - vu_conn_signal_error() (vhost_user.h). */
void vu_ring_signal_error(struct vu_conn *c, unsigned qidx);

#endif
