#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UML guests' ~10 ms ping-pong tail: sockperf UDP ping-pong into a UML guest on a vnetd tap port
with no coalescing, and with a tiny host-side RX hold (`vnetctl coalesce p0 rx-usecs N`),
interleaved. Without a hold about one request in ten waits ~10 ms (the guest's tick); a hold of
20 µs removes those waits. QEMU guests show no such tail (docs/guests.md).

    python3 bench/uml_rr_tail.py [--suite sid|bookworm] [--reps 3] [--seconds 3]
Writes results/uml-rr-tail-<suite>-<date>.json (or --out). Needs root.
"""

import argparse
import datetime
import json
import os
import statistics

from bench.lib import common
from bench.lib import measure as B
from tests.kit import harness
from tests.kit.harness import Netns, UmlGuest, Vnetd, host_addr

VARIANTS = (('off', ('rx-usecs', '0', 'rx-frames', '0')),
            ('rx20', ('rx-usecs', '20', 'rx-frames', '64')),
            ('rx100', ('rx-usecs', '100', 'rx-frames', '64')))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--suite', default='sid', help='guest kernel: sid (UML 7.2) or bookworm (6.1)')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=3)
    ap.add_argument('--out')
    a = ap.parse_args()
    common.require('uml_rr_tail', root=True, tun=True, exes=['ip', 'sockperf'])
    wd = harness.workdir('uml-rr-tail')
    harness.private_binaries(wd)
    sock = os.path.join(wd, 'u.sock')
    load0 = os.getloadavg()
    runs = []
    with Netns(B.NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', B.HOST_IP)
        with UmlGuest(harness.uml_kit(a.suite), sock, mem='1G',
                      log_path=os.path.join(wd, 'uml.log')) as g:
            B.guest_net_setup(g)
            kernel = g.run('uname -r')[1].strip()
            for rep in range(1, a.reps + 1):
                for name, args in VARIANTS:
                    vd.ctl('coalesce', 'p0', *args)
                    s0 = vd.stats()['p0'][0]['notifications']
                    r = B.run_sockperf(ns, a.seconds)
                    r.update(variant=name, rep=rep,
                             rx_notifications=vd.stats()['p0'][0]['notifications'] - s0,
                             loadavg=os.getloadavg()[0])
                    runs.append(r)
                    common.log('%-6s rep %d: p50 %s p99 %s p99.9 %s us, %s round trips, %d RX '
                               'notifications' % (name, rep, r.get('rtt_p50_us'), r.get('rtt_p99_us'),
                                                  r.get('rtt_p999_us'), r.get('observations'),
                                                  r['rx_notifications']))
    summary = {}
    for name, _ in VARIANTS:
        rs = [r for r in runs if r['variant'] == name and 'rtt_p99_us' in r]
        if rs:
            summary[name] = {k: statistics.median(r[k] for r in rs)
                             for k in ('rtt_p50_us', 'rtt_p99_us', 'observations')}
    for name, m in summary.items():
        common.log('%-6s medians: p50 %.0f us, p99 %.0f us, %d round trips in %d s'
                   % (name, m['rtt_p50_us'], m['rtt_p99_us'], m['observations'], a.seconds))
    now = datetime.datetime.now()
    out = a.out or os.path.join(common.RESULTS, 'uml-rr-tail-%s-%s.json'
                                % (a.suite, now.strftime('%Y%m%d-%H%M%S')))
    with open(out, 'w') as f:
        json.dump({'date': now.isoformat(timespec='seconds'), 'guest_kernel': kernel,
                   'seconds': a.seconds, 'loadavg_start': load0, 'variants': dict(VARIANTS),
                   'runs': runs, 'summary': summary}, f, indent=1)
    common.log('wrote %s' % out)


if __name__ == '__main__':
    main()
