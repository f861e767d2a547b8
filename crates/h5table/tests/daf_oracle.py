"""h5py/numpy oracle of the Daf H5DF tests (tests/daf.rs).

The data set is described once, in `daf_spec.json` (dense values only: a
sparse property is given dense with `"sparse": true`). From it this script,
independently of the Rust code:

  check SPEC FILE GROUP  walks a file our writer made and asserts the layout
                         the H5DF text prescribes, item by item (members,
                         dtypes, shapes, contiguous 8-aligned storage, values,
                         1-based sparse indices computed here from the dense
                         values); prints "ok".
  write SPEC FILE GROUP  writes the data set with h5py following the text
                         (alignment (1, 8), `daf` = uint8 [1, 0], int64
                         1-based indices as Julia's SparseVector/SparseMatrixCSC,
                         h5py's own bool and vlen-string scalar types).
  bad DIR                writes one file per defect, listed on stdout as
                         `name group`.
"""
import json
import os
import sys

import h5py
import numpy as np

NP = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f32": np.float32, "f64": np.float64,
}


def fail(msg):
    raise AssertionError(msg)


def eq(a, b, what):
    if a != b:
        fail(f"{what}: {a!r} != {b!r}")


def index_dtype(maxval):
    for t in (np.uint8, np.uint16, np.uint32):
        if maxval <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.uint64)


def check_type(d, t, what):
    """The HDF5.jl type of Daf type `t`."""
    tid = d.id.get_type()
    if t == "bool":
        eq(tid.get_class(), h5py.h5t.BITFIELD, f"{what} class (bitfield)")
        eq(tid.get_size(), 1, f"{what} size")
    elif t == "str":
        info = h5py.check_string_dtype(d.dtype)
        if info is None:
            fail(f"{what}: not a string dtype ({d.dtype})")
        eq(info.encoding, "utf-8", f"{what} encoding")
        eq(info.length, None, f"{what}: variable length")
    else:
        eq(d.dtype, np.dtype(NP[t]).newbyteorder("<"), f"{what} dtype")


def contiguous(d, what):
    eq(d.id.get_create_plist().get_layout(), h5py.h5d.CONTIGUOUS, f"{what} layout")
    eq(d.compression, None, f"{what} compression")
    if d.size > 0:
        off = d.id.get_offset()
        if off is None or off % 8 != 0:
            fail(f"{what}: storage offset {off} not 8-aligned")


def values(d, t):
    v = d[()]
    if t == "str":
        return [x.decode("utf-8") if isinstance(x, bytes) else x for x in np.asarray(v).ravel().tolist()]
    if t == "bool":
        return [bool(x) for x in np.asarray(v).ravel().tolist()]
    return np.asarray(v).ravel().tolist()


def members(g, want, what):
    eq(sorted(g.keys()), sorted(want), f"{what} members")


def zero(t):
    return "" if t == "str" else (False if t == "bool" else 0)


def csc(rows, t, nr, nc):
    """1-based colptr, rowval and the values of the non-zeros, column by column."""
    colptr, rowval, nzval = [1], [], []
    for c in range(nc):
        for r in range(nr):
            if rows[r][c] != zero(t):
                rowval.append(r + 1)
                nzval.append(rows[r][c])
        colptr.append(len(rowval) + 1)
    return colptr, rowval, nzval


