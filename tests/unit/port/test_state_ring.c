/* SPDX-License-Identifier: MIT */
/* test_state_ring.c - packed positions in the state file: round trip, refusals, resume rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "port/port_state.h"

#define SOCK "/run/pk.sock"
#define HEAD                                                                                    \
	"{\"version\":4,\"socket\":\"/run/pk.sock\",\"queues\":[],\"rx\":{\"mode\":[\"promisc\"],"   \
	"\"mac\":null,\"unicast\":[],\"multicast\":[],\"unicast_overflow\":false,"                   \
	"\"multicast_overflow\":false},\"rss\":null,\"packed\":"

/* A 256-slot ring stopped at slot 5 of its second lap (wrap 0), started by QEMU's fresh base. */
static struct port_state_ring ring5(void)
{
	struct port_state_ring r = {0};

	r.present = true;
	r.size = 256;
	r.avail = r.used = 5;
	r.from = 0x80008000u;
	r.desc = 0x7f0012345000ull;
	return r;
}

static int parse(const char *text, struct port_state *st)
{
	char err[256];
	int r = port_state_parse(text, strlen(text), SOCK, 3, st, err, sizeof(err));

	if (r < 0)
		printf("refused: %s\n", err);
	return r;
}

static void test_round_trip_v4(void **state)
{
	struct port_state st, back;
	char *text;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.nqueues = 2;
	st.q[0].params = (struct coal_params){16, 64};
	st.q[0].setter = COAL_SET_HOST;
	st.rx.present = true;
	st.rx.mode = PORT_RX_PROMISC;
	st.rss.present = true; /* RSS off: "rss":null */
	st.ring[0] = ring5();
	st.ring[1] = ring5();
	st.ring[1].avail = st.ring[1].used = 0x8000 | 200; /* wrap 1 */
	st.ring[1].in_order = true;
	st.ring[1].from = 0x8000; /* avail half only */
	text = port_state_format(&st, SOCK);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"version\":4"));
	assert_non_null(strstr(text, "\"packed\":["));
	assert_int_equal(parse(text, &back), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	free(text);
	/* Only queue 1 kept: queue 0's entry is null. */
	memset(&st.ring[0], 0, sizeof(st.ring[0]));
	text = port_state_format(&st, SOCK);
	assert_non_null(strstr(text, "\"packed\":[null,{"));
	assert_int_equal(parse(text, &back), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	free(text);
	/* Nothing kept: version 3, as before packed rings. */
	memset(&st.ring[1], 0, sizeof(st.ring[1]));
	text = port_state_format(&st, SOCK);
	assert_non_null(strstr(text, "\"version\":3"));
	assert_null(strstr(text, "packed"));
	assert_int_equal(parse(text, &back), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	free(text);
}

static void test_old_files_still_load(void **state)
{
	struct port_state back;

	(void)state;
	assert_int_equal(parse("{\"version\":1,\"socket\":\"/run/pk.sock\",\"queues\":[[8,50,\"host\"]]}",
			       &back), 0);
	assert_int_equal(back.nqueues, 1);
	assert_false(back.ring[0].present);
	assert_int_equal(parse("{\"version\":2,\"socket\":\"/run/pk.sock\",\"queues\":[],\"rx\":{"
			       "\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
			       "\"unicast_overflow\":false,\"multicast_overflow\":false}}", &back), 0);
	assert_true(back.rx.present);
	assert_false(port_state_ring_any(back.ring, VNET_MAX_QUEUES));
	/* Version 3 (RSS, before packed positions) still loads. */
	assert_int_equal(parse("{\"version\":3,\"socket\":\"/run/pk.sock\",\"queues\":[],\"rx\":{"
			       "\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
			       "\"unicast_overflow\":false,\"multicast_overflow\":false},\"rss\":null}",
			       &back), 0);
	assert_true(back.rss.present);
	assert_false(port_state_ring_any(back.ring, VNET_MAX_QUEUES));
	/* A version 3 file with "packed" instead of "rss", a version 4 one without "packed",
	 * version 5: not what they claim. */
	assert_int_equal(parse("{\"version\":3,\"socket\":\"/run/pk.sock\",\"queues\":[],\"rx\":{"
			       "\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
			       "\"unicast_overflow\":false,\"multicast_overflow\":false},\"packed\":[]}",
			       &back), -1);
	assert_int_equal(parse("{\"version\":4,\"socket\":\"/run/pk.sock\",\"queues\":[],\"rx\":{"
			       "\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
			       "\"unicast_overflow\":false,\"multicast_overflow\":false},\"rss\":null}",
			       &back), -1);
	assert_int_equal(parse("{\"version\":5,\"socket\":\"/run/pk.sock\",\"queues\":[]}", &back), -1);
}

static void test_hostile_entries_refused(void **state)
{
	static const char *const bad[] = {
		/* slot outside the ring: avail, used, either half of from */
		"[{\"size\":256,\"avail\":256,\"used\":256,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":33024,\"used\":33024,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":5,\"used\":5,\"in_order\":false,\"from\":300,\"desc\":0}]",
		"[{\"size\":256,\"avail\":5,\"used\":5,\"in_order\":false,\"from\":19660800,\"desc\":0}]",
		/* wrap mismatch: used ahead of avail (same wrap), or more than a ring behind */
		"[{\"size\":256,\"avail\":5,\"used\":6,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":6,\"used\":32773,\"in_order\":false,\"from\":0,\"desc\":0}]",
		/* size 0, over 32768, values out of range or of the wrong type */
		"[{\"size\":0,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":32769,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":65536,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":-1,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":4294967296,\"desc\":0}]",
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":1,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":\"0\",\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0}]",
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":8}]",
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":-16}]",
		/* missing or extra keys, not an object, too many queues, not an array */
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0}]",
		"[{\"size\":256,\"avail\":0,\"used\":0,\"in_order\":false,\"from\":0,\"desc\":0,\"x\":1}]",
		"[7]", "[null,null,null,null]", "{}", "null",
	};
	struct port_state back;
	char text[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s}", HEAD, bad[i]);
		assert_int_equal(parse(text, &back), -1);
		assert_false(port_state_ring_any(back.ring, VNET_MAX_QUEUES));
		assert_int_equal(back.nqueues, 0);
	}
	/* The edges that are fine: a full ring in flight (one lap apart), the last slot, nulls. */
	snprintf(text, sizeof(text), "%s%s}", HEAD,
		 "[null,{\"size\":256,\"avail\":5,\"used\":32773,\"in_order\":true,\"from\":2147516416,"
		 "\"desc\":4096},{\"size\":32768,\"avail\":65535,\"used\":65535,\"in_order\":false,"
		 "\"from\":0,\"desc\":0}]");
	assert_int_equal(parse(text, &back), 0);
	assert_false(back.ring[0].present);
	assert_true(back.ring[1].present && back.ring[1].in_order && back.ring[1].used == 32773);
	assert_true(back.ring[2].present && back.ring[2].size == 32768);
}

