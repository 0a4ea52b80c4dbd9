# SPDX-License-Identifier: MIT
"""Machinery of the fairness test and benchmark: switch-port vnetd, ring-spinning guests, probes."""

import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import threading
import time

from . import harness
from .harness import NoNs, Vnetd
from .vhost_user_client import (DEFAULT_FEATURES, DESC, NET_HDR_LEN, TX_Q,
                                VIRTIO_RING_F_INDIRECT_DESC, VRING_DESC_F_INDIRECT,
                                VRING_DESC_F_NEXT, VRING_DESC_F_WRITE, VhostUserError,
                                VirtioNetFrontend, ether_frame)

HERE = os.path.dirname(os.path.abspath(__file__))
RINGSPIN_C = os.path.join(HERE, 'ringspin.c')
MACS = {'a': '52:54:00:fa:00:0a', 'b': '52:54:00:fa:00:0b', 'c': '52:54:00:fa:00:0c'}
PORT = {'a': 'p0', 'b': 'p1', 'c': 'p2'}  # vnetd names ports p0, p1, ... in --port order
BCAST = 'ff:ff:ff:ff:ff:ff'
RING = 256          # entries of the spinning guests' queues
MEM = 4 << 20       # guest memory of a spinning guest: three 32768-entry rings (2.5 MiB), or
RX_BUF = 2048       # ... up to 1024 RX buffers of RX_BUF bytes
CLK_TCK = os.sysconf('SC_CLK_TCK')

# Port A's flood (see Flood). Measured on a shared 2-core VM against vnetd a9b6c28: with 256
# chains of 60 bytes the ring drains in ~15 us whenever the flooder is descheduled, vnetd gets
# back to epoll_wait every few ms (control p99 ~100-250 ms, p50 < 2 ms) and what the test sees
# depends on the machine's load. Chains that are costly but valid (one 64 KiB frame in an
# indirect table of 1024 descriptors, ~6 us each) in the largest ring a split queue may have
# take vnetd ~200 ms to drain: no scheduling hiccup lets it go (control requests unanswered
# for 30 s). The flooder runs at nice -20 when allowed (VNETD_FLOOD_SCHED=nice|fifo|default).
FLOOD_RING = 32768
FLOOD_FRAME = 65536
FLOOD_PIECES = 1024
FLOOD_SCHED = {'fifo': (('fifo', 1), ('nice', -20)), 'nice': (('nice', -20),),
               'default': ()}[os.environ.get('VNETD_FLOOD_SCHED', 'nice')]


class NoCompiler(Exception):
    pass


def build_ringspin(outdir):
    """Compile ringspin.c into outdir; returns the binary. NoCompiler if there is no cc."""
    cc = os.environ.get('CC', 'cc')
    if shutil.which(cc) is None:
        raise NoCompiler('no C compiler (%s) to build %s' % (cc, RINGSPIN_C))
    exe = os.path.join(outdir, 'ringspin')
    r = subprocess.run([cc, '-O2', '-Wall', '-o', exe, RINGSPIN_C], capture_output=True, text=True)
    if r.returncode != 0:
        raise NoCompiler('%s %s failed:\n%s' % (cc, RINGSPIN_C, r.stderr))
    return exe


