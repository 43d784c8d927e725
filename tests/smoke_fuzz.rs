//! The smoke fuzz, in every `cargo test`: each fuzz target's body (shared
//! with `cargo fuzz`, fuzz/bodies.rs) runs over its seed corpus
//! (fuzz/seeds/TARGET/) and a fixed number of random mutations of it from a
//! seeded generator, so a failure repeats exactly. No input may panic, none
//! may take more than a second, and a target's whole run is bounded. Real,
//! coverage-guided fuzzing is scripts/fuzz.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Once;
use std::time::{Duration, Instant};

#[path = "../fuzz/bodies.rs"]
mod bodies;

/// Mutations per target: a second or two for all of them in a release
/// build here.
const MUTATIONS: usize = 20_000;
/// The most one input may take.
const PER_INPUT: Duration = Duration::from_secs(1);
/// The most one target's whole run may take before it is called a hang.
const PER_TARGET: Duration = Duration::from_secs(60);

/// xorshift64*: small, seeded, the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Words that parsers treat specially: syntax, numbers at the edges,
/// bytes that are not text.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b"\n",
    b"\r\n",
    b"\0",
    b"-",
    b"--",
    b"-1",
    b"0",
    b"1e400",
    b"NaN",
    b"inf",
    b"18446744073709551616",
    b"9999999999",
    b"\xff",
    b"\xc3",
    b"\xe2\x80",
    b"\x1b[2J",
    b"\\u0000",
    b"\\ud800",
    b"[[run]]",
    b"count=",
    b"name=",
    b"image=",
    b"memory=",
    b"cpus=",
    b"threads = [",
    b"{\"type\":",
    b"\"result\"",
    b"\"index\":",
    b"null",
    b"true",
    b"1.5",
    b"0x10",
    b" ",
];

/// One random edit of `input`, using `others` for splices.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>, others: &[Vec<u8>]) {
    let at = |rng: &mut Rng, len: usize| rng.below(len + 1);
    match rng.below(8) {
        0 if !input.is_empty() => {
            let i = rng.below(input.len());
            input[i] ^= 1 << rng.below(8);
        }
        1 if !input.is_empty() => {
            let i = rng.below(input.len());
            input[i] = rng.next() as u8;
        }
        2 if !input.is_empty() => {
            let i = rng.below(input.len());
            let n = 1 + rng.below(16.min(input.len() - i));
            input.drain(i..i + n);
        }
        3 if !input.is_empty() => {
            // Repeat a slice: long values, deep nesting.
            let i = rng.below(input.len());
            let n = 1 + rng.below(32.min(input.len() - i));
            let piece = input[i..i + n].to_vec();
            let j = at(rng, input.len());
            for _ in 0..1 + rng.below(8) {
                input.splice(j..j, piece.iter().copied());
            }
        }
        4 if !others.is_empty() => {
            let other = &others[rng.below(others.len())];
            let from = rng.below(other.len().max(1));
            let piece = &other[from.min(other.len())..];
            let j = at(rng, input.len());
            input.splice(j..j, piece[..rng.below(piece.len() + 1)].iter().copied());
        }
        5 if !input.is_empty() => {
            input.truncate(rng.below(input.len()));
        }
        _ => {
            let token = TOKENS[rng.below(TOKENS.len())];
            let j = at(rng, input.len());
            input.splice(j..j, token.iter().copied());
        }
    }
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

thread_local! {
    /// Set while a body runs: its panic is caught and reported with the
    /// input, not printed by the panic hook.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn quiet_caught_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info)
            }
        }));
    });
}

/// Runs `body` on `input`; the panic message, if it panics.
fn check(body: fn(&[u8]), input: &[u8]) -> Result<Duration, String> {
    quiet_caught_panics();
    let started = Instant::now();
    QUIET.with(|q| q.set(true));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| body(input)));
    QUIET.with(|q| q.set(false));
    outcome.map(|()| started.elapsed()).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// The seeds and `MUTATIONS` mutations of them; how many inputs ran.
fn smoke(target: &'static str, body: fn(&[u8])) -> usize {
    let corpus = seeds(target);
    assert!(
        !corpus.is_empty(),
        "{target}: no seeds in fuzz/seeds/{target}"
    );
    // One seed per target, fixed: the same inputs on every run.
    let name_hash = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = Rng(name_hash | 1);
    let inputs = corpus.iter().cloned().chain((0..MUTATIONS).map(|_| {
        let mut input = corpus[rng.below(corpus.len())].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut input, &corpus);
        }
        input
    }));
    let mut count = 0;
    for input in inputs {
        match check(body, &input) {
            Ok(took) => assert!(
                took < PER_INPUT,
                "{target}: {took:?} for the input {:?} (add it to fuzz/seeds/{target}/)",
                String::from_utf8_lossy(&input)
            ),
            Err(why) => panic!(
                "{target}: panicked ({why}) on the input {:?} (add it to fuzz/seeds/{target}/ and fix)",
                String::from_utf8_lossy(&input)
            ),
        }
        count += 1;
    }
    count
}

#[test]
fn every_fuzz_target_survives_its_seeds_and_their_mutations() {
    let started = Instant::now();
    let runs: Vec<_> = bodies::TARGETS
        .iter()
        .map(|&(name, body)| (name, std::thread::spawn(move || smoke(name, body))))
        .collect();
    for (name, run) in runs {
        // A hang never returns: wait in bounded steps, then fail.
        while !run.is_finished() {
            assert!(
                started.elapsed() < PER_TARGET,
                "{name}: still running after {PER_TARGET:?}: a hang"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let count = run.join().unwrap_or_else(|p| {
            panic!(
                "{}",
                p.downcast_ref::<String>().cloned().unwrap_or_default()
            )
        });
        assert!(count > MUTATIONS, "{name}: {count} inputs");
        eprintln!("{name}: {count} inputs, no panic");
    }
    eprintln!("smoke fuzz: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn every_cargo_fuzz_target_has_seeds_and_a_body() {
    let names: Vec<&str> = bodies::TARGETS.iter().map(|t| t.0).collect();
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml"))
            .unwrap();
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fuzz"))
            .unwrap();
    for name in &names {
        assert!(manifest.contains(&format!("name = \"{name}\"")), "{name}");
        assert!(script.contains(name), "scripts/fuzz runs {name}");
        assert!(!seeds(name).is_empty());
    }
    let bins = manifest.matches("[[bin]]").count();
    assert_eq!(bins, names.len(), "a body for every fuzz target");
}

#[test]
fn the_mutator_finds_what_the_smoke_fuzz_is_for() {
    // Fed a body with a planted bug (a panic on a byte no seed holds), the
    // smoke fuzz reports it with its input, so it does look.
    fn planted(data: &[u8]) {
        assert!(!data.contains(&0xff), "planted");
    }
    let mut rng = Rng(7);
    let corpus = vec![b"{\"type\":\"ready\"}".to_vec()];
    let found = (0..MUTATIONS).any(|_| {
        let mut input = corpus[0].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut input, &corpus);
        }
        check(planted, &input).is_err()
    });
    assert!(found, "no mutation reached the planted bug");
}
