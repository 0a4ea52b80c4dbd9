# SPDX-License-Identifier: MIT
"""--state-dir against a guest and a directory that work against vnetd: a guest toggling its RX
mode over the control queue in a loop gets its state file written at most about once a second
(counted with inotify), and a SIGKILL after its last change has had a second loses nothing; a
symlink planted at the temporary file's name does not make vnetd write through it; a symlink at
the state file's name is not followed; a FIFO there does not block start-up; a state directory
that group or others can write, or that another user owns, is refused at start with a clear
message. Python frontends (tests/kit/vhost_user_client.py), no guest kernel."""

import ctypes
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import time

from tests.kit.harness import NoNs, Vnetd, workdir
from tests.kit.vhost_user_client import (CTRL_MAC, CTRL_RX, DEFAULT_FEATURES, VIRTIO_NET_F_CTRL_RX,
                                         VirtioNetFrontend)

OK = 0
VIRTIO_NET_F_CTRL_MAC_ADDR = 23
RX_FEATURES = DEFAULT_FEATURES | (1 << VIRTIO_NET_F_CTRL_RX) | (1 << VIRTIO_NET_F_CTRL_MAC_ADDR)
RX_PROMISC, RX_ALLMULTI = 0, 1
MAC_ADDR_SET = 1
FINAL_MAC = '52:54:00:fe:ed:01'
TOGGLE_SECONDS = 3.0
IN_MOVED_FROM, IN_MOVED_TO, IN_Q_OVERFLOW = 0x40, 0x80, 0x4000

failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def state_name(sock):
    """port_state_file_name(): FNV-1a 64 of the socket path."""
    h = 1469598103934665603
    for b in sock.encode():
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return 'port-%016x.json' % h


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(':'))


class Inotify:
    """Renames into one directory (a state file write ends with one). IN_MOVED_FROM is watched
    too: the kernel merges an event with an identical unread one before it, and a rename's
    FROM (the .new name) and TO events alternate, so none is merged away."""

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        mask = IN_MOVED_FROM | IN_MOVED_TO
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, path.encode(), mask) < 0:
            raise OSError(ctypes.get_errno(), 'inotify')
        self.overflow = False

    def names(self):
        """Names renamed into the directory since the last call."""
        out = []
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            off = 0
            while off < len(buf):
                _, mask, _, n = struct.unpack_from('iIII', buf, off)
                if mask & IN_Q_OVERFLOW:
                    self.overflow = True
                if mask & IN_MOVED_TO:
                    out.append(buf[off + 16:off + 16 + n].rstrip(b'\0').decode())
                off += 16 + n

    def close(self):
        os.close(self.fd)


