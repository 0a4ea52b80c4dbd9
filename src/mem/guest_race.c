/* SPDX-License-Identifier: MIT */
/* guest_race.c - test builds only: the installed "other vCPU" hook (guest_race.h). */
#include "mem/guest_race.h"

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
guest_race_fn *guest_race_hook;
void *guest_race_ctx;
#else
/* ISO C wants a translation unit to declare something. */
typedef int guest_race_unused;
#endif
