//! Where a results store is: a results directory (SQLite, the embedded
//! default) or a PostgreSQL database named by a `postgresql://` URL, which
//! every host of a fleet can write to at once. The password of a database
//! never comes from argv: it is read from `--store-password-file` or the
//! environment (`PGPASSWORD`), and no message, label or report shows it.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::core::options::{CliError, OptKind, OptionSpec};

/// `--store-password-file`: compare, import, report and history take it.
pub const PASSWORD_FILE: OptionSpec = OptionSpec::new(
    "store-password-file",
    OptKind::Text,
    "",
    "a file holding the password of a postgresql:// store (else $PGPASSWORD; never in the URL)",
);

/// The port a URL without one means (PostgreSQL's).
const DEFAULT_PORT: u16 = 5432;

/// A results store's place.
#[derive(Clone, PartialEq)]
pub enum Location {
    /// A results directory holding `results.db`.
    Dir(PathBuf),
    /// A PostgreSQL database.
    Pg(PgUrl),
}

/// `postgresql://USER@HOST[:PORT]/DB`, with the password from elsewhere.
#[derive(Clone, PartialEq)]
pub struct PgUrl {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub db: String,
    /// From the file or `PGPASSWORD`; empty when neither gives one (the
    /// server may trust the host). Never displayed.
    pub password: String,
    /// The option or operand that named it, for messages.
    pub option: &'static str,
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "postgresql://{}@{}:{}/{}",
            self.user, self.host, self.port, self.db
        )
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(d) => write!(f, "{}", d.display()),
            Location::Pg(u) => write!(f, "{u}"),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Whether `text` names a PostgreSQL store rather than a directory.
pub fn is_url(text: &str) -> bool {
    text.starts_with("postgresql://") || text.starts_with("postgres://")
}

impl Location {
    /// `text` as `option` gave it: a URL, else a directory. The password of
    /// a URL is read from `password_file`, else `PGPASSWORD`.
    pub fn parse(
        text: &str,
        option: &'static str,
        password_file: Option<&Path>,
    ) -> Result<Location, CliError> {
        if !is_url(text) {
            return Ok(Location::Dir(PathBuf::from(text)));
        }
        let mut url = parse_url(text, option)?;
        url.password = password(option, password_file)?;
        Ok(Location::Pg(url))
    }

    /// The results directory, if the store is one.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Location::Dir(d) => Some(d),
            Location::Pg(_) => None,
        }
    }
}

const FORM: &str = "postgresql://USER@HOST[:PORT]/DATABASE";

fn parse_url(text: &str, option: &'static str) -> Result<PgUrl, CliError> {
    let bad = |why: &str| CliError::Usage(format!("{option} {text}: {why}"));
    let rest = text
        .strip_prefix("postgresql://")
        .or_else(|| text.strip_prefix("postgres://"))
        .ok_or_else(|| bad(&format!("give {FORM}")))?;
    let (user_part, rest) = rest
        .split_once('@')
        .ok_or_else(|| bad(&format!("name the user: {FORM}")))?;
    if user_part.contains(':') {
        return Err(CliError::Usage(format!(
            "{option}: the URL holds a password, which argv would show to every user of the machine (ps): give {FORM} and the password in $PGPASSWORD or --store-password-file FILE"
        )));
    }
    let (host_port, db) = rest
        .split_once('/')
        .ok_or_else(|| bad(&format!("name the database: {FORM}")))?;
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad(&format!("the port '{p}' is not a port (1-65535): {FORM}")))?,
        ),
        None => (host_port, DEFAULT_PORT),
    };
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    for (what, value) in [("user", user_part), ("host", host), ("database", db)] {
        if !plain(value) {
            return Err(bad(&format!(
                "the {what} '{value}' is empty or has characters other than letters, digits, '.', '_' and '-' (no query, no percent-escapes): {FORM}"
            )));
        }
    }
    Ok(PgUrl {
        host: host.to_string(),
        port,
        user: user_part.to_string(),
        db: db.to_string(),
        password: String::new(),
        option,
    })
}

/// The password: the file's first line, else `PGPASSWORD`, else empty.
fn password(option: &str, file: Option<&Path>) -> Result<String, CliError> {
    let Some(path) = file else {
        return Ok(std::env::var("PGPASSWORD").unwrap_or_default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!(
            "--store-password-file {}: cannot read it ({e}); give a readable file holding the password of {option}'s database",
            path.display()
        ))
    })?;
    let line = text.lines().next().unwrap_or("").to_string();
    if line.is_empty() {
        return Err(CliError::Usage(format!(
            "--store-password-file {}: the file is empty; its first line is the password",
            path.display()
        )));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Result<PgUrl, String> {
        parse_url(text, "--out").map_err(|e| e.to_string())
    }

    #[test]
    fn urls_read_and_bad_ones_are_refused_naming_the_option() {
        let u = url("postgresql://vp@db.example:6543/fleet").unwrap();
        assert_eq!(
            (u.user.as_str(), u.host.as_str(), u.port, u.db.as_str()),
            ("vp", "db.example", 6543, "fleet")
        );
        assert_eq!(url("postgres://vp@h/d").unwrap().port, 5432);
        assert_eq!(
            url("postgres://vp@h/d").unwrap().to_string(),
            "postgresql://vp@h:5432/d"
        );
        for (bad, says) in [
            ("postgresql://h/d", "name the user"),
            ("postgresql://vp@h", "name the database"),
            ("postgresql://vp@h:0/d", "not a port"),
            ("postgresql://vp@h:x/d", "not a port"),
            ("postgresql://vp@h/d?sslmode=require", "no query"),
            ("postgresql://vp@/d", "the host ''"),
        ] {
            let e = url(bad).unwrap_err();
            assert!(e.starts_with("--out ") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_password_in_the_url_is_refused_and_never_shown() {
        let e = url("postgresql://vp:hunter2@h/d").unwrap_err();
        assert!(e.contains("PGPASSWORD") && !e.contains("hunter2"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\n").unwrap();
        let loc = Location::parse("postgresql://vp@h/d", "--out", Some(&file)).unwrap();
        let Location::Pg(u) = &loc else {
            panic!("a URL")
        };
        assert_eq!(u.password, "s3cret");
        for shown in [loc.to_string(), format!("{loc:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
        }
        std::fs::write(&file, "").unwrap();
        let e = Location::parse("postgresql://vp@h/d", "--out", Some(&file))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--store-password-file") && e.contains("empty"),
            "{e}"
        );
        assert_eq!(
            Location::parse("some/dir", "--out", None).unwrap().dir(),
            Some(Path::new("some/dir"))
        );
    }
}
