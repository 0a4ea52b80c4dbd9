#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What RSS and hash reporting cost the receive path: user-space instructions per packet with
RSS off (vnetd's own flow spreading over 2 active pairs), RSS on (Toeplitz hash, indirection
table) and RSS with HASH_REPORT (the hash in a 20-byte header), measured with callgrind on the
device model over fake guest memory (bench/rss_cost.c against build/libvnetcore.a; deterministic,
so no machine-load caveat).

    python3 bench/rss_cost.py [--packets N]    # VNETD_BUILD=DIR for another build

Per mode the difference of two runs (N and N/4 packets) divided by 3N/4 removes start-up. Outputs
a table and results/rss-cost-latest.{json,md,png} (--out FILE.json: FILE.{json,md,png}).
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
MODES = (('off', 'RSS off (2 pairs, vnetd\'s flow spreading)'),
         ('rss', 'RSS on (Toeplitz, 128-entry table)'),
         ('hash', 'RSS on + HASH_REPORT (20-byte header)'))


def main():
    args, tmp, exe = common.model_bench_start('rss_cost', __doc__, BUILD, 25600,
                                              'packets per run')
    n = args.packets
    res = {}
    for mode, _ in MODES:
        res[mode] = common.per_packet(exe, tmp, [mode], n)
    off = res['off']['per_packet']
    lines = ['| receive path, 64 B TCP/IPv4, 64 flows | instr/packet | vs RSS off |',
             '|---|---:|---:|']
    for mode, what in MODES:
        v = res[mode]['per_packet']
        res[mode]['ratio_vs_off'] = round(v / off, 3)
        lines.append('| %s | %.1f | %.3fx (%+.1f) |' % (what, v, v / off, v - off))
    md = '\n'.join(lines)
    log(md)
    now = datetime.datetime.now()
    doc = {'meta': common.model_bench_meta('rss_cost', BUILD, n, now,
                                           '; the harness reposts and reaps buffers, which all '
                                           'modes share'),
           'results': res}
    out = args.out or os.path.join(TOP, 'results', 'rss-cost-latest.json')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(doc, f, indent=1)
    stem = out[:-5]
    with open(stem + '.md', 'w') as f:
        f.write(md + '\n')
    if shutil.which('gnuplot'):
        dat = stem + '.dat'
        with open(dat, 'w') as f:
            for mode, _ in MODES:
                f.write('"%s" %g\n' % (mode, res[mode]['per_packet']))
        gnuplot.run(['set terminal pngcairo size 700,400 font "sans,10"',
                     'set output "%s.png"' % stem,
                     'set title "vnetd receive path: instructions per packet, RSS off / on / '
                     'with hash report"',
                     'set style data histogram', 'set style fill solid 0.6 border -1',
                     'set grid ytics', 'set yrange [0:*]',
                     'plot "%s" using 2:xtic(1) notitle' % dat], log)
        os.unlink(dat)
    log('wrote ' + out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
