"""Oracle for tests/list_columns.rs (and crates/h5cli/tests/table_lists.rs):
HEP001 tables with list columns and boolean columns of the upstream H5Col
draft (HDFAlliance/heps HEP001/index.md @ 10392e8, 2026-07-09, sections
"The boolean datatype", "Boolean columns", "List columns"), written with
h5py exactly as the draft lays them out (and as h5col 0.4.0's lists.py
writes them), plus damaged variants.

usage: list_oracle.py OUT_DIR  ->  writes OUT_DIR/*.h5, prints the expected
answers as JSON:

  {"tables": {FILE: {"path": P, "nrows": N, "order": [names],
                     "columns": {name: {"arrow": T, "type": schema type,
                                        "rows": [cell per row]}}}},
   "corrupt": {FILE: {"path": P, "column": C, "error": "invalid"|"limit"}}}

Cells are computed from the data drawn here, never by reading a file back:
a list row is a JSON array (null for a null list), an element null when
missing (the leaf's fill value, or a null string), integers as integers,
floats as the hex of their IEEE bits at the leaf's width, strings as text,
booleans as true/false.
"""
import json
import os
import sys

import h5py
import numpy as np

OUT = sys.argv[1]
rng = np.random.default_rng(20260709)
BOOL = h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype=np.dtype("<i1"))
TAIL = 7  # reserved storage past every level's entry count (garbage)


