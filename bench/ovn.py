# SPDX-License-Identifier: MIT
"""A guest pair across two hosts through OVN beside the same pair through a Linux bridge +
VXLAN (docs/ovn.md, docs/multihost.md), in one run: two namespaces as hosts; one UML guest per
host with three vnetd tap ports (three NICs):

  ovn         tap in br-int, OVN logical switch, Geneve on OVS's userspace datapath over the
              underlay veth (offloads=off, mtu=1442: OVS 3.1 drops TSO frames it would tunnel)
  vxlan       tap in a Linux bridge with a kernel VXLAN device over a second veth (offloads on,
              mtu=1450: docs/multihost.md's setup)
  vxlan-nooff the same bridge, offloads=off (what the OVN path has to do without)

iperf3 TCP A -> B and B -> A for --seconds on each path, the paths interleaved in each of --reps
rounds; every run and the medians to results/ovn-latest.json, with date, machine and load."""

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import time

from bench.lib import common as C
from tests.kit import ovn
from tests.kit.harness import Netns, UmlGuest, Vnetd, uml_start

UL = {'A': '10.99.0.1', 'B': '10.99.0.2'}       # Geneve underlay (OVS br-phy)
VX = {'A': '10.97.0.1', 'B': '10.97.0.2'}       # VXLAN underlay (and the SB database)
PATHS = {  # name: (MTU, offloads, guest address prefix)
    'ovn': (1442, 'off', '10.100.0.'),
    'vxlan': (1450, 'on', '10.98.0.'),
    'vxlan-nooff': (1450, 'off', '10.96.0.'),
}
HOSTNUM = {'A': 11, 'B': 12}


def mac(host, path):
    return '52:54:00:%02x:%02x:%02x' % (0xb0 + list(PATHS).index(path), 0, HOSTNUM[host])


def setup_host(ns, h, other):
    ns.run('sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1')
    ns.run('ip addr add %s/24 dev vx0u && ip link set vx0u up' % VX[h])


def bridges(ns, h, other):
    """Two Linux bridges, each with its own VXLAN device (VNI 42, 43) towards the other host."""
    for i, (br, vni, tap) in enumerate((('br0', 42, 'vxt0'), ('br1', 43, 'vxt1'))):
        ns.run('ip link add vx%d type vxlan id %d local %s remote %s dstport %d dev vx0u'
               % (i, vni, VX[h], VX[other], 4789 + i))
        ns.run('ip link add %s type bridge && ip link set %s up && ip link set vx%d master %s && '
               'ip link set vx%d up && ip link set %s master %s && ip link set %s up'
               % (br, br, i, br, i, tap, br, tap))


def guest_nics(g):
    """In guest g: each path's interface (by MAC) up with its address."""
    _, out = g.run('for i in /sys/class/net/eth*; do echo ${i##*/} $(cat $i/address); done')
    return dict(l.split()[::-1] for l in out.strip().splitlines())


