"""h5py side of tests/crosscheck_h5py.rs (run in-process through pyo3)."""

import json

import h5py


def _kind(obj):
    if isinstance(obj, h5py.Group):
        return "group"
    if isinstance(obj, h5py.Dataset):
        return "dataset"
    return "datatype"


def _shape(space_obj):
    try:
        s = space_obj.shape
    except Exception:
        return "?"
    return None if s is None else list(s)


def _dtype(obj):
    try:
        return obj.dtype.str
    except Exception:
        return None


def walk(path):
    """path -> {kind, attrs, [links], [shape, dtype]} by h5canon's canonical paths:
    breadth first from '/', links in byte order of their UTF-8 names, hard links only,
    each object (by address) at the first path that reaches it."""
    out = {}
    seen = set()
    with h5py.File(path, "r", locking=False) as f:
        queue = [("/", f)]
        seen.add(h5py.h5o.get_info(f.id).addr)
        while queue:
            p, obj = queue.pop(0)
            d = {"kind": _kind(obj), "attrs": sorted(obj.attrs.keys())}
            if d["kind"] == "dataset":
                d["shape"] = _shape(obj)
                d["dtype"] = _dtype(obj)
            if d["kind"] == "group":
                names = sorted(obj.keys(), key=lambda n: n.encode("utf-8"))
                d["links"] = names
                for n in names:
                    if not isinstance(obj.get(n, getlink=True), h5py.HardLink):
                        continue
                    child = obj[n]
                    addr = h5py.h5o.get_info(child.id).addr
                    if addr in seen:
                        continue
                    seen.add(addr)
                    queue.append(((p if p != "/" else "") + "/" + n, child))
            out[p] = d
    return json.dumps(out)
