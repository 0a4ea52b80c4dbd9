# SPDX-License-Identifier: MIT
"""UML guest (Linux 6.1, no DIM) on a vnetd tap port with rx-adaptive/tx-adaptive: vnetd's
adaptive coalescing changes max_usecs/max_packets under bulk load and returns to level 0 on
sparse traffic; the guest's ethtool -C replaces it (last setter wins); with AGGRESSIVE guest
settings the stall guard notifies early in bulk TCP runs (counted per reason), off it never
does, and every transfer is byte-exact. No timing is asserted."""

import os
import subprocess
import threading
import time

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, guest_addr, host_addr, iperf3_client,
                               make_blob, uml_start)

MAC = '52:54:00:77:00:09'
HOST_IP, GUEST_IP = '10.77.9.1', '10.77.9.2'
SIZE_MB = 20
AGGRESSIVE = 'rx-usecs 5000 rx-frames 50 tx-usecs 5000 tx-frames 50'
FETCH = ('import urllib.request,hashlib,sys;'
         'print(hashlib.sha256(urllib.request.urlopen(sys.argv[1], timeout=300).read()).hexdigest())')
EARLY = ('early_idle', 'early_ring', 'early_bytes')


def transfer_in(g, url, expect_sha, what):
    rc, out = g.run('wget -q -O - %s | sha256sum' % url, timeout=300)
    check(rc == 0 and out.split()[0] == expect_sha, 'host->guest %d MB byte-exact (%s)' % (SIZE_MB, what))


def transfer_out(ns, expect_sha, what):
    r = ns.run(['python3', '-c', FETCH, 'http://%s:8080/up' % GUEST_IP], timeout=300, check=False)
    check(r.returncode == 0 and r.stdout.strip() == expect_sha,
          'guest->host %d MB byte-exact (%s)' % (SIZE_MB, what))


def early_total(st):
    return {qi: sum(st['p0'][qi][k] for k in EARLY) for qi in (0, 1)}


