/* SPDX-License-Identifier: MIT */
/* loops.c - the paced driver's traffic loops: one thread, busy on its own CPU, both ports. */
#include "loops.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t paced_stop;

#define LAG_SKIP_NS 1000000ull		/* open loop: further behind than this, give slots up */
#define LEARN_EVERY_NS 1000000000ull	/* a learning frame from each port this often */

static const uint8_t MACS[2][6] = {{0x02, 0, 0, 0, 0, 0x01}, {0x02, 0, 0, 0, 0, 0x02}};

/**
 * port_fill_templates() - every TX buffer of p: a zero virtio-net header and a frame from p's MAC
 * to the other port's (02:00:00:00:00:01 and :02), so a send writes only the payload.
 * @p:		the port (its device open)
 * @size:	frame bytes
 */
void port_fill_templates(struct port *p, uint32_t size)
{
	struct vq *q = &p->dev.tx;

	for (uint32_t i = 0; i < q->num; i++) {
		uint8_t *b = vq_buf(q, i);

		memset(b, 0, VNET_HDR_LEN + size);
		frame_template(b + VNET_HDR_LEN, size, MACS[!p->idx], MACS[p->idx]);
	}
}

/* Post one frame on p's TX ring (not yet published); false if the ring is full. */
static bool send_one(struct ctx *c, struct port *p, uint8_t origin, uint8_t kind, uint32_t seq,
		     uint64_t ts)
{
	struct vq *q = &p->dev.tx;
	uint16_t id;

	if (!q->nfree)
		return false;
	id = q->free[--q->nfree];
	frame_stamp(vq_buf(q, id) + VNET_HDR_LEN, origin, kind, seq, ts);
	vq_post(q, id, VNET_HDR_LEN + c->size);
	p->tx_frames++;
	return true;
}

static void learn(struct ctx *c, uint64_t now)
{
	for (int i = 0; i < 2; i++) {
		struct port *p = &c->ports[i];

		vq_reclaim(&p->dev.tx);
		if (send_one(c, p, p->idx, PL_LEARN, 0, now))
			vq_publish(&p->dev.tx);
	}
}

/*
 * Before any traffic: learning frames from both ports every 10 ms until each port has got one
 * from the other. Then the backend forwards both ways (a port a frame reached before the
 * backend had the other port up would lose it: a closed loop would die) and a learning switch
 * knows both MACs. Returns 0, or -1 after timeout_ns.
 */
static int wait_ready(struct ctx *c, uint64_t timeout_ns)
{
	uint64_t t0 = now_ns(), next = t0;
	bool got[2] = {false, false};

	while (!paced_stop && !(got[0] && got[1])) {
		uint64_t now = now_ns();

		if (now - t0 > timeout_ns)
			return -1;
		if (now >= next) {
			learn(c, now);
			next = now + 10000000ull;
		}
		for (int k = 0; k < 2; k++) {
			struct vq *q = &c->ports[k].dev.rx;
			uint16_t n = vq_pending(q);

			for (uint16_t i = 0; i < n; i++) {
				struct vring_used_elem e = vq_reap(q);
				struct pl pl;

				if (e.id >= q->num)
					continue;
				if (e.len >= VNET_HDR_LEN &&
				    frame_read(vq_buf(q, e.id) + VNET_HDR_LEN, e.len - VNET_HDR_LEN, &pl) &&
				    pl.kind == PL_LEARN && pl.origin != k)
					got[k] = true;
				vq_post(q, (uint16_t)e.id, q->buf_size);
			}
			if (n) {
				c->ports[k].rx_frames += n;
				vq_publish(q);
				vq_rearm(q);
			}
		}
	}
	return paced_stop ? -1 : 0;
}

