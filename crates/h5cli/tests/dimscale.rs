//! `h5 ls -l` (text and `--json`) shows dimension scales as h5py's `dims`
//! API sees them: files made with h5py's `dims`, and a netCDF-4 file of the
//! shared corpus.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Make the file `argv[1]` with h5py's `dims` API (unless `argv[2]` is
/// `read`), then print, per dataset, what h5py sees: a JSON line of the
/// fields `h5 ls -l --json` gives, then the text `h5 ls -l` appends.
const ORACLE: &str = r#"
import sys, json, h5py, numpy as np
p = sys.argv[1]
if sys.argv[2] == 'make':
    f = h5py.File(p, 'w')
    d = f.create_dataset('data', data=np.zeros((3, 4, 2)))
    e = f.create_dataset('grp/other', data=np.zeros(4))
    x = f.create_dataset('x', data=np.arange(3.0)); x.make_scale('x axis')
    y = f.create_dataset('y', data=np.arange(4.0)); y.make_scale('')
    z = f.create_dataset('grp/z', data=np.arange(4.0))
    d.dims[0].attach_scale(x)
    d.dims[1].attach_scale(y)
    d.dims[1].attach_scale(z)
    e.dims[0].attach_scale(z)
    d.dims[1].detach_scale(y)
    d.dims[1].label = 'lon'
    d.dims[2].label = 'level'
    f.close()
f = h5py.File(p, 'r')
out = []
def visit(name, o):
    if not isinstance(o, h5py.Dataset):
        return
    j = {'path': o.name}
    text = ''
    if o.is_scale:
        n = o.attrs.get('NAME')
        n = None if n is None else n.decode()
        j['dimension_scale'] = {'name': n}
        text += '  scale' if n is None else '  scale ' + json.dumps(n)
    else:
        j['dimension_scale'] = None
    dims = [{'scales': [s.name for s in o.dims[i].values()], 'label': o.dims[i].label} for i in range(o.ndim)]
    if any(x['scales'] or x['label'] for x in dims):
        j['dims'] = dims
        for i, x in enumerate(dims):
            if x['scales'] or x['label']:
                text += '  dim%d' % i
                if x['scales']:
                    text += ' ' + ','.join(x['scales'])
                if x['label']:
                    text += ' ' + json.dumps(x['label'])
    if 'REFERENCE_LIST' in o.attrs:
        j['scale_references'] = [{'dataset': f[r].name, 'dim': int(i)} for r, i in o.attrs['REFERENCE_LIST']]
        if j['scale_references']:
            text += '  of ' + ','.join('%s:%d' % (x['dataset'], x['dim']) for x in j['scale_references'])
    out.append((o.name, json.dumps(j, sort_keys=True), text))
f.visititems(visit)
for n, j, t in sorted(out):
    print(j)
    print(n + '\t' + t)
"#;

fn h5(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .expect("run h5");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Check `h5 ls -l -r` (JSON and text) of `file` against h5py's view.
fn check(file: &Path, make: bool) {
    let p = file.to_str().unwrap();
    let Some(oracle) = common::run_py(ORACLE, &[p, if make { "make" } else { "read" }]) else {
        panic!("no Python venv: set H5FMT_VENV; this test needs h5py as its oracle");
    };
    let mut want_json = Vec::new();
    let mut want_text = Vec::new();
    for (i, line) in oracle.lines().enumerate() {
        if i % 2 == 0 {
            want_json.push(serde_json::from_str::<Value>(line).unwrap());
        } else {
            let (path, tail) = line.split_once('\t').unwrap();
            want_text.push((path.to_string(), tail.to_string()));
        }
    }
    assert!(
        want_text.iter().any(|(_, t)| t.contains("dim0 ")),
        "{oracle}"
    );

    let mut got_json = Vec::new();
    for line in h5(&["ls", "-l", "-r", "--json", p]).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["kind"] != "dataset" {
            continue;
        }
        let mut m = serde_json::Map::new();
        for k in ["path", "dimension_scale", "dims", "scale_references"] {
            if let Some(x) = v.get(k) {
                m.insert(k.to_string(), x.clone());
            }
        }
        got_json.push(Value::Object(m));
    }
    got_json.sort_by_key(|v| v["path"].as_str().unwrap().to_string());
    assert_eq!(got_json, want_json);

    let text = h5(&["ls", "-l", "-r", p]);
    for (path, tail) in &want_text {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(path))
            .unwrap_or_else(|| panic!("{path} not listed:\n{text}"));
        let rest = line.split_once("  ratio ").map_or(line, |(_, r)| r);
        let after = rest
            .find("  scale")
            .or_else(|| rest.find("  dim"))
            .map_or("", |i| &rest[i..]);
        assert_eq!(after, tail, "{line}");
    }
    // The default listing is unchanged: no scale information.
    assert!(!h5(&["ls", "-r", p]).contains("dim0"));
}

#[test]
fn ls_long_shows_scales_as_h5py() {
    let dir = std::env::temp_dir().join(format!("h5cli-dimscale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    check(&dir.join("dims.h5"), true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ls_long_netcdf_corpus_as_h5py() {
    let Some(c) = common::corpus_dir() else {
        println!("warning: ../shared/corpus not found: no netCDF file checked");
        return;
    };
    for f in [
        "NCAS-CMS__pyfive/tests__data__issue23_B.nc",
        "NCAS-CMS__pyfive/tests__data__dim_scales.hdf5",
    ] {
        check(&c.join("files").join(f), false);
    }
}
