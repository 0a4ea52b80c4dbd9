#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-workers: two busy tap ports (--switch: two switch port pairs), --workers 1 vs 2.

Each run: a fresh vnetd in a private network namespace with two tap ports (taps up, no
address: the kernel drops the frames at once, so the work measured is vnetd's — walking the
chains, the writev into the tap — in vnetd's threads). On each port a Python frontend
(tests/kit/vhost_user_client.py) whose TX ring (256 entries, one FRAME-byte frame each to a MAC
nobody has) is kept full by tests/kit/ringspin.c (sleeping --idle-us when it is full, so the
spinners leave CPU to vnetd). For --seconds, frames per second each port
completed (counted by ringspin in guest memory) and vnetd's CPU. Runs alternate 1, 2, 1, 2, ...
(--reps each) so slow drifts of the machine's load hit both alike; reported: the median
aggregate per worker count, and the ratio 2 workers / 1 worker of the medians, with the
machine's busy % during the runs. Note: with two ringspin spinners and two vnetd threads, a
2-core machine is oversubscribed; the ratio there says more about the machine than vnetd.

Outputs: a table; results/workers-<date>.json, results/workers-latest.json and (gnuplot)
results/workers-latest.png. Any vnetd build: VNETD_BUILD=DIR (default build/). Needs root.

--switch: the same for switch ports. Four switch ports, two pairs a -> b and c -> d; no
namespace, no root. Senders a and c: TX rings (--ring, 1024 entries: 256 with a 50 us sleep
would cap a sender below what one switch worker does) kept full by ringspin as above, every
frame unicast to its receiver's MAC (each receiver first sends one broadcast so the switch has
learnt it: no flooding is measured). Receivers b and d: RX rings (--rx-ring 2 KiB buffers) kept
posted by ringspin on the RX queue (its RX mode: it re-posts each buffer vnetd used); the rate
is what each receiver got per second (counted in its used ring), over a --seconds window that
starts 0.5 s after the senders. vnetd keeps switch ports without worker= on one worker
(docs/scale.md, Workers), so with --workers 2 each port gets worker=(its position in the --port
order) mod 2, and the order steers the placement: a, c, b, d puts a, b on worker 0 and c, d on worker 1 ("same": each pair on
one worker, the frames copied directly); a, b, c, d puts a, c on worker 0 and b, d on worker 1
("cross": every frame goes through the cross-worker rings, src/backend/switch/switch_xq.c, both senders on one
worker); a, b, d, c puts a, d on worker 0 and b, c on worker 1 ("cross2": across too, one sender
and one receiver per worker). The workers vnetd reports (stats --json) are recorded with each
run and the run is filed under the placement it really had. Per rep: 1 and 2 workers in each
placement (1, 2, 1, 2, ...); the ratio is the 2-worker median of a placement over the median of
all 1-worker runs. Four spinners and up to two vnetd threads on a 2-core machine: the spinners
compete with vnetd for the cores, and the ratio there says more about the machine than vnetd.
Outputs: results/workers-switch-<date>.json, results/workers-switch-latest.{json,dat,png} (the
tap files are left alone).

--queue-pairs: one switch port's two queue pairs on two workers vs on one (queue-workers=0+1 vs
0+0), driven by DPDK testpmd virtio-user queues=2: bench/lib/workers_qpairs.py says how. --quick:
one rep of 1 s (a smoke test).
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from bench.lib import common
from bench.lib.common import TOP, log, machine_busy
from tests.kit import harness
from tests.kit import fairness as fk
from tests.kit.vhost_user_client import RX_Q, TX_Q
from bench.lib import gnuplot

TAPS = ('vbw0', 'vbw1')
DST = '52:54:00:ee:ee:ee'

# --switch: two pairs, sender -> receiver; the port order per placement (see the docstring).
SW_MACS = {'a': '52:54:00:5a:00:0a', 'b': '52:54:00:5a:00:0b', 'c': '52:54:00:5a:00:0c',
           'd': '52:54:00:5a:00:0d'}
