"""Canonical dumps of many files in one process, for tests/repack.rs.

Reads file paths (one per line) on stdin; writes one JSON line per file:
{"ok": DOC} or {"err": "message"}, with "secs": the time taken. DOC is h5canon.py's dump (libhdf5 via h5py).
argv[1]: the directory holding h5canon.py.
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])
import h5canon  # noqa: E402

out = sys.stdout
for line in sys.stdin:
    path = line.rstrip("\n")
    if not path:
        continue
    t0 = time.time()
    try:
        rec = {"ok": h5canon.dump(path)}
    except Exception as e:  # every failure is reported, not raised
        rec = {"err": " ".join(("%s: %s" % (type(e).__name__, e)).split())}
    rec["secs"] = round(time.time() - t0, 3)
    out.write(json.dumps(rec, ensure_ascii=False))
    out.write("\n")
    out.flush()
