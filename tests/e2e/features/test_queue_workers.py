# SPDX-License-Identifier: MIT
"""One switch port's two queue pairs on two workers (queues=2,queue-workers=0+1, vnetd --workers
2), driven by DPDK testpmd virtio-user with queues=2 (--rxq=2 --txq=2; a first burst on every TX
queue, then mac forwarding: a frame received on queue i of one port goes out on queue i of the
other, unicast, from the port's own MAC) against a second queues=2 switch port. The frontend
keeps the control queue to itself (no MQ command reaches vnetd), so a frame for the spread port
goes to the sender's pair: vnetctl ports shows each pair's worker; both pairs of the
spread port send and receive; every frame vnetd took from a TX ring is in an RX ring or counted
as dropped (back-pressure keeps the cross-worker rings lossless); host coalescing and adaptive
mode set on the lane's queues while traffic runs reach them (the workers park, the lane's view
gets the new state); a queue-workers= that does not fit, and a rate limit, are refused; both ports are removed and added again with
queue-workers=0+1, and then every queue of both moves frames; the frontend killed mid-traffic
leaves vnetd running, and a new one forwards on every queue."""

import os
import time

from tests.kit.harness import NoNs, Vnetd, VNETCTL, VNETD, check, fail, skip, workdir

MAC0, MAC1 = '02:00:00:00:24:01', '02:00:00:00:24:02'
FLOWGEN_SRC = '00:01:02:03:04:00'  # testpmd flowgen's own source MAC: allowed on both ports
SECONDS = 3


def spec(sock, mac, extra=''):
    return 'socket=%s,switch,mac=%s,queues=2,allowed-macs=%s%s' % (sock, mac, FLOWGEN_SRC, extra)


def switch_drops(vd):
    """Frames the switch dropped, all ports (its queue for a guest without buffers, full rings),
    and frames the devices dropped (no usable RX queue)."""
    sw = sum(p.get('switch_frames', {}).get('dropped', 0) for p in vd.port_info().values())
    return sw + sum(q['dropped'] for qs in vd.stats().values() for q in qs.values())


def run_testpmd(wd, vd, socks, P):
    """flowgen on two queues=2 virtio-user ports for SECONDS: (testpmd port stats, vnetd stats
    before, after, switch drops before, after)."""
    pfx = 'vnetd-e2e-qw-%d' % os.getpid()
    fe = P.Testpmd('virtio-user', P.eal_args(pfx, 0, [
        'net_virtio_user0,path=%s,queues=2,mac=%s' % (socks[0], MAC0),
        'net_virtio_user1,path=%s,queues=2,mac=%s' % (socks[1], MAC1)], mem_mb=512),
        ['--forward-mode=mac', '--rxq=2', '--txq=2', '--total-num-mbufs=16384',
         '--eth-peer=0,%s' % MAC1, '--eth-peer=1,%s' % MAC0],
        os.path.join(wd, 'testpmd.log'))
    try:
        fe.wait_ready(120)
        time.sleep(0.5)
        before, d0 = vd.stats(), switch_drops(vd)
        # A first burst on every TX queue (txonly: from the port's own MAC), then each frame
        # received on queue i of one port goes out on queue i of the other (mac forwarding).
        fe.cmd('start tx_first 4')
        time.sleep(1)
        # Host coalescing on the lane's queues (worker 1) while it forwards: the workers park,
        # the device changes, the lane's view gets the new state.
        vd.ctl('coalesce', 'p0', '--queue', '2', 'adaptive', 'on')
        vd.ctl('coalesce', 'p0', '--queue', '3', 'tx-usecs', '20', 'tx-frames', '8')
        time.sleep(SECONDS - 1)
        fe.cmd('stop')
        time.sleep(1)
        st = fe.port_stats()
        after, d1 = vd.stats(), switch_drops(vd)
    finally:
        fe.quit()
        P.JANITOR.clean()
    return st, before, after, d0, d1


