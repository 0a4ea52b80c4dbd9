# SPDX-License-Identifier: MIT
"""A QEMU guest survives a vnetd restart: vnetd is the vhost-user *client* (port key `client`,
QEMU listens with -chardev socket,server=on,wait=off), host coalescing is set, the guest starts a
download, vnetd is SIGKILLed in the middle of it and started again with the same arguments. It
reconnects to QEMU by itself; the download finishes byte-exact (sha256), and the host
coalescing is back (--state-dir).

QEMU 7.2 under TCG: vectors=0 on virtio-net-pci (see test_qemu.py), memfd guest memory. The tap
is a persistent one created here, so the host side keeps its address across the restart."""

import os
import signal
import subprocess
import time

from tests.kit.harness import (Netns, QemuGuest, Vnetd, check, fail, guest_addr, guest_kit,
                               make_blob, require_root_and_tun, workdir)

HOST_IP, GUEST_IP = '10.79.5.1', '10.79.5.2'
TAP = 'vrs0'
MAC = '52:54:00:79:05:02'
BLOB_MB = 48
KILL_AFTER = 2 << 20  # RX bytes of the download before the kill


class ServerQemu(QemuGuest):
    """QEMU whose vhost-user chardev listens (server=on,wait=off): vnetd connects to it."""

    def argv(self):
        a = super().argv()
        i = a.index('socket,id=c0,path=%s' % self.vhost_socket)
        a[i] += ',server=on,wait=off'
        return a


def rx_bytes(vd):
    return vd.stats()['p0'][0]['bytes']


def wait_connected(vd, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if vd.port_info()['p0']['connected']:
                return True
        except Exception:  # noqa: BLE001 (control socket not up yet)
            pass
        time.sleep(0.1)
    return False


def main():
    require_root_and_tun()
    kit = guest_kit()
    if not os.path.exists(os.path.join(kit, 'qemu-initrd.cpio.gz')):
        fail('guest kit has no QEMU initrd')
    wd = workdir('restart')
    sock = os.path.join(wd, 'qemu-vhost.sock')
    state = os.path.join(wd, 'state')
    os.mkdir(state)
    blob = os.path.join(wd, 'blob')
    sha = make_blob(blob, BLOB_MB)
    spec = ['socket=%s,client,tap=%s' % (sock, TAP)]
    extra = ['--state-dir', state]

    with Netns('vnetd-e2e-restart') as ns:
        ns.add_tap(TAP, HOST_IP + '/24')
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        vd = Vnetd(ns, spec, os.path.join(wd, 'v1'), extra=extra)
        os.mkdir(vd.workdir)
        vd.__enter__()
        try:
            with ServerQemu(kit, vhost_socket=sock, mac=MAC, device_opts=',vectors=0',
                            log_path=os.path.join(wd, 'qemu.log')) as g:
                check(wait_connected(vd, 60), 'vnetd (client) connected to QEMU\'s socket')
                guest_addr(g, GUEST_IP)
                rc, _ = g.run('ping -c 3 -W 10 %s' % HOST_IP, timeout=120)
                check(rc == 0, 'guest pings the host')
                vd.ctl('coalesce', 'p0', 'rx-usecs', '64', 'rx-frames', '16')
                q = vd.stats()['p0'][0]
                check(q['max_usecs'] == 64 and q['set_by'] == 'host', 'host coalescing set')

                b0 = rx_bytes(vd)
                g.run('(wget -q -O - http://%s:8000/blob | sha256sum > /tmp/sha; echo done '
                      '>> /tmp/sha) >/dev/null 2>&1 &' % HOST_IP, check=True)
                deadline = time.monotonic() + 120
                while rx_bytes(vd) - b0 < KILL_AFTER:
                    if time.monotonic() > deadline:
                        fail('download did not start; vnetd log:\n' + vd.log_tail())
                    time.sleep(0.005)
                moved = rx_bytes(vd) - b0
                os.killpg(vd.proc.pid, signal.SIGKILL)
                vd.proc.wait()
                check(moved < BLOB_MB << 20, 'vnetd SIGKILLed mid-download (%.1f of %d MiB)'
                      % (moved / 1048576.0, BLOB_MB))

                t0 = time.monotonic()
                vd = Vnetd(ns, spec, os.path.join(wd, 'v2'), extra=extra)
                os.mkdir(vd.workdir)
                vd.__enter__()
                check(wait_connected(vd, 60), 'the new vnetd reconnected to QEMU (%.1f s)'
                      % (time.monotonic() - t0))
                deadline = time.monotonic() + 300
                out = ''
                while time.monotonic() < deadline:
                    rc, out = g.run('cat /tmp/sha 2>/dev/null', timeout=60)
                    if 'done' in out:
                        break
                    time.sleep(1)
                check(out.split()[:1] == [sha], 'the download finished byte-exact across the '
                      'restart (sha256 %s)' % (out.split()[:1] or ['none'])[0][:16])
                q = vd.stats()['p0'][0]
                check(q['max_usecs'] == 64 and q['max_packets'] == 16 and q['set_by'] == 'host',
                      'host coalescing is back after the restart (%s/%s by %s)'
                      % (q['max_usecs'], q['max_packets'], q['set_by']))
                rc, _ = g.run('ping -c 2 -W 10 %s' % HOST_IP, timeout=60)
                check(rc == 0, 'guest still pings the host')
        finally:
            http.kill()
            vd.stop()


if __name__ == '__main__':
    main()
