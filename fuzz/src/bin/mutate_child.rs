//! Child process of the mutation stress test: opens, walks and fully reads
//! each file named on the command line under tight limits. Exit 0 means every
//! file gave a value or a typed error; a panic exits 101, an abort or the
//! memory cap kills it with a signal.

fn main() {
    for path in std::env::args().skip(1) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        h5fuzz::whole_file::run(&bytes);
    }
}
