/* SPDX-License-Identifier: MIT */
/* test_lifecycle.c - bounded work (budgets, yields), lossless queue stop/disable, error fds, reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "coal_helpers.h"

/* Backend hook: keep the recorder from filling up during long floods. */
static int recycle_packets(struct test_dev *td)
{
	if (td->npkts >= TD_MAX_PACKETS - 1)
		td_clear_packets(td);
	return 0;
}

static uint64_t sent(struct test_dev *td)
{
	return stats(td, TXQ)->packets;
}

/* Post n one-frame TX chains without kicking. */
static void post_tx(struct test_dev *td, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++)
		td_tx_queue(td, TXQ, len, (uint8_t)i);
	fake_vq_publish(&td->vq[TXQ]);
}

/* ---- Bounded, fair work ---- */

static void test_tx_flood_yields_after_packet_budget_then_continues(void **state)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 1024);
	td->tx_hook = recycle_packets;
	post_tx(td, 400, 64);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(sent(td), VNET_BUDGET_PACKETS);
	assert_true(td->scheduled[TXQ]);
	assert_int_equal(td->schedule_calls[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->yields, 1);
	/* What was done is visible to the driver before the queue yields. */
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), VNET_BUDGET_PACKETS);
	/* A kick while scheduled does not run the queue a second time in the same round. */
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(sent(td), VNET_BUDGET_PACKETS);
	assert_int_equal(td_run_scheduled(td), 1);
	assert_int_equal(sent(td), 400);
	assert_false(td->scheduled[TXQ]);
	assert_int_equal(td->schedule_calls[TXQ], 1);
	td_free(td);
}

static void test_tx_flood_yields_after_byte_budget(void **state)
{
	const uint32_t len = 8000;
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = recycle_packets;
	post_tx(td, 100, len); /* 100 * 8012 bytes > 512 KiB */
	vnet_dev_kick(td->dev, TXQ);
	assert_true(sent(td) < 100);
	assert_true(sent(td) * (len + 12) >= VNET_BUDGET_BYTES);
	assert_true((sent(td) - 1) * (len + 12) < VNET_BUDGET_BYTES);
	assert_true(td->scheduled[TXQ]);
	td_run_scheduled(td);
	assert_int_equal(sent(td), 100);
	td_free(td);
}

/* Chains of many tiny pieces cost their descriptors: 1024 of them a budget. */
static void test_tx_flood_yields_after_descriptor_budget(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct fake_buf b[40];

	(void)state;
	td->tx_hook = recycle_packets;
	for (unsigned i = 0; i < 40; i++)
		b[i] = (struct fake_buf){fake_mem_alloc(&td->mem, 16, 8), 16, false};
	for (unsigned i = 0; i < 30; i++)
		assert_true(fake_vq_add_indirect(&td->vq[TXQ], b, 40) >= 0);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	/* 41 descriptors a chain (the indirect one too): 25 chains = 1025 >= 1024. */
	assert_int_equal(sent(td), 25);
	assert_true(td->scheduled[TXQ]);
	td_run_scheduled(td);
	assert_int_equal(sent(td), 30);
	td_free(td);
}

/* A backend that delivers each packet several times (a switch flooding) charges the sender. */
static void test_tx_flood_deliveries_count_against_the_budget(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = recycle_packets;
	td->tx_cost = 3; /* each packet reaches four ports */
	post_tx(td, 100, 64);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(sent(td), VNET_BUDGET_PACKETS / 4);
	assert_true(td->scheduled[TXQ]);
	td_run_scheduled(td);
	assert_int_equal(sent(td), 100);
	td_free(td);
}

static void test_tx_within_budget_does_not_yield(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = recycle_packets;
	post_tx(td, 100, 64);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(sent(td), 100);
	assert_false(td->scheduled[TXQ]);
	assert_int_equal(stats(td, TXQ)->yields, 0);
	td_free(td);
}

/* A hostile driver that re-posts every completed head at once never lets one run end. */
static void test_tx_reposting_driver_gets_one_budget_per_round(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint32_t id, len;

	(void)state;
	td->tx_hook = recycle_packets;
	post_tx(td, 100, 64);
	vnet_dev_kick(td->dev, TXQ);
	for (unsigned round = 0; round < 5; round++) {
		uint64_t before = sent(td);

		/* The driver reclaims everything and posts as much again, every round. */
		while (fake_vq_get_used(&td->vq[TXQ], &id, &len))
			;
		post_tx(td, 100, 64);
		if (!td_run_scheduled(td))
			vnet_dev_kick(td->dev, TXQ);
		assert_true(sent(td) - before <= VNET_BUDGET_PACKETS);
	}
	td_free(td);
}

