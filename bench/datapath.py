#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-datapath: vnetd's data path (Mpps, CPU per packet) vs DPDK's vhost PMD; virtio-user is the source."""

# Set-ups (each started afresh for every measurement, torn down after it):
#   switch  vnetd `--port socket=A,switch --port socket=B,switch` | peer: dpdk-testpmd with
#           net_vhost0/1 on A and B in io forwarding. Source: one dpdk-testpmd with two
#           virtio-user ports on A and B, by default in macswap mode (--switch-source): each
#           port sends 4 bursts from its own MAC to the other's, and every frame received goes
#           back out of the port it came in with its MACs swapped, so 256 frames circle through
#           both directions and the switch forwards by learnt MACs, as between VMs
#           (dp_stacks.SOURCES; --switch-source flowgen: one constant MAC pair on both ports,
#           every frame flooded). Rate = frames the source received on both ports.
#   tap     vnetd `--port socket=T,tap=vtap0` in a network namespace this script creates | peer:
#           testpmd net_vhost0 on T + net_tap0 (dtap0, own namespace) in io forwarding. Source: one
#           virtio-user port in txonly. Rate = the tap's rx_packets (what the kernel got).
# The source's forwarding lcore is CPU 1; the backend runs on CPU 0 (vnetd via taskset, DPDK's
# forwarding lcore via --main-lcore 1). Backend CPU = utime+stime delta of the backend process
# only (/proc/PID/stat) over the measured interval; DPDK's vhost PMD busy-polls, so it is ~1 core.
# Repetitions are interleaved (vnetd, dpdk, vnetd, dpdk, ...); medians and min-max are reported.
# Ring layouts (--layouts, dp_stacks.LAYOUTS): the switch path is measured split and, for
# vnetd and DPDK's vhost PMD at --layout-sizes, with each other layout (default packed: both
# backends driven by virtio-user packed_vq=1), each run right after the same backend's split
# run; such a path is named 'switch-packed' in the JSON (summary, ratios) and has its own rows
# and chart column. A deterministic figure: callgrind instructions per packet of vnetd
# (bench/lib/dp_callgrind.py), on the switch path for each of --cg-layouts (default all four).
#
# VNETD_BUILD=/path/to/build selects the vnetd under test (default: this tree's build/). Writes
# results/datapath-<date>.json, results/datapath-latest.{json,md,png}; --callgrind-only writes
# results/datapath-cg-<date>.json and datapath-cg-latest.{json,md} instead (a full run's
# datapath-latest.* stay as they were). Needs root for the tap
# set-up, dpdk-testpmd (Debian dpdk-dev), valgrind for the callgrind figure, gnuplot for the chart.

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench.lib import common
from bench.lib.common import SKIP, TOP
from bench.lib import cpu_place
from bench.lib import dp_callgrind
from bench.lib import dp_procs as P
from bench.lib.dp_procs import BenchError, JANITOR, log
from bench.lib import dp_stacks
from bench.lib.dp_stacks import LAYOUTS, NET_TAP_MAX_FRAME, Stack, measure, path_name
from bench.lib.dp_report import (IMPLS, LAYOUT_IMPLS, XDP_MAX_FRAME, chart, classify, host_line,
                                 impls_of, kick_regime, machine_floor, paths_of, reps_md,
                                 summarize, table_md, table_term, targets_datapath)
from bench.lib import dp_report, eff_backends

QUIET_CORES = 0.25
BUILD = os.path.abspath(os.environ.get('VNETD_BUILD', os.path.join(TOP, 'build')))
# vnetd (its defaults: --poll-us auto since 6cbc7d6), vnetd --poll-us N, DPDK's vhost PMD,
# OVS-DPDK (the switch path only).


# ---------------------------------------------------------------------------------------------
# prerequisites and provenance

def check_prereqs(args):
    common.require('datapath', exes=['dpdk-testpmd'], built=(), status=SKIP)
    tap = 'tap' in args.backends or 'xdp' in args.backends
    common.require('datapath', root=tap, tun=tap,
                   exes=['ip', 'taskset', 'stdbuf'] + (['valgrind'] if args.callgrind else []),
                   built=[os.path.join(BUILD, exe) for exe in ('vnetd', 'vnetctl')],
                   why_root='the tap set-up needs network namespaces; or --backends switch')
    common.have('gnuplot', 'datapath', 'no chart')
    if 'switch' in args.backends and 'ovs' in args.impls:
        from bench.lib import dp_ovs
        why = dp_ovs.available()
        if why:  # a peer, not the measured thing: the run goes on without it
            log('datapath: no OVS-DPDK rows: %s' % why)
            args.impls = [i for i in args.impls if i != 'ovs']


