# SPDX-License-Identifier: MIT
"""Byte-exact transfers both ways at once while the guest churns its coalescing parameters.

Issue "Reliability and security", point 4. A UML guest on a vnetd tap port, for
VNETD_CHURN_SECONDS (default 60):
  - host -> guest: the guest downloads a random file (VNETD_CHURN_MB, default 8) of known
    sha256 from the host in a loop
    (`wget -O - | sha256sum`), logging start, end and sha256 of every transfer;
  - guest -> host: the host downloads the guest's random file of the same size (busybox
    httpd) in a loop and checks its sha256;
  - meanwhile a shell loop INSIDE the guest runs `ethtool -C eth0 ...` every 100 ms with a
    random profile: all off, 100000 us / 100000 frames, 4294967295 (the largest value),
    random values in 0..100000, small values, usecs-only and frames-only (tx-frames stays
    non-zero: Linux 6.1 answers EBUSY to a tx-frames change between 0 and non-zero while
    eth0 is up). A profile equal to the previous one is skipped (ethtool would refuse it).
Asserted: every transfer's sha256 matches (0 bytes lost or corrupted); every transfer completes
within VNETD_CHURN_TIMEOUT seconds (default 30; a stalled transfer is a lost notification:
FAIL with vnetctl stats --json of the port); no ethtool change was refused; vnetctl stats shows
the values set by "guest" and changing; no queue broken; vnetd alive.
"""

import base64
import hashlib
import json
import os
import subprocess
import threading
import time

from tests.kit.harness import (GuestError, Netns, UmlGuest, Vnetd, check, guest_addr, host_addr,
                               require_root_and_tun, uml_kit, workdir)

HOST_IP, GUEST_IP = '10.82.0.1', '10.82.0.2'
NS = 'vnetd-e2e-churn'  # Netns appends -PID
MAC = '52:54:00:82:00:02'

# Runs in the guest (busybox ash); the changes are logged to /tmp/churn.log, counts to /tmp/churn.count.
CHURN_SH = r'''#!/bin/sh
# Few forks per round (a UML fork is slow): arithmetic and `read` are shell built-ins.
renice -n -15 -p $$ >/dev/null 2>&1   # the transfers saturate the guest CPU; stay on time
n=0; err=0; skip=0; prev=
while [ ! -e /tmp/stop ]; do
  R1=$(( (RANDOM * 32768 + RANDOM) % 100001 )); R2=$(( (RANDOM * 32768 + RANDOM) % 100001 ))
  R3=$(( (RANDOM * 32768 + RANDOM) % 100001 )); R4=$(( (RANDOM * 32768 + RANDOM) % 100000 + 1 ))
  case $((RANDOM % 8)) in
  0) p="0 0 0 1" ;;
  1) p="100000 100000 100000 100000" ;;
  2) p="4294967295 4294967295 4294967295 4294967295" ;;
  3) p="$R1 $R2 $R3 $R4" ;;
  4) p="$((R1 % 201)) $((R2 % 65)) $((R3 % 201)) $((R4 % 64 + 1))" ;;
  5) p="100000 0 100000 1" ;;
  6) p="0 100000 0 100000" ;;
  *) p="$((R1 % 2001)) $((R2 % 129)) $((R3 % 2001)) $((R4 % 128 + 1))" ;;
  esac
  if [ "$p" = "$prev" ]; then skip=$((skip + 1)); continue; fi
  set -- $p
  if ethtool -C eth0 rx-usecs $1 rx-frames $2 tx-usecs $3 tx-frames $4 2>/tmp/churn.last; then
    n=$((n + 1)); prev=$p
    read up idle </proc/uptime
    echo "$up $p" >> /tmp/churn.log
  else
    err=$((err + 1))
    read up idle </proc/uptime
    echo "$up $p: $(cat /tmp/churn.last)" >> /tmp/churn.err
  fi
  echo "$n $err $skip" > /tmp/churn.count
  usleep 100000
done
# Leave a profile that lets the transfers still in flight finish at full speed.
[ "$prev" = "0 0 0 1" ] || ethtool -C eth0 rx-usecs 0 rx-frames 0 tx-usecs 0 tx-frames 1 \
  || echo "final: failed" >> /tmp/churn.err
echo "$n $err $skip" > /tmp/churn.count
echo done > /tmp/churn.done
'''

