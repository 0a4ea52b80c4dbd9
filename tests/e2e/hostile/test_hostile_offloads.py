# SPDX-License-Identifier: MIT
"""Hostile virtio-net offload headers on vnetd's switch ports, from Python drivers (no guest).

Three switch ports, each driven by tests/kit/vhost_user_client.py:
  A (p0) negotiates CSUM, HOST_TSO4/6, HOST_ECN and MRG_RXBUF: the sender;
  B (p1) negotiates MRG_RXBUF and no GUEST_* offload: the switch segments and checksums for it;
  C (p2) negotiates MRG_RXBUF, GUEST_CSUM and GUEST_TSO4/6 (not GUEST_ECN): it gets TCP GSO
         frames with their header, frames with ECN segmented.

Good cases: A's ~30 KB TCP GSO frames (IPv4, IPv6, ECN with CWR, behind two VLAN tags; in one
descriptor and in pieces) reach B as whole segments (IPv4 and TCP checksums checked here, each
at most gso_size + headers, the payload byte-exact, seq, IPv4 id, PSH/CWR where they belong) and
C as one frame with its header (byte-exact); a NEEDS_CSUM UDP frame reaches B with its checksum
completed and C as it was; the sender's hdr_len is only a hint, a one-segment GSO frame and a
1024-segment one are legal, so is the largest IPv4 packet (65549-byte frame); a GSO frame's
Ethernet padding is not part of what C gets (pkt_hdr_for(): o->frame_len bytes).

Hostile cases: each frame from A is broadcast (every receiver would get it), twice: in one
descriptor, then in pieces (the header alone, the Ethernet and IP headers cut at odd places).
It must be dropped by the device (src/dev/net_tx.c tx_hdr_refused(): A's TX queue "dropped"),
by the switch (pkt_offload_parse(): A's "offloads".bad_header) or, for non-IP frames port
security reads first, by port security (switch.arp_nd_spoofed), whichever the case says, with
its log line; then A's next good frame (a broadcast two-segment GSO frame) must be the first
thing B and C receive (two segments for B, one GSO frame for C), and nothing else arrives.
DATA_VALID set by the driver on TX is cleared: B never sees a flag (it negotiated no
GUEST_CSUM), C sees DATA_VALID only where the switch computed the checksum, NEEDS_CSUM only where
it took the offload. B's own NEEDS_CSUM (no CSUM negotiated) is dropped by its device. At the
end: bad_header equals the switch's drops, TX "dropped" the device's, and with port security's
they add up to every hostile frame sent; vnetd exits cleanly on SIGTERM (sanitizer builds: no
report). A frame whose header or data change while in flight is covered by unit tests
(tests/unit/pkt, the guest_race build), not here. About 15 s.

PYTHONPATH=. VNETD_BUILD=build python3 tests/e2e/hostile/test_hostile_offloads.py [case ...]
"""

import ipaddress
import os
import struct
import sys
import time
import traceback

from tests.kit import vhost_user_client as vu
from tests.kit.hostile_env import Env, Result, prerequisites
from tests.kit.harness import workdir
from tests.kit.vhost_user_client import RX_Q, TX_Q, VirtioNetFrontend, ether_frame

# ---- virtio-net ----
F_CSUM, F_GUEST_CSUM, F_GUEST_TSO4, F_GUEST_TSO6 = 0, 1, 7, 8
F_HOST_TSO4, F_HOST_TSO6, F_HOST_ECN = 11, 12, 13
NEEDS_CSUM, DATA_VALID = 1, 2
GSO_NONE, GSO_TCPV4, GSO_UDP, GSO_TCPV6, GSO_UDP_L4, GSO_ECN = 0, 1, 3, 4, 5, 0x80
VHDR = struct.Struct('<BBHHHHH')  # flags, gso_type, hdr_len, gso_size, csum_start, csum_offset, num_buffers

BASE = vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_NET_F_MRG_RXBUF)
FEAT_A = BASE | (1 << F_CSUM) | (1 << F_HOST_TSO4) | (1 << F_HOST_TSO6) | (1 << F_HOST_ECN)
FEAT_B = BASE
FEAT_C = BASE | (1 << F_GUEST_CSUM) | (1 << F_GUEST_TSO4) | (1 << F_GUEST_TSO6)

MACS = ['52:54:00:42:00:0a', '52:54:00:42:00:0b', '52:54:00:42:00:0c']
BCAST = 'ff:ff:ff:ff:ff:ff'
IP4 = ['10.42.0.10', '10.42.0.11', '10.42.0.12']
IP6 = ['fd42::a', 'fd42::b', 'fd42::c']
MSS = 1448
ETH, IPV4, IPV6, TCPH, UDPH = 14, 20, 40, 20, 8
TCP_FIN, TCP_PSH, TCP_ACK, TCP_CWR = 0x01, 0x08, 0x10, 0x80
TS_OPT = b'\x01\x01\x08\x0a' + struct.pack('>II', 0x01020304, 0x05060708)  # NOP NOP timestamps
QSIZE = 256
CASE_GAP = 0.4  # s between hostile cases (2 lines each): vnetd logs 5 lines/s per call site
DEV, SW, PSEC = 'device', 'switch', 'port security'
LOGS = {DEV: r'queue 1: TX packet dropped: %s',
        SW: r'switch p0: dropped a frame whose offload header is bad: %s',
        PSEC: r'switch p0: dropped %s \(port security\)'}


# =============================================================================================
# Frames and checksums
# =============================================================================================
def mac(s):
    return bytes(int(x, 16) for x in s.split(':'))


def ip4(s):
    return bytes(int(x) for x in s.split('.'))


def ip6(s):
    return ipaddress.IPv6Address(s).packed


def sum16(data, s=0):
    """The Internet checksum's one's-complement sum (RFC 1071), not folded, not complemented."""
    if len(data) % 2:
        data += b'\0'
    for (w,) in struct.iter_unpack('>H', data):
        s += w
    return s


def fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def csum(data, s=0):
    return ~fold(sum16(data, s)) & 0xffff


def pseudo(src, dst, proto, length):
    """The pseudo-header's sum (IPv4 when the addresses are 4 bytes, else IPv6)."""
    if len(src) == 4:
        return sum16(src + dst + struct.pack('>BBH', 0, proto, length))
    return sum16(src + dst + struct.pack('>IxxxB', length, proto))


