"""What h5py reads, for the viewer's browser test (viewer.mjs): the min, max and where they
are of two windows of the big chunked file; the objects of a testdata file, the min and max of
one of its 1-D datasets, and the values of its 1-D string datasets.

    python viewer_oracle.py BIG.h5 TREE.h5 LINE_DATASET
"""
import json
import sys

import h5py
import numpy as np

big_path, tree_path, line_path = sys.argv[1], sys.argv[2], sys.argv[3]


def stats(a):
    return {
        "min": float(np.min(a)),
        "max": float(np.max(a)),
        "argmin": [int(i) for i in np.unravel_index(np.argmin(a), a.shape)],
        "argmax": [int(i) for i in np.unravel_index(np.argmax(a), a.shape)],
        "shape": list(a.shape),
    }


with h5py.File(big_path, "r") as f:
    d = f["run1/data"]
    windows = {
        "first": stats(d[0:512, 0:512]),
        "chosen": dict(stats(d[1000:1100, 2000:2300]), row0=1000, col0=2000),
    }

objects = [["/", "group"]]
with h5py.File(tree_path, "r") as f:
    kinds = {h5py.Group: "group", h5py.Dataset: "dataset", h5py.Datatype: "datatype"}
    f.visititems(lambda name, o: objects.append(["/" + name, kinds[type(o)]]))
    line = f[line_path][()]
    # The 1-D string datasets (not space-padded: numpy keeps the spaces), decoded.
    strings = {}
    for path, kind in objects:
        d = f[path]
        if kind != "dataset" or d.ndim != 1 or h5py.check_string_dtype(d.dtype) is None:
            continue
        if d.id.get_type().get_strpad() == h5py.h5t.STR_SPACEPAD:
            continue
        strings[path] = [
            (v.decode("utf-8") if isinstance(v, bytes) else v) for v in d[()].tolist()
        ]

json.dump(
    {
        "windows": windows,
        "objects": objects,
        "line": {"path": line_path, **stats(line)},
        "strings": strings,
    },
    sys.stdout,
)
