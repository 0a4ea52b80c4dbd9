#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fuzz_seed_vhost.py - seeds for fuzz_vhost_proto: real frontends' recordings and hand-made ones.

  fuzz_seed_vhost.py convert REC.strace OUT [--config N] [--no-traffic]
      A recording of the vhost-user messages vnetd received (strace -f -e trace=recvmsg -xx -y
      on vnetd while QEMU, UML or DPDK testpmd talks to it) as a fuzz_vhost_proto input: each
      connection becomes a port (first three), each message the operation that sends it with
      fds of the same kind (memory from the fuzzer's guest, eventfds, sockets); where the
      frontend stops its rings for the first time, guest traffic is put in (RX buffers, broadcast
      and unicast frames from every port), so that the rings the frontend set up carry frames.
  fuzz_seed_vhost.py record MODE REC.strace      (root; VNETD_BUILD: a plain, non-fuzz build)
      Make a recording: vnetd under strace with two switch ports, and MODE's frontends on them
      (dpdk, dpdk_packed, dpdk_inorder, dpdk_packed_inorder: testpmd virtio-user; uml: two UML
      guests that ping; qemu: a QEMU guest), through the test kit (tests/kit/harness.py;
      run it as PYTHONPATH=. tools/fuzz_seed_vhost.py from the top).
  fuzz_seed_vhost.py hand OUTDIR
      Hand-written seeds after QEMU's, DPDK's and UML's sequences (vhost-user spec) and the
      migration and reconnect paths.
  fuzz_seed_vhost.py dump INPUT
      The operations of an input, one a line (for reading crash reproducers).

The input format is tests/fuzz/fuzz_vhost_proto.c's: [config] then [op | port << 6][args...].
"""

import argparse
import os
import re
import struct
import sys

OPS = ['HELLO', 'FEATURES', 'MEM', 'RING', 'SETUPQ', 'START', 'TX', 'RX', 'CTRL', 'KICK', 'POKE',
       'RACE', 'RECONNECT', 'STATE', 'RAW', 'LOG', 'RARP', 'CONFIG', 'TIME', 'FILL', 'DESC',
       'AVAIL', 'PUMP', 'BOOT', 'MSG']
# Argument bytes per op (fixed part; CTRL, POKE and RAW carry more, told by their arguments).
ARGS = {'HELLO': 2, 'FEATURES': 2, 'MEM': 2, 'RING': 4, 'SETUPQ': 3, 'START': 2, 'TX': 5, 'RX': 3,
        'CTRL': 3, 'KICK': 1, 'POKE': 3, 'RACE': 11, 'RECONNECT': 0, 'STATE': 5, 'RAW': 4,
        'LOG': 2, 'RARP': 7, 'CONFIG': 9, 'TIME': 2, 'FILL': 3, 'DESC': 10, 'AVAIL': 4,
        'PUMP': 1, 'BOOT': 5, 'MSG': 2}

# vhost-user requests (QEMU docs/interop/vhost-user.rst)
REQ = {1: 'GET_FEATURES', 2: 'SET_FEATURES', 3: 'SET_OWNER', 4: 'RESET_OWNER', 5: 'SET_MEM_TABLE',
       6: 'SET_LOG_BASE', 7: 'SET_LOG_FD', 8: 'SET_VRING_NUM', 9: 'SET_VRING_ADDR',
       10: 'SET_VRING_BASE', 11: 'GET_VRING_BASE', 12: 'SET_VRING_KICK', 13: 'SET_VRING_CALL',
       14: 'SET_VRING_ERR', 15: 'GET_PROTOCOL_FEATURES', 16: 'SET_PROTOCOL_FEATURES',
       17: 'GET_QUEUE_NUM', 18: 'SET_VRING_ENABLE', 19: 'SEND_RARP', 20: 'NET_SET_MTU',
       21: 'SET_BACKEND_REQ_FD', 23: 'SET_VRING_ENDIAN', 24: 'GET_CONFIG', 25: 'SET_CONFIG',
       34: 'RESET_DEVICE', 36: 'GET_MAX_MEM_SLOTS', 37: 'ADD_MEM_REG', 38: 'REM_MEM_REG',
       39: 'SET_STATUS', 40: 'GET_STATUS', 42: 'SET_DEVICE_STATE_FD', 43: 'CHECK_DEVICE_STATE'}
# MSG op: [req][arg] -> which message (fuzz_vhost_proto.c op_msg())
MSG = {'GET_FEATURES': 0, 'SET_OWNER': 1, 'GET_PROTOCOL_FEATURES': 2, 'SET_PROTOCOL_FEATURES': 3,
       'GET_QUEUE_NUM': 4, 'SET_BACKEND_REQ_FD': 5, 'GET_MAX_MEM_SLOTS': 6, 'NET_SET_MTU': 7,
       'RESET_OWNER': 8, 'RESET_DEVICE': 9, 'GET_CONFIG': 10, 'SET_LOG_FD': 11,
       'CHECK_DEVICE_STATE': 12, 'SET_VRING_ENDIAN': 13, 'SET_STATUS': 14, 'GET_STATUS': 15}
# Protocol feature bits as MSG SET_PROTOCOL_FEATURES's argument byte carries them (pf_of()).
PF_BITS = [0, 1, 2, 3, 5, 9, 13, 15]
NUMS = {64: 0, 256: 1, 16: 2, 8: 3, 4: 4, 2: 5, 1: 6, 128: 7}
FD_KIND = {'eventfd': 0, 'pipe': 1, 'socket': 5, 'memfd': 6, 'null': 4}
# virtio feature bits
F_PACKED, F_IN_ORDER, F_EVENT_IDX, F_INDIRECT, F_MRG, F_CTRL_VQ, F_MQ, F_LOG_ALL = 34, 35, 29, 28, 15, 17, 22, 26
F_PROTOCOL, F_NOTF_COAL, F_VERSION_1, F_MTU, F_RSS, F_GUEST_OFFLOADS, F_GUEST_CSUM = 30, 53, 32, 3, 60, 2, 1


def op(name, port=0, *args):
    """One operation: its byte (with the port) and its argument bytes."""
    return bytes([OPS.index(name) | (port & 3) << 6]) + bytes(a & 0xff for a in args)


def features_args(f):
    """FEATURES' two argument bytes for a feature word (what features_of() rebuilds)."""
    b = lambda n: (f >> n) & 1
    f1 = (b(F_PACKED) | b(F_IN_ORDER) << 1 | b(F_EVENT_IDX) << 2 | b(F_INDIRECT) << 3 |
          b(F_MRG) << 4 | b(F_CTRL_VQ) << 5 | b(F_MQ) << 6 | b(F_LOG_ALL) << 7)
    f2 = (b(F_PROTOCOL) | b(F_NOTF_COAL) << 1 | (0 if b(F_VERSION_1) else 4) | b(F_MTU) << 3 |
          b(F_RSS) << 4 | b(F_GUEST_OFFLOADS) << 5 | b(F_GUEST_CSUM) << 6)
    return f1, f2


def pf_arg(v):
    return sum(1 << i for i, bit in enumerate(PF_BITS) if v >> bit & 1)


def traffic(ports):
    """Guest traffic on every port: RX buffers, a broadcast and a unicast frame each, ARP too."""
    out = b''
    for p in ports:
        out += op('RX', p, 0, 31, 0)
    for p in ports:
        other = (p + 1) % 3
        out += op('TX', p, 0, 1, 1, 0, 0)                     # broadcast IPv4
        out += op('TX', p, 0, 2, other << 6, 1, 10)           # unicast, header | frame
        out += op('TX', p, 0, 0, 1 | 1 << 4, 0, 3)            # ARP broadcast
    return out + op('PUMP', 0, 3)


# ---- recordings ----

LINE = re.compile(r'recvmsg\((\d+)<([^>]*)>, \{.*?iov_base="([^"]*)".*?\}, [A-Z_|0-9]+\) = (\d+)')
CMSG = re.compile(r'cmsg_data=\[([^\]]*)\]')


def unhex(s):
    return bytes(int(h, 16) for h in re.findall(r'\\x([0-9a-fA-F]{2})', s))


def fd_kind(annot):
    a = annot.decode(errors='replace') if isinstance(annot, bytes) else annot
    if 'eventfd' in a:
        return 'eventfd'
    if a.startswith('socket:'):
        return 'socket'
    if a.startswith('pipe:'):
        return 'pipe'
    if 'memfd' in a or a.startswith('/dev/shm') or a.startswith('/dev/hugepages') or a.startswith('/'):
        return 'memfd' if not a.startswith('/dev/null') else 'null'
    return 'eventfd'


def messages(path):
    """(socket, request, flags, payload, [fd kinds]) for each message, in order."""
    bufs = {}
    for line in open(path, errors='replace'):
        m = LINE.search(line)
        if not m:
            continue
        fd, annot, data, n = m.group(1), unhex(m.group(2)), unhex(m.group(3)), int(m.group(4))
        if not annot.startswith(b'socket:'):
            continue
        data = data[:n]
        key = annot
        kinds = []
        c = CMSG.search(line)
        if c:
            for item in c.group(1).split(','):
                am = re.search(r'<([^>]*)>', item)
                kinds.append(fd_kind(unhex(am.group(1)) if am else b''))
        buf, fds = bufs.get(key, (b'', []))
        buf += data
        fds = fds + kinds
        while len(buf) >= 12:
            req, flags, size = struct.unpack('<III', buf[:12])
            if len(buf) < 12 + size:
                break
            yield key, req, flags, buf[12:12 + size], fds
            buf, fds = buf[12 + size:], []
        bufs[key] = (buf, fds)


def convert(path, config=0, with_traffic=True):
    ports, out, got_base, started, traffic_done = {}, bytes([config]), set(), set(), False
    for sock, req, flags, pl, fds in messages(path):
        if sock not in ports:
            if len(ports) == 3:
                continue
            ports[sock] = len(ports)
        p = ports[sock]
        name = REQ.get(req, 'RAW')
        u64 = struct.unpack('<Q', pl[:8])[0] if len(pl) >= 8 else 0
        idx = struct.unpack('<I', pl[:4])[0] if len(pl) >= 4 else 0
        stopping = name == 'GET_VRING_BASE' or (name == 'SET_VRING_ENABLE' and len(pl) >= 8 and
                                                 not struct.unpack('<I', pl[4:8])[0])
        if stopping and with_traffic and not traffic_done and started:
            out += traffic(sorted(set(ports.values())))
            traffic_done = True
        if name == 'SET_FEATURES':
            out += op('FEATURES', p, *features_args(u64))
        elif name == 'SET_PROTOCOL_FEATURES':
            out += op('MSG', p, MSG[name], pf_arg(u64))
        elif name in ('GET_CONFIG',):
            out += op('MSG', p, MSG[name], struct.unpack('<I', pl[4:8])[0] if len(pl) >= 8 else 12)
        elif name in ('NET_SET_MTU', 'SET_STATUS'):
            out += op('MSG', p, MSG[name], 1 if u64 == 1500 else u64)
        elif name in MSG and name not in ('SET_VRING_ENDIAN',):
            out += op('MSG', p, MSG[name], 0)
        elif name == 'SET_MEM_TABLE':
            n = struct.unpack('<I', pl[:4])[0] if len(pl) >= 4 else 1
            out += op('MEM', p, 0, 0) if n <= 1 else op('MEM', p, 6, n - 2)
        elif name == 'ADD_MEM_REG':
            out += op('MEM', p, 3, 0x40)
        elif name == 'REM_MEM_REG':
            out += op('MEM', p, 4, 0)
        elif name == 'SET_VRING_NUM':
            num = struct.unpack('<I', pl[4:8])[0]
            out += op('RING', p, idx, 0, NUMS.get(num, 1), 0)
        elif name == 'SET_VRING_ADDR':
            fl = struct.unpack('<I', pl[4:8])[0]
            out += op('RING', p, idx, 1, fl & 1, 0)
        elif name == 'SET_VRING_BASE':
            base = struct.unpack('<I', pl[4:8])[0]
            out += op('RING', p, idx, 2, 1 if base and (p, idx) in got_base else 0, 0)
        elif name == 'GET_VRING_BASE':
            got_base.add((p, idx))
            out += op('RING', p, idx, 7, 0, 0)
        elif name in ('SET_VRING_KICK', 'SET_VRING_CALL', 'SET_VRING_ERR'):
            what = {'SET_VRING_KICK': 3, 'SET_VRING_CALL': 4, 'SET_VRING_ERR': 5}[name]
            nofd = 8 if u64 & 0x100 else 0
            out += op('RING', p, u64 & 0xff, what, (FD_KIND[fds[0]] if fds else 0) | nofd, 0)
            if name == 'SET_VRING_KICK':
                started.add((p, u64 & 0xff))
        elif name == 'SET_VRING_ENABLE':
            num = struct.unpack('<I', pl[4:8])[0]
            out += op('RING', p, idx, 6, num & 1, 0)
        elif name == 'SEND_RARP':
            out += op('RARP', p, 3, *pl[:6])
        elif name == 'SET_CONFIG':
            off, size = struct.unpack('<II', pl[:8])
            out += op('CONFIG', p, 1, off, size, *(pl[12:18] + bytes(6))[:6])
        elif name == 'SET_LOG_BASE':
            out += op('LOG', p, 0, 0)
        elif name == 'SET_DEVICE_STATE_FD':
            out += op('STATE', p, struct.unpack('<I', pl[:4])[0] & 1, 0, 64, 0, 0)
        else:
            size = min(len(pl), 255)
            kind = FD_KIND.get(fds[0], 0) if fds else 0
            out += op('RAW', p, req, flags, size, min(len(fds), 3) | kind << 2) + pl[:size]
    if with_traffic and not traffic_done:
        out += traffic(sorted(set(ports.values())))
    return out


def record(mode, out):
    """A recording of MODE's frontends (see the usage); tests/kit/harness.py starts everything."""
    import time
    from tests.kit.harness import NoNs, Vnetd, guest_addr, guest_kit, uml_start, workdir
    from tests.kit.guest import QemuGuest, UmlGuest
    strace = ['strace', '-f', '-qq', '-e', 'trace=recvmsg', '-xx', '-y', '-s', '2048', '-o',
              os.path.abspath(out)]
    macs = ['52:54:00:88:00:01', '52:54:00:88:00:02']
    if mode.startswith('dpdk'):
        from bench.lib import dp_procs as P
        wd = workdir('rec-' + mode)
        socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
        extra = {'dpdk': '', 'dpdk_packed': ',packed_vq=1', 'dpdk_inorder': ',in_order=1,mrg_rxbuf=0',
                 'dpdk_packed_inorder': ',packed_vq=1,in_order=1'}[mode]
        with Vnetd(NoNs(), ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(socks, macs)], wd,
                   prefix=strace):
            fe = P.Testpmd('virtio-user', P.eal_args('rec%d' % os.getpid(), 0, [
                'net_virtio_user%d,path=%s,queues=1,mac=%s%s' % (i, socks[i], macs[i], extra)
                for i in range(2)], mem_mb=512),
                ['--forward-mode=flowgen', '--total-num-mbufs=8192', '--eth-peer=0,%s' % macs[1],
                 '--eth-peer=1,%s' % macs[0]], os.path.join(wd, 'testpmd.log'))
            try:
                fe.wait_ready(120)
                fe.cmd('start')
                time.sleep(1)
                fe.cmd('stop')
            finally:
                fe.quit()
                P.JANITOR.clean()
    elif mode == 'uml':
        kit, wd = uml_start('rec-uml')
        socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
        with Vnetd(NoNs(), ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(socks, macs)], wd,
                   prefix=strace):
            with UmlGuest(kit, socks[0], log_path=os.path.join(wd, 'a.log')) as a, \
                    UmlGuest(kit, socks[1], log_path=os.path.join(wd, 'b.log')) as b:
                guest_addr(a, '10.88.0.1')
                guest_addr(b, '10.88.0.2')
                a.run('ping -c 2 -W 5 10.88.0.2', timeout=60)
    elif mode == 'qemu':
        kit, wd = guest_kit(), workdir('rec-qemu')
        sock = os.path.join(wd, 'p0.sock')
        with Vnetd(NoNs(), ['socket=%s,switch,mac=%s' % (sock, macs[0])], wd, prefix=strace):
            with QemuGuest(kit, vhost_socket=sock, mac=macs[0], device_opts=',vectors=0',
                           log_path=os.path.join(wd, 'qemu.log')) as g:
                g.run('ip link set eth0 up')
    else:
        raise SystemExit('unknown mode %s' % mode)


