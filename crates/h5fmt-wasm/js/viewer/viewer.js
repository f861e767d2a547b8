// The h5fmt viewer: static files, no framework, no build step. It loads the package's ESM
// entry (../index.js) and opens a file by URL (H5File.fromUrl: only the blocks a view needs
// are fetched with HTTP Range requests) or from the user's disk (H5File.fromBytes).
//
//   viewer/index.html?url=data.h5&path=/run1/data   opens a URL and selects an object
//
// Every action runs through `task`, which shows its error in the page (#error) and sets
// `document.body.dataset.state` to "busy", "ready" or "error" (the browser test waits on it).
import { H5File } from "../index.js";

/** The largest image window read at once, per side. */
const MAX_SIDE = 512;
/** Points of a 1-D dataset read at once. */
const MAX_POINTS = 100_000;
/** Rows shown of a dataset that is neither plotted nor drawn. */
const FIRST_ROWS = 50;
/** Columns shown of the second dimension in that case. */
const FIRST_COLS = 20;
/** Per-request timeout of fromUrl: a server that does not answer gives an error, not a hung page. */
const TIMEOUT_MS = 20_000;

const $ = (id) => document.getElementById(id);
const state = { file: null, remote: false, name: "", tables: [], seq: 0, view: 0 };

/** An element with attributes/properties and children. */
function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}

function messageOf(e) {
  if (e instanceof Error) return e.message || String(e);
  return String(e);
}

function showError(e) {
  $("error").textContent = messageOf(e);
  $("error").hidden = false;
  document.body.dataset.state = "error";
}

// (index.html shows uncaught errors, also those before this module runs.)
window.addEventListener("unhandledrejection", (ev) => showError(ev.reason));

function status(text) {
  $("status").textContent = text;
}

/** The status line after an action: the file and, for a remote file, what it cost so far. */
function fileStatus() {
  if (state.file === null) return "No file open.";
  if (!state.remote) return `${state.name} (in memory)`;
  const f = state.file;
  // `requests` counts those after the first (which fetched the first block).
  return `${state.name}: ${f.transferredBytes.toLocaleString("en")} bytes transferred in ${f.requests + 1} HTTP requests`;
}

/**
 * Run an action; its error is shown in the page. A later action supersedes an earlier one:
 * `fn` gets a function telling whether it is still current (stale results are dropped).
 */
async function task(label, fn) {
  const seq = ++state.seq;
  const current = () => seq === state.seq;
  document.body.dataset.state = "busy";
  $("error").hidden = true;
  status(`${label}…`);
  try {
    await fn(current);
    if (current()) {
      status(fileStatus());
      document.body.dataset.state = "ready";
    }
  } catch (e) {
    if (current()) {
      status(fileStatus());
      showError(new Error(`${label}: ${messageOf(e)}`));
    }
  }
}

// ---------------------------------------------------------------------------------------
// Opening files

async function closeFile() {
  const old = state.file;
  state.file = null;
  state.tables = [];
  $("tree").replaceChildren(el("p", { className: "muted" }, "No file open."));
  $("tables").replaceChildren();
  $("tables-section").hidden = true;
  $("info").replaceChildren();
  $("preview").replaceChildren();
  try {
    await old?.free();
  } catch {
    // An object of the old file may still be in use by a superseded action.
  }
}

async function openWith(name, remote, open, path) {
  await task(`Opening ${name}`, async (current) => {
    await closeFile();
    const file = await open();
    if (!current()) return file.free();
    state.file = file;
    state.remote = remote;
    state.name = name;
    const [tree, tables] = await Promise.all([file.tree(), file.tables()]);
    state.tables = tables;
    renderTables(tables);
    renderTree(tree);
  });
  if (path && state.file !== null) await select(path);
}

function openUrl(url, path) {
  const href = new URL(url, location.href).href;
  const options = { timeoutMs: TIMEOUT_MS, wholeFileFallback: $("whole").checked };
  return openWith(url, true, () => H5File.fromUrl(href, options), path);
}

function openLocal(blob) {
  $("url").value = "";
  return openWith(blob.name, false, async () => H5File.fromBytes(new Uint8Array(await blob.arrayBuffer())));
}

