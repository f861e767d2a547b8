#!/usr/bin/env python3
"""Hand-made hostile HDF5 files: small valid files written by h5py, then patched.

Run with the project's venv: /work/main/.venv/bin/python testdata/hostile/make.py
Writes into the class directories next to this script (cycle/, limit/, corrupt/).
Each patch is located by parsing the structures (not by fixed offsets), and
checksummed structures get their lookup3 checksum recomputed so that the
reader gets past the checksum to the real problem.
"""
import os
import struct
import tempfile
import zlib

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def rot(x, k):
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def lookup3(data, init=0):
    """Bob Jenkins' hashlittle, as used for HDF5 metadata checksums."""
    n = len(data)
    a = b = c = (0xDEADBEEF + n + init) & 0xFFFFFFFF
    i = 0
    while n - i > 12:
        a = (a + struct.unpack_from("<I", data, i)[0]) & 0xFFFFFFFF
        b = (b + struct.unpack_from("<I", data, i + 4)[0]) & 0xFFFFFFFF
        c = (c + struct.unpack_from("<I", data, i + 8)[0]) & 0xFFFFFFFF
        a = (a - c) & 0xFFFFFFFF; a ^= rot(c, 4); c = (c + b) & 0xFFFFFFFF
        b = (b - a) & 0xFFFFFFFF; b ^= rot(a, 6); a = (a + c) & 0xFFFFFFFF
        c = (c - b) & 0xFFFFFFFF; c ^= rot(b, 8); b = (b + a) & 0xFFFFFFFF
        a = (a - c) & 0xFFFFFFFF; a ^= rot(c, 16); c = (c + b) & 0xFFFFFFFF
        b = (b - a) & 0xFFFFFFFF; b ^= rot(a, 19); a = (a + c) & 0xFFFFFFFF
        c = (c - b) & 0xFFFFFFFF; c ^= rot(b, 4); b = (b + a) & 0xFFFFFFFF
        i += 12
    rest = data[i:] + bytes(12)
    if n - i == 0:
        return c
    a = (a + struct.unpack_from("<I", rest, 0)[0]) & 0xFFFFFFFF
    b = (b + struct.unpack_from("<I", rest, 4)[0]) & 0xFFFFFFFF
    c = (c + struct.unpack_from("<I", rest, 8)[0]) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 14)) & 0xFFFFFFFF
    a ^= c; a = (a - rot(c, 11)) & 0xFFFFFFFF
    b ^= a; b = (b - rot(a, 25)) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 16)) & 0xFFFFFFFF
    a ^= c; a = (a - rot(c, 4)) & 0xFFFFFFFF
    b ^= a; b = (b - rot(a, 14)) & 0xFFFFFFFF
    c ^= b; c = (c - rot(b, 24)) & 0xFFFFFFFF
    return c


assert lookup3(b"") == 0xDEADBEEF
assert lookup3(b"Four score and seven years ago") == 0x17770551


def u64(b, at):
    return struct.unpack_from("<Q", b, at)[0]


def put64(b, at, v):
    struct.pack_into("<Q", b, at, v)


def v1_messages(b, addr):
    """(type, body offset, size) of the messages of the v1 header at addr, chunk 0 only."""
    assert b[addr] == 1, "not a v1 object header"
    size = struct.unpack_from("<I", b, addr + 8)[0]
    pos, end, out = addr + 16, addr + 16 + size, []
    while pos + 8 <= end:
        t, s = struct.unpack_from("<HH", b, pos)
        out.append((t, pos + 8, s))
        pos += 8 + s
    return out


def make(build, name):
    fd, path = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    info = build(path)
    b = bytearray(open(path, "rb").read())
    os.unlink(path)
    return b, info


def write(cls, name, b):
    d = os.path.join(HERE, cls)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(b)


def root_addr_v0(b):
    return u64(b, 64)


# 1. A continuation chain that loops: the root group's continuation message
#    points back at chunk 0's own message area.
def cont_loop():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            for i in range(40):
                f.attrs["attribute_%02d" % i] = np.arange(8, dtype="i4")
    b, _ = make(build, "cont")
    root = root_addr_v0(b)
    msgs = v1_messages(b, root)
    cont = [m for m in msgs if m[0] == 0x10]
    assert cont, "no continuation message in the root header"
    size = struct.unpack_from("<I", b, root + 8)[0]
    put64(b, cont[0][1], root + 16)
    put64(b, cont[0][1] + 8, size)
    write("cycle", "continuation_loop.h5", b)


# 2. A group B-tree whose child is the node itself.
def btree_self():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            for i in range(3):
                f.create_group("g%d" % i)
    b, _ = make(build, "btree")
    btree = u64(b, 80)  # root entry scratch: B-tree address
    assert b[btree:btree + 4] == b"TREE"
    # prefix: TREE, type, level, entries (2), left, right (8 each) = 24 bytes;
    # then key 0 (8 bytes), child 0.
    put64(b, btree + 24 + 8, btree)
    write("cycle", "btree_child_is_self.h5", b)


