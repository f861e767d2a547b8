// The viewer page (js/viewer) in Debian's headless Chromium (`cargo xtask wasm-test`), driven
// over the DevTools protocol on a pipe (--remote-debugging-pipe: no driver, no npm package). A
// local HTTP server with Range support serves the package, the big chunked file and the HEP001
// corpus, and counts the bytes it sends of each file. Checks, each against h5py or the corpus
// CSV (ORACLE is viewer_oracle.py's output):
//   - the big file opened by URL: the 2-D preview's window min/max (and where they are) equal
//     h5py's, for the default window and a chosen one, and the pixels at the min and max have
//     the colour map's end colours; less than 1 % of the file transferred (server count);
//   - a testdata file opened with the file input (fromBytes): the tree lists h5py's objects;
//     every dataset gets a preview and no error, 1-D strings shown as h5py reads them, a 1-D
//     dataset plotted with h5py's min and max; every dataset of SWEEP.h5 previewed too;
//   - a HEP001 table by URL: the grid's cells equal the corpus CSV, page 1 and page 2, and the
//     filter keeps exactly the CSV rows of the page it should; page 1 of every corpus table
//     equals its CSV;
//   - a server ignoring Range: its error, then the whole file when the box is ticked;
//   - a URL that does not exist, a file that is not HDF5 dropped on the page (drag events),
//     a package without its .wasm: the error is shown in the page.
// Screenshots go to OUT_DIR.
//
//   node viewer.mjs PACKAGE_DIR BIG.h5 TREE.h5 SWEEP.h5 CORPUS_FILES_DIR ORACLE.json OUT_DIR
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, openSync, readdirSync, readFileSync, readSync, closeSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, extname, normalize, resolve } from "node:path";
import assert from "node:assert/strict";
import { parseCsv } from "./csv.mjs";

const [pkgDir, bigPath, treePath, sweepPath, corpusDir, oraclePath, outDir] = process.argv.slice(2);
const oracle = JSON.parse(readFileSync(oraclePath, "utf8"));
const TABLE_FILE = "c11_categorical.h5";

