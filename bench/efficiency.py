#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-efficiency: vnetd against polling peers at every load (CPU, loss, latency), and at short queues."""

# One paced driver (bench/paced/paced: two virtio-net guests' drivers in one thread, busy on CPU
# 1, frames stamped with CLOCK_MONOTONIC and a sequence number) drives each backend's two
# vhost-user ports; the backend runs on CPU 0: vnetd's switch (defaults; --poll-us N), OVS-DPDK
# 3.1 (NORMAL; with and without other_config:pmd-maxsleep) and DPDK's vhost PMD (testpmd io
# forwarding) (bench/lib/eff_backends.py). In one run:
#   1. vnetd's own maximum rate, per frame size: the driver floods port 0 -> port 1 as fast as
#      the TX ring takes frames (median of --calib-reps runs);
#   2. per rep, per frame size, each configuration started afresh (the order rotating by rep):
#      idle (ports connected, no traffic), open loops at --loads of that maximum (the same
#      absolute rates for every configuration; one frame at a time on schedule, one-way latency
#      p50/p99/p99.9, loss, backend cores from /proc/PID/stat, kicks, calls and the backend's
#      wake-ups per packet), its own flood; then closed loops of --inflight frames per port
#      (each port returns the other's frames: round-trip latency, rate, cores).
# Medians over the reps with [min..max]; a comparison whose ranges overlap is "inconclusive".
# Writes results/efficiency-<date>.json, results/efficiency-latest.{json,md,png}.

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time

from bench.lib import common
from bench.lib import cpu_place
from bench.lib.common import SKIP, TOP
from bench.lib import dp_procs as P
from bench.lib.dp_procs import BenchError, JANITOR, log
from bench.lib import eff_backends as EB
from bench.lib import eff_report as ER

BUILD = os.path.abspath(os.environ.get('VNETD_BUILD', os.path.join(TOP, 'build')))
DEFAULT_CONFIGS = 'vnetd,vnetd-poll0,vnetd-poll50,ovs,ovs-sleep500,dpdk'
QUIET_CORES = 0.25


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--configs', default=DEFAULT_CONFIGS,
                    help='what to measure, comma-separated (default %s): vnetd (its defaults), '
                         'vnetd-pollN (--poll-us N; vnetd-pollauto), NAME=ARGS (a vnetd with '
                         'these options), ovs, ovs-sleepN (pmd-maxsleep=N us), dpdk; the first '
                         'vnetd one is "vnetd" of the targets' % DEFAULT_CONFIGS)
    ap.add_argument('--sizes', default='64,1500', help='frame sizes, bytes (default 64,1500)')
    ap.add_argument('--loads', default='1,10,25,50,90',
                    help='open-loop rates, %% of vnetd\'s maximum (default 1,10,25,50,90)')
    ap.add_argument('--inflight', default='1,8,32,128',
                    help='closed loops: frames in flight per port (default 1,8,32,128)')
    ap.add_argument('--reps', type=int, help='interleaved repetitions (default 3)')
    ap.add_argument('--duration', type=float, help='measured seconds per run (default 3)')
    ap.add_argument('--warmup', type=float, help='seconds of traffic before it (default 1)')
    ap.add_argument('--calib-reps', type=int, help='flood runs for vnetd\'s maximum (default 3)')
    ap.add_argument('--quiet-wait', type=float,
                    help='before each configuration, wait up to this long for other work to '
                         'drop below %.2f cores (default 20)' % QUIET_CORES)
    ap.add_argument('--retries', type=int, default=2,
                    help='re-measure a run that other work disturbed (>= %.2f cores) or during '
                         'which the hypervisor kept the two CPUs apart (bench/lib/cpu_place.py) '
                         'up to this many times (default 2)' % QUIET_CORES)
    ap.add_argument('--rx-irq', choices=('on', 'off'), default='on',
                    help='the driver keeps RX calls enabled, as a guest re-arming its interrupt '
                         '(default), or suppresses them, as a polling guest (DPDK virtio-user)')
    ap.add_argument('--no-install', dest='install', action='store_false',
                    help='do not apt-get install openvswitch-switch-dpdk when it is missing '
                         '(its rows are then left out)')
    ap.add_argument('--driver-check', action='store_true',
                    help='only the driver\'s own accuracy and cost: open loops at --check-rates '
                         'and a flood against DPDK\'s vhost PMD (a peer that polls), offered '
                         'against achieved and how late frames left; a table on stdout, no '
                         'results files (bench/paced/README.md)')
    ap.add_argument('--check-rates', default='10000,100000,1000000,2000000,4000000,8000000',
                    help='--driver-check: frames per second')
    ap.add_argument('--quick', action='store_true',
                    help='smoke run: 1 rep, 1 s runs, 0.3 s warm-up, 1 calibration run, no '
                         'waiting for quiet (options given explicitly still apply)')
    ap.add_argument('--report', metavar='JSON',
                    help='measure nothing: summarize a results file of this script again (its '
                         'summary, targets, tables and chart rewritten next to it)')
    ap.add_argument('--out', help='JSON output (default results/efficiency-<date>.json); the '
                    'efficiency-latest.* files go next to it')
    ap.set_defaults(install=True)
    args = ap.parse_args()
    defaults = dict(reps=3, duration=3, warmup=1, calib_reps=3, quiet_wait=20)
    if args.quick:
        defaults.update(reps=1, duration=1, warmup=0.3, calib_reps=1, quiet_wait=0)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    try:
        args.configs = [EB.parse_config(c) for c in args.configs.split(',') if c.strip()]
    except ValueError as e:
        ap.error(str(e))
    names = [c['name'] for c in args.configs]
    if len(set(names)) != len(names):
        ap.error('a configuration named twice')
    if not any(c['kind'] == 'vnetd' for c in args.configs):
        ap.error('no vnetd configuration: its maximum sets the rates')
    args.sizes = [int(x) for x in args.sizes.split(',') if x.strip()]
    args.loads = [float(x) for x in args.loads.split(',') if x.strip()]
    args.inflight = [int(x) for x in args.inflight.split(',') if x.strip()]
    if any(not 60 <= s <= 1514 for s in args.sizes):
        ap.error('--sizes: 60..1514 (the backends\' MTU is 1500)')
    return args


