// Lazy reads under Node (`cargo xtask wasm-test`): a local HTTP server with `Range` support
// serves the big chunked file of make_big.py and counts the bytes it sends; the package reads
// a window through H5File.fromUrl and through H5File.fromFile, and the window must equal what
// h5py read (BIG.json) while transferring less than 1 % of the file. Servers that ignore
// `Range`, lie about lengths or hang must give rejected promises with the error text.
//
//   node remote.mjs PACKAGE_DIR BIG.h5 BIG.json SMALL.h5
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { openSync, readFileSync, readSync, statSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import assert from "node:assert/strict";

const [pkgDir, bigPath, expectedPath, smallPath] = process.argv.slice(2);
const { H5File } = await import(pathToFileURL(join(pkgDir, "index.js")).href);
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));

const files = { "/big.h5": bigPath, "/small.h5": smallPath };
const served = { bytes: 0, requests: 0 };

// Modes (first path component): ok, norange (200 with the whole file), liar (after the first
// request, half the bytes a range asks for), hang (after the first request, no answer).
const server = createServer((req, res) => {
  const [, mode, name] = req.url.split("/");
  const path = files[`/${name}`];
  if (path === undefined) {
    res.writeHead(404).end();
    return;
  }
  served.requests++;
  const size = statSync(path).size;
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  if (mode === "norange" || m === null) {
    const all = readFileSync(path);
    served.bytes += all.length;
    res.writeHead(200, { "content-length": all.length }).end(all);
    return;
  }
  const start = Number(m[1]);
  const last = Math.min(Number(m[2]), size - 1);
  if (start >= size || last < start) {
    res.writeHead(416, { "content-range": `bytes */${size}` }).end();
    return;
  }
  if (mode === "hang" && start > 0) return; // never answers
  let n = last - start + 1;
  if (mode === "liar" && start > 0) n = Math.floor(n / 2);
  const buf = Buffer.alloc(n);
  const fd = openSync(path, "r");
  readSync(fd, buf, 0, n, start);
  served.bytes += n;
  res
    .writeHead(206, {
      "content-range": `bytes ${start}-${last}/${size}`,
      "content-length": n,
      "accept-ranges": "bytes",
    })
    .end(buf);
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}`;

const sha = (a) => createHash("sha256").update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest("hex");
const size = statSync(bigPath).size;

async function readWindow(file) {
  const tree = await file.tree();
  assert.deepEqual(tree.children.map((c) => c.path), ["/run1"]);
  const d = await file.get(expected.path);
  assert.deepEqual(d.shape, expected.shape);
  assert.deepEqual(d.dtype, { class: "float", size: 4, order: "le" });
  assert.deepEqual(Object.keys(await d.attrs), ["units"]);
  const w = await d.readSlice(expected.window);
  assert.ok(w instanceof Float32Array);
  assert.equal(w.length, expected.window_len);
  assert.equal(sha(w), expected.window_sha256, "the window differs from h5py's");
  const small = await (await file.get("/run1/small")).read();
  assert.deepEqual(Array.from(small), expected.small);
}

let results = [];
try {
  // HTTP.
  const t0 = performance.now();
  const file = await H5File.fromUrl(`${base}/ok/big.h5`, { blockSize: 65536, cacheBytes: 16 << 20 });
  await readWindow(file);
  const ms = performance.now() - t0;
  const share = served.bytes / size;
  results.push(
    `fromUrl: window of ${expected.window_len} floats of a ${(size / 2 ** 20).toFixed(0)} MiB file: ` +
      `${served.bytes} bytes in ${served.requests} requests (${(share * 100).toFixed(2)} % of the file; ` +
      `client counted ${file.transferredBytes}), ${ms.toFixed(0)} ms`,
  );
  assert.equal(file.transferredBytes, served.bytes);
  assert.ok(share < 0.01, `transferred ${(share * 100).toFixed(2)} % of the file (limit 1 %)`);
  await file.free();

  // The local file system.
  const local = await H5File.fromFile(bigPath);
  await readWindow(local);
  results.push(`fromFile: ${local.transferredBytes} bytes read in ${local.requests} reads`);
  assert.ok(local.transferredBytes / size < 0.01);
  await local.free();

  // Servers that cannot or will not serve ranges.
  await assert.rejects(H5File.fromUrl(`${base}/norange/big.h5`), /does not support HTTP Range requests/);
  const whole = await H5File.fromUrl(`${base}/norange/small.h5`, { wholeFileFallback: true, blockSize: 4096 });
  assert.ok((await whole.tree()).children.length > 0);
  // A file no bigger than a block, sent whole (200) for a range: read without the fallback.
  const oneBlock = await H5File.fromUrl(`${base}/norange/small.h5`, { blockSize: 1 << 20 });
  assert.deepEqual(await oneBlock.tree(), await whole.tree());
  await assert.rejects(H5File.fromUrl(`${base}/norange/small.h5`, { blockSize: 4096 }), /does not support HTTP Range/);
  await assert.rejects(
    (async () => {
      const f = await H5File.fromUrl(`${base}/liar/big.h5`, { blockSize: 4096 });
      await (await f.get(expected.path)).readSlice(expected.window);
    })(),
    /the server sent \d+/,
  );
  await assert.rejects(
    (async () => {
      const f = await H5File.fromUrl(`${base}/hang/big.h5`, { blockSize: 4096, timeoutMs: 300 });
      await f.tree();
    })(),
    (e) => e.name === "TimeoutError" || /timeout|aborted/i.test(String(e)),
  );
  // A malformed file: the error text, as a rejected promise.
  await assert.rejects(H5File.fromUrl(`${base}/ok/missing.h5`), /HTTP 404/);
  results.push("norange, wholeFileFallback, a whole small file, liar, hang, 404: rejected or read as specified");
} finally {
  server.closeAllConnections();
  server.close();
}
console.log(results.map((r) => `remote: ${r}`).join("\n"));