// ---- The server: /pkg/… the package, /data/big.h5, /hep/… the corpus; bytes counted per path.
const served = new Map();
const types = { ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json", ".html": "text/html", ".css": "text/css" };
const safe = (dir, rest) => join(dir, normalize(rest).replace(/^(\.\.[/\\])+/, ""));
const server = createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  let path;
  if (url.pathname === "/data/big.h5") path = bigPath;
  else if (url.pathname.startsWith("/pkg/")) path = safe(pkgDir, url.pathname.slice(5));
  // The package without its module: the page must say so.
  else if (url.pathname.startsWith("/broken/") && extname(url.pathname) !== ".wasm") path = safe(pkgDir, url.pathname.slice(8));
  else if (url.pathname.startsWith("/hep/")) path = safe(corpusDir, url.pathname.slice(5));
  // The corpus from a server that ignores Range.
  else if (url.pathname.startsWith("/norange/")) path = safe(corpusDir, url.pathname.slice(9));
  let size;
  try {
    size = statSync(path).size;
  } catch {
    return res.writeHead(404).end();
  }
  const type = types[extname(path)] ?? "application/octet-stream";
  const m = url.pathname.startsWith("/norange/") ? null : /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
  const [start, last] = m ? [Number(m[1]), Math.min(Number(m[2]), size - 1)] : [0, size - 1];
  const buf = Buffer.alloc(Math.max(0, last - start + 1));
  const fd = openSync(path, "r");
  readSync(fd, buf, 0, buf.length, start);
  closeSync(fd);
  served.set(url.pathname, (served.get(url.pathname) ?? 0) + buf.length);
  const head = { "content-type": type, "content-length": buf.length, "accept-ranges": "bytes" };
  if (m) res.writeHead(206, { ...head, "content-range": `bytes ${start}-${last}/${size}` }).end(buf);
  else res.writeHead(200, head).end(buf);
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}`;

// ---- Chromium over the DevTools protocol (messages are NUL-terminated JSON on fds 3 and 4).
const profile = mkdtempSync(join(tmpdir(), "h5fmt-viewer-"));
const chrome = spawn(
  process.env.CHROMIUM ?? "/usr/bin/chromium",
  ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", `--user-data-dir=${profile}`, "--no-first-run", "about:blank"],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
);
let stderr = "";
chrome.stdio[2].on("data", (d) => (stderr = (stderr + d).slice(-4000)));
const pending = new Map();
const logs = [];
let nextId = 0;
let inbox = Buffer.alloc(0);
chrome.stdio[4].on("data", (chunk) => {
  inbox = Buffer.concat([inbox, chunk]);
  for (let i; (i = inbox.indexOf(0)) >= 0; inbox = inbox.subarray(i + 1)) {
    const msg = JSON.parse(inbox.subarray(0, i).toString("utf8"));
    if (msg.id !== undefined && pending.has(msg.id)) {
      const { ok, fail, method } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) fail(new Error(`${method}: ${msg.error.message}`));
      else ok(msg.result);
    } else if (msg.method === "Runtime.consoleAPICalled") {
      logs.push(`console.${msg.params.type}: ${msg.params.args.map((a) => a.value ?? a.description).join(" ")}`);
    } else if (msg.method === "Runtime.exceptionThrown") {
      logs.push(`exception: ${msg.params.exceptionDetails.exception?.description ?? msg.params.exceptionDetails.text}`);
    }
  }
});
const exited = new Promise((ok) => chrome.on("exit", ok));
function send(method, params = {}, sessionId = undefined) {
  const id = ++nextId;
  chrome.stdio[3].write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
  return new Promise((ok, fail) => pending.set(id, { ok, fail, method }));
}

const results = [];
let compared = 0; // grid cells compared with the corpus CSV
try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const cdp = (method, params) => send(method, params, sessionId);
  await cdp("Runtime.enable");
  await cdp("Page.enable");
  await cdp("Emulation.setDeviceMetricsOverride", { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });

  /** Evaluate an expression in the page (awaiting a promise); its JSON value. */
  const js = async (expression) => {
    const r = await cdp("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  };
  /** Wait until the page's state is one of `states` after `action` (which starts a task). */
  const settle = async (what, states = ["ready"]) => {
    const t0 = Date.now();
    for (;;) {
      const s = await js("document.body?.dataset.state ?? \"loading\"");
      if (s !== "busy" && s !== "loading") {
        if (!states.includes(s)) {
          const err = await js("document.getElementById('error').textContent");
          throw new Error(`${what}: the page is ${s}: ${err}\n${logs.join("\n")}`);
        }
        return;
      }
      if (Date.now() - t0 > 60_000) throw new Error(`${what}: still ${s} after 60 s\n${logs.join("\n")}`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  };
  const act = async (what, expression, states) => {
    await js(`document.body.dataset.state = "busy"; ${expression}; undefined`);
    await settle(what, states);
  };
  const click = (selector) => `document.querySelector(${JSON.stringify(selector)}).click()`;
  const setValue = (id, v) => `document.getElementById(${JSON.stringify(id)}).value = ${JSON.stringify(String(v))}`;
  const shot = async (name) => {
    const { data } = await cdp("Page.captureScreenshot", { format: "png" });
    writeFileSync(join(outDir, name), Buffer.from(data, "base64"));
  };
  const stats = () => js("Object.assign({}, document.getElementById('stats').dataset)");

  await cdp("Page.navigate", { url: `${base}/pkg/viewer/index.html` });
  await settle("loading the viewer", ["idle"]);

  // 1. The big file by URL; the default window, then a chosen one.
  const big = statSync(bigPath).size;
  await act("opening big.h5", `${setValue("url", "/data/big.h5")}; ${click("#open")}`);
  await act("selecting /run1/data", click('.node[data-path="/run1/data"]'));
  const checkWindow = async (w, name) => {
    const got = await stats();
    const [h, wd] = w.shape;
    assert.equal(Number(got.min), w.min, `${name}: min`);
    assert.equal(Number(got.max), w.max, `${name}: max`);
    assert.equal(Number(got.argmin), w.argmin[0] * wd + w.argmin[1], `${name}: where the min is`);
    assert.equal(Number(got.argmax), w.argmax[0] * wd + w.argmax[1], `${name}: where the max is`);
    const px = await js(`(() => {
      const c = document.getElementById("image");
      const g = c.getContext("2d");
      const at = (r, col) => Array.from(g.getImageData(col, r, 1, 1).data);
      return { w: c.width, h: c.height, lo: at(${w.argmin[0]}, ${w.argmin[1]}), hi: at(${w.argmax[0]}, ${w.argmax[1]}) };
    })()`);
    assert.deepEqual([px.h, px.w], [h, wd], `${name}: image size`);
    assert.deepEqual(px.lo, [0, 0, 0, 255], `${name}: the min pixel is not the map's first colour`);
    assert.deepEqual(px.hi, [255, 255, 255, 255], `${name}: the max pixel is not the map's last colour`);
  };
  await checkWindow(oracle.windows.first, "default window");
  const first = served.get("/data/big.h5");
  await shot("viewer-big.png");
  const c = oracle.windows.chosen;
  await act(
    "showing a chosen window",
    [setValue("row0", c.row0), setValue("col0", c.col0), setValue("height", c.shape[0]), setValue("width", c.shape[1]), click("#show")].join("; "),
  );
  await checkWindow(c, "chosen window");
  const sent = served.get("/data/big.h5");
  const shown = await js("document.getElementById('status').textContent");
  assert.match(shown, new RegExp(`${sent.toLocaleString("en")} bytes transferred`), "the page's count differs from the server's");
  const share = sent / big;
  results.push(
    `big.h5 (${(big / 2 ** 20).toFixed(0)} MiB) by URL: a 512×512 window shown after ${first} bytes, a second ` +
      `${c.shape.join("×")} window after ${sent} in all (${(share * 100).toFixed(2)} % of the file, counted at the server); ` +
      "min, max and their pixels as h5py",
  );
  assert.ok(share < 0.01, `transferred ${(share * 100).toFixed(2)} % of the file (limit 1 %)`);

  // 2. A testdata file through the file input (fromBytes): the tree, then a line plot.
  const { root } = await cdp("DOM.getDocument", {});
  const { nodeId } = await cdp("DOM.querySelector", { nodeId: root.nodeId, selector: "#file" });
  await js('document.body.dataset.state = "busy"');
  await cdp("DOM.setFileInputFiles", { nodeId, files: [resolve(treePath)] });
  await settle("opening the testdata file");
  const nodes = await js('Array.from(document.querySelectorAll("#tree .node"), (b) => [b.dataset.path, b.dataset.kind])');
  const sorted = (a) => a.map((x) => x.join(" ")).sort();
  assert.deepEqual(sorted(nodes), sorted(oracle.objects), "the tree differs from h5py's objects");
  // Every dataset of the file gets a preview, none an error.
  const previews = {};
  const preview = async (path) => {
    await act(`previewing ${path}`, click(`#tree .node[data-path="${path}"]`));
    const what = await js(`(() => { const p = document.getElementById("preview");
      const e = p.querySelector("canvas") ?? p.querySelector("table, #scalar, .muted");
      return e === null ? "none" : e.id || e.textContent; })()`);
    previews[what] = (previews[what] ?? 0) + 1;
    if (what === "none") throw new Error(`${path}: no preview`);
  };
  for (const [path, kind] of oracle.objects) {
    if (kind !== "dataset") continue;
    await preview(path);
    if (oracle.strings[path] !== undefined) {
      const cells = await js('Array.from(document.querySelectorAll("#rows td:not(.index)"), (t) => t.textContent)');
      assert.deepEqual(cells, oracle.strings[path], `${path}: the strings shown`);
    }
  }
  await act(`selecting ${oracle.line.path}`, click(`#tree .node[data-path="${oracle.line.path}"]`));
  const line = await stats();
  assert.equal(Number(line.min), oracle.line.min, "line plot: min");
  assert.equal(Number(line.max), oracle.line.max, "line plot: max");
  assert.ok(await js("document.getElementById('plot') instanceof HTMLCanvasElement"), "no line plot");
  await shot("viewer-tree.png");
  results.push(
    `${treePath}: the tree lists h5py's ${oracle.objects.length} objects; each dataset previewed without an error ` +
      `(${JSON.stringify(previews)}), the strings of ${Object.keys(oracle.strings).length} as h5py's; ${oracle.line.path} plotted, min/max as h5py`,
  );

  // Another file's datasets (null, scalar, zero-sized, 3-D, chunked vlen strings …): each
  // previewed without an error.
  for (const k of Object.keys(previews)) delete previews[k];
  await js('document.body.dataset.state = "busy"');
  await cdp("DOM.setFileInputFiles", { nodeId, files: [resolve(sweepPath)] });
  await settle(`opening ${sweepPath}`);
  const sweep = await js('Array.from(document.querySelectorAll("#tree .node[data-kind=dataset]"), (b) => b.dataset.path)');
  for (const path of sweep) await preview(path);
  results.push(`${sweepPath}: its ${sweep.length} datasets previewed without an error (${JSON.stringify(previews)})`);

  // 3. A HEP001 table by URL: pages 1 and 2 against the corpus CSV, then the filter.
  const grid = () =>
    js(`({ head: Array.from(document.querySelectorAll("#table-grid th"), (t) => t.textContent).slice(1),
           rows: Array.from(document.querySelectorAll("#table-grid tr[data-row]"))
             .filter((r) => !r.hidden)
             .map((r) => [Number(r.dataset.row), Array.from(r.children).slice(1).map((t) => t.dataset.missing ? "" : t.textContent)]) })`);
  const expected = (file) => JSON.parse(readFileSync(join(corpusDir, file.replace(/\.h5$/, ".expected.json")), "utf8"));
  /** The shown rows lo..hi (those `keep` accepts) of a table against its CSV, column by column. */
  const checkPage = async (t, lo, hi, keep = () => true) => {
    const [header, ...body] = parseCsv(readFileSync(join(corpusDir, t.csv), "utf8"));
    const g = await grid();
    const want = body.map((r, i) => [i, r]).slice(lo, hi).filter(([, r]) => keep(r));
    assert.deepEqual(g.rows.map(([i]) => i), want.map(([i]) => i), `${t.path}: rows shown of ${lo}–${hi}`);
    for (const col of t.columns) {
      const [k, j] = [header.indexOf(col.name), g.head.indexOf(col.name)];
      if (k < 0 || !["int", "float", "string", "categorical"].includes(col.kind)) continue;
      assert.ok(j >= 0, `${t.path}: no column ${col.name} in the grid`);
      for (const [n, [i, r]] of want.entries()) {
        const [got, text] = [g.rows[n][1][j], r[k]];
        const at = `${t.path} ${col.name}[${i}]: ${got} vs ${text}`;
        if (col.kind !== "float" || text === "") assert.equal(got, text, at);
        else assert.ok(sameFloat(Number(got), text, col.dtype), at);
        compared++;
      }
    }
    return want.length;
  };
  const matches = expected(TABLE_FILE).tables["/matches"];
  await act("opening the table file", `${setValue("url", `/hep/${TABLE_FILE}`)}; ${click("#open")}`);
  await act("selecting the table", click('#tables .node[data-path="/matches"]'));
  assert.deepEqual((await grid()).head, matches.column_order, "the grid's columns");
  const csvRows = matches.nrows;
  await checkPage(matches, 0, 100);
  await act("next page", click("#next"));
  await checkPage(matches, 100, 200);
  await js(`${setValue("filter", "home_team = Basel")}; document.getElementById("filter").dispatchEvent(new Event("input"))`);
  const kept = await checkPage(matches, 100, 200, (r) => r[0] === "Basel");
  // Years are categorical labels (1999, 2005, 2020, 2024), compared as numbers; missing never match.
  await js(`${setValue("filter", "year >= 2020")}; document.getElementById("filter").dispatchEvent(new Event("input"))`);
  const kept2 = await checkPage(matches, 100, 200, (r) => r[3] !== "" && Number(r[3]) >= 2020);
  // Numbers compared as numbers ("9.5" < "20", not as text).
  await js(`${setValue("filter", "score < 20")}; document.getElementById("filter").dispatchEvent(new Event("input"))`);
  const kept3 = await checkPage(matches, 100, 200, (r) => r[4] !== "" && Number(r[4]) < 20);
  assert.ok(kept3 > 0, "no score < 20 on page 2");
  await shot("viewer-table.png");
  results.push(
    `${TABLE_FILE} /matches by URL: pages 1 and 2 of ${csvRows} rows equal the corpus CSV; filters ` +
      `"home_team = Basel", "year >= 2020" and "score < 20" keep the ${kept}, ${kept2} and ${kept3} CSV rows of page 2 they should`,
  );

  // Every table of the conformant corpus files: page 1 shown without an error, equal to the CSV.
  let swept = 0;
  const before = compared;
  for (const name of readdirSync(corpusDir).filter((f) => /^c\d+.*\.expected\.json$/.test(f)).sort()) {
    const exp = JSON.parse(readFileSync(join(corpusDir, name), "utf8"));
    await act(`opening ${exp.file}`, `${setValue("url", `/hep/${exp.file}`)}; ${click("#open")}`);
    for (const [path, t] of Object.entries(exp.tables)) {
      await act(`showing ${exp.file} ${path}`, click(`#tables .node[data-path="${path}"]`));
      const n = await js('document.querySelectorAll("#table-grid tr[data-row]").length');
      assert.equal(n, Math.min(100, t.nrows), `${exp.file} ${path}: rows on page 1`);
      if (t.csv != null) await checkPage(t, 0, 100);
      swept++;
    }
  }
  results.push(`${swept} tables of the corpus: page 1 shown without an error, its ${compared - before} int, float, string and categorical cells equal to the CSV`);

  // A server without Range: an error, unless the whole file is asked for.
  await act("a server without Range", `${setValue("url", "/norange/c02_ints.h5")}; ${click("#open")}`, ["error"]);
  assert.match(await js("document.getElementById('error').textContent"), /does not support HTTP Range/);
  await act("the whole file", `document.getElementById("whole").checked = true; ${click("#open")}`);
  assert.deepEqual(await js('Array.from(document.querySelectorAll("#tables .node"), (b) => b.dataset.path)'), ["/ints"]);
  await js('document.getElementById("whole").checked = false');
  results.push("a server without Range: the error, then the whole file when the box is ticked");

  // 4. Errors are shown in the page, not a hung page.
  await act("a missing URL", `${setValue("url", "/hep/no-such-file.h5")}; ${click("#open")}`, ["error"]);
  assert.match(await js("document.getElementById('error').textContent"), /HTTP 404/);
  const junk = join(profile, "not-hdf5.h5");
  writeFileSync(junk, "this is not an HDF5 file".repeat(100));
  await js('document.body.dataset.state = "busy"');
  // Dropped on the page this time.
  const drag = (type) =>
    cdp("Input.dispatchDragEvent", { type, x: 600, y: 400, data: { items: [], files: [junk], dragOperationsMask: 1 } });
  await drag("dragEnter");
  await drag("dragOver");
  await drag("drop");
  await settle("a file that is not HDF5", ["error"]);
  const err = await js("document.getElementById('error').textContent");
  assert.ok(await js("!document.getElementById('error').hidden"), "no error shown");
  assert.match(err, /not-hdf5\.h5: corrupt: not an HDF5 file/);
  await shot("viewer-error.png");
  await cdp("Page.navigate", { url: `${base}/broken/viewer/index.html` });
  await settle("the viewer without its module", ["error"]);
  const noModule = await js("document.getElementById('error').textContent");
  assert.ok(noModule.length > 0, "no error shown without the module");
  results.push(
    `errors shown in the page: a 404 URL, a file that is not HDF5 dropped on the page ("${err.slice(0, 60)}"), ` +
      `the module missing ("${noModule.slice(0, 60)}")`,
  );
} catch (e) {
  e.message += stderr && !e.message.includes("\n") ? `\nchromium: ${stderr.slice(-1000)}` : "";
  throw e;
} finally {
  chrome.kill();
  await Promise.race([exited, new Promise((ok) => setTimeout(ok, 5000))]);
  server.closeAllConnections();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(results.map((r) => `viewer: ${r}`).join("\n"));

// A float shown in the grid against the CSV's text (numpy's repr): float16 to its precision,
// float32 both rounded to float32 (the grid shows the shortest text of the float32), float64
// exactly.
function sameFloat(got, text, dtype) {
  const want = text === "inf" ? Infinity : text === "-inf" ? -Infinity : text === "nan" ? NaN : Number(text);
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (dtype.startsWith("float16")) return got === want || Math.abs(got - want) <= Math.abs(want) * 1e-3;
  if (dtype.startsWith("float32")) return Math.fround(got) === Math.fround(want);
  return got === want;
}
