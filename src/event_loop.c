/* SPDX-License-Identifier: MIT */
/* event_loop.c - epoll registration helpers with typed references, and the run queue. */
#include "event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t ev_ref_pack(struct ev_ref ref)
{
	uint64_t word;

	memcpy(&word, &ref, sizeof(word));
	return word;
}

struct ev_ref ev_ref_unpack(uint64_t word)
{
	struct ev_ref ref;

	memcpy(&ref, &word, sizeof(ref));
	return ref;
}

static int epoll_op(int epfd, int op, int fd, uint32_t events, struct ev_ref ref)
{
	struct epoll_event ev = {.events = events, .data.u64 = ev_ref_pack(ref)};

	return epoll_ctl(epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int event_loop_add(int epfd, int fd, uint32_t events, struct ev_ref ref)
{
	return epoll_op(epfd, EPOLL_CTL_ADD, fd, events, ref);
}

int event_loop_mod(int epfd, int fd, uint32_t events, struct ev_ref ref)
{
	return epoll_op(epfd, EPOLL_CTL_MOD, fd, events, ref);
}

void event_loop_del(int epfd, int fd)
{
	if (fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

int run_queue_init(struct run_queue *rq, unsigned cap)
{
	rq->ring = calloc(cap ? cap : 1, sizeof(*rq->ring));
	rq->cap = cap ? cap : 1;
	rq->head = rq->len = 0;
	return rq->ring ? 0 : -ENOMEM;
}

void run_queue_free(struct run_queue *rq)
{
	free(rq->ring);
	rq->ring = NULL;
	rq->cap = rq->head = rq->len = 0;
}

bool run_queue_push(struct run_queue *rq, struct ev_ref ref)
{
	if (rq->len == rq->cap)
		return false;
	rq->ring[(rq->head + rq->len) % rq->cap] = ref;
	rq->len++;
	return true;
}

bool run_queue_pop(struct run_queue *rq, struct ev_ref *ref)
{
	if (!rq->len)
		return false;
	*ref = rq->ring[rq->head];
	rq->head = (rq->head + 1) % rq->cap;
	rq->len--;
	return true;
}

void run_queue_drop_port(struct run_queue *rq, unsigned port)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < rq->len; i++) {
		struct ev_ref ref = rq->ring[(rq->head + i) % rq->cap];

		if (ref.port != port)
			rq->ring[(rq->head + kept++) % rq->cap] = ref;
	}
	rq->len = kept;
}
