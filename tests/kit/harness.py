# SPDX-License-Identifier: MIT
"""Shared pieces of the end-to-end tests: guest kit, vnetd in a private namespace, vnetctl, skips."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from .guest import Netns, UmlGuest, QemuGuest, GuestError  # noqa: F401  (re-exported)
from . import kits

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BUILD = os.environ.get('VNETD_BUILD', os.path.join(TOP, 'build'))
VNETD = os.path.join(BUILD, 'vnetd')
VNETCTL = os.path.join(BUILD, 'vnetctl')
SKIP = 77


def skip(why):
    print('SKIP: ' + why, flush=True)
    sys.exit(SKIP)


def fail(why):
    print('FAIL: ' + why, flush=True)
    sys.exit(1)


def check(cond, what):
    """Assert with a readable line either way."""
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        sys.exit(1)


def require_root_and_tun():
    if os.geteuid() != 0:
        skip('needs root (network namespaces, tap devices)')
    if not os.path.exists('/dev/net/tun'):
        skip('no /dev/net/tun on this machine')
    if shutil.which('ip') is None:
        skip('iproute2 (ip) is not installed')
    for exe in (VNETD, VNETCTL):
        if not os.access(exe, os.X_OK):
            fail('%s not built (run make)' % exe)


def require_program(exe, package):
    """Skip unless program exe is installed (from Debian package `package`)."""
    if shutil.which(exe) is None:
        skip('%s is not installed (Debian package %s)' % (exe, package))


def private_binaries(wd):
    """Copy vnetd and vnetctl into wd and use those copies (a benchmark must not run a build
    that other work rebuilds while it runs)."""
    global VNETD, VNETCTL
    copies = []
    for path in (VNETD, VNETCTL):
        dst = os.path.join(wd, os.path.basename(path))
        shutil.copy2(path, dst)
        copies.append(dst)
    VNETD, VNETCTL = copies


def guest_kit(suite='bookworm'):
    """Build (or reuse) the guest kit of a Debian suite (bookworm: Linux 6.1, trixie: 6.12,
    sid: 7.2) for its QEMU kernel or files; skip only when packages truly cannot be fetched. A
    test that boots UML takes uml_kit() instead: which UML boots depends on the host's CPU."""
    try:
        kit = kits.build_kit(BUILD, suite, log=_log)
    except kits.KitError as e:
        (skip if e.skip else fail)(str(e))
    print('guest kit: ' + kits.describe(kit), flush=True)
    return kit


def uml_kit(suite=None):
    """A kit whose UML boots on this host. suite None: "a Linux guest", the newest kernel that
    boots here (sid's 7.x, else bookworm's 6.1); a named suite: that kernel, or a skip naming
    why it cannot run on this CPU."""
    try:
        kit = kits.uml_kit(BUILD, suite, log=_log)
    except kits.KitError as e:
        (skip if e.skip else fail)(str(e))
    print('guest kit: %s (CPU %s)' % (kits.describe(kit), kits.cpu_summary()), flush=True)
    return kit


def uml_start(name, suite=None):
    """A UML test's start: root and /dev/net/tun (else a skip), uml_kit(suite), and a fresh
    work directory named after the test; returns (kit, workdir)."""
    require_root_and_tun()
    return uml_kit(suite), workdir(name)


def host_addr(ns, dev, ip):
    """In namespace ns: address ip/24 on interface dev (a vnetd tap), and dev up."""
    ns.run('ip addr add %s/24 dev %s && ip link set %s up' % (ip, dev, dev))


def guest_addr(g, ip, **kw):
    """In guest g: eth0 up with address ip/24 (a failure fails the guest command)."""
    g.run('ip link set eth0 up && ip addr add %s/24 dev eth0' % ip, check=True, **kw)


def _log(line):
    print(line, flush=True)


