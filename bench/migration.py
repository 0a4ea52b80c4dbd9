#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Live migration of a 512 MB QEMU TCG guest: downtime and total time, on vnetd (dirty logging on
during pre-copy) vs QEMU's own userspace virtio-net on a tap (no vnetd, nothing to log), each
idle and with a host->guest download running (vnetd then writes guest pages).

    python3 bench/migration.py [--qemu system|sid|PATH] [--tap-memfd] [--reps N] [--mem 512M]
                               [--rate BYTES_PER_S] [--port-extra ,KEY=VALUE...]
    VNETD_BUILD=/path/to/build python3 bench/migration.py

--tap-memfd gives the tap guest the RAM a vhost-user guest must have (a shared memfd): on QEMU 11
that, not vnetd, doubles the total time (docs/migration.md, Figures); make bench-migration uses it.

One guest per backend migrates back and forth between two sides (two vnetd tap ports, or two
taps) on one bridge in a private namespace; workloads alternate idle / download, so runs of
both kinds interleave. Each migration: query-migrate's total-time, downtime, setup-time, RAM
transferred and dirty-sync rounds, plus the load average. Outputs a table,
results/migration-<date>.json, results/migration-latest.{json,md,png}. Needs root.
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from bench.lib import common
from bench.lib.common import TOP, log
from tests.kit import harness
from tests.kit.harness import Netns, QemuGuest, Vnetd, guest_addr, make_blob
from tests.kit.migration import (IncomingQemu, Qmp, bridge_taps, migrate, migration_qemu,
                                 qemu_args, start_throttled_server)
from bench.lib import gnuplot

MAC = '52:54:00:82:00:02'
SETUPS = ('vnetd', 'qemu-tap')
LOADS = ('idle', 'download', 'continuous')
CRASH_WORDS = ('invalid opcode', 'BUG:', 'Oops', 'general protection', 'Kernel panic')


def git_state():
    return common.git(TOP, 'describe', '--always', '--dirty')


def one_setup(setup, kit, wd, ns, reps, mem, rate, blob_mb, continuous=False, qemu=None,
              port_extra='', tap_memfd=False):
    """Migrate one guest 2 * reps times (idle, download, idle, ...); returns the runs (qemu:
    the QEMU binary, None for qemu-system-x86_64 on PATH; port_extra: more keys for vnetd's
    ports, e.g. ',migrate-state=off'; tap_memfd: qemu-tap's guest RAM a shared memfd, as a
    vhost-user guest's must be)."""
    socks = [os.path.join(wd, 's%d.sock' % i) for i in range(2)]
    taps = ['btap0', 'btap1'] if setup == 'vnetd' else ['qtap0', 'qtap1']
    if setup == 'qemu-tap':
        for t in taps:
            ns.add_tap(t)
    runs = []

    def guest(side, incoming=None):
        opts = dict(mac=MAC, device_opts=',vectors=0', mem=mem, qemu=qemu,
                    log_path=os.path.join(wd, 'qemu.log'),
                    extra_args=qemu_args(wd, 'q%d' % side, incoming))
        if setup == 'vnetd':
            opts['vhost_socket'] = socks[side]
        else:
            # Same features as the vnetd port (offloads off), QEMU inside the namespace.
            opts.update(tap=taps[side], netns=ns.name,
                        device_opts=',vectors=0,csum=off,guest_csum=off,gso=off,'
                                    'guest_tso4=off,guest_tso6=off,host_tso4=off,host_tso6=off')
            if tap_memfd:
                opts['extra_args'] = opts['extra_args'] + [
                    '-object', 'memory-backend-memfd,id=mem,size=%s,share=on' % mem,
                    '-numa', 'node,memdev=mem']
        cls = IncomingQemu if incoming else QemuGuest
        return cls(harness.guest_kit(), **opts)

    vd = None
    if setup == 'vnetd':
        vd = Vnetd(ns, ['socket=%s,tap=%s,mac=52:54:00:82:01:0%d,offloads=off%s' % (s, t, i, port_extra)
                        for i, (s, t) in enumerate(zip(socks, taps))], wd).__enter__()
    try:
        bridge_taps(ns, taps, '10.82.0.1/24')
        side = 0
        cur = guest(0).__enter__()
        guest_addr(cur, '10.82.0.2')
        cur.run('ping -c 2 -W 10 10.82.0.1', timeout=120, check=True)
        if continuous:
            cur.run('(while true; do wget -q -O /dev/null http://10.82.0.1:8002/blob; done) '
                    '> /dev/null 2>&1 &', check=True)
        for i in range(2 * reps):
            load = 'continuous' if continuous else LOADS[i % 2]
            other = 1 - side
            uri = 'unix:' + os.path.join(wd, 'mig%d.sock' % i)
            nxt = guest(other, incoming=uri).__enter__()
            q = Qmp(os.path.join(wd, 'q%d.qmp' % side))
            Qmp(os.path.join(wd, 'q%d.qmp' % other)).close()
            if load == 'download' or (continuous and i == 0):
                cur.run('(wget -q -O /dev/null http://10.82.0.1:8002/blob) > /dev/null 2>&1 &',
                        check=True)
                time.sleep(2)
            seen_log = []
            la = os.getloadavg()[0]
            info = migrate(q, uri, during=lambda _i: seen_log.append(
                vd.port_info()['p%d' % side]['dirty_log']) if vd else None)
            dropped = vd.port_info()['p%d' % side]['dirty_log_dropped'] if vd else None
            q.close()
            cur.kill()
            nxt.adopt(os.path.join(wd, 'q%d.qmp' % other))
            try:
                rc, _ = nxt.run('ping -c 1 -W 10 10.82.0.1', timeout=120)
            except harness.GuestError:
                rc = None
            crashed = rc is None or any(w in nxt.output for w in CRASH_WORDS)
            ram = info.get('ram', {})
            run = {'setup': setup, 'load': load, 'from': side, 'to': other,
                   'total_ms': info.get('total-time'), 'downtime_ms': info.get('downtime'),
                   'setup_ms': info.get('setup-time'),
                   'transferred_mib': round(ram.get('transferred', 0) / 2**20, 1),
                   'dirty_sync_count': ram.get('dirty-sync-count'),
                   'dirty_log_seen': any(seen_log) if vd else None,
                   'dirty_log_dropped_pages': dropped,
                   'ping_after': rc == 0, 'guest_crashed': crashed, 'loadavg_before': la,
                   'loadavg_after': os.getloadavg()[0]}
            log('  %-8s %-8s %d->%d total %5s ms  downtime %4s ms  %6.1f MiB  syncs %s%s' % (
                setup, load, side, other, run['total_ms'], run['downtime_ms'],
                run['transferred_mib'], run['dirty_sync_count'],
                '' if run['ping_after'] else '  (no ping after!)'))
            runs.append(run)
            if crashed:
                log('  the guest crashed after this migration (console tail in qemu.log); '
                    'stopping this setup')
                nxt.kill()
                break
            if not continuous:
                nxt.run('killall wget 2>/dev/null; true')
            cur, side = nxt, other
        cur.kill()
    finally:
        if vd:
            vd.__exit__(None, None, None)
        ns.run('ip link del br0', check=False)
        for t in taps:
            ns.run('ip link del %s' % t, check=False)
    return runs


