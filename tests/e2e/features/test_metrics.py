# SPDX-License-Identifier: MIT
"""Prometheus metrics (--metrics, src/control/metrics.c): real output passes promtool, a real Prometheus
server scrapes vnetd and answers queries about it, and hostile HTTP clients do not stop vnetd.

(a) vnetd with two switch ports on loopback (--metrics 127.0.0.1:0, the port read from its log),
    sandboxed as usual (the whole exchange runs under the seccomp filter);
    Python frontends (vhost_user_client.py) on both; a's driver sets TX coalescing over the
    control queue (1 ms / 1000 frames) and sends frames to b, so coalescing deadlines fire;
(b) /metrics: `promtool check metrics` accepts it, and it says what `vnetctl stats` says
    (packets, set_by="guest", lateness histogram count = stats lateness total);
(c) a Prometheus server (Debian's prometheus, temp config and storage, a free loopback port)
    scrapes vnetd; its query API returns vnetd series: up, frontend_connected, packets;
(d) hostile clients: more slowloris connections than vnetd serves, dripping a header byte at a
    time, and a 1 MiB header; meanwhile a normal scrape is answered and vnetctl works; every
    slowloris connection is closed by vnetd (eviction or its time limit); 404/405/HEAD replies.
No timing is asserted; every wait is bounded.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from tests.kit import harness
from tests.kit.harness import NoNs, Vnetd, check, fail, skip, workdir
from tests.kit.vhost_user_client import VirtioNetFrontend, ether_frame

MAC_A, MAC_B = '52:54:00:ee:00:0a', '52:54:00:ee:00:0b'
FRAMES = 20
MAX_CLIENTS = 8  # METRICS_MAX_CLIENTS in src/control/metrics.h


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(addr, path='/metrics', method='GET', timeout=20):
    """(status, headers text, body) of one request over a fresh connection."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(('%s %s HTTP/1.1\r\nHost: x\r\n\r\n' % (method, path)).encode())
        data = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    status = int(head.split(b' ', 2)[1])
    return status, head.decode(), body.decode()


