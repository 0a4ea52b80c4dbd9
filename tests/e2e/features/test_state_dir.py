# SPDX-License-Identifier: MIT
"""--state-dir: a full-device frontend's own coalescing (set over the control queue, as a UML
guest's ethtool -C is) comes back after vnetd is SIGKILLed and restarted and the frontend sets
its rings up again without resending it; host coalescing likewise; so do the frontend's RX
mode (VIRTIO_NET_CTRL_RX), MAC filter table (CTRL_MAC_TABLE_SET) and MAC (CTRL_MAC_ADDR_SET),
shown by vnetctl ports; a state file that is garbage, too big or for another socket is ignored
(logged) and vnetd starts anyway, as is one whose packed ring positions (version 4) name a
slot outside the ring or have wrap counters that disagree. Python frontends
(tests/kit/vhost_user_client.py), no guest kernel."""

import os
import signal
import struct

from tests.kit.harness import NoNs, Vnetd, check, workdir
from tests.kit.vhost_user_client import (CTRL_MAC, CTRL_RX, DEFAULT_FEATURES, VIRTIO_NET_F_CTRL_RX,
                                         VirtioNetFrontend)

OK = 0
VIRTIO_NET_F_CTRL_MAC_ADDR = 23
RX_FEATURES = DEFAULT_FEATURES | (1 << VIRTIO_NET_F_CTRL_RX) | (1 << VIRTIO_NET_F_CTRL_MAC_ADDR)
RX_PROMISC, RX_ALLMULTI, RX_NOBCAST = 0, 1, 5
MAC_TABLE_SET, MAC_ADDR_SET = 0, 1
GUEST_MAC = '52:54:00:ab:cd:ef'
UC_ENTRY = '02:00:00:00:00:42'
MC_ENTRY = '01:00:5e:00:00:fb'


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(':'))


def set_rx_filter(f):
    """What a driver sends when its interface is configured: RX mode, filter table, MAC."""
    table = (struct.pack('<I', 1) + mac_bytes(UC_ENTRY) + struct.pack('<I', 1) +
             mac_bytes(MC_ENTRY))
    return (f.ctrl(CTRL_RX, RX_PROMISC, b'\x00') == OK and
            f.ctrl(CTRL_RX, RX_ALLMULTI, b'\x01') == OK and
            f.ctrl(CTRL_RX, RX_NOBCAST, b'\x01') == OK and
            f.ctrl(CTRL_MAC, MAC_TABLE_SET, table) == OK and
            f.ctrl(CTRL_MAC, MAC_ADDR_SET, mac_bytes(GUEST_MAC)) == OK)


def rx_filter_is_back(info):
    t = info['mac_table']
    return (info['rx_mode'] == ['allmulti', 'nobcast'] and info['mac'] == GUEST_MAC and
            t['unicast'] == [UC_ENTRY] and t['multicast'] == [MC_ENTRY] and
            not t['unicast_overflow'] and not t['multicast_overflow'])


def state_file_name(sock):
    """The port's file in the state directory: FNV-1a 64 of its socket (port_state.c)."""
    h = 1469598103934665603
    for b in sock.encode():
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return 'port-%016x.json' % h


def start(wd, name, ports, state):
    vd = Vnetd(NoNs(), ports, os.path.join(wd, name), extra=['--state-dir', state])
    os.mkdir(vd.workdir)
    return vd.__enter__()


def kill9(vd):
    os.killpg(vd.proc.pid, signal.SIGKILL)
    vd.proc.wait()


