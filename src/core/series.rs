//! Per-second samples of a run (seed 002's view, kept in the accounting
//! section since its version 2): each second's CPU shares (user, system,
//! iowait, steal, softirq, of all CPUs' time, from `/proc/stat`) and the
//! whole disks' bytes per second (`/proc/diskstats`), from inside the
//! environment (the agent) and from the host. Bounded: at most
//! [`MAX_SAMPLES`] a run, after which sampling stops and `capped` says so.
//!
//! The guest's samples are untrusted: [`Series::check`] bounds their count
//! and every value, and [`lenient`] reads a series that does not parse as
//! its parse error (reported beside the run, never failing it).

use serde::{Deserialize, Deserializer, Serialize};

/// At most this many samples a run (an hour at one a second).
pub const MAX_SAMPLES: usize = 3600;

/// The most bytes a second a sample may claim (1 TB/s: beyond any disk).
const MAX_BYTES_PER_S: f64 = 1e12;

/// One second of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds from the run's start to the end of this sample.
    pub t_s: f64,
    /// Percent of all CPUs' time (user with nice, system with irq).
    pub user_pct: f64,
    pub system_pct: f64,
    pub iowait_pct: f64,
    pub steal_pct: f64,
    pub softirq_pct: f64,
    /// The whole disks' bytes a second; null without a disk to read.
    pub read_bytes_per_s: Option<f64>,
    pub write_bytes_per_s: Option<f64>,
}

impl Sample {
    fn shares(&self) -> [f64; 5] {
        [
            self.user_pct,
            self.system_pct,
            self.iowait_pct,
            self.steal_pct,
            self.softirq_pct,
        ]
    }
}

/// A run's samples, one a second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Seconds between samples.
    pub interval_s: f64,
    pub samples: Vec<Sample>,
    /// Sampling stopped at [`MAX_SAMPLES`]: the run's later seconds are
    /// not in it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// Why a guest's series was not read (it did not parse); never
    /// written by virtperf itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The CPU seconds the sampling thread itself used: the one part of
    /// accounting that runs beside the workload (the readings before and
    /// after it do not overlap it). Null where the thread's clock was not
    /// read (older documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_cpu_s: Option<f64>,
}

impl Series {
    /// Why these samples cannot be a run of `wall_s` seconds, if they
    /// cannot: too many, a time outside the run, a share outside 0..100 %
    /// or a rate beyond any disk.
    pub fn check(&self, wall_s: f64) -> Result<(), String> {
        if let Some(why) = &self.unreadable {
            return Err(format!("samples that do not parse ({why})"));
        }
        if self.samples.len() > MAX_SAMPLES {
            return Err(format!(
                "{} samples (at most {MAX_SAMPLES})",
                self.samples.len()
            ));
        }
        if !self.interval_s.is_finite() || !(0.01..=3600.0).contains(&self.interval_s) {
            return Err(format!("a sample interval of {} s", self.interval_s));
        }
        // A sample (or the sampler's CPU) may fall up to two intervals past
        // the run's end, when the last wake-up came late.
        let end = wall_s + 2.0 * self.interval_s;
        if let Some(c) = self
            .sampler_cpu_s
            .filter(|c| !c.is_finite() || !(0.0..=end).contains(c))
        {
            return Err(format!(
                "a sampler that used {c} s of CPU in a {wall_s} s run"
            ));
        }
        for s in &self.samples {
            if !s.t_s.is_finite() || !(0.0..=end).contains(&s.t_s) {
                return Err(format!("a sample at {} s of a {wall_s} s run", s.t_s));
            }
            if let Some(x) = s.shares().into_iter().find(|x| !(0.0..=100.5).contains(x)) {
                return Err(format!("a CPU share of {x} %"));
            }
            let rates = [s.read_bytes_per_s, s.write_bytes_per_s];
            if let Some(x) = rates
                .into_iter()
                .flatten()
                .find(|x| !(0.0..=MAX_BYTES_PER_S).contains(x))
            {
                return Err(format!("{x} bytes a second"));
            }
        }
        Ok(())
    }
}

/// Reads an optional series that may not parse (a guest's): what does not
/// parse becomes a series with no samples and the parse error in
/// `unreadable`, which [`Series::check`] reports. The document's line is
/// bounded before it is parsed, so the value read here is too.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Series>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(d)?;
    Ok(value.map(|v| {
        serde_json::from_value(v).unwrap_or_else(|e| Series {
            unreadable: Some(crate::core::text::one_line(&e.to_string(), 120)),
            ..Series::default()
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize) -> Series {
        Series {
            interval_s: 1.0,
            samples: (0..n)
                .map(|i| Sample {
                    t_s: i as f64 + 1.0,
                    user_pct: 50.0,
                    read_bytes_per_s: Some(4096.0),
                    ..Sample::default()
                })
                .collect(),
            ..Series::default()
        }
    }

    #[test]
    fn bounds_the_count_the_times_and_every_value() {
        assert_eq!(series(10).check(10.0), Ok(()));
        assert!(series(MAX_SAMPLES + 1)
            .check(1e6)
            .unwrap_err()
            .contains("3601 samples"));
        assert!(series(10).check(5.0).unwrap_err().contains("at 8 s"));
        let mut s = series(2);
        s.samples[1].steal_pct = 250.0;
        assert!(s.check(10.0).unwrap_err().contains("250"));
        s.samples[1].steal_pct = f64::NAN;
        assert!(s.check(10.0).is_err());
        let mut s = series(2);
        s.samples[0].write_bytes_per_s = Some(1e15);
        assert!(s.check(10.0).unwrap_err().contains("bytes a second"));
        let mut s = series(2);
        s.interval_s = 0.0;
        assert!(s.check(10.0).is_err());
        // The sampler's own CPU time: at most the run's.
        let mut s = series(2);
        s.sampler_cpu_s = Some(0.004);
        assert_eq!(s.check(10.0), Ok(()));
        for bad in [-1.0, f64::NAN, 1e9] {
            s.sampler_cpu_s = Some(bad);
            assert!(s.check(10.0).unwrap_err().contains("sampler"), "{bad}");
        }
    }

    #[derive(Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "lenient")]
        samples: Option<Series>,
    }

    #[test]
    fn a_series_that_does_not_parse_is_kept_as_its_error() {
        let h: Holder = serde_json::from_str(r#"{"samples":{"interval_s":"x"}}"#).unwrap();
        let s = h.samples.unwrap();
        assert!(s.samples.is_empty());
        assert!(s.check(1.0).unwrap_err().contains("do not parse"));
        let h: Holder = serde_json::from_str("{}").unwrap();
        assert!(h.samples.is_none());
        let h: Holder = serde_json::from_str(r#"{"samples":null}"#).unwrap();
        assert!(h.samples.is_none());
        let json = serde_json::to_string(&series(1)).unwrap();
        let h: Holder = serde_json::from_str(&format!(r#"{{"samples":{json}}}"#)).unwrap();
        assert_eq!(h.samples, Some(series(1)));
    }
}
