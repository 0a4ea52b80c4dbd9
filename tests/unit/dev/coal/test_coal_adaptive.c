/* SPDX-License-Identifier: MIT */
/* test_coal_adaptive.c - the adaptive controller on modelled workloads, and its place in the device. */
#include "coal_helpers.h"

#include "dev/coal/coal_adaptive.h"

#define TOP (COAL_ADAPT_LEVELS - 1)

/* ---- the controller alone, against workload models (fake clock, one window per step) ---- */

/* What a queue would see in one second at a level: packets, bytes, notifications sent. */
struct rates {
	uint64_t pps, bps, nps;
	uint64_t peer;     /* packets/s of the pair's other queue (0 unless a model says) */
	uint64_t peer_bps; /* ... and its bytes/s */
};

typedef struct rates (*model_fn)(unsigned level);

/* A hold ends at max_usecs or max_packets, whichever first: notifications per second. */
static uint64_t holds_per_sec(unsigned level, uint64_t pps)
{
	const struct coal_params *p = coal_adapt_profile(level);
	uint64_t by_time, by_count, n;

	if (!coal_active(p))
		return pps;
	by_time = 1000000u / p->max_usecs;
	by_count = pps / p->max_packets;
	n = by_time > by_count ? by_time : by_count;
	return n < pps ? n : pps;
}

/* Bulk: 10k TSO frames/s of 64 KB whatever the level (the flow is not latency-bound). */
static struct rates bulk(unsigned level)
{
	return (struct rates){10000, 10000ull * 65000, holds_per_sec(level, 10000), 0, 0};
}

/* Bulk of small frames: 100k/s of 1500 bytes. */
static struct rates bulk_small(unsigned level)
{
	return (struct rates){100000, 150000000, holds_per_sec(level, 100000), 0, 0};
}

/* Bulk that loses 30 % of its rate from level 4 on (holding that long paces the flow). */
static struct rates bulk_paced_at_4(unsigned level)
{
	uint64_t pps = level >= 4 ? 7000 : 10000;

	return (struct rates){pps, pps * 65000, holds_per_sec(level, pps), 0, 0};
}

/* Ping-pong: one 64-byte packet per round trip of 30 us plus what the hold adds. */
static struct rates ping_pong(unsigned level)
{
	uint64_t pps = 1000000u / (30 + coal_adapt_profile(level)->max_usecs);

	return (struct rates){pps, pps * 64, pps, 0, 0};
}

/* Request/response: the ping-pong above with its answers counted on the pair's other queue. */
static struct rates request_response(unsigned level)
{
	struct rates r = ping_pong(level);

	r.peer = r.pps;
	return r;
}

/* Bulk whose receiver ACKs every other frame on the pair's other queue. */
static struct rates bulk_with_acks(unsigned level)
{
	struct rates r = bulk(level);

	r.peer = r.pps / 2;
	return r;
}

/* Notifications per second of time-bound holds over random (Poisson) arrivals at pps: a hold
 * opens at a packet and takes whatever comes within max_usecs, pps * max_usecs on average. */
static uint64_t poisson_holds_per_sec(unsigned level, uint64_t pps)
{
	const struct coal_params *p = coal_adapt_profile(level);

	if (!coal_active(p))
		return pps;
	return pps * 1000000u / (1000000u + pps * p->max_usecs);
}

/* The ACKs of a 6.6 Gbit/s stream into the guest (12.6k frames/s of 64 KB on the pair's RX
 * queue), as its TX queue sees them: 2500 ACKs/s of 66 bytes, arriving at random; no level's
 * hold spans 2 of them (400 us: 1 on average). */
static struct rates acks_of_stream(unsigned level)
{
	return (struct rates){2500, 2500 * 66, poisson_holds_per_sec(level, 2500), 12600,
			      12600ull * 65000};
}

/* The same small packets with a pair whose other queue moves little: a slow exchange. */
static struct rates small_with_light_peer(unsigned level)
{
	return (struct rates){2500, 2500 * 66, poisson_holds_per_sec(level, 2500), 3000,
			      3000 * 66};
}

/* Sparse: 1000 packets/s (4 a window), e.g. a slow ping or paced UDP at 12 Mbit/s. */
static struct rates sparse(unsigned level)
{
	(void)level;
	return (struct rates){1000, 1000 * 1400, 1000, 0, 0};
}

/* Deterministic noise: each rate off by up to +-8 % per window (a linear congruential draw). */
static uint32_t noise_state = 12345;

