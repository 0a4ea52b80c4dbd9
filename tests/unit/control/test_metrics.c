/* SPDX-License-Identifier: MIT */
/* test_metrics.c - Prometheus exposition text, lateness histogram, HTTP request rules. */
#include "coal_helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>

#include "control/metrics.h"
#include "lib/listen_addr.h"
#include "control/metrics_text.h"
#include "lib/textbuf.h"

/* ---- lateness histogram (notify.c) through the device ---- */

static void test_lateness_histogram_counts_every_sample(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct vnet_lateness_hist h;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 50), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 50 * US + 7000); /* 7 us late: bucket le=10us */
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 50 * US); /* on time */
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 50 * US + 200 * MS); /* above every bound: only +Inf */
	vnet_queue_lateness(vnet_dev_queue(td->dev, TXQ), &h);
	assert_int_equal(h.count, 3);
	assert_int_equal(h.sum_ns, 7000 + 200 * MS);
	assert_int_equal(vnet_lateness_bounds_us[0], 5);
	assert_int_equal(h.cumulative[0], 1); /* <= 5 us: the on-time one */
	assert_int_equal(h.cumulative[1], 2); /* <= 10 us */
	assert_int_equal(h.cumulative[VNET_LATENESS_BUCKETS - 1], 2);
	td_free(td);
}

/* ---- exposition text ---- */

static struct stats_queue sample_queue(unsigned index, const char *kind)
{
	struct stats_queue q;

	memset(&q, 0, sizeof(q));
	q.index = index;
	q.kind = kind;
	q.enabled = q.started = true;
	q.packets = 1000 + index;
	q.bytes = 64000;
	q.notifications = 10;
	q.suppressed = 3;
	q.held = 990;
	q.timer = 9;
	q.max_packets = 32;
	q.max_usecs = 64;
	q.set_by = "guest";
	q.early_idle = 1;
	q.early_ring = 2;
	q.early_bytes = 4;
	q.early = 7;
	q.adaptive = index == 1;
	q.adaptive_level = index == 1 ? 3 : 0;
	q.adaptive_changes = 11;
	q.lateness.cumulative[0] = 1;
	for (unsigned b = 1; b < VNET_LATENESS_BUCKETS; b++)
		q.lateness.cumulative[b] = 4;
	q.lateness.count = 5;
	q.lateness.sum_ns = 1500000123;
	return q;
}

static char *render(void)
{
	static struct stats_queue queues[2];
	struct metrics_port_view v;
	struct textbuf tb = {0};

	queues[0] = sample_queue(0, "rx");
	queues[1] = sample_queue(1, "tx");
	memset(&v, 0, sizeof(v));
	v.port.name = "p0";
	v.port.backend = "tap";
	v.port.tap = "tap0";
	v.port.socket = "/run/a \"b\"\\c\n.sock";
	v.port.connected = true;
	v.port.connections = 2;
	v.port.nqueues = 2;
	v.port.stall_guard = true;
	v.queues = queues;
	metrics_format(&tb, &v, 1);
	assert_false(tb.oom);
	return tb.p;
}

static void assert_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n'))
			return;
		p++;
	}
	fail_msg("line not found: %s", line);
}

