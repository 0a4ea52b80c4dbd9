# SPDX-License-Identifier: MIT
"""The measured set-ups of bench/datapath.py: backend (vnetd or DPDK vhost PMD) + virtio-user traffic."""

import os
import subprocess
import time

from . import common
from . import cpu_place
from . import dp_procs as P
from .common import Vnetd
from .dp_procs import BenchError, Testpmd, JANITOR

MAC0, MAC1 = '02:00:00:00:00:01', '02:00:00:00:00:02'
# vnetd's switch ports: each with its frontend's MAC. The macswap source sends from that MAC (port
# security's common case: one compare against mac=). testpmd's flowgen sends from its own
# constant source MAC (00:01:02:03:04:00 in DPDK 22.11), not the port's, so with port security
# (on by default) that MAC is allowed on both ports then (switch_keys()): every frame takes the
# allowed-macs= path, the dearer one. datapath.py --port-security off sets SWITCH_KEYS
# ',port-security=off' (for either source).
FLOWGEN_SRC = '00:01:02:03:04:00'
SWITCH_KEYS = None  # None: switch_keys() picks by the source
# The switch path's source (datapath.py --switch-source, --bursts):
# - 'macswap' (default): a closed loop of real guests' traffic. `start tx_first N` sends N bursts
#   of 32 frames from each port (source MAC = the port's, destination = the other port's), and
#   each frame received is sent back on the port it arrived at with its MACs swapped
#   (--port-topology=loop): every MAC stays on its port, every destination is known, the frames
#   in flight (2 x N x 32; N = 4 fits the 256-entry rings, so none can be refused) go round
#   for the whole run. A learning switch forwards, as between VMs.
# - 'flowgen': open loop, every frame freshly built, but DPDK 22.11's flowgen writes one constant
#   source and destination MAC on both ports (00:01:02:03:04:00 -> :01): the source MAC moves
#   between the two ports all the time and the destination is never learnt, so a learning
#   switch floods every frame and relearns (rate-limited) for ever. It is what the rows before
#   2026-12-03 13:00 measured; it costs OVS-DPDK's NORMAL action 2-3x (MAC moves revalidate its
#   datapath flows) and vnetd ~6 % (callgrind 596 against 563 instructions per frame).
SOURCES = {'macswap': ['--forward-mode=macswap', '--port-topology=loop'],
           'flowgen': ['--forward-mode=flowgen']}
SOURCE = {'switch': 'macswap', 'bursts': 4}


def set_switch_source(mode, bursts):
    """Choose the switch path's traffic source for every Stack from now on (SOURCES)."""
    if mode not in SOURCES:
        raise BenchError('unknown switch source %r (%s)' % (mode, ', '.join(SOURCES)))
    SOURCE.update(switch=mode, bursts=bursts)


def switch_keys():
    """The port keys every vnetd switch port of the benchmark gets (SWITCH_KEYS, else by source)."""
    if SWITCH_KEYS is not None:
        return SWITCH_KEYS
    return ',allowed-macs=' + FLOWGEN_SRC if SOURCE['switch'] == 'flowgen' else ''


TAP_PEER = '02:00:00:00:00:99'   # not the tap's MAC: the kernel counts the frame, then drops it
# DPDK's net_tap reports max_rx_pktlen 1522 (no jumbo MTU through ethdev) and its TX drops
# longer frames: no DPDK tap peer above this.
NET_TAP_MAX_FRAME = 1522
FE_MAIN, BE_MAIN = 0, 1          # frontend forwards on lcore 1, DPDK backend on lcore 0 (= vnetd's CPU)

