#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A guest whose second vCPU rewrites its TX frames while the switch forwards them.

A Python vhost-user frontend (vhost_user_client.py) plays a guest with two vCPUs: one thread keeps
its TX ring full of frames that all lie in one buffer, the other keeps rewriting that buffer
between two versions, one that the port's checks admit and one they refuse:

  mac   a port-secured port floods broadcasts and sends unicast (EtherType 0x88b5), its source
        MAC flipping between its own and another port's;
  tag   an access port (vlan=10) floods untagged frames whose EtherType flips between IPv4's
        and 802.1Q's (an inner tag: on the trunk the frame would carry two, VLAN hopping);
  arp   a port with port security and ips= sends ARP replies whose sender MAC and IP flip
        between its own and another port's.

Receivers (other switch ports, Python frontends; with root, also the host end of a tap trunk
of VLAN 10, a raw socket) count the frames that carry the refused version, or a mix of both
(torn): vnetd forwards the bytes its checks read, so there must be none, with --workers 1 and
with --workers 2 (receivers on the other worker: the cross-worker queues). The sender's drop
counters must show that the flipping reached the checks. Before vnetd forwarded its checked
copy, such a guest got ~5 frames in 10,000 out as another port. About 30 s.
"""

import json
import os
import struct
import sys
import threading
import time

from tests.kit.harness import VNETD, Netns, NoNs, Vnetd, workdir
from tests.kit import vhost_user_client as vu
from tests.kit.vhost_user_client import RX_Q, TX_Q, VhostUserError, VirtioNetFrontend

QSIZE = 256
RACE_S = 2.5          # racing per case and vnetd
MIN_FRAMES = 2000     # and at least this many frames at the receivers (up to MAX_S)
MAX_S = 8.0
TRUNK_IF = 'vhrace0'
VID = 10
MAGIC = b'vnetd-race'
M = {n: bytes([0x52, 0x54, 0x00, 0x79, 0x00, i + 1]) for i, n in enumerate(
     ('p0', 'p1', 'p2', 'p3', 'p4', 'p5'))}
IP_OK, IP_BAD = bytes([10, 77, 0, 1]), bytes([10, 77, 0, 9])
BCAST = b'\xff' * 6

CAPTURE = r'''
import json, socket, struct, sys, time
iface, secs, magic = sys.argv[1], float(sys.argv[2]), sys.argv[3].encode()
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(263, 8, 1)  # PACKET_AUXDATA: the outer tag the kernel took off
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind((iface, 0))
s.settimeout(0.2)
out = {'frames': 0, 'untagged_ok': 0, 'double': 0, 'other': 0}
print('ready', flush=True)
end = time.monotonic() + secs
while time.monotonic() < end:
    try:
        data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(64))
    except socket.timeout:
        continue
    if magic not in data:
        continue
    vid = None
    for lvl, typ, d in anc:
        if lvl == 263 and typ == 8:
            st, _, _, _, _, tci = struct.unpack('IIIHHH', d[:18])
            if st & 0x10:
                vid = tci & 0xfff
    et = struct.unpack('!H', data[12:14])[0]
    out['frames'] += 1
    if vid == %d and et == 0x0800:
        out['untagged_ok'] += 1
    elif vid == %d and et in (0x8100, 0x88a8, 0x9100):
        out['double'] += 1
    else:
        out['other'] += 1
print(json.dumps(out), flush=True)
''' % (VID, VID)


def reap(ring):
    """Every used element the device has published so far, without waiting."""
    out = []
    while ring.used_idx() != ring.last_used:
        e = ring.used + 4 + 8 * (ring.last_used % ring.num)
        uid, ulen = struct.unpack('<II', ring.mem.read(e, 8))
        ring.last_used = (ring.last_used + 1) & 0xffff
        ring.free.extend(ring.chains.pop(uid, []))
        out.append((uid, ulen))
    return out


class Guest:
    """One port's frontend: a full TX ring of frames from shared buffers, RX buffers re-posted."""

    def __init__(self, sock):
        self.f = VirtioNetFrontend(sock, queue_size=QSIZE, mem_size=4 << 20)
        self.f.setup()
        self.rx = self.f.rings[RX_Q]
        self.tx = self.f.rings[TX_Q]
        self.rx_gpa = {}
        for _ in range(QSIZE):
            _rx_repost(self, self.f.mem.alloc(2048))
        self.rx.kick()
        self.bufs = []
        self.name = None

    def frame_buf(self, frame):
        """A TX buffer (zero header + frame) that every TX descriptor may point at."""
        gpa = self.f.mem.alloc(vu.NET_HDR_LEN + len(frame))
        self.f.mem.write(gpa, bytes(vu.NET_HDR_LEN) + frame)
        self.bufs.append((gpa, vu.NET_HDR_LEN + len(frame)))
        return gpa + vu.NET_HDR_LEN

    def send_once(self, frame):
        return self.f.transmit(frame)

    def tx_fill(self):
        """Post every free TX descriptor (the buffers in turn); True if any."""
        reap(self.tx)
        n = 0
        while self.tx.free:
            gpa, ln = self.bufs[self.tx.avail_idx % len(self.bufs)]
            self.tx.put_avail(self.tx.add_chain([(gpa, ln, False)]))
            n += 1
        if n:
            self.tx.kick()
        return n

    def close(self):
        self.f.close()


