//! The fuzz targets' bodies as plain functions, shared by `cargo fuzz`
//! (fuzz/fuzz_targets/, run under libFuzzer by scripts/fuzz) and the smoke
//! fuzz in `cargo test` (tests/smoke_fuzz.rs: the seed corpus in
//! fuzz/seeds/ plus seeded random mutations). Each must return without a
//! panic for every input; the asserts are the properties checked.
#![allow(dead_code)]

use virtperf::env::def::Check;

/// One line of an agent's output, as the host reads it: what parses must
/// serialise again.
pub fn agent_message(data: &[u8]) {
    if let Ok(line) = std::str::from_utf8(data) {
        if let Ok(Some(msg)) = virtperf::env::message_in(line) {
            serde_json::to_string(&msg).expect("a parsed message serialises");
        }
    }
}

/// An `--env` spec: what parses passes its own option checks and holds no
/// value an engine's command line could take for an option.
pub fn env_spec(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = virtperf::env::Spec::parse(text) {
            for (k, v) in &spec.opts {
                let option = spec.driver.option(k).expect("only declared options");
                assert!(option.check.refuse(k, v).is_none());
                assert!(!v.starts_with('-'));
            }
        }
    }
}

/// Option values, for every env option check and every workload's option
/// table (a job from words, as a suite or argv gives it): a job survives
/// the wire unchanged.
pub fn option_value(data: &[u8]) {
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
        let back =
            virtperf::workload::Job::from_wire(&job.to_wire()).expect("a job survives the wire");
        assert_eq!(back.args(), job.args());
        let _ = job.deadline();
    }
}

/// A suite file: what parses stays within the size cap.
pub fn suite(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(suite) = virtperf::suite::parse("fuzz", text) {
            assert!(suite.entries.len() <= virtperf::suite::MAX_ENTRIES);
        }
    }
}

/// A control message of the network protocol, as the server (a hello) or
/// the client (a welcome, a refusal, results) reads it from a stranger:
/// what parses writes out and reads back, and a hello the server accepts
/// stays within its bounds.
pub fn net_control(data: &[u8]) {
    use virtperf::workload::net::protocol::{self, Control};
    let mut r = data;
    let Ok(msg) = protocol::read_control(&mut r) else {
        return;
    };
    let mut frame = Vec::new();
    protocol::write_control(&mut frame, &msg).expect("writing to memory");
    let back = protocol::read_control(&mut frame.as_slice()).expect("what parsed reads back");
    assert_eq!(std::mem::discriminant(&back), std::mem::discriminant(&msg));
    if let Control::Hello(h) = &msg {
        if virtperf::workload::net::server::validate(h).is_ok() {
            assert!(h.duration_s > 0.0 && h.duration_s <= protocol::MAX_DURATION_S);
            assert!((1..=protocol::MAX_STREAMS).contains(&h.streams));
            for v in [h.request_size, h.response_size, h.send_size] {
                assert!((1..=protocol::MAX_MESSAGE_BYTES).contains(&v));
            }
        }
    }
}

/// A libvirt domain's or capabilities' XML, as `virsh` prints it (from a
/// daemon that may be on another machine): what parses yields bounded
/// essentials, and every value written back escaped parses to itself.
pub fn libvirt_xml(data: &[u8]) {
    use virtperf::env::libvirt::xml;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(domain) = xml::DomainXml::parse(text) {
        for (k, v) in domain.essentials() {
            assert!(v.chars().count() <= 200, "{k} unbounded");
            assert!(!v.contains('\n'), "{k} spans lines");
        }
        let _ = domain.ways_in();
    }
    if let Ok(caps) = xml::CpuCaps::parse(text) {
        let _ = caps.usable_models(8);
    }
    if let Ok(e) = xml::parse(text) {
        let again = format!(
            "<x v='{}'>{}</x>",
            xml::escape(&e.name),
            xml::escape(&e.text)
        );
        let back = xml::parse(&again).expect("escaped text parses");
        assert_eq!(back.attr("v"), Some(e.name.as_str()));
        assert_eq!(back.text, e.text.trim());
    }
}

/// A target's body.
pub type Body = fn(&[u8]);

/// Every target by its name (the name of its folder under fuzz/seeds/ and
/// of its `cargo fuzz` binary).
pub const TARGETS: &[(&str, Body)] = &[
    ("agent_message", agent_message),
    ("env_spec", env_spec),
    ("option_value", option_value),
    ("suite", suite),
    ("net_control", net_control),
    ("libvirt_xml", libvirt_xml),
    ("import_file", import_file),
];

/// A file given to `virtperf import`, read as each format and as the one
/// detection picks: a parser refuses or yields runs whose options are
/// declared by their workload and whose figures are finite, and a refusal
/// names a line inside the file.
pub fn import_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count();
    let detected = virtperf::workload::detect_import(text).map(|f| f.kind);
    for format in virtperf::workload::IMPORT_FORMATS {
        let forced = [None, Some("mutex"), Some("oltp_insert")];
        for sub in forced
            .iter()
            .take(if Some(format.kind) == detected { 3 } else { 1 })
        {
            match (format.parse)(text, *sub) {
                Ok(runs) => {
                    assert!(runs.len() <= virtperf::workload::import::MAX_RUNS);
                    for run in runs {
                        for (name, _) in &run.options {
                            assert!(
                                run.def.accepts(name),
                                "{name} is no option of {}",
                                run.def.name
                            );
                        }
                        // A figure no run can have is never kept (the run
                        // is refused by its check instead).
                        for m in &run.metrics {
                            assert!(
                                m.value.is_finite() && m.value >= 0.0,
                                "{} is {}",
                                m.name,
                                m.value
                            );
                        }
                    }
                }
                Err(refusal) => assert!(refusal.line <= lines.max(1), "{refusal}"),
            }
        }
    }
}
