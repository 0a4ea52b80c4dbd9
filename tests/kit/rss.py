# SPDX-License-Identifier: MIT
"""Shared by the RSS e2e tests (test_uml_rss.py, test_qemu_rss.py): the reference Toeplitz hash,
the host's 64 UDP flows, the check of where they landed, and the guest-side skb->hash probe
(rxhash_probe.c, built statically here and fetched by the guest over the test's HTTP server)."""

import os
import re
import shutil
import subprocess

from .harness import check

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_C = os.path.join(HERE, 'rxhash_probe.c')
KEY = bytes.fromhex('6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa')
FLOWS, PER_FLOW, DPORT, SPORT0 = 64, 20, 9000, 40000


def toeplitz(key, data):
    """The reference Toeplitz hash (bit by bit)."""
    k = int.from_bytes(key, 'big')
    kbits = len(key) * 8
    r = 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            r ^= (k >> (kbits - 32 - i)) & 0xffffffff if kbits - 32 - i >= 0 else 0
    return r


def ip4(a):
    return bytes(int(x) for x in a.split('.'))


def flow_hash(host, guest, sport, key=KEY):
    """The UDPv4 hash of a host->guest flow: addresses and ports (VIRTIO 1.3 "Hash calculation")."""
    return toeplitz(key, ip4(host) + ip4(guest) + sport.to_bytes(2, 'big') +
                    DPORT.to_bytes(2, 'big'))


def weights(table):
    return {q: table.count(q) for q in sorted(set(table))}


def rss(vd, port='p0'):
    """The port's RSS state as vnetctl ports --json shows it."""
    return vd.port_info()[port]['rss']


def guest_rss_commands(g, vd):
    """The guest's own RSS commands reach vnetd and read back: ethtool -X equal 2, then hkey KEY
    weight 1 3 (ethtool -x shows both tables), rx-flow-hash udp4 sd / tcp4 sdfn / udp4 sdfn.
    Return: vnetd's RSS state after them (its table is the weighted one)."""
    g.run('ethtool -X eth0 equal 2', check=True)
    t = rss(vd)['indirection_table']
    check(rss(vd)['steering'] and len(t) == 128 and t == [i % 2 for i in range(128)],
          "ethtool -X equal 2: vnetd's table alternates rx0/rx1 (%s)" % weights(t))
    _, out = g.run('ethtool -x eth0', check=True)
    check('    0:      0     1     0     1' in out, 'ethtool -x reads the equal table back')

    g.run('ethtool -X eth0 hkey %s weight 1 3' % ':'.join('%02x' % b for b in KEY), check=True)
    r = rss(vd)
    t = r['indirection_table']
    check(weights(t) == {0: 32, 1: 96}, 'ethtool -X weight 1 3: 32 entries rx0, 96 rx1 (%s)'
          % weights(t))
    check(r['key'] == KEY.hex(), 'ethtool -X hkey: vnetd has the key')
    _, out = g.run('ethtool -x eth0', check=True)
    rows = [m.group(1) for m in (re.match(r'^\s*\d+:((?:\s+\d+)+)\s*$', ln)
                                 for ln in out.splitlines()) if m]
    guest_t = [int(x) for ln in rows for x in ln.split()]
    check(guest_t == t, 'ethtool -x reads the weighted table back (%d entries)' % len(guest_t))

    # The driver commits hash types only while NETIF_F_RXHASH is on (virtnet_set_hashflow()).
    g.run('ethtool -K eth0 rxhash on', check=True)
    g.run('ethtool -N eth0 rx-flow-hash udp4 sd', check=True)
    check('udpv4' not in rss(vd)['hash_types'], 'rx-flow-hash udp4 sd: UDPv4 hashing off (%s)'
          % rss(vd)['hash_types'])
    g.run('ethtool -N eth0 rx-flow-hash tcp4 sdfn', check=True)
    g.run('ethtool -N eth0 rx-flow-hash udp4 sdfn', check=True)
    r = rss(vd)
    check({'ipv4', 'tcpv4', 'udpv4'} <= set(r['hash_types']),
          'rx-flow-hash tcp4/udp4 sdfn: IPv4, TCPv4, UDPv4 on (%s)' % r['hash_types'])
    return r