def check_prereqs(args):
    common.require('efficiency', root=True, exes=['dpdk-testpmd', 'taskset', 'stdbuf'],
                   built=[os.path.join(BUILD, e) for e in ('vnetd', 'vnetctl')], status=SKIP,
                   why_root='OVS-DPDK\'s hugepages, /proc of other users\' processes')
    common.have('gnuplot', 'efficiency', 'no chart')
    if any(c['kind'] == 'ovs' for c in args.configs):
        why = EB.ensure_ovs_dpdk(args.install)
        if why:
            log('efficiency: no OVS-DPDK rows: %s' % why)
            args.configs = [c for c in args.configs if c['kind'] != 'ovs']


def provenance():
    src = common.source_of(BUILD)
    with open(os.path.join(BUILD, 'vnetd'), 'rb') as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {'vnetd_build': BUILD, 'vnetd_commit': common.git(src, 'rev-parse', 'HEAD'),
            'vnetd_describe': common.git(src, 'describe', '--always', '--dirty'),
            'vnetd_src_commit': common.git(src, 'log', '-1', '--format=%h %s', '--', 'src'),
            'vnetd_src_dirty': bool(common.git(src, 'status', '--porcelain', '--', 'src')),
            'vnetd_sha256': digest, 'bench_commit': common.git(TOP, 'describe', '--always',
                                                               '--dirty')}



