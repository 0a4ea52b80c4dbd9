#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Offloads over a VLAN trunk: a UML guest with TSO on, on an access port (vlan=10) of segment
tenant, exchanges byte-exact 8 MB TCP transfers both ways with a host endpoint behind the
segment's tap trunk (uplink=tenant,trunk=10+20). The kernel here has no 8021q: in the trunk's
namespace two tc BPF programs make vtrunk0 VLAN 10's interface (the tag popped on ingress,
pushed on egress: the kernel moves it into and out of the tap's bytes, csum_start with it). The
endpoint sits one hop further, in its own namespace behind a veth whose TX checksumming (and so
TSO) is off: the kernel segments the guest's frames in software (refusing a GSO frame whose
csum_start is not its TCP header) and checksums the others at their csum_start, and the
endpoint checks every checksum, so a header the trunk moved wrongly breaks the transfer (a
local endpoint would catch a csum_start before the TCP header only: the kernel trusts a
CHECKSUM_PARTIAL frame whose csum_start is at or after it).
Checks: guest -> endpoint: the guest's 64 KB segments reach the tap whole (the tap's received
bytes per frame above the MTU), the tap refused none (rx errors, trunk_dropped). Endpoint ->
guest: the host's segments reach the access port's guest with their offload header (its port's
offloads.passed: the uplink is the only other port of VLAN 10), the tag's 4 bytes taken out of
csum_start and hdr_len: with the trunk tap alone (a trunk's tap takes every offload for its
VLANs, TUNSETOFFLOAD), and with a guest on the trunk port's own socket too."""

import json
import os
import shutil
import subprocess
import time

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, fail, guest_addr, make_blob,
                               ns_fetch_sha, skip, uml_start)

MB = 8
VID = 10
MAC = '52:54:00:77:1a:02'
TRUNK_IP, GUEST_IP = '10.77.10.1', '10.77.10.2'      # VLAN 10: vtrunk0, the guest
ROUTER_IP, HOST_IP = '10.78.10.1', '10.78.10.2'      # the veth: trunk side, endpoint
HOST_NET = '10.78.10.0/24'
ETH_MAX = 1518                                       # a tagged frame of MTU 1500

# tc BPF: VLAN VID's tag popped from frames the tap receives (vnetd's), pushed on frames it sends.
BPF_SRC = r'''
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#define SEC(n) __attribute__((section(n), used))
static long (*skb_vlan_push)(struct __sk_buff *, __u16, __u16) = (void *)BPF_FUNC_skb_vlan_push;
static long (*skb_vlan_pop)(struct __sk_buff *) = (void *)BPF_FUNC_skb_vlan_pop;
SEC("tc") int vlan(struct __sk_buff *skb)
{
#ifdef POP
	if (skb->vlan_present && (skb->vlan_tci & 0x0fff) == VID)
		skb_vlan_pop(skb);
#else
	skb_vlan_push(skb, __builtin_bswap16(0x8100), VID);
#endif
	return TC_ACT_OK;
}
char _license[] SEC("license") = "GPL";
'''


def build_bpf(wd):
    """The two tc programs (pop.o, push.o) compiled into wd; skip without clang."""
    if shutil.which('clang') is None:
        skip('clang is not installed (Debian package clang): the VLAN tc programs need it')
    src = os.path.join(wd, 'vlan_tc.c')
    with open(src, 'w') as f:
        f.write(BPF_SRC)
    arch = subprocess.run(['gcc', '-print-multiarch'], capture_output=True, text=True)
    inc = ['-I/usr/include/' + arch.stdout.strip()] if arch.returncode == 0 else []
    objs = {}
    for name, extra in (('pop', ['-DPOP']), ('push', [])):
        objs[name] = os.path.join(wd, name + '.o')
        r = subprocess.run(['clang', '-O2', '-target', 'bpf', '-DVID=%d' % VID] + inc + extra +
                           ['-c', src, '-o', objs[name]], capture_output=True, text=True)
        if r.returncode != 0:
            fail('clang -target bpf: %s' % r.stderr[-1500:])
    return objs


def tap_rx(ns):
    """vtrunk0's received (from vnetd) packets, bytes, errors + drops."""
    r = ns.run(['ip', '-j', '-s', 'link', 'show', 'dev', 'vtrunk0'])
    rx = json.loads(r.stdout)[0]['stats64']['rx']
    return rx['packets'], rx['bytes'], rx['errors'] + rx['dropped']


def offloads(vd, port):
    data = json.loads(vd.ctl('stats', '--json').stdout)
    return next(p['offloads'] for p in data['ports'] if p['name'] == port)


def tap_offloads(ns):
    """vtrunk0's TX offloads as the kernel sees them (TUNSETOFFLOAD: what it may send vnetd)."""
    out = ns.run('ethtool -k vtrunk0').stdout
    return ', '.join(ln.strip() for ln in out.splitlines()
                     if ln.startswith(('tx-checksumming:', 'tcp-segmentation-offload:')))


def host_to_guest(g, vd, want, what):
    """The guest fetches the endpoint's file (byte-exact, else the test fails); returns how many
    frames its port got with an offload header meanwhile."""
    before = offloads(vd, 'p0')
    rc, out = g.run('wget -q -O - http://%s:8000/h | sha256sum' % HOST_IP, timeout=180)
    after = offloads(vd, 'p0')
    check(rc == 0 and out.split() and out.split()[0] == want,
          '%d MB endpoint -> guest over the trunk is byte-exact, %s' % (MB, what))
    print('  guest port offloads meanwhile: %s' % {k: after[k] - before[k] for k in after})
    return after['passed'] - before['passed']


