# SPDX-License-Identifier: MIT
"""A small vhost-user frontend in pure Python (stdlib only), good or deliberately hostile.

Three layers, each usable on its own:

  GuestMemory        a memfd mapped here and shared with the backend by SET_MEM_TABLE; hands out
                     guest-physical addresses (descriptor buffers) and frontend user addresses
                     (ring addresses), which differ on purpose.
  SplitRing          a split virtqueue laid out in GuestMemory: descriptor table, avail ring,
                     used ring, plus its kick and call eventfds. add_chain() builds well-formed
                     chains; set_desc()/put_avail()/set_avail_idx() write anything at all.
                     Its packed twin, with the same API, is vu_packed.PackedRing: the frontend
                     uses it when VIRTIO_F_RING_PACKED is among the features it wants.
  VhostUserClient    the socket: send any message (any request, flags, size, fds), read replies,
                     REPLY_ACK handling, one method per request.
  VirtioNetFrontend  a well-behaved VMM + virtio-net driver built from the three: full device
                     setup, control commands with their ack byte, TX, RX.

Wire format (native-endian, QEMU docs/interop/vhost-user.rst; see src/vhost/vhost_user_msg.h):
a 12-byte header (u32 request, u32 flags, u32 size) then `size` payload bytes; fds travel as
SCM_RIGHTS with the header.
"""

import array
import mmap
import os
import select
import socket
import struct
import time

from . import vu_packed
from .vring import (DESC, VRING_DESC_F_INDIRECT, VRING_DESC_F_NEXT,  # noqa: F401 (re-exported)
                    VRING_DESC_F_WRITE, VhostUserError)

# ---- requests (src/vhost/vhost_user_msg.h) ----
GET_FEATURES = 1
SET_FEATURES = 2
SET_OWNER = 3
RESET_OWNER = 4
SET_MEM_TABLE = 5
SET_LOG_BASE = 6
SET_LOG_FD = 7
SET_VRING_NUM = 8
SET_VRING_ADDR = 9
SET_VRING_BASE = 10
GET_VRING_BASE = 11
SET_VRING_KICK = 12
SET_VRING_CALL = 13
SET_VRING_ERR = 14
GET_PROTOCOL_FEATURES = 15
SET_PROTOCOL_FEATURES = 16
GET_QUEUE_NUM = 17
SET_VRING_ENABLE = 18
SET_BACKEND_REQ_FD = 21
GET_CONFIG = 24
SET_CONFIG = 25
RESET_DEVICE = 34
GET_MAX_MEM_SLOTS = 36
ADD_MEM_REG = 37
REM_MEM_REG = 38
SEND_RARP = 19
SET_DEVICE_STATE_FD = 42
CHECK_DEVICE_STATE = 43

# Requests the backend answers with a message of their own (never a REPLY_ACK).
OWN_REPLY = {GET_FEATURES, GET_PROTOCOL_FEATURES, GET_VRING_BASE, GET_QUEUE_NUM, GET_CONFIG,
             SET_LOG_BASE, SET_DEVICE_STATE_FD, CHECK_DEVICE_STATE, GET_MAX_MEM_SLOTS}

# ---- header flags ----
VERSION = 1
FLAG_REPLY = 1 << 2
FLAG_NEED_REPLY = 1 << 3
HDR = struct.Struct('=III')
VRING_NOFD = 1 << 8

# ---- protocol features ----
PROTOCOL_F_MQ = 0
PROTOCOL_F_REPLY_ACK = 3
PROTOCOL_F_BACKEND_REQ = 5
PROTOCOL_F_CONFIG = 9
PROTOCOL_F_LOG_SHMFD = 1
PROTOCOL_F_RARP = 2
PROTOCOL_F_CONFIGURE_MEM_SLOTS = 15
PROTOCOL_F_DEVICE_STATE = 19
VHOST_F_LOG_ALL = 26
VRING_F_LOG = 1

