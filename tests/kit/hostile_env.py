# SPDX-License-Identifier: MIT
"""Machinery of the hostile-frontend test: vnetd with two switch ports, good and bad clients,
per-case checks (see test_hostile_frontend.py)."""

import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import traceback

from .harness import SKIP, VNETCTL, VNETD, Vnetd, workdir
from .harness import NoNs as _NoNs
from . import vhost_user_client as vu
from .vhost_user_client import (CTRL_Q, RX_Q, TX_Q, VRING_DESC_F_INDIRECT, VRING_DESC_F_NEXT,
                                VRING_DESC_F_WRITE, GuestMemory, VhostUserClient,
                                VirtioNetFrontend, VhostUserError, ether_frame)

MACS = ['52:54:00:77:00:01', '52:54:00:77:00:02']
BCAST = 'ff:ff:ff:ff:ff:ff'
P0_FLOOD_RATE = 500      # p0's flood-rate= (frames a second)
P0_IPS = ['10.77.0.1', 'fe80::77:1']  # p0's ips= (IP anti-spoofing; the other cases send no IP)
P1_SERVED_WITHIN = 1.0   # s: how long p1 may wait while p0 stalls a message (normally ~20 ms)
NEXT, WRITE, INDIRECT = VRING_DESC_F_NEXT, VRING_DESC_F_WRITE, VRING_DESC_F_INDIRECT
WITH_INDIRECT = vu.DEFAULT_FEATURES | (1 << vu.VIRTIO_RING_F_INDIRECT_DESC)
U64 = 2**64


class Result:
    def __init__(self, name):
        self.name = name
        self.failures = []

    def check(self, cond, what):
        print(('    ok   ' if cond else '    FAIL ') + what, flush=True)
        if not cond:
            self.failures.append(what)
        return cond

    def note(self, what):
        print('    --   ' + what, flush=True)


def prerequisites():
    """None when vnetd and vnetctl are built and Python has os.memfd_create and os.eventfd;
    else the exit status a hostile test's main() returns (1: not built, SKIP: no such Python)."""
    for exe in (VNETD, VNETCTL):
        if not os.access(exe, os.X_OK):
            print('FAIL: %s not built (run make)' % exe)
            return 1
    if not (hasattr(os, 'memfd_create') and hasattr(os, 'eventfd')):
        print('SKIP: needs Python >= 3.10 on Linux (os.memfd_create, os.eventfd)')
        return SKIP
    return None