def start_vnetd(wd, names=('a', 'b', 'c')):
    """vnetd with switch ports a, b, c (PORT: p0, p1, p2; sockets wd/NAME.sock), started;
    returns (Vnetd, {name: socket path})."""
    socks = {n: os.path.join(wd, '%s.sock' % n) for n in names}
    ports = ['socket=%s,switch,mac=%s' % (socks[n], MACS[n]) for n in names]
    return Vnetd(NoNs(), ports, wd).__enter__(), socks


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (from /proc/PID/stat)."""
    with open('/proc/%d/stat' % pid) as f:
        s = f.read()
    fields = s[s.rindex(')') + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def percentile(vals, p):
    """Nearest-rank percentile of vals (p in 0..100); None if empty."""
    if not vals:
        return None
    v = sorted(vals)
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


def rtt_summary(rtts, errors=0):
    ms = [x * 1000 for x in rtts]
    return {'samples': len(ms), 'errors': errors,
            'p50_ms': percentile(ms, 50), 'p99_ms': percentile(ms, 99),
            'max_ms': max(ms) if ms else None,
            'mean_ms': statistics.mean(ms) if ms else None}


def fmt_rtt(s):
    unanswered = ', %d unanswered within the bound' % s['errors'] if s['errors'] else ''
    if not s['samples']:
        return 'no round trip answered' + unanswered
    return 'p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d round trips%s)' % (
        s['p50_ms'], s['p99_ms'], s['max_ms'], s['samples'], unanswered)


class ControlProbe:
    """A thread doing control-socket round trips (interval apart) until stop(); keeps the RTTs.

    A request that gets no answer within timeout is an error (the connection is then replaced)."""

    def __init__(self, path, interval=0.01, timeout=30.0):
        self.path, self.interval, self.timeout = path, interval, timeout
        self.rtts, self.errors, self.answered_at = [], [], []
        self.sent_at = None  # monotonic time of the request in flight
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        c = None
        while not self._stop.is_set():
            try:
                if c is None:
                    c = harness.ControlClient(self.path, self.timeout)
                self.sent_at = time.monotonic()
                self.rtts.append(c.rtt())
                self.answered_at.append(time.monotonic())
                self.sent_at = None
            except (OSError, ValueError) as e:
                self.sent_at = None
                self.errors.append('%s: %s' % (type(e).__name__, e))
                if c:
                    c.close()
                c = None
            self._stop.wait(self.interval)
        if c:
            c.close()

    def start(self):
        self._thread.start()
        return self

    def halt(self):
        """Send no further request (the one in flight still counts)."""
        self._stop.set()

    def stop(self):
        """Stops after the request in flight (at most timeout); returns rtt_summary()."""
        self._stop.set()
        self._thread.join(self.timeout + 5)
        return self.summary()

    def summary(self):
        return rtt_summary(list(self.rtts), len(self.errors))

    def status(self):
        """One line: round trips so far, and how long the one in flight has waited."""
        sent = self.sent_at
        return '%s%s' % (fmt_rtt(self.summary()), '' if sent is None else
                         '; a request waiting for %.1f s' % (time.monotonic() - sent))


def sample_rtts(path, n=200, interval=0.005, timeout=30.0):
    """n control round trips in a row (idle measurement); returns rtt_summary()."""
    c = harness.ControlClient(path, timeout)
    try:
        rtts = []
        for _ in range(n):
            rtts.append(c.rtt())
            time.sleep(interval)
    finally:
        c.close()
    return rtt_summary(rtts)


class Spinner:
    """ringspin on one queue of a frontend: keeps a TX ring full of one frame, or an RX ring
    full of buffers. start() runs it; count() = chains the device completed so far (ringspin
    keeps the count in guest memory, so reading it needs nothing from vnetd)."""

    def __init__(self, exe, f, qidx, frame=None, batch=1, idle_us=0, pieces=1):
        self.f, self.ring = f, f.rings[qidx]
        ring, mem = self.ring, f.mem
        self.counter = mem.alloc(8, 8)
        mem.write(self.counter, bytes(8))
        if qidx == TX_Q:
            pkt = bytes(NET_HDR_LEN) + frame
            buf = mem.alloc(len(pkt))
            mem.write(buf, pkt)
            if pieces > 1:  # every chain: one indirect table (shared) of `pieces` descriptors
                step = -(-len(pkt) // pieces)
                table = mem.alloc(16 * pieces, 16)
                descs = [(buf + o, min(step, len(pkt) - o)) for o in range(0, len(pkt), step)]
                mem.write(table, b''.join(DESC.pack(a, n, VRING_DESC_F_NEXT if k + 1 < len(descs)
                                                    else 0, k + 1)
                                          for k, (a, n) in enumerate(descs)))
                ring.fill_in_order([(table, 16 * len(descs), VRING_DESC_F_INDIRECT)] * ring.num)
            else:
                ring.fill_in_order([(buf, len(pkt), 0)] * ring.num)
        else:
            ring.fill_in_order([(mem.alloc(RX_BUF), RX_BUF, VRING_DESC_F_WRITE)
                                for _ in range(ring.num)])
        off = lambda gpa: gpa - mem.gpa_base  # noqa: E731
        self.argv = [exe, str(mem.fd), str(mem.size), str(off(ring.avail)), str(off(ring.used)),
                     str(ring.num), str(ring.kick_fd), str(batch), str(idle_us),
                     str(off(self.counter))]
        self.proc = self.result = self.output = None
        self.sched = 'not started'

    def start(self, seconds=0, sched=None):
        """Run ringspin (for `seconds`, 0 = until stop()) with scheduling sched (set_sched)."""
        self.proc = subprocess.Popen(self.argv + [str(seconds)],
                                     pass_fds=(self.f.mem.fd, self.ring.kick_fd),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.sched = set_sched(self.proc.pid, sched)
        return self

    def count(self):
        return struct.unpack('<Q', self.f.mem.read(self.counter, 8))[0]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM (if still running), wait; returns (completed, seconds it ran)."""
        if self.result is not None or self.proc is None:
            return self.result
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        parts = (out or '').split()
        if len(parts) >= 6 and parts[0] == 'completed':
            self.result = (int(parts[1]), float(parts[5]))
        else:
            self.result = (self.count(), None)
        self.output = out
        return self.result