static uint64_t noisy(uint64_t v)
{
	noise_state = noise_state * 1103515245u + 12345u;
	return v * (92 + (noise_state >> 16) % 17) / 100;
}

static struct rates noisy_bulk(unsigned level)
{
	struct rates r = bulk(level);

	return (struct rates){noisy(r.pps), noisy(r.bps), noisy(r.nps), 0, 0};
}

struct sim {
	struct coal_adapt a;
	struct coal_adapt_counters c;
	uint64_t now;
	unsigned windows_at[COAL_ADAPT_LEVELS];
	unsigned max_level;
	uint64_t changes;
};

static void sim_start(struct sim *s)
{
	memset(s, 0, sizeof(*s));
	s->now = 1000 * MS;
	coal_adapt_start(&s->a, s->now, &s->c);
}

/* n windows of the model's traffic at whatever level the controller chose. */
static void sim_run(struct sim *s, model_fn model, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rates r = model(s->a.level);
		uint64_t w = COAL_ADAPT_WINDOW_NS / 1000u; /* us */

		s->c.packets += r.pps * w / 1000000u;
		s->c.bytes += r.bps * w / 1000000u;
		s->c.notifications += r.nps * w / 1000000u;
		s->c.peer_packets += r.peer * w / 1000000u;
		s->c.peer_bytes += r.peer_bps * w / 1000000u;
		s->now += COAL_ADAPT_WINDOW_NS;
		if (coal_adapt_tick(&s->a, s->now, &s->c))
			s->changes++;
		s->windows_at[s->a.level]++;
		if (s->a.level > s->max_level)
			s->max_level = s->a.level;
	}
}

static void sim_clear_history(struct sim *s)
{
	memset(s->windows_at, 0, sizeof(s->windows_at));
	s->max_level = s->a.level;
	s->changes = 0;
}

static void test_profiles_start_at_no_coalescing(void **state)
{
	(void)state;
	assert_false(coal_active(coal_adapt_profile(0)));
	for (unsigned l = 1; l < COAL_ADAPT_LEVELS; l++) {
		assert_true(coal_active(coal_adapt_profile(l)));
		assert_true(coal_adapt_profile(l)->max_usecs > coal_adapt_profile(l - 1)->max_usecs);
	}
	assert_ptr_equal(coal_adapt_profile(99), coal_adapt_profile(TOP));
}

static void test_no_decision_before_a_window(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	s.c.packets = 1000;
	s.c.notifications = 1000;
	assert_false(coal_adapt_tick(&s.a, s.now + COAL_ADAPT_WINDOW_NS - 1, &s.c));
	assert_int_equal(s.a.windows, 0);
	/* 250k packets/s: the first level's 20 us span 5 packets, worth a probe. */
	assert_true(coal_adapt_tick(&s.a, s.now + COAL_ADAPT_WINDOW_NS, &s.c));
	assert_int_equal(s.a.windows, 1);
	assert_int_equal(s.a.level, 1);
	assert_string_equal(coal_adapt_state_name(&s.a), "probing");
	coal_adapt_stop(&s.a);
	assert_string_equal(coal_adapt_state_name(&s.a), "off");
	assert_false(coal_adapt_tick(&s.a, s.now + 10 * COAL_ADAPT_WINDOW_NS, &s.c));
}

/* Converges to the level whose hold spans two packets (10k/s: 200 us), and stays. */
static void test_bulk_converges_and_stays(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk, 2 * COAL_ADAPT_LEVELS);
	assert_int_equal(s.a.level, 4);
	assert_int_equal(coal_adapt_profile(4)->max_usecs, 200);
	sim_clear_history(&s);
	sim_run(&s, bulk, 1000);
	assert_int_equal(s.windows_at[4], 1000);
	assert_int_equal(s.changes, 0);
	/* Faster packets need a shorter hold for the same batch: 100k/s, 20 us. */
	sim_run(&s, bulk_small, 1);
	assert_int_equal(s.a.level, 1);
	sim_clear_history(&s);
	sim_run(&s, bulk_small, 1000);
	assert_int_equal(s.windows_at[1], 1000);
}

/* A fast RX stream, 40k frames/s (64 KiB GSO frames at ~20 Gbit/s). */
static struct rates rx_fast(unsigned level)
{
	return (struct rates){40000, 40000ull * 65000, holds_per_sec(level, 40000), 0, 0};
}

