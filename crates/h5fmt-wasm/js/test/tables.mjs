// HEP001 tables through the package under Node (`cargo xtask wasm-test`), against the public
// conformance corpus (shared/hep001: tables h5col and h5py wrote, expected answers computed
// with numpy from the generated arrays, rows as CSV): for each conformant file, the table
// paths, NROWS, column names, each column's missing count, and the values of int, float,
// string and categorical columns must equal the expected ones; the same through fromFile.
//
//   node tables.mjs PACKAGE_DIR CORPUS_FILES_DIR
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import assert from "node:assert/strict";
import { parseCsv } from "./csv.mjs";

const [pkgDir, dir] = process.argv.slice(2);
const { H5File } = await import(pathToFileURL(join(pkgDir, "index.js")).href);

const number = (t) => (t === "inf" ? Infinity : t === "-inf" ? -Infinity : t === "nan" ? NaN : Number(t));

function sameFloat(got, text, size) {
  const want = number(text);
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (size === 4) return got === Math.fround(want);
  if (size === 2) return got === want || Math.abs(got - want) <= Math.abs(want) * 1e-3;
  return got === want;
}

let tables = 0;
let checked = 0;
for (const name of readdirSync(dir).filter((f) => /^c\d+.*\.expected\.json$/.test(f)).sort()) {
  const exp = JSON.parse(readFileSync(join(dir, name), "utf8"));
  const file = H5File.fromBytes(readFileSync(join(dir, exp.file)));
  assert.deepEqual(file.tables(), exp.ls.map((t) => t.path), `${exp.file}: table paths`);
  for (const [path, t] of Object.entries(exp.tables)) {
    const where = `${exp.file} ${path}`;
    const table = file.table(path);
    assert.equal(Number(table.nrows), t.nrows, `${where}: NROWS`);
    const schema = table.schema();
    const byName = new Map(schema.map((c) => [c.name, c]));
    const rows = table.read();
    for (const col of t.columns) {
      const c = byName.get(col.name);
      if (c === undefined) continue; // list columns are not read yet
      const mask = rows.missing[col.name];
      assert.equal(mask.length, t.nrows, `${where} ${col.name}: rows`);
      assert.equal(mask.reduce((a, b) => a + b, 0), col.missing, `${where} ${col.name}: missing`);
    }
    if (t.csv == null) continue;
    const [header, ...body] = parseCsv(readFileSync(join(dir, t.csv), "utf8"));
    assert.equal(body.length, t.nrows, `${where}: CSV rows`);
    for (const [k, colName] of header.entries()) {
      const c = byName.get(colName);
      if (c === undefined || !["int", "float", "string", "categorical"].includes(c.kind)) continue;
      const data = rows.columns[colName];
      const mask = rows.missing[colName];
      for (let i = 0; i < body.length; i++) {
        const text = body[i][k];
        const at = `${where} ${colName}[${i}]`;
        if (mask[i]) {
          assert.equal(text, "", `${at}: missing here, CSV has ${text}`);
          continue;
        }
        if (c.kind === "int") assert.equal(String(data[i]), text, at);
        else if (c.kind === "float") assert.ok(sameFloat(data[i], text, c.dtype.size), `${at}: ${data[i]} vs ${text}`);
        else if (c.kind === "string") assert.equal(data[i], text, at);
        else assert.equal(String(c.categories[Number(data[i])]), text, at);
        checked++;
      }
    }
    // A window of rows and columns, lazily from the file system, equals the same rows read whole.
    const names = schema.slice(0, 2).map((c) => c.name);
    const lo = Math.min(3, t.nrows);
    const hi = Math.min(lo + 17, t.nrows);
    const local = await H5File.fromFile(join(dir, exp.file), { blockSize: 4096 });
    const window = await (await local.table(path)).read({ columns: names, rows: [lo, hi] });
    for (const n of names) {
      const whole = rows.columns[n];
      assert.deepEqual(Array.from(window.columns[n]), Array.from(whole.slice(lo, hi)), `${where} ${n}: window`);
      assert.deepEqual(Array.from(window.missing[n]), Array.from(rows.missing[n].slice(lo, hi)));
    }
    await local.free();
    tables++;
    table.free();
  }
  file.free();
}
assert.ok(tables >= 20, `only ${tables} tables`);
console.log(`tables: ${tables} HEP001 tables of the corpus, ${checked} values equal the CSV's, missing counts as expected`);