static void snap(struct ctx *c, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2; i++) {
		struct port *p = &c->ports[i];

		s->kicks += p->dev.rx.kicks + p->dev.tx.kicks;
		s->calls += vq_calls(&p->dev.rx) + vq_calls(&p->dev.tx);
		s->tx_frames += p->tx_frames;
		s->rx_frames += p->rx_frames;
	}
	for (int i = 0; i < c->nwatch; i++)
		proc_snap(c->watch[i], &s->proc[i]);
	mach_snap(&s->mach);
	getrusage(RUSAGE_SELF, &s->ru);
	s->t = now_ns();
}

/* The window's edges: snapshots when the clock first passes them. */
static void phases(struct ctx *c, uint64_t now, int *state)
{
	if (*state == 0 && now >= c->w0) {
		snap(c, &c->s0);
		c->passes = c->idle_passes = 0;
		*state = 1;
	} else if (*state == 1 && now >= c->w1) {
		snap(c, &c->s1);
		*state = 2;
	}
}

/**
 * rx_oneway() - reap p's RX ring: frames sent in the window count, with their one-way latency.
 * @c:	the run
 * @p:	the port
 *
 * Every buffer goes back at once; RX calls are re-armed (or pushed away) after the batch.
 * Return: frames reaped.
 */
static uint16_t rx_oneway(struct ctx *c, struct port *p)
{
	struct vq *q = &p->dev.rx;
	uint16_t n = vq_pending(q);
	uint64_t t;

	if (!n)
		return 0;
	t = now_ns();
	for (uint16_t i = 0; i < n; i++) {
		struct vring_used_elem e = vq_reap(q);
		struct pl pl;

		if (e.id >= q->num) {
			c->bad++;
			continue;
		}
		if (e.len < VNET_HDR_LEN ||
		    !frame_read(vq_buf(q, e.id) + VNET_HDR_LEN, e.len - VNET_HDR_LEN, &pl))
			c->bad++;
		else if (pl.kind == PL_DATA && pl.ts >= c->w0 && pl.ts < c->w1) {
			c->received++;
			lat_add(&c->lat, t - pl.ts);
		}
		vq_post(q, (uint16_t)e.id, q->buf_size);
	}
	p->rx_frames += n;
	vq_publish(q);
	vq_rearm(q);
	return n;
}

/* One paced frame from p at now, for the slot scheduled at slot_t. */
static uint64_t slot_time(const struct ctx *c, uint64_t t0, uint64_t i)
{
	return t0 + i * 1000000000ull / c->rate;
}

/*
 * Post the slots due by now, each on its port, then publish each port once: on schedule that
 * is one frame; a driver behind schedule sends what is due together (up to a burst), as a
 * guest's queue does, and counts those frames as batched.
 */
static void open_send(struct ctx *c, uint64_t *i, uint64_t now, uint64_t t0)
{
	bool posted[2] = {false, false};
	uint32_t n = 0;
	uint64_t slot_t = slot_time(c, t0, *i);

	do {
		struct port *p = &c->ports[c->both ? *i & 1 : 0];
		bool in = slot_t >= c->w0 && slot_t < c->w1;

		if (p->dev.tx.nfree < c->burst)	/* reap in batches: the used index is shared */
			vq_reclaim(&p->dev.tx);
		if (in)
			c->offered++;
		if (send_one(c, p, p->idx, PL_DATA, p->seq++, now)) {
			posted[p->idx] = true;
			if (in) {
				c->sent++;
				c->batched += n > 0;
				lat_add(&c->lag, now - slot_t);
			}
		} else if (in) {
			c->ring_full++;
		}
		slot_t = slot_time(c, t0, ++*i);
	} while (++n < c->burst && slot_t <= now && slot_t < c->w1);
	for (int k = 0; k < 2; k++)
		if (posted[k])
			vq_publish(&c->ports[k].dev.tx);
}

/*
 * Open loop: slot i leaves at t0 + i / rate, frame by frame, the thread spinning (and reaping)
 * in between; from port 0 to port 1, or alternately from each port (both). A driver that fell
 * more than LAG_SKIP_NS behind (descheduled) gives the missed slots up and counts them.
 */