static void test_resume_rule(void **state)
{
	struct port_state_ring r = ring5();
	uint32_t base = 0;

	(void)state;
	/* The frontend repeats the base it gave the stopped ring, both halves: the kept one wins. */
	assert_true(port_state_ring_resume(&r, 256, r.desc, false, true, 0x80008000u, &base));
	assert_int_equal(base, 5u | 5u << 16);
	/* Anything else is a new start: its base stands. */
	base = 0;
	assert_false(port_state_ring_resume(&r, 256, r.desc, false, true, 0x80018001u, &base));
	assert_false(port_state_ring_resume(&r, 256, r.desc, false, false, 0x80008000u, &base));
	assert_false(port_state_ring_resume(&r, 128, r.desc, false, true, 0x80008000u, &base));
	assert_false(port_state_ring_resume(&r, 256, r.desc + 4096, false, true, 0x80008000u, &base));
	assert_false(port_state_ring_resume(&r, 256, r.desc, true, true, 0x80008000u, &base));
	assert_int_equal(base, 0);
	/* A frontend that sends the avail half only (DPDK virtio-user) reset its rings. */
	r.from = 0x8000;
	assert_false(port_state_ring_resume(&r, 256, r.desc, false, true, 0x8000, &base));
	/* Nothing kept. */
	r = ring5();
	r.present = false;
	assert_false(port_state_ring_resume(&r, 256, r.desc, false, true, 0x80008000u, &base));
	/* Kept where the frontend says anyway (stopped a whole number of laps on): the same. */
	r = ring5();
	r.avail = r.used = 0x8000;
	assert_true(port_state_ring_resume(&r, 256, r.desc, false, true, 0x80008000u, &base));
	assert_int_equal(base, 0x80008000u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip_v4),
	    cmocka_unit_test(test_old_files_still_load),
	    cmocka_unit_test(test_hostile_entries_refused),
	    cmocka_unit_test(test_resume_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