$("open-url").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const url = $("url").value.trim();
  if (url !== "") openUrl(url);
});
$("file").addEventListener("change", () => {
  const f = $("file").files?.[0];
  if (f) openLocal(f);
});
document.addEventListener("dragover", (ev) => {
  ev.preventDefault();
  document.body.classList.add("drop");
});
document.addEventListener("dragleave", () => document.body.classList.remove("drop"));
document.addEventListener("drop", (ev) => {
  ev.preventDefault();
  document.body.classList.remove("drop");
  const f = ev.dataTransfer?.files?.[0];
  if (f) {
    $("file").value = "";
    openLocal(f);
  }
});

// ---------------------------------------------------------------------------------------
// The tree and the table list

function nodeButton(path, kind, label) {
  const b = el("button", { className: "node", type: "button", title: path, dataset: { path, kind } }, label);
  b.addEventListener("click", () => select(path));
  return b;
}

function renderTree(root) {
  const item = (n, depth) => {
    const button = nodeButton(n.path, n.kind, n.path === "/" ? "/" : n.name);
    if (n.kind !== "group" || !n.children?.length) return el("li", {}, button);
    const list = el("ul", {}, n.children.map((c) => item(c, depth + 1)));
    return el("li", {}, el("details", { open: depth < 2 }, el("summary", {}, button), list));
  };
  $("tree").replaceChildren(el("ul", { className: "tree" }, item(root, 0)));
}

function renderTables(tables) {
  $("tables-section").hidden = tables.length === 0;
  $("tables").replaceChildren(...tables.map((p) => el("li", {}, nodeButton(p, "table", p))));
}

// ---------------------------------------------------------------------------------------
// Formatting

/** A datatype (h5canon DTYPE form) in a line. */
function dtypeText(d) {
  if (d == null) return "";
  const be = d.order === "be" ? " (big-endian)" : "";
  switch (d.class) {
    case "int":
      return `${d.signed ? "int" : "uint"}${d.size * 8}${be}`;
    case "float":
      return `float${d.size * 8}${be}`;
    case "string":
      return `string(${d.size === "vlen" ? "vlen" : d.size}, ${d.cset})`;
    case "compound":
      return `{${d.members.map((m) => `${m.name}: ${dtypeText(m.type)}`).join(", ")}}`;
    case "enum":
      return `enum ${dtypeText(d.base)} {${d.members.map(([n, v]) => `${n}=${v}`).join(", ")}}`;
    case "vlen":
      return `vlen ${dtypeText(d.base)}`;
    case "array":
      return `${dtypeText(d.base)}[${d.dims.join("×")}]`;
    case "ref":
      return `reference (${d.kind})`;
    case "opaque":
      return `opaque(${d.size}${d.tag ? `, "${d.tag}"` : ""})`;
    default:
      return `${d.class}${d.size ? d.size * 8 : ""}${be}`;
  }
}

function shapeText(shape) {
  if (shape === null) return "null (no dataspace)";
  if (shape === undefined) return "";
  if (shape.length === 0) return "scalar";
  return shape.map(String).join(" × ");
}

/** The shortest decimal that reads back as the same float32. */
function float32Text(x) {
  if (!Number.isFinite(x)) return String(x);
  for (let p = 1; p < 10; p++) {
    const t = Number(x.toPrecision(p));
    if (Math.fround(t) === x) return String(t);
  }
  return String(x);
}

/** One value as text (`size`: the byte size of floats, to print float32 briefly). */
function valueText(v, size, limit = 200) {
  let t;
  if (typeof v === "number") t = size === 4 || size === 2 ? float32Text(v) : String(v);
  else if (typeof v === "bigint" || typeof v === "string" || typeof v === "boolean") t = String(v);
  else if (v === null || v === undefined) t = "null";
  else if (v instanceof Uint8Array) t = Array.from(v, (b) => b.toString(16).padStart(2, "0")).join("");
  else if (Array.isArray(v) || ArrayBuffer.isView(v)) {
    const items = Array.from(v.slice(0, 50), (x) => valueText(x, size, limit));
    t = `[${items.join(", ")}${v.length > 50 ? ", …" : ""}]`;
  } else if (typeof v === "object") {
    t = `{${Object.entries(v).map(([k, x]) => `${k}: ${valueText(x, undefined, limit)}`).join(", ")}}`;
  } else t = String(v);
  return t.length > limit ? `${t.slice(0, limit)}…` : t;
}

