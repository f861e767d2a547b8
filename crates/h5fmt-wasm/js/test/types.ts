// Compiled (not run) by `cargo xtask wasm-test` with `tsc --strict` next to the package's
// index.d.ts: the documented uses type-check.
import { H5File, type AttrInfo, type Data, type Dtype, type RemoteFile, type TreeNode } from "./index.js";

const file: H5File = H5File.fromBytes(new Uint8Array(8));
const tree: TreeNode = file.tree();
const paths: string[] = (tree.children ?? []).map((c) => c.path);
const obj = file.get("/x");
const kind: "group" | "dataset" | "datatype" = obj.kind;
const dtype: Dtype | undefined = obj.dtype;
if (dtype?.class === "compound") {
  const first: Dtype = dtype.members[0].type;
  console.log(first);
}
const data: Data = obj.read();
const slice: Data = obj.readSlice("0:10, ::2");
const attrs: { [name: string]: AttrInfo } = obj.attrs;
const raw: Uint8Array = obj.readRaw();
const tablePaths: string[] = file.tables();
const table = file.table(tablePaths[0]);
const columns: string[] = table.schema().map((c) => c.name);
const rows = table.read({ columns, rows: [0, 10] });
const firstMissing: Uint8Array = rows.missing[columns[0]];
console.log(firstMissing, rows.columns[columns[0]]);
file.free();

const remote: RemoteFile = await H5File.fromUrl("http://localhost/x.h5", {
  blockSize: 65536,
  cacheBytes: 64 << 20,
  concurrency: 4,
  timeoutMs: 1000,
});
const remoteTree: TreeNode = await remote.tree();
const ds = await remote.get("/x");
const window: Data = await ds.readSlice("0:100");
const remoteAttrs: { [name: string]: AttrInfo } = await ds.attrs;
const remoteRows = await (await remote.table("/t")).read({ rows: [0, 5] });
console.log(remoteRows.columns);
const moved: number = remote.transferredBytes + remote.requests + remote.cachedBytes;
await remote.free();
const local: RemoteFile = await H5File.fromFile("x.h5");
console.log(paths, kind, data, slice, attrs, raw, remoteTree, window, remoteAttrs, moved, local);
