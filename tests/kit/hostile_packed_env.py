# SPDX-License-Identifier: MIT
"""Machinery of the packed hostile test: vnetd with three packed switch ports (p0 for the bad
driver, p1 and p2 good), packed frontends, byte-exact traffic checks (test_hostile_packed.py)."""

import os
import re
import time

from . import hostile_env
from . import vhost_user_client as vu
from .hostile_env import expect_alive_conn, expect_broken
from .vhost_user_client import (RX_Q, TX_Q, NET_HDR_LEN, VirtioNetFrontend, VhostUserError,
                                ether_frame)

MACS = ['52:54:00:34:00:01', '52:54:00:34:00:02', '52:54:00:34:00:03']
BCAST = 'ff:ff:ff:ff:ff:ff'
PACKED = vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_F_RING_PACKED)
PACKED_INDIRECT = PACKED | (1 << vu.VIRTIO_RING_F_INDIRECT_DESC)
PACKED_EVENT_IDX = PACKED | (1 << vu.VIRTIO_RING_F_EVENT_IDX)
PACKED_IN_ORDER = PACKED | (1 << vu.VIRTIO_F_IN_ORDER)
PACKED_MRG = PACKED | (1 << vu.VIRTIO_NET_F_MRG_RXBUF)


class PackedEnv(hostile_env.Env):
    """hostile_env.Env with three packed switch ports (packed=on,in-order=on: a driver takes
    what it wants); p1 and p2 are the good ports whose traffic proves the daemon unharmed."""

    def __init__(self, wd):
        super().__init__(wd)
        self.socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(3)]

    def port_specs(self):
        return ['socket=%s,switch,mac=%s,packed=on,in-order=on' % (s, m)
                for s, m in zip(self.socks, MACS)]

    def frontend(self, port=0, features=PACKED, **kw):
        return super().frontend(port, features=features, **kw)

    def wait_disconnected_all(self):
        for p in ('p0', 'p1', 'p2'):
            self.wait_disconnected(p)


# ---- traffic helpers (any frontend, either layout) ----
class RxBuffers:
    """RX buffers posted on a frontend's queue 0: id -> gpa, to read what vnetd wrote."""

    def __init__(self, f, count=16, size=2048):
        self.f, self.size, self.gpa = f, size, {}
        ring = f.rings[RX_Q]
        for _ in range(count):
            b = f.mem.alloc(size)
            f.mem.write(b, b'\xa5' * size)
            rid = ring.add_chain([(b, size, True)])
            self.gpa[rid] = b
            ring.put_avail(rid)
        ring.kick()

    def frame(self, timeout=2.0):
        """The next received frame (without its virtio-net header), or None."""
        ring = self.f.rings[RX_Q]
        u = ring.get_used(timeout)
        if u is None:
            return None
        rid, ln = u
        data = self.f.mem.read(self.gpa[rid], ln)
        # Re-post the same buffer with the same id: the ring stays full.
        rid2 = ring.add_chain([(self.gpa[rid], self.size, True)], id=rid)
        ring.put_avail(rid2)
        ring.kick()
        return data[NET_HDR_LEN:]

    def frames(self, n, timeout=2.0):
        out = []
        for _ in range(n):
            fr = self.frame(timeout)
            if fr is None:
                break
            out.append(fr)
        return out


def payload(tag, i, size=200):
    """A recognisable payload: tag, index, then a pattern that moves with i."""
    head = ('%s %d ' % (tag, i)).encode()
    return head + bytes((i * 7 + k) & 0xff for k in range(max(0, size - len(head))))


def tx_frames(f, frames, timeout=2.0):
    """Transmit frames one list each (all made available, one kick); True once all are used."""
    ring = f.rings[TX_Q]
    ids = []
    for fr in frames:
        b = f.mem.alloc(NET_HDR_LEN + len(fr))
        f.mem.write(b, bytes(NET_HDR_LEN) + fr)
        ids.append(ring.add_chain([(b, NET_HDR_LEN + len(fr), False)]))
    for i in ids:
        ring.put_avail(i)
    ring.kick()
    return all(ring.get_used(timeout) is not None for _ in ids)


