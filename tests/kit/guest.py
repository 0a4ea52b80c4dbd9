# SPDX-License-Identifier: MIT
"""Boot and drive vnetd test guests (UML and QEMU-TCG) built by guest/fetch.sh; stdlib only.

    with UmlGuest(kit_dir, '/run/vnetd.sock') as g:      # start() + wait_ready()
        rc, out = g.run('ethtool -c eth0', timeout=30)
    # leaving the block: stop() = "poweroff -f", then SIGKILL of the process group

The guest /init (guest/init) prints GUEST-READY, then runs each console line with `sh -c`
and ends its output with "\\nGUEST-DONE <rc>\\n".  Commands are single lines (<4096 bytes);
their stdin is /dev/null.  Start long-running guest processes in the background with their
output redirected (e.g. `iperf3 -s -D --logfile /tmp/s.log`) so it does not mix into later runs.
"""

import os
import re
import signal
import subprocess
import threading
import time

READY_RE = re.compile(rb'GUEST-READY\r?\n')
DONE_RE = re.compile(rb'\r?\nGUEST-DONE (-?\d+)\r?\n')


class GuestError(Exception):
    """The guest failed (exited, or did not answer in time); message ends with console tail."""


class GuestTimeout(GuestError):
    pass


class _Guest:
    """Common console handling: a reader thread collects all output into self._buf."""

    boot_timeout = 60

    def __init__(self, log_path=None):
        self.log_path = log_path
        self.proc = None
        self.boot_time = None      # seconds from start() to GUEST-READY
        self._buf = bytearray()
        self._eof = False
        self._cond = threading.Condition()
        self._lock = threading.Lock()   # one run() at a time
        self._reader = None
        self._t0 = None
        self._busy = False              # a run() timed out: the guest shell is still busy

    # -- to be provided by subclasses --
    def argv(self):
        raise NotImplementedError

    # -- process control --
    def start(self):
        if self.proc is not None:
            raise GuestError('guest already started')
        argv = self.argv()
        self._log = open(self.log_path, 'ab') if self.log_path else None
        if self._log:
            self._log.write(('\n### ' + ' '.join(argv) + '\n').encode())
        self._t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        return self

    def _read_loop(self):
        fd = self.proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b''
            with self._cond:
                if not data:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._buf += data
                self._cond.notify_all()
            if self._log:
                self._log.write(data)
                self._log.flush()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL the guest's whole process group (a hung UML ignores SIGTERM)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self._reader:
            self._reader.join(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self._log:
            self._log.close()
            self._log = None

    def stop(self, timeout=10):
        """Ask the guest to power off; SIGKILL the process group after `timeout` seconds
        (at once if an earlier run() timed out, as the shell would not read the request)."""
        if self.proc is None:
            return
        try:
            if self.alive() and not self._busy:
                self._send(b'poweroff -f\n')
                self.proc.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            self.kill()

    def __enter__(self):
        try:
            self.start()
            self.wait_ready(self.boot_timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- console --
    @property
    def output(self):
        """Everything the console printed so far (text)."""
        with self._cond:
            return self._buf.decode(errors='replace').replace('\r\n', '\n')

    def tail(self, n=2000):
        return self.output[-n:]

    def _send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _wait_for(self, regex, start, timeout, what):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = regex.search(self._buf, start)
                if m:
                    return m
                if self._eof:
                    rc = self.proc.poll() if self.proc else None
                    raise GuestError('%s: guest exited (rc=%s) while waiting; console tail:\n%s'
                                     % (what, rc, self._tail_locked()))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GuestTimeout('%s: timed out after %ss; console tail:\n%s'
                                       % (what, timeout, self._tail_locked()))
                self._cond.wait(min(left, 1.0))

    def _tail_locked(self, n=2000):
        return bytes(self._buf[-n:]).decode(errors='replace').replace('\r\n', '\n')

    def wait_ready(self, timeout=60):
        """Wait for GUEST-READY; returns the boot time in seconds."""
        self._wait_for(READY_RE, 0, timeout, 'wait_ready')
        if self.boot_time is None:
            self.boot_time = time.monotonic() - self._t0
        return self.boot_time

    def resync(self, timeout=60, poke_every=3.0):
        """Bring the console back to a known state: poke until the init's shell answers, then
        wait for a unique marker so that every poke's answer has arrived before run() starts.
        For a console that may have lost input (a migrated guest whose serial state was loaded
        over characters sent before the switch-over finished, a socket console just attached).
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                with self._cond:
                    start = len(self._buf)
                self._send(b'\necho CONSOLE-UP\n')
                try:
                    self._wait_for(DONE_RE, start, poke_every, 'console')
                    break
                except GuestTimeout:
                    if time.monotonic() > deadline:
                        raise
            marker = b'SYNC-%d-%d' % (os.getpid(), int(time.monotonic() * 1000))
            with self._cond:
                start = len(self._buf)
            self._send(b'echo ' + marker + b'\n')
            self._wait_for(re.compile(re.escape(marker) + rb'\r?\n\r?\nGUEST-DONE -?\d+\r?\n'),
                           start, max(1.0, deadline - time.monotonic()), 'console sync')
            self._busy = False

    def run(self, cmd, timeout=60, check=False):
        """Run one shell command line in the guest; returns (rc, output_text)."""
        if '\n' in cmd or '\r' in cmd:
            raise ValueError('guest commands are single lines; join with ";" instead')
        data = cmd.encode() + b'\n'
        if len(data) > 4000:
            raise ValueError('guest command too long for the console line (%d bytes)' % len(data))
        if not self.alive():
            raise GuestError('run(%r): guest not running; console tail:\n%s' % (cmd, self.tail()))
        if self._busy:
            raise GuestError('run(%r): an earlier command timed out and still occupies the '
                             'guest shell; stop() or kill() the guest' % cmd)
        with self._lock:
            with self._cond:
                start = len(self._buf)
            self._send(data)
            self._busy = True
            m = self._wait_for(DONE_RE, start, timeout, 'run(%r)' % cmd)
            self._busy = False
            rc = int(m.group(1))
            with self._cond:
                out = bytes(self._buf[start:m.start()])
        out = out.decode(errors='replace').replace('\r\n', '\n')
        if check and rc != 0:
            raise GuestError('run(%r) exited %d; output:\n%s' % (cmd, rc, out))
        return rc, out


class UmlGuest(_Guest):
    """User-Mode Linux guest; vhost_socket=None boots without a virtio-net device.  kit_dir picks
    the kernel: guest/fetch.sh's BUILD/guest (bookworm, 6.1) or BUILD/guest/SUITE (sid: 7.2)."""

    def __init__(self, kit_dir, vhost_socket=None, mem='256M', extra_args=(), log_path=None):
        super().__init__(log_path)
        self.kit_dir = kit_dir
        self.vhost_socket = vhost_socket
        self.mem = mem
        self.extra_args = list(extra_args)

    def argv(self):
        a = [os.path.join(self.kit_dir, 'linux.uml'), 'mem=' + self.mem,
             'initrd=' + os.path.join(self.kit_dir, 'uml-initrd.cpio.gz'),
             'con=null', 'ssl=null', 'con0=fd:0,fd:1', 'quiet', 'loglevel=1']
        if self.vhost_socket:
            a.append('virtio_uml.device=%s:1' % self.vhost_socket)   # device id 1 = net
        return a + self.extra_args


class QemuGuest(_Guest):
    """QEMU x86-64 guest under TCG with a virtio-net-pci NIC on vhost-user, a tap, or none.

    qemu: the QEMU binary (default qemu-system-x86_64 on PATH; guest/qemu.sh prints a newer one).
    full_device=True (QEMU >= 10.2, vhost_socket needed): vhost-user-test-device-pci instead of
    virtio-net-pci + -netdev vhost-user, so every queue (the control queue too) and the config
    space belong to the backend; num_vqs = 2 * queue pairs + 1, config_size 12 (mac, status,
    max_virtqueue_pairs, mtu; 24 adds speed, duplex and the RSS fields).  mac is then the
    backend's (vnetd's mac=), not QEMU's."""

    boot_timeout = 180

    def __init__(self, kit_dir, vhost_socket=None, tap=None, mem='512M', netns=None,
                 mac='52:54:00:12:34:56', smp=1, device_opts='', append='', extra_args=(),
                 log_path=None, qemu=None, full_device=False, num_vqs=3, vq_size=256, accel='tcg',
                 config_size=12):
        super().__init__(log_path)
        self.accel = accel                  # 'kvm' only for make doctor's measurement
        if vhost_socket and tap:
            raise ValueError('give vhost_socket or tap, not both')
        if full_device and not vhost_socket:
            raise ValueError('full_device needs vhost_socket')
        self.qemu = qemu or 'qemu-system-x86_64'
        self.full_device = full_device
        self.num_vqs = num_vqs
        self.config_size = config_size
        self.vq_size = vq_size
        self.kit_dir = kit_dir
        self.vhost_socket = vhost_socket
        self.tap = tap
        self.mem = mem
        self.netns = netns
        self.mac = mac
        self.smp = smp
        self.device_opts = device_opts      # appended to -device virtio-net-pci,... e.g. ',mq=on'
        self.append = append                # extra kernel command line
        self.extra_args = list(extra_args)

    def argv(self):
        a = [self.qemu, '-accel', self.accel, '-cpu', 'max', '-smp', str(self.smp),
             '-m', self.mem, '-nodefaults', '-no-user-config', '-display', 'none',
             '-serial', 'stdio', '-no-reboot',
             '-kernel', os.path.join(self.kit_dir, 'vmlinuz'),
             '-initrd', os.path.join(self.kit_dir, 'qemu-initrd.cpio.gz'),
             '-append', ('console=ttyS0 quiet loglevel=1 panic=-1 ' + self.append).strip()]
        dev = 'virtio-net-pci,netdev=n0,mac=%s%s' % (self.mac, self.device_opts)
        if self.full_device:
            a += ['-object', 'memory-backend-memfd,id=mem,size=%s,share=on' % self.mem,
                  '-numa', 'node,memdev=mem', '-nic', 'none',
                  '-chardev', 'socket,id=c0,path=%s' % self.vhost_socket,
                  '-device', 'vhost-user-test-device-pci,chardev=c0,virtio-id=1,num_vqs=%d,'
                  'config_size=%d,vq_size=%d%s' % (self.num_vqs, self.config_size, self.vq_size,
                                                    self.device_opts)]
        elif self.vhost_socket:
            a += ['-object', 'memory-backend-memfd,id=mem,size=%s,share=on' % self.mem,
                  '-numa', 'node,memdev=mem',
                  '-chardev', 'socket,id=c0,path=%s' % self.vhost_socket,
                  '-netdev', 'vhost-user,id=n0,chardev=c0', '-device', dev]
        elif self.tap:
            a += ['-netdev', 'tap,id=n0,ifname=%s,script=no,downscript=no,vhost=off' % self.tap,
                  '-device', dev]
        else:
            a += ['-nic', 'none']
        a += self.extra_args
        if self.netns:
            a = ['ip', 'netns', 'exec', self.netns] + a
        return a


class Netns:
    """A throw-away network namespace: created on enter, its processes killed and it deleted on exit."""

    def __init__(self, prefix, exact=False):
        # PREFIX-PID: two concurrent runs of one test (a developer's and a CI clone's) must
        # not share, and so delete, each other's namespace.
        self.prefix = prefix
        self.name = prefix if exact else '%s-%d' % (prefix, os.getpid())

    def _remove_stale(self):
        """Delete PREFIX-PID namespaces whose run died (PID gone)."""
        try:
            names = os.listdir('/run/netns')
        except FileNotFoundError:
            return
        for n in names:
            pid = n[len(self.prefix) + 1:]
            if n.startswith(self.prefix + '-') and pid.isdigit() and \
                    not os.path.exists('/proc/' + pid):
                Netns(n, exact=True).delete()

    def __enter__(self):
        self._remove_stale()
        if os.path.exists('/run/netns/' + self.name):
            self.delete()                    # stale from an earlier run with this PID
        subprocess.run(['ip', 'netns', 'add', self.name], check=True)
        self.run('ip link set lo up')
        return self

    def __exit__(self, *exc):
        self.delete()
        return False

    def argv(self, cmd):
        """argv running cmd (a shell string or an argv list) inside the namespace."""
        cmd = ['sh', '-c', cmd] if isinstance(cmd, str) else list(cmd)
        return ['ip', 'netns', 'exec', self.name] + cmd

    def run(self, cmd, check=True, timeout=60, **kw):
        """Run to completion; returns CompletedProcess with text stdout/stderr."""
        kw.setdefault('capture_output', True)
        return subprocess.run(self.argv(cmd), check=check, timeout=timeout, text=True, **kw)

    def popen(self, cmd, **kw):
        """Start in the background (own session, so kill() via killpg works)."""
        kw.setdefault('start_new_session', True)
        return subprocess.Popen(self.argv(cmd), **kw)

    def pids(self):
        r = subprocess.run(['ip', 'netns', 'pids', self.name], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []

    def add_tap(self, tap, addr=None):
        """Create a tap device in the namespace (for QemuGuest(tap=..., netns=...)), bring it up."""
        self.run(['ip', 'tuntap', 'add', 'dev', tap, 'mode', 'tap'])
        if addr:
            self.run(['ip', 'addr', 'add', addr, 'dev', tap])
        self.run(['ip', 'link', 'set', tap, 'up'])

    def delete(self):
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        subprocess.run(['ip', 'netns', 'del', self.name], capture_output=True)
