# SPDX-License-Identifier: MIT
"""Guests on two hosts: two namespaces joined by a veth underlay, on each a vnetd tap port in a
Linux bridge with a VXLAN device towards the other; a UML guest on A and a QEMU guest on B see
the advertised MTU (1450: VXLAN's 50 bytes), ping at that size with DF set and transfer
byte-exact both ways; the QEMU guest is live-migrated over tcp: on the underlay to a vnetd on
the other host, its RAM is the same page for page on both hosts once the migration completed
(the destination held with -S: what vnetd wrote went across), and both bridges learn its new
place from vnetd's RARP within 1 s of it resuming."""

import os
import shutil
import subprocess
import time

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, guest_addr, guest_kit,
                               require_program, skip, uml_start)
from tests.kit.migration import (IncomingQemu, Qmp, compare_ram, fdb_port, migrate, migration_qemu,
                                 qemu_args)
from tests.kit.guest import QemuGuest

MTU = 1450                       # 1500 on the underlay minus VXLAN's 50 (docs/multihost.md)
UL = {'A': '10.99.0.1', 'B': '10.99.0.2'}       # underlay (veth)
BR = {'A': '10.98.0.1', 'B': '10.98.0.2'}       # each host's own address on the overlay
UML_MAC, QEMU_MAC = '52:54:00:99:00:0a', '52:54:00:99:00:0b'
UML_IP, QEMU_IP = '10.98.0.10', '10.98.0.11'
SIZE_MB = 8
MIG_PORT = 4444
# vectors=0: QEMU 7.2's TCG MSI-X crash (test_qemu.py). host_mtu: QEMU's virtio-net-pci keeps
# its own config space (vnetd's mtu= reaches UML and full-device frontends), so QEMU is told.
QEMU_OPTS = ',vectors=0,host_mtu=%d' % MTU


def port_spec(sock, tap, mac, extra=''):
    return 'socket=%s,tap=%s,mac=%s,mtu=%d%s' % (sock, tap, mac, MTU, extra)


def host_net(ns, me, other, taps):
    """Underlay address, vx0 (VNI 42) towards the other host, br0 holding vx0 and the taps."""
    ns.run('ip addr add %s/24 dev ul0 && ip link set ul0 up' % UL[me])
    ns.run('ip link add vx0 type vxlan id 42 local %s remote %s dstport 4789 dev ul0'
           % (UL[me], UL[other]))
    ns.run('ip link add br0 type bridge && ip link set br0 up && '
           'ip link set vx0 master br0 && ip link set vx0 up')
    ns.run('ip addr add %s/24 dev br0' % BR[me])
    for t in taps:
        ns.run('ip link set %s master br0 && ip link set %s up' % (t, t))


def fdb_wait(ns, mac, want, timeout):
    """Seconds until br0 in ns has mac on port want (None: not within timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if fdb_port(ns, mac) == want:
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def transfer(src, dst, src_ip, name):
    """dst downloads SIZE_MB random bytes from src's busybox httpd; sha256 compared."""
    src.run('dd if=/dev/urandom of=/tmp/%s bs=1M count=%d 2>/dev/null' % (name, SIZE_MB),
            check=True)
    want = src.run('sha256sum /tmp/%s' % name, check=True)[1].split()[0]
    rc, out = dst.run('wget -q -O - http://%s:8080/%s | sha256sum' % (src_ip, name), timeout=300)
    return rc == 0 and out.split()[:1] == [want]


