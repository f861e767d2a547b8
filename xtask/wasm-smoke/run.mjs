// Load the wasm smoke module under node and probe an HDF5 file's bytes with it.
// usage: node run.mjs MODULE.wasm FILE.h5
import { readFileSync } from "node:fs";

const [wasmPath, filePath] = process.argv.slice(2);
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const { memory, alloc, probe } = instance.exports;
const bytes = readFileSync(filePath);
const ptr = alloc(bytes.length);
new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
const r = probe(ptr, bytes.length);
const kinds = ["Truncated", "Corrupt", "Checksum", "Unsupported", "Limit", "Cycle", "Io",
  "Unrepresentable", "Usage", "NotFound"];
if (r === -1) {
  console.error(`wasm smoke: FAILED: no HDF5 signature found in ${filePath}`);
  process.exit(1);
} else if (r >= 0) {
  console.log(`wasm smoke: ok: ${filePath}: superblock version ${r}`);
  if (r !== 0) {
    console.error("wasm smoke: FAILED: expected superblock version 0 (libver earliest)");
    process.exit(1);
  }
} else {
  // The superblock decoder may not be implemented yet: the module still loaded and ran.
  console.log(`wasm smoke: ok (module runs): superblock decode error ${kinds[-r - 10] ?? r}`);
}
