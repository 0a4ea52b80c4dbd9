#!/usr/bin/env python3
"""Self-test of the guest kit: build it (guest/fetch.sh), boot UML and QEMU-TCG without a NIC.

Exit 0 = PASS, 77 = prerequisites unavailable (printed why), 1 = FAIL.
Build dir: $VNETD_BUILD or ./build.  Also collected by pytest as test_guest_boot().
"""

import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import guest  # noqa: E402

SKIP = 77


def build_kit():
    """Run fetch.sh; returns (kit_dir, None) or (None, exit code)."""
    build = os.path.abspath(os.environ.get('VNETD_BUILD', 'build'))
    t = time.monotonic()
    r = subprocess.run(['bash', os.path.join(ROOT, 'guest', 'fetch.sh'), build])
    if r.returncode == SKIP:
        print('SKIP: guest/fetch.sh could not download the Debian packages')
        return None, SKIP
    if r.returncode != 0:
        print('FAIL: guest/fetch.sh exited %d' % r.returncode)
        return None, 1
    print('kit ready in %.1fs' % (time.monotonic() - t))
    return os.path.join(build, 'guest'), None


def check(g, cmd, expect=None):
    rc, out = g.run(cmd, timeout=60)
    print('  $ %s -> rc=%d %r' % (cmd, rc, out.strip()[:100]))
    if rc != 0 or (expect is not None and expect not in out):
        raise guest.GuestError('%r gave rc=%d output %r' % (cmd, rc, out))


def main():
    sys.stdout.reconfigure(line_buffering=True)   # keep order with fetch.sh output
    kit, rc = build_kit()
    if kit is None:
        return rc
    try:
        with guest.UmlGuest(kit) as g:
            print('UML ready in %.2fs' % g.boot_time)
            check(g, 'uname -r', '6.1')
            check(g, 'ethtool --version', 'ethtool version')
            check(g, 'iperf3 --version', 'iperf 3')
            check(g, 'sockperf --version || true')
            check(g, 'lsmod', 'virtio_net')
        if shutil.which('qemu-system-x86_64') is None:
            print('SKIP: qemu-system-x86_64 not installed (apt-get install qemu-system-x86)')
            return SKIP
        with guest.QemuGuest(kit) as g:
            print('QEMU-TCG ready in %.2fs' % g.boot_time)
            check(g, 'uname -r', '6.1')
            check(g, 'lsmod', 'virtio_net')
    except guest.GuestError as e:
        print('FAIL: %s' % e)
        return 1
    print('PASS')
    return 0


def test_guest_boot():
    rc = main()
    if rc == SKIP:
        import pytest
        pytest.skip('guest kit prerequisites unavailable')
    assert rc == 0


if __name__ == '__main__':
    sys.exit(main())