def good_traffic(env, res, what, n=4):
    """(4): two new good packed frontends on p1 and p2 exchange n frames each way, byte-exact,
    and p1 gets OK for a control TX_SET; then both hang up."""
    t0 = time.monotonic()
    try:
        with VirtioNetFrontend(env.socks[1], features=PACKED) as a, \
                VirtioNetFrontend(env.socks[2], features=PACKED) as b:
            a.setup()
            b.setup()
            ack = a.coal_tx_set(4, 20)
            ra, rb = RxBuffers(a), RxBuffers(b)
            ab = [ether_frame(MACS[2], MACS[1], payload('p1->p2', i)) for i in range(n)]
            ba = [ether_frame(MACS[1], MACS[2], payload('p2->p1', i)) for i in range(n)]
            sent = tx_frames(a, ab) and tx_frames(b, ba)
            got_b, got_a = rb.frames(n), ra.frames(n)
            rings = {p['name']: p['ring'] for p in env._ctl({'cmd': 'ports'})['ports']}
    except (VhostUserError, OSError) as e:
        res.check(False, '%s: good packed frontends on p1, p2 work (%s)' % (what, e))
        return
    res.check(ack == vu.VIRTIO_NET_OK and sent and got_b == ab and got_a == ba
              and rings.get('p1') == rings.get('p2') == 'packed',
              '%s: p1 <-> p2 on packed rings: TX_SET ack %r, %d+%d of %d+%d frames byte-exact '
              '(%.0f ms)' % (what, ack, sum(x == y for x, y in zip(got_b, ab)),
                             sum(x == y for x, y in zip(got_a, ba)), n, n,
                             (time.monotonic() - t0) * 1000))
    env.wait_disconnected('p1')
    env.wait_disconnected('p2')


def good_p0(env, res):
    """(5): a new good packed frontend on p0 works (control command acked, a frame used). It
    posts RX buffers too: frames the switch queued for p0 while the bad driver had no usable
    RX buffer (the port's queue outlives a connection) land here, not in the next case."""
    if not res.check(env.wait_disconnected('p0'), 'p0: previous frontend gone'):
        return
    try:
        with VirtioNetFrontend(env.socks[0], features=PACKED) as f:
            f.setup()
            ack = f.coal_tx_set(8, 50)
            sent = f.transmit(ether_frame(BCAST, MACS[0]))
            rx = RxBuffers(f, count=32)
            f.vu.get_queue_num()  # served after the kick: the queued frames are delivered
            stale = len(rx.frames(32, timeout=0.05))
        res.check(ack == vu.VIRTIO_NET_OK and sent,
                  'p0: new good packed frontend: TX_SET ack %r, frame used %r' % (ack, sent))
        if stale:
            res.note('p0: %d frame(s) queued by the switch for p0 before this connection' % stale)
    except (VhostUserError, OSError) as e:
        res.check(False, 'p0: new good packed frontend works (%s)' % e)
    env.wait_disconnected('p0')


# ---- the case registry (test_hostile_packed.py, hostile_packed_rings.py) ----
# Each case is (name, function(env, res), log regex or None, why no log line is expected).
CASES = []


def case(name, log=None, nolog=None):
    def reg(fn):
        CASES.append((name, fn, log, nolog))
        return fn
    return reg


def broken_log(q, err):
    return r'queue %d: %s; queue stopped' % (q, re.escape(err))


def chain_case(name, q, build, err, features=PACKED, size=64):
    """A case whose build(f, ring, rx) writes a bad list into p0's queue q: the queue
    breaks with `err`, the connection stays."""
    def fn(env, res):
        f = env.frontend(features=features, queue_size=size).setup()
        ring = f.rings[q]
        build(f, ring, q == RX_Q)
        ring.kick()
        if q == RX_Q:
            send_from_p1(env)  # the walker meets RX lists only when a frame arrives
        expect_broken(env, res, q, name)
        expect_alive_conn(res, f.vu, name)
    CASES.append((name, fn, broken_log(q, err), None))


def buf(f, n=256):
    return f.mem.alloc(n)




# ---- small tools of the cases ----
def frame_to(dst, i=0, tag='p0'):
    return ether_frame(MACS[dst], MACS[0], payload(tag, i))


def tx_buf(f, fr):
    """(gpa, len, False): the frame behind a zero virtio-net header, for add_chain()."""
    b = f.mem.alloc(NET_HDR_LEN + len(fr))
    f.mem.write(b, bytes(NET_HDR_LEN) + fr)
    return b, NET_HDR_LEN + len(fr), False


def fence(f):
    """A vhost-user round trip on p0's connection: served by the worker that owns p0's queues,
    so everything that worker was doing (a kick, a notification decision) is over."""
    return f.vu.get_queue_num()


def wait_kicks(env, q, before, timeout=2.0):
    """Until vnetd counted a kick on p0's queue q beyond `before` (it walked the ring)."""
    deadline = time.monotonic() + timeout
    while env.stats('p0')[q]['kicks'] <= before and time.monotonic() < deadline:
        time.sleep(0.01)


def kick_and_settle(env, f, q):
    before = env.stats('p0')[q]['kicks']
    f.rings[q].kick()
    wait_kicks(env, q, before)
    fence(f)


