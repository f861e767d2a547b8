#!/usr/bin/env python3
"""Generate the virtual dataset test files with h5py / libhdf5 and the
expected contents (as libhdf5 reads them) for crates/h5fmt/tests/vds.rs.

Run from anywhere: writes next to this script. Every `*.bin` file holds the
raw little-endian bytes of `f[dataset][()]` read back by h5py; `expected.tsv`
lists file, dataset, shape (as libhdf5 reports it) and the `.bin` name.
"""
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
U = h5py.h5s.UNLIMITED


def p(name):
    return os.path.join(HERE, name)


def clean():
    for n in os.listdir(HERE):
        if n.endswith((".h5", ".bin")) or n == "expected.tsv":
            os.remove(p(n))


def same_file():
    """Sources in the VDS's own file: concatenation, strides, 'all', 2-D, fill."""
    with h5py.File(p("vds_same.h5"), "w") as f:
        a = f.create_dataset("a", data=np.arange(10, dtype="<i4"))
        b = f.create_dataset("b", data=np.arange(100, 110, dtype="<i4"))
        m = f.create_dataset("m", data=np.arange(30, dtype="<f8").reshape(5, 6) / 4)

        # concatenation of two whole sources ("all" source selections)
        L = h5py.VirtualLayout(shape=(20,), dtype="<i4")
        L[0:10] = h5py.VirtualSource(a)
        L[10:20] = h5py.VirtualSource(b)
        f.create_virtual_dataset("concat", L, fillvalue=-1)

        # strided on both sides, with gaps left as fill
        L = h5py.VirtualLayout(shape=(25,), dtype="<i4")
        L[0:10:2] = h5py.VirtualSource(a)[1:10:2]
        L[11:16] = h5py.VirtualSource(b)[5:10]
        L[20:25] = h5py.VirtualSource(a)[0:5]
        f.create_virtual_dataset("strided", L, fillvalue=-7)

        # 2-D: interleave two blocks of m, and a transposed-shaped window
        L = h5py.VirtualLayout(shape=(6, 8), dtype="<f8")
        L[0:5, 0:3] = h5py.VirtualSource(m)[:, 0:3]
        L[0:5:2, 4:8] = h5py.VirtualSource(m)[1:4, 2:6]
        L[5, :6] = h5py.VirtualSource(m)[4, :]
        f.create_virtual_dataset("grid", L, fillvalue=0.5)

        # 2-D source, 1-D virtual (selection order is row-major)
        L = h5py.VirtualLayout(shape=(12,), dtype="<f8")
        L[0:12] = h5py.VirtualSource(m)[1:3, :]
        f.create_virtual_dataset("flat", L)

        # a VDS whose source is itself a VDS in the same file
        L = h5py.VirtualLayout(shape=(8,), dtype="<i4")
        L[0:8] = h5py.VirtualSource(".", "concat", shape=(20,))[6:14]
        f.create_virtual_dataset("nested", L, fillvalue=-2)

        # unlimited mappings whose source is a resizable VDS (no chunked storage
        # needed): both selections unlimited, one offset by two rows
        L = h5py.VirtualLayout(shape=(5, 4), maxshape=(None, 4), dtype="<i4")
        L[0:5, :] = h5py.VirtualSource(f.create_dataset(
            "u", data=np.arange(20, dtype="<i4").reshape(5, 4)))
        f.create_virtual_dataset("umid", L, fillvalue=-1)
        L = h5py.VirtualLayout(shape=(1, 8), maxshape=(None, 8), dtype="<i4")
        src = h5py.VirtualSource(".", "umid", shape=(5, 4), maxshape=(None, 4))
        L[0:U, 0:4] = src[0:U, :]
        L[0:U, 4:8] = src[2:U, :]
        f.create_virtual_dataset("utop", L, fillvalue=-9)

        # an irregular (non-regular) hyperslab union, through the low-level API
        vspace = h5py.h5s.create_simple((4, 5))
        vspace.select_hyperslab((0, 0), (1, 1), block=(2, 2))
        vspace.select_hyperslab((1, 1), (1, 1), block=(3, 3), op=h5py.h5s.SELECT_OR)
        n = vspace.get_select_npoints()
        f.create_dataset("c", data=np.arange(200, 220, dtype="<i4"))
        sspace = h5py.h5s.create_simple((20,))
        sspace.select_hyperslab((3,), (1,), block=(n,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-5, dtype="<i4"))
        dcpl.set_virtual(vspace, b".", b"/c", sspace)
        h5py.h5d.create(f.id, b"irregular", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((4, 5)), dcpl=dcpl)


