# SPDX-License-Identifier: MIT
"""A packed virtqueue (VIRTIO 1.3 "Packed Virtqueues") laid out in GuestMemory, driver side.

PackedRing mirrors vhost_user_client.SplitRing, so VirtioNetFrontend (and the hostile cases) run
on either layout: add_chain() writes a well-formed list and returns its buffer id, put_avail(id)
makes it available (the head's flags, written last), get_used() reads used descriptors back
(IN_ORDER batches too: one descriptor with the last buffer's id covers the batch); set_desc()
and set_flags() write anything at all. ring.desc / ring.avail / ring.used are what
SET_VRING_ADDR names: the descriptor ring, the Driver Area (driver event suppression, written
here) and the Device Area (device event suppression, written by vnetd); ring.base is the
SET_VRING_BASE value in the vhost-user packed encoding (slot | wrap << 15: slot 0, wrap 1).

Descriptor: u64 addr, u32 len, u16 id, u16 flags (little-endian). A descriptor is available
when AVAIL == the driver's wrap counter != USED, used when AVAIL == USED == the device's.
"""

import collections
import os
import struct
import time

from .vring import (DESC, VRING_DESC_F_INDIRECT, VRING_DESC_F_NEXT, VRING_DESC_F_WRITE,
                    VhostUserError)

F_AVAIL = 1 << 7
F_USED = 1 << 15
F_NEXT, F_WRITE, F_INDIRECT = VRING_DESC_F_NEXT, VRING_DESC_F_WRITE, VRING_DESC_F_INDIRECT
# Event suppression flags (both areas: u16 off_wrap, u16 flags).
EVENT_ENABLE = 0
EVENT_DISABLE = 1
EVENT_DESC = 2
EVENT = struct.Struct('<HH')


def avail_bits(wrap):
    """The AVAIL/USED bits of a descriptor made available with this driver wrap counter."""
    return F_AVAIL if wrap else F_USED


def used_bits(wrap):
    """The AVAIL/USED bits of a descriptor used with this device wrap counter."""
    return F_AVAIL | F_USED if wrap else 0


