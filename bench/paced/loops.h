/* SPDX-License-Identifier: MIT */
/* loops.h - the paced driver's traffic: open loop (paced), flood, closed loop (frames in flight), idle. */
#ifndef PACED_LOOPS_H
#define PACED_LOOPS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "frame.h"
#include "lat.h"
#include "probe.h"
#include "vu.h"

#define MAX_WATCH 8

enum mode { MODE_OPEN, MODE_FLOOD, MODE_CLOSED, MODE_IDLE };

/**
 * struct port - one device of the driver and what went through it.
 * @dev:		the vhost-user frontend
 * @idx:		0 or 1: a frame's origin, and the MACs of its template
 * @seq:		the next sequence number of a frame it makes
 * @tx_frames:		frames posted on its TX ring so far
 * @rx_frames:		frames reaped from its RX ring so far
 * @backlog:		closed loop: frames due that found the TX ring full, sent first next pass
 * @nbacklog:		how many
 */
struct port {
	struct vu_dev dev;
	uint8_t idx;
	uint32_t seq;
	uint64_t tx_frames, rx_frames;
	struct pl *backlog;
	uint32_t nbacklog;
};

/**
 * struct snap - every counter the window is measured with, at one moment.
 * @t:		CLOCK_MONOTONIC ns when taken
 * @kicks, @calls:	over both ports' queues
 * @tx_frames, @rx_frames:	over both ports
 * @proc:	the watched processes
 * @mach:	the machine
 * @ru:		the driver itself
 */
struct snap {
	uint64_t t, kicks, calls, tx_frames, rx_frames;
	struct proc_snap proc[MAX_WATCH];
	struct mach_snap mach;
	struct rusage ru;
};

/**
 * struct ctx - one run: its options, its ports, its results.
 * @mode, @size, @rate, @inflight, @burst, @both:	what traffic (see paced.c's usage)
 * @warmup_ns, @window_ns, @drain_ns:	the phases: traffic before the window, the window, and
 *					(open loop, flood) receiving only, after it
 * @watch, @nwatch:	processes whose CPU and wake-ups are measured over the window
 * @ports:		port 0 and port 1
 * @w0, @w1:		the window (frames sent, or for a closed loop received, in it count)
 * @offered:		open loop: send slots in the window
 * @sent:		frames put on a TX ring in the window
 * @ring_full:		open loop: slots that found the TX ring full (the backend's backpressure)
 * @skipped:		open loop: slots the driver gave up after falling > 1 ms behind (its own fault)
 * @batched:		open loop: frames sent in the window together with an earlier one (the
 *			driver was behind schedule: not frame by frame)
 * @received:		frames received that were sent in the window (closed: received in it)
 * @completions:	closed loop: round trips completed in the window
 * @bad:		frames that were not ours, too short, or with a bad descriptor id
 * @lat:		one-way latency (open loop, flood) or round trip (closed loop), ns
 * @lag:		open loop: how late each frame left against its schedule, ns
 * @s0, @s1:		counters at the window's start and end
 * @passes, @idle_passes:	loop iterations in the window, and those with nothing to do
 */
struct ctx {
	enum mode mode;
	uint32_t size;
	uint64_t rate;
	uint32_t inflight, burst;
	bool both;
	uint64_t warmup_ns, window_ns, drain_ns;
	pid_t watch[MAX_WATCH];
	int nwatch;
	struct port ports[2];
	uint64_t w0, w1;
	uint64_t offered, sent, ring_full, skipped, batched, received, completions, bad;
	struct lat lat, lag;
	struct snap s0, s1;
	uint64_t passes, idle_passes;
};

extern volatile sig_atomic_t paced_stop;

void port_fill_templates(struct port *p, uint32_t size);
int run_loop(struct ctx *c, uint64_t ready_timeout_ns);

#endif
