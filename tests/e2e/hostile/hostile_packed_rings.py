# SPDX-License-Identifier: MIT
"""Packed hostile cases on ring sizes, RX buffers and ring state (registered into
hostile_packed_env.CASES; run by test_hostile_packed.py): rings of 200 and 3 slots, mergeable
RX buffers (too few, given back, taken back, a ring too small for a frame), SET_VRING_BASE in
the packed encoding, a list that never ends."""

import time

from tests.kit.hostile_env import expect_alive_conn, expect_broken
from tests.kit.hostile_packed_env import (PACKED, PACKED_MRG, RxBuffers, broken_log, buf, case,
                                          chain_case, expect_not_broken, fence, frame_to,
                                          send_from_p1, tx_buf, CASES)
from tests.kit import vhost_user_client as vu
from tests.kit.vhost_user_client import CTRL_Q, NET_HDR_LEN, RX_Q, TX_Q, VirtioNetFrontend
from tests.kit.vu_packed import F_AVAIL, F_NEXT, F_WRITE


# =============================================================================================
# Ring sizes that are not powers of two (legal for packed): traffic over several laps
# =============================================================================================
def ring_size_case(n, frames, batch):
    name = 'packed ring of %d slots (not a power of two): %d frames each way byte-exact' % (
        n, frames)

    def fn(env, res):
        f = env.frontend(queue_size=n, mem_size=4 << 20).setup()
        ack = f.coal_tx_set(16, 100)
        res.check(ack == vu.VIRTIO_NET_OK, 'ctrl ring of %d: TX_SET acked OK' % n)
        with VirtioNetFrontend(env.socks[2], features=PACKED) as peer:
            peer.setup()
            rx2 = RxBuffers(peer, count=64)
            tx, ok_tx = f.rings[TX_Q], 0
            for start in range(0, frames, batch):
                sent, ids = [], []
                for i in range(start, min(frames, start + batch)):
                    fr = frame_to(2, i, 'size%d' % n)
                    b, ln, _ = tx_buf(f, fr)
                    k = i % 3  # lists of 1, 2, 3 descriptors: some cross the ring's end
                    cut = [0, NET_HDR_LEN, NET_HDR_LEN + 20, ln][:k + 1] + [ln]
                    parts = [(b + cut[j], cut[j + 1] - cut[j], False) for j in range(k + 1)]
                    ids.append(tx.add_chain(parts))
                    sent.append(fr)
                for rid in ids:
                    tx.put_avail(rid)
                tx.kick()
                used = [tx.get_used() for _ in ids]
                got = rx2.frames(len(sent))
                ok_tx += sum(g == s for g, s in zip(got, sent)) if None not in used else 0
        env.wait_disconnected('p2')
        res.check(ok_tx == frames, 'TX ring of %d: %d of %d frames at p2 byte-exact (%d laps)'
                  % (n, ok_tx, frames, 2 * frames // n))
        rx = RxBuffers(f, count=min(n, 64))
        ok_rx = 0
        for start in range(0, frames, batch):
            sent = send_from_p1(env, min(batch, frames - start), 0, 'size%d-rx%d' % (n, start))
            ok_rx += sum(g == s for g, s in zip(rx.frames(len(sent)), sent))
        res.check(ok_rx == frames, 'RX ring of %d: %d of %d frames received byte-exact'
                  % (n, ok_rx, frames))
        for q in (RX_Q, TX_Q, CTRL_Q):
            expect_not_broken(env, res, q, 'a ring of %d' % n)
    CASES.append((name, fn, None, 'a legal ring size'))


ring_size_case(200, 450, 40)
ring_size_case(3, 20, 1)


# =============================================================================================
# Mergeable RX buffers: a frame over several buffers; too few buffers, given back and taken again
# =============================================================================================
SMALL = 128   # bytes per RX buffer: 12 + 1004 bytes take 8


def post_small(f, n, ids=None):
    ring, gpas = f.rings[RX_Q], []
    for _ in range(n):
        b = f.mem.alloc(SMALL)
        gpas.append(b)
        ring.put_avail(ring.add_chain([(b, SMALL, True)]))
    ring.kick()
    return gpas


def rx_no_buffers(env):
    return env.stats('p0')[RX_Q]['rx_no_buffers']


def wait_rx_no_buffers(env, before, timeout=2.0):
    deadline = time.monotonic() + timeout
    while rx_no_buffers(env) <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    return rx_no_buffers(env) > before


@case('packed MRG_RXBUF: a frame over 8 buffers, too few posted first (given back, resumed)',
      nolog='legal driver behaviour')
def mrg_resume(env, res):
    f = env.frontend(features=PACKED_MRG).setup()
    ring = f.rings[RX_Q]
    gpas = post_small(f, 5)  # 640 bytes: not enough for 12 + 1004
    fence(f)
    before = rx_no_buffers(env)
    sent = send_from_p1(env, 1, 0, 'mrg', size=990)[0]
    res.check(wait_rx_no_buffers(env, before), 'too few buffers: vnetd waits (rx_no_buffers)')
    nothing = ring.peek_used() is None
    gpas += post_small(f, 5)
    used = [ring.get_used() for _ in range(8)]
    ok = None not in used
    data = b''.join(f.mem.read(gpas[i], u[1]) for i, u in enumerate(used)) if ok else b''
    nbuf = int.from_bytes(data[10:12], 'little') if ok else 0
    res.check(nothing and ok and nbuf == 8 and data[NET_HDR_LEN:] == sent,
              'nothing used while short; then 8 buffers used in ring order, num_buffers %d, the '
              'frame byte-exact' % nbuf)
    expect_not_broken(env, res, RX_Q, 'buffers given back and taken again')


@case('packed MRG_RXBUF: a buffer taken back after vnetd gave it back',
      log=broken_log(RX_Q, 'available descriptor taken back'))
def mrg_taken_back(env, res):
    f = env.frontend(features=PACKED_MRG).setup()
    ring = f.rings[RX_Q]
    post_small(f, 5)
    fence(f)
    before = rx_no_buffers(env)
    send_from_p1(env, 1, 0, 'mrg', size=990)
    res.check(wait_rx_no_buffers(env, before), 'too few buffers: vnetd walked 5 and gave them back')
    ring.set_flags(2, F_WRITE)  # the driver takes slot 2 back (neither AVAIL nor USED)
    post_small(f, 5)
    expect_broken(env, res, RX_Q, 'a buffer taken back')
    expect_alive_conn(res, f.vu, 'a buffer taken back')


@case('packed MRG_RXBUF: a frame larger than a whole ring of two-descriptor buffers',
      log=r'queue 0: packet needs more than 4 RX buffers; dropped')
def mrg_ring_too_small(env, res):
    """Ring of 8 slots full with 4 buffers of 2 x 64 bytes: a 1016-byte frame can never fit. It
    is dropped (before the fix it waited for ever, and the next frame with it)."""
    f = env.frontend(features=PACKED_MRG, queue_size=8).setup()
    ring, gpa = f.rings[RX_Q], {}
    for _ in range(4):
        b = f.mem.alloc(256)
        rid = ring.add_chain([(b, 64, True), (b + 128, 64, True)])
        gpa[rid] = b
        ring.put_avail(rid)
    ring.kick()
    send_from_p1(env, 1, 0, 'too-big', size=990)
    small = send_from_p1(env, 1, 0, 'small', size=40)[0]
    u = ring.get_used()
    got = None
    if u:
        b = gpa[u[0]]
        got = (f.mem.read(b, 64) + f.mem.read(b + 128, 64))[NET_HDR_LEN:u[1]]
    res.check(got == small, 'the big frame dropped, the next one delivered byte-exact')
    expect_not_broken(env, res, RX_Q, 'a frame no ring of this driver can hold')


# =============================================================================================
# Ring state: SET_VRING_BASE in the packed encoding, good and bad; a list that never ends
# =============================================================================================
@case('packed ring resumed at slot 37, wrap 0: 100 frames byte-exact, GET_VRING_BASE exact',
      nolog='a legal ring state')
def resumed_base(env, res):
    f = env.frontend()
    f.negotiate()
    f.set_mem()
    for q in (RX_Q, TX_Q, CTRL_Q):
        r = f.make_ring(q)
        if q == TX_Q:
            r.resume_at(37, False)
        f.setup_ring(r)
    tx = f.rings[TX_Q]
    with VirtioNetFrontend(env.socks[2], features=PACKED) as peer:
        peer.setup()
        rx2 = RxBuffers(peer, count=64)
        ok_n = 0
        for start in range(0, 100, 20):
            frames = [frame_to(2, i, 'resumed') for i in range(start, start + 20)]
            done = all(f.transmit(fr) for fr in frames)
            ok_n += sum(g == x for g, x in zip(rx2.frames(20), frames)) if done else 0
    env.wait_disconnected('p2')
    res.check(ok_n == 100, 'TX from slot 37 wrap 0, across two ring ends: %d of 100 frames at p2 '
              'byte-exact' % ok_n)
    want, got = tx.position(), f.vu.get_vring_base(TX_Q)
    res.check(got == want, 'GET_VRING_BASE 0x%08x == the driver\'s position 0x%08x (slot %d wrap %d)'
              % (got, want, tx.avail_slot, tx.avail_wrap))


def bad_base_case(name, base):
    def fn(env, res):
        f = env.frontend()
        f.negotiate()
        f.set_mem()
        for q in (RX_Q, TX_Q, CTRL_Q):
            r = f.make_ring(q)
            if q == TX_Q:
                r.base = base
            f.setup_ring(r)
        st = env.stats('p0')[TX_Q]
        res.check(not st['started'], 'p0 TX queue not started with base 0x%x' % base)
        expect_alive_conn(res, f.vu, name)
        res.check(f.ctrl(vu.CTRL_NOTF_COAL, vu.NOTF_COAL_RX_SET, bytes(8)) == vu.VIRTIO_NET_OK,
                  'the other queues of p0 work (RX_SET acked OK)')
    CASES.append((name, fn, r'queue %d: packed base 0x%x outside a ring of 64' % (TX_Q, base), None))


bad_base_case('packed SET_VRING_BASE: avail slot beyond the ring', 0x8000 | 100)
bad_base_case('packed SET_VRING_BASE: used slot beyond the ring', 0x8000 | (0x8000 | 64) << 16)


def endless_list(f, r, w):
    """Every slot of a ring of 8 made available with NEXT: the list never ends (its ninth
    descriptor would be slot 0 again, in the next lap)."""
    b = buf(f, 1024)
    for i in range(r.num):
        r.set_desc(i, b + 64 * i, 64, 0, F_NEXT | (F_AVAIL if i else 0))
    r.set_flags(0, F_NEXT | F_AVAIL)


chain_case('packed TX list that never ends (every slot NEXT)', TX_Q, endless_list,
           'descriptor in a list not made available', size=8)


