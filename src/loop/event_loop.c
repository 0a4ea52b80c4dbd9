/* SPDX-License-Identifier: MIT */
/* event_loop.c - epoll registration helpers with typed references, and the run queue. */
#include "loop/event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/**
 * ev_ref_pack() - a typed reference as the epoll data word.
 * @ref: the reference
 *
 * Return: the 64-bit word for epoll_event.data.u64.
 */
uint64_t ev_ref_pack(struct ev_ref ref)
{
	uint64_t word;

	memcpy(&word, &ref, sizeof(word));
	return word;
}

/**
 * ev_ref_unpack() - the typed reference an epoll data word carries.
 * @word: epoll_event.data.u64, as ev_ref_pack() made it
 *
 * Return: the reference.
 */
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

/**
 * event_loop_add() - register an fd in an epoll set with a typed reference.
 * @epfd: the epoll set (a worker's)
 * @fd: the fd
 * @events: EPOLLIN etc.
 * @ref: what the loop gets back with each event
 *
 * Return: 0 or -errno.
 */
int event_loop_add(int epfd, int fd, uint32_t events, struct ev_ref ref)
{
	return epoll_op(epfd, EPOLL_CTL_ADD, fd, events, ref);
}

/**
 * event_loop_mod() - change the events and reference of a registered fd.
 * @epfd: the epoll set
 * @fd: the fd
 * @events: the new events
 * @ref: the new reference
 *
 * Return: 0 or -errno.
 */
int event_loop_mod(int epfd, int fd, uint32_t events, struct ev_ref ref)
{
	return epoll_op(epfd, EPOLL_CTL_MOD, fd, events, ref);
}

/**
 * event_loop_del() - unregister an fd; fds that were not registered, or -1, are ignored.
 * @epfd: the epoll set
 * @fd: the fd
 */
void event_loop_del(int epfd, int fd)
{
	if (fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

/**
 * run_queue_init() - allocate a run queue's ring.
 * @rq: the run queue, empty afterwards
 * @cap: entries it can hold (0 is taken as 1)
 *
 * A run queue belongs to one worker: only that worker's thread uses it, or the main thread while
 * the worker is parked.
 *
 * Return: 0 or -ENOMEM.
 */
int run_queue_init(struct run_queue *rq, unsigned cap)
{
	rq->ring = calloc(cap ? cap : 1, sizeof(*rq->ring));
	rq->cap = cap ? cap : 1;
	rq->head = rq->len = 0;
	return rq->ring ? 0 : -ENOMEM;
}

/**
 * run_queue_free() - release the ring; @rq is empty and can be freed again.
 * @rq: the run queue
 */
void run_queue_free(struct run_queue *rq)
{
	free(rq->ring);
	rq->ring = NULL;
	rq->cap = rq->head = rq->len = 0;
}

/**
 * run_queue_push() - append an entry at the tail.
 * @rq: the run queue
 * @ref: the work (queue or port) to run later
 *
 * Owners queue an entry at most once, so one slot per queue is enough.
 *
 * Return: true, or false when full (a bug: the caller logs it).
 */
bool run_queue_push(struct run_queue *rq, struct ev_ref ref)
{
	if (rq->len == rq->cap)
		return false;
	rq->ring[(rq->head + rq->len) % rq->cap] = ref;
	rq->len++;
	return true;
}

/**
 * run_queue_pop() - take the oldest entry.
 * @rq: the run queue
 * @ref: out: the entry
 *
 * Return: true, or false when empty.
 */
bool run_queue_pop(struct run_queue *rq, struct ev_ref *ref)
{
	if (!rq->len)
		return false;
	*ref = rq->ring[rq->head];
	rq->head = (rq->head + 1) % rq->cap;
	rq->len--;
	return true;
}

/**
 * run_queue_drop_port() - forget every entry of a port that is being removed; the others keep
 * their order.
 * @rq: the run queue
 * @port: the port's index (ev_ref.port)
 */
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
