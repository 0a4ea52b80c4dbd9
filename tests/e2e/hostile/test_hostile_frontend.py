# SPDX-License-Identifier: MIT
"""A hostile vhost-user frontend (malicious VMM and driver) against one vnetd with two switch ports.

Each case connects to port p0 and does one bad thing. After every case:
  (1) vnetd is still running,
  (2) it logged a clear line about it (or the case says why no line is expected),
  (3) the case's own verdict: the bad queue is stopped ("broken" in stats, or not started), the
      request was refused (REPLY_ACK != 0, connection kept) or the connection was dropped,
  (4) port p1 still works: a good frontend sets it up, gets OK for a control TX_SET and has a
      transmitted packet counted,
  (5) a NEW good frontend on p0 works (full setup, control command acked OK),
  (6) vnetd's fd count is back to its idle value and no guest memfd is still mapped.
Every case runs even if an earlier one failed (vnetd is restarted if it died); exit 1 if any
check failed. Needs no root and no guest: switch ports create no interface.
"""

import os
import re
import select
import struct
import sys
import threading
import time

from tests.kit.hostile_env import *  # noqa: F401,F403 (the cases use the whole kit)
from tests.kit.hostile_env import Env, Result, prerequisites, run_suite
from tests.kit.harness import VNETD, workdir


# =============================================================================================
# Cases. Each is (name, function(env, res), log regex or None, why no log line is expected).
# =============================================================================================
CASES = []


def case(name, log=None, nolog=None):
    def reg(fn):
        CASES.append((name, fn, log, nolog))
        return fn
    return reg


# ---- bad descriptor chains on TX, RX (when receiving) and the control queue ----
def chain_case(name, q, build, err, features=vu.DEFAULT_FEATURES):
    def fn(env, res):
        f = env.frontend(features=features).setup()
        ring = f.rings[q]
        build(f, ring, WRITE if q == RX_Q else 0)
        ring.kick()
        if q == RX_Q:
            env.p1_broadcast()  # the walker only meets RX chains when a packet arrives
        expect_broken(env, res, q, name)
        expect_alive_conn(res, f.vu, name)
    CASES.append((name, fn, r'queue %d: %s; queue stopped' % (q, re.escape(err)), None))


def self_loop(f, r, w):
    r.set_desc(0, buf(f), 64, NEXT | w, 0)
    r.put_avail(0)


def two_cycle(f, r, w):
    b = buf(f)
    r.set_desc(0, b, 32, NEXT | w, 1)
    r.set_desc(1, b + 32, 32, NEXT | w, 0)
    r.put_avail(0)


for _q, _qn in ((TX_Q, 'TX'), (RX_Q, 'RX'), (CTRL_Q, 'ctrl')):
    chain_case('descriptor self-loop on %s' % _qn, _q, self_loop, 'chain too long (loop?)')
    chain_case('descriptor 2-cycle on %s' % _qn, _q, two_cycle, 'chain too long (loop?)')


def addr_outside(f, r, w):
    r.set_desc(0, f.mem.gpa_base + f.mem.size + 0x1000, 64, w)
    r.put_avail(0)


def addr_below(f, r, w):
    r.set_desc(0, 0x1000, 64, w)
    r.put_avail(0)


def addr_straddles_end(f, r, w):
    r.set_desc(0, f.mem.gpa_base + f.mem.size - 16, 64, w)
    r.put_avail(0)


def addr_overflow(f, r, w):
    r.set_desc(0, U64 - 16, 64, w)  # addr + len wraps past 2^64
    r.put_avail(0)


def len_max(f, r, w):
    r.set_desc(0, f.mem.gpa_base, 0xffffffff, w)
    r.put_avail(0)


def len_max_overflow(f, r, w):
    r.set_desc(0, U64 - 0x1000, 0xffffffff, w)
    r.put_avail(0)


chain_case('TX buffer outside guest memory', TX_Q, addr_outside, 'buffer outside guest memory')
chain_case('TX buffer below guest memory', TX_Q, addr_below, 'buffer outside guest memory')
chain_case('TX buffer straddling the end of memory', TX_Q, addr_straddles_end,
           'buffer outside guest memory')
chain_case('TX buffer range overflowing 64 bits', TX_Q, addr_overflow,
           'buffer outside guest memory')
chain_case('RX buffer range overflowing 64 bits', RX_Q, addr_overflow,
           'buffer outside guest memory')
chain_case('ctrl buffer outside guest memory', CTRL_Q, addr_outside,
           'buffer outside guest memory')
chain_case('TX descriptor length 0xffffffff', TX_Q, len_max, 'buffer outside guest memory')
chain_case('TX length 0xffffffff at 2^64-4096', TX_Q, len_max_overflow,
           'buffer outside guest memory')
chain_case('RX descriptor length 0xffffffff', RX_Q, len_max, 'buffer outside guest memory')


def avail_jump(f, r, w):
    r.set_avail_idx(r.num + 1)


def avail_jump_max(f, r, w):
    r.set_avail_idx(0xffff)


def head_eq_size(f, r, w):
    r.set_desc(0, buf(f), 64, w)
    r.put_avail(r.num)


def head_ffff(f, r, w):
    r.put_avail(0xffff)


def next_out_of_range(f, r, w):
    r.set_desc(0, buf(f), 64, NEXT | w, r.num)
    r.put_avail(0)


chain_case('TX avail index jump beyond queue size', TX_Q, avail_jump,
           'avail index moved by more than the queue size')
chain_case('ctrl avail index jump to 0xffff', CTRL_Q, avail_jump_max,
           'avail index moved by more than the queue size')
chain_case('TX head index == queue size', TX_Q, head_eq_size, 'head index out of range')
chain_case('ctrl head index 0xffff', CTRL_Q, head_ffff, 'head index out of range')
chain_case('RX head index == queue size', RX_Q, head_eq_size, 'head index out of range')
chain_case('TX next index == queue size', TX_Q, next_out_of_range, 'next index out of range')


def indirect_table(f, r, w, entries):
    """Descriptor 0 of r points at an indirect table holding `entries` (addr, len, flags, next)."""
    t = f.mem.alloc(16 * len(entries), 16)
    for i, (a, ln, fl, nx) in enumerate(entries):
        f.mem.write(t + 16 * i, vu.DESC.pack(a, ln, fl, nx))
    return t


def indirect_plain(f, r, w):
    t = indirect_table(f, r, w, [(buf(f), 64, w, 0)])
    r.set_desc(0, t, 16, INDIRECT)
    r.put_avail(0)


def indirect_nested(f, r, w):
    inner = indirect_table(f, r, w, [(buf(f), 64, w, 0)])
    outer = indirect_table(f, r, w, [(inner, 16, INDIRECT, 0)])
    r.set_desc(0, outer, 16, INDIRECT)
    r.put_avail(0)


def indirect_with_next(f, r, w):
    t = indirect_table(f, r, w, [(buf(f), 64, w, 0)])
    r.set_desc(0, t, 16, INDIRECT | NEXT, 1)
    r.set_desc(1, buf(f), 64, w)
    r.put_avail(0)


def indirect_loop(f, r, w):
    b = buf(f)
    t = indirect_table(f, r, w, [(b, 32, NEXT | w, 1), (b + 32, 32, NEXT | w, 0)])
    r.set_desc(0, t, 32, INDIRECT)
    r.put_avail(0)


def indirect_bad_len(f, r, w):
    t = indirect_table(f, r, w, [(buf(f), 64, w, 0)])
    r.set_desc(0, t, 17, INDIRECT)
    r.put_avail(0)


def indirect_outside(f, r, w):
    r.set_desc(0, f.mem.gpa_base + f.mem.size, 32, INDIRECT)
    r.put_avail(0)


chain_case('TX INDIRECT not negotiated', TX_Q, indirect_plain,
           'indirect descriptor not negotiated')
chain_case('ctrl INDIRECT not negotiated', CTRL_Q, indirect_plain,
           'indirect descriptor not negotiated')
chain_case('TX nested INDIRECT', TX_Q, indirect_nested,
           'nested indirect or indirect with next', WITH_INDIRECT)
chain_case('RX nested INDIRECT', RX_Q, indirect_nested,
           'nested indirect or indirect with next', WITH_INDIRECT)
chain_case('TX INDIRECT with NEXT', TX_Q, indirect_with_next,
           'nested indirect or indirect with next', WITH_INDIRECT)
chain_case('TX loop inside an indirect table', TX_Q, indirect_loop, 'chain too long (loop?)',
           WITH_INDIRECT)
chain_case('TX indirect table length 17', TX_Q, indirect_bad_len, 'bad indirect table',
           WITH_INDIRECT)
chain_case('TX indirect table outside memory', TX_Q, indirect_outside, 'bad indirect table',
           WITH_INDIRECT)


def ctrl_read_after_write(f, r, w):
    b = buf(f)
    f.mem.write(b, bytes([vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET]))
    r.set_desc(0, b + 64, 1, WRITE | NEXT, 1)
    r.set_desc(1, b, 2, 0)
    r.put_avail(0)


chain_case('ctrl readable descriptor after writable', CTRL_Q, ctrl_read_after_write,
           'readable descriptor after writable one')


# ---- zero lengths: not an error of the ring; the packet / command is refused ----
@case('TX descriptor length 0', log=r'queue 1: TX packet of 0 bytes dropped')
def tx_len0(env, res):
    f = env.frontend().setup()
    r = f.rings[TX_Q]
    dropped = env.stats('p0')[TX_Q]['dropped']
    r.set_desc(0, buf(f), 0, 0)
    r.put_avail(0)
    r.kick()
    used = r.get_used(2.0)
    res.check(used is not None and used[1] == 0, 'the empty packet was returned (used %r)' % (used,))
    res.check(env.stats('p0')[TX_Q]['dropped'] == dropped + 1, 'counted as dropped')
    res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'TX queue keeps working afterwards')
    res.check(not env.stats('p0')[TX_Q]['broken'], 'TX queue not broken (a 0-byte packet is legal)')


@case('ctrl descriptors of length 0', log=r'queue 2: control command without a writable ack')
def ctrl_len0(env, res):
    f = env.frontend().setup()
    r = f.rings[CTRL_Q]
    b = buf(f)
    r.set_desc(0, b, 0, NEXT, 1)
    r.set_desc(1, b + 16, 0, WRITE)
    r.put_avail(0)
    r.kick()
    used = r.get_used(2.0)
    res.check(used is not None, 'command completed (no ack possible) %r' % (used,))
    res.check(f.coal_tx_set(1, 1) == vu.VIRTIO_NET_OK, 'next command on the same queue acked OK')


# ---- ring states (vhost-user spec "Ring states") and the error fd ----
@case('TX ring without PROTOCOL_FEATURES acked: enabled by its kick',
      nolog='a legal setup: nothing to log')
def ring_enabled_by_kick(env, res):
    f = env.frontend()
    vu_ = f.vu
    vu_.get_features()
    vu.ok(vu_.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK), 'SET_PROTOCOL_FEATURES')
    vu.ok(vu_.set_owner(), 'SET_OWNER')
    vu.ok(vu_.set_features(vu.DEFAULT_FEATURES), 'SET_FEATURES without bit 30')
    f.features = vu.DEFAULT_FEATURES
    f.set_mem()
    for q in (RX_Q, TX_Q, CTRL_Q):
        f.setup_ring(f.make_ring(q), enable=False)
    res.check(f.transmit(ether_frame(BCAST, MACS[0])),
              'a packet is sent with no SET_VRING_ENABLE (protocol features set, bit 30 not acked)')


