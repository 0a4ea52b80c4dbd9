/* SPDX-License-Identifier: MIT */
/* mem_cap.h - caps on the guest memory vnetd maps: per-port defaults and the daemon-wide budget. */
#ifndef VNETD_MEM_CAP_H
#define VNETD_MEM_CAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * What is counted is address space: a memory region is mapped from the start of its file, so
 * it costs memory_size + mmap_offset (the way QEMU's libvhost-user and DPDK map it too), and a
 * dirty log costs mmap_size + mmap_offset. A 1 TiB QEMU guest maps about 1 TiB + 3 GiB (its
 * memory below 4 GiB is mapped twice) plus a 32 MiB log: the per-port default leaves room.
 */
#define MEM_CAP_PORT_DEFAULT (2ull << 40)   /* 2 TiB per port (max-mem=) */
#define MEM_CAP_DAEMON_DEFAULT (64ull << 40) /* 64 TiB in all: half of x86-64's user space */

/*
 * Memory regions a port's frontend may map by default (max-mem-slots=; GET_MAX_MEM_SLOTS
 * answers it): QEMU asks and uses min(that, its own 512). A QEMU guest maps 1 to 4 regions,
 * SET_MEM_TABLE carries 8, the rest is room for DIMM or virtio-mem hotplug. With its dirty log,
 * 1024 ports at this cap keep below Linux's default vm.max_map_count (65530 mappings a
 * process) even while each replaces its table: 1024 x (32 + 1 + 8) = 41,984. At most
 * GUEST_MEM_MAX_REGIONS (509).
 */
#define MEM_CAP_SLOTS_DEFAULT 32u

/* Room for mem_cap_format()'s longest output ("18446744073709551615" and a NUL). */
#define MEM_CAP_STR_LEN 24

/* mem_cap_set_daemon() - the daemon-wide cap (--max-guest-mem) on all ports' mappings. */
void mem_cap_set_daemon(uint64_t bytes);

/* mem_cap_daemon() - the daemon-wide cap now. */
uint64_t mem_cap_daemon(void);

/*
 * mem_cap_charge() - count `bytes` of guest mappings against the daemon-wide cap, from any
 * thread. 0, or -1 (nothing counted) when the total would exceed the cap.
 */
int mem_cap_charge(uint64_t bytes);

/* mem_cap_uncharge() - the mapping is gone: `bytes` are free again. */
void mem_cap_uncharge(uint64_t bytes);

/* mem_cap_in_use() - bytes of guest mappings counted now, over all ports. */
uint64_t mem_cap_in_use(void);

/*
 * mem_cap_parse() - a size: decimal digits with an optional K, M, G or T suffix (powers of
 * 1024, either case), at least 1 and no more than 2^63. 0, or -1 if s is not one.
 */
int mem_cap_parse(const char *s, uint64_t *out);

/* mem_cap_format() - bytes the way mem_cap_parse() reads them ("2T", "1536M", "4097"). */
const char *mem_cap_format(uint64_t bytes, char buf[MEM_CAP_STR_LEN]);

#endif
