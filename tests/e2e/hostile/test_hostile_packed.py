# SPDX-License-Identifier: MIT
"""Hostile packed-ring drivers (issue 22) against one vnetd with three packed switch ports.

Each case drives port p0 with a packed virtqueue driver in Python (vu_packed.PackedRing) that
does one bad (or legal but unusual) thing. After every case (hostile_env.run_case() with packed_after_case):
  (1) vnetd is still running,
  (2) it logged one clear line (rate-limited log_guest) or the case says why none is expected,
  (3) the case's own verdict: the bad queue is broken ("broken" in stats: NEEDS_RESET, queue
      stopped) and the connection kept; or, for what is not an error, the exact behaviour
      (nothing consumed; traffic byte-exact; no notification while the driver suppresses),
  (4) the good ports p1 and p2 (new packed frontends) exchange frames byte-exact and p1 gets OK
      for a control command,
  (5) a new good packed frontend on p0 works,
  (6) vnetd's fd count is back to idle and no guest memfd is mapped.
Cases: wrap-counter lies, descriptors without the AVAIL bit, buffer ids out of range or reused
while in flight, indirect tables (a good one byte-exact both ways; bad length, nested, outside
memory, with NEXT, in a NEXT list, not negotiated), ring sizes that are not powers of two (200,
3: traffic byte-exact over several laps), mergeable RX buffers (too few, given back and taken
again; one taken back by the driver meanwhile), SET_VRING_BASE in the packed encoding (a ring
resumed mid-lap; slots beyond the ring), a list that never ends, driver event suppression
flipped between ENABLE/DISABLE/DESC while frames flow (call-fd writes counted), and IN_ORDER
drivers that scramble or reuse ids (and a split IN_ORDER driver that skips a descriptor).
Ring-size, RX-buffer and ring-state cases live in hostile_packed_rings.py, the machinery in
hostile_packed_env.py. Needs no root and no guest: switch ports create no interface. About 12 s.
"""

import sys

from tests.kit.harness import workdir
from tests.kit.hostile_env import expect_alive_conn, expect_broken, prerequisites, run_suite
from tests.kit.hostile_packed_env import (COAL_USECS, PACKED, PACKED_EVENT_IDX, PACKED_INDIRECT,
                                          PACKED_IN_ORDER, CASES, PackedEnv, RxBuffers, broken_log,
                                          buf, case, chain_case, expect_not_broken, fence, frame_to,
                                          kick_and_settle, nothing_consumed, packed_after_case,
                                          rx_producer, send_from_p1, suppression_phases, tx_buf,
                                          tx_producer)
from tests.kit import vhost_user_client as vu
from tests.kit.vhost_user_client import CTRL_Q, NET_HDR_LEN, RX_Q, TX_Q, VirtioNetFrontend
from tests.kit.vu_packed import (EVENT_DESC, EVENT_DISABLE, EVENT_ENABLE, F_AVAIL, F_INDIRECT,
                                 F_NEXT, F_USED, F_WRITE)

# =============================================================================================
# Bad lists: each breaks its queue (TX, RX when a frame arrives, ctrl)
# =============================================================================================
def id_eq_size(f, r, w):
    r.put_avail(r.add_chain([(buf(f), 64, w)], id=r.num))


def id_ffff(f, r, w):
    r.put_avail(r.add_chain([(buf(f), 64, w)], id=0xffff))


def id_out_of_range_last(f, r, w):
    """A two-descriptor list: the Buffer ID is in the last one, and it is out of range."""
    b = buf(f)
    rid = r.add_chain([(b, 12, w), (b + 64, 64, w)], id=1)
    r.set_desc(1, b + 64, 64, r.num, F_WRITE * w | F_AVAIL)
    r.put_avail(rid)


def id_reused(f, r, w):
    """Two lists with the same id made available together: the second is met while the first
    is still in flight (TX and ctrl publish once per batch)."""
    a = r.add_chain([(buf(f), 64, w)], id=3)
    b = r.add_chain([(buf(f), 64, w)], id=3)
    r.put_avail(a)
    r.put_avail(b)


def id_reused_ctrl(f, r, w):
    ids = []
    for _ in range(2):
        h = buf(f)
        f.mem.write(h, bytes([vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET]))
        ids.append(r.add_chain([(h, 2, False), (h + 16, 8, False), (h + 32, 1, True)], id=5))
    for i in ids:
        r.put_avail(i)


