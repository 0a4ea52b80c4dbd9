#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python tree's import rules (no vnetd, no root; read from the sources, nothing imported):

  - no file under tests/ or bench/ edits sys.path: the repository's top is the one import root
    (the Makefile and run_all.py put it on PYTHONPATH), and imports name the package:
    tests.kit (the shared test kit), bench.lib (the bench library), tests.e2e;
  - no import cycle among these modules (bench/*.py, bench/lib/, tests/kit/, tests/e2e/);
  - no bench script (bench/*.py) is imported by another module: what two scripts share lives in
    bench/lib/;
  - the test kit (tests/kit/) imports nothing from tests/e2e/ or bench/, and bench/lib/ nothing
    from tests/e2e/.

Prints the import graph's size and each violation; exit 0 PASS, 1 FAIL."""

import ast
import glob
import os
import re
import sys

from tools.check_layers import cycles  # Tarjan: each cycle once, sorted

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TREES = ('tests', 'bench')
SYS_PATH = re.compile(r'\bsys\.path\.(insert|append|extend)\b|\bsys\.path\s*(\+?=)')


def modules():
    """{dotted name: path} of every .py file under tests/ and bench/."""
    out = {}
    for tree in TREES:
        for path in glob.glob(os.path.join(TOP, tree, '**', '*.py'), recursive=True):
            rel = os.path.relpath(path, TOP)[:-3].split(os.sep)
            if rel[-1] == '__init__':
                rel = rel[:-1]
            out['.'.join(rel)] = path
    return out


def imports(name, path, known):
    """Dotted names of the known modules that the module NAME (at PATH) imports, anywhere in it."""
    pkg = name if path.endswith('__init__.py') else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            cands = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = pkg.split('.')
                parts = parts[:len(parts) - (node.level - 1)]
                base = '.'.join(parts + ([node.module] if node.module else []))
            cands = [base] + ['%s.%s' % (base, a.name) for a in node.names]
        else:
            continue
        for c in cands:
            # the module itself, else the nearest known package above it
            while c and c not in known:
                c = c.rpartition('.')[0]
            if c and c != name:
                found.add(c)
    return found


def is_package(name, mods):
    return mods[name].endswith('__init__.py')


def main():
    mods = modules()
    bad = []
    for name, path in sorted(mods.items()):
        for i, line in enumerate(open(path), 1):
            if SYS_PATH.search(line.split('#')[0]):
                bad.append('%s:%d edits sys.path: %s' % (os.path.relpath(path, TOP), i,
                                                          line.strip()))
    graph = {n: {m for m in imports(n, p, mods) if not is_package(m, mods)} for n, p in mods.items()}
    edges = sum(len(v) for v in graph.values())
    print('%d modules, %d import edges among them' % (len(graph), edges))
    for comp in cycles(graph):
        bad.append('import cycle: %s' % ' <-> '.join(comp))
    scripts = {n for n in mods if n.startswith('bench.') and n.count('.') == 1}
    for n, deps in sorted(graph.items()):
        for d in sorted(deps):
            if d in scripts:
                bad.append('%s imports the bench script %s (shared code belongs in bench/lib/)'
                           % (n, d))
            if n.startswith('tests.kit') and d.startswith(('tests.e2e', 'bench')):
                bad.append('the kit module %s imports %s' % (n, d))
            if n.startswith('bench.lib') and d.startswith('tests.e2e'):
                bad.append('the bench library module %s imports %s' % (n, d))
    for b in bad:
        print('FAIL: ' + b)
    print('PASS' if not bad else '%d problems' % len(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
