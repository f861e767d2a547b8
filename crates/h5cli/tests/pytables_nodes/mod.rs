//! PyTables nodes read by `h5table::pytables` (groups, Array, CArray,
//! EArray, VLArray and their pseudo-atoms) and `h5table::rowtable` (Table)
//! against what PyTables reads (tests/pytables_oracle.py): a file PyTables
//! writes with every array class, and every PyTables file of the shared
//! corpus (one oracle call for all of them).

use super::arrow_canon::{self, float};
use super::{assert_cols, dir, python};
use arrow_array::Array;
use h5fmt::{Datatype, Value};
use h5table::pytables::{Node, PseudoAtom, VlRow};
use h5table::rowtable::RowTable;
use serde_json::{json, Map, Value as J};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pytables_oracle.py");

/// `pytables_oracle.py ARGS`'s output.
fn run_oracle(args: &[&str]) -> Vec<u8> {
    let out = Command::new(python())
        .arg(ORACLE)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pytables_oracle.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `pytables_oracle.py ARGS`, parsed.
fn oracle(args: &[&str]) -> J {
    serde_json::from_slice(&run_oracle(args)).unwrap()
}

/// The oracle's generated files (`gen`), made once per test binary.
fn generated() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = dir().join("pytables_nodes");
        std::fs::create_dir_all(&d).unwrap();
        run_oracle(&["gen", d.to_str().unwrap()]);
        d
    })
}

/// A decoded element in the oracle's form (`flat` of pytables_oracle.py):
/// arrays flattened into `out`, one-byte bitfields as booleans, enums by code.
fn canon_into(v: &Value, dt: &Datatype, out: &mut Vec<J>) {
    match (v, dt) {
        (Value::Array(items), Datatype::Array { base, .. }) => {
            for x in items {
                canon_into(x, base, out);
            }
        }
        (Value::Array(items), _) => items.iter().for_each(|x| canon_into(x, dt, out)),
        (v, dt) => out.push(canon(v, dt)),
    }
}