def iperf(client, server_ip, seconds):
    rc, out = client.run('iperf3 -c %s -t %d -J' % (server_ip, seconds), timeout=seconds + 60)
    try:
        res = json.loads(out[out.index('{'):])
        return res['end']['sum_received']['bits_per_second'] / 1e6
    except (ValueError, KeyError):
        C.log('iperf3 failed: ' + out[-300:])
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=5)
    ap.add_argument('--out', default=os.path.join(C.RESULTS, 'ovn-latest.json'))
    args = ap.parse_args()
    why = ovn.missing()
    if why:
        C.log('SKIP: OVN/OVS not installed: ' + why)
        raise SystemExit(C.SKIP)
    uml, wd = uml_start('bench-ovn')
    now = datetime.datetime.now()
    load0 = os.getloadavg()[0]
    busy0 = C.machine_busy()
    rows = {p: {'A->B': [], 'B->A': []} for p in PATHS}
    try:
        with Netns('vnetd-bench-ovnA') as na, Netns('vnetd-bench-ovnB') as nb:
            for name in ('ul0', 'vx0u'):
                subprocess.run(['ip', 'link', 'add', name, 'netns', na.name, 'type', 'veth',
                                'peer', 'name', name, 'netns', nb.name], check=True)
            setup_host(na, 'A', 'B')
            setup_host(nb, 'B', 'A')
            places = []
            with contextlib.ExitStack() as stack:
                stack.callback(lambda: [p.stop() for p in reversed(places)])
                central = ovn.OvnCentral(na, os.path.join(wd, 'central'), sb_listen=VX['A'])
                places.append(central)
                central.start()
                sb = 'tcp:%s:6642' % VX['A']
                chassis = {}
                for ns, h in ((na, 'A'), (nb, 'B')):
                    chassis[h] = ovn.Chassis(ns, os.path.join(wd, h), 'host' + h, UL[h], 'ul0', sb)
                    places.append(chassis[h])
                    chassis[h].start()
                central.nbctl('ls-add', 'ls0')
                for h in 'AB':
                    lp = 'vm' + h
                    central.nbctl('lsp-add', 'ls0', lp)
                    central.nbctl('lsp-set-addresses', lp, '%s %s%d' % (
                        mac(h, 'ovn'), PATHS['ovn'][2], HOSTNUM[h]))
                vds, guests = {}, {}
                for ns, h, other in ((na, 'A', 'B'), (nb, 'B', 'A')):
                    d = os.path.join(wd, h)
                    specs = ['socket=%s/%s.sock,tap=%s,mac=%s,mtu=%d,offloads=%s'
                             % (d, p, tap, mac(h, p), PATHS[p][0], PATHS[p][1])
                             for p, tap in zip(PATHS, ('otap0', 'vxt0', 'vxt1'))]
                    vds[h] = stack.enter_context(Vnetd(ns, specs, d))
                    chassis[h].plug('otap0', 'vm' + h, mac(h, 'ovn'))
                    bridges(ns, h, other)
                central.sync()
                for h in 'AB':
                    d = os.path.join(wd, h)
                    extra = ['virtio_uml.device=%s/%s.sock:1' % (d, p) for p in list(PATHS)[1:]]
                    g = UmlGuest(uml, '%s/ovn.sock' % d, extra_args=extra,
                                 log_path=os.path.join(wd, 'uml%s.log' % h))
                    guests[h] = stack.enter_context(g)
                    nics = guest_nics(g)
                    for p in PATHS:
                        g.run('ip link set %s up && ip addr add %s%d/24 dev %s'
                              % (nics[mac(h, p)], PATHS[p][2], HOSTNUM[h], nics[mac(h, p)]),
                              check=True)
                    g.run('iperf3 -s -D --logfile /tmp/iperf3.log', check=True)
                for p in PATHS:
                    rc, _ = guests['A'].run('ping -c 2 -W 5 %s%d' % (PATHS[p][2], HOSTNUM['B']),
                                            timeout=60)
                    if rc != 0:
                        raise C.BenchError('path %s: A does not reach B' % p)
                for rep in range(args.reps):
                    for p in PATHS:
                        for src, dst, key in (('A', 'B', 'A->B'), ('B', 'A', 'B->A')):
                            v = iperf(guests[src], '%s%d' % (PATHS[p][2], HOSTNUM[dst]),
                                      args.seconds)
                            rows[p][key].append(v)
                            C.log('rep %d %-12s %s %s Mbit/s' % (rep + 1, p, key,
                                                                 '%.0f' % v if v else 'failed'))
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    busy = C.busy_pct(busy0, C.machine_busy())
    summary = {p: {k: statistics.median([x for x in v if x]) if any(v) else None
                   for k, v in r.items()} for p, r in rows.items()}
    meta = {'date': now.isoformat(timespec='seconds'),
            'vnetd': C.git(C.TOP, 'describe', '--always', '--dirty'),
            'machine': C.cpu_model(), 'cpus': os.cpu_count(), 'load_start': load0,
            'machine_busy_pct': round(busy, 1),
            'ovs': subprocess.run(['ovs-vsctl', '--version'], capture_output=True,
                                  text=True).stdout.split('\n')[0],
            'ovn': subprocess.run(['ovn-nbctl', '--version'], capture_output=True,
                                  text=True).stdout.split('\n')[0],
            'method': 'iperf3 TCP, %d s per run, %d interleaved reps, UML guest (one per host '
                      'namespace) to UML guest; medians in Mbit/s' % (args.seconds, args.reps),
            'paths': {p: {'mtu': v[0], 'offloads': v[1]} for p, v in PATHS.items()}}
    out = {'meta': meta, 'runs': rows, 'median_mbit_s': summary}
    with open(args.out, 'w') as f:
        json.dump(out, f, indent=1)
        f.write('\n')
    C.log('| path | MTU | offloads | A->B Mbit/s | B->A Mbit/s |')
    for p, (m, off, _) in PATHS.items():
        C.log('| %s | %d | %s | %s | %s |' % (p, m, off, *('%.0f' % summary[p][k] if summary[p][k]
                                                            else '-' for k in ('A->B', 'B->A'))))
    C.log('wrote ' + args.out)


if __name__ == '__main__':
    main()