# ---- hand-made seeds ----

def hand(outdir):
    """Sequences after the vhost-user spec and QEMU's / DPDK's / UML's behaviour (see each)."""
    os.makedirs(outdir, exist_ok=True)
    seeds = {}
    base = 1 << F_VERSION_1 | 1 << 5 | 1 << 16   # VERSION_1, MAC, STATUS
    split = base | 1 << F_MRG | 1 << F_CTRL_VQ | 1 << 18 | 1 << 23 | 1 << F_EVENT_IDX | 1 << F_INDIRECT
    pf_qemu = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 3 | 1 << 5 | 1 << 9 | 1 << 13 | 1 << 15

    def qemu_port(p, feats, num=1, queues=3, mem=(0, 0)):
        """QEMU's order: GET_FEATURES, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES,
        GET_QUEUE_NUM, GET_MAX_MEM_SLOTS, SET_BACKEND_REQ_FD, SET_OWNER, then at driver start
        SET_FEATURES, SET_MEM_TABLE, per ring NUM, BASE, ADDR, KICK, CALL, ENABLE."""
        s = op('MSG', p, 0, 0) + op('MSG', p, 2, 0) + op('MSG', p, 3, pf_arg(pf_qemu))
        s += op('MSG', p, 4, 0) + op('MSG', p, 6, 0) + op('MSG', p, 5, 0) + op('MSG', p, 1, 0)
        for q in range(queues):
            s += op('RING', p, q, 4, 0, 0)            # QEMU sends every CALL fd early too
        s += op('FEATURES', p, *features_args(feats | 1 << F_PROTOCOL))
        s += op('MEM', p, *mem)
        for q in range(queues):
            s += op('RING', p, q, 0, num, 0) + op('RING', p, q, 2, 0, 0) + op('RING', p, q, 1, 0, 0)
            s += op('RING', p, q, 3, 0, 0) + op('RING', p, q, 4, 0, 0) + op('RING', p, q, 6, 1, 0)
        return s

    # QEMU: three ports, split rings with the control queue; traffic; the guest's MAC via ctrl.
    s = bytes([0]) + b''.join(qemu_port(p, split) for p in range(3)) + traffic([0, 1, 2])
    s += op('CTRL', 0, 0, 0, 1, 1)                    # CTRL_RX PROMISC on
    seeds['qemu_split_3ports'] = s
    # QEMU packed + IN_ORDER (a guest with packed=on), two regions.
    s = bytes([0]) + b''.join(qemu_port(p, split | 1 << F_PACKED | 1 << F_IN_ORDER, mem=(1, 0))
                              for p in range(3)) + traffic([0, 1, 2])
    seeds['qemu_packed_inorder'] = s
    # QEMU migration source: LOG_ALL with a log, then stop (GET_VRING_BASE) and DEVICE_STATE save.
    s = bytes([0]) + b''.join(qemu_port(p, split) for p in range(3)) + traffic([0, 1])
    s += op('LOG', 0, 0, 4) + traffic([0]) + op('LOG', 0, 0, 8)
    s += b''.join(op('RING', 0, q, 7, 0, 0) for q in range(3)) + op('STATE', 0, 0, 0, 0, 0, 0)
    s += op('RECONNECT', 0) + qemu_port(0, split) + op('STATE', 0, 1, 0, 0, 0, 0)
    s += op('RARP', 0, 0, 0, 0, 0, 0, 0, 0) + traffic([0, 1])
    seeds['qemu_migration'] = s
    # QEMU guest driver reload: stop, new features (packed -> split), restart on the same rings.
    s = bytes([0]) + b''.join(qemu_port(p, split | 1 << F_PACKED) for p in range(2)) + traffic([0, 1])
    s += b''.join(op('RING', 0, q, 7, 0, 0) for q in range(3))
    s += op('MSG', 0, 9, 0) + op('FEATURES', 0, *features_args(split | 1 << F_PROTOCOL))
    s += op('START', 0, 1, 0) + traffic([0, 1])
    seeds['qemu_driver_reload'] = s
    # DPDK virtio-user: no SET_OWNER first, SET_FEATURES before protocol features, mem slots via
    # SET_MEM_TABLE of hugepage pieces, rings of 256 with ENABLE after KICK, MQ with 2 pairs.
    dpdk = base | 1 << F_MRG | 1 << F_MQ | 1 << F_CTRL_VQ | 1 << F_IN_ORDER | 1 << F_PROTOCOL
    s = bytes([0])
    for p in range(2):
        s += op('MSG', p, 1, 0) + op('MSG', p, 0, 0) + op('MSG', p, 2, 0)
        s += op('MSG', p, 3, pf_arg(1 << 0 | 1 << 3 | 1 << 15)) + op('MSG', p, 4, 0)
        s += op('FEATURES', p, *features_args(dpdk)) + op('MEM', p, 6, 2)
        for q in range(5):
            s += op('RING', p, q, 4, 0, 0) + op('RING', p, q, 0, 1, 0) + op('RING', p, q, 2, 0, 0)
            s += op('RING', p, q, 1, 0, 0) + op('RING', p, q, 3, 0, 0) + op('RING', p, q, 6, 1, 0)
    s += traffic([0, 1]) + op('CTRL', 0, 4, 0, 2, 2, 0)   # VQ_PAIRS_SET 2
    seeds['dpdk_mq_inorder'] = s
    # UML: SET_PROTOCOL_FEATURES with NEED_REPLY (REPLY_ACK on that very message), no
    # PROTOCOL_FEATURES bit in SET_FEATURES (rings enabled by KICK), socketpair call fds,
    # memory through ADD_MEM_REG-less SET_MEM_TABLE.
    s = bytes([0])
    for p in range(2):
        s += op('MSG', p, 1, 0) + op('MSG', p, 0, 0) + op('MSG', p, 2, 0)
        s += op('RAW', p, 16, 1 | 8, 8, 0) + struct.pack('<Q', 1 << 3 | 1 << 5 | 1 << 9)
        s += op('FEATURES', p, *features_args(base)) + op('MEM', p, 0, 0)
        for q in range(2):
            s += op('RING', p, q, 0, 1, 0) + op('RING', p, q, 2, 0, 0) + op('RING', p, q, 1, 0, 0)
            s += op('RING', p, q, 4, 5, 0) + op('RING', p, q, 3, 0, 0)
    s += traffic([0, 1])
    seeds['uml_switch'] = s
    # BOOT shortcut with every port, then frames with VLAN tags, IPv6 ND, and a reconnect.
    s = bytes([0]) + b''.join(op('BOOT', p, 8 | 16 | 32, 1, 8 | 128 | 1, 0, 0) for p in range(3))
    s += traffic([0, 1, 2]) + op('TX', 2, 0, 2, 1 | 2 << 4, 0, 0) + op('TX', 1, 0, 2, 1 | 3 << 4, 0, 40)
    s += op('RECONNECT', 1) + op('BOOT', 1, 8 | 16 | 32, 1, 8 | 128 | 1, 0, 0) + traffic([1, 2])
    seeds['boot_vlan_nd_reconnect'] = s
    # Two switch workers (config bit 0): frames cross to port 2 through the cross-worker queue.
    s = bytes([1]) + b''.join(op('BOOT', p, 8 | 16, 1, 8 | 128, 0, 0) for p in range(3)) + traffic([0, 1, 2])
    seeds['two_workers'] = s
    for name, data in seeds.items():
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(data)
    return sorted(seeds)


