# SPDX-License-Identifier: MIT
"""What the split-ring driver (vhost_user_client.SplitRing) and the packed one (vu_packed) share:
the descriptor flags, the descriptor layout and the frontend's error. Both import it; neither
imports the other's module for these (vhost_user_client re-exports them)."""

import struct

VRING_DESC_F_NEXT = 1
VRING_DESC_F_WRITE = 2
VRING_DESC_F_INDIRECT = 4
DESC = struct.Struct('<QIHH')        # u64 addr, u32 len, u16 (split: flags, next; packed: id, flags)


class VhostUserError(Exception):
    """A vhost-user exchange failed: a short or refused message, a missing reply, a NACK."""
