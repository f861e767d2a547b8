"""Query benchmark data and the polars side (`cargo xtask bench query`).

  table_query.py gen DIR [NROWS [CHUNK]]
                                   write DIR/t.h5 (uncompressed) and DIR/tz.h5 (shuffle + zstd level 3,
                                    as `h5 table import --compression zstd` writes) with h5py: a
                                    HEP001 table /t of NROWS rows (ts int64 sorted, energy float32
                                    uniform, label int32 with 16 values, id uint64 unique random;
                                    CHUNK-row chunks, default 65,536) with CHUNK_MINMAX on ts/energy, BITMAP on
                                    label and SORTED_ROWS on id computed here with numpy; and the
                                    same columns as DIR/t.parquet and DIR/tz.parquet (pyarrow)
  table_query.py polars DIR REPS   median seconds of each query with polars on the Parquet copies (JSON)
  table_query.py queries DIR       the queries as WHERE strings (JSON)
"""
import json
import os
import sys
import time

import numpy as np

CHUNK = 65536


def queries(meta):
    return {
        "Q1": "ts >= %d AND ts < %d" % (meta["ts_lo"], meta["ts_hi"]),
        "Q2": "label = 3",
        "Q3": "label = 3",  # sum(energy) of the matching rows
        "Q4": "energy >= %r AND energy < %r" % (meta["e_lo"], meta["e_hi"]),
        "Q5": "id = %d" % meta["id_x"],
        "Q6": "ts >= %d AND ts < %d AND label = 3" % (meta["ts_lo"], meta["ts_hi"]),
    }


