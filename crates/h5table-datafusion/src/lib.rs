//! A [DataFusion](datafusion) [`TableProvider`] over HEP001 column tables.
//!
//! [`H5TableProvider`] exposes one table: its Arrow schema is
//! [`h5table::arrow::schema`] (missing values are nulls, categoricals and
//! enums are dictionaries, …). A scan reads only the projected columns,
//! stops at a pushed `LIMIT`, and evaluates pushed filters with the h5table
//! query engine ([`h5table::query::Query::run_with`], which may use the
//! table's search indexes): only the matching rows of the projected columns are then
//! read and decoded (late materialisation). Rows are split into partitions
//! so that DataFusion reads them in parallel.
//!
//! Search indexes are untrusted by default ([`IndexPolicy::Ignore`]): an
//! index narrows the rows only under [`ProviderOptions::indexes`]
//! `Verify` (each index is recomputed from its column first and used only
//! when equal) or `Trust` (used as stored), so that a stale or corrupt index
//! cannot change an answer unless asked for.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! let provider = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
//! ctx.register_table("events", std::sync::Arc::new(provider))?;
//! let df = ctx
//!     .sql("SELECT label, count(*) FROM events WHERE energy > 100 GROUP BY label")
//!     .await?;
//! df.show().await?;
//! # Ok(()) }
//! ```
//!
//! # Filter semantics
//!
//! A filter is pushed down ([`TableProviderFilterPushDown::Exact`]) when it
//! is made of `column OP literal` (`=`, `!=`, `<`, `<=`, `>`, `>=`), `IN`
//! lists, `BETWEEN`, `IS [NOT] NULL`, `LIKE 'prefix%'`, a boolean column,
//! and `AND` / `OR` / `NOT` over those, with only lossless casts on the
//! column. SQL three-valued logic applies (a null never satisfies a
//! comparison). For floating-point columns the engine follows HEP001 and
//! IEEE 754 (a NaN that is not the fill value satisfies no comparison,
//! `-0.0 = 0.0`), where DataFusion's own kernels use the IEEE total order
//! (NaN greater than every number and equal to itself, `-0.0 < 0.0`): a
//! query on such values gives the HEP001 answer with pushdown and the total
//! order answer without ([`ProviderOptions::filter_pushdown`]).
#![deny(missing_docs)]

mod exec;
mod translate;

/// The DataFusion this crate is built with (its features: `sql` only).
pub use datafusion;
pub use exec::H5TableScanExec;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::TableReference;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use exec::{Part, Source};
use h5table::arrow::{ColumnExport, ExportOptions};
pub use h5table::query::IndexPolicy;
use h5table::query::{Query, RunOptions};
use h5table::Table;
use std::path::Path;
use std::sync::Arc;
use translate::Translator;

/// Options of an [`H5TableProvider`].
///
/// ```
/// let opts = h5table_datafusion::ProviderOptions {
///     filter_pushdown: false,
///     row_number_column: Some("_row".into()),
///     ..Default::default()
/// };
/// assert_eq!(opts.batch_rows, 65_536);
/// assert_eq!(opts.indexes, h5table_datafusion::IndexPolicy::Ignore);
/// ```
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// Evaluate the filters this crate can translate with the h5table
    /// engine (default `true`); `false` leaves every filter to DataFusion.
    pub filter_pushdown: bool,
    /// Add a virtual, non-null `UInt64` column of this name holding each
    /// row's position in the table (default `None`).
    pub row_number_column: Option<String>,
    /// Rows per produced batch (default 65 536).
    pub batch_rows: usize,
    /// A partition gets at least this many rows (default 65 536); the
    /// number of partitions is also capped by DataFusion's
    /// `target_partitions`.
    pub min_partition_rows: u64,
    /// How columns are converted to Arrow (string mode).
    pub export: ExportOptions,
    /// Which search indexes pushed filters may use (default
    /// [`IndexPolicy::Ignore`]: none, so an unverified index never changes
    /// a result).
    pub indexes: IndexPolicy,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            filter_pushdown: true,
            row_number_column: None,
            batch_rows: 65_536,
            min_partition_rows: 65_536,
            export: ExportOptions::default(),
            indexes: IndexPolicy::Ignore,
        }
    }
}

