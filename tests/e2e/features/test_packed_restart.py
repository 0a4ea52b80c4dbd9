# SPDX-License-Identifier: MIT
"""Packed rings across a vnetd restart and a frontend reconnect, with real frontends.

1. QEMU virtio-net-pci packed=on on a tap port with packed=on (QEMU 7.2, Linux 6.1 guest; then
   QEMU 11.1 in_order=on with a Linux 7.2 guest on a packed=on,in-order=on port: IN_ORDER on
   packed rings), vnetd the vhost-user client
   (QEMU listens, as in test_restart.py) with --state-dir. The guest downloads a blob; vnetd is
   stopped (SIGTERM) in the middle of it and started again with the same arguments. QEMU keeps
   no packed position it could send back (GET_VRING_BASE failed on the closed socket: it resends
   the base of its last start), so the stopped vnetd kept where each packed ring stopped in its
   state file (version 4, "packed") and the new one resumes there: the download finishes
   byte-exact, the guest's driver reports no bad descriptor id (nothing used twice, nothing
   handed back that was not the driver's), and the guest pings the host afterwards. Then a
   reconnect to the same vnetd: a second download, the port removed (port-del) and added again
   (port-add) in the middle of it; QEMU reconnects, the rings resume where the removal stopped
   them, the download finishes byte-exact.
2. DPDK testpmd virtio-user packed_vq=1 (then packed_vq=1,in_order=1), server=1, on two switch
   ports of a client-mode vnetd: traffic, vnetd SIGKILLed and started again, virtio-user
   reconnects (it resets its packed rings; its base, the avail half only, stands), and traffic
   flows again: every frame testpmd received after the restart went through the new vnetd's
   rings (none made up) and most frames were delivered.
"""

import hashlib
import json
import os
import signal
import subprocess
import time

from tests.kit.harness import (Netns, NoNs, QemuGuest, Vnetd, check, fail, guest_addr, guest_kit,
                               make_blob, new_qemu, require_program, require_root_and_tun, workdir)

HOST_IP, GUEST_IP = '10.79.34.1', '10.79.34.2'
TAP = 'vpr0'
MAC = '52:54:00:79:34:02'
BLOB_MB = 48
KILL_AFTER = 2 << 20  # RX bytes of the download before the stop
SW_MAC0, SW_MAC1 = '02:00:00:00:35:01', '02:00:00:00:35:02'


class ServerQemu(QemuGuest):
    """QEMU whose vhost-user chardev listens (server=on,wait=off): vnetd connects to it."""

    def argv(self):
        a = super().argv()
        i = a.index('socket,id=c0,path=%s' % self.vhost_socket)
        a[i] += ',server=on,wait=off'
        return a


