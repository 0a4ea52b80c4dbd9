/* sandbox.h - confinement after setup: privilege drop, no_new_privs, seccomp allow-list. */
#ifndef VNETD_SANDBOX_H
#define VNETD_SANDBOX_H

#include "options.h"

/* sandbox_enter() - apply --user, no_new_privs and the seccomp filter unless --no-sandbox; 0/-1. */
int sandbox_enter(const struct vnetd_options *opts);

#endif
