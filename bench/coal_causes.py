#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-coal-causes: where does AGGRESSIVE coalescing lose bulk TCP throughput? Causes split by experiment.

A User-Mode Linux guest on a vnetd tap port (private network namespace) sets, with its own
`ethtool -C eth0 ...`, one of:
  none        RX 0/0,        TX 0/1          (every packet notified)
  aggressive  RX 5000 µs/50, TX 5000 µs/50
  tx-only     RX 0/0,        TX 5000 µs/50   (TX completions held alone)
  rx-only     RX 5000 µs/50, TX 0/1          (RX held alone: for guest TX, the peer's ACKs)
and runs iperf3 bulk TCP both ways (TX = guest -> host), once per guest memory size (default
256M and 1G; the guest keeps Linux's default TCP sysctls, which scale with memory). Profiles
are interleaved within each rep. Prints a table (median and range of the reps, throughput as a
ratio to "none" of the same memory and direction), writes results/coal-causes-<date>.json,
results/coal-causes-latest.{json,md,png}.
"""

import argparse
import datetime
import json
import os
import statistics
import time

from bench.lib import common
from bench.lib.common import TOP, log
from bench.lib import measure as B
from bench.lib import gnuplot
from tests.kit import harness
from tests.kit.harness import Netns, UmlGuest, Vnetd, host_addr

# name -> (rx_usecs, rx_frames, tx_usecs, tx_frames)
PROFILES = {
    'none': (0, 0, 0, 1),
    'aggressive': (5000, 50, 5000, 50),
    'tx-only': (0, 0, 5000, 50),
    'rx-only': (5000, 50, 0, 1),
}


def sysctls(g):
    keys = ('net.ipv4.tcp_wmem', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_mem',
            'net.ipv4.tcp_limit_output_bytes', 'net.core.wmem_max')
    out = {}
    for k in keys:
        rc, v = g.run('sysctl -n %s 2>/dev/null || cat /proc/sys/%s' % (k, k.replace('.', '/')))
        out[k] = v.strip()
    return out


def set_profile(g, vd, name):
    ru, rf, tu, tf = PROFILES[name]
    cmd = 'ethtool -C eth0 rx-usecs %d rx-frames %d tx-usecs %d tx-frames %d' % (ru, rf, tu, tf)
    rc, out = g.run(cmd, timeout=60)
    st = B.queue_stats(vd)
    got = {q: (st[q]['max_usecs'], st[q]['max_packets']) for q in ('rx', 'tx')}
    if rc != 0 or got['rx'] != (ru, rf) or got['tx'] != (tu, tf):
        log('  WARNING: %s -> rc %d %s; vnetd holds %s' % (cmd, rc, out.strip(), got))


def run_mem(args, kit, wd, mem, runs, info):
    sock = os.path.join(wd, 'uml-%s.sock' % mem)
    with Netns(B.NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', B.HOST_IP)
        with UmlGuest(kit, sock, mem=mem, log_path=os.path.join(wd, 'uml-%s.log' % mem)) as g:
            B.guest_net_setup(g)
            info['sysctls_' + mem] = sysctls(g)
            log('guest mem=%s booted; TCP sysctls: %s' % (mem, info['sysctls_' + mem]))
            subj = B.Subject('uml-' + mem, g, 'virtio-uml', vd)
            for rep in range(1, args.reps + 1):
                for prof in args.profiles:
                    set_profile(g, vd, prof)
                    for d in args.directions:
                        res, m = subj.measure(lambda: B.run_iperf(ns, d, args.duration))
                        if 'error' in res:
                            log('  %s %s %s rep %d: %s' % (mem, prof, d, rep, res['error']))
                            B.restart_guest_servers(g)
                            continue
                        m.update(res)
                        runs.append(dict(mem=mem, profile=prof, direction=d, rep=rep, **m))
                        log('  mem %-4s %-10s %s rep %d: %.3f Gbit/s, %.0f irq/s, retrans %s'
                            % (mem, prof, d, rep, res['gbps'], m['irq_per_s'],
                               res.get('retransmits')))


def summarize(runs, mems, profiles, directions):
    rows = []
    for mem in mems:
        for d in directions:
            base = [r['gbps'] for r in runs if r['mem'] == mem and r['direction'] == d and
                    r['profile'] == 'none']
            b = statistics.median(base) if base else None
            for prof in profiles:
                rs = [r for r in runs if r['mem'] == mem and r['direction'] == d and
                      r['profile'] == prof]
                if not rs:
                    continue
                g = [r['gbps'] for r in rs]
                irq = [r['irq_per_s'] for r in rs]
                rows.append(dict(mem=mem, direction=d, profile=prof, gbps=statistics.median(g),
                                 gbps_min=min(g), gbps_max=max(g), irq_per_s=statistics.median(irq),
                                 retained=statistics.median(g) / b if b else None, n=len(rs)))
    return rows


def table(rows):
    lines = ['| guest mem | direction | profile | Gbit/s (median [min..max]) | vs none | '
             'guest IRQ/s | runs |', '|---|---|---|---|---:|---:|---:|']
    for r in rows:
        lines.append('| %s | %s | %s | %.3f [%.3f..%.3f] | %s | %.0f | %d |' % (
            r['mem'], r['direction'], r['profile'], r['gbps'], r['gbps_min'], r['gbps_max'],
            '%.2f' % r['retained'] if r['retained'] is not None else '-', r['irq_per_s'], r['n']))
    return '\n'.join(lines)


def chart(rows, mems, profiles, directions, png, dat):
    with open(dat, 'w') as f:
        f.write('# label ' + ' '.join(profiles) + '\n')
        for mem in mems:
            for d in directions:
                vals = []
                for p in profiles:
                    r = next((x for x in rows if x['mem'] == mem and x['direction'] == d and
                              x['profile'] == p), None)
                    vals.append('%.4f' % r['retained'] if r and r['retained'] is not None else '0')
                f.write('"%s %s" %s\n' % (mem, d.upper(), ' '.join(vals)))
    plots = ', '.join('"%s" using %d:xtic(1) title "%s"' % (dat, i + 2, p)
                      for i, p in enumerate(profiles))
    gnuplot.run(['set terminal pngcairo size 900,480', 'set output "%s"' % png,
                 'set title "Bulk TCP throughput vs no coalescing (UML guest on vnetd)"',
                 'set style data histograms', 'set style fill solid 0.8 border -1',
                 'set yrange [0:1.3]', 'set ylabel "throughput / none"', 'set grid ytics',
                 'set key outside right', 'plot ' + plots], log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mems', default='256M,1G')
    ap.add_argument('--profiles', default='none,aggressive,tx-only,rx-only')
    ap.add_argument('--direction', default='both', choices=('tx', 'rx', 'both'))
    ap.add_argument('--duration', type=int, default=5)
    ap.add_argument('--reps', type=int, default=3)
    args = ap.parse_args()
    args.profiles = [p for p in args.profiles.split(',') if p]
    for p in args.profiles:
        if p not in PROFILES:
            ap.error('unknown profile %r' % p)
    args.directions = ['tx', 'rx'] if args.direction == 'both' else [args.direction]
    mems = [m for m in args.mems.split(',') if m]
    B.check_prereqs(argparse.Namespace(peer=False, uml=True))
    kit = harness.uml_kit()
    wd = harness.workdir('coal-causes')
    harness.private_binaries(wd)
    now = datetime.datetime.now()
    load0 = common.load_check('coal_causes')
    t0 = time.monotonic()
    runs, info = [], {}
    for mem in mems:
        run_mem(args, kit, wd, mem, runs, info)
    rows = summarize(runs, mems, args.profiles, args.directions)
    load1 = os.getloadavg()
    md = table(rows) + '\n\nMeasured %s, %d CPUs, load average %.2f at start, %.2f at end; ' \
        '%d s iperf3 runs x %d interleaved reps; took %.0f s.\n' % (
            now.isoformat(timespec='seconds'), os.cpu_count(), load0[0], load1[0],
            args.duration, args.reps, time.monotonic() - t0)
    resdir = os.path.join(TOP, 'results')
    os.makedirs(resdir, exist_ok=True)
    result = {'meta': {'date': now.isoformat(timespec='seconds'), 'loadavg_start': load0,
                       'loadavg_end': load1, 'args': vars(args), 'profiles': PROFILES},
              'info': info, 'summary': rows, 'runs': runs}
    for path in (os.path.join(resdir, 'coal-causes-%s.json' % now.strftime('%Y%m%d-%H%M%S')),
                 os.path.join(resdir, 'coal-causes-latest.json')):
        with open(path, 'w') as f:
            json.dump(result, f, indent=1, default=str)
    with open(os.path.join(resdir, 'coal-causes-latest.md'), 'w') as f:
        f.write(md)
    chart(rows, mems, args.profiles, args.directions,
          os.path.join(resdir, 'coal-causes-latest.png'),
          os.path.join(resdir, 'coal-causes-latest.dat'))
    log('\n' + md)


if __name__ == '__main__':
    main()
