#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-fdb-flood: a switch pair's throughput while another port sends from random MACs.

Four switch ports in one vnetd (no guest, no root): the pair a -> b (a's TX ring kept full by
tests/kit/ringspin.c, 60-byte frames unicast to b's MAC; b's RX ring re-posted by ringspin: the
rate is what b got per second), and x -> z: x's TX ring kept full by bench/fdb_spin.c, frames
unicast to z's MAC (z posts no RX buffers: its queue fills and then drops, so x costs vnetd its
TX and learning work only, no copy into a guest). Every MAC but x's sources is learnt before
the window (one broadcast each). Modes, alternated run by run (--reps each) so that slow drifts
of the machine's load hit all alike:

  quiet   x sends nothing                                  (the pair alone)
  fixed   x sends --x-rate frames/s from one source MAC    (the same load, nothing to learn)
  random  x sends --x-rate frames/s, each from a new random source MAC
  storm   x sends --x-rate broadcast frames/s, its port limited to --flood-rate floods a second
          (storm control: the rest dropped at x, counted)

Reported: the pair's median frames/s per mode, random / quiet and storm / quiet (wanted: >= 0.90), with
x's rate, vnetd's CPU, the machine's busy share and load average, and what the switch says
about x (stats --json "switch": MACs held, learn-rate refusals) and about a (flow cache
misses in the window: each is a locked FDB lookup with --workers > 1). --workers 2 (default)
puts a, b on worker 0 and x, z on worker 1, so x's work does not share the pair's thread
(with one worker it does, and the pair gets its fair half of a busy thread whatever the MACs:
--workers 1 measures that). --x-rate 0 lets x send as fast as vnetd takes its frames; on a
2-core machine x's thread then takes a core from the pair's spinners, so the default is a rate
that leaves the CPU to the pair and shows what the MACs cost, not what the load does.
--before DIR also runs an older build (e.g. one of the commit before the fix) in the same
alternation: its columns go next to this build's.

--callgrind instead measures what x's frames cost vnetd, deterministically: vnetd under
`valgrind --tool=callgrind`, x alone keeping its TX ring full (the pair idle), callgrind's
counters zeroed after the MACs are learnt and dumped --cg-seconds later; user-space instructions
per frame x sent, for the fixed and storm modes (and the --before build), with the storm path's
most expensive functions.