const floatSize = (d) => (d?.class === "float" ? d.size : undefined);

// ---------------------------------------------------------------------------------------
// Selecting an object

async function select(path) {
  for (const b of document.querySelectorAll(".node.selected")) b.classList.remove("selected");
  for (const b of document.querySelectorAll(".node")) if (b.dataset.path === path) b.classList.add("selected");
  const view = ++state.view;
  await task(`Reading ${path}`, async (current) => {
    const file = state.file;
    if (file === null) throw new Error("no file open");
    const obj = await file.get(path);
    const attrs = await obj.attrs;
    if (!current()) return;
    renderInfo(obj, attrs);
    $("preview").replaceChildren();
    if (state.tables.includes(path)) await showTable(file, path, view);
    else if (obj.kind === "dataset") await showDataset(obj, view);
  });
}

/** An attribute's value; a scalar's without the brackets of its one-element array. */
function attrText(a) {
  if (a.value === null) return "";
  const one = a.shape?.length === 0 && a.value.length === 1;
  return valueText(one ? a.value[0] : a.value, floatSize(a.dtype));
}

function renderInfo(obj, attrs) {
  const props = el("dl", { className: "props" });
  const add = (k, v) => props.append(el("dt", {}, k), el("dd", { dataset: { prop: k } }, v));
  add("path", obj.path);
  add("kind", state.tables.includes(obj.path) ? `${obj.kind} (HEP001 table)` : obj.kind);
  if (obj.kind === "dataset") add("shape", shapeText(obj.shape));
  if (obj.dtype !== undefined) add("dtype", dtypeText(obj.dtype));
  const names = Object.keys(attrs);
  const rows = names.map((n) => {
    const a = attrs[n];
    return el(
      "tr",
      { dataset: { attr: n } },
      el("td", { className: "text" }, n),
      el("td", { className: "text" }, dtypeText(a.dtype)),
      el("td", {}, shapeText(a.shape)),
      el("td", { className: "text" }, attrText(a)),
    );
  });
  const table = names.length
    ? el(
        "table",
        { className: "grid", id: "attrs" },
        el("tr", {}, el("th", {}, "attribute"), el("th", {}, "dtype"), el("th", {}, "shape"), el("th", {}, "value")),
        rows,
      )
    : el("p", { className: "muted" }, "No attributes.");
  $("info").replaceChildren(el("h3", {}, obj.path), props, table);
}

// ---------------------------------------------------------------------------------------
// Dataset previews

const isNumeric = (d) => d?.class === "int" || d?.class === "float";

function toNumbers(data) {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Float64Array.from(data, Number);
  return data;
}

async function showDataset(obj, view) {
  const shape = obj.shape === null ? null : obj.shape?.map(Number);
  if (shape === null || shape === undefined) {
    $("preview").replaceChildren(el("p", { className: "muted" }, "A null dataspace: no values."));
    return;
  }
  if (shape.some((n) => n === 0)) {
    $("preview").replaceChildren(el("p", { className: "muted" }, "No values (a zero-sized dimension)."));
    return;
  }
  if (shape.length === 0) {
    const v = await obj.read();
    if (view !== state.view) return;
    $("preview").replaceChildren(el("h3", {}, "Value"), el("p", { className: "stats", id: "scalar" }, valueText(v[0], floatSize(obj.dtype), 2000)));
    return;
  }
  if (isNumeric(obj.dtype) && shape.length === 1) return showLine(obj, shape[0], view);
  if (isNumeric(obj.dtype)) return showImage(obj, shape, view);
  return showFirstRows(obj, shape, view);
}

/** A number input of the preview controls. */
function numberInput(id, value, min, max) {
  return el("input", { type: "number", id, value: String(value), min: String(min), max: String(max), step: "1" });
}

