# SPDX-License-Identifier: MIT
"""OVN in network namespaces for tests and benchmarks: a central (NB and SB ovsdb-servers,
ovn-northd) and, per host, a chassis (its own ovsdb-server, ovs-vswitchd on the userspace
datapath, ovn-controller), each with private run, db and log directories; every daemon runs in
the foreground as a child of the caller inside its namespace, so Netns.delete() ends it too.

    central = OvnCentral(ns_a, wd + '/central', sb_listen='10.97.0.1').start()
    a = Chassis(ns_a, wd + '/A', 'hostA', encap_ip='10.99.0.1', underlay='ul0',
                sb='tcp:10.97.0.1:6642').start()
    a.plug('vtap0', 'vm1', mac)          # contrib/ovn/vnetd-ovn-plug, as an operator would
    central.nbctl('ls-add', 'ls0')

Plain OVS's daemon is called by its path (OVS_VSWITCHD): OVS-DPDK's package installs another
binary under the same alternatives name."""

import os
import shutil
import subprocess
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PLUG = os.path.join(TOP, 'contrib', 'ovn', 'vnetd-ovn-plug')
OVS_VSWITCHD = '/usr/lib/openvswitch-switch/ovs-vswitchd'
OVSDB_SERVER = '/usr/sbin/ovsdb-server'
VSWITCH_SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
NB_SCHEMA = '/usr/share/ovn/ovn-nb.ovsschema'
SB_SCHEMA = '/usr/share/ovn/ovn-sb.ovsschema'
# What each piece needs: (path or program, Debian package).
NEEDS = ((OVS_VSWITCHD, 'openvswitch-switch'), (OVSDB_SERVER, 'openvswitch-switch'),
         ('ovs-vsctl', 'openvswitch-switch'), ('ovsdb-tool', 'openvswitch-common'),
         ('ovn-northd', 'ovn-central'), ('ovn-controller', 'ovn-host'),
         ('ovn-nbctl', 'ovn-common'), ('ovn-sbctl', 'ovn-common'),
         (NB_SCHEMA, 'ovn-common'), (VSWITCH_SCHEMA, 'openvswitch-common'))


class OvnError(Exception):
    pass


def missing():
    """'PROGRAM (Debian package P)' for the first piece that is not installed, else None."""
    for what, pkg in NEEDS:
        if (os.path.isabs(what) and not os.path.exists(what)) or \
                (not os.path.isabs(what) and shutil.which(what) is None):
            return '%s (Debian package %s)' % (what, pkg)
    return None


def _wait(cond, timeout, what, step=0.05, place=None):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if place is not None and place.dead():
            name = place.dead()[0]
            raise OvnError('%s: %s exited: %s %s' % (what, name, place.log_tail(name + '.out', 500),
                                                     place.log_tail(name + '.log', 1000)))
        if time.monotonic() > deadline:
            raise OvnError('%s: not within %.0f s' % (what, timeout))
        time.sleep(step)


