# SPDX-License-Identifier: MIT
"""make demo: a Linux guest on vnetd (tap in a private namespace) runs the same paced stream and
bulk download with coalescing off, then set by its own `ethtool -C`; prints packets,
notifications and guest interrupts side by side, with the throughput each workload got and the
CPU it cost (the guest's and vnetd's, each process with all its threads and children).

The guest is the newest UML kernel that boots on this CPU (tests/kit/kits.py); where none does,
a QEMU/TCG guest with sid's QEMU 11 in full-device mode (vhost-user-test-device-pci), so the
guest's own ethtool -C still reaches vnetd over the control queue it serves."""

import json
import os
import re
import subprocess
import time

from bench.lib.measure import proc_table, tree_cpu
from tests.kit import harness, kits
from tests.kit.harness import Netns, QemuGuest, UmlGuest, Vnetd, require_root_and_tun, workdir

HOST_IP, GUEST_IP = '10.76.0.1', '10.76.0.2'
SECONDS = 5  # each workload: long enough that wake-ups and interrupts are what costs
PROFILES = [('off', 'rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 1'),
            ('moderate', 'rx-usecs 1000 rx-frames 10 tx-usecs 2000 tx-frames 20'),
            ('aggressive', 'rx-usecs 5000 rx-frames 50 tx-usecs 5000 tx-frames 50')]


def guest_irqs(g, pattern):
    """Handler runs of the guest's virtio interrupt line(s) (/proc/interrupts, all CPUs)."""
    total = 0
    for line in g.run('cat /proc/interrupts', check=True)[1].splitlines():
        if re.search(pattern, line):
            total += sum(int(x) for x in line.split()[1:] if x.isdigit())
    return total


def iperf3(ns, args):
    """Mbit/s the receiving side got (iperf3 -J from the host's namespace to the guest)."""
    r = ns.run(['iperf3', '-c', GUEST_IP, '-t', str(SECONDS), '-J'] + args, check=False,
               timeout=SECONDS + 60)
    try:
        end = json.loads(r.stdout)['end']
    except (ValueError, KeyError):
        return 0.0
    s = end.get('sum_received') or end.get('sum') or {}
    return s.get('bits_per_second', 0.0) / 1e6


def pick_guest(sock):
    """(guest, its interrupt-line pattern, description): the newest UML that boots here, else
    QEMU 11 full-device under TCG (VNETD_DEMO_GUEST=qemu forces that)."""
    try:
        if os.environ.get('VNETD_DEMO_GUEST') == 'qemu':
            raise kits.KitError('VNETD_DEMO_GUEST=qemu')
        kit = kits.uml_kit(harness.BUILD, log=print)
        return UmlGuest(kit, sock), 'virtio-uml', 'UML guest, ' + kits.describe(kit)
    except kits.KitError as e:
        print('no UML guest on this host (%s): falling back to QEMU/TCG' % e)
    kit = kits.build_kit(harness.BUILD, 'sid', log=print)
    qemu = harness.new_qemu('sid')
    g = QemuGuest(kit, vhost_socket=sock, qemu=qemu, full_device=True, num_vqs=3)
    return g, r'virtio[0-9]', 'QEMU 11 full-device TCG guest, ' + kits.describe(kit)


def main():
    require_root_and_tun()
    wd = workdir('demo')
    sock = os.path.join(wd, 'p0.sock')
    rows = []
    workloads = (('paced UDP 20 Mbit/s', ['-u', '-b', '20M', '-l', '1400', '--pacing-timer', '100']),
                 ('bulk TCP download', []))
    with Netns('vnetd-demo') as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        ns.run('ip addr add %s/24 dev vtap0 && ip link set vtap0 up' % HOST_IP)
        g, irq_line, what = pick_guest(sock)
        print('guest: %s' % what)
        with g:
            print('guest booted in %.1f s, attached to vnetd port p0' % g.boot_time)
            g.run('ip link set eth0 up && ip addr add %s/24 dev eth0 && iperf3 -s -D' % GUEST_IP,
                  check=True)
            time.sleep(1)
            for name, args in PROFILES:
                g.run('ethtool -C eth0 ' + args, check=True)
                for work, iperf_args in workloads:
                    a, ia, t0 = vd.stats()['p0'], guest_irqs(g, irq_line), time.monotonic()
                    tab0 = proc_table()
                    mbit = iperf3(ns, iperf_args)
                    tab1 = proc_table()
                    b, ib, dt = vd.stats()['p0'], guest_irqs(g, irq_line), time.monotonic() - t0
                    cpu = sum(tree_cpu(tab1, p.pid) - tree_cpu(tab0, p.pid)
                              for p in (g.proc, vd.proc))
                    rows.append((name, work, b[0]['packets'] - a[0]['packets'],
                                 b[0]['notifications'] - a[0]['notifications'],
                                 b[1]['notifications'] - a[1]['notifications'], ib - ia, mbit,
                                 100.0 * cpu / dt, dt))
    print('\nvnetd notification coalescing, set by the guest\'s own ethtool -C (RX = host->guest)')
    print('%-11s %-20s %10s %10s %10s %11s %9s %12s %8s' % (
        'profile', 'workload', 'rx pkts', 'rx notif', 'tx notif', 'guest irqs', 'Mbit/s',
        'CPU % core', 'seconds'))
    for r in rows:
        print('%-11s %-20s %10d %10d %10d %11d %9.0f %12.0f %8.1f' % r)
    print('\nMbit/s: what the guest received (iperf3); CPU: the guest\'s and vnetd\'s processes '
          '(all threads and children) over the workload, in %% of one core; %d s each.' % SECONDS)
    print('\nguest: ' + what)
    print('profiles: ' + '; '.join('%s = %s' % p for p in PROFILES))


if __name__ == '__main__':
    main()
