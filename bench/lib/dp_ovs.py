# SPDX-License-Identifier: MIT
"""OVS-DPDK as a switch-path peer of bench/datapath.py: private ovsdb-server and ovs-vswitchd.

Debian's openvswitch-switch-dpdk (ovs-vswitchd-dpdk, started directly: the system's
alternatives are left alone), with private OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR under the run's work
directory, so nothing of a system OVS is touched. DPDK needs hugepages: hugepages() reserves
them (/proc/sys/vm/nr_hugepages) and mounts hugetlbfs at a private directory once per benchmark,
and registers the undo (unmount, the old page count) with the janitor, so any exit gives them
back. One OvsDpdk is a netdev bridge with two dpdkvhostuserclient ports (OVS connects to the
traffic source's virtio-user sockets, which listen: server=1) and the NORMAL (learning) action,
its PMD thread and every other thread of ovs-vswitchd pinned on `cpu`.
"""

import os
import shutil
import subprocess
import tempfile
import time

from .dp_procs import BenchError, JANITOR, stop_proc

VSWITCHD = '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk'
SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
HUGEPAGES = 600          # 2 MiB pages: dpdk-socket-mem=512 and some to spare
SOCKET_MEM = 512
_huge = {}


def available():
    """None if OVS-DPDK can run here, else why not."""
    if os.geteuid() != 0:
        return 'needs root (hugepages)'
    for exe in (VSWITCHD, shutil.which('ovsdb-server'), shutil.which('ovs-vsctl'),
                shutil.which('ovsdb-tool')):
        if not exe or not os.access(exe, os.X_OK):
            return 'Debian openvswitch-switch-dpdk is not installed (apt-get install -y ' \
                   'openvswitch-switch-dpdk)'
    return None


def hugepages(wd):
    """Reserve HUGEPAGES 2 MiB pages and mount hugetlbfs at a private directory (once); the
    janitor unmounts it and restores the old page count."""
    if _huge.get('dir'):
        return _huge['dir']
    path = '/proc/sys/vm/nr_hugepages'
    with open(path) as f:
        old = int(f.read())
    mnt = tempfile.mkdtemp(prefix='hugetlbfs-', dir=wd)

    def undo():
        subprocess.run(['umount', mnt], capture_output=True)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
        with open(path, 'w') as f:
            f.write(str(old))
        _huge.clear()
    JANITOR.undo.append(undo)
    if old < HUGEPAGES:
        with open(path, 'w') as f:
            f.write(str(HUGEPAGES))
    with open(path) as f:
        got = int(f.read())
    if got < HUGEPAGES:
        raise BenchError('OVS-DPDK: only %d of %d hugepages could be reserved' % (got, HUGEPAGES))
    r = subprocess.run(['mount', '-t', 'hugetlbfs', '-o', 'pagesize=2M', 'nodev', mnt],
                       capture_output=True, text=True)
    if r.returncode:
        raise BenchError('OVS-DPDK: mount hugetlbfs: %s' % r.stderr.strip())
    _huge['dir'] = mnt
    return mnt


