//! Every query of every conformant corpus table (`c*.h5`, expected answers
//! computed with numpy by the corpus generator), run as SQL through
//! DataFusion over [`H5TableProvider`]: with filter pushdown (the h5table
//! engine) and without (DataFusion's own filter), row counts and the sha256
//! of the row numbers; and aggregates compared with DataFusion over an Arrow
//! IPC copy of the same columns written by pyarrow from h5py-read arrays.

use datafusion::arrow::array::{Array, Float64Array, Int64Array, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::{SessionConfig, SessionContext};
use h5table_datafusion::{H5TableProvider, ProviderOptions};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn corpus() -> PathBuf {
    std::env::var_os("H5TABLE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/hep001/files"))
}

fn context() -> SessionContext {
    let cfg = SessionConfig::new()
        .with_target_partitions(3)
        .set_bool("datafusion.sql_parser.enable_ident_normalization", false);
    SessionContext::new_with_config(cfg)
}

fn provider(path: &Path, table: &str, pushdown: bool) -> R<H5TableProvider> {
    let f = h5fmt::File::open(path)?;
    let t = h5table::Table::open(&f.group(table)?)?;
    let opts = ProviderOptions {
        filter_pushdown: pushdown,
        row_number_column: Some("_row".into()),
        batch_rows: 97,
        // Small partitions, so that the corpus' small tables are read by
        // several partitions.
        min_partition_rows: 64,
        ..Default::default()
    };
    Ok(H5TableProvider::with_options(t, opts)?)
}

async fn collect(ctx: &SessionContext, sql: &str) -> R<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

async fn count(ctx: &SessionContext, sql: &str) -> R<i64> {
    let b = collect(ctx, sql).await?;
    let a = b
        .first()
        .and_then(|b| b.column(0).as_any().downcast_ref::<Int64Array>())
        .ok_or("count(*) gave no Int64")?;
    Ok(a.value(0))
}

async fn rows(ctx: &SessionContext, sql: &str) -> R<Vec<u64>> {
    let mut out = Vec::new();
    for b in collect(ctx, sql).await? {
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or("_row is not UInt64")?;
        out.extend(a.values().iter().copied());
    }
    Ok(out)
}

fn sha(rows: &[u64]) -> String {
    let s: Vec<String> = rows.iter().map(u64::to_string).collect();
    let d = Sha256::digest(s.join("\n").as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Float columns named in `where_` whose value at `row` is NaN or ±0: the
/// values on which HEP001 (IEEE) comparison and DataFusion's total order
/// disagree.
async fn float_explained(
    ctx: &SessionContext,
    schema: &datafusion::arrow::datatypes::Schema,
    where_: &str,
    diff: &[u64],
) -> R<bool> {
    let floats: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| {
            matches!(
                f.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            ) && where_.contains(f.name().as_str())
        })
        .map(|f| f.name().clone())
        .collect();
    if floats.is_empty() {
        return Ok(false);
    }
    let list: Vec<String> = diff.iter().map(u64::to_string).collect();
    let cols: Vec<String> = floats
        .iter()
        .map(|c| format!("CAST(\"{}\" AS DOUBLE)", c.replace('"', "\"\"")))
        .collect();
    let sql = format!(
        "SELECT {} FROM t_np WHERE _row IN ({})",
        cols.join(", "),
        list.join(", ")
    );
    let mut seen = 0;
    for b in collect(ctx, &sql).await? {
        for r in 0..b.num_rows() {
            seen += 1;
            let odd = (0..b.num_columns()).any(|c| {
                b.column(c)
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .is_some_and(|a| a.is_valid(r) && (a.value(r).is_nan() || a.value(r) == 0.0))
            });
            if !odd {
                return Ok(false);
            }
        }
    }
    Ok(seen == diff.len())
}

#[tokio::test]
async fn corpus_queries_match_expected_and_datafusion() -> R<()> {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("corpus {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "h5")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('c'))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no c*.h5 in {}", dir.display());
    let (mut checked, mut float_diffs) = (0, Vec::new());
    let mut failures = Vec::new();
    for file in &files {
        let exp: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
            file.with_extension("expected.json"),
        )?)?;
        let Some(tables) = exp["tables"].as_object() else {
            continue;
        };
        for (tpath, t) in tables {
            let name = format!("{}:{tpath}", file.display());
            let ctx = context();
            let (p, np) = match (provider(file, tpath, true), provider(file, tpath, false)) {
                (Ok(p), Ok(np)) => (p, np),
                (Err(e), _) | (_, Err(e)) => {
                    failures.push(format!("{name}: open: {e}"));
                    continue;
                }
            };
            let schema = datafusion::catalog::TableProvider::schema(&p);
            ctx.register_table("t", Arc::new(p))?;
            ctx.register_table("t_np", Arc::new(np))?;
            for q in t["queries"].as_array().into_iter().flatten() {
                let w = q["where"].as_str().unwrap_or_default();
                let want = q["count"].as_i64().unwrap_or(-1);
                let want_sha = q["sha256"].as_str().unwrap_or_default();
                let label = format!("{name} WHERE {w}");
                let res = async {
                    let c = count(&ctx, &format!("SELECT count(*) FROM t WHERE {w}")).await?;
                    let r =
                        rows(&ctx, &format!("SELECT _row FROM t WHERE {w} ORDER BY _row")).await?;
                    let rn = rows(
                        &ctx,
                        &format!("SELECT _row FROM t_np WHERE {w} ORDER BY _row"),
                    )
                    .await?;
                    let limited = rows(
                        &ctx,
                        &format!("SELECT _row FROM t WHERE {w} ORDER BY _row LIMIT 5"),
                    )
                    .await?;
                    R::Ok((c, r, rn, limited))
                }
                .await;
                let (c, r, rn, limited) = match res {
                    Ok(x) => x,
                    Err(e) => {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                };
                checked += 1;
                if c != want || r.len() as i64 != want {
                    failures.push(format!(
                        "{label}: count {c}, rows {}, expected {want}",
                        r.len()
                    ));
                }
                if sha(&r) != want_sha {
                    failures.push(format!("{label}: sha256 of rows differs"));
                }
                if limited[..] != r[..r.len().min(5)] {
                    failures.push(format!("{label}: LIMIT 5 gave {limited:?}"));
                }
                if r != rn {
                    let diff: Vec<u64> = r
                        .iter()
                        .filter(|x| rn.binary_search(x).is_err())
                        .chain(rn.iter().filter(|x| r.binary_search(x).is_err()))
                        .copied()
                        .collect();
                    if float_explained(&ctx, &schema, w, &diff).await? {
                        float_diffs.push(format!("{label}: {} NaN/±0 rows", diff.len()));
                    } else {
                        failures.push(format!(
                            "{label}: pushdown {} rows, DataFusion's filter {} rows",
                            r.len(),
                            rn.len()
                        ));
                    }
                }
            }
        }
    }
    eprintln!("{checked} queries checked");
    for d in &float_diffs {
        eprintln!("pushdown (IEEE) vs DataFusion (total order) differ on {d}");
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 100, "only {checked} queries checked");
    Ok(())
}

