//! HEP001 column tables (h5table): `file.tables()`, `file.table(path)`, `table.schema()`,
//! `table.read({columns, rows})`.

use crate::{dtype_js, read_js, set, u64_js, values_js, H5File};
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5table::{Column, ColumnKind, Table};
use js_sys::{Array, Object as JsObject, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

fn table_err(e: &h5table::Error) -> JsError {
    JsError::new(&e.to_string())
}

#[wasm_bindgen]
impl H5File {
    /// The paths of the HEP001 tables of the file (groups with `CLASS = "COLUMN_TABLE"`),
    /// depth-first in name order.
    ///
    /// # Errors
    /// Thrown when the root group does not decode.
    pub fn tables(&self) -> Result<Vec<String>, JsError> {
        h5table::find_tables(&self.file).map_err(|e| table_err(&e))
    }

    /// The HEP001 table at `path`.
    ///
    /// # Errors
    /// Thrown when `path` is not a table group, or its `VERSION`/`NROWS` are missing or
    /// unsupported.
    pub fn table(&self, path: &str) -> Result<H5Table, JsError> {
        let group = self.file.group(path).map_err(|e| crate::js_err(&e))?;
        let table = Table::open(&group).map_err(|e| table_err(&e))?;
        Ok(H5Table { table })
    }
}

/// A HEP001 table: its rows `[0, nrows)` of every column.
#[wasm_bindgen]
pub struct H5Table {
    table: Table,
}

#[wasm_bindgen]
impl H5Table {
    /// The table group's path.
    #[wasm_bindgen(getter)]
    pub fn path(&self) -> String {
        self.table.path().into()
    }

    /// `NROWS`: the committed rows.
    #[wasm_bindgen(getter)]
    pub fn nrows(&self) -> JsValue {
        u64_js(self.table.nrows())
    }

    /// `VERSION`.
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> String {
        self.table.version().into()
    }

    /// The column datasets in table order: `{name, kind, dtype, units?, description?,
    /// categories?}` (`kind`: int, float, string, categorical, enum, opaque, compound or
    /// other; `categories`: the labels a categorical column's codes index). List columns
    /// are not listed (not read by this package yet).
    ///
    /// # Errors
    /// Thrown for a datatype the DTYPE form cannot describe.
    pub fn schema(&self) -> Result<Array, JsError> {
        let out = Array::new();
        for c in self.table.columns() {
            let o = JsObject::new();
            set(&o, "name", &c.name().into());
            set(&o, "kind", &kind_name(c.kind()).into());
            set(&o, "dtype", &dtype_js(c.dtype())?);
            if let Some(u) = &c.units {
                set(&o, "units", &u.as_str().into());
            }
            if let Some(d) = &c.description {
                set(&o, "description", &d.as_str().into());
            }
            if let Some(cat) = &c.categories {
                set(&o, "categories", &values_js(cat.labels.clone()));
            }
            out.push(&o);
        }
        Ok(out)
    }

    /// Rows of some columns: `options.columns` (names; default all) and `options.rows`
    /// (`[start, end)`; default `[0, nrows)`). Gives `{columns: {name: data}, missing:
    /// {name: Uint8Array}}`: data as `H5Object.read` gives it (codes for categorical
    /// columns), `missing[i]` = 1 where row `i` holds the column's fill value (§8.5).
    ///
    /// # Errors
    /// Thrown for an unknown column, rows outside `[0, nrows)`, and read errors.
    pub fn read(&self, options: JsValue) -> Result<JsObject, JsError> {
        let (start, end) = self.rows(&options)?;
        let data = JsObject::new();
        let missing = JsObject::new();
        for c in self.selected(&options)? {
            let sel = rows_selection(start, end);
            // Variable-length values are compared with the fill once decoded; fixed-size
            // ones by their bytes, and read as typed arrays.
            let (values, mask) = if c.dtype().is_variable_length() {
                let s = c.read(start..end).map_err(|e| table_err(&e))?;
                (values_js(s.values), s.missing)
            } else {
                let raw = c.read_raw(start..end).map_err(|e| table_err(&e))?;
                (read_js(c.dataset(), Some(&sel))?, c.missing_mask_raw(&raw))
            };
            let mask: Vec<u8> = mask.into_iter().map(u8::from).collect();
            set(&data, c.name(), &values);
            set(&missing, c.name(), &Uint8Array::from(mask.as_slice()));
        }
        let out = JsObject::new();
        set(&out, "columns", &data);
        set(&out, "missing", &missing);
        Ok(out)
    }

    /// The absolute byte ranges of the stored chunks `read(options)` reads (see
    /// `H5Object.chunkRanges`).
    ///
    /// # Errors
    /// As [`H5Table::read`].
    #[wasm_bindgen(js_name = chunkRanges)]
    pub fn chunk_ranges(&self, options: JsValue) -> Result<Vec<f64>, JsError> {
        let (start, end) = self.rows(&options)?;
        let mut out = Vec::new();
        for c in self.selected(&options)? {
            let sel = rows_selection(start, end);
            out.extend(
                crate::remote::chunk_ranges(c.dataset(), &sel).map_err(|e| crate::js_err(&e))?,
            );
        }
        Ok(out)
    }
}

impl H5Table {
    /// `options.rows`, checked against `[0, nrows)`.
    fn rows(&self, options: &JsValue) -> Result<(u64, u64), JsError> {
        let n = self.table.nrows();
        let rows = field(options, "rows");
        if rows.is_undefined() || rows.is_null() {
            return Ok((0, n));
        }
        let r = Array::from(&rows);
        let int = |v: JsValue| {
            v.as_f64()
                .and_then(|x| crate::remote::js_u64(x, "row").ok())
        };
        match (r.length(), int(r.get(0)), int(r.get(1))) {
            (2, Some(s), Some(e)) if s <= e && e <= n => Ok((s, e)),
            _ => Err(JsError::new(&format!(
                "{}: usage: rows must be [start, end] with 0 <= start <= end <= {n}",
                self.table.path()
            ))),
        }
    }

    /// The columns `options.columns` names, or all of them.
    fn selected(&self, options: &JsValue) -> Result<Vec<&Column>, JsError> {
        let names = field(options, "columns");
        if names.is_undefined() || names.is_null() {
            return Ok(self.table.columns().iter().collect());
        }
        let mut out = Vec::new();
        for n in Array::from(&names).iter() {
            let Some(name) = n.as_string() else {
                return Err(JsError::new("usage: columns must be names"));
            };
            out.push(self.table.column(&name).map_err(|e| table_err(&e))?);
        }
        Ok(out)
    }
}

/// Rows `[start, end)` of a column.
fn rows_selection(start: u64, end: u64) -> Selection {
    Selection::Hyperslab(vec![SliceDim {
        start,
        stride: 1,
        count: end.saturating_sub(start),
        block: 1,
    }])
}

fn field(options: &JsValue, key: &str) -> JsValue {
    if options.is_object() {
        Reflect::get(options, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

fn kind_name(k: ColumnKind) -> &'static str {
    match k {
        ColumnKind::Int => "int",
        ColumnKind::Float => "float",
        ColumnKind::String => "string",
        ColumnKind::Categorical => "categorical",
        ColumnKind::Enum => "enum",
        ColumnKind::Opaque => "opaque",
        ColumnKind::Compound => "compound",
        ColumnKind::Other => "other",
    }
}
