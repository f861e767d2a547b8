"""Oracle for tests/corpus.rs: columns of one HEP001 table read with h5py +
numpy (never with h5fmt), written with pyarrow as an Arrow IPC file that
DataFusion then reads with its own reader.

usage: ipc_oracle.py FILE.h5 TABLE_PATH OUT.arrow COLUMN[=CATEGORIES_PATH]...

Rows [0, NROWS). A missing row (HEP001 §8.5: the element's bytes equal the
fill value's, or any NaN under a NaN fill) is a null. Integer and float
columns keep their type; a categorical column (its labels in CATEGORIES_PATH,
relative to the table, default CATEGORIES/<name>__CATEGORIES: h5py cannot
read the H5T_STD_REF attribute that links them) becomes its labels as UTF-8
strings; fixed-length strings lose
their trailing padding.
"""
import sys

import h5py
try:
    import hdf5plugin  # noqa: F401  (registers zstd, lz4, blosc… filters)
except ImportError:
    pass
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc


def missing_mask(ds, raw):
    fill = np.array(ds.fillvalue, dtype=ds.dtype)
    if ds.dtype.kind == "f" and np.isnan(fill):
        return np.isnan(raw)
    a = np.ascontiguousarray(raw).view(np.uint8).reshape(len(raw), ds.dtype.itemsize)
    f = np.frombuffer(fill.tobytes(), dtype=np.uint8)
    return np.all(a == f, axis=1)


def column(group, spec, nrows):
    name, _, cats_path = spec.partition("=")
    ds = group[name]
    raw = ds[:nrows]
    miss = missing_mask(ds, raw)
    cats_path = cats_path or "CATEGORIES/" + name + "__CATEGORIES"
    if cats_path in group:
        labels = group[cats_path][()]
        out = []
        for code, m in zip(raw.tolist(), miss.tolist()):
            if m:
                out.append(None)
            else:
                lab = labels[code]
                out.append(lab.decode("utf-8").rstrip("\0") if isinstance(lab, bytes) else str(lab))
        return pa.array(out, type=pa.string())
    if ds.dtype.kind == "S":
        out = [None if m else v.rstrip(b"\0").decode("utf-8") for v, m in zip(raw.tolist(), miss.tolist())]
        return pa.array(out, type=pa.string())
    if ds.dtype.kind in "iuf":
        native = raw.astype(ds.dtype.newbyteorder("="))
        return pa.array(native, mask=miss)
    raise SystemExit(f"{name}: unsupported dtype {ds.dtype}")


def main():
    path, table, out, *cols = sys.argv[1:]
    with h5py.File(path, "r") as f:
        g = f[table]
        nrows = int(g.attrs["NROWS"])
        arrays = [column(g, c, nrows) for c in cols]
    t = pa.table(arrays, names=[c.partition("=")[0] for c in cols])
    with ipc.new_file(out, t.schema) as w:
        w.write_table(t)


main()