SW_PAIRS = (('a', 'b'), ('c', 'd'))
SW_ORDER = {'same': 'acbd', 'cross': 'abcd', 'cross2': 'abdc'}
SW_WARMUP = 0.5


def one_run(exe, ns, wd, workers, seconds, frame, idle_us):
    rwd = tempfile.mkdtemp(dir=wd)
    socks = [os.path.join(rwd, 'p%d.sock' % i) for i in range(2)]
    ports = ['socket=%s,tap=%s' % (s, t) for s, t in zip(socks, TAPS)]
    vd = harness.Vnetd(ns, ports, rwd, extra=['--workers', str(workers)])
    vd.__enter__()
    live = []
    try:
        for t in TAPS:
            ns.run('ip link set %s up' % t)
        spinners = []
        for i, s in enumerate(socks):
            f = fk.spin_guest(s)
            live.append(f)
            sp = fk.Spinner(exe, f, TX_Q, fk.bulk_frame(DST, '52:54:00:ee:00:%02x' % i, frame),
                            batch=32, idle_us=idle_us)
            spinners.append(sp)
        c0, b0, t0 = fk.cpu_seconds(vd.proc.pid), machine_busy(), time.monotonic()
        n0 = [sp.count() for sp in spinners]
        for sp in spinners:
            sp.start(seconds)
            live.append(sp)
        time.sleep(seconds + 0.5)
        res = [sp.stop() for sp in spinners]
        c1, b1, t1 = fk.cpu_seconds(vd.proc.pid), machine_busy(), time.monotonic()
        rates = [(r[0] - n) / r[1] if r and r[1] else 0.0 for r, n in zip(res, n0)]
        return {'workers': workers, 'fps': rates, 'aggregate_fps': sum(rates),
                'vnetd_cpu_pct': 100.0 * (c1 - c0) / (t1 - t0),
                'machine_busy_pct': common.busy_pct(b0, b1)}
    finally:
        fk.close_all(reversed(live))
        vd.stop()


def chart(summary, png, dat):
    with open(dat, 'w') as f:
        f.write('# workers median_kfps min max\n')
        for w in sorted(summary):
            s = summary[w]
            f.write('%d %g %g %g\n' % (w, s['median'] / 1e3, s['min'] / 1e3, s['max'] / 1e3))
    gp = ['set terminal pngcairo size 700,420 font "sans,10"', 'set output "%s"' % png,
          'set title "vnetd: two busy tap ports, aggregate TX frames/s (thousands)\\n'
          'median of the runs, bars = min-max"',
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.6', 'set grid ytics',
          'set key off', 'set yrange [0:*]', 'set xlabel "--workers"',
          'plot "%s" using 2:3:4:xtic(1) lc rgb "#4060c0"' % dat]
    return gnuplot.run(gp, log)


def thread_cpu(pid):
    """{tid: (comm, utime + stime seconds)} of every thread of pid."""
    out = {}
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/comm' % (pid, tid)) as f:
                comm = f.read().strip()
            with open('/proc/%d/task/%s/stat' % (pid, tid)) as f:
                v = f.read()
            v = v[v.rindex(')') + 2:].split()
            out[tid] = (comm, (int(v[11]) + int(v[12])) / fk.CLK_TCK)
        except OSError:
            pass
    return out


def placement_of(workers, wk):
    """The placement the ports really had: wk = {port letter: vnetd worker}."""
    if workers == 1 or len(set(wk.values())) == 1:
        return 'one'
    split = [wk[s] != wk[r] for s, r in SW_PAIRS]
    if all(split):
        return 'cross' if wk['a'] == wk['c'] else 'cross2'
    return 'same' if not any(split) else 'mixed'


