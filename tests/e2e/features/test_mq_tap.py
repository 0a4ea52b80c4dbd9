# SPDX-License-Identifier: MIT
"""A multi-queue tap (queues=2) with a Linux 7.2 UML guest: vnetd opens vtap0 with
IFF_MULTI_QUEUE, one fd per queue pair (tun_flags has the multi_queue bit); queues of pairs the
guest does not use are detached (sysfs shows 1 queue until `ethtool -L eth0 combined 2`, 2 after,
1 again after the guest goes), and with 1 pair every flow comes through tap queue 0 straight into
guest buffers. With 2 pairs and without RSS, 64 UDP flows from the host are spread by the kernel over both tap
queues and each lands on the RX queue of the fd it was read from (vnetd's per-queue tap counters
equal the RX queues' packets); guest->host TCP connections leave from both TX queues, each on its
own tap fd (tap TX per fd equals the TX queue's packets), byte-exact both ways. vnetctl stats
(text and --json) and the Prometheus metrics carry the packets per queue. A second guest on the
port (a reconnect) is served by both tap queues again; port-del closes every queue fd (the tap
goes away), port-add and a vnetd restart open both again; deleting the interface under vnetd
is noticed once and vnetd keeps running."""

import json
import os
import re
import time

from tests.kit.harness import (HostServers, Netns, UmlGuest, Vnetd, check, guest_addr, host_addr,
                               make_blob, ns_fetch_sha, require_root_and_tun, uml_kit, workdir)

MAC = '52:54:00:72:06:02'
HOST, GUEST = '10.72.6.1', '10.72.6.2'
TAP = 'vtap0'
IFF_MULTI_QUEUE = 0x0100
FLOWS, PER_FLOW, DPORT = 64, 20, 9000
FETCHES, UP_KB = 16, 512


def tap_queues(ns):
    """(RX queues, TX queues, tun_flags) of vtap0 as sysfs shows them; None if it is gone."""
    r = ns.run('ls /sys/class/net/%s/queues && cat /sys/class/net/%s/tun_flags' % (TAP, TAP),
               check=False)
    if r.returncode != 0:
        return None
    words = r.stdout.split()
    return (len([w for w in words if w.startswith('rx-')]),
            len([w for w in words if w.startswith('tx-')]), int(words[-1], 16))


def wait_for(cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def tap_gone(ns, timeout=20.0):
    """Whether vtap0 went away (the kernel unregisters it shortly after its last fd closes)."""
    deadline = time.monotonic() + timeout
    while ns.run('test -e /sys/class/net/%s' % TAP, check=False).returncode == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def stats_json(vd):
    """{'queues': {index: queue}, 'tap': [{queue, rx_packets, tx_packets}]} of port p0."""
    data = json.loads(vd.ctl('stats', '--json').stdout)
    p = data['ports'][0]
    return {'queues': {q['index']: q for q in p['queues']}, 'tap': p.get('tap_queues', [])}


def delta(a, b, side, i, key):
    if side == 'tap':
        return b['tap'][i][key] - a['tap'][i][key]
    return b['queues'][i]['packets'] - a['queues'][i]['packets']


def metrics(ns, vd):
    m = re.search(r'metrics: http://127\.0\.0\.1:(\d+)/metrics', vd.log_tail(100000))
    check(m is not None, 'vnetd serves metrics')
    r = ns.run(['python3', '-c', 'import urllib.request,sys;sys.stdout.write(urllib.request.'
                'urlopen("http://127.0.0.1:%s/metrics", timeout=20).read().decode())' % m.group(1)])
    return r.stdout


def sample(text, name, **labels):
    """The value of the sample of family name whose labels include these; None if none."""
    for line in text.splitlines():
        if not line.startswith(name + '{'):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[len(name):line.rindex('}')]))
        if all(got.get(k) == str(v) for k, v in labels.items()):
            return int(line.rsplit(' ', 1)[1])
    return None


def send_flows(ns):
    """FLOWS UDP flows (source ports 40000..) of PER_FLOW datagrams each to the guest, paced."""
    code = ('import socket, time\n'
            'for i in range(%d):\n'
            '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n'
            '    s.bind((%r, 40000 + i))\n'
            '    for _ in range(%d):\n'
            '        s.sendto(b"x" * 64, (%r, %d))\n'
            '    s.close()\n'
            '    time.sleep(0.005)\n' % (FLOWS, HOST, PER_FLOW, GUEST, DPORT))
    ns.run(['python3', '-c', code], check=True, timeout=60)


