#![cfg_attr(fuzzing, no_main)]
#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| h5fuzz::object_header::run(data));
#[cfg(not(fuzzing))]
fn main() {}
