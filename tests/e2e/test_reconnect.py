"""A UML frontend SIGKILLed mid-transfer: vnetd stays up, the port takes a new guest, which works."""

import os
import subprocess
import time

from harness import (Netns, UmlGuest, Vnetd, check, guest_kit, make_blob, require_root_and_tun,
                     workdir)


def open_fds(pid):
    return len(os.listdir('/proc/%d/fd' % pid))


def main():
    require_root_and_tun()
    kit = guest_kit()
    wd = workdir('reconnect')
    sock = os.path.join(wd, 'p0.sock')
    make_blob(os.path.join(wd, 'blob'), 64)
    with Netns('vnetd-e2e-reconn') as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        ns.run('ip addr add 10.78.0.1/24 dev vtap0 && ip link set vtap0 up')
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', '10.78.0.1',
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            fds_idle = open_fds(vd.proc.pid)
            for round_ in range(3):
                g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml%d.log' % round_))
                g.start()
                g.wait_ready()
                g.run('ip link set eth0 up && ip addr add 10.78.0.2/24 dev eth0', check=True)
                rc, _ = g.run('ping -c 2 -W 5 10.78.0.1', timeout=60)
                check(rc == 0, 'guest %d pings host' % round_)
                # Start a long download and kill the guest in the middle of it.
                g._send(b'wget -q -O /dev/null http://10.78.0.1:8000/blob\n')
                time.sleep(1.5)
                g.kill()
                time.sleep(0.5)
                check(vd.alive(), 'vnetd survives SIGKILL of guest %d mid-transfer' % round_)
                st = vd.stats()
                check(st['p0'][0]['packets'] > 0, 'traffic flowed before the kill')
            for _ in range(50):
                if not vd.port_info()['p0']['connected']:
                    break
                time.sleep(0.1)
            fds_after = open_fds(vd.proc.pid)
            check(fds_after <= fds_idle, 'no fd leaked over 3 kills (%d -> %d)' % (fds_idle, fds_after))
            with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml-final.log')) as g:
                g.run('ip link set eth0 up && ip addr add 10.78.0.2/24 dev eth0', check=True)
                rc, _ = g.run('ping -c 3 -W 5 10.78.0.1', timeout=60)
                check(rc == 0, 'a new guest on the same port works')
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
