# SPDX-License-Identifier: MIT
"""A guest on a vnetd tap port, measured: what make bench (bench/coalescing.py), its fixed-load
and coalescing rows (bench/lib/fixed.py, bench/lib/coal.py), bench/coal_causes.py and
bench/uml_rr_tail.py share. The network (namespace, addresses), the coalescing profiles set by
the guest's ethtool -C or by vnetctl, bulk TCP (iperf3) and ping-pong (sockperf) runs, CPU seconds
of process trees from /proc, guest interrupts, vnetd's per-queue counters."""

import json
import os
import re
import subprocess
import time

from tests.kit import harness
# GuestError is re-exported: bench/lib/coal.py catches it as measure.GuestError.
from tests.kit.harness import GuestError, QemuGuest, UmlGuest, guest_addr  # noqa: F401

from . import common
from .common import log, machine_busy

HOST_IP, GUEST_IP = '10.86.0.1', '10.86.0.2'
NETNS = 'vnetd-bench'
SOCKPERF_PORT = 11111
CLK_TCK = os.sysconf('SC_CLK_TCK')

# name -> (label, rx_usecs, rx_frames, tx_usecs, tx_frames).  "none": Linux 6.1 refuses to
# change tx-frames between 0 and non-zero while the interface is up (napi_tx weight), so the
# "off" setting keeps tx-frames 1 (usecs 0 = notify after every packet per the spec).
PROFILES = {
    'none': ('Without coalescing', 0, 0, 0, 1),
    'light': ('LIGHT (RX 100 µs/5, TX 150 µs/5)', 100, 5, 150, 5),
    'moderate': ('MODERATE (RX 1000 µs/10, TX 2000 µs/20)', 1000, 10, 2000, 20),
    'aggressive': ('AGGRESSIVE (RX 5000 µs/50, TX 5000 µs/50)', 5000, 50, 5000, 50),
}
# QEMU's tap peer with the same virtio features as vnetd's offloads=off port (see README).
NO_OFFLOADS = (',csum=off,guest_csum=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,'
               'guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off')


def check_prereqs(args):
    common.require('bench', root=True, tun=True,
                   exes=['ip', 'iperf3', 'sockperf', 'gnuplot']
                   + (['qemu-system-x86_64'] if args.peer else []))


# ---------------------------------------------------------------------------------------------
# measurements

def proc_table():
    """{pid: (ppid, utime+stime+cutime+cstime ticks)} for every process."""
    table = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                s = f.read()
        except OSError:
            continue
        f = s[s.rindex(')') + 2:].split()
        table[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]))
    return table


def tree_cpu(table, root):
    """CPU seconds of root and all its live descendants (reaped ones are in c{u,s}time)."""
    kids = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            total += table[pid][1]
        todo += kids.get(pid, [])
    return total / CLK_TCK


def guest_irqs(g, pattern):
    rc, out = g.run("grep -E '%s' /proc/interrupts" % pattern, timeout=60)
    line = out.strip().splitlines()[0] if rc == 0 and out.strip() else ''
    nums = []
    for tok in line.split()[1:]:
        if not tok.isdigit():
            break
        nums.append(int(tok))
    if not nums:
        raise GuestError('no %r line in the guest /proc/interrupts: %r' % (pattern, out))
    return sum(nums)


# Stall guard and adaptive counters (kept per run when this vnetd reports them).
OPTIONAL_STATS = ('early_idle', 'early_ring', 'early_bytes', 'adaptive', 'adaptive_level',
                  'adaptive_changes', 'adaptive_windows')


def queue_stats(vd):
    p0 = vd.stats()['p0']
    return {'rx': p0[0], 'tx': p0[1]}


