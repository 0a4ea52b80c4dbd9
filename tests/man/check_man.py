#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every option and port key of `vnetd --help`, and every command, option and key of
`vnetctl --help`, appears (in bold, as scdoc writes *word*) in docs/man/vnetd.8.scd and
docs/man/vnetctl.8.scd, so the man pages cannot drift from the binaries' help.
Usage: check_man.py VNETD VNETCTL VNETD_SCD VNETCTL_SCD"""

import re
import subprocess
import sys


def help_text(exe):
    r = subprocess.run([exe, '--help'], capture_output=True, text=True, timeout=10)
    if r.returncode != 0 or not r.stdout:
        sys.exit('FAIL: %s --help exited %d' % (exe, r.returncode))
    return r.stdout


def section(text, title):
    """Lines of `text` after the line starting with `title` up to the next blank line."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith(title):
            inside = True
            continue
        if inside and not line.strip():
            break
        if inside:
            out.append(line)
    if not out:
        sys.exit('FAIL: no "%s" section in the help text' % title)
    return out


def vnetd_words(text):
    words = set()
    for line in section(text, 'Options:'):
        words.update(re.findall(r'(?<![\w-])(--?[a-z][a-z-]*)', line.split('  ', 2)[1]
                                if line.startswith('  -') else ''))
    for line in section(text, 'Port keys'):
        m = re.match(r'  ([a-z][a-z-]*)(=?)', line)
        if m:
            words.add(m.group(1) + m.group(2))
    return words


def vnetctl_words(text):
    words = set(re.findall(r'--[a-z][a-z-]*', text.splitlines()[0]))  # the Usage: line
    for line in section(text, 'Commands:'):
        m = re.match(r'  ([a-z][a-z-]*)(.*)', line)
        if not m:
            continue
        words.add(m.group(1))
        rest = m.group(2).split('  ')[0]  # the synopsis part, before the description
        words.update(re.findall(r'--[a-z][a-z-]*', rest))
        words.update(re.findall(r'(?<![\w-])([a-z]+-[a-z]+)(?= N)', rest))
    words.update(re.findall(r'\$([A-Z_]+)', text))
    return words


def check(words, scd_path, what):
    with open(scd_path) as f:
        scd = f.read()
    missing = []
    for w in sorted(words):
        if w.isupper():
            ok = '*' + w + '*' in scd
        else:
            # *--port*, *socket=*_PATH_, *switch*, *-v*: bold, as the word or the key with '='
            ok = re.search(r'\*' + re.escape(w) + r'[*=]', scd) is not None
        print(('ok   ' if ok else 'FAIL ') + '%s: %s' % (what, w))
        if not ok:
            missing.append(w)
    return missing


def main():
    vnetd, vnetctl, vnetd_scd, vnetctl_scd = sys.argv[1:5]
    dw = vnetd_words(help_text(vnetd))
    cw = vnetctl_words(help_text(vnetctl))
    if len(dw) < 25 or len(cw) < 10:
        sys.exit('FAIL: the help parser found too few words (%d, %d): %s %s' % (len(dw), len(cw),
                 sorted(dw), sorted(cw)))
    missing = check(dw, vnetd_scd, 'vnetd(8)') + check(cw, vnetctl_scd, 'vnetctl(8)')
    if missing:
        sys.exit('FAIL: not in the man pages: ' + ' '.join(missing))
    print('PASS: %d vnetd and %d vnetctl words documented' % (len(dw), len(cw)))


if __name__ == '__main__':
    main()