def compact(d):
    """The figures of one driver run that the summary uses (the driver's JSON minus detail)."""
    lat = d.get('rtt_ns') if d['mode'] == 'closed' else d.get('latency_ns')
    w = d['watch'][0] if d.get('watch') else {}
    pkts = d['rx_frames'] if d['mode'] == 'closed' else d['tx_frames']
    be = d.get('backend', {})
    r = {'achieved_pps': d['achieved_pps'], 'offered_pps': d['offered_pps'],
         'loss': d['loss'], 'sent': d['sent'], 'received': d['received'],
         'ring_full': d['ring_full'], 'skipped': d['skipped'], 'bad': d['bad'],
         'batched_share': d['batched'] / d['sent'] if d.get('sent') else None,
         'cores': w.get('cores'), 'cores_schedstat': w.get('cores_schedstat'),
         'wakeups_per_packet': w.get('wakeups_per_packet'), 'backend_wakeups': w.get('wakeups'),
         'kicks_per_packet': d['kicks_per_packet'], 'calls_per_packet': d['calls_per_packet'],
         'driver_cores': d['driver']['cores'], 'machine_cores': d['machine_busy_cores'],
         'window_s': d['window_s'], 'packets': pkts}
    r['others_cores'] = max(0.0, r['machine_cores'] - (r['cores'] or 0) - r['driver_cores'])
    if lat and lat['n']:
        r.update({'lat_n': lat['n'], 'p50_us': lat['p50'] / 1e3, 'p99_us': lat['p99'] / 1e3,
                  'p999_us': lat['p999'] / 1e3, 'max_us': lat['max'] / 1e3,
                  'mean_us': lat['mean'] / 1e3})
    lag = d.get('send_lag_ns')
    if lag and lag['n']:
        r.update({'lag_p50_ns': lag['p50'], 'lag_p99_ns': lag['p99'], 'lag_p999_ns': lag['p999']})
    if r['cores'] and r['achieved_pps']:
        r['mpps_per_core'] = r['achieved_pps'] / 1e6 / r['cores']
    if be:
        n = be.get('tx_packets') or 0
        r['vnetd'] = be
        if n:
            r['vnetd_tx_kicks_per_packet'] = be['tx_kicks'] / n
            r['vnetd_rx_notifications_per_packet'] = be['rx_notifications'] / n
    return r


# Where the hypervisor has the backend's and the driver's CPUs (bench/lib/cpu_place.py): every
# sample of the run so far, and the paced driver that takes them (None: not sampled).
PLACE = {'driver': None, 'seen': []}


def placed_run(args, driver, be, mode, size, rate=None, inflight=None):
    """One driver run (EB.run_driver()) with the CPUs' placement sampled: beside it for closed
    loops and floods (200 round trips per sample, ~10-70 µs each: a few frames' round trips);
    for open loops and idle, 4 samples right before and 4 right after, so that no pause of the
    probe lands in a one-way latency's tail or an idle backend's CPU. (driver JSON, samples)."""
    def run():
        return EB.run_driver(driver, be, mode, size, args.warmup, args.duration, rate=rate,
                             inflight=inflight, rx_irq=args.rx_irq)

    if not PLACE['driver']:
        return run(), None
    if mode in ('closed', 'flood'):
        smp = cpu_place.Sampler(PLACE['driver'], args.warmup + args.duration + 1.0, rounds=200)
        try:
            d = run()
        finally:
            samples = smp.stop()
        d['cpu_probe'] = smp.health()
    else:
        samples = cpu_place.around(PLACE['driver'])[0]
        d = run()
        after, d['cpu_probe'] = cpu_place.around(PLACE['driver'])
        samples += after
    PLACE['seen'] += samples
    return d, samples


def mark_placement(r, samples, d):
    """r's placement against the run's samples so far: r['disturbed'] also when it was far
    (nothing without samples: the probe off)."""
    if samples is None:
        return
    r['cpu_round_trip_ns'] = [round(x, 1) for x in samples]
    r['cpu_probe'] = d.get('cpu_probe')
    cpu_place.mark(r, cpu_place.nearest([], PLACE['seen']), 'disturbed')


def measure(args, driver, be, point, rate, run, retries):
    """One point on be (its driver run, re-measured when other work disturbed it or the
    hypervisor had the two CPUs far apart)."""
    for attempt in range(1 + retries):
        d, samples = placed_run(args, driver, be, point['mode'], point['size'], rate=rate,
                                inflight=point.get('inflight'))
        if point['mode'] != 'idle' and not d['received']:
            raise BenchError('%s: nothing received in the window' % be.tag)
        r = compact(d)
        r['disturbed'] = r['others_cores'] >= QUIET_CORES
        mark_placement(r, samples, d)
        r['attempt'] = attempt
        if not r['disturbed']:
            break
    run.update(r)
    return run


