// The package side of `cargo xtask wasm-test`: the JSON summary of each file given, read
// through the h5fmt package under Node, in the form of crates/h5cli/examples/wasm_summary.rs
// (which the xtask compares it with).
//
//   node summary.mjs PACKAGE_DIR FILE...
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [pkgDir, ...files] = process.argv.slice(2);
const { H5File } = await import(pathToFileURL(join(pkgDir, "index.js")).href);

const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");
const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
// Integers beyond 2^53 as strings, as the native summary writes them.
const big = (_k, v) => (typeof v === "bigint" ? (v <= SAFE && v >= -SAFE ? Number(v) : v.toString()) : v);

function attempt(f) {
  try {
    return { ok: f() };
  } catch (e) {
    if (!(e instanceof Error)) throw new Error(`thrown non-Error: ${e}`);
    return { err: e.message };
  }
}

function flatten(node, out) {
  for (const c of node.children ?? []) {
    out.push(c);
    flatten(c, out);
  }
  return out;
}

function object(file, path) {
  const o = file.get(path);
  const m = { kind: o.kind };
  const attrs = attempt(() => o.attrs);
  if (attrs.err !== undefined) m.attrs_error = attrs.err;
  else {
    m.attrs = {};
    for (const [name, a] of Object.entries(attrs.ok)) {
      m.attrs[name] = { dtype: a.dtype, shape: a.shape };
      const h = a.shape === null ? undefined : digest(a.value, a.dtype);
      if (h !== undefined) m.attrs[name].value_sha256 = h;
    }
  }
  if (o.kind === "group") return m;
  const dtype = attempt(() => o.dtype);
  m.dtype = dtype.err !== undefined ? null : dtype.ok;
  if (o.kind !== "dataset") return m;
  m.shape = o.shape;
  const raw = attempt(() => o.readRaw());
  if (raw.err !== undefined) {
    m.read_error = raw.err;
    return m;
  }
  m.raw_sha256 = sha(raw.ok);
  hash(m, "typed", m.dtype, () => o.read());
  // A strided selection along the first dimension (the native side reads the same).
  if (m.shape !== null && m.shape.length > 0) hash(m, "slice", m.dtype, () => o.readSlice("::2"));
  return m;
}

// `NAME_sha256` of the data `read` gives (typed array bytes, or the JSON of a list of
// strings), or `NAME_error`.
function hash(m, name, dtype, read) {
  const data = attempt(read);
  if (data.err !== undefined) m[`${name}_error`] = data.err;
  else {
    const h = digest(data.ok, dtype);
    if (h !== undefined) m[`${name}_sha256`] = h;
  }
}

// The SHA-256 of a typed array's bytes, or of the JSON of a list of strings; undefined for
// other data.
function digest(data, dtype) {
  if (ArrayBuffer.isView(data)) return sha(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  if (dtype?.class !== "string") return undefined;
  return sha(JSON.stringify(data.map((s) => (typeof s === "string" ? s : { hex: hex(s) }))));
}

function summarize(path) {
  const opened = attempt(() => H5File.fromBytes(readFileSync(path)));
  if (opened.err !== undefined) return { error: opened.err };
  const file = opened.ok;
  try {
    const tree = attempt(() => file.tree());
    if (tree.err !== undefined) return { error: tree.err };
    const objects = {};
    for (const n of flatten(tree.ok, [])) {
      const got = attempt(() => object(file, n.path));
      objects[n.path] = got.err !== undefined ? { get_error: got.err } : got.ok;
    }
    return { objects };
  } finally {
    file.free();
  }
}

const out = {};
for (const f of files) out[f] = summarize(f);
process.stdout.write(JSON.stringify(out, big) + "\n");
