/* SPDX-License-Identifier: MIT */
/* rxhash_probe.c - in a Linux guest: the skb->hash its driver set on received UDP datagrams. */
/*
 * rxhash_probe IFACE DPORT COUNT SECONDS
 *
 * Prints "sport hash" (hash in hex) for each UDP/IPv4 datagram to DPORT seen on IFACE, until
 * COUNT distinct source ports were seen or SECONDS passed; "ready" once listening.
 *
 * How it reads skb->hash from user space: 8 AF_PACKET fanout groups of 16 sockets each, every
 * group steered by a classic BPF program (PACKET_FANOUT_CBPF) that returns nibble g of
 * skb->hash (the SKF_AD_RXHASH ancillary load, which reads the field as the driver set it and
 * computes nothing). Every group sees every frame; the socket a frame arrives on in group g is
 * nibble g. With VIRTIO_NET_F_HASH_REPORT the virtio-net driver sets skb->hash from the
 * header's hash_value (virtio_skb_set_hash()).
 *
 * Built statically by the test on the host and fetched by the guest over HTTP.
 */
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define GROUPS 8
#define MEMBERS 16
#define MAX_PORTS 65536

static uint32_t hash_of[MAX_PORTS];
static uint8_t seen_in[MAX_PORTS]; /* bit g: group g reported this port */

static int member(int ifindex, int group)
{
	struct sock_filter prog[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_RXHASH),
	    BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, (unsigned)(4 * group)),
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, MEMBERS - 1),
	    BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog fp = {sizeof(prog) / sizeof(prog[0]), prog};
	struct sockaddr_ll sll = {0};
	int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	int arg = (0x4000 + group) | PACKET_FANOUT_CBPF << 16;

	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_IP);
	sll.sll_ifindex = ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_FANOUT_DATA, &fp, sizeof(fp)) < 0) {
		perror("bind/fanout");
		exit(1);
	}
	return fd;
}

int main(int argc, char **argv)
{
	static struct pollfd pfd[GROUPS * MEMBERS];
	unsigned dport, want, done = 0;
	int ifindex;
	time_t end;

	if (argc != 5) {
		fprintf(stderr, "usage: rxhash_probe IFACE DPORT COUNT SECONDS\n");
		return 2;
	}
	ifindex = (int)if_nametoindex(argv[1]);
	dport = (unsigned)atoi(argv[2]);
	want = (unsigned)atoi(argv[3]);
	end = time(NULL) + atoi(argv[4]);
	if (!ifindex) {
		perror(argv[1]);
		return 1;
	}
	for (int g = 0; g < GROUPS; g++)
		for (int m = 0; m < MEMBERS; m++) {
			pfd[g * MEMBERS + m].fd = member(ifindex, g);
			pfd[g * MEMBERS + m].events = POLLIN;
		}
	printf("ready\n");
	fflush(stdout);
	while (done < want && time(NULL) < end) {
		if (poll(pfd, GROUPS * MEMBERS, 500) <= 0)
			continue;
		for (int i = 0; i < GROUPS * MEMBERS; i++) {
			uint8_t b[128];
			ssize_t n;
			unsigned ihl, sport, g = (unsigned)i / MEMBERS, nib = (unsigned)i % MEMBERS;

			if (!(pfd[i].revents & POLLIN))
				continue;
			n = recv(pfd[i].fd, b, sizeof(b), MSG_DONTWAIT);
			if (n < 28 || (b[0] >> 4) != 4 || b[9] != 17)
				continue;
			ihl = (b[0] & 15u) * 4;
			if ((size_t)n < ihl + 8 || (unsigned)(b[ihl + 2] << 8 | b[ihl + 3]) != dport)
				continue;
			sport = (unsigned)(b[ihl] << 8 | b[ihl + 1]);
			if (seen_in[sport] & (1u << g))
				continue;
			hash_of[sport] |= (uint32_t)nib << (4 * g);
			seen_in[sport] |= (uint8_t)(1u << g);
			if (seen_in[sport] == 0xff) {
				printf("%u %08x\n", sport, hash_of[sport]);
				fflush(stdout);
				done++;
			}
		}
	}
	return 0;
}
