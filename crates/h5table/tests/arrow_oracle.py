"""Oracle for tests/arrow_*.rs: the cells of every column of one HEP001 table,
read with h5py + numpy (never with h5fmt), as canonical JSON.

usage: arrow_oracle.py FILE.h5 TABLE_PATH [EXPECTED.json]  ->  {"nrows": N, "columns": {name: {"kind": k, "cells": [...]}}}

Canonical cells: null for a missing row (canonical missing test of HEP001 §8.5,
computed here with numpy on the raw element bytes, isnan for a NaN fill);
integers as JSON integers; floats as the hex string of their IEEE bits at the
column's width; strings as text (fixed strings without trailing padding);
categorical cells as their label's canonical cell; enum cells as the member
name (the FALSE/TRUE boolean enum as true/false); opaque and other types as
the hex of their element bytes; compounds as a list of member cells.
"""
import json
import sys

import h5py
import hdf5plugin  # noqa: F401  (registers zstd, lz4, blosc… filters)
import numpy as np


def float_bits(x, dt):
    size = dt.itemsize
    u = {2: "<u2", 4: "<u4", 8: "<u8"}[size]
    return format(int(np.array(x, dtype=dt.newbyteorder("<")).view(u)), "x")


def is_bool_enum(dt):
    e = h5py.check_enum_dtype(dt)
    return e is not None and e == {"FALSE": 0, "TRUE": 1} and dt == np.int8


def cell(x, dt, h5t):
    """One element as a canonical cell (not missing)."""
    vlen = h5py.check_string_dtype(dt)
    if vlen is not None and dt.kind == "O":
        b = x if isinstance(x, bytes) else x.encode("utf-8")
        return b.decode("utf-8")
    if dt.kind == "S":
        b = bytes(x)
        pad = h5t.get_strpad() if h5t is not None else h5py.h5t.STR_NULLPAD
        b = b.rstrip(b" ") if pad == h5py.h5t.STR_SPACEPAD else b.rstrip(b"\0")
        return b.decode("utf-8")
    e = h5py.check_enum_dtype(dt)
    if e is not None:
        if is_bool_enum(dt):
            return bool(int(x))
        names = {v: k for k, v in e.items()}
        return names[int(x)]
    if dt.names is not None:
        out = []
        for i, n in enumerate(dt.names):
            sub = h5t.get_member_type(i) if h5t is not None else None
            out.append(cell(x[n], dt.fields[n][0], sub))
        return out
    if dt.kind in "iu":
        return int(x)
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        return float_bits(x, dt)
    # opaque (V) and anything else: the element bytes
    return np.array(x, dtype=dt).tobytes().hex()


def read_rows(ds, nrows):
    """Rows [0, nrows): h5py for variable-length types, else the element
    bytes as stored (h5py has no conversion for opaque members) viewed
    through numpy's dtype of the file type."""
    if nrows == 0:
        return np.zeros(0, dtype=ds.dtype)
    if h5py.check_vlen_dtype(ds.dtype) or h5py.check_string_dtype(ds.dtype) and ds.dtype.kind == "O":
        return ds[:nrows]
    h5t = ds.id.get_type()
    size = h5t.get_size()
    buf = np.zeros(nrows, dtype=np.dtype(("V", size)))
    fspace = ds.id.get_space()
    fspace.select_hyperslab((0,), (nrows,))
    mspace = h5py.h5s.create_simple((nrows,))
    ds.id.read(mspace, fspace, buf, mtype=h5t)
    return np.frombuffer(buf.tobytes(), dtype=ds.dtype)


def column(f, ds, nrows, labels, fill_hex):
    dt = ds.dtype
    h5t = ds.id.get_type()
    data = read_rows(ds, nrows)
    plist = ds.id.get_create_plist()
    user_fill = plist.fill_value_defined() == h5py.h5d.FILL_VALUE_USER_DEFINED
    size = dt.itemsize
    if not user_fill:
        missing = [False] * nrows
    elif dt.kind == "O":
        fill = ds.fillvalue
        fb = fill if isinstance(fill, bytes) else str(fill).encode()
        missing = [
            (v if isinstance(v, bytes) else v.encode("utf-8")) == fb for v in data
        ]
    else:
        if fill_hex is not None:
            fbytes = bytes.fromhex(fill_hex)
        else:
            fbytes = np.array(ds.fillvalue, dtype=dt).tobytes()
        raw = data.tobytes()
        if dt.kind == "f" and np.isnan(np.frombuffer(fbytes, dtype=dt)[0]):
            missing = list(np.isnan(data))
        else:
            missing = [raw[i * size : (i + 1) * size] == fbytes for i in range(nrows)]
    kind = "categorical" if labels is not None else "other"
    cells = []
    for i in range(nrows):
        if missing[i]:
            cells.append(None)
        elif labels is not None:
            cells.append(labels[int(data[i])])
        else:
            cells.append(cell(data[i], dt, h5t))
    return {"kind": kind, "dtype": str(dt), "cells": cells}


def main():
    path, table = sys.argv[1], sys.argv[2]
    # Category labels from the corpus's expected answers: h5py cannot read
    # the H5T_STD_REF CATEGORIES attribute.
    cats, fills = {}, {}
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as e:
            exp = json.load(e)
        for c in exp["tables"].get(table, {}).get("columns", []):
            if c.get("categories") is not None:
                cats[c["name"]] = c["categories"]
            if c.get("fill_hex") is not None:
                fills[c["name"]] = c["fill_hex"]
    with h5py.File(path, "r") as f:
        g = f[table]
        nrows = int(g.attrs["NROWS"])
        cols = {}
        for name, obj in g.items():
            if isinstance(obj, h5py.Dataset) and obj.ndim == 1:
                cols[name] = column(f, obj, nrows, cats.get(name), fills.get(name))
        json.dump({"nrows": nrows, "columns": cols}, sys.stdout)


main()
