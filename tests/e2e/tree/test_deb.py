# SPDX-License-Identifier: MIT
"""The Debian package: `make deb` builds vnetd and vnetd-dbgsym (in a temporary copy of the tree),
lintian reports no error, `dpkg -i` installs it (the vnetd user and group appear), `vnetd
--version` names the package's version, the unit's ExecStart line runs by hand (in a private
network namespace, /run/vnetd made as RuntimeDirectory= would) until vnetctl answers and then
stops cleanly on SIGTERM, and `dpkg --purge` leaves none of the package's paths behind."""

import glob
import grp
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import time

from tests.kit.harness import TOP, Netns, check, fail, skip, workdir

RUNDIR = '/run/vnetd'


def run(argv, **kw):
    kw.setdefault('capture_output', True)
    return subprocess.run(argv, text=True, **kw)


def installed():
    r = run(['dpkg-query', '-W', '-f', '${Status}', 'vnetd'])
    return r.returncode == 0 and r.stdout.endswith(' installed')


def exec_start(path):
    """The unit's ExecStart= argv (continuation lines joined)."""
    with open(path) as f:
        text = f.read().replace('\\\n', ' ')
    for line in text.splitlines():
        if line.startswith('ExecStart='):
            return shlex.split(line[len('ExecStart='):])
    fail('no ExecStart= in ' + path)