def main():
    kit, wd = uml_start('vlan-trunk-offloads')
    objs = build_bpf(wd)
    sock, tsock = os.path.join(wd, 'p0.sock'), os.path.join(wd, 'p1.sock')
    ports = ['socket=%s,switch=tenant,vlan=%d,mac=%s' % (sock, VID, MAC),
             'socket=%s,tap=vtrunk0,uplink=tenant,trunk=%d+20' % (tsock, VID)]
    blob_dir = os.path.join(wd, 'www')
    os.mkdir(blob_dir)
    want_h = make_blob(os.path.join(blob_dir, 'h'), MB)

    with Netns('vnetd-e2e-vtoff') as ns, Netns('vnetd-e2e-vtoff-h') as hs, \
            Vnetd(ns, ports, wd) as vd:
        # vtrunk0 as VLAN 10's interface; the endpoint behind a veth, TX checksumming off.
        ns.run('ip addr add %s/24 dev vtrunk0 && ip link set vtrunk0 up && '
               'tc qdisc add dev vtrunk0 clsact && '
               'tc filter add dev vtrunk0 ingress bpf da obj %s sec tc && '
               'tc filter add dev vtrunk0 egress bpf da obj %s sec tc'
               % (TRUNK_IP, objs['pop'], objs['push']))
        ns.run('ip link add vr0 type veth peer name vr1 && ip link set vr1 netns %s && '
               'ip addr add %s/24 dev vr0 && ip link set vr0 up && '
               'ethtool -K vr0 tx off tso off >/dev/null && sysctl -qw net.ipv4.ip_forward=1'
               % (hs.name, ROUTER_IP))
        hs.run('ip addr add %s/24 dev vr1 && ip link set vr1 up && '
               'ip route add default via %s' % (HOST_IP, ROUTER_IP))
        feats = ns.run('ethtool -k vr0').stdout
        check('tx-tcp-segmentation: off' in feats and 'tx-checksumming: off' in feats,
              'vr0 (towards the endpoint): TSO and TX checksumming off')
        feats = hs.run('ethtool -k vr1').stdout
        check('tx-tcp-segmentation: on' in feats,
              'vr1 (the endpoint): TSO on, its segments cross the trunk whole')
        server = hs.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                           '--directory', blob_dir],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
                guest_addr(g, GUEST_IP)
                g.run('ip route add %s via %s' % (HOST_NET, TRUNK_IP), check=True)
                feats = g.run('ethtool -k eth0', check=True)[1]
                check('tcp-segmentation-offload: on' in feats and 'tx-checksumming: on' in feats,
                      'the guest has TSO and TX checksumming on')
                rc, out = g.run('ping -c 3 -i 0.3 -W 2 %s' % HOST_IP, timeout=30)
                check(rc == 0, 'the guest pings the endpoint over VLAN %d and the veth' % VID)

                # guest -> endpoint
                g.run('dd if=/dev/urandom of=/tmp/g bs=1M count=%d 2>/dev/null; '
                      'httpd -p 8080 -h /tmp' % MB, check=True)
                want_g = g.run('sha256sum /tmp/g', check=True)[1].split()[0]
                drop0 = vd.port_info()['p1']['trunk_dropped']
                pk0, by0, err0 = tap_rx(ns)
                got = ns_fetch_sha(hs, 'http://%s:8080/g' % GUEST_IP, timeout=30,
                                   run_timeout=120)
                pk1, by1, err1 = tap_rx(ns)
                check(got == want_g, '%d MB guest -> endpoint over the trunk is byte-exact%s'
                      % (MB, '' if got == want_g else ': %s' % got.strip().splitlines()[-1]))
                per = (by1 - by0) / max(pk1 - pk0, 1)
                check(per > ETH_MAX,
                      "the tap got the guest's segments whole, with their offload header: "
                      "%d frames, %.0f bytes each (above %d)" % (pk1 - pk0, per, ETH_MAX))
                check(err1 == err0 and vd.port_info()['p1']['trunk_dropped'] == drop0,
                      'the tap refused no frame (rx errors+drops +%d, trunk_dropped +%d)'
                      % (err1 - err0, vd.port_info()['p1']['trunk_dropped'] - drop0))

                # endpoint -> guest, the trunk tap alone (no guest on its own socket)
                tap_feats = tap_offloads(ns)
                alone = host_to_guest(g, vd, want_h, 'the trunk tap alone (%s)' % tap_feats)

                # A guest on the trunk port's own socket: its receive offloads become the tap's
                # (TUNSETOFFLOAD), and the host's segments cross the trunk whole.
                with UmlGuest(kit, tsock, log_path=os.path.join(wd, 'trunk-guest.log')):
                    for _ in range(50):
                        if 'tx-checksumming: on' in ns.run('ethtool -k vtrunk0').stdout:
                            break
                        time.sleep(0.2)
                    passed = host_to_guest(g, vd, want_h, "a guest on the trunk port's socket "
                                           "(%s)" % tap_offloads(ns))
                    check(passed > 0, "with the tap's offloads on, the host's segments reached "
                          "the guest with their offload header, the tag's 4 bytes taken out of "
                          "csum_start and hdr_len (%d)" % passed)
                check(offloads(vd, 'p0')['bad_header'] == 0, 'p0: no bad offload header')
                check(alone > 0,
                      "the trunk tap alone (no guest on its own socket) takes every offload for "
                      "its VLANs: the host's segments reached the guest with their offload "
                      "header (%d; the tap: %s)" % (alone, tap_feats))
        finally:
            server.kill()
        check(vd.alive(), 'vnetd still running')
    print('PASS')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