function readInt(id, lo, hi) {
  const v = Math.trunc(Number($(id).value));
  return Number.isFinite(v) ? Math.min(Math.max(v, lo), hi) : lo;
}

function minMax(data) {
  let min = Infinity;
  let max = -Infinity;
  let argmin = -1;
  let argmax = -1;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v < min) [min, argmin] = [v, i];
    if (v > max) [max, argmax] = [v, i];
  }
  return { min, max, argmin, argmax };
}

/** The stats line of a preview, also kept as data attributes (read by the browser test). */
function statsLine(id, text, s) {
  return el("p", { className: "stats", id, dataset: { min: String(s.min), max: String(s.max), argmin: String(s.argmin), argmax: String(s.argmax) } }, text);
}

// 1-D: a line plot of up to MAX_POINTS values from a start index.
async function showLine(obj, n, view) {
  const go = el("button", { type: "button", id: "show" }, "Show");
  const controls = el("div", { className: "controls" }, "from index", numberInput("start", 0, 0, n - 1), `(${n.toLocaleString("en")} values, ${Math.min(n, MAX_POINTS).toLocaleString("en")} at a time)`, go);
  const out = el("div");
  $("preview").replaceChildren(el("h3", {}, "Line plot"), controls, out);
  const draw = async () => {
    const start = readInt("start", 0, n - 1);
    const end = Math.min(n, start + MAX_POINTS);
    const data = toNumbers(await obj.readSlice(`${start}:${end}`));
    if (view !== state.view) return;
    const s = minMax(data);
    const canvas = el("canvas", { className: "plot", id: "plot", width: 900, height: 300 });
    plotLine(canvas, data, s, start);
    out.replaceChildren(canvas, statsLine("stats", `indices ${start}–${end - 1}: min ${s.min}, max ${s.max} (at ${start + s.argmin}, ${start + s.argmax})`, s));
  };
  go.addEventListener("click", () => task("Reading", draw));
  await draw();
}

function plotLine(canvas, data, s, start) {
  const g = canvas.getContext("2d");
  const [w, h, pad] = [canvas.width, canvas.height, 30];
  g.fillStyle = "#fff";
  g.fillRect(0, 0, w, h);
  g.strokeStyle = "#999";
  g.strokeRect(pad, 5, w - pad - 5, h - pad - 5);
  g.fillStyle = "#555";
  g.font = "11px sans-serif";
  g.fillText(String(s.max), 2, 14);
  g.fillText(String(s.min), 2, h - pad);
  g.fillText(String(start), pad, h - 10);
  const last = String(start + data.length - 1);
  g.fillText(last, w - 6 - g.measureText(last).width, h - 10);
  if (!(s.max >= s.min)) return; // all NaN
  const span = s.max - s.min || 1;
  const x = (i) => pad + ((w - pad - 6) * i) / Math.max(1, data.length - 1);
  const y = (v) => h - pad - ((h - pad - 10) * (v - s.min)) / span;
  g.strokeStyle = "#2a6fb0";
  g.beginPath();
  if (data.length <= w) {
    data.forEach((v, i) => (i === 0 ? g.moveTo(x(i), y(v)) : g.lineTo(x(i), y(v))));
  } else {
    // More points than pixels: each pixel column draws the range of its values.
    const cols = w - pad - 6;
    for (let c = 0; c < cols; c++) {
      const a = Math.floor((c * data.length) / cols);
      const b = Math.max(a + 1, Math.floor(((c + 1) * data.length) / cols));
      const r = minMax(data.subarray(a, b));
      g.moveTo(pad + c + 0.5, y(r.min));
      g.lineTo(pad + c + 0.5, y(r.max) - 0.5);
    }
  }
  g.stroke();
}

// Colour maps: stops [t, r, g, b] interpolated linearly (t from 0 to 1).
const COLORMAPS = {
  heat: [[0, 0, 0, 0], [0.35, 150, 20, 10], [0.7, 250, 170, 30], [1, 255, 255, 255]],
  gray: [[0, 0, 0, 0], [1, 255, 255, 255]],
  ocean: [[0, 10, 20, 80], [0.5, 30, 160, 170], [1, 240, 250, 120]],
};