static int run_open(struct ctx *c, uint64_t t0, uint64_t end)
{
	uint64_t i = 0, t_next = t0, learn_t = t0, pass = 0;
	int state = 0;
	bool sending = c->rate > 0;

	while (!paced_stop) {
		uint64_t now = now_ns();
		bool work = false;

		if (now >= end)
			break;
		if (sending && now >= t_next) {
			if (now - t_next > LAG_SKIP_NS) {
				uint64_t to = (now - t0) * c->rate / 1000000000ull;

				for (; i < to; i++) {
					uint64_t s = slot_time(c, t0, i);

					if (s >= c->w0 && s < c->w1) {
						c->offered++;
						c->skipped++;
					}
				}
			} else {
				open_send(c, &i, now, t0);
			}
			t_next = slot_time(c, t0, i);
			sending = t_next < c->w1;
			work = true;
		}
		work |= rx_oneway(c, &c->ports[1]) > 0;
		/* port 0 receives only learning frames unless both send: looked at less often */
		if (c->both || (++pass & 63) == 0)
			work |= rx_oneway(c, &c->ports[0]) > 0;
		if (now >= learn_t && now < c->w1) {
			learn(c, now);
			learn_t += LEARN_EVERY_NS;
		}
		c->passes++;
		c->idle_passes += !work;
		phases(c, now, &state);
	}
	return 0;
}

/* Flood: every free TX slot filled each pass (a burst at most), the ring's backpressure the pace. */
static int run_flood(struct ctx *c, uint64_t end)
{
	uint64_t learn_t = 0;
	int state = 0;

	while (!paced_stop) {
		uint64_t now = now_ns();
		bool in = now >= c->w0 && now < c->w1, work = false;

		if (now >= end)
			break;
		for (int k = 0; now < c->w1 && k < (c->both ? 2 : 1); k++) {
			struct port *p = &c->ports[k];
			uint32_t n;

			vq_reclaim(&p->dev.tx);
			for (n = 0; n < c->burst && send_one(c, p, p->idx, PL_DATA, p->seq, now); n++)
				p->seq++;
			if (n) {
				vq_publish(&p->dev.tx);
				c->sent += in ? n : 0;
				work = true;
			}
		}
		work |= rx_oneway(c, &c->ports[1]) > 0;
		work |= rx_oneway(c, &c->ports[0]) > 0;
		if (now >= learn_t && now < c->w1) {
			learn(c, now);
			learn_t = now + LEARN_EVERY_NS;
		}
		c->passes++;
		c->idle_passes += !work;
		phases(c, now, &state);
	}
	return 0;
}

/* Closed loop: a frame due on p (fresh, or an echo); queued when p's TX ring is full. */
static void closed_send(struct ctx *c, struct port *p, const struct pl *pl)
{
	if (p->nbacklog || !send_one(c, p, pl->origin, PL_DATA, pl->seq, pl->ts))
		p->backlog[p->nbacklog++] = *pl;
}

static void closed_backlog(struct ctx *c, struct port *p)
{
	uint32_t done = 0;

	vq_reclaim(&p->dev.tx);
	while (done < p->nbacklog && send_one(c, p, p->backlog[done].origin, PL_DATA,
					      p->backlog[done].seq, p->backlog[done].ts))
		done++;
	memmove(p->backlog, p->backlog + done, (p->nbacklog - done) * sizeof(*p->backlog));
	p->nbacklog -= done;
}

/*
 * One pass over p: reap up to a burst; a frame back home completes a round trip (its latency
 * counted) and leaves again fresh; the other port's frames go back to it as they are.
 */
