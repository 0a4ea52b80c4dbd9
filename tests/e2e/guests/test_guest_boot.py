#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Self-test of the guest kits: build each candidate (guest/fetch.sh), probe which UML kernels boot
on this CPU, boot the default one ("a Linux guest") and QEMU-TCG without a NIC, check their tools.

A kernel that cannot run on this CPU is reported with the reason (not a failure); the default
guest, the newest kernel that boots, must boot and have its tools. Exit 0 PASS, 77 SKIP, 1 FAIL.
"""

import shutil
import sys

from tests.kit import harness
from tests.kit import kits
from tests.kit.harness import QemuGuest, UmlGuest, GuestError, check


def run(g, cmd, expect):
    rc, out = g.run(cmd, timeout=60)
    check(rc == 0 and expect in out, '  $ %s -> %r' % (cmd, out.strip()[:80]))


def main():
    sys.stdout.reconfigure(line_buffering=True)
    print('CPU: %s; host XSAVE area %s bytes' % (kits.cpu_summary(), kits.xsave_bytes(harness.BUILD)))
    table = []
    for suite in kits.DEFAULT_SUITES:
        kit = harness.guest_kit(suite)
        title, rows = kits.manifest(kit)
        print('MANIFEST of %s (%s):' % (kit, title))
        for r in rows:
            print('  %-36s %-28s %s' % r)
        ok, what = kits.boots(kit, harness.BUILD)
        table.append((suite, kits.describe(kit), 'boots: ' + what if ok else 'SKIPPED: ' + what))
    print('\nUML kernels on this host:')
    for row in table:
        print('  %-9s %s\n            %s' % row)
    kit = harness.uml_kit()
    try:
        with UmlGuest(kit) as g:
            print('default UML guest ready in %.2fs' % g.boot_time)
            run(g, 'uname -r', '.')
            run(g, 'ethtool --version', 'ethtool version')
            run(g, 'iperf3 --version', 'iperf 3')
            run(g, 'lsmod', 'virtio_net')
        if shutil.which('qemu-system-x86_64') is None:
            harness.skip('qemu-system-x86_64 not installed (apt-get install qemu-system-x86)')
        qkit = harness.guest_kit('bookworm')
        with QemuGuest(qkit) as g:
            print('QEMU-TCG (bookworm kernel) ready in %.2fs' % g.boot_time)
            run(g, 'uname -r', '6.1')
            run(g, 'lsmod', 'virtio_net')
    except GuestError as e:
        harness.fail(str(e))
    print('PASS')


if __name__ == '__main__':
    main()