fn canon(v: &Value, dt: &Datatype) -> J {
    match v {
        Value::Int(i) => json!(i),
        Value::UInt(u) if matches!(dt, Datatype::Bitfield { size: 1, .. }) => json!(*u != 0),
        Value::UInt(u) => json!(u),
        Value::F32(x) => float(f64::from(*x)),
        Value::F64(x) => float(*x),
        Value::Str(s) => json!(s),
        Value::RawStr(b) => json!(String::from_utf8_lossy(b)),
        Value::Enum { code, .. } => json!(i64::try_from(*code).unwrap()),
        // PyTables reads a Time32 atom as its integer.
        Value::Time(t) => json!(t),
        Value::Compound(members) => {
            let Datatype::Compound { members: mt, .. } = dt else {
                panic!("compound value of {dt}")
            };
            J::Object(
                members
                    .iter()
                    .zip(mt)
                    .map(|((n, x), m)| {
                        let mut flat = vec![];
                        canon_into(x, &m.dtype, &mut flat);
                        let one = matches!(m.dtype, Datatype::Array { .. });
                        (n.clone(), if one { J::Array(flat) } else { flat.remove(0) })
                    })
                    .collect(),
            )
        }
        other => panic!("no canonical form for {other:?}"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One node as the oracle dumps it, or `Err` with our error.
fn node_json(node: &Node) -> Result<J, String> {
    let sys = |a: &h5table::pytables::SystemAttrs| {
        let mut m = Map::new();
        m.insert("class".into(), json!(a.class));
        m.insert("version".into(), json!(a.version));
        m.insert("title".into(), json!(a.title));
        m
    };
    Ok(J::Object(match node {
        Node::Group(g) => sys(&g.attrs),
        Node::Table { attrs, dataset } => {
            let mut m = sys(attrs);
            m.insert("flavor".into(), json!(attrs.flavor));
            let rt = RowTable::open(dataset).map_err(|e| e.to_string())?;
            let mut cols: Map<String, J> = rt
                .fields()
                .iter()
                .map(|f| (f.name.clone(), J::Array(vec![])))
                .collect();
            for b in rt.batches(1000) {
                let b = b.map_err(|e| e.to_string())?;
                for (field, c) in b.schema().fields().iter().zip(b.columns()) {
                    if let Some(J::Array(v)) = cols.get_mut(field.name()) {
                        v.extend((0..c.len()).map(|i| arrow_canon::canon(c.as_ref(), i)));
                    }
                }
            }
            m.insert("nrows".into(), json!(rt.nrows()));
            m.insert("columns".into(), J::Object(cols));
            m
        }
        Node::Array(a) => {
            let mut m = sys(&a.attrs);
            m.insert("flavor".into(), json!(a.attrs.flavor));
            m.insert("shape".into(), json!(a.shape()));
            m.insert("extdim".into(), json!(a.extdim));
            let mut values = vec![];
            for v in a.read_values().map_err(|e| e.to_string())? {
                canon_into(&v, a.dtype(), &mut values);
            }
            m.insert("values".into(), J::Array(values));
            m
        }
        Node::VlArray(v) => {
            let mut m = sys(&v.attrs);
            m.insert("flavor".into(), json!(v.attrs.flavor));
            m.insert(
                "pseudo".into(),
                json!(v.pseudo_atom.map(|p| match p {
                    PseudoAtom::VlString => "vlstring",
                    PseudoAtom::VlUnicode => "vlunicode",
                    PseudoAtom::Object => "object",
                })),
            );
            m.insert("nrows".into(), json!(v.nrows()));
            let rows = v.read_rows(0..v.nrows()).map_err(|e| e.to_string())?;
            let rows = rows
                .iter()
                .map(|r| match r {
                    VlRow::Values(items) => {
                        let mut flat = vec![];
                        for x in items {
                            canon_into(x, v.atom(), &mut flat);
                        }
                        J::Array(flat)
                    }
                    VlRow::Bytes(b) => json!(hex(b)),
                    VlRow::Text(s) => json!(s),
                })
                .collect();
            m.insert("rows".into(), J::Array(rows));
            m
        }
        Node::Unknown { why, .. } => return Err(format!("unknown: {why}")),
    }))
}

/// A node's path and our JSON of it, or our error.
type Read = (String, Result<J, String>);

/// Every node of `file` reachable by hard links: path → our JSON or our error.
fn ours(file: &Path) -> (Option<String>, Vec<Read>) {
    let f = h5fmt::File::open(file).unwrap();
    let fv = h5table::pytables::format_version(&f).unwrap();
    let nodes = h5table::pytables::walk(&f).unwrap();
    let out = nodes
        .iter()
        .map(|(p, n)| {
            let j = n.as_ref().map_err(|e| e.to_string()).and_then(node_json);
            (p.clone(), j)
        })
        .collect();
    (fv, out)
}

/// Compare our reading of `files` with the oracle's; returns the nodes
/// PyTables reads and we do not (`file name: path: our error`), and the
/// nodes neither reads (`…: both: our error`).
fn compare(files: &[PathBuf], strict: bool) -> Vec<String> {
    let mut args = vec!["dump"];
    if strict {
        args.push("--strict");
    }
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let want = oracle(&args);
    let mut unread = vec![];
    for (file, name) in files.iter().zip(&names) {
        let w = &want[name];
        let short = file.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            w.get("error").is_none(),
            "{short}: PyTables: {}",
            w["error"]
        );
        let (fv, ours) = ours(file);
        assert_eq!(json!(fv), w["format_version"], "{short}: format version");
        let wn = w["nodes"].as_object().unwrap();
        for (path, wnode) in wn {
            let Some((_, got)) = ours.iter().find(|(p, _)| p == path) else {
                panic!("{short}: {path}: PyTables lists it, our walk does not");
            };
            match (got, wnode.get("error")) {
                (Err(e), Some(_)) => unread.push(format!("{short}: {path}: both: {e}")),
                (Err(e), None) => unread.push(format!("{short}: {path}: {e}")),
                (Ok(g), Some(we)) => panic!("{short}: {path}: we read {g}, PyTables fails: {we}"),
                (Ok(g), None) => {
                    if let (Some(gc), Some(wc)) = (g.get("columns"), wnode.get("columns")) {
                        // PyTables orders columns by offset, we by declaration.
                        let sorted = |c: &J| {
                            let mut v: Vec<_> =
                                c.as_object().unwrap().clone().into_iter().collect();
                            v.sort_by(|a, b| a.0.cmp(&b.0));
                            J::Object(v.into_iter().collect())
                        };
                        assert_cols(&sorted(gc), &sorted(wc), &format!("{short}: {path}"));
                        let strip = |x: &J| {
                            let mut x = x.clone();
                            x.as_object_mut().unwrap().remove("columns");
                            x
                        };
                        assert_eq!(strip(g), strip(wnode), "{short}: {path}");
                    } else {
                        assert_eq!(g, wnode, "{short}: {path}");
                    }
                }
            }
        }
    }
    unread
}

/// The PyTables files of the shared corpus: those whose root carries
/// `PYTABLES_FORMAT_VERSION`, read by our reader.
fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/files/PyTables__PyTables");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            h5fmt::File::open(p)
                .ok()
                .and_then(|f| h5table::pytables::format_version(&f).ok().flatten())
                .is_some()
        })
        .collect();
    files.sort();
    files
}