def main():
    require_root_and_tun()
    kit = uml_kit('sid')
    wd = workdir('mq_tap')
    sock = os.path.join(wd, 'p0.sock')
    blob_sha = make_blob(os.path.join(wd, 'blob'), 4)
    spec = 'socket=%s,tap=%s,mac=%s,queues=2' % (sock, TAP, MAC)
    with Netns('vnetd-e2e-mq-tap') as ns:
        with Vnetd(ns, [spec], wd, extra=['--metrics', '127.0.0.1:0']) as vd:
            q = tap_queues(ns)
            check(q is not None and q[2] & IFF_MULTI_QUEUE,
                  'vtap0 is a multi-queue tap (tun_flags 0x%x)' % (q[2] if q else 0))
            check(q[:2] == (1, 1), 'no guest yet (1 pair in use): the 2nd queue is detached, '
                  'sysfs shows 1 RX and 1 TX queue (%s)' % (q,))
            check('2 queues (IFF_MULTI_QUEUE)' in vd.log_tail(100000),
                  'vnetd says it attached 2 queues')
            check(vd.port_info()['p0']['tap_queues'] == 2 and
                  'tap:%s/mq2' % TAP in vd.ctl('ports').stdout,
                  'vnetctl ports shows the 2 tap queues (JSON and text)')
            host_addr(ns, TAP, HOST)
            with HostServers(ns, HOST, wd):
                with UmlGuest(kit, sock, log_path=os.path.join(wd, 'guest.log')) as g:
                    run_guest(g, vd, ns, blob_sha)
                # A new frontend on the same port: both tap queues serve it from the start.
                with UmlGuest(kit, sock, log_path=os.path.join(wd, 'guest-2.log')) as g:
                    guest_addr(g, GUEST)
                    rc, _ = g.run('ping -c 2 -W 5 %s' % HOST, timeout=60)
                    check(rc == 0, 'reconnect: a second guest pings the host')
                    g.run('ethtool -L eth0 combined 2', check=True)
                    check(tap_queues(ns)[:2] == (2, 2), 'reconnect: 2 tap queues attached')
                    flows_by_tap_queue(vd, ns, 'reconnect: ')
                check(wait_for(lambda: tap_queues(ns)[:2] == (1, 1)),
                      'the guest gone (device reset): the 2nd tap queue detached again')
            check(vd.alive(), 'vnetd still running')
            run_port_del_add(vd, ns, spec)
        check(tap_gone(ns), 'vnetd stopped: every queue fd closed (vtap0 is gone)')
        with Vnetd(ns, [spec], wd) as vd:
            q = tap_queues(ns)
            check(q is not None and q[:2] == (1, 1) and q[2] & IFF_MULTI_QUEUE and
                  vd.port_info()['p0']['tap_queues'] == 2,
                  'vnetd restarted: vtap0 multi-queue again, 2 fds, the 2nd detached (%s)' % (q,))
            # The interface deleted under vnetd: every queue fd reports it; the port says so once.
            ns.run(['ip', 'link', 'del', TAP])
            deadline = time.monotonic() + 20
            while 'the interface is gone' not in vd.log_tail(100000) and \
                    time.monotonic() < deadline:
                time.sleep(0.1)
            log = vd.log_tail(100000)
            check(log.count('the interface is gone') == 1 and vd.alive(),
                  'ip link del: vnetd notices once, keeps running')
            check(stats_json(vd)['tap'] and vd.port_info()['p0']['tap_queues'] == 2,
                  'the port and its counters are still there')


def flows_by_tap_queue(vd, ns, what):
    """Host -> guest: the kernel spreads flows over the tap's queues, each read by its pair."""
    a = stats_json(vd)
    check(len(a['tap']) == 2, '%svnetctl stats --json lists 2 tap queues' % what)
    send_flows(ns)
    b = stats_json(vd)
    tap_rx = [delta(a, b, 'tap', i, 'rx_packets') for i in (0, 1)]
    dev_rx = [delta(a, b, 'q', 2 * i, 'packets') for i in (0, 1)]
    print('%shost->guest: read per tap queue %s, delivered per RX queue %s' % (what, tap_rx,
                                                                               dev_rx))
    check(sum(dev_rx) >= 0.9 * FLOWS * PER_FLOW, '%sat least 90 %% of the datagrams reached the '
          'guest (%d of %d)' % (what, sum(dev_rx), FLOWS * PER_FLOW))
    check(tap_rx[0] > 0 and tap_rx[1] > 0, '%sboth tap queue fds carried host->guest flows (%s)'
          % (what, tap_rx))
    check(all(abs(tap_rx[i] - dev_rx[i]) <= 4 for i in (0, 1)),
          '%seach tap queue\'s packets went to its own RX queue (tap %s, RX %s)'
          % (what, tap_rx, dev_rx))


