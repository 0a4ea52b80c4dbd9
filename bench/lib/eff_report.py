# SPDX-License-Identifier: MIT
"""bench/efficiency.py's summaries: medians and spreads per point, same-run comparisons, the goals
of issue 43 as targets_efficiency, tables, chart, and the results files."""

import json
import os
import shutil
import statistics

from . import gnuplot
from .dp_procs import log

METRICS = ('achieved_pps', 'offered_pps', 'loss', 'cores', 'cores_schedstat', 'p50_us',
           'p99_us', 'p999_us', 'max_us', 'wakeups_per_packet', 'kicks_per_packet',
           'calls_per_packet', 'mpps_per_core', 'lag_p50_ns', 'lag_p99_ns', 'lag_p999_ns',
           'driver_cores', 'others_cores', 'skipped', 'ring_full', 'batched_share',
           'vnetd_tx_kicks_per_packet', 'vnetd_rx_notifications_per_packet')
NO_LOSS = 1e-5               # a loss below this counts as none (a frame in 100000)
IDLE_CORES = 0.005           # "idle: no CPU": under 5 ms of CPU per second
SHORT_LOADS = (1, 10, 25, 50)
COLORS = ('#1f77b4', '#9ecae1', '#6baed6', '#2ca02c', '#98df8a', '#ff7f0e', '#9467bd',
          '#8c564b', '#e377c2', '#7f7f7f')


# ---------------------------------------------------------------------------------------------
# summaries