def new_qemu(suite='sid'):
    """Path of a newer QEMU's runner (guest/qemu.sh, cached); skip when it cannot be had."""
    r = subprocess.run([os.path.join(TOP, 'guest', 'qemu.sh'), BUILD, '--suite', suite],
                       capture_output=True, text=True)
    if r.returncode == 77:
        skip("%s's QEMU cannot be fetched or run here: %s"
             % (suite, (r.stderr.strip().splitlines() or ['?'])[-1]))
    if r.returncode != 0:
        fail('guest/qemu.sh failed:\n' + r.stdout + r.stderr)
    for line in r.stderr.splitlines():
        if line.startswith('cache:') or 'ready:' in line:
            _log(line)
    return r.stdout.strip().splitlines()[-1]


class NoNs:
    """Stands in for a Netns: vnetd with only switch ports creates no interface, needs none."""

    def popen(self, argv, **kw):
        kw.setdefault('start_new_session', True)
        return subprocess.Popen(argv, **kw)


class ControlClient:
    """One connection to vnetd's control socket (a JSON request per line, a reply per line),
    kept open so a round trip measures vnetd, not a vnetctl process start."""

    def __init__(self, path, timeout=30.0):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.settimeout(timeout)
        self.sock.connect(path)  # accepted by the kernel even while vnetd's loop is busy
        self.buf = b''

    def request(self, req, timeout=None):
        """The reply (a dict) to req; raises socket.timeout / OSError / ValueError."""
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        self.sock.sendall(json.dumps(req).encode() + b'\n')
        while b'\n' not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError('vnetd closed the control connection')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def rtt(self, req=None, timeout=None):
        """Seconds for one round trip of req (default {"cmd": "ports"})."""
        t0 = time.monotonic()
        self.request(req or {'cmd': 'ports'}, timeout)
        return time.monotonic() - t0

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class Vnetd:
    """vnetd running inside namespace ns with the given --port specs; stopped on exit.

    exe, vnetctl: other binaries than this build's; prefix: argv before vnetd's (e.g.
    taskset, valgrind); start_timeout: seconds to wait for "ready:"."""

    def __init__(self, ns, ports, workdir, extra=(), exe=None, vnetctl=None, prefix=(),
                 start_timeout=10.0):
        self.ns = ns
        self.workdir = workdir
        self.control = os.path.join(workdir, 'control.sock')
        self.ports = ports
        # VNETD_EXTRA_ARGS: e.g. "--no-sandbox" for sanitizer builds (LeakSanitizer needs
        # calls the seccomp filter refuses).
        self.extra = list(extra) + os.environ.get('VNETD_EXTRA_ARGS', '').split()
        self.exe, self.vnetctl, self.prefix = exe, vnetctl, list(prefix)
        self.start_timeout = start_timeout
        self.ctl_timeout = 20
        self.log_path = os.path.join(workdir, 'vnetd.log')
        self.proc = None

    def argv(self):
        """vnetd's command line: prefix, the binary, --port per spec, --control, extra."""
        argv = self.prefix + [self.exe or VNETD]
        for p in self.ports:
            argv += ['--port', p]
        return argv + ['--control', self.control] + self.extra

    def failed(self, why):
        """What a failure does: the test fails (a benchmark's subclass raises instead)."""
        fail(why)

    def start(self):
        """Start vnetd; returns once it logged "ready:" (else failed() with its log)."""
        self.log = open(self.log_path, 'ab')
        self.proc = self.ns.popen(self.argv(), stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(int(round(self.start_timeout / 0.05))):
            # "ready:" is logged once setup (and the sandbox) is complete.
            if os.path.exists(self.control) and 'ready:' in self.log_tail(100000):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.failed('vnetd did not start; log:\n' + self.log_tail())

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        rc = self.stop()
        if exc[0] is None and rc != 0:
            self.failed('vnetd exited with status %s on SIGTERM (sanitizer report or crash?); '
                        'log:\n%s' % (rc, self.log_tail()))
        return False

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, wait (SIGKILL after timeout s); returns vnetd's exit status (0 = clean
        shutdown)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode if self.proc else 0

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read()[-n:].decode(errors='replace')
        except OSError:
            return ''

    def ctl(self, *args, check=True):
        r = subprocess.run([self.vnetctl or VNETCTL, '--control', self.control] + list(args),
                           capture_output=True, text=True, timeout=self.ctl_timeout)
        if check and r.returncode != 0:
            self.failed('vnetctl %s: %s%s' % (' '.join(args), r.stdout, r.stderr))
        return r

    def port_info(self):
        """{port name: port dict} from the control socket's "ports" request."""
        data = json.loads(self.ctl('raw', '{"cmd":"ports"}').stdout)
        return {p['name']: p for p in data['ports']}

    def stats(self):
        """{port name: {queue index: queue dict}} from vnetctl stats --json."""
        data = json.loads(self.ctl('stats', '--json').stdout)
        return {p['name']: {q['index']: q for q in p['queues']} for p in data['ports']}


