"""Random HEP001 tables and WHERE expressions, evaluated with numpy: the oracle of
tests/query_numpy.rs.

usage: query_oracle.py OUT.h5 SEED NQUERIES  -> JSON [{"where": ..., "rows": [...]}, ...] on stdout

The table (written with h5py, raw attributes) has: i32 (fill -2147483647, some missing),
u64 (fill 2**64-1, values beyond 2**63), f64 (NaN fill: NaN rows are missing), f32 (the Table 1
sentinel fill, NaN as data, -0.0), cat (int8 codes into vlen-string labels, fill -127),
s (vlen UTF-8, fill ''), e (enum with a MISSING member as fill); for odd seeds the
numeric columns are compressed (gzip; zstd for seed 3). Semantics (SQL three-valued):
a missing row satisfies no comparison or IN; NOT of unknown is unknown; NaN compares false.
"""
import json
import sys

import h5py
import numpy as np

out, seed, nq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
N = int(rng.integers(1, 5000))
SENT = np.float32(9.9692099683868690e+36)

i32 = rng.integers(-50, 50, N).astype(np.int32)
i32_m = rng.random(N) < 0.1
i32[i32_m] = -2147483647
u64 = rng.choice(np.array([0, 1, 7, 2**63, 2**63 + 5, 2**64 - 2], dtype=np.uint64), N)
u64_m = rng.random(N) < 0.05
u64[u64_m] = np.uint64(2**64 - 1)
f64 = rng.normal(0, 10, N).round(1)
f64_m = rng.random(N) < 0.1
f64[f64_m] = np.nan
f32 = rng.normal(0, 5, N).astype(np.float32).round(1)
f32[rng.random(N) < 0.05] = np.float32(np.nan)  # data, not missing
f32[rng.random(N) < 0.05] = np.float32(-0.0)
f32_m = rng.random(N) < 0.1
f32[f32_m] = SENT
labels = ["apple", "banana", "cherry", "date", "é"]
cat = rng.integers(0, len(labels), N).astype(np.int8)
cat_m = rng.random(N) < 0.1
cat[cat_m] = -127
words = ["", "a", "ab", "abc", "b", "ba", "zz", "日本", "é"]
s = np.array([words[k] for k in rng.integers(0, len(words), N)], dtype=object)
s_m = s == ""
emap = {"RED": 0, "GREEN": 1, "BLUE": 2, "MISSING": -1}
e = rng.choice(np.array([0, 1, 2, -1], dtype=np.int8), N)
e_m = e == -1

with h5py.File(out, "w") as f:
    g = f.create_group("t")
    g.attrs["CLASS"] = np.bytes_(b"COLUMN_TABLE")
    g.attrs["VERSION"] = np.bytes_(b"1.0")
    g.attrs["NROWS"] = np.uint64(N)

    def col(name, data, dtype, fill):
        # Odd seeds: compressed columns (the engine consults a Bloom filter
        # before SORTED_ROWS on filtered columns; its probes decode a prefix
        # of a chunk the first time).
        comp = {}
        if seed == 3:
            import hdf5plugin
            comp = hdf5plugin.Zstd(clevel=3)
        elif seed % 2:
            comp = {"compression": "gzip"}
        d = g.create_dataset(name, shape=(N + 7,), dtype=dtype, chunks=(int(rng.integers(50, 900)),),
                             maxshape=(None,), fillvalue=fill, **comp)
        d[:N] = data
        d[N:] = data[:7] if N >= 7 else d[N:]  # reserved tail with real-looking values
        return d

    col("i32", i32, np.int32, -2147483647)
    col("u64", u64, np.uint64, np.uint64(2**64 - 1))
    col("f64", f64, np.float64, np.nan)
    col("f32", f32, np.float32, SENT)
    c = col("cat", cat, np.int8, -127)
    cg = g.create_group("CATEGORIES")
    cd = cg.create_dataset("cat__CATEGORIES", data=np.array(labels, dtype=h5py.string_dtype()))
    c.attrs.create("CATEGORIES", cd.ref, dtype=h5py.ref_dtype)
    col("s", s, h5py.string_dtype(), "")
    col("e", e, h5py.enum_dtype(emap, basetype="i1"), -1)

