// The h5fmt package: loads the WebAssembly module once, in a browser (fetched next to this
// file) or under Node (read from the package directory), then exports the reader's classes.
//
//   import { H5File } from "h5fmt";
//   const file = H5File.fromBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()));
//   file.get("/images").readSlice("0, :2, :");
import init, { initSync, H5File, H5Object } from "./h5fmt_wasm.js";

const wasmUrl = new URL("./h5fmt_wasm_bg.wasm", import.meta.url);

if (typeof process !== "undefined" && process.versions != null && process.versions.node != null) {
  const { readFile } = await import("node:fs/promises");
  initSync({ module: await readFile(wasmUrl) });
} else {
  await init({ module_or_path: wasmUrl });
}

export { H5File, H5Object };
