/* SPDX-License-Identifier: MIT */
/* test_vq_packed_events.c - packed event suppression: driver flags, EVENT_IDX, device area. */
#include "vq_packed_driver.h"

/* ---- event suppression ---- */

static void test_driver_flags_enable_disable(void **state)
{
	struct pd *p = *state;

	complete(p, 1);
	drv_event(p, 0, VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 1);
	drv_event(p, 0, VRING_PACKED_EVENT_F_ENABLE);
	assert_true(vq_driver_wants_notify(&p->vq));
	drv_event(p, 0, VRING_PACKED_EVENT_F_DESC); /* DESC without EVENT_IDX: as ENABLE */
	assert_true(vq_driver_would_notify(&p->vq));
	drv_event(p, 0, 3); /* reserved: notify rather than lose one */
	assert_true(vq_driver_would_notify(&p->vq));
}

static void test_event_idx_off_wrap(void **state)
{
	struct pd *p = *state; /* 8 slots */

	complete(p, 2);
	assert_true(vq_driver_wants_notify(&p->vq)); /* first decision */
	drv_event(p, 5 | 0x8000, VRING_PACKED_EVENT_F_DESC); /* at slot 5, this lap */
	complete(p, 2);                                       /* used 2, 3 */
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 2); /* used 4, 5: crosses 5 */
	assert_true(vq_driver_wants_notify(&p->vq));
	drv_event(p, 1, VRING_PACKED_EVENT_F_DESC); /* slot 1 of the next lap (wrap 0) */
	complete(p, 2);                              /* 6, 7 */
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 1); /* 0 (wrap 0) */
	assert_false(vq_driver_wants_notify(&p->vq));
	/* The flags change between decisions (mid-batch): each decision reads them anew. */
	complete(p, 1); /* 1 */
	drv_event(p, 1, VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_driver_wants_notify(&p->vq));
	drv_event(p, 1, VRING_PACKED_EVENT_F_DESC);
	complete(p, 1);
	assert_false(vq_driver_wants_notify(&p->vq)); /* 1 was passed at the DISABLE decision */
	drv_event(p, 0, VRING_PACKED_EVENT_F_ENABLE);
	complete(p, 1);
	assert_true(vq_driver_wants_notify(&p->vq));
}

static void test_kick_enable_disable_device_area(void **state)
{
	struct pd *p = *state; /* no EVENT_IDX */

	vq_kick_disable(&p->vq);
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_kick_enable(&p->vq));
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_ENABLE);
	pd_add1(p, 0, 64, false);
	assert_true(vq_kick_enable(&p->vq)); /* the re-check sees it */
}

static void test_kick_enable_event_idx_names_next_slot(void **state)
{
	struct pd *p = *state; /* 8 slots, EVENT_IDX */

	complete(p, 8); /* a full lap: the device's wrap is 0 now */
	assert_false(vq_kick_enable(&p->vq));
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DESC);
	assert_int_equal(p->dev[0], 0); /* slot 0, wrap 0 */
	vq_kick_disable(&p->vq); /* with EVENT_IDX the offset suppresses: nothing written */
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DESC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_driver_flags_enable_disable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_idx_off_wrap, setup_event_idx, teardown),
		cmocka_unit_test_setup_teardown(test_kick_enable_disable_device_area, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kick_enable_event_idx_names_next_slot,
						setup_event_idx, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
