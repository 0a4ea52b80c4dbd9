# SPDX-License-Identifier: MIT
"""UML guest on an AF_XDP port (xdp=): a two-queue veth pair between vnetd's namespace and a peer
namespace, a port with two sockets sharing one UMEM; clear start-up errors (no interface, no
CAP_NET_RAW, mtu, inside the sandbox), ping both ways, byte-exact HTTP transfers both ways
(sha256) with the peer's frames steered (XPS) first to queue 1, then to queue 0, and no XDP
program left on the veth afterwards (port-del with the sandbox on, and vnetd's exit)."""

import errno
import json
import os
import re
import shutil
import socket
import subprocess

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, guest_addr, host_addr, make_blob,
                               skip, uml_start)

MAC = '52:54:00:78:00:02'
PEER_IP, GUEST_IP = '10.78.0.1', '10.78.0.2'
SIZE_MB = 8
FETCH = ('import urllib.request,hashlib,sys;'
         'print(hashlib.sha256(urllib.request.urlopen(sys.argv[1], timeout=300).read()).hexdigest())')


class StartFails(Vnetd):
    """A vnetd expected not to start: failed() records instead of failing the test."""

    def failed(self, why):
        self.why = why


def start_error(ns, wd, spec, prefix=()):
    """vnetd's log when it is started with one port spec that must fail, or None if it started."""
    vd = StartFails(ns, [spec], wd, prefix=prefix, start_timeout=10.0)
    vd.why = None
    vd.start()
    started = vd.why is None
    vd.stop()
    return None if started else vd.log_tail(4000)


def xdp_attached(ns, dev):
    """Whether an XDP program is attached to dev (ip -d link shows 'prog/xdp')."""
    out = ns.run(['ip', '-d', 'link', 'show', 'dev', dev]).stdout
    return 'prog/xdp' in out or ' xdp' in out.split('\n')[0]


def require_af_xdp():
    """Skip on a kernel without AF_XDP sockets (CONFIG_XDP_SOCKETS)."""
    try:
        socket.socket(44, socket.SOCK_RAW, 0).close()  # AF_XDP
    except OSError as e:
        if e.errno == errno.EAFNOSUPPORT:
            skip('the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)')


def steer(peer, q):
    """XPS: every frame the peer sends on vx1 leaves by tx queue q, so it reaches vx0's RX
    queue q (veth maps one to the other)."""
    mask = '%x' % ((1 << os.cpu_count()) - 1)
    for i in (0, 1):
        peer.run('echo %s > /sys/class/net/vx1/queues/tx-%d/xps_cpus' % (mask if i == q else '0', i))