# ---- virtio feature bits ----
VIRTIO_NET_F_MAC = 5
VIRTIO_NET_F_MRG_RXBUF = 15
VIRTIO_NET_F_STATUS = 16
VIRTIO_NET_F_CTRL_VQ = 17
VIRTIO_NET_F_CTRL_RX = 18
VIRTIO_NET_F_VQ_NOTF_COAL = 52
VIRTIO_NET_F_NOTF_COAL = 53
VIRTIO_RING_F_INDIRECT_DESC = 28
VIRTIO_RING_F_EVENT_IDX = 29
VHOST_USER_F_PROTOCOL_FEATURES = 30
VIRTIO_F_VERSION_1 = 32
VIRTIO_F_RING_PACKED = 34
VIRTIO_F_IN_ORDER = 35

DEFAULT_FEATURES = ((1 << VIRTIO_F_VERSION_1) | (1 << VIRTIO_NET_F_CTRL_VQ) |
                    (1 << VIRTIO_NET_F_NOTF_COAL) | (1 << VIRTIO_NET_F_MAC) |
                    (1 << VIRTIO_NET_F_STATUS))

# ---- rings (tests/kit/vring.py, shared with the packed driver vu_packed) ----

# ---- virtio-net control queue ----
VIRTIO_NET_OK = 0
VIRTIO_NET_ERR = 1
CTRL_RX = 0
CTRL_MAC = 1
CTRL_NOTF_COAL = 6
NOTF_COAL_TX_SET = 0
NOTF_COAL_RX_SET = 1
NOTF_COAL_VQ_SET = 2
NET_HDR_LEN = 12  # virtio_net_hdr_v1 (VERSION_1)

# Queue indexes without MQ.
RX_Q = 0
TX_Q = 1
CTRL_Q = 2


class Disconnected(VhostUserError):
    """The backend closed the connection (or reset it)."""


def _align(v, a):
    return (v + a - 1) & ~(a - 1)


# =============================================================================================
class GuestMemory:
    """Guest RAM: one memfd, mapped here, offered to the backend as one SET_MEM_TABLE region."""

    def __init__(self, size=1 << 20, gpa=0x40000000, uva=0x7f5500000000, name='vnetd-test-guest'):
        self.size = size
        self.gpa_base = gpa
        self.uva_base = uva
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC)
        os.ftruncate(self.fd, size)
        self.map = mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._next = 0

    def alloc(self, size, align=16):
        """Reserve size bytes; returns the guest-physical address."""
        off = _align(self._next, align)
        if off + size > self.size:
            raise VhostUserError('guest memory exhausted')
        self._next = off + size
        return self.gpa_base + off

    def uva(self, gpa):
        """The frontend user address of a guest-physical address (ring addresses use these)."""
        return gpa - self.gpa_base + self.uva_base

    def _off(self, gpa, n):
        off = gpa - self.gpa_base
        if off < 0 or off + n > self.size:
            raise VhostUserError('address 0x%x+%d outside guest memory' % (gpa, n))
        return off

    def write(self, gpa, data):
        off = self._off(gpa, len(data))
        self.map[off:off + len(data)] = data

    def read(self, gpa, n):
        off = self._off(gpa, n)
        return bytes(self.map[off:off + n])

    def u16(self, gpa):
        return struct.unpack('<H', self.read(gpa, 2))[0]

    def put_u16(self, gpa, v):
        self.write(gpa, struct.pack('<H', v & 0xffff))

    def region(self):
        """(guest_phys_addr, memory_size, userspace_addr, mmap_offset) for SET_MEM_TABLE."""
        return (self.gpa_base, self.size, self.uva_base, 0)

    def close(self):
        if self.map is not None:
            self.map.close()
            self.map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# =============================================================================================
