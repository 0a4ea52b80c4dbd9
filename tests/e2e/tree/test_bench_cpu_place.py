#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmarks' CPU placement probe (no vnetd, no root): bench/paced --mode cpu-distance
prints one sample per interval (a positive round trip, time stamps in order) and a closing line
with the CPUs, whether it got SCHED_FIFO and how many samples it took and lost, and refuses one
CPU twice; SIGTERM ends it early with what it has (cpu_place.Sampler returns it only when both
threads ran SCHED_FIFO); bench/lib/cpu_place.py takes the run's near round trip from the 20th
percentile (a rare ~25 ns same-core sample does not make every other sample far), calls a run
far when more than a fifth of its samples are 2.5x that, and keeps a run others' work
disturbed marked as such. No timing is asserted: the samples' values are the host's."""

import json
import os
import subprocess
import sys
import time

from bench.lib import cpu_place
from tests.kit.harness import BUILD, check

PACED = os.path.join(BUILD, 'bench', 'paced', 'paced')


def parse(out):
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    return [x for x in lines if 'round_trip_ns' in x], [x for x in lines if 'samples' in x]


def main():
    if not os.access(PACED, os.X_OK):
        print('SKIP: %s is not built' % PACED)
        sys.exit(77)
    if len(os.sched_getaffinity(0)) < 2:
        print('SKIP: the probe needs two CPUs (this process may use %d)'
              % len(os.sched_getaffinity(0)))
        sys.exit(77)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    r = subprocess.run([PACED, '--mode', 'cpu-distance', '--cpu', str(cpus[0]), '--peer-cpu',
                        str(cpus[1]), '--duration', '0.3', '--interval', '0.1', '--rounds', '100'],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, 'paced --mode cpu-distance exits 0 (%s)' % r.stderr.strip()[:200])
    samples, tail = parse(r.stdout)
    check(len(tail) == 1 and tail[0]['cpus'] == cpus, 'one closing line naming CPUs %s' % cpus)
    # 4 slots (0, 0.1, 0.2, 0.3 s); a slot missed by more than an interval is not caught up
    check(tail[0]['samples'] == len(samples) and 3 <= tail[0]['samples'] + tail[0]['lost'] <= 4,
          '4 samples over 0.3 s every 0.1 s, each printed or counted lost (%d, %d lost, fifo %s)'
          % (tail[0]['samples'], tail[0]['lost'], tail[0]['fifo']))
    r = subprocess.run([PACED, '--mode', 'cpu-distance', '--cpu', str(cpus[0]), '--peer-cpu',
                        str(cpus[0]), '--duration', '0.1'], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0 and 'different CPUs' in r.stderr,
          'one CPU twice is refused (exit %d)' % r.returncode)
    check(all(s['round_trip_ns'] > 0 for s in samples) and
          [s['t_s'] for s in samples] == sorted(s['t_s'] for s in samples),
          'every round trip positive, time stamps in order: %s'
          % ' '.join('%.0f' % s['round_trip_ns'] for s in samples))

    # SIGTERM ends a long probe early, with a closing line (cpu_place.Sampler.stop())
    smp = cpu_place.Sampler(PACED, 60.0, cpus=cpus, rounds=100)
    time.sleep(1.0)
    t0 = time.monotonic()
    got = smp.stop()
    check(time.monotonic() - t0 < 5 and smp.p.returncode == 0 and smp.fifo is not None,
          'Sampler.stop() ends a 60 s probe early (%.2f s), exit 0, closing line read'
          % (time.monotonic() - t0))
    check(len(got) == (smp.taken if smp.fifo else 0),
          'it returns the samples taken before (%d of %s; fifo %s: none without SCHED_FIFO)'
          % (len(got), smp.taken, smp.fifo))
    h = smp.health()
    check(h['exit'] == 0 and h['samples'] == smp.taken and h['lost'] == smp.lost,
          'health() reports the probe\'s own count: %s' % h)

    # classification (synthetic samples): near ~63 ns, a rare 25 ns one, far ~300 ns
    runs = [{'cpu_round_trip_ns': [63, 65, 62, 25, 64]},
            {'cpu_round_trip_ns': [300, 310, 305, 63]},
            {'cpu_round_trip_ns': [64, 66, 290]},
            {'cpu_round_trip_ns': [320, 330], 'contended': True},
            {}]
    near = cpu_place.nearest(runs, seed=[61, 66])
    check(60 <= near <= 66, 'near = the 20th percentile, not the 25 ns outlier (%s)' % near)
    for r in runs:
        cpu_place.mark(r, near)
    check((runs[0]['cpus'], runs[0]['contended']) == ('near', False),
          'a run with one 25 ns sample is near and undisturbed')
    check((runs[1]['cpus'], runs[1]['contended'], runs[1]['disturbed_by']) ==
          ('far', True, 'far CPUs'), 'a run mostly at ~300 ns is far: disturbed by far CPUs')
    check((runs[2]['cpus'], runs[2]['contended']) == ('far', True),
          'one far sample of three (> a fifth) makes a run far')
    check(runs[3]['disturbed_by'] == 'others' and runs[3]['contended'],
          'a run others\' work disturbed stays disturbed by others')
    check(runs[4]['cpus'] is None and not runs[4]['contended'],
          'a run without samples is not classified')
    cpu_place.mark(runs[1], 400)
    check((runs[1]['cpus'], runs[1]['contended'], runs[1]['disturbed_by']) ==
          ('near', False, None), 'marked again against another near value, it is re-decided')
    r = {'cpu_round_trip_ns': [300, 310], 'disturbed': False}
    cpu_place.mark(r, near, 'disturbed')
    check(r['disturbed'] and r['disturbed_by'] == 'far CPUs',
          'bench-efficiency\'s flag ("disturbed") is set the same way')
    print('PASS')


if __name__ == '__main__':
    main()
