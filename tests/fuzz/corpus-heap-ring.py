#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds for fuzz-heap-ring: ring images as the agent writes them
(sampler/heap/agent/heap_ring.h), each an 8-byte head then the ring's first
bytes. Run from tests/fuzz: ./corpus-heap-ring.py"""
import os
import struct

ALIGN, PAD, ALLOC, FREE = 16, 1, 2, 3


def rec_len(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def header(pos, length, typ):
    commit = ((pos >> 3) & ((1 << 40) - 1)) << 24 | length
    return struct.pack('<QHHI', commit, typ, 0, 0)


def alloc(pos, addr, size, stack):
    length = rec_len(184 + len(stack))
    body = struct.pack('<IIQQQ', 1234, len(stack), addr, size, 524288)
    body += struct.pack('<17Q', *range(17)) + stack
    rec = header(pos, length, ALLOC) + body
    return rec + b'\0' * (length - len(rec))


def free(pos, addr):
    return header(pos, 32, FREE) + struct.pack('<IIQ', 1234, 0, addr)


def ring(records):
    data, pos = b'', 0
    for make in records:
        rec = make(pos)
        data += rec
        pos += len(rec)
    return struct.pack('<Q', pos) + data


SEEDS = {
    'alloc-free': ring([lambda p: alloc(p, 0x1000, 48, bytes(range(64))),
                        lambda p: free(p, 0x1000)]),
    'no-stack': ring([lambda p: alloc(p, 0x2000, 1 << 20, b''),
                      lambda p: alloc(p, 0x3000, 8, b'\xff' * 8000)]),
    'pad': ring([lambda p: header(p, 48, PAD) + b'\0' * 32,
                 lambda p: free(p, 0x4000)]),
    'frees': ring([lambda p, a=a: free(p, a) for a in range(1, 40)]),
}

here = os.path.dirname(os.path.abspath(__file__))
for name, data in SEEDS.items():
    with open(os.path.join(here, 'corpus-heap-ring', name), 'wb') as f:
        f.write(data)
