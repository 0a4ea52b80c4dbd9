#!/usr/bin/env python3
"""Reproduce the vnetd RX stall seen while benchmarking (fixed in 087ff9d; kept as a check).

A UML guest on a vnetd tap port raises its TCP buffers (tcp_rmem/tcp_wmem max 16 MB) so the host
can outrun it, then receives bulk TCP (iperf3 host -> guest) RUNS times with PROFILE (none,
light, moderate, aggressive).  Seen here, with coalescing off and on: after the RX ring first
runs dry (rx_no_buffers > 0) the queue never resumes: vnetd delivers no more packets, the
guest's ARP for the host goes unanswered, ping fails.  Prints vnetd's queue counters and the
guest's view when it happens.  Usage (root): python3 bench/repro_rx_stall.py [PROFILE] [RUNS]
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (GUEST_IP, HOST_IP, Netns, UmlGuest, Vnetd, apply_guest_profile,  # noqa: E402
                   guest_net_setup, harness, run_iperf)


def dump(g, vd):
    for q in json.loads(vd.ctl('stats', '--json').stdout)['ports'][0]['queues'][:2]:
        print({k: v for k, v in q.items() if k != 'lateness_us'})
    try:
        print(g.run('grep virtio /proc/interrupts; grep eth0 /proc/net/dev; ip neigh', timeout=20)[1])
    except harness.GuestError as e:
        print('guest console does not answer: ' + str(e)[:200])


def main():
    prof = sys.argv[1] if len(sys.argv) > 1 else 'none'
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    kit = harness.uml_kit()
    wd = harness.workdir('rx-stall')
    sock = os.path.join(wd, 'p0.sock')
    with Netns('vnetd-rx-stall') as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        ns.run('ip addr add %s/24 dev vtap0 && ip link set vtap0 up' % HOST_IP)
        with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
            guest_net_setup(g)
            g.run('echo 4096 16384 16777216 > /proc/sys/net/ipv4/tcp_wmem; '
                  'echo 4096 131072 16777216 > /proc/sys/net/ipv4/tcp_rmem', check=True)
            apply_guest_profile(g, vd, prof)
            for i in range(runs):
                t = time.time()
                r = run_iperf(ns, 'rx', 5)
                print('run %d (%.1f s): %s' % (i, time.time() - t, r), flush=True)
                if 'error' in r:
                    dump(g, vd)
                    p = ns.run(['ping', '-c', '3', '-W', '2', GUEST_IP], check=False)
                    print('host pings guest: %s' % ('ok' if p.returncode == 0 else 'FAILS'))
                    print('STALL reproduced (profile %s, run %d)' % (prof, i))
                    return 1
    print('no stall in %d runs' % runs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
