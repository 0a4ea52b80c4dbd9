# SPDX-License-Identifier: MIT
"""make doctor: what this host can do for vnetd's tests, demo and benchmarks, a line per item, each
"no" with what to do. Every item is measured (a guest booted, a namespace and a tap made), not
inferred from a file's presence. Exit 0 when at least one kind of guest runs here, else 1."""

import os
import shutil
import subprocess
import sys
import time

from tests.kit import harness, kits
from tests.kit.guest import GuestError, QemuGuest

ROWS = []


def report(ok, item, detail, todo=''):
    """One line: 'yes'/'no'/'--' (not needed), the item, what was measured; the fix when no."""
    mark = {True: 'yes', False: 'no ', None: '-- '}[ok]
    ROWS.append(ok)
    print('%s  %-24s %s' % (mark, item, detail), flush=True)
    if ok is False and todo:
        print('     %-24s -> %s' % ('', todo), flush=True)


def run(argv, timeout=30):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return -1, str(e)


def check_cpu():
    xs = kits.xsave_bytes(harness.BUILD)
    report(True, 'CPU', '%s; XSAVE area %s bytes%s' % (
        kits.cpu_summary(), xs if xs else '? (build/xsave-size missing: run make)',
        ' (UML <= 6.12 needs <= %d)' % kits.UML_XSTATE_BYTES if xs else ''))


def check_uml():
    booting = []
    for suite in kits.ALL_SUITES:
        try:
            kit = kits.build_kit(harness.BUILD, suite)
        except kits.KitError as e:
            report(False, 'UML (%s)' % suite, str(e).splitlines()[0],
                   'check the network to the Debian mirror (VNETD_DEBIAN_MIRROR), then make doctor')
            continue
        ok, what = kits.boots(kit, harness.BUILD)
        title = kits.manifest(kit)[0].replace('vnetd guest kit: ', '')
        if ok:
            booting.append(suite)
        report(ok, 'UML (%s)' % suite, '%s: %s' % (title, what),
               'its tests skip here; the default guest is the newest kernel that boots')
    report(bool(booting), 'default UML guest', booting[0] if booting else 'none boots here',
           'make demo falls back to QEMU/TCG; UML tests skip')
    return bool(booting)


def boot_secs(kit, accel, qemu=None, timeout=60):
    g = QemuGuest(kit, qemu=qemu, accel=accel)
    g.boot_timeout = timeout
    t0 = time.monotonic()
    try:
        with g:
            return time.monotonic() - t0
    except GuestError:
        return None


def check_qemu():
    kit = kits.build_kit(harness.BUILD, 'bookworm')
    q = shutil.which('qemu-system-x86_64')
    tcg = None
    if not q:
        report(False, 'QEMU (system)', 'qemu-system-x86_64 not installed', 'make deps')
    else:
        ver = run([q, '-version'])[1].splitlines()[0]
        tcg = boot_secs(kit, 'tcg')
        report(tcg is not None, 'QEMU/TCG', '%s: a 6.1 guest boots in %s' % (
            ver, '%.1f s' % tcg if tcg else 'no time (did not boot within 60 s)'), 'see build/ logs')
    if not os.path.exists('/dev/kvm'):
        report(None, 'KVM', 'no /dev/kvm: TCG only (all tests use TCG or UML)')
    elif q and tcg:
        kvm = boot_secs(kit, 'kvm', timeout=max(30, 3 * tcg))
        usable = kvm is not None and kvm < tcg
        report(usable, 'KVM', '/dev/kvm present; the same guest boots %s (TCG %.1f s)' % (
            'in %.1f s' % kvm if kvm else 'not within %d s' % max(30, 3 * tcg), tcg),
            'KVM here is slower than TCG (nested or throttled): use TCG; CPU-per-Gbit '
            'benchmarks of interrupt cost need a real KVM host')
    r = subprocess.run([os.path.join(harness.TOP, 'guest', 'qemu.sh'), harness.BUILD],
                       capture_output=True, text=True)
    if r.returncode == 0:
        sidq = r.stdout.strip().splitlines()[-1]
        rc, out = run([sidq, '-device', 'vhost-user-test-device-pci,help'])
        full = rc == 0 and 'vhost-user-test-device-pci options' in out
        report(full, "QEMU 11 (sid)", '%s; vhost-user-test-device-pci: %s' % (
            run([sidq, '-version'])[1].splitlines()[0], 'yes' if full else 'no'),
            'guest/qemu.sh fetches it; test_qemu_full needs it')
        tcg = tcg or full
    else:
        report(False, 'QEMU 11 (sid)', (r.stderr.strip().splitlines() or ['?'])[-1],
               'guest/qemu.sh BUILD needs the Debian sid mirror')
    return bool(tcg)


