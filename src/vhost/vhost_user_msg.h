/* SPDX-License-Identifier: MIT */
/* vhost_user_msg.h - vhost-user wire format and the pure message validator (no I/O, no state). */
#ifndef VNETD_VHOST_USER_MSG_H
#define VNETD_VHOST_USER_MSG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Messages are native-endian: a 12-byte header (request, flags, size) followed by `size` payload
 * bytes. File descriptors travel as SCM_RIGHTS with the header. Numbers from QEMU
 * docs/interop/vhost-user.rst.
 */
enum vu_request {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_SEND_RARP = 19,
	VU_NET_SET_MTU = 20,
	VU_SET_BACKEND_REQ_FD = 21, /* a.k.a. SET_SLAVE_REQ_FD */
	VU_IOTLB_MSG = 22,
	VU_SET_VRING_ENDIAN = 23,
	VU_GET_CONFIG = 24,
	VU_SET_CONFIG = 25,
	VU_CREATE_CRYPTO_SESSION = 26,
	VU_CLOSE_CRYPTO_SESSION = 27,
	VU_POSTCOPY_ADVISE = 28,
	VU_POSTCOPY_LISTEN = 29,
	VU_POSTCOPY_END = 30,
	VU_GET_INFLIGHT_FD = 31,
	VU_SET_INFLIGHT_FD = 32,
	VU_GPU_SET_SOCKET = 33,
	VU_RESET_DEVICE = 34,
	VU_VRING_KICK = 35,
	VU_GET_MAX_MEM_SLOTS = 36,
	VU_ADD_MEM_REG = 37,
	VU_REM_MEM_REG = 38,
	VU_SET_STATUS = 39,
	VU_GET_STATUS = 40,
	VU_GET_SHARED_OBJECT = 41,
	VU_SET_DEVICE_STATE_FD = 42,
	VU_CHECK_DEVICE_STATE = 43,
};

/* Protocol feature bits (GET/SET_PROTOCOL_FEATURES). */
#define VU_PROTOCOL_F_MQ 0
#define VU_PROTOCOL_F_LOG_SHMFD 1
#define VU_PROTOCOL_F_RARP 2
#define VU_PROTOCOL_F_REPLY_ACK 3
#define VU_PROTOCOL_F_MTU 4
#define VU_PROTOCOL_F_BACKEND_REQ 5 /* a.k.a. SLAVE_REQ */
#define VU_PROTOCOL_F_CROSS_ENDIAN 6
#define VU_PROTOCOL_F_CRYPTO_SESSION 7
#define VU_PROTOCOL_F_PAGEFAULT 8
#define VU_PROTOCOL_F_CONFIG 9
#define VU_PROTOCOL_F_BACKEND_SEND_FD 10
#define VU_PROTOCOL_F_HOST_NOTIFIER 11
#define VU_PROTOCOL_F_INFLIGHT_SHMFD 12
#define VU_PROTOCOL_F_RESET_DEVICE 13
#define VU_PROTOCOL_F_INBAND_NOTIFICATIONS 14
#define VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15
#define VU_PROTOCOL_F_STATUS 16
#define VU_PROTOCOL_F_DEVICE_STATE 19

/* Header flags. */
#define VU_VERSION 1u
#define VU_FLAG_VERSION_MASK 0x3u
#define VU_FLAG_REPLY (1u << 2)
#define VU_FLAG_NEED_REPLY (1u << 3)

/* SET_VRING_KICK/CALL/ERR u64 payload: ring index in bits 0-7, bit 8 = no fd. */
#define VU_VRING_IDX_MASK 0xffull
#define VU_VRING_NOFD (1ull << 8)

#define VU_HDR_SIZE 12u
#define VU_MAX_FDS 8u              /* fds one message may carry */
#define VU_MAX_REGIONS 8u          /* regions in SET_MEM_TABLE (ADD_MEM_REG adds more) */
#define VU_MAX_CONFIG_SIZE 256u    /* config space bytes in GET/SET_CONFIG */
#define VU_CONFIG_HDR_SIZE 12u     /* offset, size, flags before the config bytes */
#define VU_MSG_MAX_VRINGS 256u     /* ring indexes the wire can name (8-bit in KICK/CALL/ERR) */