class PackedRing:
    """One packed virtqueue in guest memory, with its kick and call eventfds."""

    def __init__(self, mem, index, num=64, in_order=False):
        self.mem = mem
        self.index = index
        self.num = num
        self.in_order = in_order   # IN_ORDER negotiated: a used descriptor may cover a batch
        self.desc = mem.alloc(16 * num, 16)
        self.avail = mem.alloc(4, 4)   # Driver Area: driver event suppression (we write it)
        self.used = mem.alloc(4, 4)    # Device Area: device event suppression (vnetd writes it)
        mem.write(self.desc, bytes(16 * num))
        mem.write(self.avail, bytes(4))
        mem.write(self.used, bytes(4))
        self.base = 0x8000             # SET_VRING_BASE: slot 0, wrap counter 1 (a fresh ring)
        self.avail_slot, self.avail_wrap = 0, True   # the driver's next slot and wrap counter
        self.used_slot, self.used_wrap = 0, True     # where the next used descriptor comes
        self.free = list(range(num))   # buffer ids not in flight
        self.posted = collections.deque()  # (id, head slot, slots) in the order made available
        self.pending = {}              # id -> [(head slot, head flags)]: written, not published
        self.done = collections.deque()  # completions read but not handed out (IN_ORDER batch)
        self.inuse = 0                 # slots the device owns or has not given back yet
        self.used_descs = 0            # used descriptors read (one per batch with IN_ORDER)
        self.kick_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.call_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    # -- raw access (anything goes) --
    def set_desc(self, slot, addr, length, id=0, flags=0):
        """Write descriptor `slot` as given (flags included): no checks at all."""
        self.mem.write(self.desc + 16 * slot, DESC.pack(addr & (2**64 - 1), length & 0xffffffff,
                                                        id & 0xffff, flags & 0xffff))

    def set_flags(self, slot, flags):
        """Only the flags of descriptor `slot` (what makes it available, or not)."""
        self.mem.put_u16(self.desc + 16 * slot + 14, flags)

    def get_desc(self, slot):
        """(addr, len, id, flags) of descriptor `slot` as it is in memory now."""
        return DESC.unpack(self.mem.read(self.desc + 16 * slot, 16))

    def resume_at(self, slot, wrap):
        """Before setup: the ring starts (SET_VRING_BASE) at `slot` with both wrap counters
        `wrap`, as a ring that ran before (nothing in flight)."""
        self.avail_slot = self.used_slot = slot
        self.avail_wrap = self.used_wrap = wrap
        self.base = slot | (0x8000 if wrap else 0)

    def position(self):
        """This driver's positions in GET_VRING_BASE's packed encoding (both halves)."""
        return (self.avail_slot | (0x8000 if self.avail_wrap else 0) |
                (self.used_slot | (0x8000 if self.used_wrap else 0)) << 16)

    def advance(self, n=1):
        """Move the driver's position n slots on (flipping its wrap counter at the end) without
        writing anything: returns the (slot, wrap) it was at."""
        at = (self.avail_slot, self.avail_wrap)
        for _ in range(n):
            self.avail_slot += 1
            if self.avail_slot == self.num:
                self.avail_slot, self.avail_wrap = 0, not self.avail_wrap
        return at

    # -- driver event suppression (read by vnetd before it notifies) --
    def set_driver_event(self, flags, off_wrap=0):
        self.mem.write(self.avail, EVENT.pack(off_wrap & 0xffff, flags & 0xffff))

    def device_event(self):
        """(off_wrap, flags) vnetd wrote into the Device Area."""
        return EVENT.unpack(self.mem.read(self.used, 4))

    def next_off_wrap(self, ahead=0):
        """off_wrap naming the slot of the used descriptor `ahead` buffers of one slot from
        now (for EVENT_DESC)."""
        s, w = self.used_slot + ahead, self.used_wrap
        while s >= self.num:
            s -= self.num
            w = not w
        return s | (0x8000 if w else 0)

    # -- well-formed lists --
    def add_chain(self, bufs, id=None, head_flags=0):
        """bufs: [(gpa, len, writable)], readable ones first: one list at the driver's next
        slots, every descriptor but the head made available (with its own slot's wrap), the head
        written with flags 0 (not available under either wrap). Returns the buffer id (the next
        free one unless given); put_avail(id) publishes it."""
        if not bufs:
            raise VhostUserError('empty list')
        if len(bufs) > self.num - self.inuse:
            raise VhostUserError('ring %d full' % self.index)
        if id is None:
            if not self.free:
                raise VhostUserError('ring %d: no free buffer id' % self.index)
            id = self.free.pop(0)
        elif id in self.free:
            self.free.remove(id)
        head_slot = self.avail_slot
        for k, (addr, length, writable) in enumerate(bufs):
            last = k == len(bufs) - 1
            slot, wrap = self.advance()
            flags = (0 if last else F_NEXT) | (F_WRITE if writable else 0)
            if k == 0:
                self.set_desc(slot, addr, length, id, 0)
                self.pending.setdefault(id, []).append((slot, flags | head_flags | avail_bits(wrap)))
            else:
                self.set_desc(slot, addr, length, id, flags | avail_bits(wrap))
        self.posted.append((id, head_slot, len(bufs)))
        self.inuse += len(bufs)
        return id

    def add_indirect(self, table, table_len, id=None, extra_flags=0):
        """One descriptor naming an indirect table (gpa, bytes); returns its id, unpublished."""
        return self.add_chain([(table, table_len, False)], id, F_INDIRECT | extra_flags)

    def unpublish(self, id):
        """Forget the oldest unpublished list with this id: (head slot, the flags that would
        have made it available); its head stays not available."""
        heads = self.pending[id]
        head = heads.pop(0)
        if not heads:
            del self.pending[id]
        return head

    def put_avail(self, id):
        """Make the oldest unpublished list with this id (add_chain() returned it) available:
        its head's flags, written last."""
        slot, flags = self.unpublish(id)
        self.set_flags(slot, flags)

    def kick(self):
        os.eventfd_write(self.kick_fd, 1)

    def call_count(self):
        """Used-buffer notifications (call-fd writes) since the last call_count(); resets it."""
        try:
            return os.eventfd_read(self.call_fd)
        except BlockingIOError:
            return 0

    # -- completions --
    def peek_used(self):
        """The used descriptor at the next used slot, (id, len, flags), or None."""
        addr, length, id, flags = self.get_desc(self.used_slot)
        if flags & (F_AVAIL | F_USED) != used_bits(self.used_wrap):
            return None
        return id, length, flags

    def _complete(self, uid, ulen, flags):
        """Retire what one used descriptor covers: its buffer, and with IN_ORDER every buffer
        made available before it."""
        ids = [p[0] for p in self.posted]
        if uid not in ids:
            raise VhostUserError('ring %d: used id %d was not in flight' % (self.index, uid))
        if self.in_order:
            n = ids.index(uid) + 1
            batch = [self.posted.popleft() for _ in range(n)]
        else:
            k = ids.index(uid)
            batch = [self.posted[k]]
            del self.posted[k]
        slots = 0
        for i, (bid, _, nslots) in enumerate(batch):
            last = i == len(batch) - 1
            self.done.append((bid, (ulen if flags & F_WRITE else 0) if last else None))
            self.free.append(bid)
            slots += nslots
        self.inuse -= slots
        self.used_descs += 1
        for _ in range(slots):
            self.used_slot += 1
            if self.used_slot == self.num:
                self.used_slot, self.used_wrap = 0, not self.used_wrap

    def get_used(self, timeout=2.0):
        """Next completion (id, len), or None after timeout. len is None for a buffer an
        IN_ORDER batch skipped (used completely, length not written)."""
        deadline = time.monotonic() + timeout
        while not self.done:
            u = self.peek_used()
            if u is not None:
                self._complete(*u)
                break
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        return self.done.popleft()

    def close(self):
        for fd in (self.kick_fd, self.call_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.kick_fd = self.call_fd = -1
