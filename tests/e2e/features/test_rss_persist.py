# SPDX-License-Identifier: MIT
"""RSS settings survive a migration and a vnetd restart without the driver resending them.
Python frontends (tests/kit/vhost_user_client.py) on queues=2,rss=on switch ports negotiate
VIRTIO_NET_F_RSS and HASH_REPORT and send an RSS_CONFIG (hash types, 40-byte key, a 1:3
table of 128 entries, unclassified queue 1). DEVICE_STATE: saved on p0, loaded on p1 (a
fresh frontend that never sent a command): vnetctl ports shows p1 with p0's table, key, hash
types and unclassified queue; a state whose table names queue 2 of 2 is refused at
CHECK_DEVICE_STATE and changes nothing. --state-dir: once the state file has the settings,
vnetd is SIGKILLed and restarted, the
frontend sets its rings up again without a command, and vnetctl ports shows the same RSS
state as before. No guest, no root."""

import os
import signal
import struct
import time

from tests.kit import vhost_user_client as vu
from tests.kit.harness import NoNs, Vnetd, check, workdir

VIRTIO_NET_F_MQ, VIRTIO_NET_F_RSS, VIRTIO_NET_F_HASH_REPORT = 22, 60, 57
FEAT = (vu.DEFAULT_FEATURES | (1 << VIRTIO_NET_F_MQ) | (1 << VIRTIO_NET_F_RSS) |
        (1 << VIRTIO_NET_F_HASH_REPORT))
PROTO = (1 << vu.PROTOCOL_F_REPLY_ACK) | (1 << vu.PROTOCOL_F_DEVICE_STATE)
CTRL_MQ, MQ_RSS_CONFIG = 4, 1
TYPES = 0x3f                      # IPv4, TCPv4, UDPv4, IPv6, TCPv6, UDPv6
KEY = bytes(range(0x60, 0x60 + 40))
TABLE = [0 if i % 4 == 0 else 1 for i in range(128)]
QUEUES = (0, 1, 2, 3, 4)          # rx0 tx0 rx1 tx1 ctrl


def frontend(path, rings=True):
    f = vu.VirtioNetFrontend(path, features=FEAT, protocol=PROTO)
    f.ctrl_q = 4
    if rings:
        f.setup(QUEUES)
    else:
        f.negotiate()
    return f


def rss_config(table=TABLE, key=KEY, types=TYPES, unclassified=1, max_tx_vq=2):
    """struct virtio_net_rss_config."""
    return (struct.pack('<IHH', types, len(table) - 1, unclassified) +
            struct.pack('<%dH' % len(table), *table) + struct.pack('<HB', max_tx_vq, len(key)) + key)


def rss_of(vd, port):
    r = vd.port_info()[port]['rss']
    return None if r is None else {k: r[k] for k in ('steering', 'reporting', 'hash_types', 'key',
                                                     'indirection_table', 'unclassified_queue')}


def state_fd(f, direction, fd):
    return struct.unpack('=Q', f.vu.request(vu.SET_DEVICE_STATE_FD,
                                            struct.pack('=II', direction, 0), [fd]))[0]


def check_state(f):
    return struct.unpack('=Q', f.vu.request(vu.CHECK_DEVICE_STATE))[0]


def save_state(f):
    r, w = os.pipe()
    state_fd(f, 0, w)
    os.close(w)
    data = b''
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    return data, check_state(f)


def load_state(f, data):
    r, w = os.pipe()
    state_fd(f, 1, r)
    os.close(r)
    os.write(w, data)
    os.close(w)
    return check_state(f)


def state_file_name(socket):
    """port_state_file_name(): port-FNV1A64(socket).json."""
    h = 1469598103934665603
    for b in socket.encode():
        h = ((h ^ b) * 1099511628211) & (2 ** 64 - 1)
    return 'port-%016x.json' % h


def wait_state_file(path, text, tries=100):
    """Until the state file contains text (the timer writes within about a second of a
    change); polled, not timed."""
    for _ in range(tries):
        if os.path.exists(path):
            with open(path) as fh:
                if text in fh.read():
                    return True
        time.sleep(0.1)
    return False


def start(wd, name, ports, state):
    vd = Vnetd(NoNs(), ports, os.path.join(wd, name), extra=['--state-dir', state])
    os.mkdir(vd.workdir)
    return vd.__enter__()


