# SPDX-License-Identifier: MIT
"""One guest flooding its TX queue must not starve the other ports or the control socket.

Issue "one guest must never starve the others". vnetd with three switch ports a, b, c (p0..p2):
  - c: a well-behaved guest with RX buffers posted; it announces its MAC (one broadcast);
  - a: the hostile guest. Its TX queue holds tests/kit/fairness.py FLOOD_RING (32768) valid one-frame
    chains and tests/kit/ringspin.c (compiled here with cc) keeps avail.idx == used.idx + ring
    size for ever, re-posting the same heads as fast as vnetd uses them and kicking whenever
    allowed. Each chain is one 64 KiB frame in an indirect table of 1024 descriptors (valid,
    and costly: the ring takes vnetd ~200 ms to drain, so the flood survives the flooder being
    descheduled on a busy machine; see tests/kit/fairness.py). The frame goes from A's MAC to A's MAC,
    which the switch filters (destination behind its own port), so the flood costs vnetd TX
    work only and fills nobody's RX queue. The flooder runs at nice -20 when allowed.
While A floods, and a thread does control-socket round trips (10 ms apart) all along:
  - a fresh frontend on b comes up (full vhost-user negotiation, memory table, three rings),
    gets VIRTIO_NET_OK for a control command (NOTF_COAL RX_SET), and sends frames to c's MAC,
    each completed by vnetd; c receives them all, byte for byte;
  - `vnetctl stats` answers and counts b's frames and A's flood;
  - every control round trip is answered (none waits past the bound).
Only "answered, came up, moved data" is asserted, each with a bounded wait (WAIT seconds,
VNETD_FAIRNESS_WAIT, default 30) that fails with a message, vnetd's CPU and the round trips so
far; round-trip times (p50/p99), the phases' durations and vnetd's CPU are printed as
information. At the end every frontend is closed, the flooder stopped, vnetd's fd
count is back to idle and vnetd exits cleanly. Needs no root for the ports (no interface);
exit 77 only if there is no C compiler for the flooder.
"""

import os
import shutil
import subprocess
import sys
import time

from tests.kit import harness
from tests.kit.harness import check, skip, workdir
from tests.kit import fairness as fk
from tests.kit.fairness import MACS, PORT
from tests.kit.vhost_user_client import (NET_HDR_LEN, RX_Q, TX_Q, VIRTIO_NET_OK, VhostUserError,
                                         VirtioNetFrontend)

WAIT = float(os.environ.get('VNETD_FAIRNESS_WAIT', '30'))  # s: bound of every wait under flood
FRAMES = 32              # b -> c
MIN_FLOOD_S = 3.0        # keep flooding (and probing) at least this long


def b_phase(socks, timings, live, fail):
    """Port b's guest while a floods: up, control command, traffic to c (appended to live)."""
    t0 = time.monotonic()
    b = VirtioNetFrontend(socks['b'], timeout=WAIT)
    live.append(b)
    try:
        b.setup()
    except (VhostUserError, OSError) as e:
        fail('port b did not come up while a floods (%s, after %.1f s; each vhost-user reply may '
             'take %.0f s): vnetd does not serve the other ports' % (e, time.monotonic() - t0, WAIT))
    timings['b_setup_s'] = time.monotonic() - t0
    t1 = time.monotonic()
    ack = b.coal_rx_set(16, 50, timeout=WAIT)
    timings['b_ctrl_s'] = time.monotonic() - t1
    if ack is None:
        fail('port b: control command NOTF_COAL RX_SET not completed within %.0f s while a floods'
             % WAIT)
    check(ack == VIRTIO_NET_OK, 'b: up (%.2f s), control command NOTF_COAL RX_SET acked OK (%.3f s)'
          % (timings['b_setup_s'], timings['b_ctrl_s']))
    t2 = time.monotonic()
    for i in range(FRAMES):
        if not b.transmit(b_frame(i), timeout=WAIT):
            fail('port b: frame %d of %d not completed by vnetd within %.0f s while a floods'
                 % (i + 1, FRAMES, WAIT))
    timings['b_tx_s'] = time.monotonic() - t2
    print('ok   b: %d frames to c completed by vnetd (%.3f s)' % (FRAMES, timings['b_tx_s']),
          flush=True)


def b_frame(i):
    return fk.bulk_frame(MACS['c'], MACS['b'], 100 + i)


def c_check_received(c, bufs, fail):
    """c got every frame b sent, in order, byte for byte."""
    ring, bad = c.rings[RX_Q], []
    for i in range(FRAMES):
        e = ring.get_used(WAIT)
        if e is None:
            fail('c received %d of %d frames from b within %.0f s' % (i, FRAMES, WAIT))
        head, length = e
        data = c.mem.read(bufs[head], length) if head in bufs else b''
        if data[NET_HDR_LEN:] != b_frame(i):  # (the header says num_buffers 1)
            bad.append(i)
    check(not bad, 'c: received all %d frames from b, in order, byte for byte%s'
          % (FRAMES, '' if not bad else ' (frames %s differ)' % bad[:8]))


