#!/usr/bin/env python3
"""Generate h5fmt's small test files with real HDF5 software (h5py, PyTables, netCDF4).

Run through `cargo xtask gen-testdata` (uses the pinned venv), or
`python generate.py OUTDIR`. Writes the files into OUTDIR and PROVENANCE.md next to
this script. Deterministic: fixed seeds, object modification times off where the
writer allows it (h5py: everything we create; see PROVENANCE.md for the rest).
"""

import os
import sys

import h5py
import numpy as np

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
HERE = os.path.dirname(os.path.abspath(__file__))

# libver low bounds. 'latest' is v200 with libhdf5 2.0 (same file format), so it is not repeated.
LIBVERS = ["earliest", "v108", "v110", "v200"]

PROVENANCE = []  # (file, generator, libver, description)


def record(name, generator, libver, what):
    PROVENANCE.append((name, generator, libver, what))


# ------------------------------------------------------------------------------------------
# low-level helpers (object times off so files are byte-for-byte reproducible)


def new_file(name, libver, track_order=False, userblock=0, mdc_image=False, fs=None):
    path = os.path.join(OUT, name)
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    if fs is not None:
        # (strategy, page size or 0): persistent free-space managers, threshold 1.
        fcpl.set_file_space_strategy(fs[0], True, 1)
        if fs[1]:
            fcpl.set_file_space_page_size(fs[1])
    if track_order:
        fcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
        fcpl.set_attr_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    if userblock:
        fcpl.set_userblock(userblock)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    low = {
        "earliest": h5py.h5f.LIBVER_EARLIEST,
        "v108": h5py.h5f.LIBVER_V18,
        "v110": h5py.h5f.LIBVER_V110,
        "v112": h5py.h5f.LIBVER_V112,
        "v114": h5py.h5f.LIBVER_V114,
        "v200": h5py.h5f.LIBVER_LATEST,
    }[libver]
    fapl.set_libver_bounds(low, h5py.h5f.LIBVER_LATEST)
    if mdc_image:
        set_mdc_image(fapl)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def group(parent, name, track_order=False):
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    if track_order:
        gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
        gcpl.set_attr_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    gid = h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl)
    return h5py.Group(gid)


def raw_attr(obj, name, tid, data, shape=None):
    """Attribute with an explicit HDF5 type, written with the same type as memory type."""
    data = np.asarray(data)
    space = h5py.h5s.create_simple(shape if shape is not None else data.shape) if (
        shape if shape is not None else data.shape) != () else h5py.h5s.create(h5py.h5s.SCALAR)
    aid = h5py.h5a.create(obj.id, name.encode(), tid, space)
    aid.write(np.ascontiguousarray(data), mtype=tid)


def raw_dset(parent, name, tid, data, dcpl=None):
    data = np.asarray(data)
    space = h5py.h5s.create_simple(data.shape) if data.shape != () else h5py.h5s.create(
        h5py.h5s.SCALAR)
    if dcpl is None:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    did = h5py.h5d.create(parent.id, name.encode(), tid, space, dcpl=dcpl)
    did.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=tid)
    return h5py.Dataset(did)


_LIB = None


def _libhdf5():
    """The libhdf5 h5py loaded (for the few calls h5py does not wrap)."""
    global _LIB
    if _LIB is None:
        import ctypes

        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "libhdf5" in line and "_hl" not in line
                     and line.split()[-1].startswith("/")}
        if len(paths) != 1:
            raise RuntimeError(f"cannot find the libhdf5 h5py loaded: {paths}")
        _LIB = ctypes.CDLL(paths.pop())
    return _LIB


def set_mdc_image(fapl):
    """Ask libhdf5 to write a metadata cache image at close (h5py does not wrap
    H5Pset_mdc_image_config): H5AC_cache_image_config_t version 1, generate_image,
    no resize status, entries never age out."""
    import ctypes

    class Cfg(ctypes.Structure):
        _fields_ = [("version", ctypes.c_int), ("generate_image", ctypes.c_bool),
                    ("save_resize_status", ctypes.c_bool), ("entry_ageout", ctypes.c_int)]

    lib = _libhdf5()
    lib.H5Pset_mdc_image_config.argtypes = [ctypes.c_int64, ctypes.POINTER(Cfg)]
    if lib.H5Pset_mdc_image_config(fapl.id, ctypes.byref(Cfg(1, True, False, -1))) < 0:
        raise RuntimeError("H5Pset_mdc_image_config failed")


