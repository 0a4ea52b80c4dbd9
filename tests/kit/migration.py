# SPDX-License-Identifier: MIT
"""Live migration pieces for the e2e test and the benchmark: QMP client, an incoming QEMU
(its console continues the source's), a throttled HTTP sender, a two-tap bridge, and a
page-by-page comparison of two stopped QEMUs' guest RAM."""

import json
import os
import socket
import subprocess
import sys
import time

from .guest import QemuGuest


class Qmp:
    """A QMP connection (unix socket): capabilities negotiated, one command at a time."""

    def __init__(self, path, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.sock.settimeout(timeout)
        self.buf = b''
        self.events = []
        self._read()                      # greeting
        self.cmd('qmp_capabilities')

    def _read(self):
        while b'\n' not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError('QMP connection closed')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def cmd(self, name, **args):
        """Run a command; returns its 'return' value, raises RuntimeError on 'error'."""
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.sock.sendall(json.dumps(msg).encode() + b'\n')
        while True:
            r = self._read()
            if 'event' in r:
                self.events.append(r)
                continue
            if 'error' in r:
                raise RuntimeError('QMP %s: %s' % (name, r['error']))
            return r.get('return')

    def close(self):
        self.sock.close()


def migrate(src_qmp, uri, during=None, timeout=600, poll=0.2):
    """Migrate the source to uri; `during(info)` runs at each poll while it is active. Returns
    the final query-migrate dict (status completed), raises RuntimeError otherwise."""
    src_qmp.cmd('migrate', uri=uri)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = src_qmp.cmd('query-migrate')
        st = info.get('status')
        if st == 'completed':
            return info
        if st in ('failed', 'cancelled'):
            raise RuntimeError('migration %s: %s' % (st, info))
        if during and st == 'active':
            during(info)
        time.sleep(poll)
    raise RuntimeError('migration did not complete within %ss' % timeout)


class AnyQemu(QemuGuest):
    """QemuGuest with another QEMU binary (qemu=PATH, e.g. a QEMU >= 10 for DEVICE_STATE);
    QemuGuest takes qemu= itself, None meaning the installed one."""


class IncomingQemu(AnyQemu):
    """The destination QEMU (-incoming): its serial console carries on the source guest's
    shell after the switch-over, so it never prints GUEST-READY."""

    def __enter__(self):
        self.start()
        return self

    def adopt(self, qmp_path, timeout=60):
        """After the switch-over: wait until this QEMU runs the guest (QMP query-status), then
        resync its console (input sent while the incoming serial state was still loading is
        lost), so that commands now go to this QEMU's console."""
        self.boot_time = 0.0
        deadline = time.monotonic() + timeout
        q = Qmp(qmp_path)
        try:
            while q.cmd('query-status').get('status') != 'running':
                if time.monotonic() > deadline:
                    raise RuntimeError('destination QEMU not running %ss after the switch-over'
                                       % timeout)
                time.sleep(0.2)
        finally:
            q.close()
        self.resync(timeout=max(10.0, deadline - time.monotonic()))


# A sender of `size` bytes of a file at `rate` bytes/s to each HTTP/1.0 GET (stdlib only).
THROTTLED_SERVER = r'''
import socket, sys, time, threading
path, host, port, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
data = open(path, 'rb').read()
def serve(c):
    try:
        c.recv(4096)
        c.sendall(b'HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n' % len(data))
        t0 = time.monotonic(); sent = 0; step = 16384
        while sent < len(data):
            c.sendall(data[sent:sent + step]); sent += step
            ahead = sent / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port)); s.listen(8)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''


def start_throttled_server(ns, path, host, port, rate):
    return ns.popen([sys.executable, '-c', THROTTLED_SERVER, path, host, str(port), str(rate)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bridge_taps(ns, taps, addr):
    """Bridge br0 in the namespace holding taps (vnetd created them), with the host address."""
    ns.run('ip link add br0 type bridge && ip link set br0 up && ip addr add %s dev br0' % addr)
    for t in taps:
        ns.run('ip link set %s master br0 && ip link set %s up' % (t, t))


def fdb_port(ns, mac):
    """The bridge port br0 learned mac on (or None)."""
    r = ns.run('bridge fdb show br br0', check=False)
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0].lower() == mac.lower() and 'dev' in f:
            return f[f.index('dev') + 1]
    return None


def _ram_mapping(pid):
    """The guest RAM mapping (memory-backend-memfd id=mem: QEMU 7.2 names the memfd "mem",
    QEMU 11 "memory-backend-memfd") of QEMU process pid: (start, end), the largest."""
    best = None
    with open('/proc/%d/maps' % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] in ('/memfd:mem', '/memfd:memory-backend-memfd'):
                a, b = (int(x, 16) for x in fields[0].split('-'))
                if best is None or b - a > best[1] - best[0]:
                    best = (a, b)
    if best is None:
        raise RuntimeError('QEMU %d has no guest RAM memfd mapping' % pid)
    return best


def ram_pages_differing(pid_a, pid_b, chunk=64 << 20, page=4096):
    """(offsets of the pages whose contents differ, pages compared) between two stopped QEMUs'
    guest RAM (read through /proc/PID/mem, `chunk` bytes at a time)."""
    (a0, a1), (b0, b1) = _ram_mapping(pid_a), _ram_mapping(pid_b)
    if a1 - a0 != b1 - b0:
        raise RuntimeError('guest RAM sizes differ: %d and %d bytes' % (a1 - a0, b1 - b0))
    diff = []
    with open('/proc/%d/mem' % pid_a, 'rb', buffering=0) as fa, \
            open('/proc/%d/mem' % pid_b, 'rb', buffering=0) as fb:
        for off in range(0, a1 - a0, chunk):
            n = min(chunk, a1 - a0 - off)
            fa.seek(a0 + off)
            fb.seek(b0 + off)
            x, y = fa.read(n), fb.read(n)
            if x != y:
                diff += [off + i for i in range(0, n, page) if x[i:i + page] != y[i:i + page]]
    return diff, (a1 - a0) // page


def wait_status(qmp, want, timeout=60):
    """Poll QMP query-status until the VM's status is `want`."""
    deadline = time.monotonic() + timeout
    while True:
        st = qmp.cmd('query-status').get('status')
        if st == want:
            return
        if time.monotonic() > deadline:
            raise RuntimeError('QEMU status %s, not %s, after %ss' % (st, want, timeout))
        time.sleep(0.2)


def compare_ram(src, dst, qdst, assert_equal):
    """The migration completed and the destination, started with -S, is paused: both guests'
    RAM must be the same page for page (neither QEMU runs the guest, vnetd's rings are stopped
    on the source and not started on the destination). Then the destination runs."""
    from .harness import check
    wait_status(qdst, 'paused')
    diff, pages = ram_pages_differing(src.proc.pid, dst.proc.pid)
    what = 'guest RAM identical on source and destination after the migration (%d pages)' % pages
    if diff:
        what = '%d guest pages differ between source and destination after the migration: %s' % (
            len(diff), ' '.join('0x%x' % d for d in diff[:8]))
    if assert_equal:
        check(not diff, what)
    else:
        print('note (QEMU 7.2, known to lose pages under TCG, not asserted): %s' % what,
              flush=True)
    qdst.cmd('cont')


def migration_qemu(fallback):
    """The QEMU to migrate with: VNETD_QEMU_DEVICE_STATE, else sid's QEMU 11 (guest/qemu.sh,
    cached), else None (Debian 12's QEMU 7.2, which loses guest pages in TCG migrations by
    itself: docs/migration.md) with a note saying so and what happens instead (fallback)."""
    from . import harness
    if os.environ.get('VNETD_QEMU_DEVICE_STATE'):
        return os.environ['VNETD_QEMU_DEVICE_STATE']
    r = subprocess.run([os.path.join(harness.TOP, 'guest', 'qemu.sh'), harness.BUILD, '--suite',
                        'sid'], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        print('note: no QEMU >= 10 (guest/qemu.sh exit %d: %s): %s'
              % (r.returncode, (r.stderr.strip().splitlines() or ['?'])[-1], fallback),
              flush=True)
        return None
    return r.stdout.strip().splitlines()[-1]


def qemu_args(wd, name, incoming=None):
    a = ['-qmp', 'unix:%s,server=on,wait=off' % os.path.join(wd, name + '.qmp')]
    if incoming:
        a += ['-incoming', incoming]
    return a
