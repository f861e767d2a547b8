"""Row tables for tests/row_tables.rs, made by PyTables and by libhdf5_hl's
H5TB API (through ctypes, from the h5py wheel), and their values as those
libraries read them, in a canonical JSON form (NaN as "nan", bytes as text,
arrays flattened, enums by member name, nested compounds as objects).

  gen DIR                 write DIR/pt.h5 (/g/t, /g/flat), DIR/tb.h5 (/tbl) and DIR/*.json
  read_pt FILE PATH       print PyTables' read of FILE:PATH as canonical JSON (warnings are errors)
  read_tb FILE PATH       print H5TBread_table's read as canonical JSON, and the attributes
  make_tb_like FILE PATH OUT  H5TBmake_table of OUT:/ref with FILE:PATH's dtype and fills (attribute oracle)
  read_many               stdin: JSON [[FILE, PATH, HOW], ...]; print a JSON list of reads, HOW being
                          "source" (PyTables when the dataset has NROWS, else h5py; warnings ignored:
                          old files warn), "pt" (read_pt) or "tb" (read_tb); a failed read is {"error"}
"""
import ctypes, glob, json, os, sys, warnings
import numpy as np, h5py

warnings.simplefilter("error")


def hl():
    lib = glob.glob(os.path.join(os.path.dirname(h5py.__file__), "..", "h5py.libs", "libhdf5_hl*"))
    lib += glob.glob(os.path.join(os.path.dirname(h5py.__file__), ".libs", "libhdf5_hl*"))
    L = ctypes.CDLL(lib[0])
    hid, sz, u64 = ctypes.c_int64, ctypes.c_size_t, ctypes.c_uint64
    P = ctypes.POINTER
    L.H5TBmake_table.argtypes = [ctypes.c_char_p, hid, ctypes.c_char_p, u64, u64, sz, P(ctypes.c_char_p),
                                 P(sz), P(hid), u64, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    L.H5TBappend_records.argtypes = [hid, ctypes.c_char_p, u64, sz, P(sz), P(sz), ctypes.c_void_p]
    L.H5TBget_table_info.argtypes = [hid, ctypes.c_char_p, P(u64), P(u64)]
    L.H5TBread_table.argtypes = [hid, ctypes.c_char_p, sz, P(sz), P(sz), ctypes.c_void_p]
    return L


def canon(v):
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    if isinstance(v, np.ndarray):
        return canon(v.tolist())
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).rstrip(b"\0").decode()
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (complex, np.complexfloating)):
        return {"r": canon(float(v.real)), "i": canon(float(v.imag))}
    if isinstance(v, (float, np.floating)):
        return "nan" if v != v else float(v)
    raise TypeError(type(v))


def column(a, dt, enum=None):
    """One column of a structured array as canonical values."""
    if dt.names:
        subs = {n: column(a[n], dt.fields[n][0]) for n in dt.names}
        return [{n: subs[n][i] for n in dt.names} for i in range(len(a))]
    if dt.subdtype:
        return [canon(np.asarray(x).reshape(-1).tolist()) for x in a]
    if enum is not None:
        return [enum(int(x)) for x in a]
    return [canon(x.item() if hasattr(x, "item") else x) for x in a]


def columns(data, enums={}):
    return {n: column(data[n], data.dtype.fields[n][0], enums.get(n)) for n in data.dtype.names}