class _Daemons:
    """A namespace, a directory (run/, db/, log/ under it) and the daemons started there."""

    def __init__(self, ns, wd):
        self.ns, self.wd = ns, wd
        self.run_dir, self.db_dir, self.log_dir = (os.path.join(wd, d) for d in ('run', 'db', 'log'))
        self.procs = {}
        for d in (self.run_dir, self.db_dir, self.log_dir):
            os.makedirs(d, exist_ok=True)
        self.env = dict(os.environ)
        for k in ('OVS', 'OVN'):
            self.env.update({k + '_RUNDIR': self.run_dir, k + '_DBDIR': self.db_dir,
                             k + '_LOGDIR': self.log_dir, k + '_SYSCONFDIR': wd,
                             k + '_PKGDATADIR': '/usr/share/' + ('openvswitch' if k == 'OVS' else 'ovn')})

    def path(self, d, name):
        return os.path.join(getattr(self, d + '_dir'), name)

    def daemon(self, name, argv, unixctl=True):
        """Start argv (a daemon, in the foreground, logging to log/NAME.log) in the namespace;
        its control socket is run/NAME.ctl (unixctl False: ovn-controller, which has no
        --unixctl, names it run/ovn-controller.PID.ctl)."""
        argv = list(argv) + ['-vconsole:off', '--log-file=' + self.path('log', name + '.log'),
                             '--pidfile=' + self.path('run', name + '.pid')] + \
            (['--unixctl=' + self.path('run', name + '.ctl')] if unixctl else [])
        out = open(self.path('log', name + '.out'), 'ab')
        self.procs[name] = self.ns.popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        out.close()
        return self.procs[name]

    def tool(self, argv, check=True, timeout=60):
        """Run a client (ovs-vsctl, ovn-nbctl...) in the namespace with this place's paths."""
        r = self.ns.run(list(argv), check=False, timeout=timeout, env=self.env)
        if check and r.returncode != 0:
            raise OvnError('%s: exit %d: %s' % (' '.join(argv), r.returncode,
                                                (r.stderr or r.stdout).strip()))
        return r.stdout.strip()

    def appctl(self, name, *args, check=True):
        return self.tool(['ovs-appctl', '-t', self.path('run', name + '.ctl')] + list(args),
                         check=check)

    def dead(self):
        """Names of the daemons that exited."""
        return [n for n, p in self.procs.items() if p.poll() is not None]

    def log_tail(self, name, n=2000):
        """The end of log/NAME (NAME.log when NAME has no suffix)."""
        try:
            with open(self.path('log', name if '.' in name else name + '.log'), 'rb') as f:
                return f.read()[-n:].decode(errors='replace')
        except OSError:
            return ''

    def stop(self):
        for name in reversed(list(self.procs)):
            p = self.procs[name]
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _ovsdb(place, name, schema, remotes):
    """Create db/NAME.db from schema and serve it (punix:run/NAME.sock plus remotes)."""
    db = place.path('db', name + '.db')
    place.tool(['ovsdb-tool', 'create', db, schema])
    sock = place.path('run', name + '.sock')
    place.daemon(name, [OVSDB_SERVER, db, '--remote=punix:' + sock] +
                 ['--remote=' + r for r in remotes])
    _wait(lambda: os.path.exists(sock), 20, 'ovsdb-server %s socket' % name, place=place)
    return 'unix:' + sock


class OvnCentral(_Daemons):
    """NB and SB ovsdb-servers and ovn-northd. sb_listen: also serve SB on tcp:IP:6642 (the
    chassis of other hosts connect there)."""

    def __init__(self, ns, wd, sb_listen=None):
        super().__init__(ns, wd)
        self.sb_listen = sb_listen

    def start(self):
        self.nb = _ovsdb(self, 'ovnnb_db', NB_SCHEMA, [])
        self.sb = _ovsdb(self, 'ovnsb_db', SB_SCHEMA,
                         ['ptcp:6642:' + self.sb_listen] if self.sb_listen else [])
        self.daemon('ovn-northd', ['ovn-northd', '--ovnnb-db=' + self.nb, '--ovnsb-db=' + self.sb])
        self.nbctl('init')
        self.sbctl('init')
        return self

    def nbctl(self, *args, check=True):
        return self.tool(['ovn-nbctl', '--db=' + self.nb, '--timeout=30'] + list(args), check)

    def sbctl(self, *args, check=True):
        return self.tool(['ovn-sbctl', '--db=' + self.sb, '--timeout=30'] + list(args), check)

    def sync(self, timeout=30):
        """Wait until northd has put the NB's latest change into the SB and every chassis's
        ovn-controller has installed it (ovn-nbctl --wait=hv)."""
        self.tool(['ovn-nbctl', '--db=' + self.nb, '--timeout=%d' % timeout, '--wait=hv',
                   'sync'], timeout=timeout + 10)

    def binding(self, lport):
        """{'chassis': name or '', 'additional': [names], 'options': {...}} of a Port_Binding."""
        def chassis_names(col):
            out = self.sbctl('--bare', '--columns=' + col, 'find', 'Port_Binding',
                             'logical_port=' + lport)
            names = []
            for uuid in out.split():
                names.append(self.sbctl('--bare', '--columns=name', 'list', 'Chassis', uuid))
            return names
        opts = self.sbctl('--bare', '--columns=options', 'find', 'Port_Binding',
                          'logical_port=' + lport)
        options = dict(kv.split('=', 1) for kv in opts.split() if '=' in kv)
        main = chassis_names('chassis')
        return {'chassis': main[0] if main else '', 'additional': chassis_names('additional_chassis'),
                'options': options}


