# SPDX-License-Identifier: MIT
"""RSS and hash reporting with a Linux 7.2 guest (sid's User-Mode Linux) on a queues=2 tap port
with rss=on: the driver negotiates VIRTIO_NET_F_RSS and HASH_REPORT and sends its RSS_CONFIG at
probe; `ethtool -X eth0 equal 2` and `ethtool -X eth0 hkey KEY weight 1 3` reach vnetd's table
(and `ethtool -x` reads them back); `ethtool -N eth0 rx-flow-hash udp4 sd` / `sdfn` change the
hash types; 64 UDP flows from the host land on the RX queues as a reference Toeplitz over the
table predicts, within 10 points of the table's weights (vnetd's per-queue packet counters);
the skb->hash the guest's driver took from each packet's HASH_REPORT header equals the
reference Toeplitz (rxhash_probe.c, fetched by the guest); the transfer is byte-exact."""

import os
import re

from harness import (HostServers, Netns, UmlGuest, Vnetd, check, guest_addr, host_addr,
                     make_blob, require_root_and_tun, uml_kit, workdir)
from rss_kit import (KEY, build_probe, check_flows, check_guest_hashes, guest_hashes, weights)

MAC = '52:54:00:72:05:02'
HOST, GUEST = '10.72.5.1', '10.72.5.2'
SIZE_MB = 4


def rss(vd):
    return vd.port_info()['p0']['rss']


def main():
    require_root_and_tun()
    kit = uml_kit('sid')
    wd = workdir('uml_rss')
    sock = os.path.join(wd, 'p0.sock')
    blob_sha = make_blob(os.path.join(wd, 'blob'), SIZE_MB)
    probe, why = build_probe(wd)
    if not probe:
        print('guest hash check not possible: %s' % why)
    port = 'socket=%s,tap=vtap0,mac=%s,queues=2,rss=on' % (sock, MAC)
    with Netns('vnetd-e2e-uml-rss') as ns, Vnetd(ns, [port], wd) as vd:
        host_addr(ns, 'vtap0', HOST)
        with HostServers(ns, HOST, wd), \
                UmlGuest(kit, sock, log_path=os.path.join(wd, 'guest.log')) as g:
            run_guest(g, vd, ns, blob_sha, probe)
        check(vd.alive(), 'vnetd still running')


def run_guest(g, vd, ns, blob_sha, probe):
    guest_addr(g, GUEST)
    rc, _ = g.run('ping -c 2 -W 5 %s' % HOST, timeout=60)
    check(rc == 0, 'guest pings the host through vnetd')
    r = rss(vd)
    check(r is not None and r['rss'] and r['hash_report'],
          'the guest negotiated RSS and HASH_REPORT (%s)' % r)
    print('after probe: steering %s, types %s, weights %s' % (
        r['steering'], r['hash_types'], weights(r['indirection_table'])))
    g.run('ethtool -L eth0 combined 2', check=True)

    g.run('ethtool -X eth0 equal 2', check=True)
    r = rss(vd)
    t = r['indirection_table']
    check(r['steering'] and len(t) == 128 and t == [i % 2 for i in range(128)],
          'ethtool -X equal 2: vnetd\'s table alternates rx0/rx1 (%s)' % weights(t))
    _, out = g.run('ethtool -x eth0', check=True)
    check('    0:      0     1     0     1' in out, 'ethtool -x reads the equal table back')

    g.run('ethtool -X eth0 hkey %s weight 1 3' % ':'.join('%02x' % b for b in KEY), check=True)
    r = rss(vd)
    t = r['indirection_table']
    check(weights(t) == {0: 32, 1: 96}, 'ethtool -X weight 1 3: 32 entries rx0, 96 rx1 (%s)'
          % weights(t))
    check(r['key'] == KEY.hex(), 'ethtool -X hkey: vnetd has the key')
    _, out = g.run('ethtool -x eth0', check=True)
    rows = [m.group(1) for m in (re.match(r'^\s*\d+:((?:\s+\d+)+)\s*$', ln)
                                 for ln in out.splitlines()) if m]
    guest_t = [int(x) for ln in rows for x in ln.split()]
    check(guest_t == t, 'ethtool -x reads the weighted table back (%d entries)' % len(guest_t))

    # The driver commits hash types only while NETIF_F_RXHASH is on (virtnet_set_hashflow()).
    g.run('ethtool -K eth0 rxhash on', check=True)
    g.run('ethtool -N eth0 rx-flow-hash udp4 sd', check=True)
    check('udpv4' not in rss(vd)['hash_types'], 'rx-flow-hash udp4 sd: UDPv4 hashing off (%s)'
          % rss(vd)['hash_types'])
    g.run('ethtool -N eth0 rx-flow-hash tcp4 sdfn', check=True)
    g.run('ethtool -N eth0 rx-flow-hash udp4 sdfn', check=True)
    r = rss(vd)
    check({'ipv4', 'tcpv4', 'udpv4'} <= set(r['hash_types']),
          'rx-flow-hash tcp4/udp4 sdfn: IPv4, TCPv4, UDPv4 on (%s)' % r['hash_types'])

    # 64 flows: where the reference Toeplitz over vnetd's table says, within 10 points.
    check_flows(vd, ns, HOST, GUEST, t)
    if probe:
        got = guest_hashes(g, vd, ns, HOST, GUEST, 'http://%s:8000/%s'
                           % (HOST, os.path.basename(probe)))
        check_guest_hashes(got, HOST, GUEST)

    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=300)
    check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)


if __name__ == '__main__':
    main()
