# SPDX-License-Identifier: MIT
"""Mapping exhaustion (issue 40, finding 3): tenants filling their memory slots leave room for others.

vnetd's SIGBUS watch table, one for the whole daemon, held 8192 mappings, and GET_MAX_MEM_SLOTS
told every port 509: 17 frontends adding one-byte regions filled it, and a fresh VM on another
port then had its SET_MEM_TABLE refused. Now each port is held to its max-mem-slots= (default
32), GET_MAX_MEM_SLOTS answers that, and the table holds every port's at its cap.

HOSTILE switch ports (one of them with max-mem-slots=8) each get a Python frontend that asks
GET_MAX_MEM_SLOTS and adds that many one-byte regions (ADD_MEM_REG, one page mapped each, all
from one memfd), then one more. Checked:
  - each one is answered its port's cap (8 or the default 32, not 509), all its regions are
    acked 0 and mapped, the one beyond gets an ERR ack (REPLY_ACK 1), its connection stays up,
    and vnetd logs why;
  - with every hostile frontend still connected and at its cap, a fresh VM on another port gets
    its SET_MEM_TABLE accepted, sets up its rings and forwards a frame to a third port's guest,
    byte-exact;
  - once the hostile frontends hang up, every one of their mappings is gone;
  - vnetd is still running and exits cleanly on SIGTERM (no sanitizer report with an ASan build:
    VNETD_BUILD=build-asan VNETD_EXTRA_ARGS=--no-sandbox).
Needs no root and no guest (switch ports create no interface).
"""

import os
import re
import sys
import time

from tests.kit.harness import NoNs, Vnetd, workdir
from tests.kit.hostile_env import Result, prerequisites
from tests.kit import vhost_user_client as vu
from tests.kit.vhost_user_client import (NET_HDR_LEN, RX_Q, VhostUserClient, VhostUserError,
                                         VirtioNetFrontend, ether_frame)

HOSTILE = 20              # more than the 17 that filled the old table
SMALL_CAP = 8             # hostile port 0's max-mem-slots=
DEFAULT_CAP = 32          # MEM_CAP_SLOTS_DEFAULT
OLD_TABLE = 8192          # what the daemon-wide table held before
PAGE = 4096
MEMFD_NAME = 'vnetd-hostile-maps'
FRESH_MAC, PEER_MAC = '52:54:00:40:03:01', '52:54:00:40:03:02'
SLOTS_PROTOCOL = (1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_CONFIGURE_MEM_SLOTS)


def region(i):
    """Region i: one byte, 1 MiB apart from the others in guest-physical and user addresses."""
    return (0x100000000 + (i << 20), 1, 0x200000000000 + (i << 20), 0)


def memfd_maps(pid):
    with open('/proc/%d/maps' % pid) as f:
        return sum(MEMFD_NAME in line for line in f)


def fill_slots(c, fd, ck, name):
    """Ask GET_MAX_MEM_SLOTS, add that many one-byte regions and one more; returns (cap, acked
    regions, the ack of the one beyond)."""
    vu.ok(c.set_protocol_features(SLOTS_PROTOCOL), '%s: SET_PROTOCOL_FEATURES' % name)
    vu.ok(c.set_owner(), '%s: SET_OWNER' % name)
    cap = c.get_max_mem_slots()
    acks = [c.add_mem_reg(region(i), fd) for i in range(cap)]
    beyond = c.add_mem_reg(region(cap), fd)
    return cap, sum(a == 0 for a in acks), beyond


def forward_check(vd, socks, ck):
    """A fresh VM on its port (SET_MEM_TABLE) sends a frame; the peer port's guest gets it."""
    fresh = peer = None
    try:
        peer = VirtioNetFrontend(socks['peer'])
        try:
            peer.setup()
        except (VhostUserError, OSError) as e:
            ck.check(False, 'peer: its guest is set up (%s)' % e)
            return
        rx = peer.rings[RX_Q]
        bufs = {}  # chain head: its buffer
        for _ in range(4):
            b = peer.mem.alloc(2048)
            head = rx.add_chain([(b, 2048, True)])
            bufs[head] = b
            rx.put_avail(head)
        rx.kick()
        fresh = VirtioNetFrontend(socks['fresh'])
        try:
            fresh.negotiate()
            ack = fresh.vu.set_mem_table([fresh.mem.region()], [fresh.mem.fd])
        except (VhostUserError, OSError) as e:
            ck.check(False, 'fresh VM: SET_MEM_TABLE answered (%s)' % e)
            return
        if not ck.check(ack == 0, 'fresh VM: SET_MEM_TABLE accepted (REPLY_ACK %r)' % ack):
            return
        for q in (vu.RX_Q, vu.TX_Q, vu.CTRL_Q):
            fresh.setup_ring(fresh.make_ring(q))
        payload = b'issue 40 finding 3: a fresh VM forwards ' + bytes(range(64))
        frame = ether_frame(PEER_MAC, FRESH_MAC, payload)
        ck.check(fresh.transmit(frame), 'fresh VM: its frame is taken off its TX ring')
        used = rx.get_used(3.0)
        if ck.check(used is not None, 'peer: the frame arrives in its RX ring'):
            uid, ulen = used
            got = peer.mem.read(bufs[uid] + NET_HDR_LEN, ulen - NET_HDR_LEN)
            ck.check(got[:len(frame)] == frame, 'peer: byte-exact (%d bytes)' % len(frame))
    finally:
        for f in (fresh, peer):
            if f is not None:
                f.close()


