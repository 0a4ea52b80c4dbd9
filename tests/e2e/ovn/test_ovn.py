# SPDX-License-Identifier: MIT
"""vnetd guests as ordinary OVN ports (docs/ovn.md): two hosts in network namespaces, joined by
an underlay veth (Geneve) and a management veth (the SB database, the migration stream); an OVN
central on host A; on each host its own ovsdb-server, ovs-vswitchd (userspace datapath) and
ovn-controller; vnetd's tap ports plugged into br-int by contrib/ovn/vnetd-ovn-plug.

  1. the chassis register and bind the logical ports (ovn-sbctl);
  2. a UML guest per host gets its address and MTU from OVN's native DHCP with its own udhcpc,
     pings the other with the largest DF packet the Geneve MTU allows, transfers byte-exact;
  3. a port group's drop ACL blocks one TCP port and not another; lsp-set-port-security drops a
     spoofed source address that passed before;
  4. coalescing stays vnetd's: the UML guest's ethtool -C shows in vnetctl stats, vnetctl
     coalesce sets the QEMU guest's (virtio-net-pci keeps the control queue in QEMU);
  5. the QEMU guest migrates from host B to host A with requested-chassis=hostB,hostA and
     activation-strategy=rarp: A's port passes nothing before vnetd's RARP and traffic after, a
     download across the migration is byte-exact, the downtime is reported.

Everything (namespaces, daemons, work directory) is removed at the end, also on failure
(VNETD_KEEP=1 keeps the work directory with every daemon's log)."""

import os
import shutil
import subprocess
import sys
import time

from tests.kit import dhcp, ovn
from tests.kit.harness import Netns, UmlGuest, Vnetd, check, require_program, skip, uml_start
from tests.kit.guest import QemuGuest
from tests.kit.migration import IncomingQemu, Qmp, migrate, migration_qemu, qemu_args

MTU = 1442                        # 1500 on the underlay minus Geneve with OVN's option (58)
UL = {'A': '10.99.0.1', 'B': '10.99.0.2'}       # underlay: Geneve (br-phy)
MG = {'A': '10.97.0.1', 'B': '10.97.0.2'}       # management: SB database, migration
NET, GW = '10.100.0.0/24', '10.100.0.1'
SERVER_MAC = 'c0:ff:ee:00:00:01'
# logical port: (MAC, IP)
VM = {'vm1': ('52:54:00:0a:00:01', '10.100.0.11'),   # UML on A
      'vm3': ('52:54:00:0a:00:03', '10.100.0.13'),   # UML on B
      'vm2': ('52:54:00:0a:00:02', '10.100.0.12'),   # QEMU on B, migrates to A
      'probeA': ('52:54:00:0a:00:05', '10.100.0.5')}  # host A's own port (OVS internal)
SIZE_MB = 8
MIG_PORT = 4444
QEMU_OPTS = ',vectors=0,host_mtu=%d' % MTU   # see test_multihost.py


def vport(sock, tap, lport):
    """vnetd port spec: the guest's MAC, the Geneve MTU, offloads off (docs/ovn.md: OVS 3.1's
    userspace datapath drops TSO frames it would tunnel)."""
    return 'socket=%s,tap=%s,mac=%s,mtu=%d,offloads=off' % (sock, tap, VM[lport][0], MTU)


def underlay(na, nb):
    for name in ('ul0', 'mg0'):
        subprocess.run(['ip', 'link', 'add', name, 'netns', na.name, 'type', 'veth', 'peer',
                        'name', name, 'netns', nb.name], check=True)
    for ns, h in ((na, 'A'), (nb, 'B')):
        ns.run('ip addr add %s/24 dev mg0 && ip link set mg0 up' % MG[h])


