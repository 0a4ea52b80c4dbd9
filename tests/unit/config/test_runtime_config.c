/* SPDX-License-Identifier: MIT */
/* test_runtime_config.c - run-time port specs, the --config file parser and the state file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config_file.h"
#include "config/options.h"
#include "config/port_spec.h"
#include "port/port_state.h"

static struct config_ports cp;

static int parse(const char *text, char *err)
{
	return config_file_parse(text, strlen(text), &cp, err, 256);
}

static void test_config_strings_and_objects(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"ports\": [\"socket=/a,tap=t0\", {\"socket\": \"/b\", "
			       "\"switch\": true, \"queues\": 2, \"offloads\": false, "
			       "\"client\": false}]}", err), 0);
	assert_int_equal(cp.n, 2);
	assert_string_equal(cp.spec[0], "socket=/a,tap=t0");
	assert_string_equal(cp.spec[1], "socket=/b,switch,queues=2,offloads=off");
	assert_int_equal(parse("{\"ports\": []}", err), 0);
	assert_int_equal(cp.n, 0);
}

static void test_config_refuses_what_a_spec_cannot_say(void **state)
{
	static const char *const bad[] = {
	    "", "[]", "{\"ports\": {}}", "{\"ports\": [], \"more\": 1}", "{\"ports\": [1]}",
	    "{\"ports\": [{\"socket\": \"/a,b\"}]}", "{\"ports\": [{\"so,cket\": \"/a\"}]}",
	    "{\"ports\": [{\"socket\": -1}]}", "{\"ports\": [{}]}", "{\"ports\": [null]}",
	    "{\"ports\": [{\"socket\": [\"/a\"]}]}", "{\"ports\": [\"a\\u0000b\"]}",
	    "{\"ports\": [], \"ports\": []}",
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], err), -1);
		assert_true(err[0] != '\0');
		assert_int_equal(cp.n, 0);
	}
}

static void test_runtime_port_checks_against_live_ports(void **state)
{
	struct port_config a, b, c;
	const struct port_config *others[2] = {&a, &b};
	unsigned idx[2] = {0, 5};
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/a,tap=t0,mac=52:54:00:00:00:01", 0, &a, NULL,
					   NULL, 0, err, sizeof(err)), 0);
	assert_true(a.mac_given);
	assert_int_equal(port_spec_runtime("socket=/b,switch", 5, &b, others, idx, 1, err,
					   sizeof(err)), 0);
	assert_false(b.mac_given);
	assert_int_equal(b.dev.mac[0], 0x52);
	/* Same socket, same tap, same explicit MAC: refused with a line naming it. */
	assert_int_equal(port_spec_runtime("socket=/a,switch", 7, &c, others, idx, 2, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "socket"));
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0", 7, &c, others, idx, 2, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "tap"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,mac=52:54:00:00:00:01", 7, &c,
					   others, idx, 2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mac"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,nosuch=1", 7, &c, others, idx, 2,
					   err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nosuch"));
	assert_null(strchr(err, '\n'));
	/* client mode is a bare key. */
	assert_int_equal(port_spec_runtime("socket=/c,switch,client", 7, &c, others, idx, 2, err,
					   sizeof(err)), 0);
	assert_true(c.client);
	assert_int_equal(port_spec_runtime("socket=/d,switch,client=on", 7, &c, others, idx, 2,
					   err, sizeof(err)), -1);
}