def run_guest(g, vd, ns, blob_sha):
    guest_addr(g, GUEST)
    rc, _ = g.run('ping -c 2 -W 5 %s' % HOST, timeout=60)
    check(rc == 0, 'guest pings the host through vnetd')
    # One pair in use: everything through tap queue 0, straight into guest buffers.
    check(vd.port_info()['p0']['active_pairs'] == 1 and tap_queues(ns)[:2] == (1, 1),
          'the guest uses 1 pair: the tap has 1 queue attached')
    a = stats_json(vd)
    send_flows(ns)
    b = stats_json(vd)
    tap_rx = [delta(a, b, 'tap', i, 'rx_packets') for i in (0, 1)]
    direct = b['queues'][0]['rx_direct'] - a['queues'][0]['rx_direct']
    # (How many arrive depends on the host's load: a slow guest lets the tap's queue overflow.)
    check(tap_rx[1] == 0 and tap_rx[0] >= FLOWS and direct >= tap_rx[0] // 2,
          '1 pair: the flows all came through tap queue 0 (%s), read straight into guest '
          'buffers (%d)' % (tap_rx, direct))
    g.run('ethtool -L eth0 combined 2', check=True)
    check(tap_queues(ns)[:2] == (2, 2), 'ethtool -L combined 2: vnetd attached the 2nd tap '
          'queue (sysfs: 2 RX, 2 TX queues)')
    check(vd.port_info()['p0']['active_pairs'] == 2, 'the guest uses both queue pairs')
    check(vd.port_info()['p0']['rss'] is None, 'no RSS offered (rss=off): the tap queue decides')
    # No XPS: the driver spreads the guest's flows over its TX queues by their hash.
    g.run('for f in /sys/class/net/eth0/queues/tx-*/xps_cpus; do echo 0 > $f; done')
    flows_by_tap_queue(vd, ns, '')

    for n in range(2):
        rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=300)
        check(rc == 0 and out.split()[0] == blob_sha, 'host->guest 4 MB byte-exact (%d)' % n)

    # Guest -> host: FETCHES TCP connections, each a flow the driver puts on one TX queue.
    g.run('dd if=/dev/urandom of=/tmp/up bs=1K count=%d 2>/dev/null' % UP_KB, check=True)
    up_sha = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
    g.run('httpd -p 8080 -h /tmp', check=True)
    a = stats_json(vd)
    ok = 0
    for _ in range(FETCHES):
        ok += ns_fetch_sha(ns, 'http://%s:8080/up' % GUEST) == up_sha
    b = stats_json(vd)
    check(ok == FETCHES, 'guest->host %d x %d KB byte-exact (%d ok)' % (FETCHES, UP_KB, ok))
    tap_tx = [delta(a, b, 'tap', i, 'tx_packets') for i in (0, 1)]
    dev_tx = [delta(a, b, 'q', 2 * i + 1, 'packets') for i in (0, 1)]
    print('guest->host: sent per TX queue %s, written per tap queue %s' % (dev_tx, tap_tx))
    check(dev_tx[0] > 0 and dev_tx[1] > 0, 'the guest sent from both TX queues (%s)' % dev_tx)
    check(all(abs(tap_tx[i] - dev_tx[i]) <= 2 for i in (0, 1)),
          'each TX queue\'s packets left on its own tap fd (TX %s, tap %s)' % (dev_tx, tap_tx))

    # The operator's views: vnetctl stats text and the metrics say the same.
    out = vd.ctl('stats').stdout
    check(re.search(r'p0 tap queues .*q0 rx \d+ tx \d+ q1 rx \d+ tx \d+', out) is not None,
          'vnetctl stats prints the tap queues')
    before = stats_json(vd)
    text = metrics(ns, vd)
    after = stats_json(vd)
    for i in (0, 1):
        for d, key in (('rx', 'rx_packets'), ('tx', 'tx_packets')):
            v = sample(text, 'vnetd_tap_queue_packets_total', port='p0', queue=i, dir=d)
            check(v is not None and before['tap'][i][key] <= v <= after['tap'][i][key],
                  'metrics: vnetd_tap_queue_packets_total{queue="%d",dir="%s"} %s, as stats'
                  % (i, d, v))
        for qi in (2 * i, 2 * i + 1):
            v = sample(text, 'vnetd_queue_packets_total', port='p0', queue=qi)
            check(v is not None and before['queues'][qi]['packets'] <= v <=
                  after['queues'][qi]['packets'],
                  'metrics: vnetd_queue_packets_total{queue="%d"} %s, as stats' % (qi, v))


def run_port_del_add(vd, ns, spec):
    vd.ctl('port-del', 'p0')
    check(tap_gone(ns), 'port-del: every queue fd closed (vtap0 is gone)')
    name = vd.ctl('port-add', spec).stdout.strip()
    q = tap_queues(ns)
    check(q is not None and q[:2] == (1, 1) and q[2] & IFF_MULTI_QUEUE and
          vd.port_info()[name]['tap_queues'] == 2,
          'port-add: %s has vtap0 multi-queue again, 2 fds, the 2nd detached (%s)' % (name, q,))
    check(len(stats_json(vd)['tap']) == 2, 'and its 2 tap queues in vnetctl stats')


if __name__ == '__main__':
    main()
