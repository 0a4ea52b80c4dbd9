# SPDX-License-Identifier: MIT
"""The bench toolkit: logging, the machine-load check, prerequisite checks and the vnetd process
wrapper (tests/kit/harness.py's Vnetd, pinned to a CPU, errors raised instead of exiting).

Imported as bench.lib.common: the repository's top is the one import root (the Makefile puts it
on PYTHONPATH; by hand, `PYTHONPATH=. python3 bench/NAME.py` or `python3 -m bench.NAME`)."""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from tests.kit import harness

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # bench/: the .c programs
TOP = os.path.dirname(BENCH)
RESULTS = os.path.join(TOP, 'results')

SKIP = 77

# Debian package of each program a benchmark may need (for the apt-get line).
APT = {'ip': 'iproute2', 'bridge': 'iproute2', 'iperf3': 'iperf3', 'sockperf': 'sockperf',
       'gnuplot': 'gnuplot-nox', 'qemu-system-x86_64': 'qemu-system-x86',
       'taskset': 'util-linux', 'stdbuf': 'coreutils', 'valgrind': 'valgrind',
       'callgrind_control': 'valgrind', 'dpdk-testpmd': 'dpdk-dev', 'cc': 'gcc'}

_stamp = False


class BenchError(Exception):
    """A measurement that cannot go on (a process did not start, a counter did not move)."""


# ---------------------------------------------------------------------------------------------
# logging

def log(msg):
    """One line to stdout, flushed (prefixed with the time of day after timestamps(True))."""
    if _stamp:
        msg = '[%s] %s' % (time.strftime('%H:%M:%S'), msg)
    print(msg, flush=True)


def timestamps(on=True):
    """Prefix every later log() line with HH:MM:SS (long runs such as make soak)."""
    global _stamp
    _stamp = on


# ---------------------------------------------------------------------------------------------
# machine load

def machine_busy():
    """(busy, total) clock ticks over all CPUs so far, from /proc/stat (idle and iowait are
    not busy)."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def wait_quiet(limit, quiet_cores):
    """Wait (up to limit s) until the machine's busy CPU over half a second is below
    quiet_cores (in cores; call it while nothing of the caller's runs). Returns (s waited,
    cores busy at the last look), rounded."""
    tck = os.sysconf('SC_CLK_TCK')
    t0 = time.monotonic()
    while True:
        a = machine_busy()
        time.sleep(0.5)
        b = machine_busy()
        busy = (b[0] - a[0]) / (tck * 0.5)
        waited = time.monotonic() - t0
        if busy < quiet_cores or waited >= limit:
            return round(waited, 1), round(busy, 2)
        time.sleep(1)


def busy_pct(before, after):
    """Share of the machine's CPU time that was busy between two machine_busy() readings, in %
    (100 = every CPU)."""
    return 100.0 * (after[0] - before[0]) / max(1, after[1] - before[1])


def cpu_model():
    """The CPU's model name from /proc/cpuinfo ('?' when there is none)."""
    with open('/proc/cpuinfo') as f:
        return next((l.split(':', 1)[1].strip() for l in f if l.startswith('model name')), '?')


def load_check(tool, limit=None, note='numbers will be noisy'):
    """The load average now; logs a warning when its 1-minute value exceeds limit (default:
    half the CPUs)."""
    load = os.getloadavg()
    if limit is None:
        limit = 0.5 * os.cpu_count()
    if load[0] > limit:
        log('%s: WARNING: the machine is busy (load %.2f): %s' % (tool, load[0], note))
    return load


# ---------------------------------------------------------------------------------------------
# prerequisites

