//! The scan [`ExecutionPlan`]: partitions of row ranges or of selected row
//! positions, read column by column on a blocking thread and streamed as
//! [`RecordBatch`]es.

use datafusion::arrow::array::{Array, ArrayRef, UInt32Array, UInt64Array};
use datafusion::arrow::compute::{concat, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use h5table::arrow::ColumnExport;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Rows of one partition.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// A contiguous row range.
    Range(Range<u64>),
    /// `rows[span]`: selected row positions (increasing).
    Rows(Arc<Vec<u64>>, Range<usize>),
}

impl Part {
    fn len(&self) -> u64 {
        match self {
            Part::Range(r) => r.end - r.start,
            Part::Rows(_, s) => (s.end - s.start) as u64,
        }
    }
}

/// Where one output column comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A HEP001 column (boxed: an export is large, the row number nothing).
    Column(Box<ColumnExport>),
    /// The virtual row number.
    RowNumber,
}

/// Two selected rows closer than this are read in one range (then `take`n).
const GAP: u64 = 512;

/// Split `total` items into at most `n` contiguous, nearly equal spans.
pub(crate) fn split(total: u64, n: u64) -> Vec<Range<u64>> {
    let n = n.clamp(1, total.max(1));
    let (q, r) = (total / n, total % n);
    let mut out = Vec::new();
    let mut lo = 0;
    for i in 0..n {
        let hi = lo + q + u64::from(i < r);
        out.push(lo..hi);
        lo = hi;
    }
    out
}

fn ext(e: h5table::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The scan of a HEP001 table (see [`crate::H5TableProvider`]): one
/// partition per span of rows, each read on a blocking thread and streamed
/// in batches.
///
/// ```no_run
/// # async fn demo() -> datafusion::error::Result<()> {
/// use datafusion::physical_plan::displayable;
/// let ctx = datafusion::prelude::SessionContext::new();
/// let t = h5table_datafusion::H5TableProvider::try_new("events.h5", "/events")?;
/// ctx.register_table("events", std::sync::Arc::new(t))?;
/// let plan = ctx
///     .sql("SELECT energy FROM events WHERE label = 'muon'")
///     .await?
///     .create_physical_plan()
///     .await?;
/// // … H5TableScanExec: table=/events, projection=[energy], filter=…, rows=…, partitions=…
/// println!("{}", displayable(plan.as_ref()).indent(true));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct H5TableScanExec {
    schema: SchemaRef,
    sources: Arc<Vec<Source>>,
    parts: Vec<Part>,
    batch_rows: usize,
    props: Arc<PlanProperties>,
    describe: String,
}

impl H5TableScanExec {
    pub(crate) fn new(
        schema: SchemaRef,
        sources: Vec<Source>,
        parts: Vec<Part>,
        batch_rows: usize,
        describe: String,
    ) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(parts.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        H5TableScanExec {
            schema,
            sources: Arc::new(sources),
            parts,
            batch_rows: batch_rows.max(1),
            props: Arc::new(props),
            describe,
        }
    }

    /// Rows this scan produces, over all partitions (the filtered and
    /// limited row count, known when the plan is made).
    ///
    /// ```no_run
    /// # async fn demo() -> datafusion::error::Result<()> {
    /// # let ctx = datafusion::prelude::SessionContext::new();
    /// let plan = ctx.sql("SELECT * FROM events WHERE x > 1").await?.create_physical_plan().await?;
    /// if let Some(scan) = plan.downcast_ref::<h5table_datafusion::H5TableScanExec>() {
    ///     println!("{} rows", scan.output_rows());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn output_rows(&self) -> u64 {
        self.parts.iter().map(Part::len).sum()
    }
}

impl DisplayAs for H5TableScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "H5TableScanExec: {}, rows={}, partitions={}",
            self.describe,
            self.output_rows(),
            self.parts.len()
        )
    }
}

