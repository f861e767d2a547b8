"""Write the big chunked file of `cargo xtask wasm-test`'s range-read test with h5py, and
what h5py reads from its window (the oracle the package's lazy read is compared with).

    python make_big.py OUT.h5 OUT.json
"""
import hashlib
import json
import sys

import h5py
import numpy as np

ROWS, COLS, CHUNK = 8192, 8192, 256  # 256 MiB of float32 in 1024 chunks of 256 KiB
WINDOW = "1000:1100, 2000:2300"
WINDOW_SLICE = (slice(1000, 1100), slice(2000, 2300))

out_h5, out_json = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(17)
with h5py.File(out_h5, "w") as f:
    f.attrs["title"] = "range-read test"
    g = f.create_group("run1")
    d = g.create_dataset("data", shape=(ROWS, COLS), dtype="<f4", chunks=(CHUNK, CHUNK))
    for r in range(0, ROWS, CHUNK):
        d[r : r + CHUNK] = rng.random((CHUNK, COLS), dtype=np.float32)
    d.attrs["units"] = "volts"
    g.create_dataset("small", data=np.arange(10, dtype="<i2"))

with h5py.File(out_h5, "r") as f:
    d = f["run1/data"]
    window = np.ascontiguousarray(d[WINDOW_SLICE], dtype="<f4")
    json.dump(
        {
            "path": "/run1/data",
            "shape": list(d.shape),
            "window": WINDOW,
            "window_len": int(window.size),
            "window_sha256": hashlib.sha256(window.tobytes()).hexdigest(),
            "small": f["run1/small"][()].tolist(),
        },
        open(out_json, "w"),
    )