def switch_run(exe, wd, workers, placement, args):
    """One --switch run: a fresh vnetd, four switch ports in SW_ORDER[placement]; returns the
    measurement dict."""
    rwd = tempfile.mkdtemp(dir=wd)
    order = SW_ORDER[placement]
    socks = {n: os.path.join(rwd, '%s.sock' % n) for n in order}
    # vnetd keeps switch ports without worker= on one worker: pin them for the placement.
    pin = {n: i % workers for i, n in enumerate(order)} if workers > 1 else {}
    ports = ['socket=%s,switch,mac=%s%s' % (socks[n], SW_MACS[n],
                                            ',worker=%d' % pin[n] if n in pin else '')
             for n in order]
    name = {n: 'p%d' % i for i, n in enumerate(order)}  # vnetd names ports in --port order
    vd = harness.Vnetd(harness.NoNs(), ports, rwd, extra=['--workers', str(workers)])
    vd.__enter__()
    live = []
    try:
        rx, tx = {}, {}
        for _, r in SW_PAIRS:  # receivers first: RX ring posted, then their MAC announced
            f = fk.spin_guest(socks[r], num=args.rx_ring)
            live.append(f)
            rx[r] = fk.Spinner(exe, f, RX_Q, batch=32, idle_us=args.rx_idle_us).start()
            live.append(rx[r])
            if not fk.teach_switch(f, SW_MACS[r]):
                harness.fail('%s: its broadcast was not taken' % r)
        for s, r in SW_PAIRS:
            f = fk.spin_guest(socks[s], num=args.ring)
            live.append(f)
            tx[s] = fk.Spinner(exe, f, TX_Q, fk.bulk_frame(SW_MACS[r], SW_MACS[s], args.frame),
                               batch=32, idle_us=args.idle_us)
        st = json.loads(vd.ctl('stats', '--json').stdout)
        wk_by_name = {p['name']: p['worker'] for p in st['ports']}
        wk = {n: wk_by_name[name[n]] for n in order}
        for sp in tx.values():
            sp.start(0)
            live.append(sp)
        time.sleep(SW_WARMUP)
        pid = vd.proc.pid
        s0 = vd.stats()
        th0, c0, b0, t0 = thread_cpu(pid), fk.cpu_seconds(pid), machine_busy(), time.monotonic()
        r0 = {n: sp.count() for n, sp in rx.items()}
        x0 = {n: sp.count() for n, sp in tx.items()}
        time.sleep(args.seconds)
        r1 = {n: sp.count() for n, sp in rx.items()}
        x1 = {n: sp.count() for n, sp in tx.items()}
        th1, c1, b1, t1 = thread_cpu(pid), fk.cpu_seconds(pid), machine_busy(), time.monotonic()
        s1 = vd.stats()
        dt = t1 - t0
        alive = all(sp.alive() for sp in list(rx.values()) + list(tx.values()))
        for sp in tx.values():
            sp.stop()
        fps = {n: (r1[n] - r0[n]) / dt for n in rx}
        rxq = {n: {k: harness.counter_delta(s0, s1, name[n], RX_Q, k)
                   for k in ('packets', 'bytes', 'dropped', 'rx_no_buffers')}
               for n in rx}
        threads = {th0[t][0] + '/' + t: 100.0 * (th1[t][1] - th0[t][1]) / dt
                   for t in th0 if t in th1}
        return {'workers': workers, 'placement_asked': placement,
                'placement': placement_of(workers, wk), 'port_order': ''.join(order),
                'port_names': name, 'port_workers': wk, 'seconds': round(dt, 3),
                'fps': fps, 'aggregate_fps': sum(fps.values()),
                'tx_fps': {n: (x1[n] - x0[n]) / dt for n in tx}, 'rx_queue': rxq,
                'lost_pct': 100.0 * (1 - sum(r1[n] - r0[n] for n in rx) /
                                     max(1, sum(x1[n] - x0[n] for n in tx))),
                'spinners_alive': alive,
                'vnetd_cpu_pct': 100.0 * (c1 - c0) / dt, 'vnetd_threads_cpu_pct': threads,
                'machine_busy_pct': common.busy_pct(b0, b1)}
    finally:
        fk.close_all(reversed(live))
        vd.stop()


