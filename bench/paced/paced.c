/* SPDX-License-Identifier: MIT */
/* paced.c - a paced source and sink over two vhost-user ports: open loop, flood, closed loop, idle; JSON out. */
/*
 * The two ports are two guests of one backend (vnetd's switch, DPDK's vhost PMD in io
 * forwarding, OVS-DPDK with dpdkvhostuserclient ports): this program is both guests' virtio-net
 * driver, one thread busy on its own CPU (--cpu). Every frame carries a timestamp and a
 * sequence number; see usage() for the modes and bench/paced/README.md for the method, its cost
 * and its accuracy. Used by bench/efficiency.py (make bench-efficiency).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cpu_distance.h"
#include "loops.h"

static struct ctx C;
/* --mode cpu-distance: its two CPUs (--cpu, --peer-cpu) and seconds between samples */
static int dist_cpu[2] = {0, 1};
static double dist_interval_s = 0.5;
static unsigned dist_rounds = 2000;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: paced --mode open|flood|closed|idle --port PATH --port PATH [options]\n"
		"       paced --mode syscall-cost\n"
		"       paced --mode cpu-distance [--cpu A] [--peer-cpu B] [--duration S] [--interval S]\n"
		"                                 [--rounds N]\n"
		"  open      frames at --rate per second (both ports together), one by one on schedule,\n"
		"            port 0 -> port 1 (--both: from each port in turn); one-way latency\n"
		"  flood     as fast as the TX ring takes them (up to --burst per pass): the max rate\n"
		"  closed    --inflight frames of each port circulate: each port returns the other's\n"
		"            frames as they come; round-trip latency\n"
		"  idle      connect, send nothing: what the watched processes spend meanwhile\n"
		"  syscall-cost   the host's price of a system call (JSON)\n"
		"  cpu-distance   a cache line's round trip between CPUs A and B (default 0 and 1),\n"
		"            sampled every --interval (default 0.5 s) for --duration: where the\n"
		"            hypervisor placed them now (JSON lines); --rounds round trips per\n"
		"            sample (default 2000, at most 20000); --duration default 5 s\n"
		"options:\n"
		"  --server           listen on each PATH and accept the backend (OVS's\n"
		"                     dpdkvhostuserclient ports); default: connect to it\n"
		"  --size B           frame bytes without FCS, 60..9000 (default 64)\n"
		"  --rate PPS         open loop's frames per second (default 100000)\n"
		"  --inflight N       closed loop's frames per port (default 1)\n"
		"  --burst N          most frames reaped or posted per ring per pass (default 32)\n"
		"  --both             open/flood: both ports send\n"
		"  --warmup S --duration S --drain S   phases, seconds (default 1, 5, 0.2)\n"
		"  --queue-size N     ring entries, power of two (default 256)\n"
		"  --no-event-idx     do not take VIRTIO_RING_F_EVENT_IDX (kicks by NO_NOTIFY)\n"
		"  --rx-irq on|off    keep RX calls enabled (a NAPI guest re-arming; default on)\n"
		"                     or suppressed (a polling guest, as DPDK virtio-user)\n"
		"  --cpu N            pin to CPU N (default: as started)\n"
		"  --watch PID        measure this process's CPU and wake-ups over the window\n"
		"                     (repeatable, up to %d)\n"
		"  --timeout S        connection and replies (default 30)\n", MAX_WATCH);
}

static double num_arg(const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || v < lo || v > hi) {
		fprintf(stderr, "paced: %s: %s is not in %g..%g\n", opt, s, lo, hi);
		exit(2);
	}
	return v;
}

static void on_signal(int sig)
{
	(void)sig;
	paced_stop = 1;
}

