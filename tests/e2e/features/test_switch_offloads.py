# SPDX-License-Identifier: MIT
"""Offloads across vnetd's switch between UML guests: TCP segments of up to 64 KB and checksums
left to the receiver pass to a guest that takes them, and are made in software for one that does
not (its `ethtool -K eth0 rx-gro-hw off`, CTRL_GUEST_OFFLOADS_SET; a port with offloads=off);
every transfer byte-exact, and the counters say which way each frame went."""

import json
import os

from tests.kit.harness import NoNs, UmlGuest, Vnetd, check, guest_addr, uml_start

MB = 8


def offloads(vd, port):
    """The port's offload counters (vnetctl stats: the port's "offloads")."""
    data = json.loads(vd.ctl('stats', '--json').stdout)
    return next(p['offloads'] for p in data['ports'] if p['name'] == port)


def fetch(guest, url, want, what):
    """A downloads url and checks the bytes."""
    rc, out = guest.run('wget -q -O - %s | sha256sum' % url, timeout=180)
    check(rc == 0 and out.split()[0] == want, what)


def main():
    kit, wd = uml_start('uml-switch-offloads')
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(3)]
    macs = ['52:54:00:89:00:01', '52:54:00:89:00:02', '52:54:00:89:00:03']
    ports = ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(socks, macs)]
    ports[2] += ',offloads=off'
    with Vnetd(NoNs(), ports, wd) as vd:
        with UmlGuest(kit, socks[0], log_path=os.path.join(wd, 'a.log')) as a, \
                UmlGuest(kit, socks[1], log_path=os.path.join(wd, 'b.log')) as b, \
                UmlGuest(kit, socks[2], log_path=os.path.join(wd, 'c.log')) as c:
            for g, ip in ((a, '10.89.0.1'), (b, '10.89.0.2'), (c, '10.89.0.3')):
                guest_addr(g, ip)
            feats = a.run('ethtool -k eth0', check=True)[1]
            check('tcp-segmentation-offload: on' in feats and 'tx-checksumming: on' in feats,
                  'a guest on a switch port has TSO and TX checksumming on')
            feats = c.run('ethtool -k eth0', check=True)[1]
            check('tcp-segmentation-offload: off' in feats,
                  'the guest of an offloads=off port has TSO off')
            b.run('dd if=/dev/urandom of=/tmp/f bs=1M count=%d 2>/dev/null; '
                  'httpd -p 8080 -h /tmp' % MB, check=True)
            want = b.run('sha256sum /tmp/f', check=True)[1].split()[0]
            url = 'http://10.89.0.2:8080/f'

            before = offloads(vd, 'p0')
            fetch(a, url, want, '%d MB B -> A with offloads on both is byte-exact' % MB)
            after = offloads(vd, 'p0')
            check(after['passed'] - before['passed'] > 0,
                  'A got frames with their offload header (%d)' %
                  (after['passed'] - before['passed']))
            check(after['soft_segments'] == before['soft_segments'],
                  'nothing was segmented in software for A')

            # A turns its receive segmentation off (CTRL_GUEST_OFFLOADS_SET, GUEST_CSUM kept).
            a.run('ethtool -K eth0 rx-gro-hw off', check=True)
            before = offloads(vd, 'p0')
            fetch(a, url, want, '%d MB B -> A after A\'s rx-gro-hw off is byte-exact' % MB)
            after = offloads(vd, 'p0')
            check(after['soft_segments'] - before['soft_segments'] > 0,
                  'the switch segmented B\'s frames for A in software (%d segments)' %
                  (after['soft_segments'] - before['soft_segments']))
            a.run('ethtool -K eth0 rx-gro-hw on', check=True)

            before = offloads(vd, 'p2')
            fetch(c, url, want, '%d MB B -> C (offloads=off) is byte-exact' % MB)
            after = offloads(vd, 'p2')
            check(after['soft_segments'] - before['soft_segments'] > 0 or
                  after['soft_checksums'] - before['soft_checksums'] > 0,
                  'the switch segmented and checksummed for C in software (%d segments, '
                  '%d checksums)' % (after['soft_segments'] - before['soft_segments'],
                                     after['soft_checksums'] - before['soft_checksums']))
            check(after['passed'] == before['passed'], 'C never got an offload header')

            # C sends without offloads: A and B get plain frames, byte-exact.
            c.run('dd if=/dev/urandom of=/tmp/g bs=1M count=2 2>/dev/null; '
                  'httpd -p 8081 -h /tmp', check=True)
            want_c = c.run('sha256sum /tmp/g', check=True)[1].split()[0]
            fetch(a, 'http://10.89.0.3:8081/g', want_c, '2 MB C -> A is byte-exact')
            for p in ('p0', 'p1', 'p2'):
                check(offloads(vd, p)['bad_header'] == 0, '%s: no bad offload header' % p)
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