# Ring layouts (switch path): (virtio-user devargs on every frontend port, vnetd port keys).
# vnetd's keys are explicit for every layout: its defaults are packed=on, in-order=on (the driver
# chooses), and virtio-user offers what its devargs say. So VNETD_DP_PORT_EXTRA (below) must not
# name packed= or in-order= (vnetd refuses a key given twice): --layouts chooses them. DPDK's
# vhost PMD takes whatever virtio-user negotiates.
LAYOUTS = {'split': ('', ',packed=off,in-order=off'),
           'packed': (',packed_vq=1', ',packed=on,in-order=off'),
           'in-order': (',in_order=1', ',packed=off,in-order=on'),
           'packed+in-order': (',packed_vq=1,in_order=1', ',packed=on,in-order=on')}


def path_name(backend, layout):
    """A measured path: the backend, with its ring layout unless split ('switch-packed')."""
    return backend if layout == 'split' else '%s-%s' % (backend, layout)


def path_parts(path):
    """(backend, layout) of a path_name()."""
    b, _, layout = path.partition('-')
    return b, layout or 'split'


def vnetd_args(impl):
    """The daemon options of a vnetd variant: 'vnetd-pollN' runs with --poll-us N,
    'vnetd-writev' with --no-io-uring (a tap sends one writev per frame)."""
    if impl == 'vnetd-writev':
        return ['--no-io-uring']
    return ['--poll-us', impl[len('vnetd-poll'):]] if impl.startswith('vnetd-poll') else []


