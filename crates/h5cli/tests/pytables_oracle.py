"""PyTables nodes for tests/pytables_nodes (in the row_tables test binary):
what PyTables reads of every visible node of a file, as canonical JSON (the
forms of row_tables.py: NaN as "nan", byte strings as text, complex as
{"r", "i"}, nested compounds as objects; arrays flattened row-major, enums
by code, vlstring/object rows as hex of their bytes — an object row's bytes
read by h5py, and checked to unpickle to what PyTables returns).

  dump [--strict] FILE...   {file: {"format_version", "nodes": {path: node}} | {"error"}}
                            (--strict: PyTables warnings are errors)
  gen DIR                   write DIR/arrays.h5: every array class and pseudo-atom
  classes DIR               write DIR/classes.h5 (a node of each PyTables class, an indexed table,
                            a dimension scale, a plain dataset) and print, for every object, its
                            CLASS and VERSION as PyTables' _v_attrs reads them and the node class
                            PyTables' registry gives that CLASS (checked to be what get_node opens)
"""
import json, os, pickle, sys, warnings
import numpy as np, h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from row_tables import canon, columns  # noqa: E402

warnings.simplefilter("ignore")


def text(v):
    if v is None:
        return None
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).decode()
    if isinstance(v, np.ndarray):
        return text(v.reshape(-1)[0]) if v.size else ""
    return str(v)


def flat(a):
    a = np.asarray(a)
    if a.dtype.names:
        return [canon({n: x[n].tolist() for n in a.dtype.names}) for x in a.reshape(-1)]
    return [canon(x) for x in a.reshape(-1).tolist()]


def node_json(f, h, node):
    import tables
    a = node._v_attrs
    d = {"class": text(getattr(a, "CLASS", None)), "version": text(getattr(a, "VERSION", None)),
         "title": text(getattr(a, "TITLE", None))}
    if isinstance(node, tables.Group):
        return d
    d["flavor"] = text(getattr(a, "FLAVOR", None))
    if isinstance(node, tables.Table):
        enums = {n: node.get_enum(n) for n in node.colnames if node.coltypes.get(n) == "enum"}
        d.update(nrows=int(node.nrows),
                 columns=columns(node.read(), {n: (lambda e: lambda v: e(v))(e) for n, e in enums.items()}))
    elif isinstance(node, tables.VLArray):
        pseudo = text(getattr(a, "PSEUDOATOM", None)) or (
            {"VLString": "vlstring", "Object": "object"}.get(d["flavor"]) if f.format_version[:1] == "1" else None)
        rows = node.read()
        if pseudo == "object":
            raw = [bytes(np.asarray(r, np.uint8)) for r in h[node._v_pathname][:]]
            assert [pickle.loads(b) for b in raw] == list(rows), node._v_pathname
            rows = [b.hex() for b in raw]
        elif pseudo == "vlstring":
            rows = [bytes(r).hex() for r in rows]
        elif pseudo == "vlunicode":
            rows = [str(r) for r in rows]
        else:
            rows = [flat(r) for r in rows]
        d.update(pseudo=pseudo, nrows=int(node.nrows), rows=rows)
    elif isinstance(node, tables.Array):  # CArray and EArray too
        d.update(shape=list(node.shape), extdim=int(node.extdim) if node.extdim >= 0 else None,
                 values=flat(node.read()))
    return d


def dump(path, strict):
    import tables
    out = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error" if strict else "ignore")
            with tables.open_file(path, "r") as f, h5py.File(path, "r") as h:
                out["format_version"] = f.format_version
                nodes = {}
                for node in f.walk_nodes("/"):
                    if isinstance(node, tables.link.Link):
                        continue  # soft and external links: not followed
                    try:
                        nodes[node._v_pathname] = node_json(f, h, node)
                    except Exception as e:
                        if strict:
                            raise
                        nodes[node._v_pathname] = {"error": "%s: %s" % (type(e).__name__, e)}
                out["nodes"] = nodes
    except Exception as e:
        if strict:
            raise
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    return out


