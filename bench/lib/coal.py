# SPDX-License-Identifier: MIT
"""make bench's stall-guard and adaptive rows (bench/coalescing.py): stall guard on/off, vnetd adaptive, the 7.2 driver's DIM.

UML guests with 1 GB of memory (the guest keeps Linux's default TCP sysctls, which scale with
memory) on a vnetd tap port, one guest at a time:
  uml-1g    bookworm's UML 6.1: none; AGGRESSIVE (5000 µs / 50 frames, guest ethtool -C) with the
            stall guard on (the default) and off (vnetctl stall-guard p0 off); vnetd adaptive
            (vnetctl coalesce p0 adaptive on, the guest sets nothing);
  uml72-1g  sid's UML 7.2: none; the driver's own DIM (ethtool -C eth0 adaptive-rx on; TX has no
            DIM in Linux, so TX stays at none's values); vnetd adaptive.
Profiles are interleaved per rep. Workloads per profile: bulk TCP both ways (iperf3, as the
other rows), paced UDP (iperf3 -u -l 1400 --pacing-timer 100) at 20 and 200 Mbit/s both ways, sockperf UDP
ping-pong p50/p99.
The "targets" of results/latest.json come from the uml-1g medians of one run (see targets()).
Paced rates: at 20 Mbit/s (1 800 packets/s) AGGRESSIVE's 5 ms timer alone allows at most
1 - 1/(5.56 ms x 1 800/s) = 90 % fewer interrupts than one per packet, guard or no guard (and
less where the guest merges packets without coalescing); at 200 Mbit/s (17 800 packets/s) its
50-frame count fills within the 5 ms, the regime the profile is for. irq_reduction_aggressive_paced
is the 200 Mbit/s figure; the 20 Mbit/s one is in the per-direction object and the tables.
"""

import json
import os

from tests.kit import harness
from tests.kit.harness import Netns, UmlGuest, Vnetd, host_addr

from . import measure as B
from .common import log
from .report import fmt, med, spread, summarize

# --guest-like name -> (setup name in the results, label, guest kit suite, profiles)
COAL_GUESTS = {
    'uml-1g': ('uml-1g-vnetd', 'UML 6.1 (bookworm), 1 GB', 'bookworm',
               ['none', 'aggressive', 'aggressive-noguard', 'adaptive']),
    'uml72-1g': ('uml72-1g-vnetd', 'UML 7.2 (sid), 1 GB', 'sid', ['none', 'dim', 'adaptive']),
}
MEM = '1G'
NONE_VALUES = (0, 0, 0, 1)          # see measure.PROFILES['none']
AGGR_VALUES = (5000, 50, 5000, 50)
PROFILE_LABELS = {
    'none': 'none (guest ethtool -C 0/0, 0/1)',
    'aggressive': 'AGGRESSIVE 5000 µs/50, stall guard on',
    'aggressive-noguard': 'AGGRESSIVE 5000 µs/50, stall guard off',
    'adaptive': 'vnetd adaptive (vnetctl coalesce p0 adaptive on)',
    'dim': 'driver DIM (ethtool -C eth0 adaptive-rx on)',
}
SHORT = {'aggressive': 'aggr+guard', 'aggressive-noguard': 'aggr-noguard'}   # chart x labels
PACED_RATE, PACED_LEN = '20M', 1400
# iperf3's pacing tick: its default (1000 µs) sends a burst per tick (18 packets at 200 Mbit/s),
# which the guest's NAPI merges into a few interrupts even without coalescing; 100 µs spaces
# the packets evenly (a paced stream, not a train of bursts).
PACING_TIMER_US = 100
# (run kind, summary key prefix, iperf3 -b): the coalescing rows' paced UDP rates.
PACED = (('paced', 'paced_', '20M'), ('paced_hi', 'pacedhi_', '200M'))
# The goals of the "targets" keys (ratios; the rtt one is a maximum).
GOALS = {'tx_throughput_retained_aggressive': ('>=', 0.95),
         'rx_throughput_retained_aggressive': ('>=', 0.95),
         'irq_reduction_aggressive_paced': ('>=', 0.90),
         'adaptive_irq_reduction_bulk': ('>=', 0.50),
         'adaptive_throughput_retained': ('>=', 0.98),
         'adaptive_rtt_p50_ratio': ('<=', 1.10)}