def main():
    missing = prerequisites()
    if missing is not None:
        return missing
    t0 = time.monotonic()
    wd = workdir('hostile-maps')
    socks = {'h%d' % i: os.path.join(wd, 'h%d.sock' % i) for i in range(HOSTILE)}
    socks['fresh'] = os.path.join(wd, 'fresh.sock')
    socks['peer'] = os.path.join(wd, 'peer.sock')
    ports = ['socket=%s,switch' % socks['h%d' % i] for i in range(HOSTILE)]
    ports[0] += ',max-mem-slots=%d' % SMALL_CAP
    ports.append('socket=%s,switch,mac=%s' % (socks['fresh'], FRESH_MAC))
    ports.append('socket=%s,switch,mac=%s' % (socks['peer'], PEER_MAC))
    ck = Result('hostile-maps')
    vd = Vnetd(NoNs(), ports, wd).__enter__()
    hostile = []
    fd = os.memfd_create(MEMFD_NAME, os.MFD_CLOEXEC)
    os.ftruncate(fd, PAGE)
    try:
        pid = vd.proc.pid
        print('vnetd pid %d, %d hostile ports, log %s' % (pid, HOSTILE, vd.log_path), flush=True)
        log_start = os.path.getsize(vd.log_path)
        total = 0
        for i in range(HOSTILE):
            name = 'h%d' % i
            want = SMALL_CAP if i == 0 else DEFAULT_CAP
            c = VhostUserClient(socks[name])
            hostile.append(c)
            try:
                cap, acked, beyond = fill_slots(c, fd, ck, name)
            except (VhostUserError, OSError) as e:
                ck.check(False, '%s: frontend served (%s)' % (name, e))
                continue
            total += acked
            ck.check(cap == want, '%s: GET_MAX_MEM_SLOTS answers %d (want %d)' % (name, cap, want))
            ck.check(acked == cap, '%s: %d of its %d regions acked' % (name, acked, cap))
            ck.check(beyond not in (0, None), '%s: the region beyond its cap gets an ERR '
                     '(REPLY_ACK %r)' % (name, beyond))
        ck.check(vd.alive(), 'vnetd still running after %d ADD_MEM_REG' % (total + HOSTILE))
        mapped = memfd_maps(pid)
        ck.check(mapped == total, 'vnetd maps the %d regions acked (%d)' % (total, mapped))
        ck.check(total == SMALL_CAP + (HOSTILE - 1) * DEFAULT_CAP,
                 'the hostile ports hold %d mappings in all, the sum of their caps (the old '
                 'table held %d)' % (total, OLD_TABLE))
        log = open(vd.log_path, 'rb').read()[log_start:].decode(errors='replace')
        ck.check(re.search(r'ADD_MEM_REG: all %d memory slots in use' % DEFAULT_CAP, log)
                 is not None, 'vnetd logs the refusal naming the cap')
        # Each hostile connection is still up: an ERR, not a hang-up.
        alive = 0
        for c in hostile:
            try:
                c.get_max_mem_slots()
                alive += 1
            except (VhostUserError, OSError):
                pass
        ck.check(alive == HOSTILE, '%d of %d hostile connections still answer' % (alive, HOSTILE))

        forward_check(vd, socks, ck)

        for c in hostile:
            c.close()
        hostile = []
        deadline = time.monotonic() + 3.0
        while memfd_maps(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        ck.check(memfd_maps(pid) == 0, 'hung up: every hostile mapping is gone (%d left)'
                 % memfd_maps(pid))
        ck.check(vd.alive(), 'vnetd still running')
    finally:
        for c in hostile:
            c.close()
        os.close(fd)
        rc = vd.stop()
        ck.check(rc == 0, 'vnetd exits cleanly on SIGTERM (status %s)' % rc)
    print('%d checks failed, %.1f s' % (len(ck.failures), time.monotonic() - t0))
    if ck.failures:
        print('log tail:\n' + vd.log_tail(2000))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
