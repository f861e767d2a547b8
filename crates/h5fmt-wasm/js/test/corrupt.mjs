// The package never traps on a malformed file: every single-byte corruption (each byte
// inverted, at every offset up to LIMIT) of each file given is opened, walked and read
// through the package under Node, HEP001 tables included; each step must give a value or
// throw a plain `Error` from the reader. A panic in the module would be a WebAssembly trap
// (panic=abort), a `WebAssembly.RuntimeError`, which fails the run. So does a file too big
// for the module's memory.
//
//   node corrupt.mjs PACKAGE_DIR FILE...
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const LIMIT = 4096;
const [pkgDir, ...files] = process.argv.slice(2);
const { H5File } = await import(pathToFileURL(join(pkgDir, "index.js")).href);

function step(what, f) {
  try {
    return f();
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError || !(e instanceof Error) || e.message === "") {
      throw new Error(`${what}: not a reader error: ${e?.stack ?? e}`);
    }
    return undefined;
  }
}

function visit(file, node) {
  for (const c of node.children ?? []) {
    const o = step(`get ${c.path}`, () => file.get(c.path));
    if (o !== undefined) {
      step(`${c.path} attrs`, () => o.attrs);
      step(`${c.path} dtype`, () => o.dtype);
      if (o.kind === "dataset") {
        step(`${c.path} read`, () => o.read());
        step(`${c.path} readSlice`, () => o.readSlice("::2"));
      }
      o.free();
    }
    visit(file, c);
  }
}

let cases = 0;
let opened = 0;
for (const path of files) {
  const good = readFileSync(path);
  for (let at = 0; at < Math.min(good.length, LIMIT); at++) {
    const bad = Uint8Array.from(good);
    bad[at] ^= 0xff;
    const where = `${path} with byte ${at} inverted`;
    cases++;
    const file = step(`${where}: open`, () => H5File.fromBytes(bad));
    if (file === undefined) continue;
    opened++;
    const tree = step(`${where}: tree`, () => file.tree());
    if (tree !== undefined) visit(file, tree);
    for (const t of step(`${where}: tables`, () => file.tables()) ?? []) {
      const table = step(`${where}: table ${t}`, () => file.table(t));
      if (table === undefined) continue;
      step(`${where}: ${t} schema`, () => table.schema());
      step(`${where}: ${t} read`, () => table.read());
      table.free();
    }
    file.free();
  }
}
// Bytes too many for the module's memory (4 GiB at most; zero pages, never touched).
const huge = step("fromBytes of 4 GiB", () => H5File.fromBytes(new Uint8Array(2 ** 32 - 16)));
if (huge !== undefined) throw new Error("fromBytes of 4 GiB of zeros opened a file");
console.log(`corrupt: ${cases} corrupted files (${opened} opened) and a 4 GiB input, no trap`);