static void test_exposition_lines(void **state)
{
	char *t = render();

	(void)state;
	assert_line(t, "# TYPE vnetd_queue_packets_total counter");
	assert_line(t, "vnetd_queue_packets_total{port=\"p0\",queue=\"1\",kind=\"tx\"} 1001");
	assert_line(
	    t, "vnetd_queue_notifications_suppressed_total{port=\"p0\",queue=\"0\",kind=\"rx\"} 3");
	assert_line(t,
		    "vnetd_queue_completions_held_total{port=\"p0\",queue=\"0\",kind=\"rx\"} 990");
	assert_line(t,
		    "vnetd_queue_notifications_timer_total{port=\"p0\",queue=\"0\",kind=\"rx\"} 9");
	assert_line(t,
		    "vnetd_queue_notifications_early_total{port=\"p0\",queue=\"0\",kind=\"rx\"} 7");
	assert_line(t, "vnetd_queue_notifications_early_idle_total{port=\"p0\",queue=\"0\","
		       "kind=\"rx\"} 1");
	assert_line(t, "vnetd_queue_notifications_early_ring_total{port=\"p0\",queue=\"0\","
		       "kind=\"rx\"} 2");
	assert_line(t, "vnetd_queue_notifications_early_bytes_total{port=\"p0\",queue=\"0\","
		       "kind=\"rx\"} 4");
	assert_line(t, "vnetd_queue_coalesce_adaptive{port=\"p0\",queue=\"1\",kind=\"tx\"} 1");
	assert_line(t, "vnetd_queue_coalesce_adaptive_level{port=\"p0\",queue=\"1\",kind=\"tx\"} 3");
	assert_line(t, "vnetd_queue_coalesce_adaptive_changes_total{port=\"p0\",queue=\"0\","
		       "kind=\"rx\"} 11");
	assert_line(t, "vnetd_port_stall_guard{port=\"p0\"} 1");
	assert_line(t, "vnetd_port_frontend_connected{port=\"p0\"} 1");
	assert_line(t, "vnetd_port_connections_total{port=\"p0\"} 2");
	assert_line(t, "vnetd_port_worker{port=\"p0\"} 0");
	/* Label values escape backslash, quote and newline. */
	assert_line(t, "vnetd_port_info{port=\"p0\",backend=\"tap\",tap=\"tap0\","
		       "socket=\"/run/a \\\"b\\\"\\\\c\\n.sock\",segment=\"\"} 1");
	assert_line(t, "vnetd_queue_coalesce_max_packets{port=\"p0\",queue=\"0\",kind=\"rx\"} 32");
	assert_line(
	    t,
	    "vnetd_queue_coalesce_max_delay_seconds{port=\"p0\",queue=\"0\",kind=\"rx\"} 0.000064");
	assert_line(
	    t, "vnetd_queue_coalesce_info{port=\"p0\",queue=\"1\",kind=\"tx\",set_by=\"guest\"} 1");
	assert_line(t, "# TYPE vnetd_queue_notification_lateness_seconds histogram");
	assert_line(t, "vnetd_queue_notification_lateness_seconds_bucket{port=\"p0\",queue=\"0\","
		       "kind=\"rx\",le=\"0.000005\"} 1");
	assert_line(t, "vnetd_queue_notification_lateness_seconds_bucket{port=\"p0\",queue=\"0\","
		       "kind=\"rx\",le=\"0.1\"} 4");
	assert_line(t, "vnetd_queue_notification_lateness_seconds_bucket{port=\"p0\",queue=\"0\","
		       "kind=\"rx\",le=\"+Inf\"} 5");
	assert_line(t, "vnetd_queue_notification_lateness_seconds_sum{port=\"p0\",queue=\"0\",kind="
		       "\"rx\"} 1.500000123");
	assert_line(t, "vnetd_queue_notification_lateness_seconds_count{port=\"p0\",queue=\"0\","
		       "kind=\"rx\"} 5");
	free(t);
}

