#![cfg_attr(fuzzing, no_main)]
#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| h5fuzz::read_write::run(data));
#[cfg(not(fuzzing))]
fn main() {}
