# SPDX-License-Identifier: MIT
"""make soak: good guests transfer byte-exact on two tap ports while a third and fourth port run
every hostile-frontend case in a loop, for SOAK_SECONDS (default 600), against one vnetd (make
soak: the ASan+UBSan build, --workers 2). Reports bytes lost, vnetd's RSS and fd count over time
and the control-socket RTT; writes results/soak-latest.{json,png}. Exit 1 on any loss, hostile
failure, vnetd death or a sanitizer report at shutdown."""

import argparse
import json
import os
import sys
import threading
import time

from bench.lib import common
from bench.lib.common import TOP, log
from bench.lib import gnuplot
from tests.kit import harness
from tests.kit import hostile_env
from tests.e2e.hostile import test_hostile_frontend as hostile
from tests.kit.harness import (ControlClient, GuestError, HostServers, Netns, UmlGuest, Vnetd,
                               guest_addr, host_addr, make_blob, ns_fetch_sha, workdir)

BLOB_MB = 8
GOOD = [('10.88.0.1', '10.88.0.2', '52:54:00:88:00:02'), ('10.88.1.1', '10.88.1.2', '52:54:00:88:01:02')]


class SoakEnv(hostile_env.Env):
    """The hostile suite's vnetd (switch ports p0, p1) plus two tap ports (p2, p3) for good guests."""

    def __init__(self, wd, ns):
        super().__init__(wd)
        self.ns = ns
        self.good_socks = [os.path.join(wd, 'g%d.sock' % i) for i in range(2)]

    def start(self):
        ports = self.port_specs()
        ports += ['socket=%s,tap=vsoak%d,mac=%s' % (s, i, GOOD[i][2])
                  for i, s in enumerate(self.good_socks)]
        ctl = os.path.join(self.wd, 'control.sock')
        if os.path.exists(ctl):
            os.unlink(ctl)
        self.vd = Vnetd(self.ns, ports, self.wd).__enter__()
        for i, (host, _, _) in enumerate(GOOD):
            host_addr(self.ns, 'vsoak%d' % i, host)
        time.sleep(0.1)
        self.idle_fds = self.fd_count()


class GoodGuest(threading.Thread):
    """One UML guest: host->guest and guest->host downloads of BLOB_MB, sha256 checked, in a loop."""

    def __init__(self, env, i, kit, blob_sha, stop):
        super().__init__(daemon=True)
        self.env, self.i, self.kit, self.blob_sha, self.stop = env, i, kit, blob_sha, stop
        self.ok_bytes = self.bad = self.errors = self.transfers = 0
        self.messages = []

    def run(self):
        host, guest, _ = GOOD[self.i]
        g = UmlGuest(self.kit, self.env.good_socks[self.i],
                     log_path=os.path.join(self.env.wd, 'good%d.log' % self.i))
        try:
            with g:
                guest_addr(g, guest)
                g.run('dd if=/dev/urandom of=/tmp/up bs=1M count=%d 2>/dev/null && '
                      'httpd -p 8080 -h /tmp' % BLOB_MB, check=True)
                up_sha = g.run('sha256sum /tmp/up', check=True)[1].split()[0]
                g.run('for i in $(seq 50); do ping -c 1 -W 1 %s >/dev/null && break; done' % host,
                      timeout=120)
                while not self.stop.is_set():
                    rc, out = g.run('wget -q -O - http://%s:8000/blob | sha256sum' % host, timeout=300)
                    self.account(rc == 0, out.split()[0] == self.blob_sha if rc == 0 else False,
                                 'host->guest: rc %d %s' % (rc, out.strip()[:80]))
                    got = ns_fetch_sha(self.env.ns, 'http://%s:8080/up' % guest, timeout=120,
                                       run_timeout=300)
                    self.account(bool(got), got == up_sha, 'guest->host: %r' % got)
        except GuestError as e:
            self.errors += 1
            self.messages.append('guest %d: %s' % (self.i, str(e)[-400:]))

    def account(self, completed, exact, what):
        self.transfers += 1
        if completed and exact:
            self.ok_bytes += BLOB_MB << 20
        elif completed:
            self.bad += 1
            self.messages.append('guest %d: corrupted: %s' % (self.i, what))
        else:
            self.errors += 1
            self.messages.append('guest %d: failed: %s' % (self.i, what))


def sample(env, ctl, t0):
    with open('/proc/%d/status' % env.pid()) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith('VmRSS:'))
    try:
        rtt = ctl.rtt() * 1000
    except OSError:
        rtt = None
    return {'t': round(time.monotonic() - t0, 1), 'rss_kb': rss, 'fds': env.fd_count(), 'rtt_ms': rtt}


def p99(values):
    v = sorted(x for x in values if x is not None)
    return v[min(len(v) - 1, int(len(v) * 0.99))] if v else None


