#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_docs_c.py - every file under src/ starts with its SPDX line and a one-line purpose, and every
non-static function has a kernel-doc block at its definition ("/**" ... " * name() - what").

Usage: tools/check_docs_c.py [--list]. Exit 0 ok, 1 with one line per missing item.
"""

import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ['src']
# A definition: at column 0, not static, a return type, the name, "(", ending in ")" then "{"
# on the next line (the kernel style used throughout src/).
DEF = re.compile(r'^(?!static\b)(?!typedef\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])([a-z_][a-z0-9_]*)\(([^;{}]*?)\)\s*\n\{', re.M)
SPDX = '/* SPDX-License-Identifier: MIT */'


def check_file(path, errors):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    lines = text.splitlines()
    rel = os.path.relpath(path, TOP)
    if not lines or lines[0] != SPDX:
        errors.append('%s: first line is not %s' % (rel, SPDX))
    elif len(lines) < 2 or not re.match(r'/\* %s - \S' % re.escape(os.path.basename(path)), lines[1]):
        errors.append('%s: second line is not "/* %s - purpose. */"' % (rel, os.path.basename(path)))
    if not path.endswith('.c'):
        return
    for m in DEF.finditer(text):
        name = m.group(1)
        before = text[:m.start()].rstrip('\n').splitlines()
        # the comment block right above the definition
        block = []
        i = len(before) - 1
        if i >= 0 and before[i].strip().endswith('*/'):
            while i >= 0:
                block.append(before[i])
                if before[i].lstrip().startswith('/*'):
                    break
                i -= 1
        block = '\n'.join(reversed(block))
        if not (block.lstrip().startswith('/**') and re.search(r'\b%s\(\) - \S' % re.escape(name), block)):
            line = text[:m.start()].count('\n') + 1
            errors.append('%s:%d: %s() has no kernel-doc block ("/**" + "%s() - what")'
                          % (rel, line, name, name))


def main():
    errors = []
    for d in DIRS:
        for root, dirs, files in os.walk(os.path.join(TOP, d)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    check_file(os.path.join(root, f), errors)
    for e in errors:
        print('check_docs_c: ' + e)
    if not errors:
        print('check_docs_c: every src file has its SPDX and purpose lines, every non-static '
              'function its kernel-doc block')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