def samples(text):
    """{'name{labels}': value} of an exposition text."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith('#'):
            key, value = line.rsplit(' ', 1)
            out[key] = float(value)
    return out


def metrics_addr(v):
    for _ in range(100):
        m = re.search(r'metrics: http://127\.0\.0\.1:(\d+)/metrics', v.log_tail(100000))
        if m:
            return ('127.0.0.1', int(m.group(1)))
        time.sleep(0.05)
    fail('vnetd did not log its metrics address:\n' + v.log_tail())


def promtool_check(text, wd):
    path = os.path.join(wd, 'metrics.txt')
    with open(path, 'w') as f:
        f.write(text)
    with open(path) as f:
        r = subprocess.run(['promtool', 'check', 'metrics'], stdin=f, capture_output=True,
                           text=True, timeout=60)
    check(r.returncode == 0, 'promtool check metrics accepts the output (%d lines)%s'
          % (text.count('\n'), '' if r.returncode == 0 else ':\n' + r.stdout + r.stderr))


def traffic(socks):
    """Frontends on a and b; a sets TX coalescing as a guest would and sends FRAMES to b."""
    a = VirtioNetFrontend(socks['a'], timeout=10).setup()
    b = VirtioNetFrontend(socks['b'], timeout=10).setup()
    b.post_rx(FRAMES + 8)
    check(a.coal_tx_set(1000, 1000) == 0, "a's driver sets TX coalescing 1 ms / 1000 frames")
    sent = 0
    for i in range(FRAMES):
        sent += a.transmit(ether_frame(MAC_B, MAC_A, b'metrics %d' % i), timeout=10)
    check(sent == FRAMES, 'vnetd took %d of %d frames from a' % (sent, FRAMES))
    return a, b


def check_against_stats(v, text):
    s = samples(text)
    st = v.stats()
    tx = st['p0'][1]
    key = '{port="p0",queue="1",kind="tx"}'
    check(s['vnetd_queue_packets_total' + key] == tx['packets'] >= FRAMES,
          'vnetd_queue_packets_total p0 tx = vnetctl stats packets (%d)' % tx['packets'])
    check(s['vnetd_queue_bytes_total' + key] == tx['bytes'], 'bytes match vnetctl stats')
    check(s['vnetd_queue_notifications_total' + key] == tx['notifications'],
          'notifications match vnetctl stats (%d)' % tx['notifications'])
    check(s.get('vnetd_queue_coalesce_info{port="p0",queue="1",kind="tx",set_by="guest"}') == 1,
          'coalesce_info says the guest set p0 tx')
    check(s['vnetd_queue_coalesce_max_packets' + key] == 1000 and
          s['vnetd_queue_coalesce_max_delay_seconds' + key] == 0.001,
          'coalescing parameters 1000 frames / 0.001 s')
    count = s['vnetd_queue_notification_lateness_seconds_count' + key]
    inf = s['vnetd_queue_notification_lateness_seconds_bucket{port="p0",queue="1",kind="tx",'
            'le="+Inf"}']
    check(count == inf == tx['lateness_us']['total'] and count >= 1,
          'lateness histogram: count = +Inf bucket = vnetctl lateness total (%d)' % count)
    buckets = [(float(m.group(1)), val) for k, val in s.items()
               if (m := re.match(r'vnetd_queue_notification_lateness_seconds_bucket\{port="p0",'
                                 r'queue="1",kind="tx",le="([0-9.e+-]+)"\}', k))]
    vals = [val for _, val in sorted(buckets)]
    check(len(vals) >= 10 and vals == sorted(vals) and vals[-1] <= count,
          'lateness buckets are cumulative (%d buckets)' % len(vals))
    check(s['vnetd_port_frontend_connected{port="p0"}'] == 1 and
          s['vnetd_port_worker{port="p0"}'] == 0, 'frontend connected, worker 0')
    check(s.get('vnetd_switch_macs{port="p1",segment="default"}') is not None and
          any(k.startswith('vnetd_port_info{port="p0",') and k.endswith(',segment="default"}')
              for k in s), 'switch samples and port info carry the segment (segment="default")')


def prometheus_scrape(wd, addr):
    """A real Prometheus scrapes vnetd; returns the query results it gave."""
    port = free_port()
    cfg = os.path.join(wd, 'prometheus.yml')
    with open(cfg, 'w') as f:
        f.write('global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n'
                'scrape_configs:\n  - job_name: vnetd\n    static_configs:\n'
                '      - targets: ["%s:%d"]\n' % addr)
    log = open(os.path.join(wd, 'prometheus.log'), 'wb')
    proc = subprocess.Popen(['prometheus', '--config.file=' + cfg,
                             '--storage.tsdb.path=' + os.path.join(wd, 'tsdb'),
                             '--web.listen-address=127.0.0.1:%d' % port], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)

    def query(q):
        url = 'http://127.0.0.1:%d/api/v1/query?query=%s' % (port, urllib.parse.quote(q))
        with urllib.request.urlopen(url, timeout=10) as r:
            reply = json.load(r)
        return reply['data']['result'] if reply.get('status') == 'success' else []

    try:
        deadline = time.monotonic() + 90
        got = {}
        want = ('up{job="vnetd"}', 'vnetd_port_frontend_connected{port="p0"}',
                'vnetd_queue_packets_total{port="p0",kind="tx"}')
        while time.monotonic() < deadline and len(got) < len(want):
            if proc.poll() is not None:
                fail('prometheus exited:\n' + open(log.name, errors='replace').read()[-3000:])
            for q in want:
                try:
                    r = query(q)
                except OSError:
                    r = []  # not listening yet
                if r:
                    got[q] = r
            time.sleep(0.5)
        return got
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class Slowloris(threading.Thread):
    """A connection that sends a request line, then one header byte every 0.2 s, for ever."""

    def __init__(self, addr):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(addr, timeout=5)
        self.sock.sendall(b'GET /metrics HTTP/1.1\r\nX-Slow: ')
        self.closed = threading.Event()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.sock.sendall(b'a')
                self.sock.settimeout(0.2)
                try:
                    if self.sock.recv(4096) == b'':
                        break  # vnetd closed it
                except socket.timeout:
                    pass
            except OSError:
                break  # reset by vnetd
        self.closed.set()


def hostile(v, addr):
    lorises = [Slowloris(addr) for _ in range(MAX_CLIENTS + 4)]
    for s in lorises:
        s.start()
    # One header of 1 MiB: answered with 431 (or cut off) at 4 KiB, never buffered whole.
    big = socket.create_connection(addr, timeout=20)
    answer = b''
    try:
        big.sendall(b'GET /metrics HTTP/1.1\r\nX-Big: ' + b'b' * (1 << 20))
    except OSError:
        pass  # vnetd closed the connection while we were still sending
    try:
        while True:
            chunk = big.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    big.close()
    check(answer == b'' or answer.startswith(b'HTTP/1.1 431'),
          'a 1 MiB header is refused (%s)' % (answer[:40] or 'connection closed'))
    time.sleep(0.5)  # the slowlorises are all connected and dripping
    status, _, body = http(addr)
    check(status == 200 and 'vnetd_queue_packets_total' in body,
          'a normal scrape is answered while %d slowloris connections drip' % len(lorises))
    check(v.ctl('ports').returncode == 0, 'vnetctl still answers')
    deadline = time.monotonic() + 30
    for s in lorises:
        s.closed.wait(max(0.1, deadline - time.monotonic()))
    closed = sum(s.closed.is_set() for s in lorises)
    for s in lorises:
        s.stop.set()
        s.sock.close()
    check(closed == len(lorises), 'vnetd closed all %d slowloris connections (eviction, time '
          'limit)' % len(lorises))
    check(http(addr, '/nope')[0] == 404, '404 for another path')
    check(http(addr, method='POST')[0] == 405, '405 for POST')
    status, head, body = http(addr, method='HEAD')
    check(status == 200 and body == '' and 'Content-Length:' in head, 'HEAD: headers only')
    check(v.alive(), 'vnetd is still running')


def main():
    for exe in ('promtool', 'prometheus'):
        if shutil.which(exe) is None:
            skip('%s is not installed (apt-get install prometheus, or make deps)' % exe)
    for exe in (harness.VNETD, harness.VNETCTL):
        if not os.access(exe, os.X_OK):
            fail('%s not built (run make)' % exe)
    wd = workdir('metrics')
    socks = {n: os.path.join(wd, n + '.sock') for n in ('a', 'b')}
    ports = ['socket=%s,switch,mac=%s' % (socks['a'], MAC_A),
             'socket=%s,switch,mac=%s' % (socks['b'], MAC_B)]
    with Vnetd(NoNs(), ports, wd, extra=['--metrics', '127.0.0.1:0']) as v:
        addr = metrics_addr(v)
        if '--no-sandbox' not in v.extra:
            with open('/proc/%d/status' % v.proc.pid) as f:
                status = f.read()
            check('Seccomp:\t2' in status, 'vnetd serves metrics under its seccomp filter')
        a, b = traffic(socks)
        time.sleep(0.1)  # the last coalescing deadline (1 ms) has fired
        status, head, text = http(addr)
        check(status == 200 and 'text/plain; version=0.0.4' in head, 'GET /metrics: 200, '
              'text format 0.0.4 (%d bytes)' % len(text))
        promtool_check(text, wd)
        check_against_stats(v, text)
        got = prometheus_scrape(wd, addr)
        for q in ('up{job="vnetd"}', 'vnetd_port_frontend_connected{port="p0"}',
                  'vnetd_queue_packets_total{port="p0",kind="tx"}'):
            r = got.get(q)
            check(bool(r), 'Prometheus query %s: %s' % (q, r[0]['value'][1] if r else 'nothing'))
        check(got['up{job="vnetd"}'][0]['value'][1] == '1' and
              got['vnetd_port_frontend_connected{port="p0"}'][0]['value'][1] == '1' and
              float(got['vnetd_queue_packets_total{port="p0",kind="tx"}'][0]['value'][1])
              >= FRAMES, 'Prometheus sees vnetd up, p0 connected, p0 tx packets >= %d' % FRAMES)
        hostile(v, addr)
        a.close()
        b.close()
    shutil.rmtree(wd, ignore_errors=True)
    print('PASS')


if __name__ == '__main__':
    main()