def gen(d):
    import tables
    class Inner(tables.IsDescription):
        _v_pos = 8
        x = tables.Float32Col(pos=0)
        y = tables.Int16Col(pos=1, dflt=-5)
    colors = tables.Enum(["red", "green", "blue"])
    class Row(tables.IsDescription):
        i8 = tables.Int8Col(pos=0, dflt=-1)
        u64 = tables.UInt64Col(pos=1, dflt=7)
        f64 = tables.Float64Col(pos=2, dflt=1.5)
        b = tables.BoolCol(pos=3, dflt=True)
        s = tables.StringCol(6, pos=4, dflt=b"ab")
        arr = tables.Int32Col(shape=(2, 3), pos=5, dflt=3)
        e = tables.EnumCol(colors, "green", base="uint8", pos=6)
        c = tables.ComplexCol(16, pos=7)
        nest = Inner()
    class Flat(tables.IsDescription):
        i16 = tables.Int16Col(pos=0, dflt=-2)
        u32 = tables.UInt32Col(pos=1, dflt=9)
        f32 = tables.Float32Col(pos=2, dflt=0.5)
        s = tables.StringCol(5, pos=3, dflt=b"zz")
        arr = tables.Float64Col(shape=(3,), pos=4, dflt=-1.0)
    n = 1000
    rng = np.random.default_rng(16)
    with tables.open_file(d + "/pt.h5", "w", title="pt") as f:
        t = f.create_table("/g", "t", Row, "nested table", createparents=True, chunkshape=(64,))
        r = t.row
        for k in range(n):
            r["i8"] = k % 200 - 100; r["u64"] = 2**63 + k * 7919; r["f64"] = np.nan if k % 97 == 0 else k * 0.25
            r["b"] = k % 3 == 0; r["s"] = b"s%d" % (k % 1000); r["arr"] = np.arange(6).reshape(2, 3) * k
            r["e"] = k % 3; r["c"] = complex(k, -k / 4); r["nest/x"] = k / 3; r["nest/y"] = -k
            r.append()
        t.flush()
        t = f.create_table("/g", "flat", Flat, "", chunkshape=(100,))  # "": a null-dataspace TITLE
        rows = np.zeros(n, t.dtype)
        rows["i16"] = rng.integers(-30000, 30000, n); rows["u32"] = rng.integers(0, 2**32 - 1, n)
        rows["f32"] = rng.normal(size=n).astype(np.float32); rows["s"] = [b"v%d" % i for i in rng.integers(0, 99999, n)]
        rows["s"][::50] = b""
        rows["arr"] = rng.normal(size=(n, 3))
        rows["i16"][5] = -2  # the FIELD_0_FILL value: a real value here, so not the HEP001 fill
        t.append(rows)
        t.flush()
        # Times (H5T_TIME members) and a nested description before columns: PyTables numbers
        # FIELD_<n>_FILL breadth first (t32 is FIELD_0, tarr FIELD_1, inner/t64 FIELD_2).
        class Inner2(tables.IsDescription):
            _v_pos = 0
            t64 = tables.Time64Col(pos=0, dflt=-1.25)
        class Times(tables.IsDescription):
            inner = Inner2()
            t32 = tables.Time32Col(pos=1, dflt=-7)
            tarr = tables.Time64Col(shape=(2,), pos=2, dflt=0.5)
        t = f.create_table("/g", "times", Times, "times")
        r = t.row
        for k in range(50):
            r["inner/t64"] = 1178896298.832258 + k * 3600.25
            r["t32"] = 1178896298 - k * 86400
            r["tarr"] = [k * 0.5, -1e9 - k * 0.25]
            r.append()
        t.flush()
        # Two levels of nesting (ints, floats, an array), a nested description between columns:
        # its columns' fills are numbered after the top level's, breadth first.
        class Deep(tables.IsDescription):
            _v_pos = 1
            z = tables.Int8Col(pos=0, dflt=3)
            w = tables.Float32Col(pos=1, dflt=2.5)
        class Mid(tables.IsDescription):
            _v_pos = 1
            x = tables.Float64Col(pos=0, dflt=-1.5)
            deep = Deep()
            y = tables.UInt16Col(pos=2, dflt=9)
            v = tables.Int64Col(shape=(2,), pos=3, dflt=-8)
        class Nested(tables.IsDescription):
            a = tables.Int32Col(pos=0, dflt=-4)
            mid = Mid()
            b = tables.Float64Col(pos=2, dflt=0.25)
        t = f.create_table("/g", "deep", Nested, "two levels", chunkshape=(128,))
        rows = np.zeros(700, t.dtype)
        rows["a"] = np.arange(700) - 350; rows["a"][346] = 1000  # a's default -4 held by no row
        rows["b"] = rng.normal(size=700); rows["b"][::70] = np.nan
        rows["mid"]["x"] = rng.normal(size=700) * 1e6; rows["mid"]["y"] = np.arange(700) * 90
        rows["mid"]["v"] = rng.integers(-2**62, 2**62, (700, 2))
        rows["mid"]["deep"]["z"] = np.arange(700) % 251 - 125; rows["mid"]["deep"]["w"] = np.arange(700) / 7
        rows["mid"]["deep"]["z"][3] = 3  # the z default, a value here: the record still differs
        t.append(rows)
        t.flush()
        # A string inside a nested description: refused by the import (HEP001 §8.3).
        class WithStr(tables.IsDescription):
            _v_pos = 0
            s = tables.StringCol(4, pos=0)
            k = tables.Int32Col(pos=1)
        class StrRow(tables.IsDescription):
            n = WithStr()
            i = tables.Int32Col(pos=1)
        t = f.create_table("/g", "nest_str", StrRow, "")
        t.append([((b"ab", 1), 2)])
        t.flush()
    with open(d + "/pt.json", "w") as o:
        json.dump({p: read_pt(d + "/pt.h5", p) for p in ["/g/t", "/g/flat", "/g/times", "/g/deep"]}, o)
    # H5TB: C-struct offsets with padding, a big-endian member, fills, two appends.
    dt = np.dtype({"names": ["id", "x", "s", "v", "be"],
                   "formats": ["<i4", "<f8", "S5", ("<u2", (3,)), ">i8"],
                   "offsets": [0, 8, 16, 22, 32], "itemsize": 40})
    L = hl()
    f = h5py.File(d + "/tb.h5", "w")
    k = len(dt.names)
    types = [h5py.h5t.py_create(dt.fields[n][0]) for n in dt.names]
    names = (ctypes.c_char_p * k)(*[n.encode() for n in dt.names])
    offs = (ctypes.c_size_t * k)(*[dt.fields[n][1] for n in dt.names])
    sizes = (ctypes.c_size_t * k)(*[dt.fields[n][0].itemsize for n in dt.names])
    data = np.zeros(700, dt)
    data["id"] = np.arange(700); data["x"] = np.arange(700) / 2; data["x"][3] = np.nan
    data["s"] = [b"r%d" % i for i in range(700)]; data["s"][7] = b""; data["v"] = np.arange(2100).reshape(700, 3)
    data["be"] = -np.arange(700) * 10**12
    fill = np.zeros(1, dt); fill["id"] = -1; fill["x"] = 0.3; fill["s"] = b"?"; fill["be"] = 42
    assert L.H5TBmake_table(b"tb title", f.id.id, b"tbl", k, 500, dt.itemsize, names, offs,
                            (ctypes.c_int64 * k)(*[t.id for t in types]), 128, fill.ctypes.data, 1,
                            data[:500].ctypes.data) >= 0
    assert L.H5TBappend_records(f.id.id, b"tbl", 200, dt.itemsize, offs, sizes, data[500:].ctypes.data) >= 0
    f.close()
    with open(d + "/tb.json", "w") as o:
        json.dump({"/tbl": read_tb(d + "/tb.h5", "/tbl")}, o)
    # Broken tables: each must be refused with an error naming the dataset.
    with h5py.File(d + "/bad.h5", "w") as f:
        rows = np.zeros(4, [("a", "<i4"), ("b", "<f8")])
        for name in ["nrows_past", "name_mismatch", "nrows_float", "class_int", "fill_type"]:
            ds = f.create_dataset(name, data=rows, chunks=(2,), maxshape=(None,))
            ds.attrs["CLASS"] = np.bytes_(b"TABLE"); ds.attrs["VERSION"] = np.bytes_(b"2.7")
            ds.attrs["FIELD_0_NAME"] = np.bytes_(b"a"); ds.attrs["FIELD_1_NAME"] = np.bytes_(b"b")
            ds.attrs["NROWS"] = np.int64(4)
        f["nrows_past"].attrs["NROWS"] = np.int64(5)
        f["name_mismatch"].attrs["FIELD_1_NAME"] = np.bytes_(b"c")
        f["nrows_float"].attrs["NROWS"] = 4.0
        f["class_int"].attrs["CLASS"] = np.int32(1)
        f["fill_type"].attrs["FIELD_0_FILL"] = np.bytes_(b"x")