for _q, _qn in ((TX_Q, 'TX'), (RX_Q, 'RX'), (CTRL_Q, 'ctrl')):
    chain_case('packed %s buffer id == queue size' % _qn, _q, id_eq_size, 'buffer id out of range')
chain_case('packed TX buffer id 0xffff', TX_Q, id_ffff, 'buffer id out of range')
chain_case('packed RX id out of range in a list\'s last descriptor', RX_Q, id_out_of_range_last,
           'buffer id out of range')
chain_case('packed TX id reused while in flight', TX_Q, id_reused, 'buffer id reused while in flight')
chain_case('packed ctrl id reused while in flight', CTRL_Q, id_reused_ctrl,
           'buffer id reused while in flight')


# ---- wrap-counter lies that break: a list's later descriptor for the other wrap ----
def transmit_n(f, n):
    for i in range(n):
        if not f.transmit(frame_to(2, i)):
            raise vu.VhostUserError('frame %d not used' % i)


def wrap_lie_across_end(f, r, w):
    """Ring of 8: 7 frames go round normally, then a list at slots 7 and 0 whose slot-0 part
    carries the old wrap (AVAIL set, USED clear) instead of the new one."""
    transmit_n(f, r.num - 1)
    b = buf(f)
    rid = r.add_chain([(b, 12, False), (b + 16, 64, False)])
    r.set_flags(0, F_AVAIL)  # wrap 1 pattern where wrap 0 is due
    r.put_avail(rid)


def wrap_lie_later_desc(f, r, w):
    """A three-descriptor list whose middle descriptor is marked for the other wrap."""
    b = buf(f, 1024)
    rid = r.add_chain([(b, 100, w), (b + 128, 100, w), (b + 256, 512, w)])
    r.set_flags(1, F_NEXT | F_WRITE * w | F_USED)
    r.put_avail(rid)


chain_case('packed wrap lie: list across the ring end, continuation with the old wrap', TX_Q,
           wrap_lie_across_end, 'descriptor in a list not made available', size=8)
chain_case('packed wrap lie: middle descriptor of an RX list for the other wrap', RX_Q,
           wrap_lie_later_desc, 'descriptor in a list not made available')


# =============================================================================================
# Not available: never consumed, never an error; made available properly, it goes through
# =============================================================================================
def not_available_case(name, q, prepare, size=64):
    def fn(env, res):
        f = env.frontend(queue_size=size).setup()
        ring = f.rings[q]
        slot, good_flags = prepare(env, f, ring)
        desc = ring.get_desc(slot)
        before = env.stats('p0')[q]['packets']
        kick_and_settle(env, f, q)
        early = []
        if q == RX_Q:
            early = send_from_p1(env, tag='early')  # no buffer for it: dropped (or held)
            fence(f)
        nothing_consumed(env, res, f, q, name, before, slot, desc)
        expect_not_broken(env, res, q, name)
        ring.set_flags(slot, good_flags)  # now made available properly
        ring.kick()
        if q == RX_Q:
            sent = send_from_p1(env, tag='fixed')
            u = ring.get_used()
            got = u and f.mem.read(ring.rx_gpa, u[1])[NET_HDR_LEN:]
            res.check(got in early + sent, '%s: once available, a frame is received byte-exact'
                      % name)
            RxBuffers(f, count=4)  # room for the other one (the switch queued it): none stale
        else:
            res.check(ring.get_used() is not None, '%s: once available, it is used' % name)
        expect_not_broken(env, res, q, name + ' and the fix')
    CASES.append((name, fn, None, 'a descriptor that is not available is not an error'))


def tx_flags(flags, laps=0):
    """prepare(): after `laps` full laps, one TX frame whose head has `flags` (not available)."""
    def prepare(env, f, r):
        transmit_n(f, r.num * laps)
        slot, wrap = r.avail_slot, r.avail_wrap
        rid = r.add_chain([tx_buf(f, frame_to(2))])
        good = r.unpublish(rid)[1]
        r.set_flags(slot, flags(wrap))
        return slot, good
    return prepare


def rx_no_avail(env, f, r):
    b = buf(f, 2048)
    r.rx_gpa = b
    rid = r.add_chain([(b, 2048, True)])
    slot, good = r.unpublish(rid)
    r.set_flags(slot, F_WRITE)  # neither AVAIL nor USED
    return slot, good


not_available_case('packed TX descriptor with neither AVAIL nor USED', TX_Q,
                   tx_flags(lambda w: 0))
not_available_case('packed TX descriptor with AVAIL and USED (a used one)', TX_Q,
                   tx_flags(lambda w: F_AVAIL | F_USED))