def main():
    wd = workdir('state-dir')
    state = os.path.join(wd, 'state')
    os.mkdir(state)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
    ports = ['socket=%s,switch' % s for s in socks]

    vd = start(wd, 'v1', ports, state)
    try:
        f = VirtioNetFrontend(socks[0], features=RX_FEATURES).setup()
        check(f.coal_rx_set(24, 300) == OK and f.coal_tx_set(8, 100) == OK,
              'the frontend sets its coalescing over the control queue')
        check(set_rx_filter(f), 'and its RX mode, MAC filter table and MAC')
        info = vd.port_info()['p0']
        check(rx_filter_is_back(info), 'vnetctl ports shows them (%s, %s, %s)'
              % (info['rx_mode'], info['mac'], info['mac_table']))
        vd.ctl('coalesce', 'p1', 'rx-usecs', '64', 'rx-frames', '16')
        g = VirtioNetFrontend(socks[1]).setup()  # p1's queues run: the host value applies
        vd.ctl('coalesce', 'p1', 'rx-usecs', '64', 'rx-frames', '16')
        st = vd.stats()
        check(st['p0'][0]['set_by'] == 'guest' and st['p1'][0]['set_by'] == 'host',
              'p0 coalescing set by the guest, p1 by the host')
        files = sorted(os.listdir(state))
        check(len(files) == 2 and all(n.endswith('.json') for n in files),
              'one state file per port (%s)' % ', '.join(files))
        kill9(vd)
        f.close()
        g.close()

        vd = start(wd, 'v2', ports, state)
        info = vd.port_info()['p0']
        check(info['rx_mode'] == ['promisc'] and info['mac'] != GUEST_MAC,
              'before the frontend is back p0 has the reset filter (promisc, its own MAC)')
        f = VirtioNetFrontend(socks[0], features=RX_FEATURES).setup()  # rings, no command
        g = VirtioNetFrontend(socks[1]).setup()
        st = vd.stats()
        q = st['p0']
        check(q[0]['max_packets'] == 24 and q[0]['max_usecs'] == 300 and
              q[0]['set_by'] == 'guest' and q[1]['max_packets'] == 8 and
              q[1]['max_usecs'] == 100 and q[1]['set_by'] == 'guest',
              'after SIGKILL and restart p0 has the guest\'s values back (rx %s/%s, tx %s/%s)'
              % (q[0]['max_packets'], q[0]['max_usecs'], q[1]['max_packets'],
                 q[1]['max_usecs']))
        q = st['p1']
        check(q[0]['max_packets'] == 16 and q[0]['max_usecs'] == 64 and q[0]['set_by'] == 'host',
              'and p1 the host\'s')
        info = vd.port_info()
        check(rx_filter_is_back(info['p0']),
              'p0\'s RX mode, MAC filter table and MAC are back too (%s, %s, %s)'
              % (info['p0']['rx_mode'], info['p0']['mac'], info['p0']['mac_table']))
        check(info['p1']['rx_mode'] == ['promisc'] and info['p1']['mac_table']['unicast'] == [],
              'p1, whose frontend set none, keeps the reset filter')
        f.close()
        g.close()
        vd.stop()

        # Hostile state files: vnetd starts, says why, and the port starts from reset.
        paths = sorted(os.path.join(state, n) for n in os.listdir(state))
        with open(paths[0], 'w') as fh:
            fh.write('{"version":1,"socket":"/somewhere/else","queues":[[1,1,"host"]]}')
        with open(paths[1], 'wb') as fh:
            fh.write(b'{' * 200000)
        vd = start(wd, 'v3', ports, state)
        log = vd.log_tail(20000)
        check(log.count('state file ignored') == 2, 'both bad state files are ignored (logged)')
        f = VirtioNetFrontend(socks[0]).setup()
        check(vd.stats()['p0'][0]['set_by'] == 'none', 'and the port starts from reset values')
        f.close()
        check(vd.alive(), 'vnetd still running')
        vd.stop()

        # Hostile packed ring positions (version 4): a slot outside the ring, wrap counters
        # that disagree. Each file is ignored whole, with the reason; the ports start from reset.
        rx = ('"rx":{"mode":[],"mac":null,"unicast":[],"multicast":[],"unicast_overflow":false,'
              '"multicast_overflow":false}')
        bad = ('{"size":256,"avail":300,"used":300,"in_order":false,"from":2147516416,"desc":4096}',
               '{"size":256,"avail":32773,"used":32774,"in_order":false,"from":2147516416,"desc":4096}')
        for sock, entry in zip(socks, bad):
            with open(os.path.join(state, state_file_name(sock)), 'w') as fh:
                fh.write('{"version":4,"socket":"%s","queues":[[9,9,"host"]],%s,"rss":null,"packed":[%s]}'
                         % (sock, rx, entry))
        vd = start(wd, 'v4', ports, state)
        log = vd.log_tail(20000)
        check(log.count('state file ignored') == 2 and 'outside the ring' in log and
              'wrap counters disagree' in log,
              'packed positions out of range or with disagreeing wrap counters: both files '
              'ignored, the reason logged')
        f = VirtioNetFrontend(socks[0]).setup()
        check(vd.stats()['p0'][0]['set_by'] == 'none', 'and the port starts from reset values')
        f.close()
        check(vd.alive(), 'vnetd still running')
    finally:
        vd.stop()


if __name__ == '__main__':
    main()
