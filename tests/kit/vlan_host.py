#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The host end of a VLAN trunk, for test_vlan_trunk.py, run inside the test's namespace: a
raw AF_PACKET socket on the trunk tap sends 802.1Q-tagged ARP and ICMP echo requests and reads
what comes back with its VLAN ID (the kernel moves a received tag into PACKET_AUXDATA). Needs no
8021q module or VLAN-aware bridge. Prints one JSON object.

  vlan_host.py ping IFACE VID HOST_MAC HOST_IP GUEST_IP SIZE...  (an ARP request, then one echo
      request of each payload SIZE; the replies, byte-checked)
  vlan_host.py capture IFACE SECONDS  (every IPv4 / ARP frame seen: VLAN ID, ethertype, ICMP)
"""

import json
import os
import socket
import struct
import sys
import time

SOL_PACKET, PACKET_AUXDATA, TP_STATUS_VLAN_VALID = 263, 8, 0x10
BCAST = b'\xff' * 6


def mac_bytes(s):
    return bytes(int(x, 16) for x in s.split(':'))


def csum(data):
    if len(data) % 2:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def tagged(dst, src, vid, ethertype, payload):
    """An Ethernet frame with an 802.1Q tag in the bytes (vid None: untagged)."""
    if vid is None:
        return dst + src + struct.pack('!H', ethertype) + payload
    return dst + src + struct.pack('!HHH', 0x8100, vid, ethertype) + payload


def ipv4(src, dst, proto, payload, ident=1):
    hdr = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), ident, 0, 64, proto, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    hdr = hdr[:10] + struct.pack('!H', csum(hdr)) + hdr[12:]
    return hdr + payload


def open_sock(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.bind((iface, 0))
    return s


def recv(s, timeout):
    """(frame, vid or None) received, or None at the timeout; outgoing frames skipped."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        s.settimeout(left)
        try:
            data, anc, _, addr = s.recvmsg(65536, socket.CMSG_SPACE(20))
        except socket.timeout:
            return None
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        vid = None
        for level, typ, val in anc:
            if level == SOL_PACKET and typ == PACKET_AUXDATA:
                status, _, _, _, _, tci, _ = struct.unpack('IIIHHHH', val[:20])
                if status & TP_STATUS_VLAN_VALID:
                    vid = tci & 0x0fff
        if vid is None and len(data) >= 18 and data[12:14] == b'\x81\x00':
            vid = struct.unpack('!H', data[14:16])[0] & 0x0fff  # a tag left in the bytes
            data = data[:12] + data[16:]
        return data, vid


def ping(iface, vid, host_mac, host_ip, guest_ip, sizes):
    s = open_sock(iface)
    hmac = mac_bytes(host_mac)
    vid = None if vid == 'none' else int(vid)
    out = {'arp': None, 'echo': []}
    arp = struct.pack('!HHBBH6s4s6s4s', 1, 0x0800, 6, 4, 1, hmac, socket.inet_aton(host_ip),
                      b'\0' * 6, socket.inet_aton(guest_ip))
    s.send(tagged(BCAST, hmac, vid, 0x0806, arp))
    guest_mac = None
    while True:
        r = recv(s, 2.0)
        if r is None:
            break
        frame, rvid = r
        if frame[12:14] == b'\x08\x06' and struct.unpack('!H', frame[20:22])[0] == 2 and \
                frame[38:42] == socket.inet_aton(host_ip):
            guest_mac = frame[22:28]
            out['arp'] = {'vid': rvid, 'mac': ':'.join('%02x' % b for b in guest_mac)}
            break
    if guest_mac is None:
        print(json.dumps(out))
        return
    for i, size in enumerate(sizes):
        payload = os.urandom(size)
        icmp = struct.pack('!BBHHH', 8, 0, 0, 0x7777, i) + payload
        icmp = icmp[:2] + struct.pack('!H', csum(icmp)) + icmp[4:]
        s.send(tagged(guest_mac, hmac, vid, 0x0800, ipv4(host_ip, guest_ip, 1, icmp, 100 + i)))
        got = {'size': size, 'vid': None, 'exact': False}
        while True:
            r = recv(s, 2.0)
            if r is None:
                break
            frame, rvid = r
            ip = frame[14:]
            if frame[12:14] != b'\x08\x00' or ip[9] != 1:
                continue
            body = ip[(ip[0] & 15) * 4:]
            if body[0] == 0 and struct.unpack('!HH', body[4:8]) == (0x7777, i):
                got = {'size': size, 'vid': rvid, 'exact': body[8:] == payload}
                break
        out['echo'].append(got)
    print(json.dumps(out))


def capture(iface, seconds):
    s = open_sock(iface)
    seen, deadline = [], time.monotonic() + seconds
    while True:
        r = recv(s, deadline - time.monotonic())
        if r is None:
            break
        frame, vid = r
        et = struct.unpack('!H', frame[12:14])[0]
        item = {'vid': vid, 'ethertype': et}
        if et == 0x0800 and frame[23] == 1:
            ip = frame[14:]
            body = ip[(ip[0] & 15) * 4:]
            item['icmp'] = body[0]
            item['payload'] = body[8:].hex()
        seen.append(item)
    print(json.dumps(seen))


if __name__ == '__main__':
    if sys.argv[1] == 'ping':
        ping(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6],
             [int(x) for x in sys.argv[7:]])
    else:
        capture(sys.argv[2], float(sys.argv[3]))
