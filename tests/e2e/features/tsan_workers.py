# SPDX-License-Identifier: MIT
"""make tsan's driver: the multi-worker paths of a vnetd built with ThreadSanitizer
(build-tsan, --workers 2 --no-sandbox, TSAN_OPTIONS halt_on_error=1), driven by Python
frontends (vhost_user_client.py, vu_packed.py) that stream frames; no QEMU (a migration under
TSan is far too slow). Three scenarios, a fresh vnetd each:

  1. dirty-log   two split and two packed switch ports, one of each pinned on each worker
                 (worker=), all logging dirty pages as a migration does (SET_LOG_BASE with a
                 memfd, SET_FEATURES with VHOST_F_LOG_ALL, SET_VRING_ADDR with
                 VHOST_VRING_F_LOG on every ring) while unicasts and broadcasts flow both ways;
                 between phases every log is replaced (a new memfd: QEMU's log resize) and
                 LOG_ALL goes off and on again on worker 0's ports. Every RX buffer sits on a
                 page whose log byte nothing else shares: its bit is cleared before the buffer
                 is posted and must be set when it comes back used (clear with LOG_ALL off).
                 Then p1's frontend truncates its guest memory under its RX buffers: the copy
                 into one faults (SIGBUS) on worker 1, vnetd drops that frontend, the others go
                 on, and a new one on p1 forwards.
  2. queue-workers  two queues=2 switch ports with queue-workers=0+1 (pair i of each on worker
                 i), the first logging dirty pages, both TX queues of each streaming to the
                 other: the sender's pair first (no MQ command), host coalescing set on the
                 lanes' queues, then VQ_PAIRS_SET 2 on both (the flow hash picks); then p1's
                 frontend is killed mid-traffic and a new one forwards on both pairs.
  3. flood       four ports, two per worker (worker=), and a queues=2 port spread over both
                 (queue-workers=0+1, VQ_PAIRS_SET 2), each sending broadcasts and unicasts to a
                 port of the other worker (the cross-worker rings); then the same while a sixth
                 port's frontends come and go and the port is removed and added again.

All the while a thread reads vnetctl stats and ports (which parks the workers) and /metrics, and
runs the scenario's own vnetctl coalesce commands. Frames are IPv4/UDP (the flow hash reads their
addresses and ports: FLOWS source ports per stream) carrying a stream id, a sequence number and a
CRC32. Each sender keeps at most WINDOW frames in flight per receiver and every RX queue has more
buffers posted than can be in flight to its port, so no frame may be dropped: each receiver must
get, per stream, exactly the frames sent to it, in order per destination address and flow,
intact, and vnetd must count no drop (except where a frontend goes on purpose). Exit 1 when vnetd
reports a data race ("WARNING: ThreadSanitizer" in its log: the report is printed), a frame is
lost, duplicated, reordered or corrupted, a dirty-log bit is missing, or vnetd dies or exits
non-zero. The log is not truncated for the SIGBUS (test_device_state does that): the fault then
hits inside TSan's own __tsan_atomic8_fetch_or, which holds the thread's slot lock, and the
handler's first atomic waits for that lock forever.

Not part of make check. VNETD_BUILD: the TSan build (default build-tsan); options: --scenarios
1,2,3, --frames N per stream and scenario."""

import argparse
import collections
import mmap
import os
import socket
import struct
import sys
import threading
import time
import traceback
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
os.environ.setdefault('VNETD_BUILD', os.path.join(TOP, 'build-tsan'))
# As make tsan sets them. halt_on_error: the first race ends vnetd (exit 66, its report in the
# log); history_size=7: the older access's stack is kept long enough to be printed. No
# suppressions: no report so far came from a library.
os.environ.setdefault('TSAN_OPTIONS', 'halt_on_error=1:history_size=7:second_deadlock_stack=1')

# After the environment above: harness reads VNETD_BUILD when imported.
from tests.kit import vhost_user_client as vu  # noqa: E402
from tests.kit import vu_packed  # noqa: E402
from tests.kit import harness  # noqa: E402
from tests.kit.harness import NoNs, Vnetd, workdir  # noqa: E402

PAGE = 4096
STRIDE = 8 * PAGE           # one RX buffer per 8 pages: its log byte is its own
RX_BUF = 2048
TX_BUF = 2048
RING = 256                  # descriptors per data queue
WINDOW = 24                 # frames a stream may have in flight per receiver
FLOWS = 4                   # UDP source ports per stream (seq % FLOWS)
MEM = 24 << 20              # guest memory per frontend
TSAN_MARK = 'WARNING: ThreadSanitizer'
VIRTIO_NET_F_MQ = 22
CTRL_MQ, MQ_VQ_PAIRS_SET = 4, 0
PATTERN = bytes((i * 7 + 3) & 0xff for i in range(4096))
TS_HDR = struct.Struct('>2sHIH')   # magic, stream, seq, body length; then body, then CRC32
CHURN_ROUNDS = 8                  # scenario 3: p5 connects at least that many times


class Failure(Exception):
    pass


