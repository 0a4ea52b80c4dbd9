# SPDX-License-Identifier: MIT
"""DHCPv4 in the test guests with the guest's own busybox udhcpc: udhcpc.script (beside this
file) applies the lease; install() writes it into a running guest (the kit's initramfs has
busybox's udhcpc but no script), lease() runs the client and returns what it applied."""

import base64
import os

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'udhcpc.script')
GUEST_PATH = '/etc/udhcpc/default.script'   # Debian's busybox udhcpc's default -s


def install(g):
    """Put the udhcpc script into guest g (over its console, base64 in one line)."""
    with open(SCRIPT, 'rb') as f:
        data = base64.b64encode(f.read()).decode()
    g.run('mkdir -p %s && echo %s | base64 -d > %s && chmod 755 %s'
          % (os.path.dirname(GUEST_PATH), data, GUEST_PATH, GUEST_PATH), check=True)


def lease(g, ifname='eth0', tries=10, timeout=60):
    """Run udhcpc on ifname until it has a lease (requesting the MTU option), once; returns
    (ok, {'ip': 'A.B.C.D/N', 'mtu': int}, udhcpc's output)."""
    rc, out = g.run('ip link set %s up; udhcpc -i %s -s %s -n -q -t %d -T 2 -O mtu 2>&1'
                    % (ifname, ifname, GUEST_PATH, tries), timeout=timeout)
    _, addr = g.run("ip -4 -o addr show dev %s | awk '{print $4}'" % ifname)
    _, mtu = g.run('cat /sys/class/net/%s/mtu' % ifname)
    got = {'ip': addr.strip(), 'mtu': int(mtu.strip() or 0)}
    return rc == 0 and bool(got['ip']), got, out