def vhdr(flags=0, gso_type=GSO_NONE, hdr_len=0, gso_size=0, csum_start=0, csum_offset=0):
    return VHDR.pack(flags, gso_type, hdr_len, gso_size, csum_start, csum_offset, 0)


def tcp_frame(dst, payload, v6=False, seq=1000, flags=TCP_ACK | TCP_PSH, ip_id=0x4200,
              frag=0x4000, proto=6, ihl=5, tot_len=None, doff=None, opts=TS_OPT, seed=True,
              src=MACS[0], ethertype=None, cut=None, pad=b'', vlans=()):
    """Ethernet + IPv4 (or IPv6) + TCP (timestamps option) + payload from A. seed: the TCP
    checksum field holds the pseudo-header seed (what a driver asking for NEEDS_CSUM writes),
    else the whole checksum. The other arguments make it wrong on purpose; cut: keep only the
    first `cut` bytes of the frame; pad: bytes after the IP packet (Ethernet padding); vlans:
    802.1Q tags (VLAN ids) after the MAC addresses."""
    sa, da = (ip6(IP6[0]), ip6(IP6[1])) if v6 else (ip4(IP4[0]), ip4(IP4[1]))
    doff = (TCPH + len(opts)) // 4 if doff is None else doff
    tcp_len = TCPH + len(opts) + len(payload)
    tcp = struct.pack('>HHIIBBHHH', 40000, 5201, seq, 77, doff << 4, flags, 502, 0, 0) + opts
    if seed:
        c = fold(pseudo(sa, da, 6, tcp_len))
    else:
        c = csum(tcp + payload, pseudo(sa, da, 6, tcp_len))
    tcp = tcp[:16] + struct.pack('>H', c) + tcp[18:]
    if v6:
        plen = tcp_len if tot_len is None else tot_len
        l3 = struct.pack('>IHBB', 0x60000000, plen, proto, 64) + sa + da
        et = 0x86dd
    else:
        tot = ihl * 4 + tcp_len if tot_len is None else tot_len
        l3 = struct.pack('>BBHHHBBH', 0x40 | ihl, 0, tot, ip_id, frag, 64, proto, 0) + sa + da
        l3 += bytes(max(0, ihl * 4 - IPV4))
        l3 = l3[:10] + struct.pack('>H', csum(l3[:max(ihl * 4, IPV4)])) + l3[12:]
        et = 0x0800
    tags = b''.join(struct.pack('>HH', 0x8100, v) for v in vlans)
    f = mac(dst) + mac(src) + tags + struct.pack('>H', ethertype or et) + l3 + tcp + payload + pad
    return f if cut is None else f[:cut]


def udp_frame(dst, payload, seed=True, src=MACS[0], bad_csum=False):
    """Ethernet + IPv4 + UDP from A; seed: the checksum field holds the pseudo-header seed."""
    sa, da = ip4(IP4[0]), ip4(IP4[1])
    ulen = UDPH + len(payload)
    c = fold(pseudo(sa, da, 17, ulen)) if seed else \
        csum(struct.pack('>HHHH', 5353, 5354, ulen, 0) + payload, pseudo(sa, da, 17, ulen))
    if bad_csum:
        c ^= 0x5a5a
    udp = struct.pack('>HHHH', 5353, 5354, ulen, c)
    l3 = struct.pack('>BBHHHBBH', 0x45, 0, IPV4 + ulen, 0x1111, 0x4000, 64, 17, 0) + sa + da
    l3 = l3[:10] + struct.pack('>H', csum(l3)) + l3[12:]
    return mac(dst) + mac(src) + b'\x08\x00' + l3 + udp + payload


def tcp_hdr(v6=False, gso_size=MSS, ecn=False, flags=NEEDS_CSUM, hdr_len=None, opts=TS_OPT,
            csum_offset=16, gso_type=None, vlans=0):
    """The header a driver writes for tcp_frame(): NEEDS_CSUM at the TCP checksum, GSO."""
    l4 = ETH + 4 * vlans + (IPV6 if v6 else IPV4)
    gt = (GSO_TCPV6 if v6 else GSO_TCPV4) | (GSO_ECN if ecn else 0) if gso_type is None else gso_type
    return vhdr(flags, gt, l4 + TCPH + len(opts) if hdr_len is None else hdr_len, gso_size, l4,
                csum_offset)


