// Types of the h5fmt package (index.js). The classes are those of the wasm-bindgen module
// (h5fmt_wasm.d.ts); this file narrows the `any` results to what they hold.

/** A datatype, in the DTYPE form of h5canon/1 (the project's canonical dump). */
export type Dtype =
  | { class: "int"; size: number; order: "le" | "be"; signed: boolean }
  | { class: "float"; size: number; order: "le" | "be"; nonstandard?: true }
  | { class: "time" | "bitfield" | "complex"; size: number; order: "le" | "be" }
  | { class: "string"; size: number | "vlen"; cset: "ascii" | "utf8"; pad: "nullterm" | "nullpad" | "spacepad" }
  | { class: "opaque"; size: number; tag: string }
  | { class: "compound"; size: number; members: { name: string; offset: number; type: Dtype }[] }
  | { class: "ref"; kind: "object1" | "region1" | "std" }
  | { class: "enum"; base: Dtype; members: [string, number | bigint][] }
  | { class: "vlen"; base: Dtype }
  | { class: "array"; dims: number[]; base: Dtype };

/** Current dimensions: `[]` for a scalar, `null` for a null dataspace. */
export type Shape = (number | bigint)[] | null;

/** What `read()` and `readSlice()` return (row-major, flat). */
export type Data =
  | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array
  | BigInt64Array | BigUint64Array | Float32Array | Float64Array
  | Value[];

/** One element of a non-numeric dataset. */
export type Value =
  | number | bigint | string | Uint8Array | null
  | Value[]
  | { [member: string]: Value };

/** A node of `H5File.tree()`: each object once, `children` on groups. */
export interface TreeNode {
  name: string;
  path: string;
  kind: "group" | "dataset" | "datatype";
  children?: TreeNode[];
}

export interface AttrInfo {
  dtype: Dtype;
  shape: Shape;
  value: Data | null;
}

/** Options of `H5File.fromUrl` and `H5File.fromFile`. */
export interface RemoteOptions {
  /** Bytes per block fetched (and the size of the first request). Default 65536. */
  blockSize?: number;
  /** Bytes of blocks kept between operations (one operation may hold more). Default 64 MiB. */
  cacheBytes?: number;
  /** Requests in flight at once. Default 6. */
  concurrency?: number;
  /** The largest single request (adjacent blocks are merged up to it). Default 16 MiB. */
  maxRequestBytes?: number;
  /** Per-request timeout (fromUrl). Default 30 000. */
  timeoutMs?: number;
  /** Download the whole file when the server ignores `Range` (fromUrl). Default false. */
  wholeFileFallback?: boolean;
  /** The fetch to use (fromUrl). Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch;
}

/**
 * A file read lazily: only the blocks an operation touches are fetched (the chunks of a
 * selection together, concurrently). Every method returns a promise, rejected with an
 * `Error` carrying the reader's or the transport's message.
 */
export interface RemoteFile {
  tree(): Promise<TreeNode>;
  get(path: string): Promise<RemoteObject>;
  tables(): Promise<string[]>;
  table(path: string): Promise<RemoteTable>;
  readonly transferredBytes: number;
  readonly requests: number;
  readonly cachedBytes: number;
  free(): Promise<void>;
}

export interface RemoteObject {
  readonly kind: "group" | "dataset" | "datatype";
  readonly path: string;
  readonly shape: Shape | undefined;
  readonly dtype: Dtype | undefined;
  readonly attrs: Promise<{ [name: string]: AttrInfo }>;
  read(): Promise<Data>;
  readSlice(selection: string): Promise<Data>;
  readRaw(): Promise<Uint8Array>;
  free(): void;
}

/** A column of `H5Table.schema()`. */
export interface ColumnInfo {
  name: string;
  kind: "int" | "float" | "string" | "categorical" | "enum" | "opaque" | "compound" | "other";
  dtype: Dtype;
  units?: string;
  description?: string;
  /** The labels a categorical column's codes index. */
  categories?: Value[];
}

/** Options of `H5Table.read`: column names (default all), rows `[start, end)` (default all). */
export interface TableReadOptions {
  columns?: string[];
  rows?: [number, number];
}

/** Rows of a table: data per column, and `missing[name][i]` = 1 where row `i` is missing. */
export interface TableRows {
  columns: { [name: string]: Data };
  missing: { [name: string]: Uint8Array };
}

/** A HEP001 column table (list columns are not read yet). */
export class H5Table {
  private constructor();
  readonly path: string;
  readonly nrows: number | bigint;
  readonly version: string;
  schema(): ColumnInfo[];
  read(options?: TableReadOptions): TableRows;
  free(): void;
}

export interface RemoteTable {
  readonly path: string;
  readonly nrows: number | bigint;
  readonly version: string;
  schema(): Promise<ColumnInfo[]>;
  read(options?: TableReadOptions): Promise<TableRows>;
  free(): void;
}

/** An open HDF5 file. Errors are thrown as `Error`s carrying the reader's message. */
export class H5File {
  private constructor();
  /** Open a file held in memory (the bytes are copied). */
  static fromBytes(bytes: Uint8Array): H5File;
  /** Open a file on an HTTP server with `Range` support, fetching only what reads touch. */
  static fromUrl(url: string | URL, options?: RemoteOptions): Promise<RemoteFile>;
  /** Open a file on the local file system (Node), reading only what reads touch. */
  static fromFile(path: string, options?: RemoteOptions): Promise<RemoteFile>;
  /** The objects below `/`, nested. */
  tree(): TreeNode;
  /** The group, dataset or committed datatype at `path`. */
  get(path: string): H5Object;
  /** The paths of the HEP001 tables in the file. */
  tables(): string[];
  /** The HEP001 table at `path`. */
  table(path: string): H5Table;
  /** Release the file's memory now (otherwise when garbage-collected). */
  free(): void;
}

/** A group, dataset or committed datatype. */
export class H5Object {
  private constructor();
  readonly kind: "group" | "dataset" | "datatype";
  readonly path: string;
  /** Datasets only (`undefined` otherwise). */
  readonly shape: Shape | undefined;
  /** Datasets and committed datatypes (`undefined` for groups). */
  readonly dtype: Dtype | undefined;
  readonly attrs: { [name: string]: AttrInfo };
  /** All values of a dataset. */
  read(): Data;
  /** The values of a numpy-style selection, e.g. `"0:100, ::2"`. */
  readSlice(selection: string): Data;
  /** The raw bytes (file element layout and byte order). */
  readRaw(): Uint8Array;
  free(): void;
}
