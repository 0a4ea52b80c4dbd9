# SPDX-License-Identifier: MIT
"""make bench's reports (bench/coalescing.py): summaries of the runs, the targets, markdown tables and the gnuplot chart."""

import statistics

from . import gnuplot  # bench/lib/gnuplot.py
from .common import log, spread


# What vnetd should then hold for the queues: a zero in either value means "every packet".
TARGETS = {'irq_reduction': 0.90, 'throughput_retention': 0.98, 'cpu_per_gbit_reduction': 0.30}
# Goals in the QEMU full-device guest: worse direction of bulk TCP, medians.
TARGETS_QEMU = {'irq_reduction_aggressive': 0.85, 'cpu_per_gbit_reduction_aggressive': 0.30,
                'throughput_retained_aggressive': 1.00, 'cpu_per_gbit_reduction_moderate': 0.20}
# --guest name -> (setup name in the results, label in tables and chart)
GUESTS = {'uml': ('uml-vnetd', 'UML 6.1 (bookworm)'),
          'uml-7.2': ('uml72-vnetd', 'UML 7.2 (sid)'),
          'qemu-full': ('qemu-full-vnetd', 'QEMU 11 TCG, full device, Linux 6.1'),
          'uml72-1g': ('uml72-1g-fixed-vnetd', 'UML 7.2 (sid), 1 GB')}

BULK_KEYS = ('gbps', 'cpu_pct', 'guest_cpu_pct', 'vnetd_cpu_pct', 'cpu_s_per_gbit', 'irq_per_s',
             'irq_per_gbit', 'notif_rx_per_s', 'notif_tx_per_s', 'machine_busy_pct')
RR_KEYS = ('rtt_p50_us', 'rtt_p99_us', 'irq_per_s', 'notif_rx_per_s', 'notif_tx_per_s')


def lateness(runs, q):
    """Median over runs of the per-run lateness p50/p99 of queue q, and the sample count."""
    ls = [r[q]['lateness_us'] for r in runs if q in r and r[q]['lateness_us']['samples']]
    if not ls:
        return {'samples': 0, 'p50': None, 'p99': None, 'max': None}
    return {'samples': sum(x['samples'] for x in ls),
            'p50': statistics.median(x['p50'] for x in ls),
            'p99': statistics.median(x['p99'] for x in ls),
            'max': max(x['max'] for x in ls)}


def summarize(runs, setups, profiles, directions):
    out = {}
    for s in setups:
        for p in profiles:
            rs = [r for r in runs if r['setup'] == s and r['profile'] == p]
            if not rs:
                continue
            e = out.setdefault(s, {}).setdefault(p, {})
            for d in directions:
                b = [r for r in rs if r['kind'] == 'bulk' and r['direction'] == d and 'gbps' in r]
                e[d] = {k: spread([r.get(k) for r in b]) for k in BULK_KEYS}
                e[d]['failed_runs'] = len([r for r in rs if r['kind'] == 'bulk' and
                                           r['direction'] == d and 'gbps' not in r])
                e[d]['lateness'] = {q: lateness(b, q) for q in ('rx', 'tx')}
            rr = [r for r in rs if r['kind'] == 'rr' and 'rtt_p50_us' in r]
            e['rr'] = {k: spread([r.get(k) for r in rr]) for k in RR_KEYS}
            e['rr']['lateness'] = {q: lateness(rr, q) for q in ('rx', 'tx')}
    return out


def med(x):
    return x['median'] if x else None