class Chassis(_Daemons):
    """One host's OVS (ovsdb-server, ovs-vswitchd with the userspace datapath) and
    ovn-controller: system-id, Geneve with encap_ip, which moves from the underlay interface to
    br-phy (userspace tunnels leave through an OVS bridge holding the underlay port)."""

    def __init__(self, ns, wd, system_id, encap_ip, underlay, sb, prefix=24):
        super().__init__(ns, wd)
        self.system_id, self.encap_ip, self.underlay, self.sb = system_id, encap_ip, underlay, sb
        self.prefix = prefix

    def start(self, tso=False):
        self.db = _ovsdb(self, 'db', VSWITCH_SCHEMA, [])
        self.vsctl('--no-wait', 'init')
        if tso:
            self.vsctl('--no-wait', 'set', 'Open_vSwitch', '.',
                       'other_config:userspace-tso-enable=true')
        self.daemon('ovs-vswitchd', [OVS_VSWITCHD, self.db])
        _wait(lambda: os.path.exists(self.path('run', 'ovs-vswitchd.ctl')), 20,
              'ovs-vswitchd control socket', place=self)
        self.ns.run('ip link set %s up' % self.underlay)
        self.vsctl('add-br', 'br-phy', '--', 'set', 'Bridge', 'br-phy', 'datapath_type=netdev',
                   '--', 'add-port', 'br-phy', self.underlay)
        self.ns.run('ip addr add %s/%d dev br-phy && ip link set br-phy up'
                    % (self.encap_ip, self.prefix))
        self.vsctl('set', 'Open_vSwitch', '.',
                   'external_ids:system-id=' + self.system_id,
                   'external_ids:ovn-remote=' + self.sb,
                   'external_ids:ovn-encap-type=geneve',
                   'external_ids:ovn-encap-ip=' + self.encap_ip,
                   'external_ids:ovn-bridge-datapath-type=netdev')
        self.daemon('ovn-controller', ['ovn-controller', self.db], unixctl=False)
        # ovn-controller creates br-int (datapath netdev) once it reached the SB.
        _wait(lambda: self.vsctl('br-exists', 'br-int', check=False) == '' and
              self.ns.run('ip link show br-int', check=False).returncode == 0, 60,
              '%s: ovn-controller creating br-int' % self.system_id, place=self)
        return self

    def vsctl(self, *args, check=True):
        if check:
            return self.tool(['ovs-vsctl', '--db=' + self.db, '--timeout=30'] + list(args))
        r = self.ns.run(['ovs-vsctl', '--db=' + self.db, '--timeout=30'] + list(args),
                        check=False, env=self.env)
        return r.stdout.strip() if r.returncode == 0 else None

    def ofctl(self, *args):
        return self.tool(['ovs-ofctl'] + list(args))

    def plug(self, ifname, lport, mac=None, extra=()):
        """contrib/ovn/vnetd-ovn-plug plug: the tap ifname into br-int as logical port lport."""
        argv = [PLUG, 'plug', ifname, lport] + (['--mac', mac] if mac else []) + list(extra)
        return self.tool(argv)

    def unplug(self, ifname):
        return self.tool([PLUG, 'unplug', ifname])

    def ofport(self, ifname):
        return int(self.vsctl('get', 'Interface', ifname, 'ofport'))

    def flows(self, table=None, match=''):
        """ovs-ofctl dump-flows br-int (optionally one table, a match): list of lines."""
        spec = ','.join(x for x in (('table=%d' % table) if table is not None else '', match) if x)
        args = ['dump-flows', 'br-int'] + ([spec] if spec else [])
        return [l.strip() for l in self.ofctl(*args).splitlines() if 'actions=' in l]

    def iface_stats(self, ifname):
        """OVS's statistics column of an interface (rx_packets, tx_packets, ..., as ints)."""
        out = self.vsctl('get', 'Interface', ifname, 'statistics')
        out = out.strip('{}')
        return {k.strip(): int(v) for k, v in (kv.split('=') for kv in out.split(', ') if '=' in kv)}
