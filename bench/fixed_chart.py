#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Redraw the fixed-load chart from results/latest.json (or --json) "fixed" (bench/lib/fixed.py's
summary): results/fixed-latest.png and results/fixed-latest.dat (the plotted numbers), as make
bench draws them (bench/lib/fixed_chart.py)."""

import argparse
import json
import os
import sys

from bench.lib import common, fixed_chart


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--json', default=os.path.join(common.RESULTS, 'latest.json'))
    ap.add_argument('--png', default=os.path.join(common.RESULTS, 'fixed-latest.png'))
    a = ap.parse_args()
    with open(a.json) as f:
        res = json.load(f)
    ok = fixed_chart.draw(res, a.png, a.png[:-len('.png')] + '.dat')
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
