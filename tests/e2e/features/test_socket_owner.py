#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Socket ownership: --socket-group / --socket-mode and the port keys group= / mode=.

vnetd (sandboxed, as root, then again with --user nobody) listens on switch ports; each socket's
group and mode are read back with lstat: the daemon defaults, a port's own group=/mode=, and a
port added at run time (under the seccomp filter; with --user, the kept supplementary group).
A process of another user in the socket group connects; the same user outside it gets EACCES,
which is what libvirt's QEMU (user libvirt-qemu) hit against root:root 0660 sockets.
"""

import grp
import os
import stat
import subprocess
import sys

from tests.kit import harness
from tests.kit.harness import NoNs, Vnetd, check, fail, skip, workdir

NOBODY = 65534
CONNECT = ('import socket,sys;s=socket.socket(socket.AF_UNIX);'
           'r=s.connect_ex(sys.argv[1]);print(r)')


def test_group():
    """A group other than root's and nobody's to give the sockets (created if none fits)."""
    for name in ('kvm', 'libvirt-qemu', 'users'):
        try:
            return grp.getgrnam(name)
        except KeyError:
            pass
    skip('no group kvm, libvirt-qemu or users on this host')


def owner(path):
    st = os.lstat(path)
    return st.st_gid, stat.S_IMODE(st.st_mode), stat.S_ISSOCK(st.st_mode)


def connect_as(path, gid):
    """errno of connect() to path by uid nobody with only group gid (0: connected)."""
    r = subprocess.run(['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % gid, '--clear-groups',
                        sys.executable, '-c', CONNECT, path], capture_output=True, text=True)
    if r.returncode != 0:
        fail('setpriv: ' + r.stderr)
    return int(r.stdout.strip())


def run(wd, g, user):
    tag = 'user' if user else 'root'
    sock = lambda n: os.path.join(wd, '%s-%s.sock' % (tag, n))
    extra = ['--socket-group', g.gr_name, '--socket-mode', '0660']
    if user:
        extra += ['--user', 'nobody']
    ports = ['socket=%s,switch,mac=02:00:00:00:01:01' % sock('a'),
             'socket=%s,switch,mac=02:00:00:00:01:02,group=0,mode=0600' % sock('b')]
    with Vnetd(NoNs(), ports, wd, extra=extra) as vd:
        check(owner(sock('a')) == (g.gr_gid, 0o660, True),
              '%s: --socket-group %s --socket-mode 0660: socket %s' % (tag, g.gr_name,
                                                                       owner(sock('a'))))
        check(owner(sock('b')) == (0, 0o600, True),
              '%s: group=0,mode=0600 on the port wins: %s' % (tag, owner(sock('b'))))
        # At run time, under the seccomp filter: the default, then a port's own mode.
        vd.ctl('port-add', 'socket=%s,switch,mac=02:00:00:00:01:03' % sock('c'))
        check(owner(sock('c')) == (g.gr_gid, 0o660, True),
              '%s: port-add gets the defaults: %s' % (tag, owner(sock('c'))))
        vd.ctl('port-add', 'socket=%s,switch,mac=02:00:00:00:01:04,group=%d,mode=0666'
               % (sock('d'), g.gr_gid))
        check(owner(sock('d')) == (g.gr_gid, 0o666, True),
              '%s: port-add group=%d,mode=0666: %s' % (tag, g.gr_gid, owner(sock('d'))))
        if user:
            # nobody is not in group 0 and has no CAP_CHOWN: refused, and said why.
            r = vd.ctl('port-add', 'socket=%s,switch,mac=02:00:00:00:01:05,group=0'
                       % sock('e'), check=False)
            check(r.returncode != 0 and not os.path.exists(sock('e')) and
                  'cannot give' in vd.log_tail(),
                  '%s: port-add group=0 as nobody refused, no socket left' % tag)
        check(connect_as(sock('a'), g.gr_gid) == 0,
              '%s: a process of another user in group %s connects' % (tag, g.gr_name))
        err = connect_as(sock('a'), NOBODY)
        check(err == 13, '%s: the same user outside the group: errno %d (EACCES)' % (tag, err))
        check(vd.alive(), '%s: vnetd still running' % tag)


def main():
    if os.geteuid() != 0:
        skip('needs root (to give sockets a group and connect as another user)')
    g = test_group()
    wd = workdir('socket-owner')
    os.chmod(wd, 0o777)  # nobody binds here after --user, and connects as nobody
    run(wd, g, user=False)
    run(wd, g, user=True)
    # Start-up refuses an unknown group or a bad mode, before anything is created.
    for bad in (['--socket-group', 'no-such-group-here'], ['--socket-mode', '0999']):
        r = subprocess.run([harness.VNETD,
                            '--port', 'socket=%s/x.sock,switch' % wd, '--control',
                            wd + '/x-control.sock'] + bad, capture_output=True, text=True)
        check(r.returncode != 0 and 'bad value' in r.stderr and
              not os.path.exists(wd + '/x.sock'), 'start-up refuses %s: %s'
              % (' '.join(bad), r.stderr.strip()))
    print('PASS')


if __name__ == '__main__':
    main()