class Env:
    """The vnetd under test, its log, and the hostile objects of the running case."""

    def __init__(self, wd):
        self.wd = wd
        self.socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
        self.vd = None
        self.idle_fds = None
        self.hostile = []

    # -- vnetd --
    def port_specs(self):
        """The hostile cases' two switch ports (p0 with storm control and IP anti-spoofing)."""
        ports = ['socket=%s,switch,mac=%s' % (s, m) for s, m in zip(self.socks, MACS)]
        ports[0] += ',flood-rate=%d' % P0_FLOOD_RATE  # storm control (the other cases stay under)
        ports[0] += ',ips=' + '+'.join(P0_IPS)
        return ports

    def start(self):
        ports = self.port_specs()
        ctl = os.path.join(self.wd, 'control.sock')
        if os.path.exists(ctl):
            os.unlink(ctl)  # a dead vnetd's socket would make __enter__ return too early
        self.vd = Vnetd(_NoNs(), ports, self.wd).__enter__()
        time.sleep(0.1)
        self.idle_fds = self.fd_count()

    def stop(self):
        """Stop vnetd; returns its exit status (0: clean, no sanitizer report)."""
        return self.vd.stop() if self.vd else 0

    def pid(self):
        return self.vd.proc.pid

    def fd_count(self):
        return len(os.listdir('/proc/%d/fd' % self.pid()))

    def memfd_maps(self):
        with open('/proc/%d/maps' % self.pid()) as f:
            return [line.strip() for line in f if 'memfd:' in line]

    def log_size(self):
        try:
            return os.path.getsize(self.vd.log_path)
        except OSError:
            return 0

    def log_since(self, offset):
        with open(self.vd.log_path, 'rb') as f:
            f.seek(offset)
            return f.read().decode(errors='replace')

    def wait_log(self, offset, regex, timeout=1.5):
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(regex, self.log_since(offset))
            if m or time.monotonic() > deadline:
                return m
            time.sleep(0.05)

    def _ctl(self, request):
        """One control-socket request; raises (never exits) if vnetd does not answer."""
        r = self.vd.ctl('raw', json.dumps(request), check=False)
        if r.returncode != 0:
            raise VhostUserError('vnetctl raw %s: %s' % (json.dumps(request), (r.stdout + r.stderr).strip()))
        return json.loads(r.stdout)

    def stats(self, port):
        data = self._ctl({'cmd': 'stats', 'port': port})
        return {q['index']: q for q in data['ports'][0]['queues']}

    def connected(self, port):
        return {p['name']: p for p in self._ctl({'cmd': 'ports'})['ports']}[port]['connected']

    def settled_fd_count(self, want, timeout=1.0):
        """fd count once vnetd has closed the control connections vnetctl just hung up."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.fd_count()
            if n == want or time.monotonic() > deadline:
                return n
            time.sleep(0.02)

    def wait_disconnected(self, port, timeout=4.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.vd.alive():
                return False
            try:
                if not self.connected(port):
                    return True
            except VhostUserError:
                pass  # vnetd busy: ask again
            time.sleep(0.02)
        return False

    def wait_queue(self, port, q, key, value=True, timeout=2.0):
        deadline = time.monotonic() + timeout
        while True:
            st = self.stats(port)[q]
            if st[key] == value or time.monotonic() > deadline:
                return st
            time.sleep(0.02)

    # -- hostile objects of the running case (closed after it) --
    def frontend(self, port=0, **kw):
        f = VirtioNetFrontend(self.socks[port], **kw)
        self.hostile.append(f)
        return f

    def client(self, port=0, owned=True):
        """A raw frontend on the port; owned: it sends SET_OWNER first, as every real frontend
        does before anything the state table wants an owner for (vhost_user_state.c)."""
        c = VhostUserClient(self.socks[port])
        self.hostile.append(c)
        if owned:
            c.send(vu.SET_OWNER)
        return c

    def close_hostile(self):
        for h in self.hostile:
            try:
                h.close()
            except Exception:
                pass
        self.hostile = []

    # -- the good frontends --
    def good_p1(self, res, what='p1'):
        """(4): p1 set up from scratch, TX_SET acked OK, one transmitted packet counted."""
        t0 = time.monotonic()  # the stats request counts too: vnetd must answer it meanwhile
        try:
            before = self.stats('p1')[TX_Q]['packets']
            with VirtioNetFrontend(self.socks[1]) as f:
                f.setup()
                ack = f.coal_tx_set(4, 20)
                sent = f.transmit(ether_frame(BCAST, MACS[1]))
            dt = time.monotonic() - t0
        except (VhostUserError, OSError) as e:
            res.check(False, '%s: good frontend works (%s)' % (what, e))
            return None
        try:
            after = self.stats('p1')[TX_Q]['packets']
        except VhostUserError as e:
            res.check(False, '%s: stats (%s)' % (what, e))
            return None
        res.check(ack == vu.VIRTIO_NET_OK and sent and after == before + 1,
                  '%s: good frontend: TX_SET ack %r, packet counted %d -> %d (%.0f ms)'
                  % (what, ack, before, after, dt * 1000))
        self.wait_disconnected('p1')
        return dt

    def good_p0(self, res):
        """(5): a new good connection on p0 works."""
        if not res.check(self.wait_disconnected('p0'), 'p0: previous frontend gone'):
            return
        try:
            with VirtioNetFrontend(self.socks[0]) as f:
                f.setup()
                ack = f.coal_tx_set(8, 50)
                sent = f.transmit(ether_frame(BCAST, MACS[0]))
            res.check(ack == vu.VIRTIO_NET_OK and sent,
                      'p0: new good frontend: TX_SET ack %r, packet sent %r' % (ack, sent))
        except (VhostUserError, OSError) as e:
            res.check(False, 'p0: new good frontend works (%s)' % e)
        self.wait_disconnected('p0')

    def p1_latency(self, timeout=10.0):
        """Seconds until a new p1 frontend gets its GET_FEATURES answered (None: not in timeout)."""
        t0 = time.monotonic()
        try:
            c = VhostUserClient(self.socks[1], timeout=timeout)
            try:
                c.get_features()
            finally:
                c.close()
        except (VhostUserError, OSError):
            return None
        return time.monotonic() - t0

    def p1_broadcast(self):
        """A good p1 guest sends one broadcast: the switch floods it to p0's RX queue."""
        with VirtioNetFrontend(self.socks[1]) as f:
            f.setup()
            f.transmit(ether_frame(BCAST, MACS[1]))
        self.wait_disconnected('p1')


# =============================================================================================
# Case helpers
# =============================================================================================
def expect_broken(env, res, q, what):
    st = env.wait_queue('p0', q, 'broken', True)
    res.check(st['broken'], 'p0 queue %d (%s) is broken after %s' % (q, st['kind'], what))


def expect_dropped(env, res, c, what):
    res.check(c.wait_closed(3.0), 'vnetd dropped the connection after %s' % what)


