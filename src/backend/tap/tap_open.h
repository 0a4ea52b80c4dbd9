/* SPDX-License-Identifier: MIT */
/* tap_open.h - attach /dev/net/tun fds to a tap interface: TUNSETIFF, header size, offloads off. */
#ifndef VNETD_TAP_OPEN_H
#define VNETD_TAP_OPEN_H

#include <fcntl.h>
#include <stdbool.h>

/* Flags /dev/net/tun is opened with (the sandbox allows exactly these, see sandbox.c). */
#define TAP_TUN_FLAGS (O_RDWR | O_NONBLOCK | O_CLOEXEC)

/*
 * tap_open_tun_dir() - open /dev/net once (O_PATH) so that later taps are opened relative to
 * it; the fd, or -1 (taps then open /dev/net/tun by path).
 */
int tap_open_tun_dir(void);

/*
 * tap_open_queue() - open /dev/net/tun and attach it to tap `ifname` (created if missing) with
 * IFF_VNET_HDR, a 12-byte header and every offload off. multi_queue: IFF_MULTI_QUEUE (one of
 * several queue fds); else a single-queue attach, or IFF_MULTI_QUEUE for an existing
 * persistent multi-queue tap. The kernel's name goes to actual_name (IFNAMSIZ bytes). The fd,
 * or -1 (logged).
 */
int tap_open_queue(const char *ifname, bool multi_queue, char *actual_name);

#endif
