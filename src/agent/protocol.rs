//! The agent protocol on the wire, for both ends: the host (`env`) sends
//! `Plan`s, the bare lines `GO` and `BYE`, and the answers `Served` and
//! `ServerAnswer`; the agent sends `Message`s. Each is one line, JSON or a
//! bare word, and `PROTOCOL` names the version both sides must share.

use serde::{Deserialize, Serialize};

use crate::core::result::ResultDoc;
use crate::workload::JobWire;

/// Bumped whenever the plan or message format changes, so an agent and a
/// host from either side of a change refuse each other by version instead
/// of misreading a line (3: `Serving` and the host's `Served` answer; 4:
/// several plans per session ended by "bye", `NeedServer` and the host's
/// `ServerAnswer`; 5: `Running` as a measured run starts, for the host's
/// accounting).
pub const PROTOCOL: u32 = 5;

/// The host's line that releases an agent waiting after "ready"
/// (`Plan::wait_for_go`); every instance gets it at once.
pub const GO: &str = "go";

/// The host's last line to an agent: no more plans.
pub const BYE: &str = "bye";

/// What the host asks an agent to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub protocol: u32,
    pub env_name: String,
    pub env_kind: String,
    /// Where workloads that write put their files (unless a job says).
    pub workdir: String,
    /// Report "ready" and wait for a "go" line before the first run.
    pub wait_for_go: bool,
    pub jobs: Vec<JobWire>,
    /// The jobs (by index) whose network server the host starts when the
    /// agent asks for it (`NeedServer`), just before the job runs.
    #[serde(default)]
    pub host_servers: Vec<usize>,
}

/// One line from the agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    Hello {
        protocol: u32,
        version: String,
        sha256: String,
    },
    Ready,
    Result {
        index: usize,
        doc: Box<ResultDoc>,
    },
    Error {
        index: usize,
        message: String,
    },
    /// A job's network peer (a server) listens inside on this port; the host
    /// runs the job's client against it and answers with a `Served` line.
    Serving {
        index: usize,
        port: u16,
    },
    /// Job `index` is about to run and its server is the host's: the host
    /// starts it and answers with a `ServerAnswer` line.
    NeedServer {
        index: usize,
    },
    /// Job `index`'s measured run starts now (its prepare is done): the
    /// host marks its accounting (`sys::account::outside`) here.
    Running {
        index: usize,
    },
    Done,
}

/// The host's answer to `NeedServer`: where the job's client dials and the
/// secret the server requires (the server runs until the job's result
/// arrives), or why no server could be started.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerAnswer {
    Listening { address: String, secret: String },
    Failed { message: String },
}

/// The host's answer to `Serving`: the client's result, which the agent
/// returns as the job's with its own fingerprint, or why the client failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Served {
    Served { doc: Box<ResultDoc> },
    Failed { message: String },
}
