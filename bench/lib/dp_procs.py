# SPDX-License-Identifier: MIT
"""Process plumbing for bench/datapath.py: testpmd driven over stdin, vnetd, CPU and tap counters."""

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from .common import BenchError, log  # noqa: F401  (re-exported for datapath.py)

CLK_TCK = os.sysconf('SC_CLK_TCK')
PROMPT = 'testpmd> '
RUN_DPDK = '/var/run/dpdk'


# ---------------------------------------------------------------------------------------------
# everything this run started, so that any exit (error, ^C, SIGTERM) leaves nothing behind

class Janitor:
    def __init__(self):
        self.procs, self.prefixes, self.nets, self.paths = [], [], [], []
        self.undo = []  # callables, run last (newest first): e.g. dp_ovs's hugetlbfs mount

    def proc(self, p):
        self.procs.append(p)
        return p

    def forget(self, p):
        if p in self.procs:
            self.procs.remove(p)

    def clean(self):
        for p in reversed(self.procs):
            stop_proc(p, sig=signal.SIGTERM, timeout=5)
        self.procs = []
        for ns in reversed(self.nets):
            ns.delete()
        self.nets = []
        for pre in self.prefixes:
            remove_dpdk_files(pre)
        self.prefixes = []
        for fn in reversed(self.undo):
            try:
                fn()
            except OSError as e:
                log('janitor: %s' % e)
        self.undo = []
        for path in reversed(self.paths):
            shutil.rmtree(path, ignore_errors=True)
        self.paths = []


JANITOR = Janitor()


def stop_proc(p, sig=signal.SIGTERM, timeout=10):
    """Signal the one process we started (by its pid) and reap it; SIGKILL if it lingers."""
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


def remove_dpdk_files(prefix):
    """What an EAL with --file-prefix PREFIX leaves: its runtime dir and any hugepage/shm files."""
    shutil.rmtree(os.path.join(RUN_DPDK, prefix), ignore_errors=True)
    for d in ('/dev/hugepages', '/dev/shm'):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if n.startswith(prefix):
                try:
                    os.unlink(os.path.join(d, n))
                except OSError:
                    pass


# ---------------------------------------------------------------------------------------------
# CPU accounting

def proc_minflt(pid):
    """Minor page faults of process pid so far (all its threads)."""
    with open('/proc/%d/stat' % pid) as f:
        s = f.read()
    return int(s[s.rindex(')') + 2:].split()[7])


def proc_ticks(pid):
    """utime+stime of process pid (all its threads), in clock ticks."""
    with open('/proc/%d/stat' % pid) as f:
        s = f.read()
    fields = s[s.rindex(')') + 2:].split()
    return int(fields[11]) + int(fields[12])