def gen(d, n, chunk=CHUNK, numpy_indexes=False):
    import h5py
    import hdf5plugin
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    ts = np.cumsum(rng.integers(1, 20, n)).astype(np.int64) + 1_700_000_000
    energy = rng.random(n, dtype=np.float32) * 1000
    label = rng.integers(0, 16, n).astype(np.int32)
    ids = rng.permutation(np.arange(n, dtype=np.uint64) * 7919 + 13)
    meta = {
        "nrows": n,
        # 4: plain tables, h5table builds the indexes; 5: numpy's indexes too (2 and 3:
        # tz.h5 was zstd without shuffle)
        "layout": 5 if numpy_indexes else 4,
        "ts_lo": int(ts[n // 2]),
        "ts_hi": int(ts[n // 2 + n // 1000]),
        "e_lo": 500.0,
        "e_hi": 500.0 + 0.1,  # ~0.01 %
        "id_x": int(ids[n // 3]),
    }
    cols = {"ts": ts, "energy": energy, "label": label, "id": ids}
    fills = {"ts": np.int64(-9223372036854775807), "energy": np.float32(9.9692099683868690e36),
             "label": np.int32(-2147483647), "id": np.uint64(2**64 - 1)}
    for name, comp in (("t.h5", {}), ("tz.h5", dict(shuffle=True, **hdf5plugin.Zstd(clevel=3)))):
        with h5py.File(os.path.join(d, name), "w", libver="latest") as f:
            g = f.create_group("t")
            g.attrs["CLASS"] = np.bytes_(b"COLUMN_TABLE")
            g.attrs["VERSION"] = np.bytes_(b"1.0")
            g.attrs["NROWS"] = np.uint64(n)
            dsets = {}
            for c, a in cols.items():
                dsets[c] = g.create_dataset(c, data=a, chunks=(chunk,), maxshape=(None,), fillvalue=fills[c], **comp)
            if not numpy_indexes:
                continue
            si = g.create_group("SEARCH_INDEXES")
            refs = {}
            nch = -(-n // chunk)
            for c in ("ts", "energy"):
                a = cols[c]
                pad = np.full(nch * chunk - n, np.nan if a.dtype.kind == "f" else 0, dtype=np.float64)
                mn = np.array([a[i * chunk:(i + 1) * chunk].min() for i in range(nch)], dtype=a.dtype)
                mx = np.array([a[i * chunk:(i + 1) * chunk].max() for i in range(nch)], dtype=a.dtype)
                cnt = np.array([min(chunk, n - i * chunk) for i in range(nch)], dtype=np.uint64)
                dt = np.dtype([("min", a.dtype), ("max", a.dtype), ("nan_count", "<u8"), ("fill_count", "<u8"), ("n", "<u8")])
                rec = np.zeros(nch, dtype=dt)
                rec["min"], rec["max"], rec["n"] = mn, mx, cnt
                x = si.create_dataset(c + "__chunk_minmax", data=rec)
                x.attrs["KIND"] = np.bytes_(b"CHUNK_MINMAX")
                refs[c] = [x.ref]
                del pad
            vals = np.arange(16, dtype=np.int32)
            bm = np.packbits(label[None, :] == vals[:, None], axis=1, bitorder="little")
            v = si.create_dataset("label__values", data=vals)
            b = si.create_dataset("label__bitmap", data=bm)
            b.attrs["KIND"] = np.bytes_(b"BITMAP")
            b.attrs.create("VALUES", v.ref, dtype=h5py.ref_dtype)
            b.attrs.create("ordered", np.int8(1), dtype=h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i1"))
            refs["label"] = [b.ref]
            perm = np.argsort(ids, kind="stable").astype(np.uint64)
            s = si.create_dataset("id__sorted_rows", data=perm)
            s.attrs["KIND"] = np.bytes_(b"SORTED_ROWS")
            s.attrs["nan_tail_length"] = np.uint64(0)
            s.attrs["fill_tail_length"] = np.uint64(0)
            s.attrs.create("ordered", np.int8(1), dtype=h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i1"))
            refs["id"] = [s.ref]
            for c, r in refs.items():
                dsets[c].attrs.create("SEARCH_INDEX_LIST", np.array(r, dtype=h5py.ref_dtype), dtype=h5py.ref_dtype)
    tab = pa.table(cols)
    pq.write_table(tab, os.path.join(d, "t.parquet"), compression="none", row_group_size=1 << 20)
    pq.write_table(tab, os.path.join(d, "tz.parquet"), compression="zstd", row_group_size=1 << 20)
    with open(os.path.join(d, "meta.json"), "w") as fh:
        json.dump(meta, fh)


def polars_times(d, reps):
    import polars as pl

    meta = json.load(open(os.path.join(d, "meta.json")))
    c = pl.col
    q = {
        "Q1": lambda s: s.filter((c("ts") >= meta["ts_lo"]) & (c("ts") < meta["ts_hi"])).select(pl.len()),
        "Q2": lambda s: s.filter(c("label") == 3).select(pl.len()),
        "Q3": lambda s: s.filter(c("label") == 3).select(c("energy").sum()),
        "Q4": lambda s: s.filter((c("energy") >= meta["e_lo"]) & (c("energy") < meta["e_hi"])).select(pl.len()),
        "Q5": lambda s: s.filter(c("id") == meta["id_x"]).select(pl.len()),
        "Q6": lambda s: s.filter((c("ts") >= meta["ts_lo"]) & (c("ts") < meta["ts_hi"]) & (c("label") == 3)).select(pl.len()),
    }
    out = {}
    for var in ("t", "tz"):
        path = os.path.join(d, var + ".parquet")
        for name, f in q.items():
            f(pl.scan_parquet(path)).collect()  # warm-up
            ts = []
            res = None
            for _ in range(reps):
                t0 = time.perf_counter()
                res = f(pl.scan_parquet(path)).collect()
                ts.append(time.perf_counter() - t0)
            out["%s/%s" % (var, name)] = {"secs": sorted(ts)[len(ts) // 2], "result": float(res.item())}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "gen":
        gen(d, int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000,
            int(sys.argv[4]) if len(sys.argv) > 4 else CHUNK,
            len(sys.argv) > 5 and sys.argv[5] == "numpy-indexes")
    elif cmd == "polars":
        polars_times(d, int(sys.argv[3]))
    elif cmd == "queries":
        json.dump(queries(json.load(open(os.path.join(d, "meta.json")))), sys.stdout)
