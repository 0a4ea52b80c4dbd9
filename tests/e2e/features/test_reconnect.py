# SPDX-License-Identifier: MIT
"""A UML frontend SIGKILLed mid-transfer: vnetd stays up, the port takes a new guest, which works.

Each of 3 rounds boots a guest on the same port, pings the host, then starts downloading a
BLOB_MB MiB blob and polls vnetd's stats until the port's RX queue (queue 0, host -> guest) has
moved at least KILL_AFTER_MB MiB this round but less than the blob: the transfer is really in
progress. Then the guest is SIGKILLed. Asserted per round: vnetd survives, the port drops to
disconnected, and the round's RX bytes are > KILL_AFTER_MB MiB and < the blob size (RX bytes are
whole frames, so fewer than the blob's size means the blob was not all delivered: mid-transfer).
Then: no fd leaked over the kills, and a new guest on the same port pings the host and
downloads a SMALL_MB MiB file byte-exact (sha256).

All of it twice: on split rings (packed=off), then on a port with packed=on,in-order=on and
--state-dir (the guest negotiates packed rings and IN_ORDER). There each kill stops the packed queues cleanly and
keeps where they stopped; each new guest, a fresh driver whose base (0, as virtio_uml sends for
any fresh ring) is not a repeat, starts its own rings: the log says its base stands, never that
a kept position was resumed.

A UML guest downloads at roughly 1 GiB/s here (256 MiB in 0.2-0.3 s; 20-30 MiB arrived between
two polls 20 ms apart): hence a 1 GiB blob and a 2 ms poll, which kills at a few MiB. Losing
that race (the download completing before the kill) fails the test; it can never make it pass.
"""

import os
import subprocess
import time

from tests.kit.harness import (Netns, UmlGuest, Vnetd, check, fail, guest_addr, host_addr,
                               make_blob, uml_start)

HOST_IP, GUEST_IP = '10.78.0.1', '10.78.0.2'
ROUNDS = 3
BLOB_MB = 1024          # the download killed mid-way (make_blob sizes are MiB)
KILL_AFTER_MB = 2       # RX bytes this round before the kill
SMALL_MB = 4            # the final guest's byte-exact download
START_TIMEOUT = 120     # s for the download to reach KILL_AFTER_MB
DISCONNECT_TIMEOUT = 10  # s for the port to show disconnected after the kill
RX = 0                  # queue 0 is RX (host -> guest), 1 is TX


def open_fds(pid):
    return len(os.listdir('/proc/%d/fd' % pid))


def rx_bytes(vd):
    return vd.stats()['p0'][RX]['bytes']


def wait_disconnected(vd, what):
    deadline = time.monotonic() + DISCONNECT_TIMEOUT
    while vd.port_info()['p0']['connected']:
        if time.monotonic() > deadline:
            fail('%s: p0 still connected %d s after the kill; vnetd log:\n%s'
                 % (what, DISCONNECT_TIMEOUT, vd.log_tail()))
        time.sleep(0.05)


def kill_mid_download(vd, g, round_):
    """Start the blob download, SIGKILL the guest once it is under way. Returns the port's RX
    bytes before the download started, and how many had arrived since when the kill was decided."""
    b0 = rx_bytes(vd)
    g.run('wget -q -O /dev/null http://%s:8000/blob >/dev/null 2>&1 &' % HOST_IP, check=True)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            moved = rx_bytes(vd) - b0
            if moved >= BLOB_MB << 20:
                fail('round %d: %d bytes received before the kill: the %d MiB download finished '
                     'before it could be killed (raise BLOB_MB)' % (round_, moved, BLOB_MB))
            if moved >= KILL_AFTER_MB << 20:
                break
            if time.monotonic() > deadline:
                fail('round %d: the download moved only %d bytes in %d s (want >= %d MiB before '
                     'the kill); console:\n%s\nvnetd log:\n%s'
                     % (round_, moved, START_TIMEOUT, KILL_AFTER_MB, g.tail(), vd.log_tail()))
            time.sleep(0.002)
    finally:
        g.kill()
    return b0, moved


def guest_up(g):
    guest_addr(g, GUEST_IP)