def problems(root=False, tun=False, exes=(), built=(), why_root='network namespaces, tap devices'):
    """What keeps a benchmark from running, one line each: root, /dev/net/tun, programs
    missing (with the apt-get line to install them), vnetd binaries not built."""
    out, missing = [], []
    if root and os.geteuid() != 0:
        out.append('must run as root (%s)' % why_root)
    if tun and not os.path.exists('/dev/net/tun'):
        out.append('no /dev/net/tun on this machine')
    for exe in exes:
        if shutil.which(exe) is None:
            missing.append(APT.get(exe, exe))
    for exe in built:
        if not os.access(exe, os.X_OK):
            out.append('%s not built (run make)' % exe)
    if missing:
        out.append('missing packages; install them with:\n    apt-get install -y %s'
                   % ' '.join(sorted(set(missing))))
    return out


def require(tool, root=False, tun=False, exes=(), built=None, status=1, **kw):
    """Exit with status (1; SKIP = 77 for "cannot run here") after logging each problem
    found by problems() as "tool: ..."; built defaults to this build's vnetd and vnetctl."""
    if built is None:
        built = (harness.VNETD, harness.VNETCTL)
    found = problems(root, tun, exes, built, **kw)
    for p in found:
        log('%s: %s' % (tool, p))
    if found:
        sys.exit(status)


def have(exe, tool, what):
    """True when exe is installed; otherwise logs that `what` is left out, and how to get it."""
    if shutil.which(exe) is not None:
        return True
    log('%s: no %s: %s (apt-get install -y %s)' % (tool, exe, what, APT.get(exe, exe)))
    return False


# ---------------------------------------------------------------------------------------------
# vnetd

class Vnetd(harness.Vnetd):
    """harness.Vnetd for measurements: pinned to one CPU (taskset), optionally under a wrapper
    such as valgrind, without the sandbox, from any build (exe, vnetctl), started at once and
    registered with janitor (an object with proc()/forget(), e.g. dp_procs.JANITOR) so any exit
    stops it; a start that fails raises BenchError."""

    def __init__(self, exe, vnetctl, ports, wd, ns=None, wrapper=(), cpu='0', extra=(),
                 janitor=None):
        super().__init__(ns if ns is not None else harness.NoNs(), ports, wd,
                         extra=['--no-sandbox'] + list(extra), exe=exe, vnetctl=vnetctl,
                         prefix=['taskset', '-c', cpu] + list(wrapper),
                         start_timeout=60 if wrapper else 15)
        self.ctl_timeout = 60        # vnetctl against a vnetd under valgrind
        self.janitor = janitor
        if os.path.exists(self.control):
            os.unlink(self.control)
        try:
            self.start()
        finally:
            if janitor is not None and self.proc is not None:
                janitor.proc(self.proc)

    def failed(self, why):
        raise BenchError(why)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, timeout=30):
        """SIGTERM, wait (SIGKILL after timeout); returns vnetd's exit status."""
        rc = super().stop(timeout)
        if self.janitor is not None:
            self.janitor.forget(self.proc)
        return rc


# ---------------------------------------------------------------------------------------------
# provenance

def git(src, *args):
    """Stripped stdout of `git -C src args...`; None when git fails."""
    r = subprocess.run(['git', '-C', src] + list(args), capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def source_of(build):
    """The git tree a meson build directory was configured from (its meson-info), else TOP."""
    try:
        with open(os.path.join(build, 'meson-info', 'meson-info.json')) as f:
            src = json.load(f)['directories']['source']
    except (OSError, ValueError, KeyError):
        src = None
    return src if src and git(src, 'rev-parse', 'HEAD') is not None else TOP


def build_model_bench(name, tmp, build):
    """Compile bench/NAME.c with the fake driver against BUILD's libvnetcore.a into TMP/NAME."""
    exe = os.path.join(tmp, name)
    lib = os.path.join(build, 'libvnetcore.a')
    if not os.path.exists(lib):
        raise SystemExit('%s missing: run make first' % lib)
    subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-std=c11', '-D_GNU_SOURCE', '-I',
                    os.path.join(TOP, 'src'), '-I', os.path.join(TOP, 'tests', 'unit'),
                    os.path.join(BENCH, name + '.c'),
                    os.path.join(TOP, 'tests', 'unit', 'fake_driver.c'), lib, '-o', exe],
                   check=True)
    return exe


