# SPDX-License-Identifier: MIT
"""1024 switch ports: vnetd starts with all of them (file descriptor limit raised by itself), a
frontend negotiates and sets up its rings on the last port, and a frame from it reaches a
frontend on the first (switch flooding across 1024 ports); vnetctl lists every port."""

import os
import resource

from tests.kit.harness import NoNs, Vnetd, check, workdir
from tests.kit.vhost_user_client import NET_HDR_LEN, RX_Q, VirtioNetFrontend

N = 1024


def main():
    wd = workdir('many-ports')
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(N)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Start vnetd with the usual soft limit of 1024 (if the hard limit allows more): vnetd
    # must raise it itself to open ~5 fds per port.
    lowered = hard > 1024 and soft > 1024
    if lowered:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        # port-security=off: the frame below is from 52:54:00:aa:00:01, not a derived MAC.
        vd = Vnetd(NoNs(), ['socket=%s,switch,port-security=off' % s for s in socks], wd)
        vd.__enter__()
    finally:
        if lowered:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        info = vd.port_info()
        check(len(info) == N and 'p%d' % (N - 1) in info, 'vnetd serves %d ports' % N)
        last = VirtioNetFrontend(socks[-1]).setup()
        first = VirtioNetFrontend(socks[0]).setup()
        ring = first.rings[RX_Q]
        buf = first.mem.alloc(2048)
        ring.put_avail(ring.add_chain([(buf, 2048, True)]))
        ring.kick()
        check(vd.port_info()['p%d' % (N - 1)]['connected'], 'the last port accepted a frontend')
        frame = b'\xff' * 6 + bytes.fromhex('525400aa0001') + b'\x08\x00' + bytes(50)
        check(last.transmit(frame, timeout=10), 'the last port transmits a frame')
        used = ring.get_used(timeout=10)
        got = first.mem.read(buf + NET_HDR_LEN, used[1] - NET_HDR_LEN) if used else None
        check(got == frame,
              'a broadcast from the last port reaches the first, byte-exact')
        last.close()
        first.close()
        check(vd.alive(), 'vnetd still running')
    finally:
        rc = vd.stop()
    check(rc == 0, 'clean shutdown of %d ports' % N)


if __name__ == '__main__':
    main()
