# SPDX-License-Identifier: MIT
"""bench/datapath.py's summaries: medians per path and size, ratios, targets, table and chart."""

# A path is a backend, with its ring layout unless split (dp_stacks.path_name():
# 'switch-packed'); its rows, ratios and chart column are a backend's.

import json
import os
import shutil
import statistics

from . import gnuplot
from .dp_procs import log
from .dp_stacks import path_name, path_parts

IMPLS = ('vnetd', 'vnetd-poll0', 'vnetd-poll50', 'vnetd-poll200', 'vnetd-writev', 'dpdk', 'ovs')
SWITCH_ONLY = ('vnetd-poll0', 'vnetd-poll50', 'vnetd-poll200', 'ovs')
# vnetd --no-io-uring: the tap backend's other way to send (one writev per frame), side by side
TAP_ONLY = ('vnetd-writev',)
LABEL = {'vnetd': 'vnetd', 'vnetd-poll0': 'vnetd --poll-us 0', 'vnetd-poll50': 'vnetd --poll-us 50',
         'vnetd-poll200': 'vnetd --poll-us 200', 'vnetd-writev': 'vnetd --no-io-uring',
         'dpdk': 'DPDK vhost', 'ovs': 'OVS-DPDK'}
COLOR = {'vnetd': '#1f77b4', 'vnetd-poll0': '#9ecae1', 'vnetd-poll50': '#6baed6',
         'vnetd-poll200': '#08306b',
         'vnetd-writev': '#17becf', 'dpdk': '#ff7f0e', 'ovs': '#2ca02c', 'tap': '#9467bd'}
# The xdp path compares two vnetd backends on one veth: AF_XDP ('vnetd') and the tap ('tap').
XDP_IMPLS = ('vnetd', 'tap')
XDP_MAX_FRAME = 3840  # src/backend/xdp/xdp.h XDP_PORT_MAX_FRAME
# A path with another ring layout than split compares vnetd (its defaults and --poll-us 50) with
# DPDK's vhost PMD only.
LAYOUT_IMPLS = ('vnetd', 'vnetd-poll50', 'dpdk')


def impls_of(p, impls=IMPLS):
    """The implementations measured on path p, of impls (the xdp path: its own pair, whose
    second one is what its ratios divide by)."""
    b, layout = path_parts(p)
    if b == 'xdp':
        return XDP_IMPLS
    if layout != 'split':
        return tuple(i for i in impls if i in LAYOUT_IMPLS)
    return tuple(i for i in impls if (b == 'switch' or i not in SWITCH_ONLY) and
                 (b == 'tap' or i not in TAP_ONLY))


def impl_label(p, impl):
    if path_parts(p)[0] == 'xdp':
        return {'vnetd': 'vnetd xdp', 'tap': 'vnetd tap'}[impl]
    return LABEL[impl]


def path_label(p):
    """'switch', or 'switch packed' for a path with another ring layout."""
    b, layout = path_parts(p)
    return b if layout == 'split' else '%s %s' % (b, layout)


def paths_of(backends, layouts):
    """Every measured path: each backend split, then the switch with each other layout."""
    return list(backends) + [path_name('switch', lay) for lay in layouts
                             if lay != 'split' and 'switch' in backends]


METRICS = ('mpps', 'gbps', 'accepted_mpps', 'loss', 'backend_cores', 'mpps_per_core',
           'frontend_cores', 'others_cores', 'ring_full', 'frames_per_syscall',
           'kicks_per_packet', 'wakeups_per_packet', 'calls_per_packet')
# A rep's spread is judged on Mpps per core; the goal (issue 43, "Long queues"): every rep
# within +-STABLE_PCT % of its cell's median, or as tight as DPDK's cells in the same run.
STABLE_PCT = 10.0
# Regimes of a vnetd rep that did not poll (classify()): a kick per KICK_BURST frames or more often
# is the kick-per-burst regime (docs/lab-notebook.md, "Fifth round": a kick per ~12 frames, the
# source's every burst waking vnetd); slices of one run whose fastest is FLIP_RATIO x the
# slowest flipped regime within the run; a rep whose DPDK run (same cell, same rep) is
# SLOW_MACHINE_PCT % or more below DPDK's median ran on a slow machine.
KICK_BURST = 64
FLIP_RATIO = 1.3
# A rep with CHASE_RATIO x the kicks per packet of its cell's fewest 'chases' the driver: it
# found the TX ring empty (and asked for a kick) that much more often, so it moved smaller
# batches and read the ring lines the driver's CPU had just written more often per frame (the
# slow reps of 2026-12-07: 1500 B, 0.0005-0.0021 kicks per packet against 0.0002)
CHASE_RATIO = 2.0
SLOW_MACHINE_PCT = 10.0