fn python() -> R<PathBuf> {
    let cands = std::env::var_os("H5FMT_VENV")
        .map(|v| PathBuf::from(v).join("bin/python"))
        .into_iter()
        .chain([PathBuf::from("/work/main/.venv/bin/python")]);
    for c in cands {
        if c.exists() {
            return Ok(c);
        }
    }
    Err("no Python with h5py + pyarrow: set H5FMT_VENV (or create /work/main/.venv)".into())
}

/// Every cell of every batch as text, floats rounded to 9 significant digits
/// (sums over floats depend on the order of addition).
fn cells(batches: &[RecordBatch]) -> R<Vec<Vec<String>>> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..b.num_rows() {
            let mut row = Vec::new();
            for (c, f) in fmts.iter().enumerate() {
                let s = f.value(r).to_string();
                let s = match b.column(c).data_type() {
                    DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                        s.parse::<f64>().map(|x| format!("{x:.9e}")).unwrap_or(s)
                    }
                    _ => s,
                };
                row.push(s);
            }
            out.push(row);
        }
    }
    Ok(out)
}

#[tokio::test]
async fn aggregates_match_datafusion_over_pyarrow_copy() -> R<()> {
    let py = python()?;
    let dir = corpus();
    let tmp = std::env::temp_dir().join(format!("h5table-df-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    // (file, table, columns, queries over `t`)
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        (
            "c01_minimal.h5",
            "/my_table",
            &["row_id", "ts", "energy", "label"],
            &[
                "SELECT count(*), count(energy), count(label) FROM t",
                "SELECT label, count(*), sum(energy), min(ts), max(ts), min(energy), max(energy) \
                 FROM t GROUP BY label ORDER BY label",
                "SELECT label, count(*), sum(row_id) FROM t WHERE energy > 100 GROUP BY label \
                 ORDER BY label",
                "SELECT label, avg(energy) FROM t WHERE ts >= 1700010034 AND label IN \
                 ('muon', 'pion') GROUP BY label ORDER BY label",
                "SELECT min(ts), max(ts), sum(ts) FROM t WHERE label IS NULL OR energy < 60",
            ],
        ),
        (
            "c11_categorical.h5",
            "/matches",
            &[
                "home_team=CATEGORIES/teams",
                "away_team=CATEGORIES/teams",
                "size",
                "score",
            ],
            &[
                "SELECT home_team, count(*), sum(score), min(score), max(score) FROM t \
                 GROUP BY home_team ORDER BY home_team",
                "SELECT size, away_team, count(*) FROM t WHERE score > 50 GROUP BY size, \
                 away_team ORDER BY size, away_team",
                "SELECT count(*) FROM t WHERE home_team = 'Basel' AND NOT size = 'S'",
            ],
        ),
        (
            "c16_layouts_filters.h5",
            "/layouts",
            &["a", "b", "c", "d", "e", "f", "g", "h", "i"],
            &[
                "SELECT h, count(*), sum(a), min(b), max(c), sum(e) FROM t WHERE d < 100 \
                 GROUP BY h ORDER BY h",
                "SELECT count(*), sum(f), min(g), max(g) FROM t WHERE g LIKE 'g1%'",
                "SELECT a, g FROM t WHERE c BETWEEN 100 AND 200 OR b IS NULL ORDER BY a, g",
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (file, table, cols, queries) in cases {
        let h5 = dir.join(file);
        let ipc = tmp.join(format!("{file}.arrow"));
        let out = std::process::Command::new(&py)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ipc_oracle.py"))
            .arg(&h5)
            .arg(table)
            .arg(&ipc)
            .args(cols.iter())
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "{} ipc_oracle.py {file}: {}",
                py.display(),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        for pushdown in [true, false] {
            let ctx = context();
            ctx.register_table("t", Arc::new(provider(&h5, table, pushdown)?))?;
            let octx = context();
            octx.register_arrow("t", ipc.to_str().ok_or("path")?, Default::default())
                .await?;
            for q in *queries {
                let a = cells(&collect(&ctx, q).await?)?;
                let b = cells(&collect(&octx, q).await?)?;
                if a != b {
                    failures.push(format!(
                        "{file} (pushdown {pushdown}) {q}:\n  h5: {a:?}\n  ipc: {b:?}"
                    ));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