def set_sched(pid, scheds):
    """scheds: [('nice', N) or ('fifo', PRIO), ...]: applies the first one allowed and returns
    it as text ('default' if none was)."""
    why = []
    for kind, v in scheds or ():
        try:
            if kind == 'nice':
                os.setpriority(os.PRIO_PROCESS, pid, v)
            else:
                os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(v))
            return '%s %d' % (kind, v)
        except OSError as e:
            why.append('%s %d: %s' % (kind, v, e.strerror))
    return 'default' + (' (refused: %s)' % '; '.join(why) if why else '')


def spin_guest(sock, timeout=30.0, num=RING, features=DEFAULT_FEATURES):
    """A frontend with num-entry queues, fully set up (negotiation, memory, rx/tx/ctrl rings)."""
    return VirtioNetFrontend(sock, features=features, queue_size=num, mem_size=MEM,
                             timeout=timeout).setup()


def flood_frame(mac, size=60):
    """A's hostile frame: size bytes, from A's MAC to A's MAC. The switch learns the source and
    filters the frame (its destination is behind the port it came from), so the flood costs
    vnetd TX work only: no other guest's RX queue fills, the other ports see nothing of it."""
    return ether_frame(mac, mac, b'flood'.ljust(size - 14, b'.'))


def bulk_frame(dst, src, size=60):
    return ether_frame(dst, src, b'bulk'.ljust(size - 14, b'.'))


class Flood:
    """Port A's hostile guest: a TX queue of `num` valid one-frame chains (FLOOD_*), avail.idx
    kept at used.idx + num for ever (the same heads re-posted as fast as vnetd uses them,
    kicking whenever allowed) by a spinning ringspin."""

    def __init__(self, exe, sock, timeout=30.0, num=FLOOD_RING, frame_size=FLOOD_FRAME,
                 pieces=FLOOD_PIECES, sched=FLOOD_SCHED):
        feats = DEFAULT_FEATURES | (1 << VIRTIO_RING_F_INDIRECT_DESC if pieces > 1 else 0)
        self.f = spin_guest(sock, timeout, num, feats)
        self.spin = Spinner(exe, self.f, TX_Q, flood_frame(MACS['a'], frame_size), batch=1,
                            idle_us=0, pieces=pieces).start(sched=sched)

    def wait_running(self, timeout=10.0, want=10000):
        """True once vnetd has consumed `want` flood chains."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.spin.alive():
            if self.spin.count() >= want:
                return True
            time.sleep(0.01)
        return False

    def stop(self):
        r = self.spin.stop()
        self.f.close()
        return r


def teach_switch(f, mac):
    """One broadcast from mac, so the switch learns which port it is behind."""
    return f.transmit(ether_frame(BCAST, mac, b'hello'.ljust(46, b'.')), timeout=f.vu.timeout)


def close_all(objs):
    for o in objs:
        try:
            o.stop() if hasattr(o, 'stop') else o.close()
        except (OSError, VhostUserError, socket.error):
            pass