def expect_alive_port(env, res, what):
    """Port p1 still answers at once (the loop is not blocked)."""
    dt = env.p1_latency()
    res.check(dt is not None and dt < P1_SERVED_WITHIN,
              'p1 answers at once after %s (%s)' % (what, '%.2f s' % dt if dt else 'never'))


def expect_alive_conn(res, c, what):
    """The connection still answers requests (GET_QUEUE_NUM)."""
    try:
        n = c.get_queue_num()
        res.check(n == 3, 'connection kept after %s (GET_QUEUE_NUM = %d)' % (what, n))
    except (VhostUserError, OSError) as e:
        res.check(False, 'connection kept after %s (%s)' % (what, e))


def refused(res, ack, what):
    res.check(ack not in (0, None), '%s refused with REPLY_ACK %r' % (what, ack))


def buf(f, n=256):
    return f.mem.alloc(n)


def good_after_case(env, res):
    """Steps (4)-(5) after a case: p1 still passes good traffic, a new good p0 works, and both
    frontends are gone before the fd count."""
    env.good_p1(res, '(4) p1')
    env.good_p0(res)
    env.wait_disconnected('p0')
    env.wait_disconnected('p1')


def run_case(env, name, fn, log, nolog, after=good_after_case):
    """One case, then the checks every case gets: (1) vnetd alive, (2) its log line, after()'s
    good traffic (good_after_case: (4) p1, (5) a new good p0), (6) fds and mappings."""
    print('--- %s' % name, flush=True)
    res = Result(name)
    mark = env.log_size()
    try:
        fn(env, res)
    except Exception as e:  # a case that cannot even run is a failure, not a crash of the test
        res.check(False, 'case raised %s: %s' % (type(e).__name__, e))
        traceback.print_exc()
    finally:
        env.close_hostile()
    alive = res.check(env.vd.alive(), '(1) vnetd still running')
    if log:
        m = env.wait_log(mark, log)
        res.check(bool(m), '(2) logged: %s' % (m.group(0).strip() if m else '/%s/ (no such line)' % log))
    else:
        res.note('(2) no log line expected: %s' % nolog)
    if not alive:
        res.note('vnetd died (rc %r); log tail:\n%s' % (env.vd.proc.poll(), env.log_since(mark)[-1500:]))
        env.stop()
        env.start()
        return res
    after(env, res)
    fds = env.settled_fd_count(env.idle_fds)
    maps = env.memfd_maps()
    res.check(fds == env.idle_fds and not maps,
              '(6) fds back to idle (%d, idle %d), no memfd mapped (%d)' % (fds, env.idle_fds, len(maps)))
    if fds != env.idle_fds:
        env.idle_fds = fds  # report each leak once, at the case that caused it
    return res


def run_suite(env, cases, title, after=good_after_case):
    """Every case of cases [(name, fn, log, nolog)] named on the command line (all without
    arguments) through run_case(), then the final checks (alive, fds, mappings, clean SIGTERM)
    and the summary. env is started here. Return: the exit status (1 if any case failed)."""
    t_start = time.monotonic()
    env.start()
    print('vnetd pid %d, idle fds %d, log %s' % (env.pid(), env.idle_fds, env.vd.log_path))
    results, only = [], sys.argv[1:]
    try:
        last = 0.0
        for name, fn, log, nolog in cases:
            if only and not any(o.lower() in name.lower() for o in only):
                continue
            # vnetd rate-limits guest log lines to 5/s per call site: keep cases >= 0.25 s apart.
            time.sleep(max(0.0, 0.25 - (time.monotonic() - last)))
            last = time.monotonic()
            results.append(run_case(env, name, fn, log, nolog, after))
        final = Result('final')
        final.check(env.vd.alive(), 'vnetd still running at the end')
        if env.vd.alive():
            fds, maps = env.settled_fd_count(env.idle_fds), env.memfd_maps()
            final.check(fds == env.idle_fds, 'fd count at the end %d == idle %d' % (fds, env.idle_fds))
            final.check(not maps, 'no memfd mappings left in /proc/PID/maps %s' % maps)
    finally:
        rc = env.stop()
    final.check(rc == 0, 'vnetd shut down cleanly on SIGTERM (status %s; a sanitizer build '
                'reports leaks or errors here)' % rc)
    results.append(final)
    bad = [r for r in results if r.failures]
    print('\n%s summary: %d cases (incl. final checks), %d failed, %.1f s'
          % (title, len(results), len(bad), time.monotonic() - t_start))
    for r in results:
        print('  %-4s %s' % ('FAIL' if r.failures else 'ok', r.name))
        for x in r.failures:
            print('         - ' + x)
    return 1 if bad else 0
