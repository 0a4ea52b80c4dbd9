# SPDX-License-Identifier: MIT
"""The RX stall stays fixed: a UML guest on a vnetd tap port with its TCP buffers raised
(tcp_rmem/tcp_wmem max 16 MB, so the host outruns it and the RX ring runs dry) receives bulk TCP
several times; every run completes, vnetd keeps delivering, and the host still reaches the
guest afterwards. Before the fix (avail_event set to the driver's avail index while a packet
waits for more mergeable buffers) the RX queue stopped for good the first time the ring ran
dry: vnetd delivered nothing more and the guest's ARP for the host went unanswered. No timing
is asserted."""

import os
import shutil
import time

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, guest_addr, host_addr, iperf3_client,
                               skip, uml_start)

HOST_IP, GUEST_IP = '10.89.0.1', '10.89.0.2'
RUNS, SECONDS = 6, 3
NONE = 'ethtool -C eth0 rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 1'


def iperf_rx(ns):
    """One host -> guest iperf3 run: (bytes the guest received, or None, what went wrong)."""
    ok, j, why = iperf3_client(ns, GUEST_IP, [], SECONDS, json_out=True)
    rcv = j.get('end', {}).get('sum_received') if ok else None
    if not rcv:
        return None, why or 'no sum_received'
    return rcv['bytes'], ''


def main():
    kit, wd = uml_start('rx-stall')
    if shutil.which('iperf3') is None:
        skip('iperf3 is not installed (apt-get install iperf3)')
    sock = os.path.join(wd, 'p0.sock')
    with Netns('vnetd-e2e-rxstall') as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', HOST_IP)
        with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
            guest_addr(g, GUEST_IP)
            rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
            check(rc == 0, 'guest pings host')
            g.run('echo 4096 16384 16777216 > /proc/sys/net/ipv4/tcp_wmem; '
                  'echo 4096 131072 16777216 > /proc/sys/net/ipv4/tcp_rmem', check=True)
            rc, out = g.run(NONE, timeout=60)
            print('guest: %s -> rc %d %s' % (NONE, rc, out.strip()))
            g.run('iperf3 -s -D --logfile /tmp/iperf3.log', check=True)
            time.sleep(0.5)
            for i in range(RUNS):
                before = vd.stats()['p0'][0]['packets']
                got, err = iperf_rx(ns)
                after = vd.stats()['p0'][0]
                print('run %d: %s bytes; RX queue packets +%d, rx_no_buffers %d'
                      % (i + 1, got, after['packets'] - before, after['rx_no_buffers']))
                check(got is not None and got > 0,
                      'host -> guest bulk TCP run %d of %d completes%s'
                      % (i + 1, RUNS, '' if got else ' (%s)' % err))
                check(after['packets'] > before, 'vnetd delivered into the RX ring in run %d'
                      % (i + 1))
            print('the RX ring ran dry %d times (what used to stop the queue)'
                  % vd.stats()['p0'][0]['rx_no_buffers'])
            r = ns.run(['ping', '-c', '3', '-W', '5', GUEST_IP], check=False, timeout=60)
            check(r.returncode == 0, 'host pings guest after the runs (the RX queue did not stop)')
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