SW_LABEL = {'one': '1 worker', 'same': '2, each pair on one',
            'cross': '2, across, senders on one', 'cross2': '2, across, both ways',
            'mixed': '2, one pair across'}
SW_KEYS = ('one', 'same', 'cross', 'cross2', 'mixed')
SW_TIC = {'one': '1', 'same': '2 same', 'cross': '2 cross', 'cross2': '2 cross2',
          'mixed': '2 mixed'}


def switch_chart(summary, png, dat):
    keys = [k for k in SW_KEYS if k in summary]
    with open(dat, 'w') as f:
        f.write('# config median_kfps min max\n')
        for k in keys:
            s = summary[k]
            f.write('"%s" %g %g %g\n' % (SW_TIC[k], s['median'] / 1e3, s['min'] / 1e3,
                                          s['max'] / 1e3))
    gp = ['set terminal pngcairo size 700,420 font "sans,10"', 'set output "%s"' % png,
          'set title "vnetd: two switch port pairs (a->b, c->d), aggregate frames/s received '
          '(thousands)\\nmedian of the runs, bars = min-max"',
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.6', 'set grid ytics',
          'set key off', 'set yrange [0:*]',
          'set xlabel "--workers  (same: each pair on one worker; cross, cross2: each pair '
          'across the two)"',
          'plot "%s" using 2:3:4:xtic(1) lc rgb "#40a060"' % dat]
    return gnuplot.run(gp, log)


