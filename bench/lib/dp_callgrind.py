# SPDX-License-Identifier: MIT
"""Deterministic figure for bench/datapath.py: vnetd's user-space instructions per packet (callgrind)."""

# vnetd runs under `valgrind --tool=callgrind` with its traffic source connected but idle. The
# window: read vnetd's counters, zero callgrind's (`callgrind_control -z`), start the virtio-user
# source, stop it once about N packets went in, let vnetd drain its rings (1 s idle), dump
# (`callgrind_control -d`), read the counters again. Ir of the dump / packets vnetd took from the
# guests' TX rings in between: start-up, negotiation, vnetctl requests and shutdown fall outside
# the window, and vnetd is ~50x slower under valgrind, so what waits in its TX rings is all the
# source has (with flowgen: full rings; with the switch path's default macswap source: the
# loop's frames, dp_stacks.SOURCE), full batches run to run; the source's rings have QUEUE_SIZE
# entries so that an RX ring never runs dry within a batch. Kernel instructions (syscalls) are
# not counted.

import glob
import os
import re
import statistics
import subprocess
import time

from . import dp_procs as P
from .dp_procs import BenchError
from .dp_stacks import SOURCE, Stack

QUEUE_SIZE = 1024


def cg_control(opt, pid):
    r = subprocess.run(['callgrind_control', opt, str(pid)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or 'OK' not in r.stdout:
        raise BenchError('callgrind_control %s %d: %s%s' % (opt, pid, r.stdout, r.stderr))


def dump_total(path):
    with open(path) as f:
        for line in f:
            m = re.match(r'(?:summary|totals):\s*(\d+)', line)
            if m:
                return int(m.group(1))
    raise BenchError('no totals in ' + path)


def top_functions(path, total, inclusive, n=14):
    """[(function, Ir)] by self (or inclusive) cost, merged over source files (inlined headers);
    entries at ~100 % of the window are call-stack frames open when the counters were zeroed.
    Inclusive costs count a recursive path (queue run -> switch -> other port's queue run) twice:
    they go to the JSON only."""
    r = subprocess.run(['callgrind_annotate', '--inclusive=' + ('yes' if inclusive else 'no'),
                        '--threshold=100', '--auto=no', path], capture_output=True, text=True,
                       timeout=120)
    costs = {}
    for line in r.stdout.splitlines():
        m = re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?:\s+\[.*\])?$', line)
        if not m or 'PROGRAM TOTALS' in line:
            continue
        ir = int(m.group(1).replace(',', ''))
        fn = m.group(2).split(':', 1)[-1]
        if ir >= 0.995 * total:
            continue
        costs[fn] = costs.get(fn, 0) + ir
    return sorted(costs.items(), key=lambda kv: -kv[1])[:n]


def one_run(kind, size, n_packets, wd, tools, k, layout='split'):
    out = os.path.join(wd, 'callgrind-%s-%s-%d.out' % (kind, layout, k))
    for f in glob.glob(out + '*'):
        os.unlink(f)
    st = Stack(kind, 'vnetd-poll0', size, wd, tools, 'callgrind %s %s' % (kind, layout),
               queue_size=QUEUE_SIZE, layout=layout,
               wrapper=['valgrind', '--tool=callgrind', '--callgrind-out-file=' + out])
    try:
        pid = st.vd.pid
        s0, d0 = st.vd.stats(), st.counts()[0]
        cg_control('-z', pid)
        t0 = time.monotonic()
        st.fe.cmd(st.start_cmd())
        while True:
            time.sleep(0.25)
            if st.counts()[1] >= n_packets:
                break
            if time.monotonic() - t0 > 600:
                raise BenchError('callgrind %s: %d packets not reached in 600 s' % (kind, n_packets))
        st.fe.cmd('stop')
        time.sleep(1.0)
        cg_control('-d', pid)
        t1 = time.monotonic()
        s1, d1 = st.vd.stats(), st.counts()[0]
    finally:
        st.close()
    dumps = sorted(f for f in glob.glob(out + '.*') if re.search(r'\.\d+$', f))
    if not dumps:
        raise BenchError('callgrind wrote no dump for ' + out)
    total = dump_total(dumps[0])
    tx = P.queue_sum(s1, 'tx') - P.queue_sum(s0, 'tx')
    if tx <= 0:
        raise BenchError('callgrind %s: vnetd forwarded nothing' % kind)
    return {'ir': total, 'tx_packets': tx, 'delivered': int(d1 - d0), 'ir_per_packet': total / tx,
            'window_s': round(t1 - t0, 2), 'dump': dumps[0]}


def measure(kind, size, n_packets, runs, wd, tools, layout='split'):
    """callgrind's figure for one path and ring layout (dp_stacks.LAYOUTS): `runs` runs."""
    res = [one_run(kind, size, n_packets, wd, tools, k, layout) for k in range(runs)]
    per = [r['ir_per_packet'] for r in res]
    last = res[-1]
    summary = {'kind': kind, 'layout': layout, 'size': size, 'packets_target': n_packets,
               'source': SOURCE['switch'] if kind == 'switch' else 'txonly', 'runs': res,
               'ir_per_packet_median': statistics.median(per), 'ir_per_packet_min': min(per),
               'ir_per_packet_max': max(per),
               'spread_pct': 100 * (max(per) - min(per)) / statistics.median(per),
               'top_self': top_functions(last['dump'], last['ir'], False),
               'top_inclusive': top_functions(last['dump'], last['ir'], True),
               'top_packets': last['tx_packets'], 'top_ir': last['ir']}
    for r in res:
        r.pop('dump')
    return summary


def report(s):
    """Lines for the terminal / markdown."""
    what = ('packets a guest sent through two vnetd switch ports (each: guest TX ring -> switch -> '
            'other guest\'s RX ring)' if s['kind'] == 'switch' else
            'packets a guest sent to a vnetd AF_XDP port (guest TX ring -> UMEM frame -> TX ring, '
            'a sendto() per batch)' if s['kind'] == 'xdp' else
            'packets a guest sent to a vnetd tap port (guest TX ring -> writev() to the tap)')
    what += '; virtio-user rings of %d entries' % QUEUE_SIZE
    if s['kind'] == 'switch':
        what += (' (with 256, an RX ring runs dry within one 256-packet batch now and then, and '
                 'the switch\'s queue-and-copy fallback makes the count vary by ~6 %% run to run)'
                 '; source: %s' % s.get('source', 'flowgen'))
    lines = ['callgrind, %s path%s, %d B frames: **%.0f user-space instructions per packet** '
             '(median of %d runs of ~%dk packets: %s; spread %.2f %%)'
             % (s['kind'], '' if s.get('layout', 'split') == 'split' else ', %s rings'
                % s['layout'], s['size'], s['ir_per_packet_median'], len(s['runs']),
                s['packets_target'] // 1000,
                ', '.join('%.1f' % r['ir_per_packet'] for r in s['runs']), s['spread_pct']),
             'per packet = %s; the window\'s last run delivered %d of %d' % (
                 what, s['runs'][-1]['delivered'], s['runs'][-1]['tx_packets']), '',
             '| function (self cost) | Ir/packet | % |', '|---|---:|---:|']
    n, tot = s['top_packets'], s['top_ir']
    for f, c in s['top_self']:
        lines.append('| %s | %.0f | %.1f |' % (f, c / n, 100 * c / tot))
    return lines


def layouts_md(cg):
    """The ring layouts of one run side by side: [lines] (empty with fewer than two)."""
    rows = [(s.get('layout', 'split'), s) for s in cg.values()
            if 'error' not in s and s.get('kind') == 'switch']
    if len(rows) < 2:
        return []
    split = next((s['ir_per_packet_median'] for lay, s in rows if lay == 'split'), None)
    lines = ['callgrind, switch path, per ring layout (virtio-user devargs and vnetd keys: '
             'bench/lib/dp_stacks.py LAYOUTS):', '', '| ring layout | Ir/packet | runs | vs split |',
             '|---|---:|---|---:|']
    for lay, s in rows:
        lines.append('| %s | %.1f | %s | %s |' % (
            lay, s['ir_per_packet_median'], ', '.join('%.1f' % r['ir_per_packet']
                                                      for r in s['runs']),
            '%+.1f' % (s['ir_per_packet_median'] - split) if split and lay != 'split' else ''))
    return lines
