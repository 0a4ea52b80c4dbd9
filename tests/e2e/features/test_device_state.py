# SPDX-License-Identifier: MIT
"""Live migration over vhost-user without a VMM: a Python frontend drives vnetd's dirty log
(SET_LOG_BASE + VHOST_F_LOG_ALL: exactly the pages vnetd wrote get their bits), its device
state (SET_DEVICE_STATE_FD save on one port, load on another, CHECK_DEVICE_STATE; corrupted,
oversized and never-finished streams refused without blocking vnetd) and SEND_RARP (the
switch relearns the announced MAC). QEMU 7.2 has no DEVICE_STATE, so this is its e2e test.
Switch ports only: needs no root and no guest."""

import mmap
import os
import select
import struct
import time

from tests.kit import vhost_user_client as vu
from tests.kit.harness import NoNs, Vnetd, check, workdir

PAGE = 4096
MAC1 = '52:54:00:aa:00:01'
FEAT = vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_NET_F_VQ_NOTF_COAL)
PROTO = ((1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_LOG_SHMFD) |
         (1 << vu.PROTOCOL_F_RARP) | (1 << vu.PROTOCOL_F_DEVICE_STATE))


def frontend(path, rings=True):
    f = vu.VirtioNetFrontend(path, features=FEAT, protocol=PROTO)
    if rings:
        f.setup()
    else:
        f.negotiate()
    return f


def rx_buffer(f, size=2048):
    """One writable RX buffer on a page of its own; returns its GPA."""
    f.mem.alloc(PAGE, PAGE)                  # keep it off the rings' pages
    gpa = f.mem.alloc(size, PAGE)
    ring = f.rings[vu.RX_Q]
    ring.put_avail(ring.add_chain([(gpa, size, True)]))
    ring.kick()
    return gpa


def recv_frame(f, gpa, timeout=2.0):
    u = f.rings[vu.RX_Q].get_used(timeout)
    return None if u is None else f.mem.read(gpa, u[1])[vu.NET_HDR_LEN:]


