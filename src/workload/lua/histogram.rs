//! `sysbench.histogram` for scripts: `new(size, min, max)` makes a
//! histogram of `size` buckets spread logarithmically over `min..max`, as
//! sysbench 1.0.20's latency histogram is; `update(value)` counts a value
//! in its nearest bucket (values outside the range in the end ones) and
//! `print()` draws the non-empty buckets as sysbench does.

use mlua::{Lua, Table, UserData, UserDataMethods};

use super::output::Output;

/// The most buckets a script may ask for (sysbench allocates what it is
/// told; a typo should not take the machine's memory).
const MAX_BUCKETS: usize = 1 << 24;

/// A script's histogram.
pub struct Histogram {
    counts: Vec<u64>,
    /// log(min): the first bucket's position.
    deduct: f64,
    /// Buckets per unit of log(value).
    mult: f64,
    output: Output,
}

impl Histogram {
    /// sysbench's checks: at least two buckets, 0 < min < max.
    pub fn new(size: f64, min: f64, max: f64, output: Output) -> Result<Self, String> {
        if !(size >= 2.0 && size <= MAX_BUCKETS as f64 && min > 0.0 && max > min) {
            return Err(format!(
                "sysbench.histogram.new({size}, {min}, {max}): wants 2 to {MAX_BUCKETS} buckets and 0 < min < max"
            ));
        }
        let size = size as usize;
        let deduct = min.ln();
        Ok(Histogram {
            counts: vec![0; size],
            deduct,
            mult: (size - 1) as f64 / (max.ln() - deduct),
            output,
        })
    }

    /// Counts `value` in the bucket nearest its logarithm.
    pub fn update(&mut self, value: f64) {
        let slot = ((value.ln() - self.deduct) * self.mult + 0.5).floor();
        let last = self.counts.len() - 1;
        // NaN and values at or below min go to the first bucket.
        let i = if slot >= last as f64 {
            last
        } else if slot > 0.0 {
            slot as usize
        } else {
            0
        };
        self.counts[i] += 1;
    }

    /// The drawing: a header, then per non-empty bucket its value, a bar
    /// of up to 40 stars scaled to the fullest bucket, and its count.
    pub fn text(&self) -> String {
        let most = self.counts.iter().copied().max().unwrap_or(0).max(1);
        let mut out =
            String::from("       value  ------------- distribution ------------- count\n");
        for (i, &n) in self.counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let width = (n as f64 * 40.0 / most as f64 + 0.5).floor() as usize;
            let value = (i as f64 / self.mult + self.deduct).exp();
            out.push_str(&format!("{value:12.3} |{:<40} {n}\n", "*".repeat(width)));
        }
        out
    }
}

impl UserData for Histogram {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method_mut("update", |_, h, value: f64| {
            h.update(value);
            Ok(())
        });
        methods.add_method("print", |_, h, ()| {
            use std::io::Write;
            let text = h.text();
            match h.output {
                Output::Stdout => {
                    let _ = std::io::stdout().lock().write_all(text.as_bytes());
                }
                Output::Stderr => {
                    let _ = std::io::stderr().lock().write_all(text.as_bytes());
                }
                Output::Discard => {}
            }
            Ok(())
        });
    }
}

/// Puts `histogram.new` into the `sysbench` table the prelude made (raw:
/// the table refuses unknown names).
pub fn install(lua: &Lua, output: Output) -> mlua::Result<()> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let histogram = lua.create_table()?;
    histogram.set(
        "new",
        lua.create_function(move |_, (size, min, max): (f64, f64, f64)| {
            Histogram::new(size, min, max, output).map_err(mlua::Error::runtime)
        })?,
    )?;
    sysbench.raw_set("histogram", histogram)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_logarithmic_and_the_ends_take_the_rest() {
        let mut h = Histogram::new(400.0, 2.0, 50.0, Output::Discard).unwrap();
        for v in [3.0, 3.0, 3.0, 7.5, 20.0, 1.0, 80.0, 49.9] {
            h.update(v);
        }
        // As Debian's sysbench draws the same values.
        assert_eq!(
            h.text(),
            "       value  ------------- distribution ------------- count\n\
             \x20      2.000 |*************                            1\n\
             \x20      2.994 |**************************************** 3\n\
             \x20      7.510 |*************                            1\n\
             \x20     19.932 |*************                            1\n\
             \x20     50.000 |***************************              2\n"
        );
    }

    #[test]
    fn nonsense_shapes_are_refused() {
        for (size, min, max) in [(1.0, 1.0, 2.0), (10.0, 0.0, 1.0), (10.0, 2.0, 1.0)] {
            assert!(Histogram::new(size, min, max, Output::Discard).is_err());
        }
    }
}