struct vu_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vu_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc; /* frontend user virtual addresses */
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};

struct vu_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
};

struct vu_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vu_mem_region regions[VU_MAX_REGIONS];
};

/* ADD_MEM_REG / REM_MEM_REG payload: one region (REM matches gpa, size and uva only). */
struct vu_mem_reg {
	uint64_t padding;
	struct vu_mem_region region;
};

struct vu_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VU_MAX_CONFIG_SIZE];
};

struct vu_log {
	uint64_t mmap_size;
	uint64_t mmap_offset;
};

/* SET_DEVICE_STATE_FD payload (the pipe comes as the message's fd). */
#define VU_TRANSFER_STATE_SAVE 0u         /* back-end writes its state, front-end reads */
#define VU_TRANSFER_STATE_LOAD 1u         /* front-end writes, back-end reads */
#define VU_TRANSFER_STATE_PHASE_STOPPED 0u /* the only phase: device and rings stopped */
struct vu_transfer_state {
	uint32_t direction;
	uint32_t phase;
};

/* VHOST_VRING_F_LOG in vu_vring_addr.flags: log used ring writes at vu_vring_addr.log. */
#define VU_VRING_F_LOG 1u

/* Payload as laid out on the wire (every member has its natural alignment: no padding). */
union vu_payload {
	uint64_t u64;
	struct vu_vring_state state;
	struct vu_vring_addr addr;
	struct vu_mem_table mem;
	struct vu_mem_reg mem_reg;
	struct vu_config config;
	struct vu_log log;
	struct vu_transfer_state xfer;
};

#define VU_MSG_MAX_PAYLOAD ((uint32_t)sizeof(union vu_payload))

_Static_assert(sizeof(struct vu_vring_addr) == 40, "vring addr wire size");
_Static_assert(sizeof(struct vu_mem_table) == 8 + 8 * 32, "memory table wire size");
_Static_assert(sizeof(struct vu_mem_reg) == 40, "single memory region wire size");
_Static_assert(sizeof(struct vu_config) == VU_CONFIG_HDR_SIZE + VU_MAX_CONFIG_SIZE, "config size");

/* A validated message. Payload bytes beyond `size` are zero. */
struct vu_msg {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
	unsigned nfds;        /* fds that came with it (validated against the request) */
	union vu_payload p;
};

/*
 * vu_msg_parse() - validate one whole message: buf holds the header and exactly `size` payload
 * bytes (len == 12 + size), nfds is how many fds arrived with it. Checks the version, the payload
 * size for the request, the fd count the request needs, ring indexes (< VU_MSG_MAX_VRINGS),
 * nregions (1..8), single-region sizes (ADD/REM_MEM_REG) and config bounds. Unknown requests pass with any size and fds (the caller
 * rejects them). Pure; never reads past len. Returns 0, or -1 with *why set to a static string.
 */
int vu_msg_parse(const uint8_t *buf, size_t len, unsigned nfds, struct vu_msg *out,
		 const char **why);

/* vu_msg_vring_index() - ring index a ring message names (state, addr or fd message). */
unsigned vu_msg_vring_index(const struct vu_msg *msg);

/* vu_msg_fds_needed() result for REM_MEM_REG: no fd, or one (closed unused), as the spec allows. */
#define VU_FDS_ZERO_OR_ONE (-2)

/*
 * vu_msg_fds_needed() - fds a (parsed, known) request carries; -1 for "any" (unknown request),
 * VU_FDS_ZERO_OR_ONE for REM_MEM_REG.
 */
int vu_msg_fds_needed(const struct vu_msg *msg);

/* vu_request_name() - "GET_FEATURES", ... or "UNKNOWN". */
const char *vu_request_name(uint32_t request);

/* vu_msg_put_header() - write a 12-byte header into buf (which must hold VU_HDR_SIZE bytes). */
void vu_msg_put_header(uint8_t *buf, uint32_t request, uint32_t flags, uint32_t size);

#endif
