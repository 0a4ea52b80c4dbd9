# SPDX-License-Identifier: MIT
"""vnetd's sandbox (src/daemon/sandbox.c): confined by default and still serving a UML guest on a tap;
forbidden calls refused (EPERM) or fatal (SIGSYS); --user nobody drops root after the tap is open.

(a) default sandbox: /proc shows NoNewPrivs 1, Seccomp 2 (filter); ping both ways, byte-exact
    transfers both ways, vnetctl answers, SIGTERM still exits 0 (shutdown path allowed).
(b) refusal: a probe built here from the C below links build/libvnetdaemon.a, calls the very
    sandbox_enter() vnetd calls, then tries calls vnetd never makes after setup. Each result is
    compared with the same probe run with opts.no_sandbox, so EPERM is the filter's doing, and
    execve() must end the process with SIGSYS.
(c) --user nobody: every uid/gid is 65534, no capabilities, no supplementary groups, and the
    guest still pings and transfers (the tap was opened as root; TUNSETOFFLOAD still works).
(d) --no-sandbox: no filter, and a log line says so.
"""

import hashlib
import os
import pwd
import shutil
import signal
import subprocess
import time

from tests.kit.harness import (BUILD, TOP, Netns, UmlGuest, Vnetd, check, fail, guest_addr,
                               host_addr, require_root_and_tun, skip, uml_kit, workdir)

NETNS = 'vnetd-e2e-sandbox'
TAP = 'sbtap0'
HOST_IP, GUEST_IP = '10.79.0.1', '10.79.0.2'
SIZE_MB = 4
FETCH = ('import urllib.request,hashlib,sys;'
         'print(hashlib.sha256(urllib.request.urlopen(sys.argv[1], timeout=60).read()).hexdigest())')

PROBE_C = r'''
/* sandbox_probe.c - built by test_sandbox.py: enter vnetd's sandbox, then try forbidden calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "daemon/sandbox.h"

static void report(const char *what, long r)
{
	printf("%s %s\n", what, r >= 0 ? "ok" : errno == EPERM ? "EPERM" : strerrorname_np(errno));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static struct vnetd_options opts;
	struct winsize ws;
	void *p;

	if (argc != 3)
		return 2;
	opts.no_sandbox = strcmp(argv[2], "off") == 0;
	if (sandbox_enter(&opts) < 0)
		return 2;
	if (strcmp(argv[1], "exec") == 0) {
		execl("/bin/true", "true", (char *)NULL);
		report("execve", -1);
		return 3;
	}
	report("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
	report("open", open("/etc/passwd", O_RDONLY));
	report("ioctl-tiocgwinsz", ioctl(0, TIOCGWINSZ, &ws));
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mmap-exec", p == MAP_FAILED ? -1 : 0);
	report("fcntl-dupfd", fcntl(1, F_DUPFD_CLOEXEC, 10));
	report("getuid", getuid() == (uid_t)-1 ? -1 : 0);
	/* Allowed calls keep working. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mmap-rw", p == MAP_FAILED ? -1 : 0);
	report("fcntl-getfl", fcntl(1, F_GETFL));
	return 0;
}
'''

# Calls the probe expects refused with EPERM under the sandbox, and allowed ones.
REFUSED = ('socket-inet', 'open', 'ioctl-tiocgwinsz', 'mmap-exec', 'fcntl-dupfd', 'getuid')
ALLOWED = ('mmap-rw', 'fcntl-getfl')


def proc_status(pid):
    """/proc/PID/status as {key: value string}."""
    with open('/proc/%d/status' % pid) as f:
        return dict(line.rstrip('\n').split(':\t', 1) for line in f if ':\t' in line)


def wait_ready(vd):
    """The harness returns once the control socket exists; the sandbox comes right after."""
    for _ in range(100):
        if 'ready:' in vd.log_tail():
            return
        if not vd.alive():
            break
        time.sleep(0.05)
    fail('vnetd never reported ready; log:\n' + vd.log_tail())