impl ExecutionPlan for H5TableScanExec {
    fn name(&self) -> &str {
        "H5TableScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "H5TableScanExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let part = match self.parts.get(partition) {
            Some(p) => p.clone(),
            None if partition == 0 => Part::Range(0..0),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "H5TableScanExec: no partition {partition}"
                )))
            }
        };
        let mut builder = RecordBatchReceiverStreamBuilder::new(self.schema.clone(), 2);
        let tx = builder.tx();
        let reader = Reader {
            schema: self.schema.clone(),
            sources: self.sources.clone(),
            batch_rows: self.batch_rows,
        };
        builder.spawn_blocking(move || reader.run(part, |b| tx.blocking_send(Ok(b)).is_ok()));
        Ok(builder.build())
    }
}

/// Reads batches of one partition.
struct Reader {
    schema: SchemaRef,
    sources: Arc<Vec<Source>>,
    batch_rows: usize,
}

impl Reader {
    /// Read `part`, handing each batch to `emit` (stop when it returns false).
    fn run(&self, part: Part, mut emit: impl FnMut(RecordBatch) -> bool) -> Result<()> {
        match part {
            Part::Range(r) => {
                let mut lo = r.start;
                while lo < r.end {
                    let hi = r.end.min(lo.saturating_add(self.batch_rows as u64));
                    if !emit(self.range_batch(lo..hi)?) {
                        break;
                    }
                    lo = hi;
                }
            }
            Part::Rows(rows, span) => {
                let sel = rows.get(span).unwrap_or(&[]);
                for chunk in sel.chunks(self.batch_rows) {
                    if !emit(self.rows_batch(chunk)?) {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn batch(&self, arrays: Vec<ArrayRef>, n: usize) -> Result<RecordBatch> {
        let opts = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &opts,
        )?)
    }

    fn range_batch(&self, rows: Range<u64>) -> Result<RecordBatch> {
        let n = (rows.end - rows.start) as usize;
        let arrays = self
            .sources
            .iter()
            .map(|s| match s {
                Source::Column(e) => e.array(rows.clone()).map_err(ext),
                Source::RowNumber => {
                    Ok(Arc::new(UInt64Array::from_iter_values(rows.clone())) as ArrayRef)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        self.batch(arrays, n)
    }

    /// The selected rows `sel` (increasing): nearby rows are read as one
    /// range and the wanted ones taken from it (late materialisation).
    fn rows_batch(&self, sel: &[u64]) -> Result<RecordBatch> {
        // Segments [i, j) of `sel` whose rows are within GAP of each other.
        let mut segs: Vec<Range<usize>> = Vec::new();
        let mut i = 0;
        while i < sel.len() {
            let mut j = i + 1;
            while j < sel.len() && sel[j] - sel[j - 1] <= GAP {
                j += 1;
            }
            segs.push(i..j);
            i = j;
        }
        let mut arrays = Vec::with_capacity(self.sources.len());
        for s in self.sources.iter() {
            let e = match s {
                Source::Column(e) => e,
                Source::RowNumber => {
                    arrays.push(Arc::new(UInt64Array::from(sel.to_vec())) as ArrayRef);
                    continue;
                }
            };
            let mut pieces: Vec<ArrayRef> = Vec::with_capacity(segs.len());
            for seg in &segs {
                let rows = &sel[seg.clone()];
                let (lo, hi) = (rows[0], rows[rows.len() - 1] + 1);
                let a = e.array(lo..hi).map_err(ext)?;
                if (hi - lo) as usize == rows.len() {
                    pieces.push(a);
                } else {
                    let idx = UInt32Array::from_iter_values(rows.iter().map(|r| (r - lo) as u32));
                    pieces.push(take(a.as_ref(), &idx, None)?);
                }
            }
            arrays.push(match pieces.len() {
                1 => pieces.swap_remove(0),
                0 => datafusion::arrow::array::new_empty_array(
                    self.schema.field(arrays.len()).data_type(),
                ),
                _ => {
                    let refs: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
                    concat(&refs)?
                }
            });
        }
        self.batch(arrays, sel.len())
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_covers() {
        assert_eq!(split(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(split(0, 4), vec![0..0]);
        assert_eq!(split(2, 8), vec![0..1, 1..2]);
    }
}
