/* SPDX-License-Identifier: MIT */
/* guest_race.h - test builds only: a hook that plays the guest's other vCPU between the device's reads. */
#ifndef VNETD_GUEST_RACE_H
#define VNETD_GUEST_RACE_H

/*
 * A guest with two vCPUs can rewrite a buffer while the device works on it. A real racing thread
 * makes failures that do not reproduce; instead the device calls guest_race() at the points
 * where a guest rewrite would matter (after it has read and decided on guest bytes, before it
 * moves on), and a fuzzer or a test installs a hook that rewrites the bytes it chooses there,
 * deterministically. Built in only with -Dguest_race=true (the fuzz build and the ASan build
 * turn it on); in every other build guest_race() is empty and costs nothing.
 */

/* Where the device is when it calls the hook (a fuzzer may pick its rewrites by point). */
enum guest_race_point {
	GUEST_RACE_TX_POPPED,      /* a TX chain was popped and its header read */
	GUEST_RACE_TX_ADMITTED,    /* the switch admitted a frame (port security, tags) */
	GUEST_RACE_TX_FORWARD,     /* before the frame goes to a receiver, queue or backend */
	GUEST_RACE_RING_WALK,      /* between two reads of a ring's descriptors */
	GUEST_RACE_CTRL,           /* a control-queue command was read */
	GUEST_RACE_POINTS
};

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
/* The hook: called with its context and the point; it may write guest memory, nothing else. */
typedef void guest_race_fn(void *ctx, enum guest_race_point point);

extern guest_race_fn *guest_race_hook;
extern void *guest_race_ctx;

/* guest_race() - let the "other vCPU" run here, if a hook is installed. */
static inline void guest_race(enum guest_race_point point)
{
	if (guest_race_hook)
		guest_race_hook(guest_race_ctx, point);
}
#else
static inline void guest_race(enum guest_race_point point)
{
	(void)point;
}
#endif

#endif
