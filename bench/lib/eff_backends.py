# SPDX-License-Identifier: MIT
"""bench/efficiency.py's backends (vnetd variants, OVS-DPDK with and without pmd-maxsleep, DPDK's
vhost PMD) and its paced driver (bench/paced/paced), each backend pinned on CPU 0, the driver on 1.

A configuration is named on the command line (--configs); the names say what runs:

  vnetd              vnetd with its defaults
  vnetd-pollN        vnetd --poll-us N          (vnetd-pollauto: --poll-us auto)
  NAME=ARGS          a vnetd with these daemon options, e.g. 'vnetd-cap10=--poll-us auto
                     --poll-cap 10' (NAME starts with 'vnetd')
  ovs                OVS-DPDK 3.1 (bench/lib/dp_ovs.py): its PMD thread polls all the time
  ovs-sleepN         the same with other_config:pmd-maxsleep=N (us; load-based PMD sleeping)
  dpdk               DPDK's vhost PMD: testpmd net_vhost0/1 in io forwarding (polls all the time)

The switches see the driver's two ports as two guests: port 0 sends from 02:00:00:00:00:01 to
:02 and port 1 the other way (vnetd's ports get those MACs, port security on as by default).
"""

import json
import os
import shutil
import subprocess

from . import common
from . import dp_procs as P
from .dp_procs import BenchError, JANITOR, Testpmd, log

MACS = ('02:00:00:00:00:01', '02:00:00:00:00:02')
BACKEND_CPU, DRIVER_CPU = '0', '1'
DPDK_BE_MAIN = 1            # testpmd's main lcore on CPU 1, its forwarding lcore on CPU 0
OVS_APT = 'openvswitch-switch-dpdk'
# vnetd's queue counters summed over both ports, per queue kind: (name, kind, key)
VNETD_COUNTERS = (('tx_packets', 'tx', 'packets'), ('rx_packets', 'rx', 'packets'),
                  ('tx_kicks', 'tx', 'kicks'), ('rx_kicks', 'rx', 'kicks'),
                  ('rx_notifications', 'rx', 'notifications'),
                  ('tx_notifications', 'tx', 'notifications'), ('tx_polls', 'tx', 'polls'),
                  ('tx_poll_ns', 'tx', 'poll_ns'), ('rx_no_buffers', 'rx', 'rx_no_buffers'),
                  ('tx_dropped', 'tx', 'dropped'))


def parse_config(spec):
    """A --configs entry as {'name', 'kind', 'args' (vnetd), 'maxsleep' (ovs), 'label'}."""
    spec = spec.strip()
    name, _, extra = spec.partition('=')
    if extra:
        if not name.startswith('vnetd'):
            raise ValueError('%s: only vnetd configurations take options' % spec)
        return {'name': name, 'kind': 'vnetd', 'args': extra.split(),
                'label': 'vnetd %s' % extra}
    if name == 'vnetd':
        return {'name': name, 'kind': 'vnetd', 'args': [], 'label': 'vnetd (defaults)'}
    if name.startswith('vnetd-poll'):
        n = name[len('vnetd-poll'):]
        if not (n.isdigit() or n == 'auto'):
            raise ValueError('%s: vnetd-pollN with N a number of us, or vnetd-pollauto' % name)
        return {'name': name, 'kind': 'vnetd', 'args': ['--poll-us', n],
                'label': 'vnetd --poll-us %s' % n}
    if name == 'ovs':
        return {'name': name, 'kind': 'ovs', 'maxsleep': None, 'label': 'OVS-DPDK'}
    if name.startswith('ovs-sleep') and name[len('ovs-sleep'):].isdigit():
        us = int(name[len('ovs-sleep'):])
        return {'name': name, 'kind': 'ovs', 'maxsleep': us,
                'label': 'OVS-DPDK pmd-maxsleep=%d' % us}
    if name == 'dpdk':
        return {'name': name, 'kind': 'dpdk', 'label': 'DPDK vhost PMD'}
    raise ValueError('unknown configuration %r (vnetd, vnetd-pollN, NAME=ARGS, ovs, ovs-sleepN, '
                     'dpdk)' % spec)


def ensure_ovs_dpdk(install):
    """None when OVS-DPDK can run; else why not. With install, Debian's openvswitch-switch-dpdk
    is installed first when missing (apt-get, waiting for apt's lock; the apt sources are left
    as they are). Its postinst only registers /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
    as an alternative of lower priority than plain OVS's (the ovs-vswitchd name keeps pointing at
    the plain build the OVN test uses) and starts nothing; the DPDK package it pulls in enables
    a dpdk.service that only runs at boot under systemd. This checks that nothing of it runs."""
    from . import dp_ovs
    why = dp_ovs.available()
    if why and install and os.geteuid() == 0 and 'not installed' in why:
        log('efficiency: installing %s (apt-get) ...' % OVS_APT)
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        r = subprocess.run(['apt-get', 'install', '-y', '-q', '-o', 'DPkg::Lock::Timeout=300',
                            OVS_APT], env=env, capture_output=True, text=True, timeout=1800)
        if r.returncode:
            return 'apt-get install %s failed: %s' % (OVS_APT, (r.stderr or r.stdout)[-500:])
        stray = subprocess.run(['pgrep', '-a', '-f', 'ovs-vswitchd|ovsdb-server|dpdk-'],
                               capture_output=True, text=True).stdout.strip()
        if stray:
            log('efficiency: note: OVS/DPDK processes running after the install (not ours, '
                'left alone):\n%s' % stray)
        why = dp_ovs.available()
    return why