Outputs: a table; results/fdb-flood-<date>.json, results/fdb-flood-latest.{json,dat,png}
(--callgrind: results/fdb-flood-callgrind-latest.json).
Any vnetd build: VNETD_BUILD=DIR (default build/).
"""

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from bench.lib import gnuplot
from tests.kit import harness
from tests.kit import fairness as fk
from tests.kit.vhost_user_client import NET_HDR_LEN, RX_Q, TX_Q

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

MACS = {'a': '52:54:00:f1:00:0a', 'b': '52:54:00:f1:00:0b', 'x': '52:54:00:f1:00:0c',
        'z': '52:54:00:f1:00:0d'}
ORDER = 'abxz'
MODES = ('quiet', 'fixed', 'random', 'storm')
BCAST = 'ff:ff:ff:ff:ff:ff'
WARMUP = 0.5
FDB_SPIN_C = os.path.join(HERE, 'fdb_spin.c')


def log(msg):
    print(msg, flush=True)


def machine_busy():
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def loadavg():
    with open('/proc/loadavg') as f:
        return float(f.read().split()[0])


def build_fdb_spin(outdir):
    cc = os.environ.get('CC', 'cc')
    exe = os.path.join(outdir, 'fdb_spin')
    r = subprocess.run([cc, '-O2', '-Wall', '-o', exe, FDB_SPIN_C], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit('%s %s failed:\n%s' % (cc, FDB_SPIN_C, r.stderr))
    return exe


class MacSpinner:
    """fdb_spin on x's TX queue: `num` chains, each its own buffer of one 60-byte frame to
    z; random=False keeps x's own MAC as every frame's source."""

    def __init__(self, exe, f, dst, src, rate, idle_us, random=True):
        ring, mem = f.rings[TX_Q], f.mem
        self.f, self.ring = f, ring
        self.counter = mem.alloc(8, 8)
        mem.write(self.counter, bytes(8))
        pkt = bytes(NET_HDR_LEN) + fk.bulk_frame(dst, src, 60)
        stride = (len(pkt) + 15) & ~15
        base = mem.alloc(stride * ring.num, 64)
        for i in range(ring.num):
            mem.write(base + i * stride, pkt)
        ring.fill_in_order([(base + i * stride, len(pkt), 0) for i in range(ring.num)])
        off = lambda gpa: gpa - mem.gpa_base  # noqa: E731
        self.argv = [exe, str(mem.fd), str(mem.size), str(off(ring.avail)), str(off(ring.used)),
                     str(ring.num), str(ring.kick_fd), str(off(self.counter)), '0',
                     str(off(base)), str(stride), str(rate), str(idle_us), '1' if random else '0']
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, pass_fds=(self.f.mem.fd, self.ring.kick_fd),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return self

    def count(self):
        return struct.unpack('<Q', self.f.mem.read(self.counter, 8))[0]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


def switch_stats(vd):
    st = json.loads(vd.ctl('stats', '--json').stdout)
    return {p['name']: p for p in st['ports']}


def one_run(tools, exe, spin_exe, wd, mode, args, cg_out=None):
    rwd = tempfile.mkdtemp(dir=wd)
    socks = {n: os.path.join(rwd, '%s.sock' % n) for n in ORDER}
    pin = {'a': 0, 'b': 0, 'x': 1, 'z': 1} if args.workers > 1 else {}
    # x sends from random MACs: port security (on by default) would drop them before the FDB.
    ports = ['socket=%s,switch,mac=%s%s%s' % (socks[n], MACS[n],
                                              ',worker=%d' % pin[n] if n in pin else '',
                                              ',port-security=off' if n == 'x' else '')
             + (',flood-rate=%d' % args.flood_rate if n == 'x' and mode == 'storm' else '')
             for n in ORDER]
    name = {n: 'p%d' % i for i, n in enumerate(ORDER)}
    harness.VNETD, harness.VNETCTL = tools
    if cg_out:
        return cg_run(tools, spin_exe, rwd, socks, ports, mode, args, cg_out)
    vd = harness.Vnetd(harness.NoNs(), ports, rwd, extra=['--workers', str(args.workers)])
    vd.__enter__()
    live = []
    try:
        fb = fk.spin_guest(socks['b'], num=args.rx_ring)
        live.append(fb)
        rx = fk.Spinner(exe, fb, RX_Q, batch=32, idle_us=args.rx_idle_us).start()
        live.append(rx)
        fz = fk.spin_guest(socks['z'], num=256)  # its RX ring: set up, nothing posted
        live.append(fz)
        fa = fk.spin_guest(socks['a'], num=args.ring)
        live.append(fa)
        fx = fk.spin_guest(socks['x'], num=args.x_ring)
        live.append(fx)
        for n, f in (('b', fb), ('z', fz), ('a', fa), ('x', fx)):
            if not fk.teach_switch(f, MACS[n]):
                harness.fail('%s: its broadcast was not taken' % n)
        tx = fk.Spinner(exe, fa, TX_Q, fk.bulk_frame(MACS['b'], MACS['a'], 60), batch=32,
                        idle_us=args.idle_us)
        xs = None
        if mode != 'quiet':
            xs = MacSpinner(spin_exe, fx, BCAST if mode == 'storm' else MACS['z'], MACS['x'],
                            args.x_rate, args.x_idle_us, random=(mode == 'random'))
        tx.start(0)
        live.append(tx)
        if xs:
            xs.start()
            live.append(xs)
        time.sleep(WARMUP)
        pid = vd.proc.pid
        s0 = switch_stats(vd)
        c0, b0, t0 = fk.cpu_seconds(pid), machine_busy(), time.monotonic()
        r0, a0, x0 = rx.count(), tx.count(), xs.count() if xs else 0
        time.sleep(args.seconds)
        r1, a1, x1 = rx.count(), tx.count(), xs.count() if xs else 0
        c1, b1, t1 = fk.cpu_seconds(pid), machine_busy(), time.monotonic()
        s1 = switch_stats(vd)
        load = loadavg()
        dt = t1 - t0
        alive = rx.alive() and tx.alive() and (xs is None or xs.alive())

        def sw(n, k, s):
            return (s[name[n]].get('switch') or {}).get(k)

        def sw_delta(n, k):
            a, b = sw(n, k, s0), sw(n, k, s1)
            return b - a if a is not None and b is not None else None
        return {'mode': mode, 'workers': args.workers, 'seconds': round(dt, 3),
                'pair_fps': (r1 - r0) / dt, 'a_tx_fps': (a1 - a0) / dt,
                'x_fps': (x1 - x0) / dt, 'spinners_alive': alive,
                'x_macs': sw('x', 'macs', s1), 'x_learn_rate_hits': sw_delta('x', 'learn_rate_hits'),
                'x_mac_limit_hits': sw_delta('x', 'mac_limit_hits'),
                'x_storm_dropped': sw_delta('x', 'storm_dropped'),
                'a_flow_cache_misses': sw_delta('a', 'flow_cache_misses'),
                'port_workers': {n: s1[name[n]]['worker'] for n in ORDER},
                'vnetd_cpu_pct': 100.0 * (c1 - c0) / dt,
                'machine_busy_pct': 100.0 * (b1[0] - b0[0]) / max(1, b1[1] - b0[1]),
                'loadavg': load}
    finally:
        fk.close_all(reversed(live))
        vd.stop()


def cg_run(tools, spin_exe, rwd, socks, ports, mode, args, out):
    """x alone under callgrind: instructions per frame it sent (see the docstring)."""
    from bench.lib import dp_callgrind as cg  # bench/: valgrind's counters and annotations
    harness.VNETD, harness.VNETCTL = tools
    vd = harness.Vnetd(harness.NoNs(), ports, rwd, extra=['--workers', str(args.workers),
                                                          '--no-sandbox'],
                       prefix=['valgrind', '--tool=callgrind', '--callgrind-out-file=' + out],
                       start_timeout=120)
    vd.ctl_timeout = 60
    vd.__enter__()
    live = []
    try:
        fs = {n: fk.spin_guest(socks[n], num=256 if n != 'x' else args.x_ring, timeout=60)
              for n in ORDER}
        live += list(fs.values())
        for n in ORDER:
            if not fk.teach_switch(fs[n], MACS[n]):
                harness.fail('%s: its broadcast was not taken' % n)
        xs = MacSpinner(spin_exe, fs['x'], BCAST if mode == 'storm' else MACS['z'], MACS['x'],
                        0, args.x_idle_us, random=(mode == 'random')).start()
        live.append(xs)
        time.sleep(2.0)
        s0 = vd.stats()['p2'][TX_Q]['packets']
        cg.cg_control('-z', vd.proc.pid)
        time.sleep(args.cg_seconds)
        cg.cg_control('-d', vd.proc.pid)
        s1 = vd.stats()['p2'][TX_Q]['packets']
        sw = switch_stats(vd)['p2'].get('switch') or {}
    finally:
        fk.close_all(reversed(live))
        vd.stop()
    dumps = sorted(f for f in glob.glob(out + '.*') if re.search(r'\.\d+$', f))
    total = cg.dump_total(dumps[0])
    # The dump ends the window: frames x sent after it and before s1 are counted, not costed.
    frames = s1 - s0
    top = cg.top_functions(dumps[0], total, False, n=10)
    for f in glob.glob(out + '*'):
        if args.cg_keep:
            shutil.copy2(f, args.cg_keep)
        os.unlink(f)
    return {'mode': mode, 'ir': total, 'x_frames': frames,
            'ir_per_frame': total / frames if frames else None,
            'x_storm_dropped': sw.get('storm_dropped'),
            'top_self_per_frame': [(fn, c / frames) for fn, c in top] if frames else [],
            'loadavg': loadavg()}


def callgrind_main(args, builds, spin, wd):
    res = os.path.join(TOP, 'results')
    rows = []
    try:
        for mode in args.cg_modes.split(','):
            for b, tools in builds.items():
                r = one_run(tools, None, spin, wd, mode, args,
                            cg_out=os.path.join(wd, 'cg-%s-%s.out' % (b, mode)))
                r['build'] = b
                rows.append(r)
                log('%-6s %-6s: %.0f instructions per frame x sent (%d frames, storm drops %s)'
                    % (b, mode, r['ir_per_frame'] or 0, r['x_frames'], r['x_storm_dropped']))
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    log('\n| build | x sends | frames | Ir / frame |\n|---|---|---:|---:|')
    for r in rows:
        log('| %s | %s | %d | %.0f |' % (r['build'], r['mode'], r['x_frames'], r['ir_per_frame']))
    for r in rows:
        if r['mode'] == 'storm':
            log('\n%s storm, self cost per frame:' % r['build'])
            for fn, c in r['top_self_per_frame']:
                log('  %8.1f  %s' % (c, fn))
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    doc = {'date': stamp, 'args': vars(args), 'runs': rows, 'cpus': os.cpu_count(),
           'vnetd': {'commit': subprocess.run(['git', '-C', TOP, 'describe', '--always',
                                               '--dirty'], capture_output=True,
                                              text=True).stdout.strip() or '?',
                     'before': args.before}}
    out = args.out or os.path.join(res, 'fdb-flood-callgrind-latest.json')
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    log('wrote %s' % out)


def chart(summary, builds, png, dat):
    with open(dat, 'w') as f:
        f.write('# mode ' + ' '.join('%s_kfps %s_min %s_max' % (b, b, b) for b in builds) + '\n')
        for m in MODES:
            row = ['"%s"' % m]
            for b in builds:
                s = summary[b][m]
                row += ['%g' % (s['median'] / 1e3), '%g' % (s['min'] / 1e3),
                        '%g' % (s['max'] / 1e3)]
            f.write(' '.join(row) + '\n')
    colors = ['#4060c0', '#c06040']
    plots = ['"%s" using %d:%d:%d%s title "%s" lc rgb "%s"' % (
        dat, 2 + 3 * i, 3 + 3 * i, 4 + 3 * i, ':xtic(1)' if i == 0 else '', b, colors[i % 2])
        for i, b in enumerate(builds)]
    gp = ['set terminal pngcairo size 760,440 font "sans,10"', 'set output "%s"' % png,
          'set title "vnetd switch: pair a -> b frames/s received (thousands) while port x '
          'sends\\nquiet: nothing; fixed: one source MAC; random: a new source MAC per frame; '
          'storm: broadcasts over its flood-rate (median, bars = min-max)"',
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.8', 'set grid ytics',
          'set key top right', 'set yrange [0:*]', 'set xlabel "what port x sends"',
          'plot ' + ', '.join(plots)]
    return gnuplot.run(gp, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=4.0)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--workers', type=int, default=2)
    ap.add_argument('--x-rate', type=int, default=100000,
                    help='frames/s port x sends (0: as fast as vnetd takes them)')
    ap.add_argument('--x-ring', type=int, default=1024)
    ap.add_argument('--flood-rate', type=int, default=1000,
                    help="storm mode: x's flood-rate= (floods a second)")
    ap.add_argument('--x-idle-us', type=int, default=100)
    ap.add_argument('--ring', type=int, default=1024, help="a's TX ring")
    ap.add_argument('--rx-ring', type=int, default=1024, help="b's RX ring (2 KiB buffers)")
    ap.add_argument('--idle-us', type=int, default=50)
    ap.add_argument('--rx-idle-us', type=int, default=50)
    ap.add_argument('--before', help='also run the vnetd build in this directory')
    ap.add_argument('--callgrind', action='store_true',
                    help="instructions per frame of x's fixed and storm traffic (valgrind)")
    ap.add_argument('--cg-seconds', type=float, default=8.0)
    ap.add_argument('--cg-modes', default='fixed,storm', help='--callgrind: these modes')
    ap.add_argument('--cg-keep', help='--callgrind: copy the dumps into this directory')
    ap.add_argument('--out')
    args = ap.parse_args()
    wd = tempfile.mkdtemp(prefix='vnetd-bench-fdb-flood-')
    builds = {}
    harness.private_binaries(wd)
    builds['this'] = (harness.VNETD, harness.VNETCTL)
    if args.before:
        bwd = os.path.join(wd, 'before')
        os.makedirs(bwd)
        for exe in ('vnetd', 'vnetctl'):
            shutil.copy2(os.path.join(args.before, exe), os.path.join(bwd, exe))
        builds['before'] = (os.path.join(bwd, 'vnetd'), os.path.join(bwd, 'vnetctl'))
    spin = build_fdb_spin(wd)
    if args.callgrind:
        return callgrind_main(args, builds, spin, wd)
    exe = fk.build_ringspin(wd)
    load0 = loadavg()
    runs = []
    try:
        for rep in range(args.reps):
            for mode in MODES:
                for b, tools in builds.items():
                    r = one_run(tools, exe, spin, wd, mode, args)
                    r['build'] = b
                    log('rep %d, %-6s %-6s: pair %8.0f frames/s (a sent %8.0f), x %8.0f/s, '
                        'x MACs %s, refused %s, a cache misses %s, vnetd CPU %3.0f%%, busy '
                        '%3.0f%%, load %.2f%s' % (
                            rep + 1, b, mode, r['pair_fps'], r['a_tx_fps'], r['x_fps'],
                            r['x_macs'], r['x_learn_rate_hits'], r['a_flow_cache_misses'],
                            r['vnetd_cpu_pct'], r['machine_busy_pct'], r['loadavg'],
                            '' if r['spinners_alive'] else ' (a spinner died)'))
                    runs.append(r)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    summary = {}
    for b in builds:
        summary[b] = {}
        for m in MODES:
            rs = [r for r in runs if r['build'] == b and r['mode'] == m]
            v = [r['pair_fps'] for r in rs]
            summary[b][m] = {'runs': len(rs), 'median': statistics.median(v), 'min': min(v),
                             'max': max(v),
                             'x_fps': statistics.median(r['x_fps'] for r in rs),
                             'cpu_pct': statistics.median(r['vnetd_cpu_pct'] for r in rs),
                             'busy_pct': statistics.median(r['machine_busy_pct'] for r in rs),
                             'loadavg': statistics.median(r['loadavg'] for r in rs)}
        q = summary[b]['quiet']['median']
        for m in MODES:
            summary[b][m]['ratio_to_quiet'] = summary[b][m]['median'] / q if q else None
    log('\n%-7s %-7s %4s %12s %12s %12s %8s %10s %9s %6s %5s' % (
        'build', 'x sends', 'runs', 'pair fps', 'min', 'max', '/quiet', 'x fps', 'vnetd CPU',
        'busy', 'load'))
    for b in builds:
        for m in MODES:
            s = summary[b][m]
            log('%-7s %-7s %4d %12.0f %12.0f %12.0f %8.2f %10.0f %8.0f%% %5.0f%% %5.2f' % (
                b, m, s['runs'], s['median'], s['min'], s['max'], s['ratio_to_quiet'],
                s['x_fps'], s['cpu_pct'], s['busy_pct'], s['loadavg']))
    ratio = summary['this']['random']['ratio_to_quiet']
    storm = summary['this']['storm']['ratio_to_quiet']
    log('pair with x flooding broadcasts under flood-rate=%d / pair alone (medians): %.2f '
        '(wanted >= 0.90); x storm drops in the last window: %s' % (
            args.flood_rate, storm, [r.get('x_storm_dropped') for r in runs
                                     if r['mode'] == 'storm'][-1:]))
    log('pair with x sending random source MACs / pair alone (medians): %.2f (wanted >= 0.90)%s; '
        '%d CPUs, --workers %d, load average %.2f at start, %.2f at end' % (
            ratio, ''.join('; before: %.2f' % summary['before']['random']['ratio_to_quiet']
                           for _ in [0] if 'before' in summary),
            os.cpu_count(), args.workers, load0, loadavg()))
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = args.out or os.path.join(res, 'fdb-flood-%s.json' % stamp)
    doc = {'date': stamp, 'args': vars(args), 'macs': MACS, 'order': ORDER, 'runs': runs,
           'summary': summary, 'ratio_random_over_quiet': ratio,
           'ratio_storm_over_quiet': storm, 'cpus': os.cpu_count(),
           'loadavg_start': load0, 'loadavg_end': loadavg(),
           'vnetd': {'commit': subprocess.run(['git', '-C', TOP, 'describe', '--always',
                                               '--dirty'], capture_output=True,
                                              text=True).stdout.strip() or '?',
                     'build': harness.BUILD, 'before': args.before}}
    for path in (out, os.path.join(res, 'fdb-flood-latest.json')):
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
    png = os.path.join(res, 'fdb-flood-latest.png')
    if shutil.which('gnuplot') and chart(summary, list(builds), png,
                                         os.path.join(res, 'fdb-flood-latest.dat')):
        log('chart: %s' % png)
    log('json: %s' % out)


if __name__ == '__main__':
    main()