/* A switch port: its switch counters and FDB limits; a tap port has none of those samples. */
static void test_exposition_switch_port(void **state)
{
	struct metrics_port_view v[3];
	struct textbuf tb = {0};

	(void)state;
	memset(v, 0, sizeof(v));
	v[0].port.name = "p0";
	v[0].port.backend = "tap";
	v[0].port.tap = "tap0";
	v[0].port.socket = "/run/a.sock";
	v[1].port.name = "p1";
	v[1].port.backend = "switch";
	v[1].port.socket = "/run/b.sock";
	v[1].port.is_switch = true;
	v[1].port.sw = (struct switch_port_counters){
	    .cache_misses = 5, .macs = 256, .max_macs = 256,
	    .learn_rate = 100, .mac_limit_hits = 12, .learn_rate_hits = 3400, .arp_nd_spoofed = 7};
	v[1].port.segment = "default";
	/* p2: an access port (vlan=10) of segment "ten\"a" (label values escaped). */
	v[2].port.name = "p2";
	v[2].port.backend = "switch";
	v[2].port.socket = "/run/c.sock";
	v[2].port.is_switch = true;
	v[2].port.segment = "ten\"a";
	v[2].port.vlan = 10;
	v[2].port.sw.macs = 1;
	metrics_format(&tb, v, 3);
	assert_false(tb.oom);
	assert_line(tb.p, "# TYPE vnetd_switch_mac_limit_total counter");
	assert_line(tb.p, "vnetd_switch_mac_limit_total{port=\"p1\",segment=\"default\"} 12");
	assert_line(tb.p, "# TYPE vnetd_switch_learn_rate_limited_total counter");
	assert_line(tb.p,
		    "vnetd_switch_learn_rate_limited_total{port=\"p1\",segment=\"default\"} 3400");
	assert_line(tb.p, "# TYPE vnetd_switch_macs gauge");
	assert_line(tb.p, "vnetd_switch_macs{port=\"p1\",segment=\"default\"} 256");
	assert_line(tb.p, "vnetd_switch_max_macs{port=\"p1\",segment=\"default\"} 256");
	assert_line(tb.p, "vnetd_switch_learn_rate{port=\"p1\",segment=\"default\"} 100");
	assert_line(tb.p, "# TYPE vnetd_switch_arp_nd_spoofed_total counter");
	assert_line(tb.p, "vnetd_switch_arp_nd_spoofed_total{port=\"p1\",segment=\"default\"} 7");
	assert_line(tb.p, "vnetd_switch_macs{port=\"p2\",segment=\"ten\\\"a\",vlan=\"10\"} 1");
	assert_null(strstr(tb.p, "vnetd_switch_macs{port=\"p0\""));
	/* The port's info: its segment (and VLAN) too, empty for a tap. */
	assert_line(tb.p, "vnetd_port_info{port=\"p0\",backend=\"tap\",tap=\"tap0\","
			  "socket=\"/run/a.sock\",segment=\"\"} 1");
	assert_line(tb.p, "vnetd_port_info{port=\"p1\",backend=\"switch\",tap=\"\","
			  "socket=\"/run/b.sock\",segment=\"default\"} 1");
	assert_line(tb.p, "vnetd_port_info{port=\"p2\",backend=\"switch\",tap=\"\","
			  "socket=\"/run/c.sock\",segment=\"ten\\\"a\",vlan=\"10\"} 1");
	free(tb.p);
}

/* A multi-queue tap with RSS: packets per tap queue fd, RSS steering and the table's weights. */
static void test_exposition_mq_tap_and_rss(void **state)
{
	struct metrics_port_view v[2];
	struct textbuf tb = {0};

	(void)state;
	memset(v, 0, sizeof(v));
	v[0].port.name = "p0";
	v[0].port.backend = "tap";
	v[0].port.tap = "vtap0";
	v[0].port.socket = "/run/a.sock";
	v[0].port.tap_queues = 2;
	v[0].port.tapq[0] = (struct tap_queue_stats){.rx_packets = 660, .tx_packets = 227};
	v[0].port.tapq[1] = (struct tap_queue_stats){.rx_packets = 620, .tx_packets = 182};
	v[0].port.rss.rss = v[0].port.rss.steering = true;
	v[0].port.rss.cfg.table_len = 128;
	for (unsigned i = 0; i < 128; i++)
		v[0].port.rss.cfg.table[i] = i % 4 != 0; /* weight 1 3 */
	/* p1: single-queue tap, no RSS: none of those samples. */
	v[1].port.name = "p1";
	v[1].port.backend = "tap";
	v[1].port.tap = "tap1";
	v[1].port.socket = "/run/b.sock";
	metrics_format(&tb, v, 2);
	assert_false(tb.oom);
	assert_line(tb.p, "# TYPE vnetd_tap_queue_packets_total counter");
	assert_line(tb.p, "vnetd_tap_queue_packets_total{port=\"p0\",queue=\"0\",dir=\"rx\"} 660");
	assert_line(tb.p, "vnetd_tap_queue_packets_total{port=\"p0\",queue=\"0\",dir=\"tx\"} 227");
	assert_line(tb.p, "vnetd_tap_queue_packets_total{port=\"p0\",queue=\"1\",dir=\"rx\"} 620");
	assert_line(tb.p, "vnetd_tap_queue_packets_total{port=\"p0\",queue=\"1\",dir=\"tx\"} 182");
	assert_line(tb.p, "# TYPE vnetd_port_rss_steering gauge");
	assert_line(tb.p, "vnetd_port_rss_steering{port=\"p0\"} 1");
	assert_line(tb.p, "vnetd_port_rss_table_entries{port=\"p0\",queue=\"0\"} 32");
	assert_line(tb.p, "vnetd_port_rss_table_entries{port=\"p0\",queue=\"1\"} 96");
	assert_null(strstr(tb.p, "vnetd_tap_queue_packets_total{port=\"p1\""));
	assert_null(strstr(tb.p, "vnetd_port_rss_steering{port=\"p1\""));
	free(tb.p);
}