def main():
    require_program('qemu-system-x86_64', 'qemu-system-x86')
    if shutil.which('bridge') is None:
        skip('iproute2 bridge tool missing')
    uml, wd = uml_start('multihost')
    # The migrated guest runs on sid's QEMU 11 when it can be had: Debian 12's QEMU 7.2 loses
    # guest pages in TCG migrations by itself (docs/migration.md, test_migration.py).
    qemu = migration_qemu('the QEMU guest runs on QEMU 7.2')
    print('QEMU guest on %s' % (qemu or 'qemu-system-x86_64 (PATH)'), flush=True)
    kit = guest_kit()
    wa, wb = os.path.join(wd, 'A'), os.path.join(wd, 'B')
    os.makedirs(wa)
    os.makedirs(wb)
    sock_uml, sock_dst = os.path.join(wa, 'uml.sock'), os.path.join(wa, 'mig.sock')
    sock_qemu = os.path.join(wb, 'qemu.sock')

    with Netns('vnetd-e2e-mhA') as na, Netns('vnetd-e2e-mhB') as nb:
        subprocess.run(['ip', 'link', 'add', 'ul0', 'netns', na.name, 'type', 'veth', 'peer',
                        'name', 'ul0', 'netns', nb.name], check=True)
        with Vnetd(na, [port_spec(sock_uml, 'vtap0', UML_MAC),
                        port_spec(sock_dst, 'vtap1', '52:54:00:99:01:01', ',offloads=off')],
                   wa) as va, \
                Vnetd(nb, [port_spec(sock_qemu, 'vtap0', '52:54:00:99:02:01', ',offloads=off')],
                      wb) as vb:
            host_net(na, 'A', 'B', ['vtap0', 'vtap1'])
            host_net(nb, 'B', 'A', ['vtap0'])
            r = na.run('cat /sys/class/net/ul0/mtu /sys/class/net/vx0/mtu /sys/class/net/br0/mtu')
            print('host A: underlay mtu %s, vx0 mtu %s, br0 mtu %s' % tuple(r.stdout.split()))
            # QEMU (TCG) boots while UML does; its source process runs on host B so that its
            # migration stream leaves over B's underlay address.
            qg = QemuGuest(kit, vhost_socket=sock_qemu, mac=QEMU_MAC, device_opts=QEMU_OPTS,
                           netns=nb.name, qemu=qemu, extra_args=qemu_args(wb, 'src'),
                           log_path=os.path.join(wd, 'qemu.log'))
            qg.start()
            try:
                with UmlGuest(uml, sock_uml, log_path=os.path.join(wd, 'uml.log')) as ug:
                    qg.wait_ready(qg.boot_timeout)
                    for g, ip, what in ((ug, UML_IP, 'UML guest on A'),
                                        (qg, QEMU_IP, 'QEMU guest on B')):
                        rc, out = g.run('cat /sys/class/net/eth0/mtu')
                        check(out.strip() == str(MTU), '%s sees MTU %d (virtio-net mtu field)'
                              % (what, MTU))
                        guest_addr(g, ip)
                        g.run('httpd -p 8080 -h /tmp', check=True)
                    rc, _ = ug.run('ping -c 3 -W 10 %s' % QEMU_IP, timeout=90)
                    check(rc == 0, 'UML on A pings QEMU on B over VXLAN')
                    # Largest IP packet with DF set, end to end: busybox ping has no -M, so
                    # iputils' from each host's bridge address to the guest on the other host;
                    # between the guests busybox's full-size ping (Linux sets DF: PMTU
                    # discovery is on by default).
                    size = MTU - 28
                    for ns, ip, what in ((na, QEMU_IP, 'host A -> guest on B'),
                                         (nb, UML_IP, 'host B -> guest on A')):
                        r = ns.run('ping -M do -s %d -c 2 -W 10 %s' % (size, ip), check=False)
                        check(r.returncode == 0, '%s: %d-byte IP packet with DF set gets '
                              'through (%d on the underlay)' % (what, MTU, MTU + 50))
                    r = na.run('ping -M do -s %d -c 1 -W 2 %s' % (size + 1, QEMU_IP), check=False)
                    why = ' '.join((r.stdout + r.stderr).strip().splitlines()[-1:])
                    check(r.returncode != 0, 'one byte more is refused with DF set (%s)' % why)
                    for g, ip, what in ((ug, QEMU_IP, 'A -> B'), (qg, UML_IP, 'B -> A')):
                        rc, _ = g.run('ping -s %d -c 2 -W 10 %s' % (size, ip), timeout=60)
                        check(rc == 0, 'guest %s: %d-byte ping' % (what, MTU))
                    check(transfer(ug, qg, UML_IP, 'fromA'),
                          '%d MB A -> B byte-exact (sha256)' % SIZE_MB)
                    check(transfer(qg, ug, QEMU_IP, 'fromB'),
                          '%d MB B -> A byte-exact (sha256)' % SIZE_MB)
                    check(fdb_port(na, QEMU_MAC) == 'vx0' and fdb_port(nb, QEMU_MAC) == 'vtap0',
                          'before migration: A\'s bridge has the QEMU guest behind vx0, B\'s on '
                          'its tap')

                    # Live migration B -> A: the destination QEMU listens on A's underlay
                    # address; its vnetd port (vtap1) is in A's bridge. It is held (-S) so both
                    # guests' RAM can be compared once the migration completed: what vnetd on B
                    # wrote into guest memory during pre-copy went across (its dirty log).
                    uri = 'tcp:%s:%d' % (UL['A'], MIG_PORT)
                    with IncomingQemu(kit, vhost_socket=sock_dst, mac=QEMU_MAC,
                                      device_opts=QEMU_OPTS, netns=na.name, qemu=qemu,
                                      extra_args=qemu_args(wa, 'dst', incoming=uri) + ['-S'],
                                      log_path=os.path.join(wd, 'qemu.log')) as dst:
                        Qmp(os.path.join(wa, 'dst.qmp')).close()
                        qsrc = Qmp(os.path.join(wb, 'src.qmp'))
                        info = migrate(qsrc, uri)
                        print('migration: total %s ms, downtime %s ms' % (
                            info.get('total-time'), info.get('downtime')))
                        qdst = Qmp(os.path.join(wa, 'dst.qmp'))
                        compare_ram(qg, dst, qdst, qemu is not None)  # then the guest runs
                        qdst.close()
                        t_done = time.monotonic()
                        ta = fdb_wait(na, QEMU_MAC, 'vtap1', 1.0)
                        left = 1.0 - (time.monotonic() - t_done)
                        tb = fdb_wait(nb, QEMU_MAC, 'vx0', max(0.05, left))
                        check(ta is not None, 'A\'s bridge moved the guest\'s MAC to the new tap '
                              'within 1 s of the guest resuming (%.2f s)' % (ta or 0))
                        check(tb is not None, 'B\'s bridge moved it behind vx0 within 1 s')
                        rarps = va.port_info()['p1']['rarps']
                        check(rarps >= 1, 'vnetd on A sent the RARP QEMU asked for (%d)' % rarps)
                        qsrc.close()
                        qg.kill()
                        dst.adopt(os.path.join(wa, 'dst.qmp'))
                        rc, _ = dst.run('ping -c 2 -W 10 %s' % UML_IP, timeout=60)
                        check(rc == 0, 'the migrated guest reaches the UML guest on its new host')
                        rc, out = dst.run('cat /sys/class/net/eth0/mtu')
                        check(out.strip() == str(MTU), 'MTU still %d after migration' % MTU)
            finally:
                qg.kill()
            check(va.alive() and vb.alive(), 'both vnetd processes still running')


if __name__ == '__main__':
    main()