def provenance():
    """Which vnetd is measured: the git state of VNETD_BUILD's source dir, and the binary's hash."""
    src = common.source_of(BUILD)
    with open(os.path.join(BUILD, 'vnetd'), 'rb') as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {'vnetd_build': BUILD, 'vnetd_source': src,
            'vnetd_commit': common.git(src, 'rev-parse', 'HEAD'),
            'vnetd_describe': common.git(src, 'describe', '--always', '--dirty'),
            'vnetd_branch': common.git(src, 'rev-parse', '--abbrev-ref', 'HEAD'),
            # the newest commit that changed vnetd itself (a bench-only commit changes nothing)
            'vnetd_src_commit': common.git(src, 'log', '-1', '--format=%h %s', '--', 'src',
                                           'meson.build', 'meson_options.txt'),
            'vnetd_src_dirty': bool(common.git(src, 'status', '--porcelain', '--', 'src',
                                               'meson.build')),
            'vnetd_sha256': digest,
            'vnetd_mtime': datetime.datetime.fromtimestamp(
                os.path.getmtime(os.path.join(BUILD, 'vnetd'))).isoformat(timespec='seconds'),
            'bench_commit': common.git(TOP, 'describe', '--always', '--dirty')}


def dpdk_version():
    r = subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'dpdk-dev'], capture_output=True,
                       text=True)
    return r.stdout.strip() or '?'


def syscall_cost(wd):
    """The host's system-call cost now (bench/paced's --mode syscall-cost on CPU 1: getppid,
    eventfd write, clock_gettime, ns each), taken under the same lock as the runs; None (logged)
    when the paced driver cannot run."""
    try:
        c = eff_backends.syscall_cost(eff_backends.driver_path(BUILD, wd))
    except (BenchError, OSError, ValueError, subprocess.SubprocessError) as e:
        log('datapath: no system-call cost: %s' % e)
        return None
    log('datapath: system calls cost getppid %.0f ns, eventfd write %.0f ns'
        % (c['getppid_ns'], c['eventfd_write_ns']))
    return c


def cpu_probe_start(wd, host):
    """Sample the CPUs' placement beside every measurement (bench/lib/cpu_place.py), seeded with
    3 s of it now, idle: host['cpu_seed_ns']; without the paced driver, none (logged)."""
    host['cpu_seed_ns'] = []
    try:
        dp_stacks.CPU_PROBE = eff_backends.driver_path(BUILD, wd)
    except (BenchError, OSError) as e:
        log('datapath: no CPU placement samples: %s' % e)
        return
    host['cpu_seed_ns'] = cpu_place.seed(dp_stacks.CPU_PROBE, log, 'datapath')
    if not host['cpu_seed_ns']:
        dp_stacks.CPU_PROBE = None


def probe_virtio_user(wd, tools):
    """What the virtio-user PMD reports (max RX frame, max MTU), with vnetd as its backend."""
    st = Stack('switch', 'vnetd', 64, wd, tools, 'probe')
    try:
        return st.fe.port_info(0)
    finally:
        st.close()


