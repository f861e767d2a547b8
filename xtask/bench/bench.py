"""`cargo xtask bench` helper: generate the benchmark files, and time h5py reads.

  python bench.py gen DIR [write]  write DIR/*.h5 (skips files already present), DIR/windows.txt and
                                   DIR/series.f64 (with `write`: only what the write benchmarks need)
  python bench.py time FILE DATASET MODE REPS [WINDOWS]
                                   warm-up read, then REPS timed reads (REPS `-`: one per line of stdin,
                                   after a `ready` line): one `seconds bytes cpu_seconds` line each
  python bench.py write MODE OUT REPS [INPUT]
                                   warm-up write, then REPS timed writes of OUT (REPS as above; MODE contiguous, gzip,
                                   zstd: the f64 values of the raw file INPUT; meta: 10,000 groups x 10
                                   attributes; append: 1000 batches of 1000 compound rows appended to an
                                   empty unlimited dataset): one `seconds bytes cpu_seconds` line each
  python bench.py check OUT MODE [INPUT]
                                   verify a written file (ours) holds what was written
"""

import os
import sys
import time

import h5py
import hdf5plugin
import numpy as np

N = 2**26
CHUNK = 131072


def gen(out, only_write=False):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(3)

    def make(name, fn):
        path = os.path.join(out, name)
        if os.path.exists(path):
            return
        tmp = path + ".tmp"
        with h5py.File(tmp, "w") as f:
            fn(f)
        os.replace(tmp, path)
        print(f"generated {path} ({os.path.getsize(path) / 2**20:.0f} MiB)", flush=True)

    def series():
        # A smooth signal plus noise: compressible like real measurements.
        t = np.arange(N, dtype=np.float64)
        return np.round(np.sin(t / 5000.0) * 1000 + rng.normal(size=N), 3)

    data = None
    for name, kw in [
        ("contiguous.h5", {}),
        ("gzip.h5", dict(chunks=(CHUNK,), compression="gzip", compression_opts=4, shuffle=True)),
        ("zstd.h5", dict(chunks=(CHUNK,), shuffle=True, **hdf5plugin.Zstd(clevel=3))),
    ][: 1 if only_write else 3]:
        if os.path.exists(os.path.join(out, name)):
            continue
        if data is None:
            data = series()
        make(name, lambda f: f.create_dataset("data", data=data, **kw))
    data = None

    # The write benchmarks' input: the series as raw little-endian f64.
    rpath = os.path.join(out, "series.f64")
    if not os.path.exists(rpath):
        with h5py.File(os.path.join(out, "contiguous.h5"), "r") as f:
            f["data"][...].astype("<f8").tofile(rpath + ".tmp")
        os.replace(rpath + ".tmp", rpath)
    if only_write:
        return

    def image(f):
        y, x = np.mgrid[0:8192, 0:8192].astype(np.float32)
        img = (np.sin(x / 300) * np.cos(y / 200) * 1000).astype(np.float32)
        img += rng.normal(size=img.shape).astype(np.float32)
        f.create_dataset("image", data=img, chunks=(256, 256), compression="gzip", compression_opts=1)

    make("windows.h5", image)

    def strings(f):
        words = ["alpha", "beta", "γάμμα", "delta", "épsilon", "zeta", "ηta", "theta"]
        idx = rng.integers(0, len(words), size=(10**6, 3))
        vals = [f"{words[a]}-{words[b]}-{i}-{words[c]}" for i, (a, b, c) in enumerate(idx)]
        f.create_dataset("strings", data=vals, dtype=h5py.string_dtype("utf-8"))

    make("strings.h5", strings)

    wpath = os.path.join(out, "windows.txt")
    if not os.path.exists(wpath):
        r = np.random.default_rng(50)
        with open(wpath, "w") as fh:
            for _ in range(50):
                r0, c0 = r.integers(0, 8192 - 1000, size=2)
                fh.write(f"{r0} {c0} 1000 1000\n")