/* Every sample line belongs to the family of the last # TYPE line, and each family is typed once.
 */
static void test_exposition_structure(void **state)
{
	char *t = render(), *line, *save = NULL, family[128] = "", seen[64][128];
	unsigned nseen = 0, samples = 0;

	(void)state;
	assert_true(t[strlen(t) - 1] == '\n');
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%127s", family), 1);
			for (unsigned i = 0; i < nseen; i++)
				assert_string_not_equal(seen[i], family);
			assert_true(nseen < 64);
			strcpy(seen[nseen++], family);
			continue;
		}
		if (line[0] == '#')
			continue;
		assert_int_equal(strncmp(line, family, strlen(family)), 0);
		assert_non_null(strchr(line, '{'));
		assert_non_null(strstr(line, "} "));
		samples++;
	}
	assert_true(nseen >= 20);
	assert_true(samples > 50);
	free(t);
}

static void test_textbuf_grows(void **state)
{
	struct textbuf tb = {0};

	(void)state;
	for (int i = 0; i < 10000; i++)
		tb_printf(&tb, "%05d,", i);
	tb_puts(&tb, "end");
	assert_false(tb.oom);
	assert_int_equal(tb.len, 60003);
	assert_memory_equal(tb.p + 59994, "09999,end", 10);
	tb_free(&tb);
	assert_null(tb.p);
}

/* ---- HTTP request and address rules (metrics.c) ---- */

static int status_of(const char *req, bool *head)
{
	return metrics_http_status(req, strlen(req), head);
}

static void test_http_status(void **state)
{
	bool head;
	char *big;

	(void)state;
	assert_int_equal(status_of("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &head), 200);
	assert_false(head);
	assert_int_equal(status_of("HEAD /metrics HTTP/1.0\r\n\r\n", &head), 200);
	assert_true(head);
	assert_int_equal(status_of("GET /metrics?x=1 HTTP/1.1\n\n", &head), 200);
	assert_int_equal(status_of("GET /metrics HTTP/1.1\r\nHost: x\r\n", &head), 0); /* more */
	assert_int_equal(status_of("GET /", &head), 0);
	assert_int_equal(status_of("GET /metricsx HTTP/1.1\r\n\r\n", &head), 404);
	assert_int_equal(status_of("GET / HTTP/1.1\r\n\r\n", &head), 404);
	assert_int_equal(status_of("POST /metrics HTTP/1.1\r\n\r\n", &head), 405);
	assert_int_equal(status_of("GET /metrics HTTP/2.0\r\n\r\n", &head), 400);
	assert_int_equal(status_of("GET /metrics\r\n\r\n", &head), 400);
	assert_int_equal(status_of("GET  HTTP/1.1\r\n\r\n", &head), 400);
	assert_int_equal(status_of("\r\n\r\n", &head), 400);
	assert_int_equal(status_of("\n\n", &head), 400);
	big = malloc(METRICS_MAX_REQUEST);
	memset(big, 'a', METRICS_MAX_REQUEST);
	assert_int_equal(metrics_http_status(big, METRICS_MAX_REQUEST - 1, &head), 0);
	assert_int_equal(metrics_http_status(big, METRICS_MAX_REQUEST, &head), 431);
	free(big);
}

static void test_parse_addr(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;

	(void)state;
	assert_int_equal(listen_addr_parse("127.0.0.1:9465", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9465);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(listen_addr_parse("[::1]:0", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(listen_addr_parse("0.0.0.0:65535", &ss, &len), 0);
	assert_int_equal(listen_addr_parse("127.0.0.1:65536", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("127.0.0.1:", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("127.0.0.1:-1", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("127.0.0.1:9x", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("localhost:9465", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("::1:9465", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("[::1:9465", &ss, &len), -1);
	assert_int_equal(listen_addr_parse(":9465", &ss, &len), -1);
	assert_int_equal(listen_addr_parse("9465", &ss, &len), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lateness_histogram_counts_every_sample),
	    cmocka_unit_test(test_exposition_lines),
	    cmocka_unit_test(test_exposition_switch_port),
	    cmocka_unit_test(test_exposition_mq_tap_and_rss),
	    cmocka_unit_test(test_exposition_structure),
	    cmocka_unit_test(test_textbuf_grows),
	    cmocka_unit_test(test_http_status),
	    cmocka_unit_test(test_parse_addr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