class SplitRing:
    """One split virtqueue in guest memory, with its kick and call eventfds."""

    base = 0  # SET_VRING_BASE: the next avail index

    def __init__(self, mem, index, num=64):
        self.mem = mem
        self.index = index
        self.num = num
        self.desc = mem.alloc(16 * num, 16)
        self.avail = mem.alloc(6 + 2 * num, 2)
        self.used = mem.alloc(6 + 8 * num, 4)
        mem.write(self.desc, bytes(16 * num))
        mem.write(self.avail, bytes(6 + 2 * num))
        mem.write(self.used, bytes(6 + 8 * num))
        self.avail_idx = 0     # next avail ring slot we publish
        self.last_used = 0     # next used entry we consume
        self.free = list(range(num))
        self.chains = {}       # head -> descriptor indexes (to free on completion)
        self.kick_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.call_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    # -- raw access (anything goes) --
    def set_desc(self, i, addr, length, flags=0, nxt=0):
        """Write descriptor i as given: no checks at all."""
        self.mem.write(self.desc + 16 * i, DESC.pack(addr & (2**64 - 1), length & 0xffffffff,
                                                     flags & 0xffff, nxt & 0xffff))

    def put_avail(self, head):
        """Put `head` (any value) in the next avail slot and publish the index."""
        self.mem.put_u16(self.avail + 4 + 2 * (self.avail_idx % self.num), head)
        self.avail_idx = (self.avail_idx + 1) & 0xffff
        self.mem.put_u16(self.avail + 2, self.avail_idx)  # x86 stores stay ordered

    def set_avail_idx(self, v):
        self.avail_idx = v & 0xffff
        self.mem.put_u16(self.avail + 2, self.avail_idx)

    def set_avail_flags(self, flags):
        self.mem.put_u16(self.avail, flags)

    # -- well-formed chains --
    def add_chain(self, bufs):
        """bufs: [(gpa, len, writable)], readable ones first. Returns the head; not published."""
        if len(bufs) > len(self.free):
            raise VhostUserError('ring %d full' % self.index)
        idxs = [self.free.pop(0) for _ in bufs]
        for k, (addr, length, writable) in enumerate(bufs):
            last = k == len(bufs) - 1
            flags = (0 if last else VRING_DESC_F_NEXT) | (VRING_DESC_F_WRITE if writable else 0)
            self.set_desc(idxs[k], addr, length, flags, 0 if last else idxs[k + 1])
        self.chains[idxs[0]] = idxs
        return idxs[0]

    def fill_in_order(self, bufs):
        """Descriptor i = bufs[i] = (gpa, len, flags: 0, WRITE or INDIRECT), avail slot i =
        head i, for every i; nothing published. For a driver loop that re-posts heads in the
        order the device uses them (tests/kit/ringspin.c): avail.idx = used.idx + num keeps
        the ring full."""
        if len(bufs) != self.num:
            raise VhostUserError('fill_in_order needs %d buffers, got %d' % (self.num, len(bufs)))
        for i, (addr, length, flags) in enumerate(bufs):
            self.set_desc(i, addr, length, flags)
            self.mem.put_u16(self.avail + 4 + 2 * i, i)
        self.free, self.chains = [], {}  # the ring belongs to that loop from now on

    def kick(self):
        os.eventfd_write(self.kick_fd, 1)

    def used_idx(self):
        return self.mem.u16(self.used + 2)

    def get_used(self, timeout=2.0):
        """Next used element (id, len), or None after timeout. Frees the chain's descriptors."""
        deadline = time.monotonic() + timeout
        while self.used_idx() == self.last_used:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        e = self.used + 4 + 8 * (self.last_used % self.num)
        uid, ulen = struct.unpack('<II', self.mem.read(e, 8))
        self.last_used = (self.last_used + 1) & 0xffff
        self.free.extend(self.chains.pop(uid, []))
        return uid, ulen

    def close(self):
        for fd in (self.kick_fd, self.call_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.kick_fd = self.call_fd = -1


# =============================================================================================
class VhostUserClient:
    """The frontend end of a vhost-user socket."""

    def __init__(self, path, timeout=3.0):
        self.path = path
        self.timeout = timeout
        self.reply_ack = False   # REPLY_ACK negotiated: every request asks for an ack
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.settimeout(timeout)
        self.sock.connect(path)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def fileno(self):
        return self.sock.fileno()

    # -- raw I/O --
    def send_raw(self, data, fds=()):
        """Send bytes as they are, with fds (SCM_RIGHTS) on the first byte."""
        anc = []
        if fds:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', list(fds)))]
        try:
            self.sock.sendmsg([data], anc)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Disconnected(str(e))

    def send(self, request, payload=b'', fds=(), flags=VERSION, size=None):
        """One message; size defaults to len(payload) (a lie is allowed)."""
        size = len(payload) if size is None else size
        self.send_raw(HDR.pack(request, flags, size) + payload, fds)

    def _recv_exact(self, n, timeout):
        buf = b''
        self.sock.settimeout(timeout)
        try:
            while len(buf) < n:
                chunk = self.sock.recv(n - len(buf))
                if not chunk:
                    raise Disconnected('backend closed the connection')
                buf += chunk
        except ConnectionResetError as e:
            raise Disconnected(str(e))
        except socket.timeout:
            raise VhostUserError('no reply within %.1f s' % timeout)
        finally:
            self.sock.settimeout(self.timeout)
        return buf

    def recv_msg(self, timeout=None):
        """(request, flags, payload) of the next message from the backend."""
        t = self.timeout if timeout is None else timeout
        req, flags, size = HDR.unpack(self._recv_exact(HDR.size, t))
        return req, flags, self._recv_exact(size, t) if size else b''

    def wait_closed(self, timeout=3.0):
        """True once the backend has closed the connection (EOF or reset) within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return False
            try:
                data = self.sock.recv(4096)
            except ConnectionResetError:
                return True
            if not data:
                return True

    # -- requests --
    def request(self, request, payload=b'', fds=(), flags=VERSION, want_ack=None):
        """Send a request and collect its answer.

        Requests with their own reply return that reply's payload. Others, when REPLY_ACK is
        negotiated (or want_ack is True), return the ack's u64 (0 = success); else None.
        """
        if want_ack is None:
            want_ack = self.reply_ack
        own = request in OWN_REPLY
        if want_ack and not own:
            flags |= FLAG_NEED_REPLY
        self.send(request, payload, fds, flags)
        if not own and not want_ack:
            return None
        rreq, rflags, rpayload = self.recv_msg()
        if rreq != request or not (rflags & FLAG_REPLY):
            raise VhostUserError('reply to %d has request %d flags 0x%x' % (request, rreq, rflags))
        if own:
            return rpayload
        if len(rpayload) != 8:
            raise VhostUserError('ack of %d bytes' % len(rpayload))
        return struct.unpack('=Q', rpayload)[0]

    def _u64_reply(self, request):
        p = self.request(request)
        if len(p) != 8:
            raise VhostUserError('reply of %d bytes to %d' % (len(p), request))
        return struct.unpack('=Q', p)[0]

    def get_features(self):
        return self._u64_reply(GET_FEATURES)

    def set_features(self, f):
        return self.request(SET_FEATURES, struct.pack('=Q', f))

    def get_protocol_features(self):
        return self._u64_reply(GET_PROTOCOL_FEATURES)

    def set_protocol_features(self, f):
        """Also turns on REPLY_ACK handling here if f has it (vnetd acks this very request)."""
        self.reply_ack = bool(f & (1 << PROTOCOL_F_REPLY_ACK))
        return self.request(SET_PROTOCOL_FEATURES, struct.pack('=Q', f))

    def set_owner(self):
        return self.request(SET_OWNER)

    def get_queue_num(self):
        return self._u64_reply(GET_QUEUE_NUM)

    @staticmethod
    def mem_table_payload(regions, nregions=None):
        """regions: [(gpa, size, uva, mmap_offset)]; nregions may lie."""
        n = len(regions) if nregions is None else nregions
        return struct.pack('=II', n, 0) + b''.join(struct.pack('=QQQQ', *r) for r in regions)

    def set_mem_table(self, regions, fds, nregions=None):
        return self.request(SET_MEM_TABLE, self.mem_table_payload(regions, nregions), fds)

    @staticmethod
    def mem_reg_payload(region):
        """region: (gpa, size, uva, mmap_offset): ADD/REM_MEM_REG's padding and one region."""
        return struct.pack('=QQQQQ', 0, *region)

    def get_max_mem_slots(self):
        return self._u64_reply(GET_MAX_MEM_SLOTS)

    def add_mem_reg(self, region, fd):
        """ADD_MEM_REG (CONFIGURE_MEM_SLOTS negotiated): one more region, its memfd."""
        return self.request(ADD_MEM_REG, self.mem_reg_payload(region), [fd])

    def rem_mem_reg(self, region, fd=None):
        """REM_MEM_REG: matched by gpa, size and uva; an fd (older QEMUs send one) is closed."""
        return self.request(REM_MEM_REG, self.mem_reg_payload(region), [fd] if fd is not None else [])

    def set_vring_num(self, idx, num):
        return self.request(SET_VRING_NUM, struct.pack('=II', idx, num))

    def set_vring_base(self, idx, base):
        return self.request(SET_VRING_BASE, struct.pack('=II', idx, base))

    def get_vring_base(self, idx):
        return struct.unpack('=II', self.request(GET_VRING_BASE, struct.pack('=II', idx, 0)))[1]

    def set_vring_addr(self, idx, desc, used, avail, flags=0, log=0):
        return self.request(SET_VRING_ADDR, struct.pack('=IIQQQQ', idx, flags, desc, used, avail, log))

    def _vring_fd(self, request, idx, fd):
        if fd is None or fd < 0:
            return self.request(request, struct.pack('=Q', idx | VRING_NOFD))
        return self.request(request, struct.pack('=Q', idx), [fd])

    def set_vring_kick(self, idx, fd):
        return self._vring_fd(SET_VRING_KICK, idx, fd)

    def set_vring_call(self, idx, fd):
        return self._vring_fd(SET_VRING_CALL, idx, fd)

    def set_vring_enable(self, idx, on=True):
        return self.request(SET_VRING_ENABLE, struct.pack('=II', idx, 1 if on else 0))

    def get_config(self, offset, size):
        p = self.request(GET_CONFIG, struct.pack('=III', offset, size, 0) + bytes(size))
        return p[12:]


# =============================================================================================
def ok(v, what):
    """A REPLY_ACK of 0 (or no ack asked) is success; anything else raises."""
    if v not in (0, None):
        raise VhostUserError('%s refused (ack %r)' % (what, v))


class VirtioNetFrontend:
    """A well-behaved VMM + virtio-net driver for one vnetd port (no MQ: rx0, tx0, ctrl)."""

    def __init__(self, path, features=DEFAULT_FEATURES, protocol=(1 << PROTOCOL_F_REPLY_ACK),
                 queue_size=64, mem_size=1 << 20, timeout=3.0):
        self.want_features = features
        self.want_protocol = protocol
        self.queue_size = queue_size
        self.vu = VhostUserClient(path, timeout)
        self.mem = GuestMemory(mem_size)
        self.rings = {}
        self.features = None
        self.protocol = 0
        self.ctrl_q = CTRL_Q        # 2 * pairs with MQ

    # -- setup, step by step (hostile tests stop anywhere in between) --
    def negotiate(self):
        vu = self.vu
        offered = vu.get_features()
        if not offered & (1 << VHOST_USER_F_PROTOCOL_FEATURES):
            raise VhostUserError('backend does not offer PROTOCOL_FEATURES')
        missing = self.want_features & ~offered
        if missing:
            raise VhostUserError('backend lacks features 0x%x' % missing)
        self.features = self.want_features
        pf = vu.get_protocol_features()
        self.protocol = self.want_protocol & pf
        ok(vu.set_protocol_features(self.protocol), 'SET_PROTOCOL_FEATURES')
        ok(vu.set_owner(), 'SET_OWNER')
        ok(vu.set_features(self.features | (1 << VHOST_USER_F_PROTOCOL_FEATURES)), 'SET_FEATURES')

    def set_mem(self):
        """As QEMU does: ADD_MEM_REG once CONFIGURE_MEM_SLOTS is negotiated, else SET_MEM_TABLE."""
        if self.protocol & (1 << PROTOCOL_F_CONFIGURE_MEM_SLOTS):
            ok(self.vu.add_mem_reg(self.mem.region(), self.mem.fd), 'ADD_MEM_REG')
        else:
            ok(self.vu.set_mem_table([self.mem.region()], [self.mem.fd]), 'SET_MEM_TABLE')

    def make_ring(self, idx, num=None):
        """A split ring, or a packed one (vu_packed.PackedRing) if RING_PACKED is wanted."""
        num = num or self.queue_size
        if self.want_features & (1 << VIRTIO_F_RING_PACKED):
            r = vu_packed.PackedRing(self.mem, idx, num,
                                     bool(self.want_features & (1 << VIRTIO_F_IN_ORDER)))
        else:
            r = SplitRing(self.mem, idx, num)
        self.rings[idx] = r
        return r

    def setup_ring(self, ring, enable=True, desc=None, used=None, avail=None):
        """SET_VRING_NUM/BASE/ADDR/CALL/KICK (+ENABLE); ring addresses may be overridden."""
        vu, m = self.vu, self.mem
        i = ring.index
        ok(vu.set_vring_num(i, ring.num), 'SET_VRING_NUM')
        ok(vu.set_vring_base(i, ring.base), 'SET_VRING_BASE')
        ok(vu.set_vring_addr(i, m.uva(ring.desc) if desc is None else desc,
                             m.uva(ring.used) if used is None else used,
                             m.uva(ring.avail) if avail is None else avail), 'SET_VRING_ADDR')
        ok(vu.set_vring_call(i, ring.call_fd), 'SET_VRING_CALL')
        ok(vu.set_vring_kick(i, ring.kick_fd), 'SET_VRING_KICK')
        if enable:
            ok(vu.set_vring_enable(i, True), 'SET_VRING_ENABLE')

    def setup(self, queues=(RX_Q, TX_Q, CTRL_Q)):
        """The whole device, as a VMM does it at driver start. Returns self."""
        self.negotiate()
        self.set_mem()
        for i in queues:
            self.setup_ring(self.make_ring(i))
        return self

    # -- control queue --
    def ctrl(self, cls, cmd, payload=b'', timeout=2.0):
        """Send one control command (header, payload, ack: three descriptors); returns the ack
        byte, or None if the device did not complete the command within timeout."""
        ring = self.rings[self.ctrl_q]
        hdr = self.mem.alloc(2)
        self.mem.write(hdr, bytes([cls, cmd]))
        bufs = [(hdr, 2, False)]
        if payload:
            data = self.mem.alloc(len(payload))
            self.mem.write(data, payload)
            bufs.append((data, len(payload), False))
        ack = self.mem.alloc(1)
        self.mem.write(ack, b'\xee')  # neither OK nor ERR until the device writes it
        bufs.append((ack, 1, True))
        ring.put_avail(ring.add_chain(bufs))
        ring.kick()
        if ring.get_used(timeout) is None:
            return None
        return self.mem.read(ack, 1)[0]

    def coal_tx_set(self, max_packets, max_usecs, timeout=2.0):
        return self.ctrl(CTRL_NOTF_COAL, NOTF_COAL_TX_SET, struct.pack('<II', max_packets, max_usecs),
                         timeout)

    def coal_rx_set(self, max_packets, max_usecs, timeout=2.0):
        """VIRTIO_NET_CTRL_NOTF_COAL_RX_SET (struct virtio_net_ctrl_coal: packets, then usecs)."""
        return self.ctrl(CTRL_NOTF_COAL, NOTF_COAL_RX_SET, struct.pack('<II', max_packets, max_usecs),
                         timeout)

    # -- data path --
    def transmit(self, frame, timeout=2.0):
        """One packet (12-byte zero header + frame) on TX queue 1; True once the device used it."""
        ring = self.rings[TX_Q]
        buf = self.mem.alloc(NET_HDR_LEN + len(frame))
        self.mem.write(buf, bytes(NET_HDR_LEN) + frame)
        ring.put_avail(ring.add_chain([(buf, NET_HDR_LEN + len(frame), False)]))
        ring.kick()
        return ring.get_used(timeout) is not None

    def post_rx(self, count=8, size=2048):
        ring = self.rings[RX_Q]
        for _ in range(count):
            buf = self.mem.alloc(size)
            ring.put_avail(ring.add_chain([(buf, size, True)]))
        ring.kick()

    def close(self):
        self.vu.close()
        for r in self.rings.values():
            r.close()
        self.rings = {}
        self.mem.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def ether_frame(dst, src, payload=b'vnetd hostile-frontend test', ethertype=0x88b5):
    """dst/src as 'aa:bb:...' strings; ethertype 0x88b5 = local experimental."""
    mac = lambda s: bytes(int(x, 16) for x in s.split(':'))  # noqa: E731
    return mac(dst) + mac(src) + struct.pack('>H', ethertype) + payload
