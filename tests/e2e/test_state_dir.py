"""--state-dir: a full-device frontend's own coalescing (set over the control queue, as a UML
guest's ethtool -C is) comes back after vnetd is SIGKILLed and restarted and the frontend sets
its rings up again without resending it; host coalescing likewise; a state file that is
garbage, too big or for another socket is ignored (logged) and vnetd starts anyway. Python
frontends (tests/e2e/vhost_user_client.py), no guest kernel."""

import os
import signal

from harness import NoNs, Vnetd, check, workdir
from vhost_user_client import VirtioNetFrontend

OK = 0


def start(wd, name, ports, state):
    vd = Vnetd(NoNs(), ports, os.path.join(wd, name), extra=['--state-dir', state])
    os.mkdir(vd.workdir)
    return vd.__enter__()


def kill9(vd):
    os.killpg(vd.proc.pid, signal.SIGKILL)
    vd.proc.wait()


def main():
    wd = workdir('state-dir')
    state = os.path.join(wd, 'state')
    os.mkdir(state)
    socks = [os.path.join(wd, 'p%d.sock' % i) for i in range(2)]
    ports = ['socket=%s,switch' % s for s in socks]

    vd = start(wd, 'v1', ports, state)
    try:
        f = VirtioNetFrontend(socks[0]).setup()
        check(f.coal_rx_set(24, 300) == OK and f.coal_tx_set(8, 100) == OK,
              'the frontend sets its coalescing over the control queue')
        vd.ctl('coalesce', 'p1', 'rx-usecs', '64', 'rx-frames', '16')
        g = VirtioNetFrontend(socks[1]).setup()  # p1's queues run: the host value applies
        vd.ctl('coalesce', 'p1', 'rx-usecs', '64', 'rx-frames', '16')
        st = vd.stats()
        check(st['p0'][0]['set_by'] == 'guest' and st['p1'][0]['set_by'] == 'host',
              'p0 coalescing set by the guest, p1 by the host')
        files = sorted(os.listdir(state))
        check(len(files) == 2 and all(n.endswith('.json') for n in files),
              'one state file per port (%s)' % ', '.join(files))
        kill9(vd)
        f.close()
        g.close()

        vd = start(wd, 'v2', ports, state)
        f = VirtioNetFrontend(socks[0]).setup()  # rings again, no control command
        g = VirtioNetFrontend(socks[1]).setup()
        st = vd.stats()
        q = st['p0']
        check(q[0]['max_packets'] == 24 and q[0]['max_usecs'] == 300 and
              q[0]['set_by'] == 'guest' and q[1]['max_packets'] == 8 and
              q[1]['max_usecs'] == 100 and q[1]['set_by'] == 'guest',
              'after SIGKILL and restart p0 has the guest\'s values back (rx %s/%s, tx %s/%s)'
              % (q[0]['max_packets'], q[0]['max_usecs'], q[1]['max_packets'],
                 q[1]['max_usecs']))
        q = st['p1']
        check(q[0]['max_packets'] == 16 and q[0]['max_usecs'] == 64 and q[0]['set_by'] == 'host',
              'and p1 the host\'s')
        f.close()
        g.close()
        vd.stop()

        # Hostile state files: vnetd starts, says why, and the port starts from reset.
        paths = sorted(os.path.join(state, n) for n in os.listdir(state))
        with open(paths[0], 'w') as fh:
            fh.write('{"version":1,"socket":"/somewhere/else","queues":[[1,1,"host"]]}')
        with open(paths[1], 'wb') as fh:
            fh.write(b'{' * 200000)
        vd = start(wd, 'v3', ports, state)
        log = vd.log_tail(20000)
        check(log.count('state file ignored') == 2, 'both bad state files are ignored (logged)')
        f = VirtioNetFrontend(socks[0]).setup()
        check(vd.stats()['p0'][0]['set_by'] == 'none', 'and the port starts from reset values')
        f.close()
        check(vd.alive(), 'vnetd still running')
    finally:
        vd.stop()


if __name__ == '__main__':
    main()