/*
 * A deep (RX) queue batches 8 frames where a level spans them: at 40k/s the 200 us level
 * (8 frames), not the 50 us (2) a TX queue settles on; it stays there.
 */
static void test_fast_rx_batches_deeper_than_tx(void **state)
{
	struct sim rx, tx;

	(void)state;
	sim_start(&tx);
	sim_run(&tx, rx_fast, 4 * COAL_ADAPT_LEVELS);
	assert_int_equal(tx.a.level, 2);
	memset(&rx, 0, sizeof(rx));
	rx.now = 1000 * MS;
	rx.a.deep = true;
	coal_adapt_start(&rx.a, rx.now, &rx.c);
	assert_true(rx.a.deep);
	sim_run(&rx, rx_fast, 4 * COAL_ADAPT_LEVELS);
	assert_int_equal(rx.a.level, 4);
	sim_clear_history(&rx);
	sim_run(&rx, rx_fast, 1000);
	assert_int_equal(rx.windows_at[4], 1000);
	assert_int_equal(rx.changes, 0);
	/* Where no level spans 8 (10k/s: 4 in 400 us) a deep queue is a shallow one. */
	sim_run(&rx, bulk, 4 * COAL_ADAPT_LEVELS);
	sim_run(&tx, bulk, 4 * COAL_ADAPT_LEVELS);
	assert_int_equal(rx.a.level, tx.a.level);
}

static void test_noisy_bulk_does_not_oscillate(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, noisy_bulk, 200);
	sim_clear_history(&s);
	sim_run(&s, noisy_bulk, 1000);
	/* Around 10k/s, 200 us spans about 2 packets: 200 or 400 us, no flapping between. */
	assert_true(s.windows_at[4] + s.windows_at[5] >= 990);
	assert_true(s.changes <= 10);
}

/* A level that costs throughput is left, and probed again ever more rarely: no oscillation. */
static void test_level_that_paces_the_flow_is_left_and_rarely_retried(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk_paced_at_4, 20);
	assert_int_equal(s.a.level, 3);
	sim_clear_history(&s);
	sim_run(&s, bulk_paced_at_4, 1000);
	assert_true(s.max_level <= 4);
	assert_int_equal(s.windows_at[3] + s.windows_at[4], 1000);
	/* Back-off doubles from 8 to 256 windows: about 6 probes in 1000 windows. */
	assert_true(s.windows_at[4] <= 8);
	assert_true(s.changes <= 16);
}

static void test_ping_pong_stays_at_low_latency(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, ping_pong, 1000);
	assert_true(s.max_level <= 1);
	assert_true(s.windows_at[0] >= 990); /* a probe costs one window, ever more rarely */
}

static void test_ping_pong_after_bulk_returns_in_one_window(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk, 50);
	assert_int_equal(s.a.level, 4);
	sim_run(&s, ping_pong, 1);
	assert_int_equal(s.a.level, 0);
	sim_run(&s, bulk, 2 * COAL_ADAPT_LEVELS); /* and back up when bulk resumes */
	assert_int_equal(s.a.level, 4);
}

/* An answer per request on the pair's other queue: never even probed. */
static void test_request_response_is_never_held(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, request_response, 1000);
	assert_int_equal(s.windows_at[0], 1000);
	assert_int_equal(s.changes, 0);
	sim_run(&s, bulk, 50); /* a stream after it still gets its level */
	assert_int_equal(s.a.level, 4);
	sim_run(&s, request_response, 1);
	assert_int_equal(s.a.level, 0);
}

/* ACKs on the other queue do not make a stream look like request/response. */
static void test_stream_with_acks_still_batches(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk_with_acks, 50);
	assert_int_equal(s.a.level, 4);
}

/* A TX queue carrying the ACKs of a stream its pair receives holds them as long as it can
 * (no level spans a batch at their rate, but their completions only free them); an RX queue
 * seeing the same does not (ACKs coming in clock the guest's sending), nor does a TX queue
 * whose pair moves as little as it does. */
static void test_return_stream_is_held_on_tx_only(void **state)
{
	struct sim tx, rx, light;

	(void)state;
	sim_start(&tx);
	sim_run(&tx, acks_of_stream, 50);
	assert_int_equal(tx.a.level, TOP);
	sim_start(&rx);
	rx.a.deep = true;
	sim_run(&rx, acks_of_stream, 50);
	assert_int_equal(rx.a.level, 0);
	sim_start(&light);
	sim_run(&light, small_with_light_peer, 50);
	assert_int_equal(light.a.level, 0);
}