function colorAt(stops, t) {
  for (let i = 1; i < stops.length; i++) {
    const [t1, ...c1] = stops[i];
    if (t <= t1 || i === stops.length - 1) {
      const [t0, ...c0] = stops[i - 1];
      const f = Math.min(1, Math.max(0, (t - t0) / (t1 - t0)));
      return c0.map((c, k) => Math.round(c + (c1[k] - c) * f));
    }
  }
  return stops[0].slice(1);
}

// 2-D and more: an image of a window of at most MAX_SIDE × MAX_SIDE of the last two
// dimensions (the leading ones at chosen indices), in a colour map from the window's min to max.
async function showImage(obj, shape, view) {
  const rank = shape.length;
  const [rows, cols] = shape.slice(-2);
  const lead = shape.slice(0, -2).map((n, i) => el("label", {}, `dim ${i} `, numberInput(`lead${i}`, 0, 0, n - 1)));
  const map = el("select", { id: "colormap" }, Object.keys(COLORMAPS).map((k) => el("option", { value: k }, k)));
  const go = el("button", { type: "button", id: "show" }, "Show");
  const controls = el(
    "div",
    { className: "controls" },
    lead,
    el("label", {}, "row ", numberInput("row0", 0, 0, rows - 1)),
    el("label", {}, "col ", numberInput("col0", 0, 0, cols - 1)),
    el("label", {}, "height ", numberInput("height", Math.min(rows, MAX_SIDE), 1, MAX_SIDE)),
    el("label", {}, "width ", numberInput("width", Math.min(cols, MAX_SIDE), 1, MAX_SIDE)),
    map,
    go,
  );
  const out = el("div");
  $("preview").replaceChildren(el("h3", {}, `Image (a window of at most ${MAX_SIDE} × ${MAX_SIDE})`), controls, out);
  const draw = async () => {
    const r0 = readInt("row0", 0, rows - 1);
    const c0 = readInt("col0", 0, cols - 1);
    const h = Math.min(readInt("height", 1, MAX_SIDE), rows - r0);
    const w = Math.min(readInt("width", 1, MAX_SIDE), cols - c0);
    const idx = shape.slice(0, -2).map((n, i) => readInt(`lead${i}`, 0, n - 1));
    const sel = [...idx, `${r0}:${r0 + h}`, `${c0}:${c0 + w}`].join(", ");
    const data = toNumbers(await obj.readSlice(sel));
    if (view !== state.view) return;
    const s = minMax(data);
    const stops = COLORMAPS[map.value];
    const canvas = el("canvas", { className: "image", id: "image", width: w, height: h, dataset: { selection: sel } });
    const img = new ImageData(w, h);
    const span = s.max - s.min || 1;
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      const [r, g, b] = Number.isNaN(v) ? [255, 0, 255] : colorAt(stops, (v - s.min) / span);
      img.data.set([r, g, b, 255], i * 4);
    }
    canvas.getContext("2d").putImageData(img, 0, 0);
    const scale = Math.max(1, Math.floor(512 / Math.max(w, h)));
    canvas.style.width = `${w * scale}px`;
    const hover = el("span", { className: "stats" });
    canvas.addEventListener("mousemove", (ev) => {
      const rect = canvas.getBoundingClientRect();
      const x = Math.floor(((ev.clientX - rect.left) * w) / rect.width);
      const y = Math.floor(((ev.clientY - rect.top) * h) / rect.height);
      if (x >= 0 && y >= 0 && x < w && y < h) hover.textContent = `[${r0 + y}, ${c0 + x}] = ${valueText(data[y * w + x], floatSize(obj.dtype))}`;
    });
    const bar = el("span", { className: "colorbar" });
    bar.style.background = `linear-gradient(to right, ${stops.map(([t, r, g, b]) => `rgb(${r},${g},${b}) ${t * 100}%`).join(", ")})`;
    const where = rank > 2 ? `[${sel}]` : `rows ${r0}–${r0 + h - 1}, columns ${c0}–${c0 + w - 1}`;
    out.replaceChildren(
      statsLine("stats", `${where}: min ${s.min}, max ${s.max} `, s),
      el("p", {}, String(s.min), " ", bar, " ", String(s.max), " ", hover),
      canvas,
    );
  };
  go.addEventListener("click", () => task("Reading", draw));
  map.addEventListener("change", () => task("Drawing", draw));
  await draw();
}

