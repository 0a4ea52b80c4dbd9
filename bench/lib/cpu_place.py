# SPDX-License-Identifier: MIT
"""Where the hypervisor has put the backend's and the driver's CPUs: a cache line's round trip between them, sampled beside a measurement."""

# On the 2-vCPU VMs this project is measured on, the host moves the two vCPUs between cores
# that share a cache (a line's round trip ~52 ns) and cores that do not (~330 ns), every few
# seconds, idle or loaded. Every ring index, descriptor and frame crosses between the two CPUs,
# so a run's rates follow the placement: bench-datapath's 1500 B switch cells ran at 3.2-3.6
# Mpps in far seconds and 7.4-9.3 in near ones, whatever vnetd's poll mode, DPDK's vhost PMD
# 2.8-3.3 against 5.0-6.3 (docs/benchmarks.md, "Where the hypervisor puts the CPUs"). paced
# --mode cpu-distance samples it at SCHED_FIFO (~0.1-0.7 ms of each CPU per sample).

import json
import subprocess
import time

INTERVAL_S = 0.5
NEAR_QUANTILE = 0.2  # the run's "near" round trip: this quantile of its samples (nearest())
FAR_FACTOR = 2.5     # a sample over 2.5x that is "far"
FAR_SHARE = 0.2      # a measurement with more than this share of far samples is "far"


class Sampler:
    """paced --mode cpu-distance running beside a measurement, for at most duration seconds."""

    def __init__(self, driver, duration, cpus=(0, 1), rounds=2000, interval=INTERVAL_S):
        """rounds per sample: 2000 (~0.1-0.7 ms of each CPU) beside a throughput measurement,
        fewer beside a round-trip one (200: ~10-70 µs, a few frames' latency)."""
        self.samples, self.fifo, self.taken, self.lost = [], None, None, None
        self.p = subprocess.Popen(
            [driver, '--mode', 'cpu-distance', '--cpu', str(cpus[0]), '--peer-cpu',
             str(cpus[1]), '--duration', '%.3f' % max(0.01, duration),
             '--interval', '%.3f' % interval, '--rounds', str(rounds)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def stop(self):
        """End it (SIGTERM) and return the round trips sampled, ns: none unless both threads
        ran SCHED_FIFO (self.fifo; without it, beside busy CPUs, a sample measures the
        scheduler too) or when the probe failed (a paced without --mode cpu-distance: exit 2)."""
        if self.p.poll() is None:
            self.p.terminate()
        try:
            out, _ = self.p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, _ = self.p.communicate()
        for line in out.splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if 'round_trip_ns' in d:
                self.samples.append(d['round_trip_ns'])
            elif 'fifo' in d:
                self.fifo, self.taken, self.lost = d['fifo'], d['samples'], d['lost']
        return self.samples if self.fifo else []

    def health(self):
        """What the probe said of itself, for the run's JSON."""
        return {'fifo': self.fifo, 'samples': self.taken, 'lost': self.lost,
                'exit': self.p.returncode}


def far_share(samples, near_ns):
    """Share of samples farther than FAR_FACTOR x near_ns (None without samples)."""
    if not samples or not near_ns:
        return None
    return sum(1 for s in samples if s > FAR_FACTOR * near_ns) / len(samples)


def placement(run, near_ns):
    """'near', 'far' or None (not sampled) for a measurement with run['cpu_round_trip_ns']."""
    samples = run.get('cpu_round_trip_ns')
    if far_share(samples, near_ns) is None:
        return None
    return 'far' if is_far(samples, near_ns) else 'near'


def nearest(runs, seed=()):
    """The machine's 'near' round trip: the NEAR_QUANTILE of every sample in runs (and seed).
    Not the minimum: now and then the two vCPUs share a core (~25 ns), and against that
    every other sample would look far."""
    vals = sorted(list(seed) + [x for r in runs for x in r.get('cpu_round_trip_ns') or []])
    return vals[int(NEAR_QUANTILE * (len(vals) - 1))] if vals else None


def is_far(samples, near_ns):
    """True when more than FAR_SHARE of samples are far (False without samples)."""
    share = far_share(samples, near_ns)
    return share is not None and share > FAR_SHARE


def mark(run, near_ns, flag='contended'):
    """Record a measurement's placement against near_ns: run['cpus_far_share'], run['cpus']
    ('near'/'far'/None) and, when far, run[flag] (the benchmark's "disturbed": re-measured and
    left out of the summary as a run others' work disturbed) with run['disturbed_by'] = 'far
    CPUs'. A run others' work disturbed (run[flag] set before, by no placement) stays so."""
    run['cpus_far_share'] = far_share(run.get('cpu_round_trip_ns'), near_ns)
    run['cpus'] = placement(run, near_ns)
    if run.get('disturbed_by') == 'others' or \
            (run.get(flag) and run.get('disturbed_by') is None):
        run['disturbed_by'] = 'others'
    elif run['cpus'] == 'far':
        run[flag], run['disturbed_by'] = True, 'far CPUs'
    else:
        run[flag], run['disturbed_by'] = False, None


def seed(driver, log, who, rounds=2000):
    """The machine's placement now, idle: 3 s of samples, logged as `who`; [] (logged) when the
    probe gives none (no SCHED_FIFO: no CAP_SYS_NICE; a paced without the mode), and then the
    caller samples nothing."""
    smp = Sampler(driver, 3.0, rounds=rounds)
    time.sleep(3.2)
    got = smp.stop()
    if got:
        log("%s: a cache line's round trip between CPU 0 and 1 now: %s ns"
            % (who, ' '.join('%.0f' % x for x in got)))
    else:
        log('%s: no CPU placement samples (the probe: %s; SCHED_FIFO needs CAP_SYS_NICE): runs '
            'are not classified near or far' % (who, smp.health()))
    return got


def around(driver, rounds=200):
    """4 samples 0.1 s apart, now (before or after a window the probe must stay out of):
    (samples, the probe's health())."""
    smp = Sampler(driver, 0.3, rounds=rounds, interval=0.1)
    time.sleep(0.4)
    return smp.stop(), smp.health()


def remark(runs, near_ns, flag='contended'):
    """Mark every sampled run of a finished benchmark against the whole run's near round trip
    (not the one known when it was measured); the summary for its meta['cpu_placement']."""
    for r in runs:
        if 'cpu_round_trip_ns' in r:
            mark(r, near_ns, flag)
    return {'near_ns': near_ns, 'far_factor': FAR_FACTOR, 'far_share': FAR_SHARE,
            'runs_far': sum(1 for r in runs if r.get('cpus') == 'far'),
            'runs_sampled': sum(1 for r in runs if r.get('cpus'))}
