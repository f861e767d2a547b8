"""Independent oracle for the search indexes h5table writes (§10.4-§10.7).

usage: index_write_oracle.py FILE TABLE FILLS_JSON [FPR]

For every search index linked from a column's SEARCH_INDEX_LIST, recompute
it from the column's rows [0, NROWS) with numpy (and mmh3 for the Bloom bit
positions) and compare with the stored dataset byte for byte. Prints
`OK <column> <KIND>` or `BAD <column> <KIND>: why` lines.
FILLS_JSON gives the fill of variable-length string columns and (as
`<name>_hex`) of opaque columns (h5py does not expose them); FPR, when given, checks the Bloom sizing of freshly built
indexes.
"""
import json, math, struct, sys
import h5py, mmh3, numpy as np
from h5py import h5t

path, tpath, fills = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
fpr = float(sys.argv[4]) if len(sys.argv) > 4 else None
f = h5py.File(path, "r")
g = f[tpath]
N = int(g.attrs["NROWS"])
GEN = int(g.attrs["GENERATION"])


def raw_read(ds, n):
    """The file bytes of elements [0, n) of a rank-1 fixed-size dataset,
    read with the file datatype as memory type (no conversion)."""
    if n == 0:
        return b""
    t = ds.id.get_type()
    out = np.empty(n, dtype=f"V{t.get_size()}")
    fs = ds.id.get_space()
    fs.select_hyperslab((0,), (n,))
    ms = h5py.h5s.create_simple((n,))
    ds.id.read(ms, fs, out, mtype=t)
    return out.tobytes()


def say(ok, col, kind, why=""):
    print(("OK" if ok else "BAD"), col, kind + ("" if ok else ": " + why))


