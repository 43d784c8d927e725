//! Fuzz target: a libvirt domain's or capabilities' XML (the body is shared with the smoke fuzz in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies.rs"]
mod bodies;

fuzz_target!(|data: &[u8]| bodies::libvirt_xml(data));
