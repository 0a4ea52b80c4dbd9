/* SPDX-License-Identifier: MIT */
/* test_xdp_frames.c - the AF_XDP port's UMEM layout and free-frame stack; the xdp= port keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config/port_spec.h"
#include "backend/xdp/xdp.h"
#include "backend/xdp/xdp_frames.h"

/* Sockets' RX runs, then the TX frames: disjoint, in order, the size adds up. */
static void test_layout(void **state)
{
	struct xdp_umem_layout l;

	(void)state;
	assert_int_equal(xdp_umem_layout_init(&l, 2, 4096, 512, 256), 0);
	assert_int_equal(l.size, (2ull * 512 + 256) * 4096);
	assert_int_equal(xdp_rx_frame(&l, 0, 0), 0);
	assert_int_equal(xdp_rx_frame(&l, 1, 0), 512ull * 4096);
	assert_int_equal(xdp_tx_frame(&l, 0), 1024ull * 4096);
	assert_int_equal(xdp_tx_frame(&l, 255) + 4096, l.size);
	/* A descriptor's address carries the kernel's headroom: the frame is found again. */
	assert_int_equal(xdp_frame_of(&l, xdp_rx_frame(&l, 1, 7) + 256), xdp_rx_frame(&l, 1, 7));
	assert_true(xdp_frame_is_rx(&l, 0, 511ull * 4096 + 4095));
	assert_false(xdp_frame_is_rx(&l, 0, 512ull * 4096)); /* socket 1's */
	assert_true(xdp_frame_is_rx(&l, 1, 512ull * 4096 + 256));
	assert_false(xdp_frame_is_rx(&l, 1, xdp_tx_frame(&l, 0)));
	assert_false(xdp_frame_is_rx(&l, 2, 0)); /* no socket 2 */
	assert_true(xdp_frame_is_tx(&l, xdp_tx_frame(&l, 3)));
	assert_false(xdp_frame_is_tx(&l, xdp_tx_frame(&l, 3) + 1)); /* not a frame start */
	assert_false(xdp_frame_is_tx(&l, xdp_rx_frame(&l, 1, 511)));
	assert_false(xdp_frame_is_tx(&l, l.size)); /* past the end */
	assert_false(xdp_frame_is_tx(&l, UINT64_MAX & ~4095ull));
}

/* What the kernel refuses is refused here first. */
static void test_layout_rules(void **state)
{
	struct xdp_umem_layout l;

	(void)state;
	assert_int_equal(xdp_umem_layout_init(&l, 0, 4096, 512, 1), -1);
	assert_int_equal(xdp_umem_layout_init(&l, 1, 1024, 512, 1), -1);   /* chunk < 2048 */
	assert_int_equal(xdp_umem_layout_init(&l, 1, 3000, 512, 1), -1);   /* not a power of 2 */
	assert_int_equal(xdp_umem_layout_init(&l, 1, 131072, 512, 1), -1); /* > 64 KiB */
	assert_int_equal(xdp_umem_layout_init(&l, 1, 4096, 500, 1), -1);   /* ring not 2^n */
	assert_int_equal(xdp_umem_layout_init(&l, 1, 4096, 512, 0), -1);
	assert_int_equal(xdp_umem_layout_init(&l, 64, 65536, 1u << 31, 1), -1); /* overflow */
	assert_int_equal(xdp_umem_layout_init(&l, 1, 2048, 1, 1), 0);
}

/* Batches out, single frames back; a full stack refuses (a frame completed twice). */
static void test_frame_stack(void **state)
{
	struct xdp_umem_layout l;
	struct xdp_frames f;
	uint64_t out[8];

	(void)state;
	assert_int_equal(xdp_umem_layout_init(&l, 1, 4096, 4, 6), 0);
	assert_int_equal(xdp_frames_init(&f, l.tx_frames), 0);
	xdp_frames_fill(&f, &l);
	assert_int_equal(f.n, 6);
	assert_int_equal(xdp_frames_get(&f, out, 4), 4);
	for (unsigned i = 0; i < 4; i++) /* the lowest first */
		assert_int_equal(out[i], xdp_tx_frame(&l, i));
	assert_int_equal(xdp_frames_get(&f, out + 4, 8), 2); /* what is left */
	assert_int_equal(xdp_frames_get(&f, out, 1), 0);	   /* dry */
	for (unsigned i = 0; i < 6; i++)
		assert_true(xdp_frames_put(&f, out[i]));
	assert_false(xdp_frames_put(&f, out[0])); /* already full */
	assert_int_equal(f.n, 6);
	assert_int_equal(xdp_frames_get(&f, out, 1), 1);
	assert_int_equal(out[0], xdp_tx_frame(&l, 5)); /* LIFO: the warmest frame */
	xdp_frames_free(&f);
	assert_int_equal(f.cap, 0);
}

/* xdp=IFNAME[,queue=N]: one backend of three, queue= only with it, the frame limit on mtu=. */
static void test_port_keys(void **state)
{
	struct port_config pc;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_parse("socket=/s,xdp=vx0,queue=3,queues=2", 0, &pc, err,
					 sizeof(err)), 0);
	assert_int_equal(pc.backend, PORT_BACKEND_XDP);
	assert_string_equal(pc.xdp_name, "vx0");
	assert_int_equal(pc.xdp_queue, 3);
	assert_int_equal(pc.dev.queue_pairs, 2);
	assert_int_equal(port_spec_parse("socket=/s,xdp=vx0", 0, &pc, err, sizeof(err)), 0);
	assert_int_equal(pc.xdp_queue, 0);
	assert_int_equal(port_spec_parse("socket=/s,xdp=vx0,mtu=3826", 0, &pc, err, sizeof(err)), 0);
	static const char *const bad[] = {
	    "socket=/s,xdp=vx0,tap=t0", "socket=/s,xdp=vx0,switch", "socket=/s,tap=t0,queue=1",
	    "socket=/s,xdp=vx0,queue=256", "socket=/s,xdp=vx0,queue=-1", "socket=/s,xdp=",
	    "socket=/s,xdp=0123456789abcdef", "socket=/s,xdp=vx0,mtu=3827",
	    "socket=/s,xdp=vx0,queue", "socket=/s,xdp=vx0,uplink=u,trunk=2",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(port_spec_parse(bad[i], 0, &pc, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
	}
}

/* Two ports on one interface would fight over its one XDP program. */
static void test_port_clash(void **state)
{
	struct port_config a, b;
	const struct port_config *others[1];
	unsigned idx[1] = {0};
	char err[256];

	(void)state;
	assert_int_equal(port_spec_parse("socket=/a,xdp=vx0,queue=0", 0, &a, err, sizeof(err)), 0);
	assert_int_equal(port_spec_parse("socket=/b,xdp=vx0,queue=1", 1, &b, err, sizeof(err)), 0);
	others[0] = &a;
	assert_int_equal(port_spec_check(&b, 1, others, idx, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "both use xdp 'vx0'"));
	assert_int_equal(port_spec_parse("socket=/b,xdp=vx1", 1, &b, err, sizeof(err)), 0);
	assert_int_equal(port_spec_check(&b, 1, others, idx, 1, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),	   cmocka_unit_test(test_layout_rules),
		cmocka_unit_test(test_frame_stack), cmocka_unit_test(test_port_keys),
		cmocka_unit_test(test_port_clash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