def run_rounds(kit, wd, sock, small_sha, keys='', extra=(), vd_wd=None):
    tag = '[%s] ' % keys if keys else ''
    with Netns('vnetd-e2e-reconn') as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0%s' % (sock, ',' + keys if keys else '')],
                  vd_wd or wd, extra=extra) as vd:
        host_addr(ns, 'vtap0', HOST_IP)
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP,
                         '--directory', wd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            check(vd.stats()['p0'][RX]['kind'] == 'rx', 'p0 queue %d is the RX queue' % RX)
            fds_idle = open_fds(vd.proc.pid)
            for round_ in range(ROUNDS):
                g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml%d.log' % round_))
                try:
                    g.start()
                    g.wait_ready()
                    guest_up(g)
                    rc, _ = g.run('ping -c 2 -W 5 %s' % HOST_IP, timeout=60)
                    check(rc == 0, '%sguest %d pings host' % (tag, round_))
                    if 'packed=on' in keys:
                        info = vd.port_info()['p0']
                        check(info['ring'] == 'packed' and info['in_order'],
                              '%sguest %d: ring %s, in_order %s' % (tag, round_, info['ring'],
                                                                   info['in_order']))
                except BaseException:
                    g.kill()
                    raise
                b0, at_kill = kill_mid_download(vd, g, round_)
                check(vd.alive(), 'vnetd survives SIGKILL of guest %d mid-transfer' % round_)
                wait_disconnected(vd, 'round %d' % round_)
                print('ok   port p0 disconnected after the kill', flush=True)
                moved = rx_bytes(vd) - b0
                check(KILL_AFTER_MB << 20 < moved < BLOB_MB << 20,
                      'guest %d killed mid-transfer: %.1f MiB of the %d MiB blob received this '
                      'round (%.1f MiB when the kill was decided)'
                      % (round_, moved / 2**20, BLOB_MB, at_kill / 2**20))
            # A control connection a stats call just closed may still be open in vnetd for a
            # moment: wait (bounded) for the count to come back, then compare the fd lists.
            for _ in range(50):
                fds_after = open_fds(vd.proc.pid)
                if fds_after <= fds_idle:
                    break
                time.sleep(0.1)
            if fds_after > fds_idle:
                print('  fds now: %s' % sorted(os.readlink('/proc/%d/fd/%s' % (vd.proc.pid, f))
                                               for f in os.listdir('/proc/%d/fd' % vd.proc.pid)))
            check(fds_after <= fds_idle, 'no fd leaked over %d kills (%d -> %d)'
                  % (ROUNDS, fds_idle, fds_after))
            if 'packed=on' in keys:
                log = vd.log_tail(1000000)
                check(log.count('base 0x00000000 stands') >= ROUNDS and
                      'resumes where it stopped' not in log,
                      '%seach new guest\'s own base stood; no kept position was resumed' % tag)
            with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml-final.log')) as g:
                guest_up(g)
                rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
                check(rc == 0, 'a new guest on the same port pings the host')
                rc, out = g.run('wget -q -O - http://%s:8000/small | sha256sum' % HOST_IP,
                                timeout=120)
                got = out.split()[0] if out.split() else ''
                check(rc == 0 and got == small_sha,
                      'the new guest downloads %d MiB byte-exact (sha256 %s, want %s)'
                      % (SMALL_MB, got[:16], small_sha[:16]))
        finally:
            http.kill()
        check(vd.alive(), 'vnetd still running')


def main():
    kit, wd = uml_start('reconnect')
    try:
        # The killed downloads need bytes, not content: a sparse file takes no disk and no time.
        with open(os.path.join(wd, 'blob'), 'wb') as f:
            f.truncate(BLOB_MB << 20)
        small_sha = make_blob(os.path.join(wd, 'small'), SMALL_MB)
        run_rounds(kit, wd, os.path.join(wd, 'p0.sock'), small_sha, 'packed=off')
        state = os.path.join(wd, 'state')
        os.mkdir(state)
        pwd = os.path.join(wd, 'packed')
        os.mkdir(pwd)
        run_rounds(kit, wd, os.path.join(wd, 'pk.sock'), small_sha, 'packed=on,in-order=on',
                   ['--state-dir', state], pwd)
    finally:
        for f in ('blob', 'small'):     # 1 GiB: do not leave it behind in /tmp
            try:
                os.remove(os.path.join(wd, f))
            except FileNotFoundError:
                pass


if __name__ == '__main__':
    main()