// Anything else: the first rows (and columns) as a table.
async function showFirstRows(obj, shape, view) {
  const n = Math.min(shape[0], FIRST_ROWS);
  const m = shape.length > 1 ? Math.min(shape[1], FIRST_COLS) : 1;
  const sel = shape.map((d, i) => (i === 0 ? `0:${n}` : i === 1 ? `0:${m}` : "0")).join(", ");
  const data = await obj.readSlice(sel);
  if (view !== state.view) return;
  const size = floatSize(obj.dtype);
  const compound = obj.dtype?.class === "compound" ? obj.dtype.members.map((x) => x.name) : null;
  const heads = compound ?? (shape.length > 1 ? Array.from({ length: m }, (_, j) => String(j)) : ["value"]);
  const body = [];
  for (let i = 0; i < n; i++) {
    const cells = [];
    for (let j = 0; j < (compound ? heads.length : m); j++) {
      const v = compound ? data[i][heads[j]] : data[i * m + j];
      cells.push(el("td", { className: "text" }, valueText(v, size)));
    }
    body.push(el("tr", {}, el("td", { className: "index" }, String(i)), cells));
  }
  const note = shape.length > 2 ? ` (indices ${sel})` : "";
  $("preview").replaceChildren(
    el("h3", {}, `First ${n} of ${shape[0].toLocaleString("en")} rows${note}`),
    el("table", { className: "grid", id: "rows" }, el("tr", {}, el("th", { className: "index" }, "#"), heads.map((h) => el("th", {}, h))), body),
  );
}

// ---------------------------------------------------------------------------------------
// HEP001 tables: a paged grid; the filter applies to the rows of the current page.

const PAGE_SIZES = [25, 100, 500];

async function showTable(file, path, view) {
  const table = await file.table(path);
  const schema = await table.schema();
  const nrows = Number(table.nrows);
  const t = { table, schema, nrows, page: 0, size: 100, texts: [] };
  const info = el("span", { id: "page-info" });
  const prev = el("button", { type: "button", id: "prev" }, "◀ Previous");
  const next = el("button", { type: "button", id: "next" }, "Next ▶");
  const pageNo = numberInput("page", 1, 1, Math.max(1, Math.ceil(nrows / t.size)));
  const size = el("select", { id: "page-size" }, PAGE_SIZES.map((n) => el("option", { value: String(n), selected: n === t.size }, `${n} rows`)));
  const filter = el("input", {
    type: "search",
    id: "filter",
    size: 30,
    placeholder: "text, or: column op value (= != < <= > >= ~)",
  });
  const matched = el("span", { id: "filter-info", className: "muted" });
  const grid = el("div");
  const cols = schema.map((c) => `${c.name}: ${c.kind}${c.units ? ` [${c.units}]` : ""}`).join(", ");
  $("preview").replaceChildren(
    el("h3", {}, `Table ${path}: ${nrows.toLocaleString("en")} rows (HEP001 ${table.version})`),
    el("p", { className: "muted" }, cols),
    el("div", { className: "controls" }, prev, "page", pageNo, info, next, size),
    el("div", { className: "controls" }, "Filter", filter, matched, el("span", { className: "muted" }, "(filters the rows of this page only)")),
    grid,
  );
  const pages = () => Math.max(1, Math.ceil(nrows / t.size));
  const load = async () => {
    const start = t.page * t.size;
    const end = Math.min(nrows, start + t.size);
    const rows = await table.read({ rows: [start, end] });
    if (view !== state.view) return;
    pageNo.value = String(t.page + 1);
    pageNo.max = String(pages());
    info.textContent = `of ${pages()} (rows ${start}–${Math.max(start, end - 1)})`;
    grid.replaceChildren(tableGrid(schema, rows, start, end - start));
    applyFilter(schema, grid, filter.value, matched);
  };
  const go = (page) => {
    t.page = Math.min(Math.max(page, 0), pages() - 1);
    return task("Reading rows", load);
  };
  prev.addEventListener("click", () => go(t.page - 1));
  next.addEventListener("click", () => go(t.page + 1));
  pageNo.addEventListener("change", () => go(Number(pageNo.value) - 1));
  size.addEventListener("change", () => {
    const first = t.page * t.size;
    t.size = Number(size.value);
    go(Math.floor(first / t.size));
  });
  filter.addEventListener("input", () => applyFilter(schema, grid, filter.value, matched));
  await load();
}

