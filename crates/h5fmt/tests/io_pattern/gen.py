"""Files for tests/io_pattern.rs: `python gen.py OUT_DIR`.

v1.h5 (libver earliest: symbol-table root group, v1 B-tree chunk index) and
latest.h5 (libver latest: link storage in a fractal heap + v2 B-tree, fixed
array chunk index) each hold 40 groups and 40 small datasets in the root and
`big`: 4096 x 4096 uint16 in 64 x 64 chunks (4096 chunks), gzip level 1,
value (7 * row + col) % 65536, which the test recomputes. latest.h5's `big`
has a paged fixed array (4096 entries, pages of 1024).

indexes.h5 (libver latest) holds one dataset per remaining layout-4 chunk
index, uint16, value (7 * row + col) % 65536 where written (0, the fill,
elsewhere):
- `fa_small`: 256 x 256 in 16 x 16 chunks (256 chunks): fixed array with an
  unpaged data block.
- `implicit`: 1024 x 1024 in 16 x 16 chunks (4096 chunks), allocation time
  early, no filters: implicit index.
- `ea`: 266240 x 64 (maxshape (None, 64)) in 16 x 16 chunks: 66560 chunk
  slots, extensible array. Only rows 0..16384, 130000..130512 and
  262144..266240 are written (sparse, so the file stays small).
- `ea_paged`: 2162688 x 16 (maxshape (None, 16)) in 16 x 16 chunks: 135168
  chunk slots, extensible array. Only rows 2097152..2129920 (chunks
  131072..133120) are written: they lie in super block 13, whose data
  blocks of 2048 elements are paged (elements from 131060 on; pages of
  1024).
- `bt2`: 1024 x 1024 (maxshape (None, None)) in 16 x 16 chunks (4096
  chunks), gzip level 1: v2 B-tree index (record type 11).
"""

import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def formula(r0, r1, c0, c1):
    r, c = np.mgrid[r0:r1, c0:c1]
    return ((7 * r + c) % 65536).astype(np.uint16)


big = formula(0, 4096, 0, 4096)
for name, libver in [("v1.h5", "earliest"), ("latest.h5", "latest")]:
    with h5py.File(os.path.join(out, name), "w", libver=libver) as f:
        for i in range(40):
            f.create_group(f"g{i:02d}")
            f.create_dataset(f"d{i:02d}", data=np.arange(i + 1, dtype=np.int32))
        f.create_dataset("big", data=big, chunks=(64, 64), compression="gzip", compression_opts=1)

with h5py.File(os.path.join(out, "indexes.h5"), "w", libver="latest") as f:
    f.create_dataset("fa_small", data=formula(0, 256, 0, 256), chunks=(16, 16))

    # Implicit index: early allocation, no filters (low-level API).
    space = h5py.h5s.create_simple((1024, 1024))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((16, 16))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    h5py.h5d.create(f.id, b"implicit", h5py.h5t.NATIVE_UINT16, space, dcpl=dcpl)
    f["implicit"][...] = formula(0, 1024, 0, 1024)

    ea = f.create_dataset(
        "ea", shape=(266240, 64), maxshape=(None, 64), chunks=(16, 16), dtype=np.uint16
    )
    for r0, r1 in [(0, 16384), (130000, 130512), (262144, 266240)]:
        ea[r0:r1] = formula(r0, r1, 0, 64)

    eap = f.create_dataset(
        "ea_paged", shape=(2162688, 16), maxshape=(None, 16), chunks=(16, 16), dtype=np.uint16
    )
    eap[2097152:2129920] = formula(2097152, 2129920, 0, 16)

    f.create_dataset(
        "bt2",
        data=formula(0, 1024, 0, 1024),
        maxshape=(None, None),
        chunks=(16, 16),
        compression="gzip",
        compression_opts=1,
    )