def chart(samples, png):
    data = png[:-4] + '.dat'
    with open(data, 'w') as f:
        for s in samples:
            f.write('%s %.1f %d %s\n' % (s['t'], s['rss_kb'] / 1024, s['fds'],
                                        s['rtt_ms'] if s['rtt_ms'] is not None else 'NaN'))
    ok = gnuplot.run([
        'set terminal pngcairo size 900,500', "set output '%s'" % png,
        "set title 'vnetd soak: RSS, fds and control RTT while hostile cases loop'",
        "set xlabel 'seconds'", "set ylabel 'RSS (MiB) / fds'", "set y2label 'control RTT (ms)'",
        'set y2tics', 'set key outside bottom center horizontal',
        "plot '%s' using 1:2 with lines title 'RSS MiB', '' using 1:3 with lines title 'fds', "
        "'' using 1:4 axes x1y2 with points pt 7 ps 0.4 title 'control RTT ms'" % data], log)
    os.unlink(data)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--seconds', type=float, default=float(os.environ.get('SOAK_SECONDS', 600)))
    ap.add_argument('--out', default=os.path.join(TOP, 'results', 'soak-latest.json'))
    args = ap.parse_args()
    common.timestamps()
    common.require('soak', root=True, tun=True, exes=['ip'])
    kit = harness.uml_kit()
    wd = workdir('soak')
    blob_sha = make_blob(os.path.join(wd, 'blob'), BLOB_MB)
    load0 = common.load_check('soak')
    stop = threading.Event()
    samples, rounds, failures = [], 0, {}
    with Netns('vnetd-soak') as ns:
        env = SoakEnv(wd, ns)
        env.start()
        servers = [HostServers(ns, h, wd).__enter__() for h, _, _ in GOOD]
        guests = [GoodGuest(env, i, kit, blob_sha, stop) for i in range(2)]
        try:
            for g in guests:
                g.start()
            ctl = ControlClient(env.vd.control)
            time.sleep(15)                       # guests booted and connected
            env.idle_fds = env.settled_fd_count(env.fd_count())
            t0 = time.monotonic()
            samples.append(sample(env, ctl, t0))
            log('vnetd pid %d (%s), %d fds, RSS %d kB; hostile cases loop for %d s'
                % (env.pid(), harness.VNETD, samples[0]['fds'], samples[0]['rss_kb'], args.seconds))
            last_sample = time.monotonic()
            while time.monotonic() - t0 < args.seconds and env.vd.alive():
                rounds += 1
                for name, fn, lg, nolog in hostile.CASES:
                    if time.monotonic() - t0 >= args.seconds or not env.vd.alive():
                        break
                    time.sleep(0.25)             # vnetd rate-limits guest log lines per call site
                    res = hostile_env.run_case(env, name, fn, lg, nolog)
                    if res.failures:
                        failures.setdefault(name, []).extend(res.failures)
                    if time.monotonic() - last_sample >= 5:
                        samples.append(sample(env, ctl, t0))
                        last_sample = time.monotonic()
                log('round %d done: %d guest transfers, %d case failures so far'
                    % (rounds, sum(g.transfers for g in guests), sum(map(len, failures.values()))))
            samples.append(sample(env, ctl, t0))   # the end, guests still connected
            stop.set()
            for g in guests:
                g.join(timeout=360)
            ctl.close()
        finally:
            stop.set()
            alive = env.vd.alive()
            rc = env.stop()
            for s in servers:
                s.__exit__(None, None, None)
    lost = sum(g.bad + g.errors for g in guests)
    res = {
        'seconds': args.seconds, 'rounds': rounds, 'cases_per_round': len(hostile.CASES),
        'vnetd': harness.VNETD, 'extra_args': os.environ.get('VNETD_EXTRA_ARGS', ''),
        'asan_options': os.environ.get('ASAN_OPTIONS', ''),
        'guest_kit': kits_line(kit), 'load_before': load0, 'load_after': os.getloadavg(),
        'transfers': sum(g.transfers for g in guests),
        'bytes_ok': sum(g.ok_bytes for g in guests), 'transfers_lost_or_corrupted': lost,
        'guest_messages': [m for g in guests for m in g.messages][:20],
        'hostile_failures': failures, 'vnetd_alive_at_end': alive, 'vnetd_exit_status': rc,
        'rss_kb_start': samples[0]['rss_kb'], 'rss_kb_end': samples[-1]['rss_kb'],
        'rss_kb_at_quarter': samples[len(samples) // 4]['rss_kb'],
        'fds_start': samples[0]['fds'], 'fds_end': samples[-1]['fds'],
        'control_rtt_p99_ms': p99(s['rtt_ms'] for s in samples),
        'control_rtt_max_ms': max((s['rtt_ms'] for s in samples if s['rtt_ms'] is not None), default=None),
        'samples': samples,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(res, f, indent=1)
    drew = chart(samples, args.out[:-5] + '.png')
    print('\nvnetd soak: %d s, %d rounds of %d hostile cases, %s' % (
        args.seconds, rounds, len(hostile.CASES), res['extra_args']))
    print('%-34s %s' % ('good transfers (2 guests, 8 MB)', res['transfers']))
    print('%-34s %d MB' % ('bytes delivered byte-exact', res['bytes_ok'] >> 20))
    print('%-34s %d' % ('transfers lost or corrupted', lost))
    print('%-34s %d -> %d -> %d kB' % ('vnetd RSS start -> 1/4 -> end', res['rss_kb_start'],
                                        res['rss_kb_at_quarter'], res['rss_kb_end']))
    print('%-34s %d -> %d' % ('vnetd fds start -> end', res['fds_start'], res['fds_end']))
    print('%-34s %s ms (max %s)' % ('control RTT p99', fmt(res['control_rtt_p99_ms']),
                                     fmt(res['control_rtt_max_ms'])))
    print('%-34s %d distinct' % ('hostile case failures', len(failures)))
    print('%-34s %s (exit status %s)' % ('vnetd alive at the end', alive, rc))
    print('%-34s %.2f -> %.2f' % ('load average (1 min)', load0[0], res['load_after'][0]))
    print('written: %s%s' % (args.out, ' and .png' if drew else ''))
    for m in res['guest_messages']:
        print('  ' + m)
    for name, f in failures.items():
        print('  FAIL %s: %s' % (name, '; '.join(f[:3])))
    return 0 if (lost == 0 and not failures and alive and rc == 0) else 1


def kits_line(kit):
    from tests.kit import kits
    return kits.describe(kit)


def fmt(v):
    return '%.1f' % v if v is not None else '-'


if __name__ == '__main__':
    sys.exit(main())