def check_net():
    ns = 'vnetd-doctor-%d' % os.getpid()
    rc, out = run(['ip', 'netns', 'add', ns])
    report(rc == 0, 'network namespaces', 'ip netns add: %s' % ('ok' if rc == 0 else out),
           'run as root with iproute2 (make deps)')
    if rc != 0:
        return
    try:
        rc, out = run(['ip', 'netns', 'exec', ns, 'ip', 'tuntap', 'add', 'dev', 'vtapdoc', 'mode', 'tap'])
        report(rc == 0, 'tap devices', 'a tap made in a private namespace: %s' % ('ok' if rc == 0 else out),
               'needs /dev/net/tun (modprobe tun) and CAP_NET_ADMIN')
        rc, out = run(['ip', 'netns', 'exec', ns, 'ip', 'link', 'add', 'vxdoc', 'type', 'vxlan',
                       'id', '42', 'dstport', '4789', 'local', '127.0.0.1'])
        report(rc == 0, 'VXLAN', 'ok' if rc == 0 else out, 'host kernel needs CONFIG_VXLAN')
    finally:
        run(['ip', 'netns', 'del', ns])


def check_hugepages():
    info = {}
    with open('/proc/meminfo') as f:
        for line in f:
            k, v = line.split(':', 1)
            info[k] = v.strip()
    total = int(info.get('HugePages_Total', '0'))
    report(total > 0, 'hugepages', '%d x %s (free %s)' % (total, info.get('Hugepagesize', '?'),
                                                          info.get('HugePages_Free', '?')),
           'only OVS-DPDK benchmarks need them: echo 600 > /proc/sys/vm/nr_hugepages')


def check_tools():
    p = shutil.which('prometheus')
    report(bool(p), 'Prometheus', run([p, '--version'])[1].splitlines()[0] if p else 'not installed',
           'make deps (test_metrics scrapes vnetd with a real server)')
    t = shutil.which('dpdk-testpmd')
    if t:
        rc, out = run(['pkg-config', '--modversion', 'libdpdk'])
        report(True, 'DPDK', '%s (DPDK %s)' % (t, out if rc == 0 else '?'))
    else:
        report(False, 'DPDK', 'dpdk-testpmd not installed', 'make deps (bench-datapath uses it)')
    o = shutil.which('ovs-vswitchd')
    report(bool(o), 'OVS', run([o, '--version'])[1].splitlines()[0] if o else 'not installed',
           'apt-get install openvswitch-switch-dpdk (only the OVS-DPDK comparison needs it)')
    c = shutil.which('valgrind')
    report(bool(c), 'callgrind', 'valgrind %s' % run([c, '--version'])[1] if c else 'not installed',
           'make deps (instruction counts per packet)')


def main():
    if os.geteuid() != 0:
        print('make doctor: run as root (namespaces, taps, guests)')
        return 1
    print('vnetd doctor: what this host can do (kits in %s, downloads cached in %s)\n'
          % (os.path.join(harness.BUILD, 'guest'), kits.cache_dir()))
    check_cpu()
    uml = check_uml()
    qemu = check_qemu()
    check_net()
    check_hugepages()
    check_tools()
    print('\n%s' % ('guests run here: make demo and make check can prove vnetd on this host'
                    if uml or qemu else 'no guest runs here: make check cannot prove vnetd'))
    return 0 if (uml or qemu) else 1


if __name__ == '__main__':
    sys.exit(main())