def logical_network(c):
    """The logical switch, its ports with addresses, DHCP options (with the MTU)."""
    c.nbctl('ls-add', 'ls0')
    for lp, (mac, ip) in VM.items():
        c.nbctl('lsp-add', 'ls0', lp)
        c.nbctl('lsp-set-addresses', lp, '%s %s' % (mac, ip))
    c.nbctl('lsp-set-options', 'vm2', 'requested-chassis=hostB')
    c.nbctl('dhcp-options-create', NET)
    uuid = c.nbctl('--bare', '--columns=_uuid', 'find', 'DHCP_Options', 'cidr="%s"' % NET)
    c.nbctl('dhcp-options-set-options', uuid, 'lease_time=3600', 'router=' + GW,
            'server_id=' + GW, 'server_mac=' + SERVER_MAC, 'mtu=%d' % MTU)
    for lp in ('vm1', 'vm2', 'vm3'):
        c.nbctl('lsp-set-dhcpv4-options', lp, uuid)
    return uuid


def guest_dhcp(g, lp, what):
    dhcp.install(g)
    ok, got, out = dhcp.lease(g)
    check(ok and got['ip'] == VM[lp][1] + '/24' and got['mtu'] == MTU,
          '%s: udhcpc got %s, MTU %d from OVN\'s DHCP (%s)'
          % (what, got['ip'] or 'nothing', got['mtu'], ' '.join(out.split()[-6:])))


def transfer(src, dst, src_ip, name, port=8080):
    """dst downloads SIZE_MB random bytes from src's busybox httpd; sha256 compared."""
    src.run('dd if=/dev/urandom of=/tmp/%s bs=1M count=%d 2>/dev/null' % (name, SIZE_MB),
            check=True)
    want = src.run('sha256sum /tmp/%s' % name, check=True)[1].split()[0]
    t0 = time.monotonic()
    rc, out = dst.run('wget -q -T 20 -O - http://%s:%d/%s | sha256sum' % (src_ip, port, name),
                      timeout=300)
    return rc == 0 and out.split()[:1] == [want], time.monotonic() - t0


def stage_bindings(c, ha, hb):
    for h in (ha, hb):
        check(h.system_id in c.sbctl('--bare', '--columns=name', 'list', 'Chassis').split(),
              'chassis %s registered in the SB (Geneve %s)' % (h.system_id, h.encap_ip))
    c.sync()
    for lp, want in (('vm1', 'hostA'), ('vm3', 'hostB'), ('vm2', 'hostB'), ('probeA', 'hostA')):
        b = c.binding(lp)
        check(b['chassis'] == want, 'logical port %s bound on %s (ovn-sbctl: %s)'
              % (lp, want, b['chassis'] or 'unbound'))
    b = c.binding('vm2')
    check(b['chassis'] == 'hostB' and not b['additional'],
          'vm2, plugged on both hosts, is bound only on its requested chassis hostB')


def stage_guests(ua, ub, na):
    guest_dhcp(ua, 'vm1', 'UML guest on A')
    guest_dhcp(ub, 'vm3', 'UML guest on B')
    ipa, ipb = VM['vm1'][1], VM['vm3'][1]
    rc, out = ua.run('ping -c 3 -W 10 %s' % ipb, timeout=60)
    check(rc == 0, 'UML on A pings UML on B over Geneve')
    size = MTU - 28
    for g, ip, what in ((ua, ipb, 'A -> B'), (ub, ipa, 'B -> A')):
        rc, _ = g.run('ping -s %d -c 2 -W 10 %s' % (size, ip), timeout=60)
        check(rc == 0, 'guest %s: %d-byte IP packet (DF set) crosses (%d on the underlay)'
              % (what, MTU, MTU + 58))
    r = na.run('ping -M do -s %d -c 2 -W 10 %s' % (size, VM['vm3'][1]), check=False)
    check(r.returncode == 0, 'host A\'s OVN port -> guest on B: %d bytes with DF set' % MTU)
    r = na.run('ping -M do -s %d -c 1 -W 2 %s' % (size + 1, VM['vm3'][1]), check=False)
    why = ' '.join((r.stdout + r.stderr).strip().splitlines()[-1:])
    check(r.returncode != 0, 'one byte more is refused with DF set (%s)' % why)
    for g in (ua, ub):
        g.run('httpd -p 8080 -h /tmp && httpd -p 9001 -h /tmp', check=True)
    ok, dt = transfer(ua, ub, ipa, 'fromA')
    check(ok, '%d MB A -> B byte-exact over Geneve (sha256, %.1f s)' % (SIZE_MB, dt))
    ok, dt = transfer(ub, ua, ipb, 'fromB')
    check(ok, '%d MB B -> A byte-exact over Geneve (sha256, %.1f s)' % (SIZE_MB, dt))