def commit_type(parent, name, dtype):
    """Commit a named datatype with modification times off (h5py's commit cannot do that)."""
    import ctypes

    lib = _libhdf5()
    hid = ctypes.c_int64
    lib.H5Pcreate.restype = hid
    lib.H5Pcreate.argtypes = [hid]
    lib.H5Pset_obj_track_times.argtypes = [hid, ctypes.c_bool]
    lib.H5Tcommit2.argtypes = [hid, ctypes.c_char_p, hid, hid, hid, hid]
    lib.H5Pclose.argtypes = [hid]
    tcpl = lib.H5Pcreate(hid.in_dll(lib, "H5P_CLS_DATATYPE_CREATE_ID_g").value)
    if tcpl < 0 or lib.H5Pset_obj_track_times(tcpl, False) < 0:
        raise RuntimeError("H5Pcreate/H5Pset_obj_track_times failed")
    tid = h5py.h5t.py_create(np.dtype(dtype), logical=True).copy()
    if lib.H5Tcommit2(parent.id.id, name.encode(), tid.id, 0, tcpl, 0) < 0:
        raise RuntimeError(f"H5Tcommit2 {name} failed")
    lib.H5Pclose(tcpl)
    return parent[name]


def ds(parent, name, **kw):
    kw.setdefault("track_times", False)
    return parent.create_dataset(name, **kw)


# ------------------------------------------------------------------------------------------
# sample values of every simple type


