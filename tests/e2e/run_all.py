# SPDX-License-Identifier: MIT
"""Run every end-to-end test (tests/e2e/GROUP/test_*.py), group by group; 77 = skipped with a reason.
Exit 1 on any failure. Arguments: run only the tests whose GROUP/name contains one of them
(e.g. `hostile/`, `test_uml`)."""

import glob
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
# tree: the Python import rules and the Debian package; guests: one guest or VMM end to end (the
# guest kits' self-test first); features: one vnetd feature each; hostile: attacks on vnetd.
GROUPS = ('tree', 'guests', 'features', 'hostile')


def env():
    """This environment with the repository's top first on PYTHONPATH: the tests import the kit as
    tests.kit (and bench.lib)."""
    e = dict(os.environ)
    e['PYTHONPATH'] = os.pathsep.join([TOP] + [p for p in e.get('PYTHONPATH', '').split(os.pathsep)
                                               if p and os.path.abspath(p) != TOP])
    return e


def main():
    only = sys.argv[1:]
    tests = [t for g in GROUPS for t in sorted(glob.glob(os.path.join(HERE, g, 'test_*.py')))]
    if only:
        tests = [t for t in tests if any(o in os.path.relpath(t, HERE) for o in only)]
    results = []
    for t in tests:
        name = os.path.relpath(t, HERE)[:-3]
        print('=== %s' % name, flush=True)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, t], cwd=HERE, env=env())
        dt = time.monotonic() - t0
        verdict = {0: 'PASS', 77: 'SKIP'}.get(r.returncode, 'FAIL')
        results.append((name, verdict, dt))
        print('=== %s: %s (%.1f s)' % (name, verdict, dt), flush=True)
    print('\nend-to-end summary:')
    for name, verdict, dt in results:
        print('  %-36s %s  %6.1f s' % (name, verdict, dt))
    return 1 if any(v == 'FAIL' for _, v, _ in results) else 0


if __name__ == '__main__':
    sys.exit(main())
