#!/usr/bin/env python3
"""Can DPDK's vhost PMD (dpdk-testpmd, Debian package dpdk-dev) serve a UML guest?

Starts `dpdk-testpmd --no-huge --vdev net_vhost0,iface=SOCK,queues=1 --vdev net_tap0,...` in a
private network namespace, boots the UML guest of guest/fetch.sh on SOCK, and records what
happens: the vhost-user messages and negotiated features from testpmd's log, whether the guest
reaches its shell, and the state of the UML kernel process if it does not.  Writes
results/dpdk-probe.json and prints a verdict.  Not part of `make bench` (DPDK is not needed for
it); run as root: python3 bench/dpdk_probe.py [--wait SECONDS]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))
import harness  # noqa: E402
from harness import Netns, UmlGuest, GuestError  # noqa: E402

PROTO = {0: 'MQ', 1: 'LOG_SHMFD', 2: 'RARP', 3: 'REPLY_ACK', 4: 'NET_MTU', 5: 'BACKEND_REQ',
         6: 'CROSS_ENDIAN', 7: 'CRYPTO_SESSION', 8: 'PAGEFAULT', 9: 'CONFIG', 10: 'BACKEND_SEND_FD',
         11: 'HOST_NOTIFIER', 12: 'INFLIGHT_SHMFD', 13: 'RESET_DEVICE', 14: 'INBAND_NOTIFICATIONS',
         15: 'CONFIGURE_MEM_SLOTS', 16: 'STATUS'}
NET = {0: 'CSUM', 1: 'GUEST_CSUM', 5: 'MAC', 7: 'GUEST_TSO4', 8: 'GUEST_TSO6', 9: 'GUEST_ECN',
       10: 'GUEST_UFO', 11: 'HOST_TSO4', 12: 'HOST_TSO6', 13: 'HOST_ECN', 14: 'HOST_UFO', 15: 'MRG_RXBUF', 16: 'STATUS', 17: 'CTRL_VQ',
       18: 'CTRL_RX', 19: 'CTRL_VLAN', 21: 'GUEST_ANNOUNCE', 22: 'MQ', 23: 'CTRL_MAC_ADDR',
       28: 'INDIRECT_DESC', 29: 'EVENT_IDX', 30: 'PROTOCOL_FEATURES', 32: 'VERSION_1',
       34: 'RING_PACKED', 52: 'VQ_NOTF_COAL', 53: 'NOTF_COAL'}


def bits(v, names):
    return [names.get(i, 'bit%d' % i) for i in range(64) if v >> i & 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--wait', type=float, default=60, help='seconds to wait for the guest shell')
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('dpdk_probe: run as root')
    if shutil.which('dpdk-testpmd') is None:
        sys.exit('dpdk_probe: dpdk-testpmd missing: apt-get install -y dpdk-dev')
    kit = harness.uml_kit()
    wd = harness.workdir('dpdk-probe')
    sock = os.path.join(wd, 'vhost.sock')
    res = {'testpmd': subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'dpdk-dev'],
                                     capture_output=True, text=True).stdout}
    with Netns('vnetd-dpdk-probe') as ns:
        tlog = open(os.path.join(wd, 'testpmd.log'), 'wb')
        argv = ['stdbuf', '-oL', '-eL', 'dpdk-testpmd', '--no-huge', '-m', '512', '--no-pci',
                '--log-level=lib.vhost.*:debug', '--vdev', 'net_vhost0,iface=%s,queues=1' % sock,
                '--vdev', 'net_tap0,iface=dtap0', '--', '--auto-start', '--total-num-mbufs=16384']
        res['argv'] = argv
        tp = ns.popen(argv, stdout=tlog, stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
        for _ in range(200):
            if os.path.exists(sock) or tp.poll() is not None:
                break
            time.sleep(0.1)
        g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log'), extra_args=['loglevel=8'])
        g.start()
        try:
            g.wait_ready(args.wait)
            res['guest_ready'] = True
            res['guest'] = g.run('ip link show eth0; cat /sys/class/net/eth0/address', timeout=30)[1]
        except GuestError:
            res['guest_ready'] = False
            st = {}
            for k in range(2):
                with open('/proc/%d/stat' % g.proc.pid) as f:
                    x = f.read()
                x = x[x.rindex(')') + 2:].split()
                st['state'], st['utime_%d' % k] = x[0], int(x[11])
                time.sleep(2)
            st['cpu_ticks_per_s'] = (st['utime_1'] - st['utime_0']) / 2
            res['uml_kernel_process'] = st
        g.kill()
        tp.send_signal(2)
        try:
            tp.wait(10)
        except subprocess.TimeoutExpired:
            tp.kill()
        tlog.close()
    with open(os.path.join(wd, 'testpmd.log'), errors='replace') as f:
        text = f.read()
    res['messages'] = re.findall(r'read message (VHOST_USER_\w+)', text)
    m = re.findall(r'negotiated Vhost-user protocol features: (0x[0-9a-f]+)', text)
    if m:
        res['protocol_features'] = bits(int(m[-1], 16), PROTO)
    m = re.findall(r'negotiated Virtio features: (0x[0-9a-f]+)', text)
    if m:
        res['virtio_features'] = bits(int(m[-1], 16), NET)
    res['virtio_ready'] = 'virtio is now ready' in text
    verdict = []
    if res['guest_ready']:
        verdict.append('the UML guest booted on DPDK\'s vhost PMD')
    else:
        if 'CONFIG' not in res.get('protocol_features', []):
            verdict.append('DPDK does not offer VHOST_USER_PROTOCOL_F_CONFIG, so UML cannot read '
                           'the config space (no MAC, no link status: the driver picks a random MAC)')
        if 'CTRL_VQ' in res.get('virtio_features', []):
            verdict.append('DPDK offers VIRTIO_NET_F_CTRL_VQ (%s) but, being built for QEMU which '
                           'keeps the control queue itself, never serves virtqueue 2; UML hands '
                           'every queue to the backend, so the guest driver\'s first control '
                           'command (MQ VQ_PAIRS_SET at probe) busy-waits forever: the UML kernel '
                           'process spins (state %s, %.0f ticks/s) and /init never returns from '
                           'insmod virtio_net' % (
                               ', '.join(f for f in ('MQ', 'CTRL_RX', 'GUEST_ANNOUNCE')
                                         if f in res['virtio_features']),
                               res['uml_kernel_process']['state'],
                               res['uml_kernel_process']['cpu_ticks_per_s']))
        verdict.append('DPDK has no VIRTIO_NET_F_NOTF_COAL either, and testpmd offers no devarg '
                       'to mask features')
    res['verdict'] = verdict
    os.makedirs(os.path.join(TOP, 'results'), exist_ok=True)
    with open(os.path.join(TOP, 'results', 'dpdk-probe.json'), 'w') as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != 'messages'}, indent=1))
    print('messages: ' + ' '.join(x.replace('VHOST_USER_', '') for x in res['messages']))
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == '__main__':
    main()