class Stack:
    """One backend with its virtio-user traffic source, started and torn down as a unit."""

    def __init__(self, kind, impl, size, wd, tools, tag, wrapper=(), queue_size=None,
                 layout='split', seq=[0]):
        seq[0] += 1
        self.vu_opts = ',queue_size=%d' % queue_size if queue_size else ''
        # The ring layout (switch path only), then VNETD_DP_VU_EXTRA: virtio-user devargs for
        # every frontend port (',packed_vq=1'), VNETD_DP_PORT_EXTRA: keys for vnetd's ports.
        if kind != 'switch' and layout != 'split':
            raise BenchError('ring layout %s: switch path only' % layout)
        self.vu_opts += LAYOUTS[layout][0] + os.environ.get('VNETD_DP_VU_EXTRA', '')
        self.port_opts = (LAYOUTS[layout][1] if kind == 'switch' else '') + \
            os.environ.get('VNETD_DP_PORT_EXTRA', '')
        self.kind, self.impl, self.size, self.wd, self.tools = kind, impl, size, wd, tools
        self.pfx = 'vnetd-dp-%d-%d' % (os.getpid(), seq[0])
        self.tag = tag
        self.wrapper = wrapper
        self.be = self.fe = self.ns = self.peer = None
        self.vd = self.ovs = None
        try:
            {'switch': self._switch, 'tap': self._tap, 'xdp': self._xdp}[kind]()
        except BaseException:
            self.close()
            raise

    # -- set-ups ------------------------------------------------------------------------------
    def _sock(self, name):
        path = os.path.join(self.wd, '%s-%s.sock' % (self.pfx, name))
        if os.path.exists(path):
            os.unlink(path)
        return path

    def _dpdk_backend(self, vdevs):
        be = Testpmd('DPDK vhost backend', P.eal_args(self.pfx + '-be', BE_MAIN, vdevs),
                     P.mbuf_args(self.size) + ['--forward-mode=io'],
                     os.path.join(self.wd, 'testpmd-backend.log'), ns=self.ns)
        self.be = be
        be.wait_ready()
        be.cmd('start')
        return be

    def _frontend(self, vdevs, app):
        self.fe = Testpmd('virtio-user frontend', P.eal_args(self.pfx + '-fe', FE_MAIN, vdevs),
                          P.mbuf_args(self.size) + app + ['--txpkts=%d' % self.size],
                          os.path.join(self.wd, 'testpmd-frontend.log'))
        self.fe.wait_ready()

    def _switch(self):
        a, b = self._sock('a'), self._sock('b')
        srv = ''
        if self.impl.startswith('vnetd'):
            # the layout's keys and VNETD_DP_PORT_EXTRA (bench/rate.py: limits on)
            extra = self.port_opts
            self.vd = Vnetd(self.tools['vnetd'], self.tools['vnetctl'],
                            ['socket=%s,switch,mac=%s%s%s' % (a, MAC0, switch_keys(), extra),
                             'socket=%s,switch,mac=%s%s%s' % (b, MAC1, switch_keys(), extra)],
                            self.wd, extra=vnetd_args(self.impl),
                            wrapper=self.wrapper, janitor=JANITOR)
            self.be = self.vd
        elif self.impl == 'ovs':
            # OVS-DPDK connects to the source's sockets (dpdkvhostuserclient): they listen.
            from . import dp_ovs
            self.ovs = self.be = dp_ovs.OvsDpdk(self.wd, self.tag, [a, b], self.size, cpu=0)  # vnetd's CPU
            srv = ',server=1'
        else:
            self._dpdk_backend(['net_vhost0,iface=%s,queues=1' % a, 'net_vhost1,iface=%s,queues=1' % b])
        # flowgen: each port receives (and frees) what arrives and generates frames towards the
        # other port's MAC, so the switch learns both MACs and forwards (it floods only the very
        # first frames, to the one other port).
        self._frontend(['net_virtio_user0,path=%s,queues=1,mac=%s%s%s' % (a, MAC0, self.vu_opts, srv),
                        'net_virtio_user1,path=%s,queues=1,mac=%s%s%s' % (b, MAC1, self.vu_opts, srv)],
                       SOURCES[SOURCE['switch']] +
                       ['--eth-peer=0,%s' % MAC1, '--eth-peer=1,%s' % MAC0])

    def _tap(self):
        from tests.kit.harness import Netns
        s = self._sock('t')
        self.ns = Netns('vnetd-dp-%s' % self.impl).__enter__()
        JANITOR.nets.append(self.ns)
        P.ns_prepare(self.ns)
        if self.impl.startswith('vnetd'):
            self.ifname = 'vtap0'
            self.vd = Vnetd(self.tools['vnetd'], self.tools['vnetctl'],
                            ['socket=%s,tap=%s' % (s, self.ifname)], self.wd, ns=self.ns,
                            extra=vnetd_args(self.impl), wrapper=self.wrapper, janitor=JANITOR)
            self.be = self.vd
            P.wait_link(self.ns, self.ifname)
            self.ns.run('ip link set %s mtu %d up' % (self.ifname, min(65521, max(1500, self.size - 14))))
        else:
            self.ifname = 'dtap0'
            self._dpdk_backend(['net_vhost0,iface=%s,queues=1' % s, 'net_tap0,iface=%s' % self.ifname])
            P.wait_link(self.ns, self.ifname)
        self._frontend(['net_virtio_user0,path=%s,queues=1,mac=%s%s' % (s, MAC0, self.vu_opts)],
                       ['--forward-mode=txonly', '--port-topology=loop', '--eth-peer=0,' + TAP_PEER])

    def _xdp(self):
        """A veth pair, vx0 in vnetd's namespace, vx1 (the sink) in a peer namespace. impl
        'vnetd': vnetd's AF_XDP backend on vx0 (xdp=vx0); 'tap': vnetd's tap backend, its tap's
        frames redirected onto vx0 by tc (ingress, u32 match-all, mirred egress redirect): the
        same veth and sink, so the two backends compare on equal terms. Rate = vx1's rx_packets
        (frames to TAP_PEER, not vx1's MAC: counted, then dropped)."""
        from tests.kit.harness import Netns
        s = self._sock('x')
        self.ns = Netns('vnetd-dp-x%s' % self.impl).__enter__()
        JANITOR.nets.append(self.ns)
        self.peer = Netns('vnetd-dp-xp%s' % self.impl).__enter__()
        JANITOR.nets.append(self.peer)
        for n in (self.ns, self.peer):
            P.ns_prepare(n)
        subprocess.run(['ip', 'link', 'add', 'vx0', 'netns', self.ns.name, 'type', 'veth',
                        'peer', 'name', 'vx1', 'netns', self.peer.name], check=True)
        mtu = max(1500, self.size - 14)
        self.ns.run('ip link set vx0 mtu %d up' % mtu)
        self.peer.run('ip link set vx1 mtu %d up' % mtu)
        if self.impl != 'tap':     # 'vnetd' and its variants ('vnetd-poll0': callgrind)
            spec = 'socket=%s,xdp=vx0' % s
        else:
            spec = 'socket=%s,tap=vtap0' % s
        self.vd = Vnetd(self.tools['vnetd'], self.tools['vnetctl'], [spec], self.wd, ns=self.ns,
                        extra=vnetd_args(self.impl), wrapper=self.wrapper, janitor=JANITOR)
        self.be = self.vd
        if self.impl == 'tap':
            P.wait_link(self.ns, 'vtap0')
            self.ns.run('ip link set vtap0 mtu %d up' % mtu)
            self.ns.run('tc qdisc add dev vtap0 ingress && tc filter add dev vtap0 parent ffff: '
                        'protocol all u32 match u32 0 0 action mirred egress redirect dev vx0')
        self.ifname = 'vx1'
        self._frontend(['net_virtio_user0,path=%s,queues=1,mac=%s%s' % (s, MAC0, self.vu_opts)],
                       ['--forward-mode=txonly', '--port-topology=loop', '--eth-peer=0,' + TAP_PEER])

    # -- counters -----------------------------------------------------------------------------
    def counts(self):
        """(packets out of the backend, packets the frontend got into its TX ring) so far."""
        if self.kind == 'switch':
            fs = self.fe.port_stats()
            return (sum(p['rx_packets'] for p in fs.values()),
                    sum(p['tx_packets'] for p in fs.values()))
        # the tap counter takes an `ip` call: read it on both sides of the source's counters
        ns = self.peer or self.ns  # xdp: the sink is the peer namespace's vx1
        t0 = P.tap_counters(ns, self.ifname)['rx_packets']
        accepted = sum(p['tx_packets'] for p in self.fe.port_stats().values())
        t1 = P.tap_counters(ns, self.ifname)['rx_packets']
        return (t0 + t1) / 2, accepted

    def sample(self):
        t0 = time.monotonic()
        be, fe = P.proc_ticks(self.be.pid), P.proc_ticks(self.fe.pid)
        csw = common.proc_ctxt_switches(self.be.pid)
        steal = common.cpu_steal()
        mach = common.machine_busy()
        delivered, accepted = self.counts()
        t1 = time.monotonic()
        return {'t': (t0 + t1) / 2, 'read_s': t1 - t0, 'be': be, 'fe': fe, 'mach': mach,
                'csw': csw, 'steal': steal, 'delivered': delivered, 'accepted': accepted}

    def start_cmd(self):
        """The testpmd command that starts the source: macswap sends its frames first."""
        if self.kind == 'switch' and SOURCE['switch'] == 'macswap':
            return 'start tx_first %d' % SOURCE['bursts']
        return 'start'

    def start_traffic(self, timeout=20):
        """Start the source; return once frames come out of the backend."""
        first = self.counts()[0]
        self.fe.cmd(self.start_cmd())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if self.counts()[0] > first:
                return
        raise BenchError('%s: no traffic through the backend within %d s' % (self.tag, timeout))

    def close(self):
        if self.fe:
            self.fe.quit()
        if self.be:
            if self.vd:
                self.vd.stop()
            elif self.ovs:
                self.ovs.close()
            else:
                self.be.quit()
        if self.ns:
            self.ns.__exit__(None, None, None)
            if self.ns in JANITOR.nets:
                JANITOR.nets.remove(self.ns)
        if self.peer:
            self.peer.__exit__(None, None, None)
            if self.peer in JANITOR.nets:
                JANITOR.nets.remove(self.peer)
        self.fe = self.be = self.ns = self.peer = None


