#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-rate: per-port rate limits, the rate achieved vs the rate set, and their CPU cost.

Rate: a fresh vnetd with two switch ports a -> b (no root). a's guest is tests/kit/ringspin.c
keeping a 1024-entry TX ring full of FRAME-byte frames to b's MAC (sleeping --idle-us when
full); b's ringspin keeps its RX ring posted. Each case limits one direction: "tx" sets
tx-rate= on a (guest TX over it waits in a's ring), "rx" sets rx-rate= on b (frames over it
are dropped at b, counted in rate_dropped); default bursts. Achieved = frame bytes per second
that passed the limiter over --seconds (vnetd's own counters: a's TX queue bytes for tx, b's
RX queue bytes for rx), after a warm-up; set at 100 Mbit/s and 1 Gbit/s, and once with no
limit (what the pair does unlimited, the ceiling). Pass: |achieved / set - 1| <= 5 %.

CPU cost: callgrind instructions per packet of the switch path (bench/datapath.py
--callgrind-only --no-peer --backends switch: DPDK's virtio-user as the source, both ports
sending and receiving), with no limit and with tx-rate= and rx-rate= on both ports at a rate
that never binds (every packet checked and charged, none waits): the limiter's own cost. Its
output goes to a temporary directory (results/datapath-latest.* stay as they were).

Outputs: a table; results/rate-latest.json and results/rate-latest.png (gnuplot). Any vnetd
build: VNETD_BUILD=DIR (default build/).
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench.lib import common
from bench.lib.common import TOP, log
from tests.kit import harness
from tests.kit import fairness as fk
from tests.kit.vhost_user_client import RX_Q, TX_Q
from bench.lib import gnuplot

MACS = {'a': '52:54:00:5a:01:0a', 'b': '52:54:00:5a:01:0b'}
RATES = (100, 1000)  # Mbit/s
TOLERANCE = 0.05
NOBIND = 400000  # Mbit/s: never reached under callgrind (the limiter checks, nothing waits)


def run_case(exe, wd, direction, mbit, args):
    """One measurement: a fresh vnetd, a -> b, the limit on one direction; a result dict."""
    rwd = tempfile.mkdtemp(dir=wd)
    socks = {n: os.path.join(rwd, '%s.sock' % n) for n in 'ab'}
    extra = {'a': '', 'b': ''}
    if mbit and direction == 'tx':
        extra['a'] = ',tx-rate=%d' % mbit
    elif mbit:
        extra['b'] = ',rx-rate=%d' % mbit
    ports = ['socket=%s,switch,mac=%s%s' % (socks[n], MACS[n], extra[n]) for n in 'ab']
    vd = harness.Vnetd(harness.NoNs(), ports, rwd)
    vd.__enter__()
    live = []
    try:
        f = fk.spin_guest(socks['b'], num=args.ring)
        live.append(f)
        rx = fk.Spinner(exe, f, RX_Q, batch=32, idle_us=args.idle_us).start()
        live.append(rx)
        if not fk.teach_switch(f, MACS['b']):
            harness.fail('b: its broadcast was not taken')
        g = fk.spin_guest(socks['a'], num=args.ring)
        live.append(g)
        tx = fk.Spinner(exe, g, TX_Q, fk.bulk_frame(MACS['b'], MACS['a'], args.frame),
                        batch=32, idle_us=args.idle_us)
        tx.start(0)
        live.append(tx)
        time.sleep(args.warmup)
        s0, t0, c0 = vd.stats(), time.monotonic(), fk.cpu_seconds(vd.proc.pid)
        time.sleep(args.seconds)
        s1, t1, c1 = vd.stats(), time.monotonic(), fk.cpu_seconds(vd.proc.pid)
        tx.stop()
        dt = t1 - t0
        d = lambda port, q, k: harness.counter_delta(s0, s1, port, q, k)  # noqa: E731
        sent = d('p0', TX_Q, 'bytes')
        got = d('p1', RX_Q, 'bytes')
        passed = sent if direction == 'tx' else got
        res = {'direction': direction, 'set_mbit': mbit, 'seconds': round(dt, 3),
               'frame': args.frame,
               'achieved_mbit': passed * 8 / dt / 1e6,
               'tx_mbit': sent * 8 / dt / 1e6, 'rx_mbit': got * 8 / dt / 1e6,
               'tx_rate_waits': d('p0', TX_Q, 'rate_waits'),
               'tx_dropped': d('p0', TX_Q, 'dropped'),
               'rx_rate_dropped': d('p1', RX_Q, 'rate_dropped'),
               'rx_no_buffers': d('p1', RX_Q, 'rx_no_buffers'),
               'vnetd_cpu_pct': 100.0 * (c1 - c0) / dt}
        if mbit:
            res['ratio'] = res['achieved_mbit'] / mbit
            res['ok'] = abs(res['ratio'] - 1) <= TOLERANCE
        return res
    finally:
        fk.close_all(reversed(live))
        vd.stop()


