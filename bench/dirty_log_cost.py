#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What dirty logging costs the data path: user-space instructions per packet with vnetd's log
on (as during a live migration) and off, for RX (the device writes buffers and the used ring)
and TX (only the used ring), measured with callgrind on the device model over fake guest memory
(bench/dirty_log_cost.c against build/libvnetcore.a; deterministic, so no machine-load caveat).

    python3 bench/dirty_log_cost.py [--packets N]    # VNETD_BUILD=DIR for another build

Per mode the difference of two runs (N and N/4 packets) divided by 3N/4 removes start-up. Outputs
a table, results/dirty-log-cost-<date>.json, results/dirty-log-cost-latest.{json,md,png}.
"""

import datetime
import json
import os
import shutil
import sys

from bench.lib import common
from bench.lib.common import TOP, log
from bench.lib import gnuplot

BUILD = os.environ.get('VNETD_BUILD', os.path.join(TOP, 'build'))


def main():
    args, tmp, exe = common.model_bench_start('dirty_log_cost', __doc__, BUILD, 6400,
                                              'packets per run (<= 8000)')
    n = args.packets
    res = {}
    for direction in ('rx', 'tx'):
        for mode in ('off', 'on'):
            res['%s/%s' % (direction, mode)] = common.per_packet(exe, tmp, [mode, direction], n)
    lines = ['| path | log off: instr/packet | log on | added by the log | ratio |',
             '|---|---:|---:|---:|---:|']
    for direction in ('rx', 'tx'):
        off, on = res[direction + '/off']['per_packet'], res[direction + '/on']['per_packet']
        res[direction + '/added'] = round(on - off, 1)
        what = ('RX (1500 B into 2 KiB buffers, each packet published: the harness flushes '
                'like the event loop after a lone packet)' if direction == 'rx' else
                'TX (1500 B, batches of 64)')
        lines.append('| %s | %.1f | %.1f | %.1f | %.3fx |' % (what, off, on, on - off, on / off))
    md = '\n'.join(lines)
    log(md)
    now = datetime.datetime.now()
    doc = {'meta': common.model_bench_meta('dirty_log_cost', BUILD, n, now),
           'results': res}
    out = args.out or os.path.join(TOP, 'results', 'dirty-log-cost-%s.json'
                                   % now.strftime('%Y%m%d-%H%M%S'))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    stem = out[:-5] if args.out else os.path.join(TOP, 'results', 'dirty-log-cost-latest')
    if not args.out:
        with open(stem + '.json', 'w') as f:
            json.dump(doc, f, indent=1)
    with open(stem + '.md', 'w') as f:
        f.write(md + '\n')
    if shutil.which('gnuplot'):
        dat = stem + '.dat'
        with open(dat, 'w') as f:
            for d in ('rx', 'tx'):
                f.write('%s %g %g\n' % (d.upper(), res[d + '/off']['per_packet'],
                                        res[d + '/on']['per_packet']))
        gnuplot.run(['set terminal pngcairo size 700,400 font "sans,10"',
                     'set output "%s.png"' % stem,
                     'set title "vnetd device model: instructions per packet, dirty log off / on"',
                     'set style data histogram', 'set style histogram cluster gap 1',
                     'set style fill solid 0.6 border -1', 'set grid ytics', 'set yrange [0:*]',
                     'plot "%s" using 2:xtic(1) title "log off", "" using 3 title "log on"' % dat],
                    log)
    log('wrote ' + out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