def main():
    for exe in (VNETD, VNETCTL):
        if not os.access(exe, os.X_OK):
            fail('%s not built (run make)' % exe)
    if not os.path.exists('/usr/bin/dpdk-testpmd'):
        skip('dpdk-testpmd not installed (package dpdk)')
    from bench.lib import dp_procs as P
    wd = workdir('queue-workers')
    socks = [os.path.join(wd, 'q%d.sock' % i) for i in range(2)]
    ports = [spec(socks[0], MAC0, ',queue-workers=0+1'), spec(socks[1], MAC1)]
    with Vnetd(NoNs(), ports, wd, extra=['--workers', '2']) as vd:
        info = vd.port_info()
        check(info['p0'].get('queue_workers') == [0, 1] and info['p0']['worker'] == 0,
              'vnetctl ports: p0 home worker 0, pairs on workers 0, 1 (%s)'
              % info['p0'].get('queue_workers'))
        check('queue_workers' not in info['p1'], 'p1 (no queue-workers=) on one worker (%d)'
              % info['p1']['worker'])
        table = vd.ctl('ports').stdout
        check(any(line.split()[0] == 'p0' and '0/q0+1' in line.split()
                  for line in table.splitlines()[1:] if line.split()),
              'vnetctl ports WORKER column: 0/q0+1')
        st, before, after, d0, d1 = run_testpmd(wd, vd, socks, P)
        sent = sum(p['tx_packets'] for p in st.values())
        got = sum(p['rx_packets'] for p in st.values())

        def moved(port, q):
            return after[port][q]['packets'] - before[port][q]['packets']
        per_q = {(n, q): moved(n, q) for n in ('p0', 'p1') for q in range(4)}
        print('active pairs: %s; drops per queue: %s; switch frames: %s' % (
            {n: i['active_pairs'] for n, i in vd.port_info().items()},
            {(n, q): after[n][q]['dropped'] - before[n][q]['dropped'] for n in after for q in after[n]},
            {n: i.get('switch_frames') for n, i in vd.port_info().items()}))
        print('testpmd: %d frames sent, %d received; vnetd per queue (port, queue): %s; switch '
              'drops %d' % (sent, got, per_q, d1 - d0))
        # p1 (one worker, no MQ command) receives on pair 0 only: p0's pair 1 TX carries the
        # first burst; its RX pair 1 gets p1's pair 1 TX (the sender's pair).
        for q, what, least in ((0, 'pair 0 RX (worker 0)', 1000), (1, 'pair 0 TX (worker 0)', 1000),
                               (2, 'pair 1 RX (worker 1)', 1000), (3, 'pair 1 TX (worker 1)', 128)):
            check(per_q[('p0', q)] >= least, 'p0 %s moved %d frames' % (what, per_q[('p0', q)]))
        took = sum(per_q[(n, q)] for n in ('p0', 'p1') for q in (1, 3))
        placed = sum(per_q[(n, q)] for n in ('p0', 'p1') for q in (0, 2))
        dropped = d1 - d0
        check(took <= sent and got <= placed, 'every frame received went through vnetd '
              '(%d taken <= %d sent, %d got <= %d placed)' % (took, sent, got, placed))
        # A few first frames flood (before the switch learnt the MACs): one delivery each.
        check(abs(took - placed - dropped) <= 64,
              'every frame taken is placed or counted dropped (%d taken, %d placed, %d dropped)'
              % (took, placed, dropped))
        check(got >= sent // 2, 'most frames delivered (%d of %d)' % (got, sent))
        s = after  # read while the frontend was still connected (a disconnect resets coalescing)
        check(s['p0'][3]['max_usecs'] == 20 and s['p0'][3]['max_packets'] == 8 and
              s['p0'][3]['set_by'] == 'host', 'host coalescing on the lane\'s TX queue 3 (20 us / 8): '
              '%s' % {k: s['p0'][3][k] for k in ('max_usecs', 'max_packets', 'set_by')})
        check(s['p0'][2]['adaptive'] and s['p0'][2]['adaptive_windows'] > 10,
              'adaptive mode on the lane\'s RX queue 2 runs there (%d windows, state %s)'
              % (s['p0'][2]['adaptive_windows'], s['p0'][2]['adaptive_state']))
        # Hostile specs: a count that does not match, a worker that does not exist.
        r = vd.ctl('port-add', 'socket=%s/bad.sock,switch,queues=2,queue-workers=0' % wd,
                   check=False)
        check(r.returncode != 0, 'queue-workers= with fewer workers than pairs refused')
        r = vd.ctl('port-add', 'socket=%s/bad.sock,switch,queues=2,queue-workers=0+5' % wd,
                   check=False)
        check(r.returncode != 0, 'queue-workers= naming worker 5 of 2 refused')
        r = vd.ctl('rate', 'p0', 'tx', '100', check=False)
        check(r.returncode != 0 and 'queue-workers' in r.stdout + r.stderr,
              'a rate limit on the spread port is refused (one bucket, several threads)')
        # Both removed and added again at run time (the workers parked around each), both with
        # queue-workers=0+1 now: pair i of each on worker i, every queue busy.
        vd.ctl('port-del', 'p0')
        vd.ctl('port-del', 'p1')
        time.sleep(0.3)
        names = [vd.ctl('port-add', spec(socks[i], (MAC0, MAC1)[i], ',queue-workers=0+1'))
                 .stdout.strip() for i in (0, 1)]
        time.sleep(0.3)
        info = vd.port_info()
        check(all(info.get(n, {}).get('queue_workers') == [0, 1] for n in names),
              'port-add of queue-workers= ports: %s on workers 0, 1' % names)
        st, before, after, d0, d1 = run_testpmd(wd, vd, socks, P)
        sent = sum(p['tx_packets'] for p in st.values())
        got = sum(p['rx_packets'] for p in st.values())
        per_q = {(n, q): after[n][q]['packets'] - before[n][q]['packets'] for n in names
                 for q in range(4)}
        print('re-added: testpmd %d sent, %d received; per queue %s; drops %d'
              % (sent, got, per_q, d1 - d0))
        check(all(v > 1000 for v in per_q.values()), 'every queue of both spread ports moved '
              'frames (least %d)' % min(per_q.values()))
        check(got >= sent // 2, 're-added: most frames delivered (%d of %d)' % (got, sent))
        # The frontend killed mid-traffic (no goodbye): the home tears the connection down
        # with the lanes parked; vnetd lives on, and a new frontend forwards again.
        pfx = 'vnetd-e2e-qwk-%d' % os.getpid()
        fe = P.Testpmd('virtio-user', P.eal_args(pfx, 0, [
            'net_virtio_user0,path=%s,queues=2,mac=%s' % (socks[0], MAC0),
            'net_virtio_user1,path=%s,queues=2,mac=%s' % (socks[1], MAC1)], mem_mb=512),
            ['--forward-mode=mac', '--rxq=2', '--txq=2', '--total-num-mbufs=16384',
             '--eth-peer=0,%s' % MAC1, '--eth-peer=1,%s' % MAC0],
            os.path.join(wd, 'testpmd-killed.log'))
        try:
            fe.wait_ready(120)
            fe.cmd('start tx_first 4')
            time.sleep(1)
            fe.proc.kill()
            fe.proc.wait()
        finally:
            fe.quit()
            P.JANITOR.clean()
        time.sleep(0.5)
        check(vd.alive(), 'vnetd survives its frontend killed mid-traffic')
        info = vd.port_info()
        check(not any(info[n]['connected'] for n in names), 'both ports disconnected')
        st, before, after, d0, d1 = run_testpmd(wd, vd, socks, P)
        got = sum(p['rx_packets'] for p in st.values())
        check(got > 1000 and all(after[n][q]['packets'] > before[n][q]['packets']
                                 for n in names for q in range(4)),
              'a new frontend forwards on every queue again (%d frames)' % got)
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
