"""vnetd --workers 2 with two UML guests on taps (one per worker) and two on the switch: both
tap guests download a blob at the same time, byte-exact, while vnetctl stats is read over and
over; the switch guests reach each other; a tap port added at run time goes to a worker and
works; every thread of vnetd runs under the seccomp filter."""

import os
import subprocess
import threading

from harness import (Netns, UmlGuest, Vnetd, check, guest_kit, make_blob, require_root_and_tun,
                     workdir)

BLOB_MB = 16
TAPS = ('vwk0', 'vwk1', 'vwk2')
NETS = ('10.80.0', '10.80.1', '10.80.2')


def tap_guest(kit, wd, sock, i):
    g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'tap%d.log' % i))
    g.__enter__()
    g.run('ip link set eth0 up && ip addr add %s.2/24 dev eth0' % NETS[i], check=True)
    return g


def main():
    require_root_and_tun()
    kit = guest_kit()
    wd = workdir('workers')
    blob = os.path.join(wd, 'blob')
    sha = make_blob(blob, BLOB_MB)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(5)]
    ports = ['socket=%s,tap=%s' % (socks[0], TAPS[0]), 'socket=%s,tap=%s' % (socks[1], TAPS[1]),
             'socket=%s,switch,mac=52:54:00:80:09:01' % socks[2],
             'socket=%s,switch,mac=52:54:00:80:09:02' % socks[3]]
    with Netns('vnetd-e2e-workers') as ns, \
            Vnetd(ns, ports, wd, extra=['--workers', '2']) as vd:
        pid = vd.proc.pid
        tasks = os.listdir('/proc/%d/task' % pid)
        check(len(tasks) == 2, 'vnetd runs 2 threads (%d)' % len(tasks))
        for t in tasks:
            with open('/proc/%d/task/%s/status' % (pid, t)) as f:
                st = dict(line.split(':', 1) for line in f if ':' in line)
            check(st['Seccomp'].strip() == '2', 'thread %s is under the seccomp filter' % t)
        check('worker 1' in vd.log_tail(20000), 'a tap port was placed on worker 1')
        servers = []
        for i in (0, 1):
            ns.run('ip addr add %s.1/24 dev %s && ip link set %s up' % (NETS[i], TAPS[i], TAPS[i]))
            servers.append(ns.popen(['python3', '-m', 'http.server', '8000', '--bind',
                                     NETS[i] + '.1', '--directory', wd],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        guests = []
        try:
            guests = [tap_guest(kit, wd, socks[i], i) for i in (0, 1)]
            for i, g in enumerate(guests):
                rc, _ = g.run('ping -c 2 -W 5 %s.1' % NETS[i], timeout=60)
                check(rc == 0, 'tap guest %d pings the host' % i)
            results = {}

            def fetch(i):
                results[i] = guests[i].run('wget -q -O - http://%s.1:8000/blob | sha256sum'
                                           % NETS[i], timeout=300)

            threads = [threading.Thread(target=fetch, args=(i,)) for i in (0, 1)]
            for t in threads:
                t.start()
            reads = 0
            while any(t.is_alive() for t in threads):
                vd.stats()  # the control socket keeps answering while both workers move data
                reads += 1
            for t in threads:
                t.join()
            for i in (0, 1):
                rc, out = results[i]
                check(rc == 0 and out.split()[0] == sha,
                      'tap guest %d: %d MB download byte-exact, in parallel' % (i, BLOB_MB))
            check(reads > 0, 'vnetctl stats answered %d times during the transfers' % reads)
            st = vd.stats()
            check(all(st['p%d' % i][0]['bytes'] >= BLOB_MB << 20 for i in (0, 1)),
                  'both tap ports counted the download')
        finally:
            for g in guests:
                g.stop()
            for s in servers:
                s.kill()

        with UmlGuest(kit, socks[2], log_path=os.path.join(wd, 'sw-a.log')) as a, \
                UmlGuest(kit, socks[3], log_path=os.path.join(wd, 'sw-b.log')) as b:
            for g, ip in ((a, '10.88.9.1'), (b, '10.88.9.2')):
                g.run('ip link set eth0 up && ip addr add %s/24 dev eth0' % ip, check=True)
            rc, _ = a.run('ping -c 3 -W 5 10.88.9.2', timeout=60)
            check(rc == 0, 'switch guests reach each other with 2 workers')

        name = vd.ctl('port-add', 'socket=%s,tap=%s' % (socks[4], TAPS[2])).stdout.strip()
        ns.run('ip addr add %s.1/24 dev %s && ip link set %s up' % (NETS[2], TAPS[2], TAPS[2]))
        g = tap_guest(kit, wd, socks[4], 2)
        try:
            rc, _ = g.run('ping -c 2 -W 5 %s.1' % NETS[2], timeout=60)
            check(rc == 0, 'a tap port added at run time (%s) works with 2 workers' % name)
        finally:
            g.stop()
        vd.ctl('port-del', name)
        check(name not in vd.port_info() and vd.alive(), 'port-del with 2 workers')


if __name__ == '__main__':
    main()
