# SPDX-License-Identifier: MIT
"""Run gnuplot on a script given as lines; one place for the benchmarks' charts."""

import subprocess


def run(lines, log):
    """Feed the lines to gnuplot; log its stderr on failure; True when the chart was drawn."""
    r = subprocess.run(['gnuplot'], input='\n'.join(lines) + '\n', text=True, capture_output=True)
    if r.returncode != 0:
        log('gnuplot failed: ' + r.stderr)
    return r.returncode == 0
