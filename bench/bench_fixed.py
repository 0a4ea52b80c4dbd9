#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fixed-load diagnosis of where CPU goes: `python3 bench/bench_fixed.py --diag`.

The QEMU 11 full-device guest at a fixed rate (default 250 Mbit/s TCP), profiles none and
AGGRESSIVE interleaved, and per run, beside the fixed-load rows' numbers (bench/lib/fixed.py),
vnetd's early-notification reasons per queue and its system calls (perf stat tracepoints:
timerfd_settime = timer arms, epoll_wait = wake-ups, write = notifications to the call fds,
read = kicks and timer expiries), into results/fixed-diag-<date>.json.
"""

import argparse
import datetime
import json
import os
import shutil

from bench.lib import common
from bench.lib import measure as B
from bench.lib.common import TOP, log
from bench.lib.fixed import FIXED_KINDS, measure_fixed, short
from tests.kit import harness
from tests.kit.harness import Netns, QemuGuest, Vnetd, host_addr


def diag(args):
    common.require('bench_fixed', root=True, tun=True, exes=['ip', 'iperf3'])
    wd = harness.workdir('fixed-diag')
    harness.private_binaries(wd)
    load0 = os.getloadavg()
    log('fixed-diag: load average %.2f %.2f %.2f' % load0)
    sock = os.path.join(wd, 'q.sock')
    runs = []
    with Netns(B.NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', B.HOST_IP)
        with QemuGuest(harness.guest_kit(), vhost_socket=sock, qemu=harness.new_qemu('sid'),
                       full_device=True, num_vqs=3,
                       log_path=os.path.join(wd, 'q.log')) as g:
            log('QEMU full-device guest booted in %.1f s' % g.boot_time)
            B.guest_net_setup(g)
            subj = B.Subject('qemu-full-vnetd', g, r'virtio[0-9]', vd)
            for rep in range(1, args.reps + 1):
                for prof in args.profiles.split(','):
                    B.apply_guest_profile(g, vd, prof)
                    for extra in args.vnetctl:
                        vd.ctl(*extra.split())
                    for d in args.directions.split(','):
                        m = measure_fixed(subj, ns, args.kind, d, args.rate, args.duration,
                                          perf=True)
                        runs.append(dict(profile=prof, direction=d, rep=rep, rate=args.rate, **m))
                        log('  %-10s %s %s rep %d: %s' % (prof, args.kind, d, rep, short(m)))
    out = os.path.join(TOP, 'results', 'fixed-diag-%s.json' % (args.name or
                                                              datetime.datetime.now().strftime('%Y%m%d-%H%M%S')))
    with open(out, 'w') as f:
        json.dump({'meta': {'date': datetime.datetime.now().isoformat(timespec='seconds'),
                            'loadavg_start': load0, 'loadavg_end': os.getloadavg(),
                            'args': vars(args), 'commit': common.git(TOP, 'describe', '--always',
                                                                     '--dirty')},
                   'runs': runs}, f, indent=1)
    log('wrote %s' % out)
    shutil.rmtree(wd, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--diag', action='store_true', required=True)
    ap.add_argument('--rate', default='250M')
    ap.add_argument('--kind', default='tcp', choices=FIXED_KINDS)
    ap.add_argument('--duration', type=int, default=6)
    ap.add_argument('--reps', type=int, default=2)
    ap.add_argument('--profiles', default='none,aggressive')
    ap.add_argument('--directions', default='tx,rx')
    ap.add_argument('--vnetctl', action='append', default=[],
                    help='extra vnetctl command after each profile, e.g. "stall-guard p0 off"')
    ap.add_argument('--name', help='results/fixed-diag-NAME.json')
    diag(ap.parse_args())


if __name__ == '__main__':
    main()