def need(cond, what):
    """A check: Failure(what) unless cond."""
    if not cond:
        raise Failure(what)


def mac_bytes(s):
    return bytes(int(x, 16) for x in s.split(':'))


class TsanVnetd(Vnetd):
    """Vnetd whose failures raise (the run goes on with the next scenario)."""

    def failed(self, why):
        raise Failure(why)

    def tsan_reports(self):
        """The ThreadSanitizer reports in vnetd's log (each from its WARNING line to its end)."""
        try:
            with open(self.log_path, 'rb') as f:
                text = f.read().decode(errors='replace')
        except OSError:
            return []
        out = []
        for part in text.split(TSAN_MARK)[1:]:
            end = part.find('\n==================')
            out.append(TSAN_MARK + (part if end < 0 else part[:end]))
        return out


# =============================================================================================
def used_split(ring, mem):
    """The used elements a split ring published since the last call: [(id, len)]."""
    u = ring.used_idx()
    out = []
    while ring.last_used != u:
        e = ring.used + 4 + 8 * (ring.last_used % ring.num)
        out.append(struct.unpack('<II', mem.read(e, 8)))
        ring.last_used = (ring.last_used + 1) & 0xffff
    return out


def used_packed(ring):
    """The same for a packed ring (vu_packed.PackedRing; no IN_ORDER: one buffer each)."""
    while True:
        u = ring.peek_used()
        if u is None:
            break
        ring._complete(*u)
    out = list(ring.done)
    ring.done.clear()
    return out


class RxQueue:
    """An RX queue whose RING buffers (one per descriptor, each at the start of its own STRIDE)
    are posted once and re-posted as soon as they come back; split or packed."""

    def __init__(self, port, ring):
        self.port, self.ring, self.mem = port, ring, port.fe.mem
        self.packed = isinstance(ring, vu_packed.PackedRing)
        self.bufs = [self.mem.alloc(STRIDE, STRIDE) for _ in range(ring.num)]
        self.posted = [False] * ring.num
        if not self.packed:
            for i, gpa in enumerate(self.bufs):
                ring.set_desc(i, gpa, RX_BUF, vu.VRING_DESC_F_WRITE)
        self.post(range(ring.num))

    def post(self, ids):
        r = self.ring
        for i in ids:
            self.port.log_clear(self.bufs[i])
            self.posted[i] = True
            if self.packed:
                r.put_avail(r.add_chain([(self.bufs[i], RX_BUF, True)], id=i))
                continue
            self.mem.put_u16(r.avail + 4 + 2 * (r.avail_idx % r.num), i)
            r.avail_idx = (r.avail_idx + 1) & 0xffff
        if not self.packed:
            r.set_avail_idx(r.avail_idx)
        r.kick()

    def reap(self):
        """Hand every used buffer to the port, post them again; returns how many."""
        r = self.ring
        done = []
        for uid, ulen in used_packed(r) if self.packed else used_split(r, self.mem):
            need(uid < r.num and self.posted[uid], '%s RX queue %d: used id %d was not posted'
                 % (self.port.name, r.index, uid))
            need(ulen is not None and vu.NET_HDR_LEN < ulen <= RX_BUF,
                 '%s RX queue %d: used length %s' % (self.port.name, r.index, ulen))
            self.posted[uid] = False
            gpa = self.bufs[uid]
            self.port.log_check(gpa, r.index)
            self.port.received(self.mem.read(gpa + vu.NET_HDR_LEN, ulen - vu.NET_HDR_LEN), r.index)
            done.append(uid)
        if done:
            self.post(done)
        return len(done)


class TxQueue:
    """A TX queue: one buffer per descriptor, reused once the device used it; split or packed."""

    def __init__(self, port, ring):
        self.port, self.ring, self.mem = port, ring, port.fe.mem
        self.packed = isinstance(ring, vu_packed.PackedRing)
        self.bufs = [self.mem.alloc(TX_BUF, 64) for _ in range(ring.num)]
        self.free = list(range(ring.num))
        self.inflight = [False] * ring.num
        self.pending = 0

    def put(self, frame):
        """Write one frame into a free buffer and its slot (published by publish())."""
        r = self.ring
        i = self.free.pop()
        self.inflight[i] = True
        self.mem.write(self.bufs[i], bytes(vu.NET_HDR_LEN) + frame)
        if self.packed:
            r.put_avail(r.add_chain([(self.bufs[i], vu.NET_HDR_LEN + len(frame), False)], id=i))
        else:
            r.set_desc(i, self.bufs[i], vu.NET_HDR_LEN + len(frame), 0)
            self.mem.put_u16(r.avail + 4 + 2 * (r.avail_idx % r.num), i)
            r.avail_idx = (r.avail_idx + 1) & 0xffff
        self.pending += 1

    def publish(self):
        if self.pending:
            if not self.packed:
                self.ring.set_avail_idx(self.ring.avail_idx)
            self.ring.kick()
            self.pending = 0

    def reap(self):
        r = self.ring
        n = 0
        for uid, _ in used_packed(r) if self.packed else used_split(r, self.mem):
            need(uid < r.num and self.inflight[uid], '%s TX queue %d: used id %d not in flight'
                 % (self.port.name, r.index, uid))
            self.inflight[uid] = False
            self.free.append(uid)
            n += 1
        return n


