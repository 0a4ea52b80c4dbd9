#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libvirt end to end: two QEMU 7.2 TCG domains whose <interface type='vhostuser'> NICs are vnetd
switch ports, defined and started by Debian 12's libvirt 9.0 (docs/libvirt.md's XML).

libvirtd and virtlogd are started by hand (no systemd here), each instance in a private mount
namespace whose /run/libvirt, /etc/libvirt, /var/lib/libvirt, /var/log/libvirt and
/var/cache/libvirt are directories of this test (nothing of the host's libvirt is touched);
virsh reaches it through ?socket=. QEMU runs as libvirt-qemu, so vnetd runs with --socket-group
kvm. Each guest's console is a <serial type='unix'> socket driven with guest.py's protocol.
Checks: the guests ping each other and transfer byte-exact; virsh destroy + start reconnects;
a vnetd restart brings both back (<reconnect>); a live migration to a second libvirtd (its own
host UUID) moves vm1 to another vnetd port while it downloads, byte-exact. Every process is
ended by its PID.
"""

import grp
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid

from tests.kit.guest import DONE_RE, _Guest, GuestError
from tests.kit.harness import NoNs, Vnetd, check, fail, guest_kit, skip, workdir

SIZE_MB = 4
MIG_MB = 24
IP = {'vm1': '10.89.0.1', 'vm2': '10.89.0.2'}
MAC = {'vm1': '52:54:00:89:00:01', 'vm2': '52:54:00:89:00:02', 'vm0': '52:54:00:89:00:03'}
LIBVIRT_DIRS = ('/run/libvirt', '/etc/libvirt', '/var/lib/libvirt', '/var/log/libvirt',
                '/var/cache/libvirt')

# Started in its own mount namespace (unshare -m): private libvirt directories, then the daemons.
LAUNCH = r'''set -e
B=$1
for d in run lib log cache; do mkdir -p $B/$d; done
cp -a /etc/libvirt $B/etc
echo 'cgroup_controllers = [ ]' >> $B/etc/qemu.conf
echo "host_uuid = \"$2\"" >> $B/etc/libvirtd.conf
mount --bind $B/run /run/libvirt
mount --bind $B/lib /var/lib/libvirt
mount --bind $B/log /var/log/libvirt
mount --bind $B/cache /var/cache/libvirt
mount --bind $B/etc /etc/libvirt
virtlogd -d -p /run/libvirt/virtlogd.pid
exec libvirtd -p /run/libvirt/libvirtd.pid
'''

DOMAIN = '''<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <uuid>{uuid}</uuid>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 quiet loglevel=1 panic=-1</cmdline>
  </os>
  <memoryBacking>
    <source type='memfd'/>
    <access mode='shared'/>
  </memoryBacking>
  <on_reboot>destroy</on_reboot>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <interface type='vhostuser'>
      <mac address='{mac}'/>
      <source type='unix' path='{sock}' mode='client'>{reconnect}
      </source>
      <model type='virtio'/>
    </interface>
    <serial type='unix'>
      <source mode='bind' path='{console}'/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
  <qemu:override>
    <qemu:device alias='net0'>
      <qemu:frontend>
        <qemu:property name='vectors' type='unsigned' value='0'/>
      </qemu:frontend>
    </qemu:device>
  </qemu:override>
</domain>
'''


class Libvirtd:
    """virtlogd + libvirtd in a private mount namespace under base; virsh() talks to it."""

    def __init__(self, base):
        self.base = base
        self.uri = 'qemu:///system?socket=%s/run/libvirt-sock' % base
        self.proc = None

    def start(self):
        os.makedirs(self.base)
        os.chmod(self.base, 0o755)
        for d in LIBVIRT_DIRS:
            os.makedirs(d, exist_ok=True)
        self.log = open(self.base + '.log', 'ab')
        self.proc = subprocess.Popen(['unshare', '-m', '--propagation', 'private', 'sh', '-c',
                                      LAUNCH, 'launch', self.base, str(uuid.uuid4())],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def wait(self, timeout=60):
        """Until virsh answers (the first capability probe takes about 9 s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail('libvirtd exited (%s); log:\n%s' % (self.proc.returncode, self.tail()))
            if os.path.exists(self.base + '/run/libvirt-sock'):
                r = self.virsh('version', check=False, timeout=60)
                if r.returncode == 0:
                    return
            time.sleep(0.5)
        fail('libvirtd did not answer in %d s; log:\n%s' % (timeout, self.tail()))

    def tail(self):
        with open(self.base + '.log', 'rb') as f:
            return f.read()[-3000:].decode(errors='replace')

    def virsh(self, *args, check=True, timeout=120):
        r = subprocess.run(['virsh', '-c', self.uri] + list(args), capture_output=True,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            fail('virsh %s: %s%s' % (' '.join(args), r.stdout, r.stderr))
        return r

    def qemu_pids(self):
        pids = []
        qdir = self.base + '/run/qemu'
        for f in os.listdir(qdir) if os.path.isdir(qdir) else ():
            if f.endswith('.pid'):
                try:
                    pids.append(int(open(os.path.join(qdir, f)).read()))
                except (OSError, ValueError):
                    pass
        return pids

    def stop(self):
        """Every QEMU, libvirtd and virtlogd of this instance, by PID."""
        pids = self.qemu_pids()
        try:
            pids.append(int(open(self.base + '/run/virtlogd.pid').read()))
        except (OSError, ValueError):
            pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class _SockProc:
    """What _Guest expects of a process (stdin, stdout, poll), over a console socket."""

    def __init__(self, sock):
        self.sock = sock
        self.stdout = sock
        self.stdin = self
        self.pid = None

    def write(self, data):
        self.sock.sendall(data)

    def flush(self):
        pass

    def close(self):
        self.sock.close()

    def poll(self):
        return None

    def wait(self, timeout=None):
        return 0


class ConsoleGuest(_Guest):
    """A libvirt domain's serial console (a unix socket QEMU listens on), guest.py's protocol.
    The guest may have printed GUEST-READY before we connected: ready is a command answered."""

    def __init__(self, path, log_path):
        super().__init__(log_path)
        self.path = path

    def start(self, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.path)
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    fail('no console socket at %s' % self.path)
                time.sleep(0.2)
        self._log = open(self.log_path, 'ab')
        self._t0 = time.monotonic()
        self.proc = _SockProc(s)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        # Poke until the init's shell answers, then until a unique marker comes back alone.
        while True:
            self._send(b'echo CONSOLE-UP\n')
            try:
                self._wait_for(DONE_RE, 0, 3, 'console')
                break
            except GuestError:
                if time.monotonic() > deadline:
                    fail('guest console %s silent; tail:\n%s' % (self.path, self.tail()))
        # Every poke sent so far answers before this marker does: run() starts after it.
        marker = b'SYNC-%d-%d' % (os.getpid(), int(time.monotonic() * 1000))
        self._send(b'echo ' + marker + b'\n')
        self._wait_for(re.compile(re.escape(marker) + rb'\r?\n\r?\nGUEST-DONE -?\d+\r?\n'),
                       0, 60, 'console sync')
        return self

    def kill(self):
        if self.proc:
            try:
                self.proc.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.proc.sock.close()
            if self._reader:
                self._reader.join(timeout=5)
        if self._log:
            self._log.close()
            self._log = None

    def alive(self):
        return self.proc is not None and not self._eof


def domain_xml(wd, kit, name, sock, console, reconnect=True):
    return DOMAIN.format(reconnect="\n        <reconnect enabled='yes' timeout='2'/>"
                         if reconnect else '',name=name, kernel=os.path.join(kit, 'vmlinuz'),
                         initrd=os.path.join(kit, 'qemu-initrd.cpio.gz'), mac=MAC[name],
                         sock=sock, console=console,
                         uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, 'vnetd-e2e-' + name)))


def up(g, name):
    g.run('ip link set eth0 up; ip addr add %s/24 dev eth0 2>/dev/null; true' % IP[name],
          check=True)


def ping(g, peer, what, count=3):
    rc, out = g.run('ping -c %d -W 5 %s' % (count, IP[peer]), timeout=90)
    check(rc == 0, what)


def wait_ping(g, peer, what, timeout=60):
    """Until one ping gets through (a link that comes back), then a counted check."""
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        rc, _ = g.run('ping -c 1 -W 1 %s' % IP[peer], timeout=30)
        if rc == 0:
            check(True, '%s (after %.1f s)' % (what, time.monotonic() - t0))
            return
    check(False, what)


def main():
    if os.geteuid() != 0:
        skip('needs root (libvirtd, mount namespaces)')
    for exe, pkg in (('virsh', 'libvirt-clients'), ('libvirtd', 'libvirt-daemon-system'),
                     ('qemu-system-x86_64', 'qemu-system-x86'), ('unshare', 'util-linux')):
        if shutil.which(exe) is None:
            skip('%s is not installed (Debian package %s; make deps)' % (exe, pkg))
    if not os.path.exists('/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/'
                          'libvirt_driver_qemu.so'):
        skip("libvirt's QEMU driver is not installed (libvirt-daemon-driver-qemu; make deps)")
    kit = guest_kit()
    wd = workdir('libvirt')
    os.chmod(wd, 0o755)
    # The kernel and initrd where libvirt-qemu may read them (libvirt's DAC relabels copies).
    gk = os.path.join(wd, 'kit')
    os.makedirs(gk)
    for f in ('vmlinuz', 'qemu-initrd.cpio.gz'):
        shutil.copy(os.path.join(kit, f), gk)
    cons = os.path.join(wd, 'console')
    os.makedirs(cons)
    os.chmod(cons, 0o777)
    vsock = os.path.join(wd, 'vnetd')
    os.makedirs(vsock)
    os.chmod(vsock, 0o755)
    sock = {n: os.path.join(vsock, n + '.sock') for n in ('vm1', 'vm2', 'vm1b')}
    ports = ['socket=%s,switch,mac=%s' % (sock['vm1'], MAC['vm1']),
             'socket=%s,switch,mac=%s' % (sock['vm2'], MAC['vm2']),
             # vm1 after the migration: its MAC allowed on this port too
             'socket=%s,switch,allowed-macs=%s' % (sock['vm1b'], MAC['vm1'])]
    try:  # libvirt's QEMU user and its primary group (kvm on Debian 12)
        qgroup = grp.getgrgid(pwd.getpwnam('libvirt-qemu').pw_gid).gr_name
    except KeyError:
        skip('no user libvirt-qemu (libvirt-daemon-system not installed?)')
    vd = Vnetd(NoNs(), ports, vsock, extra=['--socket-group', qgroup])
    lva, lvb = Libvirtd(os.path.join(wd, 'lv-a')), Libvirtd(os.path.join(wd, 'lv-b'))
    guests = []
    t0 = time.monotonic()
    try:
        vd.start()
        lva.start()
        lvb.start()
        lva.wait()
        lvb.wait()
        print('libvirtd: two instances answer after %.1f s' % (time.monotonic() - t0), flush=True)
        # Without the socket group (a port with group=0, root's): QEMU, run as libvirt-qemu,
        # cannot connect and the domain does not start (docs/libvirt.md's first caveat).
        s0 = os.path.join(vsock, 'vm0.sock')
        vd.ctl('port-add', 'socket=%s,switch,mac=%s,group=0' % (s0, MAC['vm0']))
        path = os.path.join(wd, 'vm0.xml')
        with open(path, 'w') as f:
            f.write(domain_xml(wd, gk, 'vm0', s0, os.path.join(cons, 'vm0.console'),
                               reconnect=False))
        lva.virsh('define', path)
        r = lva.virsh('start', 'vm0', check=False)
        check(r.returncode != 0 and 'Permission denied' in r.stderr,
              'a socket without the group: virsh start fails: %s'
              % ' '.join(r.stderr.split())[-140:])
        lva.virsh('undefine', 'vm0')
        vd.ctl('port-del', 'p3')
        con = {n: os.path.join(cons, n + '.console') for n in ('vm1', 'vm2', 'vm1b')}
        for n in ('vm1', 'vm2'):
            path = os.path.join(wd, n + '.xml')
            with open(path, 'w') as f:
                f.write(domain_xml(wd, gk, n, sock[n], con[n]))
            lva.virsh('define', path)
            lva.virsh('start', n)
        g = {n: ConsoleGuest(con[n], os.path.join(wd, n + '.console.log')).start()
             for n in ('vm1', 'vm2')}
        guests += g.values()
        print('guests answer on their consoles %.1f s after start' % (time.monotonic() - t0),
              flush=True)
        info = vd.port_info()
        check(info['p0']['connected'] and info['p1']['connected'],
              "both domains' NICs connected to vnetd (QEMU as libvirt-qemu, --socket-group kvm)")
        for n in g:
            up(g[n], n)
        ping(g['vm1'], 'vm2', 'vm1 pings vm2 through vnetd switch ports')
        ping(g['vm2'], 'vm1', 'vm2 pings vm1')
        g['vm2'].run('dd if=/dev/urandom of=/tmp/f bs=1M count=%d 2>/dev/null; '
                     'httpd -p 8080 -h /tmp' % SIZE_MB, check=True, timeout=60)
        want = g['vm2'].run('sha256sum /tmp/f', check=True)[1].split()[0]
        rc, out = g['vm1'].run('wget -q -O - http://%s:8080/f | sha256sum' % IP['vm2'],
                               timeout=180)
        check(rc == 0 and out.split()[0] == want, '%d MB vm2 -> vm1 byte-exact' % SIZE_MB)
        rc, out = g['vm2'].run('wget -q -O - http://%s:8080/f | sha256sum' % IP['vm2'],
                               timeout=30)  # sanity of the server itself
        # virsh domifstat: libvirt has no counters of a vhost-user NIC (docs/libvirt.md).
        ifl = lva.virsh('domiflist', 'vm1').stdout.split('\n')[2:]
        dev = ifl[0].split()[0] if ifl and ifl[0].split() else MAC['vm1']
        r = lva.virsh('domifstat', 'vm1', dev if dev != '-' else MAC['vm1'], check=False)
        print('virsh domifstat vm1: rc %d: %s' % (r.returncode, (r.stderr or r.stdout).strip()),
              flush=True)

        # virsh destroy + start: a new QEMU connects to the same port.
        g['vm1'].kill()
        guests.remove(g['vm1'])
        conns = vd.port_info()['p0']['connections']
        lva.virsh('destroy', 'vm1')
        lva.virsh('start', 'vm1')
        g['vm1'] = ConsoleGuest(con['vm1'], os.path.join(wd, 'vm1.console.log')).start()
        guests.append(g['vm1'])
        up(g['vm1'], 'vm1')
        check(vd.port_info()['p0']['connections'] == conns + 1,
              'virsh destroy + start: the new QEMU connected to p0 again')
        wait_ping(g['vm1'], 'vm2', 'vm1 pings vm2 after destroy + start')

        # vnetd restart: <reconnect enabled='yes' timeout='2'/> brings both NICs back.
        rc = vd.stop()
        check(rc == 0, 'vnetd stopped (SIGTERM)')
        vd = Vnetd(NoNs(), ports, vsock, extra=['--socket-group', qgroup])
        vd.start()
        t1 = time.monotonic()
        while time.monotonic() - t1 < 30:
            info = vd.port_info()
            if info['p0']['connected'] and info['p1']['connected']:
                break
            time.sleep(0.2)
        check(info['p0']['connected'] and info['p1']['connected'],
              'vnetd restarted: both domains reconnected in %.1f s (<reconnect timeout=2>)'
              % (time.monotonic() - t1))
        wait_ping(g['vm1'], 'vm2', 'vm1 pings vm2 after the vnetd restart')
        ping(g['vm2'], 'vm1', 'vm2 pings vm1 after the vnetd restart')

        # Live migration of vm1 to the second libvirtd, onto vnetd port p2, mid-download.
        g['vm2'].run('dd if=/dev/urandom of=/tmp/m bs=1M count=%d 2>/dev/null' % MIG_MB,
                     check=True, timeout=120)
        want = g['vm2'].run('sha256sum /tmp/m', check=True)[1].split()[0]
        dest = os.path.join(wd, 'vm1-dest.xml')
        with open(dest, 'w') as f:
            f.write(domain_xml(wd, gk, 'vm1', sock['vm1b'], con['vm1b']))
        # Paced by the server (64 KiB, then 30 ms: about 2 MB/s) so that it outlasts the
        # migration; busybox nc on both ends.
        g['vm2'].run("echo 'i=0; while [ $i -lt %d ]; do dd if=/tmp/m bs=65536 skip=$i count=1 "
                     "2>/dev/null; usleep 30000; i=$((i+1)); done' > /tmp/slow.sh; "
                     "(nc -l -p 8081 -e sh /tmp/slow.sh &) </dev/null >/dev/null 2>&1"
                     % (MIG_MB * 16), check=True)
        time.sleep(0.5)
        g['vm1'].run('(nc %s 8081 | sha256sum > /tmp/sum) </dev/null >/dev/null 2>&1 &'
                     % IP['vm2'], check=True)
        time.sleep(2)
        rc, _ = g['vm1'].run('[ -s /tmp/sum ]')
        check(rc != 0, 'the %d MB download is under way when the migration starts' % MIG_MB)
        before = vd.stats()['p2']
        r = lva.virsh('migrate', '--live', 'vm1', lva.uri, check=False, timeout=60)
        check(r.returncode != 0, 'libvirt refuses a migration to the same libvirtd: %s'
              % ' '.join(r.stderr.split())[-120:])
        tm = time.monotonic()
        r = lva.virsh('migrate', '--live', '--xml', dest, 'vm1', lvb.uri,
                      '--migrateuri', 'tcp://127.0.0.1:49152', check=False, timeout=300)
        print('virsh migrate --live took %.1f s' % (time.monotonic() - tm), flush=True)
        if r.returncode != 0:
            fail('virsh migrate --live: %s%s' % (r.stdout, r.stderr))
        g['vm1'].kill()
        guests.remove(g['vm1'])
        for _ in range(100):
            info = vd.port_info()
            if info['p2']['connected'] and not info['p0']['connected']:
                break
            time.sleep(0.1)
        print('after the migration: p0 connected %s, p2 connected %s; vm1 on the second '
              'libvirtd: %s' % (info['p0']['connected'], info['p2']['connected'],
                                lvb.virsh('domstate', 'vm1', check=False).stdout.strip()),
              flush=True)
        check(info['p2']['connected'] and not info['p0']['connected'],
              'virsh migrate --live: vm1 now on p2 (the second libvirtd), p0 released')
        g['vm1'] = ConsoleGuest(con['vm1b'], os.path.join(wd, 'vm1b.console.log')).start()
        guests.append(g['vm1'])
        got = ''
        for _ in range(240):
            rc, out = g['vm1'].run('cat /tmp/sum 2>/dev/null', timeout=30)
            if out.strip():
                got = out.split()[0]
                break
            time.sleep(0.5)
        check(got == want, 'the %d MB download across the migration is byte-exact' % MIG_MB)
        after = vd.stats()['p2']
        moved = sum(after[q]['packets'] - before[q]['packets'] for q in after)
        check(moved > 50, 'part of it went through p2, after the migration (%d packets)' % moved)
        ping(g['vm1'], 'vm2', 'migrated vm1 pings vm2')
        print('PASS (%.1f s)' % (time.monotonic() - t0))
    finally:
        for gg in guests:
            gg.kill()
        lvb.stop()
        lva.stop()
        vd.stop()


if __name__ == '__main__':
    main()