class Daemon(Vnetd):
    """vnetd that may fail to start (the test wants to see that, not exit)."""

    def launch(self, timeout=5.0):
        """'ready' (logged ready), 'exited' (its status in proc) or 'stuck' (neither)."""
        argv = self.argv()
        os.makedirs(self.workdir, exist_ok=True)
        self.log = open(self.log_path, 'ab')
        self.proc = self.ns.popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.control) and 'ready:' in self.log_tail(100000):
                return 'ready'
            if self.proc.poll() is not None:
                return 'exited'
            time.sleep(0.05)
        return 'stuck'

    def kill9(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()


def daemon(wd, name, sock, state, timeout=5.0):
    vd = Daemon(NoNs(), ['socket=%s,switch' % sock], os.path.join(wd, name),
                extra=['--state-dir', state])
    return vd, vd.launch(timeout)


def fresh(wd, name):
    """A new state directory (0700) and socket path for one case."""
    state = os.path.join(wd, name + '-state')
    os.mkdir(state, 0o700)
    return state, os.path.join(wd, name + '.sock')


def case_write_rate(wd):
    """A guest toggling promisc in a loop: at most ~1 state-file write a second; a SIGKILL
    > 1 s after its last change loses nothing."""
    print('-- control-queue commands in a loop', flush=True)
    state, sock = fresh(wd, 'rate')
    name = state_name(sock)
    vd, how = daemon(wd, 'rate-v1', sock, state)
    if not check(how == 'ready', 'vnetd starts (%s)' % how):
        vd.kill9()
        return
    ino = Inotify(state)
    try:
        f = VirtioNetFrontend(sock, features=RX_FEATURES).setup()
        t0 = time.monotonic()
        cmds = 0
        heap = f.mem._next  # each command's buffers are free again once it is acknowledged
        while time.monotonic() - t0 < TOGGLE_SECONDS:
            f.mem._next = heap
            acked = f.ctrl(CTRL_RX, RX_PROMISC, bytes([cmds & 1])) == OK
            if not acked:
                break
            cmds += 1
        check(acked, '%d promisc toggles in %.1f s all acknowledged (%.0f/s)'
              % (cmds, TOGGLE_SECONDS, cmds / TOGGLE_SECONDS))
        # The state to keep: promisc off, allmulti on, another MAC.
        final = (f.ctrl(CTRL_RX, RX_PROMISC, b'\x00') == OK and
                 f.ctrl(CTRL_RX, RX_ALLMULTI, b'\x01') == OK and
                 f.ctrl(CTRL_MAC, MAC_ADDR_SET, mac_bytes(FINAL_MAC)) == OK)
        check(final, 'then the final state: promisc off, allmulti on, MAC %s' % FINAL_MAC)
        time.sleep(1.3)  # more than the write interval, with no control request meanwhile
        elapsed = time.monotonic() - t0
        writes = [n for n in ino.names() if n == name]
        bound = int(elapsed) + 2
        check(not ino.overflow and len(writes) <= bound,
              '%d state-file writes in %.1f s (at most %d)%s'
              % (len(writes), elapsed, bound, ' (inotify overflowed)' if ino.overflow else ''))
        check(len(writes) >= 1, 'the state was written at all')
        vd.kill9()
        f.close()

        vd, how = daemon(wd, 'rate-v2', sock, state)
        if not check(how == 'ready', 'vnetd restarts after SIGKILL (%s)' % how):
            return
        f = VirtioNetFrontend(sock, features=RX_FEATURES).setup()  # rings only, no command
        info = vd.port_info()['p0']
        check(info['rx_mode'] == ['allmulti'] and info['mac'] == FINAL_MAC,
              'the final state is back after SIGKILL (rx_mode %s, mac %s)'
              % (info['rx_mode'], info['mac']))
        f.close()
        check(vd.stop() == 0, 'clean SIGTERM shutdown')
    finally:
        ino.close()
        if vd.proc.poll() is None:
            vd.kill9()


def case_flush_on_stop(wd):
    """A change still waiting for its write is written at a clean shutdown."""
    print('-- a pending change at SIGTERM', flush=True)
    state, sock = fresh(wd, 'flush')
    vd, how = daemon(wd, 'flush-v1', sock, state)
    if not check(how == 'ready', 'vnetd starts (%s)' % how):
        vd.kill9()
        return
    f = VirtioNetFrontend(sock, features=RX_FEATURES).setup()
    # The first write comes soon; the changes right after it wait for the interval.
    check(f.ctrl(CTRL_RX, RX_PROMISC, b'\x00') == OK, 'promisc off')
    time.sleep(0.3)
    check(f.ctrl(CTRL_RX, RX_ALLMULTI, b'\x01') == OK and
          f.ctrl(CTRL_MAC, MAC_ADDR_SET, mac_bytes(FINAL_MAC)) == OK,
          'then allmulti on and a MAC, and SIGTERM at once')
    check(vd.stop() == 0, 'clean SIGTERM shutdown')
    f.close()
    vd, how = daemon(wd, 'flush-v2', sock, state)
    if check(how == 'ready', 'vnetd restarts (%s)' % how):
        f = VirtioNetFrontend(sock, features=RX_FEATURES).setup()
        info = vd.port_info()['p0']
        check(info['rx_mode'] == ['allmulti'] and info['mac'] == FINAL_MAC,
              'what was pending at SIGTERM is back (rx_mode %s, mac %s)'
              % (info['rx_mode'], info['mac']))
        f.close()
    vd.stop()


def case_symlink_tmp(wd):
    """port-<hash>.json.new planted as a symlink to a victim file: the victim is untouched."""
    print('-- a symlink at the temporary file\'s name', flush=True)
    state, sock = fresh(wd, 'tmplink')
    victim = os.path.join(wd, 'victim-tmp')
    with open(victim, 'w') as fh:
        fh.write('precious\n')
    path = os.path.join(state, state_name(sock))
    os.symlink(victim, path + '.new')
    vd, how = daemon(wd, 'tmplink-v', sock, state)
    if not check(how == 'ready', 'vnetd starts (%s)' % how):
        vd.kill9()
        return
    f = VirtioNetFrontend(sock, features=RX_FEATURES).setup()
    check(f.ctrl(CTRL_RX, RX_PROMISC, b'\x00') == OK, 'the guest changes its RX mode')
    deadline = time.monotonic() + 3
    while not os.path.lexists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(victim) as fh:
        check(fh.read() == 'precious\n', 'the victim file is unchanged')
    st = os.lstat(path) if os.path.lexists(path) else None
    check(st is not None and stat.S_ISREG(st.st_mode),
          'the state file is a regular file (%s)'
          % ('missing' if st is None else oct(stat.S_IFMT(st.st_mode))))
    if st is not None and stat.S_ISREG(st.st_mode):
        with open(path) as fh:
            check(json.load(fh)['socket'] == sock, 'with the port\'s state in it')
    f.close()
    vd.stop()


def case_symlink_state(wd):
    """The state file's name is a symlink to a file that would parse: not followed."""
    print('-- a symlink at the state file\'s name', flush=True)
    state, sock = fresh(wd, 'statelink')
    elsewhere = os.path.join(wd, 'elsewhere.json')
    with open(elsewhere, 'w') as fh:
        json.dump({'version': 1, 'socket': sock, 'queues': [[7, 77, 'host']]}, fh)
    os.symlink(elsewhere, os.path.join(state, state_name(sock)))
    vd, how = daemon(wd, 'statelink-v', sock, state)
    if not check(how == 'ready', 'vnetd starts (%s)' % how):
        vd.kill9()
        return
    check('state file ignored' in vd.log_tail(20000), 'the symlink is refused (logged)')
    f = VirtioNetFrontend(sock).setup()
    q = vd.stats()['p0'][0]
    check(q['set_by'] == 'none' and q['max_packets'] != 7,
          'and nothing is restored from its target (set_by %s)' % q['set_by'])
    f.close()
    vd.stop()


def case_fifo(wd):
    """A FIFO at the state file's name: vnetd starts and answers stats."""
    print('-- a FIFO at the state file\'s name', flush=True)
    state, sock = fresh(wd, 'fifo')
    os.mkfifo(os.path.join(state, state_name(sock)), 0o600)
    vd, how = daemon(wd, 'fifo-v', sock, state, timeout=4.0)
    if check(how == 'ready', 'vnetd starts within 4 s (%s)' % how):
        r = vd.ctl('stats', '--json', check=False)
        check(r.returncode == 0 and 'p0' in r.stdout, 'and answers stats')
        check('state file ignored' in vd.log_tail(20000) and
              'not a regular file' in vd.log_tail(20000), 'the FIFO is refused (logged)')
        vd.stop()
    else:
        vd.kill9()


def case_bad_dir(wd, tag, mode, owner, want):
    print('-- a state directory %s' % tag, flush=True)
    state, sock = fresh(wd, 'dir-' + tag.split()[0])
    os.chmod(state, mode)
    if owner is not None:
        os.chown(state, owner, -1)
    vd, how = daemon(wd, 'dir-%s-v' % tag.split()[0], sock, state)
    log = vd.log_tail(20000)
    check(how == 'exited' and vd.proc.returncode != 0, 'vnetd refuses to start (%s, status %s)'
          % (how, vd.proc.returncode))
    check(want in log, 'saying why ("%s" in the log)' % want)
    vd.kill9()


def main():
    wd = workdir('state-dir-hostile')
    case_write_rate(wd)
    case_flush_on_stop(wd)
    case_symlink_tmp(wd)
    case_symlink_state(wd)
    case_fifo(wd)
    case_bad_dir(wd, 'others can write', 0o777, None, 'group or others can write')
    case_bad_dir(wd, 'group can write', 0o770, None, 'group or others can write')
    if os.geteuid() == 0:
        case_bad_dir(wd, 'owned by another user', 0o700, 65534, 'owned by uid 65534')
    else:
        print('-- (not root: the other-owner case is skipped)', flush=True)
    if failures:
        print('FAIL: %d check(s): %s' % (len(failures), '; '.join(failures)), flush=True)
        sys.exit(1)
    print('all state-dir hostile cases passed', flush=True)


if __name__ == '__main__':
    main()
