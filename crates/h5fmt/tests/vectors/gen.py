"""Generate filter test vectors for h5fmt.

Each vector is written with the real libraries (h5py / libhdf5 and hdf5plugin),
then the raw stored chunk is read back with `read_direct_chunk` and saved as
`<name>.in` (stored bytes), `<name>.out` (expected decoded bytes, from numpy),
and one line in `vectors.tsv`: name, filter_mask, element_size, then for each
filter of the pipeline `id:flags:cd0,cd1,...` (in pipeline order).

Made with: h5py 3.16.0, libhdf5 2.0.0, hdf5plugin 7.1.0, numpy 2.4.6.
Run: /work/main/.venv/bin/python gen.py   (from this directory)
"""
import os

import h5py
import hdf5plugin
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TMP = "/tmp/h5fmt_vectors.h5"

rng = np.random.default_rng(12345)
ramp_i32 = (np.arange(64, dtype=np.int32) * 37 - 900)
smooth_f64 = np.sin(np.arange(48) / 5.0) * 100.0
small_u16 = (np.arange(40, dtype=np.uint16) % 7) + 1000
text = np.frombuffer((b"hdf5 chunk filter vectors " * 8)[:200], dtype=np.uint8)

cases = []


def case(name, data, **kw):
    cases.append((name, data, kw))


case("deflate", ramp_i32, compression="gzip", compression_opts=6)
case("shuffle", ramp_i32, shuffle=True)
case("shuffle_deflate", smooth_f64, shuffle=True, compression="gzip", compression_opts=4)
case("fletcher32", small_u16, fletcher32=True)
case("deflate_fletcher32", ramp_i32, compression="gzip", fletcher32=True)
case("scaleoffset_int", ramp_i32, scaleoffset=0)
case("scaleoffset_int_fill", np.where(np.arange(64) % 5 == 0, -7, ramp_i32).astype(np.int32),
     scaleoffset=0, fillvalue=-7)
case("scaleoffset_u16", small_u16, scaleoffset=0)
case("scaleoffset_f64", smooth_f64, scaleoffset=3)
case("scaleoffset_f32", smooth_f64.astype(np.float32), scaleoffset=2)
case("scaleoffset_f32_fill", np.where(np.arange(48) % 4 == 0, np.float32(2.5),
                                      smooth_f64.astype(np.float32)).astype(np.float32),
     scaleoffset=2, fillvalue=2.5)
case("lzf", text, compression="lzf")
case("lzf_i32", ramp_i32, compression="lzf")
case("lz4", np.tile(ramp_i32, 4), **hdf5plugin.LZ4(nbytes=0))
case("lz4_blocks", np.tile(ramp_i32, 4), **hdf5plugin.LZ4(nbytes=256))
case("zstd", np.tile(ramp_i32, 4), **hdf5plugin.Zstd(clevel=3))
case("bzip2", np.tile(ramp_i32, 4), **hdf5plugin.BZip2(blocksize=9))
# szip (libaec through libhdf5): preprocessing (nn) and entropy-coding only
# (ec), 8/16/32/64-bit pixels in both byte orders, runs of equal values (zero
# blocks), small residuals (second extension / low k), noise (large k /
# uncompressed blocks), and a scanline that is not a whole number of blocks.
noise_u16 = rng.integers(0, 3000, 300, dtype=np.uint16)
steps_i32 = np.repeat(np.arange(40, dtype=np.int32) * 1000 - 7, 25)
case("szip_nn_i32", steps_i32, compression="szip", compression_opts=("nn", 8))
case("szip_ec_i32", steps_i32, compression="szip", compression_opts=("ec", 16))
case("szip_nn_u16_noise", noise_u16, compression="szip", compression_opts=("nn", 32))
case("szip_ec_i16_be", (np.arange(500) % 13 + 100).astype(">i2"), compression="szip",
     compression_opts=("ec", 8))
