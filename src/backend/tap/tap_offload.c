/* SPDX-License-Identifier: MIT */
/* tap_offload.c - the guest's receive offloads as the tap's (TUNSETOFFLOAD), as QEMU maps them. */
#include <errno.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lib/log.h"
#include "backend/tap/tap_internal.h"

/* Map the guest's receive offloads to the tap's, the way QEMU's tap_fd_set_offload() does. */
static unsigned long tap_offload_flags(uint64_t features)
{
	unsigned long offload = 0;

	/* Without GUEST_CSUM the guest needs checksummed packets, so no segmentation either. */
	if (!(features & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		return 0;
	offload |= TUN_F_CSUM;
	if (features & BIT_ULL(VIRTIO_NET_F_GUEST_TSO4))
		offload |= TUN_F_TSO4;
	if (features & BIT_ULL(VIRTIO_NET_F_GUEST_TSO6))
		offload |= TUN_F_TSO6;
	if ((offload & (TUN_F_TSO4 | TUN_F_TSO6)) && (features & BIT_ULL(VIRTIO_NET_F_GUEST_ECN)))
		offload |= TUN_F_TSO_ECN;
	return offload;
}

/* Every receive offload a tap can send: what a trunk takes for its VLANs' switches. */
#define TAP_TRUNK_OFFLOADS                                                                         \
	(BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) | BIT_ULL(VIRTIO_NET_F_GUEST_ECN))

/**
 * tap_apply_offloads() - set the tap's receive offloads (TUNSETOFFLOAD)
 * @tq: queue 0 of the tap
 *
 * Lets the kernel send what the guest accepts; a trunk's tap every offload (its VLANs' switches
 * take them all, and the trunk makes what the guest lacks in software). The setting is the
 * interface's (all its queues), made through queue 0's fd; a refused one falls back to none
 * (logged).
 */
void tap_apply_offloads(struct tap_queue *tq)
{
	const struct tap_backend *t = tq->tap;
	unsigned long offload = tap_offload_flags(t->trunk ? TAP_TRUNK_OFFLOADS : t->guest_offloads);

	if (tq->failed || ioctl(tq->fd, TUNSETOFFLOAD, offload) == 0)
		return;
	log_warn("tap %s: TUNSETOFFLOAD 0x%lx: %s; receive offloads off", tq->tap->name, offload,
		 strerror(errno));
	/* The old setting may offer more than the guest takes now: fall back to none. */
	if (ioctl(tq->fd, TUNSETOFFLOAD, 0ul) < 0)
		log_err("tap %s: TUNSETOFFLOAD 0: %s", tq->tap->name, strerror(errno));
}

/**
 * tap_set_offloads() - the guest's receive offloads changed (struct vnet_backend_ops)
 * @be: the tap's handle
 * @guest_features: the guest's features now
 *
 * Kept for a trunk's untagged frames, and made the tap's (tap_apply_offloads()).
 */
void tap_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	struct tap_queue *tq = tq_of(be);

	tq->tap->guest_offloads = guest_features;
	tap_apply_offloads(tq);
}
