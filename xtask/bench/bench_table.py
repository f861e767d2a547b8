"""The Python side of `cargo xtask bench table`.

  gen DIR                 write DIR/vlen.h5 + vlen.parquet (1M-row vlen UTF-8 column)
                          and DIR/wide.h5 + wide.parquet (10M rows, 4 numeric columns);
                          kept when present
  polars-col PARQUET COL [reps]   polars.read_parquet(columns=[COL])
  pa-read PARQUET [reps]          pyarrow.parquet.read_table
  pa-write PARQUET OUT [reps]     pyarrow.parquet.write_table (zstd) of the table read first
Prints `rows N` then `t SECONDS` per timed run (after one warm-up).
"""
import os
import sys
import time

import numpy as np


def gen(d):
    import h5py
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "vlen.parquet")):
        rng = np.random.default_rng(1)
        n = 1_000_000
        alpha = list("abcdefghijklmnopqrstuvwxyz0123456789 é")
        pool = "".join(rng.choice(alpha, 4096))
        lens = rng.integers(0, 40, n)
        starts = rng.integers(0, 4096 - 40, n)
        vals = [pool[s : s + l] for s, l in zip(starts, lens)]
        with h5py.File(os.path.join(d, "vlen.h5"), "w") as f:
            g = f.create_group("t")
            g.attrs["CLASS"] = np.bytes_("COLUMN_TABLE")
            g.attrs["VERSION"] = np.bytes_("1.0")
            g.attrs["NROWS"] = np.uint64(n)
            g.create_dataset("s", data=vals, dtype=h5py.string_dtype("utf-8"), chunks=(65536,))
        pq.write_table(pa.table({"s": vals}), os.path.join(d, "vlen.parquet"), compression="zstd")
    if not os.path.exists(os.path.join(d, "wide.parquet")):
        rng = np.random.default_rng(2)
        n = 10_000_000
        cols = {
            "id": np.arange(n, dtype=np.int64),
            "x": rng.normal(size=n),
            "k": rng.integers(0, 1000, n).astype(np.int32),
            "y": rng.normal(size=n).astype(np.float32),
        }
        with h5py.File(os.path.join(d, "wide.h5"), "w") as f:
            g = f.create_group("t")
            g.attrs["CLASS"] = np.bytes_("COLUMN_TABLE")
            g.attrs["VERSION"] = np.bytes_("1.0")
            g.attrs["NROWS"] = np.uint64(n)
            g.attrs["column-order"] = np.array([b"id", b"x", b"k", b"y"], dtype="S2")
            for k, v in cols.items():
                g.create_dataset(k, data=v, chunks=(1 << 18,), compression="gzip", compression_opts=1)
        pq.write_table(pa.table(cols), os.path.join(d, "wide.parquet"), compression="zstd")


def timed(op, reps):
    rows = op()
    print(f"rows {rows}", flush=True)
    for _ in range(reps):
        t = time.perf_counter()
        op()
        print(f"t {time.perf_counter() - t:.6f}", flush=True)


def main():
    mode = sys.argv[1]
    if mode == "gen":
        gen(sys.argv[2])
    elif mode == "polars-col":
        import polars as pl

        path, col = sys.argv[2], sys.argv[3]
        reps = int(sys.argv[4]) if len(sys.argv) > 4 else 5
        timed(lambda: pl.read_parquet(path, columns=[col]).height, reps)
    elif mode == "pa-read":
        import pyarrow.parquet as pq

        path = sys.argv[2]
        reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
        timed(lambda: pq.read_table(path).num_rows, reps)
    elif mode == "pa-write":
        import pyarrow.parquet as pq

        path, out = sys.argv[2], sys.argv[3]
        reps = int(sys.argv[4]) if len(sys.argv) > 4 else 5
        table = pq.read_table(path)

        def op():
            pq.write_table(table, out, compression="zstd", compression_level=3)
            return table.num_rows

        timed(op, reps)
    else:
        sys.exit(f"unknown mode {mode}")


main()
