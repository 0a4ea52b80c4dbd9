#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A UML guest on an access port (vlan=10) of segment tenant, whose tap trunk (uplink=tenant,
trunk=10+20) reaches the host in a namespace: the host end (vlan_host.py, a raw socket) pings
the guest with 802.1Q-tagged frames of VLAN 10 and gets byte-exact replies tagged 10; the
guest's own pings leave the tap tagged 10; frames of VLAN 20, of a VLAN not on the trunk and
untagged ones never reach the guest."""

import json
import os

from tests.kit.harness import TOP, Netns, UmlGuest, Vnetd, check, guest_addr, uml_start  # noqa: F401

MAC = '52:54:00:77:0a:02'
HOST_MAC = '02:00:00:77:0a:01'
HOST_IP, GUEST_IP = '10.77.10.1', '10.77.10.2'
HOST = os.path.join(TOP, 'tests', 'kit', 'vlan_host.py')


def host_ping(ns, vid, sizes=(56, 1200)):
    r = ns.run(['python3', HOST, 'ping', 'vtrunk0', str(vid), HOST_MAC, HOST_IP, GUEST_IP] +
               [str(s) for s in sizes], timeout=60)
    return json.loads(r.stdout)


def guest_rx(g):
    return int(g.run('cat /sys/class/net/eth0/statistics/rx_packets', check=True)[1].strip())


def main():
    kit, wd = uml_start('vlan-trunk')
    sock, tsock = os.path.join(wd, 'p0.sock'), os.path.join(wd, 'p1.sock')
    ports = ['socket=%s,switch=tenant,vlan=10,mac=%s' % (sock, MAC),
             'socket=%s,tap=vtrunk0,uplink=tenant,trunk=10+20' % tsock]

    with Netns('vnetd-e2e-vlan') as ns, Vnetd(ns, ports, wd) as vd:
        ns.run('ip link set vtrunk0 up')
        info = vd.port_info()
        check(info['p0'].get('vlan') == 10 and info['p0'].get('segment') == 'tenant',
              'p0: an access port of VLAN 10 of segment tenant')
        check(info['p1'].get('trunk') == [10, 20] and info['p1'].get('uplink') == 'tenant',
              'p1: the trunk of segment tenant, VLANs 10 and 20')
        with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
            guest_addr(g, GUEST_IP)
            g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)" = up ]'
                  ' && break; sleep 0.2; done')
            out = host_ping(ns, 10)
            check(out['arp'] and out['arp']['vid'] == 10 and out['arp']['mac'] == MAC,
                  'tagged ARP request (VLAN 10) answered by the guest, tagged 10: %s' % out['arp'])
            for e in out['echo']:
                check(e['vid'] == 10 and e['exact'],
                      'host pings the guest over VLAN 10, %d bytes: the reply is tagged %s and '
                      'byte-exact: %s' % (e['size'], e['vid'], e['exact']))
            # The guest's own pings leave the trunk tagged 10 (the host end does not answer:
            # the guest's echo requests if it still knows the host's MAC, else its ARP requests).
            g.run('arp -s %s %s 2>/dev/null' % (HOST_IP, HOST_MAC))
            cap = ns.popen(['python3', HOST, 'capture', 'vtrunk0', '4'], stdout=-1, text=True)
            g.run('sleep 1; ping -c 3 -i 0.3 -W 1 -p 5a %s' % HOST_IP, timeout=30)
            seen = json.loads(cap.communicate(timeout=30)[0])
            sent = [s for s in seen if s.get('icmp') == 8 or s['ethertype'] == 0x0806]
            check(len(sent) >= 3 and all(s['vid'] == 10 for s in sent) and
                  all('5a5a5a5a' in s['payload'] for s in sent if 'payload' in s),
                  "the guest's pings reach the host tagged with VLAN ID 10: %d frames "
                  "(%d echo requests), VLAN IDs %s"
                  % (len(sent), sum('icmp' in s for s in sent), sorted({s['vid'] for s in sent})))
            # VLAN 20 (on the trunk, nobody there), VLAN 30 (not on it), untagged: none reaches
            # the guest; VLAN 30's frames are counted as the trunk's drops.
            before, dropped = guest_rx(g), info['p1']['trunk_dropped']
            for vid in (20, 30, 'none'):
                out = host_ping(ns, vid, sizes=())
                check(out['arp'] is None, 'VLAN %s: the ARP request got no answer' % vid)
            after = guest_rx(g)
            check(after == before, 'the guest received nothing of them (rx %d -> %d)'
                  % (before, after))
            dropped = vd.port_info()['p1']['trunk_dropped'] - dropped
            check(dropped >= 1, 'p1: trunk_dropped counts the VLAN 30 frame (+%d)' % dropped)
        check(vd.alive(), 'vnetd still running')
    print('PASS')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