static void test_ctrl_flood_yields_after_budget(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct fake_vq *q = &td->vq[td->ctrl_q];
	const uint8_t cmd[3] = {VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 1};
	const unsigned n = VNET_BUDGET_CTRL + 20;

	(void)state;
	for (unsigned i = 0; i < n; i++) {
		struct fake_buf b[2] = {{fake_mem_alloc(&td->mem, 3, 8), 3, false},
					{fake_mem_alloc(&td->mem, 1, 1), 1, true}};

		memcpy(fake_mem_host(&td->mem, b[0].gpa), cmd, 3);
		assert_true(fake_vq_add_chain(q, b, 2) >= 0);
	}
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, td->ctrl_q);
	assert_int_equal(fake_vq_used_idx(q), VNET_BUDGET_CTRL);
	assert_true(td->scheduled[td->ctrl_q]);
	td_run_scheduled(td);
	assert_int_equal(fake_vq_used_idx(q), n);
	assert_false(td->scheduled[td->ctrl_q]);
	td_free(td);
}

/* A backend whose queued packets run out of guest buffers right when its budget ends
 * (review finding): the scheduled run finds the ring empty and must re-arm the kick. */
static struct test_dev *resume_td;
static int resume_queued, resume_budget;

static int resume_rx1(void)
{
	uint8_t hdr[12] = {0}, data[64];
	struct iovec iov[2] = {{hdr, 12}, {data, 64}};

	memset(data, 0x55, sizeof(data));
	memcpy(data, vnet_dev_mac(resume_td->dev), 6);
	return vnet_dev_receive(resume_td->dev, iov, 2);
}

static int resume_xmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		       const struct iovec *iov, unsigned n, size_t off, size_t len)
{
	(void)be;
	(void)hdr;
	(void)iov;
	(void)n;
	(void)off;
	(void)len;
	return 0;
}

static bool resume_drain(struct vnet_backend *be)
{
	int done = 0;

	(void)be;
	while (resume_queued) {
		if (done >= resume_budget)
			return true; /* budget spent, packets left */
		if (!resume_rx1())
			return false; /* out of buffers: waits for the next rx_resume() */
		resume_queued--;
		done++;
	}
	return false;
}

static const struct vnet_backend_ops resume_ops = {
    .kind = "resume-test", .transmit = resume_xmit, .rx_resume = resume_drain};

static bool driver_would_kick(const struct fake_vq *q, uint16_t old)
{
	uint16_t ev = fake_vq_avail_event(q), nw = q->avail_idx;

	return (uint16_t)(nw - ev - 1) < (uint16_t)(nw - old);
}

static void test_rx_resume_that_ends_on_budget_and_dry_ring_rearms_the_kick(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	struct fake_vq *q = &td->vq[RXQ];
	uint32_t id, len;
	uint16_t old;

	(void)state;
	resume_td = td;
	resume_queued = 100;
	resume_budget = 4;
	vnet_dev_attach_backend(td->dev, &resume_ops, &td->be);
	assert_int_equal(resume_rx1(), 0); /* no buffers: the packet waits, a kick is asked for */
	old = q->avail_idx;
	td_post_rx(td, RXQ, 4, 2048);
	assert_true(driver_would_kick(q, old));
	vnet_dev_kick(td->dev, RXQ); /* 4 delivered, budget spent: scheduled */
	vnet_dev_rx_flush(td->dev);
	assert_true(td->scheduled[RXQ]);
	td_run_scheduled(td); /* the ring is empty now */
	vnet_dev_rx_flush(td->dev);
	while (fake_vq_get_used(q, &id, &len))
		;
	old = q->avail_idx;
	td_post_rx(td, RXQ, 4, 2048);
	assert_true(driver_would_kick(q, old)); /* else 96 packets wait for ever */
	td_free(td);
}

/* ---- Nothing lost when a queue stops ---- */

static int eagain_on_second_attempt(struct test_dev *td)
{
	if (td->tx_attempts == 2)
		td->tx_eagain = 1;
	return 0;
}

static void test_stop_gives_back_chain_popped_while_backend_full(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = eagain_on_second_attempt;
	post_tx(td, 3, 64);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1);
	assert_true(vnet_dev_queue(td->dev, TXQ)->tx_blocked);
	/* GET_VRING_BASE: the base must point at the unsent packet, not past it. */
	assert_int_equal(vnet_dev_queue_stop(td->dev, TXQ), 1);
	assert_false(vnet_dev_queue(td->dev, TXQ)->tx_blocked);
	/* Restarted on the same rings, the device sends the packets it had not sent, in order. */
	assert_int_equal(vnet_dev_queue_start(td->dev, TXQ, &td->mem.gm), 0);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(td->pkts[i].data[12], i);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	td_free(td);
}