def main_switch(args):
    common.require('bench-workers')
    wd = tempfile.mkdtemp(prefix='vnetd-bench-workers-switch-')
    harness.private_binaries(wd)
    exe = fk.build_ringspin(wd)
    placements = [p for p in args.placements.split(',') if p]
    for p in placements:
        if p not in SW_ORDER:
            sys.exit('--placements: %r is not one of %s' % (p, ', '.join(SW_ORDER)))
    runs = []
    try:
        for rep in range(args.reps):
            for placement in placements:
                for workers in (1, 2):
                    r = switch_run(exe, wd, workers, placement, args)
                    q = r['rx_queue']
                    log('rep %d, %d worker(s), ports %s (workers %s: %s): received %s frames/s '
                        '(aggregate %.0f; sent %s, %.1f%% not received), vnetd CPU %.0f%% (%s), '
                        'machine busy %.0f%%%s' % (
                            rep + 1, workers, r['port_order'],
                            ' '.join('%s=%d' % kv for kv in sorted(r['port_workers'].items())),
                            r['placement'],
                            ' + '.join('%s %.0f' % (n, r['fps'][n]) for _, n in SW_PAIRS),
                            r['aggregate_fps'],
                            ' + '.join('%s %.0f' % (n, r['tx_fps'][n]) for n, _ in SW_PAIRS),
                            r['lost_pct'], r['vnetd_cpu_pct'],
                            ' + '.join('%.0f' % v for v in r['vnetd_threads_cpu_pct'].values()),
                            r['machine_busy_pct'],
                            ''.join('; %s RX dropped %d, no buffers %d' % (
                                n, q[n]['dropped'], q[n]['rx_no_buffers'])
                                for _, n in SW_PAIRS
                                if q[n]['dropped'] or q[n]['rx_no_buffers'])))
                    runs.append(r)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    summary = {}
    for k in SW_KEYS:
        rs = [r for r in runs if r['placement'] == k]
        if not rs:
            continue
        agg = [r['aggregate_fps'] for r in rs]
        summary[k] = {'runs': len(rs), 'median': statistics.median(agg), 'min': min(agg),
                      'max': max(agg),
                      'per_receiver_median': {n: statistics.median(r['fps'][n] for r in rs)
                                              for _, n in SW_PAIRS},
                      'cpu_pct': statistics.median(r['vnetd_cpu_pct'] for r in rs),
                      'lost_pct': statistics.median(r['lost_pct'] for r in rs),
                      'busy_pct': statistics.median(r['machine_busy_pct'] for r in rs)}
    base = summary.get('one', {}).get('median')
    ratios = {k: summary[k]['median'] / base for k in summary if k != 'one' and base}
    log('\n%-28s %4s %11s %11s %11s %11s %11s %6s %9s %6s %5s' % (
        'workers, placement', 'runs', 'median fps', 'min', 'max', 'b median', 'd median',
        'lost', 'vnetd CPU', 'busy', '2/1'))
    for k, s in summary.items():
        log('%-28s %4d %11.0f %11.0f %11.0f %11.0f %11.0f %5.1f%% %8.0f%% %5.0f%% %5s' % (
            SW_LABEL[k], s['runs'], s['median'], s['min'], s['max'],
            s['per_receiver_median']['b'], s['per_receiver_median']['d'], s['lost_pct'],
            s['cpu_pct'], s['busy_pct'], '%.2f' % ratios[k] if k in ratios else '-'))
    log('2 workers / 1 worker (medians): %s  (%d CPUs; load %s)' % (
        ', '.join('%s %.2f' % (k, v) for k, v in ratios.items()) or '-', os.cpu_count(),
        open('/proc/loadavg').read().split()[0]))
    log('received = frames/s counted in the receivers\' used RX rings; lost = sent but not '
        'received in the window (switch queue or cross-worker ring full).')
    log('placement with 2 workers, from the --port order (as vnetd reported it): "same" = '
        'a, c, b, d (a, b on worker 0; c, d on worker 1); "cross" = a, b, c, d (senders a, c on '
        'worker 0; receivers b, d on worker 1); "cross2" = a, b, d, c (a, d on worker 0; b, c '
        'on worker 1: a -> b crosses 0 -> 1, c -> d crosses 1 -> 0).')
    if (os.cpu_count() or 1) <= 4:
        log('note: %d CPUs for four ringspin processes (two TX, two RX) and vnetd\'s threads: '
            'the spinners compete with vnetd for the cores, the ratio says as much about the '
            'machine as about vnetd.' % os.cpu_count())
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = args.out or os.path.join(res, 'workers-switch-%s.json' % stamp)
    doc = {'date': stamp, 'mode': 'switch', 'seconds': args.seconds, 'warmup': SW_WARMUP,
           'frame': args.frame, 'idle_us': args.idle_us, 'rx_idle_us': args.rx_idle_us,
           'ring': args.ring, 'rx_ring': args.rx_ring, 'pairs': SW_PAIRS,
           'port_orders': {k: SW_ORDER[k] for k in placements}, 'macs': SW_MACS,
           'runs': runs, 'summary': summary, 'ratio_2_over_1': ratios,
           'cpus': os.cpu_count(), 'vnetd': vnetd_commit()}
    for path in (out, os.path.join(res, 'workers-switch-latest.json')):
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
    png = os.path.join(res, 'workers-switch-latest.png')
    if shutil.which('gnuplot') and switch_chart(summary, png,
                                                os.path.join(res, 'workers-switch-latest.dat')):
        log('chart: %s' % png)
    log('json: %s' % out)