STATS_KEYS = ('early_idle', 'early_ring', 'early_bytes', 'adaptive_level', 'adaptive_changes')


def run_paced(ns, direction, duration, rate=PACED_RATE):
    """Paced UDP with iperf3 -u: RX = host -> guest (client in the namespace), TX = -R."""
    argv = ['iperf3', '-c', B.GUEST_IP, '-u', '-b', rate, '-l', str(PACED_LEN),
            '--pacing-timer', str(PACING_TIMER_US),
            '-t', str(duration), '-J', '--connect-timeout', '5000']
    if direction == 'tx':
        argv.append('-R')
    try:
        r = ns.run(argv, check=False, timeout=duration + 20)
    except Exception as e:  # subprocess.TimeoutExpired and friends
        return {'error': 'iperf3 -u: %s' % e}
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return {'error': 'iperf3 -u gave no JSON: %s %s' % (r.stdout[-300:], r.stderr[-300:])}
    s = j.get('end', {}).get('sum_received') or j.get('end', {}).get('sum')
    if j.get('error') or not s:
        return {'error': 'iperf3 -u: %s' % j.get('error', 'no sum')}
    return {'gbps': s.get('bits_per_second', 0) / 1e9, 'lost_percent': s.get('lost_percent'),
            'packets': s.get('packets'), 'jitter_ms': s.get('jitter_ms')}


def apply_profile(g, vd, suite, prof):
    """Set one profile from a clean state; returns what was done and what vnetd then holds."""
    cmds = []

    def ctl(*a):
        r = vd.ctl(*a, check=False)
        cmds.append(('vnetctl ' + ' '.join(a), r.returncode, (r.stdout + r.stderr).strip()))

    def guest(cmd):
        rc, out = g.run(cmd, timeout=60)
        cmds.append((cmd, rc, out.strip()))
        return rc

    ctl('coalesce', 'p0', 'adaptive', 'off')
    if suite == 'sid':
        guest('ethtool -C eth0 adaptive-rx off')
    ctl('stall-guard', 'p0', 'off' if prof == 'aggressive-noguard' else 'on')
    ok = True
    if prof != 'adaptive':
        v = AGGR_VALUES if prof.startswith('aggressive') else NONE_VALUES
        ok = guest('ethtool -C eth0 rx-usecs %d rx-frames %d tx-usecs %d tx-frames %d' % v) == 0
    if prof == 'dim':
        ok = guest('ethtool -C eth0 adaptive-rx on') == 0
    if prof == 'adaptive':
        ctl('coalesce', 'p0', 'adaptive', 'on')
        ok = cmds[-1][1] == 0
    st = B.queue_stats(vd)
    got = {q: (st[q]['max_usecs'], st[q]['max_packets'], st[q]['set_by'], st[q].get('adaptive'))
           for q in ('rx', 'tx')}
    if prof == 'adaptive':
        ok = ok and all(got[q][2] == 'adaptive' for q in got)
    elif prof != 'dim':
        ok = ok and got['rx'][:2] == v[:2] and got['tx'][:2] == v[2:]
    if not ok:
        log('  WARNING: profile %s: %s; vnetd holds %s' % (prof, cmds, got))
    return {'profile': prof, 'commands': cmds, 'vnetd': got, 'ok': ok}