def _rx_repost(g, gpa):
    head = g.rx.add_chain([(gpa, 2048, True)])
    g.rx_gpa[head] = gpa
    g.rx.put_avail(head)


def rx_poll(g, seen):
    """Hand each frame g received to seen(frame) and give its buffer back."""
    got = reap(g.rx)
    for uid, ulen in got:
        gpa = g.rx_gpa.pop(uid)
        seen(g.f.mem.read(gpa, ulen)[vu.NET_HDR_LEN:])
        _rx_repost(g, gpa)
    if got:
        g.rx.kick()
    return len(got)


class Racer(threading.Thread):
    """The guest's second vCPU: writes `bad` then `good` at each of `gpas`, over and over."""

    def __init__(self, mem, gpas, good, bad):
        super().__init__(daemon=True)
        self.mm, self.good, self.bad = mem.map, good, bad
        self.offs = [(g - mem.gpa_base, g - mem.gpa_base + len(good)) for g in gpas]
        self.stopping = False
        self.flips = 0

    def run(self):
        mm, good, bad, offs = self.mm, self.good, self.bad, self.offs
        while not self.stopping:
            for _ in range(200):
                for a, b in offs:
                    mm[a:b] = bad
                for a, b in offs:
                    mm[a:b] = good
            self.flips += 200


class Tally:
    """What receivers got of the attacker's frames: by the bytes at [at, at + len(good))."""

    def __init__(self, at, good, bad):
        self.at, self.good, self.bad = at, good, bad
        self.n = {'ok': 0, 'refused': 0, 'torn': 0}

    def __call__(self, frame):
        if MAGIC not in frame:
            return
        got = frame[self.at:self.at + len(self.good)]
        self.n['ok' if got == self.good else 'refused' if got == self.bad else 'torn'] += 1

    def total(self):
        return sum(self.n.values())


def switch_counters(vd, port):
    data = json.loads(vd.ctl('raw', json.dumps({'cmd': 'stats', 'port': port})).stdout)
    return data['ports'][0]['switch']