def uid_of(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('Uid:'):
                return int(line.split()[2])   # effective
    return -1


def run_unit_by_hand(ns, argv, wd):
    """ExecStart's argv in ns until vnetctl answers; SIGTERM; returns vnetd's exit status."""
    ctl = argv[argv.index('--control') + 1]
    log_path = os.path.join(wd, 'vnetd.log')
    with open(log_path, 'wb') as log:
        proc = ns.popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            with open(log_path, errors='replace') as f:
                if 'ready:' in f.read():
                    break
            time.sleep(0.05)
        with open(log_path, errors='replace') as f:
            log = f.read()
        check(proc.poll() is None and 'ready:' in log,
              'the unit\'s ExecStart runs (%s)' % ' '.join(argv))
        check(uid_of(proc.pid) == pwd.getpwnam('vnetd').pw_uid, 'vnetd dropped to user vnetd')
        r = run(['vnetctl', '--control', ctl, 'ports'])
        check(r.returncode == 0 and 'p0' in r.stdout, 'the installed vnetctl lists its port')
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rc


def main():
    if os.geteuid() != 0:
        skip('needs root (dpkg -i)')
    for exe, pkg in (('dpkg-buildpackage', 'dpkg-dev'), ('dh', 'debhelper'),
                     ('adduser', 'adduser'), ('git', 'git')):
        if shutil.which(exe) is None:
            skip('%s is not installed (Debian package %s)' % (exe, pkg))
    if installed():
        skip('a vnetd package is installed on this machine already: not touching it')
    if os.path.exists(RUNDIR):
        skip('%s exists (a vnetd runs here?): not touching it' % RUNDIR)
    wd = workdir('deb')
    out = os.path.join(wd, 'out')

    status = ['git', '-C', TOP, 'status', '--porcelain', '--ignored=matching']
    tree = run(status).stdout
    t0 = time.monotonic()
    r = run(['make', '-C', TOP, 'deb', 'DEB_OUT=' + out])
    if r.returncode != 0:
        fail('make deb:\n' + (r.stdout + r.stderr)[-4000:])
    debs = sorted(glob.glob(os.path.join(out, '*.deb')))
    names = sorted(os.path.basename(d).split('_')[0] for d in debs)
    check(names == ['vnetd', 'vnetd-dbgsym'], 'make deb built %s in %.0f s'
          % (', '.join(os.path.basename(d) for d in debs), time.monotonic() - t0))
    check(run(status).stdout == tree, 'the tree is as it was (git status, ignored files too)')
    deb = [d for d in debs if os.path.basename(d).startswith('vnetd_')][0]
    dbg = run(['dpkg-deb', '-c', [d for d in debs if 'dbgsym' in d][0]]).stdout
    ids = [ln for ln in dbg.splitlines() if '/.build-id/' in ln and ln.endswith('.debug')]
    check(len(ids) == 2, 'vnetd-dbgsym holds the two binaries\' debug files (by build-id)')

    if shutil.which('lintian'):
        changes = glob.glob(os.path.join(out, '*.changes'))[0]
        r = run(['lintian', '-I', changes])
        tags = [ln for ln in r.stdout.splitlines() if ln[:2] in ('E:', 'W:', 'I:')]
        print('lintian: %d errors, %d warnings, %d info' % tuple(
            sum(t.startswith(k) for t in tags) for k in ('E:', 'W:', 'I:')))
        for t in tags:
            print('  ' + t)
        check(not any(t.startswith('E:') for t in tags), 'lintian reports no error')
    else:
        print('note: lintian not installed, not run')

    contents = run(['dpkg-deb', '-c', deb], check=True).stdout.splitlines()
    paths = ['/' + ln.split(None, 5)[5].lstrip('./').rstrip('/') for ln in contents]
    paths = [p for p in paths if p != '/']
    before = {p: os.path.lexists(p) for p in paths}
    had_user = True
    try:
        pwd.getpwnam('vnetd')
    except KeyError:
        had_user = False

    try:
        r = run(['dpkg', '-i', deb])
        check(r.returncode == 0 and installed(), 'dpkg -i installed vnetd')
        user = pwd.getpwnam('vnetd')
        check(user.pw_uid < 1000 and grp.getgrgid(user.pw_gid).gr_name == 'vnetd',
              'postinst made the vnetd system user (uid %d) and group' % user.pw_uid)
        version = run(['dpkg-query', '-W', '-f', '${Version}', 'vnetd']).stdout
        r = run(['vnetd', '--version'])
        check(r.returncode == 0 and r.stdout.strip() == 'vnetd ' + version,
              'vnetd --version: "%s" (package %s)' % (r.stdout.strip(), version))
        check(os.path.exists('/usr/share/man/man8/vnetd.8.gz') and
              os.path.exists('/usr/share/doc/vnetd/multihost.md.gz'),
              'man pages and docs installed')
        units = [p for p in run(['dpkg', '-L', 'vnetd']).stdout.split()
                 if p.endswith('/systemd/system/vnetd.service')]
        check(len(units) == 1, 'the systemd unit is installed (%s)' % units)
        argv = exec_start(units[0])
        check(argv[0] == '/usr/bin/vnetd', 'the installed unit runs /usr/bin/vnetd')
        # What systemd's RuntimeDirectory=vnetd / RuntimeDirectoryMode=0750 / Group=vnetd do.
        os.mkdir(RUNDIR, 0o750)
        os.chown(RUNDIR, 0, grp.getgrnam('vnetd').gr_gid)
        try:
            with Netns('vnetd-e2e-deb') as ns:
                rc = run_unit_by_hand(ns, argv, wd)
            check(rc == 0, 'it stops cleanly on SIGTERM (exit 0)')
        finally:
            shutil.rmtree(RUNDIR, ignore_errors=True)
        listed = [p for p in run(['dpkg', '-L', 'vnetd'], check=True).stdout.split()
                  if p != '/.']
    finally:
        r = run(['dpkg', '--purge', 'vnetd'])
        # Debian keeps a package's system user on purge (files it owned may remain); the test
        # removes the one it made.
        if not had_user:
            run(['deluser', '--system', '--quiet', 'vnetd'])
            run(['delgroup', '--system', '--quiet', 'vnetd'])
    check(r.returncode == 0 and not installed(), 'dpkg --purge vnetd')
    new = [p for p in listed if not before.get(p, False)]
    left = [p for p in new if os.path.lexists(p)]
    # Nor anything the maintainer scripts made: deb-systemd-helper's state, unit links, /run.
    left += glob.glob('/var/lib/systemd/deb-systemd-helper-*/**/vnetd*', recursive=True)
    left += glob.glob('/etc/systemd/system/**/vnetd*', recursive=True)
    left += [RUNDIR] if os.path.lexists(RUNDIR) else []
    check(not left, '%d paths the package brought (of %d dpkg -L lines) are all gone, no '
          'systemd state left%s'
          % (len(new), len(listed), (': left ' + ' '.join(left)) if left else ''))
    r = run(['dpkg-query', '-W', 'vnetd'])
    check(r.returncode != 0 or not r.stdout.strip().endswith('installed'),
          'dpkg no longer knows vnetd')
    shutil.rmtree(wd, ignore_errors=True)


if __name__ == '__main__':
    main()