def measure_paced(subj, ns, prof, args, rep, runs):
    for (kind, _, rate), d in ((k, d) for k in PACED for d in args.directions):
        res, m = subj.measure(lambda: run_paced(ns, d, args.paced_duration, rate))
        if 'error' in res:
            log('  %s %s paced %s rep %d: %s' % (subj.name, prof, d, rep, res['error']))
            B.check_reachable(subj, ns, '%s paced %s rep %d' % (prof, d, rep))
            B.restart_guest_servers(subj.g)
        m.update(res)
        runs.append(dict(setup=subj.name, profile=prof, kind=kind, direction=d, rep=rep,
                         rate=rate, **m))
        log('  %-14s %-18s paced %s %s rep %d: %s' % (
            subj.name, prof, rate, d, rep, 'ERROR' if 'error' in res else
            '%.1f Mbit/s, lost %.1f %%, %.0f irq/s, notif/s rx %.0f tx %.0f' % (
                1000 * res['gbps'], res.get('lost_percent') or 0, m['irq_per_s'],
                m.get('notif_rx_per_s', 0), m.get('notif_tx_per_s', 0))))


def bench_coal_guest(args, key, wd, runs, info):
    setup, label, suite, profiles = COAL_GUESTS[key]
    sock = os.path.join(wd, '%s.sock' % key)
    inf = info.setdefault('coal_guests', {}).setdefault(key, {'setup': setup, 'mem': MEM})
    with Netns(B.NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', B.HOST_IP)
        with UmlGuest(harness.uml_kit(suite), sock, mem=MEM,
                      log_path=os.path.join(wd, '%s.log' % key)) as g:
            log('%s booted in %.1f s on vnetd port p0' % (label, g.boot_time))
            inf['guest_kernel'] = g.run('uname -r')[1].strip()
            inf['tcp_sysctls'] = {k: g.run('cat /proc/sys/net/ipv4/%s' % k)[1].strip()
                                  for k in ('tcp_rmem', 'tcp_wmem', 'tcp_mem')}
            B.guest_net_setup(g)
            subj = B.Subject(setup, g, 'virtio-uml', vd)
            inf['applied'] = []
            for rep in range(1, args.reps + 1):
                for prof in profiles:
                    a = apply_profile(g, vd, suite, prof)
                    a['rep'] = rep
                    inf['applied'].append(a)
                    B.measure_profile(subj, ns, prof, args, rep, runs, args.duration,
                                      args.rr_duration)
                    measure_paced(subj, ns, prof, args, rep, runs)
        if not vd.alive():
            log('WARNING: vnetd died during the %s benchmark' % key)
            inf['vnetd_died'] = True


def run_all(args, wd, runs, info):
    """Every coalescing row (both guests); errors of one guest are recorded, the other runs."""
    for key in (k for k in COAL_GUESTS if k in args.coal_guests.split(',')):
        try:
            bench_coal_guest(args, key, wd, runs, info)
        except B.Stalled as e:
            log('bench: %s stopped early: %s' % (key, e))
            info['%s_stalled' % key] = str(e)
        except B.GuestError as e:
            log('bench: %s failed: %s' % (key, str(e)[:1500]))
            info['%s_error' % key] = str(e)[:3000]
        except SystemExit as e:     # harness.skip(): this guest cannot run on this host
            if e.code != 77:
                raise
            log('bench: %s skipped: it cannot run on this host' % key)
            info['%s_skipped' % key] = True
    return coal_summary(runs, args.directions)


def coal_summary(runs, directions):
    """summarize() for bulk and ping-pong, plus paced_<dir> entries per setup and profile."""
    out = {}
    for key, (setup, _, _, profiles) in COAL_GUESTS.items():
        s = summarize(runs, [setup], profiles, directions).get(setup)
        if not s:
            continue
        for p, e in s.items():
            for (kind, pre, _), d in ((k, d) for k in PACED for d in directions):
                rs = [r for r in runs if r['setup'] == setup and r['profile'] == p and
                      r['kind'] == kind and r['direction'] == d and 'gbps' in r]
                e[pre + d] = {k: spread([r.get(k) for r in rs]) for k in
                                   ('gbps', 'lost_percent', 'irq_per_s', 'notif_rx_per_s',
                                    'notif_tx_per_s', 'machine_busy_pct')}
            bulk = [r for r in runs if r['setup'] == setup and r['profile'] == p and
                    r['kind'] == 'bulk' and 'gbps' in r]
            e['early'] = {q: {k: sum(r[q].get(k, 0) for r in bulk if q in r)
                              for k in STATS_KEYS[:3]} for q in ('rx', 'tx')}
        out[setup] = s
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def paced_cut(a, n, key):
    """1 - paced IRQ/s of profile summary a over none's; None if either was not measured."""
    r = ratio(med((a or {}).get(key, {}).get('irq_per_s')), med(n.get(key, {}).get('irq_per_s')))
    return None if r is None else 1 - r


def targets(cs, directions):
    """The issue's six ratios from the uml-1g medians; worse direction where it says so."""
    s = cs.get(COAL_GUESTS['uml-1g'][0], {})
    if not all(p in s for p in ('none', 'aggressive', 'adaptive')):
        return None, {}
    n, a, ad = s['none'], s['aggressive'], s['adaptive']
    per = {}
    for d in directions:
        per[d] = {
            'throughput_retained_aggressive': ratio(med(a[d]['gbps']), med(n[d]['gbps'])),
            'irq_reduction_aggressive_paced':
                paced_cut(a, n, 'pacedhi_' + d),
            'irq_reduction_aggressive_paced_20M': paced_cut(a, n, 'paced_' + d),
            'irq_reduction_aggressive_noguard_paced_20M':
                paced_cut(s.get('aggressive-noguard'), n, 'paced_' + d),
            'adaptive_irq_reduction_bulk':
                1 - ratio(med(ad[d]['irq_per_s']), med(n[d]['irq_per_s'])),
            'adaptive_throughput_retained': ratio(med(ad[d]['gbps']), med(n[d]['gbps'])),
            'aggressive_noguard_throughput_retained':
                ratio(med(s.get('aggressive-noguard', {}).get(d, {}).get('gbps')), med(n[d]['gbps'])),
        }
    t = {'tx_throughput_retained_aggressive': per.get('tx', {}).get('throughput_retained_aggressive'),
         'rx_throughput_retained_aggressive': per.get('rx', {}).get('throughput_retained_aggressive'),
         'irq_reduction_aggressive_paced': min((per[d]['irq_reduction_aggressive_paced'] for d in per
                                                if per[d]['irq_reduction_aggressive_paced'] is not None),
                                               default=None),
         'adaptive_irq_reduction_bulk': min(per[d]['adaptive_irq_reduction_bulk'] for d in per),
         'adaptive_throughput_retained': min(per[d]['adaptive_throughput_retained'] for d in per),
         'adaptive_rtt_p50_ratio': ratio(med(ad['rr']['rtt_p50_us']), med(n['rr']['rtt_p50_us']))}
    return t, per


def met(k, v):
    if v is None:
        return None
    op, goal = GOALS[k]
    return v >= goal - 1e-9 if op == '>=' else v <= goal + 1e-9


def dim_compare(cs, directions):
    """vnetd adaptive vs the 7.2 driver's DIM on the same guest: ratios adaptive ÷ DIM."""
    s = cs.get(COAL_GUESTS['uml72-1g'][0], {})
    if 'dim' not in s or 'adaptive' not in s:
        return None
    out = {}
    for d in directions:
        dim, ad = s['dim'][d], s['adaptive'][d]
        out[d] = {'throughput': ratio(med(ad['gbps']), med(dim['gbps'])),
                  'irq_per_s': ratio(med(ad['irq_per_s']), med(dim['irq_per_s'])),
                  'irq_per_gbit': ratio(med(ad['irq_per_gbit']), med(dim['irq_per_gbit']))}
        # "At least as well as DIM at equal throughput": no more interrupts per Gbit moved.
        out[d]['adaptive_at_least_as_good'] = (out[d]['irq_per_gbit'] is not None and
                                               out[d]['irq_per_gbit'] <= 1.0)
    rr_d, rr_a = med(s['dim']['rr']['rtt_p50_us']), med(s['adaptive']['rr']['rtt_p50_us'])
    out['rtt_p50'] = ratio(rr_a, rr_d)
    return out


def table_md(cs, directions):
    lines = []
    for key, (setup, label, _, profiles) in COAL_GUESTS.items():
        s = cs.get(setup)
        if not s:
            continue
        lines += ['### Coalescing rows: %s on vnetd (tap)' % label, '',
                  '| Guest | Profile | Dir | Bulk TCP Gbit/s | bulk IRQ/s | IRQ per Gbit | notif/s rx / tx '
                  '| guard early notif. rx / tx (bulk runs, all reps) | paced UDP %s Mbit/s | paced IRQ/s | paced notif/s rx / tx '
                  '| paced 200 Mbit/s: Mbit/s, IRQ/s | ping-pong RTT p50 / p99 µs |' % PACED_RATE,
                  '|' + '---|' * 13]
        for p in (p for p in profiles if p in s):
            e = s[p]
            for i, d in enumerate(directions):
                x, pc, ph = e[d], e['paced_' + d], e.get('pacedhi_' + d, {})
                early = '%d / %d' % tuple(sum(e['early'][q].values()) for q in ('rx', 'tx'))
                rtt = ('%.0f / %.0f' % (med(e['rr']['rtt_p50_us']), med(e['rr']['rtt_p99_us']))
                       if e['rr']['rtt_p50_us'] else '–') if i == 0 else '″'
                notif = ('%.0f / %.0f' % (med(x['notif_rx_per_s']), med(x['notif_tx_per_s']))
                         if x['notif_rx_per_s'] else '–')
                pnotif = ('%.0f / %.0f' % (med(pc['notif_rx_per_s']), med(pc['notif_tx_per_s']))
                          if pc['notif_rx_per_s'] else '–')
                pg = {'median': 1000 * med(pc['gbps']), 'n': 1} if pc['gbps'] else None
                hi = ('%.0f, %.0f' % (1000 * med(ph['gbps']), med(ph['irq_per_s']))
                      if ph.get('gbps') and ph.get('irq_per_s') else '–')
                lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    setup if i == 0 else '', PROFILE_LABELS[p] if i == 0 else '', d.upper(),
                    fmt(x['gbps'], '%.3f'), fmt(x['irq_per_s'], '%.0f'),
                    fmt(x['irq_per_gbit'], '%.0f', False), notif, early if i == 0 else '″',
                    fmt(pg, '%.1f', False), fmt(pc['irq_per_s'], '%.0f'), pnotif, hi, rtt))
        lines.append('')
    return '\n'.join(lines)