def stop_cleanly(vd, what):
    """SIGTERM must still end vnetd with status 0: the shutdown path is inside the allow-list."""
    vd.proc.send_signal(signal.SIGTERM)
    try:
        rc = vd.proc.wait(10)
    except subprocess.TimeoutExpired:
        rc = 'timeout'
    vd.stop()
    check(rc == 0 and 'shutting down' in vd.log_tail(),
          '%s: SIGTERM ends vnetd with status 0 (got %s)' % (what, rc))


def build_probe(wd):
    """Compile PROBE_C against the build's daemon library; skip if that cannot be done here."""
    cc = shutil.which('cc') or shutil.which('gcc')
    libs = [os.path.join(BUILD, 'libvnetdaemon.a'), os.path.join(BUILD, 'libvnetcore.a')]
    if cc is None:
        skip('no C compiler (cc) to build the sandbox probe')
    for lib in libs:
        if not os.path.exists(lib):
            fail('%s not built (run make)' % lib)
    src, exe = os.path.join(wd, 'sandbox_probe.c'), os.path.join(wd, 'sandbox_probe')
    with open(src, 'w') as f:
        f.write(PROBE_C)
    r = subprocess.run(['pkg-config', '--libs', 'libseccomp', 'jansson'], capture_output=True,
                       text=True)
    ldlibs = r.stdout.split() if r.returncode == 0 else ['-lseccomp', '-ljansson']
    r = subprocess.run([cc, '-std=c11', '-D_GNU_SOURCE', '-I', os.path.join(TOP, 'src'), '-o', exe,
                        src] + libs + ldlibs, capture_output=True, text=True)
    if r.returncode != 0:
        fail('cannot build the sandbox probe:\n' + r.stderr)
    return exe


def run_probe(exe, mode, sandbox):
    return subprocess.run([exe, mode, 'on' if sandbox else 'off'], capture_output=True, text=True,
                          timeout=20)


def results(out):
    return dict(line.split(' ', 1) for line in out.splitlines() if ' ' in line)


def part_probe(wd):
    exe = build_probe(wd)
    off, on = run_probe(exe, 'calls', False), run_probe(exe, 'calls', True)
    if 'built without libseccomp' in on.stderr:
        skip('vnetd was built without libseccomp (no filter to test)')
    check(off.returncode == 0 and on.returncode == 0,
          'probe ran with and without the sandbox (rc %d/%d; %s)' % (off.returncode, on.returncode,
                                                                     on.stderr.strip()))
    r_off, r_on = results(off.stdout), results(on.stdout)
    for name in REFUSED:
        check(r_on.get(name) == 'EPERM' and r_off.get(name) != 'EPERM',
              'sandbox refuses %s with EPERM (without sandbox: %s)' % (name, r_off.get(name)))
    for name in ALLOWED:
        check(r_on.get(name) == 'ok', 'sandbox still allows %s' % name)
    off, on = run_probe(exe, 'exec', False), run_probe(exe, 'exec', True)
    check(off.returncode == 0, 'without the sandbox the probe execs /bin/true')
    check(on.returncode == -signal.SIGSYS,
          'sandbox kills the process on execve (status %d, want SIGSYS)' % on.returncode)


def check_confined(vd, what):
    pid = vd.proc.pid   # ip netns exec execs vnetd: same pid
    with open('/proc/%d/comm' % pid) as f:
        check(f.read().strip() == 'vnetd', '%s: pid %d is vnetd' % (what, pid))
    st = proc_status(pid)
    check(st.get('NoNewPrivs') == '1', '%s: NoNewPrivs: 1' % what)
    check(st.get('Seccomp') == '2' and int(st.get('Seccomp_filters', '0')) >= 1,
          '%s: Seccomp: 2 (filter mode), Seccomp_filters: %s' % (what, st.get('Seccomp_filters')))
    return st


