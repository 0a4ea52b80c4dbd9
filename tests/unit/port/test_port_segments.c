/* SPDX-License-Identifier: MIT */
/* test_port_segments.c - switch=NAME segments in the port table: a switch each, made and freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/port_spec.h"
#include "port/port.h"
#include "backend/switch/switch.h"
#include "lib/virtio_net_defs.h"
#include "loop/worker.h"

static struct worker_pool pool;
static struct port_table pt;
static char dir[64];

static void no_dispatch(void *ctx, struct worker *w, struct ev_ref ref, uint32_t events)
{
	(void)ctx, (void)w, (void)ref, (void)events;
}

static void no_fault(void *ctx, struct worker *w)
{
	(void)ctx, (void)w;
}

static const struct worker_ops ops = {.dispatch = no_dispatch, .fault = no_fault};

static void wake(void *ctx, unsigned worker)
{
	(void)ctx, (void)worker;
}

static const struct switch_owner_ops sw_ops = {.wake = wake};

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/vnetd-segments-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(worker_pool_init(&pool, 2, 64, &ops, NULL), 0);
	port_table_init(&pt, &pool, &sw_ops, NULL);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	port_table_free(&pt);
	worker_pool_free(&pool);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Add a port "socket=DIR/<i>.sock,<rest>": its slot. */
static int add(unsigned i, const char *rest)
{
	char spec[256], err[256];
	int slot;

	snprintf(spec, sizeof(spec), "socket=%s/%u.sock,%s", dir, i, rest);
	slot = port_table_add_spec(&pt, spec, PORT_ORIGIN_RUNTIME, err, sizeof(err));
	if (slot < 0)
		print_message("%s: %s\n", spec, err);
	return slot;
}

/* The switch of the port in `slot`'s segment. */
static struct vnet_switch *switch_of(int slot)
{
	return pt.segments[pt.segment_of[slot]].sw;
}

static void del(int slot)
{
	assert_int_equal(port_table_doom(&pt, (unsigned)slot), 0);
	port_table_reap(&pt);
}

/* Ports of one segment share its switch; each segment has its own; plain switch is "default". */
static void test_segments_get_a_switch_each(void **state)
{
	int a0, a1, b0, d0, d1, t0;

	(void)state;
	a0 = add(0, "switch=a");
	a1 = add(1, "switch=a,worker=1"); /* a segment's ports may sit on several workers */
	b0 = add(2, "switch=b");
	d0 = add(3, "switch");
	d1 = add(4, "switch=default");
	t0 = add(5, "switch=b");
	assert_true(a0 >= 0 && a1 >= 0 && b0 >= 0 && d0 >= 0 && d1 >= 0 && t0 >= 0);
	assert_int_equal(port_table_nsegments(&pt), 3);
	assert_ptr_equal(switch_of(a0), switch_of(a1));
	assert_ptr_equal(switch_of(d0), switch_of(d1));
	assert_ptr_equal(switch_of(b0), switch_of(t0));
	assert_ptr_not_equal(switch_of(a0), switch_of(b0));
	assert_ptr_not_equal(switch_of(a0), switch_of(d0));
	assert_ptr_not_equal(switch_of(b0), switch_of(d0));
	assert_string_equal(port_config(pt.ports[d1])->segment, "");
	assert_string_equal(port_config(pt.ports[a1])->segment, "a");
	/* Unpinned ports of a segment go to its home worker. */
	assert_int_equal(pt.worker_of[a0], pt.worker_of[add(6, "switch=a")]);
	assert_int_equal(pt.worker_of[a1], 1);
}