class Subject:
    """One guest on one backend: what to sample and how to set a profile."""

    def __init__(self, name, guest, irq_pattern, vd=None):
        self.name, self.g, self.irq_pattern, self.vd = name, guest, irq_pattern, vd

    def cpu(self, table):
        guest = tree_cpu(table, self.g.proc.pid)
        vnetd = tree_cpu(table, self.vd.proc.pid) if self.vd else 0.0
        return guest, vnetd

    def measure(self, fn):
        """Run fn() (the load) between two samples; returns (fn result, measurement dict)."""
        irq0 = guest_irqs(self.g, self.irq_pattern)
        if self.vd:
            self.vd.ctl('reset-stats')
        tab0, busy0, t0 = proc_table(), machine_busy(), time.monotonic()
        result = fn()
        t1, busy1, tab1 = time.monotonic(), machine_busy(), proc_table()
        st = queue_stats(self.vd) if self.vd else None
        irq1 = guest_irqs(self.g, self.irq_pattern)
        (g0, v0), (g1, v1) = self.cpu(tab0), self.cpu(tab1)
        wall = t1 - t0
        m = {'wall_s': round(wall, 3), 'guest_cpu_s': round(g1 - g0, 3),
             'vnetd_cpu_s': round(v1 - v0, 3), 'guest_irqs': irq1 - irq0,
             'irq_per_s': (irq1 - irq0) / wall,
             'machine_busy_pct': common.busy_pct(busy0, busy1) * os.cpu_count()}
        m['cpu_s'] = m['guest_cpu_s'] + m['vnetd_cpu_s']
        m['cpu_pct'] = 100.0 * m['cpu_s'] / wall
        m['guest_cpu_pct'] = 100.0 * m['guest_cpu_s'] / wall
        m['vnetd_cpu_pct'] = 100.0 * m['vnetd_cpu_s'] / wall
        if st:
            for q in ('rx', 'tx'):
                s = st[q]
                m[q] = {k: s[k] for k in ('packets', 'bytes', 'kicks', 'notifications', 'suppressed',
                                          'held', 'timer_notifications', 'dropped', 'rx_no_buffers',
                                          'max_usecs', 'max_packets', 'set_by', 'lateness_us')}
                m[q].update({k: s[k] for k in OPTIONAL_STATS if k in s})
                m['notif_%s_per_s' % q] = s['notifications'] / wall
        return result, m


def run_iperf(ns, direction, duration):
    """iperf3 client in the namespace against the server in the guest; TX (guest->host) = -R."""
    argv = ['iperf3', '-c', GUEST_IP, '-t', str(duration), '-J', '--connect-timeout', '5000']
    if direction == 'tx':
        argv.append('-R')
    try:
        r = ns.run(argv, check=False, timeout=duration + 20)
    except subprocess.TimeoutExpired:
        return {'error': 'iperf3 client timed out after %ss' % (duration + 20)}
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return {'error': 'iperf3 gave no JSON: %s %s' % (r.stdout[-300:], r.stderr[-300:])}
    if j.get('error') or 'sum_received' not in j.get('end', {}):
        return {'error': 'iperf3: %s' % j.get('error', 'no sum_received')}
    rcv, snd = j['end']['sum_received'], j['end'].get('sum_sent', {})
    return {'gbps': rcv['bits_per_second'] / 1e9, 'bytes': rcv['bytes'],
            'seconds': rcv['seconds'], 'retransmits': snd.get('retransmits')}


PCT_RE = re.compile(r'percentile (\d+\.\d+) =\s*([\d.]+)')


def run_sockperf(ns, duration):
    """sockperf UDP ping-pong (64-byte messages) against the guest's server; RTT in µs."""
    argv = ['sockperf', 'ping-pong', '-i', GUEST_IP, '-p', str(SOCKPERF_PORT), '-t', str(duration),
            '-m', '64', '--full-rtt']
    try:
        r = ns.run(argv, check=False, timeout=duration + 30)
    except subprocess.TimeoutExpired:
        return {'error': 'sockperf timed out'}
    out = re.sub(r'\x1b\[[0-9;]*m', '', r.stdout + r.stderr)
    pct = {float(a): float(b) for a, b in PCT_RE.findall(out)}
    n = re.search(r'Total (\d+) observations', out)
    if 50.0 not in pct or 99.0 not in pct:
        return {'error': 'sockperf output not understood: ' + out[-400:]}
    return {'rtt_p50_us': pct[50.0], 'rtt_p99_us': pct[99.0], 'rtt_p999_us': pct.get(99.9),
            'observations': int(n.group(1)) if n else None}


