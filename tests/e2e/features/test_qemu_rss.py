# SPDX-License-Identifier: MIT
"""RSS and hash reporting through QEMU's full-device mode (sid's QEMU 11 with
vhost-user-test-device-pci: vnetd serves every queue, the control queue too, and the config
space, here 24 bytes with rss_max_key_size, rss_max_indirection_table_length and
supported_hash_types). Sid's Linux 7.2 guest on a queues=2,rss=on tap port: the driver
negotiates VIRTIO_NET_F_RSS and HASH_REPORT; `ethtool -X eth0 equal 2` and `ethtool -X eth0
hkey KEY weight 1 3` reach vnetd's table and `ethtool -x` reads them back; `ethtool -N eth0
rx-flow-hash udp4 sd` / `tcp4 sdfn` / `udp4 sdfn` change the hash types; 64 UDP flows from the
host land on the RX queues as a reference Toeplitz over the table predicts, within 10 points of
the weights (vnetd's per-queue counters); the skb->hash the guest's driver took from each
packet's virtio_net_hdr_v1_hash equals the reference Toeplitz (read in the guest with
rxhash_probe.c); 8 MB byte-exact both ways."""

import os

from tests.kit.harness import (HostServers, Netns, QemuGuest, Vnetd, check, guest_addr, guest_kit,
                               host_addr, make_blob, new_qemu, ns_fetch_sha, require_root_and_tun,
                               workdir)
from tests.kit.rss import (build_probe, check_flows, check_guest_hashes, guest_hashes,
                           guest_rss_commands, rss, weights)

MAC = '52:54:00:7a:05:02'
HOST, GUEST = '10.122.5.1', '10.122.5.2'
SIZE_MB = 8


def main():
    require_root_and_tun()
    qemu = new_qemu('sid')
    kit = guest_kit(os.environ.get('VNETD_QEMU_GUEST_SUITE', 'sid'))
    wd = workdir('qemu-rss')
    sock = os.path.join(wd, 'p0.sock')
    blob_sha = make_blob(os.path.join(wd, 'blob'), SIZE_MB)
    probe, why = build_probe(wd)
    if not probe:
        print('guest hash check not possible: %s' % why)
    port = 'socket=%s,tap=vtap0,mac=%s,queues=2,rss=on' % (sock, MAC)
    with Netns('vnetd-e2e-qrss') as ns, Vnetd(ns, [port], wd) as vd:
        host_addr(ns, 'vtap0', HOST)
        with HostServers(ns, HOST, wd), \
                QemuGuest(kit, vhost_socket=sock, qemu=qemu, full_device=True, num_vqs=5,
                          config_size=24, log_path=os.path.join(wd, 'qemu.log')) as g:
            run_guest(g, vd, ns, blob_sha, probe)
        check(vd.alive(), 'vnetd still running')


def run_guest(g, vd, ns, blob_sha, probe):
    rc, out = g.run('cat /sys/class/net/eth0/address')
    check(out.strip() == MAC, "eth0 has vnetd's MAC (config space served by vnetd): %s" % out.strip())
    r = rss(vd)
    check(r is not None and r['rss'] and r['hash_report'],
          'the guest negotiated RSS and HASH_REPORT over the full device (%s)' % r)
    print('after probe: steering %s, types %s, weights %s' % (
        r['steering'], r['hash_types'], weights(r['indirection_table'])))
    g.run('ethtool -L eth0 combined 2', check=True)
    check(vd.port_info()['p0']['active_pairs'] == 2, "the guest's MQ_VQ_PAIRS_SET reached vnetd")
    guest_addr(g, GUEST)
    rc, _ = g.run('ping -c 3 -W 10 %s' % HOST, timeout=120)
    check(rc == 0, 'the guest pings the host through vnetd')

    r = guest_rss_commands(g, vd)
    t = r['indirection_table']
    check(r['reporting'], 'vnetd reports the hash in every RX header (HASH_REPORT, types set)')

    check_flows(vd, ns, HOST, GUEST, t)
    if probe:
        got = guest_hashes(g, vd, ns, HOST, GUEST, 'http://%s:8000/%s'
                           % (HOST, os.path.basename(probe)))
        check_guest_hashes(got, HOST, GUEST)

    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST, timeout=600)
    check(rc == 0 and out.split()[0] == blob_sha, '%d MB host->guest byte-exact' % SIZE_MB)
    g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null && httpd -p 8080 -h /tmp'
          % SIZE_MB, check=True)
    want = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
    check(ns_fetch_sha(ns, 'http://%s:8080/up' % GUEST, timeout=300, run_timeout=600) == want,
          '%d MB guest->host byte-exact' % SIZE_MB)


if __name__ == '__main__':
    main()