#[test]
fn pytables_arrays_read_as_pytables_reads_them() {
    let unread = compare(&[generated().join("arrays.h5")], true);
    assert!(unread.is_empty(), "{unread:#?}");
}

#[test]
fn broken_pytables_nodes_are_refused_naming_the_node() {
    let f = h5fmt::File::open(generated().join("bad.h5")).unwrap();
    let open = |name: &str| Node::open(&f.object(&format!("/{name}")).unwrap());
    for (name, want) in [
        ("class_int", "attribute CLASS is"),
        (
            "extdim_far",
            "EXTDIM 5 is outside the dataset's 2 dimensions",
        ),
        (
            "extdim_fixed",
            "EXTDIM 1 names a dimension that is not extendable",
        ),
        ("extdim_str", "attribute EXTDIM is"),
        ("title_float", "attribute TITLE is"),
        (
            "pseudo_bad",
            "pseudo-atom Some(VlUnicode) over H5T_IEEE_F64LE",
        ),
    ] {
        let e = open(name).unwrap_err().to_string();
        assert!(
            e.contains(&format!("/{name}")) && e.contains(want),
            "{name}: {e}"
        );
    }
    let Node::Unknown { why, .. } = open("version_new").unwrap() else {
        panic!("VLARRAY 9.0 read")
    };
    assert!(why.contains("VERSION \"9.0\""), "{why}");
    let Node::VlArray(v) = open("garbage").unwrap() else {
        panic!("not a VLArray")
    };
    assert_eq!(
        v.read_rows(0..1).unwrap(),
        vec![VlRow::Bytes(vec![0, 1, 2, 3, 4])]
    );
    let e = v.read_rows(0..2).unwrap_err().to_string();
    assert!(e.contains("/garbage") && e.contains("rows 0..2"), "{e}");
}

/// What the corpus holds that is not read, each `(file, node, our error)`:
/// LZO-compressed tables (filter 305, which neither we nor this PyTables
/// build decode).
const NOT_READ: &[(&str, &str, &str)] = &[
    ("Table2_1_lzo_nrv2e_shuffle.h5", "/tuple0", "both: "),
    ("Table2_1_lzo_nrv2e_shuffle.h5", "/group0/tuple1", "both: "),
    (
        "Table2_1_lzo_nrv2e_shuffle.h5",
        "/group0/group1/tuple2",
        "both: ",
    ),
    ("Tables_lzo1.h5", "/tuple0", "both: "),
    ("Tables_lzo1.h5", "/group0/tuple1", "both: "),
    ("Tables_lzo1.h5", "/group0/group1/tuple2", "both: "),
    ("Tables_lzo1_shuffle.h5", "/tuple0", "both: "),
    ("Tables_lzo1_shuffle.h5", "/group0/tuple1", "both: "),
    ("Tables_lzo1_shuffle.h5", "/group0/group1/tuple2", "both: "),
    ("Tables_lzo2.h5", "/tuple0", "both: "),
    ("Tables_lzo2.h5", "/group0/tuple1", "both: "),
    ("Tables_lzo2.h5", "/group0/group1/tuple2", "both: "),
    ("Tables_lzo2_shuffle.h5", "/tuple0", "both: "),
    ("Tables_lzo2_shuffle.h5", "/group0/tuple1", "both: "),
    ("Tables_lzo2_shuffle.h5", "/group0/group1/tuple2", "both: "),
];

#[test]
fn pytables_corpus_sweep() {
    let files = corpus_files();
    assert!(files.len() >= 20, "{} PyTables files", files.len());
    let unread = compare(&files, false);
    let expected = |u: &String| {
        NOT_READ.iter().any(|(f, p, why)| {
            u.starts_with(&format!("tables__tests__{f}: {p}: "))
                && u.contains(why)
                && (!why.starts_with("both") || u.contains("filter 305 (lzo) unsupported"))
        })
    };
    let surprises: Vec<_> = unread.iter().filter(|u| !expected(u)).collect();
    assert!(surprises.is_empty(), "{surprises:#?}");
    assert_eq!(unread.len(), NOT_READ.len(), "{unread:#?}");
}