def callgrind(extra, args, wd):
    """Instructions per packet of the switch path (datapath.py --callgrind-only), ports + extra."""
    out = os.path.join(wd, 'dp-%s.json' % ('on' if extra else 'off'))
    env = dict(os.environ, VNETD_DP_PORT_EXTRA=extra)
    cmd = [sys.executable, os.path.join(TOP, 'bench', 'datapath.py'), '--callgrind-only',
           '--no-peer', '--backends', 'switch', '--cg-runs', str(args.cg_runs),
           '--cg-packets', str(args.cg_packets), '--cg-layouts', 'split', '--quiet-wait', '0',
           '--out', out]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        log('callgrind (%s) failed:\n%s%s' % (extra or 'no limit', r.stdout[-2000:],
                                               r.stderr[-2000:]))
        return None
    with open(out) as fh:
        s = json.load(fh)['callgrind']['switch']
    return {'ir_per_packet': s['ir_per_packet_median'], 'runs': [x['ir_per_packet']
                                                                for x in s['runs']]}


def chart(cases, png):
    dat = png[:-4] + '.dat'
    with open(dat, 'w') as f:
        f.write('# case set_mbit achieved_mbit\n')
        for c in cases:
            if c['set_mbit']:
                f.write('"%s %d" %d %.3f\n' % (c['direction'], c['set_mbit'], c['set_mbit'],
                                              c['achieved_mbit']))
    gp = ['set terminal pngcairo size 700,420 font "sans,10"', 'set output "%s"' % png,
          'set title "vnetd rate limits: achieved vs set (switch ports a -> b, %d B frames)"'
          % cases[0]['frame'],
          'set style data histogram', 'set style histogram clustered gap 1',
          'set style fill solid 0.6 border -1', 'set grid ytics', 'set key top left',
          'set logscale y', 'set ylabel "Mbit/s"', 'set yrange [10:*]',
          'plot "%s" using 2:xtic(1) title "set" lc rgb "#808080", '
          '"" using 3 title "achieved" lc rgb "#40a060"' % dat]
    ok = gnuplot.run(gp, log)
    os.unlink(dat)
    return ok


def commit():
    r = subprocess.run(['git', '-C', TOP, 'describe', '--always', '--dirty'],
                       capture_output=True, text=True)
    return r.stdout.strip() or None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=4.0, help='measured window per case')
    ap.add_argument('--warmup', type=float, default=1.0)
    ap.add_argument('--frame', type=int, default=1514, help='frame bytes (default 1514)')
    ap.add_argument('--ring', type=int, default=1024)
    ap.add_argument('--idle-us', type=int, default=50,
                    help='ringspin sleeps this long when there is nothing to do')
    ap.add_argument('--cg-packets', type=int, default=50000)
    ap.add_argument('--cg-runs', type=int, default=1)
    ap.add_argument('--no-callgrind', dest='cg', action='store_false', default=True)
    ap.add_argument('--out', help='JSON (default results/rate-latest.json)')
    args = ap.parse_args()
    common.require('bench-rate')
    wd = tempfile.mkdtemp(prefix='vnetd-bench-rate-')
    harness.private_binaries(wd)
    exe = fk.build_ringspin(wd)
    cases, cg = [], {}
    try:
        cases.append(run_case(exe, wd, 'tx', 0, args))
        for d in ('tx', 'rx'):
            for m in RATES:
                cases.append(run_case(exe, wd, d, m, args))
                c = cases[-1]
                log('%s %d Mbit/s: achieved %.1f (%.3f), waits %d, RX rate drops %d' % (
                    d, m, c['achieved_mbit'], c['ratio'], c['tx_rate_waits'],
                    c['rx_rate_dropped']))
        if args.cg:
            cg['off'] = callgrind('', args, wd)
            cg['on'] = callgrind(',tx-rate=%d,rx-rate=%d' % (NOBIND, NOBIND), args, wd)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    log('\n%-4s %9s %14s %7s %6s %10s %11s %9s' % ('dir', 'set Mbit', 'achieved Mbit', 'ratio',
                                                   'ok', 'TX waits', 'RX drops', 'vnetd CPU'))
    for c in cases:
        log('%-4s %9s %14.1f %7s %6s %10d %11d %8.0f%%' % (
            c['direction'] if c['set_mbit'] else '-', c['set_mbit'] or 'none',
            c['achieved_mbit'], '%.3f' % c['ratio'] if c['set_mbit'] else '-',
            ('yes' if c['ok'] else 'NO') if c['set_mbit'] else '-', c['tx_rate_waits'],
            c['rx_rate_dropped'], c['vnetd_cpu_pct']))
    cost = None
    if cg.get('off') and cg.get('on'):
        cost = cg['on']['ir_per_packet'] - cg['off']['ir_per_packet']
        log('callgrind, switch path (each packet: a TX check on one port, an RX check on the '
            'other): %.1f instructions/packet with no limit, %.1f with tx-rate and rx-rate on '
            'both ports (not binding): the limiter costs %+.1f (%+.1f %%)' % (
                cg['off']['ir_per_packet'], cg['on']['ir_per_packet'], cost,
                100 * cost / cg['off']['ir_per_packet']))
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    out = args.out or os.path.join(res, 'rate-latest.json')
    doc = {'date': datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S'), 'vnetd': commit(),
           'tolerance': TOLERANCE, 'cases': cases, 'callgrind': cg,
           'limiter_ir_per_packet': cost, 'cpus': os.cpu_count(),
           'args': vars(args)}
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    chart(cases, os.path.join(os.path.dirname(out), 'rate-latest.png'))
    log('wrote %s' % out)
    return 0 if all(c.get('ok', True) for c in cases) else 1


if __name__ == '__main__':
    sys.exit(main())
