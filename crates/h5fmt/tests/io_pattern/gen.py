"""Files for tests/io_pattern.rs: `python gen.py OUT_DIR`.

v1.h5 (libver earliest: symbol-table root group, v1 B-tree chunk index) and
latest.h5 (libver latest: link storage in a fractal heap + v2 B-tree, fixed
array chunk index) each hold 40 groups and 40 small datasets in the root and
`big`: 4096 x 4096 uint16 in 64 x 64 chunks (4096 chunks), gzip level 1,
value (7 * row + col) % 65536, which the test recomputes.
"""

import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
r, c = np.mgrid[0:4096, 0:4096]
big = ((7 * r + c) % 65536).astype(np.uint16)
for name, libver in [("v1.h5", "earliest"), ("latest.h5", "latest")]:
    with h5py.File(os.path.join(out, name), "w", libver=libver) as f:
        for i in range(40):
            f.create_group(f"g{i:02d}")
            f.create_dataset(f"d{i:02d}", data=np.arange(i + 1, dtype=np.int32))
        f.create_dataset("big", data=big, chunks=(64, 64), compression="gzip", compression_opts=1)
