// The h5fmt package: loads the WebAssembly module once, in a browser (fetched next to this
// file) or under Node (read from the package directory), then exports the reader's classes.
//
//   import { H5File } from "h5fmt";
//   const file = H5File.fromBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()));
//   file.get("/images").readSlice("0, :2, :");
//
//   const remote = await H5File.fromUrl(url, { blockSize: 65536, cacheBytes: 64 << 20 });
//   await (await remote.get("/images")).readSlice("0, :2, :"); // fetches only what it reads
import init, { initSync, H5File, H5Object, H5Table, RangeCache } from "./h5fmt_wasm.js";

const wasmUrl = new URL("./h5fmt_wasm_bg.wasm", import.meta.url);
const isNode = typeof process !== "undefined" && process.versions?.node != null;

if (isNode) {
  const { readFile } = await import("node:fs/promises");
  initSync({ module: await readFile(wasmUrl) });
} else {
  await init({ module_or_path: wasmUrl });
}

const DEFAULTS = {
  blockSize: 1 << 16,
  cacheBytes: 64 << 20,
  concurrency: 6,
  maxRequestBytes: 16 << 20,
  timeoutMs: 30_000,
  wholeFileFallback: false,
  fetch: undefined,
};

/** Runs reader operations over a RangeCache, fetching what each one misses. */
class Remote {
  constructor(cache, readRange, options) {
    this.cache = cache;
    this.readRange = readRange;
    this.options = options;
    this.queue = Promise.resolve();
    this.transferredBytes = 0;
    this.requests = 0;
  }

  // One operation at a time: eviction happens only when an operation starts, so the blocks
  // an operation fetched stay until it ends.
  run(op, prefetch) {
    const next = this.queue.then(async () => {
      this.cache.begin();
      if (prefetch !== undefined) {
        const ranges = await this.drive(prefetch);
        for (let i = 0; i + 1 < ranges.length; i += 2) this.cache.want(ranges[i], ranges[i + 1]);
        await this.fetch(this.cache.takeMissing());
      }
      return this.drive(op);
    });
    this.queue = next.catch(() => {});
    return next;
  }

  // Run `op` until it reads nothing that is missing; each round fetches at least one block.
  async drive(op) {
    for (;;) {
      let result;
      let error;
      let failed = false;
      try {
        result = op();
      } catch (e) {
        error = e;
        failed = true;
      }
      const missing = this.cache.takeMissing();
      if (missing.length === 0) {
        if (failed) throw error;
        return result;
      }
      if (!failed && typeof result?.free === "function") result.free();
      await this.fetch(missing);
    }
  }

  // Fetch `[start, end, …]` (block-aligned, coalesced) in requests of at most
  // maxRequestBytes, `concurrency` at a time, and supply each to the cache.
  async fetch(flat) {
    const { blockSize, maxRequestBytes, concurrency } = this.options;
    const step = Math.max(blockSize, Math.floor(maxRequestBytes / blockSize) * blockSize);
    const parts = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      for (let s = flat[i]; s < flat[i + 1]; s += step) parts.push([s, Math.min(flat[i + 1], s + step)]);
    }
    let next = 0;
    const worker = async () => {
      while (next < parts.length) {
        const [s, e] = parts[next++];
        const bytes = await this.readRange(s, e);
        this.requests++;
        this.transferredBytes += bytes.length;
        this.cache.supply(s, bytes);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, parts.length) }, worker));
  }
}

/** A file read lazily through a Remote: every method returns a promise. */
class RemoteFile {
  constructor(remote, raw, close) {
    this.remote = remote;
    this.raw = raw;
    this.close = close;
  }
  /** Bytes fetched so far, and the number of requests. */
  get transferredBytes() {
    return this.remote.transferredBytes;
  }
  get requests() {
    return this.remote.requests;
  }
  get cachedBytes() {
    return this.remote.cache.cachedBytes;
  }
  tree() {
    return this.remote.run(() => this.raw.tree());
  }
  async get(path) {
    return new RemoteObject(this.remote, await this.remote.run(() => this.raw.get(path)));
  }
  tables() {
    return this.remote.run(() => this.raw.tables());
  }
  async table(path) {
    return new RemoteTable(this.remote, await this.remote.run(() => this.raw.table(path)));
  }
  /** Release the file's memory (and, for `fromFile`, close the file). */
  async free() {
    this.raw.free();
    await this.close?.();
  }
}

/** A module object (`raw`) whose reads go through a Remote. */
class RemoteHandle {
  constructor(remote, raw) {
    this.remote = remote;
    this.raw = raw;
  }
  get path() {
    return this.raw.path;
  }
  free() {
    this.raw.free();
  }
}

class RemoteObject extends RemoteHandle {
  get kind() {
    return this.raw.kind;
  }
  get shape() {
    return this.raw.shape;
  }
  get dtype() {
    return this.raw.dtype;
  }
  /** A promise of the attributes. */
  get attrs() {
    return this.remote.run(() => this.raw.attrs);
  }
  read() {
    return this.remote.run(() => this.raw.read(), () => this.raw.chunkRanges(""));
  }
  readSlice(selection) {
    return this.remote.run(
      () => this.raw.readSlice(selection),
      () => this.raw.chunkRanges(selection),
    );
  }
  readRaw() {
    return this.remote.run(() => this.raw.readRaw(), () => this.raw.chunkRanges(""));
  }
}