def race(vd, attacker, frames, at, good, bad, receivers, counter, capture=None):
    """attacker's ring full of `frames` (racing bytes at `at` of each) while receivers count.
    Returns (tallies, attacker's counter delta, flips, capture result)."""
    gpas = [attacker.frame_buf(fr) + at for fr in frames]
    tallies = [Tally(at, good, bad) for _ in receivers]
    before = switch_counters(vd, attacker.name)[counter]
    racer = Racer(attacker.f.mem, gpas, good, bad)
    t0 = time.monotonic()
    racer.start()
    try:
        while True:
            attacker.tx_fill()
            for g, t in zip(receivers, tallies):
                rx_poll(g, t)
            dt = time.monotonic() - t0
            if dt > MAX_S or (dt > RACE_S and min(t.total() for t in tallies) >= MIN_FRAMES):
                break
            time.sleep(0.0005)
    finally:
        racer.stopping = True
        racer.join()
    # What is still in flight arrives unchanged from now on.
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        for g, t in zip(receivers, tallies):
            rx_poll(g, t)
        time.sleep(0.01)
    after = switch_counters(vd, attacker.name)[counter]
    cap = None
    if capture:
        out, _ = capture.communicate(timeout=MAX_S + 10)
        lines = [ln for ln in out.splitlines() if ln.startswith('{')]
        cap = json.loads(lines[-1]) if lines else None
    return tallies, after - before, racer.flips, cap


FAILURES = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        FAILURES.append(what)
    return cond


def mac_case(vd, g, workers):
    """p0 floods and unicasts, its source MAC flipping to p1's: p1 and p2 count."""
    g['p1'].send_once(b'\xff' * 6 + M['p1'] + b'\x88\xb5' + b'learn p1')
    g['p2'].send_once(b'\xff' * 6 + M['p2'] + b'\x88\xb5' + b'learn p2')
    for r in ('p1', 'p2'):
        rx_poll(g[r], lambda fr: None)
    frames = [dst + M['p0'] + b'\x88\xb5' + MAGIC + bytes(40) for dst in (BCAST, M['p1'])]
    tallies, spoofed, flips, _ = race(vd, g['p0'], frames, 6, M['p0'], M['p1'],
                                      [g['p1'], g['p2']], 'spoofed')
    for name, t in zip(('p1', 'p2'), tallies):
        check(t.total() > 0 and t.n['refused'] == 0 and t.n['torn'] == 0,
              'workers %d, source MAC: %s got %d of p0\'s frames, %d from p1\'s MAC, %d torn'
              % (workers, name, t.total(), t.n['refused'], t.n['torn']))
    check(spoofed > 0, 'workers %d, source MAC: the flipping reached port security (%d frames '
          'dropped as spoofed, %d flips)' % (workers, spoofed, flips))


def tag_case(vd, g, workers, ns):
    """p4 (access port) floods untagged frames whose EtherType flips to 802.1Q: p5 and the trunk
    count tagged ones."""
    cap = None
    if ns is not None:
        cap = ns.popen(['python3', '-c', CAPTURE, TRUNK_IF, str(MAX_S + 1), MAGIC.decode()],
                       stdout=-1, text=True)
        cap.stdout.readline()  # ready
    frames = [BCAST + M['p4'] + b'\x08\x00' + b'\x00\x14' + MAGIC + bytes(40)]
    tallies, dropped, flips, got = race(vd, g['p4'], frames, 12, b'\x08\x00', b'\x81\x00',
                                        [g['p5']], 'tagged_dropped', capture=cap)
    t = tallies[0]
    check(t.total() > 0 and t.n['refused'] == 0 and t.n['torn'] == 0,
          'workers %d, inner tag: p5 got %d of p4\'s frames, %d tagged, %d torn'
          % (workers, t.total(), t.n['refused'], t.n['torn']))
    if cap is not None:
        check(got is not None and got['untagged_ok'] > 0 and got['double'] == 0 and
              got['other'] == 0, 'workers %d, inner tag: the trunk got %s (tagged %d once; '
              'none twice)' % (workers, got, VID))
    check(dropped > 0, 'workers %d, inner tag: the flipping reached the tag check (%d dropped, '
          '%d flips)' % (workers, dropped, flips))


