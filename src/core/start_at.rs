//! `--start-at=TIME`: a run launched independently (on each host of a fleet)
//! waits until a common moment, then records how late it actually began by
//! its own clock. A moment already past is refused, and so is one more than
//! `MOST_AHEAD_S` away (a typo of a year or a unit, not a plan).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;

use super::observer::{Observer, Progress};
use super::options::{CliError, OptKind, OptionSpec};
use super::result::StartAt;
use super::{signals, time};

/// `--start-at`, for the single-workload form and `compare`.
pub const OPTION: OptionSpec = OptionSpec::new(
    "start-at",
    OptKind::Text,
    "",
    "wait until this moment, then start (RFC 3339 such as 2026-11-23T15:00:00Z, or seconds since the epoch; at most 24 h ahead); each result records how late it began",
);

/// The farthest ahead a start may be: 24 hours.
pub const MOST_AHEAD_S: f64 = 86_400.0;

/// The moment `--start-at` names, checked against now: seconds since the
/// epoch.
pub fn check(text: &str) -> Result<f64, CliError> {
    check_at(text, time::unix_now())
}

fn check_at(text: &str, now: f64) -> Result<f64, CliError> {
    let bad = |why: String| CliError::Usage(format!("--start-at={text}: {why}"));
    let at = time::parse_moment(text).map_err(&bad)?;
    if at < now {
        return Err(bad(format!(
            "that moment is already past ({:.1} s ago; it is now {}): give a time ahead, e.g. --start-at={}",
            now - at,
            time::rfc3339(now.floor(), false),
            time::rfc3339(now.floor() + 60.0, false)
        )));
    }
    if at - now > MOST_AHEAD_S {
        return Err(bad(format!(
            "that is {:.1} hours ahead; a start may be at most 24 hours ahead (check the date, and that epoch times are in seconds, not milliseconds)",
            (at - now) / 3600.0
        )));
    }
    Ok(at)
}

/// Waits until `at` (seconds since the epoch), with a progress line on a
/// terminal; what was observed. Ctrl-C ends the wait.
pub fn wait(at: f64, obs: &dyn Observer) -> Result<StartAt> {
    let tty = std::io::stderr().is_terminal();
    let total = (at - time::unix_now()).max(0.0);
    obs.note(&format!(
        "--start-at: waiting {total:.1} s, until {}",
        time::rfc3339(at, true)
    ));
    loop {
        if signals::interrupted() {
            obs.progress_done();
            return Err(signals::Interrupted.into());
        }
        let left = at - time::unix_now();
        if left <= 0.0 {
            break;
        }
        if left > 0.3 {
            if tty {
                obs.progress(&Progress {
                    done: 0,
                    total: None,
                    text: format!("starting at {} (in {left:.0} s)", time::rfc3339(at, false)),
                    eta_s: Some(left),
                });
            }
            // Wake early enough to end the wait on a short, precise sleep.
            std::thread::sleep(Duration::from_secs_f64((left - 0.2).min(1.0)));
        } else {
            std::thread::sleep(Duration::from_secs_f64(left));
        }
    }
    let now = time::unix_now();
    if tty {
        obs.progress_done();
    }
    Ok(StartAt {
        target: time::rfc3339(at, true),
        began: time::rfc3339(now, true),
        late_s: now - at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observer::Silent;

    #[test]
    fn past_and_far_future_moments_are_refused_naming_the_option() {
        let now = 1_795_000_000.0;
        assert_eq!(check_at("1795000010", now).unwrap(), 1_795_000_010.0);
        let past = check_at("1794999990", now).unwrap_err().to_string();
        assert!(
            past.contains("--start-at=") && past.contains("already past"),
            "{past}"
        );
        let far = check_at("1795100000", now).unwrap_err().to_string();
        assert!(
            far.contains("--start-at=") && far.contains("24 hours"),
            "{far}"
        );
        // Milliseconds given for seconds: far in the future.
        assert!(check_at("1795000010000", now).is_err());
        let junk = check_at("noon", now).unwrap_err().to_string();
        assert!(
            junk.contains("--start-at=noon") && junk.contains("RFC 3339"),
            "{junk}"
        );
    }

    #[test]
    fn the_wait_ends_at_the_moment_and_says_how_late() {
        let at = time::unix_now() + 0.25;
        let s = wait(at, &Silent).unwrap();
        let now = time::unix_now();
        assert!(now >= at, "it never starts early");
        assert!(s.late_s >= 0.0 && s.late_s < 0.05, "{}", s.late_s);
        assert_eq!(s.target, time::rfc3339(at, true));
    }
}