# Settling (measure()'s settle_max): the backend counts as warm once it took fewer than this many
# minor page faults in SETTLE_STEP seconds.
SETTLE_FAULTS = 500
SETTLE_STEP = 0.5
# measure(): seconds of the window that counts the backend's system calls
SYSCALL_WINDOW_S = 2


def settle(stack, settle_max):
    """After the warm-up, wait (up to settle_max seconds) until the backend stops taking minor
    page faults: the first touch of each page of the source's memory through a fresh mapping is
    a one-time cost (~13 us a 4 KiB page on this VM: 1 GiB of mbufs takes seconds), not the
    steady state a rate is meant to show. Returns (seconds waited, faults meanwhile)."""
    pid, t0 = stack.be.pid, time.monotonic()
    f0 = last = P.proc_minflt(pid)
    while time.monotonic() - t0 < settle_max:
        time.sleep(SETTLE_STEP)
        now = P.proc_minflt(pid)
        if now - last < SETTLE_FAULTS:
            break
        last = now
    return time.monotonic() - t0, P.proc_minflt(pid) - f0


# paced (bench/paced) for cpu_place.Sampler beside every measure(); None: not sampled
CPU_PROBE = None


def measure(stack, warmup, duration, slices, settle_max=0):
    """Steady-state rates of one stack: `slices` equal sub-intervals over `duration` seconds,
    after `warmup` seconds of traffic and, with settle_max, settle()."""
    stack.start_traffic()
    time.sleep(warmup)
    settled = settle(stack, settle_max) if settle_max > 0 else (0.0, 0)
    flt0 = P.proc_minflt(stack.be.pid)
    vs0 = stack.vd.stats() if stack.vd else None
    f0 = stack.fe.fwd_totals()
    # where the hypervisor has the two CPUs meanwhile (bench/lib/cpu_place.py)
    place = cpu_place.Sampler(CPU_PROBE, duration) if CPU_PROBE else None
    try:
        samples = [stack.sample()]
        for _ in range(slices):
            time.sleep(max(0.0, samples[0]['t'] + duration * len(samples) / slices -
                           time.monotonic()))
            samples.append(stack.sample())
        f1 = stack.fe.fwd_totals()
    finally:
        cpu_rt = place.stop() if place else None
    vs1 = stack.vd.stats() if stack.vd else None
    flt1 = P.proc_minflt(stack.be.pid)
    # Frames per system call, in a window of its own after the measured one (counting makes
    # each system call dearer): the backend's system calls (every thread) in perf's window of
    # SYSCALL_WINDOW_S against the frames delivered in as long, at the rate measured around it
    # (the counts around perf also span its start and exit).
    d0, t0 = stack.counts()[0], time.monotonic()
    nsys = P.count_syscalls(stack.be.pid, SYSCALL_WINDOW_S)
    d1, t1 = stack.counts()[0], time.monotonic()
    win_frames = (d1 - d0) / (t1 - t0) * SYSCALL_WINDOW_S if t1 > t0 else 0
    stack.fe.cmd('stop')
    gen = (f1['tx'] + f1['tx_dropped']) - (f0['tx'] + f0['tx_dropped'])
    a, b = samples[0], samples[-1]
    dt = b['t'] - a['t']
    ticks = P.CLK_TCK * dt
    be_cores = (b['be'] - a['be']) / ticks
    fe_cores = (b['fe'] - a['fe']) / ticks
    busy = (b['mach'][0] - a['mach'][0]) / ticks  # all CPUs, in cores
    pps = (b['delivered'] - a['delivered']) / dt
    acc = (b['accepted'] - a['accepted']) / dt
    run = {'dt_s': round(dt, 3), 'mpps': pps / 1e6, 'gbps': pps * stack.size * 8 / 1e9,
           'accepted_mpps': acc / 1e6, 'loss': 1 - pps / acc if acc else None,
           'backend_cores': be_cores, 'frontend_cores': fe_cores,
           'others_cores': max(0.0, busy - be_cores - fe_cores),
           'mpps_per_core': pps / 1e6 / be_cores if be_cores > 0 else None,
           # share of generated frames that found the source's TX ring full: high = the backend
           # is the bottleneck, ~0 = the source is (the backend keeps up)
           'ring_full': (f1['tx_dropped'] - f0['tx_dropped']) / gen if gen > 0 else None,
           'slices_mpps': [round((y['delivered'] - x['delivered']) / (y['t'] - x['t']) / 1e6, 4)
                           for x, y in zip(samples, samples[1:])],
           'max_read_s': round(max(s['read_s'] for s in samples), 4),
           # settle(): seconds waited and the backend's minor faults meanwhile; its faults
           # while measured (per second)
           'settle_s': round(settled[0], 2), 'settle_faults': settled[1],
           'backend_faults_per_s': round((flt1 - flt0) / dt),
           'syscalls': nsys, 'syscall_window_frames': round(win_frames),
           # a busy-polling backend makes none: capped at 1e6 so medians stay numbers; None
           # when perf could not count or nothing moved
           'frames_per_syscall': (min(1e6, win_frames / nsys) if nsys else 1e6)
           if nsys is not None and win_frames > 0 else None}
    # Wake-ups: the backend's threads' voluntary context switches over the measured window (an
    # epoll or futex wait that ended), per frame delivered; involuntary ones: preemptions.
    delivered = b['delivered'] - a['delivered']
    run['backend_wakeups'] = b['csw'][0] - a['csw'][0]
    run['backend_preemptions'] = b['csw'][1] - a['csw'][1]
    run['wakeups_per_packet'] = run['backend_wakeups'] / delivered if delivered > 0 else None
    if place:
        run['cpu_round_trip_ns'] = [round(x, 1) for x in cpu_rt]
        run['cpu_probe'] = place.health()
    # the hypervisor's steal time per CPU over the window (cores): a vCPU it did not run
    run['steal_cores'] = {c: round((b['steal'][c] - a['steal'].get(c, 0)) / ticks, 4)
                          for c in sorted(b['steal'])}
    if vs0 is not None:
        run['vnetd'] = {k: P.queue_sum(vs1, kind, key) - P.queue_sum(vs0, kind, key)
                        for k, kind, key in VNETD_COUNTERS}
        run.update(per_packet(run['vnetd']))
    return run


