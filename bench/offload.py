#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-offload: guest-to-guest bulk TCP through vnetd's switch with offloads, without, and
through two vnetd taps joined by a Linux bridge (issue 42).

Three setups, each its own vnetd (with its sandbox, as deployed) and its own two UML 7.2 guests
(256 MB, booted once and kept for the whole run):

  switch            two switch ports (offloads on, the default): a frame's virtio-net header
                    (TSO, checksum left to the receiver) crosses the switch;
  switch-nooffload  the same with offloads=off on both ports (what the switch did before
                    08f588c: MTU-sized frames, checksummed by the guests);
  bridge            two tap ports (tap=) whose taps are enslaved to a Linux bridge in a network
                    namespace this script creates and deletes (bridge-nf-call-* set to 0 there
                    when the host has br_netfilter; the host's own network is never touched).

Reps interleave the setups (rep 1: switch, switch-nooffload, bridge; rep 2: ...). Each rep:
guest A runs `iperf3 -c B -t SECONDS -J` (one stream, A -> B); Gbit/s from iperf3's receiver;
vnetd's CPU (utime+stime of the process, all threads, /proc/PID/stat) and each guest's (its UML
process tree: the kernel process with its threads, and the host processes of its user space)
over the rep; CPU per Gbit = CPU-s / Gbit transferred. Also per rep: each guest's own view of
its CPU (its /proc/stat: user, system, softirq, idle), iperf3's retransmits, vnetd's queue
counters (frames, bytes per frame, kicks, notifications) and each switch port's "offloads"
counters from `vnetctl stats --json` (passed, soft_segments, soft_checksums, bad_header) with
its switch_frames (forwarded, dropped) to show which way the frames went, and the machine's
busy %.

Reported: per setup, median [min-max] of Gbit/s, vnetd CPU-s per Gbit and guest CPU-s per Gbit;
switch / bridge as the ratio of medians and the range of the per-rep ratios (rep i's switch over
rep i's bridge, run back to back); "targets" (issue 42: throughput >= 1.2x the bridge at <= 0.5x
vnetd's CPU per Gbit). --perf: afterwards one more rep per setup under `perf record -e cpu-clock`
(software events) of vnetd and both guests, the UML kernels' samples named from the guest's own
/proc/kallsyms (linux.uml is stripped): where the guests' time goes. Variants, for diagnosis:
--vnetd-args (e.g. "--poll-us 30"), --port-extra (e.g. ",coal-persist=on,tx-usecs=200"), and
--guest-cmd (run in each guest once it has its address, e.g. "ethtool -C eth0 tx-usecs 200").

Outputs: a table; results/offload-latest.json, results/offload-latest.png (gnuplot). Any vnetd
build: VNETD_BUILD=DIR (default build/). Needs root (namespace, taps).
"""

import argparse
import bisect
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench.lib import common, gnuplot
from bench.lib.common import log, machine_busy, spread
from bench.lib.measure import CLK_TCK, proc_table
from tests.kit import harness
from tests.kit.harness import Netns, UmlGuest, guest_addr

SETUPS = ('switch', 'switch-nooffload', 'bridge')
TARGETS = {'throughput_vs_bridge': ('>=', 1.2), 'cpu_per_gbit_vs_bridge': ('<=', 0.5)}
TAPS = ('vbo0', 'vbo1')
BRIDGE = 'vbobr'
QUEUE_KEYS = ('packets', 'bytes', 'kicks', 'notifications', 'suppressed', 'dropped',
              'rx_no_buffers', 'yields', 'rx_direct', 'polls', 'poll_ns')
OFFLOAD_KEYS = ('passed', 'soft_segments', 'soft_checksums', 'bad_header')
GSTAT = ('user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq')


class Failed(Exception):
    """A rep or a setup that cannot go on."""


def vnetd_commit():
    """git describe of the tree VNETD_BUILD was configured from, and the last change to src/."""
    src = common.source_of(harness.BUILD)
    dirty = common.git(src, 'status', '--porcelain', '--', 'src', 'meson.build')
    return {'source': src, 'commit': common.git(src, 'describe', '--always', '--dirty') or '?',
            'src_commit': (common.git(src, 'log', '-1', '--format=%h', '--', 'src', 'meson.build')
                           or '?') + ('-dirty' if dirty else '')}


def lscpu_model():
    r = subprocess.run(['lscpu'], capture_output=True, text=True)
    m = re.search(r'^Model name:\s*(.+)$', r.stdout, re.M)
    return m.group(1).strip() if m else common.cpu_model()


# ---------------------------------------------------------------------------------------------
# CPU from /proc

def proc_split(pid, children=False):
    """(utime, stime) seconds of one process, all its threads (/proc/PID/stat); children: also
    (cutime, cstime), the CPU of the children it reaped."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            s = f.read()
    except OSError:
        return (0.0,) * (4 if children else 2)
    f = s[s.rindex(')') + 2:].split()
    return tuple(int(x) / CLK_TCK for x in f[11:15 if children else 13])


def guest_cpu(root):
    """A UML guest's host CPU seconds: 'kernel' (its kernel process, all threads), 'user_procs'
    (the live host processes of its user space), 'reaped' (those that ended, reaped by the kernel
    process: its cutime+cstime), 'utime' and 'stime' (of the live ones)."""
    kids = {}
    for pid, (ppid, _) in proc_table().items():
        kids.setdefault(ppid, []).append(pid)
    u, s, cu, cs = proc_split(root, children=True)
    out = {'kernel': u + s, 'user_procs': 0.0, 'reaped': cu + cs, 'utime': u, 'stime': s}
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        u, s = proc_split(pid)
        out['user_procs'] += u + s
        out['utime'] += u
        out['stime'] += s
    return out


def ksoftirqd_pids():
    out = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/comm' % d) as f:
                    if f.read().startswith('ksoftirqd/'):
                        out.append(int(d))
            except OSError:
                pass
    return out


KSOFTIRQD = ksoftirqd_pids()


def ksoftirqd_cpu():
    """CPU seconds of the host's ksoftirqd threads (softirq work deferred out of the system
    calls that raised it: the bridge's forwarding can land there, and others' traffic too)."""
    return sum(sum(proc_split(p)) for p in KSOFTIRQD)


def delta(a, b):
    return {k: round(b[k] - a[k], 4) for k in a}


def guest_stat_line(text):
    """The guest's aggregate 'cpu' line of /proc/stat: {field: ticks}."""
    for line in text.splitlines():
        if line.startswith('cpu '):
            return dict(zip(GSTAT, (int(x) for x in line.split()[1:8])))
    raise Failed('no cpu line in %r' % text[:200])


def guest_stat_share(a, b):
    d = {k: b[k] - a[k] for k in GSTAT}
    tot = sum(d.values()) or 1
    return {k: round(100.0 * v / tot, 1) for k, v in d.items()}


# ---------------------------------------------------------------------------------------------
# setups

class Setup:
    """One vnetd with two guests A, B; closed with the ExitStack it was entered in."""

    def __init__(self, name, kit, wd, stack, args, index):
        self.name, self.ns = name, None
        self.wd = os.path.join(wd, name)
        os.makedirs(self.wd)
        socks = [os.path.join(self.wd, 'p%d.sock' % i) for i in range(2)]
        macs = ['52:54:00:42:%02x:%02x' % (index, i + 1) for i in range(2)]
        self.ips = ['10.42.%d.%d' % (index, i + 1) for i in range(2)]
        if name == 'bridge':
            self.ns = stack.enter_context(Netns('vnetd-bench-offload'))
            ports = ['socket=%s,tap=%s,mac=%s%s' % (s, t, m, args.port_extra)
                     for s, t, m in zip(socks, TAPS, macs)]
        else:
            extra = (',offloads=off' if name == 'switch-nooffload' else '') + args.port_extra
            ports = ['socket=%s,switch,mac=%s%s' % (s, m, extra) for s, m in zip(socks, macs)]
        self.vd = stack.enter_context(harness.Vnetd(self.ns or harness.NoNs(), ports, self.wd,
                                                    extra=args.vnetd_args.split()))
        self.bridge = self.make_bridge() if self.ns else None
        self.guests = []
        for i, s in enumerate(socks):
            g = stack.enter_context(UmlGuest(kit, s, mem=args.mem,
                                             log_path=os.path.join(self.wd, 'g%d.log' % i)))
            self.guests.append(g)
        self.a, self.b = self.guests
        for g, ip in zip(self.guests, self.ips):
            guest_addr(g, ip)
            if args.guest_cmd:
                g.run(args.guest_cmd, check=True)
        self.info = {'ports': ports, 'guests': [self.guest_info(g) for g in self.guests],
                     'bridge': self.bridge}
        rc, out = self.a.run('for i in $(seq 50); do ping -c 1 -W 1 %s >/dev/null && exit 0; '
                             'done; exit 1' % self.ips[1], timeout=120)
        if rc != 0:
            raise Failed('%s: A cannot ping B' % name)
        self.b.run('iperf3 -s -D --logfile /tmp/iperf3.log', check=True)
        time.sleep(0.3)

    def make_bridge(self):
        """The taps vnetd made in the namespace, enslaved to a bridge there."""
        ns = self.ns
        ns.run('ip link add %s type bridge stp_state 0 forward_delay 0 && ip link set %s up'
               % (BRIDGE, BRIDGE))
        for t in TAPS:
            ns.run('ip link set %s master %s && ip link set %s up' % (t, BRIDGE, t))
        nf = {}
        for k in ('call-iptables', 'call-ip6tables', 'call-arptables'):
            p = '/proc/sys/net/bridge/bridge-nf-' + k
            r = ns.run('[ -e %s ] && echo 0 > %s && cat %s' % (p, p, p), check=False)
            nf[k] = r.stdout.strip() or 'absent'
        show = ns.run('ip -d link show %s; ip link show master %s' % (BRIDGE, BRIDGE)).stdout
        mtu = re.findall(r'mtu (\d+)', show)
        return {'bridge_nf_in_namespace': nf, 'mtus': [int(x) for x in mtu]}

    @staticmethod
    def guest_info(g):
        k = g.run('ethtool -k eth0', check=True)[1]

        def feat(name):
            m = re.search(r'^\s*%s: (\S+)' % re.escape(name), k, re.M)
            return m.group(1) if m else None
        return {'kernel': g.run('uname -r')[1].strip(),
                'mtu': int(g.run('cat /sys/class/net/eth0/mtu')[1].strip()),
                'ethtool_k': {n: feat(n) for n in (
                    'tx-checksumming', 'rx-checksumming', 'tcp-segmentation-offload',
                    'generic-segmentation-offload', 'generic-receive-offload', 'rx-gro-hw')}}

    def ports_stats(self):
        data = json.loads(self.vd.ctl('stats', '--json').stdout)
        out = {}
        for p in data['ports']:
            qs = {q['kind']: {k: q.get(k, 0) for k in QUEUE_KEYS} for q in p['queues']
                  if q['kind'] in ('rx', 'tx')}
            out[p['name']] = {'queues': qs, 'offloads': p.get('offloads')}
        for name, p in self.vd.port_info().items():   # switch ports: forwarded, dropped, ...
            if name in out:
                out[name]['switch_frames'] = p.get('switch_frames')
        return out

    def restart_server(self):
        self.b.run('killall iperf3; sleep 0.5; iperf3 -s -D --logfile /tmp/iperf3.log',
                   timeout=60)
        time.sleep(0.5)


def stats_delta(s0, s1):
    out = {}
    for port in s1:
        q = {kind: {k: s1[port]['queues'][kind][k] - s0[port]['queues'][kind][k]
                    for k in QUEUE_KEYS} for kind in s1[port]['queues']}
        o0, o1 = s0[port]['offloads'], s1[port]['offloads']
        off = {k: o1[k] - o0[k] for k in OFFLOAD_KEYS if k in o1} if o1 else None
        f0, f1 = s0[port].get('switch_frames'), s1[port].get('switch_frames')
        out[port] = {'queues': q, 'offloads': off,
                     'switch_frames': {k: f1[k] - f0[k] for k in f1} if f0 and f1 else None}
    return out


# ---------------------------------------------------------------------------------------------
# one rep

def iperf_cmd(ip, seconds):
    return ('head -1 /proc/stat >/tmp/s0; iperf3 -c %s -t %d -J --connect-timeout 5000 '
            '>/tmp/r.json 2>/tmp/r.err; rc=$?; head -1 /proc/stat >/tmp/s1; cat /tmp/s0 /tmp/s1; '
            'echo IPERF-JSON; cat /tmp/r.json /tmp/r.err; exit $rc' % (ip, seconds))


def parse_iperf(out):
    head, _, body = out.partition('IPERF-JSON')
    lines = head.strip().splitlines()
    stat = [guest_stat_line(l) for l in lines if l.startswith('cpu ')]
    try:
        j = json.loads(body[body.index('{'):body.rindex('}') + 1])
    except ValueError:
        raise Failed('iperf3 gave no JSON: %s' % body[-300:])
    if j.get('error') or 'sum_received' not in j.get('end', {}):
        raise Failed('iperf3: %s' % j.get('error', 'no sum_received'))
    rcv, snd = j['end']['sum_received'], j['end'].get('sum_sent', {})
    cpu = j['end'].get('cpu_utilization_percent', {})
    return stat, {'gbps': rcv['bits_per_second'] / 1e9, 'bytes': rcv['bytes'],
                  'seconds': rcv['seconds'], 'retransmits': snd.get('retransmits'),
                  'iperf_cpu_pct': {'sender': cpu.get('host_total'),
                                    'receiver': cpu.get('remote_total')}}


def measure(st, seconds):
    """One iperf3 run A -> B; its measurement dict (raises Failed)."""
    s0 = st.ports_stats()
    b0 = guest_stat_line(st.b.run('head -1 /proc/stat', check=True)[1])
    busy0, t0 = machine_busy(), time.monotonic()
    v0, k0 = proc_split(st.vd.proc.pid), ksoftirqd_cpu()
    ga0, gb0 = guest_cpu(st.a.proc.pid), guest_cpu(st.b.proc.pid)
    rc, out = st.a.run(iperf_cmd(st.ips[1], seconds), timeout=seconds + 60)
    ga1, gb1 = guest_cpu(st.a.proc.pid), guest_cpu(st.b.proc.pid)
    v1, k1 = proc_split(st.vd.proc.pid), ksoftirqd_cpu()
    t1, busy1 = time.monotonic(), machine_busy()
    b1 = guest_stat_line(st.b.run('head -1 /proc/stat', check=True)[1])
    s1 = st.ports_stats()
    stat, m = parse_iperf(out)
    wall = t1 - t0
    gbit = m['bytes'] * 8 / 1e9
    vnetd = (v1[0] - v0[0]) + (v1[1] - v0[1])
    ga, gb = delta(ga0, ga1), delta(gb0, gb1)
    ga_s = ga['utime'] + ga['stime'] + ga['reaped']
    gb_s = gb['utime'] + gb['stime'] + gb['reaped']
    m.update({
        'wall_s': round(wall, 3),
        'vnetd_cpu_s': round(vnetd, 3), 'vnetd_utime_s': round(v1[0] - v0[0], 3),
        'vnetd_stime_s': round(v1[1] - v0[1], 3),
        'guest_cpu_s': round(ga_s + gb_s, 3), 'sender_cpu': ga, 'receiver_cpu': gb,
        'vnetd_cpu_per_gbit': vnetd / gbit if gbit else None,
        'guest_cpu_per_gbit': (ga_s + gb_s) / gbit if gbit else None,
        'vnetd_pct': round(100 * vnetd / wall, 1), 'sender_pct': round(100 * ga_s / wall, 1),
        'receiver_pct': round(100 * gb_s / wall, 1),
        'machine_busy_pct': round(common.busy_pct(busy0, busy1) * os.cpu_count(), 1),
        'sender_guest_stat': guest_stat_share(*stat) if len(stat) == 2 else None,
        'receiver_guest_stat': guest_stat_share(b0, b1),
        'ksoftirqd_cpu_s': round(k1 - k0, 3),
        'vnetd': stats_delta(s0, s1)})
    m.update(events_per_frame(m['vnetd']))
    if rc != 0:
        raise Failed('iperf3 exited %d' % rc)
    return m


def run_rep(st, rep, seconds):
    for attempt in (1, 2):
        try:
            m = measure(st, seconds)
            m.update(setup=st.name, rep=rep)
            return m
        except (Failed, harness.GuestError) as e:
            err = str(e)
            log('  %-16s rep %d: %s%s' % (st.name, rep, e, ', retrying' if attempt == 1 else ''))
            if not (st.a.alive() and st.b.alive() and st.vd.alive()):
                break
            st.restart_server()
    return {'setup': st.name, 'rep': rep, 'error': err}


def events_per_frame(d):
    """Per frame A sent (p0 TX): the kicks of every queue (guest -> vnetd eventfd writes) and
    vnetd's notifications (call eventfd writes: a UML guest's SIGIO), and B's RX buffers short."""
    frames = d['p0']['queues']['tx']['packets']
    if not frames:
        return {}
    q = [(p, k, v) for p in ('p0', 'p1') for k, v in d[p]['queues'].items()]
    return {'frames': frames,
            'kicks_per_frame': round(sum(v['kicks'] for _, _, v in q) / frames, 3),
            'notifications_per_frame': round(sum(v['notifications'] for _, _, v in q) / frames, 3),
            'a_tx_kicks_per_frame': round(d['p0']['queues']['tx']['kicks'] / frames, 3),
            'b_rx_notifications_per_frame':
                round(d['p1']['queues']['rx']['notifications'] / frames, 3),
            'b_rx_no_buffers': d['p1']['queues']['rx']['rx_no_buffers'],
            'a_switch_dropped': (d['p0'].get('switch_frames') or {}).get('dropped')}


def tx_frame_bytes(m, port='p0'):
    q = m['vnetd'].get(port, {}).get('queues', {}).get('tx')
    return q['bytes'] / q['packets'] if q and q['packets'] else None


def short(m):
    if 'error' in m:
        return 'ERROR ' + m['error']
    p1 = m['vnetd'].get('p1', {}).get('offloads') or {}
    return ('%.3f Gbit/s, vnetd %.4f CPU-s/Gbit (%.0f%%), guests %.3f CPU-s/Gbit (A %.0f%% B '
            '%.0f%%), machine %.0f%%, A TX %.0f B/frame, kicks %.2f notif %.2f /frame, '
            'p1 offloads %s' % (
                m['gbps'], m['vnetd_cpu_per_gbit'], m['vnetd_pct'], m['guest_cpu_per_gbit'],
                m['sender_pct'], m['receiver_pct'], m['machine_busy_pct'],
                tx_frame_bytes(m) or 0, m.get('kicks_per_frame', 0),
                m.get('notifications_per_frame', 0), p1 or '-'))


# ---------------------------------------------------------------------------------------------
# perf: where the time goes

def kallsyms(g):
    """Sorted [(address, name)] of a UML guest's text symbols (its /proc/kallsyms)."""
    rc, out = g.run("awk '$2 ~ /^[tT]$/ {print $1, $3}' /proc/kallsyms", timeout=120)
    syms = []
    for line in out.splitlines():
        a, _, n = line.partition(' ')
        try:
            addr = int(a, 16)
        except ValueError:
            continue
        if addr:
            syms.append((addr, n))
    syms.sort()
    return syms


COPY = ('memcpy', 'memmove', '_copy_to_iter', '_copy_from_iter', 'copy_user', 'copy_page')
SWITCH = ('finish_task_switch', '__schedule', 'schedule')


def category(name):
    """Where a sample was: the UML kernel's code, the host kernel (copies, context switches
    and the rest: system calls, signals, ptrace stops), the guests' user space, vnetd."""
    if name.startswith('uml:'):
        return 'UML kernel: copy' if any(c in name for c in COPY) else 'UML kernel: other'
    if name.startswith('host:'):
        if any(c in name for c in COPY):
            return 'host kernel: copy'
        if any(name[5:].startswith(c) for c in SWITCH):
            return 'host kernel: context switch'
        return 'host kernel: other'
    if name == 'guest user space':
        return name
    if name.endswith('(vnetd)'):
        return 'vnetd code'
    if any(c in name for c in COPY):
        return 'libc copy'
    return 'other'


def profile(st, seconds, wd, top=12):
    """One more rep under perf record (cpu-clock) of vnetd and both guests' process trees; the top
    symbols of each (UML kernel samples named by the guest's kallsyms)."""
    syms = {st.a.proc.pid: kallsyms(st.a), st.b.proc.pid: kallsyms(st.b)}
    roles = {}
    table = proc_table()
    for role, root in (('sender', st.a.proc.pid), ('receiver', st.b.proc.pid)):
        kids = [p for p, (pp, _) in table.items() if pp == root]
        roles[root] = role + ' kernel'
        for k in kids:
            roles[k] = role + ' user space'
    roles[st.vd.proc.pid] = 'vnetd'
    data = os.path.join(wd, 'perf-%s.data' % st.name)
    pids = ','.join(str(p) for p in roles)
    perf = subprocess.Popen(['perf', 'record', '-e', 'cpu-clock', '-F', '1999', '-o', data,
                             '-p', pids], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    parents, done = {}, threading.Event()

    def watch():  # the guests' processes that come and go during the rep (iperf3 in A)
        while not done.wait(0.2):
            parents.update({p: pp for p, (pp, _) in proc_table().items()})
    th = threading.Thread(target=watch, daemon=True)
    th.start()
    try:
        m = measure(st, seconds)
    finally:
        done.set()
        th.join()
        perf.send_signal(2)
        perf.wait(30)
    r = subprocess.run(['perf', 'script', '-i', data, '-F', 'pid,ip,sym,dso'],
                       capture_output=True, text=True)
    counts, totals = {}, {}
    for line in r.stdout.splitlines():
        f = line.split(None, 2)
        if len(f) < 2 or not f[0].isdigit():
            continue
        pid = int(f[0])
        role = roles.get(pid)
        if role is None:  # a guest process started during the rep (iperf3 in A)
            pp, seen = parents.get(pid), set()
            while pp is not None and pp not in roles and pp not in seen:
                seen.add(pp)
                pp = parents.get(pp)
            role = roles.get(pp, 'other').replace('kernel', 'user space')
        ip = int(f[1], 16)
        rest = f[2] if len(f) > 2 else ''
        name, _, dso = rest.rpartition(' (')
        name, dso = name.strip() or '[unknown]', dso.rstrip(')')
        if dso == '[kernel.kallsyms]':
            name = 'host:' + name          # the host kernel, in a system call or a signal
        elif 'kernel' in role and 'linux.uml' in dso:
            root = st.a.proc.pid if role.startswith('sender') else st.b.proc.pid
            s = syms[root]
            i = bisect.bisect_right(s, (ip, '\xff')) - 1
            name = 'uml:' + (s[i][1] if i >= 0 and ip - s[i][0] < 1 << 20 else '?')
        elif role.endswith('user space'):
            name = 'guest user space'
        elif dso:
            name += ' (%s)' % os.path.basename(dso)
        counts.setdefault(role, {}).setdefault(name, 0)
        counts[role][name] += 1
        totals[role] = totals.get(role, 0) + 1
    out = {}
    for role, c in counts.items():
        tot = totals[role]
        cats = {}
        for n, k in c.items():
            cats[category(n)] = cats.get(category(n), 0) + k
        out[role] = {'samples': tot,
                     'categories': {n: round(100.0 * k / tot, 1) for n, k in
                                    sorted(cats.items(), key=lambda x: -x[1])},
                     'top': [(n, round(100.0 * k / tot, 1)) for n, k in
                             sorted(c.items(), key=lambda x: -x[1])[:top]]}
    return {'rep': m, 'roles': out, 'perf_stderr': perf.stderr.read().decode()[-300:]}


# ---------------------------------------------------------------------------------------------
# summary, ratios, targets

METRICS = ('gbps', 'vnetd_cpu_per_gbit', 'guest_cpu_per_gbit', 'vnetd_pct', 'sender_pct',
           'receiver_pct', 'machine_busy_pct', 'retransmits', 'tx_frame_bytes', 'ksoftirqd_cpu_s',
           'kicks_per_frame', 'notifications_per_frame', 'a_tx_kicks_per_frame',
           'b_rx_notifications_per_frame', 'b_rx_no_buffers', 'a_switch_dropped')


def summarize(runs):
    out = {}
    for s in SETUPS:
        rs = [r for r in runs if r['setup'] == s and 'error' not in r]
        if not rs:
            continue
        e = {k: spread([tx_frame_bytes(r) if k == 'tx_frame_bytes' else r.get(k) for r in rs])
             for k in METRICS}
        e['failed'] = len([r for r in runs if r['setup'] == s and 'error' in r])
        e['offloads_p0'] = {k: sum((r['vnetd']['p0']['offloads'] or {}).get(k, 0) for r in rs)
                            for k in OFFLOAD_KEYS}
        e['offloads_p1'] = {k: sum((r['vnetd']['p1']['offloads'] or {}).get(k, 0) for r in rs)
                            for k in OFFLOAD_KEYS}
        for who in ('sender', 'receiver'):
            sh = [r[who + '_guest_stat'] for r in rs if r.get(who + '_guest_stat')]
            e[who + '_guest_stat'] = {k: statistics.median(x[k] for x in sh) for k in GSTAT} \
                if sh else None
            e[who + '_kernel_share'] = spread([kernel_share(r[who + '_cpu']) for r in rs])
        out[s] = e
    return out


def kernel_share(c):
    """The share of a guest's host CPU spent in its UML kernel process (the rest: the host
    processes of its user space)."""
    return c['kernel'] / max(1e-9, c['utime'] + c['stime'] + c['reaped'])


def ratio(runs, summary, num, den, key):
    """Ratio of medians num/den of key, and the range of the per-rep ratios."""
    if num not in summary or den not in summary:
        return None
    a, b = summary[num][key], summary[den][key]
    if not a or not b or not b['median']:
        return None
    by = {}
    for r in runs:
        if 'error' not in r and r.get(key) is not None:
            by.setdefault(r['rep'], {})[r['setup']] = r[key]
    per = [v[num] / v[den] for v in by.values() if num in v and den in v and v[den]]
    return {'median_ratio': a['median'] / b['median'],
            'per_rep_min': min(per) if per else None, 'per_rep_max': max(per) if per else None,
            'pairs': len(per)}


def ratios(runs, summary):
    out = {}
    for num, den in (('switch', 'bridge'), ('switch-nooffload', 'bridge'),
                     ('switch', 'switch-nooffload')):
        out['%s/%s' % (num, den)] = {
            'throughput': ratio(runs, summary, num, den, 'gbps'),
            'vnetd_cpu_per_gbit': ratio(runs, summary, num, den, 'vnetd_cpu_per_gbit'),
            'guest_cpu_per_gbit': ratio(runs, summary, num, den, 'guest_cpu_per_gbit')}
    return out


def targets(rat):
    r = rat['switch/bridge']
    out = {}
    for k, src in (('throughput_vs_bridge', 'throughput'),
                   ('cpu_per_gbit_vs_bridge', 'vnetd_cpu_per_gbit')):
        op, want = TARGETS[k]
        got = r[src]['median_ratio'] if r[src] else None
        met = got is not None and (got >= want if op == '>=' else got <= want)
        out[k] = {'want': '%s %g' % (op, want), 'got': round(got, 3) if got else None,
                  'met': met}
    return out


def fmt(x, spec):
    if not x:
        return '-'
    return (spec % x['median']) + (' [%s-%s]' % (spec % x['min'], spec % x['max'])
                                   if x['n'] > 1 else '')


def table(summary):
    lines = ['%-17s %-24s %-24s %-24s %-14s %-14s %-8s %s' % (
        'setup', 'Gbit/s', 'vnetd CPU-s/Gbit', 'guest CPU-s/Gbit', 'A % / B %', 'vnetd %',
        'machine', 'A TX B/frame')]
    for s in SETUPS:
        e = summary.get(s)
        if not e:
            continue
        lines.append('%-17s %-24s %-24s %-24s %-14s %-14s %-8s %s' % (
            s, fmt(e['gbps'], '%.2f'), fmt(e['vnetd_cpu_per_gbit'], '%.4f'),
            fmt(e['guest_cpu_per_gbit'], '%.3f'),
            '%.0f / %.0f' % (e['sender_pct']['median'], e['receiver_pct']['median']),
            fmt(e['vnetd_pct'], '%.0f'), '%.0f %%' % e['machine_busy_pct']['median'],
            '%.0f' % e['tx_frame_bytes']['median'] if e['tx_frame_bytes'] else '-'))
    return '\n'.join(lines)


def ratios_text(rat):
    lines = []
    for pair, r in rat.items():
        for k, v in r.items():
            if v:
                lines.append('%-26s %-20s %.3f (per rep %.3f-%.3f, %d pairs)' % (
                    pair, k, v['median_ratio'], v['per_rep_min'], v['per_rep_max'], v['pairs']))
    return '\n'.join(lines)


def chart(summary, png, title):
    dat = png[:-4] + '.dat'
    keys = ('gbps', 'vnetd_cpu_per_gbit', 'guest_cpu_per_gbit')
    with open(dat, 'w') as f:
        f.write('# setup ' + ' '.join('%s_med min max' % k for k in keys) + '\n')
        for s in SETUPS:
            if s in summary:
                f.write('"%s" %s\n' % (s, ' '.join('%g %g %g' % (
                    summary[s][k]['median'], summary[s][k]['min'], summary[s][k]['max'])
                    for k in keys)))
    titles = ('Throughput, Gbit/s (A -> B, one stream)', 'vnetd CPU-s per Gbit',
              'Guests\' CPU-s per Gbit (A + B)')
    gp = ['set terminal pngcairo size 1400,460 font "sans,10"', 'set output "%s"' % png,
          'set multiplot layout 1,3 title "%s"' % title,
          'set style data histogram', 'set style histogram errorbars gap 1 lw 1',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.7', 'set grid ytics',
          'set key off', 'set yrange [0:*]', 'set xtics nomirror']
    for i, t in enumerate(titles):
        c = 2 + 3 * i
        gp += ['set title "%s"' % t,
               'plot "%s" using %d:%d:%d:xtic(1) lc rgb "%s"' % (
                   dat, c, c + 1, c + 2, ('#4060c0', '#c06040', '#40a060')[i])]
    gp.append('unset multiplot')
    ok = gnuplot.run(gp, log)
    os.unlink(dat)
    return ok


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--seconds', type=int, default=6, help='iperf3 -t of each rep')
    ap.add_argument('--setups', default=','.join(SETUPS),
                    help='comma-separated, of %s' % ', '.join(SETUPS))
    ap.add_argument('--mem', default='256M', help='each UML guest\'s memory')
    ap.add_argument('--vnetd-args', default='', help='more vnetd options, e.g. "--poll-us 50"')
    ap.add_argument('--port-extra', default='', help='appended to every --port, e.g. ",mtu=9000"')
    ap.add_argument('--guest-cmd', default='', help='run in each guest once its address is set, '
                    'e.g. "ethtool -C eth0 rx-usecs 50"')
    ap.add_argument('--perf', action='store_true',
                    help='then one rep per setup under perf record: where the time goes')
    ap.add_argument('--out', help='JSON (default results/offload-latest.json; the PNG beside it)')
    args = ap.parse_args()
    setups = [s for s in args.setups.split(',') if s]
    bad = [s for s in setups if s not in SETUPS]
    if bad:
        sys.exit('unknown setup(s): %s' % ', '.join(bad))
    common.require('bench-offload', root=True, tun=True, exes=['ip', 'gnuplot'] +
                   (['perf'] if args.perf else []), status=common.SKIP)
    now = datetime.datetime.now()
    wd = tempfile.mkdtemp(prefix='vnetd-bench-offload-')
    harness.private_binaries(wd)
    kit = harness.uml_kit('sid')
    commit = vnetd_commit()
    load0 = common.load_check('bench-offload')
    log('bench-offload: vnetd %s (src %s); %s, %d CPUs, load %.2f %.2f %.2f; %d reps of %d s'
        % (commit['commit'], commit['src_commit'], lscpu_model(), os.cpu_count(), *load0,
           args.reps, args.seconds))
    runs, info, prof = [], {}, {}
    t_start = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            live = {}
            for i, s in enumerate(setups):
                live[s] = Setup(s, kit, wd, stack, args, i + 1)
                info[s] = live[s].info
                g = info[s]['guests'][0]
                log('  %-16s up: guests %s, MTU %d, TSO %s, tx-checksumming %s, GRO %s%s' % (
                    s, g['kernel'], g['mtu'], g['ethtool_k']['tcp-segmentation-offload'],
                    g['ethtool_k']['tx-checksumming'], g['ethtool_k']['generic-receive-offload'],
                    ', bridge %s' % info[s]['bridge'] if info[s]['bridge'] else ''))
            for rep in range(1, args.reps + 1):
                for s in list(live):
                    m = run_rep(live[s], rep, args.seconds)
                    runs.append(m)
                    log('  %-16s rep %d: %s' % (s, rep, short(m)))
                    if 'error' in m and not (live[s].a.alive() and live[s].b.alive()):
                        log('  %s: a guest died; the setup leaves the run' % s)
                        del live[s]
            if args.perf:
                for s, st in live.items():
                    prof[s] = profile(st, args.seconds, wd)
                    log('  %-16s perf rep: %s' % (s, short(prof[s]['rep'])))
                    for role, p in sorted(prof[s]['roles'].items()):
                        log('    %-20s %6d samples: %s\n%27s top: %s' % (
                            role, p['samples'], ', '.join(
                                '%s %.1f%%' % x for x in p['categories'].items()), '',
                            ', '.join('%s %.1f%%' % x for x in p['top'][:6])))
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    summary = summarize(runs)
    rat = ratios(runs, summary)
    tg = targets(rat)
    load1 = os.getloadavg()
    kernels = sorted({g['kernel'] for v in info.values() for g in v['guests']})
    doc = {'date': now.strftime('%Y-%m-%d %H:%M:%S'), 'machine': lscpu_model(),
           'host': platform.node(), 'host_kernel': platform.release(), 'cpus': os.cpu_count(),
           'guest_kernels': kernels, 'guest': 'UML (Debian sid kit), %s each' % args.mem,
           'vnetd': commit, 'loadavg_start': load0, 'loadavg_end': load1,
           'elapsed_s': round(time.monotonic() - t_start, 1), 'args': vars(args),
           'method': 'iperf3 -c B -t %d -J in guest A, one stream; CPU from /proc/PID/stat '
                     '(vnetd: the process, all threads; guests: the UML process trees) over '
                     'each rep; reps interleaved %s' % (args.seconds, ' '.join(setups)),
           'targets': tg, 'ratios': rat, 'summary': summary, 'setups': info, 'runs': runs,
           'perf': prof or None}
    out = args.out or os.path.join(common.RESULTS, 'offload-latest.json')
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    png = os.path.splitext(out)[0] + '.png'
    chart(summary, png, 'vnetd offloads: UML %s guests A -> B, iperf3 one stream, %d reps x %d s '
          'interleaved, %s; median, bars = min-max' % (
              '/'.join(kernels), args.reps, args.seconds, doc['date']))
    log('\n' + table(summary))
    log('\n' + ratios_text(rat))
    for k, v in tg.items():
        log('target %-24s want %-6s got %s: %s' % (k, v['want'], v['got'],
                                                 'met' if v['met'] else 'NOT met'))
    log('machine %s, %d CPUs, load %.2f at start, %.2f at end; wrote %s, %s'
        % (doc['machine'], os.cpu_count(), load0[0], load1[0], out, png))
    return 0


if __name__ == '__main__':
    sys.exit(main())