def arp_case(vd, g, workers):
    """p3 (ips=10.77.0.1) sends ARP replies whose sender MAC and IP flip to p1's MAC and
    10.77.0.9: p1 and p2 count."""
    arp = struct.pack('!HHBBH', 1, 0x0800, 6, 4, 2) + M['p3'] + IP_OK + BCAST + bytes(4)
    frames = [BCAST + M['p3'] + b'\x08\x06' + arp + MAGIC]
    tallies, dropped, flips, _ = race(vd, g['p3'], frames, 14 + 8, M['p3'] + IP_OK,
                                      M['p1'] + IP_BAD, [g['p1'], g['p2']], 'arp_nd_spoofed')
    ip_dropped = switch_counters(vd, 'p3')['ip_spoofed']
    for name, t in zip(('p1', 'p2'), tallies):
        check(t.total() > 0 and t.n['refused'] == 0 and t.n['torn'] == 0,
              'workers %d, ARP body: %s got %d of p3\'s replies, %d claiming p1\'s MAC and '
              '10.77.0.9, %d torn' % (workers, name, t.total(), t.n['refused'], t.n['torn']))
    check(dropped + ip_dropped > 0, 'workers %d, ARP body: the flipping reached port security '
          'and ips= (%d + %d dropped, %d flips)' % (workers, dropped, ip_dropped, flips))


def run(workers, root):
    wd = workdir('race%d' % workers)
    socks = {n: os.path.join(wd, n + '.sock') for n in M}
    w = {'p0': 0, 'p1': 1, 'p2': 0, 'p3': 0, 'p4': 0, 'p5': 1} if workers > 1 else {}
    spec = {'p0': 'switch=t', 'p1': 'switch=t', 'p2': 'switch=t',
            'p3': 'switch=t,ips=10.77.0.1', 'p4': 'switch=t,vlan=%d' % VID,
            'p5': 'switch=t,vlan=%d' % VID}
    ports = ['socket=%s,%s,mac=%s%s' % (socks[n], spec[n], ':'.join('%02x' % b for b in M[n]),
                                        ',worker=%d' % w[n] if n in w else '') for n in M]
    if root:
        ports.append('socket=%s,tap=%s,uplink=t,trunk=%d%s'
                     % (os.path.join(wd, 'p6.sock'), TRUNK_IF, VID,
                        ',worker=1' if workers > 1 else ''))
    extra = ['--workers', str(workers)]
    ns = Netns('vnetd-e2e-race') if root else None
    try:
        if ns:
            ns.__enter__()
        with Vnetd(ns or NoNs(), ports, wd, extra=extra) as vd:
            if ns:
                ns.run('ip link set %s up' % TRUNK_IF)
            g = {}
            try:
                for n in M:
                    g[n] = Guest(socks[n])
                    g[n].name = n
                mac_case(vd, g, workers)
                tag_case(vd, g, workers, ns)
                arp_case(vd, g, workers)
            except (VhostUserError, OSError) as e:
                check(False, 'workers %d: the frontends ran (%s)' % (workers, e))
            finally:
                for x in g.values():
                    x.close()
            check(vd.alive(), 'workers %d: vnetd still running' % workers)
    finally:
        if ns:
            ns.__exit__(None, None, None)


def main():
    if not os.access(VNETD, os.X_OK):
        print('FAIL: %s not built' % VNETD)
        return 1
    root = os.geteuid() == 0 and os.path.exists('/dev/net/tun')
    if not root:
        print('-- not root: no tap trunk (its host end is checked with root only)')
    sys.setswitchinterval(0.0005)  # the two "vCPUs" (threads) take turns often
    t0 = time.monotonic()
    for workers in (1, 2):
        run(workers, root)
    print('\ntest_hostile_race: %d checks failed, %.1f s' % (len(FAILURES), time.monotonic() - t0))
    return 1 if FAILURES else 0


if __name__ == '__main__':
    sys.exit(main())