static void test_stop_signals_held_tx_completions(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 10, 1000000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->notifies[TXQ], 0); /* held */
	vnet_dev_queue_stop(td->dev, TXQ);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->stop_notifications, 1);
	assert_int_equal(td->deadline[TXQ], 0); /* timer disarmed */
	td_free(td);
}

static void test_stop_honours_driver_suppression(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 10, 1000000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 3, 64);
	fake_vq_set_no_interrupt(&td->vq[TXQ], true);
	vnet_dev_queue_stop(td->dev, TXQ);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(stats(td, TXQ)->suppressed, 1);
	td_free(td);
}

static void test_disable_signals_held_rx_completions(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 10, 1000000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 4, 1600);
	assert_int_equal(td_receive(td, 100, 0x11), 1);
	assert_int_equal(td->notifies[RXQ], 0);
	vnet_dev_queue_enable(td->dev, RXQ, false);
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(coal(td, RXQ)->pending, 0);
	td_free(td);
}

static void test_reset_signals_held_completions_first(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 10, 1000000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 2, 64);
	assert_int_equal(td->notifies[TXQ], 0);
	vnet_dev_reset(td->dev); /* e.g. the frontend disconnected */
	assert_int_equal(td->notifies[TXQ], 1);
	td_free(td);
}

/* ---- A broken queue signals its error fd ---- */

static void test_broken_queue_signals_error_once(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	fake_vq_add_head(&td->vq[TXQ], 9999); /* head out of range */
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_true(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	assert_int_equal(td->queue_errors[TXQ], 1);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->queue_errors[TXQ], 1);
	assert_int_equal(td->queue_errors[RXQ], 0);
	/* After a reset and a new start the queue may report again. */
	vnet_dev_reset(td->dev);
	assert_int_equal(vnet_dev_set_features(td->dev, td->features), 0);
	td_start_queues(td, 64);
	fake_vq_add_head(&td->vq[TXQ], 9999);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->queue_errors[TXQ], 2);
	td_free(td);
}

/* Found by fuzz_datapath: a deadline pending when the queue broke was re-armed in the past for
 * ever (the event loop would spin). */
static void test_broken_queue_drops_its_pending_deadline(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 10, 100), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	assert_true(td->deadline[TXQ] != 0);
	fake_vq_add_head(&td->vq[TXQ], 9999);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_true(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	assert_int_equal(td->deadline[TXQ], 0);
	td_advance(td, 1000 * US);
	assert_int_equal(td->deadline[TXQ], 0);
	td_free(td);
}

/* ---- Spec-exact coalescing state ---- */

static struct test_dev *td_with_host_defaults(bool persist)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 1);
	p.host_coal_tx_set = true;
	p.host_coal_tx = (struct coal_params){32, 100};
	p.coal_persist = persist;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 64);
	return td;
}

static void restart_device(struct test_dev *td)
{
	vnet_dev_reset(td->dev);
	assert_int_equal(vnet_dev_set_features(td->dev, td->features), 0);
	td_start_queues(td, 64);
}

static void test_reset_zeroes_host_settings_by_default(void **state)
{
	struct test_dev *td = td_with_host_defaults(false);

	(void)state;
	assert_false(vnet_dev_coal_persist(td->dev));
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, -1, VNET_QUEUE_RX, &(struct coal_params){8, 80}), 0);
	assert_params(td, RXQ, 8, 80);
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, TXQ, VNET_QUEUE_TX, &(struct coal_params){4, 40}), 0);
	restart_device(td);
	for (unsigned q = 0; q < 2; q++) {
		assert_params(td, q, 0, 0);
		assert_int_equal(coal(td, q)->setter, COAL_SET_NONE);
	}
	td_free(td);
}

static void test_host_defaults_survive_reset_only_with_opt_in(void **state)
{
	struct test_dev *td = td_with_host_defaults(true);

	(void)state;
	assert_true(vnet_dev_coal_persist(td->dev));
	assert_params(td, TXQ, 32, 100);
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, -1, VNET_QUEUE_RX, &(struct coal_params){8, 80}), 0);
	assert_int_equal(td_coal_cmd(td, TX_SET, 2, 20), VIRTIO_NET_OK); /* guest's: not kept */
	restart_device(td);
	assert_params(td, TXQ, 32, 100);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_HOST);
	assert_params(td, RXQ, 8, 80);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_HOST);
	td_free(td);
}

static void test_enable_cycle_on_same_rings_keeps_vq_set(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 50), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 9, 90), VIRTIO_NET_OK);
	vnet_dev_queue_enable(td->dev, TXQ, false);
	vnet_dev_queue_enable(td->dev, TXQ, true);
	assert_params(td, TXQ, 9, 90);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_GUEST);
	td_free(td);
}

