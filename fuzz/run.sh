#!/usr/bin/env bash
# Run one fuzz target for SECONDS: fuzz/run.sh TARGET SECONDS [extra libFuzzer args]
# Installs cargo-fuzz when missing, builds seeds from testdata/ and the shared
# corpus into fuzz/corpus/TARGET/ (gitignored), runs libFuzzer with the HDF5
# dictionary, and prints the executions from libFuzzer's final stats.
set -euo pipefail
target=${1:?usage: fuzz/run.sh TARGET SECONDS}
secs=${2:?usage: fuzz/run.sh TARGET SECONDS}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
corpus=fuzz/corpus/$target
mkdir -p "$corpus" fuzz/logs
if [ -z "$(ls -A "$corpus")" ]; then
  cargo run -q --release -p h5fuzz --bin seeds -- "$target" "$corpus" testdata ../shared/corpus/files || true
  case $target in
    filter_deflate) python3 -c "
import zlib,sys,os
for i,d in enumerate([b'', b'a'*1000, bytes(range(256))*8, os.urandom(300)]):
    open(sys.argv[1]+'/zlib-%d'%i,'wb').write(bytes([4,4,0])+zlib.compress(d))" "$corpus" ;;
    filter_bzip2) python3 -c "
import bz2,sys
for i,d in enumerate([b'', b'a'*1000, bytes(range(256))*8]):
    open(sys.argv[1]+'/bz2-%d'%i,'wb').write(bytes([4,4,0])+bz2.compress(d))" "$corpus" ;;
    filter_blosc2) for v in crates/h5fmt/tests/vectors/blosc2_*.in; do
        { printf '\x80\x08\x00'; cat "$v"; } > "$corpus/$(basename "$v" .in)"; done ;;
  esac
  [ -n "$(ls -A "$corpus")" ] || printf '\x08\x00\x00\x00\x00\x00' > "$corpus/empty"
fi
log=fuzz/logs/$target-$(date -u +%Y%m%dT%H%M%S).log
start=$(date +%s)
set +e
(cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" -- \
  -max_total_time="$secs" -dict=hdf5.dict -rss_limit_mb=2048 -timeout=10 -detect_leaks=0 \
  -print_final_stats=1 "$@") >"$log" 2>&1
rc=$?
set -e
end=$(date +%s)
execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
echo "$(date -u +%F) target=$target wall_seconds=$((end-start)) executions=${execs:-?} exit=$rc log=$log"
grep -E 'ERROR: libFuzzer|panicked at|Test unit written to' "$log" | head -5 || true
exit $rc