def wait_connected(vd, ports, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = vd.port_info()
            if all(info[p]['connected'] for p in ports):
                return True
        except Exception:  # noqa: BLE001 (control socket not up yet)
            pass
        time.sleep(0.1)
    return False


def file_sha(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def state_files(state):
    out = []
    for n in sorted(os.listdir(state)):
        with open(os.path.join(state, n)) as f:
            out.append(json.load(f))
    return out


def start(ns, spec, wd, name, extra):
    vd = Vnetd(ns, spec, os.path.join(wd, name), extra=extra)
    os.mkdir(vd.workdir)
    return vd.__enter__()


def reconnect_mid_download(vd, g, sha, port_spec):
    """The same vnetd drops QEMU's connection mid-download (port-del) and takes it again
    (port-add, the same spec): QEMU resends its stale base, the port resumes the packed rings
    where the removal stopped them (kept in the state file), the download finishes byte-exact."""
    name = 'p0'
    b0 = vd.stats()[name][0]['bytes']
    g.run('rm -f /tmp/sha; (wget -q -O - http://%s:8000/blob | sha256sum > /tmp/sha; echo done '
          '>> /tmp/sha) >/dev/null 2>&1 &' % HOST_IP, check=True)
    deadline = time.monotonic() + 120
    while vd.stats()[name][0]['bytes'] - b0 < KILL_AFTER:
        if time.monotonic() > deadline:
            fail('second download did not start; vnetd log:\n' + vd.log_tail())
        time.sleep(0.005)
    vd.ctl('port-del', name)
    resumed = vd.log_tail(1000000).count('resumes where it stopped')
    name = vd.ctl('port-add', port_spec).stdout.strip().split()[-1]
    check(wait_connected(vd, [name], 60), 'port-del then port-add mid-download: QEMU reconnected '
          '(port %s)' % name)
    deadline = time.monotonic() + 300
    out = ''
    while time.monotonic() < deadline:
        rc, out = g.run('cat /tmp/sha 2>/dev/null', timeout=60)
        if 'done' in out:
            break
        time.sleep(1)
    log = vd.log_tail(1000000)
    # what the removal kept and what each start made of it (on failure, the reason is here)
    print('\n'.join(line for line in log.splitlines()[-200:]
                    if 'packed' in line or 'base' in line or 'kept' in line), flush=True)
    check(log.count('resumes where it stopped') >= resumed + 2,
          'after the reconnect both packed rings resumed where the removal stopped them')
    check(out.split()[:1] == [sha], 'the download across the reconnect finished byte-exact '
          '(sha256 %s)' % (out.split()[:1] or ['none'])[0][:16])
    rc, _ = g.run('ping -c 3 -W 10 %s' % HOST_IP, timeout=60)
    check(rc == 0, 'guest pings the host after the reconnect')
    return name


def qemu_case(kit, wd, tag='', qemu=None, in_order=False):
    """The QEMU case; in_order: port in-order=on and virtio-net-pci in_order=on (QEMU >= 9.1
    with a guest driver that has IN_ORDER: Linux >= 6.17)."""
    sock = os.path.join(wd, 'qemu-vhost%s.sock' % tag)
    state = os.path.join(wd, 'state-qemu' + tag)
    os.mkdir(state)
    if not os.path.exists(os.path.join(wd, 'blob')):
        make_blob(os.path.join(wd, 'blob'), BLOB_MB)
    sha = file_sha(os.path.join(wd, 'blob'))
    spec = ['socket=%s,client,tap=%s,packed=on%s' % (sock, TAP, ',in-order=on' if in_order else '')]
    extra = ['--state-dir', state]
    dev = ',vectors=0,packed=on' + (',in_order=on' if in_order else '')
    with Netns('vnetd-e2e-pkrs') as ns:
        ns.add_tap(TAP, HOST_IP + '/24')
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        vd = start(ns, spec, wd, 'v1' + tag, extra)
        try:
            with ServerQemu(kit, vhost_socket=sock, mac=MAC, device_opts=dev, qemu=qemu,
                            log_path=os.path.join(wd, 'qemu%s.log' % tag)) as g:
                check(wait_connected(vd, ['p0'], 60), 'vnetd (client) connected to QEMU')
                info = vd.port_info()['p0']
                check(info['ring'] == 'packed' and info['in_order'] == in_order,
                      'QEMU%s: vnetctl ring %s, in_order %s (features %s)'
                      % (dev, info['ring'], info['in_order'], info['features']))
                guest_addr(g, GUEST_IP)
                rc, _ = g.run('ping -c 3 -W 10 %s' % HOST_IP, timeout=120)
                check(rc == 0, 'guest pings the host over packed rings')
                b0 = vd.stats()['p0'][0]['bytes']
                g.run('(wget -q -O - http://%s:8000/blob | sha256sum > /tmp/sha; echo done '
                      '>> /tmp/sha) >/dev/null 2>&1 &' % HOST_IP, check=True)
                deadline = time.monotonic() + 120
                while vd.stats()['p0'][0]['bytes'] - b0 < KILL_AFTER:
                    if time.monotonic() > deadline:
                        fail('download did not start; vnetd log:\n' + vd.log_tail())
                    time.sleep(0.005)
                moved = vd.stats()['p0'][0]['bytes'] - b0
                rc = vd.stop()
                check(rc == 0 and moved < BLOB_MB << 20, 'vnetd stopped (SIGTERM, status %s) '
                      'mid-download (%.1f of %d MiB)' % (rc, moved / 1048576.0, BLOB_MB))
                files = state_files(state)
                kept = files[0].get('packed', []) if files else []
                print('state file after the stop:', json.dumps(files), flush=True)
                check(len(files) == 1 and files[0]['version'] == 4 and
                      sum(1 for e in kept if e) >= 2 and
                      all(e['in_order'] == in_order for e in kept if e),
                      'the state file (version 4) keeps where the packed rings stopped')

                vd = start(ns, spec, wd, 'v2' + tag, extra)
                check(wait_connected(vd, ['p0'], 60), 'the new vnetd reconnected to QEMU')
                deadline = time.monotonic() + 300
                out = ''
                while time.monotonic() < deadline:
                    rc, out = g.run('cat /tmp/sha 2>/dev/null', timeout=60)
                    if 'done' in out:
                        break
                    time.sleep(1)
                log = vd.log_tail(100000)
                print('\n'.join(line for line in log.splitlines() if 'packed' in line), flush=True)
                check('resumes where it stopped' in log,
                      'the new vnetd resumed the packed rings where the old one stopped')
                check(out.split()[:1] == [sha], 'the download finished byte-exact across the '
                      'restart (sha256 %s)' % (out.split()[:1] or ['none'])[0][:16])
                rc, _ = g.run('ping -c 3 -W 10 %s' % HOST_IP, timeout=60)
                check(rc == 0, 'guest still pings the host')
                port = reconnect_mid_download(vd, g, sha, spec[0])
                rc, dmesg = g.run('dmesg | grep -i -E "virtio|virtqueue" | grep -i -E '
                                  '"not a head|id .* out of range|wrong|broken|unexpected" || true')
                check(dmesg.strip() == '', 'the guest driver saw no bad used descriptor (%s)'
                      % dmesg.strip()[:200])
                st = vd.stats()[port]
                print('after the restart and reconnect %s:' % port,
                      {i: (q['kind'], q['packets']) for i, q in st.items()}, flush=True)
                check(not any(q.get('broken') for q in st.values()), 'no queue broken')
        finally:
            http.kill()
            vd.stop()


def traffic(fe, vd, seconds=1):
    """flowgen for `seconds`: (frames testpmd sent, frames it received, vnetd's TX-ring and
    RX-ring packet counts over the run)."""
    fe.cmd('clear port stats all')
    before = vd.stats()
    fe.cmd('start')
    time.sleep(seconds)
    fe.cmd('stop')
    time.sleep(0.5)
    st = fe.port_stats()
    after = vd.stats()
    moved = {k: sum(after[n][q]['packets'] - before[n][q]['packets']
                    for n in after for q in after[n] if after[n][q]['kind'] == k)
             for k in ('rx', 'tx')}
    return (sum(p['tx_packets'] for p in st.values()), sum(p['rx_packets'] for p in st.values()),
            moved)


def check_traffic(what, sent, got, moved):
    print('%s: testpmd sent %d, received %d; vnetd took %d from TX rings, put %d into RX rings'
          % (what, sent, got, moved['tx'], moved['rx']), flush=True)
    check(moved['tx'] <= sent and got <= moved['rx'] <= moved['tx'] and got > 0,
          '%s: every frame received went through vnetd\'s rings (none made up or used twice)' % what)
    check(sent > 1000 and got >= sent // 2, '%s: most frames delivered (%d of %d)' % (what, got, sent))


def dpdk_case(wd, vu_extra, want_io):
    """testpmd virtio-user (server=1, vu_extra) on two client-mode switch ports; vnetd SIGTERMed
    and then SIGKILLed, restarted each time with --state-dir; traffic before and after."""
    from bench.lib import dp_procs as P
    tag = 'io%d' % want_io
    socks = [os.path.join(wd, '%s-sw%d.sock' % (tag, i)) for i in range(2)]
    state = os.path.join(wd, 'state-' + tag)
    os.mkdir(state)
    spec = ['socket=%s,client,switch,mac=%s,allowed-macs=00:01:02:03:04:00,packed=on,in-order=on'
            % (s, m) for s, m in zip(socks, (SW_MAC0, SW_MAC1))]
    extra = ['--state-dir', state]
    pfx = 'vnetd-e2e-pkrs-%s-%d' % (tag, os.getpid())
    # virtio-user server=1 waits in its probe for the client: vnetd (client ports) goes first.
    vd = start(NoNs(), spec, wd, tag + '-v1', extra)
    fe = None
    try:
        fe = P.Testpmd('virtio-user', P.eal_args(pfx, 0, [
            'net_virtio_user%d,path=%s,queues=1,mac=%s,server=1%s' % (i, s, m, vu_extra)
            for i, (s, m) in enumerate(zip(socks, (SW_MAC0, SW_MAC1)))], mem_mb=512),
            ['--forward-mode=flowgen', '--total-num-mbufs=8192', '--eth-peer=0,%s' % SW_MAC1,
             '--eth-peer=1,%s' % SW_MAC0], os.path.join(wd, 'testpmd-%s.log' % tag))
        fe.wait_ready(120)
        check(wait_connected(vd, ['p0', 'p1'], 60), 'testpmd%s: vnetd connected to both '
              'virtio-user sockets' % vu_extra)
        info = vd.port_info()
        check(all(info[n]['ring'] == 'packed' and info[n]['in_order'] == want_io
                  for n in ('p0', 'p1')), 'testpmd%s: ring packed, in_order %s on both ports'
              % (vu_extra, want_io))
        check_traffic('testpmd%s before the restarts' % vu_extra, *traffic(fe, vd))
        for n, how in enumerate(('SIGTERM', 'SIGKILL')):
            if how == 'SIGTERM':
                check(vd.stop() == 0, 'testpmd%s: vnetd stopped (SIGTERM)' % vu_extra)
                files = state_files(state)
                check(len(files) == 2 and all(f['version'] == 4 and any(f['packed'])
                                              for f in files),
                      'testpmd%s: both state files keep where the packed rings stopped' % vu_extra)
            else:
                os.killpg(vd.proc.pid, signal.SIGKILL)
                vd.proc.wait()
                vd.stop()
                files = state_files(state)
                check(not any(f.get('packed') and any(f['packed']) for f in files),
                      'testpmd%s: vnetd SIGKILLed while the rings ran: no stale position kept'
                      % vu_extra)
            vd = start(NoNs(), spec, wd, '%s-v%d' % (tag, n + 2), extra)
            check(wait_connected(vd, ['p0', 'p1'], 60), 'testpmd%s: virtio-user reconnected '
                  'to the new vnetd (after %s)' % (vu_extra, how))
            if how == 'SIGTERM':
                # The kept position is not taken: virtio-user reset its rings (base 0x8000).
                # Connected comes before the rings start: wait (bounded) for the four starts.
                deadline = time.monotonic() + 60
                log = vd.log_tail(100000)
                while log.count('base 0x00008000 stands') < 4 and time.monotonic() < deadline:
                    time.sleep(0.1)
                    log = vd.log_tail(100000)
                check(log.count('base 0x00008000 stands') >= 4 and
                      'resumes where it stopped' not in log,
                      'testpmd%s: virtio-user\'s own base stands (it resets packed rings on '
                      'reconnect)' % vu_extra)
            check_traffic('testpmd%s after %s and restart' % (vu_extra, how), *traffic(fe, vd))
        check(vd.alive(), 'vnetd still running')
    finally:
        if fe:
            fe.quit()
        P.JANITOR.clean()
        vd.stop()


def main():
    require_root_and_tun()
    require_program('qemu-system-x86_64', 'qemu-system-x86')
    kit = guest_kit()
    if not os.path.exists(os.path.join(kit, 'qemu-initrd.cpio.gz')):
        fail('guest kit has no QEMU initrd')
    wd = workdir('packed-restart')
    t0 = time.monotonic()
    qemu_case(kit, wd)
    print('QEMU 7.2 case %.1f s' % (time.monotonic() - t0), flush=True)
    # IN_ORDER on packed rings: sid's QEMU 11 (in_order=on) and sid's Linux 7.2 guest kernel.
    qemu11 = new_qemu('sid')
    qemu_case(guest_kit('sid'), wd, '-io', qemu11, in_order=True)
    print('QEMU 11 in_order case %.1f s' % (time.monotonic() - t0), flush=True)
    require_program('dpdk-testpmd', 'dpdk')
    for extra, want_io in ((',packed_vq=1,in_order=0', False), (',packed_vq=1,in_order=1', True)):
        dpdk_case(wd, extra, want_io)
    print('total %.1f s' % (time.monotonic() - t0), flush=True)


if __name__ == '__main__':
    main()