/* worker=N pins a port to a worker: parsed in a spec, refused beyond --workers at start-up. */
static void test_worker_key(void **state)
{
	static struct vnetd_options o; /* 1024 ports: not on the stack */
	struct port_config c;
	char err[256];
	char *ok[] = {"vnetd", "--control", "/c", "--workers", "2", "--port", "socket=/a,switch,worker=1",
		      "--port", "socket=/b,switch", NULL};
	char *bad[] = {"vnetd", "--control", "/c", "--workers", "2", "--port",
		       "socket=/a,switch,worker=2", NULL};

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch,worker=3", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.worker, 3);
	assert_int_equal(port_spec_runtime("socket=/c,switch", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.worker, -1); /* the worker with the fewest ports */
	assert_int_equal(port_spec_runtime("socket=/c,switch,worker=16", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_non_null(strstr(err, "worker"));
	assert_int_equal(options_parse(9, ok, &o), 0);
	assert_int_equal(o.ports[0].worker, 1);
	assert_int_equal(o.ports[1].worker, -1);
	assert_int_equal(options_parse(7, bad, &o), -1);
}

/* queue-workers=A+B: one worker per pair of a switch port, home worker 0, no rate limit. */
static void test_queue_workers_key(void **state)
{
	static struct vnetd_options o;
	static const char *const bad[] = {
	    "socket=/c,switch,queues=2,queue-workers=0",	   /* fewer workers than pairs */
	    "socket=/c,switch,queue-workers=0+1",		   /* more (queues=1) */
	    "socket=/c,tap=t0,queues=2,queue-workers=0+1",	   /* not a switch port */
	    "socket=/c,switch,queues=2,queue-workers=0+16",	   /* no worker 16 */
	    "socket=/c,switch,queues=2,queue-workers=0++1",	   /* empty item */
	    "socket=/c,switch,queues=2,queue-workers=0+1+",	   /* empty item */
	    "socket=/c,switch,queues=2,queue-workers=+",	   /* nothing */
	    "socket=/c,switch,queues=2,queue-workers=0+x",	   /* not a number */
	    "socket=/c,switch,queues=2,queue-workers=0+1,worker=1", /* home is worker 0 */
	    "socket=/c,switch,queues=2,queue-workers=0+1,tx-rate=100",
	    "socket=/c,switch,queues=2,queue-workers=0+1,vlan=5",
	};
	struct port_config c;
	char err[256];
	char *ok[] = {"vnetd", "--control", "/c", "--workers", "2", "--port",
		      "socket=/a,switch,queues=2,queue-workers=1+0", NULL};
	char *beyond[] = {"vnetd", "--control", "/c", "--workers", "2", "--port",
			  "socket=/a,switch,queues=2,queue-workers=0+2", NULL};
	char *one[] = {"vnetd", "--control", "/c", "--port",
		       "socket=/a,switch,queues=2,queue-workers=0+0", NULL};

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch,queues=3,queue-workers=0+1+1", 7, &c,
					   NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.n_queue_workers, 3);
	assert_int_equal(c.queue_workers[0], 0);
	assert_int_equal(c.queue_workers[1], 1);
	assert_int_equal(c.queue_workers[2], 1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,queues=2", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.n_queue_workers, 0); /* default: the port on one worker */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(port_spec_runtime(bad[i], 7, &c, NULL, NULL, 0, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "queue-workers"));
	}
	assert_int_equal(options_parse(7, ok, &o), 0);
	assert_int_equal(o.ports[0].n_queue_workers, 2);
	assert_int_equal(o.ports[0].queue_workers[0], 1);
	assert_int_equal(options_parse(7, beyond, &o), -1);
	assert_int_equal(options_parse(5, one, &o), -1); /* --workers 1 */
}

/* max-macs=N and learn-rate=N: a switch port's FDB limits, with defaults, ranges, switch only. */
static void test_switch_limit_keys(void **state)
{
	struct port_config c;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.max_macs, 256);
	assert_int_equal(c.learn_rate, 100);
	assert_int_equal(port_spec_runtime("socket=/c,switch,max-macs=4096,learn-rate=0", 7, &c,
					   NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.max_macs, 4096);
	assert_int_equal(c.learn_rate, 0);
	assert_int_equal(port_spec_runtime("socket=/c,switch,max-macs=1,learn-rate=1000000", 7,
					   &c, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.max_macs, 1);
	assert_int_equal(c.learn_rate, 1000000);
	assert_int_equal(port_spec_runtime("socket=/c,switch,max-macs=0", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_non_null(strstr(err, "max-macs"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,max-macs=4097", 7, &c, NULL, NULL,
					   0, err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,learn-rate=1000001", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "learn-rate"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,learn-rate=-1", 7, &c, NULL, NULL,
					   0, err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,max-macs=8", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_non_null(strstr(err, "switch ports"));
	/* The --config object form says the same. */
	assert_int_equal(parse("{\"ports\": [{\"socket\": \"/b\", \"switch\": true, "
			       "\"max-macs\": 16, \"learn-rate\": 5}]}", err), 0);
}

/* port-security=, mac-change= and allowed-macs=MAC+MAC: on, off and none by default, switch only. */
static void test_port_security_keys(void **state)
{
	static const uint8_t m2[6] = {0x02, 0, 0, 0, 0, 2};
	struct port_config c;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_false(c.psec_off);
	assert_false(c.mac_change);
	assert_int_equal(c.n_allowed_macs, 0);
	assert_int_equal(port_spec_runtime("socket=/c,switch,port-security=off,mac-change=on,"
					   "allowed-macs=02:00:00:00:00:01+02:00:00:00:00:02", 7, &c,
					   NULL, NULL, 0, err, sizeof(err)), 0);
	assert_true(c.psec_off);
	assert_true(c.mac_change);
	assert_int_equal(c.n_allowed_macs, 2);
	assert_memory_equal(c.allowed_macs[1], m2, 6);
	assert_int_equal(port_spec_runtime("socket=/c,switch,allowed-macs=01:00:5e:00:00:01", 7,
					   &c, NULL, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "allowed-macs"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,allowed-macs=02:00:00:00:00:01+", 7,
					   &c, NULL, NULL, 0, err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,allowed-macs=02:00:00:00:00:01+"
					   "02:00:00:00:00:02+02:00:00:00:00:03+02:00:00:00:00:04+"
					   "02:00:00:00:00:05+02:00:00:00:00:06+02:00:00:00:00:07+"
					   "02:00:00:00:00:08+02:00:00:00:00:09", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,port-security=maybe", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,port-security=off", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "switch ports"));
}

/* ips=ADDR[/LEN]+...: IPv4 and IPv6, /32 or /128 without a length, none by default, switch only. */
static void test_ips_key(void **state)
{
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
	struct port_config c;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.n_ips, 0);
	assert_int_equal(port_spec_runtime("socket=/c,switch,ips=10.0.0.5+192.168.0.0/16+"
					   "2001:db8::1+fe80::/64", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.n_ips, 4);
	assert_false(c.ips[0].v6);
	assert_int_equal(c.ips[0].prefix, 32);
	assert_memory_equal(c.ips[0].addr, ((const uint8_t[4]){10, 0, 0, 5}), 4);
	assert_int_equal(c.ips[1].prefix, 16);
	assert_true(c.ips[2].v6);
	assert_int_equal(c.ips[2].prefix, 128);
	assert_memory_equal(c.ips[2].addr, v6, 16);
	assert_int_equal(c.ips[3].prefix, 64);
	static const char *const bad[] = {
	    "ips=10.0.0.1/33", "ips=2001:db8::/129", "ips=10.0.0.1+", "ips=10.0.0", "ips=nope",
	    "ips=10.0.0.1/", "ips=10.0.0.1/x", "ips=1.1.1.1+1.1.1.2+1.1.1.3+1.1.1.4+1.1.1.5+1.1.1.6+"
	    "1.1.1.7+1.1.1.8+1.1.1.9+1.1.1.10+1.1.1.11+1.1.1.12+1.1.1.13+1.1.1.14+1.1.1.15+"
	    "1.1.1.16+1.1.1.17",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char spec[512];

		snprintf(spec, sizeof(spec), "socket=/c,switch,%s", bad[i]);
		assert_int_equal(port_spec_runtime(spec, 7, &c, NULL, NULL, 0, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "ips"));
	}
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,ips=10.0.0.1", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_non_null(strstr(err, "switch ports"));
}

/* group=NAME|GID and mode=OCTAL: the listener's ownership; unset by default, not for client ports. */
static void test_socket_owner_keys(void **state)
{
	struct port_config c;
	unsigned mode = 0;
	long gid = -1;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/c,switch", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	assert_int_equal(c.sock_gid, -1);
	assert_int_equal(c.sock_mode, 0);
	assert_int_equal(port_spec_runtime("socket=/c,switch,group=root,mode=0640", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.sock_gid, 0);
	assert_int_equal(c.sock_mode, 0640);
	assert_int_equal(port_spec_runtime("socket=/c,tap=t0,group=4242,mode=666", 7, &c, NULL,
					   NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(c.sock_gid, 4242);
	assert_int_equal(c.sock_mode, 0666);
	assert_int_equal(port_spec_runtime("socket=/c,switch,group=no-such-group-here", 7, &c,
					   NULL, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "group"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,group=", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,group=-1", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,mode=0", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "mode"));
	assert_int_equal(port_spec_runtime("socket=/c,switch,mode=1777", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,mode=0680", 7, &c, NULL, NULL, 0, err,
					   sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,mode=00660", 7, &c, NULL, NULL, 0,
					   err, sizeof(err)), -1);
	assert_int_equal(port_spec_runtime("socket=/c,switch,client,mode=0660", 7, &c, NULL, NULL,
					   0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "client"));
	/* The helpers --socket-group and --socket-mode share. */
	assert_true(port_spec_parse_group("0", &gid));
	assert_int_equal(gid, 0);
	assert_false(port_spec_parse_group("root ", &gid));
	assert_true(port_spec_parse_mode("660", &mode));
	assert_int_equal(mode, 0660);
	assert_false(port_spec_parse_mode("+660", &mode));
	/* The --config object form says the same. */
	assert_int_equal(parse("{\"ports\": [{\"socket\": \"/b\", \"switch\": true, "
			       "\"group\": \"0\", \"mode\": \"0600\"}]}", err), 0);
}

static void test_runtime_port_default_mac_is_unique(void **state)
{
	struct port_config a, other, c;
	const struct port_config *others[1] = {&other};
	unsigned idx[1] = {8};
	char err[256];

	(void)state;
	assert_int_equal(port_spec_runtime("socket=/x,switch", 3, &a, NULL, NULL, 0, err,
					   sizeof(err)), 0);
	/* A live port (another socket) that happens to hold the MAC port 3 on /x derives. */
	other = a;
	strcpy(other.socket_path, "/other");
	assert_int_equal(port_spec_runtime("socket=/x,switch", 3, &c, others, idx, 1, err,
					   sizeof(err)), 0);
	assert_memory_not_equal(c.dev.mac, other.dev.mac, 6);
	assert_memory_equal(c.dev.mac, a.dev.mac, 3); /* stepped in the last three bytes only */
}

static void test_state_round_trip_and_refusals(void **state)
{
	struct port_state st, back;
	char err[256], *text;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.nqueues = 3;
	st.q[0].params = (struct coal_params){16, 64};
	st.q[0].setter = COAL_SET_HOST;
	st.q[1].params = (struct coal_params){32, 100};
	st.q[1].setter = COAL_SET_GUEST;
	text = port_state_format(&st, "/run/a.sock");
	assert_non_null(text);
	assert_int_equal(port_state_parse(text, strlen(text), "/run/a.sock", 3, &back, err,
					  sizeof(err)), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	/* Another port's file, more queues than the port has. */
	assert_int_equal(port_state_parse(text, strlen(text), "/run/b.sock", 3, &back, err,
					  sizeof(err)), -1);
	assert_int_equal(port_state_parse(text, strlen(text), "/run/a.sock", 2, &back, err,
					  sizeof(err)), -1);
	assert_int_equal(back.nqueues, 0);
	free(text);
	static const char *const bad[] = {
	    "{\"version\":2,\"socket\":\"/s\",\"queues\":[]}",
	    "{\"version\":1,\"socket\":\"/s\",\"queues\":[[1,2,\"root\"]]}",
	    "{\"version\":1,\"socket\":\"/s\",\"queues\":[[1,4294967296,\"host\"]]}",
	    "{\"version\":1,\"socket\":\"/s\",\"queues\":[[1,2]]}",
	    "{\"version\":1,\"socket\":\"/s\",\"queues\":[],\"x\":0}",
	    "{\"version\":1,\"socket\":\"/s\"}", "not json",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(port_state_parse(bad[i], strlen(bad[i]), "/s", 3, &back, err,
						  sizeof(err)), -1);
}

static void test_state_rx_round_trip(void **state)
{
	struct vnet_rx_filter f, back_f;
	struct port_state st, back;
	static const uint8_t mac[6] = {0x52, 0x54, 0, 0xab, 0xcd, 0xef}, cfg[6] = {2, 0, 0, 0, 0, 1};
	char err[256], *text;

	(void)state;
	memset(&st, 0, sizeof(st));
	memset(&f, 0, sizeof(f));
	f.allmulti = f.nobcast = true;
	f.n_uc = 2;
	memcpy(f.uc[0], mac, 6);
	memcpy(f.uc[1], cfg, 6);
	f.mc_overflow = true;
	st.nqueues = 1;
	port_state_rx_from(&st.rx, &f, mac, cfg);
	assert_true(st.rx.present && st.rx.mac_set);
	assert_int_equal(st.rx.mode, PORT_RX_ALLMULTI | PORT_RX_NOBCAST);
	text = port_state_format(&st, "/run/a.sock");
	assert_non_null(text);
	assert_non_null(strstr(text, "\"version\":2"));
	assert_non_null(strstr(text, "\"52:54:00:ab:cd:ef\""));
	assert_int_equal(port_state_parse(text, strlen(text), "/run/a.sock", 3, &back, err,
					  sizeof(err)), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	free(text);
	port_state_rx_filter(&back.rx, &back_f);
	assert_true(back_f.allmulti && back_f.nobcast && !back_f.promisc && back_f.mc_overflow);
	assert_int_equal(back_f.n_uc, 2);
	assert_memory_equal(back_f.uc[1], cfg, 6);
	/* The configured MAC is not "set by the driver". */
	port_state_rx_from(&st.rx, &f, cfg, cfg);
	assert_false(st.rx.mac_set);
}

static void test_state_rx_refusals(void **state)
{
	static const char head[] = "{\"version\":2,\"socket\":\"/s\",\"queues\":[],\"rx\":";
	static const char *const bad[] = {
	    "{}",
	    "{\"mode\":[\"promisc\",\"promisc\"],\"mac\":null,\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false}",
	    "{\"mode\":[\"root\"],\"mac\":null,\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false}",
	    "{\"mode\":[],\"mac\":\"52:54:00:12:34:5g\",\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false}",
	    "{\"mode\":[],\"mac\":\"52-54-00-12-34-56\",\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false}",
	    "{\"mode\":[],\"mac\":null,\"unicast\":[\"52:54:00:12:34:56\"],\"multicast\":[],"
	    "\"unicast_overflow\":true,\"multicast_overflow\":false}",
	    "{\"mode\":[],\"mac\":null,\"unicast\":[1],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false}",
	    "{\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":0}",
	    "{\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
	    "\"unicast_overflow\":false,\"multicast_overflow\":false,\"x\":1}",
	};
	struct port_state back;
	char err[256], text[2048];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s}", head, bad[i]);
		assert_int_equal(port_state_parse(text, strlen(text), "/s", 3, &back, err,
						  sizeof(err)), -1);
		assert_false(back.rx.present);
	}
	/* 64 entries fit, 65 do not. */
	for (unsigned count = 64; count <= 65; count++) {
		n = (size_t)snprintf(text, sizeof(text), "%s{\"mode\":[],\"mac\":null,"
				     "\"unicast\":[", head);
		for (unsigned i = 0; i < count; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"02:00:00:00:00:%02x\"",
					      i ? "," : "", i);
		snprintf(text + n, sizeof(text) - n, "],\"multicast\":[],\"unicast_overflow\":false,"
			 "\"multicast_overflow\":false}}");
		assert_int_equal(port_state_parse(text, strlen(text), "/s", 3, &back, err,
						  sizeof(err)), count == 64 ? 0 : -1);
	}
	/* A version 1 file has no rx. */
	snprintf(text, sizeof(text), "{\"version\":1,\"socket\":\"/s\",\"queues\":[]}");
	assert_int_equal(port_state_parse(text, strlen(text), "/s", 3, &back, err, sizeof(err)), 0);
	assert_false(back.rx.present);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_strings_and_objects),
	    cmocka_unit_test(test_config_refuses_what_a_spec_cannot_say),
	    cmocka_unit_test(test_runtime_port_checks_against_live_ports),
	    cmocka_unit_test(test_runtime_port_default_mac_is_unique),
	    cmocka_unit_test(test_worker_key),
	    cmocka_unit_test(test_queue_workers_key),
	    cmocka_unit_test(test_switch_limit_keys),
	    cmocka_unit_test(test_port_security_keys),
	    cmocka_unit_test(test_socket_owner_keys),
	    cmocka_unit_test(test_ips_key),
	    cmocka_unit_test(test_state_round_trip_and_refusals),
	    cmocka_unit_test(test_state_rx_round_trip),
	    cmocka_unit_test(test_state_rx_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
