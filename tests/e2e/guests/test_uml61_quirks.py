# SPDX-License-Identifier: MIT
"""Linux 6.1's virtio_net coalescing quirks, on bookworm's UML wherever it boots (a skip naming the
reason where it cannot run on this CPU; the newer drivers are tested by test_uml72 and, as the
default guest, by every other UML test).

6.1 sends no coalescing command at probe: vnetd's values stay its reset state (0, set by nobody)
until the guest's first ethtool -C. It refuses a tx-frames change between 0 and non-zero while
eth0 is up (EBUSY: that would switch TX NAPI on or off) and sends nothing then; with eth0 down the
same change is accepted and reaches vnetd as TX_SET. Ping and a byte-exact transfer close it."""

import os

from tests.kit.harness import (HostServers, Netns, UmlGuest, Vnetd, check, guest_addr, host_addr,
                               make_blob, uml_start)

MAC = '52:54:00:61:00:02'
HOST, GUEST = '10.61.0.1', '10.61.0.2'
SIZE_MB = 4


def coal(vd, qi):
    q = vd.stats()['p0'][qi]
    return q['max_usecs'], q['max_packets'], q['set_by']


def main():
    kit, wd = uml_start('uml61', 'bookworm')
    sock = os.path.join(wd, 'p0.sock')
    blob_sha = make_blob(os.path.join(wd, 'blob'), SIZE_MB)
    with Netns('vnetd-e2e-uml61') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s' % (sock, MAC)], wd) as vd:
        host_addr(ns, 'vtap0', HOST)
        with HostServers(ns, HOST, wd), \
                UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
            rc, out = g.run('uname -r')
            check(out.strip().startswith('6.1'), 'the guest runs Linux 6.1 (%s)' % out.strip())
            guest_addr(g, GUEST)
            before = {qi: coal(vd, qi) for qi in (0, 1)}
            check(all(v[2] != 'guest' for v in before.values()),
                  '6.1 sent no coalescing command at probe or link up (%s)' % before)

            g.run('ethtool -C eth0 rx-usecs 100 rx-frames 8 tx-usecs 200 tx-frames 16', check=True)
            check(coal(vd, 0) == (100, 8, 'guest') and coal(vd, 1) == (200, 16, 'guest'),
                  "the guest's ethtool -C reached vnetd (RX_SET, TX_SET)")

            rc, out = g.run('ethtool -C eth0 tx-frames 0')
            check(rc != 0 and 'busy' in out.lower(),
                  'tx-frames 16 -> 0 while eth0 is up: EBUSY (%s)' % out.strip()[-80:])
            check(coal(vd, 1) == (200, 16, 'guest'), 'and nothing reached vnetd (%s)' % (coal(vd, 1),))

            g.run('ip link set eth0 down && ethtool -C eth0 tx-frames 0 && ip link set eth0 up '
                  '&& ip addr add %s/24 dev eth0 2>/dev/null; true' % GUEST, check=True)
            check(coal(vd, 1)[1] == 0 and coal(vd, 1)[2] == 'guest',
                  'with eth0 down tx-frames 0 is accepted and reaches vnetd (%s)' % (coal(vd, 1),))

            rc, _ = g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)" = up ] '
                          '&& break; sleep 0.2; done; ping -c 3 -W 5 %s' % HOST, timeout=60)
            check(rc == 0, 'the guest pings the host')
            rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=300)
            check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
