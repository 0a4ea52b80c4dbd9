#!/usr/bin/env python3
"""make bench-workers: aggregate TX rate of two busy tap ports with vnetd --workers 1 vs 2.

Each run: a fresh vnetd in a private network namespace with two tap ports (taps up, no
address: the kernel drops the frames at once, so the work measured is vnetd's — walking the
chains, the writev into the tap — in vnetd's threads). On each port a Python frontend
(tests/e2e/vhost_user_client.py) whose TX ring (256 entries, one FRAME-byte frame each to a MAC
nobody has) is kept full by tests/e2e/ringspin.c (sleeping --idle-us when it is full, so the
spinners leave CPU to vnetd). For --seconds, frames per second each port
completed (counted by ringspin in guest memory) and vnetd's CPU. Runs alternate 1, 2, 1, 2, ...
(--reps each) so slow drifts of the machine's load hit both alike; reported: the median
aggregate per worker count, and the ratio 2 workers / 1 worker of the medians, with the
machine's busy % during the runs. Note: with two ringspin spinners and two vnetd threads, a
2-core machine is oversubscribed; the ratio there says more about the machine than vnetd.

Outputs: a table; results/workers-<date>.json, results/workers-latest.json and (gnuplot)
results/workers-latest.png. Any vnetd build: VNETD_BUILD=DIR (default build/). Needs root.
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

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))
import harness  # noqa: E402
import fairness_kit as fk  # noqa: E402
from vhost_user_client import TX_Q  # noqa: E402
import gnuplot  # noqa: E402 (bench/gnuplot.py)

TAPS = ('vbw0', 'vbw1')
DST = '52:54:00:ee:ee:ee'


def log(msg):
    print(msg, flush=True)


def machine_busy():
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


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
                'machine_busy_pct': 100.0 * (b1[0] - b0[0]) / max(1, b1[1] - b0[1])}
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--frame', type=int, default=1500)
    ap.add_argument('--idle-us', type=int, default=50,
                    help='ringspin sleeps this long when its ring is full (leaves CPU to vnetd)')
    ap.add_argument('--out')
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('bench-workers needs root (network namespace, taps)')
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
