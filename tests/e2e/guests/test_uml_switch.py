# SPDX-License-Identifier: MIT
"""Two UML guests on vnetd's switch backend reach each other (no kernel bridge in between)."""

import os

from tests.kit.harness import NoNs, UmlGuest, Vnetd, check, guest_addr, uml_start


def main():
    kit, wd = uml_start('uml-switch')
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
    macs = ['52:54:00:88:00:01', '52:54:00:88:00:02']
    ports = ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(socks, macs)]
    with Vnetd(NoNs(), ports, wd) as vd:
        with UmlGuest(kit, socks[0], log_path=os.path.join(wd, 'a.log')) as a, \
                UmlGuest(kit, socks[1], log_path=os.path.join(wd, 'b.log')) as b:
            for g, ip in ((a, '10.88.0.1'), (b, '10.88.0.2')):
                guest_addr(g, ip)
            rc, out = a.run('ping -c 3 -W 5 10.88.0.2', timeout=60)
            check(rc == 0, 'guest A pings guest B through the switch')
            rc, out = b.run('ping -c 3 -W 5 10.88.0.1', timeout=60)
            check(rc == 0, 'guest B pings guest A through the switch')
            b.run('dd if=/dev/urandom of=/tmp/f bs=1M count=4 2>/dev/null; httpd -p 8080 -h /tmp',
                  check=True)
            want = b.run('sha256sum /tmp/f', check=True)[1].split()[0]
            rc, out = a.run('wget -q -O - http://10.88.0.2:8080/f | sha256sum', timeout=120)
            check(rc == 0 and out.split()[0] == want, '4 MB guest-to-guest transfer is byte-exact')
            st = vd.stats()
            check(st['p0'][1]['packets'] > 0 and st['p1'][0]['packets'] > 0,
                  'vnetd counted the switched packets')
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
