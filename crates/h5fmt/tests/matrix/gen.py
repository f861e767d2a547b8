"""Chunk-index x filter x shape x writer cross-check matrix (h5py / libhdf5).

Usage: python gen.py OUTDIR

Writes one HDF5 file per writer (libver earliest / latest / v200) into OUTDIR,
the bytes numpy reads for each full dataset and for random hyperslabs (`.bin`),
and `manifest.json` describing every case. Before writing the manifest it
checks, by parsing the dataset's object header bytes itself, that libhdf5
really chose the intended chunk index (layout message version 3 -> v1 B-tree;
version 4/5 -> the index type byte).
"""

import json
import os
import struct
import sys

import h5py
import hdf5plugin
import numpy as np

WRITERS = ["earliest", "latest", "v200"]
FILTERS = {
    "none": {},
    "gzip_shuffle": {"compression": "gzip", "compression_opts": 4, "shuffle": True},
    "fletcher32": {"fletcher32": True},
    # deflate alone (+ fletcher32): a selection ending inside a chunk's rows
    # inflates only the rows it needs
    "gzip_fletcher32": {"compression": "gzip", "compression_opts": 1, "fletcher32": True},
    "zstd": dict(hdf5plugin.Zstd(clevel=3)),
}
# index name -> {shape kind -> (shape, maxshape, chunks)}
CONFIGS = {
    "single": {
        "1d": ((1000,), (1000,), (1000,)),
        "3d": ((13, 11, 7), (13, 11, 7), (13, 11, 7)),
    },
    "implicit": {
        "1d": ((1000,), (1000,), (64,)),
        "3d": ((13, 11, 7), (13, 11, 7), (4, 3, 2)),
    },
    "fixed": {
        "1d": ((1000,), (1000,), (64,)),
        "3d": ((13, 11, 7), (13, 11, 7), (4, 3, 2)),
    },
    "fixed_paged": {  # > 1024 chunks: the data block is paged
        "1d": ((3001,), (3001,), (2,)),
        "3d": ((13, 11, 19), (13, 11, 19), (1, 1, 2)),
    },
    "fixed_big": {  # chunks >= 16 KiB: decoded by worker threads (1-D: straight into the output)
        "1d": ((100003,), (100003,), (4096,)),
        "3d": ((40, 41, 50), (40, 41, 50), (10, 20, 25)),
    },
    "fixed_rows": {  # 3-D chunks spanning the trailing dims: threads fill output row ranges
        "3d": ((50, 20, 30), (50, 20, 30), (7, 20, 30)),
    },
    "earray": {  # one unlimited dim; enough chunks for super blocks and paged data blocks
        "1d": ((20001,), (None,), (2,)),
        "3d": ((60, 11, 7), (None, 11, 7), (1, 3, 2)),
    },
    "btree2": {  # two unlimited dims
        "3d": ((40, 33, 7), (None, None, 7), (2, 3, 2)),
    },
}
# Layout v4 index type byte -> our name.
INDEX_TYPES = {1: "single", 2: "implicit", 3: "fixed", 4: "earray", 5: "btree2"}
DTYPES = {"1d": np.dtype("<f8"), "3d": np.dtype(">i4")}
FILL = {"1d": -1.5, "3d": -7}


def expected_index(writer, index):
    if writer == "earliest":
        return "btree1"
    return index if index in INDEX_TYPES.values() else "fixed"


def values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype.kind == "f":
        v = np.round(rng.normal(size=n) * 100, 2)
    else:
        v = rng.integers(-100000, 100000, size=n)
    return v.astype(dtype).reshape(shape)


