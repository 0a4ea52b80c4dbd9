# SPDX-License-Identifier: MIT
"""bench/workers.py --queue-pairs: one switch port's 2 queue pairs on 2 workers vs on 1 worker.

Two switch ports p0, p1, each queues=2, driven by DPDK testpmd virtio-user (queues=2, --rxq=2
--txq=2): a first burst on every TX queue (start tx_first), then mac forwarding, so a frame
received on queue i of one port goes out on queue i of the other (unicast, from the port's own
MAC: the switch forwards, never floods). vnetd --workers 2 in both cases; the ports'
queue-workers= places the pairs: "1 worker" queue-workers=0+0 (both pairs of both ports on
worker 0; worker 1 idle), "2 workers" queue-workers=0+1 (pair i of both ports on worker i: a
frame for pair i is copied directly on worker i). The frontend keeps the control queue to
itself, so a frame goes to the sender's pair (docs/scale.md). Per run, over --seconds after a
warm-up: frames/s the two testpmd ports received, and vnetd's CPU (all threads) per frame.
Runs alternate 1, 2, 1, 2, ... (--reps each); reported: the medians, and the ratio 2 / 1.
testpmd takes two lcores (-l 0-1) of its own: on a 2-core machine it competes with vnetd's
threads, and the ratio says more about the machine than about vnetd. No root.
Outputs: results/workers-qpairs-<date>.json and results/workers-qpairs-latest.json.
"""

import datetime
import json
import os
import statistics
import tempfile
import time

from . import common
from . import dp_procs as P
from .common import TOP, log

MAC0, MAC1 = '02:00:00:00:25:01', '02:00:00:00:25:02'
CASES = {1: '0+0', 2: '0+1'}
WARMUP = 1.0


def one_run(wd, workers, seconds, seq):
    """One vnetd + testpmd: {'workers', 'fps', 'vnetd_cpu_pct', 'ns_per_frame', ...}."""
    rwd = tempfile.mkdtemp(dir=wd)
    socks = [os.path.join(rwd, 'q%d.sock' % i) for i in range(2)]
    ports = ['socket=%s,switch,mac=%s,queues=2,queue-workers=%s' % (s, m, CASES[workers])
             for s, m in zip(socks, (MAC0, MAC1))]
    vd = common.Vnetd(common.harness.VNETD, common.harness.VNETCTL, ports, rwd, cpu='0-1',
                      extra=['--workers', '2'], janitor=P.JANITOR)
    pfx = 'vnetd-bench-qp-%d-%d' % (os.getpid(), seq)
    fe = None
    try:
        fe = P.Testpmd('virtio-user', P.eal_args(pfx, 0, [
            'net_virtio_user0,path=%s,queues=2,mac=%s' % (socks[0], MAC0),
            'net_virtio_user1,path=%s,queues=2,mac=%s' % (socks[1], MAC1)], mem_mb=512),
            ['--forward-mode=mac', '--rxq=2', '--txq=2', '--total-num-mbufs=16384',
             '--eth-peer=0,%s' % MAC1, '--eth-peer=1,%s' % MAC0],
            os.path.join(rwd, 'testpmd.log'))
        fe.wait_ready(120)
        info = json.loads(vd.ctl('raw', '{"cmd":"ports"}').stdout)['ports']
        placed = {p['name']: p.get('queue_workers') for p in info}
        fe.cmd('start tx_first 8')
        time.sleep(WARMUP)
        rx0 = sum(p['rx_packets'] for p in fe.port_stats().values())
        t0, c0, m0 = time.monotonic(), P.proc_ticks(vd.pid), common.machine_busy()
        time.sleep(seconds)
        rx1 = sum(p['rx_packets'] for p in fe.port_stats().values())
        t1, c1, m1 = time.monotonic(), P.proc_ticks(vd.pid), common.machine_busy()
        fe.cmd('stop')
    finally:
        if fe:
            fe.quit()
        vd.stop()
    frames, dt = rx1 - rx0, t1 - t0
    cpu_s = (c1 - c0) / P.CLK_TCK
    return {'workers': workers, 'queue_workers': placed, 'seconds': dt, 'frames': frames,
            'fps': frames / dt if dt else 0.0, 'vnetd_cpu_pct': 100.0 * cpu_s / dt if dt else 0.0,
            'ns_per_frame': 1e9 * cpu_s / frames if frames else None,
            'machine_busy_pct': common.busy_pct(m0, m1)}


def main(args):
    """The --queue-pairs benchmark (args: bench/workers.py's)."""
    common.require('bench-workers --queue-pairs', exes=('dpdk-testpmd',))
    wd = tempfile.mkdtemp(prefix='vnetd-bench-qpairs-')
    runs = []
    try:
        for rep in range(args.reps):
            for workers in (1, 2):
                r = one_run(wd, workers, args.seconds, len(runs))
                log('rep %d, pairs on %d worker(s) %s: %.0f frames/s, vnetd CPU %.0f%%, %s ns '
                    'CPU/frame, machine busy %.0f%%'
                    % (rep + 1, workers, r['queue_workers'], r['fps'], r['vnetd_cpu_pct'],
                       '%.0f' % r['ns_per_frame'] if r['ns_per_frame'] else '-',
                       r['machine_busy_pct']))
                runs.append(r)
    finally:
        P.JANITOR.clean()
    summary = {}
    for w in (1, 2):
        rs = [r for r in runs if r['workers'] == w]
        summary[w] = {'median_fps': statistics.median(r['fps'] for r in rs),
                      'min_fps': min(r['fps'] for r in rs), 'max_fps': max(r['fps'] for r in rs),
                      'cpu_pct': statistics.median(r['vnetd_cpu_pct'] for r in rs),
                      'ns_per_frame': statistics.median(r['ns_per_frame'] or 0 for r in rs),
                      'busy_pct': statistics.median(r['machine_busy_pct'] for r in rs)}
    ratio = (summary[2]['median_fps'] / summary[1]['median_fps']
             if summary[1]['median_fps'] else None)
    log('\n%10s %14s %14s %14s %10s %12s' % ('pairs on', 'median fps', 'min', 'max',
                                              'vnetd CPU', 'ns CPU/frame'))
    for w in (1, 2):
        s = summary[w]
        log('%8d w %14.0f %14.0f %14.0f %9.0f%% %12.0f' % (w, s['median_fps'], s['min_fps'],
                                                          s['max_fps'], s['cpu_pct'],
                                                          s['ns_per_frame']))
    log('2 workers / 1 worker (medians): %s  (%d CPUs; load %s)' % (
        '%.2f' % ratio if ratio else '-', os.cpu_count(), open('/proc/loadavg').read().split()[0]))
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = args.out or os.path.join(res, 'workers-qpairs-%s.json' % stamp)
    doc = {'date': stamp, 'seconds': args.seconds, 'runs': runs, 'summary': summary,
           'ratio_2_over_1': ratio, 'cpus': os.cpu_count()}
    for path in (out, os.path.join(res, 'workers-qpairs-latest.json')):
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
    log('json: %s' % out)