def samples():
    """(name, numpy array, dtype or None) of every type h5py maps from numpy."""
    rng = np.random.default_rng(12345)
    out = []
    for bits in (8, 16, 32, 64):
        for kind in "iu":
            for order in "<>":
                dt = np.dtype(f"{order}{kind}{bits // 8}")
                info = np.iinfo(dt)
                out.append((f"{kind}{bits}{'le' if order == '<' else 'be'}",
                            np.array([info.min, 0, 1, info.max], dtype=dt)))
    for bits in (16, 32, 64):
        for order in "<>":
            dt = np.dtype(f"{order}f{bits // 8}")
            vals = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan,
                             np.finfo(dt).tiny, np.finfo(dt).max], dtype=dt)
            out.append((f"f{bits}{'le' if order == '<' else 'be'}", vals))
    out.append(("bool", np.array([True, False, True])))
    out.append(("enum", np.array([0, 2, 1], dtype=h5py.enum_dtype(
        {"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))))
    out.append(("enum_u16be", np.array([7, 300], dtype=h5py.enum_dtype(
        {"SEVEN": 7, "BIG": 300}, basetype=">u2"))))
    out.append(("str_fixed_ascii", np.array([b"ab", b"cde", b""], dtype="S5")))
    out.append(("str_fixed_utf8", np.array(["\u00e9t\u00e9".encode(), b"x"],
                                           dtype=h5py.string_dtype("utf-8", 8))))
    out.append(("str_vlen_ascii", np.array([b"hello", b"", b"world!"],
                                           dtype=h5py.string_dtype("ascii"))))
    out.append(("str_vlen_utf8", np.array(["\u03b1", "\u03b2\u03b3", "snow \u2603"],
                                          dtype=h5py.string_dtype())))
    point = np.dtype([("x", "<f8"), ("y", ">i2")])
    nested = np.dtype([("id", "<u4"), ("p", point), ("tag", "S3"), ("v", "<f4", (2,))])
    out.append(("compound_nested", np.array(
        [(1, (0.5, -3), b"abc", (1.0, 2.0)), (2, (1e300, 32767), b"z", (-0.0, 3.5))],
        dtype=nested)))
    vint = h5py.vlen_dtype(np.dtype("<i4"))
    arr = np.empty(3, dtype=vint)
    arr[0] = np.array([1, 2, 3], "<i4")
    arr[1] = np.array([], "<i4")
    arr[2] = np.array([-5], "<i4")
    out.append(("vlen_i4", arr))
    out.append(("opaque_v5", np.frombuffer(b"\x00\x01\x02\x03\x04\xff\xfe\xfd\xfc\xfb",
                                           dtype="V5")))
    out.append(("random_f64", rng.standard_normal(6)))
    return [(n, v, None) for n, v in out] + [
        ("array_i4_2x3", np.arange(12, dtype="<i4").reshape(2, 2, 3), np.dtype(("<i4", (2, 3)))),
        ("array_f2be_4", np.arange(4, dtype=">f2").reshape(1, 4), np.dtype((">f2", (4,)))),
    ]


def special_types():
    """(name, TypeID, numpy array in that type's memory layout) for types numpy cannot express."""
    out = []
    for size, le in ((1, True), (2, True), (2, False), (4, False), (8, True)):
        t = getattr(h5py.h5t, f"STD_B{size * 8}{'LE' if le else 'BE'}").copy()
        dt = np.dtype(f"{'<' if le else '>'}u{size}")
        out.append((f"bitfield{size * 8}{'le' if le else 'be'}", t,
                    np.array([0, 1, (1 << (size * 8)) - 1], dtype=dt)))
    op = h5py.h5t.create(h5py.h5t.OPAQUE, 4)
    op.set_tag(b"h5fmt opaque tag")
    out.append(("opaque_tagged", op, np.frombuffer(b"abcd\x00\x00\x00\x01", dtype="V4")))
    for pad, pname in ((h5py.h5t.STR_NULLTERM, "nullterm"), (h5py.h5t.STR_SPACEPAD, "spacepad"),
                       (h5py.h5t.STR_NULLPAD, "nullpad")):
        t = h5py.h5t.C_S1.copy()
        t.set_size(6)
        t.set_strpad(pad)
        raw = {"nullterm": [b"abc\0\0\0", b"abcde\0"], "spacepad": [b"ab    ", b"a b   "],
               "nullpad": [b"ab\0\0\0\0", b"abcdef"]}[pname]
        out.append((f"str_{pname}", t, np.array(raw, dtype="S6")))
    return out


# ------------------------------------------------------------------------------------------
# files


def gen_groups(lv):
    name = f"groups_{lv}.h5"
    f = new_file(name, lv)
    a = group(f, "a")
    b = group(a, "b")
    c = group(b, "c")
    c.attrs["depth"] = np.int32(3)
    group(f, "empty")
    many = group(f, "many")  # 40 links: dense link storage from v108 on (symbol table before)
    for i in range(40):
        group(many, f"child{i:02d}")
    few = group(f, "few")  # 8 links: still compact (default max_compact is 8)
    for i in range(8):
        group(few, f"m{i}")
    order = group(f, "ordered", track_order=True)
    for n in ["zeta", "alpha", "mid", "\u00e9clair"]:
        group(order, n)
    ordered_many = group(f, "ordered_many", track_order=True)
    for i in range(30):
        group(ordered_many, f"x{29 - i:02d}")
    d = ds(b, "data", data=np.arange(6, dtype="<i4"))
    f["hard_again"] = d  # second hard link to /a/b/data
    a["loop"] = f["/"]  # hard link back to the root: a cycle
    f["soft"] = h5py.SoftLink("/a/b/data")
    f["soft_dangling"] = h5py.SoftLink("/does/not/exist")
    f["soft_rel"] = h5py.SoftLink("a/b")
    f["external"] = h5py.ExternalLink("ext_target.h5", "/target")
    f["external_missing"] = h5py.ExternalLink("no_such_file.h5", "/x")
    f["unicode_\u00fc\u00f1\u00ee"] = h5py.SoftLink("/a")
    f.close()
    record(name, "h5py", lv, "nested groups, empty group, 8 links (compact), 40 links (dense from "
           "v108), creation-order tracked groups, multiple hard links, cycle, soft "
           "(dangling, relative), external links, UTF-8 link names")


def gen_ext_target():
    name = "ext_target.h5"
    f = new_file(name, "earliest")
    ds(f, "target", data=np.array([1.0, 2.0], dtype="<f8"))
    f.close()
    record(name, "h5py", "earliest", "target of the external links in groups_*.h5")


def gen_attrs(lv):
    name = f"attrs_{lv}.h5"
    f = new_file(name, lv)
    g = group(f, "types")
    for n, v, dt in samples():
        g.attrs.create(n, data=v, dtype=dt)
        if dt is None and v.ndim == 1 and len(v) > 0 and v.dtype.kind != "O":
            g.attrs[n + "_scalar"] = v[0]
    for n, t, v in special_types():
        raw_attr(g, n, t, v)
    g.attrs.create("empty_null", h5py.Empty("<i4"))
    g.attrs["scalar_str"] = "just a string"
    g.attrs["matrix"] = np.arange(12, dtype="<i2").reshape(3, 4)
    g.attrs["zero_len"] = np.zeros((0,), dtype="<f4")
    many = group(f, "many_attrs")  # 30 attributes: dense attribute storage from v108 on
    for i in range(30):
        many.attrs[f"attr{i:02d}"] = np.int64(i * 1000)
    ordered = group(f, "ordered_attrs", track_order=True)
    for n in ["zz", "aa", "mm"]:
        ordered.attrs[n] = n
    d = ds(f, "dset_with_attrs", data=np.arange(3, dtype="u1"))
    d.attrs["units"] = "m/s"
    d.attrs["scale"] = np.float32(0.5)
    f.close()
    record(name, "h5py", lv, "attributes of every simple type (ints, floats both orders, f16, "
           "bool, enum, fixed/vlen ASCII/UTF-8 strings, nullterm/nullpad/spacepad, array, nested "
           "compound, vlen int, opaque with tag, bitfields), null and zero-length dataspaces, "
           "30 attributes (dense from v108), creation-order tracked attributes")


def gen_attr_large():
    name = "attr_large_v108.h5"
    f = new_file(name, "v108")
    g = group(f, "g")
    g.attrs["big"] = np.arange(20000, dtype="<i4")  # 80000 bytes > 64 KiB: dense storage
    g.attrs["small"] = np.int8(1)
    f.close()
    record(name, "h5py", "v108", "an 80000-byte attribute (> 64 KiB, needs dense storage)")


def gen_datasets(lv):
    name = f"datasets_{lv}.h5"
    f = new_file(name, lv)
    base = np.arange(7 * 5, dtype="<i4").reshape(7, 5)
    # layouts
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    raw_dset(f, "compact", h5py.h5t.STD_I16LE, np.arange(10, dtype="<i2"), dcpl=dcpl)
    ds(f, "contiguous", data=base)
    ds(f, "contiguous_empty", shape=(4,), dtype="<f8")  # never written: fill value
    ds(f, "contiguous_fill", shape=(3,), dtype="<i4", fillvalue=-7)
    ds(f, "scalar", data=np.float64(3.25))
    ds(f, "null", data=h5py.Empty("<i4"))
    ds(f, "zero_size", shape=(0, 3), dtype="<i4")
    # chunked: partial edge chunks (7x5 in 3x2 chunks), with/without filters
    ds(f, "chunked", data=base, chunks=(3, 2))
    ds(f, "chunked_gzip_shuffle", data=base, chunks=(3, 2), compression="gzip",
       compression_opts=6, shuffle=True)
    ds(f, "chunked_fletcher32", data=base, chunks=(3, 2), fletcher32=True)
    ds(f, "chunked_all_filters", data=base.astype(">i8"), chunks=(4, 4), compression="gzip",
       shuffle=True, fletcher32=True)
    ds(f, "chunked_single", data=base, chunks=(7, 5))  # single-chunk index (v110+)
    ds(f, "chunked_single_gzip", data=base, chunks=(7, 5), compression="gzip")
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((2, 2))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    raw_dset(f, "chunked_implicit", h5py.h5t.STD_I32LE, base, dcpl=dcpl)  # implicit index (v110+)
    # unlimited dims: extensible array (one), v2 B-tree (two) from v110 on; B-tree v1 before
    e = ds(f, "unlimited_1d", shape=(5,), maxshape=(None,), chunks=(2,), dtype="<u2")
    e[:] = np.arange(5)
    e.resize((9,))
    e[5:] = np.arange(100, 104)
    e2 = ds(f, "unlimited_2d", data=base, maxshape=(None, None), chunks=(3, 3),
            compression="gzip", shuffle=True)
    e2.resize((8, 6))
    ds(f, "unlimited_sparse", shape=(40,), maxshape=(None,), chunks=(4,), dtype="<f4",
       fillvalue=np.float32(-1.5))[[1, 17, 38]] = [1.0, 2.0, 3.0]
    big = ds(f, "fixed_array_many_chunks", shape=(64,), chunks=(1,), dtype="u1")
    big[:] = np.arange(64, dtype="u1")  # 64 chunks: fixed array with data blocks (v110+)
    ea = ds(f, "earray_many_chunks", shape=(0,), maxshape=(None,), chunks=(1,), dtype="u1")
    ea.resize((300,))
    ea[:] = (np.arange(300) % 251).astype("u1")  # > index/data-block thresholds
    ds(f, "chunked_never_written", shape=(6, 6), chunks=(3, 3), dtype="<i2", fillvalue=42)
    ds(f, "fill_time_never", shape=(4,), chunks=(2,), dtype="<i4", fillvalue=9,
       fill_time="never")
    ds(f, "chunked_str_vlen", data=np.array(["a", "bb", "ccc", "dddd"], dtype=object),
       dtype=h5py.string_dtype(), chunks=(2,), compression="gzip")
    ds(f, "chunked_3d", data=np.arange(60, dtype="<f4").reshape(3, 4, 5), chunks=(2, 3, 2))
    ds(f, "scaleoffset_int", data=np.arange(20, dtype="<i4") * 3, chunks=(10,), scaleoffset=0)
    f.close()
    record(name, "h5py", lv, "compact/contiguous/chunked layouts; every chunk index for the "
           "libver (B-tree v1 before v110; single, implicit, fixed array, extensible array, "
           "B-tree v2 from v110); gzip, shuffle, fletcher32, scale-offset; partial edge chunks; "
           "unlimited dims; never-written chunks; user fill values; fill time never; scalar, "
           "null and zero-size dataspaces")


def gen_dtypes(lv):
    name = f"dtypes_{lv}.h5"
    f = new_file(name, lv)
    for n, v, dt in samples():
        if dt is None:
            ds(f, n, data=v)
        else:  # array type: the dataspace is the leading dims
            ds(f, n, shape=v.shape[: v.ndim - len(dt.shape)], dtype=dt)[...] = v
    for n, t, v in special_types():
        raw_dset(f, n, t, v)
    f["complex64_compound"] = np.array([1 + 2j, -3.5 - 0.25j], dtype="<c8")
    f["complex128_compound"] = np.array([1e-300 + 1j], dtype=">c16")
    # committed datatypes, used by a dataset and an attribute
    commit_type(f, "committed_compound", np.dtype([("a", "<i2"), ("b", "<f8")]))
    commit_type(f, "committed_enum", h5py.enum_dtype({"OFF": 0, "ON": 1}, basetype="u1"))
    cd = ds(f, "uses_committed", shape=(2,), dtype=f["committed_compound"])
    cd[:] = np.array([(1, 0.5), (2, 1.5)], dtype=f["committed_compound"].dtype)
    cd.attrs.create("state", data=np.array([1, 0], "u1"), dtype=f["committed_enum"])
    # references (old-style object and dataset-region references, as h5py writes them)
    tgt = ds(f, "ref_target", data=np.arange(20, dtype="<i4").reshape(4, 5))
    g = group(f, "ref_group")
    refs = ds(f, "object_refs", shape=(3,), dtype=h5py.ref_dtype)
    refs[0] = tgt.ref
    refs[1] = g.ref
    # refs[2] left null
    rr = ds(f, "region_refs", shape=(2,), dtype=h5py.regionref_dtype)
    rr[0] = tgt.regionref[1:3, 0:2]
    rr[1] = tgt.regionref[0, 4]
    g.attrs["self"] = g.ref
    f.close()
    record(name, "h5py", lv, "datasets of every type: ints 8-64 both orders, f16/f32/f64 both "
           "orders (NaN, inf, -0), bool and other enums, strings, arrays, nested compound, vlen, "
           "opaque, bitfields, complex as compound, committed datatypes, object and region "
           "references")


def gen_complex():
    name = "complex_v200.h5"
    f = new_file(name, "v200")
    raw_dset(f, "c64", h5py.h5t.COMPLEX_IEEE_F32LE, np.array([1 + 2j, -0.5j], dtype="<c8"))
    raw_dset(f, "c128be", h5py.h5t.COMPLEX_IEEE_F64BE, np.array([3 - 4j], dtype=">c16"))
    f.close()
    record(name, "h5py (low-level)", "v200", "HDF5 2.0 complex datatype class (H5T_COMPLEX); "
           "h5canon/1 cannot dump it (expected .error)")


def gen_vds():
    name = "vds_v110.h5"
    f = new_file(name, "v110")
    a = ds(f, "src_a", data=np.arange(4, dtype="<i4"))
    b = ds(f, "src_b", data=np.arange(10, 14, dtype="<i4"))
    layout = h5py.VirtualLayout(shape=(2, 4), dtype="<i4")
    layout[0] = h5py.VirtualSource(a)
    layout[1] = h5py.VirtualSource(b)
    dcpl = layout._get_dcpl(f.filename)  # h5py's own VDS mapping, then times off
    dcpl.set_fill_value(np.array([-1], dtype="<i4"))
    dcpl.set_obj_track_times(False)
    h5py.h5d.create(f.id, b"vds", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((2, 4)), dcpl=dcpl)
    f.close()
    record(name, "h5py", "v110", "virtual dataset with two sources in the same file")


def gen_userblock():
    name = "userblock_512.h5"
    f = new_file(name, "earliest", userblock=512)
    ds(f, "x", data=np.arange(3, dtype="<i8"))
    f.close()
    with open(os.path.join(OUT, name), "r+b") as fh:
        fh.write(b"h5fmt user block\n")
    record(name, "h5py", "earliest", "512-byte user block (base address 512)")


def gen_external_raw():
    name = "external_raw.h5"
    raw = os.path.join(OUT, "external_raw.bin")
    data = np.arange(8, dtype="<i4")
    with open(raw, "wb") as fh:
        fh.write(b"HEADER00" + data[:4].tobytes() + b"GAP!" + data[4:].tobytes())
    f = new_file(name, "earliest")
    ds(f, "ext", shape=(8,), dtype="<i4",
       external=[("external_raw.bin", 8, 16), ("external_raw.bin", 28, 16)])
    f.close()
    record(name, "h5py", "earliest", "dataset with external raw storage in external_raw.bin "
           "(two segments)")


def gen_track_order_root():
    name = "root_track_order_v110.h5"
    f = new_file(name, "v110", track_order=True)
    for n in ["b", "a", "c"]:
        ds(f, n, data=np.array([ord(n)], dtype="u1"))
    f.attrs["z"] = 1
    f.attrs["y"] = 2
    f.close()
    record(name, "h5py", "v110", "root group with creation order tracked and indexed")


def gen_mdc_image():
    # The metadata lives in the cache image block; at the entries' own addresses the
    # file holds zeros.
    name = "mdc_image_v200.h5"
    f = new_file(name, "v200", mdc_image=True)
    ds(f, "ints", data=np.arange(24, dtype="<i4").reshape(4, 6))
    ds(f, "chunked", data=np.arange(1000, dtype="<f8") * 0.5, chunks=(100,))
    g = group(group(f, "grp"), "sub")
    ds(g, "s", data=b"hello")
    g.attrs["a"] = np.int16(7)
    f.attrs["title"] = "mdci test"
    f.close()
    record(name, "h5py (+ctypes H5Pset_mdc_image_config)", "v200",
           "metadata cache image (superblock extension message 0x18, MDCI block): "
           "contiguous and chunked datasets, nested groups, attributes")
    # Dense link storage (fractal heap + v2 B-tree entries with flush dependencies):
    # libhdf5 2.0 cannot read this one back ("non-parent entry has children").
    name = "mdc_image_dense_v200.h5"
    f = new_file(name, "v200", mdc_image=True)
    g = group(f, "grp")
    for i in range(20):
        ds(g, f"d{i:02}", data=np.full(3, i, dtype="<u2"))
    f.close()
    record(name, "h5py (+ctypes H5Pset_mdc_image_config)", "v200",
           "metadata cache image over a group with 20 datasets in dense link storage "
           "(libhdf5 2.0 fails to read it back: expected .error)")


def gen_wasm_smoke():
    name = "wasm_smoke.h5"
    f = new_file(name, "earliest")
    ds(f, "answer", data=np.array([42], dtype="<i4"))
    f.close()
    record(name, "h5py", "earliest", "tiny file for the wasm smoke test")


def gen_free_space():
    """Persistent free-space managers (FSHD/FSSE) with sections: datasets created, then some
    deleted, non-paged ("fsm") and paged aggregation."""
    for name, fs, what in [
        ("freespace_fsm_v110.h5", (h5py.h5f.FSPACE_STRATEGY_FSM_AGGR, 0),
         "persistent free-space managers (strategy fsm, threshold 1)"),
        ("freespace_page_v110.h5", (h5py.h5f.FSPACE_STRATEGY_PAGE, 4096),
         "persistent free-space managers with paged aggregation (page size 4096)"),
    ]:
        f = new_file(name, "v110", fs=fs)
        for i in range(6):
            ds(f, f"d{i}", data=np.arange(100 * (i + 1), dtype="<i4"))
        g = group(f, "g")
        for i in range(4):
            ds(g, f"c{i}", data=np.arange(64, dtype="<f8") + i, chunks=(16,))
            g.attrs[f"a{i}"] = np.arange(i + 1, dtype="<i8")
        for i in (1, 3, 4):
            del f[f"d{i}"]
        del g["c2"]
        del g.attrs["a1"]
        f.close()
        record(name, "h5py", "v110", what + ": 6 contiguous and 4 chunked datasets, 3 + 1 of "
               "them deleted so that sections exist")


def gen_pytables():
    import tables

    name = "pytables.h5"
    path = os.path.join(OUT, name)

    class Particle(tables.IsDescription):
        name = tables.StringCol(8)
        idnumber = tables.Int64Col()
        energy = tables.Float32Col()
        pos = tables.Float64Col(shape=(2,))

    with tables.open_file(path, "w", title="h5fmt test") as h:
        grp = h.create_group("/", "detector", "Detector information")
        t = h.create_table(grp, "readout", Particle, "Readout example", chunkshape=(4,))
        row = t.row
        for i in range(10):
            row["name"] = f"p{i}"
            row["idnumber"] = i * i
            row["energy"] = float(i) / 3
            row["pos"] = (i, -i)
            row.append()
        t.flush()
        ea = h.create_earray("/", "earray", tables.Int16Atom(), (0, 3),
                             filters=tables.Filters(complevel=1, complib="zlib", shuffle=True),
                             chunkshape=(2, 3))
        ea.append(np.arange(12, dtype="<i2").reshape(4, 3))
        vl = h.create_vlarray("/", "vlarray", tables.Int32Atom(), "ragged", chunkshape=(2,))
        vl.append([1, 2, 3])
        vl.append([])
        vl.append([4])
        h.create_array("/", "array", np.arange(5, dtype="<f8"))
    record(name, "PyTables " + tables.__version__ + " (HDF5 " + tables.hdf5_version + ")",
           "PyTables default", "Table (compound, chunked), EArray (zlib+shuffle), VLArray, "
           "Array, PyTables attributes (CLASS, VERSION, TITLE)")


def gen_netcdf():
    import netCDF4

    name = "netcdf4.nc"
    path = os.path.join(OUT, name)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "h5fmt test"
        nc.createDimension("time", None)
        nc.createDimension("x", 4)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        v = nc.createVariable("temp", "f4", ("time", "x"), zlib=True, complevel=4,
                              fill_value=np.float32(-999))
        t[:] = [0.0, 1.0, 2.0]
        v[:] = np.arange(12, dtype="f4").reshape(3, 4)
        s = nc.createVariable("names", str, ("x",))
        s[:] = np.array(["a", "bb", "ccc", "dddd"], dtype=object)
        g = nc.createGroup("sub")
        g.createVariable("flag", "i1", ()).assignValue(1)
    record(name, "netCDF4-python " + netCDF4.__version__ + " (HDF5 "
           + netCDF4.__hdf5libversion__ + ", netCDF-C " + netCDF4.__netcdf4libversion__ + ")",
           "netCDF-4 default", "netCDF-4 file: unlimited dimension, dimension scales, "
           "zlib-compressed variable with fill value, vlen string variable, subgroup")


def gen_blosc2():
    """Blosc2 filter (hdf5plugin): multi-chunk datasets with partial edge chunks."""
    import hdf5plugin

    B2 = hdf5plugin.Blosc2
    codes = {"blosclz": 0, "lz4": 1, "lz4hc": 2, "zlib": 4, "zstd": 5}

    def b2(cname="blosclz", clevel=5, filters=B2.SHUFFLE, blocksize=0):
        # Client data 1 (block size) is not exposed by hdf5plugin.Blosc2.
        return dict(compression=B2.filter_id,
                    compression_opts=(0, blocksize, 0, 0, clevel, filters, codes[cname]))

    name = "blosc2.h5"
    f = new_file(name, "v110")
    ramp = (np.arange(37 * 23, dtype="<i4") * 7 % 1000).reshape(37, 23)
    for cname in codes:
        ds(f, "codec_" + cname, data=ramp, chunks=(16, 10), **b2(cname))
    cube = np.arange(7 * 9 * 11, dtype="<f8").reshape(7, 9, 11) / 8
    for fname, code in [("none", B2.NOFILTER), ("shuffle", B2.SHUFFLE),
                        ("bitshuffle", B2.BITSHUFFLE), ("delta", B2.DELTA)]:
        ds(f, "filter_" + fname, data=cube, chunks=(4, 5, 6), **b2("zstd", filters=code, blocksize=256))
    # trunc_prec: libhdf5's optional-filter path stores the chunks unfiltered (masked).
    ds(f, "filter_trunc_prec", data=cube, chunks=(4, 5, 6), **b2("zstd", filters=B2.TRUNC_PREC))
    ds(f, "u1_1d", data=(np.arange(1000) % 251).astype("u1"), chunks=(300,), **b2("lz4", blocksize=128))
    ds(f, "i2_1d_delta", data=np.arange(2500, dtype="<i2") // 3, chunks=(1000,),
       **b2("blosclz", filters=B2.DELTA, blocksize=512))
    ds(f, "compound", data=np.array([(i, i / 3) for i in range(45)],
                                    dtype=[("a", "<i4"), ("b", "<f8")]).reshape(9, 5),
       chunks=(4, 4), **b2("lz4hc"))
    ds(f, "string", data=np.array([b"s%03d" % i for i in range(30)], dtype="S4"), chunks=(8,),
       **b2("zlib"))
    zeros = np.zeros((48, 48), dtype="<f8")
    zeros[32:, 32:] = np.arange(256).reshape(16, 16)
    ds(f, "zero_chunks", data=zeros, chunks=(16, 16), **b2("zstd"))
    ds(f, "constant", data=np.full((20, 30), -3, dtype="<i2"), chunks=(8, 8), **b2("lz4"))
    nan = np.full((12, 12), np.nan, dtype="<f4")
    nan[:6, :6] = 1.5
    ds(f, "nan_chunks", data=nan, chunks=(6, 6), **b2("zstd"))
    ds(f, "uncompressed", data=ramp, chunks=(16, 10), **b2(clevel=0))
    ds(f, "unwritten", shape=(10, 10), dtype="<i4", chunks=(4, 4), fillvalue=9, **b2())
    # Fletcher32 before Blosc2: the filter sees chunk + checksum and writes a plain frame.
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    dcpl.set_chunk((8, 8))
    dcpl.set_fletcher32()
    dcpl.set_filter(B2.filter_id, h5py.h5z.FLAG_OPTIONAL, (0, 0, 0, 0, 5, 1, 1))
    space = h5py.h5s.create_simple((20, 12))
    d = h5py.h5d.create(f.id, b"fletcher32_first", h5py.h5t.STD_I32LE, space, dcpl)
    d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(240, dtype="<i4").reshape(20, 12))
    f.close()
    record(name, "h5py + hdf5plugin " + hdf5plugin.version + " (Blosc2)", "v110",
           "Blosc2 filter: each codec (blosclz, lz4, lz4hc, zlib, zstd), no filter / shuffle / "
           "bitshuffle / delta (trunc_prec fails to compress: stored masked), 1-D (plain frames) and "
           "2-D/3-D (b2nd frames, padded blocks) with partial edge chunks, compound and string "
           "items, all-zero chunks (special), constant and NaN chunks, clevel 0, unwritten chunks, "
           "fletcher32 applied before Blosc2")

def write_provenance():
    import platform

    lines = [
        "# testdata provenance",
        "",
        "Every file here is written by real HDF5 software through `testdata/generate.py`",
        "(`cargo xtask gen-testdata`); the expected canonical dumps in `expected/` come from",
        "`../shared/conformance/h5canon.py` (`cargo xtask bless`). Never edit either by hand.",
        "",
        f"- Python {platform.python_version()}, numpy {np.__version__}",
        f"- h5py {h5py.version.version} with libhdf5 {h5py.version.hdf5_version}",
        "- `libver` is the low bound given to libhdf5 (high bound: latest). With libhdf5 2.0,",
        "  `latest` is `v200`, so it is not generated twice.",
        "- h5py files are byte-for-byte reproducible: object modification times are off",
        "  (`H5Pset_obj_track_times(false)`; committed datatypes through `H5Tcommit2` by ctypes).",
        "- PyTables sets object modification times (4 bytes change on every run); the netCDF-4",
        "  file is reproducible.",
        "- `freespace_*.h5`: libhdf5 stores times in the superblock extension's object header",
        "  (no property turns them off), so their times and checksums change on every run.",
        "",
        "| file | generator | libver | content |",
        "|---|---|---|---|",
    ]
    for name, gen, lv, what in sorted(PROVENANCE):
        lines.append(f"| `{name}` | {gen} | {lv} | {what} |")
    lines.append("| `external_raw.bin` | generate.py | - | raw data of `external_raw.h5` |")
    with open(os.path.join(HERE, "PROVENANCE.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    np.random.seed(0)
    for lv in LIBVERS:
        gen_groups(lv)
        gen_attrs(lv)
        gen_datasets(lv)
        gen_dtypes(lv)
    gen_ext_target()
    gen_attr_large()
    gen_complex()
    gen_vds()
    gen_userblock()
    gen_external_raw()
    gen_track_order_root()
    gen_mdc_image()
    gen_wasm_smoke()
    gen_free_space()
    gen_pytables()
    gen_netcdf()
    gen_blosc2()
    write_provenance()
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n, *_ in PROVENANCE)
    print(f"generated {len(PROVENANCE)} files, {total} bytes, in {OUT}")


if __name__ == "__main__":
    main()
