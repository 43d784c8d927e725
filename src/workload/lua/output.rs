//! Where a script's own output (`print`, `io.write`, its reports) goes.

/// Where a script's own output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Stdout,
    /// Standard output carries a JSON document.
    Stderr,
    /// Standard output carries the agent protocol and the host shows its
    /// own progress: nobody reads it.
    Discard,
}