def write_case(f, name, index, kind, filt, seed):
    shape, maxshape, chunks = CONFIGS[index][kind]
    dt = DTYPES[kind]
    kw = dict(FILTERS[filt])
    if index == "implicit":
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_value(np.array(FILL[kind], dtype=dt))
        space = h5py.h5s.create_simple(shape, tuple(h5py.h5s.UNLIMITED if m is None else m for m in maxshape))
        dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(dt), space, dcpl=dcpl)
        d = h5py.Dataset(dsid)
    else:
        d = f.create_dataset(name, shape=shape, maxshape=maxshape, chunks=chunks, dtype=dt,
                             fillvalue=FILL[kind], **kw)
    full = np.full(shape, FILL[kind], dtype=dt)
    v = values(shape, dt, seed)
    n0 = shape[0]
    c0 = chunks[0]
    if index == "single":
        # Part of the one chunk is never written (libhdf5 stores fill there).
        d[1:] = v[1:]
        full[1:] = v[1:]
    else:
        # Leave whole chunks along dim 0 unwritten: [a, b) on chunk boundaries.
        a = ((n0 // 3) // c0) * c0
        b = min(n0, a + 2 * c0)
        d[:a] = v[:a]
        d[b:] = v[b:]
        full[:a] = v[:a]
        full[b:] = v[b:]
    return d, full


def random_slab(rng, shape):
    dims = []
    for n in shape:
        start = int(rng.integers(0, n))
        block = int(rng.choice([1, 1, 1, 2]))
        stride = int(rng.integers(block, block + 4))
        room = n - start
        if room < block:
            block = 1
            stride = max(stride, 1)
        maxcount = max(1, (room - block) // stride + 1)
        count = int(rng.integers(1, maxcount + 1))
        dims.append([start, stride, count, block])
    return dims


def slab_bytes(full, dims):
    idx = []
    for start, stride, count, block in dims:
        idx.append(np.array([start + i * stride + j for i in range(count) for j in range(block)], dtype=np.int64))
    return full[np.ix_(*idx)].tobytes()


# ---- independent check of the chunk index: parse the object header bytes ----

def layout_message(raw, addr, sizeof_addr=8, sizeof_len=8):
    """Return the body of the layout message (type 8) of the object header at `addr`."""
    def msgs_v2(start, end):
        p = start
        while p + 4 <= end:
            mtype = raw[p]
            size = struct.unpack_from("<H", raw, p + 1)[0]
            mflags = raw[p + 3]
            p += 4 + (2 if track_order else 0)
            yield mtype, raw[p:p + size]
            p += size

    def msgs_v1(start, end):
        p = start
        while p + 8 <= end:
            mtype, size = struct.unpack_from("<HH", raw, p)
            p += 8
            yield mtype, raw[p:p + size]
            p += size

    if raw[addr:addr + 4] == b"OHDR":
        flags = raw[addr + 5]
        track_order = bool(flags & 0x04)
        p = addr + 6
        if flags & 0x20:
            p += 16
        if flags & 0x10:
            p += 4
        n = 1 << (flags & 3)
        size = int.from_bytes(raw[p:p + n], "little")
        p += n
        blocks = [(p, p + size, msgs_v2)]
        gap = 4  # checksum at the end of each block
    else:
        track_order = False
        size = struct.unpack_from("<I", raw, addr + 8)[0]
        blocks = [(addr + 16, addr + 16 + size, msgs_v1)]
        gap = 0
    while blocks:
        start, end, walker = blocks.pop(0)
        for mtype, body in walker(start, end - gap):
            if mtype == 8:
                return body
            if mtype == 0x10:
                caddr, clen = struct.unpack_from("<QQ", body, 0)
                if raw[caddr:caddr + 4] == b"OCHK":
                    blocks.append((caddr + 4, caddr + clen, msgs_v2))
                else:
                    blocks.append((caddr, caddr + clen, msgs_v1))
    raise ValueError("no layout message")


def index_from_bytes(raw, addr):
    body = layout_message(raw, addr)
    version, cls = body[0], body[1]
    assert cls == 2, f"layout class {cls} is not chunked"
    if version <= 3:
        return "btree1"
    rank = body[3]
    enc = body[4]
    return INDEX_TYPES[body[5 + rank * enc]]


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20260511)
    cases = []
    seed = 0
    for writer in WRITERS:
        fname = f"matrix_{writer}.h5"
        path = os.path.join(out, fname)
        made = []
        with h5py.File(path, "w", libver=writer) as f:
            for index, shapes in CONFIGS.items():
                for kind in shapes:
                    for filt in FILTERS:
                        if index == "implicit" and filt != "none":
                            continue  # filters rule out the implicit index
                        name = f"{index}_{filt}_{kind}"
                        seed += 1
                        d, model = write_case(f, name, index, kind, filt, seed)
                        full = d[...]  # what libhdf5 reads back is the oracle
                        assert full.dtype == model.dtype and np.array_equal(full, model), name
                        made.append((name, index, kind, filt, full, h5py.h5o.get_info(d.id).addr))
        with open(path, "rb") as fh:
            raw = fh.read()
        for name, index, kind, filt, full, addr in made:
            want = expected_index(writer, index)
            got = index_from_bytes(raw, addr)
            if got != want:
                raise SystemExit(f"{fname}/{name}: libhdf5 used index {got}, expected {want}")
            stem = f"{writer}__{name}"
            with open(os.path.join(out, stem + "__full.bin"), "wb") as fh:
                fh.write(full.tobytes())
            slabs = []
            for k in range(4):
                dims = random_slab(rng, full.shape)
                b = f"{stem}__s{k}.bin"
                with open(os.path.join(out, b), "wb") as fh:
                    fh.write(slab_bytes(full, dims))
                slabs.append({"dims": dims, "bin": b})
            cases.append({
                "file": fname, "dataset": name, "writer": writer, "index": want,
                "filter": filt, "shape": list(full.shape), "full": stem + "__full.bin",
                "slabs": slabs,
            })
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump({"cases": cases}, fh, indent=1)
    print(f"{len(cases)} cases in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