def vnetd_commit():
    """git describe of the tree (for the record: which vnetd was measured)."""
    def git(*a):
        return common.git(TOP, *a)
    return {'commit': git('describe', '--always', '--dirty') or '?',
            'src_commit': git('log', '-1', '--format=%h', '--', 'src', 'meson.build') or '?',
            'build': harness.BUILD}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--frame', type=int, default=1500)
    ap.add_argument('--idle-us', type=int, default=50,
                    help='ringspin sleeps this long when its ring is full (leaves CPU to vnetd)')
    ap.add_argument('--out')
    ap.add_argument('--switch', action='store_true',
                    help='four switch ports (pairs a->b, c->d) instead of two taps; no root')
    ap.add_argument('--placements', default='same,cross,cross2',
                    help='--switch: same (each pair on one worker), cross (each pair across, '
                         'both senders on one worker), cross2 (each pair across, one sender '
                         'per worker)')
    ap.add_argument('--ring', type=int, default=1024,
                    help='--switch: senders\' TX ring (256 with --idle-us 50 caps a sender at '
                         '~4.7 M frames/s, less than one switch worker does)')
    ap.add_argument('--rx-ring', type=int, default=1024,
                    help='--switch: receivers\' RX ring (2 KiB buffers)')
    ap.add_argument('--rx-idle-us', type=int, default=50,
                    help='--switch: the receivers\' ringspin sleeps this long when nothing came')
    ap.add_argument('--queue-pairs', action='store_true',
                    help='one switch port\'s 2 queue pairs on 2 workers vs on 1 (queue-workers=), '
                         'driven by DPDK testpmd virtio-user queues=2 (bench/lib/workers_qpairs.py)')
    ap.add_argument('--quick', action='store_true', help='one rep of 1 s: a smoke test')
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.reps = 1.0, 1
    if args.queue_pairs:
        from bench.lib import workers_qpairs
        return workers_qpairs.main(args)
    if args.switch:
        return main_switch(args)
    common.require('bench-workers', root=True, tun=True, why_root='network namespace, taps')
    wd = tempfile.mkdtemp(prefix='vnetd-bench-workers-')
    harness.private_binaries(wd)
    exe = fk.build_ringspin(wd)
    runs = []
    try:
        with harness.Netns('vnetd-bench-workers') as ns:
            for rep in range(args.reps):
                for workers in (1, 2):
                    r = one_run(exe, ns, wd, workers, args.seconds, args.frame, args.idle_us)
                    log('rep %d, %d worker(s): %s frames/s (aggregate %.0f), vnetd CPU %.0f%%, '
                        'machine busy %.0f%%' % (rep + 1, workers,
                                                 ' + '.join('%.0f' % x for x in r['fps']),
                                                 r['aggregate_fps'], r['vnetd_cpu_pct'],
                                                 r['machine_busy_pct']))
                    runs.append(r)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    summary = {}
    for w in (1, 2):
        agg = [r['aggregate_fps'] for r in runs if r['workers'] == w]
        summary[w] = {'median': statistics.median(agg), 'min': min(agg), 'max': max(agg),
                      'cpu_pct': statistics.median(r['vnetd_cpu_pct'] for r in runs
                                                   if r['workers'] == w),
                      'busy_pct': statistics.median(r['machine_busy_pct'] for r in runs
                                                    if r['workers'] == w)}
    ratio = summary[2]['median'] / summary[1]['median'] if summary[1]['median'] else None
    log('\n%8s %14s %14s %14s %10s %10s' % ('workers', 'median fps', 'min', 'max',
                                             'vnetd CPU', 'busy %'))
    for w in (1, 2):
        s = summary[w]
        log('%8d %14.0f %14.0f %14.0f %9.0f%% %9.0f%%' % (w, s['median'], s['min'], s['max'],
                                                          s['cpu_pct'], s['busy_pct']))
    log('2 workers / 1 worker (medians): %s  (%d CPUs; load %s)' % (
        '%.2f' % ratio if ratio else '-', os.cpu_count(), open('/proc/loadavg').read().split()[0]))
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = args.out or os.path.join(res, 'workers-%s.json' % stamp)
    doc = {'date': stamp, 'seconds': args.seconds, 'frame': args.frame,
           'idle_us': args.idle_us, 'runs': runs,
           'summary': summary, 'ratio_2_over_1': ratio, 'cpus': os.cpu_count()}
    for path in (out, os.path.join(res, 'workers-latest.json')):
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
    png = os.path.join(res, 'workers-latest.png')
    if shutil.which('gnuplot') and chart(summary, png, os.path.join(res, 'workers-latest.dat')):
        log('chart: %s' % png)
    log('json: %s' % out)


if __name__ == '__main__':
    main()
