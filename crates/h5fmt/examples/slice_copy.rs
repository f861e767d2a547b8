//! Read, slice, write and read back: the selection `SELECTION` (numpy style,
//! e.g. `10:20,::2`; a bare index keeps its dimension) of `DATASET` in
//! `IN.h5`, as `f64`, is written to `OUT.h5` as `/slice` and read back.
//!
//! `cargo run -p h5fmt --example slice_copy -- IN.h5 DATASET SELECTION OUT.h5`
//! (`tests/example_slice_copy.rs` runs it and checks `OUT.h5` with h5py).

use h5fmt::data::hyperslab::Selection;
use h5fmt::write::FileWriter;

/// Copy the slice; the values read back from the new file.
pub fn slice_copy(input: &str, dataset: &str, spec: &str, output: &str) -> h5fmt::Result<Vec<f64>> {
    let file = h5fmt::File::open(input)?;
    let ds = file.dataset(dataset)?;
    let sel = Selection::parse(spec, ds.shape())?;
    let values: Vec<f64> = ds.read_slice::<f64>(&sel)?; // converted from the file's type
    let mut out = FileWriter::create(output)?;
    let shape = sel.out_shape();
    out.root()
        .create_dataset("slice")
        .shape(&shape)
        .write(&values)?;
    out.close()?;
    h5fmt::File::open(output)?.dataset("slice")?.read::<f64>()
}

fn main() -> h5fmt::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, dataset, spec, output] = args.as_slice() else {
        eprintln!("usage: slice_copy IN.h5 DATASET SELECTION OUT.h5");
        std::process::exit(2);
    };
    let back = slice_copy(input, dataset, spec, output)?;
    println!(
        "{} values in {output}:/slice, read back: {back:?}",
        back.len()
    );
    Ok(())
}