def host_probe(h, ns):
    """Host A's own port on the logical switch: an OVS internal interface with iface-id."""
    mac, ip = VM['probeA']
    h.vsctl('add-port', 'br-int', 'probeA', '--', 'set', 'Interface', 'probeA', 'type=internal',
            'external_ids:iface-id=probeA', 'mac="%s"' % mac)
    ns.run('ip link set probeA address %s mtu %d up && ip addr add %s/24 dev probeA'
           % (mac, MTU, ip))


def run(uml, wd, na, nb):
    wa, wb = os.path.join(wd, 'A'), os.path.join(wd, 'B')
    os.makedirs(wa)
    os.makedirs(wb)
    underlay(na, nb)
    central = ovn.OvnCentral(na, os.path.join(wd, 'central'), sb_listen=MG['A']).start()
    places = [central]
    try:
        sb = 'tcp:%s:6642' % MG['A']
        ha = ovn.Chassis(na, wa, 'hostA', UL['A'], 'ul0', sb)
        hb = ovn.Chassis(nb, wb, 'hostB', UL['B'], 'ul0', sb)
        places += [ha, hb]
        ha.start()
        hb.start()
        logical_network(central)
        socks = {k: os.path.join(w, k + '.sock') for k, w in
                 (('uA', wa), ('mA', wa), ('uB', wb), ('qB', wb))}
        with Vnetd(na, [vport(socks['uA'], 'vtap0', 'vm1'), vport(socks['mA'], 'vtap1', 'vm2')],
                   wa) as va, \
                Vnetd(nb, [vport(socks['uB'], 'vtap0', 'vm3'), vport(socks['qB'], 'vtap1', 'vm2')],
                      wb) as vb:
            ha.plug('vtap0', 'vm1', VM['vm1'][0])
            ha.plug('vtap1', 'vm2', VM['vm2'][0])
            hb.plug('vtap0', 'vm3', VM['vm3'][0])
            hb.plug('vtap1', 'vm2', VM['vm2'][0])
            host_probe(ha, na)
            stage_bindings(central, ha, hb)
            with UmlGuest(uml, socks['uA'], log_path=os.path.join(wd, 'umlA.log')) as ua, \
                    UmlGuest(uml, socks['uB'], log_path=os.path.join(wd, 'umlB.log')) as ub:
                stage_guests(ua, ub, na)
            check(va.alive() and vb.alive(), 'both vnetd processes still running')
        dead = [d for p in places for d in p.dead()]
        check(not dead, 'every OVS/OVN daemon still running (%s)' % (', '.join(dead) or 'all'))
    except BaseException:
        for p in places:
            for name in p.procs:
                tail = p.log_tail(name, 1500)
                if tail.strip():
                    print('--- %s: %s log tail\n%s' % (p.wd, name, tail), flush=True)
        raise
    finally:
        for p in reversed(places):
            p.stop()


def main():
    why = ovn.missing()
    if why:
        skip('OVN/OVS not installed: %s (make deps installs it)' % why)
    uml, wd = uml_start('ovn')
    try:
        with Netns('vnetd-e2e-ovnA') as na, Netns('vnetd-e2e-ovnB') as nb:
            run(uml, wd, na, nb)
    finally:
        if os.environ.get('VNETD_KEEP'):
            print('work directory kept: ' + wd)
        else:
            shutil.rmtree(wd, ignore_errors=True)


if __name__ == '__main__':
    main()
