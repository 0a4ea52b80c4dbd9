# SPDX-License-Identifier: MIT
"""UML guest on a vnetd tap port: link + MAC, ping both ways, guest ethtool -C reaches vnetd,
byte-exact 20 MB transfers both ways, and coalescing cuts RX/TX notifications to <= 1/5."""

import os
import re
import subprocess

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, counter_delta, guest_addr, host_addr,
                               make_blob, uml_start)

MAC = '52:54:00:77:00:02'
HOST_IP, GUEST_IP = '10.77.0.1', '10.77.0.2'
SIZE_MB = 20
FETCH = ('import urllib.request,hashlib,sys;'
         'print(hashlib.sha256(urllib.request.urlopen(sys.argv[1], timeout=300).read()).hexdigest())')


def transfer_in(ns, g, url, expect_sha):
    """Host -> guest: the guest downloads from the host's HTTP server."""
    rc, out = g.run('wget -q -O - %s | sha256sum' % url, timeout=300)
    check(rc == 0 and out.split()[0] == expect_sha, 'host->guest %d MB byte-exact (sha256)' % SIZE_MB)


def transfer_out(ns, g, expect_sha):
    """Guest -> host: the host downloads from the guest's busybox httpd."""
    r = ns.run(['python3', '-c', FETCH, 'http://%s:8080/up' % GUEST_IP], timeout=300, check=False)
    got = r.stdout.strip()
    check(r.returncode == 0 and got == expect_sha, 'guest->host %d MB byte-exact (sha256)' % SIZE_MB)


def main():
    kit, wd = uml_start('uml-tap')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    blob_sha = make_blob(blob, SIZE_MB)

    with Netns('vnetd-e2e-uml') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s' % (sock, MAC)], wd) as vd:
        host_addr(ns, 'vtap0', HOST_IP)
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
                rc, out = g.run('cat /sys/class/net/eth0/address')
                check(rc == 0 and out.strip() == MAC, 'guest eth0 has the MAC from config space')
                guest_addr(g, GUEST_IP)
                rc, out = g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)" = up ]'
                                ' && break; sleep 0.2; done; cat /sys/class/net/eth0/operstate')
                check(out.strip() == 'up', 'guest link is up')
                rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
                check(rc == 0, 'guest pings host')
                r = ns.run('ping -c 3 -W 5 %s' % GUEST_IP, check=False)
                check(r.returncode == 0, 'host pings guest')

                g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null' % SIZE_MB, check=True)
                up_sha = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                g.run('httpd -p 8080 -h /tmp', check=True)
                url = 'http://%s:8000/blob' % HOST_IP

                # Phase 1: coalescing off (reset state: every parameter 0).
                s0 = vd.stats()
                transfer_in(ns, g, url, blob_sha)
                s1 = vd.stats()
                direct = s1['p0'][0]['rx_direct'] - s0['p0'][0]['rx_direct']
                moved = s1['p0'][0]['packets'] - s0['p0'][0]['packets']
                check(direct > 0 and direct >= moved // 2,
                      'tap RX read straight into guest buffers (%d of %d packets)' % (direct, moved))
                transfer_out(ns, g, up_sha)
                s2 = vd.stats()

                rc, out = g.run('ethtool -C eth0 rx-usecs 1000 rx-frames 32 tx-usecs 1000 tx-frames 32')
                check(rc == 0, 'guest ethtool -C succeeds (%s)' % out.strip())
                st = vd.stats()['p0']
                for qi, kind in ((0, 'rx'), (1, 'tx')):
                    q = st[qi]
                    check(q['kind'] == kind and q['max_usecs'] == 1000 and q['max_packets'] == 32
                          and q['set_by'] == 'guest',
                          'queue %d (%s) has max_usecs 1000, max_packets 32, set by guest' % (qi, kind))
                rc, out = g.run('ethtool -c eth0')
                # ethtool 6.1 prints "rx-usecs: 1000", 7.x (netlink) "rx-usecs:\t1000".
                check(re.search(r'rx-usecs:\s+1000\b', out) is not None,
                      'guest ethtool -c reads the values back')

                # Phase 2: coalescing on, same transfers.
                s3 = vd.stats()
                transfer_in(ns, g, url, blob_sha)
                s4 = vd.stats()
                transfer_out(ns, g, up_sha)
                s5 = vd.stats()

                for name, a, b, qi in (('RX', s0, s1, 0), ('TX', s1, s2, 1), ('RX', s3, s4, 0),
                                       ('TX', s4, s5, 1)):
                    print('bulk %s: %d notifications for %d packets' % (
                        name, counter_delta(a, b, 'p0', qi, 'notifications'),
                        counter_delta(a, b, 'p0', qi, 'packets')))

                # Bulk TCP keeps the guest in NAPI polling, where the driver itself suppresses
                # most notifications; coalescing shows on paced traffic, where the driver wants
                # one per packet. Same paced streams, with and without a strong profile (20 ms / 64 frames).
                iperf = ns.popen(['iperf3', '-s', '-B', HOST_IP], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
                g.run('iperf3 -s -D', check=True)
                counts = {}
                for prof, args in (('off', 'rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 1'),
                                   ('on', 'rx-usecs 20000 rx-frames 64 tx-usecs 20000 tx-frames 64')):
                    g.run('ethtool -C eth0 ' + args, check=True)
                    a = vd.stats()
                    ns.run(['iperf3', '-c', GUEST_IP, '-u', '-b', '20M', '-t', '3', '-l', '1400',
                            '--pacing-timer', '100'], check=False, timeout=60)
                    b = vd.stats()
                    g.run('iperf3 -c %s -u -b 20M -t 3 -l 1400 --pacing-timer 100' % HOST_IP,
                          timeout=60)
                    c = vd.stats()
                    counts[prof] = (counter_delta(a, b, 'p0', 0, 'notifications'),
                                    counter_delta(a, b, 'p0', 0, 'packets'),
                                    counter_delta(b, c, 'p0', 1, 'notifications'),
                                    counter_delta(b, c, 'p0', 1, 'packets'))
                    print('paced %s: RX %d notifications / %d packets, TX %d / %d' % ((prof,) + counts[prof]))
                iperf.kill()
                # The guest sends faster with coalescing on, so compare per packet.
                def per_packet(notif, packets):
                    return notif / max(packets, 1)
                rx_off, rx_on = per_packet(*counts['off'][0:2]), per_packet(*counts['on'][0:2])
                tx_off, tx_on = per_packet(*counts['off'][2:4]), per_packet(*counts['on'][2:4])
                check(rx_on * 5 <= rx_off, 'RX notifications per packet with coalescing <= 1/5 '
                      'of without (%.3f vs %.3f)' % (rx_on, rx_off))
                check(tx_on * 5 <= tx_off, 'TX notifications per packet with coalescing <= 1/5 '
                      'of without (%.3f vs %.3f)' % (tx_on, tx_off))
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
