#!/usr/bin/env python3
"""Stall-guard settings side by side on one guest: which rule ends AGGRESSIVE's holds, and at what cost.

One guest (--guest uml-1g: bookworm's UML 6.1 with 1 GB; qemu-full: sid's QEMU 11 TCG with the
vhost-user test device) on a vnetd tap port in a private network namespace. Per variant the
guest's own `ethtool -C` sets none or AGGRESSIVE (5000 us / 50 frames) and `vnetctl stall-guard`
sets the guard; bulk TCP (iperf3) both ways, optionally paced UDP, variants interleaved per rep.
Prints a table per direction (median Gbit/s and guest IRQ/s, their ratios to "none", early
notifications by reason per second), writes results/guard-sweep-<date>.json.

  --variants none,noguard,default,bytes=0,bytes=262144,auto ...
    none       ethtool 0/0 0/1 (guard on, nothing held)
    noguard    AGGRESSIVE, stall-guard off
    default    AGGRESSIVE, stall-guard on with vnetd's defaults
    K=V[+K=V]  AGGRESSIVE, stall-guard on with `vnetctl stall-guard p0 on K V ...`
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402
import bench_coal  # noqa: E402
import harness  # noqa: E402
from harness import Netns, UmlGuest, Vnetd  # noqa: E402

NONE, AGGR = (0, 0, 0, 1), (5000, 50, 5000, 50)


def log(msg):
    print(msg, flush=True)


def guard_args(variant, defaults):
    """vnetctl stall-guard arguments of a variant (after 'p0')."""
    if variant == 'noguard':
        return ['off']
    args = ['on'] + ['%s' % x for kv in defaults for x in kv]
    if variant not in ('none', 'default'):
        for kv in variant.split('+'):
            k, v = kv.split('=', 1)
            args += [k, v]
    return args


def apply(g, vd, variant, defaults):
    vd.ctl('stall-guard', 'p0', *guard_args(variant, defaults))
    v = NONE if variant == 'none' else AGGR
    rc, out = g.run('ethtool -C eth0 rx-usecs %d rx-frames %d tx-usecs %d tx-frames %d' % v,
                    timeout=60)
    st = B.queue_stats(vd)
    if rc != 0 or (st['rx']['max_usecs'], st['rx']['max_packets']) != v[:2]:
        log('  WARNING: %s: ethtool rc %d %s' % (variant, rc, out.strip()))


def make_guest(kind, wd, sock):
    if kind == 'uml-1g':
        return UmlGuest(harness.uml_kit(), sock, mem='1G',
                        log_path=os.path.join(wd, 'uml.log')), 'virtio-uml'
    return B.make_guest(kind, wd, sock)


def early(m, q):
    s = m.get(q, {})
    return [s.get(k, 0) / m['wall_s'] for k in ('early_idle', 'early_ring', 'early_bytes')]


def table(runs, variants, directions):
    out = []
    for d in directions + (['paced-' + x for x in directions] if any(
            r['kind'] == 'paced' for r in runs) else []):
        kind, dd = ('paced', d[6:]) if d.startswith('paced-') else ('bulk', d)
        rows = {v: [r for r in runs if r['variant'] == v and r['kind'] == kind
                    and r['direction'] == dd and 'gbps' in r] for v in variants}
        base = rows.get('none') or []
        bg = statistics.median([r['gbps'] for r in base]) if base else None
        bi = statistics.median([r['irq_per_s'] for r in base]) if base else None
        out.append('')
        out.append('%s %s' % (kind, dd))
        out.append('%-22s %9s %6s %9s %7s %6s  %-24s %-24s' % (
            'variant', 'Gbit/s', 'ratio', 'IRQ/s', 'IRQ cut', 'reps', 'rx early i/r/b per s',
            'tx early i/r/b per s'))
        for v in variants:
            rs = rows[v]
            if not rs:
                continue
            g = statistics.median([r['gbps'] for r in rs])
            i = statistics.median([r['irq_per_s'] for r in rs])
            e = {q: [statistics.median(x) for x in zip(*[early(r, q) for r in rs])]
                 for q in ('rx', 'tx')}
            out.append('%-22s %9.3f %6.2f %9.0f %7.1f%% %6d  %-24s %-24s' % (
                v, g, g / bg if bg else 0, i, 100 * (1 - i / bi) if bi else 0, len(rs),
                '/'.join('%.0f' % x for x in e['rx']), '/'.join('%.0f' % x for x in e['tx'])))
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--guest', default='qemu-full', choices=['uml-1g', 'qemu-full'])
    ap.add_argument('--variants', default='none,noguard,default,bytes=0')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--duration', type=int, default=5)
    ap.add_argument('--directions', default='tx,rx')
    ap.add_argument('--paced', action='store_true', help='also paced UDP both ways')
    ap.add_argument('--out', default=os.path.join(TOP, 'results'))
    args = ap.parse_args()
    variants = args.variants.split(',')
    directions = args.directions.split(',')
    wd = harness.workdir('guard-sweep')
    sock = os.path.join(wd, 'g.sock')
    runs, t0 = [], time.time()
    load0 = os.getloadavg()
    with Netns(B.NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        ns.run('ip addr add %s/24 dev vtap0 && ip link set vtap0 up' % B.HOST_IP)
        guest, pat = make_guest(args.guest, wd, sock)
        with guest as g:
            B.guest_net_setup(g)
            subj = B.Subject(args.guest, g, pat, vd)
            for rep in range(1, args.reps + 1):
                for v in variants:
                    apply(g, vd, v, [])
                    for d in directions:
                        res, m = subj.measure(lambda: B.run_iperf(ns, d, args.duration))
                        m.update(res)
                        runs.append(dict(variant=v, kind='bulk', direction=d, rep=rep, **m))
                        log('  %-20s %s rep %d: %s rx-early %s tx-early %s' % (
                            v, d, rep, B.short(m), early(m, 'rx'), early(m, 'tx')))
                        if 'error' in res:
                            B.check_reachable(subj, ns, v)
                            B.restart_guest_servers(g)
                    if args.paced:
                        for d in directions:
                            res, m = subj.measure(lambda: bench_coal.run_paced(B, ns, d,
                                                                               args.duration))
                            m.update(res)
                            runs.append(dict(variant=v, kind='paced', direction=d, rep=rep, **m))
                            log('  %-20s paced %s rep %d: %.0f irq/s' % (v, d, rep,
                                                                        m['irq_per_s']))
    meta = {'date': datetime.datetime.now().isoformat(timespec='seconds'), 'guest': args.guest,
            'loadavg_start': load0, 'loadavg_end': os.getloadavg(),
            'elapsed_s': round(time.time() - t0, 1), 'args': vars(args),
            'commit': B.subprocess.run(['git', '-C', TOP, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}
    txt = table(runs, variants, directions)
    print(txt)
    print('\nload average %s at start, %s at end; %.0f s' % (
        ' '.join('%.2f' % x for x in load0), ' '.join('%.2f' % x for x in os.getloadavg()),
        meta['elapsed_s']))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'guard-sweep-%s-%s.json' % (
        args.guest, datetime.datetime.now().strftime('%Y%m%d-%H%M%S')))
    with open(path, 'w') as f:
        json.dump({'meta': meta, 'runs': runs, 'table': txt}, f, indent=1)
    log('wrote %s' % path)


if __name__ == '__main__':
    main()