# ---------------------------------------------------------------------------------------------
# summaries


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sizes', default='64,512,1500,max',
                    help='frame sizes in bytes, "max" = the largest frame virtio-user takes '
                         '(its max RX packet length); default 64,512,1500,max')
    ap.add_argument('--backends', default='switch,tap,xdp',
                    help='switch,tap,xdp (default all; xdp: AF_XDP vs the tap backend on one veth)')
    ap.add_argument('--reps', type=int, help='interleaved repetitions (default 3)')
    ap.add_argument('--duration', type=float, help='measured seconds per run (default 5)')
    ap.add_argument('--warmup', type=float, help='seconds of traffic before measuring (default 1)')
    ap.add_argument('--settle-max', type=float, default=20.0,
                    help='after the warm-up, wait up to this many seconds for the backend to stop '
                         'taking page faults (the first touch of the source\'s memory, a one-time '
                         'cost; dp_stacks.settle()); 0: measure right after the warm-up '
                         '(default 20)')
    ap.add_argument('--slices', type=int, help='sub-intervals recorded per run (default 5)')
    ap.add_argument('--quiet-wait', type=float,
                    help='before each run, wait up to this many seconds for the machine to be '
                         'quiet (< %.2f cores busy with other work; default 30)' % QUIET_CORES)
    ap.add_argument('--quick', action='store_true',
                    help='development: 1 rep, 2 s runs, 0.5 s warm-up, 1 callgrind run of 50k '
                         'packets (options given explicitly still apply)')
    ap.add_argument('--no-peer', dest='peer', action='store_false', default=True,
                    help='vnetd only, no DPDK vhost PMD or OVS-DPDK runs')
    ap.add_argument('--impls', default=','.join(IMPLS),
                    help='what to measure, of %s (default all; the poll variants and OVS-DPDK '
                         'on the switch path only; OVS-DPDK needs Debian openvswitch-switch-dpdk '
                         'and root for its hugepages, else it is left out)' % ','.join(IMPLS))
    ap.add_argument('--retries', type=int, default=2,
                    help='re-measure a run that other work disturbed (>= %.2f cores) up to this '
                         'many times (default 2)' % QUIET_CORES)
    ap.add_argument('--keep-contended', action='store_true',
                    help='summarize over disturbed runs too (default: only over undisturbed ones '
                         'where there are any)')
    ap.add_argument('--callgrind-only', action='store_true', help='only the callgrind figure')
    ap.add_argument('--keep-workdir', action='store_true',
                    help='keep the work directory (callgrind dumps for callgrind_annotate, logs)')
    ap.add_argument('--no-callgrind', dest='callgrind', action='store_false', default=True)
    ap.add_argument('--port-security', choices=('on', 'off'), default='on',
                    help='the switch ports\' port security (default on, as vnetd\'s default)')
    ap.add_argument('--cg-packets', type=int, help='packets per callgrind run (default 200000)')
    ap.add_argument('--cg-runs', type=int, help='callgrind runs per path (default 3)')
    ap.add_argument('--cg-size', type=int, default=64, help='frame size for callgrind (default 64)')
    ap.add_argument('--switch-source', choices=sorted(dp_stacks.SOURCES), default='macswap',
                    help='the switch path\'s traffic (bench/lib/dp_stacks.py SOURCES): macswap = a '
                         'closed loop, each port sending from its own MAC to the other\'s, as '
                         'VMs do (default); flowgen = DPDK 22.11 flowgen, one constant MAC pair '
                         'on both ports (every frame flooded, its source MAC moving: the rows '
                         'before 2026-12-03 13:00)')
    ap.add_argument('--bursts', type=int, default=4,
                    help='macswap: bursts of 32 frames each port sends first (default 4: 256 '
                         'frames in flight, within the 256-entry rings)')
    ap.add_argument('--layouts', default='split,packed',
                    help='ring layouts of the switch path\'s throughput rows, of %s (default '
                         'split,packed; split is always measured; the others for vnetd and '
                         'DPDK vhost at --layout-sizes)' % ','.join(LAYOUTS))
    ap.add_argument('--layout-sizes', default='64,1500',
                    help='frame sizes of the rows with another ring layout than split (default '
                         '64,1500; those of --sizes only)')
    ap.add_argument('--cg-layouts', default=','.join(LAYOUTS),
                    help='ring layouts of the switch path\'s callgrind figure (default all: %s)'
                    % ','.join(LAYOUTS))
    ap.add_argument('--out', help='JSON output (default results/datapath-<date>.json, with '
                    '--callgrind-only results/datapath-cg-<date>.json); the datapath-latest.* '
                    '(datapath-cg-latest.*) files go next to it')
    args = ap.parse_args()
    # --quick changes only the defaults: explicit options win
    defaults = dict(reps=3, duration=5, warmup=1, slices=5, cg_packets=200000, cg_runs=3,
                    quiet_wait=30)
    if args.bursts < 1 or args.bursts > 4:
        ap.error('--bursts: 1 to 4 (more frames than the 256-entry rings hold would be dropped '
                 'and the loop would shrink)')
    dp_stacks.set_switch_source(args.switch_source, args.bursts)
    if args.port_security == 'off':
        dp_stacks.SWITCH_KEYS = ',port-security=off'
    if args.quick:
        defaults.update(reps=1, duration=2, warmup=0.5, slices=2, cg_packets=50000, cg_runs=1,
                        quiet_wait=0)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.impls = [i.strip() for i in args.impls.split(',') if i.strip()]
    for i in args.impls:
        if i not in IMPLS:
            ap.error('unknown impl %r (%s)' % (i, ', '.join(IMPLS)))
    if not args.peer:
        args.impls = [i for i in args.impls if i.startswith('vnetd')]
    args.backends = [b.strip() for b in args.backends.split(',') if b.strip()]
    for b in args.backends:
        if b not in ('switch', 'tap', 'xdp'):
            ap.error('unknown backend %r (switch, tap, xdp)' % b)
    args.sizes = [s.strip() for s in args.sizes.split(',') if s.strip()]
    for s in args.sizes:
        if s != 'max' and not (s.isdigit() and 60 <= int(s) <= 65407):
            ap.error('frame size %r: 60..65407 or max' % s)
    if args.callgrind_only:
        args.callgrind = True
    for opt in ('layouts', 'cg_layouts'):
        lays = [x.strip() for x in getattr(args, opt).split(',') if x.strip()]
        for x in lays:
            if x not in LAYOUTS:
                ap.error('unknown ring layout %r (%s)' % (x, ', '.join(LAYOUTS)))
        setattr(args, opt, lays)
    args.layout_sizes = [int(x) for x in args.layout_sizes.split(',') if x.strip().isdigit()]
    # every path measured: each backend split, then the switch with each other layout
    args.paths = paths_of(args.backends, args.layouts)
    return args


