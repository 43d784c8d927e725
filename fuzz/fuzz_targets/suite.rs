//! Fuzz target: a suite file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(suite) = virtperf::suite::parse("fuzz", text) {
            assert!(suite.entries.len() <= virtperf::suite::MAX_ENTRIES);
        }
    }
});
