# SPDX-License-Identifier: MIT
"""RSS and hash reporting with a Linux 7.2 guest (sid's User-Mode Linux) on a queues=2 tap port
with rss=on: the driver negotiates VIRTIO_NET_F_RSS and HASH_REPORT and sends its RSS_CONFIG at
probe; `ethtool -X eth0 equal 2` and `ethtool -X eth0 hkey KEY weight 1 3` reach vnetd's table
(and `ethtool -x` reads them back); `ethtool -N eth0 rx-flow-hash udp4 sd` / `sdfn` change the
hash types; 64 UDP flows from the host land on the RX queues as a reference Toeplitz over the
table predicts, within 10 points of the table's weights (vnetd's per-queue packet counters);
the skb->hash the guest's driver took from each packet's HASH_REPORT header equals the
reference Toeplitz (rxhash_probe.c, fetched by the guest); the transfer is byte-exact.
The tap is multi-queue (one fd per queue pair): the flows arrive through both tap fds, yet each
frame's RX queue is the indirection table's choice, not its fd's; vnetctl stats (text and
--json) shows the RSS state and the tap queues."""

import json
import os
import re

from tests.kit.harness import (HostServers, Netns, UmlGuest, Vnetd, check, guest_addr, host_addr,
                               make_blob, require_root_and_tun, uml_kit, workdir)
from tests.kit.rss import (KEY, build_probe, check_flows, check_guest_hashes, guest_hashes,
                           guest_rss_commands, rss, weights)

MAC = '52:54:00:72:05:02'
HOST, GUEST = '10.72.5.1', '10.72.5.2'
SIZE_MB = 4


def tap_rx(vd):
    """Packets read per tap queue fd (vnetctl stats --json "tap_queues")."""
    port = json.loads(vd.ctl('stats', '--json').stdout)['ports'][0]
    return [q['rx_packets'] for q in port.get('tap_queues', [])]


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

    r = guest_rss_commands(g, vd)
    t = r['indirection_table']

    # 64 flows: where the reference Toeplitz over vnetd's table says, within 10 points.
    a, ta = vd.stats(), tap_rx(vd)
    check_flows(vd, ns, HOST, GUEST, t)
    b, tb = vd.stats(), tap_rx(vd)
    total = sum(b['p0'][2 * q]['packets'] - a['p0'][2 * q]['packets'] for q in (0, 1))
    st = json.loads(vd.ctl('stats', '--json').stdout)['ports'][0]
    check(st['rss'] == rss(vd), 'vnetctl stats --json carries the same RSS state as ports')
    text = vd.ctl('stats').stdout
    check(re.search(r'p0 rss: steering on, .*\n  table 128 entries: rx0 x32 rx1 x96', text)
          and 'key %s' % KEY.hex() in text and 'p0 tap queues' in text,
          'vnetctl stats prints the RSS state (table weights, key) and the tap queues')
    fd = [tb[i] - ta[i] for i in range(len(tb))] if len(ta) == len(tb) == 2 else []
    print('read per tap queue fd: %s' % fd)
    check(len(fd) == 2 and fd[0] > 0 and fd[1] > 0 and abs(sum(fd) - total) <= 4,
          'the flows came through both tap queue fds (%s), the table placed them' % fd)
    if probe:
        got = guest_hashes(g, vd, ns, HOST, GUEST, 'http://%s:8000/%s'
                           % (HOST, os.path.basename(probe)))
        check_guest_hashes(got, HOST, GUEST)

    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=300)
    check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)


if __name__ == '__main__':
    main()