# ---------------------------------------------------------------------------------------------
# guests

def guest_net_setup(g, timeout=120):
    guest_addr(g, GUEST_IP)
    g.run('for i in $(seq 100); do [ "$(cat /sys/class/net/eth0/operstate)" = up ] && break; '
          'sleep 0.2; done', timeout=timeout)
    rc, out = g.run('ping -c 3 -W 10 %s' % HOST_IP, timeout=timeout)
    if rc != 0:
        raise GuestError('guest cannot ping the host: ' + out)
    g.run('iperf3 -s -D --logfile /tmp/iperf3.log', check=True)
    g.run('sockperf server -i %s -p %d --daemonize >/tmp/sockperf.log 2>&1' % (GUEST_IP, SOCKPERF_PORT),
          check=True)
    time.sleep(0.5)


def restart_guest_servers(g):
    g.run('killall iperf3 sockperf; sleep 0.5; iperf3 -s -D --logfile /tmp/iperf3.log; '
          'sockperf server -i %s -p %d --daemonize >/tmp/sockperf.log 2>&1' % (GUEST_IP, SOCKPERF_PORT),
          timeout=60)
    time.sleep(0.5)


def apply_guest_profile(g, vd, prof):
    _, ru, rf, tu, tf = PROFILES[prof]
    cmd = 'ethtool -C eth0 rx-usecs %d rx-frames %d tx-usecs %d tx-frames %d' % (ru, rf, tu, tf)
    rc, out = g.run(cmd, timeout=60)
    st = queue_stats(vd)
    got = {q: (st[q]['max_usecs'], st[q]['max_packets'], st[q]['set_by']) for q in ('rx', 'tx')}
    ok = rc == 0 and got['rx'][:2] == (ru, rf) and got['tx'][:2] == (tu, tf)
    if not ok:
        log('  WARNING: %s -> rc %d %s; vnetd holds rx %s tx %s' % (cmd, rc, out.strip(),
                                                                   got['rx'], got['tx']))
    return {'command': cmd, 'rc': rc, 'output': out.strip(), 'vnetd': got, 'ok': ok}


def apply_host_profile(vd, prof):
    _, ru, rf, tu, tf = PROFILES[prof]
    args = ['coalesce', 'p0', 'rx-usecs', str(ru), 'rx-frames', str(rf), 'tx-usecs', str(tu),
            'tx-frames', str(tf)]
    r = vd.ctl(*args, check=False)
    st = queue_stats(vd)
    got = {q: (st[q]['max_usecs'], st[q]['max_packets'], st[q]['set_by']) for q in ('rx', 'tx')}
    ok = r.returncode == 0 and got['rx'][:2] == (ru, rf) and got['tx'][:2] == (tu, tf)
    if not ok:
        log('  WARNING: vnetctl %s -> %s; vnetd holds %s' % (' '.join(args), r.stderr.strip(), got))
    return {'command': 'vnetctl ' + ' '.join(args), 'rc': r.returncode, 'vnetd': got, 'ok': ok}


class Stalled(Exception):
    """The guest no longer answers on the network (see README: RX stall); later runs would
    only time out, so the setup stops here and the results so far are kept."""


