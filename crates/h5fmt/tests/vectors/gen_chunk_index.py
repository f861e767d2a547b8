"""Expected chunk records and data of corpus datasets with fixed-array,
extensible-array, implicit and single-chunk indexes, from h5py.

Writes `chunk_index.tsv`: file, dataset, index kind, dims, max dims (-1 =
unlimited), chunk dims, element size, filters (id:flags:cd,... separated by
'|', '-' for none), fill element hex, FNV-1a 64 of the dataset's raw bytes
in its file type ('-' for variable-length types), records (offsets:addr:size:mask
joined by ';', sorted by offsets; for more than 64 chunks `n=<count>;fnv=<FNV-1a 64
of the joined records>`).

Made with: h5py 3.16.0, libhdf5 2.0.0, numpy 2.4.6.
Run: /work/main/.venv/bin/python gen_chunk_index.py   (from this directory)
"""
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "../../../../../shared/corpus/files")

FILES = {
    "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__fixed_array_paged_datasets.hdf5": None,
    "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__chunked_v4_datasets.hdf5": None,
    "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__implicit_index_datasets.hdf5": None,
    "wrwilliams__hdf5/tools__testfiles__tdset_idx.h5": None,
    "wrwilliams__hdf5/tools__test__h5stat__testfiles__h5stat_idx.h5": None,
}


def fnv64(b):
    h = 0xCBF29CE484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def kind(name, d):
    n = name.lower()
    if "btree" in n:
        return None  # v1/v2 B-trees are covered elsewhere
    if "extensible" in n:
        return "ea"
    if "fixed" in n:
        return "fa"
    if "single" in n:
        return "single"
    if "implicit" in n:
        return "implicit"
    if n in ("dset", "dset_filter") or n.endswith("dset_fixed") or n.endswith("dset_filter"):
        return "fa"
    return None


rows = []
for rel in FILES:
    with h5py.File(os.path.join(CORPUS, rel)) as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.chunks else None)
        for name in names:
            d = f[name]
            k = kind(name, d)
            if k is None:
                continue
            pl = d.id.get_create_plist()
            filters = []
            for i in range(pl.get_nfilters()):
                fid, flags, cd, _ = pl.get_filter(i)
                filters.append(f"{fid}:{flags}:{','.join(str(v) for v in cd)}")
            t = d.id.get_type()
            es = t.get_size()
            if d.dtype.kind == "O":
                # A variable-length element on disk: length (4) + global heap id (8 + 4).
                es = 16
                digest = "-"
                fill = "00" * es
            else:
                raw = np.empty(d.shape, dtype=d.dtype)
                d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=t)
                digest = "%016x" % fnv64(raw.tobytes())
                fv = np.zeros(1, dtype=d.dtype)
                pl.get_fill_value(fv)
                fill = fv.tobytes().hex()
            infos = sorted((d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())),
                           key=lambda c: tuple(c.chunk_offset))
            recs = [f"{','.join(str(o) for o in c.chunk_offset)}:{c.byte_offset}:{c.size}:{c.filter_mask}"
                    for c in infos]
            if len(recs) > 64:
                # Large indexes: the count and the FNV-1a 64 of the ';'-joined records.
                recs = [f"n={len(recs)}", "fnv=%016x" % fnv64(";".join(recs).encode())]
            maxs = ",".join("-1" if m is None else str(m) for m in d.maxshape)
            rows.append("\t".join([rel, name, k, ",".join(map(str, d.shape)), maxs,
                                   ",".join(map(str, d.chunks)), str(es), "|".join(filters) or "-",
                                   fill, digest, ";".join(recs)]))

with open(os.path.join(HERE, "chunk_index.tsv"), "w") as o:
    o.write("\n".join(rows) + "\n")
print(len(rows), "datasets")