def layouts_for(args, b, impl, s):
    """The ring layouts one (backend, impl, size) is measured with: split first."""
    return ['split'] + [lay for lay in args.layouts if lay != 'split' and b == 'switch' and
                        impl in LAYOUT_IMPLS and s in args.layout_sizes]


def main():
    args = parse_args()
    check_prereqs(args)
    t_start = time.monotonic()
    now = datetime.datetime.now()
    out = args.out or os.path.join(TOP, 'results', 'datapath-%s%s.json' % (
        'cg-' if args.callgrind_only else '', now.strftime('%Y%m%d-%H%M%S')))
    resdir = os.path.dirname(os.path.abspath(out))
    os.makedirs(resdir, exist_ok=True)
    prov = provenance()

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    wd = tempfile.mkdtemp(prefix='vnetd-datapath-')
    if not args.keep_workdir:
        JANITOR.paths.append(wd)
    # Private copies: the tree under test may be rebuilt while we run.
    tools = {}
    for exe in ('vnetd', 'vnetctl'):
        tools[exe] = os.path.join(wd, exe)
        shutil.copy2(os.path.join(BUILD, exe), tools[exe])
    load0 = common.load_check('datapath', limit=0.5,
                              note="the benchmark itself keeps 2 cores busy, so others' work "
                                   'lowers and spreads the rates')
    log('datapath: vnetd %s (%s), DPDK %s; %s, %d CPUs, load average %.2f %.2f %.2f; work dir %s'
        % (prov['vnetd_describe'], prov['vnetd_build'], dpdk_version(), platform.node(),
           os.cpu_count(), *load0, wd))

    runs, info, cg, sizes = [], {}, {}, []
    # The host beside every tap row and in the header: what a system call costs here decides
    # how much a tap backend's batching is worth (issue 43)
    host = {'cpu_model': common.cpu_model(), 'syscall_start': syscall_cost(wd)}
    cpu_probe_start(wd, host)
    try:
        info['virtio_user'] = vu = probe_virtio_user(wd, tools)
        max_len = vu.get('max_rx_pktlen', 9728)
        sizes = sorted({max_len if s == 'max' else int(s) for s in args.sizes})
        log('datapath: virtio-user reports a max RX packet length of %s B: "max" = %d B'
            % (vu.get('max_rx_pktlen'), max_len))
        if not args.callgrind_only:
            impls = [i for i in IMPLS if i in args.impls]
            total = args.reps * sum(len(layouts_for(args, b, i, s)) for b in args.backends
                                    for s in sizes for i in impls_of(b, impls))
            k = 0
            for rep in range(args.reps):
                for b in args.backends:
                    for s in sizes:
                        for impl in impls_of(b, impls):
                            for lay in layouts_for(args, b, impl, s):
                                k += 1
                                for attempt in range(1 + args.retries):
                                    r = one_measurement(args, b, impl, s, rep, wd, tools, k,
                                                        total, lay)
                                    r['attempt'] = attempt
                                    cpu_place.mark(r, cpu_place.nearest(runs + [r],
                                                                        host['cpu_seed_ns']))
                                    runs.append(r)
                                    if not r.get('contended'):
                                        break
                                    log('        re-measured: disturbed by %s'
                                        % r.get('disturbed_by'))
        if args.callgrind:
            for b, lay in [(b, lay) for b in args.backends
                           for lay in (args.cg_layouts if b == 'switch' else ['split'])]:
                p = path_name(b, lay)
                log('datapath: callgrind, %s path, %s rings, %d x %d packets of %d B ...'
                    % (b, lay, args.cg_runs, args.cg_packets, args.cg_size))
                try:
                    cg[p] = dp_callgrind.measure(b, args.cg_size, args.cg_packets, args.cg_runs,
                                                 wd, tools, lay)
                    log('  %.1f instructions per packet (runs: %s)' % (
                        cg[p]['ir_per_packet_median'],
                        ', '.join('%.1f' % r['ir_per_packet'] for r in cg[p]['runs'])))
                except BenchError as e:
                    log('datapath: callgrind %s failed: %s' % (p, e))
                    cg[p] = {'error': str(e)[:3000]}
    except KeyboardInterrupt:
        log('datapath: interrupted; cleaning up')
        info['interrupted'] = True
        JANITOR.clean()
        if not runs and not cg:
            sys.exit(130)
    except BenchError as e:
        log('datapath: failed: %s' % e)
        info['error'] = str(e)[:3000]
    finally:
        if not info.get('interrupted'):
            host['syscall_end'] = syscall_cost(wd)
        JANITOR.clean()
    write_results(args, runs, info, cg, prov, now, load0, t_start, out, resdir, sizes, host)



