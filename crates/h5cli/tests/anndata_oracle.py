"""anndata dataframes for crates/h5cli/tests/anndata.rs, written and read by
anndata + pandas (the oracle).

  gen DIR          write DIR/src.h5 (good dataframes), DIR/broken.h5 (one
                   broken dataframe per group), DIR/full_u8.h5 (a uint8 column
                   using all 256 values) and DIR/src.json: each good
                   dataframe as pandas reads it.
  same SPEC...     each argument A.h5:/path=B.h5:/path[:values]: anndata reads
                   both and pandas asserts them equal (dtypes, categories,
                   ordered flag, nulls, index; `:values` compares values only).
"""

import json
import sys

import anndata as ad
import h5py
import numpy as np
import pandas as pd

ad.settings.allow_write_nullable_strings = True


def frames():
    idx = pd.Index(["r0", "r1", "ré", "", "r4"])
    obs = pd.DataFrame(
        {
            "i8": np.array([-128, 0, 127, 5, -1], dtype=np.int8),
            # holds the int64 Table 1 sentinel (MIN + 1): import must pick another fill
            "i64": np.array([np.iinfo(np.int64).min + 1, 2, 3, 4, 5], dtype=np.int64),
            "u16": np.array([0, 1, 65535, 7, 8], dtype=np.uint16),
            "f64": np.array([1.5, np.nan, np.inf, -0.0, -2.25]),
            "f32": np.array([0.5, np.nan, 1e30, -1.0, 3.0], dtype=np.float32),
            "b": np.array([True, False, True, True, False]),
            "s": np.array(["a", "", "é", "日本語", "a/b"], dtype=object),
            "c": pd.Categorical(["x", None, "y", "x", "zz"], categories=["x", "y", "zz"]),
            "co": pd.Categorical(
                ["lo", "hi", "lo", None, "mid"], categories=["lo", "mid", "hi", "unused"], ordered=True
            ),
            "cn": pd.Categorical([10, 30, None, 10, 20], categories=[10, 20, 30]),
            "ni": pd.array([1, None, -3, 2**31 - 1, None], dtype="Int32"),
            "nu": pd.array([None, 0, 255, 3, 4], dtype="UInt8"),
            "nb": pd.array([True, None, False, True, None], dtype="boolean"),
            "ns": pd.array(["a", None, "", "ü", "b"], dtype="string"),
        },
        index=idx,
    )
    var = pd.DataFrame(
        {"n": np.arange(3, dtype=np.int64), "flag": [True, False, True]},
        index=pd.Index(["g1", "g2", "g3"], name="gene"),
    )
    zero = pd.DataFrame(
        {
            "i": np.array([], dtype=np.int32),
            "f": np.array([], dtype=np.float64),
            "c": pd.Categorical([], categories=["a", "b"]),
            "ni": pd.array([], dtype="Int16"),
            "nb": pd.array([], dtype="boolean"),
            "ns": pd.array([], dtype="string"),
        },
        index=pd.Index([], dtype=object),
    )
    one = pd.DataFrame(
        {
            "i": np.array([7], dtype=np.int16),
            "f": [np.nan],
            "s": np.array(["only"], dtype=object),
            "c": pd.Categorical([None], categories=["a"]),
            "ni": pd.array([None], dtype="Int64"),
            "nb": pd.array([None], dtype="boolean"),
            "ns": pd.array([None], dtype="string"),
        },
        index=["x"],
    )
    empty = pd.DataFrame(index=pd.Index([], dtype=object))
    return {"/obs": obs, "/var": var, "/zero": zero, "/one": one, "/empty": empty}


def value(v):
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v) and False):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if np.isnan(f):
            return "nan"
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(v, bytes):
        return v.decode()
    return str(v)


def dump(df):
    out = {
        "index_name": df.index.name,
        "index": [value(v) for v in df.index],
        "columns": list(df.columns),
        "data": {},
        "kind": {},
        "categories": {},
        "ordered": {},
    }
    for name in df.columns:
        s = df[name]
        if isinstance(s.dtype, pd.CategoricalDtype):
            out["kind"][name] = "categorical"
            out["categories"][name] = [value(v) for v in s.cat.categories]
            out["ordered"][name] = bool(s.cat.ordered)
            out["data"][name] = [None if pd.isna(v) else value(v) for v in s]
        elif isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
            out["kind"][name] = "nullable"
            out["data"][name] = [None if v is pd.NA else value(v) for v in s]
        else:
            out["kind"][name] = "plain"
            out["data"][name] = [value(v) for v in s]
    return out


def gen(d):
    good = frames()
    with h5py.File(f"{d}/src.h5", "w") as f:
        for path, df in good.items():
            ad.io.write_elem(f, path.lstrip("/"), df)
        # Fixed-length strings in a plain `array` (h5py `S`; anndata reads bytes): read only.
        ad.io.write_elem(f, "fixed", pd.DataFrame({"n": np.arange(3)}, index=["a", "b", "c"]))
        f["fixed"].create_dataset("fs", data=np.array([b"abc", b"", b"xy"], dtype="S3"))
        f["fixed/fs"].attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        f["fixed"].attrs["column-order"] = ["n", "fs"]
    with h5py.File(f"{d}/src.h5", "r") as f:
        dumps = {p: dump(ad.io.read_elem(f[p])) for p in [*good, "/fixed"]}
    with open(f"{d}/src.json", "w") as out:
        json.dump(dumps, out, ensure_ascii=False)

    base = good["/one"]
    with h5py.File(f"{d}/broken.h5", "w") as f:
        for name in ["version", "ghost", "length", "codes", "mask", "encoding"]:
            ad.io.write_elem(f, name, base)
        f["version"].attrs["encoding-version"] = "0.3.0"
        f["ghost"].attrs["column-order"] = list(base.columns) + ["ghost"]
        del f["length/i"]
        f["length"].create_dataset("i", data=np.array([1, 2], dtype=np.int16))
        f["length/i"].attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        del f["codes/c/codes"]
        f["codes/c"].create_dataset("codes", data=np.array([5], dtype=np.int8))
        f["codes/c/codes"].attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        del f["mask/ni/mask"]
        f["mask/ni"].create_dataset("mask", data=np.array([True, False]))
        f["encoding/s"].attrs["encoding-type"] = "awkward-array"

    full = pd.DataFrame({"u": np.arange(256, dtype=np.uint8)}, index=[f"r{i}" for i in range(256)])
    with h5py.File(f"{d}/full_u8.h5", "w") as f:
        ad.io.write_elem(f, "obs", full)


def read(spec):
    fname, path = spec.rsplit(":/", 1)
    with h5py.File(fname, "r") as f:
        return ad.io.read_elem(f["/" + path])


def same(specs):
    for spec in specs:
        values_only = spec.endswith(":values")
        if values_only:
            spec = spec[: -len(":values")]
        a, b = spec.split("=")
        da, db = read(a), read(b)
        try:
            if values_only:
                assert dump(da)["data"] == dump(db)["data"], (dump(da), dump(db))
                assert list(da.index) == list(db.index)
                assert list(da.columns) == list(db.columns)
            else:
                pd.testing.assert_frame_equal(da, db, check_exact=True)
                assert da.index.name == db.index.name
        except AssertionError as e:
            print(f"{a} != {b}: {e}\n{da}\n{da.dtypes}\n{db}\n{db.dtypes}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        same(sys.argv[2:])
