# SPDX-License-Identifier: MIT
"""QEMU full-device mode: sid's QEMU 11 (guest/qemu.sh) with vhost-user-test-device-pci hands every
queue - the control queue too - and the config space to vnetd, so a QEMU guest's own ethtool -C
reaches vnetd (with virtio-net-pci + -netdev vhost-user QEMU keeps the control queue). Bookworm's
Linux 6.1 guest, 2 queue pairs (num_vqs=5): MAC and pairs from vnetd's config space, guest
coalescing set_by guest on all four data queues, traffic on both pairs, byte-exact transfers both
ways; printed: what MSI-X does there (the device's MSI-X table, the guest's interrupt mode) and
what QEMU says blocks migration. VNETD_QEMU_GUEST_SUITE=sid boots sid's Linux 7.2 kernel instead
(not part of make check)."""

import json
import os
import socket

from tests.kit.harness import (HostServers, Netns, QemuGuest, Vnetd, check, guest_addr, guest_kit,
                               host_addr, make_blob, new_qemu, ns_fetch_sha, require_root_and_tun,
                               workdir)

MAC = '52:54:00:7a:00:02'
HOST, GUEST = '10.122.0.1', '10.122.0.2'
SIZE_MB = 8
VIRTIO_VENDOR = '0x1af4'


def msix_vectors(config):
    """MSI-X table size from a PCI config space dump (bytes), or 0 without the capability."""
    if len(config) < 0x40 or not config[6] & 0x10:       # status: capability list
        return 0
    pos, seen = config[0x34] & 0xfc, set()
    while pos and pos not in seen and pos + 3 < len(config):
        seen.add(pos)
        if config[pos] == 0x11:
            return ((config[pos + 2] | config[pos + 3] << 8) & 0x7ff) + 1
        pos = config[pos + 1] & 0xfc
    return 0


def virtio_pci_dev(g):
    """sysfs directory of the guest's virtio-net PCI function."""
    rc, out = g.run('readlink -f /sys/class/net/eth0/device/..', check=True)
    return out.strip()


def guest_config(g, dev):
    rc, out = g.run('od -An -v -tx1 %s/config' % dev, check=True)
    return bytes(int(x, 16) for x in out.split())


def virtio_irqs(g):
    """{irq line description: count} of the guest's virtio interrupt lines."""
    rc, out = g.run('grep virtio /proc/interrupts', check=False)
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[1].isdigit():
            res[' '.join(f[2:])] = int(f[1])
    return res