# Host -> guest loop, in the guest. $1 = URL, $2 = per-transfer timeout (s).
IN_SH = r'''#!/bin/sh
while [ ! -e /tmp/stop ]; do
  read s idle </proc/uptime
  echo "$s" > /tmp/in.cur
  h=$(timeout $2 wget -q -O - "$1" | sha256sum)
  read e idle </proc/uptime
  echo "$s $e ${h%% *}" >> /tmp/in.log
done
rm -f /tmp/in.cur
echo done > /tmp/in.done
'''

STAT_KEYS = ('packets', 'bytes', 'kicks', 'notifications', 'suppressed', 'held',
             'timer_notifications', 'dropped', 'rx_no_buffers')



def put_script(g, path, text):
    b64 = base64.b64encode(text.encode()).decode()
    g.run('echo %s | base64 -d > %s && chmod +x %s' % (b64, path, path), check=True)


# Guest -> host loop, in the namespace: download, check, print one JSON line per transfer;
# stops when the stop file exists or at the first failure.
OUT_PY = r'''
import hashlib, json, os, sys, time, urllib.request
url, sha, size, limit, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
while not os.path.exists(stop):
    t0 = time.monotonic()
    h, n, err = hashlib.sha256(), 0, None
    try:
        with urllib.request.urlopen(url, timeout=limit) as r:
            while True:
                b = r.read(1 << 16)
                if not b:
                    break
                h.update(b)
                n += len(b)
                if time.monotonic() - t0 > limit:
                    raise TimeoutError('still running after %g s' % limit)
    except Exception as e:
        err = repr(e)
    ok = err is None and n == size and h.hexdigest() == sha
    print(json.dumps({'s': time.monotonic() - t0, 'n': n, 'ok': ok, 'err': err,
                      'sha': h.hexdigest()}), flush=True)
    if not ok:
        break
'''


class Outbound(threading.Thread):
    """Guest -> host: OUT_PY in the namespace; collects (seconds, ok) per transfer."""

    def __init__(self, ns, url, expect_sha, size, limit, stopfile):
        super().__init__(daemon=True)
        self.size, self.limit, self.stopfile = size, limit, stopfile
        self.done = []            # (seconds, ok)
        self.error = None         # first failure (text)
        self.proc = ns.popen(['python3', '-c', OUT_PY, url, expect_sha, str(size), str(limit),
                              stopfile], stdout=subprocess.PIPE, text=True)

    def run(self):
        for line in self.proc.stdout:
            d = json.loads(line)
            self.done.append((d['s'], d['ok']))
            if not d['ok'] and self.error is None:
                self.error = ('guest->host transfer #%d failed after %.1f s: %d of %d bytes, %s'
                              % (len(self.done), d['s'], d['n'], self.size,
                                 d['err'] or 'sha256 mismatch %s' % d['sha']))
        self.proc.wait()

    def stop(self):
        with open(self.stopfile, 'w'):
            pass

    def kill(self):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass


class Sampler(threading.Thread):
    """vnetctl stats of p0 every `period` s (host side, no guest round trip):
    (time, rx bytes, tx bytes, rx (max_usecs, max_packets, set_by), tx (...))."""

    def __init__(self, vd, period=0.25):
        super().__init__(daemon=True)
        self.vd, self.period = vd, period
        self.samples = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                st = self.vd.stats()['p0']
            except (Exception, SystemExit):    # noqa: BLE001 - vnetd gone: the main loop fails
                break
            self.samples.append((time.monotonic(), st[0]['bytes'], st[1]['bytes'],
                                 *((st[q]['max_usecs'], st[q]['max_packets'], st[q]['set_by'])
                                   for q in (0, 1))))
            self.halt.wait(self.period)


