//! What an environment driver declares about itself: its name, what it is,
//! the `--env` options it takes with their checks and help, how to build it
//! and how to tell whether this machine can run it. Spec parsing, `--env`
//! help and `virtperf envs` are generated from these.

use anyhow::Result;

use super::{Environment, Spec};

/// What values an `--env` option takes.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// A number above zero (`cpus=0.5`).
    Positive,
    /// A size such as 512m or 2g.
    Size,
    /// One word from a list.
    Choice(&'static [&'static str]),
    /// A TCP port, 1 to 65535.
    Port,
    /// Anything (a path, an image name).
    Text,
}

impl Check {
    /// Why `value` is refused, if it is.
    pub fn refuse(&self, key: &str, value: &str) -> Option<String> {
        match self {
            Check::Positive if !value.parse::<f64>().is_ok_and(|x| x > 0.0) => {
                Some(format!("{key}={value}: expected a positive number"))
            }
            Check::Size if crate::core::units::Bytes::parse(value).is_err() => {
                Some(format!("{key}={value}: expected a size such as 512m or 2g"))
            }
            Check::Choice(words) if !words.contains(&value) => {
                Some(format!("{key}={value}: use {}", words.join(" or ")))
            }
            Check::Port if !value.parse::<u16>().is_ok_and(|p| p > 0) => {
                Some(format!("{key}={value}: expected a TCP port, 1 to 65535"))
            }
            _ => None,
        }
    }
}

/// One `--env` option of a driver.
#[derive(Debug, Clone, Copy)]
pub struct EnvOption {
    pub key: &'static str,
    pub check: Check,
    pub help: &'static str,
}

impl EnvOption {
    pub const fn new(key: &'static str, check: Check, help: &'static str) -> EnvOption {
        EnvOption { key, check, help }
    }
}

/// One environment driver, as the registry lists it.
pub struct DriverDef {
    pub name: &'static str,
    pub summary: &'static str,
    /// What follows `NAME:` before the options, for drivers that need a
    /// target (`USER@HOST[:PORT]`).
    pub target: Option<&'static str>,
    pub options: &'static [EnvOption],
    /// Whether `virtperf envs` and `compare` try it without being asked.
    pub probe_by_default: bool,
    pub build: fn(&Spec) -> Result<Box<dyn Environment>>,
    /// Whether this machine can run it, and the detail (a version, or why not).
    pub probe: fn(&Spec) -> (bool, String),
}

impl DriverDef {
    pub fn option(&self, key: &str) -> Option<&EnvOption> {
        self.options.iter().find(|o| o.key == key)
    }

    /// `docker[:cpus=N,...]`, for help.
    pub fn usage(&self) -> String {
        let keys: Vec<&str> = self.options.iter().map(|o| o.key).collect();
        match (self.target, keys.is_empty()) {
            (Some(t), true) => format!("{}:{t}", self.name),
            (Some(t), false) => format!("{}:{t}[,{}=...]", self.name, keys.join("=,")),
            (None, true) => self.name.to_string(),
            (None, false) => format!("{}[:{}=...]", self.name, keys.join("=,")),
        }
    }
}

impl std::fmt::Debug for DriverDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DriverDef({})", self.name)
    }
}

impl PartialEq for DriverDef {
    fn eq(&self, other: &DriverDef) -> bool {
        self.name == other.name
    }
}
