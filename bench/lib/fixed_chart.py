# SPDX-License-Identifier: MIT
"""The fixed-load chart: per profile, CPU per Gbit at a fixed load and guest IRQ/s, each as the
change against none, for vnetd's QEMU 11 full-device guest beside the seed's published row, and
the limit: the CPU change if every interrupt went, at AGGRESSIVE's CPU saved per interrupt.

draw() takes a result's "fixed" (bench/lib/fixed.py's summary) and writes the .png and the .dat
(the plotted numbers): make bench (bench/coalescing.py) for results/fixed-latest.png, and
bench/fixed_chart.py to redraw it from results/latest.json. The seed's row (AGGRESSIVE: -74 %
IRQ/s, -25 % CPU, -1 % throughput) is the published headline make bench is measured against.
"""

from . import common
from . import fixed
from . import gnuplot

SEED = {'aggressive': {'cpu': -25.0, 'irq': -74.0}}
SETUP = 'qemu-full-vnetd'
PROFILES = ('light', 'moderate', 'aggressive')


def change(a, b):
    return None if a is None or not b else 100.0 * (a / b - 1)


def rows(fs, kind='tcp'):
    """[(label, cpu TX, cpu RX, irq TX, irq RX, seed cpu, seed irq)] in % vs none."""
    s = fs.get(SETUP, {})
    out = []
    for p in PROFILES:
        if p not in s or 'none' not in s:
            continue
        r = [p.upper()]
        for key in ('cpu_s_per_gbit', 'irq_per_s'):
            for d in ('tx', 'rx'):
                k = 'fixed_%s_%s' % (kind, d)
                x, n = s[p].get(k, {}).get(key), s['none'].get(k, {}).get(key)
                r.append(change(x and x['median'], n and n['median']))
        r += [SEED.get(p, {}).get('cpu'), SEED.get(p, {}).get('irq')]
        out.append(r)
    # The limit: every interrupt gone (fixed.py's cpu_per_gbit_reduction_ceiling_fixed).
    _, per = fixed.targets_fixed(fs, SETUP, ('tx', 'rx'), kind)
    lim = [per.get(d, {}).get('cpu_per_gbit_reduction_ceiling_fixed') for d in ('tx', 'rx')]
    if any(x is not None for x in lim):
        out.append(['"no IRQ (limit)"'] + [None if x is None else -100.0 * x for x in lim] +
                   [-100.0, -100.0, None, None])
    return out


def draw(res, png, dat):
    fs = res.get('fixed', {}).get('summary', {})
    rs = rows(fs)
    if not rs:
        common.log('fixed_chart: no fixed-load rows for %s' % SETUP)
        return False
    rate = (res.get('fixed', {}).get('rates', {}).get('qemu-full') or {}).get('rate', '?')
    with open(dat, 'w') as f:
        f.write('# profile cpu_per_gbit_tx cpu_per_gbit_rx irq_tx irq_rx seed_cpu seed_irq '
                '(%% change vs none; QEMU 11 full device, TCP paced %s)\n' % rate)
        for r in rs:
            f.write(' '.join([r[0]] + ['NaN' if v is None else '%.1f' % v for v in r[1:]]) + '\n')
    load = res.get('meta', {}).get('fixed_loadavg') or [0]
    gp = ['set terminal pngcairo size 1320,440 font "sans,11"', 'set output "%s"' % png,
          'set style data histograms', 'set style histogram clustered gap 1',
          'set style fill solid 0.85 border -1', 'set boxwidth 0.9', 'set grid ytics',
          'set yrange [-100:40]', 'set ylabel "change vs none (%)"', 'set key top right',
          'set xzeroaxis lt -1',
          'set multiplot layout 1,2 title "Coalescing in a QEMU 11 TCG guest (full device, guest '
          'ethtool -C), TCP paced at %sbit/s; load avg %.1f-%.1f; lower is better"'
          % (rate, min(load), max(load)),
          'set title "CPU per Gbit at fixed load (guest+QEMU+vnetd)"',
          'plot "%s" using 2:xtic(1) title "vnetd TX", "" using 3 title "vnetd RX", '
          '"" using 6 title "seed (published)"' % dat,
          'set title "guest IRQ/s at fixed load"',
          'plot "%s" using 4:xtic(1) title "vnetd TX", "" using 5 title "vnetd RX", '
          '"" using 7 title "seed (published)"' % dat,
          'unset multiplot']
    return gnuplot.run(gp, common.log)