def targets_md(t, per, dimc):
    names = {'tx_throughput_retained_aggressive': 'TX throughput, AGGRESSIVE+guard ÷ none',
             'rx_throughput_retained_aggressive': 'RX throughput, AGGRESSIVE+guard ÷ none',
             'irq_reduction_aggressive_paced': '1 − paced-UDP (200 Mbit/s) IRQ/s AGGRESSIVE+guard ÷ none (worse dir.)',
             'adaptive_irq_reduction_bulk': '1 − bulk IRQ/s adaptive ÷ none (worse dir.)',
             'adaptive_throughput_retained': 'bulk throughput adaptive ÷ none (worse dir.)',
             'adaptive_rtt_p50_ratio': 'ping-pong RTT p50 adaptive ÷ none'}
    lines = ['`"targets"` (UML 6.1, 1 GB, medians of this run):', '',
             '| target | value | goal | met |', '|---|---|---|---|']
    for k, label in names.items():
        v = t.get(k)
        op, goal = GOALS[k]
        pct = k != 'adaptive_rtt_p50_ratio'
        vs = '–' if v is None else ('%.1f %%' % (100 * v) if pct else '%.2f×' % v)
        gs = ('%s %.0f %%' % ('≥' if op == '>=' else '≤', 100 * goal) if pct else '≤ %.2f×' % goal)
        m = met(k, v)
        lines.append('| %s (`%s`) | %s | %s | %s |' % (label, k, vs, gs,
                                                      '–' if m is None else ('✔' if m else '✘')))
    if per:
        lines += ['', 'Per direction: ' + '; '.join(
            '%s: %s' % (d.upper(), ', '.join('%s %.1f %%' % (k, 100 * v) for k, v in x.items()
                                             if v is not None)) for d, x in per.items())]
    if dimc:
        lines += ['', 'UML 7.2, 1 GB: vnetd adaptive ÷ the driver\'s DIM (same guest, same run):', '',
                  '| Dir | throughput | IRQ/s | IRQ per Gbit | adaptive at least as good as DIM on '
                  'IRQ/s at equal throughput (IRQ per Gbit ≤ 1) |', '|---|---|---|---|---|']
        for d, x in dimc.items():
            if d == 'rtt_p50':
                continue
            f = lambda v: '–' if v is None else '%.2f' % v  # noqa: E731
            lines.append('| %s | %s | %s | %s | %s |' % (d.upper(), f(x['throughput']),
                                                         f(x['irq_per_s']), f(x['irq_per_gbit']),
                                                         '✔' if x['adaptive_at_least_as_good'] else '✘'))
        if dimc.get('rtt_p50') is not None:
            lines.append('\nPing-pong RTT p50, adaptive ÷ DIM: %.2f' % dimc['rtt_p50'])
    return '\n'.join(lines)


