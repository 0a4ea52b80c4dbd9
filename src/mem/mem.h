/* SPDX-License-Identifier: MIT */
/* mem.h - guest memory's API: regions and the checked lookup, SIGBUS recovery, dirty log, caps. */
#ifndef VNETD_MEM_H
#define VNETD_MEM_H

/*
 * The folder's one public header: what the layers above use of guest memory. Each part keeps
 * its own header in this folder (included here, and by the folder's own files directly).
 */
#include "mem/dirty_log.h"
#include "mem/guest_fault.h"
#include "mem/guest_mem.h"
#include "mem/guest_race.h"
#include "mem/mem_cap.h"

#endif