static void test_sparse_traffic_is_never_held(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, sparse, 500);
	assert_int_equal(s.windows_at[0], 500);
	assert_int_equal(s.a.changes, 0);
}

static void test_idle_queue_returns_to_level_0(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk, 50);
	assert_int_equal(s.a.level, 4);
	/* Nothing for a second; the first decision after it sees an empty window. */
	s.now += 1000 * MS;
	s.c.packets += 1;
	assert_true(coal_adapt_tick(&s.a, s.now, &s.c));
	assert_int_equal(s.a.level, 0);
}

static void test_counters_reset_under_it(void **state)
{
	struct sim s;

	(void)state;
	sim_start(&s);
	sim_run(&s, bulk, 50);
	memset(&s.c, 0, sizeof(s.c)); /* reset-stats */
	s.now += COAL_ADAPT_WINDOW_NS;
	coal_adapt_tick(&s.a, s.now, &s.c);
	assert_int_equal(s.a.level, 0); /* an empty window, not a huge one */
	sim_run(&s, bulk, 2 * COAL_ADAPT_LEVELS);
	assert_int_equal(s.a.level, 4);
}

/* ---- in the device: modes, setters, last setter wins ---- */

static struct test_dev *td_adaptive(bool rx, bool tx)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 1);
	p.rx_adaptive = rx;
	p.tx_adaptive = tx;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 256);
	return td;
}

static struct coal_adapt *adapt(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->adapt;
}

/* Bursts of 16 RX packets every 500 us for `ms` milliseconds. */
static void rx_bursts(struct test_dev *td, unsigned ms)
{
	for (unsigned t = 0; t < ms * 2; t++) {
		while (fake_vq_get_used(&td->vq[RXQ], NULL, NULL))
			; /* the driver takes what it got and posts new buffers */
		td_post_rx(td, RXQ, 16, 256);
		for (unsigned i = 0; i < 16; i++)
			assert_int_equal(td_receive(td, 60, (uint8_t)i), 1);
		td_advance(td, 500 * US);
	}
}

static void test_port_mode_makes_queues_adaptive(void **state)
{
	struct test_dev *td = td_adaptive(true, false);
	uint64_t n0, p0;

	(void)state;
	assert_true(adapt(td, RXQ)->on);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_ADAPTIVE);
	assert_string_equal(coal_setter_name(COAL_SET_ADAPTIVE), "adaptive");
	assert_params(td, RXQ, 0, 0);
	assert_false(adapt(td, TXQ)->on);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_NONE);
	assert_true(vnet_dev_adaptive_mode(td->dev, VNET_QUEUE_RX));
	assert_false(vnet_dev_adaptive_mode(td->dev, VNET_QUEUE_TX));
	rx_bursts(td, 40);
	assert_true(adapt(td, RXQ)->windows >= 8);
	assert_true(adapt(td, RXQ)->level >= 2); /* bursts of 16: one notification for each */
	assert_true(coal(td, RXQ)->params.max_usecs > 0);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_ADAPTIVE);
	/* Settled: far fewer notifications than packets. */
	n0 = stats(td, RXQ)->notifications;
	p0 = stats(td, RXQ)->packets;
	rx_bursts(td, 20);
	print_message("level %u: %llu notifications for %llu packets\n", adapt(td, RXQ)->level,
		      (unsigned long long)(stats(td, RXQ)->notifications - n0),
		      (unsigned long long)(stats(td, RXQ)->packets - p0));
	assert_true((stats(td, RXQ)->notifications - n0) * 4 < stats(td, RXQ)->packets - p0);
	td_free(td);
}

static void test_guest_setting_wins_until_reset(void **state)
{
	struct test_dev *td = td_adaptive(true, true);

	(void)state;
	rx_bursts(td, 20);
	assert_int_equal(td_coal_cmd(td, RX_SET, 5, 77), VIRTIO_NET_OK);
	assert_false(adapt(td, RXQ)->on);
	assert_params(td, RXQ, 5, 77);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_GUEST);
	rx_bursts(td, 20);
	assert_params(td, RXQ, 5, 77); /* the controller no longer touches it */
	assert_true(adapt(td, TXQ)->on); /* TX was not set by the guest */
	/* A reset: the guest's values are gone (spec), the port's mode comes back. */
	td_recycle(td, TD_BASE_FEATURES);
	td_start_queues(td, 256);
	assert_true(adapt(td, RXQ)->on);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_ADAPTIVE);
	assert_params(td, RXQ, 0, 0);
	td_free(td);
}