def chart_rows(cs, directions, path_dat):
    """gnuplot commands for one multiplot row per coalescing guest (three panels each):
    bulk throughput, bulk IRQ/s, paced-UDP IRQ/s. Returns (rows, commands)."""
    gp, rows = [], 0
    panels = [('gbps', '', 'bulk TCP Gbit/s'), ('irq_per_s', '', 'bulk TCP guest IRQ/s'),
              ('irq_per_s', 'paced_', 'paced UDP guest IRQ/s (20M; 200M: hi)'),
              ('irq_per_s', 'pacedhi_', None)]
    nd = len(directions)
    for key, (setup, label, _, profiles) in COAL_GUESTS.items():
        s = cs.get(setup)
        if not s:
            continue
        dat = '%s-%s.dat' % (path_dat[:-len('.dat')], setup)
        with open(dat, 'w') as f:
            f.write('# %s: profile ' % setup + ' '.join('%s%s_%s med min max' % (pre, m, d)
                                                      for m, pre, _ in panels for d in directions) + '\n')
            for p in (p for p in profiles if p in s):
                cols = []
                for m, pre, _ in panels:
                    for d in directions:
                        x = s[p].get(pre + d, {}).get(m)
                        cols += ['%g' % x['median'], '%g' % x['min'], '%g' % x['max']] if x else ['0'] * 3
                f.write('%s %s\n' % (SHORT.get(p, p), ' '.join(cols)))
        for mi, (m, pre, title) in enumerate(panels):
            if title is None:
                continue  # plotted with the panel before it
            series = [(mi, '')] + ([(mi + 1, ' hi')] if mi + 1 < len(panels) and
                                   panels[mi + 1][2] is None else [])
            plots = ['"%s" using %d:%d:%d:xtic(1) title "%s%s"' % (dat, c, c + 1, c + 2, d.upper(), sfx)
                     for pi, sfx in series for di, d in enumerate(directions)
                     for c in [2 + 3 * (pi * nd + di)]]
            gp += ['set title "%s: %s"' % (label, title), 'plot ' + ', '.join(plots)]
        rows += 1
    return rows, gp


def summary_line(t):
    return ', '.join('%s %s' % (k, '–' if v is None else '%.3f' % v) for k, v in t.items())

