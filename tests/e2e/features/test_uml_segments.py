#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Switch segments: two UML guests in segment A transfer byte-exact (on two workers); a third, in
segment B, can neither ping them nor resolve their ARP (no frame crosses segments); port-del
and port-add change segments at run time. The guests' own ARP and ND pass port security's checks
of the MACs inside them."""

import json
import os

from tests.kit.harness import NoNs, UmlGuest, Vnetd, check, guest_addr, uml_start


def main():
    kit, wd = uml_start('uml-segments')
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(3)]
    macs = ['52:54:00:89:00:01', '52:54:00:89:00:02', '52:54:00:89:00:03']
    segs = ['switch=tenant-a', 'switch=tenant-a,worker=1', 'switch=tenant-b']
    ips = ['10.89.0.1', '10.89.0.2', '10.89.0.3']
    ports = ['socket=%s,%s,mac=%s' % (s, g, m) for s, g, m in zip(socks, segs, macs)]
    with Vnetd(NoNs(), ports, wd, extra=('--workers', '2')) as vd:
        info = vd.port_info()
        check([info['p%d' % i]['segment'] for i in range(3)] == ['tenant-a', 'tenant-a', 'tenant-b'],
              'ports shows each port\'s segment')
        table = vd.ctl('ports').stdout
        check('SEGMENT' in table and 'tenant-b' in table, 'vnetctl ports has a SEGMENT column')
        with UmlGuest(kit, socks[0], log_path=os.path.join(wd, 'a.log')) as a, \
                UmlGuest(kit, socks[1], log_path=os.path.join(wd, 'b.log')) as b, \
                UmlGuest(kit, socks[2], log_path=os.path.join(wd, 'c.log')) as c:
            for g, ip in ((a, ips[0]), (b, ips[1]), (c, ips[2])):
                guest_addr(g, ip)
            rc, _ = a.run('ping -c 3 -W 5 %s' % ips[1], timeout=60)
            check(rc == 0, 'guest A pings guest B in its segment')
            b.run('dd if=/dev/urandom of=/tmp/f bs=1M count=4 2>/dev/null; httpd -p 8080 -h /tmp',
                  check=True)
            want = b.run('sha256sum /tmp/f', check=True)[1].split()[0]
            rc, out = a.run('wget -q -O - http://%s:8080/f | sha256sum' % ips[1], timeout=120)
            check(rc == 0 and out.split()[0] == want,
                  '4 MB transfer inside segment tenant-a is byte-exact')
            sw = {p['name']: p['switch']
                  for p in json.loads(vd.ctl('stats', '--json').stdout)['ports']}
            check(all(sw[n]['port_security'] and sw[n]['arp_nd_spoofed'] == 0 and
                      sw[n]['spoofed'] == 0 for n in ('p0', 'p1')),
                  'real guests\' ARP and ND pass port security (p0, p1: arp_nd_spoofed 0)')
            before = vd.stats()['p2'][0]['packets']
            for ip in ips[:2]:
                rc, _ = c.run('ping -c 2 -W 2 %s' % ip, timeout=30)
                check(rc != 0, 'guest C (tenant-b) cannot ping %s (tenant-a)' % ip)
                rc, out = c.run('ip neigh show %s' % ip, timeout=30)
                check('lladdr' not in out, 'guest C has no ARP entry for %s: %r'
                      % (ip, out.strip()))
            for g, name in ((a, 'A'), (b, 'B')):
                rc, out = g.run('ip neigh show %s' % ips[2], timeout=30)
                check('lladdr' not in out, 'guest %s never learnt C\'s MAC: %r'
                      % (name, out.strip()))
            after = vd.stats()['p2'][0]['packets']
            check(after == before, 'nothing reached guest C\'s RX queue (%d -> %d packets)'
                  % (before, after))
        # At run time: p2 goes (segment tenant-b with it), a port of a new segment comes.
        vd.ctl('port-del', 'p2')
        vd.ctl('port-add', 'socket=%s,switch=tenant-c' % os.path.join(wd, 'p3.sock'))
        segs_now = {n: p['segment'] for n, p in vd.port_info().items()}
        check(sorted(segs_now.values()) == ['tenant-a', 'tenant-a', 'tenant-c'],
              'port-del and port-add change the segments: %r' % segs_now)
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