def calibrate(args, driver, wd, tools):
    """vnetd's maximum rate per size: the median of --calib-reps floods (port 0 -> port 1)."""
    cfg = next(c for c in args.configs if c['kind'] == 'vnetd')
    out = {}
    for s in args.sizes:
        common.wait_quiet(args.quiet_wait, QUIET_CORES)
        be = EB.Backend(cfg, wd, tools, 'calibrate/%s/%d' % (cfg['name'], s))
        rates, disturbed = [], []
        try:
            for i in range(args.calib_reps):
                # a disturbed flood would set every rate of the run too low: measured again
                for attempt in range(1 + args.retries + 2):
                    common.wait_quiet(args.quiet_wait if attempt else 0, QUIET_CORES)
                    d, samples = placed_run(args, driver, be, 'flood', s)
                    r = compact(d)
                    r['disturbed'] = r['others_cores'] >= QUIET_CORES
                    mark_placement(r, samples, d)
                    log('calibrate %s %5d B: flood %.3f Mpps (loss %.4f, backend %.2f cores, '
                        'driver %.2f, others %.2f)%s'
                        % (cfg['name'], s, r['achieved_pps'] / 1e6, r['loss'], r['cores'],
                           r['driver_cores'], r['others_cores'],
                           '  DISTURBED (%s)' % r['disturbed_by'] if r['disturbed'] else ''))
                    if not r['disturbed']:
                        rates.append(r['achieved_pps'])
                        break
                    disturbed.append(r['achieved_pps'])
        finally:
            be.close()
        use = sorted(rates or disturbed)
        out[s] = {'max_pps': use[len(use) // 2], 'runs_pps': use, 'disturbed_pps': disturbed,
                  'config': cfg['name'], 'disturbed_only': not rates}
    return out


def points_of(args, size, group, max_pps):
    """The runs of one (size, group) on one configuration, in order."""
    if group == 'closed':
        return [{'mode': 'closed', 'size': size, 'inflight': n, 'key': 'closed/%d' % n}
                for n in args.inflight]
    pts = [{'mode': 'idle', 'size': size, 'key': 'idle'}]
    pts += [{'mode': 'open', 'size': size, 'load': ld, 'rate': max_pps * ld / 100.0,
             'key': 'open/%g' % ld} for ld in args.loads]
    return pts + [{'mode': 'flood', 'size': size, 'key': 'flood'}]


def run_all(args, driver, wd, tools, calib, runs):
    cfgs = args.configs
    groups = [(s, g) for s in args.sizes for g in ('open', 'closed')]
    total = args.reps * len(groups) * len(cfgs)
    k = 0
    for rep in range(args.reps):
        order = cfgs[rep % len(cfgs):] + cfgs[:rep % len(cfgs)]
        for size, group in groups:
            for cfg in order:
                k += 1
                waited, busy = common.wait_quiet(args.quiet_wait, QUIET_CORES)
                log('[%d/%d] rep %d, %d B, %s: %s (waited %.0f s for quiet, others %.2f cores)'
                    % (k, total, rep + 1, size, group, cfg['label'], waited, busy))
                be = None
                try:
                    be = EB.Backend(cfg, wd, tools, '%s/%d/%s' % (cfg['name'], size, group))
                    for pt in points_of(args, size, group, calib[size]['max_pps']):
                        run = {'config': cfg['name'], 'rep': rep, 'size': size,
                               'key': pt['key'], 'mode': pt['mode'], 'load': pt.get('load'),
                               'inflight': pt.get('inflight'), 'rate': pt.get('rate'),
                               'busy_before': busy}
                        try:
                            measure(args, driver, be, pt, pt.get('rate'), run, args.retries)
                            log('    ' + ER.run_line(run))
                        except BenchError as e:
                            run['error'] = str(e)[:2000]
                            log('    %s ERROR %s' % (pt['key'], run['error'][:300]))
                        runs.append(run)
                except BenchError as e:
                    runs.append({'config': cfg['name'], 'rep': rep, 'size': size,
                                 'key': group, 'error': str(e)[:2000]})
                    log('    %s failed to start: %s' % (cfg['name'], str(e)[:500]))
                finally:
                    if be:
                        be.close()


def driver_check(args, driver, wd, tools):
    """The paced driver against DPDK's vhost PMD: offered vs achieved, send lag, flood rate."""
    cfg = EB.parse_config('dpdk')
    rates = [int(x) for x in args.check_rates.split(',') if x.strip()]
    rows = []
    for rep in range(args.reps):
        for s in args.sizes:
            common.wait_quiet(args.quiet_wait, QUIET_CORES)
            be = EB.Backend(cfg, wd, tools, 'driver-check/%d' % s)
            try:
                for rate in rates + [None]:
                    d = EB.run_driver(driver, be, 'open' if rate else 'flood', s, args.warmup,
                                      args.duration, rate=rate, rx_irq=args.rx_irq)
                    r = compact(d)
                    r.update(size=s, rate=rate, rep=rep)
                    rows.append(r)
                    log('%5d B %-9s offered %.4f achieved %.4f Mpps loss %.5f skipped %d '
                        'batched %.3f lag p50/p99/p99.9 %s/%s/%s ns driver %.2f cores, DPDK '
                        '%.2f, others %.2f'
                        % (s, rate or 'flood', r['offered_pps'] / 1e6, r['achieved_pps'] / 1e6,
                           r['loss'], r['skipped'], r['batched_share'] or 0,
                           r.get('lag_p50_ns', '-'),
                           r.get('lag_p99_ns', '-'), r.get('lag_p999_ns', '-'),
                           r['driver_cores'], r['cores'] or 0, r['others_cores']))
            finally:
                be.close()
    return rows


def report_again(path):
    """--report: the summary, targets, tables and chart of a results file, made again."""
    with open(path) as f:
        res = json.load(f)
    args = argparse.Namespace(**res['meta']['args'])
    args.sizes = [int(x) for x in args.sizes]
    ER.write(res['meta'], res.get('info', {}), res['runs'], args, path,
             os.path.dirname(os.path.abspath(path)))


def main():
    args = parse_args()
    if args.report:
        report_again(args.report)
        return
    check_prereqs(args)
    t_start = time.monotonic()
    now = datetime.datetime.now()
    out = args.out or os.path.join(TOP, 'results', 'efficiency-%s.json'
                                   % now.strftime('%Y%m%d-%H%M%S'))
    resdir = os.path.dirname(os.path.abspath(out))
    os.makedirs(resdir, exist_ok=True)

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    wd = tempfile.mkdtemp(prefix='vnetd-efficiency-')
    JANITOR.paths.append(wd)
    tools = {}
    for exe in ('vnetd', 'vnetctl'):       # private copies: the tree may be rebuilt meanwhile
        tools[exe] = os.path.join(wd, exe)
        shutil.copy2(os.path.join(BUILD, exe), tools[exe])
    driver = EB.driver_path(BUILD, wd)
    shutil.copy2(driver, os.path.join(wd, 'paced-run'))
    driver = os.path.join(wd, 'paced-run')
    prov = provenance()
    load0 = common.load_check('efficiency', limit=0.5,
                              note='the benchmark keeps 2 cores busy: others\' work spreads it')
    sc = EB.syscall_cost(driver)
    # at 200 rounds, as beside the runs: one scale
    PLACE['seen'] = cpu_place.seed(driver, log, 'efficiency', rounds=200)
    PLACE['driver'] = driver if PLACE['seen'] else None
    meta = dict(prov, date=now.isoformat(timespec='seconds'), host=platform.node(),
                kernel=platform.release(), cpus=os.cpu_count(), cpu_model=common.cpu_model(),
                syscall_cost=sc, loadavg_start=load0, args={k: v for k, v in vars(args).items()},
                configs=args.configs, clk_tck=P.CLK_TCK)
    log('efficiency: %s, %d CPUs (%s), kernel %s; system call: getppid %.0f ns, eventfd write '
        '%.0f ns, clock_gettime %.0f ns; load %.2f %.2f %.2f; vnetd %s; configurations: %s'
        % (meta['host'], meta['cpus'], meta['cpu_model'], meta['kernel'], sc['getppid_ns'],
           sc['eventfd_write_ns'], sc['clock_gettime_ns'], *load0, prov['vnetd_describe'],
           ', '.join(c['name'] for c in args.configs)))
    runs, info, calib = [], {}, {}
    if args.driver_check:
        try:
            driver_check(args, driver, wd, tools)
        finally:
            JANITOR.clean()
        return
    try:
        calib = calibrate(args, driver, wd, tools)
        run_all(args, driver, wd, tools, calib, runs)
    except KeyboardInterrupt:
        log('efficiency: interrupted; cleaning up')
        info['interrupted'] = True
    except BenchError as e:
        log('efficiency: failed: %s' % e)
        info['error'] = str(e)[:3000]
    finally:
        JANITOR.clean()
    # every run against the whole run's near round trip (each sample once: runs' are in it)
    placement = cpu_place.remark(runs, cpu_place.nearest([], PLACE['seen']), 'disturbed')
    meta.update(loadavg_end=os.getloadavg(), elapsed_s=round(time.monotonic() - t_start, 1),
                calibration=calib, cpu_placement=placement)
    ER.write(meta, info, runs, args, out, resdir)
    if not runs:
        sys.exit(1)


if __name__ == '__main__':
    main()