def check_reachable(subj, ns, what):
    r = ns.run(['ping', '-c', '3', '-W', '2', GUEST_IP], check=False, timeout=30)
    if r.returncode == 0:
        return
    st = {}
    if subj.vd:
        p0 = subj.vd.stats()['p0']
        st = {q: {k: v for k, v in p0[i].items() if k != 'lateness_us'}
              for i, q in ((0, 'rx'), (1, 'tx'))}
    raise Stalled('%s: %s: the guest no longer answers ping after a failed run; vnetd queues: %s'
                  % (subj.name, what, json.dumps(st)))


def measure_profile(subj, ns, prof, args, rep, runs, duration, rr_duration):
    """Bulk runs in every direction, then ping-pong; appends run dicts to runs."""
    for d in args.directions:
        for attempt in (1, 2):
            res, m = subj.measure(lambda: run_iperf(ns, d, duration))
            if 'error' not in res:
                break
            log('  %s %s %s rep %d: %s%s' % (subj.name, prof, d, rep, res['error'],
                                            ', retrying' if attempt == 1 else ''))
            check_reachable(subj, ns, '%s %s rep %d' % (prof, d, rep))
            restart_guest_servers(subj.g)
        m.update(res)
        if 'gbps' in res:
            gbit = res['bytes'] * 8 / 1e9
            m['cpu_s_per_gbit'] = m['cpu_s'] / gbit if gbit else None
            m['irq_per_gbit'] = m['guest_irqs'] / gbit if gbit else None
        runs.append(dict(setup=subj.name, profile=prof, kind='bulk', direction=d, rep=rep, **m))
        log('  %-10s %-10s %s rep %d: %s' % (subj.name, prof, d, rep, short(m)))
    if rr_duration:
        res, m = subj.measure(lambda: run_sockperf(ns, rr_duration))
        if 'error' in res:
            log('  %s %s rr rep %d: %s' % (subj.name, prof, rep, res['error']))
            check_reachable(subj, ns, '%s rr rep %d' % (prof, rep))
            restart_guest_servers(subj.g)
        m.update(res)
        runs.append(dict(setup=subj.name, profile=prof, kind='rr', direction='rr', rep=rep, **m))
        log('  %-10s %-10s rr rep %d: %s' % (subj.name, prof, rep, short(m)))


def short(m):
    if 'error' in m:
        return 'ERROR ' + m['error']
    if 'gbps' in m:
        s = '%.3f Gbit/s, cpu %.0f%% (%.2f s/Gbit), %.0f irq/s' % (
            m['gbps'], m['cpu_pct'], m.get('cpu_s_per_gbit') or 0, m['irq_per_s'])
    else:
        s = 'rtt p50 %.0f p99 %.0f us, %.0f irq/s' % (m['rtt_p50_us'], m['rtt_p99_us'], m['irq_per_s'])
    if 'notif_rx_per_s' in m:
        s += ', notif/s rx %.0f tx %.0f' % (m['notif_rx_per_s'], m['notif_tx_per_s'])
    return s


def make_guest(kind, wd, sock, vq_size=256):
    """(guest object, /proc/interrupts pattern of its virtio line) for a --guest name; vq_size: the
    qemu-full device's ring size (every queue)."""
    logp = os.path.join(wd, '%s.log' % kind)
    if kind == 'uml':
        return UmlGuest(harness.uml_kit("bookworm"), sock, log_path=logp), 'virtio-uml'
    if kind in ('uml-7.2', 'uml72-1g'):
        return UmlGuest(harness.uml_kit("sid"), sock, log_path=logp,
                        **({'mem': '1G'} if kind == 'uml72-1g' else {})), 'virtio-uml'
    # qemu-full: one queue pair (num_vqs 3); the device's single MSI-X vector is not enough
    # for Linux (config + queues), so the guest uses one INTx line "virtio0" (see docs/guests.md).
    return (QemuGuest(harness.guest_kit(), vhost_socket=sock, qemu=harness.new_qemu('sid'),
                      full_device=True, num_vqs=3, vq_size=vq_size, log_path=logp), r'virtio[0-9]')