static bool closed_port(struct ctx *c, struct port *p)
{
	struct vq *q = &p->dev.rx;
	uint16_t n = vq_pending(q);
	uint64_t t;
	bool in;

	if (p->nbacklog) {
		closed_backlog(c, p);
		vq_publish(&p->dev.tx);
	}
	if (!n)
		return false;
	if (n > c->burst)
		n = (uint16_t)c->burst;
	t = now_ns();
	in = t >= c->w0 && t < c->w1;
	vq_reclaim(&p->dev.tx);
	for (uint16_t i = 0; i < n; i++) {
		struct vring_used_elem e = vq_reap(q);
		struct pl pl;

		if (e.id >= q->num) {
			c->bad++;
			continue;
		}
		if (e.len < VNET_HDR_LEN ||
		    !frame_read(vq_buf(q, e.id) + VNET_HDR_LEN, e.len - VNET_HDR_LEN, &pl)) {
			c->bad++;
		} else if (pl.kind == PL_DATA) {
			c->received += in;
			if (pl.origin == p->idx) {
				if (in) {
					c->completions++;
					lat_add(&c->lat, t - pl.ts);
				}
				pl.seq = p->seq++;
				pl.ts = t;
			}
			closed_send(c, p, &pl);
		}
		vq_post(q, (uint16_t)e.id, q->buf_size);
	}
	p->rx_frames += n;
	vq_publish(q);
	vq_rearm(q);
	vq_publish(&p->dev.tx);
	return true;
}

static int run_closed(struct ctx *c, uint64_t end)
{
	int state = 0;
	uint64_t now = now_ns();

	for (int k = 0; k < 2; k++) {
		struct port *p = &c->ports[k];

		for (uint32_t i = 0; i < c->inflight; i++)
			closed_send(c, p, &(struct pl){PL_MAGIC, p->idx, PL_DATA, p->seq++, now});
		vq_publish(&p->dev.tx);
	}
	while (!paced_stop && (now = now_ns()) < end) {
		bool work = closed_port(c, &c->ports[0]);

		work |= closed_port(c, &c->ports[1]);
		c->passes++;
		c->idle_passes += !work;
		phases(c, now, &state);
	}
	if (state == 1)
		snap(c, &c->s1);
	return 0;
}

static int run_idle(struct ctx *c)
{
	struct timespec w = {(time_t)(c->warmup_ns / 1000000000ull),
			     (long)(c->warmup_ns % 1000000000ull)};

	nanosleep(&w, NULL);
	snap(c, &c->s0);
	c->w0 = c->s0.t;
	w.tv_sec = (time_t)(c->window_ns / 1000000000ull);
	w.tv_nsec = (long)(c->window_ns % 1000000000ull);
	while (!paced_stop && nanosleep(&w, &w))
		;
	snap(c, &c->s1);
	c->w1 = c->s1.t;
	return 0;
}

/**
 * run_loop() - the traffic of c->mode on both ports (open already), results into c.
 * @c:			the run
 * @ready_timeout_ns:	how long the backend may take to forward both ways
 *
 * Phases: wait_ready() (up to ready_timeout_ns), warm-up, the measured window [w0, w1), then for the open loop and the flood a drain: frames
 * sent in the window and still on their way are received (and counted) until it ends.
 * Return: 0 (the results say what happened), -1 if the backend forwarded nothing.
 */
int run_loop(struct ctx *c, uint64_t ready_timeout_ns)
{
	uint64_t t0;

	lat_reset(&c->lat);
	lat_reset(&c->lag);
	if (c->mode == MODE_IDLE)
		return run_idle(c);
	if (wait_ready(c, ready_timeout_ns)) {
		fprintf(stderr, "paced: no frame crossed the backend both ways within %.1f s\n",
			(double)ready_timeout_ns / 1e9);
		return -1;
	}
	t0 = now_ns() + 1000000;
	c->w0 = t0 + c->warmup_ns;
	c->w1 = c->w0 + c->window_ns;
	switch (c->mode) {
	case MODE_OPEN:
		return run_open(c, t0, c->w1 + c->drain_ns);
	case MODE_FLOOD:
		return run_flood(c, c->w1 + c->drain_ns);
	default:
		return run_closed(c, c->w1 + 1);
	}
}