def other_files():
    """Sources in other files (relative names), one missing file, one missing dataset."""
    with h5py.File(p("vds_src1.h5"), "w") as s:
        s.create_dataset("data", data=np.arange(12, dtype="<i4").reshape(3, 4),
                         chunks=(2, 2), compression="gzip")
    with h5py.File(p("vds_src2.h5"), "w") as s:
        s.create_dataset("grp/data", data=-np.arange(1, 13, dtype="<i4").reshape(3, 4))
    with h5py.File(p("vds_other.h5"), "w") as f:
        L = h5py.VirtualLayout(shape=(4, 8), dtype="<i4")
        L[0:3, 0:4] = h5py.VirtualSource("vds_src1.h5", "data", shape=(3, 4))
        L[0:3, 4:8] = h5py.VirtualSource("vds_src2.h5", "/grp/data", shape=(3, 4))
        L[3, 0:4] = h5py.VirtualSource("vds_missing.h5", "data", shape=(4,))
        L[3, 4:8] = h5py.VirtualSource("vds_src1.h5", "nope", shape=(4,))
        f.create_virtual_dataset("v", L, fillvalue=99)
        # external link to a source file
        f["ext"] = h5py.ExternalLink("vds_src2.h5", "/grp/data")


def version_1_block():
    """libver v200: the version-1 heap block with shared names and same-file flags."""
    with h5py.File(p("vds_v1.h5"), "w", libver=("v200", "latest")) as f:
        f.create_dataset("a_rather_long_source_dataset_name", data=np.arange(6, dtype="<i4"))
        L = h5py.VirtualLayout(shape=(3, 6), dtype="<i4")
        for k in range(3):
            L[k, :] = h5py.VirtualSource(".", "a_rather_long_source_dataset_name", shape=(6,))
        f.create_virtual_dataset("same", L)
        L = h5py.VirtualLayout(shape=(3, 4), dtype="<i4")
        for k in range(3):
            L[k, :] = h5py.VirtualSource("vds_src1.h5", "data", shape=(3, 4))[k, :]
        f.create_virtual_dataset("shared", L)


def unlimited():
    """Both selections unlimited: the VDS grows with its source."""
    with h5py.File(p("vds_unlim_src.h5"), "w") as s:
        s.create_dataset("x", data=np.arange(12, dtype="<i4").reshape(3, 4),
                         maxshape=(None, 4), chunks=(1, 4))
    with h5py.File(p("vds_unlim.h5"), "w") as f:
        L = h5py.VirtualLayout(shape=(2, 8), maxshape=(None, 8), dtype="<i4")
        src = h5py.VirtualSource("vds_unlim_src.h5", "x", shape=(3, 4), maxshape=(None, 4))
        L[0:U, 0:4] = src[0:U, :]
        L[0:U:2, 4:8] = src[0:U, :]
        f.create_virtual_dataset("v", L, fillvalue=-1)
    # grow the source after the VDS was written
    with h5py.File(p("vds_unlim_src.h5"), "a") as s:
        s["x"].resize((5, 4))
        s["x"][3:] = 77


def printf():
    """Virtual selection unlimited, source limited: sources named with %b."""
    for k in range(3):
        with h5py.File(p(f"vds_printf_{k}.h5"), "w") as s:
            s.create_dataset("data", data=np.full((2, 3), 10 * k, dtype="<i4") + np.arange(6, dtype="<i4").reshape(2, 3))
    with h5py.File(p("vds_printf.h5"), "w") as f:
        # h5py's VirtualLayout cannot express an unlimited count: low-level API.
        vspace = h5py.h5s.create_simple((0, 3), (U, 3))
        vspace.select_hyperslab((0, 0), (U, 1), stride=(3, 1), block=(2, 3))
        sspace = h5py.h5s.create_simple((2, 3))
        sspace.select_all()
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-3, dtype="<i4"))
        dcpl.set_virtual(vspace, b"vds_printf_%b.h5", b"data", sspace)
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I32LE,
                        h5py.h5s.create_simple((0, 3), (U, 3)), dcpl=dcpl)


def expected():
    rows = []
    for fname, dsets in [
        ("vds_same.h5", ["concat", "strided", "grid", "flat", "nested", "irregular", "umid", "utop"]),
        ("vds_other.h5", ["v", "ext"]),
        ("vds_v1.h5", ["same", "shared"]),
        ("vds_unlim.h5", ["v"]),
        ("vds_printf.h5", ["v"]),
    ]:
        cwd = os.getcwd()
        os.chdir(HERE)  # libhdf5 also looks relative to the working directory
        try:
            with h5py.File(fname, "r") as f:
                for d in dsets:
                    arr = f[d][()]
                    assert arr.dtype.byteorder in "<=|", arr.dtype
                    out = f"{fname[:-3]}__{d}.bin"
                    arr.tofile(p(out))
                    rows.append((fname, d, "x".join(map(str, arr.shape)), out))
        finally:
            os.chdir(cwd)
    with open(p("expected.tsv"), "w") as t:
        t.write("file\tdataset\tshape\tbin\n")
        for r in rows:
            t.write("\t".join(r) + "\n")


if __name__ == "__main__":
    clean()
    same_file()
    other_files()
    version_1_block()
    unlimited()
    printf()
    expected()