function cellText(c, data, i) {
  const v = data[i];
  if (c.kind === "categorical" && c.categories) return valueText(c.categories[Number(v)], undefined);
  return valueText(v, floatSize(c.dtype));
}

function tableGrid(schema, rows, start, n) {
  const head = el("tr", {}, el("th", { className: "index" }, "row"), schema.map((c) => el("th", { title: `${c.kind} ${dtypeText(c.dtype)}${c.description ? `: ${c.description}` : ""}` }, c.name)));
  const body = [];
  for (let i = 0; i < n; i++) {
    const cells = schema.map((c) => {
      const data = rows.columns[c.name];
      if (data === undefined) return el("td", { className: "missing" }, "(not read)");
      if (rows.missing[c.name]?.[i]) return el("td", { className: "missing", dataset: { missing: "1" } }, "NA");
      const numeric = c.kind === "int" || c.kind === "float";
      return el("td", { className: numeric ? "" : "text" }, cellText(c, data, i));
    });
    body.push(el("tr", { dataset: { row: String(start + i) } }, el("td", { className: "index" }, String(start + i)), cells));
  }
  return el("table", { className: "grid", id: "table-grid" }, head, body);
}

/** Parse a filter: `column op value` when `column` names a column, else a text to look for. */
function parseFilter(schema, text) {
  const m = /^\s*(.+?)\s*(==|=|!=|<=|>=|<|>|~)\s*(.*?)\s*$/.exec(text);
  const k = m ? schema.findIndex((c) => c.name === m[1]) : -1;
  if (k >= 0) return { column: k, op: m[2] === "==" ? "=" : m[2], value: m[3] };
  return { column: -1, op: "~", value: text.trim() };
}

function matches(cell, missing, op, value) {
  if (op === "~") return cell.toLowerCase().includes(value.toLowerCase());
  if (missing) return op === "!=" ? value !== "" : value === "";
  const [a, b] = [Number(cell), Number(value)];
  const numeric = cell !== "" && value !== "" && !Number.isNaN(a) && !Number.isNaN(b);
  const [x, y] = numeric ? [a, b] : [cell, value];
  switch (op) {
    case "=":
      return x === y;
    case "!=":
      return x !== y;
    case "<":
      return x < y;
    case "<=":
      return x <= y;
    case ">":
      return x > y;
    default:
      return x >= y;
  }
}

function applyFilter(schema, grid, text, info) {
  const f = parseFilter(schema, text);
  let shown = 0;
  let total = 0;
  for (const tr of grid.querySelectorAll("tr[data-row]")) {
    total++;
    const tds = Array.from(tr.children).slice(1);
    let ok = true;
    if (f.value !== "" || f.column >= 0) {
      ok = f.column >= 0
        ? matches(tds[f.column].textContent, tds[f.column].dataset.missing === "1", f.op, f.value)
        : tds.some((td) => td.dataset.missing !== "1" && matches(td.textContent, false, "~", f.value));
    }
    tr.hidden = !ok;
    shown += ok ? 1 : 0;
  }
  info.textContent = text.trim() === "" ? "" : `${shown} of ${total} rows of this page match`;
}

// ---------------------------------------------------------------------------------------

document.body.dataset.state = "idle";
status("Open a file by URL, with the file chooser, or by dropping it on the page.");
const params = new URLSearchParams(location.search);
if (params.get("url")) {
  $("url").value = params.get("url");
  openUrl(params.get("url"), params.get("path") ?? undefined);
}