def one_measurement(args, b, impl, s, rep, wd, tools, k, total, layout='split'):
    p = path_name(b, layout)
    run = {'backend': b, 'layout': layout, 'path': p, 'impl': impl, 'size': s, 'rep': rep,
           'loadavg': os.getloadavg()}
    if (b, impl) == ('tap', 'dpdk') and s > NET_TAP_MAX_FRAME:
        run['skipped'] = ('DPDK net_tap takes frames of at most %d B (max_rx_pktlen; its TX drops '
                          'longer ones)' % NET_TAP_MAX_FRAME)
        log('[%d/%d] %-6s %-13s %5d B  skipped: %s' % (k, total, b, impl, s, run['skipped']))
        return run
    if b == 'xdp' and s > XDP_MAX_FRAME:
        run['skipped'] = ('an xdp= port takes frames of at most %d B (4 KiB UMEM frames, no '
                          'multi-buffer)' % XDP_MAX_FRAME)
        log('[%d/%d] %-6s %-5s %5d B  skipped: %s' % (k, total, b, impl, s, run['skipped']))
        return run
    run['waited_s'], run['busy_before'] = common.wait_quiet(args.quiet_wait, QUIET_CORES)
    t0 = time.monotonic()
    st = None
    try:
        st = Stack(b, impl, s, wd, tools, '%s/%s/%d' % (p, impl, s), layout=layout)
        run.update(measure(st, args.warmup, args.duration, args.slices, args.settle_max))
    except BenchError as e:
        run['error'] = str(e)[:3000]
    finally:
        if st:
            st.close()
    run['wall_s'] = round(time.monotonic() - t0, 1)
    run['contended'] = run.get('others_cores', 0) >= QUIET_CORES
    if impl.startswith('vnetd') and kick_regime(run):
        run['regime'] = kick_regime(run)   # classify() adds what the whole run shows
    if 'error' in run:
        log('[%d/%d] %-15s %-13s %5d B  ERROR %s' % (k, total, p, impl, s, run['error'][:400]))
    else:
        log('[%d/%d] %-15s %-13s %5d B  %7.3f Mpps %7.2f Gbit/s  loss %5.1f %%  backend %.2f cores '
            '%7.3f Mpps/core  (others %.2f cores, load %.2f)%s'
            % (k, total, p, impl, s, run['mpps'], run['gbps'], 100 * (run['loss'] or 0),
               run['backend_cores'], run['mpps_per_core'] or 0, run['others_cores'],
               run['loadavg'][0], '  DISTURBED' if run['contended'] else ''))
        log('        ' + rep_counters(run))
    return run