class RemoteTable extends RemoteHandle {
  get nrows() {
    return this.raw.nrows;
  }
  get version() {
    return this.raw.version;
  }
  schema() {
    return this.remote.run(() => this.raw.schema());
  }
  read(options) {
    return this.remote.run(() => this.raw.read(options), () => this.raw.chunkRanges(options));
  }
}

async function openRemote(length, readRange, first, options, close) {
  const cache = new RangeCache(length, options.blockSize, options.cacheBytes);
  if (first !== undefined) cache.supply(0, first);
  const remote = new Remote(cache, readRange, options);
  if (first !== undefined) remote.transferredBytes += first.length;
  let raw;
  try {
    raw = await remote.run(() => H5File.fromCache(cache));
  } catch (e) {
    await close?.();
    throw e;
  }
  return new RemoteFile(remote, raw, close);
}

function checkBlockSize(options) {
  const b = options.blockSize;
  if (!Number.isSafeInteger(b) || b <= 0) throw new Error(`usage: blockSize must be a positive integer, not ${b}`);
}

/**
 * Open a file on an HTTP server with `Range` support; only the blocks that reads touch are
 * fetched. Rejects when the server ignores `Range` (unless `wholeFileFallback`) or sends
 * other bytes than asked for.
 */
async function fromUrl(url, opts = {}) {
  const options = { ...DEFAULTS, ...opts };
  checkBlockSize(options);
  const fetchFn = options.fetch ?? globalThis.fetch;
  const get = async (start, end) => {
    const signal = AbortSignal.timeout(options.timeoutMs);
    return fetchFn(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal });
  };
  const first = await get(0, options.blockSize);
  if (!first.ok) throw new Error(`${url}: HTTP ${first.status} ${first.statusText}`);
  if (first.status !== 206) {
    // A server may answer a range covering a small file with the whole file (200): taken
    // when it says it is no bigger than the block asked for.
    const size = Number(first.headers.get("content-length") ?? NaN);
    const small = Number.isSafeInteger(size) && size <= options.blockSize;
    if (!options.wholeFileFallback && !small) {
      await first.body?.cancel();
      throw new Error(
        `${url}: the server does not support HTTP Range requests (status ${first.status}); ` +
          "pass {wholeFileFallback: true} to download the whole file",
      );
    }
    const whole = new Uint8Array(await first.arrayBuffer());
    if (small && whole.length !== size) {
      throw new Error(`${url}: Content-Length ${size}, the server sent ${whole.length} bytes`);
    }
    const block = Math.max(whole.length, 1);
    const all = { ...options, blockSize: block, cacheBytes: Math.max(options.cacheBytes, block) };
    return openRemote(whole.length, () => Promise.reject(new Error("unreachable")), whole, all);
  }
  const length = contentRange(url, first, 0, options.blockSize, undefined).total;
  const body = await bytesOf(url, first, 0, Math.min(options.blockSize, length));
  const readRange = async (start, end) => {
    const r = await get(start, end);
    if (r.status !== 206) throw new Error(`${url}: HTTP ${r.status} for bytes ${start}-${end - 1}`);
    contentRange(url, r, start, end, length);
    return bytesOf(url, r, start, end);
  };
  return openRemote(length, readRange, body, options);
}

// Check a 206 response's Content-Range against the request: `bytes START-LAST/TOTAL`.
function contentRange(url, r, start, end, length) {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(r.headers.get("content-range") ?? "");
  if (m === null) throw new Error(`${url}: no usable Content-Range in a 206 response`);
  const [s, last, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const want = Math.min(end, total) - 1;
  if (s !== start || last !== want || (length !== undefined && total !== length)) {
    throw new Error(
      `${url}: asked for bytes ${start}-${end - 1}, the server sent bytes ${s}-${last}/${total}`,
    );
  }
  return { total };
}

async function bytesOf(url, r, start, end) {
  const bytes = new Uint8Array(await r.arrayBuffer());
  if (bytes.length !== end - start) {
    throw new Error(`${url}: asked for ${end - start} bytes at ${start}, the server sent ${bytes.length}`);
  }
  return bytes;
}

/** Open a file on the local file system (Node), reading only the blocks that reads touch. */
async function fromFile(path, opts = {}) {
  if (!isNode) throw new Error("usage: H5File.fromFile needs Node");
  const options = { ...DEFAULTS, ...opts };
  checkBlockSize(options);
  const { open } = await import("node:fs/promises");
  const handle = await open(path, "r");
  const { size } = await handle.stat();
  const readRange = async (start, end) => {
    const buf = new Uint8Array(end - start);
    const { bytesRead } = await handle.read(buf, 0, buf.length, start);
    if (bytesRead !== buf.length) throw new Error(`${path}: short read at ${start}`);
    return buf;
  };
  return openRemote(size, readRange, undefined, options, () => handle.close());
}

// The one trap bad input can reach: the copy of a file too big for the module's memory
// (at most 4 GiB) fails in wasm-bindgen's allocator before any reader code runs, so the
// module is still sound afterwards.
const copyFromBytes = H5File.fromBytes;
H5File.fromBytes = function fromBytes(bytes) {
  try {
    return copyFromBytes.call(H5File, bytes);
  } catch (e) {
    if (!(e instanceof WebAssembly.RuntimeError)) throw e;
    throw new Error(
      `limit: cannot copy ${bytes.length} bytes into the module's memory (${e.message}); ` +
        "H5File.fromUrl and H5File.fromFile read such files block by block",
    );
  }
};
H5File.fromUrl = fromUrl;
H5File.fromFile = fromFile;

export { H5File, H5Object, H5Table };