not_available_case('packed wrap lie: head marked for the wrong wrap (first lap)', TX_Q,
                   tx_flags(lambda w: F_USED if w else F_AVAIL))
not_available_case('packed wrap lie: after a lap the driver keeps its old wrap', TX_Q,
                   tx_flags(lambda w: F_USED if w else F_AVAIL, laps=1), size=8)
not_available_case('packed RX descriptor without the AVAIL bit', RX_Q, rx_no_avail)


# =============================================================================================
# Indirect tables in packed mode
# =============================================================================================
def write_table(f, entries):
    """An indirect table of (addr, len, flags) entries (ids 0, ignored by the device)."""
    t = f.mem.alloc(16 * len(entries), 16)
    for i, (a, ln, fl) in enumerate(entries):
        f.mem.write(t + 16 * i, vu.DESC.pack(a, ln, 0, fl))
    return t


@case('packed indirect table, valid: TX and RX byte-exact', nolog='legal driver behaviour')
def indirect_valid(env, res):
    with VirtioNetFrontend(env.socks[2], features=PACKED) as peer:
        peer.setup()
        rx2 = RxBuffers(peer)
        f = env.frontend(features=PACKED_INDIRECT).setup()
        # TX: header, then the frame in two pieces, from one three-entry table.
        fr = frame_to(2, 7, 'indirect')
        b = buf(f, 512)
        f.mem.write(b, bytes(NET_HDR_LEN))
        f.mem.write(b + 64, fr[:50])
        f.mem.write(b + 192, fr[50:])
        t = write_table(f, [(b, NET_HDR_LEN, 0), (b + 64, 50, 0), (b + 192, len(fr) - 50, 0)])
        tx = f.rings[TX_Q]
        tx.put_avail(tx.add_indirect(t, 48))
        tx.kick()
        res.check(tx.get_used() is not None and rx2.frame() == fr,
                  'TX: a three-entry indirect table arrives at p2 byte-exact')
    env.wait_disconnected('p2')
    # RX: one table of two writable entries; the frame lands across them.
    rx = f.rings[RX_Q]
    b = buf(f, 4096)
    f.mem.write(b, b'\x5a' * 4096)
    t = write_table(f, [(b, 100, F_WRITE), (b + 1024, 2000, F_WRITE)])
    rx.put_avail(rx.add_indirect(t, 32))
    rx.kick()
    sent = send_from_p1(env, tag='indirect-rx')[0]
    u = rx.get_used()
    data = (f.mem.read(b, 100) + f.mem.read(b + 1024, 2000))[:u[1]] if u else b''
    untouched = f.mem.read(b + 100, 16) == b'\x5a' * 16
    res.check(u is not None and data[NET_HDR_LEN:] == sent and untouched,
              'RX: a frame written across a two-entry indirect table, byte-exact, nothing '
              'outside the entries touched (used len %r)' % (u and u[1]))
    for q in (RX_Q, TX_Q):
        expect_not_broken(env, res, q, 'valid indirect tables')


def ind(len_=None, entries=None, flags=0, where=None):
    def build(f, r, w):
        e = entries(f, w) if entries else [(buf(f), 64, F_WRITE * w)]
        t = write_table(f, e) if where is None else where(f)
        r.put_avail(r.add_indirect(t, 16 * len(e) if len_ is None else len_, extra_flags=flags))
    return build


def nested(f, w):
    inner = write_table(f, [(buf(f), 64, F_WRITE * w)])
    return [(inner, 16, F_INDIRECT)]


def indirect_in_list(f, r, w):
    t = write_table(f, [(buf(f), 64, F_WRITE * w)])
    rid = r.add_chain([(buf(f), 64, w), (t, 16, w)])
    r.set_flags(1, F_INDIRECT | F_WRITE * w | F_AVAIL)
    r.put_avail(rid)


for _q, _qn in ((TX_Q, 'TX'), (RX_Q, 'RX')):
    chain_case('packed %s indirect table length 17' % _qn, _q, ind(len_=17), 'bad indirect table',
               PACKED_INDIRECT)
chain_case('packed TX indirect table length 0', TX_Q, ind(len_=0), 'bad indirect table',
           PACKED_INDIRECT)
chain_case('packed TX nested indirect table', TX_Q, ind(entries=nested),
           'nested indirect or indirect with next', PACKED_INDIRECT)
chain_case('packed RX nested indirect table', RX_Q, ind(entries=nested),
           'nested indirect or indirect with next', PACKED_INDIRECT)