@case('TX ring with PROTOCOL_FEATURES acked: disabled until SET_VRING_ENABLE',
      nolog='a legal setup: nothing to log')
def ring_disabled_until_enable(env, res):
    f = env.frontend()
    f.negotiate()
    f.set_mem()
    for q in (RX_Q, TX_Q, CTRL_Q):
        f.setup_ring(f.make_ring(q), enable=q != TX_Q)
    res.check(not f.transmit(ether_frame(BCAST, MACS[0]), timeout=0.5),
              'a disabled ring is not processed')
    vu.ok(f.vu.set_vring_enable(TX_Q, True), 'SET_VRING_ENABLE')
    res.check(f.rings[TX_Q].get_used(2.0) is not None, 'the packet is sent once the ring is enabled')


@case('broken TX queue signals its SET_VRING_ERR fd',
      log=r'queue 1: avail index moved by more than the queue size')
def vring_err_fd(env, res):
    f = env.frontend().setup()
    err = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        vu.ok(f.vu._vring_fd(vu.SET_VRING_ERR, TX_Q, err), 'SET_VRING_ERR')
        r = f.rings[TX_Q]
        r.set_avail_idx(r.num + 1)
        r.kick()
        expect_broken(env, res, TX_Q, 'an avail jump')
        ready = select.select([err], [], [], 2.0)[0]
        res.check(bool(ready) and os.eventfd_read(err) >= 1, 'the error eventfd was signalled')
        expect_alive_conn(res, f.vu, 'a broken queue')
    finally:
        os.close(err)


def full_blocking_pipe():
    """A pipe whose write end blocks and whose buffer is already full: (read end, write end)."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b'x' * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w


@case('call and error fds that are full blocking pipes',
      log=r'queue 1: avail index moved by more than the queue size')
def blocking_pipe_fds(env, res):
    f = env.frontend().setup()
    r1, w1 = full_blocking_pipe()
    r2, w2 = full_blocking_pipe()
    try:
        vu.ok(f.vu.set_vring_call(TX_Q, w1), 'SET_VRING_CALL (full blocking pipe)')
        vu.ok(f.vu._vring_fd(vu.SET_VRING_ERR, TX_Q, w2), 'SET_VRING_ERR (full blocking pipe)')
        # A completion wants a notification, a broken ring an error signal: neither may block.
        res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'a packet completes')
        r = f.rings[TX_Q]
        r.set_avail_idx(r.avail_idx + r.num + 1)  # more than a queue ahead of what was used
        r.kick()
        expect_broken(env, res, TX_Q, 'an avail jump')
        expect_alive_port(env, res, 'full blocking pipes as call and error fds')
    finally:
        for fd in (r1, w1, r2, w2):
            os.close(fd)


# ---- ring addresses ----
def ring_addr_case(name, override, log):
    def fn(env, res):
        f = env.frontend()
        f.negotiate()
        f.set_mem()
        for q in (RX_Q, CTRL_Q):
            f.setup_ring(f.make_ring(q))
        r = f.make_ring(TX_Q)
        kw = override(f, r)
        try:
            f.setup_ring(r, **kw)
            res.note('SET_VRING_ADDR/KICK acked OK; the queue is to stay stopped')
        except VhostUserError as e:
            res.note('setup refused: %s' % e)
        r.kick()
        st = env.stats('p0')[TX_Q]
        res.check(not st['started'], 'p0 TX queue not started (started=%r)' % st['started'])
        res.check(f.coal_tx_set(2, 2) == vu.VIRTIO_NET_OK, 'control queue still works')
        expect_alive_conn(res, f.vu, name)
    CASES.append((name, fn, log, None))


OUTSIDE = r'queue 1: ring outside guest memory'
ring_addr_case('desc ring outside memory', lambda f, r: {'desc': 0xdead0000}, OUTSIDE)
ring_addr_case('used ring range overflowing 64 bits', lambda f, r: {'used': U64 - 8}, OUTSIDE)
ring_addr_case('avail ring straddling the end of memory',
               lambda f, r: {'avail': f.mem.uva(f.mem.gpa_base + f.mem.size - 4)}, OUTSIDE)
ring_addr_case('ring given as guest-physical, not user address',
               lambda f, r: {'desc': r.desc, 'used': r.used, 'avail': r.avail}, OUTSIDE)
ring_addr_case('misaligned desc ring', lambda f, r: {'desc': f.mem.uva(r.desc) + 8},
               r'queue 1: misaligned ring addresses')


# ---- SET_VRING_NUM ----
@case('SET_VRING_NUM 0, 65536, 3, 1000, 0xffffffff', log=r'queue 1: bad size')
def vring_num(env, res):
    f = env.frontend()
    f.negotiate()
    for n in (0, 65536, 3, 1000, 0xffffffff):
        refused(res, f.vu.set_vring_num(TX_Q, n), 'SET_VRING_NUM %d' % n)
    f.set_mem()
    for q in (RX_Q, TX_Q, CTRL_Q):
        f.setup_ring(f.make_ring(q))
    res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'good sizes afterwards: TX works')


@case('ring index out of range (200) in ring requests', log=r'queue 200 out of range')
def ring_index(env, res):
    c = env.client()
    c.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
    e = os.eventfd(0)
    try:
        refused(res, c.set_vring_num(200, 64), 'SET_VRING_NUM index 200')
        refused(res, c.set_vring_kick(200, e), 'SET_VRING_KICK index 200')
        refused(res, c.set_vring_enable(200, True), 'SET_VRING_ENABLE index 200')
    finally:
        os.close(e)
    expect_alive_conn(res, c, 'ring index 200')


@case('SET_FEATURES with bits never offered', log=r'SET_FEATURES 0x[0-9a-f]+ refused')
def bad_features(env, res):
    c = env.client()
    c.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
    refused(res, c.set_features((1 << 63) | (1 << vu.VIRTIO_F_VERSION_1)), 'SET_FEATURES bit 63')


# ---- the state table (vhost_user_state.c): nothing changes a running ring's layout ----
PACKED_F, IN_ORDER_F = 1 << vu.VIRTIO_F_RING_PACKED, 1 << vu.VIRTIO_F_IN_ORDER
PROTO_BIT = 1 << vu.VHOST_USER_F_PROTOCOL_FEATURES


@case('SET_FEATURES flipping the ring layout under running rings',
      log=r'SET_FEATURES refused: features other than LOG_ALL change while rings run')
def features_flip_running(env, res):
    f = env.frontend().setup()
    for extra, what in ((PACKED_F, 'RING_PACKED added'), (PACKED_F | IN_ORDER_F, 'packed+IN_ORDER'),
                        (IN_ORDER_F, 'IN_ORDER added')):
        refused(res, f.vu.set_features(f.features | extra | PROTO_BIT),
                'SET_FEATURES with %s on running split rings' % what)
    # LOG_ALL alone may change while rings run (QEMU's migration does it).
    log_all = 1 << 26
    res.check(f.vu.set_features(f.features | PROTO_BIT | log_all) == 0 and
              f.vu.set_features(f.features | PROTO_BIT) == 0,
              'SET_FEATURES toggling LOG_ALL alone accepted while rings run')
    res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'the split rings still carry a frame')
    expect_alive_conn(res, f.vu, 'the refused flips')


@case('SET_FEATURES flipping the layout without REPLY_ACK closes the connection',
      log=r'no REPLY_ACK to refuse SET_FEATURES with: closing the connection')
def features_flip_no_ack(env, res):
    f = env.frontend(protocol=0).setup()
    f.vu.send(vu.SET_FEATURES, struct.pack('=Q', f.features | PACKED_F | PROTO_BIT))
    expect_dropped(env, res, f.vu, 'a layout flip it could not refuse with an ack')


@case('SET_VRING_NUM and SET_VRING_ADDR (moved) on a running ring refused',
      log=r'SET_VRING_NUM refused: its ring is running')
def ring_change_running(env, res):
    f = env.frontend().setup()
    r = f.rings[TX_Q]
    refused(res, f.vu.set_vring_num(TX_Q, 128), 'SET_VRING_NUM on the running TX ring')
    refused(res, f.vu.set_vring_addr(TX_Q, f.mem.uva(r.desc) + 4096, f.mem.uva(r.used),
                                     f.mem.uva(r.avail)), 'SET_VRING_ADDR moving the running TX ring')
    res.check(f.vu.set_vring_addr(TX_Q, f.mem.uva(r.desc), f.mem.uva(r.used),
                                  f.mem.uva(r.avail)) == 0,
              'SET_VRING_ADDR naming the same rings accepted (QEMU re-sends them for logging)')
    res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'the TX ring still carries a frame')


def _rx_post(f, n=8, size=2048):
    """Post n receive buffers on f's RX ring; {id: address}."""
    ring, bufs = f.rings[RX_Q], {}
    for _ in range(n):
        a = f.mem.alloc(size)
        bufs[ring.add_chain([(a, size, True)])] = a
        ring.put_avail(list(bufs)[-1])
    ring.kick()
    return bufs


def _rx_frame(f, bufs, timeout=3.0):
    """The next frame f received (virtio-net header stripped), or None."""
    u = f.rings[RX_Q].get_used(timeout)
    if u is None or u[0] not in bufs or u[1] is None:
        return None
    return f.mem.read(bufs[u[0]], u[1])[vu.NET_HDR_LEN:]


def _relayout(f, features):
    """As a VMM does when the guest reloads its driver with other features: stop every ring
    (GET_VRING_BASE), SET_FEATURES, then the rings again in the new layout."""
    for i in list(f.rings):
        f.vu.get_vring_base(i)
        f.rings.pop(i).close()
    f.want_features = f.features = features
    vu.ok(f.vu.set_features(features | PROTO_BIT), 'SET_FEATURES')
    for i in (RX_Q, TX_Q, CTRL_Q):
        f.setup_ring(f.make_ring(i))


@case('stop / renegotiate / restart: packed, split, packed (with and without IN_ORDER), byte-exact',
      nolog='every step is legal: nothing to log')
def relayout_cycle(env, res):
    base = vu.DEFAULT_FEATURES & ~(PACKED_F | IN_ORDER_F)
    cycle = ((PACKED_F | IN_ORDER_F, 'packed+IN_ORDER'), (IN_ORDER_F, 'split+IN_ORDER'),
             (PACKED_F, 'packed'), (0, 'split'), (PACKED_F | IN_ORDER_F, 'packed+IN_ORDER'),
             (PACKED_F, 'packed'))
    f = env.frontend(features=base | cycle[0][0], mem_size=4 << 20).setup()
    with VirtioNetFrontend(env.socks[1], mem_size=4 << 20) as p1:
        p1.setup()
        p1_bufs = _rx_post(p1, 32)
        for n, (extra, what) in enumerate(cycle):
            if n:
                _relayout(f, base | extra)
            f_bufs = _rx_post(f, 4)
            out = ether_frame(MACS[1], MACS[0], payload=b'p0 to p1 in %s, step %d' % (what.encode(), n)
                              + bytes(range(200)))
            back = ether_frame(MACS[0], MACS[1], payload=b'p1 to p0 in %s, step %d' % (what.encode(), n)
                               + bytes(range(200, 0, -1)))
            sent = f.transmit(out)
            got = _rx_frame(p1, p1_bufs)
            res.check(sent and got == out, '%s (step %d): p0 -> p1 byte-exact' % (what, n))
            sent = p1.transmit(back)
            got = _rx_frame(f, f_bufs)
            res.check(sent and got == back, '%s (step %d): p1 -> p0 byte-exact' % (what, n))
        res.check(f.ctrl(vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET, struct.pack('<II', 4, 20)) ==
                  vu.VIRTIO_NET_OK, 'the control queue works after the last restart')