fn ext(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// A DataFusion table over one HEP001 table (see the [crate documentation](crate)).
///
/// ```no_run
/// use datafusion::catalog::TableProvider;
/// let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
/// println!("{} rows, schema {:?}", t.table().nrows(), t.schema());
/// # Ok::<(), datafusion::error::DataFusionError>(())
/// ```
#[derive(Debug)]
pub struct H5TableProvider {
    table: Arc<Table>,
    exports: Vec<ColumnExport>,
    schema: SchemaRef,
    options: ProviderOptions,
}

impl H5TableProvider {
    /// The table at `table_path` of the file at `file`, default options.
    ///
    /// ```no_run
    /// let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    ///
    /// # Errors
    /// I/O and HDF5 errors; the group is not a HEP001 table; a column Arrow
    /// cannot represent (see [`h5table::arrow`]).
    pub fn try_new(file: impl AsRef<Path>, table_path: &str) -> Result<Self> {
        let f = h5fmt::File::open(file.as_ref()).map_err(ext)?;
        let g = f.group(table_path).map_err(ext)?;
        let table = Table::open(&g).map_err(ext)?;
        Self::with_options(table, ProviderOptions::default())
    }

    /// A provider over an opened table with default options.
    ///
    /// ```no_run
    /// let file = h5fmt::File::open("events.h5").unwrap();
    /// let table = h5table::Table::open(&file.group("/events").unwrap()).unwrap();
    /// let t = h5table_datafusion::H5TableProvider::from_table(table)?;
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    ///
    /// # Errors
    /// As [`H5TableProvider::with_options`].
    pub fn from_table(table: Table) -> Result<Self> {
        Self::with_options(table, ProviderOptions::default())
    }

    /// A provider over an opened table.
    ///
    /// ```no_run
    /// # let file = h5fmt::File::open("events.h5").unwrap();
    /// # let table = h5table::Table::open(&file.group("/events").unwrap()).unwrap();
    /// let opts = h5table_datafusion::ProviderOptions { filter_pushdown: false, ..Default::default() };
    /// let t = h5table_datafusion::H5TableProvider::with_options(table, opts)?;
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    ///
    /// # Errors
    /// A column Arrow cannot represent or whose categories cannot be read;
    /// a row-number column name that is also a column name.
    pub fn with_options(table: Table, options: ProviderOptions) -> Result<Self> {
        let exports = table
            .columns()
            .iter()
            .map(|c| ColumnExport::new(&table, c, &options.export))
            .collect::<h5table::Result<Vec<_>>>()
            .map_err(ext)?;
        let base = h5table::arrow::schema(&table, Some(&[]), &options.export).map_err(ext)?;
        let mut fields: Vec<Arc<Field>> = exports.iter().map(|e| e.field().clone()).collect();
        if let Some(name) = &options.row_number_column {
            if fields.iter().any(|f| f.name() == name) {
                return Err(DataFusionError::Plan(format!(
                    "row-number column {name:?} is also a column of table {}",
                    table.path()
                )));
            }
            fields.push(Arc::new(Field::new(name, DataType::UInt64, false)));
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, base.metadata().clone()));
        Ok(H5TableProvider {
            table: Arc::new(table),
            exports,
            schema,
            options,
        })
    }

    /// The table.
    ///
    /// ```no_run
    /// # let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
    /// assert_eq!(t.table().path(), "/events");
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The options.
    ///
    /// ```no_run
    /// # let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
    /// assert!(t.options().filter_pushdown);
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn options(&self) -> &ProviderOptions {
        &self.options
    }

    fn translator(&self) -> Translator<'_> {
        Translator {
            schema: &self.schema,
            row_column: self.options.row_number_column.as_deref(),
        }
    }

    /// The h5table query a DataFusion filter translates to, `None` when it
    /// is not evaluated exactly by the engine (and so not pushed down).
    ///
    /// ```no_run
    /// use datafusion::prelude::{col, lit};
    /// # let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
    /// let q = t.translate_filter(&col("energy").gt(lit(100.0)));
    /// assert!(q.is_some());
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn translate_filter(&self, filter: &Expr) -> Option<Query> {
        self.translator().query(filter)
    }
}