class Watcher:
    """Polls vnetctl stats while a load runs: what the adaptive controller chose."""

    def __init__(self, vd):
        self.vd = vd
        self.seen = {0: set(), 1: set()}  # (max_usecs, max_packets, set_by, level)
        self.stop_evt = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop_evt.is_set():
            st = self.vd.stats()['p0']
            for qi in (0, 1):
                q = st[qi]
                self.seen[qi].add((q['max_usecs'], q['max_packets'], q['set_by'],
                                   q['adaptive_level']))
            time.sleep(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_evt.set()
        self.thread.join()
        return False


def iperf(ns, args, seconds=4):
    """One iperf3 run against the guest's server (harness.iperf3_client retries while the
    server is not ready): True when it completed."""
    return iperf3_client(ns, GUEST_IP, args, seconds)[0]


def main():
    kit, wd = uml_start('coal-adaptive')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    blob_sha = make_blob(blob, SIZE_MB)

    with Netns('vnetd-e2e-adapt') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap9,mac=%s,rx-adaptive=on,tx-adaptive=on' % (sock, MAC)],
                  wd) as vd:
        host_addr(ns, 'vtap9', HOST_IP)
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with UmlGuest(kit, sock, mem='1G', log_path=os.path.join(wd, 'uml.log')) as g:
                guest_addr(g, GUEST_IP)
                g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)" = up ]'
                      ' && break; sleep 0.2; done')
                rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
                check(rc == 0, 'guest pings host')
                g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null' % SIZE_MB, check=True)
                up_sha = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                g.run('httpd -p 8080 -h /tmp', check=True)
                g.run('iperf3 -s -D', check=True)
                url = 'http://%s:8000/blob' % HOST_IP

                info = vd.port_info()['p0']
                check(info['stall_guard'] and info['rx_adaptive'] and info['tx_adaptive'],
                      'vnetctl ports: stall guard on (default), RX and TX adaptive')
                st = vd.stats()['p0']
                for qi, kind in ((0, 'rx'), (1, 'tx')):
                    check(st[qi]['adaptive'] and st[qi]['set_by'] == 'adaptive',
                          '%s queue: adaptive, set_by adaptive (state %s, level %d)' % (
                              kind, st[qi]['adaptive_state'], st[qi]['adaptive_level']))

                # 1. Adaptive under load: bulk TCP both ways and unpaced UDP into the guest.
                with Watcher(vd) as w:
                    ok_rx = iperf(ns, [])
                    ok_tx = iperf(ns, ['-R'])
                    ok_udp = iperf(ns, ['-u', '-b', '0', '-l', '1400'])
                check(ok_rx and ok_tx and ok_udp, 'iperf3 bulk runs completed')
                st = vd.stats()['p0']
                for qi in (0, 1):
                    print('queue %d: values seen %s; %d level changes in %d windows' % (
                        qi, sorted(w.seen[qi]), st[qi]['adaptive_changes'],
                        st[qi]['adaptive_windows']))
                held = [(qi, v) for qi in (0, 1) for v in w.seen[qi]
                        if v[0] > 0 and v[1] > 0 and v[2] == 'adaptive']
                check(held, 'under load the adaptive controller chose coalescing values (%s)'
                      % held[:4])
                check(st[0]['adaptive_changes'] + st[1]['adaptive_changes'] > 0,
                      'adaptive level changes counted in stats')
                # Sparse traffic afterwards: back to level 0 (notify every packet).
                g.run('ping -c 20 -i 0.05 %s' % HOST_IP, timeout=60)
                ns.run('ping -c 20 -i 0.05 %s' % GUEST_IP, check=False)
                st = vd.stats()['p0']
                for qi in (0, 1):
                    check(st[qi]['adaptive_level'] == 0 and st[qi]['max_usecs'] == 0,
                          'queue %d back to level 0 after the load (level %d, %d us)' % (
                              qi, st[qi]['adaptive_level'], st[qi]['max_usecs']))
                transfer_in(g, url, blob_sha, 'adaptive')
                transfer_out(ns, up_sha, 'adaptive')

                # 2. The guest's values replace adaptive mode (last setter wins).
                rc, out = g.run('ethtool -C eth0 ' + AGGRESSIVE)
                check(rc == 0, 'guest ethtool -C AGGRESSIVE succeeds (%s)' % out.strip())
                st = vd.stats()['p0']
                for qi in (0, 1):
                    q = st[qi]
                    check(q['set_by'] == 'guest' and not q['adaptive'] and q['max_usecs'] == 5000
                          and q['max_packets'] == 50,
                          'queue %d: guest values 5000 us / 50, adaptive off' % qi)

                # 3. Stall guard with AGGRESSIVE: bulk TCP both ways, early notifications.
                s0 = vd.stats()
                transfer_in(g, url, blob_sha, 'AGGRESSIVE, stall guard on')
                transfer_out(ns, up_sha, 'AGGRESSIVE, stall guard on')
                check(iperf(ns, ['-R'], 3), 'iperf3 guest->host with the guard on')
                s1 = vd.stats()
                e0, e1 = early_total(s0), early_total(s1)
                for qi in (0, 1):
                    print('queue %d early notifications: %s' % (qi, {
                        k: s1['p0'][qi][k] - s0['p0'][qi][k] for k in EARLY}))
                check(e1[0] - e0[0] + e1[1] - e0[1] > 0,
                      'stall guard counted early notifications in the bulk runs')
                check(e1[1] > e0[1], 'TX queue notified early (completions the driver waited for)')

                r = vd.ctl('stall-guard', 'p0', 'off', check=False)
                check(r.returncode == 0 and not vd.port_info()['p0']['stall_guard'],
                      'vnetctl stall-guard p0 off')
                s2 = vd.stats()
                transfer_in(g, url, blob_sha, 'AGGRESSIVE, stall guard off')
                transfer_out(ns, up_sha, 'AGGRESSIVE, stall guard off')
                s3 = vd.stats()
                check(early_total(s3) == early_total(s2), 'guard off: no early notification')
                vd.ctl('stall-guard', 'p0', 'on')
                check(vd.port_info()['p0']['stall_guard'], 'vnetctl stall-guard p0 on')

                # 4. The host takes adaptive mode back (last setter wins the other way).
                vd.ctl('coalesce', 'p0', 'adaptive', 'on')
                st = vd.stats()['p0']
                check(all(st[qi]['adaptive'] and st[qi]['set_by'] == 'adaptive' for qi in (0, 1)),
                      'vnetctl coalesce p0 adaptive on replaces the guest values')
                transfer_in(g, url, blob_sha, 'adaptive again')
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