def send_from_p1(env, n=1, dst=0, tag='p1', size=200):
    """A good packed p1 frontend sends n frames (payloads of `size` bytes) to port dst; returns
    them."""
    frames = [ether_frame(MACS[dst], MACS[1], payload(tag, i, size)) for i in range(n)]
    with VirtioNetFrontend(env.socks[1], features=PACKED) as g:
        g.setup()
        tx_frames(g, frames)
    env.wait_disconnected('p1')
    return frames


def expect_not_broken(env, res, q, what):
    st = env.stats('p0')[q]
    res.check(not st['broken'] and st['started'], 'p0 queue %d (%s) not broken after %s'
              % (q, st['kind'], what))


def nothing_consumed(env, res, f, q, what, packets_before, slot, desc):
    """The descriptor at `slot` is as the driver wrote it (vnetd wrote no used descriptor
    there) and the queue counted no packet."""
    now = f.rings[q].get_desc(slot)
    res.check(now == desc and env.stats('p0')[q]['packets'] == packets_before,
              '%s: nothing consumed (descriptor %d unchanged, queue %d packets still %d)'
              % (what, slot, q, packets_before))



# ---- driver event suppression, phase by phase ----
COAL_USECS = 30000   # p0's TX coalescing while flags flip: notifications held, then timers fire


def tx_producer(f):
    """produce(n, label, flip) for suppression_phases(): n frames on p0's TX queue, all made
    available and kicked; flip() runs right after the kick (while vnetd walks them)."""
    ring = f.rings[TX_Q]

    def produce(n, label, flip=None):
        ids = [ring.add_chain([tx_buf(f, frame_to(2, i, label))]) for i in range(n)]
        for i in ids:
            ring.put_avail(i)
        ring.kick()
        if flip:
            flip()
        return all(ring.get_used() is not None for _ in ids)
    return produce


def rx_producer(env, f):
    """produce(n, label) for suppression_phases(): p1 sends n frames to p0, received byte-exact."""
    rx = RxBuffers(f, count=32)

    def produce(n, label, flip=None):
        sent = send_from_p1(env, n, 0, label)
        return rx.frames(n) == sent
    return produce


def suppression_phases(env, res, f, q, produce, phases):
    """phases: (label, flags, off_wrap or None, frames, expect 'none'|'some'|'held'|'flip').

    Each phase writes p0 queue q's driver event area, fences (p0's worker finished any decision
    made on the old value) and drains the call fd; then produce()s its completions. 'none':
    after they are all used and twice the coalescing time has passed (held timers fired), the
    call fd must not have been written. 'some': a notification arrives. 'held': move on at
    once, leaving the coalescing timer armed (its decision falls in the next phase). 'flip':
    the flags are written only after the kick, while vnetd walks the frames; then fence, drain,
    and from there on no call-fd write (flags must be DISABLE)."""
    ring = f.rings[q]
    for label, flags, off_wrap, n, expect in phases:
        event = (flags, ring.next_off_wrap(off_wrap) if off_wrap is not None else 0)
        flip = None
        if expect == 'flip':
            def flip():
                ring.set_driver_event(*event)
                fence(f)
                ring.call_count()  # decided before the flip was seen: allowed
        else:
            ring.set_driver_event(*event)
            fence(f)
            ring.call_count()
        before = env.stats('p0')[q]
        done = produce(n, label, flip) if n else True
        if expect == 'held':
            res.check(done, '%s: %d completions, notification left held' % (label, n))
            continue
        if expect in ('none', 'flip'):
            time.sleep(2 * COAL_USECS / 1e6)
            fence(f)
            calls = ring.call_count()
            after = env.stats('p0')[q]
            res.check(done and calls == 0,
                      '%s: %d completions, call-fd writes while suppressed: %d (vnetd: %d '
                      'notifications, %d suppressed decisions)'
                      % (label, n, calls, after['notifications'] - before['notifications'],
                         after['suppressed'] - before['suppressed']))
        else:
            deadline, calls = time.monotonic() + 2.0, 0
            while calls == 0 and time.monotonic() < deadline:
                calls = ring.call_count()
                time.sleep(0.002)
            res.check(done and calls > 0, '%s: %d completions, notified (%d call-fd writes)'
                      % (label, n, calls))


def packed_after_case(env, res):
    """Steps (4)-(5) after a packed case (hostile_env.run_case()): good traffic between p1 and
    p2 (bounded waits, no timing asserted), a new good p0, every frontend gone."""
    good_traffic(env, res, '(4)')
    good_p0(env, res)
    env.wait_disconnected_all()
