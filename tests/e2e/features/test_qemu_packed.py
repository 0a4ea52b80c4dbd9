# SPDX-License-Identifier: MIT
"""A QEMU guest on packed rings: virtio-net-pci packed=on with -netdev vhost-user on a vnetd tap
port with packed=on. Printed: the feature bits the guest driver and vnetd negotiated (bit 34
RING_PACKED must be set on both sides, vnetctl ring=packed); ping both ways and 8 MB byte-exact
each way through the packed rings."""

import os
import subprocess

from tests.kit.harness import (Netns, QemuGuest, Vnetd, check, guest_addr, guest_kit, host_addr,
                               make_blob, ns_fetch_sha, require_program, require_root_and_tun,
                               workdir)

SIZE_MB = 8
RING_PACKED, IN_ORDER = 34, 35
MAC = '52:54:00:22:00:02'
HOST, GUEST = '10.122.34.1', '10.122.34.2'


def guest_bits(g):
    """Feature bits the guest driver negotiated (sysfs string, one char per bit)."""
    rc, out = g.run('cat /sys/class/net/eth0/device/features')
    s = out.strip()
    check(rc == 0 and set(s) <= {'0', '1'} and len(s) >= 36, 'guest features string read (%d bits)'
          % len(s))
    return {i for i, c in enumerate(s) if c == '1'}


def main():
    require_root_and_tun()
    require_program('qemu-system-x86_64', 'qemu-system-x86')
    kit = guest_kit()
    wd = workdir('qemu-packed')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    blob_sha = make_blob(blob, SIZE_MB)
    with Netns('vnetd-e2e-qpk') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s,packed=on' % (sock, MAC)], wd) as vd:
        host_addr(ns, 'vtap0', HOST)
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # vectors=0 as in test_qemu.py (QEMU 7.2 TCG MSI-X crash with vhost-user).
            with QemuGuest(kit, vhost_socket=sock, mac=MAC, device_opts=',vectors=0,packed=on',
                           log_path=os.path.join(wd, 'qemu.log')) as g:
                bits = guest_bits(g)
                info = vd.port_info()['p0']
                print('QEMU packed=on: vnetd features %s ring %s in_order %s; guest bits: %s' % (
                    info['features'], info['ring'], info['in_order'], sorted(bits)), flush=True)
                check(RING_PACKED in bits and info['ring'] == 'packed',
                      'ring is packed (guest bit 34 set, vnetctl ring=packed)')
                check(IN_ORDER not in bits and not info['in_order'],
                      'IN_ORDER not negotiated (port in-order=off)')
                guest_addr(g, GUEST)
                rc, _ = g.run('ping -c 3 -W 10 %s' % HOST, timeout=120)
                check(rc == 0, 'QEMU guest pings the host over packed rings')
                r = ns.run('ping -c 3 -W 10 %s' % GUEST, check=False, timeout=120)
                check(r.returncode == 0, 'host pings the QEMU guest')
                rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=600)
                check(rc == 0 and out.split()[0] == blob_sha,
                      '%d MB host->guest byte-exact (packed)' % SIZE_MB)
                g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null && '
                      'httpd -p 8080 -h /tmp' % SIZE_MB, check=True)
                want = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                got = ns_fetch_sha(ns, 'http://%s:8080/up' % GUEST)
                check(got == want, '%d MB guest->host byte-exact (packed)' % SIZE_MB)
                print('QEMU packed stats p0:', {i: (q['kind'], q.get('packets'))
                                                for i, q in vd.stats()['p0'].items()}, flush=True)
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