cols = {
    "i32": (i32.astype(object), i32_m, "int"),
    "u64": (u64.astype(object), u64_m, "int"),
    "f64": (f64, f64_m, "float"),
    "f32": (f32.astype(np.float64), f32_m, "float"),
    "cat": (np.array([labels[k] if 0 <= k < len(labels) else "" for k in cat], dtype=object), cat_m, "str"),
    "s": (s, s_m, "str"),
    "e": (np.array([{v: k for k, v in emap.items()}[k] for k in e], dtype=object), e_m, "str"),
}
lits = {
    "int": lambda: int(rng.choice([-60, -10, 0, 3, 49, 2**63, 2**63 + 5, 2**64 - 2])) if rng.random() < 0.9
    else float(rng.choice([2.5, -0.5, 1e30])),
    "float": lambda: float(rng.choice([-10.5, -1, 0, 0.0, 2.5, 7, 1e30])),
    "str": lambda: str(rng.choice(labels + words + ["RED", "GREEN", "BLUE", "MISSING", "zzz"])),
}


def sql(v):
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v) if isinstance(v, float) else str(v)


def cmp(vals, op, lit):
    # Python comparisons of exact ints / floats / str (strings byte-wise as UTF-8).
    def one(x):
        if isinstance(x, float) and x != x:
            return False
        if isinstance(lit, str) != isinstance(x, str):
            return False
        if isinstance(x, str):
            a, b = x.encode(), lit.encode()
        else:
            a, b = x, lit
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    return np.array([one(x) for x in vals], dtype=bool)


def leaf():
    name = str(rng.choice(list(cols)))
    vals, miss, kind = cols[name]
    r = rng.random()
    if r < 0.15:
        neg = bool(rng.random() < 0.5)
        t = ~miss if neg else miss.copy()
        return "%s IS %sNULL" % (name, "NOT " if neg else ""), t, ~t
    if r < 0.35:
        ls = [lits[kind]() for _ in range(int(rng.integers(1, 4)))]
        m = np.zeros(N, dtype=bool)
        for l in ls:
            m |= cmp(vals, "=", l)
        expr = "%s IN (%s)" % (name, ", ".join(sql(l) for l in ls))
    elif r < 0.42:
        # LIKE 'prefix%': strings by prefix (byte-wise); never true on a number column
        pre = str(rng.choice(["", "a", "b", "ap", "日", "zz", "R"]))
        if kind == "str":
            m = np.array([x.encode().startswith(pre.encode()) for x in vals], dtype=bool)
        else:
            m = np.zeros(N, dtype=bool)
        expr = "%s LIKE %s" % (name, sql(pre + "%"))
    elif r < 0.5 and kind != "str":
        a, b = sorted([lits[kind](), lits[kind]()])
        m = cmp(vals, ">=", a) & cmp(vals, "<=", b)
        expr = "%s BETWEEN %s AND %s" % (name, sql(a), sql(b))
    else:
        op = str(rng.choice(["=", "!=", "<", "<=", ">", ">="]))
        l = lits[kind]()
        m = cmp(vals, op, l)
        expr = "%s %s %s" % (name, op, sql(l))
    return expr, m & ~miss, ~m & ~miss


def tree(depth):
    r = rng.random()
    if depth == 0 or r < 0.4:
        return leaf()
    if r < 0.55:
        e, t, f = tree(depth - 1)
        return "NOT (%s)" % e, f, t
    parts = [tree(depth - 1) for _ in range(int(rng.integers(2, 4)))]
    if r < 0.8:
        t = np.logical_and.reduce([p[1] for p in parts])
        f = np.logical_or.reduce([p[2] for p in parts])
        return "(" + " AND ".join(p[0] for p in parts) + ")", t, f
    t = np.logical_or.reduce([p[1] for p in parts])
    f = np.logical_and.reduce([p[2] for p in parts])
    return "(" + " OR ".join(p[0] for p in parts) + ")", t, f


res = []
for _ in range(nq):
    e, t, _f = tree(3)
    # SQL SUM of each numeric column over the rows, missing rows skipped,
    # in float64 (None: NaN, which JSON cannot carry).
    sums = {}
    for name, (vals, m) in {"i32": (i32, i32_m), "u64": (u64, u64_m), "f64": (f64, f64_m),
                            "f32": (f32, f32_m)}.items():
        x = float(np.sum(vals[t & ~m].astype(np.float64)))
        sums[name] = None if np.isnan(x) else x
    res.append({"where": e, "rows": [int(i) for i in np.nonzero(t)[0]], "sums": sums})
json.dump({"nrows": N, "queries": res}, sys.stdout)
