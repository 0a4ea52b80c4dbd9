# SPDX-License-Identifier: MIT
"""DPDK virtio-user as a third frontend of the switch's offloads: testpmd's csum forwarding engine
bridges two switch ports with its TX checksum and TSO offloads on (`csum set tcp hw`, `tso set
1400`: vnetd negotiates CSUM and HOST_TSO4 with it), between UML guest A (VLAN 10) and UML guest
B (VLAN 20) of one segment: every frame between them crosses testpmd. Byte-exact transfers both
ways; the receiving guest's port counts the frames testpmd sent with an offload header (passed;
testpmd is the only other port of its VLAN), and with the guest's rx-gro-hw off the switch
segments testpmd's GSO frames in software for it (soft_segments); no header testpmd wrote is
refused (bad_header 0)."""

import json
import os
import shutil

from tests.kit.harness import (NoNs, UmlGuest, Vnetd, check, fail, guest_addr, skip,
                               uml_start)

MB = 4
TSO_SEG = 1400
MSS = 1448           # the guests' TCP payload per frame at MTU 1500 (timestamps on)
MAC_A, MAC_B = '52:54:00:8a:00:01', '52:54:00:8a:00:02'
MAC_T0, MAC_T1 = '02:00:00:8a:00:10', '02:00:00:8a:00:11'   # testpmd's ports 0 and 1
IP_A, IP_B = '10.90.0.1', '10.90.0.2'
F_CSUM, F_HOST_TSO4 = 0, 11


def offloads(vd):
    """{port: its offload counters} (vnetctl stats: each port's "offloads")."""
    data = json.loads(vd.ctl('stats', '--json').stdout)
    return {p['name']: p['offloads'] for p in data['ports']}


def delta(before, after, port, key):
    return after[port][key] - before[port][key]


def fetch(guest, url, want, what):
    """guest downloads url (through testpmd) and checks the bytes."""
    rc, out = guest.run('wget -q -O - %s | sha256sum' % url, timeout=180)
    check(rc == 0 and out.split() and out.split()[0] == want, what)


def testpmd_up(P, wd, socks):
    """testpmd on the two switch ports, csum engine with TX checksum and TSO offloads on."""
    fe = P.Testpmd('virtio-user', P.eal_args('vnetd-e2e-offdpdk-%d' % os.getpid(), 0, [
        'net_virtio_user0,path=%s,queues=1,queue_size=256,mac=%s' % (socks[1], MAC_T0),
        'net_virtio_user1,path=%s,queues=1,queue_size=256,mac=%s' % (socks[2], MAC_T1)]),
        ['--forward-mode=csum', '--total-num-mbufs=8192',
         '--eth-peer=0,%s' % MAC_A, '--eth-peer=1,%s' % MAC_B],
        os.path.join(wd, 'testpmd.log'))
    fe.wait_ready(120)
    fe.cmd('port stop all')
    for port in (0, 1):
        fe.cmd('csum set ip hw %d' % port)      # virtio has none: testpmd says so, keeps sw
        out = fe.cmd('csum set tcp hw %d' % port)
        check('TCP checksum offload is hw' in out,
              'testpmd port %d: TCP checksum offload is hw' % port)
        out = fe.cmd('tso set %d %d' % (TSO_SEG, port))
        check('TSO segment size for non-tunneled packets is %d' % TSO_SEG in out,
              'testpmd port %d: TSO segment size %d' % (port, TSO_SEG))
    fe.cmd('port start all', timeout=60)
    for port in (0, 1):
        out = fe.cmd('show port %d tx_offload configuration' % port)
        line = next((ln.strip() for ln in out.splitlines() if 'Port :' in ln), out[-200:])
        check('TCP_CKSUM' in line and 'TCP_TSO' in line,
              'testpmd port %d TX offloads on: %s' % (port, line))
    fe.cmd('start')
    return fe


