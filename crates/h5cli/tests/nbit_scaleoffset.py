# Checks the n-bit / scale-offset datasets written by h5fmt (tests/write_nbit_scaleoffset.rs)
# against libhdf5: for every dataset NAME (input bytes in NAME__in, unfiltered), writes the same
# input with libhdf5 into REF (same datatype, dataspace, chunks, fill value and filter given as
# h5py does: set_scaleoffset / the nbit filter, libhdf5 computing the client data), then compares
# the filter's client data, every stored chunk's bytes and filter mask, and the values libhdf5
# reads from both files (and, for lossless cases, with the input).
# Usage: python nbit_scaleoffset.py OURS.h5 REF.h5 ; prints OK or the differences (exit 1).
import ctypes
import glob
import itertools
import sys

import h5py
import numpy as np
from h5py import h5d, h5f, h5p, h5s, h5t, h5z

lib = ctypes.CDLL(glob.glob(h5py.__path__[0] + "/../h5py.libs/libhdf5-*.so*")[0])


def fapl():
    # libhdf5 2.0 may refuse reduced-precision datatypes ("unusually large # of unused bits").
    p = h5p.create(h5p.FILE_ACCESS)
    if lib.H5Pset_relax_file_integrity_checks(ctypes.c_int64(p.id), ctypes.c_uint64(1)) < 0:
        raise SystemExit("H5Pset_relax_file_integrity_checks failed")
    return p


ours = h5py.File(h5f.open(sys.argv[1].encode(), h5f.ACC_RDONLY, fapl=fapl()))
ref = h5py.File(h5f.create(sys.argv[2].encode(), h5f.ACC_TRUNC, fapl=fapl()))
fails = []
count = 0
for name in sorted(ours):
    if name.endswith("__in"):
        continue
    count += 1
    d = ours[name]
    tid = d.id.get_type()
    size = tid.get_size()

    def raw(ds):
        buf = np.empty(ds.shape, dtype="V%d" % size)
        ds.id.read(h5s.ALL, h5s.ALL, buf, mtype=tid)
        return buf.tobytes()

    src = raw(ours[name + "__in"])
    odcpl = d.id.get_create_plist()
    dcpl = h5p.create(h5p.DATASET_CREATE)
    chunks = odcpl.get_chunk()
    dcpl.set_chunk(chunks)
    status = odcpl.fill_value_defined()
    if status == h5d.FILL_VALUE_USER_DEFINED:
        fv = np.zeros((1,), dtype=tid.dtype)
        odcpl.get_fill_value(fv)
        dcpl.set_fill_value(fv)
    elif status == h5d.FILL_VALUE_UNDEFINED:
        if lib.H5Pset_fill_value(ctypes.c_int64(dcpl.id), ctypes.c_int64(tid.id), None) < 0:
            raise SystemExit("H5Pset_fill_value(NULL) failed")
    kind = d.attrs["filter"].decode() if isinstance(d.attrs["filter"], bytes) else d.attrs["filter"]
    if kind == "nbit":
        dcpl.set_filter(h5z.FILTER_NBIT, h5z.FLAG_OPTIONAL)
    else:
        so = h5z.SO_INT if tid.get_class() == h5t.INTEGER else h5z.SO_FLOAT_DSCALE
        dcpl.set_scaleoffset(so, int(d.attrs["factor"]))
    r = h5d.create(ref.id, name.encode(), tid, d.id.get_space(), dcpl=dcpl)
    r.write(h5s.ALL, h5s.ALL, np.frombuffer(src, dtype="V%d" % size).reshape(d.shape), mtype=tid)
    rds = h5py.Dataset(r)
    fo, fr = odcpl.get_filter(0), r.get_create_plist().get_filter(0)
    if odcpl.get_nfilters() != 1 or fo[:3] != fr[:3]:
        fails.append("%s: filter %r, libhdf5 %r" % (name, fo, fr))
    grid = [range(0, s, c) for s, c in zip(d.shape, chunks)]
    for off in itertools.product(*grid):
        a = d.id.read_direct_chunk(off)
        b = r.read_direct_chunk(off)
        if a != b:
            fails.append("%s: chunk %r: ours %s, libhdf5 %s" % (name, off, a[1].hex(), b[1].hex()))
            break
    mine = raw(d)
    if mine != raw(rds):
        fails.append("%s: libhdf5 reads different values from the two files" % name)
    if d.attrs["lossless"] and mine != src:
        fails.append("%s: libhdf5 reads values that are not the input" % name)
ref.close()
if fails or count == 0:
    print("\n".join(fails) or "no datasets")
    sys.exit(1)
print("OK %d" % count)