class OvsDpdk:
    """ovsdb-server + ovs-vswitchd (DPDK) with a netdev bridge of dpdkvhostuserclient ports."""

    def __init__(self, wd, tag, socks, size, cpu=0):
        self.tag = tag
        self.dir = tempfile.mkdtemp(prefix='ovs-', dir=wd)
        self.env = dict(os.environ)
        for k in ('RUN', 'DB', 'LOG'):
            os.makedirs(os.path.join(self.dir, k.lower()))
            self.env['OVS_%sDIR' % k] = os.path.join(self.dir, k.lower())
        self.db_sock = os.path.join(self.dir, 'run', 'db.sock')
        self.db = self.vswitchd = None
        self.prefix = 'ovs-%d-%s' % (os.getpid(), os.path.basename(self.dir))
        JANITOR.prefixes.append(self.prefix)
        huge = hugepages(wd)
        try:
            self._start(huge, socks, size, cpu)
        except BaseException:
            self.close()
            raise

    def _run(self, *argv, check=True, timeout=30):
        r = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode:
            raise BenchError('%s: %s: %s' % (self.tag, ' '.join(argv[:3]),
                                             (r.stderr or r.stdout).strip()[:500]))
        return r.stdout.strip()

    def vsctl(self, *args, **kw):
        return self._run('ovs-vsctl', '--db=unix:' + self.db_sock, '--timeout=30', *args, **kw)

    def _log(self, name):
        return os.path.join(self.dir, 'log', name)

    def _start(self, huge, socks, size, cpu):
        conf = os.path.join(self.dir, 'db', 'conf.db')
        self._run('ovsdb-tool', 'create', conf, SCHEMA)
        self.db = JANITOR.proc(subprocess.Popen(
            ['ovsdb-server', conf, '--remote=punix:' + self.db_sock,
             '--pidfile=' + os.path.join(self.dir, 'run', 'ovsdb-server.pid'),
             '--log-file=' + self._log('ovsdb-server.log')],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while not os.path.exists(self.db_sock):
            if time.monotonic() > deadline or self.db.poll() is not None:
                raise BenchError('%s: ovsdb-server did not start' % self.tag)
            time.sleep(0.05)
        mask = '0x%x' % (1 << cpu)
        self.vsctl('--no-wait', 'init')
        self.vsctl('--no-wait', 'set', 'Open_vSwitch', '.',
                   'other_config:dpdk-init=true',
                   'other_config:dpdk-extra="--no-pci --file-prefix %s"' % self.prefix,
                   'other_config:dpdk-socket-mem=%d' % SOCKET_MEM,
                   'other_config:dpdk-hugepage-dir=%s' % huge,
                   'other_config:dpdk-lcore-mask=%s' % mask,
                   'other_config:pmd-cpu-mask=%s' % mask)
        self.vswitchd = JANITOR.proc(subprocess.Popen(
            ['taskset', '-c', str(cpu), VSWITCHD, 'unix:' + self.db_sock,
             '--pidfile=' + os.path.join(self.dir, 'run', 'ovs-vswitchd.pid'),
             '--log-file=' + self._log('ovs-vswitchd.log')],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while self.vsctl('get', 'Open_vSwitch', '.', 'dpdk_initialized', check=False) != 'true':
            if time.monotonic() > deadline or self.vswitchd.poll() is not None:
                raise BenchError('%s: ovs-vswitchd did not initialise DPDK (%s)'
                                 % (self.tag, self.tail_log()))
            time.sleep(0.2)
        mtu = max(1500, size - 14)
        cmd = ['add-br', 'br0', '--', 'set', 'bridge', 'br0', 'datapath_type=netdev']
        for i, s in enumerate(socks):
            cmd += ['--', 'add-port', 'br0', 'vhu%d' % i, '--', 'set', 'Interface', 'vhu%d' % i,
                    'type=dpdkvhostuserclient', 'options:vhost-server-path=%s' % s,
                    'mtu_request=%d' % mtu]
        self.vsctl(*cmd)
        self._run('ovs-ofctl', 'del-flows', 'br0', timeout=10)
        self._run('ovs-ofctl', 'add-flow', 'br0', 'actions=NORMAL', timeout=10)

    def tail_log(self, n=600):
        try:
            with open(self._log('ovs-vswitchd.log')) as f:
                return f.read()[-n:]
        except OSError:
            return 'no log'

    def wait_ports(self, timeout=30):
        """Until both vhost ports are up (OVS connected to the source's sockets)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = [self.vsctl('get', 'Interface', 'vhu%d' % i, 'link_state', check=False)
                  for i in (0, 1)]
            if st == ['up', 'up']:
                return
            time.sleep(0.2)
        raise BenchError('%s: OVS vhost ports not up (%s)' % (self.tag, self.tail_log()))

    @property
    def pid(self):
        return self.vswitchd.pid

    def close(self):
        for p in (self.vswitchd, self.db):
            if p is not None:
                stop_proc(p, timeout=10)
                JANITOR.forget(p)
        self.vswitchd = self.db = None
        shutil.rmtree(self.dir, ignore_errors=True)
