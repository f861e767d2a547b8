"""The Python side of `cargo xtask bench table`.

  gen DIR [ROWS]          write DIR/vlen.h5 + vlen.parquet (1M-row vlen UTF-8 column)
                          and DIR/mixed.parquet (ROWS rows, default 10M: ints, floats with
                          NaN and nulls, strings, a dictionary column, a timestamp);
                          kept when present; ROWS 0 writes the vlen files only
  verify ORIG OURS        ORIG (pyarrow's) equals OURS (`h5 table import` then
                          `cat --format parquet`) modulo the documented mappings
  polars-col PARQUET COL [reps]   polars.read_parquet(columns=[COL])
  pa-read PARQUET [reps]          pyarrow.parquet.read_table
  pa-write PARQUET OUT [reps]     pyarrow.parquet.write_table (zstd) of the table read first
Prints `rows N` then `t SECONDS` per timed run (after one warm-up); with
`serve` for reps, times one run per line read from stdin (the benchmark
alternates the two sides this way).
"""
import os
import sys
import time

import numpy as np


def gen(d, rows):
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
    mixed = os.path.join(d, "mixed.parquet")
    if rows > 0 and not os.path.exists(mixed):
        pq.write_table(mixed_table(rows), mixed, compression="zstd")


def mixed_table(n):
    """A realistic event table: ids, small ints and floats with nulls, NaN
    data, free-text strings, a low-cardinality dictionary column and a
    timestamp. No empty strings and no Table 1 sentinels among the values:
    both are HEP001 fill values, which `h5 table import` refuses as data."""
    import pyarrow as pa

    rng = np.random.default_rng(3)

    def nulls(a, p):
        return pa.array(a, mask=rng.random(n) < p)

    energy = rng.exponential(50.0, n)
    energy[rng.random(n) < 0.005] = np.nan
    words = np.array(["alpha", "beta", "gamma", "delta", "muon", "jet", "tau", "π⁰", "Λ", "run"])
    pool = pa.array(
        ["%s-%s_%d" % (words[i % 10], words[(i * 7) % 10], i) for i in range(200_000)]
    )
    labels = pa.array(["e", "mu", "tau", "gamma", "jet", "b-jet", "π", "other"])
    codes = rng.integers(0, len(labels), n).astype(np.int32)
    ts0 = np.datetime64("2024-05-01T00:00:00", "us").astype(np.int64)
    ts = ts0 + np.cumsum(rng.integers(1, 2000, n))
    return pa.table(
        {
            "event_id": pa.array(np.arange(n, dtype=np.int64)),
            "run": nulls(rng.integers(1, 500, n).astype(np.int32), 0.01),
            "energy": nulls(energy, 0.02),
            "eta": nulls(rng.normal(0, 2.5, n).astype(np.float32), 0.01),
            "n_hits": pa.array(rng.poisson(20, n).astype(np.uint16)),
            "label": pa.DictionaryArray.from_arrays(
                pa.array(codes, mask=rng.random(n) < 0.03), labels
            ),
            "detector": pool.take(pa.array(rng.integers(0, len(pool), n))).to_numpy(
                zero_copy_only=False
            ),
            "ts": pa.array(ts, type=pa.timestamp("us", tz="UTC")),
        }
    )


def documented(t):
    """`t` as it reads back after `h5 table import` + `cat --format parquet`:
    dictionary columns become strings (variable-length UTF-8 columns),
    timestamps their int64 counts (units "<unit> since 1970-01-01 00:00:00
    UTC"), booleans uint8 0/1; floats are compared as their bit patterns
    (NaN payloads included)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = []
    for name in t.column_names:
        a = t[name].combine_chunks()
        if pa.types.is_dictionary(a.type):
            a = pc.cast(a, a.type.value_type)
        elif pa.types.is_timestamp(a.type):
            a = a.view(pa.int64())
        elif pa.types.is_boolean(a.type):
            a = pc.cast(a, pa.uint8())
        if pa.types.is_large_string(a.type):
            a = pc.cast(a, pa.string())
        if pa.types.is_float32(a.type):
            a = a.view(pa.uint32())
        elif pa.types.is_float64(a.type):
            a = a.view(pa.uint64())
        cols.append(a)
    return pa.table(cols, names=t.column_names)


def verify(orig, ours):
    import pyarrow.parquet as pq

    a, b = pq.read_table(orig), pq.read_table(ours)
    x, y = documented(a), documented(b)
    if x.schema.remove_metadata() != y.schema.remove_metadata():
        sys.exit("round trip: schema\n%s\nwant\n%s" % (y.schema, x.schema))
    if not x.equals(y):
        for name in x.column_names:
            if not x[name].equals(y[name]):
                sys.exit("round trip: column %s differs" % name)
        sys.exit("round trip: tables differ")
    print(
        "round trip exact: %d rows, %d columns, %d nulls (types: %s)"
        % (
            a.num_rows,
            a.num_columns,
            sum(c.null_count for c in a.columns),
            ", ".join("%s %s → %s" % (f.name, f.type, g.type) for f, g in zip(a.schema, b.schema)),
        )
    )


def timed(op, reps):
    """One warm-up, then `reps` timed runs, or with `reps` "serve" one timed
    run per line read from stdin until it ends."""
    rows = op()
    print(f"rows {rows}", flush=True)
    runs = sys.stdin if reps == "serve" else range(int(reps))
    for _ in runs:
        t = time.perf_counter()
        op()
        print(f"t {time.perf_counter() - t:.6f}", flush=True)


def main():
    mode = sys.argv[1]
    if mode == "gen":
        gen(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000)
    elif mode == "verify":
        verify(sys.argv[2], sys.argv[3])
    elif mode == "polars-col":
        import polars as pl

        path, col = sys.argv[2], sys.argv[3]
        reps = sys.argv[4] if len(sys.argv) > 4 else 5
        timed(lambda: pl.read_parquet(path, columns=[col]).height, reps)
    elif mode == "pa-read":
        import pyarrow.parquet as pq

        path = sys.argv[2]
        reps = sys.argv[3] if len(sys.argv) > 3 else 5
        timed(lambda: pq.read_table(path).num_rows, reps)
    elif mode == "pa-write":
        import pyarrow.parquet as pq

        path, out = sys.argv[2], sys.argv[3]
        reps = sys.argv[4] if len(sys.argv) > 4 else 5
        table = pq.read_table(path)

        def op():
            pq.write_table(table, out, compression="zstd", compression_level=3)
            return table.num_rows

        timed(op, reps)
    else:
        sys.exit(f"unknown mode {mode}")


main()
