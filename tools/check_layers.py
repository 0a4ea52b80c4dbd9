#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py - fail when src/'s #include graph has a cycle between files, or an include points
upward against docs/design.md's layer table ("## Layers, file by file").

A file's module is its name without .c/.h (port.c, port.h and port_internal.h are one module). The table gives each module a layer number, 1 at the bottom: a module may include only
modules of a lower layer or of its own layer, and the graph of modules must have no cycle. Every
module under src/ must be in the table, and every table row must name a module that exists.
Usage: tools/check_layers.py [--print-graph]. Exit 0 ok, 1 with one line per violation.
"""

import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(TOP, 'src')
DESIGN = os.path.join(TOP, 'docs', 'design.md')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r'^\|\s*(\d+)\s*\|\s*`([A-Za-z0-9_]+)`')


def module(name):
    """foo.c, foo.h and foo_internal.h are module foo (its private header is part of it)."""
    return re.sub(r'(_internal)?\.(c|h)$', '', name)


def graph():
    """{module: set of modules it includes} over src/."""
    g = {}
    for f in sorted(os.listdir(SRC)):
        if not f.endswith(('.c', '.h')):
            continue
        m = module(f)
        g.setdefault(m, set())
        with open(os.path.join(SRC, f), encoding='utf-8') as fh:
            for inc in INCLUDE.findall(fh.read()):
                dep = module(os.path.basename(inc))
                if dep != m and os.path.exists(os.path.join(SRC, os.path.basename(inc))):
                    g[m].add(dep)
    return g


def layers():
    """{module: layer} from the design doc's table."""
    out, inside = {}, False
    with open(DESIGN, encoding='utf-8') as fh:
        for line in fh:
            if line.startswith('## '):
                inside = line.strip() == '## Layers, file by file'
                continue
            m = ROW.match(line) if inside else None
            if m:
                out[m.group(2)] = int(m.group(1))
    return out


def cycles(g):
    """Each cycle once, as a list of modules (Tarjan's strongly connected components)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main():
    g = graph()
    table = layers()
    errors = []
    if not table:
        errors.append('%s has no "## Layers, file by file" table' % DESIGN)
    for comp in cycles(g):
        errors.append('include cycle between files: %s' % ' <-> '.join(comp))
    for m in sorted(g):
        if table and m not in table:
            errors.append('src/%s.* is not in the layer table of docs/design.md' % m)
    for m in sorted(table):
        if m not in g:
            errors.append('docs/design.md names %s, which is not in src/' % m)
    for m, deps in sorted(g.items()):
        for d in sorted(deps):
            if m in table and d in table and table[d] > table[m]:
                errors.append('%s (layer %d) includes %s (layer %d): upward against the table'
                              % (m, table[m], d, table[d]))
    if '--print-graph' in sys.argv:
        for m in sorted(g, key=lambda x: (-table.get(x, 0), x)):
            print('%2s %-24s -> %s' % (table.get(m, '?'), m, ' '.join(sorted(g[m]))))
    for e in errors:
        print('check_layers: ' + e)
    if not errors:
        print('check_layers: %d modules, %d includes, no cycle, none upward' %
              (len(g), sum(len(d) for d in g.values())))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
