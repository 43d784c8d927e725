//! Fuzz target: a file given to `virtperf import` (the body is shared with the smoke fuzz in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies.rs"]
mod bodies;

fuzz_target!(|data: &[u8]| bodies::import_file(data));