def migration_blockers(qmp_path):
    """QEMU's reasons why this VM cannot migrate (QMP query-migrate), or an error text."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(30)
            s.connect(qmp_path)
            f = s.makefile('rw')
            f.readline()                                   # greeting
            out = []
            for c in ('qmp_capabilities', 'query-migrate'):
                f.write(json.dumps({'execute': c}) + '\n')
                f.flush()
                while True:
                    r = json.loads(f.readline())
                    if 'return' in r or 'error' in r:
                        break
                out.append(r)
            return out[-1].get('return', {}).get('blocked-reasons', out[-1])
    except (OSError, ValueError) as e:
        return 'QMP failed: %s' % e


def main():
    require_root_and_tun()
    qemu = new_qemu('sid')
    kit = guest_kit(os.environ.get('VNETD_QEMU_GUEST_SUITE', 'bookworm'))
    wd = workdir('qemu-full')
    sock = os.path.join(wd, 'p0.sock')
    blob_sha = make_blob(os.path.join(wd, 'blob'), SIZE_MB)
    port = 'socket=%s,tap=vtap0,mac=%s,queues=2' % (sock, MAC)
    with Netns('vnetd-e2e-qfull') as ns, Vnetd(ns, [port], wd) as vd:
        host_addr(ns, 'vtap0', HOST)
        qmp = os.path.join(wd, 'qmp.sock')
        with HostServers(ns, HOST, wd), \
                QemuGuest(kit, vhost_socket=sock, qemu=qemu, full_device=True, num_vqs=5,
                          extra_args=['-qmp', 'unix:%s,server=on,wait=off' % qmp],
                          log_path=os.path.join(wd, 'qemu.log')) as g:
            run_guest(g, vd, ns, blob_sha)
            # Reported, not asserted: what keeps this mode from live migration.
            print('migration blocked by: %s' % migration_blockers(qmp))
        check(vd.alive(), 'vnetd still running')


def run_guest(g, vd, ns, blob_sha):
    rc, out = g.run('cat /sys/class/net/eth0/address')
    check(out.strip() == MAC, "eth0 has vnetd's MAC (config space served by vnetd): %s" % out.strip())
    rc, out = g.run('ethtool -l eth0 | grep Combined', check=True)
    check(out.split()[1] == '2', 'max_virtqueue_pairs 2 read from vnetd (%s)' % ' '.join(out.split()))
    g.run('ethtool -L eth0 combined 2', check=True)
    check(vd.port_info()['p0']['active_pairs'] == 2, "the guest's MQ_VQ_PAIRS_SET reached vnetd")
    guest_addr(g, GUEST)
    rc, _ = g.run('ping -c 3 -W 10 %s' % HOST, timeout=120)
    check(rc == 0, 'the guest pings the host through vnetd')

    # The guest's own ethtool -C: TX_SET and RX_SET on the control queue vnetd serves.
    g.run('ethtool -C eth0 rx-usecs 50 rx-frames 20 tx-usecs 60 tx-frames 30', check=True)
    st = vd.stats()['p0']
    got = {q: (st[q]['max_usecs'], st[q]['max_packets'], st[q]['set_by']) for q in range(4)}
    want = {0: (50, 20, 'guest'), 2: (50, 20, 'guest'), 1: (60, 30, 'guest'), 3: (60, 30, 'guest')}
    check(got == want, "the guest's ethtool -C reached vnetd on all four data queues: %s" % got)
    check(st[4]['kind'] == 'ctrl' and st[4]['kicks'] > 0, 'vnetd served the control queue (vq 4)')

    # MSI-X: what the device offers and what the guest driver made of it.
    dev = virtio_pci_dev(g)
    vectors = msix_vectors(guest_config(g, dev))
    rc, msi = g.run('ls %s/msi_irqs 2>/dev/null | wc -l' % dev)
    irqs0 = virtio_irqs(g)
    mode = 'MSI-X' if any('MSI' in k for k in irqs0) else 'INTx'
    print('MSI-X: the device has %d vector(s); the guest uses %s (%s MSI irqs; lines %s)'
          % (vectors, mode, msi.strip(), sorted(irqs0)))
    check(irqs0, 'the guest has a virtio interrupt line')

    # Traffic on both pairs.
    g.run('iperf3 -s -D --logfile /tmp/s.log; for i in $(seq 20); do netstat -ltn | grep -q :5201 && exit 0; sleep 0.5; done; exit 1', check=True)
    a = vd.stats()
    r = ns.run(['iperf3', '-c', GUEST, '-P', '8', '-t', '3'], check=False, timeout=300)
    check(r.returncode == 0, 'host->guest iperf3, 8 streams %s' % r.stderr[-200:])
    rc, out = g.run('iperf3 -c %s -P 8 -t 3 >/tmp/c.log 2>&1; rc=$?; tail -n 3 /tmp/c.log; '
                    'exit $rc' % HOST, timeout=300)
    check(rc == 0, 'guest->host iperf3, 8 streams')
    b = vd.stats()
    used = {q: b['p0'][q]['packets'] - a['p0'][q]['packets'] for q in range(4)}
    print('packets per queue: %s' % used)
    check(all(v > 0 for v in used.values()), 'traffic used rx and tx queues of both pairs')
    irqs1 = virtio_irqs(g)
    check(sum(irqs1.values()) > sum(irqs0.values()), 'guest interrupts on the virtio line(s) '
          'counted the traffic (%d -> %d)' % (sum(irqs0.values()), sum(irqs1.values())))

    # Byte-exact both ways, with the guest's coalescing active.
    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=600)
    check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)
    g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null && httpd -p 8080 -h /tmp'
          % SIZE_MB, check=True)
    want = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
    check(ns_fetch_sha(ns, 'http://%s:8080/up' % GUEST, timeout=300,
                       run_timeout=600) == want,
          '%d MB guest->host byte-exact' % SIZE_MB)


if __name__ == '__main__':
    main()
