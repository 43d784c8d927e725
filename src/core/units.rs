//! Named units and their one place of parsing and formatting: byte sizes with
//! sysbench's suffixes (K, M, G, T = powers of 1024), seconds and rates.

use std::fmt;

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// Why a size string was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("'{0}' is not a size: use a whole number with an optional suffix K, M, G or T (e.g. 1K, 100G)")]
    Malformed(String),
    #[error("'{0}' is too large")]
    Overflow(String),
}

impl Bytes {
    /// Parses `4096`, `1K`, `16k`, `100G`, `2MiB`, `4GB` as sysbench does:
    /// every suffix is a power of 1024.
    pub fn parse(text: &str) -> Result<Bytes, SizeError> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, suffix) = t.split_at(split);
        if digits.is_empty() {
            return Err(SizeError::Malformed(text.to_string()));
        }
        let shift = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => return Err(SizeError::Malformed(text.to_string())),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| SizeError::Overflow(text.to_string()))?;
        n.checked_mul(1u64 << shift)
            .map(Bytes)
            .ok_or_else(|| SizeError::Overflow(text.to_string()))
    }

    pub fn as_mib(self) -> f64 {
        self.0 as f64 / (1024.0 * 1024.0)
    }
}

impl fmt::Display for Bytes {
    /// The largest binary unit that divides the size exactly, sysbench style
    /// (`1KiB`, `100GiB`), or plain bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, name) in UNITS {
            let unit = 1u64 << shift;
            if self.0 >= unit && self.0.is_multiple_of(unit) {
                return write!(f, "{}{}", self.0 / unit, name);
            }
        }
        write!(f, "{}B", self.0)
    }
}

/// A duration in seconds, as a float, for reports.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4}s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysbench_sizes() {
        assert_eq!(Bytes::parse("1K"), Ok(Bytes(1024)));
        assert_eq!(Bytes::parse("16k"), Ok(Bytes(16384)));
        assert_eq!(Bytes::parse("100G"), Ok(Bytes(100 << 30)));
        assert_eq!(Bytes::parse("4096"), Ok(Bytes(4096)));
        assert_eq!(Bytes::parse("2MiB"), Ok(Bytes(2 << 20)));
    }

    #[test]
    fn refuses_bad_sizes() {
        assert!(matches!(Bytes::parse("12Q"), Err(SizeError::Malformed(_))));
        assert!(matches!(Bytes::parse("K"), Err(SizeError::Malformed(_))));
        assert!(matches!(Bytes::parse("-1K"), Err(SizeError::Malformed(_))));
        assert!(matches!(
            Bytes::parse("99999999999T"),
            Err(SizeError::Overflow(_))
        ));
    }

    #[test]
    fn formats_in_the_largest_exact_unit() {
        assert_eq!(Bytes(1024).to_string(), "1KiB");
        assert_eq!(Bytes(100 << 30).to_string(), "100GiB");
        assert_eq!(Bytes(1536).to_string(), "1536B");
        assert_eq!(Bytes(3 << 20).to_string(), "3MiB");
    }
}