# vnetd's queue counters a run records (summed over every port), as (name, queue kind, key of
# `vnetctl stats`): kicks = the driver's notifications to vnetd, notifications = vnetd's calls
# (interrupts) to the driver; polls: runs of a polling queue that found its ring empty.
VNETD_COUNTERS = (('tx_packets', 'tx', 'packets'), ('rx_packets', 'rx', 'packets'),
                  ('rx_no_buffers', 'rx', 'rx_no_buffers'), ('tx_kicks', 'tx', 'kicks'),
                  ('rx_kicks', 'rx', 'kicks'), ('rx_notifications', 'rx', 'notifications'),
                  ('tx_notifications', 'tx', 'notifications'), ('tx_polls', 'tx', 'polls'),
                  ('tx_dropped', 'tx', 'dropped'))


def per_packet(c):
    """kicks_per_packet (TX and RX kicks), calls_per_packet (notifications vnetd sent, TX and
    RX) of vnetd's counter deltas c (VNETD_COUNTERS), per frame it took from the drivers' TX
    rings (its own count, over the same window as the counters); None when none moved."""
    n = c.get('tx_packets') or 0
    if n <= 0:
        return {'kicks_per_packet': None, 'calls_per_packet': None}
    return {'kicks_per_packet': (c['tx_kicks'] + c['rx_kicks']) / n,
            'calls_per_packet': (c['rx_notifications'] + c['tx_notifications']) / n}