def bits(log, gpa, n=1):
    """Pages [gpa, gpa + n pages) that have their log bit set."""
    out = []
    for p in range(gpa // PAGE, gpa // PAGE + n):
        if log[p // 8] >> (p % 8) & 1:
            out.append(p * PAGE)
    return out


def set_log_base(f, size, offset=0, fd=None):
    return f.vu.request(vu.SET_LOG_BASE, struct.pack('=QQ', size, offset), [fd])


def state_fd(f, direction, fd):
    return struct.unpack('=Q', f.vu.request(vu.SET_DEVICE_STATE_FD,
                                            struct.pack('=II', direction, 0), [fd]))[0]


def check_state(f):
    return struct.unpack('=Q', f.vu.request(vu.CHECK_DEVICE_STATE))[0]


def save_state(f):
    r, w = os.pipe()
    reply = state_fd(f, 0, w)
    os.close(w)
    data = b''
    while True:
        ready, _, _ = select.select([r], [], [], 5)
        check(bool(ready), 'the saved state arrives on the pipe')
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    return reply, data, check_state(f)


def load_state(f, data, close=True):
    r, w = os.pipe()
    reply = state_fd(f, 1, r)
    os.close(r)
    os.write(w, data)
    if close:
        os.close(w)
    res = check_state(f)
    if not close:
        os.close(w)
    return reply, res


def test_dirty_log(vd, socks):
    f0, f1 = frontend(socks[0]), frontend(socks[1])
    end = f1.mem.gpa_base + f1.mem.size
    size = (end // PAGE + 7) // 8
    logfd = os.memfd_create('vnetd-test-log', os.MFD_CLOEXEC)
    os.ftruncate(logfd, size)
    log = mmap.mmap(logfd, size)
    # Hostile log bases are refused; the connection stays.
    check(set_log_base(f1, 0, 0, logfd) != b'\0' * 8, 'SET_LOG_BASE of size 0 refused')
    check(set_log_base(f1, size, PAGE, logfd) != b'\0' * 8,
          'SET_LOG_BASE past the end of the memfd refused')
    check(set_log_base(f1, 1 << 40, 0, logfd) != b'\0' * 8, 'SET_LOG_BASE of 1 TiB refused')
    check(set_log_base(f1, size, 0, logfd) == b'\0' * 8, 'SET_LOG_BASE accepted')
    check(not vd.port_info()['p1']['dirty_log'], 'no logging before VHOST_F_LOG_ALL')
    ring = f1.rings[vu.RX_Q]
    vu.ok(f1.vu.set_features(FEAT | (1 << vu.VHOST_USER_F_PROTOCOL_FEATURES) |
                             (1 << vu.VHOST_F_LOG_ALL)), 'SET_FEATURES LOG_ALL')
    vu.ok(f1.vu.set_vring_addr(vu.RX_Q, f1.mem.uva(ring.desc), f1.mem.uva(ring.used),
                               f1.mem.uva(ring.avail), vu.VRING_F_LOG, ring.used),
          'SET_VRING_ADDR with VHOST_VRING_F_LOG')
    check(vd.port_info()['p1']['dirty_log'], 'vnetctl ports: dirty_log on')
    gpa = rx_buffer(f1)
    untouched = f1.mem.alloc(PAGE, PAGE)
    log[:] = bytes(size)
    frame = vu.ether_frame('ff:ff:ff:ff:ff:ff', '52:54:00:aa:00:00', b'x' * 3000)[:1400]
    check(f0.transmit(frame), 'p0 sent a broadcast')
    got = recv_frame(f1, gpa)
    check(got == frame, 'p1 received it')
    check(bits(log, gpa) == [gpa], 'the RX buffer\'s page is logged')
    check(bits(log, ring.used) == [ring.used - ring.used % PAGE],
          'the RX used ring\'s page is logged (log_guest_addr)')
    check(not bits(log, untouched), 'an untouched page is not logged')
    total = sum(bin(b).count('1') for b in log[:])
    check(total <= 3, 'nothing else is logged (%d pages)' % total)
    # Logging off: nothing more is written.
    vu.ok(f1.vu.set_features(FEAT | (1 << vu.VHOST_USER_F_PROTOCOL_FEATURES)), 'SET_FEATURES')
    check(not vd.port_info()['p1']['dirty_log'], 'dirty_log off without LOG_ALL')
    log[:] = bytes(size)
    gpa = rx_buffer(f1)
    check(f0.transmit(frame) and recv_frame(f1, gpa) == frame, 'p1 still receives')
    check(not any(log[:]), 'no page logged with logging off')
    log.close()
    os.close(logfd)
    f0.close()
    f1.close()


def test_log_shrunk(vd, socks):
    """A frontend that truncates its log memfd under vnetd: the write into it faults (SIGBUS),
    vnetd drops that frontend and keeps running."""
    f0, f1 = frontend(socks[0]), frontend(socks[1])
    size = ((f1.mem.gpa_base + f1.mem.size) // PAGE + 7) // 8
    logfd = os.memfd_create('vnetd-test-log', os.MFD_CLOEXEC)
    os.ftruncate(logfd, size)
    check(set_log_base(f1, size, 0, logfd) == b'\0' * 8, 'SET_LOG_BASE accepted')
    vu.ok(f1.vu.set_features(FEAT | (1 << vu.VHOST_USER_F_PROTOCOL_FEATURES) |
                             (1 << vu.VHOST_F_LOG_ALL)), 'SET_FEATURES LOG_ALL')
    os.ftruncate(logfd, 0)                        # the log is gone under vnetd's mapping
    rx_buffer(f1)
    f0.transmit(vu.ether_frame('ff:ff:ff:ff:ff:ff', '52:54:00:aa:00:00'))
    check(f1.vu.wait_closed(5), 'vnetd dropped the frontend whose log faulted')
    check(vd.alive() and not vd.port_info()['p1']['connected'], 'vnetd still running')
    os.close(logfd)
    f0.close()
    f1.close()


def test_device_state(vd, socks):
    f0 = frontend(socks[0])
    check(f0.coal_rx_set(32, 250) == vu.VIRTIO_NET_OK, 'guest RX_SET 32 packets / 250 us on p0')
    vd.ctl('coalesce', 'p0', '--queue', '1', 'tx-usecs', '123', 'tx-frames', '7')
    for q in (vu.RX_Q, vu.TX_Q, vu.CTRL_Q):       # the device stops: GET_VRING_BASE
        f0.vu.get_vring_base(q)
    reply, data, res = save_state(f0)
    check(reply == 1 << 8, 'SET_DEVICE_STATE_FD save accepted (no fd back)')
    check(data[:4] == b'VNDS' and res == 0, 'state saved (%d bytes), CHECK_DEVICE_STATE 0'
          % len(data))
    f0.close()

    f2 = frontend(socks[2], rings=False)
    bad = bytearray(data)
    bad[62] = 9                                   # queue 0's "who set it": not a setter
    check(load_state(f2, bytes(bad)) == (1 << 8, 1), 'a corrupted state is refused at CHECK')
    check(load_state(f2, data[:-1]) == (1 << 8, 1), 'a truncated state is refused')
    check(load_state(f2, data + bytes(9000)) == (1 << 8, 1), 'an oversized stream is refused')
    t0 = time.monotonic()
    check(load_state(f2, data[:10], close=False) == (1 << 8, 1),
          'a stream the frontend never finishes is refused at CHECK')
    check(time.monotonic() - t0 < 5 and vd.port_info()['p2']['connected'],
          'vnetd did not wait for it')
    check(vd.stats()['p2'][0]['max_usecs'] == 0, 'nothing of the refused states was applied')
    check(check_state(f2) == 1, 'CHECK_DEVICE_STATE without a transfer fails')
    check(load_state(f2, data) == (1 << 8, 0), 'the saved state loads on p2')
    f2.set_mem()
    for q in (vu.RX_Q, vu.TX_Q, vu.CTRL_Q):
        f2.setup_ring(f2.make_ring(q))
    st = vd.stats()['p2']
    check(st[0]['max_packets'] == 32 and st[0]['max_usecs'] == 250 and st[0]['set_by'] == 'guest',
          'p2 RX queue: 32 / 250 us set by the guest, after its rings started')
    check(st[1]['max_packets'] == 7 and st[1]['max_usecs'] == 123 and st[1]['set_by'] == 'host',
          'p2 TX queue: 7 / 123 us set by the host')
    f2.close()


def test_rarp(vd, socks):
    f0, f1, f2 = (frontend(s) for s in socks)
    g2 = rx_buffer(f2)
    mac = bytes(int(x, 16) for x in MAC1.split(':'))
    vu.ok(f1.vu.request(vu.SEND_RARP, mac + b'\0\0'), 'SEND_RARP')
    got = recv_frame(f2, g2)
    check(got is not None and got[12:14] == b'\x80\x35' and got[6:12] == mac and
          got[:6] == b'\xff' * 6, 'the announce reached the other switch ports as a RARP')
    check(vd.port_info()['p1']['rarps'] == 1, 'vnetctl ports: rarps 1')
    g1, g2 = rx_buffer(f1), rx_buffer(f2)
    frame = vu.ether_frame(MAC1, '52:54:00:aa:00:00')
    check(f0.transmit(frame), 'p0 sends to the announced MAC')
    check(recv_frame(f1, g1) == frame, 'it goes to p1, where the switch learned it')
    check(recv_frame(f2, g2, timeout=0.5) is None, 'and not to p2 (no flooding)')
    for f in (f0, f1, f2):
        f.close()


def main():
    wd = workdir('devstate')
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(3)]
    # port-security=off: p0 sends from 52:54:00:aa:00:00 and p1 announces MAC1, not their ports'
    # derived MACs (the switch's port security is tested in test_hostile_frontend.py).
    with Vnetd(NoNs(), ['socket=%s,switch,port-security=off' % s for s in socks], wd) as vd:
        test_dirty_log(vd, socks)
        test_log_shrunk(vd, socks)
        test_device_state(vd, socks)
        test_rarp(vd, socks)
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
