#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench: what notification coalescing costs and saves, measured on real guests.

For each coalescing profile (none, light, moderate, aggressive), a guest on a vnetd tap port (in
a private network namespace this script creates and deletes) sets the profile with its own
`ethtool -C eth0 ...`. Guests (--guest, comma-separated; default uml,qemu-full):
  uml       bookworm's User-Mode Linux 6.1 (guest/fetch.sh);
  uml-7.2   sid's User-Mode Linux 7.2 (guest/fetch.sh --suite sid);
  qemu-full sid's QEMU 11 TCG (guest/qemu.sh) with vhost-user-test-device-pci, bookworm's 6.1
            kernel: QEMU hands the control queue to vnetd, so the guest's ethtool -C works there
            too, and an interrupt is a real (emulated) one. results/latest.json "targets_qemu".
Each then runs:
  - bulk TCP with iperf3: TX = guest -> host, RX = host -> guest (iperf3 server in the guest,
    client in the namespace, -R for TX);
  - per run: throughput; CPU seconds of the guest (the whole linux.uml process tree) and of
    vnetd from /proc/<pid>/stat (utime+stime+cutime+cstime), as % of the run and per Gbit;
    vnetd notifications per second per queue (vnetctl stats --json) and guest interrupts per
    second (/proc/interrupts in the guest: the virtio-uml line, QEMU's virtio0 line);
  - request/response latency: sockperf UDP ping-pong (server in the guest), RTT p50/p99;
  - deadline accuracy: vnetd's per-queue lateness of timer-driven notifications (p50/p99).
Runs are interleaved (rep 1: none, light, ...; rep 2: ...) so slow drifts of the machine's
load hit every profile alike; median and min-max over the reps are reported.

Peer (same run, side by side): QEMU 7.2 TCG guests, (a) QEMU's own userspace virtio-net on a
tap (`-netdev tap,vhost=off`, cannot coalesce: its ethtool -C fails, recorded), (b) the same
guest on vnetd through `-netdev vhost-user` with host-side profiles (`vnetctl coalesce`).

Outputs: a table on the terminal, results/bench-<date>.json + results/latest.json (all raw runs
and summaries), results/latest.md (the tables in markdown) and results/latest.png (gnuplot).
Python 3 standard library only; runs as root on Debian 12.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import time

from bench.lib import coal, common, fixed
from bench.lib.common import TOP, log
from bench.lib.measure import (CLK_TCK, HOST_IP, NETNS, NO_OFFLOADS, PROFILES, Stalled, Subject,
                               apply_guest_profile, apply_host_profile, check_prereqs,
                               guest_net_setup, make_guest, measure_profile)
from bench.lib.report import (GUESTS, TARGETS, TARGETS_QEMU, chart, ratios, ratios_md, summarize,
                              table_md, targets_qemu, targets_qemu_md)
from tests.kit import harness
from tests.kit.harness import GuestError, Netns, QemuGuest, Vnetd, host_addr

def bench_guest(args, kind, wd, runs, info):
    """The four profiles, set by the guest's own ethtool -C, on one --guest kind."""
    setup = GUESTS[kind][0]
    sock = os.path.join(wd, '%s.sock' % kind)
    inf = info.setdefault('guests', {}).setdefault(kind, {'setup': setup})
    with Netns(NETNS) as ns, Vnetd(ns, ['socket=%s,tap=vtap0' % sock], wd) as vd:
        host_addr(ns, 'vtap0', HOST_IP)
        guest, irq_pattern = make_guest(kind, wd, sock, args.qemu_vq_size)
        with guest as g:
            log('%s guest booted in %.1f s on vnetd port p0 (tap in namespace %s)'
                % (GUESTS[kind][1], g.boot_time, ns.name))
            inf['guest_kernel'] = g.run('uname -r')[1].strip()
            if kind == 'uml':
                info['guest_kernel'] = inf['guest_kernel']
            guest_net_setup(g)
            subj = Subject(setup, g, irq_pattern, vd)
            inf['applied'] = []
            for rep in range(1, args.reps + 1 if kind in args.guests else 1):
                for prof in args.profiles:
                    a = apply_guest_profile(g, vd, prof)
                    a.update(rep=rep, profile=prof)
                    inf['applied'].append(a)
                    measure_profile(subj, ns, prof, args, rep, runs, args.duration, args.rr_duration)
            if kind in args.fixed_guests:
                fixed.run_guest(subj, ns, args, runs, inf)
        if not vd.alive():
            log('WARNING: vnetd died during the %s benchmark' % kind)
            inf['vnetd_died'] = True
    if kind == 'uml':
        info['applied'] = inf['applied']


def bench_peer(args, kit, wd, runs, info):
    """QEMU TCG: userspace virtio-net on a tap vs the same guest on vnetd (host-side profiles)."""
    dur, rr = args.peer_duration, min(args.rr_duration, 2) if args.rr_duration else 0
    sock = os.path.join(wd, 'qemu.sock')
    light = PROFILES['light']
    try_cmd = 'ethtool -C eth0 rx-usecs %d rx-frames %d tx-usecs %d tx-frames %d' % light[1:]
    with Netns(NETNS) as ns:
        # (a) QEMU's own virtio-net on a tap, no vhost: no coalescing possible.
        ns.add_tap('qtap0', HOST_IP + '/24')
        with QemuGuest(kit, tap='qtap0', netns=ns.name, device_opts=',vectors=0' + NO_OFFLOADS,
                       log_path=os.path.join(wd, 'qemu-tap.log')) as g:
            log('QEMU guest (tap, vhost=off) booted in %.1f s' % g.boot_time)
            guest_net_setup(g)
            rc, out = g.run(try_cmd, timeout=60)
            info['qemu_tap_ethtool_C'] = {'command': try_cmd, 'rc': rc, 'output': out.strip()}
            log('  QEMU tap: `%s` -> rc %d: %s' % (try_cmd, rc, out.strip()))
            subj = Subject('qemu-tap', g, 'virtio')
            for rep in range(1, args.peer_reps + 1):
                measure_profile(subj, ns, 'none', args, rep, runs, dur, rr)
        ns.run('ip link del qtap0', check=False)
        # (b) the same guest on vnetd via vhost-user; QEMU keeps the control queue, so the
        # profiles are set from the host.  offloads=off: see README (Benchmark, peer).
        with Vnetd(ns, ['socket=%s,tap=vtap1,offloads=off' % sock], wd) as vd:
            host_addr(ns, 'vtap1', HOST_IP)
            with QemuGuest(kit, vhost_socket=sock, device_opts=',vectors=0',
                           log_path=os.path.join(wd, 'qemu-vhost-user.log')) as g:
                log('QEMU guest (vhost-user on vnetd) booted in %.1f s' % g.boot_time)
                guest_net_setup(g)
                rc, out = g.run(try_cmd, timeout=60)
                info['qemu_vhost_user_ethtool_C'] = {'command': try_cmd, 'rc': rc,
                                                     'output': out.strip()}
                log('  QEMU vhost-user: guest `%s` -> rc %d: %s' % (try_cmd, rc, out.strip()))
                subj = Subject('qemu-vnetd', g, 'virtio', vd)
                info['peer_applied'] = []
                for rep in range(1, args.peer_reps + 1):
                    for prof in args.profiles:
                        a = apply_host_profile(vd, prof)
                        a.update(rep=rep, profile=prof)
                        info['peer_applied'].append(a)
                        measure_profile(subj, ns, prof, args, rep, runs, dur, rr)


# ---------------------------------------------------------------------------------------------

COAL_MARK = '<!-- coalescing rows (bench_coal.py) -->'  # as in results/latest.md: keep


def merge_latest(resdir, new, coal_md, now):
    """--coal-only: the existing latest.json/.md with this run's coalescing rows put in (any
    earlier ones replaced); everything else, e.g. "targets_qemu", stays as it was."""
    try:
        with open(os.path.join(resdir, 'latest.json')) as f:
            old = json.load(f)
        with open(os.path.join(resdir, 'latest.md')) as f:
            old_md = f.read().split(COAL_MARK)[0].rstrip('\n') + '\n\n'
    except (OSError, ValueError):
        old, old_md = {'meta': {}, 'summary': {}, 'runs': []}, ''
    coal_setups = {v[0] for v in coal.COAL_GUESTS.values()}
    res = dict(old)
    res['runs'] = [r for r in old.get('runs', []) if r.get('setup') not in coal_setups] + new['runs']
    for k in ('coal', 'targets', 'targets_met'):
        if k in new:
            res[k] = new[k]
    res.setdefault('info', {}).update({k: v for k, v in new['info'].items()
                                       if k.startswith(('coal', 'uml-1g', 'uml72-1g'))})
    res['meta'] = dict(old.get('meta', {}))
    res['meta']['coal_run'] = dict(new['meta'], merged_into=old.get('meta', {}).get('date'),
                                   note='--coal-only: the coalescing rows and "targets" are from '
                                   'this run; the other rows and "targets_qemu" from the run of '
                                   'meta.date')
    res['meta']['targets_goals'] = coal.GOALS
    oa = old.get('meta', {}).get('args', {})
    osetups = [GUESTS[x][0] for x in oa.get('guests', []) if x in GUESTS]
    return res, old_md + coal_md, old.get('summary', {}), (
        oa.get('profiles', list(PROFILES)), oa.get('directions', ['tx', 'rx']), osetups)


def bench_fixed_chart(result, resdir):
    from bench.lib import fixed_chart
    return fixed_chart.draw(result, os.path.join(resdir, 'fixed-latest.png'),
                            os.path.join(resdir, 'fixed-latest.dat'))


def keep_coal(resdir, result):
    """--no-coal: carry the coalescing rows ("coal", "targets") of the existing latest.json over,
    marked as from an earlier run."""
    try:
        with open(os.path.join(resdir, 'latest.json')) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return
    for k in ('coal', 'targets', 'targets_met'):
        if k in old:
            result[k] = old[k]
    if 'coal' in old:
        result['meta']['coal_from'] = old.get('meta', {}).get('coal_run', {}).get(
            'date', old.get('meta', {}).get('date'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--duration', type=float, default=5, help='seconds per iperf3 run (default 5)')
    ap.add_argument('--reps', type=int, default=3, help='repetitions per profile (default 3)')
    ap.add_argument('--profiles', default='none,light,moderate,aggressive')
    ap.add_argument('--direction', default='both', choices=('tx', 'rx', 'both'),
                    help='tx = guest->host, rx = host->guest (default both)')
    ap.add_argument('--rr-duration', type=float, default=2,
                    help='seconds per sockperf ping-pong run, 0 = skip (default 2)')
    ap.add_argument('--out', help='JSON output (default results/bench-<date>.json); latest.* go '
                    'next to it')
    ap.add_argument('--quick', action='store_true', help='demo-sized: 2 s runs, 1 rep, no peer')
    ap.add_argument('--peer', dest='peer', action='store_true', default=True,
                    help='also run the QEMU peer comparison (default)')
    ap.add_argument('--no-peer', dest='peer', action='store_false')
    ap.add_argument('--peer-duration', type=float, default=5, help='seconds per QEMU run (default 5)')
    ap.add_argument('--peer-reps', type=int, default=1)
    ap.add_argument('--guest', default=None,
                    help='guests that set the profiles themselves, comma-separated: %s '
                    '(default uml,qemu-full)' % ', '.join(GUESTS))
    ap.add_argument('--no-uml', dest='uml', action='store_false', default=True,
                    help='no --guest benchmark at all (peer only)')
    ap.add_argument('--no-coal', dest='coal', action='store_false', default=True,
                    help='skip the stall-guard and adaptive rows (UML 6.1 and 7.2 with 1 GB: stall '
                    'guard on/off, vnetd adaptive, DIM; "targets" in latest.json)')
    ap.add_argument('--coal-only', action='store_true',
                    help='only the coalescing rows; merged into the existing results/latest.json, '
                    '.md and .png (their other rows, e.g. "targets_qemu", are kept as they are)')
    ap.add_argument('--fixed', default='uml72-1g,qemu-full',
                    help='guests with fixed-load rows (TCP paced and UDP at about half of none\'s '
                    'bulk throughput), comma-separated; "" = none (default uml72-1g,qemu-full)')
    ap.add_argument('--qemu-vq-size', type=int, default=256,
                    help='ring size of every queue of the qemu-full guest\'s device (default 256, '
                    'QEMU virtio-net\'s default; 1024 is what QEMU allows a vhost-user port)')
    ap.add_argument('--fixed-reps', type=int, default=5, help='interleaved reps of the fixed-load '
                    'rows (default 5)')
    ap.add_argument('--fixed-duration', type=int, default=5,
                    help='seconds per fixed-load run (default 5)')
    ap.add_argument('--coal-guests', default=','.join(coal.COAL_GUESTS),
                    help='guests of the coalescing rows (default %s)' % ','.join(coal.COAL_GUESTS))
    ap.add_argument('--paced-duration', type=int, default=3,
                    help='seconds per paced UDP run of the coalescing rows (default 3)')
    args = ap.parse_args()
    if args.guest is None:
        args.guest = 'uml' if args.quick else 'uml,qemu-full'
    args.guests = [x.strip() for x in args.guest.split(',') if x.strip()] if args.uml else []
    args.fixed_guests = [x.strip() for x in args.fixed.split(',') if x.strip()] \
        if args.uml and not args.coal_only else []
    for x in args.guests + args.fixed_guests:
        if x not in GUESTS:
            ap.error('unknown guest %r (known: %s)' % (x, ', '.join(GUESTS)))
    if args.quick:
        args.duration, args.reps, args.peer, args.rr_duration = 2, 1, False, 1.5
        args.paced_duration = 2
        args.fixed_reps, args.fixed_duration = 1, 3
    if args.coal_only:
        args.guests, args.peer, args.coal = [], False, True
    args.profiles = [p.strip() for p in args.profiles.split(',') if p.strip()]
    for p in args.profiles:
        if p not in PROFILES:
            ap.error('unknown profile %r (known: %s)' % (p, ', '.join(PROFILES)))
    args.directions = ['tx', 'rx'] if args.direction == 'both' else [args.direction]
    # duration is passed to iperf3 -t, which wants an integer number of seconds
    args.duration = max(1, int(round(args.duration)))
    args.peer_duration = max(1, int(round(args.peer_duration)))

    check_prereqs(args)
    t_start = time.monotonic()
    # The tree's commit when the binaries are copied (other work may commit meanwhile).
    commit = subprocess.run(['git', '-C', TOP, 'describe', '--always', '--dirty'],
                            capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now()
    out = args.out or os.path.join(TOP, 'results', 'bench-%s.json' % now.strftime('%Y%m%d-%H%M%S'))
    resdir = os.path.dirname(os.path.abspath(out))
    os.makedirs(resdir, exist_ok=True)

    kit = harness.guest_kit()
    if args.coal:
        harness.guest_kit('sid')
    for x in args.guests + args.fixed_guests:  # fetch everything first: a missing piece skips before any run
        if x in ('uml-7.2', 'uml72-1g'):
            harness.guest_kit('sid')
        elif x == 'qemu-full':
            harness.new_qemu('sid')
    wd = harness.workdir('bench')
    harness.private_binaries(wd)
    load0 = common.load_check('bench')
    log('bench: %s, %d CPUs, load average %.2f %.2f %.2f; work dir %s'
        % (platform.node(), os.cpu_count(), *load0, wd))

    runs, info = [], {}
    for kind in args.guests + [x for x in args.fixed_guests if x not in args.guests]:
        try:
            bench_guest(args, kind, wd, runs, info)
        except Stalled as e:
            log('bench: %s benchmark stopped early: %s' % (kind, e))
            info['%s_stalled' % kind] = str(e)
        except GuestError as e:
            log('bench: %s benchmark failed: %s' % (kind, str(e)[:1500]))
            info['%s_error' % kind] = str(e)[:3000]
        except SystemExit as e:     # harness.skip(): this guest cannot run here (e.g. its CPU)
            if e.code != common.SKIP:
                raise
            log('bench: %s skipped: it cannot run on this host (see above)' % kind)
            info['%s_skipped' % kind] = True
    if args.peer:
        try:
            bench_peer(args, kit, wd, runs, info)
        except Stalled as e:
            log('bench: peer comparison stopped early: %s' % e)
            info['peer_stalled'] = str(e)
        except GuestError as e:
            log('bench: peer comparison failed: %s' % str(e)[:1500])
            info['peer_error'] = str(e)[:3000]

    cs = coal.run_all(args, wd, runs, info) if args.coal else {}
    tg, tg_per = coal.targets(cs, args.directions)
    dimc = coal.dim_compare(cs, args.directions)

    guest_setups = [GUESTS[x][0] for x in args.guests]
    setups = guest_setups + ['qemu-tap', 'qemu-vnetd']
    summary = summarize(runs, setups, list(PROFILES), args.directions)
    rat = ratios(summary, args.directions)
    rat_by_guest = {x: ratios(summary, args.directions, x) for x in guest_setups}
    tq, tq_per_dir = targets_qemu(summary, args.directions)
    fixed_setups = [GUESTS[x][0] for x in args.fixed_guests]
    fs = fixed.fixed_summary(runs, fixed_setups, list(PROFILES), args.directions)
    tqf, tqf_per = fixed.targets_fixed(fs, GUESTS['qemu-full'][0], args.directions)
    if tqf:
        tq = dict(tq or {}, **tqf)
        tq_per_dir = {d: dict(tq_per_dir.get(d, {}), **tqf_per.get(d, {})) for d in tqf_per}
    elapsed = time.monotonic() - t_start
    load1 = os.getloadavg()
    cpu_model = common.cpu_model()
    meta = {'date': now.isoformat(timespec='seconds'), 'host': platform.node(),
            'kernel': platform.release(), 'cpus': os.cpu_count(), 'cpu_model': cpu_model,
            'kvm_used': False, 'loadavg_start': load0, 'loadavg_end': load1,
            'elapsed_s': round(elapsed, 1), 'vnetd_commit': commit,
            'args': {k: v for k, v in vars(args).items()}, 'profiles': PROFILES,
            'targets_legacy_goals': TARGETS, 'targets_qemu_goals': TARGETS_QEMU,
            'targets_goals': coal.GOALS, 'coal_mem': coal.MEM, 'clk_tck': CLK_TCK}
    result = {'meta': meta, 'info': info, 'summary': summary, 'ratios': rat,
              'ratios_by_guest': rat_by_guest, 'runs': runs}
    if tq is not None:
        result['targets_qemu'] = tq
        result['targets_qemu_per_direction'] = tq_per_dir
    if fs:
        result['fixed'] = {'summary': fs, 'goals': fixed.GOALS_FIXED,
                           'rates': {x: info.get('guests', {}).get(x, {}).get('fixed')
                                     for x in args.fixed_guests}}
    meta['fixed_loadavg'] = [r['loadavg'] for r in runs if r['kind'].startswith('fixed_')
                             and 'loadavg' in r]
    coal_res = {'summary': cs, 'targets_per_direction': tg_per, 'adaptive_vs_dim_uml72': dimc,
                'profiles': coal.PROFILE_LABELS}
    if args.coal:
        result['coal'] = coal_res
        if tg is not None:
            result['targets'] = tg
        result['targets_met'] = {k: coal.met(k, v) for k, v in (tg or {}).items()}

    md = []
    for x in args.guests:
        setup = GUESTS[x][0]
        if setup not in summary:
            continue
        md += ['### %s on vnetd (tap), profile set by the guest\'s `ethtool -C`' % GUESTS[x][1], '',
               table_md(summary, setup, args.profiles, args.directions, 'guest+vnetd'), '']
        if x == 'qemu-full' and tq is not None and all(k in tq for k in TARGETS_QEMU):
            md += [targets_qemu_md({k: tq[k] for k in TARGETS_QEMU},
                                   {d: {k: v[k] for k in TARGETS_QEMU} for d, v in
                                    tq_per_dir.items() if all(k in v for k in TARGETS_QEMU)}), '']
        elif rat_by_guest.get(setup):
            md += [ratios_md(rat_by_guest[setup]), '']
    if fs:
        md += [fixed.table_md(fs, {v[0]: v[1] for v in GUESTS.values()}, args.directions),
               fixed.targets_md(tqf, tqf_per), '',
               'Fixed-load rows: %d s runs x %d interleaved reps; load average per run %s.' % (
                   args.fixed_duration, args.fixed_reps,
                   '%.2f–%.2f' % (min(meta['fixed_loadavg']), max(meta['fixed_loadavg']))
                   if meta['fixed_loadavg'] else '–'), '']
    if args.peer and 'qemu-vnetd' in summary:
        md += ['', '### Peer: QEMU 7.2 TCG guest, userspace virtio-net (tap, vhost=off) vs vnetd '
               '(vhost-user, host-side `vnetctl coalesce`)', '',
               '`qemu-tap` (cannot coalesce):', '',
               table_md(summary, 'qemu-tap', ['none'], args.directions, 'QEMU'), '',
               '`qemu-vnetd`:', '',
               table_md(summary, 'qemu-vnetd', args.profiles, args.directions, 'QEMU+vnetd')]
    md += ['', 'Measured %s on %s (%d CPUs, %s), load average %.2f at start, %.2f at end; '
           '%d s runs x %d reps%s; bench/coalescing.py took %.0f s.'
           % (meta['date'], meta['host'], meta['cpus'], cpu_model, load0[0], load1[0],
              args.duration, args.reps,
              ' (QEMU peer %d s x %d)' % (args.peer_duration, args.peer_reps) if args.peer else
              ', no QEMU peer', elapsed)]
    coal_md = ''
    if args.coal and cs:
        coal_md = '\n'.join([COAL_MARK, '', coal.table_md(cs, args.directions),
                             coal.targets_md(tg or {}, tg_per, dimc), '',
                             'Coalescing rows measured %s, load average %.2f at start, %.2f at end; '
                             '%d s bulk, %d s paced, %s s ping-pong runs x %d reps.'
                             % (meta['date'], load0[0], load1[0], args.duration, args.paced_duration,
                                args.rr_duration, args.reps)]) + '\n'
    md = '\n'.join(md) + '\n\n' + coal_md
    if not args.coal:
        keep_coal(resdir, result)
    chart_summary, chart_args = summary, (args.profiles, args.directions, guest_setups)
    if args.coal_only:
        result, md, chart_summary, chart_args = merge_latest(resdir, result, coal_md, now)

    for path in (out, os.path.join(resdir, 'latest.json')):
        with open(path, 'w') as f:
            json.dump(result, f, indent=1, sort_keys=False, default=str)
    with open(os.path.join(resdir, 'latest.md'), 'w') as f:
        f.write(md)
    extra = coal.chart_rows(cs, args.directions, os.path.join(resdir, 'latest.dat'))
    if extra[0] or any(x in chart_summary for x in chart_args[2]):
        chart(chart_summary, chart_args[0], chart_args[1], os.path.join(resdir, 'latest.png'),
              os.path.join(resdir, 'latest.dat'), chart_args[2], extra)
    if fs and not bench_fixed_chart(result, resdir):
        log('bench: no fixed-load chart')
    log('\n' + md)
    log('wrote %s, %s, %s, %s' % (out, os.path.join(resdir, 'latest.json'),
                                  os.path.join(resdir, 'latest.md'), os.path.join(resdir, 'latest.png')))
    if not os.environ.get('VNETD_KEEP_WD'):  # set: the work dir (vnetd's log) is kept
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == '__main__':
    main()