static void test_vq_set_ends_adaptive_on_that_queue_only(void **state)
{
	struct test_dev *td = td_adaptive(true, true);

	(void)state;
	assert_int_equal(td_vq_set(td, TXQ, 3, 30), VIRTIO_NET_OK);
	assert_false(adapt(td, TXQ)->on);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_GUEST);
	assert_true(adapt(td, RXQ)->on);
	td_free(td);
}

static void test_host_switches_adaptive(void **state)
{
	struct test_dev *td = td_adaptive(false, false);
	struct coal_params hp = {10, 100};

	(void)state;
	assert_false(adapt(td, RXQ)->on);
	assert_int_equal(vnet_dev_host_adaptive(td->dev, -1, VNET_QUEUE_RX, true), 0);
	assert_true(adapt(td, RXQ)->on);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_ADAPTIVE);
	assert_true(vnet_dev_adaptive_mode(td->dev, VNET_QUEUE_RX));
	/* Per queue: off gives the queue its default (nothing set since reset: 0). */
	rx_bursts(td, 20);
	assert_int_equal(vnet_dev_host_adaptive(td->dev, RXQ, VNET_QUEUE_RX, false), 0);
	assert_false(adapt(td, RXQ)->on);
	assert_params(td, RXQ, 0, 0);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_NONE);
	assert_int_equal(vnet_dev_host_adaptive(td->dev, RXQ, VNET_QUEUE_RX, true), 0);
	assert_true(adapt(td, RXQ)->on);
	/* Host values for the whole kind replace the mode (the last setter wins). */
	assert_int_equal(vnet_dev_host_coalesce(td->dev, -1, VNET_QUEUE_RX, &hp), 0);
	assert_false(adapt(td, RXQ)->on);
	assert_false(vnet_dev_adaptive_mode(td->dev, VNET_QUEUE_RX));
	assert_params(td, RXQ, 10, 100);
	/* The control queue has no coalescing. */
	assert_int_equal(vnet_dev_host_adaptive(td->dev, (int)td->ctrl_q, VNET_QUEUE_CTRL, true), -1);
	assert_int_equal(vnet_dev_host_adaptive(td->dev, -1, VNET_QUEUE_CTRL, true), -1);
	td_free(td);
}

/* Off costs nothing: the controller's state is never touched. */
static void test_off_is_untouched(void **state)
{
	struct test_dev *td = td_adaptive(false, false);
	struct coal_adapt zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	rx_bursts(td, 20);
	td_tx(td, TXQ, 8, 100);
	assert_memory_equal(adapt(td, RXQ), &zero, sizeof(zero));
	assert_memory_equal(adapt(td, TXQ), &zero, sizeof(zero));
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiles_start_at_no_coalescing),
		cmocka_unit_test(test_no_decision_before_a_window),
		cmocka_unit_test(test_bulk_converges_and_stays),
		cmocka_unit_test(test_fast_rx_batches_deeper_than_tx),
		cmocka_unit_test(test_noisy_bulk_does_not_oscillate),
		cmocka_unit_test(test_level_that_paces_the_flow_is_left_and_rarely_retried),
		cmocka_unit_test(test_ping_pong_stays_at_low_latency),
		cmocka_unit_test(test_ping_pong_after_bulk_returns_in_one_window),
		cmocka_unit_test(test_request_response_is_never_held),
		cmocka_unit_test(test_stream_with_acks_still_batches),
		cmocka_unit_test(test_return_stream_is_held_on_tx_only),
		cmocka_unit_test(test_sparse_traffic_is_never_held),
		cmocka_unit_test(test_idle_queue_returns_to_level_0),
		cmocka_unit_test(test_counters_reset_under_it),
		cmocka_unit_test_teardown(test_port_mode_makes_queues_adaptive, td_cleanup),
		cmocka_unit_test_teardown(test_guest_setting_wins_until_reset, td_cleanup),
		cmocka_unit_test_teardown(test_vq_set_ends_adaptive_on_that_queue_only, td_cleanup),
		cmocka_unit_test_teardown(test_host_switches_adaptive, td_cleanup),
		cmocka_unit_test_teardown(test_off_is_untouched, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
