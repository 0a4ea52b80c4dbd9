# SPDX-License-Identifier: MIT
"""Run every end-to-end test (tests/e2e/test_*.py); 77 = skipped with a reason. Exit 1 on any failure."""

import glob
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def env():
    """This environment with the repository's top first on PYTHONPATH: the tests import the kit as
    tests.kit (and bench.lib)."""
    e = dict(os.environ)
    e['PYTHONPATH'] = os.pathsep.join([TOP] + [p for p in e.get('PYTHONPATH', '').split(os.pathsep)
                                               if p and os.path.abspath(p) != TOP])
    return e


def main():
    only = sys.argv[1:]
    tests = sorted(glob.glob(os.path.join(HERE, 'test_*.py')))
    if only:
        tests = [t for t in tests if any(o in os.path.basename(t) for o in only)]
    results = []
    for t in tests:
        name = os.path.basename(t)[:-3]
        print('=== %s' % name, flush=True)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, t], cwd=HERE, env=env())
        dt = time.monotonic() - t0
        verdict = {0: 'PASS', 77: 'SKIP'}.get(r.returncode, 'FAIL')
        results.append((name, verdict, dt))
        print('=== %s: %s (%.1f s)' % (name, verdict, dt), flush=True)
    print('\nend-to-end summary:')
    for name, verdict, dt in results:
        print('  %-28s %s  %6.1f s' % (name, verdict, dt))
    return 1 if any(v == 'FAIL' for _, v, _ in results) else 0


if __name__ == '__main__':
    sys.exit(main())