def main():
    if shutil.which('dpdk-testpmd') is None:
        skip('dpdk-testpmd is not installed (Debian package dpdk)')
    kit, wd = uml_start('switch-offloads-dpdk')
    from bench.lib import dp_procs as P
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(4)]
    ports = ['socket=%s,switch=dp,vlan=10,mac=%s' % (socks[0], MAC_A),
             'socket=%s,switch=dp,vlan=10,mac=%s' % (socks[1], MAC_T0),
             'socket=%s,switch=dp,vlan=20,mac=%s' % (socks[2], MAC_T1),
             'socket=%s,switch=dp,vlan=20,mac=%s' % (socks[3], MAC_B)]
    fe = None
    with Vnetd(NoNs(), ports, wd) as vd:
        try:
            with UmlGuest(kit, socks[0], log_path=os.path.join(wd, 'a.log')) as a, \
                    UmlGuest(kit, socks[3], log_path=os.path.join(wd, 'b.log')) as b:
                fe = testpmd_up(P, wd, socks)
                info = vd.port_info()
                for p in ('p1', 'p2'):
                    feats = int(info[p]['features'], 16)
                    check(feats >> F_CSUM & 1 and feats >> F_HOST_TSO4 & 1,
                          '%s: testpmd negotiated CSUM and HOST_TSO4 (features %s)'
                          % (p, info[p]['features']))
                # A reaches B's IP at testpmd's port 0, B reaches A's at its port 1: testpmd
                # sends from its own MACs (csum engine), so no ARP crosses it.
                guest_addr(a, IP_A)
                guest_addr(b, IP_B)
                a.run('arp -s %s %s' % (IP_B, MAC_T0), check=True)
                b.run('arp -s %s %s' % (IP_A, MAC_T1), check=True)
                for g, name in ((a, 'A'), (b, 'B')):
                    feats = g.run('ethtool -k eth0', check=True)[1]
                    check('tcp-segmentation-offload: on' in feats and
                          'tx-checksumming: on' in feats,
                          '%s has TSO and TX checksumming on' % name)
                rc, out = a.run('ping -c 3 -i 0.3 -W 2 %s' % IP_B, timeout=30)
                check(rc == 0, 'A pings B through testpmd')

                for g, name in ((a, 'a'), (b, 'b')):
                    g.run('dd if=/dev/urandom of=/tmp/%s bs=1M count=%d 2>/dev/null; '
                          'httpd -p 8080 -h /tmp' % (name, MB), check=True)
                want_a = a.run('sha256sum /tmp/a', check=True)[1].split()[0]
                want_b = b.run('sha256sum /tmp/b', check=True)[1].split()[0]

                before = offloads(vd)
                fetch(a, 'http://%s:8080/b' % IP_B, want_b,
                      '%d MB B -> testpmd (csum, TSO %d) -> A is byte-exact' % (MB, TSO_SEG))
                after = offloads(vd)
                print('offloads B -> A: %s' % {p: {k: delta(before, after, p, k)
                                                   for k in after[p]} for p in after})
                check(delta(before, after, 'p0', 'passed') > 0,
                      "A's port got testpmd's frames with their offload header (%d)"
                      % delta(before, after, 'p0', 'passed'))
                check(delta(before, after, 'p2', 'soft_segments') > 0,
                      "B's segments were made in software for testpmd's port 1, which takes "
                      "no GUEST_TSO4 (%d)" % delta(before, after, 'p2', 'soft_segments'))

                before = offloads(vd)
                fetch(b, 'http://%s:8080/a' % IP_A, want_a,
                      '%d MB A -> testpmd (csum, TSO %d) -> B is byte-exact' % (MB, TSO_SEG))
                after = offloads(vd)
                check(delta(before, after, 'p3', 'passed') > 0,
                      "B's port got testpmd's frames with their offload header (%d)"
                      % delta(before, after, 'p3', 'passed'))

                # A's receive segmentation off: testpmd's GSO frames are segmented for A.
                a.run('ethtool -K eth0 rx-gro-hw off', check=True)
                before = offloads(vd)
                fetch(a, 'http://%s:8080/b' % IP_B, want_b,
                      '%d MB B -> testpmd -> A after A\'s rx-gro-hw off is byte-exact' % MB)
                after = offloads(vd)
                segs = delta(before, after, 'p0', 'soft_segments')
                check(segs > 0, "testpmd's frames carried GSO headers: the switch segmented "
                      "them for A in software (%d segments)" % segs)
                # B's full frames hold MSS (1448) bytes, testpmd's gso_size is 1400: two
                # segments each, so more segments than B's frames (~1.5 x a lower bound).
                check(segs > 1.5 * (MB << 20) / MSS,
                      'the segments follow the gso_size testpmd set (%d): %d segments for %d MB '
                      'of %d-byte frames' % (TSO_SEG, segs, MB, MSS))
                for p in ('p0', 'p1', 'p2', 'p3'):
                    check(after[p]['bad_header'] == 0, '%s: no bad offload header' % p)
                st = fe.port_stats()
                print('testpmd: %s' % st)
        finally:
            if fe is not None:
                fe.quit()
            P.JANITOR.clean()
        check(vd.alive(), 'vnetd still running')
    print('PASS')
    return 0


if __name__ == '__main__':
    try:
        raise SystemExit(main())
    except Exception as e:  # a testpmd that never came up, or died: the log says why
        if type(e).__name__ == 'BenchError':
            fail(str(e))
        raise