def rep_counters(run):
    """One run's kicks, wake-ups and calls per packet (and its regime) as a log line."""
    def f(v):
        return '%.4f' % v if v is not None else '-'
    return ('kicks %s  wake-ups %s  calls %s  per packet  (wake-ups %d, preemptions %d; steal '
            '%s cores)%s'
            % (f(run.get('kicks_per_packet')), f(run.get('wakeups_per_packet')),
               f(run.get('calls_per_packet')), run.get('backend_wakeups', 0),
               run.get('backend_preemptions', 0),
               '/'.join('%.3f' % v for v in (run.get('steal_cores') or {}).values()) or '-',
               '  regime: %s' % run['regime'] if run.get('regime') else ''))


def write_results(args, runs, info, cg, prov, now, load0, t_start, out, resdir, sizes, host):
    placement = cpu_place.remark(runs, cpu_place.nearest(runs, host.get('cpu_seed_ns') or ()))
    placement['seed_ns'] = host.get('cpu_seed_ns')
    summary, ratios = summarize(runs, args.paths, sizes, args.keep_contended)
    classify(runs, summary, args.keep_contended)
    floor = machine_floor(summary)
    load1 = os.getloadavg()
    cpu_model = host['cpu_model']
    meta = dict(prov, date=now.isoformat(timespec='seconds'), host=platform.node(),
                kernel=platform.release(), cpus=os.cpu_count(), cpu_model=cpu_model,
                dpdk=dpdk_version(), loadavg_start=load0, loadavg_end=load1,
                syscall_cost={'start': host.get('syscall_start'), 'end': host.get('syscall_end')},
                cpu_placement=placement,
                machine_floor=floor,
                elapsed_s=round(time.monotonic() - t_start, 1), args=vars(args), sizes=sizes,
                source_mode={'switch': (
                    'macswap on two virtio-user ports, a closed loop of %d frames (2 x %d bursts '
                    'of 32 from each port\'s own MAC to the other\'s, sent back with the MACs '
                    'swapped)' % (64 * args.bursts, args.bursts)
                    if args.switch_source == 'macswap' else
                    'flowgen on two virtio-user ports (both directions; one constant MAC pair on '
                    'both: the switch floods and relearns every frame)'),
                             'tap': 'txonly on one virtio-user port (guest -> tap)',
                             'xdp': 'txonly on one virtio-user port (guest -> veth vx0 -> '
                                    'vx1 in a peer namespace), by AF_XDP or by the tap + tc '
                                    'mirred'},
                clk_tck=P.CLK_TCK)
    targets = targets_datapath(summary, ratios, resdir, cg)
    result = {'meta': meta, 'info': info, 'summary': summary, 'ratios': ratios, 'callgrind': cg,
              'targets_datapath': targets, 'runs': runs}
    md = ['### vnetd data path vs DPDK vhost PMD (virtio-user source)', '',
          'Run of %s on %s (%d CPUs): %s; load average %.2f at start, %.2f at end; DPDK\'s '
          'widest per-rep spread (the machine\'s floor): %s.'
          % (now.strftime('%Y-%m-%d %H:%M'), platform.node(), os.cpu_count(), host_line(host),
             load0[0], load1[0], '±%.1f %%' % floor['max_pct'] if floor['max_pct'] is not None
             else '- (fewer than 2 DPDK reps)'), '']
    if summary:
        md += [table_md(summary, ratios, args.paths, sizes, host), '',
               'Mpps = frames delivered per second (switch: received by the source on both '
               'virtio-user ports; tap: the tap\'s rx_packets); Gbit/s = Mpps x frame bytes x 8 '
               '(L2 frame, no FCS/preamble); loss = 1 - delivered / frames the source got into '
               'its TX rings; backend cores = utime+stime of the backend process / interval; '
               'ring full = share of the frames the source generated that found its TX ring full '
               '(high: the backend is the bottleneck; ~0: the source is, and a busy-polling '
               'backend\'s Mpps/core then understates what it could do); frames/syscall = frames '
               'delivered per system call the backend process entered, counted (perf, '
               'raw_syscalls:sys_enter) in a %.0f s window of its own right after the measured '
               'one (counting makes system calls dearer), >999 = none or almost none (busy '
               'polling); vnetd --no-io-uring = the tap backend sending one writev per frame '
               'instead of io_uring bursts; others\' cores = CPU '
               'used meanwhile by processes outside the benchmark (the machine has %d; each run '
               'first waited up to %.0f s for other work to drop below %.2f cores: %d of %d runs '
               'started on a busier machine); a run during which other work used >= %.2f cores '
               'is "disturbed": it is re-measured (up to %d times) and left out of the summary '
               'where undisturbed runs exist (runs = used/measured, * = only disturbed ones); '
               'so is a run during which the hypervisor kept CPU 0 and CPU 1 apart: more than '
               '%.0f %% of its CPU placement samples (paced --mode cpu-distance, every %.1f s: a '
               'cache line\'s round trip between the two CPUs) over %.1fx the run\'s near one '
               '(its samples\' %.0fth percentile: %s ns; %d of %d runs were far: rates drop '
               '~2x there, whatever the backend, docs/benchmarks.md); median [min..max] over %d interleaved reps of %.0f s.'
               % (dp_stacks.SYSCALL_WINDOW_S, os.cpu_count(), args.quiet_wait, QUIET_CORES,
                  sum(1 for r in runs if r.get('busy_before', 0) >= QUIET_CORES),
                  sum(1 for r in runs if 'mpps' in r), QUIET_CORES, args.retries,
                  100 * cpu_place.FAR_SHARE, cpu_place.INTERVAL_S, cpu_place.FAR_FACTOR,
                  100 * cpu_place.NEAR_QUANTILE, '%.0f' % meta['cpu_placement']['near_ns']
                  if meta['cpu_placement']['near_ns'] else '?',
                  meta['cpu_placement']['runs_far'], meta['cpu_placement']['runs_sampled'],
                  args.reps, args.duration),
               '', 'kicks / wake-ups / calls per pkt: medians over the reps of the driver\'s '
               'kicks to vnetd (TX and RX queues) and vnetd\'s calls (interrupts) to the driver, '
               'vnetd\'s own counters (`vnetctl stats`) per frame vnetd took from the TX rings, '
               'and the backend\'s wake-ups (its threads\' voluntary context switches, '
               '/proc/PID/task/*/status) per frame delivered, all over the measured window; '
               'rep spread = the largest distance of one rep\'s Mpps per core from its cell\'s '
               'median (goal: <= %.0f %%, or as tight as DPDK\'s widest cell in the same run, '
               'the machine\'s floor: DPDK busy-polls at one core, so its spread is the '
               'machine\'s); host = CPU model and the system-call cost measured at the start and '
               'the end of the run (bench/paced --mode syscall-cost on CPU 1): what a tap '
               'backend\'s batching saves depends on it.' % dp_report.STABLE_PCT,
               '', 'Switch source: %s%s.' % (
                   meta['source_mode']['switch'],
                   ' (a closed loop: nothing is generated, so ring full stays ~0 and loss '
                   'counts frames that fell out of the loop)' if args.switch_source == 'macswap'
                   else '')]
        if 'xdp' in args.backends:
            md += ['', 'xdp rows: vnetd\'s AF_XDP backend (copy mode: veth has no zero-copy) and '
                   'its tap backend (tc mirred onto the veth) send to the same veth pair; their '
                   'ratio columns are AF_XDP / tap; Mpps = the peer veth\'s rx_packets; both '
                   'backends\' cores include the kernel work done in their system calls.']
    if summary:
        md += ['', '#### Every rep (vnetd and DPDK vhost)', '', reps_md(runs, args.paths, sizes),
               '', 'vs median = this rep\'s Mpps per core against its cell\'s median; slices = '
               'the run\'s %d sub-intervals; preemptions = the backend\'s involuntary context '
               'switches; steal = the hypervisor\'s steal time on CPU 0 / CPU 1 (cores); DPDK '
               'same rep = DPDK\'s run of the same cell and rep against its median; CPU round '
               'trip = the range of its CPU placement samples. Regime '
               '(a vnetd rep that did not poll; one that did: polling): kick-per-burst = a '
               'kick per %d frames or more often '
               '(docs/lab-notebook.md, "Fifth round"), batched = fewer; chases = %.0fx the kicks per '
               'packet of its cell\'s fewest or more (it caught up with the driver that much more '
               'often: smaller batches, more of the ring lines the driver\'s CPU just wrote read '
               'per frame); flips = its fastest '
               'slice >= %.1fx its slowest; slow machine = DPDK\'s run of the same rep >= %.0f %% '
               'below its median.' % (args.slices, dp_report.KICK_BURST, dp_report.CHASE_RATIO,
                                       dp_report.FLIP_RATIO,
                                       dp_report.SLOW_MACHINE_PCT)]
    if targets:
        md += ['', 'Targets (same-run ratios of medians, load average %.2f..%.2f; a shared machine '
               'makes them noisy): ' % (load0[0], load1[0]) + ', '.join(
                   '%s %s' % (k, '%.2f' % v if isinstance(v, float) else v)
                   for k, v in targets.items() if not k.endswith('_source'))]
    errs = [r for r in runs if 'error' in r]
    skips = sorted({'%s/%s/%d: %s' % (r['backend'], r['impl'], r['size'], r['skipped'])
                    for r in runs if 'skipped' in r})
    if skips:
        md += ['', 'Not measured: ' + '; '.join(skips) + '.']
    if errs:
        md += ['', '%d run(s) failed: %s' % (len(errs), '; '.join(
            '%s/%s/%d: %s' % (r['backend'], r['impl'], r['size'], r['error'][:200]) for r in errs))]
        if len(args.paths) > len(args.backends):
            md += ['', 'Ring layouts: "switch packed" (and the like) rows are the switch path '
                   'with both virtio-user ports and vnetd\'s ports set to that layout '
                   '(bench/lib/dp_stacks.py LAYOUTS; DPDK\'s vhost PMD takes what virtio-user '
                   'negotiates), measured right after the same backend\'s split run; their '
                   'ratio columns are vnetd / DPDK vhost on that layout.']
    lay = dp_callgrind.layouts_md(cg)
    if lay:
        md += [''] + lay
    for b, s in cg.items():
        md += ['']
        md += (dp_callgrind.report(s) if 'error' not in s else
               ['callgrind %s path failed: %s' % (b, s['error'][:500])])
    md += ['', 'vnetd %s (%s, commit %s; last change to vnetd\'s sources: %s%s; binary sha256 '
           '%s...); DPDK %s; %s, %d CPUs (%s), kernel %s; '
           'load average %.2f at start, %.2f at end; took %.0f s.'
           % (prov['vnetd_describe'], prov['vnetd_build'], prov['vnetd_commit'],
              (prov['vnetd_src_commit'] or '?').split()[0],
              ', sources modified' if prov['vnetd_src_dirty'] else '',
              prov['vnetd_sha256'][:12], meta['dpdk'], meta['host'], meta['cpus'], cpu_model,
              meta['kernel'], load0[0], load1[0], meta['elapsed_s'])]
    if info.get('error'):
        md += ['', 'stopped early: ' + info['error'][:800]]
    md = '\n'.join(md) + '\n'
    # A callgrind-only run has files of its own: a full run's latest throughput rows stay.
    latest = 'datapath-cg-latest' if args.callgrind_only else 'datapath-latest'
    for path in (out, os.path.join(resdir, latest + '.json')):
        with open(path, 'w') as f:
            json.dump(result, f, indent=1, default=str)
    with open(os.path.join(resdir, latest + '.md'), 'w') as f:
        f.write(md)
    png = os.path.join(resdir, latest + '.png')
    have_png = summary and chart(summary, args.paths, sizes, png,
                                 os.path.join(resdir, latest + '.dat'))
    if summary:
        log('\n' + table_term(table_md(summary, ratios, args.paths, sizes)))
    log('\n' + md)
    log('wrote %s, %s.json, %s.md%s in %s'
        % (out, latest, latest, ', %s.png' % latest if have_png else '', resdir))
    if info.get('error') and not runs and not cg:
        sys.exit(1)


if __name__ == '__main__':
    main()
