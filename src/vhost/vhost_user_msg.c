/* SPDX-License-Identifier: MIT */
/* vhost_user_msg.c - vhost-user wire format: the pure validator every received message goes through. */
#include "vhost/vhost_user_msg.h"

#include <string.h>

/* Payload shapes: what a request carries. */
enum vu_shape {
	SHAPE_UNKNOWN = 0, /* request we do not know: any size, any fds */
	SHAPE_NONE,        /* no payload (at most an ignored u64), no fds */
	SHAPE_U64,         /* exactly one u64, no fds */
	SHAPE_STATE,       /* struct vu_vring_state, no fds */
	SHAPE_ADDR,        /* struct vu_vring_addr, no fds */
	SHAPE_RING_FD,     /* u64 index | NOFD, one fd unless NOFD */
	SHAPE_MEM,         /* struct vu_mem_table, one fd per region */
	SHAPE_CONFIG,      /* struct vu_config header + `size` config bytes, no fds */
	SHAPE_LOG,         /* struct vu_log, one fd */
	SHAPE_FD,          /* no payload (at most an ignored u64), one fd */
	SHAPE_XFER,        /* struct vu_transfer_state, one fd */
	SHAPE_MEM_REG,     /* struct vu_mem_reg, one fd (ADD_MEM_REG) */
	SHAPE_MEM_REG_REM, /* struct vu_mem_reg, no fd or one to close (REM_MEM_REG) */
};

struct vu_request_info {
	const char *name;
	enum vu_shape shape;
};

static const struct vu_request_info request_info[] = {
	[VU_GET_FEATURES] = {"GET_FEATURES", SHAPE_NONE},
	[VU_SET_FEATURES] = {"SET_FEATURES", SHAPE_U64},
	[VU_SET_OWNER] = {"SET_OWNER", SHAPE_NONE},
	[VU_RESET_OWNER] = {"RESET_OWNER", SHAPE_NONE},
	[VU_SET_MEM_TABLE] = {"SET_MEM_TABLE", SHAPE_MEM},
	[VU_SET_LOG_BASE] = {"SET_LOG_BASE", SHAPE_LOG},
	[VU_SET_LOG_FD] = {"SET_LOG_FD", SHAPE_FD},
	[VU_SET_VRING_NUM] = {"SET_VRING_NUM", SHAPE_STATE},
	[VU_SET_VRING_ADDR] = {"SET_VRING_ADDR", SHAPE_ADDR},
	[VU_SET_VRING_BASE] = {"SET_VRING_BASE", SHAPE_STATE},
	[VU_GET_VRING_BASE] = {"GET_VRING_BASE", SHAPE_STATE},
	[VU_SET_VRING_KICK] = {"SET_VRING_KICK", SHAPE_RING_FD},
	[VU_SET_VRING_CALL] = {"SET_VRING_CALL", SHAPE_RING_FD},
	[VU_SET_VRING_ERR] = {"SET_VRING_ERR", SHAPE_RING_FD},
	[VU_GET_PROTOCOL_FEATURES] = {"GET_PROTOCOL_FEATURES", SHAPE_NONE},
	[VU_SET_PROTOCOL_FEATURES] = {"SET_PROTOCOL_FEATURES", SHAPE_U64},
	[VU_GET_QUEUE_NUM] = {"GET_QUEUE_NUM", SHAPE_NONE},
	[VU_SET_VRING_ENABLE] = {"SET_VRING_ENABLE", SHAPE_STATE},
	[VU_SEND_RARP] = {"SEND_RARP", SHAPE_U64},
	[VU_NET_SET_MTU] = {"NET_SET_MTU", SHAPE_U64},
	[VU_SET_BACKEND_REQ_FD] = {"SET_BACKEND_REQ_FD", SHAPE_FD},
	[VU_IOTLB_MSG] = {"IOTLB_MSG", SHAPE_UNKNOWN},
	[VU_SET_VRING_ENDIAN] = {"SET_VRING_ENDIAN", SHAPE_STATE},
	[VU_GET_CONFIG] = {"GET_CONFIG", SHAPE_CONFIG},
	[VU_SET_CONFIG] = {"SET_CONFIG", SHAPE_CONFIG},
	[VU_CREATE_CRYPTO_SESSION] = {"CREATE_CRYPTO_SESSION", SHAPE_UNKNOWN},
	[VU_CLOSE_CRYPTO_SESSION] = {"CLOSE_CRYPTO_SESSION", SHAPE_UNKNOWN},
	[VU_POSTCOPY_ADVISE] = {"POSTCOPY_ADVISE", SHAPE_UNKNOWN},
	[VU_POSTCOPY_LISTEN] = {"POSTCOPY_LISTEN", SHAPE_UNKNOWN},
	[VU_POSTCOPY_END] = {"POSTCOPY_END", SHAPE_UNKNOWN},
	[VU_GET_INFLIGHT_FD] = {"GET_INFLIGHT_FD", SHAPE_UNKNOWN},
	[VU_SET_INFLIGHT_FD] = {"SET_INFLIGHT_FD", SHAPE_UNKNOWN},
	[VU_GPU_SET_SOCKET] = {"GPU_SET_SOCKET", SHAPE_UNKNOWN},
	[VU_RESET_DEVICE] = {"RESET_DEVICE", SHAPE_NONE},
	[VU_VRING_KICK] = {"VRING_KICK", SHAPE_UNKNOWN},
	[VU_GET_MAX_MEM_SLOTS] = {"GET_MAX_MEM_SLOTS", SHAPE_NONE},
	[VU_ADD_MEM_REG] = {"ADD_MEM_REG", SHAPE_MEM_REG},
	[VU_REM_MEM_REG] = {"REM_MEM_REG", SHAPE_MEM_REG_REM},
	[VU_SET_STATUS] = {"SET_STATUS", SHAPE_UNKNOWN},
	[VU_GET_STATUS] = {"GET_STATUS", SHAPE_UNKNOWN},
	[VU_GET_SHARED_OBJECT] = {"GET_SHARED_OBJECT", SHAPE_UNKNOWN},
	[VU_SET_DEVICE_STATE_FD] = {"SET_DEVICE_STATE_FD", SHAPE_XFER},
	[VU_CHECK_DEVICE_STATE] = {"CHECK_DEVICE_STATE", SHAPE_NONE},
};

