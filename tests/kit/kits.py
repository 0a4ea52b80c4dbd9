# SPDX-License-Identifier: MIT
"""Guest kits: build them (guest/fetch.sh), find which UML kernels boot on this host, pick the default.

UML <= 6.12 saves its processes' FPU state with PTRACE_SETREGSET and a fixed-size XSAVE buffer
(sizeof(struct _xstate), 832 bytes); on a CPU whose XSAVE area is larger (AMX tile data) the
host refuses it and the guest's init dies (fatal_sigsegv in put_fp_registers). Which kernels
boot is therefore a fact of the host's CPU, measured here by booting each kit's UML with its
init (no NIC) and cached per (linux.uml, CPU, host kernel) under the download cache.

    kit = default_uml(build)          # the newest UML that boots here, or KitError
    ok, why = boots(kit)              # (True, 'Linux 7.2.0') or (False, 'UML 6.1 cannot run ...')
"""

import hashlib
import json
import os
import platform
import subprocess

from .guest import GuestError, UmlGuest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
FETCH = os.path.join(TOP, 'guest', 'fetch.sh')
# Candidates for "a Linux guest", newest first. trixie (6.12) is probed by `make doctor`, not by
# the tests: it would add a download without testing a driver the other two do not.
DEFAULT_SUITES = ('sid', 'bookworm')
ALL_SUITES = ('sid', 'trixie', 'bookworm')
UML_XSTATE_BYTES = 832      # sizeof(struct _xstate) in UML <= 6.12: FXSAVE 512 + header 64 + YMM 256


class KitError(Exception):
    """A kit cannot be built or booted; .skip is True when the reason is this host's, not a bug."""

    def __init__(self, msg, skip=False):
        super().__init__(msg)
        self.skip = skip


def cache_dir():
    """The download cache (guest/apt-suite.sh: vnetd_cache_dir)."""
    d = os.environ.get('VNETD_CACHE_DIR')
    if d:
        return d
    return os.path.join(os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'vnetd')


def kit_path(build, suite):
    return os.path.join(build, 'guest') if suite == 'bookworm' else os.path.join(build, 'guest', suite)


def build_kit(build, suite='bookworm', log=None):
    """Build (or reuse) the kit of a Debian suite; returns its directory. Raises KitError (skip=True
    when packages cannot be downloaded). log(line) receives fetch.sh's cache lines."""
    argv = [FETCH, build] + ([] if suite == 'bookworm' else ['--suite', suite])
    r = subprocess.run(argv, capture_output=True, text=True)
    lines = (r.stdout + r.stderr).strip().splitlines()
    if log:
        for line in lines:
            if line.startswith('cache:') or 'ERROR' in line:
                log(line)
    if r.returncode == 77:
        raise KitError('%s guest packages cannot be downloaded here: %s'
                       % (suite, ' / '.join(l for l in lines if l.startswith('cache:')) or
                          (lines or ['?'])[-1]), skip=True)
    if r.returncode != 0:
        raise KitError('guest/fetch.sh --suite %s failed:\n%s' % (suite, '\n'.join(lines[-30:])))
    return kit_path(build, suite)


def manifest(kit):
    """The kit's MANIFEST: (title line, [(package, version, sha256)])."""
    title, rows = '', []
    with open(os.path.join(kit, 'MANIFEST')) as f:
        for line in f:
            if line.startswith('#'):
                title = line.lstrip('# ').strip()
            elif line.strip():
                rows.append(tuple(line.split()[:3]))
    return title, rows


def describe(kit):
    """One line naming the kit's suite, its UML and QEMU kernel versions (from MANIFEST)."""
    title, rows = manifest(kit)
    kern = [r for r in rows if r[0].startswith(('linux-image-', 'linux-binary-'))]
    return '%s; QEMU kernel %s' % (title, ' '.join('%s %s' % k[:2] for k in kern) or '?')


