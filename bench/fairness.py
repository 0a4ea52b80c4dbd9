#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-fairness: what one flooding guest costs the others on vnetd (control RTT, throughput).

Issue "one guest must never starve the others". vnetd with three switch ports a, b, c (no
guest kernels, no namespace: Python frontends from tests/kit/vhost_user_client.py whose rings
are driven by tests/kit/ringspin.c, compiled here with cc). Phases, each on a fresh vnetd,
interleaved over the repetitions (rep 1: idle, a-alone, b-alone, b-flood; rep 2: ...):

  idle      control-socket round trips ({"cmd":"ports"} on one connection), nothing else;
  a-alone   a well-behaved bulk sender on a: TX ring of --ring entries of one --frame-byte
            frame each to c's MAC, refilled in batches of 32, kicking when vnetd allows, a short
            sleep when the ring is full; c keeps its RX ring (--ring 2 KiB buffers) refilled.
            Throughput = frames c received per second (counted in c's used ring);
  b-alone   the same from b;
  b-flood   the same from b while a floods: a's TX ring holds FLOOD_RING valid one-frame
            chains (a 64 KiB frame in an indirect table of 1024 descriptors, from and to a's own
            MAC, so the switch filters it and only vnetd's TX work is loaded) and a spinning
            ringspin (nice -20) keeps avail.idx = used.idx + ring size for ever.
During every bulk phase a thread does control round trips 10 ms apart. Per phase: control RTT
p50/p99, c's received frames/s, vnetd's CPU (% of one core, /proc/PID/stat), the flood's rate,
the machine's busy %. Goals (issue): control p99 <= 10 ms under the flood, b keeps >= 40 % of
its alone throughput.

Outputs: a table on the terminal; results/fairness-<date>.json and results/fairness-latest.json
(every run, pooled RTTs summaries, goals, machine load, vnetd commit), results/fairness-latest.md
and, with gnuplot, results/fairness-latest.png (with --out F.json: F.json, F.md, F.png). Any vnetd build: VNETD_BUILD=DIR (default
build/). Root is needed only for the flooder's nice -20 (without it the flood is weaker).
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time

from bench.lib import common
from bench.lib.common import TOP, log, machine_busy, spread
from tests.kit import harness
from tests.kit import fairness as fk
from tests.kit.fairness import MACS, Spinner
from tests.kit.vhost_user_client import RX_Q, TX_Q
from bench.lib import gnuplot

PHASES = ('idle', 'a-alone', 'b-alone', 'b-flood')
LABELS = {'idle': 'idle (nothing but the probe)', 'a-alone': 'a -> c bulk, alone',
          'b-alone': 'b -> c bulk, alone', 'b-flood': 'b -> c bulk, a floods'}
GOALS = {'ctl_p99_ms': 10.0, 'b_retention': 0.40}


def vnetd_commit():
    """git describe of the tree VNETD_BUILD was configured from (meson-info), else of TOP."""
    src = common.source_of(harness.BUILD)

    def git(*a):
        return common.git(src, *a)

    # The tree's commit, and the last one that changed vnetd itself (src/, meson.build):
    # commits of tests and benchmarks do not change the binary.
    dirty = git('status', '--porcelain', '--', 'src', 'meson.build')
    return {'source': src, 'commit': git('describe', '--always', '--dirty') or '?',
            'src_commit': (git('log', '-1', '--format=%h', '--', 'src', 'meson.build') or '?')
            + ('-dirty' if dirty else ''),
            'subject': git('log', '-1', '--format=%s', '--', 'src', 'meson.build')}


def run_phase(args, exe, wd, kind):
    """One phase on a fresh vnetd; returns its measurement dict."""
    pwd = os.path.join(wd, kind)
    os.makedirs(pwd, exist_ok=True)
    vd, socks = fk.start_vnetd(pwd)
    pid, live, m = vd.proc.pid, [], {'phase': kind}
    try:
        if kind == 'idle':
            m['ctl'] = fk.sample_rtts(vd.control, args.idle_samples)
            m['rtts_ms'] = None
            return m
        src = 'a' if kind == 'a-alone' else 'b'
        rcv = fk.spin_guest(socks['c'], num=args.rx_ring)
        live.append(rcv)
        rxs = Spinner(exe, rcv, RX_Q, batch=32, idle_us=args.rx_idle_us).start()
        live.append(rxs)
        fk.teach_switch(rcv, MACS['c'])
        snd = fk.spin_guest(socks[src], num=args.ring)
        live.append(snd)
        txs = Spinner(exe, snd, TX_Q, fk.bulk_frame(MACS['c'], MACS[src], args.frame), batch=32,
                      idle_us=args.idle_us)
        live.append(txs)
        flood = None
        if kind == 'b-flood':
            flood = fk.Flood(exe, socks['a'], num=args.flood_ring, frame_size=args.flood_frame,
                             pieces=args.flood_pieces, sched=fk.FLOOD_SCHED)
            live.insert(0, flood)
            m['flood_sched'] = flood.spin.sched
            if not flood.wait_running(10):
                m['error'] = 'the flood did not start'
                return m
        probe = fk.ControlProbe(vd.control, interval=0.01, timeout=args.duration + 30).start()
        f0 = flood.spin.count() if flood else 0
        c0, b0, t0, r0 = fk.cpu_seconds(pid), machine_busy(), time.monotonic(), rxs.count()
        txs.start(seconds=args.duration)
        time.sleep(args.duration)
        t1, r1, c1, b1 = time.monotonic(), rxs.count(), fk.cpu_seconds(pid), machine_busy()
        f1 = flood.spin.count() if flood else 0
        probe.halt()
        sent_at = probe.sent_at
        m['ctl_in_flight_s'] = (t1 - sent_at) if sent_at else None
        sent, sent_s = txs.stop()
        if flood:
            flood.stop()  # today's vnetd answers what waited only now
            live.remove(flood)
        m['ctl'] = probe.stop()
        st = vd.stats()
        m['c_rx'] = {k: st[fk.PORT['c']][RX_Q][k] for k in ('packets', 'dropped', 'rx_no_buffers')}
        m['tx_fps'] = sent / sent_s if sent_s else None
        m['rtts_ms'] = [x * 1000 for x in probe.rtts]
        dt = t1 - t0
        m['ctl_answered_per_s'] = sum(1 for t in probe.answered_at if t0 <= t <= t1) / dt
        m.update(seconds=round(dt, 3), rx_fps=(r1 - r0) / dt, tx_completed=sent,
                 rx_mbit=(r1 - r0) * args.frame * 8 / dt / 1e6,
                 vnetd_cpu_pct=100.0 * (c1 - c0) / dt,
                 machine_busy_pct=common.busy_pct(b0, b1) * os.cpu_count())
        if flood:
            m['flood_cps'] = (f1 - f0) / dt
            m['flood_mbyte_s'] = (f1 - f0) * args.flood_frame / dt / 1e6
        return m
    finally:
        fk.close_all(live)
        m['vnetd_rc'] = vd.stop()


def short(m):
    s = 'ctl ' + fk.fmt_rtt(m['ctl'])
    if 'rx_fps' in m:
        s += '; vnetd took %.0f frames/s, c received %.0f (%.0f Mbit/s), vnetd CPU %.0f %%' % (
            m['tx_fps'] or 0, m['rx_fps'], m['rx_mbit'], m['vnetd_cpu_pct'])
    if 'flood_cps' in m:
        s += '; flood %.0f chains/s (%.0f MB/s)' % (m['flood_cps'], m['flood_mbyte_s'])
    if (m.get('ctl_in_flight_s') or 0) > 0.1:
        s += '; a control request had waited %.1f s at the end' % m['ctl_in_flight_s']
    if m.get('c_rx', {}).get('rx_no_buffers'):
        s += '; c ran out of RX buffers %d times' % m['c_rx']['rx_no_buffers']
    return s


def summarize(runs):
    out = {}
    for kind in PHASES:
        rs = [r for r in runs if r['phase'] == kind and 'error' not in r]
        if not rs:
            continue
        pooled = []
        for r in rs:
            pooled += r['rtts_ms'] if r['rtts_ms'] is not None else []
        e = {'runs': len(rs)}
        if kind == 'idle':
            e['ctl_p50_ms'] = spread([r['ctl']['p50_ms'] for r in rs])
            e['ctl_p99_ms'] = spread([r['ctl']['p99_ms'] for r in rs])
        else:
            e['ctl_p50_ms'] = spread([fk.percentile(pooled, 50)])
            e['ctl_p99_ms'] = spread([fk.percentile(pooled, 99)])
            e['ctl_max_ms'] = max(pooled) if pooled else None
            e['ctl_samples'] = len(pooled)
            e['ctl_unanswered'] = sum(r['ctl']['errors'] for r in rs)
            e['ctl_waiting_at_end'] = sum(1 for r in rs if (r.get('ctl_in_flight_s') or 0) > 0.1)
            for k in ('tx_fps', 'rx_fps', 'rx_mbit', 'vnetd_cpu_pct', 'machine_busy_pct', 'flood_cps',
                      'flood_mbyte_s', 'ctl_answered_per_s'):
                e[k] = spread([r.get(k) for r in rs])
        out[kind] = e
    return out


def med(x):
    return x['median'] if x else None


def goals(summary):
    g = {}
    fl, alone = summary.get('b-flood', {}), summary.get('b-alone', {})
    p99 = med(fl.get('ctl_p99_ms'))
    if p99 is not None:
        g['ctl_p99_ms'] = {'value': p99, 'goal': '<= %g' % GOALS['ctl_p99_ms'],
                           'met': p99 <= GOALS['ctl_p99_ms']}
    if med(alone.get('rx_fps')) and med(fl.get('rx_fps')) is not None:
        ret = med(fl['rx_fps']) / med(alone['rx_fps'])
        g['b_retention'] = {'value': ret, 'goal': '>= %g %%' % (100 * GOALS['b_retention']),
                            'met': ret >= GOALS['b_retention']}
    return g


def fmt(x, spec):
    if not x:
        return '–'
    s = spec % x['median']
    if x['n'] > 1 and x['min'] != x['max']:
        s += ' (' + spec % x['min'] + '–' + spec % x['max'] + ')'
    return s


def table_md(summary, g):
    lines = ['| Phase | control RTT p50 / p99 ms | control answers/s (probe: 10 ms apart) | '
             'sender\'s frames/s taken by vnetd | c received, frames/s | Mbit/s | vnetd CPU % | '
             'flood chains/s / MB/s | machine busy % |', '|' + '---|' * 9]
    for kind in PHASES:
        e = summary.get(kind)
        if not e:
            continue
        rtt = '%s / %s' % (fmt(e['ctl_p50_ms'], '%.2f'), fmt(e['ctl_p99_ms'], '%.1f'))
        if e.get('ctl_unanswered') or e.get('ctl_waiting_at_end'):
            rtt += ' (%d waiting at a window\'s end)' % e['ctl_waiting_at_end']
        flood = ('%.0f / %.0f' % (med(e['flood_cps']), med(e['flood_mbyte_s']))
                 if e.get('flood_cps') else '–')
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            LABELS[kind], rtt, fmt(e.get('ctl_answered_per_s'), '%.1f'), fmt(e.get('tx_fps'), '%.0f'),
            fmt(e.get('rx_fps'), '%.0f'), fmt(e.get('rx_mbit'), '%.0f'),
            fmt(e.get('vnetd_cpu_pct'), '%.0f'), flood, fmt(e.get('machine_busy_pct'), '%.0f')))
    lines += ['', '| Goal (issue) | measured | goal | |', '|---|---|---|---|']
    names = {'ctl_p99_ms': ('control RTT p99 while a floods, ms', '%.1f'),
             'b_retention': ('b\'s throughput while a floods / alone', '%.0f %%')}
    for k, (label, spec) in names.items():
        if k in g:
            v = g[k]['value'] * (100 if k == 'b_retention' else 1)
            lines.append('| %s | %s | %s | %s |' % (label, spec % v, g[k]['goal'],
                                                     '✔' if g[k]['met'] else '✘'))
        else:
            lines.append('| %s | – | | |' % label)
    return '\n'.join(lines)