def summarize(runs):
    out = {}
    for s in SETUPS:
        for ld in LOADS:
            rs = [r for r in runs if r['setup'] == s and r['load'] == ld]
            if not rs:
                continue
            e = {'n': len(rs), 'guest_crashes': sum(1 for r in rs if r['guest_crashed'])}
            for k in ('total_ms', 'downtime_ms', 'transferred_mib'):
                v = [r[k] for r in rs if r[k] is not None]
                e[k] = {'median': statistics.median(v), 'min': min(v), 'max': max(v)}
            out['%s/%s' % (s, ld)] = e
    for ld in LOADS:
        a, b = out.get('vnetd/' + ld), out.get('qemu-tap/' + ld)
        if a and b:
            out['ratio/' + ld] = {k: round(a[k]['median'] / b[k]['median'], 2)
                                  if b[k]['median'] else None
                                  for k in ('total_ms', 'downtime_ms')}
    return out


def table(summary):
    lines = ['| setup | load | n | total ms median [min..max] | downtime ms median [min..max] '
             '| MiB sent |', '|---|---|---:|---:|---:|---:|']
    for key, e in summary.items():
        if key.startswith('ratio/'):
            continue
        s, ld = key.split('/')
        t, d, m = e['total_ms'], e['downtime_ms'], e['transferred_mib']
        lines.append('| %s | %s | %d | %g [%g..%g] | %g [%g..%g] | %g |' % (
            s, ld, e['n'], t['median'], t['min'], t['max'], d['median'], d['min'], d['max'],
            m['median']))
    for ld in LOADS:
        r = summary.get('ratio/' + ld)
        if r:
            lines.append('| vnetd / qemu-tap | %s | | %sx | %sx | |' % (ld, r['total_ms'],
                                                                     r['downtime_ms']))
    return '\n'.join(lines)


