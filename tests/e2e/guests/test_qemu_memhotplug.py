# SPDX-License-Identifier: MIT
"""QEMU 7.2 memory hotplug on vnetd: a pc-dimm added and removed (QMP) while a transfer runs.

The guest has `-m 512M,slots=4,maxmem=2G` (memfd, share=on); vnetd offers CONFIGURE_MEM_SLOTS,
so QEMU hands each memory region over with ADD_MEM_REG / REM_MEM_REG and never SET_MEM_TABLE.
While a throttled HTTP download runs through vnetd's tap port, a 256 MiB memory-backend-memfd
DIMM is plugged (object_add + device_add), onlined by the guest (memhp_default_state=
online_movable, so it can be taken out again), and then unplugged (device_del): each transfer
must arrive byte-exact, vnetd must log the region added and removed and keep serving."""

import os
import re
import time

from tests.kit.harness import (Netns, Vnetd, check, guest_addr, guest_kit, host_addr, make_blob,
                               require_program, require_root_and_tun, workdir)
from tests.kit.migration import AnyQemu, Qmp, qemu_args, start_throttled_server

SIZE_MB = 24
RATE = 3 << 20            # bytes/s: each transfer takes ~8 s, the hotplug happens inside it
DIMM = 256 << 20


class HotplugQemu(AnyQemu):
    """512 MiB of boot memory (a memfd) and room for 4 DIMMs up to 2 GiB in all."""

    def argv(self):
        a = super().argv()
        i = a.index('-m')
        a[i + 1] = '%s,slots=4,maxmem=2G' % self.mem
        return a


def start_download(g, url, name):
    """A background download in the guest: its sha256 lands in /tmp/NAME.sum when done."""
    g.run('(wget -q -O - %s | sha256sum > /tmp/%s.part && mv /tmp/%s.part /tmp/%s.sum) '
          '</dev/null >/dev/null 2>&1 &' % (url, name, name, name), check=True)


def wait_download(g, name, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rc, out = g.run('cat /tmp/%s.sum 2>/dev/null' % name)
        if rc == 0 and out.strip():
            return out.split()[0]
        time.sleep(1)
    return None


def wait_log(vd, regex, start, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(regex, vd.log_tail(10 ** 7)[start:])
        if m:
            return m
        time.sleep(0.2)
    return None


def mem_total_kib(g):
    rc, out = g.run("grep MemTotal /proc/meminfo")
    return int(out.split()[1]) if rc == 0 and out.split() else 0


def main():
    require_root_and_tun()
    require_program('qemu-system-x86_64', 'qemu-system-x86')
    kit = guest_kit()
    wd = workdir('qemu-memhotplug')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.path.join(wd, 'blob')
    blob_sha = make_blob(blob, SIZE_MB)
    mac = '52:54:00:79:00:12'
    with Netns('vnetd-e2e-memhp') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s' % (sock, mac)], wd) as vd:
        host_addr(ns, 'vtap0', '10.79.2.1')
        srv = start_throttled_server(ns, blob, '10.79.2.1', 8000, RATE)
        url = 'http://10.79.2.1:8000/blob'
        try:
            # vectors=0: QEMU 7.2 under TCG crashes in msix_set_vector_notifiers when a
            # vhost-user device starts with MSI-X (see test_qemu.py).
            with HotplugQemu(kit, vhost_socket=sock, mac=mac, device_opts=',vectors=0',
                             append='memhp_default_state=online_movable',
                             extra_args=qemu_args(wd, 'memhp'),
                             log_path=os.path.join(wd, 'qemu.log')) as g:
                log = vd.log_tail(10 ** 7)
                check('memory table set' not in log and
                      re.search(r'memory region added at guest address', log) is not None,
                      'QEMU gave vnetd its memory with ADD_MEM_REG (CONFIGURE_MEM_SLOTS), '
                      'no SET_MEM_TABLE')
                regions0 = len(re.findall(r'memory region added', log))
                qmp = Qmp(os.path.join(wd, 'memhp.qmp'))
                guest_addr(g, '10.79.2.2')
                rc, _ = g.run('ping -c 2 -W 10 10.79.2.1', timeout=120)
                check(rc == 0, 'QEMU guest pings the host through vnetd')
                mem0 = mem_total_kib(g)

                # ---- plug a 256 MiB DIMM during a transfer ----
                start_download(g, url, 'plug')
                time.sleep(2)
                mark = len(vd.log_tail(10 ** 7))
                qmp.cmd('object-add', **{'qom-type': 'memory-backend-memfd', 'id': 'm1',
                                         'size': DIMM, 'share': True})
                qmp.cmd('device_add', driver='pc-dimm', id='d1', memdev='m1')
                m = wait_log(vd, r'memory region added at guest address (0x[0-9a-f]+) '
                                 r'\((\d+) bytes\), (\d+) region\(s\)', mark)
                check(m is not None and int(m.group(2)) == DIMM,
                      'vnetd mapped the DIMM with ADD_MEM_REG (%s)' % (m.group(0) if m else 'no line'))
                sha = wait_download(g, 'plug')
                check(sha == blob_sha, '%d MB transfer across the DIMM plug is byte-exact' % SIZE_MB)
                deadline = time.monotonic() + 30
                while mem_total_kib(g) < mem0 + (DIMM >> 10) * 9 // 10 and \
                        time.monotonic() < deadline:
                    time.sleep(1)
                mem1 = mem_total_kib(g)
                check(mem1 >= mem0 + (DIMM >> 10) * 9 // 10,
                      'the guest onlined the DIMM (MemTotal %d -> %d KiB)' % (mem0, mem1))
                # Use the new memory: the guest's page cache and socket buffers may land in it.
                g.run('dd if=/dev/zero of=/tmp/fill bs=1M count=160 2>/dev/null; rm -f /tmp/fill',
                      timeout=120)

                # ---- unplug it during another transfer ----
                start_download(g, url, 'unplug')
                time.sleep(2)
                mark = len(vd.log_tail(10 ** 7))
                qmp.cmd('device_del', id='d1')
                m = wait_log(vd, r'memory region removed at guest address 0x[0-9a-f]+ '
                                 r'\((\d+) bytes\)', mark, timeout=90)
                if m:
                    check(int(m.group(1)) == DIMM, 'the guest released the DIMM: vnetd unmapped '
                          'it with REM_MEM_REG (%s)' % m.group(0))
                    try:
                        qmp.cmd('object-del', id='m1')
                    except RuntimeError as e:
                        print('note: object-del m1: %s' % e)
                else:
                    print('note: the guest did not release the DIMM within 90 s of device_del '
                          '(no REM_MEM_REG); checking that vnetd keeps serving', flush=True)
                sha = wait_download(g, 'unplug')
                check(sha == blob_sha, '%d MB transfer across the DIMM unplug is byte-exact'
                      % SIZE_MB)
                rc, out = g.run('wget -q -O - %s | sha256sum' % url, timeout=300)
                check(rc == 0 and out.split()[0] == blob_sha, 'a transfer afterwards is byte-exact')
                log = vd.log_tail(10 ** 7)
                check('memory table set' not in log, 'no SET_MEM_TABLE at any time')
                print('memory regions at boot: %d, log lines: %s' % (regions0, '; '.join(
                    re.findall(r'memory region (?:added|removed)[^\n]*', log))), flush=True)
                qmp.close()
        finally:
            srv.kill()
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