def agg(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {'median': statistics.median(vals), 'min': min(vals), 'max': max(vals), 'n': len(vals)}


def summarize(runs, backends, sizes, keep_contended=False):
    """Median/min/max per (path, size, impl) over the runs no other work disturbed (all runs
    when every one was disturbed, or with keep_contended); backends: the paths."""
    summary, ratios = {}, {}
    for b in backends:
        for s in sizes:
            key = '%s/%d' % (b, s)
            for impl in impls_of(b):
                rs = [r for r in runs if (r.get('path', r['backend']), r['size'], r['impl']) ==
                      (b, s, impl) and 'mpps' in r]
                clean = [r for r in rs if not r['contended']] if not keep_contended else rs
                if rs:
                    x = {m: agg(r.get(m) for r in clean or rs) for m in METRICS}
                    x['rep_spread_pct'] = rep_spread([r.get('mpps_per_core')
                                                      for r in clean or rs])
                    x['runs_used'], x['runs'] = len(clean or rs), len(rs)
                    x['contended_used'] = not clean
                    summary.setdefault(key, {})[impl] = x
            v, d = (summary.get(key, {}).get(i)
                    for i in (XDP_IMPLS if b == 'xdp' else ('vnetd', 'dpdk')))
            if v and d:
                rat = {}
                for m in ('mpps', 'mpps_per_core'):
                    if v[m] and d[m] and d[m]['median']:
                        rat[m] = v[m]['median'] / d[m]['median']
                ratios[key] = rat
            # every other vnetd variant against DPDK, and every vnetd against OVS-DPDK
            for impl in IMPLS:
                x = summary.get(key, {}).get(impl)
                for peer, name in (('dpdk', '%s/dpdk'), ('ovs', '%s/ovs')):
                    y = summary.get(key, {}).get(peer)
                    if not impl.startswith('vnetd') or not x or not y or \
                            (impl, peer) == ('vnetd', 'dpdk'):
                        continue
                    for m in ('mpps', 'mpps_per_core'):
                        if x[m] and y[m] and y[m]['median']:
                            ratios.setdefault(key, {})[name % impl + ' ' + m] = \
                                x[m]['median'] / y[m]['median']
    return summary, ratios


def rep_spread(vals):
    """The largest distance of one value from their median, in % of the median (None for fewer
    than two values)."""
    vals = [v for v in vals if v is not None]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    return 100.0 * max(abs(v / med - 1) for v in vals) if med else None


def machine_floor(summary):
    """DPDK's per-rep spread in this run, the machine's floor: DPDK's vhost PMD busy-polls at
    one core whatever comes, so its reps spread only as far as the machine (the source's CPU, the
    hypervisor) makes them. {'max_pct', 'cells': {cell: pct}}; max_pct None without two DPDK
    reps of any cell."""
    cells = {k: v['dpdk']['rep_spread_pct'] for k, v in summary.items()
             if v.get('dpdk') and v['dpdk'].get('rep_spread_pct') is not None}
    return {'max_pct': max(cells.values()) if cells else None, 'cells': cells}


def kick_regime(run):
    """'kick-per-burst' (a kick per KICK_BURST frames or more often) or 'batched' for a vnetd
    run with kick counters that did not poll, 'polling' for a --poll-us N > 0 one or one whose
    queues polled (the default, --poll-us auto, since 6cbc7d6); None for the others."""
    k = run.get('kicks_per_packet')
    if k is None:
        return None
    if run.get('impl', '').startswith('vnetd-poll') and run['impl'] != 'vnetd-poll0':
        return 'polling'
    if (run.get('vnetd') or {}).get('tx_polls'):
        return 'polling'
    return 'kick-per-burst' if k >= 1.0 / KICK_BURST else 'batched'


def classify(runs, summary, keep_contended=False):
    """Per run: 'vs_median_pct' (Mpps per core against its cell's median, the runs the summary
    used), 'slice_ratio' (fastest / slowest slice of the run), 'dpdk_same_rep_pct' (the DPDK run
    of the same cell and rep against DPDK's median) and, for vnetd runs, 'regime': kick_regime()
    plus ', chases' (CHASE_RATIO x its cell's fewest kicks per packet), ', flips' (slice_ratio
    >= FLIP_RATIO) and ', slow machine' (DPDK's run of the same rep
    SLOW_MACHINE_PCT % or more below its median)."""
    dpdk = {}
    for r in runs:
        if r['impl'] == 'dpdk' and r.get('mpps_per_core') and \
                (keep_contended or not r.get('contended')):
            dpdk[(r.get('path', r['backend']), r['size'], r['rep'])] = r['mpps_per_core']
    fewest = {}
    for r in runs:
        if r.get('kicks_per_packet') is not None and (keep_contended or not r.get('contended')):
            c = (r.get('path', r['backend']), r['size'], r['impl'])
            fewest[c] = min(fewest.get(c, r['kicks_per_packet']), r['kicks_per_packet'])
    for r in runs:
        if not r.get('mpps_per_core'):
            continue
        key = '%s/%d' % (r.get('path', r['backend']), r['size'])
        x = summary.get(key, {}).get(r['impl'], {}).get('mpps_per_core')
        if x and x['median']:
            r['vs_median_pct'] = round(100.0 * (r['mpps_per_core'] / x['median'] - 1), 1)
        sl = [v for v in r.get('slices_mpps') or [] if v]
        r['slice_ratio'] = round(max(sl) / min(sl), 2) if sl else None
        d = dpdk.get((r.get('path', r['backend']), r['size'], r['rep']))
        dm = summary.get(key, {}).get('dpdk', {}).get('mpps_per_core')
        r['dpdk_same_rep_pct'] = round(100.0 * (d / dm['median'] - 1), 1) \
            if d and dm and dm['median'] else None
        base = kick_regime(r)
        if base and r['impl'].startswith('vnetd'):
            least = fewest.get((r.get('path', r['backend']), r['size'], r['impl']))
            r['regime'] = base + (', chases' if base == 'batched' and least and
                                  r['kicks_per_packet'] >= CHASE_RATIO * least else '') + \
                (', flips' if (r['slice_ratio'] or 0) >= FLIP_RATIO else '') + \
                (', slow machine' if (r['dpdk_same_rep_pct'] or 0) <= -SLOW_MACHINE_PCT else '')


def reps_md(runs, backends, sizes):
    """Every rep of every vnetd and DPDK cell (after classify()): Mpps per core and its
    distance from the cell's median, the slices' range, kicks, wake-ups and calls per packet,
    preemptions per second, the hypervisor's steal, the regime."""
    def num(v, spec):
        return spec % v if v is not None else '-'
    lines = ['| path | frame B | impl | rep | Mpps/core | vs median % | slices Mpps | '
             'kicks/pkt | wake-ups/pkt | calls/pkt | preemptions/s | steal cores | '
             'DPDK same rep vs median % | CPU round trip ns | regime |',
             '|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|']
    for b in backends:
        for s in sizes:
            for impl in impls_of(b):
                if not (impl.startswith('vnetd') or impl == 'dpdk') or \
                        path_parts(b)[0] == 'xdp':
                    continue
                for r in sorted((r for r in runs if (r.get('path', r['backend']), r['size'],
                                                     r['impl']) == (b, s, impl) and
                                 r.get('mpps_per_core')), key=lambda r: r['rep']):
                    sl = r.get('slices_mpps') or []
                    steal = r.get('steal_cores') or {}
                    rt = r.get('cpu_round_trip_ns') or []
                    lines.append('| %s | %d | %s | %d%s | %.3f | %s | %s | %s | %s | %s | %s | '
                                 '%s | %s | %s | %s |' % (
                        path_label(b), s, impl_label(b, impl), r['rep'] + 1,
                        ' (%s)' % ('far CPUs' if r.get('disturbed_by') == 'far CPUs'
                                   else 'disturbed') if r.get('contended') else '',
                        r['mpps_per_core'],
                        num(r.get('vs_median_pct'), '%+.1f'),
                        '%.2f..%.2f' % (min(sl), max(sl)) if sl else '-',
                        num(r.get('kicks_per_packet'), '%.4f'),
                        num(r.get('wakeups_per_packet'), '%.4f'),
                        num(r.get('calls_per_packet'), '%.4f'),
                        '%.0f' % (r.get('backend_preemptions', 0) / r['dt_s'])
                        if r.get('dt_s') else '-',
                        '/'.join('%.3f' % v for v in steal.values()) or '-',
                        num(r.get('dpdk_same_rep_pct') if impl != 'dpdk' else None, '%+.1f'),
                        '%.0f..%.0f' % (min(rt), max(rt)) if rt else '-',
                        r.get('regime', '')))
    return '\n'.join(lines)


def host_line(host):
    """The host's CPU model and its measured system-call cost (start -> end of the run), for
    the report's header and beside every tap row: 'AMD EPYC; getppid 376 ns, eventfd write 557
    ns'."""
    if not host:
        return '-'
    sc = [c for c in (host.get('syscall_start'), host.get('syscall_end')) if c]

    def ns(key):
        v = ['%.0f' % c[key] for c in sc if c.get(key) is not None]
        return ' -> '.join(v) if v else '?'
    return '%s; getppid %s ns, eventfd write %s ns' % (host.get('cpu_model', '?'),
                                                      ns('getppid_ns'), ns('eventfd_write_ns'))


def cell(x, spec, pct=False):
    if not x:
        return '-'
    k = 100 if pct else 1
    if x['n'] > 1:
        return ('%s [%s..%s]' % (spec, spec, spec)) % (k * x['median'], k * x['min'], k * x['max'])
    return spec % (k * x['median'])


def table_md(summary, ratios, backends, sizes, host=None):
    """The summary as a markdown table: one row per path, size and implementation; the last
    columns are kicks / wake-ups / calls per packet (medians; vnetd's counters, the backend's
    voluntary context switches), the reps' largest distance from their median, and beside every
    tap row the host's CPU and system-call cost (host_line())."""
    lines = ['| backend | frame B | impl | Mpps | Gbit/s | loss % | backend cores | Mpps/core | '
             '/DPDK Mpps | /DPDK per core | ring full % | frames/syscall | others\' cores | '
             'runs | kicks / wake-ups / calls per pkt | rep spread ±% | host (tap rows) |',
             '|---|---:|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|']

    def med(x, m):
        return '%.4f' % x[m]['median'] if x.get(m) else '-'
    for b in backends:
        for s in sizes:
            key = '%s/%d' % (b, s)
            for impl in impls_of(b):
                x = summary.get(key, {}).get(impl)
                if not x:
                    continue
                r = ratios.get(key, {}) if impl == 'vnetd' else {}
                if impl.startswith('vnetd-'):  # the poll variants against DPDK
                    r = {m: ratios[key][k] for m in ('mpps', 'mpps_per_core')
                         for k in ['%s/dpdk %s' % (impl, m)] if k in ratios.get(key, {})}
                fps = x.get('frames_per_syscall')
                lines.append('| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | '
                             '%s | %s | %s | %s |' % (
                    path_label(b), s, impl_label(b, impl), cell(x['mpps'], '%.3f'), cell(x['gbps'], '%.2f'),
                    cell(x['loss'], '%.1f', pct=True), cell(x['backend_cores'], '%.2f'),
                    cell(x['mpps_per_core'], '%.3f'),
                    '%.2f' % r['mpps'] if 'mpps' in r else '', '%.2f' % r['mpps_per_core']
                    if 'mpps_per_core' in r else '',
                    '%.0f' % (100 * x['ring_full']['median']) if x['ring_full'] else '-',
                    ('%.1f' % fps['median'] if fps['median'] < 1000 else '>999') if fps else '-',
                    '%.2f' % x['others_cores']['median'] if x['others_cores'] else '-',
                    '%d/%d%s' % (x['runs_used'], x['runs'], '*' if x['contended_used'] else ''),
                    '%s / %s / %s' % (med(x, 'kicks_per_packet'), med(x, 'wakeups_per_packet'),
                                      med(x, 'calls_per_packet')),
                    '%.1f' % x['rep_spread_pct'] if x.get('rep_spread_pct') is not None else '-',
                    host_line(host) if path_parts(b)[0] == 'tap' else ''))
    return '\n'.join(lines)


def table_term(md):
    """The markdown table, aligned for a terminal."""
    rows = [[c.strip() for c in l.strip('|').split('|')] for l in md.splitlines()]
    rows = [r for r in rows if not set(''.join(r)) <= set('-:')]
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ['  '.join(c.ljust(w[i]) for i, c in enumerate(r)) for r in rows]
    return '\n'.join([out[0], '-' * len(out[0])] + out[1:])


def chart(summary, backends, sizes, path_png, path_dat):
    """Mpps per core (top) and Mpps (bottom), vnetd vs DPDK, per frame size; one column per backend."""
    if shutil.which('gnuplot') is None:
        return False
    metrics = [('mpps_per_core', 'Mpps per backend core'), ('mpps', 'Mpps (delivered)')]
    have = set()
    with open(path_dat, 'w') as f:
        for b in backends:
            f.write('# %s: size then per metric, per impl (%s): med min max\n'
                    % (b, ' '.join(IMPLS)))
            for s in sizes:
                cols = []
                for m, _ in metrics:
                    for impl in impls_of(b):
                        x = summary.get('%s/%d' % (b, s), {}).get(impl, {}).get(m)
                        cols += ['%g' % x['median'], '%g' % x['min'], '%g' % x['max']] if x else \
                            ['NaN'] * 3
                        if x:
                            have.add((b, m, impl))
                f.write('%d %s\n' % (s, ' '.join(cols)))
            f.write('\n\n')
    gp = ['set terminal pngcairo size %d,800 font "sans,10"' % (560 * len(backends) + 80),
          'set output "%s"' % path_png,
          'set multiplot layout 2,%d title "vnetd vs DPDK vhost PMD and OVS-DPDK, virtio-user source (testpmd); '
          'median, bars = min-max"' % len(backends),
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.9',
          'set grid ytics', 'set key top right', 'set xlabel "frame size (bytes)"']
    for mi, (m, title) in enumerate(metrics):
        for bi, b in enumerate(backends):
            plots = []
            for ii, impl in enumerate(impls_of(b)):
                c = 2 + 3 * len(impls_of(b)) * mi + 3 * ii
                if (b, m, impl) in have:
                    plots.append('"%s" index %d using %d:%d:%d:xtic(1) title "%s" lc rgb "%s"'
                                 % (path_dat, bi, c, c + 1, c + 2, impl_label(b, impl),
                                    COLOR[impl]))
            top = [summary.get('%s/%d' % (b, s), {}).get(impl, {}).get(m) for s in sizes
                   for impl in impls_of(b)]
            top = max([x['max'] for x in top if x] + [1e-3])
            gp += ['set yrange [0:%g]' % (1.15 * top),
                   'set title "%s path%s: %s"' % (path_parts(b)[0], '' if path_parts(b)[1] ==
                                                  'split' else ' (%s rings)' % path_parts(b)[1],
                                                  title),
                   'plot ' + ', '.join(plots) if plots else 'set multiplot next']
    gp.append('unset multiplot')
    return gnuplot.run(gp, log)



def layout_key(layout):
    """A ring layout as a JSON key part: 'packed+in-order' -> 'packed_in_order'."""
    return layout.replace('+', '_').replace('-', '_')


def targets_datapath(summary, ratios, resdir, cg=None):
    """The goals as numbers: vnetd (its defaults) / OVS-DPDK per core, vnetd --poll-us 200 /
    DPDK vhost absolute at 64 B (and per core), AF_XDP / tap per core at 64 B (same-run ratio
    of medians), the tap path's vnetd / DPDK vhost + net_tap per core at 64 and 1500 B,
    vnetd / DPDK vhost per core and absolute at 64 and 1500 B for each other ring
    layout measured (switch_packed_vs_dpdk_per_core_64, ...), callgrind's instructions per
    packet per ring layout of the switch path (split_ir_per_packet, packed_ir_per_packet, ...),
    and the cross-worker ratio, which bench/workers.py --switch measures (taken from its latest
    results file, with its date)."""
    def med(key, impl, m):
        x = summary.get(key, {}).get(impl, {}).get(m)
        return x['median'] if x else None

    def ratio(a, b):
        return round(a / b, 3) if a and b else None

    t = {}
    for s in (64, 1500):
        t['switch_vs_ovs_per_core_%d' % s] = ratio(med('switch/%d' % s, 'vnetd', 'mpps_per_core'),
                                                   med('switch/%d' % s, 'ovs', 'mpps_per_core'))
        t['switch_vs_ovs_abs_%d' % s] = ratio(med('switch/%d' % s, 'vnetd', 'mpps'),
                                              med('switch/%d' % s, 'ovs', 'mpps'))
    for n in (50, 200):
        t['switch_vs_dpdk_abs_64_poll%s' % ('' if n == 200 else '%d' % n)] = ratio(
            med('switch/64', 'vnetd-poll%d' % n, 'mpps'), med('switch/64', 'dpdk', 'mpps'))
        t['switch_vs_dpdk_per_core_64_poll%s' % ('' if n == 200 else '%d' % n)] = ratio(
            med('switch/64', 'vnetd-poll%d' % n, 'mpps_per_core'),
            med('switch/64', 'dpdk', 'mpps_per_core'))
    for s in (64, 1500):
        t['tap_vs_dpdk_per_core_%d' % s] = ratio(med('tap/%d' % s, 'vnetd', 'mpps_per_core'),
                                                 med('tap/%d' % s, 'dpdk', 'mpps_per_core'))
        # io_uring bursts against one writev per frame, and frames per system call of each
        t['tap_uring_vs_writev_per_core_%d' % s] = ratio(
            med('tap/%d' % s, 'vnetd', 'mpps_per_core'),
            med('tap/%d' % s, 'vnetd-writev', 'mpps_per_core'))
        for impl, name in (('vnetd', 'vnetd'), ('vnetd-writev', 'vnetd_writev'),
                           ('dpdk', 'dpdk')):
            x = med('tap/%d' % s, impl, 'frames_per_syscall')
            t['tap_frames_per_syscall_%s_%d' % (name, s)] = round(x, 2) if x is not None else None
    t['xdp_vs_tap_per_core_64'] = ratios.get('xdp/64', {}).get('mpps_per_core')
    # One stable answer (issue 43, "Long queues"): every rep of each vnetd switch
    # cell within +-STABLE_PCT % of its median, or within DPDK's widest per-rep spread in this run
    floor = machine_floor(summary)['max_pct']
    t['dpdk_rep_spread_max_pct'] = round(floor, 1) if floor is not None else None
    verdicts = []
    for key in sorted(summary):
        p, _, size = key.partition('/')
        x = summary[key].get('vnetd')
        if path_parts(p)[0] != 'switch' or not x or x.get('rep_spread_pct') is None:
            continue
        name = '%s_%s' % (layout_key(path_parts(p)[1]), size)
        t['vnetd_rep_spread_pct_%s' % name] = round(x['rep_spread_pct'], 1)
        ok = x['rep_spread_pct'] <= max(STABLE_PCT, floor or 0)
        t['vnetd_stable_%s' % name] = 'met' if ok else 'not met'
        verdicts.append(ok)
    t['vnetd_stable_cells'] = '%d/%d' % (sum(verdicts), len(verdicts)) if verdicts else None
    for p in sorted({k.split('/')[0] for k in summary}):
        b, layout = path_parts(p)
        if layout == 'split':
            continue
        for s in (64, 1500):
            for m, name in (('mpps_per_core', 'per_core'), ('mpps', 'abs')):
                for impl, tail in (('vnetd', ''), ('vnetd-poll50', '_poll50')):
                    t['%s_%s_vs_dpdk_%s_%d%s' % (b, layout_key(layout), name, s, tail)] = ratio(
                        med('%s/%d' % (p, s), impl, m), med('%s/%d' % (p, s), 'dpdk', m))
    for k, c in sorted((cg or {}).items()):
        if c.get('kind') == 'switch' and 'ir_per_packet_median' in c:
            t['%s_ir_per_packet' % layout_key(c.get('layout', 'split'))] = \
                round(c['ir_per_packet_median'], 1)
    try:
        with open(os.path.join(resdir, 'workers-switch-latest.json')) as f:
            w = json.load(f)
        same, cross = w['summary']['same']['median'], w['summary']['cross']['median']
        t['cross_worker_ratio'] = ratio(cross, same)
        t['cross_worker_ratio_source'] = 'workers-switch-latest.json (bench/workers.py ' \
            '--switch, %s, frame %s B)' % (w.get('date'), w.get('frame'))
    except (OSError, KeyError, ValueError, TypeError):
        t['cross_worker_ratio'] = None
    return t