def ratios(summary, directions, setup='uml-vnetd'):
    out = {}
    s = summary.get(setup, {})
    for d in directions:
        try:
            none, aggr, mod = s['none'][d], s['aggressive'][d], s['moderate'][d]
        except KeyError:
            continue
        r = {}
        if med(none['irq_per_s']) and med(aggr['irq_per_s']) is not None:
            r['irq_reduction'] = 1 - med(aggr['irq_per_s']) / med(none['irq_per_s'])
        if med(none['gbps']) and med(aggr['gbps']) is not None:
            r['throughput_retention'] = med(aggr['gbps']) / med(none['gbps'])
        if med(none['cpu_s_per_gbit']) and med(mod['cpu_s_per_gbit']) is not None:
            r['cpu_per_gbit_reduction'] = 1 - med(mod['cpu_s_per_gbit']) / med(none['cpu_s_per_gbit'])
        if med(none['notif_rx_per_s']) is not None:
            tot = [med(x['notif_rx_per_s']) + med(x['notif_tx_per_s']) for x in (none, aggr)]
            if tot[0]:
                r['notification_reduction'] = 1 - tot[1] / tot[0]
        r['met'] = {k: r[k] >= v for k, v in TARGETS.items() if k in r}
        out[d] = r
    return out


def targets_qemu(summary, directions):
    """The issue's four numbers for the QEMU full-device guest: medians, worse direction."""
    s = summary.get(GUESTS['qemu-full'][0], {})
    per = {}
    for d in directions:
        try:
            none, aggr, mod = s['none'][d], s['aggressive'][d], s['moderate'][d]
            per[d] = {
                'irq_reduction_aggressive': 1 - med(aggr['irq_per_s']) / med(none['irq_per_s']),
                'cpu_per_gbit_reduction_aggressive':
                    1 - med(aggr['cpu_s_per_gbit']) / med(none['cpu_s_per_gbit']),
                'throughput_retained_aggressive': med(aggr['gbps']) / med(none['gbps']),
                'cpu_per_gbit_reduction_moderate':
                    1 - med(mod['cpu_s_per_gbit']) / med(none['cpu_s_per_gbit'])}
        except (KeyError, TypeError, ZeroDivisionError):
            continue
    if not per:
        return None, per
    return {k: min(per[d][k] for d in per) for k in TARGETS_QEMU}, per


def targets_qemu_md(tq, per):
    names = {'irq_reduction_aggressive': 'guest IRQ/s reduction, aggressive vs none',
             'cpu_per_gbit_reduction_aggressive': '(QEMU+vnetd) CPU s per Gbit reduction, aggressive',
             'throughput_retained_aggressive': 'throughput retained, aggressive vs none',
             'cpu_per_gbit_reduction_moderate': '(QEMU+vnetd) CPU s per Gbit reduction, moderate'}
    dirs = list(per)
    lines = ['| QEMU full-device target | %s | worse | goal |' % ' | '.join(d.upper() for d in dirs),
             '|---|' + '---|' * (len(dirs) + 2)]
    for k, label in names.items():
        met = tq[k] >= TARGETS_QEMU[k] - 1e-9
        lines.append('| %s | %s | %.1f %% %s | ≥ %.0f %% |' % (
            label, ' | '.join('%.1f %%' % (100 * per[d][k]) for d in dirs), 100 * tq[k],
            '✔' if met else '✘', 100 * TARGETS_QEMU[k]))
    return '\n'.join(lines)


def fmt(x, spec, rng=True):
    if not x:
        return '–'
    s = spec % x['median']
    if rng and x['n'] > 1:
        s += ' (' + spec % x['min'] + '–' + spec % x['max'] + ')'
    return s


def fmt_lat(l):
    if not l or not l['samples']:
        return '–'
    return '%.0f / %.0f' % (l['p50'], l['p99'])


def table_md(summary, setup, profiles, directions, cpu_label):
    head = ('| Guest | Profile | Dir | Throughput Gbit/s | CPU %% (%s) | CPU s per Gbit | IRQ/s | '
            'notif/s rx / tx | RTT p50 / p99 µs | lateness p50 / p99 µs |' % cpu_label)
    lines = [head, '|' + '---|' * 10]
    for p in profiles:
        e = summary.get(setup, {}).get(p)
        if not e:
            continue
        for i, d in enumerate(directions):
            x = e[d]
            rr = e['rr']
            if i == 0:
                rtt = ('%.0f / %.0f' % (med(rr['rtt_p50_us']), med(rr['rtt_p99_us']))
                       if rr['rtt_p50_us'] else '–')
                lat = fmt_lat(rr['lateness']['rx'])
            else:
                rtt = lat = '″'
            notif = ('%.0f / %.0f' % (med(x['notif_rx_per_s']), med(x['notif_tx_per_s']))
                     if x['notif_rx_per_s'] else '–')
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                setup, p if i == 0 else '', d.upper(), fmt(x['gbps'], '%.3f'), fmt(x['cpu_pct'], '%.0f', False),
                fmt(x['cpu_s_per_gbit'], '%.2f'), fmt(x['irq_per_s'], '%.0f'), notif, rtt, lat))
    return '\n'.join(lines)


