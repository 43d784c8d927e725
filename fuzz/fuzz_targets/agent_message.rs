//! Fuzz target: one line of an agent's output, as the host reads it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(line) = std::str::from_utf8(data) {
        if let Ok(Some(msg)) = virtperf::env::message_in(line) {
            // What parses must serialise again.
            serde_json::to_string(&msg).expect("a parsed message serialises");
        }
    }
});