for cname in g:
    ds = g[cname]
    if not isinstance(ds, h5py.Dataset) or "SEARCH_INDEX_LIST" not in ds.attrs:
        continue
    # h5py cannot read H5T_STD_REF attributes: the linkage is checked by the
    # Rust side (index::discover); here the indexes are found by name.
    si = g["SEARCH_INDEXES"]
    mine = [si[n] for n in si if n.rsplit(".", 1)[0] == cname and "KIND" in si[n].attrs]
    tid = ds.id.get_type()
    cls = tid.get_class()
    vlen = cls == h5t.STRING and tid.is_variable_str()
    arr = ds[:N] if cls != h5t.OPAQUE else np.frombuffer(raw_read(ds, N), dtype=f"V{tid.get_size()}")
    chunk = ds.chunks[0] if ds.chunks else None
    es = tid.get_size()
    isfloat = cls == h5t.FLOAT
    # element bytes, missing mask, order keys, canonical bytes
    if vlen:
        vals = [x if isinstance(x, bytes) else x.encode() for x in arr]
        fillb = fills[cname].encode()
        raw = None
        missing = [v == fillb for v in vals]
        keys = vals
        canon = vals
        fill_elem = fillb
    else:
        fb = raw_read(ds, N)
        raw = [fb[i * es : (i + 1) * es] for i in range(N)]
        if cname + "_hex" in fills:
            # h5py cannot convert this fill (opaque, enum code outside the members).
            fill_elem = bytes.fromhex(fills[cname + "_hex"])
            fv = None
        else:
            fv = np.array(ds.fillvalue, dtype=ds.dtype)
            fill_elem = fv.tobytes()
            if cls == h5t.STRING:
                pad = b" " if tid.get_strpad() == h5t.STR_SPACEPAD else b"\x00"
                fill_elem = fill_elem.rstrip(b"\x00").ljust(es, pad)
        if isfloat and fv is not None and np.isnan(fv):
            missing = [bool(np.isnan(x)) for x in arr]
        else:
            missing = [r == fill_elem for r in raw]
        if cls == h5t.STRING:
            pad = b" " if tid.get_strpad() == h5t.STR_SPACEPAD else b"\x00"
            keys = [r.rstrip(pad) for r in raw]
            canon = keys
        elif cls == h5t.OPAQUE:
            keys = raw
            canon = raw
        elif isfloat:
            keys = [float(x) for x in arr]
            le = arr.dtype.newbyteorder("<")
            canon = [
                np.array(0.0 if x == 0 else x, dtype=le).tobytes() for x in arr
            ]
        else:  # integers, enums, booleans: by code
            base = arr.dtype if cls != h5t.ENUM else arr.dtype
            keys = [int(x) for x in arr]
            le = arr.dtype.newbyteorder("<")
            canon = [np.array(x, dtype=le).tobytes() for x in arr]
    nan = [isfloat and math.isnan(k) for k in keys]

    def elem(r):
        return vals[r] if vlen else raw[r]

    nch = 0 if N == 0 else (math.ceil(N / chunk) if chunk else 1)
    L = chunk if chunk else max(N, 1)
    for idx in mine:
        kind = idx.attrs["KIND"]
        kt = idx.attrs.get_id("KIND").get_type()
        kind = kind.decode() if isinstance(kind, bytes) else kind
        bad = []
        if kt.get_class() != h5t.STRING or kt.is_variable_str() or kt.get_cset() != h5t.CSET_ASCII:
            bad.append("KIND is not fixed-length ASCII")
        for tok, want in (("SOURCE_GENERATION", GEN), ("SOURCE_NROWS", N)):
            a = idx.attrs.get(tok)
            if a is None or idx.attrs[tok].dtype != np.uint64 or int(a) != want:
                bad.append(f"{tok} {a!r} != {want}")
        if kind == "CHUNK_MINMAX":
            exp = []
            for c in range(nch):
                rows = range(c * L, min((c + 1) * L, N))
                lo = hi = None
                nc = sum(1 for r in rows if nan[r])
                fc = sum(1 for r in rows if missing[r])
                for r in rows:
                    if nan[r] or missing[r]:
                        continue
                    if lo is None or keys[r] < keys[lo]:
                        lo = r
                    if hi is None or keys[r] > keys[hi]:
                        hi = r
                mn = fill_elem if lo is None else elem(lo)
                mx = fill_elem if hi is None else elem(hi)
                exp.append((mn, mx, nc, fc, len(rows)))
            st = idx[:nch] if vlen else None
            if idx.dtype.names != ("min", "max", "nan_count", "fill_count", "n"):
                bad.append(f"fields {idx.dtype.names}")
            elif vlen:
                got = [
                    (
                        e["min"] if isinstance(e["min"], bytes) else e["min"].encode(),
                        e["max"] if isinstance(e["max"], bytes) else e["max"].encode(),
                        int(e["nan_count"]),
                        int(e["fill_count"]),
                        int(e["n"]),
                    )
                    for e in st
                ]
                if got != exp:
                    bad.append(f"entries {got} != {exp}")
            else:
                want = b"".join(a + b + struct.pack("<QQQ", x, y, z) for a, b, x, y, z in exp)
                got = raw_read(idx, nch)
                if got != want or len(idx) < nch:
                    bad.append(f"entries {got.hex()} != {want.hex()}")
        elif kind == "SORTED_ROWS":
            cl = [2 if nan[r] else 1 if missing[r] else 0 for r in range(N)]
            perm = sorted(range(N), key=lambda r: (cl[r], keys[r] if cl[r] == 0 else 0, r))
            want = np.array(perm, dtype="<u8").tobytes()
            got = idx[:N]
            if idx.dtype != np.dtype("<u8") or got.tobytes() != want:
                bad.append(f"perm {list(got)} != {perm}")
            if int(idx.attrs["nan_tail_length"]) != cl.count(2):
                bad.append("nan_tail_length")
            if int(idx.attrs["fill_tail_length"]) != cl.count(1):
                bad.append("fill_tail_length")
            if int(idx.attrs["ordered"]) != 1:
                bad.append("ordered")
        elif kind == "BITMAP":
            vds = si[idx.name.rsplit("/", 1)[1] + ".VALUES"]
            if "KIND" in vds.attrs:
                bad.append("values dataset carries KIND")
            cand = sorted(
                (r for r in range(N) if not missing[r] and not nan[r]), key=lambda r: (keys[r], r)
            )
            firsts = []
            for r in cand:
                if not firsts or keys[firsts[-1]] != keys[r]:
                    firsts.append(r)
            K = len(firsts)
            if vlen:
                gotv = vds[()]
                gv = [x if isinstance(x, bytes) else x.encode() for x in gotv]
                if gv != [vals[r] for r in firsts]:
                    bad.append(f"values {gv}")
            elif raw_read(vds, len(vds)) != b"".join(raw[r] for r in firsts):
                bad.append(f"values {raw_read(vds, len(vds)).hex()} != rows {firsts}")
            rb = math.ceil(N / 8)
            bits = np.zeros((K, rb * 8), dtype=np.uint8)
            for k, v in enumerate(firsts):
                for r in range(N):
                    if not nan[r] and keys[r] == keys[v]:
                        bits[k, r] = 1
            want = np.packbits(bits, axis=1, bitorder="little") if K else np.zeros((0, rb), np.uint8)
            got = idx[:, :rb].copy() if K else np.zeros((0, rb), np.uint8)
            if N % 8 and K:
                got[:, -1] &= (1 << (N % 8)) - 1
            if idx.dtype != np.uint8 or idx.shape[0] != K or got.tobytes() != want.tobytes():
                bad.append(f"bits {got.tolist()} != {want.tolist()}")
            if int(idx.attrs["ordered"]) != 1:
                bad.append("ordered")
        elif kind == "CHUNK_BLOOM":
            k = int(idx.attrs["k"])
            m = int(idx.attrs["m_bits"])
            seed = int(idx.attrs["seed"])
            hf = idx.attrs["hash_family"]
            if (hf.decode() if isinstance(hf, bytes) else hf) != "murmur3_x64_128_double":
                bad.append("hash_family")
            for a, t in (("k", np.uint16), ("m_bits", np.uint64), ("seed", np.uint32)):
                if idx.attrs[a].dtype != t:
                    bad.append(f"{a} dtype {idx.attrs[a].dtype}")
            if m % 8 or idx.shape[1] * 8 != m:
                bad.append("m_bits")
            exp = np.zeros((nch, m // 8), dtype=np.uint8)
            dmax = 0
            for c in range(nch):
                ks = set()
                for r in range(c * L, min((c + 1) * L, N)):
                    if missing[r] or nan[r]:
                        continue
                    ks.add(canon[r])
                    h = mmh3.hash128(canon[r], seed, True, False)
                    ha, hb = h & (2**64 - 1), h >> 64
                    for i in range(k):
                        gbit = (ha + i * hb) % m
                        exp[c, gbit >> 3] |= 1 << (gbit & 7)
                dmax = max(dmax, len(ks))
            if idx[:nch].tobytes() != exp.tobytes():
                bad.append("filters differ")
            if fpr is not None:
                n = max(dmax, 1)
                mm = math.ceil(-n * math.log(fpr) / math.log(2) ** 2)
                mm = max(mm, 64)
                mm = (mm + 7) // 8 * 8
                kk = min(max(math.floor(mm / n * math.log(2) + 0.5), 1), 32)
                if (mm, kk) != (m, k):
                    bad.append(f"sizing (m, k) = {(m, k)}, expected {(mm, kk)}")
        else:
            bad.append("unknown KIND")
        say(not bad, cname, kind, "; ".join(bad))