def main():
    if shutil.which('setpriv') is None:
        skip('setpriv (util-linux) missing')
    require_af_xdp()
    kit, wd = uml_start('uml-xdp')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    blob_sha = make_blob(blob, SIZE_MB)

    with Netns('vnetd-e2e-xdp') as ns, Netns('vnetd-e2e-xdpp') as peer:
        subprocess.run(['ip', 'link', 'add', 'vx0', 'netns', ns.name, 'numtxqueues', '2',
                        'numrxqueues', '2', 'type', 'veth', 'peer', 'name', 'vx1', 'netns',
                        peer.name, 'numtxqueues', '2', 'numrxqueues', '2'], check=True)
        ns.run('ip link set vx0 up')
        host_addr(peer, 'vx1', PEER_IP)
        # XDP sees frames as the wire has them: the peer's veth must not leave checksums to
        # an offload (CHECKSUM_PARTIAL) that AF_XDP never completes (docs/xdp.md).
        peer.run('ethtool -K vx1 tx off')
        spec = 'socket=%s,xdp=vx0,queue=0,queues=2,mac=%s' % (sock, MAC)

        # Start-up errors name the cause, and leave no program on the interface.
        log = start_error(ns, wd, 'socket=%s,xdp=nosuch0' % sock) or ''
        check('nosuch0: no such interface' in log, 'xdp=nosuch0: "no such interface"')
        log = start_error(ns, wd, spec, prefix=['setpriv', '--bounding-set', '-net_raw']) or ''
        check('CAP_NET_RAW' in log, 'without CAP_NET_RAW: the error names CAP_NET_RAW')
        check(not xdp_attached(ns, 'vx0'), 'no XDP program left on vx0 after a failed start')
        log = start_error(ns, wd, 'socket=%s,xdp=vx0,mtu=4000' % sock) or ''
        check('mtu=3826 at most' in log, 'mtu=4000 on an xdp= port: refused with the limit')

        http = peer.popen(['python3', '-m', 'http.server', '8000', '--bind', PEER_IP,
                           '--directory', wd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        try:
            with Vnetd(ns, [spec], wd) as vd:
                log = vd.log_tail(100000)
                check('xdp vx0: attached, queues 0..1' in log and 'copy mode' in log,
                      'vx0: AF_XDP on queues 0..1; veth has no zero-copy, so copy mode (logged)')
                check(xdp_attached(ns, 'vx0'), 'an XDP program is attached to vx0')
                info = vd.port_info()
                check(info['p0']['backend'] == 'xdp', 'vnetctl ports reports backend xdp')
                steer(peer, 1)  # the peer's frames arrive on vx0's queue 1: socket 1
                with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log')) as g:
                    guest_addr(g, GUEST_IP)
                    rc, out = g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)"'
                                    ' = up ] && break; sleep 0.2; done; '
                                    'cat /sys/class/net/eth0/operstate')
                    check(out.strip() == 'up', 'guest link is up')
                    rc, _ = g.run('ping -c 3 -W 5 %s' % PEER_IP, timeout=60)
                    check(rc == 0, 'guest pings the peer namespace through the veth')
                    r = peer.run('ping -c 3 -W 5 %s' % GUEST_IP, check=False)
                    check(r.returncode == 0, 'the peer namespace pings the guest')

                    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % PEER_IP,
                                    timeout=300)
                    check(rc == 0 and out.split()[:1] == [blob_sha],
                          'peer->guest %d MB byte-exact (sha256)' % SIZE_MB)
                    g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null' % SIZE_MB,
                          check=True)
                    up_sha = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                    g.run('httpd -p 8080 -h /tmp', check=True)
                    feats = g.run('ethtool -k eth0', check=True)[1]
                    check('tcp-segmentation-offload: on' in feats,
                          'the guest sends with TSO on (the port segments in software)')
                    r = peer.run(['python3', '-c', FETCH, 'http://%s:8080/up' % GUEST_IP],
                                 timeout=300, check=False)
                    check(r.returncode == 0 and r.stdout.strip() == up_sha,
                          'guest->peer %d MB byte-exact (sha256)' % SIZE_MB)
                    stats = json.loads(vd.ctl('stats', '--json').stdout)['ports'][0]
                    off = stats['offloads']
                    check(off['soft_segments'] > 0 and off['bad_header'] == 0,
                          'vnetd segmented the guest\'s TSO frames for AF_XDP (%d segments, %d '
                          'checksums completed)' % (off['soft_segments'], off['soft_checksums']))
                    steer(peer, 0)  # a new connection, on queue 0: socket 0
                    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % PEER_IP,
                                    timeout=300)
                    check(rc == 0 and out.split()[:1] == [blob_sha],
                          'peer->guest %d MB again, through queue 0: byte-exact' % SIZE_MB)

                # Inside the sandbox: removing the port detaches the program, adding one is
                # refused with the reason, and vnetd lives on.
                r = vd.ctl('port-del', 'p0', check=False)
                check(r.returncode == 0, 'vnetctl port-del p0 (%s)' % (r.stdout + r.stderr).strip())
                check(vd.alive(), 'vnetd alive after port-del of the xdp port (seccomp)')
                check(not xdp_attached(ns, 'vx0'), 'port-del detached the XDP program from vx0')
                # the last such line: the failed starts above logged theirs into the same file
                m = ([None] + list(re.finditer(r'xdp vx0: detached; frames received per queue: '
                                               r'(\d+), (\d+); sent: (\d+)',
                                               vd.log_tail(20000))))[-1]
                print('xdp port: %s' % (m.group(0) if m else 'no counters logged'))
                check(m and int(m.group(1)) > 1000 and int(m.group(2)) > 1000,
                      'both sockets delivered the download that was steered to them')
                r = vd.ctl('port-add', spec, check=False)
                check(r.returncode != 0 and 'before the sandbox' in vd.log_tail(4000),
                      'port-add of an xdp= port inside the sandbox: refused, the log says why')
                check(vd.alive(), 'vnetd still running')
            check(not xdp_attached(ns, 'vx0'), 'no XDP program on vx0 after vnetd exits')
        finally:
            http.kill()


if __name__ == '__main__':
    main()