def count_syscalls(pid, seconds):
    """System calls process pid (all its threads) enters in the next `seconds`: perf's
    raw_syscalls:sys_enter tracepoint, counted in the kernel (no samples). None where perf or
    the tracepoint is missing. While perf counts, each system call costs a little more: measure
    apart from a run's rates."""
    perf = shutil.which('perf')
    if not perf:
        return None
    try:
        r = subprocess.run([perf, 'stat', '-x,', '-e', 'raw_syscalls:sys_enter', '-p', str(pid),
                            '--', 'sleep', str(seconds)], capture_output=True, text=True,
                           timeout=seconds + 30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in r.stderr.splitlines():
        f = line.split(',')
        if len(f) > 2 and f[2] == 'raw_syscalls:sys_enter' and f[0].isdigit():
            return int(f[0])
    return None




# ---------------------------------------------------------------------------------------------
# dpdk-testpmd in interactive mode: commands on stdin, replies read up to the next prompt

class Testpmd:
    def __init__(self, name, eal, app, log_path, ns=None, cpus=None):
        self.name = name
        self.prefix = eal[eal.index('--file-prefix') + 1]
        argv = ['stdbuf', '-oL', '-eL', 'dpdk-testpmd'] + eal + ['--', '-i'] + app
        if ns is not None:
            argv = ns.argv(argv)
        self.argv = argv
        self.log_path = log_path
        self.buf = ''
        self.lock = threading.Lock()
        remove_dpdk_files(self.prefix)
        JANITOR.prefixes.append(self.prefix)
        self.logf = open(log_path, 'a')
        self.logf.write('$ %s\n' % ' '.join(argv))
        self.logf.flush()
        self.proc = JANITOR.proc(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, start_new_session=True))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @property
    def pid(self):
        return self.proc.pid

    def _read(self):
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            text = chunk.decode(errors='replace')
            with self.lock:
                self.buf += text
            self.logf.write(text)
            self.logf.flush()

    def _wait_for(self, start, what, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                i = self.buf.find(what, start)
                if i >= 0:
                    return self.buf[start:i]
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the reader catch the last words
                raise BenchError('%s exited (status %s); log %s:\n%s'
                                 % (self.name, self.proc.returncode, self.log_path, self.buf[-2500:]))
            time.sleep(0.01)
        raise BenchError('%s: no %r within %.0f s; log %s:\n%s'
                         % (self.name, what, timeout, self.log_path, self.buf[-2500:]))

    def wait_ready(self, timeout=60):
        self._wait_for(0, PROMPT, timeout)
        with self.lock:
            self.mark = len(self.buf)

    def cmd(self, line, timeout=20):
        """Send one command; returns its output (up to the next prompt)."""
        with self.lock:
            start = len(self.buf)
        self.proc.stdin.write((line + '\n').encode())
        self.proc.stdin.flush()
        return self._wait_for(start, PROMPT, timeout)

    def port_stats(self):
        """{port: {rx_packets, rx_bytes, tx_packets, tx_bytes, rx_missed, rx_errors, ...}}"""
        out = self.cmd('show port stats all')
        stats = {}
        for m in re.finditer(r'NIC statistics for port (\d+)(.*?)Throughput', out, re.S):
            body, d = m.group(2), {}
            for key, name in (('RX-packets', 'rx_packets'), ('RX-bytes', 'rx_bytes'),
                              ('RX-missed', 'rx_missed'), ('RX-errors', 'rx_errors'),
                              ('RX-nombuf', 'rx_nombuf'), ('TX-packets', 'tx_packets'),
                              ('TX-bytes', 'tx_bytes'), ('TX-errors', 'tx_errors')):
                v = re.search(key + r':\s+(\d+)', body)
                d[name] = int(v.group(1)) if v else 0
            stats[int(m.group(1))] = d
        if not stats:
            raise BenchError('%s: cannot parse port stats:\n%s' % (self.name, out[-1500:]))
        return stats

    def fwd_totals(self):
        """Forwarding totals since `start`: tx_dropped = frames generated that found the TX ring full."""
        out = self.cmd('show fwd stats all')
        m = re.search(r'Accumulated forward statistics.*?RX-packets:\s*(\d+).*?TX-packets:\s*(\d+)'
                      r'\s+TX-dropped:\s*(\d+)', out, re.S)
        if not m:
            raise BenchError('%s: cannot parse fwd stats:\n%s' % (self.name, out[-1500:]))
        return {'rx': int(m.group(1)), 'tx': int(m.group(2)), 'tx_dropped': int(m.group(3))}

    def port_info(self, port=0):
        out = self.cmd('show port info %d' % port)
        info = {}
        for key, pat in (('max_rx_pktlen', r'Maximum configurable length of RX packet:\s*(\d+)'),
                         ('max_mtu', r'Maximum MTU:\s*(\d+)'), ('min_mtu', r'Minimum MTU:\s*(\d+)'),
                         ('mtu', r'\nMTU:\s*(\d+)')):
            m = re.search(pat, out)
            if m:
                info[key] = int(m.group(1))
        return info

    def quit(self, timeout=15):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'stop\nquit\n')
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                stop_proc(self.proc, signal.SIGINT, 5)
        self.reader.join(2)
        JANITOR.forget(self.proc)
        self.logf.close()
        remove_dpdk_files(self.prefix)
        if self.prefix in JANITOR.prefixes:
            JANITOR.prefixes.remove(self.prefix)


def eal_args(prefix, main_lcore, vdevs, mem_mb=1024):
    a = ['--no-pci', '--no-huge', '-m', str(mem_mb), '--single-file-segments', '--file-prefix',
         prefix, '-l', '0-1', '--main-lcore', str(main_lcore), '--log-level=lib.eal:warning']
    for v in vdevs:
        a.append('--vdev=' + v)
    return a


def mbuf_args(size):
    """testpmd options for frames of `size` bytes: larger mbufs above the default 2048 B room."""
    a = []
    if size > 2048:
        room = (size + 128 + 63) // 64 * 64
        a += ['--mbuf-size=%d' % min(room, 65535),
              '--total-num-mbufs=%d' % max(4096, min(16384, (400 << 20) // room))]
    return a


# ---------------------------------------------------------------------------------------------
# vnetd counters (vnetd itself: common.Vnetd)

def queue_sum(stats, kind, key='packets'):
    """Sum of `key` over every queue of `kind` ('rx'/'tx') of every port."""
    return sum(q[key] for qs in stats.values() for q in qs.values() if q['kind'] == kind)


# ---------------------------------------------------------------------------------------------
# tap counters (the kernel's view of what the backend wrote into the tap)

def tap_counters(ns, ifname):
    r = subprocess.run(['ip', '-n', ns.name, '-j', '-s', 'link', 'show', 'dev', ifname],
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise BenchError('ip link show %s: %s' % (ifname, r.stderr))
    rx = json.loads(r.stdout)[0]['stats64']['rx']
    return {'rx_packets': rx['packets'], 'rx_bytes': rx['bytes'], 'rx_dropped': rx['dropped'],
            'rx_errors': rx['errors']}


def wait_link(ns, ifname, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(['ip', '-n', ns.name, 'link', 'show', 'dev', ifname],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.05)
    raise BenchError('interface %s did not appear in namespace %s' % (ifname, ns.name))


def ns_prepare(ns):
    """No IPv6 (no router solicitations or DAD frames towards the guest side)."""
    ns.run('sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1')
