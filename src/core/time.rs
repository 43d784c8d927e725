//! Wall-clock time as the result document writes it (RFC 3339, UTC), and
//! as `--start-at` reads it (RFC 3339 or seconds since the epoch).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The current UTC time as RFC 3339, to the second, without a date crate.
pub fn now_rfc3339() -> String {
    rfc3339(unix_now().floor(), false)
}

/// The current UTC time as RFC 3339 with milliseconds: when a run began,
/// precise enough to tell that simultaneous instances started together.
pub fn now_rfc3339_ms() -> String {
    rfc3339(unix_now(), true)
}

/// `secs` since the epoch as RFC 3339 UTC, with milliseconds if asked.
pub fn rfc3339(secs: f64, millis: bool) -> String {
    let ms_total = (secs * 1000.0).round() as i64;
    let (whole, ms) = (ms_total.div_euclid(1000), ms_total.rem_euclid(1000));
    let (days, rem) = (whole.div_euclid(86_400), whole.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let frac = if millis {
        format!(".{ms:03}")
    } else {
        String::new()
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 of a civil date (Hinnant's days-from-civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A moment as `--start-at` takes it: seconds since the epoch (`1795000000`,
/// `1795000000.25`) or RFC 3339 (`2026-11-23T15:00:00Z`,
/// `2026-11-23T16:00:00.5+01:00`). Seconds since the epoch, or what is
/// wrong.
pub fn parse_moment(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return t
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("'{t}' is not a number of seconds"));
    }
    let bad =
        || format!("'{t}' is neither RFC 3339 (2026-11-23T15:00:00Z) nor seconds since the epoch");
    let b = t.as_bytes();
    if b.len() < 20 || !t.is_ascii() {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<i64, String> {
        let s = &t[r];
        if s.chars().all(|c| c.is_ascii_digit()) {
            s.parse::<i64>().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let month_days = [
        31,
        28 + i64::from(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > month_days[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || s > 60
    {
        return Err(format!("'{t}': no such date or time"));
    }
    let mut rest = &t[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            return Err(bad());
        }
        frac = format!("0.{digits}").parse::<f64>().map_err(|_| bad())?;
        rest = &r[digits.len()..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':' =>
        {
            let oh = rest[1..3].parse::<i64>().map_err(|_| bad())?;
            let om = rest[4..6].parse::<i64>().map_err(|_| bad())?;
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset;
    Ok(secs as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_has_the_right_shape() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
        let ms = now_rfc3339_ms();
        assert_eq!(ms.len(), 24, "{ms}");
        assert_eq!(&ms[19..20], ".");
    }

    #[test]
    fn moments_parse_in_both_forms_and_round_trip() {
        assert_eq!(parse_moment("0"), Ok(0.0));
        assert_eq!(parse_moment("1795000000.25"), Ok(1_795_000_000.25));
        assert_eq!(parse_moment("1970-01-01T00:00:00Z"), Ok(0.0));
        assert_eq!(parse_moment("2000-03-01T00:00:00Z"), Ok(951_868_800.0));
        assert_eq!(
            parse_moment("2026-11-23T16:00:00.5+01:00"),
            parse_moment("2026-11-23T15:00:00.5Z")
        );
        assert_eq!(
            parse_moment("2026-11-23T10:00:00-05:00"),
            parse_moment("2026-11-23T15:00:00Z")
        );
        for secs in [0.0, 951_868_800.123, 1_795_000_000.5, 4_102_444_800.0] {
            let text = rfc3339(secs, true);
            let back = parse_moment(&text).unwrap();
            assert!((back - secs).abs() < 0.001, "{text}: {back} vs {secs}");
        }
        for bad in [
            "",
            "tomorrow",
            "2026-11-23",
            "2026-11-23T15:00:00",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-23T25:00:00Z",
            "2026-11-23T15:00:00+1:00",
            "2026-11-23T15:00:00.Z",
            "1.2.3",
            "-5",
        ] {
            assert!(parse_moment(bad).is_err(), "{bad}");
        }
    }
}