def serve_guest(ns, kit, sock, wd, tag, sha, transfer_out):
    """Boot a UML guest on the port: link, ping both ways, byte-exact host->guest transfer."""
    http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP, '--directory', wd],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml-%s.log' % tag)) as g:
            guest_addr(g, GUEST_IP)
            g.run('for i in $(seq 50); do [ "$(cat /sys/class/net/eth0/operstate)" = up ] && break;'
                  ' sleep 0.2; done')
            rc, _ = g.run('ping -c 2 -W 5 %s' % HOST_IP, timeout=30)
            check(rc == 0, '%s: guest pings host' % tag)
            r = ns.run('ping -c 2 -W 5 %s' % GUEST_IP, check=False)
            check(r.returncode == 0, '%s: host pings guest' % tag)
            rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % HOST_IP, timeout=60)
            check(rc == 0 and out.split()[0] == sha,
                  '%s: host->guest %d MB byte-exact' % (tag, SIZE_MB))
            if transfer_out:
                g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null; httpd -p 8080 -h /tmp'
                      % SIZE_MB, check=True)
                want = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                r = ns.run(['python3', '-c', FETCH, 'http://%s:8080/up' % GUEST_IP], timeout=60,
                           check=False)
                check(r.returncode == 0 and r.stdout.strip() == want,
                      '%s: guest->host %d MB byte-exact' % (tag, SIZE_MB))
    finally:
        http.kill()


def main():
    require_root_and_tun()
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        skip('no user "nobody" on this machine')
    kit = uml_kit()
    wd = workdir('sandbox')
    blob = os.path.join(wd, 'blob')
    with open(blob, 'wb') as f:
        f.write(os.urandom(SIZE_MB << 20))
    with open(blob, 'rb') as f:
        sha = hashlib.sha256(f.read()).hexdigest()

    part_probe(wd)

    with Netns(NETNS) as ns:
        # (a) the default: sandboxed, serving a guest.
        vwd = os.path.join(wd, 'a')   # own log and control socket per vnetd
        os.mkdir(vwd)
        sock = os.path.join(vwd, 'p0.sock')
        with Vnetd(ns, ['socket=%s,tap=%s' % (sock, TAP)], vwd) as vd:
            wait_ready(vd)
            check_confined(vd, 'default')
            host_addr(ns, TAP, HOST_IP)
            serve_guest(ns, kit, sock, wd, 'default', sha, transfer_out=True)
            check(vd.stats()['p0'][0]['packets'] > 0, 'default: vnetctl stats answers under the sandbox')
            check(vd.alive(), 'default: vnetd still running')
            stop_cleanly(vd, 'default')

        # (c) --user nobody: the tap is opened as root, then every id becomes nobody's.
        vwd = os.path.join(wd, 'c')   # own log and control socket per vnetd
        os.mkdir(vwd)
        sock = os.path.join(vwd, 'p0.sock')
        with Vnetd(ns, ['socket=%s,tap=%s' % (sock, TAP)], vwd, extra=['--user', 'nobody']) as vd:
            wait_ready(vd)
            st = check_confined(vd, '--user nobody')
            ids = '%d\t%d\t%d\t%d'
            check(st.get('Uid') == ids % ((nobody.pw_uid,) * 4), 'Uid: %s' % st.get('Uid'))
            check(st.get('Gid') == ids % ((nobody.pw_gid,) * 4), 'Gid: %s' % st.get('Gid'))
            check(st.get('Groups', '').strip() == '', 'no supplementary groups')
            check(int(st.get('CapEff', '1'), 16) == 0 and int(st.get('CapPrm', '1'), 16) == 0,
                  'no capabilities (CapEff %s)' % st.get('CapEff'))
            host_addr(ns, TAP, HOST_IP)
            serve_guest(ns, kit, sock, wd, '--user nobody', sha, transfer_out=False)
            check(vd.alive(), '--user nobody: vnetd still running')
            stop_cleanly(vd, '--user nobody')

        # (d) the opt-out.
        vwd = os.path.join(wd, 'd')   # own log and control socket per vnetd
        os.mkdir(vwd)
        sock = os.path.join(vwd, 'p0.sock')
        with Vnetd(ns, ['socket=%s,switch' % sock], vwd, extra=['--no-sandbox']) as vd:
            wait_ready(vd)
            st = proc_status(vd.proc.pid)
            check(st.get('Seccomp') == '0', '--no-sandbox: no seccomp filter')
            check('disabled by --no-sandbox' in vd.log_tail(), '--no-sandbox: logged')
            stop_cleanly(vd, '--no-sandbox')


if __name__ == '__main__':
    main()
