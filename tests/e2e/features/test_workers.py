# SPDX-License-Identifier: MIT
"""vnetd --workers 2 with two UML guests on taps (one per worker) and two on the switch (also
one per worker): both tap guests download a blob at the same time, byte-exact, while vnetctl
stats is read over and over; the switch guests, whose ports are pinned on different workers
(worker=0, worker=1; vnetctl ports and stats say so), ping each other and move files both ways at once, byte-exact, through
the switch's cross-worker queues; a tap port added at run time goes to a worker and works;
every thread of vnetd runs under the seccomp filter. Ring layouts are mixed: one tap port and
both switch ports offer packed rings (one switch port with IN_ORDER too), so frames cross
workers between a packed and a packed+IN_ORDER ring, and the other tap port is split with
IN_ORDER."""

import json
import os
import subprocess
import threading

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, guest_addr, host_addr, make_blob,
                               uml_start)

BLOB_MB = 16
SWITCH_MB = 8
TAPS = ('vwk0', 'vwk1', 'vwk2')
NETS = ('10.80.0', '10.80.1', '10.80.2')


def tap_guest(kit, wd, sock, i):
    g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'tap%d.log' % i))
    g.__enter__()
    guest_addr(g, '%s.2' % NETS[i])
    return g


def check_rings(vd, rings, names):
    """Each port's negotiated ring layout (vnetctl ports --json) is the one its keys offered."""
    info = vd.port_info()
    for n in names:
        got = (info[n]['ring'], info[n]['in_order'])
        check(got == rings[n], '%s on worker %d: ring %s, in_order %s' % (n, info[n]['worker'], *got))