def check(spec, path, group):
    with h5py.File(path, "r") as f:
        root = f[group]
        members(root, ["daf", "scalars", "axes", "vectors", "matrices"], group)
        daf = root["daf"]
        assert isinstance(daf, h5py.Dataset)
        eq(daf.dtype, np.dtype("u1"), "daf dtype")
        eq(daf[()].tolist(), [1, 0], "daf version")

        sc = root["scalars"]
        members(sc, spec["scalars"].keys(), "scalars")
        for name, s in spec["scalars"].items():
            d = sc[name]
            what = f"scalars/{name}"
            eq(d.shape, (), f"{what} shape")
            t = s["type"]
            if t == "str":
                tid = d.id.get_type()
                eq(tid.get_class(), h5py.h5t.STRING, f"{what} class")
                eq(tid.is_variable_str(), False, f"{what}: fixed length (HDF5.jl)")
                eq(tid.get_cset(), h5py.h5t.CSET_UTF8, f"{what} cset")
                eq(tid.get_size(), max(len(s["value"].encode()), 1), f"{what} size")
                eq(d[()].decode("utf-8"), s["value"], f"{what} value")
            else:
                check_type(d, t, what)
                v = d[()]
                eq(bool(v) if t == "bool" else v.item(), s["value"], f"{what} value")

        ax = root["axes"]
        members(ax, spec["axes"].keys(), "axes")
        lens = {}
        for name, entries in spec["axes"].items():
            d = ax[name]
            check_type(d, "str", f"axes/{name}")
            eq(d.shape, (len(entries),), f"axes/{name} shape")
            eq(values(d, "str"), entries, f"axes/{name}")
            lens[name] = len(entries)

        vg = root["vectors"]
        members(vg, spec["axes"].keys(), "vectors")
        for axis in spec["axes"]:
            props = spec["vectors"].get(axis, {})
            members(vg[axis], props.keys(), f"vectors/{axis}")
            for name, p in props.items():
                what = f"vectors/{axis}/{name}"
                t, dense = p["type"], p["values"]
                eq(len(dense), lens[axis], f"{what}: spec length")
                obj = vg[axis][name]
                if not p.get("sparse"):
                    assert isinstance(obj, h5py.Dataset), what
                    check_type(obj, t, what)
                    eq(obj.shape, (len(dense),), f"{what} shape")
                    contiguous(obj, what)
                    eq(values(obj, t), dense, what)
                    continue
                assert isinstance(obj, h5py.Group), what
                nz = [i for i, x in enumerate(dense) if x != zero(t)]
                vals = [dense[i] for i in nz]
                all_true = t == "bool"  # the non-zero booleans are all true
                want = ["nzind"] + ([] if all_true else ["nztxt" if t == "str" else "nzval"])
                members(obj, want, what)
                ind = obj["nzind"]
                eq(ind.dtype, index_dtype(len(dense)), f"{what}/nzind dtype")
                contiguous(ind, f"{what}/nzind")
                eq(ind[()].tolist(), [i + 1 for i in nz], f"{what}/nzind (1-based)")
                if not all_true:
                    vd = obj[want[1]]
                    check_type(vd, t, f"{what}/{want[1]}")
                    if t != "str":
                        contiguous(vd, f"{what}/{want[1]}")
                    eq(values(vd, t), vals, f"{what}/{want[1]}")

        mg = root["matrices"]
        members(mg, spec["axes"].keys(), "matrices")
        for ra in spec["axes"]:
            members(mg[ra], spec["axes"].keys(), f"matrices/{ra}")
            for ca in spec["axes"]:
                props = spec["matrices"].get(ra, {}).get(ca, {})
                members(mg[ra][ca], props.keys(), f"matrices/{ra}/{ca}")
                for name, p in props.items():
                    what = f"matrices/{ra}/{ca}/{name}"
                    t, rows = p["type"], p["rows"]
                    nr, nc = lens[ra], lens[ca]
                    eq((len(rows), len(rows[0]) if rows else nc), (nr, nc), f"{what}: spec shape")
                    obj = mg[ra][ca][name]
                    colmajor = [rows[r][c] for c in range(nc) for r in range(nr)]
                    if not p.get("sparse"):
                        assert isinstance(obj, h5py.Dataset), what
                        check_type(obj, t, what)
                        # HDF5.jl reverses dimensions: [ncols, nrows], C order.
                        eq(obj.shape, (nc, nr), f"{what} shape")
                        contiguous(obj, what)
                        eq(values(obj, t), colmajor, what)
                        arr = obj[()]
                        eq(arr.T.tolist() if t != "bool" else [[bool(x) for x in r] for r in arr.T.tolist()],
                           rows, f"{what}.T")
                        continue
                    assert isinstance(obj, h5py.Group), what
                    colptr, rowval, nzval = csc(rows, t, nr, nc)
                    all_true = t == "bool"
                    want = ["colptr", "rowval"] + ([] if all_true else ["nztxt" if t == "str" else "nzval"])
                    members(obj, want, what)
                    it = index_dtype(max(nr, len(rowval) + 1))
                    for k, exp in (("colptr", colptr), ("rowval", rowval)):
                        eq(obj[k].dtype, it, f"{what}/{k} dtype")
                        contiguous(obj[k], f"{what}/{k}")
                        eq(obj[k][()].tolist(), exp, f"{what}/{k}")
                    if not all_true:
                        vd = obj[want[2]]
                        check_type(vd, t, f"{what}/{want[2]}")
                        eq(values(vd, t), nzval, f"{what}/{want[2]}")
    print("ok")


def h5_array(t, vals):
    if t == "str":
        return np.array(vals, dtype=h5py.string_dtype("utf-8"))
    return np.array(vals, dtype=NP[t])


