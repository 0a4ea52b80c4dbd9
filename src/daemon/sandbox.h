/* SPDX-License-Identifier: MIT */
/* sandbox.h - confinement after setup: privilege drop, no_new_privs, seccomp allow-list. */
#ifndef VNETD_SANDBOX_H
#define VNETD_SANDBOX_H

#include "config/config.h"

/*
 * sandbox_allow_openat() - before sandbox_enter(): the filter lets openat(dirfd, NAME, flags)
 * through for exactly this dirfd and these flags (run-time taps, the config file, the state
 * directory). 0, or -1 (too many).
 */
int sandbox_allow_openat(int dirfd, int flags);

/* sandbox_enter() - apply --user, no_new_privs and the seccomp filter unless --no-sandbox; 0/-1. */
int sandbox_enter(const struct vnetd_options *opts);

#endif