chain_case('packed TX indirect table outside guest memory', TX_Q,
           ind(where=lambda f: f.mem.gpa_base + f.mem.size + 0x1000), 'bad indirect table',
           PACKED_INDIRECT)
chain_case('packed TX indirect table straddling the end of memory', TX_Q,
           ind(len_=64, where=lambda f: f.mem.gpa_base + f.mem.size - 32), 'bad indirect table',
           PACKED_INDIRECT)
chain_case('packed TX indirect entry outside guest memory', TX_Q,
           ind(entries=lambda f, w: [(f.mem.gpa_base + f.mem.size, 64, 0)]),
           'buffer outside guest memory', PACKED_INDIRECT)
chain_case('packed TX INDIRECT with NEXT', TX_Q, ind(flags=F_NEXT),
           'nested indirect or indirect with next', PACKED_INDIRECT)
chain_case('packed TX INDIRECT inside a NEXT list', TX_Q, indirect_in_list,
           'nested indirect or indirect with next', PACKED_INDIRECT)
chain_case('packed TX INDIRECT not negotiated', TX_Q, ind(), 'indirect descriptor not negotiated')


# =============================================================================================
# Driver event suppression flipped while frames flow: never a notification while suppressed
# =============================================================================================
@case('packed event suppression: ENABLE/DISABLE flipped mid-batch, coalescing on',
      nolog='legal driver behaviour')
def suppression_flags(env, res):
    f = env.frontend().setup()
    res.check(f.coal_tx_set(8, COAL_USECS) == vu.VIRTIO_NET_OK, 'TX coalescing 8 frames / 30 ms')
    suppression_phases(env, res, f, TX_Q, tx_producer(f), [
        ('ENABLE', EVENT_ENABLE, None, 3, 'some'),
        ('ENABLE, then DISABLE before the held notification', EVENT_ENABLE, None, 3, 'held'),
        ('DISABLE (the held timer fires in it)', EVENT_DISABLE, None, 5, 'none'),
        ('ENABLE again', EVENT_ENABLE, None, 1, 'some'),
        ('DISABLE, over max_packets', EVENT_DISABLE, None, 20, 'none'),
        ('DISABLE with an off_wrap (ignored)', EVENT_DISABLE, 0, 4, 'none'),
        ('DESC without EVENT_IDX (taken as ENABLE)', EVENT_DESC, 100, 1, 'some'),
        ('DISABLE after DESC', EVENT_DISABLE, None, 40, 'none'),
        ('ENABLE, 60 frames', EVENT_ENABLE, None, 60, 'some'),
        ('60 frames kicked, DISABLE written while vnetd walks them', EVENT_DISABLE, None, 60,
         'flip'),
        ('ENABLE at the end', EVENT_ENABLE, None, 2, 'some'),
    ])
    expect_not_broken(env, res, TX_Q, 'flags flipping')
    # The same on the RX queue: frames from p1, RX coalescing on.
    res.check(f.coal_rx_set(8, COAL_USECS) == vu.VIRTIO_NET_OK, 'RX coalescing 8 frames / 30 ms')
    suppression_phases(env, res, f, RX_Q, rx_producer(env, f), [
        ('RX ENABLE', EVENT_ENABLE, None, 2, 'some'),
        ('RX ENABLE, then DISABLE before the held notification', EVENT_ENABLE, None, 2, 'held'),
        ('RX DISABLE (the held timer fires in it)', EVENT_DISABLE, None, 10, 'none'),
        ('RX ENABLE again', EVENT_ENABLE, None, 1, 'some'),
    ])
    expect_not_broken(env, res, RX_Q, 'flags flipping')


@case('packed event suppression: DESC off_wrap (EVENT_IDX) moved mid-batch, across laps',
      nolog='legal driver behaviour')
def suppression_desc(env, res):
    f = env.frontend(features=PACKED_EVENT_IDX, queue_size=16).setup()
    res.check(f.coal_tx_set(8, COAL_USECS) == vu.VIRTIO_NET_OK, 'TX coalescing 8 frames / 30 ms')
    suppression_phases(env, res, f, TX_Q, tx_producer(f), [
        ('ENABLE (first decision)', EVENT_ENABLE, None, 2, 'some'),
        ('DESC 5 ahead, 5 frames', EVENT_DESC, 5, 5, 'none'),
        ('DESC at the next slot, 1 frame', EVENT_DESC, 0, 1, 'some'),
        ('DESC 3 ahead, then DISABLE before the held timer', EVENT_DESC, 3, 1, 'held'),
        ('DISABLE, 6 frames (past the old DESC slot)', EVENT_DISABLE, None, 6, 'none'),
        ('DESC 14 ahead (next lap), 12 frames', EVENT_DESC, 14, 12, 'none'),
        ('DESC 2 ahead, 3 frames', EVENT_DESC, 2, 3, 'some'),
        ('ENABLE at the end', EVENT_ENABLE, None, 2, 'some'),
    ])
    expect_not_broken(env, res, TX_Q, 'off_wrap moving')