#[async_trait]
impl TableProvider for H5TableProvider {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let t = self.translator();
        Ok(filters
            .iter()
            .map(|f| {
                if self.options.filter_pushdown && t.query(f).is_some() {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let projection = projection.unwrap_or(&all);
        let schema = Arc::new(self.schema.project(projection)?);
        let sources = projection
            .iter()
            .map(|&i| match self.exports.get(i) {
                Some(e) => Ok(Source::Column(Box::new(e.clone()))),
                None if i == self.exports.len() && self.options.row_number_column.is_some() => {
                    Ok(Source::RowNumber)
                }
                None => Err(DataFusionError::Internal(format!(
                    "projection index {i} out of the schema"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let query = if filters.is_empty() {
            None
        } else if !self.options.filter_pushdown {
            return Err(DataFusionError::Internal(
                "filters pushed to an H5TableProvider with pushdown disabled".into(),
            ));
        } else {
            match self.translator().conjunction(filters) {
                Some(q) => q,
                None => {
                    return Err(DataFusionError::Internal(format!(
                        "a pushed filter is not translatable: {filters:?}"
                    )))
                }
            }
        };
        let limit = limit.map_or(u64::MAX, |l| l as u64);
        let target = state.config().target_partitions().max(1) as u64;
        let per = self.options.min_partition_rows.max(1);
        let mut describe = format!(
            "table={}, projection=[{}]",
            self.table.path(),
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let parts = match &query {
            None => {
                let total = self.table.nrows().min(limit);
                let n = total.div_ceil(per).clamp(1, target);
                exec::split(total, n).into_iter().map(Part::Range).collect()
            }
            Some(q) => {
                let run = RunOptions {
                    indexes: self.options.indexes,
                };
                let (mut rows, _) = q.run_with(&self.table, &run).map_err(ext)?;
                rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
                describe.push_str(&format!(", filter={q:?}, indexes={:?}", run.indexes));
                let total = rows.len() as u64;
                let n = total.div_ceil(per).clamp(1, target);
                let rows = Arc::new(rows);
                exec::split(total, n)
                    .into_iter()
                    .map(|r| Part::Rows(rows.clone(), r.start as usize..r.end as usize))
                    .collect()
            }
        };
        if limit != u64::MAX {
            describe.push_str(&format!(", limit={limit}"));
        }
        Ok(Arc::new(H5TableScanExec::new(
            schema,
            sources,
            parts,
            self.options.batch_rows,
            describe,
        )))
    }
}

/// The SQL name of a table path: without the leading slash, `/` → `_`
/// (`/run1/events` → `run1_events`).
///
/// ```
/// assert_eq!(h5table_datafusion::sql_name("/run1/events"), "run1_events");
/// ```
pub fn sql_name(table_path: &str) -> String {
    table_path.trim_start_matches('/').replace('/', "_")
}

/// Register every HEP001 table of the file at `file` in `ctx`, under its
/// [`sql_name`] and under its full path (usable quoted: `"/run1/events"`).
/// Returns `(table path, names registered)`; a name already taken (by
/// another table of the file or of `ctx`) is skipped.
///
/// ```no_run
/// # async fn demo() -> datafusion::error::Result<()> {
/// let ctx = datafusion::prelude::SessionContext::new();
/// let opts = h5table_datafusion::ProviderOptions::default();
/// for (path, names) in h5table_datafusion::register_file(&ctx, "events.h5", &opts)? {
///     println!("{path}: {names:?}");
/// }
/// ctx.sql(r#"SELECT count(*) FROM "/events""#).await?.show().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`H5TableProvider::with_options`]; I/O and HDF5 errors.
pub fn register_file(
    ctx: &SessionContext,
    file: impl AsRef<Path>,
    options: &ProviderOptions,
) -> Result<Vec<(String, Vec<String>)>> {
    let f = h5fmt::File::open(file.as_ref()).map_err(ext)?;
    let mut out = Vec::new();
    for path in h5table::find_tables(&f).map_err(ext)? {
        let table = Table::open(&f.group(&path).map_err(ext)?).map_err(ext)?;
        let provider: Arc<dyn TableProvider> =
            Arc::new(H5TableProvider::with_options(table, options.clone())?);
        let mut names = Vec::new();
        for name in [sql_name(&path), path.clone()] {
            let r = TableReference::bare(name.as_str());
            if names.contains(&name) || ctx.table_exist(r.clone())? {
                continue;
            }
            ctx.register_table(r, provider.clone())?;
            names.push(name);
        }
        out.push((path, names));
    }
    Ok(out)
}