def stat(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {'median': statistics.median(vals), 'min': min(vals), 'max': max(vals),
            'n': len(vals)}


def summarize(runs, configs, sizes):
    """{size: {point key: {config: {metric: stat}, ...}}} over the runs without error, the
    undisturbed ones where there are any ('disturbed_only' marks a cell that had none)."""
    out = {}
    for s in sizes:
        cell_runs = {}
        for r in runs:
            if r.get('size') == s and 'error' not in r and 'achieved_pps' in r:
                cell_runs.setdefault(r['key'], {}).setdefault(r['config'], []).append(r)
        out[s] = {}
        for key, per_cfg in cell_runs.items():
            out[s][key] = {}
            for cfg, rs in per_cfg.items():
                good = [r for r in rs if not r.get('disturbed')]
                use = good or rs
                cell = {m: stat([r.get(m) for r in use]) for m in METRICS}
                cell = {m: v for m, v in cell.items() if v is not None}
                cell['runs'] = '%d/%d' % (len(use), len(rs))
                cell['disturbed_only'] = not good
                cell['rate'] = rs[0].get('rate')
                out[s][key][cfg] = cell
    return out


def compare(a, b, metric):
    """a's median / b's, and whether their [min..max] overlap (inconclusive); None if missing."""
    x, y = (a or {}).get(metric), (b or {}).get(metric)
    if not x or not y or not y['median']:
        return None
    single = x['n'] < 2 or y['n'] < 2
    overlap = x['min'] <= y['max'] and y['min'] <= x['max']
    return {'ratio': x['median'] / y['median'], 'a': x['median'], 'b': y['median'],
            'inconclusive': bool(overlap and not single), 'single_rep': single}


def roles(configs):
    """The configuration names the targets compare: vnetd (the first vnetd one), dpdk, ovs
    (without pmd-maxsleep), ovs_sleep (the first with it)."""
    first = lambda f: next((c['name'] for c in configs if f(c)), None)  # noqa: E731
    return {'vnetd': first(lambda c: c['kind'] == 'vnetd'),
            'dpdk': first(lambda c: c['kind'] == 'dpdk'),
            'ovs': first(lambda c: c['kind'] == 'ovs' and c.get('maxsleep') is None),
            'ovs_sleep': first(lambda c: c['kind'] == 'ovs' and c.get('maxsleep') is not None)}


# ---------------------------------------------------------------------------------------------
# targets: issue 43's goals (same run, ratios of medians)

def _entry(met, value, limit, what, inconclusive=False, **kw):
    e = {'met': met, 'value': value, 'limit': limit, 'what': what}
    if inconclusive:
        e['inconclusive'] = True
    e.update(kw)
    return e


def _ratio_target(summary, s, key, rl, a, b, metric, limit, le, what):
    c = compare(summary.get(s, {}).get(key, {}).get(rl[a]) if rl[a] else None,
                summary.get(s, {}).get(key, {}).get(rl[b]) if rl[b] else None, metric)
    if c is None:
        return _entry(None, None, limit, what + ' (not measured)')
    met = c['ratio'] <= limit if le else c['ratio'] >= limit
    return _entry(met, round(c['ratio'], 3), limit, what, c['inconclusive'],
                  values=[c['a'], c['b']])


def _load_targets(summary, s, rl, loads):
    """Cost that follows load, at each of loads: vnetd's CPU against its own flood's CPU per
    frame, against OVS-DPDK with pmd-maxsleep, and its p99 one-way latency."""
    cells = summary.get(s, {})
    v, o = rl['vnetd'], rl['ovs_sleep']
    flood = cells.get('flood', {}).get(v, {})
    per_pps = (flood['cores']['median'] / flood['achieved_pps']['median']
               if flood.get('cores') and flood.get('achieved_pps') else None)
    cpu, vs_ovs, p99 = {}, {}, {}
    ok_cpu = ok_ovs = ok_p99 = True
    inc_ovs = inc_p99 = False
    for ld in loads:
        c = cells.get('open/%g' % ld, {})
        vc = c.get(v, {})
        if not vc.get('cores'):
            ok_cpu = ok_ovs = ok_p99 = None
            continue
        if per_pps:
            bound = 1.5 * vc['offered_pps']['median'] * per_pps + 0.02
            cpu['%g' % ld] = {'cores': round(vc['cores']['median'], 4), 'bound': round(bound, 4)}
            ok_cpu = ok_cpu and vc['cores']['median'] <= bound
        oc = c.get(o, {}) if o else {}
        if oc.get('cores'):
            cmp_ = compare(vc, oc, 'cores')
            vs_ovs['%g' % ld] = {'vnetd': round(cmp_['a'], 4), 'ovs_sleep': round(cmp_['b'], 4),
                                 'inconclusive': cmp_['inconclusive']}
            ok_ovs = ok_ovs and cmp_['a'] <= cmp_['b'] if ok_ovs is not None else None
            inc_ovs |= cmp_['inconclusive']
        else:
            ok_ovs = None
        if vc.get('p99_us'):
            lim = 100.0
            if oc.get('p99_us'):
                lim = round(min(lim, oc['p99_us']['median'] + 50), 1)
                inc_p99 |= bool(compare(vc, oc, 'p99_us')['inconclusive'])
            p99['%g' % ld] = {'vnetd_us': round(vc['p99_us']['median'], 1), 'limit_us': lim}
            ok_p99 = ok_p99 and vc['p99_us']['median'] <= lim if ok_p99 is not None else None
    return {
        'cpu_follows_load_%d' % s: _entry(ok_cpu if per_pps else None, cpu,
                                          '1.5 x load x CPU per frame at the max + 0.02 cores',
                                          'vnetd cores at %s %% of its max' % ','.join(
                                              '%g' % x for x in loads)),
        'cpu_vs_ovs_maxsleep_%d' % s: _entry(ok_ovs if vs_ovs else None, vs_ovs,
                                             '<= OVS-DPDK pmd-maxsleep',
                                             'vnetd cores against %s' % o, inc_ovs),
        'p99_latency_%d' % s: _entry(ok_p99 if p99 else None, p99,
                                     '<= 100 us and <= OVS-DPDK pmd-maxsleep + 50 us',
                                     'vnetd one-way p99 at partial load', inc_p99)}


def _no_loss_90(summary, s, rl, top):
    c = summary.get(s, {}).get('open/%g' % top, {})
    v = c.get(rl['vnetd'], {}).get('loss')
    ovs = {n: c.get(n, {}).get('loss') for n in (rl['ovs'], rl['ovs_sleep']) if n}
    if v is None or not any(ovs.values()):
        return _entry(None, None, NO_LOSS, 'no loss at %g %% where OVS-DPDK has none (not '
                      'measured)' % top)
    none = [n for n, x in ovs.items() if x and x['median'] < NO_LOSS]
    met = v['median'] < NO_LOSS if none else True
    return _entry(met, {'vnetd': round(v['median'], 5),
                        **{n: round(x['median'], 5) for n, x in ovs.items() if x}},
                  NO_LOSS, 'loss at %g %% of vnetd\'s max (OVS-DPDK without loss: %s)'
                  % (top, ', '.join(none) or 'none'), vacuous=not none)


def targets_efficiency(summary, configs, sizes, loads):
    """issue 43's goals: short queues (32 in flight: vnetd >= 0.9x DPDK, >= 1.0x OVS-DPDK;
    1 in flight: round-trip p50 <= 1.2x DPDK's), cost that follows load, idle: no CPU."""
    rl = roles(configs)
    t = {}
    for s in sizes:
        t['short_queue_32_vs_dpdk_%d' % s] = _ratio_target(
            summary, s, 'closed/32', rl, 'vnetd', 'dpdk', 'achieved_pps', 0.9, False,
            'closed loop, 32 in flight per port: vnetd rate / DPDK vhost\'s')
        t['short_queue_32_vs_ovs_%d' % s] = _ratio_target(
            summary, s, 'closed/32', rl, 'vnetd', 'ovs', 'achieved_pps', 1.0, False,
            'closed loop, 32 in flight per port: vnetd rate / OVS-DPDK\'s')
        t['rtt_1_p50_vs_dpdk_%d' % s] = _ratio_target(
            summary, s, 'closed/1', rl, 'vnetd', 'dpdk', 'p50_us', 1.2, True,
            'closed loop, 1 in flight per port: vnetd round-trip p50 / DPDK vhost\'s')
        t.update(_load_targets(summary, s, rl, [x for x in loads if x in SHORT_LOADS]))
        if loads:
            t['no_loss_at_%g_%d' % (max(loads), s)] = _no_loss_90(summary, s, rl, max(loads))
    idle = [summary[s].get('idle', {}).get(rl['vnetd'], {}).get('cores') for s in sizes]
    idle = [x['max'] for x in idle if x]
    t['idle_no_cpu'] = _entry(max(idle) < IDLE_CORES if idle else None,
                              max(idle) if idle else None, IDLE_CORES,
                              'vnetd cores with both ports connected and no traffic (the '
                              'most of any run)')
    t['roles'] = rl
    return t


# ---------------------------------------------------------------------------------------------
# text

def run_line(r):
    """One log line for a run."""
    if r['mode'] == 'idle':
        return 'idle        backend %.4f cores (schedstat %.4f), wake-ups %d%s' % (
            r['cores'], r['cores_schedstat'] or 0, r.get('backend_wakeups') or 0,
            disturbed(r))
    lat = ('p50 %.1f p99 %.1f p99.9 %.1f us' % (r['p50_us'], r['p99_us'], r['p999_us'])
           if 'p50_us' in r else 'no latency')
    return ('%-11s %8.4f Mpps%s loss %.5f  backend %.3f cores  %s  kicks %.3f calls %.3f '
            'wake-ups %.3f /pkt  driver %.2f others %.2f%s'
            % (r['key'], r['achieved_pps'] / 1e6,
               ' (offered %.4f)' % (r['offered_pps'] / 1e6) if r['mode'] == 'open' else '',
               r['loss'], r['cores'] or 0, lat, r['kicks_per_packet'], r['calls_per_packet'],
               r['wakeups_per_packet'] or 0, r['driver_cores'], r['others_cores'],
               disturbed(r)))


def placement_note(pl):
    """The end of the legend's sentence on disturbed runs: how far CPUs count (a run's
    meta['cpu_placement']; '.' for a run from before the CPUs' placement was sampled)."""
    if not pl or not pl.get('runs_sampled'):
        return '.'
    return ('; so is a run during which the hypervisor kept CPU 0 and CPU 1 apart (its CPU '
            'placement samples, a cache line\'s round trip between them, more than a fifth '
            'over %.1fx the run\'s near one, %s ns: %d of %d runs; bench/lib/cpu_place.py): a '
            'round trip there costs ~2x, whatever the backend.'
            % (pl['far_factor'], '%.0f' % pl['near_ns'] if pl.get('near_ns') else '?',
               pl['runs_far'], pl['runs_sampled']))


def disturbed(r):
    """'  DISTURBED (others|far CPUs)' for a disturbed run's log line, else ''."""
    return '  DISTURBED (%s)' % (r.get('disturbed_by') or 'others') if r.get('disturbed') else ''


def fmt(x, digits=3, spread=True):
    if not x:
        return '–'
    f = '%%.%df' % digits
    m = f % x['median']
    if spread and x['n'] > 1 and x['min'] != x['max']:
        m += ' [%s..%s]' % (f % x['min'], f % x['max'])
    return m


def _keys(summary, s, mode):
    ks = list(summary.get(s, {}))
    if mode == 'open':
        order = ['idle'] + sorted((k for k in ks if k.startswith('open/')),
                                  key=lambda k: float(k.split('/')[1])) + ['flood']
    else:
        order = sorted((k for k in ks if k.startswith('closed/')),
                       key=lambda k: int(k.split('/')[1]))
    return [k for k in order if k in ks]


def _row_label(summary, s, k):
    if k == 'idle':
        return 'idle'
    if k == 'flood':
        return 'flood (each its own max)'
    if k.startswith('open/'):
        rate = next(iter(summary[s][k].values())).get('rate') or 0
        return '%s %% (%.3f Mpps)' % (k.split('/')[1], rate / 1e6)
    return '%s in flight' % k.split('/')[1]


def table(summary, configs, s, mode, cell, title):
    names = [c['name'] for c in configs]
    head = '| %s | %s |' % ('load' if mode == 'open' else 'per port',
                            ' | '.join(c['label'] for c in configs))
    lines = ['**%d B, %s**' % (s, title), '', head, '|---|' + '---:|' * len(names)]
    for k in _keys(summary, s, mode):
        row = summary[s][k]
        lines.append('| %s | %s |' % (_row_label(summary, s, k),
                                      ' | '.join(cell(row.get(n, {}), k) for n in names)))
    return '\n'.join(lines)


def tables_md(summary, configs, sizes):
    mpps = lambda c, k: fmt({kk: v / 1e6 if kk != 'n' else v  # noqa: E731
                             for kk, v in c['achieved_pps'].items()}, 3) if c.get(
        'achieved_pps') else '–'
    out = []
    for s in sizes:
        out += [table(summary, configs, s, 'open', lambda c, k: fmt(c.get('cores'), 3) + (
                          '*' if c.get('disturbed_only') else ''),
                      'open loop: backend cores (/proc/PID/stat, all threads; * = every rep '
                      'disturbed)'), '',
                table(summary, configs, s, 'open',
                      lambda c, k: '–' if k == 'idle' else '%s / %s%s' % (
                          mpps(c, k), fmt(c.get('loss'), 4, False),
                          ' / %s' % fmt(c.get('batched_share'), 2, False)
                          if k.startswith('open/') else ''),
                      'open loop: delivered Mpps / loss / share of frames the driver sent '
                      'batched (behind schedule)'), '',
                table(summary, configs, s, 'open',
                      lambda c, k: '–' if k == 'idle' else '%s / %s / %s' % (
                          fmt(c.get('p50_us'), 1, False), fmt(c.get('p99_us'), 1),
                          fmt(c.get('p999_us'), 1, False)),
                      'open loop: one-way latency p50 / p99 [min..max] / p99.9, us'), '',
                table(summary, configs, s, 'open',
                      lambda c, k: '–' if k == 'idle' else '%s / %s / %s' % (
                          fmt(c.get('kicks_per_packet'), 3, False),
                          fmt(c.get('calls_per_packet'), 3, False),
                          fmt(c.get('wakeups_per_packet'), 3, False)),
                      'open loop: kicks / calls / backend wake-ups per packet'), '',
                table(summary, configs, s, 'closed',
                      lambda c, k: '%s / %s%s' % (mpps(c, k), fmt(c.get('cores'), 2, False),
                                                  '*' if c.get('disturbed_only') else ''),
                      'closed loop (both ports): Mpps [min..max] / backend cores (* = every rep '
                      'disturbed)'), '',
                table(summary, configs, s, 'closed',
                      lambda c, k: '%s / %s / %s' % (
                          fmt(c.get('p50_us'), 1), fmt(c.get('p99_us'), 1, False),
                          fmt(c.get('p999_us'), 1, False)),
                      'closed loop: round trip p50 [min..max] / p99 / p99.9, us'), '']
    return '\n'.join(out)


def headline_md(summary, configs, sizes, loads):
    """One short table: per size and configuration, idle and partial-load cores, p99 at 10 %,
    loss at the top load, closed-loop rate at 32 in flight and round trip p50 at 1."""
    top = max(loads) if loads else None
    cols = ['idle cores', 'cores at 1 / 10 / 50 %', 'one-way p99 at 10 % (us)',
            'loss at %g %%' % top, '32 in flight: Mpps', '1 in flight: RTT p50 (us)']
    lines = ['| frame | configuration | %s |' % ' | '.join(cols),
             '|---|---|' + '---:|' * len(cols)]
    for s in sizes:
        cells = summary.get(s, {})
        for c in configs:
            g = lambda k, m: cells.get(k, {}).get(c['name'], {}).get(m)  # noqa: E731
            mp = g('closed/32', 'achieved_pps')
            lines.append('| %d B | %s | %s | %s | %s | %s | %s | %s |' % (
                s, c['label'], fmt(g('idle', 'cores'), 3, False),
                ' / '.join(fmt(g('open/%g' % ld, 'cores'), 2, False) for ld in (1, 10, 50)),
                fmt(g('open/10', 'p99_us'), 1, False),
                fmt(g('open/%g' % top, 'loss'), 4, False) if top else '–',
                '%.3f' % (mp['median'] / 1e6) if mp else '–',
                fmt(g('closed/1', 'p50_us'), 1, False)))
    return '\n'.join(lines)


def targets_md(t):
    lines = ['| target | met | value | limit |', '|---|---|---|---|']
    for k, e in t.items():
        if k == 'roles':
            continue
        met = {True: 'yes', False: '**no**', None: 'not measured'}[e['met']]
        if e.get('vacuous'):
            met += ' (vacuous: OVS-DPDK lost frames too)'
        if e.get('inconclusive'):
            met += ' (inconclusive)'
        v = e['value']
        if isinstance(v, dict):
            v = '; '.join('%s: %s' % (kk, json.dumps(vv) if isinstance(vv, dict) else
                                      ('%.4g' % vv if isinstance(vv, float) else vv))
                          for kk, vv in v.items())
        elif isinstance(v, float):
            v = '%.4g' % v
        lines.append('| %s | %s | %s | %s |' % (k, met, v if v is not None else '–',
                                                e['limit']))
    return '\n'.join(lines)


# ---------------------------------------------------------------------------------------------
# chart

def chart(summary, configs, sizes, png, dat):
    """Per frame size: backend cores and one-way p99 against the offered rate (open loop), and
    closed-loop rate and round-trip p50 against frames in flight; bars: min..max over reps."""
    if shutil.which('gnuplot') is None:
        return False
    # (mode, metric, title, x label, log y)
    panels = [('open', 'cores', 'backend cores', 'offered Mpps', False),
              ('open', 'p99_us', 'one-way p99 (us)', 'offered Mpps', True),
              ('closed', 'achieved_pps', 'closed loop Mpps', 'frames in flight per port', False),
              ('closed', 'p50_us', 'round trip p50 (us)', 'frames in flight per port', True)]
    blocks, idx = {}, 0
    with open(dat, 'w') as f:
        for s in sizes:
            for mode, m, _, _, _ in panels:
                for c in configs:
                    f.write('# %d B %s %s %s: x median min max\n' % (s, mode, m, c['name']))
                    n = 0
                    for k in _keys(summary, s, mode):
                        if k in ('idle', 'flood'):
                            continue
                        cell = summary[s][k].get(c['name'], {})
                        x = cell.get(m)
                        if not x:
                            continue
                        xv = (cell['offered_pps']['median'] / 1e6 if mode == 'open'
                              else int(k.split('/')[1]))
                        sc = 1e-6 if m == 'achieved_pps' else 1
                        f.write('%g %g %g %g\n' % (xv, x['median'] * sc, x['min'] * sc,
                                                   x['max'] * sc))
                        n += 1
                    if n:
                        f.write('\n\n')
                        blocks[(s, mode, m, c['name'])] = idx
                        idx += 1
    gp = ['set terminal pngcairo size 1600,%d font "sans,9"' % (380 * len(sizes) + 40),
          'set output "%s"' % png,
          'set multiplot layout %d,4 title "make bench-efficiency: vnetd against polling peers '
          '(paced driver; median, bars min..max over reps)"' % len(sizes),
          'set grid', 'set logscale x']
    first = True
    for s in sizes:
        for mode, m, ylabel, xlabel, logy in panels:
            plots = []
            for i, c in enumerate(configs):
                b = blocks.get((s, mode, m, c['name']))
                if b is not None:
                    plots.append('"%s" index %d using 1:2:3:4 with yerrorlines title "%s" lc rgb '
                                 '"%s" pt 7 ps 0.6' % (dat, b, c['label'], COLORS[i % len(COLORS)]))
            gp += ['set logscale y' if logy else 'unset logscale y',
                   'set yrange [*:*]' if logy else 'set yrange [0:%s]' % (
                       '1.1' if m == 'cores' else '*'),
                   'set xrange [0.8:160]' if mode == 'closed' else 'set xrange [*:*]',
                   'set key bottom right font ",8"' if first and plots else 'unset key',
                   'set title "%d B: %s"' % (s, ylabel), 'set xlabel "%s"' % xlabel,
                   'plot ' + ', '.join(plots) if plots else 'set multiplot next']
            first = first and not plots
    gp.append('unset multiplot')
    return gnuplot.run(gp, log)


# ---------------------------------------------------------------------------------------------
# files

def write(meta, info, runs, args, out, resdir):
    sizes, configs = args.sizes, args.configs
    summary = summarize(runs, configs, sizes)
    targets = targets_efficiency(summary, configs, sizes, args.loads)
    sc = meta['syscall_cost']
    result = {'meta': meta, 'info': info, 'summary': summary,
              'targets_efficiency': targets, 'runs': runs}
    md = ['### vnetd against polling peers at every load (make bench-efficiency)', '',
          '%s, %s, %d CPUs (%s), kernel %s; system call: getppid %.0f ns, eventfd write %.0f ns '
          '(clock_gettime %.0f ns); load average %.2f at start, %.2f at end; vnetd %s; %d '
          'interleaved reps of %.0f s (warm-up %.0f s); took %.0f s.'
          % (meta['date'], meta['host'], meta['cpus'], meta['cpu_model'], meta['kernel'],
             sc['getppid_ns'], sc['eventfd_write_ns'], sc['clock_gettime_ns'],
             meta['loadavg_start'][0], meta['loadavg_end'][0], meta['vnetd_describe'],
             args.reps, args.duration, args.warmup, meta['elapsed_s']), '',
          'vnetd\'s maximum (flood, port 0 -> port 1, median of %d): %s; the open-loop rates '
          'are %s %% of it, the same for every configuration.'
          % (args.calib_reps, ', '.join('%d B %.3f Mpps' % (int(s), c['max_pps'] / 1e6)
                                       for s, c in sorted(meta.get('calibration', {}).items(),
                                                          key=lambda x: int(x[0]))),
             ', '.join('%g' % x for x in args.loads)), '']
    md += ['**Summary** (medians over the reps):', '',
           headline_md(summary, configs, sizes, args.loads), '',
           tables_md(summary, configs, sizes), '', '**Targets** (issue 43\'s goals; same-run '
           'medians; inconclusive = the [min..max] ranges compared overlap):', '',
           targets_md(targets), '',
           'Backend cores: utime+stime of the backend process (/proc/PID/stat, every thread) '
           'over the window; wake-ups: its threads\' voluntary context switches; kicks: the '
           'driver\'s kick eventfd writes (it kicks only when the device asks: EVENT_IDX); '
           'calls: the device\'s call eventfd writes (the driver keeps RX calls %s); loss = '
           '1 - received / (sent + slots that found the TX ring full), frames sent in the '
           'window; a run during which other work used >= 0.25 cores is "disturbed", '
           're-measured (up to %d times) and left out where undisturbed runs exist%s'
           % ('enabled, as a guest re-arming its interrupt' if args.rx_irq == 'on'
              else 'suppressed, as a polling guest', getattr(args, 'retries', 1),
              placement_note(meta.get('cpu_placement')))]
    errs = [r for r in runs if 'error' in r]
    if errs:
        md += ['', '%d run(s) failed: %s' % (len(errs), '; '.join(
            '%s/%s/%s: %s' % (r['config'], r['size'], r['key'], r['error'][:200])
            for r in errs[:10]))]
    if info.get('error'):
        md += ['', 'stopped early: ' + info['error'][:800]]
    md = '\n'.join(md) + '\n'
    for path in (out, os.path.join(resdir, 'efficiency-latest.json')):
        with open(path, 'w') as f:
            json.dump(result, f, indent=1, default=str)
    with open(os.path.join(resdir, 'efficiency-latest.md'), 'w') as f:
        f.write(md)
    png = os.path.join(resdir, 'efficiency-latest.png')
    drawn = bool(summary) and chart(summary, configs, sizes, png,
                                    os.path.join(resdir, 'efficiency-latest.dat'))
    log('\n' + md)
    log('wrote %s, efficiency-latest.json, efficiency-latest.md%s in %s'
        % (out, ', efficiency-latest.png' if drawn else '', resdir))