def driver_path(build, wd):
    """The paced driver: VNETD_BUILD's bench/paced/paced, else compiled here into wd."""
    exe = os.path.join(build, 'bench', 'paced', 'paced')
    if os.access(exe, os.X_OK):
        return exe
    src = os.path.join(common.BENCH, 'paced')
    out = os.path.join(wd, 'paced')
    cc = os.environ.get('CC', 'cc')
    files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith('.c'))
    r = subprocess.run([cc, '-O2', '-std=c11', '-D_GNU_SOURCE', '-Wall', '-pthread', '-o', out]
                       + files,
                       capture_output=True, text=True)
    if r.returncode:
        raise BenchError('cannot build the paced driver: %s' % r.stderr[-1500:])
    log('efficiency: %s not built; compiled bench/paced/ into %s' % (exe, out))
    return out


def syscall_cost(driver):
    """The host's system-call cost (paced --mode syscall-cost): getppid, eventfd write, clock."""
    r = subprocess.run(['taskset', '-c', DRIVER_CPU, driver, '--mode', 'syscall-cost'],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise BenchError('paced --mode syscall-cost: %s' % r.stderr)
    return json.loads(r.stdout)


class Backend:
    """One configuration, started (pinned on BACKEND_CPU) and ready for the driver's two ports."""

    def __init__(self, cfg, wd, tools, tag, seq=[0]):
        seq[0] += 1
        self.cfg, self.tag, self.wd = cfg, tag, wd
        self.dir = os.path.join(wd, 'be%d' % seq[0])
        os.makedirs(self.dir)
        self.socks = [os.path.join(self.dir, n) for n in ('a.sock', 'b.sock')]
        self.vd = self.ovs = self.tp = None
        self.server = False       # the driver listens (OVS's dpdkvhostuserclient ports)
        try:
            getattr(self, '_' + cfg['kind'])(tools)
        except BaseException:
            self.close()
            raise

    def _vnetd(self, tools):
        self.vd = common.Vnetd(tools['vnetd'], tools['vnetctl'],
                               ['socket=%s,switch,mac=%s' % (s, m)
                                for s, m in zip(self.socks, MACS)],
                               self.dir, cpu=BACKEND_CPU, extra=self.cfg['args'], janitor=JANITOR)

    def _ovs(self, tools):
        from . import dp_ovs
        dp_ovs.hugepages(self.wd)   # mounted once in the run's work dir, not in this backend's
        self.ovs = dp_ovs.OvsDpdk(self.dir, self.tag, self.socks, 1514, cpu=int(BACKEND_CPU))
        if self.cfg.get('maxsleep') is not None:
            self.ovs.vsctl('set', 'Open_vSwitch', '.',
                           'other_config:pmd-maxsleep=%d' % self.cfg['maxsleep'])
        self.server = True

    def _dpdk(self, tools):
        pfx = 'vnetd-eff-%d-%s' % (os.getpid(), os.path.basename(self.dir))
        vdevs = ['net_vhost%d,iface=%s,queues=1' % (i, s) for i, s in enumerate(self.socks)]
        self.tp = Testpmd('DPDK vhost backend', P.eal_args(pfx, DPDK_BE_MAIN, vdevs),
                          ['--forward-mode=io'], os.path.join(self.dir, 'testpmd.log'))
        self.tp.wait_ready()
        self.tp.cmd('start')

    @property
    def pid(self):
        return (self.vd or self.ovs or self.tp).pid

    def counters(self):
        """vnetd's queue counters now (VNETD_COUNTERS), {} for the others."""
        if not self.vd:
            return {}
        st = self.vd.stats()
        return {name: sum(q.get(key, 0) for qs in st.values() for q in qs.values()
                          if q['kind'] == kind) for name, kind, key in VNETD_COUNTERS}

    def describe(self):
        if self.ovs:
            return self.ovs.tail_log(400)
        if self.vd:
            return self.vd.log_tail(400)
        return self.tp.buf[-400:] if self.tp else ''

    def close(self):
        if self.vd:
            self.vd.stop()
        if self.ovs:
            self.ovs.close()
        if self.tp:
            self.tp.quit()
        self.vd = self.ovs = self.tp = None
        shutil.rmtree(self.dir, ignore_errors=True)


def run_driver(driver, be, mode, size, warmup, duration, rate=None, inflight=None, rx_irq='on',
               extra=(), timeout=None):
    """One run of the paced driver against be: its JSON, plus the backend's counters around it
    ('backend': deltas of Backend.counters()). The driver's window excludes its warm-up and
    drain; the counters span the whole run (their ratios to each other hold all the same)."""
    argv = [driver, '--mode', mode, '--size', str(size), '--port', be.socks[0], '--port',
            be.socks[1], '--cpu', DRIVER_CPU, '--watch', str(be.pid), '--warmup', str(warmup),
            '--duration', str(duration), '--rx-irq', rx_irq] + list(extra)
    if be.server:
        argv.append('--server')
    if rate is not None:
        argv += ['--rate', str(int(rate))]
    if inflight is not None:
        argv += ['--inflight', str(inflight)]
    c0 = be.counters()
    try:
        r = subprocess.run(argv, capture_output=True, text=True,
                           timeout=timeout or warmup + duration + 60)
    except subprocess.TimeoutExpired:
        raise BenchError('%s: paced %s timed out; backend: %s' % (be.tag, mode, be.describe()))
    if r.returncode != 0:
        raise BenchError('%s: paced %s exited %d: %s; backend: %s'
                         % (be.tag, mode, r.returncode, r.stderr[-800:], be.describe()))
    out = json.loads(r.stdout)
    c1 = be.counters()
    out['backend'] = {k: c1[k] - c0.get(k, 0) for k in c1}
    return out