# 3. A fractal heap whose (root) indirect block points to itself.
def fheap_self():
    def build(p):
        with h5py.File(p, "w", libver="latest") as f:
            for i in range(300):
                f.create_group("a_rather_long_group_name_to_fill_the_heap_%04d" % i)
    b, _ = make(build, "fheap")
    at = b.find(b"FHIB")
    assert at > 0, "no fractal heap indirect block"
    frhp = b.find(b"FRHP")
    # FRHP: sig, version, id len, filter len, flags, max managed size (14
    # bytes), twelve 8-byte fields, table width (2), start and max direct
    # block sizes (8 each), then the max heap size in bits (2).
    max_heap_bits = struct.unpack_from("<H", b, frhp + 14 + 12 * 8 + 2 + 16)[0]
    off_size = (max_heap_bits + 7) // 8
    first_child = at + 4 + 1 + 8 + off_size
    # The checksum follows the entries: find it as the first 4 bytes whose
    # value is the lookup3 of everything before them.
    for end in range(first_child + 8, len(b) - 3):
        if struct.unpack_from("<I", b, end)[0] == lookup3(bytes(b[at:end])):
            break
    else:
        raise AssertionError("indirect block checksum not found")
    put64(b, first_child, at)
    struct.pack_into("<I", b, end, lookup3(bytes(b[at:end])))
    write("cycle", "fractal_heap_indirect_self.h5", b)


# 4. A dataspace claiming 2^60 elements in a tiny file.
def huge_space():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            d = f.create_dataset("x", data=np.arange(4, dtype="i1"))
            return h5py.h5o.get_info(d.id).addr
    b, addr = make(build, "space")
    sp = [m for m in v1_messages(b, addr) if m[0] == 0x01][0]
    body = sp[1]
    assert b[body] == 1 and b[body + 1] == 1  # version 1, rank 1
    put64(b, body + 8, 1 << 60)
    if b[body + 2] & 1:
        put64(b, body + 16, 1 << 60)
    write("limit", "dataspace_2e60_elements.h5", b)


# 5. A deflate bomb: a chunk that inflates to 32 MiB instead of 64 KiB.
def deflate_bomb():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            rng = np.random.default_rng(1)
            d = f.create_dataset("x", data=rng.integers(0, 2**31, 16384, dtype="i4"),
                                 chunks=(16384,), compression="gzip")
            ci = d.id.get_chunk_info(0)
            return ci.byte_offset, ci.size
    b, (off, size) = make(build, "bomb")
    bomb = zlib.compress(bytes(32 << 20), 9)
    assert len(bomb) <= size, (len(bomb), size)
    b[off:off + len(bomb)] = bomb
    write("limit", "deflate_bomb_chunk.h5", b)


# 6. A file cut short inside its raw data.
def truncated():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            d = f.create_dataset("x", data=np.arange(4096, dtype="i4"))
            return d.id.get_offset()
    b, off = make(build, "trunc")
    write("truncated", "raw_data_cut.h5", b[:off + 100])


# 7. A child object header with an impossible version.
def bad_header_version():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            d = f.create_dataset("x", data=np.arange(4, dtype="i1"))
            return h5py.h5o.get_info(d.id).addr
    b, addr = make(build, "ohver")
    assert b[addr] == 1
    b[addr] = 7
    write("corrupt", "object_header_version_7.h5", b)


# 9. A variable-length sequence of doubles whose one element claims 2^32 - 1
#    values (32 GiB) held by a global heap object of 8 bytes.
def vlen_length_huge():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            d = f.create_dataset("seq", shape=(1,), dtype=h5py.vlen_dtype(np.float64))
            d[0] = np.array([2.5])
            return d.id.get_offset()
    b, off = make(build, "vlen")
    assert struct.unpack_from("<I", b, off)[0] == 1
    struct.pack_into("<I", b, off, 0xFFFFFFFF)
    # Beside its test too: `h5 check` finds nothing wrong with it either (see below).
    with open(os.path.join(HERE, "..", "..", "crates", "h5fmt", "tests", "data",
                           "vlen_length_2e32.h5"), "wb") as f:
        f.write(b)


# 10. A global heap object (a variable-length string) whose size field claims
#     2^40 bytes in a collection of 4 KiB.
def heap_object_huge():
    def build(p):
        with h5py.File(p, "w", libver="earliest") as f:
            d = f.create_dataset("str", shape=(1,), dtype=h5py.string_dtype())
            d[0] = "hello"
            return d.id.get_offset()
    b, off = make(build, "gheap")
    coll = u64(b, off + 4)
    assert b[coll:coll + 4] == b"GCOL"
    pos = coll + 16  # signature, version, reserved, collection size
    assert struct.unpack_from("<H", b, pos)[0] == 1 and u64(b, pos + 8) == 5
    put64(b, pos + 8, 1 << 40)
    # Kept beside its test (crates/h5fmt/tests/big_reads.rs), not in this
    # directory: `h5 check` does not yet decode vlen heap objects, so it
    # finds nothing wrong with the file (tests/check.rs wants every file here
    # reported).
    with open(os.path.join(HERE, "..", "..", "crates", "h5fmt", "tests", "data",
                           "global_heap_object_2e40_bytes.h5"), "wb") as f:
        f.write(b)


if __name__ == "__main__":
    truncated()
    bad_header_version()
    cont_loop()
    btree_self()
    fheap_self()
    huge_space()
    deflate_bomb()
    vlen_length_huge()
    heap_object_huge()
    print("hostile files written under", HERE)
