//! Fuzz target: option values, for every env option check and every
//! workload's option table (a job from words, as a suite or argv gives it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use virtperf::env::def::Check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for check in [
        Check::Positive(1024.0),
        Check::Whole(1, 255),
        Check::Size(1 << 20),
        Check::Port,
        Check::CpuList,
        Check::Image,
        Check::Text,
    ] {
        let _ = check.refuse("key", text);
    }
    let _ = virtperf::core::units::Bytes::parse(text);
    let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    if let Ok(job) = virtperf::workload::Job::from_args(&words) {
        let back = virtperf::workload::Job::from_wire(&job.to_wire()).expect("a job survives the wire");
        assert_eq!(back.args(), job.args());
        let _ = job.deadline();
    }
});