def chart(summary, png, dat):
    kinds = [k for k in PHASES if k in summary]
    with open(dat, 'w') as f:
        f.write('# phase p99_ms p99_min p99_max rx_kfps rx_min rx_max\n')
        for k in kinds:
            e = summary[k]
            p, r = e['ctl_p99_ms'], e.get('rx_fps')
            f.write('%s %g %g %g %g %g %g\n' % (
                k, p['median'], p['min'], p['max'], (r['median'] / 1e3) if r else 0,
                (r['min'] / 1e3) if r else 0, (r['max'] / 1e3) if r else 0))
    gp = ['set terminal pngcairo size 1100,420 font "sans,10"', 'set output "%s"' % png,
          'set multiplot layout 1,2 title "vnetd: one guest floods (a), others work (b -> c); '
          'median, bars = min-max"',
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.8', 'set grid ytics',
          'set key off', 'set xtics nomirror',
          'set title "control-socket RTT p99 (ms, log)"', 'set logscale y', 'set yrange [0.01:*]',
          'plot "%s" using 2:3:4:xtic(1) lc rgb "#c04040", %g with lines dt 2 lc rgb "black"'
          % (dat, GOALS['ctl_p99_ms']),
          'unset logscale y', 'set yrange [0:*]', 'set title "frames/s received by c (thousands)"',
          'plot "%s" using 5:6:7:xtic(1) lc rgb "#4060c0"' % dat, 'unset multiplot']
    return gnuplot.run(gp, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=5, help='seconds per bulk phase (default 5)')
    ap.add_argument('--reps', type=int, default=3, help='repetitions (default 3)')
    ap.add_argument('--phases', default=','.join(PHASES))
    ap.add_argument('--frame', type=int, default=60, help='bulk frame bytes (default 60)')
    ap.add_argument('--ring', type=int, default=256, help='TX queue size of the bulk sender (256)')
    ap.add_argument('--rx-ring', type=int, default=1024,
                    help='RX queue size of the receiver c (default 1024; at most 1024)')
    ap.add_argument('--idle-us', type=int, default=20,
                    help='bulk guests sleep this long when their ring is full/empty (default 20)')
    ap.add_argument('--rx-idle-us', type=int, default=20, help='the same for the receiver c')
    ap.add_argument('--idle-samples', type=int, default=500)
    ap.add_argument('--flood-ring', type=int, default=fk.FLOOD_RING)
    ap.add_argument('--flood-frame', type=int, default=fk.FLOOD_FRAME)
    ap.add_argument('--flood-pieces', type=int, default=fk.FLOOD_PIECES,
                    help='descriptors per flood chain (>1: in an indirect table)')
    ap.add_argument('--quick', action='store_true', help='2 s phases, 1 rep')
    ap.add_argument('--out', help='JSON output (default results/fairness-<date>.json)')
    args = ap.parse_args()
    if args.quick:
        args.duration, args.reps = 2, 1
    args.phases = [p for p in args.phases.split(',') if p]
    for p in args.phases:
        if p not in PHASES:
            ap.error('unknown phase %r (known: %s)' % (p, ', '.join(PHASES)))
    common.require('fairness')

    commit = vnetd_commit()
    now = datetime.datetime.now()
    out = args.out or os.path.join(TOP, 'results', 'fairness-%s.json' % now.strftime('%Y%m%d-%H%M%S'))
    resdir = os.path.dirname(os.path.abspath(out))
    os.makedirs(resdir, exist_ok=True)
    wd = harness.workdir('bench-fairness')
    try:
        exe = fk.build_ringspin(wd)
    except fk.NoCompiler as e:
        sys.exit('fairness: %s' % e)
    harness.private_binaries(wd)
    load0 = common.load_check('fairness')
    log('fairness: vnetd from %s at %s, last change to vnetd %s "%s"; %s, %d CPUs, load average '
        '%.2f %.2f %.2f' % (commit['source'], commit['commit'], commit['src_commit'],
                            commit['subject'], platform.node(), os.cpu_count(), *load0))
    t_start, runs = time.monotonic(), []
    for rep in range(1, args.reps + 1):
        for kind in args.phases:
            m = run_phase(args, exe, wd, kind)
            m['rep'] = rep
            runs.append(m)
            log('  %-8s rep %d: %s' % (kind, rep, m.get('error') or short(m)))
    summary = summarize(runs)
    g = goals(summary)
    load1 = os.getloadavg()
    cpu_model = common.cpu_model()
    meta = {'date': now.isoformat(timespec='seconds'), 'host': platform.node(),
            'kernel': platform.release(), 'cpus': os.cpu_count(), 'cpu_model': cpu_model,
            'loadavg_start': load0, 'loadavg_end': load1, 'vnetd': commit,
            'elapsed_s': round(time.monotonic() - t_start, 1), 'args': vars(args),
            'flood': {'ring': args.flood_ring, 'frame': args.flood_frame,
                      'pieces': args.flood_pieces,
                      'sched': next((r['flood_sched'] for r in runs if 'flood_sched' in r), None)},
            'goals': GOALS}
    md = ('### Fairness: one flooding guest (a) vs the others, vnetd %s\n\n%s\n\nMeasured %s on %s '
          '(%d CPUs, %s), load average %.2f at start, %.2f at end; %g s phases x %d reps; bulk: '
          '%d-byte frames, TX ring %d, c\'s RX ring %d; flood: ring %d, %d-byte frame in %d '
          'descriptor(s), flooder %s.\n'
          % (commit['src_commit'], table_md(summary, g), meta['date'], meta['host'],
             meta['cpus'], cpu_model, load0[0], load1[0], args.duration, args.reps, args.frame,
             args.ring, args.rx_ring, args.flood_ring, args.flood_frame, args.flood_pieces,
             meta['flood']['sched']))
    result = {'meta': meta, 'summary': summary, 'goals': g, 'runs': runs}
    # --out FILE.json: FILE.md/.png next to it; else results/fairness-<date>.json + -latest.*
    stem = (os.path.splitext(os.path.abspath(out))[0] if args.out
            else os.path.join(resdir, 'fairness-latest'))
    for path in sorted({out, stem + '.json'}):
        with open(path, 'w') as f:
            json.dump(result, f, indent=1, default=str)
    with open(stem + '.md', 'w') as f:
        f.write(md)
    png = shutil.which('gnuplot') and chart(summary, stem + '.png', stem + '.dat')
    log('\n' + md)
    log('wrote %s%s, %s.md%s' % (out, '' if args.out else ', %s.json' % stem, stem,
                                ', %s.png' % stem if png else ''))
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == '__main__':
    main()