# ---- the device's MAC is a station address from every source (mac_is_group()) ----
CTRL_MAC_ADDR_F = 1 << 23
MAC_ADDR_SET = 1


def _mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(':'))


@case('group MAC as the device address: SET_CONFIG (whole and byte-wise), CTRL_MAC_ADDR_SET',
      log=r"refused: a group address as the device's MAC")
def group_mac(env, res):
    # A legacy driver (no CTRL_MAC_ADDR) may write the config space's MAC: never a group one.
    f = env.frontend(protocol=(1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_CONFIG)).setup()
    for off, data, what in ((0, b'\x01\x00\x5e\x00\x00\x01', 'an IPv4 multicast MAC'),
                            (0, b'\xff' * 6, 'the broadcast MAC'),
                            (0, b'\x53', 'byte 0 with the group bit (byte-wise)')):
        refused(res, f.vu.request(vu.SET_CONFIG, struct.pack('=III', off, len(data), 0) +
                                  data), 'SET_CONFIG of %s' % what)
    res.check(f.vu.get_config(0, 6) == _mac_bytes(MACS[0]), 'the config space keeps p0\'s MAC')
    res.check(f.transmit(ether_frame(BCAST, MACS[0])), 'p0 still sends from its own MAC')
    f.close()
    env.wait_disconnected('p0')
    # A driver with CTRL_MAC_ADDR: the command answers ERR for a group address.
    g = env.frontend(features=vu.DEFAULT_FEATURES | CTRL_MAC_ADDR_F).setup()
    ack = g.ctrl(vu.CTRL_MAC, MAC_ADDR_SET, b'\x03\x00\x00\x77\x00\x01')
    res.check(ack == vu.VIRTIO_NET_ERR, 'CTRL_MAC_ADDR_SET of a group MAC answered ERR (%r)' % ack)
    res.check(g.vu.get_config(0, 6) == _mac_bytes(MACS[0]), 'and the MAC did not change')


# ---- SET_MEM_TABLE ----
def mem_client(env):
    c = env.client()
    c.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
    return c


@case('SET_MEM_TABLE with 0 regions', log=r'bad SET_MEM_TABLE message \(5\): bad number of memory')
def mem0(env, res):
    c = mem_client(env)
    c.send(vu.SET_MEM_TABLE, c.mem_table_payload([], 0), flags=vu.VERSION | vu.FLAG_NEED_REPLY)
    expect_dropped(env, res, c, 'SET_MEM_TABLE with 0 regions')


@case('SET_MEM_TABLE with 9 regions (8 fds)',
      log=r'bad SET_MEM_TABLE message \(5\): bad number of memory')
def mem9(env, res):
    c = mem_client(env)
    mems = [GuestMemory(4096, gpa=0x100000 * (i + 1), uva=0x7f0000000000 + 0x100000 * i)
            for i in range(8)]
    env.hostile += mems
    c.send(vu.SET_MEM_TABLE, c.mem_table_payload([m.region() for m in mems], 9),
           fds=[m.fd for m in mems], flags=vu.VERSION | vu.FLAG_NEED_REPLY)
    expect_dropped(env, res, c, 'nregions 9')


@case('SET_MEM_TABLE with 9 regions and 9 fds', log=r'message with more than 8 fds')
def mem9fds(env, res):
    c = mem_client(env)
    mems = [GuestMemory(4096, gpa=0x100000 * (i + 1), uva=0x7f0000000000 + 0x100000 * i)
            for i in range(9)]
    env.hostile += mems
    c.send(vu.SET_MEM_TABLE, c.mem_table_payload([m.region() for m in mems[:8]], 9),
           fds=[m.fd for m in mems], flags=vu.VERSION | vu.FLAG_NEED_REPLY)
    expect_dropped(env, res, c, '9 fds')


def mem_refused_case(name, make, log):
    def fn(env, res):
        c = mem_client(env)
        regions, fds, cleanup = make(env)
        try:
            refused(res, c.set_mem_table(regions, fds), name)
        finally:
            for fd in cleanup:
                os.close(fd)
        expect_alive_conn(res, c, name)
    CASES.append((name, fn, log, None))


def _pipe(env):
    r, w = os.pipe()
    return [(0x40000000, 1 << 20, 0x7f5500000000, 0)], [r], [r, w]


def _devnull(env):
    fd = os.open('/dev/null', os.O_RDWR)
    return [(0x40000000, 1 << 20, 0x7f5500000000, 0)], [fd], [fd]


def _memfd_region(env, region):
    m = GuestMemory(1 << 20)
    env.hostile.append(m)
    return [region(m)], [m.fd], []


mem_refused_case('SET_MEM_TABLE with a pipe fd', _pipe, r'SET_MEM_TABLE: mmap of \d+ bytes')
mem_refused_case('SET_MEM_TABLE with /dev/null', _devnull, r'SET_MEM_TABLE: mmap of \d+ bytes')
mem_refused_case('SET_MEM_TABLE region of size 0',
                 lambda env: _memfd_region(env, lambda m: (m.gpa_base, 0, m.uva_base, 0)),
                 r'SET_MEM_TABLE: empty region')
mem_refused_case('SET_MEM_TABLE mmap_offset beyond the file',
                 lambda env: _memfd_region(env, lambda m: (m.gpa_base, 4096, m.uva_base, 2 << 20)),
                 r'SET_MEM_TABLE: file of 1048576 bytes, region needs')
mem_refused_case('SET_MEM_TABLE region larger than the file',
                 lambda env: _memfd_region(env, lambda m: (m.gpa_base, 4 << 20, m.uva_base, 0)),
                 r'SET_MEM_TABLE: file of 1048576 bytes, region needs')
mem_refused_case('SET_MEM_TABLE mmap_offset + size overflowing 64 bits',
                 lambda env: _memfd_region(env, lambda m: (m.gpa_base, 8192, m.uva_base, U64 - 4096)),
                 r'SET_MEM_TABLE: region wraps around')
mem_refused_case('SET_MEM_TABLE guest address + size overflowing 64 bits',
                 lambda env: _memfd_region(env, lambda m: (U64 - 4096, 8192, m.uva_base, 0)),
                 r'SET_MEM_TABLE: region wraps around')


@case('SET_MEM_TABLE with overlapping regions', log=r'SET_MEM_TABLE: region 1 overlaps another')
def mem_overlap(env, res):
    c = mem_client(env)
    a, b = GuestMemory(1 << 20), GuestMemory(1 << 20)
    env.hostile += [a, b]
    refused(res, c.set_mem_table([a.region(), b.region()], [a.fd, b.fd]), 'overlapping regions')
    expect_alive_conn(res, c, 'overlapping regions')


@case('memfd shrunk to 0 after SET_MEM_TABLE, then kick',
      log=r'vnetd: (warning|error): .*(memory|memfd|seal|SIGBUS|bus error|truncat|shr[iu]nk)')
def mem_shrunk(env, res):
    """The frontend owns the memfd: it can ftruncate it after vnetd mapped it. Touching the
    mapping then raises SIGBUS in vnetd unless it refused unsealed memory (F_SEAL_SHRINK) or
    handles the fault. Either a refused SET_MEM_TABLE or a broken queue / dropped connection
    is fine; a dead daemon is not."""
    f = env.frontend()
    f.negotiate()
    try:
        f.set_mem()
    except VhostUserError as e:
        res.check(True, 'SET_MEM_TABLE of an unsealed memfd refused (%s)' % e)
        return
    for q in (RX_Q, TX_Q, CTRL_Q):
        f.setup_ring(f.make_ring(q))
    r = f.rings[TX_Q]
    b = buf(f, 128)
    f.mem.write(b, bytes(12) + ether_frame(BCAST, MACS[0]))
    r.put_avail(r.add_chain([(b, 12 + 41, False)]))
    os.ftruncate(f.mem.fd, 0)  # from here on, never touch f.mem (we would SIGBUS ourselves)
    r.kick()
    time.sleep(0.3)
    if not res.check(env.vd.alive(), 'vnetd survived guest memory shrinking under it'):
        return
    st = env.stats('p0')[TX_Q]
    res.check(st['broken'] or f.vu.wait_closed(1.0), 'TX queue broken or connection dropped')


# ---- truncated and malformed messages ----
@case('truncated payload, then close', log=r'SET_VRING_NUM: truncated payload')
def trunc_close(env, res):
    c = env.client()
    c.send(vu.SET_VRING_NUM, struct.pack('=I', 1), size=8)
    c.close()


@case('truncated header (5 bytes), then close', log=r'truncated message header')
def trunc_hdr_close(env, res):
    c = env.client()
    c.send_raw(struct.pack('=IB', vu.SET_OWNER, 1))
    c.close()


def stall_case(name, partial, log):
    def fn(env, res):
        c = env.client()
        c.send_raw(partial)
        t0 = time.monotonic()
        time.sleep(0.1)
        dt = env.p1_latency()
        res.check(dt is not None and dt < P1_SERVED_WITHIN,
                  'p1 served while p0 stalls mid-message: GET_FEATURES answered after %s (limit %.1f s)'
                  % ('%.2f s' % dt if dt is not None else 'never', P1_SERVED_WITHIN))
        time.sleep(max(0.0, 2.2 - (time.monotonic() - t0)))  # stall > 2 s in all
        # A stalled frontend only stalls itself (vnetd never waits for it); the partial
        # message is reported when the frontend goes away.
        expect_alive_port(env, res, 'a stall of %.1f s' % (time.monotonic() - t0))
        c.close()
    CASES.append((name, fn, log, None))


stall_case('truncated payload, then stall > 2 s',
           vu.HDR.pack(vu.SET_VRING_NUM, vu.VERSION, 8) + struct.pack('=I', 1),
           r'SET_VRING_NUM: truncated payload')
stall_case('truncated header, then stall > 2 s', struct.pack('=IB', vu.SET_OWNER, 1),
           r'truncated message header')


@case('payload trickled 1 byte per 1.2 s for 5 s', log=r'SET_VRING_ADDR: truncated payload')
def trickle(env, res):
    """Every byte restarts vnetd's 2 s wait for the rest of the message: the daemon must not
    stay blocked in that read (p1 must be served meanwhile) nor wait forever for the message."""
    c = env.client()
    c.send_raw(vu.HDR.pack(vu.SET_VRING_ADDR, vu.VERSION, 40))
    stop = threading.Event()

    def drip():
        for _ in range(4):
            if stop.wait(1.2):
                return
            try:
                c.send_raw(b'\0')
            except (OSError, VhostUserError):
                return

    th = threading.Thread(target=drip, daemon=True)
    th.start()
    time.sleep(0.1)
    dt = env.p1_latency()
    res.check(dt is not None and dt < P1_SERVED_WITHIN,
              'p1 served while p0 trickles a message: GET_FEATURES answered after %s '
              '(limit %.1f s; the trickle lasts 4.8 s)'
              % ('%.2f s' % dt if dt is not None else 'never', P1_SERVED_WITHIN))
    stop.set()
    th.join()
    c.close()  # the partial message is reported at disconnect


@case('unknown request numbers (0, 99, 1000, 0xffffffff, SET_STATUS, IOTLB_MSG)',
      log=r'unsupported request')