def timed_runs(reps, once):
    """Warm-up, then `reps` timed runs (a number), or with `reps` == "-" one
    per line of stdin after printing `ready` (`cargo xtask bench` alternates
    ours and h5py's runs this way), each right after an untimed run as in
    examples/common/mod.rs; one `seconds bytes cpu_seconds` line each."""
    once()
    if reps == "-":
        print("ready", flush=True)
        lines = iter(sys.stdin.readline, "")
    else:
        lines = range(int(reps))
    for _ in lines:
        if reps == "-":
            once()
        t, c = time.perf_counter(), time.process_time()
        n = once()
        print(f"{time.perf_counter() - t:.6f} {n} {time.process_time() - c:.6f}", flush=True)


def time_reads(path, dset, mode, reps, windows=None):
    wins = []
    if windows:
        with open(windows) as fh:
            wins = [tuple(int(x) for x in l.split()) for l in fh if l.strip()]

    def once():
        with h5py.File(path, "r") as f:
            d = f[dset]
            if mode == "full":
                return d[...].nbytes
            if mode == "windows":
                return sum(d[r0:r0 + h, c0:c0 + w].nbytes for r0, c0, h, w in wins)
            if mode == "strings":
                return d.asstr()[...].size
            raise SystemExit(f"mode {mode}")

    timed_runs(reps, once)


WRITE_KW = {
    "contiguous": {},
    "gzip": dict(chunks=(CHUNK,), compression="gzip", compression_opts=4, shuffle=True),
    "zstd": dict(chunks=(CHUNK,), shuffle=True, **hdf5plugin.Zstd(clevel=3)),
}


ROW = np.dtype([("t", "<i8"), ("x", "<f8"), ("y", "<f4")])
ROWS, BATCH, ROW_CHUNK = 10**6, 1000, 10_000


def rows():
    """The `append` rows: t = i, x = i / 4, y = (i mod 1000) / 2 (all exact)."""
    r = np.zeros(ROWS, dtype=ROW)
    i = np.arange(ROWS)
    r["t"], r["x"], r["y"] = i, i * 0.25, (i % 1000) * 0.5
    return r


def time_writes(mode, out, reps, inp=None):
    data = np.fromfile(inp, dtype="<f8") if inp else None
    if mode == "append":
        data = rows()

    def once():
        with h5py.File(out, "w") as f:
            if mode == "meta":
                for i in range(10_000):
                    g = f.create_group(f"g{i}")
                    for j in range(10):
                        g.attrs[f"a{j}"] = np.int64(i * 10 + j)
            elif mode == "append":
                d = f.create_dataset("data", shape=(0,), maxshape=(None,), chunks=(ROW_CHUNK,), dtype=ROW)
                for n in range(0, ROWS, BATCH):
                    d.resize((n + BATCH,))
                    d[n:] = data[n:n + BATCH]
            else:
                f.create_dataset("data", data=data, **WRITE_KW[mode])
        return os.path.getsize(out)

    timed_runs(reps, once)


def check(out, mode, inp=None):
    with h5py.File(out, "r") as f:
        if mode == "meta":
            assert len(f) == 10_000, len(f)
            for i in (0, 4321, 9999):
                g = f[f"g{i}"]
                assert {k: int(g.attrs[k]) for k in g.attrs} == {f"a{j}": i * 10 + j for j in range(10)}
        elif mode == "append":
            d = f["data"]
            assert d.dtype == ROW and d.chunks == (ROW_CHUNK,) and d.maxshape == (None,), (d.dtype, d.chunks, d.maxshape)
            assert np.array_equal(d[...], rows()), "rows differ"
        else:
            d = f["data"]
            assert np.array_equal(d[...], np.fromfile(inp, dtype="<f8")), "values differ"
            if mode != "contiguous":
                assert d.chunks == (CHUNK,) and d.shuffle, (d.chunks, d.shuffle)
                want = 1 if mode == "gzip" else 32015
                plist = d.id.get_create_plist()
                ids = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
                assert want in ids, ids
    print("ok")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], only_write=sys.argv[3:4] == ["write"])
    elif sys.argv[1] == "write":
        time_writes(sys.argv[2], sys.argv[3], sys.argv[4], *sys.argv[5:6])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], *sys.argv[4:5])
    else:
        time_reads(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], *sys.argv[6:7])