def read_pt(path, node, ours=True):
    import tables
    with tables.open_file(path, "r") as f:
        t = f.get_node(node)
        # (Old files' CLASS may read as a NUL-padded str: only ours are held to "TABLE".)
        assert not ours or t._v_attrs.CLASS == "TABLE", t._v_attrs.CLASS
        enums = {n: t.get_enum(n) for n in t.colnames if t.coltypes.get(n) == "enum"}
        return {"columns": columns(t.read(), {n: (lambda e: lambda v: e(v))(e) for n, e in enums.items()}),
                "nrows": int(t.nrows), "title": t.title,
                "fills": {n: fill(v) for n, v in t.coldflts.items() if "/" not in n},
                "nested_fills": {n: fill(v) for n, v in t.coldflts.items() if "/" in n}}


def fill(v):
    a = np.asarray(v)
    return canon(a.reshape(-1).tolist() if a.ndim else a.item())


def attrs(ds):
    out = {}
    for k in ds.attrs:
        a = ds.attrs.get_id(k); t = a.get_type()
        d = {"class": t.get_class(), "size": t.get_size(), "shape": list(a.shape or [])}
        if isinstance(t, h5py.h5t.TypeStringID):
            d.update(pad=t.get_strpad(), cset=t.get_cset(), value=bytes(ds.attrs[k]).decode())
        else:
            d["value"] = canon(np.asarray(ds.attrs[k]).tolist())
        out[k] = d
    return out