def ascii_attr(obj, name, value):
    """A scalar null-terminated fixed-length ASCII attribute (CLASS, KIND…)."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(len(value) + 1)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    tid.set_cset(h5py.h5t.CSET_ASCII)
    sid = h5py.h5s.create(h5py.h5s.SCALAR)
    aid = h5py.h5a.create(obj.id, name.encode(), tid, sid)
    aid.write(np.array(value.encode() + b"\0", dtype="S%d" % (len(value) + 1)))


def table_group(f, path, nrows, order):
    g = f.create_group(path)
    ascii_attr(g, "CLASS", "COLUMN_TABLE")
    ascii_attr(g, "VERSION", "1.0")
    g.attrs.create("NROWS", np.uint64(nrows), dtype=np.uint64)
    width = max(len(n.encode()) for n in order)
    g.attrs.create(
        "column-order",
        np.array([n.encode() for n in order], dtype="S%d" % width),
        dtype=h5py.string_dtype("utf-8", width),
    )
    return g


def dataset(g, name, data, dtype, fill=None, chunk=16):
    data = np.asarray(data, dtype=dtype)
    kw = {} if fill is None else {"fillvalue": fill}
    return g.create_dataset(
        name,
        data=data,
        dtype=dtype,
        chunks=(max(1, min(chunk, max(1, len(data)))),),
        maxshape=(None,),
        **kw,
    )


def offsets_of(entries, garbage=True, dtype=np.uint64):
    """OFFSETS for entries (None = null, else a list), with a reserved tail."""
    off = [0]
    for e in entries:
        off.append(off[-1] + (0 if e is None else len(e)))
    if garbage:
        off += [off[-1] + 1000 + 17 * i for i in range(TAIL)]
    return np.array(off, dtype=dtype)


def mask_of(entries, garbage=True):
    m = [0 if e is None else 1 for e in entries]
    if garbage:
        m += [1, 0] * (TAIL // 2) + [1] * (TAIL % 2)
    return np.array(m, dtype=np.int8)


def list_level(g, entries, nullable, values_writer, chunk=16, off_dtype=np.uint64, mask_dtype=BOOL):
    """One level: OFFSETS, MASK (when nullable), then VALUES by values_writer(flat)."""
    ascii_attr(g, "CLASS", "LIST_COLUMN")
    ascii_attr(g, "KIND", "OFFSETS")
    flat = [x for e in entries if e is not None for x in e]
    values_writer(g, flat)
    if nullable:
        dataset(g, "MASK", mask_of(entries), mask_dtype, chunk=chunk)
    dataset(g, "OFFSETS", offsets_of(entries, dtype=off_dtype), off_dtype, chunk=chunk)


def leaf(dtype, fill=None, garbage=None, chunk=16):
    def w(g, flat):
        # A missing element (None) is stored as the leaf's fill value.
        data = [fill if x is None else x for x in flat]
        data += [garbage if garbage is not None else (fill if fill is not None else 0)] * TAIL
        dataset(g, "VALUES", data, dtype, fill=fill, chunk=chunk)
    return w


def strings(nullable, chunk=16):
    def w(g, flat):
        sv = g.create_group("VALUES")
        ascii_attr(sv, "CLASS", "STRING_VALUES")
        blobs = [b"" if s is None else s.encode("utf-8") for s in flat]
        chars = np.frombuffer(b"".join(blobs) + b"\xff" * TAIL, dtype=np.uint8)
        dataset(sv, "CHARS", chars, np.uint8, chunk=chunk * 4)
        if nullable:
            dataset(sv, "MASK", mask_of(flat), BOOL, chunk=chunk)
        dataset(sv, "OFFSETS", offsets_of(blobs), np.uint64, chunk=chunk)
    return w


def nested(entries_inner_nullable, leaf_writer, chunk=16):
    def w(g, flat):
        sub = g.create_group("VALUES")
        list_level(sub, flat, entries_inner_nullable, leaf_writer, chunk=chunk)
    return w


def fbits(x, dt):
    u = {2: "<u2", 4: "<u4", 8: "<u8"}[np.dtype(dt).itemsize]
    return format(int(np.array(x, dtype=dt).view(u)), "x")


def cells(entries, elem):
    return [None if e is None else [elem(x) for x in e] for e in entries]


# ---------------------------------------------------------------------------
# The main table: every value type, empty and null lists, missing elements,
# several chunks at every level, reserved tails, column-order.

N = 257
INT_FILL = np.iinfo(np.int32).min
VOCAB = ["", "qc", "raw", "é", "a,b", 'quo"te', "日本", "back\\slash", "x" * 40]


def draw(maker, p_null=0.1, p_empty=0.15, maxlen=6):
    out = []
    for _ in range(N):
        r = rng.random()
        if r < p_null:
            out.append(None)
        elif r < p_null + p_empty:
            out.append([])
        else:
            out.append([maker() for _ in range(int(rng.integers(1, maxlen + 1)))])
    return out


ints = draw(lambda: None if rng.random() < 0.05 else int(rng.integers(-1000, 1000)))
floats = draw(
    lambda: float("nan") if rng.random() < 0.05 else float(np.float32(rng.normal() * 100)),
    p_null=0.0,
)
tags = draw(lambda: None if rng.random() < 0.1 else VOCAB[int(rng.integers(0, len(VOCAB)))])
pairs = draw(
    lambda: None if rng.random() < 0.1 else [int(rng.integers(-30000, 30000)) for _ in range(int(rng.integers(0, 4)))],
    p_null=0.0,
    maxlen=4,
)
flags = draw(lambda: bool(rng.random() < 0.5), p_null=0.0)
LABELS = ["qc", "raw", "a,b", "ok"]
labels = draw(lambda: None if rng.random() < 0.1 else LABELS[int(rng.integers(0, 4))], p_null=0.05)
ids = list(range(N))
flag = [bool(rng.random() < 0.3) for _ in range(N)]
ORDER = ["id", "ints", "flag", "tags", "floats", "pairs", "flags", "labels"]

with h5py.File(os.path.join(OUT, "lists.h5"), "w", track_order=False) as f:
    g = table_group(f, "/runs/t", N, ORDER)
    dataset(g, "id", ids, np.int64, fill=np.iinfo(np.int64).min, chunk=50)
    dataset(g, "flag", np.array(flag, dtype=np.int8), BOOL, chunk=50)
    list_level(
        g.create_group("ints"),
        ints,
        True,
        leaf(np.int32, fill=INT_FILL),
        chunk=10,
    )
    g["ints"].attrs["units"] = "counts"
    list_level(
        g.create_group("floats"),
        floats,
        False,
        leaf(np.float32, fill=np.float32("nan"), garbage=1.5),
        chunk=33,
    )
    list_level(g.create_group("tags"), tags, True, strings(True, chunk=8), chunk=8)
    list_level(g.create_group("pairs"), pairs, False, nested(True, leaf(np.int16), chunk=9), chunk=20)
    list_level(g.create_group("flags"), flags, False, leaf(BOOL), chunk=40)
    list_level(g.create_group("labels"), labels, True, leaf("S8", fill=b""), chunk=12)

main = {
    "path": "/runs/t",
    "nrows": N,
    "order": ORDER,
    "columns": {
        "id": {"arrow": "Int64", "rows": ids},
        "flag": {"arrow": "Boolean", "rows": flag},
        "ints": {
            "arrow": "LargeList(Int32)",
            "type": "list<int32>",
            "rows": cells(ints, lambda x: x),
        },
        "floats": {
            "arrow": "LargeList(Float32)",
            "type": "list<float32>",
            "rows": cells(floats, lambda x: None if x != x else fbits(x, np.float32)),
        },
        "tags": {
            "arrow": "LargeList(LargeUtf8)",
            "type": "list<string>",
            "rows": cells(tags, lambda x: x),
        },
        "pairs": {
            "arrow": "LargeList(LargeList(Int16))",
            "type": "list<list<int16>>",
            "rows": cells(pairs, lambda p: None if p is None else list(p)),
        },
        "flags": {
            "arrow": "LargeList(Boolean)",
            "type": "list<enum[int8]{FALSE,TRUE}>",
            "rows": cells(flags, lambda x: x),
        },
        "labels": {
            "arrow": "LargeList(Utf8)",
            "type": "list<string[8,nullpad,ascii]>",
            # "" is the leaf's fill value: missing (the empty-string convention).
            "rows": cells(labels, lambda x: None if not x else x),
        },
    },
}

# ---------------------------------------------------------------------------
# Lenient reading: uint32 OFFSETS and a plain uint8 MASK (the draft requires
# uint64 and the boolean enum; readers may accept these). Arrow: List.

M = 20
small = [None if i % 7 == 3 else list(range(i % 4)) for i in range(M)]
with h5py.File(os.path.join(OUT, "lenient.h5"), "w") as f:
    g = table_group(f, "/t", M, ["v"])
    list_level(g.create_group("v"), small, True, leaf(np.int64), chunk=6, off_dtype=np.uint32, mask_dtype=np.uint8)
lenient = {
    "path": "/t",
    "nrows": M,
    "order": ["v"],
    "columns": {"v": {"arrow": "List(Int64)", "type": "list<int64>", "rows": cells(small, lambda x: x)}},
}

# ---------------------------------------------------------------------------
# Damaged list columns: each must give an error, never a panic.

corrupt = {}


def damaged(name, nrows, build, error="invalid"):
    with h5py.File(os.path.join(OUT, name), "w") as f:
        g = table_group(f, "/t", nrows, ["v"])
        build(g.create_group("v"))
    corrupt[name] = {"path": "/t", "column": "v", "error": error}


def raw_level(g, offsets, values, mask=None, off_dtype=np.uint64, values_dtype=np.int32):
    ascii_attr(g, "CLASS", "LIST_COLUMN")
    ascii_attr(g, "KIND", "OFFSETS")
    dataset(g, "VALUES", values, values_dtype)
    if mask is not None:
        dataset(g, "MASK", np.array(mask, dtype=np.int8), BOOL)
    dataset(g, "OFFSETS", np.array(offsets, dtype=off_dtype), off_dtype)


damaged("c_decrease.h5", 3, lambda g: raw_level(g, [0, 3, 2, 5], list(range(5))))
damaged("c_first.h5", 2, lambda g: raw_level(g, [1, 2, 3], list(range(5))))
damaged("c_past.h5", 3, lambda g: raw_level(g, [0, 1, 2, 9], list(range(5))))
damaged("c_mask_code.h5", 3, lambda g: raw_level(g, [0, 1, 2, 3], [1, 2, 3], mask=[1, 5, 1]))
damaged("c_null_nonempty.h5", 3, lambda g: raw_level(g, [0, 1, 2, 3], [1, 2, 3], mask=[1, 0, 1]))
damaged("c_short.h5", 4, lambda g: raw_level(g, [0, 1, 2, 3], [1, 2, 3]))
damaged("c_negative.h5", 2, lambda g: raw_level(g, [0, -1, 2], [1, 2], off_dtype=np.int64))
damaged("c_huge_offset.h5", 1, lambda g: raw_level(g, [0, 2**63 + 5], [1, 2]))


def huge(g):
    # A span of 2**40 elements over a VALUES dataset that claims that extent
    # but stores nothing: refused by the read limit before any allocation.
    ascii_attr(g, "CLASS", "LIST_COLUMN")
    ascii_attr(g, "KIND", "OFFSETS")
    g.create_dataset("VALUES", shape=(2**40,), maxshape=(None,), chunks=(1024,), dtype=np.int64)
    dataset(g, "OFFSETS", np.array([0, 2**40], dtype=np.uint64), np.uint64)


damaged("c_huge_span.h5", 1, huge, error="limit")


def strings_past(g):
    ascii_attr(g, "CLASS", "LIST_COLUMN")
    ascii_attr(g, "KIND", "OFFSETS")
    sv = g.create_group("VALUES")
    ascii_attr(sv, "CLASS", "STRING_VALUES")
    dataset(sv, "CHARS", np.frombuffer(b"abc", dtype=np.uint8), np.uint8)
    dataset(sv, "OFFSETS", np.array([0, 2, 40], dtype=np.uint64), np.uint64)
    dataset(g, "OFFSETS", np.array([0, 2], dtype=np.uint64), np.uint64)


damaged("c_strings_past.h5", 1, strings_past)


def nested_decrease(g):
    ascii_attr(g, "CLASS", "LIST_COLUMN")
    ascii_attr(g, "KIND", "OFFSETS")
    raw_level(g.create_group("VALUES"), [0, 2, 1], [1, 2, 3])
    dataset(g, "OFFSETS", np.array([0, 2], dtype=np.uint64), np.uint64)


damaged("c_nested_decrease.h5", 1, nested_decrease)

print(
    json.dumps(
        {"tables": {"lists.h5": main, "lenient.h5": lenient}, "corrupt": corrupt},
        ensure_ascii=False,
    )
)