def unknown_requests(env, res):
    c = env.client()
    c.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
    for req in (0, 99, 1000, 0xffffffff, 39, 22):
        refused(res, c.request(req, struct.pack('=Q', 0)), 'request %d' % req)
    e1, e2 = os.eventfd(0), os.eventfd(0)
    refused(res, c.request(77, b'x' * 40, fds=[e1, e2]), 'request 77 with 2 fds')
    os.close(e1)
    os.close(e2)
    expect_alive_conn(res, c, 'unknown requests')


@case('unknown request with a 1000-byte payload', log=r'UNKNOWN: payload of 1000 bytes')
def unknown_big(env, res):
    c = env.client()
    c.send(4242, b'\0' * 1000)
    expect_dropped(env, res, c, 'a 1000-byte payload')


def version_case(name, flags, log):
    def fn(env, res):
        c = env.client()
        c.send(vu.GET_FEATURES, flags=flags)
        expect_dropped(env, res, c, 'flags 0x%x' % flags)
    CASES.append((name, fn, log, None))


version_case('version 0 in flags', 0, r'bad GET_FEATURES message \(1\): bad version')
version_case('version 2 in flags', 2, r'bad GET_FEATURES message \(1\): bad version')
version_case('version 3 + garbage flag bits', 0xfffffff3, r'bad GET_FEATURES message \(1\): bad version')
version_case('REPLY flag on a request', vu.VERSION | vu.FLAG_REPLY,
             r'bad GET_FEATURES message \(1\): reply flag on a request')


@case('wrong fd count (SET_VRING_KICK with 2 fds)',
      log=r'bad SET_VRING_KICK message \(12\): wrong number of fds')
def wrong_fds(env, res):
    c = env.client()
    e1, e2 = os.eventfd(0), os.eventfd(0)
    c.send(vu.SET_VRING_KICK, struct.pack('=Q', 1), fds=[e1, e2])
    os.close(e1)
    os.close(e2)
    expect_dropped(env, res, c, 'two fds on SET_VRING_KICK')


@case('kicks before memory and rings are set', nolog='kicks on a queue that is not ready are ignored')
def early_kicks(env, res):
    f = env.frontend()
    f.negotiate()
    rings = [f.make_ring(q) for q in (RX_Q, TX_Q, CTRL_Q)]
    # Kick fd first, nothing else: then size/addresses, still no memory.
    for r in rings:
        f.vu.set_vring_kick(r.index, r.kick_fd)
        r.kick()
    time.sleep(0.05)
    for r in rings:
        f.setup_ring(r)
        r.kick()
    b = buf(f, 128)
    f.mem.write(b, bytes(12) + ether_frame(BCAST, MACS[0]))
    tx = f.rings[TX_Q]
    tx.put_avail(tx.add_chain([(b, 12 + 41, False)]))
    tx.kick()
    time.sleep(0.1)
    st = env.stats('p0')
    res.check(not any(q['started'] or q['broken'] for q in st.values()),
              'no queue started or broken without memory')
    f.set_mem()
    res.check(tx.get_used(2.0) is not None, 'the packet queued before SET_MEM_TABLE is sent after it')
    res.check(f.coal_tx_set(3, 3) == vu.VIRTIO_NET_OK, 'control command acked OK afterwards')


# ---- control commands ----
@case('control command with a read-only ack buffer',
      log=r'queue 2: control command without a writable ack byte')
def ctrl_ro_ack(env, res):
    f = env.frontend().setup()
    r = f.rings[CTRL_Q]
    h, p, a = buf(f, 2), buf(f, 8), buf(f, 1)
    f.mem.write(h, bytes([vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET]))
    f.mem.write(p, struct.pack('<II', 1, 1))
    f.mem.write(a, b'\xee')
    r.put_avail(r.add_chain([(h, 2, False), (p, 8, False), (a, 1, False)]))
    r.kick()
    used = r.get_used(2.0)
    res.check(used is not None and used[1] == 0, 'completed with used length 0 (%r)' % (used,))
    res.check(f.mem.read(a, 1) == b'\xee', 'read-only ack buffer untouched')
    res.check(not env.stats('p0')[CTRL_Q]['broken'], 'control queue not broken')
    res.check(f.coal_tx_set(5, 5) == vu.VIRTIO_NET_OK, 'next command acked OK')


@case('control commands with truncated payloads',
      log=r'control command class 6 cmd 0 \(4 bytes\) answered ERR')
def ctrl_truncated(env, res):
    f = env.frontend(features=vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_NET_F_VQ_NOTF_COAL)).setup()
    for what, cls, cmd, payload in (
            ('TX_SET with 4 of 8 bytes', vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET, b'\1\0\0\0'),
            ('RX_SET with no payload', vu.CTRL_NOTF_COAL, vu.NOTF_COAL_RX_SET, b''),
            ('VQ_SET with 6 of 12 bytes', vu.CTRL_NOTF_COAL, vu.NOTF_COAL_VQ_SET, b'\1\0\0\0\1\0'),
            ('TX_SET with 9 bytes', vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET, b'\1' * 9)):
        ack = f.ctrl(cls, cmd, payload)
        res.check(ack == vu.VIRTIO_NET_ERR, '%s: ack ERR (%r)' % (what, ack))
    # Only the class byte: a 1-byte header.
    r = f.rings[CTRL_Q]
    h, a = buf(f, 1), buf(f, 1)
    f.mem.write(h, bytes([vu.CTRL_NOTF_COAL]))
    f.mem.write(a, b'\xee')
    r.put_avail(r.add_chain([(h, 1, False), (a, 1, True)]))
    r.kick()
    r.get_used(2.0)
    res.check(f.mem.read(a, 1)[0] == vu.VIRTIO_NET_ERR, '1-byte command (class only): ack ERR')
    # Longer than vnetd reads (4096).
    h = buf(f, 5000)
    f.mem.write(h, bytes([vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET]) + bytes(4998))
    f.mem.write(a, b'\xee')
    r.put_avail(r.add_chain([(h, 5000, False), (a, 1, True)]))
    r.kick()
    r.get_used(2.0)
    res.check(f.mem.read(a, 1)[0] == vu.VIRTIO_NET_ERR, '5000-byte command: ack ERR')
    res.check(not env.stats('p0')[CTRL_Q]['broken'], 'control queue not broken')
    res.check(f.coal_tx_set(6, 6) == vu.VIRTIO_NET_OK, 'a good command afterwards: ack OK')


@case('disconnect in the middle of control commands (x10) and of TX (x5)',
      nolog='an ordinary disconnect (info line only)')
def ctrl_disconnect(env, res):
    for i in range(15):
        f = VirtioNetFrontend(env.socks[0]).setup()
        q = CTRL_Q if i < 10 else TX_Q
        r = f.rings[q]
        b = buf(f, 128)
        if q == CTRL_Q:
            f.mem.write(b, bytes([vu.CTRL_NOTF_COAL, vu.NOTF_COAL_TX_SET]) + struct.pack('<II', 1, 1))
            r.put_avail(r.add_chain([(b, 10, False), (b + 64, 1, True)]))
        else:
            f.mem.write(b, bytes(12) + ether_frame(BCAST, MACS[0]))
            for _ in range(8):
                r.put_avail(r.add_chain([(b, 12 + 41, False)]))
        r.kick()
        f.close()  # socket, kick/call fds and memory gone at once
        if not env.wait_disconnected('p0'):
            break
    res.check(env.vd.alive() and not env.connected('p0'), 'vnetd took 15 abrupt disconnects')


# ---- waits on a peer and socket paths ----
# Nothing vnetd does for one port may wait on another party: a VMM that never accepts, a
# frontend that clears O_NONBLOCK on the fds it shares with vnetd, a FIFO planted as a file.
import signal as _signal
import socket as _socket
import stat as _stat
import subprocess as _subprocess

from tests.kit.harness import ControlClient as _ControlClient

PROMPT = 2.0  # s: what "returns promptly" means below (normally a few ms)


def quick_ctl(path, req, timeout=PROMPT):
    """(reply dict or None, seconds) of one control request that must not wait long."""
    t0 = time.monotonic()
    try:
        c = _ControlClient(path, timeout=timeout)
        try:
            return c.request(req), time.monotonic() - t0
        finally:
            c.close()
    except (OSError, ValueError):
        return None, time.monotonic() - t0


def stuck_listener(path):
    """A VMM listening at path with backlog 0 whose backlog is already full (one connection it
    never accepts): (listener, filler). A blocking connect() there waits for good."""
    if os.path.lexists(path):
        os.unlink(path)
    lst = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    lst.bind(path)
    lst.listen(0)
    filler = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    filler.connect(path)
    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
        full = False
    except BlockingIOError:
        full = True
    finally:
        probe.close()
    if not full:
        raise VhostUserError('the backlog of %s did not fill (kernel?)' % path)
    return lst, filler