/* A segment goes with its last port (the others keep their switch) and comes back anew. */
static void test_segment_freed_with_its_last_port(void **state)
{
	struct vnet_switch *swb, *swd;
	int a0, a1, b0, d0;

	(void)state;
	a0 = add(0, "switch=a");
	a1 = add(1, "switch=a");
	b0 = add(2, "switch=b");
	d0 = add(3, "switch");
	swb = switch_of(b0);
	swd = switch_of(d0);
	del(a0);
	assert_int_equal(port_table_nsegments(&pt), 3);
	del(a1); /* segment a gone; the last one (default) takes its place in the array */
	assert_int_equal(port_table_nsegments(&pt), 2);
	assert_ptr_equal(switch_of(b0), swb);
	assert_ptr_equal(switch_of(d0), swd);
	assert_string_equal(pt.segments[pt.segment_of[d0]].name, "");
	assert_int_equal(add(4, "switch"), 0); /* the lowest free slot, in the default segment */
	assert_ptr_equal(switch_of(0), swd);
	assert_int_equal(add(5, "switch=a"), 1);
	assert_int_equal(port_table_nsegments(&pt), 3);
	assert_ptr_not_equal(switch_of(1), swb);
	assert_ptr_not_equal(switch_of(1), swd);
	assert_int_equal(add(6, "tap=t0,switch=a"), -1); /* one of tap and switch */
}

/* Write the --config file DIR/ports.json: ports DIR/<i>.sock in the segments given ("": plain). */
static void write_config(const char *const *segs, unsigned n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"ports\": [");
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "%s{\"socket\": \"%s/c%u.sock\", ", i ? ", " : "", dir, i);
		if (segs[i][0])
			fprintf(f, "\"switch\": \"%s\"}", segs[i]);
		else
			fprintf(f, "\"switch\": true}");
	}
	fprintf(f, "]}\n");
	assert_int_equal(fclose(f), 0);
}

/* The segment name of the port whose socket is DIR/c<i>.sock; NULL: no such port. */
static const char *segment_of_config_port(unsigned i)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/c%u.sock", dir, i);
	for (unsigned k = 0; k < VNETD_MAX_PORTS; k++)
		if (pt.ports[k] && strcmp(port_config(pt.ports[k])->socket_path, path) == 0)
			return pt.segments[pt.segment_of[k]].name;
	return NULL;
}

/* A --config reload moves a port to another segment; segments come and go with their ports. */
static void test_config_reload_changes_segments(void **state)
{
	static char cfg[128];
	const char *first[] = {"a", "a", ""}, *second[] = {"a", "b", ""}, *third[] = {"", "", ""};
	struct vnet_switch *swa;

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s/ports.json", dir);
	assert_true(port_table_open_config(&pt, cfg) >= 0);
	write_config(first, 3);
	assert_int_equal(port_table_reload(&pt), 0);
	assert_int_equal(port_table_nsegments(&pt), 2);
	assert_string_equal(segment_of_config_port(1), "a");
	swa = pt.segments[0].sw;
	write_config(second, 3); /* c1 moves to b; c0 and c2 stay untouched */
	assert_int_equal(port_table_reload(&pt), 0);
	assert_int_equal(port_table_nsegments(&pt), 3);
	assert_string_equal(segment_of_config_port(0), "a");
	assert_string_equal(segment_of_config_port(1), "b");
	assert_string_equal(segment_of_config_port(2), "");
	assert_ptr_equal(pt.segments[0].sw, swa);
	write_config(third, 3); /* everything in the default segment: a and b go */
	assert_int_equal(port_table_reload(&pt), 0);
	assert_int_equal(port_table_nsegments(&pt), 1);
	assert_string_equal(pt.segments[0].name, "");
	assert_int_equal(pt.segments[0].nports, 3);
}

