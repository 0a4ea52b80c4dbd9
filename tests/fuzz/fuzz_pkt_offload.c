/* SPDX-License-Identifier: MIT */
/* fuzz_pkt_offload.c - libFuzzer: a virtio-net header against its frame (pkt_offload_parse()), then the offload done in software (pkt_soft()). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "pkt/pkt.h"
#include "pkt/pkt_check.h"

/*
 * Input: [12-byte virtio-net header][split: pieces' size class and seed][lead][frame]. The head
 * pkt_offload_head_need() asks for is copied into its own allocation and parsed (ASan sees any
 * read past it); an accepted frame goes through pkt_soft() from iovecs cut by the split byte,
 * lead bytes into the first piece, each piece its own allocation, whose first head bytes are
 * scrambled: the output may take those bytes from the head copy only. Checked by the
 * by-the-book oracle (tests/unit/pkt/pkt_check.h): o->segs frames, each the headers and up to
 * gso_size payload bytes in order, every length, id, seq, flag and checksum right; a checksum
 * completed without GSO checks out with the sender's seed. And the header pkt_hdr_for() gives a
 * receiver, parsed against the same bytes, says the same.
 */
#define MAX_PIECES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void trap_if(int bad)
{
	if (bad)
		__builtin_trap();
}

/* The frame in pieces: sizes from the split byte (class in the high bits, seed in the low). */
static unsigned cut(const uint8_t *frame, size_t len, size_t head_len, uint8_t split,
		    size_t lead, struct iovec *iov)
{
	static const size_t classes[8] = {1, 3, 8, 16, 64, 700, 1500, 70000};
	size_t total = lead + len, at = 0, max = classes[split >> 5];
	unsigned n = 0, x = split & 31u;

	while (at < total) {
		size_t k = total - at; /* the last piece: the rest */
		uint8_t *p;

		if (n + 1 < MAX_PIECES) {
			x = x * 1103515245u + 12345u;
			k = x % (max + 1);
		}

		if (k > total - at)
			k = total - at;
		p = malloc(k ? k : 1);
		for (size_t i = 0; i < k; i++) {
			size_t f = at + i; /* this byte's place in lead + frame */

			p[i] = f < lead ? 0xa5 : frame[f - lead] ^ (f - lead < head_len ? 0x5a : 0);
		}
		iov[n++] = (struct iovec){p, k};
		at += k;
	}
	return n;
}

/* What the receiver's header says, parsed against the same head: the same offload. */
static void check_hdr_for(const struct pkt_offload *o, const uint8_t *head, size_t head_len)
{
	struct virtio_net_hdr_v1 h;
	struct pkt_offload again;

	pkt_hdr_for(o, &h);
	trap_if(pkt_offload_parse(&h, head, head_len, o->frame_len, &again) != PKT_OK);
	trap_if(again.csum != o->csum || again.gso != o->gso || again.ecn != o->ecn ||
		again.segs != o->segs || again.hdr_len != o->hdr_len ||
		again.frame_len != o->frame_len || again.gso_size != o->gso_size ||
		again.csum_start != o->csum_start || again.csum_offset != o->csum_offset);
}

/* An accepted frame through pkt_soft(), and the oracle on what it made. */
static void soft(const struct pkt_offload *o, const uint8_t *frame, const uint8_t *head,
		 size_t head_len, uint8_t split, size_t lead)
{
	struct iovec iov[MAX_PIECES];
	size_t need = pkt_soft_size(o);
	uint8_t *buf = malloc(need ? need : 1);
	struct pkt_seg *seg = malloc(o->segs * sizeof(*seg));
	unsigned cnt = cut(frame, o->frame_len, head_len, split, lead, iov), n;

	trap_if(need && pkt_soft(o, head, head_len, iov, cnt, lead, buf, need - 1, seg, o->segs));
	n = pkt_soft(o, head, head_len, iov, cnt, lead, buf, need, seg, o->segs);
	trap_if(n != o->segs);
	if (o->gso == VIRTIO_NET_HDR_GSO_NONE)
		trap_if(ref_check_one(o, frame, seg, n) != NULL);
	else
		trap_if(ref_check_gso(o, frame, seg, n) != NULL);
	for (unsigned i = 0; i < cnt; i++)
		free(iov[i].iov_base);
	free(seg);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	const uint8_t *frame = data + sizeof(h) + 2;
	size_t len, need;
	enum pkt_bad why;
	uint8_t *head;

	if (size < sizeof(h) + 2)
		return 0;
	memcpy(&h, data, sizeof(h));
	len = size - sizeof(h) - 2;
	need = pkt_offload_head_need(&h, len);
	trap_if(need > PKT_HEAD_MAX || need > len);
	head = malloc(need ? need : 1); /* its own allocation: ASan sees any read past it */
	memcpy(head, frame, need);
	why = pkt_offload_parse(&h, head, need, len, &o);
	trap_if(why >= PKT_BAD_COUNT || !strcmp(pkt_bad_name(why), "?"));
	if (why == PKT_OK) {
		trap_if(o.segs < 1 || o.segs > PKT_GSO_MAX_SEGS || o.frame_len > len);
		trap_if(o.gso != VIRTIO_NET_HDR_GSO_NONE && (o.hdr_len > need || !o.csum));
		check_hdr_for(&o, head, need);
		soft(&o, frame, head, need, data[sizeof(h)], data[sizeof(h) + 1] % 16);
	}
	free(head);
	return 0;
}