def payload_bytes(n, tag):
    """n bytes that say where they are: a shifted or lost segment shows."""
    b = (tag.encode() + b':' + bytes(range(256))) * (n // 200 + 2)
    return b[:n]


# =============================================================================================
# Parsing what a receiver got
# =============================================================================================
def parse(frame):
    """{'v6', 'ip' (the L3 header), 'l4' (offset), 'proto', ...} of an Ethernet (802.1Q
    tags) + IP frame."""
    l3 = ETH
    et = struct.unpack('>H', frame[12:14])[0]
    while et == 0x8100 and len(frame) >= l3 + 4:
        et = struct.unpack('>H', frame[l3 + 2:l3 + 4])[0]
        l3 += 4
    p = {'v6': et == 0x86dd, 'l3': l3}
    if et == 0x0800:
        ihl = (frame[l3] & 15) * 4
        p.update(ip=frame[l3:l3 + ihl], l4=l3 + ihl, proto=frame[l3 + 9],
                 tot=struct.unpack('>H', frame[l3 + 2:l3 + 4])[0],
                 ip_id=struct.unpack('>H', frame[l3 + 4:l3 + 6])[0],
                 src=frame[l3 + 12:l3 + 16], dst=frame[l3 + 16:l3 + 20])
        p['l4_len'] = p['tot'] - ihl
    elif et == 0x86dd:
        plen = struct.unpack('>H', frame[l3 + 4:l3 + 6])[0]
        p.update(ip=frame[l3:l3 + IPV6], l4=l3 + IPV6, proto=frame[l3 + 6], tot=IPV6 + plen,
                 src=frame[l3 + 8:l3 + 24], dst=frame[l3 + 24:l3 + 40], l4_len=plen)
    else:
        return None
    l4 = frame[p['l4']:p['l4'] + p['l4_len']]
    p['l4_bytes'] = l4
    p['l4_ok'] = csum(l4, pseudo(p['src'], p['dst'], p['proto'], len(l4))) == 0
    p['ip_ok'] = p['v6'] or csum(p['ip']) == 0
    if p['proto'] == 6:
        doff = (l4[12] >> 4) * 4
        p.update(seq=struct.unpack('>I', l4[4:8])[0], tcp_flags=l4[13], data=l4[doff:],
                 hlen=p['l4'] + doff)
    elif p['proto'] == 17:
        p.update(data=l4[UDPH:], udp_csum=struct.unpack('>H', l4[6:8])[0])
    return p


# =============================================================================================
# Drivers
# =============================================================================================
class Rx:
    """A driver's RX ring kept full of MRG_RXBUF buffers; frame() reads the next frame whole
    (num_buffers buffers) and posts its buffers again."""

    def __init__(self, f, n, size):
        self.f, self.ring, self.size, self.bufs = f, f.rings[RX_Q], size, {}
        for _ in range(n):
            self._post(f.mem.alloc(size))
        self.ring.kick()

    def _post(self, gpa):
        head = self.ring.add_chain([(gpa, self.size, True)])
        self.bufs[head] = gpa
        self.ring.put_avail(head)

    def _take(self, timeout):
        u = self.ring.get_used(timeout)
        if u is None:
            return None
        gpa = self.bufs.pop(u[0])
        data = self.f.mem.read(gpa, min(u[1], self.size))
        self._post(gpa)
        return data

    def frame(self, timeout=1.0):
        """(header fields dict, frame bytes), or None if nothing came within timeout."""
        first = self._take(timeout)
        if first is None:
            return None
        flags, gso_type, hdr_len, gso_size, cs, co, nb = VHDR.unpack(first[:VHDR.size])
        data = first[VHDR.size:]
        for _ in range(max(nb, 1) - 1):
            more = self._take(1.0)
            if more is None:
                raise vu.VhostUserError('num_buffers %d: a buffer never came' % nb)
            data += more
        self.ring.kick()
        return dict(flags=flags, gso_type=gso_type, hdr_len=hdr_len, gso_size=gso_size,
                    csum_start=cs, csum_offset=co, num_buffers=nb), data

    def frames(self, n, timeout=1.0):
        out = []
        for _ in range(n):
            got = self.frame(timeout)
            if got is None:
                break
            out.append(got)
        return out

    def drain(self, timeout=0.05):
        """Whatever else arrives within timeout (after the last frame)."""
        out = []
        while True:
            got = self.frame(timeout)
            if got is None:
                return out
            out.append(got)


SPLIT = (VHDR.size, 5, 31, 8192)  # split=True: the header alone, 5 bytes, 31, then 8 KB pieces


class Tx:
    """A driver's TX ring: one buffer (reused: send() waits until the device used it)."""

    def __init__(self, f, cap=70 * 1024):
        self.f, self.ring, self.cap = f, f.rings[TX_Q], cap
        self.gpa = f.mem.alloc(cap + 64 * 16)

    def send(self, hdr, frame, split=False, timeout=2.0):
        """One descriptor with header and frame; split: a chain of SPLIT's pieces, 64 bytes
        apart in memory (the header alone, the Ethernet and IP headers cut at odd places)."""
        data = hdr + frame
        if len(data) > self.cap:
            raise vu.VhostUserError('frame of %d bytes over the TX buffer' % len(frame))
        bufs, at, gpa, k = [], 0, self.gpa, 0
        while at < len(data) or not bufs:
            n = min(SPLIT[min(k, len(SPLIT) - 1)] if split else len(data), len(data) - at)
            self.f.mem.write(gpa, data[at:at + n])
            bufs.append((gpa, n, False))
            at, gpa, k = at + n, gpa + n + 64, k + 1
        self.ring.put_avail(self.ring.add_chain(bufs))
        self.ring.kick()
        return self.ring.get_used(timeout) is not None


class OffloadEnv(Env):
    """hostile_env.Env with three switch ports (p0 = A, p1 = B, p2 = C) and their drivers."""

    def __init__(self, wd):
        super().__init__(wd)
        self.socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(3)]
        self.drivers = []

    def port_specs(self):
        return ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(self.socks, MACS)]

    def connect(self):
        """A, B, C set up; B and C announce their MACs (the switch learns them)."""
        for i, feat, mem in ((0, FEAT_A, 2), (1, FEAT_B, 2), (2, FEAT_C, 4)):
            self.drivers.append(VirtioNetFrontend(self.socks[i], features=feat, queue_size=QSIZE,
                                                  mem_size=mem << 20))
            self.drivers[-1].setup()
        self.a, self.b, self.c = self.drivers
        self.a_rx = Rx(self.a, 32, 2048)
        self.b_rx = Rx(self.b, QSIZE, 2048)
        self.c_rx = Rx(self.c, 192, 4096)
        self.a_tx, self.b_tx, self.c_tx = Tx(self.a), Tx(self.b, 4096), Tx(self.c, 4096)
        for tx, m in ((self.b_tx, MACS[1]), (self.c_tx, MACS[2])):
            tx.send(vhdr(), ether_frame(BCAST, m, b'learn me' + bytes(60)))
        self.b_rx.frames(1)
        self.c_rx.frames(1)
        self.a_rx.drain()

    def disconnect(self):
        for d in self.drivers:
            d.close()
        self.drivers = []

    def counters(self):
        """A's TX dropped and bad_header; B's and C's offload counters (one stats request)."""
        ports = {p['name']: p for p in self._ctl({'cmd': 'stats'})['ports']}
        a, b, c = ports['p0'], ports['p1'], ports['p2']
        txq = {q['index']: q for q in a['queues']}[TX_Q]
        return dict(tx_dropped=txq['dropped'], bad_header=a['offloads']['bad_header'],
                    psec=a['switch']['arp_nd_spoofed'],
                    b=b['offloads'], c=c['offloads'],
                    b_tx_dropped={q['index']: q for q in b['queues']}[TX_Q]['dropped'])


# =============================================================================================
# Checks
# =============================================================================================
def hdr_allowed(who, h):
    """Why a header is one the receiver must never see (None: fine). B took no GUEST_* offload:
    flags and gso_type 0. C took GUEST_CSUM and GUEST_TSO4/6, not GUEST_ECN: NEEDS_CSUM or
    DATA_VALID (not both), a TCPv4/v6 GSO type only with NEEDS_CSUM, never ECN."""
    if who == 'B':
        if h['flags'] or h['gso_type']:
            return 'B (no GUEST_* offloads) got flags 0x%x gso_type 0x%x' % (h['flags'], h['gso_type'])
        return None
    if h['flags'] & ~(NEEDS_CSUM | DATA_VALID) or h['flags'] == NEEDS_CSUM | DATA_VALID:
        return 'C got flags 0x%x' % h['flags']
    if h['gso_type'] not in (GSO_NONE, GSO_TCPV4, GSO_TCPV6):
        return 'C (no GUEST_ECN, no UFO/USO) got gso_type 0x%x' % h['gso_type']
    if h['gso_type'] and not h['flags'] & NEEDS_CSUM:
        return 'C got gso_type 0x%x without NEEDS_CSUM' % h['gso_type']
    return None