def main():
    wd = workdir('fairness')
    try:
        exe = fk.build_ringspin(wd)
    except fk.NoCompiler as e:
        skip(str(e))
    vd, socks = fk.start_vnetd(wd)
    pid = vd.proc.pid
    live = []
    try:
        idle_fds = len(os.listdir('/proc/%d/fd' % pid))  # before any connection
        idle = fk.sample_rtts(vd.control, 200)
        print('--   control RTT idle: %s' % fk.fmt_rtt(idle), flush=True)

        c = VirtioNetFrontend(socks['c'], timeout=WAIT)
        live.append(c)
        c.setup()
        rx = c.rings[RX_Q]
        c_bufs = {}
        for _ in range(FRAMES + 8):
            gpa = c.mem.alloc(2048)
            head = rx.add_chain([(gpa, 2048, True)])
            c_bufs[head] = gpa
            rx.put_avail(head)
        rx.kick()
        check(fk.teach_switch(c, MACS['c']), 'c: up, RX buffers posted, its MAC announced')

        flood = fk.Flood(exe, socks['a'], timeout=WAIT)
        live.insert(0, flood)
        print('--   flood: ring %d, %d-byte frame in %d descriptors, flooder scheduling: %s'
              % (fk.FLOOD_RING, fk.FLOOD_FRAME, fk.FLOOD_PIECES, flood.spin.sched), flush=True)
        check(flood.wait_running(WAIT), 'a: flooding (vnetd consumed %d chains)' % flood.spin.count())
        t0, cpu0, n0 = time.monotonic(), fk.cpu_seconds(pid), flood.spin.count()
        probe = fk.ControlProbe(vd.control, interval=0.01, timeout=WAIT).start()

        timings = {}

        def fail(why):
            """Fail with what vnetd did meanwhile (its CPU, the control round trips)."""
            dt = time.monotonic() - t0
            harness.fail('%s\n     meanwhile (%.1f s of flood): vnetd CPU %.0f %%, control socket: %s'
                         % (why, dt, 100.0 * (fk.cpu_seconds(pid) - cpu0) / dt, probe.status()))

        b_phase(socks, timings, live, fail)
        c_check_received(c, c_bufs, fail)

        try:
            st = vd.stats()  # vnetctl: its own 20 s bound
        except subprocess.TimeoutExpired as e:
            fail('vnetctl stats while a floods: %s' % e)
        a_tx, b_tx, c_rx = st[PORT['a']][TX_Q], st[PORT['b']][TX_Q], st[PORT['c']][RX_Q]
        check(b_tx['packets'] == FRAMES and c_rx['packets'] >= FRAMES,
              'vnetctl stats answers while a floods: b TX %d packets, c RX %d, a TX %d (broken: %s)'
              % (b_tx['packets'], c_rx['packets'], a_tx['packets'], a_tx['broken']))

        while time.monotonic() - t0 < MIN_FLOOD_S:
            time.sleep(0.1)
        rtt = probe.stop()
        dt = time.monotonic() - t0
        cpu = 100.0 * (fk.cpu_seconds(pid) - cpu0) / dt
        flooded = flood.spin.count() - n0
        check(flood.spin.alive() and not a_tx['broken'] and flooded > 0,
              'the flood ran throughout: vnetd consumed %d chains of a in %.1f s (%.0f/s, %.0f MB/s), '
              'vnetd CPU %.0f %%' % (flooded, dt, flooded / dt, flooded * fk.FLOOD_FRAME / dt / 1e6, cpu))
        print('--   control RTT under flood: %s' % fk.fmt_rtt(rtt), flush=True)
        print('--   phases under flood: b up %.2f s, control command %.3f s, %d frames %.3f s'
              % (timings['b_setup_s'], timings['b_ctrl_s'], FRAMES, timings['b_tx_s']), flush=True)
        check(rtt['errors'] == 0 and rtt['samples'] > 0,
              'control socket answered all %d round trips under flood (none waited past %.0f s%s)'
              % (rtt['samples'], WAIT, '' if not probe.errors else ': ' + probe.errors[0]))

        res = flood.stop()
        live.remove(flood)
        print('--   flooder: %d chains completed in %.1f s' % (res[0], res[1] or 0), flush=True)
        fk.close_all(live)
        live = []
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            info = vd.port_info()
            fds = len(os.listdir('/proc/%d/fd' % pid))
            if not any(p['connected'] for p in info.values()) and fds == idle_fds:
                break
            time.sleep(0.05)
        check(fds == idle_fds and not any(p['connected'] for p in info.values()),
              'all frontends gone, vnetd fd count back to idle (%d, idle %d)' % (fds, idle_fds))
    finally:
        fk.close_all(live)
        rc = vd.stop()
        shutil.rmtree(wd, ignore_errors=True)
    check(rc == 0, 'vnetd shut down cleanly on SIGTERM (status %s)' % rc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