# =============================================================================================
# IN_ORDER drivers that break its assumptions
# =============================================================================================
@case('packed IN_ORDER: ids scrambled (legal on packed): one used descriptor a batch, byte-exact',
      nolog='packed Buffer IDs are the driver\'s tags; IN_ORDER constrains the device only')
def in_order_scrambled(env, res):
    f = env.frontend(features=PACKED_IN_ORDER).setup()
    info = {p['name']: p for p in env._ctl({'cmd': 'ports'})['ports']}['p0']
    res.check(info['ring'] == 'packed' and info['in_order'], 'p0 negotiated packed + IN_ORDER')
    ids = [5, 2, 9, 0, 7, 3]
    with VirtioNetFrontend(env.socks[2], features=PACKED) as peer:
        peer.setup()
        rx2 = RxBuffers(peer)
        tx = f.rings[TX_Q]
        frames = [frame_to(2, i, 'scrambled') for i in range(len(ids))]
        for fr, i in zip(frames, ids):
            tx.add_chain([tx_buf(f, fr)], id=i)
        before = [tx.get_desc(s) for s in range(len(ids))]
        for i in ids:
            tx.put_avail(i)
        tx.kick()
        done = [tx.get_used() for _ in ids]
        got = rx2.frames(len(ids))
    env.wait_disconnected('p2')
    after = [tx.get_desc(s) for s in range(len(ids))]
    res.check(None not in done and [d[0] for d in done] == ids and got == frames,
              'TX: 6 frames with ids %s used in ring order, at p2 byte-exact' % ids)
    res.check(tx.used_descs == 1 and after[0][2] == ids[-1]
              and [a[:3] for a in after[1:]] == [b[:3] for b in before[1:]],
              'TX: %d used descriptor(s), the last id (%d) at slot 0, slots 1-5 untouched'
              % (tx.used_descs, after[0][2]))
    # RX: every buffer gets its own used descriptor, with its own id, whatever the order.
    rx = f.rings[RX_Q]
    gpa = {}
    for i in (4, 1, 6):
        gpa[i] = buf(f, 2048)
        rx.put_avail(rx.add_chain([(gpa[i], 2048, True)], id=i))
    rx.kick()
    sent = send_from_p1(env, 3, 0, 'scrambled-rx')
    got = []
    for _ in sent:
        u = rx.get_used()
        got.append(u and (u[0], f.mem.read(gpa[u[0]], u[1])[NET_HDR_LEN:]))
    res.check(got == list(zip((4, 1, 6), sent)), 'RX: ids 4, 1, 6 used in ring order, byte-exact')
    for q in (RX_Q, TX_Q):
        expect_not_broken(env, res, q, 'scrambled ids')


chain_case('packed IN_ORDER TX: an id reused within a batch', TX_Q, id_reused,
           'buffer id reused while in flight', PACKED_IN_ORDER)


@case('split IN_ORDER: the driver skips a descriptor', log=broken_log(TX_Q,
      'descriptors not used in ring order (IN_ORDER)'))
def split_in_order_skip(env, res):
    f = env.frontend(features=vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_F_IN_ORDER)).setup()
    ring = f.rings[TX_Q]
    res.check(f.transmit(frame_to(2)), 'a first chain at descriptor 0 is used')
    b, ln, _ = tx_buf(f, frame_to(2, 1))
    ring.set_desc(3, b, ln)   # IN_ORDER: the next chain must start at descriptor 1
    ring.put_avail(3)
    ring.kick()
    expect_broken(env, res, TX_Q, 'an IN_ORDER violation on a split ring')
    expect_alive_conn(res, f.vu, 'an IN_ORDER violation')


from tests.e2e.hostile import hostile_packed_rings  # noqa: E402,F401 (registers its cases after these)


def main():
    missing = prerequisites()
    if missing is not None:
        return missing
    return run_suite(PackedEnv(workdir('hostile-packed')), CASES, 'hostile-packed',
                     after=packed_after_case)


if __name__ == '__main__':
    sys.exit(main())