def check_hdrs(res, who, got):
    bad = [w for w in (hdr_allowed(who, h) for h, _ in got) if w]
    res.check(not bad, '%s: every header one it negotiated%s' % (who, ' (%s)' % bad[0] if bad else ''))


def check_segments(res, who, got, sent, gso_size, want_flags=0, ecn=False, what='segments'):
    """got: [(hdr, frame)] a receiver got for the GSO frame `sent`: its segments, made by the
    switch. Every segment: the headers of `sent` with IP lengths, IPv4 id + i and header
    checksum, TCP seq + offset and checksum right; at most gso_size payload bytes (all but the
    last exactly); PSH and FIN on the last only, CWR on the first only (with ECN); the header
    flags want_flags (DATA_VALID or 0), no GSO; the payloads together byte-exact."""
    s = parse(sent)
    seg_payload = len(s['data'])
    want_n = max(1, -(-seg_payload // gso_size))
    problems = []
    if len(got) != want_n:
        problems.append('%d segments, want %d' % (len(got), want_n))
    data = b''
    for i, (h, f) in enumerate(got):
        p = parse(f)
        if p is None or p.get('seq') is None:
            problems.append('segment %d: not TCP/IP' % i)
            break
        last = i == len(got) - 1
        if h['flags'] != want_flags or h['gso_type'] != GSO_NONE:
            problems.append('segment %d: header flags 0x%x gso_type 0x%x' % (i, h['flags'], h['gso_type']))
        if len(f) != p['hlen'] + len(p['data']) or len(f) > s['hlen'] + gso_size:
            problems.append('segment %d: %d bytes (headers %d + gso_size %d)'
                            % (i, len(f), s['hlen'], gso_size))
        if not last and len(p['data']) != gso_size:
            problems.append('segment %d: %d payload bytes, not gso_size' % (i, len(p['data'])))
        if not p['ip_ok'] or not p['l4_ok']:
            problems.append('segment %d: checksum wrong (ip %s, tcp %s)' % (i, p['ip_ok'], p['l4_ok']))
        if p['seq'] != (s['seq'] + len(data)) & 0xffffffff:
            problems.append('segment %d: seq %d, want %d' % (i, p['seq'], s['seq'] + len(data)))
        if not s['v6'] and p['ip_id'] != (s['ip_id'] + i) & 0xffff:
            problems.append('segment %d: IPv4 id 0x%x' % (i, p['ip_id']))
        want_tf = s['tcp_flags'] & ~(TCP_PSH | TCP_FIN | TCP_CWR)
        if last:
            want_tf |= s['tcp_flags'] & (TCP_PSH | TCP_FIN)
        if i == 0:
            want_tf |= s['tcp_flags'] & TCP_CWR
        if p['tcp_flags'] != want_tf:
            problems.append('segment %d: TCP flags 0x%x, want 0x%x' % (i, p['tcp_flags'], want_tf))
        if f[:s['l3']] != sent[:s['l3']] or f[p['l4'] + 20:p['hlen']] != sent[s['l4'] + 20:s['hlen']]:
            problems.append('segment %d: Ethernet header (tags) or TCP options changed' % i)
        data += p['data']
    if data != s['data']:
        problems.append('payload %d bytes, not byte-exact with the %d sent' % (len(data), seg_payload))
    res.check(not problems, '%s: %d %s, checksums, sizes <= %d + %d, seq, flags, payload byte-exact%s'
              % (who, len(got), what, s['hlen'], gso_size,
                 ' -- ' + '; '.join(problems[:4]) if problems else ''))
    return not problems


def check_passed(res, who, got, sent, hdr, what='one frame with its header'):
    """got: the receiver's frames for `sent` sent with header `hdr`: one, byte-exact, the same
    offload fields (hdr_len: the one the switch parsed)."""
    want = VHDR.unpack(hdr)
    h = got[0][0] if len(got) == 1 else None
    ok = (h is not None and got[0][1] == sent and h['flags'] == want[0] & NEEDS_CSUM and
          h['gso_type'] == want[1] and h['gso_size'] == (want[3] if want[1] else 0) and
          h['csum_start'] == want[4] and h['csum_offset'] == want[5])
    if ok and want[1]:
        ok = h['hdr_len'] == parse(sent)['hlen']
    res.check(ok, '%s: %s (flags 0x%x, gso_type 0x%x, gso_size %d, hdr_len %d, csum %d+%d), '
              'byte-exact' % (who, what, *((h['flags'], h['gso_type'], h['gso_size'], h['hdr_len'],
                                            h['csum_start'], h['csum_offset']) if h else
                                           (0, 0, 0, 0, 0, 0)))
              + ('' if h else ' -- got %d frames' % len(got))
              + (' -- got %d bytes, sent %d' % (len(got[0][1]), len(sent))
                 if h and got[0][1] != sent else ''))
    return ok


# =============================================================================================
# Good cases
# =============================================================================================
GOOD = []


def good(name):
    def reg(fn):
        GOOD.append((name, fn))
        return fn
    return reg


def send_gso(env, res, dst, v6=False, ecn=False, size=30000, tag='gso', gso_size=MSS, vlans=(),
             split=False, **kw):
    frame = tcp_frame(dst, payload_bytes(size, tag), v6=v6,
                      flags=TCP_ACK | TCP_PSH | (TCP_CWR if ecn else 0), vlans=vlans)
    hdr = tcp_hdr(v6=v6, ecn=ecn, gso_size=gso_size, vlans=len(vlans), **kw)
    res.check(env.a_tx.send(hdr, frame, split), 'A sent a %d-byte %s GSO frame%s (gso_size %d%s)'
              % (len(frame), 'TCPv6' if v6 else 'TCPv4', ' with ECN and CWR' if ecn else '', gso_size,
                 ', in pieces' if split else ''))
    return hdr, frame


def segs_for(frame, gso_size):
    return max(1, -(-len(parse(frame)['data']) // gso_size))


@good('TCPv4 GSO 30 KB to B: segments in software (one descriptor, then in pieces)')
def good_v4_b(env, res):
    for split in (False, True):
        before = env.counters()
        hdr, frame = send_gso(env, res, MACS[1], split=split, tag='b%d' % split)
        got = env.b_rx.frames(segs_for(frame, MSS))
        check_hdrs(res, 'B', got)
        check_segments(res, 'B', got, frame, MSS)
        res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B, nothing for C')
        after = env.counters()
        res.check(after['b']['soft_segments'] - before['b']['soft_segments'] == len(got),
                  'B: soft_segments +%d' % (after['b']['soft_segments'] - before['b']['soft_segments']))


@good('TCPv4 GSO 30 KB to C: one frame with its GSO header (one descriptor, then in pieces)')
def good_v4_c(env, res):
    for split in (False, True):
        before = env.counters()
        hdr, frame = send_gso(env, res, MACS[2], split=split, tag='c%d' % split)
        got = env.c_rx.frames(1)
        check_hdrs(res, 'C', got)
        check_passed(res, 'C', got, frame, hdr)
        res.check(not env.c_rx.drain() and not env.b_rx.drain(0.02), 'nothing more for C, nothing for B')
        after = env.counters()
        res.check(after['c']['passed'] - before['c']['passed'] == 1 and
                  after['c']['soft_segments'] == before['c']['soft_segments'],
                  'C: passed +1, no soft segments')


@good('TCPv6 GSO 30 KB flooded: B segments, C one frame')
def good_v6_flood(env, res):
    hdr, frame = send_gso(env, res, BCAST, v6=True, tag='v6')
    got_b = env.b_rx.frames(segs_for(frame, MSS))
    got_c = env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    check_segments(res, 'B', got_b, frame, MSS)
    check_passed(res, 'C', got_c, frame, hdr)
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')


@good('TCPv4 GSO with ECN (CWR) flooded: B and C (no GUEST_ECN) get segments, CWR on the first')
def good_ecn(env, res):
    hdr, frame = send_gso(env, res, BCAST, ecn=True, size=20000, tag='ecn')
    n = segs_for(frame, MSS)
    got_b, got_c = env.b_rx.frames(n), env.c_rx.frames(n)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    check_segments(res, 'B', got_b, frame, MSS)
    check_segments(res, 'C', got_c, frame, MSS, want_flags=DATA_VALID,
                   what='segments with DATA_VALID (the switch computed the checksums)')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')


@good('TCPv4 and TCPv6 GSO behind two 802.1Q tags flooded: B segments, C one frame')
def good_vlan(env, res):
    for v6 in (False, True):
        hdr, frame = send_gso(env, res, BCAST, v6=v6, size=8000, tag='vlan', vlans=(10, 20))
        got_b, got_c = env.b_rx.frames(segs_for(frame, MSS)), env.c_rx.frames(1)
        check_hdrs(res, 'B', got_b)
        check_hdrs(res, 'C', got_c)
        check_segments(res, 'B', got_b, frame, MSS, what='tagged segments')
        check_passed(res, 'C', got_c, frame, hdr, 'one tagged frame with its header')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')


@good('NEEDS_CSUM UDP to B: completed checksum; to C: as sent')
def good_udp_csum(env, res):
    before = env.counters()
    payload = payload_bytes(999, 'udp')
    hdr = vhdr(NEEDS_CSUM, csum_start=ETH + IPV4, csum_offset=6)
    for who, dst, rx in (('B', MACS[1], env.b_rx), ('C', MACS[2], env.c_rx)):
        frame = udp_frame(dst, payload)
        res.check(env.a_tx.send(hdr, frame), 'A sent a NEEDS_CSUM UDP frame to %s' % who)
        got = rx.frames(1)
        check_hdrs(res, who, got)
        if who == 'B':
            p = parse(got[0][1]) if got else None
            res.check(p is not None and p['l4_ok'] and p['ip_ok'] and p['udp_csum'] != 0 and
                      got[0][1][:40] == frame[:40] and got[0][1][42:] == frame[42:],
                      'B: one frame, UDP checksum completed (0x%04x) and valid, the rest byte-exact'
                      % (p['udp_csum'] if p else 0))
        else:
            check_passed(res, 'C', got, frame, hdr, 'one frame with NEEDS_CSUM')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')
    after = env.counters()
    res.check(after['b']['soft_checksums'] - before['b']['soft_checksums'] == 1 and
              after['c']['passed'] - before['c']['passed'] == 1,
              'B: soft_checksums +1; C: passed +1')


@good('hdr_len a lie (hint only), one-segment GSO, 1024 segments: all legal')
def good_legal_oddities(env, res):
    before = env.counters()
    hdr, frame = send_gso(env, res, BCAST, size=5000, tag='hdrlen', hdr_len=7)
    got_b, got_c = env.b_rx.frames(segs_for(frame, MSS)), env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    check_segments(res, 'B', got_b, frame, MSS, what='segments (hdr_len 7 ignored)')
    check_passed(res, 'C', got_c, frame, hdr, 'one frame, hdr_len the parsed one (7 sent)')

    hdr, frame = send_gso(env, res, BCAST, size=1000, tag='one', gso_size=9000)
    got_b, got_c = env.b_rx.frames(1), env.c_rx.frames(1)
    check_segments(res, 'B', got_b, frame, 9000, what='segment of a one-segment GSO frame')
    check_passed(res, 'C', got_c, frame, hdr, 'one frame (gso_size over the payload)')

    # 1024 segments of 63 bytes, the most allowed: C gets the frame, B its 1024 segments.
    hdr, frame = send_gso(env, res, BCAST, size=1024 * 63, tag='1024', gso_size=63)
    res.check(segs_for(frame, 63) == 1024, 'that frame makes 1024 segments')
    got_b, got_c = env.b_rx.frames(1024), env.c_rx.frames(1)
    check_segments(res, 'B', got_b, frame, 63, what='segments of the 1024-segment frame')
    check_passed(res, 'C', got_c, frame, hdr, '64 KB frame of 1024 segments passed')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')
    after = env.counters()
    res.check(after['bad_header'] == before['bad_header'] and
              after['tx_dropped'] == before['tx_dropped'], 'A: nothing dropped, no bad header')


@good('largest TCPv4 GSO frame (IPv4 tot_len 65535: 65549 bytes) to C and B')
def good_largest(env, res):
    """The largest IPv4 packet a TSO4 header may describe: the device takes frames up to
    VNET_MAX_FRAME (65536 + 14 + 4), pkt_offload_parse() up to PKT_GSO_FRAME_MAX."""
    before = env.counters()
    mark = env.log_size()
    hdr, frame = send_gso(env, res, MACS[2], size=65535 - IPV4 - TCPH - len(TS_OPT), tag='max')
    ok = check_passed(res, 'C', env.c_rx.frames(1), frame, hdr, 'one frame of 65549 bytes')
    hdr, frame = send_gso(env, res, MACS[1], size=65535 - IPV4 - TCPH - len(TS_OPT), tag='max')
    ok &= check_segments(res, 'B', env.b_rx.frames(segs_for(frame, MSS)), frame, MSS,
                         what='segments of the 65549-byte frame')
    if not ok:
        res.note('vnetd logged: %s' % ' | '.join(
            line.strip() for line in env.log_since(mark).splitlines() if 'dropped' in line))
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')
    after = env.counters()
    res.check(after['bad_header'] == before['bad_header'] and
              after['tx_dropped'] == before['tx_dropped'], 'A: nothing dropped, no bad header')


@good('padded TCPv4 GSO frame: Ethernet padding dropped for C, segments for B')
def good_padded(env, res):
    hdr, frame = send_gso(env, res, BCAST, size=3000, tag='pad')
    padded = frame + bytes(10)
    res.check(env.a_tx.send(hdr, padded), 'A sent the same frame with 10 bytes of padding')
    n = segs_for(frame, MSS)
    got_b, got_c = env.b_rx.frames(2 * n), env.c_rx.frames(2)
    check_segments(res, 'B', got_b[:n], frame, MSS, what='segments of the unpadded frame')
    check_segments(res, 'B', got_b[n:], frame, MSS, what='segments of the padded one')
    check_passed(res, 'C', got_c[:1], frame, hdr, 'unpadded frame')
    check_passed(res, 'C', got_c[1:], frame, hdr, 'padded frame without its padding')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')


# =============================================================================================
# Hostile cases: (name, header, frame, who drops it (DEV / SW / PSEC), its log reason)
# =============================================================================================
def v4(**kw):
    return tcp_frame(BCAST, payload_bytes(kw.pop('size', 4000), kw.pop('tag', 'bad')), **kw)


def v6(**kw):
    return tcp_frame(BCAST, payload_bytes(kw.pop('size', 4000), kw.pop('tag', 'bad')), v6=True, **kw)


L4_4, L4_6 = ETH + IPV4, ETH + IPV6
HL4 = L4_4 + TCPH + len(TS_OPT)
HOSTILE = [
    # -- refused by the device (tx_hdr_refused()): A's TX queue "dropped" --
    ('NEEDS_CSUM: csum_start + csum_offset beyond the frame',
     vhdr(NEEDS_CSUM, csum_start=200, csum_offset=16), v4(size=100), DEV,
     'checksum position outside the frame'),
    ('NEEDS_CSUM: csum_start 0xffff, csum_offset 0xffff',
     vhdr(NEEDS_CSUM, csum_start=0xffff, csum_offset=0xffff), v4(size=100), DEV,
     'checksum position outside the frame'),
    ('GSO TCPv4, csum_offset past the end of the frame',
     tcp_hdr(csum_offset=4000 + 32), v4(), DEV, 'checksum position outside the frame'),
    ('GSO header, frame shorter than Ethernet + IPv4 + TCP checksum (40 bytes)',
     tcp_hdr(), v4(cut=40), DEV, 'checksum position outside the frame'),
    ('GSO header, frame of 0 bytes', tcp_hdr(), b'', DEV, 'checksum position outside the frame'),
    ('ECN alone (gso_type 0x80)', tcp_hdr(gso_type=GSO_ECN), v4(), DEV, 'unknown gso_type'),
    ('UFO (gso_type 3, not negotiated)',
     vhdr(NEEDS_CSUM, GSO_UDP, L4_4 + UDPH, 1400, L4_4, 6), udp_frame(BCAST, bytes(4000)), DEV,
     'segmentation offload not negotiated'),
    ('USO (gso_type 5, HOST_USO not negotiated by A)',
     vhdr(NEEDS_CSUM, GSO_UDP_L4, L4_4 + UDPH, 1400, L4_4, 6), udp_frame(BCAST, bytes(4000)), DEV,
     'segmentation offload not negotiated'),
    ('gso_type 0x7f', tcp_hdr(gso_type=0x7f), v4(), DEV, 'unknown gso_type'),
    ('GSO TCPv4 without NEEDS_CSUM', tcp_hdr(flags=0), v4(), DEV, 'segmentation without NEEDS_CSUM'),
    ('GSO TCPv4 with gso_size 0', tcp_hdr(gso_size=0), v4(), DEV, 'segmentation with gso_size 0'),
    # -- the device lets them through; the switch checks them against the frame: bad_header --
    ('GSO TCPv4: csum_offset 6 (UDP\'s) on a TCP frame', tcp_hdr(csum_offset=6), v4(), SW,
     'no TCP/UDP header where csum_start points'),
    ('GSO TCPv4: csum_offset 0', tcp_hdr(csum_offset=0), v4(), SW,
     'no TCP/UDP header where csum_start points'),
    ('GSO TCPv4: csum_start at the IP header',
     vhdr(NEEDS_CSUM, GSO_TCPV4, HL4, MSS, ETH, 16), v4(), SW,
     'no TCP/UDP header where csum_start points'),
    ('GSO TCPV4 whose frame is IPv6', tcp_hdr(gso_type=GSO_TCPV4, v6=True), v6(), SW,
     'not Ethernet \\(VLAN\\) with the IP version the GSO type says'),
    ('GSO TCPV6 whose frame is IPv4', tcp_hdr(gso_type=GSO_TCPV6), v4(), SW,
     'not Ethernet \\(VLAN\\) with the IP version the GSO type says'),
    ('GSO TCPv4 on ethertype 0x88b5 (not IP)', tcp_hdr(), v4(ethertype=0x88b5), SW,
     'not Ethernet \\(VLAN\\) with the IP version the GSO type says'),
    # NEEDS_CSUM alone may not write over checked bytes (a receiver without GUEST_CSUM, a trunk
    # or AF_XDP would get the switch's checksum there, chosen by the guest's payload)
    ('NEEDS_CSUM only: the checksum over the source MAC (csum_start 6)',
     vhdr(NEEDS_CSUM, csum_start=6, csum_offset=0), udp_frame(BCAST, bytes(200)), SW,
     'checksum position outside the frame or before its L4 header'),
    ('NEEDS_CSUM only: the checksum over the IPv4 source (csum_start 26)',
     vhdr(NEEDS_CSUM, csum_start=26, csum_offset=0), udp_frame(BCAST, bytes(200)), SW,
     'checksum position outside the frame or before its L4 header'),
    ('NEEDS_CSUM only on a frame that is not IP (ethertype 0x88b5)',
     vhdr(NEEDS_CSUM, csum_start=40, csum_offset=0), v4(ethertype=0x88b5, size=200), SW,
     'not Ethernet \\(VLAN\\) with the IP version the GSO type says'),
    # -- port security (A has mac=) reads tags before the offload check: arp_nd_spoofed --
    ('GSO TCPv4 behind three 802.1Q tags', tcp_hdr(vlans=3), v4(vlans=(1, 2, 3)), PSEC,
     'a frame with more than two VLAN tags'),
    ('GSO TCPv4 header on an ARP ethertype', tcp_hdr(), v4(ethertype=0x0806), PSEC,
     'an ARP packet whose hardware addresses are not 6 bytes'),
    ('GSO with an IPv4 fragment (MF)', tcp_hdr(), v4(frag=0x2000), SW,
     'IP header short, fragmented'),
    ('GSO with an IPv4 fragment (offset 185)', tcp_hdr(), v4(frag=185), SW,
     'IP header short, fragmented'),
    ('GSO TCPv4 on an IPv4 UDP packet', tcp_hdr(), v4(proto=17), SW, 'IP header short, fragmented'),
    ('GSO TCPv4: IPv4 ihl 4', tcp_hdr(), v4(ihl=4), SW, 'IP header short, fragmented'),
    ('GSO TCPv4: IPv4 tot_len beyond the frame', tcp_hdr(), v4(tot_len=9000), SW,
     'IP header short, fragmented'),
    ('GSO TCPv6: payload_len 0 (jumbogram)', tcp_hdr(v6=True), v6(tot_len=0), SW,
     'IP header short, fragmented'),
    ('GSO TCPv4: TCP doff 4 (< 5)', tcp_hdr(), v4(doff=4), SW,
     'no TCP/UDP header where csum_start points'),
    ('GSO TCPv4: TCP doff 0', tcp_hdr(), v4(doff=0), SW, 'no TCP/UDP header where csum_start points'),
    ('GSO TCPv4: TCP header past the frame (frame ends 18 bytes into it)',
     tcp_hdr(), v4(size=0, opts=b'', cut=L4_4 + 18, tot_len=IPV4 + 18), SW,
     'no TCP/UDP header where csum_start points'),
    ('GSO TCPv4: TCP doff 15, options past the IP packet',
     tcp_hdr(), v4(size=0, opts=b'', doff=15, tot_len=IPV4 + TCPH + 8, pad=bytes(40)), SW,
     'no TCP/UDP header where csum_start points'),
    # 64 KB: a frame of 65536 bytes (what the switch takes), 65470 payload bytes.
    ('GSO TCPv4: gso_size 1 on a 64 KB frame (65470 segments > 1024)', tcp_hdr(gso_size=1),
     v4(size=65470), SW, 'too many segments'),
    ('GSO TCPv4: 1025 segments (gso_size 63)', tcp_hdr(gso_size=63),
     v4(size=1024 * 63 + 1), SW, 'too many segments'),
]


def next_good(env, res, name, k):
    """A's next good frame (flooded, two segments for B, one GSO frame for C; in pieces) is the
    first thing B and C get, and nothing else comes."""
    hdr, frame = send_gso(env, res, BCAST, size=2000, tag='next %d' % k, split=True)
    got_b, got_c = env.b_rx.frames(2), env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    ok_b = check_segments(res, 'B', got_b, frame, MSS, what='segments of A\'s next good frame first')
    ok_c = check_passed(res, 'C', got_c, frame, hdr, 'A\'s next good frame first')
    extra_b, extra_c = env.b_rx.drain(), env.c_rx.drain(0.02)
    res.check(not extra_b and not extra_c, 'nothing else for B (%d) or C (%d)'
              % (len(extra_b), len(extra_c)))
    return ok_b and ok_c


def hostile_case(env, res, name, hdr, frame, where, why, k):
    before = env.counters()
    mark = env.log_size()
    res.check(env.a_tx.send(hdr, frame) and env.a_tx.send(hdr, frame, split=True),
              'A sent it twice: in one descriptor, then in %s pieces (%d bytes, header %s)'
              % ('header + 4 or more', len(frame), VHDR.unpack(hdr)[:6]))
    next_good(env, res, name, k)
    res.check(env.vd.alive(), 'vnetd alive')
    after = env.counters()
    d = tuple(after[k] - before[k] for k in ('tx_dropped', 'bad_header', 'psec'))
    want = tuple(2 * int(where == w) for w in (DEV, SW, PSEC))
    res.check(d == want, 'dropped by the %s: TX dropped +%d, bad_header +%d, arp_nd_spoofed +%d'
              % ((where,) + d))
    log = LOGS[where] % why
    m = env.wait_log(mark, log)
    res.check(bool(m), 'logged: %s' % (m.group(0) if m else '/%s/ (no such line)' % log))


def data_valid_cases(env, res):
    """DATA_VALID from the driver on TX: cleared. Plain UDP with a wrong checksum: B and C get
    flags 0 (C must not be told it was verified); NEEDS_CSUM | DATA_VALID: C gets NEEDS_CSUM
    alone, B a completed checksum and flags 0; GSO with DATA_VALID: C NEEDS_CSUM + GSO, B
    segments with flags 0."""
    frame = udp_frame(BCAST, payload_bytes(500, 'dv'), seed=False, bad_csum=True)
    res.check(env.a_tx.send(vhdr(DATA_VALID), frame), 'A sent UDP with a wrong checksum and DATA_VALID')
    got_b, got_c = env.b_rx.frames(1), env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    res.check(len(got_b) == 1 and got_b[0][0]['flags'] == 0 and got_b[0][1] == frame,
              'B: flags 0, the frame as sent (its bad checksum left for B to find)')
    res.check(len(got_c) == 1 and got_c[0][0]['flags'] == 0 and got_c[0][1] == frame,
              'C: flags 0 (not DATA_VALID: nobody verified it), the frame as sent')

    frame = udp_frame(BCAST, payload_bytes(700, 'dv2'))
    hdr = vhdr(NEEDS_CSUM | DATA_VALID, csum_start=ETH + IPV4, csum_offset=6)
    res.check(env.a_tx.send(hdr, frame), 'A sent NEEDS_CSUM | DATA_VALID UDP')
    got_b, got_c = env.b_rx.frames(1), env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    p = parse(got_b[0][1]) if got_b else None
    res.check(p is not None and got_b[0][0]['flags'] == 0 and p['l4_ok'],
              'B: flags 0, UDP checksum completed and valid')
    check_passed(res, 'C', got_c, frame, vhdr(NEEDS_CSUM, csum_start=ETH + IPV4, csum_offset=6),
                 'NEEDS_CSUM alone, DATA_VALID cleared')

    hdr = tcp_hdr(flags=NEEDS_CSUM | DATA_VALID)
    frame = v4(size=3000, tag='dv3')
    res.check(env.a_tx.send(hdr, frame), 'A sent a GSO frame with NEEDS_CSUM | DATA_VALID')
    got_b, got_c = env.b_rx.frames(segs_for(frame, MSS)), env.c_rx.frames(1)
    check_hdrs(res, 'B', got_b)
    check_hdrs(res, 'C', got_c)
    check_segments(res, 'B', got_b, frame, MSS, what='segments, flags 0')
    check_passed(res, 'C', got_c, frame, tcp_hdr(), 'GSO frame, NEEDS_CSUM alone')
    res.check(not env.b_rx.drain() and not env.c_rx.drain(0.02), 'nothing more for B or C')


def b_needs_csum(env, res):
    """B negotiated no CSUM: its NEEDS_CSUM frame is dropped by the device (B's TX dropped),
    and A's next good frame still goes through."""
    before = env.counters()
    mark = env.log_size()
    frame = udp_frame(BCAST, payload_bytes(300, 'b'), src=MACS[1])
    res.check(env.b_tx.send(vhdr(NEEDS_CSUM, csum_start=ETH + IPV4, csum_offset=6), frame),
              'B sent NEEDS_CSUM without CSUM negotiated')
    res.check(not env.c_rx.drain(0.1) and not env.a_rx.drain(0.02), 'C and A got nothing')
    after = env.counters()
    res.check(after['b_tx_dropped'] - before['b_tx_dropped'] == 1, "B's TX dropped +1")
    m = env.wait_log(mark, LOGS[DEV] % 'checksum offload not negotiated')
    res.check(bool(m), 'logged: %s' % (m.group(0) if m else 'no line'))
    next_good(env, res, 'B no CSUM', 999)


# =============================================================================================
def main():
    missing = prerequisites()
    if missing is not None:
        return missing
    only = [a.lower() for a in sys.argv[1:]]
    t0 = time.monotonic()
    env = OffloadEnv(workdir('hostile-offloads'))
    env.start()
    print('vnetd pid %d, log %s' % (env.pid(), env.vd.log_path), flush=True)
    results = []

    def run(name, fn):
        if only and not any(o in name.lower() for o in only):
            return None
        print('--- %s' % name, flush=True)
        res = Result(name)
        try:
            fn(res)
        except Exception as e:
            res.check(False, 'case raised %s: %s' % (type(e).__name__, e))
            traceback.print_exc()
        results.append(res)
        if not env.vd.alive():
            res.note('vnetd died (rc %r); log tail:\n%s' % (env.vd.proc.poll(), env.vd.log_tail()))
        return res

    try:
        env.connect()
        start = env.counters()
        for name, fn in GOOD:
            run('good: ' + name, lambda res, fn=fn: fn(env, res))
            if not env.vd.alive():
                break
        sent = {DEV: 0, SW: 0, PSEC: 0}
        last = 0.0
        for k, (name, hdr, frame, where, why) in enumerate(HOSTILE):
            if not env.vd.alive():
                break
            if only and not any(o in ('hostile: ' + name).lower() for o in only):
                continue
            time.sleep(max(0.0, CASE_GAP - (time.monotonic() - last)))
            last = time.monotonic()
            if run('hostile: ' + name,
                   lambda res, a=(name, hdr, frame, where, why, k): hostile_case(env, res, *a)):
                sent[where] += 2
        if env.vd.alive():
            run('hostile: DATA_VALID set by the driver on TX', lambda res: data_valid_cases(env, res))
        if env.vd.alive():
            run('hostile: NEEDS_CSUM from B, which negotiated no CSUM', lambda res: b_needs_csum(env, res))
        final = Result('final')
        if final.check(env.vd.alive(), 'vnetd still running at the end'):
            end = env.counters()
            d_dev = end['tx_dropped'] - start['tx_dropped']
            d_sw = end['bad_header'] - start['bad_header']
            d_ps = end['psec'] - start['psec']
            final.check(d_sw == sent[SW], "A's bad_header +%d == the %d hostile frames the "
                        'switch had to drop' % (d_sw, sent[SW]))
            final.check(d_dev == sent[DEV], "A's TX queue dropped +%d == the %d hostile frames "
                        'the device had to drop' % (d_dev, sent[DEV]))
            final.check(d_ps == sent[PSEC], "A's arp_nd_spoofed +%d == the %d its port security "
                        'had to drop' % (d_ps, sent[PSEC]))
            final.check(d_dev + d_sw + d_ps == sum(sent.values()), 'together %d == every hostile '
                        'frame A sent (%d)' % (d_dev + d_sw + d_ps, sum(sent.values())))
        results.append(final)
    except Exception as e:
        final = Result('setup')
        final.check(False, 'raised %s: %s' % (type(e).__name__, e))
        traceback.print_exc()
        results.append(final)
    finally:
        env.disconnect()
        rc = env.stop()
    last = Result('shutdown')
    last.check(rc == 0, 'vnetd shut down cleanly on SIGTERM (status %s; a sanitizer build reports '
               'leaks or errors here)' % rc)
    if rc != 0:
        last.note('log tail:\n' + env.vd.log_tail())
    results.append(last)
    bad = [r for r in results if r.failures]
    print('\nhostile-offloads summary: %d cases (incl. final checks), %d failed, %.1f s'
          % (len(results), len(bad), time.monotonic() - t0))
    for r in results:
        print('  %-4s %s' % ('FAIL' if r.failures else 'ok', r.name))
        for x in r.failures:
            print('         - ' + x)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