def longest_pause(samples, col):
    """Longest time the byte counter in column col (1 rx, 2 tx) did not move: (seconds, the
    queue's (max_usecs, max_packets) at the start of the pause, and at its end)."""
    best = (0.0, None, None)
    start = None
    for prev, cur in zip(samples, samples[1:]):
        if cur[col] == prev[col]:
            start = start or prev
            if cur[0] - start[0] > best[0]:
                best = (cur[0] - start[0], start[3 if col == 1 else 4][:2], cur[3 if col == 1 else 4][:2])
        else:
            start = None
    return best


def main():
    require_root_and_tun()
    seconds = float(os.environ.get('VNETD_CHURN_SECONDS', '60'))
    limit = int(os.environ.get('VNETD_CHURN_TIMEOUT', '30'))
    size_mb = int(os.environ.get('VNETD_CHURN_MB', '8'))
    size = size_mb << 20
    kit = uml_kit()
    wd = workdir('churn')
    sock = os.path.join(wd, 'p0.sock')
    blob = os.urandom(size)
    with open(os.path.join(wd, 'blob'), 'wb') as f:
        f.write(blob)
    in_sha = hashlib.sha256(blob).hexdigest()
    del blob
    t_start = time.monotonic()

    with Netns(NS) as ns, \
            Vnetd(ns, ['socket=%s,tap=vtap0,mac=%s' % (sock, MAC)], wd) as vd:
        host_addr(ns, 'vtap0', HOST_IP)
        http = ns.popen(['python3', '-m', 'http.server', '8000', '--bind', HOST_IP, '--directory', wd],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out_thread = None
        g = UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml.log'))
        try:
            g.start()
            g.wait_ready(120)
            print('guest booted in %.1f s' % g.boot_time, flush=True)
            guest_addr(g, GUEST_IP)
            rc, _ = g.run('ping -c 2 -W 5 %s' % HOST_IP, timeout=60)
            check(rc == 0, 'guest pings host')
            # /srv is on the initramfs (rootfs, in RAM): fine for some MB in a 256 MB guest.
            g.run('mkdir -p /srv && dd if=/dev/urandom of=/srv/up bs=1M count=%d 2>/dev/null'
                  % size_mb, check=True, timeout=120)
            out_sha = g.run('sha256sum /srv/up', check=True, timeout=60)[1].split()[0]
            g.run('httpd -p 8080 -h /srv', check=True)
            put_script(g, '/tmp/churn.sh', CHURN_SH)
            put_script(g, '/tmp/in.sh', IN_SH)

            def port_stats():
                return vd.stats()['p0']

            def dump_and_fail(why):
                print('FAIL ' + why, flush=True)
                print('vnetctl stats --json p0:\n' + vd.ctl('stats', '--json', 'p0', check=False).stdout)
                try:
                    if g.alive():
                        print('guest churn log (last 15 changes):\n'
                              + g.run('tail -n 15 /tmp/churn.log; cat /tmp/churn.count; '
                                      'tail -n 5 /tmp/churn.err 2>/dev/null; tail -n 5 /tmp/in.log; '
                                      'cat /proc/uptime; cat /proc/interrupts', timeout=20)[1])
                except Exception as e:        # noqa: BLE001
                    print('(guest console not answering: %r)' % e)
                print('vnetd log tail:\n' + vd.log_tail())
                raise SystemExit(1)

            in_seen = 0
            in_done = []              # (seconds, ok) of finished host->guest transfers

            def poll_guest(first=None):
                """The guest's view of host->guest: check the transfers finished since the last
                poll and the one in flight; returns the output lines of `first`, if given."""
                nonlocal in_seen
                head = [first] if first else []     # first must print exactly one line
                # An in.cur being rewritten (empty for a moment) reads as "-" too.
                cmd = '; '.join(head + ['cat /proc/uptime',
                                        '(cat /tmp/in.cur 2>/dev/null | grep .) || echo -',
                                        'tail -n +%d /tmp/in.log 2>/dev/null' % (in_seen + 1)])
                try:
                    _, out = g.run(cmd, timeout=30)
                except GuestError as e:
                    dump_and_fail('guest console did not answer: %s' % e)
                lines = out.strip().splitlines()
                first_lines, lines = lines[:len(head)], lines[len(head):]
                up, cur = float(lines[0].split()[0]), lines[1].strip()
                for line in lines[2:]:
                    s, e, h = line.split()
                    dt, ok = float(e) - float(s), h == in_sha
                    in_seen += 1
                    in_done.append((dt, ok))
                    if not ok:
                        dump_and_fail('host->guest transfer #%d corrupted or cut short after %.1f s '
                                      '(sha256 %s)' % (in_seen, dt, h))
                    if dt > limit:
                        dump_and_fail('host->guest transfer #%d took %.1f s > %d s (stall)'
                                      % (in_seen, dt, limit))
                if cur not in ('-', '') and up - float(cur) > limit:
                    dump_and_fail('host->guest transfer #%d stalled: running for %.1f s > %d s'
                                  % (in_seen + 1, up - float(cur), limit))
                return first_lines

            s0 = port_stats()
            g.run('sh /tmp/churn.sh >/dev/null 2>&1 &', check=True)
            g.run('sh /tmp/in.sh http://%s:8000/blob %d >/dev/null 2>&1 &' % (HOST_IP, limit + 30),
                  check=True)
            out_thread = Outbound(ns, 'http://%s:8080/up' % GUEST_IP, out_sha, size, limit,
                                  os.path.join(wd, 'stop-out'))
            out_thread.start()
            sampler = Sampler(vd)
            sampler.start()
            t0 = time.monotonic()
            print('churning for %.0f s (VNETD_CHURN_SECONDS), %d MB transfers both ways, '
                  'each must finish within %d s (VNETD_CHURN_TIMEOUT)' % (seconds, size_mb, limit),
                  flush=True)

            next_report = t0 + 10
            while True:
                now = time.monotonic()
                finishing = now - t0 >= seconds
                if not vd.alive():
                    print('FAIL vnetd died; log:\n' + vd.log_tail())
                    raise SystemExit(1)
                for q in port_stats().values():
                    if q['broken']:
                        dump_and_fail('queue %d (%s) is broken' % (q['index'], q['kind']))
                poll_guest('touch /tmp/stop; echo stopping' if finishing else None)
                if out_thread.error:
                    dump_and_fail(out_thread.error)
                if finishing:
                    break
                if now >= next_report:
                    print('  %3.0f s: %d transfers host->guest, %d guest->host' %
                          (now - t0, len(in_done), len(out_thread.done)), flush=True)
                    next_report += 10
                time.sleep(max(0.0, 2.0 - (time.monotonic() - now)))
            dt_churn = time.monotonic() - t0
            sampler.halt.set()
            sampler.join()

            # Wind down: the loops stop after their current transfer; each still has the limit.
            out_thread.stop()
            wind = time.monotonic()
            while True:
                ndone = int(poll_guest('cat /tmp/churn.done /tmp/in.done 2>/dev/null | wc -l')[0])
                if out_thread.error:
                    dump_and_fail(out_thread.error)
                if ndone == 2 and not out_thread.is_alive():
                    break
                if time.monotonic() - wind > limit + 15:
                    dump_and_fail('transfers did not wind down within %d s' % (limit + 15))
                time.sleep(0.5)
            out_thread.join()
            s1 = port_stats()
            _, out = g.run('cat /tmp/churn.count; cat /tmp/churn.err 2>/dev/null | head -n 5', timeout=30)
            counts = out.strip().splitlines()
            applied, errors, skipped = (int(x) for x in counts[0].split())
            refused = counts[1:]          # the first refused changes with ethtool's message
            _, profiles = g.run('cut -d" " -f2- /tmp/churn.log | sort | uniq -c | sort -rn | head -n 8')
            rc, _ = g.run('ping -c 2 -W 5 %s' % HOST_IP, timeout=60)
            check(rc == 0, 'guest still pings the host after the churn')
        except BaseException:
            g.kill()
            raise
        finally:
            http.kill()
            if out_thread:
                out_thread.kill()
        g.stop()

        out_done = out_thread.done
        in_ok = sum(1 for _, ok in in_done if ok)
        out_ok = sum(1 for _, ok in out_done if ok)
        print('\n  churn %.1f s: %d ethtool -C changes applied (%.1f/s), %d refused, %d repeats skipped'
              % (dt_churn, applied, applied / dt_churn, errors, skipped))
        print('  most applied profiles (rx-usecs rx-frames tx-usecs tx-frames):\n'
              + '\n'.join('    ' + l.strip() for l in profiles.strip().splitlines()))
        print('  host->guest: %d transfers x %d MB = %.1f MB, all sha256 ok: %s, slowest %.1f s'
              % (len(in_done), size_mb, in_ok * size / 1e6, in_ok == len(in_done),
                 max(dt for dt, _ in in_done) if in_done else 0))
        print('  guest->host: %d transfers x %d MB = %.1f MB, all sha256 ok: %s, slowest %.1f s'
              % (len(out_done), size_mb, out_ok * size / 1e6, out_ok == len(out_done),
                 max(dt for dt, _ in out_done) if out_done else 0))
        print('  vnetd counters during the run   %14s %14s %14s' % ('q0 rx', 'q1 tx', 'q2 ctrl'))
        for k in STAT_KEYS:
            print('  %-31s' % k + ''.join(' %14d' % (s1[q][k] - s0[q][k]) for q in (0, 1, 2)))
        for col, name in ((1, 'RX (host->guest)'), (2, 'TX (guest->host)')):
            pause, a, b = longest_pause(sampler.samples, col)
            print('  longest pause of %s bytes in %d samples of vnetctl stats: %.2f s '
                  '(that queue\'s max_usecs/max_packets %s at its start, %s at its end)'
                  % (name, len(sampler.samples), pause, a, b))
        print('  rx lateness of deadline notifications: %s' % json.dumps(s1[0]['lateness_us']))
        print('  tx lateness of deadline notifications: %s\n' % json.dumps(s1[1]['lateness_us']))

        check(in_done and in_ok == len(in_done),
              'host->guest: %d transfers, every one byte-exact (sha256)' % len(in_done))
        check(out_done and out_ok == len(out_done),
              'guest->host: %d transfers, every one byte-exact (sha256)' % len(out_done))
        check(all(dt <= limit for dt, _ in in_done + out_done),
              'no transfer took longer than %d s (no stall)' % limit)
        check(errors == 0, 'the guest applied %d coalescing changes, none refused%s'
              % (applied, ''.join('\n      ' + r for r in refused)))
        # 10/s on an idle machine; a loaded one slows the guest's loop (fork+exec of ethtool).
        check(applied >= 20, 'at least 20 changes were applied (%d in %.0f s)' % (applied, dt_churn))
        churned = [x[3:] for x in sampler.samples if x[0] >= t0 + 5]   # after the first change
        check(churned and all(rx[2] == 'guest' and tx[2] == 'guest' for rx, tx in churned),
              'vnetctl stats: rx and tx values set_by "guest" in all %d samples' % len(churned))
        distinct = {rx[:2] for rx, _ in churned}
        check(len(distinct) >= 3, 'vnetctl stats: rx max_usecs/max_packets changed (%d distinct '
              'of %d samples, e.g. %s)' % (len(distinct), len(churned), sorted(distinct)[:4]))
        check(s1[0]['max_usecs'] == 0 and s1[0]['max_packets'] == 0 and s1[1]['max_packets'] == 1,
              'the final profile (off) reached vnetd')
        check(vd.alive(), 'vnetd still running')
    print('total %.1f s' % (time.monotonic() - t_start))


if __name__ == '__main__':
    main()
