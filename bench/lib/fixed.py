# SPDX-License-Identifier: MIT
"""make bench's fixed-load rows (bench/coalescing.py), and the measurements of the fixed-load
diagnosis of where CPU goes (bench/bench_fixed.py --diag).

Bulk rows saturate a TCG guest (~100 % of a CPU): CPU per Gbit then only follows throughput.
At a fixed offered load every profile moves the same bytes, so CPU per Gbit is the CPU a profile
costs or saves. Loads: TCP paced with `iperf3 -b RATE --pacing-timer PT` and UDP
(`iperf3 -u -b RATE -l 1400 --pacing-timer PT`), both directions, with a ping (every 10 ms)
running alongside for RTT p50/p99.

Per run, beside bench/coalescing.py's numbers: the guest's busy fraction (the guest's own /proc/stat
"cpu" line: everything but idle and iowait), the guest process's CPU split into its vCPU
threads (QEMU: threads named "CPU n/TCG"; UML: the whole process tree is the guest) and the rest,
vnetd's CPU, and CPU seconds per Gbit delivered for each and their sum.

bench/bench_fixed.py --diag: the QEMU 11 full-device guest at a fixed
rate (default 250 Mbit/s TCP), profiles none and AGGRESSIVE interleaved, and per run also
vnetd's early-notification reasons per queue and its system calls (perf stat tracepoints:
timerfd_settime = timer arms, epoll_wait = wake-ups, write = notifications to the call fds,
read = kicks and timer expiries), into results/fixed-diag-<date>.json.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import time

from . import common
from . import measure as B
from .common import log, spread

CLK_TCK = os.sysconf('SC_CLK_TCK')
PACING_TIMER_US = 100          # iperf3's default 1000 µs sends a burst per tick
UDP_LEN = 1400
PING_INTERVAL = 0.01
# What a fixed-load run keeps per queue from vnetctl stats.
QKEYS = ('packets', 'bytes', 'kicks', 'notifications', 'suppressed', 'held', 'timer_notifications',
         'early_idle', 'early_ring', 'early_bytes')
SYSCALLS = ('timerfd_settime', 'epoll_wait', 'epoll_pwait', 'write', 'read')
FIXED_KINDS = ('tcp', 'udp')


# ---------------------------------------------------------------------------------------------
# sampling

def thread_cpu(pid):
    """(vCPU seconds, other seconds) of process pid: threads named "CPU n/..." (QEMU's vCPUs)
    and the rest (I/O thread, vhost-user, RCU, ...)."""
    vcpu = rest = 0
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return 0.0, 0.0
    for t in tids:
        try:
            with open('/proc/%d/task/%s/stat' % (pid, t)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index('(') + 1:s.rindex(')')]
        f = s[s.rindex(')') + 2:].split()
        ticks = int(f[11]) + int(f[12])
        if comm.startswith('CPU ') and '/' in comm:
            vcpu += ticks
        else:
            rest += ticks
    return vcpu / CLK_TCK, rest / CLK_TCK


def guest_stat(g):
    """(busy, total) ticks of the guest's /proc/stat "cpu" line (idle and iowait not busy)."""
    rc, out = g.run('head -1 /proc/stat', timeout=60)
    v = [int(x) for x in out.split()[1:]] if rc == 0 and out.startswith('cpu') else []
    if len(v) < 5:
        return None
    return sum(v) - v[3] - v[4], sum(v)


def qemu_pid(g):
    """The QEMU process of a QemuGuest (the child of `ip netns exec` when there is one), or None
    for a guest without vCPU threads (UML)."""
    pid = g.proc.pid
    if 'qemu' not in ' '.join(getattr(g, 'argv', lambda: [])()):
        return None
    return pid


class PerfSys:
    """perf stat over vnetd's system calls (tracepoints) for the length of a run; counts or {}."""

    def __init__(self, pid):
        self.pid, self.p = pid, None

    def __enter__(self):
        if shutil.which('perf'):
            ev = ','.join('syscalls:sys_enter_%s' % s for s in SYSCALLS)
            self.out = '/tmp/vnetd-perf-%d-%d.txt' % (os.getpid(), self.pid)
            self.p = subprocess.Popen(['perf', 'stat', '-x,', '-o', self.out, '-e', ev, '-p',
                                       str(self.pid)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        self.counts = {}
        if not self.p:
            return False
        self.p.send_signal(2)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        try:
            with open(self.out) as f:
                for line in f:
                    x = line.strip().split(',')
                    if len(x) > 2 and x[0].isdigit():
                        self.counts[x[2].split('sys_enter_')[-1]] = int(x[0])
            os.unlink(self.out)
        except OSError:
            pass
        return False


PING_RE = re.compile(r'time=([\d.]+) ms')


def start_ping(ns, ip, duration):
    return ns.popen(['ping', '-i', str(PING_INTERVAL), '-w', str(int(duration) + 1), '-n', ip],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def ping_result(p):
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out = ''
    rtts = sorted(float(x) * 1000 for x in PING_RE.findall(out or ''))
    if not rtts:
        return {}
    return {'ping_p50_us': rtts[len(rtts) // 2], 'ping_p99_us': rtts[min(len(rtts) - 1,
                                                                         int(len(rtts) * 0.99))],
            'ping_n': len(rtts)}


def run_iperf_fixed(ns, ip, kind, direction, rate, duration):
    """iperf3 at a fixed rate: kind tcp (paced) or udp; RX = host -> guest, TX = -R."""
    argv = ['iperf3', '-c', ip, '-b', rate, '--pacing-timer', str(PACING_TIMER_US),
            '-t', str(duration), '-J', '--connect-timeout', '5000']
    if kind == 'udp':
        argv += ['-u', '-l', str(UDP_LEN)]
    if direction == 'tx':
        argv.append('-R')
    try:
        r = ns.run(argv, check=False, timeout=duration + 30)
    except subprocess.TimeoutExpired:
        return {'error': 'iperf3 timed out'}
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return {'error': 'iperf3 gave no JSON: %s %s' % (r.stdout[-300:], r.stderr[-300:])}
    end = j.get('end', {})
    s = end.get('sum_received') or end.get('sum')
    if j.get('error') or not s:
        return {'error': 'iperf3: %s' % j.get('error', 'no sum')}
    res = {'gbps': s['bits_per_second'] / 1e9, 'bytes': s['bytes']}
    if kind == 'udp':
        res['lost_percent'] = s.get('lost_percent')
    else:
        res['retransmits'] = end.get('sum_sent', {}).get('retransmits')
    return res


def measure_fixed(subj, ns, kind, direction, rate, duration, perf=False):
    """One fixed-load run with every CPU reading; returns the run dict (or one with 'error')."""
    g, vd = subj.g, subj.vd
    qpid = qemu_pid(g)
    irq0, gs0 = B.guest_irqs(g, subj.irq_pattern), guest_stat(g)
    vd.ctl('reset-stats')
    ping = start_ping(ns, B.GUEST_IP, duration)
    tab0, th0, busy0, t0 = B.proc_table(), thread_cpu(qpid) if qpid else None, \
        common.machine_busy(), time.monotonic()
    if perf:
        with PerfSys(vd.proc.pid) as ps:
            res = run_iperf_fixed(ns, B.GUEST_IP, kind, direction, rate, duration)
    else:
        ps, res = None, run_iperf_fixed(ns, B.GUEST_IP, kind, direction, rate, duration)
    t1, busy1, tab1 = time.monotonic(), common.machine_busy(), B.proc_table()
    th1 = thread_cpu(qpid) if qpid else None
    st = B.queue_stats(vd)
    gs1, irq1 = guest_stat(g), B.guest_irqs(g, subj.irq_pattern)
    m = dict(res)
    m.update(ping_result(ping))
    wall = t1 - t0
    guest = B.tree_cpu(tab1, g.proc.pid) - B.tree_cpu(tab0, g.proc.pid)
    vnetd = B.tree_cpu(tab1, vd.proc.pid) - B.tree_cpu(tab0, vd.proc.pid)
    if th0 and th1:
        vcpu, other = th1[0] - th0[0], th1[1] - th0[1]
    else:
        vcpu, other = guest, 0.0
    m.update(wall_s=round(wall, 3), guest_proc_cpu_s=round(guest, 3), vcpu_cpu_s=round(vcpu, 3),
             vmm_other_cpu_s=round(other, 3), vnetd_cpu_s=round(vnetd, 3),
             guest_irqs=irq1 - irq0, irq_per_s=(irq1 - irq0) / wall,
             machine_busy_pct=common.busy_pct(busy0, busy1) * os.cpu_count(),
             loadavg=os.getloadavg()[0])
    m['cpu_s'] = guest + vnetd
    if gs0 and gs1 and gs1[1] > gs0[1]:
        m['guest_busy'] = (gs1[0] - gs0[0]) / (gs1[1] - gs0[1])
    for q in ('rx', 'tx'):
        m[q] = {k: st[q].get(k, 0) for k in QKEYS}
        m['notif_%s_per_s' % q] = st[q]['notifications'] / wall
    if ps is not None:
        m['vnetd_syscalls_per_s'] = {k: v / wall for k, v in ps.counts.items()}
    if 'gbps' in res:
        gbit = res['bytes'] * 8 / 1e9
        if gbit:
            for k in ('cpu_s', 'vcpu_cpu_s', 'vmm_other_cpu_s', 'vnetd_cpu_s'):
                m[k + '_per_gbit'] = m[k] / gbit
            if 'guest_busy' in m:
                m['guest_busy_s_per_gbit'] = m['guest_busy'] * wall / gbit
            m['irq_per_gbit'] = m['guest_irqs'] / gbit
    return m


def short(m):
    if 'error' in m:
        return 'ERROR ' + m['error']
    s = ('%.3f Gbit/s, guest busy %.0f %%, vcpu %.2f other %.2f vnetd %.2f CPU-s/Gbit (sum %.2f), '
         '%.0f irq/s, notif/s rx %.0f tx %.0f, early rx %d/%d/%d tx %d/%d/%d, ping p50 %.0f µs' % (
             m['gbps'], 100 * m.get('guest_busy', 0), m.get('vcpu_cpu_s_per_gbit', 0),
             m.get('vmm_other_cpu_s_per_gbit', 0), m.get('vnetd_cpu_s_per_gbit', 0),
             m.get('cpu_s_per_gbit', 0), m['irq_per_s'], m['notif_rx_per_s'], m['notif_tx_per_s'],
             m['rx']['early_idle'], m['rx']['early_ring'], m['rx']['early_bytes'],
             m['tx']['early_idle'], m['tx']['early_ring'], m['tx']['early_bytes'],
             m.get('ping_p50_us', 0)))
    if m.get('vnetd_syscalls_per_s'):
        s += ', vnetd/s: ' + ' '.join('%s %.0f' % kv for kv in sorted(m['vnetd_syscalls_per_s'].items()))
    return s


# ---------------------------------------------------------------------------------------------
# make bench rows (bench/coalescing.py)

def choose_rate(subj, ns, args):
    """The fixed rate for this guest: about half of none's saturated bulk TCP throughput in the
    slower direction, measured now (none set); rounded down to 10 Mbit/s. Returns (rate
    string, calibration dict)."""
    B.apply_guest_profile(subj.g, subj.vd, 'none')
    cal = {}
    for d in args.directions:
        res = B.run_iperf(ns, d, max(2, args.duration))
        cal[d] = res.get('gbps')
    got = [v for v in cal.values() if v]
    if not got:
        return None, cal
    mbit = max(10, int(500 * min(got) / 10) * 10)
    return '%dM' % mbit, cal


def measure_fixed_rows(subj, ns, prof, args, rep, runs, rate):
    for kind in FIXED_KINDS:
        for d in args.directions:
            m = measure_fixed(subj, ns, kind, d, rate[kind], args.fixed_duration)
            if 'error' in m:
                log('  %s %s fixed %s %s rep %d: %s' % (subj.name, prof, kind, d, rep, m['error']))
                B.check_reachable(subj, ns, '%s fixed %s rep %d' % (prof, d, rep))
                B.restart_guest_servers(subj.g)
            runs.append(dict(setup=subj.name, profile=prof, kind='fixed_' + kind, direction=d,
                             rep=rep, rate=rate[kind], **m))
            log('  %-10s %-10s fixed %s %s %s rep %d: %s' % (subj.name, prof, kind, rate[kind], d, rep,
                                                            short(m)))


def run_guest(subj, ns, args, runs, inf):
    """The fixed-load rows of one booted guest: the rate from none's bulk runs of this run (or a
    calibration now), then args.fixed_reps reps, profiles interleaved within each."""
    bulk = {}
    for d in args.directions:
        v = [r['gbps'] for r in runs if r['setup'] == subj.name and r['profile'] == 'none' and
             r['kind'] == 'bulk' and r['direction'] == d and r.get('gbps')]
        if v:
            bulk[d] = statistics.median(v)
    if len(bulk) == len(args.directions):
        rate, src = '%dM' % max(10, int(500 * min(bulk.values()) / 10) * 10), 'bulk runs'
    else:
        rate, bulk = choose_rate(subj, ns, args)
        src = 'calibration'
    if rate is None:
        log('  %s: no fixed-load rows: none moved no bulk traffic' % subj.name)
        return
    # UDP: half of what none carries unpaced (-b 0) in the slower direction, measured now
    B.apply_guest_profile(subj.g, subj.vd, 'none')
    udp = {d: run_iperf_fixed(ns, B.GUEST_IP, 'udp', d, '0', max(2, args.fixed_duration)).get('gbps')
           for d in args.directions}
    got = [v for v in udp.values() if v]
    urate = '%dM' % max(10, int(500 * min(got) / 10) * 10) if got else rate
    inf['fixed'] = {'rate': rate, 'none_bulk_gbps': bulk, 'from': src, 'udp_rate': urate,
                    'none_udp_unpaced_gbps': udp}
    log('%s: fixed-load rates: TCP %sbit/s (half of none\'s bulk %s from the %s), UDP %sbit/s '
        '(half of none\'s unpaced UDP %s)' % (
            subj.name, rate, ', '.join('%s %.2f' % kv for kv in bulk.items()), src, urate,
            ', '.join('%s %.2f' % (k, v or 0) for k, v in udp.items())))
    for rep in range(1, args.fixed_reps + 1):
        for prof in args.profiles:
            B.apply_guest_profile(subj.g, subj.vd, prof)
            measure_fixed_rows(subj, ns, prof, args, rep, runs, {'tcp': rate, 'udp': urate})


SUM_KEYS = ('gbps', 'guest_busy', 'guest_busy_s_per_gbit', 'vcpu_cpu_s_per_gbit',
            'vmm_other_cpu_s_per_gbit', 'vnetd_cpu_s_per_gbit', 'cpu_s_per_gbit', 'irq_per_s',
            'irq_per_gbit', 'notif_rx_per_s', 'notif_tx_per_s', 'ping_p50_us', 'ping_p99_us',
            'lost_percent', 'loadavg')


def med(x):
    return x['median'] if x else None


def fixed_summary(runs, setups, profiles, directions):
    """{setup: {profile: {'fixed_<kind>_<dir>': {key: spread}}}} plus early-reason sums."""
    out = {}
    for s in setups:
        for p in profiles:
            for kind in FIXED_KINDS:
                for d in directions:
                    rs = [r for r in runs if r['setup'] == s and r['profile'] == p and
                          r['kind'] == 'fixed_' + kind and r['direction'] == d and 'gbps' in r]
                    if not rs:
                        continue
                    e = {k: spread([r.get(k) for r in rs]) for k in SUM_KEYS}
                    e['rate'] = rs[0]['rate']
                    e['early'] = {q: {k: sum(r[q].get(k, 0) for r in rs)
                                      for k in ('early_idle', 'early_ring', 'early_bytes')}
                                  for q in ('rx', 'tx')}
                    out.setdefault(s, {}).setdefault(p, {})['fixed_%s_%s' % (kind, d)] = e
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def targets_fixed(fs, setup, directions, kind='tcp'):
    """The fixed-load keys of targets_qemu (worse direction) and their per-direction values."""
    s = fs.get(setup, {})
    per = {}
    for d in directions:
        k = 'fixed_%s_%s' % (kind, d)
        try:
            n, a, mo = s['none'][k], s['aggressive'][k], s['moderate'][k]
        except KeyError:
            continue
        per[d] = {
            'cpu_per_gbit_reduction_aggressive_fixed':
                1 - ratio(med(a['cpu_s_per_gbit']), med(n['cpu_s_per_gbit'])),
            'cpu_per_gbit_reduction_moderate_fixed':
                1 - ratio(med(mo['cpu_s_per_gbit']), med(n['cpu_s_per_gbit'])),
            'throughput_retained_aggressive_fixed': ratio(med(a['gbps']), med(n['gbps'])),
            'rtt_p50_ratio_aggressive_fixed': ratio(med(a['ping_p50_us']), med(n['ping_p50_us'])),
            'irq_reduction_aggressive_fixed': 1 - ratio(med(a['irq_per_s']), med(n['irq_per_s'])),
        }
        # What removing every interrupt would save, at AGGRESSIVE's CPU saved per interrupt
        # saved (linear): no coalescing profile can reduce CPU per Gbit by more at this load.
        r = per[d]
        ir = r['irq_reduction_aggressive_fixed']
        r['cpu_per_gbit_reduction_ceiling_fixed'] = (
            r['cpu_per_gbit_reduction_aggressive_fixed'] / ir
            if ir is not None and ir > 0.1 and r['cpu_per_gbit_reduction_aggressive_fixed'] is not None
            else None)
    if not per:
        return {}, per
    t = {k: min((per[d][k] for d in per if per[d][k] is not None), default=None)
         for k in per[next(iter(per))] if k != 'rtt_p50_ratio_aggressive_fixed'}
    t['rtt_p50_ratio_aggressive_fixed'] = max(per[d]['rtt_p50_ratio_aggressive_fixed'] or 0
                                              for d in per)
    return t, per


GOALS_FIXED = {'cpu_per_gbit_reduction_aggressive_fixed': 0.30,
               'cpu_per_gbit_reduction_moderate_fixed': 0.20,
               'throughput_retained_aggressive_fixed': 0.99}


def f3(x, spec='%.2f', rng=True):
    if not x:
        return '–'
    s = spec % x['median']
    if rng and x['n'] > 1:
        s += ' (%s–%s)' % (spec % x['min'], spec % x['max'])
    return s


def table_md(fs, labels, directions):
    lines = []
    for setup, profs in fs.items():
        for kind in FIXED_KINDS:
            rate = next((e['fixed_%s_%s' % (kind, d)]['rate'] for e in profs.values()
                         for d in directions if 'fixed_%s_%s' % (kind, d) in e), None)
            if not rate:
                continue
            lines += ['### Fixed load: %s, %s at %sbit/s (%s)' % (
                labels.get(setup, setup), 'TCP paced' if kind == 'tcp' else 'UDP', rate,
                'iperf3 -b %s --pacing-timer %d%s' % (rate, PACING_TIMER_US,
                                                      ' -u -l %d' % UDP_LEN if kind == 'udp' else '')),
                '', '| Profile | Dir | Gbit/s | guest busy | CPU-s per Gbit: vCPU / VMM rest / vnetd '
                '/ **sum** | guest IRQ/s | IRQ per Gbit | notif/s rx / tx | early rx / tx '
                '(idle, ring, bytes; all reps) | ping RTT p50 / p99 µs |', '|' + '---|' * 9]
            for p, e in profs.items():
                for d in directions:
                    x = e.get('fixed_%s_%s' % (kind, d))
                    if not x:
                        continue
                    early = ' / '.join('%d,%d,%d' % tuple(x['early'][q][k] for k in
                                                        ('early_idle', 'early_ring', 'early_bytes'))
                                       for q in ('rx', 'tx'))
                    lines.append('| %s | %s | %s | %s | %s / %s / %s / **%s** | %s | %s | %s / %s | %s | %s / %s |' % (
                        p, d.upper(), f3(x['gbps'], '%.3f'), f3(x['guest_busy'], '%.2f'),
                        f3(x['vcpu_cpu_s_per_gbit'], '%.2f', False),
                        f3(x['vmm_other_cpu_s_per_gbit'], '%.2f', False),
                        f3(x['vnetd_cpu_s_per_gbit'], '%.2f', False), f3(x['cpu_s_per_gbit']),
                        f3(x['irq_per_s'], '%.0f'), f3(x['irq_per_gbit'], '%.0f', False),
                        f3(x['notif_rx_per_s'], '%.0f', False), f3(x['notif_tx_per_s'], '%.0f', False),
                        early, f3(x['ping_p50_us'], '%.0f'), f3(x['ping_p99_us'], '%.0f', False)))
            lines.append('')
    return '\n'.join(lines)


def targets_md(t, per):
    if not t:
        return ''
    dirs = list(per)
    lines = ['| QEMU full-device, fixed load (TCP paced) | %s | worse | goal |' %
             ' | '.join(d.upper() for d in dirs), '|---|' + '---|' * (len(dirs) + 2)]
    for k, v in t.items():
        goal = GOALS_FIXED.get(k)
        pct = k != 'rtt_p50_ratio_aggressive_fixed'
        fm = (lambda x: '–' if x is None else '%.1f %%' % (100 * x)) if pct else \
            (lambda x: '–' if x is None else '%.2f×' % x)
        ok = '' if goal is None or v is None else (' ✔' if v >= goal - 1e-9 else ' ✘')
        lines.append('| `%s` | %s | %s%s | %s |' % (k, ' | '.join(fm(per[d][k]) for d in dirs),
                                                   fm(v), ok, '≥ %.0f %%' % (100 * goal) if goal
                                                   else 'report'))
    return '\n'.join(lines)
