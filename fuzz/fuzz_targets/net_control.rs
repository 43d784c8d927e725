//! Fuzz target: a control message of the network protocol, as the server or client reads it (the body is shared with the smoke fuzz in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../bodies.rs"]
mod bodies;

fuzz_target!(|data: &[u8]| bodies::net_control(data));
