# SPDX-License-Identifier: MIT
"""Machinery of the packed hostile test: vnetd with three packed switch ports (p0 for the bad
driver, p1 and p2 good), packed frontends, byte-exact traffic checks (test_hostile_packed.py)."""

import os
import time
import traceback

import hostile_env
import vhost_user_client as vu
from hostile_env import Result, expect_alive_port
from vhost_user_client import (RX_Q, TX_Q, NET_HDR_LEN, VirtioNetFrontend, VhostUserError,
                               ether_frame)

MACS = ['52:54:00:34:00:01', '52:54:00:34:00:02', '52:54:00:34:00:03']
BCAST = 'ff:ff:ff:ff:ff:ff'
PACKED = vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_F_RING_PACKED)
PACKED_INDIRECT = PACKED | (1 << vu.VIRTIO_RING_F_INDIRECT_DESC)
PACKED_EVENT_IDX = PACKED | (1 << vu.VIRTIO_RING_F_EVENT_IDX)
PACKED_IN_ORDER = PACKED | (1 << vu.VIRTIO_F_IN_ORDER)


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


def run_case(env, name, fn, log, nolog):
    """One case, then the checks every case gets: (1) vnetd alive, (2) its log line, (4) good
    traffic between p1 and p2, p1 answering at once, (5) a new good p0, (6) fds and mappings."""
    print('--- %s' % name, flush=True)
    res = Result(name)
    mark = env.log_size()
    try:
        fn(env, res)
    except Exception as e:  # a case that cannot even run is a failure, not a crash of the test
        res.check(False, 'case raised %s: %s' % (type(e).__name__, e))
        traceback.print_exc()
    finally:
        env.close_hostile()
    alive = res.check(env.vd.alive(), '(1) vnetd still running')
    if log:
        m = env.wait_log(mark, log)
        res.check(bool(m), '(2) logged: %s' % (m.group(0).strip() if m else '/%s/ (no such line)' % log))
    else:
        res.note('(2) no log line expected: %s' % nolog)
    if not alive:
        res.note('vnetd died (rc %r); log tail:\n%s' % (env.vd.proc.poll(), env.log_since(mark)[-1500:]))
        env.stop()
        env.start()
        return res
    expect_alive_port(env, res, name)
    good_traffic(env, res, '(4)')
    good_p0(env, res)
    env.wait_disconnected_all()
    fds = env.settled_fd_count(env.idle_fds)
    maps = env.memfd_maps()
    res.check(fds == env.idle_fds and not maps,
              '(6) fds back to idle (%d, idle %d), no memfd mapped (%d)' % (fds, env.idle_fds, len(maps)))
    if fds != env.idle_fds:
        env.idle_fds = fds  # report each leak once, at the case that caused it
    return res
