// The package in a browser (`cargo xtask wasm-test`, when Debian's chromium is installed): a
// local HTTP server (with Range support) serves the package and a page that loads it as an ES
// module (the browser branch of index.js's loader), reads FILE with fromBytes and with
// fromUrl, and puts what it read in its title; headless Chromium prints the DOM. The page's
// results must equal those of the same package under Node.
//
//   node browser.mjs PACKAGE_DIR FILE DATASET
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join, extname, normalize } from "node:path";

const [pkgDir, dataPath, dataset] = process.argv.slice(2);
const { H5File } = await import(pathToFileURL(join(pkgDir, "index.js")).href);

const count = (n) => 1 + (n.children ?? []).reduce((a, c) => a + count(c), 0);
const sha = (a) => createHash("sha256").update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest("hex");

// What the page must find, from the same package under Node.
const file = H5File.fromBytes(readFileSync(dataPath));
const values = file.get(dataset).read();
const want = { nodes: count(file.tree()), sha: sha(values), len: values.length };

const page = `<!doctype html><html><head><title>pending</title></head><body><script type="module">
import { H5File } from "/pkg/index.js";
const count = (n) => 1 + (n.children ?? []).reduce((a, c) => a + count(c), 0);
async function sha(a) {
  const d = await crypto.subtle.digest("SHA-256", new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}
try {
  const bytes = new Uint8Array(await (await fetch("/data/file.h5")).arrayBuffer());
  const f = H5File.fromBytes(bytes);
  const values = f.get(${JSON.stringify(dataset)}).read();
  const r = await H5File.fromUrl(new URL("/data/file.h5", location.href).href, { blockSize: 4096 });
  const rv = await (await r.get(${JSON.stringify(dataset)})).read();
  let error = "";
  try { f.get("/no/such/object"); } catch (e) { error = e instanceof Error ? e.message : "not an Error"; }
  document.title = "OK " + JSON.stringify({ nodes: count(f.tree()), remoteNodes: count(await r.tree()),
    sha: await sha(values), remoteSha: await sha(rv), len: values.length, requests: r.requests, error });
} catch (e) {
  document.title = "FAIL " + (e && e.stack || e);
}
</script></body></html>`;

const types = { ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };
const server = createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  let path;
  if (url.pathname === "/data/file.h5") path = dataPath;
  else if (url.pathname.startsWith("/pkg/")) path = join(pkgDir, normalize(url.pathname.slice(5)).replace(/^(\.\.[/\\])+/, ""));
  let size;
  try {
    size = statSync(path).size;
  } catch {
    return res.writeHead(404).end();
  }
  const body = readFileSync(path);
  const type = types[extname(path)] ?? "application/octet-stream";
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  if (m === null) return res.writeHead(200, { "content-type": type, "content-length": size }).end(body);
  const start = Number(m[1]);
  const last = Math.min(Number(m[2]), size - 1);
  res
    .writeHead(206, { "content-type": type, "content-range": `bytes ${start}-${last}/${size}` })
    .end(body.subarray(start, last + 1));
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${server.address().port}/`;

const browser = process.env.CHROMIUM ?? "/usr/bin/chromium";
const dom = await new Promise((ok, fail) =>
  execFile(
    browser,
    ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000", "--dump-dom", url],
    { timeout: 60_000, maxBuffer: 1 << 20 },
    (err, stdout, stderr) => (err ? fail(new Error(`${browser}: ${err.message}\n${stderr}`)) : ok(stdout)),
  ),
);
server.close();
const title = /<title>(.*)<\/title>/s.exec(dom)?.[1] ?? "";
if (!title.startsWith("OK ")) throw new Error(`the page did not finish: ${title.replaceAll("&quot;", '"').slice(0, 2000)}`);
const got = JSON.parse(title.slice(3).replaceAll("&quot;", '"').replaceAll("&amp;", "&"));
const same =
  got.nodes === want.nodes && got.remoteNodes === want.nodes && got.sha === want.sha &&
  got.remoteSha === want.sha && got.len === want.len && /not found/.test(got.error);
if (!same) throw new Error(`browser ${JSON.stringify(got)} != node ${JSON.stringify(want)}`);
console.log(
  `browser: headless Chromium loaded the package, read ${want.nodes} objects and ${dataset} ` +
    `(${want.len} values) with fromBytes and fromUrl (${got.requests} range requests), as under Node`,
);
