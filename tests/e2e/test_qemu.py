"""A QEMU 7.2 TCG guest on vnetd (-netdev vhost-user, memfd memory): link, ping through a tap,
and host-side coalescing (vnetctl coalesce) lowers its notification counters on a transfer."""

import hashlib
import os
import shutil
import subprocess

from harness import (Netns, QemuGuest, Vnetd, check, counter_delta, guest_kit,
                     require_root_and_tun, skip, workdir)

SIZE_MB = 8


def main():
    require_root_and_tun()
    if shutil.which('qemu-system-x86_64') is None:
        skip('qemu-system-x86_64 is not installed (Debian package qemu-system-x86)')
    kit = guest_kit()
    wd = workdir('qemu')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    with open(blob, 'wb') as f:
        f.write(os.urandom(SIZE_MB << 20))
    with open(blob, 'rb') as f:
        blob_sha = hashlib.sha256(f.read()).hexdigest()
    mac = '52:54:00:79:00:02'
    with Netns('vnetd-e2e-qemu') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s,offloads=off' % (sock, mac)], wd) as vd:
        ns.run('ip addr add 10.79.0.1/24 dev vtap0 && ip link set vtap0 up')
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', '10.79.0.1',
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with QemuGuest(kit, vhost_socket=sock, mac=mac,
                           log_path=os.path.join(wd, 'qemu.log')) as g:
                rc, out = g.run('cat /sys/class/net/eth0/address')
                check(out.strip() == mac, 'QEMU guest eth0 has the MAC')
                g.run('ip link set eth0 up && ip addr add 10.79.0.2/24 dev eth0', check=True)
                rc, _ = g.run('ping -c 3 -W 10 10.79.0.1', timeout=120)
                check(rc == 0, 'QEMU guest pings the host through vnetd')
                r = ns.run('ping -c 3 -W 10 10.79.0.2', check=False, timeout=120)
                check(r.returncode == 0, 'host pings the QEMU guest')

                url = 'http://10.79.0.1:8000/blob'
                s0 = vd.stats()
                rc, out = g.run('wget -q -O - %s | sha256sum' % url, timeout=600)
                check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)
                s1 = vd.stats()
                vd.ctl('coalesce', 'p0', 'rx-usecs', '2000', 'rx-frames', '64',
                       'tx-usecs', '2000', 'tx-frames', '64')
                st = vd.stats()['p0']
                check(st[0]['max_usecs'] == 2000 and st[0]['set_by'] == 'host',
                      'vnetctl coalesce set rx queue 0 (set by host)')
                s2 = vd.stats()
                rc, out = g.run('wget -q -O - %s | sha256sum' % url, timeout=600)
                check(rc == 0 and out.split()[0] == blob_sha, 'same transfer with coalescing is byte-exact')
                s3 = vd.stats()
                off = counter_delta(s0, s1, 'p0', 0, 'notifications')
                on = counter_delta(s2, s3, 'p0', 0, 'notifications')
                print('QEMU RX notifications: %d without, %d with host-side coalescing' % (off, on))
                check(on < off, 'host-side coalescing lowers the RX notification count')
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
