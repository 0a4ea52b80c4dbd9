/* SPDX-License-Identifier: MIT */
/* tap_open.c - attach /dev/net/tun fds to a tap interface: TUNSETIFF, header size, offloads off. */
#include "backend/tap/tap_open.h"

#include <errno.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/virtio_net_defs.h"

/* Why TUNSETIFF may have failed, for the error line. */
static const char *tap_setiff_hint(int err, bool multi_queue)
{
	switch (err) {
	case EPERM:
		return " (needs CAP_NET_ADMIN, or a persistent tap owned by this user)";
	case EBUSY:
		return " (another process has it open)";
	case EINVAL:
		return multi_queue ? " (exists but is not a multi-queue tap interface?)"
				   : " (exists but is not a tap interface?)";
	default:
		return "";
	}
}

/*
 * Attach fd to the tap. Single queue: plain first, then IFF_MULTI_QUEUE (persistent
 * multi-queue taps only take those); several queues: IFF_MULTI_QUEUE only.
 */
static int tap_setiff(int fd, const char *ifname, bool multi_queue, char *actual_name)
{
	static const short flag_sets[] = {IFF_TAP | IFF_NO_PI | IFF_VNET_HDR,
					  IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE};
	int first_err = 0;

	for (unsigned i = multi_queue ? 1 : 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, ifname, strlen(ifname));
		ifr.ifr_flags = flag_sets[i];
		if (ioctl(fd, TUNSETIFF, &ifr) == 0) {
			memcpy(actual_name, ifr.ifr_name, IFNAMSIZ);
			actual_name[IFNAMSIZ - 1] = '\0';
			return 0;
		}
		if (!first_err)
			first_err = errno;
		if (errno != EINVAL)
			return -errno;
	}
	return -first_err;
}

static int tun_dir_fd = -1;

/**
 * tap_open_tun_dir() - open /dev/net once (O_PATH), so that later taps are opened relative to it
 * (the sandbox allows run-time taps to open files in that directory only).
 *
 * Main thread, before the sandbox; later calls return the same fd.
 *
 * Return: the fd, or -1 (taps then open /dev/net/tun by path).
 */
int tap_open_tun_dir(void)
{
	if (tun_dir_fd < 0)
		tun_dir_fd = open("/dev/net", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return tun_dir_fd;
}

/**
 * tap_open_queue() - open /dev/net/tun and attach it to a tap interface as one of its queues.
 * @ifname: the interface (1 to IFNAMSIZ - 1 characters): created if it does not exist, or an
 *          existing persistent tap we may use
 * @multi_queue: attach with IFF_MULTI_QUEUE (one of several queue fds of the tap)
 * @actual_name: IFNAMSIZ bytes: the interface's name as the kernel reports it
 *
 * Non-blocking, IFF_VNET_HDR with the 12-byte virtio_net_hdr_v1 (little-endian), every offload
 * off (a persistent tap keeps the ones its previous user set). Opened relative to /dev/net
 * when tap_open_tun_dir() opened it: the sandbox allows run-time taps (vnetctl port-add) to
 * open files in that directory only.
 *
 * Return: the fd, or -1 (logged with the interface's name).
 */
int tap_open_queue(const char *ifname, bool multi_queue, char *actual_name)
{
	int hdr_len = (int)sizeof(struct virtio_net_hdr_v1);
	int fd, ret;

	fd = tun_dir_fd >= 0 ? openat(tun_dir_fd, "tun", TAP_TUN_FLAGS)
			     : open("/dev/net/tun", TAP_TUN_FLAGS);
	if (fd < 0) {
		log_err("tap %s: cannot open /dev/net/tun: %s", ifname, strerror(errno));
		return -1;
	}
	ret = tap_setiff(fd, ifname, multi_queue, actual_name);
	if (ret < 0) {
		log_err("tap %s: cannot attach%s (TUNSETIFF): %s%s", ifname,
			multi_queue ? " a queue" : "", strerror(-ret),
			tap_setiff_hint(-ret, multi_queue));
		goto fail;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
		log_err("tap %s: TUNSETVNETHDRSZ %d: %s", actual_name, hdr_len, strerror(errno));
		goto fail;
	}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	{
		int le = 1; /* VERSION_1 headers are little-endian */

		if (ioctl(fd, TUNSETVNETLE, &le) < 0) {
			log_err("tap %s: TUNSETVNETLE: %s", actual_name, strerror(errno));
			goto fail;
		}
	}
#endif
	if (ioctl(fd, TUNSETOFFLOAD, 0ul) < 0) {
		log_err("tap %s: TUNSETOFFLOAD 0: %s", actual_name, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}