def gen(d):
    import tables
    rng = np.random.default_rng(16)
    with tables.open_file(d + "/arrays.h5", "w", title="arrays") as f:
        g = f.create_group("/", "g", "a group")
        f.create_array("/", "scalar", np.float32(2.5), "a scalar")
        f.create_array("/", "ints", np.arange(24, dtype=">i2").reshape(2, 3, 4), "big-endian")
        f.create_array(g, "pylist", [[1, 2], [3, 4]], "python flavor")
        f.create_array(g, "cplx", np.array([1 + 2j, np.nan - 1j]), "")
        f.create_array(g, "strs", np.array([b"a", b"bcd", b""]), "strings")
        c = f.create_carray("/", "carray", tables.Float64Atom(), (50, 7), "compressed",
                            filters=tables.Filters(5, "zlib", shuffle=True), chunkshape=(8, 7))
        c[:] = rng.normal(size=(50, 7))
        c[3, 3] = np.nan
        e = f.create_earray("/", "earray", tables.Int32Atom(), (3, 0, 2), "extdim 1", expectedrows=40)
        e.append(np.arange(3 * 17 * 2, dtype=np.int32).reshape(3, 17, 2))
        e.append(-np.ones((3, 5, 2), np.int32))
        colors = tables.Enum(["red", "green", "blue"])
        e2 = f.create_earray(g, "enum", tables.EnumAtom(colors, "red", base="uint8"), (0,), "enum earray")
        e2.append(np.array([0, 2, 1, 1], np.uint8))
        v = f.create_vlarray("/", "vl_int", tables.Int16Atom(), "ragged")
        for k in range(30):
            v.append(np.arange(k % 7, dtype=np.int16) - k)
        v = f.create_vlarray("/", "vl_shape", tables.Float32Atom(shape=(2,)), "rows of pairs")
        v.append(np.ones((3, 2), np.float32)); v.append(np.zeros((0, 2), np.float32)); v.append([[1.5, np.nan]])
        v = f.create_vlarray("/", "vl_str", tables.VLStringAtom(), "vlstring")
        for s in [b"", b"abc", "héllo".encode(), b"\x00\xff"]:
            v.append(s)
        v = f.create_vlarray("/", "vl_uni", tables.VLUnicodeAtom(), "vlunicode")
        for s in ["", "abc", "héllo wörld", "\U0001F600 ok"]:
            v.append(s)
        v = f.create_vlarray("/", "vl_obj", tables.ObjectAtom(), "object")
        for o in [{"a": 1}, [1, 2.5, "x"], None, (b"z",)]:
            v.append(o)
    # Broken nodes, each to be refused naming it.
    with h5py.File(d + "/bad.h5", "w") as h:
        def node(name, cls, ver, data, **kw):
            ds = h.create_dataset(name, data=data, **kw)
            ds.attrs["CLASS"] = np.bytes_(cls); ds.attrs["VERSION"] = np.bytes_(ver)
            return ds
        node("class_int", b"ARRAY", b"2.4", np.arange(3)).attrs["CLASS"] = np.int32(7)
        node("extdim_far", b"EARRAY", b"1.4", np.zeros((2, 3)), maxshape=(None, 3)).attrs["EXTDIM"] = np.int32(5)
        node("extdim_fixed", b"EARRAY", b"1.4", np.zeros((2, 3)), maxshape=(None, 3)).attrs["EXTDIM"] = np.int32(1)
        node("extdim_str", b"EARRAY", b"1.4", np.zeros((2, 3)), maxshape=(None, 3)).attrs["EXTDIM"] = np.bytes_(b"0")
        node("title_float", b"CARRAY", b"1.1", np.zeros(4), chunks=(2,)).attrs["TITLE"] = 1.5
        node("version_new", b"VLARRAY", b"9.0", np.zeros(2))
        vl = node("pseudo_bad", b"VLARRAY", b"1.4", None, shape=(1,), dtype=h5py.vlen_dtype(np.float64))
        vl.attrs["PSEUDOATOM"] = np.bytes_(b"vlunicode")
        g = node("garbage", b"VLARRAY", b"1.4", None, shape=(2,), dtype=h5py.vlen_dtype(np.uint8))
        g[0] = np.arange(5, dtype=np.uint8); g[1] = np.arange(3, dtype=np.uint8)
        g.attrs["PSEUDOATOM"] = np.bytes_(b"object")
        offset = g.id.get_offset()
    # Row 1's heap collection address (after its 4-byte length) → past the end of file.
    with open(d + "/bad.h5", "r+b") as f:
        f.seek(offset + 16 + 4)
        f.write((2**40).to_bytes(8, "little"))


def classes(d):
    import tables
    from tables.registry import class_id_dict
    path = d + "/classes.h5"
    with tables.open_file(path, "w", title="classes") as f:
        g = f.create_group("/", "g", "a group")
        t = f.create_table(g, "t", {"a": tables.Int32Col(), "b": tables.Float64Col()}, "table")
        t.append([(i, i / 2) for i in range(100)])
        t.cols.a.create_index()
        f.create_array("/", "arr", np.arange(6), "array")
        f.create_carray("/", "carr", tables.Float32Atom(), (4, 4), "carray")
        f.create_earray(g, "earr", tables.Int16Atom(), (0, 3), "earray").append(np.zeros((2, 3), np.int16))
        f.create_vlarray("/", "vlarr", tables.VLStringAtom(), "vlarray").append(b"x")
    with h5py.File(path, "r+") as h:
        h["plain"] = np.arange(3)
        h["scale"] = np.arange(4.0)
        h["scale"].make_scale("x")
    out = {}
    with tables.open_file(path, "r") as f, h5py.File(path, "r") as h:
        paths = ["/"]
        h.visit(lambda p: paths.append("/" + p))
        for p in paths:
            node = f.get_node(p)
            a = node._v_attrs
            cls = text(getattr(a, "CLASS", None))
            reg = class_id_dict.get(cls)
            assert reg is None or isinstance(node, reg), (p, cls, type(node))
            out[p] = {"CLASS": cls, "VERSION": text(getattr(a, "VERSION", None)),
                      "class": reg.__name__ if reg else None}
    return out


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "dump":
        strict = sys.argv[2] == "--strict"
        files = sys.argv[3:] if strict else sys.argv[2:]
        print(json.dumps({p: dump(p, strict) for p in files}, default=lambda o: o.item()))
    elif cmd == "gen":
        gen(sys.argv[2])
    elif cmd == "classes":
        print(json.dumps(classes(sys.argv[2])))