static void test_virtio_reenable_gets_last_kind_setting_and_fresh_count(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 1000000), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 9, 1000000), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, RXQ, 3, 30), VIRTIO_NET_OK); /* no RX_SET so far */
	td_tx(td, TXQ, 3, 64);
	/* The driver tears both queues down and sets them up again (rings while disabled). */
	for (unsigned q = 0; q < 2; q++) {
		vnet_dev_queue_enable(td->dev, q, false);
		vnet_dev_queue_stop(td->dev, q);
		assert_int_equal(vnet_dev_queue_start(td->dev, q, &td->mem.gm), 0);
		vnet_dev_queue_enable(td->dev, q, true);
	}
	assert_params(td, TXQ, 5, 1000000);
	assert_params(td, RXQ, 0, 0);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	/* Counting starts afresh: 4 more packets do not reach 5 with the 3 from before. */
	unsigned before = (unsigned)td->notifies[TXQ];
	td_tx(td, TXQ, 4, 64);
	assert_int_equal(td->notifies[TXQ], before);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], before + 1);
	td_free(td);
}

static void test_reenabled_queue_rechecks_at_once(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 100), VIRTIO_NET_OK);
	td_tx(td, TXQ, 2, 64);
	assert_true(td->deadline[TXQ] != 0);
	vnet_dev_queue_enable(td->dev, TXQ, false); /* signals the 2 held completions */
	assert_int_equal(td->notifies[TXQ], 1);
	vnet_dev_queue_enable(td->dev, TXQ, true);
	assert_int_equal(td->deadline[TXQ], 0); /* nothing pending, no stale deadline */
	td_advance(td, 1000 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	td_free(td);
}

/* ---- What an idle port costs ---- */

/*
 * An idle port pays for the device pages it writes (docs/scale.md): nothing but moving packets
 * (or RSS_CONFIG) may write the scratch from rss.key to the device's end (vnet_dev_core.h). Its
 * whole pages are made read-only; a reset, a negotiation (mergeable buffers, event index), the
 * queues' start, posted RX buffers, a kick on an empty ring and a stop must not fault on them.
 */
static void test_idle_device_writes_no_scratch_page(void **state)
{
	const uint64_t features = TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF) |
				  BIT_ULL(VIRTIO_RING_F_EVENT_IDX);
	struct vnet_dev_params p;
	struct test_dev *td;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;

	(void)state;
	td_default_params(&p, 1);
	td = td_create(&p, features);
	lo = ((uintptr_t)&td->dev->rss.key + page - 1) & ~(page - 1);
	hi = (uintptr_t)(td->dev + 1) & ~(page - 1);
	assert_true(hi - lo >= 8 * page); /* the scratch is most of the device */
	assert_int_equal(mprotect((void *)lo, hi - lo, PROT_READ), 0);
	td_recycle(td, features);
	td_start_queues(td, 256);
	td_post_rx(td, RXQ, 16, 1526);
	fake_vq_publish(&td->vq[RXQ]);
	vnet_dev_kick(td->dev, RXQ);
	vnet_dev_kick(td->dev, TXQ);
	td_run_scheduled(td);
	vnet_dev_queue_stop(td->dev, RXQ);
	vnet_dev_reset(td->dev);
	assert_int_equal(mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE), 0);
	td_free(td);
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)
	const struct CMUnitTest tests[] = {
	    T(test_tx_flood_yields_after_packet_budget_then_continues),
	    T(test_tx_flood_yields_after_byte_budget),
	    T(test_tx_flood_yields_after_descriptor_budget),
	    T(test_tx_flood_deliveries_count_against_the_budget),
	    T(test_tx_within_budget_does_not_yield),
	    T(test_tx_reposting_driver_gets_one_budget_per_round),
	    T(test_ctrl_flood_yields_after_budget),
	    T(test_rx_resume_that_ends_on_budget_and_dry_ring_rearms_the_kick),
	    T(test_stop_gives_back_chain_popped_while_backend_full),
	    T(test_stop_signals_held_tx_completions),
	    T(test_stop_honours_driver_suppression),
	    T(test_disable_signals_held_rx_completions),
	    T(test_reset_signals_held_completions_first),
	    T(test_broken_queue_signals_error_once),
	    T(test_broken_queue_drops_its_pending_deadline),
	    T(test_reset_zeroes_host_settings_by_default),
	    T(test_host_defaults_survive_reset_only_with_opt_in),
	    T(test_enable_cycle_on_same_rings_keeps_vq_set),
	    T(test_virtio_reenable_gets_last_kind_setting_and_fresh_count),
	    T(test_reenabled_queue_rechecks_at_once),
	    T(test_idle_device_writes_no_scratch_page),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