/// `h5 ls -r -l` (JSON and text) names the PyTables node class and VERSION
/// of every object whose CLASS PyTables registers, and nothing for the
/// others, as PyTables' `_v_attrs` and class registry give them (a file with
/// a node of each class, an indexed table, a dimension scale, a plain dataset).
#[test]
fn ls_long_names_pytables_node_classes() {
    let d = generated();
    let want = oracle(&["classes", d.to_str().unwrap()]);
    let file = d.join("classes.h5");
    let f = file.to_str().unwrap();
    let run = |args: &[&str]| {
        let o = super::h5(args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let mut seen = 0;
    let mut named = std::collections::BTreeSet::new();
    for line in run(&["ls", "-r", "-l", "--json", f]).lines() {
        let got: J = serde_json::from_str(line).unwrap();
        let path = got["path"].as_str().unwrap();
        let w = &want[path];
        assert!(w.is_object(), "{path}: not listed by the oracle");
        let expect = match &w["class"] {
            J::Null => J::Null,
            c => json!({"class": c, "version": w["VERSION"]}),
        };
        assert_eq!(got.get("pytables").unwrap_or(&J::Null), &expect, "{path}");
        if let Some(c) = w["class"].as_str() {
            named.insert(c.to_string());
        }
        seen += 1;
    }
    assert_eq!(seen, want.as_object().unwrap().len());
    // Every class of the file, and objects without one (a plain dataset, a scale).
    for c in [
        "Group",
        "Table",
        "Array",
        "CArray",
        "EArray",
        "VLArray",
        "IndexesTableG",
        "Index",
        "IndexArray",
        "CacheArray",
        "LastRowArray",
    ] {
        assert!(named.contains(c), "{c} not in the file: {named:?}");
    }
    assert_eq!(want["/plain"]["class"], J::Null);
    assert_eq!(want["/scale"]["CLASS"], json!("DIMENSION_SCALE"));
    // The text form: the same class and VERSION at the end of each line.
    for line in run(&["ls", "-r", "-l", f]).lines() {
        let path = line.split_whitespace().next().unwrap();
        let w = &want[path];
        match w["class"].as_str() {
            Some(c) => assert!(
                line.ends_with(&format!(
                    "  PyTables {c} {}",
                    w["VERSION"].as_str().unwrap()
                )),
                "{line}"
            ),
            None => assert!(!line.contains("PyTables"), "{line}"),
        }
    }
}

fn dt_of<T: h5fmt::H5Type>() -> Datatype {
    T::dtype()
}

fn le_bytes<T: h5fmt::H5Type>(v: &[T]) -> Vec<u8> {
    h5fmt::write::value::to_bytes(v)
}

#[test]
fn arrays_we_write_read_in_pytables_without_warnings() {
    use h5table::pytables::{ArrayKind, PseudoAtom};
    use h5table::write::pytables::{self as w, ArraySpec, VlAtom};
    let file = dir().join("pytables_written.h5");
    let _ = std::fs::remove_file(&file);
    h5fmt::FileWriter::create(&file).unwrap().close().unwrap();
    let mut ed = h5fmt::FileEditor::open(&file).unwrap();
    w::init_file(&mut ed, "ours").unwrap();
    w::create_group(&mut ed, "/", "g", "a group").unwrap();
    w::create_group(&mut ed, "/g", "h", "").unwrap();

    let f64s: Vec<f64> = (0..6)
        .map(|i| f64::from(i) * 1.5)
        .chain([f64::NAN])
        .collect();
    let mut a = ArraySpec::new(ArrayKind::Array, dt_of::<f64>(), &[7]);
    a.title = "floats".into();
    w::create_array(&mut ed, "/", "a", &a, &le_bytes(&f64s)).unwrap();
    let i32s: Vec<i32> = (0..12).map(|i| i * 1000 - 5000).collect();
    let a = ArraySpec::new(ArrayKind::Array, dt_of::<i32>(), &[3, 4]);
    w::create_array(&mut ed, "/g", "m", &a, &le_bytes(&i32s)).unwrap();
    let f32s: Vec<f32> = (0..120u16).map(|i| f32::from(i) / 4.0).collect();
    let mut c = ArraySpec::new(ArrayKind::CArray, dt_of::<f32>(), &[40, 3]);
    c.deflate = Some(4);
    c.chunks = Some(vec![16, 3]);
    c.title = "compressed".into();
    w::create_array(&mut ed, "/g/h", "c", &c, &le_bytes(&f32s)).unwrap();
    let i16s: Vec<i16> = (0..15).map(|i| -i).collect();
    let mut e = ArraySpec::new(ArrayKind::EArray, dt_of::<i16>(), &[3, 5]);
    e.extdim = 1;
    w::create_array(&mut ed, "/", "e", &e, &le_bytes(&i16s)).unwrap();
    let e0 = ArraySpec::new(ArrayKind::EArray, dt_of::<u8>(), &[0, 2]);
    w::create_array(&mut ed, "/", "e0", &e0, &[]).unwrap();

    let ints: Vec<Vec<i32>> = vec![vec![], vec![1], vec![2, -3, 4]];
    let rows: Vec<Vec<u8>> = ints.iter().map(|r| le_bytes(r)).collect();
    w::create_vlarray(
        &mut ed,
        "/",
        "vl",
        &VlAtom::Plain(dt_of::<i32>()),
        "ragged",
        &rows,
    )
    .unwrap();
    let strs: [&[u8]; 4] = [b"", b"abc", "h\u{e9}".as_bytes(), b"\x00\xff"];
    let rows: Vec<Vec<u8>> = strs.iter().map(|s| s.to_vec()).collect();
    let vls = VlAtom::Pseudo(PseudoAtom::VlString);
    w::create_vlarray(&mut ed, "/", "vs", &vls, "", &rows).unwrap();
    let texts = ["", "h\u{e9}llo", "\u{1F600} ok"];
    let rows: Vec<Vec<u8>> = texts.iter().map(|s| s.as_bytes().to_vec()).collect();
    let vlu = VlAtom::Pseudo(PseudoAtom::VlUnicode);
    w::create_vlarray(&mut ed, "/g", "vu", &vlu, "unicode", &rows).unwrap();
    // Pickles of 5, None and True.
    let pickles: Vec<Vec<u8>> = vec![b"K\x05.".to_vec(), b"N.".to_vec(), b"\x88.".to_vec()];
    let vlo = VlAtom::Pseudo(PseudoAtom::Object);
    w::create_vlarray(&mut ed, "/", "vo", &vlo, "objects", &pickles).unwrap();
    ed.close().unwrap();

    let floats = |v: &[f64]| J::Array(v.iter().map(|&x| float(x)).collect());
    let group = |title: &str| json!({"class": "GROUP", "version": "1.0", "title": title});
    let array = |class: &str,
                 version: &str,
                 title: &str,
                 flavor: Option<&str>,
                 shape: J,
                 extdim: Option<u32>,
                 values: J| {
        json!({"class": class, "version": version, "title": title, "flavor": flavor,
               "shape": shape, "extdim": extdim, "values": values})
    };
    let vlarray = |title: &str, pseudo: Option<&str>, rows: J| {
        json!({"class": "VLARRAY", "version": "1.4", "title": title, "flavor": null,
               "pseudo": pseudo, "nrows": rows.as_array().unwrap().len(), "rows": rows})
    };
    let f32_vals: Vec<f64> = f32s.iter().map(|&x| f64::from(x)).collect();
    let want = json!({
        "format_version": "2.1",
        "nodes": {
            "/": group("ours"),
            "/a": array("ARRAY", "2.4", "floats", Some("numpy"), json!([7]), None, floats(&f64s)),
            "/e": array("EARRAY", "1.1", "", None, json!([3, 5]), Some(1), json!(i16s)),
            "/e0": array("EARRAY", "1.1", "", None, json!([0, 2]), Some(0), json!([])),
            "/g": group("a group"),
            "/g/h": group(""),
            "/g/h/c": array("CARRAY", "1.1", "compressed", None, json!([40, 3]), None, floats(&f32_vals)),
            "/g/m": array("ARRAY", "2.4", "", Some("numpy"), json!([3, 4]), None, json!(i32s)),
            "/g/vu": vlarray("unicode", Some("vlunicode"), json!(texts)),
            "/vl": vlarray("ragged", None, json!(ints)),
            "/vo": vlarray("objects", Some("object"), json!(pickles.iter().map(|p| hex(p)).collect::<Vec<_>>())),
            "/vs": vlarray("", Some("vlstring"), json!(strs.iter().map(|s| hex(s)).collect::<Vec<_>>())),
        }
    });
    let name = file.display().to_string();
    let got = oracle(&["dump", "--strict", &name]);
    let (g, w) = (&got[&name]["nodes"], &want["nodes"]);
    for (path, wn) in w.as_object().unwrap() {
        assert_eq!(&g[path], wn, "{path}: PyTables read vs what we wrote");
    }
    assert_eq!(got[&name], want);
    // And our reader agrees with PyTables on our file.
    let unread = compare(&[file], true);
    assert!(unread.is_empty(), "{unread:#?}");
}
