# SPDX-License-Identifier: MIT
"""Run-time ports with live UML guests: vnetctl port-add of a tap port, a guest pings over it;
port-del while the guest runs (frontend dropped, tap gone, vnetd fine) and the same spec added
again serves a new guest; a --config reload on SIGHUP adds and removes only what changed (a
guest on an unchanged port stays connected), and a broken config file changes nothing. All
under the default sandbox."""

import json
import os
import signal
import time

from tests.kit.harness import Netns, UmlGuest, Vnetd, check, guest_addr, host_addr, uml_start

MAC = '52:54:00:77:01:02'
HOST_IP, GUEST_IP = '10.77.1.1', '10.77.1.2'
TAP = 'vrt0'


def write_config(path, ports):
    tmp = path + '.new'
    with open(tmp, 'w') as f:
        json.dump({'ports': ports}, f)
    os.rename(tmp, path)  # what an editor or a config manager does


def wait_for(cond, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def tap_exists(ns):
    return ns.run(['ip', 'link', 'show', TAP], check=False).returncode == 0


def guest_ping(kit, wd, sock, tag):
    """Boot a guest on sock, ping the host over the tap, power it off."""
    with UmlGuest(kit, sock, log_path=os.path.join(wd, 'uml-%s.log' % tag)) as g:
        guest_addr(g, GUEST_IP)
        rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
        check(rc == 0, '%s: guest pings host over the run-time tap port' % tag)


def main():
    kit, wd = uml_start('runtime-ports')
    cfg = os.path.join(wd, 'vnetd.json')
    sock = {n: os.path.join(wd, '%s.sock' % n) for n in ('a', 'b', 'c', 'd', 'e')}
    write_config(cfg, ['socket=%s,switch' % sock['a'],
                       {'socket': sock['e'], 'switch': True, 'mac': '52:54:00:77:01:0e'}])

    with Netns('vnetd-e2e-rtports') as ns, \
            Vnetd(ns, ['socket=%s,switch' % sock['b']], wd, extra=['--config', cfg]) as vd:
        ports = vd.port_info()
        check(sorted(p['socket'] for p in ports.values()) == sorted([sock['a'], sock['b'],
                                                                     sock['e']]),
              'the command-line port and both --config ports exist')

        # port-add: SPEC exactly as --port takes it.
        r = vd.ctl('port-add', 'socket=%s,tap=%s,mac=%s' % (sock['c'], TAP, MAC))
        name = r.stdout.strip()
        check(name in vd.port_info(), 'port-add created %s' % name)
        check(tap_exists(ns), 'its tap %s exists' % TAP)
        r = vd.ctl('port-add', 'socket=%s,switch' % sock['c'], check=False)
        check(r.returncode == 1 and 'socket' in r.stderr,
              'a second port on the same socket is refused (%s)' % r.stderr.strip())
        r = vd.ctl('port-add', 'socket=%s,switch,bogus=1' % sock['d'], check=False)
        check(r.returncode == 1 and 'bogus' in r.stderr,
              'a bad spec is refused with the parser\'s message (%s)' % r.stderr.strip())
        host_addr(ns, TAP, HOST_IP)

        with UmlGuest(kit, sock['c'], log_path=os.path.join(wd, 'uml-1.log')) as g:
            guest_addr(g, GUEST_IP)
            rc, _ = g.run('ping -c 3 -W 5 %s' % HOST_IP, timeout=60)
            check(rc == 0, 'guest pings host over the run-time tap port')
            check(vd.port_info()[name]['connected'], '%s shows the guest connected' % name)

            # A guest on a --config port that the reload below keeps.
            with UmlGuest(kit, sock['e'], log_path=os.path.join(wd, 'uml-e.log')) as ge:
                e_name = [n for n, p in vd.port_info().items() if p['socket'] == sock['e']][0]
                check(wait_for(lambda: vd.port_info()[e_name]['connected'], 'connect'),
                      'a guest is connected to config port %s' % e_name)
                conns = vd.port_info()[e_name]['connections']

                # SIGHUP: a removed, d added, e unchanged (its guest must not notice).
                write_config(cfg, [{'socket': sock['e'], 'switch': True,
                                    'mac': '52:54:00:77:01:0e'},
                                   'socket=%s,switch' % sock['d']])
                vd.proc.send_signal(signal.SIGHUP)
                check(wait_for(lambda: sorted(p['socket'] for p in vd.port_info().values()) ==
                               sorted([sock['b'], sock['c'], sock['d'], sock['e']]), 'reload'),
                      'SIGHUP: config port a removed, d added; b (command line) and the '
                      'port-add port stay')
                info = vd.port_info()
                check(info[e_name]['connected'] and info[e_name]['connections'] == conns,
                      'the unchanged config port kept its guest (no reconnect)')
                check(not os.path.exists(sock['a']), 'the removed port\'s socket is gone')
                rc, _ = ge.run('ip link set eth0 up', timeout=30)
                check(rc == 0, 'the guest on the unchanged port still answers')

                # A config file that does not parse changes nothing.
                with open(cfg, 'w') as f:
                    f.write('{"ports": [ "socket=/nowhere,switch" ')
                vd.proc.send_signal(signal.SIGHUP)
                check(wait_for(lambda: 'nothing changed' in vd.log_tail(20000), 'log'),
                      'a broken config file is reported ...')
                check(len(vd.port_info()) == 4, '... and changes nothing')

            # port-del while the guest on it runs.
            vd.ctl('port-del', name)
            check(wait_for(lambda: name not in vd.port_info(), 'del'), 'port-del removed %s' % name)
            check(wait_for(lambda: not tap_exists(ns), 'tap'), 'its tap is released')
            check('%s: frontend disconnected' % name in vd.log_tail(20000),
                  'its frontend was disconnected')
            check(vd.alive(), 'vnetd still running')

        # The same spec again: the socket and the tap are free, a new guest works.
        r = vd.ctl('port-add', 'socket=%s,tap=%s,mac=%s' % (sock['c'], TAP, MAC))
        check(r.stdout.strip() in vd.port_info(), 'the same spec can be added again (%s)'
              % r.stdout.strip())
        host_addr(ns, TAP, HOST_IP)
        guest_ping(kit, wd, sock['c'], 're-added')
        check(vd.alive(), 'vnetd still running')


if __name__ == '__main__':
    main()
