"""pyarrow's reading of a Parquet file (or polars' of a CSV/JSON-lines
file), as the canonical cells of ../../h5table/tests/arrow_oracle.py:
{"nrows": N, "columns": {name: {"cells": [...]}}}.

usage: table_io_cells.py parquet FILE
"""
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def bits(x, t):
    if pa.types.is_float16(t):
        return format(int(np.array([x], dtype="<f2").view("<u2")[0]), "x")
    if pa.types.is_float32(t):
        return format(int(np.array([x], dtype="<f4").view("<u4")[0]), "x")
    return format(int(np.array([x], dtype="<f8").view("<u8")[0]), "x")


def cells(arr):
    t = arr.type
    if pa.types.is_dictionary(t):
        values = cells(arr.dictionary)
        return [None if k is None else values[k] for k in arr.indices.to_pylist()]
    if pa.types.is_struct(t):
        kids = [cells(arr.field(i)) for i in range(t.num_fields)]
        valid = arr.is_valid().to_pylist()
        return [list(row) if ok else None for ok, row in zip(valid, zip(*kids))] if kids else []
    if pa.types.is_floating(t):
        if pa.types.is_float16(t):
            np_vals = arr.to_numpy(zero_copy_only=False)
        else:
            np_vals = arr.fill_null(0).to_numpy()
        valid = arr.is_valid().to_pylist()
        return [bits(x, t) if ok else None for x, ok in zip(np_vals, valid)]
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t):
        return [None if b is None else b.hex() for b in arr.to_pylist()]
    return arr.to_pylist()


def main():
    kind, path = sys.argv[1], sys.argv[2]
    assert kind == "parquet"
    table = pq.read_table(path)
    out = {"nrows": table.num_rows, "columns": {}, "types": {}}
    for name, col in zip(table.column_names, table.columns):
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        out["columns"][name] = {"cells": cells(arr)}
        out["types"][name] = str(arr.type)
    json.dump(out, sys.stdout)


main()