/* Names: 1..15 of [A-Za-z0-9_.-]; "default" is plain switch's. */
static void test_segment_names(void **state)
{
	struct port_config c;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch=tenant-1.a_B", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_string_equal(c.segment, "tenant-1.a_B");
	assert_int_equal(port_spec_runtime("socket=/c,switch=default", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_string_equal(c.segment, "");
	assert_int_equal(port_spec_runtime("socket=/c,switch=", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch=0123456789abcdef", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch=a/b", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "segment name"));
}

/*
 * vlan=N: the access ports of VLAN N of a segment share a switch of their own, apart from the
 * segment's untagged ports and its other VLANs (and from VLAN N of another segment); the VLAN
 * goes with its last port. vlan= takes 1..4094 and is for switch ports only.
 */
static void test_vlans_of_a_segment_are_domains_of_their_own(void **state)
{
	struct port_config c;
	char err[256];
	int a, a10, a10b, a20, b10, d10;

	(void)state;
	a = add(0, "switch=a");
	a10 = add(1, "switch=a,vlan=10");
	a10b = add(2, "switch=a,vlan=10,worker=1");
	a20 = add(3, "switch=a,vlan=20");
	b10 = add(4, "switch=b,vlan=10");
	d10 = add(5, "switch,vlan=10");
	assert_true(a >= 0 && a10 >= 0 && a10b >= 0 && a20 >= 0 && b10 >= 0 && d10 >= 0);
	assert_int_equal(port_table_nsegments(&pt), 5);
	assert_ptr_equal(switch_of(a10), switch_of(a10b));
	assert_ptr_not_equal(switch_of(a10), switch_of(a));
	assert_ptr_not_equal(switch_of(a10), switch_of(a20));
	assert_ptr_not_equal(switch_of(a10), switch_of(b10));
	assert_ptr_not_equal(switch_of(a10), switch_of(d10));
	assert_ptr_not_equal(switch_of(a20), switch_of(a));
	assert_int_equal(pt.segments[pt.segment_of[a20]].vlan, 20);
	assert_string_equal(pt.segments[pt.segment_of[a20]].name, "a");
	assert_int_equal(pt.segments[pt.segment_of[a]].vlan, 0);
	assert_int_equal(port_config(pt.ports[d10])->vlan, 10);
	del(a20); /* VLAN 20 of a goes; a and its VLAN 10 stay */
	assert_int_equal(port_table_nsegments(&pt), 4);
	assert_ptr_not_equal(switch_of(a10), switch_of(a));
	assert_int_equal(port_spec_runtime("socket=/c,switch=a,vlan=4094", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.vlan, 4094);
	assert_int_equal(port_spec_runtime("socket=/c,switch=a,vlan=0", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch=a,vlan=4095", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "1..4094"));
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,vlan=10", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "for switch ports"));
}

/*
 * A trunk tap port (uplink=NAME,trunk=N+M) holds its VLANs' segments like their ports do: they
 * come with it (shared with access ports of the same VLAN) and go with the last of them. The
 * keys go together, on tap ports only, with distinct VLAN IDs; offloads are off.
 */
static void test_trunk_holds_its_vlans(void **state)
{
	struct port_config c;
	char err[256];
	int a10, tr;

	(void)state;
	a10 = add(0, "switch=a,vlan=10");
	assert_true(a10 >= 0);
	assert_int_equal(port_table_nsegments(&pt), 1);
	tr = add(1, "tap=vnt-seg0,uplink=a,trunk=10+20");
	if (tr < 0) {
		print_message("no tap (not root?): only the parser is tested\n");
	} else {
		assert_int_equal(port_table_nsegments(&pt), 2);
		assert_int_equal(pt.trunk_of[tr][0], pt.segment_of[a10]);
		assert_int_equal(pt.segments[pt.trunk_of[tr][1]].vlan, 20);
		del(a10); /* VLAN 10 stays: the trunk holds it */
		assert_int_equal(port_table_nsegments(&pt), 2);
		del(tr);
		assert_int_equal(port_table_nsegments(&pt), 0);
	}
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,uplink=default,trunk=10+4094", 7, &c,
					   NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.n_trunk, 2);
	assert_int_equal(c.trunk[1], 4094);
	assert_string_equal(c.uplink, "");
	/* A trunk keeps its offloads: the switch carries their headers across the trunk. */
	assert_int_not_equal(c.dev.features_mask & BIT_ULL(VIRTIO_NET_F_CSUM), 0);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,trunk=10", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "go together"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,uplink=a,trunk=10", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,uplink=a,trunk=10+10", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,uplink=a,trunk=1+2+3+4+5+6+7+8+9", 7,
					   &c, NULL, NULL, 0, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_segments_get_a_switch_each, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_segment_freed_with_its_last_port, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_segment_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_config_reload_changes_segments, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vlans_of_a_segment_are_domains_of_their_own, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_trunk_holds_its_vlans, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