def main():
    kit, wd = uml_start('workers')
    blob = os.path.join(wd, 'blob')
    sha = make_blob(blob, BLOB_MB)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(5)]
    ports = ['socket=%s,tap=%s,packed=on,in-order=off' % (socks[0], TAPS[0]),
             'socket=%s,tap=%s,packed=off' % (socks[1], TAPS[1]),
             'socket=%s,switch,mac=52:54:00:80:09:01,worker=0,packed=on,in-order=off' % socks[2],
             'socket=%s,switch,mac=52:54:00:80:09:02,worker=1,packed=on,in-order=on' % socks[3]]
    rings = {'p0': ('packed', False), 'p1': ('split', True), 'p2': ('packed', False),
             'p3': ('packed', True)}
    with Netns('vnetd-e2e-workers') as ns, \
            Vnetd(ns, ports, wd, extra=['--workers', '2']) as vd:
        pid = vd.proc.pid
        tasks = os.listdir('/proc/%d/task' % pid)
        comms = []
        for t in tasks:
            with open('/proc/%d/task/%s/comm' % (pid, t)) as f:
                comms.append(f.read().strip())
        # the two workers (named vnetd), and the write watchdog's thread (peer_io.c)
        check(comms.count('vnetd') == 2 and comms.count('vnetd-watchdog') == 1,
              'vnetd runs 2 worker threads and its write watchdog (%s)' % ', '.join(comms))
        for t in tasks:
            with open('/proc/%d/task/%s/status' % (pid, t)) as f:
                st = dict(line.split(':', 1) for line in f if ':' in line)
            check(st['Seccomp'].strip() == '2', 'thread %s is under the seccomp filter' % t)
        check('worker 1' in vd.log_tail(20000), 'a tap port was placed on worker 1')
        info = vd.port_info()
        stats_workers = {p['name']: p['worker']
                         for p in json.loads(vd.ctl('stats', '--json').stdout)['ports']}
        check(info['p0']['worker'] != info['p1']['worker'], 'the two tap ports are on different '
              'workers (%d, %d)' % (info['p0']['worker'], info['p1']['worker']))
        check(info['p2']['worker'] != info['p3']['worker'], 'the two switch ports are on '
              'different workers (%d, %d)' % (info['p2']['worker'], info['p3']['worker']))
        check(all(stats_workers[n] == info[n]['worker'] for n in info),
              'vnetctl stats --json shows the same worker per port as ports')
        table = vd.ctl('ports').stdout
        check('WORKER' in table.splitlines()[0], 'vnetctl ports has a WORKER column')
        servers = []
        for i in (0, 1):
            host_addr(ns, TAPS[i], '%s.1' % NETS[i])
            servers.append(ns.popen(['python3', '-m', 'http.server', '8000', '--bind',
                                     NETS[i] + '.1', '--directory', wd],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        guests = []
        try:
            guests = [tap_guest(kit, wd, socks[i], i) for i in (0, 1)]
            for i, g in enumerate(guests):
                rc, _ = g.run('ping -c 2 -W 5 %s.1' % NETS[i], timeout=60)
                check(rc == 0, 'tap guest %d pings the host' % i)
            check_rings(vd, rings, ('p0', 'p1'))
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
                guest_addr(g, ip)
            check_rings(vd, rings, ('p2', 'p3'))
            rc, _ = a.run('ping -c 3 -W 5 10.88.9.2', timeout=60)
            check(rc == 0, 'switch guests reach each other with 2 workers')
            rc, _ = b.run('ping -c 3 -W 5 10.88.9.1', timeout=60)
            check(rc == 0, 'and back')
            # Both ways at once: each guest serves a file the other fetches, so frames cross
            # between the workers in both directions at the same time.
            sums = {}
            for g, name in ((a, 'a'), (b, 'b')):
                g.run('dd if=/dev/urandom of=/tmp/f bs=1M count=%d 2>/dev/null; '
                      'httpd -p 8080 -h /tmp' % SWITCH_MB, check=True)
                sums[name] = g.run('sha256sum /tmp/f', check=True)[1].split()[0]
            before = vd.stats()
            got = {}

            def get(g, name, ip):
                got[name] = g.run('wget -q -O - http://%s:8080/f | sha256sum' % ip, timeout=300)

            threads = [threading.Thread(target=get, args=(a, 'a', '10.88.9.2')),
                       threading.Thread(target=get, args=(b, 'b', '10.88.9.1'))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rc, out = got['a']
            check(rc == 0 and out.split()[0] == sums['b'],
                  'switch guest A fetched %d MB from B across workers, byte-exact' % SWITCH_MB)
            rc, out = got['b']
            check(rc == 0 and out.split()[0] == sums['a'],
                  'switch guest B fetched %d MB from A across workers, byte-exact' % SWITCH_MB)
            after = vd.stats()
            for port in ('p2', 'p3'):
                rx = after[port][0]['bytes'] - before[port][0]['bytes']
                check(rx >= SWITCH_MB << 20, '%s received its %d MB (%d bytes)'
                      % (port, SWITCH_MB, rx))

        name = vd.ctl('port-add', 'socket=%s,tap=%s' % (socks[4], TAPS[2])).stdout.strip()
        host_addr(ns, TAPS[2], '%s.1' % NETS[2])
        g = tap_guest(kit, wd, socks[4], 2)
        try:
            rc, _ = g.run('ping -c 2 -W 5 %s.1' % NETS[2], timeout=60)
            check(rc == 0, 'a tap port added at run time (%s) works with 2 workers' % name)
        finally:
            g.stop()
        vd.ctl('port-del', name)
        check(name not in vd.port_info() and vd.alive(), 'port-del with 2 workers')

        # worker=N pins a port: worker 1 although worker 0 has no more ports than it; and a
        # worker beyond --workers is refused.
        pin = os.path.join(wd, 'pin.sock')
        name = vd.ctl('port-add', 'socket=%s,switch,worker=1' % pin).stdout.strip()
        check(vd.port_info().get(name, {}).get('worker') == 1,
              'port-add ...,worker=1 puts %s on worker 1' % name)
        vd.ctl('port-del', name)
        # Switch ports without worker= stay on one worker (a frame crossing costs more).
        s1 = vd.ctl('port-add', 'socket=%s,switch' % pin).stdout.strip()
        s2 = vd.ctl('port-add', 'socket=%s,switch' % (pin + '2')).stdout.strip()
        w1, w2 = (vd.port_info().get(n, {}).get('worker') for n in (s1, s2))
        check(w1 is not None and w1 == w2, 'switch ports without worker= share a worker (%s: %s, '
              '%s: %s)' % (s1, w1, s2, w2))
        vd.ctl('port-del', s1)
        vd.ctl('port-del', s2)
        r = vd.ctl('port-add', 'socket=%s,switch,worker=2' % pin, check=False)
        check(r.returncode != 0 and 'worker=2' in r.stdout + r.stderr and vd.alive(),
              'port-add ...,worker=2 refused with 2 workers, saying why (%s)'
              % (r.stdout + r.stderr).strip()[:120])


if __name__ == '__main__':
    main()