case("szip_nn_u8", (np.arange(777) // 9 % 256).astype(np.uint8), compression="szip",
     compression_opts=("nn", 16))
case("szip_nn_f64_be", np.sin(np.arange(400) / 9.0).astype(">f8"), compression="szip",
     compression_opts=("nn", 8))
case("szip_nn_2d_pad", (np.arange(13 * 21).reshape(13, 21) % 50).astype(np.int16),
     compression="szip", compression_opts=("nn", 8))
case("szip_zeros", np.zeros(4096, dtype=np.int32), compression="szip", compression_opts=("nn", 32))
case("szip_ec_u8_smooth", (np.arange(600) // 100).astype(np.uint8), compression="szip",
     compression_opts=("ec", 32))
# bitshuffle: plain, LZ4 and zstd, a block size that leaves a partial block and
# trailing elements (not a multiple of 8), 1/4/8-byte elements.
case("bitshuffle_none", np.arange(1003, dtype=np.int32) * 3 - 500, **hdf5plugin.Bitshuffle(cname="none"))
case("bitshuffle_lz4", np.arange(1003, dtype=np.int32) * 3 - 500, **hdf5plugin.Bitshuffle(nelems=256, cname="lz4"))
case("bitshuffle_zstd_f64", np.cos(np.arange(301) / 7.0), **hdf5plugin.Bitshuffle(cname="zstd", clevel=5))
case("bitshuffle_lz4_u8", (np.arange(2050) % 37).astype(np.uint8), **hdf5plugin.Bitshuffle(cname="lz4"))
# Blosc 1: each codec, byte shuffle / bit shuffle / none, split and unsplit
# blocks, several blocks with a leftover block, and an incompressible frame.
blosc_src = np.tile(np.arange(3000, dtype=np.int32) // 7, 3)
case("blosc_blosclz_shuffle", blosc_src, **hdf5plugin.Blosc(cname="blosclz", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
case("blosc_blosclz_blocks_f64", np.round(np.sin(np.arange(20001) / 300.0), 2),
     **hdf5plugin.Blosc(cname="blosclz", clevel=1, shuffle=hdf5plugin.Blosc.SHUFFLE))
case("blosc_lz4_bitshuffle", blosc_src, **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
case("blosc_lz4hc_shuffle", blosc_src, **hdf5plugin.Blosc(cname="lz4hc", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
case("blosc_zlib_shuffle", blosc_src, **hdf5plugin.Blosc(cname="zlib", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
case("blosc_zstd_bitshuffle", blosc_src, **hdf5plugin.Blosc(cname="zstd", clevel=5, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
case("blosc_blosclz_u8_text", np.frombuffer(b"blosc frames and blocks " * 300 + b"tail!", dtype=np.uint8),
     **hdf5plugin.Blosc(cname="blosclz", clevel=9, shuffle=hdf5plugin.Blosc.NOSHUFFLE))

# Blosc2 (one cframe per chunk): each codec; no filter, byte shuffle, bit
# shuffle, delta (several blocks, against the first); 1-D chunks (a plain
# frame) and 2-D/3-D chunks (a b2nd frame, blocks padded past the chunk
# edge); a leftover block; runs of one value, NaNs and zeros (special
# chunk); stored uncompressed (clevel 0); 12-byte compound and string items.
# `b2` also sets the block size (client data 1), which hdf5plugin.Blosc2 leaves automatic.
B2 = hdf5plugin.Blosc2
B2_CODES = {"blosclz": 0, "lz4": 1, "lz4hc": 2, "zlib": 4, "zstd": 5}


def b2(cname="blosclz", clevel=5, filters=B2.SHUFFLE, blocksize=0):
    return dict(compression=B2.filter_id, compression_opts=(0, blocksize, 0, 0, clevel, filters, B2_CODES[cname]))


case("blosc2_blosclz_2d", (np.arange(1500, dtype=np.int32) * 7 % 1000).reshape(30, 50), **b2("blosclz"))
case("blosc2_lz4_1d_blocks", np.arange(3001, dtype=np.int32) // 5, **b2("lz4", blocksize=1000))
case("blosc2_lz4hc_bitshuffle", (np.arange(2400, dtype=np.uint16) % 300).reshape(40, 60),
     **b2("lz4hc", filters=B2.BITSHUFFLE, blocksize=1024))
case("blosc2_zlib_3d_pad", np.arange(7 * 9 * 11, dtype=np.float64).reshape(7, 9, 11) / 4, **b2("zlib", blocksize=512))
case("blosc2_zstd_noshuffle", np.cos(np.arange(500) / 9.0), **b2("zstd", filters=B2.NOFILTER))
case("blosc2_delta_u1_blocks", (np.arange(6000) % 251).astype(np.uint8).reshape(60, 100),
     **b2("blosclz", clevel=1, filters=B2.DELTA, blocksize=1024))
case("blosc2_delta_i4_1d", np.arange(5000, dtype=np.int32) // 3, **b2("lz4", filters=B2.DELTA, blocksize=4096))
case("blosc2_run_i2", np.full((20, 20), 7, dtype=np.int16), **b2("zstd"))
case("blosc2_nan_f4", np.full((16, 16), np.nan, dtype=np.float32), **b2("zstd"))
case("blosc2_zeros_f8", np.zeros((32, 32)), **b2("lz4"))
case("blosc2_memcpy", (np.arange(300, dtype=np.int32) * 13).reshape(15, 20), **b2(clevel=0))
case("blosc2_compound", np.array([(i, i / 3) for i in range(70)], dtype=[("a", "<i4"), ("b", "<f8")]).reshape(10, 7),
     **b2("blosclz"))
case("blosc2_string_1d", np.array([b"ab%d" % i for i in range(50)], dtype="S5"), **b2("lz4hc"))

def relaxed_fapl():
    """A file access plist that lets libhdf5 2.x write types with unused bits
    (H5Pset_relax_file_integrity_checks, called through ctypes)."""
    import ctypes
    import glob

    lib = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(h5py.__file__), "..", "h5py.libs", "libhdf5-*"))[0])
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    rc = lib.H5Pset_relax_file_integrity_checks(ctypes.c_int64(fapl.id), ctypes.c_uint64(1))
    assert rc >= 0
    return fapl


if os.path.exists(TMP):
    os.remove(TMP)
rows = []
fid = h5py.h5f.create(TMP.encode(), h5py.h5f.ACC_TRUNC, fapl=relaxed_fapl())
with h5py.File(fid) as f:
    for name, data, kw in cases:
        f.create_dataset(name, data=data, chunks=data.shape, **kw)
    # nbit: an integer type of 12-bit precision at offset 2, and a float with
    # reduced precision, both through the nbit filter.
    t = h5py.h5t.STD_I32LE.copy()
    t.set_precision(12)
    t.set_offset(2)
    space = h5py.h5s.create_simple((50,))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((50,))
    dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
    ds = h5py.h5d.create(f.id, b"nbit_int", t, space, dcpl)
    vals = (np.arange(50, dtype=np.int32) * 41 - 1000)  # fits in 12 signed bits
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, vals)
    ft = h5py.h5t.IEEE_F32LE.copy()
    ft.set_fields(26, 18, 8, 0, 18)  # sign at 26, 8-bit exponent at 18, 18-bit mantissa
    ft.set_offset(0)
    ft.set_precision(27)
    ft.set_ebias(127)
    dsf = h5py.h5d.create(f.id, b"nbit_float", ft, space, dcpl)
    fvals = (np.arange(50, dtype=np.float32) * 0.75 - 10.0)
    dsf.write(h5py.h5s.ALL, h5py.h5s.ALL, fvals)

with h5py.File(TMP, "r") as f:
    names = [c[0] for c in cases] + ["nbit_int", "nbit_float"]
    for name in names:
        d = f[name]
        mask, raw = d.id.read_direct_chunk((0,) * len(d.shape))
        # The expected decoded chunk: what libhdf5 returns, in the file's type.
        expected = np.empty(d.shape, dtype=d.dtype)
        d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, expected, mtype=d.id.get_type())
        pl = d.id.get_create_plist()
        filters = []
        for i in range(pl.get_nfilters()):
            fid, flags, cd, _name = pl.get_filter(i)
            filters.append(f"{fid}:{flags}:{','.join(str(v) for v in cd)}")
        with open(os.path.join(HERE, name + ".in"), "wb") as o:
            o.write(raw)
        with open(os.path.join(HERE, name + ".out"), "wb") as o:
            o.write(expected.tobytes())
        rows.append("\t".join([name, str(mask), str(d.id.get_type().get_size())] + filters))

with open(os.path.join(HERE, "vectors.tsv"), "w") as o:
    o.write("\n".join(rows) + "\n")
print("\n".join(rows))
