#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py - src/'s folders are its layers: check that includes and calls go only where
each folder's rules allow, through each folder's one public header, with no cycle between files.

A file's folder is read from its path: src/<folder>/..., with src/backend/<name>/ one folder per
backend and src/dev/<sub>/ part of dev. FOLDERS below lists the folders bottom-up, each with the
folders it may use (the architecture; everything else is derived from the tree). Checked:
  - every #include of a vnetd header names it from src/ ("dev/dev.h"), and the file exists;
  - a file includes another folder's header only if its folder may use that folder, and only
    that folder's public header, <folder>/<name>.h (lib/ is a set of leaf headers, each public);
    a *_internal.h is never included from outside its folder;
  - no cycle of includes between files;
  - with --build DIR (after a build): between the object files of src/, no cycle of direct
    symbol references (nm: a file that uses a symbol another defines points at it; calls through
    an ops table count as a reference to the table's owner), and every reference between
    folders is one the rules allow;
  - docs/design.md's section "## Layers, file by file" is what --markdown prints.
Usage: tools/check_layers.py [--build DIR] [--markdown] [--print-graph]. Exit 0 ok, 1 with one
line per violation.
"""

import collections
import glob
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(TOP, 'src')
DESIGN = os.path.join(TOP, 'docs', 'design.md')
SECTION = '## Layers, file by file'
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PURPOSE = re.compile(r'^/\* \S+ - (.*?)\s*\*/$')

# Bottom-up: (folder, what it is, folders it may use). A folder always uses itself.
FOLDERS = [
    ('lib', 'base: logging, iovecs, text, counters, peer I/O, io_uring writes, virtio-net '
            'constants', []),
    ('pkt', 'offloads in software: the virtio-net header checked against a frame, checksums, '
            'TCP/UDP segmentation', ['lib']),
    ('mem', 'guest memory: regions, the one checked lookup, SIGBUS recovery, dirty log, caps',
     ['lib']),
    ('virtq', 'virtqueues, device side: split and packed rings, one walker per layout',
     ['lib', 'mem']),
    ('dev', 'the virtio-net device model: queues, RX, TX, control queue, rates, state stream; '
            'coal/ notification coalescing, rss/ receive-side scaling',
     ['lib', 'pkt', 'mem', 'virtq']),
    ('vhost', 'the vhost-user protocol: messages, connection states, memory tables, rings, '
              'migration', ['lib', 'mem', 'dev']),
    ('backend/tap', 'the tap backend: frames to and from a Linux tap', ['lib', 'pkt', 'dev']),
    ('backend/xdp', 'the AF_XDP backend: frames to and from a NIC queue', ['lib', 'pkt', 'dev']),
    ('backend/switch', 'the switch backend: vnetd\'s own L2 switch between its ports, port '
                       'security', ['lib', 'pkt', 'mem', 'dev']),
    ('loop', 'event loops: epoll registrations, run queues, worker threads', ['lib', 'mem', 'dev']),
    ('config', 'configuration: command line, --config file, the port spec grammar',
     ['lib', 'pkt', 'mem', 'dev', 'backend/tap', 'backend/xdp', 'backend/switch']),
    ('port', 'live ports: a device, its backend and socket; the port table; state files',
     ['lib', 'pkt', 'mem', 'dev', 'vhost', 'backend/tap', 'backend/xdp', 'backend/switch',
      'loop', 'config']),
    ('control', 'the control plane: control socket commands, statistics, Prometheus metrics',
     ['lib', 'pkt', 'dev', 'backend/tap', 'backend/switch', 'loop', 'config', 'port']),
    ('daemon', 'the vnetd process: set-up, worker dispatch, sandbox, main()',
     ['lib', 'pkt', 'mem', 'dev', 'backend/tap', 'backend/switch', 'loop', 'config', 'port',
      'control']),
    ('vnetctl', 'vnetctl, the command-line client of the control socket', ['lib']),
]
RULES = {f: set(uses) | {f} for f, _, uses in FOLDERS}
LEAF_FOLDERS = {'lib'}  # folders whose every header is public (leaves with no vnetd types)


def folder(rel):
    """The folder (layer) of a path relative to src/."""
    parts = rel.split('/')
    if len(parts) < 2:
        return None
    return '/'.join(parts[:2]) if parts[0] == 'backend' else parts[0]


def public_header(f):
    """A folder's one public header: <folder>/<last part of its name>.h."""
    return '%s/%s.h' % (f, f.split('/')[-1])


def src_files():
    out = []
    for root, dirs, files in os.walk(SRC):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                out.append(os.path.relpath(os.path.join(root, f), SRC))
    return out


def purpose(rel):
    with open(os.path.join(SRC, rel), encoding='utf-8') as fh:
        lines = fh.read().splitlines()[:2]
    m = PURPOSE.match(lines[1]) if len(lines) > 1 else None
    return m.group(1) if m else '?'


def check_includes(files, errors):
    """Include rules; returns {file: set of included src files}."""
    g = {}
    for rel in files:
        me = folder(rel)
        g[rel] = set()
        with open(os.path.join(SRC, rel), encoding='utf-8') as fh:
            incs = INCLUDE.findall(fh.read())
        for inc in incs:
            if not os.path.exists(os.path.join(SRC, inc)):
                if os.path.exists(os.path.join(os.path.dirname(os.path.join(SRC, rel)), inc)) \
                        or any(os.path.basename(x) == os.path.basename(inc) for x in files):
                    errors.append('src/%s includes "%s": name it from src/' % (rel, inc))
                continue
            g[rel].add(inc)
            them = folder(inc)
            if them == me:
                continue
            if me not in RULES:
                errors.append('src/%s is in no folder of the layer rules' % rel)
                continue
            if them not in RULES[me]:
                errors.append('src/%s includes %s: %s may not use %s' % (rel, inc, me, them))
            elif them not in LEAF_FOLDERS and inc != public_header(them):
                errors.append('src/%s includes %s: outside %s/, only %s' %
                              (rel, inc, them, public_header(them)))
    for f in RULES:
        if f not in LEAF_FOLDERS and f != 'vnetctl' and f != 'daemon' \
                and not os.path.exists(os.path.join(SRC, public_header(f))):
            errors.append('src/%s: the public header of %s/ is missing' % (public_header(f), f))
    return g


def cycles(g):
    """Each cycle once, as a sorted list of nodes (Tarjan's strongly connected components)."""
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


def symbol_graph(build):
    """{src .c file: set of src .c files whose symbols it references}, from nm on the objects."""
    objs = {}
    for o in glob.glob(os.path.join(build, '*.a.p', '*.o')) + \
            glob.glob(os.path.join(build, 'vnetd.p', '*.o')) + \
            glob.glob(os.path.join(build, 'vnetctl.p', '*.o')):
        base = os.path.basename(o)
        if not base.startswith('src_'):
            continue
        objs[o] = None
    # object name: src_dev_coal_notify.c.o; map back to its source by matching flattened paths
    flat = {('src_' + rel.replace('/', '_') + '.o'): rel for rel in src_files()
            if rel.endswith('.c')}
    defs, uses = {}, collections.defaultdict(set)
    for o in sorted(objs):
        rel = flat.get(os.path.basename(o))
        if rel is None:
            continue
        out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBRVWG':
                defs[p[2]] = rel
            elif len(p) == 2 and p[0] == 'U':
                uses[rel].add(p[1])
    g = collections.defaultdict(set)
    for rel in flat.values():
        g[rel]
    for rel, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != rel:
                g[rel].add(defs[s])
    return g, len(defs)


def markdown():
    """The design doc's layer table: folders top-down, each file with its purpose line."""
    files = src_files()
    out = ['Every file of `src/`, by folder, top to bottom. A folder is a layer: it uses only the',
           'folders in its row, through their public header (`<folder>/<name>.h`; `lib/` holds',
           'leaf headers, each public), and no two files reference each other in a cycle.',
           '`tools/check_layers.py` checks the includes and this table in `make check`, and the',
           'object files\' symbol references after the build (`--build build`); it prints this',
           'table with `--markdown`.', '',
           '| layer | folder | may use | what it holds |', '|---|---|---|---|']
    for n, (f, what, uses) in reversed(list(enumerate(FOLDERS, 1))):
        out.append('| %d | `src/%s/` | %s | %s |' % (n, f, ', '.join(uses) or '-', what))
    out += ['', '| file | purpose |', '|---|---|']
    for n, (f, _, _) in reversed(list(enumerate(FOLDERS, 1))):
        for rel in files:
            if folder(rel) == f:
                out.append('| `%s` | %s |' % (rel, purpose(rel).replace('|', '\\|')))
    return '\n'.join(out) + '\n'


def design_section():
    with open(DESIGN, encoding='utf-8') as fh:
        text = fh.read()
    i = text.find('\n' + SECTION + '\n')
    if i < 0:
        return None
    body = text[i + len(SECTION) + 2:]
    j = body.find('\n## ')
    return (body[:j + 1] if j >= 0 else body).strip('\n') + '\n'


def main():
    if '--markdown' in sys.argv:
        sys.stdout.write(markdown())
        return 0
    errors = []
    files = src_files()
    for rel in files:
        if folder(rel) not in RULES:
            errors.append('src/%s is in no folder of the layer rules' % rel)
    g = check_includes(files, errors)
    for comp in cycles(g):
        errors.append('include cycle between files: %s' % ' <-> '.join(comp))
    if design_section() != markdown():
        errors.append('docs/design.md, "%s", is not what tools/check_layers.py --markdown '
                      'prints: paste it there' % SECTION)
    nsym = None
    if '--build' in sys.argv:
        build = sys.argv[sys.argv.index('--build') + 1]
        sg, nsym = symbol_graph(build)
        if not any(sg.values()):
            errors.append('no object files of src/ under %s: build first' % build)
        for comp in cycles(sg):
            errors.append('symbol reference cycle between files: %s' % ' <-> '.join(comp))
        for a, deps in sorted(sg.items()):
            for b in sorted(deps):
                fa, fb = folder(a), folder(b)
                if fa != fb and fa in RULES and fb not in RULES[fa]:
                    errors.append('src/%s references src/%s: %s may not use %s' % (a, b, fa, fb))
    if '--print-graph' in sys.argv:
        for rel in files:
            if g[rel]:
                print('%-36s -> %s' % (rel, ' '.join(sorted(g[rel]))))
    for e in errors:
        print('check_layers: ' + e)
    if not errors:
        print('check_layers: %d files in %d folders, %d includes: by the folder rules, through '
              'public headers, no cycle%s' %
              (len(files), len(FOLDERS), sum(len(d) for d in g.values()),
               '' if nsym is None else '; symbol references between object files: '
               'by the rules, no cycle'))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