class Port:
    """One switch port's frontend: all its queues set up, RX queues stocked."""

    def __init__(self, run, idx, name, sock, mac, pairs=1, log=False, packed=False):
        self.run, self.idx, self.name, self.mac = run, idx, name, mac
        self.macb = mac_bytes(mac)
        self.pairs = pairs
        feat = (vu.DEFAULT_FEATURES | ((1 << VIRTIO_NET_F_MQ) if pairs > 1 else 0) |
                ((1 << vu.VIRTIO_F_RING_PACKED) if packed else 0))
        proto = (1 << vu.PROTOCOL_F_REPLY_ACK) | ((1 << vu.PROTOCOL_F_LOG_SHMFD) if log else 0)
        self.fe = vu.VirtioNetFrontend(sock, features=feat, protocol=proto, queue_size=RING,
                                       mem_size=MEM, timeout=30.0)
        self.fe.ctrl_q = 2 * pairs
        self.log = None           # the mapped log while LOG_ALL is on (or was set)
        self.log_fd = -1
        self.logging = False
        self.log_set = 0          # bits found set / checked
        self.fe.setup(range(2 * pairs + 1))
        self.rx = [RxQueue(self, self.fe.rings[2 * p]) for p in range(pairs)]
        self.tx = [TxQueue(self, self.fe.rings[2 * p + 1]) for p in range(pairs)]
        self.rx_per_queue = collections.Counter()

    # -- dirty log ---------------------------------------------------------------------------
    def log_size(self):
        return ((self.fe.mem.gpa_base + self.fe.mem.size) // PAGE + 7) // 8

    def set_log_base(self):
        """A new log memfd (zeroed), as QEMU's log resize does; the old one goes."""
        size = self.log_size()
        fd = os.memfd_create('vnetd-tsan-log', os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        reply = self.fe.vu.request(vu.SET_LOG_BASE, struct.pack('=QQ', size, 0), [fd])
        need(reply == b'\0' * 8, '%s: SET_LOG_BASE refused (%r)' % (self.name, reply))
        old, old_fd = self.log, self.log_fd
        self.log, self.log_fd = mmap.mmap(fd, size), fd
        if old is not None:
            old.close()
            os.close(old_fd)

    def set_log_all(self, on):
        """SET_FEATURES with or without VHOST_F_LOG_ALL, then SET_VRING_ADDR of every ring
        with or without VHOST_VRING_F_LOG (its used ring's GPA as log_guest_addr): QEMU's
        vhost_dev_set_log()."""
        fe = self.fe
        f = fe.features | (1 << vu.VHOST_USER_F_PROTOCOL_FEATURES)
        vu.ok(fe.vu.set_features(f | ((1 << vu.VHOST_F_LOG_ALL) if on else 0)), 'SET_FEATURES')
        for i, r in sorted(fe.rings.items()):
            vu.ok(fe.vu.set_vring_addr(i, fe.mem.uva(r.desc), fe.mem.uva(r.used),
                                       fe.mem.uva(r.avail), vu.VRING_F_LOG if on else 0,
                                       r.used if on else 0), 'SET_VRING_ADDR')
        self.logging = on

    def _log_byte(self, gpa):
        return gpa // PAGE // 8

    def log_clear(self, gpa):
        """Before a buffer is posted: its page's bit (alone in its byte) cleared."""
        if self.log is not None:
            self.log[self._log_byte(gpa)] = 0

    def log_check(self, gpa, q):
        if self.log is None:
            return
        bit = self.log[self._log_byte(gpa)] & 1
        if self.logging:
            need(bit, '%s RX queue %d: the page of the buffer at 0x%x came back used without '
                 'its dirty-log bit' % (self.name, q, gpa))
            self.log_set += 1
        else:
            need(not bit, '%s RX queue %d: the buffer at 0x%x was logged with LOG_ALL off'
                 % (self.name, q, gpa))

    # -- frames ------------------------------------------------------------------------------
    def received(self, frame, q):
        self.rx_per_queue[q] += 1
        self.run.deliver(self, frame)

    def close(self):
        self.fe.close()
        if self.log is not None:
            self.log.close()
            os.close(self.log_fd)
            self.log = None


class Stream:
    """One TX queue's frames: sequence numbers, and per receiver the ones in flight."""

    def __init__(self, sid, port, pair, plan):
        self.sid, self.port, self.pair, self.plan = sid, port, pair, plan
        self.seq = 0
        self.todo = 0
        # (receiver idx, broadcast, flow) -> seqs in flight: order holds per destination
        # address (IEEE 802.1Q keeps it per source, destination and priority, not between a
        # flood and a unicast, whose paths across workers differ) and per flow (the UDP source
        # port: the flow hash may put each on another queue pair)
        self.inflight = collections.defaultdict(collections.deque)
        self.pending = collections.Counter()                           # receiver idx -> frames
        self.sent = collections.Counter()                              # receiver idx -> frames

    def frame(self, dst_mac, seq):
        blen = (seq * 37 + self.sid * 101) % 1380
        src_ip = bytes([10, 77, self.port.idx, self.sid & 0xff])
        dst_ip = b'\xff\xff\xff\xff' if dst_mac == 'ff:ff:ff:ff:ff:ff' else bytes([10, 77, 0, 1])
        o = seq % 251
        body = TS_HDR.pack(b'TS', self.sid, seq, blen) + PATTERN[o:o + blen]
        sport = 1000 + (self.sid & 0xff) * FLOWS + seq % FLOWS
        udp = struct.pack('>HHHH', sport, 2000, 8 + len(body) + 4, 0)
        ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(udp) + len(body) + 4, seq & 0xffff,
                         0, 64, 17, 0, src_ip, dst_ip)
        f = mac_bytes(dst_mac) + self.port.macb + b'\x08\x00' + ip + udp + body
        return f + struct.pack('>I', zlib.crc32(f))


class Run:
    """One scenario's frontends and streams, driven from one loop."""

    def __init__(self, vd):
        self.vd = vd
        self.ports = []
        self.streams = {}         # stream id -> Stream, the counted ones
        self.next_sid = 0         # stream ids are never reused: a retired one's frames are late
        self.next_idx = 0         # port indexes likewise (a reconnected port is a new one)
        self.frames_rx = 0
        self.late = 0             # frames of retired streams received (checked, not counted)

    def add_port(self, *a, **kw):
        p = Port(self, self.next_idx, *a, **kw)
        self.next_idx += 1
        self.ports.append(p)
        return p

    def add_stream(self, port, pair, plan):
        """plan(seq) -> destination: a port (unicast) or None (broadcast)."""
        s = Stream(self.next_sid, port, pair, plan)
        self.next_sid += 1
        self.streams[s.sid] = s
        return s

    def retired_stream(self, port, pair=0):
        """A stream nobody counts: its frames may be lost, or arrive late anywhere."""
        s = Stream(self.next_sid, port, pair, None)
        self.next_sid += 1
        return s

    def restart(self, gone=None):
        """Retire every stream (what is in flight may be lost now); port `gone` leaves."""
        self.streams = {}
        if gone is not None:
            self.ports.remove(gone)

    def receivers(self, s, dst):
        return [dst] if dst is not None else [p for p in self.ports if p is not s.port]

    def deliver(self, port, frame):
        """A frame port received: check it against what its stream sent to port."""
        need(len(frame) >= 14 + 28 + TS_HDR.size + 4, '%s: a frame of %d bytes' % (port.name,
                                                                                len(frame)))
        dst, src = frame[:6], frame[6:12]
        magic, sid, seq, blen = TS_HDR.unpack_from(frame, 42)
        need(magic == b'TS' and sid < self.next_sid, '%s: a frame of no stream (%s)'
             % (port.name, frame[:64].hex()))
        need(zlib.crc32(frame[:-4]) == struct.unpack('>I', frame[-4:])[0] and
             len(frame) == 42 + TS_HDR.size + blen + 4,
             '%s: stream %d frame %d corrupted (%d bytes)' % (port.name, sid, seq, len(frame)))
        s = self.streams.get(sid)
        if s is None:
            self.late += 1
            return
        need(src == s.port.macb and dst in (port.macb, b'\xff' * 6),
             '%s: stream %d frame %d from %s to %s' % (port.name, sid, seq, src.hex(), dst.hex()))
        q = s.inflight[(port.idx, dst == b'\xff' * 6, seq % FLOWS)]
        need(q and q[0] == seq, '%s: stream %d (%s pair %d) frame %d arrived, %s expected: %s'
             % (port.name, sid, s.port.name, s.pair, seq, q[0] if q else 'none',
                'an earlier one lost or reordered' if seq in q else 'duplicated or misdelivered'))
        q.popleft()
        s.pending[port.idx] -= 1
        self.frames_rx += 1

    # -- the loop ----------------------------------------------------------------------------
    def send_some(self, s, limit=16):
        """Up to limit frames of stream s whose receivers all have room; returns how many."""
        txq = s.port.tx[s.pair]
        n = 0
        while s.todo and n < limit and txq.free:
            dst = s.plan(s.seq)
            rcv = self.receivers(s, dst)
            if any(s.pending[r.idx] >= WINDOW for r in rcv):
                break
            txq.put(s.frame(dst.mac if dst else 'ff:ff:ff:ff:ff:ff', s.seq))
            for r in rcv:
                s.inflight[(r.idx, dst is None, s.seq % FLOWS)].append(s.seq)
                s.pending[r.idx] += 1
                s.sent[r.idx] += 1
            s.seq += 1
            s.todo -= 1
            n += 1
        txq.publish()
        return n

    def step(self):
        moved = 0
        for p in self.ports:
            for q in p.rx:
                moved += q.reap()
            for q in p.tx:
                moved += q.reap()
        for s in self.streams.values():
            moved += self.send_some(s)
        return moved

    def inflight(self):
        return sum(len(d) for s in self.streams.values() for d in s.inflight.values())

    def sent(self):
        return sum(sum(s.sent.values()) for s in self.streams.values())

    def pump(self, frames, what, stall=60.0, hook=None):
        """Each stream sends `frames` more; returns once every frame arrived (Failure when
        nothing moves for `stall` seconds, or vnetd died). hook(): called every round, True
        ends the pump at once (the caller retires the streams)."""
        t0 = time.monotonic()
        for s in self.streams.values():
            s.todo += frames
        last, look = time.monotonic(), 0
        while any(s.todo for s in self.streams.values()) or self.inflight():
            if hook and hook():
                print('ok   %s: cut short after %d deliveries (%.1f s)'
                      % (what, self.sent(), time.monotonic() - t0), flush=True)
                return
            if self.step():
                last = time.monotonic()
            else:
                time.sleep(0.0002)
            look += 1
            if look % 200 == 0 or time.monotonic() - last > 1:
                need(self.vd.alive(), 'vnetd died (%s)' % what)
            if time.monotonic() - last > stall:
                lost = {s.sid: {r: len(d) for r, d in s.inflight.items() if d}
                        for s in self.streams.values()}
                raise Failure('%s: frames lost (nothing moved for %.0f s; in flight per stream '
                              'and (receiver, broadcast): %s; vnetd drops %s)'
                              % (what, stall, {k: v for k, v in lost.items() if v},
                                 vnetd_drops(self.vd)))
        print('ok   %s: %d frames per stream, %d deliveries so far, each in order and intact '
              '(%.1f s)' % (what, frames, self.sent(), time.monotonic() - t0), flush=True)

    def close(self):
        for p in self.ports:
            p.close()


def vnetd_drops(vd):
    """Frames the switch and the devices dropped, all ports (test_queue_workers.py's count)."""
    sw = sum(p.get('switch_frames', {}).get('dropped', 0) for p in vd.port_info().values())
    return sw + sum(q['dropped'] for qs in vd.stats().values() for q in qs.values())


class CtlReader(threading.Thread):
    """vnetctl stats and ports, the Prometheus metrics, and the scenario's own vnetctl
    commands (one a round, in turn), over and over while a scenario runs."""

    def __init__(self, vd, cmds=()):
        super().__init__(daemon=True)
        self.vd, self.cmds, self.stop, self.reads = vd, list(cmds), threading.Event(), 0
        self.cmds_ok = 0

    def run(self):
        while not self.stop.wait(0.05):
            try:
                self.vd.ctl('stats', '--json', check=False)
                self.vd.ctl('ports', check=False)
                urllib.request.urlopen('http://%s/metrics' % self.vd.metrics, timeout=60).read()
                if self.cmds:
                    r = self.vd.ctl(*self.cmds[self.reads % len(self.cmds)], check=False)
                    self.cmds_ok += r.returncode == 0
                self.reads += 1
            except Exception:  # noqa: BLE001 (vnetd gone: the scenario finds out)
                pass


class Churn(threading.Thread):
    """A port that comes and goes while the others flood: a frontend connects, posts a few RX
    buffers (never reaped: the port's queue fills), goes; every other round the port is
    removed and added again (port-del, port-add: its slot and serial change under frames the
    cross-worker rings still hold for it). Its frames are nobody's to count."""

    def __init__(self, vd, name, spec, sock):
        super().__init__(daemon=True)
        self.vd, self.name, self.spec, self.sock = vd, name, spec, sock
        self.stop, self.rounds, self.error = threading.Event(), 0, None

    def run(self):
        try:
            while not self.stop.is_set():
                f = vu.VirtioNetFrontend(self.sock, queue_size=64, mem_size=1 << 20, timeout=30)
                try:
                    f.setup()
                    f.post_rx(32)
                    self.stop.wait(0.2)
                finally:
                    f.close()
                self.rounds += 1
                # A VMM reconnects once the old connection is gone: until vnetd's worker has
                # read the hang-up, it refuses a second frontend.
                for _ in range(600):
                    if not self.vd.port_info()[self.name]['connected']:
                        break
                    time.sleep(0.05)
                if self.rounds % 2 == 0:
                    self.vd.ctl('port-del', self.name)
                    self.name = self.vd.ctl('port-add', self.spec).stdout.strip()
        except Exception as e:  # noqa: BLE001 (reported by the scenario)
            self.error = '%s: %s' % (type(e).__name__, e)


def no_drops(vd, what):
    drops = vnetd_drops(vd)
    need(drops == 0, '%s: vnetd counted %d dropped frames' % (what, drops))
    print('ok   %s: vnetd counted no dropped frame' % what, flush=True)


def pairs_set(port, n):
    ack = port.fe.ctrl(CTRL_MQ, MQ_VQ_PAIRS_SET, struct.pack('<H', n), timeout=10)
    need(ack == vu.VIRTIO_NET_OK, '%s: VQ_PAIRS_SET %d answered %r' % (port.name, n, ack))


# =============================================================================================
def scenario_dirty_log(vd, wd, frames):
    """Two split and two packed ports, one of each on each worker, all logging dirty pages;
    frames both ways between the two of a layout, and broadcasts to all."""
    run = Run(vd)
    a = run.add_port('p0', vd.socks[0], vd.macs[0], log=True)
    b = run.add_port('p1', vd.socks[1], vd.macs[1], log=True)
    c = run.add_port('p2', vd.socks[2], vd.macs[2], log=True, packed=True)
    d = run.add_port('p3', vd.socks[3], vd.macs[3], log=True, packed=True)
    ports = (a, b, c, d)
    info = vd.port_info()
    need([(info[p.name]['worker'], info[p.name]['ring']) for p in ports] ==
         [(0, 'split'), (1, 'split'), (0, 'packed'), (1, 'packed')],
         'p0, p1 split on workers 0, 1; p2, p3 packed on workers 0, 1 (%s)'
         % [(info[p.name]['worker'], info[p.name]['ring']) for p in ports])
    for x, y in ((a, b), (b, a), (c, d), (d, c)):
        run.add_stream(x, 0, lambda seq, y=y: y if seq % 8 else None)
    run.pump(1, 'a broadcast from each stream: the switch learns every MAC')
    for p in ports:
        p.set_log_base()
        p.set_log_all(True)
    need(all(i['dirty_log'] for i in vd.port_info().values()), 'vnetctl ports: dirty_log on all')
    run.pump(frames // 3, 'every port logging, frames both ways')
    for p in ports:
        p.set_log_base()           # a log resize: a new memfd under running queues
    run.pump(frames // 3, 'after a new SET_LOG_BASE on every port')
    for p in (a, c):
        p.set_log_all(False)       # the migration cancelled on one side
    run.pump(frames // 6, 'p0, p2 (worker 0) not logging, p1, p3 logging')
    for p in (a, c):
        p.set_log_all(True)
    run.pump(frames - frames // 3 * 2 - frames // 6, 'every port logging again')
    need(all(p.log_set for p in ports), 'dirty-log bits checked: %s' % [p.log_set for p in ports])
    print('ok   every RX buffer came back with its page logged (%s buffers)'
          % ', '.join('%s %d' % (p.name, p.log_set) for p in ports), flush=True)
    no_drops(vd, 'every port logging')
    # p1's frontend shrinks its guest memory under vnetd, its rings kept, its RX buffers cut
    # off: the copy into one faults (SIGBUS) on worker 1, which drops that frontend; the others
    # go on, and p1 takes a new one. (Not its log: see the top of this file.)
    run.restart(gone=b)
    os.ftruncate(b.fe.mem.fd, b.rx[0].bufs[0] - b.fe.mem.gpa_base)   # b.fe.mem not touched again
    stale = run.retired_stream(a)
    for seq in range(8):
        a.tx[0].put(stale.frame(b.mac, seq))
    a.tx[0].publish()
    need(b.fe.vu.wait_closed(30), 'vnetd dropped p1\'s frontend, whose memory faulted on '
         'worker 1')
    b.close()
    need(vd.alive() and not vd.port_info()['p1']['connected'], 'vnetd running, p1 disconnected')
    b = run.add_port('p1', vd.socks[1], vd.macs[1])
    for x, y in ((a, b), (b, a), (c, d), (d, c)):
        run.add_stream(x, 0, lambda seq, y=y: y if seq % 8 else None)
    run.pump(1, 'p1 reconnected: a broadcast from each stream')
    run.pump(frames // 6, 'p1 reconnected, the others still logging')
    return run


def scenario_queue_workers(vd, wd, frames):
    """Two spread ports (queue-workers=0+1), both TX queues of each streaming to the other."""
    run = Run(vd)
    a = run.add_port('p0', vd.socks[0], vd.macs[0], pairs=2, log=True)
    b = run.add_port('p1', vd.socks[1], vd.macs[1], pairs=2)
    info = vd.port_info()
    need(all(info[n].get('queue_workers') == [0, 1] for n in ('p0', 'p1')),
         'p0, p1: pairs on workers 0, 1 (%s, %s)' % (info['p0'].get('queue_workers'),
                                                     info['p1'].get('queue_workers')))
    for pair in (0, 1):
        run.add_stream(a, pair, lambda seq: b if seq % 8 else None)
        run.add_stream(b, pair, lambda seq: a if seq % 8 else None)
    run.pump(1, 'a broadcast from each stream: the switch learns both MACs')
    a.set_log_base()
    a.set_log_all(True)
    run.pump(frames // 3, "each frame to the sender's pair, p0 logging")
    vd.ctl('coalesce', 'p0', '--queue', '2', 'adaptive', 'on')
    vd.ctl('coalesce', 'p1', '--queue', '3', 'tx-usecs', '20', 'tx-frames', '8')
    run.pump(frames // 3, 'with coalescing set on the lanes\' queues')
    for p in (a, b):
        pairs_set(p, 2)
    need(all(i['active_pairs'] == 2 for i in vd.port_info().values()), 'VQ_PAIRS_SET 2 on both')
    run.pump(frames // 3, 'both pairs active: the flow hash picks')
    for p in (a, b):
        need(all(p.rx_per_queue[q] > 0 for q in (0, 2)), '%s: both RX queues received (%s)'
             % (p.name, dict(p.rx_per_queue)))
    print('ok   RX per queue: p0 %s, p1 %s; %d buffers checked in p0\'s log'
          % (dict(a.rx_per_queue), dict(b.rx_per_queue), a.log_set), flush=True)
    no_drops(vd, 'queue pairs on two workers')
    # p1's frontend killed mid-traffic (its socket closed, no goodbye) while both its pairs
    # run: the home tears the connection down, the lane parked; p0 goes on, and a new
    # frontend on p1 forwards on both pairs again.
    cut = run.sent() + frames // 6

    def kill():
        if run.sent() < cut:
            return False
        b.fe.close()
        return True
    run.pump(frames // 3, 'p1\'s frontend killed mid-traffic', hook=kill)
    run.restart(gone=b)
    b.close()
    for _ in range(200):
        if not vd.port_info()['p1']['connected']:
            break
        time.sleep(0.05)
    need(vd.alive() and not vd.port_info()['p1']['connected'], 'vnetd running, p1 disconnected')
    b = run.add_port('p1', vd.socks[1], vd.macs[1], pairs=2)
    pairs_set(b, 2)
    for pair in (0, 1):
        run.add_stream(a, pair, lambda seq: b if seq % 8 else None)
        run.add_stream(b, pair, lambda seq: a if seq % 8 else None)
    run.pump(1, 'p1 reconnected: a broadcast from each stream')
    run.pump(frames // 6, 'p1 reconnected, both pairs of both ports')
    need(all(b.rx_per_queue[q] > 0 for q in (0, 2)), 'the new p1: both RX queues received (%s)'
         % dict(b.rx_per_queue))
    return run


def scenario_flood(vd, wd, frames):
    """Ports on both workers and one spread over both; broadcasts and cross-worker unicasts."""
    run = Run(vd)
    ps = [run.add_port('p%d' % i, vd.socks[i], vd.macs[i]) for i in range(4)]
    spread = run.add_port('p4', vd.socks[4], vd.macs[4], pairs=2)
    info = vd.port_info()
    need([info['p%d' % i]['worker'] for i in range(4)] == [0, 0, 1, 1] and
         info['p4'].get('queue_workers') == [0, 1],
         'p0, p1 on worker 0, p2, p3 on worker 1, p4 on both (%s)'
         % {n: (i['worker'], i.get('queue_workers')) for n, i in sorted(info.items())})
    pairs_set(spread, 2)
    # Every plain port: half broadcasts, the rest unicast to a port of the other worker.
    for i, p in enumerate(ps):
        other = ps[(i + 2) % 4]
        run.add_stream(p, 0, lambda seq, o=other: None if seq % 2 == 0 else o)
    for pair in (0, 1):
        run.add_stream(spread, pair, lambda seq, pair=pair: None if seq % 2 == 0 else ps[2 * pair])
    # p5 stays away for now: the floods it gets wait in its switch queue (not counted).
    run.pump(1, 'a broadcast from each stream: the switch learns every MAC')
    run.pump(frames // 2, 'broadcasts and cross-worker unicasts from 5 ports')
    need(all(spread.rx_per_queue[q] > 0 for q in (0, 2)), 'p4: both RX queues received (%s)'
         % dict(spread.rx_per_queue))
    crossed = sum(i.get('switch_frames', {}).get('crossed', 0) for i in vd.port_info().values())
    print('ok   p4 RX per queue %s; frames crossed between workers (switch counter): %d'
          % (dict(spread.rx_per_queue), crossed), flush=True)
    churn = Churn(vd, 'p5', SCENARIOS[3][2](vd.socks, vd.macs)[5], vd.socks[5])
    churn.start()
    try:
        run.pump(frames - frames // 2 - 1, 'the same while p5 comes and goes, removed and added')
        while churn.rounds < CHURN_ROUNDS and churn.error is None and churn.is_alive():
            run.pump(500, 'more while p5 has come and gone %d times' % churn.rounds)
    finally:
        churn.stop.set()
        churn.join()
    need(churn.error is None, 'p5\'s frontends: %s' % churn.error)
    need(churn.rounds >= 2, 'p5 connected %d times' % churn.rounds)
    print('ok   p5 connected %d times meanwhile, removed and added %d times'
          % (churn.rounds, churn.rounds // 2), flush=True)
    return run


# Each: name, function, port specs (sockets, MACs), vnetctl commands run in turn meanwhile.
SCENARIOS = {
    1: ('dirty-log', scenario_dirty_log,
        lambda s, m: ['socket=%s,switch,mac=%s,worker=%d' % (s[i], m[i], i) for i in (0, 1)] +
        ['socket=%s,switch,mac=%s,worker=%d,packed=on,in-order=off' % (s[i], m[i], i - 2)
         for i in (2, 3)], []),
    2: ('queue-workers', scenario_queue_workers,
        lambda s, m: ['socket=%s,switch,mac=%s,queues=2,queue-workers=0+1' % (s[i], m[i])
                      for i in (0, 1)],
        [['coalesce', 'p0', '--queue', '2', 'adaptive', 'off'],
         ['coalesce', 'p1', '--queue', '3', 'tx-usecs', '50', 'tx-frames', '16'],
         ['coalesce', 'p0', '--queue', '2', 'adaptive', 'on'],
         ['coalesce', 'p1', '--queue', '3', 'tx-usecs', '20', 'tx-frames', '8']]),
    3: ('flood', scenario_flood,
        lambda s, m: ['socket=%s,switch,mac=%s,worker=%d' % (s[i], m[i], i // 2)
                      for i in range(4)] +
        ['socket=%s,switch,mac=%s,queues=2,queue-workers=0+1' % (s[4], m[4]),
         'socket=%s,switch,mac=%s,worker=1' % (s[5], m[5])],
        [['coalesce', 'p4', '--queue', '2', 'rx-usecs', '50', 'rx-frames', '16'],
         ['coalesce', 'p2', '--queue', '0', 'adaptive', 'on'],
         ['coalesce', 'p4', '--queue', '2', 'rx-usecs', '0', 'rx-frames', '0'],
         ['coalesce', 'p2', '--queue', '0', 'adaptive', 'off']]),
}


def run_scenario(num, frames):
    """One scenario against a fresh vnetd: a list of failures (empty: clean)."""
    name, fn, specs, cmds = SCENARIOS[num]
    wd = workdir('tsan-' + name)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(6)]
    macs = ['52:54:00:7a:00:%02x' % (i + 1) for i in range(6)]
    with socket.socket() as s:     # a free TCP port for --metrics
        s.bind(('127.0.0.1', 0))
        metrics = '127.0.0.1:%d' % s.getsockname()[1]
    vd = TsanVnetd(NoNs(), specs(socks, macs), wd, start_timeout=60.0,
                   extra=['--workers', '2', '--no-sandbox', '--metrics', metrics])
    vd.ctl_timeout = 60
    vd.socks, vd.macs, vd.metrics = socks, macs, metrics
    print('---- scenario %d: %s (log %s)' % (num, name, vd.log_path), flush=True)
    t0 = time.monotonic()
    problems = []
    run = None
    try:
        vd.start()
        reader = CtlReader(vd, cmds)
        reader.start()
        try:
            run = fn(vd, wd, frames)
        finally:
            reader.stop.set()
            reader.join()
        print('ok   vnetctl stats, ports, /metrics: %d rounds meanwhile%s' % (
            reader.reads, ', and %d of the scenario\'s vnetctl commands succeeded'
            % reader.cmds_ok if reader.cmds else ''), flush=True)
        run.close()          # every frontend goes: the teardown with the workers running
        run = None
        time.sleep(0.5)
        need(vd.alive(), 'vnetd still running after the frontends left')
    except (Failure, vu.VhostUserError, OSError) as e:
        problems.append('%s: %s' % (type(e).__name__, e))
    except Exception:  # noqa: BLE001 (a bug here: said, and the next scenario runs)
        problems.append(traceback.format_exc())
    finally:
        if run is not None:
            try:
                run.close()
            except Exception:
                pass
        rc = vd.stop(timeout=60) if vd.proc else None
    reports = vd.tsan_reports()
    if rc not in (0, None) and not reports:
        problems.append('vnetd exited with status %s; log:\n%s' % (rc, vd.log_tail()))
    for r in reports:
        problems.append('vnetd reported a data race:\n' + r)
    print('%s scenario %d (%s): %.1f s' % ('ok  ' if not problems else 'FAIL', num, name,
                                           time.monotonic() - t0), flush=True)
    for p in problems:
        print('FAIL ' + p, flush=True)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scenarios', default='1,2,3', help='comma-separated, of 1 2 3')
    ap.add_argument('--frames', type=int, default=20000, help='frames per stream and scenario')
    args = ap.parse_args()
    for exe in (harness.VNETD, harness.VNETCTL):
        if not os.access(exe, os.X_OK):
            harness.fail('%s not built (make tsan builds it)' % exe)
    print('vnetd %s, TSAN_OPTIONS=%s' % (harness.VNETD, os.environ['TSAN_OPTIONS']), flush=True)
    t0 = time.monotonic()
    nums = [int(x) for x in args.scenarios.split(',')]
    failed = [num for num in nums if run_scenario(num, args.frames)]
    print('%s: %d scenario(s), %.0f s%s' % ('FAIL' if failed else 'PASS', len(nums),
                                          time.monotonic() - t0,
                                          ', failed: %s' % failed if failed else ''), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
