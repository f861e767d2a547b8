"""Generator of h5col_lists.h5 and h5col_lists.json: a table with list
columns and boolean columns written by h5col 0.4.0 itself (the HDF Group's
implementation of the upstream H5Col draft), and what h5col reads back.

h5col is not on PyPI, so it is not in the project venv: run this by hand
with h5col 0.4.0's sources on PYTHONPATH (HDFGroup/h5col, tag v0.4.0, commit
81da0606993976261cc064588fac601b3e68d5cc; it needs h5py, numpy, hdf5plugin,
pydantic, which the venv has):

    git -C h5col archive v0.4.0 src | tar -x -C /tmp/h5col-0.4.0
    PYTHONPATH=/tmp/h5col-0.4.0/src .venv/bin/python \
        crates/h5table/tests/data/h5col_lists.py crates/h5table/tests/data

The expected JSON is h5col's own reading (Table.column_names, and each
column's read(): Python lists with None for null lists and missing
elements), in the cell form of list_oracle.py (floats as the hex of their
IEEE bits at the element width). tests/list_columns.rs compares our reading
with it.
"""
import json
import os
import sys

import h5col
import h5py
import numpy as np
from h5col import (
    ColumnSpec,
    LeafValuesSpec,
    ListColumnSpec,
    NestedListSpec,
    StringValuesSpec,
    Table,
    bool_dtype,
)

assert h5col.__version__ == "0.4.0", h5col.__version__
OUT = sys.argv[1]
path = os.path.join(OUT, "h5col_lists.h5")
rng = np.random.default_rng(4)
N = 40

specs = [
    ColumnSpec(name="event", dtype="int64", chunks=16),
    ColumnSpec(name="passed", dtype=bool_dtype(), chunks=16),
    ListColumnSpec(
        name="hits",
        values=LeafValuesSpec(dtype="int32", chunks=16),
        nullable=True,
        chunks=16,
        units="mm",
    ),
    ListColumnSpec(
        name="energies",
        values=LeafValuesSpec(dtype="float64", chunks=16),
        chunks=16,
    ),
    ListColumnSpec(
        name="tags",
        values=StringValuesSpec(nullable=True, chunks=16),
        nullable=True,
        chunks=16,
    ),
    ListColumnSpec(
        name="tracks",
        values=NestedListSpec(
            values=LeafValuesSpec(dtype="int16", chunks=16), nullable=True, chunks=16
        ),
        chunks=16,
    ),
    ListColumnSpec(
        name="flags", values=LeafValuesSpec(dtype=bool_dtype(), chunks=16), chunks=16
    ),
]
order = ["event", "hits", "passed", "tags", "energies", "tracks", "flags"]


def rows(maker, nullable, maxlen=5):
    out = []
    for _ in range(N):
        r = rng.random()
        if nullable and r < 0.15:
            out.append(None)
        elif r < 0.3:
            out.append([])
        else:
            out.append([maker() for _ in range(int(rng.integers(1, maxlen + 1)))])
    return out


vocab = ["", "mu", "e", "ü", "a,b", 'q"']
data = {
    "event": np.arange(N, dtype=np.int64) * 10,
    "passed": rng.random(N) < 0.5,
    "hits": rows(lambda: None if rng.random() < 0.1 else int(rng.integers(-50, 50)), True),
    "energies": rows(lambda: None if rng.random() < 0.1 else float(rng.normal()), False),
    "tags": rows(lambda: None if rng.random() < 0.15 else vocab[int(rng.integers(0, len(vocab)))], True),
    "tracks": rows(
        lambda: None
        if rng.random() < 0.15
        else [int(rng.integers(-9, 9)) for _ in range(int(rng.integers(0, 3)))],
        False,
    ),
    "flags": rows(lambda: bool(rng.random() < 0.5), False),
}

with h5py.File(path, "w") as f:
    # Small chunks for the MASK datasets too (they take no chunk size of
    # their own), so that the file stays small.
    t = Table.create(
        f.create_group("events"), specs, column_order=order, default_chunk_bytes=64
    )
    # Two appends, so that every level has been extended once.
    half = N // 2
    t.append({k: v[:half] for k, v in data.items()})
    t.append({k: v[half:] for k, v in data.items()})


def cell(x, width=None):
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [cell(y, width) for y in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        dt = {4: np.float32, 8: np.float64}[width or 8]
        u = {4: "<u4", 8: "<u8"}[width or 8]
        return format(int(np.array(x, dtype=dt).view(u)), "x")
    if isinstance(x, bytes):
        return x.decode("utf-8")
    return str(x)


with h5py.File(path, "r") as f:
    t = Table.open(f["events"])
    expected = {
        "producer": "h5col " + h5col.__version__,
        "path": "/events",
        "nrows": int(t.nrows),
        "order": list(t.column_names),
        "columns": {},
    }
    for name in t.column_names:
        col = t[name]
        vals = col.read()
        if isinstance(vals, np.ma.MaskedArray):
            vals = [None if m else v for v, m in zip(vals.data.tolist(), np.ma.getmaskarray(vals))]
        elif isinstance(vals, np.ndarray):
            vals = vals.tolist()
        expected["columns"][name] = [cell(v) for v in vals]

with open(os.path.join(OUT, "h5col_lists.json"), "w") as f:
    json.dump(expected, f, ensure_ascii=False, indent=0)
    f.write("\n")
print("wrote", path, os.path.getsize(path), "bytes")
