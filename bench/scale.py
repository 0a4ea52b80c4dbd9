#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-scale: what idle ports cost vnetd — CPU per second and resident memory per port.

For each port count (default 1, 64, 256, 1024) a fresh vnetd with that many switch ports (no
namespace, no guest kernel) gets one Python frontend per port (tests/kit/vhost_user_client.py:
features negotiated, a memory table, RX/TX/control rings set up and enabled, RX buffers posted)
that then stays idle. Measured over --seconds of idleness: vnetd's CPU time (utime + stime from
/proc/PID/stat) per wall-clock second, its RSS (VmRSS, split into RssAnon — vnetd's own memory
— and RssShmem — the guests' ring pages it has mapped) and context switches; bytes per port =
(RSS(N) - RSS(first count)) / (N - first count). Also: the time from starting vnetd to "ready:",
and from there to all frontends set up. Machine load (loadavg, busy % during the idle window) is
recorded next to each row: the idle CPU of vnetd is an absolute number, the machine's load only
explains noise.

Outputs: a table; results/scale-<date>.json and results/scale-latest.json, and with gnuplot
results/scale-latest.png (--name NAME for another prefix: make bench-scale also runs
--workers 2 as scale-workers2). Any vnetd build: VNETD_BUILD=DIR (default build/).
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import tempfile
import time

from bench.lib import common
from bench.lib.common import TOP, log, machine_busy
from tests.kit import harness
from tests.kit.vhost_user_client import VirtioNetFrontend
from bench.lib import gnuplot

CLK = os.sysconf('SC_CLK_TCK')


def proc_cpu(pid):
    with open('/proc/%d/stat' % pid) as f:
        v = f.read().rsplit(')', 1)[1].split()
    return (int(v[11]) + int(v[12])) / CLK  # utime, stime


def proc_status(pid):
    out = {}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            k, _, v = line.partition(':')
            out[k] = v.split()
    return {'rss_kb': int(out['VmRSS'][0]), 'anon_kb': int(out['RssAnon'][0]),
            'shmem_kb': int(out['RssShmem'][0]),
            'ctxsw': int(out['voluntary_ctxt_switches'][0]) +
            int(out['nonvoluntary_ctxt_switches'][0]),
            'threads': int(out['Threads'][0])}


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def run_count(n, seconds, wd, extra):
    pwd = os.path.join(wd, 'n%d' % n)
    os.makedirs(pwd)
    ports = ['socket=%s,switch' % os.path.join(pwd, 'p%d.sock' % i) for i in range(n)]
    t0 = time.monotonic()
    vd = harness.Vnetd(harness.NoNs(), ports, pwd, extra=extra)
    # A thousand --port options exceed no argv limit (about 60 bytes each).
    vd.__enter__()
    t_ready = time.monotonic() - t0
    pid = vd.proc.pid
    base = proc_status(pid)
    fes = []
    try:
        t1 = time.monotonic()
        for i in range(n):
            fe = VirtioNetFrontend(os.path.join(pwd, 'p%d.sock' % i), queue_size=64,
                                   mem_size=256 << 10, timeout=30.0)
            fe.setup()
            fe.post_rx(16)
            fes.append(fe)
        t_connect = time.monotonic() - t1
        time.sleep(1.0)  # let the last setups settle
        c0, b0, w0 = proc_cpu(pid), machine_busy(), time.monotonic()
        s0 = proc_status(pid)
        time.sleep(seconds)
        c1, b1, w1 = proc_cpu(pid), machine_busy(), time.monotonic()
        s1 = proc_status(pid)
        info = vd.port_info()
        connected = sum(1 for p in info.values() if p['connected'])
        with open('/proc/loadavg') as f:
            load = f.read().split()[0]
        return {'ports': n, 'connected': connected,
                'cpu_per_s': (c1 - c0) / (w1 - w0),
                'ctxsw_per_s': (s1['ctxsw'] - s0['ctxsw']) / (w1 - w0),
                'rss_kb_unconnected': base['rss_kb'], 'rss_kb': s1['rss_kb'],
                'anon_kb': s1['anon_kb'], 'shmem_kb': s1['shmem_kb'],
                'threads': s1['threads'], 'ready_s': t_ready, 'connect_s': t_connect,
                'machine_busy_pct': common.busy_pct(b0, b1),
                'loadavg': float(load), 'idle_seconds': w1 - w0}
    finally:
        for fe in fes:
            fe.close()
        rc = vd.stop()
        if rc != 0:
            log('vnetd exited with %s; log:\n%s' % (rc, vd.log_tail()))


def chart(rows, png, dat):
    with open(dat, 'w') as f:
        f.write('# ports cpu_ms_per_s rss_mb bytes_per_port\n')
        for r in rows:
            f.write('%d %g %g %g\n' % (r['ports'], r['cpu_per_s'] * 1e3, r['rss_kb'] / 1024.0,
                                       r.get('bytes_per_port') or 0))
    gp = ['set terminal pngcairo size 1100,420 font "sans,10"', 'set output "%s"' % png,
          'set multiplot layout 1,2 title "vnetd: idle connected ports (switch backend, '
          'Python frontends with rings set up)"',
          'set grid', 'set key off', 'set logscale x 2', 'set xlabel "ports"',
          'set title "vnetd CPU while idle (ms per second)"', 'set yrange [0:*]',
          'plot "%s" using 1:2 with linespoints pt 7 lc rgb "#c04040"' % dat,
          'set title "vnetd RSS (MiB)"',
          'plot "%s" using 1:3 with linespoints pt 7 lc rgb "#4060c0"' % dat,
          'unset multiplot']
    return gnuplot.run(gp, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--counts', default='1,64,256,1024')
    ap.add_argument('--seconds', type=float, default=10.0, help='idle window per count')
    ap.add_argument('--out', help='JSON path (default results/scale-<date>.json)')
    ap.add_argument('--extra', default='', help='extra vnetd arguments, e.g. "--workers 2"')
    ap.add_argument('--name', default='scale',
                    help='results/NAME-<date>.json, NAME-latest.* (e.g. scale-workers2)')
    args = ap.parse_args()
    common.require('bench-scale')
    counts = [int(c) for c in args.counts.split(',')]
    raise_nofile(16 * max(counts) + 256)
    wd = tempfile.mkdtemp(prefix='vnetd-scale-')
    harness.private_binaries(wd)
    rows = []
    try:
        for n in counts:
            log('%d ports ...' % n)
            rows.append(run_count(n, args.seconds, wd, args.extra.split()))
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    b = rows[0]
    for r in rows:
        d = r['ports'] - b['ports']
        r['bytes_per_port'] = (r['rss_kb'] - b['rss_kb']) * 1024.0 / d if d else None
        r['anon_bytes_per_port'] = (r['anon_kb'] - b['anon_kb']) * 1024.0 / d if d else None
        r['shmem_bytes_per_port'] = (r['shmem_kb'] - b['shmem_kb']) * 1024.0 / d if d else None
    def per(v):
        return '%.0f' % v if v else '-'

    hdr = ('ports', 'connected', 'CPU ms/s', 'ctxsw/s', 'RSS MiB', 'B/port', 'anon B/p',
           'guest B/p', 'ready s', 'connect s', 'busy %', 'load')
    log('\n%7s %9s %9s %8s %8s %8s %8s %9s %8s %9s %7s %5s' % hdr)
    for r in rows:
        log('%7d %9d %9.3f %8.1f %8.1f %8s %8s %9s %8.2f %9.2f %7.1f %5.2f' % (
            r['ports'], r['connected'], r['cpu_per_s'] * 1e3, r['ctxsw_per_s'],
            r['rss_kb'] / 1024.0, per(r['bytes_per_port']), per(r['anon_bytes_per_port']),
            per(r['shmem_bytes_per_port']), r['ready_s'], r['connect_s'],
            r['machine_busy_pct'], r['loadavg']))
    log('(B/port: RSS growth per port over the first row; anon: vnetd\'s own memory; guest: '
        'pages of guest memory (rings) mapped from the frontends)')
    res = os.path.join(TOP, 'results')
    os.makedirs(res, exist_ok=True)
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = args.out or os.path.join(res, '%s-%s.json' % (args.name, stamp))
    doc = {'date': stamp, 'extra_args': args.extra, 'idle_seconds': args.seconds, 'rows': rows,
           'cpus': os.cpu_count()}
    for path in (out, os.path.join(res, '%s-latest.json' % args.name)):
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
    png = os.path.join(res, '%s-latest.png' % args.name)
    if shutil.which('gnuplot') and chart(rows, png, os.path.join(res, '%s-latest.dat' % args.name)):
        log('chart: %s' % png)
    log('json: %s' % out)


if __name__ == '__main__':
    main()