def counter_delta(before, after, port, queue, key):
    return after[port][queue][key] - before[port][queue][key]


def make_blob(path, size_mb):
    """Write size_mb MiB of random bytes to path; returns their sha256 (hex)."""
    data = os.urandom(size_mb << 20)
    with open(path, 'wb') as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


def ns_fetch_sha(ns, url, timeout=120, run_timeout=300):
    """sha256 (hex) of url fetched from inside namespace ns (a guest -> host transfer), or
    'error: ...': timeout for the connection and reads, run_timeout for the whole fetch."""
    code = ('import hashlib,sys,urllib.request;'
            'print(hashlib.sha256(urllib.request.urlopen(sys.argv[1], timeout=%d).read())'
            '.hexdigest())' % timeout)
    r = ns.run(['python3', '-c', code, url], check=False, timeout=run_timeout)
    return r.stdout.strip() if r.returncode == 0 else 'error: ' + r.stderr[-300:]


# What a guest's `iperf3 -s` says while it still finishes the previous test: "busy", or it
# resets a control connection that arrived meanwhile; also "refused" before a daemon listens.
IPERF3_RETRY = ('busy', 'refused', 'reset by peer')


def iperf3_client(ns, server, args, seconds, json_out=False, attempts=3):
    """Run `iperf3 -c server -t seconds args` in namespace ns: (ok, result, why). result is
    the parsed JSON (json_out) or the output text. Tries again, after 2 s, only when the
    server was not ready (IPERF3_RETRY); prints each failed attempt."""
    why = '?'
    for attempt in range(1, attempts + 1):
        cmd = ['iperf3', '-c', server, '-t', str(seconds), '--connect-timeout', '5000'] + \
            (['-J'] if json_out else []) + list(args)
        r = ns.run(cmd, check=False, timeout=seconds + 60)
        text = r.stdout + r.stderr
        if json_out:
            try:
                res = json.loads(r.stdout)
            except ValueError:
                res = {'error': 'no JSON: %s %s' % (r.stdout[-300:], r.stderr[-300:])}
            ok = r.returncode == 0 and not res.get('error')
            why = str(res.get('error', 'exit %d' % r.returncode))
        else:
            res, ok = text, r.returncode == 0
            lines = text.strip().splitlines()
            why = lines[-1] if lines else 'exit %d' % r.returncode
        if ok:
            return True, res, ''
        print('note: iperf3 %s attempt %d failed: %s' % (' '.join(args), attempt, why))
        if not any(k in why for k in IPERF3_RETRY):
            break
        time.sleep(2)
    return False, None, why


class HostServers:
    """In namespace ns, on address host: an HTTP server for directory (port 8000) and an
    iperf3 server; both killed on exit."""

    def __init__(self, ns, host, directory):
        self.ns, self.host, self.directory, self.procs = ns, host, directory, []

    def __enter__(self):
        self.procs.append(self.ns.popen(['python3', '-m', 'http.server', '8000', '--bind',
                                         self.host, '--directory', self.directory],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.procs.append(self.ns.popen(['iperf3', '-s', '-B', self.host],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        return False


def workdir(name):
    return tempfile.mkdtemp(prefix='vnetd-%s-' % name)
