#!/usr/bin/env python3
"""A/B: a well-behaved UML guest's bulk TCP throughput on two vnetd builds, interleaved in one run.

    python3 bench/ab_bulk.py OLD_BUILD_DIR NEW_BUILD_DIR [--reps 3] [--seconds 5]

Each rep starts, per build, vnetd on a tap in a private namespace and a User-Mode Linux guest
(the e2e guest kit), then runs iperf3 both ways (TX = guest -> host, RX = host -> guest) and
records Gbit/s and vnetd's CPU share (utime+stime from /proc). Builds alternate within each rep,
so slow drifts of the machine's load hit both alike; medians and the new/old ratio are printed
and written to results/ab-bulk-latest.json with the load average.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))

import harness  # noqa: E402
from harness import Netns, UmlGuest, Vnetd, uml_kit, require_root_and_tun, workdir  # noqa: E402

HOST_IP, GUEST_IP = '10.93.0.1', '10.93.0.2'


def cpu_seconds(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def iperf(ns, seconds, reverse):
    argv = ['iperf3', '-c', GUEST_IP, '-t', str(seconds), '-J', '--connect-timeout', '5000']
    if reverse:
        argv.append('-R')
    r = ns.run(argv, check=False, timeout=seconds + 30)
    try:
        return json.loads(r.stdout)['end']['sum_received']['bits_per_second'] / 1e9
    except (ValueError, KeyError):
        return None


def one(build, kit, seconds, tag):
    harness.VNETD = os.path.join(build, 'vnetd')
    wd = workdir('ab-bulk-%s' % tag)
    sock = os.path.join(wd, 'p0.sock')
    out = {}
    with Netns('vnetd-ab') as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        ns.run('ip addr add %s/24 dev vtap0 && ip link set vtap0 up' % HOST_IP)
        with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
            g.run('ip link set eth0 up && ip addr add %s/24 dev eth0' % GUEST_IP, check=True)
            g.run('iperf3 -s -D', check=True)
            time.sleep(0.5)
            for name, rev in (('tx', True), ('rx', False)):
                c0, t0 = cpu_seconds(vd.proc.pid), time.monotonic()
                gbit = iperf(ns, seconds, rev)
                out[name] = {'gbit': gbit,
                             'vnetd_cpu': (cpu_seconds(vd.proc.pid) - c0) / (time.monotonic() - t0)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('old')
    ap.add_argument('new')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=5)
    args = ap.parse_args()
    require_root_and_tun()
    kit = uml_kit()
    load0 = os.getloadavg()
    runs = {'old': [], 'new': []}
    for rep in range(args.reps):
        for which in ('old', 'new'):
            r = one(os.path.abspath(getattr(args, which)), kit, args.seconds, which)
            runs[which].append(r)
            print('rep %d %-3s TX %s Gbit/s (vnetd %.0f %%), RX %s Gbit/s (vnetd %.0f %%)'
                  % (rep + 1, which, r['tx']['gbit'], 100 * r['tx']['vnetd_cpu'],
                     r['rx']['gbit'], 100 * r['rx']['vnetd_cpu']), flush=True)
    summary = {}
    print('\n| direction | old Gbit/s | new Gbit/s | new/old | old vnetd CPU | new vnetd CPU |')
    print('|---|---|---|---|---|---|')
    for d in ('tx', 'rx'):
        med = {w: statistics.median(x[d]['gbit'] for x in runs[w] if x[d]['gbit'])
               for w in runs}
        cpu = {w: statistics.median(x[d]['vnetd_cpu'] for x in runs[w]) for w in runs}
        summary[d] = {'old_gbit': med['old'], 'new_gbit': med['new'],
                      'ratio': med['new'] / med['old'], 'old_cpu': cpu['old'], 'new_cpu': cpu['new']}
        print('| %s | %.2f | %.2f | %.2f | %.0f %% | %.0f %% |' % (
            d.upper(), med['old'], med['new'], med['new'] / med['old'], 100 * cpu['old'],
            100 * cpu['new']))
    load1 = os.getloadavg()
    print('\nmedians of %d interleaved reps of %d s; load average %.2f at start, %.2f at end'
          % (args.reps, args.seconds, load0[0], load1[0]))
    res = {'old': args.old, 'new': args.new, 'runs': runs, 'summary': summary,
           'load_start': load0, 'load_end': load1, 'date': time.strftime('%Y-%m-%dT%H:%M:%S')}
    path = os.path.join(TOP, 'results', 'ab-bulk-latest.json')
    with open(path, 'w') as f:
        json.dump(res, f, indent=1)
    print('wrote ' + path)


if __name__ == '__main__':
    main()
