#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make docs-check: README.md and docs/*.md name only results files and relative links that exist,
and results/README.md indexes every results file.

Checked, in README.md and docs/*.md:
  - every results/... path (also ../results/...) names a file that exists; a glob (`*`), a
    `{a,b}` list or a `<placeholder>` must match at least one file each;
  - every relative markdown link or image, [text](path) or [text](path#anchor), points to an
    existing file or directory (http(s):, mailto: and #anchor-only links are not checked).
And every file under results/ (git's list when this is a git tree, else the directory) appears
in results/README.md as `name`. Prints one line per problem; exit 1 if there is any."""

import fnmatch
import os
import re
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
RESULTS = os.path.join(TOP, 'results')
INDEX = os.path.join(RESULTS, 'README.md')

RESULT_REF = re.compile(r'(?<![\w/.-])(?:\.\./)?results/([A-Za-z0-9_.*{},<>/-]*)')
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
CODE_BLOCK = re.compile(r'^(```|~~~).*?^\1', re.M | re.S)


def docs():
    """README.md and docs/*.md, as paths relative to TOP."""
    out = ['README.md']
    d = os.path.join(TOP, 'docs')
    out += sorted('docs/' + n for n in os.listdir(d) if n.endswith('.md'))
    return out


def results_files():
    """Names of the results files (git's tracked list if there is one; README.md excluded)."""
    try:
        r = subprocess.run(['git', '-C', TOP, 'ls-files', '--', 'results'], capture_output=True,
                           text=True, timeout=20)
        names = [p.split('/', 1)[1] for p in r.stdout.split()] if r.returncode == 0 else None
    except OSError:
        names = None
    if not names:
        names = os.listdir(RESULTS)
    return sorted(n for n in names if n != 'README.md'
                  and os.path.isfile(os.path.join(RESULTS, n)))


def expand(pattern):
    """The patterns a results reference stands for: {a,b} lists expanded, <x> made a glob."""
    pattern = re.sub(r'<[^>]*>', '*', pattern)
    m = re.search(r'\{([^{}]*)\}', pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(','):
        out += expand(pattern[:m.start()] + alt + pattern[m.end():])
    return out


def check_results_refs(doc, text, present, problems):
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in RESULT_REF.finditer(line):
            ref = m.group(1).rstrip('.,;:')
            if not ref:
                continue                       # "results/" itself: the directory
            for pat in expand(ref):
                if any(c in pat for c in '*?['):
                    ok = any(fnmatch.fnmatchcase(n, pat) for n in present)
                else:
                    ok = os.path.exists(os.path.join(RESULTS, pat))
                if not ok:
                    problems.append('%s:%d: results/%s does not exist' % (doc, lineno, pat))


def check_links(doc, text, problems):
    base = os.path.dirname(os.path.join(TOP, doc))
    prose = CODE_BLOCK.sub(lambda m: '\n' * m.group(0).count('\n'), text)
    for lineno, line in enumerate(prose.splitlines(), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r'[a-z][a-z0-9+.-]*:', target, re.I) or target.startswith('#'):
                continue
            path = target.split('#', 1)[0]
            if path and not os.path.exists(os.path.normpath(os.path.join(base, path))):
                problems.append('%s:%d: link %s: no such file' % (doc, lineno, target))


def check_index(present, problems):
    try:
        with open(INDEX, encoding='utf-8') as f:
            index = f.read()
    except OSError:
        problems.append('results/README.md is missing (the index of results/)')
        return
    named = set(re.findall(r'`([^`]+)`', index))
    for n in present:
        if n not in named:
            problems.append('results/%s is not named in results/README.md' % n)


def main():
    problems = []
    present = results_files()
    for doc in docs():
        with open(os.path.join(TOP, doc), encoding='utf-8') as f:
            text = f.read()
        check_results_refs(doc, text, present, problems)
        check_links(doc, text, problems)
    check_index(present, problems)
    for p in problems:
        print('docs-check: ' + p)
    if problems:
        return 1
    print('docs-check: %d docs, %d results files: ok' % (len(docs()), len(present)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