static double cores(uint64_t dticks, uint64_t dt_ns)
{
	return dt_ns ? (double)dticks / (double)clk_tck() / ((double)dt_ns / 1e9) : 0;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void print_watch(FILE *f, const struct ctx *c, uint64_t dt, uint64_t pkts)
{
	fprintf(f, "\"watch\": [");
	for (int i = 0; i < c->nwatch; i++) {
		const struct proc_snap *a = &c->s0.proc[i], *b = &c->s1.proc[i];
		struct proc_delta d;

		proc_diff(a, b, &d);
		fprintf(f, "%s{\"pid\": %d, \"present\": %s, \"threads\": %d, \"cores\": %.4f, "
			"\"cores_schedstat\": %.4f, \"wakeups\": %llu, \"wakeups_per_packet\": %.4f, "
			"\"preempted\": %llu}",
			i ? ", " : "", (int)c->watch[i], a->ok && b->ok ? "true" : "false", b->ntasks,
			cores(d.ticks, dt), dt ? (double)d.run_ns / (double)dt : 0,
			(unsigned long long)d.vcsw, ratio(d.vcsw, pkts), (unsigned long long)d.ivcsw);
	}
	fprintf(f, "], ");
}

static const char *mode_name(enum mode m)
{
	return m == MODE_OPEN ? "open" : m == MODE_FLOOD ? "flood" : m == MODE_CLOSED ? "closed"
								       : "idle";
}

static void print_json(const struct ctx *c, const struct vu_opts *o)
{
	const struct snap *a = &c->s0, *b = &c->s1;
	uint64_t dt = b->t - a->t, win = c->w1 - c->w0, tx = b->tx_frames - a->tx_frames;
	uint64_t rx = b->rx_frames - a->rx_frames, kicks = b->kicks - a->kicks;
	uint64_t calls = b->calls - a->calls, took = c->sent + c->ring_full;
	double drv = (double)(b->ru.ru_utime.tv_sec - a->ru.ru_utime.tv_sec +
			      b->ru.ru_stime.tv_sec - a->ru.ru_stime.tv_sec) +
		     (double)(b->ru.ru_utime.tv_usec - a->ru.ru_utime.tv_usec +
			      b->ru.ru_stime.tv_usec - a->ru.ru_stime.tv_usec) / 1e6;
	double mach = b->mach.total > a->mach.total
		? (double)(b->mach.busy - a->mach.busy) / (double)clk_tck() / ((double)dt / 1e9) : 0;
	/* the packets that wake-ups and CPU are per: frames the backend moved in the window */
	uint64_t pkts = c->mode == MODE_CLOSED ? rx : tx;

	printf("{\"mode\": \"%s\", \"size\": %u, \"rate_pps\": %llu, \"inflight\": %u, "
	       "\"burst\": %u, \"both\": %s, \"queue_size\": %u, \"event_idx\": %s, "
	       "\"rx_irq\": %s, \"server\": %s, \"window_s\": %.4f, \"snap_dt_s\": %.4f, ",
	       mode_name(c->mode), c->size, (unsigned long long)c->rate, c->inflight, c->burst,
	       c->both ? "true" : "false", o->num, c->ports[0].dev.rx.event_idx ? "true" : "false",
	       c->ports[0].dev.rx.irq ? "true" : "false", o->server ? "true" : "false",
	       (double)win / 1e9, (double)dt / 1e9);
	printf("\"offered\": %llu, \"sent\": %llu, \"ring_full\": %llu, \"skipped\": %llu, "
	       "\"batched\": %llu, \"received\": %llu, \"completions\": %llu, \"bad\": %llu, ",
	       (unsigned long long)c->offered, (unsigned long long)c->sent,
	       (unsigned long long)c->ring_full, (unsigned long long)c->skipped,
	       (unsigned long long)c->batched,
	       (unsigned long long)c->received, (unsigned long long)c->completions,
	       (unsigned long long)c->bad);
	printf("\"offered_pps\": %.1f, \"achieved_pps\": %.1f, \"loss\": %.6f, ",
	       win ? (double)c->offered / ((double)win / 1e9) : 0,
	       win ? (double)c->received / ((double)win / 1e9) : 0,
	       c->mode == MODE_CLOSED || !took ? 0 : 1.0 - ratio(c->received, took));
	lat_json(stdout, c->mode == MODE_CLOSED ? "rtt_ns" : "latency_ns", &c->lat);
	printf(", ");
	lat_json(stdout, "send_lag_ns", &c->lag);
	printf(", \"tx_frames\": %llu, \"rx_frames\": %llu, \"kicks\": %llu, \"calls\": %llu, "
	       "\"kicks_per_packet\": %.4f, \"calls_per_packet\": %.4f, ",
	       (unsigned long long)tx, (unsigned long long)rx, (unsigned long long)kicks,
	       (unsigned long long)calls, ratio(kicks, tx), ratio(calls, rx));
	print_watch(stdout, c, dt, pkts);
	printf("\"driver\": {\"cores\": %.4f, \"passes\": %llu, \"idle_passes\": %llu}, "
	       "\"machine_busy_cores\": %.4f, \"interrupted\": %s}\n",
	       dt ? drv / ((double)dt / 1e9) : 0, (unsigned long long)c->passes,
	       (unsigned long long)c->idle_passes, mach, paced_stop ? "true" : "false");
}

static void parse(int argc, char **argv, struct vu_opts *o, const char **paths, int *npaths,
		  const char **mode)
{
	static const struct option opts[] = {
		{"mode", 1, 0, 'm'}, {"port", 1, 0, 'p'}, {"server", 0, 0, 'S'},
		{"size", 1, 0, 's'}, {"rate", 1, 0, 'r'}, {"inflight", 1, 0, 'n'},
		{"burst", 1, 0, 'b'}, {"both", 0, 0, 'B'}, {"warmup", 1, 0, 'w'},
		{"duration", 1, 0, 'd'}, {"drain", 1, 0, 'D'}, {"queue-size", 1, 0, 'q'},
		{"no-event-idx", 0, 0, 'E'}, {"rx-irq", 1, 0, 'i'}, {"cpu", 1, 0, 'c'},
		{"watch", 1, 0, 'W'}, {"timeout", 1, 0, 't'}, {"peer-cpu", 1, 0, 'P'},
		{"interval", 1, 0, 'I'}, {"rounds", 1, 0, 'R'}, {"help", 0, 0, 'h'},
		{0, 0, 0, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'm': *mode = optarg; break;
		case 'p':
			if (*npaths == 2) {
				fprintf(stderr, "paced: two --port exactly\n");
				exit(2);
			}
			paths[(*npaths)++] = optarg;
			break;
		case 'S': o->server = true; break;
		case 's': C.size = (uint32_t)num_arg("--size", optarg, FRAME_MIN, 9000); break;
		case 'r': C.rate = (uint64_t)num_arg("--rate", optarg, 0, 1e9); break;
		case 'n': C.inflight = (uint32_t)num_arg("--inflight", optarg, 1, 4096); break;
		case 'b': C.burst = (uint32_t)num_arg("--burst", optarg, 1, 1024); break;
		case 'B': C.both = true; break;
		case 'w': C.warmup_ns = (uint64_t)(num_arg("--warmup", optarg, 0, 3600) * 1e9); break;
		case 'd': C.window_ns = (uint64_t)(num_arg("--duration", optarg, 0.01, 3600) * 1e9); break;
		case 'D': C.drain_ns = (uint64_t)(num_arg("--drain", optarg, 0, 60) * 1e9); break;
		case 'q': o->num = (uint16_t)num_arg("--queue-size", optarg, 2, 32768); break;
		case 'E': o->event_idx = false; break;
		case 'i':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "paced: --rx-irq on or off\n");
				exit(2);
			}
			C.ports[0].dev.rx.irq = !strcmp(optarg, "on");
			break;
		case 'c': {
			cpu_set_t set;

			dist_cpu[0] = (int)num_arg("--cpu", optarg, 0, CPU_SETSIZE - 1);
			CPU_ZERO(&set);
			CPU_SET(dist_cpu[0], &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				perror("paced: sched_setaffinity");
			break;
		}
		case 'W':
			if (C.nwatch == MAX_WATCH) {
				fprintf(stderr, "paced: at most %d --watch\n", MAX_WATCH);
				exit(2);
			}
			C.watch[C.nwatch++] = (pid_t)num_arg("--watch", optarg, 1, 1 << 30);
			break;
		case 'P': dist_cpu[1] = (int)num_arg("--peer-cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case 'I': dist_interval_s = num_arg("--interval", optarg, 0.01, 60); break;
		case 'R': dist_rounds = (unsigned)num_arg("--rounds", optarg, 1, 20000); break;
		case 't': o->timeout_ms = (int)(num_arg("--timeout", optarg, 0.1, 3600) * 1000); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc || (o->num & (o->num - 1))) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct vu_opts o = {.event_idx = true, .num = 256, .timeout_ms = 30000};
	const char *paths[2], *mode = "";
	int npaths = 0, lfd[2] = {-1, -1}, rc = 1;
	bool irq;

	C.size = 64;
	C.rate = 100000;
	C.inflight = 1;
	C.burst = 32;
	C.warmup_ns = 1000000000ull;
	C.window_ns = 5000000000ull;
	C.drain_ns = 200000000ull;
	C.ports[0].dev.rx.irq = true;
	parse(argc, argv, &o, paths, &npaths, &mode);
	irq = C.ports[0].dev.rx.irq;
	if (!strcmp(mode, "syscall-cost")) {
		syscall_cost_json(stdout, 200000);
		return 0;
	}
	if (!strcmp(mode, "cpu-distance")) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		return cpu_distance_json(stdout, dist_cpu, (double)C.window_ns / 1e9,
					 dist_interval_s, dist_rounds) ? 1 : 0;
	}
	C.mode = !strcmp(mode, "open") ? MODE_OPEN : !strcmp(mode, "flood") ? MODE_FLOOD
		: !strcmp(mode, "closed") ? MODE_CLOSED : !strcmp(mode, "idle") ? MODE_IDLE : 99;
	if ((int)C.mode == 99 || npaths != 2) {
		usage(stderr);
		return 2;
	}
	o.buf_size = (VNET_HDR_LEN + C.size + 63) & ~63u;
	if (o.buf_size < 2048)
		o.buf_size = 2048;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	for (int i = 0; i < 2 && o.server; i++) {
		lfd[i] = vu_listen(paths[i]);
		if (lfd[i] < 0) {
			fprintf(stderr, "paced: listen on %s: %s\n", paths[i], strerror(-lfd[i]));
			goto out;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct port *p = &C.ports[i];

		p->idx = (uint8_t)i;
		if (vu_open(&p->dev, paths[i], lfd[i], &o))
			goto out;
		vq_irq_set(&p->dev.rx, irq);
		port_fill_templates(p, C.size);
		p->backlog = calloc(2u * C.inflight + o.num, sizeof(*p->backlog));
		if (!p->backlog)
			goto out;
	}
	if (run_loop(&C, (uint64_t)o.timeout_ms * 1000000ull)) {
		rc = 3;
		goto out;
	}
	print_json(&C, &o);
	rc = paced_stop ? 130 : 0;
out:
	for (int i = 0; i < 2; i++) {
		vu_close(&C.ports[i].dev);
		free(C.ports[i].backlog);
		if (lfd[i] >= 0) {
			close(lfd[i]);
			unlink(paths[i]);
		}
	}
	return rc;
}
