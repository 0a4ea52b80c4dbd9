# SPDX-License-Identifier: MIT
"""vnetd --poll-us 200: two switch ports (Python vhost-user frontends, no guest) still carry frames
byte-exact; the sender's TX queue polled (its `polls` counter grew); once the traffic stopped the
queue went back to kicks (the counter stays still while idle: an idle port costs nothing), and a
frame sent after that, announced by a kick only, still arrives."""

import os
import time

from tests.kit.harness import NoNs, Vnetd, check, workdir
from tests.kit.vhost_user_client import RX_Q, TX_Q, VirtioNetFrontend, ether_frame

MAC_A, MAC_B = '52:54:00:77:00:0a', '52:54:00:77:00:0b'
BCAST = 'ff:ff:ff:ff:ff:ff'
HDR = 12


def post_rx(f, n, size=2048):
    """n writable buffers on f's RX ring; {head: gpa}."""
    ring, bufs = f.rings[RX_Q], {}
    for _ in range(n):
        gpa = f.mem.alloc(size)
        bufs[ring.add_chain([(gpa, size, True)])] = gpa
        ring.put_avail(list(bufs)[-1])
    ring.kick()
    return bufs


def receive(f, bufs, timeout=5.0):
    """The next frame f's RX ring got (header stripped), or None."""
    e = f.rings[RX_Q].get_used(timeout)
    if e is None:
        return None
    head, length = e
    return f.mem.read(bufs[head] + HDR, length - HDR)


def main():
    wd = workdir('poll-mode')
    socks = [os.path.join(wd, '%s.sock' % n) for n in 'ab']
    ports = ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(socks, (MAC_A, MAC_B))]
    with Vnetd(NoNs(), ports, wd, extra=['--poll-us', '200']) as vd:
        a = VirtioNetFrontend(socks[0], timeout=10.0).setup()
        b = VirtioNetFrontend(socks[1], timeout=10.0).setup()
        try:
            bufs = post_rx(b, 48)
            check(b.transmit(ether_frame(BCAST, MAC_B, b'hello'.ljust(46, b'.'))),
                  'b announced its MAC')
            sent = [ether_frame(MAC_B, MAC_A, bytes([i]) * (60 + 13 * i)) for i in range(32)]
            check(all([a.transmit(fr, timeout=5.0) for fr in sent]), 'a: 32 frames used')
            got = [receive(b, bufs) for _ in sent]
            check(got == sent, '32 frames a -> b arrived byte-exact, in order, with --poll-us 200')
            st = vd.stats()
            check(st['p0'][TX_Q]['polls'] > 0,
                  'a\'s TX queue polled (polls %d, kicks %d)'
                  % (st['p0'][TX_Q]['polls'], st['p0'][TX_Q]['kicks']))
            time.sleep(0.3)  # 1500 poll windows: the queue went back to kicks long ago
            p1 = vd.stats()['p0'][TX_Q]['polls']
            time.sleep(0.5)
            p2 = vd.stats()['p0'][TX_Q]['polls']
            check(p1 == p2, 'idle: no polling without traffic (polls %d then %d)' % (p1, p2))
            late = ether_frame(MAC_B, MAC_A, b'after idle'.ljust(50, b'!'))
            check(a.transmit(late, timeout=5.0) and receive(b, bufs) == late,
                  'a frame after the poll window ended (a kick wakes vnetd again) arrives')
        finally:
            a.close()
            b.close()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