def accept_frontend(lst, timeout=5.0):
    """vnetd's connection on a VMM listener, as a VhostUserClient that answered GET_QUEUE_NUM
    (connections queued before it, e.g. a closed filler, are skipped), or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lst.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            s, _ = lst.accept()
        except OSError:
            return None
        c = VhostUserClient.__new__(VhostUserClient)
        c.path, c.timeout, c.reply_ack, c.sock = None, 3.0, False, s
        s.settimeout(3.0)
        try:
            if c.get_queue_num() == 3:
                return c
        except (VhostUserError, OSError):
            pass
        c.close()
    return None


class OwnVnetd:
    """A vnetd of the case's own (own ports, own control socket), started without waiting
    forever for it: ready() says whether it came up within the time given."""

    def __init__(self, wd, args, wrap=()):
        self.ctl = os.path.join(wd, 'control.sock')
        self.log_path = os.path.join(wd, 'vnetd.log')
        self.log = open(self.log_path, 'ab')
        extra = os.environ.get('VNETD_EXTRA_ARGS', '').split()
        self.proc = _subprocess.Popen(list(wrap) + [VNETD, '--control', self.ctl] + list(args) + extra,
                                      stdout=self.log, stderr=_subprocess.STDOUT,
                                      start_new_session=True)

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode(errors='replace')

    def ready(self, timeout=3.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if 'ready:' in self.log_text() and os.path.exists(self.ctl):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def sigterm(self, timeout=5.0):
        """SIGTERM; the exit status if it ended within timeout, else None (then SIGKILLed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(_signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except _subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()


def check_sigterm(res, vd, what):
    rc = vd.sigterm()
    res.check(rc == 0, '%s: SIGTERM stops vnetd within 5 s (status %r)' % (what, rc))


@case('client port-add to a VMM that never accepts (backlog 0, full)',
      log=r'cannot connect to .*vmm\.sock \(its listen backlog is full')
def client_backlog_full(env, res):
    path = os.path.join(env.wd, 'vmm.sock')
    lst, filler = stuck_listener(path)
    env.hostile += [lst, filler]
    spec = 'socket=%s,client,switch' % path
    reply, dt = quick_ctl(env.vd.control, {'cmd': 'port-add', 'spec': spec})
    res.check(reply is not None and reply.get('ok') and dt < PROMPT,
              'port-add of a client port to a full backlog returns promptly: %r after %.2f s'
              % (reply, dt))
    name = reply.get('port') if reply else None
    reply, dt = quick_ctl(env.vd.control, {'cmd': 'stats'})
    res.check(reply is not None and reply.get('ok', True) and dt < PROMPT,
              'stats answers while the VMM does not accept (%.2f s)' % dt)
    expect_alive_port(env, res, 'a client port stuck on a full backlog')
    # The VMM accepts at last: vnetd's next attempt (the reconnect timer) gets through.
    filler.close()
    fe = accept_frontend(lst, 5.0)
    res.check(fe is not None, 'the port connects once the VMM accepts, and answers GET_QUEUE_NUM')
    if fe is not None:
        env.hostile.append(fe)
    if name:
        reply, _ = quick_ctl(env.vd.control, {'cmd': 'port-del', 'port': name})
        res.check(reply is not None and reply.get('ok'), 'port-del %s: %r' % (name, reply))


def client_stuck_case(name, stuck_at_start):
    def fn(env, res):
        wd = workdir('hostile-backlog')
        vmm = os.path.join(wd, 'vmm.sock')
        if stuck_at_start:
            lst, filler = stuck_listener(vmm)
            env.hostile += [lst, filler]
        else:
            lst = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            lst.bind(vmm)
            lst.listen(4)
            filler = None
            env.hostile.append(lst)
        # Two workers: the reconnect runs on the client port's own worker (worker=1), which
        # the main thread parks for "ports".
        vd = OwnVnetd(wd, ['--workers', '2', '--port', 'socket=%s,client,switch,worker=1' % vmm,
                           '--port', 'socket=%s,switch,worker=0' % os.path.join(wd, 'p1.sock')])
        try:
            if not res.check(vd.ready(), 'vnetd comes up (its client port\'s VMM %s)'
                             % ('never accepts' if stuck_at_start else 'accepts')):
                return
            reply, dt = quick_ctl(vd.ctl, {'cmd': 'stats'})
            res.check(reply is not None and dt < PROMPT, 'stats answers (%.2f s)' % dt)
            if filler is not None:
                filler.close()
            fe = accept_frontend(lst, 5.0)
            res.check(fe is not None, 'the client port connects once its VMM accepts')
            # The VMM goes away and comes back with a full backlog: the reconnect (on the
            # port's worker) must not hang either.
            lst.close()
            lst, filler = stuck_listener(vmm)
            env.hostile += [lst, filler]
            if fe is not None:
                fe.close()  # vnetd sees the VMM gone: it reconnects to the stuck listener
            time.sleep(0.5)
            reply, dt = quick_ctl(vd.ctl, {'cmd': 'stats'})
            res.check(reply is not None and dt < PROMPT,
                      'stats answers while the port reconnects to a full backlog (%.2f s)' % dt)
            reply, dt = quick_ctl(vd.ctl, {'cmd': 'ports'})
            res.check(reply is not None and dt < PROMPT,
                      'ports (parks the workers) answers too (%.2f s)' % dt)
            t0 = time.monotonic()
            try:
                c = VhostUserClient(os.path.join(wd, 'p1.sock'), timeout=PROMPT)
                c.get_features()
                c.close()
                ok1 = True
            except (VhostUserError, OSError):
                ok1 = False
            res.check(ok1, 'another port of that vnetd answers GET_FEATURES (%.2f s)'
                      % (time.monotonic() - t0))
        finally:
            check_sigterm(res, vd, 'a client port on a full backlog')
            res.check('listen backlog is full' in vd.log_text(),
                      'its log says why the port does not connect')
    CASES.append((name, fn, None, 'a vnetd of its own: its log is checked by the case'))


client_stuck_case('start-up with a client port whose VMM never accepts (backlog full)', True)
client_stuck_case('client port reconnecting to a VMM back with a full backlog (--workers 2)',
                  False)


def socket_path_case(name, plant):
    def fn(env, res):
        path = os.path.join(env.wd, 'planted.sock')
        target = os.path.join(env.wd, 'precious')
        with open(target, 'w') as f:
            f.write('keep me\n')
        for p in (path,):
            if os.path.lexists(p):
                os.unlink(p)
        plant(path, target)
        before = os.lstat(path)
        reply, dt = quick_ctl(env.vd.control, {'cmd': 'port-add', 'spec': 'socket=%s,switch' % path})
        res.check(reply is not None and not reply.get('ok'),
                  'port-add on a %s is refused: %r' % (name, reply))
        after = os.lstat(path) if os.path.lexists(path) else None
        res.check(after is not None and after.st_ino == before.st_ino and
                  _stat.S_IFMT(after.st_mode) == _stat.S_IFMT(before.st_mode),
                  'the %s at socket= is still there, untouched' % name)
        with open(target) as f:
            res.check(f.read() == 'keep me\n' and _stat.S_IMODE(os.stat(target).st_mode) != 0o660,
                      'the file it names is unchanged (content, mode)')
        if reply and reply.get('ok'):
            quick_ctl(env.vd.control, {'cmd': 'port-del', 'port': reply['port']})
        # A stale socket there is still replaced, the new one 0660 from the start.
        (os.rmdir if _stat.S_ISDIR(before.st_mode) else os.unlink)(path)
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        reply, _ = quick_ctl(env.vd.control, {'cmd': 'port-add', 'spec': 'socket=%s,switch' % path})
        if res.check(reply is not None and reply.get('ok'), 'a stale socket there is replaced: %r'
                     % reply):
            st = os.lstat(path)
            res.check(_stat.S_ISSOCK(st.st_mode) and _stat.S_IMODE(st.st_mode) == 0o660,
                      'the new socket has mode %o (0660)' % _stat.S_IMODE(st.st_mode))
            quick_ctl(env.vd.control, {'cmd': 'port-del', 'port': reply['port']})
            time.sleep(0.1)
            res.check(not os.path.lexists(path), 'port-del removed its socket')
        os.unlink(target)
    CASES.append(('socket= is a %s' % name, fn, r'planted\.sock exists and is not a socket', None))


socket_path_case('regular file', lambda path, target: os.link(target, path))
socket_path_case('symlink to a file', lambda path, target: os.symlink(target, path))
socket_path_case('directory', lambda path, target: os.mkdir(path))


@case('control socket path held by a listener that never accepts',
      nolog='a vnetd of its own: its log is checked by the case')
def control_backlog_full(env, res):
    wd = workdir('hostile-ctl')
    ctl = os.path.join(wd, 'control.sock')
    lst, filler = stuck_listener(ctl)
    env.hostile += [lst, filler]
    vd = OwnVnetd(wd, ['--port', 'socket=%s,switch' % os.path.join(wd, 'p0.sock')])
    try:
        vd.proc.wait(3.0)
        rc = vd.proc.returncode
    except _subprocess.TimeoutExpired:
        rc = None
    res.check(rc not in (None, 0), 'vnetd refuses the busy control path at once (status %r)' % rc)
    res.check('in use by a running process' in vd.log_text(), 'and says the path is in use')
    if rc is None:
        vd.sigterm(1.0)
    else:
        vd.log.close()


@case('--config replaced by a FIFO, then SIGHUP',
      nolog='a vnetd of its own: its log is checked by the case')
def config_fifo(env, res):
    wd = workdir('hostile-cfg')
    cfg = os.path.join(wd, 'ports.json')
    with open(cfg, 'w') as f:
        json.dump({'ports': ['socket=%s,switch' % os.path.join(wd, 'c0.sock')]}, f)
    vd = OwnVnetd(wd, ['--config', cfg])
    try:
        if not res.check(vd.ready(), 'vnetd with --config comes up'):
            return
        fifo = os.path.join(wd, 'fifo')
        os.mkfifo(fifo)
        os.rename(fifo, cfg)
        vd.proc.send_signal(_signal.SIGHUP)
        time.sleep(0.3)
        reply, dt = quick_ctl(vd.ctl, {'cmd': 'ports'})
        res.check(reply is not None and dt < PROMPT and len(reply.get('ports', [])) == 1,
                  'after SIGHUP on a FIFO: ports answers (%.2f s), the port is kept' % dt)
        res.check('not a regular file' in vd.log_text(), 'the reload says the file is no regular '
                  'file')
    finally:
        check_sigterm(res, vd, 'a FIFO as --config')


@case('error fd: full pipe, O_NONBLOCK cleared after; the ring breaks',
      log=r'queue 1: avail index moved by more than the queue size')
def shared_fds_blocking(env, res):
    """vnetd sets O_NONBLOCK on the fds it is given, but that flag lives in the open file the
    frontend shares: it clears it again after the ack. A write to a full pipe then waits for
    the frontend, which never reads: RWF_NOWAIT keeps vnetd's from waiting."""
    f = env.frontend().setup()
    r2, w2 = full_blocking_pipe()
    env.hostile.append(_FdCloser([r2, w2]))
    vu.ok(f.vu._vring_fd(vu.SET_VRING_ERR, TX_Q, w2), 'SET_VRING_ERR (full pipe)')
    os.set_blocking(w2, True)
    f.transmit(ether_frame(BCAST, MACS[0]), timeout=0.5)
    r = f.rings[TX_Q]
    r.set_avail_idx(r.avail_idx + r.num + 1)
    r.kick()  # broken ring: the error fd is signalled
    time.sleep(0.2)
    expect_alive_port(env, res, 'a blocking full pipe as error fd')
    expect_broken(env, res, TX_Q, 'an avail jump')


STALLED = r'its (call|error) fd kept vnetd waiting .*dropping the frontend'
DROPPED = r'p\w+: the frontend kept a write to its fds waiting; dropping it'


def blocking_full_eventfd(env):
    """An eventfd that a write of 1 waits on: O_NONBLOCK cleared, the counter at 2^64 - 2."""
    efd = os.eventfd(0, os.EFD_CLOEXEC)
    env.hostile.append(_FdCloser([efd]))
    return efd


def fill(efd):
    os.set_blocking(efd, True)  # after the ack: vnetd set O_NONBLOCK on the shared file
    os.eventfd_write(efd, 0xfffffffffffffffe)  # one more and the counter would overflow


def full_eventfd_frontend(env, path, msg, what):
    """A frontend on path whose TX queue's call or error fd (msg) is a blocking full eventfd."""
    f = VirtioNetFrontend(path).setup()
    env.hostile.append(f)
    efd = blocking_full_eventfd(env)
    vu.ok(f.vu._vring_fd(msg, TX_Q, efd), '%s (eventfd)' % what)
    fill(efd)
    return f


def expect_stall_dropped(env, res, f, log0, fd):
    """The watchdog ended the write to the frontend's fd, vnetd dropped it, p1 still answers."""
    res.check(env.wait_log(log0, STALLED, timeout=10) is not None,
              'the watchdog ended the %s write the frontend kept waiting' % fd)
    expect_dropped(env, res, f.vu, 'a %s write it kept waiting' % fd)
    expect_alive_port(env, res, 'a %s write kept waiting' % fd)


def own_port(env, res, name):
    """A switch port of the case's own (port-add): the ports p0 and p1 keep no history."""
    path = os.path.join(env.wd, '%s.sock' % name)
    reply, _ = quick_ctl(env.vd.control, {'cmd': 'port-add', 'spec': 'socket=%s,switch' % path})
    if not res.check(reply is not None and reply.get('ok'), 'port-add for the case: %r' % reply):
        return None, None
    return path, reply['port']


def eventfd_stall_case(name, port, req):
    """A case on a switch port of its own (own_port(), deleted after) whose first frontend's TX
    call or error fd (req: 'SET_VRING_CALL', 'SET_VRING_ERR') is a blocking full eventfd
    (full_eventfd_frontend()): the body gets (env, res, path, log0, f), log0 the log's size
    before f came. Every such case expects vnetd to drop the frontend (DROPPED)."""
    def reg(body):
        def fn(env, res):
            path, pname = own_port(env, res, port)
            if path is None:
                return
            try:
                log0 = env.log_size()
                body(env, res, path, log0, full_eventfd_frontend(env, path, getattr(vu, req), req))
            finally:
                quick_ctl(env.vd.control, {'cmd': 'port-del', 'port': pname})
        CASES.append((name, fn, DROPPED, None))
        return body
    return reg


@eventfd_stall_case('call fd: blocking eventfd at 2^64-2, O_NONBLOCK cleared after: the write '
                    'watchdog ends the write, the frontend is dropped, the next one is polled',
                    'pcall', 'SET_VRING_CALL')
def call_fd_stalls(env, res, path, log0, f):
    """An eventfd write is one write(2) under peer_io.c's watchdog, which ends it within two of
    its 100 ms looks: the frontend is dropped, its port's later frontends get a poll() before
    each eventfd write, so the same trick makes nothing wait again."""
    f.transmit(ether_frame(BCAST, MACS[0]), timeout=0.5)  # completion: notify wants a call
    expect_stall_dropped(env, res, f, log0, 'call')
    log1 = env.log_size()
    g = full_eventfd_frontend(env, path, vu.SET_VRING_CALL, 'next frontend: SET_VRING_CALL')
    res.check(g.transmit(ether_frame(BCAST, MACS[0]), timeout=3.0),
              "the port's next frontend: a frame completes with its call eventfd full")
    # Longer than the watchdog needs to end a write (two 100 ms looks): a frontend still there
    # then had nothing wait.
    time.sleep(1.0)
    expect_alive_conn(res, g.vu, 'a full call eventfd on a port that polls it')
    res.check(re.search(STALLED, env.log_since(log1)) is None,
              "the port's next frontend: its full eventfd is polled first, nothing waits")


@eventfd_stall_case('error fd: blocking eventfd at 2^64-2, O_NONBLOCK cleared after; the ring '
                    'breaks: the watchdog ends the write, the frontend is dropped',
                    'perr', 'SET_VRING_ERR')
def error_fd_stalls(env, res, path, log0, f):
    """Each refused ring message signals the error fd: without the drop, a frontend without
    REPLY_ACK could hold its worker 200 ms per message."""
    r = f.rings[TX_Q]
    r.set_avail_idx(r.avail_idx + r.num + 1)
    r.kick()  # broken ring: the error fd is signalled
    expect_stall_dropped(env, res, f, log0, 'error')


class _FdCloser:
    def __init__(self, fds):
        self.fds = fds

    def close(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


DS_PROTO = (1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_DEVICE_STATE)


@case('device state pipe with O_NONBLOCK cleared after SET_DEVICE_STATE_FD',
      log=r'device state load failed')
def state_fd_blocking(env, res):
    """Load: the frontend writes one byte and keeps the pipe open; vnetd reads until the pipe is
    empty, which with the flag cleared would wait for more."""
    f = env.frontend(protocol=DS_PROTO)
    f.negotiate()
    rd, wr = os.pipe()
    env.hostile.append(_FdCloser([rd, wr]))
    reply = struct.unpack('=Q', f.vu.request(vu.SET_DEVICE_STATE_FD, struct.pack('=II', 1, 0),
                                             [rd]))[0]
    res.check(reply == 1 << 8, 'SET_DEVICE_STATE_FD load accepted (reply 0x%x)' % reply)
    os.set_blocking(rd, True)
    os.write(wr, b'\x01')
    time.sleep(0.2)
    expect_alive_port(env, res, 'a blocking device state pipe')
    try:
        f.vu.sock.settimeout(PROMPT)
        check = struct.unpack('=Q', f.vu.request(vu.CHECK_DEVICE_STATE))[0]
        res.check(check == 1, 'CHECK_DEVICE_STATE answers: the 1-byte state is refused (%r)'
                  % check)
    except (VhostUserError, OSError) as e:
        res.check(False, 'CHECK_DEVICE_STATE answers (%s)' % e)
# ---- guest memory caps (max-mem=, --max-guest-mem) and dead kick fds ----
TIB, GIB, MIB = 1 << 40, 1 << 30, 1 << 20


def sparse_fds(sizes):
    """memfds of these sizes, never touched: they cost nothing, mapped or not."""
    fds = []
    for n in sizes:
        fd = os.memfd_create('vnetd-test-sparse', os.MFD_CLOEXEC)
        os.ftruncate(fd, n)
        fds.append(fd)
    return fds


def vm_size_kib(env):
    with open('/proc/%d/status' % env.pid()) as f:
        return int(next(l for l in f if l.startswith('VmSize:')).split()[1])


def table(sizes):
    """Regions one after another in guest-physical and user address space."""
    regions, gpa = [], 0x100000000
    for n in sizes:
        regions.append((gpa, n, 0x100000000000 + gpa, 0))
        gpa += n
    return regions


@case('SET_MEM_TABLE of 4 sparse 1 TiB memfds (over max-mem), a 4 GiB table on p1 meanwhile',
      log=r"SET_MEM_TABLE: refused 4T of guest memory \(0 mapped besides\): over the port's max-mem=2T")
def mem_over_cap(env, res):
    c = mem_client(env)
    small = GuestMemory(1 << 20)
    env.hostile.append(small)
    vu.ok(c.set_mem_table([small.region()], [small.fd]), 'SET_MEM_TABLE of 1 MiB first')
    before = vm_size_kib(env)
    fds = sparse_fds([TIB] * 4)
    try:
        refused(res, c.set_mem_table(table([TIB] * 4), fds), '4 x 1 TiB (default max-mem=2T)')
    finally:
        for fd in fds:
            os.close(fd)
    grown = vm_size_kib(env) - before
    res.check(grown < 1 << 20, 'vnetd did not map it (VmSize grew by %d KiB)' % grown)
    expect_alive_conn(res, c, 'a table over max-mem')
    res.check(sum('vnetd-test-guest' in m for m in env.memfd_maps()) == 1,
              'p0 keeps its previous 1 MiB table mapped')
    # Another tenant, while the hostile frontend stays connected: an ordinary 4 GiB guest.
    c1 = env.client(1)
    c1.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
    fds = sparse_fds([4 * GIB])
    try:
        ack = c1.set_mem_table(table([4 * GIB]), fds)
    finally:
        os.close(fds[0])
    res.check(ack == 0, 'p1: a 4 GiB SET_MEM_TABLE maps (REPLY_ACK %r)' % ack)


@case('port-add with max-mem=64M: a 128 MiB table refused, 32 MiB maps',
      log=r"SET_MEM_TABLE: refused 128M of guest memory \(0 mapped besides\): over the port's "
          r"max-mem=64M")
def mem_port_key(env, res):
    sock = os.path.join(env.wd, 'p-maxmem.sock')
    r = env.vd.ctl('port-add', 'socket=%s,switch,max-mem=64M' % sock, check=False)
    if not res.check(r.returncode == 0, 'port-add with max-mem=64M (%s)' % (r.stdout + r.stderr).strip()):
        return
    name = r.stdout.strip()
    try:
        c = VhostUserClient(sock)
        env.hostile.append(c)
        c.set_protocol_features(1 << vu.PROTOCOL_F_REPLY_ACK)
        vu.ok(c.set_owner(), 'SET_OWNER')
        fds = sparse_fds([128 * MIB, 32 * MIB])
        try:
            refused(res, c.set_mem_table(table([128 * MIB]), fds[:1]), '128 MiB on max-mem=64M')
            ack = c.set_mem_table(table([32 * MIB]), fds[1:])
            res.check(ack == 0, '32 MiB on max-mem=64M maps (REPLY_ACK %r)' % ack)
        finally:
            for fd in fds:
                os.close(fd)
        expect_alive_conn(res, c, 'a table over max-mem=64M')
    finally:
        env.close_hostile()
        r = env.vd.ctl('port-del', name, check=False)
        res.check(r.returncode == 0, 'port-del %s' % name)
        deadline = time.monotonic() + 2.0
        while name in env.vd.port_info() and time.monotonic() < deadline:
            time.sleep(0.05)


# ---- memory slots (CONFIGURE_MEM_SLOTS): ADD_MEM_REG / REM_MEM_REG ----
SLOTS = (1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_CONFIGURE_MEM_SLOTS)


def slots_client(env):
    c = env.client()
    vu.ok(c.set_protocol_features(SLOTS), 'SET_PROTOCOL_FEATURES with CONFIGURE_MEM_SLOTS')
    return c


def slot(i, size=1 << 12):
    """Region i: 1 MiB apart in guest-physical and user address space."""
    return (0x100000000 + (i << 20), size, 0x200000000000 + (i << 20), 0)


@case('ADD_MEM_REG without CONFIGURE_MEM_SLOTS negotiated',
      log=r'ADD_MEM_REG without CONFIGURE_MEM_SLOTS negotiated')
def add_reg_not_negotiated(env, res):
    c = mem_client(env)
    fds = sparse_fds([1 << 20])
    try:
        refused(res, c.add_mem_reg(slot(0, 1 << 20), fds[0]), 'ADD_MEM_REG')
    finally:
        os.close(fds[0])
    expect_alive_conn(res, c, 'ADD_MEM_REG not negotiated')
    res.check(not env.memfd_maps(), 'nothing mapped')


@case('ADD_MEM_REG of overlapping regions (guest and user addresses)',
      log=r'ADD_MEM_REG: region at guest address 0x[0-9a-f]+ \(\d+ bytes\) overlaps another')
def add_reg_overlap(env, res):
    c = slots_client(env)
    fds = sparse_fds([4 << 20])
    try:
        vu.ok(c.add_mem_reg(slot(0, 2 << 20), fds[0]), 'ADD_MEM_REG of 2 MiB')
        g, n, u, o = slot(0, 2 << 20)
        refused(res, c.add_mem_reg((g + (1 << 20), 2 << 20, u + (64 << 20), 0), fds[0]),
                'a region overlapping in guest addresses')
        refused(res, c.add_mem_reg((g + (64 << 20), 2 << 20, u + (2 << 20) - 1, 0), fds[0]),
                'a region overlapping in user addresses')
        refused(res, c.add_mem_reg(slot(0, 2 << 20), fds[0]), 'the same region again')
        vu.ok(c.add_mem_reg((g + (2 << 20), 1 << 20, u + (2 << 20), 0), fds[0]),
              'an adjacent region')
    finally:
        os.close(fds[0])
    res.check(sum('vnetd-test-sparse' in m for m in env.memfd_maps()) == 2,
              'two regions mapped, the refused ones not')
    expect_alive_conn(res, c, 'overlapping ADD_MEM_REG')


@case('REM_MEM_REG of a region never added (with an fd, which vnetd closes)',
      log=r'REM_MEM_REG: no region at guest address 0x[0-9a-f]+ of \d+ bytes')
def rem_reg_unknown(env, res):
    c = slots_client(env)
    fds = sparse_fds([1 << 20])
    try:
        vu.ok(c.add_mem_reg(slot(0, 1 << 20), fds[0]), 'ADD_MEM_REG')
        refused(res, c.rem_mem_reg(slot(1, 1 << 20), fds[0]), 'REM_MEM_REG of another region')
        g, n, u, o = slot(0, 1 << 20)
        refused(res, c.rem_mem_reg((g, n, u + 4096, 0)), 'REM_MEM_REG with the wrong user address')
        refused(res, c.rem_mem_reg((g, n // 2, u, 0)), 'REM_MEM_REG with the wrong size')
        res.check(c.rem_mem_reg((g, n, u, 4096), fds[0]) == 0,
                  'REM_MEM_REG of the region (mmap offset ignored, an fd with it) acked')
        refused(res, c.rem_mem_reg(slot(0, 1 << 20)), 'REM_MEM_REG of it again')
    finally:
        os.close(fds[0])
    res.check(not env.memfd_maps(), 'the region is unmapped')
    expect_alive_conn(res, c, 'REM_MEM_REG of unknown regions')


@case('ADD_MEM_REG beyond the port\'s memory slots (default max-mem-slots=32)',
      log=r'ADD_MEM_REG: all 32 memory slots in use')
def add_reg_beyond_cap(env, res):
    c = slots_client(env)
    res.check(c.get_max_mem_slots() == 32, 'GET_MAX_MEM_SLOTS answers the port\'s 32')
    fds = sparse_fds([1 << 12])
    try:
        acks = [c.add_mem_reg(slot(i), fds[0]) for i in range(32)]
        res.check(acks == [0] * 32, '32 regions added (%d refused)' % sum(a != 0 for a in acks))
        refused(res, c.add_mem_reg(slot(32), fds[0]), 'the 33rd region')
        vu.ok(c.rem_mem_reg(slot(10)), 'REM_MEM_REG of one')
        res.check(c.add_mem_reg(slot(32), fds[0]) == 0, 'then the 33rd fits in its slot')
    finally:
        os.close(fds[0])
    res.check(sum('vnetd-test-sparse' in m for m in env.memfd_maps()) == 32,
              '32 regions mapped')
    expect_alive_conn(res, c, '32 memory slots')


@case('REM_MEM_REG of the region a running queue\'s rings live in',
      log=r'queue 1: rings not usable( \(no guest memory left\))?, queue stays stopped')
def rem_reg_in_use(env, res):
    f = env.frontend(protocol=SLOTS).setup()  # memory by ADD_MEM_REG, as QEMU does
    res.check(env.wait_queue('p0', TX_Q, 'started', True)['started'], 'TX queue running')
    vu.ok(f.vu.rem_mem_reg(f.mem.region()), 'REM_MEM_REG of the rings\' region')
    for q in (RX_Q, TX_Q):
        st = env.wait_queue('p0', q, 'started', False)
        res.check(not st['started'], 'p0 queue %d stopped: it never touches the unmapped memory' % q)
    res.check(not any('vnetd-test-guest' in m for m in env.memfd_maps()),
              'the region is unmapped while the frontend stays connected')
    # A frame for p0 now finds no RX ring to touch; TX kicks find a stopped queue.
    f.rings[TX_Q].kick()
    env.p1_broadcast()
    expect_alive_conn(res, f.vu, 'REM_MEM_REG of an in-use region')


@case('ADD_MEM_REG over the port\'s max-mem (1 TiB mapped, 2 TiB more)',
      log=r"ADD_MEM_REG: refused 2T of guest memory \(1T mapped besides\): over the port's "
          r"max-mem=2T")
def add_reg_over_cap(env, res):
    c = slots_client(env)
    before = vm_size_kib(env)
    fds = sparse_fds([TIB, 2 * TIB])
    try:
        vu.ok(c.add_mem_reg((1 << 44, TIB, 1 << 45, 0), fds[0]), 'ADD_MEM_REG of 1 TiB')
        refused(res, c.add_mem_reg((3 << 44, 2 * TIB, 3 << 45, 0), fds[1]), '2 TiB more')
    finally:
        for fd in fds:
            os.close(fd)
    grown = vm_size_kib(env) - before
    res.check(grown < (TIB >> 10) + (1 << 20), 'the 2 TiB were never mapped (VmSize grew by %d KiB)'
              % grown)
    expect_alive_conn(res, c, 'ADD_MEM_REG over max-mem')


def cpu_seconds(env):
    with open('/proc/%d/stat' % env.pid()) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')  # utime + stime


@case('kick fd: a pipe whose write end is closed (EPOLLHUP for ever)',
      log=r'queue 1: kick fd hung up \(EPOLLHUP\); queue stopped')
def kick_pipe_hup(env, res):
    f = env.frontend().setup()
    mark = env.log_size()
    r, w = os.pipe()
    try:
        vu.ok(f.vu.set_vring_kick(TX_Q, r), 'SET_VRING_KICK (a pipe)')
    finally:
        os.close(w)
        os.close(r)
    cpu0, t0 = cpu_seconds(env), time.monotonic()
    time.sleep(2.0)
    load = (cpu_seconds(env) - cpu0) / (time.monotonic() - t0)
    res.check(load < 0.5, 'vnetd CPU over 2 s with the dead kick fd: %.0f%% of a core (< 50%%)'
              % (load * 100))
    expect_broken(env, res, TX_Q, 'its kick fd hung up')
    lines = len(re.findall(r'kick fd hung up', env.log_since(mark)))
    res.check(lines == 1, 'reported once (%d log lines)' % lines)
    expect_alive_conn(res, f.vu, 'a dead kick fd')
    res.check(f.coal_tx_set(2, 2) == vu.VIRTIO_NET_OK, 'the control queue still works')


def _cpu_share(pid, seconds=2.0):
    """vnetd's CPU over `seconds`, in cores."""
    def ticks():
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return int(fields[11]) + int(fields[12])
    t0, c0 = time.monotonic(), ticks()
    time.sleep(seconds)
    return (ticks() - c0) / os.sysconf('SC_CLK_TCK') / (time.monotonic() - t0)


@case('listeners while vnetd is out of fds (accept fails with EMFILE): vhost-user, control, metrics',
      nolog='the lines are checked in the own vnetd\'s log')
def listener_out_of_fds(env, res):
    import socket as _socket
    # The fds a one-port vnetd with --metrics holds when idle, then one with exactly that
    # RLIMIT_NOFILE: every accept fails.
    args = lambda s: ['--port', 'socket=%s,switch' % s, '--metrics', '127.0.0.1:0']  # noqa: E731
    wd = workdir('hostile-emfile')
    vd = OwnVnetd(wd, args(os.path.join(wd, 'p0.sock')))
    if not res.check(vd.ready(), 'own vnetd started'):
        check_sigterm(res, vd, 'sizing run')
        return
    fds = len(os.listdir('/proc/%d/fd' % vd.proc.pid))
    check_sigterm(res, vd, 'sizing run')
    wd = workdir('hostile-emfile')
    sock = os.path.join(wd, 'p0.sock')
    vd = OwnVnetd(wd, args(sock), wrap=['prlimit', '--nofile=%d:%d' % (fds, fds), '--'])
    try:
        if not res.check(vd.ready(), 'own vnetd started with RLIMIT_NOFILE %d' % fds):
            return
        m = re.search(r'metrics: http://127\.0\.0\.1:(\d+)/metrics', vd.log_text())
        if not res.check(bool(m), 'metrics port in the log'):
            return
        # Spinning takes a whole core when the machine is idle, ~40 % on a loaded 2-core one.
        held = [VhostUserClient(sock)]
        load = _cpu_share(vd.proc.pid)
        res.check(load < 0.15, 'a vhost-user connection it cannot accept: vnetd CPU %.0f%% of a '
                  'core over 2 s (< 15%%)' % (load * 100))
        for what, family, addr in (('control', _socket.AF_UNIX, vd.ctl),
                                   ('metrics', _socket.AF_INET, ('127.0.0.1', int(m.group(1))))):
            c = _socket.socket(family, _socket.SOCK_STREAM)
            c.connect(addr)
            held.append(c)
            load = _cpu_share(vd.proc.pid)
            res.check(load < 0.15, 'and a %s connection it cannot accept: vnetd CPU %.0f%% of a '
                      'core over 2 s (< 15%%)' % (what, load * 100))
        for c in held:
            c.close()
        text = vd.log_text()
        for line in ('cannot accept a frontend: Too many open files',
                     'control: cannot accept a client: Too many open files',
                     'metrics: cannot accept a connection: Too many open files'):
            res.check(line in text, 'logged: %s' % line)
    finally:
        check_sigterm(res, vd, 'out of fds')


# ---- tenants: port security (each switch port sends only from its own mac=) ----
def switch_counters(env, port):
    return env._ctl({'cmd': 'stats', 'port': port})['ports'][0]['switch']


def rx_one(f, size=2048):
    """One RX buffer for f; returns a function: the frame it received (None: none in timeout)."""
    gpa = f.mem.alloc(size)
    ring = f.rings[RX_Q]
    ring.put_avail(ring.add_chain([(gpa, size, True)]))
    ring.kick()

    def got(timeout=1.0):
        u = ring.get_used(timeout)
        return None if u is None else f.mem.read(gpa, u[1])[vu.NET_HDR_LEN:]
    return got


def victim_and_attacker(env):
    """p0 (the victim) up with its MAC learnt; p1 (the attacker) up."""
    f0 = env.frontend(0).setup()
    f0.transmit(ether_frame(BCAST, MACS[0]))
    f1 = env.frontend(1).setup()
    return f0, f1


@case('port security: spoofed source MAC', log=r'switch p1: dropped a frame from source MAC '
      r'52:54:00:77:00:01: not the port')
def spoofed_source(env, res):
    f0, f1 = victim_and_attacker(env)
    before = switch_counters(env, 'p1')
    got = rx_one(f0)
    res.check(f1.transmit(ether_frame(BCAST, MACS[0], b'spoofed')), 'p1 sends as p0 (completed)')
    res.check(got(0.3) is None, 'p0 does not get the spoofed frame')
    after = switch_counters(env, 'p1')
    res.check(after['spoofed'] == before['spoofed'] + 1 and after['port_security'],
              'p1: spoofed %d -> %d (port security on)' % (before['spoofed'], after['spoofed']))
    want = ether_frame(MACS[0], MACS[1], b'for the victim')
    f1.transmit(want)  # had the FDB moved p0's MAC to p1, this would be filtered
    res.check(got(1.0) == want, 'p0 still gets its unicast, byte-exact')


@case('port security: multicast source MAC', log=r'switch p1: dropped a frame from source MAC '
      r'01:00:5e:00:00:01')
def multicast_source(env, res):
    f0, f1 = victim_and_attacker(env)
    before = switch_counters(env, 'p1')['spoofed']
    got = rx_one(f0)
    f1.transmit(ether_frame(BCAST, '01:00:5e:00:00:01'))
    res.check(got(0.3) is None, 'p0 does not get a frame from a multicast source')
    after = switch_counters(env, 'p1')['spoofed']
    res.check(after == before + 1, 'p1: spoofed %d -> %d' % (before, after))


@case('port security: MAC flapping between two ports', log=r'switch p1: dropped a frame from '
      r'source MAC 52:54:00:77:00:01')
def mac_flapping(env, res):
    f0, f1 = victim_and_attacker(env)
    before = switch_counters(env, 'p1')['spoofed']
    for i in range(50):
        f1.transmit(ether_frame(BCAST, MACS[0], b'flap %d' % i))
        f0.transmit(ether_frame(BCAST, MACS[0], b'back %d' % i))
    after = switch_counters(env, 'p1')
    res.check(after['spoofed'] == before + 50, 'p1: all 50 flaps dropped (spoofed %d -> %d)'
              % (before, after['spoofed']))
    res.check(after['macs'] <= 1, 'p1 holds at most its own MAC in the FDB (%d)' % after['macs'])
    got = rx_one(f0)
    want = ether_frame(MACS[0], MACS[1], b'after the flapping')
    f1.transmit(want)
    res.check(got(1.0) == want, 'p0 gets its unicast: its MAC never moved')


# ---- tenants: VLANs (two access ports vlan=10 of segment h, added for the case) ----
@case('vlan: a VLAN-tagged frame from an access port', log=r'switch p\d+: dropped a VLAN-tagged '
      r'frame \(ethertype 0x8100\) from an access port')
def vlan_tagged_from_access_port(env, res):
    macs = ['52:54:00:77:10:01', '52:54:00:77:10:02']
    socks = [os.path.join(env.wd, 'vlan%d.sock' % i) for i in range(2)]
    names = []
    try:
        for sock, mac in zip(socks, macs):
            r = env.vd.ctl('port-add', 'socket=%s,switch=h,vlan=10,mac=%s' % (sock, mac),
                           check=False)
            if not res.check(r.returncode == 0, 'port-add switch=h,vlan=10 (%s)'
                             % (r.stdout + r.stderr).strip()):
                return
            names.append(r.stdout.strip())
        info = env.vd.port_info()
        res.check(all(info[n]['vlan'] == 10 and info[n]['segment'] == 'h' for n in names),
                  'vnetctl ports: segment h, vlan 10')
        res.check('h/vlan10' in env.vd.ctl('ports').stdout, 'vnetctl ports table: h/vlan10')
        fa, fb = (VirtioNetFrontend(s) for s in socks)
        env.hostile += [fa, fb]
        fa.setup()
        fb.setup()
        before = switch_counters(env, names[0])
        res.check(before['access'], '%s is an access port in stats' % names[0])
        got = rx_one(fb)
        # 802.1Q tag, VID 10, then the inner ethertype: the guest tries to pick its own VLAN.
        tagged = ether_frame(BCAST, macs[0], struct.pack('>HH', 10, 0x88b5) + b'tagged',
                             ethertype=0x8100)
        res.check(fa.transmit(tagged), '%s sends a tagged frame (completed)' % names[0])
        res.check(got(0.3) is None, 'the other access port does not get it')
        after = switch_counters(env, names[0])
        res.check(after['tagged_dropped'] == before['tagged_dropped'] + 1,
                  'tagged_dropped %d -> %d' % (before['tagged_dropped'], after['tagged_dropped']))
        want = ether_frame(BCAST, macs[0], b'untagged, in VLAN 10')
        fa.transmit(want)
        res.check(got(1.0) == want, 'an untagged frame reaches the other access port, byte-exact')
    finally:
        env.close_hostile()
        for name in names:
            r = env.vd.ctl('port-del', name, check=False)
            res.check(r.returncode == 0, 'port-del %s' % name)
        deadline = time.monotonic() + 2.0
        while any(n in env.vd.port_info() for n in names) and time.monotonic() < deadline:
            time.sleep(0.05)


# ---- tenants: storm control (p0 has flood-rate=P0_FLOOD_RATE) ----
def tx_burst(f, frame, n):
    """n copies of frame on f's TX ring, one buffer, kicked in batches; True if all completed."""
    ring = f.rings[TX_Q]
    gpa = f.mem.alloc(vu.NET_HDR_LEN + len(frame))
    f.mem.write(gpa, bytes(vu.NET_HDR_LEN) + frame)
    done = 0
    while done < n:
        batch = min(len(ring.free), n - done)
        for _ in range(batch):
            ring.put_avail(ring.add_chain([(gpa, vu.NET_HDR_LEN + len(frame), False)]))
        ring.kick()
        for _ in range(batch):
            if ring.get_used(2.0) is None:
                return False
        done += batch
    return True


@case('storm control: p0 floods broadcasts over its flood-rate', log=r'switch p0: floods '
      r'\(broadcast, multicast, unknown unicast\) over flood-rate=%d' % P0_FLOOD_RATE)
def storm_control(env, res):
    from tests.kit.hostile_env import P0_FLOOD_RATE as rate
    f1 = env.frontend(1).setup()
    f1.transmit(ether_frame(BCAST, MACS[1]))  # p1's MAC learnt
    f0 = env.frontend(0).setup()
    before = switch_counters(env, 'p0')
    n = 6 * rate
    t0 = time.monotonic()
    res.check(tx_burst(f0, ether_frame(BCAST, MACS[0], b'storm'), n),
              'p0: %d broadcasts sent (completed)' % n)
    dt = time.monotonic() - t0
    after = switch_counters(env, 'p0')
    dropped = after['storm_dropped'] - before['storm_dropped']
    # A full bucket, then the rate for the time it took; vnetd's switch reads a coarse clock
    # once per round (CLOCK_MONOTONIC_COARSE: a few ms a tick, more on a loaded host), so its
    # refills may run up to 50 ms ahead of this process's clock.
    allowed = rate * (1 + dt + 0.05) + 2
    res.check(after['flood_rate'] == rate, 'p0: flood_rate %d in stats' % after['flood_rate'])
    res.check(dropped >= n - allowed and dropped > 0,
              'p0: %d of %d floods dropped in %.2f s (at least %d)' % (dropped, n, dt, n - allowed))
    # p1 still gets p0's unicast: first take what the storm left queued for p1 (its guest had
    # no RX buffers), then the unicast is the next frame.
    ring, gpa, queued = f1.rings[RX_Q], f1.mem.alloc(2048), 0
    while queued <= 2 * 256:
        ring.put_avail(ring.add_chain([(gpa, 2048, True)]))
        ring.kick()
        if ring.get_used(0.3) is None:
            break
        queued += 1
    res.check(queued <= n - dropped, 'p1 got %d of the %d floods let through' % (queued, n - dropped))
    want = ether_frame(MACS[1], MACS[0], b'unicast after the storm')
    res.check(f0.transmit(want), 'p0: a unicast to p1 sent')
    u = ring.get_used(1.0)
    got = u is not None and f1.mem.read(gpa, u[1])[vu.NET_HDR_LEN:] == want
    res.check(got, 'p1 gets the unicast, byte-exact')


# ---- tenants: IP anti-spoofing (p0 has ips=P0_IPS) ----
def _mac(s):
    return bytes(int(x, 16) for x in s.split(':'))


def arp_frame(op, src_mac, sender_ip, target_ip, sha=None):
    """An ARP request (1) or reply (2), IPv4 over Ethernet, to broadcast; its sender MAC sha
    (default: the Ethernet source)."""
    import socket
    body = struct.pack('>HHBBH', 1, 0x0800, 6, 4, op) + _mac(sha or src_mac) + \
        socket.inet_aton(sender_ip) + bytes(6) + socket.inet_aton(target_ip)
    return ether_frame(BCAST, src_mac, body + bytes(18), ethertype=0x0806)


def na_frame(src_mac, src_ip, target_ip, lla=None):
    """An IPv6 neighbour advertisement (override) for target_ip, to ff02::1 (no checksum), its
    target link-layer address lla (default: the Ethernet source)."""
    import socket
    icmp = struct.pack('>BBHI', 136, 0, 0, 0x20000000) + socket.inet_pton(socket.AF_INET6, target_ip)
    icmp += struct.pack('>BB', 2, 1) + _mac(lla or src_mac)  # target link-layer address option
    ip6 = struct.pack('>IHBB', 0x60000000, len(icmp), 58, 255) + \
        socket.inet_pton(socket.AF_INET6, src_ip) + socket.inet_pton(socket.AF_INET6, 'ff02::1')
    return ether_frame('33:33:00:00:00:01', src_mac, ip6 + icmp, ethertype=0x86dd)


def ips_case(env, res, bad, good, what):
    """p0 sends `bad` (dropped, counted, p1 gets nothing), then `good` (p1 gets it byte-exact)."""
    f1 = env.frontend(1).setup()
    f0 = env.frontend(0).setup()
    before = switch_counters(env, 'p0')
    got = rx_one(f1)
    res.check(f0.transmit(bad), 'p0 sends %s (completed)' % what)
    res.check(got(0.3) is None, 'p1 does not get it')
    after = switch_counters(env, 'p0')
    res.check(after['ips'] == len(P0_IPS) and after['ip_spoofed'] == before['ip_spoofed'] + 1,
              'p0: ip_spoofed %d -> %d (ips %d)' % (before['ip_spoofed'], after['ip_spoofed'],
                                                    after['ips']))
    res.check(f0.transmit(good), 'p0 sends the same for its own address')
    res.check(got(1.0) == good, 'p1 gets that one, byte-exact')


@case('IP anti-spoofing: spoofed ARP', log=r'switch p0: dropped an ARP sender IP outside ips= '
      r'\(IP anti-spoofing\)')
def spoofed_arp(env, res):
    ips_case(env, res, arp_frame(2, MACS[0], '10.77.0.254', '10.77.0.2'),
             arp_frame(2, MACS[0], P0_IPS[0], '10.77.0.2'), 'an ARP reply claiming 10.77.0.254')


@case('IP anti-spoofing: spoofed ND', log=r'switch p0: dropped a neighbour advertisement target '
      r'outside ips= \(IP anti-spoofing\)')
def spoofed_nd(env, res):
    ips_case(env, res, na_frame(MACS[0], P0_IPS[1], 'fe80::1'),
             na_frame(MACS[0], P0_IPS[1], P0_IPS[1]), 'a neighbour advertisement for fe80::1')


# ---- tenants: port security inside ARP and ND (p1: port security, no ips=) ----
def lladdr_case(env, res, bad, good, what):
    """p1 sends `bad` from its own MAC, claiming p0's inside (dropped, counted, p0 gets nothing),
    then `good` (p0 gets it byte-exact)."""
    f0 = env.frontend(0).setup()
    f1 = env.frontend(1).setup()
    before = switch_counters(env, 'p1')
    got = rx_one(f0)
    res.check(f1.transmit(bad), 'p1 sends %s (completed)' % what)
    res.check(got(0.3) is None, 'p0 does not get it')
    after = switch_counters(env, 'p1')
    res.check(after['arp_nd_spoofed'] == before['arp_nd_spoofed'] + 1 and
              after['spoofed'] == before['spoofed'],
              'p1: arp_nd_spoofed %d -> %d' % (before['arp_nd_spoofed'], after['arp_nd_spoofed']))
    res.check(f1.transmit(good), 'p1 sends the same with its own MAC inside')
    res.check(got(1.0) == good, 'p0 gets that one, byte-exact')


@case('port security: ARP sender MAC of another port', log=r'switch p1: dropped an ARP sender MAC '
      r"not the port's \(port security\)")
def spoofed_arp_sha(env, res):
    lladdr_case(env, res, arp_frame(2, MACS[1], '10.77.0.9', '10.77.0.1', sha=MACS[0]),
                arp_frame(2, MACS[1], '10.77.0.9', '10.77.0.1'), "an ARP reply with p0's MAC")


@case('port security: ND link-layer address of another port',
      log=r"switch p1: dropped an ND target link-layer address not the port's \(port security\)")
def spoofed_nd_lla(env, res):
    lladdr_case(env, res, na_frame(MACS[1], 'fe80::77:2', 'fe80::77:2', lla=MACS[0]),
                na_frame(MACS[1], 'fe80::77:2', 'fe80::77:2'),
                "a neighbour advertisement with p0's MAC")


# =============================================================================================
def main():
    missing = prerequisites()
    if missing is not None:
        return missing
    return run_suite(Env(workdir('hostile')), CASES, 'hostile-frontend')


if __name__ == '__main__':
    sys.exit(main())
