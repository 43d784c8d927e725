//! Fuzz target: an `--env` spec; what parses passes its own option checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = virtperf::env::Spec::parse(text) {
            for (k, v) in &spec.opts {
                let option = spec.driver.option(k).expect("only declared options");
                assert!(option.check.refuse(k, v).is_none());
                assert!(!v.starts_with('-'));
            }
        }
    }
});