def chart(summary, png, dat):
    keys = [k for k in summary if not k.startswith('ratio/')]
    with open(dat, 'w') as f:
        f.write('# case total total_min total_max down down_min down_max\n')
        for k in keys:
            t, d = summary[k]['total_ms'], summary[k]['downtime_ms']
            f.write('"%s" %g %g %g %g %g %g\n' % (k, t['median'], t['min'], t['max'],
                                                  d['median'], d['min'], d['max']))
    gp = ['set terminal pngcairo size 1100,420 font "sans,10"', 'set output "%s"' % png,
          'set multiplot layout 1,2 title "live migration of a 512 MB TCG guest; median, bars = '
          'min-max"', 'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.8', 'set grid ytics',
          'set key off', 'set xtics nomirror rotate by -20', 'set yrange [0:*]',
          'set title "total migration time (ms)"',
          'plot "%s" using 2:3:4:xtic(1) lc rgb "#4060c0"' % dat,
          'set title "downtime (ms)"', 'plot "%s" using 5:6:7:xtic(1) lc rgb "#c04040"' % dat,
          'unset multiplot']
    return gnuplot.run(gp, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--reps', type=int, default=3, help='migrations per setup and load')
    ap.add_argument('--mem', default='512M')
    ap.add_argument('--rate', type=float, default=4e6, help='download bytes/s during migration')
    ap.add_argument('--setups', default=','.join(SETUPS))
    ap.add_argument('--continuous', action='store_true',
                    help='stress: one download loop runs across every migration')
    ap.add_argument('--out', help='JSON output (default results/migration-<date>.json)')
    ap.add_argument('--qemu', default='system',
                    help="'system' (qemu-system-x86_64 on PATH: Debian 12's 7.2, which loses "
                    "guest pages in TCG migrations by itself, docs/migration.md), 'sid' (sid's "
                    "QEMU 11 from guest/qemu.sh) or a path")
    ap.add_argument('--tap-memfd', action='store_true',
                    help='qemu-tap\'s guest RAM a shared memfd as well (vnetd\'s must be one)')
    ap.add_argument('--port-extra', default='',
                    help='more keys for vnetd\'s ports, e.g. ",migrate-state=off"')
    args = ap.parse_args()
    common.require('bench-migration', root=True, why_root='network namespace, taps',
                   exes=['qemu-system-x86_64'], built=(), status=common.SKIP)
    harness.require_root_and_tun()
    kit = harness.guest_kit()
    wd = harness.workdir('bench-migration')
    harness.private_binaries(wd)
    qemu = None if args.qemu == 'system' else args.qemu
    if args.qemu == 'sid':
        qemu = migration_qemu('nothing to run')
        if not qemu:
            sys.exit('bench-migration: --qemu sid: no QEMU >= 10 (guest/qemu.sh)')
    blob = os.path.join(wd, 'blob')
    make_blob(blob, 64)
    now = datetime.datetime.now()
    meta = {'date': now.isoformat(timespec='seconds'), 'vnetd': git_state(),
            'qemu': subprocess.run([qemu or 'qemu-system-x86_64', '--version'],
                                   capture_output=True,
                                   text=True).stdout.splitlines()[0],
            'mem': args.mem, 'reps': args.reps, 'download_rate_bytes_s': args.rate,
            'cpus': os.cpu_count(), 'loadavg_start': os.getloadavg(),
            'method': 'query-migrate total-time/downtime (QEMU defaults: downtime-limit 300 ms, '
                      'unlimited bandwidth on a unix socket); one guest per setup migrates '
                      'back and forth, idle and download runs alternate'}
    runs = []
    with Netns('vnetd-bench-mig') as ns:
        srv = start_throttled_server(ns, blob, '10.82.0.1', 8002, args.rate)
        try:
            ns.run('ip link add br0 type bridge', check=False)
            ns.run('ip link del br0', check=False)
            for s in args.setups.split(','):
                log('== %s' % s)
                runs += one_setup(s, kit, wd, ns, args.reps, args.mem, args.rate, 64,
                                  args.continuous, qemu, args.port_extra, args.tap_memfd)
        finally:
            srv.kill()
    meta['loadavg_end'] = os.getloadavg()
    summary = summarize(runs)
    md = table(summary)
    log('\n' + md)
    out = args.out or os.path.join(TOP, 'results', 'migration-%s.json' % now.strftime('%Y%m%d-%H%M%S'))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    doc = {'meta': meta, 'summary': summary, 'runs': runs}
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    stem = os.path.join(TOP, 'results', 'migration-latest') if not args.out else out[:-5]
    if not args.out:
        with open(stem + '.json', 'w') as f:
            json.dump(doc, f, indent=1)
    with open(stem + '.md', 'w') as f:
        f.write(md + '\n')
    if shutil.which('gnuplot'):
        chart(summary, stem + '.png', stem + '.dat')
    log('wrote %s' % out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