def migrate(vd):
    """p0's RSS settings to p1 through DEVICE_STATE."""
    f0 = frontend(vd.socks[0])
    check(f0.ctrl(CTRL_MQ, MQ_RSS_CONFIG, rss_config()) == vu.VIRTIO_NET_OK,
          'p0: the frontend sends RSS_CONFIG (1:3 table, 40-byte key, types 0x%x)' % TYPES)
    before = rss_of(vd, 'p0')
    check(before['steering'] and before['key'] == KEY.hex() and
          before['indirection_table'] == TABLE, 'vnetctl ports shows p0 steering by the table')
    bad_cfg = rss_config(table=[2] * 8)
    check(f0.ctrl(CTRL_MQ, MQ_RSS_CONFIG, bad_cfg) == vu.VIRTIO_NET_ERR and
          rss_of(vd, 'p0') == before, 'an RSS_CONFIG naming queue 2 of 2 gets ERR, changes nothing')
    for q in QUEUES:
        f0.vu.get_vring_base(q)
    data, res = save_state(f0)
    check(data[:4] == b'VNDS' and data[4] == 2 and res == 0,
          'DEVICE_STATE saved: version 2, %d bytes' % len(data))
    f0.close()

    f1 = frontend(vd.socks[1], rings=False)
    check(rss_of(vd, 'p1')['indirection_table'] == [], 'p1 has no RSS settings yet')
    bad = bytearray(data)
    bad[-2] = 2                                     # the table's last entry: queue 2 of 2
    check(load_state(f1, bytes(bad)) == 1, 'a state whose table names queue 2 is refused')
    bad = bytearray(data)
    struct.pack_into('<H', bad, len(data) - 12 - 40 - 256 + 5, 100)   # table length 100
    check(load_state(f1, bytes(bad)) == 1, 'a table length that is not a power of two too')
    check(rss_of(vd, 'p1')['indirection_table'] == [], 'nothing of them was applied')
    check(load_state(f1, data) == 0, 'the saved state loads on p1')
    f1.set_mem()
    for q in QUEUES:
        f1.setup_ring(f1.make_ring(q))
    after = rss_of(vd, 'p1')
    check(after == before, "p1 steers with p0's table, key, hash types and unclassified queue, "
          'without a command (%s)' % {k: after[k] for k in ('steering', 'hash_types')})
    check(vd.port_info()['p1']['active_pairs'] == 2, 'and 2 active queue pairs')
    f1.close()
    return before


def main():
    wd = workdir('rss-persist')
    state = os.path.join(wd, 'state')
    os.mkdir(state)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
    ports = ['socket=%s,switch,queues=2,rss=on' % s for s in socks]

    vd = start(wd, 'v1', ports, state)
    vd.socks = socks
    try:
        before = migrate(vd)
        f = frontend(socks[0])
        check(f.ctrl(CTRL_MQ, MQ_RSS_CONFIG, rss_config()) == vu.VIRTIO_NET_OK,
              'p0 (a new frontend) sends the RSS_CONFIG again')
        check(rss_of(vd, 'p0') == before, 'p0 steers by it')
        check(wait_state_file(os.path.join(state, state_file_name(socks[0])), '"steering":true'),
              'the state file has the RSS settings (written by the state timer)')
        os.killpg(vd.proc.pid, signal.SIGKILL)      # no clean stop: only what was written
        vd.proc.wait()
        f.close()
        vd = start(wd, 'v2', ports, state)
        check(not rss_of(vd, 'p0') or rss_of(vd, 'p0')['indirection_table'] == [],
              'restarted, before the frontend is back: no RSS settings')
        f = frontend(socks[0])                      # rings only, no command
        after = rss_of(vd, 'p0')
        check(after == before, 'after the restart p0 has its RSS state back from --state-dir '
              '(table, key, hash types, unclassified queue; steering %s)' % after['steering'])
        check(vd.port_info()['p0']['active_pairs'] == 2, 'and 2 active queue pairs')
        f.close()
        vd.stop()

        # A state file with a hostile "rss": logged and ignored, vnetd starts.
        path = os.path.join(state, state_file_name(socks[0]))
        text = open(path).read().replace('"max_tx_vq":2', '"max_tx_vq":9')
        with open(path, 'w') as fh:
            fh.write(text)
        vd = start(wd, 'v3', ports, state)
        check('state file ignored' in vd.log_tail(20000) and 'max_tx_vq' in vd.log_tail(20000),
              'a state file with max_tx_vq 9 of 2 pairs is ignored (logged)')
        f = frontend(socks[0])
        check(rss_of(vd, 'p0')['indirection_table'] == [], 'and p0 starts without RSS settings')
        f.close()
        check(vd.alive(), 'vnetd still running')
    finally:
        vd.stop()


if __name__ == '__main__':
    main()