#define N_REQUESTS (sizeof(request_info) / sizeof(request_info[0]))

static enum vu_shape request_shape(uint32_t request)
{
	return request < N_REQUESTS ? request_info[request].shape : SHAPE_UNKNOWN;
}

/**
 * vu_request_name() - a request's name for log lines.
 * @request: the request number, as received
 *
 * Return: "GET_FEATURES", ... (a static string), or "UNKNOWN".
 */
const char *vu_request_name(uint32_t request)
{
	if (request < N_REQUESTS && request_info[request].name)
		return request_info[request].name;
	return "UNKNOWN";
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/**
 * vu_msg_put_header() - serialise a message header (native-endian, unaligned-safe).
 * @buf: at least VU_HDR_SIZE (12) bytes
 * @request: the request number
 * @flags: version and flag bits
 * @size: payload bytes that follow
 */
void vu_msg_put_header(uint8_t *buf, uint32_t request, uint32_t flags, uint32_t size)
{
	memcpy(buf, &request, 4);
	memcpy(buf + 4, &flags, 4);
	memcpy(buf + 8, &size, 4);
}

/**
 * vu_msg_vring_index() - the ring index a ring message names (state, addr or fd message).
 * @msg: a message vu_msg_parse() accepted (the index is then < VU_MSG_MAX_VRINGS)
 *
 * Return: the index; 0 for requests that name no ring.
 */
unsigned vu_msg_vring_index(const struct vu_msg *msg)
{
	switch (request_shape(msg->request)) {
	case SHAPE_STATE:
		return msg->p.state.index;
	case SHAPE_ADDR:
		return msg->p.addr.index;
	case SHAPE_RING_FD:
		return (unsigned)(msg->p.u64 & VU_VRING_IDX_MASK);
	default:
		return 0;
	}
}

/**
 * vu_msg_fds_needed() - how many fds a request must carry.
 * @msg: a parsed message
 *
 * Return: the count (ring fd messages: 0 with VU_VRING_NOFD; memory tables: nregions), -1 for
 * an unknown request (any count), VU_FDS_ZERO_OR_ONE for REM_MEM_REG (the spec says no fd, but
 * lets a back-end accept one, to be closed unused, from older front-ends).
 */
int vu_msg_fds_needed(const struct vu_msg *msg)
{
	switch (request_shape(msg->request)) {
	case SHAPE_UNKNOWN:
		return -1;
	case SHAPE_RING_FD:
		return (msg->p.u64 & VU_VRING_NOFD) ? 0 : 1;
	case SHAPE_MEM:
		return (int)msg->p.mem.nregions;
	case SHAPE_MEM_REG_REM:
		return VU_FDS_ZERO_OR_ONE;
	case SHAPE_LOG:
	case SHAPE_FD:
	case SHAPE_XFER:
	case SHAPE_MEM_REG:
		return 1;
	default:
		return 0;
	}
}

/* Check the payload of a known shape; the payload is already copied into out->p. */
static int check_shape(const struct vu_msg *m, enum vu_shape shape, const char **why)
{
	uint32_t size = m->size;

	switch (shape) {
	case SHAPE_NONE:
	case SHAPE_FD:
		if (size > sizeof(uint64_t))
			return *why = "unexpected payload", -1;
		return 0;
	case SHAPE_U64:
	case SHAPE_RING_FD:
		if (size != sizeof(uint64_t))
			return *why = "payload is not one u64", -1;
		return 0;
	case SHAPE_STATE:
		if (size != sizeof(struct vu_vring_state))
			return *why = "bad vring state size", -1;
		if (m->p.state.index >= VU_MSG_MAX_VRINGS)
			return *why = "vring index out of range", -1;
		return 0;
	case SHAPE_ADDR:
		if (size != sizeof(struct vu_vring_addr))
			return *why = "bad vring address size", -1;
		if (m->p.addr.index >= VU_MSG_MAX_VRINGS)
			return *why = "vring index out of range", -1;
		return 0;
	case SHAPE_LOG:
		if (size != sizeof(struct vu_log))
			return *why = "bad log size", -1;
		return 0;
	case SHAPE_XFER:
		if (size != sizeof(struct vu_transfer_state))
			return *why = "bad device state transfer size", -1;
		return 0;
	case SHAPE_MEM_REG:
	case SHAPE_MEM_REG_REM:
		if (size != sizeof(struct vu_mem_reg))
			return *why = "bad memory region size", -1;
		return 0;
	case SHAPE_MEM:
		/* UML sends room for 2 regions whatever nregions says: allow slack, not shortage. */
		if (size < offsetof(struct vu_mem_table, regions))
			return *why = "memory table too short", -1;
		if (m->p.mem.nregions < 1 || m->p.mem.nregions > VU_MAX_REGIONS)
			return *why = "bad number of memory regions", -1;
		if (size < offsetof(struct vu_mem_table, regions) +
				   m->p.mem.nregions * sizeof(struct vu_mem_region))
			return *why = "memory table shorter than nregions", -1;
		return 0;
	case SHAPE_CONFIG:
		if (size < VU_CONFIG_HDR_SIZE)
			return *why = "config message too short", -1;
		if (m->p.config.size > VU_MAX_CONFIG_SIZE)
			return *why = "config size over 256", -1;
		if (m->p.config.offset > VU_MAX_CONFIG_SIZE - m->p.config.size)
			return *why = "config offset + size over 256", -1;
		if (size != VU_CONFIG_HDR_SIZE + m->p.config.size)
			return *why = "config payload size does not match config size", -1;
		return 0;
	case SHAPE_UNKNOWN:
		return 0;
	}
	return *why = "internal: bad shape", -1;
}

/**
 * vu_msg_parse() - the pure validator every received message goes through.
 * @buf: the header and exactly `size` payload bytes
 * @len: bytes in @buf (12 + size)
 * @nfds: fds that arrived with the message
 * @out: the message; payload bytes beyond its size are zero
 * @why: set to a static string saying what was wrong ("ok" on success)
 *
 * Checks the version, the reply flag, the payload size for the request, the fd count the request
 * needs, ring indexes (< VU_MSG_MAX_VRINGS), nregions (1..8), single-region sizes and config
 * bounds. Unknown requests pass with any size and fds (the caller rejects them). Pure; never
 * reads past @len.
 *
 * Return: 0, or -1 with *@why set.
 */
int vu_msg_parse(const uint8_t *buf, size_t len, unsigned nfds, struct vu_msg *out,
		 const char **why)
{
	enum vu_shape shape;
	int need;

	*why = "ok";
	memset(out, 0, sizeof(*out));
	if (len < VU_HDR_SIZE)
		return *why = "short header", -1;
	out->request = get_u32(buf);
	out->flags = get_u32(buf + 4);
	out->size = get_u32(buf + 8);
	out->nfds = nfds;
	if ((out->flags & VU_FLAG_VERSION_MASK) != VU_VERSION)
		return *why = "bad version", -1;
	if (out->flags & VU_FLAG_REPLY)
		return *why = "reply flag on a request", -1;
	if (out->size > VU_MSG_MAX_PAYLOAD)
		return *why = "payload too big", -1;
	if (len - VU_HDR_SIZE != out->size)
		return *why = "length does not match header size", -1;
	if (nfds > VU_MAX_FDS)
		return *why = "too many fds", -1;
	memcpy(&out->p, buf + VU_HDR_SIZE, out->size);

	shape = request_shape(out->request);
	if (check_shape(out, shape, why) < 0)
		return -1;
	need = vu_msg_fds_needed(out);
	if ((need >= 0 && (unsigned)need != nfds) || (need == VU_FDS_ZERO_OR_ONE && nfds > 1))
		return *why = "wrong number of fds for request", -1;
	return 0;
}