def write(spec, path, group, f=None):
    own = f is None
    if own:
        f = h5py.File(path, "w", alignment_threshold=1, alignment_interval=8)
    root = f.require_group(group)
    root["daf"] = np.array([1, 0], dtype=np.uint8)
    sc = root.create_group("scalars")
    for name, s in spec["scalars"].items():
        t = s["type"]
        sc[name] = s["value"] if t == "str" else np.array(s["value"], dtype=NP[t])
    ax = root.create_group("axes")
    vg = root.create_group("vectors")
    mg = root.create_group("matrices")
    for name, entries in spec["axes"].items():
        ax[name] = h5_array("str", entries)
        vg.create_group(name)
    for ra in spec["axes"]:
        for ca in spec["axes"]:
            mg.require_group(ra).create_group(ca)
    for axis, props in spec["vectors"].items():
        for name, p in props.items():
            t, dense = p["type"], p["values"]
            if not p.get("sparse"):
                vg[axis][name] = h5_array(t, dense)
                continue
            g = vg[axis].create_group(name)
            nz = [i for i, x in enumerate(dense) if x != zero(t)]
            g["nzind"] = np.array([i + 1 for i in nz], dtype=np.int64)
            if t != "bool":
                g["nztxt" if t == "str" else "nzval"] = h5_array(t, [dense[i] for i in nz])
    for ra, by in spec["matrices"].items():
        for ca, props in by.items():
            for name, p in props.items():
                t, rows = p["type"], p["rows"]
                nr, nc = len(spec["axes"][ra]), len(spec["axes"][ca])
                if not p.get("sparse"):
                    mg[ra][ca][name] = h5_array(t, rows).T.copy() if nr and nc else h5_array(t, []).reshape(nc, nr)
                    continue
                g = mg[ra][ca].create_group(name)
                colptr, rowval, nzval = csc(rows, t, nr, nc)
                g["colptr"] = np.array(colptr, dtype=np.int64)
                g["rowval"] = np.array(rowval, dtype=np.int64)
                if t != "bool":
                    g["nztxt" if t == "str" else "nzval"] = h5_array(t, nzval)
    if own:
        f.close()


SMALL = {
    "scalars": {"n": {"type": "i32", "value": 3}},
    "axes": {"cell": ["a", "b", "c"], "gene": ["x", "y"]},
    "vectors": {"cell": {"v": {"type": "f32", "values": [0, 2.5, 0], "sparse": True},
                         "d": {"type": "i16", "values": [1, 2, 3]}}},
    "matrices": {"cell": {"gene": {"m": {"type": "f64", "rows": [[1, 0], [0, 2], [3, 0]], "sparse": True}}}},
}


def bad(directory):
    """One file per defect; each line of output: `name group`."""
    def make(name, edit):
        path = os.path.join(directory, name + ".h5")
        with h5py.File(path, "w", alignment_threshold=1, alignment_interval=8) as f:
            write(SMALL, path, "ds", f)
            edit(f["ds"])
        print(name, "/ds")

    def replace(g, name, data):
        del g[name]
        g[name] = data

    m = "matrices/cell/gene/m"
    make("colptr_out_of_range", lambda g: replace(g[m], "colptr", np.array([1, 3, 9], np.int64)))
    make("colptr_not_monotone", lambda g: replace(g[m], "colptr", np.array([1, 0, 4], np.int64)))
    make("colptr_not_from_1", lambda g: replace(g[m], "colptr", np.array([0, 2, 3], np.int64)))
    make("colptr_short", lambda g: replace(g[m], "colptr", np.array([1, 4], np.int64)))
    make("colptr_negative", lambda g: replace(g[m], "colptr", np.array([1, -2, 4], np.int64)))
    make("rowval_too_big", lambda g: replace(g[m], "rowval", np.array([1, 4, 2], np.int64)))
    make("rowval_zero", lambda g: replace(g[m], "rowval", np.array([0, 3, 2], np.int64)))
    make("nzval_short", lambda g: replace(g[m], "nzval", np.array([1.0, 3.0])))
    make("nzind_out_of_range", lambda g: replace(g["vectors/cell/v"], "nzind", np.array([4], np.int64)))
    make("nzind_zero", lambda g: replace(g["vectors/cell/v"], "nzind", np.array([0], np.int64)))
    make("nzind_float", lambda g: replace(g["vectors/cell/v"], "nzind", np.array([2.0])))
    make("nzval_length", lambda g: replace(g["vectors/cell/v"], "nzval", np.array([1.0, 2.0], np.float32)))
    make("dense_length", lambda g: replace(g["vectors/cell"], "d", np.array([1, 2], np.int16)))
    make("dense_matrix_shape", lambda g: g["matrices/gene/cell"].create_dataset("t", data=np.zeros((2, 3))))
    make("version_2_0", lambda g: replace(g, "daf", np.array([2, 0], np.uint8)))
    make("version_1_1", lambda g: replace(g, "daf", np.array([1, 1], np.uint8)))
    make("version_float", lambda g: replace(g, "daf", np.array([1.0, 0.0])))
    make("version_string", lambda g: replace(g, "daf", "1.0"))
    make("version_three", lambda g: replace(g, "daf", np.array([1, 0, 0], np.uint8)))
    make("version_missing", lambda g: g.__delitem__("daf"))
    make("version_group", lambda g: (g.__delitem__("daf"), g.create_group("daf")))
    make("scalar_compound", lambda g: g["scalars"].create_dataset(
        "c", data=np.zeros((), dtype=[("a", "i4"), ("b", "f8")])))
    make("no_axes_group", lambda g: g.__delitem__("axes"))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "bad":
        bad(sys.argv[2])
    else:
        with open(sys.argv[2]) as fh:
            spec = json.load(fh)
        if cmd == "check":
            check(spec, sys.argv[3], sys.argv[4])
        elif cmd == "write":
            write(spec, sys.argv[3], sys.argv[4])
            print("ok")
        else:
            fail(f"unknown command {cmd}")