def xsave_bytes(build=None):
    """The host's XSAVE area size for the enabled features (build/xsave-size), or None."""
    exe = os.path.join(build or os.environ.get('VNETD_BUILD', os.path.join(TOP, 'build')),
                       'xsave-size')
    try:
        return int(subprocess.run([exe], capture_output=True, text=True, timeout=10).stdout.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def _cpu_key():
    model, flags = '?', ''
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name') and model == '?':
                    model = line.split(':', 1)[1].strip()
                elif line.startswith('flags') and not flags:
                    flags = line.split(':', 1)[1].strip()
    except OSError:
        pass
    return model, flags


def cpu_summary():
    """'MODEL (amx_tile: yes|no)' for logs and notes."""
    model, flags = _cpu_key()
    return '%s (amx_tile: %s)' % (model, 'yes' if 'amx_tile' in flags.split() else 'no')


def _probe_file(kit):
    h = hashlib.sha256()
    with open(os.path.join(kit, 'linux.uml'), 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    with open(os.path.join(kit, 'uml-initrd.cpio.gz'), 'rb') as f:
        h.update(hashlib.sha256(f.read()).digest())
    model, flags = _cpu_key()
    h.update(('%s|%s|%s' % (model, flags, platform.release())).encode())
    return os.path.join(cache_dir(), 'probes', h.hexdigest()[:32] + '.json')


def _uml_version(kit):
    title, _ = manifest(kit)
    return title.split('UML ', 1)[1].split('um')[0] if 'UML ' in title else '?'


def _probe(kit, build):
    """Boot the kit's UML (no NIC) to its init's prompt and back: (boots, uname or reason,
    cacheable). A failure is cacheable only when it is the known CPU incompatibility."""
    g = UmlGuest(kit)
    try:
        with g:
            rc, out = g.run('uname -r', timeout=30)
            if rc == 0:
                return True, 'Linux ' + out.strip(), True
            return False, 'uname -r failed in the guest: %r' % out, False
    except GuestError as e:
        text = str(e)
        if 'put_fp_registers' in text or ('fatal_sigsegv' in text and 'Attempted to kill init' in text):
            xs = xsave_bytes(build)
            return False, ('UML %s cannot run on this CPU (XSAVE area %s bytes > %d, the fixed '
                           'buffer of UML <= 6.12): init died with fatal_sigsegv in '
                           'put_fp_registers' % (_uml_version(kit), xs if xs else '?',
                                                 UML_XSTATE_BYTES)), True
        tail = text.strip().splitlines()[-6:]
        return False, 'UML %s did not boot: %s' % (_uml_version(kit), ' | '.join(tail)), False


def boots(kit, build=None):
    """Whether the kit's UML boots on this host: (True, 'Linux X') or (False, reason); cached."""
    path = _probe_file(kit)
    try:
        with open(path) as f:
            d = json.load(f)
        return d['boots'], d['what']
    except (OSError, ValueError, KeyError):
        pass
    ok, what, cacheable = _probe(kit, build)
    if cacheable:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + '.tmp', 'w') as f:
            json.dump({'boots': ok, 'what': what, 'kit': describe(kit), 'cpu': cpu_summary(),
                       'host_kernel': platform.release()}, f)
        os.replace(path + '.tmp', path)
    return ok, what


def uml_kit(build, suite=None, log=None):
    """A kit whose UML boots here: suite None = the newest of DEFAULT_SUITES that boots. Raises
    KitError (skip=True: the named kernel cannot run on this CPU, or nothing can be downloaded)."""
    suites = DEFAULT_SUITES if suite is None else (suite,)
    why = []
    for s in suites:
        try:
            kit = build_kit(build, s, log)
        except KitError as e:
            if not e.skip:
                raise
            why.append(str(e))
            continue
        ok, what = boots(kit, build)
        if log:
            log('guest: %s: %s -> %s' % (s, describe(kit), what if ok else 'does not boot'))
        if ok:
            return kit
        why.append('%s: %s' % (s, what))
    if suite is not None:
        raise KitError(why[0], skip='cannot run on this CPU' in why[0] or 'cannot be downloaded' in why[0])
    # No UML at all: a test that needs "a Linux guest" cannot be proven here; that is a failure
    # unless every reason is the host's (CPU, downloads).
    raise KitError('no UML kernel boots on this host: ' + '; '.join(why),
                   skip=all('cannot run on this CPU' in w or 'cannot be downloaded' in w for w in why))