def read_tb(path, node):
    L = hl()
    f = h5py.File(path, "r")
    ds = f[node]
    dt = ds.dtype.newbyteorder("=")  # H5TBread_table converts to native types
    # ... and a nested compound to H5Tget_native_type's, which is C-aligned (libhdf5 cannot
    # shrink it to the packed size): the buffer holds those as aligned structs.
    dt = np.dtype([(n, np.dtype(dt.fields[n][0].descr, align=True) if dt.fields[n][0].names
                    else dt.fields[n][0]) for n in dt.names])
    nf, nr = ctypes.c_uint64(), ctypes.c_uint64()
    assert L.H5TBget_table_info(f.id.id, node.encode(), ctypes.byref(nf), ctypes.byref(nr)) >= 0
    buf = np.zeros(nr.value, dt)
    k = len(dt.names)
    offs = (ctypes.c_size_t * k)(*[dt.fields[n][1] for n in dt.names])
    sizes = (ctypes.c_size_t * k)(*[dt.fields[n][0].itemsize for n in dt.names])
    assert L.H5TBread_table(f.id.id, node.encode(), dt.itemsize, offs, sizes, buf.ctypes.data) >= 0
    out = {"columns": columns(buf), "nrows": nr.value, "nfields": nf.value, "attrs": attrs(ds),
           "chunked": ds.chunks is not None, "maxshape": list(ds.maxshape)}
    f.close()
    return out


def make_tb_like(path, node, out):
    """libhdf5_hl's own attributes for a table of the same dtype, title and fills."""
    L = hl()
    src = h5py.File(path, "r")
    ds = src[node]
    dt = ds.dtype
    k = len(dt.names)
    fill = np.zeros(1, dt)
    for i, n in enumerate(dt.names):
        fill[n] = ds.attrs["FIELD_%d_FILL" % i]
    title = bytes(ds.attrs["TITLE"])
    ftype = ds.id.get_type()
    types = [ftype.get_member_type(i) for i in range(k)]
    src.close()
    f = h5py.File(out, "w")
    names = (ctypes.c_char_p * k)(*[n.encode() for n in dt.names])
    offs = (ctypes.c_size_t * k)(*[dt.fields[n][1] for n in dt.names])
    assert L.H5TBmake_table(title, f.id.id, b"ref", k, 0, dt.itemsize, names, offs,
                            (ctypes.c_int64 * k)(*[t.id for t in types]), 16, fill.ctypes.data, 0, None) >= 0
    r = attrs(f["ref"])
    f.close()
    return r


def read_source(path, node):
    """A table of someone else's file: PyTables' read for a PyTables table (with its column
    defaults), h5py's for an H5TB one (libhdf5 converts the rows to h5py's types)."""
    with h5py.File(path, "r") as f:
        pytables = "NROWS" in f[node].attrs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pytables:
            out = read_pt(path, node, ours=False)
            out["reader"] = "PyTables"
            # PyTables keeps the terminator of a NULLTERM UTF-8 TITLE (python3.h5: "…1\0");
            # libhdf5 and h5py end the string there.
            out["title"] = out["title"].rstrip("\0")
            return out
        with h5py.File(path, "r") as f:
            ds = f[node]
            title = ds.attrs.get("TITLE", b"")
            return {"columns": columns(ds[:]), "nrows": ds.shape[0], "reader": "h5py",
                    "title": title.decode() if isinstance(title, bytes) else str(title)}


def read_many(jobs):
    out = []
    for path, node, how in jobs:
        try:
            out.append({"source": read_source, "pt": read_pt, "tb": read_tb}[how](path, node))
        except Exception as e:
            out.append({"error": "%s: %s" % (type(e).__name__, e)})
    return out


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2])
    elif cmd == "read_pt":
        print(json.dumps(read_pt(sys.argv[2], sys.argv[3])))
    elif cmd == "read_tb":
        print(json.dumps(read_tb(sys.argv[2], sys.argv[3])))
    elif cmd == "read_many":
        print(json.dumps(read_many(json.load(sys.stdin))))
    elif cmd == "make_tb_like":
        print(json.dumps(make_tb_like(sys.argv[2], sys.argv[3], sys.argv[4])))