def dump(data):
    """The operations of an input, decoded (argument bytes as the fuzzer reads them)."""
    print('config %#04x' % data[0])
    i = 1
    while i < len(data):
        b = data[i]
        name = OPS[(b & 0x3f) % len(OPS)]
        n = ARGS[name]
        args = list(data[i + 1:i + 1 + n])
        extra = 0
        if name == 'CTRL' and len(args) == 3:
            extra = args[2] % 64
        elif name == 'POKE' and len(args) == 3:
            extra = args[2] % 17
        elif name == 'RAW' and len(args) == 4:
            extra = min(args[2] + (9 if args[3] & 0x80 else 0), 264)
        args += list(data[i + 1 + n:i + 1 + n + extra])
        desc = ''
        if name == 'RAW' and args:
            desc = ' (%s)' % REQ.get(args[0] % 48, '?')
        if name == 'MSG' and args:
            desc = ' (%s)' % [k for k, v in MSG.items() if v == args[0] % 16][0]
        print('port %d %-9s %s%s' % ((b >> 6) % 3, name, ' '.join('%02x' % a for a in args), desc))
        i += 1 + n + extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('convert')
    c.add_argument('recording')
    c.add_argument('out')
    c.add_argument('--config', type=int, default=0)
    c.add_argument('--no-traffic', action='store_true')
    r = sub.add_parser('record')
    r.add_argument('mode')
    r.add_argument('out')
    h = sub.add_parser('hand')
    h.add_argument('outdir')
    d = sub.add_parser('dump')
    d.add_argument('input')
    a = ap.parse_args()
    if a.cmd == 'convert':
        data = convert(a.recording, a.config, not a.no_traffic)
        with open(a.out, 'wb') as f:
            f.write(data)
        print('%s: %d bytes' % (a.out, len(data)))
    elif a.cmd == 'record':
        record(a.mode, a.out)
    elif a.cmd == 'hand':
        print('\n'.join(hand(a.outdir)))
    else:
        dump(open(a.input, 'rb').read())


if __name__ == '__main__':
    sys.exit(main())