def send_flows(ns, host, guest):
    """FLOWS UDP flows (source ports SPORT0..) of PER_FLOW datagrams each to the guest, a pause
    after each flow (a loaded host's tap queue overflows on one unpaced burst)."""
    code = ('import socket, time\n'
            'for i in range(%d):\n'
            '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n'
            '    s.bind((%r, %d + i))\n'
            '    for _ in range(%d):\n'
            '        s.sendto(b"x" * 64, (%r, %d))\n'
            '    s.close()\n'
            '    time.sleep(0.005)\n' % (FLOWS, host, SPORT0, PER_FLOW, guest, DPORT))
    ns.run(['python3', '-c', code], check=True, timeout=60)


def check_flows(vd, ns, host, guest, table, port='p0', want_shares=(25, 75)):
    """Send the flows; check vnetd's per-queue RX packet counters against the reference Toeplitz
    over table (within max(8, 3 %) packets of the prediction) and the shares against the
    table's weights (within 10 points). Returns the per-queue counts."""
    predicted = {0: 0, 1: 0}
    for i in range(FLOWS):
        predicted[table[flow_hash(host, guest, SPORT0 + i) % len(table)]] += PER_FLOW
    a = vd.stats()
    send_flows(ns, host, guest)
    b = vd.stats()
    got = {q: b[port][2 * q]['packets'] - a[port][2 * q]['packets'] for q in (0, 1)}
    total = sum(got.values())
    share = {q: 100.0 * got[q] / max(total, 1) for q in got}
    print('RX packets per queue: %s, predicted %s, shares %s %%' % (got, predicted, share))
    # UDP: the host's tap may still drop a few before vnetd reads them (not vnetd's choice of
    # queue); compare with the prediction scaled to what arrived.
    sent = FLOWS * PER_FLOW
    check(total >= 0.9 * sent, 'at least 90 %% of the datagrams reached an RX queue (%d of %d)'
          % (total, sent))
    scaled = {q: predicted[q] * total / sent for q in predicted}
    check(all(abs(got[q] - scaled[q]) <= max(8, 0.03 * total) for q in got),
          'per-queue packets as the reference Toeplitz predicts (%s vs %s)' % (got, predicted))
    check(all(abs(share[q] - want_shares[q]) <= 10 for q in got),
          'shares within 10 points of the weights %d/%d (%.1f/%.1f)'
          % (want_shares[0], want_shares[1], share[0], share[1]))
    return got


def build_probe(outdir):
    """rxhash_probe.c, statically linked, into outdir; its path, or (None, why) without a
    compiler or static libc."""
    cc = os.environ.get('CC', 'cc')
    if shutil.which(cc) is None:
        return None, 'no C compiler (%s)' % cc
    exe = os.path.join(outdir, 'rxhash_probe')
    r = subprocess.run([cc, '-O2', '-Wall', '-static', '-o', exe, PROBE_C], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, '%s -static %s failed: %s' % (cc, PROBE_C, r.stderr[-300:])
    return exe, None


def guest_hashes(g, vd, ns, host, guest, probe_url):
    """Fetch the probe into the guest and run it while the flows are sent once more:
    {source port: skb->hash as the guest's driver set it}."""
    g.run('wget -q -O /tmp/rxhash_probe %s && chmod +x /tmp/rxhash_probe' % probe_url,
          check=True, timeout=120)
    g.run('(/tmp/rxhash_probe eth0 %d %d 40 >/tmp/h.log 2>&1 &); for i in $(seq 40); do '
          'grep -q ready /tmp/h.log && exit 0; sleep 0.5; done; exit 1' % (DPORT, FLOWS),
          check=True, timeout=60)
    send_flows(ns, host, guest)
    g.run('for i in $(seq 60); do [ $(grep -c " " /tmp/h.log) -ge %d ] && exit 0; sleep 0.5; '
          'done; exit 0' % FLOWS, timeout=60)
    _, out = g.run('cat /tmp/h.log', check=True)
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit():
            res[int(f[0])] = int(f[1], 16)
    return res


def check_guest_hashes(got, host, guest):
    """The hashes the guest's driver put in skb->hash equal the reference Toeplitz of each flow."""
    want = {SPORT0 + i: flow_hash(host, guest, SPORT0 + i) for i in range(FLOWS)}
    check(len(got) >= FLOWS * 0.9, 'the guest saw a hash for %d of %d flows' % (len(got), FLOWS))
    bad = {p: (h, want.get(p)) for p, h in got.items() if want.get(p) != h}
    check(not bad, 'skb->hash in the guest (HASH_REPORT hash_value) equals the reference Toeplitz '
          'for all %d flows seen%s' % (len(got), '' if not bad else ': mismatches %s'
                                        % dict(list(bad.items())[:4])))