def ratios_md(rat):
    names = {'irq_reduction': ('guest IRQ/s reduction, aggressive vs none', '≥ 90 %'),
             'throughput_retention': ('throughput retained, aggressive vs none', '≥ 98 %'),
             'cpu_per_gbit_reduction': ('CPU s per Gbit reduction, moderate vs none', '≥ 30 %'),
             'notification_reduction': ('vnetd notifications/s (rx+tx) reduction, aggressive vs none',
                                        '(info)')}
    lines = ['| Target | %s | target |' % ' | '.join(d.upper() for d in rat), '|---|' + '---|' * (len(rat) + 1)]
    for k, (label, tgt) in names.items():
        cells = []
        for d in rat:
            v = rat[d].get(k)
            if v is None:
                cells.append('–')
            else:
                met = rat[d]['met'].get(k)
                cells.append('%.1f %%%s' % (100 * v, '' if met is None else (' ✔' if met else ' ✘')))
        lines.append('| %s | %s | %s |' % (label, ' | '.join(cells), tgt))
    return '\n'.join(lines)


def chart(summary, profiles, directions, path_png, path_dat, setups=('uml-vnetd',), extra=(0, [])):
    """One row of three panels (throughput, CPU per Gbit, IRQ/s) per guest setup; extra =
    (rows, gnuplot commands) of further three-panel rows (coal.chart_rows)."""
    setups = [x for x in setups if x in summary]
    labels = {v[0]: v[1] for v in GUESTS.values()}
    metrics = [('gbps', 'Throughput (Gbit/s)'), ('cpu_s_per_gbit', 'CPU s per Gbit (guest+vnetd)'),
               ('irq_per_s', 'Guest IRQ/s')]
    nd = len(directions)
    nrows = len(setups) + extra[0]
    gp = ['set terminal pngcairo size 1500,%d font "sans,10"' % (60 + 420 * nrows),
          'set output "%s"' % path_png,
          'set multiplot layout %d,3 title "vnetd coalescing profiles set by the guest\'s ethtool -C; '
          'median, bars = min-max"' % nrows,
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.9', 'set yrange [0:*]',
          'set grid ytics', 'set key top right', 'set xtics nomirror']
    for si, setup in enumerate(setups):
        s = summary[setup]
        dat = path_dat if si == 0 else '%s-%s.dat' % (path_dat[:-len('.dat')], setup)
        with open(dat, 'w') as f:
            f.write('# %s: profile ' % setup + ' '.join('%s_%s med min max' % (m, d)
                                                      for m, _ in metrics for d in directions) + '\n')
            for p in (p for p in profiles if p in s):
                cols = []
                for m, _ in metrics:
                    for d in directions:
                        x = s[p][d][m]
                        cols += ['%g' % x['median'], '%g' % x['min'], '%g' % x['max']] if x else ['0'] * 3
                f.write('%s %s\n' % (p, ' '.join(cols)))
        for mi, (m, title) in enumerate(metrics):
            plots = []
            for di, d in enumerate(directions):
                c = 2 + 3 * (mi * nd + di)
                plots.append('"%s" using %d:%d:%d:xtic(1) title "%s"' % (dat, c, c + 1, c + 2,
                                                                         d.upper()))
            gp += ['set title "%s: %s"' % (labels.get(setup, setup), title), 'plot ' + ', '.join(plots)]
    gp += extra[1]
    gp.append('unset multiplot')
    return gnuplot.run(gp, log)