def callgrind_total(exe, tmp, argv):
    """Run EXE ARGV under callgrind (output in TMP); (total Ir, the program's stripped stdout)."""
    out = os.path.join(tmp, 'cg.' + '.'.join(argv))
    r = subprocess.run(['valgrind', '--tool=callgrind', '--callgrind-out-file=' + out, exe]
                       + list(argv), capture_output=True, text=True, check=True)
    with open(out) as f:
        for line in f:
            m = re.match(r'(?:summary|totals):\s*(\d+)', line)
            if m:
                return int(m.group(1)), r.stdout.strip()
    raise SystemExit('no totals in ' + out)


def model_bench_start(name, doc, build, default_packets, packets_help):
    """Parse --packets/--out for bench/NAME.py, check valgrind, build bench/NAME.c.

    Returns (args, tmp, exe): the parsed options, a fresh temporary folder and the program."""
    ap = argparse.ArgumentParser(description=doc.split('\n\n')[0])
    ap.add_argument('--packets', type=int, default=default_packets, help=packets_help)
    ap.add_argument('--out')
    args = ap.parse_args()
    require(name, exes=['valgrind'], built=(), status=SKIP)
    tmp = tempfile.mkdtemp(prefix='vnetd-%s-' % name)
    return args, tmp, build_model_bench(name, tmp, build)


def per_packet(exe, tmp, argv, n):
    """Ir per packet of EXE ARGV N: (Ir(N) - Ir(N/4)) / (N - N/4), start-up cancelled.

    Returns {'per_packet': rounded to 0.1, 'note': the N run's stdout}."""
    n4 = n // 4
    big, note = callgrind_total(exe, tmp, list(argv) + [str(n)])
    small, _ = callgrind_total(exe, tmp, list(argv) + [str(n4)])
    return {'per_packet': round((big - small) / (n - n4), 1), 'note': note}


def model_bench_meta(name, build, n, now, method_more=''):
    """The 'meta' block of a bench/NAME.py JSON (date NOW, commit, BUILD, N, the method)."""
    return {'date': now.isoformat(timespec='seconds'),
            'vnetd': git(TOP, 'describe', '--always', '--dirty'),
            'build': build, 'packets': n,
            'method': 'callgrind Ir of bench/%s.c, (Ir(N) - Ir(N/4)) / (3N/4); device model only '
                      '(no syscalls, no backend)%s' % (name, method_more)}


def spread(vals):
    """{'median', 'min', 'max', 'n'} of the values that are not None; None when there are none."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {'median': statistics.median(vals), 'min': min(vals), 'max': max(vals), 'n': len(vals)}


def proc_ctxt_switches(pid):
    """(voluntary, involuntary) context switches of every thread of process pid so far, from
    /proc/PID/task/*/status. A voluntary one is a wake-up of a thread that slept (an epoll or
    futex wait ended); threads that exited meanwhile are not counted. (0, 0) when pid is gone."""
    vol = invol = 0
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return 0, 0
    for tid in tids:
        try:
            with open('/proc/%d/task/%s/status' % (pid, tid)) as f:
                for line in f:
                    if line.startswith('voluntary_ctxt_switches:'):
                        vol += int(line.split()[1])
                    elif line.startswith('nonvoluntary_ctxt_switches:'):
                        invol += int(line.split()[1])
        except OSError:
            continue
    return vol, invol


def cpu_steal():
    """Steal time of each CPU so far, in clock ticks, from /proc/stat ({cpu number: ticks}):
    time the hypervisor ran something else while this VM's vCPU wanted to run. {} where the
    kernel does not report it."""
    out = {}
    with open('/proc/stat') as f:
        for line in f:
            if not line.startswith('cpu') or line.startswith('cpu '):
                continue
            v = line.split()
            if len(v) > 8 and v[0][3:].isdigit():
                out[int(v[0][3:])] = int(v[8])
    return out
