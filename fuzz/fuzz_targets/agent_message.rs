//! Fuzz target: one line of an agent's output, as the host reads it (the body is shared with the smoke fuzz in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies.rs"]
mod bodies;

fuzz_target!(|data: &[u8]| bodies::agent_message(data));
